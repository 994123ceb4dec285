/* ursa-region's pure parts: region.env, pacing, histograms, SLI scopes, TSV lines, the
 * acknowledged-writes log, JSON subsets (region.h). */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "region/region.h"
#include "ursa/jsonutil.h"
#include "ursa/xalloc.h"

#define ENV_MAX (1u << 20)
#define ACK_MAX_DEPTH 32

/* ---- region.env ---- */

void region_env_release(struct region_env *e)
{
	free(e->gateway_url);
	free(e->ca_file);
	free(e->signing_key);
	free(e->admin_token_file);
	free(e->tp_urls);
	free(e->rm_urls);
	memset(e, 0, sizeof(*e));
	e->nodes = e->tenants = -1;
}

static int env_fail(char **ret_err, size_t line, const char *what)
{
	*ret_err = xasprintf("region.env line %zu: %s", line, what);
	return -1;
}

static void env_set(struct region_env *e, const char *key, size_t klen, char *val, int *bad_num)
{
	struct {
		const char *name;
		char **slot;
	} strs[] = {
		{"GATEWAY_URL", &e->gateway_url},	    {"CA_FILE", &e->ca_file}, {"SIGNING_KEY", &e->signing_key},
		{"ADMIN_TOKEN_FILE", &e->admin_token_file}, {"TP_URLS", &e->tp_urls}, {"RM_URLS", &e->rm_urls},
	};
	for (size_t i = 0; i < sizeof(strs) / sizeof(strs[0]); i++) {
		if (strlen(strs[i].name) == klen && memcmp(strs[i].name, key, klen) == 0) {
			free(*strs[i].slot);
			*strs[i].slot = val;
			return;
		}
	}
	long long *num = klen == 5 && memcmp(key, "NODES", 5) == 0     ? &e->nodes
			 : klen == 7 && memcmp(key, "TENANTS", 7) == 0 ? &e->tenants
								       : NULL;
	if (num) {
		long long v;
		if (parse_int64(val, &v) < 0 || v < 0)
			*bad_num = 1;
		else
			*num = v;
	}
	free(val);
}

static bool key_char(char c, bool first)
{
	return c == '_' || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (!first && c >= '0' && c <= '9');
}

int region_env_parse(const char *text, size_t len, struct region_env *ret, char **ret_err)
{
	struct region_env e = {0};
	size_t i = 0, line = 1;

	e.nodes = e.tenants = -1;
	*ret_err = NULL;
	if (len > ENV_MAX) {
		*ret_err = xstrdup("region.env: larger than 1 MiB");
		return -1;
	}
	while (i < len) {
		char c = text[i];
		if (c == '\n') {
			line++;
			i++;
			continue;
		}
		if (c == ' ' || c == '\t' || c == '\r' || c == ';') {
			i++;
			continue;
		}
		if (c == '#') {
			while (i < len && text[i] != '\n')
				i++;
			continue;
		}
		size_t k = i;
		while (i < len && key_char(text[i], i == k))
			i++;
		size_t klen = i - k;
		if (klen == 6 && memcmp(text + k, "export", 6) == 0 && i < len && (text[i] == ' ' || text[i] == '\t'))
			continue;
		if (klen == 0 || i >= len || text[i] != '=') {
			region_env_release(&e);
			return env_fail(ret_err, line, "expected KEY=VALUE");
		}
		i++;
		struct buf v = BUF_INIT;
		while (i < len && text[i] != ' ' && text[i] != '\t' && text[i] != '\n' && text[i] != '\r' &&
		       text[i] != ';') {
			char q = text[i];
			if (q == '#' && v.len == 0)
				break;
			if (q != '\'' && q != '"') {
				if (q == '\\' && i + 1 < len && text[i + 1] != '\n')
					i++;
				buf_addch(&v, text[i++]);
				continue;
			}
			i++;
			while (i < len && text[i] != q) {
				if (q == '"' && text[i] == '\\' && i + 1 < len)
					i++;
				if (text[i] == '\n')
					line++;
				buf_addch(&v, text[i++]);
			}
			if (i >= len) {
				buf_release(&v);
				region_env_release(&e);
				return env_fail(ret_err, line, "unterminated quote");
			}
			i++;
		}
		int bad = 0;
		buf_addch(&v, '\0');
		env_set(&e, text + k, klen, buf_detach(&v, NULL), &bad);
		if (bad) {
			region_env_release(&e);
			return env_fail(ret_err, line, "NODES and TENANTS must be whole numbers");
		}
	}
	*ret = e;
	return 0;
}

