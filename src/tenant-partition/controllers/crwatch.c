/* The garbage collector's informers over custom resources: custom resources are served per
 * tenant, so there is one informer per (tenant, CRD kind the tenant sees), started and stopped
 * by the GC key TPC_CRWATCH_KEY whenever a CRD or tenant changes. Events queue GC keys: the
 * owners a custom resource names, and the custom resource itself when it is being deleted or
 * gone (so its dependents are found). */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include "tpc.h"
#include "ursa/errors.h"
#include "ursa/jsonutil.h"
#include "ursa/log.h"
#include "ursa/xalloc.h"

struct crw_ent {
	char *id;   /* "<collection path> <kind>" */
	char *tenant;
	struct tpc_crd_kind k;
	char *gckind; /* "Kind.group" */
	struct tpc *m;
	struct informer *inf;
};

struct crwatch {
	pthread_mutex_t mu; /* guards v/n and every use of an informer in them */
	struct crw_ent **v;
	size_t n;
	bool rescanned; /* the dependents the informers held before the first build were looked at */
};

static void ent_free(struct crw_ent *e)
{
	if (!e)
		return;
	informer_stop(e->inf);
	free(e->id);
	free(e->tenant);
	tpc_crd_kind_release(&e->k);
	free(e->gckind);
	free(e);
}

static void cr_event(struct crw_ent *e, const json_t *obj, bool gone)
{
	tpc_gc_enqueue_owners(e->m, obj);
	if (gone || json_path(obj, "metadata.deletionTimestamp"))
		tpc_gc_enqueue_self(e->m, obj, e->gckind);
}

static void on_add(void *ud, const json_t *obj)
{
	cr_event(ud, obj, false);
}

static void on_update(void *ud, const json_t *old_obj, const json_t *new_obj)
{
	(void)old_obj;
	cr_event(ud, new_obj, false);
}

static void on_delete(void *ud, const json_t *obj)
{
	cr_event(ud, obj, true);
}

static const struct informer_handlers handlers = { on_add, on_update, on_delete, NULL, NULL };

struct want {
	json_t *crds;  /* every CRD */
	json_t *tenants; /* names */
};

static void add_crd(void *ud, const json_t *o)
{
	json_array_append(((struct want *)ud)->crds, (json_t *)o);
}

static void add_tenant(void *ud, const json_t *o)
{
	const char *n = json_path_str(o, "metadata.name");
	if (n && strcmp(n, "system") != 0)
		json_array_append_new(((struct want *)ud)->tenants, json_string(n));
}

static char *ent_id(const struct tpc_crd_kind *k, const char *tenant)
{
	struct buf b = BUF_INIT;
	tpc_crd_path(&b, k, tenant, NULL, NULL);
	buf_addf(&b, " %s", k->kind);
	return buf_detach(&b, NULL);
}

/* Objects naming an owner of a group with a dot (a custom resource's, mostly). */
static void with_cr_owner(void *ud, const json_t *o)
{
	size_t i;
	json_t *r;
	json_array_foreach(json_path(o, "metadata.ownerReferences"), i, r) {
		const char *av = json_str(r, "apiVersion"), *slash = av ? strchr(av, '/') : NULL;
		const char *dot = av ? strchr(av, '.') : NULL;
		if (slash && dot && dot < slash) {
			json_array_append(ud, (json_t *)o);
			return;
		}
	}
}

/* Before the first build no custom resource owner was known: the dependents the shared
 * informers already hold queue their owners now (a memory scan, once). */
static void rescan(struct tpc *m)
{
	static const enum tpc_inf infs[] = { INF_PODS, INF_RS, INF_JOBS };
	json_t *objs = json_array();
	for (size_t i = 0; i < ARRAY_SIZE(infs); i++) {
		struct informer *inf = tpc_informer(m, infs[i]);
		if (inf)
			informer_foreach(inf, with_cr_owner, objs);
	}
	size_t i;
	json_t *o;
	json_array_foreach(objs, i, o) tpc_gc_enqueue_owners(m, o);
	json_decref(objs);
}

