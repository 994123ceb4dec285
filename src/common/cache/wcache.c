/* The watch cache's store (ordered map + spec.nodeName index), event ring and the application
 * of lists and watch events, progress markers, the history loaded after a restart, and pages at
 * past revisions. Watchers are in watcher.c. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "cache/wcache_types.h"
#include "ursa/errors.h"
#include "ursa/timeutil.h"
#include "ursa/xalloc.h"

#define DEF_HISTORY_MIN 1024
#define DEF_HISTORY_MAX 102400
#define DEF_WINDOW_MS 75000
#define RING_START 64
/* A consistent read first gives the cache this long to catch up by itself (a busy kind's watch
 * is a moment behind) before it writes the progress marker (a quiet kind's never catches up). */
#define PROGRESS_GRACE_MS 2

/* spec.nodeName index ------------------------------------------------------------------------ */

static size_t hash_str(const char *s)
{
	uint64_t h = 1469598103934665603ull;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return (size_t)h;
}

static struct nidx_ent **nidx_slot(const struct nidx *x, const char *node)
{
	struct nidx_ent **p = &x->b[hash_str(node) & (x->nb - 1)];
	while (*p && strcmp((*p)->node, node) != 0)
		p = &(*p)->next;
	return p;
}

static void nidx_grow(struct nidx *x)
{
	size_t nb = x->nb * 2;
	struct nidx_ent **b = xcalloc(nb, sizeof(*b));
	for (size_t i = 0; i < x->nb; i++) {
		struct nidx_ent *e = x->b[i];
		while (e) {
			struct nidx_ent *nx = e->next;
			size_t h = hash_str(e->node) & (nb - 1);
			e->next = b[h];
			b[h] = e;
			e = nx;
		}
	}
	free(x->b);
	x->b = b;
	x->nb = nb;
}

static void nidx_put(struct nidx *x, const char *node, struct cobj *o)
{
	struct nidx_ent **p = nidx_slot(x, node);
	if (!*p) {
		struct nidx_ent *e = xcalloc(1, sizeof(*e));
		e->node = xstrdup(node);
		e->keys = omap_new();
		*p = e;
		if (++x->n > x->nb * 2)
			nidx_grow(x);
		p = nidx_slot(x, node);
	}
	omap_put((*p)->keys, o->key, o);
}

static void nidx_del(struct nidx *x, const char *node, const char *key)
{
	struct nidx_ent **p = nidx_slot(x, node);
	if (!*p)
		return;
	omap_del((*p)->keys, key);
	if (omap_size((*p)->keys) == 0) {
		struct nidx_ent *e = *p;
		*p = e->next;
		omap_free(e->keys, NULL);
		free(e->node);
		free(e);
		x->n--;
	}
}

static struct omap *nidx_get(const struct nidx *x, const char *node)
{
	struct nidx_ent **p = nidx_slot(x, node);
	return *p ? (*p)->keys : NULL;
}

static void nidx_init(struct nidx *x)
{
	x->nb = 64;
	x->n = 0;
	x->b = xcalloc(x->nb, sizeof(*x->b));
}

static void nidx_release(struct nidx *x)
{
	for (size_t i = 0; i < x->nb; i++) {
		struct nidx_ent *e = x->b[i];
		while (e) {
			struct nidx_ent *nx = e->next;
			omap_free(e->keys, NULL);
			free(e->node);
			free(e);
			e = nx;
		}
	}
	free(x->b);
	x->b = NULL;
	x->nb = x->n = 0;
}

/* Store ------------------------------------------------------------------------------------ */

static const char *node_of(const struct wcache *c, const struct cobj *o)
{
	return o->fields[c->node_field];
}

/* The count of tenant's objects in the store moves by d (an entry goes at 0). */
static void tenant_count(struct wcache *c, const char *tenant, int d)
{
	bool created;
	struct strmap_ent *e = strmap_put(&c->by_tenant, tenant, &created);
	if ((e->num += d) <= 0)
		strmap_del(&c->by_tenant, tenant, NULL);
}

/* Takes o's reference; returns the replaced object's reference (or NULL). */
static struct cobj *store_put(struct wcache *c, struct cobj *o)
{
	struct cobj *old = omap_put(c->store, o->key, o);
	trees_drop(c, old);
	if (!old)
		tenant_count(c, o->tenant, 1);
	if (c->node_field >= 0) {
		if (old && strcmp(node_of(c, old), node_of(c, o)) != 0)
			nidx_del(&c->nidx, node_of(c, old), old->key);
		nidx_put(&c->nidx, node_of(c, o), o);
	}
	return old;
}

