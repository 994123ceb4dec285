/* Skip list with p = 1/4: about 1.33 forward pointers per entry on average, so an entry costs
 * 16 bytes plus ~11 bytes of links; lookups and updates are O(log n) expected. */
#include "cache/omap.h"
#include <stdlib.h>
#include <string.h>
#include "ursa/xalloc.h"

#define MAX_LEVEL 24 /* 4^24 entries before the expected search cost degrades */

struct omap {
	size_t n;
	int level;            /* levels in use, >= 1 */
	uint64_t rng;         /* xorshift state */
	struct omap_node *head; /* key NULL, MAX_LEVEL links */
};

struct omap *omap_new(void)
{
	struct omap *m = xcalloc(1, sizeof(*m));
	m->head = xcalloc(1, sizeof(*m->head) + MAX_LEVEL * sizeof(m->head->next[0]));
	m->level = 1;
	m->rng = 0x9e3779b97f4a7c15ull ^ (uintptr_t)m;
	return m;
}

void omap_free(struct omap *m, void (*free_val)(void *))
{
	if (!m)
		return;
	struct omap_node *n = m->head->next[0];
	while (n) {
		struct omap_node *nx = n->next[0];
		if (free_val)
			free_val(n->val);
		free(n);
		n = nx;
	}
	free(m->head);
	free(m);
}

size_t omap_size(const struct omap *m)
{
	return m->n;
}

static int random_level(struct omap *m)
{
	uint64_t x = m->rng;
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	m->rng = x;
	int lvl = 1;
	/* two bits per level: each extra level with probability 1/4 */
	while (lvl < MAX_LEVEL && (x & 3) == 0) {
		lvl++;
		x >>= 2;
	}
	return lvl;
}

/* Fills upd[i] with the last node at level i whose key is < key; returns the candidate (the
 * first node with key >= key, or NULL). */
static struct omap_node *search(const struct omap *m, const char *key, struct omap_node **upd)
{
	struct omap_node *x = m->head;
	for (int i = m->level - 1; i >= 0; i--) {
		while (x->next[i] && strcmp(x->next[i]->key, key) < 0)
			x = x->next[i];
		if (upd)
			upd[i] = x;
	}
	return x->next[0];
}

void *omap_get(const struct omap *m, const char *key)
{
	struct omap_node *x = search(m, key, NULL);
	return x && strcmp(x->key, key) == 0 ? x->val : NULL;
}

void *omap_put(struct omap *m, const char *key, void *val)
{
	struct omap_node *upd[MAX_LEVEL];
	struct omap_node *x = search(m, key, upd);
	if (x && strcmp(x->key, key) == 0) {
		void *old = x->val;
		x->key = key;
		x->val = val;
		return old;
	}
	int lvl = random_level(m);
	for (int i = m->level; i < lvl; i++)
		upd[i] = m->head;
	if (lvl > m->level)
		m->level = lvl;
	x = xmalloc(sizeof(*x) + (size_t)lvl * sizeof(x->next[0]));
	x->key = key;
	x->val = val;
	for (int i = 0; i < lvl; i++) {
		x->next[i] = upd[i]->next[i];
		upd[i]->next[i] = x;
	}
	m->n++;
	return NULL;
}

void *omap_del(struct omap *m, const char *key)
{
	struct omap_node *upd[MAX_LEVEL];
	struct omap_node *x = search(m, key, upd);
	if (!x || strcmp(x->key, key) != 0)
		return NULL;
	/* x's height is not stored: it is linked exactly at the levels where upd[i] points to it */
	for (int i = 0; i < m->level && upd[i]->next[i] == x; i++)
		upd[i]->next[i] = x->next[i];
	while (m->level > 1 && !m->head->next[m->level - 1])
		m->level--;
	void *val = x->val;
	free(x);
	m->n--;
	return val;
}

struct omap_node *omap_first(const struct omap *m)
{
	return m->head->next[0];
}

struct omap_node *omap_lower_bound(const struct omap *m, const char *key)
{
	return search(m, key, NULL);
}
