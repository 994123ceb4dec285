/* RFC 6902 JSON Patch: the RFC's appendix A examples, Kubernetes-style paths and the error
 * codes the API server maps to 400 and 422. */
#include "patch_test.h"

static int jp(const json_t *doc, const json_t *patch, const char *kind, json_t **ret, struct buf *err)
{
	(void)kind;
	return json_patch_apply(doc, patch, ret, err);
}

#define OK(n, d, p, w) { n, NULL, d, p, w, 0 }
#define ERR(n, d, p, rc) { n, NULL, d, p, NULL, rc }

static const struct pcase rfc_cases[] = {
	OK("A.1 add member", "{\"foo\":\"bar\"}", "[{\"op\":\"add\",\"path\":\"/baz\",\"value\":\"qux\"}]",
	   "{\"baz\":\"qux\",\"foo\":\"bar\"}"),
	OK("A.2 add element", "{\"foo\":[\"bar\",\"baz\"]}", "[{\"op\":\"add\",\"path\":\"/foo/1\",\"value\":\"qux\"}]",
	   "{\"foo\":[\"bar\",\"qux\",\"baz\"]}"),
	OK("A.3 remove member", "{\"baz\":\"qux\",\"foo\":\"bar\"}", "[{\"op\":\"remove\",\"path\":\"/baz\"}]",
	   "{\"foo\":\"bar\"}"),
	OK("A.4 remove element", "{\"foo\":[\"bar\",\"qux\",\"baz\"]}", "[{\"op\":\"remove\",\"path\":\"/foo/1\"}]",
	   "{\"foo\":[\"bar\",\"baz\"]}"),
	OK("A.5 replace", "{\"baz\":\"qux\",\"foo\":\"bar\"}", "[{\"op\":\"replace\",\"path\":\"/baz\",\"value\":\"boo\"}]",
	   "{\"baz\":\"boo\",\"foo\":\"bar\"}"),
	OK("A.6 move value", "{\"foo\":{\"bar\":\"baz\",\"waldo\":\"fred\"},\"qux\":{\"corge\":\"grault\"}}",
	   "[{\"op\":\"move\",\"from\":\"/foo/waldo\",\"path\":\"/qux/thud\"}]",
	   "{\"foo\":{\"bar\":\"baz\"},\"qux\":{\"corge\":\"grault\",\"thud\":\"fred\"}}"),
	OK("A.7 move element", "{\"foo\":[\"all\",\"grass\",\"cows\",\"eat\"]}",
	   "[{\"op\":\"move\",\"from\":\"/foo/1\",\"path\":\"/foo/3\"}]", "{\"foo\":[\"all\",\"cows\",\"eat\",\"grass\"]}"),
	OK("A.8 test ok", "{\"baz\":\"qux\",\"foo\":[\"a\",2,\"c\"]}",
	   "[{\"op\":\"test\",\"path\":\"/baz\",\"value\":\"qux\"},{\"op\":\"test\",\"path\":\"/foo/1\",\"value\":2}]",
	   "{\"baz\":\"qux\",\"foo\":[\"a\",2,\"c\"]}"),
	ERR("A.9 test fails", "{\"baz\":\"qux\"}", "[{\"op\":\"test\",\"path\":\"/baz\",\"value\":\"bar\"}]", E_INVALID),
	OK("A.10 add nested", "{\"foo\":\"bar\"}", "[{\"op\":\"add\",\"path\":\"/child\",\"value\":{\"grandchild\":{}}}]",
	   "{\"foo\":\"bar\",\"child\":{\"grandchild\":{}}}"),
	OK("A.11 extra members ignored", "{\"foo\":\"bar\"}",
	   "[{\"op\":\"add\",\"path\":\"/baz\",\"value\":\"qux\",\"xyz\":123}]", "{\"foo\":\"bar\",\"baz\":\"qux\"}"),
	ERR("A.12 add to missing parent", "{\"foo\":\"bar\"}", "[{\"op\":\"add\",\"path\":\"/baz/bat\",\"value\":\"qux\"}]",
	    E_INVALID),
	OK("A.14 escape order", "{\"/\":9,\"~1\":10}", "[{\"op\":\"test\",\"path\":\"/~01\",\"value\":10}]",
	   "{\"/\":9,\"~1\":10}"),
	ERR("A.15 string vs number", "{\"/\":9,\"~1\":10}", "[{\"op\":\"test\",\"path\":\"/~01\",\"value\":\"10\"}]",
	    E_INVALID),
	OK("A.16 append array value", "{\"foo\":[\"bar\"]}", "[{\"op\":\"add\",\"path\":\"/foo/-\",\"value\":[\"abc\",\"def\"]}]",
	   "{\"foo\":[\"bar\",[\"abc\",\"def\"]]}"),
};

