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
	validate_spec_finalizers(obj, errs);
}

static const struct api_column namespace_columns[] = {
	COLUMN_NAME,
	{ "Status", "string", "", "The status of the namespace", 0 },
	COLUMN_AGE,
};


const struct api_strategy strategy_namespace = {
	.defaults = namespace_defaults,
	.prepare_create = namespace_prepare_create,
	.validate = namespace_validate,
	.columns = namespace_columns,
	.ncolumns = ARRAY_SIZE(namespace_columns),
	.cells = cells_name_phase_age,
	.fields = phase_fields,
	.nfields = 1,
};
