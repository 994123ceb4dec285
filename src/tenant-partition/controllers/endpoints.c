/* The endpoints and endpointslice controllers: keep each Service's Endpoints (same name) and
 * EndpointSlices (labelled kubernetes.io/service-name, owned by the service) equal to what its
 * selector and its pods' readiness give (svclogic.c); a service without a selector is left to
 * whoever writes its endpoints. A deleted service's Endpoints and slices go with it. */
#include <stdlib.h>
#include <string.h>
#include "tpc.h"
#include "ursa/errors.h"
#include "ursa/jsonutil.h"
#include "ursa/log.h"
#include "ursa/xalloc.h"

static int code_rc(int code)
{
	return code == 200 || code == 201 || code == 404 ? 0 : code == 409 ? E_CONFLICT : E_UNAVAILABLE;
}

/* The service (200, *ret), 404, or another code: from the informer (a resync of every service
 * asks the API server nothing), but a 404 there is confirmed by the API server, since what follows
 * a 404 deletes. */
static int get_service(struct tpc *m, const char *t, const char *ns, const char *name, json_t **ret)
{
	int code = tpc_get_cached(m, INF_SERVICES, "services", t, ns, name, ret);
	if (code == 404) {
		struct buf p = BUF_INIT;
		tpc_path(&p, "services", t, ns, name);
		code = tpc_get(m, p.ptr, ret);
		buf_release(&p);
	}
	return code;
}

/* The pods of the service's namespace its selector picks (new array), or NULL. */
static json_t *selected_pods(struct tpc *m, const char *t, const char *ns, const json_t *svc)
{
	struct buf sel = BUF_INIT;
	const char *k;
	json_t *v;
	json_object_foreach(json_path(svc, "spec.selector"), k, v)
		buf_addf(&sel, "%s%s=%s", sel.len ? "," : "", k, json_string_value(v) ? json_string_value(v) : "");
	json_t *items = tpc_list_selected(m, "pods", t, ns, buf_cstr(&sel));
	buf_release(&sel);
	return items;
}

static json_t *labels_of(const json_t *svc)
{
	json_t *l = json_path(svc, "metadata.labels");
	return json_is_object(l) ? json_deep_copy(l) : json_object();
}

int tpc_sync_endpoints(struct tpc *m, const char *key)
{
	char *t = NULL, *ns = NULL, *name = NULL;
	if (!tpc_split_key(key, &t, &ns, &name))
		return 0;
	json_t *svc = NULL, *pods = NULL, *cur = NULL, *subsets = NULL;
	struct buf ep = BUF_INIT;
	int rc = 0;
	tpc_path(&ep, "endpoints", t, ns, name);
	int code = get_service(m, t, ns, name, &svc);
	if (code == 404) {
		code = tpc_send(m, "DELETE", ep.ptr, NULL, NULL);
		rc = code_rc(code);
		goto out;
	}
	if (code != 200) {
		rc = E_UNAVAILABLE;
		goto out;
	}
	if (!tpc_service_has_selector(svc))
		goto out;
	if (!(pods = selected_pods(m, t, ns, svc))) {
		rc = E_UNAVAILABLE;
		goto out;
	}
	subsets = tpc_endpoints_subsets(svc, pods);
	code = tpc_get_cached(m, INF_ENDPOINTS, "endpoints", t, ns, name, &cur);
	if (code == 404) {
		json_t *body = json_pack("{s:s,s:s,s:{s:s,s:o},s:O}", "apiVersion", "v1", "kind", "Endpoints",
					 "metadata", "name", name, "labels", labels_of(svc), "subsets", subsets);
		struct buf coll = BUF_INIT;
		tpc_path(&coll, "endpoints", t, ns, NULL);
		code = tpc_send(m, "POST", coll.ptr, body, NULL);
		rc = code == 409 ? E_CONFLICT : code_rc(code);
		buf_release(&coll);
		json_decref(body);
	} else if (code == 200) {
		json_t *have = json_object_get(cur, "subsets"), *labels = labels_of(svc);
		bool same_subsets = have ? json_equal(have, subsets) : json_array_size(subsets) == 0;
		json_t *hl = json_path(cur, "metadata.labels");
		bool same_labels = hl ? json_equal(hl, labels) : json_object_size(labels) == 0;
		if (!same_subsets || !same_labels) {
			json_t *body = json_deep_copy(cur);
			json_object_set(body, "subsets", subsets);
			json_object_set(json_obj_child(body, "metadata"), "labels", labels);
			rc = code_rc(tpc_send(m, "PUT", ep.ptr, body, NULL));
			json_decref(body);
		}
		json_decref(labels);
	} else {
		rc = E_UNAVAILABLE;
	}
out:
	json_decref(svc);
	json_decref(pods);
	json_decref(cur);
	json_decref(subsets);
	buf_release(&ep);
	free(t), free(ns), free(name);
	return rc;
}

