/* Following the region's partitions: the endpoints of a registry object, and the set of
 * partitions (open, move, keep, close) as the five daemons that follow the registry use it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>
#include "ursa/buf.h"
#include "ursa/jsonutil.h"
#include "ursa/region.h"
#include "ursa/xalloc.h"

static json_t *obj(const char *name, const char *endpoints_json)
{
	json_t *eps = json_loads(endpoints_json, 0, NULL);
	assert_non_null(eps);
	return json_pack("{s:{s:s}, s:{s:o, s:s}}", "metadata", "name", name, "spec", "endpoints", eps, "zone", "az-1");
}

static char *eps_of(const char *endpoints_json)
{
	json_t *o = obj("x", endpoints_json);
	char *s = region_endpoints(o);
	json_decref(o);
	return s;
}

static void expect_eps(const char *endpoints_json, const char *want)
{
	char *got = eps_of(endpoints_json);
	if (!want)
		assert_null(got);
	else
		assert_string_equal(got, want);
	free(got);
}

static void test_endpoints(void **state)
{
	(void)state;
	expect_eps("[\"https://127.0.0.1:7101\"]", "https://127.0.0.1:7101");
	expect_eps("[\"https://a:1\",\"https://b:2\"]", "https://a:1,https://b:2");
	/* what would break the comma-separated list or is not an endpoint is skipped */
	expect_eps("[1, null, \"\", \"https://a,https://evil\", {}, \"https://b:2\"]", "https://b:2");
	expect_eps("[]", NULL);
	expect_eps("[\"\", 7]", NULL);
	expect_eps("{\"a\":\"https://a\"}", NULL);
	json_t *bare = json_pack("{s:{s:s}}", "metadata", "name", "x");
	assert_null(region_endpoints(bare));
	json_decref(bare);
	assert_null(region_endpoints(NULL));
	/* too long an endpoint is skipped; at most REGION_ENDPOINTS_MAX are kept */
	struct buf b = BUF_INIT;
	buf_adds(&b, "[\"https://");
	for (int i = 0; i < REGION_ENDPOINT_LEN_MAX; i++)
		buf_addch(&b, 'a');
	buf_adds(&b, "\", \"https://ok\"]");
	expect_eps(buf_cstr(&b), "https://ok");
	buf_reset(&b);
	buf_addch(&b, '[');
	for (int i = 0; i < REGION_ENDPOINTS_MAX + 4; i++)
		buf_addf(&b, "%s\"https://h%d\"", i ? "," : "", i);
	buf_addch(&b, ']');
	char *many = eps_of(buf_cstr(&b));
	size_t commas = 0;
	for (const char *c = many; *c; c++)
		commas += *c == ',';
	assert_int_equal(commas, REGION_ENDPOINTS_MAX - 1);
	assert_non_null(strstr(many, "https://h15"));
	assert_null(strstr(many, "https://h16"));
	free(many);
	buf_release(&b);
}

/* A recording follower: values are "name@servers" strings. */
struct rec {
	struct buf log;
	bool refuse;       /* open answers NULL */
	bool refuse_move;  /* move answers NULL */
	int seen;
};

static void *rec_open(void *ud, const char *name, const char *servers, const json_t *obj)
{
	struct rec *r = ud;
	assert_non_null(obj);
	buf_addf(&r->log, "open %s %s;", name, servers);
	return r->refuse ? NULL : xasprintf("%s@%s", name, servers);
}

static void *rec_move(void *ud, void *val, const char *servers, const json_t *obj)
{
	struct rec *r = ud;
	buf_addf(&r->log, "move %s %s;", (char *)val, servers);
	if (r->refuse_move)
		return NULL;
	char *at = strchr(val, '@');
	*at = '\0';
	char *nv = xasprintf("%s@%s", (char *)val, servers);
	free(val);
	return nv;
}

static void rec_seen(void *ud, void *val, const json_t *obj)
{
	struct rec *r = ud;
	assert_string_equal(json_path_str(obj, "spec.zone"), "az-1");
	r->seen++;
}

static void rec_close(void *ud, const char *name, void *val)
{
	struct rec *r = ud;
	buf_addf(&r->log, "close %s %s;", name, (char *)val);
	free(val);
}

static void offer(struct region_peers *s, const char *name, const char *eps)
{
	json_t *o = obj(name, eps);
	region_peers_offer(s, o);
	json_decref(o);
}

static void expect_log(struct rec *r, const char *want)
{
	assert_string_equal(buf_cstr(&r->log), want);
	buf_reset(&r->log);
}

