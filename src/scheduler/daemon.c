/* The running scheduler. Threads: the informers' (pods of the partition, its registry of
 * resource managers, and the nodes of each resource manager) feed the cache; workers pop pod
 * keys from the tenant-fair work queue, decide under the cache mutex, then reserve and bind
 * without it (a reservation write only when the room reserved ahead on the node does not
 * cover the pod, one per node at a time); a ticker requeues unschedulable pods after node
 * changes, checks the resource managers and logs counters; a GC thread releases reserved room
 * our pods do not use. */
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "daemon.h"
#include "sched.h"
#include "ursa/errors.h"
#include "ursa/event.h"
#include "ursa/health.h"
#include "ursa/jsonutil.h"
#include "ursa/log.h"
#include "ursa/region.h"
#include "ursa/timeutil.h"
#include "ursa/xalloc.h"

#define LEASE_PATH "/apis/coordination.k8s.io/v1/tenants/system/namespaces/kube-system/leases/ursa-scheduler"
#define RM_REGISTRY "/apis/ursa.io/v1/resourcemanagers"
#define MAX_RMS 1024
#define RESERVE_ATTEMPTS 8
#define MSG_MAX 1024
/* Score for a node where the pod fits in the room we reserved ahead: enough to prefer it over
 * an emptier node (least allocated + balanced differ by a few tens between an empty node and
 * one holding a chunk), not enough to beat spreading (up to 200). */
#define RESERVED_BONUS 50

struct rm_entry {
	char *name;
	struct rest_client *client;
	struct informer *inf;
	struct sched_daemon *d;
	bool synced;
	int64_t failing_since;    /* mono ms of the first failed health check in a row, 0 if fine */
	bool down;                /* its nodes are marked rm_down */
};

struct sched_daemon {
	struct sched_options o;
	char *identity;
	struct rest_creds *creds; /* the TP kubeconfig's, reused for every resource manager */
	struct rest_client *tp;
	struct rest_async *tp_async;    /* bindings and events: no worker waits on them */
	pthread_mutex_t bind_mu;        /* guards binds */
	pthread_cond_t bind_cond;       /* a binding ended */
	long long binds;                /* bindings in flight: at most one per worker */
	pthread_mutex_t mu;             /* guards cache, unsched, rms, opened */
	pthread_cond_t res_cond;        /* a reservation write ended (with mu) */
	size_t gc_cursor;               /* where the next release round starts in the node list */
	struct sched_cache cache;
	struct strmap unsched;          /* pods waiting for a node change */
	struct region_peers rms;        /* val: struct rm_entry * */
	struct rm_entry **opened;       /* by the last change of rms: informers to start */
	size_t nopened;
	struct rm_entry **retired;      /* stopped RMs whose clients workers may still hold */
	size_t nretired;
	struct workqueue *q;
	struct informer *pods, *rm_inf;
	struct leader_elector *le;
	struct health_server *health; /* borrowed from the daemon skeleton, or NULL */
	pthread_t *workers, ticker, gc;
	size_t nworkers;
	pthread_mutex_t start_mu;
	atomic_bool stop, lost, requeue;
	/* counters */
	atomic_llong scheduled, failed, reserve_writes, reserve_conflicts, collisions, bind_conflicts,
		bind_errors, decisions, decision_us, gc_writes;
};

/* Pods ------------------------------------------------------------------------------------- */

static bool pending_for_us(const struct sched_daemon *d, const json_t *obj)
{
	const char *node = json_path_str(obj, "spec.nodeName");
	const char *name = json_path_str(obj, "spec.schedulerName");
	const char *phase = json_path_str(obj, "status.phase");
	if (node && *node)
		return false;
	if (json_path(obj, "metadata.deletionTimestamp"))
		return false;
	if (phase && (strcmp(phase, "Succeeded") == 0 || strcmp(phase, "Failed") == 0))
		return false;
	return strcmp(name ? name : "default-scheduler", d->o.scheduler_name) == 0;
}

static void pod_upsert(struct sched_daemon *d, const json_t *obj)
{
	bool freed = false;
	pthread_mutex_lock(&d->mu);
	struct sched_cpod *p = sched_cache_pod_set(&d->cache, obj, &freed);
	char *key = xstrdup(p->key);
	bool pending = pending_for_us(d, obj);
	if (!pending)
		strmap_del(&d->unsched, key, NULL);
	pthread_mutex_unlock(&d->mu);
	if (pending)
		wq_add(d->q, key);
	if (freed)
		atomic_store(&d->requeue, true);
	free(key);
}

static void on_pod_add(void *ud, const json_t *obj)
{
	pod_upsert(ud, obj);
}

static void on_pod_update(void *ud, const json_t *old_obj, const json_t *new_obj)
{
	(void)old_obj;
	pod_upsert(ud, new_obj);
}

