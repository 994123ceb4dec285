/* Fuzzes the merged-watch line splitter and event rewriter: the input (after one byte that picks
 * the chunk size and one that picks the partition) is fed in chunks; every line the rewriter
 * emits must be one JSON object, and the composite resourceVersion must stay parseable. */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "gw.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 2)
		return 0;
	size_t chunk = (size_t)(data[0] % 64) + 1;
	const char *pid = data[1] & 1 ? "tp-1" : "rm-az-2";
	struct merge_state m;
	merge_state_init(&m, data[1] & 2);
	crv_set(&m.rv, "tp-1", "");
	struct buf pending = BUF_INIT, out = BUF_INIT;
	const char *p = (const char *)data + 2;
	size_t left = size - 2;
	int r = MERGE_OK;
	while (left && r == MERGE_OK) {
		size_t n = left < chunk ? left : chunk;
		r = merge_lines(&m, pid, &pending, p, n, &out);
		p += n;
		left -= n;
	}
	for (size_t a = 0; a < out.len;) {
		const char *nl = memchr(out.ptr + a, '\n', out.len - a);
		if (!nl)
			abort();
		json_t *j = json_loadb(out.ptr + a, (size_t)(nl - out.ptr - a), 0, NULL);
		if (!json_is_object(j))
			abort();
		json_decref(j);
		a = (size_t)(nl - out.ptr) + 1;
	}
	char *enc = crv_encode(&m.rv);
	struct crv c;
	const char *msg;
	if (crv_parse(enc, &c, &msg) != 0)
		abort();
	crv_release(&c);
	free(enc);
	buf_release(&pending);
	buf_release(&out);
	merge_state_release(&m);
	return 0;
}
