/* ursa-tp-controller-manager internals: the controllers of a tenant partition (tenant,
 * namespace, replicaset, deployment, garbage collector) on the shared client library.
 *
 * Model: informers over /tenants/all/... feed work queues with keys "tenant/namespace/name"
 * (the queue is fair between tenants); a worker syncs one key by reading the live object from
 * the API server, its pods (or jobs) from the shared informers' indexes (listers, guarded by
 * expectations so a lagging informer never makes a controller create twice) and writing the
 * difference. Pure arithmetic lives in logic.c so unit tests reach it without a server. */
#ifndef TPC_H
#define TPC_H
#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>
#include "ursa/buf.h"
#include "ursa/client.h"
#include "ursa/controller.h"

/* logic.c: pure functions ------------------------------------------------------------------ */
#define TPC_HASH_LABEL "pod-template-hash"
#define TPC_REVISION_ANN "deployment.kubernetes.io/revision"
#define TPC_REVISION_HISTORY_ANN "deployment.kubernetes.io/revision-history"
#define TPC_DESIRED_ANN "deployment.kubernetes.io/desired-replicas"
#define TPC_MAX_ANN "deployment.kubernetes.io/max-replicas"

/* FNV-1a 32 of bytes. */
uint32_t tpc_fnv32a(const void *data, size_t len);
/* The pod-template-hash of a pod template (JSON, borrowed; its pod-template-hash label is
 * ignored) and a collision count (< 0: none): FNV-32a over the canonical JSON (sorted keys,
 * compact) then the decimal count, rendered as upstream does (decimal digits of the sum
 * mapped into "bcdfghjklmnpqrstvwxz2456789"). Appends to out. */
void tpc_template_hash(const json_t *tmpl, long long collision_count, struct buf *out);
/* True if two pod templates are equal ignoring the pod-template-hash label. */
bool tpc_templates_equal(const json_t *a, const json_t *b);

/* Resolves an IntOrString (integer, "N" or "N%"; NULL means def) against total: percentages
 * round up when round_up, else down. E_INVALID on garbage or negatives. */
int tpc_int_or_percent(const json_t *v, const char *def, long long total, bool round_up, long long *ret);
/* maxSurge (rounded up) and maxUnavailable (rounded down) of a RollingUpdate strategy; if both
 * come to 0, maxUnavailable becomes 1 (as upstream). strategy may be NULL (25%/25%). */
int tpc_fenceposts(const json_t *rolling, long long replicas, long long *ret_surge, long long *ret_unavail);

/* One ReplicaSet as the rollout arithmetic sees it. target is the output. */
struct rs_view {
	long long replicas;  /* spec.replicas */
	long long available; /* status.availableReplicas */
	int64_t created;     /* creation time, for oldest-first order */
	long long target;
};
/* One rolling-update step (upstream order: scale the new RS up within maxSurge; if it did not
 * move, scale old ones down within maxUnavailable: unhealthy first, then oldest first). Sets
 * every target (new is neu, may be NULL; old[] unsorted). Returns true if anything changes. */
bool tpc_rolling_step(long long want, long long surge, long long unavail, struct rs_view *neu, struct rs_view *old,
		      size_t nold);
/* One Recreate step: old ones to 0 first; the new one up to want once old_pods (pods still
 * existing from old ReplicaSets) is 0. */
bool tpc_recreate_step(long long want, long long old_pods, struct rs_view *neu, struct rs_view *old, size_t nold);

/* Pod facts the controllers read. now is wall-clock seconds. */
bool tpc_pod_ready(const json_t *pod);
bool tpc_pod_available(const json_t *pod, long long min_ready_seconds, time_t now);
bool tpc_pod_active(const json_t *pod); /* not terminating, not Succeeded/Failed */
/* Order for scale-down: negative if a should be deleted before b (unscheduled, then
 * Pending < Unknown < Running, not ready, ready more recently, more restarts, newer). */
int tpc_pod_delete_cmp(const json_t *a, const json_t *b);
/* Sorts pods (array of borrowed json_t *) deletion-first. */
void tpc_rank_for_deletion(const json_t **pods, size_t n);
/* Slow start: size of the next creation batch after a batch of prev (0 at first) succeeded. */
long long tpc_next_batch(long long prev, long long remaining);

