/* The tenant partition's controllers as one table for the controller engine (ursa/controller.h):
 * what each watches, the keys an event queues, its sync. */
#include <stdlib.h>
#include <string.h>
#include "tpc.h"
#include "ursa/jsonutil.h"
#include "ursa/pdb.h"
#include "ursa/xalloc.h"

#define TENANTS "/api/v1/tenants"
#define NAMESPACES "/api/v1/tenants/all/namespaces"
#define PODS "/api/v1/tenants/all/pods"
#define REPLICASETS "/apis/apps/v1/tenants/all/replicasets"
#define DEPLOYMENTS "/apis/apps/v1/tenants/all/deployments"
#define JOBS "/apis/batch/v1/tenants/all/jobs"
#define CRONJOBS "/apis/batch/v1/tenants/all/cronjobs"
#define SERVICES "/api/v1/tenants/all/services"
#define NETWORKS "/apis/arktos.futurewei.com/v1/tenants/all/networks"
#define STATEFULSETS "/apis/apps/v1/tenants/all/statefulsets"
#define CONTROLLERREVISIONS "/apis/apps/v1/tenants/all/controllerrevisions"
#define PDBS "/apis/policy/v1/tenants/all/poddisruptionbudgets"
#define CRDS TPC_CRDS_PATH
#define CONFIGMAPS "/api/v1/tenants/all/configmaps"
#define ENDPOINTS "/api/v1/tenants/all/endpoints"
#define SLICES "/apis/discovery.k8s.io/v1/tenants/all/endpointslices"

static const char *const inf_paths[INF__N] = {
	[INF_TENANTS] = TENANTS, [INF_NAMESPACES] = NAMESPACES, [INF_PODS] = PODS, [INF_RS] = REPLICASETS,
	[INF_DEPLOY] = DEPLOYMENTS, [INF_JOBS] = JOBS, [INF_CRONJOBS] = CRONJOBS,
	[INF_SERVICES] = SERVICES, [INF_STS] = STATEFULSETS, [INF_PDBS] = PDBS, [INF_CRDS] = CRDS,
	[INF_CONFIGMAPS] = CONFIGMAPS, [INF_ENDPOINTS] = ENDPOINTS, [INF_SLICES] = SLICES,
};

struct informer *tpc_informer(struct tpc *m, enum tpc_inf i)
{
	return m->ctl ? ctl_manager_informer(m->ctl, inf_paths[i]) : NULL;
}

/* Keys ------------------------------------------------------------------------------------- */

static void add_key(struct workqueue *q, char *k)
{
	if (k)
		wq_add(q, k);
	free(k);
}

/* The key of obj's controller if it is of kind, else NULL (new string). */
static char *owner_key(const json_t *obj, const char *kind)
{
	const json_t *ref = json_controller_ref(obj);
	const char *k = json_str(ref, "kind"), *n = json_str(ref, "name");
	const char *t = json_path_str(obj, "metadata.tenant"), *ns = json_path_str(obj, "metadata.namespace");
	if (!k || !n || !t || !ns || strcmp(k, kind) != 0)
		return NULL;
	return xasprintf("%s/%s/%s", t, ns, n);
}

/* A pod event for the controller c of kind that owns it: lowers c's expectations by what the
 * event shows (a pod added is a creation observed; a pod deleted or being deleted a deletion
 * observed), then queues the owner, so the sync it triggers sees the expectations met. */
static void owned_pod_event(struct tpc *m, struct workqueue *q, const json_t *o, const char *kind, enum tpc_ctl c,
			    enum ctl_event ev)
{
	char *k = owner_key(o, kind);
	if (!k)
		return;
	const char *uid = json_str(json_controller_ref(o), "uid");
	if (ev == CTL_ADD)
		tpc_expect_created(m->exp[c], k, uid, 1);
	if (ev == CTL_DELETE || json_path(o, "metadata.deletionTimestamp")) {
		char *pk = object_key(o);
		tpc_expect_deleted(m->exp[c], k, uid, pk);
		free(pk);
	}
	add_key(q, k);
}

