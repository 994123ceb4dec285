/* Garbage collector over ownerReferences: dependents of a vanished owner are deleted
 * (background), an owner marked "orphan" has its references removed from its dependents, and
 * an owner marked "foregroundDeletion" goes only after its dependents are gone. Owners known:
 * Deployment, ReplicaSet, CronJob, Job, StatefulSet, Pod, ConfigMap and custom resources (of the
 * CRDs the owner's tenant sees); dependents seen: ReplicaSets, Jobs, Pods, ControllerRevisions
 * and custom resources. Keys are "tenant/namespace/Kind:name:uid", a custom resource's Kind
 * being "Kind.group" and a cluster-scoped owner's namespace empty. */
#include <stdlib.h>
#include <string.h>
#include "tpc.h"
#include "ursa/errors.h"
#include "ursa/jsonutil.h"
#include "ursa/log.h"
#include "ursa/xalloc.h"

struct builtin {
	const char *kind, *group, *plural;
	enum tpc_inf inf;
};
static const struct builtin builtins[] = {
	{ "Deployment", "apps", "deployments", INF_DEPLOY }, { "ReplicaSet", "apps", "replicasets", INF_RS },
	{ "Pod", "", "pods", INF_PODS },		     { "Job", "batch", "jobs", INF_JOBS },
	{ "CronJob", "batch", "cronjobs", INF_CRONJOBS },  { "StatefulSet", "apps", "statefulsets", INF_STS },
	{ "ConfigMap", "", "configmaps", INF_CONFIGMAPS },
};

/* The built-in owner kind named by kind (and apiVersion, when given), or NULL. */
static const struct builtin *builtin_of(const char *kind, const char *api_version)
{
	for (size_t i = 0; kind && i < ARRAY_SIZE(builtins); i++) {
		if (strcmp(kind, builtins[i].kind) != 0)
			continue;
		if (!api_version)
			return &builtins[i];
		const char *slash = strchr(api_version, '/');
		size_t glen = slash ? (size_t)(slash - api_version) : 0;
		if (strlen(builtins[i].group) == glen && strncmp(api_version, builtins[i].group, glen) == 0)
			return &builtins[i];
		return NULL;
	}
	return NULL;
}

static void enqueue(struct tpc *m, const char *t, const char *ns, const char *kind, const char *name, const char *uid)
{
	if (!t || !ns || !kind || !name || !uid || (!builtin_of(kind, NULL) && !strchr(kind, '.')))
		return;
	char *k = xasprintf("%s/%s/%s:%s:%s", t, ns, kind, name, uid);
	wq_add(m->wq[CTL_GC], k);
	free(k);
}

void tpc_gc_enqueue_self(struct tpc *m, const json_t *obj, const char *kind)
{
	const char *ns = json_path_str(obj, "metadata.namespace");
	enqueue(m, json_path_str(obj, "metadata.tenant"), ns ? ns : "", kind, json_path_str(obj, "metadata.name"),
		json_path_str(obj, "metadata.uid"));
}

static bool alive(const json_t *o, const char *uid)
{
	const char *ouid = json_path_str(o, "metadata.uid");
	return o && ouid && strcmp(ouid, uid) == 0 && !json_path(o, "metadata.deletionTimestamp");
}

