/* Watchers: filters, per-watcher queues, delivery of ring events, and the watch/next/close
 * API. Delivery runs under the cache's exclusive lock and costs one match and, when it
 * matches, one pointer push (plus a reference) per watcher: objects are never re-serialized. */
#include <stdlib.h>
#include <string.h>
#include "cache/wcache_types.h"
#include "ursa/errors.h"
#include "ursa/xalloc.h"

#define DEF_MAX_QUEUE 1000

static atomic_long watchers_total;

/* Not (yet) in selector.h: when the selector module provides it, field selectors are copied
 * through their canonical text like label selectors; otherwise the watcher borrows f->fields. */

long wcache_watchers_total(void)
{
	return atomic_load(&watchers_total);
}

/* Filters ------------------------------------------------------------------------------------ */

static const char *nonempty(const char *s)
{
	return s && *s ? s : NULL;
}

void wmatch_init(const struct wcache *c, const struct wfilter *f, struct wmatch *m)
{
	memset(m, 0, sizeof(*m));
	if (!f)
		return;
	if (c->r->scope != SCOPE_CLUSTER)
		m->tenant = nonempty(f->tenant);
	if (c->r->scope == SCOPE_NAMESPACE)
		m->ns = nonempty(f->ns);
	m->name = f->name;
	if (f->labels && !label_selector_empty(f->labels))
		m->ls = f->labels;
	if (f->fields && !field_selector_empty(f->fields)) {
		m->fs = f->fields;
		if (c->node_field >= 0)
			m->node = field_selector_exact(f->fields, "spec.nodeName");
	}
}

struct fget {
	const struct wcache *c;
	const struct cobj *o;
};

static const char *get_field(void *ud, const char *label)
{
	const struct fget *g = ud;
	const struct api_strategy *st = g->c->r->strategy;
	if (strcmp(label, "metadata.name") == 0)
		return g->o->name;
	if (strcmp(label, "metadata.namespace") == 0)
		return g->o->ns;
	for (size_t i = 0; i < g->o->nfields; i++)
		if (strcmp(label, st->fields[i].label) == 0)
			return g->o->fields[i];
	return "";
}

bool wmatch_test(const struct wcache *c, const struct wmatch *m, const struct cobj *o)
{
	if (m->tenant && strcmp(o->tenant, m->tenant) != 0)
		return false;
	if (m->ns && strcmp(o->ns, m->ns) != 0)
		return false;
	if (m->name && strcmp(o->name, m->name) != 0)
		return false;
	if (m->node && strcmp(o->fields[c->node_field], m->node) != 0)
		return false;
	if (m->ls && !label_selector_matches(m->ls, o->labels))
		return false;
	if (m->fs) {
		struct fget g = { c, o };
		if (!field_selector_matches(m->fs, get_field, &g))
			return false;
	}
	return true;
}

/* Deep-copies the borrowed parts of a prepared filter into w. E_BAD_REQUEST if a selector's
 * canonical text does not parse again (it always should). */
static int wmatch_copy(struct watcher *w, const struct wmatch *m)
{
	int rc = 0;
	struct buf strs = BUF_INIT, sel = BUF_INIT;
	const char *src[4] = { m->tenant, m->ns, m->name, m->node };
	size_t off[4];
	for (int i = 0; i < 4; i++) {
		off[i] = strs.len;
		if (src[i])
			buf_adds(&strs, src[i]);
		buf_addch(&strs, '\0');
	}
	w->strs = buf_detach(&strs, NULL);
	const char **dst[4] = { &w->m.tenant, &w->m.ns, &w->m.name, &w->m.node };
	for (int i = 0; i < 4; i++)
		*dst[i] = src[i] ? w->strs + off[i] : NULL;
	if (m->ls) {
		label_selector_format(m->ls, &sel);
		if ((rc = label_selector_parse(buf_cstr(&sel), &w->ls_own, NULL)))
			goto out;
		w->m.ls = w->ls_own;
	}
	w->m.fs = m->fs;
	if (m->fs) {
		buf_reset(&sel);
		field_selector_format(m->fs, &sel);
		if ((rc = field_selector_parse(buf_cstr(&sel), &w->fs_own, NULL)))
			goto out;
		w->m.fs = w->fs_own;
	}
out:
	buf_release(&sel);
	return rc;
}

/* Queues ------------------------------------------------------------------------------------- */

static void q_push(struct watcher *w, enum wev_type type, int64_t rv, struct cobj *obj)
{
	if (w->qlen == w->qcap) {
		size_t cap = w->qcap ? w->qcap * 2 : 16;
		struct wevent *q = xmalloc(cap * sizeof(*q));
		for (size_t i = 0; i < w->qlen; i++)
			q[i] = w->q[(w->qhead + i) % w->qcap];
		free(w->q);
		w->q = q;
		w->qcap = cap;
		w->qhead = 0;
	}
	w->q[(w->qhead + w->qlen) % w->qcap] = (struct wevent){ type, rv, cobj_ref(obj) };
	w->qlen++;
}

