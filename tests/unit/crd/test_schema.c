/* crd_schema_compile: structural rules, limits, patterns and defaults checked at compile. */
#include "schema_test.h"
#include <time.h>
#include "ursa/buf.h"
#include "ursa/xalloc.h"

static const char *crontab = "{'type':'object','properties':{'spec':{'type':'object','properties':{"
			     "'cronSpec':{'type':'string','pattern':'^(\\\\d+|\\\\*)(/\\\\d+)?(\\\\s+(\\\\d+|\\\\*)(/\\\\d+)?){4}$'},"
			     "'image':{'type':'string'},'replicas':{'type':'integer','minimum':1,'maximum':10}}}}}";

static void test_crontab_compiles(void **state)
{
	json_t *j = SJ(crontab);
	struct field_errors e = { NULL };
	struct crd_schema *s = NULL;
	assert_int_equal(crd_schema_compile(j, BASE, &s, &e), 0);
	assert_null(e.causes);
	assert_true(json_equal((json_t *)crd_schema_json(s), j));
	assert_ptr_not_equal(crd_schema_json(s), j); /* its own copy */
	json_decref(j);
	crd_schema_free(s);
	crd_schema_free(NULL);
	assert_null(crd_schema_json(NULL));
}

static void expect(const char *schema, const char *field, const char *reason, const char *message)
{
	json_t *c = compile_err(schema);
	assert_cause(c, field, reason, message);
	json_decref(c);
}

static void test_root(void **state)
{
	expect("{'type':'string'}", BASE ".type", "FieldValueInvalid", "Invalid value: \"string\": must be object at the root");
	expect("{'properties':{}}", BASE ".type", "FieldValueRequired", NULL);
	expect("{'type':'object','nullable':true}", BASE ".nullable", "FieldValueForbidden", NULL);
	expect("[1]", BASE, "FieldValueRequired", NULL);
	expect("{'type':'object','properties':{'kind':{'type':'integer'}}}", BASE ".properties[kind].type",
	       "FieldValueInvalid", NULL);
}

static void test_types(void **state)
{
	expect("{'type':'object','properties':{'spec':{'properties':{}}}}", BASE ".properties[spec].type",
	       "FieldValueRequired", "Required value: must not be empty for specified object fields");
	expect("{'type':'object','properties':{'a':{'type':'frob'}}}", BASE ".properties[a].type", "FieldValueNotSupported",
	       "Unsupported value: \"frob\": supported values: \"object\", \"array\", \"string\", \"integer\", \"number\", "
	       "\"boolean\"");
	expect("{'type':'object','properties':{'a':{'type':'array'}}}", BASE ".properties[a].items", "FieldValueRequired",
	       NULL);
	expect("{'type':'object','properties':{'a':{'type':'array','items':[{'type':'string'}]}}}",
	       BASE ".properties[a].items", "FieldValueForbidden", NULL);
	expect("{'type':'object','properties':{'a':{'type':'string','items':{'type':'string'}}}}",
	       BASE ".properties[a].items", "FieldValueForbidden", NULL);
	expect("{'type':'object','properties':{'a':{'type':'object','properties':{},'additionalProperties':{'type':'string'}}}}",
	       BASE ".properties[a].additionalProperties", "FieldValueForbidden",
	       "Forbidden: additionalProperties and properties are mutual exclusive");
	expect("{'type':'object','properties':{'a':{'type':'object','additionalProperties':{}}}}",
	       BASE ".properties[a].additionalProperties.type", "FieldValueRequired", NULL);
	expect("{'type':'object','properties':{'a':{'type':'string','maxLength':'x'}}}", BASE ".properties[a].maxLength",
	       "FieldValueInvalid", NULL);
	expect("{'type':'object','properties':{'a':{'type':'integer','multipleOf':0}}}", BASE ".properties[a].multipleOf",
	       "FieldValueInvalid", NULL);
	expect("{'type':'object','properties':{'a':{'type':'object','x-kubernetes-preserve-unknown-fields':false}}}",
	       BASE ".properties[a].x-kubernetes-preserve-unknown-fields", "FieldValueInvalid", NULL);
	expect("{'type':'object','properties':{'a':{'type':'string','x-kubernetes-int-or-string':true}}}",
	       BASE ".properties[a].type", "FieldValueForbidden", NULL);
	/* Without a type: int-or-string, or preserve-unknown-fields (with or without properties). */
	struct crd_schema *s = compile_ok("{'type':'object','properties':{'a':{'x-kubernetes-int-or-string':true},"
					  "'b':{'x-kubernetes-preserve-unknown-fields':true},"
					  "'c':{'x-kubernetes-preserve-unknown-fields':true,'properties':{'x':{'type':'string'}}},"
					  "'d':{'type':'object','additionalProperties':true},"
					  "'e':{'type':'object','additionalProperties':false},"
					  "'f':{'type':'object','additionalProperties':{'type':'integer'}}}}");
	crd_schema_free(s);
}

