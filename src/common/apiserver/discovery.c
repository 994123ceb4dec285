/* Non-resource endpoints: /version, health, /metrics, legacy discovery and the minimal
 * OpenAPI v3 documents kubectl needs for create/apply with validation. All generated from
 * the resource table. */
#include "internal.h"
#include "ursa/jsonutil.h"
#include "ursa/xalloc.h"
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

/* Every watch cache has its first state, and the authorizer holds the RBAC objects (before,
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

/* Groups in table order, each once. Returns the count; names borrowed. */
static size_t groups_of(struct apiserver *s, const char **ret, size_t max)
{
	size_t n = 0;
	for (size_t i = 0; i < s->nres; i++) {
		const char *g = s->res[i].r->group;
		bool seen = !g[0];
		for (size_t j = 0; j < n && !seen; j++)
			seen = strcmp(ret[j], g) == 0;
		if (!seen && n < max)
			ret[n++] = g;
	}
	return n;
}

/* A group's versions in table order, each once (the first is the preferred one), as
 * GroupVersionForDiscovery objects. */
static json_t *versions_of_group(struct apiserver *s, const char *g)
{
	json_t *vers = json_array();
	for (size_t i = 0; i < s->nres; i++) {
		const struct api_resource *r = s->res[i].r;
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
	}
	if (json_array_size(vers) == 0)
		json_array_append_new(vers, json_pack("{s:s,s:s}", "groupVersion", g, "version", "v1"));
	return vers;
}

