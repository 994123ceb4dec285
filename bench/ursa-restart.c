/*
 * ursa-restart: the load of the restart benchmark (bench/run-restart.sh), two subcommands.
 *
 *   ursa-restart fill --server URL --token T [--cacert F] --tenant X [--namespace NS]
 *                     [--pods N] [--configmaps M] [--nodes K --node-prefix P [--node-groups G]]
 *                     [--clients C] [--prefix S]
 *     Creates pods S-p-i (0 <= i < N) bound at creation (spec.nodeName; no scheduler involved) to
 *     node j = i mod K, named P<j mod G>-<j / G>: the hollow nodes of G kubelet processes with
 *     prefixes P0 .. P<G-1>, tolerating the hollow nodes' taint, and configmaps S-c-j (0 <= j < M)
 *     of about 200 bytes. 201 and 409 count as done, anything else is retried up to 5 times.
 *     Prints "RESULT {json}" with the counts, the seconds taken and the rate.
 *
 *   ursa-restart steady --server URL --token T [--cacert F] --tenant X [--namespace NS]
 *                       [--rate R] [--clients C] [--duration D] [--prefix S] [--timeout T]
 *     Open-loop creates of small configmaps: client k of C sends one every C/R seconds on its
 *     own schedule (a slot it is too late for is skipped and counted, never sent in a burst),
 *     for D seconds or until SIGTERM/SIGINT. Writes one line per request as it completes:
 *       REQ <start, unix seconds with µs> <latency µs> <HTTP code, 0 = transport error>
 *     and at the end "RESULT {json}" (sent, ok, errors, skipped slots).
 *
 * Self-contained (libcurl, pthreads). Bounded: counts, clients (256), per-request timeout
 * (default 10 s), duration (at most a day).
 */
#include <curl/curl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "ursa/timeutil.h"
#include "ursa/xalloc.h"

#define MAX_COUNT 10000000L
#define MAX_CLIENTS 256L
#define ATTEMPTS 5

struct opts {
	const char *server, *token, *cacert, *tenant, *ns, *prefix, *node_prefix;
	long pods, configmaps, nodes, groups, clients, rate, duration, timeout;
};

struct worker {
	const struct opts *o;
	long first;
	pthread_t t;
};

static atomic_long done_ok, done_failed, sent, skipped;
static volatile sig_atomic_t stopping;
static pthread_mutex_t out_lock = PTHREAD_MUTEX_INITIALIZER;

static double mono_s(void)
{
	return (double)mono_us() / 1e6;
}

static double real_s(void)
{
	return (double)now_ms() / 1e3;
}

static size_t discard(char *data, size_t size, size_t n, void *ud)
{
	(void)data;
	(void)ud;
	return size * n;
}

/* One POST of body to url on handle h; returns the HTTP code, 0 on a transport error. */
static long post(CURL *h, const struct opts *o, const char *url, struct curl_slist *hdr, const char *body)
{
	long code = 0;
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdr);
	curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, discard);
	curl_easy_setopt(h, CURLOPT_TIMEOUT, o->timeout);
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT, o->timeout);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_TCP_NODELAY, 1L);
	if (o->cacert)
		curl_easy_setopt(h, CURLOPT_CAINFO, o->cacert);
	if (curl_easy_perform(h) == CURLE_OK)
		curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
	return code;
}

static struct curl_slist *headers(const struct opts *o)
{
	char *auth = xasprintf("Authorization: Bearer %s", o->token);
	struct curl_slist *hdr = curl_slist_append(NULL, "Content-Type: application/json");
	hdr = curl_slist_append(hdr, auth);
	hdr = curl_slist_append(hdr, "Expect:");
	free(auth);
	return hdr;
}

/* ---- fill ---------------------------------------------------------------------------------- */

