/* Node leases and the heartbeat workers. Every node renews its Lease every lease_s/4 and posts
 * its status on change or every status_report_s. A small pool of threads spreads the nodes
 * evenly over the renew period: node i of n is first due at offset i * period / n, and belongs
 * to worker i % nworkers, which alone touches its heartbeat fields. Each worker takes its nodes
 * by their due times: renewals of registered nodes first, registrations (a node's first turn,
 * four requests) in the time left, so registering thousands of nodes does not hold up the
 * renewals of those registered first; at least one registration a period goes ahead anyway.
 * Between turns a worker posts again the status of nodes the node watch found stale on the
 * server (nodewatch.c), one at a time and at most at its renewals' pace (period / its nodes
 * apart), so a mass mark by the node lifecycle controller is undone without a burst. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>
#include "kubelet.h"
#include "ursa/errors.h"
#include "ursa/log.h"
#include "ursa/timeutil.h"
#include "ursa/xalloc.h"

/* A worker waits for each renewal it sends, and an API server may hold a renewal tens of
 * milliseconds to share an etcd txn with others (--etcd-heartbeat-linger-ms): a hollow
 * kubelet's thousands of nodes need enough workers to keep their pace through that, and
 * through busy cores (50 nodes renewing every 40 s give each renewal 0.8 s; at 100 a worker
 * fell behind in the region simulation at load 80 on 2 cores, where a renewal took ~0.7 s). */
#define KL_NODES_PER_HB_WORKER 50
#define KL_MAX_HB_WORKERS 128

struct kl_heartbeat {
	struct kubelet *k;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	atomic_bool stopping;
	size_t nworkers;
	struct kl_nodewatch *watch;
	/* the latest a renewal went past its due time since worker 0 last logged it (ms): a
	 * renewal later than the node monitor's grace makes the node Ready=Unknown, so a kubelet
	 * that falls behind (its API server slow, its cores busy) says so before that happens */
	atomic_llong late_max_ms;
	struct hb_worker {
		struct kl_heartbeat *hb;
		size_t idx;
		atomic_size_t stale;      /* nodes of this worker flagged status_stale */
		pthread_t thread;
	} *workers;
};

static json_t *lease_spec(const struct kubelet *k, size_t i)
{
	struct buf t = BUF_INIT;
	rfc3339_micro_add(&t, now_ms() * 1000);
	json_t *spec = json_pack("{s:s, s:I, s:s}", "holderIdentity", k->nodes[i].name, "leaseDurationSeconds",
				 (json_int_t)k->opt.lease_s, "renewTime", buf_cstr(&t));
	buf_release(&t);
	return spec;
}

static int lease_create(struct kubelet *k, size_t i)
{
	json_t *lease = json_pack("{s:s, s:s, s:{s:s, s:s}, s:o}", "apiVersion", "coordination.k8s.io/v1", "kind", "Lease",
				  "metadata", "name", k->nodes[i].name, "namespace", "kube-node-lease", "spec",
				  lease_spec(k, i));
	int code = rest_do(k->rm, "POST", KL_LEASE_NS_PATH, lease, NULL, NULL);
	json_decref(lease);
	return code;
}

static int lease_patch(struct kubelet *k, size_t i)
{
	char *path = xasprintf("%s/%s", KL_LEASE_NS_PATH, k->nodes[i].name);
	json_t *patch = json_pack("{s:o}", "spec", lease_spec(k, i));
	int code = rest_do(k->rm, "PATCH", path, patch, "application/merge-patch+json", NULL);
	json_decref(patch);
	free(path);
	return code;
}

int kl_lease_renew(struct kubelet *k, size_t i)
{
	struct kl_node *n = &k->nodes[i];
	int code;
	/* a node just created has no lease yet: create it first (a request less per registration) */
	if (n->created) {
		code = lease_create(k, i);
		if (code == 409)
			code = lease_patch(k, i);
	} else {
		code = lease_patch(k, i);
		if (code == 404)
			code = lease_create(k, i);
	}
	if (code < 0)
		return code;
	if (code >= 200 && code < 300)
		n->created = false;
	return code >= 200 && code < 300 ? 0 : (code == 409 ? E_CONFLICT : E_INTERNAL);
}

/* Sleeps until mono time due_ms, or until *wake (may be NULL) is non-zero; false if the
 * heartbeat is stopping. */
static bool sleep_until(struct kl_heartbeat *hb, int64_t due_ms, const atomic_size_t *wake)
{
	pthread_mutex_lock(&hb->mu);
	while (!atomic_load(&hb->stopping) && !(wake && atomic_load(wake))) {
		int64_t now = mono_ms();
		if (now >= due_ms)
			break;
		struct timespec ts;
		mono_deadline(&ts, due_ms - now);
		pthread_cond_timedwait(&hb->cv, &hb->mu, &ts);
	}
	bool go = !atomic_load(&hb->stopping);
	pthread_mutex_unlock(&hb->mu);
	return go;
}