static void on_pod_delete(void *ud, const json_t *obj)
{
	struct sched_daemon *d = ud;
	char *key = object_key(obj);
	pthread_mutex_lock(&d->mu);
	struct sched_cpod *p = sched_cache_pod(&d->cache, key);
	bool held = p && p->node;
	sched_cache_pod_del(&d->cache, key);
	strmap_del(&d->unsched, key, NULL);
	pthread_mutex_unlock(&d->mu);
	wq_forget(d->q, key);
	if (held)
		atomic_store(&d->requeue, true);
	free(key);
}

/* Nodes of one resource manager ----------------------------------------------------------- */

static void node_upsert(struct rm_entry *r, const json_t *obj)
{
	struct sched_daemon *d = r->d;
	pthread_mutex_lock(&d->mu);
	bool better = sched_cache_node_set(&d->cache, obj, r->name);
	pthread_mutex_unlock(&d->mu);
	if (better)
		atomic_store(&d->requeue, true);
}

static void on_node_add(void *ud, const json_t *obj)
{
	node_upsert(ud, obj);
}

static void on_node_update(void *ud, const json_t *old_obj, const json_t *new_obj)
{
	(void)old_obj;
	node_upsert(ud, new_obj);
}

static void on_node_delete(void *ud, const json_t *obj)
{
	struct rm_entry *r = ud;
	const char *name = json_path_str(obj, "metadata.name");
	pthread_mutex_lock(&r->d->mu);
	struct sched_node *n = name ? sched_cache_node(&r->d->cache, name) : NULL;
	if (n && n->rm && strcmp(n->rm, r->name) == 0)
		sched_cache_node_del(&r->d->cache, name);
	pthread_mutex_unlock(&r->d->mu);
}

static void on_node_synced(void *ud)
{
	struct rm_entry *r = ud;
	pthread_mutex_lock(&r->d->mu);
	r->synced = true;
	pthread_mutex_unlock(&r->d->mu);
	log_info("resource manager synced", "rm=\"%s\"", r->name);
}

static const struct informer_handlers node_handlers = { on_node_add, on_node_update, on_node_delete,
							 on_node_synced };

/* The registry of resource managers ------------------------------------------------------- */

/* Stops r's informer (with no lock held: its handlers take the mutex) and retires it. */
static void rm_retire(struct sched_daemon *d, struct rm_entry *r)
{
	informer_stop(r->inf);
	r->inf = NULL;
	pthread_mutex_lock(&d->mu);
	sched_cache_rm_del(&d->cache, r->name);
	d->retired = xrealloc(d->retired, (d->nretired + 1) * sizeof(*d->retired));
	d->retired[d->nretired++] = r;
	pthread_mutex_unlock(&d->mu);
}

/* Under the mutex (region_peers_offer/remove): a new RM, whose informer starts once the lock
 * is released. */
static void *rm_open(void *ud, const char *name, const char *servers, const json_t *obj)
{
	struct sched_daemon *d = ud;
	struct rm_entry *r = xcalloc(1, sizeof(*r));
	r->name = xstrdup(name);
	r->d = d;
	r->client = rest_new_with_creds(d->creds, servers, "ursa-scheduler");
	d->opened = xrealloc(d->opened, (d->nopened + 1) * sizeof(*d->opened));
	d->opened[d->nopened++] = r;
	log_info("following resource manager", "rm=\"%s\" endpoints=\"%s\"", name, servers);
	return r;
}

/* No .close: RMs gone or moved are retired by rms_settle once the lock is released. */
static const struct region_follow rm_follow = { .open = rm_open };

/* Without the lock: retires what the last change closed, then starts what it opened (a moved
 * RM's old nodes leave the cache before the new informer brings them back). Takes the lists
 * under the lock. */
static void rms_settle(struct sched_daemon *d)
{
	size_t nclosed;
	pthread_mutex_lock(&d->mu);
	void **closed = region_peers_take_closed(&d->rms, &nclosed);
	struct rm_entry **opened = d->opened;
	size_t nopened = d->nopened;
	d->opened = NULL;
	d->nopened = 0;
	pthread_mutex_unlock(&d->mu);
	for (size_t i = 0; i < nclosed; i++)
		rm_retire(d, closed[i]);
	for (size_t i = 0; i < nopened; i++)
		opened[i]->inf = informer_start(opened[i]->client, "/api/v1/nodes", NULL, &node_handlers, opened[i]);
	free(opened);
	free(closed);
}

static void rm_upsert(struct sched_daemon *d, const json_t *obj)
{
	pthread_mutex_lock(&d->mu);
	region_peers_offer(&d->rms, obj);
	pthread_mutex_unlock(&d->mu);
	rms_settle(d);
}

static void on_rm_add(void *ud, const json_t *obj)
{
	rm_upsert(ud, obj);
}

static void on_rm_update(void *ud, const json_t *old_obj, const json_t *new_obj)
{
	(void)old_obj;
	rm_upsert(ud, new_obj);
}

static void on_rm_delete(void *ud, const json_t *obj)
{
	struct sched_daemon *d = ud;
	const char *name = json_path_str(obj, "metadata.name");
	pthread_mutex_lock(&d->mu);
	bool had = region_peers_remove(&d->rms, name);
	pthread_mutex_unlock(&d->mu);
	rms_settle(d);
	if (had)
		log_info("resource manager removed", "rm=\"%s\"", name);
}

