/* The node watch: the kubelet learns when someone else changed its nodes' status, as when the
 * node lifecycle controller marks a node Ready=Unknown after a late heartbeat while the kubelet
 * lives. One watch (a real node: fieldSelector metadata.name; a hollow process: its nodes'
 * KL_LABEL_ID label, so the server sends this process's nodes only), started without a
 * resourceVersion (the server sends the nodes' current state as ADDED first), resumed from the
 * last resourceVersion seen, started over after 410. No store: each event is parsed, checked
 * (kl_node_status_stale) and dropped; a stale node is flagged for its heartbeat worker, which
 * posts its status again at its own pace. The kubelet's own status posts come back as events
 * with Ready=True and flag nothing. */
#include <pthread.h>
#include <string.h>
#include "client/client_internal.h"
#include "kubelet.h"
#include "ursa/errors.h"
#include "ursa/jsonutil.h"
#include "ursa/log.h"
#include "ursa/timeutil.h"
#include "ursa/xalloc.h"

#define NW_TIMEOUT_S 1800
#define NW_BACKOFF_FIRST_MS 500
#define NW_BACKOFF_MAX_MS 30000

struct kl_nodewatch {
	struct kubelet *k;
	struct kl_heartbeat *hb;
	char *query;               /* the selector, escaped */
	char *rv;                  /* resume from here; NULL: start over (current state first) */
	struct watch_lines wl;
	bool expired, events;
	atomic_bool stop;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	pthread_t thread;
};

static void set_rv(struct kl_nodewatch *nw, const json_t *obj)
{
	const char *rv = json_path_str(obj, "metadata.resourceVersion");
	if (!rv || !*rv)
		return;
	free(nw->rv);
	nw->rv = xstrdup(rv);
}

static int on_line(void *ud, const char *line, size_t len)
{
	struct kl_nodewatch *nw = ud;
	struct watch_event ev;
	if (watch_event_parse(line, len, &ev))
		return 1;
	int rc = 0;
	switch (ev.type) {
	case WEV_ADDED:
	case WEV_MODIFIED: {
		set_rv(nw, ev.object);
		long i = kl_node_find(nw->k, json_path_str(ev.object, "metadata.name"));
		if (i >= 0 && kl_node_status_stale(ev.object))
			kl_heartbeat_flag_stale(nw->hb, (size_t)i);
		break;
	}
	case WEV_DELETED: /* the heartbeat worker registers a deleted node again (404 on its post) */
	case WEV_BOOKMARK:
		set_rv(nw, ev.object);
		break;
	case WEV_ERROR:
		nw->expired = watch_status_expired(ev.object);
		rc = 1;
		break;
	}
	nw->events = true;
	json_decref(ev.object);
	return rc;
}

static int on_data(void *ud, const char *data, size_t len)
{
	struct kl_nodewatch *nw = ud;
	return watch_lines_feed(&nw->wl, data, len, on_line, nw) ? 1 : 0;
}

static int watch_once(struct kl_nodewatch *nw)
{
	struct buf p = BUF_INIT;
	buf_adds(&p, "/api/v1/nodes?watch=true&allowWatchBookmarks=true&resourceVersion=");
	buf_add_query_escaped(&p, nw->rv ? nw->rv : "");
	buf_addf(&p, "&timeoutSeconds=%d&%s", NW_TIMEOUT_S, nw->query);
	buf_reset(&nw->wl.partial);
	nw->expired = nw->events = false;
	int rc = rest_stream(nw->k->rm, buf_cstr(&p), on_data, nw, &nw->stop);
	buf_release(&p);
	if (rc == 410)
		nw->expired = true;
	return rc;
}

static void *nw_main(void *arg)
{
	struct kl_nodewatch *nw = arg;
	int64_t backoff = 0;
	while (!atomic_load(&nw->stop)) {
		int64_t t0 = mono_ms();
		int rc = watch_once(nw);
		if (atomic_load(&nw->stop))
			break;
		if (nw->expired) {
			free(nw->rv);
			nw->rv = NULL;
		}
		if (rc == 200 && (nw->events || mono_ms() - t0 >= 10000)) {
			backoff = 0;
			continue;
		}
		backoff = backoff ? backoff * 2 : NW_BACKOFF_FIRST_MS;
		if (backoff > NW_BACKOFF_MAX_MS)
			backoff = NW_BACKOFF_MAX_MS;
		if (backoff >= 8000)
			log_warn("node watch failing, retrying", "code=%d retry_ms=%lld", rc, (long long)backoff);
		cond_sleep_ms(&nw->lock, &nw->cond, &nw->stop, backoff);
	}
	return NULL;
}

/* The selector of this process's nodes, escaped for a query; NULL if they cannot be selected. */
static char *node_query(const struct kubelet *k)
{
	struct buf sel = BUF_INIT, q = BUF_INIT;
	if (k->hollow) {
		if (!kl_label_value_ok(k->kubelet_id))
			return NULL;
		buf_addf(&sel, "%s=%s", KL_LABEL_ID, k->kubelet_id);
		buf_adds(&q, "labelSelector=");
	} else {
		buf_addf(&sel, "metadata.name=%s", k->nodes[0].name);
		buf_adds(&q, "fieldSelector=");
	}
	buf_add_query_escaped(&q, buf_cstr(&sel));
	buf_release(&sel);
	return buf_detach(&q, NULL);
}

struct kl_nodewatch *kl_nodewatch_start(struct kubelet *k, struct kl_heartbeat *hb)
{
	char *query = node_query(k);
	if (!query) {
		log_warn("kubelet id is not a label value: nodes marked by others wait for the status report",
			 "id=\"%s\"", k->kubelet_id);
		return NULL;
	}
	struct kl_nodewatch *nw = xcalloc(1, sizeof(*nw));
	nw->k = k;
	nw->hb = hb;
	nw->query = query;
	watch_lines_init(&nw->wl);
	atomic_init(&nw->stop, false);
	pthread_mutex_init(&nw->lock, NULL);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&nw->cond, &ca);
	pthread_condattr_destroy(&ca);
	pthread_attr_t attr;
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 256 * 1024);
	int rc = pthread_create(&nw->thread, &attr, nw_main, nw);
	pthread_attr_destroy(&attr);
	if (rc != 0) {
		log_warn("cannot start the node watch", "err=%d", rc);
		pthread_cond_destroy(&nw->cond);
		pthread_mutex_destroy(&nw->lock);
		watch_lines_release(&nw->wl);
		free(nw->query);
		free(nw);
		return NULL;
	}
	return nw;
}

void kl_nodewatch_stop(struct kl_nodewatch *nw)
{
	if (!nw)
		return;
	pthread_mutex_lock(&nw->lock);
	atomic_store(&nw->stop, true);
	pthread_cond_broadcast(&nw->cond);
	pthread_mutex_unlock(&nw->lock);
	pthread_join(nw->thread, NULL);
	pthread_cond_destroy(&nw->cond);
	pthread_mutex_destroy(&nw->lock);
	watch_lines_release(&nw->wl);
	free(nw->query);
	free(nw->rv);
	free(nw);
}
