/* An ordered map from C-string keys to pointers (a skip list), for the watch cache's store and
 * its per-node index. Keys compare as unsigned bytes (strcmp), which is etcd's key order, so
 * the entries under a key prefix are contiguous.
 *
 * Keys are borrowed: the map stores the pointer it was given, which must stay valid until the
 * entry is replaced or deleted (the cache uses the key inside the stored object). Not
 * thread-safe: the caller locks. Module-private. */
#ifndef URSA_CACHE_OMAP_H
#define URSA_CACHE_OMAP_H
#include <stddef.h>
#include <stdint.h>

struct omap_node {
	const char *key;
	void *val;
	struct omap_node *next[]; /* next[0] is the in-order successor */
};

struct omap;

struct omap *omap_new(void);
/* Frees the map; free_val (may be NULL) is called on every value. NULL is fine. */
void omap_free(struct omap *m, void (*free_val)(void *));
size_t omap_size(const struct omap *m);
/* The value at key, or NULL. */
void *omap_get(const struct omap *m, const char *key);
/* Inserts key -> val, or replaces the entry's key pointer and value. Returns the previous value
 * (NULL when the key was new). val must not be NULL. */
void *omap_put(struct omap *m, const char *key, void *val);
/* Removes key; returns its value, or NULL if absent. */
void *omap_del(struct omap *m, const char *key);
/* In-order iteration: first entry, first entry with key >= key, successor. NULL at the end. */
struct omap_node *omap_first(const struct omap *m);
struct omap_node *omap_lower_bound(const struct omap *m, const char *key);
static inline struct omap_node *omap_next(const struct omap_node *n)
{
	return n->next[0];
}

#endif