/* Reservation ------------------------------------------------------------------------------ */

/* What to write to set our reservation on a node to a target; taken under the mutex. */
struct reservation {
	char *node, *rm, *rv, *value;
	struct rest_client *client;
};

static void reservation_release(struct reservation *r)
{
	free(r->node);
	free(r->rm);
	free(r->rv);
	free(r->value);
	*r = (struct reservation){ NULL };
}

static bool res_more(const struct sched_res *a, const struct sched_res *b)
{
	return a->cpu_m > b->cpu_m || a->mem_m > b->mem_m || a->pods > b->pods;
}

static bool overcommitted(const struct sched_node *n)
{
	struct sched_res u = n->used;
	sched_res_add(&u, &n->other);
	return res_more(&u, &n->alloc);
}

/* Under the mutex: claims n for one write of target (n->writing) and fills what to send. */
static void reservation_begin(struct sched_daemon *d, struct sched_node *n, const struct sched_res *target,
			      struct reservation *ret)
{
	struct region_peer *e = region_peers_find(&d->rms, n->rm ? n->rm : "");
	struct reservation r = { NULL };
	r.node = xstrdup(n->name);
	r.rm = xstrdup(n->rm ? n->rm : "");
	r.rv = xstrdup(n->rv ? n->rv : "");
	r.client = e ? ((struct rm_entry *)e->val)->client : NULL;
	r.value = sched_reserved_format(n->reserved, d->cache.partition, target);
	n->writing = true;
	n->write_target = *target;
	*ret = r;
}

/* Under the mutex: ends the write begun on r, taking the node object it returned (or NULL). */
static void reservation_end(struct sched_daemon *d, const struct reservation *r, const json_t *node_obj)
{
	struct sched_node *n = sched_cache_node(&d->cache, r->node);
	if (n)
		n->writing = false;
	if (json_is_object(node_obj))
		sched_cache_node_set(&d->cache, node_obj, r->rm);
	pthread_cond_broadcast(&d->res_cond);
}

/* The conditional write (merge patch carrying the resourceVersion we decided on). Returns the
 * HTTP status; after a 409 *ret_node is the node as it is now (re-read), else the answer. */
static int reservation_write(struct sched_daemon *d, const struct reservation *r, json_t **ret_node)
{
	char *path = xasprintf("/api/v1/nodes/%s", r->node);
	json_t *ann = json_pack("{s:s}", SCHED_ANN_RESERVED, r->value);
	json_t *patch = json_pack("{s:{s:s, s:o}}", "metadata", "resourceVersion", r->rv, "annotations", ann);
	int code = rest_do(r->client, "PATCH", path, patch, "application/merge-patch+json", ret_node);
	json_decref(patch);
	atomic_fetch_add(&d->reserve_writes, 1);
	if (code == 409) {
		atomic_fetch_add(&d->reserve_conflicts, 1);
		json_decref(*ret_node);
		*ret_node = NULL;
		if (rest_do(r->client, "GET", path, NULL, NULL, ret_node) != 200) {
			json_decref(*ret_node);
			*ret_node = NULL;
		}
	}
	free(path);
	return code;
}

/* Makes our reservation on node cover our pods there (the pod of request req already
 * assumed). Usually the room reserved ahead covers it and nothing is written. Otherwise one
 * write (per node at a time: a worker finding a write in flight waits for its outcome) raises
 * the entry to our usage plus headroom for more pods like this one, with optimistic
 * concurrency; after a conflict the node is re-read and everything re-checked. 0, E_CONFLICT
 * when another partition took the room, or another E_* code. */
static int reserve(struct sched_daemon *d, const char *node, const struct sched_res *req)
{
	int conflicts = 0, rc = 0;
	pthread_mutex_lock(&d->mu);
	for (;;) {
		struct sched_node *n = sched_cache_node(&d->cache, node);
		if (!n || !n->present || overcommitted(n)) {
			rc = E_CONFLICT;
			break;
		}
		n->touched_ms = mono_ms();
		if (sched_reservation_covers(n))
			break;
		if (n->writing) {
			pthread_cond_wait(&d->res_cond, &d->mu);
			continue;
		}
		if (conflicts >= RESERVE_ATTEMPTS) {
			rc = E_CONFLICT;
			break;
		}
		struct sched_res target;
		struct reservation r;
		sched_reserve_target(n, req, d->o.chunk, &target);
		reservation_begin(d, n, &target, &r);
		pthread_mutex_unlock(&d->mu);
		json_t *obj = NULL;
		int code = r.client ? reservation_write(d, &r, &obj) : E_UNAVAILABLE;
		pthread_mutex_lock(&d->mu);
		reservation_end(d, &r, obj);
		reservation_release(&r);
		bool reread = json_is_object(obj);
		json_decref(obj);
		if (code == 409 && reread) {
			conflicts++;
			continue;
		}
		if (code != 200) {
			rc = code == 404 ? E_NOT_FOUND : E_UNAVAILABLE;
			break;
		}
	}
	pthread_mutex_unlock(&d->mu);
	return rc;
}

