/* Label selectors: parsing (valid and invalid), canonical form, matching, JSON form, caps. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>
#include "ursa/errors.h"
#include "ursa/selector.h"

/* input -> canonical form */
static const struct {
	const char *in, *canon;
} valid[] = {
	{ "", "" },
	{ "   ", "" },
	{ "a=b", "a=b" },
	{ "a==b", "a==b" },
	{ "a!=b", "a!=b" },
	{ " a = b ", "a=b" },
	{ "a=", "a=" },
	{ "a=,b=c", "a=,b=c" },
	{ "a!=", "a!=" },
	{ "a==", "a==" },
	{ "a", "a" },
	{ "!a", "!a" },
	{ " ! a ", "!a" },
	{ "a in (b)", "a in (b)" },
	{ "a in(b,c)", "a in (b,c)" },
	{ "a in (c, b, c)", "a in (b,c)" },
	{ "a notin (x,y)", "a notin (x,y)" },
	{ "a in ()", "a in ()" },
	{ "a in (,b)", "a in (,b)" },
	{ "a in (b,)", "a in (,b)" },
	{ "a in (b,,c)", "a in (,b,c)" },
	{ "a in (,)", "a in ()" },
	{ "z=1,a=2,m", "a=2,m,z=1" },
	{ "b=1,a=2,b!=3", "a=2,b=1,b!=3" },
	{ "example.com/app=web", "example.com/app=web" },
	{ "k8s.io/x in (a.b-c_d)", "k8s.io/x in (a.b-c_d)" },
	{ "A_b.C-d=X_y.Z-9", "A_b.C-d=X_y.Z-9" },
	{ "a>5", "a>5" },
	{ "a<3", "a<3" },
	{ "a=in", "a=in" },
	{ "a in (in,notin)", "a in (in,notin)" },
	{ "in", "in" },
	{ "!in", "!in" },
	{ "notin in (a)", "notin in (a)" },
	{ "a\t=\nb\r", "a=b" },
	{ "x=y,!z,w notin (1)", "w notin (1),x=y,!z" },
};

/* input -> substring of the error */
static const struct {
	const char *in, *msg;
} invalid[] = {
	{ "=b", "found '=', expected: !, identifier, or 'end of string'" },
	{ ",a", "found ',', expected: !, identifier, or 'end of string'" },
	{ "a,", "found '', expected: identifier after ','" },
	{ "a,,b", "found ',', expected: identifier after ','" },
	{ "a b", "found 'b', expected: in, notin, =, ==, !=, gt, lt" },
	{ "a=b c", "found 'c', expected: ',' or 'end of string'" },
	{ "a=b=c", "found '=', expected: ',' or 'end of string'" },
	{ "!a=b", "found '=', expected: ',' or 'end of string'" },
	{ "!", "unable to parse requirement: found '', expected: identifier" },
	{ "!!a", "unable to parse requirement: found '!', expected: identifier" },
	{ "a=(b)", "unable to parse requirement: found '(', expected: identifier" },
	{ "a in b", "unable to parse requirement: found 'b' expected: '('" },
	{ "a in (b", "found '', expected: ',' or ')'" },
	{ "a in (b c)", "found 'c', expected: ',' or ')'" },
	{ "a in (=)", "found '=', expected: ',', ')' or identifier" },
	{ "a in (b,=)", "found '=', expected: ',', or identifier" },
	{ "a in (b,", "found '', expected: ',', or identifier" },
	{ "a notin", "found '' expected: '('" },
	{ "a in (b))", "found ')', expected: ',' or 'end of string'" },
	{ "-a=b", "unable to parse requirement: invalid label key \"-a\": name part must consist of" },
	{ "a-=b", "invalid label key \"a-\"" },
	{ "a/b/c=d", "invalid label key \"a/b/c\": a qualified name must consist of" },
	{ "/a=b", "invalid label key \"/a\": prefix part must be non-empty" },
	{ "a/=b", "invalid label key \"a/\": name part must be non-empty" },
	{ "Example.com/a=b", "prefix part a lowercase RFC 1123 subdomain" },
	{ "a=-b", "invalid label value: \"-b\": at key: \"a\": a valid label must be an empty string" },
	{ "a in (b,c_)", "invalid label value: \"c_\": at key: \"a\"" },
	{ "a=b/c", "invalid label value: \"b/c\"" },
	{ "a>b", "for 'Gt', 'Lt' operators, the value must be an integer" },
	{ "a<", "for 'Gt', 'Lt' operators, the value must be an integer" },
	{ "a>1.5", "the value must be an integer" },
	{ "a<-3", "invalid label value: \"-3\"" }, /* values are label values first */
	{ "a=b,c in (", "found '', expected: ',', ')' or identifier" },
	{ "(", "found '(', expected: !, identifier, or 'end of string'" },
	{ "a,b=c,)", "found ')', expected: identifier after ','" },
};

