/* pods/log: finds the pod's node through the region's resource managers and streams the
 * container log from that node's kubelet (/containerLogs), so `kubectl logs [-f]` works
 * from the tenant partition. */
#include "internal.h"
#include "ursa/client.h"
#include "ursa/jsonutil.h"
#include "ursa/region.h"
#include "ursa/xalloc.h"
#include <curl/curl.h>
#include <stdlib.h>
#include <string.h>

#define LOG_BUFFER_MAX (4u << 20)

struct logproxy {
	pthread_mutex_t lock;
	pthread_cond_t drained;
	struct buf data;
	bool ended;
	struct http_stream *hs; /* NULL once the client is gone */
	atomic_bool stop;
	int refs;
	struct rest_client *rc;
	char *path;
};

static void lp_unref(struct logproxy *lp)
{
	pthread_mutex_lock(&lp->lock);
	int left = --lp->refs;
	pthread_mutex_unlock(&lp->lock);
	if (left)
		return;
	rest_free(lp->rc);
	free(lp->path);
	buf_release(&lp->data);
	pthread_mutex_destroy(&lp->lock);
	pthread_cond_destroy(&lp->drained);
	free(lp);
}

static int on_chunk(void *ud, const char *data, size_t len)
{
	struct logproxy *lp = ud;
	pthread_mutex_lock(&lp->lock);
	while (lp->data.len > LOG_BUFFER_MAX && lp->hs && !atomic_load(&lp->stop))
		pthread_cond_wait(&lp->drained, &lp->lock);
	buf_add(&lp->data, data, len);
	if (lp->hs)
		http_stream_wake(lp->hs);
	pthread_mutex_unlock(&lp->lock);
	return atomic_load(&lp->stop) ? 1 : 0;
}

static void *lp_main(void *arg)
{
	struct logproxy *lp = arg;
	rest_stream(lp->rc, lp->path, on_chunk, lp, &lp->stop);
	pthread_mutex_lock(&lp->lock);
	lp->ended = true;
	if (lp->hs)
		http_stream_wake(lp->hs);
	pthread_mutex_unlock(&lp->lock);
	lp_unref(lp);
	return NULL;
}

static int lp_fill(void *ud, struct buf *out, size_t max)
{
	struct logproxy *lp = ud;
	int r = 0;
	pthread_mutex_lock(&lp->lock);
	if (lp->data.len) {
		size_t n = lp->data.len < max ? lp->data.len : max;
		buf_add(out, lp->data.ptr, n);
		memmove(lp->data.ptr, lp->data.ptr + n, lp->data.len - n);
		lp->data.len -= n;
		lp->data.ptr[lp->data.len] = '\0';
		pthread_cond_signal(&lp->drained);
		r = 1;
	} else if (lp->ended) {
		r = -1;
	}
	pthread_mutex_unlock(&lp->lock);
	return r;
}

static void lp_done(void *ud)
{
	struct logproxy *lp = ud;
	pthread_mutex_lock(&lp->lock);
	lp->hs = NULL;
	atomic_store(&lp->stop, true);
	pthread_cond_signal(&lp->drained);
	pthread_mutex_unlock(&lp->lock);
	lp_unref(lp);
}

static struct rest_client *client_for(struct apiserver *s, const char *servers, const char *token)
{
	struct rest_config cfg = { .servers = servers, .token = token, .ca_file = s->o.region_ca_file,
				   .user_agent = "ursa-apiserver", .timeout_ms = 5000 };
	return rest_new(&cfg);
}

/* The node object, asked of every registered resource manager in turn. New ref or NULL. */
json_t *find_node(struct apiserver *s, const char *node)
{
	struct served *rms = served_by_plural(s, "resourcemanagers");
	if (!rms)
		return NULL;
	struct cobj **objs = NULL;
	size_t n = 0;
	int64_t rv;
	json_t *found = NULL;
	if (wcache_list(rms->cache, &(struct wfilter){ 0 }, &objs, &n, &rv) < 0)
		return NULL;
	char *esc = curl_easy_escape(NULL, node, 0);
	char *path = xasprintf("/api/v1/nodes/%s", esc);
	curl_free(esc);
	for (size_t i = 0; i < n; i++) {
		json_t *rm = found ? NULL : json_loadb(objs[i]->json, objs[i]->json_len, 0, NULL);
		char *eps = rm ? region_endpoints(rm) : NULL;
		struct rest_client *rc = eps ? client_for(s, eps, s->region_token) : NULL;
		json_t *body = NULL;
		if (rc && rest_do(rc, "GET", path, NULL, NULL, &body) == 200)
			found = json_incref(body);
		json_decref(body);
		rest_free(rc);
		free(eps);
		json_decref(rm);
		cobj_unref(objs[i]);
	}
	free(objs);
	free(path);
	return found;
}

