/* The system CRD mirror: the system tenant's CustomResourceDefinitions (region-wide add-ons) are
 * served to every tenant, but each tenant partition serves only what it stores, and they are
 * stored on the system tenant's partition. The reconciler of every gateway copies them into
 * tenant "system" of every other tenant partition, marked with MIRROR_ANNOTATION, updates copies
 * whose spec, labels or annotations differ, and deletes copies whose original is gone (their
 * custom resources go with them: the partition's CRD cleanup). Periodic, a list per partition
 * per pass; writes are conditional (create fails on an existing name, updates carry the
 * resourceVersion read), so gateways running it at once agree: a loser's write fails and the
 * next pass finds nothing to do. */
#include <stdlib.h>
#include <string.h>
#include "reconcile.h"
#include "ursa/errors.h"
#include "ursa/jsonutil.h"
#include "ursa/log.h"
#include "ursa/strmap.h"
#include "ursa/xalloc.h"

/* --- pure ----------------------------------------------------------------------------------- */

static json_t *obj_or_empty(const json_t *o)
{
	return json_is_object(o) ? json_deep_copy(o) : json_object();
}

json_t *mirror_object(const json_t *src, const char *pid)
{
	const json_t *meta = json_object_get(src, "metadata");
	const char *name = json_string_value(json_object_get(meta, "name"));
	const json_t *spec = json_object_get(src, "spec");
	if (!name || !*name || !json_is_object(spec))
		return NULL;
	json_t *labels = obj_or_empty(json_object_get(meta, "labels"));
	json_t *ann = obj_or_empty(json_object_get(meta, "annotations"));
	json_object_set_new(ann, MIRROR_ANNOTATION, json_string(pid));
	json_t *m = json_pack("{s:s}", "name", name);
	if (json_object_size(labels))
		json_object_set(m, "labels", labels);
	json_object_set(m, "annotations", ann);
	json_decref(labels);
	json_decref(ann);
	return json_pack("{s:s, s:s, s:o, s:O}", "apiVersion", "apiextensions.k8s.io/v1", "kind",
			 "CustomResourceDefinition", "metadata", m, "spec", spec);
}

static bool same_obj(const json_t *a, const json_t *b)
{
	json_t *ea = json_is_object(a) ? NULL : json_object(), *eb = json_is_object(b) ? NULL : json_object();
	bool same = json_equal(ea ? ea : (json_t *)a, eb ? eb : (json_t *)b);
	json_decref(ea);
	json_decref(eb);
	return same;
}

json_t *mirror_update(const json_t *want, const json_t *have)
{
	const json_t *wm = json_object_get(want, "metadata"), *hm = json_object_get(have, "metadata");
	if (json_equal(json_object_get(want, "spec"), json_object_get(have, "spec")) &&
	    same_obj(json_object_get(wm, "labels"), json_object_get(hm, "labels")) &&
	    same_obj(json_object_get(wm, "annotations"), json_object_get(hm, "annotations")))
		return NULL;
	json_t *u = json_deep_copy(have);
	json_object_set(u, "spec", json_object_get(want, "spec"));
	json_t *um = json_object_get(u, "metadata");
	if (!json_is_object(um)) {
		um = json_object();
		json_object_set_new(u, "metadata", um);
	}
	json_object_set_new(um, "labels", obj_or_empty(json_object_get(wm, "labels")));
	json_object_set_new(um, "annotations", obj_or_empty(json_object_get(wm, "annotations")));
	json_object_del(u, "status");
	return u;
}

static bool deleting(const json_t *o)
{
	return json_object_get(json_object_get(o, "metadata"), "deletionTimestamp") != NULL;
}

static const char *name_of(const json_t *o)
{
	return json_string_value(json_object_get(json_object_get(o, "metadata"), "name"));
}

static const char *mirrored_from(const json_t *o)
{
	const json_t *ann = json_object_get(json_object_get(o, "metadata"), "annotations");
	return json_string_value(json_object_get(ann, MIRROR_ANNOTATION));
}

void mirror_plan(const json_t *src_items, const json_t *dst_items, const char *src_pid, struct mirror_plan *ret)
{
	*ret = (struct mirror_plan){ .create = json_array(), .update = json_array(), .del = json_array() };
	struct strmap want, have;
	strmap_init(&want);
	strmap_init(&have);
	size_t i;
	json_t *v;
	json_array_foreach ((json_t *)src_items, i, v) {
		/* copies on the source itself (it was another partition's once) are no originals */
		if (deleting(v) || mirrored_from(v))
			continue;
		json_t *m = mirror_object(v, src_pid);
		if (!m)
			continue;
		struct strmap_ent *e = strmap_put(&want, name_of(m), NULL);
		json_decref(e->val);
		e->val = m;
	}
	json_array_foreach ((json_t *)dst_items, i, v)
		if (name_of(v))
			strmap_put(&have, name_of(v), NULL)->val = v;
	size_t it;
	for (struct strmap_ent *e = strmap_next(&want, NULL, &it); e; e = strmap_next(&want, e, &it)) {
		struct strmap_ent *h = strmap_get(&have, e->key);
		if (!h) {
			json_array_append(ret->create, e->val);
			continue;
		}
		if (!mirrored_from(h->val)) {
			ret->shadowed++;
			continue;
		}
		if (deleting(h->val))
			continue; /* created again once it is gone */
		json_t *u = mirror_update(e->val, h->val);
		if (u)
			json_array_append_new(ret->update, u);
	}
	for (struct strmap_ent *h = strmap_next(&have, NULL, &it); h; h = strmap_next(&have, h, &it))
		if (mirrored_from(h->val) && !deleting(h->val) && !strmap_get(&want, h->key))
			json_array_append_new(ret->del, json_string(h->key));
	strmap_release(&want, (void (*)(void *))json_decref);
	strmap_release(&have, NULL);
}

