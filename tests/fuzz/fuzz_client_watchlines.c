/* Fuzzes the watch-stream line splitter and event parser: the input (after one byte that
 * picks the chunk size) is fed in chunks, every line parsed as an event. Splitting must not
 * depend on how the bytes were chunked. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "client/client_internal.h"

struct count {
	size_t lines, events, bytes;
};

static int on_line(void *ud, const char *line, size_t len)
{
	struct count *c = ud;
	struct watch_event ev;
	c->lines++;
	c->bytes += len;
	if (watch_event_parse(line, len, &ev) == 0) {
		char *key = object_key(ev.object);
		c->events++;
		if (ev.type == WEV_ERROR)
			(void)watch_status_expired(ev.object);
		(void)watch_event_type_name(ev.type);
		free(key);
		json_decref(ev.object);
	}
	return 0;
}

static int feed(const uint8_t *data, size_t size, size_t chunk, struct count *c)
{
	struct watch_lines wl;
	int rc = 0;
	watch_lines_init(&wl);
	wl.max_line = 1 << 16;
	for (size_t off = 0; off < size && !rc; off += chunk) {
		size_t n = size - off < chunk ? size - off : chunk;
		rc = watch_lines_feed(&wl, (const char *)data + off, n, on_line, c);
	}
	watch_lines_release(&wl);
	return rc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct count whole = { 0 }, chunked = { 0 };
	if (size < 1)
		return 0;
	size_t chunk = data[0] ? data[0] : 1;
	data++;
	size--;
	int rc1 = feed(data, size, size ? size : 1, &whole);
	int rc2 = feed(data, size, chunk, &chunked);
	if (rc1 == 0 && rc2 == 0 &&
	    (whole.lines != chunked.lines || whole.events != chunked.events || whole.bytes != chunked.bytes))
		abort();
	return 0;
}
