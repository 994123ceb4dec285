/* Fuzzes the PodDisruptionBudget arithmetic (ursa/pdb.h) and strategy on arbitrary JSON: the
 * input is {"pdb": ..., "pods": [...]} or anything else. Checks the invariants: a scaled
 * IntOrString is never negative, a computed status never allows more disruptions than healthy
 * pods above the desired count, and a status after an eviction never goes negative. */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include "ursa/api.h"
#include "ursa/jsonutil.h"
#include "ursa/pdb.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > 8192)
		return 0;
	json_t *in = json_loadb((const char *)data, size, 0, NULL);
	if (!in)
		return 0;
	json_t *pdb = json_object_get(in, "pdb"), *pods = json_object_get(in, "pods");
	long long v;
	if (pdb_scaled(json_object_get(in, "v"), 7, &v) == 0 && v < 0)
		abort();
	if (json_is_object(pdb)) {
		json_t *copy = json_deep_copy(pdb);
		struct field_errors errs = { NULL };
		strategy_pdb.defaults(copy);
		strategy_pdb.validate(copy, NULL, &errs);
		json_t *cells = json_array();
		strategy_pdb.cells(copy, 0, cells);
		if (json_array_size(cells) != strategy_pdb.ncolumns)
			abort();
		json_decref(cells);
		field_errors_release(&errs);
		json_t *st = pdb_status_compute(copy, json_is_array(pods) ? pods : NULL, 3, 1714564800, NULL);
		if (st) {
			long long a = json_integer_value(json_object_get(st, "disruptionsAllowed"));
			long long h = json_integer_value(json_object_get(st, "currentHealthy"));
			long long d = json_integer_value(json_object_get(st, "desiredHealthy"));
			if (a < 0 || d < 0 || a > h || (a > 0 && a != h - d))
				abort();
			json_decref(st);
		}
		size_t i;
		json_t *p;
		json_array_foreach(pods, i, p) {
			pdb_selects(copy, p);
			if (pdb_eviction_verdict(copy, p) == PDB_EVICT_CONSUME) {
				json_t *after = pdb_status_after_eviction(copy, "x", 1714564800);
				if (json_integer_value(json_object_get(after, "disruptionsAllowed")) < 0)
					abort();
				json_decref(after);
			}
		}
		json_decref(copy);
	}
	json_decref(in);
	return 0;
}
