/* Fuzzes the RBAC parsers: the input as a Role, ClusterRole and binding (validation, the
 * authorizer's compilation, decisions, aggregation). Invariants: an accepted rules array
 * round-trips through JSON to rules that cover each other both ways, every accepted rule covers
 * itself, and whatever one object's rules allow, a binding of it to a user allows that user. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "ursa/rbac.h"
#include "ursa/xalloc.h"

static void check_rules(const json_t *obj)
{
	struct rbac_rule *r = NULL, *back = NULL;
	size_t n = 0, m = 0;
	if (rbac_rules_parse(json_object_get(obj, "rules"), "rules", true, &r, &n, NULL) != 0)
		return;
	json_t *a = json_array();
	for (size_t i = 0; i < n; i++) {
		if (!rbac_rules_cover(r, n, &r[i]))
			abort();
		json_array_append_new(a, rbac_rule_json(&r[i]));
	}
	if (rbac_rules_parse(a, "rules", true, &back, &m, NULL) != 0 || m != n)
		abort();
	for (size_t i = 0; i < n; i++)
		if (!rbac_rules_cover(back, m, &r[i]) || !rbac_rules_cover(r, n, &back[i]))
			abort();
	/* what the first rule allows for its first verb, group and resource, a binding grants */
	if (n && r[0].nverbs && r[0].ngroups && r[0].nresources && !r[0].nnames) {
		struct rbac *az = rbac_new();
		rbac_apply(az, RBAC_CLUSTER_ROLE, "t", "", "role", obj);
		json_t *b = json_pack("{s:{s:s,s:s,s:s},s:[{s:s,s:s}]}", "roleRef", "apiGroup", RBAC_GROUP, "kind",
				      "ClusterRole", "name", "role", "subjects", "kind", "User", "name", "u");
		rbac_apply(az, RBAC_CLUSTER_ROLE_BINDING, "t", "", "b", b);
		char *res = xstrdup(r[0].resources[0]), *slash = strchr(res, '/');
		if (slash)
			*slash++ = '\0';
		struct rbac_attrs at = { .verb = r[0].verbs[0], .group = r[0].groups[0], .resource = res,
					 .subresource = slash, .ns = "x" };
		struct identity id = { .user = "u", .tenant = "t" };
		bool want = rbac_rule_allows(&r[0], &at);
		if (want && !rbac_authorize(az, &id, "t", &at, NULL))
			abort();
		free(res);
		json_decref(b);
		rbac_free(az);
	}
	json_decref(a);
	rbac_rules_free(r, n);
	rbac_rules_free(back, m);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	json_t *obj = json_loadb((const char *)data, size, JSON_DECODE_ANY, NULL);
	if (!obj)
		return 0;
	struct field_errors errs = { 0 };
	rbac_validate_role(obj, false, &errs);
	rbac_validate_role(obj, true, &errs);
	rbac_validate_binding(obj, false, &errs);
	rbac_validate_binding(obj, true, &errs);
	field_errors_release(&errs);
	if (json_is_object(obj)) {
		check_rules(obj);
		struct rbac *az = rbac_new();
		rbac_apply(az, RBAC_ROLE, "t", "ns", "r", obj);
		rbac_apply(az, RBAC_CLUSTER_ROLE, "t", "", "r", obj);
		rbac_apply(az, RBAC_ROLE_BINDING, "t", "ns", "b", obj);
		rbac_apply(az, RBAC_CLUSTER_ROLE_BINDING, "t", "", "b", obj);
		struct identity id = { .user = "u", .tenant = "t" };
		struct rbac_attrs at = { .verb = "get", .group = "", .resource = "pods", .ns = "ns" };
		rbac_authorize(az, &id, "t", &at, NULL);
		rbac_apply(az, RBAC_CLUSTER_ROLE, "t", "", "r", NULL);
		rbac_free(az);
	}
	json_decref(obj);
	return 0;
}
