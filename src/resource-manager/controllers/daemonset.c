/* The daemonset controller: DaemonSets of the RM's system tenant get one pod on every node
 * they want (bound directly through spec.nodeName, as the kubelet picks up system pods from
 * its RM), and lose the pods on nodes they no longer want or that are gone. Pod names are a
 * hash of the node, so a create racing with a slow informer fails with 409 instead of making
 * a second pod. Level-triggered: every sync compares the whole picture. */
#include <stdlib.h>
#include <string.h>
#include "rmcm.h"
#include "ursa/jsonutil.h"
#include "ursa/log.h"
#include "ursa/xalloc.h"

#define DS_PATH "/apis/apps/v1/tenants/system/daemonsets"
#define PODS_PATH "/api/v1/tenants/system/pods"

struct dscontroller {
	struct rest_client *rm;
	struct informer *nodes, *dsets, *pods;
};

static const struct informer_handlers no_handlers = { 0 };

struct dscontroller *dscontroller_new(struct rest_client *rm, struct informer *nodes)
{
	struct dscontroller *dc = xcalloc(1, sizeof(*dc));
	dc->rm = rm;
	dc->nodes = nodes;
	dc->dsets = informer_start(rm, DS_PATH, NULL, &no_handlers, dc);
	dc->pods = informer_start(rm, PODS_PATH, NULL, &no_handlers, dc);
	return dc;
}

void dscontroller_free(struct dscontroller *dc)
{
	if (!dc)
		return;
	informer_stop(dc->dsets);
	informer_stop(dc->pods);
	free(dc);
}

static void collect(void *ud, const json_t *obj)
{
	json_array_append(ud, (json_t *)obj);
}

static json_t *snapshot(struct informer *inf)
{
	json_t *a = json_array();
	informer_foreach(inf, collect, a);
	return a;
}

/* The uid of the controlling DaemonSet owner of a pod, or NULL. */
static const char *owner_uid(const json_t *pod)
{
	return json_controller_uid(pod, "DaemonSet");
}

static bool pod_ready(const json_t *pod)
{
	size_t i;
	const json_t *c;
	json_array_foreach(json_path(pod, "status.conditions"), i, c) {
		const char *t = json_str(c, "type"), *s = json_str(c, "status");
		if (t && s && strcmp(t, "Ready") == 0)
			return strcmp(s, "True") == 0;
	}
	return false;
}

static bool code_ok(int code)
{
	return code >= 200 && code < 300;
}

static void delete_pod(struct dscontroller *dc, const json_t *pod, const char *why)
{
	const char *ns = json_path_str(pod, "metadata.namespace"), *name = json_path_str(pod, "metadata.name");
	char *path = xasprintf("/api/v1/tenants/system/namespaces/%s/pods/%s", ns ? ns : "default", name ? name : "");
	int code = rest_do(dc->rm, "DELETE", path, NULL, NULL, NULL);
	free(path);
	if (code_ok(code) || code == 404)
		log_info("daemon pod deleted", "pod=\"%s/%s\" reason=%s", ns ? ns : "", name ? name : "", why);
	else
		log_warn("cannot delete daemon pod", "pod=\"%s/%s\" code=%d", ns ? ns : "", name ? name : "", code);
}

static void create_pod(struct dscontroller *dc, const json_t *ds, const char *node)
{
	const char *ns = json_path_str(ds, "metadata.namespace");
	json_t *pod = ds_pod_new(ds, node);
	char *path = xasprintf("/api/v1/tenants/system/namespaces/%s/pods", ns ? ns : "default");
	int code = rest_do(dc->rm, "POST", path, pod, NULL, NULL);
	if (code_ok(code))
		log_info("daemon pod created", "daemonset=\"%s/%s\" node=\"%s\" pod=\"%s\"", ns ? ns : "",
			 json_path_str(ds, "metadata.name"), node, json_path_str(pod, "metadata.name"));
	else if (code != 409)
		log_warn("cannot create daemon pod", "daemonset=\"%s/%s\" node=\"%s\" code=%d", ns ? ns : "",
			 json_path_str(ds, "metadata.name"), node, code);
	free(path);
	json_decref(pod);
}