static void test_forbidden_keywords(void **state)
{
	expect("{'type':'object','x-kubernetes-validations':[{'rule':'self.x > 0'}]}", BASE ".x-kubernetes-validations",
	       "FieldValueForbidden",
	       "Forbidden: CEL validation rules (x-kubernetes-validations) are not supported by this server");
	expect("{'type':'object','properties':{'a':{'type':'object','properties':{'b':{'type':'string',"
	       "'x-kubernetes-validations':[]}}}}}",
	       BASE ".properties[a].properties[b].x-kubernetes-validations", "FieldValueForbidden", NULL);
	expect("{'type':'object','properties':{'a':{'$ref':'#/definitions/x'}}}", BASE ".properties[a].$ref",
	       "FieldValueForbidden", "Forbidden: $ref is not supported");
	expect("{'type':'object','patternProperties':{}}", BASE ".patternProperties", "FieldValueForbidden", NULL);
}

static void test_metadata(void **state)
{
	struct crd_schema *s = compile_ok("{'type':'object','properties':{'metadata':{'type':'object','properties':{"
					  "'name':{'type':'string','maxLength':10,'pattern':'^a'},'generateName':{'type':'string'}}}}}");
	crd_schema_free(s);
	expect("{'type':'object','properties':{'metadata':{'type':'object','properties':{'labels':{'type':'object'}}}}}",
	       BASE ".properties[metadata].properties[labels]", "FieldValueForbidden",
	       "Forbidden: must not specify anything other than name and generateName");
	expect("{'type':'object','properties':{'metadata':{'type':'object','required':['name']}}}",
	       BASE ".properties[metadata].required", "FieldValueForbidden", NULL);
	expect("{'type':'object','properties':{'metadata':{'type':'object','properties':{'name':{'type':'integer'}}}}}",
	       BASE ".properties[metadata].properties[name].type", "FieldValueInvalid", NULL);
	/* Below the root, metadata is an ordinary property. */
	s = compile_ok("{'type':'object','properties':{'spec':{'type':'object','properties':{'metadata':{'type':'object',"
		       "'properties':{'labels':{'type':'object','additionalProperties':{'type':'string'}}}}}}}}");
	crd_schema_free(s);
}

static void test_junctors(void **state)
{
	/* kubebuilder's int-or-string */
	struct crd_schema *s = compile_ok("{'type':'object','properties':{'a':{'x-kubernetes-int-or-string':true,"
					  "'anyOf':[{'type':'integer'},{'type':'string'}],'pattern':'^[0-9]+%?$'},"
					  "'b':{'type':'object','properties':{'x':{'type':'string'},'y':{'type':'string'}},"
					  "'oneOf':[{'required':['x']},{'required':['y']}],'not':{'minProperties':3},"
					  "'allOf':[{'anyOf':[{'maxProperties':1},{'minProperties':2}]}]}}}");
	crd_schema_free(s);
	expect("{'type':'object','properties':{'a':{'type':'string','anyOf':[{'type':'string'}]}}}",
	       BASE ".properties[a].anyOf[0].type", "FieldValueForbidden", "Forbidden: must be empty to be structural");
	expect("{'type':'object','properties':{'a':{'type':'object','oneOf':[{'properties':{'x':{'type':'string'}}}]}}}",
	       BASE ".properties[a].oneOf[0].properties", "FieldValueForbidden", NULL);
	expect("{'type':'object','properties':{'a':{'type':'string','not':{'default':'x'}}}}",
	       BASE ".properties[a].not.default", "FieldValueForbidden", NULL);
	expect("{'type':'object','properties':{'a':{'type':'array','items':{'type':'string'},'allOf':[{'items':{}}]}}}",
	       BASE ".properties[a].allOf[0].items", "FieldValueForbidden", NULL);
	expect("{'type':'object','properties':{'a':{'type':'string','anyOf':{}}}}", BASE ".properties[a].anyOf",
	       "FieldValueInvalid", NULL);
}

