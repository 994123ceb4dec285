/* ursa-muxwatch: holds many watches on one partition API server over a few multiplexed watch
 * connections (POST /ursa/v1/watches), as hollow-node processes and gateways hold them, and
 * measures what they cost it: its RSS per watch once they are open, its CPU while they are held
 * idle (--idle seconds), then holds them --hold seconds more after printing a line starting with
 * HOLDING (while the caller measures other requests), and the lag of events
 * under a write rate (pods created bound to the watched nodes at --writes-per-s).
 *
 * Watches: --node-watches N, each `spec.nodeName=mw-node-<i>` on every tenant's pods (a node's
 * kubelet's watch), and --ns-watches M, each on the pods of namespace mw-ns-<j> of --tenant
 * (idle: nothing is written there); spread over --conns K connections, one thread each. The pods
 * written are named <--pod-prefix><k> (a name must be new: a bound pod deleted waits for a kubelet).
 *
 * usage: ursa-muxwatch --server URL --token TOKEN --tenant T [--cacert FILE] [--node-watches 90000]
 *          [--ns-watches 10000] [--conns 10] [--idle 0] [--hold 0] [--writes-per-s 1000] [--write-seconds 10]
 *          [--writers 8] [--pod-prefix mw-] [--pid NAME=PID]...
 * The last line is machine-readable: RESULT key=value pairs. Exit status 3 when a watch was
 * refused, a connection ended early or an event was missing. */
#define _GNU_SOURCE
#include <curl/curl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "benchutil.h"
#include "ursa/buf.h"
#include "ursa/timeutil.h"
#include "ursa/xalloc.h"

#define MAX_PIDS 4
#define LINE_CAP (1u << 20)

static struct {
	const char *server, *token, *tenant, *cacert, *pod_prefix;
	long nodes, nss, conns, idle_s, hold_s, rate, write_s, writers;
	const char *pid_name[MAX_PIDS];
	int pid[MAX_PIDS], npids;
} opt = { .pod_prefix = "mw-", .nodes = 90000, .nss = 10000, .conns = 10, .rate = 1000, .write_s = 10, .writers = 8 };

static atomic_long opened, failed, ended_early, received, stray;
static atomic_bool stopping;
static int64_t *created_us, *lat_us; /* per pod k */
static long npods;

static int64_t now_us(void)
{
	return mono_us();
}

static void die(const char *msg)
{
	bench_die("ursa-muxwatch", msg);
}

static long num(const char *v)
{
	long x = bench_num(v, 10000000);
	if (x < 0)
		die("a numeric option is not a number in range");
	return x;
}

/* RSS (KiB) and CPU seconds of a process. */
static void proc_stat(int pid, long *ret_rss_kb, double *ret_cpu_s)
{
	struct bench_pstat p = bench_proc_stat(pid);
	*ret_rss_kb = p.rss_kb;
	*ret_cpu_s = p.cpu_s;
}

/* --- the watch connections ------------------------------------------------------------------ */
struct conn {
	long idx;
	struct buf body, line;
	int status;
	bool counted;
};

