/* Watch streams: a watcher on the resource's watch cache feeding a suspended HTTP stream.
 * A ticker thread wakes streams whose deadline, bookmark or idle newline is due and tracks etcd
 * health. A stream that sent nothing for IDLE_NEWLINE_MS gets a newline between events (JSON
 * decoders skip whitespace between values; client-go and the Python client do): a suspended
 * connection is not read, so a client that left is noticed only when a write fails, and without
 * this a watch of a quiet resource would hold its watcher and connection until its timeout. */
#include "internal.h"
#include "ursa/crd.h"
#include "ursa/jsonutil.h"
#include "ursa/log.h"
#include "ursa/timeutil.h"
#include "ursa/xalloc.h"
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define WATCH_QUEUE_MAX 20000
#define BOOKMARK_EVERY_MS 60000
#define DEFAULT_TIMEOUT_MIN_S 1800
#define IDLE_NEWLINE_MS 10000

struct wstream {
	struct apiserver *s;
	struct served *sv;
	struct watcher *w;
	struct http_stream *hs;
	struct req_filter filter;
	bool table, columns_sent, bookmarks, ended;
	json_t *error;            /* a Status to send as an ERROR event, then end */
	int64_t deadline_ms, next_bookmark_ms;
	atomic_llong quiet_since_ms; /* the last write (read by the ticker) */
	struct wstream *prev, *next;
};

static pthread_mutex_t streams_lock = PTHREAD_MUTEX_INITIALIZER;
static struct wstream *streams;

static void streams_add(struct wstream *ws)
{
	pthread_mutex_lock(&streams_lock);
	ws->next = streams;
	if (streams)
		streams->prev = ws;
	streams = ws;
	pthread_mutex_unlock(&streams_lock);
}

static void streams_remove(struct wstream *ws)
{
	pthread_mutex_lock(&streams_lock);
	if (ws->prev)
		ws->prev->next = ws->next;
	else
		streams = ws->next;
	if (ws->next)
		ws->next->prev = ws->prev;
	pthread_mutex_unlock(&streams_lock);
}

static const char *type_name(enum wev_type t)
{
	static const char *const names[] = { "ADDED", "MODIFIED", "DELETED", "BOOKMARK", "ERROR" };
	return names[t];
}

static void add_event_object(struct wstream *ws, struct buf *out, const struct cobj *o)
{
	if (!ws->table) {
		crd_object_text(ws->sv, o->json, o->json_len, out);
		return;
	}
	json_t *obj = json_loadb(o->json, o->json_len, 0, NULL);
	json_t *t = table_new(ws->sv->r, &obj, 1, !ws->columns_sent);
	ws->columns_sent = true;
	char rv[32];
	snprintf(rv, sizeof(rv), "%lld", (long long)o->rv);
	json_object_set_new(json_object_get(t, "metadata"), "resourceVersion", json_string(rv));
	json_dump_buf(t, out);
	json_decref(t);
	json_decref(obj);
}

static void add_bookmark(struct wstream *ws, struct buf *out, int64_t rv)
{
	struct buf av = BUF_INIT;
	api_version_of(ws->sv->r, &av);
	buf_addf(out, "{\"type\":\"BOOKMARK\",\"object\":{\"kind\":\"%s\",\"apiVersion\":\"%s\",\"metadata\":{\"resourceVersion\":\"%lld\"}}}\n",
		 ws->sv->r->kind, buf_cstr(&av), (long long)rv);
	buf_release(&av);
}

static void add_error(struct buf *out, const json_t *status)
{
	buf_adds(out, "{\"type\":\"ERROR\",\"object\":");
	json_dump_buf(status, out);
	buf_adds(out, "}\n");
}

static json_t *expired_status(int64_t rv, int64_t cur)
{
	struct buf m = BUF_INIT;
	buf_addf(&m, "too old resource version: %lld (%lld)", (long long)rv, (long long)cur);
	json_t *st = status_object(E_GONE, buf_cstr(&m), NULL, NULL, NULL);
	buf_release(&m);
	return st;
}

static int on_fill(void *ud, struct buf *out, size_t max)
{
	struct wstream *ws = ud;
	if (ws->ended)
		return -1;
	if (ws->error) {
		add_error(out, ws->error);
		json_decref(ws->error);
		ws->error = NULL;
		ws->ended = true;
		return 1;
	}
	size_t start = out->len;
	struct wevent ev;
	int r = 0;
	while (out->len - start < max && (r = watcher_next(ws->w, &ev)) == 1) {
		if (ev.type == WEV_ERROR) {
			json_t *st = expired_status(ev.rv, wcache_revision(ws->sv->cache));
			add_error(out, st);
			json_decref(st);
			ws->ended = true;
		} else if (ev.type == WEV_BOOKMARK) {
			if (ws->bookmarks)
				add_bookmark(ws, out, ev.rv);
		} else if (ev.obj) {
			buf_addf(out, "{\"type\":\"%s\",\"object\":", type_name(ev.type));
			add_event_object(ws, out, ev.obj);
			buf_adds(out, "}\n");
		}
		wevent_release(&ev);
		if (ws->ended)
			break;
	}
	if (r < 0)
		ws->ended = true;
	int64_t now = mono_ms();
	if (out->len == start && !ws->ended) {
		if (now >= ws->deadline_ms) {
			if (ws->bookmarks)
				add_bookmark(ws, out, watcher_revision(ws->w));
			ws->ended = true;
		} else if (ws->bookmarks && now >= ws->next_bookmark_ms) {
			add_bookmark(ws, out, watcher_revision(ws->w));
			ws->next_bookmark_ms = now + BOOKMARK_EVERY_MS;
		}
	}
	if (out->len == start && !ws->ended && now - atomic_load(&ws->quiet_since_ms) >= IDLE_NEWLINE_MS)
		buf_addch(out, '\n');
	if (out->len > start) {
		atomic_store(&ws->quiet_since_ms, now);
		return 1;
	}
	return ws->ended ? -1 : 0;
}

