/* StatefulSet controller (apps/v1): pods "<set>-<i>" with stable names, a claim per
 * volumeClaimTemplate and ordinal (kept when pods go), OrderedReady and Parallel management,
 * RollingUpdate with partition and OnDelete, and ControllerRevisions recording each template
 * (what `kubectl rollout history/undo statefulset` read and patch back). The decisions are
 * sts_plan's (stslogic.c); this file reads pods and revisions and writes the result. */
#include <stdlib.h>
#include <string.h>
#include "sts.h"
#include "tpc.h"
#include "ursa/errors.h"
#include "ursa/jsonutil.h"
#include "ursa/log.h"
#include "ursa/selector.h"
#include "ursa/timeutil.h"
#include "ursa/xalloc.h"

#define MAX_ACTIONS 500

struct sts_ctx {
	struct tpc *m;
	const char *key;
	json_t *set; /* live (borrowed from the sync's struct tpc_live) */
	const char *tenant, *ns, *name, *uid;
	char *cur_rev, *upd_rev; /* revision names (owned) */
	json_t *pods;            /* owned pods with an ordinal: array of objects (owned) */
	json_t *revs;            /* owned revisions (owned array) */
	int err;
};

static json_t *owner_ref(const json_t *set)
{
	return json_pack("{s:s,s:s,s:s?,s:s?,s:b,s:b}", "apiVersion", "apps/v1", "kind", "StatefulSet", "name",
			 json_path_str(set, "metadata.name"), "uid", json_path_str(set, "metadata.uid"), "controller",
			 1, "blockOwnerDeletion", 1);
}

static bool owned(const json_t *obj, const char *uid)
{
	const char *ruid = json_str(json_controller_ref(obj), "uid");
	return ruid && !strcmp(ruid, uid);
}

/* Lists plural in the set's namespace by its selector; only objects the set controls. */
static int list_owned(struct sts_ctx *c, const char *plural, json_t **ret)
{
	int rc;
	json_t *items = tpc_list_controlled(c->m, plural, c->tenant, c->ns, json_path(c->set, "spec.selector"), c->uid,
					    false, NULL, &rc);
	*ret = NULL;
	if (!items)
		return rc;
	*ret = json_array();
	size_t i;
	json_t *o;
	json_array_foreach(items, i, o)
		if (owned(o, c->uid))
			json_array_append(*ret, o);
	json_decref(items);
	return 0;
}

/* Revisions ------------------------------------------------------------------------------- */

static long long max_revision(const json_t *revs)
{
	long long mx = 0;
	size_t i;
	json_t *r;
	json_array_foreach(revs, i, r) {
		long long v = json_integer_value(json_object_get(r, "revision"));
		if (v > mx)
			mx = v;
	}
	return mx;
}

/* Finds or makes the revision of the set's current template (c->upd_rev); a matching older
 * revision becomes the newest (as after `kubectl rollout undo`). */
static int ensure_update_revision(struct sts_ctx *c)
{
	long long next = max_revision(c->revs) + 1;
	size_t i;
	json_t *r;
	json_array_foreach(c->revs, i, r) {
		if (!sts_revision_matches(json_object_get(r, "data"), c->set))
			continue;
		char *rn = xstrdup(json_path_str(r, "metadata.name")); /* r goes if the PUT replaces it */
		long long v = json_integer_value(json_object_get(r, "revision"));
		if (v + 1 < next) {
			json_t *body = json_deep_copy(r), *resp = NULL;
			json_object_set_new(body, "revision", json_integer(next));
			struct buf path = BUF_INIT;
			tpc_path(&path, "controllerrevisions", c->tenant, c->ns, rn);
			int code = tpc_send(c->m, "PUT", path.ptr, body, &resp);
			buf_release(&path);
			json_decref(body);
			if (code != 200) {
				json_decref(resp);
				free(rn);
				return code == 409 ? E_CONFLICT : E_UNAVAILABLE;
			}
			json_array_set_new(c->revs, i, resp);
		}
		c->upd_rev = rn;
		return 0;
	}
	json_t *data = sts_revision_data(c->set);
	struct buf hash = BUF_INIT, path = BUF_INIT;
	tpc_template_hash(json_path(c->set, "spec.template"), -1, &hash);
	char *rname = xasprintf("%s-%s", c->name, buf_cstr(&hash));
	json_t *labels = json_deep_copy(json_path(c->set, "spec.template.metadata.labels"));
	if (!json_is_object(labels))
		json_decref(labels), labels = json_object();
	json_object_set_new(labels, "controller.kubernetes.io/hash", json_string(buf_cstr(&hash)));
	json_t *rev = json_pack("{s:s,s:s,s:{s:s,s:s,s:o,s:[o]},s:o,s:I}", "apiVersion", "apps/v1", "kind",
				"ControllerRevision", "metadata", "name", rname, "namespace", c->ns, "labels", labels,
				"ownerReferences", owner_ref(c->set), "data", data, "revision", (json_int_t)next);
	tpc_path(&path, "controllerrevisions", c->tenant, c->ns, NULL);
	json_t *resp = NULL;
	int code = tpc_send(c->m, "POST", path.ptr, rev, &resp);
	int rc = 0;
	if (code == 201 || code == 200)
		json_array_append(c->revs, resp);
	else
		rc = code == 409 ? E_CONFLICT : E_UNAVAILABLE; /* a hash collision or a stale list: retried */
	if (!rc)
		c->upd_rev = rname;
	else
		free(rname);
	json_decref(resp);
	json_decref(rev);
	buf_release(&hash);
	buf_release(&path);
	return rc;
}

