/* Deployment controller: one ReplicaSet per pod template ("<name>-<pod-template-hash>"),
 * RollingUpdate and Recreate, revision annotations, status and conditions for kubectl rollout. */
#include <stdlib.h>
#include <string.h>
#include "tpc.h"
#include "ursa/errors.h"
#include "ursa/jsonutil.h"
#include "ursa/log.h"
#include "ursa/selector.h"
#include "ursa/timeutil.h"
#include "ursa/xalloc.h"

struct dctx {
	struct tpc *m;
	const char *key, *tenant, *ns, *name;
	json_t *d;     /* live deployment (borrowed from the sync's struct tpc_live) */
	json_t *rss;   /* owned ReplicaSets (array, owned) */
	json_t *neu;   /* borrowed from rss, or NULL */
	bool created_new;
	long long want;
};

static long long rs_int(const json_t *rs, const char *path)
{
	return json_integer_value(json_path(rs, path));
}

/* Annotation keys hold dots: no json_path on them. Borrowed or NULL. */
static const char *ann_get(const json_t *obj, const char *key)
{
	return json_str(json_path(obj, "metadata.annotations"), key);
}

static long long revision_of(const json_t *obj)
{
	const char *s = ann_get(obj, TPC_REVISION_ANN);
	long long v;
	return s && parse_int64(s, &v) == 0 ? v : 0;
}

static const char *rs_name(const json_t *rs)
{
	return json_path_str(rs, "metadata.name");
}

/* The ReplicaSets the deployment controls, from the ReplicaSet informer's controller index (a
 * lagging informer may miss one just created: creating it again answers 409, see
 * create_new_rs). */
static int load_rss(struct dctx *c)
{
	const char *uid = json_path_str(c->d, "metadata.uid");
	int rc;
	json_t *all = tpc_list_controlled(c->m, "replicasets", c->tenant, c->ns, NULL, uid, false, NULL, &rc);
	if (!all)
		return rc;
	c->rss = json_array();
	size_t i;
	json_t *rs;
	json_array_foreach(all, i, rs)
		if (!json_path(rs, "metadata.deletionTimestamp"))
			json_array_append(c->rss, rs);
	json_decref(all);
	return 0;
}

static bool skip_annotation(const char *k)
{
	return strcmp(k, "kubectl.kubernetes.io/last-applied-configuration") == 0 || strcmp(k, TPC_REVISION_ANN) == 0 ||
	       strcmp(k, TPC_REVISION_HISTORY_ANN) == 0 || strcmp(k, TPC_DESIRED_ANN) == 0 ||
	       strcmp(k, TPC_MAX_ANN) == 0 || strcmp(k, "deprecated.deployment.rollback.to") == 0;
}

/* Annotations the new ReplicaSet should carry (new object). */
static json_t *new_rs_annotations(struct dctx *c, const json_t *rs, long long revision, long long surge)
{
	json_t *a = json_object();
	const char *k;
	json_t *v;
	json_object_foreach(json_path(c->d, "metadata.annotations"), k, v)
		if (!skip_annotation(k) && json_is_string(v))
			json_object_set(a, k, v);
	long long cur = revision_of(rs);
	char *s = xasprintf("%lld", revision > cur ? revision : cur);
	json_object_set_new(a, TPC_REVISION_ANN, json_string(s));
	free(s);
	if (rs && cur > 0 && revision > cur) {
		const char *h = ann_get(rs, TPC_REVISION_HISTORY_ANN);
		char *hist = h && *h ? xasprintf("%s,%lld", h, cur) : xasprintf("%lld", cur);
		json_object_set_new(a, TPC_REVISION_HISTORY_ANN, json_string(hist));
		free(hist);
	}
	s = xasprintf("%lld", c->want);
	json_object_set_new(a, TPC_DESIRED_ANN, json_string(s));
	free(s);
	s = xasprintf("%lld", c->want + surge);
	json_object_set_new(a, TPC_MAX_ANN, json_string(s));
	free(s);
	return a;
}

static bool is_recreate(const json_t *d)
{
	const char *t = json_path_str(d, "spec.strategy.type");
	return t && strcmp(t, "Recreate") == 0;
}

/* The ReplicaSet name if this deployment controls it and its template is tmpl (new
 * reference), else NULL. */
