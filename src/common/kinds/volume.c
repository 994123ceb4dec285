/* v1 PersistentVolumeClaims and PersistentVolumes: stored and validated. Nothing provisions or
 * binds volumes yet (no storage provider), so a claim stays Pending. */
#include <stdlib.h>
#include <string.h>
#include "kinds/kinds_common.h"
#include "ursa/jsonutil.h"
#include "ursa/kinds.h"
#include "ursa/xalloc.h"

static const char *const access_modes[] = { "ReadWriteOnce", "ReadOnlyMany", "ReadWriteMany", "ReadWriteOncePod",
					    NULL };

static bool known_mode(const char *m)
{
	for (size_t i = 0; access_modes[i]; i++)
		if (!strcmp(m, access_modes[i]))
			return true;
	return false;
}

static void validate_access_modes(const json_t *modes, const char *prefix, struct field_errors *errs)
{
	char *f = xasprintf("%s.accessModes", prefix);
	if (!json_is_array(modes) || json_array_size(modes) == 0) {
		if (modes && !json_is_null(modes) && !json_is_array(modes))
			field_error_type(errs, f, "an array");
		else
			field_error_required_why(errs, f, "at least 1 access mode is required");
		free(f);
		return;
	}
	size_t i;
	json_t *m;
	json_array_foreach(modes, i, m) {
		const char *s = json_string_value(m);
		char *fi = xasprintf("%s[%zu]", f, i);
		if (!s || !known_mode(s))
			field_error_not_supported(errs, fi, s ? s : "", access_modes);
		free(fi);
	}
	free(f);
}

/* A quantity given as a string or a number; *ret_milli its value. */
static bool quantity_of(const json_t *v, long long *ret_milli)
{
	if (json_is_integer(v)) {
		*ret_milli = (long long)json_integer_value(v) * 1000;
		return json_integer_value(v) >= 0;
	}
	const char *s = json_string_value(v);
	return s && quantity_parse_milli(s, ret_milli) == 0 && *ret_milli >= 0;
}

static void validate_storage(const json_t *v, const char *field, struct field_errors *errs)
{
	long long milli;
	if (!v || json_is_null(v)) {
		field_error_required(errs, field);
	} else if (!quantity_of(v, &milli)) {
		const char *s = json_string_value(v);
		field_error_invalid(errs, field, s ? s : "",
				    "quantities must match the regular expression "
				    "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'");
	} else if (milli <= 0) {
		field_error_invalid(errs, field, json_string_value(v) ? json_string_value(v) : "0",
				    "must be greater than zero");
	}
}

void pvc_spec_validate(const json_t *spec, const char *prefix, struct field_errors *errs)
{
	if (!json_is_object(spec)) {
		field_error_required(errs, prefix);
		return;
	}
	validate_access_modes(json_object_get(spec, "accessModes"), prefix, errs);
	char *f = xasprintf("%s.resources[storage]", prefix);
	validate_storage(json_path(spec, "resources.requests.storage"), f, errs);
	free(f);
	const char *vm = json_str(spec, "volumeMode");
	static const char *const modes[] = { "Block", "Filesystem", NULL };
	if (vm && strcmp(vm, "Block") && strcmp(vm, "Filesystem")) {
		char *fm = xasprintf("%s.volumeMode", prefix);
		field_error_not_supported(errs, fm, vm, modes);
		free(fm);
	}
}

/* PersistentVolumeClaim ------------------------------------------------------------------ */

static void pvc_defaults(json_t *obj)
{
	json_t *spec = json_object_get(obj, "spec");
	if (json_is_object(spec))
		default_str(spec, "volumeMode", "Filesystem");
	json_t *status = json_object_get(obj, "status");
	if (json_is_object(status))
		default_str(status, "phase", "Pending");
}

static void pvc_prepare_create(json_t *obj)
{
	json_object_set_new(obj, "status", json_pack("{s:s}", "phase", "Pending"));
}

