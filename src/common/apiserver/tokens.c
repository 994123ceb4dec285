/* Service accounts in the API server: TokenRequest (serviceaccounts/<name>/token), the check
 * that makes a service account's token worthless once its service account or bound object is
 * gone, and the authentication.k8s.io/v1 reviews (TokenReview, SelfSubjectReview). */
#include "internal.h"
#include "ursa/jsonutil.h"
#include "ursa/timeutil.h"
#include "ursa/tokenreq.h"
#include "ursa/xalloc.h"
#include <stdlib.h>
#include <string.h>

#define EXTRA_TENANT "ursa.io/tenant"
#define EXTRA_POD_NAME "authentication.kubernetes.io/pod-name"
#define EXTRA_POD_UID "authentication.kubernetes.io/pod-uid"

/* True if obj is there and not past its deletion time. */
static bool alive(const json_t *obj, time_t now)
{
	time_t t;
	const char *del = json_path_str(obj, "metadata.deletionTimestamp");
	return obj && (!del || (rfc3339_parse(del, &t) == 0 && t > now));
}

static bool same_uid(const json_t *obj, const char *uid)
{
	const char *got = json_path_str(obj, "metadata.uid");
	return got && uid && strcmp(got, uid) == 0;
}

/* The object from the watch cache (NULL if absent): a new reference. */
static json_t *cached(struct served *sv, const char *key)
{
	int64_t rv;
	json_t *obj = wcache_get_tree(sv->cache, key, &rv);
	if (obj)
		return obj;
	struct cobj *o = wcache_get(sv->cache, key);
	if (o)
		obj = json_loadb(o->json, o->json_len, 0, NULL);
	cobj_unref(o);
	return obj;
}

/* True if plural's object tenant/ns/name exists with uid. The watch cache answers; when it has
 * no such object (not ready, a few ms behind a create, or really gone) etcd decides, so a
 * token is never refused for a lagging cache. */
static bool object_alive(struct apiserver *s, const char *plural, const char *tenant, const char *ns,
			 const char *name, const char *uid)
{
	struct served *sv = served_by_plural(s, plural);
	if (!sv || !sv->cache)
		return false; /* this server cannot tell (a resource manager's): refuse */
	char *key = store_key(sv, tenant, ns, name);
	time_t now = time(NULL);
	json_t *obj = wcache_ready(sv->cache) ? cached(sv, key) : NULL;
	bool ok = alive(obj, now) && same_uid(obj, uid);
	if (!ok) {
		json_decref(obj);
		obj = NULL;
		ok = store_get(s, key, &obj, NULL) == 0 && alive(obj, now) && same_uid(obj, uid);
	}
	json_decref(obj);
	free(key);
	return ok;
}

/* 0 if id is not a service account's, or if its service account and bound object still exist
 * with the uids its token named; else E_UNAUTHORIZED. */
static int sa_identity_check(struct apiserver *s, const struct identity *id)
{
	if (!id->sa_uid)
		return 0;
	char *ns = NULL, *name = NULL;
	int rc = E_UNAUTHORIZED;
	if (!id->tenant || sa_user_split(id->user, &ns, &name) < 0)
		goto out;
	if (!object_alive(s, "serviceaccounts", id->tenant, ns, name, id->sa_uid))
		goto out;
	if (id->bound_kind) {
		const char *plural = strcmp(id->bound_kind, "Pod") == 0 ? "pods" : "secrets";
		if (!object_alive(s, plural, id->tenant, ns, id->bound_name, id->bound_uid))
			goto out;
	}
	rc = 0;
out:
	free(ns);
	free(name);
	return rc;
}

int sa_token_check(struct req *q)
{
	return sa_identity_check(q->s, &q->id);
}

/* TokenRequest --------------------------------------------------------------------------------- */

/* The bound object of tr checked in q's namespace: 0 with its uid in *ret_uid (new), or the
 * error already replied. */