static json_t *existing_rs(struct dctx *c, const char *name, const json_t *tmpl)
{
	struct buf path = BUF_INIT;
	json_t *rs = NULL;
	tpc_path(&path, "replicasets", c->tenant, c->ns, name);
	int code = tpc_get(c->m, path.ptr, &rs);
	buf_release(&path);
	const char *ruid = json_str(json_controller_ref(rs), "uid"), *uid = json_path_str(c->d, "metadata.uid");
	if (code == 200 && ruid && uid && !strcmp(ruid, uid) && !json_path(rs, "metadata.deletionTimestamp") &&
	    tpc_templates_equal(json_path(rs, "spec.template"), tmpl))
		return rs;
	json_decref(rs);
	return NULL;
}

static int create_new_rs(struct dctx *c, const char *hash, long long replicas, long long revision, long long surge)
{
	json_t *tmpl = json_deep_copy(json_path(c->d, "spec.template"));
	json_t *tl = json_obj_child(json_obj_child(tmpl, "metadata"), "labels");
	json_object_set_new(tl, TPC_HASH_LABEL, json_string(hash));
	json_t *sel = json_deep_copy(json_path(c->d, "spec.selector"));
	json_object_set_new(json_obj_child(sel, "matchLabels"), TPC_HASH_LABEL, json_string(hash));
	char *name = xasprintf("%s-%s", c->name, hash);
	json_t *owner = json_pack("{s:s,s:s,s:s,s:s?,s:b,s:b}", "apiVersion", "apps/v1", "kind", "Deployment", "name",
				  c->name, "uid", json_path_str(c->d, "metadata.uid"), "controller", 1,
				  "blockOwnerDeletion", 1);
	json_t *rs = json_pack("{s:s,s:s,s:{s:s,s:O,s:o,s:[o]},s:{s:I,s:I,s:o,s:o}}", "apiVersion", "apps/v1", "kind",
			       "ReplicaSet", "metadata", "name", name, "labels", tl, "annotations",
			       new_rs_annotations(c, NULL, revision, surge), "ownerReferences", owner, "spec", "replicas",
			       (json_int_t)replicas, "minReadySeconds",
			       (json_int_t)rs_int(c->d, "spec.minReadySeconds"), "selector", sel, "template", tmpl);
	struct buf path = BUF_INIT;
	tpc_path(&path, "replicasets", c->tenant, c->ns, NULL);
	json_t *resp = NULL;
	int code = tpc_send(c->m, "POST", path.ptr, rs, &resp);
	int rc = 0;
	if (code == 201 || code == 200) {
		json_array_append(c->rss, resp);
		c->neu = resp;
		c->created_new = true;
		tpc_event(c->m, c->d, "Normal", "ScalingReplicaSet", "Scaled up replica set %s to %lld", name, replicas);
	} else if (code == 409 && (json_decref(resp), resp = existing_rs(c, name, tmpl)) != NULL) {
		/* ours, with this template, not yet in the informer: the new ReplicaSet */
		json_array_append_new(c->rss, resp);
		c->neu = resp;
		resp = NULL;
	} else if (code == 409) {
		/* a ReplicaSet of that name with another template: bump collisionCount and retry */
		json_t *st = json_deep_copy(json_object_get(c->d, "status"));
		if (!json_is_object(st)) {
			json_decref(st);
			st = json_object();
		}
		json_object_set_new(st, "collisionCount",
				    json_integer(json_integer_value(json_object_get(st, "collisionCount")) + 1));
		json_t *body = json_deep_copy(c->d);
		json_object_set_new(body, "status", st);
		struct buf sp = BUF_INIT;
		tpc_path(&sp, "deployments", c->tenant, c->ns, c->name);
		buf_adds(&sp, "/status");
		tpc_send(c->m, "PUT", sp.ptr, body, NULL);
		json_decref(body);
		buf_release(&sp);
		rc = E_CONFLICT;
	} else {
		rc = E_UNAVAILABLE;
	}
	json_decref(resp);
	json_decref(rs);
	buf_release(&path);
	free(name);
	return rc;
}

/* PATCHes a ReplicaSet (merge patch, stolen); replaces the array entry with the answer. */
static int patch_rs(struct dctx *c, size_t idx, json_t *patch)
{
	json_t *rs = json_array_get(c->rss, idx);
	struct buf path = BUF_INIT;
	tpc_path(&path, "replicasets", c->tenant, c->ns, rs_name(rs));
	json_t *resp = NULL;
	int code = tpc_send(c->m, "PATCH", path.ptr, patch, &resp);
	buf_release(&path);
	json_decref(patch);
	if (code != 200) {
		json_decref(resp);
		return E_UNAVAILABLE;
	}
	bool was_new = rs == c->neu;
	json_array_set_new(c->rss, idx, resp);
	if (was_new)
		c->neu = resp;
	return 0;
}

