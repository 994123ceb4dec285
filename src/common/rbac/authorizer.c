/* The authorizer: every RBAC object of a partition, compiled and indexed per tenant.
 *
 * Per tenant: roles by "R:<ns>/<name>" (Role) and "C:<name>" (ClusterRole), bindings by
 * "RB:<ns>/<name>" and "CRB:<name>", and the subject index: "<subject>\x1f<ns>" (ns empty for a
 * ClusterRoleBinding) to the bindings naming that subject there. A subject is "U:<user>" (a
 * ServiceAccount subject is its user, system:serviceaccount:<ns>:<name>) or "G:<group>". A
 * decision looks up, per subject of the caller, its cluster bindings and its bindings in the
 * request's namespace: two look-ups a subject, whatever the tenant holds. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include "ursa/errors.h"
#include "ursa/jsonutil.h"
#include "ursa/rbac.h"
#include "ursa/selector.h"
#include "ursa/strmap.h"
#include "ursa/xalloc.h"

struct role {
	struct rbac_rule *own; /* the object's rules */
	size_t nown;
	struct rbac_rule *agg; /* the aggregation's rules, for an aggregated ClusterRole; else NULL */
	size_t nagg;
	json_t *labels;        /* ClusterRoles: metadata.labels (new ref) or NULL */
	struct label_selector **sel; /* aggregationRule.clusterRoleSelectors */
	size_t nsel;
	unsigned gen;          /* the resync generation of its kind when last applied */
};

struct binding {
	char *ns;         /* "" for a ClusterRoleBinding */
	char *name;
	bool cluster_ref; /* roleRef.kind ClusterRole (else Role) */
	char *role;       /* roleRef.name */
	char **subjects;  /* "U:..." / "G:..." */
	size_t nsubjects;
	unsigned gen;     /* the resync generation of its kind when last applied */
};

struct bvec {
	struct binding **v;
	size_t n, cap;
};

struct tenant {
	struct strmap roles, bindings, subjects;
};

struct rbac {
	pthread_rwlock_t lock;
	struct strmap tenants;
	size_t nbindings;
	unsigned gen[4]; /* per kind: bumped by rbac_resync_begin */
};

static const struct rbac_rule *role_rules(const struct role *r, size_t *ret_n)
{
	*ret_n = r->agg ? r->nagg : r->nown;
	return r->agg ? r->agg : r->own;
}

static void role_free(void *p)
{
	struct role *r = p;
	if (!r)
		return;
	rbac_rules_free(r->own, r->nown);
	rbac_rules_free(r->agg, r->nagg);
	json_decref(r->labels);
	for (size_t i = 0; i < r->nsel; i++)
		label_selector_free(r->sel[i]);
	free(r->sel);
	free(r);
}

static void binding_free(struct binding *b)
{
	if (!b)
		return;
	for (size_t i = 0; i < b->nsubjects; i++)
		free(b->subjects[i]);
	free(b->subjects);
	free(b->ns), free(b->name), free(b->role);
	free(b);
}

static void bvec_free(void *p)
{
	struct bvec *v = p;
	if (v)
		free(v->v);
	free(v);
}

static void tenant_free(void *p)
{
	struct tenant *t = p;
	if (!t)
		return;
	strmap_release(&t->subjects, bvec_free);
	size_t it = 0;
	for (struct strmap_ent *e = strmap_next(&t->bindings, NULL, &it); e; e = strmap_next(&t->bindings, e, &it))
		binding_free(e->val);
	strmap_release(&t->bindings, NULL);
	strmap_release(&t->roles, role_free);
	free(t);
}

struct rbac *rbac_new(void)
{
	struct rbac *a = xcalloc(1, sizeof(*a));
	pthread_rwlock_init(&a->lock, NULL);
	strmap_init(&a->tenants);
	return a;
}

void rbac_clear(struct rbac *a)
{
	pthread_rwlock_wrlock(&a->lock);
	strmap_release(&a->tenants, tenant_free);
	strmap_init(&a->tenants);
	a->nbindings = 0;
	pthread_rwlock_unlock(&a->lock);
}

void rbac_free(struct rbac *a)
{
	if (!a)
		return;
	strmap_release(&a->tenants, tenant_free);
	pthread_rwlock_destroy(&a->lock);
	free(a);
}

