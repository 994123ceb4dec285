/* Quotas at admission: ResourceQuotas per namespace, the tenant-wide quota (Tenant
 * spec.quota.hard), and LimitRange defaults and bounds for pods.
 *
 * Usage is never computed by scanning a namespace on a create. The server keeps it in memory,
 * per (tenant, namespace) and per tenant, following its own watch caches: a tracker (a
 * follower, follow.c) of every namespaced or tenant-scoped resource but heartbeats and
 * ephemeral ones keeps object counts, and for pods the requests and limits
 * of cpu and memory by scope class (terminal pods count for nothing). A create admitted into a
 * namespace (or tenant) with a quota leaves a reservation until the watch brings its object
 * (or the create fails: quota_release), so creates racing each other see each other. Everything
 * sits under one mutex; the admission of a create where no quota exists costs an atomic load.
 *
 * With one API server per partition this is exact. With several, each server's reservations
 * are its own: two servers may each admit the last slot within the time an event takes to
 * reach the other (a small over-admission window).
 *
 * A writer thread keeps status.hard and status.used of the quotas (and status.quota of
 * Tenants) equal to spec.hard and the watched usage, writing only what changed. */
#include <stdlib.h>
#include <string.h>
#include "internal.h"
#include "ursa/jsonutil.h"
#include "ursa/log.h"
#include "ursa/quota.h"
#include "ursa/strmap.h"
#include "ursa/timeutil.h"
#include "ursa/xalloc.h"

#define RESV_TTL_MS 30000
#define STATUS_PERIOD_MS 100

struct amounts {
	long long pod[QCLASS_N][QR_NPOD]; /* milli-units; pods counted as 1000 each */
	long long *count;                 /* objects per served resource index */
};
struct usage {
	struct amounts used, resv;
};
struct hard {
	char *name;
	json_t *value; /* as the spec gave it */
	enum qres kind;
	int res; /* QR_COUNT: served index, -1 when not served here (always 0) */
	long long milli;
	bool binary;
};
struct rq {
	char *name;
	struct quota_scopes sc;
	struct hard *h;
	size_t nh;
	char *status; /* stored status (compact, sorted keys): skips identical writes */
};
struct rqlist {
	struct rq *q;
	size_t n;
};
struct podrec {
	long long v[QR_NPOD];
	unsigned cls;
	bool counted;
};
struct resv {
	struct resv *next;
	uint64_t id;
	char *nskey; /* NULL for tenant-scoped objects */
	char *tenant;
	int res;
	struct podrec pod;
	int64_t born_ms;
};
struct quota {
	struct apiserver *s;
	pthread_mutex_t mu;
	pthread_cond_t synced_cv;
	bool synced;
	struct strmap ns, tenants;    /* "t/ns", "t" -> struct usage */
	struct strmap pods;           /* etcd key -> struct podrec */
	struct strmap quotas;         /* "t/ns" -> struct rqlist */
	struct strmap tquotas;        /* "t" -> struct rqlist (one quota named after the tenant) */
	struct strmap resv;           /* etcd key -> struct resv list */
	struct strmap dirty, tdirty;  /* "t/ns", "t": status to check */
	atomic_long nquotas;
	uint64_t next_id;
	struct served **fsv;          /* the caches the tracker follows */
	size_t nf;
	struct follower *tracker;
	int pods_res, rq_res, tenants_res, phase_field;
	pthread_t writer;
	bool threads;
	atomic_bool stop;
};

/* ---- state (under mu) ------------------------------------------------------------------ */

static struct usage *usage_get(struct quota *qs, struct strmap *m, const char *key)
{
	bool created;
	struct strmap_ent *e = strmap_put(m, key, &created);
	if (created) {
		struct usage *u = xcalloc(1, sizeof(*u));
		u->used.count = xcalloc(qs->s->nres, sizeof(long long));
		u->resv.count = xcalloc(qs->s->nres, sizeof(long long));
		e->val = u;
	}
	return e->val;
}

static void usage_free(void *v)
{
	struct usage *u = v;
	free(u->used.count);
	free(u->resv.count);
	free(u);
}

static void amounts_apply(struct amounts *a, int res, const struct podrec *p, int sign)
{
	a->count[res] += sign;
	if (p && p->counted)
		for (int k = 0; k < QR_NPOD; k++)
			a->pod[p->cls][k] += sign * p->v[k];
}

