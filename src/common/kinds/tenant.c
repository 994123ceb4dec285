/* Arktos tenants (cluster scope, system tenant only): {spec:{finalizers, storageClusterId},
 * status:{phase}}. The spec is kept as the client gave it. */
#include <stdlib.h>
#include "kinds/kinds_common.h"
#include "ursa/jsonutil.h"
#include "ursa/xalloc.h"

static void tenant_prepare_create(json_t *obj)
{
	json_object_set_new(obj, "status", json_pack("{s:s}", "phase", "Active"));
}

static void tenant_validate(const json_t *obj, const json_t *old, struct field_errors *errs)
{
	const json_t *spec = json_object_get(obj, "spec");
	if (spec && !json_is_null(spec) && !json_is_object(spec)) {
		field_error_type(errs, "spec", "an object");
		return;
	}
	const json_t *sc = json_object_get(spec, "storageClusterId");
	if (sc && !json_is_null(sc) && !json_is_string(sc))
		field_error_type(errs, "spec.storageClusterId", "a string");
	const json_t *fins = json_object_get(spec, "finalizers");
	size_t i;
	json_t *f;
	if (fins && !json_is_null(fins) && !json_is_array(fins))
		field_error_type(errs, "spec.finalizers", "an array of strings");
	json_array_foreach(fins, i, f) {
		const char *s = json_string_value(f);
		if (s && !label_key_why(s))
			continue;
		char *path = xasprintf("spec.finalizers[%zu]", i);
		if (!s)
			field_error_type(errs, path, "a string");
		else
			field_error_invalid(errs, path, s, "%s", label_key_why(s));
		free(path);
	}
}

static void tenant_cells(const json_t *obj, time_t now, json_t *cells)
{
	cell_name(obj, cells);
	cell_str(cells, json_path_str(obj, "status.phase"));
	cell_age(obj, now, cells);
}

static const struct api_column tenant_columns[] = {
	COLUMN_NAME,
	{ "Status", "string", "", "The status of the tenant", 0 },
	COLUMN_AGE,
};

static const struct api_field tenant_fields[] = {
	{ "status.phase", "status.phase" },
};

const struct api_strategy strategy_tenant = {
	.prepare_create = tenant_prepare_create,
	.validate = tenant_validate,
	.columns = tenant_columns,
	.ncolumns = ARRAY_SIZE(tenant_columns),
	.cells = tenant_cells,
	.fields = tenant_fields,
	.nfields = ARRAY_SIZE(tenant_fields),
};
