/* Discovery per tenant at the gateway (disco.c) with a fake partition fetch: the caller's
 * tenant's partition answers (its custom resource groups reach that tenant only), the resource
 * managers' kinds are merged in, the partition is asked conditionally and a 304 serves the cached
 * merged document, tenants with the same document share an entry, the resource managers are not
 * asked again while fresh, another partition answers when the tenant's is down, a 404 is left to
 * the caller, and the cache stays within its bounds. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "gw.h"
#include "gwtest.h"
#include "ursa/apidisc.h"
#include "ursa/errors.h"
#include "ursa/jsonutil.h"
#include "ursa/xalloc.h"

static json_t *parse(const char *s)
{
	json_error_t e;
	json_t *j = json_loads(s, 0, &e);
	if (!j)
		fail_msg("bad test JSON: %s: %s", e.text, s);
	return j;
}

static void test_merge(void **state)
{
	(void)state;
	json_t *d = parse("{\"kind\":\"APIResourceList\",\"resources\":[{\"name\":\"pods\"},{\"name\":\"services\"}]}");
	json_t *s = parse("{\"kind\":\"APIResourceList\",\"resources\":[{\"name\":\"nodes\"},{\"name\":\"pods\",\"x\":1}]}");
	disco_merge(d, s, APIDISC_LEGACY);
	json_t *res = json_object_get(d, "resources");
	assert_int_equal(json_array_size(res), 3);
	assert_string_equal(json_str(json_array_get(res, 2), "name"), "nodes");
	assert_null(json_object_get(json_array_get(res, 0), "x")); /* dst wins */
	json_decref(d);
	json_decref(s);
	d = parse("{\"kind\":\"APIGroupList\",\"groups\":[{\"name\":\"apps\"}]}");
	s = parse("{\"kind\":\"APIGroupList\",\"groups\":[{\"name\":\"metrics.k8s.io\"},{\"name\":\"apps\"}]}");
	disco_merge(d, s, APIDISC_LEGACY);
	assert_int_equal(json_array_size(json_object_get(d, "groups")), 2);
	json_decref(d);
	json_decref(s);
	/* other kinds, and non-objects: untouched */
	d = parse("{\"kind\":\"APIVersions\",\"versions\":[\"v1\"]}");
	s = parse("{\"kind\":\"APIVersions\",\"versions\":[\"v2\"]}");
	disco_merge(d, s, APIDISC_LEGACY);
	disco_merge(d, NULL, APIDISC_LEGACY);
	assert_int_equal(json_array_size(json_object_get(d, "versions")), 1);
	json_decref(d);
	json_decref(s);
	/* aggregated: groups united */
	d = parse("{\"kind\":\"APIGroupDiscoveryList\",\"items\":[{\"metadata\":{\"name\":\"apps\"},\"versions\":[]}]}");
	s = parse("{\"kind\":\"APIGroupDiscoveryList\",\"items\":[{\"metadata\":{\"name\":\"metrics.k8s.io\"},"
		  "\"versions\":[]}]}");
	disco_merge(d, s, APIDISC_V2);
	assert_int_equal(json_array_size(json_object_get(d, "items")), 2);
	json_decref(d);
	json_decref(s);
}

/* tp-1 holds tenant a (group a.example.com), tp-2 tenant b; rm-1 serves metrics.k8s.io. */
struct fake {
	const char *tenant;
	int gen_a;
	int tp_calls, rm_calls, conditional, not_modified;
	bool fail_tp1;
};