static void pvc_validate(const json_t *obj, const json_t *old, struct field_errors *errs)
{
	const json_t *spec = json_object_get(obj, "spec");
	pvc_spec_validate(spec, "spec", errs);
	if (!old)
		return;
	/* Only the requested size (and a volume name being set once) may change after creation. */
	json_t *a = json_deep_copy(spec), *b = json_deep_copy(json_object_get(old, "spec"));
	if (json_is_object(a) && json_is_object(b)) {
		json_object_del(a, "resources");
		json_object_del(b, "resources");
		if (!json_str(b, "volumeName"))
			json_object_del(a, "volumeName");
	}
	if (!json_equal(a, b))
		field_error_forbidden(errs, "spec", "spec is immutable after creation except resources.requests "
				      "and volumeAttributesClassName for bound claims");
	json_decref(a);
	json_decref(b);
}

static void cell_modes(json_t *cells, const json_t *modes)
{
	static const struct { const char *mode, *abbr; } abbr[] = {
		{ "ReadWriteOnce", "RWO" }, { "ReadOnlyMany", "ROX" }, { "ReadWriteMany", "RWX" },
		{ "ReadWriteOncePod", "RWOP" },
	};
	struct buf b = BUF_INIT;
	size_t i;
	json_t *m;
	json_array_foreach(modes, i, m) {
		const char *s = json_string_value(m);
		for (size_t k = 0; s && k < ARRAY_SIZE(abbr); k++)
			if (!strcmp(s, abbr[k].mode))
				buf_addf(&b, "%s%s", b.len ? "," : "", abbr[k].abbr);
	}
	cell_str(cells, b.len ? b.ptr : "");
	buf_release(&b);
}

static void pvc_cells(const json_t *obj, time_t now, json_t *cells)
{
	const char *phase = json_path_str(obj, "status.phase");
	bool bound = phase && !strcmp(phase, "Bound");
	cell_name(obj, cells);
	cell_str(cells, phase ? phase : "Pending");
	cell_str(cells, json_path_str(obj, "spec.volumeName"));
	cell_str(cells, bound ? json_path_str(obj, "status.capacity.storage") : "");
	if (bound)
		cell_modes(cells, json_path(obj, "status.accessModes"));
	else
		cell_str(cells, "");
	cell_str_or(cells, json_path_str(obj, "spec.storageClassName"), "<unset>");
	cell_str_or(cells, json_path_str(obj, "spec.volumeAttributesClassName"), "<unset>");
	cell_age(obj, now, cells);
	cell_str(cells, json_path_str(obj, "spec.volumeMode"));
}

static const struct api_column pvc_columns[] = {
	COLUMN_NAME,
	{ "Status", "string", "", "Phase represents the current phase of PersistentVolumeClaim.", 0 },
	{ "Volume", "string", "", "VolumeName is the binding reference to the PersistentVolume backing this "
	  "claim.", 0 },
	{ "Capacity", "string", "", "Capacity represents the actual resources of the underlying volume.", 0 },
	{ "Access Modes", "string", "", "AccessModes contains the desired access modes the volume should have.", 0 },
	{ "StorageClass", "string", "", "StorageClassName is the name of the StorageClass required by the claim.",
	  0 },
	{ "VolumeAttributesClass", "string", "", "The VolumeAttributesClass used by this claim.", 1 },
	COLUMN_AGE,
	{ "VolumeMode", "string", "", "volumeMode defines what type of volume is required by the claim.", 1 },
};

const struct api_strategy strategy_persistentvolumeclaim = {
	.defaults = pvc_defaults,
	.prepare_create = pvc_prepare_create,
	.validate = pvc_validate,
	.columns = pvc_columns,
	.ncolumns = ARRAY_SIZE(pvc_columns),
	.cells = pvc_cells,
};

/* PersistentVolume ----------------------------------------------------------------------- */

