/* ursa-gateway: the region's stateless front door. Authenticates every request, authorizes it
 * against the caller's tenant, and forwards it to the partition that owns what it addresses:
 * a tenant's tenant partition (from an in-memory tenant -> partition map kept current by a
 * watch on the gateway's own etcd), or the resource manager owning a node. */
#ifndef URSA_GW_H
#define URSA_GW_H
#include <curl/curl.h>
#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include "ursa/auth.h"
#include "ursa/buf.h"
#include "ursa/strmap.h"

/* --- routing (route.c): a pure decision over the parsed path and the caller --------------- */
enum route_kind {
	RT_ERROR,           /* answer err/msg */
	RT_LOCAL,           /* /healthz, /readyz, /livez of the gateway itself (no authentication) */
	RT_DISCOVERY,       /* /api, /apis, /version, /openapi: any healthy tenant partition */
	RT_TENANT,          /* tenant's tenant partition */
	RT_TENANT_CREATE,   /* POST /api/v1/tenants: placed by the gateway, name from the body */
	RT_TENANT_LIST,     /* GET /api/v1/tenants: merged across tenant partitions */
	RT_ALL_TENANTS,     /* GET .../tenants/all/...: merged across tenant partitions */
	RT_NODE,            /* a node or its lease: the resource manager owning node */
	RT_NODE_CREATE,     /* POST of a node or node lease: resource manager by name or zone */
	RT_NODE_LIST,       /* nodes or node leases: merged across resource managers */
};

struct route {
	enum route_kind kind;
	int err;            /* RT_ERROR: E_* code */
	const char *msg;    /* RT_ERROR: static text */
	char *tenant;       /* RT_TENANT: owned */
	char *node;         /* RT_NODE: owned */
	bool watch;         /* a watch (?watch=true or /watch/ path) */
};

/* Decides where a request goes. path excludes the query; watch tells whether ?watch=true was
 * given; id is the authenticated caller (NULL only for RT_LOCAL paths, which are decided
 * first). Always fills ret (release with route_release). */
void gw_route(const char *method, const char *path, bool watch, const struct identity *id, struct route *ret);
void route_release(struct route *r);
const char *route_kind_name(enum route_kind k);
/* True if s is a DNS-1123 label (tenant names). */
bool dns_label_ok(const char *s);

/* --- token bucket (bucket.c) ------------------------------------------------------------- */
struct bucket {
	double tokens;
	int64_t last_us;
};
/* Takes one token at now_us (monotonic). Returns 0, or the µs to wait until one is there. */
int64_t bucket_take(struct bucket *b, double rate, double burst, int64_t now_us);

struct limiter {
	pthread_mutex_t lock;
	struct strmap buckets; /* tenant -> struct bucket */
	double rate, burst;    /* rate 0 disables */
};
void limiter_init(struct limiter *l, double rate, double burst);
void limiter_release(struct limiter *l);
/* 0 if tenant may go on, else the seconds a client should wait (>= 1). Caps its map at
 * 100000 tenants (a full map is reset: tenants are authenticated, so this only bounds memory). */
int limiter_check(struct limiter *l, const char *tenant, int64_t now_us);

/* --- audit (audit.c) ---------------------------------------------------------------------- */
struct audit;
/* NULL path disables (returns NULL). max_bytes: rotate to path.1 beyond this size. */
struct audit *audit_open(const char *path, long long max_bytes);
void audit_close(struct audit *a);
void audit_log(struct audit *a, const char *user, const char *tenant, const char *verb, const char *path,
	       int code, int64_t latency_us);

/* --- partitions and maps (registry.c) ------------------------------------------------------ */
struct partition {
	atomic_int refs;
	char *id;
	bool is_rm;
	char *zone;          /* may be NULL */
	char **endpoints;    /* base URLs */
	size_t nendpoints;
	atomic_bool down;    /* circuit open: answered 503 at once */
	atomic_int fails;    /* consecutive failed health checks */
	atomic_int next_ep;  /* endpoint to try first */
};
void partition_unref(struct partition *p);
/* Parses a partition record {"kind":"tp"|"rm","endpoints":[..],"zone":..}. New, refs 1, or NULL. */
struct partition *partition_parse(const char *id, const char *json, size_t len);

struct tenant_rec {
	char *partition;
	bool pending;        /* creation in flight (or abandoned: the reconciler decides) */
	int64_t since_ms;
	int64_t mod_rev;
};

