/* The gateway's view of the region, kept in memory and current through a watch on the
 * gateway's etcd:
 *   <prefix>/partitions/<id>  {"kind":"tp"|"rm","endpoints":["https://..."],"zone":"az-1"}
 *   <prefix>/tenants/<name>   {"partition":"tp-1","state":"pending"|"ready","since":<ms>}
 * plus a node -> resource manager map learned by listing nodes (see reconcile.c). */
#include <stdlib.h>
#include <string.h>
#include "gw.h"
#include "ursa/errors.h"
#include "ursa/etcd.h"
#include "ursa/jsonutil.h"
#include "ursa/timeutil.h"
#include "ursa/xalloc.h"

#define MAX_ENDPOINTS 16

struct registry {
	struct etcd *etcd;
	char *prefix, *tprefix, *pprefix;
	pthread_rwlock_t lock;
	struct strmap tenants;    /* name -> struct tenant_rec */
	struct strmap partitions; /* id -> struct partition (one ref) */
	struct strmap nodes;      /* node -> rm id (char *) */
	struct etcd_watch *watch;
	atomic_bool loaded, need_resync;
	pthread_mutex_t resync_lock;
};

void partition_unref(struct partition *p)
{
	if (!p || atomic_fetch_sub(&p->refs, 1) != 1)
		return;
	for (size_t i = 0; i < p->nendpoints; i++)
		free(p->endpoints[i]);
	free(p->endpoints);
	free(p->id);
	free(p->zone);
	free(p);
}

static void partition_unref_v(void *v)
{
	partition_unref(v);
}

struct partition *partition_parse(const char *id, const char *json, size_t len)
{
	json_t *j = json_parse_limited(json, len, 8, NULL);
	const char *kind = json_str(j, "kind");
	json_t *eps = json_is_object(j) ? json_object_get(j, "endpoints") : NULL;
	struct partition *p = NULL;
	if (!kind || (strcmp(kind, "tp") != 0 && strcmp(kind, "rm") != 0) || !json_is_array(eps) ||
	    json_array_size(eps) == 0 || json_array_size(eps) > MAX_ENDPOINTS)
		goto out;
	p = xcalloc(1, sizeof(*p));
	atomic_init(&p->refs, 1);
	p->id = xstrdup(id);
	p->is_rm = strcmp(kind, "rm") == 0;
	p->zone = json_str(j, "zone") ? xstrdup(json_str(j, "zone")) : NULL;
	p->endpoints = xcalloc(json_array_size(eps), sizeof(char *));
	size_t i;
	json_t *e;
	json_array_foreach(eps, i, e) {
		if (json_is_string(e) && (strncmp(json_string_value(e), "http://", 7) == 0 ||
					  strncmp(json_string_value(e), "https://", 8) == 0))
			p->endpoints[p->nendpoints++] = xstrdup(json_string_value(e));
	}
	if (!p->nendpoints) {
		partition_unref(p);
		p = NULL;
	}
out:
	json_decref(j);
	return p;
}

void tenant_rec_release(struct tenant_rec *t)
{
	free(t->partition);
	t->partition = NULL;
}

void tenant_rec_free(void *v)
{
	if (v) {
		tenant_rec_release(v);
		free(v);
	}
}

static struct tenant_rec *tenant_rec_parse(const char *json, size_t len, int64_t mod_rev)
{
	json_t *j = json_parse_limited(json, len, 4, NULL);
	const char *part = json_str(j, "partition");
	struct tenant_rec *t = NULL;
	if (part && *part) {
		t = xcalloc(1, sizeof(*t));
		t->partition = xstrdup(part);
		t->pending = json_str(j, "state") && strcmp(json_str(j, "state"), "pending") == 0;
		t->since_ms = json_integer_value(json_object_get(j, "since"));
		t->mod_rev = mod_rev;
	}
	json_decref(j);
	return t;
}

