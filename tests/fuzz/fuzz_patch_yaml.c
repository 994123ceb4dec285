/* Fuzzes yaml_to_json with a depth cap of 20. Checks the cap holds and that every result
 * serialises to JSON that jansson parses back to an equal value. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <jansson.h>
#include "ursa/jsonutil.h"
#include "ursa/patch.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	json_t *out = NULL;
	struct buf err = BUF_INIT;
	int rc = yaml_to_json((const char *)data, size, 20, &out, &err);

	if (rc && (out || !err.len))
		abort();
	if (!rc) {
		if (json_depth(out) > 20)
			abort();
		char *text = json_dumps(out, JSON_COMPACT | JSON_ENCODE_ANY);
		json_t *back = text ? json_loads(text, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL) : NULL;
		if (!back || !json_equal(back, out))
			abort();
		json_decref(back);
		free(text);
	}
	json_decref(out);
	buf_release(&err);
	return 0;
}
