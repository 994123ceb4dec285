/* The etcd side of a watch cache: one thread per cache lists the prefix (pages of 10,000 pinned
 * to the first page's revision, at etcd's current one), starts a watch from the list revision + 1
 * (without prev_kv: the store holds every previous state), and relists when etcd reports the
 * watch's revision compacted. After the first list a second watch, with prev_kv, loads the events
 * of history_back_revs revisions before the list into the ring (not the objects), so watches from
 * before a restart resume; it ends at its first event after the list revision, which the driver
 * makes sure comes by writing the cache's progress marker. Progress markers are written here
 * (put_marker) for wcache_wait_current. A mux (wcache_mux_new) does the same
 * for many caches under one prefix with one thread and one watch. This is the only place that
 * calls etcd, so caches built with wcache_new_detached (the unit tests) never link the client in. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "cache/wcache_internal.h"
#include "ursa/errors.h"
#include "ursa/strmap.h"
#include "ursa/timeutil.h"
#include "ursa/xalloc.h"

_Atomic long wcache_list_page_size = 10000;
#define RETRY_MS 1000
#define DEF_HISTORY_BACK 10000
/* The marker's value: not JSON, so even a reader that forgot to skip it parses no object. */
#define MARKER_VALUE "ursa watch cache progress marker"

struct wdriver {
	struct wcache *c;
	struct etcd *etcd;
	char *prefix, *range_end;
	pthread_t th;
	pthread_mutex_t mu;
	pthread_cond_t cond;
	bool stop;    /* under mu */
	bool relist;  /* under mu: the watch was compacted */
	struct etcd_watch *watch; /* driver thread only */
	int64_t back;             /* history_back_revs, resolved */
	bool listed;              /* driver thread only: the first list was installed */
	struct etcd_watch *hist;  /* driver thread only: the history watch, while it runs */
	int64_t hist_until;       /* the first list's revision: the history ends after it */
	bool hist_done;           /* under mu: the history watch passed hist_until */
	int64_t hist_compacted;   /* under mu: the history watch's start was compacted (to this) */
};

static int put_marker(void *ud, const char *key, int64_t *ret_rev)
{
	return etcd_put(ud, key, MARKER_VALUE, strlen(MARKER_VALUE), 0, ret_rev);
}

static void on_events(void *ud, const struct etcd_event *ev, size_t n)
{
	struct wdriver *d = ud;
	wcache_apply_events(d->c, ev, n);
}

static void on_compacted(void *ud, int64_t compact_rev)
{
	struct wdriver *d = ud;
	pthread_mutex_lock(&d->mu);
	d->relist = true;
	pthread_cond_signal(&d->cond);
	pthread_mutex_unlock(&d->mu);
}

/* While etcd is unreachable the cache keeps serving what it has (stale reads beat none, as
 * upstream's cacher); the watch resumes by itself from its last revision. */
static void on_state(void *ud, bool connected)
{
}

static const struct etcd_watch_handlers handlers = { on_events, on_compacted, on_state };

static bool stopping(struct wdriver *d)
{
	pthread_mutex_lock(&d->mu);
	bool s = d->stop;
	pthread_mutex_unlock(&d->mu);
	return s;
}

struct objvec {
	struct cobj **v;
	size_t n, alloc;
};

static void objvec_release(struct objvec *a)
{
	for (size_t i = 0; i < a->n; i++)
		cobj_unref(a->v[i]);
	free(a->v);
	memset(a, 0, sizeof(*a));
}

static void add_page(struct wcache *c, struct objvec *a, const struct etcd_range_result *res, int64_t *marker)
{
	const struct api_resource *r = wcache_resource(c);
	if (a->n + res->n > a->alloc) {
		a->alloc = a->n + res->n + (a->alloc / 2);
		a->v = xrealloc(a->v, a->alloc * sizeof(*a->v));
	}
	for (size_t i = 0; i < res->n; i++) {
		const struct etcd_kv *kv = &res->kvs[i];
		if (wcache_is_marker(c, kv->key)) {
			*marker = kv->create_rev;
			continue;
		}
		struct cobj *o = cobj_new(r, kv->key, kv->value, kv->value_len, kv->mod_rev);
		if (o)
			a->v[a->n++] = o;
	}
}

