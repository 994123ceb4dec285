/* Namespaces (tenant-scoped). */
#include <stdlib.h>
#include <string.h>
#include "kinds/kinds_common.h"
#include "ursa/jsonutil.h"
#include "ursa/xalloc.h"

/* Upstream labels every namespace with its own name so that selectors can pick namespaces. */
static void namespace_defaults(json_t *obj)
{
	const char *name = json_path_str(obj, "metadata.name");
	json_t *meta = json_object_get(obj, "metadata");
	if (!name || !*name || !json_is_object(meta))
		return;
	json_t *labels = default_obj(meta, "labels");
	if (json_is_object(labels))
		json_object_set_new(labels, "kubernetes.io/metadata.name", json_string(name));
}

/* The "kubernetes" finalizer is added on create only: a later update (or finalize) that drops it
 * must not get it back. */
static void namespace_prepare_create(json_t *obj)
{
	json_t *spec = default_obj(obj, "spec");
	if (json_is_object(spec) && !json_is_array(json_object_get(spec, "finalizers")))
		json_object_set_new(spec, "finalizers", json_pack("[s]", "kubernetes"));
	json_object_set_new(obj, "status", json_pack("{s:s}", "phase", "Active"));
}

static void namespace_validate(const json_t *obj, const json_t *old, struct field_errors *errs)
{
	const json_t *fins = json_path(obj, "spec.finalizers");
	size_t i;
	json_t *f;
	if (fins && !json_is_null(fins) && !json_is_array(fins))
		field_error_type(errs, "spec.finalizers", "an array of strings");
	json_array_foreach(fins, i, f) {
		const char *s = json_string_value(f);
		char *path = xasprintf("spec.finalizers[%zu]", i);
		if (!s)
			field_error_type(errs, path, "a string");
		else if (label_key_why(s))
			field_error_invalid(errs, path, s, "%s", label_key_why(s));
		free(path);
	}
}

static void namespace_cells(const json_t *obj, time_t now, json_t *cells)
{
	cell_name(obj, cells);
	cell_str(cells, json_path_str(obj, "status.phase"));
	cell_age(obj, now, cells);
}

static const struct api_column namespace_columns[] = {
	COLUMN_NAME,
	{ "Status", "string", "", "The status of the namespace", 0 },
	COLUMN_AGE,
};

static const struct api_field namespace_fields[] = {
	{ "status.phase", "status.phase" },
};

const struct api_strategy strategy_namespace = {
	.defaults = namespace_defaults,
	.prepare_create = namespace_prepare_create,
	.validate = namespace_validate,
	.columns = namespace_columns,
	.ncolumns = ARRAY_SIZE(namespace_columns),
	.cells = namespace_cells,
	.fields = namespace_fields,
	.nfields = ARRAY_SIZE(namespace_fields),
};
