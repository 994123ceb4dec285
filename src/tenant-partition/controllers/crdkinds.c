/* The custom resource kinds each tenant has: its CustomResourceDefinitions and the system
 * tenant's that it has none of the same name of, read from the CRD objects alone (where the
 * custom resources are, not their schemas). */
#include <stdlib.h>
#include <string.h>
#include "tpc.h"
#include "ursa/errors.h"
#include "ursa/jsonutil.h"
#include "ursa/xalloc.h"

void tpc_crd_kind_release(struct tpc_crd_kind *k)
{
	free(k->tenant);
	free(k->name);
	free(k->uid);
	free(k->group);
	free(k->version);
	free(k->plural);
	free(k->kind);
	memset(k, 0, sizeof(*k));
}

void tpc_crd_kinds_release(struct tpc_crd_kinds *ks)
{
	for (size_t i = 0; i < ks->n; i++)
		tpc_crd_kind_release(&ks->v[i]);
	free(ks->v);
	ks->v = NULL;
	ks->n = 0;
}

/* The version the controllers use: the storage one if it is served, else the first served. */
static const char *use_version(const json_t *versions)
{
	const char *first = NULL;
	size_t i;
	json_t *v;
	json_array_foreach(versions, i, v) {
		const char *name = json_str(v, "name");
		if (!name || !json_is_true(json_object_get(v, "served")))
			continue;
		if (json_is_true(json_object_get(v, "storage")))
			return name;
		if (!first)
			first = name;
	}
	return first;
}

int tpc_crd_kind_parse(const json_t *crd, struct tpc_crd_kind *ret)
{
	memset(ret, 0, sizeof(*ret));
	const char *t = json_path_str(crd, "metadata.tenant"), *name = json_path_str(crd, "metadata.name");
	const char *group = json_path_str(crd, "spec.group"), *plural = json_path_str(crd, "spec.names.plural");
	const char *kind = json_path_str(crd, "spec.names.kind"), *scope = json_path_str(crd, "spec.scope");
	const char *version = use_version(json_path(crd, "spec.versions"));
	if (!t || !name || !group || !*group || !plural || !*plural || !kind || !*kind || !version || !scope ||
	    (strcmp(scope, "Namespaced") != 0 && strcmp(scope, "Cluster") != 0) || strchr(plural, '/') ||
	    strchr(group, '/') || strchr(version, '/'))
		return E_INVALID;
	const char *uid = json_path_str(crd, "metadata.uid");
	*ret = (struct tpc_crd_kind){ .tenant = xstrdup(t), .name = xstrdup(name), .uid = uid ? xstrdup(uid) : NULL,
				      .group = xstrdup(group), .version = xstrdup(version), .plural = xstrdup(plural),
				      .kind = xstrdup(kind), .namespaced = strcmp(scope, "Namespaced") == 0,
				      .terminating = json_path(crd, "metadata.deletionTimestamp") != NULL };
	return 0;
}

static bool tenant_has(const json_t *crds, const char *tenant, const char *name)
{
	size_t i;
	json_t *c;
	json_array_foreach(crds, i, c) {
		const char *t = json_path_str(c, "metadata.tenant"), *n = json_path_str(c, "metadata.name");
		if (t && n && strcmp(t, tenant) == 0 && strcmp(n, name) == 0)
			return true;
	}
	return false;
}

static void add_from(const json_t *crds, const char *tenant, const char *only, struct tpc_crd_kinds *ret)
{
	size_t i;
	json_t *c;
	json_array_foreach(crds, i, c) {
		const char *t = json_path_str(c, "metadata.tenant"), *n = json_path_str(c, "metadata.name");
		if (!t || !n || strcmp(t, only) != 0)
			continue;
		if (strcmp(only, tenant) != 0 && tenant_has(crds, tenant, n))
			continue; /* a system CRD the tenant shadows */
		struct tpc_crd_kind k;
		if (tpc_crd_kind_parse(c, &k) < 0)
			continue;
		ret->v = xrealloc(ret->v, (ret->n + 1) * sizeof(*ret->v));
		ret->v[ret->n++] = k;
	}
}

