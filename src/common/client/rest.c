/* REST client: a pool of libcurl easy handles (one per concurrent caller, connections kept
 * alive between requests), bearer token, CA, fail-over between a partition's servers. */
#include <curl/curl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "client/client_internal.h"
#include "ursa/errors.h"
#include "ursa/jsonutil.h"
#include "ursa/xalloc.h"

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;

static void curl_init_once(void)
{
	curl_global_init(CURL_GLOBAL_DEFAULT);
}

static void split_servers(struct rest_client *c, const char *list)
{
	const char *p = list;
	c->servers = xcalloc(REST_MAX_SERVERS, sizeof(*c->servers));
	while (*p && c->nservers < REST_MAX_SERVERS) {
		size_t n = strcspn(p, ",");
		const char *s = p, *e = p + n;
		while (s < e && (*s == ' ' || *s == '\t'))
			s++;
		while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '/'))
			e--;
		if (e > s)
			c->servers[c->nservers++] = xstrndup(s, (size_t)(e - s));
		p += n;
		if (*p == ',')
			p++;
	}
}

struct curl_slist *rest_make_headers(struct rest_client *c, const char *content_type, bool has_body)
{
	struct curl_slist *l = NULL;
	l = curl_slist_append(l, "Accept: application/json");
	l = curl_slist_append(l, "Expect:");
	if (c->auth_header)
		l = curl_slist_append(l, c->auth_header);
	if (has_body) {
		char *ct = xasprintf("Content-Type: %s", content_type ? content_type : "application/json");
		l = curl_slist_append(l, ct);
		free(ct);
	}
	return l;
}

struct rest_client *rest_new_ext(const struct rest_config *cfg, const struct rest_extra *extra)
{
	if (!cfg || !cfg->servers)
		return NULL;
	pthread_once(&curl_once, curl_init_once);
	struct rest_client *c = xcalloc(1, sizeof(*c));
	split_servers(c, cfg->servers);
	if (!c->nservers) {
		free(c->servers);
		free(c);
		return NULL;
	}
	/* Clients spread over a partition's servers (a partition registers two API servers so that
	 * its kubelets and controllers share them): each starts at a server of its own, by process
	 * and by client, then keeps to whichever answered last. */
	static atomic_uint clients;
	c->preferred = ((size_t)getpid() + atomic_fetch_add(&clients, 1)) % c->nservers;
	if (cfg->token && *cfg->token)
		c->auth_header = xasprintf("Authorization: Bearer %s", cfg->token);
	c->ca_file = cfg->ca_file ? xstrdup(cfg->ca_file) : NULL;
	c->user_agent = xstrdup(cfg->user_agent ? cfg->user_agent : "ursa");
	c->timeout_ms = cfg->timeout_ms > 0 ? cfg->timeout_ms : 10000;
	if (extra) {
		if (extra->ca_blob_len)
			buf_add(&c->ca_blob, extra->ca_blob, extra->ca_blob_len);
		if (extra->cert_blob_len)
			buf_add(&c->cert_blob, extra->cert_blob, extra->cert_blob_len);
		if (extra->key_blob_len)
			buf_add(&c->key_blob, extra->key_blob, extra->key_blob_len);
		c->insecure = extra->insecure;
	}
	pthread_mutex_init(&c->lock, NULL);
	c->idle = xcalloc(REST_MAX_IDLE, sizeof(*c->idle));
	c->hdr_plain = rest_make_headers(c, NULL, false);
	c->hdr_json = rest_make_headers(c, NULL, true);
	return c;
}

struct rest_client *rest_new(const struct rest_config *cfg)
{
	return rest_new_ext(cfg, NULL);
}