static char *pod_body(const struct opts *o, long i)
{
	return xasprintf("{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"%s-p-%ld\",\"labels\":"
		   "{\"app\":\"fill\"}},\"spec\":{\"nodeName\":\"%s%ld-%ld\",\"tolerations\":[{\"key\":\"ursa.io/hollow\","
		   "\"operator\":\"Exists\",\"effect\":\"NoSchedule\"}],\"containers\":[{\"name\":\"c\",\"image\":\"x\","
		   "\"resources\":{\"requests\":{\"cpu\":\"1m\",\"memory\":\"1Mi\"}}}]}}",
		   o->prefix, i, o->node_prefix, (i % o->nodes) % o->groups, (i % o->nodes) / o->groups);
}

static char *cm_body(const char *prefix, const char *kind, long i)
{
	return xasprintf("{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"%s-%s-%ld\"},\"data\":"
		   "{\"k\":\"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\"}}",
		   prefix, kind, i);
}

static void *fill_work(void *arg)
{
	struct worker *w = arg;
	const struct opts *o = w->o;
	CURL *h = curl_easy_init();
	char *pods = xasprintf("%s/api/v1/tenants/%s/namespaces/%s/pods", o->server, o->tenant, o->ns);
	char *cms = xasprintf("%s/api/v1/tenants/%s/namespaces/%s/configmaps", o->server, o->tenant, o->ns);
	struct curl_slist *hdr = headers(o);
	long total = o->pods + o->configmaps;

	for (long i = w->first; h && !stopping && i < total; i += o->clients) {
		char *body = i < o->pods ? pod_body(o, i) : cm_body(o->prefix, "c", i - o->pods);
		long code = 0;
		for (int a = 0; a < ATTEMPTS && code != 201 && code != 409; a++)
			code = post(h, o, i < o->pods ? pods : cms, hdr, body);
		atomic_fetch_add(code == 201 || code == 409 ? &done_ok : &done_failed, 1);
		free(body);
	}
	curl_slist_free_all(hdr);
	free(cms);
	free(pods);
	curl_easy_cleanup(h);
	return NULL;
}

/* ---- steady -------------------------------------------------------------------------------- */

static void *steady_work(void *arg)
{
	struct worker *w = arg;
	const struct opts *o = w->o;
	CURL *h = curl_easy_init();
	char *url = xasprintf("%s/api/v1/tenants/%s/namespaces/%s/configmaps", o->server, o->tenant, o->ns);
	struct curl_slist *hdr = headers(o);
	double period = (double)o->clients / (double)o->rate;
	double t0 = mono_s(), end = t0 + (double)o->duration;
	/* clients start spread over one period, so the aggregate is even */
	double next = t0 + period * (double)w->first / (double)o->clients;

	for (long n = 0; h && !stopping; n++) {
		double now = mono_s();
		if (next >= end)
			break;
		if (next > now) {
			double d = next - now;
			struct timespec ts = { (time_t)d, (long)((d - (double)(time_t)d) * 1e9) };
			nanosleep(&ts, NULL);
			continue;
		}
		if (now - next > period) { /* too late for this slot: skip it, do not burst */
			long missed = (long)((now - next) / period);
			atomic_fetch_add(&skipped, missed);
			next += (double)missed * period;
		}
		next += period;
		char *body = cm_body(o->prefix, "s", w->first + n * o->clients);
		double start = real_s(), m0 = mono_s();
		long code = post(h, o, url, hdr, body);
		double lat = mono_s() - m0;
		free(body);
		atomic_fetch_add(&sent, 1);
		atomic_fetch_add(code == 201 ? &done_ok : &done_failed, 1);
		pthread_mutex_lock(&out_lock);
		printf("REQ %.6f %.0f %ld\n", start, lat * 1e6, code);
		fflush(stdout);
		pthread_mutex_unlock(&out_lock);
	}
	curl_slist_free_all(hdr);
	free(url);
	curl_easy_cleanup(h);
	return NULL;
}

/* ---- options, main ------------------------------------------------------------------------- */

static void on_signal(int sig)
{
	(void)sig;
	stopping = 1;
}

