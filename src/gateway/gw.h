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
	RT_DISCOVERY,       /* /api, /apis, /version: any healthy tenant partition (with the resource
			     * managers' kinds merged in); GET /openapi/...: merged documents (openapi.c) */
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
	bool stream;        /* pods/exec, pods/attach or pods/portforward (an upgrade, tunnelled) */
};

/* Decides where a request goes. path excludes the query; watch tells whether ?watch=true was
 * given; id is the authenticated caller (NULL only for RT_LOCAL paths, which are decided
 * first). Always fills ret (release with route_release). */
void gw_route(const char *method, const char *path, bool watch, const struct identity *id, struct route *ret);
void route_release(struct route *r);
const char *route_kind_name(enum route_kind k);
/* True if s is a DNS-1123 label (tenant names). */
bool dns_label_ok(const char *s);

/* --- per-tenant rate limit (bucket.c) ------------------------------------------------------- */
struct limiter {
	pthread_mutex_t lock;
	struct strmap buckets; /* tenant -> struct token_bucket (ursa/bucket.h) */
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
/* One line: time, user, tenant, verb, path, code, latency, and for a refused request (reason not
 * NULL) why: the authorization decision's words ("authorization.k8s.io/reason"). */
void audit_log(struct audit *a, const char *user, const char *tenant, const char *verb, const char *path,
	       int code, int64_t latency_us, const char *reason);

/* --- partitions and maps (registry.c) ------------------------------------------------------ */
struct partition {
	atomic_int refs;
	char *id;
	bool is_rm;
	char *zone;          /* may be NULL */
	bool draining;       /* "draining": true (ursactl partition drain): no new tenant goes there */
	char **endpoints;    /* base URLs */
	size_t nendpoints;
	atomic_bool down;    /* circuit open: answered 503 at once */
	atomic_int fails;    /* consecutive failed health checks */
	atomic_int next_ep;  /* endpoint to try first */
};
void partition_unref(struct partition *p);
/* Parses a partition record {"kind":"tp"|"rm","endpoints":[..],"zone":..,"draining":bool}. New,
 * refs 1, or NULL. */
struct partition *partition_parse(const char *id, const char *json, size_t len);

/* Where a tenant came from when its record was rewritten by a live move (`ursactl tenant move`,
 * docs/migration.md): the record's optional "moved" object
 * {"from":"tp-1","fromRevision":F,"toRevision":S,"move":"<id>"}. F is the last revision of the
 * source's etcd with a change of the tenant, S the revision of the target's etcd at which the
 * target holds exactly the tenant's state as of F: a watch that saw everything up to F on the
 * source goes on at the target from resourceVersion S without a gap or a repeat (stream.c). */
struct tenant_moved {
	char *from;          /* partition id */
	int64_t from_rev, to_rev;
	char *move;          /* the move's id, may be NULL */
};

struct tenant_rec {
	char *partition;
	bool pending;        /* creation in flight (or abandoned: the reconciler decides) */
	int64_t since_ms;    /* kept for pending records only (0 for ready ones) */
	int64_t mod_rev;
	struct tenant_moved moved; /* from NULL: the record has no (valid) "moved" */
};

/* A decoded tenant record value {"partition":"tp-1","state":"pending"|"ready","since":<ms>},
 * optionally with "moved":{"from":"tp-1","fromRevision":F,"toRevision":S,"move":"<id>"}. */
struct tenant_val {
	struct sv partition; /* into the parsed text, or into scratch */
	bool pending;
	int64_t since_ms;
	/* "moved", kept when it names a partition (1..253 bytes, no NUL) and a toRevision > 0;
	 * views into the parsed text, or into scratch (after the partition) */
	bool has_moved;
	struct sv moved_from, move_id;
	int64_t moved_from_rev, moved_to_rev;
};
/* Decodes a tenant record without building a JSON tree when it is an object of plain strings
 * and integers (what the gateway writes), with at most a "moved" object of the same kind in it;
 * anything else goes through jansson, with the result's strings copied into scratch. 0, or -1
 * when it names no partition (or an id over 253 bytes). A "moved" that is not an object of the
 * expected members is ignored (has_moved false), not an error: the placement itself stands. */
int tenant_val_parse(const char *json, size_t len, struct tenant_val *ret, struct buf *scratch);

struct registry;
struct etcd;
struct etcd_range_result;
/* registry_new: e may be NULL for a registry loaded through registry_set_range only (tests). */
struct registry *registry_new(struct etcd *e, const char *prefix);
/* Loads everything under the prefix and starts the watch. 0 or E_* (etcd unreachable). */
int registry_start(struct registry *r);

/* The initial load (and a reload after a compaction) reads the prefix in pages of at most
 * REGISTRY_PAGE keys, all at the revision of the first page's header (a consistent snapshot),
 * each page bounded to a slice of keys sharing a prefix (etcd 3.4 walks a range to its end on
 * every request: see load_pass in registry.c) and continuing at the last key read; the watch
 * starts at that revision + 1. The maps are built aside and swapped in whole. */
#define REGISTRY_PAGE 50000
/* One page: etcd_range's contract (revision 0 = latest, E_GONE when compacted). */
typedef int (*registry_range_fn)(void *ud, const char *key, const char *range_end, int64_t revision, int64_t limit,
				 struct etcd_range_result *ret);
/* Replaces etcd_range for loads (tests) and the page size (at least 2). */
void registry_set_range(struct registry *r, registry_range_fn fn, void *ud, int64_t page);
/* One load (no watch): 0 with the snapshot revision in *ret_rev, or the E_* of the failing page.
 * A snapshot compacted between pages (E_GONE) starts over at the latest revision, at most 4 times. */
int registry_load(struct registry *r, int64_t *ret_rev);
struct registry_load_stats {
	int64_t revision;    /* of the snapshot */
	long pages, keys;    /* over every attempt */
	int attempts;
	int64_t us;          /* wall time of the load */
};
/* Figures of the last successful load. */
void registry_load_stats(struct registry *r, struct registry_load_stats *ret);
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
/* Whether tenant has a move in progress (a record under <prefix>/moves/: ursactl tenant move). */
bool registry_tenant_moving(struct registry *r, const char *tenant);
/* The tenant partition with fewest tenants among those not down or draining (new ref or NULL). */
struct partition *registry_pick_tp(struct registry *r);
/* Copy of a tenant record (release it with tenant_rec_release) or E_NOT_FOUND. */
int registry_tenant(struct registry *r, const char *tenant, struct tenant_rec *ret);
void tenant_rec_release(struct tenant_rec *t);
/* fn(ud, tenant) after every change of a tenant's record that the registry applies (the watch's
 * events, this gateway's own writes), tenant NULL after a reload (any may have changed). It runs
 * on the thread that applied the change with the registry's lock held: it must be quick and must
 * not call into the registry (plain_unpark is what the gateway passes). One hook; NULL removes it.
 * Set it before registry_start. */
typedef void (*registry_change_fn)(void *ud, const char *tenant);
void registry_on_tenant_change(struct registry *r, registry_change_fn fn, void *ud);
/* Writes. */
int registry_assign(struct registry *r, const char *tenant, const char *partition, bool pending, int64_t *ret_rev);
int registry_confirm(struct registry *r, const char *tenant, const char *partition, int64_t rev);
int registry_unassign(struct registry *r, const char *tenant, int64_t rev);
/* Snapshot of tenant -> record (for the reconciler). Caller frees with strmap_release(.., free_rec). */
void registry_tenants_snapshot(struct registry *r, struct strmap *ret);
/* The same for the pending records only. */
void registry_pending_snapshot(struct registry *r, struct strmap *ret);
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
	const char *identity;     /* identity assertion (IDENTITY_HEADER), may be NULL */
	const char *if_none_match;/* may be NULL */
	const char *body;
	size_t len;
	long timeout_ms;          /* 0: none */
};
struct upstream_resp {
	int status;
	char *content_type;
	char *warning; /* the partition's Warning header(s), joined by ", " (field validation), or NULL */
	char *etag;    /* the partition's ETag (upstream_do only), or NULL */
	char *moving;  /* X-Ursa-Tenant-Moving: the tenant a partition refuses writes of while it moves
			* (with a 429), or NULL */
	struct buf body;
};
/* The Warning headers of c's last response, joined by ", "; NULL if none. Free it. */
char *upstream_warnings(CURL *c);
void upstream_resp_release(struct upstream_resp *r);
/* CA bundle for partitions (may be NULL); call once at start. */
void upstream_init(const char *ca_file);
/* One request to base (e.g. "https://127.0.0.1:7101"). 0 with ret filled, E_UNAVAILABLE when
 * the connection could not be made (nothing was sent), E_TIMEOUT when the outcome is unknown. */
