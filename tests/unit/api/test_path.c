/* path_parse: every path shape from path.h, the tenant/namespace subresource rules, watch,
 * percent-decoding, and the malformed paths it must refuse. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "ursa/buf.h"
#include "ursa/errors.h"
#include "ursa/path.h"

#define D PATH_DISCOVERY_ROOT
#define G PATH_DISCOVERY_GROUP
#define V PATH_DISCOVERY_GV
#define R PATH_RESOURCE

struct want {
	const char *path;
	enum path_kind kind;
	bool core, watch;
	const char *group, *version, *tenant, *ns, *res, *name, *sub;
};

static const struct want good[] = {
	/* discovery */
	{ "/api", D, true, false, "", NULL, NULL, NULL, NULL, NULL, NULL },
	{ "/apis", D, false, false, "", NULL, NULL, NULL, NULL, NULL, NULL },
	{ "/api/v1", V, true, false, "", "v1", NULL, NULL, NULL, NULL, NULL },
	{ "/api/v1/", V, true, false, "", "v1", NULL, NULL, NULL, NULL, NULL },
	{ "/apis/apps", G, false, false, "apps", NULL, NULL, NULL, NULL, NULL, NULL },
	{ "/apis/apps/v1", V, false, false, "apps", "v1", NULL, NULL, NULL, NULL, NULL },
	{ "/apis/coordination.k8s.io/v1", V, false, false, "coordination.k8s.io", "v1", NULL, NULL, NULL, NULL,
	  NULL },
	/* full tenant + namespace paths */
	{ "/api/v1/tenants/t1/namespaces/ns1/pods", R, true, false, "", "v1", "t1", "ns1", "pods", NULL, NULL },
	{ "/api/v1/tenants/t1/namespaces/ns1/pods/p1", R, true, false, "", "v1", "t1", "ns1", "pods", "p1", NULL },
	{ "/api/v1/tenants/t1/namespaces/ns1/pods/p1/status", R, true, false, "", "v1", "t1", "ns1", "pods", "p1",
	  "status" },
	{ "/api/v1/tenants/t1/namespaces/ns1/pods/p1/binding", R, true, false, "", "v1", "t1", "ns1", "pods", "p1",
	  "binding" },
	{ "/apis/apps/v1/tenants/t1/namespaces/ns1/deployments/d/scale", R, false, false, "apps", "v1", "t1", "ns1",
	  "deployments", "d", "scale" },
	{ "/api/v1/watch/tenants/t1/namespaces/ns1/pods", R, true, true, "", "v1", "t1", "ns1", "pods", NULL, NULL },
	{ "/apis/apps/v1/watch/tenants/t1/namespaces/ns1/replicasets/r", R, false, true, "apps", "v1", "t1", "ns1",
	  "replicasets", "r", NULL },
	/* short paths: the caller's tenant */
	{ "/api/v1/namespaces/ns1/pods", R, true, false, "", "v1", NULL, "ns1", "pods", NULL, NULL },
	{ "/api/v1/namespaces/ns1/pods/p1/log", R, true, false, "", "v1", NULL, "ns1", "pods", "p1", "log" },
	{ "/api/v1/watch/namespaces/ns1/configmaps", R, true, true, "", "v1", NULL, "ns1", "configmaps", NULL, NULL },
	{ "/apis/apps/v1/namespaces/default/deployments", R, false, false, "apps", "v1", NULL, "default",
	  "deployments", NULL, NULL },
	/* tenant-scoped resources */
	{ "/api/v1/tenants/t1/namespaces", R, true, false, "", "v1", "t1", NULL, "namespaces", NULL, NULL },
	{ "/api/v1/tenants/t1/persistentvolumes/pv1", R, true, false, "", "v1", "t1", NULL, "persistentvolumes",
	  "pv1", NULL },
	{ "/api/v1/watch/tenants/t1/namespaces", R, true, true, "", "v1", "t1", NULL, "namespaces", NULL, NULL },
	/* the namespace object itself */
	{ "/api/v1/namespaces/ns1", R, true, false, "", "v1", NULL, NULL, "namespaces", "ns1", NULL },
	{ "/api/v1/namespaces/ns1/status", R, true, false, "", "v1", NULL, NULL, "namespaces", "ns1", "status" },
	{ "/api/v1/namespaces/ns1/finalize", R, true, false, "", "v1", NULL, NULL, "namespaces", "ns1", "finalize" },
	{ "/api/v1/tenants/t1/namespaces/ns1", R, true, false, "", "v1", "t1", NULL, "namespaces", "ns1", NULL },
	{ "/api/v1/tenants/t1/namespaces/ns1/status", R, true, false, "", "v1", "t1", NULL, "namespaces", "ns1",
	  "status" },
	{ "/api/v1/tenants/t1/namespaces/ns1/finalize", R, true, false, "", "v1", "t1", NULL, "namespaces", "ns1",
	  "finalize" },
	{ "/api/v1/namespaces", R, true, false, "", "v1", NULL, NULL, "namespaces", NULL, NULL },
	/* cluster-scoped resources */
	{ "/api/v1/nodes", R, true, false, "", "v1", NULL, NULL, "nodes", NULL, NULL },
	{ "/api/v1/nodes/n1", R, true, false, "", "v1", NULL, NULL, "nodes", "n1", NULL },
	{ "/api/v1/nodes/n1/status", R, true, false, "", "v1", NULL, NULL, "nodes", "n1", "status" },
	{ "/api/v1/watch/nodes", R, true, true, "", "v1", NULL, NULL, "nodes", NULL, NULL },
	{ "/apis/coordination.k8s.io/v1/leases", R, false, false, "coordination.k8s.io", "v1", NULL, NULL, "leases",
	  NULL, NULL },
	/* tenant objects */
	{ "/api/v1/tenants", R, true, false, "", "v1", NULL, NULL, "tenants", NULL, NULL },
	{ "/api/v1/tenants/t1", R, true, false, "", "v1", NULL, NULL, "tenants", "t1", NULL },
	{ "/api/v1/tenants/t1/status", R, true, false, "", "v1", NULL, NULL, "tenants", "t1", "status" },
	{ "/api/v1/tenants/t1/finalize", R, true, false, "", "v1", NULL, NULL, "tenants", "t1", "finalize" },
	{ "/api/v1/watch/tenants", R, true, true, "", "v1", NULL, NULL, "tenants", NULL, NULL },
	{ "/api/v1/watch/tenants/t1", R, true, true, "", "v1", NULL, NULL, "tenants", "t1", NULL },
	/* a tenant named like a keyword is just a name */
	{ "/api/v1/tenants/status/pods", R, true, false, "", "v1", "status", NULL, "pods", NULL, NULL },
	{ "/api/v1/tenants/namespaces/namespaces/status", R, true, false, "", "v1", "namespaces", NULL, "namespaces",
	  "status", NULL },
	{ "/api/v1/namespaces/watch/pods", R, true, false, "", "v1", NULL, "watch", "pods", NULL, NULL },
	/* percent-decoding per segment */
	{ "/api/v1/namespaces/ns%31/pods/p%2d1", R, true, false, "", "v1", NULL, "ns1", "pods", "p-1", NULL },
	{ "/api/v1/nodes/a%3Ab", R, true, false, "", "v1", NULL, NULL, "nodes", "a:b", NULL },
	{ "/api/v1/nodes/a%20b", R, true, false, "", "v1", NULL, NULL, "nodes", "a b", NULL },
	{ "/api/v1/nodes/%2e%2e%2e", R, true, false, "", "v1", NULL, NULL, "nodes", "...", NULL },
	{ "/api/v1/%74enants/t1/status", R, true, false, "", "v1", NULL, NULL, "tenants", "t1", "status" },
	{ "/api/v1/nodes/a+b", R, true, false, "", "v1", NULL, NULL, "nodes", "a+b", NULL },
};

