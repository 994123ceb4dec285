/* A chained hash map from strings to caller-owned values (informer stores, work queue sets,
 * the kubelet's pod tables). Not thread-safe: the owner locks. */
#ifndef URSA_STRMAP_H
#define URSA_STRMAP_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct strmap_ent {
	struct strmap_ent *next;
	uint64_t hash;
	void *val;   /* owned by the user of the map */
	int64_t num; /* free for the user too */
	char key[];
};
struct strmap {
	struct strmap_ent **b;
	size_t nb, n;
};
void strmap_init(struct strmap *m);
/* Frees every entry, calling free_val(val) first when free_val is not NULL. */
void strmap_release(struct strmap *m, void (*free_val)(void *val));
/* Borrowed entry or NULL. */
struct strmap_ent *strmap_get(const struct strmap *m, const char *key);
/* The entry for key, created (val NULL, num 0) if absent; *ret_created tells which. */
struct strmap_ent *strmap_put(struct strmap *m, const char *key, bool *ret_created);
/* Removes key; returns true if it was there and hands back its val in *ret_val (may be NULL). */
bool strmap_del(struct strmap *m, const char *key, void **ret_val);
/* Iteration: for (e = strmap_next(m, NULL, &i); e; e = strmap_next(m, e, &i)). Do not modify
 * the map while iterating. */
struct strmap_ent *strmap_next(const struct strmap *m, struct strmap_ent *cur, size_t *iter);

#endif
