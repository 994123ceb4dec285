/* The API server's front: start-up, then for each request authentication, path
 * resolution against the resource table, tenant scoping, authorization and verb dispatch. */
#include "internal.h"
#include "ursa/crd.h"
#include "ursa/jsonutil.h"
#include "ursa/log.h"
#include "ursa/timeutil.h"
#include "ursa/xalloc.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static bool truthy(const char *v)
{
	return v && (strcmp(v, "true") == 0 || strcmp(v, "True") == 0 || strcmp(v, "1") == 0);
}

/* The table's entry for the path, else a custom resource of the tenant addressed (new
 * reference: served_unref when done). */
static struct served *find_resource(struct apiserver *s, const struct path_info *p, const struct identity *id)
{
	for (size_t i = 0; i < s->nres; i++) {
		const struct api_resource *r = s->res[i].r;
		if (strcmp(r->plural, p->resource) == 0 && strcmp(r->group, p->group) == 0 &&
		    strcmp(r->version, p->version) == 0)
			return &s->res[i];
	}
	return crd_find(s, p->tenant ? p->tenant : id->tenant, p->group, p->version, p->resource);
}

/* The caller: from a gateway's identity assertion when one is present (and only if this server
 * holds the key), else from the bearer token. */
static int authenticate(struct req *q)
{
	const char *a = http_header(q->http, IDENTITY_HEADER);
	if (a) {
		int rc = identity_assertion_verify(q->s->idkey, a, strlen(a), time(NULL), &q->id);
		return rc < 0 ? rc : sa_token_check(q);
	}
	const char *h = http_header(q->http, "Authorization");
	if (!h || strncasecmp(h, "Bearer ", 7) != 0 || !q->s->authn)
		return E_UNAUTHORIZED;
	const char *tok = h + 7;
	while (*tok == ' ')
		tok++;
	size_t len = strlen(tok);
	time_t now = time(NULL);
	if (tokcache_get(q->s->tokens, tok, len, now, &q->id) == 0)
		return sa_token_check(q);
	int rc = authn_token(q->s->authn, tok, &q->id);
	if (rc == 0)
		tokcache_put(q->s->tokens, tok, len, &q->id, now);
	return rc < 0 ? rc : sa_token_check(q);
}

static const char *verb_of(struct req *q)
{
	const char *m = http_method(q->http);
	bool named = q->path.name != NULL;
	/* a stream into a pod writes into it: `create`, for the WebSocket GET too (as Kubernetes
	 * authorizes them since 1.31) */
	if (q->path.subresource && (strcmp(q->path.subresource, "exec") == 0 || strcmp(q->path.subresource, "attach") == 0 ||
				    strcmp(q->path.subresource, "portforward") == 0))
		return strcmp(m, "GET") == 0 || strcmp(m, "POST") == 0 ? "create" : NULL;
	if (q->path.subresource)
		return strcmp(m, "GET") == 0 ? "get" : strcmp(m, "POST") == 0 ? "create" : strcmp(m, "PUT") == 0 ? "update"
		       : strcmp(m, "PATCH") == 0 ? "patch" : NULL;
	if (strcmp(m, "GET") == 0) {
		if (q->path.watch_prefix || truthy(http_query(q->http, "watch")))
			return "watch";
		return named ? "get" : "list";
	}
	if (strcmp(m, "POST") == 0)
		return named ? NULL : "create";
	if (strcmp(m, "PUT") == 0)
		return named ? "update" : NULL;
	if (strcmp(m, "PATCH") == 0)
		return named ? "patch" : NULL;
	if (strcmp(m, "DELETE") == 0)
		return named ? "delete" : "deletecollection";
	return NULL;
}

static bool verb_in(const char *verb, const char *const *verbs)
{
	for (; *verbs; verbs++)
		if (strcmp(verb, *verbs) == 0)
			return true;
	return false;
}

/* What a node's kubelet may do (a node credential, group system:nodes): read everything but
 * secrets and configmaps, in every tenant ("all" included) and the cluster scope; write only its
 * own kind of objects — nodes and their status, leases in kube-node-lease, a pod's status, the final
 * delete of a pod it stopped, and events (Pulling, Started, BackOff...), as Kubernetes'
 * system:node role allows. It cannot create pods, bind them or touch any tenant's other
 * objects. A credential that names its node (user system:node:<name>, q->node) writes only that
 * node, its lease and the pods bound to it, as Kubernetes' NodeRestriction: the names here,
 * a created object's and a pod's spec.nodeName in node_owns. Of secrets, such a credential may
 * GET those a pod bound to its node names (nodesecrets.c), and the same of configmaps. */