static void test_valid(void **state)
{
	for (size_t i = 0; i < sizeof(valid) / sizeof(valid[0]); i++) {
		struct label_selector *s = NULL;
		struct buf err = BUF_INIT, out = BUF_INIT;
		int rc = label_selector_parse(valid[i].in, &s, &err);
		if (rc)
			print_error("input %zu '%s': %s\n", i, valid[i].in, buf_cstr(&err));
		assert_int_equal(rc, 0);
		label_selector_format(s, &out);
		assert_string_equal(buf_cstr(&out), valid[i].canon);
		/* the canonical form parses back to itself */
		struct label_selector *s2 = NULL;
		struct buf out2 = BUF_INIT;
		assert_int_equal(label_selector_parse(buf_cstr(&out), &s2, &err), 0);
		label_selector_format(s2, &out2);
		assert_string_equal(buf_cstr(&out2), valid[i].canon);
		label_selector_free(s);
		label_selector_free(s2);
		buf_release(&err);
		buf_release(&out);
		buf_release(&out2);
	}
}

static void test_invalid(void **state)
{
	for (size_t i = 0; i < sizeof(invalid) / sizeof(invalid[0]); i++) {
		struct label_selector *s = (void *)0x1;
		struct buf err = BUF_INIT;
		int rc = label_selector_parse(invalid[i].in, &s, &err);
		if (rc != E_BAD_REQUEST)
			print_error("input %zu '%s' was accepted\n", i, invalid[i].in);
		assert_int_equal(rc, E_BAD_REQUEST);
		assert_ptr_equal(s, (void *)0x1); /* not written on failure */
		if (!strstr(buf_cstr(&err), invalid[i].msg))
			print_error("input '%s': got '%s', want '%s'\n", invalid[i].in, buf_cstr(&err), invalid[i].msg);
		assert_non_null(strstr(buf_cstr(&err), invalid[i].msg));
		assert_true(err.len > 0);
		buf_release(&err);
	}
}

static void test_null_and_empty(void **state)
{
	struct label_selector *s = NULL;
	assert_int_equal(label_selector_parse(NULL, &s, NULL), 0);
	assert_true(label_selector_empty(s));
	assert_true(label_selector_matches(s, NULL));
	label_selector_free(s);
	assert_int_equal(label_selector_parse("a", &s, NULL), 0);
	assert_false(label_selector_empty(s));
	label_selector_free(s);
	/* a NULL err buffer is allowed on failure too */
	assert_int_equal(label_selector_parse("a b", &s, NULL), E_BAD_REQUEST);
}

