/* CRD cleanup: a CustomResourceDefinition being deleted with the finalizer
 * customresourcecleanup.apiextensions.k8s.io gets the condition Terminating=True
 * (InstanceDeletionInProgress), every custom resource of it is deleted (each DELETE honours the
 * object's own finalizers: the key is synced again until the lists are empty), then the
 * finalizer is removed and the API server deletes the CRD. A system tenant's CRD serves every
 * tenant that has no CRD of its name: its custom resources in all of those go. Keys
 * "tenant//name". */
#include <stdlib.h>
#include <string.h>
#include "tpc.h"
#include "ursa/api.h"
#include "ursa/errors.h"
#include "ursa/jsonutil.h"
#include "ursa/log.h"
#include "ursa/timeutil.h"
#include "ursa/xalloc.h"

#define CRD_RECHECK_MS 1000

json_t *tpc_crd_set_condition(const json_t *cur, const char *type, const char *status, const char *reason,
			      const char *message, time_t now_s)
{
	json_t *out = json_array();
	bool found = false;
	size_t i;
	json_t *c;
	json_array_foreach(cur, i, c) {
		const char *ct = json_str(c, "type");
		if (!ct || strcmp(ct, type) != 0) {
			json_array_append(out, c);
			continue;
		}
		if (found)
			continue; /* a duplicate: dropped */
		found = true;
		json_t *n = json_deep_copy(c);
		const char *cs = json_str(c, "status");
		if (!cs || strcmp(cs, status) != 0 || !json_str(c, "lastTransitionTime")) {
			struct buf ts = BUF_INIT;
			rfc3339_add(&ts, now_s);
			json_object_set_new(n, "lastTransitionTime", json_string(buf_cstr(&ts)));
			buf_release(&ts);
		}
		json_object_set_new(n, "status", json_string(status));
		json_object_set_new(n, "reason", json_string(reason));
		json_object_set_new(n, "message", json_string(message));
		json_array_append_new(out, n);
	}
	if (!found) {
		struct buf ts = BUF_INIT;
		rfc3339_add(&ts, now_s);
		json_array_append_new(out, json_pack("{s:s,s:s,s:s,s:s,s:s}", "type", type, "status", status, "reason",
						     reason, "message", message, "lastTransitionTime", buf_cstr(&ts)));
		buf_release(&ts);
	}
	return out;
}

static bool condition_true(const json_t *obj, const char *type)
{
	size_t i;
	json_t *c;
	json_array_foreach(json_path(obj, "status.conditions"), i, c) {
		const char *t = json_str(c, "type"), *s = json_str(c, "status");
		if (t && s && strcmp(t, type) == 0 && strcmp(s, "True") == 0)
			return true;
	}
	return false;
}

/* The tenants whose custom resources of CRD name (a CRD of tenant t) are its: t, and for the
 * system tenant every tenant without a CRD of that name. New array, or NULL when the lists
 * cannot be read. */
static json_t *tenants_of(struct tpc *m, const char *t, const char *name)
{
	json_t *out = json_pack("[s]", t);
	if (strcmp(t, "system") != 0)
		return out;
	json_t *tl = NULL, *cl = NULL;
	int a = tpc_get(m, "/api/v1/tenants", &tl), b = tpc_get(m, TPC_CRDS_PATH, &cl);
	if (a != 200 || b != 200) {
		json_decref(tl);
		json_decref(cl);
		json_decref(out);
		return NULL;
	}
	size_t i, j;
	json_t *x, *c;
	json_array_foreach(json_object_get(tl, "items"), i, x) {
		const char *tn = json_path_str(x, "metadata.name");
		if (!tn || strcmp(tn, "system") == 0)
			continue;
		bool shadowed = false;
		json_array_foreach(json_object_get(cl, "items"), j, c) {
			const char *ct = json_path_str(c, "metadata.tenant"), *cn = json_path_str(c, "metadata.name");
			if (ct && cn && strcmp(ct, tn) == 0 && strcmp(cn, name) == 0)
				shadowed = true;
		}
		if (!shadowed)
			json_array_append_new(out, json_string(tn));
	}
	json_decref(tl);
	json_decref(cl);
	return out;
}

/* Deletes the custom resources of k in tenant; how many are left (being deleted or just
 * deleted), or E_UNAVAILABLE. A collection no longer served (404) is empty. */
