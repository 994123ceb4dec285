/* ursa-watchers: holds N concurrent watches on one collection (through a gateway, or straight at
 * an API server), then creates M objects in it and measures the fan-out: how many watches
 * received each object's ADDED event and how long after its create was sent (p50/p99), plus
 * the RSS and CPU seconds of the processes named by --pid while the watches are held and
 * while the events flow. One thread drives every watch with libcurl's multi socket interface
 * over epoll; a second thread creates the objects.
 *
 * usage: ursa-watchers --server URL --token TOKEN --path /api/v1/namespaces/default/configmaps
 *          [--watches 10000] [--objects 20] [--interval-ms 500] [--batch 200] [--settle 30] [--hold 0]
 *          [--pid NAME=PID]... [--cacert FILE] [--prefix w-]
 * Objects are ConfigMaps named <prefix><k>; the collection must not hold them yet.
 * The last line is machine-readable: key=value pairs. */
#define _GNU_SOURCE
#include <curl/curl.h>
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>
#include "benchutil.h"
#include "ursa/timeutil.h"

#define MAX_PIDS 4
#define LINE_CAP (1u << 20)

struct watch {
	int idx;
	CURL *e;
	int status;
	bool headers, done, failed;
	char *line;
	size_t len;
};

static struct {
	const char *server, *token, *path, *cacert, *prefix;
	int n, m, interval_ms, batch, settle_s, hold_s;
	const char *pid_name[MAX_PIDS];
	int pid[MAX_PIDS];
	int npids;
} opt = { .prefix = "w-", .n = 10000, .m = 20, .interval_ms = 500, .batch = 200, .settle_s = 30 };

static int ep;
static CURLM *multi;
static int64_t timer_at = -1;
static struct watch *ws;
static struct curl_slist *hdrs;
static char *list_rv;
static int64_t *created_us;   /* per object: when its POST was sent; 0 until then */
static int64_t *lat_us;       /* [object * n + watch]: receipt latency, -1 until received */
static atomic_long received, opening, held, failed_status[6], failed_curl;
static atomic_int creates_done;

static int64_t now_us(void)
{
	return mono_us();
}

static void die(const char *msg)
{
	bench_die("ursa-watchers", msg);
}

static int num(const char *v)
{
	long x = bench_num(v, 1000000);
	if (x < 0)
		die("a numeric option is not a number in range");
	return (int)x;
}

/* --- /proc ------------------------------------------------------------------------------- */
static void print_procs(const char *when, struct bench_pstat *ret)
{
	for (int i = 0; i < opt.npids; i++) {
		struct bench_pstat p = bench_proc_stat(opt.pid[i]);
		if (ret)
			ret[i] = p;
		printf("%-10s %-14s rss=%ld MiB hwm=%ld MiB cpu=%.2f s\n", opt.pid_name[i], when, p.rss_kb / 1024,
		       p.hwm_kb / 1024, p.cpu_s);
	}
}

/* --- watches ---------------------------------------------------------------------------- */
static void on_event_line(struct watch *w, const char *line, size_t len)
{
	static char key[64];
	static size_t klen;
	if (!klen)
		klen = (size_t)snprintf(key, sizeof(key), "\"name\":\"%s", opt.prefix);
	if (len < 20 || !memmem(line, len, "\"type\":\"ADDED\"", 14))
		return;
	const char *p = memmem(line, len, key, klen);
	if (!p)
		return;
	long k = strtol(p + klen, NULL, 10);
	if (k < 0 || k >= opt.m || !created_us[k])
		return;
	int64_t *slot = &lat_us[(size_t)k * (size_t)opt.n + (size_t)w->idx];
	if (*slot < 0) {
		*slot = now_us() - created_us[k];
		atomic_fetch_add(&received, 1);
	}
}