static const char *const bad[] = {
	"",
	"/",
	"api/v1/pods",
	"/version",
	"/healthz",
	"/openapi/v2",
	"/apix/v1",
	"/API/v1",
	"//api/v1",
	"/api//v1",
	"/api/v1//pods",
	"/api/v1/pods//",
	"/api/v1/watch",
	"/api/v1/watch/",
	"/apis/apps/v1/watch",
	"/api/v1/pods/p1/status/extra",
	"/api/v1/namespaces/ns1/pods/p1/log/extra",
	"/api/v1/tenants/t1/namespaces/ns1/pods/p1/status/x",
	"/api/v1/tenants/t1/status/x",
	"/api/v1/namespaces/ns1/status/x",
	"/api/v1/namespaces/ns1/pods/..",
	"/api/v1/namespaces/../pods",
	"/api/v1/namespaces/./pods",
	"/api/v1/namespaces/%2e%2E/pods",
	"/api/v1/namespaces/ns1/pods/a%2Fb",
	"/api/v1/namespaces/ns1/pods/a%2fb",
	"/api/v1/namespaces/ns1/pods/a%00b",
	"/api/v1/namespaces/ns1/pods/a%",
	"/api/v1/namespaces/ns1/pods/a%4",
	"/api/v1/namespaces/ns1/pods/a%zz",
	"/api/v1/namespaces/ns1/pods/%g0",
	"/apis/a/b/c/d/e/f/g/h/i/j/k/l",
	"/apis/apps/v1/watch/tenants/t/namespaces/ns/pods/p/status/x",
};