/* A pod's ADDED event on its node's watch: its lag. */
static void on_line(const char *l, size_t len)
{
	if (len < 10 || !memmem(l, len, "\"type\":\"ADDED\"", 14))
		return;
	static char key[64];
	static size_t klen;
	if (!klen)
		klen = (size_t)snprintf(key, sizeof(key), "\"name\":\"%s", opt.pod_prefix);
	const char *p = memmem(l, len, key, klen);
	if (!p) {
		atomic_fetch_add(&stray, 1);
		return;
	}
	long k = strtol(p + klen, NULL, 10);
	if (k < 0 || k >= npods || !created_us[k])
		return;
	int64_t lag = now_us() - created_us[k];
	int64_t unset = -1;
	if (__atomic_compare_exchange_n(&lat_us[k], &unset, lag, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		atomic_fetch_add(&received, 1);
}

static size_t on_body(char *d, size_t size, size_t n, void *ud)
{
	struct conn *c = ud;
	size_t len = size * n, start = 0;
	for (size_t i = 0; i < len; i++) {
		if (d[i] != '\n')
			continue;
		if (c->line.len) {
			if (c->line.len + (i - start) <= LINE_CAP)
				buf_add(&c->line, d + start, i - start);
			on_line(c->line.ptr, c->line.len);
			buf_reset(&c->line);
		} else {
			on_line(d + start, i - start);
		}
		start = i + 1;
	}
	if (start < len && c->line.len + (len - start) <= LINE_CAP)
		buf_add(&c->line, d + start, len - start);
	return atomic_load(&stopping) ? 0 : len; /* 0 ends the transfer */
}

static size_t on_header(char *d, size_t size, size_t n, void *ud)
{
	struct conn *c = ud;
	size_t len = size * n;
	if (len > 12 && strncmp(d, "HTTP/", 5) == 0)
		c->status = atoi(d + 9);
	else if (len <= 2 && !c->counted) {
		c->counted = true;
		atomic_fetch_add(c->status == 200 ? &opened : &failed, 1);
	}
	return len;
}

static void *conn_main(void *arg)
{
	struct conn *c = arg;
	buf_adds(&c->body, "{\"timeoutSeconds\":7200,\"watches\":[");
	bool first = true;
	for (long i = c->idx; i < opt.nodes; i += opt.conns) {
		buf_addf(&c->body, "%s{\"id\":\"n%ld\",\"path\":\"/api/v1/tenants/all/pods\",\"fieldSelector\":\"spec.nodeName=mw-node-%ld\"}",
			 first ? "" : ",", i, i);
		first = false;
	}
	for (long j = c->idx; j < opt.nss; j += opt.conns) {
		buf_addf(&c->body, "%s{\"id\":\"s%ld\",\"path\":\"/api/v1/tenants/%s/namespaces/mw-ns-%ld/pods\"}",
			 first ? "" : ",", j, opt.tenant, j);
		first = false;
	}
	buf_adds(&c->body, "]}");
	char *url = xasprintf("%s/ursa/v1/watches", opt.server);
	char *auth = xasprintf("Authorization: Bearer %s", opt.token);
	struct curl_slist *h = curl_slist_append(NULL, auth);
	h = curl_slist_append(h, "Content-Type: application/json");
	CURL *e = curl_easy_init();
	curl_easy_setopt(e, CURLOPT_URL, url);
	curl_easy_setopt(e, CURLOPT_HTTPHEADER, h);
	curl_easy_setopt(e, CURLOPT_POSTFIELDS, c->body.ptr);
	curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE, (long)c->body.len);
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(e, CURLOPT_WRITEDATA, c);
	curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(e, CURLOPT_HEADERDATA, c);
	curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, 10000L);
	if (opt.cacert)
		curl_easy_setopt(e, CURLOPT_CAINFO, opt.cacert);
	curl_easy_perform(e);
	if (!c->counted) {
		c->counted = true;
		atomic_fetch_add(&failed, 1);
	} else if (!atomic_load(&stopping) && c->status == 200) {
		atomic_fetch_add(&ended_early, 1);
	}
	curl_easy_cleanup(e);
	curl_slist_free_all(h);
	free(url);
	free(auth);
	return NULL;
}

/* --- writes ------------------------------------------------------------------------------- */
static size_t sink(char *d, size_t s, size_t n, void *ud)
{
	(void)d;
	(void)ud;
	return s * n;
}

static atomic_long write_errors;

static void *writer_main(void *arg)
{
	long w = (long)(intptr_t)arg;
	char *url = xasprintf("%s/api/v1/tenants/%s/namespaces/default/pods", opt.server, opt.tenant);
	char *auth = xasprintf("Authorization: Bearer %s", opt.token);
	struct curl_slist *h = curl_slist_append(NULL, auth);
	h = curl_slist_append(h, "Content-Type: application/json");
	CURL *e = curl_easy_init();
	curl_easy_setopt(e, CURLOPT_URL, url);
	curl_easy_setopt(e, CURLOPT_HTTPHEADER, h);
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, sink);
	curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, 30000L);
	if (opt.cacert)
		curl_easy_setopt(e, CURLOPT_CAINFO, opt.cacert);
	/* pod k is written by writer k % writers at start + k / rate seconds */
	int64_t start = now_us() + 100000;
	for (long k = w; k < npods; k += opt.writers) {
		int64_t at = start + (int64_t)((double)k * 1e6 / (double)opt.rate);
		int64_t now = now_us();
		if (at > now)
			usleep((useconds_t)(at - now));
		char body[400];
		snprintf(body, sizeof(body),
			 "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"%s%ld\"},\"spec\":{\"nodeName\":\"mw-node-%ld\","
			 "\"containers\":[{\"name\":\"c\",\"image\":\"busybox\"}]}}",
			 opt.pod_prefix, k, opt.nodes ? k % opt.nodes : 0);
		curl_easy_setopt(e, CURLOPT_POSTFIELDS, body);
		created_us[k] = now_us();
		long code = 0;
		if (curl_easy_perform(e) == CURLE_OK)
			curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &code);
		if (code != 201)
			atomic_fetch_add(&write_errors, 1);
	}
	curl_easy_cleanup(e);
	curl_slist_free_all(h);
	free(url);
	free(auth);
	return NULL;
}

static int cmp64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return x < y ? -1 : x > y;
}