void tpc_gc_enqueue_owners(struct tpc *m, const json_t *obj)
{
	/* ns NULL: a cluster-scoped dependent (a custom resource of scope Cluster) */
	const char *t = json_path_str(obj, "metadata.tenant"), *ns = json_path_str(obj, "metadata.namespace");
	size_t i;
	json_t *r;
	json_array_foreach(json_path(obj, "metadata.ownerReferences"), i, r) {
		const char *kind = json_str(r, "kind"), *name = json_str(r, "name"), *uid = json_str(r, "uid");
		const char *av = json_str(r, "apiVersion");
		if (!kind || !name || !uid || !t)
			continue;
		const struct builtin *b = builtin_of(kind, av);
		if (b) {
			if (!ns)
				continue;
			/* owner alive and not being deleted in the local cache: nothing to do */
			char *k = xasprintf("%s/%s/%s", t, ns, name);
			struct informer *in = tpc_informer(m, b->inf);
			json_t *o = in ? informer_get(in, k) : NULL;
			free(k);
			if (!alive(o, uid))
				enqueue(m, t, ns, kind, name, uid);
			json_decref(o);
			continue;
		}
		/* a custom resource: only kinds the tenant has (an informer runs for each) */
		char *gk = tpc_cr_gc_kind(kind, av);
		if (!gk)
			continue;
		json_t *o = NULL;
		bool namespaced = false;
		int rc = tpc_crwatch_owner(m, t, strchr(gk, '.') + 1, kind, ns, name, &o, &namespaced);
		if (rc < 0 || (rc > 0 && !alive(o, uid) && (ns || !namespaced)))
			enqueue(m, t, namespaced ? ns : "", gk, name, uid);
		json_decref(o);
		free(gk);
	}
}

struct scan {
	struct tpc *m;
	const char *t, *ns, *uid, *plural; /* ns "": a cluster-scoped owner, dependents anywhere in t */
	json_t *out; /* [[path, object], ...] */
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

static bool in_scope(const struct scan *s, const json_t *obj)
{
	const char *t = json_path_str(obj, "metadata.tenant"), *ns = json_path_str(obj, "metadata.namespace");
	return t && strcmp(t, s->t) == 0 && (!*s->ns || (ns && strcmp(ns, s->ns) == 0)) && refers_to(obj, s->uid);
}

static void collect(void *ud, const json_t *obj)
{
	struct scan *s = ud;
	if (!in_scope(s, obj))
		return;
	struct buf p = BUF_INIT;
	tpc_path(&p, s->plural, s->t, json_path_str(obj, "metadata.namespace"), json_path_str(obj, "metadata.name"));
	json_array_append_new(s->out, json_pack("[s,O]", p.ptr, obj));
	buf_release(&p);
}

static void collect_cr(void *ud, const struct tpc_crd_kind *k, const char *tenant, const json_t *obj)
{
	struct scan *s = ud;
	if (!in_scope(s, obj))
		return;
	struct buf p = BUF_INIT;
	tpc_crd_path(&p, k, tenant, json_path_str(obj, "metadata.namespace"), json_path_str(obj, "metadata.name"));
	json_array_append_new(s->out, json_pack("[s,O]", p.ptr, obj));
	buf_release(&p);
}

/* The synced informer holding plural, or NULL. */
static struct informer *cached(struct tpc *m, const char *plural)
{
	enum tpc_inf i = !strcmp(plural, "pods") ? INF_PODS : !strcmp(plural, "jobs") ? INF_JOBS
			 : !strcmp(plural, "replicasets") ? INF_RS : INF__N;
	struct informer *inf = i == INF__N ? NULL : tpc_informer(m, i);
	return inf && informer_synced(inf) ? inf : NULL;
}

/* Lists path and collects its items (k NULL: built-in s->plural); false when it failed. A
 * custom resource collection that is not served (404) is empty. */
static bool collect_list(struct scan *s, const char *path, const struct tpc_crd_kind *k)
{
	json_t *list = NULL;
	int code = tpc_get(s->m, path, &list);
	if (code != 200 && !(k && code == 404)) {
		json_decref(list);
		return false;
	}
	size_t i;
	json_t *o;
	json_array_foreach(json_object_get(list, "items"), i, o) {
		if (!json_path_str(o, "metadata.tenant"))
			json_object_set_new(json_obj_child(o, "metadata"), "tenant", json_string(s->t));
		if (k)
			collect_cr(s, k, s->t, o);
		else
			collect(s, o);
	}
	json_decref(list);
	return true;
}

/* Dependents of uid in t/ns (ns "": anywhere in t). consistent: from lists of the API server
 * (the informers may not have seen a dependent created a moment ago, and orphaning must reach
 * every one); else from the informers where they have synced (for deleting the dependents of a
 * vanished owner: one the informer has not seen yet queues its owner again when it shows up
 * there). ks: the custom resource kinds of t. New array, or NULL if a list failed. */
static json_t *dependents(struct tpc *m, const char *t, const char *ns, const char *uid, bool consistent,
			  const struct tpc_crd_kinds *ks)
{
	static const char *const plurals[] = { "replicasets", "jobs", "pods", "controllerrevisions" };
	struct scan s = { m, t, ns, uid, NULL, json_array() };
	for (size_t k = 0; k < ARRAY_SIZE(plurals); k++) {
		struct informer *inf = consistent ? NULL : cached(m, plurals[k]);
		s.plural = plurals[k];
		if (inf) {
			if (*ns)
				informer_foreach_ns(inf, t, ns, collect, &s);
			else
				informer_foreach(inf, collect, &s);
			continue;
		}
		if (!*ns && strcmp(plurals[k], "controllerrevisions") == 0)
			continue; /* only StatefulSets own those */
		struct buf path = BUF_INIT;
		tpc_path(&path, plurals[k], t, *ns ? ns : NULL, NULL);
		bool ok = collect_list(&s, path.ptr, NULL);
		buf_release(&path);
		if (!ok)
			goto fail;
	}
	if (!consistent) {
		struct scan cs = s;
		cs.out = json_array();
		bool all = tpc_crwatch_foreach(m, t, ns, collect_cr, &cs);
		if (all)
			json_array_extend(s.out, cs.out);
		json_decref(cs.out);
		if (all)
			return s.out;
	}
	for (size_t k = 0; k < ks->n; k++) {
		if (*ns && !ks->v[k].namespaced)
			continue;
		struct buf path = BUF_INIT;
		tpc_crd_path(&path, &ks->v[k], t, *ns ? ns : NULL, NULL);
		bool ok = collect_list(&s, path.ptr, &ks->v[k]);
		buf_release(&path);
		if (!ok)
			goto fail;
	}
	return s.out;
fail:
	json_decref(s.out);
	return NULL;
}

/* Removes the reference to uid from dep. */
static int unlink_dep(struct tpc *m, const json_t *dep, const char *uid)
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
	int code = tpc_send(m, "PATCH", json_string_value(json_array_get(dep, 0)), patch, NULL);
	json_decref(patch);
	return code == 200 || code == 404 ? 0 : E_UNAVAILABLE;
}

