/*
 * ursa-load: load generator for the Ursa tenant-partition API server and for etcd's JSON
 * gateway, so both can be measured side by side from one tool.
 *
 * Subcommands (see the table at the bottom): etcd-put, create-pods, list, watch, rss,
 * request, free-port. Each prints human-readable lines and ends with one machine-readable
 * line "RESULT {json}".
 *
 * Self-contained on purpose (libcurl, jansson, pthreads only) so that it builds while the
 * rest of the tree is in flux. Everything is bounded: durations, counts, per-request
 * timeouts, buffer sizes.
 */
#define _GNU_SOURCE
#include <curl/curl.h>
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAX_CLIENTS 4096
#define MAX_WATCHERS 20000
#define MAX_UPDATES 1000000
#define MAX_WATCH_EVENTS 50000000ULL
#define MAX_LINE_BYTES (16u << 20)     /* one watch event line */
#define MAX_BODY_BYTES (1024u << 20)   /* one response body */
#define MAX_VALUE_BYTES (1u << 20)
#define NCODES 600                     /* HTTP status slots; 0 = transport error */

/* ---- allocation and a small growable string ------------------------------------------ */

static void *must_alloc(void *p)
{
	if (!p) {
		fputs("ursa-load: out of memory\n", stderr);
		abort();
	}
	return p;
}

static void *bmalloc(size_t n) { return must_alloc(malloc(n ? n : 1)); }
static void *bcalloc(size_t n, size_t sz) { return must_alloc(calloc(n ? n : 1, sz ? sz : 1)); }
static void *brealloc(void *p, size_t n) { return must_alloc(realloc(p, n ? n : 1)); }

struct sb {
	char *p;      /* NUL-terminated once allocated */
	size_t len;
	size_t cap;
};

static void sb_grow(struct sb *s, size_t extra)
{
	size_t want = s->len + extra + 1;

	if (want <= s->cap)
		return;
	size_t cap = s->cap ? s->cap : 64;
	while (cap < want)
		cap *= 2;
	s->p = brealloc(s->p, cap);
	s->cap = cap;
}

static void sb_add(struct sb *s, const void *data, size_t n)
{
	sb_grow(s, n);
	memcpy(s->p + s->len, data, n);
	s->len += n;
	s->p[s->len] = '\0';
}

static void sb_adds(struct sb *s, const char *str) { sb_add(s, str, strlen(str)); }

static void sb_addch(struct sb *s, char c, size_t times)
{
	sb_grow(s, times);
	memset(s->p + s->len, c, times);
	s->len += times;
	s->p[s->len] = '\0';
}

__attribute__((format(printf, 2, 3)))
static void sb_addf(struct sb *s, const char *fmt, ...)
{
	va_list ap;
	int n;

	sb_grow(s, 64);
	va_start(ap, fmt);
	n = vsnprintf(s->p + s->len, s->cap - s->len, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n >= s->cap - s->len) {
		sb_grow(s, (size_t)n);
		va_start(ap, fmt);
		vsnprintf(s->p + s->len, s->cap - s->len, fmt, ap);
		va_end(ap);
	}
	s->len += (size_t)n;
}

static void sb_reset(struct sb *s)
{
	s->len = 0;
	if (s->p)
		s->p[0] = '\0';
}

static void sb_free(struct sb *s)
{
	free(s->p);
	s->p = NULL;
	s->len = s->cap = 0;
}

static const char *sb_str(const struct sb *s) { return s->p ? s->p : ""; }

/* Standard base64 with padding (what etcd's gateway requires). */
static void sb_add_base64(struct sb *s, const unsigned char *in, size_t n)
{
	static const char tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	size_t i;

	sb_grow(s, (n + 2) / 3 * 4);
	for (i = 0; i + 2 < n; i += 3) {
		uint32_t v = (uint32_t)in[i] << 16 | (uint32_t)in[i + 1] << 8 | in[i + 2];
		char q[4] = { tab[v >> 18], tab[(v >> 12) & 63], tab[(v >> 6) & 63], tab[v & 63] };
		sb_add(s, q, 4);
	}
	if (i < n) {
		uint32_t v = (uint32_t)in[i] << 16 | (i + 1 < n ? (uint32_t)in[i + 1] << 8 : 0);
		char q[4] = { tab[v >> 18], tab[(v >> 12) & 63], i + 1 < n ? tab[(v >> 6) & 63] : '=', '=' };
		sb_add(s, q, 4);
	}
}

/* ---- time ----------------------------------------------------------------------------- */

