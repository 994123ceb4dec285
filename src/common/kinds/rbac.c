/* Roles, ClusterRoles, RoleBindings and ClusterRoleBindings (rbac.authorization.k8s.io/v1):
 * validation by ursa/rbac.h, and the columns kubectl prints for them. */
#include <string.h>
#include "kinds/kinds_common.h"
#include "ursa/jsonutil.h"
#include "ursa/rbac.h"
#include "ursa/xalloc.h"

static void role_validate(const json_t *obj, const json_t *old, struct field_errors *errs)
{
	(void)old;
	rbac_validate_role(obj, false, errs);
}

static void clusterrole_validate(const json_t *obj, const json_t *old, struct field_errors *errs)
{
	(void)old;
	rbac_validate_role(obj, true, errs);
}

static void binding_validate(const json_t *obj, const json_t *old, struct field_errors *errs, bool cluster)
{
	rbac_validate_binding(obj, cluster, errs);
	/* roleRef is immutable, as Kubernetes': delete and recreate the binding instead */
	const json_t *a = json_object_get(obj, "roleRef"), *b = old ? json_object_get(old, "roleRef") : NULL;
	if (old && !json_equal((json_t *)a, (json_t *)b))
		field_error_add(errs, "FieldValueInvalid", "roleRef", "Invalid value: cannot change roleRef");
}

static void rolebinding_validate(const json_t *obj, const json_t *old, struct field_errors *errs)
{
	binding_validate(obj, old, errs, false);
}

static void clusterrolebinding_validate(const json_t *obj, const json_t *old, struct field_errors *errs)
{
	binding_validate(obj, old, errs, true);
}

static void role_cells(const json_t *obj, time_t now, json_t *cells)
{
	(void)now;
	cell_name(obj, cells);
	cell_str(cells, json_path_str(obj, "metadata.creationTimestamp"));
}

/* The subjects of one kind, comma-joined ("ns/name" for service accounts). */
static void cell_subjects(json_t *cells, const json_t *obj, const char *kind)
{
	struct buf b = BUF_INIT;
	size_t i;
	const json_t *s;
	json_array_foreach(json_object_get(obj, "subjects"), i, s) {
		const char *k = json_str(s, "kind"), *name = json_str(s, "name"), *ns = json_str(s, "namespace");
		if (!k || strcmp(k, kind) != 0 || !name)
			continue;
		if (b.len)
			buf_addch(&b, ',');
		if (strcmp(kind, "ServiceAccount") == 0)
			buf_addf(&b, "%s/%s", ns ? ns : "", name);
		else
			buf_adds(&b, name);
	}
	cell_str(cells, buf_cstr(&b));
	buf_release(&b);
}

static void binding_cells(const json_t *obj, time_t now, json_t *cells)
{
	cell_name(obj, cells);
	char *role = xasprintf("%s/%s", json_path_str(obj, "roleRef.kind") ? json_path_str(obj, "roleRef.kind") : "",
			       json_path_str(obj, "roleRef.name") ? json_path_str(obj, "roleRef.name") : "");
	cell_str(cells, role);
	free(role);
	cell_age(obj, now, cells);
	cell_subjects(cells, obj, "User");
	cell_subjects(cells, obj, "Group");
	cell_subjects(cells, obj, "ServiceAccount");
}

static const struct api_column role_columns[] = {
	COLUMN_NAME,
	{ "Created At", "date", "", "CreationTimestamp is a timestamp representing the server time when this object was created.", 0 },
};

static const struct api_column binding_columns[] = {
	COLUMN_NAME,
	{ "Role", "string", "", "RoleRef references the role this binding grants.", 0 },
	COLUMN_AGE,
	{ "Users", "string", "", "Users in the binding.", 1 },
	{ "Groups", "string", "", "Groups in the binding.", 1 },
	{ "ServiceAccounts", "string", "", "ServiceAccounts in the binding.", 1 },
};

const struct api_strategy strategy_role = {
	.validate = role_validate,
	.columns = role_columns,
	.ncolumns = ARRAY_SIZE(role_columns),
	.cells = role_cells,
};

const struct api_strategy strategy_clusterrole = {
	.validate = clusterrole_validate,
	.columns = role_columns,
	.ncolumns = ARRAY_SIZE(role_columns),
	.cells = role_cells,
};

const struct api_strategy strategy_rolebinding = {
	.validate = rolebinding_validate,
	.columns = binding_columns,
	.ncolumns = ARRAY_SIZE(binding_columns),
	.cells = binding_cells,
};

const struct api_strategy strategy_clusterrolebinding = {
	.validate = clusterrolebinding_validate,
	.columns = binding_columns,
	.ncolumns = ARRAY_SIZE(binding_columns),
	.cells = binding_cells,
};

/* Reviews carry no stored state: nothing to validate beyond their handlers' checks. */
static const struct api_column review_columns[] = { COLUMN_NAME };
static void review_cells(const json_t *obj, time_t now, json_t *cells)
{
	(void)now;
	cell_name(obj, cells);
}
const struct api_strategy strategy_review = {
	.columns = review_columns,
	.ncolumns = ARRAY_SIZE(review_columns),
	.cells = review_cells,
};
