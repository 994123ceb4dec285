/* A watch: one thread running one gRPC stream /etcdserverpb.Watch/Watch at a time, over HTTP/2
 * (prior knowledge for http://, ALPN for https://). The request side carries one WatchRequest
 * (the create_request) and then stays open: etcd ends a watch stream whose client half-closes
 * it, so the upload pauses instead of finishing. The response side is a sequence of
 * length-prefixed WatchResponse messages. On any failure the thread reconnects (next member,
 * every second) from the last revision seen + 1. The transfer runs on a curl multi handle so
 * etcd_watch_stop can wake it at once. */
#include "etcd/etcd_internal.h"
#include "ursa/errors.h"
#include "ursa/xalloc.h"
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define RETRY_MS 1000
#define POLL_MS 1000

enum conn_state { CONN_UNKNOWN, CONN_UP, CONN_DOWN };

struct etcd_watch {
	struct etcd *e;
	char *key;
	char *range_end;
	bool prev_kv;
	struct etcd_watch_handlers h;
	void *ud;
	pthread_t thread;
	CURLM *multi;
	atomic_bool stop;

	/* owned by the watch thread */
	int64_t next_rev; /* 0 until known when watching "from now" */
	enum conn_state state;
	bool compacted;
	size_t member;
	struct buf req;   /* the framed create request of the current stream */
	size_t req_off;   /* how much of it curl has taken */
	struct buf in;    /* response bytes not yet making a whole message */
	struct etcd_event *pending; /* events of a fragmented response not yet complete */
	size_t n_pending;
	size_t pending_alloc;
};

static void set_state(struct etcd_watch *w, enum conn_state s)
{
	if (w->state == s)
		return;
	w->state = s;
	if (w->h.on_state)
		w->h.on_state(w->ud, s == CONN_UP);
}

static void drop_pending(struct etcd_watch *w)
{
	for (size_t i = 0; i < w->n_pending; i++)
		etcd_event_release(&w->pending[i]);
	w->n_pending = 0;
}

static void add_pending(struct etcd_watch *w, struct etcd_watch_msg *m)
{
	if (w->n_pending + m->n_events > w->pending_alloc) {
		w->pending_alloc = (w->n_pending + m->n_events) * 2;
		w->pending = xrealloc(w->pending, w->pending_alloc * sizeof(*w->pending));
	}
	memcpy(w->pending + w->n_pending, m->events, m->n_events * sizeof(*m->events));
	w->n_pending += m->n_events;
	free(m->events);
	m->events = NULL;
	m->n_events = 0;
}

/* Hands the complete set of pending events to the owner, minus any already delivered before a
 * reconnect, and moves the resume point past them. */
static void deliver(struct etcd_watch *w)
{
	size_t n = 0;

	for (size_t i = 0; i < w->n_pending; i++) {
		if (w->pending[i].kv.mod_rev < w->next_rev) {
			etcd_event_release(&w->pending[i]);
			continue;
		}
		w->pending[n++] = w->pending[i];
	}
	w->n_pending = n;
	if (n == 0)
		return;
	if (w->h.on_events)
		w->h.on_events(w->ud, w->pending, n);
	w->next_rev = w->pending[n - 1].kv.mod_rev + 1;
	drop_pending(w);
}

/* Returns 0 to keep reading, -1 to end this stream. */
static int handle_msg(struct etcd_watch *w, struct etcd_watch_msg *m)
{
	if (m->created) {
		if (m->canceled)
			return -1;
		if (w->next_rev == 0)
			w->next_rev = m->header_rev + 1;
		set_state(w, CONN_UP);
		return 0;
	}
	if (m->canceled) {
		if (m->compact_rev <= 0)
			return -1;
		w->compacted = true;
		if (w->h.on_compacted)
			w->h.on_compacted(w->ud, m->compact_rev);
		return -1;
	}
	if (m->n_events == 0)
		return 0; /* progress notification */
	add_pending(w, m);
	if (!m->fragment)
		deliver(w);
	return 0;
}

#define GRPC_PREFIX 5

/* One whole message of the stream: 0 to keep reading, -1 to end this stream. */
static int handle_frame(struct etcd_watch *w, const uint8_t *p, size_t len)
{
	struct etcd_watch_msg m;
	int rc;

	if (etcd_pb_decode_watch(p, len, &m) != 0)
		return -1;
	rc = handle_msg(w, &m);
	etcd_watch_msg_release(&m);
	return rc;
}

static size_t on_stream_data(char *data, size_t size, size_t nmemb, void *ud)
{
	struct etcd_watch *w = ud;
	size_t n = size * nmemb;
	size_t start = 0;

	if (atomic_load(&w->stop))
		return 0;
	buf_add(&w->in, data, n);
	for (;;) {
		const uint8_t *p = (const uint8_t *)w->in.ptr + start;
		size_t left = w->in.len - start;
		if (left < GRPC_PREFIX)
			break;
		size_t len = (size_t)p[1] << 24 | (size_t)p[2] << 16 | (size_t)p[3] << 8 | (size_t)p[4];
		if (p[0] != 0 || len > ETCD_MAX_WATCH_MSG)
			return 0; /* compressed (never offered) or oversized: end this stream */
		if (left - GRPC_PREFIX < len)
			break;
		if (handle_frame(w, p + GRPC_PREFIX, len) < 0)
			return 0;
		start += GRPC_PREFIX + len;
	}
	if (start) {
		memmove(w->in.ptr, w->in.ptr + start, w->in.len - start);
		w->in.len -= start;
	}
	return n;
}