struct ds_counts {
	long long desired, current, misscheduled, ready;
};

static void update_status(struct dscontroller *dc, const json_t *ds, const struct ds_counts *c)
{
	const json_t *st = json_object_get(ds, "status");
	const json_t *gen = json_path(ds, "metadata.generation");
	json_int_t g = json_is_integer(gen) ? json_integer_value(gen) : 0;
	json_t *want = json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}", "desiredNumberScheduled",
				 (json_int_t)c->desired, "currentNumberScheduled", (json_int_t)c->current,
				 "numberMisscheduled", (json_int_t)c->misscheduled, "numberReady", (json_int_t)c->ready,
				 "numberAvailable", (json_int_t)c->ready, "numberUnavailable",
				 (json_int_t)(c->desired - c->ready > 0 ? c->desired - c->ready : 0),
				 "updatedNumberScheduled", (json_int_t)c->current, "observedGeneration", g);
	bool same = true;
	const char *k;
	json_t *v;
	json_object_foreach(want, k, v)
		if (!json_equal(v, json_object_get(st, k)))
			same = false;
	if (!same) {
		json_t *patch = json_pack("{s:O}", "status", want);
		char *path = xasprintf("/apis/apps/v1/tenants/system/namespaces/%s/daemonsets/%s/status",
				       json_path_str(ds, "metadata.namespace"), json_path_str(ds, "metadata.name"));
		rest_do(dc->rm, "PATCH", path, patch, "application/merge-patch+json", NULL);
		free(path);
		json_decref(patch);
	}
	json_decref(want);
}

static void sync_one(struct dscontroller *dc, const json_t *ds, const json_t *nodes, const json_t *pods)
{
	const char *uid = json_path_str(ds, "metadata.uid");
	struct ds_counts c = { 0 };
	size_t i, j;
	const json_t *node, *pod;
	if (!uid || json_path(ds, "metadata.deletionTimestamp"))
		return;
	json_array_foreach(nodes, i, node) {
		const char *nname = json_path_str(node, "metadata.name");
		bool want = nname && ds_wants_node(ds, node);
		int have = 0;
		c.desired += want;
		json_array_foreach(pods, j, pod) {
			const char *ou = owner_uid(pod), *pn = json_path_str(pod, "spec.nodeName");
			if (!ou || strcmp(ou, uid) != 0 || !pn || !nname || strcmp(pn, nname) != 0 ||
			    json_path(pod, "metadata.deletionTimestamp"))
				continue;
			if (!want) {
				c.misscheduled++;
				delete_pod(dc, pod, "NodeNotWanted");
			} else if (have++) {
				delete_pod(dc, pod, "Duplicate");
			} else {
				c.current++;
				c.ready += pod_ready(pod);
			}
		}
		if (want && !have)
			create_pod(dc, ds, nname);
	}
	/* pods on nodes that no longer exist */
	json_array_foreach(pods, j, pod) {
		const char *ou = owner_uid(pod), *pn = json_path_str(pod, "spec.nodeName");
		bool found = false;
		if (!ou || strcmp(ou, uid) != 0 || json_path(pod, "metadata.deletionTimestamp"))
			continue;
		json_array_foreach(nodes, i, node) {
			const char *nname = json_path_str(node, "metadata.name");
			if (pn && nname && strcmp(pn, nname) == 0)
				found = true;
		}
		if (!found)
			delete_pod(dc, pod, "NodeGone");
	}
	update_status(dc, ds, &c);
}

void dscontroller_sync(struct dscontroller *dc)
{
	if (!informer_synced(dc->dsets) || !informer_synced(dc->pods) || !informer_synced(dc->nodes))
		return;
	json_t *dsets = snapshot(dc->dsets), *nodes = snapshot(dc->nodes), *pods = snapshot(dc->pods);
	size_t i;
	const json_t *ds;
	json_array_foreach(dsets, i, ds)
		sync_one(dc, ds, nodes, pods);
	json_decref(dsets);
	json_decref(nodes);
	json_decref(pods);
}
