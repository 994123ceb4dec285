/* The pod sources: the RM's own (system) pods, and one client plus one pod informer per tenant
 * partition of the RM's registry (/apis/ursa.io/v1/tenantpartitions), started and stopped as
 * registry objects come and go. A real node watches pods with spec.nodeName=<node>; a hollow
 * process watches every bound pod once per partition, drops the events about other processes'
 * nodes unparsed and dispatches the rest by spec.nodeName.
 * Informer handlers only enqueue "tenant/ns/name|partition" keys for the pod worker, which
 * looks the pod up in the partition's store. */
#include <string.h>
#include "kubelet.h"
#include "ursa/jsonutil.h"
#include "ursa/log.h"
#include "ursa/region.h"
#include "ursa/xalloc.h"

#define KL_MAX_PARTITIONS 1024
#define TP_PODS_PATH "/api/v1/tenants/all/pods"
#define RM_PODS_PATH "/api/v1/tenants/system/pods"
#define REGISTRY_PATH "/apis/ursa.io/v1/tenantpartitions"

struct kl_partitions {
	struct kubelet *k;
	pthread_mutex_t mu;           /* guards rm, tps */
	struct kl_partition *rm;      /* the RM's own pods (not in the registry) */
	struct region_peers tps;      /* the registry's tenant partitions; val: struct kl_partition * */
	struct informer *registry;
};

char *kl_pod_wkey(const char *obj_key, const char *partition)
{
	return xasprintf("%s|%s", obj_key, partition);
}

static void enqueue(struct kl_partition *p, const json_t *obj)
{
	if (kl_node_find(p->k, json_path_str(obj, "spec.nodeName")) < 0)
		return;
	char *key = object_key(obj);
	char *wkey = kl_pod_wkey(key, p->name);
	wq_add(p->k->wq, wkey);
	free(wkey);
	free(key);
}

static void on_pod_add(void *ud, const json_t *obj)
{
	enqueue(ud, obj);
}

static void on_pod_update(void *ud, const json_t *old_obj, const json_t *new_obj)
{
	enqueue(ud, new_obj);
}

static void on_pod_delete(void *ud, const json_t *obj)
{
	enqueue(ud, obj);
}

static void on_pod_synced(void *ud)
{
	struct kl_partition *p = ud;
	log_info("partition pods synced", "partition=\"%s\" servers=\"%s\"", p->name, p->servers);
}

static bool skip_foreign(void *ud, const char *line, size_t len)
{
	struct kl_partition *p = ud;
	return kl_event_foreign(p->k, line, len);
}

static const struct informer_handlers pod_handlers = {
	.on_add = on_pod_add, .on_update = on_pod_update, .on_delete = on_pod_delete, .on_synced = on_pod_synced,
};
/* A hollow process's watch has every bound pod (unless multiplexed per node: partition_start);
 * events about other processes' nodes are dropped unparsed. */
static const struct informer_handlers hollow_pod_handlers = {
	.on_add = on_pod_add, .on_update = on_pod_update, .on_delete = on_pod_delete, .on_synced = on_pod_synced,
	.skip_event = skip_foreign,
};

static char *pod_query(const struct kubelet *k)
{
	if (k->hollow)
		return xstrdup("fieldSelector=spec.nodeName%21%3D");
	return xasprintf("fieldSelector=spec.nodeName%%3D%s", k->nodes[0].name);
}

/* Creates a partition and starts its informer; called with ps->mu held and p linked first so
 * no event can arrive for a partition the pod worker cannot find. */
static struct kl_partition *partition_new(struct kubelet *k, const char *name, const char *servers, bool is_rm)
{
	struct kl_partition *p = xcalloc(1, sizeof(*p));
	p->name = xstrdup(name);
	p->servers = xstrdup(servers);
	p->is_rm = is_rm;
	p->k = k;
	atomic_init(&p->refs, 1);
	p->rc = is_rm ? k->rm : rest_new_with_creds(k->creds, servers, "ursa-kubelet");
	p->pods_path = is_rm ? RM_PODS_PATH : TP_PODS_PATH;
	return p;
}

/* A hollow process of up to this many nodes watches a partition's pods as one watch per node,
 * multiplexed on one connection: the partition sends each node's pods only, through its node
 * index, instead of every bound pod to every hollow process. */
