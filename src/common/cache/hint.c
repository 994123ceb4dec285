/* Write hints: the parse an API server's own writes need not pay twice.
 *
 * An update already holds the object it writes as a tree and encodes it to compact JSON; the
 * watch then brings those bytes back and the cache would parse them again (a pod: tens of
 * microseconds of jansson, under the cache's write lock). So the writer first leaves a hint
 * (key, the exact bytes, the tree); the event whose value is byte-for-byte the hint's is built
 * from the tree (cobj_new_tree). The bytes are compared, never assumed: an event for the key
 * with other bytes (another writer got there first) just drops the hint. */
#include <stdlib.h>
#include <string.h>
#include "cache/wcache_types.h"
#include "ursa/xalloc.h"

static atomic_ullong hints_used, hints_missed;

void wcache_hint_stats(unsigned long long *ret_used, unsigned long long *ret_missed)
{
	*ret_used = atomic_load(&hints_used);
	*ret_missed = atomic_load(&hints_missed);
}

struct hint {
	char *value;
	size_t len;
	json_t *tree;
};

static void hint_free(void *p)
{
	struct hint *h = p;
	if (!h)
		return;
	json_decref(h->tree);
	free(h->value);
	free(h);
}

void hints_init(struct wcache *c)
{
	pthread_mutex_init(&c->hint_mu, NULL);
	strmap_init(&c->hints);
	atomic_init(&c->nhints, 0);
}

void hints_release(struct wcache *c)
{
	strmap_release(&c->hints, hint_free);
	pthread_mutex_destroy(&c->hint_mu);
}

void wcache_expect(struct wcache *c, const char *key, const char *value, size_t len, json_t *tree)
{
	struct hint *h = xmalloc(sizeof(*h));
	h->value = xmalloc(len + 1);
	memcpy(h->value, value, len);
	h->value[len] = '\0';
	h->len = len;
	h->tree = json_incref(tree);
	pthread_mutex_lock(&c->hint_mu);
	bool created;
	struct strmap_ent *e = c->hints.n < WCACHE_MAX_HINTS || strmap_get(&c->hints, key)
				       ? strmap_put(&c->hints, key, &created)
				       : NULL;
	if (e) {
		hint_free(e->val); /* an earlier write's hint: its event cannot match any more */
		e->val = h;
		h = NULL;
	}
	atomic_store(&c->nhints, c->hints.n);
	pthread_mutex_unlock(&c->hint_mu);
	hint_free(h);
}

void wcache_expect_cancel(struct wcache *c, const char *key, const json_t *tree)
{
	void *val = NULL;
	pthread_mutex_lock(&c->hint_mu);
	struct strmap_ent *e = strmap_get(&c->hints, key);
	if (e && ((struct hint *)e->val)->tree == tree)
		strmap_del(&c->hints, key, &val);
	atomic_store(&c->nhints, c->hints.n);
	pthread_mutex_unlock(&c->hint_mu);
	hint_free(val);
}

json_t *hints_take(struct wcache *c, const char *key, const char *value, size_t len)
{
	void *val = NULL;
	json_t *tree = NULL;
	if (atomic_load(&c->nhints) == 0)
		return NULL;
	pthread_mutex_lock(&c->hint_mu);
	strmap_del(&c->hints, key, &val);
	atomic_store(&c->nhints, c->hints.n);
	pthread_mutex_unlock(&c->hint_mu);
	struct hint *h = val;
	if (h && value && h->len == len && memcmp(h->value, value, len) == 0)
		tree = json_incref(h->tree);
	if (h)
		atomic_fetch_add(tree ? &hints_used : &hints_missed, 1);
	hint_free(h);
	return tree;
}

void hints_clear(struct wcache *c)
{
	struct strmap old;
	pthread_mutex_lock(&c->hint_mu);
	old = c->hints;
	strmap_init(&c->hints);
	atomic_store(&c->nhints, 0);
	pthread_mutex_unlock(&c->hint_mu);
	strmap_release(&old, hint_free);
}
