/* A bounded cache: string keys to caller values, at most max_n entries and max_bytes (as the
 * caller counts them), the least recently used going first. Built documents are kept so (the
 * gateway's merged discovery and OpenAPI documents, the API server's discovery and per-tenant
 * OpenAPI documents). Not thread-safe: the owner locks around every call.
 *
 * The cache owns the values it holds and frees them with free_val when they are evicted,
 * replaced, deleted or released. A pinned entry (lru_pin) is never evicted: its holder is using
 * it outside the lock (say, refreshing it); lru_unpin gives it back. */
#ifndef URSA_LRU_H
#define URSA_LRU_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "ursa/strmap.h"

struct lru_ent {
	struct lru_ent *prev, *next; /* newest first */
	void *val;
	size_t bytes;
	unsigned pins;
	const char *key; /* the map's copy */
};

struct lru {
	struct strmap map; /* key -> struct lru_ent */
	struct lru_ent *head, *tail;
	size_t n, bytes, max_n, max_bytes;
	uint64_t evictions;
	void (*free_val)(void *val);
};

void lru_init(struct lru *l, size_t max_n, size_t max_bytes, void (*free_val)(void *val));
/* Frees every value and entry; the cache may be initialized again. */
void lru_release(struct lru *l);
/* The value of key, made the most recently used; NULL if absent. */
void *lru_get(struct lru *l, const char *key);
/* As lru_get, without touching the order. */
void *lru_peek(const struct lru *l, const char *key);
/* Stores val (taken) under key, replacing (and freeing) an unpinned value there; then evicts
 * the least recently used unpinned entries other than this one until the bounds hold. Returns
 * false, and frees nothing, when key's entry is pinned (val stays the caller's). */
bool lru_put(struct lru *l, const char *key, void *val, size_t bytes);
/* Removes key's entry and frees its value (even if pinned: the holder must not use it after).
 * Returns whether it was there. */
bool lru_del(struct lru *l, const char *key);
/* Makes room for one more entry of `bytes`: evicts unpinned entries, least recently used first,
 * until n < max_n and bytes fit. Returns false when only pinned entries are left in the way. */
bool lru_make_room(struct lru *l, size_t bytes);
/* Changes the size counted for key's entry (its value grew or shrank in place); evicts others
 * if the bound no longer holds. */
void lru_resize(struct lru *l, const char *key, size_t bytes);
/* Pins key's entry (returns false if absent) / unpins it. */
bool lru_pin(struct lru *l, const char *key);
void lru_unpin(struct lru *l, const char *key);

#endif