/* Applies one key under the write lock. value NULL: deleted. */
static void apply(struct registry *r, const char *key, const char *value, size_t len, int64_t mod_rev)
{
	size_t tl = strlen(r->tprefix), pl = strlen(r->pprefix);
	void *old = NULL;
	if (strncmp(key, r->tprefix, tl) == 0 && key[tl]) {
		const char *name = key + tl;
		struct tenant_rec *t = value ? tenant_rec_parse(value, len, mod_rev) : NULL;
		if (t) {
			struct strmap_ent *e = strmap_put(&r->tenants, name, NULL);
			tenant_rec_free(e->val);
			e->val = t;
		} else if (strmap_del(&r->tenants, name, &old)) {
			tenant_rec_free(old);
		}
	} else if (strncmp(key, r->pprefix, pl) == 0 && key[pl]) {
		const char *id = key + pl;
		struct partition *p = value ? partition_parse(id, value, len) : NULL;
		if (p) {
			struct strmap_ent *e = strmap_put(&r->partitions, id, NULL);
			struct partition *prev = e->val;
			if (prev)
				atomic_store(&p->down, atomic_load(&prev->down));
			partition_unref(prev);
			e->val = p;
		} else if (strmap_del(&r->partitions, id, &old)) {
			partition_unref(old);
		}
	}
}

static void on_events(void *ud, const struct etcd_event *ev, size_t n)
{
	struct registry *r = ud;
	pthread_rwlock_wrlock(&r->lock);
	for (size_t i = 0; i < n; i++) {
		if (ev[i].type == ETCD_EV_PUT)
			apply(r, ev[i].kv.key, ev[i].kv.value, ev[i].kv.value_len, ev[i].kv.mod_rev);
		else
			apply(r, ev[i].kv.key, NULL, 0, 0);
	}
	pthread_rwlock_unlock(&r->lock);
}

static void on_compacted(void *ud, int64_t rev)
{
	struct registry *r = ud;
	atomic_store(&r->need_resync, true);
}

struct registry *registry_new(struct etcd *e, const char *prefix)
{
	struct registry *r = xcalloc(1, sizeof(*r));
	r->etcd = e;
	r->prefix = xstrdup(prefix);
	r->tprefix = xasprintf("%s/tenants/", prefix);
	r->pprefix = xasprintf("%s/partitions/", prefix);
	pthread_rwlock_init(&r->lock, NULL);
	pthread_mutex_init(&r->resync_lock, NULL);
	strmap_init(&r->tenants);
	strmap_init(&r->partitions);
	strmap_init(&r->nodes);
	return r;
}

static int load_and_watch(struct registry *r)
{
	struct etcd_range_result res = { 0 };
	char *start = xasprintf("%s/", r->prefix);
	char *end = etcd_prefix_end(start);
	int err = etcd_range(r->etcd, start, end, 0, 0, false, &res);
	if (err)
		goto out;
	pthread_rwlock_wrlock(&r->lock);
	strmap_release(&r->tenants, tenant_rec_free);
	strmap_init(&r->tenants);
	strmap_release(&r->partitions, partition_unref_v);
	strmap_init(&r->partitions);
	for (size_t i = 0; i < res.n; i++)
		apply(r, res.kvs[i].key, res.kvs[i].value, res.kvs[i].value_len, res.kvs[i].mod_rev);
	pthread_rwlock_unlock(&r->lock);
	static const struct etcd_watch_handlers h = { .on_events = on_events, .on_compacted = on_compacted };
	r->watch = etcd_watch_start(r->etcd, start, end, res.revision + 1, false, &h, r);
	atomic_store(&r->loaded, true);
out:
	etcd_range_result_release(&res);
	free(start);
	free(end);
	return err;
}

int registry_start(struct registry *r)
{
	return load_and_watch(r);
}

void registry_resync_if_needed(struct registry *r)
{
	if (!atomic_exchange(&r->need_resync, false))
		return;
	etcd_watch_stop(r->watch);
	r->watch = NULL;
	if (load_and_watch(r) != 0)
		atomic_store(&r->need_resync, true);
}

bool registry_loaded(struct registry *r)
{
	return atomic_load(&r->loaded);
}

void registry_free(struct registry *r)
{
	if (!r)
		return;
	etcd_watch_stop(r->watch);
	strmap_release(&r->tenants, tenant_rec_free);
	strmap_release(&r->partitions, partition_unref_v);
	strmap_release(&r->nodes, free);
	pthread_rwlock_destroy(&r->lock);
	pthread_mutex_destroy(&r->resync_lock);
	free(r->prefix);
	free(r->tprefix);
	free(r->pprefix);
	free(r);
}

