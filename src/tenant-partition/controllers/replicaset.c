/* ReplicaSet controller: keeps spec.replicas active pods owned by the ReplicaSet. */
#include <stdlib.h>
#include <string.h>
#include "tpc.h"
#include "ursa/errors.h"
#include "ursa/jsonutil.h"
#include "ursa/log.h"
#include "ursa/selector.h"
#include "ursa/timeutil.h"
#include "ursa/xalloc.h"

#define MAX_BURST 500 /* pods created or deleted per sync */

struct rs_ctx {
	struct tpc *m;
	const char *key;
	json_t *rs;          /* live object (borrowed from the sync's struct tpc_live) */
	const char *tenant, *ns, *name, *uid;
	json_t *pods;        /* owned active pods (array, owned) */
	long long created, deleted;
	int err;
};

static json_t *owner_ref(const json_t *rs)
{
	return json_pack("{s:s,s:s,s:s?,s:s?,s:b,s:b}", "apiVersion", "apps/v1", "kind", "ReplicaSet", "name",
			 json_path_str(rs, "metadata.name"), "uid", json_path_str(rs, "metadata.uid"), "controller", 1,
			 "blockOwnerDeletion", 1);
}

/* Adopts an orphan pod matching the selector: appends our controller reference. */
static bool adopt(struct rs_ctx *c, const json_t *pod)
{
	json_t *refs = json_deep_copy(json_path(pod, "metadata.ownerReferences"));
	if (!json_is_array(refs)) {
		json_decref(refs);
		refs = json_array();
	}
	json_array_append_new(refs, owner_ref(c->rs));
	json_t *patch = json_pack("{s:{s:o,s:s?}}", "metadata", "ownerReferences", refs, "resourceVersion",
				  json_path_str(pod, "metadata.resourceVersion"));
	struct buf p = BUF_INIT;
	tpc_path(&p, "pods", c->tenant, c->ns, json_path_str(pod, "metadata.name"));
	int rc = tpc_send(c->m, "PATCH", p.ptr, patch, NULL);
	json_decref(patch);
	buf_release(&p);
	return rc == 200;
}

static int load_pods(struct rs_ctx *c)
{
	struct label_selector *sel = NULL; /* an empty selector would take every pod: refused */
	int rc;
	json_t *items = tpc_list_controlled(c->m, "pods", c->tenant, c->ns, json_path(c->rs, "spec.selector"), c->uid,
					    true, &sel, &rc);
	if (!items)
		goto out;
	c->pods = json_array();
	size_t i;
	json_t *pod;
	json_array_foreach(items, i, pod) {
		if (!tpc_pod_active(pod) || !label_selector_matches(sel, json_path(pod, "metadata.labels")))
			continue;
		const json_t *ref = json_controller_ref(pod);
		const char *ruid = json_str(ref, "uid");
		if (ref && (!ruid || strcmp(ruid, c->uid) != 0))
			continue;
		if (!ref && (json_path(c->rs, "metadata.deletionTimestamp") || !adopt(c, pod)))
			continue;
		json_array_append(c->pods, pod);
	}
out:
	label_selector_free(sel);
	json_decref(items);
	return rc;
}

static json_t *pod_from_template(const json_t *rs)
{
	const json_t *t = json_path(rs, "spec.template");
	json_t *meta = json_pack("{s:s}", "generateName", "");
	char *gen = xasprintf("%s-", json_path_str(rs, "metadata.name"));
	json_object_set_new(meta, "generateName", json_string(gen));
	free(gen);
	json_t *labels = json_path(t, "metadata.labels"), *ann = json_path(t, "metadata.annotations");
	if (json_is_object(labels))
		json_object_set_new(meta, "labels", json_deep_copy(labels));
	if (json_is_object(ann))
		json_object_set_new(meta, "annotations", json_deep_copy(ann));
	json_object_set_new(meta, "ownerReferences", json_pack("[o]", owner_ref(rs)));
	json_t *spec = json_path(t, "spec");
	return json_pack("{s:s,s:s,s:o,s:o}", "apiVersion", "v1", "kind", "Pod", "metadata", meta, "spec",
			 spec ? json_deep_copy(spec) : json_object());
}

