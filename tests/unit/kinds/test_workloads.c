/* Deployment, ReplicaSet and DaemonSet strategies. */
#include "kinds_test.h"
#include "ursa/kinds.h"

#define NOW "2024-05-01T12:00:00Z"

static json_t *workload(const char *kind, const char *spec)
{
	json_t *o = J("{'apiVersion':'apps/v1','metadata':{'name':'web','namespace':'default',"
		      "'creationTimestamp':'2024-05-01T09:00:00Z'}}");
	json_object_set_new(o, "kind", json_string(kind));
	json_object_set_new(o, "spec", J(spec));
	return o;
}

#define GOOD_SPEC "{'selector':{'matchLabels':{'app':'web'}},'template':{'metadata':{'labels':{'app':'web'}}," \
		  "'spec':{'containers':[{'name':'a','image':'nginx:1'},{'name':'b','image':'busybox'}]}}}"

static void test_deployment_defaults(void **state)
{
	json_t *d = workload("Deployment", GOOD_SPEC);
	struct field_errors e = run_validate(&strategy_deployment, d, NULL);
	expect_no_errors(&e);
	assert_int_equal(int_at(d, "spec.replicas", -1), 1);
	assert_int_equal(int_at(d, "spec.revisionHistoryLimit", -1), 10);
	assert_int_equal(int_at(d, "spec.progressDeadlineSeconds", -1), 600);
	assert_string_equal(json_path_str(d, "spec.strategy.type"), "RollingUpdate");
	assert_string_equal(json_path_str(d, "spec.strategy.rollingUpdate.maxSurge"), "25%");
	assert_string_equal(json_path_str(d, "spec.strategy.rollingUpdate.maxUnavailable"), "25%");
	/* template defaults, but no pod-only admission defaults */
	json_t *ts = json_path(d, "spec.template.spec");
	assert_string_equal(json_str(ts, "restartPolicy"), "Always");
	assert_string_equal(json_str(ts, "schedulerName"), "default-scheduler");
	assert_string_equal(json_str(json_array_get(json_object_get(ts, "containers"), 1), "imagePullPolicy"),
			    "Always");
	assert_null(json_object_get(ts, "serviceAccountName"));
	assert_null(json_object_get(ts, "tolerations"));
	assert_null(json_object_get(ts, "enableServiceLinks"));
	assert_true(json_is_object(json_object_get(d, "status")));
	assert_int_equal(json_object_size(json_object_get(d, "status")), 0);
	json_decref(d);
}

static void test_deployment_validation(void **state)
{
	json_t *d = workload("Deployment", "{'replicas':-1,'selector':{'matchLabels':{'app':'other'}},"
				       "'template':{'metadata':{'labels':{'app':'web'}},'spec':{'containers':[{'name':'a'}],"
				       "'restartPolicy':'Never'}}}");
	struct field_errors e = run_validate(&strategy_deployment, d, NULL);
	const char *msg = expect_cause(&e, "spec.replicas", "FieldValueInvalid");
	assert_string_equal(msg, "Invalid value: -1: must be greater than or equal to 0");
	msg = expect_cause(&e, "spec.template.metadata.labels", "FieldValueInvalid");
	assert_non_null(strstr(msg, "`selector` does not match template `labels`"));
	expect_cause(&e, "spec.template.spec.restartPolicy", "FieldValueNotSupported");
	/* images are optional in templates */
	assert_null(cause_at(&e, "spec.template.spec.containers[0].image"));
	field_errors_release(&e);
	json_decref(d);

	d = workload("Deployment", "{'template':{'spec':{'containers':[]}}}");
	e = run_validate(&strategy_deployment, d, NULL);
	expect_cause(&e, "spec.selector", "FieldValueRequired");
	expect_cause(&e, "spec.template.spec.containers", "FieldValueRequired");
	field_errors_release(&e);
	json_decref(d);

	d = workload("Deployment", "{'selector':{},'template':{'spec':{'containers':[{'name':'a','image':'x'}]}},"
				   "'strategy':{'type':'RollingUpdate','rollingUpdate':{'maxSurge':0,'maxUnavailable':'0%'}}}");
	e = run_validate(&strategy_deployment, d, NULL);
	msg = expect_cause(&e, "spec.selector", "FieldValueInvalid");
	assert_non_null(strstr(msg, "empty selector is invalid for deployment"));
	expect_cause(&e, "spec.strategy.rollingUpdate.maxUnavailable", "FieldValueInvalid");
	field_errors_release(&e);
	json_decref(d);
}