int upstream_do(const char *base, const struct upstream_req *rq, struct upstream_resp *ret);
/* New connections upstream_do has opened since start (with keep-alive, about one per HTTP
 * worker thread and partition endpoint; more means connections are being dropped). */
long upstream_connections_made(void);
/* To a partition: tries its endpoints in turn on E_UNAVAILABLE and opens its circuit when none
 * answers. */
int upstream_partition(struct partition *p, const struct upstream_req *rq, struct upstream_resp *ret);

/* Internal to upstream.c and stream.c (libcurl): sets up c for rq to base (URL, TLS, headers, method,
 * body). Returns the header list (free after the transfer) and the URL in *ret_url (free).
 * upstream_setup = upstream_setup_handle (options every partition handle has, set once per
 * handle) + upstream_setup_request (what changes per request; rq's strings must outlive the
 * transfer: libcurl keeps pointers to the body). */
struct curl_slist *upstream_setup(CURL *c, const char *base, const struct upstream_req *rq, char **ret_url);
void upstream_setup_handle(CURL *c);
struct curl_slist *upstream_setup_request(CURL *c, const char *base, const struct upstream_req *rq, char **ret_url);
/* The request headers rq asks for, libcurl's and h1_request_head's (Authorization,
 * IDENTITY_HEADER, Accept, X-Forwarded-For, If-None-Match, an empty Expect, Content-Type for
 * methods other than GET and HEAD), appended to b as NUL-terminated "Name: value" strings whose
 * offsets go to offs; returns how many. Values holding CR or LF are left out. */