/* The pages of one listing, fetched by a thread of their own while the caller builds the objects
 * of the page before (the two took turns: a list of 100,000 pods left etcd and the builder each
 * idle half the time). At most FETCH_AHEAD pages wait. */
#define FETCH_AHEAD 2

struct fetcher {
	struct etcd *etcd;
	const char *range_end;
	struct buf start;       /* fetcher thread: the next page's first key */
	long page;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct etcd_range_result q[FETCH_AHEAD]; /* under mu: pages fetched, oldest first */
	size_t qn;
	bool done, stop;        /* under mu: no more pages will come / the caller gave up */
	int rc;                 /* under mu: the fetch's error, once done */
	int64_t rev;            /* the first page's revision (later pages are pinned to it) */
};

static void *fetch_run(void *arg)
{
	struct fetcher *f = arg;
	int rc = 0;
	for (;;) {
		pthread_mutex_lock(&f->mu);
		while (f->qn == FETCH_AHEAD && !f->stop)
			pthread_cond_wait(&f->cv, &f->mu);
		bool stop = f->stop;
		pthread_mutex_unlock(&f->mu);
		if (stop)
			break;
		struct etcd_range_result res;
		if ((rc = etcd_range(f->etcd, buf_cstr(&f->start), f->range_end, f->rev, f->page, false, &res)))
			break;
		if (f->rev == 0)
			f->rev = res.revision;
		bool more = res.more && res.n > 0;
		if (more) {
			/* the next key after K is K"\0", which a C string cannot carry; keys never hold
			 * NUL, so K"\x01" is the smallest key that can follow */
			buf_reset(&f->start);
			buf_adds(&f->start, res.kvs[res.n - 1].key);
			buf_addch(&f->start, '\x01');
		}
		pthread_mutex_lock(&f->mu);
		f->q[f->qn++] = res;
		pthread_cond_signal(&f->cv);
		pthread_mutex_unlock(&f->mu);
		if (!more)
			break;
	}
	pthread_mutex_lock(&f->mu);
	f->rc = rc;
	f->done = true;
	pthread_cond_signal(&f->cv);
	pthread_mutex_unlock(&f->mu);
	return NULL;
}

/* One consistent listing of [prefix, range_end) at the first page's revision, objects built for
 * c (progress markers skipped: *ret_marker gets the create revision of c's, 0 if absent).
 * E_GONE if that revision got compacted between pages, E_UNAVAILABLE when stop(ud) says so
 * (stop may be NULL), or the client's error. */
static int list_range(struct etcd *etcd, struct wcache *c, const char *prefix, const char *range_end,
		      bool (*stop)(void *ud), void *ud, struct objvec *a, int64_t *ret_rev, int64_t *ret_marker)
{
	struct fetcher f = { .etcd = etcd, .range_end = range_end, .page = atomic_load(&wcache_list_page_size) };
	pthread_t th;
	int rc = 0;
	buf_init(&f.start);
	buf_adds(&f.start, prefix);
	pthread_mutex_init(&f.mu, NULL);
	pthread_cond_init(&f.cv, NULL);
	if (pthread_create(&th, NULL, fetch_run, &f) != 0)
		abort(); /* like an allocation failure */
	for (;;) {
		pthread_mutex_lock(&f.mu);
		while (f.qn == 0 && !f.done)
			pthread_cond_wait(&f.cv, &f.mu);
		if (f.qn == 0) { /* done, everything taken */
			rc = f.rc;
			pthread_mutex_unlock(&f.mu);
			break;
		}
		struct etcd_range_result res = f.q[0];
		memmove(f.q, f.q + 1, (f.qn - 1) * sizeof(f.q[0]));
		f.qn--;
		pthread_cond_signal(&f.cv);
		pthread_mutex_unlock(&f.mu);
		add_page(c, a, &res, ret_marker);
		etcd_range_result_release(&res);
		if (stop && stop(ud)) {
			rc = E_UNAVAILABLE;
			break;
		}
	}
	pthread_mutex_lock(&f.mu);
	f.stop = true;
	pthread_cond_signal(&f.cv);
	pthread_mutex_unlock(&f.mu);
	pthread_join(th, NULL);
	for (size_t i = 0; i < f.qn; i++)
		etcd_range_result_release(&f.q[i]);
	pthread_mutex_destroy(&f.mu);
	pthread_cond_destroy(&f.cv);
	buf_release(&f.start);
	if (rc == 0)
		*ret_rev = f.rev;
	return rc;
}

