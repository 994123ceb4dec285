/* Custom resources: the registry of what each tenant's CustomResourceDefinitions serve.
 *
 * A follower thread reads the server's customresourcedefinitions cache. For each CRD of each
 * tenant it keeps the parsed definition (ursa/crd.h), decides whether its names are accepted
 * (within a tenant and group the older CRD keeps a contested name), and for an accepted one
 * builds a struct served per served version: a struct api_resource made at run time, whose
 * strategy holds only its printer columns and selectable fields, and whose watch cache (one per
 * CRD, shared by its versions) holds that tenant's objects at
 * /registry/customresources/<group>/<plural>/<tenant>/. One etcd watch over
 * /registry/customresources/ feeds every such cache (wcache_mux): a CRD costs no thread and no
 * connection of its own.
 * The system tenant's CRDs serve every tenant without one of the same name; their cache holds
 * every tenant's objects of that kind. Each CRD's status (acceptedNames, NamesAccepted,
 * Established) is written here, by every API server of the partition alike (equal statuses are
 * not written again).
 *
 * Requests take a reference on the served entry they use (served_ref), so a CRD changed or
 * deleted meanwhile frees its entries, and at last its cache, when the last request or watch on
 * them ends. */
#include "internal.h"
#include "ursa/crd.h"
#include "ursa/jsonutil.h"
#include "ursa/log.h"
#include "ursa/schema.h"
#include "ursa/strmap.h"
#include "ursa/timeutil.h"
#include "ursa/xalloc.h"
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CRD_PLURAL "customresourcedefinitions"
#define CATCH_UP_MS 2000
#define STATUS_RETRIES 5

/* A parsed definition shared by the entries built from it. */
struct crdef {
	atomic_int refs;
	struct crd_def *def;
};

/* One CRD's watch cache, shared by its versions' entries (and their successors while the
 * CRD's scope and selectable fields stay the same). */
struct crcache {
	atomic_int refs;
	struct wcache *c;
	struct crdef *d;
	struct api_resource r;
	struct api_strategy st;
	struct api_field *fields;
	size_t nfields;
	char *watch_prefix;
};

/* A served entry of a custom resource; sv first, so a struct served * is one of these. */
struct crserved {
	struct served sv;
	struct api_resource r;
	struct api_strategy st;
	struct api_column *cols;
	size_t ncols;
	struct crdef *d;
	struct crcache *cc;
};

/* One CRD of one tenant, as the registry knows it. */
struct entry {
	char *tenant, *name;
	json_t *obj;          /* the CRD as last seen */
	char *created;        /* its metadata.creationTimestamp */
	struct crdef *d;      /* NULL: it does not parse (never served) */
	struct crcache *cc;
	struct served **sv;   /* the registry's references, one per served version */
	size_t nsv;
	bool accepted;
	bool changed;         /* decide_names: the decision differs from the last one */
	char *conflict;       /* why not accepted (NamesAccepted=False), or NULL */
	uint64_t seen;        /* the follower epoch that last delivered it */
};

struct tlist {
	struct entry **e;
	size_t n;
	uint64_t gen;
};

struct crds {
	struct apiserver *s;
	struct served *crdsv;
	struct follower *f;
	pthread_rwlock_t lock;
	struct strmap tenants; /* tenant -> struct tlist * */
	uint64_t counter;      /* under lock: the last generation handed out */
	uint64_t epoch;        /* follower thread only */
	struct wcache_mux *mux;/* feeds every CRD's cache */
};

/* ---- references ---- */

static struct crdef *crdef_ref(struct crdef *d)
{
	if (d)
		atomic_fetch_add(&d->refs, 1);
	return d;
}

static void crdef_unref(struct crdef *d)
{
	if (!d || atomic_fetch_sub(&d->refs, 1) != 1)
		return;
	crd_def_free(d->def);
	free(d);
}

static struct crcache *crcache_ref(struct crcache *c)
{
	atomic_fetch_add(&c->refs, 1);
	return c;
}

static void crcache_unref(struct crcache *c)
{
	if (!c || atomic_fetch_sub(&c->refs, 1) != 1)
		return;
	wcache_free(c->c);
	crdef_unref(c->d);
	free(c->fields);
	free(c->watch_prefix);
	free(c);
}

struct served *served_ref(struct served *sv)
{
	if (sv && sv->dynamic)
		atomic_fetch_add(&sv->refs, 1);
	return sv;
}

void served_unref(struct served *sv)
{
	if (!sv || !sv->dynamic || atomic_fetch_sub(&sv->refs, 1) != 1)
		return;
	struct crserved *cs = (struct crserved *)sv;
	crcache_unref(cs->cc);
	crdef_unref(cs->d);
	free(cs->cols);
	free(sv->prefix);
	free(cs);
}

/* ---- building entries ---- */

