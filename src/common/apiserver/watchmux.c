/* Multiplexed watches: POST /ursa/v1/watches carries many watches on one connection.
 *
 * A connection per watch costs the server a libmicrohttpd connection, a TLS session and a
 * suspended stream that every resume walks past (docs/architecture.md, "Threads, not one loop");
 * a process here may not even open 100,000 descriptors. A client holding many watches of one
 * partition (a hollow-node process: one per node; a gateway: one per client watch) sends them
 * in one request instead:
 *
 *   {"timeoutSeconds": 1800,
 *    "watches": [{"id": "n-1", "path": "/api/v1/tenants/all/pods", "fieldSelector":
 *                 "spec.nodeName=n-1", "labelSelector": "...", "resourceVersion": "123",
 *                 "allowWatchBookmarks": true}, ...]}
 *
 * and gets one stream of lines, each a watch event with the watch's id first:
 * {"id":"n-1","type":"ADDED","object":{...}}. Each watch is resolved, scoped and authorized as
 * the same GET ...?watch=1 would be (req_sub_begin); one refused or expired ends with an ERROR
 * line of its own (the Status a plain watch would get) and the others go on. The stream ends at
 * its timeout or when every watch has ended. A malformed body is a 400 and starts nothing.
 *
 * The watches' events are drained in turn from a ready list (a watch is queued once, whatever
 * number of events it has), so one busy watch does not starve the others of the stream. */
#include "internal.h"
#include "ursa/jsonutil.h"
#include "ursa/timeutil.h"
#include "ursa/xalloc.h"
#include <stdlib.h>
#include <string.h>

#define WM_MAX_WATCHES 10000
#define WM_MAX_ID 253

struct msub {
	struct wmux *m;
	char *id;
	struct served *sv;
	struct watcher *w;
	struct req_filter filter;
	bool bookmarks, ended, queued;
	json_t *error;           /* to send as this watch's ERROR line, then end it */
	struct msub *next_ready;
};

struct wmux {
	struct wtick tick;
	pthread_mutex_t mu;      /* the ready list and each sub's `queued` */
	struct msub *ready_head, *ready_tail;
	struct msub *subs;
	size_t nsubs, nlive;
	bool ended;              /* its timeout passed (the fill thread's) */
};

void wm_specs_free(struct wm_spec *v, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(v[i].id);
		free(v[i].path);
		free(v[i].label_selector);
		free(v[i].field_selector);
	}
	free(v);
}

/* A member that must be a string when present: its copy, or NULL; -1 if of another type. */
static int opt_string(const json_t *o, const char *name, size_t max, char **ret)
{
	const json_t *v = json_object_get(o, name);
	*ret = NULL;
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_string(v) || json_string_length(v) > max)
		return -1;
	*ret = xstrdup(json_string_value(v));
	return 0;
}

