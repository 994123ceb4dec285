/* gRPC unary calls over libcurl's HTTP/2: prior knowledge for http:// members, ALPN h2 for
 * https://. A call is a POST of one length-prefixed message; the answer is one message and a
 * grpc-status in the trailers (or, for "trailers-only" errors, in the headers). */
#include "etcd/etcd_internal.h"
#include "ursa/errors.h"
#include "ursa/xalloc.h"
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define GRPC_PREFIX 5
/* As etcd's Go client (MaxCallSendMsgSize): etcd's server takes at most --max-request-bytes
 * (1.5 MiB by default) + 512 KiB and resets the stream of a larger message before answering,
 * which would look like a lost member. */
#define ETCD_MAX_SEND ((size_t)2 << 20)

/* Per-handle state (CURLOPT_PRIVATE, freed by the pool); see attempt(). */
struct grpc_handle {
	uint32_t h2; /* bit i: an HTTP/2 connection to member i is (probably) open */
};

void etcd_grpc_setup(struct etcd *e, CURL *c)
{
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_TCP_NODELAY, 1L);
	curl_easy_setopt(c, CURLOPT_TCP_KEEPALIVE, 1L);
	curl_easy_setopt(c, CURLOPT_TCP_KEEPIDLE, 10L);
	curl_easy_setopt(c, CURLOPT_TCP_KEEPINTVL, 5L);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, e->grpc_headers);
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, e->connect_timeout_ms);
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, e->timeout_ms);
	curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(c, CURLOPT_POST, 1L);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, etcd_on_body);
	/* With the default 16 KiB buffer, libcurl 7.88 lets the HTTP/2 connection window run dry on
	 * a reused connection and stalls a large response (a page of a range) for a second at a
	 * time; the curl tool's 100 KiB buffer does not. */
	curl_easy_setopt(c, CURLOPT_BUFFERSIZE, 102400L);
	curl_easy_setopt(c, CURLOPT_PRIVATE, xcalloc(1, sizeof(struct grpc_handle)));
}

/* ---- status headers ---- */

void etcd_grpc_pct_decode(const char *in, size_t len, size_t cap, struct buf *out)
{
	for (size_t i = 0; i < len && out->len < cap; i++) {
		int hi, lo;
		if (in[i] == '%' && i + 2 < len && (hi = hex_digit(in[i + 1])) >= 0 && (lo = hex_digit(in[i + 2])) >= 0) {
			buf_addch(out, (char)(hi << 4 | lo));
			i += 2;
		} else {
			buf_addch(out, in[i]);
		}
	}
	if (!out->ptr)
		buf_add(out, "", 0);
}

/* If line is "name: value", the value without surrounding blanks. */
static bool header_value(const char *line, size_t len, const char *name, struct sv *ret)
{
	size_t n = strlen(name);

	if (len <= n || line[n] != ':' || strncasecmp(line, name, n) != 0)
		return false;
	ret->ptr = line + n + 1;
	ret->len = len - n - 1;
	while (ret->len && (ret->ptr[0] == ' ' || ret->ptr[0] == '\t'))
		ret->ptr++, ret->len--;
	while (ret->len && strchr(" \t\r\n", ret->ptr[ret->len - 1]))
		ret->len--;
	return true;
}

void etcd_grpc_header_line(struct etcd_grpc_status *st, const char *line, size_t len)
{
	struct sv v;
	long long code;

	if (header_value(line, len, "grpc-status", &v)) {
		/* codes are 0..16; anything longer than a few digits is not one */
		if (v.len == 0 || v.len > 4)
			return;
		for (size_t i = 0; i < v.len; i++)
			if (v.ptr[i] < '0' || v.ptr[i] > '9')
				return;
		if (parse_int64_sv(v, &code) < 0)
			return;
		st->code = code;
		st->has_code = true;
	} else if (header_value(line, len, "grpc-message", &v)) {
		buf_reset(&st->message);
		etcd_grpc_pct_decode(v.ptr, v.len, ETCD_MAX_GRPC_MESSAGE, &st->message);
	}
}

static size_t on_header(char *data, size_t size, size_t nmemb, void *ud)
{
	etcd_grpc_header_line(ud, data, size * nmemb);
	return size * nmemb;
}

/* ---- framing ---- */

int etcd_grpc_unframe(const void *body, size_t len, size_t cap, const uint8_t **ret_msg, size_t *ret_len)
{
	const uint8_t *p = body;
	uint32_t n;

	if (len < GRPC_PREFIX || p[0] != 0)
		return E_INTERNAL; /* truncated, or compressed (we never offer an encoding) */
	n = (uint32_t)p[1] << 24 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 8 | (uint32_t)p[4];
	if (n > cap || (size_t)n != len - GRPC_PREFIX)
		return E_INTERNAL;
	*ret_msg = p + GRPC_PREFIX;
	*ret_len = n;
	return 0;
}

