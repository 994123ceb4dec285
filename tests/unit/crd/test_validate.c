/* crd_schema_validate: every keyword passing and failing, with the path, reason and message. */
#include "schema_test.h"

#define OBJ(props) "{'type':'object','properties':{" props "}}"
#define SPEC(props) OBJ("'spec':{'type':'object','properties':{" props "}}")

static void test_types(void **state)
{
	const char *s = SPEC("'replicas':{'type':'integer'},'ratio':{'type':'number'},'on':{'type':'boolean'},"
			     "'name':{'type':'string'},'list':{'type':'array','items':{'type':'string'}},"
			     "'obj':{'type':'object','properties':{}}");
	assert_one(s, "{'spec':{'replicas':'string'}}", "spec.replicas", "FieldValueTypeInvalid",
		   "Invalid value: \"string\": spec.replicas in body must be of type integer: \"string\"");
	assert_one(s, "{'spec':{'replicas':1.5}}", "spec.replicas", "FieldValueTypeInvalid",
		   "Invalid value: \"number\": spec.replicas in body must be of type integer: \"number\"");
	assert_valid(s, "{'spec':{'replicas':3.0,'ratio':3,'on':false,'name':'','list':[],'obj':{}}}");
	assert_valid(s, "{'spec':{'ratio':0.25}}");
	assert_one(s, "{'spec':{'on':'true'}}", "spec.on", "FieldValueTypeInvalid", NULL);
	assert_one(s, "{'spec':{'name':1}}", "spec.name", "FieldValueTypeInvalid",
		   "Invalid value: \"integer\": spec.name in body must be of type string: \"integer\"");
	assert_one(s, "{'spec':{'list':{}}}", "spec.list", "FieldValueTypeInvalid", NULL);
	assert_one(s, "{'spec':{'obj':[]}}", "spec.obj", "FieldValueTypeInvalid",
		   "Invalid value: \"array\": spec.obj in body must be of type object: \"array\"");
	assert_one(s, "{'spec':{'list':['a',2]}}", "spec.list[1]", "FieldValueTypeInvalid", NULL);
	assert_one(s, "{'spec':'x'}", "spec", "FieldValueTypeInvalid", NULL);
	assert_one(s, "[]", "", "FieldValueTypeInvalid", "Invalid value: \"array\": body must be of type object: \"array\"");
}

static void test_nullable(void **state)
{
	const char *s = SPEC("'a':{'type':'string'},'b':{'type':'string','nullable':true},"
			     "'c':{'type':'object','nullable':true,'properties':{}},'p':{'x-kubernetes-preserve-unknown-fields':true}");
	assert_one(s, "{'spec':{'a':null}}", "spec.a", "FieldValueTypeInvalid",
		   "Invalid value: \"null\": spec.a in body must be of type string: \"null\"");
	assert_valid(s, "{'spec':{'b':null,'c':null,'p':null}}");
}

static void test_int_or_string(void **state)
{
	const char *s = SPEC("'port':{'x-kubernetes-int-or-string':true},"
			     "'pct':{'x-kubernetes-int-or-string':true,'anyOf':[{'type':'integer'},{'type':'string','pattern':'^[0-9]+%$'}]}");
	assert_valid(s, "{'spec':{'port':80,'pct':'25%'}}");
	assert_valid(s, "{'spec':{'port':'http','pct':10}}");
	assert_one(s, "{'spec':{'port':true}}", "spec.port", "FieldValueTypeInvalid", NULL);
	assert_one(s, "{'spec':{'pct':'25'}}", "spec.pct", "FieldValueInvalid",
		   "Invalid value: \"25\": spec.pct in body must validate at least one schema (anyOf)");
}

static void test_required(void **state)
{
	const char *s = OBJ("'spec':{'type':'object','required':['cronSpec','image'],'properties':{"
			    "'cronSpec':{'type':'string'},'image':{'type':'string'}}}");
	json_t *c = validate(s, "{'spec':{}}");
	assert_int_equal(json_array_size(c), 2);
	assert_cause(c, "spec.cronSpec", "FieldValueRequired", "Required value");
	assert_cause(c, "spec.image", "FieldValueRequired", "Required value");
	json_decref(c);
	assert_valid(s, "{'spec':{'cronSpec':'','image':''}}");
	/* required at the root */
	assert_one("{'type':'object','required':['spec'],'properties':{'spec':{'type':'object'}}}", "{}", "spec",
		   "FieldValueRequired", "Required value");
}