static void create_pods(struct rs_ctx *c, long long n)
{
	struct buf path = BUF_INIT;
	tpc_path(&path, "pods", c->tenant, c->ns, NULL);
	json_t *pod = pod_from_template(c->rs);
	long long batch = 0, before = c->created;
	tpc_expect_creations(tpc_exp(c->m, CTL_RS), c->key, c->uid, n, mono_ms());
	for (long long left = n; left > 0 && !c->err; left -= batch) {
		batch = tpc_next_batch(batch, left);
		for (long long i = 0; i < batch; i++) {
			json_t *resp = NULL;
			int rc = tpc_send(c->m, "POST", path.ptr, pod, &resp);
			if (rc == 201 || rc == 200) {
				c->created++;
				tpc_event(c->m, c->rs, "Normal", "SuccessfulCreate", "Created pod: %s",
					  json_path_str(resp, "metadata.name"));
			} else {
				tpc_event(c->m, c->rs, "Warning", "FailedCreate", "Error creating: %s",
					  json_str(resp, "message") ? json_str(resp, "message") : "server unavailable");
				c->err = E_UNAVAILABLE; /* slow start: stop at the first failing batch */
			}
			json_decref(resp);
		}
	}
	tpc_expect_created(tpc_exp(c->m, CTL_RS), c->key, c->uid, n - (c->created - before)); /* never made */
	json_decref(pod);
	buf_release(&path);
}

static void delete_pods(struct rs_ctx *c, long long n)
{
	size_t np = json_array_size(c->pods);
	const json_t **v = xcalloc(np ? np : 1, sizeof(*v));
	for (size_t i = 0; i < np; i++)
		v[i] = json_array_get(c->pods, i);
	tpc_rank_for_deletion(v, np);
	json_t *keep = json_array();
	for (size_t i = 0; i < np; i++) {
		const char *pname = json_path_str(v[i], "metadata.name");
		if ((long long)i >= n) {
			json_array_append(keep, (json_t *)v[i]);
			continue;
		}
		struct buf path = BUF_INIT;
		char *pk = object_key(v[i]);
		tpc_expect_deletion(tpc_exp(c->m, CTL_RS), c->key, c->uid, pk, mono_ms());
		tpc_path(&path, "pods", c->tenant, c->ns, pname);
		int rc = tpc_send(c->m, "DELETE", path.ptr, NULL, NULL);
		buf_release(&path);
		if (rc != 200 && rc != 202)
			tpc_expect_deleted(tpc_exp(c->m, CTL_RS), c->key, c->uid, pk); /* nothing to observe */
		free(pk);
		if (rc == 200 || rc == 202 || rc == 404) {
			c->deleted++;
			tpc_event(c->m, c->rs, "Normal", "SuccessfulDelete", "Deleted pod: %s", pname);
		} else {
			json_array_append(keep, (json_t *)v[i]);
			c->err = E_UNAVAILABLE;
		}
	}
	free(v);
	json_decref(c->pods);
	c->pods = keep;
}

static bool labels_cover(const json_t *have, const json_t *want)
{
	const char *k;
	json_t *v;
	json_object_foreach((json_t *)want, k, v) {
		json_t *h = json_object_get(have, k);
		if (!h || !json_equal(h, v))
			return false;
	}
	return true;
}

/* Writes status if it changed; returns E_* on failure. *ret_wait_s: seconds until a ready pod
 * becomes available (0: none pending). */