#define OWNED_POD_KEYS(prefix, kind, ctl)                                                      \
	static void prefix##_pod_add(void *ud, struct workqueue *q, const json_t *o)           \
	{                                                                                      \
		owned_pod_event(ud, q, o, kind, ctl, CTL_ADD);                                 \
	}                                                                                      \
	static void prefix##_pod_update(void *ud, struct workqueue *q, const json_t *o)        \
	{                                                                                      \
		owned_pod_event(ud, q, o, kind, ctl, CTL_UPDATE);                              \
	}                                                                                      \
	static void prefix##_pod_delete(void *ud, struct workqueue *q, const json_t *o)        \
	{                                                                                      \
		owned_pod_event(ud, q, o, kind, ctl, CTL_DELETE);                              \
	}
OWNED_POD_KEYS(rs, "ReplicaSet", CTL_RS)
OWNED_POD_KEYS(job, "Job", CTL_JOB)
OWNED_POD_KEYS(sts, "StatefulSet", CTL_STS)

static void deploy_owner(void *ud, struct workqueue *q, const json_t *o)
{
	(void)ud;
	add_key(q, owner_key(o, "Deployment"));
}

static void cronjob_owner(void *ud, struct workqueue *q, const json_t *o)
{
	(void)ud;
	add_key(q, owner_key(o, "CronJob"));
}

static void sts_owner(void *ud, struct workqueue *q, const json_t *o)
{
	(void)ud;
	add_key(q, owner_key(o, "StatefulSet"));
}

/* Namespaces are keyed "tenant//name" by the informer; controllers use "tenant/name/". */
static void ns_self(void *ud, struct workqueue *q, const json_t *o)
{
	(void)ud;
	const char *t = json_path_str(o, "metadata.tenant"), *n = json_path_str(o, "metadata.name");
	if (t && n)
		add_key(q, xasprintf("%s/%s/", t, n));
}

static void ns_tenant(void *ud, struct workqueue *q, const json_t *o)
{
	(void)ud;
	const char *t = json_path_str(o, "metadata.tenant");
	if (t && json_path_str(o, "metadata.name"))
		add_key(q, xasprintf("%s//", t));
}

static void tenant_self(void *ud, struct workqueue *q, const json_t *o)
{
	struct tpc *m = ud;
	const char *n = json_path_str(o, "metadata.name");
	if (n)
		add_key(q, xasprintf("%s//", n));
	/* the system tenant's CRDs serve every tenant: the GC watches their resources in each */
	if (m->wq[CTL_GC])
		wq_add(m->wq[CTL_GC], TPC_CRWATCH_KEY);
}

/* Garbage collector: dependents name their owners; an owner being deleted (or a pod held by
 * finalizers) is its own key. */
static void gc_pod(void *ud, struct workqueue *q, const json_t *o)
{
	(void)q;
	tpc_gc_enqueue_owners(ud, o);
	if (json_path(o, "metadata.deletionTimestamp") && json_path(o, "metadata.finalizers"))
		tpc_gc_enqueue_self(ud, o, "Pod");
}

static void gc_rs(void *ud, struct workqueue *q, const json_t *o)
{
	(void)q;
	tpc_gc_enqueue_owners(ud, o);
	if (json_path(o, "metadata.deletionTimestamp"))
		tpc_gc_enqueue_self(ud, o, "ReplicaSet");
}

static void gc_rs_gone(void *ud, struct workqueue *q, const json_t *o)
{
	(void)q;
	tpc_gc_enqueue_owners(ud, o);
	tpc_gc_enqueue_self(ud, o, "ReplicaSet");
}

static void gc_deploy(void *ud, struct workqueue *q, const json_t *o)
{
	(void)q;
	if (json_path(o, "metadata.deletionTimestamp"))
		tpc_gc_enqueue_self(ud, o, "Deployment");
}

static void gc_deploy_gone(void *ud, struct workqueue *q, const json_t *o)
{
	(void)q;
	tpc_gc_enqueue_self(ud, o, "Deployment");
}

static void gc_job(void *ud, struct workqueue *q, const json_t *o)
{
	(void)q;
	tpc_gc_enqueue_owners(ud, o);
	if (json_path(o, "metadata.deletionTimestamp"))
		tpc_gc_enqueue_self(ud, o, "Job");
}

static void gc_job_gone(void *ud, struct workqueue *q, const json_t *o)
{
	(void)q;
	tpc_gc_enqueue_owners(ud, o);
	tpc_gc_enqueue_self(ud, o, "Job");
}

static void gc_cronjob(void *ud, struct workqueue *q, const json_t *o)
{
	(void)q;
	if (json_path(o, "metadata.deletionTimestamp"))
		tpc_gc_enqueue_self(ud, o, "CronJob");
}