char *region_tenant_name(const char *prefix, long long i)
{
	return xasprintf("%s-%05lld", prefix, i);
}

/* ---- pacing ---- */

long long pace_total(const struct pace *p)
{
	double a = p->rate > 0 && p->duration_s > 0 ? p->rate * p->duration_s : 0;
	double b = p->burst_rate > 0 && p->burst_s > 0 ? p->burst_rate * p->burst_s : 0;
	return (long long)(a + 0.5) + (long long)(b + 0.5);
}

int64_t pace_due_us(const struct pace *p, long long pods)
{
	long long steady = p->rate > 0 && p->duration_s > 0 ? (long long)(p->rate * p->duration_s + 0.5) : 0;
	double steady_s = steady > 0 ? p->duration_s : 0;

	if (pods < 0)
		pods = 0;
	if (pods < steady)
		return (int64_t)((double)pods * 1e6 / p->rate);
	long long burst = pace_total(p) - steady;
	if (burst <= 0)
		return (int64_t)(steady_s * 1e6);
	long long k = pods - steady;
	if (k > burst)
		k = burst;
	return (int64_t)(steady_s * 1e6 + (double)k * 1e6 / p->burst_rate);
}

/* ---- histogram ---- */

static const double HIST_BASE = 1.02;

int hist_bucket(int64_t v)
{
	if (v <= 0)
		return 0;
	int b = 1 + (int)floor(log((double)v) / log(HIST_BASE));
	/* floating error at exact powers: keep v inside [base^(b-1), base^b) */
	while (b > 1 && (double)v < pow(HIST_BASE, b - 1))
		b--;
	while ((double)v >= pow(HIST_BASE, b))
		b++;
	return b < HIST_BUCKETS ? b : HIST_BUCKETS - 1;
}

int64_t hist_bucket_upper(int b)
{
	if (b <= 0)
		return 0;
	return (int64_t)ceil(pow(HIST_BASE, b)) - 1;
}

void hist_add(struct hist *h, int64_t v)
{
	if (v < 0)
		v = 0;
	h->b[hist_bucket(v)]++;
	h->n++;
	h->sum += (double)v;
	if (v > h->max)
		h->max = v;
}

void hist_merge(struct hist *dst, const struct hist *src)
{
	for (int i = 0; i < HIST_BUCKETS; i++)
		dst->b[i] += src->b[i];
	dst->n += src->n;
	dst->sum += src->sum;
	if (src->max > dst->max)
		dst->max = src->max;
}

int64_t hist_quantile(const struct hist *h, double q)
{
	if (h->n == 0)
		return 0;
	if (q < 0)
		q = 0;
	if (q > 1)
		q = 1;
	uint64_t rank = (uint64_t)ceil(q * (double)h->n), seen = 0;
	if (rank == 0)
		rank = 1;
	for (int b = 0; b < HIST_BUCKETS; b++) {
		seen += h->b[b];
		if (seen >= rank) {
			int64_t up = hist_bucket_upper(b);
			return up < h->max ? up : h->max;
		}
	}
	return h->max;
}

/* ---- SLI scope ---- */

const char *sli_scope_name(enum sli_scope s)
{
	return s == SLI_RESOURCE ? "resource" : s == SLI_NAMESPACE ? "namespace" : "cluster";
}