#define UPSTREAM_HEADERS_MAX 7
size_t upstream_header_lines(const struct upstream_req *rq, struct buf *b, size_t offs[UPSTREAM_HEADERS_MAX]);
/* Sets c's method options for rq (every one of them, whatever the handle did before); for a
 * body, libcurl keeps a pointer to rq->body until the transfer ends. */
void upstream_setup_method(CURL *c, const struct upstream_req *rq);
/* Response bodies beyond this are not relayed: the transfer fails (E_TIMEOUT, 504). */
#define UPSTREAM_MAX_RESPONSE (64u << 20)
/* CURLOPT_WRITEFUNCTION appending to the struct buf given as WRITEDATA, capped as above. */
size_t upstream_on_body(char *data, size_t size, size_t n, void *ud);
/* Adds the connections c's last transfer opened to upstream_connections_made. */
void upstream_count_connections(CURL *c);
/* Adds one (a connection plain.c's client opened). */
void upstream_connection_opened(void);
/* The CA file given to upstream_init (borrowed, NULL: the system's store). */
const char *upstream_ca_file(void);
/* Hands every finished transfer of m to done(priv, result), priv being the handle's
 * CURLOPT_PRIVATE. For stream.c's multi loop. */
void upstream_multi_finished(CURLM *m, void (*done)(void *priv, CURLcode rc));
/* E_UNAVAILABLE for failures where nothing reached the partition, E_TIMEOUT otherwise. */
int upstream_curl_err(CURLcode rc);

/* --- plain requests (plain.c): one loop thread sends every forwarded request that is not a
 * stream with the gateway's own HTTP/1.1 client (h1.h) over its epoll set (kept-alive
 * connections pooled per endpoint, TLS verified against upstream_ca_file); the client's reply
 * is deferred (http_reply_defer) meanwhile, so no thread blocks on a partition. The process
 * must ignore or block SIGPIPE (ursa-gateway blocks it). */