/* Events and status ----------------------------------------------------------------------- */

static void add_now(struct buf *b)
{
	rfc3339_add(b, (time_t)(now_ms() / 1000));
}

struct event_post {
	char *pod; /* tenant/namespace/name, for the log */
};

static void on_event_posted(void *ud, int code, const struct buf *body)
{
	struct event_post *e = ud;
	(void)body;
	if (code >= 300 || code < 0)
		log_warn("event not recorded", "pod=\"%s\" code=%d", e->pod, code);
	free(e->pod);
	free(e);
}

static void post_event(struct sched_daemon *d, const json_t *pod, const char *type, const char *reason,
		       const char *msg)
{
	const struct event_source src = { .component = d->o.scheduler_name };
	char *path;
	json_t *ev = event_new(pod, "v1", "Pod", NULL, type, reason, msg, &src, &path);
	char *body = ev ? json_dumps(ev, JSON_COMPACT) : NULL;
	if (body) {
		struct event_post *e = xcalloc(1, sizeof(*e));
		e->pod = xasprintf("%s/%s/%s", json_path_str(pod, "metadata.tenant"),
				   json_path_str(pod, "metadata.namespace"), json_path_str(pod, "metadata.name"));
		rest_async_submit(d->tp_async, "POST", path, body, strlen(body), NULL, on_event_posted, e);
	}
	json_decref(ev);
	free(path);
}

static void set_unschedulable(struct sched_daemon *d, const json_t *pod, const char *msg)
{
	const char *t = json_path_str(pod, "metadata.tenant"), *ns = json_path_str(pod, "metadata.namespace");
	const char *name = json_path_str(pod, "metadata.name");
	struct buf now = BUF_INIT;
	add_now(&now);
	json_t *patch = json_pack("{s:{s:[{s:s, s:s, s:s, s:s, s:s, s:n}]}}", "status", "conditions", "type",
				  "PodScheduled", "status", "False", "reason", "Unschedulable", "message", msg,
				  "lastTransitionTime", buf_cstr(&now), "lastProbeTime");
	char *path = xasprintf("/api/v1/tenants/%s/namespaces/%s/pods/%s/status", t, ns, name);
	int code = patch ? rest_do(d->tp, "PATCH", path, patch, "application/merge-patch+json", NULL) : 0;
	if (code >= 300 || code < 0)
		log_warn("pod condition not set", "pod=\"%s/%s/%s\" code=%d", t, ns, name, code);
	json_decref(patch);
	free(path);
	buf_release(&now);
}

/* Scheduling one pod ------------------------------------------------------------------------ */

static void unassume(struct sched_daemon *d, const char *key)
{
	pthread_mutex_lock(&d->mu);
	struct sched_cpod *p = sched_cache_pod(&d->cache, key);
	if (p)
		sched_cache_forget(&d->cache, p);
	pthread_mutex_unlock(&d->mu);
	atomic_store(&d->requeue, true);
}

static void failed(struct sched_daemon *d, const char *key, const json_t *pod, const char *msg)
{
	bool changed = false;
	pthread_mutex_lock(&d->mu);
	struct sched_cpod *p = sched_cache_pod(&d->cache, key);
	if (p && (!p->last_msg || strcmp(p->last_msg, msg) != 0)) {
		free(p->last_msg);
		p->last_msg = xstrdup(msg);
		changed = true;
	}
	if (p)
		strmap_put(&d->unsched, key, NULL);
	pthread_mutex_unlock(&d->mu);
	atomic_fetch_add(&d->failed, 1);
	if (changed) {
		log_info("pod unschedulable", "pod=\"%s\" message=\"%s\"", key, msg);
		set_unschedulable(d, pod, msg);
		post_event(d, pod, "Warning", "FailedScheduling", msg);
	}
	wq_add_rate_limited(d->q, key);
}

static void bound(struct sched_daemon *d, const char *key, const json_t *pod, const char *node)
{
	pthread_mutex_lock(&d->mu);
	struct sched_cpod *p = sched_cache_pod(&d->cache, key);
	if (p) {
		free(p->last_msg);
		p->last_msg = NULL;
	}
	strmap_del(&d->unsched, key, NULL);
	pthread_mutex_unlock(&d->mu);
	wq_forget(d->q, key);
	atomic_fetch_add(&d->scheduled, 1);
	log_debug("pod bound", "pod=\"%s\" node=\"%s\"", key, node);
	if (d->o.scheduled_events) {
		char *msg = xasprintf("Successfully assigned %s/%s to %s", json_path_str(pod, "metadata.namespace"),
				      json_path_str(pod, "metadata.name"), node);
		post_event(d, pod, "Normal", "Scheduled", msg);
		free(msg);
	}
}

/* A binding in flight: the pod's key, its object and the node (owned). */
struct binding {
	struct sched_daemon *d;
	char *key, *node;
	json_t *pod;
};

