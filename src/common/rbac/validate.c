/* Validation of Roles, ClusterRoles and their bindings, as Kubernetes' RBAC validation. */
#include <string.h>
#include "ursa/jsonutil.h"
#include "ursa/rbac.h"
#include "ursa/selector.h"
#include "ursa/xalloc.h"

void rbac_validate_role(const json_t *obj, bool cluster, struct field_errors *errs)
{
	struct rbac_rule *rules = NULL;
	size_t n = 0;
	if (rbac_rules_parse(json_object_get(obj, "rules"), "rules", cluster, &rules, &n, errs) == 0)
		rbac_rules_free(rules, n);
	const json_t *agg = json_object_get(obj, "aggregationRule");
	if (!agg || json_is_null(agg))
		return;
	if (!cluster) {
		field_error_add(errs, "FieldValueForbidden", "aggregationRule", "Forbidden: only ClusterRoles aggregate");
		return;
	}
	const json_t *sels = json_object_get(agg, "clusterRoleSelectors");
	if (!json_is_object(agg) || (sels && !json_is_null(sels) && !json_is_array(sels))) {
		field_error_add(errs, "FieldValueTypeInvalid", "aggregationRule.clusterRoleSelectors",
				"Invalid value: must be an array of label selectors");
		return;
	}
	size_t i;
	const json_t *s;
	json_array_foreach(sels, i, s) {
		struct label_selector *ls = NULL;
		struct buf err = BUF_INIT;
		if (label_selector_from_json(s, &ls, &err) < 0) {
			char *f = xasprintf("aggregationRule.clusterRoleSelectors[%zu]", i);
			field_error_add(errs, "FieldValueInvalid", f, "Invalid value: %s", buf_cstr(&err));
			free(f);
		}
		label_selector_free(ls);
		buf_release(&err);
	}
}

static void validate_subject(const json_t *s, size_t i, bool cluster, struct field_errors *errs)
{
	char *f = xasprintf("subjects[%zu]", i);
	const char *kind = json_str(s, "kind"), *name = json_str(s, "name"), *ns = json_str(s, "namespace");
	char *ff = NULL;
	if (!json_is_object(s)) {
		field_error_add(errs, "FieldValueTypeInvalid", f, "Invalid value: must be an object");
		goto out;
	}
	if (!name || !*name) {
		field_error_required(errs, ff = xasprintf("%s.name", f));
		goto out;
	}
	if (!kind || (strcmp(kind, "User") != 0 && strcmp(kind, "Group") != 0 && strcmp(kind, "ServiceAccount") != 0)) {
		field_error_add(errs, "FieldValueNotSupported", ff = xasprintf("%s.kind", f),
				"Unsupported value: \"%s\": supported values: \"ServiceAccount\", \"User\", \"Group\"",
				kind ? kind : "");
		goto out;
	}
	if (strcmp(kind, "ServiceAccount") == 0) {
		if (!valid_dns1123_subdomain(name))
			field_error_add(errs, "FieldValueInvalid", ff = xasprintf("%s.name", f),
					"Invalid value: \"%s\": a service account name must be a DNS subdomain", name);
		else if (cluster && (!ns || !*ns))
			field_error_required(errs, ff = xasprintf("%s.namespace", f));
		else if (ns && *ns && !valid_dns1123_label(ns))
			field_error_add(errs, "FieldValueInvalid", ff = xasprintf("%s.namespace", f),
					"Invalid value: \"%s\": a namespace must be a DNS label", ns);
	}
out:
	free(ff);
	free(f);
}

void rbac_validate_binding(const json_t *obj, bool cluster, struct field_errors *errs)
{
	const json_t *ref = json_object_get(obj, "roleRef");
	if (!json_is_object(ref)) {
		field_error_required(errs, "roleRef");
	} else {
		const char *kind = json_str(ref, "kind"), *name = json_str(ref, "name"), *group = json_str(ref, "apiGroup");
		if (!group || strcmp(group, RBAC_GROUP) != 0)
			field_error_add(errs, "FieldValueNotSupported", "roleRef.apiGroup",
					"Unsupported value: \"%s\": supported values: \"" RBAC_GROUP "\"", group ? group : "");
		if (!kind || (strcmp(kind, "ClusterRole") != 0 && (cluster || strcmp(kind, "Role") != 0)))
			field_error_add(errs, "FieldValueNotSupported", "roleRef.kind", "Unsupported value: \"%s\": supported values: %s",
					kind ? kind : "", cluster ? "\"ClusterRole\"" : "\"Role\", \"ClusterRole\"");
		if (!name || !*name)
			field_error_required(errs, "roleRef.name");
	}
	const json_t *subs = json_object_get(obj, "subjects");
	if (subs && !json_is_null(subs) && !json_is_array(subs)) {
		field_error_add(errs, "FieldValueTypeInvalid", "subjects", "Invalid value: must be an array");
		return;
	}
	size_t i;
	const json_t *s;
	json_array_foreach(subs, i, s)
		validate_subject(s, i, cluster, errs);
}