static void mark_dirty(struct quota *qs, const char *nskey, const char *tenant)
{
	if (nskey && strmap_get(&qs->quotas, nskey))
		strmap_put(&qs->dirty, nskey, NULL);
	if (tenant && strmap_get(&qs->tquotas, tenant))
		strmap_put(&qs->tdirty, tenant, NULL);
}

/* An object's contribution to its namespace and tenant (used or reserved part). */
static void apply(struct quota *qs, const char *nskey, const char *tenant, int res, const struct podrec *p, int sign,
		  bool reserved)
{
	if (nskey) {
		struct usage *u = usage_get(qs, &qs->ns, nskey);
		amounts_apply(reserved ? &u->resv : &u->used, res, p, sign);
	}
	struct usage *t = usage_get(qs, &qs->tenants, tenant);
	amounts_apply(reserved ? &t->resv : &t->used, res, p, sign);
	if (!reserved)
		mark_dirty(qs, nskey, tenant);
}

static void resv_drop_list(struct quota *qs, struct resv *r)
{
	while (r) {
		struct resv *next = r->next;
		apply(qs, r->nskey, r->tenant, r->res, r->res == qs->pods_res ? &r->pod : NULL, -1, true);
		free(r->nskey);
		free(r->tenant);
		free(r);
		r = next;
	}
}

static void rq_release(struct rq *q)
{
	for (size_t i = 0; i < q->nh; i++) {
		free(q->h[i].name);
		json_decref(q->h[i].value);
	}
	free(q->h);
	free(q->name);
	free(q->status);
}

static void rqlist_free(void *v)
{
	struct rqlist *l = v;
	for (size_t i = 0; i < l->n; i++)
		rq_release(&l->q[i]);
	free(l->q);
	free(l);
}

static void podrec_free(void *v) { free(v); }

/* ---- parsing what the watch brings (no lock) ------------------------------------------ */

static int served_index(struct apiserver *s, const char *plural, size_t plen, const char *group, size_t glen)
{
	for (size_t i = 0; i < s->nres; i++) {
		const struct api_resource *r = s->res[i].r;
		if (strlen(r->plural) == plen && strncmp(r->plural, plural, plen) == 0 && strlen(r->group) == glen &&
		    strncmp(r->group, group, glen) == 0)
			return (int)i;
	}
	return -1;
}

/* A quota from hard (an object) and scopes; false when there is nothing to enforce. */
static bool rq_parse(struct quota *qs, const char *name, const json_t *hard, const json_t *scopes,
		     const json_t *status, struct rq *ret)
{
	memset(ret, 0, sizeof(*ret));
	if (!json_is_object(hard) || quota_scopes_parse(scopes, &ret->sc) < 0)
		return false;
	ret->h = xcalloc(json_object_size(hard) + 1, sizeof(*ret->h));
	const char *k;
	json_t *v;
	json_object_foreach((json_t *)hard, k, v) {
		struct hard h = { 0 };
		const char *p, *g;
		size_t pl, gl;
		if (quota_resource_parse(k, &h.kind, &p, &pl, &g, &gl) < 0 || quota_value_milli(v, &h.milli, &h.binary) < 0)
			continue;
		h.res = h.kind == QR_COUNT ? served_index(qs->s, p, pl, g, gl) : -1;
		if (h.kind == QR_COUNT && quota_scopes_any(ret->sc))
			continue;
		h.name = xstrdup(k);
		h.value = json_incref(v);
		ret->h[ret->nh++] = h;
	}
	ret->name = xstrdup(name);
	if (status) {
		char *d = json_dumps(status, JSON_COMPACT | JSON_SORT_KEYS);
		ret->status = d ? d : xstrdup("");
	} else {
		ret->status = xstrdup("");
	}
	return true;
}

static int rq_cmp(const void *a, const void *b)
{
	return strcmp(((const struct rq *)a)->name, ((const struct rq *)b)->name);
}

/* Puts (q != NULL) or removes quota name in list key of map. Returns the change in count. */
static long rqlist_set(struct strmap *m, const char *key, const char *name, struct rq *q)
{
	struct strmap_ent *e = strmap_get(m, key);
	struct rqlist *l = e ? e->val : NULL;
	long delta = 0;
	if (l)
		for (size_t i = 0; i < l->n; i++)
			if (strcmp(l->q[i].name, name) == 0) {
				rq_release(&l->q[i]);
				memmove(&l->q[i], &l->q[i + 1], (l->n - i - 1) * sizeof(*l->q));
				l->n--;
				delta--;
				break;
			}
	if (q) {
		if (!l) {
			l = xcalloc(1, sizeof(*l));
			strmap_put(m, key, NULL)->val = l;
		}
		l->q = xrealloc(l->q, (l->n + 1) * sizeof(*l->q));
		l->q[l->n++] = *q;
		qsort(l->q, l->n, sizeof(*l->q), rq_cmp);
		delta++;
	}
	if (l && l->n == 0) {
		strmap_del(m, key, NULL);
		rqlist_free(l);
	}
	return delta;
}

