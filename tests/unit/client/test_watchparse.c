/* Watch stream line splitter and event parser; the string map under the stores. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>
#include "client/client_internal.h"
#include "ursa/errors.h"
#include "ursa/jsonutil.h"
#include "ursa/xalloc.h"

struct lines {
	char *v[16];
	size_t n;
};

static int collect(void *ud, const char *line, size_t len)
{
	struct lines *l = ud;
	if (l->n == 16)
		return -7;
	l->v[l->n++] = xstrndup(line, len);
	return 0;
}

static void lines_free(struct lines *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->v[i]);
	l->n = 0;
}

static void test_split_any_chunking(void **state)
{
	const char *stream = "{\"a\":1}\n{\"b\":2}\r\n\n  \n{\"c\":3}\n{\"partial\"";
	size_t len = strlen(stream);
	/* every chunk size gives the same lines */
	for (size_t chunk = 1; chunk <= len; chunk++) {
		struct watch_lines wl;
		struct lines l = { 0 };
		watch_lines_init(&wl);
		for (size_t off = 0; off < len; off += chunk) {
			size_t n = len - off < chunk ? len - off : chunk;
			assert_int_equal(watch_lines_feed(&wl, stream + off, n, collect, &l), 0);
		}
		assert_int_equal(l.n, 3);
		assert_string_equal(l.v[0], "{\"a\":1}");
		assert_string_equal(l.v[1], "{\"b\":2}");
		assert_string_equal(l.v[2], "{\"c\":3}");
		assert_int_equal(wl.partial.len, strlen("{\"partial\""));
		lines_free(&l);
		watch_lines_release(&wl);
	}
}

static void test_split_cap_and_stop(void **state)
{
	struct watch_lines wl;
	struct lines l = { 0 };
	watch_lines_init(&wl);
	wl.max_line = 8;
	assert_int_equal(watch_lines_feed(&wl, "12345", 5, collect, &l), 0);
	assert_int_equal(watch_lines_feed(&wl, "6789", 4, collect, &l), E_TOO_LARGE);
	assert_int_equal(wl.partial.len, 0);
	assert_int_equal(watch_lines_feed(&wl, "ok\n", 3, collect, &l), 0);
	assert_int_equal(l.n, 1);
	assert_string_equal(l.v[0], "ok");
	lines_free(&l);
	/* a handler's non-zero result stops the feed */
	l.n = 16;
	assert_int_equal(watch_lines_feed(&wl, "x\ny\n", 4, collect, &l), -7);
	l.n = 0;
	watch_lines_release(&wl);
}