static void test_enum(void **state)
{
	const char *s = SPEC("'mode':{'type':'string','enum':['a','b']},'n':{'type':'integer','enum':[1,2]}");
	assert_valid(s, "{'spec':{'mode':'b','n':2.0}}");
	assert_one(s, "{'spec':{'mode':'x'}}", "spec.mode", "FieldValueNotSupported",
		   "Unsupported value: \"x\": supported values: \"a\", \"b\"");
	assert_one(s, "{'spec':{'n':3}}", "spec.n", "FieldValueNotSupported",
		   "Unsupported value: 3: supported values: \"1\", \"2\"");
}

static void test_pattern(void **state)
{
	const char *s = SPEC("'cronSpec':{'type':'string','pattern':'^(\\\\d+|\\\\*)(/\\\\d+)?(\\\\s+(\\\\d+|\\\\*)(/\\\\d+)?){4}$'}");
	assert_valid(s, "{'spec':{'cronSpec':'* * * * */5'}}");
	assert_valid(s, "{'spec':{'cronSpec':'5 0 * * *'}}");
	assert_one(s, "{'spec':{'cronSpec':'abc'}}", "spec.cronSpec", "FieldValueInvalid",
		   "Invalid value: \"abc\": spec.cronSpec in body should match "
		   "'^(\\d+|\\*)(/\\d+)?(\\s+(\\d+|\\*)(/\\d+)?){4}$'");
	const char *s2 = SPEC("'a':{'type':'string','pattern':'^[\\\\w.\\\\-]+$'},'b':{'type':'string','pattern':'^[^\\\\]]x$'}");
	assert_valid(s2, "{'spec':{'a':'a.b-c_d','b':'ax'}}");
	assert_one(s2, "{'spec':{'a':'a b'}}", "spec.a", "FieldValueInvalid", NULL);
	assert_one(s2, "{'spec':{'b':']x'}}", "spec.b", "FieldValueInvalid", NULL);
	/* an embedded NUL never matches */
	assert_one(s2, "{'spec':{'a':'ab\\u0000c'}}", "spec.a", "FieldValueInvalid", NULL);
}

static void test_numbers(void **state)
{
	const char *s = SPEC("'replicas':{'type':'integer','minimum':1,'maximum':10},"
			     "'x':{'type':'number','minimum':0,'exclusiveMinimum':true,'maximum':1.5,'exclusiveMaximum':true},"
			     "'m':{'type':'integer','multipleOf':5},'f':{'type':'number','multipleOf':0.1}");
	assert_valid(s, "{'spec':{'replicas':10,'x':1.25,'m':-15,'f':0.3}}");
	assert_valid(s, "{'spec':{'replicas':1}}");
	assert_one(s, "{'spec':{'replicas':11}}", "spec.replicas", "FieldValueInvalid",
		   "Invalid value: 11: spec.replicas in body should be less than or equal to 10");
	assert_one(s, "{'spec':{'replicas':0}}", "spec.replicas", "FieldValueInvalid",
		   "Invalid value: 0: spec.replicas in body should be greater than or equal to 1");
	assert_one(s, "{'spec':{'x':0}}", "spec.x", "FieldValueInvalid",
		   "Invalid value: 0: spec.x in body should be greater than 0");
	assert_one(s, "{'spec':{'x':1.5}}", "spec.x", "FieldValueInvalid",
		   "Invalid value: 1.5: spec.x in body should be less than 1.5");
	assert_one(s, "{'spec':{'m':7}}", "spec.m", "FieldValueInvalid",
		   "Invalid value: 7: spec.m in body should be a multiple of 5");
	assert_one(s, "{'spec':{'f':0.35}}", "spec.f", "FieldValueInvalid",
		   "Invalid value: 0.35: spec.f in body should be a multiple of 0.1");
}

static void test_strings(void **state)
{
	const char *s = SPEC("'name':{'type':'string','minLength':2,'maxLength':3}");
	assert_valid(s, "{'spec':{'name':'\\u00e9\\u00e9\\u00e9'}}"); /* 3 characters, 6 bytes */
	assert_one(s, "{'spec':{'name':'abcd'}}", "spec.name", "FieldValueTooLong", "Too long: may not be longer than 3");
	assert_one(s, "{'spec':{'name':'a'}}", "spec.name", "FieldValueInvalid",
		   "Invalid value: \"a\": spec.name in body should be at least 2 chars long");
}

