/*
 * ursa-gwmap: the gateway's tenant -> partition map at scale (issue 6).
 *
 *   ursa-gwmap seed --etcd URL [--prefix P] --count N [--partitions K] [--clients C] [--txn-ops O]
 *       writes K tenant partitions and N tenant records t0000000.. into a gateway etcd, in txns
 *       of O puts (default 128, etcd's --max-txn-ops) through the JSON gateway, C clients in parallel.
 *   ursa-gwmap load --etcd URL [--prefix P] [--rounds R] [--lookups L] [--page K]
 *       loads the registry the way ursa-gateway does (registry_new + registry_start: the paged
 *       range and the watch; pages of K keys instead of REGISTRY_PAGE if given), reporting the
 *       time, the resident memory growth (VmRSS, VmHWM of this process) and the tenants loaded; then the cost of registry_tenant_partition() over
 *       random existing names on the warm map, with 1 and 2 threads (median of R rounds), in thread
 *       CPU time (robust to other processes on a shared machine; cache effects remain).
 *
 * Ends with a line "RESULT {json}". Links the gateway's library (src/gateway, all but main.c).
 */
#define _GNU_SOURCE
#include <curl/curl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "gw.h"
#include "ursa/buf.h"
#include "ursa/etcd.h"
#include "ursa/log.h"
#include "ursa/xalloc.h"

#define MAX_THREADS 16

struct args {
	const char *etcd, *prefix;
	long long count, partitions, clients, rounds, lookups, txn_ops, page;
};

static int64_t clock_ns(clockid_t id)
{
	struct timespec ts;
	clock_gettime(id, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int64_t now_ns(void)
{
	return clock_ns(CLOCK_MONOTONIC);
}

static void b64(struct buf *out, const char *s, size_t n)
{
	static const char tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	const unsigned char *u = (const unsigned char *)s;
	size_t i;
	for (i = 0; i + 2 < n; i += 3) {
		uint32_t v = (uint32_t)u[i] << 16 | (uint32_t)u[i + 1] << 8 | u[i + 2];
		char q[4] = { tab[v >> 18], tab[(v >> 12) & 63], tab[(v >> 6) & 63], tab[v & 63] };
		buf_add(out, q, 4);
	}
	if (i < n) {
		uint32_t v = (uint32_t)u[i] << 16 | (i + 1 < n ? (uint32_t)u[i + 1] << 8 : 0);
		char q[4] = { tab[v >> 18], tab[(v >> 12) & 63], i + 1 < n ? tab[(v >> 6) & 63] : '=', '=' };
		buf_add(out, q, 4);
	}
}

static void tenant_name(struct buf *b, long long i)
{
	buf_addf(b, "t%07lld", i);
}

/* ---- seed ---------------------------------------------------------------------------------- */
struct seeder {
	const struct args *a;
	long long from, to;
	pthread_t tid;
	int failed;
};

static size_t discard(char *d, size_t s, size_t n, void *ud)
{
	(void)d;
	struct buf *b = ud;
	if (b->len < 4096)
		buf_add(b, d, s * n < 4096 ? s * n : 4096);
	return s * n;
}

static int post(CURL *c, const char *url, const struct buf *body, struct buf *resp)
{
	buf_reset(resp);
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_POSTFIELDS, body->ptr);
	curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)body->len);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, discard);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, resp);
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 60000L);
	long code = 0;
	if (curl_easy_perform(c) != CURLE_OK)
		return -1;
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
	return code == 200 ? 0 : -1;
}

static void add_put(struct buf *txn, const char *key, const char *val)
{
	buf_adds(txn, txn->ptr[txn->len - 1] == '[' ? "{\"request_put\":{\"key\":\"" : ",{\"request_put\":{\"key\":\"");
	b64(txn, key, strlen(key));
	buf_adds(txn, "\",\"value\":\"");
	b64(txn, val, strlen(val));
	buf_adds(txn, "\"}}");
}

