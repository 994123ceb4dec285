/* Namespace, Tenant, ConfigMap, Secret, ServiceAccount, Event, Service, Lease and Node strategies. */
#include "kinds_test.h"
#include "ursa/kinds.h"

#define NOW "2024-05-01T12:00:00Z"

static json_t *obj(const char *body)
{
	json_t *o = J(body);
	json_t *meta = json_object_get(o, "metadata");
	if (!meta) {
		meta = J("{'name':'x','namespace':'default'}");
		json_object_set_new(o, "metadata", meta);
	}
	json_object_set_new(meta, "creationTimestamp", json_string("2024-05-01T11:59:30Z"));
	return o;
}

static void test_namespace_and_tenant(void **state)
{
	json_t *ns = obj("{'metadata':{'name':'team-a'}}");
	struct field_errors e = run_validate(&strategy_namespace, ns, NULL);
	expect_no_errors(&e);
	assert_string_equal(json_path_str(ns, "status.phase"), "Active");
	assert_string_equal(json_string_value(json_array_get(json_path(ns, "spec.finalizers"), 0)), "kubernetes");
	assert_string_equal(json_str(json_path(ns, "metadata.labels"), "kubernetes.io/metadata.name"), "team-a");
	json_t *cells = cells_of(&strategy_namespace, ns, T(NOW));
	assert_string_equal(cell_s(cells, 0), "team-a");
	assert_string_equal(cell_s(cells, 1), "Active");
	assert_string_equal(cell_s(cells, 2), "30s");
	json_decref(cells);
	/* a finalize that empties the list keeps it empty on later updates */
	json_object_set_new(json_object_get(ns, "spec"), "finalizers", json_array());
	strategy_namespace.defaults(ns);
	assert_int_equal(json_array_size(json_path(ns, "spec.finalizers")), 0);
	json_decref(ns);

	json_t *t = obj("{'metadata':{'name':'acme'},'spec':{'storageClusterId':'1'}}");
	e = run_validate(&strategy_tenant, t, NULL);
	expect_no_errors(&e);
	assert_string_equal(json_path_str(t, "status.phase"), "Active");
	assert_string_equal(json_path_str(t, "spec.storageClusterId"), "1");
	cells = cells_of(&strategy_tenant, t, T(NOW));
	assert_string_equal(cell_s(cells, 1), "Active");
	json_decref(cells);
	json_object_set_new(json_object_get(t, "spec"), "storageClusterId", json_integer(1));
	e = run_validate(&strategy_tenant, t, NULL);
	expect_cause(&e, "spec.storageClusterId", "FieldValueTypeInvalid");
	field_errors_release(&e);
	json_decref(t);
}

static void test_configmap(void **state)
{
	json_t *cm = obj("{'data':{'a.conf':'x','b':'y'},'binaryData':{'c':'aGk='}}");
	struct field_errors e = run_validate(&strategy_configmap, cm, NULL);
	expect_no_errors(&e);
	json_t *cells = cells_of(&strategy_configmap, cm, T(NOW));
	assert_int_equal(cell_i(cells, 1), 3);
	json_decref(cells);
	json_decref(cm);

	cm = obj("{'data':{'bad key':'x','..x':'y','ok':'z'},'binaryData':{'ok':'%%%'}}");
	e = run_validate(&strategy_configmap, cm, NULL);
	const char *msg = expect_cause(&e, "data[bad key]", "FieldValueInvalid");
	assert_non_null(strstr(msg, "a valid config key must consist of alphanumeric characters"));
	assert_non_null(strstr(expect_cause(&e, "data[..x]", "FieldValueInvalid"), "must not start with '..'"));
	expect_cause(&e, "binaryData[ok]", "FieldValueDuplicate");
	field_errors_release(&e);
	json_decref(cm);

	/* immutable configmaps keep their data */
	json_t *old = obj("{'data':{'a':'1'},'immutable':true}");
	json_t *now = obj("{'data':{'a':'2'},'immutable':true}");
	e = run_validate(&strategy_configmap, now, old);
	expect_cause(&e, "data", "FieldValueForbidden");
	field_errors_release(&e);
	json_decref(old);
	json_decref(now);
}

static void test_secret(void **state)
{
	json_t *s = obj("{'stringData':{'user':'admin'},'data':{'pw':'c2VjcmV0'}}");
	struct field_errors e = run_validate(&strategy_secret, s, NULL);
	expect_no_errors(&e);
	assert_string_equal(json_str(s, "type"), "Opaque");
	assert_string_equal(json_path_str(s, "data.user"), "YWRtaW4=");
	assert_null(json_object_get(s, "stringData"));
	json_t *cells = cells_of(&strategy_secret, s, T(NOW));
	assert_string_equal(cell_s(cells, 1), "Opaque");
	assert_int_equal(cell_i(cells, 2), 2);
	json_decref(cells);
	assert_string_equal(strategy_secret.fields[0].label, "type");

	json_t *now = json_deep_copy(s);
	json_object_set_new(now, "type", json_string("kubernetes.io/tls"));
	e = run_validate(&strategy_secret, now, s);
	expect_cause(&e, "type", "FieldValueInvalid");
	expect_cause(&e, "data[tls.crt]", "FieldValueRequired");
	field_errors_release(&e);
	json_decref(now);
	json_decref(s);

	s = obj("{'data':{'k':'not base64!'}}");
	e = run_validate(&strategy_secret, s, NULL);
	expect_cause(&e, "data[k]", "FieldValueInvalid");
	field_errors_release(&e);
	json_decref(s);
}