static const struct {
	const char *sel, *labels;
	bool match;
} matches[] = {
	{ "", "{}", true },
	{ "", NULL, true },
	{ "a=b", "{\"a\":\"b\"}", true },
	{ "a=b", "{\"a\":\"c\"}", false },
	{ "a=b", "{}", false },
	{ "a=b", NULL, false },
	{ "a==b", "{\"a\":\"b\",\"x\":\"y\"}", true },
	{ "a=", "{\"a\":\"\"}", true },
	{ "a=", "{}", false },
	{ "a!=b", "{\"a\":\"c\"}", true },
	{ "a!=b", "{\"a\":\"b\"}", false },
	{ "a!=b", "{}", true }, /* != matches objects lacking the key */
	{ "a!=b", NULL, true },
	{ "a in (b,c)", "{\"a\":\"c\"}", true },
	{ "a in (b,c)", "{\"a\":\"d\"}", false },
	{ "a in (b,c)", "{}", false }, /* in does not */
	{ "a notin (b,c)", "{\"a\":\"d\"}", true },
	{ "a notin (b,c)", "{\"a\":\"b\"}", false },
	{ "a notin (b,c)", "{}", true }, /* notin matches objects lacking the key */
	{ "a in ()", "{\"a\":\"\"}", true },
	{ "a in ()", "{\"a\":\"x\"}", false },
	{ "a", "{\"a\":\"\"}", true },
	{ "a", "{\"b\":\"a\"}", false },
	{ "!a", "{\"b\":\"a\"}", true },
	{ "!a", "{\"a\":\"x\"}", false },
	{ "!a", NULL, true },
	{ "a=b,c=d", "{\"a\":\"b\",\"c\":\"d\"}", true },
	{ "a=b,c=d", "{\"a\":\"b\",\"c\":\"e\"}", false },
	{ "a=b,a!=b", "{\"a\":\"b\"}", false },
	{ "a>5", "{\"a\":\"6\"}", true },
	{ "a>5", "{\"a\":\"5\"}", false },
	{ "a>5", "{\"a\":\"x\"}", false },
	{ "a>5", "{}", false },
	{ "a<5", "{\"a\":\"-10\"}", true },
	{ "a<5", "{\"a\":\"5\"}", false },
	{ "example.com/tier in (web, db)", "{\"example.com/tier\":\"db\"}", true },
	{ "A=b", "{\"a\":\"b\"}", false }, /* keys are case-sensitive */
	{ "a=b", "{\"a\":1}", false },     /* non-string values count as absent */
	{ "a!=b", "{\"a\":1}", true },
};

static void test_matches(void **state)
{
	for (size_t i = 0; i < sizeof(matches) / sizeof(matches[0]); i++) {
		struct label_selector *s = NULL;
		json_t *labels = matches[i].labels ? json_loads(matches[i].labels, 0, NULL) : NULL;
		assert_int_equal(label_selector_parse(matches[i].sel, &s, NULL), 0);
		bool got = label_selector_matches(s, labels);
		if (got != matches[i].match)
			print_error("'%s' on %s: got %d\n", matches[i].sel, matches[i].labels ? matches[i].labels : "NULL",
				    got);
		assert_int_equal(got, matches[i].match);
		json_decref(labels);
		label_selector_free(s);
	}
}

static void test_exact(void **state)
{
	struct label_selector *s = NULL;
	assert_int_equal(label_selector_parse("a=1,b==2,c!=3,d in (4),e in (5,6),f,!g", &s, NULL), 0);
	assert_string_equal(label_selector_exact(s, "a"), "1");
	assert_string_equal(label_selector_exact(s, "b"), "2");
	assert_null(label_selector_exact(s, "c"));
	assert_string_equal(label_selector_exact(s, "d"), "4");
	assert_null(label_selector_exact(s, "e"));
	assert_null(label_selector_exact(s, "f"));
	assert_null(label_selector_exact(s, "g"));
	assert_null(label_selector_exact(s, "zz"));
	label_selector_free(s);
	assert_int_equal(label_selector_parse("a=", &s, NULL), 0);
	assert_string_equal(label_selector_exact(s, "a"), "");
	label_selector_free(s);
}

static int from_json(const char *text, struct label_selector **s, struct buf *err)
{
	json_t *j = json_loads(text, JSON_DECODE_ANY, NULL);
	assert_non_null(j);
	int rc = label_selector_from_json(j, s, err);
	json_decref(j);
	return rc;
}

