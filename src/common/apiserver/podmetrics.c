/* metrics.k8s.io/v1beta1: PodMetrics (the tenant partition, for its tenants' pods) and
 * NodeMetrics (the resource manager, for its nodes), in metrics-server's shapes so `kubectl top`
 * reads them. Nothing is stored: each request lists the pods or nodes it is about from the watch
 * cache and asks each of their nodes' kubelets once for /stats/usage (src/kubelet/stats.h), one
 * node after another. A pod whose node does not answer, or that its kubelet does not measure, is
 * left out of a list (as metrics-server does) and is 404 for a get. Authorization ran before
 * (RBAC on group metrics.k8s.io, resources pods and nodes; the default view role has them). */
#include "internal.h"
#include "podmetrics.h"
#include "ursa/client.h"
#include "ursa/jsonutil.h"
#include "ursa/selector.h"
#include "ursa/timeutil.h"
#include "ursa/xalloc.h"
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- pure parts ---- */

void metrics_cpu_quantity(uint64_t nanocores, char out[32])
{
	if (nanocores == 0)
		snprintf(out, 32, "0");
	else
		snprintf(out, 32, "%" PRIu64 "n", nanocores);
}

void metrics_memory_quantity(uint64_t bytes, char out[32])
{
	static const char *const suffix[] = { "Ki", "Mi", "Gi", "Ti", "Pi" };
	if (bytes == 0 || bytes % 1024 != 0) {
		snprintf(out, 32, "%" PRIu64, bytes);
		return;
	}
	int k = -1;
	while (k + 1 < 5 && bytes % 1024 == 0) {
		bytes /= 1024;
		k++;
	}
	snprintf(out, 32, "%" PRIu64 "%s", bytes, suffix[k]);
}

void metrics_window(double seconds, char out[32])
{
	if (seconds < 0)
		seconds = 0;
	long long ms = (long long)(seconds * 1000.0 + 0.5);
	if (ms % 1000 == 0) {
		snprintf(out, 32, "%llds", ms / 1000);
		return;
	}
	snprintf(out, 32, "%lld.%03llds", ms / 1000, ms % 1000);
	/* Go's duration strings drop trailing zeros: 1.5s, 1.25s */
	size_t n = strlen(out);
	while (n >= 2 && out[n - 2] == '0') {
		out[n - 2] = 's';
		out[n - 1] = '\0';
		n--;
	}
}

/* ---- asking the kubelets ---- */

struct node_usage {
	char *node;
	json_t *stats; /* /stats/usage reply, or NULL when the kubelet did not answer */
};

struct usage_set {
	struct node_usage *v;
	size_t n;
};

static json_t *kubelet_stats(struct apiserver *s, const json_t *node)
{
	char *base = node ? kubelet_url(node) : NULL;
	if (!base)
		return NULL;
	struct rest_config cfg = { .servers = base, .token = s->kubelet_token, .ca_file = s->o.region_ca_file,
				   .user_agent = "ursa-apiserver", .timeout_ms = 5000 };
	struct rest_client *rc = rest_new(&cfg);
	json_t *body = NULL, *found = NULL;
	if (rc && rest_do(rc, "GET", "/stats/usage", NULL, NULL, &body) == 200 && json_is_object(body))
		found = json_incref(body);
	json_decref(body);
	rest_free(rc);
	free(base);
	return found;
}

/* The stats of node (asked once per request). node_obj: the node when the caller has it. */
static const json_t *usage_of(struct apiserver *s, struct usage_set *u, const char *node, const json_t *node_obj)
{
	for (size_t i = 0; i < u->n; i++)
		if (strcmp(u->v[i].node, node) == 0)
			return u->v[i].stats;
	json_t *found = node_obj ? NULL : find_node(s, node);
	json_t *stats = kubelet_stats(s, node_obj ? node_obj : found);
	json_decref(found);
	u->v = xrealloc(u->v, (u->n + 1) * sizeof(*u->v));
	u->v[u->n++] = (struct node_usage){ xstrdup(node), stats };
	return stats;
}

static void usage_set_release(struct usage_set *u)
{
	for (size_t i = 0; i < u->n; i++) {
		free(u->v[i].node);
		json_decref(u->v[i].stats);
	}
	free(u->v);
}