static size_t index_of(struct dctx *c, const json_t *rs)
{
	for (size_t i = 0; i < json_array_size(c->rss); i++)
		if (json_array_get(c->rss, i) == rs)
			return i;
	return 0;
}

/* Finds or creates the ReplicaSet of the current template; keeps revisions in order. */
static int sync_revision(struct dctx *c, long long surge)
{
	const json_t *tmpl = json_path(c->d, "spec.template");
	json_t *cc = json_path(c->d, "status.collisionCount");
	struct buf hash = BUF_INIT;
	tpc_template_hash(tmpl, json_is_integer(cc) ? json_integer_value(cc) : -1, &hash);
	long long max_old = 0;
	size_t i;
	json_t *rs;
	json_array_foreach(c->rss, i, rs) {
		if (!c->neu && tpc_templates_equal(json_path(rs, "spec.template"), tmpl)) {
			c->neu = rs;
			continue;
		}
		if (revision_of(rs) > max_old)
			max_old = revision_of(rs);
	}
	int rc = 0;
	if (!c->neu) {
		long long old_total = 0, replicas = c->want;
		json_array_foreach(c->rss, i, rs) old_total += rs_int(rs, "spec.replicas");
		if (is_recreate(c->d))
			replicas = old_total > 0 ? 0 : c->want;
		else if (c->want + surge - old_total < replicas)
			replicas = c->want + surge - old_total > 0 ? c->want + surge - old_total : 0;
		rc = create_new_rs(c, buf_cstr(&hash), replicas, max_old + 1, surge);
	} else {
		json_t *want = new_rs_annotations(c, c->neu, max_old + 1, surge);
		const char *k;
		json_t *v;
		bool same = true;
		json_object_foreach(want, k, v) {
			json_t *h = json_path(c->neu, "metadata.annotations");
			if (!json_equal(json_object_get(h, k), v))
				same = false;
		}
		if (!same)
			rc = patch_rs(c, index_of(c, c->neu), json_pack("{s:{s:o}}", "metadata", "annotations", want));
		else
			json_decref(want);
	}
	/* the Deployment carries its new ReplicaSet's revision */
	if (rc == 0 && c->neu) {
		char *rev = xasprintf("%lld", revision_of(c->neu));
		const char *have = ann_get(c->d, TPC_REVISION_ANN);
		if (!have || strcmp(have, rev) != 0) {
			struct buf path = BUF_INIT;
			tpc_path(&path, "deployments", c->tenant, c->ns, c->name);
			json_t *p = json_pack("{s:{s:{s:s}}}", "metadata", "annotations", TPC_REVISION_ANN, rev);
			int code = tpc_send(c->m, "PATCH", path.ptr, p, NULL);
			rc = code == 200 ? 0 : E_UNAVAILABLE;
			json_decref(p);
			buf_release(&path);
		}
		free(rev);
	}
	buf_release(&hash);
	return rc;
}

static int scale(struct dctx *c, long long surge, long long unavail)
{
	size_t n = json_array_size(c->rss), nold = 0;
	struct rs_view *old = xcalloc(n ? n : 1, sizeof(*old)), neu = { 0 };
	size_t *idx = xcalloc(n ? n : 1, sizeof(*idx));
	long long old_pods = 0;
	for (size_t i = 0; i < n; i++) {
		json_t *rs = json_array_get(c->rss, i);
		struct rs_view v = { rs_int(rs, "spec.replicas"), rs_int(rs, "status.availableReplicas"), 0, 0 };
		time_t t = 0;
		const char *ts = json_path_str(rs, "metadata.creationTimestamp");
		if (ts)
			rfc3339_parse(ts, &t);
		v.created = t;
		if (rs == c->neu) {
			neu = v;
			continue;
		}
		old_pods += rs_int(rs, "status.replicas");
		idx[nold] = i;
		old[nold++] = v;
	}
	struct rs_view *np = c->neu ? &neu : NULL;
	bool changed = is_recreate(c->d) ? tpc_recreate_step(c->want, old_pods, np, old, nold)
					 : tpc_rolling_step(c->want, surge, unavail, np, old, nold);
	int rc = 0;
	for (size_t k = 0; changed && k <= nold; k++) {
		struct rs_view *v = k < nold ? &old[k] : np;
		if (!v || v->target == v->replicas)
			continue;
		size_t i = k < nold ? idx[k] : index_of(c, c->neu);
		char *nm = xstrdup(rs_name(json_array_get(c->rss, i)));
		if (patch_rs(c, i, json_pack("{s:{s:I}}", "spec", "replicas", (json_int_t)v->target)) < 0)
			rc = E_UNAVAILABLE;
		else
			tpc_event(c->m, c->d, "Normal", "ScalingReplicaSet", "Scaled %s replica set %s to %lld",
				  v->target > v->replicas ? "up" : "down", nm, v->target);
		free(nm);
	}
	free(old);
	free(idx);
	return rc;
}