static const struct pcase more_cases[] = {
	OK("~1 in a label key", "{\"metadata\":{\"labels\":{}}}",
	   "[{\"op\":\"add\",\"path\":\"/metadata/labels/app.kubernetes.io~1name\",\"value\":\"web\"}]",
	   "{\"metadata\":{\"labels\":{\"app.kubernetes.io/name\":\"web\"}}}"),
	OK("~0 in a key", "{}", "[{\"op\":\"add\",\"path\":\"/a~0b\",\"value\":1}]", "{\"a~b\":1}"),
	OK("empty key", "{}", "[{\"op\":\"add\",\"path\":\"/\",\"value\":1}]", "{\"\":1}"),
	OK("replace replicas", "{\"spec\":{\"replicas\":1}}", "[{\"op\":\"replace\",\"path\":\"/spec/replicas\",\"value\":5}]",
	   "{\"spec\":{\"replicas\":5}}"),
	OK("add at end index", "{\"a\":[1,2]}", "[{\"op\":\"add\",\"path\":\"/a/2\",\"value\":3}]", "{\"a\":[1,2,3]}"),
	OK("add at 0", "{\"a\":[1,2]}", "[{\"op\":\"add\",\"path\":\"/a/0\",\"value\":0}]", "{\"a\":[0,1,2]}"),
	OK("add replaces member", "{\"a\":1}", "[{\"op\":\"add\",\"path\":\"/a\",\"value\":2}]", "{\"a\":2}"),
	OK("replace root", "{\"a\":1}", "[{\"op\":\"replace\",\"path\":\"\",\"value\":[1]}]", "[1]"),
	OK("add root", "{\"a\":1}", "[{\"op\":\"add\",\"path\":\"\",\"value\":{\"b\":2}}]", "{\"b\":2}"),
	OK("copy", "{\"a\":{\"x\":[1]}}", "[{\"op\":\"copy\",\"from\":\"/a\",\"path\":\"/b\"},{\"op\":\"add\",\"path\":\"/b/x/-\",\"value\":2}]",
	   "{\"a\":{\"x\":[1]},\"b\":{\"x\":[1,2]}}"),
	OK("move to self", "{\"a\":1}", "[{\"op\":\"move\",\"from\":\"/a\",\"path\":\"/a\"}]", "{\"a\":1}"),
	OK("test 1 == 1.0", "{\"a\":1}", "[{\"op\":\"test\",\"path\":\"/a\",\"value\":1.0}]", "{\"a\":1}"),
	OK("test objects ignore order", "{\"a\":{\"x\":1,\"y\":[true,null]}}",
	   "[{\"op\":\"test\",\"path\":\"/a\",\"value\":{\"y\":[true,null],\"x\":1}}]", "{\"a\":{\"x\":1,\"y\":[true,null]}}"),
	OK("test whole document", "{\"a\":1}", "[{\"op\":\"test\",\"path\":\"\",\"value\":{\"a\":1}}]", "{\"a\":1}"),
	OK("empty patch", "{\"a\":1}", "[]", "{\"a\":1}"),
	OK("null value", "{\"a\":1}", "[{\"op\":\"replace\",\"path\":\"/a\",\"value\":null}]", "{\"a\":null}"),
	OK("ops apply in order", "{}", "[{\"op\":\"add\",\"path\":\"/a\",\"value\":[]},{\"op\":\"add\",\"path\":\"/a/-\",\"value\":1},"
	   "{\"op\":\"add\",\"path\":\"/a/0\",\"value\":0},{\"op\":\"remove\",\"path\":\"/a/1\"}]", "{\"a\":[0]}"),
	ERR("test fails after changes", "{\"a\":1}", "[{\"op\":\"replace\",\"path\":\"/a\",\"value\":2},"
	    "{\"op\":\"test\",\"path\":\"/a\",\"value\":1}]", E_INVALID),
	ERR("test type mismatch", "{\"a\":[1]}", "[{\"op\":\"test\",\"path\":\"/a\",\"value\":{\"0\":1}}]", E_INVALID),
	ERR("test missing path", "{}", "[{\"op\":\"test\",\"path\":\"/a\",\"value\":null}]", E_INVALID),
	ERR("remove missing", "{\"a\":1}", "[{\"op\":\"remove\",\"path\":\"/b\"}]", E_INVALID),
	ERR("remove root", "{\"a\":1}", "[{\"op\":\"remove\",\"path\":\"\"}]", E_INVALID),
	ERR("remove dash", "{\"a\":[1]}", "[{\"op\":\"remove\",\"path\":\"/a/-\"}]", E_INVALID),
	ERR("replace missing", "{\"a\":1}", "[{\"op\":\"replace\",\"path\":\"/b\",\"value\":1}]", E_INVALID),
	ERR("index past end", "{\"a\":[1]}", "[{\"op\":\"add\",\"path\":\"/a/2\",\"value\":1}]", E_INVALID),
	ERR("replace index past end", "{\"a\":[1]}", "[{\"op\":\"replace\",\"path\":\"/a/1\",\"value\":1}]", E_INVALID),
	ERR("leading zero index", "{\"a\":[1,2]}", "[{\"op\":\"replace\",\"path\":\"/a/01\",\"value\":1}]", E_INVALID),
	ERR("negative index", "{\"a\":[1,2]}", "[{\"op\":\"remove\",\"path\":\"/a/-1\"}]", E_INVALID),
	ERR("huge index", "{\"a\":[1,2]}", "[{\"op\":\"remove\",\"path\":\"/a/99999999999999999999\"}]", E_INVALID),
	ERR("index into object via scalar", "{\"a\":1}", "[{\"op\":\"add\",\"path\":\"/a/b\",\"value\":1}]", E_INVALID),
	ERR("move into own child", "{\"a\":{\"b\":{}}}", "[{\"op\":\"move\",\"from\":\"/a\",\"path\":\"/a/b/c\"}]", E_INVALID),
	ERR("move from missing", "{}", "[{\"op\":\"move\",\"from\":\"/x\",\"path\":\"/y\"}]", E_INVALID),
	ERR("copy from missing", "{}", "[{\"op\":\"copy\",\"from\":\"/x\",\"path\":\"/y\"}]", E_INVALID),
	ERR("not an array", "{\"a\":1}", "{\"op\":\"add\",\"path\":\"/a\",\"value\":1}", E_BAD_REQUEST),
	ERR("op not an object", "{}", "[1]", E_BAD_REQUEST),
	ERR("unknown op", "{}", "[{\"op\":\"frob\",\"path\":\"/a\"}]", E_BAD_REQUEST),
	ERR("missing op", "{}", "[{\"path\":\"/a\",\"value\":1}]", E_BAD_REQUEST),
	ERR("missing path", "{}", "[{\"op\":\"add\",\"value\":1}]", E_BAD_REQUEST),
	ERR("path not a string", "{}", "[{\"op\":\"add\",\"path\":1,\"value\":1}]", E_BAD_REQUEST),
	ERR("missing value", "{}", "[{\"op\":\"add\",\"path\":\"/a\"}]", E_BAD_REQUEST),
	ERR("missing from", "{\"a\":1}", "[{\"op\":\"move\",\"path\":\"/b\"}]", E_BAD_REQUEST),
	ERR("bad escape", "{}", "[{\"op\":\"add\",\"path\":\"/a~2\",\"value\":1}]", E_BAD_REQUEST),
	ERR("trailing tilde", "{}", "[{\"op\":\"add\",\"path\":\"/a~\",\"value\":1}]", E_BAD_REQUEST),
	ERR("no leading slash", "{}", "[{\"op\":\"add\",\"path\":\"a\",\"value\":1}]", E_BAD_REQUEST),
	ERR("bad later op fails whole patch", "{\"a\":1}", "[{\"op\":\"remove\",\"path\":\"/a\"},{\"op\":\"nope\",\"path\":\"/\"}]",
	    E_BAD_REQUEST),
};

