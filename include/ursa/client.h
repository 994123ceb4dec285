/* The client library every Ursa component uses to talk to partitions' API servers:
 * a REST client, informers (list + watch + local store), work queues and leader election.
 * All of it is thread-safe unless stated. */
#ifndef URSA_CLIENT_H
#define URSA_CLIENT_H
#include <jansson.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include "ursa/buf.h"

/* REST ------------------------------------------------------------------------------------- */
struct rest_config {
	const char *servers;    /* comma-separated base URLs of one partition ("https://127.0.0.1:7101") */
	const char *token;      /* bearer token, or NULL */
	const char *ca_file;    /* PEM CA bundle for https, or NULL (system default) */
	const char *user_agent; /* default "ursa" */
	long timeout_ms;        /* per non-streaming request; default 10000 */
};
struct rest_client;
/* Copies the config. Returns NULL if servers is empty. */
struct rest_client *rest_new(const struct rest_config *cfg);
void rest_free(struct rest_client *c);
/* Loads a kubeconfig file (current context: server, token, certificate-authority-data or
 * certificate-authority) into a new client. NULL with *ret_err (new string) on failure. */
struct rest_client *rest_from_kubeconfig(const char *path, char **ret_err);

/* The credentials of a kubeconfig's current context (token or client certificate, cluster CA,
 * insecure-skip-tls-verify), to reach any server of the region with them: a kubelet's RM
 * kubeconfig serves for every tenant partition found in the registry. */
struct rest_creds;
struct rest_creds *rest_creds_from_kubeconfig(const char *path, char **ret_err);
/* The kubeconfig's own server URL (borrowed). */
const char *rest_creds_server(const struct rest_creds *kc);
/* A client for servers (comma-separated) with these credentials; user_agent may be NULL. */
struct rest_client *rest_new_with_creds(const struct rest_creds *kc, const char *servers, const char *user_agent);
void rest_creds_free(struct rest_creds *kc);

/* One request. path includes the query ("/api/v1/namespaces/default/pods?limit=1"). body may
 * be NULL; content_type NULL means application/json. Returns the HTTP status (>= 100), or
 * E_UNAVAILABLE when no server answered (fails over between servers), or E_TIMEOUT.
 * *ret_body (may be NULL) gets the parsed JSON response (new reference) or NULL if the
 * response was not JSON. */
int rest_do(struct rest_client *c, const char *method, const char *path, const json_t *body,
	    const char *content_type, json_t **ret_body);
/* Same with a raw body and raw response (appended to ret_raw, which may be NULL). */
int rest_do_raw(struct rest_client *c, const char *method, const char *path, const char *body, size_t len,
		const char *content_type, struct buf *ret_raw);
/* What a failed request says, appended to out: the message of the Status in body (rest_do_raw's
 * ret_raw), else "HTTP <status>", else the error's reason (status an E_* code). */
void rest_error_message(int status, const struct buf *body, struct buf *out);
/* A streaming GET (watch, log follow). on_data gets bytes as they arrive and returns 0 to go
 * on or non-zero to stop. Returns the HTTP status when the stream ends (or E_UNAVAILABLE),
 * or E_TIMEOUT... The stream also ends within ~200 ms once *stop becomes true. */
int rest_stream(struct rest_client *c, const char *path, int (*on_data)(void *ud, const char *data, size_t len),
		void *ud, const atomic_bool *stop);
/* The same as a POST of a JSON body (a multiplexed watch: POST /ursa/v1/watches). */
int rest_stream_post(struct rest_client *c, const char *path, const char *body, size_t len,
		     int (*on_data)(void *ud, const char *data, size_t len), void *ud, const atomic_bool *stop);

/* Asynchronous requests: one thread of their own drives every request submitted, on one
 * libcurl multi handle with at most max_conns connections (0: 64; further requests wait for
 * one), so callers never wait on the network and no thread is held per request in flight. */
