/* Fair shares: the partition serves its tenants by turns, not first come first served
 * (docs/architecture.md, "Fair shares"). Over ursa/fairq.h, two priority levels:
 *   exempt    the region's own components (system:masters of tenant system: controller
 *             managers, schedulers, gateways' own calls, operators) and nodes (system:nodes):
 *             never queued, bounded by the workers as before;
 *   workload  everyone else, one flow per tenant: tenant_seats seats, at most seats_per_tenant
 *             of them for one tenant, the rest of a tenant's requests wait in a queue of its hand.
 * A LIST takes more seats the more objects it reads (1 + the tenant's objects of the kind / 500,
 * up to the tenant's cap): a tenant's heavy lists use up its own share first. A request that waits is parked
 * without its worker (http_deferred_rerun brings it back when its seats are given); one whose
 * queue is full, or that waited queue_wait_s, gets 429 TooManyRequests with Retry-After. Watches
 * hold a seat while they start and then count against the tenant's watch limit. A wide request
 * that does not have the partition to itself (fairq's shared) sends its reply through a bounded
 * kernel buffer (bulk_send_buffer), so its megabytes leave in steps the other tenants' replies
 * come between (docs/architecture.md, "Fair shares"). */
#include "internal.h"
#include "ursa/fairq.h"
#include "ursa/timeutil.h"
#include "ursa/xalloc.h"
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { LEVEL_EXEMPT, LEVEL_WORKLOAD };

#define LIST_OBJECTS_PER_SEAT 500

struct fairshare {
	pthread_mutex_t lock;
	struct fairq *q;
	int64_t max_wait_us;
	unsigned max_watches;
	int bulk_send_buffer;      /* bytes; 0: replies are never bounded */
	unsigned long long paced;  /* replies sent through a bounded buffer */
	bool stopped;     /* the server stops: nothing queues any more */
	pthread_t expirer;  /* refuses requests that waited too long, 4 times a second */
	pthread_cond_t wake;
};

/* A request's place in the fair queue, kept as its http_request_data across a rerun. */
struct admission {
	struct fairq_item it;
	struct fairshare *f;
	struct http_deferred *d; /* while parked */
	bool admitted;           /* it holds seats: fairshare_done gives them back */
};

static void rerun_all(struct fairq_item *it);

/* Its own thread: the watch ticker waits on etcd's health checks, which a stuck etcd makes long,
 * and requests must time out of their queues then too. */
static void *expirer_main(void *arg)
{
	struct fairshare *f = arg;
	pthread_mutex_lock(&f->lock);
	while (!f->stopped) {
		struct timespec ts;
		mono_deadline(&ts, 250);
		pthread_cond_timedwait(&f->wake, &f->lock, &ts);
		if (f->stopped)
			break;
		struct fairq_item *out = fairq_expire(f->q, mono_us(), f->max_wait_us);
		pthread_mutex_unlock(&f->lock);
		rerun_all(out);
		pthread_mutex_lock(&f->lock);
	}
	pthread_mutex_unlock(&f->lock);
	return NULL;
}

void fairshare_start(struct apiserver *s)
{
	const struct apiserver_options *o = &s->o;
	if (!o->tenant_seats)
		return;
	struct fairq_level_config lv[] = {
		[LEVEL_EXEMPT] = { .name = "exempt", .seats = 0, .queues = 1, .hand = 1 },
		[LEVEL_WORKLOAD] = { .name = "workload", .seats = o->tenant_seats,
				     .flow_seats = o->seats_per_tenant ? o->seats_per_tenant : o->tenant_seats - o->tenant_seats / 4,
				     .queues = 64, .hand = 6, .queue_length = o->queue_length ? o->queue_length : 50 },
	};
	struct fairshare *f = xcalloc(1, sizeof(*f));
	pthread_mutex_init(&f->lock, NULL);
	f->q = fairq_new(lv, 2, 2000);
	f->max_wait_us = (int64_t)(o->queue_wait_s ? o->queue_wait_s : 15) * 1000000;
	f->max_watches = o->max_watches_per_tenant;
	f->bulk_send_buffer = (int)o->bulk_send_buffer;
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&f->wake, &ca);
	pthread_condattr_destroy(&ca);
	pthread_create(&f->expirer, NULL, expirer_main, f);
	s->fair = f;
}

/* Hands each request of the list to a worker again: with its seats, or expired (refused). */
static void rerun_all(struct fairq_item *it)
{
	while (it) {
		struct fairq_item *next = it->next;
		struct admission *a = (struct admission *)it; /* it is the first member */
		struct http_deferred *d = a->d;
		a->d = NULL;
		a->admitted = !it->expired;
		http_deferred_rerun(d);
		it = next;
	}
}

void fairshare_stop(struct apiserver *s)
{
	struct fairshare *f = s->fair;
	if (!f)
		return;
	pthread_mutex_lock(&f->lock);
	bool was = f->stopped;
	f->stopped = true;
	pthread_cond_signal(&f->wake);
	struct fairq_item *out = fairq_flush(f->q);
	pthread_mutex_unlock(&f->lock);
	if (!was)
		pthread_join(f->expirer, NULL);
	rerun_all(out);
}

void fairshare_free(struct apiserver *s)
{
	struct fairshare *f = s->fair;
	if (!f)
		return;
	fairshare_stop(s);
	fairq_free(f->q);
	pthread_cond_destroy(&f->wake);
	pthread_mutex_destroy(&f->lock);
	free(f);
	s->fair = NULL;
}