static struct partition *ref(struct partition *p)
{
	if (p)
		atomic_fetch_add(&p->refs, 1);
	return p;
}

static struct partition *first_tp_locked(struct registry *r)
{
	struct partition *best = NULL;
	size_t it;
	for (struct strmap_ent *e = strmap_next(&r->partitions, NULL, &it); e; e = strmap_next(&r->partitions, e, &it)) {
		struct partition *p = e->val;
		if (!p->is_rm && (!best || strcmp(p->id, best->id) < 0))
			best = p;
	}
	return best;
}

struct partition *registry_tenant_partition(struct registry *r, const char *tenant)
{
	struct partition *p = NULL;
	pthread_rwlock_rdlock(&r->lock);
	struct strmap_ent *e = strmap_get(&r->tenants, tenant);
	if (e) {
		struct strmap_ent *pe = strmap_get(&r->partitions, ((struct tenant_rec *)e->val)->partition);
		p = pe ? pe->val : NULL;
	} else if (strcmp(tenant, TENANT_SYSTEM) == 0) {
		p = first_tp_locked(r);
	}
	if (p && p->is_rm)
		p = NULL;
	ref(p);
	pthread_rwlock_unlock(&r->lock);
	return p;
}

struct partition *registry_partition(struct registry *r, const char *id)
{
	pthread_rwlock_rdlock(&r->lock);
	struct strmap_ent *e = strmap_get(&r->partitions, id);
	struct partition *p = ref(e ? e->val : NULL);
	pthread_rwlock_unlock(&r->lock);
	return p;
}

static int by_id(const void *a, const void *b)
{
	return strcmp((*(struct partition *const *)a)->id, (*(struct partition *const *)b)->id);
}

struct partition **registry_partitions(struct registry *r, bool rm, size_t *ret_n)
{
	pthread_rwlock_rdlock(&r->lock);
	struct partition **ps = xcalloc(r->partitions.n + 1, sizeof(*ps));
	size_t n = 0, it;
	for (struct strmap_ent *e = strmap_next(&r->partitions, NULL, &it); e; e = strmap_next(&r->partitions, e, &it)) {
		struct partition *p = e->val;
		if (p->is_rm == rm)
			ps[n++] = ref(p);
	}
	pthread_rwlock_unlock(&r->lock);
	qsort(ps, n, sizeof(*ps), by_id);
	*ret_n = n;
	return ps;
}

void partitions_free(struct partition **ps, size_t n)
{
	for (size_t i = 0; i < n; i++)
		partition_unref(ps[i]);
	free(ps);
}

struct partition *registry_pick_tp(struct registry *r)
{
	struct partition *best = NULL;
	size_t best_n = 0, it, jt;
	pthread_rwlock_rdlock(&r->lock);
	for (struct strmap_ent *e = strmap_next(&r->partitions, NULL, &it); e; e = strmap_next(&r->partitions, e, &it)) {
		struct partition *p = e->val;
		if (p->is_rm || atomic_load(&p->down))
			continue;
		size_t n = 0;
		for (struct strmap_ent *t = strmap_next(&r->tenants, NULL, &jt); t; t = strmap_next(&r->tenants, t, &jt))
			n += strcmp(((struct tenant_rec *)t->val)->partition, p->id) == 0;
		if (!best || n < best_n || (n == best_n && strcmp(p->id, best->id) < 0)) {
			best = p;
			best_n = n;
		}
	}
	ref(best);
	pthread_rwlock_unlock(&r->lock);
	return best;
}

int registry_tenant(struct registry *r, const char *tenant, struct tenant_rec *ret)
{
	int err = E_NOT_FOUND;
	pthread_rwlock_rdlock(&r->lock);
	struct strmap_ent *e = strmap_get(&r->tenants, tenant);
	if (e) {
		*ret = *(struct tenant_rec *)e->val;
		ret->partition = xstrdup(ret->partition);
		err = 0;
	}
	pthread_rwlock_unlock(&r->lock);
	return err;
}

size_t registry_tenant_count(struct registry *r)
{
	pthread_rwlock_rdlock(&r->lock);
	size_t n = r->tenants.n;
	pthread_rwlock_unlock(&r->lock);
	return n;
}

