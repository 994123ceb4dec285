/* Fuzzes schema_prune and schema_json_duplicates. Input: a JSON body; its apiVersion and kind
 * pick the table (a Deployment's when they name none). Checks: the duplicate scan agrees with
 * jansson (text jansson parses only when duplicates are allowed has duplicates; text it parses
 * refusing them has none), and pruning is idempotent (a second pass finds nothing). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <jansson.h>
#include "ursa/jsonutil.h"
#include "ursa/schema.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *s = (const char *)data;
	json_t *paths = json_array();
	size_t ndup = schema_json_duplicates(s, size, paths);
	if (json_array_size(paths) > SCHEMA_PRUNE_MAX_PATHS || json_array_size(paths) > ndup)
		abort();
	json_t *strict = json_parse_limited(s, size, 64, NULL);
	json_t *loose = strict ? NULL : json_loadb(s, size, JSON_ALLOW_NUL, NULL);
	if (strict && ndup)
		abort();
	if (loose && json_depth(loose) <= 64 && !ndup)
		abort();
	json_t *obj = strict ? strict : loose;
	if (json_is_object(obj)) {
		const char *av = json_string_value(json_object_get(obj, "apiVersion"));
		const char *kind = json_string_value(json_object_get(obj, "kind"));
		const struct pb_msg *msg = av && kind ? pb_kind_schema(av, kind) : NULL;
		if (!msg)
			msg = pb_kind_schema("apps/v1", "Deployment");
		json_t *p1 = json_array();
		size_t n = schema_prune(obj, msg, p1);
		if (json_array_size(p1) > n || json_array_size(p1) > SCHEMA_PRUNE_MAX_PATHS)
			abort();
		if (json_depth(obj) < SCHEMA_PRUNE_MAX_DEPTH && schema_prune(obj, msg, NULL) != 0)
			abort();
		json_decref(p1);
	}
	json_decref(obj);
	json_decref(paths);
	return 0;
}