/* The kubelet's base URL from a node: InternalIP (or Hostname) and the kubelet port. */
char *kubelet_url(const json_t *node)
{
	const char *addr = NULL;
	size_t i;
	json_t *a;
	json_array_foreach(json_path(node, "status.addresses"), i, a) {
		const char *t = json_str(a, "type");
		if (t && (strcmp(t, "InternalIP") == 0 || (!addr && strcmp(t, "Hostname") == 0)))
			addr = json_str(a, "address");
	}
	json_int_t port = json_integer_value(json_path(node, "status.daemonEndpoints.kubeletEndpoint.Port"));
	const char *scheme = NULL;
	json_t *ann = json_path(node, "metadata.annotations");
	if (json_is_object(ann))
		scheme = json_str(ann, "ursa.io/kubelet-scheme");
	if (!addr || port <= 0)
		return NULL;
	return xasprintf("%s://%s:%lld", scheme && strcmp(scheme, "https") == 0 ? "https" : "http", addr, (long long)port);
}

static const char *pick_container(struct req *q, const json_t *pod)
{
	const char *c = http_query(q->http, "container");
	json_t *cs = json_path(pod, "spec.containers");
	if (c && *c) {
		size_t i;
		json_t *v;
		json_array_foreach(cs, i, v) if (json_str(v, "name") && strcmp(json_str(v, "name"), c) == 0) return c;
		reply_status(q, E_BAD_REQUEST, "container %s is not valid for pod %s", c, q->path.name);
		return NULL;
	}
	if (json_array_size(cs) == 1)
		return json_str(json_array_get(cs, 0), "name");
	reply_status(q, E_BAD_REQUEST, "a container name must be specified for pod %s", q->path.name);
	return NULL;
}

static void add_param(struct req *q, struct buf *path, const char *name)
{
	const char *v = http_query(q->http, name);
	if (!v || !*v)
		return;
	char *esc = curl_easy_escape(NULL, v, 0);
	buf_addf(path, "&%s=%s", name, esc);
	curl_free(esc);
}

void proxy_pod_log(struct req *q, const json_t *pod)
{
	const char *node = json_path_str(pod, "spec.nodeName");
	const char *container = pick_container(q, pod);
	if (!container)
		return;
	json_t *n = find_node(q->s, node);
	char *base = n ? kubelet_url(n) : NULL;
	json_decref(n);
	if (!base) {
		reply_status(q, E_UNAVAILABLE, "cannot reach the kubelet of node %s: the node is not known to any resource manager",
			     node);
		return;
	}
	struct buf path = BUF_INIT;
	buf_addf(&path, "/containerLogs/%s/%s/%s?tenant=%s", q->ns, q->path.name, container, q->tenant);
	static const char *const params[] = { "tailLines", "follow", "timestamps", "limitBytes", "sinceSeconds", "previous" };
	for (size_t i = 0; i < sizeof(params) / sizeof(params[0]); i++)
		add_param(q, &path, params[i]);
	struct rest_client *rc = client_for(q->s, base, q->s->kubelet_token);
	free(base);
	const char *follow = http_query(q->http, "follow");
	if (!follow || strcmp(follow, "true") != 0) {
		struct buf body = BUF_INIT;
		int code = rest_do_raw(rc, "GET", buf_cstr(&path), NULL, 0, NULL, &body);
		if (code == 200)
			http_reply_set(q->reply, 200, "text/plain", &body);
		else if (code == 400) /* the kubelet's own words (e.g. no previous container for --previous) */
			reply_status(q, E_BAD_REQUEST, "%.*s", (int)strcspn(buf_cstr(&body), "\n"), buf_cstr(&body));
		else
			reply_status(q, code == 404 ? E_NOT_FOUND : E_UNAVAILABLE, "the kubelet of node %s answered %d: %s",
				     node, code, buf_cstr(&body));
		buf_release(&body);
		rest_free(rc);
		buf_release(&path);
		return;
	}
	struct logproxy *lp = xcalloc(1, sizeof(*lp));
	pthread_mutex_init(&lp->lock, NULL);
	pthread_cond_init(&lp->drained, NULL);
	lp->refs = 2;
	lp->rc = rc;
	lp->path = buf_detach(&path, NULL);
	lp->hs = http_reply_stream(q->reply, 200, "text/plain", lp_fill, lp_done, lp);
	pthread_t t;
	pthread_attr_t attr;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	if (pthread_create(&t, &attr, lp_main, lp) != 0) {
		lp->ended = true;
		lp_unref(lp);
	}
	pthread_attr_destroy(&attr);
}
