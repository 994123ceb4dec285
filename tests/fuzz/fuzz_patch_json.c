/* Fuzzes json_patch_apply. Input: document JSON, a NUL byte, patch JSON (no NUL: the whole
 * input is the patch, applied to {}). Checks that the inputs are left unchanged. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <jansson.h>
#include "ursa/jsonutil.h"
#include "ursa/patch.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *s = (const char *)data;
	const char *nul = memchr(s, '\0', size);
	json_t *doc = nul ? json_parse_limited(s, (size_t)(nul - s), 64, NULL) : json_object();
	json_t *patch = nul ? json_parse_limited(nul + 1, size - (size_t)(nul - s) - 1, 64, NULL)
			    : json_parse_limited(s, size, 64, NULL);
	json_t *out = NULL;
	struct buf err = BUF_INIT;

	if (doc && patch) {
		char *before = json_dumps(doc, JSON_COMPACT | JSON_ENCODE_ANY);
		int rc = json_patch_apply(doc, patch, &out, &err);
		char *after = json_dumps(doc, JSON_COMPACT | JSON_ENCODE_ANY);
		if (strcmp(before, after) || (rc == 0) != (out != NULL) || (rc && !err.len))
			abort();
		free(before);
		free(after);
	}
	json_decref(out);
	json_decref(doc);
	json_decref(patch);
	buf_release(&err);
	return 0;
}