/* svclogic.c: a Service's endpoints from the service and its pods (all borrowed) ------------ */
#define TPC_SLICE_SERVICE_LABEL "kubernetes.io/service-name"
#define TPC_SLICE_MANAGED_BY_LABEL "endpointslice.kubernetes.io/managed-by"
#define TPC_SLICE_MANAGER "endpointslice-controller.k8s.io"
#define TPC_ROOT_CA_NAME "kube-root-ca.crt" /* the root CA publisher's ConfigMap in every namespace */
#define TPC_SLICE_MAX 100 /* endpoints per slice, as Kubernetes' default */
/* Whether svc has a selector (spec.selector a non-empty map): the endpoints controllers keep
 * its Endpoints and slices; without one they are their writer's. */
bool tpc_service_has_selector(const json_t *svc);
/* Whether svc's spec.selector (a non-empty map) picks pod by its labels. */
bool tpc_service_selects(const json_t *svc, const json_t *pod);
/* The ports pod serves for svc, in spec.ports order, as Endpoints ports ({name (absent when
 * unnamed), port, protocol, appProtocol?}): a targetPort number as is, a name resolved to the
 * containerPort of that name and protocol, absent the service port; a name the pod does not
 * define leaves that port out. New array. */
json_t *tpc_endpoint_ports(const json_t *svc, const json_t *pod);
/* Endpoints subsets (new array) from the pods svc selects that have status.podIP and have not
 * ended: ready pods (Ready condition True) in addresses, others in notReadyAddresses, every
 * address with nodeName and a targetRef to its pod; terminating pods are left out; with
 * spec.publishNotReadyAddresses every pod is ready and terminating ones stay. Pods serving
 * the same ports share a subset; addresses sorted by IP, subsets in order of their first pod
 * by name. A pod that serves none of the service's ports is left out. */
json_t *tpc_endpoints_subsets(const json_t *svc, const json_t *pods);
/* The EndpointSlices (new array of whole objects) for svc: one per distinct port list (chunks
 * of TPC_SLICE_MAX endpoints), named "<service>-<fnv32 of the ports, hex>[-chunk]", labelled
 * TPC_SLICE_SERVICE_LABEL and TPC_SLICE_MANAGED_BY_LABEL, owned by the service; endpoints with
 * conditions ready (Ready and not terminating), serving (Ready), terminating
 * (deletionTimestamp set); an empty placeholder slice when no pod backs the service. */
json_t *tpc_endpoint_slices(const json_t *svc, const json_t *pods);

/* kube.c: API helpers ---------------------------------------------------------------------- */
struct tpc;
/* Collection path of a kind in tenant/namespace ("pods", "replicasets", ...), appended. */
void tpc_path(struct buf *out, const char *plural, const char *tenant, const char *ns, const char *name);
/* Returns the HTTP status (or E_*) with *ret (new) the body. */
int tpc_get(struct tpc *m, const char *path, json_t **ret);
int tpc_send(struct tpc *m, const char *method, const char *path, const json_t *body, json_t **ret);
/* PUT of obj (read at path) with finalizer fin added (on) or taken away: 0 (also when obj is
 * gone), E_CONFLICT (obj changed meanwhile: retry) or E_UNAVAILABLE. */
int tpc_set_finalizer(struct tpc *m, const char *path, const json_t *obj, const char *fin, bool on);
/* Records an Event about obj (type "Normal"/"Warning"); failures are only logged. */
void tpc_event(struct tpc *m, const json_t *obj, const char *type, const char *reason, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));
/* Splits "tenant/ns/name" into owned parts; false if malformed. */
bool tpc_split_key(const char *key, char **ret_t, char **ret_ns, char **ret_name);
/* The sync preamble of a controller: a key "tenant/ns/name" and the live object it names. */
struct tpc_live {
	char *tenant, *ns, *name; /* owned */
	json_t *obj;              /* the live object, owned */
	const char *uid;          /* its metadata.uid (borrowed from obj) */
};
#define TPC_LIVE_TERMINATING 1u  /* also sync an object being deleted (deletionTimestamp set) */
#define TPC_LIVE_TENANT_SCOPED 2u /* plural is tenant-scoped: the key's namespace part is ignored */
/* Splits key, GETs the live plural object and returns 1 with *ret filled when there is something to
 * sync; 0 (nothing to do, *ret empty) when the key is malformed, the object is gone (404), has no
 * uid, or is terminating (unless TPC_LIVE_TERMINATING); E_UNAVAILABLE when it cannot be read.
 * Release *ret with tpc_live_release (safe on an empty or zeroed one). */