/* Outcome of plain_forward, on the loop thread: err 0 with *resp filled (the callback may take
 * its body and content type; the loop releases what is left), or E_UNAVAILABLE (no endpoint
 * of the partition took the connection within a second; its circuit is now open) or E_TIMEOUT
 * (sent, outcome unknown: rq->timeout_ms passed, the connection broke, the response was
 * unparsable or over UPSTREAM_MAX_RESPONSE). */
typedef void (*plain_done_fn)(void *ud, int err, struct upstream_resp *resp);
/* Starts the loop; with srv (started with options.external), the loop drives that server too.
 * 0 or E_INTERNAL. plain_quiesce: forwards from now on fail at once with E_UNAVAILABLE and
 * those still running after grace_ms are ended with E_UNAVAILABLE. plain_stop: closes srv's
 * listening socket, gives running forwards 10 s (plain_quiesce), then ends the loop; call
 * http_server_stop(srv) after it (the deferred replies are finished by then). */
struct http_server;
int plain_start(struct http_server *srv);
void plain_quiesce(long grace_ms);
void plain_stop(void);
/* Makes the loop run the server soon (http_server_options.wake); any thread. */
void plain_wake(void *unused);
/* Sends rq to partition p, trying its endpoints in turn on refused connections (the one that
 * answers is tried first next time) and opening its circuit when none takes it, as
 * upstream_partition does. rq and every string it points to must stay valid until done runs
 * (a deferred request's own headers and body do). done runs exactly once, on the loop thread,
 * or on the caller's thread before this returns when the loop is not running. p is not
 * taken (the loop holds its own reference). */
void plain_forward(struct partition *p, const struct upstream_req *rq, plain_done_fn done, void *ud);
/* Transfers in the loop now (for /metrics and tests). */
long plain_in_flight(void);
/* Parking (held writes of a moving tenant, gateway.c): fn(ud, false) runs on the loop thread
 * once due_ms (mono_ms clock) has passed or plain_unpark named key, whichever comes first;
 * fn(ud, true) instead when the loop quiesces or stops (answer the request, do not send it).
 * Call on the loop thread only (from a plain_done_fn or a park's fn). key is borrowed and must
 * stay valid until fn runs. A parked request holds no thread and no connection: the loop waits
 * for the earliest due time among parked ones. */
typedef void (*plain_park_fn)(void *ud, bool cancelled);
void plain_park(const char *key, int64_t due_ms, plain_park_fn fn, void *ud);
/* Any thread: the parked entries of key (NULL: every one) run at the loop's next turn. Costs an
 * atomic load when nothing is parked, so it may be called on every placement change (a change
 * that races with a park is seen when the park is due, at most its wait later). */
void plain_unpark(const char *key);
/* Entries parked now (tests). */
long plain_parked(void);

struct http_reply;
/* --- tenant moves (move.c): what the gateway does while a tenant moves between partitions ---
 * (issue 23, docs/migration.md). During a move the source partition answers the tenant's writes
 * with 429, Retry-After: 1 and MOVING_HEADER: <tenant>; the gateway holds such a write (plain
 * requests only: parked in the plain loop, no thread waits) and sends it again to the tenant's
 * partition once its placement changes or every MOVE_HOLD_STEP_MS, for at most
 * --move-hold-seconds in all, then passes the last 429 on (clients retry 429 themselves). At the
 * switch the placement record gains "moved" (struct tenant_moved); a single-partition watch of the
 * tenant whose upstream ends is continued at the new partition from moved.to_rev (stream.c). */
#define MOVING_HEADER "X-Ursa-Tenant-Moving"
#define MOVE_HOLD_STEP_MS 100      /* a held write is sent again after this at the latest */
#define MOVE_BRIDGE_WAIT_MS 3000   /* an ended watch waits this long for its tenant's placement to change */
#define MOVE_BRIDGE_POLL_MS 25     /* and looks at the registry this often meanwhile */
enum move_hold {
	MOVE_PASS,   /* relay the answer */
	MOVE_HOLD,   /* park the request, then send it again to the tenant's partition */
	MOVE_RESEND, /* send it again now: the tenant's placement changed since it was sent */
};
/* The hold decision for a plain request's answer. status and moving (MOVING_HEADER's value, may
 * be NULL): the answer; tenant: the request's tenant (NULL: not one tenant's request); sent_to:
 * the partition it went to; now_on: the tenant's partition now (NULL: unknown); held_ms: how long
 * it has been held so far; budget_ms: the hold budget (0: never hold). Only a 429 whose
 * MOVING_HEADER names the request's tenant is held. Pure. */
