/* Streams (watch, log -f, merged watches) from partitions to clients. One loop thread drives
 * every upstream transfer with libcurl's multi socket interface over epoll; the client side is
 * the HTTP server's suspended-connection stream (http_reply_stream / http_stream_wake).
 *
 * Ownership. A struct stream is counted (refs): the handler that creates it holds one until it
 * returns, the loop holds one until every leg (upstream transfer) of it is finished, the client
 * side holds one from http_reply_stream until done runs, and a pending command in the loop's
 * queue holds one. Only the loop thread touches CURL handles, a leg's parse state and the
 * merge state; everything the HTTP threads read (data, status, ended, hs) is under s->lock.
 * Other threads talk to the loop through a locked command queue and an eventfd.
 *
 * Following a moving tenant (upstream_tenant_watch). A single-partition watch of one tenant
 * carries the registry and the tenant. When its partition ends it (on_leg_done) while the client
 * is still there, and the watch did not reach its own timeoutSeconds, did not end in the middle of
 * a line or with an ERROR event, the stream waits (on the loop's wait list, no thread) for the
 * tenant's placement to change, looking every MOVE_BRIDGE_POLL_MS for MOVE_BRIDGE_WAIT_MS
 * (poll_waits). A record naming another partition with moved.from the one that ended continues
 * the watch: the same leg is started again at the new partition with resourceVersion =
 * moved.to_rev (move_watch_path), and its bytes go on in the same response. The source ends its
 * watches only after the switch, having sent every event up to moved.from_rev, and the target at
 * to_rev holds exactly that state: nothing is missed or repeated. A continued leg that is
 * refused ends the stream with an ERROR event carrying the refusal's Status. Otherwise the client's
 * stream ends as before: at the first look when the tenant has no move in progress (no record
 * under <prefix>/moves/, registry_tenant_moving), else after MOVE_BRIDGE_WAIT_MS. Merged watches across partitions (admins' tenants, nodes) are not
 * followed: they end with any partition's end, and their clients re-watch. */
#define _GNU_SOURCE /* memrchr */
#include <curl/curl.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>
#include "gw.h"
#include "ursa/errors.h"
#include "ursa/http.h"
#include "ursa/jsonutil.h"
#include "ursa/log.h"
#include "ursa/timeutil.h"
#include "ursa/xalloc.h"

#define STREAM_BUFFER_MAX (4u << 20) /* client-bound bytes held per stream before pausing */
#define ERROR_BODY_MAX (1u << 20)    /* non-200 answer relayed whole */
#define HEADER_WAIT_MS 10000         /* partition's response headers, then 504 (default) */
#define FD_RESERVE 128               /* descriptors kept for etcd, requests, logs */
#define MAX_EVENTS 256
#define LEG_BUFFER 4096
#define SWEEP_MS 5000                /* idle clients are looked at this often (default) */

enum { CMD_START = 1, CMD_CANCEL = 2, CMD_UNPAUSE = 4 };

struct stream;

/* One upstream transfer. */
struct leg {
	struct stream *s;
	struct partition *p;       /* ref */
	char *path;
	size_t ep_first, ep_tries; /* endpoint rotation on refused connections */
	bool continued;            /* a tenant watch's leg moved to the tenant's new partition */
	/* loop thread only */
	CURL *easy;
	struct curl_slist *hdrs;
	char *url;
	struct buf line;           /* merged: partial event line */
	bool paused;
	/* under s->lock */
	int status;
	char *content_type;
	bool headers_done, ended;
	int err;                   /* E_* when the transfer failed before headers */
	struct buf errbody;        /* non-200 answer */
};

struct stream {
	atomic_int refs;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	/* set before the loop sees it, then read-only */
	bool merged;
	size_t nlegs;
	struct leg *legs;
	struct upstream_req rq;
	char *auth, *identity, *accept, *xff;
	long fds;                  /* descriptors charged to the budget */
	/* a tenant's watch that follows the tenant (upstream_tenant_watch), else reg NULL */
	struct registry *reg;
	char *tenant;
	int64_t started_ms, timeout_s; /* when it began; its timeoutSeconds (0: none) */
	int64_t path_ms;               /* when the leg's path (its timeoutSeconds) was last written */
	/* loop thread only: waiting for the tenant's placement to change (on L.waiting) */
	bool waiting;
	int64_t wait_until_ms, wait_next_ms;
	struct stream *next_wait;
	/* loop thread only */
	struct merge_state *m;
	size_t legs_running;
	bool started, finished;
	struct stream *prev, *next;   /* loop's list of started streams */
	/* under s->lock */
	struct buf data;           /* client-bound */
	bool ended;                /* no more data will be added */
	bool paused;               /* some leg is paused for back-pressure */
	bool client_gone;
	bool midline;              /* the last byte passed on was not a newline */
	bool json;                 /* a JSON stream: whitespace between events is harmless */
	char head[24];             /* tenant watches: the first bytes of the last line with content */
	size_t head_len;
	struct http_stream *hs;    /* NULL until replied and after done */
	/* under L.lock */
	unsigned cmd;
	bool queued;
	struct stream *next_cmd;
};