static uint64_t clock_us(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static uint64_t mono_now(void) { return clock_us(CLOCK_MONOTONIC); }
static uint64_t wall_now(void) { return clock_us(CLOCK_REALTIME); }

static void sleep_us(uint64_t us)
{
	struct timespec ts = { (time_t)(us / 1000000u), (long)(us % 1000000u) * 1000 };

	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

/* ---- options (one table) -------------------------------------------------------------- */

struct opts {
	const char *endpoint, *server, *token, *cacert, *tenant, *ns, *path;
	const char *method, *data, *content_type, *expect, *update, *name;
	const char *probe_token, *probe_path;
	long long clients, duration, value_bytes, pod_bytes, count, repeat;
	long long heavy_nice;
	long long watchers, updates, watch_threads, rate, timeout, pid;
	long long establish_timeout, drain_timeout;
};

enum opt_type { OPT_STR, OPT_INT };

struct opt_def {
	const char *flag;
	enum opt_type type;
	size_t off;
	long long min, max;
	const char *help;
};

#define OS(f, field, help) { f, OPT_STR, offsetof(struct opts, field), 0, 0, help }
#define OI(f, field, lo, hi, help) { f, OPT_INT, offsetof(struct opts, field), lo, hi, help }

static const struct opt_def opt_table[] = {
	OS("--endpoint", endpoint, "etcd client URL (etcd-put)"),
	OS("--server", server, "API server base URL"),
	OS("--token", token, "bearer token"),
	OS("--cacert", cacert, "CA bundle for https"),
	OS("--tenant", tenant, "tenant (default: bench)"),
	OS("--namespace", ns, "namespace (default: default)"),
	OS("--path", path, "request path (list, request)"),
	OS("--method", method, "HTTP method (request; default GET)"),
	OS("--data", data, "request body (request)"),
	OS("--content-type", content_type, "body content type (request)"),
	OS("--expect", expect, "accepted codes: 201,409 or any (request; default 2xx)"),
	OS("--update", update, "patch|put (watch; default patch)"),
	OS("--name", name, "object name (watch configmap)"),
	OS("--probe-token", probe_token, "bearer token of the probing client (fairness)"),
	OS("--probe-path", probe_path, "path the probing client GETs, one at a time (fairness)"),
	OI("--clients", clients, 0, MAX_CLIENTS, "concurrent clients (default 8; fairness: 0 for none)"),
	OI("--heavy-nice", heavy_nice, 0, 19,
	   "fairness: the heavy clients' threads run at this nice value, the probe at 0 (a stand-in for "
	   "clients on other machines; default 0)"),
	OI("--duration", duration, 1, 86400, "seconds (default 10; with --count: upper bound, default 1800)"),
	OI("--value-bytes", value_bytes, 1, MAX_VALUE_BYTES, "etcd value size (default 1500)"),
	OI("--pod-bytes", pod_bytes, 200, MAX_VALUE_BYTES, "approximate pod JSON size (default 1500)"),
	OI("--count", count, 1, 100000000, "total requests instead of a duration"),
	OI("--repeat", repeat, 1, 1000000, "LIST repetitions (default 10)"),
	OI("--watchers", watchers, 1, MAX_WATCHERS, "watch streams (default 100)"),
	OI("--updates", updates, 1, MAX_UPDATES, "updates to send (default 100)"),
	OI("--watch-threads", watch_threads, 1, 64, "threads driving the watch streams (default 1)"),
	OI("--rate", rate, 0, 1000000, "updates per second, 0 = as fast as possible"),
	OI("--timeout", timeout, 1, 3600, "per-request timeout in seconds (default 30)"),
	OI("--establish-timeout", establish_timeout, 1, 3600, "seconds to wait for watches (default 60)"),
	OI("--drain-timeout", drain_timeout, 1, 3600, "seconds without progress before giving up (default 15)"),
	OI("--pid", pid, 1, 1LL << 31, "process id (rss)"),
};

static void opts_defaults(struct opts *o)
{
	memset(o, 0, sizeof(*o));
	o->tenant = "bench";
	o->ns = "default";
	o->clients = 8;
	o->value_bytes = 1500;
	o->pod_bytes = 1500;
	o->repeat = 10;
	o->watchers = 100;
	o->updates = 100;
	o->watch_threads = 1;
	o->timeout = 30;
	o->establish_timeout = 60;
	o->drain_timeout = 15;
}

static int parse_ll(const char *s, long long *ret_v)
{
	char *end;
	long long v;

	if (!*s)
		return -1;
	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno || *end)
		return -1;
	*ret_v = v;
	return 0;
}

static int opts_parse(struct opts *o, int argc, char **argv)
{
	for (int i = 0; i < argc; i++) {
		const struct opt_def *d = NULL;

		for (size_t k = 0; k < sizeof(opt_table) / sizeof(opt_table[0]); k++)
			if (!strcmp(argv[i], opt_table[k].flag))
				d = &opt_table[k];
		if (!d) {
			fprintf(stderr, "ursa-load: unknown option '%s'\n", argv[i]);
			return -1;
		}
		if (i + 1 >= argc) {
			fprintf(stderr, "ursa-load: %s needs a value\n", d->flag);
			return -1;
		}
		const char *val = argv[++i];
		if (d->type == OPT_STR) {
			*(const char **)((char *)o + d->off) = val;
			continue;
		}
		long long v;
		if (parse_ll(val, &v) || v < d->min || v > d->max) {
			fprintf(stderr, "ursa-load: %s wants an integer in [%lld, %lld], got '%s'\n",
				d->flag, d->min, d->max, val);
			return -1;
		}
		*(long long *)((char *)o + d->off) = v;
	}
	return 0;
}

static int require(const char *val, const char *flag)
{
	if (val && *val)
		return 0;
	fprintf(stderr, "ursa-load: %s is required\n", flag);
	return -1;
}

/* A short random-ish id so that repeated runs do not collide on names and keys. */
static void make_run_id(struct sb *out)
{
	uint64_t x = wall_now() ^ ((uint64_t)getpid() << 20);

	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	sb_addf(out, "%08" PRIx32, (uint32_t)x);
}

/* ---- latency samples ------------------------------------------------------------------ */

struct lat {
	uint64_t *v;  /* microseconds */
	size_t n, cap;
};

static void lat_add(struct lat *l, uint64_t us)
{
	if (l->n == l->cap) {
		l->cap = l->cap ? l->cap * 2 : 1024;
		l->v = brealloc(l->v, l->cap * sizeof(*l->v));
	}
	l->v[l->n++] = us;
}

static void lat_merge(struct lat *dst, const struct lat *src)
{
	for (size_t i = 0; i < src->n; i++)
		lat_add(dst, src->v[i]);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static void lat_sort(struct lat *l) { qsort(l->v, l->n, sizeof(*l->v), cmp_u64); }

/* Nearest-rank percentile of a sorted sample, in milliseconds. */
static double lat_pct_ms(const struct lat *l, double p)
{
	if (!l->n)
		return 0;
	size_t rank = (size_t)((p / 100.0) * (double)l->n + 0.999999);
	if (rank < 1)
		rank = 1;
	if (rank > l->n)
		rank = l->n;
	return (double)l->v[rank - 1] / 1000.0;
}

static void lat_free(struct lat *l) { free(l->v); memset(l, 0, sizeof(*l)); }

/* Adds p50/p90/p99/max (ms) of a sorted sample to obj under prefix. */
static void lat_json(json_t *obj, const char *prefix, const struct lat *l)
{
	static const struct { const char *name; double p; } pcts[] = {
		{ "p50_ms", 50 }, { "p90_ms", 90 }, { "p99_ms", 99 }, { "max_ms", 100 },
	};
	struct sb key = { 0 };

	for (size_t i = 0; i < sizeof(pcts) / sizeof(pcts[0]); i++) {
		sb_reset(&key);
		sb_addf(&key, "%s%s", prefix, pcts[i].name);
		json_object_set_new(obj, key.p, json_real(lat_pct_ms(l, pcts[i].p)));
	}
	sb_free(&key);
}

static void lat_print(const char *what, const struct lat *l)
{
	printf("  %-12s p50=%.3f ms  p90=%.3f ms  p99=%.3f ms  max=%.3f ms  (n=%zu)\n", what,
	       lat_pct_ms(l, 50), lat_pct_ms(l, 90), lat_pct_ms(l, 99), lat_pct_ms(l, 100), l->n);
}

static json_t *codes_json(const uint64_t *codes)
{
	json_t *o = json_object();
	struct sb key = { 0 };

	for (int c = 0; c < NCODES; c++) {
		if (!codes[c])
			continue;
		sb_reset(&key);
		sb_addf(&key, "%d", c);
		json_object_set_new(o, key.p, json_integer((json_int_t)codes[c]));
	}
	sb_free(&key);
	return o;
}

static void codes_print(const uint64_t *codes)
{
	printf("  codes:");
	for (int c = 0; c < NCODES; c++)
		if (codes[c])
			printf(" %s%d=%" PRIu64, c ? "" : "transport-error:", c, codes[c]);
	printf("\n");
}

static void print_result(json_t *res)
{
	char *s = json_dumps(res, JSON_COMPACT | JSON_REAL_PRECISION(6));

	printf("RESULT %s\n", s ? s : "{}");
	fflush(stdout);
	free(s);
}

/* ---- one keep-alive HTTP client (one easy handle) ------------------------------------- */

struct http {
	CURL *h;
	struct curl_slist *hdrs;
	struct sb body;       /* last response body */
	bool overflow;
	bool discard;         /* count the body's bytes (body.len) but keep none of them */
};

static size_t on_body(char *data, size_t size, size_t nmemb, void *arg)
{
	struct http *c = arg;
	size_t n = size * nmemb;

	if (c->discard) {
		c->body.len += n;
		return n;
	}
	if (c->body.len + n > MAX_BODY_BYTES) {
		c->overflow = true;
		return 0;
	}
	sb_add(&c->body, data, n);
	return n;
}

static struct curl_slist *common_headers(const struct opts *o, const char *content_type)
{
	struct curl_slist *h = NULL;
	struct sb line = { 0 };

	h = curl_slist_append(h, "Accept: application/json");
	/* Bodies above 1 KiB would otherwise wait for "100 Continue". */
	h = curl_slist_append(h, "Expect:");
	if (content_type) {
		sb_addf(&line, "Content-Type: %s", content_type);
		h = curl_slist_append(h, line.p);
	}
	if (o->token && *o->token) {
		sb_reset(&line);
		sb_addf(&line, "Authorization: Bearer %s", o->token);
		h = curl_slist_append(h, line.p);
	}
	sb_free(&line);
	return must_alloc(h);
}

static void http_init(struct http *c, const struct opts *o, const char *content_type)
{
	memset(c, 0, sizeof(*c));
	c->h = must_alloc(curl_easy_init());
	c->hdrs = common_headers(o, content_type);
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
	sb_free(&c->body);
	memset(c, 0, sizeof(*c));
}

/*
 * Performs one request on the handle's kept-alive connection. data may be NULL (no body).
 * Returns the HTTP status, or 0 on a transport error; c->body holds the response body.
 */
static long http_do(struct http *c, const char *method, const char *url, const char *data, size_t len)
{
	long code = 0;

	sb_reset(&c->body);
	c->overflow = false;
	curl_easy_setopt(c->h, CURLOPT_URL, url);
	if (data) {
		curl_easy_setopt(c->h, CURLOPT_POSTFIELDS, data);
		curl_easy_setopt(c->h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
	} else {
		curl_easy_setopt(c->h, CURLOPT_HTTPGET, 1L);
	}
	curl_easy_setopt(c->h, CURLOPT_CUSTOMREQUEST,
			 strcmp(method, data ? "POST" : "GET") ? method : NULL);
	if (curl_easy_perform(c->h) != CURLE_OK || c->overflow)
		return 0;
	curl_easy_getinfo(c->h, CURLINFO_RESPONSE_CODE, &code);
	return code > 0 && code < NCODES ? code : 0;
}

/* ---- closed-loop throughput driver (etcd-put, create-pods) ---------------------------- */

struct load_job;

struct load_kind {
	const char *name;
	long ok_code;
	const char *content_type;
	void (*prepare)(struct load_job *j);
	/* Appends the body of request seq of client id to out. */
	void (*body)(const struct load_job *j, int id, unsigned long long seq, struct sb *out);
};

struct load_job {
	const struct load_kind *kind;
	const struct opts *o;
	struct sb url;
	struct sb run_id;
	struct sb shared;               /* precomputed body part (read-only while running) */
	uint64_t t0, deadline;
	unsigned long long limit;       /* 0: run until the deadline */
	atomic_ullong issued;
	atomic_int stop;                /* set when the run must end early */
};

struct worker {
	struct load_job *job;
	pthread_t tid;
	int id;
	struct lat lat;
	uint64_t codes[NCODES];
	uint64_t ok, sent_bytes, t_end;
};

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct load_job *j = w->job;
	struct http c;
	struct sb req = { 0 };
	unsigned long long seq = 0;

	http_init(&c, j->o, j->kind->content_type);
	for (;;) {
		if (mono_now() >= j->deadline || atomic_load(&j->stop))
			break;
		if (j->limit && atomic_fetch_add(&j->issued, 1) >= j->limit)
			break;
		sb_reset(&req);
		j->kind->body(j, w->id, seq++, &req);
		uint64_t t = mono_now();
		long code = http_do(&c, "POST", j->url.p, req.p, req.len);
		lat_add(&w->lat, mono_now() - t);
		w->codes[code]++;
		w->sent_bytes += req.len;
		if (code == j->kind->ok_code)
			w->ok++;
		else if (!code)
			sleep_us(10000);  /* do not spin on a refused or dead connection */
	}
	w->t_end = mono_now();
	sb_free(&req);
	http_release(&c);
	return NULL;
}

static int run_load(const struct load_kind *kind, struct opts *o, const char *url_base, const char *path)
{
	struct load_job j = { .kind = kind, .o = o };
	struct worker *ws = bcalloc((size_t)o->clients, sizeof(*ws));
	struct lat all = { 0 };
	uint64_t codes[NCODES] = { 0 }, ok = 0, bytes = 0, t_end = 0;
	long long duration = o->duration ? o->duration : (o->count ? 1800 : 10);
	int started = 0;

	sb_addf(&j.url, "%s%s", url_base, path);
	make_run_id(&j.run_id);
	j.limit = (unsigned long long)o->count;
	atomic_init(&j.issued, 0);
	atomic_init(&j.stop, 0);
	kind->prepare(&j);
	j.t0 = mono_now();
	j.deadline = j.t0 + (uint64_t)duration * 1000000u;
	for (int i = 0; i < o->clients; i++, started++) {
		ws[i].job = &j;
		ws[i].id = i;
		if (pthread_create(&ws[i].tid, NULL, worker_main, &ws[i])) {
			fprintf(stderr, "ursa-load: pthread_create failed after %d threads\n", i);
			atomic_store(&j.stop, 1);
			break;
		}
	}
	for (int i = 0; i < started; i++) {
		pthread_join(ws[i].tid, NULL);
		lat_merge(&all, &ws[i].lat);
		for (int c = 0; c < NCODES; c++)
			codes[c] += ws[i].codes[c];
		ok += ws[i].ok;
		bytes += ws[i].sent_bytes;
		if (ws[i].t_end > t_end)
			t_end = ws[i].t_end;
		lat_free(&ws[i].lat);
	}
	lat_sort(&all);

	double secs = (double)(t_end - j.t0) / 1e6;
	double rate = secs > 0 ? (double)ok / secs : 0;
	uint64_t errors = all.n - ok;
	printf("%s: url=%s clients=%lld elapsed=%.2fs requests=%zu ok=%" PRIu64 " errors=%" PRIu64
	       " avg-body=%.0fB\n", kind->name, j.url.p, o->clients, secs, all.n, ok, errors,
	       all.n ? (double)bytes / (double)all.n : 0.0);
	printf("  throughput   %.1f ok/s\n", rate);
	lat_print("latency", &all);
	codes_print(codes);

	json_t *res = json_object();
	json_object_set_new(res, "test", json_string(kind->name));
	json_object_set_new(res, "clients", json_integer(o->clients));
	json_object_set_new(res, "elapsed_s", json_real(secs));
	json_object_set_new(res, "requests", json_integer((json_int_t)all.n));
	json_object_set_new(res, "ok", json_integer((json_int_t)ok));
	json_object_set_new(res, "errors", json_integer((json_int_t)errors));
	json_object_set_new(res, "body_bytes", json_real(all.n ? (double)bytes / (double)all.n : 0.0));
	json_object_set_new(res, "ops_per_s", json_real(rate));
	lat_json(res, "", &all);
	json_object_set_new(res, "codes", codes_json(codes));
	print_result(res);
	json_decref(res);

	lat_free(&all);
	sb_free(&j.url);
	sb_free(&j.run_id);
	sb_free(&j.shared);
	free(ws);
	return ok > 0 && errors == 0 ? 0 : 1;
}

/* etcd-put: shared = base64 of the value; keys are unique per run, client and sequence. */
static void etcd_prepare(struct load_job *j)
{
	size_t n = (size_t)j->o->value_bytes;
	unsigned char *v = bmalloc(n);

	for (size_t i = 0; i < n; i++)
		v[i] = (unsigned char)('a' + (i * 7) % 26);
	sb_add_base64(&j->shared, v, n);
	free(v);
}

static void etcd_body(const struct load_job *j, int id, unsigned long long seq, struct sb *out)
{
	struct sb key = { 0 };

	sb_addf(&key, "/ursa-bench/%s/%d/%llu", j->run_id.p, id, seq);
	sb_adds(out, "{\"key\":\"");
	sb_add_base64(out, (const unsigned char *)key.p, key.len);
	sb_adds(out, "\",\"value\":\"");
	sb_add(out, j->shared.p, j->shared.len);
	sb_adds(out, "\"}");
	sb_free(&key);
}

/* create-pods: shared = the env entries that pad each pod to about --pod-bytes. */
static void pod_render(const struct load_job *j, int id, unsigned long long seq, const char *env,
		       struct sb *out)
{
	sb_addf(out,
		"{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"bench-%s-%d-%llu\","
		"\"labels\":{\"app\":\"ursa-bench\",\"run\":\"%s\",\"client\":\"c%d\"}},"
		"\"spec\":{\"containers\":[{\"name\":\"app\",\"image\":\"registry.k8s.io/pause:3.9\","
		"\"ports\":[{\"containerPort\":8080,\"protocol\":\"TCP\"}],"
		"\"resources\":{\"requests\":{\"cpu\":\"10m\",\"memory\":\"16Mi\"}},"
		"\"env\":[%s]}],\"restartPolicy\":\"Always\"}}",
		j->run_id.p, id, seq, j->run_id.p, id, env);
}

static void pod_prepare(struct load_job *j)
{
	struct sb probe = { 0 };
	long long need;

	pod_render(j, 0, 0, "", &probe);
	need = j->o->pod_bytes - (long long)probe.len;
	for (int i = 0; need > 0; i++) {
		long long overhead = 31 + (i ? 1 : 0);  /* {"name":"BENCH_PAD_%03d","value":""} */
		long long vlen = need - overhead;

		if (vlen < 1)
			break;
		if (vlen > 240)
			vlen = 240;
		if (i)
			sb_adds(&j->shared, ",");
		sb_addf(&j->shared, "{\"name\":\"BENCH_PAD_%03d\",\"value\":\"", i % 1000);
		for (long long k = 0; k < vlen; k++)
			sb_addch(&j->shared, (char)('a' + (i + k) % 26), 1);
		sb_adds(&j->shared, "\"}");
		need -= overhead + vlen;
	}
	sb_free(&probe);
}

static void pod_body(const struct load_job *j, int id, unsigned long long seq, struct sb *out)
{
	pod_render(j, id, seq, sb_str(&j->shared), out);
}

static const struct load_kind etcd_put_kind = {
	"etcd-put", 200, "application/json", etcd_prepare, etcd_body,
};

static const struct load_kind create_pods_kind = {
	"create-pods", 201, "application/json", pod_prepare, pod_body,
};

static int cmd_etcd_put(struct opts *o)
{
	if (require(o->endpoint, "--endpoint"))
		return 2;
	return run_load(&etcd_put_kind, o, o->endpoint, "/v3/kv/put");
}

static int cmd_create_pods(struct opts *o)
{
	struct sb path = { 0 };
	int rc;

	if (require(o->server, "--server") || require(o->tenant, "--tenant") ||
	    require(o->ns, "--namespace"))
		return 2;
	sb_addf(&path, "/api/v1/tenants/%s/namespaces/%s/pods", o->tenant, o->ns);
	rc = run_load(&create_pods_kind, o, o->server, path.p);
	sb_free(&path);
	return rc;
}

/* ---- list ----------------------------------------------------------------------------- */

static int cmd_list(struct opts *o)
{
	struct http c;
	struct sb url = { 0 };
	struct lat lat = { 0 };
	uint64_t codes[NCODES] = { 0 }, bytes = 0, busy_us = 0, ok = 0;
	json_int_t items = -1;
	bool has_continue = false;

	if (require(o->server, "--server") || require(o->path, "--path"))
		return 2;
	sb_addf(&url, "%s%s", o->server, o->path);
	http_init(&c, o, NULL);
	for (long long i = 0; i < o->repeat; i++) {
		uint64_t t = mono_now();
		long code = http_do(&c, "GET", url.p, NULL, 0);
		uint64_t dt = mono_now() - t;

		codes[code]++;
		if (code != 200)
			continue;
		ok++;
		lat_add(&lat, dt);
		busy_us += dt;
		bytes += c.body.len;
		if (items < 0) {
			json_t *doc = json_loadb(c.body.p, c.body.len, 0, NULL);
			json_t *arr = json_object_get(doc, "items");
			const char *cont = json_string_value(
				json_object_get(json_object_get(doc, "metadata"), "continue"));

			items = json_is_array(arr) ? (json_int_t)json_array_size(arr) : 0;
			has_continue = cont && *cont;
			json_decref(doc);
		}
	}
	lat_sort(&lat);

	double per = ok ? (double)bytes / (double)ok : 0;
	double mbps = busy_us ? (double)bytes / (double)busy_us : 0;   /* bytes/us == MB/s */
	printf("list: url=%s repeat=%lld ok=%" PRIu64 " items=%lld continue=%s bytes/response=%.0f"
	       " throughput=%.1f MB/s\n", url.p, o->repeat, ok, (long long)items,
	       has_continue ? "yes" : "no", per, mbps);
	lat_print("latency", &lat);
	codes_print(codes);

	json_t *res = json_object();
	json_object_set_new(res, "test", json_string("list"));
	json_object_set_new(res, "repeat", json_integer(o->repeat));
	json_object_set_new(res, "ok", json_integer((json_int_t)ok));
	json_object_set_new(res, "items", json_integer(items));
	json_object_set_new(res, "continue", json_boolean(has_continue));
	json_object_set_new(res, "bytes_per_response", json_real(per));
	json_object_set_new(res, "mb_per_s", json_real(mbps));
	lat_json(res, "", &lat);
	json_object_set_new(res, "codes", codes_json(codes));
	print_result(res);
	json_decref(res);

	lat_free(&lat);
	sb_free(&url);
	http_release(&c);
	return ok == (uint64_t)o->repeat ? 0 : 1;
}

/* ---- watch fan-out -------------------------------------------------------------------- */

struct wthread;

struct watcher {
	struct wthread *t;
	CURL *h;
	struct sb line;         /* bytes of an incomplete event line */
	unsigned char *seen;    /* one byte per update sequence */
	uint64_t got, dup, other, errors;
	long status;
	bool established, ended;
	CURLcode result;
};

struct watch_run {
	const struct opts *o;
	struct sb url;
	long long nupdates;
	atomic_int stop;
	atomic_int established;
	atomic_int ended;
	atomic_ullong delivered;
};

struct wthread {
	struct watch_run *run;
	pthread_t tid;
	struct watcher *ws;
	int n;
	struct curl_slist *hdrs;
	struct lat lag;
	uint64_t first_rx, last_rx;   /* wall clock, us */
};

/*
 * Reads the decimal string value of the first "key" in [p, p+n) (whitespace allowed around the
 * colon); -1 if absent or not digits.
 */
static long long scan_num(const char *p, size_t n, const char *key)
{
	const char *hit = memmem(p, n, key, strlen(key));
	const char *q, *end = p + n;
	long long v = 0;
	int digits = 0;

	if (!hit)
		return -1;
	q = hit + strlen(key);
	while (q < end && (*q == ' ' || *q == '\t'))
		q++;
	if (q >= end || *q++ != ':')
		return -1;
	while (q < end && (*q == ' ' || *q == '\t'))
		q++;
	if (q >= end || *q++ != '"')
		return -1;
	for (; q < end && *q >= '0' && *q <= '9' && digits < 18; q++, digits++)
		v = v * 10 + (*q - '0');
	return digits ? v : -1;
}

/* One complete event line; the payload keys are unique enough for a substring scan. */
static void on_event_line(struct watcher *w, const char *p, size_t n, uint64_t rx)
{
	struct wthread *t = w->t;
	long long seq = scan_num(p, n, "\"ursaLoadSeq\"");
	long long ts = scan_num(p, n, "\"ursaLoadTs\"");

	if (memmem(p, n, "\"ERROR\"", 7))
		w->errors++;
	if (seq < 0 || seq >= t->run->nupdates || ts <= 0) {
		w->other++;
		return;
	}
	if (w->seen[seq]) {
		w->dup++;
		return;
	}
	w->seen[seq] = 1;
	w->got++;
	atomic_fetch_add_explicit(&t->run->delivered, 1, memory_order_relaxed);
	lat_add(&t->lag, rx > (uint64_t)ts ? rx - (uint64_t)ts : 0);
	if (!t->first_rx)
		t->first_rx = rx;
	t->last_rx = rx;
}

static size_t on_watch_data(char *data, size_t size, size_t nmemb, void *arg)
{
	struct watcher *w = arg;
	size_t n = size * nmemb;
	uint64_t rx = wall_now();
	size_t start = 0;

	if (w->line.len + n > MAX_LINE_BYTES)
		return 0;  /* aborts this stream; counted as ended */
	sb_add(&w->line, data, n);
	for (size_t i = 0; i < w->line.len; i++) {
		if (w->line.p[i] != '\n')
			continue;
		if (i > start)
			on_event_line(w, w->line.p + start, i - start, rx);
		start = i + 1;
	}
	if (start) {
		memmove(w->line.p, w->line.p + start, w->line.len - start);
		w->line.len -= start;
		w->line.p[w->line.len] = '\0';
	}
	return n;
}

/* The end of the response headers means the server accepted the watch. */
static size_t on_watch_header(char *data, size_t size, size_t nmemb, void *arg)
{
	struct watcher *w = arg;
	size_t n = size * nmemb;

	if (n >= 5 && !memcmp(data, "HTTP/", 5)) {
		const char *sp = memchr(data, ' ', n);
		w->status = sp && sp + 4 <= data + n ? strtol(sp + 1, NULL, 10) : 0;
	} else if ((n == 2 && data[0] == '\r') || (n == 1 && data[0] == '\n')) {
		if (w->status == 200 && !w->established) {
			w->established = true;
			atomic_fetch_add(&w->t->run->established, 1);
		}
	}
	return n;
}

static void watcher_setup(struct watcher *w, struct wthread *t, const struct opts *o)
{
	w->t = t;
	w->seen = bcalloc((size_t)t->run->nupdates, 1);
	w->h = must_alloc(curl_easy_init());
	curl_easy_setopt(w->h, CURLOPT_URL, t->run->url.p);
	curl_easy_setopt(w->h, CURLOPT_HTTPHEADER, t->hdrs);
	curl_easy_setopt(w->h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(w->h, CURLOPT_TCP_NODELAY, 1L);
	curl_easy_setopt(w->h, CURLOPT_CONNECTTIMEOUT_MS, 20000L);
	curl_easy_setopt(w->h, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
	curl_easy_setopt(w->h, CURLOPT_WRITEFUNCTION, on_watch_data);
	curl_easy_setopt(w->h, CURLOPT_WRITEDATA, w);
	curl_easy_setopt(w->h, CURLOPT_HEADERFUNCTION, on_watch_header);
	curl_easy_setopt(w->h, CURLOPT_HEADERDATA, w);
	curl_easy_setopt(w->h, CURLOPT_PRIVATE, w);
	if (o->cacert)
		curl_easy_setopt(w->h, CURLOPT_CAINFO, o->cacert);
}

static void *wthread_main(void *arg)
{
	struct wthread *t = arg;
	CURLM *m = must_alloc(curl_multi_init());
	int running = 0;

	curl_multi_setopt(m, CURLMOPT_MAXCONNECTS, (long)t->n + 16);
	for (int i = 0; i < t->n; i++)
		curl_multi_add_handle(m, t->ws[i].h);
	while (!atomic_load(&t->run->stop)) {
		CURLMsg *msg;
		int left;

		curl_multi_perform(m, &running);
		while ((msg = curl_multi_info_read(m, &left))) {
			struct watcher *w = NULL;

			if (msg->msg != CURLMSG_DONE)
				continue;
			curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&w);
			if (w && !w->ended) {
				w->ended = true;
				w->result = msg->data.result;
				atomic_fetch_add(&t->run->ended, 1);
			}
		}
		curl_multi_poll(m, NULL, 0, 50, NULL);
	}
	for (int i = 0; i < t->n; i++)
		curl_multi_remove_handle(m, t->ws[i].h);
	curl_multi_cleanup(m);
	return NULL;
}

static void raise_nofile(rlim_t want)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl))
		return;
	if (rl.rlim_cur >= want)
		return;
	rl.rlim_cur = rl.rlim_max == RLIM_INFINITY || rl.rlim_max >= want ? want : rl.rlim_max;
	setrlimit(RLIMIT_NOFILE, &rl);
	getrlimit(RLIMIT_NOFILE, &rl);
	if (rl.rlim_cur < want)
		fprintf(stderr, "ursa-load: warning: open files limit %llu < %llu wanted\n",
			(unsigned long long)rl.rlim_cur, (unsigned long long)want);
}