static json_t *parse_cobj(const struct cobj *o)
{
	return json_loadb(o->json, o->json_len, 0, NULL);
}

/* What quota_pod_usage reads of a pod, as a tree built from those members' text alone: at a
 * restart the tracker takes in every pod of the partition, and parsing each whole pod cost as
 * much CPU as listing them. NULL when o's text is not of the plain form (then parse it all). */
static json_t *pod_usage_tree(const struct cobj *o)
{
	static const char *const paths[] = { "spec.containers", "spec.initContainers", "spec.activeDeadlineSeconds",
					     "status.phase" };
	static const char *const keys[] = { "containers", "initContainers", "activeDeadlineSeconds", "phase" };
	struct sv spans[4];
	if (cobj_text_paths(o, paths, 4, spans) < 0)
		return NULL;
	json_t *spec = json_object(), *status = json_object();
	for (size_t i = 0; i < 4; i++) {
		if (!spans[i].ptr)
			continue;
		json_t *v = json_loadb(spans[i].ptr, spans[i].len, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, NULL);
		if (!v) {
			json_decref(spec);
			json_decref(status);
			return NULL;
		}
		json_object_set_new(i < 3 ? spec : status, keys[i], v);
	}
	json_t *t = json_object();
	json_object_set_new(t, "spec", spec);
	json_object_set_new(t, "status", status);
	return t;
}

static void pod_record(const json_t *pod, struct podrec *ret)
{
	struct quota_pod qp;
	memset(ret, 0, sizeof(*ret));
	if (quota_pod_usage(pod, &qp) < 0)
		return;
	memcpy(ret->v, qp.v, sizeof(ret->v));
	ret->v[QR_PODS] *= 1000;
	ret->cls = qp.cls;
	ret->counted = qp.v[QR_PODS] > 0;
}

/* Applies one event of follow f (ADDED for listed objects). */
static void on_event(struct quota *qs, struct served *sv, enum wev_type type, struct cobj *o)
{
	int res = (int)sv->index;
	const char *tenant = o->tenant;
	char *nskey = o->ns && *o->ns ? xasprintf("%s/%s", o->tenant, o->ns) : NULL;
	if (res == qs->tenants_res) {
		/* the tenant quota; tenants are not counted */
		struct rq q;
		bool have = false;
		if (type != WEV_DELETED) {
			json_t *t = parse_cobj(o);
			have = t && rq_parse(qs, o->name, json_path(t, "spec.quota.hard"), NULL,
					     json_path(t, "status.quota"), &q) && q.nh > 0;
			if (t && !have && json_path(t, "spec.quota.hard") && json_is_object(json_path(t, "spec.quota.hard")))
				rq_release(&q);
			json_decref(t);
		}
		pthread_mutex_lock(&qs->mu);
		atomic_fetch_add(&qs->nquotas, rqlist_set(&qs->tquotas, o->name, o->name, have ? &q : NULL));
		if (have)
			strmap_put(&qs->tdirty, o->name, NULL);
		pthread_mutex_unlock(&qs->mu);
		free(nskey);
		return;
	}
	struct podrec pr;
	bool is_pod = res == qs->pods_res, parsed = false;
	if (is_pod && type == WEV_ADDED) {
		int64_t rv = 0;
		json_t *t = wcache_get_tree(sv->cache, o->key, &rv);
		if (!t || rv != o->rv) {
			json_decref(t);
			if (!(t = pod_usage_tree(o)))
				t = parse_cobj(o);
		}
		pod_record(t, &pr);
		parsed = true;
		json_decref(t);
	}
	struct rq q;
	bool have_rq = false;
	if (res == qs->rq_res && nskey && type != WEV_DELETED) {
		json_t *t = parse_cobj(o);
		have_rq = t && rq_parse(qs, o->name, json_path(t, "spec.hard"), json_path(t, "spec.scopes"),
					json_path(t, "status"), &q);
		json_decref(t);
	}
	pthread_mutex_lock(&qs->mu);
	if (type == WEV_ADDED) {
		void *rl = NULL;
		if (strmap_del(&qs->resv, o->key, &rl))
			resv_drop_list(qs, rl);
		struct strmap_ent *e = is_pod ? strmap_get(&qs->pods, o->key) : NULL;
		if (e) { /* already known (a relist races the watch): replace */
			apply(qs, nskey, tenant, res, e->val, -1, false);
			free(e->val);
			strmap_del(&qs->pods, o->key, NULL);
		}
		if (is_pod) {
			struct podrec *p = xmalloc(sizeof(*p));
			*p = pr;
			strmap_put(&qs->pods, o->key, NULL)->val = p;
		}
		apply(qs, nskey, tenant, res, parsed ? &pr : NULL, +1, false);
	} else if (type == WEV_DELETED) {
		void *pv = NULL;
		if (is_pod && strmap_del(&qs->pods, o->key, &pv)) {
			apply(qs, nskey, tenant, res, pv, -1, false);
			free(pv);
		} else if (!is_pod) {
			apply(qs, nskey, tenant, res, NULL, -1, false);
		}
	} else if (type == WEV_MODIFIED && is_pod && qs->phase_field >= 0 && (size_t)qs->phase_field < o->nfields) {
		const char *ph = o->fields[qs->phase_field];
		struct strmap_ent *e = strmap_get(&qs->pods, o->key);
		struct podrec *p = e ? e->val : NULL;
		if (p && p->counted && ph && (strcmp(ph, "Succeeded") == 0 || strcmp(ph, "Failed") == 0)) {
			apply(qs, nskey, tenant, res, p, -1, false);
			p->counted = false;
			apply(qs, nskey, tenant, res, p, +1, false);
		}
	}
	if (res == qs->rq_res && nskey) {
		atomic_fetch_add(&qs->nquotas, rqlist_set(&qs->quotas, nskey, o->name, have_rq ? &q : NULL));
		if (have_rq)
			strmap_put(&qs->dirty, nskey, NULL);
	}
	pthread_mutex_unlock(&qs->mu);
	free(nskey);
}