void rest_free(struct rest_client *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->nidle; i++)
		curl_easy_cleanup(c->idle[i]);
	free(c->idle);
	for (size_t i = 0; i < c->nservers; i++)
		free(c->servers[i]);
	free(c->servers);
	curl_slist_free_all(c->hdr_plain);
	curl_slist_free_all(c->hdr_json);
	free(c->auth_header);
	free(c->ca_file);
	free(c->user_agent);
	buf_release(&c->ca_blob);
	buf_release(&c->cert_blob);
	buf_release(&c->key_blob);
	pthread_mutex_destroy(&c->lock);
	free(c);
}

void rest_setup_handle(struct rest_client *c, CURL *h);

CURL *rest_pool_get(struct rest_client *c)
{
	CURL *h = NULL;
	pthread_mutex_lock(&c->lock);
	if (c->nidle)
		h = c->idle[--c->nidle];
	pthread_mutex_unlock(&c->lock);
	if (!h && (h = curl_easy_init()))
		rest_setup_handle(c, h);
	return h;
}

void rest_pool_put(struct rest_client *c, CURL *h)
{
	pthread_mutex_lock(&c->lock);
	if (c->nidle < REST_MAX_IDLE) {
		c->idle[c->nidle++] = h;
		h = NULL;
	}
	pthread_mutex_unlock(&c->lock);
	if (h)
		curl_easy_cleanup(h);
}

static void set_blob(CURL *h, CURLoption opt, struct buf *b)
{
	struct curl_blob blob = { .data = b->ptr, .len = b->len, .flags = CURL_BLOB_COPY };
	curl_easy_setopt(h, opt, &blob);
}

/* What every request of c shares, set once when a handle joins c's pool: a handle's options
 * persist between transfers, and setting them anew (blobs copied, strings duplicated) cost
 * about as much as the rest of a small request's client work. */
void rest_setup_handle(struct rest_client *c, CURL *h)
{
	curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_USERAGENT, c->user_agent);
	curl_easy_setopt(h, CURLOPT_TCP_KEEPALIVE, 1L);
	curl_easy_setopt(h, CURLOPT_TCP_NODELAY, 1L);
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS,
			 c->timeout_ms < REST_CONNECT_TIMEOUT_MS ? c->timeout_ms : REST_CONNECT_TIMEOUT_MS);
	if (c->ca_blob.len)
		set_blob(h, CURLOPT_CAINFO_BLOB, &c->ca_blob);
	else if (c->ca_file)
		curl_easy_setopt(h, CURLOPT_CAINFO, c->ca_file);
	if (c->cert_blob.len)
		set_blob(h, CURLOPT_SSLCERT_BLOB, &c->cert_blob);
	if (c->key_blob.len)
		set_blob(h, CURLOPT_SSLKEY_BLOB, &c->key_blob);
	if (c->insecure) {
		curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 0L);
		curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 0L);
	}
}

/* What differs between requests; every option a request may set is set here, so nothing of
 * the handle's previous request carries over. */
void rest_setup_request(CURL *h, const char *url, struct curl_slist *headers, long timeout_ms,
			  curl_write_callback on_data, void *ud)
{
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers);
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, timeout_ms);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_data);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, ud);
}

void rest_set_method(CURL *h, const char *method, const char *body, size_t len)
{
	bool get = !method || !strcmp(method, "GET"), head = method && !strcmp(method, "HEAD");
	curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, NULL);
	curl_easy_setopt(h, CURLOPT_POSTFIELDS, NULL);
	curl_easy_setopt(h, CURLOPT_HTTPGET, 1L); /* back to a GET: no upload, no body */
	curl_easy_setopt(h, CURLOPT_NOBODY, head ? 1L : 0L);
	if (get || head)
		return;
	curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
	if (!strcmp(method, "POST") || body) {
		curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)(body ? len : 0));
		curl_easy_setopt(h, CURLOPT_POSTFIELDS, body ? body : "");
	}
}

/* True when the request never reached a server, so another server may be tried. Requests
 * that may have been received are retried elsewhere only when they are reads. */