static int update_status(struct rs_ctx *c, long long *ret_wait_s)
{
	long long mrs = json_integer_value(json_path(c->rs, "spec.minReadySeconds"));
	time_t now = time(NULL);
	long long full = 0, ready = 0, avail = 0;
	size_t i;
	json_t *pod;
	const json_t *tl = json_path(c->rs, "spec.template.metadata.labels");
	json_array_foreach(c->pods, i, pod) {
		if (labels_cover(json_path(pod, "metadata.labels"), tl))
			full++;
		if (tpc_pod_ready(pod)) {
			ready++;
			if (tpc_pod_available(pod, mrs, now))
				avail++;
			else
				*ret_wait_s = mrs;
		}
	}
	full += c->created;
	long long replicas = (long long)json_array_size(c->pods) + c->created;
	json_t *st = json_pack("{s:I,s:I,s:I,s:I,s:I}", "replicas", (json_int_t)replicas, "fullyLabeledReplicas",
			       (json_int_t)full, "readyReplicas", (json_int_t)ready, "availableReplicas",
			       (json_int_t)avail, "observedGeneration",
			       json_integer_value(json_path(c->rs, "metadata.generation")));
	json_t *old = json_object_get(c->rs, "status");
	json_t *conds = json_object_get(old, "conditions");
	if (conds)
		json_object_set(st, "conditions", conds);
	int rc = 0;
	if (!json_equal(old, st)) {
		json_t *body = json_deep_copy(c->rs);
		json_object_set(body, "status", st);
		struct buf path = BUF_INIT;
		tpc_path(&path, "replicasets", c->tenant, c->ns, c->name);
		buf_adds(&path, "/status");
		int code = tpc_send(c->m, "PUT", path.ptr, body, NULL);
		rc = code == 200 ? 0 : code == 404 ? 0 : code == 409 ? E_CONFLICT : E_UNAVAILABLE;
		buf_release(&path);
		json_decref(body);
	}
	json_decref(st);
	return rc;
}

int tpc_sync_replicaset(struct tpc *m, const char *key)
{
	struct tpc_live live;
	struct rs_ctx c = { .m = m, .key = key };
	/* a terminating ReplicaSet still removes surplus pods (it creates none) */
	int rc = tpc_get_live(m, "replicasets", key, TPC_LIVE_TERMINATING, &live);
	if (rc == 0)
		tpc_expect_forget(tpc_exp(m, CTL_RS), key);
	if (rc <= 0)
		return rc;
	rc = 0;
	int64_t wait_ms;
	if (!tpc_expect_satisfied(tpc_exp(m, CTL_RS), key, live.uid, mono_ms(), &wait_ms)) {
		/* the pod informer has not seen all this controller wrote: its events re-queue the key */
		wq_add_after(m->wq[CTL_RS], key, wait_ms + 100);
		goto out;
	}
	const char *t = live.tenant, *ns = live.ns, *name = live.name;
	c.rs = live.obj, c.tenant = t, c.ns = ns, c.name = name, c.uid = live.uid;
	if ((rc = load_pods(&c)) < 0) {
		rc = rc == E_INVALID ? 0 : rc;
		goto out;
	}
	json_t *r = json_path(c.rs, "spec.replicas");
	long long want = json_is_integer(r) ? json_integer_value(r) : 1;
	long long diff = (long long)json_array_size(c.pods) - want;
	bool deleting = json_path(c.rs, "metadata.deletionTimestamp") != NULL;
	if (diff < 0 && !deleting)
		create_pods(&c, -diff > MAX_BURST ? MAX_BURST : -diff);
	else if (diff > 0)
		delete_pods(&c, diff > MAX_BURST ? MAX_BURST : diff);
	long long wait_s = 0;
	int src = update_status(&c, &wait_s);
	rc = c.err ? c.err : src;
	if (wait_s > 0)
		wq_add_after(m->wq[CTL_RS], key, wait_s * 1000 + 100);
	if (c.created || c.deleted)
		log_info("replicaset synced", "tenant=\"%s\" namespace=\"%s\" name=\"%s\" want=%lld created=%lld deleted=%lld",
			 t, ns, name, want, c.created, c.deleted);
out:
	json_decref(c.pods);
	tpc_live_release(&live);
	return rc;
}