/* Deletes the oldest revisions beyond revisionHistoryLimit that no pod and neither the current
 * nor the update revision uses. */
static void trim_history(struct sts_ctx *c)
{
	long long limit = json_integer_value(json_path(c->set, "spec.revisionHistoryLimit"));
	if (!json_is_integer(json_path(c->set, "spec.revisionHistoryLimit")))
		limit = 10;
	size_t n = json_array_size(c->revs);
	json_t **spare = xcalloc(n + 1, sizeof(*spare));
	size_t ns = 0;
	size_t i, k;
	json_t *r, *p;
	json_array_foreach(c->revs, i, r) {
		const char *rn = json_path_str(r, "metadata.name");
		bool used = !rn || (c->cur_rev && !strcmp(rn, c->cur_rev)) || (c->upd_rev && !strcmp(rn, c->upd_rev));
		json_array_foreach(c->pods, k, p) {
			const char *h = json_str(json_path(p, "metadata.labels"), STS_REVISION_LABEL);
			used = used || (h && !strcmp(h, rn));
		}
		if (!used)
			spare[ns++] = r;
	}
	/* oldest first */
	for (size_t a = 1; a < ns; a++)
		for (size_t b = a; b > 0 && json_integer_value(json_object_get(spare[b], "revision")) <
					 json_integer_value(json_object_get(spare[b - 1], "revision")); b--) {
			json_t *t = spare[b];
			spare[b] = spare[b - 1];
			spare[b - 1] = t;
		}
	for (size_t a = 0; (long long)(ns - a) > limit; a++) {
		struct buf path = BUF_INIT;
		tpc_path(&path, "controllerrevisions", c->tenant, c->ns, json_path_str(spare[a], "metadata.name"));
		tpc_send(c->m, "DELETE", path.ptr, NULL, NULL);
		buf_release(&path);
	}
	free(spare);
}

/* Pods and claims ------------------------------------------------------------------------- */

/* Creates the claims of ordinal that do not exist yet (a 409 is one that does). */
static int ensure_claims(struct sts_ctx *c, long long ordinal)
{
	size_t i;
	json_t *vct;
	json_array_foreach(json_path(c->set, "spec.volumeClaimTemplates"), i, vct) {
		const char *tn = json_path_str(vct, "metadata.name");
		if (!tn)
			continue;
		struct buf cname = BUF_INIT, path = BUF_INIT;
		sts_claim_name(tn, c->name, ordinal, &cname);
		tpc_path(&path, "persistentvolumeclaims", c->tenant, c->ns, cname.ptr);
		json_t *got = NULL;
		int code = tpc_get(c->m, path.ptr, &got);
		json_decref(got);
		if (code == 404) {
			json_t *pvc = json_deep_copy(vct);
			json_t *meta = json_object_get(pvc, "metadata");
			json_object_set_new(meta, "name", json_string(cname.ptr));
			json_object_set_new(meta, "namespace", json_string(c->ns));
			json_t *labels = json_object_get(meta, "labels");
			if (!json_is_object(labels)) {
				labels = json_object();
				json_object_set_new(meta, "labels", labels);
			}
			json_object_update(labels, json_path(c->set, "spec.selector.matchLabels"));
			json_object_set_new(pvc, "apiVersion", json_string("v1"));
			json_object_set_new(pvc, "kind", json_string("PersistentVolumeClaim"));
			json_object_del(pvc, "status");
			buf_reset(&path);
			tpc_path(&path, "persistentvolumeclaims", c->tenant, c->ns, NULL);
			json_t *resp = NULL;
			code = tpc_send(c->m, "POST", path.ptr, pvc, &resp);
			if (code == 201 || code == 200)
				tpc_event(c->m, c->set, "Normal", "SuccessfulCreate",
					  "create Claim %s Pod %s-%lld in StatefulSet %s success", cname.ptr, c->name,
					  ordinal, c->name);
			else if (code != 409)
				tpc_event(c->m, c->set, "Warning", "FailedCreate",
					  "create Claim %s for Pod %s-%lld in StatefulSet %s failed error: %s", cname.ptr,
					  c->name, ordinal, c->name,
					  json_str(resp, "message") ? json_str(resp, "message") : "server unavailable");
			json_decref(resp);
			json_decref(pvc);
			code = code == 201 || code == 200 || code == 409 ? 200 : code;
		}
		buf_release(&cname);
		buf_release(&path);
		if (code != 200)
			return E_UNAVAILABLE;
	}
	return 0;
}

