/*
 * ursa-restcost: what one request costs the shared REST client (src/common/client/rest.c), the
 * client every daemon uses (scheduler bindings, kubelet heartbeats and status patches).
 *
 * Sends --requests sequential GETs of --path over one kept connection and prints the client's
 * CPU (user + system, from getrusage) and wall time per request. One warm-up request first, so
 * the TLS handshake is not counted. Ends with "RESULT {json}": requests, errors, cpu_us,
 * wall_us (per request).
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include "ursa/buf.h"
#include "ursa/client.h"
#include "ursa/options.h"
#include "ursa/timeutil.h"

#define MAX_REQUESTS 10000000LL

static double cpu_seconds(void)
{
	struct rusage u;
	getrusage(RUSAGE_SELF, &u);
	return (double)(u.ru_utime.tv_sec + u.ru_stime.tv_sec) + (double)(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

int main(int argc, char **argv)
{
	const char *kubeconfig = NULL, *path = "/healthz";
	long long n = 20000;
	const struct opt opts[] = {
		{ "kubeconfig", OPT_STRING, &kubeconfig, "kubeconfig of the server (required)" },
		{ "path", OPT_STRING, &path, "path to GET" },
		{ "requests", OPT_INT, &n, "sequential requests to send" },
	};
	if (opts_parse("ursa-restcost", "CPU and time of one REST client request.", opts,
		       (int)(sizeof(opts) / sizeof(opts[0])), argc, argv) < 0)
		return 2;
	if (!kubeconfig || n < 1 || n > MAX_REQUESTS) {
		fprintf(stderr, "ursa-restcost: need --kubeconfig; --requests 1..%lld\n", MAX_REQUESTS);
		return 2;
	}
	char *err = NULL;
	struct rest_client *c = rest_from_kubeconfig(kubeconfig, &err);
	if (!c) {
		fprintf(stderr, "ursa-restcost: %s\n", err ? err : "bad kubeconfig");
		free(err);
		return 2;
	}
	struct buf body = BUF_INIT;
	long long errors = 0;
	if (rest_do_raw(c, "GET", path, NULL, 0, NULL, &body) != 200)
		fprintf(stderr, "ursa-restcost: warm-up GET %s failed\n", path);
	double c0 = cpu_seconds();
	int64_t t0 = mono_us();
	for (long long i = 0; i < n; i++) {
		buf_reset(&body);
		if (rest_do_raw(c, "GET", path, NULL, 0, NULL, &body) != 200)
			errors++;
	}
	double cpu_us = (cpu_seconds() - c0) * 1e6 / (double)n, wall_us = (double)(mono_us() - t0) / (double)n;
	printf("%lld GETs of %s (%zu bytes each): client CPU %.1f us, wall %.1f us per request, %lld errors\n", n, path,
	       body.len, cpu_us, wall_us, errors);
	printf("RESULT {\"requests\":%lld,\"errors\":%lld,\"cpu_us\":%.1f,\"wall_us\":%.1f}\n", n, errors, cpu_us, wall_us);
	buf_release(&body);
	rest_free(c);
	return errors ? 1 : 0;
}
