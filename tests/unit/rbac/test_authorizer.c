/* The authorizer's index: bindings by subject and namespace, roles by name, aggregation,
 * tenants kept apart, the system tenant's region-wide bindings, removal, escalation checks. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>
#include "ursa/errors.h"
#include "ursa/rbac.h"
#include "ursa/xalloc.h"

static void put(struct rbac *a, enum rbac_kind k, const char *tenant, const char *ns, const char *name, const char *text)
{
	json_t *j = text ? json_loads(text, 0, NULL) : NULL;
	assert_true(!text || j);
	rbac_apply(a, k, tenant, ns, name, j);
	json_decref(j);
}

static struct identity who(const char *user, const char *tenant, const char *group)
{
	struct identity id = { .user = xstrdup(user), .tenant = xstrdup(tenant) };
	if (group) {
		id.groups = xcalloc(1, sizeof(char *));
		id.groups[id.ngroups++] = xstrdup(group);
	}
	return id;
}

static bool can(struct rbac *a, const struct identity *id, const char *tenant, const char *verb, const char *res,
		const char *ns)
{
	struct rbac_attrs at = { .verb = verb, .group = "", .resource = res, .ns = ns };
	return rbac_authorize(a, id, tenant, &at, NULL);
}

#define READER "{\"rules\":[{\"apiGroups\":[\"\"],\"resources\":[\"pods\"],\"verbs\":[\"get\",\"list\"]}]}"
#define BIND(kind, role, subj) \
	"{\"roleRef\":{\"apiGroup\":\"rbac.authorization.k8s.io\",\"kind\":\"" kind "\",\"name\":\"" role "\"}," \
	"\"subjects\":[" subj "]}"

static void test_role_binding_in_its_namespace_only(void **state)
{
	struct rbac *a = rbac_new();
	struct identity bob = who("bob", "acme", "devs"), other = who("bob", "zeta", "devs");
	put(a, RBAC_ROLE, "acme", "team", "reader", READER);
	put(a, RBAC_ROLE_BINDING, "acme", "team", "r", BIND("Role", "reader", "{\"kind\":\"User\",\"name\":\"bob\"}"));
	assert_true(can(a, &bob, "acme", "list", "pods", "team"));
	assert_false(can(a, &bob, "acme", "create", "pods", "team"));
	assert_false(can(a, &bob, "acme", "list", "pods", "default"));
	assert_false(can(a, &bob, "acme", "list", "pods", NULL));
	assert_false(can(a, &other, "zeta", "list", "pods", "team")); /* another tenant's bob */
	assert_false(can(a, &other, "acme", "list", "pods", "team"));
	struct buf why = BUF_INIT;
	struct rbac_attrs at = { .verb = "get", .group = "", .resource = "pods", .ns = "team", .name = "p" };
	assert_true(rbac_authorize(a, &bob, "acme", &at, &why));
	assert_string_equal(buf_cstr(&why), "RBAC: allowed by RoleBinding \"r/team\" of Role \"reader\" to User \"bob\"");
	buf_release(&why);
	/* the role goes: the binding grants nothing; it comes back: rights again */
	put(a, RBAC_ROLE, "acme", "team", "reader", NULL);
	assert_false(can(a, &bob, "acme", "list", "pods", "team"));
	put(a, RBAC_ROLE, "acme", "team", "reader", READER);
	assert_true(can(a, &bob, "acme", "list", "pods", "team"));
	/* the binding changes subject */
	put(a, RBAC_ROLE_BINDING, "acme", "team", "r", BIND("Role", "reader", "{\"kind\":\"Group\",\"name\":\"devs\"}"));
	assert_true(can(a, &bob, "acme", "list", "pods", "team"));
	put(a, RBAC_ROLE_BINDING, "acme", "team", "r", BIND("Role", "reader", "{\"kind\":\"Group\",\"name\":\"ops\"}"));
	assert_false(can(a, &bob, "acme", "list", "pods", "team"));
	put(a, RBAC_ROLE_BINDING, "acme", "team", "r", NULL);
	assert_int_equal(rbac_bindings(a), 0);
	identity_release(&bob);
	identity_release(&other);
	rbac_free(a);
}