static bool node_may(const struct req *q, const struct api_resource *r, bool write)
{
	static const char *const upsert[] = { "create", "update", "patch", NULL };
	static const char *const change[] = { "update", "patch", NULL };
	const char *sub = q->path.subresource;
	bool own = !q->node || !q->path.name || strcmp(q->path.name, q->node) == 0;

	if (!write && strcmp(r->plural, "configmaps") == 0)
		return !strcmp(q->verb, "get") && node_may_get_configmap(q);
	if (!write)
		return strcmp(r->plural, "secrets") != 0 || (!strcmp(q->verb, "get") && node_may_get_secret(q));
	if (strcmp(r->plural, "nodes") == 0)
		return own && ((!sub && verb_in(q->verb, upsert)) ||
			       (sub && !strcmp(sub, "status") && verb_in(q->verb, change)));
	if (strcmp(r->plural, "leases") == 0)
		return own && !sub && q->ns && !strcmp(q->ns, "kube-node-lease") && verb_in(q->verb, upsert);
	if (strcmp(r->plural, "pods") == 0)
		return sub ? !strcmp(sub, "status") && verb_in(q->verb, change) : !strcmp(q->verb, "delete");
	if (strcmp(r->plural, "events") == 0)
		return !sub && verb_in(q->verb, upsert);
	if (strcmp(r->plural, "serviceaccounts") == 0) /* projected service-account tokens of its pods */
		return sub && !strcmp(sub, "token") && !strcmp(q->verb, "create") && node_may_request_token(q);
	return false;
}

bool node_owns(const struct req *q, const json_t *obj)
{
	if (!q->node || strcmp(q->res->r->plural, "events") == 0)  /* events name the object they are about */
		return true;
	bool pod = strcmp(q->res->r->plural, "pods") == 0;
	const char *owner = json_path_str(obj, pod ? "spec.nodeName" : "metadata.name");
	return owner && strcmp(owner, q->node) == 0;
}

void node_not_owner(const struct req *q, const char *name, struct buf *msg)
{
	const char *plural = q->res->r->plural;
	if (strcmp(plural, "pods") == 0)
		buf_addf(msg, "pods \"%s\" is forbidden: node \"%s\" can only modify pods with spec.nodeName set to itself",
			 name ? name : "", q->node);
	else
		buf_addf(msg, "%s \"%s\" is forbidden: node \"%s\" can only modify its own %s", plural, name ? name : "",
			 q->node, strcmp(plural, "leases") == 0 ? "lease" : "node");
}

void reply_node_not_owner(struct req *q, const char *name)
{
	struct buf msg = BUF_INIT;
	node_not_owner(q, name, &msg);
	reply_status(q, E_FORBIDDEN, "%s", buf_cstr(&msg));
	buf_release(&msg);
}

