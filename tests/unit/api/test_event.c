/* event_new: the Event's shape (involved object, source, reporting fields, timestamps), its
 * collection path with and without a tenant, names that differ, cluster-scoped objects' events
 * in "default", and no Event for an object without a name. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "ursa/event.h"
#include "ursa/jsonutil.h"

static const struct event_source kubelet = { .component = "kubelet", .host = "az-1-host-1" };

static json_t *pod(void)
{
	return json_pack("{s:{s:s,s:s,s:s,s:s}}", "metadata", "name", "web-1", "namespace", "team", "tenant", "acme",
			 "uid", "u-1");
}

static void test_pod_event(void **state)
{
	(void)state;
	json_t *p = pod();
	char *path;
	json_t *ev = event_new(p, "v1", "Pod", "spec.containers{web}", "Warning", "Failed",
			       "Failed to pull image \"x\"", &kubelet, &path);
	assert_non_null(ev);
	assert_string_equal(path, "/api/v1/tenants/acme/namespaces/team/events");
	assert_string_equal(json_str(ev, "kind"), "Event");
	assert_string_equal(json_path_str(ev, "metadata.namespace"), "team");
	assert_string_equal(json_path_str(ev, "metadata.tenant"), "acme");
	assert_true(strncmp(json_path_str(ev, "metadata.name"), "web-1.", 6) == 0);
	assert_int_equal(strlen(json_path_str(ev, "metadata.name")), strlen("web-1.") + 16);
	assert_string_equal(json_path_str(ev, "involvedObject.kind"), "Pod");
	assert_string_equal(json_path_str(ev, "involvedObject.apiVersion"), "v1");
	assert_string_equal(json_path_str(ev, "involvedObject.name"), "web-1");
	assert_string_equal(json_path_str(ev, "involvedObject.namespace"), "team");
	assert_string_equal(json_path_str(ev, "involvedObject.uid"), "u-1");
	assert_string_equal(json_path_str(ev, "involvedObject.fieldPath"), "spec.containers{web}");
	assert_null(json_path(ev, "involvedObject.tenant")); /* ObjectReference has no tenant */
	assert_string_equal(json_str(ev, "type"), "Warning");
	assert_string_equal(json_str(ev, "reason"), "Failed");
	assert_string_equal(json_str(ev, "message"), "Failed to pull image \"x\"");
	assert_string_equal(json_path_str(ev, "source.component"), "kubelet");
	assert_string_equal(json_path_str(ev, "source.host"), "az-1-host-1");
	assert_string_equal(json_str(ev, "reportingComponent"), "kubelet");
	assert_string_equal(json_str(ev, "reportingInstance"), "az-1-host-1");
	const char *first = json_str(ev, "firstTimestamp");
	assert_non_null(first);
	assert_int_equal(strlen(first), strlen("2026-11-27T01:02:03Z"));
	assert_string_equal(first, json_str(ev, "lastTimestamp"));
	assert_int_equal(json_integer_value(json_object_get(ev, "count")), 1);
	json_decref(ev);
	free(path);
	json_decref(p);
}

static void test_kind_from_object_and_names_differ(void **state)
{
	(void)state;
	json_t *p = pod();
	json_object_set_new(p, "apiVersion", json_string("apps/v1"));
	json_object_set_new(p, "kind", json_string("Deployment"));
	const struct event_source cm = { .component = "controller-manager" };
	char *path1, *path2;
	json_t *a = event_new(p, NULL, NULL, NULL, "Normal", "ScalingReplicaSet", "x", &cm, &path1);
	json_t *b = event_new(p, NULL, NULL, NULL, "Normal", "ScalingReplicaSet", "x", &cm, &path2);
	assert_string_equal(json_path_str(a, "involvedObject.kind"), "Deployment");
	assert_string_equal(json_path_str(a, "involvedObject.apiVersion"), "apps/v1");
	assert_null(json_path(a, "source.host"));
	assert_null(json_object_get(a, "reportingInstance"));
	assert_null(json_path(a, "involvedObject.fieldPath"));
	assert_string_not_equal(json_path_str(a, "metadata.name"), json_path_str(b, "metadata.name"));
	json_decref(a);
	json_decref(b);
	free(path1);
	free(path2);
	json_decref(p);
}

static void test_cluster_scoped_and_untenanted(void **state)
{
	(void)state;
	json_t *node = json_pack("{s:{s:s}}", "metadata", "name", "az-1-host-1");
	char *path;
	json_t *ev = event_new(node, "v1", "Node", NULL, "Normal", "Starting", "Starting kubelet.", &kubelet, &path);
	assert_non_null(ev);
	assert_string_equal(path, "/api/v1/namespaces/default/events");
	assert_string_equal(json_path_str(ev, "metadata.namespace"), "default");
	assert_null(json_path(ev, "metadata.tenant"));
	assert_null(json_path(ev, "involvedObject.namespace"));
	json_decref(ev);
	free(path);
	json_decref(node);
}

static void test_no_name(void **state)
{
	(void)state;
	json_t *o = json_pack("{s:{s:s}}", "metadata", "namespace", "team");
	char *path = (char *)"unset";
	assert_null(event_new(o, "v1", "Pod", NULL, "Normal", "X", "y", &kubelet, &path));
	assert_null(path);
	json_decref(o);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pod_event),
		cmocka_unit_test(test_kind_from_object_and_names_differ),
		cmocka_unit_test(test_cluster_scoped_and_untenanted),
		cmocka_unit_test(test_no_name),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
