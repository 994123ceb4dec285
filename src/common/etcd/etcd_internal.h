/* Internals of the etcd client shared by its files and the fuzz targets. Not a public interface.
 * KV calls and the watch stream go over gRPC (grpc.c, watch.c; messages in pb.h); leases and
 * /health over the JSON gateway (json.c, codec.c). */
#ifndef URSA_ETCD_INTERNAL_H
#define URSA_ETCD_INTERNAL_H
#include <curl/curl.h>
#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include "ursa/buf.h"
#include "ursa/etcd.h"
#include "ursa/grpc.h"
#include "etcd/pb.h"

#define ETCD_MAX_ENDPOINTS 32 /* grpc.c keeps a 32-bit mask of members per handle */
#define ETCD_MAX_BODY ((size_t)256 << 20)  /* cap on one unary response body or gRPC message */
#define ETCD_MAX_WATCH_MSG ((size_t)64 << 20) /* cap on one watch stream message */
#define ETCD_JSON_DEPTH 16                 /* etcd responses nest at most ~6 levels */

struct etcd {
	char **endpoints; /* "http://host:port" without trailing slash */
	size_t n_endpoints;
	atomic_size_t preferred; /* index of the member that answered last */
	long timeout_ms;
	long connect_timeout_ms;
	struct curl_slist *headers;      /* JSON gateway requests; immutable after etcd_new */
	struct curl_slist *grpc_headers; /* gRPC requests; immutable after etcd_new */
	struct curl_slist *stream_headers; /* the gRPC watch stream (no grpc-timeout) */
	struct curl_pool json_pool;      /* HTTP/1.1 handles for the JSON gateway */
	struct curl_pool grpc_pool;      /* HTTP/2 handles for gRPC */
	struct etcd_gc *gc; /* group commit of conditional writes (batch.c) */
};

/* ---- transport (client.c) ---- */

#define ETCD_TRY_NEXT 1 /* an attempt's result: this member did not take the request, try another */

/* One attempt of a request on member idx with handle c: 0, ETCD_TRY_NEXT or an E_* code. */
typedef int (*etcd_attempt_fn)(struct etcd *e, CURL *c, size_t idx, void *ctx);
/* Runs attempt on the member that answered last, then on the others while it returns
 * ETCD_TRY_NEXT (E_UNAVAILABLE when every member did), with a handle of pool. */
int etcd_failover(struct etcd *e, struct curl_pool *pool, etcd_attempt_fn attempt, void *ctx);
/* A failed transfer: ETCD_TRY_NEXT if the request may go to another member (idempotent, or it
 * certainly was not sent: sent false, or connection refused), else E_TIMEOUT / E_UNAVAILABLE. */
int etcd_transport_error(CURLcode cc, bool sent, bool idempotent);
/* Appends up to ETCD_MAX_BODY bytes (+ 5, a gRPC message's prefix) to the struct etcd_reply ud
 * (a CURLOPT_WRITEFUNCTION); more sets too_big and fails the transfer. */
struct etcd_reply {
	struct buf body;
	bool too_big;
};
size_t etcd_on_body(char *data, size_t size, size_t nmemb, void *ud);

/* ---- gRPC (grpc.c) ---- */

/* A unary call: path is "/etcdserverpb.<Service>/<Method>", req the serialized request message
 * (without the 5-byte gRPC prefix). 0 with the response message in ret_msg (the caller's buf,
 * reset first; released by the caller in every case), or an E_* code mapped from grpc-status
 * and grpc-message by etcd_grpc_error(). Framing and status parsing: ursa/grpc.h. Non-idempotent requests are retried on another member
 * only when they certainly did not reach one. */
int etcd_grpc_call(struct etcd *e, const char *path, const struct buf *req, bool idempotent, struct buf *ret_msg);
/* ---- JSON gateway (json.c) ---- */

/* One request to the member that answered last, failing over to the others. 0 with *ret (the
 * parsed response) or an E_* code. Non-idempotent requests are retried only when they
 * certainly did not reach a member. */
int etcd_call(struct etcd *e, const char *path, const struct buf *body, bool idempotent, json_t **ret);

/* Group commit (batch.c): a conditional put that shares one txn with concurrent callers'.
 * expect_rev < 0: create-if-absent (E_ALREADY_EXISTS); else put only at that mod_revision
 * (E_CONFLICT, E_NOT_FOUND). */
struct etcd_gc *etcd_gc_new(const struct etcd_options *opts);
void etcd_gc_free(struct etcd_gc *gc);
int etcd_gc_put(struct etcd *e, const char *key, const char *value, size_t len, int64_t lease, int64_t expect_rev,
		int64_t *ret_rev);

/* Applies the options every JSON-gateway handle of e uses (keep-alive, TCP_NODELAY, HTTP/1.1,
 * no Expect:, connect timeout); etcd_grpc_setup those of gRPC handles (HTTP/2). */
void etcd_curl_setup(void *e /* struct etcd */, CURL *c);
void etcd_grpc_setup(void *e /* struct etcd */, CURL *c);

/* obj[key] as int64: a decimal string or a JSON integer; absent or null gives 0 (the gateway
 * omits default values). E_INTERNAL for anything else. */
int etcd_json_i64(const json_t *obj, const char *key, int64_t *ret);
/* Maps an error body to an E_* code by its gRPC code and message, never by HTTP status alone.
 * Accepts the unary shape {"error":"msg","code":N,"message":"msg"}, the stream shape
 * {"error":{"grpc_code":N,"http_code":H,"message":"msg"}} and 3.6's {"code":N,"message":"msg"}.
 * body may be NULL (a non-JSON reply); http_status is used only then. Never returns 0. */
int etcd_parse_error(const json_t *body, long http_status);
/* The E_* code for a gRPC status code and message: grpc_code_error refined by etcd's messages
 * (compaction, request too large, key not found). A grpc_error_fn. */
int etcd_grpc_error(int64_t code, const char *message);

/* One line of the /v3/watch stream. */

/* Parses a complete JSON document with the depth cap; new reference or NULL. */
json_t *etcd_json_parse(const char *data, size_t len);

#endif