static json_t *usage_quantities(const json_t *stat)
{
	char cpu[32], mem[32];
	metrics_cpu_quantity((uint64_t)json_integer_value(json_object_get(stat, "cpuNanoCores")), cpu);
	metrics_memory_quantity((uint64_t)json_integer_value(json_object_get(stat, "memoryWorkingSetBytes")), mem);
	return json_pack("{s:s,s:s}", "cpu", cpu, "memory", mem);
}

static json_t *container_json(const char *name, const json_t *stat)
{
	return json_pack("{s:s,s:o}", "name", name, "usage", usage_quantities(stat));
}

static json_t *metrics_meta(const json_t *obj, bool with_tenant)
{
	json_t *m = json_object();
	const char *name = json_path_str(obj, "metadata.name");
	const char *ns = json_path_str(obj, "metadata.namespace");
	const char *tenant = json_path_str(obj, "metadata.tenant");
	json_object_set_new(m, "name", json_string(name ? name : ""));
	if (with_tenant && tenant)
		json_object_set_new(m, "tenant", json_string(tenant));
	if (ns)
		json_object_set_new(m, "namespace", json_string(ns));
	struct buf ts = BUF_INIT;
	rfc3339_add(&ts, time(NULL));
	json_object_set_new(m, "creationTimestamp", json_string(buf_cstr(&ts)));
	buf_release(&ts);
	json_t *labels = json_path(obj, "metadata.labels");
	if (json_is_object(labels))
		json_object_set(m, "labels", labels);
	return m;
}

static void set_time_window(json_t *item, const json_t *stats)
{
	const char *ts = json_str(stats, "timestamp");
	char window[32];
	metrics_window(json_number_value(json_object_get(stats, "windowSeconds")), window);
	json_object_set_new(item, "timestamp", json_string(ts ? ts : ""));
	json_object_set_new(item, "window", json_string(window));
}

static const json_t *pod_entry(const json_t *stats, const char *uid)
{
	size_t i;
	json_t *p;
	json_array_foreach(json_object_get(stats, "pods"), i, p) {
		const char *u = json_str(p, "uid");
		if (u && uid && strcmp(u, uid) == 0)
			return p;
	}
	return NULL;
}

/* The name of the container whose runtime id is id ("containerd://<id>" in containerStatuses), or
 * whose name is id (the process runtime's). */
static const char *container_name(const json_t *pod, const char *id)
{
	size_t i;
	json_t *cs;
	json_array_foreach(json_path(pod, "status.containerStatuses"), i, cs) {
		const char *cid = json_str(cs, "containerID");
		const char *sep = cid ? strstr(cid, "://") : NULL;
		if (sep)
			cid = sep + 3;
		if (cid && id && strcmp(cid, id) == 0)
			return json_str(cs, "name");
	}
	/* the process runtime measures containers by name */
	json_array_foreach(json_path(pod, "spec.containers"), i, cs) {
		const char *name = json_str(cs, "name");
		if (name && id && strcmp(name, id) == 0)
			return name;
	}
	return NULL;
}

/* A PodMetrics for pod (new ref), or NULL when its node's kubelet does not measure it. */
static json_t *pod_metrics(struct apiserver *s, struct usage_set *u, const json_t *pod)
{
	const char *node = json_path_str(pod, "spec.nodeName");
	const char *phase = json_path_str(pod, "status.phase");
	if (!node || !*node || (phase && strcmp(phase, "Running") != 0))
		return NULL;
	const json_t *stats = usage_of(s, u, node, NULL);
	if (!stats)
		return NULL;
	json_t *ctrs = json_array();
	const json_t *entry = pod_entry(stats, json_path_str(pod, "metadata.uid"));
	const json_t *synth = json_object_get(stats, "syntheticContainer");
	size_t i;
	json_t *c;
	if (entry) {
		json_array_foreach(json_object_get(entry, "containers"), i, c) {
			const char *name = container_name(pod, json_str(c, "id"));
			if (name) /* the sandbox's own (pause) container has no name */
				json_array_append_new(ctrs, container_json(name, c));
		}
	} else if (synth) {
		json_array_foreach(json_path(pod, "spec.containers"), i, c) {
			const char *name = json_str(c, "name");
			if (name)
				json_array_append_new(ctrs, container_json(name, synth));
		}
	}
	if (!entry && !synth) {
		json_decref(ctrs);
		return NULL;
	}
	json_t *item = json_pack("{s:s,s:s,s:o}", "kind", "PodMetrics", "apiVersion", "metrics.k8s.io/v1beta1",
				 "metadata", metrics_meta(pod, true));
	set_time_window(item, stats);
	json_object_set_new(item, "containers", ctrs);
	return item;
}

