/* A Pod object turned into what the filters and scores need. */
#include <stdlib.h>
#include <string.h>
#include "sched.h"
#include "ursa/errors.h"
#include "ursa/jsonutil.h"
#include "ursa/kinds.h"
#include "ursa/xalloc.h"

static long long sat_add(long long a, long long b)
{
	if (b > 0 && a > INT64_MAX - b)
		return INT64_MAX;
	return a + b;
}

void sched_res_add(struct sched_res *a, const struct sched_res *b)
{
	a->cpu_m = sat_add(a->cpu_m, b->cpu_m);
	a->mem_m = sat_add(a->mem_m, b->mem_m);
	a->pods = sat_add(a->pods, b->pods);
}

void sched_res_sub(struct sched_res *a, const struct sched_res *b)
{
	a->cpu_m = a->cpu_m > b->cpu_m ? a->cpu_m - b->cpu_m : 0;
	a->mem_m = a->mem_m > b->mem_m ? a->mem_m - b->mem_m : 0;
	a->pods = a->pods > b->pods ? a->pods - b->pods : 0;
}

int sched_pod_requests(const json_t *obj, struct sched_res *ret)
{
	struct pod_requests r;
	int rc = pod_requests(obj, &r, NULL);
	if (rc == 0)
		*ret = (struct sched_res){ r.cpu_m, r.mem_m, 1 };
	return rc;
}

static int parse_op(const char *s, enum sel_op *ret)
{
	static const struct {
		const char *name;
		enum sel_op op;
	} ops[] = { { "In", SEL_IN }, { "NotIn", SEL_NOT_IN }, { "Exists", SEL_EXISTS },
		    { "DoesNotExist", SEL_NOT_EXISTS }, { "Gt", SEL_GT }, { "Lt", SEL_LT } };
	for (size_t i = 0; s && i < ARRAY_SIZE(ops); i++)
		if (strcmp(s, ops[i].name) == 0) {
			*ret = ops[i].op;
			return 0;
		}
	return E_INVALID;
}

/* A NodeSelectorTerm: matchExpressions (matchFields on metadata.name become a hostname
 * requirement, since node names and hostname labels agree for Ursa's kubelets). */
static int parse_term(const json_t *t, struct sched_term *ret, struct buf *err)
{
	const json_t *lists[2] = { json_object_get(t, "matchExpressions"), json_object_get(t, "matchFields") };
	size_t total = json_array_size(lists[0]) + json_array_size(lists[1]);
	if (total > SCHED_MAX_ITEMS) {
		buf_adds(err, "too many node selector requirements");
		return E_INVALID;
	}
	ret->reqs = xcalloc(total ? total : 1, sizeof(*ret->reqs));
	ret->nreqs = 0;
	for (int l = 0; l < 2; l++) {
		size_t i;
		const json_t *e;
		json_array_foreach(lists[l], i, e) {
			struct sched_req *r = &ret->reqs[ret->nreqs];
			const char *key = json_str(e, "key");
			const json_t *vals = json_object_get(e, "values");
			if (!key || parse_op(json_str(e, "operator"), &r->op) != 0 ||
			    json_array_size(vals) > SCHED_MAX_ITEMS) {
				buf_adds(err, "invalid node selector requirement");
				return E_INVALID;
			}
			r->key = xstrdup(l == 1 && strcmp(key, "metadata.name") == 0 ? SCHED_HOST_LABEL : key);
			r->values = xcalloc(json_array_size(vals) + 1, sizeof(char *));
			ret->nreqs++;
			size_t j;
			const json_t *v;
			json_array_foreach(vals, j, v)
				if (json_is_string(v))
					r->values[r->nvalues++] = xstrdup(json_string_value(v));
		}
	}
	return 0;
}

static void term_release(struct sched_term *t)
{
	for (size_t i = 0; i < t->nreqs; i++) {
		for (size_t j = 0; j < t->reqs[i].nvalues; j++)
			free(t->reqs[i].values[j]);
		free(t->reqs[i].values);
		free(t->reqs[i].key);
	}
	free(t->reqs);
}

static int parse_affinity(const json_t *spec, struct sched_pod *p, struct buf *err)
{
	const json_t *na = json_path(spec, "affinity.nodeAffinity");
	const json_t *req = json_path(na, "requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms");
	const json_t *pref = json_object_get(na, "preferredDuringSchedulingIgnoredDuringExecution");
	size_t i;
	const json_t *t;
	if (json_array_size(req) > SCHED_MAX_ITEMS || json_array_size(pref) > SCHED_MAX_ITEMS) {
		buf_adds(err, "too many node affinity terms");
		return E_INVALID;
	}
	p->terms = xcalloc(json_array_size(req) + 1, sizeof(*p->terms));
	json_array_foreach(req, i, t) {
		if (parse_term(t, &p->terms[p->nterms++], err))
			return E_INVALID;
	}
	p->prefs = xcalloc(json_array_size(pref) + 1, sizeof(*p->prefs));
	json_array_foreach(pref, i, t) {
		struct sched_pref *pr = &p->prefs[p->nprefs++];
		const json_t *w = json_object_get(t, "weight");
		pr->weight = json_is_integer(w) ? (long long)json_integer_value(w) : 1;
		if (pr->weight < 1 || pr->weight > 100) {
			buf_adds(err, "preferred node affinity weight must be 1..100");
			return E_INVALID;
		}
		if (parse_term(json_object_get(t, "preference"), &pr->term, err))
			return E_INVALID;
	}
	return 0;
}

