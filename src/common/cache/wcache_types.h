/* The watch cache's private structures, shared by wcache.c (store, ring, event application)
 * and watcher.c (filters, watcher queues, delivery). Not a public interface.
 *
 * Locking: c->lock (rwlock) guards the store, the node index, the ring, the watcher list and
 * each watcher's filter and `pending`/`ended` flags (`ended` is also written under w->mu).
 * Readers (list/get) take it shared; event application, watch registration and watcher_close
 * take it exclusive. w->mu guards a watcher's queue, taken after c->lock, never before.
 * c->rev is published (atomically) only after the events up to it were queued to watchers.
 * c->hint_mu guards the write hints (hint.c); taken alone or after c->lock, never before. */
#ifndef URSA_CACHE_WCACHE_TYPES_H
#define URSA_CACHE_WCACHE_TYPES_H
#include <pthread.h>
#include "cache/omap.h"
#include "cache/wcache_internal.h"
#include "ursa/strmap.h"

/* One applied change, as kept in the ring. */
struct ev_rec {
	enum wev_type type;      /* ADDED, MODIFIED or DELETED */
	int64_t rv;
	int64_t ts_ms;           /* when applied, for the history window */
	struct cobj *obj;        /* new state; for DELETED the last state at the deletion revision */
	struct cobj *prev;       /* MODIFIED and DELETED: the state before (ref); NULL for ADDED (and
				    for a loaded history event etcd sent no previous state for) */
	struct cobj *prev_at_rv; /* MODIFIED: prev's content at revision rv, built on first need: a
				    watcher whose selector stops matching gets it as DELETED */
};

struct ring {
	struct ev_rec *v;
	size_t cap, head, len; /* logical i is v[(head + i) % cap]; rv is non-decreasing in i */
};

/* spec.nodeName -> ordered map key -> cobj (borrowed from the store). */
struct nidx_ent {
	char *node;
	struct omap *keys;
	struct nidx_ent *next;
};
struct nidx {
	struct nidx_ent **b;
	size_t nb, n;
};

/* A prepared filter. Strings NULL = any; scope-irrelevant parts are NULL. */
struct wmatch {
	const char *tenant, *ns, *name;
	const struct label_selector *ls;
	const struct field_selector *fs;
	const char *node; /* spec.nodeName=X when the cache indexes it, else NULL */
};

struct watcher;

struct wcache {
	const struct api_resource *r;
	char *key_prefix;
	size_t history_min, history_max;
	int64_t window_ms;
	int node_field; /* index of the "spec.nodeName" field in r->strategy->fields, or -1 */

	pthread_rwlock_t lock;
	struct omap *store; /* key -> cobj (one ref each) */
	struct nidx nidx;
	struct ring ring;
	int64_t list_rev;   /* revision of the last full list */
	int64_t hist_start; /* watches from rv >= hist_start can be replayed */
	struct watcher *watchers; /* every open watcher, doubly linked (prev/next) */
	/* Delivery: an event goes to the watchers without a spec.nodeName filter and to those
	 * whose filter names the node of its object (or of the object's previous state) — not to
	 * every kubelet's watch of the partition. Lists linked by dprev/dnext. */
	struct watcher *unindexed;
	struct strmap by_node;    /* node -> struct wlist (never empty) */
	struct strmap by_tenant;  /* tenant -> its objects in the store (num), under lock */
	struct watcher **pending; /* got events in the current batch: notified at its end */
	size_t npending, pending_cap;
	bool dead;          /* wcache_free ran; only watcher_close may still use the struct */

	_Atomic int64_t rev;
	atomic_bool ready;
	_Atomic int64_t marker_created; /* create revision of the progress marker seen, 0: none */
	atomic_int refs;    /* 1 for the owner + 1 per open watcher */

	pthread_mutex_t rev_mu;
	pthread_cond_t rev_cond;

	int64_t (*now_ms)(void);
	void *driver;
	void (*driver_stop)(void *driver);

