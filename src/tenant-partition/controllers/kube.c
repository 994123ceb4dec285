/* API helpers shared by the controllers: paths, requests, events, listers over the shared
 * informers, and expectations. */
#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include "tpc.h"
#include "ursa/errors.h"
#include "ursa/event.h"
#include "ursa/jsonutil.h"
#include "ursa/log.h"
#include "ursa/selector.h"
#include "ursa/strmap.h"
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
	if (strcmp(plural, "customresourcedefinitions") == 0)
		return "/apis/apiextensions.k8s.io/v1";
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

int tpc_get_cached(struct tpc *m, enum tpc_inf i, const char *plural, const char *tenant, const char *ns,
		   const char *name, json_t **ret)
{
	struct informer *inf = tpc_informer(m, i);
	*ret = NULL;
	if (inf && informer_synced(inf)) {
		char *key = xasprintf("%s/%s/%s", tenant, ns ? ns : "", name);
		*ret = informer_get(inf, key);
		free(key);
		return *ret ? 200 : 404;
	}
	struct buf path = BUF_INIT;
	tpc_path(&path, plural, tenant, ns, name);
	int code = tpc_get(m, path.ptr, ret);
	buf_release(&path);
	return code;
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

int tpc_set_finalizer(struct tpc *m, const char *path, const json_t *obj, const char *fin, bool on)
{
	json_t *body = json_deep_copy(obj);
	json_t *fins = json_array();
	size_t i;
	json_t *f;
	json_array_foreach(json_path(obj, "metadata.finalizers"), i, f)
		if (!json_is_string(f) || strcmp(json_string_value(f), fin) != 0)
			json_array_append(fins, f);
	if (on)
		json_array_append_new(fins, json_string(fin));
	json_object_set_new(json_obj_child(body, "metadata"), "finalizers", fins);
	int code = tpc_send(m, "PUT", path, body, NULL);
	json_decref(body);
	return code == 200 || code == 404 ? 0 : code == 409 ? E_CONFLICT : E_UNAVAILABLE;
}

void tpc_event(struct tpc *m, const json_t *obj, const char *type, const char *reason, const char *fmt, ...)
{
	static const struct event_source src = { .component = "controller-manager" };
	if (!json_path_str(obj, "metadata.tenant") || !json_path_str(obj, "metadata.namespace"))
		return;
	struct buf msg = BUF_INIT;
	va_list ap;
	va_start(ap, fmt);
	buf_vaddf(&msg, fmt, ap);
	va_end(ap);
	char *path;
	json_t *ev = event_new(obj, NULL, NULL, NULL, type, reason, buf_cstr(&msg), &src, &path);
	int rc = ev ? tpc_send(m, "POST", path, ev, NULL) : E_INTERNAL;
	if (rc != 201 && rc != 200)
		log_debug("event not recorded", "object=\"%s\" reason=%s rc=%d", json_path_str(obj, "metadata.name"),
			  reason, rc);
	json_decref(ev);
	free(path);
	buf_release(&msg);
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

/* Listers -------------------------------------------------------------------------------------- */

/* The synced shared informer that holds plural, or NULL (then the API server is asked). */
static struct informer *lister(struct tpc *m, const char *plural)
{
	struct informer *inf = NULL;
	if (!strcmp(plural, "pods"))
		inf = tpc_informer(m, INF_PODS);
	else if (!strcmp(plural, "jobs"))
		inf = tpc_informer(m, INF_JOBS);
	else if (!strcmp(plural, "replicasets"))
		inf = tpc_informer(m, INF_RS);
	else if (!strcmp(plural, "endpointslices"))
		inf = tpc_informer(m, INF_SLICES);
	return inf && informer_synced(inf) ? inf : NULL;
}

struct pick {
	json_t *out;
	const struct label_selector *sel; /* NULL: any labels */
	const char *tenant, *ns;          /* NULL: any (the controller index spans namespaces) */
};

static bool str_is(const char *a, const char *b)
{
	return !b || (a && !strcmp(a, b));
}

static void pick_one(void *ud, const json_t *obj)
{
	struct pick *p = ud;
	if (p->sel && !label_selector_matches(p->sel, json_path(obj, "metadata.labels")))
		return;
	if (!str_is(json_path_str(obj, "metadata.tenant"), p->tenant) ||
	    !str_is(json_path_str(obj, "metadata.namespace"), p->ns))
		return;
	json_array_append(p->out, (json_t *)obj);
}

/* The REST list of plural in tenant/ns by selector (a string; "" takes all): items or NULL. */
static json_t *rest_list(struct tpc *m, const char *plural, const char *tenant, const char *ns, const char *selector)
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

json_t *tpc_list_selected(struct tpc *m, const char *plural, const char *tenant, const char *ns, const char *selector)
{
	struct informer *inf = lister(m, plural);
	struct label_selector *sel = NULL;
	if (!inf || label_selector_parse(selector, &sel, NULL) < 0) {
		label_selector_free(sel);
		return rest_list(m, plural, tenant, ns, selector);
	}
	struct pick p = { json_array(), label_selector_empty(sel) ? NULL : sel, NULL, NULL };
	informer_foreach_ns(inf, tenant, ns, pick_one, &p);
	label_selector_free(sel);
	return p.out;
}

json_t *tpc_list_controlled(struct tpc *m, const char *plural, const char *tenant, const char *ns,
			    const json_t *selector, const char *uid, bool orphans, struct label_selector **ret_sel,
			    int *ret_err)
{
	struct label_selector *sel = NULL;
	struct buf sq = BUF_INIT;
	json_t *items = NULL;
	*ret_err = 0;
	if ((orphans && !selector) || /* adopting orphans takes a selector */
	    (selector && (label_selector_from_json(selector, &sel, NULL) < 0 || label_selector_empty(sel)))) {
		*ret_err = E_INVALID;
		goto out;
	}
	struct informer *inf = lister(m, plural);
	struct pick p = { json_array(), sel, tenant, ns };
	if (inf) {
		if (uid && *uid)
			informer_foreach_indexed(inf, OBJ_INDEX_CONTROLLER, uid, pick_one, &p);
		if (orphans) {
			char *v = obj_index_ns_value(tenant, ns);
			informer_foreach_indexed(inf, OBJ_INDEX_ORPHANS, v, pick_one, &p);
			free(v);
		}
		items = p.out;
		goto out;
	}
	json_decref(p.out);
	if (sel)
		label_selector_format(sel, &sq);
	json_t *all = rest_list(m, plural, tenant, ns, buf_cstr(&sq));
	if (!all) {
		*ret_err = E_UNAVAILABLE;
		goto out;
	}
	items = json_array();
	size_t i;
	json_t *o;
	json_array_foreach(all, i, o) {
		const char *ruid = json_str(json_controller_ref(o), "uid");
		if ((ruid && uid && !strcmp(ruid, uid)) || (!ruid && orphans))
			json_array_append(items, o);
	}
	json_decref(all);
out:
	if (items && ret_sel) {
		*ret_sel = sel;
		sel = NULL;
	}
	label_selector_free(sel);
	buf_release(&sq);
	return items;
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

/* Expectations --------------------------------------------------------------------------------- */

struct exp_rec {
	char *uid;          /* the controller object's, or NULL */
	long long adds;     /* creations not yet observed */
	struct strmap dels; /* keys of objects whose deletion is not yet observed */
	int64_t since_ms;   /* when last raised */
};

struct tpc_expect {
	pthread_mutex_t mu;
	struct strmap recs; /* controller key → struct exp_rec * */
	int64_t timeout_ms;
};

struct tpc_expect *tpc_expect_new(int64_t timeout_ms)
{
	struct tpc_expect *x = xcalloc(1, sizeof(*x));
	pthread_mutex_init(&x->mu, NULL);
	strmap_init(&x->recs);
	x->timeout_ms = timeout_ms > 0 ? timeout_ms : TPC_EXPECT_TIMEOUT_MS;
	return x;
}

static void rec_free(void *v)
{
	struct exp_rec *r = v;
	strmap_release(&r->dels, NULL);
	free(r->uid);
	free(r);
}

/* Whether record r may be counted for the object of uid (NULL on either side: unknown). */
static bool rec_is(const struct exp_rec *r, const char *uid)
{
	return !r->uid || !uid || !strcmp(r->uid, uid);
}

void tpc_expect_free(struct tpc_expect *x)
{
	if (!x)
		return;
	strmap_release(&x->recs, rec_free);
	pthread_mutex_destroy(&x->mu);
	free(x);
}

/* The record of key for the object of uid, made when absent or another's (under x->mu). */
static struct exp_rec *rec_of(struct tpc_expect *x, const char *key, const char *uid)
{
	struct strmap_ent *e = strmap_put(&x->recs, key, NULL);
	if (e->val && !rec_is(e->val, uid)) {
		rec_free(e->val);
		e->val = NULL;
	}
	if (!e->val) {
		struct exp_rec *r = xcalloc(1, sizeof(*r));
		strmap_init(&r->dels);
		e->val = r;
	}
	struct exp_rec *r = e->val;
	if (!r->uid && uid)
		r->uid = xstrdup(uid);
	return r;
}

/* key's record if it is uid's (under x->mu). */
static struct exp_rec *rec_get(struct tpc_expect *x, const char *key, const char *uid)
{
	struct strmap_ent *e = strmap_get(&x->recs, key);
	return e && rec_is(e->val, uid) ? e->val : NULL;
}

static bool rec_met(const struct exp_rec *r)
{
	return r->adds <= 0 && r->dels.n == 0;
}

static void rec_drop(struct tpc_expect *x, const char *key, struct exp_rec *r)
{
	strmap_del(&x->recs, key, NULL);
	rec_free(r);
}

static void rec_drop_if_met(struct tpc_expect *x, const char *key, struct exp_rec *r)
{
	if (rec_met(r))
		rec_drop(x, key, r);
}

void tpc_expect_creations(struct tpc_expect *x, const char *key, const char *uid, long long n, int64_t now_ms)
{
	if (!x || n <= 0)
		return;
	pthread_mutex_lock(&x->mu);
	struct exp_rec *r = rec_of(x, key, uid);
	r->adds = (r->adds > 0 ? r->adds : 0) + n;
	r->since_ms = now_ms;
	pthread_mutex_unlock(&x->mu);
}

void tpc_expect_deletion(struct tpc_expect *x, const char *key, const char *uid, const char *obj_key,
			 int64_t now_ms)
{
	if (!x || !obj_key)
		return;
	pthread_mutex_lock(&x->mu);
	struct exp_rec *r = rec_of(x, key, uid);
	strmap_put(&r->dels, obj_key, NULL);
	r->since_ms = now_ms;
	pthread_mutex_unlock(&x->mu);
}

void tpc_expect_created(struct tpc_expect *x, const char *key, const char *uid, long long n)
{
	if (!x || n <= 0)
		return;
	pthread_mutex_lock(&x->mu);
	struct exp_rec *r = rec_get(x, key, uid);
	if (r) {
		r->adds -= n;
		rec_drop_if_met(x, key, r);
	}
	pthread_mutex_unlock(&x->mu);
}

void tpc_expect_deleted(struct tpc_expect *x, const char *key, const char *uid, const char *obj_key)
{
	if (!x || !obj_key)
		return;
	pthread_mutex_lock(&x->mu);
	struct exp_rec *r = rec_get(x, key, uid);
	if (r) {
		strmap_del(&r->dels, obj_key, NULL);
		rec_drop_if_met(x, key, r);
	}
	pthread_mutex_unlock(&x->mu);
}

bool tpc_expect_satisfied(struct tpc_expect *x, const char *key, const char *uid, int64_t now_ms,
			  int64_t *ret_wait_ms)
{
	bool ok = true;
	if (ret_wait_ms)
		*ret_wait_ms = 0;
	if (!x)
		return true;
	pthread_mutex_lock(&x->mu);
	struct strmap_ent *e = strmap_get(&x->recs, key);
	if (e) {
		struct exp_rec *r = e->val;
		int64_t left = r->since_ms + x->timeout_ms - now_ms;
		if (rec_met(r) || !rec_is(r, uid)) { /* met, or an earlier object's of the same name */
			rec_drop(x, key, r);
		} else if (left <= 0) {
			log_warn("expectations timed out: syncing anyway", "key=\"%s\" creations=%lld deletions=%zu",
				 key, r->adds, r->dels.n);
			rec_drop(x, key, r);
		} else {
			ok = false;
			if (ret_wait_ms)
				*ret_wait_ms = left;
		}
	}
	pthread_mutex_unlock(&x->mu);
	return ok;
}

void tpc_expect_forget(struct tpc_expect *x, const char *key)
{
	if (!x)
		return;
	pthread_mutex_lock(&x->mu);
	void *r = NULL;
	if (strmap_del(&x->recs, key, &r))
		rec_free(r);
	pthread_mutex_unlock(&x->mu);
}

size_t tpc_expect_pending(struct tpc_expect *x)
{
	pthread_mutex_lock(&x->mu);
	size_t n = x->recs.n;
	pthread_mutex_unlock(&x->mu);
	return n;
}