/* Deletes old, empty ReplicaSets beyond spec.revisionHistoryLimit, oldest revision first. */
static void cleanup(struct dctx *c)
{
	json_t *lim = json_path(c->d, "spec.revisionHistoryLimit");
	long long limit = json_is_integer(lim) ? json_integer_value(lim) : 10;
	for (;;) {
		long long nold = 0, min_rev = -1;
		size_t victim = 0;
		for (size_t i = 0; i < json_array_size(c->rss); i++) {
			json_t *rs = json_array_get(c->rss, i);
			if (rs == c->neu)
				continue;
			nold++;
			if (rs_int(rs, "spec.replicas") == 0 && rs_int(rs, "status.replicas") == 0 &&
			    (min_rev < 0 || revision_of(rs) < min_rev)) {
				min_rev = revision_of(rs);
				victim = i;
			}
		}
		if (nold <= limit || min_rev < 0)
			return;
		struct buf path = BUF_INIT;
		tpc_path(&path, "replicasets", c->tenant, c->ns, rs_name(json_array_get(c->rss, victim)));
		tpc_send(c->m, "DELETE", path.ptr, NULL, NULL);
		buf_release(&path);
		json_array_remove(c->rss, victim);
	}
}

static json_t *find_cond(const json_t *st, const char *type)
{
	size_t i;
	json_t *cnd;
	json_array_foreach(json_object_get(st, "conditions"), i, cnd) {
		const char *t = json_str(cnd, "type");
		if (t && strcmp(t, type) == 0)
			return cnd;
	}
	return NULL;
}

/* Sets a condition in st (keeps lastTransitionTime while the status holds; refreshes
 * lastUpdateTime when touch or the reason changes). */
static void set_cond(json_t *st, const json_t *old_st, const char *type, const char *status, const char *reason,
		     const char *msg, bool touch, const char *now)
{
	json_t *old = find_cond(old_st, type);
	bool same_status = old && strcmp(json_str(old, "status") ? json_str(old, "status") : "", status) == 0;
	bool same_reason = same_status && strcmp(json_str(old, "reason") ? json_str(old, "reason") : "", reason) == 0 &&
			   strcmp(json_str(old, "message") ? json_str(old, "message") : "", msg) == 0;
	const char *ltt = same_status && json_str(old, "lastTransitionTime") ? json_str(old, "lastTransitionTime") : now;
	const char *lut = same_reason && !touch && json_str(old, "lastUpdateTime") ? json_str(old, "lastUpdateTime") : now;
	json_array_append_new(json_object_get(st, "conditions"),
			      json_pack("{s:s,s:s,s:s,s:s,s:s,s:s}", "type", type, "status", status, "lastUpdateTime",
					lut, "lastTransitionTime", ltt, "reason", reason, "message", msg));
}

static bool counts_differ(const json_t *a, const json_t *b)
{
	static const char *const f[] = { "replicas", "updatedReplicas", "readyReplicas", "availableReplicas" };
	for (size_t i = 0; i < ARRAY_SIZE(f); i++)
		if (json_integer_value(json_object_get(a, f[i])) != json_integer_value(json_object_get(b, f[i])))
			return true;
	return false;
}

