/* The node and pod cache: nodes by name (names are unique across the region), the list of
 * present nodes the sampling rotates over, and this partition's pods with the usage they
 * put on nodes. */
#include <stdlib.h>
#include <string.h>
#include "sched.h"
#include "ursa/jsonutil.h"
#include "ursa/xalloc.h"

void sched_cache_init(struct sched_cache *c, const char *partition)
{
	*c = (struct sched_cache){ .partition = xstrdup(partition), .max_score_nodes = 500 };
	strmap_init(&c->nodes);
	strmap_init(&c->pods);
	strmap_init(&c->ns);
	strmap_init(&c->owners);
	strmap_init(&c->zones);
}

static void node_free(void *v)
{
	struct sched_node *n = v;
	sched_node_clear(n);
	free(n->name);
	free(n);
}

static void cpod_free(void *v)
{
	struct sched_cpod *p = v;
	json_decref(p->obj);
	free(p->key);
	free(p->owner_uid);
	free(p->node);
	free(p->last_msg);
	free(p);
}

static void owner_free(void *v)
{
	strmap_release(v, NULL);
	free(v);
}

void sched_cache_release(struct sched_cache *c)
{
	strmap_release(&c->nodes, node_free);
	strmap_release(&c->pods, cpod_free);
	strmap_release(&c->ns, free);
	strmap_release(&c->owners, owner_free);
	strmap_release(&c->zones, NULL);
	free(c->list);
	free(c->partition);
}

struct sched_node *sched_cache_node(struct sched_cache *c, const char *name)
{
	struct strmap_ent *e = strmap_get(&c->nodes, name);
	return e ? e->val : NULL;
}

static struct sched_node *node_get_or_add(struct sched_cache *c, const char *name)
{
	bool created;
	struct strmap_ent *e = strmap_put(&c->nodes, name, &created);
	if (created) {
		struct sched_node *n = xcalloc(1, sizeof(*n));
		n->name = xstrdup(name);
		e->val = n;
	}
	return e->val;
}

static void zone_count(struct sched_cache *c, const char *zone, long long by)
{
	if (!zone || !*zone)
		return;
	struct strmap_ent *e = strmap_put(&c->zones, zone, NULL);
	e->num += by;
	if (e->num <= 0)
		strmap_del(&c->zones, zone, NULL);
}

static void list_add(struct sched_cache *c, struct sched_node *n)
{
	if (c->n == c->cap) {
		c->cap = c->cap ? c->cap * 2 : 64;
		c->list = xrealloc(c->list, c->cap * sizeof(*c->list));
	}
	n->idx = c->n;
	c->list[c->n++] = n;
}

static void list_del(struct sched_cache *c, struct sched_node *n)
{
	struct sched_node *last = c->list[--c->n];
	c->list[n->idx] = last;
	last->idx = n->idx;
}

static bool res_more(const struct sched_res *a, const struct sched_res *b)
{
	return a->cpu_m > b->cpu_m || a->mem_m > b->mem_m || a->pods > b->pods;
}

static bool labels_equal(const json_t *a, const json_t *b)
{
	return (!a && !b) || (a && b && json_equal((json_t *)a, (json_t *)b));
}

static bool taints_equal(const struct sched_node *a, size_t nb, const struct sched_taint *tb)
{
	if (a->ntaints != nb)
		return false;
	for (size_t i = 0; i < nb; i++)
		if (strcmp(a->taints[i].key, tb[i].key) || strcmp(a->taints[i].value, tb[i].value) ||
		    a->taints[i].effect != tb[i].effect)
			return false;
	return true;
}

/* True when resourceVersion a is numerically lower than b (both plain decimal numbers). */
static bool older(const char *a, const char *b)
{
	if (!a || !b || !*a || !*b || strspn(a, "0123456789") != strlen(a) || strspn(b, "0123456789") != strlen(b))
		return false;
	size_t la = strlen(a), lb = strlen(b);
	if (la != lb)
		return la < lb;
	return strcmp(a, b) < 0;
}

