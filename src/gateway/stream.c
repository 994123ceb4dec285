/* Streams (watch, log -f) from a partition to a client: a thread each reads from the partition
 * and wakes the client's suspended connection as bytes arrive; the partition is read no faster
 * than the client drains (bounded buffer), and nothing waits for the end of the response. */
#include <curl/curl.h>
#include <stdlib.h>
#include <string.h>
#include "gw.h"
#include "ursa/errors.h"
#include "ursa/http.h"
#include "ursa/xalloc.h"

#define STREAM_BUFFER_MAX (4u << 20)
#define HEADER_WAIT_MS 30000

static atomic_long streams_open;

long upstream_streams_open(void)
{
	return atomic_load(&streams_open);
}

/* --- streams ------------------------------------------------------------------------------ */
struct stream {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct buf data;
	int status;
	char *content_type;
	bool headers_done, ended;
	int err;
	struct http_stream *hs; /* NULL once the client is gone */
	atomic_bool stop;
	int refs;
	char *base;
	struct upstream_req rq;  /* strings owned below */
	char *path, *auth, *accept, *xff;
};

static void stream_unref(struct stream *s)
{
	pthread_mutex_lock(&s->lock);
	int left = --s->refs;
	pthread_mutex_unlock(&s->lock);
	if (left)
		return;
	buf_release(&s->data);
	free(s->content_type);
	free(s->base);
	free(s->path);
	free(s->auth);
	free(s->accept);
	free(s->xff);
	pthread_mutex_destroy(&s->lock);
	pthread_cond_destroy(&s->cond);
	free(s);
	atomic_fetch_sub(&streams_open, 1);
}

static size_t on_header(char *data, size_t size, size_t n, void *ud)
{
	struct stream *s = ud;
	size_t len = size * n;
	if (len >= 5 && strncmp(data, "HTTP/", 5) == 0) {
		const char *sp = memchr(data, ' ', len);
		long long code = 0;
		if (sp && (size_t)(sp - data) + 4 <= len) {
			char num[4] = { sp[1], sp[2], sp[3], 0 };
			if (parse_int64(num, &code) != 0)
				code = 0;
		}
		pthread_mutex_lock(&s->lock);
		s->status = (int)code;
		pthread_mutex_unlock(&s->lock);
	} else if (len >= 13 && strncasecmp(data, "content-type:", 13) == 0) {
		size_t a = 13, b = len;
		while (a < b && (data[a] == ' ' || data[a] == '\t'))
			a++;
		while (b > a && (data[b - 1] == '\r' || data[b - 1] == '\n' || data[b - 1] == ' '))
			b--;
		pthread_mutex_lock(&s->lock);
		free(s->content_type);
		s->content_type = xstrndup(data + a, b - a);
		pthread_mutex_unlock(&s->lock);
	} else if (len <= 2 && (data[0] == '\r' || data[0] == '\n')) {
		pthread_mutex_lock(&s->lock);
		if (s->status >= 200) {
			s->headers_done = true;
			pthread_cond_broadcast(&s->cond);
		}
		pthread_mutex_unlock(&s->lock);
	}
	return len;
}

static size_t on_stream_body(char *data, size_t size, size_t n, void *ud)
{
	struct stream *s = ud;
	size_t len = size * n;
	pthread_mutex_lock(&s->lock);
	while (s->data.len > STREAM_BUFFER_MAX && !atomic_load(&s->stop))
		pthread_cond_wait(&s->cond, &s->lock);
	buf_add(&s->data, data, len);
	if (s->hs)
		http_stream_wake(s->hs);
	pthread_mutex_unlock(&s->lock);
	return atomic_load(&s->stop) ? 0 : len;
}

static int on_progress(void *ud, curl_off_t a, curl_off_t b, curl_off_t c, curl_off_t d)
{
	struct stream *s = ud;
	return atomic_load(&s->stop) ? 1 : 0;
}

static void *stream_main(void *arg)
{
	struct stream *s = arg;
	CURL *c = curl_easy_init();
	char *url = NULL;
	struct curl_slist *h = upstream_setup(c, s->base, &s->rq, &url);
	curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(c, CURLOPT_HEADERDATA, s);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_stream_body);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, s);
	curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
	curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, on_progress);
	curl_easy_setopt(c, CURLOPT_XFERINFODATA, s);
	CURLcode rc = curl_easy_perform(c);
	curl_slist_free_all(h);
	curl_easy_cleanup(c);
	free(url);
	pthread_mutex_lock(&s->lock);
	s->ended = true;
	if (!s->headers_done)
		s->err = rc == CURLE_OK ? 0 : upstream_curl_err(rc);
	pthread_cond_broadcast(&s->cond);
	if (s->hs)
		http_stream_wake(s->hs);
	pthread_mutex_unlock(&s->lock);
	stream_unref(s);
	return NULL;
}