/* Returns the removed object's reference, or NULL. */
static struct cobj *store_del(struct wcache *c, const char *key)
{
	struct cobj *old = omap_del(c->store, key);
	trees_drop(c, old);
	if (old)
		tenant_count(c, old->tenant, -1);
	if (old && c->node_field >= 0)
		nidx_del(&c->nidx, node_of(c, old), key);
	return old;
}

static void unref_void(void *o)
{
	cobj_unref(o);
}

/* Ring ------------------------------------------------------------------------------------- */

static struct ev_rec *ring_at(const struct ring *g, size_t i)
{
	return &g->v[(g->head + i) % g->cap];
}

static void ev_rec_release(struct ev_rec *e)
{
	cobj_unref(e->obj);
	cobj_unref(e->prev);
	cobj_unref(e->prev_at_rv);
	memset(e, 0, sizeof(*e));
}

static void ring_evict(struct wcache *c)
{
	struct ev_rec *e = ring_at(&c->ring, 0);
	if (e->rv > c->hist_start)
		c->hist_start = e->rv;
	ev_rec_release(e);
	c->ring.head = (c->ring.head + 1) % c->ring.cap;
	c->ring.len--;
}

static void ring_grow(struct ring *g, size_t max)
{
	size_t cap = g->cap ? g->cap * 2 : RING_START;
	if (cap > max)
		cap = max;
	struct ev_rec *v = xcalloc(cap, sizeof(*v));
	for (size_t i = 0; i < g->len; i++)
		v[i] = *ring_at(g, i);
	free(g->v);
	g->v = v;
	g->cap = cap;
	g->head = 0;
}

/* Keeps at least history_min events, at most history_max, and events beyond the minimum only
 * while they are younger than the window. */
static bool ring_too_old(const struct wcache *c, int64_t now)
{
	return c->ring.len > 0 && ring_at(&c->ring, 0)->ts_ms < now - c->window_ms;
}

static struct ev_rec *ring_push(struct wcache *c, const struct ev_rec *e)
{
	struct ring *g = &c->ring;
	if (g->len >= c->history_max || (g->len >= c->history_min && ring_too_old(c, e->ts_ms)))
		ring_evict(c);
	if (g->len == g->cap)
		ring_grow(g, c->history_max);
	struct ev_rec *slot = ring_at(g, g->len);
	*slot = *e;
	g->len++;
	return slot;
}

static void ring_trim(struct wcache *c, int64_t now)
{
	while (c->ring.len > c->history_min && ring_too_old(c, now))
		ring_evict(c);
}

static void ring_release(struct ring *g)
{
	for (size_t i = 0; i < g->len; i++)
		ev_rec_release(ring_at(g, i));
	free(g->v);
	memset(g, 0, sizeof(*g));
}

struct cobj *ev_prev_at_rv(struct wcache *c, struct ev_rec *e)
{
	if (!e->prev_at_rv) {
		e->prev_at_rv = cobj_new(c->r, e->prev->key, e->prev->json, e->prev->json_len, e->rv);
		if (!e->prev_at_rv)
			e->prev_at_rv = cobj_ref(e->prev);
	}
	return e->prev_at_rv;
}

/* The loaded history not yet in the ring (exclusive lock held). */
static void hist_drop(struct wcache *c)
{
	for (size_t i = 0; i < c->nhist; i++)
		ev_rec_release(&c->hist[i]);
	free(c->hist);
	c->hist = NULL;
	c->nhist = c->hist_cap = 0;
}

/* Lifecycle -------------------------------------------------------------------------------- */

static int find_node_field(const struct api_resource *r)
{
	const struct api_strategy *st = r->strategy;
	if (!st || !st->fields)
		return -1;
	for (size_t i = 0; i < st->nfields; i++)
		if (strcmp(st->fields[i].label, "spec.nodeName") == 0)
			return (int)i;
	return -1;
}

struct wcache *wcache_new_detached(const struct api_resource *r, const struct wcache_options *opts)
{
	struct wcache *c = xcalloc(1, sizeof(*c));
	c->r = r;
	if (opts && opts->key_prefix)
		c->key_prefix = xstrdup(opts->key_prefix);
	else
		c->key_prefix = xasprintf("/registry/%s/", r->plural);
	c->history_min = opts && opts->history_min ? opts->history_min : DEF_HISTORY_MIN;
	c->history_max = opts && opts->history_max ? opts->history_max : DEF_HISTORY_MAX;
	if (c->history_max < c->history_min)
		c->history_max = c->history_min;
	c->window_ms = opts && opts->history_window_ms > 0 ? opts->history_window_ms : DEF_WINDOW_MS;
	c->tree_budget = opts ? opts->tree_budget : 0;
	c->node_field = find_node_field(r);

