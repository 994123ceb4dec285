/* rmloss: a tenant partition's answer to a lost zone. A resource manager owns its zone's nodes
 * and runs their node lifecycle controller, so when the whole zone goes (hosts, RM API server,
 * its etcd, its controller manager) nobody taints those nodes or evicts their pods. Every
 * tenant partition therefore watches its registry of RMs, health-checks each one every period with
 * a list of one node, lists the RM's node names (which nodes it owns) when it has not yet and a
 * minute after it last did (a full list of 10,000 nodes every 2 s, from each partition, cost the
 * RM API servers and these controller managers a tenth of a core each; a node that joins a zone
 * less than a minute before the zone is lost is not known as the lost RM's), and once an RM has
 * been silent longer
 * than the node grace period treats all of its nodes as carrying
 * node.kubernetes.io/unreachable:NoExecute since that moment: its own pods there are marked
 * Ready=False and evicted when their toleration runs out, rate-limited. No kubelet will confirm
 * a graceful deletion, so an evicted pod is then deleted with grace 0 and its ReplicaSet
 * replaces it elsewhere. When the RM answers again, eviction stops.
 *
 * State is touched only by the one worker that holds TPC_RMLOSS_KEY (the work queue never
 * hands a key to two workers at once), so it needs no lock. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "tpc.h"
#include "ursa/bucket.h"
#include "ursa/errors.h"
#include "ursa/kinds.h"
#include "ursa/jsonutil.h"
#include "ursa/log.h"
#include "ursa/region.h"
#include "ursa/timeutil.h"
#include "ursa/xalloc.h"

#define REGISTRY_PATH "/apis/ursa.io/v1/resourcemanagers"
#define MAX_RMS 256
#define MAX_NODES_PER_RM 200000
#define NAMES_REFRESH_MS 60000
#define MAX_CANDIDATES 100000

/* Pure parts ---------------------------------------------------------------------------------- */

bool tpc_rm_relist(bool listed, int64_t listed_ms, int64_t now_ms, int64_t refresh_ms)
{
	return !listed || now_ms - listed_ms >= refresh_ms;
}

bool tpc_rm_lost(int64_t last_ok_ms, int64_t now_ms, long long grace_s)
{
	if (grace_s < 0)
		grace_s = 0;
	return now_ms - last_ok_ms > (int64_t)grace_s * 1000;
}

int64_t tpc_unreachable_deadline_ms(const json_t *pod, int64_t lost_ms, long long default_tol_s)
{
	json_t *taint = json_pack("{s:s,s:s}", "key", TAINT_UNREACHABLE, "effect", "NoExecute");
	int64_t d = toleration_deadline_ms(pod, taint, lost_ms);
	json_decref(taint);
	if (d >= 0)
		return d;
	return lost_ms + (int64_t)(default_tol_s < 0 ? 0 : default_tol_s) * 1000;
}

int tpc_parse_rate(const char *s, double *ret)
{
	if (!s || !*s || strlen(s) > 32)
		return E_INVALID;
	char *end = NULL;
	double v = strtod(s, &end);
	if (!end || *end || !isfinite(v) || v < 0 || v > 1e6)
		return E_INVALID;
	*ret = v;
	return 0;
}

/* State ----------------------------------------------------------------------------------------- */

struct rm_entry {
	char *name, *zone;
	struct rest_client *rc;
	int64_t last_ok_ms; /* monotonic; first sight counts as contact */
	int64_t lost_ms;    /* monotonic time it was declared lost, 0 while not lost */
	char **nodes;       /* sorted node names from the last successful list */
	size_t nnodes;
	bool listed;        /* its nodes were listed at least once */
	int64_t listed_ms;  /* monotonic time of that list */
};

struct rmloss {
	struct rest_creds *creds;
	struct informer *registry;
	struct region_peers rms; /* val: struct rm_entry * */
	int64_t now;             /* of the current sweep */
	bool stopping;
	struct token_bucket tb; /* evictions: burst max(1, rate), µs of mono_ms() */
};

static void free_nodes(struct rm_entry *e)
{
	for (size_t i = 0; i < e->nnodes; i++)
		free(e->nodes[i]);
	free(e->nodes);
	e->nodes = NULL;
	e->nnodes = 0;
}

static struct rm_entry *rm_at(const struct rmloss *r, size_t i)
{
	return r->rms.v[i].val;
}

