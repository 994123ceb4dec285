/* Fuzzes the gateway's HTTP/1.1 response parser (h1.h): the input after its first byte is one
 * connection's bytes, fed whole and again split at a point the first byte picks, then closed;
 * the first byte's low bit says whether the request was HEAD. Both feedings must agree, a
 * complete answer must have a status of three digits, a body within the cap and used no more
 * than it was given. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "h1.h"

static enum h1_parse_result run(const char *d, size_t n, size_t split, bool head, struct h1_parser *p, size_t *ret_used)
{
	h1_parser_init(p, head);
	size_t used = 0, u = 0;
	enum h1_parse_result r = H1_MORE;
	if (split) { /* feeding nothing says the peer closed */
		r = h1_parser_feed(p, d, split, &u);
		used += u;
	}
	if (r == H1_MORE && n > split) {
		r = h1_parser_feed(p, d + split, n - split, &u);
		used += u;
	}
	if (r == H1_MORE)
		r = h1_parser_feed(p, "", 0, &u);
	*ret_used = used;
	return r;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	bool head = data[0] & 1;
	size_t n = size - 1;
	char *copy = malloc(n ? n : 1);
	memcpy(copy, data + 1, n);
	size_t split = n ? (size_t)(data[0] >> 1) * n / 127 : 0;
	if (split > n)
		split = n;
	struct h1_parser a, b;
	size_t ua, ub;
	enum h1_parse_result ra = run(copy, n, n, head, &a, &ua);
	enum h1_parse_result rb = run(copy, n, split, head, &b, &ub);
	if ((ra == H1_DONE) != (rb == H1_DONE))
		abort();
	if (ra == H1_DONE) {
		if (a.resp.status < 100 || a.resp.status > 999 || a.resp.status != b.resp.status)
			abort();
		if (a.resp.body.len != b.resp.body.len || a.resp.body.len > UPSTREAM_MAX_RESPONSE)
			abort();
		if (a.resp.body.len && memcmp(a.resp.body.ptr, b.resp.body.ptr, a.resp.body.len) != 0)
			abort();
		if (ua > n || ub > n || ua != ub || a.keep_alive != b.keep_alive)
			abort();
		if ((a.resp.content_type == NULL) != (b.resp.content_type == NULL) ||
		    (a.resp.content_type && strcmp(a.resp.content_type, b.resp.content_type) != 0))
			abort();
		if (head && a.resp.body.len)
			abort();
	}
	h1_parser_release(&a);
	h1_parser_release(&b);
	free(copy);
	return 0;
}