/* Works out the effective tenant and namespace, and whether the caller may touch them. */
static int scope_request(struct req *q)
{
	const struct api_resource *r = q->res->r;
	if (r->scope == SCOPE_CLUSTER) {
		if (q->path.tenant || q->path.namespace_) {
			reply_status(q, E_NOT_FOUND, "the server could not find the requested resource");
			return -1;
		}
		q->tenant = xstrdup("");
	} else {
		q->tenant = xstrdup(q->path.tenant ? q->path.tenant : q->id.tenant);
		if (r->scope == SCOPE_NAMESPACE && q->path.namespace_)
			q->ns = xstrdup(q->path.namespace_);
		if (r->scope == SCOPE_TENANT && q->path.namespace_) {
			reply_status(q, E_NOT_FOUND, "the server could not find the requested resource");
			return -1;
		}
	}
	bool admin = identity_is_system_admin(&q->id);
	/* a review's create stores nothing: it is a question, allowed to readers */
	bool write = strcmp(q->verb, "get") != 0 && strcmp(q->verb, "list") != 0 && strcmp(q->verb, "watch") != 0 &&
		     !r->ephemeral;
	bool node = identity_is_node(&q->id);
	q->node = identity_node_name(&q->id);
	if (node && !node_may(q, r, write)) {
		bool own_kind = !strcmp(r->plural, "nodes") || !strcmp(r->plural, "leases");
		if (own_kind && q->node && q->path.name && strcmp(q->path.name, q->node) != 0) {
			reply_node_not_owner(q, q->path.name);
		} else {
			reply_status(q, E_FORBIDDEN, "%s is forbidden: User \"%s\" is a node (group %s): cannot %s resource \"%s\"%s%s",
				     r->plural, q->id.user, GROUP_NODES, q->verb, r->plural,
				     q->path.subresource ? " subresource " : "", q->path.subresource ? q->path.subresource : "");
		}
		return -1;
	}
	bool sre = identity_is_sre(&q->id);
	bool reader = sre || node; /* reads every tenant and the cluster scope */
	if (sre && (write || strcmp(r->plural, "secrets") == 0)) {
		reply_status(q, E_FORBIDDEN, "%s is forbidden: User \"%s\" is a read-only SRE (group %s): cannot %s resource \"%s\"",
			     r->plural, q->id.user, GROUP_SRE, q->verb, r->plural);
		return -1;
	}
	if (strcmp(q->tenant, TENANT_ALL) == 0) {
		bool collection = strcmp(q->verb, "list") == 0 || strcmp(q->verb, "watch") == 0;
		if (!(admin || reader) || !collection) {
			reply_status(q, admin || reader ? E_BAD_REQUEST : E_FORBIDDEN,
				     admin || reader ? "tenant \"all\" can only be listed or watched"
						  : "user \"%s\" cannot access all tenants",
				     q->id.user);
			return -1;
		}
		return 0;
	}
	if (r->scope == SCOPE_CLUSTER) {
		/* Tenants may read their own Tenant object; everything else cluster-wide is the system's
		 * (SREs read it all). */
		bool own_tenant = strcmp(r->plural, "tenants") == 0 && q->path.name &&
				  strcmp(q->path.name, q->id.tenant) == 0 && !write;
		if (!admin && !reader && !own_tenant) { /* a node's writes passed node_may */
			reply_status(q, E_FORBIDDEN, "%s is forbidden: User \"%s\" of tenant \"%s\" cannot %s resource \"%s\" at the cluster scope",
				     r->plural, q->id.user, q->id.tenant, q->verb, r->plural);
			return -1;
		}
		return 0;
	}
	if (!node && !identity_may_read_tenant(&q->id, q->tenant)) { /* SREs got here only to read */
		reply_status(q, E_FORBIDDEN, "%s is forbidden: User \"%s\" of tenant \"%s\" cannot %s resource \"%s\" in tenant \"%s\"",
			     r->plural, q->id.user, q->id.tenant, q->verb, r->plural, q->tenant);
		return -1;
	}
	if (write && r->system_only && !admin && !node) {
		reply_status(q, E_FORBIDDEN, "%s is forbidden: only system administrators may %s it", r->plural, q->verb);
		return -1;
	}
	return 0;
}

static void dispatch(struct req *q)
{
	if (q->res->r->metrics) {
		handle_metrics(q);
		return;
	}
	if (q->res->r->ephemeral) {
		if (strcmp(q->verb, "create") == 0 && !q->path.subresource)
			handle_ephemeral(q);
		else
			reply_status(q, E_METHOD, "the server does not allow this method on the requested resource");
		return;
	}
	if (q->res->r->crd && q->res->r->crd->terminating && strcmp(q->verb, "create") == 0) {
		reply_status(q, E_METHOD, "create not allowed while custom resource definition is terminating");
		return;
	}
	if (q->path.subresource) {
		handle_subresource(q);
		return;
	}
	static const struct {
		const char *verb;
		void (*fn)(struct req *q);
	} verbs[] = {
		{ "get", handle_get },       { "list", handle_list },     { "watch", handle_watch },
		{ "create", handle_create }, { "update", handle_update }, { "patch", handle_patch },
		{ "delete", handle_delete }, { "deletecollection", handle_deletecollection },
	};
	for (size_t i = 0; i < sizeof(verbs) / sizeof(verbs[0]); i++)
		if (strcmp(verbs[i].verb, q->verb) == 0) {
			verbs[i].fn(q);
			return;
		}
}