static void test_json(void **state)
{
	static const struct {
		const char *json, *canon;
	} ok[] = {
		{ "{}", "" },
		{ "{\"matchLabels\":{\"app\":\"web\",\"tier\":\"\"}}", "app=web,tier=" },
		{ "{\"matchLabels\":null,\"matchExpressions\":null}", "" },
		{ "{\"matchExpressions\":[{\"key\":\"a\",\"operator\":\"In\",\"values\":[\"y\",\"x\",\"y\"]}]}",
		  "a in (x,y)" },
		{ "{\"matchExpressions\":[{\"key\":\"a\",\"operator\":\"NotIn\",\"values\":[\"\"]}]}", "a notin ()" },
		{ "{\"matchExpressions\":[{\"key\":\"b\",\"operator\":\"Exists\"},"
		  "{\"key\":\"a\",\"operator\":\"DoesNotExist\",\"values\":[]}]}",
		  "!a,b" },
		{ "{\"matchLabels\":{\"z\":\"1\"},\"matchExpressions\":[{\"key\":\"z\",\"operator\":\"Exists\"}]}",
		  "z=1,z" },
	};
	static const struct {
		const char *json, *msg;
	} bad[] = {
		{ "[]", "must be an object" },
		{ "{\"matchLabels\":[]}", "matchLabels" },
		{ "{\"matchLabels\":{\"a\":1}}", "matchLabels[a]" },
		{ "{\"matchLabels\":{\"-a\":\"b\"}}", "invalid label key \"-a\"" },
		{ "{\"matchLabels\":{\"a\":\"b c\"}}", "invalid label value: \"b c\"" },
		{ "{\"matchExpressions\":{}}", "matchExpressions" },
		{ "{\"matchExpressions\":[1]}", "matchExpressions[0]" },
		{ "{\"matchExpressions\":[{\"operator\":\"Exists\"}]}", "matchExpressions[0].key" },
		{ "{\"matchExpressions\":[{\"key\":\"a\",\"operator\":\"Gt\",\"values\":[\"1\"]}]}",
		  "\"Gt\" is not a valid pod selector operator" },
		{ "{\"matchExpressions\":[{\"key\":\"a\",\"operator\":\"in\",\"values\":[\"1\"]}]}",
		  "\"in\" is not a valid" },
		{ "{\"matchExpressions\":[{\"key\":\"a\",\"operator\":\"In\"}]}", "values set can't be empty" },
		{ "{\"matchExpressions\":[{\"key\":\"a\",\"operator\":\"In\",\"values\":[]}]}", "values set can't be empty" },
		{ "{\"matchExpressions\":[{\"key\":\"a\",\"operator\":\"Exists\",\"values\":[\"x\"]}]}",
		  "values set must be empty for exists and does not exist" },
		{ "{\"matchExpressions\":[{\"key\":\"a\",\"operator\":\"In\",\"values\":[1]}]}", "values[0]" },
		{ "{\"matchExpressions\":[{\"key\":\"a\",\"operator\":\"In\",\"values\":\"x\"}]}", "values" },
	};
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		struct label_selector *s = NULL;
		struct buf err = BUF_INIT, out = BUF_INIT;
		int rc = from_json(ok[i].json, &s, &err);
		if (rc)
			print_error("%s: %s\n", ok[i].json, buf_cstr(&err));
		assert_int_equal(rc, 0);
		label_selector_format(s, &out);
		assert_string_equal(buf_cstr(&out), ok[i].canon);
		label_selector_free(s);
		buf_release(&err);
		buf_release(&out);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct label_selector *s = NULL;
		struct buf err = BUF_INIT;
		assert_int_equal(from_json(bad[i].json, &s, &err), E_INVALID);
		if (!strstr(buf_cstr(&err), bad[i].msg))
			print_error("%s: got '%s', want '%s'\n", bad[i].json, buf_cstr(&err), bad[i].msg);
		assert_non_null(strstr(buf_cstr(&err), bad[i].msg));
		assert_null(s);
		buf_release(&err);
	}
}

