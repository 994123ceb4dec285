/* The CRI runtime's pool (runtime_cri_impl.h): each pod's operations (start, what sync finds due,
 * a lost sandbox) on --pod-start-parallelism threads, one operation per pod at a time, and stops
 * on threads of their own, so that neither a slow start nor a grace period holds up other pods. */
#define _GNU_SOURCE
#include "runtime_cri_impl.h"
#include "images.h"
#include "probes.h"
#include "runtime_common.h"
#include "ursa/buf.h"
#include "ursa/errors.h"
#include "ursa/log.h"
#include "ursa/timeutil.h"
#include "ursa/xalloc.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


void *crirt_stop_one(void *arg)
{
	struct stopper *s = arg;
	Runtime__V1__StopContainerRequest req = RUNTIME__V1__STOP_CONTAINER_REQUEST__INIT;
	struct cri_err err;
	if (s->pre_stop)
		s->grace_s = crirt_pre_stop(s->rt, s->p, s->i, s->id, s->pre_stop, s->grace_s);
	req.container_id = (char *)s->id;
	req.timeout = s->grace_s;
	int rc = cri_call(s->rt->cri, "/runtime.v1.RuntimeService/StopContainer", &req.base,
			  &runtime__v1__stop_container_response__descriptor, (s->grace_s + 30) * 1000, NULL, &err);
	if (rc != 0 && rc != E_NOT_FOUND)
		log_warn("cri: cannot stop container", "id=%s err=\"%s\"", s->id, err.message);
	return NULL;
}

/* Stops p's containers (SIGTERM, SIGKILL after grace_s) and its sandbox; on a stop thread, or on the
 * pod worker for a pod not busy. */
void crirt_stop_now(struct runtime *rt, struct cpod *p, long long grace_s)
{
	pthread_mutex_lock(&rt->lock);
	p->stopped = true;
	pthread_mutex_unlock(&rt->lock);
	struct stopper *st = xcalloc(p->nc ? p->nc : 1, sizeof(*st));
	size_t n = 0;
	for (size_t i = 0; i < p->nc; i++) {
		struct cri_cont *c = &p->c[i];
		if (!c->id || c->phase != CP_RUNNING)
			continue;
		POD_EVENT(p, c->name, false, "Killing", "Stopping container %s", c->name);
		st[n] = (struct stopper){ .rt = rt, .id = c->id, .grace_s = grace_s, .p = p, .i = i,
					  .pre_stop = p->has_spec && i < p->spec.ncontainers
							      ? p->spec.containers[i].hooks[RT_HOOK_PRE_STOP] : NULL };
		if (pthread_create(&st[n].thread, NULL, crirt_stop_one, &st[n]) != 0) {
			crirt_stop_one(&st[n]);
			continue;
		}
		n++;
	}
	for (size_t i = 0; i < n; i++)
		pthread_join(st[i].thread, NULL);
	free(st);
	for (size_t i = 0; i < p->nc; i++) {
		struct cri_cont *c = &p->c[i];
		if (c->id && c->phase == CP_RUNNING)
			crirt_poll_container(rt, p, i);
		if (c->phase != CP_RUNNING && c->phase != CP_TERMINATED) {
			c->phase = c->has_term ? CP_TERMINATED : CP_WAITING;
			rt->changed = true;
		}
	}
	if (p->sandbox_id)
		crirt_stop_sandbox(rt, p->sandbox_id);
	rt->changed = true;
}

/* ---- the pool: pods' operations off the pod worker ---- */

bool crirt_is_busy(struct runtime *rt, struct cpod *p)
{
	pthread_mutex_lock(&rt->lock);
	bool busy = p->busy;
	pthread_mutex_unlock(&rt->lock);
	return busy;
}

/* Waits until p is not busy (the pod worker, before it changes p itself). */
void crirt_wait_idle(struct runtime *rt, struct cpod *p)
{
	pthread_mutex_lock(&rt->lock);
	while (p->busy)
		pthread_cond_wait(&rt->idle, &rt->lock);
	pthread_mutex_unlock(&rt->lock);
}

/* Copies p's status and IP for status()/pod_ip() while p is busy; by the thread that owns p. */
static void crirt_show(struct runtime *rt, struct cpod *p)
{
	struct rt_container_status *s = xcalloc(p->nc ? p->nc : 1, sizeof(*s));
	for (size_t i = 0; i < p->nc; i++)
		cri_cont_status(&p->c[i], p->has_spec ? &p->spec : NULL, rt->runtime_name, &s[i]);
	pthread_mutex_lock(&rt->lock);
	free(p->shown);
	p->shown = s;
	p->nshown = p->nc;
	snprintf(p->shown_ip, sizeof(p->shown_ip), "%s", p->ip);
	pthread_mutex_unlock(&rt->lock);
}

static void crirt_spawn_stop(struct runtime *rt, struct cpod *p);

/* The end of p's operation op (on its thread): a stop asked for meanwhile follows on a stop
 * thread (p stays busy), else p is the pod worker's again; the pod worker hears of the change. */