int tpc_get_live(struct tpc *m, const char *plural, const char *key, unsigned flags, struct tpc_live *ret);
void tpc_live_release(struct tpc_live *l);
/* Listers: "pods", "jobs", "replicasets" and "endpointslices" are read from the controller manager's shared informers (their
 * namespace or controller index, so a lookup costs that bucket's size), other plurals and
 * informers not yet synced from the API server. Read from an informer, a list may lag what this
 * process just wrote: controllers that create or delete what they list guard with expectations.
 *
 * The items (a new array) of plural in tenant/ns that selector (a label selector string; ""
 * takes all) selects; NULL when it cannot be read. */
json_t *tpc_list_selected(struct tpc *m, const char *plural, const char *tenant, const char *ns, const char *selector);
/* The same for a metav1.LabelSelector object. An empty or unreadable selector (which would take
 * everything) is E_INVALID, an unreadable server E_UNAVAILABLE: NULL then, with the code in
 * *ret_err. ret_sel (may be NULL) gets the parsed selector on success (caller frees). */
struct label_selector;
json_t *tpc_list_by_selector(struct tpc *m, const char *plural, const char *tenant, const char *ns,
			     const json_t *selector, struct label_selector **ret_sel, int *ret_err);
/* The items of plural in tenant/ns that selector (a metav1.LabelSelector; NULL: no label
 * filter, refused with orphans) selects and whose controller ownerReference has uid (NULL:
 * none), plus, with orphans, those without a controller reference. Errors as
 * tpc_list_by_selector's. */
json_t *tpc_list_controlled(struct tpc *m, const char *plural, const char *tenant, const char *ns,
			    const json_t *selector, const char *uid, bool orphans, struct label_selector **ret_sel,
			    int *ret_err);

/* Expectations: a controller that creates or deletes objects it then lists from an informer
 * records what it expects to see (before writing), the informer's events lower that as they are
 * observed, and the controller skips syncing the key until nothing is outstanding or
 * timeout_ms passed since the expectations were last raised (so a lagging informer never
 * makes it create twice). Keys are the controller's keys; deletions are tracked by the deleted
 * object's store key, so an update setting deletionTimestamp and the final delete event count
 * once. A record belongs to the controller object of one uid: an object deleted and made again
 * under the same name (a tenant restored at once) never waits on its predecessor's (uid NULL:
 * unknown, matches any). Thread-safe; every function is NULL-safe on x. */
#define TPC_EXPECT_TIMEOUT_MS (5 * 60 * 1000)
struct tpc_expect;
struct tpc_expect *tpc_expect_new(int64_t timeout_ms); /* <= 0: TPC_EXPECT_TIMEOUT_MS */
void tpc_expect_free(struct tpc_expect *x);
/* Raising: n more creations; one deletion of obj_key. A record of another uid is replaced. */
void tpc_expect_creations(struct tpc_expect *x, const char *key, const char *uid, long long n, int64_t now_ms);
void tpc_expect_deletion(struct tpc_expect *x, const char *key, const char *uid, const char *obj_key, int64_t now_ms);
/* Lowering: n creations observed (or not made after all); obj_key's deletion observed (or not
 * made). Unknown keys and records of another uid are left alone. */
void tpc_expect_created(struct tpc_expect *x, const char *key, const char *uid, long long n);
void tpc_expect_deleted(struct tpc_expect *x, const char *key, const char *uid, const char *obj_key);
/* True when key (the object of uid) may be synced; else false with *ret_wait_ms (may be NULL)
 * the time left to the timeout. Met, timed-out and other uids' records are dropped. */
bool tpc_expect_satisfied(struct tpc_expect *x, const char *key, const char *uid, int64_t now_ms,
			  int64_t *ret_wait_ms);
