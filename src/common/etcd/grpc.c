/* etcd's gRPC unary calls: prior knowledge for http:// members, ALPN h2 for https://, member
 * fail-over. The exchange itself (framing, headers, status) is ursa/grpc.h's. */
#include "etcd/etcd_internal.h"
#include "ursa/errors.h"
#include "ursa/xalloc.h"
#include <stdlib.h>
#include <string.h>

/* As etcd's Go client (MaxCallSendMsgSize): etcd's server takes at most --max-request-bytes
 * (1.5 MiB by default) + 512 KiB and resets the stream of a larger message before answering,
 * which would look like a lost member. */
#define ETCD_MAX_SEND ((size_t)2 << 20)

/* Per-handle state (CURLOPT_PRIVATE, freed by the pool); see attempt(). */
struct grpc_handle {
	uint32_t h2; /* bit i: an HTTP/2 connection to member i is (probably) open */
};

void etcd_grpc_setup(void *ud, CURL *c)
{
	const struct etcd *e = ud;
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_TCP_NODELAY, 1L);
	curl_easy_setopt(c, CURLOPT_TCP_KEEPALIVE, 1L);
	curl_easy_setopt(c, CURLOPT_TCP_KEEPIDLE, 10L);
	curl_easy_setopt(c, CURLOPT_TCP_KEEPINTVL, 5L);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, e->grpc_headers);
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, e->connect_timeout_ms);
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, e->timeout_ms);
	curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
	/* With the default 16 KiB buffer, libcurl 7.88 lets the HTTP/2 connection window run dry on
	 * a reused connection and stalls a large response (a page of a range) for a second at a
	 * time; the curl tool's 100 KiB buffer does not. */
	curl_easy_setopt(c, CURLOPT_BUFFERSIZE, 102400L);
	curl_easy_setopt(c, CURLOPT_PRIVATE, xcalloc(1, sizeof(struct grpc_handle)));
}

/* Maps a finished exchange to 0 (message in ret_msg), ETCD_TRY_NEXT or an E_* code. */
static int call_result(struct grpc_exchange *x, struct buf *ret_msg)
{
	const uint8_t *msg;
	size_t len;
	int rc = grpc_exchange_outcome(x, etcd_grpc_error, &msg, &len);

	if (rc == E_UNAVAILABLE)
		return ETCD_TRY_NEXT;
	if (rc < 0)
		return rc;
	buf_reset(ret_msg);
	buf_add(ret_msg, len ? (const char *)msg : "", len);
	return 0;
}

struct call {
	const char *path;
	struct buf framed; /* prefix + request message */
	bool idempotent;
	struct buf *ret_msg;
};

/* libcurl 7.88.1 (Debian 12) breaks a reused connection when asked for HTTP/2 with prior
 * knowledge again (curl issue 10634, fixed in 8.0): it stacks a second HTTP/2 layer on it. So a
 * handle remembers which members it already holds an HTTP/2 connection to, and asks for plain
 * HTTP/2 (which reuses it) there, prior knowledge elsewhere. If that connection was closed
 * meanwhile, curl falls back to HTTP/1.1 on a new one, which etcd answers without a gRPC status
 * (and cannot have applied: it is no JSON gateway path); the request is then sent again on a
 * fresh connection with prior knowledge. */
enum mode { MODE_PRIOR, MODE_REUSE, MODE_TLS };

/* One exchange; 0, ETCD_TRY_NEXT, an E_* code, or 2 when an HTTP/1 server answered. */
#define GOT_HTTP1 2
static int exchange(struct etcd *e, CURL *c, const char *url, struct call *k, enum mode mode)
{
	static const long version[] = { [MODE_PRIOR] = CURL_HTTP_VERSION_2_PRIOR_KNOWLEDGE,
					 [MODE_REUSE] = CURL_HTTP_VERSION_2_0,
					 [MODE_TLS] = CURL_HTTP_VERSION_2TLS };
	struct grpc_exchange x = { .url = url, .framed = &k->framed, .max_body = ETCD_MAX_BODY + GRPC_PREFIX };
	int rc;

	curl_easy_setopt(c, CURLOPT_HTTP_VERSION, version[mode]);
	curl_easy_setopt(c, CURLOPT_FRESH_CONNECT, mode == MODE_PRIOR ? 1L : 0L);
	grpc_exchange_perform(c, &x);
	if (x.cc == CURLE_OK && x.http_version != CURL_HTTP_VERSION_2_0 && !x.status.has_code)
		rc = GOT_HTTP1;
	else if (x.cc == CURLE_OK)
		rc = call_result(&x, k->ret_msg);
	else if (x.too_big)
		rc = E_INTERNAL;
	else if (x.status.has_code && x.status.code != 0)
		rc = call_result(&x, k->ret_msg); /* the member answered, then reset the stream */
	else
		rc = etcd_transport_error(x.cc, x.sent, k->idempotent);
	grpc_exchange_release(&x);
	return rc;
}

static int attempt(struct etcd *e, CURL *c, size_t idx, void *ctx)
{
	struct call *k = ctx;
	const char *ep = e->endpoints[idx];
	char *url = xasprintf("%s%s", ep, k->path);
	bool tls = strncmp(ep, "https:", 6) == 0;
	struct grpc_handle *gh = NULL;
	uint32_t bit = (uint32_t)1 << idx;
	int rc;

	curl_easy_getinfo(c, CURLINFO_PRIVATE, (char **)&gh);
	if (tls) {
		rc = exchange(e, c, url, k, MODE_TLS);
	} else {
		rc = exchange(e, c, url, k, (gh->h2 & bit) ? MODE_REUSE : MODE_PRIOR);
		if (rc == GOT_HTTP1 && (gh->h2 & bit)) {
			gh->h2 &= ~bit;
			rc = exchange(e, c, url, k, MODE_PRIOR);
		}
		/* a member that answers in gRPC keeps its connection open */
		if (rc == 0 || (rc < 0 && rc != E_UNAVAILABLE && rc != E_TIMEOUT))
			gh->h2 |= bit;
		else
			gh->h2 &= ~bit;
	}
	if (rc == GOT_HTTP1)
		rc = E_INTERNAL; /* not a gRPC server */
	free(url);
	return rc;
}

int etcd_grpc_call(struct etcd *e, const char *path, const struct buf *req, bool idempotent, struct buf *ret_msg)
{
	struct call k = { path, BUF_INIT, idempotent, ret_msg };
	int rc;

	if (req->len > ETCD_MAX_SEND)
		return E_TOO_LARGE;
	grpc_frame(&k.framed, req->ptr, req->len);
	buf_reset(ret_msg);
	rc = etcd_failover(e, &e->grpc_pool, attempt, &k);
	buf_release(&k.framed);
	return rc;
}
