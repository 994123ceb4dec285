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

struct wstream {
	struct served *sv;
	struct watcher *w;
	struct wtick tick;
	struct req_filter filter;
	bool table, columns_sent, ended;
	json_t *error;            /* a Status to send as an ERROR event, then end */
	struct apiserver *s;
	char *counted;            /* the tenant whose watch limit counts it (fairshare.c), or NULL */
	char *tenant;             /* the tenant watched (tick.tenant), or NULL */
};

static pthread_mutex_t ticks_lock = PTHREAD_MUTEX_INITIALIZER;
static struct wtick *ticks;

void wtick_add(struct wtick *t)
{
	pthread_mutex_lock(&ticks_lock);
	t->prev = NULL;
	t->next = ticks;
	if (ticks)
		ticks->prev = t;
	ticks = t;
	pthread_mutex_unlock(&ticks_lock);
}

void wtick_remove(struct wtick *t)
{
	pthread_mutex_lock(&ticks_lock);
	if (t->prev)
		t->prev->next = t->next;
	else
		ticks = t->next;
	if (t->next)
		t->next->prev = t->prev;
	pthread_mutex_unlock(&ticks_lock);
}

void wtick_init(struct wtick *t, int64_t timeout_s, bool bookmarks)
{
	int64_t now = mono_ms();
	t->deadline_ms = now + timeout_s * 1000;
	t->next_bookmark_ms = now + BOOKMARK_EVERY_MS;
	t->bookmarks = bookmarks;
	t->s = NULL;
	t->tenant = NULL;
	atomic_init(&t->end_rev, 0);
	atomic_init(&t->quiet_since_ms, now);
}

void watch_end_tenant(struct apiserver *s, const char *tenant, int64_t rev)
{
	pthread_mutex_lock(&ticks_lock);
	for (struct wtick *t = ticks; t; t = t->next)
		if (t->s == s && t->tenant && strcmp(t->tenant, tenant) == 0) {
			atomic_store(&t->end_rev, rev > 0 ? rev : 1);
			http_stream_wake(t->hs);
		}
	pthread_mutex_unlock(&ticks_lock);
}

int64_t watch_timeout_s(long long asked)
{
	return asked > 0 ? asked : DEFAULT_TIMEOUT_MIN_S + (long long)(random() % DEFAULT_TIMEOUT_MIN_S);
}

static const char *type_name(enum wev_type t)
{
	static const char *const names[] = { "ADDED", "MODIFIED", "DELETED", "BOOKMARK", "ERROR" };
	return names[t];
}

/* `"id":<id>,` for a multiplexed watch's lines; nothing for a plain watch's. */
static void add_id(struct buf *out, const char *id)
{
	if (!id)
		return;
	json_t *s = json_string(id);
	buf_adds(out, "\"id\":");
	json_dump_buf(s, out);
	buf_addch(out, ',');
	json_decref(s);
}

void watch_event_line(const struct served *sv, const char *id, enum wev_type type, const struct cobj *o,
		      struct buf *out)
{
	buf_addch(out, '{');
	add_id(out, id);
	buf_addf(out, "\"type\":\"%s\",\"object\":", type_name(type));
	crd_object_text(sv, o->json, o->json_len, out);
	buf_adds(out, "}\n");
}

static void add_table_event(struct wstream *ws, enum wev_type type, struct buf *out, const struct cobj *o)
{
	buf_addf(out, "{\"type\":\"%s\",\"object\":", type_name(type));
	json_t *obj = json_loadb(o->json, o->json_len, 0, NULL);
	json_t *t = table_new(ws->sv->r, &obj, 1, !ws->columns_sent);
	ws->columns_sent = true;
	char rv[32];
	snprintf(rv, sizeof(rv), "%lld", (long long)rv_show(o->rv));
	json_object_set_new(json_object_get(t, "metadata"), "resourceVersion", json_string(rv));
	json_dump_buf(t, out);
	json_decref(t);
	json_decref(obj);
	buf_adds(out, "}\n");
}

void watch_bookmark_line(const struct served *sv, const char *id, int64_t rv, struct buf *out)
{
	struct buf av = BUF_INIT;
	api_version_of(sv->r, &av);
	buf_addch(out, '{');
	add_id(out, id);
	buf_addf(out, "\"type\":\"BOOKMARK\",\"object\":{\"kind\":\"%s\",\"apiVersion\":\"%s\",\"metadata\":{\"resourceVersion\":\"%lld\"}}}\n",
		 sv->r->kind, buf_cstr(&av), (long long)rv_show(rv));
	buf_release(&av);
}