bool rest_not_delivered(CURL *h, CURLcode rc, bool idempotent)
{
	curl_off_t connect_us = 0;
	switch (rc) {
	case CURLE_COULDNT_CONNECT:
	case CURLE_COULDNT_RESOLVE_HOST:
	case CURLE_COULDNT_RESOLVE_PROXY:
	case CURLE_SSL_CONNECT_ERROR:
		return true;
	case CURLE_OPERATION_TIMEDOUT:
		curl_easy_getinfo(h, CURLINFO_CONNECT_TIME_T, &connect_us);
		return connect_us == 0;
	case CURLE_GOT_NOTHING:
	case CURLE_SEND_ERROR:
	case CURLE_RECV_ERROR:
		return idempotent;
	default:
		return false;
	}
}

size_t rest_on_body(char *data, size_t size, size_t n, void *ud)
{
	struct rest_sink *s = ud;
	size_t len = size * n;
	if (s->total + len > REST_MAX_RESPONSE) {
		s->overflow = true;
		return 0;
	}
	s->total += len;
	if (s->out)
		buf_add(s->out, data, len);
	return len;
}

char *rest_make_url(struct rest_client *c, size_t idx, const char *path)
{
	return xasprintf("%s%s%s", c->servers[idx], *path == '/' ? "" : "/", path);
}

int rest_do_raw(struct rest_client *c, const char *method, const char *path, const char *body, size_t len,
		const char *content_type, struct buf *ret_raw)
{
	CURL *h = rest_pool_get(c);
	bool own_headers = body && content_type && strcmp(content_type, "application/json");
	struct curl_slist *headers = own_headers ? rest_make_headers(c, content_type, true)
						 : body ? c->hdr_json : c->hdr_plain;
	bool idempotent = !method || !strcmp(method, "GET") || !strcmp(method, "HEAD");
	size_t start = atomic_load(&c->preferred) % c->nservers, out_len0 = ret_raw ? ret_raw->len : 0;
	int result = E_UNAVAILABLE;

	for (size_t i = 0; i < c->nservers; i++) {
		size_t idx = (start + i) % c->nservers;
		struct rest_sink s = { .out = ret_raw };
		char *url = rest_make_url(c, idx, path);
		long status = 0;
		CURLcode rc;

		if (ret_raw)
			ret_raw->len = out_len0;
		rest_setup_request(h, url, headers, c->timeout_ms, rest_on_body, &s);
		rest_set_method(h, method, body, len);
		rc = curl_easy_perform(h);
		free(url);
		if (rc == CURLE_OK) {
			curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
			atomic_store(&c->preferred, idx);
			result = (int)status;
			break;
		}
		if (s.overflow) {
			result = E_TOO_LARGE;
			break;
		}
		if (rest_not_delivered(h, rc, idempotent))
			continue;
		result = rc == CURLE_OPERATION_TIMEDOUT ? E_TIMEOUT : E_UNAVAILABLE;
		break;
	}
	if (ret_raw && ret_raw->ptr)
		ret_raw->ptr[ret_raw->len] = '\0';
	if (own_headers)
		curl_slist_free_all(headers);
	rest_pool_put(c, h);
	return result;
}

int rest_do(struct rest_client *c, const char *method, const char *path, const json_t *body,
	    const char *content_type, json_t **ret_body)
{
	struct buf resp = BUF_INIT;
	char *data = NULL;
	size_t len = 0;
	int rc;

	if (ret_body)
		*ret_body = NULL;
	if (body) {
		data = json_dumps(body, JSON_COMPACT | JSON_ENCODE_ANY);
		len = data ? strlen(data) : 0;
	}
	rc = rest_do_raw(c, method, path, data, len, content_type, ret_body ? &resp : NULL);
	free(data);
	if (rc >= 100 && ret_body && resp.len)
		*ret_body = json_parse_limited(resp.ptr, resp.len, REST_MAX_JSON_DEPTH, NULL);
	buf_release(&resp);
	return rc;
}

/* Streaming ------------------------------------------------------------------------------------ */