void tpc_expect_forget(struct tpc_expect *x, const char *key); /* the controller object is gone */
size_t tpc_expect_pending(struct tpc_expect *x);                /* keys with a record */
/* The expectations of controller c (CTL_RS, CTL_JOB, CTL_STS), or NULL. */
#define tpc_exp(m, c) ((m)->exp[(c)])

/* crdkinds.c: the custom resource kinds a tenant has ------------------------------------------ */
#define TPC_CRDS_PATH "/apis/apiextensions.k8s.io/v1/tenants/all/customresourcedefinitions"
/* One CustomResourceDefinition as the controllers use it: where its custom resources are read
 * and written (the storage version when served, else the first served version). All owned. */
struct tpc_crd_kind {
	char *tenant, *name, *uid; /* the CRD's metadata */
	char *group, *version, *plural, *kind;
	bool namespaced;           /* scope Namespaced (else Cluster: the tenant's cluster scope) */
	bool terminating;          /* the CRD has a deletionTimestamp */
};
struct tpc_crd_kinds {
	struct tpc_crd_kind *v;
	size_t n;
};
/* Reads crd (borrowed): 0 with *ret filled, or E_INVALID (nothing to release) when a field is
 * missing or no version is served. */
int tpc_crd_kind_parse(const json_t *crd, struct tpc_crd_kind *ret);
void tpc_crd_kind_release(struct tpc_crd_kind *k);
void tpc_crd_kinds_release(struct tpc_crd_kinds *ks); /* and zeroes it */
/* The kinds tenant sees among crds (an array of CRD objects of any tenants, borrowed): its own,
 * then the system tenant's whose names it has none of; unreadable CRDs are left out. Order:
 * as in crds. */
void tpc_crd_kinds_of(const json_t *crds, const char *tenant, struct tpc_crd_kinds *ret);
/* The kind of group (apiVersion "group/version" is accepted too) and kind, or NULL. Borrowed. */
const struct tpc_crd_kind *tpc_crd_kinds_find(const struct tpc_crd_kinds *ks, const char *group_or_apiversion,
					      const char *kind);
/* The path of k's custom resources served in tenant (may differ from k->tenant for the system
 * tenant's CRDs): /apis/<group>/<version>/tenants/<tenant>[/namespaces/<ns>]/<plural>[/<name>];
 * ns NULL on a namespaced kind: the tenant's whole collection. Appended. */
void tpc_crd_path(struct buf *out, const struct tpc_crd_kind *k, const char *tenant, const char *ns, const char *name);
/* The GC's kind of a custom resource: "Kind.group" (new string), from a kind and an apiVersion;
 * NULL when the apiVersion has no group. */
char *tpc_cr_gc_kind(const char *kind, const char *api_version);
/* The kinds tenant sees, from the API server (consistent: two lists, the tenant's CRDs and the
 * system tenant's) or from the shared CRD informer. 0, or E_UNAVAILABLE (*ret empty). */
int tpc_crd_kinds_get(struct tpc *m, const char *tenant, bool consistent, struct tpc_crd_kinds *ret);

/* crwatch.c: the garbage collector's informers over custom resources, one per (tenant, CRD
 * kind it sees), kept in step with the CRDs and tenants by the GC key TPC_CRWATCH_KEY. Their
 * events queue GC keys as the built-in kinds' do. */
#define TPC_CRWATCH_KEY "system//crwatch"
struct crwatch;
int tpc_crwatch_sync(struct tpc *m);
void tpc_crwatch_stop(struct tpc *m); /* after the workers stopped; NULL-safe */
/* The custom resource owner (group, kind, name) of a dependent in tenant and dep_ns (NULL: a
 * cluster-scoped dependent) from the informers: 1 with *ret_obj a new reference or NULL (not
 * there), 0 when no informer of that kind runs in tenant, -1 when it has not synced yet.
 * *ret_namespaced: the kind's scope. */
int tpc_crwatch_owner(struct tpc *m, const char *tenant, const char *group, const char *kind, const char *dep_ns,
		      const char *name, json_t **ret_obj, bool *ret_namespaced);
