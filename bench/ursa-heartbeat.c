/*
 * ursa-heartbeat: node-lease renewal load against a resource manager's API server.
 *
 *   ursa-heartbeat --server URL --token T --nodes N --period 10 --duration S [--threads K] [--create]
 *
 * N simulated nodes each renew their coordination.k8s.io/v1 Lease in kube-node-lease once per
 * period with a PUT carrying the resourceVersion of the previous answer (on 409: GET, retry).
 * The schedule is open-loop: renewal j (node j % N, round j / N) is due at t0 + j * period / N,
 * whatever happened to earlier renewals. K worker threads, each with one keep-alive
 * connection, take renewals in order and wait for their due time; a renewal taken after its
 * due time has schedule lag, and one whose lag exceeds --late-ms is counted as late.
 *
 * Reports renewals/s achieved against the target N / period, latency (send -> response),
 * lag (due -> send) and lag + latency percentiles, late renewals, errors by HTTP code, the
 * tool's own CPU time, and a final machine-readable line "RESULT {json}".
 *
 * Bounded: --nodes, --duration and --threads are capped; every request has a timeout; the run
 * stops taking renewals when the duration is over and gives up on stragglers after --grace s.
 */
#define _GNU_SOURCE
#include <curl/curl.h>
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "ursa/buf.h"
#include "ursa/xalloc.h"

#define MAX_NODES 1000000
#define MAX_THREADS 1024
#define MAX_RENEWALS 50000000ULL    /* nodes * rounds */
#define MAX_BODY_BYTES (1u << 20)   /* one response */
#define MAX_RV_BYTES 64
#define MAX_CONFLICT_RETRIES 3
#define NCODES 600                  /* HTTP status slots; 0 = transport error */
#define LEASE_PATH "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases"

/* ---- options -------------------------------------------------------------------------- */

struct opts {
	const char *server, *token, *cacert, *prefix;
	long long nodes, period, duration, threads, late_ms, timeout, grace, lease_seconds;
	bool create;
};

enum opt_type { OPT_STR, OPT_INT, OPT_FLAG };

struct opt_def {
	const char *flag;
	enum opt_type type;
	size_t off;
	long long min, max;
	const char *help;
};

#define OS(f, field, help) { f, OPT_STR, offsetof(struct opts, field), 0, 0, help }
#define OI(f, field, lo, hi, help) { f, OPT_INT, offsetof(struct opts, field), lo, hi, help }
#define OF(f, field, help) { f, OPT_FLAG, offsetof(struct opts, field), 0, 0, help }

static const struct opt_def opt_table[] = {
	OS("--server", server, "RM API server base URL (required)"),
	OS("--token", token, "bearer token"),
	OS("--cacert", cacert, "CA bundle for https"),
	OS("--prefix", prefix, "node name prefix (default hb-node): nodes are PREFIX-0 .. PREFIX-(N-1)"),
	OI("--nodes", nodes, 1, MAX_NODES, "simulated nodes (required)"),
	OI("--period", period, 1, 3600, "renewal period in seconds (default 10)"),
	OI("--duration", duration, 1, 86400, "seconds of renewals (default 60)"),
	OI("--threads", threads, 1, MAX_THREADS, "worker threads, one connection each (default 32)"),
	OI("--late-ms", late_ms, 1, 3600000, "schedule lag above which a renewal is late (default 100)"),
	OI("--timeout", timeout, 1, 600, "per-request timeout in seconds (default 10)"),
	OI("--grace", grace, 1, 3600, "seconds after --duration to finish taken renewals (default 30)"),
	OI("--lease-seconds", lease_seconds, 1, 3600, "spec.leaseDurationSeconds (default 40)"),
	OF("--create", create, "create the leases first (409 AlreadyExists is fine)"),
};

static void opts_defaults(struct opts *o)
{
	memset(o, 0, sizeof(*o));
	o->prefix = "hb-node";
	o->period = 10;
	o->duration = 60;
	o->threads = 32;
	o->late_ms = 100;
	o->timeout = 10;
	o->grace = 30;
	o->lease_seconds = 40;
}

static void usage(void)
{
	fprintf(stderr, "usage: ursa-heartbeat --server URL [--token T] --nodes N [--period 10] "
			"[--duration S] [--threads K] [--create]\n\noptions:\n");
	for (size_t i = 0; i < ARRAY_SIZE(opt_table); i++)
		fprintf(stderr, "  %-16s %s\n", opt_table[i].flag, opt_table[i].help);
}