/* Forgets what follow f brought (before a relist). */
static void forget(struct quota *qs, struct served *sv)
{
	int res = (int)sv->index;
	pthread_mutex_lock(&qs->mu);
	struct strmap *maps[] = { &qs->ns, &qs->tenants };
	for (int m = 0; m < 2; m++) {
		size_t it;
		for (struct strmap_ent *e = strmap_next(maps[m], NULL, &it); e; e = strmap_next(maps[m], e, &it)) {
			struct usage *u = e->val;
			u->used.count[res] = 0;
			if (res == qs->pods_res)
				memset(u->used.pod, 0, sizeof(u->used.pod));
		}
	}
	if (res == qs->pods_res) {
		strmap_release(&qs->pods, podrec_free);
		strmap_init(&qs->pods);
	}
	if (res == qs->rq_res || res == qs->tenants_res) {
		struct strmap *m = res == qs->rq_res ? &qs->quotas : &qs->tquotas;
		size_t it;
		long n = 0;
		for (struct strmap_ent *e = strmap_next(m, NULL, &it); e; e = strmap_next(m, e, &it))
			n += (long)((struct rqlist *)e->val)->n;
		atomic_fetch_sub(&qs->nquotas, n);
		strmap_release(m, rqlist_free);
		strmap_init(m);
	}
	pthread_mutex_unlock(&qs->mu);
}

/* ---- the tracker: a follower of the counted kinds' caches (follow.c) ---------------------- */

static void track_event(void *ud, size_t i, enum wev_type type, struct cobj *o)
{
	struct quota *qs = ud;
	on_event(qs, qs->fsv[i], type, o);
}

static void track_reset(void *ud, size_t i)
{
	struct quota *qs = ud;
	forget(qs, qs->fsv[i]);
}

static void track_synced(void *ud)
{
	struct quota *qs = ud;
	pthread_mutex_lock(&qs->mu);
	qs->synced = true;
	pthread_cond_broadcast(&qs->synced_cv);
	pthread_mutex_unlock(&qs->mu);
}

/* ---- enforcement ----------------------------------------------------------------------- */

static long long amount(const struct amounts *a, const struct hard *h, struct quota_scopes sc)
{
	if (h->kind == QR_COUNT)
		return h->res < 0 ? 0 : a->count[h->res] * 1000;
	long long s = 0;
	for (unsigned c = 0; c < QCLASS_N; c++)
		if (quota_scopes_match(sc, c))
			s += a->pod[c][h->kind];
	return s;
}