void mirror_plan_release(struct mirror_plan *p)
{
	json_decref(p->create);
	json_decref(p->update);
	json_decref(p->del);
	*p = (struct mirror_plan){ 0 };
}

/* --- the pass ------------------------------------------------------------------------------- */

/* method path (body: JSON, may be NULL) to p with the gateway's own token: the status (0: no
 * answer), and the parsed reply in *ret when asked for and 200. */
static int call(struct reconciler *rc, struct partition *p, const char *method, const char *path, const json_t *body,
		json_t **ret)
{
	struct buf b = BUF_INIT;
	if (body)
		json_dump_buf(body, &b);
	struct upstream_req rq = { .method = method, .path = path, .authorization = rc->auth, .accept = "application/json",
				   .content_type = body ? "application/json" : NULL, .body = b.ptr, .len = b.len,
				   .timeout_ms = 10000 };
	struct upstream_resp resp = { 0 };
	int status = upstream_partition(p, &rq, &resp) == 0 ? resp.status : 0;
	if (ret)
		*ret = status == 200 ? json_loadb(buf_cstr(&resp.body), resp.body.len, 0, NULL) : NULL;
	if (status != 0 && status / 100 != 2 && status != 404 && status != 409)
		log_warn("crd mirror: partition refused", "partition=%s method=%s path=%s code=%d body=\"%.200s\"", p->id,
			 method, path, status, buf_cstr(&resp.body));
	upstream_resp_release(&resp);
	buf_release(&b);
	return status;
}

static json_t *list_items(struct reconciler *rc, struct partition *p)
{
	json_t *l = NULL;
	call(rc, p, "GET", CRD_SYSTEM_PATH, NULL, &l);
	json_t *items = json_object_get(l, "items");
	if (!json_is_array(items)) {
		json_decref(l);
		return NULL;
	}
	json_incref(items);
	json_decref(l);
	return items;
}

static char *item_path(const char *name)
{
	struct buf b = BUF_INIT;
	buf_adds(&b, CRD_SYSTEM_PATH "/");
	buf_add_query_escaped(&b, name);
	return buf_detach(&b, NULL);
}

static void mirror_into(struct reconciler *rc, struct partition *src, const json_t *src_items, struct partition *dst)
{
	json_t *have = list_items(rc, dst);
	if (!have)
		return; /* an older partition without CRDs, or not answering: next pass */
	struct mirror_plan plan;
	mirror_plan(src_items, have, src->id, &plan);
	size_t i;
	json_t *v;
	json_array_foreach (plan.create, i, v) {
		int st = call(rc, dst, "POST", CRD_SYSTEM_PATH, v, NULL);
		if (st == 201 || st == 200)
			log_info("crd mirror: created", "crd=%s from=%s partition=%s", name_of(v), src->id, dst->id);
	}
	json_array_foreach (plan.update, i, v) {
		char *path = item_path(name_of(v));
		if (call(rc, dst, "PUT", path, v, NULL) == 200)
			log_info("crd mirror: updated", "crd=%s from=%s partition=%s", name_of(v), src->id, dst->id);
		free(path);
	}
	json_array_foreach (plan.del, i, v) {
		char *path = item_path(json_string_value(v));
		int st = call(rc, dst, "DELETE", path, NULL, NULL);
		if (st == 200 || st == 202)
			log_info("crd mirror: deleted, its original is gone", "crd=%s partition=%s", json_string_value(v),
				 dst->id);
		free(path);
	}
	mirror_plan_release(&plan);
	json_decref(have);
}

void mirror_crds(struct reconciler *rc)
{
	struct partition *src = registry_tenant_partition(rc->reg, TENANT_SYSTEM);
	if (!src || atomic_load(&src->down)) {
		partition_unref(src);
		return;
	}
	json_t *items = list_items(rc, src);
	if (!items) {
		partition_unref(src);
		return; /* nothing may be deleted on a failed read */
	}
	size_t n;
	struct partition **tps = registry_partitions(rc->reg, false, &n);
	for (size_t i = 0; i < n && !atomic_load(&rc->stop); i++)
		if (strcmp(tps[i]->id, src->id) != 0 && !atomic_load(&tps[i]->down))
			mirror_into(rc, src, items, tps[i]);
	partitions_free(tps, n);
	json_decref(items);
	partition_unref(src);
}