static const struct crd_version *storage_of(const struct crd_def *d)
{
	const struct crd_version *v = crd_def_storage(d);
	return v ? v : &d->versions[0];
}

/* Selectable fields of every version, each label once. */
static void union_fields(const struct crd_def *d, struct api_field **ret, size_t *ret_n)
{
	size_t cap = 0, n = 0;
	for (size_t i = 0; i < d->nversions; i++)
		cap += d->versions[i].nselectable;
	struct api_field *f = cap ? xcalloc(cap, sizeof(*f)) : NULL;
	for (size_t i = 0; i < d->nversions; i++)
		for (size_t k = 0; k < d->versions[i].nselectable; k++) {
			const char *p = d->versions[i].selectable[k];
			bool dup = false;
			for (size_t j = 0; j < n && !dup; j++)
				dup = strcmp(f[j].label, p) == 0;
			if (!dup)
				f[n++] = (struct api_field){ .label = p, .path = p };
		}
	*ret = f;
	*ret_n = n;
}

static bool same_fields(const struct crcache *c, const struct api_field *f, size_t n)
{
	if (c->nfields != n)
		return false;
	for (size_t i = 0; i < n; i++)
		if (strcmp(c->fields[i].label, f[i].label) != 0)
			return false;
	return true;
}

static void fill_resource(struct api_resource *r, const struct crd_def *d, const struct crd_version *v)
{
	r->group = d->group;
	r->version = v->name;
	r->plural = d->plural;
	r->singular = d->singular;
	r->kind = d->kind;
	r->scope = d->scope;
	for (size_t i = 0; i < 3 && i < d->nshort; i++)
		r->short_names[i] = d->short_names[i];
	r->subresources = (v->status ? SUB_STATUS : 0) | (v->scale ? SUB_SCALE : 0);
	r->has_spec_generation = true;
	r->crd = d;
	r->crd_version = v;
}

/* Every custom resource of the partition lives under one prefix, so that one etcd watch (the
 * registry's wcache_mux) feeds every CRD's cache. */
static char *mux_prefix(struct apiserver *s)
{
	return xasprintf("%s/" CR_KEY_SEGMENT "/", s->o.etcd_prefix);
}

static char *data_prefix(struct apiserver *s, const struct crd_def *d)
{
	return xasprintf("%s/" CR_KEY_SEGMENT "/%s/%s/", s->o.etcd_prefix, d->group, d->plural);
}

static struct crcache *crcache_new(struct apiserver *s, struct wcache_mux *mux, struct crdef *cd, const char *tenant)
{
	struct crcache *c = xcalloc(1, sizeof(*c));
	atomic_init(&c->refs, 1);
	c->d = crdef_ref(cd);
	fill_resource(&c->r, cd->def, storage_of(cd->def));
	union_fields(cd->def, &c->fields, &c->nfields);
	c->st.fields = c->fields;
	c->st.nfields = c->nfields;
	c->r.strategy = &c->st;
	char *prefix = data_prefix(s, cd->def);
	/* the system tenant's kinds serve every tenant: its cache holds them all */
	c->watch_prefix = strcmp(tenant, TENANT_SYSTEM) == 0 ? xstrdup(prefix) : xasprintf("%s%s/", prefix, tenant);
	struct wcache_options wo = { .key_prefix = prefix, .watch_prefix = c->watch_prefix, .history_min = 64,
				     .tree_budget = (size_t)s->o.cache_trees_mb << 16 };
	c->c = wcache_new_muxed(mux, &c->r, &wo);
	free(prefix);
	return c;
}

static struct served *crserved_new(struct apiserver *s, struct crdef *cd, const struct crd_version *v,
				   struct crcache *cc)
{
	struct crserved *cs = xcalloc(1, sizeof(*cs));
	const struct crd_def *d = cd->def;
	cs->d = crdef_ref(cd);
	cs->cc = crcache_ref(cc);
	fill_resource(&cs->r, d, v);
	/* Table columns: Name, then the version's printer columns, or Age when it has none */
	cs->ncols = 1 + (v->ncolumns ? v->ncolumns : 1);
	cs->cols = xcalloc(cs->ncols, sizeof(*cs->cols));
	cs->cols[0] = (struct api_column){ "Name", "string", "name", "Name must be unique within a namespace.", 0 };
	if (!v->ncolumns)
		cs->cols[1] = (struct api_column){ "Age", "date", "", "CreationTimestamp of the resource.", 0 };
	for (size_t i = 0; i < v->ncolumns; i++) {
		const struct crd_column *c = &v->columns[i];
		cs->cols[1 + i] = (struct api_column){ c->name, c->type, c->format ? c->format : "",
						       c->description ? c->description : "", c->priority };
	}
	cs->st.columns = cs->cols;
	cs->st.ncolumns = cs->ncols;
	cs->st.fields = cc->fields; /* the cache computes these for its objects */
	cs->st.nfields = cc->nfields;
	cs->r.strategy = &cs->st;
	cs->sv.r = &cs->r;
	cs->sv.prefix = data_prefix(s, d);
	cs->sv.cache = cc->c;
	cs->sv.index = (unsigned)s->nres;
	cs->sv.dynamic = true;
	cs->sv.crd_priv = cs;
	atomic_init(&cs->sv.refs, 1);
	atomic_init(&cs->sv.written_rev, 0);
	return &cs->sv;
}

