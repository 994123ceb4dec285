/* Pod strategy: defaults, create status, validation, update rules, printer cells. */
#include "kinds_test.h"
#include "ursa/kinds.h"

#define NOW "2024-05-01T12:00:00Z"

static json_t *pod(const char *spec)
{
	json_t *p = J("{'apiVersion':'v1','kind':'Pod','metadata':{'name':'web','namespace':'default',"
		      "'creationTimestamp':'2024-05-01T11:55:00Z'}}");
	json_object_set_new(p, "spec", J(spec));
	return p;
}

static void test_defaults(void **state)
{
	json_t *p = pod("{'containers':[{'name':'a','image':'nginx'},{'name':'b','image':'nginx:1.25',"
			"'ports':[{'containerPort':80}]},{'name':'c','image':'reg:5000/x'}]}");
	struct field_errors e = run_validate(&strategy_pod, p, NULL);
	expect_no_errors(&e);
	json_t *s = json_object_get(p, "spec");
	assert_string_equal(json_str(s, "restartPolicy"), "Always");
	assert_string_equal(json_str(s, "dnsPolicy"), "ClusterFirst");
	assert_string_equal(json_str(s, "schedulerName"), "default-scheduler");
	assert_string_equal(json_str(s, "serviceAccountName"), "default");
	assert_string_equal(json_str(s, "serviceAccount"), "default");
	assert_int_equal(int_at(p, "spec.terminationGracePeriodSeconds", -1), 30);
	assert_int_equal(int_at(p, "spec.priority", -1), 0);
	assert_true(json_is_true(json_object_get(s, "enableServiceLinks")));
	assert_true(json_is_object(json_object_get(s, "securityContext")));
	json_t *cs = json_object_get(s, "containers");
	assert_string_equal(json_str(json_array_get(cs, 0), "imagePullPolicy"), "Always");
	assert_string_equal(json_str(json_array_get(cs, 1), "imagePullPolicy"), "IfNotPresent");
	assert_string_equal(json_str(json_array_get(cs, 2), "imagePullPolicy"), "Always"); /* port, not tag */
	assert_string_equal(json_str(json_array_get(cs, 0), "terminationMessagePath"), "/dev/termination-log");
	assert_string_equal(json_str(json_array_get(cs, 0), "terminationMessagePolicy"), "File");
	assert_true(json_is_object(json_object_get(json_array_get(cs, 0), "resources")));
	assert_string_equal(json_str(json_array_get(json_object_get(json_array_get(cs, 1), "ports"), 0), "protocol"),
			    "TCP");
	json_t *tols = json_object_get(s, "tolerations");
	assert_int_equal(json_array_size(tols), 2);
	assert_string_equal(json_str(json_array_get(tols, 0), "key"), "node.kubernetes.io/not-ready");
	assert_string_equal(json_str(json_array_get(tols, 1), "key"), "node.kubernetes.io/unreachable");
	assert_string_equal(json_str(json_array_get(tols, 1), "effect"), "NoExecute");
	assert_int_equal(int_at(json_array_get(tols, 1), "tolerationSeconds", 0), 300);
	assert_string_equal(json_path_str(p, "status.phase"), "Pending");
	assert_string_equal(json_path_str(p, "status.qosClass"), "BestEffort");

	/* defaults are idempotent: a second pass adds nothing */
	json_t *copy = json_deep_copy(p);
	strategy_pod.defaults(copy);
	assert_true(json_equal(copy, p));
	json_decref(copy);
	json_decref(p);
}

static void test_existing_toleration_kept(void **state)
{
	json_t *p = pod("{'containers':[{'name':'a','image':'x'}],'tolerations':[{'operator':'Exists'}]}");
	struct field_errors e = run_validate(&strategy_pod, p, NULL);
	expect_no_errors(&e);
	assert_int_equal(json_array_size(json_path(p, "spec.tolerations")), 1);
	json_decref(p);
}

