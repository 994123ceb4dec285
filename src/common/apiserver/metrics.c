/* Prometheus metrics: requests by verb, resource and code with latency histograms, etcd
 * request latency by operation, open watches and cached objects. */
#include "internal.h"
#include "ursa/xalloc.h"
#include <stdlib.h>
#include <string.h>

static const double buckets_s[] = { 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5 };
#define NB (sizeof(buckets_s) / sizeof(buckets_s[0]))

struct series {
	const char *verb; /* static string */
	unsigned res;
	int code;
	unsigned long long count;
	double sum_s;
	unsigned long long bucket[NB];
};

struct metrics {
	pthread_mutex_t lock;
	struct series *req;
	size_t nreq, capreq;
	struct series *etcd; /* verb = operation */
	size_t netcd, capetcd;
};

struct metrics *metrics_new(size_t nres)
{
	struct metrics *m = xcalloc(1, sizeof(*m));
	pthread_mutex_init(&m->lock, NULL);
	return m;
}

void metrics_free(struct metrics *m)
{
	if (!m)
		return;
	free(m->req);
	free(m->etcd);
	pthread_mutex_destroy(&m->lock);
	free(m);
}

static struct series *find(struct series **arr, size_t *n, size_t *cap, const char *verb, unsigned res, int code)
{
	for (size_t i = 0; i < *n; i++)
		if ((*arr)[i].res == res && (*arr)[i].code == code && strcmp((*arr)[i].verb, verb) == 0)
			return &(*arr)[i];
	if (*n == *cap) {
		*cap = *cap ? *cap * 2 : 32;
		*arr = xrealloc(*arr, *cap * sizeof(**arr));
	}
	struct series *s = &(*arr)[(*n)++];
	memset(s, 0, sizeof(*s));
	s->verb = verb;
	s->res = res;
	s->code = code;
	return s;
}

static void observe(struct series *s, int64_t usec)
{
	double v = (double)usec / 1e6;
	s->count++;
	s->sum_s += v;
	for (size_t i = 0; i < NB; i++)
		if (v <= buckets_s[i])
			s->bucket[i]++;
}

void metrics_request(struct metrics *m, const char *verb, unsigned res_index, int code, int64_t usec)
{
	if (!m)
		return;
	pthread_mutex_lock(&m->lock);
	observe(find(&m->req, &m->nreq, &m->capreq, verb, res_index, code), usec);
	pthread_mutex_unlock(&m->lock);
}

void metrics_etcd(struct metrics *m, const char *op, int64_t usec)
{
	if (!m)
		return;
	pthread_mutex_lock(&m->lock);
	observe(find(&m->etcd, &m->netcd, &m->capetcd, op, 0, 0), usec);
	pthread_mutex_unlock(&m->lock);
}

static void histogram(struct buf *out, const char *name, const char *labels, const struct series *s)
{
	for (size_t i = 0; i < NB; i++)
		buf_addf(out, "%s_bucket{%s,le=\"%g\"} %llu\n", name, labels, buckets_s[i], s->bucket[i]);
	buf_addf(out, "%s_bucket{%s,le=\"+Inf\"} %llu\n", name, labels, s->count);
	buf_addf(out, "%s_sum{%s} %.6f\n%s_count{%s} %llu\n", name, labels, s->sum_s, name, labels, s->count);
}

/* The resource label: the table's plural, or "customresources" for every custom resource
 * (index nres: a tenant's kinds would make the label set unbounded). */
static const char *res_name(const struct apiserver *s, unsigned idx)
{
	return idx < s->nres ? s->res[idx].r->plural : "customresources";
}