/* ---- one call ---- */

struct upload {
	const char *data;
	size_t len;
	size_t off;
	bool sent; /* curl asked for body bytes: the request may have reached the member */
};

static size_t on_read(char *dst, size_t size, size_t nmemb, void *ud)
{
	struct upload *u = ud;
	size_t n = size * nmemb;

	u->sent = true;
	if (n > u->len - u->off)
		n = u->len - u->off;
	memcpy(dst, u->data + u->off, n);
	u->off += n;
	return n;
}

/* curl rewinds when it re-sends on a fresh connection. */
static int on_seek(void *ud, curl_off_t offset, int origin)
{
	struct upload *u = ud;

	if (origin != SEEK_SET || offset < 0 || (size_t)offset > u->len)
		return CURL_SEEKFUNC_FAIL;
	u->off = (size_t)offset;
	return CURL_SEEKFUNC_OK;
}

struct call {
	const char *path;
	struct buf framed; /* prefix + request message */
	bool idempotent;
	struct buf *ret_msg;
};

/* Maps a finished exchange to 0 (message in ret_msg), ETCD_TRY_NEXT or an E_* code. */
static int call_result(struct call *k, CURL *c, const struct etcd_grpc_status *st, const struct etcd_reply *r)
{
	const uint8_t *msg;
	size_t len;
	long status = 0;
	int rc;

	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
	if (!st->has_code) {
		/* not a gRPC answer (a proxy's error page, say): judge by the HTTP status */
		rc = etcd_parse_error(NULL, status == 200 ? 500 : status);
		return rc == E_UNAVAILABLE ? ETCD_TRY_NEXT : rc;
	}
	if (st->code != 0) {
		rc = etcd_grpc_error(st->code, buf_cstr(&st->message));
		return rc == E_UNAVAILABLE ? ETCD_TRY_NEXT : rc;
	}
	if (status != 200 || etcd_grpc_unframe(r->body.ptr, r->body.len, ETCD_MAX_BODY, &msg, &len) < 0)
		return E_INTERNAL;
	buf_reset(k->ret_msg);
	buf_add(k->ret_msg, len ? (const char *)msg : "", len);
	return 0;
}

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
	struct upload up = { k->framed.ptr, k->framed.len, 0, false };
	struct etcd_reply r = { BUF_INIT, false };
	struct etcd_grpc_status st = { false, 0, BUF_INIT };
	long httpv = 0;
	CURLcode cc;
	int rc;

	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_HTTP_VERSION, version[mode]);
	curl_easy_setopt(c, CURLOPT_FRESH_CONNECT, mode == MODE_PRIOR ? 1L : 0L);
	curl_easy_setopt(c, CURLOPT_READFUNCTION, on_read);
	curl_easy_setopt(c, CURLOPT_READDATA, &up);
	curl_easy_setopt(c, CURLOPT_SEEKFUNCTION, on_seek);
	curl_easy_setopt(c, CURLOPT_SEEKDATA, &up);
	curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)up.len);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &r);
	curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(c, CURLOPT_HEADERDATA, &st);
	cc = curl_easy_perform(c);
	curl_easy_getinfo(c, CURLINFO_HTTP_VERSION, &httpv);
	if (cc == CURLE_OK && httpv != CURL_HTTP_VERSION_2_0 && !st.has_code)
		rc = GOT_HTTP1;
	else if (cc == CURLE_OK)
		rc = call_result(k, c, &st, &r);
	else if (r.too_big)
		rc = E_INTERNAL;
	else if (st.has_code && st.code != 0)
		rc = call_result(k, c, &st, &r); /* the member answered, then reset the stream */
	else
		rc = etcd_transport_error(cc, up.sent, k->idempotent);
	buf_release(&st.message);
	buf_release(&r.body);
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
	size_t len = req->len;
	char prefix[GRPC_PREFIX] = { 0, (char)(len >> 24), (char)(len >> 16), (char)(len >> 8), (char)len };
	int rc;

	if (len > ETCD_MAX_SEND)
		return E_TOO_LARGE;
	buf_grow(&k.framed, GRPC_PREFIX + len);
	buf_add(&k.framed, prefix, GRPC_PREFIX);
	if (len)
		buf_add(&k.framed, req->ptr, len);
	buf_reset(ret_msg);
	rc = etcd_failover(e, &e->grpc_pool, attempt, &k);
	buf_release(&k.framed);
	return rc;
}
