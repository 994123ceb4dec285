/* Subresources: status, scale, binding, eviction, log, token (tokens.c). Each is an entry in one table. */
#include "internal.h"
#include "ursa/crd.h"
#include "ursa/jsonutil.h"
#include "ursa/pdb.h"
#include "ursa/timeutil.h"
#include "ursa/xalloc.h"
#include <stdlib.h>
#include <string.h>

static json_t *status_success(struct req *q, const json_t *obj)
{
	return json_pack("{s:s,s:s,s:{},s:s,s:i}", "kind", "Status", "apiVersion", "v1", "metadata", "status", "Success",
			 "code", q->success_code ? q->success_code : 200);
}

/* status -------------------------------------------------------------------------------------- */
static int mutate_status_put(struct req *q, const json_t *cur, void *ud, json_t **ret_new)
{
	json_t *body = ud, *st = json_object_get(body, "status");
	json_t *obj = json_deep_copy(cur);
	if (st)
		json_object_set(obj, "status", st);
	const char *rv = json_path_str(body, "metadata.resourceVersion");
	json_object_del(json_object_get(obj, "metadata"), "resourceVersion");
	if (rv && *rv)
		json_object_set_new(json_object_get(obj, "metadata"), "resourceVersion", json_string(rv));
	*ret_new = obj;
	return 0;
}

static int mutate_status_patch(struct req *q, const json_t *cur, void *ud, json_t **ret_new)
{
	json_t *patched = NULL;
	int rc = patch_doc_apply(q, ud, cur, q->res->r->kind, &patched);
	if (rc < 0)
		return rc;
	rc = mutate_status_put(q, cur, patched, ret_new);
	if (!q->rv_precondition)
		json_object_del(json_object_get(*ret_new, "metadata"), "resourceVersion");
	json_decref(patched);
	return rc;
}

static void do_status(struct req *q)
{
	if (strcmp(q->verb, "get") == 0) {
		handle_get(q);
	} else if (strcmp(q->verb, "update") == 0) {
		json_t *body = parse_body(q);
		if (!body)
			return;
		const char *rv = json_path_str(body, "metadata.resourceVersion");
		q->rv_precondition = rv && *rv;
		if (check_fields(q, body) == 0)
			do_update(q, q->path.name, UPDATE_STATUS, mutate_status_put, body, false, NULL);
		json_decref(body);
	} else if (strcmp(q->verb, "patch") == 0) {
		struct patch_doc p = { 0 };
		if (patch_doc_parse(q, &p) < 0)
			return;
		q->rv_precondition = json_is_object(p.doc) && json_path(p.doc, "metadata.resourceVersion");
		do_update(q, q->path.name, UPDATE_STATUS, mutate_status_patch, &p, false, NULL);
		json_decref(p.doc);
	} else {
		reply_status(q, E_METHOD, "the server does not allow this method on the requested resource");
	}
}

/* scale (autoscaling/v1 Scale over spec.replicas; a custom resource's over its CRD's paths) ------ */

/* The CRD's scale paths, or NULL for built-in kinds. */
static const struct crd_version *custom_scale(const struct req *q)
{
	const struct crd_version *v = q->res->r->crd_version;
	return v && v->scale ? v : NULL;
}

/* Sets the member at a simple dotted path (".spec.replicas"), creating objects on the way (each
 * an object of obj's own: a cached tree's parts are shared). */
static void set_dotted(json_t *obj, const char *path, json_t *val)
{
	char *p = xstrdup(path[0] == '.' ? path + 1 : path), *save = NULL;
	json_t *cur = obj;
	char *seg = strtok_r(p, ".", &save);
	while (seg) {
		char *next = strtok_r(NULL, ".", &save);
		if (!next) {
			json_object_set(cur, seg, val);
			break;
		}
		json_t *child = json_object_get(cur, seg);
		json_t *own = json_is_object(child) ? json_copy(child) : json_object();
		json_object_set_new(cur, seg, own);
		cur = own;
		seg = next;
	}
	free(p);
}

