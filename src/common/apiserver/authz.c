/* Authorization: the API server's RBAC authorizer (ursa/rbac.h), fed from its own watch caches
 * of the four RBAC kinds by a follower (follow.c); the decision for each request that the fixed
 * rules (system masters, SREs, nodes, tenant isolation: server.c) leave to RBAC; the escalation
 * check of the admission chain; the access reviews; and the default roles of every tenant. */
#include "internal.h"
#include "ursa/jsonutil.h"
#include "ursa/log.h"
#include "ursa/rbac.h"
#include "ursa/timeutil.h"
#include "ursa/xalloc.h"
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const struct {
	const char *plural;
	enum rbac_kind kind;
} feeds[] = {
	{ "roles", RBAC_ROLE },
	{ "clusterroles", RBAC_CLUSTER_ROLE },
	{ "rolebindings", RBAC_ROLE_BINDING },
	{ "clusterrolebindings", RBAC_CLUSTER_ROLE_BINDING },
};
#define NFEEDS (sizeof(feeds) / sizeof(feeds[0]))

/* ---- aggregated ClusterRoles: their rules written back, as Kubernetes' aggregation
 * controller does (every API server of a partition may write the same rules: idempotent) ---- */

static int mutate_rules(struct req *q, const json_t *cur, void *ud, json_t **ret_new)
{
	(void)q;
	json_t *obj = json_copy((json_t *)cur);
	json_object_set_new(obj, "rules", json_deep_copy(ud));
	*ret_new = obj;
	return 0;
}

struct writeback {
	struct apiserver *s;
	const char *tenant;
};

static void write_rules(void *ud, const char *name, const json_t *rules)
{
	struct writeback *w = ud;
	struct req q = { .s = w->s, .verb = "update", .tenant = (char *)w->tenant };
	q.res = served_by_plural(w->s, "clusterroles");
	do_update(&q, name, UPDATE_MAIN, mutate_rules, (void *)rules, false, NULL);
	if (q.replied_code >= 300 && q.replied_code != 404)
		log_warn("cannot write an aggregated role's rules", "tenant=\"%s\" clusterrole=\"%s\" code=%d", w->tenant,
			 name, q.replied_code);
	else
		log_debug("aggregated role's rules written", "tenant=\"%s\" clusterrole=\"%s\"", w->tenant, name);
}

static void write_aggregates(struct authz *z, const char *tenant)
{
	struct writeback w = { z->s, tenant };
	rbac_each_stale_aggregate(z->rbac, tenant, write_rules, &w);
}

/* The write-back has a thread of its own, a moment after a tenant's ClusterRoles changed: the
 * follower never waits on etcd. (It did: a burst of new tenants, whose default roles arrive one by
 * one and leave admin, edit and view stale after each, held every later RBAC event, and so every
 * new tenant's first requests, behind those writes: tens of seconds of 403s after 100 tenants.)
 * Waiting AGG_SETTLE_MS lets a tenant's roles land first, so each aggregate is written once. */
#define AGG_SETTLE_MS 100

static void mark_aggregates(void *ud, const char *tenant)
{
	struct authz *z = ud;
	pthread_mutex_lock(&z->agg_mu);
	strmap_put(&z->agg_pending, tenant, NULL);
	pthread_cond_signal(&z->agg_cond);
	pthread_mutex_unlock(&z->agg_mu);
}

static void *aggregate_writer(void *ud)
{
	struct authz *z = ud;
	pthread_mutex_lock(&z->agg_mu);
	while (!z->agg_stop) {
		if (z->agg_pending.n == 0) {
			pthread_cond_wait(&z->agg_cond, &z->agg_mu);
			continue;
		}
		struct timespec settle;
		wall_deadline(&settle, AGG_SETTLE_MS);
		while (!z->agg_stop && pthread_cond_timedwait(&z->agg_cond, &z->agg_mu, &settle) != ETIMEDOUT)
			;
		struct strmap batch = z->agg_pending;
		strmap_init(&z->agg_pending);
		pthread_mutex_unlock(&z->agg_mu);
		size_t it = 0;
		for (struct strmap_ent *e = strmap_next(&batch, NULL, &it); e && !z->agg_stop; e = strmap_next(&batch, e, &it))
			write_aggregates(z, e->key);
		strmap_release(&batch, NULL);
		pthread_mutex_lock(&z->agg_mu);
	}
	pthread_mutex_unlock(&z->agg_mu);
	return NULL;
}