static void on_bind_done(void *ud, int code, const struct buf *body)
{
	struct binding *b = ud;
	struct sched_daemon *d = b->d;
	(void)body;
	if (code == 200 || code == 201) {
		bound(d, b->key, b->pod, b->node);
	} else {
		unassume(d, b->key);
		if (code == 409) {
			atomic_fetch_add(&d->bind_conflicts, 1);
		} else if (code != 404) {
			atomic_fetch_add(&d->bind_errors, 1);
			log_warn("binding failed", "pod=\"%s\" node=\"%s\" code=%d", b->key, b->node, code);
			wq_add_rate_limited(d->q, b->key);
		}
	}
	json_decref(b->pod);
	free(b->key), free(b->node);
	free(b);
	pthread_mutex_lock(&d->bind_mu);
	d->binds--;
	pthread_cond_signal(&d->bind_cond);
	pthread_mutex_unlock(&d->bind_mu);
}

/* POSTs the pod's binding to node (taken over) without waiting for the answer (on_bind_done
 * handles it on the client's request thread); waits only while as many bindings as workers
 * are in flight, so that decisions do not run far ahead of the partition. */
static void bind_pod(struct sched_daemon *d, const char *key, const json_t *pod, char *node)
{
	pthread_mutex_lock(&d->bind_mu);
	while (d->binds >= d->o.workers)
		pthread_cond_wait(&d->bind_cond, &d->bind_mu);
	d->binds++;
	pthread_mutex_unlock(&d->bind_mu);
	const char *t = json_path_str(pod, "metadata.tenant"), *ns = json_path_str(pod, "metadata.namespace");
	const char *name = json_path_str(pod, "metadata.name");
	json_t *obj = json_pack("{s:s, s:s, s:{s:s, s:s}, s:{s:s, s:s, s:s}}", "apiVersion", "v1", "kind", "Binding",
				"metadata", "name", name, "namespace", ns, "target", "apiVersion", "v1", "kind",
				"Node", "name", node);
	char *body = obj ? json_dumps(obj, JSON_COMPACT) : NULL;
	json_decref(obj);
	struct binding *b = xcalloc(1, sizeof(*b));
	*b = (struct binding){ .d = d, .key = xstrdup(key), .node = node, .pod = json_incref((json_t *)pod) };
	if (!body) {
		on_bind_done(b, E_INVALID, NULL);
		return;
	}
	char *path = xasprintf("/api/v1/tenants/%s/namespaces/%s/pods/%s/binding", t, ns, name);
	rest_async_submit(d->tp_async, "POST", path, body, strlen(body), NULL, on_bind_done, b);
	free(path);
}

/* Under the mutex: the decision; on success the pod is assumed on *ret_node (new string). */
static int decide(struct sched_daemon *d, struct sched_cpod *cp, char **ret_node, struct buf *msg)
{
	struct sched_pod p;
	struct sched_result res;
	struct buf err = BUF_INIT;
	if (sched_pod_parse(cp->obj, &p, &err) != 0) {
		buf_addf(msg, "invalid pod: %s", buf_cstr(&err));
		buf_release(&err);
		return E_INVALID;
	}
	int64_t t0 = mono_us();
	sched_decide(&d->cache, &p, &res);
	atomic_fetch_add(&d->decision_us, mono_us() - t0);
	atomic_fetch_add(&d->decisions, 1);
	int rc = 0;
	if (res.node) {
		sched_cache_assume(&d->cache, cp, res.node->name);
		*ret_node = xstrdup(res.node->name);
	} else {
		sched_result_message(&res, d->cache.n, msg);
		rc = E_CONFLICT;
	}
	sched_result_release(&res);
	sched_pod_release(&p);
	return rc;
}

static void schedule_one(struct sched_daemon *d, const char *key)
{
	struct buf msg = BUF_INIT;
	char *node = NULL;
	pthread_mutex_lock(&d->mu);
	struct sched_cpod *cp = sched_cache_pod(&d->cache, key);
	if (!cp || !pending_for_us(d, cp->obj) || cp->assumed) {
		pthread_mutex_unlock(&d->mu);
		wq_forget(d->q, key);
		return;
	}
	json_t *pod = json_incref(cp->obj);
	struct sched_res cp_req = cp->req;
	int rc = decide(d, cp, &node, &msg);
	pthread_mutex_unlock(&d->mu);
	if (rc) {
		failed(d, key, pod, buf_cstr(&msg));
		goto out;
	}
	rc = reserve(d, node, &cp_req);
	if (rc == E_CONFLICT) {
		/* another partition's scheduler took the room first: decide again at once */
		atomic_fetch_add(&d->collisions, 1);
		unassume(d, key);
		wq_add(d->q, key);
		goto out;
	}
	if (rc) {
		unassume(d, key);
		wq_add_rate_limited(d->q, key);
		goto out;
	}
	bind_pod(d, key, pod, node);
	node = NULL;
out:
	json_decref(pod);
	free(node);
	buf_release(&msg);
}

/* Workers, ticker, leadership ---------------------------------------------------------------- */

static bool caches_synced(struct sched_daemon *d)
{
	if (!informer_synced(d->pods) || !informer_synced(d->rm_inf))
		return false;
	bool all = true;
	pthread_mutex_lock(&d->mu);
	for (size_t i = 0; i < d->rms.n; i++)
		all = all && ((struct rm_entry *)d->rms.v[i].val)->synced;
	pthread_mutex_unlock(&d->mu);
	return all;
}