static json_t *scale_of(struct req *q, const json_t *obj)
{
	const json_t *m = json_object_get(obj, "metadata");
	json_t *meta = json_object();
	static const char *const keep[] = { "name", "namespace", "tenant", "uid", "resourceVersion", "creationTimestamp" };
	for (size_t i = 0; i < sizeof(keep) / sizeof(keep[0]); i++)
		if (json_object_get(m, keep[i]))
			json_object_set(meta, keep[i], json_object_get(m, keep[i]));
	struct buf sel = BUF_INIT, err = BUF_INIT;
	const struct crd_version *cv = custom_scale(q);
	const json_t *spec_rep, *st_rep;
	if (cv) {
		spec_rep = crd_jsonpath_get(cv->spec_replicas_path, obj);
		st_rep = crd_jsonpath_get(cv->status_replicas_path, obj);
		const json_t *ls = cv->label_selector_path ? crd_jsonpath_get(cv->label_selector_path, obj) : NULL;
		if (json_is_string(ls))
			buf_adds(&sel, json_string_value(ls));
	} else {
		struct label_selector *ls = NULL;
		if (label_selector_from_json(json_path(obj, "spec.selector"), &ls, &err) == 0)
			label_selector_format(ls, &sel);
		label_selector_free(ls);
		spec_rep = json_path(obj, "spec.replicas");
		st_rep = json_path(obj, "status.replicas");
	}
	json_t *s = json_pack("{s:s,s:s,s:o,s:{s:I},s:{s:I,s:s}}", "kind", "Scale", "apiVersion", "autoscaling/v1",
			      "metadata", meta, "spec", "replicas", (json_int_t)json_integer_value(spec_rep), "status",
			      "replicas", (json_int_t)json_integer_value(st_rep), "selector", buf_cstr(&sel));
	buf_release(&sel);
	buf_release(&err);
	return s;
}

static int apply_replicas(struct req *q, const json_t *cur, const json_t *scale, json_t **ret_new)
{
	json_t *rep = json_path(scale, "spec.replicas");
	if (!json_is_integer(rep) || json_integer_value(rep) < 0) {
		reply_status(q, E_INVALID, "Scale.autoscaling \"%s\" is invalid: spec.replicas: Invalid value: must be a non-negative integer",
			     q->path.name);
		return E_INVALID;
	}
	json_t *obj = json_deep_copy(cur);
	if (custom_scale(q))
		set_dotted(obj, custom_scale(q)->spec_replicas_path, rep);
	else
		json_object_set(json_obj_child(obj, "spec"), "replicas", rep);
	json_object_del(json_object_get(obj, "metadata"), "resourceVersion");
	const char *rv = json_path_str(scale, "metadata.resourceVersion");
	if (q->rv_precondition && rv)
		json_object_set_new(json_object_get(obj, "metadata"), "resourceVersion", json_string(rv));
	*ret_new = obj;
	return 0;
}

static int mutate_scale_put(struct req *q, const json_t *cur, void *ud, json_t **ret_new)
{
	return apply_replicas(q, cur, ud, ret_new);
}

static int mutate_scale_patch(struct req *q, const json_t *cur, void *ud, json_t **ret_new)
{
	json_t *scale = scale_of(q, cur), *patched = NULL;
	int rc = patch_doc_apply(q, ud, scale, "Scale", &patched);
	if (rc == 0)
		rc = apply_replicas(q, cur, patched, ret_new);
	json_decref(scale);
	json_decref(patched);
	return rc;
}

static void do_scale(struct req *q)
{
	q->present = scale_of;
	if (strcmp(q->verb, "get") == 0) {
		char *key = store_key(q->res, q->tenant, q->ns, q->path.name);
		json_t *obj = NULL;
		int rc = store_get(q->s, key, &obj, NULL);
		free(key);
		if (rc == E_NOT_FOUND)
			reply_not_found(q, q->path.name);
		else if (rc < 0)
			reply_status(q, rc, "storage error");
		else {
			json_t *s = scale_of(q, obj);
			reply_json(q, 200, s);
			json_decref(s);
		}
		json_decref(obj);
	} else if (strcmp(q->verb, "update") == 0) {
		json_t *body = parse_body(q);
		if (!body)
			return;
		if (fieldval_check(q, body, "autoscaling/v1", "Scale", true) == 0 &&
		    check_type_meta(q, body, "Scale", "autoscaling/v1") == 0) {
			const char *rv = json_path_str(body, "metadata.resourceVersion");
			q->rv_precondition = rv && *rv;
			do_update(q, q->path.name, UPDATE_RAW, mutate_scale_put, body, false, NULL);
		}
		json_decref(body);
	} else if (strcmp(q->verb, "patch") == 0) {
		struct patch_doc p = { 0 };
		if (patch_doc_parse(q, &p) < 0)
			return;
		q->rv_precondition = json_is_object(p.doc) && json_path(p.doc, "metadata.resourceVersion");
		do_update(q, q->path.name, UPDATE_RAW, mutate_scale_patch, &p, false, NULL);
		json_decref(p.doc);
	} else {
		reply_status(q, E_METHOD, "the server does not allow this method on the requested resource");
	}
}

