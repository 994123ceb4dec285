/* The node lifecycle controller. Every monitor period it compares each node's heartbeats (the
 * lease's renewTime and the Ready condition's lastHeartbeatTime, timed by when this process
 * saw them change, so clocks need not agree) with the grace period, marks silent nodes
 * Ready=Unknown, and works out each zone's state. Taints go on through one token bucket per
 * zone at the zone's rate (every pass takes as many waiting nodes as the bucket holds, so a
 * zone going dark at once is tainted at that rate, or not at all), come off at once when
 * the node is Ready again. Pods of tainted nodes, in every tenant partition of the registry
 * and in the RM's own system tenant, are marked Ready=False and evicted when their toleration
 * runs out. All state belongs to the thread calling nodelifecycle_tick. */
#include <stdlib.h>
#include <string.h>
#include "client/client_internal.h"
#include "rmcm.h"
#include "ursa/jsonutil.h"
#include "ursa/log.h"
#include "ursa/timeutil.h"
#include "ursa/xalloc.h"

#define LEASES_NS "kube-node-lease"
#define MAX_ZONES 4096
#define MAX_PODS_PER_NODE 10000

struct nl_node {
	char *zone;
	char *renew, *heartbeat;  /* last values seen */
	int64_t probe_ms;         /* mono time of the last heartbeat change seen */
	enum node_ready ready;
	int64_t taint_wanted_ms;  /* mono time the wanted taint became due; 0 if none pending */
	int64_t next_evict_ms;    /* mono time of the next look at the node's pods; 0 if none */
	bool pods_marked;         /* pods marked Ready=False since the node left Ready */
	bool no_condition;        /* no Ready condition yet: no taint before the grace runs out */
	bool seen;
};

struct nl_zone {
	char *name;
	struct token_bucket tb;
	enum zone_state state;
	int ready, not_ready;
};

struct nodelifecycle {
	const struct rmcm_options *o;
	struct rest_client *rm;
	struct informer *nodes, *leases;
	struct tp_set *tps;
	struct strmap state;  /* node name -> struct nl_node */
	struct nl_zone *zones;
	size_t nzones;
	bool all_full;
	int64_t last_monitor_ms;
};

struct nodelifecycle *nodelifecycle_new(const struct rmcm_options *o, struct rest_client *rm,
					struct informer *nodes, struct informer *leases, struct tp_set *tps)
{
	struct nodelifecycle *nl = xcalloc(1, sizeof(*nl));
	nl->o = o;
	nl->rm = rm;
	nl->nodes = nodes;
	nl->leases = leases;
	nl->tps = tps;
	strmap_init(&nl->state);
	nl->zones = xcalloc(MAX_ZONES, sizeof(*nl->zones));
	return nl;
}

static void node_free(void *p)
{
	struct nl_node *n = p;
	if (!n)
		return;
	free(n->zone);
	free(n->renew);
	free(n->heartbeat);
	free(n);
}

void nodelifecycle_free(struct nodelifecycle *nl)
{
	if (!nl)
		return;
	strmap_release(&nl->state, node_free);
	for (size_t i = 0; i < nl->nzones; i++)
		free(nl->zones[i].name);
	free(nl->zones);
	free(nl);
}

/* Replaces *slot with v when they differ; true if it changed. */
static bool update_str(char **slot, const char *v)
{
	if (!v || (*slot && strcmp(*slot, v) == 0))
		return false;
	free(*slot);
	*slot = xstrdup(v);
	return true;
}

/* Snapshots ----------------------------------------------------------------------------------- */
struct snap {
	json_t *nodes;       /* array of node objects */
	struct strmap renew; /* lease name -> renewTime (val: new string) */
};

static void snap_node(void *ud, const json_t *obj)
{
	struct snap *s = ud;
	json_array_append(s->nodes, (json_t *)obj);
}

static void snap_lease(void *ud, const json_t *obj)
{
	struct snap *s = ud;
	const char *ns = json_path_str(obj, "metadata.namespace");
	const char *name = json_path_str(obj, "metadata.name");
	const char *renew = json_path_str(obj, "spec.renewTime");
	if (!name || !renew || (ns && strcmp(ns, LEASES_NS) != 0))
		return;
	struct strmap_ent *e = strmap_put(&s->renew, name, NULL);
	free(e->val);
	e->val = xstrdup(renew);
}