static void parse_args(int argc, char **argv)
{
	for (int i = 1; i + 1 < argc; i += 2) {
		const char *a = argv[i], *v = argv[i + 1];
		if (!strcmp(a, "--server"))
			opt.server = v;
		else if (!strcmp(a, "--token"))
			opt.token = v;
		else if (!strcmp(a, "--tenant"))
			opt.tenant = v;
		else if (!strcmp(a, "--cacert"))
			opt.cacert = v;
		else if (!strcmp(a, "--pod-prefix") && strlen(v) < 32 && !strpbrk(v, "\"\\%"))
			opt.pod_prefix = v;
		else if (!strcmp(a, "--node-watches"))
			opt.nodes = num(v);
		else if (!strcmp(a, "--ns-watches"))
			opt.nss = num(v);
		else if (!strcmp(a, "--conns"))
			opt.conns = num(v);
		else if (!strcmp(a, "--idle"))
			opt.idle_s = num(v);
		else if (!strcmp(a, "--hold"))
			opt.hold_s = num(v);
		else if (!strcmp(a, "--writes-per-s"))
			opt.rate = num(v);
		else if (!strcmp(a, "--write-seconds"))
			opt.write_s = num(v);
		else if (!strcmp(a, "--writers"))
			opt.writers = num(v);
		else if (!strcmp(a, "--pid") && opt.npids < MAX_PIDS && strchr(v, '=')) {
			opt.pid_name[opt.npids] = strndup(v, (size_t)(strchr(v, '=') - v));
			opt.pid[opt.npids++] = (int)num(strchr(v, '=') + 1);
		} else
			die("unknown option (see the header of bench/ursa-muxwatch.c)");
	}
	if (argc % 2 == 0 || !opt.server || !opt.token || !opt.tenant || opt.conns < 1 || opt.writers < 1 ||
	    opt.nodes + opt.nss < 1 || (opt.rate && !opt.nodes))
		die("usage: ursa-muxwatch --server URL --token TOKEN --tenant T [--node-watches N] [--ns-watches M] "
		    "[--conns K] [--hold S] [--writes-per-s R] [--write-seconds S] [--writers W] [--pid NAME=PID]...");
	if ((opt.nodes + opt.nss) / opt.conns > 10000)
		die("at most 10,000 watches per connection: raise --conns");
}