/* binding: the scheduler's POST of a Binding sets spec.nodeName and PodScheduled ---------------- */

/* obj's member key as an object of obj's own: a shallow copy of what was there (which may be
 * shared with a cached tree), or a new empty object. */
static json_t *own_child(json_t *obj, const char *key)
{
	json_t *v = json_object_get(obj, key);
	json_t *own = json_is_object(v) ? json_copy(v) : json_object();
	json_object_set_new(obj, key, own);
	return own;
}

static void set_condition(json_t *obj, const char *type, const char *status)
{
	json_t *st = own_child(obj, "status");
	json_t *conds = json_object_get(st, "conditions");
	conds = json_is_array(conds) ? json_copy(conds) : json_array();
	json_object_set_new(st, "conditions", conds);
	struct buf now = BUF_INIT;
	rfc3339_add(&now, time(NULL));
	json_t *c = json_pack("{s:s,s:s,s:n,s:s}", "type", type, "status", status, "lastProbeTime", "lastTransitionTime",
			      buf_cstr(&now));
	buf_release(&now);
	size_t i;
	json_t *v;
	json_array_foreach(conds, i, v) {
		if (json_str(v, "type") && strcmp(json_str(v, "type"), type) == 0) {
			json_array_set_new(conds, i, c);
			return;
		}
	}
	json_array_append_new(conds, c);
}

static int mutate_bind(struct req *q, const json_t *cur, void *ud, json_t **ret_new)
{
	const char *node = ud;
	const char *bound = json_path_str(cur, "spec.nodeName");
	if (bound && *bound) {
		reply_status_details(q, E_CONFLICT, q->path.name, NULL, "Operation cannot be fulfilled on pods/binding \"%s\": pod %s is already assigned to node \"%s\"",
				     q->path.name, q->path.name, bound);
		return E_CONFLICT;
	}
	if (json_path(cur, "metadata.deletionTimestamp")) {
		reply_status(q, E_CONFLICT, "pod %s is being deleted, cannot be assigned to a host", q->path.name);
		return E_CONFLICT;
	}
	/* copies of the path changed only: the rest stays shared with cur, which may be the cache's */
	json_t *obj = json_copy((json_t *)cur);
	json_object_set_new(own_child(obj, "spec"), "nodeName", json_string(node));
	set_condition(obj, "PodScheduled", "True");
	json_object_del(own_child(obj, "metadata"), "resourceVersion");
	*ret_new = obj;
	return 0;
}

static void do_binding(struct req *q)
{
	json_t *body = parse_body(q);
	if (!body)
		return;
	const char *node = json_path_str(body, "target.name");
	if (check_type_meta(q, body, "Binding", "v1") < 0)
		goto out;
	if (!node || !*node) {
		reply_status(q, E_INVALID, "Binding \"%s\" is invalid: target.name: Required value", q->path.name);
		goto out;
	}
	q->present = status_success;
	q->success_code = 201;
	do_update(q, q->path.name, UPDATE_RAW, mutate_bind, (void *)node, false, NULL);
out:
	json_decref(body);
}

/* eviction: a policy/v1 Eviction deletes the pod unless that would break its PodDisruptionBudget
 * (ursa/pdb.h): the budget's status is charged first, conditional on its revision (a conflict
 * is judged again on a fresh read), then the pod goes. ---------------------------------------- */
struct evict_pdb {
	const json_t *pod;
	const char *pod_name;
	enum pdb_verdict verdict; /* of the last copy judged */
	json_t *pdb;              /* that copy (new reference) */
};

static int mutate_pdb_charge(struct req *q, const json_t *cur, void *ud, json_t **ret_new)
{
	(void)q;
	struct evict_pdb *e = ud;
	json_decref(e->pdb);
	e->pdb = json_deep_copy(cur);
	e->verdict = pdb_eviction_verdict(cur, e->pod);
	if (e->verdict != PDB_EVICT_CONSUME)
		return E_TOO_MANY; /* no reply: the caller answers from e */
	json_t *obj = json_deep_copy(cur);
	json_object_set_new(obj, "status", pdb_status_after_eviction(cur, e->pod_name, time(NULL)));
	json_object_del(json_object_get(obj, "metadata"), "resourceVersion");
	*ret_new = obj;
	return 0;
}

/* The PodDisruptionBudgets of q's namespace selecting pod (new array), or NULL when the
 * cache is not ready. */