/* Real mode: the host's pressure conditions; a change makes the status due at once. */
static void sample_pressure(struct kubelet *k, struct kl_node *n)
{
	uint8_t p = kl_host_pressure(k);
	if (p == n->pressure)
		return;
	int64_t now = now_ms() / 1000;
	for (int b = 0; b < KL_NPRESSURE; b++)
		if ((p ^ n->pressure) & (1u << b))
			n->pressure_since[b] = now;
	log_info("node pressure changed", "node=\"%s\" memory=%d disk=%d", n->name,
		 !!(p & (1u << KL_MEMORY_PRESSURE)), !!(p & (1u << KL_DISK_PRESSURE)));
	n->pressure = p;
	n->status_dirty = true;
}

/* Takes node i's status_stale flag down; true if it was up. */
static bool take_stale(struct kl_heartbeat *hb, size_t i)
{
	if (!atomic_exchange(&hb->k->nodes[i].status_stale, false))
		return false;
	atomic_fetch_sub(&hb->workers[i % hb->nworkers].stale, 1);
	return true;
}

/* One node's turn. Returns 0 or the first error. */
static int beat(struct kl_heartbeat *hb, size_t i)
{
	struct kubelet *k = hb->k;
	struct kl_node *n = &k->nodes[i];
	int rc;
	if (!k->hollow)
		sample_pressure(k, n);
	if (take_stale(hb, i) && n->registered)
		n->status_dirty = true; /* unregistered: registering posts the status */
	if (!n->registered && (rc = kl_node_register(k, i)) != 0)
		return rc;
	rc = kl_lease_renew(k, i);
	if (rc == 0 && !n->lease_ok && !k->hollow)
		log_info("lease renewed", "node=\"%s\"", n->name);
	/* Back after failed renewals or a long gap (cut off, paused): the node lifecycle
	 * controller may have marked the node Ready=Unknown, so post status at once. */
	int64_t gap_ms = k->opt.lease_s * 1000 / 2;
	if (rc == 0 && (!n->lease_ok || (n->renewed_ms && mono_ms() - n->renewed_ms > gap_ms)))
		n->status_dirty = true;
	if (rc == 0)
		n->renewed_ms = mono_ms();
	n->lease_ok = rc == 0;
	int64_t due = n->status_posted_ms + k->opt.status_report_s * 1000;
	if (rc == 0 && (n->status_dirty || mono_ms() >= due)) {
		rc = kl_node_post_status(k, i);
		if (rc == E_NOT_FOUND)
			n->registered = false;  /* someone deleted the node: register again */
	}
	return rc;
}

void kl_heartbeat_flag_stale(struct kl_heartbeat *hb, size_t i)
{
	if (!hb || i >= hb->k->nnodes || atomic_exchange(&hb->k->nodes[i].status_stale, true))
		return;
	atomic_fetch_add(&hb->workers[i % hb->nworkers].stale, 1);
	pthread_mutex_lock(&hb->mu);
	pthread_cond_broadcast(&hb->cv);
	pthread_mutex_unlock(&hb->mu);
}

/* Posts the status of one of the worker's nodes flagged stale, if any: true if it found one. */
static bool repair_one(struct hb_worker *w)
{
	struct kl_heartbeat *hb = w->hb;
	struct kubelet *k = hb->k;
	if (atomic_load(&w->stale) == 0)
		return false;
	for (size_t i = w->idx; i < k->nnodes; i += hb->nworkers) {
		struct kl_node *n = &k->nodes[i];
		if (!take_stale(hb, i) || !n->registered)
			continue; /* not stale, or its registration posts the status */
		if (!k->hollow || i == 0)
			log_info("node status changed by another: posting it again", "node=\"%s\"", n->name);
		n->status_dirty = true;
		int rc = kl_node_post_status(k, i);
		if (rc == E_NOT_FOUND)
			n->registered = false;
		else if (rc != 0)
			log_warn("cannot post node status", "node=\"%s\" err=%s", n->name, err_reason(rc));
		return true; /* on failure status_dirty stays: the next turn posts it */
	}
	return false;
}

long kl_hb_pick(const struct kubelet *k, size_t first, size_t step, int64_t now, int64_t last_register,
		int64_t period, int64_t *ret_wake)
{
	long renew = -1, reg = -1;
	for (size_t i = first; i < k->nnodes; i += step) {
		const struct kl_node *n = &k->nodes[i];
		long *best = n->registered ? &renew : &reg;
		if (*best < 0 || n->next_due_ms < k->nodes[*best].next_due_ms)
			*best = (long)i;
	}
	bool renew_due = renew >= 0 && k->nodes[renew].next_due_ms <= now;
	bool reg_due = reg >= 0 && k->nodes[reg].next_due_ms <= now;
	int64_t wake = INT64_MAX;
	if (renew >= 0)
		wake = k->nodes[renew].next_due_ms;
	if (reg >= 0 && k->nodes[reg].next_due_ms < wake)
		wake = k->nodes[reg].next_due_ms;
	if (ret_wake)
		*ret_wake = wake;
	if (reg_due && (!renew_due || now - last_register >= period))
		return reg;
	return renew_due ? renew : -1;
}