bool sli_mutating(const char *verb)
{
	return !strcmp(verb, "create") || !strcmp(verb, "update") || !strcmp(verb, "patch") || !strcmp(verb, "delete");
}

#define MAX_SEGS 12

enum sli_scope sli_classify(const char *verb, const char *path, char *resource, size_t rsz)
{
	const char *seg[MAX_SEGS];
	size_t seglen[MAX_SEGS], n = 0, end = strcspn(path, "?");
	const char *name = NULL, *ns = NULL;

	if (rsz)
		resource[0] = '\0';
	for (size_t i = 0; i < end && n < MAX_SEGS;) {
		while (i < end && path[i] == '/')
			i++;
		size_t s = i;
		while (i < end && path[i] != '/')
			i++;
		if (i > s) {
			seg[n] = path + s;
			seglen[n++] = i - s;
		}
	}
#define SEG_IS(k, lit) (seglen[k] == sizeof(lit) - 1 && memcmp(seg[k], lit, sizeof(lit) - 1) == 0)
	size_t k = 0;
	if (n > 0 && SEG_IS(0, "api"))
		k = 2;
	else if (n > 0 && SEG_IS(0, "apis"))
		k = 3;
	if (k + 2 < n && SEG_IS(k, "tenants"))
		k += 2; /* /tenants/T/<more>: the tenant's scope; /tenants[/T] is the tenants resource */
	if (k + 2 < n && SEG_IS(k, "namespaces")) {
		ns = seg[k + 1];
		k += 2;
	}
	if (k < n && rsz) {
		size_t l = seglen[k] < rsz - 1 ? seglen[k] : rsz - 1;
		memcpy(resource, seg[k], l);
		resource[l] = '\0';
		if (k + 2 < n) { /* subresource */
			size_t have = strlen(resource);
			int w = snprintf(resource + have, rsz - have, "/%.*s", (int)seglen[k + 2], seg[k + 2]);
			(void)w;
		}
	}
	if (k + 1 < n)
		name = seg[k + 1];
#undef SEG_IS
	if (name || !strcmp(verb, "create"))
		return SLI_RESOURCE;
	return ns ? SLI_NAMESPACE : SLI_CLUSTER;
}

/* ---- TSV ---- */

void tsv_field(struct buf *out, const char *s)
{
	for (; s && *s; s++)
		buf_addch(out, *s == '\t' || *s == '\n' || *s == '\r' ? ' ' : *s);
}

void tsv_call_line(struct buf *out, int64_t t_ms, const char *verb, const char *resource, enum sli_scope scope,
		   int64_t latency_us, int code)
{
	buf_addf(out, "%lld\t", (long long)t_ms);
	tsv_field(out, verb);
	buf_addch(out, '\t');
	tsv_field(out, resource);
	buf_addf(out, "\t%s\t%lld\t%d\n", sli_scope_name(scope), (long long)latency_us, code < 100 ? 0 : code);
}

void tsv_pod_line(struct buf *out, const char *tenant, const char *ns, const char *name, const char *uid,
		  int64_t created_ms, int64_t running_ms, const char *node)
{
	const char *f[] = {tenant, ns, name, uid};
	for (size_t i = 0; i < 4; i++) {
		tsv_field(out, f[i]);
		buf_addch(out, '\t');
	}
	buf_addf(out, "%lld\t", (long long)created_ms);
	if (running_ms >= 0)
		buf_addf(out, "%lld", (long long)running_ms);
	buf_addch(out, '\t');
	tsv_field(out, node);
	buf_addch(out, '\n');
}

/* ---- acknowledged writes ---- */

void ack_release(struct ack *a)
{
	free(a->op);
	free(a->kind);
	free(a->tenant);
	free(a->ns);
	free(a->name);
	free(a->uid);
	free(a->rv);
	json_decref(a->content);
	memset(a, 0, sizeof(*a));
}

