/* The kubelet's events: what the runtime reports through rt_event (Pulling, Pulled, Failed,
 * BackOff, Created, Started, Killing) becomes a core/v1 Event (ursa/event.h) about the pod, with
 * source {kubelet, <node>} and the container's fieldPath, posted to the partition whose store
 * holds the pod.
 *
 * The sink only queues (bounded: past EV_MAX_QUEUED events wait, newer ones are dropped and
 * counted, as a kubelet's event broadcaster drops under pressure); one thread of its own posts
 * them, so neither the pod worker nor a runtime thread waits on a partition. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include "kubelet.h"
#include "ursa/event.h"
#include "ursa/jsonutil.h"
#include "ursa/log.h"
#include "ursa/xalloc.h"

#define EV_MAX_QUEUED 1000

struct ev_item {
	char *tenant, *ns, *pod, *uid, *field_path, *reason, *message;
	bool warning;
	struct ev_item *next;
};

struct kl_events {
	struct kubelet *k;
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct ev_item *head, *tail;
	size_t queued;
	unsigned long long dropped;
	bool stop;
};

static void item_free(struct ev_item *it)
{
	free(it->tenant);
	free(it->ns);
	free(it->pod);
	free(it->uid);
	free(it->field_path);
	free(it->reason);
	free(it->message);
	free(it);
}

static void sink(void *ud, const char *tenant, const char *ns, const char *pod, const char *uid, const char *container,
		 bool warning, const char *reason, const char *message)
{
	struct kl_events *ev = ud;
	pthread_mutex_lock(&ev->mu);
	if (ev->stop || ev->queued >= EV_MAX_QUEUED) {
		ev->dropped++;
		pthread_mutex_unlock(&ev->mu);
		return;
	}
	pthread_mutex_unlock(&ev->mu);
	struct ev_item *it = xcalloc(1, sizeof(*it));
	it->tenant = xstrdup(tenant);
	it->ns = xstrdup(ns);
	it->pod = xstrdup(pod);
	it->uid = xstrdup(uid);
	it->field_path = container ? xasprintf("spec.containers{%s}", container) : NULL;
	it->reason = xstrdup(reason);
	it->message = xstrdup(message);
	it->warning = warning;
	pthread_mutex_lock(&ev->mu);
	if (ev->tail)
		ev->tail->next = it;
	else
		ev->head = it;
	ev->tail = it;
	ev->queued++;
	pthread_cond_signal(&ev->cv);
	pthread_mutex_unlock(&ev->mu);
}

static void post(struct kl_events *ev, const struct ev_item *it)
{
	struct kubelet *k = ev->k;
	char *key = xasprintf("%s/%s/%s", it->tenant, it->ns, it->pod);
	struct kl_partition *p = kl_partition_holding(k, key, it->uid);
	free(key);
	if (!p) {
		log_debug("event dropped: pod not found", "pod=\"%s/%s/%s\" reason=%s", it->tenant, it->ns, it->pod,
			  it->reason);
		return;
	}
	const struct event_source src = { .component = "kubelet", .host = k->nodes[0].name };
	json_t *obj = json_pack("{s:{s:s,s:s,s:s,s:s}}", "metadata", "tenant", it->tenant, "namespace", it->ns, "name",
				it->pod, "uid", it->uid);
	char *path;
	json_t *e = event_new(obj, "v1", "Pod", it->field_path, it->warning ? "Warning" : "Normal", it->reason,
			      it->message, &src, &path);
	int rc = e ? rest_do(p->rc, "POST", path, e, NULL, NULL) : -1;
	if (rc != 201 && rc != 200)
		log_debug("event not recorded", "pod=\"%s/%s/%s\" reason=%s rc=%d", it->tenant, it->ns, it->pod,
			  it->reason, rc);
	json_decref(e);
	json_decref(obj);
	free(path);
	kl_partition_put(p);
}

static void *events_main(void *arg)
{
	struct kl_events *ev = arg;
	pthread_mutex_lock(&ev->mu);
	for (;;) {
		while (!ev->stop && !ev->head)
			pthread_cond_wait(&ev->cv, &ev->mu);
		if (ev->stop)
			break;
		struct ev_item *it = ev->head;
		ev->head = it->next;
		if (!ev->head)
			ev->tail = NULL;
		ev->queued--;
		pthread_mutex_unlock(&ev->mu);
		post(ev, it);
		item_free(it);
		pthread_mutex_lock(&ev->mu);
	}
	pthread_mutex_unlock(&ev->mu);
	return NULL;
}

struct kl_events *kl_events_start(struct kubelet *k)
{
	struct kl_events *ev = xcalloc(1, sizeof(*ev));
	ev->k = k;
	pthread_mutex_init(&ev->mu, NULL);
	pthread_cond_init(&ev->cv, NULL);
	if (pthread_create(&ev->thread, NULL, events_main, ev) != 0) {
		log_warn("no kubelet events: cannot start their thread", "node=\"%s\"", k->nodes ? k->nodes[0].name : "");
		pthread_mutex_destroy(&ev->mu);
		pthread_cond_destroy(&ev->cv);
		free(ev);
		return NULL;
	}
	rt_set_event_sink(sink, ev);
	return ev;
}

void kl_events_stop(struct kl_events *ev)
{
	if (!ev)
		return;
	pthread_mutex_lock(&ev->mu);
	bool was = ev->stop;
	ev->stop = true;
	pthread_cond_signal(&ev->cv);
	pthread_mutex_unlock(&ev->mu);
	if (!was)
		pthread_join(ev->thread, NULL);
}

void kl_events_free(struct kl_events *ev)
{
	if (!ev)
		return;
	kl_events_stop(ev);
	rt_set_event_sink(NULL, NULL);
	while (ev->head) {
		struct ev_item *it = ev->head;
		ev->head = it->next;
		item_free(it);
		ev->dropped++;
	}
	if (ev->dropped)
		log_info("kubelet events dropped", "count=%llu", ev->dropped);
	pthread_mutex_destroy(&ev->mu);
	pthread_cond_destroy(&ev->cv);
	free(ev);
}
