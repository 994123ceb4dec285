/* apiextensions.k8s.io/v1 CustomResourceDefinition: the strategy (defaults, the cleanup
 * finalizer and initial status, validation through crd_def_parse, immutable fields). */
#include "kinds_test.h"
#include "ursa/crd.h"

static json_t *crd(void)
{
	return J("{'apiVersion':'apiextensions.k8s.io/v1','kind':'CustomResourceDefinition',"
		 "'metadata':{'name':'crontabs.stable.example.com','creationTimestamp':'2024-05-01T11:59:30Z'},"
		 "'spec':{'group':'stable.example.com','scope':'Namespaced',"
		 " 'names':{'plural':'crontabs','kind':'CronTab','shortNames':['ct']},"
		 " 'versions':[{'name':'v1beta1','served':true,'storage':false,"
		 "   'schema':{'openAPIV3Schema':{'type':'object','x-kubernetes-preserve-unknown-fields':true}}},"
		 "  {'name':'v1','served':true,'storage':true,"
		 "   'schema':{'openAPIV3Schema':{'type':'object','properties':{'spec':{'type':'object',"
		 "    'properties':{'cronSpec':{'type':'string'}}}}}}}]}}");
}

static void test_create(void **state)
{
	(void)state;
	json_t *o = crd();
	struct field_errors e = run_validate(&strategy_crd, o, NULL);
	expect_no_errors(&e);
	assert_string_equal(json_path_str(o, "spec.conversion.strategy"), "None");
	assert_string_equal(json_path_str(o, "spec.names.singular"), "crontab");
	assert_string_equal(json_path_str(o, "spec.names.listKind"), "CronTabList");
	/* served/storage as given */
	json_t *v0 = json_array_get(json_path(o, "spec.versions"), 0);
	assert_true(json_is_false(json_object_get(v0, "storage")) && json_is_true(json_object_get(v0, "served")));
	json_t *fin = json_path(o, "metadata.finalizers");
	assert_int_equal(json_array_size(fin), 1);
	assert_string_equal(json_string_value(json_array_get(fin, 0)), CRD_CLEANUP_FINALIZER);
	json_t *want = J("{'conditions':[],'acceptedNames':{'plural':'','kind':''},'storedVersions':['v1']}");
	assert_true(json_equal(json_object_get(o, "status"), want));
	json_decref(want);
	/* prepare_create twice (a retried create) keeps one finalizer; others are kept */
	json_array_insert_new(fin, 0, json_string("example.com/other"));
	strategy_crd.prepare_create(o);
	assert_int_equal(json_array_size(fin), 2);
	assert_string_equal(json_string_value(json_array_get(fin, 0)), "example.com/other");
	json_decref(o);
}

static void test_defaults_keep_given(void **state)
{
	(void)state;
	json_t *o = crd();
	json_t *names = json_path(o, "spec.names");
	json_object_set_new(names, "singular", json_string("tab"));
	json_object_set_new(names, "listKind", json_string("CronTabs"));
	json_object_set_new(json_object_get(o, "spec"), "conversion", J("{'strategy':'Webhook'}"));
	strategy_crd.defaults(o);
	assert_string_equal(json_path_str(o, "spec.names.singular"), "tab");
	assert_string_equal(json_path_str(o, "spec.names.listKind"), "CronTabs");
	assert_string_equal(json_path_str(o, "spec.conversion.strategy"), "Webhook");
	struct field_errors e = { NULL };
	strategy_crd.validate(o, NULL, &e);
	expect_cause(&e, "spec.conversion.strategy", "FieldValueNotSupported");
	field_errors_release(&e);
	/* garbage does not crash defaulting */
	json_t *bad = J("{'spec':{'names':{'kind':3},'conversion':'x'}}");
	strategy_crd.defaults(bad);
	strategy_crd.prepare_create(bad);
	json_decref(bad);
	bad = J("{'spec':7,'metadata':{'finalizers':'x'}}");
	strategy_crd.defaults(bad);
	strategy_crd.prepare_create(bad);
	json_decref(bad);
	json_decref(o);
}

static void test_validate_causes(void **state)
{
	(void)state;
	json_t *o = crd();
	json_object_set_new(json_object_get(o, "metadata"), "name", json_string("crontab.stable.example.com"));
	json_object_set_new(json_object_get(o, "spec"), "scope", json_string("Global"));
	struct field_errors e = run_validate(&strategy_crd, o, NULL);
	assert_true(strstr(expect_cause(&e, "metadata.name", "FieldValueInvalid"), "spec.names.plural"));
	expect_cause(&e, "spec.scope", "FieldValueNotSupported");
	field_errors_release(&e);
	json_decref(o);
}

static void test_update_immutable(void **state)
{
	(void)state;
	json_t *old = crd();
	struct field_errors e = run_validate(&strategy_crd, old, NULL);
	expect_no_errors(&e);

	/* adding a version and a column is fine */
	json_t *o = json_deep_copy(old);
	json_array_append_new(json_path(o, "spec.versions"),
			      J("{'name':'v2','served':true,'storage':false,"
				"'schema':{'openAPIV3Schema':{'type':'object'}}}"));
	e = run_validate(&strategy_crd, o, old);
	expect_no_errors(&e);
	json_decref(o);

	o = json_deep_copy(old);
	json_object_set_new(json_object_get(o, "spec"), "scope", json_string("Cluster"));
	e = run_validate(&strategy_crd, o, old);
	assert_true(strstr(expect_cause(&e, "spec.scope", "FieldValueInvalid"), "field is immutable"));
	field_errors_release(&e);
	json_decref(o);

	o = json_deep_copy(old);
	json_object_set_new(json_object_get(o, "spec"), "group", json_string("other.example.com"));
	json_object_set_new(json_object_get(o, "metadata"), "name", json_string("crontabs.other.example.com"));
	e = run_validate(&strategy_crd, o, old);
	assert_true(strstr(expect_cause(&e, "spec.group", "FieldValueInvalid"), "field is immutable"));
	field_errors_release(&e);
	json_decref(o);

	o = json_deep_copy(old);
	json_object_set_new(json_path(o, "spec.names"), "plural", json_string("crons"));
	e = run_validate(&strategy_crd, o, old);
	assert_true(strstr(expect_cause(&e, "spec.names.plural", "FieldValueInvalid"), "field is immutable"));
	expect_cause(&e, "metadata.name", "FieldValueInvalid");
	field_errors_release(&e);
	json_decref(o);
	json_decref(old);
}

static void test_cells(void **state)
{
	(void)state;
	json_t *o = crd();
	json_t *cells = cells_of(&strategy_crd, o, T("2024-05-01T12:00:00Z"));
	assert_string_equal(cell_s(cells, col(&strategy_crd, "Name")), "crontabs.stable.example.com");
	assert_string_equal(cell_s(cells, col(&strategy_crd, "Created At")), "2024-05-01T11:59:30Z");
	json_decref(cells);
	json_decref(o);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_create),
		cmocka_unit_test(test_defaults_keep_given),
		cmocka_unit_test(test_validate_causes),
		cmocka_unit_test(test_update_immutable),
		cmocka_unit_test(test_cells),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