static void test_arrays(void **state)
{
	const char *s = SPEC("'l':{'type':'array','minItems':1,'maxItems':2,'items':{'type':'integer'}},"
			     "'u':{'type':'array','uniqueItems':true,'items':{'x-kubernetes-preserve-unknown-fields':true}},"
			     "'items':{'type':'array','items':{'type':'object','required':['name'],'properties':{'name':{'type':'string'}}}}");
	assert_valid(s, "{'spec':{'l':[1,2],'u':[1,'1',{'a':1},{'a':2}]}}");
	assert_one(s, "{'spec':{'l':[1,2,3]}}", "spec.l", "FieldValueTooMany", "Too many: 3: must have at most 2 items");
	assert_one(s, "{'spec':{'l':[]}}", "spec.l", "FieldValueInvalid",
		   "Invalid value: []: spec.l in body should have at least 1 items");
	assert_one(s, "{'spec':{'u':[{'a':1,'b':2},{'b':2,'a':1}]}}", "spec.u", "FieldValueDuplicate",
		   "Duplicate value: {\"b\":2,\"a\":1}");
	assert_one(s, "{'spec':{'items':[{'name':'a'},{'name':'b'},{}]}}", "spec.items[2].name", "FieldValueRequired",
		   "Required value");
}

static void test_list_types(void **state)
{
	const char *s = SPEC("'tags':{'type':'array','x-kubernetes-list-type':'set','items':{'type':'string'}},"
			     "'ports':{'type':'array','x-kubernetes-list-type':'map','x-kubernetes-list-map-keys':['port','protocol'],"
			     "'items':{'type':'object','required':['port','protocol'],'properties':{'port':{'type':'integer'},"
			     "'protocol':{'type':'string'},'name':{'type':'string'}}}}");
	assert_valid(s, "{'spec':{'tags':['a','b'],'ports':[{'port':80,'protocol':'TCP'},{'port':80,'protocol':'UDP'}]}}");
	json_t *c = validate(s, "{'spec':{'tags':['a','b','a','a']}}");
	assert_int_equal(json_array_size(c), 2);
	assert_cause(c, "spec.tags[2]", "FieldValueDuplicate", "Duplicate value: \"a\"");
	assert_cause(c, "spec.tags[3]", "FieldValueDuplicate", "Duplicate value: \"a\"");
	json_decref(c);
	assert_one(s, "{'spec':{'ports':[{'port':80,'protocol':'TCP','name':'x'},{'port':80.0,'protocol':'TCP','name':'y'}]}}",
		   "spec.ports[1]", "FieldValueDuplicate", "Duplicate value: {\"port\":80.0,\"protocol\":\"TCP\"}");
}

static void test_objects(void **state)
{
	const char *s = SPEC("'labels':{'type':'object','minProperties':1,'maxProperties':2,"
			     "'additionalProperties':{'type':'string','maxLength':3}},"
			     "'closed':{'type':'object','additionalProperties':false}");
	assert_valid(s, "{'spec':{'labels':{'a.b':'x'},'closed':{}}}");
	assert_one(s, "{'spec':{'labels':{'a.b':'long'}}}", "spec.labels[a.b]", "FieldValueTooLong", NULL);
	assert_one(s, "{'spec':{'labels':{'c':1}}}", "spec.labels.c", "FieldValueTypeInvalid", NULL);
	assert_one(s, "{'spec':{'labels':{}}}", "spec.labels", "FieldValueInvalid",
		   "Invalid value: {}: spec.labels in body should have at least 1 properties");
	assert_one(s, "{'spec':{'labels':{'a':'','b':'','c':''}}}", "spec.labels", "FieldValueTooMany",
		   "Too many: 3: must have at most 2 properties");
	assert_one(s, "{'spec':{'closed':{'x':1}}}", "spec.closed.x", "FieldValueForbidden",
		   "Forbidden: spec.closed.x in body is a forbidden property");
}