void registry_tenants_snapshot(struct registry *r, struct strmap *ret)
{
	strmap_init(ret);
	size_t it;
	pthread_rwlock_rdlock(&r->lock);
	for (struct strmap_ent *e = strmap_next(&r->tenants, NULL, &it); e; e = strmap_next(&r->tenants, e, &it)) {
		struct tenant_rec *t = xmalloc(sizeof(*t));
		*t = *(struct tenant_rec *)e->val;
		t->partition = xstrdup(t->partition);
		strmap_put(ret, e->key, NULL)->val = t;
	}
	pthread_rwlock_unlock(&r->lock);
}

static char *tenant_value(const char *partition, bool pending)
{
	struct buf b = BUF_INIT;
	buf_adds(&b, "{\"partition\":");
	buf_add_json_str(&b, partition, strlen(partition));
	buf_addf(&b, ",\"state\":\"%s\",\"since\":%lld}", pending ? "pending" : "ready", (long long)now_ms());
	return buf_detach(&b, NULL);
}

/* The watch applies writes asynchronously; apply our own at once too, so that the request
 * that made them (and the next one on this gateway) sees them. */
static void apply_now(struct registry *r, const char *key, const char *value, int64_t rev)
{
	pthread_rwlock_wrlock(&r->lock);
	apply(r, key, value, value ? strlen(value) : 0, rev);
	pthread_rwlock_unlock(&r->lock);
}

int registry_assign(struct registry *r, const char *tenant, const char *partition, bool pending, int64_t *ret_rev)
{
	char *key = xasprintf("%s%s", r->tprefix, tenant);
	char *val = tenant_value(partition, pending);
	int64_t rev = 0;
	int err = etcd_create(r->etcd, key, val, strlen(val), 0, &rev);
	if (!err) {
		apply_now(r, key, val, rev);
		*ret_rev = rev;
	}
	free(key);
	free(val);
	return err;
}

int registry_confirm(struct registry *r, const char *tenant, const char *partition, int64_t rev)
{
	char *key = xasprintf("%s%s", r->tprefix, tenant);
	char *val = tenant_value(partition, false);
	int64_t nrev = 0;
	int err = etcd_update(r->etcd, key, val, strlen(val), rev, &nrev, NULL);
	if (!err)
		apply_now(r, key, val, nrev);
	free(key);
	free(val);
	return err;
}

int registry_unassign(struct registry *r, const char *tenant, int64_t rev)
{
	char *key = xasprintf("%s%s", r->tprefix, tenant);
	int err = etcd_delete(r->etcd, key, rev, NULL, NULL);
	if (!err || err == E_NOT_FOUND)
		apply_now(r, key, NULL, 0);
	free(key);
	return err;
}

int registry_put_partition(struct registry *r, const char *id, const char *json)
{
	char *key = xasprintf("%s%s", r->pprefix, id);
	int err = etcd_put(r->etcd, key, json, strlen(json), 0, NULL);
	free(key);
	return err;
}

void registry_set_nodes(struct registry *r, const char *rm, char **nodes, size_t n)
{
	pthread_rwlock_wrlock(&r->lock);
	size_t it;
	/* Drop this RM's old entries, then record the current ones. */
	struct strmap keep;
	strmap_init(&keep);
	for (struct strmap_ent *e = strmap_next(&r->nodes, NULL, &it); e; e = strmap_next(&r->nodes, e, &it)) {
		if (strcmp(e->val, rm) != 0)
			strmap_put(&keep, e->key, NULL)->val = xstrdup(e->val);
	}
	strmap_release(&r->nodes, free);
	r->nodes = keep;
	for (size_t i = 0; i < n; i++) {
		struct strmap_ent *e = strmap_put(&r->nodes, nodes[i], NULL);
		free(e->val);
		e->val = xstrdup(rm);
	}
	pthread_rwlock_unlock(&r->lock);
}

char *registry_node_rm(struct registry *r, const char *node)
{
	pthread_rwlock_rdlock(&r->lock);
	struct strmap_ent *e = strmap_get(&r->nodes, node);
	char *rm = e ? xstrdup(e->val) : NULL;
	pthread_rwlock_unlock(&r->lock);
	return rm;
}