/* A CRD no longer served (deleted, or its names no longer accepted): its watches end, as
 * Kubernetes ends them; requests still holding its entries finish on the cache. */
static void crcache_retire(struct crcache *c)
{
	if (!c)
		return;
	wcache_end_watchers(c->c);
	crcache_unref(c);
}

static void entry_unserve(struct entry *e)
{
	for (size_t i = 0; i < e->nsv; i++)
		served_unref(e->sv[i]);
	free(e->sv);
	e->sv = NULL;
	e->nsv = 0;
}

/* (Re)builds e's served entries from its definition (e->accepted decided). */
static void entry_serve(struct crds *cr, struct entry *e)
{
	entry_unserve(e);
	if (!e->d || !e->accepted) {
		crcache_retire(e->cc);
		e->cc = NULL;
		return;
	}
	const struct crd_def *d = e->d->def;
	struct api_field *f;
	size_t nf;
	union_fields(d, &f, &nf);
	bool reuse = e->cc && e->cc->r.scope == d->scope && same_fields(e->cc, f, nf) &&
		     strcmp(e->cc->r.group, d->group) == 0 && strcmp(e->cc->r.plural, d->plural) == 0;
	free(f);
	if (!reuse) {
		crcache_unref(e->cc);
		e->cc = crcache_new(cr->s, cr->mux, e->d, e->tenant);
	}
	e->sv = xcalloc(d->nversions ? d->nversions : 1, sizeof(*e->sv));
	for (size_t i = 0; i < d->nversions; i++)
		if (d->versions[i].served)
			e->sv[e->nsv++] = crserved_new(cr->s, e->d, &d->versions[i], e->cc);
}

static void entry_free(struct entry *e)
{
	entry_unserve(e);
	crcache_retire(e->cc);
	crdef_unref(e->d);
	json_decref(e->obj);
	free(e->created);
	free(e->conflict);
	free(e->tenant);
	free(e->name);
	free(e);
}

/* ---- names: who keeps a contested one ---- */

static const char *group_of(const struct entry *e)
{
	return e->d ? e->d->def->group : "";
}

/* By group, then age (a contested name stays with the CRD that had it first), then name. */
static int by_group_age(const void *pa, const void *pb)
{
	const struct entry *a = *(struct entry *const *)pa, *b = *(struct entry *const *)pb;
	int c = strcmp(group_of(a), group_of(b));
	if (!c)
		c = strcmp(a->created ? a->created : "", b->created ? b->created : "");
	return c ? c : strcmp(a->name, b->name);
}

/* The first of d's names (plural, singular, short names, kind, list kind) that taken holds, or
 * NULL; with add, d's names are put into taken. Kinds share the map: a kind is CamelCase, the
 * others lower case, so they never meet. */
static const char *names_taken(const struct crd_def *d, struct strmap *taken, bool add)
{
	const char *n[4 + 64];
	size_t k = 0;
	n[k++] = d->plural, n[k++] = d->singular, n[k++] = d->kind, n[k++] = d->list_kind;
	for (size_t i = 0; i < d->nshort && k < sizeof(n) / sizeof(n[0]); i++)
		n[k++] = d->short_names[i];
	for (size_t i = 0; i < k; i++) {
		if (!n[i] || !*n[i])
			continue;
		if (add)
			strmap_put(taken, n[i], NULL);
		else if (strmap_get(taken, n[i]))
			return n[i];
	}
	return NULL;
}

/* Decides acceptance for every CRD of t: in each group, oldest first, a CRD whose names an
 * accepted one already holds is not accepted; e->changed tells whose decision changed. One sort
 * and one pass over the names. */
static void decide_names(struct tlist *t)
{
	struct entry **order = xmalloc((t->n ? t->n : 1) * sizeof(*order));
	memcpy(order, t->e, t->n * sizeof(*order));
	qsort(order, t->n, sizeof(*order), by_group_age);
	struct strmap taken;
	strmap_init(&taken);
	for (size_t i = 0; i < t->n; i++) {
		struct entry *e = order[i];
		if (i > 0 && strcmp(group_of(order[i - 1]), group_of(e)) != 0) {
			strmap_release(&taken, NULL);
			strmap_init(&taken);
		}
		const char *clash = e->d ? names_taken(e->d->def, &taken, false) : NULL;
		bool ok = e->d && !clash;
		char *conflict = clash ? xasprintf("\"%s\" is already in use", clash) : NULL;
		if (ok)
			names_taken(e->d->def, &taken, true);
		e->changed = ok != e->accepted || (conflict && !e->conflict) || (!conflict && e->conflict) ||
			     (conflict && strcmp(conflict, e->conflict) != 0);
		e->accepted = ok;
		free(e->conflict);
		e->conflict = conflict;
	}
	strmap_release(&taken, NULL);
	free(order);
}