static bool exempt(const struct identity *id)
{
	return identity_is_system_admin(id) || identity_in_group(id, "system:nodes");
}

/* A LIST's seats by what it reads: the tenant's objects of the kind (another tenant's thousands
 * do not make a small tenant's list wide), every object for a list across tenants. */
static unsigned width_of(const struct req *q)
{
	if (strcmp(q->verb, "list") != 0 || !q->res || !q->res->cache)
		return 1;
	/* the tenant scope_request will give it (admission comes first) */
	const char *t = q->path.tenant ? q->path.tenant : q->id.tenant;
	bool one = q->res->r->scope != SCOPE_CLUSTER && t && *t && strcmp(t, TENANT_ALL) != 0;
	size_t n = one ? wcache_tenant_size(q->res->cache, t) : wcache_size(q->res->cache);
	return 1 + (unsigned)(n / LIST_OBJECTS_PER_SEAT);
}

/* Admitted with its seats: a wide request that shares the partition is paced. */
static void admitted(struct req *q, struct admission *a)
{
	struct fairshare *f = a->f;
	q->fair_seat = true;
	if (a->it.width > 1 && a->it.shared && f->bulk_send_buffer > 0) {
		http_request_limit_send_buffer(q->http, f->bulk_send_buffer);
		pthread_mutex_lock(&f->lock);
		f->paced++;
		pthread_mutex_unlock(&f->lock);
	}
}

int fairshare_admit(struct req *q)
{
	struct fairshare *f = q->s->fair;
	if (!f)
		return 0;
	struct admission *a = http_request_data(q->http);
	if (a) { /* back from the queue */
		if (a->admitted) {
			admitted(q, a);
			return 0;
		}
		http_request_set_data(q->http, NULL);
		free(a);
		reply_status(q, E_TOO_MANY, "too many requests of tenant %s waited for the partition (%s); please retry",
			     q->id.tenant, atomic_load(&q->s->stopping) ? "the server is stopping" : "timed out in its queue");
		return 1;
	}
	if (exempt(&q->id))
		return 0;
	a = xcalloc(1, sizeof(*a));
	a->f = f;
	http_request_set_data(q->http, a);
	pthread_mutex_lock(&f->lock);
	if (f->stopped) {
		pthread_mutex_unlock(&f->lock);
		http_request_set_data(q->http, NULL);
		free(a);
		return 0;
	}
	enum fairq_verdict v = fairq_arrive(f->q, LEVEL_WORKLOAD, q->id.tenant, width_of(q), &a->it, mono_us());
	if (v == FAIRQ_QUEUED)
		a->d = http_reply_defer(q->reply); /* before anyone can hand it back */
	else
		a->admitted = v == FAIRQ_RUN;
	pthread_mutex_unlock(&f->lock);
	/* queued: a is the queue's now (rerun_all may already have handed it back) */
	if (v == FAIRQ_REJECTED) {
		http_request_set_data(q->http, NULL);
		free(a);
		reply_status(q, E_TOO_MANY, "too many requests of tenant %s are waiting for this partition; please retry",
			     q->id.tenant);
		return 1;
	}
	if (v != FAIRQ_RUN)
		return 1;
	admitted(q, a);
	return 0;
}

static void finish(void *ud)
{
	struct admission *a = ud;
	struct fairshare *f = a->f;
	pthread_mutex_lock(&f->lock);
	struct fairq_item *next = fairq_finish(f->q, &a->it, mono_us());
	pthread_mutex_unlock(&f->lock);
	free(a);
	rerun_all(next);
}

void fairshare_done(struct req *q)
{
	if (!q->fair_seat)
		return;
	q->fair_seat = false;
	struct admission *a = http_request_data(q->http);
	http_request_set_data(q->http, NULL);
	/* A whole reply's seats are held until it is sent: a large LIST costs its tenant the time
	 * its bytes take to leave, not only the time to make them. Streams (a watch, logs -f, exec)
	 * give them back once they started. */
	if (http_reply_is_plain(q->reply))
		http_request_on_complete(q->http, finish, a);
	else
		finish(a);
}

int fairshare_watch_open(struct req *q, char **ret_counted)
{
	struct fairshare *f = q->s->fair;
	*ret_counted = NULL;
	if (!f || exempt(&q->id))
		return 0;
	pthread_mutex_lock(&f->lock);
	bool ok = fairq_watch_open(f->q, q->id.tenant, f->max_watches);
	pthread_mutex_unlock(&f->lock);
	if (!ok)
		return -1;
	*ret_counted = xstrdup(q->id.tenant);
	return 0;
}

void fairshare_watch_close(struct apiserver *s, const char *tenant)
{
	struct fairshare *f = s->fair;
	if (!f)
		return;
	pthread_mutex_lock(&f->lock);
	fairq_watch_close(f->q, tenant);
	pthread_mutex_unlock(&f->lock);
}

void fairshare_render(struct apiserver *s, struct buf *out)
{
	struct fairshare *f = s->fair;
	if (!f)
		return;
	pthread_mutex_lock(&f->lock);
	fairq_render(f->q, out);
	buf_addf(out, "# HELP ursa_fairq_paced_replies_total Wide replies sent through a bounded send buffer while "
		      "other tenants were served.\n# TYPE ursa_fairq_paced_replies_total counter\n"
		      "ursa_fairq_paced_replies_total %llu\n", f->paced);
	pthread_mutex_unlock(&f->lock);
}
