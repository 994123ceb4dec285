/* A chained hash map from strings to caller-owned values (informer stores, work queue sets). */
#include <stdlib.h>
#include <string.h>
#include "ursa/strmap.h"
#include "ursa/xalloc.h"

static uint64_t hash_str(const char *s)
{
	uint64_t h = 1469598103934665603ULL; /* FNV-1a */
	for (; *s; s++) {
		h ^= (unsigned char)*s;
		h *= 1099511628211ULL;
	}
	return h ^ (h >> 29);
}

void strmap_init(struct strmap *m)
{
	memset(m, 0, sizeof(*m));
}

void strmap_release(struct strmap *m, void (*free_val)(void *val))
{
	for (size_t i = 0; i < m->nb; i++) {
		struct strmap_ent *e = m->b[i], *next;
		for (; e; e = next) {
			next = e->next;
			if (free_val)
				free_val(e->val);
			free(e);
		}
	}
	free(m->b);
	memset(m, 0, sizeof(*m));
}

struct strmap_ent *strmap_get(const struct strmap *m, const char *key)
{
	if (!m->nb)
		return NULL;
	uint64_t h = hash_str(key);
	for (struct strmap_ent *e = m->b[h & (m->nb - 1)]; e; e = e->next)
		if (e->hash == h && !strcmp(e->key, key))
			return e;
	return NULL;
}

static void rehash(struct strmap *m)
{
	size_t nb = m->nb ? m->nb * 2 : 16;
	struct strmap_ent **b = xcalloc(nb, sizeof(*b));
	for (size_t i = 0; i < m->nb; i++) {
		struct strmap_ent *e = m->b[i], *next;
		for (; e; e = next) {
			next = e->next;
			e->next = b[e->hash & (nb - 1)];
			b[e->hash & (nb - 1)] = e;
		}
	}
	free(m->b);
	m->b = b;
	m->nb = nb;
}

struct strmap_ent *strmap_put(struct strmap *m, const char *key, bool *ret_created)
{
	struct strmap_ent *e = strmap_get(m, key);
	if (ret_created)
		*ret_created = !e;
	if (e)
		return e;
	if (m->n >= m->nb)
		rehash(m);
	size_t klen = strlen(key);
	e = xcalloc(1, sizeof(*e) + klen + 1);
	memcpy(e->key, key, klen + 1);
	e->hash = hash_str(key);
	e->next = m->b[e->hash & (m->nb - 1)];
	m->b[e->hash & (m->nb - 1)] = e;
	m->n++;
	return e;
}

bool strmap_del(struct strmap *m, const char *key, void **ret_val)
{
	if (!m->nb)
		return false;
	uint64_t h = hash_str(key);
	struct strmap_ent **pp = &m->b[h & (m->nb - 1)];
	for (; *pp; pp = &(*pp)->next) {
		struct strmap_ent *e = *pp;
		if (e->hash != h || strcmp(e->key, key))
			continue;
		*pp = e->next;
		if (ret_val)
			*ret_val = e->val;
		free(e);
		m->n--;
		return true;
	}
	return false;
}

struct strmap_ent *strmap_next(const struct strmap *m, struct strmap_ent *cur, size_t *iter)
{
	if (!cur)
		*iter = 0;
	else if (cur->next)
		return cur->next;
	else
		(*iter)++;
	for (; *iter < m->nb; (*iter)++)
		if (m->b[*iter])
			return m->b[*iter];
	return NULL;
}
