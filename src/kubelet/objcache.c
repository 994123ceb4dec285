/* Short-lived node-wide answers for volume refreshes (see objcache.h). */
#include "objcache.h"
#include "ursa/strmap.h"
#include "ursa/xalloc.h"
#include <pthread.h>
#include <stdlib.h>

struct answer {
	json_t *obj;
	int code;
	int64_t at_ms;
};

struct kl_objcache {
	pthread_mutex_t lock;
	struct strmap m;
	int64_t ttl_ms;
	int64_t swept_ms;
};

static void answer_free(void *v)
{
	struct answer *a = v;
	json_decref(a->obj);
	free(a);
}

struct kl_objcache *kl_objcache_new(int64_t ttl_ms)
{
	struct kl_objcache *c = xcalloc(1, sizeof(*c));
	pthread_mutex_init(&c->lock, NULL);
	strmap_init(&c->m);
	c->ttl_ms = ttl_ms;
	return c;
}

void kl_objcache_free(struct kl_objcache *c)
{
	if (!c)
		return;
	strmap_release(&c->m, answer_free);
	pthread_mutex_destroy(&c->lock);
	free(c);
}

bool kl_objcache_get(struct kl_objcache *c, const char *key, int64_t now_ms, json_t **ret_obj, int *ret_code)
{
	bool hit = false;
	pthread_mutex_lock(&c->lock);
	struct strmap_ent *e = strmap_get(&c->m, key);
	struct answer *a = e ? e->val : NULL;
	if (a && now_ms - a->at_ms <= c->ttl_ms) {
		*ret_obj = json_incref(a->obj);
		*ret_code = a->code;
		hit = true;
	}
	pthread_mutex_unlock(&c->lock);
	return hit;
}

/* Drops answers older than ttl, at most once per ttl (under c->lock). */
static void sweep(struct kl_objcache *c, int64_t now_ms)
{
	if (now_ms - c->swept_ms < c->ttl_ms || c->m.n == 0)
		return;
	c->swept_ms = now_ms;
	char **old = xcalloc(c->m.n, sizeof(*old));
	size_t n = 0, it = 0;
	for (struct strmap_ent *e = strmap_next(&c->m, NULL, &it); e; e = strmap_next(&c->m, e, &it))
		if (now_ms - ((struct answer *)e->val)->at_ms > c->ttl_ms)
			old[n++] = xstrdup(e->key);
	for (size_t i = 0; i < n; i++) {
		void *v = NULL;
		if (strmap_del(&c->m, old[i], &v))
			answer_free(v);
		free(old[i]);
	}
	free(old);
}

void kl_objcache_put(struct kl_objcache *c, const char *key, int64_t now_ms, json_t *obj, int code)
{
	pthread_mutex_lock(&c->lock);
	sweep(c, now_ms);
	bool created;
	struct strmap_ent *e = strmap_put(&c->m, key, &created);
	struct answer *a = e->val;
	if (!a)
		a = e->val = xcalloc(1, sizeof(*a));
	json_decref(a->obj);
	a->obj = json_incref(obj);
	a->code = code;
	a->at_ms = now_ms;
	pthread_mutex_unlock(&c->lock);
}

size_t kl_objcache_size(struct kl_objcache *c)
{
	pthread_mutex_lock(&c->lock);
	size_t n = c->m.n;
	pthread_mutex_unlock(&c->lock);
	return n;
}