static long long requested(const struct quota *qs, const struct hard *h, struct quota_scopes sc, int res,
			   const struct podrec *p)
{
	if (h->kind == QR_COUNT)
		return h->res == res ? 1000 : 0;
	if (res != qs->pods_res || !p->counted || !quota_scopes_match(sc, p->cls))
		return 0;
	return p->v[h->kind];
}

static bool quota_matches(const struct quota *qs, const struct rq *q, int res, const struct podrec *p)
{
	if (!quota_scopes_any(q->sc))
		return true;
	return res == qs->pods_res && quota_scopes_match(q->sc, p->cls);
}

/* "must specify a,b" for the cpu/memory keys of q a container of the pod leaves unset. */
static bool missing_message(const struct rq *q, unsigned missing, struct buf *out)
{
	const char *names[16];
	size_t n = 0;
	for (size_t i = 0; i < q->nh && n < 16; i++)
		if (quota_resource_is_quantity(q->h[i].kind) && (missing & (1u << q->h[i].kind)))
			names[n++] = q->h[i].name;
	if (!n)
		return false;
	for (size_t i = 1; i < n; i++) /* sorted (few) */
		for (size_t j = i; j > 0 && strcmp(names[j - 1], names[j]) > 0; j--) {
			const char *t = names[j];
			names[j] = names[j - 1];
			names[j - 1] = t;
		}
	buf_adds(out, "must specify ");
	for (size_t i = 0; i < n; i++)
		buf_addf(out, "%s%s", i ? "," : "", names[i]);
	return true;
}

/* Checks one quota against usage u; false with the message in msg. */
static bool check_one(const struct quota *qs, const struct rq *q, const struct usage *u, int res, const struct podrec *p,
		      const char *what, struct buf *msg)
{
	struct quota_item *items = xcalloc(q->nh + 1, sizeof(*items));
	size_t n = 0;
	for (size_t i = 0; i < q->nh; i++) {
		const struct hard *h = &q->h[i];
		long long req = requested(qs, h, q->sc, res, p);
		if (req == 0)
			continue;
		long long used = amount(&u->used, h, q->sc) + amount(&u->resv, h, q->sc);
		if (used + req <= h->milli)
			continue;
		bool quant = quota_resource_is_quantity(h->kind);
		items[n++] = (struct quota_item){ h->name, quant ? req : req / 1000, quant ? used : used / 1000,
						  quant ? h->milli : h->milli / 1000, quant, h->binary };
	}
	if (n)
		quota_exceeded_message(what, q->name, items, n, msg);
	free(items);
	return n == 0;
}

