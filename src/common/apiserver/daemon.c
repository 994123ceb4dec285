/* The main() of an API server daemon: its flags and start/stop on the daemon skeleton
 * (ursa/daemon.h). */
#include "internal.h"
#include "ursa/daemon.h"
#include "ursa/log.h"
#include "ursa/options.h"
#include "ursa/xalloc.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The running API server: its definition, flags and server. */
struct apid {
	const struct apiserver_daemon *d;
	const char *listen, *etcd, *prefix, *cert, *key, *tokens, *pubkey, *partition, *region_token, *region_ca;
	const char *idkey, *kubelet_token, *sa_key;
	long long workers, linger, hb_linger, trees_mb;
	bool fair;
	long long tenant_seats, seats_per_tenant, queue_length, queue_wait, max_watches, bulk_buffer;
	long long number;
	struct apiserver *s;
};

/* Creates the system tenant's standard namespaces, retrying while etcd is unreachable. */
static void ensure_system_namespaces(struct apiserver *s, struct daemon *dm, const char *const *names)
{
	for (size_t i = 0; names && names[i]; i++) {
		json_t *ns = json_pack("{s:s,s:s,s:{s:s}}", "apiVersion", "v1", "kind", "Namespace", "metadata", "name",
				       names[i]);
		int rc = E_UNAVAILABLE;
		for (int tries = 0; tries < 120 && rc < 0 && rc != E_ALREADY_EXISTS; tries++) {
			rc = apiserver_create(s, "namespaces", TENANT_SYSTEM, NULL, ns);
			if (rc < 0 && rc != E_ALREADY_EXISTS && daemon_sleep(dm, 500))
				break;
		}
		if (rc < 0 && rc != E_ALREADY_EXISTS)
			log_warn("cannot create system namespace", "namespace=%s err=%s", names[i], err_reason(rc));
		json_decref(ns);
	}
}

static int check(void *ud)
{
	struct apid *a = ud;
	if (a->linger < 0 || a->linger > 1000 || a->hb_linger < 0 || a->hb_linger > 1000) {
		fprintf(stderr, "%s: --etcd-write-linger-ms and --etcd-heartbeat-linger-ms must be 0..1000\n", a->d->program);
		return -1;
	}
	if (rv_set_number(a->number) < 0) {
		fprintf(stderr, "%s: --partition-number must be 0..%d\n", a->d->program, RV_NUMBER_MAX);
		return -1;
	}
	if (a->trees_mb < 0 || a->trees_mb > 65536) {
		fprintf(stderr, "%s: --watch-cache-trees-mb must be 0..65536\n", a->d->program);
		return -1;
	}
	if (a->workers < 1 || a->workers > 4096 || a->tenant_seats < 0 || a->tenant_seats > a->workers ||
	    a->seats_per_tenant < 0 || a->seats_per_tenant > a->workers) {
		fprintf(stderr, "%s: --workers must be 1..4096, --tenant-seats and --seats-per-tenant 0..--workers\n",
			a->d->program);
		return -1;
	}
	if (a->queue_length < 1 || a->queue_length > 100000 || a->queue_wait < 1 || a->queue_wait > 3600 ||
	    a->max_watches < 0 || a->max_watches > 10000000 || a->bulk_buffer < 0 || a->bulk_buffer > (64 << 20)) {
		fprintf(stderr, "%s: --tenant-queue-length must be 1..100000, --queue-wait-seconds 1..3600, "
				"--max-watches-per-tenant 0..10000000, --fair-bulk-send-buffer 0..67108864\n", a->d->program);
		return -1;
	}
	return 0;
}

static int start(void *ud, struct daemon *dm, char **ret_err)
{
	struct apid *a = ud;
	const struct apiserver_daemon *d = a->d;
	struct apiserver_options o = {
		.component = d->component, .listen = a->listen, .tls_cert = a->cert, .tls_key = a->key,
		.etcd_servers = a->etcd, .etcd_prefix = a->prefix, .token_file = a->tokens, .token_public_key = a->pubkey,
		.identity_key = a->idkey, .sa_signing_key = a->sa_key, .partition_id = a->partition,
		.region_token_file = a->region_token, .region_ca_file = a->region_ca, .kubelet_token_file = a->kubelet_token,
		.workers = (unsigned)a->workers, .resources = d->resources, .nresources = d->nresources,
		.on_created = d->on_created, .etcd_write_linger_ms = a->linger,
		.etcd_heartbeat_linger_ms = a->hb_linger, .cache_trees_mb = a->trees_mb, .defer_listen = true,
		.tenant_seats = !a->fair ? 0 : a->tenant_seats ? (unsigned)a->tenant_seats
							      : (unsigned)(a->workers > 1 ? a->workers / 2 : 1),
		.seats_per_tenant = (unsigned)a->seats_per_tenant, .queue_length = (unsigned)a->queue_length,
		.queue_wait_s = (unsigned)a->queue_wait, .max_watches_per_tenant = (unsigned)a->max_watches,
		.bulk_send_buffer = (unsigned)a->bulk_buffer,
	};
	char *err = NULL;
	a->s = apiserver_start(&o, &err);
	if (!a->s) {
		*ret_err = err ? err : xstrdup("unknown");
		return 1;
	}
	/* before serving: a node's lease created the moment the port answers needs kube-node-lease
	 * (a burst of 10,000 on a fresh resource manager had its first 18 refused with 404) */
	ensure_system_namespaces(a->s, dm, d->system_namespaces);
	if (apiserver_listen(a->s, &err) < 0) {
		*ret_err = err ? err : xstrdup("unknown");
		return 1;
	}
	log_info("serving", "listen=%s tls=%s etcd=\"%s\" partition=%s number=%u", a->listen, a->cert ? "yes" : "no",
		 a->etcd, a->partition, rv_number());
	return 0;
}

