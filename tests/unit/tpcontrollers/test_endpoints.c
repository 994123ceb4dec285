/* Endpoint computation: a Service's Endpoints subsets and EndpointSlices from its pods. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "tpc.h"
#include "ursa/jsonutil.h"

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

#define SVC "{'metadata':{'name':'web','namespace':'default','uid':'u-svc','labels':{'tier':'front'}}," \
	    "'spec':{'selector':{'app':'web'},'ports':[{'name':'http','port':80,'targetPort':'http','protocol':'TCP'}," \
	    "{'name':'metrics','port':9000,'targetPort':9100,'protocol':'TCP'}]}}"

/* A pod named name at ip, ready or not, serving "http" on http_port (0: no such port). */
static json_t *pod(const char *name, const char *ip, bool ready, int http_port, bool terminating)
{
	json_t *p = J("{'metadata':{'namespace':'default','labels':{'app':'web'}},'spec':{'nodeName':'n1',"
		      "'containers':[{'name':'c','ports':[]}]},'status':{'phase':'Running','conditions':[]}}");
	json_object_set_new(json_object_get(p, "metadata"), "name", json_string(name));
	char uid[64];
	snprintf(uid, sizeof(uid), "uid-%s", name);
	json_object_set_new(json_object_get(p, "metadata"), "uid", json_string(uid));
	if (terminating)
		json_object_set_new(json_object_get(p, "metadata"), "deletionTimestamp", json_string("2024-01-01T00:00:00Z"));
	if (ip)
		json_object_set_new(json_object_get(p, "status"), "podIP", json_string(ip));
	json_array_append_new(json_path(p, "status.conditions"),
			      json_pack("{s:s,s:s}", "type", "Ready", "status", ready ? "True" : "False"));
	if (http_port)
		json_array_append_new(json_path(json_array_get(json_path(p, "spec.containers"), 0), "ports"),
				      json_pack("{s:s,s:i,s:s}", "name", "http", "containerPort", http_port, "protocol", "TCP"));
	return p;
}

static void test_selects_and_ports(void **state)
{
	(void)state;
	json_t *svc = J(SVC), *p = pod("a", "10.1.0.1", true, 8080, false);
	assert_true(tpc_service_selects(svc, p));
	json_object_set_new(json_path(p, "metadata.labels"), "app", json_string("db"));
	assert_false(tpc_service_selects(svc, p));
	json_t *nosel = J("{'spec':{'selector':{}}}");
	assert_false(tpc_service_selects(nosel, p));
	assert_true(tpc_service_has_selector(svc));
	assert_false(tpc_service_has_selector(nosel)); /* empty: none */
	json_t *bare = J("{'spec':{'ports':[{'port':80}]}}");
	assert_false(tpc_service_has_selector(bare)); /* absent: none */
	json_decref(bare);
	json_decref(p);
	p = pod("a", "10.1.0.1", true, 8080, false);
	json_t *ports = tpc_endpoint_ports(svc, p);
	json_t *want = J("[{'name':'http','port':8080,'protocol':'TCP'},{'name':'metrics','port':9100,'protocol':'TCP'}]");
	assert_true(json_equal(ports, want));
	json_decref(ports), json_decref(want), json_decref(p);
	p = pod("b", "10.1.0.2", true, 0, false); /* no port named http: only the numbered one */
	ports = tpc_endpoint_ports(svc, p);
	assert_int_equal(json_array_size(ports), 1);
	assert_int_equal(json_integer_value(json_object_get(json_array_get(ports, 0), "port")), 9100);
	json_decref(ports), json_decref(p), json_decref(svc), json_decref(nosel);
}