	/* Progress markers (wcache_wait_current): key prefix + WCACHE_MARKER, or the mux's. */
	char *marker_key;
	int (*progress)(void *ud, const char *key, int64_t *ret_rev); /* writes the marker */
	void *progress_ud;
	pthread_mutex_t prog_mu;
	pthread_cond_t prog_cond;
	bool prog_inflight;       /* under prog_mu: a marker write is in flight */
	int64_t prog_rev;         /* under prog_mu: revision of the newest marker written */

	/* History before the first list, being loaded (wcache_history_*; under lock). While
	 * hist_loading, watches from hist_from .. hist_start wait for it (rev_cond is broadcast when
	 * it ends). */
	atomic_bool hist_loading;
	int64_t hist_from;
	struct timespec hist_wait_until; /* CLOCK_MONOTONIC: every wait for this load ends by then
					    (one budget for all: a multiplexed watch opens thousands) */
	struct ev_rec *hist;
	size_t nhist, hist_cap;

	pthread_mutex_t hint_mu;
	struct strmap hints;   /* key -> struct hint * */
	atomic_size_t nhints;  /* hints.n, readable without the mutex */

	/* trees.c: objects holding a tree, oldest first (linked by tprev/tnext; under lock) */
	struct cobj *trees_head, *trees_tail;
	size_t tree_bytes, tree_budget;
};

/* hint.c: write hints (wcache_expect). */
void hints_init(struct wcache *c);
void hints_release(struct wcache *c);
/* Takes the hint for key away; returns its tree (new reference) if it was made for exactly
 * value, else NULL. */
json_t *hints_take(struct wcache *c, const char *key, const char *value, size_t len);
void hints_clear(struct wcache *c);

/* trees.c: trees of recent writes (wcache_get_tree); exclusive lock held. */
/* o (just stored) keeps tree, a new reference; older trees go while over the budget. */
void trees_keep(struct wcache *c, struct cobj *o, json_t *tree);
/* Drops o's tree, if it holds one (o leaves the store, or is replaced). NULL is fine. */
void trees_drop(struct wcache *c, struct cobj *o);
void trees_drop_all(struct wcache *c);

struct wlist {
	struct watcher *head;
};

struct watcher {
	struct wcache *c;
	struct watcher *prev, *next;   /* every watcher of c */
	struct watcher *dprev, *dnext; /* its delivery list: c->unindexed or c->by_node[m.node] */
	struct wmatch m;
	char *strs;                    /* owns m.tenant/ns/name/node */
	struct label_selector *ls_own; /* owned copies behind m.ls/m.fs */
	struct field_selector *fs_own;
	int64_t from_rv;               /* live events at or below are skipped */
	size_t max_queue;
	void (*notify)(void *ud);
	void *ud;
	bool pending;                  /* got events in the current batch: notify at its end */
	bool ended;                    /* no more events after the queue drains */

	pthread_mutex_t mu;
	struct wevent *q;
	size_t qcap, qhead, qlen;
	size_t initial_left;           /* queued synthetic/replayed events (not counted against the cap) */
	int64_t last_rv;
};

/* wcache.c */
void wcache_unref(struct wcache *c);
struct cobj *ev_prev_at_rv(struct wcache *c, struct ev_rec *e);
/* Waits (no lock held) while from_rv lies in the history being loaded, until
 * WCACHE_HISTORY_WAIT_MS after the load began. */
void wcache_history_wait(struct wcache *c, int64_t from_rv);
/* Calls fn on each object matching m, in key order (lock held by the caller). */
void wcache_scan(struct wcache *c, const struct wmatch *m, void (*fn)(void *ud, struct cobj *o), void *ud);

/* watcher.c */
/* Fills m from f (borrowed pointers into f). */
void wmatch_init(const struct wcache *c, const struct wfilter *f, struct wmatch *m);
bool wmatch_test(const struct wcache *c, const struct wmatch *m, const struct cobj *o);
/* Delivers one ring event to every watcher (exclusive lock held). */
void watchers_deliver(struct wcache *c, struct ev_rec *e);
/* Calls notify for watchers that got events in this batch (exclusive lock held); every
 * watchers_deliver is followed by it under the same lock. */
void watchers_flush(struct wcache *c);
/* Ends every watcher, with a queued ERROR if with_error (exclusive lock held). */
void watchers_end_all(struct wcache *c, bool with_error);

#endif
