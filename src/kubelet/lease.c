/* Node leases and the heartbeat workers. Every node renews its Lease every lease_s/4 and posts
 * its status on change or every status_report_s. A small pool of threads spreads the nodes
 * evenly over the renew period: node i of n is due at offset i * period / n, and belongs to
 * worker i % nworkers, which alone touches its heartbeat fields. */
#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <time.h>
#include "kubelet.h"
#include "ursa/errors.h"
#include "ursa/log.h"
#include "ursa/timeutil.h"
#include "ursa/xalloc.h"

/* A worker waits for each renewal it sends, and an API server may hold a renewal tens of
 * milliseconds to share an etcd txn with others (--etcd-heartbeat-linger-ms): a hollow
 * kubelet's thousands of nodes need enough workers to keep their pace through that (100
 * nodes renewing every 10 s are 10 renewals/s, a quarter of a worker at 25 ms each). */
#define KL_NODES_PER_HB_WORKER 100
#define KL_MAX_HB_WORKERS 64

struct kl_heartbeat {
	struct kubelet *k;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool stopping;
	size_t nworkers;
	struct hb_worker {
		struct kl_heartbeat *hb;
		size_t idx;
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

int kl_lease_renew(struct kubelet *k, size_t i)
{
	const char *name = k->nodes[i].name;
	char *path = xasprintf("%s/%s", KL_LEASE_NS_PATH, name);
	json_t *patch = json_pack("{s:o}", "spec", lease_spec(k, i));
	int code = rest_do(k->rm, "PATCH", path, patch, "application/merge-patch+json", NULL);
	json_decref(patch);
	free(path);
	if (code == 404) {
		json_t *lease = json_pack("{s:s, s:s, s:{s:s, s:s}, s:o}", "apiVersion", "coordination.k8s.io/v1", "kind",
					  "Lease", "metadata", "name", name, "namespace", "kube-node-lease", "spec",
					  lease_spec(k, i));
		code = rest_do(k->rm, "POST", KL_LEASE_NS_PATH, lease, NULL, NULL);
		json_decref(lease);
	}
	if (code < 0)
		return code;
	return code >= 200 && code < 300 ? 0 : (code == 409 ? E_CONFLICT : E_INTERNAL);
}

/* Sleeps until mono time due_ms; false if the heartbeat is stopping. */
static bool sleep_until(struct kl_heartbeat *hb, int64_t due_ms)
{
	pthread_mutex_lock(&hb->mu);
	while (!hb->stopping) {
		int64_t now = mono_ms();
		if (now >= due_ms)
			break;
		struct timespec ts;
		mono_deadline(&ts, due_ms - now);
		pthread_cond_timedwait(&hb->cv, &hb->mu, &ts);
	}
	bool go = !hb->stopping;
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

/* One node's turn. Returns 0 or the first error. */
static int beat(struct kubelet *k, size_t i)
{
	struct kl_node *n = &k->nodes[i];
	int rc;
	if (!k->hollow)
		sample_pressure(k, n);
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

static void *hb_main(void *arg)
{
	struct hb_worker *w = arg;
	struct kl_heartbeat *hb = w->hb;
	struct kubelet *k = hb->k;
	int64_t period = k->opt.lease_s * 1000 / 4, t0 = mono_ms();
	for (int64_t round = 0;; round++) {
		size_t fails = 0, tried = 0;
		int last_err = 0;
		for (size_t i = w->idx; i < k->nnodes; i += hb->nworkers) {
			int64_t due = t0 + round * period + (int64_t)((double)i * (double)period / (double)k->nnodes);
			if (!sleep_until(hb, due))
				return NULL;
			tried++;
			int rc = beat(k, i);
			if (rc) {
				fails++;
				last_err = rc;
			}
		}
		if (fails)
			log_warn("heartbeat failed", "worker=%zu failed=%zu of=%zu err=%s", w->idx, fails, tried,
				 err_reason(last_err));
		/* fell far behind (RM slow or down): skip the missed rounds instead of bursting */
		int64_t now = mono_ms();
		if (now > t0 + (round + 2) * period)
			round = (now - t0) / period - 1;
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
	return hb;
}

void kl_heartbeat_stop(struct kl_heartbeat *hb)
{
	if (!hb)
		return;
	pthread_mutex_lock(&hb->mu);
	hb->stopping = true;
	pthread_cond_broadcast(&hb->cv);
	pthread_mutex_unlock(&hb->mu);
	for (size_t w = 0; w < hb->nworkers; w++)
		pthread_join(hb->workers[w].thread, NULL);
	pthread_cond_destroy(&hb->cv);
	pthread_mutex_destroy(&hb->mu);
	free(hb->workers);
	free(hb);
}
