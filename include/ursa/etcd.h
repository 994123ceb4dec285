/* Client for etcd v3 (3.4 and later) over libcurl: the KV calls (get, range, put, create,
 * update, delete, compact, the group commit's txns) and watches are gRPC over HTTP/2; leases and
 * the health check use etcd's JSON gateway (/v3/...). See docs/etcd-client.md.
 *
 * Thread-safe: any thread may call any function; each thread uses its own keep-alive
 * connection. endpoints is a comma-separated list of http(s)://host:port URLs of one etcd
 * cluster; a request that fails to connect (or gets 503/Unavailable) is retried on the next
 * member, and the member that answered is preferred afterwards.
 * Errors: E_UNAVAILABLE when no member answers, E_NOT_FOUND, E_ALREADY_EXISTS, E_CONFLICT,
 * E_GONE (revision compacted), E_TOO_LARGE (value over etcd's request limit), E_INTERNAL,
 * E_TIMEOUT (a write whose outcome is unknown because the member stopped answering mid-request,
 * or a read at a future revision), E_BAD_REQUEST (invalid arguments).
 * Writes are only retried on another member when they cannot have been applied (connection
 * refused, nothing sent, or etcd answered Unavailable); reads are retried on any failure. */
#ifndef URSA_ETCD_H
#define URSA_ETCD_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct etcd;

struct etcd_kv {
	char *key;      /* owned, NUL-terminated */
	char *value;    /* owned, NUL-terminated; value_len bytes (may contain NUL) */
	size_t value_len;
	int64_t create_rev;
	int64_t mod_rev;
	int64_t version;
	int64_t lease;
};
void etcd_kv_release(struct etcd_kv *kv);

struct etcd_range_result {
	struct etcd_kv *kvs; /* owned array */
	size_t n;
	int64_t count;   /* total keys in the range (etcd's count, ignores limit) */
	bool more;
	int64_t revision; /* header revision the read was served at */
};
void etcd_range_result_release(struct etcd_range_result *r);

struct etcd_options {
	long timeout_ms;         /* per request; default 5000 */
	long connect_timeout_ms; /* default 1000 */
	long write_linger_ms;    /* group commit waits this long for more writes (default 0) */
	long lazy_linger_ms;     /* writes under a lazy prefix wait up to this long for company (0: no) */
	size_t lazy_batch;       /* ... or until this many are queued (0: 8; 1: they never wait) */
};

/* Returns NULL if endpoints is empty or malformed. opts may be NULL. */
struct etcd *etcd_new(const char *endpoints, const struct etcd_options *opts);
void etcd_free(struct etcd *e);

/* Writes of keys under prefix are heartbeats: they may wait etcd_options.lazy_linger_ms for
 * company, and any other write ends the wait. Call before the first write. */
void etcd_lazy_prefix_add(struct etcd *e, const char *prefix);

/* The end of the range covering every key with this prefix (last byte + 1); new heap string.
 * Returns "" when no such end exists (prefix "" or all 0xff bytes): as a range_end, "" means
 * "to the end of the keyspace" (etcd's "\0"). */
char *etcd_prefix_end(const char *prefix);

/* Single key. E_NOT_FOUND if absent. ret_kv filled on success. */
int etcd_get(struct etcd *e, const char *key, struct etcd_kv *ret_kv);
/* Keys in [key, range_end); range_end NULL means the key alone, "" means every key >= key.
 * key "" with a range_end starts at the smallest key. revision 0 = latest;
 * limit 0 = no limit. keys_only drops values. E_GONE when revision is compacted. */
int etcd_range(struct etcd *e, const char *key, const char *range_end, int64_t revision, int64_t limit,
	       bool keys_only, struct etcd_range_result *ret);
/* Current revision of the cluster (linearizable). */
int etcd_current_revision(struct etcd *e, int64_t *ret_rev);

/* Unconditional put. ret_rev (may be NULL) gets the new revision. */
int etcd_put(struct etcd *e, const char *key, const char *value, size_t len, int64_t lease, int64_t *ret_rev);
/* Puts every key of kvs (key, value, value_len; lease 0) in one txn, unconditionally: all or
 * none are written. n at most ETCD_TXN_MAX_OPS (etcd's default --max-txn-ops) and no key twice
 * (E_BAD_REQUEST otherwise). ret_rev (may be NULL) gets the txn's revision. */