int req_sub_begin(struct req *q, const char *path, const char *verb)
{
	if (path_parse(path, &q->path) < 0 || q->path.kind != PATH_RESOURCE || q->path.subresource ||
	    !(q->res = find_resource(q->s, &q->path, &q->id))) {
		reply_status(q, E_NOT_FOUND, "the server could not find the requested resource");
		return -1;
	}
	q->verb = verb;
	return scope_request(q) < 0 || authorize(q) < 0 ? -1 : 0;
}

void req_sub_release(struct req *q)
{
	served_unref(q->res);
	q->res = NULL;
	path_info_release(&q->path);
	free(q->tenant);
	free(q->ns);
	q->tenant = q->ns = NULL;
}

static void on_http(void *ud, struct http_request *hr, struct http_reply *rp)
{
	struct apiserver *s = ud;
	const char *rest;
	char *prefix = path_client_prefix(http_path(hr), &rest); /* a tenant's kubeconfig (ursa/path.h) */
	if (prefix)
		http_request_set_path(hr, rest);
	if (serve_nonresource(s, hr, rp)) {
		free(prefix);
		return;
	}
	struct req q = { .s = s, .http = hr, .reply = rp };
	int rc = authenticate(&q);
	if (rc < 0) {
		reply_status_raw(rp, E_UNAUTHORIZED, "Unauthorized");
		goto out;
	}
	if (prefix && strcmp(prefix, q.id.tenant) != 0) {
		reply_status(&q, E_FORBIDDEN, "the server URL names tenant \"%s\", the credential is of tenant \"%s\"",
			     prefix, q.id.tenant);
		goto out;
	}
	if (strcmp(http_path(hr), WATCHMUX_PATH) == 0) {
		handle_watch_mux(&q);
		goto out;
	}
	if (serve_tenant_backup(&q))
		goto out;
	if (strncmp(http_path(hr), "/openapi/", 9) == 0 || strncmp(http_path(hr), "/swagger", 8) == 0) {
		/* per tenant: its custom resources are in its documents */
		serve_openapi(s, q.id.tenant, hr, rp);
		goto out;
	}
	if (path_parse(http_path(hr), &q.path) < 0) {
		reply_status(&q, E_NOT_FOUND, "the server could not find the requested resource");
		goto out;
	}
	if (q.path.kind != PATH_RESOURCE) {
		serve_discovery(&q);
		goto out;
	}
	q.res = find_resource(s, &q.path, &q.id);
	if (!q.res) {
		reply_status(&q, E_NOT_FOUND, "the server could not find the requested resource");
		goto out;
	}
	q.verb = verb_of(&q);
	if (!q.verb) {
		reply_status(&q, E_METHOD, "the server does not allow this method on the requested resource");
		goto out;
	}
	if (fairshare_admit(&q))
		goto out; /* parked (runs again when its turn comes) or refused */
	if (scope_request(&q) < 0 || authorize(&q) < 0 || move_write_enter(&q) < 0)
		goto out;
	q.table = wants_table(&q);
	if (fieldval_begin(&q) == 0)
		dispatch(&q);
	fieldval_finish(&q);
	if (strcmp(q.verb, "watch") != 0)
		metrics_request(s->metrics, q.verb, q.res->index, http_reply_status(rp), mono_us() - http_started_us(hr));
out:
	move_write_leave(&q);
	fairshare_done(&q);
	free(prefix);
	served_unref(q.res);
	identity_release(&q.id);
	path_info_release(&q.path);
	free(q.tenant);
	free(q.ns);
}

static void served_init(struct apiserver *s)
{
	s->nres = s->o.nresources;
	s->res = xcalloc(s->nres, sizeof(*s->res));
	for (size_t i = 0; i < s->nres; i++) {
		struct served *sv = &s->res[i];
		sv->r = &s->o.resources[i];
		sv->index = (unsigned)i;
		sv->prefix = xasprintf("%s/%s/", s->o.etcd_prefix, sv->r->plural);
		if (sv->r->ephemeral || sv->r->metrics)
			continue;
		if (sv->r->heartbeat)
			etcd_lazy_prefix_add(s->etcd, sv->prefix);
		struct wcache_options wo = { .key_prefix = sv->prefix,
					     .tree_budget = (size_t)s->o.cache_trees_mb << 20 };
		sv->cache = wcache_new(sv->r, s->etcd, &wo);
	}
}

