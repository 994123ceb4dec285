/* Custom resource kinds for the controllers (crdkinds.c, crdcleanup.c): a CRD read into where its
 * custom resources live (storage version when served, scope), what a tenant sees (its own CRDs,
 * then the system tenant's it does not shadow), lookups by group or apiVersion, paths, the GC's
 * kind names, and the Terminating condition. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "tpc.h"
#include "ursa/errors.h"
#include "ursa/jsonutil.h"
#include "testjson.h"


/* A CRD of tenant t for plural.group, kind, scope, with versions v1 (served, storage as given)
 * and v2 (served). */
static json_t *crd(const char *t, const char *plural, const char *group, const char *kind, const char *scope,
		   bool v1_served, bool v1_storage)
{
	json_t *c = JQ("{'metadata':{'uid':'u1'},'spec':{'names':{},'versions':[{'name':'v1'},"
		      "{'name':'v2','served':true}]}}");
	char name[200];
	snprintf(name, sizeof(name), "%s.%s", plural, group);
	json_t *md = json_object_get(c, "metadata"), *spec = json_object_get(c, "spec");
	json_object_set_new(md, "tenant", json_string(t));
	json_object_set_new(md, "name", json_string(name));
	json_object_set_new(spec, "group", json_string(group));
	json_object_set_new(spec, "scope", json_string(scope));
	json_object_set_new(json_object_get(spec, "names"), "plural", json_string(plural));
	json_object_set_new(json_object_get(spec, "names"), "kind", json_string(kind));
	json_t *v1 = json_array_get(json_object_get(spec, "versions"), 0);
	json_object_set_new(v1, "served", json_boolean(v1_served));
	json_object_set_new(v1, "storage", json_boolean(v1_storage));
	json_object_set_new(json_array_get(json_object_get(spec, "versions"), 1), "storage", json_boolean(!v1_storage));
	return c;
}

static void test_parse(void **state)
{
	(void)state;
	struct tpc_crd_kind k;
	json_t *c = crd("acme", "crontabs", "stable.example.com", "CronTab", "Namespaced", true, true);
	assert_int_equal(tpc_crd_kind_parse(c, &k), 0);
	assert_string_equal(k.tenant, "acme");
	assert_string_equal(k.name, "crontabs.stable.example.com");
	assert_string_equal(k.uid, "u1");
	assert_string_equal(k.group, "stable.example.com");
	assert_string_equal(k.version, "v1"); /* the storage version */
	assert_string_equal(k.plural, "crontabs");
	assert_string_equal(k.kind, "CronTab");
	assert_true(k.namespaced);
	assert_false(k.terminating);
	tpc_crd_kind_release(&k);
	json_decref(c);

	/* storage version not served: the first served one; Cluster scope; terminating */
	c = crd("acme", "widgets", "w.example.com", "Widget", "Cluster", false, true);
	json_object_set_new(json_object_get(c, "metadata"), "deletionTimestamp", json_string("2026-01-01T00:00:00Z"));
	assert_int_equal(tpc_crd_kind_parse(c, &k), 0);
	assert_string_equal(k.version, "v2");
	assert_false(k.namespaced);
	assert_true(k.terminating);
	tpc_crd_kind_release(&k);
	/* v2 is the storage version and v1 served first: v2 */
	json_decref(c);
	c = crd("acme", "widgets", "w.example.com", "Widget", "Cluster", true, false);
	assert_int_equal(tpc_crd_kind_parse(c, &k), 0);
	assert_string_equal(k.version, "v2");
	tpc_crd_kind_release(&k);

	/* nothing served, a bad scope, a missing group, a slash: refused, nothing to release */
	json_object_set_new(json_array_get(json_path(c, "spec.versions"), 1), "served", json_false());
	json_object_set_new(json_array_get(json_path(c, "spec.versions"), 0), "served", json_false());
	assert_int_equal(tpc_crd_kind_parse(c, &k), E_INVALID);
	assert_null(k.group);
	json_decref(c);
	c = crd("acme", "widgets", "w.example.com", "Widget", "Everywhere", true, true);
	assert_int_equal(tpc_crd_kind_parse(c, &k), E_INVALID);
	json_decref(c);
	c = crd("acme", "wid/gets", "w.example.com", "Widget", "Cluster", true, true);
	assert_int_equal(tpc_crd_kind_parse(c, &k), E_INVALID);
	json_object_del(json_object_get(c, "spec"), "group");
	assert_int_equal(tpc_crd_kind_parse(c, &k), E_INVALID);
	json_decref(c);
	assert_int_equal(tpc_crd_kind_parse(NULL, &k), E_INVALID);
}