void crirt_op_done(struct runtime *rt, struct cpod *p, enum pod_op op)
{
	char *uid = xstrdup(p->uid); /* p may be gone once it is not busy */
	crirt_show(rt, p);
	bool stop_next = false;
	pthread_mutex_lock(&rt->lock);
	if (op == OP_STOP) {
		p->stop_done = true;
		p->stop_wanted = false;
	}
	if (p->stop_wanted && !rt->quit) {
		p->stop_wanted = false;
		p->op = OP_STOP;
		stop_next = true;
	} else {
		p->busy = false;
		pthread_cond_broadcast(&rt->idle);
	}
	pthread_mutex_unlock(&rt->lock);
	rt->changed = true;
	if (stop_next)
		crirt_spawn_stop(rt, p);
	rt_pod_changed(uid);
	free(uid);
}

static void crirt_op_start(struct runtime *rt, struct cpod *p)
{
	if (p->sandbox_id && !p->sandbox_ready) {
		/* its sandbox died (node reboot, pause killed): start over in a new one */
		for (size_t i = 0; i < p->nc; i++) {
			struct cri_cont *c = &p->c[i];
			if (c->id)
				crirt_remove_container(rt, c->id);
			if (c->prev_id)
				crirt_remove_container(rt, c->prev_id);
			pthread_mutex_lock(&rt->lock);
			free(c->id);
			free(c->prev_id);
			c->id = c->prev_id = NULL;
			pthread_mutex_unlock(&rt->lock);
		}
		crirt_stop_sandbox(rt, p->sandbox_id);
		crirt_remove_sandbox(rt, p->sandbox_id);
		free(p->sandbox_id);
		p->sandbox_id = NULL;
		p->sandbox_attempt++;
	}
	crirt_advance(rt, p, true);
}

void *crirt_pool_main(void *arg)
{
	struct runtime *rt = arg;
	pthread_mutex_lock(&rt->lock);
	for (;;) {
		while (!rt->quit && !rt->qhead)
			pthread_cond_wait(&rt->work, &rt->lock);
		if (rt->quit)
			break;
		struct cpod *p = rt->qhead;
		rt->qhead = p->qnext;
		if (!rt->qhead)
			rt->qtail = NULL;
		enum pod_op op = p->op;
		pthread_mutex_unlock(&rt->lock);
		if (op == OP_START) {
			crirt_op_start(rt, p);
		} else if (op == OP_LOST) {
			crirt_sandbox_lost(rt, p);
			crirt_advance(rt, p, false);
		} else {
			crirt_advance(rt, p, false);
		}
		crirt_op_done(rt, p, op);
		pthread_mutex_lock(&rt->lock);
	}
	pthread_mutex_unlock(&rt->lock);
	return NULL;
}

struct stop_arg {
	struct runtime *rt;
	struct cpod *p;
};

static void *crirt_stop_main(void *arg)
{
	struct stop_arg *a = arg;
	struct runtime *rt = a->rt;
	struct cpod *p = a->p;
	free(a);
	pthread_mutex_lock(&rt->lock);
	long long grace_s = p->stop_grace_s;
	pthread_mutex_unlock(&rt->lock);
	crirt_stop_now(rt, p, grace_s);
	crirt_op_done(rt, p, OP_STOP);
	pthread_mutex_lock(&rt->lock);
	rt->nstoppers--;
	pthread_cond_broadcast(&rt->idle);
	pthread_mutex_unlock(&rt->lock);
	return NULL;
}

/* A stop of busy p (op OP_STOP) on a thread of its own: stops wait out grace periods, which must
 * hold up neither the pool nor the pod worker. */
static void crirt_spawn_stop(struct runtime *rt, struct cpod *p)
{
	struct stop_arg *a = xmalloc(sizeof(*a));
	*a = (struct stop_arg){ rt, p };
	pthread_attr_t attr;
	pthread_t t;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_mutex_lock(&rt->lock);
	rt->nstoppers++;
	pthread_mutex_unlock(&rt->lock);
	if (pthread_create(&t, &attr, crirt_stop_main, a) != 0) {
		log_warn("cri: no thread for a stop, stopping inline", "pod=\"%s/%s\"", p->ns, p->name);
		crirt_stop_main(a);
	}
	pthread_attr_destroy(&attr);
}

/* Hands p (not busy, on the pod worker) to the pool, or to a stop thread for OP_STOP. */
void crirt_dispatch(struct runtime *rt, struct cpod *p, enum pod_op op)
{
	crirt_show(rt, p);
	pthread_mutex_lock(&rt->lock);
	p->busy = true;
	p->op = op;
	if (op != OP_STOP) {
		p->qnext = NULL;
		if (rt->qtail)
			rt->qtail->qnext = p;
		else
			rt->qhead = p;
		rt->qtail = p;
		pthread_cond_signal(&rt->work);
	}
	pthread_mutex_unlock(&rt->lock);
	if (op == OP_STOP)
		crirt_spawn_stop(rt, p);
}

