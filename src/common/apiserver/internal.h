/* Internals of the generic API server, shared by its files. */
#ifndef URSA_APISERVER_INTERNAL_H
#define URSA_APISERVER_INTERNAL_H
#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include "ursa/api.h"
#include "ursa/apiserver.h"
#include "ursa/auth.h"
#include "ursa/buf.h"
#include "ursa/errors.h"
#include "ursa/etcd.h"
#include "ursa/http.h"
#include "ursa/path.h"
#include "ursa/revision.h"
#include "ursa/selector.h"
#include "ursa/strmap.h"
#include "ursa/wcache.h"

#define MAX_JSON_DEPTH 64
#define MAX_LIST_LIMIT 100000

/* Custom resources' keys: /registry/customresources/<group>/<plural>/<tenant>/... (crd.c; a
 * tenant's backup names them "customresources/<group>/<plural>", backup.c). */
#define CR_KEY_SEGMENT "customresources"

/* A resource as served: its table entry, its etcd prefix and its watch cache. The table's
 * entries live as long as the server; a custom resource's (crd.c: dynamic) are reference
 * counted: served_ref/served_unref (no-ops on the table's), one reference per request and watch
 * that uses it, so a CRD changed or deleted meanwhile frees it only when the last one ends. */
struct served {
	const struct api_resource *r;
	char *prefix;          /* "/registry/pods/"; a custom resource's: "/registry/<group>/<plural>/" */
	struct wcache *cache;
	unsigned index;        /* position in the table (metrics); custom resources: nres */
	_Atomic int64_t written_rev; /* this server's newest write of the kind (write.c) */
	bool dynamic;          /* a custom resource's entry (crd.c) */
	atomic_int refs;       /* dynamic entries only */
	void *crd_priv;        /* crd.c's */
};
struct served *served_ref(struct served *sv);
void served_unref(struct served *sv); /* NULL is fine */

/* follow.c: a follower keeps a view of some of the server's watch caches on a thread of its
 * own. event gets, for cache i, every object of its state (as WEV_ADDED), then every change
 * (ADDED, MODIFIED, DELETED; obj borrowed for the call), in order. Before a cache's state is
 * delivered again (its watch ended: a relist after a compaction, or a follower too far behind),
 * reset(ud, i) says so (forget what cache i brought, or mark it to sweep what the new state does
 * not bring again); listed (may be NULL) follows each delivery of a whole state, the first one
 * and every one after a reset. synced (may be NULL) is called once, after every cache's first
 * state. All callbacks run on the follower's thread. */
struct follower_ops {
	void (*event)(void *ud, size_t i, enum wev_type type, struct cobj *obj);
	void (*reset)(void *ud, size_t i);
	void (*listed)(void *ud, size_t i);
	void (*synced)(void *ud);
};
struct follower;
/* NULL if its thread cannot start. sv is copied. */
struct follower *follower_start(struct served *const *sv, size_t n, const struct follower_ops *ops, void *ud);
void follower_stop(struct follower *f); /* joins the thread; NULL is fine */
/* Waits (at most timeout_ms) until the follower has applied every write this server made to the
 * kinds it follows (struct served's written_rev). true when it has. Any thread. */
bool follower_catch_up(struct follower *f, int64_t timeout_ms);

/* The RBAC authorizer and the follower feeding it from the RBAC kinds' watch caches (authz.c). */
struct rbac;
struct rbac_attrs;
struct authz {
	struct apiserver *s;
	struct rbac *rbac;
	struct follower *follower;
	atomic_bool ready;
	bool resyncing[4]; /* per RBAC kind, on the follower's thread: a relist is being applied */
	/* aggregated ClusterRoles to write back: tenants marked by the follower, written by agg_thread */
	pthread_t agg_thread;
	pthread_mutex_t agg_mu;
	pthread_cond_t agg_cond;
	struct strmap agg_pending; /* tenant names (no values), under agg_mu */
	bool agg_stop;             /* under agg_mu */
};

struct apiserver {
	struct apiserver_options o;
	struct authz *authz; /* NULL: the server serves no RBAC kinds (fixed rules only) */
	struct etcd *etcd;
	struct authn *authn;
	struct tokcache *tokens; /* bearer tokens authn accepted lately (ursa/auth.h) */
	struct idkey *idkey;     /* gateways' assertions; NULL: not accepted */
	struct jwt_signer *sa_signer; /* service-account tokens; NULL: TokenRequest not served */
	struct http_server *http;
	struct served *res;
	size_t nres;
	atomic_bool etcd_ok;
	pthread_t ticker;
	atomic_bool stopping;
	struct metrics *metrics;
	char *region_token; /* read from o.region_token_file */
	char *kubelet_token; /* read from o.kubelet_token_file, else the region token's copy */
	struct quota *quota; /* quota.c: usage followed from the caches; NULL when no ResourceQuotas are served */
	struct svcip *svcip; /* svcip.c: services' cluster IPs followed from the caches; NULL when not served */
	struct crds *crds;   /* crd.c: NULL when the server serves no customresourcedefinitions */
	struct fairshare *fair; /* fairshare.c: NULL without fair queuing */
	struct moves *moves;    /* move.c: tenants moving; NULL when the server serves no tenants */
};

