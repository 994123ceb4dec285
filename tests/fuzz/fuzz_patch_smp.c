/* Fuzzes strategic_merge_patch_apply. Input: one byte choosing the kind, then document JSON,
 * a NUL byte, patch JSON. Checks that inputs stay unchanged and that no directive key
 * ($patch, $retainKeys, $setElementOrder/..., $deleteFromPrimitiveList/...) leaks into the
 * result when the document itself has none. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <jansson.h>
#include "ursa/jsonutil.h"
#include "ursa/patch.h"

static const char *const kinds[] = { "Pod", "Deployment", "Node", "Service", "ConfigMap", "CronJob",
				     "ServiceAccount", "Widget" };

/* Other "$..." keys are plain fields, as upstream treats them. */
static int is_directive(const char *k)
{
	return !strcmp(k, "$patch") || !strcmp(k, "$retainKeys") || !strncmp(k, "$setElementOrder/", 17) ||
	       !strncmp(k, "$deleteFromPrimitiveList/", 25);
}

static int has_directive(const json_t *j)
{
	const char *k;
	json_t *v;
	size_t i;

	if (json_is_object(j)) {
		json_object_foreach((json_t *)j, k, v)
			if (is_directive(k) || has_directive(v))
				return 1;
	} else if (json_is_array(j)) {
		json_array_foreach(j, i, v)
			if (has_directive(v))
				return 1;
	}
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	const char *kind = kinds[data[0] % (sizeof(kinds) / sizeof(kinds[0]))];
	const char *s = (const char *)data + 1;
	size--;
	const char *nul = memchr(s, '\0', size);
	if (!nul)
		return 0;
	json_t *doc = json_parse_limited(s, (size_t)(nul - s), 64, NULL);
	json_t *patch = json_parse_limited(nul + 1, size - (size_t)(nul - s) - 1, 64, NULL);
	json_t *out = NULL;
	struct buf err = BUF_INIT;

	if (doc && patch) {
		char *before = json_dumps(doc, JSON_COMPACT | JSON_ENCODE_ANY);
		char *pbefore = json_dumps(patch, JSON_COMPACT | JSON_ENCODE_ANY);
		int rc = strategic_merge_patch_apply(doc, patch, kind, &out, &err);
		char *after = json_dumps(doc, JSON_COMPACT | JSON_ENCODE_ANY);
		char *pafter = json_dumps(patch, JSON_COMPACT | JSON_ENCODE_ANY);
		if (strcmp(before, after) || strcmp(pbefore, pafter) || (rc == 0) != (out != NULL) || (rc && !err.len))
			abort();
		if (!rc && !has_directive(doc) && has_directive(out))
			abort();
		free(before);
		free(after);
		free(pbefore);
		free(pafter);
	}
	json_decref(out);
	json_decref(doc);
	json_decref(patch);
	buf_release(&err);
	return 0;
}
