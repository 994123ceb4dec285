/*
 * ursa-etcdwrite: what the etcd client's writes and reads cost etcd.
 *
 *   ursa-etcdwrite --etcd URL --etcd-pid PID [--threads T] [--count N] [--value-size S] [--prefix P]
 *                  [--watchers W]
 *
 * T threads (default 16) share N keys (default 20000) under P (default /bench/w/) and run three
 * phases through the client library, as the API servers do: create every key (etcd_create, group
 * committed), update every key at its revision (etcd_update, group committed), read every key
 * (etcd_get). For each phase: wall time, writes or reads per second, and the CPU that etcd
 * (utime + stime of PID from /proc) and this process spent per 1,000 operations. Values are
 * S bytes (default 1000) of JSON-like text. With W watchers (default 0), W etcd_watch streams of
 * this client follow the prefix, as API servers' caches do, and a write phase ends once every
 * watcher has seen its events (at most 60 s more), so etcd's cost of sending them is counted.
 * Ends with a line "RESULT {json}".
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "ursa/buf.h"
#include "ursa/errors.h"
#include "ursa/etcd.h"
#include "ursa/xalloc.h"

#define MAX_THREADS 256

enum phase { PH_CREATE, PH_UPDATE, PH_GET, PH_N };
static const char *const phase_name[PH_N] = { "create", "update", "get" };

struct args {
	const char *etcd, *prefix;
	long long pid, threads, count, value_size, watchers;
};


struct worker {
	struct etcd *e;
	const struct args *a;
	enum phase ph;
	long long from, to;
	int64_t *revs; /* shared, indexed by key number */
	const char *value;
	long long failed;
	pthread_t tid;
};

static int64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static atomic_llong watched; /* events delivered to all watchers */

static void on_events(void *ud, const struct etcd_event *ev, size_t n)
{
	(void)ud, (void)ev;
	atomic_fetch_add(&watched, (long long)n);
}

/* Waits until the watchers have seen want events, at most 60 s. */
static void wait_watched(long long want)
{
	int64_t deadline = now_ns() + 60 * (int64_t)1000000000;
	while (atomic_load(&watched) < want && now_ns() < deadline)
		usleep(1000);
}

static double self_cpu_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* utime + stime of pid in seconds, from /proc/<pid>/stat (fields 14 and 15, after the ")"). */
static double proc_cpu_s(long long pid)
{
	char path[64], line[1024];
	unsigned long long ut = 0, st = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%lld/stat", pid);
	f = fopen(path, "r");
	if (!f)
		return -1;
	size_t n = fread(line, 1, sizeof(line) - 1, f);
	fclose(f);
	line[n] = '\0';
	char *p = strrchr(line, ')');
	if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut, &st) != 2)
		return -1;
	return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

static void key_of(struct buf *b, const struct args *a, long long i)
{
	buf_reset(b);
	buf_addf(b, "%s%08lld", a->prefix, i);
}

static void *run(void *ud)
{
	struct worker *w = ud;
	struct buf key = BUF_INIT;
	size_t vlen = strlen(w->value);

	for (long long i = w->from; i < w->to; i++) {
		struct etcd_kv kv;
		int64_t rev = 0;
		int rc;
		key_of(&key, w->a, i);
		switch (w->ph) {
		case PH_CREATE:
			rc = etcd_create(w->e, key.ptr, w->value, vlen, 0, &rev);
			break;
		case PH_UPDATE:
			rc = etcd_update(w->e, key.ptr, w->value, vlen, w->revs[i], &rev, NULL);
			break;
		default:
			rc = etcd_get(w->e, key.ptr, &kv);
			if (rc == 0)
				etcd_kv_release(&kv);
			break;
		}
		if (rc != 0)
			w->failed++;
		else if (w->ph != PH_GET)
			w->revs[i] = rev;
	}
	buf_release(&key);
	return NULL;
}

struct result {
	double wall_s, etcd_cpu_s, self_cpu_s;
	long long failed;
	unsigned long long txns;
};

static struct result run_phase(struct etcd *e, const struct args *a, enum phase ph, int64_t *revs, const char *value)
{
	struct worker w[MAX_THREADS];
	struct result r = { 0 };
	unsigned long long t0, o0, t1, o1;
	double c0 = proc_cpu_s(a->pid), s0 = self_cpu_s();
	int64_t start = now_ns();

	etcd_write_stats(e, &t0, &o0);
	for (long long t = 0; t < a->threads; t++) {
		w[t] = (struct worker){ .e = e, .a = a, .ph = ph, .revs = revs, .value = value };
		w[t].from = a->count * t / a->threads;
		w[t].to = a->count * (t + 1) / a->threads;
		if (pthread_create(&w[t].tid, NULL, run, &w[t]) != 0)
			abort();
	}
	for (long long t = 0; t < a->threads; t++) {
		pthread_join(w[t].tid, NULL);
		r.failed += w[t].failed;
	}
	if (a->watchers && ph != PH_GET)
		wait_watched(a->watchers * a->count * (ph == PH_CREATE ? 1 : 2));
	r.wall_s = (double)(now_ns() - start) / 1e9;
	r.etcd_cpu_s = proc_cpu_s(a->pid) - c0;
	r.self_cpu_s = self_cpu_s() - s0;
	etcd_write_stats(e, &t1, &o1);
	r.txns = t1 - t0;
	return r;
}