#define HOLLOW_MUX_MAX_NODES 10000

static void partition_start(struct kl_partition *p)
{
	struct kubelet *k = p->k;
	char *q = pod_query(k);
	if (k->hollow && k->nnodes <= HOLLOW_MUX_MAX_NODES) {
		char **fields = xcalloc(k->nnodes, sizeof(*fields));
		for (size_t i = 0; i < k->nnodes; i++)
			fields[i] = xasprintf("spec.nodeName=%s", k->nodes[i].name);
		p->inf = informer_start_mux(p->rc, p->pods_path, q, (const char *const *)fields, k->nnodes,
					    &hollow_pod_handlers, p);
		for (size_t i = 0; i < k->nnodes; i++)
			free(fields[i]);
		free(fields);
	} else {
		p->inf = informer_start(p->rc, p->pods_path, q, k->hollow ? &hollow_pod_handlers : &pod_handlers, p);
	}
	free(q);
}

void kl_partition_put(struct kl_partition *p)
{
	if (!p || atomic_fetch_sub(&p->refs, 1) != 1)
		return;
	if (p->inf)
		informer_stop(p->inf);
	if (!p->is_rm && p->rc)
		rest_free(p->rc);
	free(p->name);
	free(p->servers);
	free(p);
}

struct kl_partition *kl_partition_get(struct kubelet *k, const char *name)
{
	struct kl_partitions *ps = k->parts;
	struct kl_partition *found = NULL;
	if (!ps)
		return NULL;
	pthread_mutex_lock(&ps->mu);
	if (ps->rm && strcmp(ps->rm->name, name) == 0) {
		found = ps->rm;
	} else {
		struct region_peer *e = region_peers_find(&ps->tps, name);
		found = e ? e->val : NULL;
	}
	if (found)
		atomic_fetch_add(&found->refs, 1);
	pthread_mutex_unlock(&ps->mu);
	return found;
}

/* Under ps->mu (region_peers_offer/remove): a partition of the registry, its informer started
 * at once (it is linked before its first event can reach the pod worker). */
static void *tp_open(void *ud, const char *name, const char *servers, const json_t *obj)
{
	struct kl_partitions *ps = ud;
	if (name[0] == '@')
		return NULL;
	struct kl_partition *p = partition_new(ps->k, name, servers, false);
	if (!p->rc) {
		log_warn("tenant partition has unusable endpoints", "partition=\"%s\"", name);
		kl_partition_put(p);
		return NULL;
	}
	partition_start(p);
	log_info("tenant partition added", "partition=\"%s\" servers=\"%s\"", name, servers);
	return p;
}

/* No .close: partitions gone or moved are put by settle_unlock once ps->mu is released. */
static const struct region_follow tp_follow = { .open = tp_open };

/* Called with ps->mu held; releases it, then puts what the change closed. */
static void settle_unlock(struct kl_partitions *ps)
{
	size_t n;
	void **closed = region_peers_take_closed(&ps->tps, &n);
	pthread_mutex_unlock(&ps->mu);
	for (size_t i = 0; i < n; i++) {
		struct kl_partition *p = closed[i];
		log_info("tenant partition removed", "partition=\"%s\" servers=\"%s\"", p->name, p->servers);
		kl_partition_put(p);
	}
	free(closed);
}

static void registry_apply(struct kl_partitions *ps, const json_t *tp, bool deleted)
{
	pthread_mutex_lock(&ps->mu);
	if (deleted)
		region_peers_remove(&ps->tps, json_path_str(tp, "metadata.name"));
	else
		region_peers_offer(&ps->tps, tp);
	settle_unlock(ps);
}

static void on_tp_add(void *ud, const json_t *obj)
{
	registry_apply(ud, obj, false);
}

static void on_tp_update(void *ud, const json_t *old_obj, const json_t *new_obj)
{
	registry_apply(ud, new_obj, false);
}

static void on_tp_delete(void *ud, const json_t *obj)
{
	registry_apply(ud, obj, true);
}

static const struct informer_handlers registry_handlers = {
	.on_add = on_tp_add, .on_update = on_tp_update, .on_delete = on_tp_delete,
};

