/* Non-resource endpoints: /version, health, /metrics, discovery (legacy, and aggregated at /api
 * and /apis for clients that ask for it, both with entity tags); the OpenAPI documents are
 * openapi.c's. All generated from the resource table and, for discovery, the caller's tenant's
 * custom resources (crd.c). */
#include "internal.h"
#include "ursa/apidisc.h"
#include "ursa/crd.h"
#include "ursa/jsonutil.h"
#include "ursa/lru.h"
#include "ursa/xalloc.h"
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

static const char *const all_verbs[] = { "create", "delete", "deletecollection", "get", "list", "patch", "update", "watch" };

static const struct {
	unsigned bit;
	const char *name, *group, *version, *kind;
	const char *verbs[4];
} subresource_table[] = {
	{ SUB_STATUS, "status", NULL, NULL, NULL, { "get", "patch", "update", NULL } },
	{ SUB_SCALE, "scale", "autoscaling", "v1", "Scale", { "get", "patch", "update", NULL } },
	{ SUB_BINDING, "binding", "", "v1", "Binding", { "create", NULL } },
	{ SUB_EVICTION, "eviction", "policy", "v1", "Eviction", { "create", NULL } },
	{ SUB_LOG, "log", "", "v1", "Pod", { "get", NULL } },
	{ SUB_TOKEN, "token", "authentication.k8s.io", "v1", "TokenRequest", { "create", NULL } },
	{ SUB_EXEC, "exec", "", "v1", "PodExecOptions", { "create", "get", NULL } },
	{ SUB_EXEC, "attach", "", "v1", "PodAttachOptions", { "create", "get", NULL } },
	{ SUB_EXEC, "portforward", "", "v1", "PodPortForwardOptions", { "create", "get", NULL } },
};

static void reply_text(struct http_reply *rp, int code, const char *ct, const char *text)
{
	struct buf b = BUF_INIT;
	buf_adds(&b, text);
	http_reply_set(rp, code, ct, &b);
}

static void reply_obj(struct http_reply *rp, json_t *obj /* stolen */)
{
	struct buf b = BUF_INIT;
	json_dump_buf(obj, &b);
	json_decref(obj);
	http_reply_set(rp, 200, "application/json", &b);
}

/* Every watch cache of the table has its first state (custom resources' caches, made at run
 * time, are not the server's readiness), and the authorizer holds the RBAC objects (before,
 * requests RBAC decides would get 503). */
static bool all_caches_ready(struct apiserver *s)
{
	for (size_t i = 0; i < s->nres; i++)
		if (s->res[i].cache && !wcache_ready(s->res[i].cache))
			return false;
	return authz_ready(s);
}

static void serve_readyz(struct apiserver *s, struct http_reply *rp)
{
	bool etcd_ok = atomic_load(&s->etcd_ok), caches = all_caches_ready(s);
	if (etcd_ok && caches) {
		reply_text(rp, 200, "text/plain", "ok");
		return;
	}
	struct buf b = BUF_INIT;
	buf_addf(&b, "[%s]etcd %s\n[%s]informer-sync %s\nreadyz check failed", etcd_ok ? "+" : "-",
		 etcd_ok ? "ok" : "failed: etcd is unreachable", caches ? "+" : "-",
		 caches ? "ok" : "failed: watch caches not yet synced");
	http_reply_set(rp, 503, "text/plain", &b);
}

/* What a caller sees: the table's resources, then its tenant's custom resources (crd_view_get:
 * by group, then version, then plural). */
struct dset {
	const struct api_resource **r;
	size_t n, nbuiltin;
	struct crd_view view;
};

static void dset_get(struct apiserver *s, const char *tenant, struct dset *ret)
{
	*ret = (struct dset){ 0 };
	if (s->crds && tenant)
		crd_view_get(s, tenant, &ret->view);
	ret->r = xmalloc((s->nres + ret->view.n + 1) * sizeof(*ret->r));
	for (size_t i = 0; i < s->nres; i++)
		ret->r[ret->n++] = s->res[i].r;
	ret->nbuiltin = ret->n;
	for (size_t i = 0; i < ret->view.n; i++)
		if (ret->view.sv[i] && ret->view.sv[i]->r && ret->view.sv[i]->r->crd)
			ret->r[ret->n++] = ret->view.sv[i]->r;
}

