/* apps/v1 DaemonSets (served by the resource manager, system tenant only). */
#include <string.h>
#include "kinds/kinds_common.h"
#include "ursa/jsonutil.h"
#include "ursa/kinds.h"
#include "ursa/xalloc.h"

/* DaemonSetStatus fields that are not omitempty upstream (python requires them). */
static const char *const status_ints[] = { "currentNumberScheduled", "desiredNumberScheduled",
					   "numberMisscheduled", "numberReady" };

static void daemonset_defaults(json_t *obj)
{
	json_t *spec = json_object_get(obj, "spec");
	if (json_is_object(spec)) {
		default_int(spec, "revisionHistoryLimit", 10);
		json_t *us = default_obj(spec, "updateStrategy");
		if (json_is_object(us)) {
			default_str(us, "type", "RollingUpdate");
			const char *type = json_str(us, "type");
			json_t *ru = type && !strcmp(type, "RollingUpdate") ? default_obj(us, "rollingUpdate") : NULL;
			if (json_is_object(ru)) {
				if (!json_object_get(ru, "maxUnavailable"))
					json_object_set_new(ru, "maxUnavailable", json_integer(1));
				if (!json_object_get(ru, "maxSurge"))
					json_object_set_new(ru, "maxSurge", json_integer(0));
			}
		}
	}
	workload_template_defaults(obj);
	json_t *status = json_object_get(obj, "status");
	for (size_t i = 0; json_is_object(status) && i < ARRAY_SIZE(status_ints); i++)
		default_int(status, status_ints[i], 0);
}

static void daemonset_prepare_create(json_t *obj)
{
	json_t *status = json_object();
	for (size_t i = 0; i < ARRAY_SIZE(status_ints); i++)
		json_object_set_new(status, status_ints[i], json_integer(0));
	json_object_set_new(obj, "status", status);
}

static void daemonset_validate(const json_t *obj, const json_t *old, struct field_errors *errs)
{
	static const char *const types[] = { "OnDelete", "RollingUpdate", NULL };
	workload_validate(obj, old, "daemonset", errs);
	const json_t *us = json_path(obj, "spec.updateStrategy");
	const char *type = json_str(us, "type");
	if (!json_is_object(us))
		return;
	if (!type || (strcmp(type, "OnDelete") && strcmp(type, "RollingUpdate"))) {
		field_error_not_supported(errs, "spec.updateStrategy.type", type ? type : "", types);
		return;
	}
	if (strcmp(type, "RollingUpdate"))
		return;
	const json_t *ru = json_object_get(us, "rollingUpdate");
	bool surge0 = validate_int_or_percent(json_object_get(ru, "maxSurge"),
					      "spec.updateStrategy.rollingUpdate.maxSurge", true, errs);
	bool unavail0 = validate_int_or_percent(json_object_get(ru, "maxUnavailable"),
						"spec.updateStrategy.rollingUpdate.maxUnavailable", true, errs);
	if (surge0 && unavail0)
		field_error_invalid_int(errs, "spec.updateStrategy.rollingUpdate.maxUnavailable", 0,
					"may not be 0 when `maxSurge` is 0");
}

static void daemonset_cells(const json_t *obj, time_t now, json_t *cells)
{
	cell_name(obj, cells);
	cell_int(cells, int_at(obj, "status.desiredNumberScheduled", 0));
	cell_int(cells, int_at(obj, "status.currentNumberScheduled", 0));
	cell_int(cells, int_at(obj, "status.numberReady", 0));
	cell_int(cells, int_at(obj, "status.updatedNumberScheduled", 0));
	cell_int(cells, int_at(obj, "status.numberAvailable", 0));
	cell_labels(cells, json_path(obj, "spec.template.spec.nodeSelector"));
	cell_age(obj, now, cells);
	cell_containers_images(cells, json_path(obj, "spec.template.spec"));
	cell_selector(cells, json_path(obj, "spec.selector"), "<none>", "<error>");
}

static const struct api_column daemonset_columns[] = {
	COLUMN_NAME,
	{ "Desired", "integer", "", "The total number of nodes that should be running the daemon pod.", 0 },
	{ "Current", "integer", "", "The number of nodes that are running at least 1 daemon pod and are "
	  "supposed to run the daemon pod.", 0 },
	{ "Ready", "integer", "", "The number of nodes that should be running the daemon pod and have one or "
	  "more of the daemon pod running and ready.", 0 },
	{ "Up-to-date", "integer", "", "The total number of nodes that are running updated daemon pod.", 0 },
	{ "Available", "integer", "", "The number of nodes that should be running the daemon pod and have one "
	  "or more of the daemon pod running and available.", 0 },
	{ "Node Selector", "string", "", "NodeSelector is a selector which must be true for the pod to fit on "
	  "a node.", 0 },
	COLUMN_AGE,
	COLUMN_CONTAINERS,
	COLUMN_IMAGES,
	{ "Selector", "string", "", "A label query over pods that are managed by the daemon set.", 1 },
};

const struct api_strategy strategy_daemonset = {
	.defaults = daemonset_defaults,
	.prepare_create = daemonset_prepare_create,
	.validate = daemonset_validate,
	.columns = daemonset_columns,
	.ncolumns = ARRAY_SIZE(daemonset_columns),
	.cells = daemonset_cells,
};