static void test_subsets(void **state)
{
	(void)state;
	json_t *svc = J(SVC), *pods = json_array();
	json_array_append_new(pods, pod("c", "10.1.0.3", true, 8080, false));
	json_array_append_new(pods, pod("a", "10.1.0.1", true, 8080, false));
	json_array_append_new(pods, pod("b", "10.1.0.2", false, 8080, false));  /* not ready */
	json_array_append_new(pods, pod("d", "10.1.0.4", true, 8080, true));    /* terminating: out */
	json_array_append_new(pods, pod("e", NULL, true, 8080, false));         /* no IP yet: out */
	json_array_append_new(pods, pod("f", "10.1.0.6", true, 7070, false));   /* http on another port */
	json_t *other = pod("g", "10.1.0.7", true, 8080, false);
	json_object_set_new(json_path(other, "metadata.labels"), "app", json_string("db"));
	json_array_append_new(pods, other);                                    /* not selected */
	json_t *done = pod("h", "10.1.0.8", true, 8080, false);
	json_object_set_new(json_object_get(done, "status"), "phase", json_string("Succeeded"));
	json_array_append_new(pods, done);                                     /* ended: out */
	json_t *ss = tpc_endpoints_subsets(svc, pods);
	assert_int_equal(json_array_size(ss), 2);
	json_t *s0 = json_array_get(ss, 0), *s1 = json_array_get(ss, 1);
	json_t *a0 = json_object_get(s0, "addresses");
	assert_int_equal(json_array_size(a0), 2);
	assert_string_equal(json_str(json_array_get(a0, 0), "ip"), "10.1.0.1");
	assert_string_equal(json_str(json_array_get(a0, 1), "ip"), "10.1.0.3");
	assert_string_equal(json_str(json_array_get(a0, 0), "nodeName"), "n1");
	json_t *ref = json_object_get(json_array_get(a0, 0), "targetRef");
	assert_string_equal(json_str(ref, "kind"), "Pod");
	assert_string_equal(json_str(ref, "name"), "a");
	assert_string_equal(json_str(ref, "uid"), "uid-a");
	json_t *nr = json_object_get(s0, "notReadyAddresses");
	assert_int_equal(json_array_size(nr), 1);
	assert_string_equal(json_str(json_array_get(nr, 0), "ip"), "10.1.0.2");
	assert_int_equal(json_integer_value(json_object_get(json_array_get(json_object_get(s0, "ports"), 0), "port")), 8080);
	assert_int_equal(json_array_size(json_object_get(s1, "addresses")), 1);
	assert_string_equal(json_str(json_array_get(json_object_get(s1, "addresses"), 0), "ip"), "10.1.0.6");
	assert_int_equal(json_integer_value(json_object_get(json_array_get(json_object_get(s1, "ports"), 0), "port")), 7070);
	json_decref(ss);
	/* publishNotReadyAddresses: everyone ready, terminating pods stay */
	json_object_set_new(json_object_get(svc, "spec"), "publishNotReadyAddresses", json_true());
	ss = tpc_endpoints_subsets(svc, pods);
	assert_int_equal(json_array_size(json_object_get(json_array_get(ss, 0), "addresses")), 4);
	assert_null(json_object_get(json_array_get(ss, 0), "notReadyAddresses"));
	json_decref(ss);
	/* no pods: no subsets */
	json_t *none = json_array();
	ss = tpc_endpoints_subsets(svc, none);
	assert_int_equal(json_array_size(ss), 0);
	json_decref(ss), json_decref(none), json_decref(pods), json_decref(svc);
}

static void test_headless_no_ports(void **state)
{
	(void)state;
	json_t *svc = J("{'metadata':{'name':'h','namespace':'default'},'spec':{'clusterIP':'None','selector':{'app':'web'}}}");
	json_t *pods = json_array();
	json_array_append_new(pods, pod("a", "10.1.0.1", true, 8080, false));
	json_t *ss = tpc_endpoints_subsets(svc, pods);
	assert_int_equal(json_array_size(ss), 1);
	assert_null(json_object_get(json_array_get(ss, 0), "ports"));
	assert_string_equal(json_str(json_array_get(json_object_get(json_array_get(ss, 0), "addresses"), 0), "ip"),
			    "10.1.0.1");
	json_decref(ss), json_decref(pods), json_decref(svc);
}

