/* ursa-gateway's flag table. */
#include <stdio.h>
#include <string.h>
#include "gw.h"
#include "ursa/options.h"
#include "ursa/xalloc.h"

const char gw_summary[] =
	"The Ursa region gateway: authenticates requests, authorizes them by tenant and forwards them to the "
	"tenant partition of their tenant (or the resource manager of their node), with the tenant -> "
	"partition map held in memory and kept current from the gateway's etcd. Stateless: run several "
	"behind HAProxy. Partitions are recorded in the gateway's etcd with `ursactl register "
	"--gateway-etcd URL`.";

struct opt *gw_options_flags(struct gw_options *o, int *ret_n)
{
	*o = (struct gw_options){
		.listen = "127.0.0.1:7001", .etcd_servers = "http://127.0.0.1:23991", .etcd_prefix = "/ursa/gateway",
		.audit_max_mb = 100, .tenant_qps = 100, .tenant_burst = 200, .threads = 32, .workers = 1, .resync_s = 10,
		.sweep_s = 300,
		.pending_grace_s = 30, .crd_mirror_s = 5, .move_hold_s = 5,
	};
	const struct opt opts[] = {
		{ "listen", OPT_STRING, &o->listen, "address:port to serve on" },
		{ "tls-cert-file", OPT_STRING, &o->tls_cert, "serving certificate (PEM); plain HTTP without it" },
		{ "tls-private-key-file", OPT_STRING, &o->tls_key, "serving key (PEM)" },
		{ "etcd-servers", OPT_STRING, &o->etcd_servers, "the gateway's etcd (comma-separated URLs)" },
		{ "etcd-prefix", OPT_STRING, &o->etcd_prefix, "key prefix of the region registry in that etcd" },
		{ "token-auth-file", OPT_STRING, &o->token_file, "static token file (token,user,uid,\"groups\",tenant)" },
		{ "token-signing-public-key", OPT_STRING, &o->signing_pub, "public key verifying signed tokens" },
		{ "identity-key-file", OPT_STRING, &o->identity_key,
		  "secret shared with the partitions: tell them who the caller is with an identity assertion instead of "
		  "forwarding the caller's token" },
		{ "partition-ca-file", OPT_STRING, &o->partition_ca, "CA bundle verifying the partitions' certificates" },
		{ "partition-token-file", OPT_STRING, &o->partition_token_file,
		  "bearer token of the gateway itself (system:masters of tenant system) for listing nodes and tenants" },
		{ "audit-log-path", OPT_STRING, &o->audit_path, "JSON-lines audit log of mutating requests" },
		{ "audit-log-maxsize", OPT_INT, &o->audit_max_mb, "rotate the audit log to <path>.1 beyond this many MiB" },
		{ "tenant-qps", OPT_INT, &o->tenant_qps, "requests per second per tenant (0: no limit)" },
		{ "tenant-burst", OPT_INT, &o->tenant_burst, "burst per tenant" },
		{ "threads", OPT_INT, &o->threads, "HTTP worker threads" },
		{ "workers", OPT_INT, &o->workers,
		  "processes serving --listen together (SO_REUSEPORT), each a whole gateway with its own map, "
		  "loops and descriptors: one per core to use more than one core; restarted if one dies" },
		{ "resync-seconds", OPT_INT, &o->resync_s,
		  "how often unfinished tenant placements are checked against their partitions" },
		{ "sweep-seconds", OPT_INT, &o->sweep_s,
		  "how often every tenant partition's tenants and every resource manager's nodes are read again (paged) "
		  "to adopt tenants made on a partition directly and drop placements of deleted tenants" },
		{ "pending-grace-seconds", OPT_INT, &o->pending_grace_s,
		  "age after which an unfinished tenant placement is undone when its partition lacks the tenant" },
		{ "crd-mirror-seconds", OPT_INT, &o->crd_mirror_s,
		  "how often the system tenant's CustomResourceDefinitions are copied from its partition into tenant "
		  "system of every other tenant partition (and copies whose original is gone deleted)" },
		{ "move-hold-seconds", OPT_INT, &o->move_hold_s,
		  "a write the tenant's partition refuses because the tenant is moving (429 with X-Ursa-Tenant-Moving) "
		  "is held and sent again to the tenant's partition when its placement changes, for at most this long; "
		  "then the 429 is passed on (0: passed on at once)" },
	};
	*ret_n = (int)ARRAY_SIZE(opts);
	struct opt *r = xmalloc(sizeof(opts));
	memcpy(r, opts, sizeof(opts));
	return r;
}

int gw_options_check(const struct gw_options *o)
{
	if (o->tenant_qps < 0 || o->tenant_burst < 1 || o->threads < 1 || o->threads > 512 || o->workers < 1 || o->workers > 64 ||
	    o->resync_s < 1 || o->sweep_s < 1 || o->crd_mirror_s < 1 ||
	    o->pending_grace_s < 1 || o->audit_max_mb < 1 || o->move_hold_s < 0 || o->move_hold_s > 60) {
		fprintf(stderr, "ursa-gateway: a numeric flag is out of range\n");
		return -1;
	}
	if (!o->token_file && !o->signing_pub) {
		fprintf(stderr, "ursa-gateway: --token-auth-file or --token-signing-public-key is required\n");
		return -1;
	}
	return 0;
}