static void test_qos(void **state)
{
	json_t *g = pod("{'containers':[{'name':'a','image':'x','resources':{'limits':{'cpu':'500m',"
			"'memory':'1Gi'}}}]}");
	json_t *b = pod("{'containers':[{'name':'a','image':'x','resources':{'requests':{'cpu':'0.5'},"
			"'limits':{'cpu':'1','memory':'1Gi'}}}]}");
	json_t *g2 = pod("{'containers':[{'name':'a','image':'x','resources':{'requests':{'cpu':'0.5',"
			 "'memory':'1024Mi'},'limits':{'cpu':'500m','memory':'1Gi'}}}]}");
	struct field_errors e1 = run_validate(&strategy_pod, g, NULL), e2 = run_validate(&strategy_pod, b, NULL);
	struct field_errors e3 = run_validate(&strategy_pod, g2, NULL);
	expect_no_errors(&e1);
	expect_no_errors(&e2);
	expect_no_errors(&e3);
	/* limits only: requests are copied from limits, so Guaranteed */
	assert_string_equal(json_path_str(g, "status.qosClass"), "Guaranteed");
	assert_string_equal(json_string_value(json_path(json_array_get(json_path(g, "spec.containers"), 0),
							"resources.requests.cpu")), "500m");
	assert_string_equal(json_path_str(b, "status.qosClass"), "Burstable");
	assert_string_equal(json_path_str(g2, "status.qosClass"), "Guaranteed");
	json_decref(g);
	json_decref(b);
	json_decref(g2);
}

static void test_quantity(void **state)
{
	long long m;
	assert_int_equal(quantity_parse_milli("100m", &m), 0);
	assert_int_equal(m, 100);
	assert_int_equal(quantity_parse_milli("0.1", &m), 0);
	assert_int_equal(m, 100);
	assert_int_equal(quantity_parse_milli("1Ki", &m), 0);
	assert_int_equal(m, 1024000);
	assert_int_equal(quantity_parse_milli("2e3", &m), 0);
	assert_int_equal(m, 2000000);
	assert_int_equal(quantity_parse_milli("1.5m", &m), 0);
	assert_int_equal(m, 2); /* rounded up */
	assert_int_equal(quantity_parse_milli("-1", &m), 0);
	assert_int_equal(m, -1000);
	assert_int_equal(quantity_parse_milli("999999999999999999999999Ei", &m), 0);
	assert_true(m == INT64_MAX);
	assert_int_equal(quantity_parse_milli("1.2.3", &m), -1);
	assert_int_equal(quantity_parse_milli("abc", &m), -1);
	assert_int_equal(quantity_parse_milli("1Qi", &m), -1);
	assert_int_equal(quantity_parse_milli("", &m), -1);
}

static void test_validation(void **state)
{
	json_t *p = pod("{'containers':[{'name':'Bad_Name','image':'x'},{'name':'b'},{'name':'b','image':'y',"
			"'ports':[{'containerPort':70000}],'resources':{'requests':{'cpu':'2'},'limits':{'cpu':'1'}}}],"
			"'restartPolicy':'Sometimes','volumes':[{'name':'v'}]}");
	json_t *c2 = json_array_get(json_path(p, "spec.containers"), 2);
	json_object_set_new(c2, "volumeMounts", J("[{'name':'nope','mountPath':'/x'}]"));
	struct field_errors e = run_validate(&strategy_pod, p, NULL);
	const char *msg = expect_cause(&e, "spec.containers[0].name", "FieldValueInvalid");
	assert_non_null(strstr(msg, "Invalid value: \"Bad_Name\": a lowercase RFC 1123 label"));
	expect_cause(&e, "spec.containers[1].image", "FieldValueRequired");
	msg = expect_cause(&e, "spec.containers[2].name", "FieldValueDuplicate");
	assert_string_equal(msg, "Duplicate value: \"b\"");
	expect_cause(&e, "spec.containers[2].ports[0].containerPort", "FieldValueInvalid");
	expect_cause(&e, "spec.containers[2].resources.requests[cpu]", "FieldValueInvalid");
	expect_cause(&e, "spec.containers[2].volumeMounts[0].name", "FieldValueNotFound");
	msg = expect_cause(&e, "spec.restartPolicy", "FieldValueNotSupported");
	assert_string_equal(msg, "Unsupported value: \"Sometimes\": supported values: \"Always\", \"OnFailure\", "
				 "\"Never\"");
	field_errors_release(&e);
	json_decref(p);

	p = pod("{'containers':[]}");
	e = run_validate(&strategy_pod, p, NULL);
	assert_string_equal(expect_cause(&e, "spec.containers", "FieldValueRequired"), "Required value");
	field_errors_release(&e);
	json_decref(p);
}

