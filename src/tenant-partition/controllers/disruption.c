/* The disruption controller: keeps each PodDisruptionBudget's status (currentHealthy,
 * desiredHealthy, expectedPods, disruptionsAllowed, disruptedPods, the DisruptionAllowed
 * condition) from the pods it selects; the arithmetic is pdb_status_compute (ursa/pdb.h). The
 * eviction subresource charges the status; this controller releases what it charged once the
 * evicted pod is gone or the entry is too old. */
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "tpc.h"
#include "ursa/errors.h"
#include "ursa/jsonutil.h"
#include "ursa/log.h"
#include "ursa/pdb.h"
#include "ursa/xalloc.h"

struct pick {
	const json_t *pdb;
	json_t *out;
};

static void pick_selected(void *ud, const json_t *pod)
{
	struct pick *p = ud;
	if (pdb_selects(p->pdb, pod))
		json_array_append(p->out, (json_t *)pod);
}

/* The pods of the namespace pdb selects (new array), or NULL: from the pod informer's namespace
 * index once it synced, else from the API server. */
static json_t *budget_pods(struct tpc *m, const char *t, const char *ns, const json_t *pdb)
{
	struct informer *inf = tpc_informer(m, INF_PODS);
	if (inf && informer_synced(inf)) {
		struct pick pk = { pdb, json_array() };
		informer_foreach_ns(inf, t, ns, pick_selected, &pk);
		return pk.out;
	}
	struct buf p = BUF_INIT;
	json_t *list = NULL;
	tpc_path(&p, "pods", t, ns, NULL);
	int code = tpc_get(m, p.ptr, &list);
	buf_release(&p);
	if (code != 200) {
		json_decref(list);
		return NULL;
	}
	json_t *out = json_array();
	size_t i;
	json_t *pod;
	json_array_foreach(json_object_get(list, "items"), i, pod)
		if (pdb_selects(pdb, pod))
			json_array_append(out, pod);
	json_decref(list);
	return out;
}

/* spec.replicas of the controller of kind/name in t/ns, following a ReplicaSet to its
 * Deployment; -1 when it cannot be read (or is of another kind). */
static long long controller_scale(struct tpc *m, const char *t, const char *ns, const char *kind, const char *name)
{
	const char *plural = !strcmp(kind, "ReplicaSet")    ? "replicasets"
			     : !strcmp(kind, "Deployment")  ? "deployments"
			     : !strcmp(kind, "StatefulSet") ? "statefulsets"
							    : NULL;
	if (!plural)
		return -1;
	struct buf p = BUF_INIT;
	json_t *obj = NULL;
	tpc_path(&p, plural, t, ns, name);
	int code = tpc_get(m, p.ptr, &obj);
	buf_release(&p);
	long long v = -1;
	const json_t *ref = code == 200 ? json_controller_ref(obj) : NULL;
	if (ref && json_str(ref, "kind") && !strcmp(json_str(ref, "kind"), "Deployment") && json_str(ref, "name"))
		v = controller_scale(m, t, ns, "Deployment", json_str(ref, "name"));
	else if (code == 200 && json_is_integer(json_path(obj, "spec.replicas")))
		v = json_integer_value(json_path(obj, "spec.replicas"));
	json_decref(obj);
	return v;
}

/* Expected pods: the sum of the scale of the pods' distinct controllers, a pod whose
 * controller has no readable scale counting as itself. */
static long long expected_from_controllers(struct tpc *m, const char *t, const char *ns, const json_t *pods)
{
	json_t *seen = json_object(); /* controller uid -> counted */
	long long total = 0;
	size_t i;
	json_t *pod;
	json_array_foreach(pods, i, pod) {
		const json_t *ref = json_controller_ref(pod);
		const char *uid = json_str(ref, "uid"), *kind = json_str(ref, "kind"), *name = json_str(ref, "name");
		if (!uid || !kind || !name) {
			total++;
			continue;
		}
		if (json_object_get(seen, uid)) {
			if (json_is_false(json_object_get(seen, uid)))
				total++;
			continue;
		}
		long long s = controller_scale(m, t, ns, kind, name);
		json_object_set_new(seen, uid, json_boolean(s >= 0));
		total += s >= 0 ? s : 1;
	}
	json_decref(seen);
	return total;
}

int tpc_sync_disruption(struct tpc *m, const char *key)
{
	struct tpc_live live;
	/* a terminating budget keeps its status current until it is gone */
	int rc = tpc_get_live(m, "poddisruptionbudgets", key, TPC_LIVE_TERMINATING, &live);
	if (rc <= 0)
		return rc;
	rc = 0;
	const char *t = live.tenant, *ns = live.ns, *name = live.name;
	json_t *pdb = live.obj, *pods = NULL, *st = NULL;
	struct buf p = BUF_INIT;
	tpc_path(&p, "poddisruptionbudgets", t, ns, name);
	int code;
	if (!(pods = budget_pods(m, t, ns, pdb))) {
		rc = E_UNAVAILABLE;
		goto out;
	}
	const json_t *spec = json_object_get(pdb, "spec");
	long long expected = pdb_needs_scale(spec) ? expected_from_controllers(m, t, ns, pods)
						   : (long long)json_array_size(pods);
	st = pdb_status_compute(pdb, pods, expected, time(NULL), NULL);
	if (!st || json_equal(st, json_object_get(pdb, "status")))
		goto out;
	json_t *body = json_deep_copy(pdb); /* keeps metadata.resourceVersion: a stale read is a 409 */
	json_object_set(body, "status", st);
	buf_adds(&p, "/status");
	code = tpc_send(m, "PUT", p.ptr, body, NULL);
	json_decref(body);
	if (code == 409)
		rc = E_CONFLICT;
	else if (code != 200 && code != 404)
		rc = E_UNAVAILABLE;
out:
	json_decref(pods);
	json_decref(st);
	buf_release(&p);
	tpc_live_release(&live);
	return rc;
}