static const json_t *ready_condition(const json_t *node)
{
	size_t i;
	const json_t *c;
	json_array_foreach(json_path(node, "status.conditions"), i, c) {
		const char *t = json_str(c, "type");
		if (t && strcmp(t, "Ready") == 0)
			return c;
	}
	return NULL;
}

/* Writes ------------------------------------------------------------------------------------ */
static char *node_path(const char *name, const char *sub)
{
	return xasprintf("/api/v1/nodes/%s%s", name, sub);
}

static bool ok(int code)
{
	return code >= 200 && code < 300;
}

static int mark_unknown(struct nodelifecycle *nl, const json_t *node, const char *name)
{
	json_t *patch = json_pack("{s:{s:o}}", "status", "conditions", conditions_unknown(node, now_ms() / 1000));
	char *path = node_path(name, "/status");
	int code = rest_do(nl->rm, "PATCH", path, patch, "application/merge-patch+json", NULL);
	free(path);
	json_decref(patch);
	return code;
}

static int set_taints(struct nodelifecycle *nl, const json_t *node, const char *name, const char *key)
{
	json_t *taints = taints_replace(json_path(node, "spec.taints"), key, now_ms() / 1000);
	json_t *patch = json_pack("{s:{s:o}}", "spec", "taints", taints);
	char *path = node_path(name, "");
	int code = rest_do(nl->rm, "PATCH", path, patch, "application/merge-patch+json", NULL);
	free(path);
	json_decref(patch);
	return code;
}

/* Zones --------------------------------------------------------------------------------------- */
static struct nl_zone *zone_get(struct nodelifecycle *nl, const char *name, int64_t now)
{
	for (size_t i = 0; i < nl->nzones; i++)
		if (strcmp(nl->zones[i].name, name) == 0)
			return &nl->zones[i];
	if (nl->nzones >= MAX_ZONES)
		return NULL;
	struct nl_zone *z = &nl->zones[nl->nzones++];
	z->name = xstrdup(name);
	z->state = ZONE_NORMAL;
	token_bucket_init(&z->tb, nl->o->rate, zone_eviction_burst(nl->o->rate, nl->o->period_s), now * 1000);
	return z;
}

static void zones_update(struct nodelifecycle *nl, int64_t now)
{
	struct eviction_rates r = { nl->o->rate, nl->o->secondary, (int)nl->o->large_cluster };
	size_t nfull = 0, nused = 0;
	enum zone_state st[MAX_ZONES];
	for (size_t i = 0; i < nl->nzones; i++) {
		struct nl_zone *z = &nl->zones[i];
		st[i] = zone_state_compute(z->ready, z->not_ready, nl->o->threshold);
		if (z->ready + z->not_ready > 0) {
			nused++;
			nfull += st[i] == ZONE_FULL_DISRUPTION;
		}
	}
	bool all_full = nused > 0 && nfull == nused;
	if (all_full != nl->all_full)
		log_warn(all_full ? "every zone is fully disrupted: eviction stops" : "disruption mode ends",
			 "zones=%zu", nused);
	nl->all_full = all_full;
	for (size_t i = 0; i < nl->nzones; i++) {
		struct nl_zone *z = &nl->zones[i];
		if (st[i] != z->state)
			log_info("zone state changed", "zone=\"%s\" from=%s to=%s ready=%d not_ready=%d", z->name,
				 zone_state_name(z->state), zone_state_name(st[i]), z->ready, z->not_ready);
		z->state = st[i];
		double rate = zone_eviction_rate(st[i], z->ready + z->not_ready, all_full, &r);
		zone_bucket_retune(&z->tb, rate, nl->o->period_s, now * 1000);
	}
}

