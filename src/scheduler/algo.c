/* Filters, scores and the sampled decision. */
#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include "sched.h"
#include "ursa/jsonutil.h"
#include "ursa/xalloc.h"

#define MIN_FEASIBLE 100

size_t sched_nodes_to_find(size_t n, long long pct, long long max_nodes)
{
	if (n <= MIN_FEASIBLE || pct >= 100)
		return n;
	long long p = pct;
	if (p <= 0) {
		/* adaptive, as kube-scheduler: 50 % at 100 nodes down to 10 % at 5000, floor 5 % */
		p = 50 - (long long)(n / 125);
		if (p < 5)
			p = 5;
	}
	size_t k = (size_t)((unsigned long long)n * (unsigned long long)p / 100);
	if (k < MIN_FEASIBLE)
		k = MIN_FEASIBLE;
	/* the cap keeps one decision's cost flat once the region is large */
	if (max_nodes > 0 && k > (size_t)max_nodes)
		k = (size_t)max_nodes;
	return k > n ? n : k;
}

static bool has_value(const struct sched_req *r, const char *v)
{
	for (size_t i = 0; i < r->nvalues; i++)
		if (strcmp(r->values[i], v) == 0)
			return true;
	return false;
}

static bool req_matches(const struct sched_req *r, const json_t *labels)
{
	const char *v = json_str(labels, r->key);
	long long a, b;
	switch (r->op) {
	case SEL_IN:
		return v && has_value(r, v);
	case SEL_NOT_IN:
		return !v || !has_value(r, v);
	case SEL_EXISTS:
		return v != NULL;
	case SEL_NOT_EXISTS:
		return v == NULL;
	case SEL_GT:
	case SEL_LT:
		if (!v || r->nvalues != 1 || parse_int64(v, &a) != 0 || parse_int64(r->values[0], &b) != 0)
			return false;
		return r->op == SEL_GT ? a > b : a < b;
	}
	return false;
}

bool sched_term_matches(const struct sched_term *t, const json_t *labels)
{
	if (t->nreqs == 0)
		return false; /* an empty term matches no objects */
	for (size_t i = 0; i < t->nreqs; i++)
		if (!req_matches(&t->reqs[i], labels))
			return false;
	return true;
}

static bool selector_matches(const struct sched_node *n, const struct sched_pod *p)
{
	const char *k;
	const json_t *v;
	json_object_foreach((json_t *)p->node_selector, k, v) {
		const char *have = json_str(n->labels, k);
		if (!have || !json_is_string(v) || strcmp(have, json_string_value(v)) != 0)
			return false;
	}
	if (p->nterms == 0)
		return true;
	for (size_t i = 0; i < p->nterms; i++)
		if (sched_term_matches(&p->terms[i], n->labels))
			return true;
	return false;
}

static bool tol_matches(const struct sched_tol *o, const struct sched_taint *t)
{
	if (o->effect && o->effect != t->effect)
		return false;
	if (!o->key)
		return o->exists;
	if (strcmp(o->key, t->key) != 0)
		return false;
	return o->exists || strcmp(o->value, t->value) == 0;
}

bool sched_tolerates(const struct sched_pod *p, const struct sched_taint *t)
{
	for (size_t i = 0; i < p->ntols; i++)
		if (tol_matches(&p->tols[i], t))
			return true;
	return false;
}

static EVP_MAC_CTX *sig_key; /* SipHash keyed at first use; duplicated per hash, never changed */
static pthread_once_t sig_once = PTHREAD_ONCE_INIT;

static void sig_init(void)
{
	unsigned char key[16];
	size_t size = 8;
	OSSL_PARAM params[] = { OSSL_PARAM_construct_size_t(OSSL_MAC_PARAM_SIZE, &size), OSSL_PARAM_construct_end() };
	EVP_MAC *mac = EVP_MAC_fetch(NULL, "SIPHASH", NULL);
	sig_key = mac ? EVP_MAC_CTX_new(mac) : NULL;
	EVP_MAC_free(mac); /* the context holds its own reference */
	if (RAND_bytes(key, sizeof(key)) != 1 || !sig_key || EVP_MAC_init(sig_key, key, sizeof(key), params) != 1)
		abort(); /* SipHash is in OpenSSL 3's default provider */
	OPENSSL_cleanse(key, sizeof(key));
}