static void test_cluster_bindings_and_authenticated(void **state)
{
	struct rbac *a = rbac_new();
	struct identity sa = who("system:serviceaccount:team:robot", "acme", "system:serviceaccounts");
	put(a, RBAC_CLUSTER_ROLE, "acme", "", "view", READER);
	put(a, RBAC_CLUSTER_ROLE_BINDING, "acme", "", "all-view", BIND("ClusterRole", "view", "{\"kind\":\"Group\",\"name\":\"system:authenticated\"}"));
	assert_true(can(a, &sa, "acme", "list", "pods", "anywhere"));
	assert_true(can(a, &sa, "acme", "list", "pods", NULL));
	put(a, RBAC_CLUSTER_ROLE_BINDING, "acme", "", "all-view", NULL);
	assert_false(can(a, &sa, "acme", "list", "pods", "team"));
	/* a RoleBinding of a ClusterRole, to a service account named without a namespace */
	put(a, RBAC_ROLE_BINDING, "acme", "team", "robot", BIND("ClusterRole", "view", "{\"kind\":\"ServiceAccount\",\"name\":\"robot\"}"));
	assert_true(can(a, &sa, "acme", "get", "pods", "team"));
	assert_false(can(a, &sa, "acme", "get", "pods", "other"));
	identity_release(&sa);
	rbac_free(a);
}

static void test_system_tenant_bindings_are_region_wide(void **state)
{
	struct rbac *a = rbac_new();
	struct identity ops = who("ops", "system", "auditors"), acme_ops = who("ops", "acme", "auditors");
	put(a, RBAC_CLUSTER_ROLE, "system", "", "view", READER);
	put(a, RBAC_CLUSTER_ROLE_BINDING, "system", "", "audit", BIND("ClusterRole", "view", "{\"kind\":\"Group\",\"name\":\"auditors\"}"));
	assert_true(can(a, &ops, "acme", "list", "pods", "team"));
	assert_true(can(a, &ops, "system", "list", "pods", "kube-system"));
	assert_false(can(a, &acme_ops, "acme", "list", "pods", "team")); /* the binding is for the system's users */
	/* a RoleBinding in the system tenant stays in that tenant's namespace */
	put(a, RBAC_ROLE_BINDING, "system", "team", "rb", BIND("ClusterRole", "view", "{\"kind\":\"User\",\"name\":\"dev\"}"));
	struct identity dev = who("dev", "system", NULL);
	assert_true(can(a, &dev, "system", "list", "pods", "team"));
	assert_false(can(a, &dev, "acme", "list", "pods", "team"));
	identity_release(&ops);
	identity_release(&acme_ops);
	identity_release(&dev);
	rbac_free(a);
}

static int nstale;
static void count_stale(void *ud, const char *name, const json_t *rules)
{
	(void)ud;
	assert_true(strcmp(name, "edit") == 0 || strcmp(name, "view") == 0);
	assert_true(json_is_array(rules));
	nstale++;
}