void watch_error_line(const char *id, const json_t *status, struct buf *out)
{
	buf_addch(out, '{');
	add_id(out, id);
	buf_adds(out, "\"type\":\"ERROR\",\"object\":");
	json_dump_buf(status, out);
	buf_adds(out, "}\n");
}

json_t *watch_expired_status(int64_t rv, int64_t cur)
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
		watch_error_line(NULL, ws->error, out);
		json_decref(ws->error);
		ws->error = NULL;
		ws->ended = true;
		return 1;
	}
	size_t start = out->len;
	struct wevent ev;
	int r = 0;
	int64_t end_rev = atomic_load(&ws->tick.end_rev);
	bool past = false; /* an event after end_rev: the stream ends before it */
	while (out->len - start < max && (r = watcher_next(ws->w, &ev)) == 1) {
		if (end_rev && ev.rv > end_rev) {
			wevent_release(&ev);
			past = true;
			break;
		}
		if (ev.type == WEV_ERROR) {
			json_t *st = watch_expired_status(rv_show(ev.rv), rv_show(wcache_revision(ws->sv->cache)));
			watch_error_line(NULL, st, out);
			json_decref(st);
			ws->ended = true;
		} else if (ev.type == WEV_BOOKMARK) {
			if (ws->tick.bookmarks)
				watch_bookmark_line(ws->sv, NULL, ev.rv, out);
		} else if (ev.obj && ws->table) {
			add_table_event(ws, ev.type, out, ev.obj);
		} else if (ev.obj) {
			watch_event_line(ws->sv, NULL, ev.type, ev.obj, out);
		}
		wevent_release(&ev);
		if (ws->ended)
			break;
	}
	if (r < 0)
		ws->ended = true;
	int64_t now = mono_ms();
	if (!ws->ended && (past || (end_rev && out->len == start))) { /* its tenant left (move.c) */
		if (ws->tick.bookmarks)
			watch_bookmark_line(ws->sv, NULL, end_rev, out);
		ws->ended = true;
	}
	if (out->len == start && !ws->ended) {
		if (now >= ws->tick.deadline_ms) {
			if (ws->tick.bookmarks)
				watch_bookmark_line(ws->sv, NULL, watcher_revision(ws->w), out);
			ws->ended = true;
		} else if (ws->tick.bookmarks && now >= ws->tick.next_bookmark_ms) {
			watch_bookmark_line(ws->sv, NULL, watcher_revision(ws->w), out);
			ws->tick.next_bookmark_ms = now + BOOKMARK_EVERY_MS;
		}
	}
	return wtick_filled(&ws->tick, out, start, ws->ended, now);
}

int wtick_filled(struct wtick *t, struct buf *out, size_t start, bool ended, int64_t now)
{
	if (out->len == start && !ended && now - atomic_load(&t->quiet_since_ms) >= IDLE_NEWLINE_MS)
		buf_addch(out, '\n');
	if (out->len > start) {
		atomic_store(&t->quiet_since_ms, now);
		return 1;
	}
	return ended ? -1 : 0;
}

static void on_done(void *ud)
{
	struct wstream *ws = ud;
	wtick_remove(&ws->tick);
	watcher_close(ws->w);
	served_unref(ws->sv);
	req_filter_release(&ws->filter);
	json_decref(ws->error);
	if (ws->counted)
		fairshare_watch_close(ws->s, ws->counted);
	free(ws->counted);
	free(ws->tenant);
	free(ws);
}

static void on_notify(void *ud)
{
	struct wstream *ws = ud;
	http_stream_wake(ws->tick.hs);
}

int watch_open(struct req *q, const struct req_filter *f, long long rv, void (*notify)(void *ud), void *ud,
	       struct watcher **ret_w)
{
	const char *name = q->path.name ? q->path.name : (f->fields ? field_selector_exact(f->fields, "metadata.name") : NULL);
	bool all = strcmp(q->tenant, TENANT_ALL) == 0 || q->res->r->scope == SCOPE_CLUSTER;
	struct wfilter wf = {
		.tenant = all ? NULL : q->tenant, .ns = q->ns, .name = name,
		.labels = f->labels, .fields = f->fields,
	};
	int64_t at;
	if (req_resolve_rv(q, rv, &at) == RV_ELSEWHERE)
		return E_GONE; /* another partition's, older than the tenant's move here */
	return wcache_watch(q->res->cache, &wf, at, WATCH_QUEUE_MAX, notify, ud, ret_w);
}