	pthread_rwlockattr_t ra;
	pthread_rwlockattr_init(&ra);
	/* a stream of lists must not starve the watch thread */
	pthread_rwlockattr_setkind_np(&ra, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
	pthread_rwlock_init(&c->lock, &ra);
	pthread_rwlockattr_destroy(&ra);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&c->rev_cond, &ca);
	pthread_condattr_destroy(&ca);
	pthread_mutex_init(&c->rev_mu, NULL);

	c->store = omap_new();
	nidx_init(&c->nidx);
	atomic_init(&c->rev, 0);
	atomic_init(&c->ready, false);
	atomic_init(&c->refs, 1);
	c->now_ms = mono_ms;
	strmap_init(&c->by_node);
	strmap_init(&c->by_tenant);
	hints_init(c);
	c->marker_key = xasprintf("%s" WCACHE_MARKER, c->key_prefix);
	pthread_mutex_init(&c->prog_mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&c->prog_cond, &ca);
	pthread_condattr_destroy(&ca);
	atomic_init(&c->hist_loading, false);
	atomic_init(&c->marker_created, 0);
	return c;
}

void wcache_unref(struct wcache *c)
{
	if (atomic_fetch_sub(&c->refs, 1) != 1)
		return;
	pthread_rwlock_destroy(&c->lock);
	pthread_mutex_destroy(&c->rev_mu);
	pthread_cond_destroy(&c->rev_cond);
	pthread_mutex_destroy(&c->prog_mu);
	pthread_cond_destroy(&c->prog_cond);
	free(c->marker_key);
	hints_release(c);
	strmap_release(&c->by_node, free); /* empty: every watcher was closed */
	free(c->pending);
	free(c->key_prefix);
	free(c);
}

void wcache_free(struct wcache *c)
{
	if (!c)
		return;
	if (c->driver_stop)
		c->driver_stop(c->driver);
	pthread_rwlock_wrlock(&c->lock);
	c->dead = true;
	atomic_store(&c->ready, false);
	watchers_end_all(c, false);
	struct omap *store = c->store;
	struct ring ring = c->ring;
	nidx_release(&c->nidx);
	strmap_release(&c->by_tenant, NULL);
	trees_drop_all(c);
	hist_drop(c);
	c->store = NULL;
	memset(&c->ring, 0, sizeof(c->ring));
	pthread_rwlock_unlock(&c->lock);
	omap_free(store, unref_void);
	ring_release(&ring);
	wcache_unref(c);
}

void wcache_set_driver(struct wcache *c, void *driver, void (*stop)(void *driver))
{
	c->driver = driver;
	c->driver_stop = stop;
}

const char *wcache_key_prefix(const struct wcache *c)
{
	return c->key_prefix;
}

const struct api_resource *wcache_resource(const struct wcache *c)
{
	return c->r;
}

void wcache_set_clock(struct wcache *c, int64_t (*clock_ms)(void))
{
	pthread_rwlock_wrlock(&c->lock);
	c->now_ms = clock_ms ? clock_ms : mono_ms;
	pthread_rwlock_unlock(&c->lock);
}

size_t wcache_history_len(struct wcache *c)
{
	pthread_rwlock_rdlock(&c->lock);
	size_t n = c->ring.len;
	pthread_rwlock_unlock(&c->lock);
	return n;
}

int64_t wcache_history_start(struct wcache *c)
{
	pthread_rwlock_rdlock(&c->lock);
	int64_t r = c->hist_start;
	pthread_rwlock_unlock(&c->lock);
	return r;
}

int64_t wcache_tenant_last_change(struct wcache *c, const char *tenant)
{
	pthread_rwlock_rdlock(&c->lock);
	int64_t r = c->hist_start; /* every event after it is in the ring */
	for (size_t i = c->ring.len; i-- > 0;) {
		const struct ev_rec *e = ring_at(&c->ring, i);
		if (e->obj && strcmp(e->obj->tenant, tenant) == 0) {
			r = e->rv;
			break;
		}
	}
	pthread_rwlock_unlock(&c->lock);
	return r;
}

bool wcache_ready(const struct wcache *c)
{
	return atomic_load((atomic_bool *)&c->ready);
}

int64_t wcache_revision(const struct wcache *c)
{
	return atomic_load((_Atomic int64_t *)&c->rev);
}

static void publish_rev(struct wcache *c, int64_t rev)
{
	pthread_mutex_lock(&c->rev_mu);
	atomic_store(&c->rev, rev);
	pthread_cond_broadcast(&c->rev_cond);
	pthread_mutex_unlock(&c->rev_mu);
}

int wcache_wait_for(struct wcache *c, int64_t rv, int64_t timeout_ms)
{
	struct timespec dl;
	mono_deadline(&dl, timeout_ms < 0 ? 0 : timeout_ms);
	int rc = 0;
	pthread_mutex_lock(&c->rev_mu);
	while (atomic_load(&c->rev) < rv) {
		if (pthread_cond_timedwait(&c->rev_cond, &c->rev_mu, &dl) == ETIMEDOUT) {
			rc = atomic_load(&c->rev) >= rv ? 0 : E_TIMEOUT;
			break;
		}
	}
	pthread_mutex_unlock(&c->rev_mu);
	return rc;
}