static json_t *pdbs_of_pod(struct req *q, struct served *ps, const json_t *pod)
{
	struct wfilter wf = { .tenant = q->tenant, .ns = q->ns };
	struct cobj **objs = NULL;
	size_t n = 0;
	int64_t rv;
	if (wcache_list(ps->cache, &wf, &objs, &n, &rv) < 0)
		return NULL;
	json_t *out = json_array();
	for (size_t i = 0; i < n; i++) {
		json_t *pdb = json_loadb(objs[i]->json, objs[i]->json_len, 0, NULL);
		if (pdb && pdb_selects(pdb, pod))
			json_array_append(out, pdb);
		json_decref(pdb);
		cobj_unref(objs[i]);
	}
	free(objs);
	return out;
}

static void reply_budget_429(struct req *q, const json_t *pdb, bool stale)
{
	const char *name = json_path_str(pdb, "metadata.name");
	struct buf msg = BUF_INIT;
	if (stale)
		buf_addf(&msg, "The disruption budget %s is still being processed by the server.", name ? name : "");
	else
		buf_addf(&msg, "The disruption budget %s needs %lld healthy pods and has %lld currently",
			 name ? name : "", (long long)json_integer_value(json_path(pdb, "status.desiredHealthy")),
			 (long long)json_integer_value(json_path(pdb, "status.currentHealthy")));
	json_t *causes = json_pack("[{s:s,s:s}]", "type", PDB_CAUSE, "message", buf_cstr(&msg));
	json_t *st = status_object(E_TOO_MANY, PDB_EVICT_MESSAGE, NULL, NULL, causes);
	if (stale)
		json_object_set_new(json_object_get(st, "details"), "retryAfterSeconds", json_integer(10));
	if (q->reply)
		http_reply_header(q->reply, "Retry-After", stale ? "10" : "1");
	reply_json(q, err_http_code(E_TOO_MANY), st);
	json_decref(st);
	buf_release(&msg);
}

/* 0 when the pod may go (its budget charged if it has one), else replied. */
static int check_budget(struct req *q, const json_t *pod)
{
	struct served *ps = served_by_plural(q->s, "poddisruptionbudgets");
	if (!ps)
		return 0;
	json_t *pdbs = pdbs_of_pod(q, ps, pod);
	if (!pdbs) {
		reply_status(q, E_UNAVAILABLE, "the watch cache is not ready yet; please retry");
		return E_UNAVAILABLE;
	}
	int rc = 0;
	if (json_array_size(pdbs) > 1) {
		reply_status(q, E_INTERNAL, "Internal error occurred: This pod has more than one PodDisruptionBudget, "
					    "which the eviction subresource does not support.");
		rc = E_INTERNAL;
		goto out;
	}
	if (json_array_size(pdbs) == 0)
		goto out;
	struct evict_pdb e = { .pod = pod, .pod_name = q->path.name,
			       .verdict = pdb_eviction_verdict(json_array_get(pdbs, 0), pod) };
	const char *dr = http_query(q->http, "dryRun");
	if (e.verdict == PDB_EVICT_IGNORE || (e.verdict == PDB_EVICT_CONSUME && dr && *dr))
		goto out;
	struct req pq = { .s = q->s, .verb = "update", .res = ps, .tenant = q->tenant, .ns = q->ns };
	const char *pdb_name = json_path_str(json_array_get(pdbs, 0), "metadata.name");
	int urc = do_update(&pq, pdb_name, UPDATE_STATUS, mutate_pdb_charge, &e, false, NULL);
	if (urc == E_TOO_MANY && e.verdict == PDB_EVICT_IGNORE) {
		rc = 0;
	} else if (urc == E_TOO_MANY && (e.verdict == PDB_EVICT_DENY || e.verdict == PDB_EVICT_STALE)) {
		reply_budget_429(q, e.pdb, e.verdict == PDB_EVICT_STALE);
		rc = E_TOO_MANY;
	} else if (urc == E_TOO_MANY && e.verdict == PDB_EVICT_FORBIDDEN) {
		bool negative = json_integer_value(json_path(e.pdb, "status.disruptionsAllowed")) < 0;
		reply_status(q, E_FORBIDDEN, "poddisruptionbudgets.policy \"%s\" is forbidden: %s", pdb_name,
			     negative ? "pdb disruptions allowed is negative"
				      : "DisruptedPods map too big - too many evictions not confirmed by PDB controller");
		rc = E_FORBIDDEN;
	} else if (urc == E_NOT_FOUND) {
		rc = 0; /* the budget went meanwhile */
	} else if (urc < 0) {
		reply_status(q, urc == E_CONFLICT ? E_TOO_MANY : urc,
			     "the pod's disruption budget could not be updated; please retry");
		rc = urc;
	}
	json_decref(e.pdb);
out:
	json_decref(pdbs);
	return rc;
}