uint64_t sched_taints_sig(const struct sched_taint *t, size_t n)
{
	pthread_once(&sig_once, sig_init);
	EVP_MAC_CTX *c = EVP_MAC_CTX_dup(sig_key);
	for (size_t i = 0; c && i < n; i++) {
		unsigned char effect = (unsigned char)t[i].effect;
		EVP_MAC_update(c, (const unsigned char *)t[i].key, strlen(t[i].key) + 1);
		EVP_MAC_update(c, (const unsigned char *)t[i].value, strlen(t[i].value) + 1);
		EVP_MAC_update(c, &effect, 1);
	}
	unsigned char out[8];
	size_t len = 0;
	if (!c || EVP_MAC_final(c, out, &len, sizeof(out)) != 1 || len != sizeof(out))
		abort();
	EVP_MAC_CTX_free(c);
	uint64_t h;
	memcpy(&h, out, sizeof(h));
	return h ? h : 1;
}

static void judge_taints(const struct sched_node *n, const struct sched_pod *p, struct taint_verdict *v)
{
	v->sig = n->taints_sig;
	v->untolerated = NULL;
	v->prefer_untolerated = false;
	for (size_t i = 0; i < n->ntaints; i++) {
		const struct sched_taint *t = &n->taints[i];
		if (sched_tolerates(p, t))
			continue;
		if (t->effect == TAINT_PREFER_NO_SCHEDULE)
			v->prefer_untolerated = true;
		else if (!v->untolerated)
			v->untolerated = t->key;
	}
}

/* n's taints judged for p: from memo when its set was judged in this decision. tmp holds the
 * verdict when there is no room (or no memo). */
static const struct taint_verdict *taints_verdict(const struct sched_node *n, const struct sched_pod *p,
						  struct taint_memo *m, struct taint_verdict *tmp)
{
	bool memo = m && n->taints_sig;
	for (size_t i = 0; memo && i < m->n; i++)
		if (m->v[i].sig == n->taints_sig)
			return &m->v[i];
	struct taint_verdict *v = memo && m->n < SCHED_TAINT_MEMO ? &m->v[m->n++] : tmp;
	judge_taints(n, p, v);
	return v;
}

static bool over(long long alloc, long long used, long long req)
{
	return req > 0 && (used >= alloc || req > alloc - used);
}

bool sched_fits(const struct sched_node *n, const struct sched_res *req, enum sched_fail *ret_why)
{
	struct sched_res used = n->used;
	sched_res_add(&used, &n->other);
	enum sched_fail why = FAIL_NONE;
	if (over(n->alloc.pods, used.pods, req->pods))
		why = FAIL_PODS;
	else if (over(n->alloc.cpu_m, used.cpu_m, req->cpu_m))
		why = FAIL_CPU;
	else if (over(n->alloc.mem_m, used.mem_m, req->mem_m))
		why = FAIL_MEMORY;
	if (ret_why)
		*ret_why = why;
	return why == FAIL_NONE;
}

static const char *domain_of(const struct sched_node *n, const char *key)
{
	if (strcmp(key, SCHED_HOST_LABEL) == 0)
		return n->name;
	if (strcmp(key, SCHED_ZONE_LABEL) == 0)
		return *n->zone ? n->zone : NULL;
	return json_str(n->labels, key);
}

static long long domain_count(const struct spread_state *s, const char *domain)
{
	struct strmap_ent *e = strmap_get(&s->counts, domain);
	return e ? e->num : 0;
}

enum sched_fail sched_filter_node(const struct sched_node *n, const struct sched_pod *p,
				  const struct spread_state *spreads, struct taint_memo *memo, const char **ret_taint)
{
	enum sched_fail why;
	if (!n->ready || n->rm_down)
		return FAIL_NOT_READY;
	if (n->unschedulable)
		return FAIL_UNSCHEDULABLE;
	struct taint_verdict tmp;
	const struct taint_verdict *tv = n->ntaints ? taints_verdict(n, p, memo, &tmp) : NULL;
	if (tv && tv->untolerated) {
		if (ret_taint && !*ret_taint)
			*ret_taint = tv->untolerated;
		return FAIL_TAINT;
	}
	if (!selector_matches(n, p))
		return FAIL_SELECTOR;
	if (!sched_fits(n, &p->req, &why))
		return why;
	for (size_t i = 0; spreads && i < p->nspreads; i++) {
		const struct sched_spread *s = &p->spreads[i];
		if (!s->hard)
			continue;
		const char *d = domain_of(n, s->key);
		if (!d || domain_count(&spreads[i], d) + 1 - spreads[i].min > s->max_skew)
			return FAIL_SPREAD;
	}
	return FAIL_NONE;
}

