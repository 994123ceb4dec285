/* Field errors and generic metadata validation. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>
#include <jansson.h>
#include "api/validation.h"
#include "ursa/api.h"

static const struct api_resource pods = { .group = "", .version = "v1", .plural = "pods", .kind = "Pod",
					  .scope = SCOPE_NAMESPACE };
static const struct api_resource namespaces = { .plural = "namespaces", .kind = "Namespace", .scope = SCOPE_TENANT };
static const struct api_resource tenants = { .plural = "tenants", .kind = "Tenant", .scope = SCOPE_CLUSTER };
static const struct api_resource services = { .plural = "services", .kind = "Service", .scope = SCOPE_NAMESPACE };

static json_t *J(const char *s)
{
	char *d = strdup(s);
	for (char *p = d; *p; p++)
		if (*p == '\'')
			*p = '"';
	json_error_t e;
	json_t *j = json_loads(d, 0, &e);
	if (!j)
		fail_msg("bad test JSON: %s: %s", e.text, d);
	free(d);
	return j;
}

static const json_t *cause(const struct field_errors *e, size_t i)
{
	const json_t *c = json_array_get(e->causes, i);
	if (!c)
		fail_msg("no cause %zu", i);
	return c;
}

static const char *str(const json_t *c, const char *k)
{
	return json_string_value(json_object_get(c, k));
}

/* Validates meta for r; returns the number of causes and leaves them in *e. */
static size_t check(const struct api_resource *r, const char *body, struct field_errors *e)
{
	json_t *o = J(body);
	e->causes = NULL;
	validate_object_meta(r, o, e);
	json_decref(o);
	return e->causes ? json_array_size(e->causes) : 0;
}

static void test_field_error_shapes(void **state)
{
	struct field_errors e = { NULL };
	assert_false(field_errors_any(&e));
	field_error_required(&e, "spec.containers");
	field_error_invalid(&e, "metadata.name", "Foo\"", "bad %s", "name");
	field_error_invalid_int(&e, "spec.replicas", -1, "must be greater than or equal to 0");
	static const char *const sup[] = { "Always", "Never", NULL };
	field_error_not_supported(&e, "spec.restartPolicy", "x", sup);
	field_error_duplicate(&e, "spec.containers[1].name", "a");
	field_error_forbidden(&e, "spec", "no");
	field_error_too_long(&e, "metadata.annotations", 262144);
	assert_true(field_errors_any(&e));
	assert_int_equal(json_array_size(e.causes), 7);
	assert_string_equal(str(cause(&e, 0), "reason"), "FieldValueRequired");
	assert_string_equal(str(cause(&e, 0), "message"), "Required value");
	assert_string_equal(str(cause(&e, 0), "field"), "spec.containers");
	assert_string_equal(str(cause(&e, 1), "message"), "Invalid value: \"Foo\\\"\": bad name");
	assert_string_equal(str(cause(&e, 2), "message"), "Invalid value: -1: must be greater than or equal to 0");
	assert_string_equal(str(cause(&e, 3), "reason"), "FieldValueNotSupported");
	assert_string_equal(str(cause(&e, 3), "message"), "Unsupported value: \"x\": supported values: \"Always\", \"Never\"");
	assert_string_equal(str(cause(&e, 4), "message"), "Duplicate value: \"a\"");
	assert_string_equal(str(cause(&e, 5), "message"), "Forbidden: no");
	assert_string_equal(str(cause(&e, 6), "reason"), "FieldValueTooLong");
	assert_string_equal(str(cause(&e, 6), "message"), "Too long: must have at most 262144 bytes");
	field_errors_release(&e);
	assert_null(e.causes);
	field_errors_release(&e); /* twice is fine */
}

static void test_field_errors_capped(void **state)
{
	struct field_errors e = { NULL };
	char *big = malloc(10000);
	memset(big, 'x', 9999);
	big[9999] = '\0';
	for (int i = 0; i < 1000; i++)
		field_error_invalid(&e, "f", big, "too much");
	assert_int_equal(json_array_size(e.causes), FIELD_ERRORS_MAX);
	assert_true(strlen(str(cause(&e, 0), "message")) < 400);
	free(big);
	field_errors_release(&e);
}

static void test_names(void **state)
{
	struct field_errors e;
	assert_int_equal(check(&pods, "{'metadata':{'name':'web-1.example','namespace':'default'}}", &e), 0);
	assert_int_equal(check(&pods, "{'metadata':{'name':'Web'}}", &e), 1);
	assert_string_equal(str(cause(&e, 0), "field"), "metadata.name");
	assert_string_equal(str(cause(&e, 0), "reason"), "FieldValueInvalid");
	assert_non_null(strstr(str(cause(&e, 0), "message"), "Invalid value: \"Web\": a lowercase RFC 1123 subdomain"));
	field_errors_release(&e);

	assert_int_equal(check(&pods, "{'metadata':{}}", &e), 1);
	assert_string_equal(str(cause(&e, 0), "reason"), "FieldValueRequired");
	assert_string_equal(str(cause(&e, 0), "message"), "Required value: name or generateName is required");
	field_errors_release(&e);

	/* namespaces are labels: no dots */
	assert_int_equal(check(&namespaces, "{'metadata':{'name':'a.b'}}", &e), 1);
	assert_non_null(strstr(str(cause(&e, 0), "message"), "RFC 1123 label"));
	field_errors_release(&e);
	/* services are DNS-1035 labels: no leading digit */
	assert_int_equal(check(&services, "{'metadata':{'name':'1abc'}}", &e), 1);
	assert_non_null(strstr(str(cause(&e, 0), "message"), "DNS-1035"));
	field_errors_release(&e);
	/* 64 characters is one too many for a label */
	assert_int_equal(check(&namespaces, "{'metadata':{'name':'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa'}}",
			       &e), 1);
	assert_string_equal(str(cause(&e, 0), "message"),
			    "Invalid value: \"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\": "
			    "must be no more than 63 characters");
	field_errors_release(&e);

	assert_int_equal(check(&tenants, "{'metadata':{'name':'all'}}", &e), 1);
	assert_string_equal(str(cause(&e, 0), "reason"), "FieldValueForbidden");
	field_errors_release(&e);
	assert_int_equal(check(&tenants, "{'metadata':{'name':'system'}}", &e), 0);
}