static void stop(void *ud)
{
	struct apid *a = ud;
	log_info("stopping", "partition=%s", a->partition);
	apiserver_stop(a->s);
}

int apiserver_main(const struct apiserver_daemon *d, int argc, char **argv)
{
	struct apid a = {
		.d = d, .listen = d->default_listen, .etcd = "http://127.0.0.1:2379", .prefix = "/registry",
		.partition = d->default_partition, .workers = d->default_workers > 0 ? d->default_workers : 16, .linger = d->default_write_linger_ms, .hb_linger = 40,
		.trees_mb = 64, .fair = true, .queue_length = 50, .queue_wait = 15, .max_watches = 2000,
		.bulk_buffer = 65536,
	};
	const struct opt opts[] = {
		{ "listen", OPT_STRING, &a.listen, "address and port to serve on (IPv4:PORT)" },
		{ "etcd-servers", OPT_STRING, &a.etcd, "comma-separated client URLs of this partition's etcd cluster" },
		{ "etcd-prefix", OPT_STRING, &a.prefix, "key prefix of all objects in etcd" },
		{ "tls-cert-file", OPT_STRING, &a.cert, "PEM certificate; with --tls-private-key-file serves HTTPS" },
		{ "tls-private-key-file", OPT_STRING, &a.key, "PEM private key of --tls-cert-file" },
		{ "token-auth-file", OPT_STRING, &a.tokens, "static bearer tokens: CSV token,user,uid,\"groups\",tenant" },
		{ "token-signing-public-key", OPT_STRING, &a.pubkey, "PEM public key verifying signed (JWT) tokens" },
		{ "identity-key-file", OPT_STRING, &a.idkey, "secret shared with the region's gateways: accept the caller identity they assert (X-Ursa-Identity)" },
		{ "service-account-signing-key-file", OPT_STRING, &a.sa_key,
		  "PEM private key signing service-account tokens (serviceaccounts/token; the region's signing key, "
		  "whose public half every --token-signing-public-key holds)" },
		{ "partition-id", OPT_STRING, &a.partition, "this partition's id in the region" },
		{ "partition-number", OPT_INT, &a.number,
		  "this partition's number in the region (1..511, each tenant partition its own), shown in every "
		  "resourceVersion it serves, so that a moved tenant's clients' resourceVersions are never taken for "
		  "another partition's (0: etcd revisions as they are; tenants cannot move to or from a partition "
		  "of the same number)" },
		{ "region-token-file", OPT_STRING, &a.region_token, "bearer token for reaching the region's other partitions" },
		{ "region-ca-file", OPT_STRING, &a.region_ca, "CA bundle for those connections and the kubelets'" },
		{ "kubelet-token-file", OPT_STRING, &a.kubelet_token,
		  "bearer token sent to kubelets for pod logs (their --client-token-file); every node holds it, so "
		  "it should be one no API server accepts (default: the region token)" },
		{ "workers", OPT_INT, &a.workers, "HTTP worker threads" },
		{ "etcd-write-linger-ms", OPT_INT, &a.linger,
		  "a write to etcd waits up to this long for others to share its transaction (fewer, larger txns: "
		  "less etcd CPU when writes come one at a time; 0: none)" },
		{ "etcd-heartbeat-linger-ms", OPT_INT, &a.hb_linger,
		  "a lease write (node heartbeats) waits up to this long for others (at most half the workers) to share its "
		  "transaction; any other write sends at once (0: like other writes)" },
		{ "fair-queuing", OPT_BOOL, &a.fair,
		  "serve tenants by turns (--fair-queuing=false: first come, first served); the region's components "
		  "(system:masters) and nodes are never queued" },
		{ "tenant-seats", OPT_INT, &a.tenant_seats,
		  "requests of tenants executing at once, a LIST of a large kind counting as several (default: half the workers)" },
		{ "seats-per-tenant", OPT_INT, &a.seats_per_tenant,
		  "of those, at most this many for one tenant, so that another's request finds one free (default: three quarters)" },
		{ "tenant-queue-length", OPT_INT, &a.queue_length,
		  "requests waiting in one queue (a tenant joins the shortest of 6 of 64); more get 429" },
		{ "queue-wait-seconds", OPT_INT, &a.queue_wait, "a request waiting longer for a seat gets 429" },
		{ "fair-bulk-send-buffer", OPT_INT, &a.bulk_buffer,
		  "a LIST of more than 500 of its tenant's objects, admitted while other tenants are served, sends its "
		  "reply through a kernel send buffer of this many bytes, so that theirs come between (0: never)" },
		{ "max-watches-per-tenant", OPT_INT, &a.max_watches,
		  "watches one tenant may hold open on this server (0: no limit); more get 429" },
		{ "watch-cache-trees-mb", OPT_INT, &a.trees_mb,
		  "per resource, memory for the parsed objects of this server's recent writes, which the next "
		  "update of the same object reads instead of parsing it again (0: none)" },
	};
	const struct daemon_def def = {
		.program = d->program, .summary = d->summary, .component = d->component, .opts = opts,
		.nopts = (int)ARRAY_SIZE(opts), .check = check, .start = start, .stop = stop,
	};
	return daemon_main(&def, &a, argc, argv);
}
