/* ServiceAccounts. */
#include "kinds/kinds_common.h"
#include "ursa/jsonutil.h"
#include "ursa/xalloc.h"

static void serviceaccount_validate(const json_t *obj, const json_t *old, struct field_errors *errs)
{
	const json_t *secrets = json_object_get(obj, "secrets");
	if (secrets && !json_is_null(secrets) && !json_is_array(secrets))
		field_error_type(errs, "secrets", "an array");
}

static void serviceaccount_cells(const json_t *obj, time_t now, json_t *cells)
{
	cell_name(obj, cells);
	cell_int(cells, (long long)json_array_size(json_object_get(obj, "secrets")));
	cell_age(obj, now, cells);
}

static const struct api_column serviceaccount_columns[] = {
	COLUMN_NAME,
	{ "Secrets", "string", "", "Secrets is a list of the secrets in the same namespace that pods running "
	  "using this ServiceAccount are allowed to use.", 0 },
	COLUMN_AGE,
};

const struct api_strategy strategy_serviceaccount = {
	.validate = serviceaccount_validate,
	.columns = serviceaccount_columns,
	.ncolumns = ARRAY_SIZE(serviceaccount_columns),
	.cells = serviceaccount_cells,
};
