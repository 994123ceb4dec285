/* The gateway's routing decision table. Pure: no maps, no I/O, so every row is unit-tested.
 * Tenant names are compared whole (never by prefix), so "system-x", "allison" and "a" are
 * ordinary tenants; only "system" is privileged and only "all" means every tenant. */
#include <stdlib.h>
#include <string.h>
#include "gw.h"
#include "ursa/errors.h"
#include "ursa/path.h"
#include "ursa/xalloc.h"

static const char *const kind_names[] = {
	[RT_ERROR] = "error", [RT_LOCAL] = "local", [RT_DISCOVERY] = "discovery", [RT_TENANT] = "tenant",
	[RT_TENANT_CREATE] = "tenant-create", [RT_TENANT_LIST] = "tenant-list", [RT_ALL_TENANTS] = "all-tenants",
	[RT_NODE] = "node", [RT_NODE_CREATE] = "node-create", [RT_NODE_LIST] = "node-list",
};

const char *route_kind_name(enum route_kind k)
{
	return (unsigned)k < ARRAY_SIZE(kind_names) ? kind_names[k] : "?";
}

void route_release(struct route *r)
{
	free(r->tenant);
	free(r->node);
	r->tenant = r->node = NULL;
}

bool dns_label_ok(const char *s)
{
	size_t n = s ? strlen(s) : 0;
	if (n == 0 || n > 63 || s[0] == '-' || s[n - 1] == '-')
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-'))
			return false;
	}
	return true;
}

static void deny(struct route *r, int err, const char *msg)
{
	r->kind = RT_ERROR;
	r->err = err;
	r->msg = msg;
}

static bool is_get(const char *m)
{
	return strcmp(m, "GET") == 0 || strcmp(m, "HEAD") == 0;
}

static bool is_local_path(const char *path)
{
	return strcmp(path, "/healthz") == 0 || strcmp(path, "/readyz") == 0 || strcmp(path, "/livez") == 0;
}

static bool is_nonresource_discovery(const char *path)
{
	return strcmp(path, "/version") == 0 || strcmp(path, "/version/") == 0 || strncmp(path, "/openapi/", 9) == 0 ||
	       strcmp(path, "/openapi") == 0;
}

/* Node leases: coordination.k8s.io leases in kube-node-lease of tenant system. */
static bool is_node_lease(const struct path_info *p, const char *tenant)
{
	return strcmp(p->group, "coordination.k8s.io") == 0 && p->resource && strcmp(p->resource, "leases") == 0 &&
	       p->namespace_ && strcmp(p->namespace_, "kube-node-lease") == 0 && tenant &&
	       strcmp(tenant, TENANT_SYSTEM) == 0;
}

/* Nodes, and their NodeMetrics (metrics.k8s.io, served by the resource managers too). */
static bool is_nodes(const struct path_info *p)
{
	return (p->legacy_core || strcmp(p->group, "metrics.k8s.io") == 0) && p->resource &&
	       strcmp(p->resource, "nodes") == 0 && !p->namespace_;
}

static void route_rm(const char *method, const struct path_info *p, const struct identity *id, struct route *r)
{
	if (strcmp(id->tenant, TENANT_SYSTEM) != 0) {
		deny(r, E_FORBIDDEN, "nodes and node leases belong to the system tenant");
		return;
	}
	if (p->name) {
		r->kind = RT_NODE;
		r->node = xstrdup(p->name);
	} else if (strcmp(method, "POST") == 0) {
		r->kind = RT_NODE_CREATE;
	} else if (is_get(method)) {
		r->kind = RT_NODE_LIST;
	} else {
		deny(r, E_METHOD, "collection operations other than list and create are not routed by the gateway");
	}
}