static int check_bound(struct req *q, const struct tokenreq *tr, char **ret_uid)
{
	bool pod = strcmp(tr->bound_kind, "Pod") == 0;
	const char *plural = pod ? "pods" : "secrets";
	struct served *sv = served_by_plural(q->s, plural);
	json_t *obj = NULL;
	int rc = E_NOT_FOUND;
	if (sv) {
		char *key = store_key(sv, q->tenant, q->ns, tr->bound_name);
		rc = store_get(q->s, key, &obj, NULL);
		free(key);
	}
	if (rc == 0 && !alive(obj, time(NULL)))
		rc = E_NOT_FOUND;
	if (rc == E_NOT_FOUND) {
		reply_status(q, E_NOT_FOUND, "%s \"%s\" not found", plural, tr->bound_name);
		goto out;
	}
	if (rc < 0) {
		reply_status(q, rc, "storage error");
		goto out;
	}
	const char *uid = json_path_str(obj, "metadata.uid");
	if (!uid || (tr->bound_uid && strcmp(uid, tr->bound_uid) != 0)) {
		reply_status(q, E_CONFLICT,
			     "Operation cannot be fulfilled on serviceaccounts \"%s\": the UID in the bound object reference "
			     "(%s) does not match the UID in record. The object might have been deleted and then recreated",
			     q->path.name, tr->bound_uid ? tr->bound_uid : "");
		rc = E_CONFLICT;
		goto out;
	}
	const char *node = pod ? json_path_str(obj, "spec.nodeName") : NULL;
	if (q->node && (!pod || !node || strcmp(node, q->node) != 0)) {
		reply_status(q, E_FORBIDDEN,
			     "serviceaccounts \"%s\" is forbidden: node \"%s\" can only request tokens bound to pods "
			     "scheduled to it", q->path.name, q->node);
		rc = E_FORBIDDEN;
		goto out;
	}
	const char *pod_sa = pod ? json_path_str(obj, "spec.serviceAccountName") : NULL;
	if (pod && strcmp(pod_sa && *pod_sa ? pod_sa : "default", q->path.name) != 0) {
		reply_status(q, E_BAD_REQUEST,
			     "cannot bind token for serviceaccount \"%s\" to pod running with different serviceaccount name.",
			     q->path.name);
		rc = E_BAD_REQUEST;
		goto out;
	}
	*ret_uid = xstrdup(uid);
out:
	json_decref(obj);
	return rc;
}

/* The identity a token of service account ns/name (uid) of tenant carries. */
static void sa_identity(const char *tenant, const char *ns, const char *name, const char *uid, struct identity *ret)
{
	struct identity id = {
		.user = xasprintf(SA_USER_PREFIX "%s:%s", ns, name),
		.uid = xstrdup(uid),
		.tenant = xstrdup(tenant),
		.sa_uid = xstrdup(uid),
		.ngroups = 2,
	};
	id.groups = xcalloc(2, sizeof(*id.groups));
	id.groups[0] = xstrdup(GROUP_SERVICEACCOUNTS);
	id.groups[1] = xasprintf(GROUP_SERVICEACCOUNTS ":%s", ns);
	*ret = id;
}

static json_t *token_request_reply(struct req *q, const struct tokenreq *tr, const char *bound_uid, const char *tok,
				   time_t exp)
{
	json_t *aud = json_array();
	for (size_t i = 0; i < tr->naudiences; i++)
		json_array_append_new(aud, json_string(tr->audiences[i]));
	json_t *ref = json_null();
	if (tr->bound_kind)
		ref = json_pack("{s:s,s:s,s:s,s:s}", "kind", tr->bound_kind, "apiVersion", "v1", "name", tr->bound_name,
				"uid", bound_uid);
	struct buf ts = BUF_INIT;
	rfc3339_add(&ts, exp);
	json_t *r = json_pack("{s:s,s:s,s:{s:s,s:s,s:n},s:{s:o,s:I,s:o},s:{s:s,s:s}}", "kind", "TokenRequest",
			      "apiVersion", "authentication.k8s.io/v1", "metadata", "name", q->path.name, "namespace",
			      q->ns, "creationTimestamp", "spec", "audiences", aud, "expirationSeconds",
			      (json_int_t)tr->expiration_s, "boundObjectRef", ref, "status", "token", tok,
			      "expirationTimestamp", buf_cstr(&ts));
	buf_release(&ts);
	return r;
}

void handle_token_request(struct req *q)
{
	if (!q->s->sa_signer || !q->ns) {
		reply_status(q, E_NOT_FOUND, "the server could not find the requested resource%s",
			     q->ns ? " (no --service-account-signing-key-file)" : "");
		return;
	}
	json_t *body = parse_body(q), *sa = NULL, *reply = NULL;
	if (!body)
		return;
	struct tokenreq tr = { 0 };
	struct identity id = { 0 };
	char *err = NULL, *bound_uid = NULL, *tok = NULL;
	if (check_type_meta(q, body, "TokenRequest", "authentication.k8s.io/v1") < 0)
		goto out;
	if (tokenreq_parse(json_object_get(body, "spec"), &tr, &err) < 0) {
		reply_status_details(q, E_INVALID, q->path.name, NULL, "TokenRequest.authentication.k8s.io \"%s\" is invalid: %s",
				     q->path.name, err);
		goto out;
	}
	char *key = store_key(q->res, q->tenant, q->ns, q->path.name);
	int rc = store_get(q->s, key, &sa, NULL);
	free(key);
	if (rc == E_NOT_FOUND || (rc == 0 && !alive(sa, time(NULL)))) {
		reply_not_found(q, q->path.name);
		goto out;
	}
	if (rc < 0 || !json_path_str(sa, "metadata.uid")) {
		reply_status(q, rc < 0 ? rc : E_INTERNAL, "storage error");
		goto out;
	}
	if (q->node && !tr.bound_kind) {
		reply_status(q, E_FORBIDDEN, "serviceaccounts \"%s\" is forbidden: node \"%s\" can only request tokens "
					     "bound to pods scheduled to it", q->path.name, q->node);
		goto out;
	}
	if (tr.bound_kind && check_bound(q, &tr, &bound_uid) < 0)
		goto out;
	sa_identity(q->tenant, q->ns, q->path.name, json_path_str(sa, "metadata.uid"), &id);
	if (tr.bound_kind) {
		id.bound_kind = xstrdup(tr.bound_kind);
		id.bound_name = xstrdup(tr.bound_name);
		id.bound_uid = xstrdup(bound_uid);
	}
	time_t now = time(NULL);
	tok = jwt_signer_sign(q->s->sa_signer, &id, (const char *const *)tr.audiences, tr.naudiences, now,
			      tr.expiration_s, &err);
	if (!tok) {
		reply_status(q, E_INTERNAL, "cannot sign the token: %s", err);
		goto out;
	}
	reply = token_request_reply(q, &tr, bound_uid, tok, now + tr.expiration_s);
	reply_json(q, 201, reply);
out:
	json_decref(body);
	json_decref(sa);
	json_decref(reply);
	tokenreq_release(&tr);
	identity_release(&id);
	free(err);
	free(bound_uid);
	free(tok);
}

