/* Fuzzes the structural schema engine. Input: JSON text, either an array [schema, object], or a
 * schema alone (then the object is the second half of the text when that parses, {} otherwise).
 * The schema is compiled; when it compiles, a copy of the object is pruned, defaulted and
 * validated. Checks: the schema's JSON is kept as given, pruning reports no more paths than it
 * removed and is idempotent, and defaults never bring back anything pruning would remove. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <jansson.h>
#include "ursa/crd.h"
#include "ursa/jsonutil.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *s = (const char *)data;
	json_t *doc = json_parse_limited(s, size, 64, NULL), *schema = NULL, *obj = NULL;
	if (json_is_array(doc) && json_array_size(doc) == 2) {
		schema = json_incref(json_array_get(doc, 0));
		obj = json_incref(json_array_get(doc, 1));
	} else if (json_is_object(doc)) {
		schema = json_incref(doc);
		obj = json_object();
	} else {
		schema = json_parse_limited(s, size / 2, 64, NULL);
		obj = json_parse_limited(s + size / 2, size - size / 2, 64, NULL);
	}
	struct field_errors errs = { NULL };
	struct crd_schema *cs = NULL;
	if (crd_schema_compile(schema, "spec.versions[0].schema.openAPIV3Schema", &cs, &errs) == 0) {
		if (!cs || field_errors_any(&errs) || !json_equal((json_t *)crd_schema_json(cs), schema))
			abort();
		if (obj) {
			json_t *copy = json_deep_copy(obj), *paths = json_array();
			size_t n = crd_schema_prune(cs, copy, paths);
			if (json_array_size(paths) > n || json_array_size(paths) > 100)
				abort();
			if (crd_schema_prune(cs, copy, NULL) != 0)
				abort();
			crd_schema_default(cs, copy);
			if (crd_schema_prune(cs, copy, NULL) != 0)
				abort();
			crd_schema_validate(cs, copy, &errs);
			crd_schema_validate(cs, obj, &errs);
			json_decref(copy);
			json_decref(paths);
		}
	} else if (cs || (schema && !field_errors_any(&errs))) {
		abort();
	}
	crd_schema_free(cs);
	field_errors_release(&errs);
	json_decref(schema);
	json_decref(obj);
	json_decref(doc);
	return 0;
}