static int fetch(void *ud, struct partition *p, const char *path, int form, const char *inm, struct upstream_resp *ret)
{
	struct fake *f = ud;
	(void)form;
	bool rm = p->is_rm;
	if (rm)
		f->rm_calls++;
	else
		f->tp_calls++;
	if (!rm && f->fail_tp1 && strcmp(p->id, "tp-1") == 0)
		return E_UNAVAILABLE;
	*ret = (struct upstream_resp){ .status = 404, .content_type = xstrdup("application/json") };
	struct buf b = BUF_INIT;
	bool own = !rm && strcmp(p->id, "tp-1") == 0 && strcmp(f->tenant, "a") == 0;
	if (strcmp(path, "/apis") == 0) {
		buf_adds(&b, "{\"kind\":\"APIGroupList\",\"groups\":[{\"name\":\"apps\"}");
		if (own)
			buf_addf(&b, ",{\"name\":\"a.example.com\",\"gen\":%d}", f->gen_a);
		if (rm)
			buf_adds(&b, ",{\"name\":\"metrics.k8s.io\"}");
		buf_adds(&b, "]}");
	} else if (strcmp(path, "/apis/a.example.com/v1") == 0 && own) {
		buf_adds(&b, "{\"kind\":\"APIResourceList\",\"resources\":[{\"name\":\"widgets\"}]}");
	} else {
		return 0;
	}
	char *etag = xasprintf("\"%s-%s\"", p->id, own ? (f->gen_a ? "a1" : "a0") : "builtin");
	if (inm) {
		f->conditional++;
		if (strcmp(inm, etag) == 0) {
			f->not_modified++;
			ret->status = 304;
			free(etag);
			buf_release(&b);
			return 0;
		}
	}
	ret->status = 200;
	ret->etag = etag;
	ret->body = b;
	return 0;
}

static bool has(const struct disco_reply *r, const char *s)
{
	return r->body.ptr && strstr(buf_cstr(&r->body), s);
}

static void test_tenants(void **state)
{
	(void)state;
	disco_cache_clear();
	struct partition *tp1 = test_partition("tp", "tp-1", "\"http://127.0.0.1:1\"");
	struct partition *tp2 = test_partition("tp", "tp-2", "\"http://127.0.0.1:2\"");
	struct partition *rm = test_partition("rm", "rm-1", "\"http://127.0.0.1:3\"");
	struct partition *o1[] = { tp1, tp2 }, *o2[] = { tp2, tp1 };
	struct fake fk = { .tenant = "a" };
	struct disco_fetcher f = { .tps = o1, .ntp = 2, .rms = &rm, .nrm = 1, .tenant = "a", .fresh_ms = 3600000,
				   .fetch = fetch, .ud = &fk };
	struct disco_reply r;
	assert_int_equal(disco_get(&f, "/apis", APIDISC_LEGACY, NULL, &r), 0);
	assert_int_equal(r.status, 200);
	assert_true(has(&r, "a.example.com"));
	assert_true(has(&r, "metrics.k8s.io"));
	assert_string_equal(r.partition, "tp-1");
	char *tag = xstrdup(r.etag);
	disco_reply_release(&r);
	assert_int_equal(fk.tp_calls, 1);
	assert_int_equal(fk.rm_calls, 1);
	/* again: the partition asked with its tag (304), the resource manager not at all */
	assert_int_equal(disco_get(&f, "/apis", APIDISC_LEGACY, NULL, &r), 0);
	assert_true(has(&r, "a.example.com"));
	assert_string_equal(r.etag, tag);
	disco_reply_release(&r);
	assert_int_equal(fk.not_modified, 1);
	assert_int_equal(fk.rm_calls, 1);
	struct disco_stats st;
	disco_stats_get(&st);
	assert_int_equal(st.builds, 1);
	assert_int_equal(st.hits, 1);
	/* the client's If-None-Match: 304 */
	assert_int_equal(disco_get(&f, "/apis", APIDISC_LEGACY, tag, &r), 0);
	assert_int_equal(r.status, 304);
	assert_int_equal(r.body.len, 0);
	disco_reply_release(&r);
	/* a's own group version */
	assert_int_equal(disco_get(&f, "/apis/a.example.com/v1", APIDISC_LEGACY, NULL, &r), 0);
	assert_true(has(&r, "widgets"));
	disco_reply_release(&r);
	/* b on tp-2: no a.example.com; its group version is the partition's 404 */
	f.tenant = fk.tenant = "b";
	f.tps = o2;
	assert_int_equal(disco_get(&f, "/apis", APIDISC_LEGACY, NULL, &r), 0);
	assert_false(has(&r, "a.example.com"));
	assert_true(has(&r, "metrics.k8s.io"));
	assert_string_equal(r.partition, "tp-2");
	disco_reply_release(&r);
	assert_int_equal(disco_get(&f, "/apis/a.example.com/v1", APIDISC_LEGACY, NULL, &r), E_NOT_FOUND);
	assert_int_equal(r.status, 404);
	assert_string_equal(r.partition, "tp-2");
	assert_false(r.other_form);
	disco_reply_release(&r);
	/* c and d on tp-1 without CRDs: one entry, built once */
	f.tps = o1;
	f.tenant = fk.tenant = "c";
	assert_int_equal(disco_get(&f, "/apis", APIDISC_LEGACY, NULL, &r), 0);
	assert_false(has(&r, "a.example.com"));
	disco_reply_release(&r);
	disco_stats_get(&st);
	long builds = st.builds;
	size_t entries = st.entries;
	f.tenant = fk.tenant = "d";
	assert_int_equal(disco_get(&f, "/apis", APIDISC_LEGACY, NULL, &r), 0);
	disco_reply_release(&r);
	disco_stats_get(&st);
	assert_int_equal(st.builds, builds);
	assert_int_equal(st.entries, entries);
	/* a's CRDs change: seen at once (the partition is asked every time) */
	f.tenant = fk.tenant = "a";
	fk.gen_a = 1;
	assert_int_equal(disco_get(&f, "/apis", APIDISC_LEGACY, tag, &r), 0);
	assert_int_equal(r.status, 200);
	assert_true(has(&r, "\"gen\":1") || has(&r, "\"gen\": 1"));
	assert_string_not_equal(r.etag, tag);
	disco_reply_release(&r);
	/* tp-1 does not answer: tp-2 does, with the built-in groups */
	fk.fail_tp1 = true;
	assert_int_equal(disco_get(&f, "/apis", APIDISC_LEGACY, NULL, &r), 0);
	assert_string_equal(r.partition, "tp-2");
	assert_false(has(&r, "a.example.com"));
	assert_true(has(&r, "apps"));
	disco_reply_release(&r);
	disco_stats_get(&st);
	assert_int_equal(st.fallbacks, 1);
	/* ... nor does tp-2 (down): unavailable */
	atomic_store(&tp2->down, true);
	assert_int_equal(disco_get(&f, "/apis", APIDISC_LEGACY, NULL, &r), E_UNAVAILABLE);
	disco_reply_release(&r);
	atomic_store(&tp2->down, false);
	fk.fail_tp1 = false;
	/* aggregated asked for, legacy answered: other_form (the caller asks for legacy) */
	assert_int_equal(disco_get(&f, "/apis", APIDISC_V2, NULL, &r), E_NOT_FOUND);
	assert_true(r.other_form);
	disco_reply_release(&r);
	free(tag);
	disco_cache_clear();
	partition_unref(tp1);
	partition_unref(tp2);
	partition_unref(rm);
}