static void test_tenant_view(void **state)
{
	(void)state;
	json_t *crds = json_array();
	json_array_append_new(crds, crd("system", "crontabs", "stable.example.com", "SysCron", "Namespaced", true, true));
	json_array_append_new(crds, crd("system", "gadgets", "g.example.com", "Gadget", "Cluster", true, true));
	json_array_append_new(crds, crd("acme", "crontabs", "stable.example.com", "CronTab", "Namespaced", true, true));
	json_array_append_new(crds, crd("beta", "widgets", "w.example.com", "Widget", "Namespaced", true, true));
	json_array_append_new(crds, JQ("{'metadata':{'tenant':'acme','name':'broken.example.com'}}"));

	struct tpc_crd_kinds ks;
	tpc_crd_kinds_of(crds, "acme", &ks);
	/* its own crontabs (shadowing the system one), then the system gadgets; not beta's */
	assert_int_equal(ks.n, 2);
	assert_string_equal(ks.v[0].kind, "CronTab");
	assert_string_equal(ks.v[0].tenant, "acme");
	assert_string_equal(ks.v[1].kind, "Gadget");
	assert_string_equal(ks.v[1].tenant, "system");
	const struct tpc_crd_kind *k = tpc_crd_kinds_find(&ks, "stable.example.com/v1", "CronTab");
	assert_ptr_equal(k, &ks.v[0]);
	assert_ptr_equal(tpc_crd_kinds_find(&ks, "stable.example.com", "CronTab"), &ks.v[0]);
	assert_null(tpc_crd_kinds_find(&ks, "stable.example.com/v1", "SysCron")); /* shadowed */
	assert_null(tpc_crd_kinds_find(&ks, "stable.example.co/v1", "CronTab"));
	assert_null(tpc_crd_kinds_find(&ks, "stable.example.comm/v1", "CronTab"));
	assert_null(tpc_crd_kinds_find(&ks, NULL, "CronTab"));

	struct buf p = BUF_INIT;
	tpc_crd_path(&p, &ks.v[0], "acme", "default", "c1");
	assert_string_equal(buf_cstr(&p), "/apis/stable.example.com/v1/tenants/acme/namespaces/default/crontabs/c1");
	buf_reset(&p);
	tpc_crd_path(&p, &ks.v[0], "acme", NULL, NULL); /* the tenant's whole collection */
	assert_string_equal(buf_cstr(&p), "/apis/stable.example.com/v1/tenants/acme/crontabs");
	buf_reset(&p);
	tpc_crd_path(&p, &ks.v[1], "acme", "default", "g1"); /* cluster scope: no namespace */
	assert_string_equal(buf_cstr(&p), "/apis/g.example.com/v1/tenants/acme/gadgets/g1");
	buf_release(&p);
	tpc_crd_kinds_release(&ks);
	assert_int_equal(ks.n, 0);
	assert_null(ks.v);

	/* the system tenant sees its own only; a tenant without CRDs the system's */
	tpc_crd_kinds_of(crds, "system", &ks);
	assert_int_equal(ks.n, 2);
	assert_string_equal(ks.v[0].kind, "SysCron");
	tpc_crd_kinds_release(&ks);
	tpc_crd_kinds_of(crds, "gamma", &ks);
	assert_int_equal(ks.n, 2);
	assert_string_equal(ks.v[0].tenant, "system");
	tpc_crd_kinds_release(&ks);
	tpc_crd_kinds_of(NULL, "gamma", &ks);
	assert_int_equal(ks.n, 0);
	json_decref(crds);
}

static void test_gc_kind(void **state)
{
	(void)state;
	char *k = tpc_cr_gc_kind("CronTab", "stable.example.com/v1");
	assert_string_equal(k, "CronTab.stable.example.com");
	free(k);
	assert_null(tpc_cr_gc_kind("ConfigMap", "v1")); /* core: no group */
	assert_null(tpc_cr_gc_kind("CronTab", "/v1"));
	assert_null(tpc_cr_gc_kind("Cron.Tab", "a.b/v1"));
	assert_null(tpc_cr_gc_kind("Cron:Tab", "a.b/v1"));
	assert_null(tpc_cr_gc_kind("", "a.b/v1"));
	assert_null(tpc_cr_gc_kind(NULL, "a.b/v1"));
	assert_null(tpc_cr_gc_kind("CronTab", NULL));
}

static void test_condition(void **state)
{
	(void)state;
	/* new: appended with a transition time; others kept */
	json_t *cur = JQ("[{'type':'Established','status':'True','reason':'InitialNamesAccepted'}]");
	json_t *c = tpc_crd_set_condition(cur, "Terminating", "True", TPC_CRD_TERMINATING_REASON, "going", 0);
	assert_int_equal(json_array_size(c), 2);
	assert_string_equal(json_str(json_array_get(c, 0), "type"), "Established");
	json_t *t = json_array_get(c, 1);
	assert_string_equal(json_str(t, "type"), "Terminating");
	assert_string_equal(json_str(t, "status"), "True");
	assert_string_equal(json_str(t, "reason"), "InstanceDeletionInProgress");
	assert_string_equal(json_str(t, "message"), "going");
	assert_string_equal(json_str(t, "lastTransitionTime"), "1970-01-01T00:00:00Z");
	/* same status again: the transition time stays; message updated */
	json_t *c2 = tpc_crd_set_condition(c, "Terminating", "True", "R", "still", 100);
	assert_int_equal(json_array_size(c2), 2);
	assert_string_equal(json_str(json_array_get(c2, 1), "lastTransitionTime"), "1970-01-01T00:00:00Z");
	assert_string_equal(json_str(json_array_get(c2, 1), "message"), "still");
	/* a change of status moves it; the input is untouched */
	json_t *c3 = tpc_crd_set_condition(c2, "Terminating", "False", "R", "m", 100);
	assert_string_equal(json_str(json_array_get(c3, 1), "lastTransitionTime"), "1970-01-01T00:01:40Z");
	assert_string_equal(json_str(json_array_get(c2, 1), "status"), "True");
	/* none before */
	json_t *c4 = tpc_crd_set_condition(NULL, "Terminating", "True", "R", "m", 0);
	assert_int_equal(json_array_size(c4), 1);
	json_decref(cur), json_decref(c), json_decref(c2), json_decref(c3), json_decref(c4);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse),
		cmocka_unit_test(test_tenant_view),
		cmocka_unit_test(test_gc_kind),
		cmocka_unit_test(test_condition),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