static struct {
	pthread_mutex_t lock;
	bool running, stopping;
	struct stream *q_head, *q_tail;
	/* loop thread only */
	pthread_t thread;
	int ep, evfd;
	CURLM *multi;
	CURLSH *share;
	int64_t timer_at_ms;       /* -1: none */
	struct stream *active;
	struct stream *waiting;    /* tenant watches waiting for a placement change (next_wait) */
} L = { .lock = PTHREAD_MUTEX_INITIALIZER, .ep = -1, .evfd = -1 };

static atomic_long streams_open, legs_open, fds_used, fd_budget;
static atomic_long header_wait_ms = HEADER_WAIT_MS, sweep_ms = SWEEP_MS;

void streams_tune(long header_wait, long sweep)
{
	if (header_wait > 0)
		atomic_store(&header_wait_ms, header_wait);
	if (sweep > 0)
		atomic_store(&sweep_ms, sweep);
}

long upstream_streams_open(void) { return atomic_load(&streams_open); }
long upstream_legs_open(void) { return atomic_load(&legs_open); }
long upstream_stream_fd_budget(void) { return atomic_load(&fd_budget); }

/* --- the stream object ---------------------------------------------------------------------- */
static char *dup_or_null(const char *s)
{
	return s ? xstrdup(s) : NULL;
}

static struct stream *stream_new(struct partition **ps, char **paths, size_t n, const struct upstream_req *rq)
{
	struct stream *s = xcalloc(1, sizeof(*s));
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&s->cond, &ca);
	pthread_condattr_destroy(&ca);
	pthread_mutex_init(&s->lock, NULL);
	atomic_init(&s->refs, 2); /* handler + loop */
	s->auth = dup_or_null(rq->authorization);
	s->identity = dup_or_null(rq->identity);
	s->accept = dup_or_null(rq->accept);
	s->xff = dup_or_null(rq->forwarded_for);
	s->rq = (struct upstream_req){ .method = "GET", .authorization = s->auth, .identity = s->identity, .accept = s->accept,
				       .forwarded_for = s->xff };
	s->nlegs = n;
	s->legs = xcalloc(n, sizeof(*s->legs));
	for (size_t i = 0; i < n; i++) {
		struct leg *l = &s->legs[i];
		l->s = s;
		l->p = ps[i];
		atomic_fetch_add(&ps[i]->refs, 1);
		l->path = xstrdup(paths[i]);
		l->ep_first = (size_t)atomic_load(&ps[i]->next_ep) % ps[i]->nendpoints;
	}
	atomic_fetch_add(&streams_open, 1);
	return s;
}

static void stream_unref(struct stream *s)
{
	if (atomic_fetch_sub(&s->refs, 1) != 1)
		return;
	for (size_t i = 0; i < s->nlegs; i++) {
		struct leg *l = &s->legs[i];
		partition_unref(l->p);
		free(l->path);
		free(l->content_type);
		buf_release(&l->line);
		buf_release(&l->errbody);
	}
	free(s->legs);
	if (s->m) {
		merge_state_release(s->m);
		free(s->m);
	}
	buf_release(&s->data);
	free(s->auth);
	free(s->identity);
	free(s->accept);
	free(s->xff);
	free(s->tenant);
	pthread_mutex_destroy(&s->lock);
	pthread_cond_destroy(&s->cond);
	atomic_fetch_sub(&fds_used, s->fds);
	atomic_fetch_sub(&streams_open, 1);
	free(s);
}

/* Hands a command to the loop. False when the loop is not running (nothing queued). */
static bool post(struct stream *s, unsigned cmd)
{
	pthread_mutex_lock(&L.lock);
	bool ok = L.running && !L.stopping;
	if (ok) {
		s->cmd |= cmd;
		if (!s->queued) {
			s->queued = true;
			atomic_fetch_add(&s->refs, 1);
			s->next_cmd = NULL;
			if (L.q_tail)
				L.q_tail->next_cmd = s;
			else
				L.q_head = s;
			L.q_tail = s;
		}
	}
	pthread_mutex_unlock(&L.lock);
	if (ok) {
		uint64_t one = 1;
		ssize_t w = write(L.evfd, &one, sizeof(one));
		(void)w; /* EAGAIN: the counter is already non-zero, the loop wakes anyway */
	}
	return ok;
}

/* --- loop side: curl callbacks -------------------------------------------------------------- */
static void wake_client_locked(struct stream *s)
{
	pthread_cond_broadcast(&s->cond);
	if (s->hs)
		http_stream_wake(s->hs);
}

static size_t on_header(char *data, size_t size, size_t n, void *ud)
{
	struct leg *l = ud;
	struct stream *s = l->s;
	size_t len = size * n;
	pthread_mutex_lock(&s->lock);
	if (len >= 12 && strncmp(data, "HTTP/", 5) == 0) {
		const char *sp = memchr(data, ' ', len);
		long long code = 0;
		if (sp && (size_t)(sp - data) + 4 <= len) {
			char num[4] = { sp[1], sp[2], sp[3], 0 };
			if (parse_int64(num, &code) != 0)
				code = 0;
		}
		l->status = (int)code;
	} else if (len >= 13 && strncasecmp(data, "content-type:", 13) == 0) {
		size_t a = 13, b = len;
		while (a < b && (data[a] == ' ' || data[a] == '\t'))
			a++;
		while (b > a && (data[b - 1] == '\r' || data[b - 1] == '\n' || data[b - 1] == ' '))
			b--;
		free(l->content_type);
		l->content_type = xstrndup(data + a, b - a);
	} else if (len <= 2 && (data[0] == '\r' || data[0] == '\n') && l->status >= 200) {
		l->headers_done = true;
		pthread_cond_broadcast(&s->cond);
		if (l->ep_tries) /* an endpoint after a refused one answered: try it first next time */
			atomic_store(&l->p->next_ep, (int)((l->ep_first + l->ep_tries) % l->p->nendpoints));
	}
	pthread_mutex_unlock(&s->lock);
	return len;
}