static void test_json_semantics(void **state)
{
	struct label_selector *s = NULL;
	json_t *labels = json_pack("{s:s}", "app", "web");
	/* a null selector matches nothing; an empty one matches everything */
	assert_int_equal(label_selector_from_json(NULL, &s, NULL), 0);
	assert_false(label_selector_matches(s, labels));
	assert_false(label_selector_empty(s));
	label_selector_free(s);
	assert_int_equal(from_json("{}", &s, NULL), 0);
	assert_true(label_selector_matches(s, labels));
	assert_true(label_selector_empty(s));
	label_selector_free(s);
	assert_int_equal(from_json("{\"matchLabels\":{\"app\":\"web\"},\"matchExpressions\":"
				   "[{\"key\":\"tier\",\"operator\":\"NotIn\",\"values\":[\"db\"]}]}",
				   &s, NULL),
			 0);
	assert_true(label_selector_matches(s, labels));
	assert_string_equal(label_selector_exact(s, "app"), "web");
	json_object_set_new(labels, "tier", json_string("db"));
	assert_false(label_selector_matches(s, labels));
	label_selector_free(s);
	json_decref(labels);
}

static void test_caps(void **state)
{
	struct buf in = BUF_INIT, err = BUF_INIT;
	struct label_selector *s = NULL;
	for (int i = 0; i < 100; i++)
		buf_addf(&in, "%sk%d=v", i ? "," : "", i);
	assert_int_equal(label_selector_parse(buf_cstr(&in), &s, &err), 0);
	label_selector_free(s);
	buf_adds(&in, ",k100=v");
	assert_int_equal(label_selector_parse(buf_cstr(&in), &s, &err), E_BAD_REQUEST);
	assert_non_null(strstr(buf_cstr(&err), "too many requirements"));

	buf_reset(&in);
	buf_reset(&err);
	buf_adds(&in, "a in (");
	for (int i = 0; i < 64; i++)
		buf_addf(&in, "%sv%d", i ? "," : "", i);
	buf_adds(&in, ")");
	assert_int_equal(label_selector_parse(buf_cstr(&in), &s, &err), 0);
	label_selector_free(s);
	in.len--;
	buf_adds(&in, ",v64)");
	assert_int_equal(label_selector_parse(buf_cstr(&in), &s, &err), E_BAD_REQUEST);
	assert_non_null(strstr(buf_cstr(&err), "too many values"));

	buf_reset(&in);
	buf_reset(&err);
	while (in.len <= 16 * 1024)
		buf_adds(&in, "          ");
	buf_adds(&in, "a");
	assert_int_equal(label_selector_parse(buf_cstr(&in), &s, &err), E_BAD_REQUEST);
	assert_non_null(strstr(buf_cstr(&err), "too long"));

	buf_reset(&err);
	json_t *big = json_object();
	for (int i = 0; i <= 100; i++) {
		char key[16];
		snprintf(key, sizeof(key), "k%d", i);
		json_object_set_new(big, key, json_string("v"));
	}
	json_t *sel = json_pack("{s:o}", "matchLabels", big);
	assert_int_equal(label_selector_from_json(sel, &s, &err), E_INVALID);
	assert_non_null(strstr(buf_cstr(&err), "too many requirements"));
	json_decref(sel);
	buf_release(&in);
	buf_release(&err);
}

static void test_long_key_and_value(void **state)
{
	struct buf in = BUF_INIT;
	struct label_selector *s = NULL;
	for (int i = 0; i < 63; i++)
		buf_addch(&in, 'k');
	buf_adds(&in, "=");
	for (int i = 0; i < 63; i++)
		buf_addch(&in, 'v');
	assert_int_equal(label_selector_parse(buf_cstr(&in), &s, NULL), 0);
	label_selector_free(s);
	buf_addch(&in, 'v');
	struct buf err = BUF_INIT;
	assert_int_equal(label_selector_parse(buf_cstr(&in), &s, &err), E_BAD_REQUEST);
	assert_non_null(strstr(buf_cstr(&err), "must be no more than 63 characters"));
	buf_release(&in);
	buf_release(&err);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_valid),	    cmocka_unit_test(test_invalid),
		cmocka_unit_test(test_null_and_empty), cmocka_unit_test(test_matches),
		cmocka_unit_test(test_exact),	    cmocka_unit_test(test_json),
		cmocka_unit_test(test_json_semantics), cmocka_unit_test(test_caps),
		cmocka_unit_test(test_long_key_and_value),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