static bool driver_stopping(void *ud)
{
	return stopping(ud);
}


/* A whole listing at etcd's current revision installed into c (retried once when compacted
 * between pages). back > 0: the history of the back revisions before it is to be loaded
 * (wcache_history_begin, before the cache is ready, so no watch misses the wait). 0 or an error. */
static int list_install(struct etcd *etcd, struct wcache *c, const char *prefix, const char *range_end,
			bool (*stop)(void *ud), void *ud, int64_t back)
{
	struct objvec a = { NULL, 0, 0 };
	int64_t rev = 0, marker = 0;
	int rc = list_range(etcd, c, prefix, range_end, stop, ud, &a, &rev, &marker);
	if (rc == E_GONE) { /* compacted between pages: start over at the newest revision */
		objvec_release(&a);
		marker = 0;
		rc = list_range(etcd, c, prefix, range_end, stop, ud, &a, &rev, &marker);
	}
	if (rc != 0) {
		objvec_release(&a);
		return rc;
	}
	if (back > 0 && rev > 1)
		wcache_history_begin(c, rev - back > 0 ? rev - back : 0);
	wcache_set_marker_created(c, marker);
	wcache_install(c, a.v, a.n, rev);
	free(a.v);
	return 0;
}

/* The history watch: events up to the list revision go to the ring's history; the first one
 * after it ends the load. */
static void on_hist_events(void *ud, const struct etcd_event *ev, size_t n)
{
	struct wdriver *d = ud;
	pthread_mutex_lock(&d->mu);
	bool done = d->hist_done;
	pthread_mutex_unlock(&d->mu);
	if (done)
		return;
	size_t k = 0;
	while (k < n && ev[k].kv.mod_rev <= d->hist_until)
		k++;
	if (k)
		wcache_history_add(d->c, ev, k);
	if (k == n)
		return;
	wcache_history_end(d->c, true);
	pthread_mutex_lock(&d->mu);
	d->hist_done = true;
	pthread_cond_signal(&d->cond);
	pthread_mutex_unlock(&d->mu);
}

static void on_hist_compacted(void *ud, int64_t compact_rev)
{
	struct wdriver *d = ud;
	pthread_mutex_lock(&d->mu);
	d->hist_compacted = compact_rev > 0 ? compact_rev : 1;
	pthread_cond_signal(&d->cond);
	pthread_mutex_unlock(&d->mu);
}

static const struct etcd_watch_handlers hist_handlers = { on_hist_events, on_hist_compacted, on_state };

/* Starts the history watch from start_rev (driver thread; wcache_history_begin done), and writes
 * the marker so that an event after the list revision comes to end it. */
static void hist_watch_start(struct wdriver *d, int64_t start_rev)
{
	if (start_rev < 1)
		start_rev = 1;
	d->hist = etcd_watch_start(d->etcd, d->prefix, d->range_end, start_rev, true, &hist_handlers, d);
	if (!d->hist) {
		wcache_history_end(d->c, false);
		return;
	}
	int64_t mrev;
	put_marker(d->etcd, wcache_marker(d->c), &mrev); /* failing, a later write of the kind ends it */
}

static void hist_stop(struct wdriver *d)
{
	etcd_watch_stop(d->hist); /* joins: no handler of it runs after this */
	d->hist = NULL;
	pthread_mutex_lock(&d->mu);
	d->hist_done = false;
	d->hist_compacted = 0;
	pthread_mutex_unlock(&d->mu);
	if (wcache_history_loading(d->c))
		wcache_history_end(d->c, false);
}

static int list_and_watch(struct wdriver *d)
{
	/* only the first list gets a history: a relist follows a compaction, which took it */
	int rc = list_install(d->etcd, d->c, d->prefix, d->range_end, driver_stopping, d, d->listed ? 0 : d->back);
	if (rc != 0)
		return rc;
	bool first = !d->listed;
	d->listed = true;
	d->hist_until = wcache_revision(d->c);
	d->watch = etcd_watch_start(d->etcd, d->prefix, d->range_end, d->hist_until + 1, false, &handlers, d);
	if (!d->watch) {
		if (wcache_history_loading(d->c))
			wcache_history_end(d->c, false);
		return E_UNAVAILABLE;
	}
	if (first && wcache_history_loading(d->c))
		hist_watch_start(d, d->hist_until - d->back);
	return 0;
}