/* ---- status ---- */

static json_t *condition(const json_t *old_conds, const char *type, bool ok, const char *reason, const char *msg)
{
	const char *status = ok ? "True" : "False";
	size_t i;
	json_t *c;
	json_array_foreach(old_conds, i, c) {
		const char *t = json_str(c, "type");
		if (t && strcmp(t, type) == 0 && json_str(c, "status") && strcmp(json_str(c, "status"), status) == 0 &&
		    json_str(c, "reason") && strcmp(json_str(c, "reason"), reason) == 0 && json_str(c, "message") &&
		    strcmp(json_str(c, "message"), msg) == 0)
			return json_incref(c); /* unchanged: keep its transition time */
	}
	struct buf ts = BUF_INIT;
	rfc3339_add(&ts, time(NULL));
	json_t *c2 = json_pack("{s:s,s:s,s:s,s:s,s:s}", "type", type, "status", status, "lastTransitionTime",
			       buf_cstr(&ts), "reason", reason, "message", msg);
	buf_release(&ts);
	return c2;
}

/* The status e's CRD should have (new reference), from its current one. */
static json_t *desired_status(const struct entry *e)
{
	const json_t *cur = json_object_get(e->obj, "status");
	json_t *st = json_is_object(cur) ? json_deep_copy(cur) : json_object();
	const json_t *oc = json_object_get(cur, "conditions");
	const struct crd_def *d = e->d->def;
	json_t *conds = json_array();
	json_array_append_new(conds, condition(oc, "NamesAccepted", e->accepted, e->accepted ? "NoConflicts" : "NameConflict",
					       e->accepted ? "no conflicts found" : e->conflict ? e->conflict : "name conflict"));
	json_array_append_new(conds, condition(oc, "Established", e->accepted,
					       e->accepted ? "InitialNamesAccepted" : "NotAccepted",
					       e->accepted ? "the initial names have been accepted"
							   : "not all names are accepted"));
	size_t i;
	json_t *c;
	json_array_foreach(oc, i, c) { /* others (Terminating, from the cleanup controller) stay */
		const char *t = json_str(c, "type");
		if (t && strcmp(t, "NamesAccepted") != 0 && strcmp(t, "Established") != 0)
			json_array_append(conds, c);
	}
	json_object_set_new(st, "conditions", conds);
	if (e->accepted) {
		json_t *an = json_pack("{s:s,s:s,s:s,s:s}", "plural", d->plural, "singular", d->singular, "kind", d->kind,
				       "listKind", d->list_kind);
		if (d->nshort) {
			json_t *a = json_array();
			for (size_t k = 0; k < d->nshort; k++)
				json_array_append_new(a, json_string(d->short_names[k]));
			json_object_set_new(an, "shortNames", a);
		}
		if (d->ncategories) {
			json_t *a = json_array();
			for (size_t k = 0; k < d->ncategories; k++)
				json_array_append_new(a, json_string(d->categories[k]));
			json_object_set_new(an, "categories", a);
		}
		json_object_set_new(st, "acceptedNames", an);
	} else if (!json_object_get(st, "acceptedNames")) {
		json_object_set_new(st, "acceptedNames", json_pack("{s:s,s:s}", "plural", "", "kind", ""));
	}
	/* storedVersions: every version ever used for storage, the current one included */
	json_t *sv = json_object_get(st, "storedVersions");
	if (!json_is_array(sv)) {
		sv = json_array();
		json_object_set_new(st, "storedVersions", sv);
	}
	const char *stv = storage_of(d)->name;
	bool have = false;
	json_array_foreach(sv, i, c) have = have || (json_string_value(c) && strcmp(json_string_value(c), stv) == 0);
	if (!have)
		json_array_append_new(sv, json_string(stv));
	return st;
}

struct status_job {
	char *tenant, *name;
	json_t *status;
	struct status_job *next;
};

/* Writes status onto the stored CRD (a compare-and-swap on its revision, retried); nothing
 * when it already has it or is gone. Follower thread. */
static void write_status(struct crds *cr, const struct status_job *j)
{
	char *key = store_key(cr->crdsv, j->tenant, NULL, j->name);
	for (int attempt = 0; attempt < STATUS_RETRIES; attempt++) {
		json_t *obj = NULL;
		int64_t rev = 0;
		if (store_get(cr->s, key, &obj, &rev) < 0)
			break;
		if (json_equal(json_object_get(obj, "status"), j->status)) {
			json_decref(obj);
			break;
		}
		json_object_set(obj, "status", j->status);
		struct buf val = BUF_INIT;
		store_encode(obj, &val);
		int64_t nrev = 0;
		int rc = etcd_update(cr->s->etcd, key, val.ptr, val.len, rev, &nrev, NULL);
		buf_release(&val);
		json_decref(obj);
		if (rc != E_CONFLICT) {
			if (rc < 0)
				log_warn("crd: status not written", "tenant=%s crd=%s err=%s", j->tenant, j->name,
					 err_reason(rc));
			break;
		}
	}
	free(key);
}