static bool blank(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

/* Under s->lock, before data is added: keeps the first bytes of the last line with content
 * (s->head), so that a watch ending with an ERROR event is not continued. Looks at the chunk's
 * last line only (memrchr), not at every byte. */
static void note_head(struct stream *s, const char *data, size_t len)
{
	const char *end = data + len;
	while (end > data && blank(end[-1]))
		end--;
	if (end == data)
		return; /* whitespace only: the last line with content is still the one held */
	const char *nl = memrchr(data, '\n', (size_t)(end - data));
	const char *p = nl ? nl + 1 : data;
	if (nl || !s->midline) {
		s->head_len = 0; /* a new line */
		while (p < end && blank(*p))
			p++;
	}
	while (p < end && s->head_len < sizeof(s->head))
		s->head[s->head_len++] = *p++;
}

static size_t on_body(char *data, size_t size, size_t n, void *ud)
{
	struct leg *l = ud;
	struct stream *s = l->s;
	size_t len = size * n;
	pthread_mutex_lock(&s->lock);
	if (l->status != 200) {
		if (l->errbody.len + len <= ERROR_BODY_MAX)
			buf_add(&l->errbody, data, len);
		pthread_mutex_unlock(&s->lock);
		return len;
	}
	if (s->ended || s->client_gone) {
		pthread_mutex_unlock(&s->lock);
		return 0; /* aborts the transfer: the loop finishes it */
	}
	if (s->data.len >= STREAM_BUFFER_MAX) {
		l->paused = true;
		s->paused = true;
		pthread_mutex_unlock(&s->lock);
		return CURL_WRITEFUNC_PAUSE;
	}
	if (!s->merged) {
		if (s->reg)
			note_head(s, data, len);
		buf_add(&s->data, data, len);
		s->midline = len && data[len - 1] != '\n';
		wake_client_locked(s);
		pthread_mutex_unlock(&s->lock);
		return len;
	}
	pthread_mutex_unlock(&s->lock);
	/* Parsing runs outside the lock: the merge state and line buffer are the loop's. */
	struct buf out = BUF_INIT;
	int r = merge_lines(s->m, l->p->id, &l->line, data, len, &out);
	pthread_mutex_lock(&s->lock);
	buf_add(&s->data, out.ptr ? out.ptr : "", out.len);
	if (r == MERGE_FINAL)
		s->ended = true;
	wake_client_locked(s);
	pthread_mutex_unlock(&s->lock);
	buf_release(&out);
	return r == MERGE_FINAL ? 0 : len;
}

static int on_socket(CURL *e, curl_socket_t fd, int what, void *ud, void *sockp)
{
	struct epoll_event ev = { .data.fd = fd };
	if (what == CURL_POLL_REMOVE) {
		epoll_ctl(L.ep, EPOLL_CTL_DEL, fd, NULL);
		curl_multi_assign(L.multi, fd, NULL);
		return 0;
	}
	ev.events = (what & CURL_POLL_IN ? EPOLLIN : 0) | (what & CURL_POLL_OUT ? EPOLLOUT : 0);
	/* sockp marks sockets already in the epoll set; either way a failed guess is retried the
	 * other way round (a descriptor number reused after a close). */
	if (sockp) {
		if (epoll_ctl(L.ep, EPOLL_CTL_MOD, fd, &ev) < 0 && errno == ENOENT)
			epoll_ctl(L.ep, EPOLL_CTL_ADD, fd, &ev);
	} else {
		if (epoll_ctl(L.ep, EPOLL_CTL_ADD, fd, &ev) < 0 && errno == EEXIST)
			epoll_ctl(L.ep, EPOLL_CTL_MOD, fd, &ev);
		curl_multi_assign(L.multi, fd, (void *)1);
	}
	return 0;
}

static int on_timer(CURLM *m, long timeout_ms, void *ud)
{
	L.timer_at_ms = timeout_ms < 0 ? -1 : mono_ms() + timeout_ms;
	return 0;
}

/* --- loop side: legs ------------------------------------------------------------------------ */
static void leg_start(struct leg *l)
{
	struct stream *s = l->s;
	struct partition *p = l->p;
	struct upstream_req rq = s->rq;
	rq.path = l->path;
	const char *base = p->endpoints[(l->ep_first + l->ep_tries) % p->nendpoints];
	l->easy = curl_easy_init();
	l->hdrs = upstream_setup(l->easy, base, &rq, &l->url);
	curl_easy_setopt(l->easy, CURLOPT_PRIVATE, l);
	curl_easy_setopt(l->easy, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(l->easy, CURLOPT_HEADERDATA, l);
	curl_easy_setopt(l->easy, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(l->easy, CURLOPT_WRITEDATA, l);
	curl_easy_setopt(l->easy, CURLOPT_FORBID_REUSE, 1L); /* a finished watch's socket is not kept */
	curl_easy_setopt(l->easy, CURLOPT_SHARE, L.share);
	/* Watch events are small and thousands of transfers are open: a small receive buffer
	 * each (libcurl's default is 16 KiB). */
	curl_easy_setopt(l->easy, CURLOPT_BUFFERSIZE, (long)LEG_BUFFER);
	atomic_fetch_add(&legs_open, 1);
	curl_multi_add_handle(L.multi, l->easy);
}

/* Removes and frees the leg's transfer (loop thread; idempotent). */
static void leg_close(struct leg *l)
{
	if (!l->easy)
		return;
	curl_multi_remove_handle(L.multi, l->easy);
	curl_easy_cleanup(l->easy);
	curl_slist_free_all(l->hdrs);
	free(l->url);
	l->easy = NULL;
	l->hdrs = NULL;
	l->url = NULL;
	l->paused = false;
	atomic_fetch_sub(&legs_open, 1);
}

static void unwait(struct stream *s)
{
	if (!s->waiting)
		return;
	s->waiting = false;
	for (struct stream **pp = &L.waiting; *pp; pp = &(*pp)->next_wait) {
		if (*pp == s) {
			*pp = s->next_wait;
			break;
		}
	}
	s->next_wait = NULL;
}

static void stream_finish(struct stream *s)
{
	if (s->finished)
		return;
	s->finished = true;
	unwait(s);
	if (s->started) {
		if (s->prev)
			s->prev->next = s->next;
		else
			L.active = s->next;
		if (s->next)
			s->next->prev = s->prev;
	}
	pthread_mutex_lock(&s->lock);
	s->ended = true;
	wake_client_locked(s);
	pthread_mutex_unlock(&s->lock);
	stream_unref(s); /* the loop's reference */
}

/* Ends every leg of s still running and, with that, the loop's part of s. */
static void stream_cancel(struct stream *s)
{
	for (size_t i = 0; i < s->nlegs; i++) {
		if (s->legs[i].easy) {
			leg_close(&s->legs[i]);
			s->legs_running--;
		}
	}
	stream_finish(s);
}

/* --- loop side: following a moving tenant --------------------------------------------------- */

/* Under s->lock: the stream may wait for its tenant to move (the leg that ended had answered 200,
 * the client is there, the watch did not end on its own terms). */
static bool may_follow(struct stream *s, struct leg *l, int64_t now)
{
	static const char error_head[] = "{\"type\":\"ERROR\"";
	if (!s->reg || s->merged || !s->json || !s->hs || s->client_gone || s->ended || s->midline)
		return false;
	if (!l->headers_done || l->status != 200)
		return false;
	if (s->head_len >= sizeof(error_head) - 1 && memcmp(s->head, error_head, sizeof(error_head) - 1) == 0)
		return false; /* the partition said why it ended: the client acts on it */
	/* The timeout the client asked for (a second's slack for the partition's clock): informers
	 * re-watch at once, as they expect. */
	if (s->timeout_s && now - s->started_ms >= s->timeout_s * 1000 - 1000)
		return false;
	return true;
}

/* The leg that ended starts waiting for its tenant's placement to change. A newline goes to the
 * client at once: a client that left is found out now, not after the wait. */
static void wait_for_move(struct stream *s, int64_t now)
{
	s->waiting = true;
	s->wait_until_ms = now + MOVE_BRIDGE_WAIT_MS;
	s->wait_next_ms = now;
	s->next_wait = L.waiting;
	L.waiting = s;
	move_count_bridge(0, 1, 0);
	pthread_mutex_lock(&s->lock);
	if (s->hs && !s->data.len) {
		buf_addch(&s->data, '\n');
		http_stream_wake(s->hs);
	}
	pthread_mutex_unlock(&s->lock);
}

/* Ends s after its only leg l ended for good; extra (may be NULL) is the last thing the client
 * gets (an ERROR event). */
static void end_tenant_watch(struct stream *s, struct leg *l, const struct buf *extra)
{
	unwait(s);
	s->legs_running--;
	pthread_mutex_lock(&s->lock);
	l->ended = true;
	if (extra && extra->len && !s->client_gone)
		buf_add(&s->data, extra->ptr, extra->len);
	s->ended = true;
	wake_client_locked(s);
	pthread_mutex_unlock(&s->lock);
	stream_cancel(s);
}

/* Starts the leg again at partition q (taken) from resourceVersion to_rev. */
static void continue_at(struct stream *s, struct leg *l, struct partition *q, int64_t to_rev, int64_t now)
{
	/* l->path's timeoutSeconds was already lowered at an earlier continuation: take off only the
	 * time since then */
	char *path = move_watch_path(l->path, to_rev, (now - s->path_ms) / 1000);
	s->path_ms = now;
	log_info("watch continued", "tenant=\"%s\" from=%s to=%s resourceVersion=%lld", s->tenant, l->p->id, q->id,
		 (long long)to_rev);
	unwait(s);
	partition_unref(l->p);
	l->p = q;
	free(l->path);
	l->path = path;
	l->ep_first = (size_t)atomic_load(&q->next_ep) % q->nendpoints;
	l->ep_tries = 0;
	l->continued = true;
	pthread_mutex_lock(&s->lock);
	l->status = 0;
	l->headers_done = l->ended = false;
	l->err = 0;
	free(l->content_type);
	l->content_type = NULL;
	buf_reset(&l->errbody);
	pthread_mutex_unlock(&s->lock);
	move_count_bridge(1, 0, 0);
	leg_start(l);
}

/* One look at the registry for a waiting stream. */
static void poll_wait(struct stream *s, int64_t now)
{
	struct leg *l = &s->legs[0];
	struct tenant_rec rec;
	s->wait_next_ms = now + MOVE_BRIDGE_POLL_MS;
	pthread_mutex_lock(&s->lock);
	bool gone = s->client_gone;
	pthread_mutex_unlock(&s->lock);
	if (gone) {
		end_tenant_watch(s, l, NULL);
		return;
	}
	if (registry_tenant(s->reg, s->tenant, &rec) != 0) {
		end_tenant_watch(s, l, NULL); /* deleted: the client learns it when it watches again */
		return;
	}
	if (strcmp(rec.partition, l->p->id) == 0) {
		/* the partition's own end (its timeout, a restart): as before, at once unless a move of
		 * the tenant is in progress, whose switch this gateway may not have seen yet */
		if (now >= s->wait_until_ms || !registry_tenant_moving(s->reg, s->tenant))
			end_tenant_watch(s, l, NULL);
		tenant_rec_release(&rec);
		return;
	}
	struct partition *q = NULL;
	if (rec.moved.from && strcmp(rec.moved.from, l->p->id) == 0)
		q = registry_partition(s->reg, rec.partition);
	if (q && !q->is_rm) {
		continue_at(s, l, q, rec.moved.to_rev, now);
	} else {
		/* moved on from elsewhere (two moves while this one waited) or to an unknown partition:
		 * no revision to go on from; the client re-lists when it watches again */
		log_info("watch not continued", "tenant=\"%s\" from=%s placement=%s moved_from=%s", s->tenant, l->p->id,
			 rec.partition, rec.moved.from ? rec.moved.from : "-");
		partition_unref(q);
		end_tenant_watch(s, l, NULL);
	}
	tenant_rec_release(&rec);
}

static void poll_waits(int64_t now)
{
	struct stream *due[64];
	size_t n = 0;
	for (struct stream *s = L.waiting; s && n < 64; s = s->next_wait)
		if (s->wait_next_ms <= now)
			due[n++] = s;
	for (size_t i = 0; i < n; i++) /* each may leave the list (or end) */
		poll_wait(due[i], now);
}

/* A continued leg was refused or could not connect: the client gets an ERROR event carrying the
 * partition's Status (or the gateway's), and the stream ends. */
static void continued_refused(struct stream *s, struct leg *l, int err)
{
	struct buf ev = BUF_INIT;
	pthread_mutex_lock(&s->lock);
	int status = l->status;
	json_t *st = l->errbody.len ? json_loadb(l->errbody.ptr, l->errbody.len, 0, NULL) : NULL;
	pthread_mutex_unlock(&s->lock);
	if (json_is_object(st) && json_is_string(json_object_get(st, "kind"))) {
		buf_adds(&ev, "{\"type\":\"ERROR\",\"object\":");
		json_dump_buf(st, &ev);
		buf_adds(&ev, "}\n");
	} else {
		struct buf msg = BUF_INIT;
		if (err || !status)
			buf_addf(&msg, "partition %s, where tenant %s moved, is unavailable", l->p->id, s->tenant);
		else
			buf_addf(&msg, "partition %s, where tenant %s moved, refused the watch with %d", l->p->id, s->tenant,
				 status);
		merge_error_event(err || !status ? E_UNAVAILABLE : E_INTERNAL, buf_cstr(&msg), &ev);
		buf_release(&msg);
	}
	json_decref(st);
	log_warn("continued watch refused", "tenant=\"%s\" partition=%s code=%d", s->tenant, l->p->id, status);
	move_count_bridge(0, 0, 1);
	end_tenant_watch(s, l, &ev);
	buf_release(&ev);
}

static void on_leg_done(struct leg *l, CURLcode rc)
{
	struct stream *s = l->s;
	leg_close(l);
	pthread_mutex_lock(&s->lock);
	bool before_headers = !l->headers_done, gone = s->client_gone;
	bool follow = may_follow(s, l, mono_ms());
	bool refused = l->continued && !follow && (before_headers || l->status != 200);
	pthread_mutex_unlock(&s->lock);
	int err = rc == CURLE_OK ? 0 : upstream_curl_err(rc);
	if (follow) {
		wait_for_move(s, mono_ms());
		return;
	}
	if (before_headers && err == E_UNAVAILABLE) {
		if (++l->ep_tries < l->p->nendpoints && !gone) {
			leg_start(l); /* the partition's next endpoint */
			return;
		}
		if (!atomic_exchange(&l->p->down, true))
			log_warn("partition unreachable", "partition=%s from=stream", l->p->id);
	}
	if (refused && !gone) {
		continued_refused(s, l, before_headers ? (err ? err : E_UNAVAILABLE) : 0);
		return;
	}
	s->legs_running--;
	pthread_mutex_lock(&s->lock);
	l->ended = true;
	if (before_headers)
		l->err = err ? err : E_UNAVAILABLE;
	/* One partition's part of a merged watch ending (its timeout, the partition gone) ends
	 * the merged watch: the client re-watches from the composite resourceVersion it has, or
	 * re-lists. */
	s->ended = true;
	wake_client_locked(s);
	pthread_mutex_unlock(&s->lock);
	stream_cancel(s); /* the other legs, if any, and the loop's part */
}

/* --- loop side: the thread ----------------------------------------------------------------- */
static void run_commands(bool stopping)
{
	pthread_mutex_lock(&L.lock);
	struct stream *q = L.q_head;
	L.q_head = L.q_tail = NULL;
	pthread_mutex_unlock(&L.lock);
	while (q) {
		pthread_mutex_lock(&L.lock);
		struct stream *s = q;
		q = s->next_cmd;
		unsigned cmd = s->cmd;
		s->cmd = 0;
		s->queued = false;
		s->next_cmd = NULL;
		pthread_mutex_unlock(&L.lock);
		if ((cmd & CMD_START) && stopping)
			stream_finish(s);
		if ((cmd & CMD_START) && !s->started && !s->finished) {
			s->started = true;
			s->next = L.active;
			if (L.active)
				L.active->prev = s;
			L.active = s;
			s->legs_running = s->nlegs;
			for (size_t i = 0; i < s->nlegs; i++)
				leg_start(&s->legs[i]);
		}
		if ((cmd & CMD_CANCEL) && !s->finished)
			stream_cancel(s);
		if ((cmd & CMD_UNPAUSE) && !s->finished) {
			for (size_t i = 0; i < s->nlegs; i++) {
				if (s->legs[i].easy && s->legs[i].paused) {
					s->legs[i].paused = false;
					curl_easy_pause(s->legs[i].easy, CURLPAUSE_CONT);
				}
			}
		}
		stream_unref(s); /* the queue's reference */
	}
}

static void leg_done(void *priv, CURLcode rc)
{
	on_leg_done(priv, rc);
}

/* A client's suspended connection is not polled by libmicrohttpd, so a client that leaves
 * while its stream is idle would go unnoticed (and hold its partition's transfers) until the
 * next event. Idle JSON streams get a newline now and then, between events (JSON watch
 * decoders skip whitespace: client-go, kubectl, python-kubernetes, ursa's own client): writing
 * it to a closed connection fails and ends the stream. Other streams (log -f, protobuf) are
 * only found out at their next bytes. */
static void sweep_idle(void)
{
	for (struct stream *s = L.active; s; s = s->next) {
		pthread_mutex_lock(&s->lock);
		if (s->hs && s->json && !s->data.len && !s->ended && !s->midline) {
			buf_addch(&s->data, '\n');
			http_stream_wake(s->hs);
		}
		pthread_mutex_unlock(&s->lock);
	}
}

static void *loop_main(void *arg)
{
	struct epoll_event evs[MAX_EVENTS];
	int running = 0;
	int64_t next_sweep = mono_ms() + atomic_load(&sweep_ms);
	for (;;) {
		pthread_mutex_lock(&L.lock);
		bool stop = L.stopping;
		pthread_mutex_unlock(&L.lock);
		if (stop)
			break;
		int64_t now = mono_ms();
		if (now >= next_sweep) {
			sweep_idle();
			next_sweep = now + atomic_load(&sweep_ms);
		}
		int64_t until = L.timer_at_ms >= 0 && L.timer_at_ms < next_sweep ? L.timer_at_ms : next_sweep;
		for (struct stream *w = L.waiting; w; w = w->next_wait)
			if (w->wait_next_ms < until)
				until = w->wait_next_ms;
		int timeout = until <= now ? 0 : (int)(until - now);
		int n = epoll_wait(L.ep, evs, MAX_EVENTS, timeout);
		for (int i = 0; i < n; i++) {
			if (evs[i].data.fd == L.evfd) {
				uint64_t v;
				ssize_t r = read(L.evfd, &v, sizeof(v));
				(void)r;
				run_commands(false);
				continue;
			}
			int flags = (evs[i].events & EPOLLIN ? CURL_CSELECT_IN : 0) |
				    (evs[i].events & EPOLLOUT ? CURL_CSELECT_OUT : 0) |
				    (evs[i].events & (EPOLLERR | EPOLLHUP) ? CURL_CSELECT_ERR : 0);
			curl_multi_socket_action(L.multi, evs[i].data.fd, flags, &running);
		}
		if (L.waiting)
			poll_waits(mono_ms());
		if (L.timer_at_ms >= 0 && mono_ms() >= L.timer_at_ms) {
			L.timer_at_ms = -1;
			curl_multi_socket_action(L.multi, CURL_SOCKET_TIMEOUT, 0, &running);
		}
		upstream_multi_finished(L.multi, leg_done);
	}
	/* Stopping: end every stream's transfers; the client side ends on its own. */
	while (L.active)
		stream_cancel(L.active);
	run_commands(true);
	return NULL;
}

static long descriptor_budget(void)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY)
		return 1L << 20;
	return rl.rlim_cur > FD_RESERVE * 2 ? (long)rl.rlim_cur - FD_RESERVE : (long)rl.rlim_cur / 2;
}

int streams_start(void)
{
	atomic_store(&fd_budget, descriptor_budget());
	L.ep = epoll_create1(EPOLL_CLOEXEC);
	L.evfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (L.ep < 0 || L.evfd < 0)
		goto fail;
	struct epoll_event ev = { .events = EPOLLIN, .data.fd = L.evfd };
	epoll_ctl(L.ep, EPOLL_CTL_ADD, L.evfd, &ev);
	L.multi = curl_multi_init();
	curl_multi_setopt(L.multi, CURLMOPT_SOCKETFUNCTION, on_socket);
	curl_multi_setopt(L.multi, CURLMOPT_TIMERFUNCTION, on_timer);
	L.share = curl_share_init();
	curl_share_setopt(L.share, CURLSHOPT_SHARE, CURL_LOCK_DATA_SSL_SESSION);
	curl_share_setopt(L.share, CURLSHOPT_SHARE, CURL_LOCK_DATA_DNS);
	L.timer_at_ms = -1;
	L.stopping = false;
	L.active = NULL;
	if (pthread_create(&L.thread, NULL, loop_main, NULL) != 0)
		goto fail;
	pthread_mutex_lock(&L.lock);
	L.running = true;
	pthread_mutex_unlock(&L.lock);
	return 0;
fail:
	if (L.multi)
		curl_multi_cleanup(L.multi);
	if (L.share)
		curl_share_cleanup(L.share);
	if (L.ep >= 0)
		close(L.ep);
	if (L.evfd >= 0)
		close(L.evfd);
	L.multi = NULL;
	L.share = NULL;
	L.ep = L.evfd = -1;
	return E_INTERNAL;
}

void streams_stop(void)
{
	pthread_mutex_lock(&L.lock);
	bool was = L.running;
	L.stopping = true;
	pthread_mutex_unlock(&L.lock);
	if (!was)
		return;
	uint64_t one = 1;
	ssize_t w = write(L.evfd, &one, sizeof(one));
	(void)w;
	pthread_join(L.thread, NULL);
	pthread_mutex_lock(&L.lock);
	L.running = false;
	pthread_mutex_unlock(&L.lock);
	curl_multi_cleanup(L.multi);
	curl_share_cleanup(L.share);
	close(L.ep);
	close(L.evfd);
	L.multi = NULL;
	L.share = NULL;
	L.ep = L.evfd = -1;
}

/* --- HTTP side ------------------------------------------------------------------------------ */
static int stream_fill(void *ud, struct buf *out, size_t max)
{
	struct stream *s = ud;
	int r = 0;
	bool unpause = false;
	pthread_mutex_lock(&s->lock);
	if (s->data.len) {
		size_t n = s->data.len < max ? s->data.len : max;
		buf_add(out, s->data.ptr, n);
		memmove(s->data.ptr, s->data.ptr + n, s->data.len - n);
		s->data.len -= n;
		s->data.ptr[s->data.len] = '\0';
		if (s->paused && s->data.len <= STREAM_BUFFER_MAX / 2) {
			s->paused = false;
			unpause = true;
		}
		r = 1;
	} else if (s->ended) {
		r = -1;
	}
	pthread_mutex_unlock(&s->lock);
	if (unpause)
		post(s, CMD_UNPAUSE);
	return r;
}

static void stream_done(void *ud)
{
	struct stream *s = ud;
	pthread_mutex_lock(&s->lock);
	s->hs = NULL;
	s->client_gone = true;
	bool ended = s->ended;
	pthread_mutex_unlock(&s->lock);
	if (!ended)
		post(s, CMD_CANCEL);
	stream_unref(s); /* the client's reference */
}

static void reply_error(struct http_reply *reply, int err, const char *msg)
{
	struct buf b = BUF_INIT;
	buf_adds(&b, "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\",\"message\":");
	buf_add_json_str(&b, msg, strlen(msg));
	buf_addf(&b, ",\"reason\":\"%s\",\"code\":%d}", err_reason(err), err_http_code(err));
	if (err == E_UNAVAILABLE)
		http_reply_header(reply, "Retry-After", "1");
	http_reply_set(reply, err_http_code(err), "application/json", &b);
}

/* Under s->lock: the first leg that answered other than 200, or NULL. */
static struct leg *refused_leg(struct stream *s)
{
	for (size_t i = 0; i < s->nlegs; i++)
		if (s->legs[i].headers_done && s->legs[i].status != 200)
			return &s->legs[i];
	return NULL;
}

static bool all_headers(struct stream *s)
{
	for (size_t i = 0; i < s->nlegs; i++)
		if (!s->legs[i].headers_done)
			return false;
	return true;
}

static bool wait_until(struct stream *s, const struct timespec *until)
{
	return pthread_cond_timedwait(&s->cond, &s->lock, until) == 0;
}

/* Runs on the handler's thread: waits (bounded) for every leg's response headers, then replies
 * with a stream, the partition's own non-200 answer, or a Status. */
static void stream_answer(struct stream *s, struct http_reply *reply)
{
	struct timespec until;
	long wait_ms = atomic_load(&header_wait_ms);
	mono_deadline(&until, wait_ms);
	struct leg *bad = NULL;
	pthread_mutex_lock(&s->lock);
	while (!all_headers(s) && !(bad = refused_leg(s)) && !s->ended)
		if (!wait_until(s, &until))
			break;
	bad = refused_leg(s);
	if (!bad && all_headers(s)) {
		const char *ct = s->legs[0].content_type;
		s->json = s->merged || (ct && strncasecmp(ct, "application/json", 16) == 0);
		s->hs = http_reply_stream(reply, 200, ctype_intern(s->legs[0].content_type), stream_fill, stream_done, s);
		atomic_fetch_add(&s->refs, 1); /* the client's reference */
		http_stream_wake(s->hs);
		pthread_mutex_unlock(&s->lock);
		return;
	}
	if (bad) {
		/* 403, 404, 410...: read whole (bounded) and answered as is. */
		while (!bad->ended && wait_until(s, &until))
			;
		if (bad->ended) {
			struct buf body = bad->errbody;
			buf_init(&bad->errbody);
			const char *ct = ctype_intern(bad->content_type);
			int status = bad->status;
			pthread_mutex_unlock(&s->lock);
			http_reply_set(reply, status, ct, &body);
			post(s, CMD_CANCEL);
			return;
		}
	}
	struct leg *failed = NULL;
	for (size_t i = 0; i < s->nlegs && !failed; i++)
		if (s->legs[i].ended && s->legs[i].err)
			failed = &s->legs[i];
	pthread_mutex_unlock(&s->lock);
	post(s, CMD_CANCEL);
	struct buf msg = BUF_INIT;
	if (failed && failed->err == E_UNAVAILABLE) {
		buf_addf(&msg, "partition %s is unavailable", failed->p->id);
		reply_error(reply, E_UNAVAILABLE, buf_cstr(&msg));
	} else {
		struct leg *slow = failed;
		for (size_t i = 0; i < s->nlegs && !slow; i++)
			if (!s->legs[i].headers_done)
				slow = &s->legs[i];
		buf_addf(&msg, "partition %s did not answer the stream within %ld ms", slow ? slow->p->id : "?", wait_ms);
		reply_error(reply, E_TIMEOUT, buf_cstr(&msg));
	}
	buf_release(&msg);
}

/* Charges the stream's descriptors (the client's and one per partition) to the budget. */
static bool charge(struct stream *s)
{
	s->fds = 1 + (long)s->nlegs;
	if (atomic_fetch_add(&fds_used, s->fds) + s->fds > atomic_load(&fd_budget))
		return false;
	return true;
}

/* What a tenant watch follows (upstream_tenant_watch). */
struct stream_follow {
	struct registry *reg;
	const char *tenant;
	int64_t timeout_s;
};

static void open_stream(struct partition **ps, char **paths, size_t n, const struct upstream_req *rq,
			struct merge_state *m, const struct stream_follow *f, struct http_reply *reply)
{
	for (size_t i = 0; i < n; i++) {
		if (atomic_load(&ps[i]->down)) {
			struct buf msg = BUF_INIT;
			buf_addf(&msg, "partition %s is unavailable", ps[i]->id);
			reply_error(reply, E_UNAVAILABLE, buf_cstr(&msg));
			buf_release(&msg);
			if (m) {
				merge_state_release(m);
				free(m);
			}
			return;
		}
	}
	struct stream *s = stream_new(ps, paths, n, rq);
	s->merged = m != NULL;
	s->m = m;
	s->started_ms = s->path_ms = mono_ms();
	if (f && !s->merged && n == 1) {
		s->reg = f->reg;
		s->tenant = xstrdup(f->tenant);
		s->timeout_s = f->timeout_s;
	}
	if (!charge(s)) {
		log_warn("stream refused", "reason=descriptors used=%ld budget=%ld", atomic_load(&fds_used),
			 atomic_load(&fd_budget));
		reply_error(reply, E_UNAVAILABLE, "the gateway holds as many streams as its descriptor limit allows");
		atomic_fetch_sub(&s->refs, 1); /* the loop never saw it */
		stream_unref(s);
		return;
	}
	if (!post(s, CMD_START)) {
		reply_error(reply, E_UNAVAILABLE, "the gateway is shutting down");
		atomic_fetch_sub(&s->refs, 1);
		stream_unref(s);
		return;
	}
	stream_answer(s, reply);
	stream_unref(s); /* the handler's reference */
}

void upstream_stream(struct partition *p, const struct upstream_req *rq, struct http_reply *reply)
{
	char *path = (char *)rq->path;
	open_stream(&p, &path, 1, rq, NULL, NULL, reply);
}

void upstream_tenant_watch(struct partition *p, const struct upstream_req *rq, struct registry *reg,
			   const char *tenant, struct http_reply *reply)
{
	char *path = (char *)rq->path;
	struct stream_follow f = { .reg = reg, .tenant = tenant, .timeout_s = move_watch_timeout_s(rq->path) };
	open_stream(&p, &path, 1, rq, NULL, &f, reply);
}

void upstream_merged_watch(struct partition **ps, char **paths, size_t n, const struct upstream_req *rq,
			   struct merge_state *m, struct http_reply *reply)
{
	open_stream(ps, paths, n, rq, m, NULL, reply);
}
