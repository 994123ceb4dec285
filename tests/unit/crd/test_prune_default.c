/* crd_schema_prune and crd_schema_default. */
#include "schema_test.h"

/* Prunes obj (text) by schema (text): asserts the result and the reported paths (JSON text). */
static void assert_pruned(const char *schema, const char *obj, const char *want, const char *want_paths)
{
	struct crd_schema *s = compile_ok(schema);
	json_t *o = SJ(obj), *w = SJ(want), *wp = SJ(want_paths), *paths = json_array();
	size_t n = crd_schema_prune(s, o, paths);
	if (!json_equal(o, w))
		fail_msg("pruned to %s, wanted %s", dump(o), dump(w));
	if (!json_equal(paths, wp))
		fail_msg("paths %s, wanted %s", dump(paths), dump(wp));
	assert_int_equal(n, json_array_size(wp));
	assert_int_equal(crd_schema_prune(s, o, NULL), 0);
	json_decref(o);
	json_decref(w);
	json_decref(wp);
	json_decref(paths);
	crd_schema_free(s);
}

static void assert_defaulted(const char *schema, const char *obj, const char *want)
{
	struct crd_schema *s = compile_ok(schema);
	json_t *o = SJ(obj), *w = SJ(want);
	crd_schema_default(s, o);
	if (!json_equal(o, w))
		fail_msg("defaulted to %s, wanted %s", dump(o), dump(w));
	crd_schema_default(s, o); /* idempotent */
	assert_true(json_equal(o, w));
	json_decref(o);
	json_decref(w);
	crd_schema_free(s);
}

static const char *crontab = "{'type':'object','properties':{'spec':{'type':'object','properties':{"
			     "'cronSpec':{'type':'string'},'image':{'type':'string'},'replicas':{'type':'integer'},"
			     "'items':{'type':'array','items':{'type':'object','properties':{'name':{'type':'string'}}}}}}}}";

static void test_prune_unknown(void **state)
{
	assert_pruned(crontab,
		      "{'apiVersion':'s/v1','kind':'CronTab','metadata':{'name':'x','labels':{'a':'b'},'junk':1},"
		      "'spec':{'cronSpec':'*','someRandomField':42,'items':[{'name':'a'},{'name':'b','x':{'y':1}}]},'status':{}}",
		      "{'apiVersion':'s/v1','kind':'CronTab','metadata':{'name':'x','labels':{'a':'b'},'junk':1},"
		      "'spec':{'cronSpec':'*','items':[{'name':'a'},{'name':'b'}]}}",
		      "['spec.someRandomField','spec.items[1].x','status']");
	/* members of a scalar-typed node given an object are all dropped (validation then refuses it) */
	assert_pruned(crontab, "{'spec':{'image':{'a':1,'b.c':2}}}", "{'spec':{'image':{}}}",
		      "['spec.image.a','spec.image[b.c]']");
}

static void test_prune_preserve(void **state)
{
	const char *s = "{'type':'object','properties':{'spec':{'type':'object','x-kubernetes-preserve-unknown-fields':true,"
			"'properties':{'known':{'type':'object','properties':{'a':{'type':'string'}}}}},"
			"'open':{'type':'object','additionalProperties':true},"
			"'map':{'type':'object','additionalProperties':{'type':'object','properties':{'v':{'type':'string'}}}},"
			"'raw':{'x-kubernetes-preserve-unknown-fields':true},"
			"'emb':{'type':'object','x-kubernetes-embedded-resource':true,'properties':{'spec':{'type':'object',"
			"'properties':{}}}}}}";
	assert_pruned(s,
		      "{'spec':{'anything':{'x':1},'known':{'a':'1','b':2}},'open':{'x':{'y':1}},"
		      "'map':{'k1':{'v':'1','w':2}},'raw':{'a':[{'b':1}]},"
		      "'emb':{'apiVersion':'v1','kind':'Pod','metadata':{'name':'p','x':1},'spec':{'c':1},'status':{}}}",
		      "{'spec':{'anything':{'x':1},'known':{'a':'1'}},'open':{'x':{'y':1}},"
		      "'map':{'k1':{'v':'1'}},'raw':{'a':[{'b':1}]},"
		      "'emb':{'apiVersion':'v1','kind':'Pod','metadata':{'name':'p','x':1},'spec':{}}}",
		      "['spec.known.b','map.k1.w','emb.spec.c','emb.status']");
}