/* Monitor pass ------------------------------------------------------------------------------- */
static void observe(struct nodelifecycle *nl, const json_t *node, struct snap *s, int64_t now, bool leader)
{
	const char *name = json_path_str(node, "metadata.name");
	if (!name)
		return;
	bool created = false;
	struct strmap_ent *e = strmap_put(&nl->state, name, &created);
	struct nl_node *n = e->val;
	if (created) {
		n = e->val = xcalloc(1, sizeof(*n));
		n->probe_ms = now; /* a node first seen gets a full grace period */
	}
	n->seen = true;
	update_str(&n->zone, node_zone_of(node));
	struct strmap_ent *le = strmap_get(&s->renew, name);
	if (le && update_str(&n->renew, le->val) && !created)
		n->probe_ms = now;
	if (update_str(&n->heartbeat, json_str(ready_condition(node), "lastHeartbeatTime")) && !created)
		n->probe_ms = now;
	n->ready = node_ready_of(node);
	n->no_condition = ready_condition(node) == NULL;
	/* a node that never posted a Ready condition counts as Unknown but has not been marked so */
	if (leader && (n->ready != NODE_READY_UNKNOWN || n->no_condition) &&
	    node_heartbeat_stale(n->probe_ms, now, nl->o->grace_s * 1000)) {
		int code = mark_unknown(nl, node, name);
		if (ok(code)) {
			n->ready = NODE_READY_UNKNOWN;
			log_warn("node stopped posting status", "node=\"%s\" ready=Unknown silent_s=%lld", name,
				 (long long)((now - n->probe_ms) / 1000));
		} else {
			log_warn("cannot mark node unknown", "node=\"%s\" code=%d", name, code);
		}
	}
	struct nl_zone *z = zone_get(nl, n->zone, now);
	if (z && n->ready == NODE_READY_TRUE)
		z->ready++;
	else if (z)
		z->not_ready++;
}

/* Taints that match the node's Ready state come on later (rate-limited), go off now. */
static void reconcile_taints(struct nodelifecycle *nl, const json_t *node, bool leader, int64_t now)
{
	const char *name = json_path_str(node, "metadata.name");
	struct strmap_ent *e = name ? strmap_get(&nl->state, name) : NULL;
	if (!e)
		return;
	struct nl_node *n = e->val;
	const json_t *taints = json_path(node, "spec.taints");
	const char *want = n->no_condition ? NULL : node_wanted_taint(n->ready);
	bool has_any = taints_have(taints, TAINT_UNREACHABLE, "NoExecute") ||
		       taints_have(taints, TAINT_NOT_READY, "NoExecute");
	if (n->ready == NODE_READY_TRUE)
		n->pods_marked = false;
	if (!want) {
		n->taint_wanted_ms = 0;
		if (n->no_condition)
			return;
		if (has_any && leader && ok(set_taints(nl, node, name, NULL)))
			log_info("node ready again: taint removed", "node=\"%s\"", name);
		return;
	}
	if (taints_have(taints, want, "NoExecute")) {
		n->taint_wanted_ms = 0;
		if (!n->next_evict_ms)
			n->next_evict_ms = now;
		return;
	}
	if (!n->taint_wanted_ms)
		n->taint_wanted_ms = now;
}

static void monitor(struct nodelifecycle *nl, bool leader, int64_t now)
{
	struct snap s = { .nodes = json_array() };
	strmap_init(&s.renew);
	informer_foreach(nl->nodes, snap_node, &s);
	informer_foreach(nl->leases, snap_lease, &s);
	for (size_t i = 0; i < nl->nzones; i++)
		nl->zones[i].ready = nl->zones[i].not_ready = 0;
	size_t iter, i;
	struct strmap_ent *e;
	for (e = strmap_next(&nl->state, NULL, &iter); e; e = strmap_next(&nl->state, e, &iter))
		((struct nl_node *)e->val)->seen = false;
	json_t *node;
	json_array_foreach(s.nodes, i, node)
		observe(nl, node, &s, now, leader);
	/* forget nodes that are gone (collect first: no deletes while iterating) */
	json_t *gone = json_array();
	for (e = strmap_next(&nl->state, NULL, &iter); e; e = strmap_next(&nl->state, e, &iter))
		if (!((struct nl_node *)e->val)->seen)
			json_array_append_new(gone, json_string(e->key));
	json_t *g;
	json_array_foreach(gone, i, g) {
		void *val = NULL;
		strmap_del(&nl->state, json_string_value(g), &val);
		node_free(val);
	}
	json_decref(gone);
	zones_update(nl, now);
	json_array_foreach(s.nodes, i, node)
		reconcile_taints(nl, node, leader, now);
	json_decref(s.nodes);
	strmap_release(&s.renew, free);
}

/* Tainting through the zones' buckets ------------------------------------------------------- */
struct cand {
	const char *name;
	struct nl_node *n;
};