static json_t *new_pod(struct sts_ctx *c, long long ordinal, const char *rev)
{
	const json_t *t = json_path(c->set, "spec.template");
	char *pname = xasprintf("%s-%lld", c->name, ordinal), num[32];
	snprintf(num, sizeof(num), "%lld", ordinal);
	json_t *labels = json_deep_copy(json_path(t, "metadata.labels"));
	json_t *ann = json_deep_copy(json_path(t, "metadata.annotations"));
	if (!json_is_object(labels))
		json_decref(labels), labels = json_object();
	if (!json_is_object(ann))
		json_decref(ann), ann = json_object();
	json_object_set_new(labels, STS_POD_NAME_LABEL, json_string(pname));
	json_object_set_new(labels, STS_POD_INDEX_LABEL, json_string(num));
	json_object_set_new(labels, STS_REVISION_LABEL, json_string(rev));
	json_t *spec = json_deep_copy(json_path(t, "spec"));
	if (!json_is_object(spec))
		json_decref(spec), spec = json_object();
	json_object_set_new(spec, "hostname", json_string(pname));
	const char *svc = json_path_str(c->set, "spec.serviceName");
	if (svc && *svc)
		json_object_set_new(spec, "subdomain", json_string(svc));
	/* each claim template becomes the pod's volume of that name */
	json_t *vols = json_object_get(spec, "volumes");
	if (!json_is_array(vols)) {
		vols = json_array();
		json_object_set_new(spec, "volumes", vols);
	}
	size_t i;
	json_t *vct;
	json_array_foreach(json_path(c->set, "spec.volumeClaimTemplates"), i, vct) {
		const char *tn = json_path_str(vct, "metadata.name");
		if (!tn)
			continue;
		for (size_t k = json_array_size(vols); k > 0; k--) {
			const char *vn = json_str(json_array_get(vols, k - 1), "name");
			if (vn && !strcmp(vn, tn))
				json_array_remove(vols, k - 1);
		}
		struct buf cname = BUF_INIT;
		sts_claim_name(tn, c->name, ordinal, &cname);
		json_array_append_new(vols, json_pack("{s:s,s:{s:s}}", "name", tn, "persistentVolumeClaim", "claimName",
						      cname.ptr));
		buf_release(&cname);
	}
	if (json_array_size(vols) == 0)
		json_object_del(spec, "volumes");
	json_t *meta = json_pack("{s:s,s:s,s:o,s:o,s:[o]}", "name", pname, "namespace", c->ns, "labels", labels,
				 "annotations", ann, "ownerReferences", owner_ref(c->set));
	free(pname);
	return json_pack("{s:s,s:s,s:o,s:o}", "apiVersion", "v1", "kind", "Pod", "metadata", meta, "spec", spec);
}

static void create_pod(struct sts_ctx *c, long long ordinal, const char *rev)
{
	if ((c->err = ensure_claims(c, ordinal)) != 0)
		return;
	json_t *pod = new_pod(c, ordinal, rev), *resp = NULL;
	struct buf path = BUF_INIT;
	tpc_path(&path, "pods", c->tenant, c->ns, NULL);
	tpc_expect_creations(tpc_exp(c->m, CTL_STS), c->key, c->uid, 1, mono_ms());
	int code = tpc_send(c->m, "POST", path.ptr, pod, &resp);
	if (code != 201 && code != 200)
		tpc_expect_created(tpc_exp(c->m, CTL_STS), c->key, c->uid, 1); /* never made */
	if (code == 201 || code == 200)
		tpc_event(c->m, c->set, "Normal", "SuccessfulCreate", "create Pod %s-%lld in StatefulSet %s successful",
			  c->name, ordinal, c->name);
	else if (code == 409)
		c->err = E_CONFLICT; /* an old pod of that name still goes away: retried */
	else {
		tpc_event(c->m, c->set, "Warning", "FailedCreate", "create Pod %s-%lld in StatefulSet %s failed error: %s",
			  c->name, ordinal, c->name,
			  json_str(resp, "message") ? json_str(resp, "message") : "server unavailable");
		c->err = E_UNAVAILABLE;
	}
	json_decref(resp);
	json_decref(pod);
	buf_release(&path);
}