size_t rbac_bindings(struct rbac *a)
{
	pthread_rwlock_rdlock(&a->lock);
	size_t n = a->nbindings;
	pthread_rwlock_unlock(&a->lock);
	return n;
}

static struct tenant *tenant_get(struct rbac *a, const char *name, bool create)
{
	if (!create) {
		struct strmap_ent *e = strmap_get(&a->tenants, name);
		return e ? e->val : NULL;
	}
	bool created;
	struct strmap_ent *e = strmap_put(&a->tenants, name, &created);
	if (created) {
		struct tenant *t = xcalloc(1, sizeof(*t));
		strmap_init(&t->roles);
		strmap_init(&t->bindings);
		strmap_init(&t->subjects);
		e->val = t;
	}
	return e->val;
}

/* ---- rules copies and aggregation ---- */

static char **strv_copy(char **v, size_t n)
{
	if (!n)
		return NULL;
	char **c = xcalloc(n, sizeof(*c));
	for (size_t i = 0; i < n; i++)
		c[i] = xstrdup(v[i]);
	return c;
}

static void rule_copy(const struct rbac_rule *s, struct rbac_rule *d)
{
	d->verbs = strv_copy(s->verbs, d->nverbs = s->nverbs);
	d->groups = strv_copy(s->groups, d->ngroups = s->ngroups);
	d->resources = strv_copy(s->resources, d->nresources = s->nresources);
	d->names = strv_copy(s->names, d->nnames = s->nnames);
	d->urls = strv_copy(s->urls, d->nurls = s->nurls);
}

static bool strv_eq(char **a, size_t na, char **b, size_t nb)
{
	if (na != nb)
		return false;
	for (size_t i = 0; i < na; i++)
		if (strcmp(a[i], b[i]) != 0)
			return false;
	return true;
}

static bool rule_eq(const struct rbac_rule *a, const struct rbac_rule *b)
{
	return strv_eq(a->verbs, a->nverbs, b->verbs, b->nverbs) && strv_eq(a->groups, a->ngroups, b->groups, b->ngroups) &&
	       strv_eq(a->resources, a->nresources, b->resources, b->nresources) &&
	       strv_eq(a->names, a->nnames, b->names, b->nnames) && strv_eq(a->urls, a->nurls, b->urls, b->nurls);
}

struct ruleset {
	struct rbac_rule *v;
	size_t n, cap;
};

static void ruleset_add(struct ruleset *s, const struct rbac_rule *r, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		bool dup = false;
		for (size_t k = 0; k < s->n && !dup; k++)
			dup = rule_eq(&s->v[k], &r[i]);
		if (dup)
			continue;
		if (s->n == s->cap) {
			s->cap = s->cap ? s->cap * 2 : 8;
			s->v = xrealloc(s->v, s->cap * sizeof(*s->v));
		}
		rule_copy(&r[i], &s->v[s->n++]);
	}
}

/* Recomputes the rules of every aggregated ClusterRole of t until nothing changes (an aggregated
 * role may aggregate another: admin takes edit's, edit takes view's), at most a few rounds. An
 * aggregated role's rules are the union of those of the roles its selectors match, whatever its
 * stored rules say (they are the aggregation's output, written back: rbac_each_stale_aggregate). */
static void aggregate(struct tenant *t)
{
	for (int round = 0; round < 4; round++) {
		bool changed = false;
		size_t it = 0;
		for (struct strmap_ent *e = strmap_next(&t->roles, NULL, &it); e; e = strmap_next(&t->roles, e, &it)) {
			struct role *r = e->val;
			if (!r->nsel || strncmp(e->key, "C:", 2) != 0)
				continue;
			struct ruleset s = { 0 }; /* an aggregated role's own rules are the aggregation's output */
			size_t jt = 0;
			for (struct strmap_ent *f = strmap_next(&t->roles, NULL, &jt); f; f = strmap_next(&t->roles, f, &jt)) {
				struct role *src = f->val;
				if (src == r || strncmp(f->key, "C:", 2) != 0 || !src->labels)
					continue;
				for (size_t k = 0; k < r->nsel; k++) {
					if (!label_selector_matches(r->sel[k], src->labels))
						continue;
					size_t n;
					const struct rbac_rule *rules = role_rules(src, &n);
					ruleset_add(&s, rules, n);
					break;
				}
			}
			bool same = r->agg && s.n == r->nagg;
			for (size_t k = 0; same && k < s.n; k++)
				same = rule_eq(&s.v[k], &r->agg[k]);
			if (same) {
				rbac_rules_free(s.v, s.n);
				continue;
			}
			rbac_rules_free(r->agg, r->nagg);
			r->agg = s.v ? s.v : xcalloc(1, sizeof(*s.v));
			r->nagg = s.n;
			changed = true;
		}
		if (!changed)
			break;
	}
}