/* ---- the follower ---- */

static struct tlist *tlist_of(struct crds *cr, const char *tenant, bool create)
{
	struct strmap_ent *te = create ? strmap_put(&cr->tenants, tenant, NULL) : strmap_get(&cr->tenants, tenant);
	if (!te)
		return NULL;
	if (!te->val)
		te->val = xcalloc(1, sizeof(struct tlist));
	return te->val;
}

static struct entry *find_entry(struct tlist *t, const char *name, size_t *ret_i)
{
	for (size_t i = 0; t && i < t->n; i++)
		if (strcmp(t->e[i]->name, name) == 0) {
			if (ret_i)
				*ret_i = i;
			return t->e[i];
		}
	return NULL;
}

/* Queues a write of e's status when the stored one is not what it should be. */
static void queue_status(const struct entry *e, struct status_job **jobs)
{
	json_t *st = desired_status(e);
	if (json_equal(st, json_object_get(e->obj, "status"))) {
		json_decref(st);
		return;
	}
	struct status_job *j = xcalloc(1, sizeof(*j));
	j->tenant = xstrdup(e->tenant);
	j->name = xstrdup(e->name);
	j->status = st;
	j->next = *jobs;
	*jobs = j;
}

/* Re-decides t's names and rebuilds what changed (e_changed: that entry's definition changed
 * too); queues status writes. Under the write lock. */
static void settle(struct crds *cr, struct tlist *t, struct entry *e_changed, struct status_job **jobs)
{
	decide_names(t);
	bool any = false;
	for (size_t i = 0; i < t->n; i++) {
		struct entry *e = t->e[i];
		if (!e->changed && e != e_changed)
			continue;
		any = true;
		entry_serve(cr, e);
		if (e->d)
			queue_status(e, jobs);
	}
	if (any)
		t->gen = ++cr->counter;
}

static void run_jobs(struct crds *cr, struct status_job *jobs)
{
	while (jobs) {
		struct status_job *j = jobs;
		jobs = j->next;
		write_status(cr, j);
		json_decref(j->status);
		free(j->tenant);
		free(j->name);
		free(j);
	}
}

static void on_event(void *ud, size_t i, enum wev_type type, struct cobj *o)
{
	(void)i;
	struct crds *cr = ud;
	struct status_job *jobs = NULL;
	json_t *obj = type == WEV_DELETED ? NULL : json_loadb(o->json, o->json_len, 0, NULL);
	struct crdef *cd = NULL;
	if (obj) {
		struct field_errors errs = { 0 };
		struct crd_def *d = NULL;
		if (crd_def_parse(obj, &d, &errs) == 0) {
			cd = xcalloc(1, sizeof(*cd));
			atomic_init(&cd->refs, 1);
			cd->def = d;
		} else {
			log_warn("crd: stored definition does not parse; not served", "tenant=%s crd=%s", o->tenant, o->name);
		}
		field_errors_release(&errs);
	}
	pthread_rwlock_wrlock(&cr->lock);
	struct tlist *t = tlist_of(cr, o->tenant, obj != NULL);
	size_t at = 0;
	struct entry *e = find_entry(t, o->name, &at);
	if (!obj) {
		if (e) {
			t->e[at] = t->e[--t->n];
			entry_free(e);
			settle(cr, t, NULL, &jobs);
			t->gen = ++cr->counter;
		}
	} else {
		if (!e) {
			e = xcalloc(1, sizeof(*e));
			e->tenant = xstrdup(o->tenant);
			e->name = xstrdup(o->name);
			t->e = xrealloc(t->e, (t->n + 1) * sizeof(*t->e));
			t->e[t->n++] = e;
		}
		e->seen = cr->epoch;
		bool same_def = e->d && cd && json_equal(json_object_get(e->obj, "spec"), json_object_get(obj, "spec")) &&
				e->d->def->terminating == cd->def->terminating;
		json_decref(e->obj);
		e->obj = json_incref(obj);
		if (!e->created && json_path_str(obj, "metadata.creationTimestamp"))
			e->created = xstrdup(json_path_str(obj, "metadata.creationTimestamp"));
		if (same_def) {
			/* a status or metadata change: names stand, what is built stays served; only
			 * a status someone else's write dropped is written again */
			crdef_unref(cd);
			if (e->d)
				queue_status(e, &jobs);
		} else {
			crdef_unref(e->d);
			e->d = cd;
			settle(cr, t, e, &jobs);
		}
	}
	pthread_rwlock_unlock(&cr->lock);
	json_decref(obj);
	run_jobs(cr, jobs);
}

