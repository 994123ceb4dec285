/* The endpoints of a Service, computed from the service and its pods: pure functions the
 * endpoints and endpointslice controllers (endpoints.c) and their unit tests share. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "tpc.h"
#include "ursa/jsonutil.h"
#include "ursa/xalloc.h"

bool tpc_service_has_selector(const json_t *svc)
{
	const json_t *sel = json_path(svc, "spec.selector");
	return json_is_object(sel) && json_object_size(sel) > 0;
}

bool tpc_service_selects(const json_t *svc, const json_t *pod)
{
	const json_t *sel = json_path(svc, "spec.selector"), *labels = json_path(pod, "metadata.labels");
	if (!tpc_service_has_selector(svc))
		return false;
	const char *k;
	json_t *v;
	json_object_foreach((json_t *)sel, k, v) {
		const json_t *have = json_object_get(labels, k);
		if (!json_is_string(have) || !json_is_string(v) ||
		    strcmp(json_string_value(have), json_string_value(v)))
			return false;
	}
	return true;
}

/* The container port named name with protocol proto, or -1. */
static long long named_port(const json_t *pod, const char *name, const char *proto)
{
	size_t i, j;
	json_t *c, *p;
	json_array_foreach(json_path(pod, "spec.containers"), i, c)
		json_array_foreach(json_object_get(c, "ports"), j, p) {
			const char *pn = json_str(p, "name"), *pp = json_str(p, "protocol");
			if (pn && !strcmp(pn, name) && !strcmp(pp ? pp : "TCP", proto) &&
			    json_is_integer(json_object_get(p, "containerPort")))
				return (long long)json_integer_value(json_object_get(p, "containerPort"));
		}
	return -1;
}

json_t *tpc_endpoint_ports(const json_t *svc, const json_t *pod)
{
	json_t *out = json_array();
	size_t i;
	json_t *sp;
	json_array_foreach(json_path(svc, "spec.ports"), i, sp) {
		const char *proto = json_str(sp, "protocol") ? json_str(sp, "protocol") : "TCP";
		const json_t *tp = json_object_get(sp, "targetPort");
		long long port = -1;
		if (json_is_integer(tp))
			port = (long long)json_integer_value(tp);
		else if (json_is_string(tp) && json_string_length(tp) > 0)
			port = named_port(pod, json_string_value(tp), proto);
		else if (json_is_integer(json_object_get(sp, "port")))
			port = (long long)json_integer_value(json_object_get(sp, "port"));
		if (port < 1 || port > 65535)
			continue; /* a name this pod does not define: the pod does not serve this port */
		json_t *ep = json_object();
		const char *name = json_str(sp, "name");
		if (name && *name)
			json_object_set_new(ep, "name", json_string(name));
		json_object_set_new(ep, "port", json_integer(port));
		json_object_set_new(ep, "protocol", json_string(proto));
		if (json_str(sp, "appProtocol"))
			json_object_set_new(ep, "appProtocol", json_string(json_str(sp, "appProtocol")));
		json_array_append_new(out, ep);
	}
	return out;
}

/* A pod that may back a service: it has an address and has not ended. */
static bool pod_has_endpoint(const json_t *pod)
{
	const char *ip = json_path_str(pod, "status.podIP"), *phase = json_path_str(pod, "status.phase");
	return ip && *ip && !(phase && (!strcmp(phase, "Succeeded") || !strcmp(phase, "Failed")));
}

static int by_name(const void *a, const void *b)
{
	const char *x = json_path_str(*(json_t *const *)a, "metadata.name");
	const char *y = json_path_str(*(json_t *const *)b, "metadata.name");
	return strcmp(x ? x : "", y ? y : "");
}

/* pods (selected by svc) with an address, sorted by name: a new array of borrowed pointers. */
static const json_t **candidates(const json_t *svc, const json_t *pods, size_t *ret_n)
{
	size_t n = 0, i;
	json_t *p;
	const json_t **v = xcalloc(json_array_size(pods) + 1, sizeof(*v));
	json_array_foreach(pods, i, p)
		if (tpc_service_selects(svc, p) && pod_has_endpoint(p))
			v[n++] = p;
	qsort(v, n, sizeof(*v), by_name);
	*ret_n = n;
	return v;
}