static struct role *role_new(const json_t *obj, bool cluster)
{
	struct role *r = xcalloc(1, sizeof(*r));
	if (rbac_rules_parse(json_object_get(obj, "rules"), "rules", cluster, &r->own, &r->nown, NULL) < 0)
		r->own = NULL, r->nown = 0; /* held without rules: grants nothing */
	if (!cluster)
		return r;
	const json_t *labels = json_path(obj, "metadata.labels");
	if (json_is_object(labels))
		r->labels = json_incref((json_t *)labels);
	const json_t *sels = json_path(obj, "aggregationRule.clusterRoleSelectors");
	size_t i;
	const json_t *s;
	if (json_is_array(sels) && json_array_size(sels)) {
		r->sel = xcalloc(json_array_size(sels), sizeof(*r->sel));
		json_array_foreach(sels, i, s) {
			struct label_selector *ls = NULL;
			if (label_selector_from_json(s, &ls, NULL) == 0 && ls) {
				if (label_selector_empty(ls)) /* an empty selector would aggregate every role */
					label_selector_free(ls);
				else
					r->sel[r->nsel++] = ls;
			}
		}
	}
	return r;
}

/* ---- bindings and the subject index ---- */

static char *subject_key(const json_t *s, const char *binding_ns)
{
	const char *kind = json_str(s, "kind"), *name = json_str(s, "name");
	if (!kind || !name || !*name)
		return NULL;
	if (strcmp(kind, "User") == 0)
		return xasprintf("U:%s", name);
	if (strcmp(kind, "Group") == 0)
		return xasprintf("G:%s", name);
	if (strcmp(kind, "ServiceAccount") == 0) {
		const char *ns = json_str(s, "namespace");
		if (!ns || !*ns)
			ns = binding_ns;
		if (!ns || !*ns)
			return NULL;
		return xasprintf("U:system:serviceaccount:%s:%s", ns, name);
	}
	return NULL;
}

static struct binding *binding_new(const json_t *obj, const char *ns, const char *name)
{
	const char *kind = json_path_str(obj, "roleRef.kind"), *role = json_path_str(obj, "roleRef.name");
	if (!kind || !role)
		return NULL;
	bool cluster_ref = strcmp(kind, "ClusterRole") == 0;
	if (!cluster_ref && (strcmp(kind, "Role") != 0 || !*ns))
		return NULL;
	struct binding *b = xcalloc(1, sizeof(*b));
	b->ns = xstrdup(ns);
	b->name = xstrdup(name);
	b->cluster_ref = cluster_ref;
	b->role = xstrdup(role);
	const json_t *subs = json_object_get(obj, "subjects");
	size_t i;
	const json_t *s;
	if (json_is_array(subs) && json_array_size(subs)) {
		b->subjects = xcalloc(json_array_size(subs), sizeof(*b->subjects));
		json_array_foreach(subs, i, s) {
			char *k = json_is_object(s) ? subject_key(s, ns) : NULL;
			if (k)
				b->subjects[b->nsubjects++] = k;
		}
	}
	return b;
}

static char *index_key(const char *subject, const char *ns)
{
	return xasprintf("%s\x1f%s", subject, ns);
}

static void index_add(struct tenant *t, struct binding *b)
{
	for (size_t i = 0; i < b->nsubjects; i++) {
		char *k = index_key(b->subjects[i], b->ns);
		bool created;
		struct strmap_ent *e = strmap_put(&t->subjects, k, &created);
		free(k);
		if (created)
			e->val = xcalloc(1, sizeof(struct bvec));
		struct bvec *v = e->val;
		bool dup = false; /* a subject named twice in one binding */
		for (size_t j = 0; j < v->n && !dup; j++)
			dup = v->v[j] == b;
		if (dup)
			continue;
		if (v->n == v->cap) {
			v->cap = v->cap ? v->cap * 2 : 4;
			v->v = xrealloc(v->v, v->cap * sizeof(*v->v));
		}
		v->v[v->n++] = b;
	}
}