static void gc_cronjob_gone(void *ud, struct workqueue *q, const json_t *o)
{
	(void)q;
	tpc_gc_enqueue_self(ud, o, "CronJob");
}

static void gc_sts(void *ud, struct workqueue *q, const json_t *o)
{
	(void)q;
	if (json_path(o, "metadata.deletionTimestamp"))
		tpc_gc_enqueue_self(ud, o, "StatefulSet");
}

static void gc_sts_gone(void *ud, struct workqueue *q, const json_t *o)
{
	(void)q;
	tpc_gc_enqueue_self(ud, o, "StatefulSet");
}

static void gc_cm(void *ud, struct workqueue *q, const json_t *o)
{
	(void)q;
	if (json_path(o, "metadata.deletionTimestamp"))
		tpc_gc_enqueue_self(ud, o, "ConfigMap");
}

static void gc_cm_gone(void *ud, struct workqueue *q, const json_t *o)
{
	(void)q;
	tpc_gc_enqueue_self(ud, o, "ConfigMap");
}

/* A CRD changed: the GC's custom resource informers follow. */
static void gc_crd(void *ud, struct workqueue *q, const json_t *o)
{
	(void)ud, (void)o;
	wq_add(q, TPC_CRWATCH_KEY);
}

/* CRD cleanup: keys "tenant//name" of CRDs being deleted with our finalizer. */
static void crd_terminating(void *ud, struct workqueue *q, const json_t *o)
{
	(void)ud;
	const char *t = json_path_str(o, "metadata.tenant"), *n = json_path_str(o, "metadata.name");
	if (t && n && json_path(o, "metadata.deletionTimestamp"))
		add_key(q, xasprintf("%s//%s", t, n));
}

/* Endpoints and slices: a pod queues the services of its namespace that select it (a pod whose
 * labels stopped matching is caught by the period's resync of every service). */
struct pod_svc {
	struct workqueue *q;
	const json_t *pod;
	const char *t, *ns;
};

static void svc_if_selects(void *ud, const json_t *svc)
{
	struct pod_svc *c = ud;
	if (tpc_service_selects(svc, c->pod))
		ctl_key_self(NULL, c->q, svc);
}

static void pod_services(void *ud, struct workqueue *q, const json_t *o)
{
	struct informer *inf = tpc_informer(ud, INF_SERVICES);
	struct pod_svc c = { q, o, json_path_str(o, "metadata.tenant"), json_path_str(o, "metadata.namespace") };
	if (inf && c.t && c.ns)
		informer_foreach_ns(inf, c.t, c.ns, svc_if_selects, &c);
}

/* Disruption: a pod queues the budgets of its namespace that select it (one that stopped
 * selecting it is caught by the period's resync of every budget). */
static void pdb_if_selects(void *ud, const json_t *pdb)
{
	struct pod_svc *c = ud;
	if (pdb_selects(pdb, c->pod))
		ctl_key_self(NULL, c->q, pdb);
}

static void pod_pdbs(void *ud, struct workqueue *q, const json_t *o)
{
	struct informer *inf = tpc_informer(ud, INF_PDBS);
	struct pod_svc c = { q, o, json_path_str(o, "metadata.tenant"), json_path_str(o, "metadata.namespace") };
	if (inf && c.t && c.ns)
		informer_foreach_ns(inf, c.t, c.ns, pdb_if_selects, &c);
}

/* Endpoints queue their service when it exists with a selector (ones changed behind the
 * controller's back are put back; its own writes come back as a sync that finds nothing to do).
 * Endpoints of no service, or of one without a selector, are their writer's: never queued. */
static void endpoints_service(void *ud, struct workqueue *q, const json_t *o)
{
	struct informer *inf = tpc_informer(ud, INF_SERVICES);
	char *k = object_key(o);
	json_t *svc = inf && k ? informer_get(inf, k) : NULL;
	if (svc && tpc_service_has_selector(svc))
		wq_add(q, k);
	json_decref(svc);
	free(k);
}

/* The root CA's ConfigMap changed or deleted queues its namespace (put back at once, not at the
 * next minute's resync). */