enum move_hold move_hold_decide(int status, const char *moving, const char *tenant, const char *sent_to,
				const char *now_on, int64_t held_ms, int64_t budget_ms);
/* The path and query of a watch continued on the partition its tenant moved to: path (with its
 * query, as the source got it) without resourceVersion, resourceVersionMatch and
 * sendInitialEvents (keys compared percent-decoded), with resourceVersion=rv appended, and a
 * timeoutSeconds lowered by elapsed_s (to at least 1). New string. Pure. */
char *move_watch_path(const char *path, int64_t rv, int64_t elapsed_s);
/* The watch's timeoutSeconds in path's query, or 0 (none, or not a positive integer). Pure. */
int64_t move_watch_timeout_s(const char *path);
/* True if the raw (percent-encoded) query key k of length n decodes to name, decoding as
 * libmicrohttpd does on the partitions ("%XX" only). Pure. */
bool query_key_is(const char *k, size_t n, const char *name);
/* Counters for /metrics (any thread): requests held (once each), held requests sent again, held
 * requests whose last 429 was passed on after the budget, the milliseconds they were held in
 * all; watches continued on another partition, and ended watches that waited for a placement
 * change that did not come. */
struct move_stats {
	long held, resent, expired, held_ms, bridged, bridge_waits, bridge_failed;
};
void move_stats_get(struct move_stats *ret);
void move_count_hold(long held, long resent, long expired, long held_ms);
void move_count_bridge(long bridged, long waits, long failed);

/* --- streams (stream.c): one thread runs libcurl's multi interface for every stream ---------- */
/* Starts / stops the stream loop (gateway_start / gateway_stop). Stop ends every open stream's
 * upstream transfers; call it after http_server_stop. 0 or E_INTERNAL. */
int streams_start(void);
void streams_stop(void);
/* Tests: how long a handler waits for a partition's response headers before answering 504
 * (default 10000 ms) and how often idle JSON streams get a newline so that departed clients
 * are noticed (default 5000 ms). 0 keeps a value. */
void streams_tune(long header_wait_ms, long sweep_ms);
/* Streams the partition's response to reply without buffering it (watch, log -f): the loop
 * reads from the partition and feeds the client's connection; the partition is read no faster
 * than the client drains. Waits (bounded) for the partition's response headers: a 200 becomes
 * a stream, anything else is relayed whole. Answers reply in every case. */
void upstream_stream(struct partition *p, const struct upstream_req *rq, struct http_reply *reply);
/* upstream_stream for a watch of tenant (not merged): when the partition ends it while the client
 * is still there, the registry is asked (every MOVE_BRIDGE_POLL_MS, for MOVE_BRIDGE_WAIT_MS)
 * whether the tenant moved off that partition; if its record names another partition with
 * moved.from the one that ended, the same watch is opened there from moved.to_rev and its events
 * go on in the same response (move_watch_path), again after a later move. Otherwise, or when the
 * watch reached the timeoutSeconds it asked for, the client's stream ends as with
 * upstream_stream. A refusal by the new partition ends the stream with an ERROR event carrying
 * its Status. JSON watches only (a protobuf watch ends as before). reg must outlive the stream
 * loop (streams_stop). */
void upstream_tenant_watch(struct partition *p, const struct upstream_req *rq, struct registry *reg,
			   const char *tenant, struct http_reply *reply);
struct merge_state;
/* A watch merged over n partitions: ps[i] is watched at paths[i] (path with query, each with its
 * own resourceVersion). Every event line is rewritten by merge_event with ps[i]->id; the first
 * partition to end (or an ERROR event) ends the merged watch. m is taken (freed by the stream).
 * ps and paths stay the caller's. Answers reply in every case. */