static size_t on_body(char *data, size_t size, size_t n, void *ud)
{
	struct watch *w = ud;
	size_t len = size * n, start = 0;
	for (size_t i = 0; i < len; i++) {
		if (data[i] != '\n')
			continue;
		if (w->len) {
			size_t add = i - start;
			if (w->len + add <= LINE_CAP) {
				w->line = realloc(w->line, w->len + add);
				memcpy(w->line + w->len, data + start, add);
				w->len += add;
			}
			on_event_line(w, w->line, w->len);
			w->len = 0;
		} else {
			on_event_line(w, data + start, i - start);
		}
		start = i + 1;
	}
	if (start < len && w->len + (len - start) <= LINE_CAP) {
		w->line = realloc(w->line, w->len + len - start);
		memcpy(w->line + w->len, data + start, len - start);
		w->len += len - start;
	}
	return len;
}

static void count_failure(int status)
{
	int b = status == 503 ? 0 : status == 429 ? 1 : status == 504 ? 2 : status >= 500 ? 3 : status >= 400 ? 4 : 5;
	atomic_fetch_add(&failed_status[b], 1);
}

static size_t on_header(char *data, size_t size, size_t n, void *ud)
{
	struct watch *w = ud;
	size_t len = size * n;
	if (len > 12 && strncmp(data, "HTTP/", 5) == 0) {
		const char *sp = memchr(data, ' ', len);
		w->status = sp ? (int)strtol(sp + 1, NULL, 10) : 0;
	} else if (len <= 2 && !w->headers && w->status >= 200) {
		w->headers = true;
		atomic_fetch_sub(&opening, 1);
		if (w->status == 200)
			atomic_fetch_add(&held, 1);
		else
			count_failure(w->status);
	}
	return len;
}

static int on_socket(CURL *e, curl_socket_t fd, int what, void *ud, void *sockp)
{
	struct epoll_event ev = { .data.fd = fd };
	if (what == CURL_POLL_REMOVE) {
		epoll_ctl(ep, EPOLL_CTL_DEL, fd, NULL);
		return 0;
	}
	ev.events = (what & CURL_POLL_IN ? EPOLLIN : 0) | (what & CURL_POLL_OUT ? EPOLLOUT : 0);
	if (epoll_ctl(ep, EPOLL_CTL_MOD, fd, &ev) < 0 && errno == ENOENT)
		epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
	return 0;
}

static int on_timer(CURLM *m, long timeout_ms, void *ud)
{
	timer_at = timeout_ms < 0 ? -1 : now_us() / 1000 + timeout_ms;
	return 0;
}