static int delete_dep(struct tpc *m, const json_t *dep, const char *policy)
{
	json_t *body = json_pack("{s:s,s:s,s:s}", "kind", "DeleteOptions", "apiVersion", "v1", "propagationPolicy",
				 policy);
	int code = tpc_send(m, "DELETE", json_string_value(json_array_get(dep, 0)), body, NULL);
	json_decref(body);
	return code == 200 || code == 202 || code == 404 ? 0 : E_UNAVAILABLE;
}

static int owner_gone(struct tpc *m, const char *uid, json_t *deps)
{
	int rc = 0;
	size_t i;
	json_t *d;
	json_array_foreach(deps, i, d) {
		int r = json_array_size(json_path(json_array_get(d, 1), "metadata.ownerReferences")) > 1
				? unlink_dep(m, d, uid)
				: delete_dep(m, d, "Background");
		if (r < 0)
			rc = r;
	}
	return rc;
}

/* The path of the owner kind ("ReplicaSet", "CronTab.stable.example.com") named name in t/ns
 * (ns "": cluster-scoped), appended: 1; 0 when kind is a custom resource kind t does not have
 * (any more); E_UNAVAILABLE. */
static int owner_path(struct tpc *m, const char *t, const char *ns, const char *kind, const char *name,
		      struct tpc_crd_kinds *ks, struct buf *out)
{
	const struct builtin *b = builtin_of(kind, NULL);
	if (b && !strchr(kind, '.')) {
		if (!*ns)
			return 0;
		tpc_path(out, b->plural, t, ns, name);
		return 1;
	}
	const char *dot = strchr(kind, '.');
	if (!dot)
		return 0;
	char *k = xstrndup(kind, (size_t)(dot - kind));
	const struct tpc_crd_kind *ck = NULL;
	int rc = tpc_crd_kinds_get(m, t, false, ks);
	if (rc == 0)
		ck = tpc_crd_kinds_find(ks, dot + 1, k);
	if (!ck) {
		/* not in the informer (yet, or any more): ask the server */
		tpc_crd_kinds_release(ks);
		rc = tpc_crd_kinds_get(m, t, true, ks);
		ck = rc == 0 ? tpc_crd_kinds_find(ks, dot + 1, k) : NULL;
	}
	free(k);
	if (rc < 0)
		return rc;
	if (!ck || ck->namespaced != (*ns != 0))
		return 0;
	tpc_crd_path(out, ck, t, ns, name);
	return 1;
}

