/* Unary gRPC over libcurl's HTTP/2: the part the etcd client (src/common/etcd/) and the CRI
 * client (src/common/cri/) share. A call is a POST of one length-prefixed message with the gRPC
 * request headers; the answer is one message and a grpc-status in the trailers (or, for
 * "trailers-only" errors, in the headers). Connection handling (which HTTP version, reuse,
 * fail-over) stays with each client. All functions are pure or act only on their arguments:
 * safe from any thread on distinct arguments. */
#ifndef URSA_GRPC_H
#define URSA_GRPC_H
#include <curl/curl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "ursa/buf.h"

#define GRPC_PREFIX 5                          /* flag byte + big-endian u32 length */
#define GRPC_MAX_STATUS_MESSAGE ((size_t)1 << 10) /* cap on the grpc-message text kept */

/* gRPC status codes (google.golang.org/grpc/codes). */
enum grpc_code {
	GRPC_OK = 0,
	GRPC_CANCELED = 1,
	GRPC_UNKNOWN = 2,
	GRPC_INVALID_ARGUMENT = 3,
	GRPC_DEADLINE_EXCEEDED = 4,
	GRPC_NOT_FOUND = 5,
	GRPC_ALREADY_EXISTS = 6,
	GRPC_PERMISSION_DENIED = 7,
	GRPC_RESOURCE_EXHAUSTED = 8,
	GRPC_FAILED_PRECONDITION = 9,
	GRPC_ABORTED = 10,
	GRPC_OUT_OF_RANGE = 11,
	GRPC_UNIMPLEMENTED = 12,
	GRPC_INTERNAL = 13,
	GRPC_UNAVAILABLE = 14,
	GRPC_DATA_LOSS = 15,
	GRPC_UNAUTHENTICATED = 16,
};

/* ---- pure pieces ---- */

/* Appends the gRPC request headers to h (NULL starts a list): content-type application/grpc,
 * te: trailers (servers require it), no Expect:, and grpc-timeout when timeout_ms > 0 (at most 8
 * digits, in milliseconds or, for longer ones, seconds). Free with curl_slist_free_all. */
struct curl_slist *grpc_headers(struct curl_slist *h, long timeout_ms);

/* Appends one uncompressed message framed for the wire: flag 0, big-endian u32 len, the bytes. */
void grpc_frame(struct buf *out, const void *msg, size_t len);

/* The one message of a unary response body: 5-byte prefix (flag 0 = uncompressed, big-endian
 * u32 length) and exactly that many bytes, at most cap. 0 with a view into body, or E_INTERNAL
 * (compressed, truncated, trailing bytes, over cap). */
int grpc_unframe(const void *body, size_t len, size_t cap, const uint8_t **ret_msg, size_t *ret_len);

/* grpc-status / grpc-message seen in headers or trailers. Initialize with GRPC_STATUS_INIT. */
struct grpc_status {
	bool has_code;
	int64_t code;
	struct buf message; /* percent-decoded, at most GRPC_MAX_STATUS_MESSAGE bytes */
};
#define GRPC_STATUS_INIT { false, 0, BUF_INIT }
void grpc_status_release(struct grpc_status *st);

/* Feeds one header line ("name: value\r\n", any case) to st; other lines are ignored, as are
 * malformed values (a grpc-status that is not a decimal number of at most 4 digits). */
void grpc_status_header_line(struct grpc_status *st, const char *line, size_t len);

/* Percent-decodes len bytes of in onto out, at most cap output bytes (the rest is dropped); a
 * '%' not followed by two hex digits is kept as is (as gRPC asks of receivers). out is
 * NUL-terminated afterwards even when nothing was added. */
void grpc_pct_decode(const char *in, size_t len, size_t cap, struct buf *out);