static void rootca_cm(void *ud, struct workqueue *q, const json_t *o)
{
	(void)ud;
	const char *t = json_path_str(o, "metadata.tenant"), *ns = json_path_str(o, "metadata.namespace");
	const char *n = json_path_str(o, "metadata.name");
	if (t && ns && n && !strcmp(n, TPC_ROOT_CA_NAME))
		add_key(q, xasprintf("%s/%s/", t, ns));
}

/* A slice this controller manages queues its service (one changed or deleted behind its back is
 * put back; its own writes come back as a sync that finds nothing to do). */
static void slice_service(void *ud, struct workqueue *q, const json_t *o)
{
	(void)ud;
	const char *t = json_path_str(o, "metadata.tenant"), *ns = json_path_str(o, "metadata.namespace");
	const char *svc = json_str(json_path(o, "metadata.labels"), TPC_SLICE_SERVICE_LABEL);
	const char *by = json_str(json_path(o, "metadata.labels"), TPC_SLICE_MANAGED_BY_LABEL);
	if (t && ns && svc && by && !strcmp(by, TPC_SLICE_MANAGER))
		add_key(q, xasprintf("%s/%s/%s", t, ns, svc));
}

/* A deleted kube-dns service queues its tenant's default network (which makes it again). */
static void dns_network(void *ud, struct workqueue *q, const json_t *o)
{
	(void)ud;
	const char *t = json_path_str(o, "metadata.tenant"), *ns = json_path_str(o, "metadata.namespace");
	const char *n = json_path_str(o, "metadata.name");
	if (t && ns && n && !strcmp(ns, "kube-system") && !strcmp(n, "kube-dns"))
		add_key(q, xasprintf("%s//default", t));
}

/* Table ------------------------------------------------------------------------------------ */

#define SYNC(fn)                                                    \
	static int fn##_ud(void *ud, const char *key) { return fn(ud, key); }
SYNC(tpc_sync_tenant)
SYNC(tpc_sync_namespace)
SYNC(tpc_sync_replicaset)
SYNC(tpc_sync_deployment)
SYNC(tpc_sync_gc)
SYNC(tpc_sync_rmloss)
SYNC(tpc_sync_job)
SYNC(tpc_sync_cronjob)
SYNC(tpc_sync_endpoints)
SYNC(tpc_sync_endpointslices)
SYNC(tpc_sync_network)
SYNC(tpc_sync_statefulset)
SYNC(tpc_sync_disruption)
SYNC(tpc_sync_rootca)
SYNC(tpc_sync_crdcleanup)

static int rmloss_start(void *ud)
{
	tpc_rmloss_start(ud);
	return 0;
}

static void rmloss_stop(void *ud)
{
	tpc_rmloss_stop(ud);
}

#define UPSERT (CTL_ADD | CTL_UPDATE)

/* Workers as kube-controller-manager's defaults (--concurrent-gc-syncs 20, -namespace- 10, the
 * others 5); the rest --workers (2). Found in the region simulation: with 2, the garbage
 * collector deleted ~4 orphans/s on busy cores, and thousands of a deleted Deployment's pods
 * kept running for minutes. */