int tpc_sync_gc(struct tpc *m, const char *key)
{
	if (strcmp(key, TPC_CRWATCH_KEY) == 0)
		return tpc_crwatch_sync(m);
	char *t = NULL, *ns = NULL, *rest = NULL;
	if (!tpc_split_key(key, &t, &ns, &rest))
		return 0;
	char *name = strchr(rest, ':'), *uid = name ? strchr(name + 1, ':') : NULL;
	json_t *owner = NULL, *deps = NULL;
	struct buf path = BUF_INIT;
	struct tpc_crd_kinds ks = { 0 };
	int rc = 0, code = 404;
	if (!uid)
		goto out;
	*name++ = 0;
	*uid++ = 0;
	/* a custom resource kind no longer defined: its objects are gone */
	int known = owner_path(m, t, ns, rest, name, &ks, &path);
	if (known < 0) {
		rc = known;
		goto out;
	}
	if (known == 0 && !strchr(rest, '.'))
		goto out;
	if (known > 0) {
		code = tpc_get(m, path.ptr, &owner);
		if (code != 200 && code != 404) {
			rc = E_UNAVAILABLE;
			goto out;
		}
	}
	const char *ouid = code == 200 ? json_path_str(owner, "metadata.uid") : NULL;
	bool gone = !ouid || strcmp(ouid, uid) != 0;
	/* an owner alive and not being deleted (an informer lagged behind its dependent): nothing to
	 * do, and no list of its namespace */
	if (!gone && !json_path(owner, "metadata.deletionTimestamp"))
		goto out;
	if (known == 0 || builtin_of(rest, NULL)) {
		/* the kinds of custom resources that may depend on it */
		tpc_crd_kinds_release(&ks);
		rc = tpc_crd_kinds_get(m, t, !gone, &ks);
		if (rc < 0 && !gone)
			goto out;
		if (rc < 0 && (rc = tpc_crd_kinds_get(m, t, true, &ks)) < 0)
			goto out;
	}
	deps = dependents(m, t, ns, uid, !gone, &ks);
	if (!deps) {
		rc = E_UNAVAILABLE;
		goto out;
	}
	if (gone) {
		rc = owner_gone(m, uid, deps);
		if (rc == 0 && json_array_size(deps) > 0)
			log_info("deleted dependents of a deleted owner", "tenant=\"%s\" namespace=\"%s\" owner=%s/\"%s\" n=%zu",
				 t, ns, rest, name, json_array_size(deps));
		goto out;
	}
	size_t i;
	json_t *d;
	if (json_has_finalizer(owner, "orphan")) {
		json_array_foreach(deps, i, d) if ((rc = unlink_dep(m, d, uid)) < 0) goto out;
		rc = tpc_set_finalizer(m, path.ptr, owner, "orphan", false);
	} else if (json_has_finalizer(owner, "foregroundDeletion")) {
		json_array_foreach(deps, i, d) {
			if (!json_path(json_array_get(d, 1), "metadata.deletionTimestamp") &&
			    (rc = delete_dep(m, d, "Foreground")) < 0)
				goto out;
		}
		if (json_array_size(deps) > 0)
			wq_add_after(m->wq[CTL_GC], key, 500);
		else
			rc = tpc_set_finalizer(m, path.ptr, owner, "foregroundDeletion", false);
	}
out:
	json_decref(owner);
	json_decref(deps);
	tpc_crd_kinds_release(&ks);
	buf_release(&path);
	free(t), free(ns), free(rest);
	return rc;
}