void upstream_merged_watch(struct partition **ps, char **paths, size_t n, const struct upstream_req *rq,
			   struct merge_state *m, struct http_reply *reply);
/* A copy of content type ct that lives as long as the process (at most 64 distinct ones;
 * others and NULL give "application/json"). */
const char *ctype_intern(const char *ct);
/* Streams currently open (client side not yet finished), upstream transfers open, and the
 * descriptor budget for streams (for /metrics and tests). */
long upstream_streams_open(void);
long upstream_legs_open(void);
long upstream_stream_fd_budget(void);

/* --- OpenAPI documents merged across partitions (openapi.c) --------------------------------- */
enum oapi_doc { OAPI_NONE, OAPI_V2, OAPI_V3_INDEX, OAPI_V3_GV };
/* Which document path names ("/openapi/v2", "/openapi/v3", with or without a trailing '/', or
 * "/openapi/v3/<key>" with oapi_key_ok(key): *ret_key then points at key in path). */
enum oapi_doc oapi_classify(const char *path, const char **ret_key);
/* A v3 index key the gateway serves and lists: "api/..." or "apis/...", '/'-separated segments
 * of letters, digits, '.', '-' and '_' (no empty, "." or ".." segment), at most 256 bytes. */
bool oapi_key_ok(const char *key);
/* Adds to dst what src (borrowed) has and dst lacks: paths, Swagger 2.0 definitions and
 * OpenAPI 3 components.schemas; dst's entries win, except that a schema src declares kinds of
 * (x-kubernetes-group-version-kind) gets them in dst too (src's whole schema when dst's declares
 * none). Members of the wrong JSON type are left alone. Pure. */
void oapi_merge(json_t *dst, const json_t *src);
/* The gateway's /openapi/v3 index ({"paths":{key:{"serverRelativeURL":...}}}, new) from n
 * partitions' indexes (borrowed, NULL allowed), first one's keys first: every key oapi_key_ok
 * accepts, its URL "/openapi/v3/<key>?hash=<h>", h combining (oapi_hash_combine) the hash= of
 * the URLs the partitions list for it, in order (a missing or malformed one counts as ""). Pure. */
json_t *oapi_index_merge(json_t *const *idx, size_t n);
/* Appends one hash for n >= 1 hashes: hashes[0] itself when n is 1, otherwise the upper-case hex
 * SHA-256 of the hashes each followed by '\n'. */
void oapi_hash_combine(const char *const *hashes, size_t n, struct buf *out);

/* How long a merged document is served without asking the resource managers after they last
 * confirmed their parts (conditional requests with their entity tags). The tenant partition's
 * part is asked for on every request, conditionally with the tag it last sent for that tenant
 * (a custom resource definition shows at once); merged documents are cached by what they were
 * built from, so tenants whose partition sends the same document share one entry. */
#define OAPI_FRESH_MS 5000
/* Merged documents cached (least recently used dropped first), and their bytes. */
#define OAPI_MAX_ENTRIES 1024
#define OAPI_MAX_BYTES (256u << 20)
struct oapi_fetcher {
	struct partition **tps, **rms; /* tenant partitions: the caller's tenant's first (the others are asked
					* in turn when it is down or does not answer); resource managers */
	size_t ntp, nrm;
	const char *tenant;            /* the caller's tenant (the partition's documents depend on it) */
	long fresh_ms;                 /* OAPI_FRESH_MS but in tests */
	/* GET path (no query) from p as JSON, with If-None-Match if_none_match (may be NULL):
	 * upstream_partition's contract. */
	int (*fetch)(void *ud, struct partition *p, const char *path, const char *if_none_match,
		     struct upstream_resp *ret);
	void *ud;
};
struct oapi_reply {
	int status;                /* 200, or 304 (no body) */
	const char *content_type;  /* static strings */
	const char *cache_control;
	char *etag;
	struct buf body;
};
void oapi_reply_release(struct oapi_reply *r);
/* The reply to a GET of an OpenAPI document (accept, if_none_match and the hash query parameter
 * may be NULL), from the cache or the partitions. A partition that does not answer is left out
 * (logged); with none answering, the last merged document is served if there is one. 0 with ret
 * filled, else E_NOT_FOUND (not a document path, or no partition has it), E_UNAVAILABLE (no
 * partition answered) or E_TIMEOUT (another request's fetch of it took too long). Any thread. */
