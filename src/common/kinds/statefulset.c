/* apps/v1 StatefulSets and the ControllerRevisions that record their templates. */
#include <stdlib.h>
#include <string.h>
#include "kinds/kinds_common.h"
#include "ursa/jsonutil.h"
#include "ursa/kinds.h"
#include "ursa/xalloc.h"

/* StatefulSetStatus fields that are not omitempty upstream (python requires them). */
static const char *const status_ints[] = { "replicas", "availableReplicas" };

static void statefulset_defaults(json_t *obj)
{
	json_t *spec = json_object_get(obj, "spec");
	if (json_is_object(spec)) {
		default_int(spec, "replicas", 1);
		default_int(spec, "revisionHistoryLimit", 10);
		default_str(spec, "podManagementPolicy", "OrderedReady");
		json_t *us = default_obj(spec, "updateStrategy");
		if (json_is_object(us)) {
			default_str(us, "type", "RollingUpdate");
			const char *type = json_str(us, "type");
			json_t *ru = type && !strcmp(type, "RollingUpdate") ? default_obj(us, "rollingUpdate") : NULL;
			if (json_is_object(ru))
				default_int(ru, "partition", 0);
		}
		json_t *pr = default_obj(spec, "persistentVolumeClaimRetentionPolicy");
		if (json_is_object(pr)) {
			default_str(pr, "whenDeleted", "Retain");
			default_str(pr, "whenScaled", "Retain");
		}
		size_t i;
		json_t *vct;
		json_array_foreach(json_object_get(spec, "volumeClaimTemplates"), i, vct) {
			json_t *vs = json_object_get(vct, "spec");
			if (json_is_object(vs))
				default_str(vs, "volumeMode", "Filesystem");
		}
	}
	workload_template_defaults(obj);
	json_t *status = json_object_get(obj, "status");
	for (size_t i = 0; json_is_object(status) && i < ARRAY_SIZE(status_ints); i++)
		default_int(status, status_ints[i], 0);
}

static void statefulset_prepare_create(json_t *obj)
{
	json_t *status = json_object();
	for (size_t i = 0; i < ARRAY_SIZE(status_ints); i++)
		json_object_set_new(status, status_ints[i], json_integer(0));
	json_object_set_new(obj, "status", status);
}

static void validate_claim_templates(const json_t *spec, struct field_errors *errs)
{
	const json_t *vcts = json_object_get(spec, "volumeClaimTemplates");
	if (!vcts || json_is_null(vcts))
		return;
	if (!json_is_array(vcts)) {
		field_error_type(errs, "spec.volumeClaimTemplates", "an array");
		return;
	}
	size_t i;
	json_t *vct;
	json_array_foreach(vcts, i, vct) {
		char *f = xasprintf("spec.volumeClaimTemplates[%zu]", i);
		char *fn = xasprintf("%s.metadata.name", f), *fs = xasprintf("%s.spec", f);
		const char *n = json_path_str(vct, "metadata.name");
		if (!n || !*n)
			field_error_required(errs, fn);
		else if (!valid_dns1123_label(n))
			field_error_invalid(errs, fn, n, "a lowercase RFC 1123 label must consist of lower case "
				"alphanumeric characters or '-', and must start and end with an alphanumeric character");
		pvc_spec_validate(json_object_get(vct, "spec"), fs, errs);
		free(f), free(fn), free(fs);
	}
}

/* A copy of obj whose template has a volume per claim template it does not already name, as
 * the pods will (the controller adds them): mounts may name a claim template. NULL if none. */
static json_t *with_claim_volumes(const json_t *obj)
{
	const json_t *vcts = json_path(obj, "spec.volumeClaimTemplates");
	if (!json_is_array(vcts) || json_array_size(vcts) == 0 || !json_is_object(json_path(obj, "spec.template.spec")))
		return NULL;
	json_t *copy = json_deep_copy(obj), *ps = (json_t *)json_path(copy, "spec.template.spec");
	json_t *vols = json_object_get(ps, "volumes");
	if (!vols || json_is_null(vols))
		json_object_set_new(ps, "volumes", vols = json_array());
	if (!json_is_array(vols))
		return copy; /* its own error */
	size_t i, j;
	json_t *vct, *v;
	json_array_foreach(vcts, i, vct) {
		const char *n = json_path_str(vct, "metadata.name");
		bool named = !n || !*n;
		json_array_foreach(vols, j, v)
			named = named || (json_str(v, "name") && !strcmp(json_str(v, "name"), n));
		if (!named)
			json_array_append_new(vols, json_pack("{s:s,s:{s:s}}", "name", n, "persistentVolumeClaim",
							      "claimName", n));
	}
	return copy;
}

