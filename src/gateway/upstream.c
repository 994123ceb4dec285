/* Forwarding to partitions with libcurl: the blocking form for requests that stay on an HTTP
 * worker (fan-out, discovery, tenant creation), on a per-thread keep-alive handle, and the
 * helpers the event-driven forms share (plain.c: single-partition requests, over the gateway's
 * own HTTP/1.1 client h1conn.c; stream.c: watch, log -f, over libcurl). */
#include <curl/curl.h>
#include <stdlib.h>
#include <string.h>
#include "gw.h"
#include "ursa/errors.h"
#include "ursa/http.h"
#include "ursa/xalloc.h"


static char *ca_file;
static _Thread_local CURL *tl_curl;
static atomic_long connections_made;

void upstream_init(const char *ca)
{
	curl_global_init(CURL_GLOBAL_DEFAULT);
	ca_file = ca ? xstrdup(ca) : NULL;
}

/* Content types handed to http_reply_* must outlive the handler: keep one copy of each. */
const char *ctype_intern(const char *ct)
{
	static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
	static struct strmap seen;
	static bool init;
	if (!ct || !*ct || strlen(ct) > 200)
		return "application/json";
	pthread_mutex_lock(&lock);
	if (!init) {
		strmap_init(&seen);
		init = true;
	}
	struct strmap_ent *e = strmap_get(&seen, ct);
	if (!e && seen.n < 64)
		e = strmap_put(&seen, ct, NULL);
	pthread_mutex_unlock(&lock);
	return e ? e->key : "application/json";
}

char *upstream_warnings(CURL *c)
{
	struct curl_header *h;
	struct buf b = BUF_INIT;
	for (size_t i = 0; curl_easy_header(c, "Warning", i, CURLH_HEADER, -1, &h) == CURLHE_OK; i++) {
		if (b.len)
			buf_adds(&b, ", ");
		buf_adds(&b, h->value);
		if (i + 1 >= h->amount)
			break;
	}
	if (!b.len) {
		buf_release(&b);
		return NULL;
	}
	return buf_detach(&b, NULL);
}

void upstream_resp_release(struct upstream_resp *r)
{
	free(r->content_type);
	r->content_type = NULL;
	free(r->warning);
	r->warning = NULL;
	free(r->etag);
	r->etag = NULL;
	free(r->moving);
	r->moving = NULL;
	buf_release(&r->body);
}

/* Appends "name: v\0" to b and its offset to offs[*n] (nothing for an empty value or one
 * holding a line break: never a second header smuggled in). */
static void add_line(struct buf *b, size_t *offs, size_t *n, const char *name, const char *v)
{
	if (!v || !*v || strchr(v, '\n') || strchr(v, '\r'))
		return;
	offs[(*n)++] = b->len;
	buf_adds(b, name);
	buf_add(b, ": ", 2);
	buf_adds(b, v);
	buf_addch(b, '\0');
}

static bool bodyless(const char *method)
{
	return strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0;
}

size_t upstream_header_lines(const struct upstream_req *rq, struct buf *b, size_t offs[UPSTREAM_HEADERS_MAX])
{
	size_t n = 0;
	add_line(b, offs, &n, "Authorization", rq->authorization);
	add_line(b, offs, &n, IDENTITY_HEADER, rq->identity);
	add_line(b, offs, &n, "Accept", rq->accept ? rq->accept : "application/json");
	add_line(b, offs, &n, "X-Forwarded-For", rq->forwarded_for);
	add_line(b, offs, &n, "If-None-Match", rq->if_none_match);
	offs[n++] = b->len;
	buf_add(b, "Expect:", 8); /* with its NUL: no 100-continue round trip for bodies */
	if (!bodyless(rq->method))
		add_line(b, offs, &n, "Content-Type", rq->content_type ? rq->content_type : "application/json");
	return n;
}

void upstream_setup_method(CURL *c, const struct upstream_req *rq)
{
	if (bodyless(rq->method)) {
		curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, NULL);
		curl_easy_setopt(c, CURLOPT_HTTPGET, 1L);
		curl_easy_setopt(c, CURLOPT_NOBODY, strcmp(rq->method, "HEAD") == 0 ? 1L : 0L);
	} else {
		curl_easy_setopt(c, CURLOPT_NOBODY, 0L);
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, rq->body ? rq->body : "");
		curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)rq->len);
		curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, rq->method);
	}
}

/* Options every handle to a partition has. */
void upstream_setup_handle(CURL *c)
{
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, 1000L);
	curl_easy_setopt(c, CURLOPT_TCP_KEEPALIVE, 1L);
	curl_easy_setopt(c, CURLOPT_TCP_NODELAY, 1L);
	curl_easy_setopt(c, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
	curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
	/* Partitions are reached directly: no proxy, and no host is looked up in a no-proxy list
	 * (libcurl would otherwise read the proxy variables of the environment for every
	 * transfer). The path goes out as the client sent it (no dot-segment folding). */
	curl_easy_setopt(c, CURLOPT_PROXY, "");
	curl_easy_setopt(c, CURLOPT_NOPROXY, "*");
	curl_easy_setopt(c, CURLOPT_PATH_AS_IS, 1L);
	if (ca_file)
		curl_easy_setopt(c, CURLOPT_CAINFO, ca_file);
}