/* One API request being answered. */
struct req {
	struct apiserver *s;
	struct http_request *http;
	struct http_reply *reply;
	struct identity id;
	struct path_info path;
	struct served *res;
	const char *verb;  /* "get", "list", "watch", "create", "update", "patch", "delete", "deletecollection" */
	char *tenant;      /* effective tenant: "" for cluster scope, "all" for every tenant */
	char *ns;          /* NULL unless a namespace is addressed */
	const char *node;  /* a node credential's own node (identity_node_name): its only writes */
	bool table;        /* client asked for a meta.k8s.io Table */
	bool rv_precondition; /* the client named a resourceVersion: a stale one is a 409, no retry */
	/* Subresources answer with another representation (Scale, Status): when set, a successful
	 * update replies with present(q, stored object) (new reference) and success_code. */
	json_t *(*present)(struct req *q, const json_t *obj);
	int success_code;
	int replied_code;  /* the HTTP code of the reply, once sent (also without an HTTP request) */
	uint64_t quota_resv; /* quota.c: the reservation admit_quota left for this create (0: none) */
	uint32_t svcip_resv; /* svcip.c: the cluster IP admit_service reserved for this write (0: none) */
	int fv_mode;       /* fieldval.c: enum fv_mode of a create, update or patch (0: not validated) */
	json_t *fv_msgs;   /* fieldval.c: strict decoding messages met so far (owned; NULL: none) */
	const json_t *cr_pruned; /* fieldval.c: a custom resource it pruned already (write.c skips it) */
	json_t **capture;  /* no reply: a Status reply is kept here instead (new ref; a sub-request's) */
	bool move_slot;    /* move.c: a write counted in flight until move_write_leave */
	bool fair_seat;    /* fairshare.c: it holds seats of the fair queue until fairshare_done */
};