static void add_watch(int i)
{
	struct watch *w = &ws[i];
	w->idx = i;
	w->e = curl_easy_init();
	char *url;
	if (asprintf(&url, "%s%s?watch=true&timeoutSeconds=3600&resourceVersion=%s", opt.server, opt.path, list_rv) < 0)
		die("out of memory");
	curl_easy_setopt(w->e, CURLOPT_URL, url);
	free(url);
	curl_easy_setopt(w->e, CURLOPT_HTTPHEADER, hdrs);
	curl_easy_setopt(w->e, CURLOPT_PRIVATE, w);
	curl_easy_setopt(w->e, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(w->e, CURLOPT_WRITEDATA, w);
	curl_easy_setopt(w->e, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(w->e, CURLOPT_HEADERDATA, w);
	curl_easy_setopt(w->e, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(w->e, CURLOPT_CONNECTTIMEOUT_MS, 10000L);
	curl_easy_setopt(w->e, CURLOPT_FORBID_REUSE, 1L);
	if (opt.cacert)
		curl_easy_setopt(w->e, CURLOPT_CAINFO, opt.cacert);
	atomic_fetch_add(&opening, 1);
	curl_multi_add_handle(multi, w->e);
}

static void read_done(void)
{
	CURLMsg *msg;
	int left;
	while ((msg = curl_multi_info_read(multi, &left))) {
		if (msg->msg != CURLMSG_DONE)
			continue;
		struct watch *w;
		curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&w);
		w->done = true;
		if (!w->headers) {
			atomic_fetch_sub(&opening, 1);
			atomic_fetch_add(&failed_curl, 1);
			static int shown;
			if (shown++ < 3)
				fprintf(stderr, "watch %d: %s\n", w->idx, curl_easy_strerror(msg->data.result));
		} else if (w->status == 200) {
			atomic_fetch_sub(&held, 1); /* ended while held */
		}
		curl_multi_remove_handle(multi, w->e);
		curl_easy_cleanup(w->e);
		w->e = NULL;
	}
}

/* Runs the loop for at most ms. */
static void pump(int ms)
{
	struct epoll_event evs[512];
	int running;
	int64_t end = now_us() / 1000 + ms;
	for (;;) {
		int64_t now = now_us() / 1000;
		if (now >= end)
			return;
		int64_t until = timer_at >= 0 && timer_at < end ? timer_at : end;
		int n = epoll_wait(ep, evs, 512, until > now ? (int)(until - now) : 0);
		for (int i = 0; i < n; i++) {
			int f = (evs[i].events & EPOLLIN ? CURL_CSELECT_IN : 0) | (evs[i].events & EPOLLOUT ? CURL_CSELECT_OUT : 0) |
				(evs[i].events & (EPOLLERR | EPOLLHUP) ? CURL_CSELECT_ERR : 0);
			curl_multi_socket_action(multi, evs[i].data.fd, f, &running);
		}
		if (timer_at >= 0 && now_us() / 1000 >= timer_at) {
			timer_at = -1;
			curl_multi_socket_action(multi, CURL_SOCKET_TIMEOUT, 0, &running);
		}
		read_done();
	}
}

/* --- plain requests --------------------------------------------------------------------- */
struct mem {
	char *p;
	size_t n;
};

static size_t on_mem(char *d, size_t s, size_t n, void *ud)
{
	struct mem *m = ud;
	m->p = realloc(m->p, m->n + s * n + 1);
	memcpy(m->p + m->n, d, s * n);
	m->n += s * n;
	m->p[m->n] = 0;
	return s * n;
}

static long request(CURL *e, const char *method, const char *body, struct mem *out)
{
	char *url;
	if (asprintf(&url, "%s%s", opt.server, opt.path) < 0)
		die("out of memory");
	curl_easy_reset(e);
	curl_easy_setopt(e, CURLOPT_URL, url);
	curl_easy_setopt(e, CURLOPT_HTTPHEADER, hdrs);
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_mem);
	curl_easy_setopt(e, CURLOPT_WRITEDATA, out);
	curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, 30000L);
	if (opt.cacert)
		curl_easy_setopt(e, CURLOPT_CAINFO, opt.cacert);
	if (body) {
		curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, method);
		curl_easy_setopt(e, CURLOPT_POSTFIELDS, body);
	}
	long code = 0;
	if (curl_easy_perform(e) == CURLE_OK)
		curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &code);
	free(url);
	return code;
}

static void *creator(void *arg)
{
	CURL *e = curl_easy_init();
	for (int k = 0; k < opt.m; k++) {
		char body[256];
		snprintf(body, sizeof(body),
			 "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"%s%d\"},\"data\":{\"k\":\"v\"}}",
			 opt.prefix, k);
		struct mem out = { 0 };
		created_us[k] = now_us();
		long code = request(e, "POST", body, &out);
		if (code != 201)
			fprintf(stderr, "create %s%d: HTTP %ld %s\n", opt.prefix, k, code, out.p ? out.p : "");
		free(out.p);
		usleep((useconds_t)opt.interval_ms * 1000);
	}
	curl_easy_cleanup(e);
	atomic_store(&creates_done, 1);
	return NULL;
}

/* --- main -------------------------------------------------------------------------------- */
static int cmp64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return x < y ? -1 : x > y;
}

static double pct(int64_t *v, size_t n, double p)
{
	if (!n)
		return -1;
	size_t i = (size_t)(p * (double)(n - 1) + 0.5);
	return (double)v[i] / 1000.0;
}

