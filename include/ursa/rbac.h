/* RBAC: Kubernetes' rbac.authorization.k8s.io/v1 rules and the authorizer that evaluates them,
 * one space per tenant.
 *
 * A tenant is a cluster of its own: its Roles and RoleBindings live in its namespaces, its
 * ClusterRoles and ClusterRoleBindings in its own cluster scope (Ursa's tenant scope), invisible
 * to other tenants. A request inside tenant T by a user of T is decided by T's objects. The
 * `system` tenant's ClusterRoleBindings are region-wide: they bind users of tenant `system` in
 * every tenant of the partition.
 *
 * The authorizer (struct rbac) holds every RBAC object of a partition in memory, compiled, and
 * indexes bindings by (tenant, subject, namespace), so a decision costs a few hash look-ups per
 * subject of the caller (user, each group) and the rules of the roles those bindings name, not
 * a scan of the tenant's bindings. Roles are looked up by name when a binding applies; an
 * aggregated ClusterRole (aggregationRule) carries the rules of every ClusterRole of its tenant
 * whose labels match one of its selectors (its stored rules are that union, written back by its
 * server), recomputed whenever a ClusterRole of the tenant changes. It is fed by rbac_apply (the API server follows its watch caches) and read
 * by any number of threads. */
#ifndef URSA_RBAC_H
#define URSA_RBAC_H
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include "ursa/api.h"
#include "ursa/auth.h"
#include "ursa/buf.h"

#define RBAC_GROUP "rbac.authorization.k8s.io"
/* GROUP_AUTHENTICATED (auth.h): every authenticated caller is in it, as Kubernetes adds it; the
 * discovery and self-review roles are bound to it. */
/* The group ursactl gives a tenant's administrators by default; each tenant binds it to
 * cluster-admin. */
#define GROUP_TENANT_ADMINS "ursa:tenant-admins"

/* One PolicyRule, compiled. Every array is owned, each of its strings too; an empty array is
 * NULL with n 0. Resources are "pods", "pods/log", "*", "*" + "/scale" or "pods/" + "*". */
struct rbac_rule {
	char **verbs;
	size_t nverbs;
	char **groups;
	size_t ngroups;
	char **resources;
	size_t nresources;
	char **names;
	size_t nnames;
	char **urls;
	size_t nurls;
};

/* What a request asks: the attributes Kubernetes' authorizers see. resource NULL means a
 * non-resource request of path. ns NULL (or "") is the tenant's cluster scope. Borrowed. */
struct rbac_attrs {
	const char *verb;
	const char *group;
	const char *resource;
	const char *subresource;
	const char *name;
	const char *ns;
	const char *path;
};

/* The verbs a rule may name: Kubernetes' API verbs and its special ones (bind, escalate,
 * impersonate, use, approve, sign, proxy), and "*". */
bool rbac_verb_known(const char *verb);

/* Parses and validates a "rules" array (field names the JSON path in causes, e.g. "rules").
 * cluster: rules of a ClusterRole (nonResourceURLs allowed). Returns 0 and fills *ret and *ret_n
 * (NULL/0 for none) when valid; otherwise adds causes to errs (unknown verbs, missing verbs,
 * rules naming both or neither of resources and nonResourceURLs, non-string entries, ...) and
 * returns E_INVALID with nothing to free. errs may be NULL. */
int rbac_rules_parse(const json_t *rules, const char *field, bool cluster, struct rbac_rule **ret, size_t *ret_n,
		     struct field_errors *errs);
void rbac_rules_free(struct rbac_rule *rules, size_t n);
/* The rule as JSON (a PolicyRule object; new reference). */
json_t *rbac_rule_json(const struct rbac_rule *r);
/* True if rule r allows the request at. */
bool rbac_rule_allows(const struct rbac_rule *r, const struct rbac_attrs *at);
/* True if the rules own[0..n) allow everything rule r allows (Kubernetes' escalation check:
 * every verb × group × resource × name of r, and every verb × URL, is allowed by one of own). */
bool rbac_rules_cover(const struct rbac_rule *own, size_t n, const struct rbac_rule *r);

/* Validation of the four kinds (strategies in src/common/kinds/rbac.c use these). */
void rbac_validate_role(const json_t *obj, bool cluster, struct field_errors *errs);
void rbac_validate_binding(const json_t *obj, bool cluster, struct field_errors *errs);

