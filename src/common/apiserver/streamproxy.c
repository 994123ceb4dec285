/* pods/exec, pods/attach, pods/portforward: the tenant partition's hop of a stream. The request
 * (a WebSocket or SPDY upgrade) was authorized as `create` on the subresource (verb_of in
 * server.c, as Kubernetes does for WebSocket GETs too); here the pod's node is found through
 * the region's resource managers (as logproxy.c does), the container resolved, and the upgrade
 * tunnelled (ursa/tunnel.h) to the kubelet's /exec, /attach or /portforward with the kubelet
 * token. The protocol is not parsed here: the kubelet terminates it. */
#include "internal.h"
#include "ursa/jsonutil.h"
#include "ursa/tunnel.h"
#include "ursa/xalloc.h"
#include <curl/curl.h>
#include <stdlib.h>
#include <string.h>

/* The container a stream goes to: ?container=, else the pod's
 * kubectl.kubernetes.io/default-container annotation, else the first container. NULL (and
 * replied) when the named one does not exist. */
static const char *stream_container(struct req *q, const json_t *pod)
{
	json_t *cs = json_path(pod, "spec.containers");
	const char *want = http_query(q->http, "container");
	if (!want || !*want) {
		json_t *ann = json_path(pod, "metadata.annotations");
		want = json_is_object(ann) ? json_str(ann, "kubectl.kubernetes.io/default-container") : NULL;
	}
	if (!want || !*want) {
		const char *first = json_str(json_array_get(cs, 0), "name");
		if (!first)
			reply_status(q, E_BAD_REQUEST, "pod %s has no containers", q->path.name);
		return first;
	}
	size_t i;
	json_t *c;
	json_array_foreach(cs, i, c) {
		const char *name = json_str(c, "name");
		if (name && strcmp(name, want) == 0)
			return name;
	}
	reply_status(q, E_BAD_REQUEST, "container %s is not valid for pod %s", want, q->path.name);
	return NULL;
}

/* The client's query passed on as sent: it lives in a request line, so no blanks or control
 * characters (anything else is the kubelet's to judge). */
static bool query_ok(const char *s)
{
	for (; s && *s; s++)
		if ((unsigned char)*s <= ' ' || *s == 0x7f || *s == '#')
			return false;
	return true;
}

/* The kubelet's path for sub ("exec", "attach", "portforward"). New string. */
char *stream_kubelet_path(const char *sub, const char *tenant, const char *ns, const char *pod, const char *container,
			  const char *query)
{
	struct buf b = BUF_INIT;
	char *ens = curl_easy_escape(NULL, ns, 0), *epod = curl_easy_escape(NULL, pod, 0);
	char *ect = container ? curl_easy_escape(NULL, container, 0) : NULL;
	char *eten = curl_easy_escape(NULL, tenant, 0);
	buf_addf(&b, "/%s/%s/%s", sub, ens, epod);
	if (ect)
		buf_addf(&b, "/%s", ect);
	buf_addf(&b, "?tenant=%s", eten);
	if (query && *query)
		buf_addf(&b, "&%s", query);
	curl_free(ens), curl_free(epod), curl_free(ect), curl_free(eten);
	return buf_detach(&b, NULL);
}

static void proxy_stream(struct req *q, const char *sub)
{
	if (!tunnel_is_upgrade(q->http)) {
		reply_status(q, E_BAD_REQUEST, "Upgrade request required");
		return;
	}
	const char *query = http_query_string(q->http);
	if (!query_ok(query)) {
		reply_status(q, E_BAD_REQUEST, "the query string holds characters a request line cannot carry");
		return;
	}
	char *key = store_key(q->res, q->tenant, q->ns, q->path.name);
	json_t *pod = NULL;
	int rc = store_get(q->s, key, &pod, NULL);
	free(key);
	if (rc == E_NOT_FOUND) {
		reply_not_found(q, q->path.name);
		return;
	}
	if (rc < 0) {
		reply_status(q, rc, "storage error");
		return;
	}
	const char *node = json_path_str(pod, "spec.nodeName");
	const char *phase = json_path_str(pod, "status.phase");
	bool pf = strcmp(sub, "portforward") == 0;
	const char *container = NULL;
	if (!node) {
		reply_status(q, E_BAD_REQUEST, "pod %s does not have a host assigned", q->path.name);
		goto out;
	}
	if (phase && (strcmp(phase, "Succeeded") == 0 || strcmp(phase, "Failed") == 0)) {
		reply_status(q, E_BAD_REQUEST, "cannot %s a container in a completed pod; current phase is %s",
			     pf ? "port-forward to" : strcmp(sub, "exec") == 0 ? "exec into" : "attach to", phase);
		goto out;
	}
	if (!pf && !(container = stream_container(q, pod)))
		goto out;
	json_t *n = find_node(q->s, node);
	char *base = n ? kubelet_url(n) : NULL;
	json_decref(n);
	if (!base) {
		reply_status(q, E_UNAVAILABLE,
			     "cannot reach the kubelet of node %s: the node is not known to any resource manager", node);
		goto out;
	}
	char *path = stream_kubelet_path(sub, q->tenant, q->ns, q->path.name, container, query);
	struct tunnel_hop hop = { .base = base, .ca_file = q->s->o.region_ca_file, .bearer = q->s->kubelet_token,
				  .timeout_ms = 15000 };
	int err = tunnel_proxy(q->http, q->reply, &hop, path);
	if (!err)
		q->replied_code = http_reply_status(q->reply);
	else if (err == E_TIMEOUT)
		reply_status(q, E_TIMEOUT, "the kubelet of node %s did not answer in time", node);
	else if (err)
		reply_status(q, E_UNAVAILABLE, "cannot reach the kubelet of node %s", node);
	free(path);
	free(base);
out:
	json_decref(pod);
}

void handle_pod_exec(struct req *q)
{
	proxy_stream(q, "exec");
}

void handle_pod_attach(struct req *q)
{
	proxy_stream(q, "attach");
}

void handle_pod_portforward(struct req *q)
{
	proxy_stream(q, "portforward");
}