static void dset_release(struct dset *d)
{
	free(d->r);
	crd_view_release(&d->view);
}

/* Kubernetes' version priority (CRD versions in discovery): "v<major>[(alpha|beta)<minor>]"
 * names first, GA before beta before alpha, higher major then higher minor first; other names
 * after them, alphabetically. */
static bool kube_version(const char *v, long *major, int *stability, long *minor)
{
	if (v[0] != 'v' || v[1] < '0' || v[1] > '9')
		return false;
	char *end;
	*major = strtol(v + 1, &end, 10);
	*minor = 0;
	*stability = 2;
	if (!*end)
		return true;
	if (strncmp(end, "alpha", 5) == 0) {
		*stability = 0;
		end += 5;
	} else if (strncmp(end, "beta", 4) == 0) {
		*stability = 1;
		end += 4;
	} else {
		return false;
	}
	if (*end < '0' || *end > '9')
		return false;
	*minor = strtol(end, &end, 10);
	return !*end;
}

int discovery_version_cmp(const char *a, const char *b)
{
	long ma, mb, na, nb;
	int sa, sb;
	bool ka = kube_version(a, &ma, &sa, &na), kb = kube_version(b, &mb, &sb, &nb);
	if (ka != kb)
		return ka ? -1 : 1;
	if (!ka)
		return strcmp(a, b);
	if (sa != sb)
		return sa > sb ? -1 : 1;
	if (ma != mb)
		return ma > mb ? -1 : 1;
	if (na != nb)
		return na > nb ? -1 : 1;
	return 0;
}

static int cmp_version_json(const void *a, const void *b)
{
	const json_t *va = *(json_t *const *)a, *vb = *(json_t *const *)b;
	return discovery_version_cmp(json_str(va, "version"), json_str(vb, "version"));
}

/* Groups in order (the table's, then custom resources'), each once; the core group is not
 * one. Returns the count; *ret (free it) holds borrowed names. */
static size_t groups_of(const struct dset *d, const char ***ret)
{
	size_t n = 0;
	*ret = xmalloc((d->n + 1) * sizeof(**ret));
	for (size_t i = 0; i < d->n; i++) {
		const char *g = d->r[i]->group;
		bool seen = !g[0];
		for (size_t j = 0; j < n && !seen; j++)
			seen = strcmp((*ret)[j], g) == 0;
		if (!seen)
			(*ret)[n++] = g;
	}
	return n;
}

/* A group's versions, each once (the first is the preferred one), as GroupVersionForDiscovery
 * objects: the table's in table order; a custom resources' group's by version priority. */
static json_t *versions_of_group(const struct dset *d, const char *g)
{
	json_t *vers = json_array();
	size_t nbuiltin = 0;
	for (size_t i = 0; i < d->n; i++) {
		const struct api_resource *r = d->r[i];
		if (strcmp(r->group, g) != 0)
			continue;
		bool seen = false;
		size_t k;
		json_t *v;
		json_array_foreach(vers, k, v)
			seen = seen || strcmp(json_string_value(json_object_get(v, "version")), r->version) == 0;
		if (seen)
			continue;
		char *gv = xasprintf("%s/%s", g, r->version);
		json_array_append_new(vers, json_pack("{s:s,s:s}", "groupVersion", gv, "version", r->version));
		free(gv);
		if (i < d->nbuiltin)
			nbuiltin = json_array_size(vers);
	}
	size_t n = json_array_size(vers);
	if (n > nbuiltin + 1) {
		json_t **v = xmalloc(n * sizeof(*v));
		for (size_t i = 0; i < n; i++)
			v[i] = json_incref(json_array_get(vers, i));
		qsort(v + nbuiltin, n - nbuiltin, sizeof(*v), cmp_version_json);
		json_array_clear(vers);
		for (size_t i = 0; i < n; i++)
			json_array_append_new(vers, v[i]);
		free(v);
	}
	if (json_array_size(vers) == 0)
		json_array_append_new(vers, json_pack("{s:s,s:s}", "groupVersion", g, "version", "v1"));
	return vers;
}

