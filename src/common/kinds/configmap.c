/* ConfigMaps. */
#include "kinds/kinds_common.h"
#include "ursa/jsonutil.h"
#include "ursa/xalloc.h"

static void configmap_validate(const json_t *obj, const json_t *old, struct field_errors *errs)
{
	size_t size = 0;
	const json_t *data = json_object_get(obj, "data");
	validate_config_data(data, "data", false, NULL, &size, errs);
	validate_config_data(json_object_get(obj, "binaryData"), "binaryData", true, data, &size, errs);
	if (size > CONFIG_DATA_MAX)
		field_error_too_long(errs, "data", CONFIG_DATA_MAX);
	validate_immutable_data(obj, old, errs);
}

static void configmap_cells(const json_t *obj, time_t now, json_t *cells)
{
	cell_name(obj, cells);
	cell_int(cells, (long long)(json_object_size(json_object_get(obj, "data")) +
				    json_object_size(json_object_get(obj, "binaryData"))));
	cell_age(obj, now, cells);
}

static const struct api_column configmap_columns[] = {
	COLUMN_NAME,
	{ "Data", "string", "", "Data contains the configuration data.", 0 },
	COLUMN_AGE,
};

const struct api_strategy strategy_configmap = {
	.validate = configmap_validate,
	.columns = configmap_columns,
	.ncolumns = ARRAY_SIZE(configmap_columns),
	.cells = configmap_cells,
};
