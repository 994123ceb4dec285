/*
 * sched-create: creates pending pods as fast as a few keep-alive clients can, for the
 * scheduler benchmark's "pods created while it runs" case (bench/run-scheduler.sh).
 *
 *   sched-create --server URL --token T [--cacert F] --tenant X [--namespace NS]
 *                --count N [--clients C] [--prefix P] [--cpu Q] [--memory Q]
 *
 * Pod i (0 <= i < N) is named P-i and requests Q cpu and memory; it tolerates the hollow
 * nodes' taint. Client k creates pods k, k + C, k + 2C, ... over one connection; 201 and 409
 * (already there) count as done, anything else is retried up to 5 times. Prints
 * "RESULT {json}" with the count, the seconds taken and the rate.
 *
 * Self-contained (libcurl, pthreads) so run-scheduler.sh can compile it on the fly. Bounded:
 * at most 1,000,000 pods, 256 clients, 30 s per request.
 */
#include <curl/curl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_COUNT 1000000L
#define MAX_CLIENTS 256L
#define ATTEMPTS 5

struct opts {
	const char *server, *token, *cacert, *tenant, *ns, *prefix, *cpu, *memory;
	long count, clients;
};

struct worker {
	const struct opts *o;
	long first;
	pthread_t t;
};

static atomic_long created, failed;

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* A heap string from a format (exits on allocation failure, like xalloc). */
static char *fmt(const char *f, ...) __attribute__((format(printf, 1, 2)));
static char *fmt(const char *f, ...)
{
	va_list ap;
	va_start(ap, f);
	int n = vsnprintf(NULL, 0, f, ap);
	va_end(ap);
	char *s = n >= 0 ? malloc((size_t)n + 1) : NULL;
	if (!s) {
		fputs("sched-create: out of memory\n", stderr);
		exit(1);
	}
	va_start(ap, f);
	vsnprintf(s, (size_t)n + 1, f, ap);
	va_end(ap);
	return s;
}

static size_t discard(char *data, size_t size, size_t n, void *ud)
{
	(void)data;
	(void)ud;
	return size * n;
}

static void *work(void *arg)
{
	struct worker *w = arg;
	const struct opts *o = w->o;
	CURL *h = curl_easy_init();
	char *url = fmt("%s/api/v1/tenants/%s/namespaces/%s/pods", o->server, o->tenant, o->ns);
	char *auth = fmt("Authorization: Bearer %s", o->token);
	struct curl_slist *hdr = curl_slist_append(NULL, "Content-Type: application/json");
	hdr = curl_slist_append(hdr, auth);
	hdr = curl_slist_append(hdr, "Expect:");
	for (long i = w->first; h && i < o->count; i += o->clients) {
		char *body = fmt("{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"%s-%ld\"},"
				 "\"spec\":{\"tolerations\":[{\"key\":\"ursa.io/hollow\",\"operator\":\"Exists\","
				 "\"effect\":\"NoSchedule\"}],\"containers\":[{\"name\":\"c\",\"image\":\"x\","
				 "\"resources\":{\"requests\":{\"cpu\":\"%s\",\"memory\":\"%s\"}}}]}}",
				 o->prefix, i, o->cpu, o->memory);
		long code = 0;
		for (int a = 0; a < ATTEMPTS && code != 201 && code != 409; a++) {
			curl_easy_setopt(h, CURLOPT_URL, url);
			curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdr);
			curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
			curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, discard);
			curl_easy_setopt(h, CURLOPT_TIMEOUT, 30L);
			curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
			curl_easy_setopt(h, CURLOPT_TCP_NODELAY, 1L);
			if (o->cacert)
				curl_easy_setopt(h, CURLOPT_CAINFO, o->cacert);
			code = 0;
			if (curl_easy_perform(h) == CURLE_OK)
				curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
		}
		atomic_fetch_add(code == 201 || code == 409 ? &created : &failed, 1);
		free(body);
	}
	curl_slist_free_all(hdr);
	free(auth);
	free(url);
	curl_easy_cleanup(h);
	return NULL;
}

static int parse(struct opts *o, int argc, char **argv)
{
	*o = (struct opts){ .ns = "default", .prefix = "pod", .cpu = "10m", .memory = "16Mi", .clients = 16 };
	const struct {
		const char *flag;
		const char **s;
		long *n;
	} table[] = {
		{ "--server", &o->server, NULL }, { "--token", &o->token, NULL }, { "--cacert", &o->cacert, NULL },
		{ "--tenant", &o->tenant, NULL }, { "--namespace", &o->ns, NULL }, { "--prefix", &o->prefix, NULL },
		{ "--cpu", &o->cpu, NULL },	  { "--memory", &o->memory, NULL }, { "--count", NULL, &o->count },
		{ "--clients", NULL, &o->clients },
	};
	if ((argc - 1) % 2)
		return -1;
	for (int i = 1; i + 1 < argc; i += 2) {
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
	if (!o->server || !o->token || !o->tenant || o->count < 1 || o->count > MAX_COUNT || o->clients < 1 ||
	    o->clients > MAX_CLIENTS)
		return -1;
	return 0;
}

int main(int argc, char **argv)
{
	struct opts o;
	if (parse(&o, argc, argv) != 0) {
		fputs("usage: sched-create --server URL --token T [--cacert F] --tenant X [--namespace NS]\n"
		      "                    --count N (1..1000000) [--clients C (1..256)] [--prefix P] [--cpu Q]"
		      " [--memory Q]\n",
		      stderr);
		return 2;
	}
	curl_global_init(CURL_GLOBAL_DEFAULT);
	struct worker *w = calloc((size_t)o.clients, sizeof(*w));
	if (!w)
		return 1;
	double t0 = now_s();
	for (long k = 0; k < o.clients; k++) {
		w[k] = (struct worker){ .o = &o, .first = k };
		pthread_create(&w[k].t, NULL, work, &w[k]);
	}
	for (long k = 0; k < o.clients; k++)
		pthread_join(w[k].t, NULL);
	double el = now_s() - t0;
	printf("RESULT {\"created\":%ld,\"failed\":%ld,\"seconds\":%.3f,\"ops_per_s\":%.1f}\n", atomic_load(&created),
	       atomic_load(&failed), el, el > 0 ? (double)atomic_load(&created) / el : 0.0);
	free(w);
	curl_global_cleanup();
	return atomic_load(&failed) ? 1 : 0;
}