struct stream_ctx {
	CURL *h;
	int (*on_data)(void *ud, const char *data, size_t len);
	void *ud;
	long status;
	bool cb_stopped;
};

static size_t on_stream(char *data, size_t size, size_t n, void *ud)
{
	struct stream_ctx *s = ud;
	size_t len = size * n;
	if (!s->status)
		curl_easy_getinfo(s->h, CURLINFO_RESPONSE_CODE, &s->status);
	if (s->status < 200 || s->status >= 300 || !s->on_data)
		return len; /* an error body; the caller gets the status */
	if (s->on_data(s->ud, data, len)) {
		s->cb_stopped = true;
		return 0;
	}
	return len;
}

static bool stop_set(const atomic_bool *stop)
{
	return stop && atomic_load(stop);
}

/* Runs h on m until it ends or *stop; returns its CURLcode (CURLE_ABORTED_BY_CALLBACK when
 * stopped). */
static CURLcode run_multi(CURLM *m, CURL *h, const atomic_bool *stop)
{
	CURLcode rc = CURLE_ABORTED_BY_CALLBACK;
	int running = 1;

	curl_multi_add_handle(m, h);
	while (running && !stop_set(stop)) {
		if (curl_multi_perform(m, &running) != CURLM_OK)
			break;
		if (running)
			curl_multi_poll(m, NULL, 0, REST_STREAM_POLL_MS, NULL);
	}
	if (!running) {
		CURLMsg *msg;
		int left;
		while ((msg = curl_multi_info_read(m, &left)))
			if (msg->msg == CURLMSG_DONE && msg->easy_handle == h)
				rc = msg->data.result;
	}
	curl_multi_remove_handle(m, h);
	return rc;
}

int rest_stream(struct rest_client *c, const char *path, int (*on_data)(void *ud, const char *data, size_t len),
		void *ud, const atomic_bool *stop)
{
	return rest_stream_post(c, path, NULL, 0, on_data, ud, stop);
}

int rest_stream_post(struct rest_client *c, const char *path, const char *body, size_t len,
		     int (*on_data)(void *ud, const char *data, size_t len), void *ud, const atomic_bool *stop)
{
	CURL *h = rest_pool_get(c);
	CURLM *m = curl_multi_init();
	size_t start = atomic_load(&c->preferred) % c->nservers;
	int result = E_UNAVAILABLE;

	for (size_t i = 0; i < c->nservers && !stop_set(stop); i++) {
		size_t idx = (start + i) % c->nservers;
		struct stream_ctx s = { .h = h, .on_data = on_data, .ud = ud };
		char *url = rest_make_url(c, idx, path);
		CURLcode rc;

		rest_setup_request(h, url, body ? c->hdr_json : c->hdr_plain, 0, on_stream, &s);
		rest_set_method(h, body ? "POST" : "GET", body, len);
		rc = run_multi(m, h, stop);
		free(url);
		if (!s.status)
			curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &s.status);
		if (s.status >= 100) {
			atomic_store(&c->preferred, idx);
			result = (int)s.status;
			break;
		}
		if (rc == CURLE_ABORTED_BY_CALLBACK)
			break;
		if (rest_not_delivered(h, rc, true))
			continue;
		result = rc == CURLE_OPERATION_TIMEDOUT ? E_TIMEOUT : E_UNAVAILABLE;
		break;
	}
	curl_multi_cleanup(m);
	rest_pool_put(c, h);
	return result;
}

void rest_error_message(int status, const struct buf *body, struct buf *out)
{
	json_t *j = body && body->len ? json_loadb(body->ptr, body->len, 0, NULL) : NULL;
	if (json_is_string(json_object_get(j, "message")))
		buf_adds(out, json_string_value(json_object_get(j, "message")));
	else if (status >= 100)
		buf_addf(out, "HTTP %d", status);
	else
		buf_adds(out, err_reason(status));
	json_decref(j);
}