static char *ack_str(json_t *o, const char *key, bool required, bool *ok)
{
	json_t *v = json_object_get(o, key);
	if (!v || json_is_null(v)) {
		if (required)
			*ok = false;
		return NULL;
	}
	if (!json_is_string(v)) {
		*ok = false;
		return NULL;
	}
	return xstrdup(json_string_value(v));
}

int ack_parse(const char *line, size_t len, struct ack *ret)
{
	json_t *o = json_parse_limited(line, len, ACK_MAX_DEPTH, NULL);
	struct ack a = {0};
	bool ok = json_is_object(o);

	if (ok) {
		a.op = ack_str(o, "op", true, &ok);
		a.kind = ack_str(o, "kind", true, &ok);
		a.tenant = ack_str(o, "tenant", true, &ok);
		a.ns = ack_str(o, "ns", true, &ok);
		a.name = ack_str(o, "name", true, &ok);
		a.uid = ack_str(o, "uid", false, &ok);
		a.rv = ack_str(o, "rv", false, &ok);
		json_t *c = json_object_get(o, "content");
		if (c && !json_is_null(c))
			a.content = json_incref(c);
		if (ok && strcmp(a.op, "put") != 0 && strcmp(a.op, "delete") != 0 && strcmp(a.op, "unknown") != 0)
			ok = false;
		if (ok && (!*a.kind || !*a.tenant || !*a.name))
			ok = false;
	}
	json_decref(o);
	if (!ok) {
		ack_release(&a);
		return -1;
	}
	*ret = a;
	return 0;
}

void ack_format(struct buf *out, const struct ack *a)
{
	json_t *o = json_pack("{s:s, s:s, s:s, s:s, s:s}", "op", a->op, "kind", a->kind, "tenant", a->tenant, "ns",
			      a->ns ? a->ns : "", "name", a->name);
	if (a->uid)
		json_object_set_new(o, "uid", json_string(a->uid));
	if (a->rv)
		json_object_set_new(o, "rv", json_string(a->rv));
	if (a->content)
		json_object_set(o, "content", a->content);
	char *s = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
	buf_adds(out, s);
	free(s);
	json_decref(o);
}

void ack_fold(struct strmap *m, struct ack *a)
{
	char *key = xasprintf("%s/%s/%s/%s", a->kind, a->tenant, a->ns ? a->ns : "", a->name);
	bool created;
	struct strmap_ent *e = strmap_put(m, key, &created);
	struct ack *cur = e->val;

	free(key);
	if (!cur) {
		cur = xcalloc(1, sizeof(*cur));
		e->val = cur;
	} else if (!strcmp(a->op, "put") && !a->uid && cur->uid && !strcmp(cur->op, "put")) {
		/* an update without a uid keeps the object's */
		a->uid = xstrdup(cur->uid);
	}
	if (!strcmp(a->op, "delete") && !a->uid && cur->uid)
		a->uid = xstrdup(cur->uid);
	ack_release(cur);
	*cur = *a;
	memset(a, 0, sizeof(*a));
}

static void ack_free(void *v)
{
	ack_release(v);
	free(v);
}

void ack_fold_release(struct strmap *m)
{
	strmap_release(m, ack_free);
}

/* ---- JSON subset ---- */

bool json_subset(const json_t *given, const json_t *have)
{
	if (!given)
		return true;
	if (!have)
		return false;
	if (json_is_number(given) && json_is_number(have))
		return json_number_value(given) == json_number_value(have);
	if (json_typeof(given) != json_typeof(have))
		return false;
	if (json_is_object(given)) {
		const char *k;
		json_t *v;
		json_object_foreach ((json_t *)given, k, v) {
			if (!json_subset(v, json_object_get(have, k)))
				return false;
		}
		return true;
	}
	if (json_is_array(given)) {
		if (json_array_size(given) != json_array_size(have))
			return false;
		for (size_t i = 0; i < json_array_size(given); i++)
			if (!json_subset(json_array_get(given, i), json_array_get(have, i)))
				return false;
		return true;
	}
	return json_equal((json_t *)given, (json_t *)have);
}