/* ---- the authorizer ---- */
enum rbac_kind { RBAC_ROLE, RBAC_CLUSTER_ROLE, RBAC_ROLE_BINDING, RBAC_CLUSTER_ROLE_BINDING };
struct rbac;
struct rbac *rbac_new(void);
void rbac_free(struct rbac *a);
/* Adds, replaces (obj non-NULL) or removes (obj NULL) the object kind tenant/ns/name. ns is ""
 * for the cluster kinds. An object whose rules do not parse is held without rules. obj is
 * borrowed. Thread-safe (writers exclude readers). */
void rbac_apply(struct rbac *a, enum rbac_kind kind, const char *tenant, const char *ns, const char *name,
		const json_t *obj);
/* Drops every object. */
void rbac_clear(struct rbac *a);
/* A resync of one kind (its watch ended; its whole state is applied again): between begin and
 * end, decisions go on with what is held, each object applied again is kept, and end drops those
 * of the kind that were not applied since begin (deleted meanwhile). No decision ever sees the
 * kind empty. */
void rbac_resync_begin(struct rbac *a, enum rbac_kind kind);
void rbac_resync_end(struct rbac *a, enum rbac_kind kind);
/* Calls fn for each aggregated ClusterRole of tenant whose stored rules differ from the
 * aggregation's (rules: the union of the rules of the ClusterRoles its selectors match, as a
 * JSON array, borrowed for the call), so that its server writes them back, as Kubernetes'
 * aggregation controller does. fn may call back into a. */
void rbac_each_stale_aggregate(struct rbac *a, const char *tenant,
				void (*fn)(void *ud, const char *name, const json_t *rules), void *ud);
/* Calls fn with the name of each tenant that holds RBAC objects; fn may call back into a. */
void rbac_each_tenant(struct rbac *a, void (*fn)(void *ud, const char *tenant), void *ud);
/* Number of bindings held (both kinds, all tenants). */
size_t rbac_bindings(struct rbac *a);

/* Decides a request by id inside tenant. True if a binding allows it; ret_reason (may be NULL)
 * gets, when allowed, which binding and role allowed it ("RBAC: allowed by RoleBinding
 * \"r/team\" of Role \"reader\" to User \"bob\""), and when denied an empty string (the caller
 * words the 403, rbac_forbidden_message). Callers decide system:masters and tenant isolation
 * before asking. Thread-safe. */
bool rbac_authorize(struct rbac *a, const struct identity *id, const char *tenant, const struct rbac_attrs *at,
		    struct buf *ret_reason);
/* Kubernetes' words for a denied request: `pods "x" is forbidden: User "bob" cannot create
 * resource "pods" in API group "" in the namespace "team"` (or "at the cluster scope"; for a
 * non-resource request `forbidden: User "bob" cannot get path "/x"`). */
void rbac_forbidden_message(const struct identity *id, const struct rbac_attrs *at, struct buf *out);

/* Calls fn for every rule that applies to id inside tenant: those of the ClusterRoleBindings
 * of tenant (and the system tenant's, for a user of tenant system), and of the RoleBindings of
 * namespace ns when ns is not NULL/"". Rules are borrowed for the call; fn must not call back
 * into a. Thread-safe. */
void rbac_each_rule(struct rbac *a, const struct identity *id, const char *tenant, const char *ns,
		    void (*fn)(void *ud, const struct rbac_rule *r), void *ud);
/* True if id holds every rule of rules[0..n) inside tenant/ns (the escalation check); when not,
 * ret_missing (may be NULL) gets the first rule not held, as JSON text. */
bool rbac_holds(struct rbac *a, const struct identity *id, const char *tenant, const char *ns,
		const struct rbac_rule *rules, size_t n, struct buf *ret_missing);
/* A copy of the rules of the role a binding refers to: kind "Role" (in ns) or "ClusterRole",
 * with aggregated rules included. E_NOT_FOUND if no such role is held. Caller frees with
 * rbac_rules_free. */
int rbac_role_rules(struct rbac *a, const char *tenant, const char *ns, const char *kind, const char *name,
		    struct rbac_rule **ret, size_t *ret_n);

/* The default roles of a tenant, as Kubernetes bootstraps them: ClusterRoles cluster-admin,
 * admin, edit, view (aggregated, with the system:aggregate-to-* roles they aggregate),
 * system:discovery, system:basic-user, system:public-info-viewer, and ClusterRoleBindings that
 * bind the discovery roles to system:authenticated and cluster-admin to GROUP_TENANT_ADMINS.
 * Calls fn with each object's plural ("clusterroles", "clusterrolebindings") and the object
 * (borrowed for the call), roles first. */
void rbac_bootstrap_objects(void (*fn)(void *ud, const char *plural, const json_t *obj), void *ud);

#endif