static int opts_parse(struct opts *o, int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		const struct opt_def *d = NULL;
		long long v;

		for (size_t k = 0; k < ARRAY_SIZE(opt_table); k++)
			if (!strcmp(argv[i], opt_table[k].flag))
				d = &opt_table[k];
		if (!d) {
			fprintf(stderr, "ursa-heartbeat: unknown option '%s'\n", argv[i]);
			return -1;
		}
		if (d->type == OPT_FLAG) {
			*(bool *)((char *)o + d->off) = true;
			continue;
		}
		if (i + 1 >= argc) {
			fprintf(stderr, "ursa-heartbeat: %s needs a value\n", d->flag);
			return -1;
		}
		const char *val = argv[++i];
		if (d->type == OPT_STR) {
			*(const char **)((char *)o + d->off) = val;
			continue;
		}
		if (parse_int64(val, &v) || v < d->min || v > d->max) {
			fprintf(stderr, "ursa-heartbeat: %s wants an integer in [%lld, %lld], got '%s'\n",
				d->flag, d->min, d->max, val);
			return -1;
		}
		*(long long *)((char *)o + d->off) = v;
	}
	if (!o->server || !*o->server || !o->nodes) {
		fprintf(stderr, "ursa-heartbeat: --server and --nodes are required\n");
		return -1;
	}
	return 0;
}

/* ---- time ----------------------------------------------------------------------------- */

