/* Field selectors: parsing, escapes, errors, the supported-field check, matching, caps. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>
#include "ursa/errors.h"
#include "ursa/selector.h"
#include "ursa/xalloc.h"

/* Looks a label up in a NULL-terminated list of label, value pairs. */
static const char *get_pairs(void *ud, const char *label)
{
	const char *const *kv = ud;
	for (; kv[0]; kv += 2)
		if (strcmp(kv[0], label) == 0)
			return kv[1];
	return "";
}

static const struct {
	const char *sel, *field, *exact; /* exact: field_selector_exact(field), NULL if none */
} exact_cases[] = {
	{ "metadata.name=foo", "metadata.name", "foo" },
	{ "metadata.name==foo", "metadata.name", "foo" },
	{ "metadata.name!=foo", "metadata.name", NULL },
	{ "metadata.name=", "metadata.name", "" },
	{ "a=1,b=2", "b", "2" },
	{ "a=x\\,y", "a", "x,y" },
	{ "a=x\\=y", "a", "x=y" },
	{ "a=x\\\\y", "a", "x\\y" },
	{ "a=x\\!y", "a", "x!y" },
	{ "a=x!y", "a", "x!y" },
	{ "a=b,,c=d", "c", "d" },
	{ ",a=b,", "a", "b" },
	{ "a=\\,", "a", "," },
	{ "spec.nodeName=node-1", "spec.nodeName", "node-1" },
	{ "a!=b,a=c", "a", "c" },
	{ " a=b", " a", "b" }, /* no trimming, as upstream */
	{ "a=b ", "a", "b " },
	{ "=b", "", "b" },
	{ "a\\=b", "a\\", "b" }, /* escapes only matter in values */
	{ "a==b=c", "a", NULL },
};

static void test_parse_exact(void **state)
{
	for (size_t i = 0; i < sizeof(exact_cases) / sizeof(exact_cases[0]); i++) {
		struct field_selector *s = NULL;
		struct buf err = BUF_INIT;
		int rc = field_selector_parse(exact_cases[i].sel, &s, &err);
		if (exact_cases[i].exact == NULL && strchr(exact_cases[i].sel, '!') == NULL) {
			/* the cases without an exact value and without '!' are the invalid ones */
			assert_int_equal(rc, E_BAD_REQUEST);
			buf_release(&err);
			continue;
		}
		if (rc)
			print_error("'%s': %s\n", exact_cases[i].sel, buf_cstr(&err));
		assert_int_equal(rc, 0);
		const char *got = field_selector_exact(s, exact_cases[i].field);
		if (exact_cases[i].exact) {
			assert_non_null(got);
			assert_string_equal(got, exact_cases[i].exact);
		} else {
			assert_null(got);
		}
		field_selector_free(s);
		buf_release(&err);
	}
}

static const struct {
	const char *sel, *msg;
} invalid[] = {
	{ "a", "invalid selector: 'a'; can't understand 'a'" },
	{ "a=b,c", "invalid selector: 'a=b,c'; can't understand 'c'" },
	{ "metadata.name", "can't understand 'metadata.name'" },
	{ "a=b=c", "invalid field selector: unescaped character in value: =" },
	{ "a==b=c", "unescaped character in value: =" },
	{ "a=b\\", "invalid field selector: invalid escape sequence: \\" },
	{ "a=b\\x", "invalid field selector: invalid escape sequence: \\x" },
	{ "a=\\n", "invalid escape sequence: \\n" },
	{ "a!=b=", "unescaped character in value: =" },
};

static void test_invalid(void **state)
{
	for (size_t i = 0; i < sizeof(invalid) / sizeof(invalid[0]); i++) {
		struct field_selector *s = (void *)0x1;
		struct buf err = BUF_INIT;
		int rc = field_selector_parse(invalid[i].sel, &s, &err);
		if (rc != E_BAD_REQUEST)
			print_error("'%s' was accepted\n", invalid[i].sel);
		assert_int_equal(rc, E_BAD_REQUEST);
		assert_ptr_equal(s, (void *)0x1);
		if (!strstr(buf_cstr(&err), invalid[i].msg))
			print_error("'%s': got '%s', want '%s'\n", invalid[i].sel, buf_cstr(&err), invalid[i].msg);
		assert_non_null(strstr(buf_cstr(&err), invalid[i].msg));
		buf_release(&err);
	}
}

static void test_empty(void **state)
{
	static const char *const empties[] = { "", ",", ",,,", NULL };
	for (size_t i = 0; i < sizeof(empties) / sizeof(empties[0]); i++) {
		struct field_selector *s = NULL;
		assert_int_equal(field_selector_parse(empties[i], &s, NULL), 0);
		assert_true(field_selector_empty(s));
		assert_true(field_selector_matches(s, get_pairs, (void *)(const char *[]){ NULL }));
		field_selector_free(s);
	}
}

static const struct api_field pod_fields[] = {
	{ "spec.nodeName", "spec.nodeName", NULL },
	{ "status.phase", "status.phase", NULL },
	{ "source", "source.component" },
};