static json_t *target_ref(const json_t *pod)
{
	return json_pack("{s:s,s:s?,s:s?,s:s?}", "kind", "Pod", "namespace", json_path_str(pod, "metadata.namespace"),
			 "name", json_path_str(pod, "metadata.name"), "uid", json_path_str(pod, "metadata.uid"));
}

static int by_ip(const void *a, const void *b)
{
	const char *x = json_str(*(json_t *const *)a, "ip"), *y = json_str(*(json_t *const *)b, "ip");
	return strcmp(x ? x : "", y ? y : "");
}

static void sort_addresses(json_t *subset, const char *key)
{
	json_t *arr = json_object_get(subset, key);
	size_t n = json_array_size(arr);
	if (n < 2)
		return;
	json_t **v = xcalloc(n, sizeof(*v));
	for (size_t i = 0; i < n; i++)
		v[i] = json_incref(json_array_get(arr, i));
	qsort(v, n, sizeof(*v), by_ip);
	json_array_clear(arr);
	for (size_t i = 0; i < n; i++)
		json_array_append_new(arr, v[i]);
	free(v);
}

json_t *tpc_endpoints_subsets(const json_t *svc, const json_t *pods)
{
	bool publish = json_is_true(json_path(svc, "spec.publishNotReadyAddresses"));
	bool svc_has_ports = json_array_size(json_path(svc, "spec.ports")) > 0;
	size_t n;
	const json_t **v = candidates(svc, pods, &n);
	json_t *subsets = json_array();
	for (size_t i = 0; i < n; i++) {
		const json_t *pod = v[i];
		bool terminating = json_path(pod, "metadata.deletionTimestamp") != NULL;
		if (terminating && !publish)
			continue;
		json_t *ports = tpc_endpoint_ports(svc, pod);
		if (svc_has_ports && json_array_size(ports) == 0) {
			json_decref(ports);
			continue;
		}
		json_t *subset = NULL, *s;
		size_t k;
		json_array_foreach(subsets, k, s) {
			json_t *sp = json_object_get(s, "ports");
			if ((sp ? json_equal(sp, ports) : json_array_size(ports) == 0)) {
				subset = s;
				break;
			}
		}
		if (!subset) {
			subset = json_object();
			if (json_array_size(ports))
				json_object_set(subset, "ports", ports);
			json_array_append_new(subsets, subset);
		}
		json_decref(ports);
		json_t *addr = json_pack("{s:s}", "ip", json_path_str(pod, "status.podIP"));
		const char *node = json_path_str(pod, "spec.nodeName"), *host = json_path_str(pod, "spec.hostname");
		const char *sub = json_path_str(pod, "spec.subdomain"), *sname = json_path_str(svc, "metadata.name");
		if (host && *host && sub && sname && !strcmp(sub, sname))
			json_object_set_new(addr, "hostname", json_string(host));
		if (node && *node)
			json_object_set_new(addr, "nodeName", json_string(node));
		json_object_set_new(addr, "targetRef", target_ref(pod));
		const char *key = publish || tpc_pod_ready(pod) ? "addresses" : "notReadyAddresses";
		if (!json_object_get(subset, key))
			json_object_set_new(subset, key, json_array());
		json_array_append_new(json_object_get(subset, key), addr);
	}
	size_t k;
	json_t *s;
	json_array_foreach(subsets, k, s) {
		sort_addresses(s, "addresses");
		sort_addresses(s, "notReadyAddresses");
	}
	free(v);
	return subsets;
}

/* EndpointSlices ------------------------------------------------------------------------------ */

/* The slices' ports: the endpoint ports with a name ("" when unnamed), as the API prints them. */
static json_t *slice_ports(const json_t *ports)
{
	json_t *out = json_deep_copy(ports);
	size_t i;
	json_t *p;
	json_array_foreach(out, i, p)
		if (!json_object_get(p, "name"))
			json_object_set_new(p, "name", json_string(""));
	return out;
}