int wm_parse(const char *body, size_t len, struct wm_spec **ret, size_t *ret_n, long long *ret_timeout,
	     struct buf *err)
{
	*ret = NULL;
	*ret_n = 0;
	*ret_timeout = 0;
	json_error_t je;
	json_t *doc = json_loadb(body ? body : "", len, JSON_REJECT_DUPLICATES, &je);
	if (!doc) {
		buf_addf(err, "the request body is not valid JSON: %s", je.text);
		return -1;
	}
	int rc = -1;
	struct wm_spec *v = NULL;
	size_t n = 0;
	const json_t *ws = json_object_get(doc, "watches");
	const json_t *to = json_object_get(doc, "timeoutSeconds");
	if (!json_is_object(doc) || !json_is_array(ws)) {
		buf_adds(err, "the request body must be an object with a \"watches\" array");
		goto out;
	}
	if (to && (!json_is_integer(to) || json_integer_value(to) < 0)) {
		buf_adds(err, "timeoutSeconds must be a non-negative integer");
		goto out;
	}
	*ret_timeout = to ? (long long)json_integer_value(to) : 0;
	size_t count = json_array_size(ws);
	if (count == 0 || count > WM_MAX_WATCHES) {
		buf_addf(err, "watches must hold 1 to %d watches, not %zu", WM_MAX_WATCHES, count);
		goto out;
	}
	v = xcalloc(count, sizeof(*v));
	for (n = 0; n < count; n++) {
		const json_t *w = json_array_get(ws, n);
		struct wm_spec *s = &v[n];
		char *rvs = NULL;
		const json_t *bm = json_is_object(w) ? json_object_get(w, "allowWatchBookmarks") : NULL;
		if (!json_is_object(w) || opt_string(w, "id", WM_MAX_ID, &s->id) < 0 ||
		    opt_string(w, "path", 4096, &s->path) < 0 || opt_string(w, "labelSelector", 4096, &s->label_selector) < 0 ||
		    opt_string(w, "fieldSelector", 4096, &s->field_selector) < 0 ||
		    opt_string(w, "resourceVersion", 32, &rvs) < 0 || (bm && !json_is_boolean(bm))) {
			buf_addf(err, "watches[%zu]: id, path, selectors and resourceVersion are strings (id up to %d bytes), allowWatchBookmarks a boolean",
				 n, WM_MAX_ID);
			free(rvs);
			n++;
			goto out;
		}
		s->bookmarks = bm && json_is_true(bm);
		s->rv = -1;
		long long rv;
		bool bad_rv = rvs && *rvs && (parse_int64(rvs, &rv) < 0 || rv < 0);
		if (rvs && *rvs && !bad_rv)
			s->rv = rv;
		free(rvs);
		if (!s->id || !*s->id || !s->path || s->path[0] != '/' || strchr(s->path, '?') || bad_rv) {
			buf_addf(err, "watches[%zu]: %s", n,
				 !s->id || !*s->id ? "id is required"
				 : bad_rv	   ? "resourceVersion must be a non-negative integer"
						   : "path must be an absolute path without a query");
			n++;
			goto out;
		}
	}
	rc = 0;
out:
	json_decref(doc);
	if (rc < 0) {
		wm_specs_free(v, n);
		return -1;
	}
	*ret = v;
	*ret_n = n;
	return 0;
}

/* Queues s on its mux's ready list (once) and wakes the stream. From any thread. */
static void sub_ready(struct msub *s)
{
	struct wmux *m = s->m;
	pthread_mutex_lock(&m->mu);
	bool wake = !s->queued;
	if (wake) {
		s->queued = true;
		s->next_ready = NULL;
		if (m->ready_tail)
			m->ready_tail->next_ready = s;
		else
			m->ready_head = s;
		m->ready_tail = s;
	}
	pthread_mutex_unlock(&m->mu);
	if (wake)
		http_stream_wake(m->tick.hs);
}

static struct msub *pop_ready(struct wmux *m)
{
	pthread_mutex_lock(&m->mu);
	struct msub *s = m->ready_head;
	if (s) {
		m->ready_head = s->next_ready;
		if (!m->ready_head)
			m->ready_tail = NULL;
		s->queued = false;
	}
	pthread_mutex_unlock(&m->mu);
	return s;
}

static void on_sub_notify(void *ud)
{
	sub_ready(ud);
}

static void sub_end(struct msub *s)
{
	if (s->ended)
		return;
	s->ended = true;
	s->m->nlive--;
}

/* Appends s's pending events to out, up to about max bytes; true when it has more. */
static bool drain_sub(struct msub *s, struct buf *out, size_t start, size_t max)
{
	if (s->ended)
		return false;
	if (s->error) {
		watch_error_line(s->id, s->error, out);
		sub_end(s);
		return false;
	}
	struct wevent ev;
	int r;
	while ((r = watcher_next(s->w, &ev)) == 1) {
		if (ev.type == WEV_ERROR) {
			json_t *st = watch_expired_status(rv_show(ev.rv), rv_show(wcache_revision(s->sv->cache)));
			watch_error_line(s->id, st, out);
			json_decref(st);
			sub_end(s);
		} else if (ev.type == WEV_BOOKMARK) {
			if (s->bookmarks)
				watch_bookmark_line(s->sv, s->id, ev.rv, out);
		} else if (ev.obj) {
			watch_event_line(s->sv, s->id, ev.type, ev.obj, out);
		}
		wevent_release(&ev);
		if (s->ended)
			return false;
		if (out->len - start >= max)
			return true;
	}
	if (r < 0)
		sub_end(s);
	return false;
}