static void wait_ms(struct wdriver *d, long ms)
{
	struct timespec dl;
	mono_deadline(&dl, ms);
	pthread_cond_timedwait(&d->cond, &d->mu, &dl);
}

static void *run(void *arg)
{
	struct wdriver *d = arg;
	bool need_list = true;
	pthread_mutex_lock(&d->mu);
	while (!d->stop) {
		if (d->relist) {
			d->relist = false;
			need_list = true;
		}
		if (d->hist && (d->hist_done || d->hist_compacted || need_list)) {
			int64_t from = d->hist_compacted;
			bool done = d->hist_done;
			pthread_mutex_unlock(&d->mu);
			etcd_watch_stop(d->hist);
			d->hist = NULL;
			pthread_mutex_lock(&d->mu);
			d->hist_done = false;
			d->hist_compacted = 0;
			pthread_mutex_unlock(&d->mu);
			if (!done && (need_list || from >= d->hist_until)) {
				wcache_history_end(d->c, false); /* nothing left of it to load */
			} else if (!done) {
				/* compacted: what is left starts after the compaction revision, whose events
				 * etcd can no longer give a previous state for */
				wcache_history_begin(d->c, from);
				hist_watch_start(d, from + 1);
			}
			pthread_mutex_lock(&d->mu);
			continue;
		}
		if (!need_list) {
			pthread_cond_wait(&d->cond, &d->mu);
			continue;
		}
		pthread_mutex_unlock(&d->mu);
		etcd_watch_stop(d->watch); /* joins: no on_compacted from it after this */
		d->watch = NULL;
		pthread_mutex_lock(&d->mu);
		d->relist = false;
		pthread_mutex_unlock(&d->mu);
		int rc = list_and_watch(d);
		pthread_mutex_lock(&d->mu);
		need_list = rc != 0;
		if (need_list && !d->stop)
			wait_ms(d, RETRY_MS);
	}
	pthread_mutex_unlock(&d->mu);
	hist_stop(d);
	etcd_watch_stop(d->watch);
	d->watch = NULL;
	return NULL;
}

static void driver_stop(void *arg)
{
	struct wdriver *d = arg;
	pthread_mutex_lock(&d->mu);
	d->stop = true;
	pthread_cond_signal(&d->cond);
	pthread_mutex_unlock(&d->mu);
	pthread_join(d->th, NULL);
	pthread_mutex_destroy(&d->mu);
	pthread_cond_destroy(&d->cond);
	free(d->prefix);
	free(d->range_end);
	free(d);
}

struct wcache *wcache_new(const struct api_resource *r, struct etcd *etcd, const struct wcache_options *opts)
{
	struct wcache *c = wcache_new_detached(r, opts);
	struct wdriver *d = xcalloc(1, sizeof(*d));
	d->c = c;
	d->etcd = etcd;
	d->prefix = xstrdup(opts && opts->watch_prefix ? opts->watch_prefix : wcache_key_prefix(c));
	d->range_end = etcd_prefix_end(d->prefix);
	d->back = !opts || opts->history_back_revs == 0 ? DEF_HISTORY_BACK : opts->history_back_revs;
	wcache_set_progress(c, put_marker, etcd, NULL);
	pthread_mutex_init(&d->mu, NULL);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&d->cond, &ca);
	pthread_condattr_destroy(&ca);
	wcache_set_driver(c, d, driver_stop);
	if (pthread_create(&d->th, NULL, run, d) != 0)
		abort(); /* like an allocation failure: nothing sensible to continue with */
	return c;
}

/* ---- many caches, one watch ---- */

/* A cache fed by a mux. */
struct mchild {
	struct wcache_mux *m;
	struct wcache *c;
	char *prefix, *range_end;
	bool listed;           /* under m->mu: in the dispatch map, fed by the watch */
	struct mchild *next;   /* in its bucket of m->by_prefix, or in m->pending */
};