static void feed_event(void *ud, size_t i, enum wev_type type, struct cobj *o)
{
	struct authz *z = ud;
	if (type == WEV_DELETED) {
		rbac_apply(z->rbac, feeds[i].kind, o->tenant, o->ns, o->name, NULL);
	} else {
		json_t *obj = json_loadb(o->json, o->json_len, 0, NULL);
		if (obj)
			rbac_apply(z->rbac, feeds[i].kind, o->tenant, o->ns, o->name, obj);
		json_decref(obj);
	}
	/* only once every ClusterRole is known: before, a union would be partial */
	if (feeds[i].kind == RBAC_CLUSTER_ROLE && atomic_load(&z->ready) && !z->resyncing[i])
		mark_aggregates(z, o->tenant);
}

/* A relist: what is held keeps deciding while the new state arrives; what it does not bring
 * again goes at its end (feed_listed). */
static void feed_reset(void *ud, size_t i)
{
	struct authz *z = ud;
	z->resyncing[i] = true;
	rbac_resync_begin(z->rbac, feeds[i].kind);
}

static void feed_listed(void *ud, size_t i)
{
	struct authz *z = ud;
	if (!z->resyncing[i])
		return; /* the first state: feed_synced follows */
	z->resyncing[i] = false;
	rbac_resync_end(z->rbac, feeds[i].kind);
	if (feeds[i].kind == RBAC_CLUSTER_ROLE && atomic_load(&z->ready))
		rbac_each_tenant(z->rbac, mark_aggregates, z);
}

static void bootstrap_missing(struct apiserver *s);

/* The first state of every RBAC kind is held: decisions may start, and tenants without their
 * default roles get them. */
static void feed_synced(void *ud)
{
	struct authz *z = ud;
	atomic_store(&z->ready, true);
	struct served *tenants = served_by_plural(z->s, "tenants");
	for (int i = 0; i < 600 && tenants && tenants->cache && !wcache_ready(tenants->cache); i++)
		usleep(50000);
	bootstrap_missing(z->s);
	rbac_each_tenant(z->rbac, mark_aggregates, z);
}

static void stop_aggregate_writer(struct authz *z)
{
	pthread_mutex_lock(&z->agg_mu);
	z->agg_stop = true;
	pthread_cond_signal(&z->agg_cond);
	pthread_mutex_unlock(&z->agg_mu);
	pthread_join(z->agg_thread, NULL);
}

static void authz_free(struct authz *z)
{
	strmap_release(&z->agg_pending, NULL);
	pthread_cond_destroy(&z->agg_cond);
	pthread_mutex_destroy(&z->agg_mu);
	rbac_free(z->rbac);
	free(z);
}

int authz_start(struct apiserver *s)
{
	struct served *sv[NFEEDS];
	for (size_t i = 0; i < NFEEDS; i++)
		if (!(sv[i] = served_by_plural(s, feeds[i].plural)))
			return 0; /* this server serves no RBAC: its fixed rules alone decide */
	struct authz *z = xcalloc(1, sizeof(*z));
	z->s = s;
	z->rbac = rbac_new();
	pthread_mutex_init(&z->agg_mu, NULL);
	pthread_cond_init(&z->agg_cond, NULL);
	strmap_init(&z->agg_pending);
	if (pthread_create(&z->agg_thread, NULL, aggregate_writer, z) != 0) {
		authz_free(z);
		return -1;
	}
	static const struct follower_ops ops = { feed_event, feed_reset, feed_listed, feed_synced };
	s->authz = z; /* before the follower starts: its first sync bootstraps tenants through it */
	if (!(z->follower = follower_start(sv, NFEEDS, &ops, z))) {
		s->authz = NULL;
		stop_aggregate_writer(z);
		authz_free(z);
		return -1;
	}
	return 0;
}

void authz_stop(struct apiserver *s)
{
	struct authz *z = s->authz;
	if (!z)
		return;
	follower_stop(z->follower); /* first: it marks tenants for the writer */
	stop_aggregate_writer(z);
	authz_free(z);
	s->authz = NULL;
}

bool authz_ready(struct apiserver *s)
{
	return !s->authz || atomic_load(&s->authz->ready);
}

#define AUTHZ_CATCH_UP_MS 1000

/* ---- decisions ---- */

static void attrs_of(const struct req *q, struct rbac_attrs *at)
{
	const struct api_resource *r = q->res->r;
	*at = (struct rbac_attrs){
		.verb = q->verb, .group = r->group, .resource = r->plural, .subresource = q->path.subresource,
		.name = q->path.name, .ns = q->ns,
	};
	/* a namespace is inside itself, as Kubernetes' request attributes say */
	if (strcmp(r->plural, "namespaces") == 0 && !r->group[0] && q->path.name)
		at->ns = q->path.name;
}