static void on_reset(void *ud, size_t i)
{
	(void)i;
	struct crds *cr = ud;
	cr->epoch++;
}

/* After a whole state: CRDs it did not bring again are gone. */
static void on_listed(void *ud, size_t i)
{
	(void)i;
	struct crds *cr = ud;
	struct status_job *jobs = NULL;
	pthread_rwlock_wrlock(&cr->lock);
	size_t it = 0;
	for (struct strmap_ent *te = strmap_next(&cr->tenants, NULL, &it); te; te = strmap_next(&cr->tenants, te, &it)) {
		struct tlist *t = te->val;
		bool gone = false;
		for (size_t k = 0; k < t->n;) {
			if (t->e[k]->seen != cr->epoch) {
				entry_free(t->e[k]);
				t->e[k] = t->e[--t->n];
				gone = true;
			} else {
				k++;
			}
		}
		if (gone)
			settle(cr, t, NULL, &jobs);
	}
	pthread_rwlock_unlock(&cr->lock);
	run_jobs(cr, jobs);
}

int crd_start(struct apiserver *s)
{
	struct served *sv = served_by_plural(s, CRD_PLURAL);
	if (!sv)
		return 0;
	struct crds *cr = xcalloc(1, sizeof(*cr));
	cr->s = s;
	cr->crdsv = sv;
	cr->epoch = 1;
	pthread_rwlock_init(&cr->lock, NULL);
	strmap_init(&cr->tenants);
	char *mp = mux_prefix(s);
	cr->mux = wcache_mux_new(s->etcd, mp);
	free(mp);
	s->crds = cr;
	static const struct follower_ops ops = { .event = on_event, .reset = on_reset, .listed = on_listed };
	cr->f = follower_start(&sv, 1, &ops, cr);
	if (!cr->f) {
		wcache_mux_free(cr->mux);
		s->crds = NULL;
		pthread_rwlock_destroy(&cr->lock);
		free(cr);
		return -1;
	}
	return 0;
}

static void tlist_free(void *v)
{
	struct tlist *t = v;
	for (size_t i = 0; i < t->n; i++)
		entry_free(t->e[i]);
	free(t->e);
	free(t);
}

void crd_stop(struct apiserver *s)
{
	struct crds *cr = s->crds;
	if (!cr)
		return;
	follower_stop(cr->f);
	strmap_release(&cr->tenants, tlist_free);
	wcache_mux_free(cr->mux); /* after the caches: requests have ended (the HTTP server stopped) */
	pthread_rwlock_destroy(&cr->lock);
	free(cr);
	s->crds = NULL;
}

/* ---- lookups ---- */

static struct served *lookup(struct crds *cr, const char *tenant, const char *group, const char *version,
			     const char *plural)
{
	struct served *found = NULL;
	const char *tenants[2] = { tenant, TENANT_SYSTEM };
	for (size_t k = 0; k < 2 && !found; k++) {
		if (k == 1 && strcmp(tenant, TENANT_SYSTEM) == 0)
			break;
		struct tlist *t = tlist_of(cr, tenants[k], false);
		for (size_t i = 0; t && i < t->n && !found; i++) {
			struct entry *e = t->e[i];
			if (!e->d || strcmp(e->d->def->group, group) != 0 || strcmp(e->d->def->plural, plural) != 0)
				continue;
			if (k == 1 || e->accepted) {
				for (size_t j = 0; j < e->nsv && !found; j++)
					if (strcmp(e->sv[j]->r->version, version) == 0)
						found = served_ref(e->sv[j]);
			}
			if (k == 0)
				return found; /* the tenant's own CRD of that name hides the system's */
		}
	}
	return found;
}

/* A CRD established a moment ago: its cache's first list is on its way (the mux lists it at
 * once); a request waits for it rather than getting a 503. */
static struct served *wait_ready(struct served *sv)
{
	for (int i = 0; i < CATCH_UP_MS / 10 && !wcache_ready(sv->cache); i++)
		usleep(10 * 1000);
	return sv;
}

struct served *crd_find(struct apiserver *s, const char *tenant, const char *group, const char *version,
			const char *plural)
{
	struct crds *cr = s->crds;
	if (!cr || !group[0] || !tenant)
		return NULL;
	if (strcmp(tenant, TENANT_ALL) == 0)
		tenant = TENANT_SYSTEM;
	pthread_rwlock_rdlock(&cr->lock);
	struct served *sv = lookup(cr, tenant, group, version, plural);
	pthread_rwlock_unlock(&cr->lock);
	if (sv)
		return wait_ready(sv);
	/* a CRD this server wrote a moment ago may not have reached the registry yet */
	if (!follower_catch_up(cr->f, CATCH_UP_MS))
		return NULL;
	pthread_rwlock_rdlock(&cr->lock);
	sv = lookup(cr, tenant, group, version, plural);
	pthread_rwlock_unlock(&cr->lock);
	return sv ? wait_ready(sv) : NULL;
}