/* The generic E_* code for a non-zero gRPC status code: NOT_FOUND E_NOT_FOUND, ALREADY_EXISTS
 * E_ALREADY_EXISTS, INVALID_ARGUMENT and OUT_OF_RANGE E_BAD_REQUEST, FAILED_PRECONDITION and
 * ABORTED E_CONFLICT, CANCELED and DEADLINE_EXCEEDED E_TIMEOUT, UNAVAILABLE E_UNAVAILABLE,
 * UNAUTHENTICATED E_UNAUTHORIZED, PERMISSION_DENIED E_FORBIDDEN, RESOURCE_EXHAUSTED E_TOO_MANY,
 * UNIMPLEMENTED E_METHOD, anything else E_INTERNAL. Clients with better knowledge of their
 * server's messages refine it (etcd_grpc_error). */
int grpc_code_error(int64_t code);

/* The E_* code for an HTTP answer that carried no grpc-status (a proxy's page, a server that is
 * no gRPC server): 503 E_UNAVAILABLE, 504 E_TIMEOUT, 413 E_TOO_LARGE, else E_INTERNAL. */
int grpc_http_error(long http_status);

/* ---- one exchange ---- */

/* One unary exchange on a configured easy handle. The caller sets the handle's connection
 * options (URL scheme, HTTP version, unix socket, timeouts, headers from grpc_headers) and fills
 * the inputs; grpc_exchange_perform sets the body, read, write and header callbacks, performs
 * the transfer and fills the outputs. Release with grpc_exchange_release. */
struct grpc_exchange {
	/* inputs */
	const char *url;          /* "http://host/pkg.Service/Method" */
	const struct buf *framed; /* the request, framed with grpc_frame */
	size_t max_body;          /* cap on the response body (its prefix included) */
	/* outputs */
	CURLcode cc;              /* curl_easy_perform's result */
	bool sent;                /* curl asked for body bytes: the request may have reached the server */
	bool too_big;             /* the body went over max_body (cc is then a write error) */
	long http_status;         /* CURLINFO_RESPONSE_CODE */
	long http_version;        /* CURLINFO_HTTP_VERSION */
	struct grpc_status status;
	struct buf body;          /* the raw response body */
};
void grpc_exchange_perform(CURL *c, struct grpc_exchange *x);
void grpc_exchange_release(struct grpc_exchange *x);

/* The outcome of an exchange in which the server answered (cc CURLE_OK, or a non-zero
 * grpc-status arrived before the stream broke): 0 with the response message viewed in x->body
 * (at most max_body bytes), or an E_* code: map(code, message) for a non-zero grpc-status (map
 * NULL: grpc_code_error), grpc_http_error for an answer without grpc-status (200 counts as 500),
 * E_INTERNAL for a bad frame or a non-200 status with grpc-status 0. */
typedef int (*grpc_error_fn)(int64_t code, const char *message);
int grpc_exchange_outcome(const struct grpc_exchange *x, grpc_error_fn map, const uint8_t **ret_msg,
			  size_t *ret_len);

/* ---- a pool of idle libcurl easy handles (etcd's JSON and gRPC handles, the CRI client) ----
 * Thread-safe. take: an idle handle, or a new one given to setup(ud, handle) first (allocation
 * failure aborts). give: back to the pool, which keeps at most max_idle of them (0: any number;
 * beyond it a handle is cleaned up, so that a burst of concurrent callers leaves no lasting
 * memory: ~100 KB of buffers each). release: cleans up every idle handle. Cleaning up a handle
 * frees its CURLOPT_PRIVATE pointer, if its setup set one; handles taken must have been given
 * back before release. */
struct curl_pool {
	pthread_mutex_t lock;
	CURL **h;
	size_t n, alloc;
	size_t max_idle;
	void (*setup)(void *ud, CURL *c);
	void *ud;
};
void curl_pool_init(struct curl_pool *p, size_t max_idle, void (*setup)(void *ud, CURL *c), void *ud);
void curl_pool_release(struct curl_pool *p);
CURL *curl_pool_take(struct curl_pool *p);
void curl_pool_give(struct curl_pool *p, CURL *c);

#endif
