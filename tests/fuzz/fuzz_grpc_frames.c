/* Fuzz target: a gRPC response as the client sees it. The input is split at the first "\n\n":
 * header and trailer lines before (fed line by line to grpc_status_header_line), the response
 * body after (grpc_unframe with a small cap), and the outcome of the whole exchange. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "ursa/errors.h"
#include "ursa/grpc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *split = NULL, *msg;
	struct grpc_exchange x = { .max_body = 1 << 16, .cc = CURLE_OK, .http_status = 200 };
	size_t hlen = size, start = 0, mlen;
	int rc;

	for (size_t i = 0; i + 1 < size; i++) {
		if (data[i] == '\n' && data[i + 1] == '\n') {
			split = data + i + 2;
			hlen = i + 1;
			break;
		}
	}
	for (size_t i = 0; i <= hlen; i++) {
		if (i == hlen || data[i] == '\n') {
			grpc_status_header_line(&x.status, (const char *)data + start, i - start + (i < hlen));
			start = i + 1;
		}
	}
	if (x.status.message.len > GRPC_MAX_STATUS_MESSAGE || (x.status.has_code && (x.status.code < 0 || x.status.code > 9999)))
		abort();
	if (split) {
		size_t blen = size - (size_t)(split - data);
		rc = grpc_unframe(split, blen, x.max_body, &msg, &mlen);
		if (rc == 0 && (msg != split + GRPC_PREFIX || mlen != blen - GRPC_PREFIX || mlen > x.max_body))
			abort();
		if (rc != 0 && rc != E_INTERNAL)
			abort();
		buf_add(&x.body, split, blen);
	}
	rc = grpc_exchange_outcome(&x, NULL, &msg, &mlen);
	if (rc == 0 && (!x.status.has_code || x.status.code != 0 || msg < (const uint8_t *)x.body.ptr ||
			msg + mlen > (const uint8_t *)x.body.ptr + x.body.len))
		abort();
	if (rc > 0)
		abort();
	grpc_exchange_release(&x);
	return 0;
}
