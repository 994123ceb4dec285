/* Fuzzes pruning, defaulting and validation of custom resources under one fixed schema that
 * uses every structural feature (defaults, preserve-unknown-fields, embedded resources,
 * list-type set and map, int-or-string, additionalProperties, value validations). Input: the
 * object as JSON text. Checks: pruning is idempotent and reports no more paths than it removed,
 * defaulting adds nothing pruning would remove and is idempotent, validation never crashes. */
#include <stdint.h>
#include <stdlib.h>
#include <jansson.h>
#include "ursa/crd.h"
#include "ursa/jsonutil.h"

static const char schema_text[] =
	"{\"type\":\"object\",\"properties\":{"
	"\"metadata\":{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\",\"maxLength\":20}}},"
	"\"spec\":{\"type\":\"object\",\"default\":{},\"required\":[\"cronSpec\"],\"properties\":{"
	"\"cronSpec\":{\"type\":\"string\",\"default\":\"5 0 * * *\",\"pattern\":\"^(\\\\d+|\\\\*)(/\\\\d+)?(\\\\s+(\\\\d+|\\\\*)(/\\\\d+)?){4}$\"},"
	"\"replicas\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":10,\"default\":1,\"format\":\"int32\"},"
	"\"ratio\":{\"type\":\"number\",\"multipleOf\":0.25,\"exclusiveMaximum\":true,\"maximum\":4},"
	"\"mode\":{\"type\":\"string\",\"enum\":[\"a\",\"b\"],\"nullable\":true},"
	"\"when\":{\"type\":\"string\",\"format\":\"date-time\"},"
	"\"port\":{\"x-kubernetes-int-or-string\":true,\"anyOf\":[{\"type\":\"integer\"},{\"type\":\"string\"}]},"
	"\"tags\":{\"type\":\"array\",\"x-kubernetes-list-type\":\"set\",\"maxItems\":50,\"items\":{\"type\":\"string\",\"maxLength\":8}},"
	"\"ports\":{\"type\":\"array\",\"x-kubernetes-list-type\":\"map\",\"x-kubernetes-list-map-keys\":[\"port\",\"protocol\"],"
	"\"items\":{\"type\":\"object\",\"required\":[\"port\"],\"properties\":{\"port\":{\"type\":\"integer\"},"
	"\"protocol\":{\"type\":\"string\",\"default\":\"TCP\"}}}},"
	"\"uniq\":{\"type\":\"array\",\"uniqueItems\":true,\"items\":{\"x-kubernetes-preserve-unknown-fields\":true}},"
	"\"labels\":{\"type\":\"object\",\"maxProperties\":5,\"additionalProperties\":{\"type\":\"string\",\"default\":\"x\"}},"
	"\"raw\":{\"type\":\"object\",\"x-kubernetes-preserve-unknown-fields\":true,\"properties\":{\"k\":{\"type\":\"object\",\"properties\":{\"v\":{\"type\":\"integer\",\"default\":2}}}}},"
	"\"template\":{\"type\":\"object\",\"x-kubernetes-embedded-resource\":true,\"properties\":{\"spec\":{\"type\":\"object\","
	"\"properties\":{\"n\":{\"type\":\"integer\",\"default\":3}}}}},"
	"\"choice\":{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"},\"b\":{\"type\":\"string\"}},"
	"\"oneOf\":[{\"required\":[\"a\"]},{\"required\":[\"b\"]}],\"not\":{\"minProperties\":3}}}},"
	"\"status\":{\"type\":\"object\",\"x-kubernetes-preserve-unknown-fields\":true}}}";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct crd_schema *s;
	if (!s) {
		json_t *j = json_loads(schema_text, 0, NULL);
		struct field_errors e = { NULL };
		if (!j || crd_schema_compile(j, "schema", &s, &e) != 0)
			abort();
		json_decref(j);
	}
	json_t *obj = json_parse_limited((const char *)data, size, 64, NULL);
	if (!obj)
		return 0;
	json_t *paths = json_array();
	size_t n = crd_schema_prune(s, obj, paths);
	if (json_array_size(paths) > n || crd_schema_prune(s, obj, NULL) != 0)
		abort();
	crd_schema_default(s, obj);
	if (crd_schema_prune(s, obj, NULL) != 0)
		abort();
	json_t *once = json_deep_copy(obj);
	crd_schema_default(s, obj);
	if (!json_equal(once, obj))
		abort();
	struct field_errors e = { NULL };
	crd_schema_validate(s, obj, &e);
	field_errors_release(&e);
	json_decref(once);
	json_decref(paths);
	json_decref(obj);
	return 0;
}