static void test_update_rules(void **state)
{
	json_t *old = pod("{'containers':[{'name':'a','image':'nginx:1'}]}");
	struct field_errors e = run_validate(&strategy_pod, old, NULL);
	expect_no_errors(&e);

	/* image change and an added toleration are allowed */
	json_t *now = json_deep_copy(old);
	json_object_set_new(json_array_get(json_path(now, "spec.containers"), 0), "image", json_string("nginx:2"));
	json_array_append_new(json_path(now, "spec.tolerations"), J("{'key':'k','operator':'Exists'}"));
	e = run_validate(&strategy_pod, now, old);
	expect_no_errors(&e);
	json_decref(now);

	/* anything else is forbidden */
	now = json_deep_copy(old);
	json_object_set_new(json_object_get(now, "spec"), "restartPolicy", json_string("Never"));
	e = run_validate(&strategy_pod, now, old);
	const char *msg = expect_cause(&e, "spec", "FieldValueForbidden");
	assert_non_null(strstr(msg, "pod updates may not change fields other than"));
	field_errors_release(&e);
	json_decref(now);

	/* a toleration may not be removed (the admission defaults would come back, so use another) */
	json_array_append_new(json_path(old, "spec.tolerations"), J("{'key':'k','operator':'Exists'}"));
	now = json_deep_copy(old);
	json_array_remove(json_path(now, "spec.tolerations"), 2);
	e = run_validate(&strategy_pod, now, old);
	expect_cause(&e, "spec.tolerations", "FieldValueForbidden");
	field_errors_release(&e);
	json_decref(now);
	json_decref(old);
}

static void test_cells_ready_and_restarts(void **state)
{
	json_t *p = pod("{'containers':[{'name':'a','image':'x'},{'name':'b','image':'y'}],'nodeName':'n1'}");
	json_object_set_new(p, "status", J("{'phase':'Running','podIP':'10.0.0.5','containerStatuses':["
					   "{'name':'a','ready':true,'restartCount':2,'state':{'running':{}},"
					   "'lastState':{'terminated':{'exitCode':1,'finishedAt':'2024-05-01T11:55:00Z'}}},"
					   "{'name':'b','ready':false,'restartCount':0,'state':{'running':{}}}]}"));
	json_t *cells = cells_of(&strategy_pod, p, T(NOW));
	assert_string_equal(cell_s(cells, 0), "web");
	assert_string_equal(cell_s(cells, col(&strategy_pod, "Ready")), "1/2");
	assert_string_equal(cell_s(cells, col(&strategy_pod, "Status")), "Running");
	assert_string_equal(cell_s(cells, col(&strategy_pod, "Restarts")), "2 (5m ago)");
	assert_string_equal(cell_s(cells, col(&strategy_pod, "Age")), "5m");
	assert_string_equal(cell_s(cells, col(&strategy_pod, "IP")), "10.0.0.5");
	assert_string_equal(cell_s(cells, col(&strategy_pod, "Node")), "n1");
	assert_string_equal(cell_s(cells, col(&strategy_pod, "Nominated Node")), "<none>");
	assert_string_equal(cell_s(cells, col(&strategy_pod, "Readiness Gates")), "<none>");
	json_decref(cells);
	json_decref(p);
}

static void test_cells_status_reasons(void **state)
{
	json_t *p = pod("{'containers':[{'name':'a','image':'x'}]}");
	json_object_set_new(p, "status", J("{'phase':'Pending','containerStatuses':[{'name':'a','ready':false,"
					   "'restartCount':0,'state':{'waiting':{'reason':'ContainerCreating'}}}]}"));
	json_t *cells = cells_of(&strategy_pod, p, T(NOW));
	assert_string_equal(cell_s(cells, 2), "ContainerCreating");
	assert_string_equal(cell_s(cells, 1), "0/1");
	assert_string_equal(cell_s(cells, 3), "0");
	json_decref(cells);

	/* terminating wins over the container state */
	json_object_set_new(json_object_get(p, "metadata"), "deletionTimestamp", json_string(NOW));
	cells = cells_of(&strategy_pod, p, T(NOW));
	assert_string_equal(cell_s(cells, 2), "Terminating");
	json_decref(cells);

	/* terminated without reason */
	json_object_del(json_object_get(p, "metadata"), "deletionTimestamp");
	json_object_set_new(p, "status", J("{'phase':'Failed','containerStatuses':[{'name':'a','ready':false,"
					   "'restartCount':0,'state':{'terminated':{'exitCode':137,'signal':9}}}]}"));
	cells = cells_of(&strategy_pod, p, T(NOW));
	assert_string_equal(cell_s(cells, 2), "Signal:9");
	json_decref(cells);

	/* init containers still running */
	json_object_set_new(json_object_get(p, "spec"), "initContainers", J("[{'name':'i1','image':'x'},"
									    "{'name':'i2','image':'x'}]"));
	json_object_set_new(p, "status", J("{'phase':'Pending','initContainerStatuses':["
					   "{'name':'i1','ready':false,'restartCount':0,'state':{'terminated':{'exitCode':0}}},"
					   "{'name':'i2','ready':false,'restartCount':0,'state':{'running':{}}}]}"));
	cells = cells_of(&strategy_pod, p, T(NOW));
	assert_string_equal(cell_s(cells, 2), "Init:1/2");
	json_decref(cells);

	/* no status at all: phase from nothing is "" and age unknown without a timestamp */
	json_object_del(p, "status");
	json_object_del(json_object_get(p, "metadata"), "creationTimestamp");
	cells = cells_of(&strategy_pod, p, T(NOW));
	assert_string_equal(cell_s(cells, 2), "");
	assert_string_equal(cell_s(cells, 4), "<unknown>");
	json_decref(cells);
	json_decref(p);
}