static int on_fill(void *ud, struct buf *out, size_t max)
{
	struct wmux *m = ud;
	if (m->ended)
		return -1;
	size_t start = out->len;
	struct msub *s;
	while (out->len - start < max && (s = pop_ready(m)))
		if (drain_sub(s, out, start, max))
			sub_ready(s); /* more to come: behind the others */
	int64_t now = mono_ms();
	bool ended = m->nlive == 0;
	if (!ended && out->len == start) {
		bool deadline = now >= m->tick.deadline_ms;
		if (deadline || (m->tick.bookmarks && now >= m->tick.next_bookmark_ms)) {
			for (size_t i = 0; i < m->nsubs; i++)
				if (!m->subs[i].ended && m->subs[i].bookmarks)
					watch_bookmark_line(m->subs[i].sv, m->subs[i].id, watcher_revision(m->subs[i].w), out);
			m->tick.next_bookmark_ms = now + BOOKMARK_EVERY_MS;
		}
		ended = deadline;
	}
	m->ended = ended;
	return wtick_filled(&m->tick, out, start, ended, now);
}

static void on_done(void *ud)
{
	struct wmux *m = ud;
	wtick_remove(&m->tick);
	for (size_t i = 0; i < m->nsubs; i++) {
		struct msub *s = &m->subs[i];
		if (s->w)
			watcher_close(s->w);
		served_unref(s->sv);
		req_filter_release(&s->filter);
		json_decref(s->error);
		free(s->id);
	}
	free(m->subs);
	pthread_mutex_destroy(&m->mu);
	free(m);
}

/* Resolves and opens one watch as the caller q; a refusal leaves its Status in s->error. */
static void sub_open(struct req *q, const struct wm_spec *spec, struct msub *s)
{
	struct req sq = { .s = q->s, .http = q->http, .id = q->id, .capture = &s->error };
	if (req_sub_begin(&sq, spec->path, "watch") == 0 &&
	    parse_filter_text(&sq, spec->label_selector, spec->field_selector, &s->filter) == 0) {
		s->sv = served_ref(sq.res);
		int rc = watch_open(&sq, &s->filter, spec->rv, on_sub_notify, s, &s->w);
		if (rc < 0)
			s->error = watch_open_status(rc, spec->rv, sq.res);
	}
	if (!s->error && !s->w) /* cannot happen: every refusal replies */
		s->error = status_object(E_INTERNAL, "the watch could not be opened", NULL, NULL, NULL);
	req_sub_release(&sq);
}

void handle_watch_mux(struct req *q)
{
	if (strcmp(http_method(q->http), "POST") != 0) {
		reply_status(q, E_METHOD, "the server does not allow this method on the requested resource");
		return;
	}
	size_t len;
	const char *body = http_body(q->http, &len);
	struct wm_spec *specs;
	size_t n;
	long long timeout;
	struct buf err = BUF_INIT;
	if (wm_parse(body, len, &specs, &n, &timeout, &err) < 0) {
		reply_status(q, E_BAD_REQUEST, "%s", buf_cstr(&err));
		buf_release(&err);
		return;
	}
	struct wmux *m = xcalloc(1, sizeof(*m));
	pthread_mutex_init(&m->mu, NULL);
	m->subs = xcalloc(n, sizeof(*m->subs));
	m->nsubs = m->nlive = n;
	bool bookmarks = false;
	for (size_t i = 0; i < n; i++) {
		m->subs[i].m = m;
		m->subs[i].id = specs[i].id;
		specs[i].id = NULL;
		m->subs[i].bookmarks = specs[i].bookmarks;
		bookmarks |= specs[i].bookmarks;
	}
	wtick_init(&m->tick, watch_timeout_s(timeout), bookmarks);
	m->tick.hs = http_reply_stream(q->reply, 200, "application/json", on_fill, on_done, m);
	wtick_add(&m->tick);
	for (size_t i = 0; i < n; i++) {
		sub_open(q, &specs[i], &m->subs[i]);
		if (m->subs[i].error)
			sub_ready(&m->subs[i]);
	}
	wm_specs_free(specs, n);
}