bool sched_cache_node_set(struct sched_cache *c, const json_t *obj, const char *rm)
{
	const char *name = json_path_str(obj, "metadata.name");
	if (!name || !*name)
		return false;
	struct sched_node *n = node_get_or_add(c, name);
	if (n->present && older(json_path_str(obj, "metadata.resourceVersion"), n->rv))
		return false;
	struct sched_node old = *n;
	/* sched_node_set frees the old fields: keep what the comparison needs */
	json_t *old_labels = json_incref(n->labels);
	struct sched_taint *old_taints = NULL;
	size_t old_nt = n->ntaints;
	if (old_nt) {
		old_taints = xcalloc(old_nt, sizeof(*old_taints));
		for (size_t i = 0; i < old_nt; i++)
			old_taints[i] = (struct sched_taint){ xstrdup(n->taints[i].key), xstrdup(n->taints[i].value),
							      n->taints[i].effect };
	}
	if (old.present)
		zone_count(c, n->zone, -1);
	sched_node_set(n, obj, rm, c->partition);
	zone_count(c, n->zone, 1);
	if (!old.present)
		list_add(c, n);
	bool better = !old.present || res_more(&n->alloc, &old.alloc) || res_more(&old.other, &n->other) ||
		      (n->ready && !old.ready) || (!n->unschedulable && old.unschedulable) ||
		      !labels_equal(old_labels, n->labels) || !taints_equal(n, old_nt, old_taints);
	for (size_t i = 0; i < old_nt; i++) {
		free(old_taints[i].key);
		free(old_taints[i].value);
	}
	free(old_taints);
	json_decref(old_labels);
	return better;
}

static bool node_unused(const struct sched_node *n)
{
	return n->used.cpu_m == 0 && n->used.mem_m == 0 && n->used.pods == 0;
}

void sched_cache_node_del(struct sched_cache *c, const char *name)
{
	struct sched_node *n = sched_cache_node(c, name);
	if (!n || !n->present)
		return;
	zone_count(c, n->zone, -1);
	list_del(c, n);
	sched_node_clear(n);
	if (node_unused(n)) {
		strmap_del(&c->nodes, name, NULL);
		node_free(n);
	}
}

void sched_cache_rm_del(struct sched_cache *c, const char *rm)
{
	size_t i = 0;
	while (i < c->n) {
		struct sched_node *n = c->list[i];
		if (n->rm && strcmp(n->rm, rm) == 0)
			sched_cache_node_del(c, n->name); /* swaps the last node into i */
		else
			i++;
	}
}

/* Usage accounting --------------------------------------------------------------------------- */

static void owner_count(struct sched_cache *c, const char *owner, const char *node, long long by)
{
	if (!owner)
		return;
	struct strmap_ent *o = strmap_put(&c->owners, owner, NULL);
	if (!o->val) {
		o->val = xmalloc(sizeof(struct strmap));
		strmap_init(o->val);
	}
	struct strmap_ent *e = strmap_put(o->val, node, NULL);
	e->num += by;
	if (e->num <= 0)
		strmap_del(o->val, node, NULL);
	if (((struct strmap *)o->val)->n == 0) {
		struct strmap *m = o->val;
		strmap_del(&c->owners, owner, NULL);
		owner_free(m);
	}
}

static void count_on(struct sched_cache *c, struct sched_cpod *p, const char *node)
{
	struct sched_node *n = node_get_or_add(c, node);
	sched_res_add(&n->used, &p->req);
	p->node = xstrdup(node);
	owner_count(c, p->owner_uid, node, 1);
}

static void uncount(struct sched_cache *c, struct sched_cpod *p)
{
	if (!p->node)
		return;
	struct sched_node *n = sched_cache_node(c, p->node);
	if (n) {
		sched_res_sub(&n->used, &p->req);
		if (!n->present && node_unused(n)) {
			strmap_del(&c->nodes, n->name, NULL);
			node_free(n);
		}
	}
	owner_count(c, p->owner_uid, p->node, -1);
	free(p->node);
	p->node = NULL;
	p->assumed = false;
}

