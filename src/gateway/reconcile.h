/* The gateway's background thread: partition health checks (circuit breaker), the node ->
 * resource manager map, and repair of the tenant map (see reconcile.c). */
#ifndef URSA_GW_RECONCILE_H
#define URSA_GW_RECONCILE_H
#include "gw.h"

struct reconciler {
	struct registry *reg;   /* borrowed */
	const char *auth;       /* "Bearer <gateway token>" for its own reads, borrowed; may be NULL */
	int64_t resync_ms;        /* pending placements checked */
	int64_t sweep_ms;         /* whole tenant and node maps compared with the partitions */
	int64_t pending_grace_ms;
	int64_t mirror_ms;        /* system CRDs mirrored (0: never) */
	atomic_bool stop;
	pthread_t thread;
};
int reconciler_start(struct reconciler *rc);
void reconciler_stop(struct reconciler *rc);
/* Lists every resource manager's nodes now (on a miss in the node map). Thread-safe. */
void reconciler_refresh_nodes(struct reconciler *rc);

/* The system CRD mirror (mirror.c). The system tenant's CustomResourceDefinitions live on its
 * partition; every other tenant partition gets a copy in its tenant "system" carrying
 * MIRROR_ANNOTATION: <source partition>, and loses copies whose original is gone. */
#define MIRROR_ANNOTATION "ursa.io/mirrored-from"
#define CRD_SYSTEM_PATH "/apis/apiextensions.k8s.io/v1/tenants/system/customresourcedefinitions"
/* The copy of CRD src (borrowed) to create elsewhere (new): apiVersion, kind, metadata.name,
 * labels and annotations (with MIRROR_ANNOTATION: pid added) and spec; nothing the server owns
 * (uid, resourceVersion, status, finalizers, timestamps, managedFields). NULL when src has no
 * name or spec. Pure. */
json_t *mirror_object(const json_t *src, const char *pid);
/* The update that makes have (an existing copy, borrowed) match want (mirror_object's): have
 * with want's spec, labels and annotations (new); NULL when they already match. Pure. */
json_t *mirror_update(const json_t *want, const json_t *have);
/* What one pass does to a target partition, from the source's list (a CRD list) and the
 * target's (items arrays, borrowed): the copies to create, to update (mirror_update's
 * objects) and the names of copies to delete (arrays, new refs). A target CRD of the same name
 * without MIRROR_ANNOTATION is the partition's own: left alone (counted in *ret_shadowed).
 * Objects being deleted count as absent in the source and are not touched in the target. Pure. */
struct mirror_plan {
	json_t *create, *update, *del;
	size_t shadowed;
};
void mirror_plan(const json_t *src_items, const json_t *dst_items, const char *src_pid, struct mirror_plan *ret);
void mirror_plan_release(struct mirror_plan *p);
/* One pass over every tenant partition (reconcile.c calls it every mirror_ms). */
void mirror_crds(struct reconciler *rc);

#endif
