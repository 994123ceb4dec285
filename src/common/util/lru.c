/* A bounded cache over strmap with a recency list. */
#include "ursa/lru.h"
#include <stdlib.h>
#include "ursa/xalloc.h"

void lru_init(struct lru *l, size_t max_n, size_t max_bytes, void (*free_val)(void *val))
{
	*l = (struct lru){ .max_n = max_n, .max_bytes = max_bytes, .free_val = free_val };
	strmap_init(&l->map);
}

static void unlink_ent(struct lru *l, struct lru_ent *e)
{
	if (e->prev)
		e->prev->next = e->next;
	else
		l->head = e->next;
	if (e->next)
		e->next->prev = e->prev;
	else
		l->tail = e->prev;
	e->prev = e->next = NULL;
}

static void push_front(struct lru *l, struct lru_ent *e)
{
	e->prev = NULL;
	e->next = l->head;
	if (l->head)
		l->head->prev = e;
	l->head = e;
	if (!l->tail)
		l->tail = e;
}

static void free_value(const struct lru *l, void *val)
{
	if (l->free_val && val)
		l->free_val(val);
}

/* Removes e from the list, the counts and the map (which frees its key), and frees its value. */
static void drop(struct lru *l, struct lru_ent *e)
{
	unlink_ent(l, e);
	l->n--;
	l->bytes -= e->bytes;
	void *val = e->val;
	strmap_del(&l->map, e->key, NULL);
	free(e);
	free_value(l, val);
}

void lru_release(struct lru *l)
{
	while (l->head)
		drop(l, l->head);
	strmap_release(&l->map, NULL);
	*l = (struct lru){ 0 };
}

static struct lru_ent *find(const struct lru *l, const char *key)
{
	struct strmap_ent *m = l->map.b ? strmap_get(&l->map, key) : NULL;
	return m ? m->val : NULL;
}

void *lru_peek(const struct lru *l, const char *key)
{
	struct lru_ent *e = find(l, key);
	return e ? e->val : NULL;
}

void *lru_get(struct lru *l, const char *key)
{
	struct lru_ent *e = find(l, key);
	if (!e)
		return NULL;
	if (l->head != e) {
		unlink_ent(l, e);
		push_front(l, e);
	}
	return e->val;
}

/* Whether one more entry of extra_bytes (extra_n 1) or none (0) would break a bound. */
static bool over(const struct lru *l, size_t extra_n, size_t extra_bytes)
{
	return l->n + extra_n > l->max_n || l->bytes + extra_bytes > l->max_bytes;
}

/* Evicts unpinned entries other than keep, oldest first, while over(l, extra_n, extra_bytes);
 * returns whether the bounds then hold. */
static bool evict(struct lru *l, const struct lru_ent *keep, size_t extra_n, size_t extra_bytes)
{
	struct lru_ent *e = l->tail;
	while (e && over(l, extra_n, extra_bytes)) {
		struct lru_ent *prev = e->prev;
		if (e != keep && !e->pins) {
			drop(l, e);
			l->evictions++;
		}
		e = prev;
	}
	return !over(l, extra_n, extra_bytes);
}

bool lru_make_room(struct lru *l, size_t bytes)
{
	return evict(l, NULL, 1, bytes);
}

bool lru_put(struct lru *l, const char *key, void *val, size_t bytes)
{
	bool created;
	struct strmap_ent *m = strmap_put(&l->map, key, &created);
	struct lru_ent *e = m->val;
	if (!created) {
		if (e->pins)
			return false;
		void *old = e->val;
		l->bytes -= e->bytes;
		unlink_ent(l, e);
		free_value(l, old);
	} else {
		e = xcalloc(1, sizeof(*e));
		e->key = m->key;
		m->val = e;
		l->n++;
	}
	e->val = val;
	e->bytes = bytes;
	l->bytes += bytes;
	push_front(l, e);
	evict(l, e, 0, 0);
	return true;
}

bool lru_del(struct lru *l, const char *key)
{
	struct lru_ent *e = find(l, key);
	if (!e)
		return false;
	drop(l, e);
	return true;
}

void lru_resize(struct lru *l, const char *key, size_t bytes)
{
	struct lru_ent *e = find(l, key);
	if (!e)
		return;
	l->bytes = l->bytes - e->bytes + bytes;
	e->bytes = bytes;
	evict(l, e, 0, 0);
}

bool lru_pin(struct lru *l, const char *key)
{
	struct lru_ent *e = find(l, key);
	if (e)
		e->pins++;
	return e != NULL;
}

void lru_unpin(struct lru *l, const char *key)
{
	struct lru_ent *e = find(l, key);
	if (e && e->pins)
		e->pins--;
}