/* Applying lists and events ------------------------------------------------------------------ */

void wcache_install(struct wcache *c, struct cobj **objs, size_t n, int64_t rev)
{
	struct omap *store = omap_new();
	for (size_t i = 0; i < n; i++)
		cobj_unref(omap_put(store, objs[i]->key, objs[i]));
	pthread_rwlock_wrlock(&c->lock);
	if (c->dead) {
		pthread_rwlock_unlock(&c->lock);
		omap_free(store, unref_void);
		return;
	}
	/* history is gone: watchers cannot be resumed consistently, so they start over (410) */
	watchers_end_all(c, true);
	struct omap *old = c->store;
	struct ring ring = c->ring;
	memset(&c->ring, 0, sizeof(c->ring));
	trees_drop_all(c);
	c->store = store;
	nidx_release(&c->nidx);
	nidx_init(&c->nidx);
	strmap_release(&c->by_tenant, NULL);
	strmap_init(&c->by_tenant);
	for (struct omap_node *x = omap_first(store); x; x = omap_next(x)) {
		if (c->node_field >= 0)
			nidx_put(&c->nidx, node_of(c, x->val), x->val);
		tenant_count(c, ((struct cobj *)x->val)->tenant, 1);
	}
	c->list_rev = c->hist_start = rev;
	hints_clear(c); /* the events of the writes they were for are part of the list, or lost */
	atomic_store(&c->ready, true);
	publish_rev(c, rev);
	pthread_rwlock_unlock(&c->lock);
	omap_free(old, unref_void);
	ring_release(&ring);
}

void wcache_apply_list(struct wcache *c, const struct etcd_kv *kvs, size_t n, int64_t rev)
{
	struct cobj **objs = xcalloc(n ? n : 1, sizeof(*objs));
	size_t k = 0;
	int64_t marker = 0;
	for (size_t i = 0; i < n; i++) {
		if (wcache_is_marker(c, kvs[i].key)) {
			marker = kvs[i].create_rev;
			continue;
		}
		struct cobj *o = cobj_new(c->r, kvs[i].key, kvs[i].value, kvs[i].value_len, kvs[i].mod_rev);
		if (o)
			objs[k++] = o;
	}
	atomic_store(&c->marker_created, marker);
	wcache_install(c, objs, k, rev);
	free(objs);
}

/* Builds the ring record of one etcd event; false when it changes nothing visible. */
static bool apply_one(struct wcache *c, const struct etcd_event *ev, int64_t now, struct ev_rec *ret)
{
	int64_t rv = ev->kv.mod_rev;
	memset(ret, 0, sizeof(*ret));
	ret->rv = rv;
	ret->ts_ms = now;
	if (ev->type == ETCD_EV_PUT) {
		/* a value that does not parse is not ours to serve: the old state stays */
		json_t *tree = hints_take(c, ev->kv.key, ev->kv.value, ev->kv.value_len);
		struct cobj *o = tree ? cobj_new_tree(c->r, ev->kv.key, ev->kv.value, ev->kv.value_len, rv, tree)
				      : cobj_new(c->r, ev->kv.key, ev->kv.value, ev->kv.value_len, rv);
		if (!o) {
			json_decref(tree);
			return false;
		}
		ret->prev = store_put(c, o);
		if (tree)
			trees_keep(c, o, tree);
		json_decref(tree);
		ret->obj = cobj_ref(o);
		ret->type = ret->prev ? WEV_MODIFIED : WEV_ADDED;
		return true;
	}
	json_decref(hints_take(c, ev->kv.key, NULL, 0));
	struct cobj *old = store_del(c, ev->kv.key);
	if (!old)
		return false;
	ret->type = WEV_DELETED;
	ret->obj = cobj_new(c->r, old->key, old->json, old->json_len, rv);
	if (!ret->obj)
		ret->obj = cobj_ref(old);
	ret->prev = old; /* the state a page at an earlier revision shows (wcache_list_page) */
	return true;
}

