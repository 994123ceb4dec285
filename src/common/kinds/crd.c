/* apiextensions.k8s.io/v1 CustomResourceDefinition: a tenant's own API types. The definition's
 * rules live in src/common/crd/def.c (crd_def_parse); here are the object's defaults, the
 * cleanup finalizer, and what may not change on update. */
#include <stdlib.h>
#include <string.h>
#include "kinds_common.h"
#include "ursa/crd.h"
#include "ursa/jsonutil.h"
#include "ursa/xalloc.h"

static const struct api_column crd_columns[] = {
	{ "Name", "string", "name", "Name must be unique within a namespace.", 0 },
	{ "Created At", "date", "", "CreationTimestamp of the resource.", 0 },
};

static void crd_cells(const json_t *obj, time_t now, json_t *cells)
{
	(void)now;
	json_t *meta = json_object_get(obj, "metadata");
	json_array_append_new(cells, json_string(json_string_value(json_object_get(meta, "name"))));
	json_t *ts = json_object_get(meta, "creationTimestamp");
	json_array_append_new(cells, ts ? json_incref(ts) : json_null());
}

/* conversion.strategy None; names.singular (lowercase kind) and names.listKind (kind + "List"),
 * as upstream's defaulting does. Anything of the wrong type is left for validation. */
static void crd_defaults(json_t *obj)
{
	json_t *spec = json_object_get(obj, "spec");
	if (!json_is_object(spec))
		return;
	json_t *conv = default_obj(spec, "conversion");
	if (json_is_object(conv))
		default_str(conv, "strategy", "None");
	json_t *names = json_object_get(spec, "names");
	const char *kind = json_string_value(json_object_get(names, "kind"));
	if (!json_is_object(names) || !kind || !*kind)
		return;
	char *singular = xstrdup(kind);
	for (char *p = singular; *p; p++)
		if (*p >= 'A' && *p <= 'Z')
			*p = (char)(*p - 'A' + 'a');
	char *list_kind = xasprintf("%sList", kind);
	default_str(names, "singular", singular);
	default_str(names, "listKind", list_kind);
	free(singular);
	free(list_kind);
}

/* The cleanup finalizer (the controller manager deletes the custom resources, then removes it)
 * and the initial status: the storage version is the only stored one; names are accepted by the
 * API server's registry. */
static void crd_prepare_create(json_t *obj)
{
	json_t *meta = json_object_get(obj, "metadata");
	if (json_is_object(meta)) {
		json_t *fin = json_object_get(meta, "finalizers");
		if (!fin || json_is_null(fin)) {
			fin = json_array();
			json_object_set_new(meta, "finalizers", fin);
		}
		bool has = false;
		size_t i;
		json_t *f;
		json_array_foreach(fin, i, f)
			has |= json_is_string(f) && !strcmp(json_string_value(f), CRD_CLEANUP_FINALIZER);
		if (json_is_array(fin) && !has)
			json_array_append_new(fin, json_string(CRD_CLEANUP_FINALIZER));
	}
	json_t *stored = json_array();
	size_t i;
	json_t *v;
	json_array_foreach(json_object_get(json_object_get(obj, "spec"), "versions"), i, v) {
		const char *name = json_string_value(json_object_get(v, "name"));
		if (json_is_true(json_object_get(v, "storage")) && name) {
			json_array_append_new(stored, json_string(name));
			break;
		}
	}
	json_object_set_new(obj, "status", json_pack("{s:[], s:{s:s, s:s}, s:o}", "conditions", "acceptedNames",
						     "plural", "", "kind", "", "storedVersions", stored));
}

static void crd_validate(const json_t *obj, const json_t *old, struct field_errors *errs)
{
	struct crd_def *d = NULL;
	if (crd_def_parse(obj, &d, errs) == 0)
		crd_def_free(d);
	if (!old)
		return;
	validate_immutable(json_path(obj, "spec.scope"), json_path(old, "spec.scope"), "spec.scope", errs);
	validate_immutable(json_path(obj, "spec.group"), json_path(old, "spec.group"), "spec.group", errs);
	validate_immutable(json_path(obj, "spec.names.plural"), json_path(old, "spec.names.plural"),
			   "spec.names.plural", errs);
}

const struct api_strategy strategy_crd = {
	.defaults = crd_defaults,
	.prepare_create = crd_prepare_create,
	.validate = crd_validate,
	.columns = crd_columns,
	.ncolumns = sizeof(crd_columns) / sizeof(crd_columns[0]),
	.cells = crd_cells,
};