/* Creates the configmap (or finds it) and returns the list resourceVersion to watch from. */
static int watch_prepare(struct http *c, const struct opts *o, const char *name, struct sb *ret_rv)
{
	struct sb url = { 0 }, body = { 0 };
	json_t *doc = NULL;
	const char *rv;
	long code;
	int rc = -1;

	sb_addf(&url, "%s/api/v1/tenants/%s/namespaces/%s/configmaps", o->server, o->tenant, o->ns);
	sb_addf(&body, "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"%s\"},"
		"\"data\":{\"ursaLoadSeq\":\"-1\",\"ursaLoadTs\":\"0\"}}", name);
	code = http_do(c, "POST", url.p, body.p, body.len);
	if (code != 201 && code != 409) {
		fprintf(stderr, "ursa-load: creating configmap %s: HTTP %ld %.300s\n", name, code,
			sb_str(&c->body));
		goto out;
	}
	code = http_do(c, "GET", url.p, NULL, 0);
	if (code != 200) {
		fprintf(stderr, "ursa-load: listing configmaps: HTTP %ld %.300s\n", code, sb_str(&c->body));
		goto out;
	}
	doc = json_loadb(c->body.p, c->body.len, 0, NULL);
	rv = json_string_value(json_object_get(json_object_get(doc, "metadata"), "resourceVersion"));
	if (!rv || !*rv) {
		fprintf(stderr, "ursa-load: list has no metadata.resourceVersion\n");
		goto out;
	}
	sb_adds(ret_rv, rv);
	rc = 0;
out:
	json_decref(doc);
	sb_free(&url);
	sb_free(&body);
	return rc;
}