int main(int argc, char **argv)
{
	parse_args(argc, argv);
	setvbuf(stdout, NULL, _IOLBF, 0);
	curl_global_init(CURL_GLOBAL_DEFAULT);
	npods = opt.rate * opt.write_s;
	created_us = xcalloc((size_t)npods + 1, sizeof(*created_us));
	lat_us = xmalloc(((size_t)npods + 1) * sizeof(*lat_us));
	for (long k = 0; k < npods; k++)
		lat_us[k] = -1;
	long rss0[MAX_PIDS], rss1[MAX_PIDS], rss2[MAX_PIDS];
	double cpu0[MAX_PIDS], cpu1[MAX_PIDS], cpu2[MAX_PIDS], cpu3[MAX_PIDS];
	for (int i = 0; i < opt.npids; i++)
		proc_stat(opt.pid[i], &rss0[i], &cpu0[i]);
	long total = opt.nodes + opt.nss;
	printf("# %ld watches (%ld of a node's pods, %ld of a namespace's) over %ld connections to %s\n", total,
	       opt.nodes, opt.nss, opt.conns, opt.server);
	struct conn *cs = xcalloc((size_t)opt.conns, sizeof(*cs));
	pthread_t *ts = xcalloc((size_t)opt.conns, sizeof(*ts));
	int64_t t0 = now_us();
	for (long c = 0; c < opt.conns; c++) {
		cs[c].idx = c;
		pthread_create(&ts[c], NULL, conn_main, &cs[c]);
	}
	while (atomic_load(&opened) + atomic_load(&failed) < opt.conns && now_us() - t0 < 300 * 1000000LL)
		usleep(20000);
	double open_s = (double)(now_us() - t0) / 1e6;
	sleep(2); /* let the server settle what it allocated */
	for (int i = 0; i < opt.npids; i++)
		proc_stat(opt.pid[i], &rss1[i], &cpu1[i]);
	printf("connections open %ld of %ld (refused %ld) in %.1f s\n", atomic_load(&opened), opt.conns,
	       atomic_load(&failed), open_s);
	for (int i = 0; i < opt.npids; i++)
		printf("%-8s rss %ld -> %ld MiB: %.0f bytes per watch; cpu to open them %.2f s\n", opt.pid_name[i],
		       rss0[i] / 1024, rss1[i] / 1024, (double)(rss1[i] - rss0[i]) * 1024.0 / (double)total,
		       cpu1[i] - cpu0[i]);
	double idle_cpu[MAX_PIDS] = { 0 };
	if (opt.idle_s) {
		sleep((unsigned)opt.idle_s);
		for (int i = 0; i < opt.npids; i++) {
			long rss;
			double c;
			proc_stat(opt.pid[i], &rss, &c);
			idle_cpu[i] = c - cpu1[i];
			printf("%-8s cpu while the watches were held idle %ld s: %.2f s (%.2f%% of a core)\n", opt.pid_name[i],
			       opt.idle_s, idle_cpu[i], 100.0 * idle_cpu[i] / (double)opt.idle_s);
			cpu1[i] = c;
		}
	}
	if (opt.hold_s) {
		printf("HOLDING %ld watches for %ld s\n", total, opt.hold_s);
		fflush(stdout);
		sleep((unsigned)opt.hold_s);
	}
	for (int i = 0; i < opt.npids; i++)
		proc_stat(opt.pid[i], &rss2[i], &cpu2[i]);
	if (opt.hold_s)
		for (int i = 0; i < opt.npids; i++)
			printf("%-8s cpu while held %ld s: %.2f s\n", opt.pid_name[i], opt.hold_s, cpu2[i] - cpu1[i]);
	/* writes */
	double write_wall = 0;
	if (npods) {
		pthread_t *wt = xcalloc((size_t)opt.writers, sizeof(*wt));
		int64_t w0 = now_us();
		for (long w = 0; w < opt.writers; w++)
			pthread_create(&wt[w], NULL, writer_main, (void *)(intptr_t)w);
		for (long w = 0; w < opt.writers; w++)
			pthread_join(wt[w], NULL);
		write_wall = (double)(now_us() - w0) / 1e6;
		for (int64_t end = now_us() + 10 * 1000000LL; atomic_load(&received) < npods - atomic_load(&write_errors) &&
							      now_us() < end;)
			usleep(20000);
		free(wt);
	}
	for (int i = 0; i < opt.npids; i++)
		proc_stat(opt.pid[i], &rss2[i], &cpu3[i]);
	int64_t *v = xmalloc(((size_t)npods + 1) * sizeof(*v));
	size_t n = 0;
	for (long k = 0; k < npods; k++)
		if (lat_us[k] >= 0)
			v[n++] = lat_us[k];
	qsort(v, n, sizeof(*v), cmp64);
#define PCT(p) (n ? (double)v[(size_t)((p) * (double)(n - 1) + 0.5)] / 1000.0 : -1.0)
	if (npods) {
		printf("writes %ld at %ld/s over %.1f s (errors %ld); events received %zu, stray %ld\n", npods, opt.rate,
		       write_wall, atomic_load(&write_errors), n, atomic_load(&stray));
		printf("lag create->event ms: p50 %.1f p99 %.1f max %.1f\n", PCT(0.5), PCT(0.99), PCT(1.0));
		for (int i = 0; i < opt.npids; i++)
			printf("%-8s cpu during the writes: %.2f s (%.1f%% of a core)\n", opt.pid_name[i], cpu3[i] - cpu2[i],
			       100.0 * (cpu3[i] - cpu2[i]) / (write_wall > 0 ? write_wall : 1));
	}
	printf("RESULT watches=%ld conns=%ld opened=%ld refused=%ld ended_early=%ld writes=%ld write_errors=%ld received=%zu "
	       "lag_p50_ms=%.1f lag_p99_ms=%.1f lag_max_ms=%.1f",
	       total, opt.conns, atomic_load(&opened), atomic_load(&failed), atomic_load(&ended_early), npods,
	       atomic_load(&write_errors), n, PCT(0.5), PCT(0.99), PCT(1.0));
	for (int i = 0; i < opt.npids; i++)
		printf(" %s_rss0_kib=%ld %s_rss_kib=%ld %s_bytes_per_watch=%.0f %s_cpu_idle_pct=%.2f %s_cpu_hold_s=%.2f "
		       "%s_cpu_writes_s=%.2f",
		       opt.pid_name[i], rss0[i], opt.pid_name[i], rss1[i], opt.pid_name[i],
		       (double)(rss1[i] - rss0[i]) * 1024.0 / (double)total, opt.pid_name[i],
		       opt.idle_s ? 100.0 * idle_cpu[i] / (double)opt.idle_s : -1.0, opt.pid_name[i], cpu2[i] - cpu1[i],
		       opt.pid_name[i], cpu3[i] - cpu2[i]);
	printf("\n");
	bool ok = atomic_load(&failed) == 0 && atomic_load(&ended_early) == 0 &&
		  (long)n == npods - atomic_load(&write_errors) && atomic_load(&write_errors) == 0;
	atomic_store(&stopping, true);
	_exit(ok ? 0 : 3); /* the connections end with the process */
}
