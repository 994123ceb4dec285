/* RFC 7386 JSON Merge Patch. */
#include "ursa/patch.h"
#include "ursa/errors.h"
#include "patch_internal.h"

/* Applies patch to target (owned, may be NULL for "absent") and returns the owned result.
 * Works in place on target, which the caller owns exclusively. */
static json_t *merge(json_t *target, const json_t *patch)
{
	const char *k;
	size_t klen;
	json_t *v;

	if (!json_is_object(patch)) {
		json_decref(target);
		return json_deep_copy(patch);
	}
	if (!json_is_object(target)) {
		json_decref(target);
		target = json_object();
	}
	json_object_keylen_foreach((json_t *)patch, k, klen, v) {
		if (json_is_null(v)) {
			json_object_deln(target, k, klen);
			continue;
		}
		json_t *cur = json_object_getn(target, k, klen);
		json_object_setn_new(target, k, klen, merge(json_incref(cur), v));
	}
	return target;
}

int merge_patch_apply(const json_t *doc, const json_t *patch, json_t **ret, struct buf *err)
{
	(void)err;
	*ret = merge(doc ? json_deep_copy(doc) : NULL, patch);
	if (!*ret)
		*ret = json_null();
	return 0;
}