int admit_quota(struct req *q, json_t *obj, const json_t *old)
{
	struct quota *qs = q->s->quota;
	q->quota_resv = 0;
	if (old || !qs || atomic_load(&qs->nquotas) == 0 || q->res->r->scope == SCOPE_CLUSTER || !q->tenant ||
	    !*q->tenant)
		return 0;
	int res = (int)q->res->index;
	struct podrec pr = { 0 };
	struct quota_pod qp = { 0 };
	if (res == qs->pods_res) {
		pod_record(obj, &pr);
		quota_pod_usage(obj, &qp);
	}
	const char *name = json_path_str(obj, "metadata.name");
	char *nskey = q->ns ? xasprintf("%s/%s", q->tenant, q->ns) : NULL;
	struct buf msg = BUF_INIT;
	int rc = 0;
	pthread_mutex_lock(&qs->mu);
	if (!qs->synced) {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += 10;
		while (!qs->synced && pthread_cond_timedwait(&qs->synced_cv, &qs->mu, &ts) == 0)
			;
		if (!qs->synced) {
			pthread_mutex_unlock(&qs->mu);
			free(nskey);
			reply_status(q, E_UNAVAILABLE, "quota usage is not known yet; please retry");
			return -1;
		}
	}
	struct strmap_ent *le = nskey ? strmap_get(&qs->quotas, nskey) : NULL;
	struct strmap_ent *te = strmap_get(&qs->tquotas, q->tenant);
	if (!le && !te)
		goto out;
	struct rqlist *lists[2] = { le ? le->val : NULL, te ? te->val : NULL };
	struct usage *us[2] = { nskey && le ? usage_get(qs, &qs->ns, nskey) : NULL, usage_get(qs, &qs->tenants, q->tenant) };
	static const char *const failed[2] = { "failed quota", "failed tenant quota" };
	static const char *const exceeded[2] = { "exceeded quota", "exceeded tenant quota" };
	/* constraints first (a pod must set what a quota tracks), then usage */
	for (int l = 0; l < 2 && rc == 0; l++)
		for (size_t i = 0; lists[l] && i < lists[l]->n && rc == 0; i++) {
			const struct rq *rq = &lists[l]->q[i];
			if (res != qs->pods_res || !quota_matches(qs, rq, res, &pr))
				continue;
			struct buf m = BUF_INIT;
			if (missing_message(rq, qp.missing, &m)) {
				buf_addf(&msg, "%s: %s: %s", failed[l], rq->name, buf_cstr(&m));
				rc = -1;
			}
			buf_release(&m);
		}
	for (int l = 0; l < 2 && rc == 0; l++)
		for (size_t i = 0; lists[l] && i < lists[l]->n && rc == 0; i++) {
			const struct rq *rq = &lists[l]->q[i];
			if (quota_matches(qs, rq, res, &pr) && !check_one(qs, rq, us[l], res, &pr, exceeded[l], &msg))
				rc = -1;
		}
	if (rc == 0) {
		char *key = store_key(q->res, q->tenant, q->ns, name);
		struct resv *r = xcalloc(1, sizeof(*r));
		r->id = ++qs->next_id;
		r->nskey = nskey ? xstrdup(nskey) : NULL;
		r->tenant = xstrdup(q->tenant);
		r->res = res;
		r->pod = pr;
		r->born_ms = mono_ms();
		struct strmap_ent *e = strmap_put(&qs->resv, key, NULL);
		r->next = e->val;
		e->val = r;
		apply(qs, r->nskey, r->tenant, res, res == qs->pods_res ? &pr : NULL, +1, true);
		q->quota_resv = r->id;
		free(key);
	}
out:
	pthread_mutex_unlock(&qs->mu);
	if (rc < 0)
		reply_status_details(q, E_FORBIDDEN, name, NULL, "%s \"%s\" is forbidden: %s", q->res->r->plural,
				     name ? name : "", buf_cstr(&msg));
	buf_release(&msg);
	free(nskey);
	return rc;
}

void quota_release(struct req *q, const json_t *obj)
{
	struct quota *qs = q->s->quota;
	if (!qs || !q->quota_resv)
		return;
	char *key = store_key(q->res, q->tenant, q->ns, json_path_str(obj, "metadata.name"));
	pthread_mutex_lock(&qs->mu);
	struct strmap_ent *e = strmap_get(&qs->resv, key);
	for (struct resv **pp = e ? (struct resv **)&e->val : NULL; pp && *pp; pp = &(*pp)->next)
		if ((*pp)->id == q->quota_resv) {
			struct resv *r = *pp;
			*pp = r->next;
			r->next = NULL;
			resv_drop_list(qs, r);
			break;
		}
	if (e && !e->val)
		strmap_del(&qs->resv, key, NULL);
	pthread_mutex_unlock(&qs->mu);
	q->quota_resv = 0;
	free(key);
}

int admit_limitrange(struct req *q, json_t *obj, const json_t *old)
{
	if (old || !q->ns || strcmp(q->res->r->plural, "pods") != 0 || q->res->r->group[0])
		return 0;
	struct served *lr = served_by_plural(q->s, "limitranges");
	if (!lr || !lr->cache)
		return 0;
	struct wfilter f = { .tenant = q->tenant, .ns = q->ns };
	struct cobj **objs = NULL;
	size_t n = 0;
	int64_t rv;
	if (wcache_list(lr->cache, &f, &objs, &n, &rv) < 0 || n == 0) {
		free(objs);
		return 0;
	}
	struct buf err = BUF_INIT;
	int rc = 0;
	for (size_t i = 0; i < n; i++) {
		json_t *l = parse_cobj(objs[i]);
		if (l && rc == 0 && limitrange_admit_pod(json_object_get(l, "spec"), obj, &err) < 0)
			rc = -1;
		json_decref(l);
		cobj_unref(objs[i]);
	}
	free(objs);
	if (rc < 0) {
		const char *name = json_path_str(obj, "metadata.name");
		reply_status_details(q, E_FORBIDDEN, name, NULL, "pods \"%s\" is forbidden: %s", name ? name : "",
				     buf_cstr(&err));
	}
	buf_release(&err);
	return rc;
}

/* ---- status -------------------------------------------------------------------------- */