static void test_embedded(void **state)
{
	struct crd_schema *s = compile_ok("{'type':'object','properties':{'t':{'type':'object',"
					  "'x-kubernetes-embedded-resource':true,'x-kubernetes-preserve-unknown-fields':true},"
					  "'u':{'type':'object','x-kubernetes-embedded-resource':true,'properties':{"
					  "'metadata':{'type':'object','properties':{'name':{'type':'string'}}}}}}}");
	crd_schema_free(s);
	expect("{'type':'object','properties':{'t':{'type':'string','x-kubernetes-embedded-resource':true,"
	       "'x-kubernetes-preserve-unknown-fields':true}}}",
	       BASE ".properties[t].type", "FieldValueInvalid", NULL);
	expect("{'type':'object','properties':{'t':{'type':'object','x-kubernetes-embedded-resource':true}}}",
	       BASE ".properties[t].properties", "FieldValueRequired", NULL);
	expect("{'type':'object','properties':{'t':{'type':'object','x-kubernetes-embedded-resource':true,"
	       "'properties':{'metadata':{'type':'object','properties':{'labels':{'type':'object'}}}}}}}",
	       BASE ".properties[t].properties[metadata].properties[labels]", "FieldValueForbidden", NULL);
}

static void test_list_and_map_types(void **state)
{
	struct crd_schema *s = compile_ok(
		"{'type':'object','properties':{"
		"'m':{'type':'array','x-kubernetes-list-type':'map','x-kubernetes-list-map-keys':['name','proto'],"
		"'items':{'type':'object','required':['name'],'properties':{'name':{'type':'string'},"
		"'proto':{'type':'string','default':'TCP'}}}},"
		"'s':{'type':'array','x-kubernetes-list-type':'set','items':{'type':'integer'}},"
		"'sa':{'type':'array','x-kubernetes-list-type':'set','items':{'type':'object','x-kubernetes-map-type':'atomic',"
		"'x-kubernetes-preserve-unknown-fields':true}},"
		"'a':{'type':'array','x-kubernetes-list-type':'atomic','items':{'type':'object','properties':{}}},"
		"'g':{'type':'object','x-kubernetes-map-type':'granular','additionalProperties':{'type':'string'}}}}");
	crd_schema_free(s);
	expect("{'type':'object','properties':{'l':{'type':'array','x-kubernetes-list-type':'bag','items':{'type':'string'}}}}",
	       BASE ".properties[l].x-kubernetes-list-type", "FieldValueNotSupported",
	       "Unsupported value: \"bag\": supported values: \"atomic\", \"set\", \"map\"");
	expect("{'type':'object','properties':{'l':{'type':'array','x-kubernetes-list-type':'map',"
	       "'items':{'type':'object','properties':{}}}}}",
	       BASE ".properties[l].x-kubernetes-list-map-keys", "FieldValueRequired", NULL);
	expect("{'type':'object','properties':{'l':{'type':'array','x-kubernetes-list-type':'map',"
	       "'x-kubernetes-list-map-keys':['name'],'items':{'type':'object','properties':{'name':{'type':'string'}}}}}}",
	       BASE ".properties[l].x-kubernetes-list-map-keys[0]", "FieldValueInvalid",
	       "Invalid value: \"name\": must be a required or defaulted property of the items");
	expect("{'type':'object','properties':{'l':{'type':'array','x-kubernetes-list-type':'map',"
	       "'x-kubernetes-list-map-keys':['x'],'items':{'type':'object','properties':{'name':{'type':'string'}}}}}}",
	       BASE ".properties[l].x-kubernetes-list-map-keys[0]", "FieldValueInvalid", NULL);
	expect("{'type':'object','properties':{'l':{'type':'array','x-kubernetes-list-type':'map',"
	       "'x-kubernetes-list-map-keys':['o'],'items':{'type':'object','required':['o'],"
	       "'properties':{'o':{'type':'object'}}}}}}",
	       BASE ".properties[l].x-kubernetes-list-map-keys[0]", "FieldValueInvalid", NULL);
	expect("{'type':'object','properties':{'l':{'type':'array','x-kubernetes-list-type':'set',"
	       "'items':{'type':'object','properties':{}}}}}",
	       BASE ".properties[l].items.type", "FieldValueInvalid", NULL);
	expect("{'type':'object','properties':{'l':{'type':'string','x-kubernetes-list-type':'set'}}}",
	       BASE ".properties[l].x-kubernetes-list-type", "FieldValueForbidden", NULL);
	expect("{'type':'object','properties':{'l':{'type':'array','x-kubernetes-list-map-keys':['a'],"
	       "'items':{'type':'string'}}}}",
	       BASE ".properties[l].x-kubernetes-list-map-keys", "FieldValueForbidden", NULL);
	expect("{'type':'object','properties':{'o':{'type':'object','x-kubernetes-map-type':'tree'}}}",
	       BASE ".properties[o].x-kubernetes-map-type", "FieldValueNotSupported", NULL);
}

