/* autoscaling/v2 HorizontalPodAutoscaler: defaults, validation (scale target, replica bounds,
 * metric types) and kubectl's printer cells (REFERENCE, TARGETS, MINPODS, ...). */
#include "kinds_test.h"

static json_t *hpa(const char *spec_status)
{
	json_t *o = J(spec_status);
	json_object_set_new(o, "metadata", J("{'name':'web','namespace':'default',"
					      "'creationTimestamp':'2024-05-01T11:59:30Z'}"));
	return o;
}

static void test_defaults(void **state)
{
	(void)state;
	json_t *o = hpa("{'spec':{'scaleTargetRef':{'apiVersion':'apps/v1','kind':'Deployment','name':'web'},"
			"'maxReplicas':5}}");
	struct field_errors e = run_validate(&strategy_hpa, o, NULL);
	expect_no_errors(&e);
	assert_int_equal(int_at(o, "spec.minReplicas", 0), 1);
	assert_string_equal(json_path_str(json_array_get(json_path(o, "spec.metrics"), 0), "resource.name"), "cpu");
	assert_int_equal(json_array_size(json_path(o, "spec.metrics")), 1);
	assert_int_equal(int_at(o, "status.desiredReplicas", -1), 0);
	json_decref(o);
}

static void test_validate(void **state)
{
	(void)state;
	json_t *noref = hpa("{'spec':{'scaleTargetRef':{'kind':'','name':''},'maxReplicas':3}}");
	struct field_errors e = run_validate(&strategy_hpa, noref, NULL);
	expect_cause(&e, "spec.scaleTargetRef.kind", "FieldValueRequired");
	expect_cause(&e, "spec.scaleTargetRef.name", "FieldValueRequired");
	field_errors_release(&e);
	json_decref(noref);

	json_t *missing = hpa("{'spec':{}}");
	e = run_validate(&strategy_hpa, missing, NULL);
	expect_cause(&e, "spec.scaleTargetRef", "FieldValueRequired");
	expect_cause(&e, "spec.maxReplicas", "FieldValueRequired");
	field_errors_release(&e);
	json_decref(missing);

	json_t *min0 = hpa("{'spec':{'scaleTargetRef':{'kind':'Deployment','name':'web'},'minReplicas':0,"
			   "'maxReplicas':3}}");
	e = run_validate(&strategy_hpa, min0, NULL);
	const char *msg = expect_cause(&e, "spec.minReplicas", "FieldValueInvalid");
	assert_non_null(strstr(msg, "greater than or equal to 1"));
	field_errors_release(&e);
	json_decref(min0);

	json_t *max0 = hpa("{'spec':{'scaleTargetRef':{'kind':'Deployment','name':'web'},'maxReplicas':0}}");
	e = run_validate(&strategy_hpa, max0, NULL);
	expect_cause(&e, "spec.maxReplicas", "FieldValueInvalid");
	field_errors_release(&e);
	json_decref(max0);

	json_t *inverted = hpa("{'spec':{'scaleTargetRef':{'kind':'Deployment','name':'web'},'minReplicas':4,"
			       "'maxReplicas':2}}");
	e = run_validate(&strategy_hpa, inverted, NULL);
	msg = expect_cause(&e, "spec.maxReplicas", "FieldValueInvalid");
	assert_non_null(strstr(msg, "`minReplicas`"));
	assert_null(cause_at(&e, "spec.minReplicas"));
	field_errors_release(&e);
	json_decref(inverted);

	json_t *equal = hpa("{'spec':{'scaleTargetRef':{'kind':'Deployment','name':'web'},'minReplicas':2,"
			    "'maxReplicas':2}}");
	e = run_validate(&strategy_hpa, equal, NULL);
	expect_no_errors(&e);
	json_decref(equal);

	json_t *badtype = hpa("{'spec':{'scaleTargetRef':{'kind':'Deployment','name':'web'},'maxReplicas':2,"
			      "'metrics':[{'type':'Resource'},{'type':'Magic'}]}}");
	e = run_validate(&strategy_hpa, badtype, NULL);
	expect_cause(&e, "spec.metrics[1].type", "FieldValueNotSupported");
	assert_null(cause_at(&e, "spec.metrics[0].type"));
	field_errors_release(&e);
	json_decref(badtype);
}

static void test_cells(void **state)
{
	(void)state;
	time_t now = T("2024-05-01T12:00:00Z");
	json_t *o = hpa("{'spec':{'scaleTargetRef':{'kind':'Deployment','name':'web'},'maxReplicas':5}}");
	struct field_errors e = run_validate(&strategy_hpa, o, NULL);
	expect_no_errors(&e);
	json_t *c = cells_of(&strategy_hpa, o, now);
	assert_string_equal(cell_s(c, col(&strategy_hpa, "Name")), "web");
	assert_string_equal(cell_s(c, col(&strategy_hpa, "Reference")), "Deployment/web");
	assert_string_equal(cell_s(c, col(&strategy_hpa, "Targets")), "cpu: <unknown>/80%");
	assert_int_equal(cell_i(c, col(&strategy_hpa, "MinPods")), 1);
	assert_int_equal(cell_i(c, col(&strategy_hpa, "MaxPods")), 5);
	assert_int_equal(cell_i(c, col(&strategy_hpa, "Replicas")), 0);
	assert_string_equal(cell_s(c, col(&strategy_hpa, "Age")), "30s");
	json_decref(c);
	json_decref(o);

	o = hpa("{'spec':{'scaleTargetRef':{'kind':'StatefulSet','name':'db'},'maxReplicas':3,'metrics':["
		"{'type':'Resource','resource':{'name':'memory','target':{'type':'AverageValue','averageValue':'1Gi'}}},"
		"{'type':'Pods','pods':{'metric':{'name':'qps'},'target':{'type':'AverageValue','averageValue':'10'}}},"
		"{'type':'External','external':{'metric':{'name':'q'},'target':{'type':'Value','value':'5'}}}]},"
		"'status':{'currentReplicas':2,'desiredReplicas':2,'currentMetrics':["
		"{'type':'Resource','resource':{'name':'memory','current':{'averageValue':'512Mi'}}}]}}");
	c = cells_of(&strategy_hpa, o, now);
	assert_string_equal(cell_s(c, col(&strategy_hpa, "Reference")), "StatefulSet/db");
	assert_string_equal(cell_s(c, col(&strategy_hpa, "Targets")), "memory: 512Mi/1Gi, <unknown>/10 + 1 more...");
	assert_string_equal(cell_s(c, col(&strategy_hpa, "MinPods")), "<unset>");
	assert_int_equal(cell_i(c, col(&strategy_hpa, "Replicas")), 2);
	json_decref(c);
	json_decref(o);

	o = hpa("{'spec':{'scaleTargetRef':{'kind':'Deployment','name':'web'},'minReplicas':1,'maxReplicas':4,"
		"'metrics':[{'type':'Resource','resource':{'name':'cpu','target':{'type':'Utilization',"
		"'averageUtilization':50}}}]},'status':{'currentMetrics':[{'type':'Resource','resource':{'name':'cpu',"
		"'current':{'averageUtilization':33}}}]}}");
	c = cells_of(&strategy_hpa, o, now);
	assert_string_equal(cell_s(c, col(&strategy_hpa, "Targets")), "cpu: 33%/50%");
	json_decref(c);
	json_decref(o);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_defaults),
		cmocka_unit_test(test_validate),
		cmocka_unit_test(test_cells),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
