/* Garbage collector over ownerReferences: dependents of a vanished owner are deleted
 * (background), an owner marked "orphan" has its references removed from its dependents, and
 * an owner marked "foregroundDeletion" goes only after its dependents are gone. Owners known:
 * Deployment, ReplicaSet, CronJob, Job and StatefulSet; dependents seen: ReplicaSets, Jobs, Pods and
 * ControllerRevisions. Keys are
 * "tenant/namespace/Kind:name:uid". */
#include <stdlib.h>
#include <string.h>
#include "tpc.h"
#include "ursa/errors.h"
#include "ursa/jsonutil.h"
#include "ursa/log.h"
#include "ursa/xalloc.h"

static const char *plural_of(const char *kind)
{
	if (strcmp(kind, "Deployment") == 0)
		return "deployments";
	if (strcmp(kind, "ReplicaSet") == 0)
		return "replicasets";
	if (strcmp(kind, "Pod") == 0)
		return "pods";
	if (strcmp(kind, "Job") == 0)
		return "jobs";
	if (strcmp(kind, "CronJob") == 0)
		return "cronjobs";
	if (strcmp(kind, "StatefulSet") == 0)
		return "statefulsets";
	return NULL;
}

static void enqueue(struct tpc *m, const char *t, const char *ns, const char *kind, const char *name, const char *uid)
{
	if (!t || !ns || !kind || !name || !uid || !plural_of(kind))
		return;
	char *k = xasprintf("%s/%s/%s:%s:%s", t, ns, kind, name, uid);
	wq_add(m->wq[CTL_GC], k);
	free(k);
}

void tpc_gc_enqueue_self(struct tpc *m, const json_t *obj, const char *kind)
{
	enqueue(m, json_path_str(obj, "metadata.tenant"), json_path_str(obj, "metadata.namespace"), kind,
		json_path_str(obj, "metadata.name"), json_path_str(obj, "metadata.uid"));
}

void tpc_gc_enqueue_owners(struct tpc *m, const json_t *obj)
{
	const char *t = json_path_str(obj, "metadata.tenant"), *ns = json_path_str(obj, "metadata.namespace");
	size_t i;
	json_t *r;
	json_array_foreach(json_path(obj, "metadata.ownerReferences"), i, r) {
		const char *kind = json_str(r, "kind"), *name = json_str(r, "name"), *uid = json_str(r, "uid");
		if (!kind || !name || !uid || !t || !ns || !plural_of(kind))
			continue;
		/* owner alive and not being deleted in the local cache: nothing to do */
		enum tpc_inf inf = strcmp(kind, "Deployment") == 0 ? INF_DEPLOY
				   : strcmp(kind, "Job") == 0	      ? INF_JOBS
				   : strcmp(kind, "CronJob") == 0     ? INF_CRONJOBS
				   : strcmp(kind, "StatefulSet") == 0 ? INF_STS
								      : INF_RS;
		char *k = xasprintf("%s/%s/%s", t, ns, name);
		struct informer *in = tpc_informer(m, inf);
		json_t *o = in ? informer_get(in, k) : NULL;
		free(k);
		const char *ouid = json_path_str(o, "metadata.uid");
		bool alive = o && ouid && strcmp(ouid, uid) == 0 && !json_path(o, "metadata.deletionTimestamp");
		json_decref(o);
		if (!alive)
			enqueue(m, t, ns, kind, name, uid);
	}
}

struct scan {
	const char *t, *ns, *uid, *plural;
	json_t *out; /* [[plural, object], ...] */
};

static bool refers_to(const json_t *obj, const char *uid)
{
	size_t i;
	json_t *r;
	json_array_foreach(json_path(obj, "metadata.ownerReferences"), i, r) {
		const char *u = json_str(r, "uid");
		if (u && strcmp(u, uid) == 0)
			return true;
	}
	return false;
}