static int purge_kind(struct tpc *m, const struct tpc_crd_kind *k, const char *tenant)
{
	struct buf path = BUF_INIT;
	tpc_crd_path(&path, k, tenant, NULL, NULL);
	json_t *l = NULL;
	int code = tpc_get(m, path.ptr, &l);
	buf_release(&path);
	if (code == 404) {
		json_decref(l);
		return 0;
	}
	if (code != 200) {
		json_decref(l);
		return E_UNAVAILABLE;
	}
	int left = 0;
	size_t i;
	json_t *o;
	json_array_foreach(json_object_get(l, "items"), i, o) {
		left++;
		if (json_path(o, "metadata.deletionTimestamp"))
			continue;
		struct buf p = BUF_INIT;
		tpc_crd_path(&p, k, tenant, json_path_str(o, "metadata.namespace"), json_path_str(o, "metadata.name"));
		json_t *body = json_pack("{s:s,s:s,s:s}", "kind", "DeleteOptions", "apiVersion", "v1", "propagationPolicy",
					 "Background");
		int rc = tpc_send(m, "DELETE", p.ptr, body, NULL);
		if (rc != 200 && rc != 202 && rc != 404)
			log_warn("custom resource not deleted", "path=\"%s\" code=%d", p.ptr, rc);
		json_decref(body);
		buf_release(&p);
	}
	json_decref(l);
	return left;
}

int tpc_sync_crdcleanup(struct tpc *m, const char *key)
{
	struct tpc_live l;
	int rc = tpc_get_live(m, "customresourcedefinitions", key, TPC_LIVE_TERMINATING | TPC_LIVE_TENANT_SCOPED, &l);
	if (rc <= 0)
		return rc;
	struct buf path = BUF_INIT;
	json_t *tenants = NULL;
	struct tpc_crd_kind k = { 0 };
	bool parsed = false;
	buf_addf(&path, "/apis/apiextensions.k8s.io/v1/tenants/%s/customresourcedefinitions/%s", l.tenant, l.name);
	rc = 0;
	if (!json_path(l.obj, "metadata.deletionTimestamp") || !json_has_finalizer(l.obj, CRD_CLEANUP_FINALIZER))
		goto out;
	if (!condition_true(l.obj, "Terminating")) {
		json_t *body = json_deep_copy(l.obj);
		json_t *st = json_obj_child(body, "status");
		json_object_set_new(st, "conditions",
				    tpc_crd_set_condition(json_object_get(st, "conditions"), "Terminating", "True",
							  TPC_CRD_TERMINATING_REASON,
							  "CustomResource deletion is in progress", time(NULL)));
		struct buf sp = BUF_INIT;
		buf_addf(&sp, "%s/status", path.ptr);
		json_t *resp = NULL;
		int code = tpc_send(m, "PUT", sp.ptr, body, &resp);
		buf_release(&sp);
		json_decref(body);
		if (code == 200) {
			json_decref(l.obj);
			l.obj = resp; /* the newer resourceVersion, for the finalizer's update */
		} else {
			json_decref(resp);
			rc = code == 404 ? 0 : code == 409 ? E_CONFLICT : E_UNAVAILABLE;
			goto out;
		}
	}
	parsed = tpc_crd_kind_parse(l.obj, &k) == 0;
	if (parsed) {
		tenants = tenants_of(m, l.tenant, l.name);
		if (!tenants) {
			rc = E_UNAVAILABLE;
			goto out;
		}
		long left = 0;
		size_t i;
		json_t *t;
		json_array_foreach(tenants, i, t) {
			int n = purge_kind(m, &k, json_string_value(t));
			if (n < 0) {
				rc = n;
				goto out;
			}
			left += n;
		}
		if (left > 0) {
			log_debug("custom resources left", "tenant=\"%s\" crd=\"%s\" n=%ld", l.tenant, l.name, left);
			wq_add_after(m->wq[CTL_CRDCLEANUP], key, CRD_RECHECK_MS);
			goto out;
		}
	}
	/* every instance gone: the finalizer goes, and with it the CRD */
	rc = tpc_set_finalizer(m, path.ptr, l.obj, CRD_CLEANUP_FINALIZER, false);
	if (rc == 0)
		log_info("custom resources cleaned up", "tenant=\"%s\" crd=\"%s\"", l.tenant, l.name);
out:
	if (parsed)
		tpc_crd_kind_release(&k);
	json_decref(tenants);
	buf_release(&path);
	tpc_live_release(&l);
	return rc;
}
