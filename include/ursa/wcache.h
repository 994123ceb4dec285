/* The watch cache of one resource: the current objects (fed by one etcd watch) plus a ring
 * of recent events. It serves lists at resourceVersion 0 / NotOlderThan, consistent lists once
 * it has caught up with etcd (wcache_wait_current), their pages, and every watch.
 *
 * Threads: the etcd watch thread applies changes; request threads list and register watchers;
 * watchers are woken through a callback (e.g. to resume a suspended HTTP connection). All
 * functions are thread-safe. */
#ifndef URSA_WCACHE_H
#define URSA_WCACHE_H
#include <jansson.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include "ursa/api.h"
#include "ursa/buf.h"
#include "ursa/etcd.h"
#include "ursa/selector.h"

/* An immutable, reference-counted cached object, shared by the store, the event ring and
 * watchers. Built once per change, so serving it costs no parsing. */
struct cobj {
	atomic_int refs;
	int64_t rv;           /* etcd mod_revision (metadata.resourceVersion is rv_show(rv), revision.h) */
	char *key;            /* etcd key */
	char *json;           /* the object, compact JSON, with metadata.resourceVersion set */
	size_t json_len;
	const char *tenant;   /* "" for cluster-scoped */
	const char *ns;       /* "" unless namespaced */
	const char *name;
	json_t *labels;       /* metadata.labels (new ref owned by cobj) or NULL */
	char **fields;        /* values of strategy->fields[i].path, rendered as json_path_scalar */
	size_t nfields;
	/* The parsed value of a recent write through this server (wcache_get_tree) or NULL, and
	 * the cache's oldest-first list of such objects: the one part that changes after the
	 * object is published, always under its cache's lock. */
	json_t *tree;
	struct cobj *tprev, *tnext;
	bool plain;           /* built by cobj_new_fast: json is of its plain form (cobj_text_paths) */
};
/* Builds a cobj from an etcd value (the stored JSON) at mod_rev; NULL if it does not parse.
 * The returned reference is new (refs == 1). */
struct cobj *cobj_new(const struct api_resource *r, const char *key, const char *value, size_t len, int64_t mod_rev);
/* cobj_new's fast path alone: the object straight from the text when the text is of the plain
 * form our API servers store (compact, ASCII, no \u escapes, ...), else NULL (not a verdict on
 * the text: cobj_new then parses it). Equal to what cobj_new's parse would build. */
struct cobj *cobj_new_fast(const struct api_resource *r, const char *key, const char *value, size_t len,
			   int64_t mod_rev);
/* The JSON text of the values at dotted paths (as json_path) in o->json, without parsing it:
 * spans[i] points into o->json, or is { NULL, 0 } when paths[i] is absent. -1 when o's text is
 * not of the plain form cobj_new_fast takes (then parse o->json). For a reader that needs a few
 * members of many objects (the quota tracker's pods at a start). */
int cobj_text_paths(const struct cobj *o, const char *const *paths, size_t n, struct sv *spans);
/* The same from a tree known to equal the parsed value (a write hint): no parse. The tree is
 * only read (the cobj keeps a reference to its metadata.labels); a value whose text cannot take
 * the resourceVersion splice is parsed as by cobj_new. */
struct cobj *cobj_new_tree(const struct api_resource *r, const char *key, const char *value, size_t len,
			   int64_t mod_rev, const json_t *tree);
/* Appends value (compact JSON of an object as stored) with "resourceVersion":"<rv_show(rv)>" put
 * at the end of its metadata; false (nothing appended) when the text is not of that form. */
bool cobj_splice_rv(const char *value, size_t len, int64_t rv, struct buf *out);
/* The offset of the '}' closing the one top-level "metadata" object of compact JSON object text
 * (no whitespace between tokens, nothing after the object), or 0 when the text is not such an
 * object (cobj_new then dumps the parsed tree instead of splicing resourceVersion in). */
size_t cobj_metadata_close(const char *s, size_t n);
struct cobj *cobj_ref(struct cobj *o);
void cobj_unref(struct cobj *o); /* NULL is fine */

enum wev_type { WEV_ADDED, WEV_MODIFIED, WEV_DELETED, WEV_BOOKMARK, WEV_ERROR };
struct wevent {
	enum wev_type type;
	int64_t rv;        /* revision of the event */
	struct cobj *obj;  /* new ref; for DELETED the last state, with rv set to the deletion revision.
			      NULL for BOOKMARK and ERROR */
};
void wevent_release(struct wevent *ev);

/* What a list or watch selects. tenant NULL = all tenants; ns NULL = all namespaces.
 * Selectors may be NULL. Borrowed for the duration of the call (copied by wcache_watch). */
struct wfilter {
	const char *tenant;
	const char *ns;
	const char *name;                    /* from fieldSelector metadata.name=X, or NULL */
	const struct label_selector *labels;
	const struct field_selector *fields;
};