static void index_del(struct tenant *t, struct binding *b)
{
	for (size_t i = 0; i < b->nsubjects; i++) {
		char *k = index_key(b->subjects[i], b->ns);
		struct strmap_ent *e = strmap_get(&t->subjects, k);
		if (e) {
			struct bvec *v = e->val;
			for (size_t j = 0; j < v->n; j++)
				if (v->v[j] == b) {
					v->v[j] = v->v[--v->n];
					break;
				}
			if (v->n == 0) {
				void *val = NULL;
				strmap_del(&t->subjects, k, &val);
				bvec_free(val);
			}
		}
		free(k);
	}
}

void rbac_apply(struct rbac *a, enum rbac_kind kind, const char *tenant, const char *ns, const char *name,
		const json_t *obj)
{
	bool cluster = kind == RBAC_CLUSTER_ROLE || kind == RBAC_CLUSTER_ROLE_BINDING;
	if (cluster)
		ns = "";
	if (!ns)
		ns = "";
	char *key = kind == RBAC_ROLE		  ? xasprintf("R:%s/%s", ns, name)
		    : kind == RBAC_CLUSTER_ROLE	  ? xasprintf("C:%s", name)
		    : kind == RBAC_ROLE_BINDING	  ? xasprintf("RB:%s/%s", ns, name)
						  : xasprintf("CRB:%s", name);
	/* build outside the lock */
	struct role *role = NULL;
	struct binding *b = NULL;
	if (obj && (kind == RBAC_ROLE || kind == RBAC_CLUSTER_ROLE))
		role = role_new(obj, cluster);
	else if (obj)
		b = binding_new(obj, ns, name);

	pthread_rwlock_wrlock(&a->lock);
	struct tenant *t = tenant_get(a, tenant, obj != NULL);
	if (!t)
		goto out;
	if (kind == RBAC_ROLE || kind == RBAC_CLUSTER_ROLE) {
		void *old = NULL;
		strmap_del(&t->roles, key, &old);
		role_free(old);
		if (role) {
			bool created;
			role->gen = a->gen[kind];
			strmap_put(&t->roles, key, &created)->val = role;
			role = NULL;
		}
		if (kind == RBAC_CLUSTER_ROLE)
			aggregate(t);
	} else {
		void *old = NULL;
		if (strmap_del(&t->bindings, key, &old) && old) {
			index_del(t, old);
			binding_free(old);
			a->nbindings--;
		}
		if (b) {
			bool created;
			b->gen = a->gen[kind];
			strmap_put(&t->bindings, key, &created)->val = b;
			index_add(t, b);
			a->nbindings++;
			b = NULL;
		}
	}
out:
	pthread_rwlock_unlock(&a->lock);
	role_free(role);
	binding_free(b);
	free(key);
}

void rbac_resync_begin(struct rbac *a, enum rbac_kind kind)
{
	pthread_rwlock_wrlock(&a->lock);
	a->gen[kind]++;
	pthread_rwlock_unlock(&a->lock);
}