void wcache_apply_events(struct wcache *c, const struct etcd_event *evs, size_t n)
{
	pthread_rwlock_wrlock(&c->lock);
	if (c->dead) {
		pthread_rwlock_unlock(&c->lock);
		return;
	}
	int64_t now = c->now_ms();
	int64_t rev = atomic_load(&c->rev);
	for (size_t i = 0; i < n; i++) {
		int64_t rv = evs[i].kv.mod_rev;
		if (rv <= c->list_rev || rv < rev)
			continue; /* already part of the list, or a replay */
		if (wcache_is_marker(c, evs[i].kv.key)) { /* progress only: never an object */
			atomic_store(&c->marker_created, evs[i].type == ETCD_EV_PUT ? evs[i].kv.create_rev : 0);
			rev = rv;
			continue;
		}
		struct ev_rec rec;
		if (apply_one(c, &evs[i], now, &rec))
			watchers_deliver(c, ring_push(c, &rec));
		rev = rv;
	}
	ring_trim(c, now);
	if (rev != atomic_load(&c->rev))
		publish_rev(c, rev);
	watchers_flush(c);
	pthread_rwlock_unlock(&c->lock);
}

/* Reads -------------------------------------------------------------------------------------- */

/* Appends the key prefix that m pins down; returns true when it pins tenant (and namespace) as
 * far as the scope goes, so that prefix + name is a full key. */
static bool match_prefix(const struct wcache *c, const struct wmatch *m, struct buf *out)
{
	buf_adds(out, c->key_prefix);
	if (c->r->scope == SCOPE_CLUSTER)
		return true;
	if (!m->tenant)
		return false;
	buf_adds(out, m->tenant);
	buf_addch(out, '/');
	if (c->r->scope == SCOPE_TENANT)
		return true;
	if (!m->ns)
		return false;
	buf_adds(out, m->ns);
	buf_addch(out, '/');
	return true;
}

void wcache_scan(struct wcache *c, const struct wmatch *m, void (*fn)(void *ud, struct cobj *o), void *ud)
{
	struct buf prefix = BUF_INIT;
	bool full = match_prefix(c, m, &prefix);
	if (full && m->name) {
		buf_adds(&prefix, m->name);
		struct cobj *o = omap_get(c->store, buf_cstr(&prefix));
		if (o && wmatch_test(c, m, o))
			fn(ud, o);
		goto out;
	}
	struct omap *map = c->store;
	if (m->node && !(map = nidx_get(&c->nidx, m->node)))
		goto out;
	const char *p = buf_cstr(&prefix);
	for (struct omap_node *x = omap_lower_bound(map, p); x; x = omap_next(x)) {
		if (strncmp(x->key, p, prefix.len) != 0)
			break;
		if (wmatch_test(c, m, x->val))
			fn(ud, x->val);
	}
out:
	buf_release(&prefix);
}

struct collect {
	struct cobj **v;
	size_t n, alloc;
};

static void collect_one(void *ud, struct cobj *o)
{
	struct collect *a = ud;
	if (a->n == a->alloc) {
		a->alloc = a->alloc ? a->alloc * 2 : 64;
		a->v = xrealloc(a->v, a->alloc * sizeof(*a->v));
	}
	a->v[a->n++] = cobj_ref(o);
}

int wcache_list(struct wcache *c, const struct wfilter *f, struct cobj ***ret_objs, size_t *ret_n, int64_t *ret_rv)
{
	struct wmatch m;
	struct collect a = { NULL, 0, 0 };
	wmatch_init(c, f, &m);
	pthread_rwlock_rdlock(&c->lock);
	if (!atomic_load(&c->ready)) {
		pthread_rwlock_unlock(&c->lock);
		return E_UNAVAILABLE;
	}
	wcache_scan(c, &m, collect_one, &a);
	*ret_rv = atomic_load(&c->rev);
	pthread_rwlock_unlock(&c->lock);
	*ret_objs = a.v ? a.v : xcalloc(1, sizeof(*a.v));
	*ret_n = a.n;
	return 0;
}

struct cobj *wcache_get(struct wcache *c, const char *key)
{
	pthread_rwlock_rdlock(&c->lock);
	struct cobj *o = cobj_ref(omap_get(c->store, key));
	pthread_rwlock_unlock(&c->lock);
	return o;
}

size_t wcache_tenant_size(struct wcache *c, const char *tenant)
{
	pthread_rwlock_rdlock(&c->lock);
	struct strmap_ent *e = strmap_get(&c->by_tenant, tenant);
	size_t n = e ? (size_t)e->num : 0;
	pthread_rwlock_unlock(&c->lock);
	return n;
}

size_t wcache_size(struct wcache *c)
{
	pthread_rwlock_rdlock(&c->lock);
	size_t n = omap_size(c->store);
	pthread_rwlock_unlock(&c->lock);
	return n;
}

void wcache_end_watchers(struct wcache *c)
{
	pthread_rwlock_wrlock(&c->lock);
	watchers_end_all(c, false);
	pthread_rwlock_unlock(&c->lock);
}

/* Progress markers ----------------------------------------------------------------------------- */

bool wcache_marker_key(const char *prefix, const char *key)
{
	size_t n = strlen(prefix);
	return strncmp(key, prefix, n) == 0 && strcmp(key + n, WCACHE_MARKER) == 0;
}