static void test_prune_many(void **state)
{
	struct crd_schema *s = compile_ok(crontab);
	json_t *o = json_object(), *spec = json_object(), *paths = json_array();
	for (int i = 0; i < 150; i++) {
		char k[16];
		snprintf(k, sizeof(k), "x%d", i);
		json_object_set_new(spec, k, json_integer(i));
	}
	json_object_set_new(o, "spec", spec);
	assert_int_equal(crd_schema_prune(s, o, paths), 150);
	assert_int_equal(json_array_size(paths), 100);
	assert_int_equal(json_object_size(spec), 0);
	json_decref(o);
	json_decref(paths);
	crd_schema_free(s);
}

static const char *defaults = "{'type':'object','properties':{'spec':{'type':'object','default':{},'properties':{"
			      "'cronSpec':{'type':'string','default':'5 0 * * *'},"
			      "'image':{'type':'string','default':'my-awesome-cron-image'},"
			      "'replicas':{'type':'integer','minimum':1,'default':1},"
			      "'opt':{'type':'string','nullable':true,'default':'d'},"
			      "'free':{'type':'string'},"
			      "'ports':{'type':'array','items':{'type':'object','properties':{"
			      "'protocol':{'type':'string','default':'TCP'},'port':{'type':'integer'}}}},"
			      "'env':{'type':'object','additionalProperties':{'type':'object','properties':{"
			      "'v':{'type':'string','default':'x'}}}},"
			      "'nested':{'type':'object','default':{'a':{},'junk':1},'properties':{'a':{'type':'object',"
			      "'properties':{'b':{'type':'integer','default':7}}}}}}},"
			      "'metadata':{'type':'object','properties':{'name':{'type':'string'}}}}}";

static void test_default_fill(void **state)
{
	/* spec absent: its default {} is filled, then everything inside it */
	assert_defaulted(defaults, "{'metadata':{'name':'n'}}",
			 "{'metadata':{'name':'n'},'spec':{'cronSpec':'5 0 * * *','image':'my-awesome-cron-image',"
			 "'replicas':1,'opt':'d','nested':{'a':{'b':7}}}}");
	/* present values stay; nulls of non-nullable fields take the default or go; nullable nulls stay */
	assert_defaulted(defaults, "{'spec':{'replicas':null,'image':'mine','opt':null,'free':null,'nested':{'a':null}}}",
			 "{'spec':{'cronSpec':'5 0 * * *','image':'mine','replicas':1,'opt':null,"
			 "'nested':{}}}");
	/* arrays and maps */
	assert_defaulted(defaults, "{'spec':{'ports':[{'port':80},{'port':53,'protocol':'UDP'}],'env':{'A':{},'B':{'v':'y'},'C':null}}}",
			 "{'spec':{'cronSpec':'5 0 * * *','image':'my-awesome-cron-image','replicas':1,'opt':'d',"
			 "'nested':{'a':{'b':7}},'ports':[{'port':80,'protocol':'TCP'},{'port':53,'protocol':'UDP'}],"
			 "'env':{'A':{'v':'x'},'B':{'v':'y'}}}}");
}

static void test_default_copies(void **state)
{
	struct crd_schema *s = compile_ok(defaults);
	json_t *a = json_object(), *b = json_object();
	crd_schema_default(s, a);
	json_object_set_new(json_object_get(json_object_get(a, "spec"), "nested"), "changed", json_true());
	crd_schema_default(s, b);
	assert_null(json_object_get(json_object_get(json_object_get(b, "spec"), "nested"), "changed"));
	/* the schema as given still has the unpruned default */
	assert_non_null(json_object_get(json_object_get(json_object_get(json_object_get(
		json_object_get(crd_schema_json(s), "properties"), "spec"), "properties"), "nested"), "default"));
	json_decref(a);
	json_decref(b);
	crd_schema_free(s);
}

/* The server's order: prune, default, validate. */
static void test_pipeline(void **state)
{
	struct crd_schema *s = compile_ok(defaults);
	json_t *o = SJ("{'apiVersion':'s/v1','kind':'CronTab','metadata':{'name':'x'},'spec':{'replicas':0,'bogus':1}}");
	json_t *paths = json_array();
	assert_int_equal(crd_schema_prune(s, o, paths), 1);
	crd_schema_default(s, o);
	struct field_errors e = { NULL };
	crd_schema_validate(s, o, &e);
	assert_int_equal(json_array_size(e.causes), 1);
	assert_cause(e.causes, "spec.replicas", "FieldValueInvalid",
		     "Invalid value: 0: spec.replicas in body should be greater than or equal to 1");
	assert_int_equal(crd_schema_prune(s, o, NULL), 0);
	field_errors_release(&e);
	json_decref(o);
	json_decref(paths);
	crd_schema_free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_prune_unknown), cmocka_unit_test(test_prune_preserve),
		cmocka_unit_test(test_prune_many),    cmocka_unit_test(test_default_fill),
		cmocka_unit_test(test_default_copies), cmocka_unit_test(test_pipeline),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