void rbac_resync_end(struct rbac *a, enum rbac_kind kind)
{
	static const char *const prefix[] = { [RBAC_ROLE] = "R:", [RBAC_CLUSTER_ROLE] = "C:",
					      [RBAC_ROLE_BINDING] = "RB:", [RBAC_CLUSTER_ROLE_BINDING] = "CRB:" };
	bool roles = kind == RBAC_ROLE || kind == RBAC_CLUSTER_ROLE;
	size_t plen = strlen(prefix[kind]);
	pthread_rwlock_wrlock(&a->lock);
	unsigned gen = a->gen[kind];
	size_t it = 0;
	for (struct strmap_ent *te = strmap_next(&a->tenants, NULL, &it); te; te = strmap_next(&a->tenants, te, &it)) {
		struct tenant *t = te->val;
		struct strmap *m = roles ? &t->roles : &t->bindings;
		/* the map may not change while it is walked: gather the keys of what the resync did
		 * not bring again first */
		char **keys = xcalloc(m->n + 1, sizeof(char *));
		size_t n = 0, jt = 0;
		for (struct strmap_ent *e = strmap_next(m, NULL, &jt); e; e = strmap_next(m, e, &jt)) {
			unsigned g = roles ? ((struct role *)e->val)->gen : ((struct binding *)e->val)->gen;
			if (strncmp(e->key, prefix[kind], plen) == 0 && g != gen)
				keys[n++] = xstrdup(e->key);
		}
		for (size_t k = 0; k < n; k++) {
			void *val = NULL;
			strmap_del(m, keys[k], &val);
			if (roles) {
				role_free(val);
			} else if (val) {
				index_del(t, val);
				binding_free(val);
				a->nbindings--;
			}
			free(keys[k]);
		}
		free(keys);
		if (kind == RBAC_CLUSTER_ROLE && n)
			aggregate(t);
	}
	pthread_rwlock_unlock(&a->lock);
}

void rbac_each_stale_aggregate(struct rbac *a, const char *tenant,
				void (*fn)(void *ud, const char *name, const json_t *rules), void *ud)
{
	json_t *todo = json_object(); /* name -> rules, gathered under the lock, handed out after */
	pthread_rwlock_rdlock(&a->lock);
	struct tenant *t = tenant_get(a, tenant, false);
	size_t it = 0;
	for (struct strmap_ent *e = t ? strmap_next(&t->roles, NULL, &it) : NULL; e; e = strmap_next(&t->roles, e, &it)) {
		struct role *r = e->val;
		if (!r->nsel || !r->agg || strncmp(e->key, "C:", 2) != 0)
			continue;
		bool same = r->nagg == r->nown;
		for (size_t k = 0; same && k < r->nagg; k++)
			same = rule_eq(&r->agg[k], &r->own[k]);
		if (same)
			continue;
		json_t *rules = json_array();
		for (size_t k = 0; k < r->nagg; k++)
			json_array_append_new(rules, rbac_rule_json(&r->agg[k]));
		json_object_set_new(todo, e->key + 2, rules);
	}
	pthread_rwlock_unlock(&a->lock);
	const char *name;
	json_t *rules;
	json_object_foreach(todo, name, rules)
		fn(ud, name, rules);
	json_decref(todo);
}

void rbac_each_tenant(struct rbac *a, void (*fn)(void *ud, const char *tenant), void *ud)
{
	json_t *names = json_array();
	pthread_rwlock_rdlock(&a->lock);
	size_t it = 0;
	for (struct strmap_ent *e = strmap_next(&a->tenants, NULL, &it); e; e = strmap_next(&a->tenants, e, &it))
		json_array_append_new(names, json_string(e->key));
	pthread_rwlock_unlock(&a->lock);
	size_t i;
	json_t *n;
	json_array_foreach(names, i, n)
		fn(ud, json_string_value(n));
	json_decref(names);
}

/* ---- decisions ---- */

/* Decisions build their look-up keys on the stack: a key longer than this is built on the heap. */
#define KEY_STACK 256

/* snprintf into buf (KEY_STACK bytes) or, when it does not fit, a new heap string in *ret_heap. */
static const char *key_of(char *buf, char **ret_heap, const char *fmt, const char *a, const char *b)
{
	int n = snprintf(buf, KEY_STACK, fmt, a, b);
	*ret_heap = NULL;
	if (n >= 0 && n < KEY_STACK)
		return buf;
	*ret_heap = xasprintf(fmt, a, b);
	return *ret_heap;
}

static const struct role *find_role(struct tenant *t, const struct binding *b)
{
	char buf[KEY_STACK], *heap;
	const char *k = b->cluster_ref ? key_of(buf, &heap, "C:%s%s", b->role, "")
				       : key_of(buf, &heap, "R:%s/%s", b->ns, b->role);
	struct strmap_ent *e = strmap_get(&t->roles, k);
	free(heap);
	return e ? e->val : NULL;
}

/* What a walk over the bindings that apply calls: per binding, with its role's rules; true
 * stops the walk. */
typedef bool (*visit_fn)(void *ud, const struct binding *b, const char *subject, const struct rbac_rule *rules,
			 size_t n);