static uint64_t mono_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static void sleep_until(uint64_t when_us)
{
	uint64_t now = mono_us();
	struct timespec ts;

	if (when_us <= now)
		return;
	ts.tv_sec = (time_t)((when_us - now) / 1000000u);
	ts.tv_nsec = (long)((when_us - now) % 1000000u) * 1000;
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

/* Appends the current UTC time as RFC 3339 with microseconds (a Lease's MicroTime). */
static void add_micro_time(struct buf *b)
{
	struct timespec ts;
	struct tm tm;

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	buf_addf(b, "%04d-%02d-%02dT%02d:%02d:%02d.%06ldZ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
		 tm.tm_hour, tm.tm_min, tm.tm_sec, ts.tv_nsec / 1000);
}

/* ---- latency samples (microseconds, capped at UINT32_MAX) ------------------------------ */

struct lat {
	uint32_t *v;
	size_t n, cap;
};

static void lat_add(struct lat *l, uint64_t us)
{
	if (l->n == l->cap) {
		l->cap = l->cap ? l->cap * 2 : 4096;
		l->v = xrealloc(l->v, l->cap * sizeof(*l->v));
	}
	l->v[l->n++] = us > UINT32_MAX ? UINT32_MAX : (uint32_t)us;
}

static void lat_merge(struct lat *dst, const struct lat *src)
{
	for (size_t i = 0; i < src->n; i++)
		lat_add(dst, src->v[i]);
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

static void lat_sort(struct lat *l)
{
	if (l->n)
		qsort(l->v, l->n, sizeof(*l->v), cmp_u32);
}

/* Nearest-rank percentile of a sorted sample, in milliseconds. */
static double lat_pct_ms(const struct lat *l, double p)
{
	size_t rank;

	if (!l->n)
		return 0;
	rank = (size_t)((p / 100.0) * (double)l->n + 0.999999);
	if (rank < 1)
		rank = 1;
	if (rank > l->n)
		rank = l->n;
	return (double)l->v[rank - 1] / 1000.0;
}

static void lat_release(struct lat *l)
{
	free(l->v);
	memset(l, 0, sizeof(*l));
}

static void lat_print(const char *what, const struct lat *l)
{
	printf("  %-15s p50=%.2f ms  p90=%.2f ms  p99=%.2f ms  max=%.2f ms  (n=%zu)\n", what,
	       lat_pct_ms(l, 50), lat_pct_ms(l, 90), lat_pct_ms(l, 99), lat_pct_ms(l, 100), l->n);
}

/* Adds <prefix>p50_ms .. <prefix>max_ms of a sorted sample to obj. */
static void lat_json(json_t *obj, const char *prefix, const struct lat *l)
{
	static const struct { const char *name; double p; } pcts[] = {
		{ "p50_ms", 50 }, { "p90_ms", 90 }, { "p99_ms", 99 }, { "max_ms", 100 },
	};
	struct buf key = BUF_INIT;

	for (size_t i = 0; i < ARRAY_SIZE(pcts); i++) {
		buf_reset(&key);
		buf_addf(&key, "%s%s", prefix, pcts[i].name);
		json_object_set_new(obj, buf_cstr(&key), json_real(lat_pct_ms(l, pcts[i].p)));
	}
	buf_release(&key);
}

/* ---- one keep-alive HTTP connection ---------------------------------------------------- */

struct http {
	CURL *h;
	struct curl_slist *hdrs;
	struct buf body;      /* last response body */
	bool overflow;
};

static size_t on_body(char *data, size_t size, size_t nmemb, void *arg)
{
	struct http *c = arg;
	size_t n = size * nmemb;

	if (c->body.len + n > MAX_BODY_BYTES) {
		c->overflow = true;
		return 0;
	}
	buf_add(&c->body, data, n);
	return n;
}

static void http_init(struct http *c, const struct opts *o)
{
	struct buf auth = BUF_INIT;

	memset(c, 0, sizeof(*c));
	c->h = curl_easy_init();
	if (!c->h) {
		fputs("ursa-heartbeat: curl_easy_init failed\n", stderr);
		abort();
	}
	c->hdrs = curl_slist_append(c->hdrs, "Accept: application/json");
	c->hdrs = curl_slist_append(c->hdrs, "Content-Type: application/json");
	c->hdrs = curl_slist_append(c->hdrs, "Expect:");
	if (o->token && *o->token) {
		buf_addf(&auth, "Authorization: Bearer %s", o->token);
		c->hdrs = curl_slist_append(c->hdrs, buf_cstr(&auth));
	}
	buf_release(&auth);
	curl_easy_setopt(c->h, CURLOPT_HTTPHEADER, c->hdrs);
	curl_easy_setopt(c->h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c->h, CURLOPT_TCP_NODELAY, 1L);
	curl_easy_setopt(c->h, CURLOPT_CONNECTTIMEOUT_MS, 10000L);
	curl_easy_setopt(c->h, CURLOPT_TIMEOUT_MS, (long)o->timeout * 1000L);
	curl_easy_setopt(c->h, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(c->h, CURLOPT_WRITEDATA, c);
	curl_easy_setopt(c->h, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
	if (o->cacert)
		curl_easy_setopt(c->h, CURLOPT_CAINFO, o->cacert);
}

static void http_release(struct http *c)
{
	if (c->h)
		curl_easy_cleanup(c->h);
	curl_slist_free_all(c->hdrs);
	buf_release(&c->body);
	memset(c, 0, sizeof(*c));
}

/* One request on the kept-alive connection; body may be NULL. Returns the HTTP status, or 0
 * on a transport error (or an oversized answer); c->body holds the response. */
static long http_do(struct http *c, const char *method, const char *url, const struct buf *body)
{
	long code = 0;

	buf_reset(&c->body);
	c->overflow = false;
	curl_easy_setopt(c->h, CURLOPT_URL, url);
	if (body) {
		curl_easy_setopt(c->h, CURLOPT_POSTFIELDS, buf_cstr(body));
		curl_easy_setopt(c->h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)body->len);
	} else {
		curl_easy_setopt(c->h, CURLOPT_HTTPGET, 1L);
	}
	curl_easy_setopt(c->h, CURLOPT_CUSTOMREQUEST, strcmp(method, body ? "POST" : "GET") ? method : NULL);
	if (curl_easy_perform(c->h) != CURLE_OK || c->overflow)
		return 0;
	curl_easy_getinfo(c->h, CURLINFO_RESPONSE_CODE, &code);
	return code > 0 && code < NCODES ? code : 0;
}

/* ---- the run --------------------------------------------------------------------------- */

/* One simulated node. rv is written only by the worker holding busy. */
struct node {
	atomic_flag busy;
	struct buf rv;
};

struct run {
	const struct opts *o;
	struct node *nodes;
	uint64_t t0;               /* monotonic us of renewal 0 */
	uint64_t total;            /* renewals in the run: nodes * rounds */
	uint64_t hard_stop;        /* monotonic us after which taken renewals are dropped */
	atomic_ullong next;        /* next renewal index (also: next node during setup) */
	atomic_ullong done;        /* finished renewals, for progress */
	atomic_ullong ok;
	atomic_int stop;
};

struct worker {
	struct run *run;
	pthread_t tid;
	struct http c;
	struct buf url, body;
	struct lat lat, lag, total;
	uint64_t codes[NCODES];
	uint64_t ok, late, conflicts, overlap, dropped, setup_ok, setup_fail;
};

static void lease_url(struct worker *w, size_t i)
{
	const struct opts *o = w->run->o;

	buf_reset(&w->url);
	buf_addf(&w->url, "%s%s/%s-%zu", o->server, LEASE_PATH, o->prefix, i);
}

static void lease_body(struct worker *w, size_t i, const struct buf *rv)
{
	const struct opts *o = w->run->o;

	buf_reset(&w->body);
	buf_addf(&w->body, "{\"apiVersion\":\"coordination.k8s.io/v1\",\"kind\":\"Lease\",\"metadata\":"
			   "{\"name\":\"%s-%zu\",\"namespace\":\"kube-node-lease\"", o->prefix, i);
	if (rv && rv->len) {
		buf_adds(&w->body, ",\"resourceVersion\":");
		buf_add_json_str(&w->body, buf_cstr(rv), rv->len);
	}
	buf_addf(&w->body, "},\"spec\":{\"holderIdentity\":\"%s-%zu\",\"leaseDurationSeconds\":%lld,"
			   "\"renewTime\":\"", o->prefix, i, o->lease_seconds);
	add_micro_time(&w->body);
	buf_adds(&w->body, "\"}}");
}

/* Copies metadata.resourceVersion of the Lease in body into rv. A Lease holds exactly one
 * "resourceVersion" key, so a scan avoids parsing every answer on a CPU shared with the
 * server; the JSON parse is the fallback. Returns 0, or -1 when there is none. */
static int take_rv(const struct buf *body, struct buf *rv)
{
	static const char key[] = "\"resourceVersion\":\"";
	const char *p = body->ptr ? memmem(body->ptr, body->len, key, sizeof(key) - 1) : NULL;

	if (p) {
		const char *s = p + sizeof(key) - 1, *end = body->ptr + body->len, *e = s;

		while (e < end && *e != '"' && *e != '\\' && e - s <= MAX_RV_BYTES)
			e++;
		if (e < end && *e == '"' && e > s) {
			buf_reset(rv);
			buf_add(rv, s, (size_t)(e - s));
			return 0;
		}
	}
	json_t *j = json_loadb(buf_cstr(body), body->len, 0, NULL);
	const char *v = json_string_value(json_object_get(json_object_get(j, "metadata"), "resourceVersion"));
	int rc = -1;

	if (v && *v && strlen(v) <= MAX_RV_BYTES) {
		buf_reset(rv);
		buf_adds(rv, v);
		rc = 0;
	}
	json_decref(j);
	return rc;
}

/* GETs lease i into node->rv. Returns the HTTP status (0: transport error). */
static long fetch_rv(struct worker *w, size_t i)
{
	long code;

	lease_url(w, i);
	code = http_do(&w->c, "GET", buf_cstr(&w->url), NULL);
	if (code == 200 && take_rv(&w->c.body, &w->run->nodes[i].rv))
		return 0;
	return code;
}

/* Setup: creates (POST; 409 then GET) or just reads every lease, nodes taken in order. */
static void *setup_main(void *arg)
{
	struct worker *w = arg;
	struct run *r = w->run;
	struct buf coll = BUF_INIT;

	buf_addf(&coll, "%s%s", r->o->server, LEASE_PATH);
	for (;;) {
		uint64_t i = atomic_fetch_add(&r->next, 1);
		long code;

		if (i >= (uint64_t)r->o->nodes || atomic_load(&r->stop))
			break;
		long first;
		if (r->o->create) {
			lease_body(w, i, NULL);
			code = first = http_do(&w->c, "POST", buf_cstr(&coll), &w->body);
			if (code == 201 && take_rv(&w->c.body, &r->nodes[i].rv))
				code = 0;
			if (code == 409)
				code = fetch_rv(w, i) == 200 ? 201 : 0;
		} else {
			code = first = fetch_rv(w, i) == 200 ? 201 : 0;
		}
		if (code == 201) {
			w->setup_ok++;
		} else {
			w->setup_fail++;
			/* what a failing request got: the first few, for the record */
			static atomic_int told;
			if (atomic_fetch_add(&told, 1) < 5)
				fprintf(stderr, "ursa-heartbeat: setup of lease %" PRIu64 ": HTTP %ld%s: %.300s\n", i, first,
					first ? "" : " (transport error)", buf_cstr(&w->c.body));
		}
		atomic_fetch_add(&r->done, 1);
	}
	buf_release(&coll);
	return NULL;
}

/* One renewal of node i: PUT; on 409 GET and PUT again. Returns the final HTTP status. */
static long renew(struct worker *w, size_t i)
{
	struct node *n = &w->run->nodes[i];
	long code = 0;

	for (int attempt = 0; attempt <= MAX_CONFLICT_RETRIES; attempt++) {
		lease_url(w, i);
		lease_body(w, i, &n->rv);
		code = http_do(&w->c, "PUT", buf_cstr(&w->url), &w->body);
		if (code == 200) {
			if (take_rv(&w->c.body, &n->rv))
				buf_reset(&n->rv);
			return code;
		}
		if (code != 409)
			return code;
		w->conflicts++;
		if (fetch_rv(w, i) != 200)
			return 409;
	}
	return code;
}

static uint64_t due_us(const struct run *r, uint64_t j)
{
	/* j * period / N without overflow: j < 5e7, period_us < 3.6e9. */
	return r->t0 + (uint64_t)((unsigned __int128)j * (uint64_t)r->o->period * 1000000u /
				  (uint64_t)r->o->nodes);
}

static void *renew_main(void *arg)
{
	struct worker *w = arg;
	struct run *r = w->run;
	uint64_t late_us = (uint64_t)r->o->late_ms * 1000u;

	for (;;) {
		uint64_t j = atomic_fetch_add(&r->next, 1);
		size_t i = (size_t)(j % (uint64_t)r->o->nodes);
		uint64_t due, start, end;
		long code;

		if (j >= r->total || atomic_load(&r->stop))
			break;
		due = due_us(r, j);
		sleep_until(due);
		start = mono_us();
		if (start >= r->hard_stop) {
			w->dropped++;
			continue;
		}
		if (start - due > late_us)
			w->late++;
		/* Only possible when lag exceeds a whole period: the node's previous renewal runs. */
		if (atomic_flag_test_and_set(&r->nodes[i].busy)) {
			w->overlap++;
			w->codes[0]++;
			atomic_fetch_add(&r->done, 1);
			continue;
		}
		code = renew(w, i);
		end = mono_us();
		atomic_flag_clear(&r->nodes[i].busy);
		w->codes[code]++;
		if (code == 200) {
			w->ok++;
			atomic_fetch_add(&r->ok, 1);
			lat_add(&w->lat, end - start);
			lat_add(&w->lag, start - due);
			lat_add(&w->total, end - due);
		}
		atomic_fetch_add(&r->done, 1);
	}
	return NULL;
}

static volatile sig_atomic_t interrupted;

static void on_signal(int sig)
{
	(void)sig;
	interrupted = 1;
}

/* Runs fn on every worker and prints progress every 10 s until they finish. */
static void run_workers(struct run *r, struct worker *ws, int nt, void *(*fn)(void *), const char *what,
			uint64_t expect)
{
	int started = 0;
	uint64_t t_start = mono_us(), last = t_start;

	atomic_store(&r->next, 0);
	atomic_store(&r->done, 0);
	for (; started < nt; started++)
		if (pthread_create(&ws[started].tid, NULL, fn, &ws[started]))
			break;
	if (started < nt)
		fprintf(stderr, "ursa-heartbeat: only %d of %d threads started\n", started, nt);
	while (atomic_load(&r->done) < expect && atomic_load(&r->next) < expect + (uint64_t)started) {
		uint64_t now;

		usleep(100000);
		if (interrupted)
			atomic_store(&r->stop, 1);
		now = mono_us();
		if (now - last >= 10000000u) {
			last = now;
			printf("  %s: t=%.0fs done=%llu/%llu ok=%llu\n", what, (double)(now - t_start) / 1e6,
			       (unsigned long long)atomic_load(&r->done), (unsigned long long)expect,
			       (unsigned long long)atomic_load(&r->ok));
		}
		if (atomic_load(&r->stop))
			break;
	}
	for (int k = 0; k < started; k++)
		pthread_join(ws[k].tid, NULL);
}

static double cpu_seconds(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec +
	       (double)ru.ru_stime.tv_usec / 1e6;
}

struct totals {
	struct lat lat, lag, total;
	uint64_t codes[NCODES];
	uint64_t ok, late, conflicts, overlap, dropped, setup_ok, setup_fail;
};

static void collect(struct worker *ws, int nt, struct totals *t)
{
	for (int k = 0; k < nt; k++) {
		struct worker *w = &ws[k];

		lat_merge(&t->lat, &w->lat);
		lat_merge(&t->lag, &w->lag);
		lat_merge(&t->total, &w->total);
		for (int c = 0; c < NCODES; c++)
			t->codes[c] += w->codes[c];
		t->ok += w->ok;
		t->late += w->late;
		t->conflicts += w->conflicts;
		t->overlap += w->overlap;
		t->dropped += w->dropped;
		t->setup_ok += w->setup_ok;
		t->setup_fail += w->setup_fail;
	}
	lat_sort(&t->lat);
	lat_sort(&t->lag);
	lat_sort(&t->total);
}

static json_t *codes_json(const uint64_t *codes, uint64_t *ret_errors)
{
	json_t *o = json_object();
	struct buf key = BUF_INIT;
	uint64_t errors = 0;

	printf("  codes:");
	for (int c = 0; c < NCODES; c++) {
		if (!codes[c])
			continue;
		printf(" %s%d=%" PRIu64, c ? "" : "transport-error/overlap:", c, codes[c]);
		if (c != 200)
			errors += codes[c];
		buf_reset(&key);
		buf_addf(&key, "%d", c);
		json_object_set_new(o, buf_cstr(&key), json_integer((json_int_t)codes[c]));
	}
	printf("\n");
	buf_release(&key);
	*ret_errors = errors;
	return o;
}

static void report(const struct run *r, struct totals *t, double setup_s, double run_s, double cpu_s)
{
	const struct opts *o = r->o;
	double target = (double)o->nodes / (double)o->period;
	/* Renewals that finished late stretch the run past --duration: rate over the real span. */
	double span = run_s > (double)o->duration ? run_s : (double)o->duration;
	double achieved = (double)t->ok / span;
	uint64_t errors;
	json_t *codes, *res;

	printf("heartbeat: %lld nodes, period %lld s, %lld s, %lld threads: %" PRIu64 "/%" PRIu64
	       " renewals ok, %.1f/s (target %.1f/s)\n",
	       o->nodes, o->period, o->duration, o->threads, t->ok, r->total, achieved, target);
	lat_print("latency", &t->lat);
	lat_print("schedule lag", &t->lag);
	lat_print("lag+latency", &t->total);
	codes = codes_json(t->codes, &errors);
	printf("  late (lag > %lld ms): %" PRIu64 "  conflicts retried: %" PRIu64 "  overlapping: %" PRIu64
	       "  dropped at hard stop: %" PRIu64 "\n", o->late_ms, t->late, t->conflicts, t->overlap, t->dropped);
	printf("  setup: %" PRIu64 " leases ready, %" PRIu64 " failed, %.1f s; tool CPU %.1f s (%.2f cores)\n",
	       t->setup_ok, t->setup_fail, setup_s, cpu_s, run_s > 0 ? cpu_s / run_s : 0);

	res = json_pack("{s:s,s:I,s:I,s:I,s:I,s:I,s:f,s:f,s:f,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:o,s:f,s:f,s:f}",
			"test", "heartbeat", "nodes", (json_int_t)o->nodes, "period_s", (json_int_t)o->period,
			"duration_s", (json_int_t)o->duration, "threads", (json_int_t)o->threads,
			"late_ms", (json_int_t)o->late_ms, "target_per_s", target, "achieved_per_s", achieved,
			"achieved_ratio", target > 0 ? achieved / target : 0, "scheduled", (json_int_t)r->total,
			"ok", (json_int_t)t->ok, "errors", (json_int_t)errors, "late", (json_int_t)t->late,
			"conflicts", (json_int_t)t->conflicts, "overlap", (json_int_t)t->overlap,
			"dropped", (json_int_t)t->dropped, "codes", codes, "setup_s", setup_s, "run_s", run_s,
			"tool_cpu_cores", run_s > 0 ? cpu_s / run_s : 0);
	if (!res) {
		fputs("ursa-heartbeat: json_pack failed\n", stderr);
		return;
	}
	json_object_set_new(res, "setup_ok", json_integer((json_int_t)t->setup_ok));
	json_object_set_new(res, "setup_failed", json_integer((json_int_t)t->setup_fail));
	lat_json(res, "", &t->lat);
	lat_json(res, "lag_", &t->lag);
	lat_json(res, "total_", &t->total);
	char *s = json_dumps(res, JSON_COMPACT | JSON_REAL_PRECISION(6));
	printf("RESULT %s\n", s ? s : "{}");
	free(s);
	json_decref(res);
}

static int heartbeat(const struct opts *o)
{
	int nt = (int)o->threads;
	struct run r = { .o = o };
	struct worker *ws = xcalloc((size_t)nt, sizeof(*ws));
	struct totals t = { 0 };
	uint64_t rounds = (uint64_t)((o->duration + o->period - 1) / o->period);
	double setup_s, run_s, cpu0;
	int rc = 1;

	if ((uint64_t)o->nodes * rounds > MAX_RENEWALS) {
		fprintf(stderr, "ursa-heartbeat: nodes * rounds is capped at %llu\n", MAX_RENEWALS);
		free(ws);
		return 2;
	}
	/* Renewals due within the duration: j * period / N < duration. */
	r.total = (uint64_t)o->nodes * (uint64_t)o->duration / (uint64_t)o->period;
	if (!r.total)
		r.total = 1;
	r.nodes = xcalloc((size_t)o->nodes, sizeof(*r.nodes));
	for (long long i = 0; i < o->nodes; i++)
		atomic_flag_clear(&r.nodes[i].busy);
	for (int k = 0; k < nt; k++) {
		ws[k].run = &r;
		http_init(&ws[k].c, o);
	}
	atomic_init(&r.stop, 0);
	atomic_init(&r.ok, 0);

	uint64_t t_setup = mono_us();
	printf("heartbeat: %s %lld leases with %d threads\n", o->create ? "creating" : "reading", o->nodes, nt);
	run_workers(&r, ws, nt, setup_main, "setup", (uint64_t)o->nodes);
	setup_s = (double)(mono_us() - t_setup) / 1e6;
	collect(ws, nt, &t);
	printf("heartbeat: %" PRIu64 " leases ready, %" PRIu64 " failed in %.1f s\n", t.setup_ok, t.setup_fail,
	       setup_s);
	if (t.setup_fail || atomic_load(&r.stop)) {
		fprintf(stderr, "ursa-heartbeat: lease setup failed; not renewing\n");
		goto out;
	}
	memset(&t, 0, sizeof(t));
	for (int k = 0; k < nt; k++)
		ws[k].setup_ok = ws[k].setup_fail = 0;

	cpu0 = cpu_seconds();
	r.t0 = mono_us() + 100000u;
	r.hard_stop = r.t0 + (uint64_t)(o->duration + o->grace) * 1000000u;
	run_workers(&r, ws, nt, renew_main, "renew", r.total);
	run_s = (double)(mono_us() - r.t0) / 1e6;
	collect(ws, nt, &t);
	t.setup_ok = (uint64_t)o->nodes;
	report(&r, &t, setup_s, run_s, cpu_seconds() - cpu0);
	rc = t.ok == r.total ? 0 : 1;
out:
	for (int k = 0; k < nt; k++) {
		http_release(&ws[k].c);
		buf_release(&ws[k].url);
		buf_release(&ws[k].body);
		lat_release(&ws[k].lat);
		lat_release(&ws[k].lag);
		lat_release(&ws[k].total);
	}
	for (long long i = 0; i < o->nodes; i++)
		buf_release(&r.nodes[i].rv);
	free(r.nodes);
	free(ws);
	lat_release(&t.lat);
	lat_release(&t.lag);
	lat_release(&t.total);
	return rc;
}

int main(int argc, char **argv)
{
	struct opts o;
	struct sigaction sa = { .sa_handler = on_signal };
	int rc;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			usage();
			return 0;
		}
	}
	opts_defaults(&o);
	if (opts_parse(&o, argc, argv)) {
		usage();
		return 2;
	}
	signal(SIGPIPE, SIG_IGN);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	setvbuf(stdout, NULL, _IOLBF, 0);
	curl_global_init(CURL_GLOBAL_ALL);
	rc = heartbeat(&o);
	curl_global_cleanup();
	return rc;
}
