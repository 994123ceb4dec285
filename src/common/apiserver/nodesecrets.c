/* Which secrets and configmaps a node credential may read: as Kubernetes' node authorizer, only
 * those a pod bound to that node names (image pull secrets, secret and configMap volumes and
 * projections, env and envFrom references), one GET by name at a time, never a list or watch.
 * The pods come from this server's pod watch cache, the one the kubelet's own pod watch is
 * served from. */
#include <stdlib.h>
#include <string.h>
#include "internal.h"
#include "ursa/jsonutil.h"

static bool name_is(const json_t *v, const char *name)
{
	const char *s = json_string_value(v);
	return s && strcmp(s, name) == 0;
}

static bool container_uses(const json_t *c, const char *name)
{
	size_t i;
	json_t *e;
	json_array_foreach(json_object_get(c, "env"), i, e)
		if (name_is(json_object_get(json_object_get(json_object_get(e, "valueFrom"), "secretKeyRef"), "name"), name))
			return true;
	json_array_foreach(json_object_get(c, "envFrom"), i, e)
		if (name_is(json_object_get(json_object_get(e, "secretRef"), "name"), name))
			return true;
	return false;
}

bool pod_uses_secret(const json_t *pod, const char *name)
{
	const json_t *spec = json_object_get(pod, "spec");
	size_t i, j;
	json_t *e, *src;
	json_array_foreach(json_object_get(spec, "imagePullSecrets"), i, e)
		if (name_is(json_object_get(e, "name"), name))
			return true;
	json_array_foreach(json_object_get(spec, "volumes"), i, e) {
		if (name_is(json_object_get(json_object_get(e, "secret"), "secretName"), name))
			return true;
		json_array_foreach(json_object_get(json_object_get(e, "projected"), "sources"), j, src)
			if (name_is(json_object_get(json_object_get(src, "secret"), "name"), name))
				return true;
	}
	static const char *const lists[] = { "initContainers", "containers", "ephemeralContainers" };
	for (size_t l = 0; l < sizeof(lists) / sizeof(lists[0]); l++)
		json_array_foreach(json_object_get(spec, lists[l]), i, e)
			if (container_uses(e, name))
				return true;
	return false;
}

static bool container_uses_configmap(const json_t *c, const char *name)
{
	size_t i;
	json_t *e;
	json_array_foreach(json_object_get(c, "env"), i, e)
		if (name_is(json_object_get(json_object_get(json_object_get(e, "valueFrom"), "configMapKeyRef"), "name"),
			    name))
			return true;
	json_array_foreach(json_object_get(c, "envFrom"), i, e)
		if (name_is(json_object_get(json_object_get(e, "configMapRef"), "name"), name))
			return true;
	return false;
}

bool pod_uses_configmap(const json_t *pod, const char *name)
{
	const json_t *spec = json_object_get(pod, "spec");
	size_t i, j;
	json_t *e, *src;
	json_array_foreach(json_object_get(spec, "volumes"), i, e) {
		if (name_is(json_object_get(json_object_get(e, "configMap"), "name"), name))
			return true;
		json_array_foreach(json_object_get(json_object_get(e, "projected"), "sources"), j, src)
			if (name_is(json_object_get(json_object_get(src, "configMap"), "name"), name))
				return true;
	}
	static const char *const lists[] = { "initContainers", "containers", "ephemeralContainers" };
	for (size_t l = 0; l < sizeof(lists) / sizeof(lists[0]); l++)
		json_array_foreach(json_object_get(spec, lists[l]), i, e)
			if (container_uses_configmap(e, name))
				return true;
	return false;
}

/* True when a pod bound to q's node, in q's tenant and namespace, names q->path.name (uses). */
static bool node_pod_names(const struct req *q, bool (*uses)(const json_t *pod, const char *name))
{
	struct served *pods = served_by_plural(q->s, "pods");
	if (!q->node || !q->path.name || !q->ns || !q->tenant || !pods || !pods->cache)
		return false;
	struct wfilter f = { .tenant = q->tenant, .ns = q->ns };
	struct cobj **objs = NULL;
	size_t n = 0;
	int64_t rv;
	if (wcache_list(pods->cache, &f, &objs, &n, &rv) < 0)
		return false;
	bool found = false;
	for (size_t i = 0; i < n; i++) {
		if (!found && strcmp(cobj_field_value(pods, objs[i], "spec.nodeName"), q->node) == 0) {
			json_t *pod = json_loadb(objs[i]->json, objs[i]->json_len, 0, NULL);
			found = uses(pod, q->path.name);
			json_decref(pod);
		}
		cobj_unref(objs[i]);
	}
	free(objs);
	return found;
}

bool node_may_get_secret(const struct req *q)
{
	return node_pod_names(q, pod_uses_secret);
}

/* Every pod's default service-account volume reads the namespace's CA bundle. */
static bool pod_any(const json_t *pod, const char *name)
{
	(void)pod;
	return !strcmp(name, "kube-root-ca.crt");
}

bool node_may_get_configmap(const struct req *q)
{
	return node_pod_names(q, pod_uses_configmap) || node_pod_names(q, pod_any);
}

static bool pod_runs_as(const json_t *pod, const char *name)
{
	const char *sa = json_path_str(pod, "spec.serviceAccountName");
	return strcmp(sa && *sa ? sa : "default", name) == 0;
}

bool node_may_request_token(const struct req *q)
{
	return node_pod_names(q, pod_runs_as);
}