json_t *watch_open_status(int rc, long long rv, const struct served *sv)
{
	if (rc == E_GONE)
		return watch_expired_status(rv, rv_show(wcache_revision(sv->cache)));
	return status_object(E_UNAVAILABLE, "the watch cache is not ready yet; please retry", NULL, NULL, NULL);
}

void handle_watch(struct req *q)
{
	struct wstream *ws = xcalloc(1, sizeof(*ws));
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
	if (fairshare_watch_open(q, &ws->counted) < 0) {
		reply_status(q, E_TOO_MANY, "tenant %s holds as many watches as this partition allows it (%u); please retry",
			     q->id.tenant, q->s->o.max_watches_per_tenant);
		req_filter_release(&ws->filter);
		free(ws);
		return;
	}
	ws->s = q->s;
	const char *bm = http_query(q->http, "allowWatchBookmarks");
	wtick_init(&ws->tick, watch_timeout_s(timeout),
		   bm && (strcmp(bm, "true") == 0 || strcmp(bm, "1") == 0 || strcmp(bm, "True") == 0));
	ws->table = q->table;
	if (q->tenant && *q->tenant && strcmp(q->tenant, TENANT_ALL) != 0 && q->res->r->scope != SCOPE_CLUSTER) {
		ws->tenant = xstrdup(q->tenant);
		ws->tick.s = q->s;
		ws->tick.tenant = ws->tenant;
	}
	served_ref(ws->sv); /* a custom resource's entry outlives a CRD change until the stream ends */
	ws->tick.hs = http_reply_stream(q->reply, 200, ws->table ? "application/json;as=Table;v=v1;g=meta.k8s.io"
								  : "application/json",
					on_fill, on_done, ws);
	wtick_add(&ws->tick);
	int rc = watch_open(q, &ws->filter, rv, on_notify, ws, &ws->w);
	if (rc < 0)
		ws->error = watch_open_status(rc, rv, q->res);
	metrics_request(q->s->metrics, "watch", q->res->index, 200, 0);
}

/* Every served kind's cache more than PROGRESS_LAG_REVS behind etcd's revision writes its
 * progress marker, so that quiet kinds' watchers get bookmarks of a recent revision too. The
 * markers move etcd's revision by a few, which stays under the lag: an idle partition writes
 * nothing. Custom resources (not in the table; their caches load no history) are left out. */
static void keep_progress(struct apiserver *s)
{
	struct etcd_range_result rr;
	if (etcd_range(s->etcd, s->o.etcd_prefix, NULL, 0, 1, true, &rr) != 0)
		return;
	int64_t cur = rr.revision;
	etcd_range_result_release(&rr);
	for (size_t i = 0; i < s->nres && !atomic_load(&s->stopping); i++) {
		struct wcache *c = s->res[i].cache;
		if (c && cur - wcache_revision(c) > PROGRESS_LAG_REVS)
			wcache_nudge(c, cur);
	}
}

static void *ticker_main(void *arg)
{
	struct apiserver *s = arg;
	int64_t next_health = 0, next_progress = mono_ms() + PROGRESS_EVERY_MS;
	while (!atomic_load(&s->stopping)) {
		int64_t now = mono_ms();
		pthread_mutex_lock(&ticks_lock);
		for (struct wtick *t = ticks; t; t = t->next)
			if (now >= t->deadline_ms || (t->bookmarks && now >= t->next_bookmark_ms) ||
			    now - atomic_load(&t->quiet_since_ms) >= IDLE_NEWLINE_MS)
				http_stream_wake(t->hs);
		pthread_mutex_unlock(&ticks_lock);
		if (now >= next_health) {
			bool ok = etcd_healthy(s->etcd);
			if (ok != atomic_load(&s->etcd_ok))
				log_msg(ok ? LOG_INFO : LOG_WARN, ok ? "etcd reachable" : "etcd unreachable", NULL);
			atomic_store(&s->etcd_ok, ok);
			next_health = now + 1000;
		}
		if (now >= next_progress) {
			if (atomic_load(&s->etcd_ok))
				keep_progress(s);
			next_progress = mono_ms() + PROGRESS_EVERY_MS;
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