struct rest_async;
/* status as rest_do_raw's; body is the raw response, borrowed for the call (buf_cstr). Runs
 * on the requests' thread: it must not block (it may submit more). */
typedef void (*rest_done_fn)(void *ud, int status, const struct buf *body);
struct rest_async *rest_async_start(struct rest_client *c, unsigned max_conns);
/* Takes body (malloc'd or NULL) over. content_type NULL means application/json. done is always
 * called exactly once, on the requests' thread or in rest_async_stop. */
void rest_async_submit(struct rest_async *a, const char *method, const char *path, char *body, size_t len,
		       const char *content_type, rest_done_fn done, void *ud);
/* Stops the thread; requests not yet answered end with E_UNAVAILABLE. Frees a (not its client). */
void rest_async_stop(struct rest_async *a);

/* Informer ---------------------------------------------------------------------------------- */
/* Keeps a local copy of a collection: lists (in pages), then watches from the list's
 * resourceVersion, resumes after a dropped stream from the last resourceVersion seen, and
 * relists after 410 Expired (delivering the differences as add/update/delete). Runs on a
 * thread of its own; handlers run on that thread, one at a time. Objects handed to
 * handlers are borrowed for the call; the store's objects are immutable (share with
 * json_incref, never modify). Keys are "tenant/namespace/name" (empty parts kept, e.g.
 * "system//node-1" for cluster-scoped objects with tenant system). */
struct informer_handlers {
	void (*on_add)(void *ud, const json_t *obj);
	void (*on_update)(void *ud, const json_t *old_obj, const json_t *new_obj);
	void (*on_delete)(void *ud, const json_t *obj);
	void (*on_synced)(void *ud);       /* after the first complete list (may be NULL) */
	/* Optional: true for a watch event (its raw line) about nothing this consumer keeps; the
	 * informer drops it unparsed. A dropped event changes neither the store nor the
	 * resourceVersion a watch resumes from (bookmarks move that on), and an object a list put
	 * in the store stays there until the next relist. */
	bool (*skip_event)(void *ud, const char *line, size_t len);
};
struct informer;
/* path: the collection ("/api/v1/tenants/all/pods"); query: extra parameters without '?'
 * ("fieldSelector=spec.nodeName%3Dn1") or NULL. */
struct informer *informer_start(struct rest_client *c, const char *path, const char *query,
				const struct informer_handlers *h, void *ud);
/* As informer_start, but the watch is one multiplexed watch (POST /ursa/v1/watches,
 * docs/architecture.md) holding a watch of path for each field selector in fields (such as
 * "spec.nodeName=n-1"; 1 to 10,000 of them), each resumed from its own last resourceVersion: the
 * server sends what the selectors match (a hollow process's nodes' pods), not all that query
 * lists. The list is path?query, as informer_start's. */
struct informer *informer_start_mux(struct rest_client *c, const char *path, const char *query,
				    const char *const *fields, size_t nfields, const struct informer_handlers *h,
				    void *ud);
void informer_stop(struct informer *inf); /* joins; no handler runs after it returns */
bool informer_synced(struct informer *inf);
/* Object by key: new reference or NULL. */
json_t *informer_get(struct informer *inf, const char *key);
/* Calls fn for every object (under the store's read lock: fn must not call back into inf). */
void informer_foreach(struct informer *inf, void (*fn)(void *ud, const json_t *obj), void *ud);
size_t informer_size(struct informer *inf);

/* Secondary indexes, kept by every informer over its store (the listers of the controllers):
 * by namespace, value "tenant/namespace" (obj_index_ns_value; "tenant/" for cluster-scoped
 * objects); by controller, value the uid of the ownerReference with controller: true; orphans,
 * value "tenant/namespace" of the objects without a controller reference. A lookup costs the
 * bucket's size, not the store's. */
enum obj_index_kind { OBJ_INDEX_NAMESPACE, OBJ_INDEX_CONTROLLER, OBJ_INDEX_ORPHANS, OBJ_INDEX__N };
/* Calls fn for every object whose kind index value is value (under the store's read lock: fn
 * must not call back into inf). */