static void q_clear(struct watcher *w)
{
	for (size_t i = 0; i < w->qlen; i++)
		wevent_release(&w->q[(w->qhead + i) % w->qcap]);
	w->qhead = w->qlen = w->initial_left = 0;
}

/* Queues an event (cache lock held). Live events beyond max_queue end the watcher: what is
 * queued is dropped (the client must relist anyway) and an ERROR takes its place. */
static void push(struct watcher *w, enum wev_type type, int64_t rv, struct cobj *obj, bool live)
{
	pthread_mutex_lock(&w->mu);
	if (live && w->qlen - w->initial_left >= w->max_queue) {
		q_clear(w);
		q_push(w, WEV_ERROR, rv, NULL);
		w->ended = true;
	} else {
		q_push(w, type, rv, obj);
		if (!live)
			w->initial_left++;
	}
	pthread_mutex_unlock(&w->mu);
	if (live && !w->pending) {
		struct wcache *c = w->c;
		if (c->npending == c->pending_cap) {
			c->pending_cap = c->pending_cap ? c->pending_cap * 2 : 64;
			c->pending = xrealloc(c->pending, c->pending_cap * sizeof(*c->pending));
		}
		c->pending[c->npending++] = w;
	}
	w->pending = true;
}

static void deliver_one(struct wcache *c, struct watcher *w, struct ev_rec *e, bool live)
{
	if (w->ended || e->rv <= w->from_rv)
		return;
	bool cur = wmatch_test(c, &w->m, e->obj);
	if (e->type != WEV_MODIFIED) {
		if (cur)
			push(w, e->type, e->rv, e->obj, live);
		return;
	}
	bool old = wmatch_test(c, &w->m, e->prev);
	if (cur)
		push(w, old ? WEV_MODIFIED : WEV_ADDED, e->rv, e->obj, live);
	else if (old) /* as upstream: the old content, at the revision it stopped matching */
		push(w, WEV_DELETED, e->rv, ev_prev_at_rv(c, e), live);
}

static void deliver_node(struct wcache *c, const char *node, struct ev_rec *e)
{
	struct strmap_ent *ent = strmap_get(&c->by_node, node);
	for (struct watcher *w = ent ? ((struct wlist *)ent->val)->head : NULL; w; w = w->dnext)
		deliver_one(c, w, e, true);
}

void watchers_deliver(struct wcache *c, struct ev_rec *e)
{
	for (struct watcher *w = c->unindexed; w; w = w->dnext)
		deliver_one(c, w, e, true);
	if (c->node_field < 0 || c->by_node.n == 0)
		return;
	const char *node = e->obj->fields[c->node_field];
	deliver_node(c, node, e);
	if (e->prev && strcmp(e->prev->fields[c->node_field], node) != 0)
		deliver_node(c, e->prev->fields[c->node_field], e);
}

void watchers_flush(struct wcache *c)
{
	for (size_t i = 0; i < c->npending; i++) {
		struct watcher *w = c->pending[i];
		if (w->pending) {
			w->pending = false;
			w->notify(w->ud);
		}
	}
	c->npending = 0;
}

/* Links w into its delivery list (exclusive lock held). */
static void dlist_add(struct wcache *c, struct watcher *w)
{
	struct watcher **head = &c->unindexed;
	if (w->m.node) {
		bool created = false;
		struct strmap_ent *ent = strmap_put(&c->by_node, w->m.node, &created);
		if (created)
			ent->val = xcalloc(1, sizeof(struct wlist));
		head = &((struct wlist *)ent->val)->head;
	}
	w->dnext = *head;
	if (*head)
		(*head)->dprev = w;
	*head = w;
}

static void dlist_del(struct wcache *c, struct watcher *w)
{
	struct wlist *l = NULL;
	struct watcher **head = &c->unindexed;
	if (w->m.node) {
		l = strmap_get(&c->by_node, w->m.node)->val;
		head = &l->head;
	}
	if (w->dprev)
		w->dprev->dnext = w->dnext;
	else
		*head = w->dnext;
	if (w->dnext)
		w->dnext->dprev = w->dprev;
	if (l && !l->head) {
		strmap_del(&c->by_node, w->m.node, NULL);
		free(l);
	}
}

void watchers_end_all(struct wcache *c, bool with_error)
{
	for (struct watcher *w = c->watchers; w; w = w->next) {
		if (w->ended)
			continue;
		pthread_mutex_lock(&w->mu);
		if (with_error)
			q_push(w, WEV_ERROR, atomic_load(&c->rev), NULL);
		w->ended = true;
		pthread_mutex_unlock(&w->mu);
		w->pending = false;
		w->notify(w->ud);
	}
}

