/* The gateway's routing decision table, row by row, including tenant names that broke
 * prefix-based routing elsewhere (system-x, allison, a, all). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>
#include "gw.h"
#include "ursa/errors.h"

static char *masters[] = { "system:masters" };
static char *sres[] = { "ursa:sre" };
#define SRE 2 /* row.admin: false = plain user, true = system:masters, SRE = ursa:sre */

static struct identity user(const char *tenant, int role)
{
	char **groups = role == SRE ? sres : role ? masters : NULL;
	return (struct identity){ .user = "u", .uid = "u", .tenant = (char *)tenant, .groups = groups,
				  .ngroups = role ? 1 : 0 };
}

struct row {
	const char *method, *path;
	const char *tenant; /* caller's tenant; NULL = unauthenticated */
	int admin;
	enum route_kind want;
	const char *want_tenant; /* RT_TENANT */
	int want_err;            /* RT_ERROR */
	const char *want_node;   /* RT_NODE */
};

static const struct row rows[] = {
	{ "GET", "/healthz", NULL, false, RT_LOCAL },
	{ "GET", "/api/v1/namespaces/default/pods", NULL, false, RT_ERROR, NULL, E_UNAUTHORIZED },
	{ "GET", "/api", "acme", false, RT_DISCOVERY },
	{ "GET", "/apis/apps/v1", "acme", false, RT_DISCOVERY },
	{ "GET", "/version", "acme", false, RT_DISCOVERY },
	{ "GET", "/openapi/v2", "acme", false, RT_DISCOVERY },
	{ "GET", "/metrics-nope", "acme", false, RT_ERROR, NULL, E_NOT_FOUND },
	/* short paths: the caller's tenant */
	{ "GET", "/api/v1/namespaces/default/pods", "acme", false, RT_TENANT, "acme" },
	{ "POST", "/apis/apps/v1/namespaces/ns1/deployments", "a", false, RT_TENANT, "a" },
	{ "GET", "/api/v1/namespaces/default/pods", "system", true, RT_TENANT, "system" },
	/* full paths: the path's tenant, isolated */
	{ "GET", "/api/v1/tenants/acme/namespaces/default/pods", "acme", false, RT_TENANT, "acme" },
	{ "GET", "/api/v1/tenants/acme/namespaces/default/pods", "other", false, RT_ERROR, NULL, E_FORBIDDEN },
	{ "GET", "/api/v1/tenants/system-x/namespaces/default/pods", "system-x", false, RT_TENANT, "system-x" },
	{ "GET", "/api/v1/tenants/system/namespaces/default/pods", "system-x", false, RT_ERROR, NULL, E_FORBIDDEN },
	{ "GET", "/api/v1/tenants/system-x/namespaces/default/pods", "system", false, RT_ERROR, NULL, E_FORBIDDEN },
	{ "GET", "/api/v1/tenants/allison/namespaces/default/pods", "allison", false, RT_TENANT, "allison" },
	{ "GET", "/api/v1/tenants/allison/namespaces/default/pods", "all", false, RT_ERROR, NULL, E_FORBIDDEN },
	{ "GET", "/api/v1/tenants/a/namespaces/default/pods", "a", false, RT_TENANT, "a" },
	{ "GET", "/api/v1/tenants/a/namespaces/default/pods", "allison", false, RT_ERROR, NULL, E_FORBIDDEN },
	{ "GET", "/api/v1/watch/tenants/acme/namespaces/default/pods", "acme", false, RT_TENANT, "acme" },
	{ "GET", "/api/v1/tenants/acme/namespaces/default/pods", "system", true, RT_TENANT, "acme" },
	/* tenant "all": admins list across partitions */
	{ "GET", "/api/v1/tenants/all/pods", "system", true, RT_ALL_TENANTS },
	{ "GET", "/api/v1/tenants/all/pods", "acme", false, RT_ERROR, NULL, E_FORBIDDEN },
	{ "DELETE", "/api/v1/tenants/all/namespaces/default/pods/x", "system", true, RT_ERROR, NULL, E_METHOD },
	/* tenant objects */
	{ "POST", "/api/v1/tenants", "system", true, RT_TENANT_CREATE },
	{ "POST", "/api/v1/tenants", "acme", false, RT_ERROR, NULL, E_FORBIDDEN },
	{ "POST", "/api/v1/tenants", "system", false, RT_ERROR, NULL, E_FORBIDDEN },
	{ "GET", "/api/v1/tenants", "system", true, RT_TENANT_LIST },
	{ "GET", "/api/v1/tenants", "acme", false, RT_ERROR, NULL, E_FORBIDDEN },
	{ "GET", "/api/v1/tenants/acme", "acme", false, RT_TENANT, "acme" },
	{ "DELETE", "/api/v1/tenants/acme", "acme", false, RT_ERROR, NULL, E_FORBIDDEN },
	{ "DELETE", "/api/v1/tenants/acme", "system", true, RT_TENANT, "acme" },
	{ "PUT", "/api/v1/tenants/system-x/finalize", "system", true, RT_TENANT, "system-x" },
	{ "GET", "/api/v1/tenants/allison", "all", false, RT_ERROR, NULL, E_FORBIDDEN },
	/* nodes and node leases: resource managers */
	{ "GET", "/api/v1/nodes", "system", true, RT_NODE_LIST },
	{ "GET", "/api/v1/nodes/az-1-host-1", "system", true, RT_NODE, NULL, 0, "az-1-host-1" },
	{ "PATCH", "/api/v1/nodes/n1/status", "system", true, RT_NODE, NULL, 0, "n1" },
	{ "POST", "/api/v1/nodes", "system", true, RT_NODE_CREATE },
	{ "GET", "/api/v1/nodes", "acme", false, RT_ERROR, NULL, E_FORBIDDEN },
	{ "GET", "/api/v1/nodes", "system-x", false, RT_ERROR, NULL, E_FORBIDDEN },
	/* NodeMetrics live with the nodes; PodMetrics with the tenant's pods */
	{ "GET", "/apis/metrics.k8s.io/v1beta1/nodes", "system", true, RT_NODE_LIST },
	{ "GET", "/apis/metrics.k8s.io/v1beta1/nodes/n1", "system", true, RT_NODE, NULL, 0, "n1" },
	{ "GET", "/apis/metrics.k8s.io/v1beta1/nodes", "acme", false, RT_ERROR, NULL, E_FORBIDDEN },
	{ "GET", "/apis/metrics.k8s.io/v1beta1/namespaces/default/pods", "acme", false, RT_TENANT, "acme" },
	{ "GET", "/apis/metrics.k8s.io/v1beta1/tenants/acme/namespaces/default/pods/p", "beta", false, RT_ERROR, NULL,
	  E_FORBIDDEN },
	{ "PUT", "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/n1", "system", true, RT_NODE, NULL, 0, "n1" },
	{ "PUT", "/apis/coordination.k8s.io/v1/tenants/system/namespaces/kube-node-lease/leases/n1", "system", true,
	  RT_NODE, NULL, 0, "n1" },
	{ "GET", "/apis/coordination.k8s.io/v1/tenants/system/namespaces/kube-node-lease/leases", "system", true, RT_NODE_LIST },
	/* the same namespace name in another tenant is an ordinary tenant resource */
	{ "PUT", "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/n1", "acme", false, RT_TENANT, "acme" },
	{ "PUT", "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/ctl", "system", true, RT_TENANT, "system" },
	/* read-only SREs (ursa:sre of tenant system): every read, no write */
	{ "GET", "/api/v1/tenants/acme/namespaces/default/pods", "system", SRE, RT_TENANT, "acme" },
	{ "GET", "/api/v1/tenants/allison/namespaces/default/pods/p/log", "system", SRE, RT_TENANT, "allison" },
	{ "DELETE", "/api/v1/tenants/acme/namespaces/default/pods/p", "system", SRE, RT_ERROR, NULL, E_FORBIDDEN },
	{ "POST", "/api/v1/namespaces/default/pods", "system", SRE, RT_ERROR, NULL, E_FORBIDDEN },
	{ "GET", "/api/v1/tenants/all/pods", "system", SRE, RT_ALL_TENANTS },
	{ "GET", "/api/v1/tenants", "system", SRE, RT_TENANT_LIST },
	{ "GET", "/api/v1/tenants/acme", "system", SRE, RT_TENANT, "acme" },
	{ "POST", "/api/v1/tenants", "system", SRE, RT_ERROR, NULL, E_FORBIDDEN },
	{ "DELETE", "/api/v1/tenants/acme", "system", SRE, RT_ERROR, NULL, E_FORBIDDEN },
	{ "GET", "/api/v1/nodes", "system", SRE, RT_NODE_LIST },
	{ "PATCH", "/api/v1/nodes/n1", "system", SRE, RT_ERROR, NULL, E_FORBIDDEN },
	/* the group means nothing outside tenant system */
	{ "GET", "/api/v1/tenants/acme/namespaces/default/pods", "other", SRE, RT_ERROR, NULL, E_FORBIDDEN },
	{ "GET", "/api/v1/tenants/all/pods", "other", SRE, RT_ERROR, NULL, E_FORBIDDEN },
	/* streams into pods (exec, attach, port-forward): the tenant's own callers and system
	 * administrators only; never an SRE (a GET that writes), never another tenant */
	{ "GET", "/api/v1/namespaces/default/pods/web/exec", "acme", false, RT_TENANT, "acme" },
	{ "POST", "/api/v1/tenants/acme/namespaces/default/pods/web/attach", "acme", false, RT_TENANT, "acme" },
	{ "GET", "/api/v1/tenants/acme/namespaces/default/pods/web/portforward", "system", true, RT_TENANT, "acme" },
	{ "GET", "/api/v1/tenants/acme/namespaces/default/pods/web/exec", "beta", false, RT_ERROR, NULL, E_FORBIDDEN },
	{ "GET", "/api/v1/tenants/acme/namespaces/default/pods/web/exec", "system", SRE, RT_ERROR, NULL, E_FORBIDDEN },
	{ "GET", "/api/v1/tenants/system/namespaces/default/pods/web/exec", "system", SRE, RT_ERROR, NULL, E_FORBIDDEN },
	{ "GET", "/api/v1/tenants/acme/namespaces/default/pods/web/log", "system", SRE, RT_TENANT, "acme" },
	/* malformed */
	{ "GET", "/api/v1/tenants/acme/namespaces/../pods", "acme", false, RT_ERROR, NULL, E_NOT_FOUND },
	{ "GET", "/nope", "acme", false, RT_ERROR, NULL, E_NOT_FOUND },
};