static long long frac100(long long part, long long whole)
{
	if (whole <= 0)
		return 0;
	if (part <= 0)
		return 0;
	if (part >= whole)
		return 100;
	return (long long)((double)part * 100.0 / (double)whole);
}

long long sched_score_node(const struct sched_node *n, const struct sched_pod *p,
			   const struct spread_state *spreads, struct taint_memo *memo)
{
	struct sched_res after = n->used;
	sched_res_add(&after, &n->other);
	sched_res_add(&after, &p->req);
	long long cpu_used = frac100(after.cpu_m, n->alloc.cpu_m), mem_used = frac100(after.mem_m, n->alloc.mem_m);
	long long least = (200 - cpu_used - mem_used) / 2;
	long long diff = cpu_used > mem_used ? cpu_used - mem_used : mem_used - cpu_used;
	long long balanced = 100 - diff;
	long long score = least + balanced;

	long long spread = 0;
	for (size_t i = 0; spreads && i < p->nspreads; i++) {
		const char *d = domain_of(n, p->spreads[i].key);
		long long top = spreads[i].max + 1;
		spread += d ? (top - domain_count(&spreads[i], d)) * 100 / top : 0;
	}
	if (p->nspreads)
		score += 2 * spread / (long long)p->nspreads;

	long long wsum = 0, wmatch = 0;
	for (size_t i = 0; i < p->nprefs; i++) {
		wsum += p->prefs[i].weight;
		if (sched_term_matches(&p->prefs[i].term, n->labels))
			wmatch += p->prefs[i].weight;
	}
	if (wsum)
		score += 2 * wmatch * 100 / wsum;

	struct taint_verdict tmp;
	if (n->ntaints && taints_verdict(n, p, memo, &tmp)->prefer_untolerated)
		score -= 100;
	return score;
}

/* Spreading state ------------------------------------------------------------------------- */

static void count_domain(struct spread_state *s, const char *domain, long long by)
{
	struct strmap_ent *e = strmap_put(&s->counts, domain, NULL);
	e->num += by;
	if (e->num > s->max)
		s->max = e->num;
}

static void count_owner(struct sched_cache *c, const struct sched_spread *sp, const char *owner,
			struct spread_state *s)
{
	struct strmap_ent *o = strmap_get(&c->owners, owner);
	if (!o)
		return;
	struct strmap *per_node = o->val;
	size_t it = 0;
	for (struct strmap_ent *e = strmap_next(per_node, NULL, &it); e; e = strmap_next(per_node, e, &it)) {
		struct sched_node *n = sched_cache_node(c, e->key);
		const char *d = n && n->present ? domain_of(n, sp->key) : NULL;
		if (d && e->num > 0)
			count_domain(s, d, e->num);
	}
}

static void count_selector(struct sched_cache *c, const struct sched_pod *p, const struct sched_spread *sp,
			   struct spread_state *s)
{
	char *nskey = xasprintf("%s/%s", p->tenant, p->ns);
	struct strmap_ent *l = strmap_get(&c->ns, nskey);
	free(nskey);
	for (struct sched_cpod *cp = l ? ((struct sched_nslist *)l->val)->head : NULL; cp; cp = cp->ns_next) {
		if (!cp->node || !label_selector_matches(sp->sel, cp->labels))
			continue;
		struct sched_node *n = sched_cache_node(c, cp->node);
		const char *d = n && n->present ? domain_of(n, sp->key) : NULL;
		if (d)
			count_domain(s, d, 1);
	}
}

/* The smallest count over the domains a pod may land in. Hostname: 0 while some node has
 * none of the pods; zone: over the zones of the region (the one the pod pins, if any). */
static long long min_count(struct sched_cache *c, const struct sched_pod *p, const struct sched_spread *sp,
			   const struct spread_state *s)
{
	if (strcmp(sp->key, SCHED_HOST_LABEL) == 0) {
		if (s->counts.n < c->n)
			return 0;
	} else if (strcmp(sp->key, SCHED_ZONE_LABEL) == 0) {
		const char *pin = json_str(p->node_selector, SCHED_ZONE_LABEL);
		long long min = -1;
		size_t it = 0;
		for (struct strmap_ent *z = strmap_next(&c->zones, NULL, &it); z; z = strmap_next(&c->zones, z, &it)) {
			if (z->num <= 0 || (pin && strcmp(pin, z->key) != 0))
				continue;
			long long cnt = domain_count(s, z->key);
			if (min < 0 || cnt < min)
				min = cnt;
		}
		return min < 0 ? 0 : min;
	}
	long long min = -1;
	size_t it = 0;
	for (struct strmap_ent *e = strmap_next(&s->counts, NULL, &it); e; e = strmap_next(&s->counts, e, &it))
		if (min < 0 || e->num < min)
			min = e->num;
	return min < 0 ? 0 : min;
}