static json_t *group_json(struct apiserver *s, const char *g)
{
	json_t *vers = versions_of_group(s, g);
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

static json_t *resource_list(struct apiserver *s, const char *group, const char *version)
{
	json_t *list = json_array();
	for (size_t i = 0; i < s->nres; i++) {
		const struct api_resource *r = s->res[i].r;
		if (strcmp(r->group, group) != 0 || strcmp(r->version, version) != 0)
			continue;
		json_t *shorts = json_array();
		for (size_t k = 0; k < 4 && r->short_names[k]; k++)
			json_array_append_new(shorts, json_string(r->short_names[k]));
		json_t *e = json_pack("{s:s,s:s,s:b,s:s,s:o,s:o}", "name", r->plural, "singularName", r->singular,
				      "namespaced", r->scope == SCOPE_NAMESPACE, "kind", r->kind, "verbs",
				      r->ephemeral ? verbs_json((const char *const[]){ "create" }, 1) : verbs_json(all_verbs, 8),
				      "shortNames", shorts);
		if (in_category_all(r))
			json_object_set_new(e, "categories", json_pack("[s]", "all"));
		json_array_append_new(list, e);
		for (size_t k = 0; k < sizeof(subresource_table) / sizeof(subresource_table[0]); k++) {
			if (!(r->subresources & subresource_table[k].bit))
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

static bool group_served(struct apiserver *s, const char *g, const char *v)
{
	for (size_t i = 0; i < s->nres; i++)
		if (strcmp(s->res[i].r->group, g) == 0 && (!v || strcmp(s->res[i].r->version, v) == 0))
			return true;
	return false;
}

void serve_discovery(struct req *q)
{
	struct apiserver *s = q->s;
	const struct path_info *p = &q->path;
	const char *gs[32];
	switch (p->kind) {
	case PATH_DISCOVERY_ROOT:
		if (p->legacy_core) {
			reply_obj(q->reply, json_pack("{s:s,s:[s],s:[{s:s,s:s}]}", "kind", "APIVersions", "versions", "v1",
						      "serverAddressByClientCIDRs", "clientCIDR", "0.0.0.0/0", "serverAddress",
						      s->o.listen));
		} else {
			json_t *groups = json_array();
			size_t n = groups_of(s, gs, 32);
			for (size_t i = 0; i < n; i++)
				json_array_append_new(groups, group_json(s, gs[i]));
			reply_obj(q->reply, json_pack("{s:s,s:s,s:o}", "kind", "APIGroupList", "apiVersion", "v1", "groups",
						      groups));
		}
		return;
	case PATH_DISCOVERY_GROUP:
		if (!group_served(s, p->group, NULL))
			break;
		json_t *g = group_json(s, p->group);
		json_object_set_new(g, "kind", json_string("APIGroup"));
		json_object_set_new(g, "apiVersion", json_string("v1"));
		reply_obj(q->reply, g);
		return;
	case PATH_DISCOVERY_GV:
		if (!group_served(s, p->group, p->version))
			break;
		reply_obj(q->reply, resource_list(s, p->group, p->version));
		return;
	default:
		break;
	}
	reply_status(q, E_NOT_FOUND, "the server could not find the requested resource");
}

/* OpenAPI v3: one document per group version, holding a PATCH operation per kind that
 * declares the fieldValidation parameter, which is all kubectl's validation looks for. */
static void gv_key(const struct api_resource *r, struct buf *out)
{
	if (r->group[0])
		buf_addf(out, "apis/%s/%s", r->group, r->version);
	else
		buf_addf(out, "api/%s", r->version);
}

void serve_openapi(struct apiserver *s, const char *path, struct http_reply *rp)
{
	const char *rest = path + strlen("/openapi/v3");
	if (*rest == '\0' || strcmp(rest, "/") == 0) {
		json_t *paths = json_object();
		for (size_t i = 0; i < s->nres; i++) {
			struct buf k = BUF_INIT;
			gv_key(s->res[i].r, &k);
			char *url = xasprintf("/openapi/v3/%s?hash=%s", buf_cstr(&k), s->o.partition_id ? "u1" : "u0");
			json_object_set_new(paths, buf_cstr(&k), json_pack("{s:s}", "serverRelativeURL", url));
			free(url);
			buf_release(&k);
		}
		reply_obj(rp, json_pack("{s:o}", "paths", paths));
		return;
	}
	json_t *paths = json_object();
	for (size_t i = 0; i < s->nres; i++) {
		const struct api_resource *r = s->res[i].r;
		struct buf k = BUF_INIT, p = BUF_INIT;
		buf_addch(&k, '/');
		gv_key(r, &k);
		if (strcmp(buf_cstr(&k), rest) != 0) {
			buf_release(&k);
			continue;
		}
		buf_add(&p, k.ptr, k.len);
		if (r->scope == SCOPE_NAMESPACE)
			buf_adds(&p, "/namespaces/{namespace}");
		buf_addf(&p, "/%s/{name}", r->plural);
		json_t *op = json_pack("{s:{s:s,s:s,s:s},s:[{s:s,s:s,s:{s:s}}],s:{s:{s:s}}}", "x-kubernetes-group-version-kind",
				       "group", r->group, "version", r->version, "kind", r->kind, "parameters", "name",
				       "fieldValidation", "in", "query", "schema", "type", "string", "responses", "200",
				       "description", "OK");
		json_object_set_new(paths, buf_cstr(&p), json_pack("{s:o}", "patch", op));
		buf_release(&k);
		buf_release(&p);
	}
	if (json_object_size(paths) == 0) {
		json_decref(paths);
		reply_status_raw(rp, E_NOT_FOUND, "the server could not find the requested resource");
		return;
	}
	reply_obj(rp, json_pack("{s:s,s:{s:s,s:s},s:o,s:{s:{}}}", "openapi", "3.0.0", "info", "title", "Ursa",
				"version", "v1.32.0", "paths", paths, "components", "schemas"));
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
	} else if (strncmp(p, "/openapi/v3", 11) == 0 && (p[11] == '\0' || p[11] == '/')) {
		serve_openapi(s, p, rp);
	} else if (strncmp(p, "/openapi/v2", 11) == 0 || strncmp(p, "/swagger", 8) == 0) {
		reply_status_raw(rp, E_NOT_FOUND, "the server could not find the requested resource");
	} else {
		return false;
	}
	return true;
}