int oapi_get(const struct oapi_fetcher *f, const char *path, const char *accept, const char *if_none_match,
	     const char *hash, struct oapi_reply *ret);
/* Drops every cached document (gateway_stop). */
void oapi_cache_clear(void);
/* Merged documents cached now (tests). */
size_t oapi_cache_entries(void);

/* --- discovery per tenant (disco.c) ---------------------------------------------------------- */
/* Adds to dst what src (borrowed) has and dst lacks: in the legacy form the resources of an
 * APIResourceList or the groups of an APIGroupList (by name), in the aggregated forms groups,
 * versions and resources (apidisc_merge). Other kinds and non-objects are left alone. Pure. */
void disco_merge(json_t *dst, const json_t *src, int form /* enum apidisc_form */);
#define DISCO_MAX_ENTRIES 1024      /* merged documents cached, least recently used dropped first */
#define DISCO_MAX_BYTES (64u << 20) /* and their bytes */
struct disco_fetcher {
	struct partition **tps;   /* the caller's tenant's partition first, then the others (asked in turn
				   * when it is down or does not answer: built-in kinds stay right) */
	struct partition **rms;   /* resource managers */
	size_t ntp, nrm;
	const char *tenant;       /* the caller's tenant (what the partition's answer depends on) */
	long fresh_ms;            /* a resource manager's document is not asked for again within this */
	/* GET path from p accepting form, with If-None-Match inm (may be NULL): upstream_partition's
	 * contract. */
	int (*fetch)(void *ud, struct partition *p, const char *path, int form, const char *inm,
		     struct upstream_resp *ret);
	void *ud;
};
struct disco_reply {
	int status;             /* err 0: 200 or 304 (no body); E_NOT_FOUND: the partition's code */
	struct buf body;
	char *etag;             /* of the merged document (quoted) */
	char *partition;        /* the tenant partition that answered, or NULL */
	bool other_form;        /* E_NOT_FOUND: a partition has no document in the form asked for */
};
void disco_reply_release(struct disco_reply *r);
/* The discovery document at path (no query) in form for f->tenant: the tenant's partition's,
 * asked conditionally with the entity tag it last sent for that tenant and document, with the
 * resource managers' merged in (disco_merge), from the cache when nothing changed. 0 with ret
 * filled (a 304 when if_none_match, may be NULL, holds the merged document's tag); E_NOT_FOUND
 * when the partition answered something else (ret->status, ret->partition: the caller relays
 * that partition's answer) or, with ret->other_form, when a partition has no document in form
 * (ask for the legacy form); E_UNAVAILABLE when no tenant partition answered. Any thread. */
int disco_get(const struct disco_fetcher *f, const char *path, int form, const char *if_none_match,
	      struct disco_reply *ret);
struct disco_stats {
	long tp_fetches, tp_not_modified, rm_fetches, hits, builds, evictions, fallbacks;
	size_t entries, bytes;
};
void disco_stats_get(struct disco_stats *ret);
/* Drops everything cached (gateway_stop, tests). */
void disco_cache_clear(void);

/* --- merged watches (merge.c): composite resourceVersion and event rewriting --------------- */
#define CRV_PREFIX "u1."
#define CRV_MAX_LEN 8192      /* characters of a composite resourceVersion */
#define CRV_MAX_PARTS 64      /* partitions named in one */
#define CRV_MAX_ID 253        /* characters of a partition id in one */
#define MERGE_LINE_MAX (16u << 20) /* bytes of one watch event line from a partition */