static void *worker_main(void *arg)
{
	struct sched_daemon *d = arg;
	char *key;
	while ((key = wq_get(d->q))) {
		schedule_one(d, key);
		wq_done(d->q, key);
		free(key);
	}
	return NULL;
}

static void start_workers(struct sched_daemon *d)
{
	pthread_mutex_lock(&d->start_mu);
	if (d->workers) {
		pthread_mutex_unlock(&d->start_mu);
		return;
	}
	int64_t deadline = mono_ms() + 30000;
	while (!caches_synced(d) && mono_ms() < deadline && !atomic_load(&d->stop))
		usleep(50 * 1000);
	log_info("scheduling", "workers=%lld nodes=%zu pods=%zu", d->o.workers, d->cache.n, d->cache.pods.n);
	d->nworkers = (size_t)d->o.workers;
	d->workers = xcalloc(d->nworkers, sizeof(pthread_t));
	for (size_t i = 0; i < d->nworkers; i++)
		pthread_create(&d->workers[i], NULL, worker_main, d);
	pthread_mutex_unlock(&d->start_mu);
}

static void on_started(void *ud)
{
	struct sched_daemon *d = ud;
	log_info("became leader", "identity=\"%s\"", d->identity);
	health_set_leader(d->health, true);
	start_workers(d);
}

static void on_stopped(void *ud)
{
	struct sched_daemon *d = ud;
	if (atomic_load(&d->stop))
		return; /* stopping: the daemon skeleton freed the health server before its stop */
	health_set_leader(d->health, false);
	log_error("lost leadership", "identity=\"%s\"", d->identity);
	atomic_store(&d->lost, true);
}

static void requeue_unschedulable(struct sched_daemon *d)
{
	struct strmap keys;
	pthread_mutex_lock(&d->mu);
	keys = d->unsched;
	strmap_init(&d->unsched);
	pthread_mutex_unlock(&d->mu);
	size_t it = 0;
	for (struct strmap_ent *e = strmap_next(&keys, NULL, &it); e; e = strmap_next(&keys, e, &it))
		wq_add(d->q, e->key);
	strmap_release(&keys, NULL);
}

/* Releases what our entries hold beyond our pods' use (headroom reserved ahead, pods that
 * finished or were deleted, bindings that failed) on nodes where we placed nothing for
 * --reservation-idle-ms. At most GC_BATCH nodes a round; conflicts wait for the next. */
#define GC_BATCH 128
static void gc_reservations(struct sched_daemon *d)
{
	struct reservation *todo = NULL;
	size_t n = 0;
	int64_t now = mono_ms();
	pthread_mutex_lock(&d->mu);
	size_t total = d->cache.n, start = total ? d->gc_cursor % total : 0;
	for (size_t i = 0; i < total && n < GC_BATCH; i++) {
		struct sched_node *node = d->cache.list[(start + i) % total];
		d->gc_cursor = start + i + 1; /* next round goes on from here: a stuck node blocks none */
		if (node->writing || !res_more(&node->own_reserved, &node->used) ||
		    now - node->touched_ms < d->o.idle_ms)
			continue;
		todo = xrealloc(todo, (n + 1) * sizeof(*todo));
		reservation_begin(d, node, &node->used, &todo[n++]);
	}
	pthread_mutex_unlock(&d->mu);
	for (size_t i = 0; i < n; i++) {
		json_t *resp = NULL;
		int code = todo[i].client ? reservation_write(d, &todo[i], &resp) : E_UNAVAILABLE;
		if (code == 200)
			atomic_fetch_add(&d->gc_writes, 1);
		pthread_mutex_lock(&d->mu);
		reservation_end(d, &todo[i], resp);
		pthread_mutex_unlock(&d->mu);
		json_decref(resp);
		reservation_release(&todo[i]);
	}
	free(todo);
}

static void log_stats(struct sched_daemon *d, const char *msg)
{
	long long dec = atomic_load(&d->decisions);
	log_info(msg,
		 "scheduled=%lld unschedulable_attempts=%lld decisions=%lld decision_avg_us=%lld reserve_writes=%lld "
		 "reserve_conflicts=%lld collisions=%lld bind_conflicts=%lld bind_errors=%lld gc_writes=%lld "
		 "queue=%zu nodes=%zu",
		 atomic_load(&d->scheduled), atomic_load(&d->failed), dec, dec ? atomic_load(&d->decision_us) / dec : 0,
		 atomic_load(&d->reserve_writes), atomic_load(&d->reserve_conflicts), atomic_load(&d->collisions),
		 atomic_load(&d->bind_conflicts), atomic_load(&d->bind_errors), atomic_load(&d->gc_writes),
		 wq_len(d->q), d->cache.n);
}