bool wcache_is_marker(const struct wcache *c, const char *key)
{
	return key && strcmp(key, c->marker_key) == 0;
}

const char *wcache_marker(const struct wcache *c)
{
	return c->marker_key;
}

void wcache_set_progress(struct wcache *c, int (*fn)(void *ud, const char *key, int64_t *ret_rev), void *ud,
			 const char *marker_key)
{
	c->progress = fn;
	c->progress_ud = ud;
	if (marker_key) {
		free(c->marker_key);
		c->marker_key = xstrdup(marker_key);
	}
}

void wcache_set_marker_created(struct wcache *c, int64_t rev)
{
	atomic_store(&c->marker_created, rev);
}

int64_t wcache_marker_created(struct wcache *c)
{
	return atomic_load(&c->marker_created);
}

static int64_t ms_left(const struct timespec *dl)
{
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	int64_t ms = (int64_t)(dl->tv_sec - now.tv_sec) * 1000 + (dl->tv_nsec - now.tv_nsec) / 1000000;
	return ms > 0 ? ms : 0;
}

/* Writes the progress marker: called and returns with prog_mu held, no write in flight; the
 * lock is dropped for the write. Records the marker's revision and wakes every waiter. 0 or the
 * write's error. */
static int marker_write(struct wcache *c)
{
	c->prog_inflight = true;
	pthread_mutex_unlock(&c->prog_mu);
	int64_t mrev = 0;
	int prc = c->progress(c->progress_ud, c->marker_key, &mrev);
	pthread_mutex_lock(&c->prog_mu);
	c->prog_inflight = false;
	if (prc == 0 && mrev > c->prog_rev)
		c->prog_rev = mrev;
	pthread_cond_broadcast(&c->prog_cond);
	return prc;
}

int wcache_wait_current(struct wcache *c, int64_t rv, int64_t timeout_ms)
{
	if (wcache_revision(c) >= rv)
		return 0;
	int64_t grace = timeout_ms < PROGRESS_GRACE_MS ? timeout_ms : PROGRESS_GRACE_MS;
	if (!c->progress || wcache_wait_for(c, rv, grace) == 0)
		return c->progress ? 0 : wcache_wait_for(c, rv, timeout_ms);
	struct timespec dl;
	mono_deadline(&dl, timeout_ms);
	int rc = 0;
	pthread_mutex_lock(&c->prog_mu);
	for (;;) {
		if (wcache_revision(c) >= rv)
			break;
		if (c->prog_rev >= rv) { /* a marker at or after rv is written: its event brings the cache there */
			pthread_mutex_unlock(&c->prog_mu);
			return wcache_wait_for(c, rv, ms_left(&dl));
		}
		if (c->prog_inflight) { /* another reader's marker: it may be after rv */
			if (pthread_cond_timedwait(&c->prog_cond, &c->prog_mu, &dl) == ETIMEDOUT) {
				rc = wcache_revision(c) >= rv ? 0 : E_TIMEOUT;
				break;
			}
			continue;
		}
		int prc = marker_write(c);
		if (prc != 0) {
			rc = prc;
			break;
		}
	}
	pthread_mutex_unlock(&c->prog_mu);
	return rc;
}

/* Progress for a quiet cache: the marker written without waiting for its event. */
bool wcache_nudge(struct wcache *c, int64_t rv)
{
	if (!c->progress || !wcache_ready(c) || wcache_revision(c) >= rv)
		return false;
	pthread_mutex_lock(&c->prog_mu);
	if (c->prog_inflight || c->prog_rev >= rv) {
		pthread_mutex_unlock(&c->prog_mu);
		return false;
	}
	int prc = marker_write(c);
	pthread_mutex_unlock(&c->prog_mu);
	return prc == 0;
}

/* History before the first list -------------------------------------------------------------- */

void wcache_history_begin(struct wcache *c, int64_t from_rv)
{
	pthread_rwlock_wrlock(&c->lock);
	hist_drop(c);
	c->hist_from = from_rv;
	mono_deadline(&c->hist_wait_until, WCACHE_HISTORY_WAIT_MS);
	atomic_store(&c->hist_loading, true);
	pthread_rwlock_unlock(&c->lock);
}

bool wcache_history_loading(struct wcache *c)
{
	return atomic_load(&c->hist_loading);
}