static json_t *group_json(const struct dset *d, const char *g)
{
	json_t *vers = versions_of_group(d, g);
	return json_pack("{s:s,s:o,s:O}", "name", g, "versions", vers, "preferredVersion", json_array_get(vers, 0));
}

static json_t *verbs_json(const char *const *v, size_t n)
{
	json_t *a = json_array();
	for (size_t i = 0; i < n && v[i]; i++)
		json_array_append_new(a, json_string(v[i]));
	return a;
}

/* Kubernetes' `all` category (kubectl get all), less replicationcontrollers, which no Ursa
 * server serves; only resources a server serves reach its discovery. */
static bool in_category_all(const struct api_resource *r)
{
	static const char *const all[][2] = { { "", "pods" },
					      { "", "services" },
					      { "apps", "daemonsets" },
					      { "apps", "deployments" },
					      { "apps", "replicasets" },
					      { "apps", "statefulsets" },
					      { "autoscaling", "horizontalpodautoscalers" },
					      { "batch", "jobs" },
					      { "batch", "cronjobs" } };
	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
		if (strcmp(r->group, all[i][0]) == 0 && strcmp(r->plural, all[i][1]) == 0)
			return true;
	return false;
}

static json_t *strings_json(char *const *v, size_t n)
{
	json_t *a = json_array();
	for (size_t i = 0; i < n; i++)
		json_array_append_new(a, json_string(v[i]));
	return a;
}

/* The SUB_* bits of r: a custom resource's from its version's subresources. */
static unsigned subresources_of(const struct api_resource *r)
{
	if (!r->crd)
		return r->subresources;
	return (r->crd_version && r->crd_version->status ? SUB_STATUS : 0u) |
	       (r->crd_version && r->crd_version->scale ? SUB_SCALE : 0u);
}

static json_t *resource_entry(const struct api_resource *r)
{
	json_t *shorts;
	if (r->crd) {
		shorts = strings_json(r->crd->short_names, r->crd->nshort);
	} else {
		shorts = json_array();
		for (size_t k = 0; k < 4 && r->short_names[k]; k++)
			json_array_append_new(shorts, json_string(r->short_names[k]));
	}
	const char *singular = r->crd && r->crd->singular ? r->crd->singular : r->singular;
	json_t *e = json_pack("{s:s,s:s,s:b,s:s,s:o,s:o}", "name", r->plural, "singularName", singular ? singular : "",
			      "namespaced", r->scope == SCOPE_NAMESPACE, "kind", r->kind, "verbs",
			      r->ephemeral ? verbs_json((const char *const[]){ "create" }, 1)
			      : r->metrics ? verbs_json((const char *const[]){ "get", "list" }, 2)
					   : verbs_json(all_verbs, 8),
			      "shortNames", shorts);
	if (r->crd && r->crd->ncategories)
		json_object_set_new(e, "categories", strings_json(r->crd->categories, r->crd->ncategories));
	else if (in_category_all(r))
		json_object_set_new(e, "categories", json_pack("[s]", "all"));
	return e;
}

static json_t *resource_list(const struct dset *d, const char *group, const char *version)
{
	json_t *list = json_array();
	for (size_t i = 0; i < d->n; i++) {
		const struct api_resource *r = d->r[i];
		if (strcmp(r->group, group) != 0 || strcmp(r->version, version) != 0)
			continue;
		json_array_append_new(list, resource_entry(r));
		unsigned subs = subresources_of(r);
		for (size_t k = 0; k < sizeof(subresource_table) / sizeof(subresource_table[0]); k++) {
			if (!(subs & subresource_table[k].bit))
				continue;
			char *name = xasprintf("%s/%s", r->plural, subresource_table[k].name);
			json_t *se = json_pack("{s:s,s:s,s:b,s:s,s:o}", "name", name, "singularName", "", "namespaced",
					       r->scope == SCOPE_NAMESPACE, "kind",
					       subresource_table[k].kind ? subresource_table[k].kind : r->kind, "verbs",
					       verbs_json(subresource_table[k].verbs, 4));
			if (subresource_table[k].group && subresource_table[k].group[0]) {
				json_object_set_new(se, "group", json_string(subresource_table[k].group));
				json_object_set_new(se, "version", json_string(subresource_table[k].version));
			}
			json_array_append_new(list, se);
			free(name);
		}
	}
	char *gv = group[0] ? xasprintf("%s/%s", group, version) : xstrdup(version);
	json_t *j = json_pack("{s:s,s:s,s:s,s:o}", "kind", "APIResourceList", "apiVersion", "v1", "groupVersion", gv,
			      "resources", list);
	free(gv);
	return j;
}