static void *seed_main(void *ud)
{
	struct seeder *s = ud;
	CURL *c = curl_easy_init();
	struct curl_slist *h = curl_slist_append(NULL, "Expect:");
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_TCP_NODELAY, 1L);
	char *url = xasprintf("%s/v3/kv/txn", s->a->etcd);
	struct buf txn = BUF_INIT, key = BUF_INIT, val = BUF_INIT, resp = BUF_INIT;
	for (long long i = s->from; i < s->to && !s->failed;) {
		buf_reset(&txn);
		buf_adds(&txn, "{\"success\":[");
		for (long long k = 0; k < s->a->txn_ops && i < s->to; k++, i++) {
			buf_reset(&key);
			buf_addf(&key, "%s/tenants/", s->a->prefix);
			tenant_name(&key, i);
			buf_reset(&val);
			buf_addf(&val, "{\"partition\":\"tp-%lld\",\"state\":\"ready\",\"since\":1700000000000}",
				 1 + i % s->a->partitions);
			add_put(&txn, key.ptr, val.ptr);
		}
		buf_adds(&txn, "]}");
		if (post(c, url, &txn, &resp) != 0) {
			fprintf(stderr, "ursa-gwmap: txn failed: %s\n", buf_cstr(&resp));
			s->failed = 1;
		}
	}
	buf_release(&txn);
	buf_release(&key);
	buf_release(&val);
	buf_release(&resp);
	free(url);
	curl_slist_free_all(h);
	curl_easy_cleanup(c);
	return NULL;
}

static int cmd_seed(const struct args *a)
{
	struct etcd *e = etcd_new(a->etcd, NULL);
	if (!e)
		return 2;
	for (long long p = 1; p <= a->partitions; p++) {
		char *key = xasprintf("%s/partitions/tp-%lld", a->prefix, p);
		char *val = xasprintf("{\"kind\":\"tp\",\"endpoints\":[\"https://127.0.0.1:%lld\"]}", 7100 + p);
		int err = etcd_put(e, key, val, strlen(val), 0, NULL);
		free(key);
		free(val);
		if (err) {
			fprintf(stderr, "ursa-gwmap: cannot write partition records\n");
			etcd_free(e);
			return 1;
		}
	}
	etcd_free(e);
	struct seeder s[MAX_THREADS] = { 0 };
	long long per = (a->count + a->clients - 1) / a->clients;
	int64_t t0 = now_ns();
	for (long long i = 0; i < a->clients; i++) {
		s[i] = (struct seeder){ .a = a, .from = i * per, .to = (i + 1) * per < a->count ? (i + 1) * per : a->count };
		pthread_create(&s[i].tid, NULL, seed_main, &s[i]);
	}
	int failed = 0;
	for (long long i = 0; i < a->clients; i++) {
		pthread_join(s[i].tid, NULL);
		failed |= s[i].failed;
	}
	double secs = (double)(now_ns() - t0) / 1e9;
	printf("seeded %lld tenants over %lld partitions in %.1f s (%.0f keys/s)\n", a->count, a->partitions, secs,
	       (double)a->count / secs);
	printf("RESULT {\"test\":\"seed\",\"tenants\":%lld,\"seconds\":%.2f,\"failed\":%s}\n", a->count, secs,
	       failed ? "true" : "false");
	return failed;
}

/* ---- load and lookups ---------------------------------------------------------------------- */
static long long status_kb(const char *field)
{
	FILE *f = fopen("/proc/self/status", "r");
	char *line = NULL;
	size_t cap = 0;
	long long kb = -1;
	size_t fl = strlen(field);
	while (f && getline(&line, &cap, f) > 0)
		if (strncmp(line, field, fl) == 0 && line[fl] == ':')
			kb = strtoll(line + fl + 1, NULL, 10);
	free(line);
	if (f)
		fclose(f);
	return kb;
}

struct looker {
	struct registry *r;
	char **names;
	size_t n;
	long long lookups;
	uint64_t seed;
	double ns_per;
	long long misses;
	pthread_t tid;
	pthread_barrier_t *bar;
};