static int stream_fill(void *ud, struct buf *out, size_t max)
{
	struct stream *s = ud;
	int r = 0;
	pthread_mutex_lock(&s->lock);
	if (s->data.len) {
		size_t n = s->data.len < max ? s->data.len : max;
		buf_add(out, s->data.ptr, n);
		memmove(s->data.ptr, s->data.ptr + n, s->data.len - n);
		s->data.len -= n;
		s->data.ptr[s->data.len] = '\0';
		pthread_cond_broadcast(&s->cond);
		r = 1;
	} else if (s->ended) {
		r = -1;
	}
	pthread_mutex_unlock(&s->lock);
	return r;
}

static void stream_done(void *ud)
{
	struct stream *s = ud;
	pthread_mutex_lock(&s->lock);
	s->hs = NULL;
	atomic_store(&s->stop, true);
	pthread_cond_broadcast(&s->cond);
	pthread_mutex_unlock(&s->lock);
	stream_unref(s);
}

static char *dup_or_null(const char *s)
{
	return s ? xstrdup(s) : NULL;
}

static void reply_error(struct http_reply *reply, int err, const char *msg)
{
	struct buf b = BUF_INIT;
	buf_addf(&b, "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\",\"message\":");
	buf_add_json_str(&b, msg, strlen(msg));
	buf_addf(&b, ",\"reason\":\"%s\",\"code\":%d}", err_reason(err), err_http_code(err));
	if (err == E_UNAVAILABLE)
		http_reply_header(reply, "Retry-After", "1");
	http_reply_set(reply, err_http_code(err), "application/json", &b);
}

void upstream_stream(struct partition *p, const struct upstream_req *rq, struct http_reply *reply)
{
	if (atomic_load(&p->down)) {
		reply_error(reply, E_UNAVAILABLE, "the partition serving this request is unavailable");
		return;
	}
	struct stream *s = xcalloc(1, sizeof(*s));
	pthread_mutex_init(&s->lock, NULL);
	pthread_cond_init(&s->cond, NULL);
	atomic_fetch_add(&streams_open, 1);
	s->refs = 2;
	s->base = xstrdup(p->endpoints[(size_t)atomic_load(&p->next_ep) % p->nendpoints]);
	s->path = xstrdup(rq->path);
	s->auth = dup_or_null(rq->authorization);
	s->accept = dup_or_null(rq->accept);
	s->xff = dup_or_null(rq->forwarded_for);
	s->rq = (struct upstream_req){ .method = "GET", .path = s->path, .authorization = s->auth,
				       .accept = s->accept, .forwarded_for = s->xff };
	pthread_t t;
	pthread_attr_t attr;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&attr, 256 * 1024);
	if (pthread_create(&t, &attr, stream_main, s) != 0) {
		pthread_attr_destroy(&attr);
		s->refs = 1;
		stream_unref(s);
		reply_error(reply, E_UNAVAILABLE, "the gateway cannot open more streams");
		return;
	}
	pthread_attr_destroy(&attr);
	/* Wait for the partition's status line and headers: a 200 becomes a stream, anything else
	 * (403, 404, 410...) is read whole and answered as is. */
	struct timespec until;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += HEADER_WAIT_MS / 1000;
	pthread_mutex_lock(&s->lock);
	while (!s->headers_done && !s->ended)
		if (pthread_cond_timedwait(&s->cond, &s->lock, &until) != 0)
			break;
	bool ok = s->headers_done && s->status == 200;
	if (ok) {
		s->hs = http_reply_stream(reply, 200, ctype_intern(s->content_type), stream_fill, stream_done, s);
		http_stream_wake(s->hs);
		pthread_mutex_unlock(&s->lock);
		return;
	}
	atomic_store(&s->stop, !s->headers_done);
	while (!s->ended)
		pthread_cond_wait(&s->cond, &s->lock);
	int err = s->err, status = s->status;
	struct buf body = s->data;
	buf_init(&s->data);
	char *ct = s->content_type;
	s->content_type = NULL;
	pthread_mutex_unlock(&s->lock);
	if (!s->headers_done || status < 100) {
		if (err == E_UNAVAILABLE || err == 0)
			atomic_store(&p->down, true);
		reply_error(reply, E_UNAVAILABLE, "the partition serving this request did not answer");
		buf_release(&body);
	} else {
		http_reply_set(reply, status, ctype_intern(ct), &body);
	}
	free(ct);
	stream_done(s);
}