static void test_defaults(void **state)
{
	expect("{'type':'object','properties':{'r':{'type':'integer','maximum':10,'default':11}}}",
	       BASE ".properties[r].default", "FieldValueInvalid",
	       "Invalid value: 11: " BASE ".properties[r].default in body should be less than or equal to 10");
	expect("{'type':'object','properties':{'r':{'type':'string','default':3}}}", BASE ".properties[r].default",
	       "FieldValueTypeInvalid", NULL);
	expect("{'type':'object','properties':{'o':{'type':'object','required':['a'],'properties':{'a':{'type':'string'}},"
	       "'default':{}}}}",
	       BASE ".properties[o].default.a", "FieldValueRequired", NULL);
	expect("{'type':'object','properties':{'r':{'type':'string','default':null}}}", BASE ".properties[r].default",
	       "FieldValueTypeInvalid", NULL);
	/* Unknown fields are pruned from defaults, inner defaults count. */
	struct crd_schema *s = compile_ok("{'type':'object','properties':{'o':{'type':'object','required':['a'],"
					  "'properties':{'a':{'type':'string','default':'x'}},'default':{'junk':1}},"
					  "'n':{'type':'string','nullable':true,'default':null}}}");
	crd_schema_free(s);
}

static void test_patterns(void **state)
{
	static const char *const good[] = { "^[a-z]+$", "\\\\d{1,3}\\\\.\\\\d+", "^(?:ab|cd)*?$", "[\\\\w\\\\-.]+@x",
					    "\\\\S+\\\\s\\\\W\\\\D", "^[^\\\\]]$", "a{2}b{1,}c{0,3}", "x\\\\/y\\\\u0041",
					    "[\\\\^]", "{a}", "^[-a]$" };
	static const char *const bad[] = { "(?=x)", "a(b", "\\\\bword", "(a)\\\\1", "[\\\\D]", "a{1001}",
					   "((((a{100}){100}){100}){100})", "[]", "\\\\q", "abc\\\\" };
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		char *schema = xasprintf("{'type':'object','properties':{'a':{'type':'string','pattern':'%s'}}}", good[i]);
		crd_schema_free(compile_ok(schema));
		free(schema);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char *schema = xasprintf("{'type':'object','properties':{'a':{'type':'string','pattern':'%s'}}}", bad[i]);
		json_t *c = compile_err(schema);
		assert_cause(c, BASE ".properties[a].pattern", "FieldValueInvalid", NULL);
		const char *m = json_string_value(json_object_get(json_array_get(c, 0), "message"));
		assert_non_null(strstr(m, "must be a valid regular expression, but isn't: "));
		json_decref(c);
		free(schema);
	}
	expect("{'type':'object','properties':{'a':{'type':'string','pattern':'(?=x)'}}}", BASE ".properties[a].pattern",
	       "FieldValueInvalid",
	       "Invalid value: \"(?=x)\": must be a valid regular expression, but isn't: lookaround and named groups are "
	       "not supported");
}