struct wcache_mux {
	struct etcd *etcd;
	char *prefix, *range_end;
	char *marker;            /* prefix + WCACHE_MARKER: the progress marker of every child */
	pthread_t th;
	pthread_mutex_t mu;      /* children, dispatch; held while events are applied */
	pthread_cond_t cond;
	bool stop, relist;       /* under mu */
	struct strmap by_prefix; /* under mu: watch prefix -> struct mchild list (listed ones) */
	struct mchild *pending;  /* under mu: waiting for their first list */
	struct etcd_watch *watch;/* the mux thread's */
};

static void mux_unlink(struct mchild **head, struct mchild *ch)
{
	for (struct mchild **pp = head; *pp; pp = &(*pp)->next)
		if (*pp == ch) {
			*pp = ch->next;
			ch->next = NULL;
			return;
		}
}

/* Every listed child whose prefix the key is under gets the event: its prefix is the key up to
 * one of its '/'s, so a few map lookups find them all. Under m->mu. */
static void mux_dispatch(struct wcache_mux *m, const struct etcd_event *ev)
{
	const char *key = ev->kv.key;
	size_t plen = strlen(m->prefix);
	if (!key || strncmp(key, m->prefix, plen) != 0)
		return;
	if (strcmp(key, m->marker) == 0) { /* progress for every child (in revision order like the rest) */
		size_t it = 0;
		for (struct strmap_ent *e = strmap_next(&m->by_prefix, NULL, &it); e; e = strmap_next(&m->by_prefix, e, &it))
			for (struct mchild *ch = e->val; ch; ch = ch->next)
				wcache_apply_events(ch->c, ev, 1);
		return;
	}
	struct buf b = BUF_INIT;
	for (const char *p = key + plen; (p = strchr(p, '/')); p++) {
		buf_reset(&b);
		buf_add(&b, key, (size_t)(p - key) + 1);
		struct strmap_ent *e = strmap_get(&m->by_prefix, buf_cstr(&b));
		for (struct mchild *ch = e ? e->val : NULL; ch; ch = ch->next)
			wcache_apply_events(ch->c, ev, 1);
	}
	buf_release(&b);
}

static void mux_on_events(void *ud, const struct etcd_event *ev, size_t n)
{
	struct wcache_mux *m = ud;
	pthread_mutex_lock(&m->mu);
	for (size_t i = 0; i < n; i++)
		mux_dispatch(m, &ev[i]);
	pthread_mutex_unlock(&m->mu);
}

static void mux_on_compacted(void *ud, int64_t compact_rev)
{
	(void)compact_rev;
	struct wcache_mux *m = ud;
	pthread_mutex_lock(&m->mu);
	m->relist = true;
	pthread_cond_signal(&m->cond);
	pthread_mutex_unlock(&m->mu);
}

static const struct etcd_watch_handlers mux_handlers = { mux_on_events, mux_on_compacted, on_state };

/* Lists ch at the current revision and puts it into the dispatch map, with event dispatch held
 * (m->mu taken by the caller): events the watch brings later at or below the list's revision are
 * ignored by the cache, later ones applied, so nothing is missed or applied twice. */
static int mux_list_child(struct wcache_mux *m, struct mchild *ch)
{
	int rc = list_install(m->etcd, ch->c, ch->prefix, ch->range_end, NULL, NULL, 0);
	if (rc)
		return rc;
	struct strmap_ent *e = strmap_put(&m->by_prefix, ch->prefix, NULL);
	ch->next = e->val;
	e->val = ch;
	ch->listed = true;
	return 0;
}

/* (Re)starts the watch from the current revision, relisting every listed child (their watchers
 * get 410 and end, as after any relist). Under m->mu. */
static int mux_restart(struct wcache_mux *m)
{
	int64_t rev = 0;
	int rc = etcd_current_revision(m->etcd, &rev);
	if (rc)
		return rc;
	size_t it = 0;
	for (struct strmap_ent *e = strmap_next(&m->by_prefix, NULL, &it); e && !rc; e = strmap_next(&m->by_prefix, e, &it))
		for (struct mchild *ch = e->val; ch && !rc; ch = ch->next)
			rc = list_install(m->etcd, ch->c, ch->prefix, ch->range_end, NULL, NULL, 0);
	if (rc)
		return rc;
	m->watch = etcd_watch_start(m->etcd, m->prefix, m->range_end, rev + 1, false, &mux_handlers, m);
	return m->watch ? 0 : E_UNAVAILABLE;
}

