/* The JSONPath subset of printer columns (src/common/crd/jsonpath.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>
#include "testjson.h"
#include "ursa/crd.h"

static const char doc[] = "{\"spec\":{\"cronSpec\":\"* * * * */5\",\"replicas\":3,\"ratio\":1.5,\"on\":true,"
			  "\"off\":false,\"nothing\":null,\"image\":{\"name\":\"x\",\"tags\":[\"a\",\"b\"]},"
			  "\"odd-key_1\":\"dash\"},"
			  "\"metadata\":{\"labels\":{\"app\":\"web\",\"app.kubernetes.io/name\":\"web2\"}},"
			  "\"status\":{\"conditions\":[{\"type\":\"Ready\"},{\"type\":\"Synced\"}]}}";

static void test_valid(void **state)
{
	(void)state;
	static const char *const good[] = {
		".spec", ".spec.cronSpec", ".status.conditions[0].type", ".metadata.labels['app']",
		".metadata.labels[\"app.kubernetes.io/name\"]", ".a[10][2]", ".a[-1]", ".x_y-z.A9", ".a['b c']",
	};
	static const char *const bad[] = {
		"", ".", "spec", "..spec", ".spec.", ".spec[", ".spec[]", ".spec[a]", ".spec['a']x", ".spec['a'",
		".spec['']", ".spec[*]", ".spec[0:2]", ".spec[?(@.x)]", "{.spec}", ".spec .x", ".a[-0]",
		".a[1234567890]",
		".a[\"b']", "$.spec", ".spec.*",
	};
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		if (!crd_jsonpath_valid(good[i]))
			fail_msg("should be valid: %s", good[i]);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (crd_jsonpath_valid(bad[i]))
			fail_msg("should be invalid: %s", bad[i]);
	assert_false(crd_jsonpath_valid(NULL));
	char *long_path = malloc(2100);
	for (int i = 0; i < 1050; i++)
		memcpy(long_path + 2 * i, ".a", 2);
	long_path[2100 - 1] = 0;
	long_path[2098] = 'a';
	assert_false(crd_jsonpath_valid(long_path));
	free(long_path);
}

static void expect_eval(const json_t *obj, const char *path, const char *want)
{
	struct buf out = BUF_INIT;
	buf_adds(&out, "<");
	bool ok = crd_jsonpath_eval(path, obj, &out);
	if (!want) {
		if (ok || out.len != 1)
			fail_msg("%s: expected absent, got %s", path, buf_cstr(&out));
	} else {
		if (!ok)
			fail_msg("%s: expected %s, got absent", path, want);
		assert_string_equal(buf_cstr(&out) + 1, want);
	}
	buf_release(&out);
}

static void test_eval(void **state)
{
	(void)state;
	json_t *obj = J(doc);
	expect_eval(obj, ".spec.cronSpec", "* * * * */5");
	expect_eval(obj, ".spec.replicas", "3");
	expect_eval(obj, ".spec.ratio", "1.5");
	expect_eval(obj, ".spec.on", "true");
	expect_eval(obj, ".spec.off", "false");
	expect_eval(obj, ".spec.image", "{\"name\":\"x\",\"tags\":[\"a\",\"b\"]}");
	expect_eval(obj, ".spec.image.tags", "[\"a\",\"b\"]");
	expect_eval(obj, ".spec.image.tags[1]", "b");
	expect_eval(obj, ".spec.image.tags[-1]", "b");
	expect_eval(obj, ".spec.image.tags[-2]", "a");
	expect_eval(obj, ".spec['odd-key_1']", "dash");
	expect_eval(obj, ".spec.odd-key_1", "dash");
	expect_eval(obj, ".status.conditions[1].type", "Synced");
	expect_eval(obj, ".metadata.labels['app']", "web");
	expect_eval(obj, ".metadata.labels['app.kubernetes.io/name']", "web2");
	/* absent */
	expect_eval(obj, ".spec.nothing", NULL);
	expect_eval(obj, ".spec.nope", NULL);
	expect_eval(obj, ".spec.image.tags[2]", NULL);
	expect_eval(obj, ".spec.image.tags[-3]", NULL);
	expect_eval(obj, ".spec.cronSpec.x", NULL);
	expect_eval(obj, ".spec[0]", NULL);
	expect_eval(obj, ".spec.image.tags.x", NULL);
	expect_eval(obj, ".metadata.labels.app.kubernetes", NULL);
	expect_eval(obj, "spec.cronSpec", NULL);
	expect_eval(obj, ".spec[*]", NULL);
	json_decref(obj);
}

static void test_get(void **state)
{
	(void)state;
	json_t *obj = J(doc);
	assert_ptr_equal(crd_jsonpath_get(".spec", obj), json_object_get(obj, "spec"));
	assert_true(json_is_null(crd_jsonpath_get(".spec.nothing", obj)));
	assert_int_equal(json_integer_value(crd_jsonpath_get(".spec.replicas", obj)), 3);
	assert_null(crd_jsonpath_get(".spec.none", obj));
	assert_null(crd_jsonpath_get(".spec", NULL));
	assert_null(crd_jsonpath_get("bad", obj));
	json_t *arr = J("[1,2]");
	assert_null(crd_jsonpath_get(".a", arr));
	json_decref(arr);
	json_decref(obj);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_valid),
		cmocka_unit_test(test_eval),
		cmocka_unit_test(test_get),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
