/* API helpers shared by the controllers: paths, requests, events. */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include "tpc.h"
#include "ursa/errors.h"
#include "ursa/jsonutil.h"
#include "ursa/log.h"
#include "ursa/selector.h"
#include "ursa/timeutil.h"
#include "ursa/xalloc.h"

static const char *group_prefix(const char *plural)
{
	if (strcmp(plural, "deployments") == 0 || strcmp(plural, "replicasets") == 0 ||
	    strcmp(plural, "statefulsets") == 0 || strcmp(plural, "controllerrevisions") == 0)
		return "/apis/apps/v1";
	if (strcmp(plural, "jobs") == 0 || strcmp(plural, "cronjobs") == 0)
		return "/apis/batch/v1";
	if (strcmp(plural, "poddisruptionbudgets") == 0)
		return "/apis/policy/v1";
	if (strcmp(plural, "horizontalpodautoscalers") == 0)
		return "/apis/autoscaling/v2";
	if (strcmp(plural, "endpointslices") == 0)
		return "/apis/discovery.k8s.io/v1";
	if (strcmp(plural, "networks") == 0)
		return "/apis/arktos.futurewei.com/v1";
	if (strcmp(plural, "leases") == 0)
		return "/apis/coordination.k8s.io/v1";
	if (strcmp(plural, "roles") == 0 || strcmp(plural, "rolebindings") == 0 || strcmp(plural, "clusterroles") == 0 ||
	    strcmp(plural, "clusterrolebindings") == 0)
		return "/apis/rbac.authorization.k8s.io/v1";
	return "/api/v1";
}

void tpc_path(struct buf *out, const char *plural, const char *tenant, const char *ns, const char *name)
{
	buf_addf(out, "%s/tenants/%s", group_prefix(plural), tenant);
	if (strcmp(plural, "namespaces") != 0 && ns)
		buf_addf(out, "/namespaces/%s", ns);
	buf_addf(out, "/%s", plural);
	if (name)
		buf_addf(out, "/%s", name);
}

int tpc_get(struct tpc *m, const char *path, json_t **ret)
{
	return rest_do(m->rest, "GET", path, NULL, NULL, ret);
}

int tpc_send(struct tpc *m, const char *method, const char *path, const json_t *body, json_t **ret)
{
	const char *ct = strcmp(method, "PATCH") == 0 ? "application/merge-patch+json" : NULL;
	json_t *resp = NULL;
	int rc = rest_do(m->rest, method, path, body, ct, &resp);
	if (ret)
		*ret = resp;
	else
		json_decref(resp);
	return rc;
}

void tpc_event(struct tpc *m, const json_t *obj, const char *type, const char *reason, const char *fmt, ...)
{
	const char *tenant = json_path_str(obj, "metadata.tenant"), *ns = json_path_str(obj, "metadata.namespace");
	const char *name = json_path_str(obj, "metadata.name");
	if (!tenant || !ns || !name)
		return;
	struct buf msg = BUF_INIT, ts = BUF_INIT, path = BUF_INIT;
	va_list ap;
	va_start(ap, fmt);
	buf_vaddf(&msg, fmt, ap);
	va_end(ap);
	rfc3339_add(&ts, time(NULL));
	char *evname = xasprintf("%s.%llx", name, (unsigned long long)now_ms() * 1000 + (unsigned)(rand() % 1000));
	json_t *ev = json_pack("{s:s,s:s,s:{s:s,s:s},s:{s:s?,s:s?,s:s,s:s,s:s?},s:s,s:s,s:s,s:{s:s},s:s,s:s,s:i}",
			       "apiVersion", "v1", "kind", "Event", "metadata", "name", evname, "namespace", ns,
			       "involvedObject", "apiVersion", json_str(obj, "apiVersion"), "kind", json_str(obj, "kind"),
			       "name", name, "namespace", ns, "uid", json_path_str(obj, "metadata.uid"), "type", type,
			       "reason", reason, "message", buf_cstr(&msg), "source", "component",
			       "controller-manager", "firstTimestamp", buf_cstr(&ts), "lastTimestamp", buf_cstr(&ts),
			       "count", 1);
	tpc_path(&path, "events", tenant, ns, NULL);
	int rc = ev ? tpc_send(m, "POST", path.ptr, ev, NULL) : E_INTERNAL;
	if (rc != 201 && rc != 200)
		log_debug("event not recorded", "tenant=\"%s\" namespace=\"%s\" reason=%s rc=%d", tenant, ns, reason, rc);
	json_decref(ev);
	free(evname);
	buf_release(&msg);
	buf_release(&ts);
	buf_release(&path);
}