/* status.c: Status error replies. kind_plural/name fill details when not NULL. */
void reply_status(struct req *q, int err, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void reply_status_details(struct req *q, int err, const char *name, json_t *causes /* stolen */, const char *fmt,
			  ...) __attribute__((format(printf, 5, 6)));
void reply_status_raw(struct http_reply *rp, int err, const char *message);
/* Builds a Status object (new reference). */
json_t *status_object(int err, const char *message, const char *name, const char *kind, json_t *causes);
void reply_json(struct req *q, int code, const json_t *obj);
void reply_buf(struct req *q, int code, struct buf *body);
void reply_not_found(struct req *q, const char *name);
struct served *served_by_plural(struct apiserver *s, const char *plural);
/* server.c: false when q->node is set and obj (a node or lease being created, or a pod being
 * changed) is not that node's own; node_not_owner adds the 403's message about the object
 * named name to msg. */
bool node_owns(const struct req *q, const json_t *obj);
void node_not_owner(const struct req *q, const char *name, struct buf *msg);
void reply_node_not_owner(struct req *q, const char *name); /* the same as a 403 reply */
/* nodesecrets.c: true when q (a GET of the secret q->path.name by a credential naming its node)
 * reads a secret some pod bound to that node, in q's tenant and namespace, names; pod_uses_secret
 * is that test on one pod (image pull secrets, secret volumes and projections, env, envFrom). */
bool node_may_get_secret(const struct req *q);
bool pod_uses_secret(const json_t *pod, const char *name);
/* The same for configmaps (configMap volumes and projections, env configMapKeyRef, envFrom). */
bool node_may_get_configmap(const struct req *q);
/* A node may request a token (serviceaccounts/<name>/token) for a service account that a pod bound
 * to it runs as; handle_token_request then requires the token to be bound to such a pod. */
bool node_may_request_token(const struct req *q);
bool pod_uses_configmap(const json_t *pod, const char *name);

/* storage.c -------------------------------------------------------------------------------- */
/* The etcd key of an object: prefix + [tenant/][ns/]name. New string. */
char *store_key(const struct served *sv, const char *tenant, const char *ns, const char *name);
/* Prefix covering a collection (tenant and ns may be NULL for "all"). New string. */
char *store_collection_prefix(const struct served *sv, const char *tenant, const char *ns);
/* Reads one object; *ret is a new reference with metadata.resourceVersion set. */
int store_get(struct apiserver *s, const char *key, json_t **ret, int64_t *ret_rev);
/* Serializes obj (without resourceVersion) for etcd. */
void store_encode(json_t *obj, struct buf *out);
/* The same for a write about to be sent: drops obj's resourceVersion for good and leaves the
 * watch cache a write hint (wcache_expect), so obj must not change afterwards; a failed write
 * cancels it (wcache_expect_cancel). */
void store_encode_expect(struct served *sv, const char *key, json_t *obj, struct buf *out);
/* Sets obj's metadata.resourceVersion to etcd revision rev as clients see it (rv_show). */
void set_resource_version(json_t *obj, int64_t rev);
/* jsonenc.c: obj as compact JSON in insertion order, appended to out: the bytes json_dump_buf
 * gives, several times faster. */
void store_dump(const json_t *obj, struct buf *out);
/* jsondec.c: the object in s as json_loadb(JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL) parses it,
 * for the plain JSON it handles fast; NULL for anything else (parse with jansson then). */
json_t *json_parse_fast(const char *s, size_t n, int max_depth);

/* write.c: the shared update loop. mutate gets the current object (read-only: it must not
 * change cur nor return it or parts of it; build *ret_new from a copy) and returns 0 with
 * *ret_new (new reference), or an error with the reply already
 * sent through q. Retries on etcd conflicts when no resourceVersion precondition was given.
 * The first attempt reads the watch cache's copy (no etcd read): the write is conditional on
 * that copy's revision, so a stale copy ends in a conflict, and anything judged on it that
 * fails (mutate, immutables, validation, a resourceVersion mismatch) is judged again on a
 * fresh read from etcd before the client hears of it. mutate may thus run more than once and
 * its reply may be replaced. Dry runs read etcd. */
typedef int (*mutate_fn)(struct req *q, const json_t *cur, void *ud, json_t **ret_new);
enum update_mode { UPDATE_MAIN, UPDATE_STATUS, UPDATE_RAW };
int do_update(struct req *q, const char *name, enum update_mode mode, mutate_fn fn, void *ud, bool create_if_missing,
	      json_t *create_obj);
/* Creates obj (new object from a client) in q's tenant/namespace. Replies. */
void do_create(struct req *q, json_t *obj);
/* Prepares an object for storage on create; 0 or replies with an error. */
int prepare_new_object(struct req *q, json_t *obj);
/* Checks apiVersion/kind against the resource (filling them when absent). 0 or replies. */
int check_type_meta(struct req *q, json_t *obj, const char *want_kind, const char *want_api_version);
json_t *parse_body(struct req *q);
void api_version_of(const struct api_resource *r, struct buf *out);

/* write.c: a cached object's status.phase from the field values its kind keeps for field
 * selectors (namespaces and tenants keep it), without parsing its text; NULL if the kind keeps
 * none. lookup_phase: an object's phase (*ret_phase a new string, "" when it has none) from the
 * watch cache first, then etcd (the cache may lag a write): 0, E_NOT_FOUND or an etcd error. A
 * kind the server does not serve: 0 and nothing set. */
const char *cached_phase(const struct served *sv, const struct cobj *o);
int lookup_phase(struct apiserver *s, const char *plural, const char *tenant, const char *name, char **ret_phase);
/* write.c: keeps sv->written_rev the revision of this server's newest write of sv's kind (what
 * follower_catch_up waits for). */
void note_written(struct served *sv, int64_t rev);
/* write.c: 16 bytes as a lowercase 8-4-4-4-12 UUID (written by hand: a printf of 16 bytes cost
 * a create several µs). */
void uid_format(const unsigned char b[16], char out[37]);

/* A tenant moving between partitions (move.c): its phase on the source from the fence on, on
 * the target until activated, and the annotation naming the move on both. */
#define TENANT_MOVING_OUT "MovingOut"
#define TENANT_MOVING_IN "MovingIn"
#define MOVE_ANNOTATION "ursa.io/move"
#define RESTORE_ANNOTATION "ursa.io/restore" /* on a tenant being restored: the restore's id */
/* On a tenant that moved here, from its activation on: the source's resourceVersion of the move's
 * fence and this partition's at which the copy held that state (rv_resolve, revision.h). */
#define MOVED_FROM_ANNOTATION "ursa.io/moved-from-revision"
#define MOVED_TO_ANNOTATION "ursa.io/moved-to-revision"

/* move.c: a tenant's move between partitions (the protocol is in its header comment).
 * moves_start follows the tenants cache (after the caches; nothing when tenants are not
 * served), moves_stop before the caches. handle_tenant_move answers POST .../move, and
 * handle_tenant_changes (changes.c) GET .../changes, for an authorized operator. The write
 * fence: move_write_enter before a request runs: 0 to run it (then move_write_leave once it
 * ran; a no-op when nothing was counted), or -1 with the 429 sent. */
void moves_start(struct apiserver *s);
void moves_stop(struct apiserver *s);
void handle_tenant_move(struct req *q, const char *tenant);
void handle_tenant_changes(struct req *q, const char *tenant);
void handle_tenant_last_change(struct req *q, const char *tenant);
int move_write_enter(struct req *q);
void move_write_leave(struct req *q);
/* move.c: where a resourceVersion a client gave (shown) points here for q's tenant: rv_resolve,
 * with the tenant's last move here (its tenant object's annotations, read only for a value that
 * is not this partition's). RV_ELSEWHERE is answered as a value no longer held (410, 409). */
enum rv_where req_resolve_rv(struct req *q, int64_t shown, int64_t *ret_rev);
/* changes.c, pure: whether rel, an etcd key below the server's prefix ("pods/acme/default/web"),
 * is one of tenant's keys a backup reads: tenants/<tenant>; <plural>/<tenant>/<path> where
 * covered(ud, plural) (a backed-up kind the server serves); customresources/<g>/<p>/<tenant>/<path>.
 * Then *ret_resource (new string: "tenants", the plural, "customresources/<g>/<p>") and
 * *ret_path (into rel: the tenant's name for the tenant object, else [ns/]name). */
bool change_key_classify(const char *rel, const char *tenant, bool (*covered)(void *ud, const char *plural), void *ud,
			 char **ret_resource, const char **ret_path);

/* backup.c: tenant backup and restore (TENANT_BACKUP_PATH). serve_tenant_backup answers q when
 * its path is one of them (true), else returns false. The pure parts, tested on their own: */
bool serve_tenant_backup(struct req *q);
/* A backup page's continue token: the revision, the range it stopped in and the last key sent
 * there (base64url of {"rev","range","after"}, as a list's tokens are made). parse: 0 with
 * *ret_after a new string, or -1. */
void backup_token_format(int64_t rev, size_t range, const char *after, struct buf *out);
int backup_token_parse(const char *tok, int64_t *ret_rev, size_t *ret_range, char **ret_after);
/* Where and how restore_item writes items: from the tenant backed up, to the tenant restored;
 * restore_id salts the restored objects' new uids and marks the tenant object as being
 * restored (annotation ursa.io/restore, phase Restoring); scope_of gives a table kind's enum api_scope,
 * or -1 for a kind a restore does not write. */
struct restore_target {
	const char *from, *to, *restore_id;
	bool move; /* a move's copy (move.c): objects kept exactly as stored, delete items allowed */
	int (*scope_of)(void *ud, const char *resource);
	void *ud;
};
/* Checks one backup item ({"resource","path","object"}) and rewrites its object for t->to: 0
 * with *ret_rel (new string: the key below the etcd prefix, "pods/<to>/<ns>/<name>") and
 * *ret_obj (new reference); 1 when it is not restored (a pod its controller makes again); -1
 * with why appended to err. With t->move (from == to), the object is kept as stored but for
 * metadata.resourceVersion and selfLink (uids, owners, nodeName, status; no pod skipped), the
 * tenant object gets phase MovingIn and annotation ursa.io/move = restore_id, and an item may
 * be a delete ({"resource","path","deleted":true}, no object): 2 with *ret_rel only. */
int restore_item(const struct restore_target *t, const json_t *item, char **ret_rel, json_t **ret_obj,
		 struct buf *err);
/* A backup line, {"resource","path","object"} with value (an object's stored JSON text, put on
 * one line) appended to out; with value NULL a move's delete line {"resource","path",
 * "deleted":true}. false (nothing appended) when value is not an object's text. */
bool backup_line(struct buf *out, const char *resource, const char *path, const char *value, size_t len);
/* Whether a backup holds a kind's objects (a tenant's stored kinds but events, ephemeral and
 * metrics kinds). */
bool backup_covers(const struct api_resource *r);
/* The stored tenant object at key (new reference) and its mod revision: 0, E_NOT_FOUND, or an
 * etcd error. */
int tenant_read(struct apiserver *s, const char *key, json_t **ret, int64_t *ret_rev);
/* The uid a restore gives the object that had uid: a UUID from SHA-256(salt/tenant/uid) (salt:
 * the restore's id). */
void restore_map_uid(const char *salt, const char *tenant, const char *uid, char out[37]);

/* Verb handlers. */
void handle_get(struct req *q);
void handle_list(struct req *q);
void handle_watch(struct req *q);
void handle_create(struct req *q);
void handle_update(struct req *q);
void handle_patch(struct req *q);
void handle_delete(struct req *q);
void handle_deletecollection(struct req *q);
void handle_subresource(struct req *q);
/* Deletes name in q's scope honouring finalizers and pod grace; replies with the object. */
int delete_object(struct req *q, const char *name, bool reply);
/* Applies a PATCH body (parsed per its content type) to cur: 0 with *ret (new ref) or replies. */
struct patch_doc {
	const char *ctype;
	json_t *doc;
};
int patch_doc_parse(struct req *q, struct patch_doc *p);
int patch_doc_apply(struct req *q, const struct patch_doc *p, const json_t *cur, const char *kind, json_t **ret);

/* fieldval.c: server-side field validation (the fieldValidation parameter: Strict, Warn, the
 * default, or Ignore) of creates, updates and patches of a resource and its status and scale.
 * fieldval_begin reads the parameter (0, or -1 with Kubernetes' 422 sent); fieldval_finish sends
 * the warnings (one Warning header) and frees what begin and the others kept; both are called
 * around every HTTP request. fieldval_parse_json parses a body's JSON text: outside a validated
 * request as json_parse_limited (duplicate keys refused), inside it keeps the last of duplicate
 * keys and notes them (new reference, NULL with ret_err filled). fieldval_check prunes obj (of
 * the kind api_version/kind; no table: nothing pruned) of unknown fields and, under Strict with
 * anything noted, replies 400 (decode_prefix: "<Kind> in version ... cannot be handled as a
 * <Kind>: " before "strict decoding error: ...", as a create or update says it) and returns
 * E_BAD_REQUEST; else 0. fieldval_check_apply answers a server-side apply body that has unknown
 * fields as Kubernetes does (500, "field not declared in schema", whatever the mode). */
enum fv_mode { FV_NONE, FV_IGNORE, FV_WARN, FV_STRICT };
int fieldval_begin(struct req *q);
void fieldval_finish(struct req *q);
json_t *fieldval_parse_json(struct req *q, const char *body, size_t len, struct buf *ret_err);
int fieldval_check(struct req *q, json_t *obj, const char *api_version, const char *kind, bool decode_prefix);
int fieldval_check_apply(struct req *q, const json_t *doc, const char *api_version, const char *kind);
/* write.c: fieldval_check of a client's object of q's resource, with the decode prefix. */
int check_fields(struct req *q, json_t *obj);

/* Filters from query parameters: labelSelector, fieldSelector. 0 or replies 400. */
struct req_filter {
	struct label_selector *labels;
	struct field_selector *fields;
};
int parse_filter(struct req *q, struct req_filter *f);
/* The same from the two selectors' text (either may be NULL). */
int parse_filter_text(struct req *q, const char *label_selector, const char *field_selector, struct req_filter *f);
void req_filter_release(struct req_filter *f);
bool filter_matches_cobj(const struct served *sv, const struct req_filter *f, const struct cobj *o);
const char *cobj_field_value(const struct served *sv, const struct cobj *o, const char *label);

/* authz.c ------------------------------------------------------------------------------------
 * authz_start follows the RBAC caches when the server serves the four RBAC kinds (0, or -1 if
 * its thread cannot start); authz_stop ends it. authz_ready: the first state of every RBAC kind
 * has been read (always true without RBAC). */
int authz_start(struct apiserver *s);
void authz_stop(struct apiserver *s);
bool authz_ready(struct apiserver *s);
/* Decides a request that passed scope_request's fixed rules, for callers RBAC decides (not
 * system masters, SREs or nodes). 0, or -1 with a 403 (or 503 before the authorizer is ready)
 * sent. */
int authorize(struct req *q);
/* Decides for any identity (reviews): the fixed rules, then RBAC. */
bool authz_decide(struct apiserver *s, const struct identity *id, const char *tenant, const struct rbac_attrs *at,
		  struct buf *ret_reason);

/* admission.c: the admission chain, run on every create (old NULL) and every update of the
 * main resource, after validation and before the write: RBAC's escalation check, quotas, ...
 * Each step may change obj (defaults, e.g. a LimitRange's) or refuse it. Requests without an
 * HTTP request (apiserver_create, the server's own writes) are not admitted. 0, or -1 with
 * the reply sent. */
int admit(struct req *q, json_t *obj, const json_t *old);
/* authz.c: creating or changing a Role or ClusterRole needs every rule it grants (or the
 * escalate verb), a binding needs the rules of its role (or the bind verb on it). */
int admit_rbac(struct req *q, json_t *obj, const json_t *old);
/* quota.c: a LimitRange's defaults and bounds for a pod being created (403 past a bound);
 * ResourceQuotas and the tenant quota for an object being created (403 with Kubernetes'
 * message). admit_quota leaves a reservation (q->quota_resv) that the watch takes over when the
 * object arrives; a create that fails after admission gives it back with quota_release. */
int admit_limitrange(struct req *q, json_t *obj, const json_t *old);
int admit_quota(struct req *q, json_t *obj, const json_t *old);
void quota_release(struct req *q, const json_t *obj);
/* svcip.c: a Service's cluster IP from its tenant's range (and the NodePort/LoadBalancer refusal
 * for tenants); the address is reserved (q->svcip_resv) until the watch brings the service, and
 * svcip_release gives it back when the write fails after admission. svcip_start follows the
 * services and networks caches (NULL when services are not served); started after the caches,
 * stopped before them. */
int admit_service(struct req *q, json_t *obj, const json_t *old);
void svcip_release(struct req *q, const json_t *obj);
struct svcip;
struct svcip *svcip_start(struct apiserver *s);
void svcip_stop(struct svcip *a);
/* quota.c: follows the caches and writes quota status; NULL when resourcequotas are not served.
 * Started after the caches, stopped before them. */
struct quota *quota_start(struct apiserver *s);
void quota_stop(struct quota *qs);

/* tokens.c (service accounts): a caller authenticated as a service account
 * (system:serviceaccount:<ns>:<name>) whose token's service account, or the pod or secret it
 * was bound to, no longer exists (uid compared) is refused: 0, or E_UNAUTHORIZED. Others: 0. */
int sa_token_check(struct req *q);
/* tokens.c: authentication.k8s.io/v1 TokenReview and SelfSubjectReview (ephemeral creates):
 * obj is the request body; reply sent. */
void review_token(struct req *q, json_t *obj);
void review_self_subject(struct req *q, json_t *obj);
/* tokens.c: POST serviceaccounts/<name>/token (TokenRequest). Replies. */
void handle_token_request(struct req *q);
/* reviews.c: authorization.k8s.io/v1 access reviews. */
void review_access(struct req *q, json_t *obj);
void review_rules(struct req *q, json_t *obj);

/* reviews.c: create-only resources that are never stored (api_resource.ephemeral): access
 * reviews, token reviews, self subject reviews. Replies. */
void handle_ephemeral(struct req *q);
/* podmetrics.c: metrics.k8s.io PodMetrics (tenant partition) and NodeMetrics (resource manager)
 * from the nodes' kubelets (/stats/usage); get and list, other verbs 405. */
void handle_metrics(struct req *q);
/* logproxy.c: a node object from the region's resource managers (new ref or NULL), and its
 * kubelet's base URL (new string or NULL). */
json_t *find_node(struct apiserver *s, const char *node);
char *kubelet_url(const json_t *node);
/* A review's answer: obj (the request's body) with status (stolen) set, 201. */
void reply_review(struct req *q, json_t *obj, json_t *status);

/* logproxy.c: streams a bound pod's container log from its kubelet. Replies. */
void proxy_pod_log(struct req *q, const json_t *pod);
/* streamproxy.c: pods/exec, pods/attach, pods/portforward upgrades tunnelled to the pod's
 * kubelet. Reply (the 101, or a Status). stream_kubelet_path: the kubelet's path (new string;
 * container NULL for portforward; query appended as is). */
void handle_pod_exec(struct req *q);
void handle_pod_attach(struct req *q);
void handle_pod_portforward(struct req *q);
char *stream_kubelet_path(const char *sub, const char *tenant, const char *ns, const char *pod, const char *container,
			  const char *query);

/* table.c */
bool wants_table(struct req *q);
/* Table with rows for objs (parsed objects), columnDefinitions when with_columns. New ref. */
json_t *table_new(const struct api_resource *r, json_t **objs, size_t n, bool with_columns);
/* Appends a list page as a Table's JSON text (the same document table_new and table_set_list_meta
 * make, with column definitions), built from the objects' cached text. */
void table_list_text(const struct api_resource *r, struct cobj *const *objs, size_t n, int64_t rv, const char *cont,
		     long long remaining, struct buf *out);
void table_set_list_meta(json_t *table, int64_t rv, const char *cont, long long remaining);

/* crd.c: custom resources. crd_start follows the server's customresourcedefinitions cache (a
 * no-op returning 0 when the table has none) and keeps, per tenant, the served entries its
 * established CRDs make (one per served version; the versions share one watch cache, over the
 * tenant's keys "/registry/<group>/<plural>/<tenant>/..."); it also writes each CRD's status
 * (acceptedNames, NamesAccepted and Established conditions; a name clash within the tenant and
 * group is reported there and not served, the older CRD winning). The system tenant's CRDs
 * serve every tenant that has no CRD of the same name. crd_stop ends it (before the caches).
 * crd_find: the entry for (group, version, plural) as tenant sees it (path tenant, else the
 * caller's), new reference or NULL; waits a little for this server's own recent CRD writes to
 * be applied first. crd_view_get: every custom resource entry tenant sees (new references, in a
 * stable order: group, then version as the CRD lists it, then plural), for discovery and
 * OpenAPI; *ret_gen changes whenever that set (or a definition in it) changes. */
int crd_start(struct apiserver *s);
void crd_stop(struct apiserver *s);
struct served *crd_find(struct apiserver *s, const char *tenant, const char *group, const char *version,
			const char *plural);
struct crd_view {
	struct served **sv;
	size_t n;
	uint64_t gen;
};
void crd_view_get(struct apiserver *s, const char *tenant, struct crd_view *ret);
void crd_view_release(struct crd_view *v);
/* Serving one: crd_rewrites is true when sv serves another version than the stored one (conversion
 * None: only apiVersion differs); crd_set_api_version sets obj's apiVersion to sv's version, or
 * to the storage version (storage true) before a write; crd_object_text appends stored text as sv
 * serves it; crd_table_cells appends a Table row's cells (Name, the printer columns or Age).
 * admit_crd (admission step): a CRD whose names clash with another CRD's of its tenant or with a
 * built-in kind's is refused (422). */
bool crd_rewrites(const struct served *sv);
/* Prunes a custom resource of r (r->crd_version has a schema) of what its schema does not
 * describe, and its metadata of what ObjectMeta lacks; the paths ("spec.x", "metadata.y") go to
 * ret_paths (may be NULL). */
void crd_prune(const struct api_resource *r, json_t *obj, json_t *ret_paths);
void crd_set_api_version(const struct served *sv, json_t *obj, bool storage);
void crd_object_text(const struct served *sv, const char *json, size_t len, struct buf *out);
void crd_table_cells(const struct api_resource *r, const json_t *obj, time_t now, json_t *cells);
int admit_crd(struct req *q, json_t *obj, const json_t *old);
/* write.c: replies 422 with the causes in errs (consumed). */
void reply_invalid(struct req *q, const json_t *obj, struct field_errors *errs);

/* discovery.c */
bool serve_nonresource(struct apiserver *s, struct http_request *hr, struct http_reply *rp);
void serve_discovery(struct req *q);
/* Kubernetes' version priority, as a qsort comparison (< 0: a is listed before b): v2 < v1 <
 * v2beta1 < v1beta2 < v1beta1 < v1alpha1 < other names (alphabetically). */
int discovery_version_cmp(const char *a, const char *b);

/* openapi.c: /openapi/v2 (JSON, or gnostic protobuf by Accept) and /openapi/v3[/<gv>] for the
 * kinds s serves as tenant (the authenticated caller's) sees them: the table's kinds, built once
 * per set of kinds and kept for the life of the process, plus the tenant's custom resources
 * (crd_view_get), whose documents are cached by the view's generation; ETag and If-None-Match
 * (304). Replies 404 for other paths. */
void serve_openapi(struct apiserver *s, const char *tenant, struct http_request *hr, struct http_reply *rp);
/* The documents themselves (new references), from the type tables (ursa/schema.h):
 * Swagger 2.0, and an object mapping "api/v1", "apis/<g>/<v>" to OpenAPI 3.0 documents. */
json_t *openapi_v2_document(const struct api_resource *const *res, size_t n);
json_t *openapi_v3_documents(const struct api_resource *const *res, size_t n);
/* openapi_pb.c: appends doc (Swagger 2.0 JSON) as gnostic's openapi_v2.Document message. */
void openapi_v2_protobuf(const json_t *doc, struct buf *out);
/* True when an Accept header prefers the v2 protobuf document to JSON. */
bool openapi_wants_protobuf(const char *accept);

/* watch.c */
/* fairshare.c: fair queuing of tenants' requests (apiserver_options.tenant_seats). */
void fairshare_start(struct apiserver *s);
void fairshare_stop(struct apiserver *s); /* refuses every waiting request */
void fairshare_free(struct apiserver *s);
/* Before the request runs: 0 to run it now (then fairshare_done once it ran); 1 when it was
 * parked (its reply deferred: touch nothing, the handler runs again when its turn comes) or
 * refused (reply filled with 429). */
int fairshare_admit(struct req *q);
void fairshare_done(struct req *q);
/* A watch: -1 (refuse it, 429) when its tenant holds its limit; else 0, and if it counts against
 * the limit, *ret_counted is the tenant (new string) for fairshare_watch_close, else NULL. */
int fairshare_watch_open(struct req *q, char **ret_counted);
void fairshare_watch_close(struct apiserver *s, const char *tenant);
void fairshare_render(struct apiserver *s, struct buf *out);

void watch_ticker_start(struct apiserver *s);
void watch_ticker_stop(struct apiserver *s);
/* Bookmarks carry a watcher to the cache's revision, and every PROGRESS_EVERY_MS a cache more
 * than PROGRESS_LAG_REVS behind etcd writes its progress marker (watch.c keep_progress), so a
 * client's resourceVersion is at most about BOOKMARK_EVERY_MS + PROGRESS_EVERY_MS of writes old,
 * quiet kind or not: within the history a restarted server loads (history_back_revs), so its
 * watches resume instead of answering 410 and making every informer relist. */
#define BOOKMARK_EVERY_MS 15000
#define PROGRESS_EVERY_MS 5000
#define PROGRESS_LAG_REVS 500
#define DEFAULT_TIMEOUT_MIN_S 1800 /* a watch without timeoutSeconds: 30 to 60 minutes */
#define IDLE_NEWLINE_MS 10000
/* A watch stream's timers, which the ticker thread checks every 250 ms, waking the stream when
 * its deadline, its next bookmark or an idle newline is due (a suspended connection is not read:
 * a client that left is noticed only when a write fails). */
struct wtick {
	struct http_stream *hs;
	int64_t deadline_ms, next_bookmark_ms;
	bool bookmarks;
	/* a plain watch's server and tenant (set before wtick_add; NULL: none), and the revision
	 * watch_end_tenant ended it at (0: none) */
	const struct apiserver *s;
	const char *tenant;
	atomic_llong end_rev;
	atomic_llong quiet_since_ms; /* the last write (read by the ticker) */
	struct wtick *prev, *next;
};
void wtick_init(struct wtick *t, int64_t timeout_s, bool bookmarks);
void wtick_add(struct wtick *t);    /* once t->hs is set */
void wtick_remove(struct wtick *t); /* in the stream's done */
/* The end of a stream's fill: out grew from start (or gets the idle newline when due): 1 (and t
 * is no longer quiet), else -1 when ended, else 0. */
int wtick_filled(struct wtick *t, struct buf *out, size_t start, bool ended, int64_t now);
/* Ends every plain watch of tenant held by s as a timeout does, once its events up to rev are
 * sent (none after it is: move.c, a tenant dropped, with every cache at rev or past it).
 * Multiplexed watches are left alone. */
void watch_end_tenant(struct apiserver *s, const char *tenant, int64_t rev);
/* timeoutSeconds asked (0: none) -> the stream's timeout. */
int64_t watch_timeout_s(long long asked);
/* A watcher for q (scoped and authorized; f parsed) from resourceVersion rv (-1: now; a client's,
 * req_resolve_rv: another partition's not known current is E_GONE), calling
 * notify(ud) when events are queued: 0, or E_GONE (rv older than the cache holds) or another
 * error, which watch_open_status turns into the Status to send as an ERROR event (new ref). */
int watch_open(struct req *q, const struct req_filter *f, long long rv, void (*notify)(void *ud), void *ud,
	       struct watcher **ret_w);
json_t *watch_open_status(int rc, long long rv, const struct served *sv);
/* The 410's Status for a watch from rv when the server is at cur (both as clients see them). */
json_t *watch_expired_status(int64_t rv, int64_t cur);
/* Event lines, with `"id":id` first when id is not NULL (a multiplexed watch's). */
void watch_event_line(const struct served *sv, const char *id, enum wev_type type, const struct cobj *o,
		      struct buf *out);
void watch_bookmark_line(const struct served *sv, const char *id, int64_t rv, struct buf *out);
void watch_error_line(const char *id, const json_t *status, struct buf *out);

/* watchmux.c: POST /ursa/v1/watches, many watches on one connection (see docs/architecture.md,
 * "Multiplexed watches"). q is authenticated; the reply is a stream or a Status. */
void handle_watch_mux(struct req *q);
/* One watch of the request's body, and the body's parser (pure): 0, or -1 with a message in err
 * (nothing returned). Release with wm_specs_free. */
struct wm_spec {
	char *id, *path, *label_selector, *field_selector;
	long long rv; /* -1: from now */
	bool bookmarks;
};
int wm_parse(const char *body, size_t len, struct wm_spec **ret, size_t *ret_n, long long *ret_timeout,
	     struct buf *err);
void wm_specs_free(struct wm_spec *v, size_t n);
/* server.c: resolves a request made inside another (a multiplexed watch): path to a resource,
 * its scope and the caller's right to verb it, as on_http does. q->s, http, id and capture are
 * set, reply is NULL. 0, or -1 with the refusal's Status in *q->capture. Release with
 * req_sub_release (q->id stays the caller's). */
int req_sub_begin(struct req *q, const char *path, const char *verb);
void req_sub_release(struct req *q);

/* metrics.c */
struct metrics *metrics_new(size_t nres);
void metrics_free(struct metrics *m);
void metrics_request(struct metrics *m, const char *verb, unsigned res_index, int code, int64_t usec);
void metrics_etcd(struct metrics *m, const char *op, int64_t usec);
void metrics_render(struct apiserver *s, struct buf *out);

#endif