/* A new RM: first sight counts as contact. */
static void *rm_open(void *ud, const char *name, const char *servers, const json_t *obj)
{
	struct rmloss *r = ud;
	struct rm_entry *e = xcalloc(1, sizeof(*e));
	const char *zone = json_path_str(obj, "spec.zone");
	e->name = xstrdup(name);
	e->last_ok_ms = r->now;
	e->rc = rest_new_with_creds(r->creds, servers, "ursa-tp-controller-manager/rmloss");
	log_info("resource manager tracked", "rm=\"%s\" zone=\"%s\" endpoints=\"%s\"", name, zone ? zone : "",
		 servers);
	return e;
}

/* Moved: a new client, the same history. */
static void *rm_move(void *ud, void *val, const char *servers, const json_t *obj)
{
	struct rmloss *r = ud;
	struct rm_entry *e = val;
	rest_free(e->rc);
	e->rc = rest_new_with_creds(r->creds, servers, "ursa-tp-controller-manager/rmloss");
	return e;
}

static void rm_seen(void *ud, void *val, const json_t *obj)
{
	struct rm_entry *e = val;
	const char *zone = json_path_str(obj, "spec.zone");
	free(e->zone);
	e->zone = zone ? xstrdup(zone) : NULL;
}

static void rm_close(void *ud, const char *name, void *val)
{
	struct rmloss *r = ud;
	struct rm_entry *e = val;
	if (!r->stopping)
		log_info("resource manager left the registry", "rm=\"%s\"", name);
	free(e->name);
	free(e->zone);
	rest_free(e->rc);
	free_nodes(e);
	free(e);
}

static const struct region_follow rm_follow = { .open = rm_open, .move = rm_move, .seen = rm_seen, .close = rm_close };

void tpc_rmloss_start(struct tpc *m)
{
	static const struct informer_handlers none = { 0 };
	char *err = NULL;
	struct rest_creds *creds = m->kubeconfig ? rest_creds_from_kubeconfig(m->kubeconfig, &err) : NULL;
	if (!creds) {
		log_error("rmloss disabled: cannot load credentials", "kubeconfig=\"%s\" err=\"%s\"",
			  m->kubeconfig ? m->kubeconfig : "", err ? err : "no --kubeconfig");
		free(err);
		return;
	}
	if (m->rm_period_s < 1)
		m->rm_period_s = 2;
	struct rmloss *r = xcalloc(1, sizeof(*r));
	r->creds = creds;
	region_peers_init(&r->rms, &rm_follow, r, MAX_RMS);
	token_bucket_init(&r->tb, m->evict_rate, m->evict_rate, mono_ms() * 1000);
	r->registry = informer_start(m->rest, REGISTRY_PATH, NULL, &none, r);
	m->rml = r;
	log_info("rmloss started", "grace_s=%lld default_toleration_s=%lld period_s=%lld eviction_rate=%g", m->grace_s,
		 m->default_tol_s, m->rm_period_s, m->evict_rate);
}