bool tpc_split_key(const char *key, char **ret_t, char **ret_ns, char **ret_name)
{
	const char *a = strchr(key, '/');
	const char *b = a ? strchr(a + 1, '/') : NULL;
	if (!a || !b || strchr(b + 1, '/'))
		return false;
	*ret_t = xstrndup(key, (size_t)(a - key));
	*ret_ns = xstrndup(a + 1, (size_t)(b - a - 1));
	*ret_name = xstrdup(b + 1);
	return true;
}

void tpc_live_release(struct tpc_live *l)
{
	free(l->tenant);
	free(l->ns);
	free(l->name);
	json_decref(l->obj);
	memset(l, 0, sizeof(*l));
}

int tpc_get_live(struct tpc *m, const char *plural, const char *key, unsigned flags, struct tpc_live *ret)
{
	memset(ret, 0, sizeof(*ret));
	if (!tpc_split_key(key, &ret->tenant, &ret->ns, &ret->name))
		return 0;
	struct buf path = BUF_INIT;
	tpc_path(&path, plural, ret->tenant, (flags & TPC_LIVE_TENANT_SCOPED) ? NULL : ret->ns, ret->name);
	int code = tpc_get(m, path.ptr, &ret->obj);
	buf_release(&path);
	int rc = code == 200 ? 1 : code == 404 ? 0 : E_UNAVAILABLE;
	if (rc == 1) {
		ret->uid = json_path_str(ret->obj, "metadata.uid");
		if (!ret->uid || (!(flags & TPC_LIVE_TERMINATING) && json_path(ret->obj, "metadata.deletionTimestamp")))
			rc = 0;
	}
	if (rc != 1)
		tpc_live_release(ret);
	return rc;
}

json_t *tpc_list_selected(struct tpc *m, const char *plural, const char *tenant, const char *ns, const char *selector)
{
	struct buf p = BUF_INIT;
	json_t *list = NULL;
	tpc_path(&p, plural, tenant, ns, NULL);
	if (selector && *selector) {
		buf_adds(&p, "?labelSelector=");
		buf_add_query_escaped(&p, selector);
	}
	int code = tpc_get(m, p.ptr, &list);
	buf_release(&p);
	json_t *items = code == 200 ? json_incref(json_object_get(list, "items")) : NULL;
	json_decref(list);
	if (code != 200)
		return NULL;
	return json_is_array(items) ? items : (json_decref(items), json_array());
}

json_t *tpc_list_by_selector(struct tpc *m, const char *plural, const char *tenant, const char *ns,
			     const json_t *selector, struct label_selector **ret_sel, int *ret_err)
{
	struct label_selector *sel = NULL;
	struct buf sq = BUF_INIT;
	json_t *items = NULL;
	*ret_err = 0;
	if (label_selector_from_json(selector, &sel, NULL) < 0 || label_selector_empty(sel)) {
		*ret_err = E_INVALID;
		goto out;
	}
	label_selector_format(sel, &sq);
	if (!(items = tpc_list_selected(m, plural, tenant, ns, buf_cstr(&sq))))
		*ret_err = E_UNAVAILABLE;
out:
	if (items && ret_sel) {
		*ret_sel = sel;
		sel = NULL;
	}
	label_selector_free(sel);
	buf_release(&sq);
	return items;
}
