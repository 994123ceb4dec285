/* Fuzzes the JSON text surgery of src/common/apiserver/jsontext.c on arbitrary bytes. Invariants:
 * nothing reads outside the input; where jansson accepts the input, json_text_load (whole, and
 * projected) equals jansson's parse (of json_text_project's text, for the projection), and
 * json_text_drop_member's text is the object without that member. */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "apiserver/jsontext.h"

static const char *const keep[] = { "metadata.name", "spec.containers.*.name", "status", "*.a", NULL };

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *s = (const char *)data;
	json_t *ref = json_loadb(s, size, JSON_DECODE_ANY, NULL);
	(void)json_text_skip(s, size, 0);
	size_t off, len;
	if (json_text_member(s, size, "metadata", &off, &len) == 0 && (off + len > size || len == 0))
		abort();
	json_t *whole = json_text_load(s, size, NULL);
	if (ref && whole && !json_equal(ref, whole))
		abort();
	struct buf b = BUF_INIT;
	json_t *part = json_text_load(s, size, keep);
	if (json_text_project(s, size, keep, &b) == 0 && ref && part) {
		json_t *pj = json_loadb(b.ptr, b.len, JSON_DECODE_ANY, NULL);
		if (!pj || !json_equal(pj, part))
			abort();
		json_decref(pj);
	}
	buf_reset(&b);
	if (json_text_drop_member(s, size, "a", &b) == 0 && json_is_object(ref)) {
		json_t *dj = json_loadb(b.ptr, b.len, 0, NULL);
		json_t *want = json_copy(ref);
		json_object_del(want, "a");
		if (!dj || !json_equal(dj, want))
			abort();
		json_decref(dj);
		json_decref(want);
	}
	buf_release(&b);
	json_decref(part);
	json_decref(whole);
	json_decref(ref);
	return 0;
}