static void test_aggregation_follows_labels(void **state)
{
	struct rbac *a = rbac_new();
	struct identity u = who("u", "acme", NULL);
	put(a, RBAC_CLUSTER_ROLE, "acme", "", "view",
	    "{\"metadata\":{\"labels\":{\"agg-edit\":\"true\"}},"
	    "\"aggregationRule\":{\"clusterRoleSelectors\":[{\"matchLabels\":{\"agg-view\":\"true\"}}]},\"rules\":[]}");
	put(a, RBAC_CLUSTER_ROLE, "acme", "", "edit",
	    "{\"aggregationRule\":{\"clusterRoleSelectors\":[{\"matchLabels\":{\"agg-edit\":\"true\"}}]},\"rules\":[]}");
	put(a, RBAC_CLUSTER_ROLE_BINDING, "acme", "", "b", BIND("ClusterRole", "edit", "{\"kind\":\"User\",\"name\":\"u\"}"));
	assert_false(can(a, &u, "acme", "list", "pods", "team"));
	put(a, RBAC_CLUSTER_ROLE, "acme", "", "pods-view",
	    "{\"metadata\":{\"labels\":{\"agg-view\":\"true\"}},"
	    "\"rules\":[{\"apiGroups\":[\"\"],\"resources\":[\"pods\"],\"verbs\":[\"list\"]}]}");
	assert_true(can(a, &u, "acme", "list", "pods", "team")); /* pods-view -> view -> edit */
	struct rbac_rule *r;
	size_t n;
	assert_int_equal(rbac_role_rules(a, "acme", NULL, "ClusterRole", "edit", &r, &n), 0);
	assert_int_equal(n, 1);
	rbac_rules_free(r, n);
	/* what the server writes back: edit and view's stored rules ([]) differ from the union */
	nstale = 0;
	rbac_each_stale_aggregate(a, "acme", count_stale, NULL);
	assert_int_equal(nstale, 2);
	/* once written back (an aggregated role's stored rules do not add to the union) */
	put(a, RBAC_CLUSTER_ROLE, "acme", "", "edit",
	    "{\"aggregationRule\":{\"clusterRoleSelectors\":[{\"matchLabels\":{\"agg-edit\":\"true\"}}]},"
	    "\"rules\":[{\"apiGroups\":[\"\"],\"resources\":[\"pods\"],\"verbs\":[\"list\"]}]}");
	nstale = 0;
	rbac_each_stale_aggregate(a, "acme", count_stale, NULL);
	assert_int_equal(nstale, 1); /* view */
	put(a, RBAC_CLUSTER_ROLE, "acme", "", "pods-view", NULL);
	assert_false(can(a, &u, "acme", "list", "pods", "team")); /* the stored copy grants nothing by itself */
	nstale = 0;
	rbac_each_stale_aggregate(a, "acme", count_stale, NULL);
	assert_int_equal(nstale, 1); /* edit: its stored rule must go */
	identity_release(&u);
	rbac_free(a);
}

static void test_holds_and_each_rule(void **state)
{
	struct rbac *a = rbac_new();
	struct identity u = who("u", "acme", NULL);
	put(a, RBAC_ROLE, "acme", "team", "reader", READER);
	put(a, RBAC_ROLE_BINDING, "acme", "team", "r", BIND("Role", "reader", "{\"kind\":\"User\",\"name\":\"u\"}"));
	struct rbac_rule *want;
	size_t n;
	json_t *j = json_loads("[{\"apiGroups\":[\"\"],\"resources\":[\"pods\"],\"verbs\":[\"get\"]},"
			       "{\"apiGroups\":[\"\"],\"resources\":[\"pods\"],\"verbs\":[\"delete\"]}]", 0, NULL);
	assert_int_equal(rbac_rules_parse(j, "rules", false, &want, &n, NULL), 0);
	struct buf miss = BUF_INIT;
	assert_true(rbac_holds(a, &u, "acme", "team", want, 1, NULL));
	assert_false(rbac_holds(a, &u, "acme", "team", want, 2, &miss));
	assert_non_null(strstr(buf_cstr(&miss), "delete"));
	assert_false(rbac_holds(a, &u, "acme", "other", want, 1, NULL));
	buf_release(&miss);
	rbac_rules_free(want, n);
	json_decref(j);
	identity_release(&u);
	rbac_free(a);
}