#define ETCD_TXN_MAX_OPS 128
int etcd_put_all(struct etcd *e, const struct etcd_kv *kvs, size_t n, int64_t *ret_rev);
/* Puts and deletes in one txn, applied in order, unconditionally: all or none. A delete
 * (del true; value ignored) of an absent key is no error. The same limits as etcd_put_all (at
 * most ETCD_TXN_MAX_OPS, no key twice: E_BAD_REQUEST). ret_rev (may be NULL) gets the txn's
 * revision (the current one when nothing changed). */
struct etcd_op {
	const char *key;
	const char *value;
	size_t value_len;
	bool del;
};
int etcd_write_all(struct etcd *e, const struct etcd_op *ops, size_t n, int64_t *ret_rev);
/* Put only if the key does not exist: E_ALREADY_EXISTS otherwise. */
int etcd_create(struct etcd *e, const char *key, const char *value, size_t len, int64_t lease, int64_t *ret_rev);
/* Put only if the key's mod_revision equals expect_rev: E_CONFLICT if it differs (ret_current,
 * if not NULL, then holds the current kv; the caller releases it), E_NOT_FOUND if the key is gone.
 * expect_rev 0 means any revision, but the key must exist (E_NOT_FOUND otherwise). */
int etcd_update(struct etcd *e, const char *key, const char *value, size_t len, int64_t expect_rev,
		int64_t *ret_rev, struct etcd_kv *ret_current);
/* Delete the key; expect_rev 0 = unconditionally, else only at that mod_revision (E_CONFLICT).
 * E_NOT_FOUND if absent. ret_prev (may be NULL) receives the deleted kv, ret_rev the revision. */
int etcd_delete(struct etcd *e, const char *key, int64_t expect_rev, int64_t *ret_rev, struct etcd_kv *ret_prev);
/* Compacts history up to rev. */
int etcd_compact(struct etcd *e, int64_t rev);
/* Leases (for heartbeats and elections). */
int etcd_lease_grant(struct etcd *e, int64_t ttl_s, int64_t *ret_id);
int etcd_lease_keepalive(struct etcd *e, int64_t id, int64_t *ret_ttl); /* E_NOT_FOUND if expired */
int etcd_lease_revoke(struct etcd *e, int64_t id);
/* Conditional writes (creates, updates) are group-committed: concurrent ones share a txn.
 * Totals since start of txns sent and of writes they carried. */
void etcd_write_stats(struct etcd *e, unsigned long long *ret_txns, unsigned long long *ret_ops);
/* True if some member answers /health with health true (JSON gateway). */
bool etcd_healthy(struct etcd *e);

/* Watch ------------------------------------------------------------------------------------ */
enum etcd_event_type { ETCD_EV_PUT, ETCD_EV_DELETE };
struct etcd_event {
	enum etcd_event_type type;
	struct etcd_kv kv;      /* for DELETE only key and mod_rev are set */
	struct etcd_kv prev_kv; /* set when prev_kv was requested and etcd sent it (key NULL otherwise) */
};

struct etcd_watch_handlers {
	/* Events in revision order. The array and its contents are only valid during the call. */
	void (*on_events)(void *ud, const struct etcd_event *ev, size_t n);
	/* start revision (or the resume point) was compacted; the watch has stopped itself. The
	 * owner re-lists and starts a new watch from compact_rev or later. */
	void (*on_compacted)(void *ud, int64_t compact_rev);
	/* Connection state changes: connected=false while no member answers (the watch keeps
	 * retrying every second, resuming from the last revision seen + 1). connected=true once the
	 * watch is established (also the first time: events after that call are not missed).
	 * May be NULL. */
	void (*on_state)(void *ud, bool connected);
};

struct etcd_watch;
/* Watches [key, range_end) from start_rev (0 = from now) on a thread of its own.
 * Handlers run on that thread. */
struct etcd_watch *etcd_watch_start(struct etcd *e, const char *key, const char *range_end, int64_t start_rev,
				    bool prev_kv, const struct etcd_watch_handlers *h, void *ud);
/* Stops and joins (promptly, even while blocked on the network); no handler runs after it
 * returns. Must not be called from a handler of the same watch. NULL is fine. Call it before
 * etcd_free of the client the watch uses. */
void etcd_watch_stop(struct etcd_watch *w);

#endif