static int cand_cmp(const void *a, const void *b)
{
	const struct cand *x = a, *y = b;
	return (x->n->taint_wanted_ms > y->n->taint_wanted_ms) - (x->n->taint_wanted_ms < y->n->taint_wanted_ms);
}

static void taint_node(struct nodelifecycle *nl, const char *name, struct nl_node *n, int64_t now)
{
	char *key = xasprintf("system//%s", name);
	json_t *node = informer_get(nl->nodes, key);
	free(key);
	const char *want = node_wanted_taint(n->ready);
	if (!node || !want) {
		json_decref(node);
		n->taint_wanted_ms = 0;
		return;
	}
	int code = set_taints(nl, node, name, want);
	if (ok(code)) {
		log_warn("node tainted", "node=\"%s\" taint=%s:NoExecute zone=\"%s\"", name, want, n->zone);
		n->taint_wanted_ms = 0;
		n->next_evict_ms = now;
	} else {
		log_warn("cannot taint node", "node=\"%s\" code=%d", name, code);
	}
	json_decref(node);
}

static void taint_due(struct nodelifecycle *nl, int64_t now)
{
	size_t cap = nl->state.n, nc = 0, iter;
	struct cand *c = xcalloc(cap ? cap : 1, sizeof(*c));
	struct strmap_ent *e;
	for (e = strmap_next(&nl->state, NULL, &iter); e; e = strmap_next(&nl->state, e, &iter)) {
		struct nl_node *n = e->val;
		if (n->taint_wanted_ms && nc < cap)
			c[nc++] = (struct cand){ e->key, n };
	}
	qsort(c, nc, sizeof(*c), cand_cmp);
	for (size_t i = 0; i < nc; i++) {
		struct nl_zone *z = zone_get(nl, c[i].n->zone ? c[i].n->zone : "", now);
		if (z && token_bucket_take(&z->tb, now * 1000))
			taint_node(nl, c[i].name, c[i].n, now);
	}
	free(c);
}

/* Pods of tainted nodes --------------------------------------------------------------------- */
static void mark_pod_not_ready(struct rest_client *rc, const char *base, const json_t *pod)
{
	json_t *conds = pod_conditions_not_ready(pod, NULL, time(NULL));
	if (!conds)
		return;
	json_t *patch = json_pack("{s:{s:o}}", "status", "conditions", conds);
	char *path = xasprintf("%s/status", base);
	rest_do(rc, "PATCH", path, patch, "application/merge-patch+json", NULL);
	free(path);
	json_decref(patch);
}

/* Evicts through the eviction subresource, deleting when the server has none. */
static int evict_pod(struct rest_client *rc, const char *base, const json_t *pod)
{
	json_t *ev = json_pack("{s:s, s:s, s:{s:s, s:s}}", "apiVersion", "policy/v1", "kind", "Eviction", "metadata",
			       "name", json_path_str(pod, "metadata.name"), "namespace",
			       json_path_str(pod, "metadata.namespace"));
	char *path = xasprintf("%s/eviction", base);
	int code = rest_do(rc, "POST", path, ev, NULL, NULL);
	free(path);
	json_decref(ev);
	if (code == 404 || code == 405)
		code = rest_do(rc, "DELETE", base, NULL, NULL, NULL);
	return code;
}

struct podctx {
	struct nodelifecycle *nl;
	const char *node, *partition;
	const json_t *taints;
	bool mark;
	int64_t next_wall_ms; /* earliest future eviction */
	int evicted;
};

static void handle_pod(struct podctx *pc, struct rest_client *rc, const json_t *pod)
{
	const char *tenant = json_path_str(pod, "metadata.tenant");
	const char *ns = json_path_str(pod, "metadata.namespace");
	const char *name = json_path_str(pod, "metadata.name");
	if (!name || !ns || json_path(pod, "metadata.deletionTimestamp"))
		return;
	char *base = xasprintf("/api/v1/tenants/%s/namespaces/%s/pods/%s", tenant && *tenant ? tenant : "system", ns,
			       name);
	int64_t wall = now_ms();
	int64_t when = pod_eviction_time_ms(pod, pc->taints, pc->nl->o->default_tol_s, wall);
	if (when <= wall) {
		int code = evict_pod(rc, base, pod);
		if (ok(code) || code == 404) {
			pc->evicted++;
			log_info("pod evicted", "node=\"%s\" partition=\"%s\" pod=\"%s/%s/%s\"", pc->node,
				 pc->partition, tenant ? tenant : "", ns, name);
		} else {
			log_warn("cannot evict pod", "partition=\"%s\" pod=\"%s/%s/%s\" code=%d", pc->partition,
				 tenant ? tenant : "", ns, name, code);
			if (wall + 1000 < pc->next_wall_ms)
				pc->next_wall_ms = wall + 1000;
		}
	} else {
		if (pc->mark)
			mark_pod_not_ready(rc, base, pod);
		if (when < pc->next_wall_ms)
			pc->next_wall_ms = when;
	}
	free(base);
}