struct update_stats {
	struct lat lat;
	uint64_t codes[NCODES];
	unsigned char *ok;      /* per sequence: the server accepted it */
	uint64_t nok;
	uint64_t t_first, t_last;
};

static void send_updates(const struct opts *o, const char *name, uint64_t deadline, struct update_stats *st)
{
	bool put = o->update && !strcmp(o->update, "put");
	struct http c;
	struct sb url = { 0 }, body = { 0 };
	uint64_t interval = o->rate ? 1000000u / (uint64_t)o->rate : 0;
	uint64_t next = mono_now();

	http_init(&c, o, put ? "application/json" : "application/merge-patch+json");
	sb_addf(&url, "%s/api/v1/tenants/%s/namespaces/%s/configmaps/%s", o->server, o->tenant, o->ns, name);
	st->t_first = mono_now();
	for (long long i = 0; i < o->updates && mono_now() < deadline; i++) {
		if (interval) {
			uint64_t now = mono_now();
			if (now < next)
				sleep_us(next - now);
			next += interval;
		}
		sb_reset(&body);
		uint64_t ts = wall_now();
		if (put)
			sb_addf(&body, "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"%s\","
				"\"namespace\":\"%s\"},\"data\":{\"ursaLoadSeq\":\"%lld\",\"ursaLoadTs\":\"%" PRIu64
				"\"}}", name, o->ns, i, ts);
		else
			sb_addf(&body, "{\"data\":{\"ursaLoadSeq\":\"%lld\",\"ursaLoadTs\":\"%" PRIu64 "\"}}", i, ts);
		uint64_t t = mono_now();
		long code = http_do(&c, put ? "PUT" : "PATCH", url.p, body.p, body.len);
		lat_add(&st->lat, mono_now() - t);
		st->codes[code]++;
		if (code == 200) {
			st->ok[i] = 1;
			st->nok++;
		}
	}
	st->t_last = mono_now();
	sb_free(&url);
	sb_free(&body);
	http_release(&c);
}