/* Calls fn for every custom resource of tenant in the synced informers (ns "": all of the
 * tenant's; else those in namespace ns), under the informers' locks (fn must not call back).
 * false when some informer of tenant has not synced (or none ran yet). */
bool tpc_crwatch_foreach(struct tpc *m, const char *tenant, const char *ns,
			 void (*fn)(void *ud, const struct tpc_crd_kind *k, const char *tenant, const json_t *obj),
			 void *ud);

/* crdcleanup.c: a deleted CRD's custom resources go before its finalizer. Keys "tenant//name". */
#define TPC_CRD_TERMINATING_REASON "InstanceDeletionInProgress"
/* The CRD's status conditions (a new array) with the condition type set to status, reason and
 * message (its lastTransitionTime now_s when the status changes or it is new); other
 * conditions kept. cur may be NULL. */
json_t *tpc_crd_set_condition(const json_t *cur, const char *type, const char *status, const char *reason,
			      const char *message, time_t now_s);

/* manager.c -------------------------------------------------------------------------------- */
enum tpc_inf {
	INF_TENANTS, INF_NAMESPACES, INF_PODS, INF_RS, INF_DEPLOY, INF_JOBS, INF_CRONJOBS, INF_SERVICES, INF_STS, INF_PDBS,
	INF_CRDS, INF_CONFIGMAPS, INF_ENDPOINTS, INF_SLICES, INF__N
};
enum tpc_ctl {
	CTL_TENANT, CTL_NAMESPACE, CTL_RS, CTL_DEPLOY, CTL_GC, CTL_RMLOSS, CTL_JOB, CTL_CRONJOB, CTL_ENDPOINTS, CTL_SLICES,
	CTL_NETWORK, CTL_STS, CTL_DISRUPTION, CTL_ROOTCA, CTL_CRDCLEANUP, CTL__N
};

struct rmloss;
struct backup_key;
struct tpc {
	struct rest_client *rest;
	struct ctl_manager *ctl;
	struct workqueue *wq[CTL__N]; /* the controllers' queues (borrowed from ctl), NULL when disabled */
	struct tpc_expect *exp[CTL__N]; /* expectations of CTL_RS, CTL_JOB, CTL_STS (owned; else NULL) */
	/* rmloss: the kubeconfig whose credentials reach the RMs (borrowed), its settings and state */
	const char *kubeconfig;
	long long grace_s;       /* --node-monitor-grace-period */
	long long default_tol_s; /* --default-unreachable-toleration-seconds */
	long long rm_period_s;   /* --rm-monitor-period */
	double evict_rate;       /* --rmloss-eviction-rate, pods per second */
	struct rmloss *rml;
	long long job_backoff_base_ms;  /* --job-backoff-base-ms: the pod failure back-off's base (0: 10 s) */
	long long cronjob_now_offset_s; /* --cronjob-now-offset: seconds added to the cronjob clock (tests) */
	char *root_ca;                  /* --root-ca-file's contents (owned), or NULL: kube-root-ca.crt not published */
	struct crwatch *crw;            /* crwatch.c (owned; made by the first TPC_CRWATCH_KEY sync) */
	const char *final_backup_dir;   /* --final-backup-dir (borrowed), or NULL */
	struct backup_key *backup_key;  /* --backup-key-file's key (owned), or NULL */
};
/* Each controller's sync: 0 when done, else an E_* code and the key is retried with back-off. */
int tpc_sync_tenant(struct tpc *m, const char *key);
int tpc_sync_namespace(struct tpc *m, const char *key);
int tpc_sync_replicaset(struct tpc *m, const char *key);
int tpc_sync_deployment(struct tpc *m, const char *key);
int tpc_sync_gc(struct tpc *m, const char *key);
int tpc_sync_rmloss(struct tpc *m, const char *key);
int tpc_sync_job(struct tpc *m, const char *key);     /* job.c */
int tpc_sync_cronjob(struct tpc *m, const char *key); /* cronjob.c */
int tpc_sync_endpoints(struct tpc *m, const char *key);      /* endpoints.c */
int tpc_sync_endpointslices(struct tpc *m, const char *key); /* endpoints.c */
int tpc_sync_network(struct tpc *m, const char *key);        /* network.c */
int tpc_sync_statefulset(struct tpc *m, const char *key);    /* statefulset.c */
int tpc_sync_disruption(struct tpc *m, const char *key);     /* disruption.c */
int tpc_sync_rootca(struct tpc *m, const char *key);         /* rootca.c */
int tpc_sync_crdcleanup(struct tpc *m, const char *key);     /* crdcleanup.c */
/* finalbackup.c: for the tenant controller, tenant t (obj, at API path): a live one's finalizer
 * ursa.io/final-backup made to follow its annotation; a deleted one that holds it gets its backup
 * written and the finalizer taken away. 0: nothing (more) to do; 1: it acted (the tenant changes,
 * and syncs again); an error to retry. */