static void *look_main(void *ud)
{
	struct looker *l = ud;
	uint64_t x = l->seed;
	long long miss = 0;
	/* The random indexes are drawn before the clock starts, in batches. */
	enum { BATCH = 4096 };
	size_t *idx = xmalloc(BATCH * sizeof(*idx));
	int64_t spent = 0;
	pthread_barrier_wait(l->bar);
	for (long long done = 0; done < l->lookups; done += BATCH) {
		for (int i = 0; i < BATCH; i++) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			idx[i] = (size_t)(x % l->n);
		}
		/* Thread CPU time: on a shared machine, time this thread was not running is not counted. */
		int64_t t = clock_ns(CLOCK_THREAD_CPUTIME_ID);
		for (int i = 0; i < BATCH; i++) {
			struct partition *p = registry_tenant_partition(l->r, l->names[idx[i]]);
			miss += !p;
			partition_unref(p);
		}
		spent += clock_ns(CLOCK_THREAD_CPUTIME_ID) - t;
	}
	l->ns_per = (double)spent / (double)((l->lookups + BATCH - 1) / BATCH * BATCH);
	l->misses = miss;
	free(idx);
	return NULL;
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* Median over rounds of the mean ns per lookup (each of nthreads threads measured alone; the
 * figure is the mean over threads). */
static double lookup_rounds(struct registry *r, char **names, size_t n, const struct args *a, int nthreads,
			    long long *ret_miss)
{
	double *per = xcalloc((size_t)a->rounds, sizeof(double));
	*ret_miss = 0;
	for (long long k = 0; k < a->rounds; k++) {
		struct looker l[2];
		pthread_barrier_t bar;
		pthread_barrier_init(&bar, NULL, (unsigned)nthreads);
		for (int t = 0; t < nthreads; t++) {
			l[t] = (struct looker){ .r = r, .names = names, .n = n, .lookups = a->lookups,
						.seed = 0x9e3779b97f4a7c15ULL * (uint64_t)(k * 2 + t + 1), .bar = &bar };
			pthread_create(&l[t].tid, NULL, look_main, &l[t]);
		}
		double sum = 0;
		for (int t = 0; t < nthreads; t++) {
			pthread_join(l[t].tid, NULL);
			sum += l[t].ns_per;
			*ret_miss += l[t].misses;
		}
		pthread_barrier_destroy(&bar);
		per[k] = sum / nthreads;
	}
	qsort(per, (size_t)a->rounds, sizeof(double), cmp_d);
	double med = per[a->rounds / 2];
	free(per);
	return med;
}

/* The gateway's own page reader, for --page. */
static int range_page(void *ud, const char *key, const char *range_end, int64_t rev, int64_t limit,
		      struct etcd_range_result *ret)
{
	return etcd_range(ud, key, range_end, rev, limit, false, ret);
}

static int cmd_load(const struct args *a)
{
	log_set_level(LOG_WARN);
	struct etcd *e = etcd_new(a->etcd, NULL);
	if (!e)
		return 2;
	/* Warm up the client (libcurl, connection) so the figure is the map's. */
	int64_t rev0 = 0;
	etcd_current_revision(e, &rev0);
	long long rss0 = status_kb("VmRSS"), hwm0 = status_kb("VmHWM");
	struct registry *r = registry_new(e, a->prefix);
	if (a->page)
		registry_set_range(r, range_page, e, a->page);
	int64_t t0 = now_ns(), c0 = clock_ns(CLOCK_PROCESS_CPUTIME_ID);
	int err = registry_start(r);
	double load_s = (double)(now_ns() - t0) / 1e9;
	double load_cpu_s = (double)(clock_ns(CLOCK_PROCESS_CPUTIME_ID) - c0) / 1e9;
	long long rss1 = status_kb("VmRSS"), hwm1 = status_kb("VmHWM");
	if (err) {
		fprintf(stderr, "ursa-gwmap: registry_start failed: %d\n", err);
		return 1;
	}
	size_t n = registry_tenant_count(r);
	struct registry_load_stats st;
	registry_load_stats(r, &st);
	printf("load: %ld pages, %ld keys, %d attempt(s), revision %lld\n", st.pages, st.keys, st.attempts,
	       (long long)st.revision);
	printf("loaded %zu tenants in %.3f s (%.3f s of this process's CPU); VmRSS %lld -> %lld kB (+%.1f MB), VmHWM %lld -> %lld kB (+%.1f MB)\n", n,
	       load_s, load_cpu_s, rss0, rss1, (double)(rss1 - rss0) / 1024, hwm0, hwm1, (double)(hwm1 - rss0) / 1024);
	if (!n) {
		fprintf(stderr, "ursa-gwmap: no tenants loaded\n");
		return 1;
	}
	/* Names of existing tenants, in the seed's scheme (checked: misses are counted). */
	char **names = xcalloc(n, sizeof(char *));
	struct buf b = BUF_INIT;
	for (size_t i = 0; i < n; i++) {
		buf_reset(&b);
		tenant_name(&b, (long long)i);
		names[i] = xstrdup(b.ptr);
	}
	buf_release(&b);
	long long miss1, miss2;
	double ns1 = lookup_rounds(r, names, n, a, 1, &miss1);
	double ns2 = lookup_rounds(r, names, n, a, 2, &miss2);
	printf("lookup: %.0f ns (1 thread), %.0f ns per lookup per thread (2 threads); misses %lld/%lld\n", ns1, ns2,
	       miss1, miss2);
	printf("RESULT {\"test\":\"load\",\"tenants\":%zu,\"load_s\":%.3f,\"load_cpu_s\":%.3f,\"rss_growth_mb\":%.1f,\"hwm_growth_mb\":%.1f,"
	       "\"lookup_ns_1\":%.0f,\"lookup_ns_2\":%.0f,\"misses\":%lld,\"pages\":%ld}\n",
	       n, load_s, load_cpu_s, (double)(rss1 - rss0) / 1024, (double)(hwm1 - rss0) / 1024, ns1, ns2, miss1 + miss2, st.pages);
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
	registry_free(r);
	etcd_free(e);
	return miss1 + miss2 ? 1 : 0;
}