struct apiserver *apiserver_start(const struct apiserver_options *o, char **ret_err)
{
	struct apiserver *s = xcalloc(1, sizeof(*s));
	s->o = *o;
	if (!s->o.etcd_prefix)
		s->o.etcd_prefix = "/registry";
	/* a writer waits with its heartbeat: at most half the workers, so others still get served,
	 * and at most 8: with more (a resource manager's 128 workers gave 64) a batch rarely fills
	 * before the linger ends, and clients that renew over a few connections each waited the
	 * whole 40 ms (32 connections renewed 757 leases/s instead of 1,000: bench/run-rm-heartbeat.sh)
	 * (no workers given: the HTTP server's 16, and etcd's default batch of 8) */
	size_t lazy_batch = o->workers ? (o->workers > 1 ? o->workers / 2 : 1) : 0;
	if (lazy_batch > 8)
		lazy_batch = 8;
	s->etcd = etcd_new(o->etcd_servers, &(struct etcd_options){ .write_linger_ms = o->etcd_write_linger_ms,
								      .lazy_linger_ms = o->etcd_heartbeat_linger_ms,
								      .lazy_batch = lazy_batch });
	if (!s->etcd) {
		*ret_err = xasprintf("invalid --etcd-servers \"%s\"", o->etcd_servers ? o->etcd_servers : "");
		goto fail;
	}
	if (o->token_file || o->token_public_key) {
		char *err = NULL;
		if (authn_new(o->token_file, o->token_public_key, &s->authn, &err) < 0) {
			*ret_err = xasprintf("authentication setup: %s", err ? err : "failed");
			free(err);
			goto fail;
		}
		s->tokens = tokcache_new();
	}
	if (o->identity_key) {
		char *err = NULL;
		if (idkey_load(o->identity_key, &s->idkey, &err) < 0) {
			*ret_err = err;
			goto fail;
		}
	}
	if (o->sa_signing_key) {
		char *err = NULL;
		if (jwt_signer_load(o->sa_signing_key, &s->sa_signer, &err) < 0) {
			*ret_err = xasprintf("service-account signing key: %s", err ? err : "failed");
			free(err);
			goto fail;
		}
	}
	if (o->region_token_file && !(s->region_token = auth_read_token_file(o->region_token_file, ret_err)))
		goto fail;
	if (o->kubelet_token_file) {
		if (!(s->kubelet_token = auth_read_token_file(o->kubelet_token_file, ret_err)))
			goto fail;
	} else if (s->region_token) {
		s->kubelet_token = xstrdup(s->region_token);
	}
	s->metrics = metrics_new(o->nresources + 1); /* + custom resources */
	fairshare_start(s);
	atomic_store(&s->etcd_ok, etcd_healthy(s->etcd));
	served_init(s);
	s->quota = quota_start(s);
	s->svcip = svcip_start(s);
	moves_start(s);
	if (crd_start(s) < 0) {
		*ret_err = xstrdup("cannot start the custom resource registry");
		goto fail;
	}
	if (authz_start(s) < 0) {
		*ret_err = xstrdup("cannot start the authorizer");
		goto fail;
	}
	if (!o->defer_listen && apiserver_listen(s, ret_err) < 0)
		goto fail;
	return s;
fail:
	apiserver_stop(s);
	return NULL;
}

int apiserver_listen(struct apiserver *s, char **ret_err)
{
	struct http_server_options ho = {
		.listen = s->o.listen, .tls_cert = s->o.tls_cert, .tls_key = s->o.tls_key, .threads = s->o.workers,
	};
	s->http = http_server_start(&ho, on_http, s, ret_err);
	if (!s->http)
		return -1;
	watch_ticker_start(s);
	return 0;
}

void apiserver_stop(struct apiserver *s)
{
	if (!s)
		return;
	atomic_store(&s->stopping, true);
	if (s->http) {
		watch_ticker_stop(s);
		fairshare_stop(s);
		http_server_stop(s->http);
	}
	fairshare_free(s);
	authz_stop(s);
	crd_stop(s);
	quota_stop(s->quota);
	svcip_stop(s->svcip);
	moves_stop(s);
	for (size_t i = 0; i < s->nres; i++) {
		wcache_free(s->res[i].cache);
		free(s->res[i].prefix);
	}
	free(s->res);
	authn_free(s->authn);
	tokcache_free(s->tokens);
	idkey_free(s->idkey);
	jwt_signer_free(s->sa_signer);
	etcd_free(s->etcd);
	metrics_free(s->metrics);
	free(s->region_token);
	free(s->kubelet_token);
	free(s);
}