static void test_scope_fields(void **state)
{
	struct field_errors e;
	assert_int_equal(check(&pods, "{'metadata':{'name':'a','namespace':5,'tenant':'Bad'}}", &e), 2);
	assert_string_equal(str(cause(&e, 0), "field"), "metadata.namespace");
	assert_string_equal(str(cause(&e, 0), "reason"), "FieldValueTypeInvalid");
	assert_string_equal(str(cause(&e, 1), "field"), "metadata.tenant");
	assert_string_equal(str(cause(&e, 1), "reason"), "FieldValueInvalid");
	field_errors_release(&e);
	assert_int_equal(check(&tenants, "{'metadata':{'name':'a','namespace':'default'}}", &e), 1);
	assert_string_equal(str(cause(&e, 0), "reason"), "FieldValueForbidden");
	field_errors_release(&e);
}

static void test_labels_and_annotations(void **state)
{
	struct field_errors e;
	assert_int_equal(check(&pods, "{'metadata':{'name':'a','labels':{'app':'web','example.com/tier':'',"
				      "'a_b.c-d':'x_Y.z-1'},'annotations':{'Example.COM/x':'anything at all'}}}", &e), 0);
	assert_int_equal(check(&pods, "{'metadata':{'name':'a','labels':{'bad key':'v','k':'bad value!','n':1}}}", &e), 3);
	assert_string_equal(str(cause(&e, 0), "field"), "metadata.labels");
	assert_non_null(strstr(str(cause(&e, 0), "message"), "Invalid value: \"bad key\": name part must consist"));
	assert_non_null(strstr(str(cause(&e, 1), "message"), "Invalid value: \"bad value!\": a valid label must"));
	assert_string_equal(str(cause(&e, 2), "reason"), "FieldValueTypeInvalid");
	field_errors_release(&e);

	assert_int_equal(check(&pods, "{'metadata':{'name':'a','annotations':{'/x':'v'}}}", &e), 1);
	assert_string_equal(str(cause(&e, 0), "field"), "metadata.annotations");
	field_errors_release(&e);

	/* total annotation size over 256 KiB */
	json_t *o = J("{'metadata':{'name':'a','annotations':{}}}");
	char *big = malloc(300 * 1024);
	memset(big, 'v', 300 * 1024 - 1);
	big[300 * 1024 - 1] = '\0';
	json_object_set_new(json_object_get(json_object_get(o, "metadata"), "annotations"), "k", json_string(big));
	e.causes = NULL;
	validate_object_meta(&pods, o, &e);
	assert_int_equal(json_array_size(e.causes), 1);
	assert_string_equal(str(cause(&e, 0), "reason"), "FieldValueTooLong");
	field_errors_release(&e);
	free(big);
	json_decref(o);
}

static void test_selector_and_ints(void **state)
{
	struct field_errors e = { NULL };
	json_t *sel = J("{'matchLabels':{'app':'web'},'matchExpressions':[{'key':'tier','operator':'In','values':[]},"
			"{'key':'x','operator':'Exists','values':['a']},{'key':'y','operator':'Near'}]}");
	validate_label_selector(sel, "spec.selector", &e);
	assert_int_equal(json_array_size(e.causes), 3);
	assert_string_equal(str(cause(&e, 0), "field"), "spec.selector.matchExpressions[0].values");
	assert_string_equal(str(cause(&e, 0), "reason"), "FieldValueRequired");
	assert_string_equal(str(cause(&e, 1), "reason"), "FieldValueForbidden");
	assert_string_equal(str(cause(&e, 2), "field"), "spec.selector.matchExpressions[2].operator");
	assert_string_equal(str(cause(&e, 2), "reason"), "FieldValueNotSupported");
	field_errors_release(&e);
	json_decref(sel);

	json_t *a = J("{'a':1}"), *b = J("{'a':2}");
	validate_immutable(a, a, "spec.selector", &e);
	assert_null(e.causes);
	validate_immutable(a, b, "spec.selector", &e);
	assert_string_equal(str(cause(&e, 0), "message"), "Invalid value: {\"a\":1}: field is immutable");
	field_errors_release(&e);
	json_decref(a);
	json_decref(b);

	assert_null(iana_svc_name_error("http"));
	assert_non_null(iana_svc_name_error("8080"));
	assert_non_null(iana_svc_name_error("a--b"));
	assert_non_null(iana_svc_name_error("toolongportname1"));
	assert_true(valid_dns1035_label("abc-1"));
	assert_false(valid_dns1035_label("1abc"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_field_error_shapes),
		cmocka_unit_test(test_field_errors_capped),
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_scope_fields),
		cmocka_unit_test(test_labels_and_annotations),
		cmocka_unit_test(test_selector_and_ints),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