void tpc_crd_kinds_of(const json_t *crds, const char *tenant, struct tpc_crd_kinds *ret)
{
	ret->v = NULL;
	ret->n = 0;
	add_from(crds, tenant, tenant, ret);
	if (strcmp(tenant, "system") != 0)
		add_from(crds, tenant, "system", ret);
}

const struct tpc_crd_kind *tpc_crd_kinds_find(const struct tpc_crd_kinds *ks, const char *group_or_apiversion,
					      const char *kind)
{
	if (!group_or_apiversion || !kind)
		return NULL;
	const char *slash = strchr(group_or_apiversion, '/');
	size_t glen = slash ? (size_t)(slash - group_or_apiversion) : strlen(group_or_apiversion);
	for (size_t i = 0; i < ks->n; i++) {
		const struct tpc_crd_kind *k = &ks->v[i];
		if (strlen(k->group) == glen && strncmp(k->group, group_or_apiversion, glen) == 0 &&
		    strcmp(k->kind, kind) == 0)
			return k;
	}
	return NULL;
}

void tpc_crd_path(struct buf *out, const struct tpc_crd_kind *k, const char *tenant, const char *ns, const char *name)
{
	buf_addf(out, "/apis/%s/%s/tenants/%s", k->group, k->version, tenant);
	if (k->namespaced && ns && *ns)
		buf_addf(out, "/namespaces/%s", ns);
	buf_addf(out, "/%s", k->plural);
	if (name)
		buf_addf(out, "/%s", name);
}

char *tpc_cr_gc_kind(const char *kind, const char *api_version)
{
	const char *slash = api_version ? strchr(api_version, '/') : NULL;
	if (!kind || !*kind || strchr(kind, '.') || strchr(kind, ':') || strchr(kind, '/') || !slash ||
	    slash == api_version)
		return NULL;
	return xasprintf("%s.%.*s", kind, (int)(slash - api_version), api_version);
}

struct gather {
	json_t *out;
	const char *a, *b; /* tenants kept */
};

static void gather(void *ud, const json_t *crd)
{
	struct gather *g = ud;
	const char *t = json_path_str(crd, "metadata.tenant");
	if (t && (strcmp(t, g->a) == 0 || strcmp(t, g->b) == 0))
		json_array_append(g->out, (json_t *)crd);
}

int tpc_crd_kinds_get(struct tpc *m, const char *tenant, bool consistent, struct tpc_crd_kinds *ret)
{
	ret->v = NULL;
	ret->n = 0;
	json_t *crds = json_array();
	if (!consistent) {
		struct informer *inf = tpc_informer(m, INF_CRDS);
		if (!inf || !informer_synced(inf)) {
			json_decref(crds);
			return E_UNAVAILABLE;
		}
		struct gather g = { crds, tenant, "system" };
		informer_foreach(inf, gather, &g);
	} else {
		const char *ts[2] = { tenant, "system" };
		for (int i = 0; i < (strcmp(tenant, "system") == 0 ? 1 : 2); i++) {
			char *path = xasprintf("/apis/apiextensions.k8s.io/v1/tenants/%s/customresourcedefinitions", ts[i]);
			json_t *l = NULL;
			int code = tpc_get(m, path, &l);
			free(path);
			if (code == 404) { /* a server serving no CRDs */
				json_decref(l);
				continue;
			}
			if (code != 200) {
				json_decref(l);
				json_decref(crds);
				return E_UNAVAILABLE;
			}
			size_t j;
			json_t *c;
			json_array_foreach(json_object_get(l, "items"), j, c) {
				/* list items may omit metadata.tenant: the path says it */
				if (!json_path_str(c, "metadata.tenant"))
					json_object_set_new(json_obj_child(c, "metadata"), "tenant", json_string(ts[i]));
				json_array_append(crds, c);
			}
			json_decref(l);
		}
	}
	tpc_crd_kinds_of(crds, tenant, ret);
	json_decref(crds);
	return 0;
}