/* Many tenants with documents of their own: the cache keeps at most DISCO_MAX_ENTRIES. */
static int many_fetch(void *ud, struct partition *p, const char *path, int form, const char *inm,
		      struct upstream_resp *ret)
{
	(void)p, (void)path, (void)form, (void)inm;
	*ret = (struct upstream_resp){ .status = 200, .content_type = xstrdup("application/json") };
	buf_addf(&ret->body, "{\"kind\":\"APIGroupList\",\"groups\":[{\"name\":\"%s.example.com\"}]}", (const char *)ud);
	return 0;
}

static void test_bounded(void **state)
{
	(void)state;
	disco_cache_clear();
	struct partition *tp1 = test_partition("tp", "tp-1", "\"http://127.0.0.1:1\"");
	char name[32];
	struct disco_fetcher f = { .tps = &tp1, .ntp = 1, .tenant = name, .fetch = many_fetch, .ud = name };
	for (int i = 0; i < DISCO_MAX_ENTRIES + 50; i++) {
		snprintf(name, sizeof(name), "t%d", i);
		struct disco_reply r;
		assert_int_equal(disco_get(&f, "/apis", APIDISC_LEGACY, NULL, &r), 0);
		assert_true(has(&r, name));
		disco_reply_release(&r);
	}
	struct disco_stats st;
	disco_stats_get(&st);
	assert_int_equal(st.entries, DISCO_MAX_ENTRIES);
	assert_int_equal(st.evictions, 50);
	disco_cache_clear();
	partition_unref(tp1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_merge),
		cmocka_unit_test(test_tenants),
		cmocka_unit_test(test_bounded),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