static void collect(void *ud, const json_t *obj)
{
	struct scan *s = ud;
	const char *t = json_path_str(obj, "metadata.tenant"), *ns = json_path_str(obj, "metadata.namespace");
	if (t && ns && strcmp(t, s->t) == 0 && strcmp(ns, s->ns) == 0 && refers_to(obj, s->uid))
		json_array_append_new(s->out, json_pack("[s,O]", s->plural, obj));
}

/* The synced informer holding plural, or NULL. */
static struct informer *cached(struct tpc *m, const char *plural)
{
	enum tpc_inf i = !strcmp(plural, "pods") ? INF_PODS : !strcmp(plural, "jobs") ? INF_JOBS
			 : !strcmp(plural, "replicasets") ? INF_RS : INF__N;
	struct informer *inf = i == INF__N ? NULL : tpc_informer(m, i);
	return inf && informer_synced(inf) ? inf : NULL;
}

/* Dependents of uid in t/ns. consistent: from lists of the API server (the informers may not
 * have seen a dependent created a moment ago, and orphaning must reach every one); else from the
 * informers' namespace index where there is one (for deleting the dependents of a vanished
 * owner: one the informer has not seen yet queues its owner again when it shows up there). New
 * array, or NULL if a list failed. */
static json_t *dependents(struct tpc *m, const char *t, const char *ns, const char *uid, bool consistent)
{
	static const char *const plurals[] = { "replicasets", "jobs", "pods", "controllerrevisions" };
	struct scan s = { t, ns, uid, NULL, json_array() };
	for (size_t k = 0; k < sizeof(plurals) / sizeof(plurals[0]); k++) {
		struct informer *inf = consistent ? NULL : cached(m, plurals[k]);
		s.plural = plurals[k];
		if (inf) {
			informer_foreach_ns(inf, t, ns, collect, &s);
			continue;
		}
		struct buf path = BUF_INIT;
		json_t *list = NULL;
		tpc_path(&path, plurals[k], t, ns, NULL);
		int code = tpc_get(m, path.ptr, &list);
		buf_release(&path);
		if (code != 200) {
			json_decref(list);
			json_decref(s.out);
			return NULL;
		}
		size_t i;
		json_t *o;
		json_array_foreach(json_object_get(list, "items"), i, o) collect(&s, o);
		json_decref(list);
	}
	return s.out;
}

/* dep is a [plural, object] pair. */
static void dep_path(struct buf *p, const char *t, const char *ns, const json_t *dep)
{
	tpc_path(p, json_string_value(json_array_get(dep, 0)), t, ns,
		 json_path_str(json_array_get(dep, 1), "metadata.name"));
}

/* Removes the reference to uid from dep. */
static int unlink_dep(struct tpc *m, const char *t, const char *ns, const json_t *dep, const char *uid)
{
	json_t *refs = json_array();
	size_t i;
	json_t *r;
	json_array_foreach(json_path(json_array_get(dep, 1), "metadata.ownerReferences"), i, r) {
		const char *u = json_str(r, "uid");
		if (!u || strcmp(u, uid) != 0)
			json_array_append(refs, r);
	}
	json_t *patch = json_pack("{s:{s:o}}", "metadata", "ownerReferences", refs);
	struct buf p = BUF_INIT;
	dep_path(&p, t, ns, dep);
	int code = tpc_send(m, "PATCH", p.ptr, patch, NULL);
	buf_release(&p);
	json_decref(patch);
	return code == 200 || code == 404 ? 0 : E_UNAVAILABLE;
}

static int delete_dep(struct tpc *m, const char *t, const char *ns, const json_t *dep, const char *policy)
{
	json_t *body = json_pack("{s:s,s:s,s:s}", "kind", "DeleteOptions", "apiVersion", "v1", "propagationPolicy",
				 policy);
	struct buf p = BUF_INIT;
	dep_path(&p, t, ns, dep);
	int code = tpc_send(m, "DELETE", p.ptr, body, NULL);
	buf_release(&p);
	json_decref(body);
	return code == 200 || code == 202 || code == 404 ? 0 : E_UNAVAILABLE;
}