static int parse_effect(const char *s)
{
	if (!s || !*s)
		return 0;
	if (strcmp(s, "NoSchedule") == 0)
		return TAINT_NO_SCHEDULE;
	if (strcmp(s, "PreferNoSchedule") == 0)
		return TAINT_PREFER_NO_SCHEDULE;
	if (strcmp(s, "NoExecute") == 0)
		return TAINT_NO_EXECUTE;
	return -1;
}

static int parse_tolerations(const json_t *spec, struct sched_pod *p, struct buf *err)
{
	const json_t *tols = json_object_get(spec, "tolerations");
	size_t i;
	const json_t *t;
	if (json_array_size(tols) > SCHED_MAX_ITEMS) {
		buf_adds(err, "too many tolerations");
		return E_INVALID;
	}
	p->tols = xcalloc(json_array_size(tols) + 1, sizeof(*p->tols));
	json_array_foreach(tols, i, t) {
		struct sched_tol *o = &p->tols[p->ntols];
		const char *op = json_str(t, "operator");
		const char *key = json_str(t, "key");
		o->effect = parse_effect(json_str(t, "effect"));
		o->exists = op && strcmp(op, "Exists") == 0;
		if (o->effect < 0 || (op && !o->exists && strcmp(op, "Equal") != 0)) {
			buf_adds(err, "invalid toleration");
			return E_INVALID;
		}
		o->key = key && *key ? xstrdup(key) : NULL;
		o->value = xstrdup(json_str(t, "value") ? json_str(t, "value") : "");
		p->ntols++;
	}
	return 0;
}

static int parse_spreads(const json_t *spec, struct sched_pod *p, struct buf *err)
{
	const json_t *cs = json_object_get(spec, "topologySpreadConstraints");
	size_t i, n = json_array_size(cs);
	const json_t *c;
	if (n > SCHED_MAX_ITEMS) {
		buf_adds(err, "too many topology spread constraints");
		return E_INVALID;
	}
	/* no constraints of its own and owned by a ReplicaSet: spread across zones, then hosts */
	if (n == 0 && p->owner_uid) {
		p->spreads = xcalloc(2, sizeof(*p->spreads));
		p->spreads[0] = (struct sched_spread){ .key = xstrdup(SCHED_ZONE_LABEL), .max_skew = 1, .by_owner = true };
		p->spreads[1] = (struct sched_spread){ .key = xstrdup(SCHED_HOST_LABEL), .max_skew = 1, .by_owner = true };
		p->nspreads = 2;
		return 0;
	}
	p->spreads = xcalloc(n + 1, sizeof(*p->spreads));
	json_array_foreach(cs, i, c) {
		struct sched_spread *s = &p->spreads[p->nspreads];
		const char *key = json_str(c, "topologyKey");
		const char *when = json_str(c, "whenUnsatisfiable");
		const json_t *skew = json_object_get(c, "maxSkew");
		if (!key || !json_is_integer(skew) || json_integer_value(skew) < 1) {
			buf_adds(err, "invalid topology spread constraint");
			return E_INVALID;
		}
		s->key = xstrdup(key);
		p->nspreads++;
		s->max_skew = (long long)json_integer_value(skew);
		s->hard = !when || strcmp(when, "ScheduleAnyway") != 0;
		if (label_selector_from_json(json_object_get(c, "labelSelector"), &s->sel, err) != 0)
			return E_INVALID;
	}
	return 0;
}

static const char *rs_owner_uid(const json_t *obj)
{
	return json_controller_uid(obj, "ReplicaSet");
}

int sched_pod_parse(const json_t *obj, struct sched_pod *ret, struct buf *err)
{
	struct sched_pod p = { NULL };
	const json_t *spec = json_object_get(obj, "spec");
	const json_t *sel = json_object_get(spec, "nodeSelector");
	const char *t = json_path_str(obj, "metadata.tenant"), *ns = json_path_str(obj, "metadata.namespace");
	const char *name = json_path_str(obj, "metadata.name");
	p.tenant = xstrdup(t ? t : "");
	p.ns = xstrdup(ns ? ns : "");
	p.name = xstrdup(name ? name : "");
	p.key = xasprintf("%s/%s/%s", p.tenant, p.ns, p.name);
	p.owner_uid = rs_owner_uid(obj) ? xstrdup(rs_owner_uid(obj)) : NULL;
	p.labels = json_incref(json_path(obj, "metadata.labels"));
	if (json_is_object(sel) && json_object_size(sel) > 0)
		p.node_selector = json_incref((json_t *)sel);
	if (sched_pod_requests(obj, &p.req) != 0) {
		buf_adds(err, "invalid resource quantity");
		goto bad;
	}
	if (parse_affinity(spec, &p, err) || parse_tolerations(spec, &p, err) || parse_spreads(spec, &p, err))
		goto bad;
	*ret = p;
	return 0;
bad:
	sched_pod_release(&p);
	return E_INVALID;
}

void sched_pod_release(struct sched_pod *p)
{
	for (size_t i = 0; i < p->nterms; i++)
		term_release(&p->terms[i]);
	for (size_t i = 0; i < p->nprefs; i++)
		term_release(&p->prefs[i].term);
	for (size_t i = 0; i < p->ntols; i++) {
		free(p->tols[i].key);
		free(p->tols[i].value);
	}
	for (size_t i = 0; i < p->nspreads; i++) {
		free(p->spreads[i].key);
		label_selector_free(p->spreads[i].sel);
	}
	free(p->terms);
	free(p->prefs);
	free(p->tols);
	free(p->spreads);
	json_decref(p->labels);
	json_decref(p->node_selector);
	free(p->key);
	free(p->tenant);
	free(p->ns);
	free(p->name);
	free(p->owner_uid);
	*p = (struct sched_pod){ NULL };
}