/* /metrics: the counters log_stats prints, for Prometheus. */
void sched_daemon_metrics(void *ud, struct buf *out)
{
	struct sched_daemon *d = ud;
	static const struct {
		const char *name, *help;
		size_t off;
	} counters[] = {
#define C(field, name, help) { "ursa_scheduler_" name, help, offsetof(struct sched_daemon, field) }
		C(scheduled, "pods_scheduled_total", "Pods bound to a node."),
		C(failed, "unschedulable_attempts_total", "Scheduling attempts that found no node."),
		C(decisions, "decisions_total", "Placement decisions made."),
		C(decision_us, "decision_microseconds_total", "Time spent deciding, summed."),
		C(reserve_writes, "reservation_writes_total", "Reservation writes to resource managers."),
		C(reserve_conflicts, "reservation_conflicts_total",
		  "Reservation writes refused because another scheduler changed the node first."),
		C(collisions, "collisions_total", "Decisions made again after a conflict with another scheduler."),
		C(bind_conflicts, "bind_conflicts_total", "Bindings refused by the tenant partition with a conflict."),
		C(bind_errors, "bind_errors_total", "Bindings that failed otherwise."),
		C(gc_writes, "reservation_releases_total", "Writes releasing reserved room that went unused."),
#undef C
	};
	for (size_t i = 0; i < ARRAY_SIZE(counters); i++)
		health_counter(out, counters[i].name, counters[i].help,
			       atomic_load((atomic_llong *)((char *)d + counters[i].off)));
	pthread_mutex_lock(&d->mu);
	size_t nodes = d->cache.n;
	pthread_mutex_unlock(&d->mu);
	health_gauge(out, "ursa_scheduler_nodes", "Nodes in view, over every resource manager.", (long long)nodes);
	health_gauge(out, "ursa_scheduler_queue_length", "Pods waiting for a decision.", (long long)wq_len(d->q));
}

static bool active(struct sched_daemon *d)
{
	return !d->le || leader_is_leader(d->le);
}

/* Health-checks every resource manager (outside the lock: a check may take a while). One that
 * fails for longer than --rm-down-seconds has its nodes taken out of scheduling until it answers
 * again: with its resource manager gone nobody can taint them, and a zone lost whole would
 * otherwise keep receiving the pods evicted from it. */
static void check_rms(struct sched_daemon *d)
{
	struct rm_entry *v[256];
	size_t n = 0;
	pthread_mutex_lock(&d->mu);
	for (size_t i = 0; i < d->rms.n && n < 256; i++)
		v[n++] = d->rms.v[i].val;
	pthread_mutex_unlock(&d->mu);
	int64_t now = mono_ms();
	for (size_t i = 0; i < n; i++) {
		struct rm_entry *r = v[i];
		bool ok = rest_do(r->client, "GET", "/readyz", NULL, NULL, NULL) == 200;
		pthread_mutex_lock(&d->mu);
		if (ok) {
			r->failing_since = 0;
			if (r->down) {
				r->down = false;
				sched_cache_rm_down(&d->cache, r->name, false);
				atomic_store(&d->requeue, true);
				log_info("resource manager back", "rm=%s", r->name);
			}
		} else {
			if (!r->failing_since)
				r->failing_since = now;
			if (!r->down && now - r->failing_since >= d->o.rm_down_s * 1000) {
				r->down = true;
				sched_cache_rm_down(&d->cache, r->name, true);
				log_warn("resource manager unreachable: its nodes are out of scheduling", "rm=%s", r->name);
			}
		}
		pthread_mutex_unlock(&d->mu);
	}
}

static void *ticker_main(void *arg)
{
	struct sched_daemon *d = arg;
	int64_t next_stats = mono_ms() + d->o.stats_s * 1000;
	long long last_sched = -1;
	int64_t next_rm_check = 0;
	while (!atomic_load(&d->stop)) {
		usleep(100 * 1000);
		if (mono_ms() >= next_rm_check) {
			check_rms(d);
			next_rm_check = mono_ms() + 2000;
		}
		if (atomic_exchange(&d->requeue, false))
			requeue_unschedulable(d);
		int64_t now = mono_ms();
		if (d->o.stats_s && now >= next_stats) {
			long long s = atomic_load(&d->scheduled) + atomic_load(&d->failed);
			if (s != last_sched)
				log_stats(d, "stats");
			last_sched = s;
			next_stats = now + d->o.stats_s * 1000;
		}
	}
	return NULL;
}

/* Its own thread: a round of releases may take a while on a busy resource manager, and must
 * not hold up the ticker's requeues and health checks. */
static void *gc_main(void *arg)
{
	struct sched_daemon *d = arg;
	int64_t next_gc = mono_ms() + d->o.gc_s * 1000;
	while (!atomic_load(&d->stop)) {
		usleep(100 * 1000);
		if (mono_ms() < next_gc)
			continue;
		pthread_mutex_lock(&d->start_mu);
		bool working = d->workers != NULL;
		pthread_mutex_unlock(&d->start_mu);
		if (active(d) && working)
			gc_reservations(d);
		next_gc = mono_ms() + d->o.gc_s * 1000;
	}
	return NULL;
}