static void test_serviceaccount_and_lease(void **state)
{
	json_t *sa = obj("{'secrets':[{'name':'t1'},{'name':'t2'}]}");
	json_t *cells = cells_of(&strategy_serviceaccount, sa, T(NOW));
	assert_int_equal(cell_i(cells, 1), 2);
	assert_string_equal(strategy_serviceaccount.columns[1].name, "Secrets");
	json_decref(cells);
	json_decref(sa);

	json_t *l = obj("{'spec':{'holderIdentity':'node-1','leaseDurationSeconds':0}}");
	struct field_errors e = run_validate(&strategy_lease, l, NULL);
	assert_string_equal(expect_cause(&e, "spec.leaseDurationSeconds", "FieldValueInvalid"),
			    "Invalid value: 0: must be greater than 0");
	field_errors_release(&e);
	cells = cells_of(&strategy_lease, l, T(NOW));
	assert_string_equal(cell_s(cells, 1), "node-1");
	json_decref(cells);
	json_object_del(json_object_get(l, "spec"), "holderIdentity");
	cells = cells_of(&strategy_lease, l, T(NOW));
	assert_string_equal(cell_s(cells, 1), "");
	json_decref(cells);
	json_decref(l);
}

static void test_event(void **state)
{
	json_t *ev = obj("{'metadata':{'name':'web.17a','namespace':'default'},'involvedObject':{'kind':'Pod',"
			 "'name':'web','namespace':'default','fieldPath':'spec.containers{a}'},'reason':'Pulled',"
			 "'message':'  Pulled image  \\n','type':'Normal','source':{'component':'kubelet','host':'n1'},"
			 "'firstTimestamp':'2024-05-01T11:00:00Z','lastTimestamp':'2024-05-01T11:58:00Z','count':4}");
	struct field_errors e = run_validate(&strategy_event, ev, NULL);
	expect_no_errors(&e);
	json_t *cells = cells_of(&strategy_event, ev, T(NOW));
	const struct api_strategy *s = &strategy_event;
	assert_string_equal(cell_s(cells, col(s, "Last Seen")), "2m");
	assert_string_equal(cell_s(cells, col(s, "Type")), "Normal");
	assert_string_equal(cell_s(cells, col(s, "Reason")), "Pulled");
	assert_string_equal(cell_s(cells, col(s, "Object")), "pod/web");
	assert_string_equal(cell_s(cells, col(s, "Subobject")), "spec.containers{a}");
	assert_string_equal(cell_s(cells, col(s, "Source")), "kubelet, n1");
	assert_string_equal(cell_s(cells, col(s, "Message")), "Pulled image");
	assert_string_equal(cell_s(cells, col(s, "First Seen")), "60m");
	assert_int_equal(cell_i(cells, col(s, "Count")), 4);
	assert_string_equal(cell_s(cells, col(s, "Name")), "web.17a");
	assert_string_equal(s->columns[0].name, "Last Seen");
	json_decref(cells);

	json_object_set_new(json_object_get(ev, "involvedObject"), "namespace", json_string("other"));
	e = run_validate(&strategy_event, ev, NULL);
	expect_cause(&e, "involvedObject.namespace", "FieldValueInvalid");
	field_errors_release(&e);
	json_object_del(ev, "involvedObject");
	e = run_validate(&strategy_event, ev, NULL);
	expect_cause(&e, "involvedObject", "FieldValueRequired");
	field_errors_release(&e);
	json_decref(ev);

	bool source = false;
	for (size_t i = 0; i < strategy_event.nfields; i++)
		if (!strcmp(strategy_event.fields[i].label, "source"))
			source = !strcmp(strategy_event.fields[i].path, "source.component");
	assert_true(source);
}