/* /api/v1/tenants[/{name}[/{sub}]] */
static void route_tenant_objects(const char *method, const struct path_info *p, const struct identity *id,
				 struct route *r)
{
	if (p->name) {
		if (!identity_may_read_tenant(id, p->name)) {
			deny(r, E_FORBIDDEN, "the caller may not access this tenant");
			return;
		}
		if (!is_get(method) && !identity_is_system_admin(id)) {
			deny(r, E_FORBIDDEN, "only system administrators change tenants");
			return;
		}
		r->kind = RT_TENANT;
		r->tenant = xstrdup(p->name);
		return;
	}
	if (!identity_is_system_admin(id) && !(identity_is_sre(id) && is_get(method))) {
		deny(r, E_FORBIDDEN, "only system administrators list or create tenants");
		return;
	}
	if (strcmp(method, "POST") == 0)
		r->kind = RT_TENANT_CREATE;
	else if (is_get(method))
		r->kind = RT_TENANT_LIST;
	else
		deny(r, E_METHOD, "this operation on the tenant collection is not supported");
}

/* pods/exec, pods/attach, pods/portforward: streams into a tenant's containers. */
static bool is_pod_stream(const struct path_info *p)
{
	static const char *const subs[] = { "exec", "attach", "portforward" };
	if (!p->legacy_core || !p->resource || strcmp(p->resource, "pods") != 0 || !p->name || !p->subresource)
		return false;
	for (size_t i = 0; i < ARRAY_SIZE(subs); i++)
		if (strcmp(p->subresource, subs[i]) == 0)
			return true;
	return false;
}

void gw_route(const char *method, const char *path, bool watch, const struct identity *id, struct route *ret)
{
	struct route r = { .kind = RT_ERROR, .err = E_NOT_FOUND, .msg = "the path is not served by the gateway" };
	struct path_info p;
	r.watch = watch;
	if (is_local_path(path)) {
		r.kind = RT_LOCAL;
		*ret = r;
		return;
	}
	if (!id) {
		deny(&r, E_UNAUTHORIZED, "authentication required");
		*ret = r;
		return;
	}
	if (is_nonresource_discovery(path)) {
		r.kind = RT_DISCOVERY;
		*ret = r;
		return;
	}
	if (path_parse(path, &p) != 0) {
		*ret = r;
		return;
	}
	r.watch = watch || p.watch_prefix;
	if (identity_is_sre(id) && !is_get(method)) {
		deny(&r, E_FORBIDDEN, "members of " GROUP_SRE " are read-only");
		goto out;
	}
	if (p.kind != PATH_RESOURCE) {
		r.kind = RT_DISCOVERY;
		goto out;
	}
	if (!p.tenant && p.legacy_core && strcmp(p.resource, "tenants") == 0) {
		route_tenant_objects(method, &p, id, &r);
		goto out;
	}
	const char *tenant = p.tenant ? p.tenant : id->tenant;
	if (p.tenant && strcmp(p.tenant, TENANT_ALL) == 0) {
		if (!identity_is_system_admin(id) && !identity_is_sre(id))
			deny(&r, E_FORBIDDEN, "only system administrators read across all tenants");
		else if (!is_get(method) || p.name)
			deny(&r, E_METHOD, "only lists and watches address tenant \"all\"");
		else
			r.kind = RT_ALL_TENANTS;
		goto out;
	}
	if ((!p.tenant && is_nodes(&p)) || is_node_lease(&p, tenant)) {
		route_rm(method, &p, id, &r);
		goto out;
	}
	if (!identity_may_read_tenant(id, tenant)) {
		deny(&r, E_FORBIDDEN, "the caller may not access this tenant");
		goto out;
	}
	if (is_pod_stream(&p)) {
		/* a GET (WebSocket) that writes into a container: the read-only never, and only
		 * callers of the tenant itself (or system administrators) */
		if (!identity_may_access_tenant(id, tenant) || (identity_is_sre(id) && !identity_is_system_admin(id))) {
			deny(&r, E_FORBIDDEN, "the caller may not open streams into this tenant's pods");
			goto out;
		}
		r.stream = true;
	}
	r.kind = RT_TENANT;
	r.tenant = xstrdup(tenant);
out:
	path_info_release(&p);
	*ret = r;
}