struct wcache_options {
	const char *key_prefix;   /* e.g. "/registry/pods/" */
	const char *watch_prefix; /* the keys listed and watched, under key_prefix (a custom resource
				     cache holds one tenant's: "/registry/<g>/<p>/<tenant>/"); NULL:
				     key_prefix */
	size_t history_min;       /* ring size floor (default 1024) */
	size_t history_max;       /* ring size cap (default 102400) */
	int64_t history_window_ms;/* keep at least this much history when it fits (default 75000) */
	size_t tree_budget;       /* bytes (estimated) of parsed trees of recent writes kept for
				     wcache_get_tree; 0: none are kept */
	int64_t history_back_revs;/* after the first list (taken at etcd's current revision L), the
				     events of revisions L - this .. L are loaded into the ring by a
				     second watch (with prev_kv), so that watches from before this
				     server started resume; the objects and readiness do not wait for
				     it. 0: the default (10,000), < 0: none. Not for muxed caches. */
};

/* Progress markers. A cache's revision moves only with events under its prefix, so to prove a
 * quiet cache current it writes a marker key inside its watched prefix: key prefix + "~progress"
 * (no object can have that key: the first segment after a kind's prefix is a tenant or a
 * cluster-scoped object's name, both DNS names). The cache takes the marker's event as progress
 * and never stores it; every reader of a kind's prefix straight from etcd must skip it:
 * wcache_marker_key(kind prefix, key) says whether key is it. Custom resources' caches, fed by
 * one mux watch, share the mux's marker (mux prefix + "~progress", outside every kind's keys):
 * its event reaches all of them. */
#define WCACHE_MARKER "~progress"
bool wcache_marker_key(const char *prefix, const char *key);

struct wcache;
/* Starts: lists the prefix from etcd, then watches from the list revision. Returns at once;
 * wcache_ready() turns true after the first list. Relists by itself after a compaction. */
struct wcache *wcache_new(const struct api_resource *r, struct etcd *etcd, const struct wcache_options *opts);
void wcache_free(struct wcache *c);

/* Caches that share one etcd watch: the custom resources of a partition, one cache per CRD, all
 * under one prefix. The mux's thread watches prefix from the current revision and gives each event
 * to the caches whose watch_prefix (else key_prefix) holds its key; a new cache is listed at the
 * then current revision while events are held, so it neither misses nor repeats one; a
 * compaction relists them all. wcache_new_muxed returns at once (ready after its first list);
 * wcache_free of one takes it out. Free every cache of a mux before wcache_mux_free. */
struct wcache_mux;
struct wcache_mux *wcache_mux_new(struct etcd *etcd, const char *prefix);
void wcache_mux_free(struct wcache_mux *m); /* NULL is fine */
struct wcache *wcache_new_muxed(struct wcache_mux *m, const struct api_resource *r, const struct wcache_options *opts);
bool wcache_ready(const struct wcache *c);
/* An upper bound of the revision of tenant's newest change the cache has applied: that of its
 * newest event in the ring, else the ring's start (any change of it is at or before that). */
int64_t wcache_tenant_last_change(struct wcache *c, const char *tenant);
/* Revision the cache is current to (the last event or list revision applied). */
int64_t wcache_revision(const struct wcache *c);
/* Waits up to timeout_ms until wcache_revision >= rv. 0, or E_TIMEOUT. */
int wcache_wait_for(struct wcache *c, int64_t rv, int64_t timeout_ms);
/* The same for a consistent read: rv is etcd's current revision, read by the caller after the
 * request came. If the cache does not reach it within a moment by itself, it writes its progress
 * marker (one write in flight per cache; every waiter for a revision at or below a written
 * marker's is satisfied by that marker's event) and waits for the event. 0, E_TIMEOUT, or the
 * marker write's error (the caller then reads etcd). */
int wcache_wait_current(struct wcache *c, int64_t rv, int64_t timeout_ms);
/* Keeps a quiet cache's revision moving: when the cache is ready, behind rv and no marker at or
 * after rv is written or being written, writes its progress marker (one etcd write; its event
 * then brings the cache, and the bookmarks its watchers get, to that revision) and returns true
 * without waiting for the event. False otherwise, or when the write failed. */
bool wcache_nudge(struct wcache *c, int64_t rv);
/* The revision at which the progress marker of this cache was created, as the cache last saw it
 * (0: absent or not seen): a reader counting keys of the prefix in etcd discounts it. */
int64_t wcache_marker_created(struct wcache *c);

/* Lists matching objects in key order (namespace, name). Fills *ret_objs with new refs
 * (caller unrefs each and frees the array) and *ret_rv with the cache revision.
 * E_UNAVAILABLE if the cache is not ready. */