static void test_service(void **state)
{
	json_t *svc = obj("{'spec':{'selector':{'app':'web'},'ports':[{'port':80},{'name':'b','port':443,"
			  "'targetPort':'https'}],'clusterIP':'10.96.0.10','clusterIPs':['10.96.0.10']}}");
	struct field_errors e = run_validate(&strategy_service, svc, NULL);
	expect_cause(&e, "spec.ports[0].name", "FieldValueRequired"); /* names required with 2+ ports */
	field_errors_release(&e);
	json_object_set_new(json_array_get(json_path(svc, "spec.ports"), 0), "name", json_string("a"));
	e = run_validate(&strategy_service, svc, NULL);
	expect_no_errors(&e);
	json_t *p0 = json_array_get(json_path(svc, "spec.ports"), 0);
	assert_string_equal(json_path_str(svc, "spec.type"), "ClusterIP");
	assert_string_equal(json_path_str(svc, "spec.sessionAffinity"), "None");
	assert_string_equal(json_str(p0, "protocol"), "TCP");
	assert_int_equal(int_at(p0, "targetPort", 0), 80);
	json_t *cells = cells_of(&strategy_service, svc, T(NOW));
	assert_string_equal(cell_s(cells, 1), "ClusterIP");
	assert_string_equal(cell_s(cells, 2), "10.96.0.10");
	assert_string_equal(cell_s(cells, 3), "<none>");
	assert_string_equal(cell_s(cells, 4), "80/TCP,443/TCP");
	assert_string_equal(cell_s(cells, 6), "app=web");
	json_decref(cells);

	json_t *lb = obj("{'spec':{'type':'LoadBalancer','ports':[{'port':80,'nodePort':30080}]}}");
	e = run_validate(&strategy_service, lb, NULL);
	expect_no_errors(&e);
	cells = cells_of(&strategy_service, lb, T(NOW));
	assert_string_equal(cell_s(cells, 2), "<none>");
	assert_string_equal(cell_s(cells, 3), "<pending>");
	assert_string_equal(cell_s(cells, 4), "80:30080/TCP");
	assert_string_equal(cell_s(cells, 6), "<none>");
	json_decref(cells);
	json_decref(lb);

	json_t *now = json_deep_copy(svc);
	json_object_set_new(json_object_get(now, "spec"), "clusterIP", json_string("10.96.0.11"));
	json_object_set_new(json_object_get(now, "spec"), "type", json_string("Magic"));
	e = run_validate(&strategy_service, now, svc);
	expect_cause(&e, "spec.clusterIP", "FieldValueInvalid");
	expect_cause(&e, "spec.type", "FieldValueNotSupported");
	field_errors_release(&e);
	json_decref(now);
	json_decref(svc);
}

static void test_node(void **state)
{
	json_t *n = obj("{'metadata':{'name':'n1','labels':{'node-role.kubernetes.io/control-plane':'',"
			"'node-role.kubernetes.io/master':'','kubernetes.io/role':'master'}},'spec':{'unschedulable':true},"
			"'status':{'capacity':{'cpu':'4'},'conditions':[{'type':'Ready','status':'True'}],"
			"'addresses':[{'type':'InternalIP','address':'10.0.0.1'}],'nodeInfo':{'kubeletVersion':'v1.32.0',"
			"'osImage':'Debian','kernelVersion':'6.1','containerRuntimeVersion':'ursa://0.1'}}}");
	struct field_errors e = run_validate(&strategy_node, n, NULL);
	expect_no_errors(&e);
	assert_string_equal(json_path_str(n, "status.allocatable.cpu"), "4");
	json_t *cells = cells_of(&strategy_node, n, T(NOW));
	assert_string_equal(cell_s(cells, 1), "Ready,SchedulingDisabled");
	assert_string_equal(cell_s(cells, 2), "control-plane,master");
	assert_string_equal(cell_s(cells, 4), "v1.32.0");
	assert_string_equal(cell_s(cells, 5), "10.0.0.1");
	assert_string_equal(cell_s(cells, 6), "<none>");
	assert_string_equal(cell_s(cells, 7), "Debian");
	assert_string_equal(cell_s(cells, 9), "ursa://0.1");
	json_decref(cells);

	json_object_set_new(n, "status", J("{'conditions':[{'type':'Ready','status':'Unknown'}]}"));
	json_object_del(n, "spec");
	json_object_del(json_object_get(n, "metadata"), "labels");
	cells = cells_of(&strategy_node, n, T(NOW));
	assert_string_equal(cell_s(cells, 1), "NotReady");
	assert_string_equal(cell_s(cells, 2), "<none>");
	assert_string_equal(cell_s(cells, 8), "<unknown>");
	json_decref(cells);
	json_object_del(n, "status");
	cells = cells_of(&strategy_node, n, T(NOW));
	assert_string_equal(cell_s(cells, 1), "Unknown");
	json_decref(cells);

	json_object_set_new(n, "spec", J("{'taints':[{'key':'a','effect':'NoSchedule'},{'key':'a',"
					 "'effect':'NoSchedule'},{'key':'b','effect':'Sometimes'}]}"));
	e = run_validate(&strategy_node, n, NULL);
	expect_cause(&e, "spec.taints[1]", "FieldValueDuplicate");
	expect_cause(&e, "spec.taints[2].effect", "FieldValueNotSupported");
	field_errors_release(&e);
	json_decref(n);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_namespace_and_tenant),
		cmocka_unit_test(test_configmap),
		cmocka_unit_test(test_secret),
		cmocka_unit_test(test_serviceaccount_and_lease),
		cmocka_unit_test(test_event),
		cmocka_unit_test(test_service),
		cmocka_unit_test(test_node),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