/* The fixed rules' answer for identities RBAC does not decide: 1 allowed, 0 denied, -1 ask RBAC. */
static int fixed_rules(const struct identity *id, const struct rbac_attrs *at)
{
	if (identity_is_system_admin(id))
		return 1;
	bool read = at->verb && (!strcmp(at->verb, "get") || !strcmp(at->verb, "list") || !strcmp(at->verb, "watch"));
	if (identity_is_sre(id))
		return read && !(at->resource && !strcmp(at->resource, "secrets") && !at->group[0]);
	return -1;
}

bool authz_decide(struct apiserver *s, const struct identity *id, const char *tenant, const struct rbac_attrs *at,
		  struct buf *ret_reason)
{
	int f = fixed_rules(id, at);
	if (f >= 0) {
		if (ret_reason)
			buf_adds(ret_reason, f ? "allowed by the region's fixed rules" : "");
		return f;
	}
	if (!s->authz)
		return true; /* a server without RBAC (resource managers): tenant isolation decided */
	return rbac_authorize(s->authz->rbac, id, tenant, at, ret_reason);
}

/* Before a denial stands: the authorizer's view may lag this server's writes of a moment ago (a
 * tenant and its default bindings created just now, a RoleBinding a client made and uses at
 * once), so it waits, a second at most, until its view holds them. true when it does (decide
 * again); free when nothing is pending. Another server's writes are seen when its events come. */
static bool authz_caught_up(struct apiserver *s)
{
	return follower_catch_up(s->authz->follower, AUTHZ_CATCH_UP_MS);
}

int authorize(struct req *q)
{
	struct apiserver *s = q->s;
	if (!s->authz || identity_is_system_admin(&q->id) || identity_is_sre(&q->id) || identity_is_node(&q->id) ||
	    q->res->r->scope == SCOPE_CLUSTER)
		return 0; /* decided by the fixed rules in scope_request (the region's scope is the system's) */
	if (!atomic_load(&s->authz->ready)) {
		reply_status(q, E_UNAVAILABLE, "the authorizer is not ready yet; please retry");
		return -1;
	}
	struct rbac_attrs at;
	attrs_of(q, &at);
	if (rbac_authorize(s->authz->rbac, &q->id, q->tenant, &at, NULL) || (authz_caught_up(s) &&
	    rbac_authorize(s->authz->rbac, &q->id, q->tenant, &at, NULL)))
		return 0;
	struct buf msg = BUF_INIT;
	rbac_forbidden_message(&q->id, &at, &msg);
	reply_status_details(q, E_FORBIDDEN, q->path.name, NULL, "%s", buf_cstr(&msg));
	buf_release(&msg);
	return -1;
}

/* ---- escalation (admission) ---- */

static bool is_rbac_kind(const struct api_resource *r)
{
	return strcmp(r->group, RBAC_GROUP) == 0;
}

static void groups_text(const struct identity *id, struct buf *out)
{
	buf_addch(out, '[');
	for (size_t i = 0; i < id->ngroups; i++) {
		if (i)
			buf_addch(out, ' ');
		buf_addf(out, "\"%s\"", id->groups[i]);
	}
	buf_addch(out, ']');
}

int admit_rbac(struct req *q, json_t *obj, const json_t *old)
{
	const struct api_resource *r = q->res->r;
	struct apiserver *s = q->s;
	(void)old;
	if (!s->authz || !is_rbac_kind(r) || identity_is_system_admin(&q->id))
		return 0;
	bool binding = strstr(r->plural, "bindings") != NULL;
	bool cluster = r->scope != SCOPE_NAMESPACE;
	const char *name = json_path_str(obj, "metadata.name");
	const char *ns = cluster ? NULL : q->ns;
	struct rbac_rule *rules = NULL;
	size_t n = 0;
	int rc = 0;
	struct rbac_attrs special = { .group = RBAC_GROUP, .ns = ns };
	if (binding) {
		const char *kind = json_path_str(obj, "roleRef.kind"), *role = json_path_str(obj, "roleRef.name");
		bool cluster_ref = kind && strcmp(kind, "ClusterRole") == 0;
		special.verb = "bind";
		special.resource = cluster_ref ? "clusterroles" : "roles";
		special.name = role;
		if (rbac_authorize(s->authz->rbac, &q->id, q->tenant, &special, NULL))
			return 0;
		if (rbac_role_rules(s->authz->rbac, q->tenant, ns, kind, role ? role : "", &rules, &n) < 0)
			return 0; /* a binding to a role that does not exist grants nothing: accepted */
	} else {
		special.verb = "escalate";
		special.resource = r->plural;
		special.name = name;
		if (rbac_authorize(s->authz->rbac, &q->id, q->tenant, &special, NULL))
			return 0;
		if (rbac_rules_parse(json_object_get(obj, "rules"), "rules", cluster, &rules, &n, NULL) < 0)
			return 0; /* validation already refused it */
	}
	struct buf missing = BUF_INIT;
	if (!rbac_holds(s->authz->rbac, &q->id, q->tenant, ns, rules, n, &missing)) {
		struct buf g = BUF_INIT;
		groups_text(&q->id, &g);
		reply_status_details(q, E_FORBIDDEN, name, NULL,
				     "%s.%s \"%s\" is forbidden: user \"%s\" (groups=%s) is attempting to grant RBAC permissions not currently held:\n%s",
				     r->plural, RBAC_GROUP, name ? name : "", q->id.user ? q->id.user : "", buf_cstr(&g),
				     buf_cstr(&missing));
		buf_release(&g);
		rc = -1;
	}
	buf_release(&missing);
	rbac_rules_free(rules, n);
	return rc;
}

