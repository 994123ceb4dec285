/* Fuzzes json_parse_fast (src/common/apiserver/jsondec.c), the fast path for request bodies,
 * against jansson: whatever the text, a tree it returns must be the tree jansson's parse gives
 * (JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL): equal values, integers as integers, the same key
 * order (compared through the compact dump, which writes keys in insertion order), and jansson
 * must not refuse a text it accepted. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "apiserver/internal.h"
#include "ursa/jsonutil.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *s = (const char *)data;
	json_t *fast = json_parse_fast(s, size, MAX_JSON_DEPTH);
	if (!fast)
		return 0;
	json_t *want = json_parse_limited(s, size, MAX_JSON_DEPTH, NULL);
	if (!want || !json_is_object(fast) || !json_equal(fast, want))
		abort();
	struct buf a = BUF_INIT, b = BUF_INIT;
	json_dump_buf(fast, &a);
	json_dump_buf(want, &b);
	if (a.len != b.len || memcmp(a.ptr, b.ptr, a.len) != 0)
		abort();
	buf_release(&a);
	buf_release(&b);
	json_decref(fast);
	json_decref(want);
	return 0;
}