static void test_many_bindings_stay_indexed(void **state)
{
	struct rbac *a = rbac_new();
	put(a, RBAC_CLUSTER_ROLE, "acme", "", "view", READER);
	char name[32], subj[96], text[512];
	for (int i = 0; i < 10000; i++) {
		snprintf(name, sizeof(name), "b%d", i);
		snprintf(subj, sizeof(subj), "{\"kind\":\"User\",\"name\":\"user%d\"}", i);
		snprintf(text, sizeof(text), BIND("ClusterRole", "view", "%s"), subj);
		put(a, RBAC_ROLE_BINDING, "acme", i % 2 ? "odd" : "even", name, text);
	}
	assert_int_equal(rbac_bindings(a), 10000);
	struct identity u = who("user4321", "acme", NULL);
	assert_true(can(a, &u, "acme", "list", "pods", "odd"));
	assert_false(can(a, &u, "acme", "list", "pods", "even"));
	identity_release(&u);
	rbac_clear(a);
	assert_int_equal(rbac_bindings(a), 0);
	rbac_free(a);
}

static void test_resync_keeps_deciding(void **state)
{
	struct rbac *a = rbac_new();
	struct identity u = who("u", "acme", NULL);
	put(a, RBAC_ROLE, "acme", "team", "reader", READER);
	put(a, RBAC_CLUSTER_ROLE, "acme", "", "view", READER);
	put(a, RBAC_ROLE_BINDING, "acme", "team", "r", BIND("Role", "reader", "{\"kind\":\"User\",\"name\":\"u\"}"));
	put(a, RBAC_CLUSTER_ROLE_BINDING, "acme", "", "c", BIND("ClusterRole", "view", "{\"kind\":\"User\",\"name\":\"u\"}"));
	put(a, RBAC_CLUSTER_ROLE_BINDING, "acme", "", "gone", BIND("ClusterRole", "view", "{\"kind\":\"User\",\"name\":\"v\"}"));
	assert_int_equal(rbac_bindings(a), 3);
	/* a relist of the cluster bindings that brings "c" again but not "gone" (deleted meanwhile) */
	rbac_resync_begin(a, RBAC_CLUSTER_ROLE_BINDING);
	assert_true(can(a, &u, "acme", "list", "pods", "other")); /* still decided by what is held */
	put(a, RBAC_CLUSTER_ROLE_BINDING, "acme", "", "c", BIND("ClusterRole", "view", "{\"kind\":\"User\",\"name\":\"u\"}"));
	rbac_resync_end(a, RBAC_CLUSTER_ROLE_BINDING);
	assert_int_equal(rbac_bindings(a), 2);
	assert_true(can(a, &u, "acme", "list", "pods", "other"));
	struct identity v = who("v", "acme", NULL);
	assert_false(can(a, &v, "acme", "list", "pods", "other"));
	/* a relist of roles that brings nothing: the Role goes, the binding to it grants nothing */
	rbac_resync_begin(a, RBAC_ROLE);
	rbac_resync_end(a, RBAC_ROLE);
	struct rbac_rule *r;
	size_t n;
	assert_int_equal(rbac_role_rules(a, "acme", "team", "Role", "reader", &r, &n), E_NOT_FOUND);
	assert_int_equal(rbac_role_rules(a, "acme", NULL, "ClusterRole", "view", &r, &n), 0); /* other kinds stay */
	rbac_rules_free(r, n);
	identity_release(&u);
	identity_release(&v);
	rbac_free(a);
}

static int nboot;
static void count_boot(void *ud, const char *plural, const json_t *obj)
{
	struct rbac *a = ud;
	struct field_errors errs = { 0 };
	bool binding = strcmp(plural, "clusterrolebindings") == 0;
	if (binding)
		rbac_validate_binding(obj, true, &errs);
	else
		rbac_validate_role(obj, true, &errs);
	assert_false(field_errors_any(&errs));
	const char *name = json_string_value(json_object_get(json_object_get(obj, "metadata"), "name"));
	rbac_apply(a, binding ? RBAC_CLUSTER_ROLE_BINDING : RBAC_CLUSTER_ROLE, "acme", "", name, obj);
	nboot++;
}