static void pv_defaults(json_t *obj)
{
	json_t *spec = json_object_get(obj, "spec");
	if (json_is_object(spec)) {
		default_str(spec, "persistentVolumeReclaimPolicy", "Retain");
		default_str(spec, "volumeMode", "Filesystem");
	}
	json_t *status = json_object_get(obj, "status");
	if (json_is_object(status))
		default_str(status, "phase", "Available");
}

static void pv_prepare_create(json_t *obj)
{
	json_object_set_new(obj, "status", json_pack("{s:s}", "phase", "Available"));
}

static void pv_validate(const json_t *obj, const json_t *old, struct field_errors *errs)
{
	static const char *const policies[] = { "Delete", "Recycle", "Retain", NULL };
	(void)old;
	const json_t *spec = json_object_get(obj, "spec");
	if (!json_is_object(spec)) {
		field_error_required(errs, "spec");
		return;
	}
	validate_access_modes(json_object_get(spec, "accessModes"), "spec", errs);
	validate_storage(json_path(spec, "capacity.storage"), "spec.capacity", errs);
	const char *rp = json_str(spec, "persistentVolumeReclaimPolicy");
	if (rp && strcmp(rp, "Delete") && strcmp(rp, "Recycle") && strcmp(rp, "Retain"))
		field_error_not_supported(errs, "spec.persistentVolumeReclaimPolicy", rp, policies);
}

static void pv_cells(const json_t *obj, time_t now, json_t *cells)
{
	const json_t *ref = json_path(obj, "spec.claimRef");
	cell_name(obj, cells);
	cell_str(cells, json_path_str(obj, "spec.capacity.storage"));
	cell_modes(cells, json_path(obj, "spec.accessModes"));
	cell_str(cells, json_path_str(obj, "spec.persistentVolumeReclaimPolicy"));
	cell_str(cells, json_path_str(obj, "status.phase"));
	if (json_is_object(ref)) {
		char *s = xasprintf("%s/%s", json_str(ref, "namespace") ? json_str(ref, "namespace") : "",
				    json_str(ref, "name") ? json_str(ref, "name") : "");
		cell_str(cells, s);
		free(s);
	} else {
		cell_str(cells, "");
	}
	cell_str(cells, json_path_str(obj, "spec.storageClassName"));
	cell_str_or(cells, json_path_str(obj, "spec.volumeAttributesClassName"), "<unset>");
	cell_str(cells, json_path_str(obj, "status.reason"));
	cell_age(obj, now, cells);
	cell_str(cells, json_path_str(obj, "spec.volumeMode"));
}

static const struct api_column pv_columns[] = {
	COLUMN_NAME,
	{ "Capacity", "string", "", "capacity is the description of the persistent volume's resources and "
	  "capacity.", 0 },
	{ "Access Modes", "string", "", "accessModes contains all ways the volume can be mounted.", 0 },
	{ "Reclaim Policy", "string", "", "persistentVolumeReclaimPolicy defines what happens to a persistent "
	  "volume when released from its claim.", 0 },
	{ "Status", "string", "", "phase indicates if a volume is available, bound to a claim, or released by a "
	  "claim.", 0 },
	{ "Claim", "string", "", "claimRef is part of a bi-directional binding between PersistentVolume and "
	  "PersistentVolumeClaim.", 0 },
	{ "StorageClass", "string", "", "storageClassName is the name of StorageClass to which this persistent "
	  "volume belongs.", 0 },
	{ "VolumeAttributesClass", "string", "", "The VolumeAttributesClass used by this volume.", 1 },
	{ "Reason", "string", "", "reason is a brief CamelCase string that describes any failure.", 0 },
	COLUMN_AGE,
	{ "VolumeMode", "string", "", "volumeMode defines if a volume is intended to be used with a formatted "
	  "filesystem or to remain in raw block state.", 1 },
};

const struct api_strategy strategy_persistentvolume = {
	.defaults = pv_defaults,
	.prepare_create = pv_prepare_create,
	.validate = pv_validate,
	.columns = pv_columns,
	.ncolumns = ARRAY_SIZE(pv_columns),
	.cells = pv_cells,
};
