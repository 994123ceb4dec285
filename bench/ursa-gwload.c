/*
 * ursa-gwload: closed-loop HTTP(S) load for comparing the gateway, a partition and HAProxy
 * (bench/run-gateway.sh). C clients, each a thread with its own libcurl handle: one kept-alive
 * connection (HTTP/1.1, TCP_NODELAY), TLS sessions shared between the clients as kubectl
 * reuses them. Every client cycles through the given paths (GET); requests completed during the
 * warm-up are not counted.
 *
 *   ursa-gwload --base URL --path P [--path P2 ...] [--token T] [--cacert F] [--clients 64]
 *               [--duration 10] [--warmup 1]
 *
 * Prints a summary and "RESULT {json}" (ok_per_s, p50_ms, p99_ms, errors). Exit status 1 when a
 * request failed or did not answer 200.
 */
#define _GNU_SOURCE
#include <curl/curl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "ursa/buf.h"
#include "ursa/xalloc.h"

#define MAX_CLIENTS 1024
#define MAX_PATHS 16
#define MAX_BODY (64u << 20)

struct cfg {
	const char *base, *token, *cacert;
	const char *paths[MAX_PATHS];
	int npaths;
	long long clients, duration, warmup;
};

static pthread_mutex_t share_lock[CURL_LOCK_DATA_LAST];

static void share_lock_fn(CURL *h, curl_lock_data d, curl_lock_access a, void *ud)
{
	(void)h, (void)a, (void)ud;
	pthread_mutex_lock(&share_lock[d]);
}

static void share_unlock_fn(CURL *h, curl_lock_data d, void *ud)
{
	(void)h, (void)ud;
	pthread_mutex_unlock(&share_lock[d]);
}

static int64_t now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

struct client {
	const struct cfg *c;
	CURLSH *share;
	int id;
	int64_t t_count, t_end;
	int64_t *lat;
	size_t n, cap;
	long long errors, bytes;
	pthread_t tid;
};

static size_t on_body(char *d, size_t s, size_t n, void *ud)
{
	(void)d;
	struct client *cl = ud;
	cl->bytes += (long long)(s * n);
	return s * n;
}

static void *client_main(void *ud)
{
	struct client *cl = ud;
	const struct cfg *c = cl->c;
	CURL *h = curl_easy_init();
	struct curl_slist *hdr = curl_slist_append(NULL, "Accept: application/json");
	char *auth = c->token ? xasprintf("Authorization: Bearer %s", c->token) : NULL;
	if (auth)
		hdr = curl_slist_append(hdr, auth);
	char **urls = xcalloc((size_t)c->npaths, sizeof(char *));
	for (int i = 0; i < c->npaths; i++)
		urls[i] = xasprintf("%s%s", c->base, c->paths[i]);
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdr);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_TCP_NODELAY, 1L);
	curl_easy_setopt(h, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, 30000L);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, cl);
	curl_easy_setopt(h, CURLOPT_SHARE, cl->share);
	if (c->cacert)
		curl_easy_setopt(h, CURLOPT_CAINFO, c->cacert);
	long long seq = cl->id;
	while (now_us() < cl->t_end) {
		curl_easy_setopt(h, CURLOPT_URL, urls[seq++ % c->npaths]);
		int64_t t = now_us();
		CURLcode rc = curl_easy_perform(h);
		long code = 0;
		curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
		int64_t done = now_us();
		if (done < cl->t_count || done > cl->t_end)
			continue;
		if (rc != CURLE_OK || code != 200) {
			if (cl->errors++ < 3)
				fprintf(stderr, "ursa-gwload: client %d: %s code %ld\n", cl->id, curl_easy_strerror(rc), code);
			continue;
		}
		if (cl->n == cl->cap) {
			cl->cap = cl->cap ? cl->cap * 2 : 4096;
			cl->lat = xrealloc(cl->lat, cl->cap * sizeof(int64_t));
		}
		cl->lat[cl->n++] = done - t;
	}
	for (int i = 0; i < c->npaths; i++)
		free(urls[i]);
	free(urls);
	free(auth);
	curl_slist_free_all(hdr);
	curl_easy_cleanup(h);
	return NULL;
}

static int cmp64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return x < y ? -1 : x > y;
}

