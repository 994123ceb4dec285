/* The multiplexed watch request's parser (wm_parse, src/common/apiserver/watchmux.c): what a
 * well-formed body gives, and that every malformed one is refused whole with a message naming
 * what is wrong, returning nothing. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>
#include "apiserver/internal.h"

static int parse(const char *body, struct wm_spec **v, size_t *n, long long *timeout, struct buf *err)
{
	buf_reset(err);
	return wm_parse(body, strlen(body), v, n, timeout, err);
}

static void test_good_body(void **state)
{
	(void)state;
	struct wm_spec *v;
	size_t n;
	long long timeout;
	struct buf err = BUF_INIT;
	assert_int_equal(parse("{\"timeoutSeconds\":30,\"watches\":["
			       "{\"id\":\"n-1\",\"path\":\"/api/v1/tenants/all/pods\",\"fieldSelector\":\"spec.nodeName=n-1\","
			       "\"resourceVersion\":\"42\",\"allowWatchBookmarks\":true},"
			       "{\"id\":\"b\",\"path\":\"/api/v1/namespaces/default/configmaps\",\"labelSelector\":\"a=b\","
			       "\"resourceVersion\":\"\",\"extra\":1}]}",
			       &v, &n, &timeout, &err),
			 0);
	assert_int_equal(n, 2);
	assert_int_equal(timeout, 30);
	assert_string_equal(v[0].id, "n-1");
	assert_string_equal(v[0].path, "/api/v1/tenants/all/pods");
	assert_string_equal(v[0].field_selector, "spec.nodeName=n-1");
	assert_null(v[0].label_selector);
	assert_int_equal(v[0].rv, 42);
	assert_true(v[0].bookmarks);
	assert_string_equal(v[1].label_selector, "a=b");
	assert_int_equal(v[1].rv, -1); /* empty: from now */
	assert_false(v[1].bookmarks);
	wm_specs_free(v, n);
	buf_release(&err);
}

static void test_bad_bodies(void **state)
{
	(void)state;
	static const struct {
		const char *body, *says;
	} bad[] = {
		{ "", "not valid JSON" },
		{ "{\"watches\":[{\"id\":\"a\",\"path\":\"/x\"}]} trailing", "not valid JSON" },
		{ "[]", "\"watches\" array" },
		{ "{\"watches\":{}}", "\"watches\" array" },
		{ "{\"watches\":[]}", "1 to 10000" },
		{ "{\"watches\":[{\"id\":\"a\",\"path\":\"/x\"}],\"timeoutSeconds\":-1}", "timeoutSeconds" },
		{ "{\"watches\":[{\"id\":\"a\",\"path\":\"/x\"}],\"timeoutSeconds\":\"5\"}", "timeoutSeconds" },
		{ "{\"watches\":[1]}", "watches[0]" },
		{ "{\"watches\":[{\"path\":\"/x\"}]}", "watches[0]: id is required" },
		{ "{\"watches\":[{\"id\":\"\",\"path\":\"/x\"}]}", "id is required" },
		{ "{\"watches\":[{\"id\":\"a\",\"path\":\"/x\"},{\"id\":\"b\"}]}", "watches[1]: path" },
		{ "{\"watches\":[{\"id\":\"a\",\"path\":\"x\"}]}", "absolute path" },
		{ "{\"watches\":[{\"id\":\"a\",\"path\":\"/x?watch=1\"}]}", "without a query" },
		{ "{\"watches\":[{\"id\":\"a\",\"path\":\"/x\",\"resourceVersion\":\"-1\"}]}", "non-negative" },
		{ "{\"watches\":[{\"id\":\"a\",\"path\":\"/x\",\"resourceVersion\":\"12x\"}]}", "non-negative" },
		{ "{\"watches\":[{\"id\":\"a\",\"path\":\"/x\",\"resourceVersion\":7}]}", "are strings" },
		{ "{\"watches\":[{\"id\":\"a\",\"path\":\"/x\",\"allowWatchBookmarks\":\"true\"}]}", "boolean" },
		{ "{\"watches\":[{\"id\":\"a\",\"path\":\"/x\",\"fieldSelector\":[]}]}", "are strings" },
		{ "{\"watches\":[{\"id\":\"a\",\"id\":\"b\",\"path\":\"/x\"}]}", "not valid JSON" }, /* duplicate key */
	};
	struct buf err = BUF_INIT;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct wm_spec *v = (void *)1;
		size_t n = 99;
		long long timeout;
		if (parse(bad[i].body, &v, &n, &timeout, &err) != -1)
			fail_msg("accepted: %s", bad[i].body);
		assert_null(v);
		assert_int_equal(n, 0);
		if (!strstr(buf_cstr(&err), bad[i].says))
			fail_msg("%s: message \"%s\" lacks \"%s\"", bad[i].body, buf_cstr(&err), bad[i].says);
	}
	buf_release(&err);
}

static void test_limits(void **state)
{
	(void)state;
	struct buf body = BUF_INIT, err = BUF_INIT;
	buf_adds(&body, "{\"watches\":[");
	for (int i = 0; i < 10001; i++)
		buf_addf(&body, "%s{\"id\":\"w%d\",\"path\":\"/api/v1/pods\"}", i ? "," : "", i);
	buf_adds(&body, "]}");
	struct wm_spec *v;
	size_t n;
	long long timeout;
	assert_int_equal(parse(buf_cstr(&body), &v, &n, &timeout, &err), -1);
	assert_non_null(strstr(buf_cstr(&err), "not 10001"));
	/* 10,000 is allowed */
	char *cut = strstr(body.ptr, ",{\"id\":\"w10000\"");
	assert_non_null(cut);
	strcpy(cut, "]}");
	assert_int_equal(parse(body.ptr, &v, &n, &timeout, &err), 0);
	assert_int_equal(n, 10000);
	assert_string_equal(v[9999].id, "w9999");
	wm_specs_free(v, n);
	/* an id of 254 bytes is refused */
	buf_reset(&body);
	buf_adds(&body, "{\"watches\":[{\"id\":\"");
	for (int i = 0; i < 254; i++)
		buf_addch(&body, 'x');
	buf_adds(&body, "\",\"path\":\"/x\"}]}");
	assert_int_equal(parse(buf_cstr(&body), &v, &n, &timeout, &err), -1);
	buf_release(&body);
	buf_release(&err);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_good_body),
		cmocka_unit_test(test_bad_bodies),
		cmocka_unit_test(test_limits),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