void metrics_render(struct apiserver *s, struct buf *out)
{
	struct metrics *m = s->metrics;
	pthread_mutex_lock(&m->lock);
	buf_adds(out, "# HELP ursa_apiserver_request_total Requests by verb, resource and HTTP code.\n"
		      "# TYPE ursa_apiserver_request_total counter\n");
	for (size_t i = 0; i < m->nreq; i++)
		buf_addf(out, "ursa_apiserver_request_total{verb=\"%s\",resource=\"%s\",code=\"%d\"} %llu\n",
			 m->req[i].verb, res_name(s, m->req[i].res), m->req[i].code, m->req[i].count);
	buf_adds(out, "# HELP ursa_apiserver_request_duration_seconds Request latency.\n"
		      "# TYPE ursa_apiserver_request_duration_seconds histogram\n");
	for (size_t i = 0; i < m->nreq; i++) {
		char labels[256];
		snprintf(labels, sizeof(labels), "verb=\"%s\",resource=\"%s\",code=\"%d\"", m->req[i].verb,
			 res_name(s, m->req[i].res), m->req[i].code);
		histogram(out, "ursa_apiserver_request_duration_seconds", labels, &m->req[i]);
	}
	buf_adds(out, "# HELP ursa_etcd_request_duration_seconds etcd request latency by operation.\n"
		      "# TYPE ursa_etcd_request_duration_seconds histogram\n");
	for (size_t i = 0; i < m->netcd; i++) {
		char labels[128];
		snprintf(labels, sizeof(labels), "operation=\"%s\"", m->etcd[i].verb);
		histogram(out, "ursa_etcd_request_duration_seconds", labels, &m->etcd[i]);
	}
	pthread_mutex_unlock(&m->lock);
	buf_addf(out, "# HELP ursa_apiserver_open_watches Open watch streams.\n# TYPE ursa_apiserver_open_watches gauge\n"
		      "ursa_apiserver_open_watches %ld\n", wcache_watchers_total());
	buf_adds(out, "# HELP ursa_apiserver_cache_objects Objects in each watch cache.\n"
		      "# TYPE ursa_apiserver_cache_objects gauge\n");
	for (size_t i = 0; i < s->nres; i++)
		if (s->res[i].cache)
			buf_addf(out, "ursa_apiserver_cache_objects{resource=\"%s\"} %zu\n", s->res[i].r->plural,
			 wcache_size(s->res[i].cache));
	unsigned long long txns, ops, used, missed;
	wcache_hint_stats(&used, &missed);
	buf_addf(out, "# HELP ursa_apiserver_cache_write_hints_total Watch events of this server's own writes, by "
		      "whether the cache built them from the written tree (used) or parsed them (missed).\n"
		      "# TYPE ursa_apiserver_cache_write_hints_total counter\n"
		      "ursa_apiserver_cache_write_hints_total{result=\"used\"} %llu\n"
		      "ursa_apiserver_cache_write_hints_total{result=\"missed\"} %llu\n",
		 used, missed);
	wcache_tree_stats(&used, &missed);
	buf_addf(out, "# HELP ursa_apiserver_cache_trees_total Updates that read the object from the parsed tree of "
		      "a recent write (used) or had to parse its cached text (missed).\n"
		      "# TYPE ursa_apiserver_cache_trees_total counter\n"
		      "ursa_apiserver_cache_trees_total{result=\"used\"} %llu\n"
		      "ursa_apiserver_cache_trees_total{result=\"missed\"} %llu\n",
		 used, missed);
	buf_adds(out, "# HELP ursa_apiserver_cache_tree_bytes Estimated memory of the parsed trees each watch cache "
		      "keeps (--watch-cache-trees-mb).\n# TYPE ursa_apiserver_cache_tree_bytes gauge\n");
	for (size_t i = 0; i < s->nres; i++)
		if (s->res[i].cache)
			buf_addf(out, "ursa_apiserver_cache_tree_bytes{resource=\"%s\"} %zu\n", s->res[i].r->plural,
			 wcache_tree_bytes(s->res[i].cache));
	etcd_write_stats(s->etcd, &txns, &ops);
	buf_addf(out, "# HELP ursa_etcd_write_txns_total etcd txns carrying conditional writes.\n# TYPE ursa_etcd_write_txns_total counter\n"
		      "ursa_etcd_write_txns_total %llu\n# HELP ursa_etcd_writes_total Conditional writes sent (group-committed).\n"
		      "# TYPE ursa_etcd_writes_total counter\nursa_etcd_writes_total %llu\n", txns, ops);
	buf_addf(out, "# HELP ursa_etcd_up Whether etcd answers health checks.\n# TYPE ursa_etcd_up gauge\nursa_etcd_up %d\n",
		 atomic_load(&s->etcd_ok) ? 1 : 0);
	fairshare_render(s, out);
}