static void test_rfc6902_examples(void **state)
{
	(void)state;
	run_cases(rfc_cases, sizeof(rfc_cases) / sizeof(rfc_cases[0]), jp);
}

static void test_more(void **state)
{
	(void)state;
	run_cases(more_cases, sizeof(more_cases) / sizeof(more_cases[0]), jp);
}

static void test_op_cap(void **state)
{
	(void)state;
	json_t *doc = json_object(), *ok = json_array(), *big = json_array(), *out = NULL;
	struct buf err = BUF_INIT;
	for (int i = 0; i < 10001; i++) {
		json_t *op = json_pack("{s:s,s:s,s:i}", "op", "add", "path", "/n", "value", i);
		if (i < 10000)
			json_array_append(ok, op);
		json_array_append_new(big, op);
	}
	assert_int_equal(json_patch_apply(doc, ok, &out, &err), 0);
	assert_int_equal(json_integer_value(json_object_get(out, "n")), 9999);
	json_decref(out);
	out = NULL;
	assert_int_equal(json_patch_apply(doc, big, &out, &err), E_BAD_REQUEST);
	assert_null(out);
	assert_non_null(strstr(buf_cstr(&err), "10000"));
	buf_release(&err);
	json_decref(doc);
	json_decref(ok);
	json_decref(big);
}

