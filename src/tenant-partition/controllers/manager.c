/* Wiring: informers over /tenants/all collections feed the controllers' work queues; a pool
 * of worker threads per controller drains them. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include "tpc.h"
#include "ursa/errors.h"
#include "ursa/jsonutil.h"
#include "ursa/log.h"
#include "ursa/xalloc.h"

static const char *const ctl_names[CTL__N] = { "tenant", "namespace", "replicaset", "deployment", "garbagecollector",
					       "rmloss" };
static int (*const ctl_sync[CTL__N])(struct tpc *, const char *) = {
	tpc_sync_tenant, tpc_sync_namespace, tpc_sync_replicaset, tpc_sync_deployment, tpc_sync_gc, tpc_sync_rmloss,
};

struct worker {
	struct tpc *m;
	enum tpc_ctl ctl;
	pthread_t th;
};
static struct worker *workers;
static size_t nworkers;

int tpc_parse_controllers(struct tpc *m, const char *list)
{
	bool all = !list || !*list || strcmp(list, "*") == 0;
	for (int i = 0; i < CTL__N; i++)
		m->enabled[i] = all;
	if (all)
		return 0;
	const char *p = list;
	while (*p) {
		const char *e = strchr(p, ',');
		size_t n = e ? (size_t)(e - p) : strlen(p);
		bool found = false;
		for (int i = 0; i < CTL__N; i++)
			if (strlen(ctl_names[i]) == n && strncmp(ctl_names[i], p, n) == 0)
				m->enabled[i] = found = true;
		if (n == 1 && *p == '*')
			for (int i = 0; i < CTL__N; i++)
				m->enabled[i] = found = true;
		if (!found)
			return E_INVALID;
		p += n + (e ? 1 : 0);
	}
	return 0;
}

static void *run_worker(void *arg)
{
	struct worker *w = arg;
	struct workqueue *q = w->m->wq[w->ctl];
	char *key;
	while ((key = wq_get(q)) != NULL) {
		int rc = ctl_sync[w->ctl](w->m, key);
		if (rc < 0) {
			log_debug("sync failed", "controller=%s key=\"%s\" err=%s", ctl_names[w->ctl], key, err_reason(rc));
			wq_add_rate_limited(q, key);
		} else {
			wq_forget(q, key);
		}
		wq_done(q, key);
		free(key);
	}
	return NULL;
}

static void enqueue(struct tpc *m, enum tpc_ctl ctl, const char *key)
{
	if (m->enabled[ctl] && key)
		wq_add(m->wq[ctl], key);
}

static void enqueue_obj(struct tpc *m, enum tpc_ctl ctl, const json_t *obj)
{
	char *k = object_key(obj);
	enqueue(m, ctl, k);
	free(k);
}

/* The key of obj's controller if it is of kind, else NULL (new string). */
static char *owner_key(const json_t *obj, const char *kind)
{
	const json_t *ref = tpc_controller_ref(obj);
	const char *k = json_str(ref, "kind"), *n = json_str(ref, "name");
	const char *t = json_path_str(obj, "metadata.tenant"), *ns = json_path_str(obj, "metadata.namespace");
	if (!k || !n || !t || !ns || strcmp(k, kind) != 0)
		return NULL;
	return xasprintf("%s/%s/%s", t, ns, n);
}

static void on_pod(struct tpc *m, const json_t *pod)
{
	char *k = owner_key(pod, "ReplicaSet");
	enqueue(m, CTL_RS, k);
	free(k);
	if (m->enabled[CTL_GC]) {
		tpc_gc_enqueue_owners(m, pod);
		if (json_path(pod, "metadata.deletionTimestamp") && json_path(pod, "metadata.finalizers"))
			tpc_gc_enqueue_self(m, pod, "Pod");
	}
}

static void on_rs(struct tpc *m, const json_t *rs)
{
	enqueue_obj(m, CTL_RS, rs);
	char *k = owner_key(rs, "Deployment");
	enqueue(m, CTL_DEPLOY, k);
	free(k);
	if (m->enabled[CTL_GC]) {
		tpc_gc_enqueue_owners(m, rs);
		if (json_path(rs, "metadata.deletionTimestamp"))
			tpc_gc_enqueue_self(m, rs, "ReplicaSet");
	}
}