/* The request body: the create request, then a pause that lasts as long as the stream. */
static size_t on_send(char *dst, size_t size, size_t nmemb, void *ud)
{
	struct etcd_watch *w = ud;
	size_t n = size * nmemb, left = w->req.len - w->req_off;

	if (left == 0)
		return CURL_READFUNC_PAUSE;
	if (n > left)
		n = left;
	memcpy(dst, w->req.ptr + w->req_off, n);
	w->req_off += n;
	return n;
}

static void create_request(struct etcd_watch *w)
{
	struct buf msg = BUF_INIT;

	/* fragment bounds each message by etcd's send limit; fragments are joined before delivery */
	etcd_pb_watch_create(&msg, w->key, w->range_end, w->next_rev, w->prev_kv, true);
	buf_reset(&w->req);
	char prefix[GRPC_PREFIX] = { 0, (char)(msg.len >> 24), (char)(msg.len >> 16), (char)(msg.len >> 8),
				     (char)msg.len };
	buf_add(&w->req, prefix, GRPC_PREFIX);
	buf_add(&w->req, msg.ptr, msg.len);
	w->req_off = 0;
	buf_release(&msg);
}

static void setup_stream(struct etcd_watch *w, CURL *c, const char *url)
{
	bool tls = strncmp(url, "https:", 6) == 0;

	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_TCP_NODELAY, 1L);
	curl_easy_setopt(c, CURLOPT_TCP_KEEPALIVE, 1L);
	curl_easy_setopt(c, CURLOPT_TCP_KEEPIDLE, 10L);
	curl_easy_setopt(c, CURLOPT_TCP_KEEPINTVL, 5L);
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, w->e->connect_timeout_ms);
	curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(c, CURLOPT_HTTP_VERSION,
			 tls ? (long)CURL_HTTP_VERSION_2TLS : (long)CURL_HTTP_VERSION_2_PRIOR_KNOWLEDGE);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, w->e->stream_headers);
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_POST, 1L);
	curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)-1);
	curl_easy_setopt(c, CURLOPT_READFUNCTION, on_send);
	curl_easy_setopt(c, CURLOPT_READDATA, w);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_stream_data);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, w);
	curl_easy_setopt(c, CURLOPT_BUFFERSIZE, 102400L);
}

/* Runs one stream to member w->member until it ends, fails or stop is set. */
static void run_stream(struct etcd_watch *w)
{
	CURL *c = curl_easy_init();
	char *url = xasprintf("%s/etcdserverpb.Watch/Watch", w->e->endpoints[w->member]);
	int running = 1;

	if (!c)
		abort();
	buf_reset(&w->in);
	drop_pending(w);
	create_request(w);
	setup_stream(w, c, url);
	curl_multi_add_handle(w->multi, c);
	while (running && !atomic_load(&w->stop)) {
		curl_multi_perform(w->multi, &running);
		if (running && !atomic_load(&w->stop))
			curl_multi_poll(w->multi, NULL, 0, POLL_MS, NULL);
	}
	curl_multi_remove_handle(w->multi, c);
	curl_easy_cleanup(c);
	free(url);
}

static int64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Sleeps ms unless stop is set; curl_multi_wakeup interrupts the poll. */
static void pause_ms(struct etcd_watch *w, int64_t ms)
{
	int64_t deadline = now_ms() + ms;
	int64_t left;

	while (!atomic_load(&w->stop) && (left = deadline - now_ms()) > 0)
		curl_multi_poll(w->multi, NULL, 0, (int)left, NULL);
}

static void *watch_main(void *arg)
{
	struct etcd_watch *w = arg;

	w->member = atomic_load(&w->e->preferred) % w->e->n_endpoints;
	while (!atomic_load(&w->stop)) {
		run_stream(w);
		if (atomic_load(&w->stop) || w->compacted)
			break;
		set_state(w, CONN_DOWN);
		pause_ms(w, RETRY_MS);
		w->member = (w->member + 1) % w->e->n_endpoints;
	}
	return NULL;
}

static void watch_free(struct etcd_watch *w)
{
	drop_pending(w);
	free(w->pending);
	buf_release(&w->req);
	buf_release(&w->in);
	if (w->multi)
		curl_multi_cleanup(w->multi);
	free(w->key);
	free(w->range_end);
	free(w);
}

struct etcd_watch *etcd_watch_start(struct etcd *e, const char *key, const char *range_end, int64_t start_rev,
				    bool prev_kv, const struct etcd_watch_handlers *h, void *ud)
{
	struct etcd_watch *w;

	if (!e || !key || !h || start_rev < 0)
		return NULL;
	w = xcalloc(1, sizeof(*w));
	w->e = e;
	w->key = xstrdup(key);
	w->range_end = range_end ? xstrdup(range_end) : NULL;
	w->prev_kv = prev_kv;
	w->h = *h;
	w->ud = ud;
	w->next_rev = start_rev;
	w->state = CONN_UNKNOWN;
	atomic_init(&w->stop, false);
	w->multi = curl_multi_init();
	if (!w->multi || pthread_create(&w->thread, NULL, watch_main, w) != 0) {
		watch_free(w);
		return NULL;
	}
	return w;
}

void etcd_watch_stop(struct etcd_watch *w)
{
	if (!w)
		return;
	atomic_store(&w->stop, true);
	curl_multi_wakeup(w->multi);
	pthread_join(w->thread, NULL);
	watch_free(w);
}
