/* apps/v1 Deployments. */
#include <string.h>
#include "kinds/kinds_common.h"
#include "ursa/jsonutil.h"
#include "ursa/xalloc.h"

static void deployment_defaults(json_t *obj)
{
	json_t *spec = json_object_get(obj, "spec");
	if (!json_is_object(spec))
		return;
	default_int(spec, "replicas", 1);
	default_int(spec, "revisionHistoryLimit", 10);
	default_int(spec, "progressDeadlineSeconds", 600);
	json_t *strategy = default_obj(spec, "strategy");
	if (json_is_object(strategy)) {
		default_str(strategy, "type", "RollingUpdate");
		const char *type = json_str(strategy, "type");
		if (type && !strcmp(type, "RollingUpdate")) {
			json_t *ru = default_obj(strategy, "rollingUpdate");
			if (json_is_object(ru)) {
				if (!json_object_get(ru, "maxUnavailable"))
					json_object_set_new(ru, "maxUnavailable", json_string("25%"));
				if (!json_object_get(ru, "maxSurge"))
					json_object_set_new(ru, "maxSurge", json_string("25%"));
			}
		}
	}
	workload_template_defaults(obj);
}

static void deployment_prepare_create(json_t *obj)
{
	json_object_set_new(obj, "status", json_object());
}

static void validate_strategy(const json_t *strategy, struct field_errors *errs)
{
	static const char *const types[] = { "Recreate", "RollingUpdate", NULL };
	const char *type = json_str(strategy, "type");
	const json_t *ru = json_object_get(strategy, "rollingUpdate");
	if (!json_is_object(strategy))
		return;
	if (!type || !*type) {
		field_error_required(errs, "spec.strategy.type");
		return;
	}
	if (strcmp(type, "Recreate") && strcmp(type, "RollingUpdate")) {
		field_error_not_supported(errs, "spec.strategy.type", type, types);
		return;
	}
	if (!strcmp(type, "Recreate")) {
		if (ru && !json_is_null(ru))
			field_error_forbidden(errs, "spec.strategy.rollingUpdate",
					      "may not be specified when strategy `type` is 'Recreate'");
		return;
	}
	bool surge0 = validate_int_or_percent(json_object_get(ru, "maxSurge"), "spec.strategy.rollingUpdate.maxSurge",
					      false, errs);
	bool unavail0 = validate_int_or_percent(json_object_get(ru, "maxUnavailable"),
						"spec.strategy.rollingUpdate.maxUnavailable", true, errs);
	if (surge0 && unavail0)
		field_error_invalid_int(errs, "spec.strategy.rollingUpdate.maxUnavailable", 0,
					"may not be 0 when `maxSurge` is 0");
}

static void deployment_validate(const json_t *obj, const json_t *old, struct field_errors *errs)
{
	workload_validate(obj, old, "deployment", errs);
	const json_t *spec = json_object_get(obj, "spec");
	validate_strategy(json_object_get(spec, "strategy"), errs);
	const json_t *pds = json_object_get(spec, "progressDeadlineSeconds");
	validate_positive(pds, "spec.progressDeadlineSeconds", errs);
	if (json_is_integer(pds) && json_integer_value(pds) <= int_at(spec, "minReadySeconds", 0))
		field_error_invalid_int(errs, "spec.progressDeadlineSeconds", (long long)json_integer_value(pds),
					"must be greater than minReadySeconds");
}

static void deployment_cells(const json_t *obj, time_t now, json_t *cells)
{
	struct buf b = BUF_INIT;
	cell_name(obj, cells);
	buf_addf(&b, "%lld/%lld", int_at(obj, "status.readyReplicas", 0), int_at(obj, "spec.replicas", 1));
	cell_str(cells, buf_cstr(&b));
	cell_int(cells, int_at(obj, "status.updatedReplicas", 0));
	cell_int(cells, int_at(obj, "status.availableReplicas", 0));
	cell_age(obj, now, cells);
	cell_containers_images(cells, json_path(obj, "spec.template.spec"));
	cell_selector(cells, json_path(obj, "spec.selector"), "", "<invalid>");
	buf_release(&b);
}

/* Upstream declares Up-to-date and Available as strings but fills them with integers. */
static const struct api_column deployment_columns[] = {
	COLUMN_NAME,
	{ "Ready", "string", "", "Number of the pod with ready state", 0 },
	{ "Up-to-date", "string", "", "Total number of non-terminated pods targeted by this deployment that "
	  "have the desired template spec.", 0 },
	{ "Available", "string", "", "Total number of available pods (ready for at least minReadySeconds) "
	  "targeted by this deployment.", 0 },
	COLUMN_AGE,
	COLUMN_CONTAINERS,
	COLUMN_IMAGES,
	{ "Selector", "string", "", "Label selector for pods.", 1 },
};

const struct api_strategy strategy_deployment = {
	.defaults = deployment_defaults,
	.prepare_create = deployment_prepare_create,
	.validate = deployment_validate,
	.columns = deployment_columns,
	.ncolumns = ARRAY_SIZE(deployment_columns),
	.cells = deployment_cells,
};