static void parse_args(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!v)
			die("every option takes a value");
		i++;
		if (!strcmp(a, "--server"))
			opt.server = v;
		else if (!strcmp(a, "--token"))
			opt.token = v;
		else if (!strcmp(a, "--path"))
			opt.path = v;
		else if (!strcmp(a, "--prefix") && strlen(v) < 32 && !strpbrk(v, "\"\\"))
			opt.prefix = v;
		else if (!strcmp(a, "--cacert"))
			opt.cacert = v;
		else if (!strcmp(a, "--watches"))
			opt.n = num(v);
		else if (!strcmp(a, "--objects"))
			opt.m = num(v);
		else if (!strcmp(a, "--interval-ms"))
			opt.interval_ms = num(v);
		else if (!strcmp(a, "--batch"))
			opt.batch = num(v);
		else if (!strcmp(a, "--settle"))
			opt.settle_s = num(v);
		else if (!strcmp(a, "--hold"))
			opt.hold_s = num(v);
		else if (!strcmp(a, "--pid") && opt.npids < MAX_PIDS && strchr(v, '=')) {
			opt.pid_name[opt.npids] = strndup(v, (size_t)(strchr(v, '=') - v));
			opt.pid[opt.npids++] = num(strchr(v, '=') + 1);
		} else
			die("unknown option (see the header of bench/ursa-watchers.c)");
	}
	if (!opt.server || !opt.token || !opt.path || opt.n < 1 || opt.m < 1 || opt.batch < 1)
		die("usage: ursa-watchers --server URL --token TOKEN --path COLLECTION [--watches N] [--objects M] "
		    "[--interval-ms MS] [--batch B] [--settle S] [--hold S] [--pid NAME=PID]... [--cacert FILE]");
}