static int drop_finalizer(struct tpc *m, const char *path, const json_t *owner, const char *fin)
{
	json_t *left = json_array();
	size_t i;
	json_t *f;
	json_array_foreach(json_path(owner, "metadata.finalizers"), i, f)
		if (!json_is_string(f) || strcmp(json_string_value(f), fin) != 0)
			json_array_append(left, f);
	json_t *patch = json_pack("{s:{s:o}}", "metadata", "finalizers", left);
	int code = tpc_send(m, "PATCH", path, patch, NULL);
	json_decref(patch);
	return code == 200 || code == 404 ? 0 : E_UNAVAILABLE;
}

static bool has_finalizer(const json_t *obj, const char *fin)
{
	size_t i;
	json_t *f;
	json_array_foreach(json_path(obj, "metadata.finalizers"), i, f)
		if (json_is_string(f) && strcmp(json_string_value(f), fin) == 0)
			return true;
	return false;
}

static int owner_gone(struct tpc *m, const char *t, const char *ns, const char *uid, json_t *deps)
{
	int rc = 0;
	size_t i;
	json_t *d;
	json_array_foreach(deps, i, d) {
		int r = json_array_size(json_path(json_array_get(d, 1), "metadata.ownerReferences")) > 1 ? unlink_dep(m, t, ns, d, uid)
										   : delete_dep(m, t, ns, d, "Background");
		if (r < 0)
			rc = r;
	}
	return rc;
}

int tpc_sync_gc(struct tpc *m, const char *key)
{
	char *t = NULL, *ns = NULL, *rest = NULL;
	if (!tpc_split_key(key, &t, &ns, &rest))
		return 0;
	char *name = strchr(rest, ':'), *uid = name ? strchr(name + 1, ':') : NULL;
	json_t *owner = NULL, *deps = NULL;
	struct buf path = BUF_INIT;
	int rc = 0;
	if (!uid)
		goto out;
	*name++ = 0;
	*uid++ = 0;
	const char *plural = plural_of(rest);
	if (!plural)
		goto out;
	tpc_path(&path, plural, t, ns, name);
	int code = tpc_get(m, path.ptr, &owner);
	if (code != 200 && code != 404) {
		rc = E_UNAVAILABLE;
		goto out;
	}
	const char *ouid = code == 200 ? json_path_str(owner, "metadata.uid") : NULL;
	bool gone = !ouid || strcmp(ouid, uid) != 0;
	/* an owner alive and not being deleted (an informer lagged behind its dependent): nothing to
	 * do, and no list of its namespace */
	if (!gone && !json_path(owner, "metadata.deletionTimestamp"))
		goto out;
	deps = dependents(m, t, ns, uid, !gone);
	if (!deps) {
		rc = E_UNAVAILABLE;
		goto out;
	}
	if (gone) {
		rc = owner_gone(m, t, ns, uid, deps);
		if (rc == 0 && json_array_size(deps) > 0)
			log_info("deleted dependents of a deleted owner", "tenant=\"%s\" namespace=\"%s\" owner=%s/\"%s\" n=%zu",
				 t, ns, rest, name, json_array_size(deps));
		goto out;
	}
	if (!json_path(owner, "metadata.deletionTimestamp"))
		goto out;
	size_t i;
	json_t *d;
	if (has_finalizer(owner, "orphan")) {
		json_array_foreach(deps, i, d) if ((rc = unlink_dep(m, t, ns, d, uid)) < 0) goto out;
		rc = drop_finalizer(m, path.ptr, owner, "orphan");
	} else if (has_finalizer(owner, "foregroundDeletion")) {
		json_array_foreach(deps, i, d) {
			if (!json_path(json_array_get(d, 1), "metadata.deletionTimestamp") && (rc = delete_dep(m, t, ns, d, "Foreground")) < 0)
				goto out;
		}
		if (json_array_size(deps) > 0)
			wq_add_after(m->wq[CTL_GC], key, 500);
		else
			rc = drop_finalizer(m, path.ptr, owner, "foregroundDeletion");
	}
out:
	json_decref(owner);
	json_decref(deps);
	buf_release(&path);
	free(t), free(ns), free(rest);
	return rc;
}