static json_t *node_metrics(struct apiserver *s, struct usage_set *u, const json_t *node)
{
	const char *name = json_path_str(node, "metadata.name");
	const json_t *stats = name ? usage_of(s, u, name, node) : NULL;
	const json_t *nu = stats ? json_object_get(stats, "node") : NULL;
	if (!nu)
		return NULL;
	json_t *item = json_pack("{s:s,s:s,s:o}", "kind", "NodeMetrics", "apiVersion", "metrics.k8s.io/v1beta1",
				 "metadata", metrics_meta(node, false));
	set_time_window(item, stats);
	json_object_set_new(item, "usage", usage_quantities(nu));
	return item;
}

/* The stored resource the metrics are about: core pods or nodes of this server. */
static struct served *subject_of(struct apiserver *s, const char *plural)
{
	for (size_t i = 0; i < s->nres; i++)
		if (!s->res[i].r->metrics && s->res[i].r->group[0] == '\0' && strcmp(s->res[i].r->plural, plural) == 0)
			return &s->res[i];
	return NULL;
}

void handle_metrics(struct req *q)
{
	bool get = strcmp(q->verb, "get") == 0;
	if (!get && strcmp(q->verb, "list") != 0) {
		reply_status(q, E_METHOD, "the server does not allow this method on the requested resource");
		return;
	}
	bool pods = strcmp(q->res->r->plural, "pods") == 0;
	struct served *sv = subject_of(q->s, q->res->r->plural);
	if (!sv || !sv->cache) {
		reply_status(q, E_NOT_FOUND, "the server could not find the requested resource");
		return;
	}
	struct label_selector *sel = NULL;
	struct buf err = BUF_INIT;
	if (!get && label_selector_parse(http_query(q->http, "labelSelector"), &sel, &err) < 0) {
		reply_status(q, E_BAD_REQUEST, "%s", buf_cstr(&err));
		buf_release(&err);
		return;
	}
	buf_release(&err);
	bool all = !q->tenant || strcmp(q->tenant, TENANT_ALL) == 0 || q->res->r->scope == SCOPE_CLUSTER;
	struct wfilter wf = { .tenant = all ? NULL : q->tenant, .ns = q->ns, .name = get ? q->path.name : NULL,
			      .labels = sel };
	struct cobj **objs = NULL;
	size_t n = 0;
	int64_t rv;
	if (wcache_list(sv->cache, &wf, &objs, &n, &rv) < 0) {
		label_selector_free(sel);
		reply_status(q, E_UNAVAILABLE, "the watch cache is not ready yet; please retry");
		return;
	}
	struct usage_set u = { 0 };
	json_t *items = json_array();
	for (size_t i = 0; i < n; i++) {
		json_t *obj = json_loadb(objs[i]->json, objs[i]->json_len, 0, NULL);
		bool match = obj && (!get || (objs[i]->name && strcmp(objs[i]->name, q->path.name) == 0));
		json_t *m = !match ? NULL : pods ? pod_metrics(q->s, &u, obj) : node_metrics(q->s, &u, obj);
		if (m)
			json_array_append_new(items, m);
		json_decref(obj);
		cobj_unref(objs[i]);
	}
	free(objs);
	usage_set_release(&u);
	label_selector_free(sel);
	if (get) {
		if (json_array_size(items) == 0) {
			if (pods)
				reply_status_details(q, E_NOT_FOUND, q->path.name, NULL,
						     "podmetrics.metrics.k8s.io \"%s/%s\" not found",
						     q->ns ? q->ns : "", q->path.name);
			else
				reply_status_details(q, E_NOT_FOUND, q->path.name, NULL,
						     "nodemetrics.metrics.k8s.io \"%s\" not found", q->path.name);
		} else {
			reply_json(q, 200, json_array_get(items, 0));
		}
		json_decref(items);
		return;
	}
	json_t *list = json_pack("{s:s,s:s,s:{},s:o}", "kind", pods ? "PodMetricsList" : "NodeMetricsList",
				 "apiVersion", "metrics.k8s.io/v1beta1", "metadata", "items", items);
	reply_json(q, 200, list);
	json_decref(list);
}