static void test_table(void **state)
{
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		const struct row *r = &rows[i];
		struct identity id = user(r->tenant, r->admin);
		struct route rt;
		gw_route(r->method, r->path, false, r->tenant ? &id : NULL, &rt);
		if (rt.kind != r->want || (r->want == RT_ERROR && rt.err != r->want_err))
			print_error("row %zu: %s %s as %s: got %s (err %d), want %s (err %d)\n", i, r->method, r->path,
				    r->tenant ? r->tenant : "-", route_kind_name(rt.kind), rt.err, route_kind_name(r->want),
				    r->want_err);
		assert_int_equal(rt.kind, r->want);
		if (r->want == RT_ERROR)
			assert_int_equal(rt.err, r->want_err);
		if (r->want_tenant)
			assert_string_equal(rt.tenant, r->want_tenant);
		if (r->want_node)
			assert_string_equal(rt.node, r->want_node);
		bool stream = r->want == RT_TENANT && (strstr(r->path, "/exec") || strstr(r->path, "/attach") ||
						      strstr(r->path, "/portforward"));
		assert_int_equal(rt.stream, stream);
		route_release(&rt);
	}
}

static void test_watch_flag(void **state)
{
	struct identity id = user("acme", false);
	struct route rt;
	gw_route("GET", "/api/v1/namespaces/default/pods", true, &id, &rt);
	assert_true(rt.watch);
	route_release(&rt);
	gw_route("GET", "/api/v1/watch/namespaces/default/pods", false, &id, &rt);
	assert_true(rt.watch);
	route_release(&rt);
	gw_route("GET", "/api/v1/namespaces/default/pods", false, &id, &rt);
	assert_false(rt.watch);
	route_release(&rt);
}

static void test_dns_label(void **state)
{
	assert_true(dns_label_ok("a"));
	assert_true(dns_label_ok("system-x"));
	assert_false(dns_label_ok(""));
	assert_false(dns_label_ok("-a"));
	assert_false(dns_label_ok("a-"));
	assert_false(dns_label_ok("A"));
	assert_false(dns_label_ok("a.b"));
	assert_false(dns_label_ok("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa")); /* 64 */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_table),
		cmocka_unit_test(test_watch_flag),
		cmocka_unit_test(test_dns_label),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