static const char *controller_uid(const json_t *obj)
{
	return json_controller_uid(obj, "ReplicaSet");
}

/* Terminal and deleted-for-good pods no longer hold resources. */
static bool holds_resources(const json_t *obj)
{
	const char *phase = json_path_str(obj, "status.phase");
	return !(phase && (strcmp(phase, "Succeeded") == 0 || strcmp(phase, "Failed") == 0));
}

static void ns_link(struct sched_cache *c, struct sched_cpod *p, const json_t *obj)
{
	const char *t = json_path_str(obj, "metadata.tenant"), *ns = json_path_str(obj, "metadata.namespace");
	char *k = xasprintf("%s/%s", t ? t : "", ns ? ns : "");
	struct strmap_ent *e = strmap_put(&c->ns, k, NULL);
	free(k);
	if (!e->val)
		e->val = xcalloc(1, sizeof(struct sched_nslist));
	p->ns = e->val;
	p->ns_next = p->ns->head;
	if (p->ns->head)
		p->ns->head->ns_prev = p;
	p->ns->head = p;
}

static void ns_unlink(struct sched_cpod *p)
{
	if (p->ns_prev)
		p->ns_prev->ns_next = p->ns_next;
	else
		p->ns->head = p->ns_next;
	if (p->ns_next)
		p->ns_next->ns_prev = p->ns_prev;
	p->ns_prev = p->ns_next = NULL;
}

struct sched_cpod *sched_cache_pod_set(struct sched_cache *c, const json_t *obj, bool *ret_freed)
{
	char *key = object_key(obj);
	bool created;
	struct strmap_ent *e = strmap_put(&c->pods, key, &created);
	struct sched_cpod *p = e->val;
	if (created) {
		p = e->val = xcalloc(1, sizeof(*p));
		p->key = key;
		key = NULL;
		const char *owner = controller_uid(obj);
		p->owner_uid = owner ? xstrdup(owner) : NULL;
		if (sched_pod_requests(obj, &p->req) != 0)
			p->req = (struct sched_res){ 0, 0, 1 };
		ns_link(c, p, obj);
	}
	free(key);
	json_decref(p->obj);
	p->obj = json_incref((json_t *)obj);
	p->labels = json_path(obj, "metadata.labels");
	const char *node = json_path_str(obj, "spec.nodeName");
	bool holds = holds_resources(obj);
	bool freed = false;
	if (node && *node && holds) {
		if (p->node && strcmp(p->node, node) != 0)
			uncount(c, p);
		if (!p->node)
			count_on(c, p, node);
		p->assumed = false;
	} else if (p->node && (!holds || !p->assumed)) {
		uncount(c, p);
		freed = true;
	}
	if (ret_freed)
		*ret_freed = freed;
	return p;
}

void sched_cache_pod_del(struct sched_cache *c, const char *key)
{
	void *v;
	if (!strmap_del(&c->pods, key, &v))
		return;
	struct sched_cpod *p = v;
	uncount(c, p);
	ns_unlink(p);
	cpod_free(p);
}

struct sched_cpod *sched_cache_pod(struct sched_cache *c, const char *key)
{
	struct strmap_ent *e = strmap_get(&c->pods, key);
	return e ? e->val : NULL;
}

void sched_cache_assume(struct sched_cache *c, struct sched_cpod *p, const char *node)
{
	uncount(c, p);
	count_on(c, p, node);
	p->assumed = true;
}

void sched_cache_forget(struct sched_cache *c, struct sched_cpod *p)
{
	if (p->assumed)
		uncount(c, p);
}

void sched_cache_rm_down(struct sched_cache *c, const char *rm, bool down)
{
	for (size_t i = 0; i < c->n; i++)
		if (c->list[i]->rm && strcmp(c->list[i]->rm, rm) == 0)
			c->list[i]->rm_down = down;
}
