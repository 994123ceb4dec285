/* Namespace and tenant lifecycle: a namespace gets a default ServiceAccount; a deleted
 * namespace is emptied (custom resources of the CRDs its tenant sees included) and then
 * finalized; a tenant keeps its standard namespaces, and a deleted tenant is emptied (its custom
 * resources, every namespaced object, then its CRDs once no custom resource is left, then its
 * namespaces) and finalized. */
#include <stdlib.h>
#include <string.h>
#include "tpc.h"
#include "ursa/errors.h"
#include "ursa/ipnet.h"
#include "ursa/jsonutil.h"
#include "ursa/log.h"
#include "ursa/timeutil.h"
#include "ursa/xalloc.h"

/* Workloads first, so their controllers stop recreating what goes next. */
static const char *const contents[] = { "cronjobs", "jobs", "deployments", "replicasets", "statefulsets",
					"controllerrevisions", "persistentvolumeclaims",	"pods",	   "services", "endpoints", "endpointslices",
					"configmaps",  "secrets",	"leases",  "events",
					"serviceaccounts", "roles",	"rolebindings", "resourcequotas",
					"limitranges", "poddisruptionbudgets", "horizontalpodautoscalers" };
/* What a tenant holds outside its namespaces, deleted with the tenant (its default roles, last:
 * nothing acts for the tenant any more). */
static const char *const tenant_contents[] = { "networks", "persistentvolumes", "clusterrolebindings", "clusterroles" };

static json_t *list_items(struct tpc *m, const char *path, int *ret_code)
{
	json_t *l = NULL;
	*ret_code = tpc_get(m, path, &l);
	json_t *items = json_incref(json_object_get(l, "items"));
	json_decref(l);
	return items ? items : json_array();
}

static void delete_one(struct tpc *m, const char *path, bool force)
{
	json_t *body = json_pack("{s:s,s:s,s:s}", "kind", "DeleteOptions", "apiVersion", "v1", "propagationPolicy",
				 "Background");
	if (force)
		json_object_set_new(body, "gracePeriodSeconds", json_integer(0));
	tpc_send(m, "DELETE", path, body, NULL);
	json_decref(body);
}

/* An item's path, for delete_items: a built-in kind's (ud: its plural) or a custom one's (ud: its
 * struct tpc_crd_kind). */
struct item_path {
	void (*fn)(struct buf *out, const void *ud, const char *t, const char *ns, const char *name);
	const void *ud;
};

static void builtin_path(struct buf *out, const void *plural, const char *t, const char *ns, const char *name)
{
	tpc_path(out, plural, t, ns, name);
}

static void custom_path(struct buf *out, const void *kind, const char *t, const char *ns, const char *name)
{
	tpc_crd_path(out, kind, t, ns, name);
}

/* Deletes every listed object of t not already being deleted (force: those too); how many were
 * listed. */
static int delete_items(struct tpc *m, const json_t *items, const char *t, const struct item_path *ip, bool force)
{
	int n = 0;
	size_t i;
	json_t *o;
	json_array_foreach(items, i, o) {
		n++;
		if (json_path(o, "metadata.deletionTimestamp") && !force)
			continue;
		struct buf p = BUF_INIT;
		ip->fn(&p, ip->ud, t, json_path_str(o, "metadata.namespace"), json_path_str(o, "metadata.name"));
		delete_one(m, p.ptr, force);
		buf_release(&p);
	}
	return n;
}

/* Whether the namespace (ns NULL: the tenant) is still to be emptied: gone or terminating. A
 * purge decided on a read of a moment ago asks again before each kind it deletes, since a
 * tenant or namespace of the same name may be back meanwhile (ursactl restore makes one as soon
 * as the old one's objects are gone) and what it holds then is not the old one's. */
static bool doomed(struct tpc *m, const char *t, const char *ns)
{
	struct buf path = BUF_INIT;
	if (ns)
		tpc_path(&path, "namespaces", t, NULL, ns);
	else
		buf_addf(&path, "/api/v1/tenants/%s", t);
	json_t *obj = NULL;
	int code = tpc_get(m, path.ptr, &obj);
	bool d = code == 404 || (code == 200 && json_path(obj, "metadata.deletionTimestamp"));
	json_decref(obj);
	buf_release(&path);
	return d;
}

/* Deletes the custom resources of the kinds t sees in namespace ns (NULL: all of the tenant's,
 * cluster-scoped ones too); how many were still there, E_UNAVAILABLE, or E_CONFLICT (doomed no
 * more). A collection no longer served (404) is empty. */