/* The ring record of one watch event with prev_kv; false when there is nothing to record. */
static bool hist_rec(struct wcache *c, const struct etcd_event *ev, int64_t now, struct ev_rec *ret)
{
	const struct etcd_kv *kv = &ev->kv, *pk = &ev->prev_kv;
	memset(ret, 0, sizeof(*ret));
	ret->rv = kv->mod_rev;
	ret->ts_ms = now;
	if (!kv->key || wcache_is_marker(c, kv->key))
		return false;
	if (pk->key)
		ret->prev = cobj_new(c->r, pk->key, pk->value, pk->value_len, pk->mod_rev);
	if (ev->type == ETCD_EV_PUT) {
		ret->obj = cobj_new(c->r, kv->key, kv->value, kv->value_len, kv->mod_rev);
		/* a change etcd sent no previous state for (it should not happen: the history starts
		 * after any compaction) is shown as a change from the same state */
		if (!ret->prev && kv->version > 1 && ret->obj)
			ret->prev = cobj_ref(ret->obj);
		ret->type = ret->prev ? WEV_MODIFIED : WEV_ADDED;
	} else if (ret->prev) {
		ret->type = WEV_DELETED;
		ret->obj = cobj_new(c->r, pk->key, pk->value, pk->value_len, kv->mod_rev);
	}
	if (!ret->obj) {
		ev_rec_release(ret);
		return false;
	}
	return true;
}

void wcache_history_add(struct wcache *c, const struct etcd_event *evs, size_t n)
{
	struct ev_rec *v = xcalloc(n ? n : 1, sizeof(*v));
	size_t k = 0;
	int64_t now = c->now_ms();
	for (size_t i = 0; i < n; i++)
		if (hist_rec(c, &evs[i], now, &v[k]))
			k++;
	pthread_rwlock_wrlock(&c->lock);
	if (!atomic_load(&c->hist_loading) || c->dead) {
		pthread_rwlock_unlock(&c->lock);
		for (size_t i = 0; i < k; i++)
			ev_rec_release(&v[i]);
		free(v);
		return;
	}
	for (size_t i = 0; i < k; i++) {
		if (c->nhist == c->history_max) { /* only the newest history_max can be kept */
			ev_rec_release(&c->hist[0]);
			memmove(c->hist, c->hist + 1, (c->nhist - 1) * sizeof(*c->hist));
			c->nhist--;
			if (c->hist[0].rv - 1 > c->hist_from)
				c->hist_from = c->hist[0].rv - 1;
		}
		if (c->nhist == c->hist_cap) {
			c->hist_cap = c->hist_cap ? c->hist_cap * 2 : 64;
			c->hist = xrealloc(c->hist, c->hist_cap * sizeof(*c->hist));
		}
		c->hist[c->nhist++] = v[i];
	}
	pthread_rwlock_unlock(&c->lock);
	free(v);
}

static void hist_wake(struct wcache *c)
{
	pthread_mutex_lock(&c->rev_mu);
	pthread_cond_broadcast(&c->rev_cond);
	pthread_mutex_unlock(&c->rev_mu);
}

void wcache_history_end(struct wcache *c, bool ok)
{
	pthread_rwlock_wrlock(&c->lock);
	/* the ring must still start at the list (nothing evicted) for the history to join it */
	if (ok && atomic_load(&c->hist_loading) && !c->dead && c->hist_start == c->list_rev &&
	    c->hist_from < c->list_rev) {
		struct ring *g = &c->ring;
		size_t total = c->nhist + g->len, skip = 0;
		if (total > c->history_max)
			skip = total - c->history_max < c->nhist ? total - c->history_max : c->nhist;
		int64_t from = c->hist_from;
		for (size_t i = 0; i < skip; i++) {
			from = c->hist[i].rv;
			ev_rec_release(&c->hist[i]);
		}
		size_t cap = total - skip > RING_START ? total - skip : RING_START;
		if (cap < g->cap)
			cap = g->cap;
		struct ev_rec *v = xcalloc(cap, sizeof(*v));
		size_t k = 0;
		for (size_t i = skip; i < c->nhist; i++)
			v[k++] = c->hist[i];
		for (size_t i = 0; i < g->len && k < cap; i++)
			v[k++] = *ring_at(g, i);
		free(g->v);
		g->v = v;
		g->cap = cap;
		g->head = 0;
		g->len = k;
		c->hist_start = from;
		free(c->hist);
		c->hist = NULL;
		c->nhist = c->hist_cap = 0;
	}
	hist_drop(c);
	atomic_store(&c->hist_loading, false);
	pthread_rwlock_unlock(&c->lock);
	hist_wake(c);
}

/* Waits while from_rv is in the history being loaded, at most until WCACHE_HISTORY_WAIT_MS after
 * the load began (not after the call: a multiplexed watch's thousands of watches share it). */
void wcache_history_wait(struct wcache *c, int64_t from_rv)
{
	if (from_rv <= 0 || !atomic_load(&c->hist_loading))
		return;
	pthread_rwlock_rdlock(&c->lock);
	bool inside = from_rv >= c->hist_from && from_rv < c->hist_start;
	struct timespec dl = c->hist_wait_until; /* one budget for every wait on this load */
	pthread_rwlock_unlock(&c->lock);
	if (!inside)
		return;
	pthread_mutex_lock(&c->rev_mu);
	while (atomic_load(&c->hist_loading))
		if (pthread_cond_timedwait(&c->rev_cond, &c->rev_mu, &dl) == ETIMEDOUT)
			break;
	pthread_mutex_unlock(&c->rev_mu);
}