/* Waits until cond_target watchers are established (or all ended), bounded by timeout_s. */
static void wait_established(struct watch_run *run, int target, long long timeout_s)
{
	uint64_t until = mono_now() + (uint64_t)timeout_s * 1000000u;

	while (mono_now() < until) {
		int est = atomic_load(&run->established), ended = atomic_load(&run->ended);
		if (est >= target || est + ended >= target)
			break;
		sleep_us(10000);
	}
}

/* Waits until expected events arrived, or nothing arrived for drain_s seconds. */
static void wait_delivered(struct watch_run *run, uint64_t expected, long long drain_s, uint64_t deadline)
{
	uint64_t last = atomic_load(&run->delivered), since = mono_now();

	while (mono_now() < deadline) {
		uint64_t d = atomic_load(&run->delivered);
		if (d >= expected)
			break;
		if (d != last) {
			last = d;
			since = mono_now();
		} else if (mono_now() - since > (uint64_t)drain_s * 1000000u) {
			break;
		}
		sleep_us(5000);
	}
}

struct watch_totals {
	uint64_t got, dup, other, errors, complete, ended;
	uint64_t first_rx, last_rx;
	struct lat lag;
};

static void watch_collect(struct wthread *ts, int nt, const struct update_stats *st, struct watch_totals *tot)
{
	for (int k = 0; k < nt; k++) {
		struct wthread *t = &ts[k];

		lat_merge(&tot->lag, &t->lag);
		if (t->first_rx && (!tot->first_rx || t->first_rx < tot->first_rx))
			tot->first_rx = t->first_rx;
		if (t->last_rx > tot->last_rx)
			tot->last_rx = t->last_rx;
		for (int i = 0; i < t->n; i++) {
			struct watcher *w = &t->ws[i];
			bool all = w->established;

			for (long long s = 0; all && s < t->run->nupdates; s++)
				if (st->ok[s] && !w->seen[s])
					all = false;
			tot->complete += all;
			tot->got += w->got;
			tot->dup += w->dup;
			tot->other += w->other;
			tot->errors += w->errors;
			tot->ended += w->ended;
		}
	}
	lat_sort(&tot->lag);
}