/* {hard, used} of quota q under usage u (used part only: what the watch has shown). */
static json_t *status_of(const struct rq *q, const struct usage *u)
{
	json_t *hard = json_object(), *used = json_object();
	for (size_t i = 0; i < q->nh; i++) {
		const struct hard *h = &q->h[i];
		json_object_set(hard, h->name, h->value);
		long long v = u ? amount(&u->used, h, q->sc) : 0;
		struct buf b = BUF_INIT;
		if (quota_resource_is_quantity(h->kind))
			quantity_format_milli(v, h->binary, &b);
		else
			buf_addf(&b, "%lld", v / 1000);
		json_object_set_new(used, h->name, json_string(buf_cstr(&b)));
		buf_release(&b);
	}
	return json_pack("{s:o,s:o}", "hard", hard, "used", used);
}

struct status_write {
	bool tenant;
	json_t *status;
};

static int mutate_quota_status(struct req *q, const json_t *cur, void *ud, json_t **ret_new)
{
	(void)q;
	struct status_write *w = ud;
	json_t *obj = json_copy((json_t *)cur);
	if (w->tenant) {
		json_t *st = json_copy(json_object_get(cur, "status"));
		if (!json_is_object(st)) {
			json_decref(st);
			st = json_object();
		}
		json_object_set(st, "quota", w->status);
		json_object_set_new(obj, "status", st);
	} else {
		json_object_set(obj, "status", w->status);
	}
	*ret_new = obj;
	return 0;
}

struct pending {
	char *tenant, *ns, *name;
	json_t *status;
};

/* Collects the statuses that differ from the stored ones among the dirty quotas. */
static void collect(struct quota *qs, struct strmap *dirty, struct strmap *lists, struct strmap *usages, bool tenant,
		    struct pending **p, size_t *n)
{
	size_t it;
	for (struct strmap_ent *d = strmap_next(dirty, NULL, &it); d; d = strmap_next(dirty, d, &it)) {
		struct strmap_ent *le = strmap_get(lists, d->key), *ue = strmap_get(usages, d->key);
		struct rqlist *l = le ? le->val : NULL;
		for (size_t i = 0; l && i < l->n; i++) {
			json_t *st = status_of(&l->q[i], ue ? ue->val : NULL);
			char *dump = json_dumps(st, JSON_COMPACT | JSON_SORT_KEYS);
			if (dump && strcmp(dump, l->q[i].status) != 0) {
				*p = xrealloc(*p, (*n + 1) * sizeof(**p));
				struct pending *w = &(*p)[(*n)++];
				const char *slash = strchr(d->key, '/');
				w->tenant = tenant ? xstrdup("") : xstrndup(d->key, (size_t)(slash - d->key));
				w->ns = tenant ? NULL : xstrdup(slash + 1);
				w->name = xstrdup(l->q[i].name);
				w->status = json_incref(st);
			}
			free(dump);
			json_decref(st);
		}
	}
	strmap_release(dirty, NULL);
	strmap_init(dirty);
	(void)qs;
}

static void expire_reservations(struct quota *qs)
{
	int64_t now = mono_ms();
	size_t it;
	struct strmap_ent *e = strmap_next(&qs->resv, NULL, &it);
	char **gone = NULL;
	size_t ngone = 0;
	for (; e; e = strmap_next(&qs->resv, e, &it)) {
		struct resv **pp = (struct resv **)&e->val;
		while (*pp) {
			if (now - (*pp)->born_ms > RESV_TTL_MS) {
				struct resv *r = *pp;
				*pp = r->next;
				r->next = NULL;
				resv_drop_list(qs, r);
			} else {
				pp = &(*pp)->next;
			}
		}
		if (!e->val) {
			gone = xrealloc(gone, (ngone + 1) * sizeof(*gone));
			gone[ngone++] = xstrdup(e->key);
		}
	}
	for (size_t i = 0; i < ngone; i++) {
		strmap_del(&qs->resv, gone[i], NULL);
		free(gone[i]);
	}
	free(gone);
}

