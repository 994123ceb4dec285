/* Internals of the etcd JSON-gateway client shared by client.c, watch.c and the fuzz target.
 * Not a public interface. */
#ifndef URSA_ETCD_INTERNAL_H
#define URSA_ETCD_INTERNAL_H
#include <curl/curl.h>
#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include "ursa/buf.h"
#include "ursa/etcd.h"

#define ETCD_MAX_ENDPOINTS 32
#define ETCD_MAX_BODY ((size_t)256 << 20)  /* cap on one unary response body */
#define ETCD_MAX_LINE ((size_t)64 << 20)   /* cap on one watch stream line */
#define ETCD_JSON_DEPTH 16                 /* etcd responses nest at most ~6 levels */

struct etcd {
	char **endpoints; /* "http://host:port" without trailing slash */
	size_t n_endpoints;
	atomic_size_t preferred; /* index of the member that answered last */
	long timeout_ms;
	long connect_timeout_ms;
	struct curl_slist *headers; /* immutable after etcd_new */
	pthread_mutex_t pool_lock;
	CURL **pool; /* idle easy handles, each keeping its own keep-alive connections */
	size_t n_pool;
	size_t pool_alloc;
	struct etcd_gc *gc; /* group commit of conditional writes (batch.c) */
};

/* One request to the member that answered last, failing over to the others. 0 with *ret (the
 * parsed response) or an E_* code. Non-idempotent requests are retried only when they
 * certainly did not reach a member. */
int etcd_call(struct etcd *e, const char *path, const struct buf *body, bool idempotent, json_t **ret);

/* Group commit (batch.c): a conditional put that shares one txn with concurrent callers'.
 * expect_rev < 0: create-if-absent (E_ALREADY_EXISTS); else put only at that mod_revision
 * (E_CONFLICT, E_NOT_FOUND). */
struct etcd_gc *etcd_gc_new(void);
void etcd_gc_free(struct etcd_gc *gc);
int etcd_gc_put(struct etcd *e, const char *key, const char *value, size_t len, int64_t lease, int64_t expect_rev,
		int64_t *ret_rev);

/* Applies the options every handle of e uses (keep-alive, TCP_NODELAY, HTTP/1.1, no Expect:,
 * connect timeout). */
void etcd_curl_setup(struct etcd *e, CURL *c);

/* Appends "key":b64[,"range_end":b64] to a JSON object body. range_end NULL: the key alone;
 * "" means "\0" (the end of the keyspace). An empty key with a range end is sent as "\0",
 * the smallest key, because etcd rejects an empty range key. */
void etcd_body_key(struct buf *b, const char *key, const char *range_end);

/* Appends the standard padded base64 of data to out. */
void etcd_b64_encode(struct buf *out, const void *data, size_t len);
/* Decodes standard padded base64 (len bytes of in) into a new NUL-terminated heap buffer.
 * Returns 0, or E_INTERNAL for malformed input (*ret untouched then). */
int etcd_b64_decode(const char *in, size_t len, char **ret, size_t *ret_len);

/* obj[key] as int64: a decimal string or a JSON integer; absent or null gives 0 (the gateway
 * omits default values). E_INTERNAL for anything else. */
int etcd_json_i64(const json_t *obj, const char *key, int64_t *ret);
/* obj[key] as bool; absent gives false. */
bool etcd_json_bool(const json_t *obj, const char *key);
/* resp.header.revision (0 when omitted). */
int etcd_header_rev(const json_t *resp, int64_t *ret);

/* Parses a mvccpb.KeyValue object into ret (key and value always allocated, "" when omitted).
 * Returns 0 or E_INTERNAL (ret zeroed then). */
int etcd_parse_kv(const json_t *j, struct etcd_kv *ret);
/* Parses a RangeResponse (kvs, count, more, header.revision). 0 or E_INTERNAL. */
int etcd_parse_range(const json_t *resp, struct etcd_range_result *ret);

/* Maps an error body to an E_* code by its gRPC code and message, never by HTTP status alone.
 * Accepts the unary shape {"error":"msg","code":N,"message":"msg"}, the stream shape
 * {"error":{"grpc_code":N,"http_code":H,"message":"msg"}} and 3.6's {"code":N,"message":"msg"}.
 * body may be NULL (a non-JSON reply); http_status is used only then. Never returns 0. */
int etcd_parse_error(const json_t *body, long http_status);
/* The E_* code for a gRPC status code and message. */
int etcd_grpc_error(int64_t code, const char *message);

/* One line of the /v3/watch stream. */
struct etcd_watch_msg {
	int64_t header_rev;
	int64_t watch_id;
	int64_t compact_rev;
	bool created;
	bool canceled;
	bool fragment;
	struct etcd_event *events; /* owned array */
	size_t n_events;
};
/* Parses one line ({"result":WatchResponse}). Returns 0 with ret filled, the mapped E_* code for an
 * {"error":...} line, or E_INTERNAL for anything malformed; ret is zeroed on error. */
int etcd_parse_watch_line(const char *line, size_t len, struct etcd_watch_msg *ret);
void etcd_watch_msg_release(struct etcd_watch_msg *m);
void etcd_event_release(struct etcd_event *ev);

/* Parses a complete JSON document with the depth cap; new reference or NULL. */
json_t *etcd_json_parse(const char *data, size_t len);

#endif
