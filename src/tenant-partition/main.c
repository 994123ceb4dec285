/* ursa-tp-apiserver: the API server of a tenant partition. */
#include "tp.h"
#include "ursa/log.h"
#include "ursa/options.h"
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static volatile sig_atomic_t stop_requested;

static void on_signal(int sig)
{
	stop_requested = 1;
}

int main(int argc, char **argv)
{
	const char *listen = "127.0.0.1:7101", *etcd = "http://127.0.0.1:2379", *prefix = "/registry";
	const char *cert = NULL, *key = NULL, *tokens = NULL, *pubkey = NULL, *partition = "tp-1", *level = "info";
	long long workers = 16;
	const struct opt opts[] = {
		{ "listen", OPT_STRING, &listen, "address and port to serve on (IPv4:PORT)" },
		{ "etcd-servers", OPT_STRING, &etcd, "comma-separated etcd client URLs of this partition's etcd cluster" },
		{ "etcd-prefix", OPT_STRING, &prefix, "key prefix of all objects in etcd" },
		{ "tls-cert-file", OPT_STRING, &cert, "PEM certificate; with --tls-private-key-file serves HTTPS" },
		{ "tls-private-key-file", OPT_STRING, &key, "PEM private key of --tls-cert-file" },
		{ "token-auth-file", OPT_STRING, &tokens, "static bearer tokens: CSV token,user,uid,\"groups\",tenant" },
		{ "token-signing-public-key", OPT_STRING, &pubkey, "PEM public key verifying signed (JWT) tokens" },
		{ "partition-id", OPT_STRING, &partition, "this tenant partition's id in the region" },
		{ "workers", OPT_INT, &workers, "HTTP worker threads" },
		{ "log-level", OPT_STRING, &level, "debug, info, warn or error" },
	};
	if (opts_parse("ursa-tp-apiserver", "The API server of an Ursa tenant partition: tenants and everything inside them, stored in the partition's etcd.",
		       opts, (int)(sizeof(opts) / sizeof(opts[0])), argc, argv) < 0)
		return 2;
	log_set_component("tp-apiserver");
	if (strcmp(level, "debug") == 0)
		log_set_level(LOG_DEBUG);
	else if (strcmp(level, "warn") == 0)
		log_set_level(LOG_WARN);
	else if (strcmp(level, "error") == 0)
		log_set_level(LOG_ERROR);
	signal(SIGPIPE, SIG_IGN);
	struct sigaction sa = { .sa_handler = on_signal };
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);

	struct apiserver_options o = {
		.component = "tp-apiserver", .listen = listen, .tls_cert = cert, .tls_key = key, .etcd_servers = etcd,
		.etcd_prefix = prefix, .token_file = tokens, .token_public_key = pubkey, .partition_id = partition,
		.workers = (unsigned)workers, .resources = tp_resources, .nresources = tp_nresources,
		.on_created = tp_on_created,
	};
	char *err = NULL;
	struct apiserver *s = apiserver_start(&o, &err);
	if (!s) {
		log_error("cannot start", "err=\"%s\"", err ? err : "unknown");
		free(err);
		return 1;
	}
	log_info("serving", "listen=%s tls=%s etcd=\"%s\" partition=%s", listen, cert ? "yes" : "no", etcd, partition);
	while (!stop_requested)
		pause();
	log_info("stopping", "%s", "");
	apiserver_stop(s);
	return 0;
}