static int parse_args(struct args *a, int argc, char **argv)
{
	*a = (struct args){ .prefix = "/ursa/gateway", .partitions = 4, .clients = 4, .rounds = 5, .lookups = 2000000, .txn_ops = 128 };
	for (int i = 0; i + 1 < argc; i += 2) {
		const char *f = argv[i], *v = argv[i + 1];
		long long n = 0;
		bool num = parse_int64(v, &n) == 0;
		if (strcmp(f, "--etcd") == 0)
			a->etcd = v;
		else if (strcmp(f, "--prefix") == 0)
			a->prefix = v;
		else if (strcmp(f, "--count") == 0 && num && n > 0 && n <= 100000000)
			a->count = n;
		else if (strcmp(f, "--partitions") == 0 && num && n > 0 && n <= 1000)
			a->partitions = n;
		else if (strcmp(f, "--clients") == 0 && num && n > 0 && n <= MAX_THREADS)
			a->clients = n;
		else if (strcmp(f, "--txn-ops") == 0 && num && n > 0 && n <= 10000)
			a->txn_ops = n;
		else if (strcmp(f, "--rounds") == 0 && num && n > 0 && n <= 101)
			a->rounds = n;
		else if (strcmp(f, "--lookups") == 0 && num && n > 0 && n <= 1000000000)
			a->lookups = n;
		else if (strcmp(f, "--page") == 0 && num && n >= 2 && n <= 10000000)
			a->page = n;
		else {
			fprintf(stderr, "ursa-gwmap: bad option %s %s\n", f, v);
			return -1;
		}
	}
	if (argc % 2 || !a->etcd) {
		fprintf(stderr, "ursa-gwmap: --etcd URL is required (and every option takes a value)\n");
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct args a;
	if (argc < 2 || parse_args(&a, argc - 2, argv + 2) != 0) {
		fprintf(stderr, "usage: ursa-gwmap seed --etcd URL [--prefix P] --count N [--partitions K] [--clients C] [--txn-ops O]\n"
				"       ursa-gwmap load --etcd URL [--prefix P] [--rounds R] [--lookups L] [--page K]\n");
		return 2;
	}
	curl_global_init(CURL_GLOBAL_DEFAULT);
	int rc = 2;
	if (strcmp(argv[1], "seed") == 0 && a.count > 0)
		rc = cmd_seed(&a);
	else if (strcmp(argv[1], "load") == 0)
		rc = cmd_load(&a);
	else
		fprintf(stderr, "ursa-gwmap: unknown command %s (or seed without --count)\n", argv[1]);
	curl_global_cleanup();
	return rc;
}