int tpc_crwatch_sync(struct tpc *m)
{
	struct informer *ci = tpc_informer(m, INF_CRDS), *ti = tpc_informer(m, INF_TENANTS);
	if (!ci || !ti)
		return 0;
	if (!informer_synced(ci) || !informer_synced(ti)) {
		wq_add_after(m->wq[CTL_GC], TPC_CRWATCH_KEY, 1000);
		return 0;
	}
	if (!m->crw) {
		m->crw = xcalloc(1, sizeof(*m->crw));
		pthread_mutex_init(&m->crw->mu, NULL);
	}
	struct crwatch *w = m->crw;
	struct want want = { json_array(), json_pack("[s]", "system") };
	informer_foreach(ci, add_crd, &want);
	informer_foreach(ti, add_tenant, &want);
	/* what should be watched */
	struct crw_ent **neu = NULL;
	size_t nneu = 0;
	size_t i;
	json_t *tn;
	json_array_foreach(want.tenants, i, tn) {
		const char *t = json_string_value(tn);
		struct tpc_crd_kinds ks;
		tpc_crd_kinds_of(want.crds, t, &ks);
		for (size_t j = 0; j < ks.n; j++) {
			char *gk = xasprintf("%s.%s", ks.v[j].kind, ks.v[j].group);
			struct crw_ent *e = xcalloc(1, sizeof(*e));
			*e = (struct crw_ent){ .id = ent_id(&ks.v[j], t), .tenant = xstrdup(t), .k = ks.v[j], .gckind = gk,
					       .m = m };
			memset(&ks.v[j], 0, sizeof(ks.v[j]));
			neu = xrealloc(neu, (nneu + 1) * sizeof(*neu));
			neu[nneu++] = e;
		}
		tpc_crd_kinds_release(&ks);
	}
	json_decref(want.crds);
	json_decref(want.tenants);
	/* keep the informers already running (matched under the lock: lookups never miss them),
	 * stop the dropped ones and start the new ones outside it */
	pthread_mutex_lock(&w->mu);
	struct crw_ent **old = w->v;
	size_t nold = w->n;
	w->v = NULL;
	w->n = 0;
	for (size_t a = 0; a < nneu; a++) {
		for (size_t b = 0; b < nold; b++) {
			if (old[b] && strcmp(old[b]->id, neu[a]->id) == 0) {
				ent_free(neu[a]);
				neu[a] = old[b];
				old[b] = NULL;
				w->v = xrealloc(w->v, (w->n + 1) * sizeof(*w->v));
				w->v[w->n++] = neu[a];
				break;
			}
		}
	}
	pthread_mutex_unlock(&w->mu);
	size_t stopped = 0, started = 0;
	for (size_t b = 0; b < nold; b++)
		if (old[b]) {
			stopped++;
			ent_free(old[b]);
		}
	free(old);
	for (size_t a = 0; a < nneu; a++) {
		if (neu[a]->inf)
			continue;
		struct buf p = BUF_INIT;
		tpc_crd_path(&p, &neu[a]->k, neu[a]->tenant, NULL, NULL);
		neu[a]->inf = informer_start(m->rest, p.ptr, NULL, &handlers, neu[a]);
		buf_release(&p);
		pthread_mutex_lock(&w->mu);
		w->v = xrealloc(w->v, (w->n + 1) * sizeof(*w->v));
		w->v[w->n++] = neu[a];
		pthread_mutex_unlock(&w->mu);
		started++;
	}
	free(neu);
	if (!w->rescanned) {
		w->rescanned = true;
		rescan(m);
	}
	if (started || stopped)
		log_info("custom resource informers", "started=%zu stopped=%zu running=%zu", started, stopped, w->n);
	return 0;
}

void tpc_crwatch_stop(struct tpc *m)
{
	struct crwatch *w = m->crw;
	if (!w)
		return;
	for (size_t i = 0; i < w->n; i++)
		ent_free(w->v[i]);
	free(w->v);
	pthread_mutex_destroy(&w->mu);
	free(w);
	m->crw = NULL;
}

int tpc_crwatch_owner(struct tpc *m, const char *tenant, const char *group, const char *kind, const char *dep_ns,
		      const char *name, json_t **ret_obj, bool *ret_namespaced)
{
	*ret_obj = NULL;
	*ret_namespaced = false;
	struct crwatch *w = m->crw;
	if (!w || !tenant || !group || !kind || !name)
		return 0;
	int rc = 0;
	pthread_mutex_lock(&w->mu);
	for (size_t i = 0; i < w->n; i++) {
		struct crw_ent *e = w->v[i];
		if (strcmp(e->tenant, tenant) != 0 || strcmp(e->k.group, group) != 0 || strcmp(e->k.kind, kind) != 0)
			continue;
		*ret_namespaced = e->k.namespaced;
		if (!informer_synced(e->inf)) {
			rc = -1;
			break;
		}
		if (e->k.namespaced && !dep_ns)
			break; /* a cluster-scoped dependent cannot have a namespaced owner */
		char *key = xasprintf("%s/%s/%s", tenant, e->k.namespaced ? dep_ns : "", name);
		*ret_obj = informer_get(e->inf, key);
		free(key);
		rc = 1;
		break;
	}
	pthread_mutex_unlock(&w->mu);
	return rc;
}

struct each {
	const struct tpc_crd_kind *k;
	const char *tenant;
	void (*fn)(void *ud, const struct tpc_crd_kind *k, const char *tenant, const json_t *obj);
	void *ud;
};

static void each_obj(void *ud, const json_t *obj)
{
	struct each *c = ud;
	c->fn(c->ud, c->k, c->tenant, obj);
}

bool tpc_crwatch_foreach(struct tpc *m, const char *tenant, const char *ns,
			 void (*fn)(void *ud, const struct tpc_crd_kind *k, const char *tenant, const json_t *obj),
			 void *ud)
{
	struct crwatch *w = m->crw;
	if (!w)
		return false;
	bool all = true;
	pthread_mutex_lock(&w->mu);
	for (size_t i = 0; i < w->n; i++) {
		struct crw_ent *e = w->v[i];
		if (strcmp(e->tenant, tenant) != 0)
			continue;
		if (!informer_synced(e->inf)) {
			all = false;
			continue;
		}
		struct each c = { &e->k, e->tenant, fn, ud };
		if (!*ns)
			informer_foreach(e->inf, each_obj, &c);
		else if (e->k.namespaced)
			informer_foreach_ns(e->inf, tenant, ns, each_obj, &c);
	}
	pthread_mutex_unlock(&w->mu);
	return all;
}