static void watch_report(const struct opts *o, struct watch_run *run, const struct update_stats *st,
			 struct watch_totals *tot)
{
	int est = atomic_load(&run->established);
	uint64_t expected = (uint64_t)est * st->nok;
	double window = tot->last_rx > tot->first_rx ? (double)(tot->last_rx - tot->first_rx) / 1e6 : 0;
	double evs = window > 0 ? (double)tot->got / window : 0;
	double upd_secs = (double)(st->t_last - st->t_first) / 1e6;
	bool every = est == o->watchers && tot->complete == (uint64_t)o->watchers && st->nok == (uint64_t)o->updates;

	printf("watch: url=%s watchers=%lld established=%d ended-early=%" PRIu64 "\n", run->url.p,
	       o->watchers, est, tot->ended);
	printf("  updates      sent=%lld ok=%" PRIu64 " in %.2fs (%.1f/s)\n", o->updates, st->nok, upd_secs,
	       upd_secs > 0 ? (double)st->nok / upd_secs : 0.0);
	lat_print("update", &st->lat);
	codes_print(st->codes);
	printf("  events       delivered=%" PRIu64 " expected=%" PRIu64 " duplicates=%" PRIu64
	       " other=%" PRIu64 " error-events=%" PRIu64 "\n", tot->got, expected, tot->dup, tot->other,
	       tot->errors);
	printf("  delivery     %.1f events/s over %.2fs\n", evs, window);
	lat_print("lag", &tot->lag);
	printf("  complete     %" PRIu64 "/%lld watchers got every event: %s\n", tot->complete, o->watchers,
	       every ? "yes" : "NO");

	json_t *res = json_object();
	json_object_set_new(res, "test", json_string("watch"));
	json_object_set_new(res, "watchers", json_integer(o->watchers));
	json_object_set_new(res, "established", json_integer(est));
	json_object_set_new(res, "ended_early", json_integer((json_int_t)tot->ended));
	json_object_set_new(res, "updates", json_integer(o->updates));
	json_object_set_new(res, "updates_ok", json_integer((json_int_t)st->nok));
	json_object_set_new(res, "updates_per_s", json_real(upd_secs > 0 ? (double)st->nok / upd_secs : 0.0));
	lat_json(res, "update_", &st->lat);
	json_object_set_new(res, "update_codes", codes_json(st->codes));
	json_object_set_new(res, "events", json_integer((json_int_t)tot->got));
	json_object_set_new(res, "expected", json_integer((json_int_t)expected));
	json_object_set_new(res, "duplicates", json_integer((json_int_t)tot->dup));
	json_object_set_new(res, "events_per_s", json_real(evs));
	json_object_set_new(res, "delivery_window_s", json_real(window));
	lat_json(res, "lag_", &tot->lag);
	json_object_set_new(res, "complete_watchers", json_integer((json_int_t)tot->complete));
	json_object_set_new(res, "all_delivered", json_boolean(every));
	print_result(res);
	json_decref(res);
}