static int purge_custom(struct tpc *m, const char *t, const char *ns, bool force)
{
	struct tpc_crd_kinds ks;
	if (tpc_crd_kinds_get(m, t, true, &ks) < 0)
		return E_UNAVAILABLE;
	int left = 0;
	for (size_t k = 0; k < ks.n && left >= 0; k++) {
		if (ns && !ks.v[k].namespaced)
			continue;
		struct buf path = BUF_INIT;
		tpc_crd_path(&path, &ks.v[k], t, ns, NULL);
		int code;
		json_t *items = list_items(m, path.ptr, &code);
		buf_release(&path);
		if (code != 200 && code != 404)
			left = E_UNAVAILABLE;
		else if (json_array_size(items) && !doomed(m, t, ns))
			left = E_CONFLICT;
		else
			left += delete_items(m, items, t, &(struct item_path){ custom_path, &ks.v[k] }, force);
		json_decref(items);
	}
	tpc_crd_kinds_release(&ks);
	return left;
}

/* Deletes the tenant's CRDs (their cleanup finalizer is left to the CRD cleanup controller);
 * how many were still there, E_UNAVAILABLE, or E_CONFLICT (the tenant is back: doomed). */
static int purge_crds(struct tpc *m, const char *t)
{
	struct buf path = BUF_INIT;
	tpc_path(&path, "customresourcedefinitions", t, NULL, NULL);
	int code, left = 0;
	json_t *items = list_items(m, path.ptr, &code);
	if (code != 200 && code != 404)
		left = E_UNAVAILABLE;
	else if (json_array_size(items) && !doomed(m, t, NULL))
		left = E_CONFLICT;
	else
		left = delete_items(m, items, t, &(struct item_path){ builtin_path, "customresourcedefinitions" }, false);
	json_decref(items);
	buf_release(&path);
	return left;
}

/* Deletes every object of the namespace (ns NULL: of the whole tenant, and then its CRDs);
 * returns how many were still there, E_UNAVAILABLE, or E_CONFLICT when the namespace or tenant
 * is no longer to be emptied (doomed). */
static int purge(struct tpc *m, const char *t, const char *ns, bool force)
{
	/* custom resources first (they may be what makes the workloads); CRDs after all of them */
	int left = purge_custom(m, t, ns, force);
	if (left < 0)
		return left;
	if (!ns && left == 0) {
		int n = purge_crds(m, t);
		if (n < 0)
			return n;
		left += n;
	}
	size_t nkinds = ARRAY_SIZE(contents) + (ns ? 0 : ARRAY_SIZE(tenant_contents));
	for (size_t k = 0; k < nkinds; k++) {
		const char *plural = k < ARRAY_SIZE(contents) ? contents[k] : tenant_contents[k - ARRAY_SIZE(contents)];
		struct buf path = BUF_INIT;
		tpc_path(&path, plural, t, ns, NULL);
		int code;
		json_t *items = list_items(m, path.ptr, &code);
		if (code != 200 && code != 404) {
			json_decref(items);
			buf_release(&path);
			return E_UNAVAILABLE;
		}
		if (json_array_size(items) && !doomed(m, t, ns)) {
			json_decref(items);
			buf_release(&path);
			return E_CONFLICT;
		}
		left += delete_items(m, items, t, &(struct item_path){ builtin_path, plural }, force);
		json_decref(items);
		buf_release(&path);
	}
	return left;
}

/* Drops spec.finalizers "kubernetes" and metadata.finalizers of a terminating object. */
static int finalize(struct tpc *m, const char *path, const json_t *obj)
{
	json_t *body = json_deep_copy(obj);
	json_t *spec = json_obj_child(body, "spec");
	json_object_set_new(spec, "finalizers", json_array());
	json_object_set_new(json_obj_child(body, "metadata"), "finalizers", json_array());
	int code = tpc_send(m, "PUT", path, body, NULL);
	json_decref(body);
	return code == 200 || code == 404 ? 0 : code == 409 ? E_CONFLICT : E_UNAVAILABLE;
}

static void ensure(struct tpc *m, const char *path, const char *coll, json_t *obj)
{
	json_t *cur = NULL;
	if (tpc_get(m, path, &cur) == 404)
		tpc_send(m, "POST", coll, obj, NULL);
	json_decref(cur);
	json_decref(obj);
}

static bool force_due(const json_t *obj)
{
	time_t t = 0;
	const char *s = json_path_str(obj, "metadata.deletionTimestamp");
	return s && rfc3339_parse(s, &t) == 0 && time(NULL) - t > 60;
}