static bool walk_subject(struct tenant *t, const char *subject, const char *ns, visit_fn fn, void *ud)
{
	char buf[KEY_STACK], *heap;
	const char *k = key_of(buf, &heap, "%s\x1f%s", subject, ns);
	struct strmap_ent *e = strmap_get(&t->subjects, k);
	free(heap);
	if (!e)
		return false;
	struct bvec *v = e->val;
	for (size_t i = 0; i < v->n; i++) {
		const struct role *r = find_role(t, v->v[i]);
		if (!r)
			continue; /* a binding to a role that does not exist grants nothing */
		size_t n;
		const struct rbac_rule *rules = role_rules(r, &n);
		if (fn(ud, v->v[i], subject, rules, n))
			return true;
	}
	return false;
}

static bool walk_tenant(struct tenant *t, const struct identity *id, const char *ns, bool cluster_only, visit_fn fn,
			void *ud)
{
	if (!t)
		return false;
	char buf[KEY_STACK], *heap;
	const char *user = key_of(buf, &heap, "U:%s%s", id->user ? id->user : "", "");
	bool stop = walk_subject(t, user, "", fn, ud) || (!cluster_only && ns && *ns && walk_subject(t, user, ns, fn, ud));
	free(heap);
	for (size_t g = 0; !stop && g <= id->ngroups; g++) {
		if (g < id->ngroups && strcmp(id->groups[g], GROUP_AUTHENTICATED) == 0)
			continue; /* counted once, below */
		const char *grp = key_of(buf, &heap, "G:%s%s", g < id->ngroups ? id->groups[g] : GROUP_AUTHENTICATED, "");
		stop = walk_subject(t, grp, "", fn, ud) || (!cluster_only && ns && *ns && walk_subject(t, grp, ns, fn, ud));
		free(heap);
	}
	return stop;
}

/* The bindings that apply to id inside tenant: the tenant's own for a user of that tenant, and
 * the system tenant's cluster bindings (region-wide) for a user of tenant system. Lock held. */
static bool walk(struct rbac *a, const struct identity *id, const char *tenant, const char *ns, visit_fn fn, void *ud)
{
	const char *own = id->tenant ? id->tenant : TENANT_SYSTEM;
	if (strcmp(own, tenant) == 0 && walk_tenant(tenant_get(a, tenant, false), id, ns, false, fn, ud))
		return true;
	if (strcmp(own, TENANT_SYSTEM) == 0 && strcmp(tenant, TENANT_SYSTEM) != 0 &&
	    walk_tenant(tenant_get(a, TENANT_SYSTEM, false), id, ns, true, fn, ud))
		return true;
	return false;
}

struct decide {
	const struct rbac_attrs *at;
	struct buf *reason;
};

static bool visit_decide(void *ud, const struct binding *b, const char *subject, const struct rbac_rule *rules,
			 size_t n)
{
	struct decide *d = ud;
	for (size_t i = 0; i < n; i++) {
		if (!rbac_rule_allows(&rules[i], d->at))
			continue;
		if (d->reason) {
			bool user = subject[0] == 'U';
			if (*b->ns)
				buf_addf(d->reason, "RBAC: allowed by RoleBinding \"%s/%s\" of %s \"%s\" to %s \"%s\"", b->name,
					 b->ns, b->cluster_ref ? "ClusterRole" : "Role", b->role, user ? "User" : "Group",
					 subject + 2);
			else
				buf_addf(d->reason, "RBAC: allowed by ClusterRoleBinding \"%s\" of ClusterRole \"%s\" to %s \"%s\"",
					 b->name, b->role, user ? "User" : "Group", subject + 2);
		}
		return true;
	}
	return false;
}

bool rbac_authorize(struct rbac *a, const struct identity *id, const char *tenant, const struct rbac_attrs *at,
		    struct buf *ret_reason)
{
	struct decide d = { at, ret_reason };
	pthread_rwlock_rdlock(&a->lock);
	bool ok = walk(a, id, tenant, at->ns, visit_decide, &d);
	pthread_rwlock_unlock(&a->lock);
	return ok;
}