/* The node's pods in one partition; false when the list failed. */
static bool partition_pods(struct podctx *pc, struct rest_client *rc, const char *collection)
{
	char *path = xasprintf("%s?fieldSelector=spec.nodeName%%3D%s&limit=%d", collection, pc->node,
			       MAX_PODS_PER_NODE);
	json_t *list = NULL;
	int code = rest_do(rc, "GET", path, NULL, NULL, &list);
	free(path);
	bool good = code == 200 && list;
	size_t i;
	const json_t *pod;
	if (good)
		json_array_foreach(json_object_get(list, "items"), i, pod) {
			const char *nn = json_path_str(pod, "spec.nodeName");
			if (nn && strcmp(nn, pc->node) == 0)
				handle_pod(pc, rc, pod);
		}
	else
		log_warn("cannot list pods of node", "node=\"%s\" partition=\"%s\" code=%d", pc->node, pc->partition,
			 code);
	json_decref(list);
	return good;
}

static bool has_no_execute(const json_t *taints)
{
	size_t i;
	const json_t *t;
	json_array_foreach(taints, i, t) {
		const char *effect = json_str(t, "effect");
		if (effect && strcmp(effect, "NoExecute") == 0)
			return true;
	}
	return false;
}

static void check_pods(struct nodelifecycle *nl, const char *name, struct nl_node *n, int64_t now)
{
	char *key = xasprintf("system//%s", name);
	json_t *node = informer_get(nl->nodes, key);
	free(key);
	const json_t *taints = json_path(node, "spec.taints");
	if (!node || !has_no_execute(taints)) {
		n->next_evict_ms = 0;
		json_decref(node);
		return;
	}
	struct podctx pc = { .nl = nl, .node = name, .taints = taints, .mark = !n->pods_marked,
			     .next_wall_ms = INT64_MAX };
	bool all_ok = true;
	if (!nl->all_full) {
		struct rest_client **clients;
		char **names;
		size_t np = tp_set_refresh(nl->tps, &clients, &names);
		for (size_t i = 0; i < np; i++) {
			pc.partition = names[i];
			all_ok &= partition_pods(&pc, clients[i], "/api/v1/tenants/all/pods");
		}
		pc.partition = "rm";
		all_ok &= partition_pods(&pc, nl->rm, "/api/v1/tenants/system/pods");
		if (all_ok)
			n->pods_marked = true;
	}
	int64_t next = now + nl->o->period_s * 1000;
	if (pc.next_wall_ms != INT64_MAX) {
		int64_t in = pc.next_wall_ms - now_ms();
		if (now + (in > 0 ? in : 0) < next)
			next = now + (in > 0 ? in : 0);
	}
	n->next_evict_ms = next;
	json_decref(node);
}

static void evict_due(struct nodelifecycle *nl, int64_t now)
{
	size_t iter;
	struct strmap_ent *e;
	for (e = strmap_next(&nl->state, NULL, &iter); e; e = strmap_next(&nl->state, e, &iter)) {
		struct nl_node *n = e->val;
		if (n->next_evict_ms && now >= n->next_evict_ms)
			check_pods(nl, e->key, n, now);
	}
}

void nodelifecycle_tick(struct nodelifecycle *nl, bool leader)
{
	int64_t now = mono_ms();
	if (!nl->last_monitor_ms || now - nl->last_monitor_ms >= nl->o->period_s * 1000) {
		nl->last_monitor_ms = now;
		monitor(nl, leader, now);
	}
	if (!leader)
		return;
	taint_due(nl, now);
	evict_due(nl, now);
}