static void view_add(struct crd_view *v, size_t *cap, struct served *sv)
{
	if (v->n == *cap) {
		*cap = *cap ? *cap * 2 : 16;
		v->sv = xrealloc(v->sv, *cap * sizeof(*v->sv));
	}
	v->sv[v->n++] = served_ref(sv);
}

static bool shadowed(const struct tlist *own, const struct entry *sys)
{
	for (size_t i = 0; own && i < own->n; i++)
		if (strcmp(own->e[i]->name, sys->name) == 0)
			return true;
	return false;
}

static int by_group_plural(const void *pa, const void *pb)
{
	const struct served *a = *(struct served *const *)pa, *b = *(struct served *const *)pb;
	int c = strcmp(a->r->group, b->r->group);
	if (c)
		return c;
	c = strcmp(a->r->plural, b->r->plural);
	if (c)
		return c;
	/* versions in the CRD's order */
	const struct crd_def *d = a->r->crd;
	return (int)(a->r->crd_version - d->versions) - (int)(b->r->crd_version - d->versions);
}

void crd_view_get(struct apiserver *s, const char *tenant, struct crd_view *ret)
{
	*ret = (struct crd_view){ 0 };
	struct crds *cr = s->crds;
	if (!cr || !tenant)
		return;
	size_t cap = 0;
	pthread_rwlock_rdlock(&cr->lock);
	struct tlist *own = tlist_of(cr, tenant, false);
	struct tlist *sys = strcmp(tenant, TENANT_SYSTEM) == 0 ? NULL : tlist_of(cr, TENANT_SYSTEM, false);
	for (size_t i = 0; own && i < own->n; i++)
		for (size_t j = 0; j < own->e[i]->nsv; j++)
			view_add(ret, &cap, own->e[i]->sv[j]);
	for (size_t i = 0; sys && i < sys->n; i++)
		if (!shadowed(own, sys->e[i]))
			for (size_t j = 0; j < sys->e[i]->nsv; j++)
				view_add(ret, &cap, sys->e[i]->sv[j]);
	uint64_t g1 = own ? own->gen : 0, g2 = sys ? sys->gen : 0;
	ret->gen = g1 > g2 ? g1 : g2;
	pthread_rwlock_unlock(&cr->lock);
	if (ret->n > 1)
		qsort(ret->sv, ret->n, sizeof(*ret->sv), by_group_plural);
}

void crd_view_release(struct crd_view *v)
{
	for (size_t i = 0; i < v->n; i++)
		served_unref(v->sv[i]);
	free(v->sv);
	*v = (struct crd_view){ 0 };
}

/* ---- serving custom resources ---- */

bool crd_rewrites(const struct served *sv)
{
	const struct api_resource *r = sv->r;
	return r->crd && strcmp(r->version, storage_of(r->crd)->name) != 0;
}

void crd_set_api_version(const struct served *sv, json_t *obj, bool storage)
{
	const struct api_resource *r = sv->r;
	if (!r->crd)
		return;
	char *av = xasprintf("%s/%s", r->group, storage ? storage_of(r->crd)->name : r->version);
	json_object_set_new(obj, "apiVersion", json_string(av));
	free(av);
}

void crd_prune(const struct api_resource *r, json_t *obj, json_t *ret_paths)
{
	crd_schema_prune(r->crd_version->schema, obj, ret_paths);
	json_t *meta = json_object_get(obj, "metadata");
	if (!json_is_object(meta))
		return;
	json_t *mp = ret_paths ? json_array() : NULL;
	schema_prune(meta, &pm_object_meta, mp);
	size_t k;
	json_t *v;
	json_array_foreach(mp, k, v) {
		char *full = xasprintf("metadata.%s", json_string_value(v));
		json_array_append_new(ret_paths, json_string(full));
		free(full);
	}
	json_decref(mp);
}

void crd_object_text(const struct served *sv, const char *json, size_t len, struct buf *out)
{
	if (!crd_rewrites(sv)) {
		buf_add(out, json, len);
		return;
	}
	json_t *obj = json_loadb(json, len, 0, NULL);
	if (!obj) {
		buf_add(out, json, len);
		return;
	}
	crd_set_api_version(sv, obj, false);
	json_dump_buf(obj, out);
	json_decref(obj);
}

/* A date cell as Kubernetes prints it: the age of the timestamp ("5m"), else the value. */
static json_t *date_cell(const json_t *val, time_t now)
{
	time_t t;
	if (!json_is_string(val) || rfc3339_parse(json_string_value(val), &t) != 0)
		return val ? json_incref((json_t *)val) : json_null();
	struct buf b = BUF_INIT;
	age_add(&b, t, now);
	json_t *c = json_string(buf_cstr(&b));
	buf_release(&b);
	return c;
}