static void check_str(const char *what, const char *path, const char *got, const char *want)
{
	if (!want && !got)
		return;
	if (!want || !got || strcmp(got, want) != 0) {
		print_error("%s: %s = '%s', want '%s'\n", path, what, got ? got : "(null)", want ? want : "(null)");
		fail();
	}
}

static void test_good(void **state)
{
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		const struct want *w = &good[i];
		struct path_info p;
		int rc = path_parse(w->path, &p);
		if (rc)
			print_error("%s: rc %d\n", w->path, rc);
		assert_int_equal(rc, 0);
		if (p.kind != w->kind)
			print_error("%s: kind %d want %d\n", w->path, p.kind, w->kind);
		assert_int_equal(p.kind, w->kind);
		assert_int_equal(p.legacy_core, w->core);
		assert_int_equal(p.watch_prefix, w->watch);
		check_str("group", w->path, p.group, w->group);
		check_str("version", w->path, p.version, w->version);
		check_str("tenant", w->path, p.tenant, w->tenant);
		check_str("namespace", w->path, p.namespace_, w->ns);
		check_str("resource", w->path, p.resource, w->res);
		check_str("name", w->path, p.name, w->name);
		check_str("subresource", w->path, p.subresource, w->sub);
		path_info_release(&p);
		assert_null(p.group); /* release resets */
	}
}

static void test_bad(void **state)
{
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct path_info p;
		memset(&p, 0x5a, sizeof(p));
		int rc = path_parse(bad[i], &p);
		if (rc != E_NOT_FOUND)
			print_error("'%s' accepted (rc %d)\n", bad[i], rc);
		assert_int_equal(rc, E_NOT_FOUND);
		/* ret untouched on failure */
		assert_int_equal(((unsigned char *)&p)[0], 0x5a);
		assert_ptr_equal(p.resource, (char *)(uintptr_t)0x5a5a5a5a5a5a5a5aULL);
	}
	struct path_info p;
	assert_int_equal(path_parse(NULL, &p), E_NOT_FOUND);
}

static void test_lengths(void **state)
{
	struct buf b = BUF_INIT;
	struct path_info p;
	buf_adds(&b, "/api/v1/nodes/");
	for (int i = 0; i < 253; i++)
		buf_addch(&b, 'n');
	assert_int_equal(path_parse(buf_cstr(&b), &p), 0);
	assert_int_equal(strlen(p.name), 253);
	path_info_release(&p);
	buf_addch(&b, 'n');
	assert_int_equal(path_parse(buf_cstr(&b), &p), E_NOT_FOUND);

	/* 253 decoded bytes written as 759 encoded ones are fine; the cap is on the decoded segment */
	buf_reset(&b);
	buf_adds(&b, "/api/v1/nodes/");
	for (int i = 0; i < 253; i++)
		buf_adds(&b, "%61");
	assert_int_equal(path_parse(buf_cstr(&b), &p), 0);
	assert_int_equal(strlen(p.name), 253);
	assert_int_equal(p.name[0], 'a');
	path_info_release(&p);

	/* an overlong path is refused whatever its shape */
	buf_reset(&b);
	buf_adds(&b, "/api/v1/nodes/n");
	while (b.len <= 4096)
		buf_adds(&b, "%61%61%61%61");
	assert_int_equal(path_parse(buf_cstr(&b), &p), E_NOT_FOUND);
	buf_release(&b);
}

static void test_client_prefix(void **state)
{
	(void)state;
	const char *rest;
	char *t = path_client_prefix("/tenants/acme/api/v1/pods", &rest);
	assert_string_equal(t, "acme");
	assert_string_equal(rest, "/api/v1/pods");
	free(t);
	t = path_client_prefix("/tenants/acme", &rest);
	assert_string_equal(t, "acme");
	assert_string_equal(rest, "/");
	free(t);
	assert_null(path_client_prefix("/tenants//api", &rest));
	assert_null(path_client_prefix("/api/v1/tenants/acme/pods", &rest));
	assert_string_equal(rest, "/api/v1/tenants/acme/pods");
	assert_null(path_client_prefix("/tenantsx/a", &rest));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_good),
		cmocka_unit_test(test_bad),
		cmocka_unit_test(test_lengths),
		cmocka_unit_test(test_client_prefix),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
