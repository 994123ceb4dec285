/* ursa-gateway: serve, or `register-partition` to record a partition in the gateway's etcd. */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "gw.h"
#include "ursa/buf.h"
#include "ursa/errors.h"
#include "ursa/etcd.h"
#include "ursa/log.h"
#include "ursa/options.h"
#include "ursa/xalloc.h"

static enum log_level level_of(const char *s)
{
	if (strcmp(s, "debug") == 0)
		return LOG_DEBUG;
	if (strcmp(s, "warn") == 0)
		return LOG_WARN;
	if (strcmp(s, "error") == 0)
		return LOG_ERROR;
	return LOG_INFO;
}

static int register_partition(int argc, char **argv)
{
	const char *etcd_servers = "http://127.0.0.1:23991", *prefix = "/ursa/gateway", *id = NULL, *kind = NULL,
		   *endpoints = NULL, *zone = NULL;
	const struct opt opts[] = {
		{ "etcd-servers", OPT_STRING, &etcd_servers, "the gateway's etcd" },
		{ "etcd-prefix", OPT_STRING, &prefix, "registry prefix" },
		{ "id", OPT_STRING, &id, "partition id (tp-1, rm-az-1)" },
		{ "kind", OPT_STRING, &kind, "tp or rm" },
		{ "endpoints", OPT_STRING, &endpoints, "comma-separated base URLs" },
		{ "zone", OPT_STRING, &zone, "zone of a resource manager" },
	};
	if (opts_parse("ursa-gateway register-partition", "Records a partition in the gateway's etcd.", opts,
		       (int)ARRAY_SIZE(opts), argc, argv) != 0)
		return 2;
	if (!id || !kind || !endpoints || (strcmp(kind, "tp") != 0 && strcmp(kind, "rm") != 0) || !dns_label_ok(id)) {
		fprintf(stderr, "register-partition: --id (a DNS label), --kind tp|rm and --endpoints are required\n");
		return 2;
	}
	struct buf b = BUF_INIT;
	buf_addf(&b, "{\"kind\":\"%s\",\"endpoints\":[", kind);
	const char *s = endpoints;
	while (*s) {
		const char *e = strchr(s, ',');
		size_t n = e ? (size_t)(e - s) : strlen(s);
		if (n) {
			if (b.ptr[b.len - 1] != '[')
				buf_addch(&b, ',');
			buf_add_json_str(&b, s, n);
		}
		s += n + (e ? 1 : 0);
	}
	buf_adds(&b, "]");
	if (zone) {
		buf_adds(&b, ",\"zone\":");
		buf_add_json_str(&b, zone, strlen(zone));
	}
	buf_adds(&b, "}");
	struct etcd *e = etcd_new(etcd_servers, NULL);
	struct registry *r = e ? registry_new(e, prefix) : NULL;
	int err = r ? registry_put_partition(r, id, buf_cstr(&b)) : E_BAD_REQUEST;
	if (err)
		fprintf(stderr, "register-partition: cannot write to %s: %s\n", etcd_servers, err_reason(err));
	else
		printf("registered %s %s %s\n", kind, id, buf_cstr(&b));
	registry_free(r);
	etcd_free(e);
	buf_release(&b);
	return err ? 1 : 0;
}

int main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "register-partition") == 0)
		return register_partition(argc - 1, argv + 1);
	struct gw_options o;
	char *err = NULL;
	if (gw_options_parse(&o, argc, argv) != 0)
		return 2;
	log_set_component("ursa-gateway");
	log_set_level(level_of(o.log_level));
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGPIPE);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	struct gateway *g = gateway_start(&o, &err);
	if (!g) {
		log_error("cannot start", "error=\"%s\"", err ? err : "");
		free(err);
		return 1;
	}
	int sig;
	do {
		sig = sigwaitinfo(&set, NULL);
	} while (sig != SIGINT && sig != SIGTERM);
	log_info("shutting down", "signal=%d streams=%ld upstream_connections_made=%ld", sig, upstream_streams_open(),
		 upstream_connections_made());
	/* libmicrohttpd aborts when stopped with suspended (streaming) connections: with streams
	 * open, leave without the orderly stop (the kernel closes every socket). */
	if (upstream_streams_open() > 0)
		_exit(0);
	gateway_stop(g);
	return 0;
}
