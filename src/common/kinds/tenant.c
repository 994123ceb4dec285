/* Arktos tenants (cluster scope, system tenant only): {spec:{finalizers, storageClusterId,
 * quota:{hard}}, status:{phase, quota:{hard, used}}}. The spec is kept as the client gave it. */
#include <stdlib.h>
#include <string.h>
#include "kinds/kinds_common.h"
#include "ursa/jsonutil.h"
#include "ursa/quota.h"
#include "ursa/xalloc.h"

/* A tenant that asks for a final backup holds its finalizer from the moment it asks (the
 * controller manager takes it away again if the annotation goes), so no delete can come first. */
static void tenant_defaults(json_t *obj)
{
	json_t *meta = json_object_get(obj, "metadata");
	const char *want = json_str(json_object_get(meta, "annotations"), TENANT_FINAL_BACKUP);
	if (!json_is_object(meta) || !want || strcmp(want, "true") != 0 || json_object_get(meta, "deletionTimestamp"))
		return;
	if (json_has_finalizer(obj, TENANT_FINAL_BACKUP))
		return;
	json_t *fs = json_object_get(meta, "finalizers");
	if (!json_is_array(fs)) {
		if (fs && !json_is_null(fs))
			return; /* validation says what is wrong with it */
		fs = json_array();
		json_object_set_new(meta, "finalizers", fs);
	}
	json_array_append_new(fs, json_string(TENANT_FINAL_BACKUP));
}

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
	/* spec.quota.hard: the tenant-wide quota (region administrators; apiserver/quota.c enforces it) */
	const json_t *quota = json_object_get(spec, "quota");
	if (quota && !json_is_null(quota) && !json_is_object(quota))
		field_error_type(errs, "spec.quota", "an object");
	else
		quota_hard_validate(json_object_get(quota, "hard"), "spec.quota.hard", false, errs);
	validate_spec_finalizers(obj, errs);
}

static const struct api_column tenant_columns[] = {
	COLUMN_NAME,
	{ "Status", "string", "", "The status of the tenant", 0 },
	COLUMN_AGE,
};

const struct api_strategy strategy_tenant = {
	.defaults = tenant_defaults,
	.prepare_create = tenant_prepare_create,
	.validate = tenant_validate,
	.columns = tenant_columns,
	.ncolumns = ARRAY_SIZE(tenant_columns),
	.cells = cells_name_phase_age,
	.fields = phase_fields,
	.nfields = 1,
};
