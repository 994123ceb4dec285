/* Internals of the watch cache shared by wcache.c (store, ring, watchers), wcache_etcd.c (the
 * etcd list/watch driver) and the unit tests, which feed lists and events directly into a cache
 * that has no etcd behind it. Not a public interface. */
#ifndef URSA_CACHE_WCACHE_INTERNAL_H
#define URSA_CACHE_WCACHE_INTERNAL_H
#include "ursa/wcache.h"

/* A cache without etcd: not ready until the first wcache_apply_list. Free with wcache_free.
 * opts NULL or zero fields take the defaults; key_prefix defaults to "/registry/{plural}/". */
struct wcache *wcache_new_detached(const struct api_resource *r, const struct wcache_options *opts);

/* Replaces the whole content with kvs (a full listing of the prefix at revision rev; borrowed)
 * and makes the cache ready. Values that do not parse are skipped. If the cache was already
 * populated (a relist after compaction), the history is dropped and every open watcher gets an
 * ERROR (410) and ends. */
void wcache_apply_list(struct wcache *c, const struct etcd_kv *kvs, size_t n, int64_t rev);
/* Same, taking ownership of n cobjs (references) built by the caller; objs may be freed after. */
void wcache_install(struct wcache *c, struct cobj **objs, size_t n, int64_t rev);

/* Applies watch events in revision order (borrowed): updates the store, appends to the event
 * ring and delivers to watchers. Events at or below the list revision are ignored. */
void wcache_apply_events(struct wcache *c, const struct etcd_event *evs, size_t n);

/* The marker writer (wcache_wait_current): fn(ud, key, &rev) puts key and gives the revision of
 * the put; marker_key NULL: key prefix + WCACHE_MARKER, else that key (a mux's). Set by the driver
 * before the first list. */
void wcache_set_progress(struct wcache *c, int (*fn)(void *ud, const char *key, int64_t *ret_rev), void *ud,
			 const char *marker_key);
/* True when key is this cache's marker. */
bool wcache_is_marker(const struct wcache *c, const char *key);
const char *wcache_marker(const struct wcache *c);
/* The driver's list saw c's marker created at rev (0: absent). */
void wcache_set_marker_created(struct wcache *c, int64_t rev);

/* History before the first list. begin (before wcache_install of that list): watches from
 * from_rv on are to be resumable once it is loaded, and wait for it meanwhile. add: events (with
 * prev_kv) at or below the list revision, in order; they go to the ring only (the objects are
 * the list's). end: ok puts what was added in front of the ring (as far as history_max allows)
 * and makes watches from from_rv resumable; !ok drops it. Either way waiting watches go on. */
void wcache_history_begin(struct wcache *c, int64_t from_rv);
void wcache_history_add(struct wcache *c, const struct etcd_event *evs, size_t n);
void wcache_history_end(struct wcache *c, bool ok);
bool wcache_history_loading(struct wcache *c);

/* Test hooks: the clock used for the history window (default CLOCK_MONOTONIC ms), and the
 * number of events held in the ring and its lower revision bound (watches from rv >= it work). */
void wcache_set_clock(struct wcache *c, int64_t (*now_ms)(void));
size_t wcache_history_len(struct wcache *c);
int64_t wcache_history_start(struct wcache *c);

/* Keys per etcd range request while listing (default 10,000); tests lower it to cover paging.
 * Read when a list starts. */
extern _Atomic long wcache_list_page_size;

/* The driver (wcache_etcd.c) hooks itself here; wcache_free calls stop(driver) first. */
void wcache_set_driver(struct wcache *c, void *driver, void (*stop)(void *driver));
const char *wcache_key_prefix(const struct wcache *c);
const struct api_resource *wcache_resource(const struct wcache *c);

#endif