static void test_selector_immutable(void **state)
{
	json_t *old = workload("Deployment", GOOD_SPEC);
	struct field_errors e = run_validate(&strategy_deployment, old, NULL);
	expect_no_errors(&e);
	json_t *now = json_deep_copy(old);
	json_object_set_new(json_path(now, "spec.selector.matchLabels"), "tier", json_string("x"));
	json_object_set_new(json_path(now, "spec.template.metadata.labels"), "tier", json_string("x"));
	e = run_validate(&strategy_deployment, now, old);
	const char *msg = expect_cause(&e, "spec.selector", "FieldValueInvalid");
	assert_non_null(strstr(msg, "field is immutable"));
	field_errors_release(&e);
	json_decref(now);
	/* scaling is fine */
	now = json_deep_copy(old);
	json_object_set_new(json_object_get(now, "spec"), "replicas", json_integer(5));
	e = run_validate(&strategy_deployment, now, old);
	expect_no_errors(&e);
	json_decref(now);
	json_decref(old);
}

static void test_deployment_cells(void **state)
{
	json_t *d = workload("Deployment", GOOD_SPEC);
	json_object_set_new(json_object_get(d, "spec"), "replicas", json_integer(3));
	json_object_set_new(d, "status", J("{'readyReplicas':2,'updatedReplicas':3,'availableReplicas':2}"));
	json_t *cells = cells_of(&strategy_deployment, d, T(NOW));
	assert_string_equal(cell_s(cells, 0), "web");
	assert_string_equal(cell_s(cells, 1), "2/3");
	assert_int_equal(cell_i(cells, 2), 3);
	assert_int_equal(cell_i(cells, 3), 2);
	assert_string_equal(cell_s(cells, 4), "3h");
	assert_string_equal(cell_s(cells, 5), "a,b");
	assert_string_equal(cell_s(cells, 6), "nginx:1,busybox");
	assert_string_equal(cell_s(cells, 7), "app=web");
	assert_string_equal(strategy_deployment.columns[2].name, "Up-to-date");
	assert_int_equal(strategy_deployment.columns[5].priority, 1);
	json_decref(cells);
	json_decref(d);
}

static void test_replicaset(void **state)
{
	json_t *rs = workload("ReplicaSet", GOOD_SPEC);
	struct field_errors e = run_validate(&strategy_replicaset, rs, NULL);
	expect_no_errors(&e);
	assert_int_equal(int_at(rs, "spec.replicas", -1), 1);
	assert_int_equal(int_at(rs, "status.replicas", -1), 0);
	json_object_set_new(rs, "status", J("{'replicas':1,'readyReplicas':1}"));
	json_t *cells = cells_of(&strategy_replicaset, rs, T(NOW));
	assert_int_equal(cell_i(cells, 1), 1);
	assert_int_equal(cell_i(cells, 2), 1);
	assert_int_equal(cell_i(cells, 3), 1);
	assert_string_equal(cell_s(cells, 7), "app=web");
	assert_string_equal(strategy_replicaset.columns[1].type, "integer");
	assert_string_equal(strategy_replicaset.fields[0].label, "status.replicas");
	json_decref(cells);
	json_decref(rs);
}

static void test_daemonset(void **state)
{
	json_t *ds = workload("DaemonSet", GOOD_SPEC);
	json_object_set_new(json_path(ds, "spec.template.spec"), "nodeSelector", J("{'zone':'b','disk':'ssd'}"));
	struct field_errors e = run_validate(&strategy_daemonset, ds, NULL);
	expect_no_errors(&e);
	assert_string_equal(json_path_str(ds, "spec.updateStrategy.type"), "RollingUpdate");
	assert_int_equal(int_at(ds, "spec.updateStrategy.rollingUpdate.maxUnavailable", -1), 1);
	assert_int_equal(int_at(ds, "status.numberMisscheduled", -1), 0);
	json_object_set_new(ds, "status", J("{'desiredNumberScheduled':3,'currentNumberScheduled':3,"
					    "'numberReady':2,'updatedNumberScheduled':3,'numberAvailable':2}"));
	json_t *cells = cells_of(&strategy_daemonset, ds, T(NOW));
	assert_int_equal(cell_i(cells, 1), 3);
	assert_int_equal(cell_i(cells, 3), 2);
	assert_int_equal(cell_i(cells, 5), 2);
	assert_string_equal(cell_s(cells, 6), "disk=ssd,zone=b");
	assert_string_equal(strategy_daemonset.columns[6].name, "Node Selector");
	json_decref(cells);

	json_object_set_new(json_object_get(ds, "spec"), "selector", json_null());
	e = run_validate(&strategy_daemonset, ds, NULL);
	expect_cause(&e, "spec.selector", "FieldValueRequired");
	field_errors_release(&e);
	json_decref(ds);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_deployment_defaults),
		cmocka_unit_test(test_deployment_validation),
		cmocka_unit_test(test_selector_immutable),
		cmocka_unit_test(test_deployment_cells),
		cmocka_unit_test(test_replicaset),
		cmocka_unit_test(test_daemonset),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