/* ---- access reviews ---- */

/* The identity a review asks about: the caller's for a self review, spec.user and spec.groups
 * (of the caller's tenant) for a subject access review. */
static void review_subject(struct req *q, const json_t *spec, bool self, struct identity *ret)
{
	if (self) {
		identity_copy(&q->id, ret);
		return;
	}
	memset(ret, 0, sizeof(*ret));
	ret->user = xstrdup(json_str(spec, "user") ? json_str(spec, "user") : "");
	ret->uid = json_str(spec, "uid") ? xstrdup(json_str(spec, "uid")) : NULL;
	ret->tenant = xstrdup(q->tenant && *q->tenant ? q->tenant : q->id.tenant);
	const json_t *groups = json_object_get(spec, "groups");
	size_t n = json_is_array(groups) ? json_array_size(groups) : 0;
	ret->groups = n ? xcalloc(n, sizeof(char *)) : NULL;
	for (size_t i = 0; i < n; i++)
		if (json_is_string(json_array_get(groups, i)))
			ret->groups[ret->ngroups++] = xstrdup(json_string_value(json_array_get(groups, i)));
}

void review_access(struct req *q, json_t *obj)
{
	const char *plural = q->res->r->plural;
	bool self = strcmp(plural, "selfsubjectaccessreviews") == 0;
	bool local = strcmp(plural, "localsubjectaccessreviews") == 0;
	const json_t *spec = json_object_get(obj, "spec");
	const json_t *ra = json_object_get(spec, "resourceAttributes"), *nra = json_object_get(spec, "nonResourceAttributes");
	if (!json_is_object(spec) || (!json_is_object(ra) && !json_is_object(nra)) || (ra && nra && json_is_object(ra) && json_is_object(nra))) {
		json_t *causes = json_pack("[{s:s,s:s,s:s}]", "reason", "FieldValueRequired", "field", "spec",
					   "message", "Required value: exactly one of resourceAttributes or nonResourceAttributes");
		reply_status_details(q, E_INVALID, NULL, causes, "%s.authorization.k8s.io is invalid: spec: exactly one of resourceAttributes or nonResourceAttributes is required",
				     q->res->r->kind);
		return;
	}
	if (!self && !json_str(spec, "user") && !json_is_array(json_object_get(spec, "groups"))) {
		json_t *causes = json_pack("[{s:s,s:s,s:s}]", "reason", "FieldValueRequired", "field", "spec.user",
					   "message", "Required value: at least one of user or group must be specified");
		reply_status_details(q, E_INVALID, NULL, causes, "%s.authorization.k8s.io is invalid: spec.user: Required value: at least one of user or group must be specified",
				     q->res->r->kind);
		return;
	}
	struct rbac_attrs at = { 0 };
	if (json_is_object(ra)) {
		at.verb = json_str(ra, "verb");
		at.group = json_str(ra, "group") ? json_str(ra, "group") : "";
		at.resource = json_str(ra, "resource") ? json_str(ra, "resource") : "";
		at.subresource = json_str(ra, "subresource");
		at.name = json_str(ra, "name");
		at.ns = json_str(ra, "namespace");
		if (local && (!at.ns || !q->ns || strcmp(at.ns, q->ns) != 0)) {
			reply_status(q, E_BAD_REQUEST, "spec.resourceAttributes.namespace must match namespace: %s",
				     q->ns ? q->ns : "");
			return;
		}
	} else {
		at.verb = json_str(nra, "verb");
		at.path = json_str(nra, "path") ? json_str(nra, "path") : "";
	}
	if (!at.verb)
		at.verb = "";
	struct identity id;
	review_subject(q, spec, self, &id);
	const char *tenant = q->tenant && *q->tenant ? q->tenant : q->id.tenant;
	struct buf reason = BUF_INIT;
	bool allowed = false;
	if (!authz_ready(q->s)) {
		reply_status(q, E_UNAVAILABLE, "the authorizer is not ready yet; please retry");
		goto out;
	}
	allowed = authz_decide(q->s, &id, tenant, &at, &reason);
	json_t *st = json_pack("{s:b}", "allowed", allowed);
	if (reason.len)
		json_object_set_new(st, "reason", json_string(buf_cstr(&reason)));
	reply_review(q, obj, st);
out:
	buf_release(&reason);
	identity_release(&id);
}