static int update_status(struct dctx *c, long long unavail)
{
	long long replicas = 0, ready = 0, avail = 0, spec_total = 0;
	size_t i;
	json_t *rs;
	json_array_foreach(c->rss, i, rs) {
		replicas += rs_int(rs, "status.replicas");
		ready += rs_int(rs, "status.readyReplicas");
		avail += rs_int(rs, "status.availableReplicas");
		spec_total += rs_int(rs, "spec.replicas");
	}
	long long updated = c->neu ? rs_int(c->neu, "status.replicas") : 0;
	long long unav = spec_total - avail > 0 ? spec_total - avail : 0;
	const json_t *old = json_object_get(c->d, "status");
	json_t *st = json_pack("{s:I,s:I,s:I,s:I,s:I,s:I,s:[]}", "observedGeneration",
			       (json_int_t)rs_int(c->d, "metadata.generation"), "replicas", (json_int_t)replicas,
			       "updatedReplicas", (json_int_t)updated, "readyReplicas", (json_int_t)ready,
			       "availableReplicas", (json_int_t)avail, "unavailableReplicas", (json_int_t)unav,
			       "conditions");
	json_t *cc = json_object_get(old, "collisionCount");
	if (cc)
		json_object_set(st, "collisionCount", cc);
	struct buf now = BUF_INIT, msg = BUF_INIT;
	rfc3339_add(&now, time(NULL));
	bool min_ok = avail >= c->want - unavail;
	set_cond(st, old, "Available", min_ok ? "True" : "False",
		 min_ok ? "MinimumReplicasAvailable" : "MinimumReplicasUnavailable",
		 min_ok ? "Deployment has minimum availability." : "Deployment does not have minimum availability.",
		 false, buf_cstr(&now));
	const char *nn = c->neu ? rs_name(c->neu) : "";
	bool complete = c->neu && updated == c->want && replicas == c->want && avail == c->want;
	json_t *pd = json_path(c->d, "spec.progressDeadlineSeconds");
	long long deadline = json_is_integer(pd) ? json_integer_value(pd) : 600;
	json_t *oldp = find_cond(old, "Progressing");
	time_t last = 0;
	if (oldp && json_str(oldp, "lastUpdateTime"))
		rfc3339_parse(json_str(oldp, "lastUpdateTime"), &last);
	bool progressed = counts_differ(old, st);
	bool paused = json_is_true(json_path(c->d, "spec.paused"));
	if (complete) {
		buf_addf(&msg, "ReplicaSet \"%s\" has successfully progressed.", nn);
		set_cond(st, old, "Progressing", "True", "NewReplicaSetAvailable", msg.ptr, false, buf_cstr(&now));
	} else if (paused) {
		set_cond(st, old, "Progressing", "Unknown", "DeploymentPaused", "Deployment is paused", false,
			 buf_cstr(&now));
	} else if (c->created_new) {
		buf_addf(&msg, "Created new replica set \"%s\"", nn);
		set_cond(st, old, "Progressing", "True", "NewReplicaSetCreated", msg.ptr, true, buf_cstr(&now));
	} else if (!progressed && last > 0 && time(NULL) - last > deadline) {
		buf_addf(&msg, "ReplicaSet \"%s\" has timed out progressing.", nn);
		set_cond(st, old, "Progressing", "False", "ProgressDeadlineExceeded", msg.ptr, false, buf_cstr(&now));
	} else {
		buf_addf(&msg, "ReplicaSet \"%s\" is progressing.", nn);
		set_cond(st, old, "Progressing", "True", "ReplicaSetUpdated", msg.ptr, progressed || !oldp,
			 buf_cstr(&now));
		wq_add_after(c->m->wq[CTL_DEPLOY], c->key, (deadline + 1) * 1000);
	}
	int rc = 0;
	if (!json_equal(old, st)) {
		json_t *body = json_deep_copy(c->d);
		json_object_del(json_object_get(body, "metadata"), "resourceVersion");
		json_object_set(body, "status", st);
		struct buf path = BUF_INIT;
		tpc_path(&path, "deployments", c->tenant, c->ns, c->name);
		buf_adds(&path, "/status");
		int code = tpc_send(c->m, "PUT", path.ptr, body, NULL);
		rc = code == 200 || code == 404 ? 0 : E_UNAVAILABLE;
		buf_release(&path);
		json_decref(body);
	}
	buf_release(&now);
	buf_release(&msg);
	json_decref(st);
	return rc;
}

int tpc_sync_deployment(struct tpc *m, const char *key)
{
	struct tpc_live live;
	struct dctx c = { .m = m, .key = key };
	int rc = tpc_get_live(m, "deployments", key, 0, &live);
	if (rc <= 0)
		return rc;
	rc = 0;
	c.d = live.obj, c.tenant = live.tenant, c.ns = live.ns, c.name = live.name;
	json_t *r = json_path(c.d, "spec.replicas");
	c.want = json_is_integer(r) ? json_integer_value(r) : 1;
	long long surge = 0, unavail = 0;
	if (!is_recreate(c.d) &&
	    tpc_fenceposts(json_path(c.d, "spec.strategy.rollingUpdate"), c.want, &surge, &unavail) < 0) {
		tpc_event(m, c.d, "Warning", "InvalidStrategy", "invalid maxSurge or maxUnavailable");
		goto out;
	}
	if ((rc = load_rss(&c)) < 0)
		goto out;
	bool paused = json_is_true(json_path(c.d, "spec.paused"));
	if (!paused) {
		if ((rc = sync_revision(&c, surge)) < 0)
			goto out;
		if ((rc = scale(&c, surge, unavail)) < 0)
			goto out;
		cleanup(&c);
	}
	rc = update_status(&c, unavail);
out:
	json_decref(c.rss);
	tpc_live_release(&live);
	return rc;
}