/* Each copy doubles the document: the node budget must stop it long before memory runs out. */
static void test_copy_bomb(void **state)
{
	(void)state;
	json_t *doc = J("{\"a\":[1,2,3,4,5,6,7,8]}"), *patch = json_array(), *out = NULL;
	struct buf err = BUF_INIT;
	for (int i = 0; i < 60; i++)
		json_array_append_new(patch, J("{\"op\":\"copy\",\"from\":\"/a\",\"path\":\"/a/-\"}"));
	assert_int_equal(json_patch_apply(doc, patch, &out, &err), E_INVALID);
	assert_null(out);
	buf_release(&err);
	json_decref(doc);
	json_decref(patch);
}

static void test_depth_cap(void **state)
{
	(void)state;
	/* copying a value into itself repeatedly builds depth one level per op */
	json_t *doc = J("{\"a\":{}}"), *patch = json_array(), *out = NULL;
	struct buf err = BUF_INIT, path = BUF_INIT;
	buf_adds(&path, "/a");
	for (int i = 0; i < 600; i++) {
		buf_adds(&path, "/a");
		json_array_append_new(patch, json_pack("{s:s,s:s,s:s}", "op", "copy", "from", "/a", "path", path.ptr));
	}
	assert_int_equal(json_patch_apply(doc, patch, &out, &err), E_INVALID);
	assert_non_null(strstr(buf_cstr(&err), "deep"));
	buf_release(&err);
	buf_release(&path);
	json_decref(doc);
	json_decref(patch);
}

/* The error text names the operation and quotes the path. */
static void test_message(void **state)
{
	(void)state;
	json_t *doc = J("{}"), *patch = J("[{\"op\":\"test\",\"path\":\"/a\",\"value\":1},{\"op\":\"remove\",\"path\":\"/x\\\"y\"}]");
	json_t *out = NULL;
	struct buf err = BUF_INIT;
	json_object_set_new(doc, "a", json_integer(1));
	assert_int_equal(json_patch_apply(doc, patch, &out, &err), E_INVALID);
	assert_string_equal(buf_cstr(&err), "JSON patch operation 1 (remove): path does not exist: \"/x\\\"y\"");
	buf_release(&err);
	json_decref(doc);
	json_decref(patch);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rfc6902_examples),
		cmocka_unit_test(test_more),
		cmocka_unit_test(test_op_cap),
		cmocka_unit_test(test_copy_bomb),
		cmocka_unit_test(test_depth_cap),
		cmocka_unit_test(test_message),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
