/* Fuzzes the printer-column JSONPath subset: the input is a path, a newline, and a JSON document.
 * A path that evaluates must be valid; a value found by get is what eval prints; eval appends
 * nothing when it answers false. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "ursa/crd.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > 4096)
		return 0;
	char *s = malloc(size + 1);
	memcpy(s, data, size);
	s[size] = 0;
	char *nl = strchr(s, '\n');
	const char *doc = "{}";
	if (nl) {
		*nl = 0;
		doc = nl + 1;
	}
	json_t *obj = json_loads(doc, JSON_DECODE_ANY, NULL);
	bool valid = crd_jsonpath_valid(s);
	const json_t *v = crd_jsonpath_get(s, obj);
	struct buf out = BUF_INIT;
	bool found = crd_jsonpath_eval(s, obj, &out);
	if ((v || found) && !valid)
		abort();
	if (found != (v && !json_is_null(v)))
		abort();
	if (!found && out.len != 0)
		abort();
	if (valid && s[0] != '.')
		abort();
	buf_release(&out);
	json_decref(obj);
	free(s);
	return 0;
}
