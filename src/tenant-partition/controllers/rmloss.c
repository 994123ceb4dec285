/* rmloss: a tenant partition's answer to a lost zone. A resource manager owns its zone's nodes
 * and runs their node lifecycle controller, so when the whole zone goes (hosts, RM API server,
 * its etcd, its controller manager) nobody taints those nodes or evicts their pods. Every
 * tenant partition therefore watches its registry of RMs, health-checks each one by listing its
 * nodes (which also tells which node names the RM owns), and once an RM has been silent longer
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
#include "ursa/kinds.h"
#include "ursa/errors.h"
#include "ursa/jsonutil.h"
#include "ursa/log.h"
#include "ursa/timeutil.h"
#include "ursa/xalloc.h"

#define REGISTRY_PATH "/apis/ursa.io/v1/resourcemanagers"
#define MAX_RMS 256
#define MAX_NODES_PER_RM 20000
#define MAX_CANDIDATES 100000

/* Pure parts ---------------------------------------------------------------------------------- */

bool tpc_rm_lost(int64_t last_ok_ms, int64_t now_ms, long long grace_s)
{
	if (grace_s < 0)
		grace_s = 0;
	return now_ms - last_ok_ms > (int64_t)grace_s * 1000;
}

int64_t tpc_unreachable_deadline_ms(const json_t *pod, int64_t lost_ms, long long default_tol_s)
{
	json_t *taint = json_pack("{s:s,s:s}", "key", TPC_TAINT_UNREACHABLE, "effect", "NoExecute");
	int64_t d = toleration_deadline_ms(pod, taint, lost_ms);
	json_decref(taint);
	if (d >= 0)
		return d;
	return lost_ms + (int64_t)(default_tol_s < 0 ? 0 : default_tol_s) * 1000;
}

static void refill(struct tpc_bucket *b, int64_t now_ms)
{
	if (now_ms > b->last_ms) {
		b->tokens = fmin(b->burst, b->tokens + b->rate * (double)(now_ms - b->last_ms) / 1000.0);
		b->last_ms = now_ms;
	}
}

void tpc_bucket_init(struct tpc_bucket *b, double rate, int64_t now_ms)
{
	b->rate = rate > 0 ? rate : 0;
	b->burst = b->rate > 1 ? b->rate : 1;
	b->tokens = b->rate > 0 ? b->burst : 0;
	b->last_ms = now_ms;
}

bool tpc_bucket_take(struct tpc_bucket *b, int64_t now_ms)
{
	refill(b, now_ms);
	if (b->rate <= 0 || b->tokens < 1.0 - 1e-9)
		return false;
	b->tokens = fmax(0, b->tokens - 1.0);
	return true;
}

int64_t tpc_bucket_wait_ms(struct tpc_bucket *b, int64_t now_ms)
{
	refill(b, now_ms);
	if (b->rate <= 0)
		return INT64_MAX;
	if (b->tokens >= 1.0 - 1e-9)
		return 0;
	return (int64_t)ceil((1.0 - b->tokens) * 1000.0 / b->rate);
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
	char *name, *servers, *zone;
	struct rest_client *rc;
	int64_t last_ok_ms; /* monotonic; first sight counts as contact */
	int64_t lost_ms;    /* monotonic time it was declared lost, 0 while not lost */
	char **nodes;       /* sorted node names from the last successful list */
	size_t nnodes;
	bool seen;          /* still in the registry */
	bool listed;        /* its nodes were listed at least once */
};

struct rmloss {
	struct rest_creds *creds;
	struct informer *registry;
	struct rm_entry *v;
	size_t n;
	struct tpc_bucket tb;
};

static void free_nodes(struct rm_entry *e)
{
	for (size_t i = 0; i < e->nnodes; i++)
		free(e->nodes[i]);
	free(e->nodes);
	e->nodes = NULL;
	e->nnodes = 0;
}

static void entry_release(struct rm_entry *e)
{
	free(e->name);
	free(e->servers);
	free(e->zone);
	rest_free(e->rc);
	free_nodes(e);
}

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
	r->v = xcalloc(MAX_RMS, sizeof(*r->v));
	tpc_bucket_init(&r->tb, m->evict_rate, mono_ms());
	r->registry = informer_start(m->rest, REGISTRY_PATH, NULL, &none, r);
	m->rml = r;
	wq_add(m->wq[CTL_RMLOSS], TPC_RMLOSS_KEY);
	log_info("rmloss started", "grace_s=%lld default_toleration_s=%lld period_s=%lld eviction_rate=%g", m->grace_s,
		 m->default_tol_s, m->rm_period_s, m->evict_rate);
}

void tpc_rmloss_stop(struct tpc *m)
{
	struct rmloss *r = m->rml;
	if (!r)
		return;
	informer_stop(r->registry);
	for (size_t i = 0; i < r->n; i++)
		entry_release(&r->v[i]);
	free(r->v);
	rest_creds_free(r->creds);
	free(r);
	m->rml = NULL;
}

/* "https://a,https://b" from spec.endpoints; new string or NULL. */
static char *endpoints_of(const json_t *rm)
{
	struct buf b = BUF_INIT;
	size_t i;
	const json_t *e;
	json_array_foreach(json_path(rm, "spec.endpoints"), i, e) {
		const char *s = json_string_value(e);
		if (!s || !*s || strchr(s, ',') || strlen(s) > 2048)
			continue;
		if (b.len)
			buf_addch(&b, ',');
		buf_adds(&b, s);
	}
	return b.len ? buf_detach(&b, NULL) : NULL;
}

struct sync_ctx {
	struct rmloss *r;
	int64_t now;
};