static double elapsed(struct timespec a)
{
	struct timespec b;
	clock_gettime(CLOCK_MONOTONIC, &b);
	return (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) / 1e9;
}

static void test_limits(void **state)
{
	struct timespec t0;
	/* 40 levels deep */
	json_t *node = json_pack("{s:s}", "type", "string");
	for (int i = 0; i < 40; i++)
		node = json_pack("{s:s, s:{s:o}}", "type", "object", "properties", "x", node);
	struct field_errors e = { NULL };
	struct crd_schema *s = (struct crd_schema *)1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	assert_int_equal(crd_schema_compile(node, BASE, &s, &e), -1);
	assert_true(elapsed(t0) < 0.5);
	assert_null(s);
	assert_int_equal(json_array_size(e.causes), 1);
	assert_string_equal(json_string_value(json_object_get(json_array_get(e.causes, 0), "message")),
			    "Invalid value: 33: must be nested at most 32 levels deep");
	field_errors_release(&e);
	json_decref(node);

	/* 32 levels are fine */
	node = json_pack("{s:s}", "type", "string");
	for (int i = 0; i < 31; i++)
		node = json_pack("{s:s, s:{s:o}}", "type", "object", "properties", "x", node);
	assert_int_equal(crd_schema_compile(node, BASE, &s, &e), 0);
	crd_schema_free(s);
	json_decref(node);

	/* 6000 nodes */
	json_t *props = json_object();
	for (int i = 0; i < 6000; i++) {
		char k[16];
		snprintf(k, sizeof(k), "p%d", i);
		json_object_set_new(props, k, json_pack("{s:s, s:s}", "type", "string", "pattern", "^[a-z]+$"));
	}
	node = json_pack("{s:s, s:o}", "type", "object", "properties", props);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	assert_int_equal(crd_schema_compile(node, BASE, &s, &e), -1);
	assert_true(elapsed(t0) < 1.0);
	assert_cause(e.causes, BASE ".properties[p4999]", "FieldValueTooMany", NULL);
	assert_int_equal(json_array_size(e.causes), 1);
	field_errors_release(&e);
	json_decref(node);

	/* more than 1 MiB of text */
	char *big = malloc(CRD_SCHEMA_MAX_BYTES + 1);
	memset(big, 'x', CRD_SCHEMA_MAX_BYTES);
	big[CRD_SCHEMA_MAX_BYTES] = '\0';
	node = json_pack("{s:s, s:s}", "type", "object", "description", big);
	assert_int_equal(crd_schema_compile(node, BASE, &s, &e), -1);
	assert_cause(e.causes, BASE, "FieldValueTooLong", "Too long: must have at most 1048576 bytes");
	field_errors_release(&e);
	json_decref(node);
	free(big);
}

/* Causes already in errs stay; a refused schema adds to them even when they are many. */
static void test_errors_accumulate(void **state)
{
	struct field_errors e = { NULL };
	for (int i = 0; i < 150; i++)
		field_error_add(&e, "FieldValueInvalid", "x", "Invalid value");
	json_t *j = SJ("{'type':'object','x-kubernetes-validations':[]}");
	struct crd_schema *s = NULL;
	assert_int_equal(crd_schema_compile(j, BASE, &s, &e), -1);
	assert_null(s);
	json_decref(j);
	field_errors_release(&e);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_crontab_compiles), cmocka_unit_test(test_root),
		cmocka_unit_test(test_types),            cmocka_unit_test(test_forbidden_keywords),
		cmocka_unit_test(test_metadata),         cmocka_unit_test(test_junctors),
		cmocka_unit_test(test_embedded),         cmocka_unit_test(test_list_and_map_types),
		cmocka_unit_test(test_defaults),         cmocka_unit_test(test_patterns),
		cmocka_unit_test(test_limits),           cmocka_unit_test(test_errors_accumulate),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