static void *writer_main(void *arg)
{
	struct quota *qs = arg;
	while (!atomic_load(&qs->stop)) {
		struct timespec ts = { 0, STATUS_PERIOD_MS * 1000 * 1000 };
		nanosleep(&ts, NULL);
		struct pending *p = NULL;
		size_t n = 0;
		pthread_mutex_lock(&qs->mu);
		if (qs->synced) {
			collect(qs, &qs->dirty, &qs->quotas, &qs->ns, false, &p, &n);
			collect(qs, &qs->tdirty, &qs->tquotas, &qs->tenants, true, &p, &n);
			expire_reservations(qs);
		}
		pthread_mutex_unlock(&qs->mu);
		for (size_t i = 0; i < n; i++) {
			if (!atomic_load(&qs->stop)) {
				bool tenant = p[i].ns == NULL;
				struct req q = { .s = qs->s, .verb = "update" };
				q.res = &qs->s->res[tenant ? qs->tenants_res : qs->rq_res];
				q.tenant = p[i].tenant;
				q.ns = p[i].ns;
				struct status_write w = { tenant, p[i].status };
				do_update(&q, p[i].name, UPDATE_STATUS, mutate_quota_status, &w, false, NULL);
				if (q.replied_code >= 300 && q.replied_code != 404) {
					/* try again on the next round */
					pthread_mutex_lock(&qs->mu);
					if (tenant)
						strmap_put(&qs->tdirty, p[i].name, NULL);
					else {
						char *k = xasprintf("%s/%s", p[i].tenant, p[i].ns);
						strmap_put(&qs->dirty, k, NULL);
						free(k);
					}
					pthread_mutex_unlock(&qs->mu);
				}
			}
			free(p[i].tenant);
			free(p[i].ns);
			free(p[i].name);
			json_decref(p[i].status);
		}
		free(p);
	}
	return NULL;
}

/* ---- start and stop -------------------------------------------------------------------- */

struct quota *quota_start(struct apiserver *s)
{
	struct served *rq = served_by_plural(s, "resourcequotas");
	struct served *pods = served_by_plural(s, "pods");
	if (!rq || !pods || !rq->cache)
		return NULL;
	struct quota *qs = xcalloc(1, sizeof(*qs));
	qs->s = s;
	pthread_mutex_init(&qs->mu, NULL);
	pthread_cond_init(&qs->synced_cv, NULL);
	strmap_init(&qs->ns);
	strmap_init(&qs->tenants);
	strmap_init(&qs->pods);
	strmap_init(&qs->quotas);
	strmap_init(&qs->tquotas);
	strmap_init(&qs->resv);
	strmap_init(&qs->dirty);
	strmap_init(&qs->tdirty);
	qs->pods_res = (int)pods->index;
	qs->rq_res = (int)rq->index;
	struct served *t = served_by_plural(s, "tenants");
	qs->tenants_res = t && t->cache ? (int)t->index : -1;
	qs->phase_field = -1;
	for (size_t i = 0; i < pods->r->strategy->nfields; i++)
		if (strcmp(pods->r->strategy->fields[i].path, "status.phase") == 0)
			qs->phase_field = (int)i;
	qs->fsv = xcalloc(s->nres, sizeof(*qs->fsv));
	for (size_t i = 0; i < s->nres; i++) {
		struct served *sv = &s->res[i];
		if (!sv->cache || sv->r->heartbeat || (sv->r->scope == SCOPE_CLUSTER && (int)i != qs->tenants_res))
			continue;
		qs->fsv[qs->nf++] = sv;
	}
	static const struct follower_ops ops = { track_event, track_reset, NULL, track_synced };
	if (!(qs->tracker = follower_start(qs->fsv, qs->nf, &ops, qs)) ||
	    pthread_create(&qs->writer, NULL, writer_main, qs) != 0)
		abort();
	qs->threads = true;
	return qs;
}

void quota_stop(struct quota *qs)
{
	if (!qs)
		return;
	atomic_store(&qs->stop, true);
	follower_stop(qs->tracker);
	if (qs->threads)
		pthread_join(qs->writer, NULL);
	free(qs->fsv);
	size_t it;
	for (struct strmap_ent *e = strmap_next(&qs->resv, NULL, &it); e; e = strmap_next(&qs->resv, e, &it)) {
		struct resv *r = e->val;
		while (r) {
			struct resv *next = r->next;
			free(r->nskey);
			free(r->tenant);
			free(r);
			r = next;
		}
	}
	strmap_release(&qs->resv, NULL);
	strmap_release(&qs->ns, usage_free);
	strmap_release(&qs->tenants, usage_free);
	strmap_release(&qs->pods, podrec_free);
	strmap_release(&qs->quotas, rqlist_free);
	strmap_release(&qs->tquotas, rqlist_free);
	strmap_release(&qs->dirty, NULL);
	strmap_release(&qs->tdirty, NULL);
	pthread_mutex_destroy(&qs->mu);
	pthread_cond_destroy(&qs->synced_cv);
	free(qs);
}