static void test_slices(void **state)
{
	(void)state;
	json_t *svc = J(SVC), *pods = json_array();
	json_array_append_new(pods, pod("a", "10.1.0.1", true, 8080, false));
	json_array_append_new(pods, pod("b", "10.1.0.2", false, 8080, false));
	json_array_append_new(pods, pod("d", "10.1.0.4", true, 8080, true));
	json_array_append_new(pods, pod("f", "10.1.0.6", true, 7070, false));
	json_t *sl = tpc_endpoint_slices(svc, pods);
	assert_int_equal(json_array_size(sl), 2);
	json_t *s = json_array_get(sl, 0);
	assert_string_equal(json_str(s, "addressType"), "IPv4");
	assert_string_equal(json_str(s, "kind"), "EndpointSlice");
	assert_string_equal(json_str(json_path(s, "metadata.labels"), TPC_SLICE_SERVICE_LABEL), "web");
	assert_string_equal(json_str(json_path(s, "metadata.labels"), TPC_SLICE_MANAGED_BY_LABEL), TPC_SLICE_MANAGER);
	assert_string_equal(json_str(json_path(s, "metadata.labels"), "tier"), "front");
	json_t *own = json_array_get(json_path(s, "metadata.ownerReferences"), 0);
	assert_string_equal(json_str(own, "kind"), "Service");
	assert_string_equal(json_str(own, "uid"), "u-svc");
	assert_true(json_is_true(json_object_get(own, "controller")));
	assert_true(!strncmp(json_path_str(s, "metadata.name"), "web-", 4));
	json_t *eps = json_object_get(s, "endpoints");
	assert_int_equal(json_array_size(eps), 3);
	/* a: ready; b: not ready, not serving; d: terminating, serving but not ready */
	json_t *c = json_object_get(json_array_get(eps, 0), "conditions");
	assert_true(json_is_true(json_object_get(c, "ready")) && json_is_true(json_object_get(c, "serving")) &&
		    json_is_false(json_object_get(c, "terminating")));
	c = json_object_get(json_array_get(eps, 1), "conditions");
	assert_true(json_is_false(json_object_get(c, "ready")) && json_is_false(json_object_get(c, "serving")));
	c = json_object_get(json_array_get(eps, 2), "conditions");
	assert_true(json_is_false(json_object_get(c, "ready")) && json_is_true(json_object_get(c, "serving")) &&
		    json_is_true(json_object_get(c, "terminating")));
	assert_string_equal(json_string_value(json_array_get(json_object_get(json_array_get(eps, 0), "addresses"), 0)),
			    "10.1.0.1");
	assert_string_equal(json_path_str(json_array_get(eps, 0), "targetRef.name"), "a");
	json_t *ports = json_object_get(s, "ports");
	assert_int_equal(json_integer_value(json_object_get(json_array_get(ports, 0), "port")), 8080);
	assert_string_equal(json_str(json_array_get(ports, 0), "name"), "http");
	json_t *s1 = json_array_get(sl, 1);
	assert_string_not_equal(json_path_str(s, "metadata.name"), json_path_str(s1, "metadata.name"));
	assert_int_equal(json_array_size(json_object_get(s1, "endpoints")), 1);
	/* the same input gives the same names (the controller updates in place) */
	json_t *again = tpc_endpoint_slices(svc, pods);
	assert_true(json_equal(sl, again));
	json_decref(again), json_decref(sl);
	/* no pods: one empty placeholder */
	json_t *none = json_array();
	sl = tpc_endpoint_slices(svc, none);
	assert_int_equal(json_array_size(sl), 1);
	assert_int_equal(json_array_size(json_object_get(json_array_get(sl, 0), "endpoints")), 0);
	json_decref(sl), json_decref(none);
	/* more than TPC_SLICE_MAX endpoints: chunks */
	json_t *many = json_array();
	for (int i = 0; i < TPC_SLICE_MAX + 5; i++) {
		char n[16], ip[32];
		snprintf(n, sizeof(n), "p%03d", i);
		snprintf(ip, sizeof(ip), "10.2.%d.%d", i / 250, i % 250 + 1);
		json_array_append_new(many, pod(n, ip, true, 8080, false));
	}
	sl = tpc_endpoint_slices(svc, many);
	assert_int_equal(json_array_size(sl), 2);
	assert_int_equal(json_array_size(json_object_get(json_array_get(sl, 0), "endpoints")), TPC_SLICE_MAX);
	assert_int_equal(json_array_size(json_object_get(json_array_get(sl, 1), "endpoints")), 5);
	json_decref(sl), json_decref(many), json_decref(pods), json_decref(svc);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_selects_and_ports), cmocka_unit_test(test_subsets),
		cmocka_unit_test(test_headless_no_ports), cmocka_unit_test(test_slices),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