/* Call before kl_pods_start: the pod worker reads k->parts without a lock. */
struct kl_partitions *kl_partitions_start(struct kubelet *k)
{
	struct kl_partitions *ps = xcalloc(1, sizeof(*ps));
	ps->k = k;
	pthread_mutex_init(&ps->mu, NULL);
	region_peers_init(&ps->tps, &tp_follow, ps, KL_MAX_PARTITIONS - 1);
	pthread_mutex_lock(&ps->mu);
	ps->rm = partition_new(k, KL_RM_PARTITION, rest_creds_server(k->creds), true);
	partition_start(ps->rm);
	pthread_mutex_unlock(&ps->mu);
	ps->registry = informer_start(k->rm, REGISTRY_PATH, NULL, &registry_handlers, ps);
	k->parts = ps;  /* complete before the pod worker (started after us) can look at it */
	return ps;
}

void kl_partitions_stop(struct kl_partitions *ps)
{
	if (!ps)
		return;
	informer_stop(ps->registry);
	pthread_mutex_lock(&ps->mu);
	struct kl_partition *rm = ps->rm;
	ps->rm = NULL;
	region_peers_release(&ps->tps); /* the partitions are put by settle_unlock */
	settle_unlock(ps);
	kl_partition_put(rm);
	ps->k->parts = NULL;
	pthread_mutex_destroy(&ps->mu);
	free(ps);
}

/* A referenced copy of the table; returns the count. */
static size_t snapshot(struct kl_partitions *ps, struct kl_partition **out)
{
	size_t n = 0;
	pthread_mutex_lock(&ps->mu);
	if (ps->rm)
		out[n++] = ps->rm;
	for (size_t i = 0; i < ps->tps.n; i++)
		out[n++] = ps->tps.v[i].val;
	for (size_t i = 0; i < n; i++)
		atomic_fetch_add(&out[i]->refs, 1);
	pthread_mutex_unlock(&ps->mu);
	return n;
}

bool kl_partitions_synced(struct kubelet *k)
{
	struct kl_partitions *ps = k->parts;
	if (!ps || !informer_synced(ps->registry))
		return false;
	struct kl_partition **v = xcalloc(KL_MAX_PARTITIONS, sizeof(*v));
	size_t n = snapshot(ps, v);
	bool ok = true;
	for (size_t i = 0; i < n; i++) {
		ok = ok && v[i]->inf && informer_synced(v[i]->inf);
		kl_partition_put(v[i]);
	}
	free(v);
	return ok;
}

struct uid_search {
	const char *uid;
	bool found;
};

static void match_uid(void *ud, const json_t *obj)
{
	struct uid_search *s = ud;
	const char *uid = json_path_str(obj, "metadata.uid");
	if (uid && strcmp(uid, s->uid) == 0)
		s->found = true;
}

bool kl_partitions_have_uid(struct kubelet *k, const char *uid)
{
	struct kl_partitions *ps = k->parts;
	if (!ps)
		return true;  /* cannot tell: keep the pod */
	struct kl_partition **v = xcalloc(KL_MAX_PARTITIONS, sizeof(*v));
	size_t n = snapshot(ps, v);
	struct uid_search s = { uid, false };
	for (size_t i = 0; i < n; i++) {
		if (!s.found && v[i]->inf)
			informer_foreach(v[i]->inf, match_uid, &s);
		kl_partition_put(v[i]);
	}
	free(v);
	return s.found;
}

struct kl_partition *kl_partition_holding(struct kubelet *k, const char *key, const char *uid)
{
	struct kl_partitions *ps = k->parts;
	if (!ps)
		return NULL;
	struct kl_partition **v = xcalloc(KL_MAX_PARTITIONS, sizeof(*v));
	size_t n = snapshot(ps, v);
	struct kl_partition *found = NULL;
	for (size_t i = 0; i < n; i++) {
		json_t *obj = !found && v[i]->inf ? informer_get(v[i]->inf, key) : NULL;
		const char *u = json_path_str(obj, "metadata.uid");
		if (u && strcmp(u, uid) == 0)
			found = v[i];
		else
			kl_partition_put(v[i]);
		json_decref(obj);
	}
	free(v);
	return found;
}
