/* Trees of recent writes (wcache_get_tree): the parse an update need not pay.
 *
 * The cache keeps objects as text. An update reads the current object, changes it and writes
 * it, so it parses that text first (a pod: ~40 us of jansson, more than the rest of a binding's
 * JSON work). Most updates follow a write through the same server by seconds (a pod is created,
 * bound, then started; a lease is renewed every few seconds), and that write's hint brought the
 * tree along (hint.c). So the object built from a hint keeps its tree, within a budget: objects
 * holding one form a list, oldest first; a new tree past the budget drops the oldest ones, and
 * an object changed or deleted drops its own at once (its successor is another object).
 *
 * A kept tree is shared: readers get a reference, under the cache's lock, and change nothing.
 * Its cost is an estimate (WCACHE_TREE_COST times the text: a pod's tree is ~8.7 times its
 * compact JSON in jansson's objects), so that nothing has to walk a tree to weigh it. */
#include "cache/wcache_types.h"

static atomic_ullong trees_used, trees_missed;

void wcache_tree_stats(unsigned long long *ret_used, unsigned long long *ret_missed)
{
	*ret_used = atomic_load(&trees_used);
	*ret_missed = atomic_load(&trees_missed);
}

static size_t cost(const struct cobj *o)
{
	return o->json_len * WCACHE_TREE_COST;
}

void trees_drop(struct wcache *c, struct cobj *o)
{
	if (!o || !o->tree)
		return;
	if (o->tprev)
		o->tprev->tnext = o->tnext;
	else
		c->trees_head = o->tnext;
	if (o->tnext)
		o->tnext->tprev = o->tprev;
	else
		c->trees_tail = o->tprev;
	o->tprev = o->tnext = NULL;
	json_decref(o->tree);
	o->tree = NULL;
	c->tree_bytes -= cost(o);
}

void trees_keep(struct wcache *c, struct cobj *o, json_t *tree)
{
	if (o->tree || cost(o) > c->tree_budget)
		return;
	while (c->trees_head && c->tree_bytes + cost(o) > c->tree_budget)
		trees_drop(c, c->trees_head);
	o->tree = json_incref(tree);
	o->tprev = c->trees_tail;
	o->tnext = NULL;
	if (c->trees_tail)
		c->trees_tail->tnext = o;
	else
		c->trees_head = o;
	c->trees_tail = o;
	c->tree_bytes += cost(o);
}

void trees_drop_all(struct wcache *c)
{
	while (c->trees_head)
		trees_drop(c, c->trees_head);
}

json_t *wcache_get_tree(struct wcache *c, const char *key, int64_t *ret_rv)
{
	json_t *tree = NULL;
	pthread_rwlock_rdlock(&c->lock);
	const struct cobj *o = c->store ? omap_get(c->store, key) : NULL;
	if (o && o->tree) {
		tree = json_incref(o->tree);
		*ret_rv = o->rv;
	}
	pthread_rwlock_unlock(&c->lock);
	if (o)
		atomic_fetch_add(tree ? &trees_used : &trees_missed, 1);
	return tree;
}

size_t wcache_tree_bytes(struct wcache *c)
{
	pthread_rwlock_rdlock(&c->lock);
	size_t n = c->tree_bytes;
	pthread_rwlock_unlock(&c->lock);
	return n;
}