static void mux_wait_ms(struct wcache_mux *m, long ms)
{
	struct timespec dl;
	mono_deadline(&dl, ms);
	pthread_cond_timedwait(&m->cond, &m->mu, &dl);
}

static void *mux_run(void *arg)
{
	struct wcache_mux *m = arg;
	bool need_watch = true;
	pthread_mutex_lock(&m->mu);
	while (!m->stop) {
		if (m->relist) {
			m->relist = false;
			need_watch = true;
		}
		if (need_watch) {
			pthread_mutex_unlock(&m->mu);
			etcd_watch_stop(m->watch); /* joins: no handler runs after this */
			m->watch = NULL;
			pthread_mutex_lock(&m->mu);
			need_watch = mux_restart(m) != 0;
		}
		bool failed = false;
		while (!need_watch && !failed && m->pending && !m->stop) {
			struct mchild *ch = m->pending;
			m->pending = ch->next;
			ch->next = NULL;
			if (mux_list_child(m, ch) != 0) { /* etcd unreachable: retried in a second */
				ch->next = m->pending;
				m->pending = ch;
				failed = true;
			}
		}
		if (m->stop)
			break;
		if (need_watch || failed)
			mux_wait_ms(m, RETRY_MS);
		else if (!m->relist && !m->pending)
			pthread_cond_wait(&m->cond, &m->mu);
	}
	pthread_mutex_unlock(&m->mu);
	etcd_watch_stop(m->watch);
	m->watch = NULL;
	return NULL;
}

/* wcache_free of a muxed cache: out of the dispatch map (or the pending list) first. */
static void mux_child_stop(void *arg)
{
	struct mchild *ch = arg;
	struct wcache_mux *m = ch->m;
	pthread_mutex_lock(&m->mu);
	if (ch->listed) {
		struct strmap_ent *e = strmap_get(&m->by_prefix, ch->prefix);
		if (e) {
			struct mchild *head = e->val;
			mux_unlink(&head, ch);
			e->val = head;
			if (!head)
				strmap_del(&m->by_prefix, ch->prefix, NULL);
		}
	} else {
		mux_unlink(&m->pending, ch);
	}
	pthread_mutex_unlock(&m->mu);
	free(ch->prefix);
	free(ch->range_end);
	free(ch);
}

struct wcache_mux *wcache_mux_new(struct etcd *etcd, const char *prefix)
{
	struct wcache_mux *m = xcalloc(1, sizeof(*m));
	m->etcd = etcd;
	m->prefix = xstrdup(prefix);
	m->range_end = etcd_prefix_end(prefix);
	m->marker = xasprintf("%s" WCACHE_MARKER, prefix);
	strmap_init(&m->by_prefix);
	pthread_mutex_init(&m->mu, NULL);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&m->cond, &ca);
	pthread_condattr_destroy(&ca);
	if (pthread_create(&m->th, NULL, mux_run, m) != 0)
		abort(); /* like an allocation failure */
	return m;
}

void wcache_mux_free(struct wcache_mux *m)
{
	if (!m)
		return;
	pthread_mutex_lock(&m->mu);
	m->stop = true;
	pthread_cond_signal(&m->cond);
	pthread_mutex_unlock(&m->mu);
	pthread_join(m->th, NULL);
	strmap_release(&m->by_prefix, NULL); /* empty: every child was freed first */
	pthread_mutex_destroy(&m->mu);
	pthread_cond_destroy(&m->cond);
	free(m->prefix);
	free(m->range_end);
	free(m->marker);
	free(m);
}

struct wcache *wcache_new_muxed(struct wcache_mux *m, const struct api_resource *r, const struct wcache_options *opts)
{
	struct wcache *c = wcache_new_detached(r, opts);
	struct mchild *ch = xcalloc(1, sizeof(*ch));
	ch->m = m;
	ch->c = c;
	ch->prefix = xstrdup(opts && opts->watch_prefix ? opts->watch_prefix : wcache_key_prefix(c));
	ch->range_end = etcd_prefix_end(ch->prefix);
	wcache_set_progress(c, put_marker, m->etcd, m->marker);
	wcache_set_driver(c, ch, mux_child_stop);
	pthread_mutex_lock(&m->mu);
	ch->next = m->pending;
	m->pending = ch;
	pthread_cond_signal(&m->cond);
	pthread_mutex_unlock(&m->mu);
	return c;
}