/* API ---------------------------------------------------------------------------------------- */

static void push_initial(void *ud, struct cobj *o)
{
	push(ud, WEV_ADDED, o->rv, o, false);
}

/* Index of the first ring event with rv > from (ring rvs are non-decreasing). */
static size_t ring_after(const struct ring *g, int64_t from)
{
	size_t lo = 0, hi = g->len;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (g->v[(g->head + mid) % g->cap].rv <= from)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static void watcher_destroy(struct watcher *w)
{
	q_clear(w);
	free(w->q);
	pthread_mutex_destroy(&w->mu);
	label_selector_free(w->ls_own);
	field_selector_free(w->fs_own);
	free(w->strs);
	free(w);
}

/* Fills the new watcher's queue with the initial state or the replay (exclusive lock held). */
static int start_locked(struct wcache *c, struct watcher *w, int64_t from_rv)
{
	if (c->dead || !atomic_load(&c->ready))
		return E_UNAVAILABLE;
	int64_t rev = atomic_load(&c->rev);
	if (from_rv <= 0) {
		wcache_scan(c, &w->m, push_initial, w);
		w->from_rv = rev;
		return 0;
	}
	if (from_rv < c->hist_start)
		return E_GONE;
	w->from_rv = from_rv;
	w->last_rv = from_rv;
	for (size_t i = ring_after(&c->ring, from_rv); i < c->ring.len; i++)
		deliver_one(c, w, &c->ring.v[(c->ring.head + i) % c->ring.cap], false);
	return 0;
}

int wcache_watch(struct wcache *c, const struct wfilter *f, int64_t from_rv, size_t max_queue,
		 void (*notify)(void *ud), void *ud, struct watcher **ret)
{
	struct wmatch m;
	struct watcher *w = xcalloc(1, sizeof(*w));
	pthread_mutex_init(&w->mu, NULL);
	wmatch_init(c, f, &m);
	int rc = wmatch_copy(w, &m);
	if (rc != 0) {
		watcher_destroy(w);
		return rc;
	}
	w->c = c;
	w->max_queue = max_queue ? max_queue : DEF_MAX_QUEUE;
	w->notify = notify;
	w->ud = ud;

	wcache_history_wait(c, from_rv);
	pthread_rwlock_wrlock(&c->lock);
	rc = start_locked(c, w, from_rv);
	if (rc != 0) {
		pthread_rwlock_unlock(&c->lock);
		watcher_destroy(w);
		return rc;
	}
	w->next = c->watchers;
	if (c->watchers)
		c->watchers->prev = w;
	c->watchers = w;
	dlist_add(c, w);
	atomic_fetch_add(&c->refs, 1);
	atomic_fetch_add(&watchers_total, 1);
	if (w->pending) {
		w->pending = false;
		w->notify(w->ud);
	}
	pthread_rwlock_unlock(&c->lock);
	*ret = w;
	return 0;
}

int watcher_next(struct watcher *w, struct wevent *ret)
{
	int rc = 0;
	pthread_mutex_lock(&w->mu);
	if (w->qlen > 0) {
		*ret = w->q[w->qhead];
		w->qhead = (w->qhead + 1) % w->qcap;
		w->qlen--;
		if (ret->type != WEV_ERROR && ret->rv > w->last_rv)
			w->last_rv = ret->rv;
		/* the initial state handed out in full: the watcher is at its snapshot revision */
		if (w->initial_left > 0 && --w->initial_left == 0 && w->from_rv > w->last_rv)
			w->last_rv = w->from_rv;
		rc = 1;
	} else if (w->ended) {
		rc = -1;
	}
	pthread_mutex_unlock(&w->mu);
	return rc;
}

int64_t watcher_revision(struct watcher *w)
{
	pthread_mutex_lock(&w->mu);
	int64_t rv = w->last_rv;
	/* c->rev is published after the events up to it were queued, so an empty queue read under
	 * w->mu means this watcher has seen everything up to the revision read now */
	if (w->qlen == 0 && !w->ended) {
		int64_t cr = atomic_load(&w->c->rev);
		if (cr > rv)
			rv = cr;
	}
	pthread_mutex_unlock(&w->mu);
	return rv;
}

void watcher_close(struct watcher *w)
{
	if (!w)
		return;
	struct wcache *c = w->c;
	pthread_rwlock_wrlock(&c->lock);
	if (w->prev)
		w->prev->next = w->next;
	else
		c->watchers = w->next;
	if (w->next)
		w->next->prev = w->prev;
	dlist_del(c, w);
	pthread_rwlock_unlock(&c->lock);
	watcher_destroy(w);
	atomic_fetch_sub(&watchers_total, 1);
	wcache_unref(c);
}
