/* Fuzzes merge_patch_apply. Input: document JSON, a NUL byte, patch JSON (no NUL: the whole
 * input is the patch, applied to {}). Checks RFC 7386's idempotence: applying the patch to
 * its own result changes nothing. */
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
	json_t *once = NULL, *twice = NULL;
	struct buf err = BUF_INIT;

	if (doc && patch) {
		if (merge_patch_apply(doc, patch, &once, &err) || merge_patch_apply(once, patch, &twice, &err))
			abort();
		if (!json_equal(once, twice))
			abort();
	}
	json_decref(once);
	json_decref(twice);
	json_decref(doc);
	json_decref(patch);
	buf_release(&err);
	return 0;
}