static int cmd_watch(struct opts *o)
{
	struct watch_run run = { .o = o, .nupdates = o->updates };
	int nt = (int)(o->watch_threads < o->watchers ? o->watch_threads : o->watchers);
	struct wthread *ts = bcalloc((size_t)nt, sizeof(*ts));
	struct update_stats st = { .ok = bcalloc((size_t)o->updates, 1) };
	struct watch_totals tot = { 0 };
	struct sb name = { 0 }, rv = { 0 };
	struct http c;
	long long duration = o->duration ? o->duration : 600;
	uint64_t deadline = mono_now() + (uint64_t)duration * 1000000u;
	int started = 0, rc = 1;

	if (require(o->server, "--server") || require(o->tenant, "--tenant") || require(o->ns, "--namespace"))
		return 2;
	if ((unsigned long long)o->watchers * (unsigned long long)o->updates > MAX_WATCH_EVENTS) {
		fprintf(stderr, "ursa-load: watchers*updates is capped at %llu\n", MAX_WATCH_EVENTS);
		return 2;
	}
	raise_nofile((rlim_t)o->watchers + 256);
	if (o->name)
		sb_adds(&name, o->name);
	else {
		sb_adds(&name, "ursa-bench-watch-");
		make_run_id(&name);
	}
	http_init(&c, o, "application/json");
	if (watch_prepare(&c, o, name.p, &rv))
		goto out;
	sb_addf(&run.url, "%s/api/v1/tenants/%s/namespaces/%s/configmaps?watch=true&resourceVersion=%s",
		o->server, o->tenant, o->ns, rv.p);
	atomic_init(&run.stop, 0);
	atomic_init(&run.established, 0);
	atomic_init(&run.ended, 0);
	atomic_init(&run.delivered, 0);

	for (int k = 0; k < nt; k++) {
		struct wthread *t = &ts[k];
		int n = (int)(o->watchers / nt + (k < o->watchers % nt));

		t->run = &run;
		t->n = n;
		t->ws = bcalloc((size_t)n, sizeof(*t->ws));
		t->hdrs = common_headers(o, NULL);
		for (int i = 0; i < n; i++)
			watcher_setup(&t->ws[i], t, o);
	}
	uint64_t t_open = mono_now();
	for (; started < nt; started++)
		if (pthread_create(&ts[started].tid, NULL, wthread_main, &ts[started]))
			break;
	wait_established(&run, (int)o->watchers, o->establish_timeout);
	printf("watch: %d/%lld streams established in %.2fs (ended: %d), from resourceVersion %s\n",
	       atomic_load(&run.established), o->watchers, (double)(mono_now() - t_open) / 1e6,
	       atomic_load(&run.ended), rv.p);
	fflush(stdout);
	if (atomic_load(&run.established) > 0) {
		send_updates(o, name.p, deadline, &st);
		wait_delivered(&run, (uint64_t)atomic_load(&run.established) * st.nok, o->drain_timeout, deadline);
	}
	atomic_store(&run.stop, 1);
	for (int k = 0; k < started; k++)
		pthread_join(ts[k].tid, NULL);
	lat_sort(&st.lat);
	watch_collect(ts, nt, &st, &tot);
	watch_report(o, &run, &st, &tot);
	rc = tot.complete == (uint64_t)o->watchers && st.nok == (uint64_t)o->updates ? 0 : 1;
out:
	for (int k = 0; k < nt; k++) {
		for (int i = 0; i < ts[k].n; i++) {
			curl_easy_cleanup(ts[k].ws[i].h);
			sb_free(&ts[k].ws[i].line);
			free(ts[k].ws[i].seen);
		}
		free(ts[k].ws);
		curl_slist_free_all(ts[k].hdrs);
		lat_free(&ts[k].lag);
	}
	free(ts);
	lat_free(&tot.lag);
	lat_free(&st.lat);
	free(st.ok);
	sb_free(&run.url);
	sb_free(&name);
	sb_free(&rv);
	http_release(&c);
	return rc;
}

/* ---- small utilities for the scripts -------------------------------------------------- */

/* Returns the kB value of a "Key:   123 kB" line of /proc/PID/status, or -1. */
static long long status_kb(const char *text, const char *key)
{
	const char *p = strstr(text, key);
	long long v = 0;

	if (!p)
		return -1;
	p += strlen(key);
	while (*p == ' ' || *p == '\t')
		p++;
	if (*p < '0' || *p > '9')
		return -1;
	while (*p >= '0' && *p <= '9')
		v = v * 10 + (*p++ - '0');
	return v;
}

static int cmd_rss(struct opts *o)
{
	struct sb path = { 0 }, text = { 0 };
	char chunk[4096];
	FILE *f;
	size_t n;

	if (!o->pid) {
		fprintf(stderr, "ursa-load: --pid is required\n");
		return 2;
	}
	sb_addf(&path, "/proc/%lld/status", o->pid);
	f = fopen(path.p, "r");
	if (!f) {
		fprintf(stderr, "ursa-load: %s: %s\n", path.p, strerror(errno));
		sb_free(&path);
		return 1;
	}
	while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0 && text.len < (1u << 20))
		sb_add(&text, chunk, n);
	fclose(f);

	long long rss = status_kb(sb_str(&text), "\nVmRSS:"), hwm = status_kb(sb_str(&text), "\nVmHWM:");
	printf("rss: pid=%lld VmRSS=%lld kB VmHWM=%lld kB\n", o->pid, rss, hwm);
	json_t *res = json_pack("{s:s,s:I,s:I,s:I}", "test", "rss", "pid", (json_int_t)o->pid,
				"rss_kb", (json_int_t)rss, "hwm_kb", (json_int_t)hwm);
	print_result(res);
	json_decref(res);
	sb_free(&path);
	sb_free(&text);
	return rss >= 0 ? 0 : 1;
}

static bool code_expected(const char *list, long code)
{
	if (!list || !*list)
		return code >= 200 && code < 300;
	if (!strcmp(list, "any"))
		return code > 0;
	for (const char *p = list; *p;) {
		char *end;
		long v = strtol(p, &end, 10);

		if (end == p)
			return false;
		if (v == code)
			return true;
		p = *end == ',' ? end + 1 : end;
	}
	return false;
}

/* One request, body to stdout; exit status 0 when the code is expected. For the scripts. */
static int cmd_request(struct opts *o)
{
	struct http c;
	struct sb url = { 0 };
	const char *method = o->method ? o->method : (o->data ? "POST" : "GET");
	long code;
	int rc;

	if (require(o->server, "--server") || require(o->path, "--path"))
		return 2;
	sb_addf(&url, "%s%s", o->server, o->path);
	http_init(&c, o, o->data ? (o->content_type ? o->content_type : "application/json") : NULL);
	code = http_do(&c, method, url.p, o->data, o->data ? strlen(o->data) : 0);
	fprintf(stderr, "%s %s -> %ld\n", method, url.p, code);
	fwrite(sb_str(&c.body), 1, c.body.len, stdout);
	if (c.body.len && c.body.p[c.body.len - 1] != '\n')
		putchar('\n');
	rc = code_expected(o->expect, code) ? 0 : 1;
	sb_free(&url);
	http_release(&c);
	return rc;
}