static void test_event_driven(void **state)
{
	(void)state;
	static const struct region_follow ops = { .open = rec_open, .close = rec_close };
	struct rec r = { .log = BUF_INIT };
	struct region_peers s;
	region_peers_init(&s, &ops, &r, 2);
	offer(&s, "tp-1", "[\"https://a\"]");
	expect_log(&r, "open tp-1 https://a;");
	offer(&s, "tp-1", "[\"https://a\"]"); /* same endpoints: nothing */
	expect_log(&r, "");
	assert_string_equal(region_peers_find(&s, "tp-1")->val, "tp-1@https://a");
	/* moved without .move: closed, then opened again */
	offer(&s, "tp-1", "[\"https://b\", \"https://c\"]");
	expect_log(&r, "close tp-1 tp-1@https://a;open tp-1 https://b,https://c;");
	assert_string_equal(region_peers_find(&s, "tp-1")->servers, "https://b,https://c");
	/* at most max; refused opens are left out and offered again later */
	offer(&s, "tp-2", "[\"https://d\"]");
	offer(&s, "tp-3", "[\"https://e\"]");
	expect_log(&r, "open tp-2 https://d;");
	assert_int_equal(s.n, 2);
	assert_null(region_peers_find(&s, "tp-3"));
	assert_true(region_peers_remove(&s, "tp-2"));
	assert_false(region_peers_remove(&s, "tp-2"));
	assert_false(region_peers_remove(&s, NULL));
	r.refuse = true;
	offer(&s, "tp-3", "[\"https://e\"]");
	assert_null(region_peers_find(&s, "tp-3"));
	r.refuse = false;
	offer(&s, "tp-3", "[\"https://e\"]");
	expect_log(&r, "close tp-2 tp-2@https://d;open tp-3 https://e;open tp-3 https://e;");
	/* an update without usable endpoints closes; no name is ignored */
	offer(&s, "tp-3", "[\"\"]");
	expect_log(&r, "close tp-3 tp-3@https://e;");
	json_t *anon = json_pack("{s:{s:[s]}}", "spec", "endpoints", "https://x");
	region_peers_offer(&s, anon);
	json_decref(anon);
	expect_log(&r, "");
	region_peers_release(&s);
	expect_log(&r, "close tp-1 tp-1@https://b,https://c;");
	assert_int_equal(s.n, 0);
	buf_release(&r.log);
}

static void test_sweep_with_move(void **state)
{
	(void)state;
	static const struct region_follow ops = { .open = rec_open, .move = rec_move, .seen = rec_seen,
						  .close = rec_close };
	struct rec r = { .log = BUF_INIT };
	struct region_peers s;
	region_peers_init(&s, &ops, &r, 16);
	region_peers_sweep_begin(&s);
	offer(&s, "rm-1", "[\"https://a\"]");
	offer(&s, "rm-2", "[\"https://b\"]");
	offer(&s, "rm-3", "[\"https://c\"]");
	region_peers_sweep_end(&s);
	expect_log(&r, "open rm-1 https://a;open rm-2 https://b;open rm-3 https://c;");
	assert_int_equal(r.seen, 3);
	/* rm-1 moves (kept, new value), rm-2 is gone, rm-3 unchanged; order is kept */
	region_peers_sweep_begin(&s);
	offer(&s, "rm-3", "[\"https://c\"]");
	offer(&s, "rm-1", "[\"https://z\"]");
	region_peers_sweep_end(&s);
	expect_log(&r, "move rm-1@https://a https://z;close rm-2 rm-2@https://b;");
	assert_int_equal(r.seen, 5);
	assert_int_equal(s.n, 2);
	assert_string_equal(s.v[0].val, "rm-1@https://z");
	assert_string_equal(s.v[0].servers, "https://z");
	assert_string_equal(s.v[1].name, "rm-3");
	/* a refused move keeps the old endpoints, and the partition stays followed */
	r.refuse_move = true;
	region_peers_sweep_begin(&s);
	offer(&s, "rm-1", "[\"https://y\"]");
	offer(&s, "rm-3", "[\"https://c\"]");
	region_peers_sweep_end(&s);
	expect_log(&r, "move rm-1@https://z https://y;");
	assert_string_equal(region_peers_find(&s, "rm-1")->servers, "https://z");
	assert_string_equal(region_peers_find(&s, "rm-1")->val, "rm-1@https://z");
	/* an empty registry closes everything */
	region_peers_sweep_begin(&s);
	region_peers_sweep_end(&s);
	expect_log(&r, "close rm-3 rm-3@https://c;close rm-1 rm-1@https://z;");
	region_peers_release(&s);
	buf_release(&r.log);
}

/* Without .close (kubelet, scheduler): closed values wait for the caller, who frees them
 * outside its lock. */
static void test_deferred_close(void **state)
{
	(void)state;
	static const struct region_follow ops = { .open = rec_open };
	struct rec r = { .log = BUF_INIT };
	struct region_peers s;
	size_t n = 99;
	region_peers_init(&s, &ops, &r, 8);
	offer(&s, "tp-1", "[\"https://a\"]");
	offer(&s, "tp-2", "[\"https://b\"]");
	assert_null(region_peers_take_closed(&s, &n));
	assert_int_equal(n, 0);
	offer(&s, "tp-1", "[\"https://c\"]"); /* moved: the old value is closed */
	void **v = region_peers_take_closed(&s, &n);
	assert_int_equal(n, 1);
	assert_string_equal(v[0], "tp-1@https://a");
	free(v[0]);
	free(v);
	assert_null(region_peers_take_closed(&s, &n)); /* taken once */
	region_peers_release(&s);
	v = region_peers_take_closed(&s, &n);
	assert_int_equal(n, 2);
	assert_string_equal(v[0], "tp-1@https://c");
	assert_string_equal(v[1], "tp-2@https://b");
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
	expect_log(&r, "open tp-1 https://a;open tp-2 https://b;open tp-1 https://c;");
	buf_release(&r.log);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_endpoints),
		cmocka_unit_test(test_event_driven),
		cmocka_unit_test(test_sweep_with_move),
		cmocka_unit_test(test_deferred_close),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