/* Partition id -> that partition's resourceVersion ("" = none yet), sorted by id. */
struct crv {
	size_t n;
	char **pid, **rv;
};
void crv_init(struct crv *c);
void crv_release(struct crv *c);
bool crv_is_composite(const char *s);      /* has the "u1." prefix */
bool crv_partition_rv_ok(const char *rv);  /* "" or up to 20 decimal digits */
/* Parses a composite resourceVersion. 0 with *ret filled (release it), or E_BAD_REQUEST with a
 * static message in *ret_msg. */
int crv_parse(const char *s, struct crv *ret, const char **ret_msg);
const char *crv_get(const struct crv *c, const char *pid); /* borrowed or NULL */
void crv_set(struct crv *c, const char *pid, const char *rv);
char *crv_encode(const struct crv *c);                      /* new string */

struct merge_state {
	struct crv rv;      /* the composite, updated by every event */
	bool annotate;      /* tenants: annotate objects / add a Partition column */
	bool columns_sent;  /* Table watches: column definitions went out once */
};
void merge_state_init(struct merge_state *m, bool annotate);
void merge_state_release(struct merge_state *m);
enum { MERGE_OK = 0, MERGE_SKIP = 1, MERGE_FINAL = 2 };
/* Rewrites one event line (without its newline) from partition pid: the object's (a Table's
 * and its rows') metadata.resourceVersion becomes the composite updated with the event's own.
 * Appends the event and a newline to out and returns MERGE_OK; MERGE_FINAL for an ERROR event
 * (appended as is: the merged watch ends with it); MERGE_SKIP for a blank line; E_BAD_REQUEST
 * (nothing appended) for a line that is not a watch event. */
int merge_event(struct merge_state *m, const char *pid, const char *line, size_t len, struct buf *out);
/* Splits data into lines, carrying a partial line in pending (capped at MERGE_LINE_MAX) and
 * rewriting each with merge_event into out. MERGE_OK, or MERGE_FINAL once the watch must end
 * (an ERROR event was appended: the partition's own, or one the gateway made for an
 * unparsable or oversized line); bytes after that are not consumed. */
int merge_lines(struct merge_state *m, const char *pid, struct buf *pending, const char *data, size_t len,
		struct buf *out);
/* Appends an ERROR watch event carrying a Status for err. */
void merge_error_event(int err, const char *msg, struct buf *out);

/* --- the daemon (gateway.c) ----------------------------------------------------------------- */
struct gw_options {
	const char *listen, *tls_cert, *tls_key;
	const char *etcd_servers, *etcd_prefix;
	const char *token_file, *signing_pub;
	const char *identity_key;  /* assert callers to partitions (X-Ursa-Identity) instead of forwarding tokens */
	const char *partition_ca, *partition_token_file;
	const char *audit_path;
	long long audit_max_mb;
	long long tenant_qps, tenant_burst;
	long long threads;
	long long workers;         /* processes serving --listen together (workers.c); 1: this one */
	long long resync_s, sweep_s, pending_grace_s;
	long long crd_mirror_s;    /* system CRDs copied to the other tenant partitions (reconcile.c) */
	long long move_hold_s;     /* a moving tenant's writes are held this long at most (0: passed on) */
};
struct opt;
extern const char gw_summary[];
/* Sets o to the defaults and returns the flag table over its fields (new array of *ret_n;
 * --log-level is the daemon skeleton's). */
struct opt *gw_options_flags(struct gw_options *o, int *ret_n);
/* -1 (message printed) when the parsed flags are out of range or incomplete. */
int gw_options_check(const struct gw_options *o);

struct gateway;
struct gateway *gateway_start(const struct gw_options *o, char **ret_err);
void gateway_stop(struct gateway *g);

/* --- worker processes (workers.c) --------------------------------------------------------- */
/* One worker: starts a whole gateway, writes one byte to ready_fd once it serves, returns its
 * exit status when told to stop. */
typedef int gw_serve_fn(const struct gw_options *o, int ready_fd);
/* The master of --workers N: forks N workers running serve, sends READY=1 when all of them
 * serve, restarts one that dies, passes SIGTERM and SIGINT on, and returns the exit status.
 * Call before any thread exists, with SIGINT and SIGTERM blocked (it blocks SIGCHLD). */
int gw_workers_run(const struct gw_options *o, gw_serve_fn *serve);

#endif