struct rules_out {
	json_t *res, *nonres;
};

static void add_rule(void *ud, const struct rbac_rule *r)
{
	struct rules_out *o = ud;
	json_t *j = rbac_rule_json(r);
	json_array_append_new(r->nurls ? o->nonres : o->res, j);
}

void review_rules(struct req *q, json_t *obj)
{
	const char *ns = json_path_str(obj, "spec.namespace");
	const char *tenant = q->tenant && *q->tenant ? q->tenant : q->id.tenant;
	struct rules_out o = { json_array(), json_array() };
	if (identity_is_system_admin(&q->id)) {
		json_array_append_new(o.res, json_pack("{s:[s],s:[s],s:[s]}", "verbs", "*", "apiGroups", "*", "resources", "*"));
		json_array_append_new(o.nonres, json_pack("{s:[s],s:[s]}", "verbs", "*", "nonResourceURLs", "*"));
	} else if (q->s->authz) {
		if (!authz_ready(q->s)) {
			json_decref(o.res), json_decref(o.nonres);
			reply_status(q, E_UNAVAILABLE, "the authorizer is not ready yet; please retry");
			return;
		}
		rbac_each_rule(q->s->authz->rbac, &q->id, tenant, ns, add_rule, &o);
	}
	reply_review(q, obj,
		     json_pack("{s:o,s:o,s:b}", "resourceRules", o.res, "nonResourceRules", o.nonres, "incomplete", false));
}

/* ---- default roles ---- */

struct boot {
	struct apiserver *s;
	const char *tenant;
};

static void boot_one(void *ud, const char *plural, const json_t *obj)
{
	struct boot *b = ud;
	int rc = apiserver_create(b->s, plural, b->tenant, NULL, obj);
	if (rc < 0 && rc != E_ALREADY_EXISTS)
		log_warn("cannot create default role", "tenant=\"%s\" %s=\"%s\" err=%s", b->tenant, plural,
			 json_path_str(obj, "metadata.name"), err_reason(rc));
}

void apiserver_bootstrap_tenant(struct apiserver *s, const char *tenant)
{
	if (!s->authz)
		return;
	struct boot b = { s, tenant };
	rbac_bootstrap_objects(boot_one, &b);
}

/* At start, once the authorizer holds the RBAC objects: the system tenant and every tenant
 * without a cluster-admin role get the default roles (a partition upgraded from before RBAC, or
 * a tenant whose creation was interrupted). */
static void bootstrap_missing(struct apiserver *s)
{
	struct served *tenants = served_by_plural(s, "tenants");
	struct cobj **objs = NULL;
	size_t n = 0;
	int64_t rv;
	char **names = xcalloc(1, sizeof(char *));
	size_t nn = 0;
	names[nn++] = xstrdup(TENANT_SYSTEM);
	if (tenants && tenants->cache && wcache_list(tenants->cache, &(struct wfilter){ 0 }, &objs, &n, &rv) == 0) {
		names = xrealloc(names, (n + 1) * sizeof(char *));
		for (size_t i = 0; i < n; i++) {
			names[nn++] = xstrdup(objs[i]->name);
			cobj_unref(objs[i]);
		}
		free(objs);
	}
	for (size_t i = 0; i < nn; i++) {
		struct rbac_rule *rules = NULL;
		size_t nr = 0;
		if (rbac_role_rules(s->authz->rbac, names[i], NULL, "ClusterRole", "cluster-admin", &rules, &nr) < 0)
			apiserver_bootstrap_tenant(s, names[i]);
		rbac_rules_free(rules, nr);
		free(names[i]);
	}
	free(names);
}
