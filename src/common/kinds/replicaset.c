/* apps/v1 ReplicaSets. */
#include "kinds/kinds_common.h"
#include "ursa/jsonutil.h"
#include "ursa/xalloc.h"

/* status.replicas is not omitempty upstream, so clients (python's V1ReplicaSetStatus) require it. */
static void replicaset_defaults(json_t *obj)
{
	json_t *spec = json_object_get(obj, "spec");
	if (json_is_object(spec))
		default_int(spec, "replicas", 1);
	workload_template_defaults(obj);
	json_t *status = json_object_get(obj, "status");
	if (json_is_object(status))
		default_int(status, "replicas", 0);
}

static void replicaset_prepare_create(json_t *obj)
{
	json_object_set_new(obj, "status", json_pack("{s:i}", "replicas", 0));
}

static void replicaset_validate(const json_t *obj, const json_t *old, struct field_errors *errs)
{
	workload_validate(obj, old, "deployment", errs);
}

static void replicaset_cells(const json_t *obj, time_t now, json_t *cells)
{
	cell_name(obj, cells);
	cell_int(cells, int_at(obj, "spec.replicas", 1));
	cell_int(cells, int_at(obj, "status.replicas", 0));
	cell_int(cells, int_at(obj, "status.readyReplicas", 0));
	cell_age(obj, now, cells);
	cell_containers_images(cells, json_path(obj, "spec.template.spec"));
	cell_selector(cells, json_path(obj, "spec.selector"), "<none>", "<error>");
}

static const struct api_column replicaset_columns[] = {
	COLUMN_NAME,
	{ "Desired", "integer", "", "Replicas is the number of desired replicas.", 0 },
	{ "Current", "integer", "", "Replicas is the most recently observed number of replicas.", 0 },
	{ "Ready", "integer", "", "The number of ready replicas for this replica set.", 0 },
	COLUMN_AGE,
	COLUMN_CONTAINERS,
	COLUMN_IMAGES,
	{ "Selector", "string", "", "Selector is a label query over pods that should match the replica count.", 1 },
};

static const struct api_field replicaset_fields[] = {
	{ "status.replicas", "status.replicas" },
};

const struct api_strategy strategy_replicaset = {
	.defaults = replicaset_defaults,
	.prepare_create = replicaset_prepare_create,
	.validate = replicaset_validate,
	.columns = replicaset_columns,
	.ncolumns = ARRAY_SIZE(replicaset_columns),
	.cells = replicaset_cells,
	.fields = replicaset_fields,
	.nfields = ARRAY_SIZE(replicaset_fields),
};