static bool group_served(const struct dset *d, const char *g, const char *v)
{
	for (size_t i = 0; i < d->n; i++)
		if (strcmp(d->r[i]->group, g) == 0 && (!v || strcmp(d->r[i]->version, v) == 0))
			return true;
	return false;
}

/* Built documents, by what they were built from: the server, the tenant's view of custom
 * resources (its generation; tenants without any share the built-in documents), the path and the
 * form. A tenant with 1,000 CRDs has a 400 KB aggregated document that takes 20 ms to build: a
 * revalidation (If-None-Match, as the gateway asks on every request) must not build it again.
 * Bounded: DCACHE_MAX entries and DCACHE_BYTES, the least recently used going first. */
#define DCACHE_MAX 4096
#define DCACHE_BYTES (64u << 20)
struct dent {
	struct buf body, etag;
	const char *ct;
};
static pthread_mutex_t dcache_mu = PTHREAD_MUTEX_INITIALIZER;
static struct lru dcache;
static bool dcache_init;

static void dent_free(void *v)
{
	struct dent *e = v;
	buf_release(&e->body);
	buf_release(&e->etag);
	free(e);
}

/* Replies with the document in e (copied under the lock) or 304 when If-None-Match holds its tag. */
static void reply_cached(struct req *q, const struct dent *e)
{
	http_reply_header(q->reply, "ETag", buf_cstr(&e->etag));
	http_reply_header(q->reply, "Vary", "Accept");
	if (apidisc_etag_matches(http_header(q->http, "If-None-Match"), buf_cstr(&e->etag))) {
		http_reply_set(q->reply, 304, e->ct, NULL);
	} else {
		struct buf b = BUF_INIT;
		buf_add(&b, e->body.ptr, e->body.len);
		http_reply_set(q->reply, 200, e->ct, &b);
	}
}

/* true when key's document was cached (and the reply sent). */
static bool dcache_reply(struct req *q, const char *key)
{
	pthread_mutex_lock(&dcache_mu);
	struct dent *e = dcache_init ? lru_get(&dcache, key) : NULL;
	if (e)
		reply_cached(q, e);
	pthread_mutex_unlock(&dcache_mu);
	return e != NULL;
}

/* Caches obj (stolen) as ct under key and replies with it (or 304). */
static void reply_discovery(struct req *q, const char *key, json_t *obj, const char *ct)
{
	struct dent *d = xcalloc(1, sizeof(*d));
	json_dump_buf(obj, &d->body);
	json_decref(obj);
	apidisc_etag(d->body.ptr, d->body.len, &d->etag);
	d->ct = ct;
	reply_cached(q, d);
	pthread_mutex_lock(&dcache_mu);
	if (!dcache_init) {
		lru_init(&dcache, DCACHE_MAX, DCACHE_BYTES, dent_free);
		dcache_init = true;
	}
	if (!lru_put(&dcache, key, d, d->body.len + d->etag.len))
		dent_free(d); /* never pinned here */
	pthread_mutex_unlock(&dcache_mu);
}

/* The aggregated form of /api (core) or /apis (every other group): each group's
 * APIResourceLists, built by resource_list exactly as /api/v1 and /apis/<g>/<v> serve them,
 * reshaped by apidisc_group. */
static json_t *aggregated(const struct dset *d, bool core, enum apidisc_form f)
{
	const char **gs = NULL;
	size_t ng = core ? 1 : groups_of(d, &gs);
	json_t *items = json_array();
	for (size_t i = 0; i < ng; i++) {
		const char *g = core ? "" : gs[i];
		json_t *vers = versions_of_group(d, g), *v;
		json_t **lists = xmalloc((json_array_size(vers) + 1) * sizeof(*lists));
		size_t k, n = 0;
		json_array_foreach(vers, k, v) if (group_served(d, g, json_str(v, "version")))
			lists[n++] = resource_list(d, g, json_str(v, "version"));
		json_array_append_new(items, apidisc_group(g, lists, n));
		for (k = 0; k < n; k++)
			json_decref(lists[k]);
		free(lists);
		json_decref(vers);
	}
	free(gs);
	return apidisc_list(f, items);
}