static void test_event_parse(void **state)
{
	struct watch_event ev;
	const char *ok = "{\"type\":\"MODIFIED\",\"object\":{\"kind\":\"Pod\",\"metadata\":{\"resourceVersion\":\"7\"}}}";
	assert_int_equal(watch_event_parse(ok, strlen(ok), &ev), 0);
	assert_int_equal(ev.type, WEV_MODIFIED);
	assert_string_equal(json_string_value(json_object_get(ev.object, "kind")), "Pod");
	json_decref(ev.object);

	const char *gone = "{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"code\":410,\"reason\":\"Expired\"}}";
	assert_int_equal(watch_event_parse(gone, strlen(gone), &ev), 0);
	assert_int_equal(ev.type, WEV_ERROR);
	assert_true(watch_status_expired(ev.object));
	json_decref(ev.object);

	const char *other = "{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"code\":500}}";
	assert_int_equal(watch_event_parse(other, strlen(other), &ev), 0);
	assert_false(watch_status_expired(ev.object));
	json_decref(ev.object);

	const char *bad[] = {
		"", "null", "[]", "{\"type\":\"ADDED\"}", "{\"type\":\"ADDED\",\"object\":[]}",
		"{\"type\":\"ADDED\",\"object\":\"x\"}", "{\"type\":\"EXPLODED\",\"object\":{}}", "{\"type\":7,\"object\":{}}",
		"{\"type\":\"ADDED\",\"object\":{}", "{\"type\":\"ADDED\",\"type\":\"DELETED\",\"object\":{}}",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(watch_event_parse(bad[i], strlen(bad[i]), &ev), E_BAD_REQUEST);

	/* nesting deeper than the cap is refused, not recursed into */
	struct buf deep = BUF_INIT;
	buf_adds(&deep, "{\"type\":\"ADDED\",\"object\":{\"a\":");
	for (int i = 0; i < 10000; i++)
		buf_addch(&deep, '[');
	for (int i = 0; i < 10000; i++)
		buf_addch(&deep, ']');
	buf_adds(&deep, "}}");
	assert_int_equal(watch_event_parse(deep.ptr, deep.len, &ev), E_BAD_REQUEST);
	buf_release(&deep);
}

static void test_strmap(void **state)
{
	struct strmap m;
	bool created;
	size_t it, seen = 0;
	strmap_init(&m);
	for (int i = 0; i < 1000; i++) {
		char *k = xasprintf("t/ns/%d", i);
		struct strmap_ent *e = strmap_put(&m, k, &created);
		assert_true(created);
		e->num = i;
		free(k);
	}
	assert_int_equal(m.n, 1000);
	assert_int_equal(strmap_get(&m, "t/ns/777")->num, 777);
	strmap_put(&m, "t/ns/777", &created);
	assert_false(created);
	for (int i = 0; i < 1000; i += 2) {
		char *k = xasprintf("t/ns/%d", i);
		assert_true(strmap_del(&m, k, NULL));
		assert_false(strmap_del(&m, k, NULL));
		free(k);
	}
	for (struct strmap_ent *e = strmap_next(&m, NULL, &it); e; e = strmap_next(&m, e, &it)) {
		assert_int_equal(e->num % 2, 1);
		seen++;
	}
	assert_int_equal(seen, 500);
	assert_null(strmap_get(&m, "t/ns/0"));
	strmap_release(&m, NULL);
}

static void test_object_key(void **state)
{
	json_t *o = json_pack("{s:{s:s,s:s,s:s}}", "metadata", "tenant", "t1", "namespace", "default", "name", "p");
	char *k = object_key(o);
	assert_string_equal(k, "t1/default/p");
	free(k);
	json_decref(o);
	o = json_pack("{s:{s:s,s:s}}", "metadata", "tenant", "system", "name", "node-1");
	k = object_key(o);
	assert_string_equal(k, "system//node-1");
	free(k);
	json_decref(o);
}

static void test_base64_yaml(void **state)
{
	struct buf out = BUF_INIT, err = BUF_INIT;
	assert_int_equal(base64_decode_buf("aGVsbG8g\nd29ybGQ=", 17, &out), 0);
	assert_string_equal(buf_cstr(&out), "hello world");
	buf_reset(&out);
	assert_int_equal(base64_decode_buf("a$==", 4, &out), -1);
	buf_release(&out);

	const char *y = "a: 1\nb:\n  - x\n  - {c: d}\n";
	json_t *j = yaml_doc_to_json(y, strlen(y), &err);
	assert_non_null(j);
	assert_string_equal(json_string_value(json_object_get(j, "a")), "1");
	assert_string_equal(json_path_str(json_array_get(json_object_get(j, "b"), 1), "c"), "d");
	json_decref(j);
	/* alias expansion is capped */
	const char *bomb = "a: &a [x,x,x,x,x,x,x,x,x,x]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a,*a]\n"
			   "c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b,*b]\nd: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c,*c]\n"
			   "e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d,*d]\nf: [*e,*e,*e,*e,*e,*e,*e,*e,*e,*e]\n";
	assert_null(yaml_doc_to_json(bomb, strlen(bomb), &err));
	buf_reset(&err);
	assert_null(yaml_doc_to_json("a: [", 4, &err));
	assert_true(err.len > 0);
	buf_release(&err);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_split_any_chunking), cmocka_unit_test(test_split_cap_and_stop),
		cmocka_unit_test(test_event_parse),        cmocka_unit_test(test_strmap),
		cmocka_unit_test(test_object_key),         cmocka_unit_test(test_base64_yaml),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