/* Reviews ------------------------------------------------------------------------------------- */

static void add_extra(json_t *extra, const char *key, const char *value)
{
	if (value)
		json_object_set_new(extra, key, json_pack("[s]", value));
}

/* authentication.k8s.io/v1 UserInfo of id: a new reference. Groups end with system:authenticated
 * (every authenticated caller's, as Kubernetes adds it). */
static json_t *user_info(const struct identity *id)
{
	json_t *groups = json_array(), *extra = json_object();
	for (size_t i = 0; i < id->ngroups; i++)
		json_array_append_new(groups, json_string(id->groups[i]));
	if (!identity_in_group(id, GROUP_AUTHENTICATED))
		json_array_append_new(groups, json_string(GROUP_AUTHENTICATED));
	add_extra(extra, EXTRA_TENANT, id->tenant);
	if (id->bound_kind && strcmp(id->bound_kind, "Pod") == 0) {
		add_extra(extra, EXTRA_POD_NAME, id->bound_name);
		add_extra(extra, EXTRA_POD_UID, id->bound_uid);
	}
	json_t *u = json_pack("{s:s,s:o,s:o}", "username", id->user ? id->user : "", "groups", groups, "extra", extra);
	if (id->uid && *id->uid)
		json_object_set_new(u, "uid", json_string(id->uid));
	return u;
}

void review_token(struct req *q, json_t *obj)
{
	json_t *tok = json_path(obj, "spec.token"), *auds = json_path(obj, "spec.audiences");
	if (!json_is_string(tok) || json_string_length(tok) == 0) {
		reply_status(q, E_BAD_REQUEST, "token is required for TokenReview in authentication");
		return;
	}
	if ((auds && !json_is_null(auds) && !json_is_array(auds)) || json_array_size(auds) > TOKENREQ_AUDIENCES_MAX) {
		reply_status(q, E_BAD_REQUEST, "spec.audiences must be a list of at most %d strings", TOKENREQ_AUDIENCES_MAX);
		return;
	}
	size_t n = json_array_size(auds), i;
	json_t *a, *matched = json_array();
	for (i = 0; i < n; i++)
		if (!json_is_string(json_array_get(auds, i))) {
			json_decref(matched);
			reply_status(q, E_BAD_REQUEST, "spec.audiences must be a list of at most %d strings",
				     TOKENREQ_AUDIENCES_MAX);
			return;
		}
	json_t *want = n ? json_incref(auds) : json_pack("[s]", API_AUDIENCE);
	struct identity id = { 0 };
	bool found = false;
	json_array_foreach(want, i, a) {
		struct identity cand = { 0 };
		if (authn_token_for(q->s->authn, json_string_value(tok), json_string_value(a), &cand) < 0)
			continue;
		json_array_append(matched, a);
		if (!found)
			id = cand, found = true;
		else
			identity_release(&cand);
	}
	json_t *st;
	if (!found)
		st = json_pack("{s:b,s:{},s:s}", "authenticated", 0, "user", "error", "invalid bearer token");
	else if (sa_identity_check(q->s, &id) < 0)
		st = json_pack("{s:b,s:{},s:s}", "authenticated", 0, "user", "error",
			       "service account token has been invalidated");
	else
		st = json_pack("{s:b,s:o,s:O}", "authenticated", 1, "user", user_info(&id), "audiences", matched);
	reply_review(q, obj, st);
	identity_release(&id);
	json_decref(matched);
	json_decref(want);
}

void review_self_subject(struct req *q, json_t *obj)
{
	reply_review(q, obj, json_pack("{s:o}", "userInfo", user_info(&q->id)));
}