static void do_eviction(struct req *q)
{
	json_t *body = parse_body(q), *pod = NULL;
	if (!body)
		return;
	if (check_type_meta(q, body, "Eviction", "policy/v1") < 0)
		goto out;
	char *key = store_key(q->res, q->tenant, q->ns, q->path.name);
	int rc = store_get(q->s, key, &pod, NULL);
	free(key);
	if (rc == E_NOT_FOUND) {
		reply_not_found(q, q->path.name);
		goto out;
	}
	if (rc < 0) {
		reply_status(q, rc, "storage error");
		goto out;
	}
	if (check_budget(q, pod) < 0)
		goto out;
	rc = delete_object(q, q->path.name, false);
	if (rc == E_NOT_FOUND)
		reply_not_found(q, q->path.name);
	else if (rc < 0)
		reply_status(q, rc, "the pod could not be evicted");
	else {
		q->success_code = 201;
		json_t *s = status_success(q, NULL);
		reply_json(q, 201, s);
		json_decref(s);
	}
out:
	json_decref(pod);
	json_decref(body);
}

static void do_log(struct req *q)
{
	char *key = store_key(q->res, q->tenant, q->ns, q->path.name);
	json_t *pod = NULL;
	int rc = store_get(q->s, key, &pod, NULL);
	free(key);
	if (rc == E_NOT_FOUND)
		reply_not_found(q, q->path.name);
	else if (rc < 0)
		reply_status(q, rc, "storage error");
	else if (!json_path_str(pod, "spec.nodeName"))
		reply_status(q, E_BAD_REQUEST, "pod %s does not have a host assigned", q->path.name);
	else
		proxy_pod_log(q, pod);
	json_decref(pod);
}

static const struct {
	const char *name;
	unsigned bit;
	const char *verbs; /* allowed verbs, comma-separated */
	void (*fn)(struct req *q);
} subresources[] = {
	{ "status", SUB_STATUS, "get,update,patch", do_status },
	{ "scale", SUB_SCALE, "get,update,patch", do_scale },
	{ "binding", SUB_BINDING, "create", do_binding },
	{ "eviction", SUB_EVICTION, "create", do_eviction },
	{ "log", SUB_LOG, "get", do_log },
	{ "token", SUB_TOKEN, "create", handle_token_request },
	{ "exec", SUB_EXEC, "create", handle_pod_exec },
	{ "attach", SUB_EXEC, "create", handle_pod_attach },
	{ "portforward", SUB_EXEC, "create", handle_pod_portforward },
};

void handle_subresource(struct req *q)
{
	for (size_t i = 0; i < sizeof(subresources) / sizeof(subresources[0]); i++) {
		if (strcmp(subresources[i].name, q->path.subresource) != 0 || !(q->res->r->subresources & subresources[i].bit))
			continue;
		if (!strstr(subresources[i].verbs, q->verb)) {
			reply_status(q, E_METHOD, "the server does not allow this method on the requested resource");
			return;
		}
		subresources[i].fn(q);
		return;
	}
	reply_status(q, E_NOT_FOUND, "the server could not find the requested resource");
}

void handle_deletecollection(struct req *q)
{
	struct req_filter f = { 0 };
	if (parse_filter(q, &f) < 0)
		return;
	bool all = strcmp(q->tenant, TENANT_ALL) == 0 || q->res->r->scope == SCOPE_CLUSTER;
	struct wfilter wf = { .tenant = all ? NULL : q->tenant, .ns = q->ns, .labels = f.labels, .fields = f.fields };
	struct cobj **objs = NULL;
	size_t n = 0;
	int64_t rv;
	if (wcache_list(q->res->cache, &wf, &objs, &n, &rv) < 0) {
		reply_status(q, E_UNAVAILABLE, "the watch cache is not ready yet; please retry");
		goto out;
	}
	char *saved_ns = q->ns, *saved_tenant = q->tenant;
	for (size_t i = 0; i < n; i++) {
		q->ns = (char *)objs[i]->ns;
		q->tenant = (char *)objs[i]->tenant;
		delete_object(q, objs[i]->name, false);
		cobj_unref(objs[i]);
	}
	q->ns = saved_ns;
	q->tenant = saved_tenant;
	free(objs);
	json_t *s = status_success(q, NULL);
	reply_json(q, 200, s);
	json_decref(s);
out:
	req_filter_release(&f);
}
