/* Forwarding to partitions with libcurl. Plain requests run on the HTTP worker that handles
 * them, on a per-thread keep-alive handle. Streams (watch, log -f) are in stream.c. */
#include <curl/curl.h>
#include <stdlib.h>
#include <string.h>
#include "gw.h"
#include "ursa/errors.h"
#include "ursa/http.h"
#include "ursa/xalloc.h"

#define MAX_RESPONSE (64u << 20)

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

void upstream_resp_release(struct upstream_resp *r)
{
	free(r->content_type);
	r->content_type = NULL;
	buf_release(&r->body);
}

static struct curl_slist *add_header(struct curl_slist *h, const char *name, const char *v)
{
	if (!v || !*v || strchr(v, '\n') || strchr(v, '\r'))
		return h;
	char *line = xasprintf("%s: %s", name, v);
	h = curl_slist_append(h, line);
	free(line);
	return h;
}

/* Options every handle to a partition has. */
static void setup_handle(CURL *c)
{
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, 1000L);
	curl_easy_setopt(c, CURLOPT_TCP_KEEPALIVE, 1L);
	curl_easy_setopt(c, CURLOPT_TCP_NODELAY, 1L);
	curl_easy_setopt(c, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
	if (ca_file)
		curl_easy_setopt(c, CURLOPT_CAINFO, ca_file);
}

/* What changes from one request to the next. Every method-related option is set either way,
 * so a handle reused after another method is left in no stale state. */
static struct curl_slist *setup_request(CURL *c, const char *base, const struct upstream_req *rq, char **ret_url)
{
	char *url = xasprintf("%s%s", base, rq->path);
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, rq->timeout_ms > 0 ? rq->timeout_ms : 0L);
	struct curl_slist *h = NULL;
	h = add_header(h, "Authorization", rq->authorization);
	h = add_header(h, IDENTITY_HEADER, rq->identity);
	h = add_header(h, "Accept", rq->accept ? rq->accept : "application/json");
	h = add_header(h, "X-Forwarded-For", rq->forwarded_for);
	h = curl_slist_append(h, "Expect:");
	if (strcmp(rq->method, "GET") == 0 || strcmp(rq->method, "HEAD") == 0) {
		curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, NULL);
		curl_easy_setopt(c, CURLOPT_HTTPGET, 1L);
		curl_easy_setopt(c, CURLOPT_NOBODY, strcmp(rq->method, "HEAD") == 0 ? 1L : 0L);
	} else {
		curl_easy_setopt(c, CURLOPT_NOBODY, 0L);
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, rq->body ? rq->body : "");
		curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)rq->len);
		curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, rq->method);
		h = add_header(h, "Content-Type", rq->content_type ? rq->content_type : "application/json");
	}
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
	*ret_url = url;
	return h;
}

struct curl_slist *upstream_setup(CURL *c, const char *base, const struct upstream_req *rq, char **ret_url)
{
	setup_handle(c);
	return setup_request(c, base, rq, ret_url);
}

static size_t on_body(char *data, size_t size, size_t n, void *ud)
{
	struct buf *b = ud;
	if (b->len + size * n > MAX_RESPONSE)
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
		setup_handle(tl_curl);
		curl_easy_setopt(tl_curl, CURLOPT_WRITEFUNCTION, on_body);
	}
	return tl_curl;
}

long upstream_connections_made(void)
{
	return atomic_load(&connections_made);
}

int upstream_do(const char *base, const struct upstream_req *rq, struct upstream_resp *ret)
{
	CURL *c = thread_handle();
	char *url = NULL;
	struct curl_slist *h = setup_request(c, base, rq, &url);
	struct upstream_resp r = { 0 };
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &r.body);
	CURLcode rc = curl_easy_perform(c);
	long made = 0;
	if (curl_easy_getinfo(c, CURLINFO_NUM_CONNECTS, &made) == CURLE_OK && made > 0)
		atomic_fetch_add(&connections_made, made);
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