void tpc_rmloss_stop(struct tpc *m)
{
	struct rmloss *r = m->rml;
	if (!r)
		return;
	informer_stop(r->registry);
	r->stopping = true;
	region_peers_release(&r->rms);
	rest_creds_free(r->creds);
	free(r);
	m->rml = NULL;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* GET path from the RM: the list (new reference) when it answered 200 with items, else NULL. */
static json_t *list_nodes(struct rm_entry *e, const char *path)
{
	json_t *list = NULL;
	int code = e->rc ? rest_do(e->rc, "GET", path, NULL, NULL, &list) : E_UNAVAILABLE;
	if (code == 200 && json_is_array(json_object_get(list, "items")))
		return list;
	log_debug("resource manager check failed", "rm=\"%s\" code=%d", e->name, code);
	json_decref(list);
	return NULL;
}

/* The health check: one node listed; all the node names when tpc_rm_relist says so. True if the
 * RM answered. */
static bool check_rm(struct rm_entry *e)
{
	json_t *one = list_nodes(e, "/api/v1/nodes?limit=1");
	if (!one)
		return false;
	json_decref(one);
	int64_t now = mono_ms();
	if (!tpc_rm_relist(e->listed, e->listed_ms, now, NAMES_REFRESH_MS))
		return true;
	json_t *list = list_nodes(e, "/api/v1/nodes");
	if (!list)
		return false;
	const json_t *items = json_object_get(list, "items");
	size_t n = json_array_size(items), i;
	if (n > MAX_NODES_PER_RM)
		n = MAX_NODES_PER_RM;
	free_nodes(e);
	e->nodes = xcalloc(n ? n : 1, sizeof(*e->nodes));
	for (i = 0; i < n; i++) {
		const char *nn = json_path_str(json_array_get(items, i), "metadata.name");
		if (nn)
			e->nodes[e->nnodes++] = xstrdup(nn);
	}
	qsort(e->nodes, e->nnodes, sizeof(*e->nodes), cmp_str);
	e->listed = true;
	e->listed_ms = now;
	json_decref(list);
	return true;
}

/* Pods of lost nodes ---------------------------------------------------------------------------- */

struct candidate {
	json_t *pod; /* new reference */
	const struct rm_entry *rm;
};

struct collect {
	struct rmloss *r;
	struct candidate *v;
	size_t n, cap;
};

static bool has_node(const struct rm_entry *e, const char *node)
{
	return e->nnodes && bsearch(&node, e->nodes, e->nnodes, sizeof(*e->nodes), cmp_str);
}

/* The lost RM that owns node, or NULL. An RM lost before this manager ever listed its nodes
 * (the manager started after the zone went down) still owns every node that no reachable RM
 * knows: node names are unique in the region, so such a node can only be in a lost zone. */
static const struct rm_entry *lost_owner(struct rmloss *r, const char *node)
{
	const struct rm_entry *unlisted = NULL;
	for (size_t i = 0; i < r->rms.n; i++) {
		const struct rm_entry *e = rm_at(r, i);
		if (e->lost_ms && has_node(e, node))
			return e;
		if (!e->lost_ms && (has_node(e, node) || !e->listed))
			return NULL; /* a reachable RM has it (or has not answered yet: wait) */
		if (e->lost_ms && !e->listed)
			unlisted = e;
	}
	return unlisted;
}

static void collect_pod(void *ud, const json_t *pod)
{
	struct collect *c = ud;
	const char *node = json_path_str(pod, "spec.nodeName");
	if (!node || !*node || c->n >= MAX_CANDIDATES)
		return;
	const char *phase = json_path_str(pod, "status.phase");
	if (phase && (strcmp(phase, "Succeeded") == 0 || strcmp(phase, "Failed") == 0) &&
	    !json_path(pod, "metadata.deletionTimestamp"))
		return;
	const struct rm_entry *e = lost_owner(c->r, node);
	if (!e)
		return;
	if (c->n == c->cap) {
		c->cap = c->cap ? c->cap * 2 : 64;
		c->v = xrealloc(c->v, c->cap * sizeof(*c->v));
	}
	c->v[c->n].pod = json_incref((json_t *)pod);
	c->v[c->n].rm = e;
	c->n++;
}

static char *pod_base(const json_t *pod)
{
	const char *t = json_path_str(pod, "metadata.tenant"), *ns = json_path_str(pod, "metadata.namespace");
	const char *name = json_path_str(pod, "metadata.name");
	if (!ns || !name)
		return NULL;
	return xasprintf("/api/v1/tenants/%s/namespaces/%s/pods/%s", t && *t ? t : "system", ns, name);
}

static bool ok(int code)
{
	return code >= 200 && code < 300;
}

/* Ready and ContainersReady go False, as the node lifecycle controller does on a lost node. */
static void mark_not_ready(struct tpc *m, const char *base, const json_t *pod)
{
	json_t *conds = pod_conditions_not_ready(pod, "the resource manager of the node is lost", time(NULL));
	if (!conds)
		return;
	json_t *patch = json_pack("{s:{s:o}}", "status", "conditions", conds);
	char *path = xasprintf("%s/status", base);
	int code = tpc_send(m, "PATCH", path, patch, NULL);
	if (!ok(code))
		log_debug("cannot mark pod not ready", "pod=\"%s\" code=%d", base, code);
	free(path);
	json_decref(patch);
}

/* Deletes with grace 0: no kubelet of a lost zone will confirm a graceful deletion. */
static int force_delete(struct tpc *m, const char *base)
{
	char *path = xasprintf("%s?gracePeriodSeconds=0", base);
	int code = tpc_send(m, "DELETE", path, NULL, NULL);
	free(path);
	return code;
}

/* Deletes the pod directly, as Kubernetes' taint-based eviction does: a PodDisruptionBudget
 * guards voluntary disruptions, and pods of a lost zone are gone whatever a budget says. */
static int evict(struct tpc *m, const char *base)
{
	int code = force_delete(m, base);
	return code == 404 ? 200 : code;
}

/* One pod of a lost node: marks it, evicts it when due. Returns the time (monotonic) this pod
 * next needs a look, INT64_MAX for never. */
static int64_t handle_pod(struct tpc *m, const struct candidate *c, int64_t now)
{
	struct rmloss *r = m->rml;
	char *base = pod_base(c->pod);
	if (!base)
		return INT64_MAX;
	int64_t next = INT64_MAX;
	const char *t = json_path_str(c->pod, "metadata.tenant");
	const char *node = json_path_str(c->pod, "spec.nodeName");
	if (json_path(c->pod, "metadata.deletionTimestamp")) {
		/* already going (evicted, or deleted by its owner): nobody will confirm it */
		int code = force_delete(m, base);
		if (!ok(code) && code != 404)
			next = now + 1000;
		goto out;
	}
	mark_not_ready(m, base, c->pod);
	int64_t due = tpc_unreachable_deadline_ms(c->pod, c->rm->lost_ms, m->default_tol_s);
	if (due > now) {
		next = due;
		goto out;
	}
	if (!token_bucket_take(&r->tb, now * 1000)) {
		int64_t w = token_bucket_wait_us(&r->tb, now * 1000);
		w = w == INT64_MAX ? INT64_MAX : (w + 999) / 1000;
		next = w == INT64_MAX ? INT64_MAX : now + (w < 10 ? 10 : w);
		goto out;
	}
	int code = evict(m, base);
	if (ok(code)) {
		log_info("pod evicted from lost resource manager", "rm=\"%s\" node=\"%s\" pod=\"%s/%s/%s\"",
			 c->rm->name, node, t ? t : "", json_path_str(c->pod, "metadata.namespace"),
			 json_path_str(c->pod, "metadata.name"));
		tpc_event(m, c->pod, "Warning", "NodeLost", "Evicted: resource manager %s of node %s is unreachable",
			  c->rm->name, node);
	} else {
		log_warn("cannot evict pod", "rm=\"%s\" pod=\"%s\" code=%d", c->rm->name, base, code);
		next = now + 1000;
	}
out:
	free(base);
	return next;
}

static int64_t handle_lost_pods(struct tpc *m)
{
	struct rmloss *r = m->rml;
	struct collect c = { .r = r };
	informer_foreach(tpc_informer(m, INF_PODS), collect_pod, &c);
	int64_t next = INT64_MAX;
	for (size_t i = 0; i < c.n; i++) {
		int64_t n = handle_pod(m, &c.v[i], mono_ms());
		if (n < next)
			next = n;
		json_decref(c.v[i].pod);
	}
	free(c.v);
	return next;
}

/* One tick: registry, health of every RM, then the pods of lost ones. Always queues the next
 * tick (sooner when an eviction falls due before it). */
int tpc_sync_rmloss(struct tpc *m, const char *key)
{
	struct rmloss *r = m->rml;
	if (!r || strcmp(key, TPC_RMLOSS_KEY) != 0)
		return 0;
	int64_t now = mono_ms();
	r->now = now;
	region_peers_sweep(&r->rms, r->registry); /* follows the registry: new RMs tracked, removed ones dropped */
	bool any_lost = false;
	for (size_t i = 0; i < r->rms.n; i++) {
		struct rm_entry *e = rm_at(r, i);
		now = mono_ms();
		if (check_rm(e)) {
			if (e->lost_ms)
				log_info("resource manager is back; eviction stops", "rm=\"%s\" zone=\"%s\" lost_for_s=%lld",
					 e->name, e->zone ? e->zone : "", (long long)((now - e->lost_ms) / 1000));
			e->last_ok_ms = now;
			e->lost_ms = 0;
			continue;
		}
		if (!e->lost_ms && tpc_rm_lost(e->last_ok_ms, now, m->grace_s)) {
			e->lost_ms = now;
			log_warn("resource manager lost: its nodes are unreachable", "rm=\"%s\" zone=\"%s\" nodes=%zu silent_s=%lld",
				 e->name, e->zone ? e->zone : "", e->nnodes, (long long)((now - e->last_ok_ms) / 1000));
			if (!e->listed)
				log_warn("lost resource manager was never listed: its nodes are the ones no reachable resource manager knows",
					 "rm=\"%s\"", e->name);
		}
		any_lost |= e->lost_ms != 0;
	}
	int64_t delay = m->rm_period_s * 1000;
	if (any_lost && informer_synced(tpc_informer(m, INF_PODS))) {
		int64_t next = handle_lost_pods(m);
		int64_t now2 = mono_ms();
		if (next != INT64_MAX && next - now2 < delay)
			delay = next - now2 < 10 ? 10 : next - now2;
	}
	wq_add_after(m->wq[CTL_RMLOSS], TPC_RMLOSS_KEY, delay);
	return 0;
}
