/* The main() of an API server daemon: flags, logging, signals, run until SIGTERM. */
#include "internal.h"
#include "ursa/log.h"
#include "ursa/notify.h"
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

/* Creates the system tenant's standard namespaces, retrying while etcd is unreachable. */
static void ensure_system_namespaces(struct apiserver *s, const char *const *names)
{
	for (size_t i = 0; names && names[i]; i++) {
		json_t *ns = json_pack("{s:s,s:s,s:{s:s}}", "apiVersion", "v1", "kind", "Namespace", "metadata", "name",
				       names[i]);
		int rc = E_UNAVAILABLE;
		for (int tries = 0; tries < 120 && rc < 0 && rc != E_ALREADY_EXISTS && !stop_requested; tries++) {
			rc = apiserver_create(s, "namespaces", TENANT_SYSTEM, NULL, ns);
			if (rc < 0 && rc != E_ALREADY_EXISTS)
				usleep(500 * 1000);
		}
		if (rc < 0 && rc != E_ALREADY_EXISTS)
			log_warn("cannot create system namespace", "namespace=%s err=%s", names[i], err_reason(rc));
		json_decref(ns);
	}
}

int apiserver_main(const struct apiserver_daemon *d, int argc, char **argv)
{
	const char *listen = d->default_listen, *etcd = "http://127.0.0.1:2379", *prefix = "/registry";
	const char *cert = NULL, *key = NULL, *tokens = NULL, *pubkey = NULL, *partition = d->default_partition;
	const char *level = "info", *region_token = NULL, *region_ca = NULL, *idkey = NULL, *kubelet_token = NULL;
	const char *sa_key = NULL;
	long long workers = 16, linger = d->default_write_linger_ms, hb_linger = 40, trees_mb = 64;
	const struct opt opts[] = {
		{ "listen", OPT_STRING, &listen, "address and port to serve on (IPv4:PORT)" },
		{ "etcd-servers", OPT_STRING, &etcd, "comma-separated client URLs of this partition's etcd cluster" },
		{ "etcd-prefix", OPT_STRING, &prefix, "key prefix of all objects in etcd" },
		{ "tls-cert-file", OPT_STRING, &cert, "PEM certificate; with --tls-private-key-file serves HTTPS" },
		{ "tls-private-key-file", OPT_STRING, &key, "PEM private key of --tls-cert-file" },
		{ "token-auth-file", OPT_STRING, &tokens, "static bearer tokens: CSV token,user,uid,\"groups\",tenant" },
		{ "token-signing-public-key", OPT_STRING, &pubkey, "PEM public key verifying signed (JWT) tokens" },
		{ "identity-key-file", OPT_STRING, &idkey, "secret shared with the region's gateways: accept the caller identity they assert (X-Ursa-Identity)" },
		{ "service-account-signing-key-file", OPT_STRING, &sa_key,
		  "PEM private key signing service-account tokens (serviceaccounts/token; the region's signing key, "
		  "whose public half every --token-signing-public-key holds)" },
		{ "partition-id", OPT_STRING, &partition, "this partition's id in the region" },
		{ "region-token-file", OPT_STRING, &region_token, "bearer token for reaching the region's other partitions" },
		{ "region-ca-file", OPT_STRING, &region_ca, "CA bundle for those connections and the kubelets'" },
		{ "kubelet-token-file", OPT_STRING, &kubelet_token,
		  "bearer token sent to kubelets for pod logs (their --client-token-file); every node holds it, so "
		  "it should be one no API server accepts (default: the region token)" },
		{ "workers", OPT_INT, &workers, "HTTP worker threads" },
		{ "etcd-write-linger-ms", OPT_INT, &linger,
		  "a write to etcd waits up to this long for others to share its transaction (fewer, larger txns: "
		  "less etcd CPU when writes come one at a time; 0: none)" },
		{ "etcd-heartbeat-linger-ms", OPT_INT, &hb_linger,
		  "a lease write (node heartbeats) waits up to this long for others (at most half the workers) to share its "
		  "transaction; any other write sends at once (0: like other writes)" },
		{ "watch-cache-trees-mb", OPT_INT, &trees_mb,
		  "per resource, memory for the parsed objects of this server's recent writes, which the next "
		  "update of the same object reads instead of parsing it again (0: none)" },
		{ "log-level", OPT_STRING, &level, "debug, info, warn or error" },
	};
	if (opts_parse(d->program, d->summary, opts, (int)(sizeof(opts) / sizeof(opts[0])), argc, argv) < 0)
		return 2;
	if (linger < 0 || linger > 1000 || hb_linger < 0 || hb_linger > 1000) {
		fprintf(stderr, "%s: --etcd-write-linger-ms and --etcd-heartbeat-linger-ms must be 0..1000\n", d->program);
		return 2;
	}
	if (trees_mb < 0 || trees_mb > 65536) {
		fprintf(stderr, "%s: --watch-cache-trees-mb must be 0..65536\n", d->program);
		return 2;
	}
	log_set_component(d->component);
	log_set_level_name(level);
	signal(SIGPIPE, SIG_IGN);
	struct sigaction sa = { .sa_handler = on_signal };
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	struct apiserver_options o = {
		.component = d->component, .listen = listen, .tls_cert = cert, .tls_key = key, .etcd_servers = etcd,
		.etcd_prefix = prefix, .token_file = tokens, .token_public_key = pubkey, .identity_key = idkey, .sa_signing_key = sa_key, .partition_id = partition,
		.region_token_file = region_token, .region_ca_file = region_ca, .kubelet_token_file = kubelet_token,
		.workers = (unsigned)workers, .resources = d->resources, .nresources = d->nresources,
		.on_created = d->on_created, .etcd_write_linger_ms = linger,
		.etcd_heartbeat_linger_ms = hb_linger, .cache_trees_mb = trees_mb,
	};
	char *err = NULL;
	struct apiserver *s = apiserver_start(&o, &err);
	if (!s) {
		log_error("cannot start", "err=\"%s\"", err ? err : "unknown");
		free(err);
		return 1;
	}
	ensure_system_namespaces(s, d->system_namespaces);
	log_info("serving", "listen=%s tls=%s etcd=\"%s\" partition=%s", listen, cert ? "yes" : "no", etcd, partition);
	notify_ready();
	while (!stop_requested)
		pause();
	log_info("stopping", "partition=%s", partition);
	apiserver_stop(s);
	return 0;
}