static json_t *slice_object(const json_t *svc, const json_t *ports, size_t chunk)
{
	const char *sname = json_path_str(svc, "metadata.name");
	char *ps = json_dumps(ports, JSON_COMPACT | JSON_SORT_KEYS);
	uint32_t h = tpc_fnv32a(ps, strlen(ps));
	free(ps);
	char *name = chunk ? xasprintf("%s-%08x-%zu", sname, h, chunk) : xasprintf("%s-%08x", sname, h);
	json_t *labels = json_deep_copy(json_path(svc, "metadata.labels"));
	if (!json_is_object(labels)) {
		json_decref(labels);
		labels = json_object();
	}
	json_object_set_new(labels, TPC_SLICE_SERVICE_LABEL, json_string(sname));
	json_object_set_new(labels, TPC_SLICE_MANAGED_BY_LABEL, json_string(TPC_SLICE_MANAGER));
	json_t *owner = json_pack("{s:s,s:s,s:s?,s:s?,s:b,s:b}", "apiVersion", "v1", "kind", "Service", "name", sname,
				  "uid", json_path_str(svc, "metadata.uid"), "controller", 1, "blockOwnerDeletion", 1);
	json_t *slice = json_pack("{s:s,s:s,s:{s:s,s:s?,s:o,s:[o]},s:s,s:[],s:o}", "apiVersion", "discovery.k8s.io/v1",
				  "kind", "EndpointSlice", "metadata", "name", name, "namespace",
				  json_path_str(svc, "metadata.namespace"), "labels", labels, "ownerReferences", owner,
				  "addressType", "IPv4", "endpoints", "ports", slice_ports(ports));
	free(name);
	return slice;
}

json_t *tpc_endpoint_slices(const json_t *svc, const json_t *pods)
{
	bool publish = json_is_true(json_path(svc, "spec.publishNotReadyAddresses"));
	size_t n;
	const json_t **v = candidates(svc, pods, &n);
	json_t *slices = json_array();
	json_t *groups = json_array(); /* [ports, [endpoints]] per distinct port list */
	for (size_t i = 0; i < n; i++) {
		const json_t *pod = v[i];
		bool terminating = json_path(pod, "metadata.deletionTimestamp") != NULL, serving = tpc_pod_ready(pod);
		json_t *ports = tpc_endpoint_ports(svc, pod), *g = NULL, *x;
		size_t k;
		json_array_foreach(groups, k, x)
			if (json_equal(json_array_get(x, 0), ports)) {
				g = x;
				break;
			}
		if (!g) {
			g = json_pack("[O,[]]", ports);
			json_array_append_new(groups, g);
		}
		json_decref(ports);
		json_t *ep = json_pack("{s:[s],s:{s:b,s:b,s:b}}", "addresses", json_path_str(pod, "status.podIP"),
				       "conditions", "ready", publish || (serving && !terminating), "serving",
				       publish || serving, "terminating", terminating);
		const char *node = json_path_str(pod, "spec.nodeName");
		if (node && *node)
			json_object_set_new(ep, "nodeName", json_string(node));
		json_object_set_new(ep, "targetRef", target_ref(pod));
		json_array_append_new(json_array_get(g, 1), ep);
	}
	if (json_array_size(groups) == 0) /* a placeholder, as Kubernetes keeps one */
		json_array_append_new(groups, json_pack("[[],[]]"));
	size_t k;
	json_t *g;
	json_array_foreach(groups, k, g) {
		json_t *eps = json_array_get(g, 1);
		size_t total = json_array_size(eps);
		for (size_t chunk = 0; chunk == 0 || chunk * TPC_SLICE_MAX < total; chunk++) {
			json_t *s = slice_object(svc, json_array_get(g, 0), chunk);
			json_t *dst = json_object_get(s, "endpoints");
			for (size_t i = chunk * TPC_SLICE_MAX; i < total && i < (chunk + 1) * TPC_SLICE_MAX; i++)
				json_array_append(dst, json_array_get(eps, i));
			json_array_append_new(slices, s);
		}
	}
	json_decref(groups);
	free(v);
	return slices;
}