static int parse(struct opts *o, int argc, char **argv)
{
	*o = (struct opts){ .ns = "default", .prefix = "r", .node_prefix = "h", .groups = 1, .clients = 8, .rate = 200,
			    .duration = 60, .timeout = 10 };
	const struct {
		const char *flag;
		const char **s;
		long *n;
	} table[] = {
		{ "--server", &o->server, NULL },
		{ "--token", &o->token, NULL },
		{ "--cacert", &o->cacert, NULL },
		{ "--tenant", &o->tenant, NULL },
		{ "--namespace", &o->ns, NULL },
		{ "--prefix", &o->prefix, NULL },
		{ "--node-prefix", &o->node_prefix, NULL },
		{ "--pods", NULL, &o->pods },
		{ "--configmaps", NULL, &o->configmaps },
		{ "--nodes", NULL, &o->nodes },
		{ "--node-groups", NULL, &o->groups },
		{ "--clients", NULL, &o->clients },
		{ "--rate", NULL, &o->rate },
		{ "--duration", NULL, &o->duration },
		{ "--timeout", NULL, &o->timeout },
	};
	if (argc % 2)
		return -1;
	for (int i = 2; i + 1 < argc; i += 2) {
		size_t k = 0;
		while (k < sizeof(table) / sizeof(table[0]) && strcmp(table[k].flag, argv[i]) != 0)
			k++;
		if (k == sizeof(table) / sizeof(table[0]))
			return -1;
		if (table[k].s) {
			*table[k].s = argv[i + 1];
			continue;
		}
		char *end = NULL;
		*table[k].n = strtol(argv[i + 1], &end, 10);
		if (!end || *end)
			return -1;
	}
	if (!o->server || !o->token || !o->tenant || o->clients < 1 || o->clients > MAX_CLIENTS || o->pods < 0 ||
	    o->pods > MAX_COUNT || o->configmaps < 0 || o->configmaps > MAX_COUNT || (o->pods > 0 && o->nodes < 1) ||
	    o->groups < 1 || o->rate < 1 || o->rate > 100000 || o->duration < 1 || o->duration > 86400 || o->timeout < 1 ||
	    o->timeout > 600)
		return -1;
	return 0;
}

int main(int argc, char **argv)
{
	struct opts o;
	int fill = argc > 1 && !strcmp(argv[1], "fill"), steady = argc > 1 && !strcmp(argv[1], "steady");
	if ((!fill && !steady) || parse(&o, argc, argv) != 0) {
		fputs("usage: ursa-restart fill --server URL --token T [--cacert F] --tenant X [--namespace NS]\n"
		      "         [--pods N --nodes K --node-prefix P --node-groups G] [--configmaps M] [--clients C]\n"
		      "         [--prefix S]\n"
		      "       ursa-restart steady --server URL --token T [--cacert F] --tenant X [--namespace NS]\n"
		      "         [--rate R] [--clients C] [--duration D] [--prefix S] [--timeout T]\n",
		      stderr);
		return 2;
	}
	signal(SIGTERM, on_signal);
	signal(SIGINT, on_signal);
	signal(SIGPIPE, SIG_IGN);
	curl_global_init(CURL_GLOBAL_DEFAULT);
	struct worker *w = calloc((size_t)o.clients, sizeof(*w));
	if (!w)
		return 1;
	double t0 = mono_s();
	for (long k = 0; k < o.clients; k++) {
		w[k] = (struct worker){ .o = &o, .first = k };
		pthread_create(&w[k].t, NULL, fill ? fill_work : steady_work, &w[k]);
	}
	for (long k = 0; k < o.clients; k++)
		pthread_join(w[k].t, NULL);
	double el = mono_s() - t0;
	printf("RESULT {\"ok\":%ld,\"failed\":%ld,\"sent\":%ld,\"skipped\":%ld,\"seconds\":%.3f,\"ops_per_s\":%.1f}\n",
	       atomic_load(&done_ok), atomic_load(&done_failed), atomic_load(&sent), atomic_load(&skipped), el,
	       el > 0 ? (double)atomic_load(&done_ok) / el : 0.0);
	fflush(stdout);
	free(w);
	curl_global_cleanup();
	return fill && atomic_load(&done_failed) ? 1 : 0;
}