struct spread_state *sched_spread_compute(struct sched_cache *c, const struct sched_pod *p)
{
	if (!p->nspreads)
		return NULL;
	struct spread_state *st = xcalloc(p->nspreads, sizeof(*st));
	for (size_t i = 0; i < p->nspreads; i++) {
		const struct sched_spread *sp = &p->spreads[i];
		strmap_init(&st[i].counts);
		if (sp->by_owner)
			count_owner(c, sp, p->owner_uid, &st[i]);
		else
			count_selector(c, p, sp, &st[i]);
		st[i].min = min_count(c, p, sp, &st[i]);
	}
	return st;
}

void sched_spread_release(struct spread_state *s, size_t n)
{
	for (size_t i = 0; s && i < n; i++)
		strmap_release(&s[i].counts, NULL);
	free(s);
}

/* The decision ---------------------------------------------------------------------------- */

/* True when the pod would fit in the room we already reserved on n (no write needed). */
static bool fits_reserved(const struct sched_node *n, const struct sched_res *req)
{
	struct sched_res room, after = n->used;
	sched_reserved_effective(n, &room);
	sched_res_add(&after, req);
	return after.cpu_m <= room.cpu_m && after.mem_m <= room.mem_m && after.pods <= room.pods;
}

void sched_decide(struct sched_cache *c, const struct sched_pod *p, struct sched_result *ret)
{
	struct sched_result r = { NULL };
	size_t n = c->n, want = sched_nodes_to_find(n, c->pct, c->max_score_nodes);
	size_t start = n ? c->next_start % n : 0;
	struct spread_state *spreads = sched_spread_compute(c, p);
	const char *taint = NULL;
	struct taint_memo memo = { 0 };
	for (size_t i = 0; i < n && r.feasible < want; i++) {
		struct sched_node *node = c->list[(start + i) % n];
		enum sched_fail why = sched_filter_node(node, p, spreads, &memo, &taint);
		r.evaluated++;
		if (why != FAIL_NONE) {
			r.fails[why]++;
			continue;
		}
		r.feasible++;
		long long s = sched_score_node(node, p, spreads, &memo);
		if (c->reserved_bonus && fits_reserved(node, &p->req))
			s += p->nspreads ? c->reserved_bonus / 10 : c->reserved_bonus; /* spreading wins */
		if (!r.node || s > r.score) {
			r.node = node;
			r.score = s;
		}
	}
	if (n)
		c->next_start = (start + r.evaluated) % n;
	r.taint_key = taint ? xstrdup(taint) : NULL;
	sched_spread_release(spreads, p->nspreads);
	*ret = r;
}

void sched_result_release(struct sched_result *r)
{
	free(r->taint_key);
	r->taint_key = NULL;
}

void sched_result_message(const struct sched_result *r, size_t total, struct buf *out)
{
	static const char *const text[FAIL__N] = {
		[FAIL_NOT_READY] = "node(s) were not ready",
		[FAIL_UNSCHEDULABLE] = "node(s) were unschedulable",
		[FAIL_TAINT] = "node(s) had untolerated taint",
		[FAIL_SELECTOR] = "node(s) didn't match Pod's node affinity/selector",
		[FAIL_CPU] = "Insufficient cpu",
		[FAIL_MEMORY] = "Insufficient memory",
		[FAIL_PODS] = "Too many pods",
		[FAIL_SPREAD] = "node(s) didn't match pod topology spread constraints",
	};
	buf_addf(out, "0/%zu nodes are available", total);
	if (total == 0) {
		buf_adds(out, ": no nodes in the region's resource managers.");
		return;
	}
	const char *sep = ": ";
	for (int i = FAIL_NONE + 1; i < FAIL__N; i++) {
		if (!r->fails[i])
			continue;
		buf_addf(out, "%s%zu %s", sep, r->fails[i], text[i]);
		if (i == FAIL_TAINT && r->taint_key)
			buf_addf(out, " {%s}", r->taint_key);
		sep = ", ";
	}
	buf_addch(out, '.');
}