int tpc_sync_namespace(struct tpc *m, const char *key)
{
	char *t = NULL, *ns = NULL, *name = NULL;
	if (!tpc_split_key(key, &t, &ns, &name))
		return 0;
	struct buf path = BUF_INIT;
	json_t *obj = NULL;
	int rc = 0;
	tpc_path(&path, "namespaces", t, NULL, ns);
	int code = tpc_get(m, path.ptr, &obj);
	if (code != 200 && code != 404) {
		rc = E_UNAVAILABLE;
		goto out;
	}
	if (code == 200 && !json_path(obj, "metadata.deletionTimestamp")) {
		struct buf sa = BUF_INIT, coll = BUF_INIT;
		tpc_path(&sa, "serviceaccounts", t, ns, "default");
		tpc_path(&coll, "serviceaccounts", t, ns, NULL);
		ensure(m, sa.ptr, coll.ptr,
		       json_pack("{s:s,s:s,s:{s:s}}", "apiVersion", "v1", "kind", "ServiceAccount", "metadata", "name",
				 "default"));
		buf_release(&sa);
		buf_release(&coll);
		goto out;
	}
	/* terminating, or already gone (its contents must not outlive it) */
	int left = purge(m, t, ns, code == 404 || force_due(obj));
	if (left == E_CONFLICT) {
		wq_add(m->wq[CTL_NAMESPACE], key); /* back meanwhile: what a live one gets */
	} else if (left < 0) {
		rc = left;
	} else if (left > 0) {
		wq_add_after(m->wq[CTL_NAMESPACE], key, 1000);
	} else if (code == 200) {
		rc = finalize(m, path.ptr, obj);
		if (rc == 0)
			log_info("namespace finalized", "tenant=\"%s\" namespace=\"%s\"", t, ns);
	}
out:
	json_decref(obj);
	buf_release(&path);
	free(t), free(ns), free(name);
	return rc;
}

int tpc_sync_tenant(struct tpc *m, const char *key)
{
	char *t = NULL, *ns = NULL, *name = NULL;
	if (!tpc_split_key(key, &t, &ns, &name))
		return 0;
	struct buf path = BUF_INIT, nsp = BUF_INIT;
	json_t *obj = NULL, *nss = NULL;
	int rc = 0, code;
	buf_addf(&path, "/api/v1/tenants/%s", t);
	code = tpc_get(m, path.ptr, &obj);
	if (code != 200 && code != 404) {
		rc = E_UNAVAILABLE;
		goto out;
	}
	tpc_path(&nsp, "namespaces", t, NULL, NULL);
	if (code == 200 && !json_path(obj, "metadata.deletionTimestamp")) {
		static const char *const std[] = { "default", "kube-system", "kube-public" };
		for (size_t i = 0; i < ARRAY_SIZE(std); i++) {
			struct buf p = BUF_INIT;
			tpc_path(&p, "namespaces", t, NULL, std[i]);
			ensure(m, p.ptr, nsp.ptr,
			       json_pack("{s:s,s:s,s:{s:s}}", "apiVersion", "v1", "kind", "Namespace", "metadata", "name",
					 std[i]));
			buf_release(&p);
		}
		/* the tenant's network (its controller makes the DNS service) */
		struct buf np = BUF_INIT, nc = BUF_INIT;
		tpc_path(&np, "networks", t, NULL, "default");
		tpc_path(&nc, "networks", t, NULL, NULL);
		ensure(m, np.ptr, nc.ptr,
		       json_pack("{s:s,s:s,s:{s:s},s:{s:s,s:s}}", "apiVersion", "arktos.futurewei.com/v1", "kind",
				 "Network", "metadata", "name", "default", "spec", "type", "flat", "serviceCIDR",
				 IPNET_DEFAULT_SERVICE_CIDR));
		buf_release(&np);
		buf_release(&nc);
		rc = tpc_final_backup(m, t, path.ptr, obj); /* its finalizer follows its annotation */
		if (rc > 0)
			rc = 0;
		goto out;
	}
	if (strcmp(t, "system") == 0)
		goto out;
	if (code == 200 && (rc = tpc_final_backup(m, t, path.ptr, obj)) != 0) {
		/* asked for a backup before it goes: written (then the tenant changes, and this runs
		 * again), or not yet */
		if (rc > 0)
			rc = 0;
		goto out;
	}
	/* everything inside first, then the namespaces, then the tenant */
	int left = purge(m, t, NULL, true);
	if (left == E_CONFLICT || (left >= 0 && !doomed(m, t, NULL))) {
		wq_add(m->wq[CTL_TENANT], key); /* back meanwhile: what a live one gets */
		goto out;
	}
	nss = list_items(m, nsp.ptr, &code);
	size_t i;
	json_t *n;
	json_array_foreach(nss, i, n) {
		struct buf p = BUF_INIT;
		tpc_path(&p, "namespaces", t, NULL, json_path_str(n, "metadata.name"));
		if (!json_path(n, "metadata.deletionTimestamp"))
			tpc_send(m, "DELETE", p.ptr, NULL, NULL);
		else if (left == 0)
			finalize(m, p.ptr, n);
		buf_release(&p);
		left++;
	}
	if (left < 0) {
		rc = left;
	} else if (left > 0) {
		wq_add_after(m->wq[CTL_TENANT], key, 1000);
	} else if (obj && json_path(obj, "metadata.deletionTimestamp")) {
		rc = finalize(m, path.ptr, obj);
		if (rc == 0)
			log_info("tenant finalized", "tenant=\"%s\"", t);
	}
out:
	json_decref(obj);
	json_decref(nss);
	buf_release(&path);
	buf_release(&nsp);
	free(t), free(ns), free(name);
	return rc;
}