/* The slices this controller keeps for service name (new array), or NULL. */
static json_t *managed_slices(struct tpc *m, const char *t, const char *ns, const char *name)
{
	struct buf sel = BUF_INIT;
	buf_addf(&sel, "%s=%s,%s=%s", TPC_SLICE_SERVICE_LABEL, name, TPC_SLICE_MANAGED_BY_LABEL, TPC_SLICE_MANAGER);
	json_t *items = tpc_list_selected(m, "endpointslices", t, ns, buf_cstr(&sel));
	buf_release(&sel);
	return items;
}

static bool slice_same(const json_t *have, const json_t *want)
{
	static const char *const keys[] = { "endpoints", "ports", "addressType" };
	for (size_t i = 0; i < ARRAY_SIZE(keys); i++) {
		const json_t *a = json_object_get(have, keys[i]), *b = json_object_get(want, keys[i]);
		if (!a && json_is_array(b) && json_array_size(b) == 0)
			continue;
		if (!a || !json_equal(a, b))
			return false;
	}
	return json_equal(json_path(have, "metadata.labels"), json_path(want, "metadata.labels")) &&
	       json_equal(json_path(have, "metadata.ownerReferences"), json_path(want, "metadata.ownerReferences"));
}

int tpc_sync_endpointslices(struct tpc *m, const char *key)
{
	char *t = NULL, *ns = NULL, *name = NULL;
	if (!tpc_split_key(key, &t, &ns, &name))
		return 0;
	json_t *svc = NULL, *pods = NULL, *have = NULL, *want = NULL;
	int rc = 0;
	int code = get_service(m, t, ns, name, &svc);
	if (code != 200 && code != 404) {
		rc = E_UNAVAILABLE;
		goto out;
	}
	if (!(have = managed_slices(m, t, ns, name))) {
		rc = E_UNAVAILABLE;
		goto out;
	}
	if (code == 200 && tpc_service_has_selector(svc)) {
		if (!(pods = selected_pods(m, t, ns, svc))) {
			rc = E_UNAVAILABLE;
			goto out;
		}
		want = tpc_endpoint_slices(svc, pods);
	} else {
		want = json_array(); /* gone (or no longer selecting): none of ours stays */
	}
	size_t i, j;
	json_t *w, *h;
	json_array_foreach(want, i, w) {
		const char *wn = json_path_str(w, "metadata.name");
		json_t *found = NULL;
		json_array_foreach(have, j, h)
			if (!strcmp(json_path_str(h, "metadata.name") ? json_path_str(h, "metadata.name") : "", wn)) {
				found = h;
				break;
			}
		struct buf p = BUF_INIT;
		if (!found) {
			tpc_path(&p, "endpointslices", t, ns, NULL);
			code = tpc_send(m, "POST", p.ptr, w, NULL);
			if (code_rc(code) < 0 || code == 409)
				rc = code == 409 ? E_CONFLICT : code_rc(code);
		} else if (!slice_same(found, w)) {
			json_t *body = json_deep_copy(w);
			json_object_set(json_object_get(body, "metadata"), "resourceVersion",
					json_path(found, "metadata.resourceVersion"));
			tpc_path(&p, "endpointslices", t, ns, wn);
			code = tpc_send(m, "PUT", p.ptr, body, NULL);
			if (code_rc(code) < 0)
				rc = code_rc(code);
			json_decref(body);
		}
		buf_release(&p);
	}
	json_array_foreach(have, j, h) {
		const char *hn = json_path_str(h, "metadata.name");
		bool keep = false;
		json_array_foreach(want, i, w)
			if (hn && !strcmp(hn, json_path_str(w, "metadata.name")))
				keep = true;
		if (keep || !hn)
			continue;
		struct buf p = BUF_INIT;
		tpc_path(&p, "endpointslices", t, ns, hn);
		code = tpc_send(m, "DELETE", p.ptr, NULL, NULL);
		if (code_rc(code) < 0)
			rc = code_rc(code);
		buf_release(&p);
	}
out:
	json_decref(svc);
	json_decref(pods);
	json_decref(have);
	json_decref(want);
	free(t), free(ns), free(name);
	return rc;
}