static void on_done(void *ud)
{
	struct wstream *ws = ud;
	streams_remove(ws);
	watcher_close(ws->w);
	served_unref(ws->sv);
	req_filter_release(&ws->filter);
	json_decref(ws->error);
	free(ws);
}

static void on_notify(void *ud)
{
	struct wstream *ws = ud;
	http_stream_wake(ws->hs);
}

void handle_watch(struct req *q)
{
	struct wstream *ws = xcalloc(1, sizeof(*ws));
	ws->s = q->s;
	ws->sv = q->res;
	if (parse_filter(q, &ws->filter) < 0) {
		free(ws);
		return;
	}
	const char *rvs = http_query(q->http, "resourceVersion");
	long long rv = -1, timeout = 0;
	if (rvs && *rvs && (parse_int64(rvs, &rv) < 0 || rv < 0)) {
		reply_status(q, E_BAD_REQUEST, "resourceVersion must be a non-negative integer");
		req_filter_release(&ws->filter);
		free(ws);
		return;
	}
	const char *ts = http_query(q->http, "timeoutSeconds");
	if (ts && *ts && (parse_int64(ts, &timeout) < 0 || timeout < 0)) {
		reply_status(q, E_BAD_REQUEST, "timeoutSeconds must be a non-negative integer");
		req_filter_release(&ws->filter);
		free(ws);
		return;
	}
	if (timeout == 0)
		timeout = DEFAULT_TIMEOUT_MIN_S + (long long)(random() % DEFAULT_TIMEOUT_MIN_S);
	const char *bm = http_query(q->http, "allowWatchBookmarks");
	ws->bookmarks = bm && (strcmp(bm, "true") == 0 || strcmp(bm, "1") == 0 || strcmp(bm, "True") == 0);
	ws->table = q->table;
	ws->deadline_ms = mono_ms() + timeout * 1000;
	ws->next_bookmark_ms = mono_ms() + BOOKMARK_EVERY_MS;
	atomic_init(&ws->quiet_since_ms, mono_ms());
	const char *name = q->path.name ? q->path.name
					: (ws->filter.fields ? field_selector_exact(ws->filter.fields, "metadata.name") : NULL);
	bool all = strcmp(q->tenant, TENANT_ALL) == 0 || q->res->r->scope == SCOPE_CLUSTER;
	struct wfilter wf = {
		.tenant = all ? NULL : q->tenant, .ns = q->ns, .name = name,
		.labels = ws->filter.labels, .fields = ws->filter.fields,
	};
	served_ref(ws->sv); /* a custom resource's entry outlives a CRD change until the stream ends */
	ws->hs = http_reply_stream(q->reply, 200, ws->table ? "application/json;as=Table;v=v1;g=meta.k8s.io"
							     : "application/json",
				   on_fill, on_done, ws);
	streams_add(ws);
	int rc = wcache_watch(q->res->cache, &wf, rv, WATCH_QUEUE_MAX, on_notify, ws, &ws->w);
	if (rc == E_GONE)
		ws->error = expired_status(rv, wcache_revision(q->res->cache));
	else if (rc < 0)
		ws->error = status_object(E_UNAVAILABLE, "the watch cache is not ready yet; please retry", NULL, NULL, NULL);
	metrics_request(q->s->metrics, "watch", q->res->index, 200, 0);
}

static void *ticker_main(void *arg)
{
	struct apiserver *s = arg;
	int64_t next_health = 0;
	while (!atomic_load(&s->stopping)) {
		int64_t now = mono_ms();
		pthread_mutex_lock(&streams_lock);
		for (struct wstream *ws = streams; ws; ws = ws->next)
			if (now >= ws->deadline_ms || (ws->bookmarks && now >= ws->next_bookmark_ms) ||
			    now - atomic_load(&ws->quiet_since_ms) >= IDLE_NEWLINE_MS)
				http_stream_wake(ws->hs);
		pthread_mutex_unlock(&streams_lock);
		if (now >= next_health) {
			bool ok = etcd_healthy(s->etcd);
			if (ok != atomic_load(&s->etcd_ok))
				log_msg(ok ? LOG_INFO : LOG_WARN, ok ? "etcd reachable" : "etcd unreachable", NULL);
			atomic_store(&s->etcd_ok, ok);
			next_health = now + 1000;
		}
		usleep(250 * 1000);
	}
	return NULL;
}

void watch_ticker_start(struct apiserver *s)
{
	pthread_create(&s->ticker, NULL, ticker_main, s);
}

void watch_ticker_stop(struct apiserver *s)
{
	atomic_store(&s->stopping, true);
	pthread_join(s->ticker, NULL);
}