/* What changes from one request to the next. Every method-related option is set either way,
 * so a handle reused after another method is left in no stale state. */
struct curl_slist *upstream_setup_request(CURL *c, const char *base, const struct upstream_req *rq, char **ret_url)
{
	char *url = xasprintf("%s%s", base, rq->path);
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, rq->timeout_ms > 0 ? rq->timeout_ms : 0L);
	struct buf lines = BUF_INIT;
	size_t offs[UPSTREAM_HEADERS_MAX];
	size_t n = upstream_header_lines(rq, &lines, offs);
	struct curl_slist *h = NULL;
	for (size_t i = 0; i < n; i++)
		h = curl_slist_append(h, lines.ptr + offs[i]);
	buf_release(&lines);
	upstream_setup_method(c, rq);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
	*ret_url = url;
	return h;
}

struct curl_slist *upstream_setup(CURL *c, const char *base, const struct upstream_req *rq, char **ret_url)
{
	upstream_setup_handle(c);
	return upstream_setup_request(c, base, rq, ret_url);
}

size_t upstream_on_body(char *data, size_t size, size_t n, void *ud)
{
	struct buf *b = ud;
	if (b->len + size * n > UPSTREAM_MAX_RESPONSE)
		return 0;
	buf_add(b, data, size * n);
	return size * n;
}

int upstream_curl_err(CURLcode rc)
{
	switch (rc) {
	case CURLE_COULDNT_CONNECT:
	case CURLE_COULDNT_RESOLVE_HOST:
	case CURLE_SSL_CONNECT_ERROR:
		return E_UNAVAILABLE;
	default:
		return E_TIMEOUT;
	}
}

/* The calling thread's handle: its connections to the partitions stay open between requests
 * (one per partition endpoint), with their TLS sessions. The handle's options are set once; a
 * request sets only what it changes. */
static CURL *thread_handle(void)
{
	if (!tl_curl) {
		tl_curl = curl_easy_init();
		upstream_setup_handle(tl_curl);
		curl_easy_setopt(tl_curl, CURLOPT_WRITEFUNCTION, upstream_on_body);
	}
	return tl_curl;
}

long upstream_connections_made(void)
{
	return atomic_load(&connections_made);
}

void upstream_connection_opened(void)
{
	atomic_fetch_add(&connections_made, 1);
}

const char *upstream_ca_file(void)
{
	return ca_file;
}

void upstream_count_connections(CURL *c)
{
	long made = 0;
	if (curl_easy_getinfo(c, CURLINFO_NUM_CONNECTS, &made) == CURLE_OK && made > 0)
		atomic_fetch_add(&connections_made, made);
}

int upstream_do(const char *base, const struct upstream_req *rq, struct upstream_resp *ret)
{
	CURL *c = thread_handle();
	char *url = NULL;
	struct curl_slist *h = upstream_setup_request(c, base, rq, &url);
	struct upstream_resp r = { 0 };
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &r.body);
	CURLcode rc = curl_easy_perform(c);
	upstream_count_connections(c);
	/* The header list and the body belong to this request: the handle must not keep them. */
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, NULL);
	curl_easy_setopt(c, CURLOPT_POSTFIELDS, NULL);
	int err = 0;
	if (rc != CURLE_OK) {
		err = upstream_curl_err(rc);
		buf_release(&r.body);
	} else {
		long code = 0;
		char *ct = NULL;
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
		curl_easy_getinfo(c, CURLINFO_CONTENT_TYPE, &ct);
		r.status = (int)code;
		r.content_type = ct ? xstrdup(ct) : NULL;
		r.warning = upstream_warnings(c);
		struct curl_header *etag;
		if (curl_easy_header(c, "ETag", 0, CURLH_HEADER, -1, &etag) == CURLHE_OK)
			r.etag = xstrdup(etag->value);
		*ret = r;
	}
	curl_slist_free_all(h);
	free(url);
	return err;
}

int upstream_partition(struct partition *p, const struct upstream_req *rq, struct upstream_resp *ret)
{
	if (atomic_load(&p->down))
		return E_UNAVAILABLE;
	int err = E_UNAVAILABLE;
	size_t start = (size_t)atomic_load(&p->next_ep);
	for (size_t i = 0; i < p->nendpoints && err == E_UNAVAILABLE; i++) {
		size_t k = (start + i) % p->nendpoints;
		err = upstream_do(p->endpoints[k], rq, ret);
		if (!err)
			atomic_store(&p->next_ep, (int)k);
	}
	if (err == E_UNAVAILABLE)
		atomic_store(&p->down, true);
	return err;
}

void upstream_multi_finished(CURLM *m, void (*done)(void *priv, CURLcode rc))
{
	CURLMsg *msg;
	int left;
	while ((msg = curl_multi_info_read(m, &left))) {
		if (msg->msg != CURLMSG_DONE)
			continue;
		void *priv = NULL;
		curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&priv);
		done(priv, msg->data.result);
	}
}