void informer_foreach_indexed(struct informer *inf, enum obj_index_kind kind, const char *value,
			      void (*fn)(void *ud, const json_t *obj), void *ud);
/* The same for OBJ_INDEX_NAMESPACE and tenant/ns. */
void informer_foreach_ns(struct informer *inf, const char *tenant, const char *ns,
			 void (*fn)(void *ud, const json_t *obj), void *ud);
/* The index itself (pure; not thread-safe: the informer locks it). Objects are borrowed: the
 * caller keeps each alive while it is indexed. */
struct obj_index;
struct obj_index *obj_index_new(void);
void obj_index_free(struct obj_index *x); /* NULL-safe */
/* key (the store key) moves from old_obj's buckets to new_obj's; old_obj NULL: added; new_obj
 * NULL: removed. */
void obj_index_update(struct obj_index *x, const char *key, const json_t *old_obj, const json_t *new_obj);
void obj_index_foreach(const struct obj_index *x, enum obj_index_kind kind, const char *value,
		       void (*fn)(void *ud, const json_t *obj), void *ud);
size_t obj_index_count(const struct obj_index *x, enum obj_index_kind kind, const char *value);
size_t obj_index_buckets(const struct obj_index *x, enum obj_index_kind kind); /* non-empty buckets */
/* obj's value in an index (new string), NULL when obj is not in that index. */
char *obj_index_value(enum obj_index_kind kind, const json_t *obj);
char *obj_index_ns_value(const char *tenant, const char *ns); /* "tenant/ns", new string */
/* The store key of an object. New string. */
char *object_key(const json_t *obj);

/* Work queue -------------------------------------------------------------------------------- */
/* A queue of string keys, de-duplicated while waiting, never handed to two workers at once,
 * with per-key exponential back-off for retries. Fair between tenants: keys are
 * "tenant/..." and the queue round-robins over tenants, so one tenant's burst does not
 * delay another's single item by more than one item per busy tenant. */
struct workqueue;
struct workqueue *wq_new(void);
void wq_free(struct workqueue *q);
void wq_add(struct workqueue *q, const char *key);
void wq_add_after(struct workqueue *q, const char *key, int64_t delay_ms);
void wq_add_rate_limited(struct workqueue *q, const char *key); /* 5 ms doubling to 60 s */
void wq_forget(struct workqueue *q, const char *key);           /* resets back-off */
/* Blocks for the next key (new string; caller frees and calls wq_done). NULL after wq_shutdown. */
char *wq_get(struct workqueue *q);
void wq_done(struct workqueue *q, const char *key);
void wq_shutdown(struct workqueue *q);
size_t wq_len(struct workqueue *q);

/* Leader election ---------------------------------------------------------------------------- */
/* Campaigns for a coordination.k8s.io/v1 Lease (holderIdentity, leaseDurationSeconds,
 * acquireTime, renewTime, leaseTransitions) with optimistic concurrency: acquires when the
 * lease is free or expired, renews every retry period, and gives up leadership (calling
 * on_stopped) if it cannot renew within the renew deadline. */
struct leader_config {
	const char *lease_path;  /* "/apis/coordination.k8s.io/v1/tenants/system/namespaces/kube-system/leases/ursa-scheduler" */
	const char *identity;    /* unique per process, e.g. hostname_pid */
	int lease_duration_s;    /* default 15 */
	int renew_deadline_s;    /* default 10 */
	int retry_period_s;      /* default 2 */
	void (*on_started)(void *ud);
	void (*on_stopped)(void *ud);
	void *ud;
};
struct leader_elector;
struct leader_elector *leader_start(struct rest_client *c, const struct leader_config *cfg);
bool leader_is_leader(struct leader_elector *le);
void leader_stop(struct leader_elector *le); /* releases the lease if held */

#endif