static void test_columns_and_fields(void **state)
{
	static const char *const names[] = { "Name", "Ready", "Status", "Restarts", "Age", "IP", "Node",
					     "Nominated Node", "Readiness Gates" };
	assert_int_equal(strategy_pod.ncolumns, 9);
	for (size_t i = 0; i < 9; i++) {
		assert_string_equal(strategy_pod.columns[i].name, names[i]);
		assert_int_equal(strategy_pod.columns[i].priority, i < 5 ? 0 : 1);
	}
	assert_string_equal(strategy_pod.columns[0].format, "name");
	bool found = false;
	for (size_t i = 0; i < strategy_pod.nfields; i++)
		found |= !strcmp(strategy_pod.fields[i].label, "spec.nodeName");
	assert_true(found);
	assert_int_equal(strategy_pod.nfields, 8);
}

static void test_conditions_not_ready(void **state)
{
	(void)state;
	json_t *p = J("{'status':{'conditions':[{'type':'PodScheduled','status':'True'},"
		      "{'type':'Ready','status':'True','reason':'x'},{'type':'ContainersReady','status':'Unknown'}]}}");
	json_t *c = pod_conditions_not_ready(p, "the node is gone", 0);
	assert_non_null(c);
	assert_int_equal(json_array_size(c), 3);
	assert_string_equal(json_str(json_array_get(c, 0), "status"), "True"); /* others untouched */
	assert_null(json_str(json_array_get(c, 0), "reason"));
	for (size_t i = 1; i < 3; i++) {
		const json_t *x = json_array_get(c, i);
		assert_string_equal(json_str(x, "status"), "False");
		assert_string_equal(json_str(x, "reason"), "NodeNotReady");
		assert_string_equal(json_str(x, "message"), "the node is gone");
		assert_string_equal(json_str(x, "lastTransitionTime"), "1970-01-01T00:00:00Z");
	}
	/* the pod itself is not changed */
	assert_string_equal(json_str(json_array_get(json_path(p, "status.conditions"), 1), "status"), "True");
	/* once both are False there is nothing to write */
	json_object_set(json_object_get(p, "status"), "conditions", c);
	assert_null(pod_conditions_not_ready(p, NULL, 0));
	json_decref(c);
	json_decref(p);
	/* without a message none is set; a pod without conditions has nothing to write */
	p = J("{'status':{'conditions':[{'type':'Ready','status':'True'}]}}");
	c = pod_conditions_not_ready(p, NULL, 0);
	assert_null(json_str(json_array_get(c, 0), "message"));
	json_decref(c);
	json_decref(p);
	p = J("{'status':{}}");
	assert_null(pod_conditions_not_ready(p, "m", 0));
	json_decref(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_defaults),
		cmocka_unit_test(test_existing_toleration_kept),
		cmocka_unit_test(test_qos),
		cmocka_unit_test(test_quantity),
		cmocka_unit_test(test_validation),
		cmocka_unit_test(test_update_rules),
		cmocka_unit_test(test_cells_ready_and_restarts),
		cmocka_unit_test(test_cells_status_reasons),
		cmocka_unit_test(test_columns_and_fields),
		cmocka_unit_test(test_conditions_not_ready),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