/* Answers for the caller's tenant (discovery paths name none): the table's resources and the
 * custom resources its CustomResourceDefinitions serve. */
void serve_discovery(struct req *q)
{
	struct apiserver *s = q->s;
	const struct path_info *p = &q->path;
	struct dset d;
	dset_get(s, p->legacy_core ? NULL : q->id.tenant, &d);
	enum apidisc_form f = p->kind == PATH_DISCOVERY_ROOT ? apidisc_negotiate(http_header(q->http, "Accept"))
							      : APIDISC_LEGACY;
	char *key = xasprintf("%p\n%s\n%llu\n%s\n%d\n%s\n%s\n%s", (void *)s, d.view.n ? q->id.tenant : "",
			      (unsigned long long)d.view.gen, p->legacy_core ? "api" : "apis", (int)f,
			      p->group ? p->group : "", p->version ? p->version : "", p->kind == PATH_DISCOVERY_GROUP ? "g" : "");
	if (dcache_reply(q, key))
		goto out;
	switch (p->kind) {
	case PATH_DISCOVERY_ROOT:
		if (f != APIDISC_LEGACY) {
			reply_discovery(q, key, aggregated(&d, p->legacy_core, f), apidisc_content_type(f));
		} else if (p->legacy_core) {
			reply_discovery(q, key,
					json_pack("{s:s,s:[s],s:[{s:s,s:s}]}", "kind", "APIVersions", "versions", "v1",
						  "serverAddressByClientCIDRs", "clientCIDR", "0.0.0.0/0", "serverAddress",
						  s->o.listen),
					"application/json");
		} else {
			json_t *groups = json_array();
			const char **gs;
			size_t n = groups_of(&d, &gs);
			for (size_t i = 0; i < n; i++)
				json_array_append_new(groups, group_json(&d, gs[i]));
			free(gs);
			reply_discovery(q, key,
					json_pack("{s:s,s:s,s:o}", "kind", "APIGroupList", "apiVersion", "v1", "groups", groups),
					"application/json");
		}
		goto out;
	case PATH_DISCOVERY_GROUP:
		if (!group_served(&d, p->group, NULL))
			break;
		json_t *g = group_json(&d, p->group);
		json_object_set_new(g, "kind", json_string("APIGroup"));
		json_object_set_new(g, "apiVersion", json_string("v1"));
		reply_discovery(q, key, g, "application/json");
		goto out;
	case PATH_DISCOVERY_GV:
		if (!group_served(&d, p->group, p->version))
			break;
		reply_discovery(q, key, resource_list(&d, p->group, p->version), "application/json");
		goto out;
	default:
		break;
	}
	reply_status(q, E_NOT_FOUND, "the server could not find the requested resource");
out:
	free(key);
	dset_release(&d);
}

bool serve_nonresource(struct apiserver *s, struct http_request *hr, struct http_reply *rp)
{
	const char *p = http_path(hr);
	if (strcmp(p, "/healthz") == 0 || strcmp(p, "/livez") == 0) {
		reply_text(rp, 200, "text/plain", "ok");
	} else if (strcmp(p, "/readyz") == 0) {
		serve_readyz(s, rp);
	} else if (strcmp(p, "/version") == 0) {
		reply_obj(rp, json_pack("{s:s,s:s,s:s,s:s,s:s,s:s,s:s,s:s,s:s}", "major", "1", "minor", "32", "gitVersion",
					"v1.32.0-ursa", "gitCommit", "", "gitTreeState", "clean", "buildDate",
					"2026-11-21T00:00:00Z", "goVersion", "c11", "compiler", "gcc", "platform",
					"linux/amd64"));
	} else if (strcmp(p, "/metrics") == 0) {
		struct buf b = BUF_INIT;
		metrics_render(s, &b);
		http_reply_set(rp, 200, "text/plain; version=0.0.4", &b);
	} else {
		return false;
	}
	return true;
}