void crd_table_cells(const struct api_resource *r, const json_t *obj, time_t now, json_t *cells)
{
	const struct crd_version *v = r->crd_version;
	json_array_append_new(cells, json_string(json_path_str(obj, "metadata.name")));
	if (!v->ncolumns) {
		json_array_append_new(cells, date_cell(json_path((json_t *)obj, "metadata.creationTimestamp"), now));
		return;
	}
	for (size_t i = 0; i < v->ncolumns; i++) {
		const struct crd_column *c = &v->columns[i];
		const json_t *val = crd_jsonpath_get(c->json_path, obj);
		if (!val) {
			json_array_append_new(cells, json_null());
		} else if (strcmp(c->type, "date") == 0) {
			json_array_append_new(cells, date_cell(val, now));
		} else if (strcmp(c->type, "integer") == 0 && json_is_number(val)) {
			json_array_append_new(cells, json_integer((json_int_t)json_number_value(val)));
		} else if (strcmp(c->type, "number") == 0 && json_is_number(val)) {
			json_array_append_new(cells, json_incref((json_t *)val));
		} else if (strcmp(c->type, "boolean") == 0 && json_is_boolean(val)) {
			json_array_append_new(cells, json_incref((json_t *)val));
		} else if (json_is_string(val)) {
			json_array_append_new(cells, json_incref((json_t *)val));
		} else {
			struct buf b = BUF_INIT;
			crd_jsonpath_eval(c->json_path, obj, &b);
			json_array_append_new(cells, json_stringn(b.ptr ? b.ptr : "", b.len));
			buf_release(&b);
		}
	}
}

/* ---- admission of CRDs ---- */

/* A CRD's short names and names must not clash with another CRD's names in its tenant (or the
 * system tenant's) nor with a built-in kind's: kubectl resolves them all in one namespace. */
int admit_crd(struct req *q, json_t *obj, const json_t *old)
{
	(void)old;
	struct crds *cr = q->s->crds;
	if (!cr || strcmp(q->res->r->plural, CRD_PLURAL) != 0)
		return 0;
	struct crd_def *d = NULL;
	struct field_errors errs = { 0 };
	if (crd_def_parse(obj, &d, &errs) < 0) {
		field_errors_release(&errs);
		return 0; /* validation has said why */
	}
	const char *names[68];
	const char *fields[68];
	size_t n = 0;
	for (size_t i = 0; i < d->nshort && n < 64; i++) {
		fields[n] = "spec.names.shortNames";
		names[n++] = d->short_names[i];
	}
	fields[n] = "spec.names.plural", names[n++] = d->plural;
	fields[n] = "spec.names.singular", names[n++] = d->singular;
	/* built-in kinds: their plurals and short names */
	for (size_t k = 0; k < n; k++)
		for (size_t i = 0; i < q->s->nres; i++) {
			const struct api_resource *r = q->s->res[i].r;
			bool clash = k < d->nshort && strcmp(r->plural, names[k]) == 0;
			for (size_t j = 0; j < 4 && r->short_names[j] && !clash; j++)
				clash = strcmp(r->short_names[j], names[k]) == 0;
			if (clash && !r->ephemeral && !r->metrics) {
				field_error_add(&errs, "FieldValueInvalid", fields[k],
						"Invalid value: \"%s\": is already in use by %s", names[k], r->plural);
				break;
			}
		}
	pthread_rwlock_rdlock(&cr->lock);
	const char *tenants[2] = { q->tenant, TENANT_SYSTEM };
	for (size_t t = 0; t < 2 && !field_errors_any(&errs); t++) {
		struct tlist *tl = tlist_of(cr, tenants[t], false);
		for (size_t i = 0; tl && i < tl->n; i++) {
			const struct entry *e = tl->e[i];
			if (!e->d || (t == 0 && strcmp(e->name, json_path_str(obj, "metadata.name")) == 0))
				continue;
			const struct crd_def *o = e->d->def;
			for (size_t k = 0; k < d->nshort; k++) {
				bool clash = strcmp(o->plural, d->short_names[k]) == 0 ||
					     strcmp(o->singular, d->short_names[k]) == 0;
				for (size_t j = 0; j < o->nshort && !clash; j++)
					clash = strcmp(o->short_names[j], d->short_names[k]) == 0;
				if (clash)
					field_error_add(&errs, "FieldValueInvalid", "spec.names.shortNames",
							"Invalid value: \"%s\": is already in use by %s", d->short_names[k],
							e->name);
			}
		}
	}
	pthread_rwlock_unlock(&cr->lock);
	crd_def_free(d);
	if (!field_errors_any(&errs))
		return 0;
	reply_invalid(q, obj, &errs);
	field_errors_release(&errs);
	return -1;
}