/* Pages at past revisions ---------------------------------------------------------------------- */

/* A key's state at a past revision (wcache_list_page). */
struct past {
	const char *key;
	struct cobj *obj; /* borrowed from the ring; NULL: absent at that revision */
};

static int past_cmp(const void *a, const void *b)
{
	return strcmp(((const struct past *)a)->key, ((const struct past *)b)->key);
}

/* The keys the ring's events after at_rv touched, with their state at at_rv, sorted by key:
 * the earliest such event of a key tells it (ADDED: absent; MODIFIED and DELETED: its prev).
 * Lock held; the result borrows from the ring. */
static struct past *past_states(struct wcache *c, int64_t at_rv, size_t *ret_n)
{
	struct strmap seen;
	strmap_init(&seen);
	for (size_t i = c->ring.len; i-- > 0;) {
		struct ev_rec *e = ring_at(&c->ring, i);
		if (e->rv <= at_rv)
			break;
		strmap_put(&seen, e->obj->key, NULL)->val = e; /* walking back: ends at the earliest */
	}
	struct past *v = xcalloc(seen.n ? seen.n : 1, sizeof(*v));
	size_t n = 0, it = 0;
	for (struct strmap_ent *e = strmap_next(&seen, NULL, &it); e; e = strmap_next(&seen, e, &it)) {
		struct ev_rec *r = e->val;
		v[n].key = r->obj->key;
		v[n++].obj = r->type == WEV_ADDED ? NULL : r->prev;
	}
	strmap_release(&seen, NULL);
	qsort(v, n, sizeof(*v), past_cmp);
	*ret_n = n;
	return v;
}

int wcache_list_page(struct wcache *c, const struct wfilter *f, const char *after, int64_t at_rv, size_t limit,
		     struct cobj ***ret_objs, size_t *ret_n, int64_t *ret_rv)
{
	struct wmatch m;
	struct collect a = { NULL, 0, 0 };
	struct buf prefix = BUF_INIT;
	wmatch_init(c, f, &m);
	pthread_rwlock_rdlock(&c->lock);
	int64_t rev = atomic_load(&c->rev);
	if (!atomic_load(&c->ready) || c->dead) {
		pthread_rwlock_unlock(&c->lock);
		return E_UNAVAILABLE;
	}
	if (at_rv <= 0)
		at_rv = rev;
	/* before the last full list only a loaded history could tell, and it may lack prev states */
	if (at_rv > rev || at_rv < c->hist_start || at_rv < c->list_rev) {
		pthread_rwlock_unlock(&c->lock);
		return E_GONE;
	}
	size_t np = 0, pi = 0;
	struct past *pv = at_rv < rev ? past_states(c, at_rv, &np) : NULL;
	if (match_prefix(c, &m, &prefix) && m.name)
		buf_adds(&prefix, m.name); /* keys of that name (and longer ones wmatch_test drops) */
	const char *p = buf_cstr(&prefix);
	const char *from = after && strcmp(after, p) > 0 ? after : p;
	while (pi < np && strcmp(pv[pi].key, from) < 0)
		pi++;
	struct omap *map = c->store;
	if (m.node)
		map = nidx_get(&c->nidx, m.node);
	struct omap_node *x = map ? omap_lower_bound(map, from) : NULL;
	for (;;) {
		if (limit && a.n > limit)
			break;
		const char *xk = x && strncmp(x->key, p, prefix.len) == 0 ? x->key : NULL;
		const char *pk = pi < np && strncmp(pv[pi].key, p, prefix.len) == 0 ? pv[pi].key : NULL;
		if (!xk && !pk)
			break;
		struct cobj *o;
		int cmp = !xk ? 1 : !pk ? -1 : strcmp(xk, pk);
		if (cmp < 0) { /* untouched since at_rv: its current state is the one at at_rv */
			o = x->val;
			x = omap_next(x);
		} else { /* touched since: pv has its state at at_rv (the current one is skipped) */
			o = pv[pi++].obj;
			if (cmp == 0)
				x = omap_next(x);
		}
		if (!o || (after && strcmp(o->key, after) <= 0))
			continue;
		if (wmatch_test(c, &m, o))
			collect_one(&a, o);
	}
	pthread_rwlock_unlock(&c->lock);
	free(pv);
	buf_release(&prefix);
	*ret_objs = a.v ? a.v : xcalloc(1, sizeof(*a.v));
	*ret_n = a.n;
	*ret_rv = at_rv;
	return 0;
}