int wcache_list(struct wcache *c, const struct wfilter *f, struct cobj ***ret_objs, size_t *ret_n, int64_t *ret_rv);
/* One page of the objects matching f as they were at revision at_rv (0: the cache's current
 * one), in key order, keys after `after` (NULL: from the first): at most limit + 1 objects
 * (limit 0: all), so the caller knows whether more follow. The state at a past revision comes
 * from the ring (the earliest event after at_rv of each key). *ret_rv gets the revision served.
 * E_GONE when the cache cannot show at_rv (older than its last full list or its history, or newer
 * than its revision), E_UNAVAILABLE when not ready. */
int wcache_list_page(struct wcache *c, const struct wfilter *f, const char *after, int64_t at_rv, size_t limit,
		     struct cobj ***ret_objs, size_t *ret_n, int64_t *ret_rv);
/* One object by its etcd key: new ref or NULL. */
struct cobj *wcache_get(struct wcache *c, const char *key);
/* Number of objects (all tenants). */
size_t wcache_size(struct wcache *c);
/* The objects of tenant ("" for cluster-scoped ones) in the store. */
size_t wcache_tenant_size(struct wcache *c, const char *tenant);

/* Write hints. An API server about to write key with value (the compact JSON it encoded from
 * tree) says so first; when the watch brings back exactly those bytes, the cache builds the
 * object from tree instead of parsing the value again. tree must not change from this call on
 * (the cache holds a reference until the event comes). Any event for key takes the hint away,
 * a relist drops every hint, and past WCACHE_MAX_HINTS held a write simply gets none. A writer
 * whose write failed cancels its hint (a no-op if another write's hint replaced it). */
#define WCACHE_MAX_HINTS 4096
void wcache_expect(struct wcache *c, const char *key, const char *value, size_t len, json_t *tree);
void wcache_expect_cancel(struct wcache *c, const char *key, const json_t *tree);
/* Over all caches since start: events built from a hint, and hints an event for their key
 * found with other bytes (or a delete). */
void wcache_hint_stats(unsigned long long *ret_used, unsigned long long *ret_missed);

/* Trees of recent writes. An update must parse the object's current text before it changes it
 * (a pod: ~40 us of jansson), yet the object is most often one this server wrote a moment ago,
 * whose tree its write hint carried. The cache keeps such trees beside their objects, within
 * opts->tree_budget bytes (a tree is counted as WCACHE_TREE_COST times its text), dropping the
 * oldest first, and a tree as soon as its object changes or goes.
 * wcache_get_tree returns the current object's tree (new reference) with *ret_rv its revision,
 * or NULL when the object is absent or its tree was not kept (then parse wcache_get's text).
 * The tree is the value as stored, without metadata.resourceVersion, and is shared: nobody may
 * change it (copy what you change: json_copy shares the rest). */
#define WCACHE_TREE_COST 9
json_t *wcache_get_tree(struct wcache *c, const char *key, int64_t *ret_rv);
/* Over all caches since start: wcache_get_tree calls that found a tree, and those that found
 * the object without one. */
void wcache_tree_stats(unsigned long long *ret_used, unsigned long long *ret_missed);
/* The estimated bytes of the trees c keeps now. */
size_t wcache_tree_bytes(struct wcache *c);

/* Watchers ------------------------------------------------------------------------------------ */
struct watcher;
/* from_rv semantics (as the Kubernetes API):
 *   from_rv < 0 (unset) or 0: synthetic ADDED for every matching object, then changes after that
 *                           state;
 *   from_rv > 0: only changes after from_rv; E_GONE if from_rv is older than the ring's history.
 *                While the history before the first list is being loaded (history_back_revs), a
 *                from_rv inside it waits for it (until WCACHE_HISTORY_WAIT_MS after the load
 *                began, for every watch alike; then E_GONE).
 * notify(ud) is called (from any thread, possibly with internal locks held: it must only
 * signal, e.g. resume a connection) whenever events become available or the watcher is closed.
 * Returns the watcher in *ret. A watcher whose queue overflows (slow reader; cap
 * max_queue events) is closed: wcache_next then yields an ERROR, then end. */
#define WCACHE_HISTORY_WAIT_MS 5000
int wcache_watch(struct wcache *c, const struct wfilter *f, int64_t from_rv, size_t max_queue,
		 void (*notify)(void *ud), void *ud, struct watcher **ret);
/* Pops the next event: returns 1 with *ret filled, 0 when none is pending, -1 when the watcher
 * has ended (closed by the cache, e.g. relist after compaction: the caller ends the stream).
 * A queued ERROR event carries an E_GONE/410 meaning. */
int watcher_next(struct watcher *w, struct wevent *ret);
/* The revision of the last event handed out or of the cache when nothing matched (for bookmarks). */
int64_t watcher_revision(struct watcher *w);
/* Unregisters and frees; no notify call happens after it returns. */
void watcher_close(struct watcher *w);
/* Ends every open watcher of c (each stream then ends; nothing is freed): the kind it serves is
 * gone (a CustomResourceDefinition deleted). */
void wcache_end_watchers(struct wcache *c);
/* Number of open watchers over all caches (for /metrics). */
long wcache_watchers_total(void);

#endif