static int parse_args(int argc, char **argv, struct args *a)
{
	*a = (struct args){ .prefix = "/bench/w/", .threads = 16, .count = 20000, .value_size = 1000, .pid = 0,
			    .watchers = 0 };
	for (int i = 1; i + 1 < argc; i += 2) {
		const char *k = argv[i], *v = argv[i + 1];
		long long n = 0;
		if (!strcmp(k, "--etcd"))
			a->etcd = v;
		else if (!strcmp(k, "--prefix"))
			a->prefix = v;
		else if (parse_int64(v, &n) < 0 || n < 0)
			return -1;
		else if (!strcmp(k, "--watchers"))
			a->watchers = n;
		else if (n == 0)
			return -1;
		else if (!strcmp(k, "--etcd-pid"))
			a->pid = n;
		else if (!strcmp(k, "--threads"))
			a->threads = n;
		else if (!strcmp(k, "--count"))
			a->count = n;
		else if (!strcmp(k, "--value-size"))
			a->value_size = n;
		else
			return -1;
	}
	return a->etcd && a->pid > 0 && a->threads <= MAX_THREADS && a->watchers <= MAX_THREADS && (argc % 2) == 1
		       ? 0
		       : -1;
}

int main(int argc, char **argv)
{
	struct args a;
	struct result r[PH_N];
	struct etcd *e;
	int64_t *revs;
	char *value;

	if (parse_args(argc, argv, &a) < 0) {
		fprintf(stderr, "usage: ursa-etcdwrite --etcd URL --etcd-pid PID [--threads T] [--count N] "
				"[--value-size S] [--prefix P] [--watchers W]\n");
		return 2;
	}
	e = etcd_new(a.etcd, NULL);
	if (!e || proc_cpu_s(a.pid) < 0) {
		fprintf(stderr, "ursa-etcdwrite: bad --etcd or --etcd-pid\n");
		return 2;
	}
	revs = xcalloc((size_t)a.count, sizeof(*revs));
	value = xmalloc((size_t)a.value_size + 1);
	for (long long i = 0; i < a.value_size; i++)
		value[i] = "{\"abcdefghijklmnopqrstuvwxyz0123456789\":}"[i % 40];
	value[a.value_size] = '\0';
	struct etcd_watch *wt[MAX_THREADS];
	static const struct etcd_watch_handlers wh = { on_events, NULL, NULL };
	char *end = etcd_prefix_end(a.prefix);
	int64_t rev0 = 0;
	if (a.watchers && etcd_current_revision(e, &rev0) < 0) {
		fprintf(stderr, "ursa-etcdwrite: etcd unavailable\n");
		return 1;
	}
	for (long long i = 0; i < a.watchers; i++)
		if (!(wt[i] = etcd_watch_start(e, a.prefix, end, rev0 + 1, false, &wh, NULL)))
			abort();
	for (int ph = 0; ph < PH_N; ph++) {
		r[ph] = run_phase(e, &a, (enum phase)ph, revs, value);
		printf("%-6s %lld ops, %lld threads, %lld watchers: %.2f s, %.0f ops/s, etcd CPU %.1f ms per 1000 ops, "
		       "client CPU %.1f ms per 1000 ops, %llu txns, %lld failed\n",
		       phase_name[ph], a.count, a.threads, a.watchers, r[ph].wall_s, (double)a.count / r[ph].wall_s,
		       r[ph].etcd_cpu_s * 1e6 / (double)a.count, r[ph].self_cpu_s * 1e6 / (double)a.count, r[ph].txns,
		       r[ph].failed);
	}
	for (long long i = 0; i < a.watchers; i++)
		etcd_watch_stop(wt[i]);
	free(end);
	printf("RESULT {");
	for (int ph = 0; ph < PH_N; ph++)
		printf("%s\"%s\":{\"wall_s\":%.3f,\"etcd_cpu_s\":%.3f,\"client_cpu_s\":%.3f,\"txns\":%llu,\"failed\":%lld}",
		       ph ? "," : "", phase_name[ph], r[ph].wall_s, r[ph].etcd_cpu_s, r[ph].self_cpu_s, r[ph].txns,
		       r[ph].failed);
	printf("}\n");
	free(value);
	free(revs);
	etcd_free(e);
	return r[PH_CREATE].failed || r[PH_UPDATE].failed || r[PH_GET].failed ? 1 : 0;
}