static void note_late(struct kl_heartbeat *hb, int64_t late)
{
	long long cur = atomic_load(&hb->late_max_ms);
	while (late > cur && !atomic_compare_exchange_weak(&hb->late_max_ms, &cur, (long long)late))
		;
}

/* Moves a node's due time on by whole periods to the first one after now: a worker that fell
 * behind (RM slow or down) skips the missed turns and keeps the nodes spread. */
static void advance(struct kl_node *n, int64_t period, int64_t now)
{
	n->next_due_ms += period;
	if (n->next_due_ms <= now)
		n->next_due_ms += ((now - n->next_due_ms) / period + 1) * period;
}

static void *hb_main(void *arg)
{
	struct hb_worker *w = arg;
	struct kl_heartbeat *hb = w->hb;
	struct kubelet *k = hb->k;
	size_t step = hb->nworkers, mine = (k->nnodes - w->idx + step - 1) / step;
	int64_t period = k->opt.lease_s * 1000 / 4, t0 = mono_ms();
	int64_t repair_gap = mine ? period / (int64_t)mine : period;  /* at most one repair per renewal slot */
	int64_t next_repair = 0, last_register = t0, log_due = t0 + period;
	size_t fails = 0, tried = 0;
	int last_err = 0;
	for (size_t i = w->idx; i < k->nnodes; i += step)
		k->nodes[i].next_due_ms = t0 + (int64_t)((double)i * (double)period / (double)k->nnodes);
	for (;;) {
		int64_t now = mono_ms(), wake;
		long pick = kl_hb_pick(k, w->idx, step, now, last_register, period, &wake);
		if (pick >= 0) {
			if (!k->nodes[pick].registered)
				last_register = now;
			else
				note_late(hb, now - k->nodes[pick].next_due_ms);
			tried++;
			int rc = beat(hb, (size_t)pick);
			if (rc) {
				fails++;
				last_err = rc;
			}
			advance(&k->nodes[pick], period, mono_ms());
		} else if (now >= next_repair && repair_one(w)) {
			next_repair = mono_ms() + repair_gap;
		} else {
			if (atomic_load(&w->stale) && next_repair < wake)
				wake = next_repair;
			if (wake == INT64_MAX)
				wake = now + period;
			/* a flag raised while asleep wakes every worker (kl_heartbeat_flag_stale) */
			if (!sleep_until(hb, wake, atomic_load(&w->stale) ? NULL : &w->stale))
				return NULL;
		}
		if (atomic_load(&hb->stopping))
			return NULL;
		if (mono_ms() >= log_due) {
			long long late = w->idx == 0 ? atomic_exchange(&hb->late_max_ms, 0) : 0;
			if (late > period / 2)
				log_warn("heartbeats behind", "late_ms=%lld period_ms=%lld workers=%zu", late,
					 (long long)period, hb->nworkers);
			if (fails)
				log_warn("heartbeat failed", "worker=%zu failed=%zu of=%zu err=%s", w->idx, fails,
					 tried, err_reason(last_err));
			fails = tried = 0;
			log_due = mono_ms() + period;
		}
	}
	return NULL;
}

struct kl_heartbeat *kl_heartbeat_start(struct kubelet *k)
{
	struct kl_heartbeat *hb = xcalloc(1, sizeof(*hb));
	hb->k = k;
	pthread_mutex_init(&hb->mu, NULL);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&hb->cv, &ca);
	pthread_condattr_destroy(&ca);
	hb->nworkers = 1 + k->nnodes / KL_NODES_PER_HB_WORKER;
	if (hb->nworkers > KL_MAX_HB_WORKERS)
		hb->nworkers = KL_MAX_HB_WORKERS;
	hb->workers = xcalloc(hb->nworkers, sizeof(*hb->workers));
	for (size_t w = 0; w < hb->nworkers; w++) {
		hb->workers[w].hb = hb;
		hb->workers[w].idx = w;
		pthread_attr_t attr;
		pthread_attr_init(&attr);
		pthread_attr_setstacksize(&attr, 256 * 1024);
		pthread_create(&hb->workers[w].thread, &attr, hb_main, &hb->workers[w]);
		pthread_attr_destroy(&attr);
	}
	hb->watch = kl_nodewatch_start(k, hb);
	return hb;
}

void kl_heartbeat_stop(struct kl_heartbeat *hb)
{
	if (!hb)
		return;
	kl_nodewatch_stop(hb->watch); /* first: it flags nodes through hb */
	hb->watch = NULL;
	pthread_mutex_lock(&hb->mu);
	atomic_store(&hb->stopping, true);
	pthread_cond_broadcast(&hb->cv);
	pthread_mutex_unlock(&hb->mu);
	for (size_t w = 0; w < hb->nworkers; w++)
		pthread_join(hb->workers[w].thread, NULL);
	pthread_cond_destroy(&hb->cv);
	pthread_mutex_destroy(&hb->mu);
	free(hb->workers);
	free(hb);
}