static void test_formats(void **state)
{
	static const struct {
		const char *format, *good, *bad;
	} cases[] = {
		{ "date-time", "'2024-02-29T10:00:00.123+01:00'", "'2024-02-30T10:00:00Z'" },
		{ "date-time", "'2024-01-01t00:00:60z'", "'2024-01-01 00:00:00Z'" },
		{ "date", "'2000-02-29'", "'1900-02-29'" },
		{ "byte", "'aGVsbG8='", "'aGVsbG8'" },
		{ "uuid", "'123e4567-e89b-12d3-a456-426614174000'", "'123e4567e89b12d3a456426614174000'" },
		{ "hostname", "'a-b.example.com'", "'a_b.example.com'" },
		{ "ipv4", "'192.168.0.1'", "'192.168.0.01'" },
		{ "ipv6", "'fe80::1'", "'fe80:::1'" },
		{ "cidr", "'fd00::/8'", "'10.0.0.0/33'" },
		{ "email", "'a.b@example.com'", "'a b@example.com'" },
		{ "uri", "'https://example.com/x?y'", "'example.com'" },
		{ "int32", "2147483647", "2147483648" },
		{ "int64", "9007199254740993", "1.5" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *type = cases[i].format[0] == 'i' && cases[i].format[1] == 'n' ? "number" : "string";
		char schema[256], good[256], bad[256];
		snprintf(schema, sizeof(schema), SPEC("'v':{'type':'%s','format':'%s'}"), type, cases[i].format);
		snprintf(good, sizeof(good), "{'spec':{'v':%s}}", cases[i].good);
		snprintf(bad, sizeof(bad), "{'spec':{'v':%s}}", cases[i].bad);
		assert_valid(schema, good);
		assert_one(schema, bad, "spec.v", "FieldValueTypeInvalid", NULL);
	}
	assert_one(SPEC("'v':{'type':'string','format':'date'}"), "{'spec':{'v':'x'}}", "spec.v", "FieldValueTypeInvalid",
		   "Invalid value: \"x\": spec.v in body must be of type date: \"x\"");
	assert_valid(SPEC("'v':{'type':'string','format':'color'}"), "{'spec':{'v':'x'}}");
}

static void test_junctors(void **state)
{
	const char *t = SPEC("'o':{'type':'object','properties':{'a':{'type':'string'},'b':{'type':'string'},'n':{'type':'integer'}},"
			     "'oneOf':[{'required':['a']},{'required':['b']}],'not':{'required':['n']},"
			     "'allOf':[{'maxProperties':2}]}");
	assert_valid(t, "{'spec':{'o':{'a':'x'}}}");
	assert_one(t, "{'spec':{'o':{'a':'x','b':'y'}}}", "spec.o", "FieldValueInvalid",
		   "Invalid value: {\"a\":\"x\",\"b\":\"y\"}: spec.o in body must validate one and only one schema (oneOf)");
	assert_one(t, "{'spec':{'o':{'a':'x','n':1}}}", "spec.o", "FieldValueInvalid",
		   "Invalid value: {\"a\":\"x\",\"n\":1}: spec.o in body must not validate the schema (not)");
	json_t *c = validate(t, "{'spec':{'o':{'a':'x','b':'y','n':1}}}");
	assert_cause(c, "spec.o", "FieldValueTooMany", NULL); /* allOf's maxProperties */
	json_decref(c);
}

static void test_resources(void **state)
{
	const char *s = "{'type':'object','properties':{'metadata':{'type':'object','properties':{'name':{'type':'string',"
			"'maxLength':5}}},'spec':{'type':'object','properties':{'t':{'type':'object',"
			"'x-kubernetes-embedded-resource':true,'x-kubernetes-preserve-unknown-fields':true}}}}}";
	/* apiVersion, kind and metadata belong to the server; only name's restriction applies. */
	assert_valid(s, "{'apiVersion':'x/v1','kind':'X','metadata':{'name':'abc','labels':{'a':'b'},'anything':1}}");
	assert_one(s, "{'metadata':{'name':'abcdef'}}", "metadata.name", "FieldValueTooLong", NULL);
	assert_valid(s, "{'spec':{'t':{'apiVersion':'v1','kind':'Pod','spec':{}}}}");
	json_t *c = validate(s, "{'spec':{'t':{'metadata':[]}}}");
	assert_int_equal(json_array_size(c), 3);
	assert_cause(c, "spec.t.apiVersion", "FieldValueRequired", "Required value");
	assert_cause(c, "spec.t.kind", "FieldValueRequired", "Required value");
	assert_cause(c, "spec.t.metadata", "FieldValueTypeInvalid", NULL);
	json_decref(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_types),     cmocka_unit_test(test_nullable),   cmocka_unit_test(test_int_or_string),
		cmocka_unit_test(test_required),  cmocka_unit_test(test_enum),       cmocka_unit_test(test_pattern),
		cmocka_unit_test(test_numbers),   cmocka_unit_test(test_strings),    cmocka_unit_test(test_arrays),
		cmocka_unit_test(test_list_types), cmocka_unit_test(test_objects),   cmocka_unit_test(test_formats),
		cmocka_unit_test(test_junctors),  cmocka_unit_test(test_resources),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