int tpc_final_backup(struct tpc *m, const char *t, const char *path, const json_t *obj);
/* GC: enqueue the owners named by obj's ownerReferences / obj itself as an owner. */
void tpc_gc_enqueue_owners(struct tpc *m, const json_t *obj);
void tpc_gc_enqueue_self(struct tpc *m, const json_t *obj, const char *kind);

/* rmloss.c -------------------------------------------------------------------------------- */
/* When a resource manager (and with it its zone's node lifecycle controller) stays unreachable
 * past the node grace period, this partition evicts its own pods bound to that RM's nodes as
 * if each node carried node.kubernetes.io/unreachable:NoExecute since the RM was declared lost.
 * One key (TPC_RMLOSS_KEY) ticks through the CTL_RMLOSS queue. */
#define TPC_RMLOSS_KEY "system/rmloss/tick"
/* Builds the state (m->rml; the engine queues the first tick); logs and leaves m->rml NULL when the
 * kubeconfig's credentials cannot be loaded. */
void tpc_rmloss_start(struct tpc *m);
void tpc_rmloss_stop(struct tpc *m); /* after the workers stopped; NULL-safe */

/* Pure parts. True once an RM last heard from at last_ok_ms has been silent longer than
 * grace_s at now_ms. */
bool tpc_rm_lost(int64_t last_ok_ms, int64_t now_ms, long long grace_s);
/* True when an RM's node names must be listed (again): never listed, or refresh_ms passed since
 * they were, at listed_ms. */
bool tpc_rm_relist(bool listed, int64_t listed_ms, int64_t now_ms, int64_t refresh_ms);
/* The time (same clock as lost_ms) at which pod (borrowed) must go from a node unreachable
 * since lost_ms: the smallest tolerationSeconds (negative counts as 0) among its tolerations
 * of node.kubernetes.io/unreachable:NoExecute; INT64_MAX when those that match have none
 * (tolerated forever); lost_ms + default_tol_s s when none matches. */
int64_t tpc_unreachable_deadline_ms(const json_t *pod, int64_t lost_ms, long long default_tol_s);
/* A rate "10", "0.5": E_INVALID unless a finite number in 0..1e6. */
int tpc_parse_rate(const char *s, double *ret);

/* The controller table (manager.c): fills cfg's defs, ndefs and ud, creates m->ctl (started by
 * the caller with ctl_manager_start, freed with ctl_manager_free) and m->wq. E_INVALID on a bad
 * --controllers list in cfg. */
int tpc_manager_new(struct tpc *m, struct ctl_config *cfg);
/* Frees what tpc_manager_new made besides m->ctl (after ctl_manager_free). NULL-safe parts. */
void tpc_manager_release(struct tpc *m);
/* The shared informer of one collection (borrowed), NULL before it started or when no enabled
 * controller watches it. */
struct informer *tpc_informer(struct tpc *m, enum tpc_inf i);
/* One object of plural (tenant/ns/name; ns NULL for a tenant-scoped kind) as a GET would answer:
 * 200 with *ret (new reference) or 404, read from the shared informer inf when it has synced (a
 * resync of every object then costs no request), else from the API server (tpc_get's codes).
 * Read from an informer it may lag: use it to decide whether to write, and let the write's own
 * precondition (409 on a create that exists, on an update from an old resourceVersion) catch a
 * stale view; confirm with tpc_get before anything destructive rests on a 404. */
int tpc_get_cached(struct tpc *m, enum tpc_inf inf, const char *plural, const char *tenant, const char *ns,
		   const char *name, json_t **ret);

#endif