static void statefulset_validate(const json_t *obj, const json_t *old, struct field_errors *errs)
{
	static const char *const types[] = { "OnDelete", "RollingUpdate", NULL };
	static const char *const policies[] = { "OrderedReady", "Parallel", NULL };
	json_t *full = with_claim_volumes(obj);
	workload_validate(full ? full : obj, old, "statefulset", errs);
	json_decref(full);
	const json_t *spec = json_object_get(obj, "spec");
	if (!json_is_object(spec))
		return;
	const char *pmp = json_str(spec, "podManagementPolicy");
	if (!pmp || (strcmp(pmp, "OrderedReady") && strcmp(pmp, "Parallel")))
		field_error_not_supported(errs, "spec.podManagementPolicy", pmp ? pmp : "", policies);
	validate_claim_templates(spec, errs);
	if (old) {
		validate_immutable(json_object_get(spec, "podManagementPolicy"),
				   json_path(old, "spec.podManagementPolicy"), "spec.podManagementPolicy", errs);
		validate_immutable(json_object_get(spec, "volumeClaimTemplates"),
				   json_path(old, "spec.volumeClaimTemplates"), "spec.volumeClaimTemplates", errs);
		validate_immutable(json_object_get(spec, "serviceName"), json_path(old, "spec.serviceName"),
				   "spec.serviceName", errs);
	}
	const json_t *us = json_object_get(spec, "updateStrategy");
	if (!json_is_object(us))
		return;
	const char *type = json_str(us, "type");
	if (!type || (strcmp(type, "OnDelete") && strcmp(type, "RollingUpdate"))) {
		field_error_not_supported(errs, "spec.updateStrategy.type", type ? type : "", types);
		return;
	}
	const json_t *ru = json_object_get(us, "rollingUpdate");
	if (!strcmp(type, "OnDelete") && ru && !json_is_null(ru))
		field_error_invalid_json(errs, "spec.updateStrategy.rollingUpdate", ru,
					 "only allowed for updateStrategy 'RollingUpdate'");
	else if (json_is_object(ru))
		validate_nonnegative(json_object_get(ru, "partition"), "spec.updateStrategy.rollingUpdate.partition",
				     errs);
}

static void statefulset_cells(const json_t *obj, time_t now, json_t *cells)
{
	char ready[64];
	snprintf(ready, sizeof(ready), "%lld/%lld", int_at(obj, "status.readyReplicas", 0),
		 int_at(obj, "spec.replicas", 1));
	cell_name(obj, cells);
	cell_str(cells, ready);
	cell_age(obj, now, cells);
	cell_containers_images(cells, json_path(obj, "spec.template.spec"));
}

static const struct api_column statefulset_columns[] = {
	COLUMN_NAME,
	{ "Ready", "string", "", "Number of the pod with ready state", 0 },
	COLUMN_AGE,
	COLUMN_CONTAINERS,
	COLUMN_IMAGES,
};

const struct api_strategy strategy_statefulset = {
	.defaults = statefulset_defaults,
	.prepare_create = statefulset_prepare_create,
	.validate = statefulset_validate,
	.columns = statefulset_columns,
	.ncolumns = ARRAY_SIZE(statefulset_columns),
	.cells = statefulset_cells,
};

/* apps/v1 ControllerRevision: an immutable snapshot (data) with a revision number. */
static void controllerrevision_validate(const json_t *obj, const json_t *old, struct field_errors *errs)
{
	const json_t *rev = json_object_get(obj, "revision");
	if (!json_is_integer(rev))
		field_error_required(errs, "revision");
	else
		validate_nonnegative(rev, "revision", errs);
	if (old && !json_equal(json_object_get(obj, "data"), json_object_get(old, "data")))
		field_error_invalid_json(errs, "data", json_object_get(obj, "data"), "field is immutable");
}

static void controllerrevision_cells(const json_t *obj, time_t now, json_t *cells)
{
	const json_t *ref = json_controller_ref(obj);
	cell_name(obj, cells);
	if (ref) {
		/* "statefulset.apps/db" */
		const char *av = json_str(ref, "apiVersion"), *kind = json_str(ref, "kind"), *n = json_str(ref, "name");
		const char *slash = av ? strchr(av, '/') : NULL;
		struct buf s = BUF_INIT;
		for (const char *p = kind ? kind : ""; *p; p++)
			buf_addch(&s, (char)(*p >= 'A' && *p <= 'Z' ? *p - 'A' + 'a' : *p));
		if (slash)
			buf_addf(&s, ".%.*s", (int)(slash - av), av);
		buf_addf(&s, "/%s", n ? n : "");
		cell_str(cells, s.ptr);
		buf_release(&s);
	} else {
		cell_str(cells, "<none>");
	}
	cell_int(cells, int_at(obj, "revision", 0));
	cell_age(obj, now, cells);
}

static const struct api_column controllerrevision_columns[] = {
	COLUMN_NAME,
	{ "Controller", "string", "", "Controller of the object", 0 },
	{ "Revision", "integer", "", "Revision indicates the revision of the state represented by Data.", 0 },
	COLUMN_AGE,
};

const struct api_strategy strategy_controllerrevision = {
	.validate = controllerrevision_validate,
	.columns = controllerrevision_columns,
	.ncolumns = ARRAY_SIZE(controllerrevision_columns),
	.cells = controllerrevision_cells,
};