struct registry;
struct etcd;
struct registry *registry_new(struct etcd *e, const char *prefix);
/* Loads everything under the prefix and starts the watch. 0 or E_* (etcd unreachable). */
int registry_start(struct registry *r);
void registry_free(struct registry *r);
/* Reloads after a compaction the watch could not resume from (called by the reconciler). */
void registry_resync_if_needed(struct registry *r);
bool registry_loaded(struct registry *r);
/* The partition serving tenant: a new ref, or NULL (no such tenant / partition). "system"
 * falls back to the first tenant partition by id when not recorded. */
struct partition *registry_tenant_partition(struct registry *r, const char *tenant);
struct partition *registry_partition(struct registry *r, const char *id);
/* New array of refs to every partition of that kind, sorted by id. */
struct partition **registry_partitions(struct registry *r, bool rm, size_t *ret_n);
void partitions_free(struct partition **ps, size_t n);
/* The tenant partition with fewest tenants among those not down (new ref or NULL). */
struct partition *registry_pick_tp(struct registry *r);
/* Copy of a tenant record (caller releases partition) or E_NOT_FOUND. */
int registry_tenant(struct registry *r, const char *tenant, struct tenant_rec *ret);
void tenant_rec_release(struct tenant_rec *t);
/* Writes. */
int registry_assign(struct registry *r, const char *tenant, const char *partition, bool pending, int64_t *ret_rev);
int registry_confirm(struct registry *r, const char *tenant, const char *partition, int64_t rev);
int registry_unassign(struct registry *r, const char *tenant, int64_t rev);
int registry_put_partition(struct registry *r, const char *id, const char *json);
/* Snapshot of tenant -> record (for the reconciler). Caller frees with strmap_release(.., free_rec). */
void registry_tenants_snapshot(struct registry *r, struct strmap *ret);
void tenant_rec_free(void *v);
/* Node -> resource manager id. */
void registry_set_nodes(struct registry *r, const char *rm, char **nodes, size_t n);
char *registry_node_rm(struct registry *r, const char *node); /* new string or NULL */
size_t registry_tenant_count(struct registry *r);

/* --- upstream HTTP (upstream.c) ------------------------------------------------------------ */
struct upstream_req {
	const char *method;
	const char *path;         /* with query */
	const char *authorization;/* forwarded as is, may be NULL */
	const char *content_type;
	const char *accept;
	const char *forwarded_for;
	const char *body;
	size_t len;
	long timeout_ms;          /* 0: none */
};
struct upstream_resp {
	int status;
	char *content_type;
	struct buf body;
};
void upstream_resp_release(struct upstream_resp *r);
/* CA bundle for partitions (may be NULL); call once at start. */
void upstream_init(const char *ca_file);
/* One request to base (e.g. "https://127.0.0.1:7101"). 0 with ret filled, E_UNAVAILABLE when
 * the connection could not be made (nothing was sent), E_TIMEOUT when the outcome is unknown. */
int upstream_do(const char *base, const struct upstream_req *rq, struct upstream_resp *ret);
/* To a partition: tries its endpoints in turn on E_UNAVAILABLE and opens its circuit when none
 * answers. */
int upstream_partition(struct partition *p, const struct upstream_req *rq, struct upstream_resp *ret);

/* Internal to upstream.c and stream.c: sets up c for rq to base (URL, TLS, headers, method,
 * body). Returns the header list (free after the transfer) and the URL in *ret_url (free). */
struct curl_slist *upstream_setup(CURL *c, const char *base, const struct upstream_req *rq, char **ret_url);
/* E_UNAVAILABLE for failures where nothing reached the partition, E_TIMEOUT otherwise. */
int upstream_curl_err(CURLcode rc);

struct http_reply;
/* Streams the partition's response to reply without buffering it (watch, log -f): a thread
 * reads from the partition and feeds the client's connection. Answers reply in every case. */
void upstream_stream(struct partition *p, const struct upstream_req *rq, struct http_reply *reply);
/* A copy of content type ct that lives as long as the process (at most 64 distinct ones;
 * others and NULL give "application/json"). */
const char *ctype_intern(const char *ct);
/* Streams currently open (for /metrics-ish logs and tests). */
long upstream_streams_open(void);

/* --- the daemon (gateway.c) ----------------------------------------------------------------- */
struct gw_options {
	const char *listen, *tls_cert, *tls_key;
	const char *etcd_servers, *etcd_prefix;
	const char *token_file, *signing_pub;
	const char *partition_ca, *partition_token_file;
	const char *audit_path;
	long long audit_max_mb;
	long long tenant_qps, tenant_burst;
	long long threads;
	long long resync_s, pending_grace_s;
	const char *log_level;
};
int gw_options_parse(struct gw_options *o, int argc, char **argv);

struct gateway;
struct gateway *gateway_start(const struct gw_options *o, char **ret_err);
void gateway_stop(struct gateway *g);

#endif