static void test_check(void **state)
{
	static const struct {
		const char *sel;
		const char *unsupported; /* NULL when the check passes */
	} cases[] = {
		{ "metadata.name=a", NULL },
		{ "metadata.namespace!=kube-system", NULL },
		{ "spec.nodeName=n1,status.phase=Running", NULL },
		{ "source=kubelet", NULL },
		{ "spec.foo=x", "spec.foo" },
		{ "metadata.name=a,spec.foo=x", "spec.foo" },
		{ "metadata.labels=x", "metadata.labels" },
		{ "source.component=x", "source.component" }, /* the label is checked, not the path */
		{ " metadata.name=a", " metadata.name" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct field_selector *s = NULL;
		struct buf err = BUF_INIT, want = BUF_INIT;
		assert_int_equal(field_selector_parse(cases[i].sel, &s, NULL), 0);
		int rc = field_selector_check(s, pod_fields, 3, &err);
		if (!cases[i].unsupported) {
			assert_int_equal(rc, 0);
		} else {
			assert_int_equal(rc, E_BAD_REQUEST);
			buf_addf(&want, "field label not supported: %s", cases[i].unsupported);
			assert_string_equal(buf_cstr(&err), buf_cstr(&want));
		}
		field_selector_free(s);
		buf_release(&err);
		buf_release(&want);
	}
	/* without extra fields only metadata.* is allowed */
	struct field_selector *s = NULL;
	assert_int_equal(field_selector_parse("spec.nodeName=x", &s, NULL), 0);
	assert_int_equal(field_selector_check(s, NULL, 0, NULL), E_BAD_REQUEST);
	field_selector_free(s);
}

static void test_matches_getter(void **state)
{
	const char *pod[] = { "metadata.name", "p1", "spec.nodeName", "n1", "x", "a,b=c", NULL };
	static const struct {
		const char *sel;
		bool match;
	} cases[] = {
		{ "metadata.name=p1", true },
		{ "metadata.name==p1", true },
		{ "metadata.name=p2", false },
		{ "metadata.name!=p2", true },
		{ "metadata.name!=p1", false },
		{ "spec.nodeName=n1,metadata.name=p1", true },
		{ "spec.nodeName=n1,metadata.name=p2", false },
		{ "spec.nodeName=", false },
		{ "status.phase=", true }, /* absent reads as "" */
		{ "status.phase!=", false },
		{ "status.phase!=Running", true },
		{ "x=a\\,b\\=c", true },
		{ "x=a,b=c", false },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct field_selector *s = NULL;
		int rc = field_selector_parse(cases[i].sel, &s, NULL);
		if (rc) {
			/* "x=a,b=c" splits into x=a and b=c */
			assert_false(cases[i].match);
			continue;
		}
		bool got = field_selector_matches(s, get_pairs, pod);
		if (got != cases[i].match)
			print_error("'%s': got %d\n", cases[i].sel, got);
		assert_int_equal(got, cases[i].match);
		field_selector_free(s);
	}
}

static void test_matches_obj(void **state)
{
	json_t *ev = json_loads("{\"metadata\":{\"name\":\"e1\",\"namespace\":\"ns\"},"
				"\"source\":{\"component\":\"kubelet\"},\"spec\":{\"nodeName\":\"n1\"},"
				"\"count\":3,\"flag\":true}",
				0, NULL);
	static const struct api_field fields[] = {
		{ "source", "source.component" },
		{ "spec.nodeName", "spec.nodeName", NULL },
		{ "count", "count" },
		{ "flag", "flag" },
		{ "missing", "status.nope" },
	};
	static const struct {
		const char *sel;
		bool match;
	} cases[] = {
		{ "metadata.name=e1", true },
		{ "metadata.namespace=ns", true },
		{ "metadata.namespace=other", false },
		{ "source=kubelet", true },
		{ "source!=kubelet", false },
		{ "spec.nodeName=n1,metadata.name=e1", true },
		{ "count=3", true },
		{ "flag=true", true },
		{ "missing=", true },
		{ "missing!=", false },
		{ "unknown.field=", true }, /* not in the table: reads as "" */
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct field_selector *s = NULL;
		assert_int_equal(field_selector_parse(cases[i].sel, &s, NULL), 0);
		bool got = field_selector_matches_obj(s, ev, fields, ARRAY_SIZE(fields));
		if (got != cases[i].match)
			print_error("'%s': got %d\n", cases[i].sel, got);
		assert_int_equal(got, cases[i].match);
		field_selector_free(s);
	}
	json_decref(ev);
}

static void test_caps(void **state)
{
	struct buf in = BUF_INIT, err = BUF_INIT;
	struct field_selector *s = NULL;
	for (int i = 0; i < 100; i++)
		buf_addf(&in, "%sf%d=v", i ? "," : "", i);
	assert_int_equal(field_selector_parse(buf_cstr(&in), &s, &err), 0);
	field_selector_free(s);
	buf_adds(&in, ",f100=v");
	assert_int_equal(field_selector_parse(buf_cstr(&in), &s, &err), E_BAD_REQUEST);
	assert_non_null(strstr(buf_cstr(&err), "too many"));
	buf_reset(&in);
	buf_reset(&err);
	buf_adds(&in, "a=");
	while (in.len <= 16 * 1024)
		buf_adds(&in, "xxxxxxxxxx");
	assert_int_equal(field_selector_parse(buf_cstr(&in), &s, &err), E_BAD_REQUEST);
	assert_non_null(strstr(buf_cstr(&err), "too long"));
	buf_release(&in);
	buf_release(&err);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_exact),    cmocka_unit_test(test_invalid),
		cmocka_unit_test(test_empty),	       cmocka_unit_test(test_check),
		cmocka_unit_test(test_matches_getter), cmocka_unit_test(test_matches_obj),
		cmocka_unit_test(test_caps),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