static void apply_one(void *ud, const json_t *rm)
{
	struct sync_ctx *c = ud;
	struct rmloss *r = c->r;
	const char *name = json_path_str(rm, "metadata.name");
	char *servers = endpoints_of(rm);
	if (!name || !servers) {
		free(servers);
		return;
	}
	const char *zone = json_path_str(rm, "spec.zone");
	struct rm_entry *e = NULL;
	for (size_t i = 0; i < r->n && !e; i++)
		if (strcmp(r->v[i].name, name) == 0)
			e = &r->v[i];
	if (e && strcmp(e->servers, servers) != 0) {
		rest_free(e->rc); /* moved: a new client, the same history */
		e->rc = NULL;
		free(e->servers);
		e->servers = NULL;
	}
	if (!e) {
		if (r->n >= MAX_RMS) {
			free(servers);
			return;
		}
		e = &r->v[r->n++];
		memset(e, 0, sizeof(*e));
		e->name = xstrdup(name);
		e->last_ok_ms = c->now;
		log_info("resource manager tracked", "rm=\"%s\" zone=\"%s\" endpoints=\"%s\"", name, zone ? zone : "",
			 servers);
	}
	if (!e->servers) {
		e->servers = servers;
		e->rc = rest_new_with_creds(r->creds, servers, "ursa-tp-controller-manager/rmloss");
	} else {
		free(servers);
	}
	free(e->zone);
	e->zone = zone ? xstrdup(zone) : NULL;
	e->seen = true;
}

/* Follows the registry: new RMs get an entry, removed ones are dropped. */
static void refresh_registry(struct rmloss *r, int64_t now)
{
	struct sync_ctx c = { r, now };
	for (size_t i = 0; i < r->n; i++)
		r->v[i].seen = false;
	informer_foreach(r->registry, apply_one, &c);
	size_t k = 0;
	for (size_t i = 0; i < r->n; i++) {
		if (r->v[i].seen) {
			r->v[k++] = r->v[i];
			continue;
		}
		log_info("resource manager left the registry", "rm=\"%s\"", r->v[i].name);
		entry_release(&r->v[i]);
	}
	r->n = k;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Lists the RM's nodes: the health check and the node names at once. True if it answered. */
static bool check_rm(struct rm_entry *e)
{
	json_t *list = NULL;
	int code = e->rc ? rest_do(e->rc, "GET", "/api/v1/nodes", NULL, NULL, &list) : E_UNAVAILABLE;
	bool good = code == 200 && json_is_array(json_object_get(list, "items"));
	if (good) {
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
	} else {
		log_debug("resource manager check failed", "rm=\"%s\" code=%d", e->name, code);
	}
	json_decref(list);
	return good;
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
	for (size_t i = 0; i < r->n; i++) {
		const struct rm_entry *e = &r->v[i];
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
	const json_t *conds = json_path(pod, "status.conditions");
	json_t *copy = json_array();
	bool changed = false;
	size_t i;
	const json_t *c;
	json_array_foreach(conds, i, c) {
		json_t *cc = json_deep_copy(c);
		const char *t = json_str(c, "type"), *st = json_str(c, "status");
		if (t && (strcmp(t, "Ready") == 0 || strcmp(t, "ContainersReady") == 0) && st &&
		    strcmp(st, "False") != 0) {
			struct buf ts = BUF_INIT;
			rfc3339_add(&ts, time(NULL));
			json_object_set_new(cc, "status", json_string("False"));
			json_object_set_new(cc, "reason", json_string("NodeNotReady"));
			json_object_set_new(cc, "message", json_string("the resource manager of the node is lost"));
			json_object_set_new(cc, "lastTransitionTime", json_string(buf_cstr(&ts)));
			buf_release(&ts);
			changed = true;
		}
		json_array_append_new(copy, cc);
	}
	if (!changed) {
		json_decref(copy);
		return;
	}
	json_t *patch = json_pack("{s:{s:o}}", "status", "conditions", copy);
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

static int evict(struct tpc *m, const char *base, const json_t *pod)
{
	json_t *ev = json_pack("{s:s, s:s, s:{s:s, s:s}}", "apiVersion", "policy/v1", "kind", "Eviction", "metadata",
			       "name", json_path_str(pod, "metadata.name"), "namespace",
			       json_path_str(pod, "metadata.namespace"));
	char *path = xasprintf("%s/eviction", base);
	int code = ev ? tpc_send(m, "POST", path, ev, NULL) : E_INTERNAL;
	free(path);
	json_decref(ev);
	if (!ok(code) && code != 404 && code != 429)
		code = force_delete(m, base);
	else if (ok(code))
		code = force_delete(m, base); /* the eviction left it Terminating */
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
	if (!tpc_bucket_take(&r->tb, now)) {
		int64_t w = tpc_bucket_wait_ms(&r->tb, now);
		next = w == INT64_MAX ? INT64_MAX : now + (w < 10 ? 10 : w);
		goto out;
	}
	int code = evict(m, base, c->pod);
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
	informer_foreach(m->inf[INF_PODS], collect_pod, &c);
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
	refresh_registry(r, now);
	bool any_lost = false;
	for (size_t i = 0; i < r->n; i++) {
		struct rm_entry *e = &r->v[i];
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
	if (any_lost && informer_synced(m->inf[INF_PODS])) {
		int64_t next = handle_lost_pods(m);
		int64_t now2 = mono_ms();
		if (next != INT64_MAX && next - now2 < delay)
			delay = next - now2 < 10 ? 10 : next - now2;
	}
	wq_add_after(m->wq[CTL_RMLOSS], TPC_RMLOSS_KEY, delay);
	return 0;
}
