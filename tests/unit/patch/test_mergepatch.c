/* RFC 7386 JSON Merge Patch: the RFC's appendix A table and what kubectl scale/label send. */
#include "patch_test.h"

static int mp(const json_t *doc, const json_t *patch, const char *kind, json_t **ret, struct buf *err)
{
	(void)kind;
	return merge_patch_apply(doc, patch, ret, err);
}

#define OK(n, d, p, w) { n, NULL, d, p, w, 0 }

static const struct pcase rfc_cases[] = {
	OK("replace member", "{\"a\":\"b\"}", "{\"a\":\"c\"}", "{\"a\":\"c\"}"),
	OK("add member", "{\"a\":\"b\"}", "{\"b\":\"c\"}", "{\"a\":\"b\",\"b\":\"c\"}"),
	OK("delete member", "{\"a\":\"b\"}", "{\"a\":null}", "{}"),
	OK("delete one of two", "{\"a\":\"b\",\"b\":\"c\"}", "{\"a\":null}", "{\"b\":\"c\"}"),
	OK("array replaced by string", "{\"a\":[\"b\"]}", "{\"a\":\"c\"}", "{\"a\":\"c\"}"),
	OK("string replaced by array", "{\"a\":\"c\"}", "{\"a\":[\"b\"]}", "{\"a\":[\"b\"]}"),
	OK("nested merge and delete", "{\"a\":{\"b\":\"c\"}}", "{\"a\":{\"b\":\"d\",\"c\":null}}", "{\"a\":{\"b\":\"d\"}}"),
	OK("array of objects replaced", "{\"a\":[{\"b\":\"c\"}]}", "{\"a\":[1]}", "{\"a\":[1]}"),
	OK("arrays replaced", "[\"a\",\"b\"]", "[\"c\",\"d\"]", "[\"c\",\"d\"]"),
	OK("object replaced by array", "{\"a\":\"b\"}", "[\"c\"]", "[\"c\"]"),
	OK("null patch", "{\"a\":\"foo\"}", "null", "null"),
	OK("string patch", "{\"a\":\"foo\"}", "\"bar\"", "\"bar\""),
	OK("null in target kept", "{\"e\":null}", "{\"a\":1}", "{\"e\":null,\"a\":1}"),
	OK("array target becomes object", "[1,2]", "{\"a\":\"b\",\"c\":null}", "{\"a\":\"b\"}"),
	OK("nulls dropped from new objects", "{}", "{\"a\":{\"bb\":{\"ccc\":null}}}", "{\"a\":{\"bb\":{}}}"),
};

static const struct pcase kubectl_cases[] = {
	OK("kubectl scale", "{\"spec\":{\"replicas\":1,\"selector\":{\"app\":\"web\"}},\"status\":{\"replicas\":1}}",
	   "{\"spec\":{\"replicas\":3}}",
	   "{\"spec\":{\"replicas\":3,\"selector\":{\"app\":\"web\"}},\"status\":{\"replicas\":1}}"),
	OK("kubectl label", "{\"metadata\":{\"name\":\"p1\",\"labels\":{\"app\":\"web\"}}}",
	   "{\"metadata\":{\"labels\":{\"tier\":\"fe\"}}}",
	   "{\"metadata\":{\"name\":\"p1\",\"labels\":{\"app\":\"web\",\"tier\":\"fe\"}}}"),
	OK("kubectl label removal", "{\"metadata\":{\"labels\":{\"app\":\"web\",\"tier\":\"fe\"}}}",
	   "{\"metadata\":{\"labels\":{\"tier\":null}}}", "{\"metadata\":{\"labels\":{\"app\":\"web\"}}}"),
	OK("kubectl annotate on object without annotations", "{\"metadata\":{\"name\":\"x\"}}",
	   "{\"metadata\":{\"annotations\":{\"a/b\":\"c\"}}}", "{\"metadata\":{\"name\":\"x\",\"annotations\":{\"a/b\":\"c\"}}}"),
	OK("containers list replaced wholesale", "{\"spec\":{\"containers\":[{\"name\":\"a\",\"image\":\"x\"}]}}",
	   "{\"spec\":{\"containers\":[{\"name\":\"a\",\"image\":\"y\"}]}}",
	   "{\"spec\":{\"containers\":[{\"name\":\"a\",\"image\":\"y\"}]}}"),
	OK("directive keys are plain data here", "{}", "{\"$patch\":\"delete\"}", "{\"$patch\":\"delete\"}"),
	OK("empty patch", "{\"a\":1}", "{}", "{\"a\":1}"),
};

static void test_rfc7386_examples(void **state)
{
	(void)state;
	run_cases(rfc_cases, sizeof(rfc_cases) / sizeof(rfc_cases[0]), mp);
}

static void test_kubectl(void **state)
{
	(void)state;
	run_cases(kubectl_cases, sizeof(kubectl_cases) / sizeof(kubectl_cases[0]), mp);
}

/* The result shares nothing with the inputs: changing it leaves them intact. */
static void test_result_is_independent(void **state)
{
	(void)state;
	json_t *doc = J("{\"a\":{\"b\":[1]}}"), *patch = J("{\"c\":{\"d\":[2]}}"), *out = NULL;
	struct buf err = BUF_INIT;
	assert_int_equal(merge_patch_apply(doc, patch, &out, &err), 0);
	json_array_append_new(json_object_get(json_object_get(out, "a"), "b"), json_integer(9));
	json_array_append_new(json_object_get(json_object_get(out, "c"), "d"), json_integer(9));
	check_json("doc", doc, "{\"a\":{\"b\":[1]}}");
	check_json("patch", patch, "{\"c\":{\"d\":[2]}}");
	json_decref(out);
	json_decref(doc);
	json_decref(patch);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rfc7386_examples),
		cmocka_unit_test(test_kubectl),
		cmocka_unit_test(test_result_is_independent),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