static double pct_ms(const int64_t *v, size_t n, double p)
{
	if (!n)
		return 0;
	size_t rank = (size_t)(p / 100.0 * (double)n + 0.999999);
	rank = rank < 1 ? 1 : rank > n ? n : rank;
	return (double)v[rank - 1] / 1000.0;
}

static int parse(struct cfg *c, int argc, char **argv)
{
	*c = (struct cfg){ .clients = 64, .duration = 10, .warmup = 1 };
	for (int i = 1; i + 1 < argc; i += 2) {
		const char *f = argv[i], *v = argv[i + 1];
		long long n = 0;
		bool num = parse_int64(v, &n) == 0;
		if (strcmp(f, "--base") == 0)
			c->base = v;
		else if (strcmp(f, "--path") == 0 && c->npaths < MAX_PATHS)
			c->paths[c->npaths++] = v;
		else if (strcmp(f, "--token") == 0)
			c->token = v;
		else if (strcmp(f, "--cacert") == 0)
			c->cacert = v;
		else if (strcmp(f, "--clients") == 0 && num && n >= 1 && n <= MAX_CLIENTS)
			c->clients = n;
		else if (strcmp(f, "--duration") == 0 && num && n >= 1 && n <= 3600)
			c->duration = n;
		else if (strcmp(f, "--warmup") == 0 && num && n >= 0 && n <= 600)
			c->warmup = n;
		else {
			fprintf(stderr, "ursa-gwload: bad option %s %s\n", f, v);
			return -1;
		}
	}
	if (argc % 2 == 0 || !c->base || !c->npaths) {
		fprintf(stderr, "usage: ursa-gwload --base URL --path P [--path P ...] [--token T] [--cacert F] "
				"[--clients N] [--duration S] [--warmup S]\n");
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct cfg c;
	if (parse(&c, argc, argv) != 0)
		return 2;
	curl_global_init(CURL_GLOBAL_DEFAULT);
	for (int i = 0; i < CURL_LOCK_DATA_LAST; i++)
		pthread_mutex_init(&share_lock[i], NULL);
	CURLSH *share = curl_share_init();
	curl_share_setopt(share, CURLSHOPT_SHARE, CURL_LOCK_DATA_SSL_SESSION);
	curl_share_setopt(share, CURLSHOPT_SHARE, CURL_LOCK_DATA_DNS);
	curl_share_setopt(share, CURLSHOPT_LOCKFUNC, share_lock_fn);
	curl_share_setopt(share, CURLSHOPT_UNLOCKFUNC, share_unlock_fn);
	struct client *cl = xcalloc((size_t)c.clients, sizeof(*cl));
	int64_t t0 = now_us(), t_count = t0 + c.warmup * 1000000, t_end = t_count + c.duration * 1000000;
	for (long long i = 0; i < c.clients; i++) {
		cl[i] = (struct client){ .c = &c, .share = share, .id = (int)i, .t_count = t_count, .t_end = t_end };
		pthread_create(&cl[i].tid, NULL, client_main, &cl[i]);
	}
	size_t n = 0;
	long long errors = 0, bytes = 0;
	for (long long i = 0; i < c.clients; i++) {
		pthread_join(cl[i].tid, NULL);
		n += cl[i].n;
		errors += cl[i].errors;
		bytes += cl[i].bytes;
	}
	int64_t *all = xcalloc(n + 1, sizeof(int64_t));
	size_t k = 0;
	for (long long i = 0; i < c.clients; i++) {
		memcpy(all + k, cl[i].lat, cl[i].n * sizeof(int64_t));
		k += cl[i].n;
		free(cl[i].lat);
	}
	qsort(all, n, sizeof(int64_t), cmp64);
	double secs = (double)c.duration;
	printf("%s: %lld clients, %.0f ok/s, p50 %.2f ms, p99 %.2f ms, %lld errors, %.0f bytes/response\n", c.base,
	       c.clients, (double)n / secs, pct_ms(all, n, 50), pct_ms(all, n, 99), errors,
	       n ? (double)bytes / (double)n : 0.0);
	printf("RESULT {\"ok\":%zu,\"ok_per_s\":%.1f,\"p50_ms\":%.3f,\"p99_ms\":%.3f,\"errors\":%lld}\n", n,
	       (double)n / secs, pct_ms(all, n, 50), pct_ms(all, n, 99), errors);
	free(all);
	free(cl);
	curl_share_cleanup(share);
	curl_global_cleanup();
	return errors || !n ? 1 : 0;
}