static void delete_pod(struct sts_ctx *c, long long ordinal)
{
	char *pname = xasprintf("%s-%lld", c->name, ordinal);
	char *pk = xasprintf("%s/%s/%s", c->tenant, c->ns, pname);
	struct buf path = BUF_INIT;
	tpc_path(&path, "pods", c->tenant, c->ns, pname);
	tpc_expect_deletion(tpc_exp(c->m, CTL_STS), c->key, c->uid, pk, mono_ms());
	int code = tpc_send(c->m, "DELETE", path.ptr, NULL, NULL);
	if (code != 200 && code != 202)
		tpc_expect_deleted(tpc_exp(c->m, CTL_STS), c->key, c->uid, pk); /* nothing to observe */
	free(pk);
	if (code == 200 || code == 202)
		tpc_event(c->m, c->set, "Normal", "SuccessfulDelete", "delete Pod %s in StatefulSet %s successful",
			  pname, c->name);
	else if (code != 404)
		c->err = E_UNAVAILABLE;
	buf_release(&path);
	free(pname);
}

static bool pod_running_ready(const json_t *pod)
{
	const char *phase = json_path_str(pod, "status.phase");
	return phase && !strcmp(phase, "Running") && tpc_pod_ready(pod);
}

static const char *pod_rev(const json_t *pod)
{
	return json_str(json_path(pod, "metadata.labels"), STS_REVISION_LABEL);
}

/* Status ---------------------------------------------------------------------------------- */

static int put_status(struct sts_ctx *c, json_t *st)
{
	if (json_equal(json_object_get(c->set, "status"), st))
		return 0;
	json_t *body = json_deep_copy(c->set);
	json_object_set(body, "status", st);
	struct buf path = BUF_INIT;
	tpc_path(&path, "statefulsets", c->tenant, c->ns, c->name);
	buf_adds(&path, "/status");
	int code = tpc_send(c->m, "PUT", path.ptr, body, NULL);
	buf_release(&path);
	json_decref(body);
	return code == 200 || code == 404 ? 0 : code == 409 ? E_CONFLICT : E_UNAVAILABLE;
}

static json_t *make_status(struct sts_ctx *c, long long replicas)
{
	long long count = 0, ready = 0, current = 0, updated = 0;
	size_t i;
	json_t *p;
	json_array_foreach(c->pods, i, p) {
		if (json_path(p, "metadata.deletionTimestamp"))
			continue;
		count++;
		ready += pod_running_ready(p);
		const char *h = pod_rev(p);
		current += h && c->cur_rev && !strcmp(h, c->cur_rev);
		updated += h && c->upd_rev && !strcmp(h, c->upd_rev);
	}
	json_t *st = json_deep_copy(json_object_get(c->set, "status"));
	if (!json_is_object(st))
		json_decref(st), st = json_object();
	/* a finished update: the update revision becomes the current one */
	if (updated == replicas && count == replicas && ready == replicas && c->upd_rev) {
		free(c->cur_rev);
		c->cur_rev = xstrdup(c->upd_rev);
		current = updated;
	}
	json_object_set_new(st, "observedGeneration", json_integer(json_integer_value(json_path(c->set, "metadata.generation"))));
	json_object_set_new(st, "replicas", json_integer(count));
	json_object_set_new(st, "readyReplicas", json_integer(ready));
	json_object_set_new(st, "availableReplicas", json_integer(ready));
	json_object_set_new(st, "currentReplicas", json_integer(current));
	json_object_set_new(st, "updatedReplicas", json_integer(updated));
	json_object_set_new(st, "currentRevision", json_string(c->cur_rev ? c->cur_rev : c->upd_rev));
	json_object_set_new(st, "updateRevision", json_string(c->upd_rev));
	json_object_set_new(st, "collisionCount", json_integer(0));
	return st;
}

/* Sync ------------------------------------------------------------------------------------ */