/* Namespaces are keyed "tenant//name" by the informer; controllers use "tenant/name/". */
static void on_ns(struct tpc *m, const json_t *ns)
{
	const char *t = json_path_str(ns, "metadata.tenant"), *n = json_path_str(ns, "metadata.name");
	if (!t || !n)
		return;
	char *k = xasprintf("%s/%s/", t, n);
	enqueue(m, CTL_NAMESPACE, k);
	free(k);
	k = xasprintf("%s//", t);
	enqueue(m, CTL_TENANT, k);
	free(k);
}

static void on_tenant(struct tpc *m, const json_t *te)
{
	const char *n = json_path_str(te, "metadata.name");
	if (!n)
		return;
	char *k = xasprintf("%s//", n);
	enqueue(m, CTL_TENANT, k);
	free(k);
}

#define HANDLERS(kind, extra)                                                                            \
	static void kind##_add(void *ud, const json_t *o) { on_##kind(ud, o); }                         \
	static void kind##_upd(void *ud, const json_t *a, const json_t *b) { (void)a; on_##kind(ud, b); } \
	static void kind##_del(void *ud, const json_t *o) { on_##kind(ud, o); extra; }

HANDLERS(pod, (void)0)
HANDLERS(rs, if (((struct tpc *)ud)->enabled[CTL_GC]) tpc_gc_enqueue_self(ud, o, "ReplicaSet"))
HANDLERS(ns, (void)0)
HANDLERS(tenant, (void)0)

static void deploy_add(void *ud, const json_t *o)
{
	enqueue_obj(ud, CTL_DEPLOY, o);
	if (((struct tpc *)ud)->enabled[CTL_GC] && json_path(o, "metadata.deletionTimestamp"))
		tpc_gc_enqueue_self(ud, o, "Deployment");
}
static void deploy_upd(void *ud, const json_t *a, const json_t *b)
{
	(void)a;
	deploy_add(ud, b);
}
static void deploy_del(void *ud, const json_t *o)
{
	if (((struct tpc *)ud)->enabled[CTL_GC])
		tpc_gc_enqueue_self(ud, o, "Deployment");
}

static const struct {
	const char *path;
	struct informer_handlers h;
} inf_table[INF__N] = {
	[INF_TENANTS] = { "/api/v1/tenants", { tenant_add, tenant_upd, tenant_del, NULL } },
	[INF_NAMESPACES] = { "/api/v1/tenants/all/namespaces", { ns_add, ns_upd, ns_del, NULL } },
	[INF_PODS] = { "/api/v1/tenants/all/pods", { pod_add, pod_upd, pod_del, NULL } },
	[INF_RS] = { "/apis/apps/v1/tenants/all/replicasets", { rs_add, rs_upd, rs_del, NULL } },
	[INF_DEPLOY] = { "/apis/apps/v1/tenants/all/deployments", { deploy_add, deploy_upd, deploy_del, NULL } },
};

void tpc_start(struct tpc *m)
{
	if (m->workers < 1)
		m->workers = 1;
	for (int i = 0; i < CTL__N; i++)
		m->wq[i] = wq_new();
	for (int i = 0; i < INF__N; i++)
		m->inf[i] = informer_start(m->rest, inf_table[i].path, NULL, &inf_table[i].h, m);
	if (m->enabled[CTL_RMLOSS])
		tpc_rmloss_start(m);
	workers = xcalloc((size_t)CTL__N * (size_t)m->workers, sizeof(*workers));
	for (int c = 0; c < CTL__N; c++) {
		if (!m->enabled[c])
			continue;
		for (int i = 0; i < m->workers; i++) {
			struct worker *w = &workers[nworkers++];
			w->m = m;
			w->ctl = (enum tpc_ctl)c;
			pthread_create(&w->th, NULL, run_worker, w);
		}
	}
	log_info("controllers started", "workers=%d", m->workers);
}

void tpc_stop(struct tpc *m)
{
	for (int i = 0; i < INF__N; i++)
		if (m->inf[i])
			informer_stop(m->inf[i]);
	for (int i = 0; i < CTL__N; i++)
		wq_shutdown(m->wq[i]);
	for (size_t i = 0; i < nworkers; i++)
		pthread_join(workers[i].th, NULL);
	tpc_rmloss_stop(m);
	for (int i = 0; i < CTL__N; i++)
		wq_free(m->wq[i]);
	free(workers);
	workers = NULL;
	nworkers = 0;
}