static const struct informer_handlers pod_handlers = { on_pod_add, on_pod_update, on_pod_delete, NULL };
static const struct informer_handlers rm_handlers = { on_rm_add, on_rm_update, on_rm_delete, NULL };

/* Undoes the first steps of sched_daemon_start (queue, partition client) when a later one
 * fails. */
static struct sched_daemon *start_failed(struct sched_daemon *d)
{
	rest_free(d->tp);
	wq_free(d->q);
	pthread_mutex_destroy(&d->mu);
	free(d->identity);
	rest_creds_free(d->creds);
	free(d);
	return NULL;
}

struct sched_daemon *sched_daemon_start(const struct sched_options *o, struct health_server *health, char **ret_err)
{
	struct sched_daemon *d = xcalloc(1, sizeof(*d));
	d->o = *o;
	if (!(d->creds = rest_creds_from_kubeconfig(o->kubeconfig, ret_err))) {
		free(d);
		return NULL;
	}
	char host[256] = "";
	gethostname(host, sizeof(host) - 1);
	d->identity = o->identity ? xstrdup(o->identity) : xasprintf("%s_%ld", host, (long)getpid());
	d->q = wq_new();
	pthread_mutex_init(&d->mu, NULL);
	d->health = health;
	health_set_leader(d->health, !o->leader_elect);
	d->tp = rest_new_with_creds(d->creds, rest_creds_server(d->creds), "ursa-scheduler");
	d->tp_async = d->tp ? rest_async_start(d->tp, (unsigned)o->workers) : NULL;
	if (!d->tp_async) {
		*ret_err = xstrdup("cannot start the partition client");
		return start_failed(d);
	}
	pthread_cond_init(&d->res_cond, NULL);
	pthread_mutex_init(&d->start_mu, NULL);
	pthread_mutex_init(&d->bind_mu, NULL);
	pthread_cond_init(&d->bind_cond, NULL);
	sched_cache_init(&d->cache, o->partition);
	d->cache.reserved_bonus = o->chunk > 1 ? RESERVED_BONUS : 0;
	d->cache.pct = o->pct;
	d->cache.max_score_nodes = o->max_nodes;
	strmap_init(&d->unsched);
	region_peers_init(&d->rms, &rm_follow, d, MAX_RMS);
	d->rm_inf = informer_start(d->tp, RM_REGISTRY, NULL, &rm_handlers, d);
	d->pods = informer_start(d->tp, "/api/v1/tenants/all/pods", NULL, &pod_handlers, d);
	pthread_create(&d->ticker, NULL, ticker_main, d);
	pthread_create(&d->gc, NULL, gc_main, d);
	if (o->leader_elect) {
		struct leader_config lc = { .lease_path = LEASE_PATH, .identity = d->identity,
					    .lease_duration_s = (int)o->lease_s, .renew_deadline_s = (int)o->renew_s,
					    .retry_period_s = (int)o->retry_s, .on_started = on_started,
					    .on_stopped = on_stopped, .ud = d };
		d->le = leader_start(d->tp, &lc);
	} else {
		start_workers(d);
	}
	log_info("started", "identity=\"%s\" partition=\"%s\" server=\"%s\" leader_elect=%s", d->identity,
		 o->partition, rest_creds_server(d->creds), o->leader_elect ? "true" : "false");
	return d;
}

bool sched_daemon_lost(struct sched_daemon *d)
{
	return atomic_load(&d->lost);
}

static void rm_free(struct rm_entry *r)
{
	informer_stop(r->inf);
	rest_free(r->client);
	free(r->name);
	free(r);
}

void sched_daemon_stop(struct sched_daemon *d)
{
	atomic_store(&d->stop, true);
	wq_shutdown(d->q);
	for (size_t i = 0; i < d->nworkers; i++)
		pthread_join(d->workers[i], NULL);
	rest_async_stop(d->tp_async); /* bindings in flight end (their callbacks use the cache) */
	if (d->le)
		leader_stop(d->le);
	pthread_join(d->ticker, NULL);
	pthread_join(d->gc, NULL);
	/* the skeleton stopped the health server, whose scrapes read the queue and the cache */
	informer_stop(d->pods);
	informer_stop(d->rm_inf);
	log_stats(d, "stopped");
	region_peers_release(&d->rms);
	size_t nclosed;
	void **closed = region_peers_take_closed(&d->rms, &nclosed);
	for (size_t i = 0; i < nclosed; i++)
		rm_free(closed[i]);
	free(closed);
	free(d->opened); /* empty: every change settled before the registry informer stopped */
	for (size_t i = 0; i < d->nretired; i++)
		rm_free(d->retired[i]);
	free(d->retired);
	strmap_release(&d->unsched, NULL);
	sched_cache_release(&d->cache);
	wq_free(d->q);
	rest_free(d->tp);
	rest_creds_free(d->creds);
	pthread_mutex_destroy(&d->mu);
	pthread_cond_destroy(&d->res_cond);
	pthread_mutex_destroy(&d->start_mu);
	pthread_mutex_destroy(&d->bind_mu);
	pthread_cond_destroy(&d->bind_cond);
	free(d->workers);
	free(d->identity);
	free(d);
}