int tpc_sync_statefulset(struct tpc *m, const char *key)
{
	struct tpc_live live;
	struct sts_ctx c = { .m = m, .key = key };
	struct sts_pod *slots = NULL;
	json_t *st = NULL;
	int rc = tpc_get_live(m, "statefulsets", key, 0, &live);
	if (rc == 0)
		tpc_expect_forget(tpc_exp(m, CTL_STS), key);
	if (rc <= 0)
		return rc;
	rc = 0;
	int64_t wait_ms;
	if (!tpc_expect_satisfied(tpc_exp(m, CTL_STS), key, live.uid, mono_ms(), &wait_ms)) {
		/* the pod informer has not seen all this controller wrote: its events re-queue the key */
		wq_add_after(m->wq[CTL_STS], key, wait_ms + 100);
		goto out;
	}
	const char *t = live.tenant, *ns = live.ns, *name = live.name;
	c.set = live.obj, c.tenant = t, c.ns = ns, c.name = name, c.uid = live.uid;
	json_t *all = NULL;
	if ((rc = list_owned(&c, "pods", &all)) < 0 || (rc = list_owned(&c, "controllerrevisions", &c.revs)) < 0) {
		json_decref(all);
		rc = rc == E_INVALID ? 0 : rc;
		goto out;
	}
	if ((rc = ensure_update_revision(&c)) < 0) {
		json_decref(all);
		goto out;
	}
	const char *cr = json_path_str(c.set, "status.currentRevision");
	c.cur_rev = xstrdup(cr ? cr : c.upd_rev);

	long long replicas = json_integer_value(json_path(c.set, "spec.replicas"));
	if (!json_is_integer(json_path(c.set, "spec.replicas")))
		replicas = 1;
	if (replicas > STS_MAX_REPLICAS)
		replicas = STS_MAX_REPLICAS;
	const char *pmp = json_path_str(c.set, "spec.podManagementPolicy");
	const char *ust = json_path_str(c.set, "spec.updateStrategy.type");
	struct sts_in in = {
		.replicas = replicas,
		.parallel = pmp && !strcmp(pmp, "Parallel"),
		.on_delete = ust && !strcmp(ust, "OnDelete"),
		.partition = json_integer_value(json_path(c.set, "spec.updateStrategy.rollingUpdate.partition")),
	};
	/* pods by ordinal */
	size_t npods = (size_t)replicas;
	c.pods = json_array();
	size_t i;
	json_t *p;
	json_array_foreach(all, i, p) {
		long long o = sts_ordinal(name, json_path_str(p, "metadata.name") ? json_path_str(p, "metadata.name") : "");
		if (o < 0 || o >= STS_MAX_REPLICAS)
			continue;
		json_array_append(c.pods, p);
		if ((size_t)o + 1 > npods)
			npods = (size_t)o + 1;
	}
	json_decref(all);
	slots = xcalloc(npods + 1, sizeof(*slots));
	json_array_foreach(c.pods, i, p) {
		long long o = sts_ordinal(name, json_path_str(p, "metadata.name"));
		const char *phase = json_path_str(p, "status.phase"), *h = pod_rev(p);
		slots[o] = (struct sts_pod){
			.exists = true,
			.ready = pod_running_ready(p),
			.terminating = json_path(p, "metadata.deletionTimestamp") != NULL,
			.ended = phase && (!strcmp(phase, "Succeeded") || !strcmp(phase, "Failed")),
			.updated = h && !strcmp(h, c.upd_rev),
		};
	}
	struct sts_action acts[MAX_ACTIONS];
	size_t nacts = sts_plan(&in, slots, npods, acts, MAX_ACTIONS);
	for (size_t a = 0; a < nacts && !c.err; a++) {
		if (acts[a].create)
			create_pod(&c, acts[a].ordinal, sts_new_pod_updated(&in, acts[a].ordinal) ? c.upd_rev : c.cur_rev);
		else
			delete_pod(&c, acts[a].ordinal);
	}
	st = make_status(&c, replicas);
	trim_history(&c);
	rc = put_status(&c, st);
	if (!rc)
		rc = c.err;
	if (nacts)
		log_info("statefulset synced", "tenant=\"%s\" namespace=\"%s\" name=\"%s\" actions=%zu", t, ns, name,
			 nacts);
out:
	json_decref(c.pods);
	json_decref(c.revs);
	json_decref(st);
	free(slots);
	free(c.cur_rev);
	free(c.upd_rev);
	tpc_live_release(&live);
	return rc;
}
