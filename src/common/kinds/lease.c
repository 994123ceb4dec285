/* coordination.k8s.io/v1 Leases. */
#include "kinds/kinds_common.h"
#include "ursa/jsonutil.h"
#include "ursa/xalloc.h"

static void lease_validate(const json_t *obj, const json_t *old, struct field_errors *errs)
{
	const json_t *spec = json_object_get(obj, "spec");
	validate_positive(json_object_get(spec, "leaseDurationSeconds"), "spec.leaseDurationSeconds", errs);
	validate_nonnegative(json_object_get(spec, "leaseTransitions"), "spec.leaseTransitions", errs);
}

/* Holder prints "" (not "<none>") when nobody holds the lease, as upstream. */
static void lease_cells(const json_t *obj, time_t now, json_t *cells)
{
	cell_name(obj, cells);
	cell_str(cells, json_path_str(obj, "spec.holderIdentity"));
	cell_age(obj, now, cells);
}

static const struct api_column lease_columns[] = {
	COLUMN_NAME,
	{ "Holder", "string", "", "holderIdentity contains the identity of the holder of a current lease.", 0 },
	COLUMN_AGE,
};

const struct api_strategy strategy_lease = {
	.validate = lease_validate,
	.columns = lease_columns,
	.ncolumns = ARRAY_SIZE(lease_columns),
	.cells = lease_cells,
};