int main(int argc, char **argv)
{
	parse_args(argc, argv);
	setvbuf(stdout, NULL, _IOLBF, 0);
	struct rlimit rl;
	getrlimit(RLIMIT_NOFILE, &rl);
	rl.rlim_cur = rl.rlim_max;
	setrlimit(RLIMIT_NOFILE, &rl);
	curl_global_init(CURL_GLOBAL_DEFAULT);
	char *auth;
	if (asprintf(&auth, "Authorization: Bearer %s", opt.token) < 0)
		die("out of memory");
	hdrs = curl_slist_append(NULL, auth);
	hdrs = curl_slist_append(hdrs, "Accept: application/json");
	hdrs = curl_slist_append(hdrs, "Content-Type: application/json");
	free(auth);
	CURL *e = curl_easy_init();
	struct mem out = { 0 };
	long code = request(e, "GET", NULL, &out);
	json_t *list = code == 200 ? json_loads(out.p, 0, NULL) : NULL;
	const char *rv = json_string_value(json_object_get(json_object_get(list, "metadata"), "resourceVersion"));
	if (!rv)
		die("cannot list the collection (is the tenant there, the token right?)");
	list_rv = strdup(rv);
	json_decref(list);
	free(out.p);
	curl_easy_cleanup(e);

	ws = calloc((size_t)opt.n, sizeof(*ws));
	created_us = calloc((size_t)opt.m, sizeof(*created_us));
	lat_us = malloc((size_t)opt.m * (size_t)opt.n * sizeof(*lat_us));
	for (size_t i = 0; i < (size_t)opt.m * (size_t)opt.n; i++)
		lat_us[i] = -1;
	ep = epoll_create1(EPOLL_CLOEXEC);
	multi = curl_multi_init();
	curl_multi_setopt(multi, CURLMOPT_SOCKETFUNCTION, on_socket);
	curl_multi_setopt(multi, CURLMOPT_TIMERFUNCTION, on_timer);

	printf("# %d watches on %s%s (nofile limit %llu), then %d creates %d ms apart\n", opt.n, opt.server, opt.path,
	       (unsigned long long)rl.rlim_cur, opt.m, opt.interval_ms);
	struct bench_pstat before[MAX_PIDS], holding[MAX_PIDS], after[MAX_PIDS];
	print_procs("before", before);
	int64_t t0 = now_us();
	for (int i = 0; i < opt.n; i++) {
		while (atomic_load(&opening) >= opt.batch)
			pump(5);
		add_watch(i);
	}
	while (atomic_load(&opening) > 0 && now_us() - t0 < 120 * 1000000LL)
		pump(20);
	double open_s = (double)(now_us() - t0) / 1e6;
	pump(2000); /* anything that ends right away */
	long nheld = atomic_load(&held);
	long f503 = atomic_load(&failed_status[0]), f429 = atomic_load(&failed_status[1]), f504 = atomic_load(&failed_status[2]);
	long f5xx = atomic_load(&failed_status[3]), f4xx = atomic_load(&failed_status[4]), fcurl = atomic_load(&failed_curl);
	printf("held %ld of %d watches after %.1f s; refused: 503=%ld 429=%ld 504=%ld other5xx=%ld 4xx=%ld "
	       "connection=%ld\n",
	       nheld, opt.n, open_s, f503, f429, f504, f5xx, f4xx, fcurl);
	print_procs("holding", holding);
	for (int i = 0; i < opt.npids; i++)
		printf("%-10s cpu to open the watches: %.2f s\n", opt.pid_name[i], holding[i].cpu_s - before[i].cpu_s);

	pthread_t ct;
	int64_t t1 = now_us();
	pthread_create(&ct, NULL, creator, NULL);
	long expect = nheld * opt.m;
	int64_t settle_end = -1;
	while (atomic_load(&received) < expect) {
		pump(100);
		if (atomic_load(&creates_done) && settle_end < 0)
			settle_end = now_us() + (int64_t)opt.settle_s * 1000000;
		if (settle_end >= 0 && now_us() > settle_end)
			break;
	}
	pthread_join(ct, NULL);
	double ev_s = (double)(now_us() - t1) / 1e6;
	print_procs("after events", after);
	if (opt.hold_s > 0) { /* the watches stay open, idle, for what else is measured meanwhile */
		printf("holding the watches for %d s\n", opt.hold_s);
		fflush(stdout);
		for (int64_t end = now_us() + (int64_t)opt.hold_s * 1000000; now_us() < end;)
			pump(100);
	}

	/* latencies of every received event, and per object the time until the last watch had it */
	size_t nl = 0;
	int64_t *all = malloc((size_t)opt.m * (size_t)opt.n * sizeof(*all));
	int64_t *last = calloc((size_t)opt.m, sizeof(*last));
	long complete = 0;
	for (int k = 0; k < opt.m; k++) {
		long got = 0;
		for (int i = 0; i < opt.n; i++) {
			int64_t v = lat_us[(size_t)k * (size_t)opt.n + (size_t)i];
			if (v < 0)
				continue;
			all[nl++] = v;
			got++;
			if (v > last[k])
				last[k] = v;
		}
		if (got == nheld)
			complete++;
	}
	qsort(all, nl, sizeof(*all), cmp64);
	qsort(last, (size_t)opt.m, sizeof(*last), cmp64);
	long nrecv = atomic_load(&received);
	printf("events received %ld of %ld expected (%d objects x %ld watches); objects every watch saw: %ld of %d\n",
	       nrecv, expect, opt.m, nheld, complete, opt.m);
	printf("latency create->receipt ms: p50 %.1f p99 %.1f max %.1f; until the last watch had it: p50 %.1f max %.1f\n",
	       pct(all, nl, 0.5), pct(all, nl, 0.99), pct(all, nl, 1.0), pct(last, (size_t)opt.m, 0.5),
	       pct(last, (size_t)opt.m, 1.0));
	for (int i = 0; i < opt.npids; i++)
		printf("%-10s cpu while %d events fanned out: %.2f s (%.1f s wall)\n", opt.pid_name[i], opt.m,
		       after[i].cpu_s - holding[i].cpu_s, ev_s);
	printf("RESULT watches=%d held=%ld refused503=%ld refused_conn=%ld objects=%d received=%ld expected=%ld "
	       "p50_ms=%.1f p99_ms=%.1f",
	       opt.n, nheld, f503, fcurl, opt.m, nrecv, expect, pct(all, nl, 0.5), pct(all, nl, 0.99));
	for (int i = 0; i < opt.npids; i++)
		printf(" %s_rss_mib=%ld %s_cpu_hold_s=%.2f %s_cpu_events_s=%.2f", opt.pid_name[i], holding[i].rss_kb / 1024,
		       opt.pid_name[i], holding[i].cpu_s - before[i].cpu_s, opt.pid_name[i], after[i].cpu_s - holding[i].cpu_s);
	printf("\n");
	return nrecv == expect && expect > 0 ? 0 : 3;
}