void rbac_forbidden_message(const struct identity *id, const struct rbac_attrs *at, struct buf *out)
{
	const char *user = id->user ? id->user : "";
	if (!at->resource) {
		buf_addf(out, "forbidden: User \"%s\" cannot %s path \"%s\"", user, at->verb, at->path ? at->path : "");
		return;
	}
	buf_adds(out, at->resource);
	if (at->name && *at->name)
		buf_addf(out, " \"%s\"", at->name);
	buf_addf(out, " is forbidden: User \"%s\" cannot %s resource \"%s", user, at->verb, at->resource);
	if (at->subresource && *at->subresource)
		buf_addf(out, "/%s", at->subresource);
	buf_addf(out, "\" in API group \"%s\"", at->group ? at->group : "");
	if (at->ns && *at->ns)
		buf_addf(out, " in the namespace \"%s\"", at->ns);
	else
		buf_adds(out, " at the cluster scope");
}

struct each {
	void (*fn)(void *ud, const struct rbac_rule *r);
	void *ud;
};

static bool visit_each(void *ud, const struct binding *b, const char *subject, const struct rbac_rule *rules, size_t n)
{
	struct each *e = ud;
	(void)b, (void)subject;
	for (size_t i = 0; i < n; i++)
		e->fn(e->ud, &rules[i]);
	return false;
}

void rbac_each_rule(struct rbac *a, const struct identity *id, const char *tenant, const char *ns,
		    void (*fn)(void *ud, const struct rbac_rule *r), void *ud)
{
	struct each e = { fn, ud };
	pthread_rwlock_rdlock(&a->lock);
	walk(a, id, tenant, ns, visit_each, &e);
	pthread_rwlock_unlock(&a->lock);
}

struct collect {
	const struct rbac_rule **v;
	size_t n, cap;
};

static void collect_rule(void *ud, const struct rbac_rule *r)
{
	struct collect *c = ud;
	if (c->n == c->cap) {
		c->cap = c->cap ? c->cap * 2 : 32;
		c->v = xrealloc(c->v, c->cap * sizeof(*c->v));
	}
	c->v[c->n++] = r;
}

bool rbac_holds(struct rbac *a, const struct identity *id, const char *tenant, const char *ns,
		const struct rbac_rule *rules, size_t n, struct buf *ret_missing)
{
	struct collect c = { 0 };
	struct each e = { collect_rule, &c };
	pthread_rwlock_rdlock(&a->lock);
	walk(a, id, tenant, ns, visit_each, &e);
	/* rbac_rules_cover takes an array of rules: gather copies of the pointers' targets */
	struct rbac_rule *own = c.n ? xcalloc(c.n, sizeof(*own)) : NULL;
	for (size_t i = 0; i < c.n; i++)
		own[i] = *c.v[i]; /* shallow: the strings stay the index's, read under the lock */
	bool ok = true;
	for (size_t i = 0; i < n && ok; i++) {
		if (rbac_rules_cover(own, c.n, &rules[i]))
			continue;
		ok = false;
		if (ret_missing) {
			json_t *j = rbac_rule_json(&rules[i]);
			json_dump_buf(j, ret_missing);
			json_decref(j);
		}
	}
	pthread_rwlock_unlock(&a->lock);
	free(own);
	free(c.v);
	return ok;
}

int rbac_role_rules(struct rbac *a, const char *tenant, const char *ns, const char *kind, const char *name,
		    struct rbac_rule **ret, size_t *ret_n)
{
	bool cluster = kind && strcmp(kind, "ClusterRole") == 0;
	char *k = cluster ? xasprintf("C:%s", name) : xasprintf("R:%s/%s", ns ? ns : "", name);
	int rc = E_NOT_FOUND;
	*ret = NULL;
	*ret_n = 0;
	pthread_rwlock_rdlock(&a->lock);
	struct tenant *t = tenant_get(a, tenant, false);
	struct strmap_ent *e = t ? strmap_get(&t->roles, k) : NULL;
	if (e) {
		size_t n;
		const struct rbac_rule *rules = role_rules(e->val, &n);
		struct rbac_rule *c = n ? xcalloc(n, sizeof(*c)) : NULL;
		for (size_t i = 0; i < n; i++)
			rule_copy(&rules[i], &c[i]);
		*ret = c;
		*ret_n = n;
		rc = 0;
	}
	pthread_rwlock_unlock(&a->lock);
	free(k);
	return rc;
}