/* Prints --count (default 1) distinct free loopback TCP ports, one per line. */
static int cmd_free_port(struct opts *o)
{
	long long n = o->count ? o->count : 1;
	int fds[64];
	int rc = 0;

	if (n > 64)
		n = 64;
	for (long long i = 0; i < n; i++) {
		struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
		socklen_t len = sizeof(a);

		fds[i] = socket(AF_INET, SOCK_STREAM, 0);
		if (fds[i] < 0 || bind(fds[i], (struct sockaddr *)&a, sizeof(a)) ||
		    getsockname(fds[i], (struct sockaddr *)&a, &len)) {
			perror("ursa-load: free-port");
			n = i + (fds[i] >= 0);
			rc = 1;
			break;
		}
		printf("%u\n", ntohs(a.sin_port));
	}
	for (long long i = 0; i < n; i++)
		close(fds[i]);
	return rc;
}

/* ---- fairness -------------------------------------------------------------------------- */

/* --clients heavy clients GET --path (with --token) over and over while one probing client GETs
 * --probe-path (with --probe-token) one request after another, 10 ms apart, for --duration:
 * the probe's latencies, and what the heavy clients got. What one tenant's load does to another
 * tenant's requests on the same partition (issue 23, fair shares). */
struct fair_ctx {
	const struct opts *o;
	struct sb url;
	uint64_t deadline;
	atomic_ullong done, bytes;
	uint64_t codes[NCODES];
	pthread_mutex_t lock;
};

static void *fair_heavy(void *arg)
{
	struct fair_ctx *f = arg;
	struct http c;
	uint64_t codes[NCODES] = { 0 };
	if (f->o->heavy_nice > 0 && setpriority(PRIO_PROCESS, (id_t)gettid(), (int)f->o->heavy_nice) != 0)
		perror("setpriority");
	http_init(&c, f->o, NULL);
	c.discard = true; /* the load's client costs the machine as little as it can */
	while (mono_now() < f->deadline) {
		long code = http_do(&c, "GET", f->url.p, NULL, 0);
		codes[code]++;
		if (code == 200) {
			atomic_fetch_add(&f->done, 1);
			atomic_fetch_add(&f->bytes, c.body.len);
		} else if (code == 429)
			usleep(100 * 1000); /* as a client honouring Retry-After would, roughly */
	}
	http_release(&c);
	pthread_mutex_lock(&f->lock);
	for (int i = 0; i < NCODES; i++)
		f->codes[i] += codes[i];
	pthread_mutex_unlock(&f->lock);
	return NULL;
}

static int cmd_fairness(struct opts *o)
{
	if (require(o->server, "--server") || require(o->path, "--path") || require(o->probe_path, "--probe-path"))
		return 2;
	struct fair_ctx f = { .o = o };
	pthread_mutex_init(&f.lock, NULL);
	sb_addf(&f.url, "%s%s", o->server, o->path);
	uint64_t t0 = mono_now();
	f.deadline = t0 + (uint64_t)o->duration * 1000000ull;
	pthread_t *th = bcalloc((size_t)o->clients, sizeof(*th));
	for (long long i = 0; i < o->clients; i++)
		pthread_create(&th[i], NULL, fair_heavy, &f);
	struct opts po = *o;
	po.token = o->probe_token;
	struct http c;
	struct sb url = { 0 };
	struct lat lat = { 0 };
	uint64_t pcodes[NCODES] = { 0 };
	sb_addf(&url, "%s%s", o->server, o->probe_path);
	http_init(&c, &po, NULL);
	usleep(500 * 1000); /* the heavy clients get going */
	while (mono_now() < f.deadline) {
		uint64_t t = mono_now();
		long code = http_do(&c, "GET", url.p, NULL, 0);
		uint64_t dt = mono_now() - t;
		pcodes[code]++;
		if (code == 200)
			lat_add(&lat, dt);
		usleep(10 * 1000);
	}
	for (long long i = 0; i < o->clients; i++)
		pthread_join(th[i], NULL);
	double secs = (double)(mono_now() - t0) / 1e6;
	lat_sort(&lat);
	unsigned long long done = atomic_load(&f.done);
	printf("fairness: heavy clients=%lld url=%s lists/s=%.1f bytes/list=%llu; probe %s\n", o->clients, f.url.p,
	       (double)done / secs, done ? atomic_load(&f.bytes) / done : 0, url.p);
	lat_print("probe latency", &lat);
	codes_print(pcodes);
	json_t *res = json_object();
	json_object_set_new(res, "test", json_string("fairness"));
	json_object_set_new(res, "clients", json_integer(o->clients));
	json_object_set_new(res, "heavy_per_s", json_real((double)atomic_load(&f.done) / secs));
	json_object_set_new(res, "heavy_bytes", json_integer(done ? (json_int_t)(atomic_load(&f.bytes) / done) : 0));
	json_object_set_new(res, "heavy_codes", codes_json(f.codes));
	lat_json(res, "probe_", &lat);
	json_object_set_new(res, "probe_codes", codes_json(pcodes));
	print_result(res);
	json_decref(res);
	lat_free(&lat);
	http_release(&c);
	sb_free(&url);
	sb_free(&f.url);
	free(th);
	return 0;
}

/* ---- subcommand table ----------------------------------------------------------------- */

struct command {
	const char *name;
	int (*run)(struct opts *o);
	const char *usage;
};

static const struct command commands[] = {
	{ "etcd-put", cmd_etcd_put,
	  "--endpoint URL [--clients N] [--duration S | --count M] [--value-bytes B]" },
	{ "create-pods", cmd_create_pods,
	  "--server URL [--token T] [--cacert F] --tenant X --namespace NS [--clients N]\n"
	  "                [--duration S | --count M] [--pod-bytes B]" },
	{ "list", cmd_list, "--server URL [--token T] --path P [--repeat R]" },
	{ "watch", cmd_watch,
	  "--server URL [--token T] --tenant X --namespace NS [--watchers W] [--updates U]\n"
	  "                [--watch-threads K] [--update patch|put] [--rate R] [--name CM]" },
	{ "rss", cmd_rss, "--pid P" },
	{ "request", cmd_request,
	  "--server URL [--token T] --path P [--method M] [--data JSON] [--expect 201,409]" },
	{ "free-port", cmd_free_port, "[--count N]" },
	{ "fairness", cmd_fairness,
	  "--server URL --token T --path P --clients N --probe-token T2 --probe-path P2 [--duration S]" },
};

static void usage(void)
{
	fprintf(stderr, "usage: ursa-load COMMAND [options]\n\ncommands:\n");
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		fprintf(stderr, "  %-12s %s\n", commands[i].name, commands[i].usage);
	fprintf(stderr, "\noptions:\n");
	for (size_t i = 0; i < sizeof(opt_table) / sizeof(opt_table[0]); i++)
		fprintf(stderr, "  %-20s %s\n", opt_table[i].flag, opt_table[i].help);
}

int main(int argc, char **argv)
{
	struct opts o;
	int rc;

	if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
		usage();
		return argc < 2 ? 2 : 0;
	}
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++) {
		if (strcmp(argv[1], commands[i].name))
			continue;
		opts_defaults(&o);
		if (opts_parse(&o, argc - 2, argv + 2))
			return 2;
		signal(SIGPIPE, SIG_IGN);
		setvbuf(stdout, NULL, _IOLBF, 0);
		curl_global_init(CURL_GLOBAL_ALL);
		rc = commands[i].run(&o);
		curl_global_cleanup();
		return rc;
	}
	fprintf(stderr, "ursa-load: unknown command '%s'\n", argv[1]);
	usage();
	return 2;
}