static const struct ctl_def controllers[CTL__N] = {
	[CTL_TENANT] = { "tenant", { { TENANTS, 0, tenant_self }, { NAMESPACES, 0, ns_tenant } }, tpc_sync_tenant_ud },
	[CTL_NAMESPACE] = { "namespace", { { NAMESPACES, 0, ns_self } }, tpc_sync_namespace_ud, .workers = 10 },
	[CTL_RS] = { "replicaset",
		     { { REPLICASETS, 0, ctl_key_self }, { PODS, CTL_ADD, rs_pod_add },
		       { PODS, CTL_UPDATE, rs_pod_update }, { PODS, CTL_DELETE, rs_pod_delete } },
		     tpc_sync_replicaset_ud, .workers = 5 },
	[CTL_DEPLOY] = { "deployment", { { DEPLOYMENTS, UPSERT, ctl_key_self }, { REPLICASETS, 0, deploy_owner } },
			 tpc_sync_deployment_ud, .workers = 5 },
	[CTL_GC] = { "garbagecollector",
		     { { PODS, 0, gc_pod }, { REPLICASETS, UPSERT, gc_rs }, { REPLICASETS, CTL_DELETE, gc_rs_gone },
		       { DEPLOYMENTS, UPSERT, gc_deploy }, { DEPLOYMENTS, CTL_DELETE, gc_deploy_gone },
		       { JOBS, UPSERT, gc_job }, { JOBS, CTL_DELETE, gc_job_gone }, { CRONJOBS, UPSERT, gc_cronjob },
		       { CRONJOBS, CTL_DELETE, gc_cronjob_gone }, { STATEFULSETS, UPSERT, gc_sts },
		       { STATEFULSETS, CTL_DELETE, gc_sts_gone }, { CONFIGMAPS, UPSERT, gc_cm },
		       { CONFIGMAPS, CTL_DELETE, gc_cm_gone }, { CRDS, 0, gc_crd } },
		     tpc_sync_gc_ud, .tick_key = TPC_CRWATCH_KEY, .period_ms = 60000, .workers = 20 },
	[CTL_RMLOSS] = { "rmloss", { { PODS, 0, ctl_key_none } }, tpc_sync_rmloss_ud, .tick_key = TPC_RMLOSS_KEY,
			 .start = rmloss_start, .stop = rmloss_stop },
	[CTL_JOB] = { "job",
		      { { JOBS, UPSERT, ctl_key_self }, { PODS, CTL_ADD, job_pod_add },
			{ PODS, CTL_UPDATE, job_pod_update }, { PODS, CTL_DELETE, job_pod_delete } },
		      tpc_sync_job_ud, .period_ms = 30000, .workers = 5 },
	[CTL_CRONJOB] = { "cronjob", { { CRONJOBS, UPSERT, ctl_key_self }, { JOBS, 0, cronjob_owner } },
			  tpc_sync_cronjob_ud, .period_ms = 10000, .workers = 5 },
	[CTL_ENDPOINTS] = { "endpoints",
			    { { SERVICES, 0, ctl_key_self }, { PODS, 0, pod_services }, { ENDPOINTS, 0, endpoints_service } },
			    tpc_sync_endpoints_ud, .period_ms = 30000, .workers = 5 },
	[CTL_SLICES] = { "endpointslice",
			 { { SERVICES, 0, ctl_key_self }, { PODS, 0, pod_services }, { SLICES, 0, slice_service } },
			 tpc_sync_endpointslices_ud, .period_ms = 30000, .workers = 5 },
	[CTL_NETWORK] = { "network", { { NETWORKS, 0, ctl_key_self }, { SERVICES, CTL_DELETE, dns_network } },
			  tpc_sync_network_ud },
	[CTL_STS] = { "statefulset",
		      { { STATEFULSETS, UPSERT, ctl_key_self }, { PODS, CTL_ADD, sts_pod_add },
			{ PODS, CTL_UPDATE, sts_pod_update }, { PODS, CTL_DELETE, sts_pod_delete },
			{ CONTROLLERREVISIONS, CTL_DELETE, sts_owner } },
		      tpc_sync_statefulset_ud, .period_ms = 30000, .workers = 5 },
	[CTL_DISRUPTION] = { "disruption", { { PDBS, UPSERT, ctl_key_self }, { PODS, 0, pod_pdbs } },
			     tpc_sync_disruption_ud, .period_ms = 30000 },
	[CTL_ROOTCA] = { "root-ca-cert-publisher", { { NAMESPACES, UPSERT, ns_self }, { CONFIGMAPS, 0, rootca_cm } },
			 tpc_sync_rootca_ud,
			 .period_ms = 60000 },
	[CTL_CRDCLEANUP] = { "customresourcecleanup", { { CRDS, UPSERT, crd_terminating } }, tpc_sync_crdcleanup_ud },
};

int tpc_manager_new(struct tpc *m, struct ctl_config *cfg)
{
	cfg->defs = controllers;
	cfg->ndefs = CTL__N;
	cfg->ud = m;
	int rc = ctl_manager_new(cfg, &m->ctl);
	if (rc < 0)
		return rc;
	m->exp[CTL_RS] = tpc_expect_new(0);
	m->exp[CTL_JOB] = tpc_expect_new(0);
	m->exp[CTL_STS] = tpc_expect_new(0);
	for (int i = 0; i < CTL__N; i++)
		m->wq[i] = ctl_manager_queue(m->ctl, controllers[i].name);
	return 0;
}

void tpc_manager_release(struct tpc *m)
{
	tpc_crwatch_stop(m);
	for (int i = 0; i < CTL__N; i++) {
		tpc_expect_free(m->exp[i]);
		m->exp[i] = NULL;
	}
}