static void test_bootstrap_roles(void **state)
{
	struct rbac *a = rbac_new();
	rbac_bootstrap_objects(count_boot, a);
	assert_int_equal(nboot, 14);
	struct identity admin = who("boss", "acme", GROUP_TENANT_ADMINS), plain = who("joe", "acme", NULL);
	assert_true(can(a, &admin, "acme", "delete", "secrets", "x"));
	assert_false(can(a, &plain, "acme", "list", "pods", "x"));
	struct rbac_attrs ssar = { .verb = "create", .group = "authorization.k8s.io", .resource = "selfsubjectaccessreviews" };
	assert_true(rbac_authorize(a, &plain, "acme", &ssar, NULL));
	struct rbac_attrs disc = { .verb = "get", .path = "/apis/apps" };
	assert_true(rbac_authorize(a, &plain, "acme", &disc, NULL));
	/* admin aggregates edit, which aggregates view */
	struct rbac_rule *r;
	size_t n, ne, nv;
	assert_int_equal(rbac_role_rules(a, "acme", NULL, "ClusterRole", "view", &r, &nv), 0);
	rbac_rules_free(r, nv);
	assert_int_equal(rbac_role_rules(a, "acme", NULL, "ClusterRole", "edit", &r, &ne), 0);
	rbac_rules_free(r, ne);
	assert_int_equal(rbac_role_rules(a, "acme", NULL, "ClusterRole", "admin", &r, &n), 0);
	assert_true(nv > 5 && ne > nv && n > ne);
	struct rbac_attrs rb = { .verb = "create", .group = RBAC_GROUP, .resource = "rolebindings", .ns = "x" };
	bool admin_binds = false, edit_binds = false;
	for (size_t i = 0; i < n; i++)
		admin_binds |= rbac_rule_allows(&r[i], &rb);
	rbac_rules_free(r, n);
	assert_int_equal(rbac_role_rules(a, "acme", NULL, "ClusterRole", "edit", &r, &ne), 0);
	for (size_t i = 0; i < ne; i++)
		edit_binds |= rbac_rule_allows(&r[i], &rb);
	rbac_rules_free(r, ne);
	assert_true(admin_binds);
	assert_false(edit_binds);
	identity_release(&admin);
	identity_release(&plain);
	rbac_free(a);
}

static void test_forbidden_message(void **state)
{
	struct identity bob = who("bob", "acme", NULL);
	struct buf b = BUF_INIT;
	struct rbac_attrs at = { .verb = "create", .group = "", .resource = "pods", .ns = "team" };
	rbac_forbidden_message(&bob, &at, &b);
	assert_string_equal(buf_cstr(&b),
			    "pods is forbidden: User \"bob\" cannot create resource \"pods\" in API group \"\" in the namespace \"team\"");
	buf_reset(&b);
	at = (struct rbac_attrs){ .verb = "get", .group = "apps", .resource = "deployments", .subresource = "scale", .name = "d" };
	rbac_forbidden_message(&bob, &at, &b);
	assert_string_equal(buf_cstr(&b),
			    "deployments \"d\" is forbidden: User \"bob\" cannot get resource \"deployments/scale\" in API group \"apps\" at the cluster scope");
	buf_release(&b);
	identity_release(&bob);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_role_binding_in_its_namespace_only),
		cmocka_unit_test(test_cluster_bindings_and_authenticated),
		cmocka_unit_test(test_system_tenant_bindings_are_region_wide),
		cmocka_unit_test(test_aggregation_follows_labels),
		cmocka_unit_test(test_holds_and_each_rule),
		cmocka_unit_test(test_many_bindings_stay_indexed),
		cmocka_unit_test(test_resync_keeps_deciding),
		cmocka_unit_test(test_bootstrap_roles),
		cmocka_unit_test(test_forbidden_message),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
