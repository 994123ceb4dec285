/* Group commit of conditional puts.
 *
 * Every create (create_revision == 0) and update (mod_revision == N) goes through a queue.
 * A caller that finds fewer than GC_MAX_INFLIGHT commits in flight becomes a committer: it
 * sends everything queued as ONE txn (all compares, all puts, and a range per key in the failure branch),
 * while callers arriving meanwhile queue up for the next txn. So under concurrency many
 * writes share one raft entry and one fsync, and a lone write costs what it always did.
 *
 * A txn is all-or-nothing: if any compare fails, the failure branch's ranges tell which
 * ops failed (AlreadyExists, Conflict, NotFound); the others are sent again at once. */
#include "etcd_internal.h"
#include "ursa/errors.h"
#include "ursa/xalloc.h"
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#define GC_MAX_OPS 64                 /* etcd's --max-txn-ops default is 128 per branch */
#define GC_MAX_INFLIGHT 1          /* txns in flight at once, so etcd's pipeline stays busy */
#define GC_MAX_BYTES ((size_t)1 << 20) /* under --max-request-bytes (1.5 MiB) with base64 */

struct gc_op {
	const char *key;
	const char *value;
	size_t len;
	int64_t lease;
	int64_t expect; /* < 0: create */
	int rc;
	int64_t rev;
	bool done;
	struct gc_op *next;
};

struct etcd_gc {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct gc_op *head, *tail;
	int committing; /* txns in flight */
	atomic_ullong txns, ops;
};

struct etcd_gc *etcd_gc_new(void)
{
	struct etcd_gc *gc = xcalloc(1, sizeof(*gc));
	pthread_mutex_init(&gc->lock, NULL);
	pthread_cond_init(&gc->cond, NULL);
	return gc;
}

void etcd_gc_free(struct etcd_gc *gc)
{
	if (!gc)
		return;
	pthread_mutex_destroy(&gc->lock);
	pthread_cond_destroy(&gc->cond);
	free(gc);
}

static void add_b64(struct buf *b, const char *name, const void *data, size_t len)
{
	buf_addf(b, "\"%s\":\"", name);
	etcd_b64_encode(b, data, len);
	buf_addch(b, '"');
}

static void build_txn(struct gc_op **ops, size_t n, struct buf *b)
{
	buf_adds(b, "{\"compare\":[");
	for (size_t i = 0; i < n; i++) {
		buf_adds(b, i ? ",{" : "{");
		add_b64(b, "key", ops[i]->key, strlen(ops[i]->key));
		if (ops[i]->expect < 0)
			buf_adds(b, ",\"target\":\"CREATE\",\"result\":\"EQUAL\",\"create_revision\":\"0\"}");
		else
			buf_addf(b, ",\"target\":\"MOD\",\"result\":\"EQUAL\",\"mod_revision\":\"%" PRId64 "\"}",
				 ops[i]->expect);
	}
	buf_adds(b, "],\"success\":[");
	for (size_t i = 0; i < n; i++) {
		buf_adds(b, i ? ",{\"request_put\":{" : "{\"request_put\":{");
		add_b64(b, "key", ops[i]->key, strlen(ops[i]->key));
		buf_addch(b, ',');
		add_b64(b, "value", ops[i]->value ? ops[i]->value : "", ops[i]->value ? ops[i]->len : 0);
		if (ops[i]->lease)
			buf_addf(b, ",\"lease\":\"%" PRId64 "\"", ops[i]->lease);
		buf_adds(b, "}}");
	}
	buf_adds(b, "],\"failure\":[");
	for (size_t i = 0; i < n; i++) {
		buf_adds(b, i ? ",{\"request_range\":{" : "{\"request_range\":{");
		add_b64(b, "key", ops[i]->key, strlen(ops[i]->key));
		buf_adds(b, ",\"keys_only\":true}}");
	}
	buf_adds(b, "]}");
}

/* After a failed txn: settles the ops whose compare failed; returns how many remain. */
static size_t settle_failures(json_t *resp, struct gc_op **ops, size_t n)
{
	json_t *arr = json_object_get(resp, "responses");
	size_t left = 0;
	for (size_t i = 0; i < n; i++) {
		json_t *rr = json_object_get(json_array_get(arr, i), "response_range");
		struct etcd_range_result r = { 0 };
		if (!rr || etcd_parse_range(rr, &r) < 0) {
			ops[i]->rc = E_INTERNAL;
			ops[i]->done = true;
			continue;
		}
		bool exists = r.n > 0;
		int64_t mod = exists ? r.kvs[0].mod_rev : 0;
		etcd_range_result_release(&r);
		if (ops[i]->expect < 0 && exists)
			ops[i]->rc = E_ALREADY_EXISTS;
		else if (ops[i]->expect >= 0 && !exists)
			ops[i]->rc = E_NOT_FOUND;
		else if (ops[i]->expect >= 0 && mod != ops[i]->expect)
			ops[i]->rc = E_CONFLICT;
		else {
			ops[left++] = ops[i]; /* innocent: goes again */
			continue;
		}
		ops[i]->done = true;
	}
	return left;
}

/* Commits ops (n > 0) until each is settled. Runs without the queue lock. */
static void commit(struct etcd *e, struct gc_op **ops, size_t n)
{
	while (n) {
		struct buf b = BUF_INIT;
		json_t *resp = NULL;
		build_txn(ops, n, &b);
		atomic_fetch_add(&e->gc->txns, 1);
		atomic_fetch_add(&e->gc->ops, n);
		int rc = etcd_call(e, "/v3/kv/txn", &b, false, &resp);
		buf_release(&b);
		if (rc < 0 && n > 1 && rc == E_TOO_LARGE) {
			/* split: one value may be the culprit */
			size_t half = n / 2;
			commit(e, ops, half);
			commit(e, ops + half, n - half);
			return;
		}
		if (rc < 0) {
			for (size_t i = 0; i < n; i++)
				ops[i]->rc = rc, ops[i]->done = true;
			return;
		}
		int64_t rev = 0;
		etcd_header_rev(resp, &rev);
		if (etcd_json_bool(resp, "succeeded")) {
			for (size_t i = 0; i < n; i++)
				ops[i]->rc = 0, ops[i]->rev = rev, ops[i]->done = true;
			n = 0;
		} else {
			n = settle_failures(resp, ops, n);
		}
		json_decref(resp);
	}
}

static bool key_in(struct gc_op **ops, size_t n, const char *key)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(ops[i]->key, key) == 0)
			return true;
	return false;
}

/* Takes up to GC_MAX_OPS queued ops (distinct keys, bounded bytes). Lock held. */
static size_t take_batch(struct etcd_gc *gc, struct gc_op **ops)
{
	size_t n = 0, bytes = 0;
	struct gc_op **pp = &gc->head, *prev = NULL;
	while (*pp && n < GC_MAX_OPS) {
		struct gc_op *op = *pp;
		size_t sz = op->len + strlen(op->key);
		if ((n && bytes + sz > GC_MAX_BYTES) || key_in(ops, n, op->key)) {
			prev = op;
			pp = &op->next;
			continue;
		}
		*pp = op->next;
		if (gc->tail == op)
			gc->tail = prev;
		ops[n++] = op;
		bytes += sz;
	}
	return n;
}

int etcd_gc_put(struct etcd *e, const char *key, const char *value, size_t len, int64_t lease, int64_t expect_rev,
		int64_t *ret_rev)
{
	struct etcd_gc *gc = e->gc;
	struct gc_op op = { .key = key, .value = value, .len = len, .lease = lease, .expect = expect_rev };
	struct gc_op *batch[GC_MAX_OPS];
	pthread_mutex_lock(&gc->lock);
	if (gc->tail)
		gc->tail->next = &op;
	else
		gc->head = &op;
	gc->tail = &op;
	while (!op.done) {
		if (gc->committing >= GC_MAX_INFLIGHT || !gc->head) {
			pthread_cond_wait(&gc->cond, &gc->lock);
			continue;
		}
		gc->committing++;
		size_t n = take_batch(gc, batch);
		pthread_mutex_unlock(&gc->lock);
		commit(e, batch, n);
		pthread_mutex_lock(&gc->lock);
		gc->committing--;
		pthread_cond_broadcast(&gc->cond);
	}
	pthread_mutex_unlock(&gc->lock);
	if (op.rc == 0 && ret_rev)
		*ret_rev = op.rev;
	return op.rc;
}

void etcd_write_stats(struct etcd *e, unsigned long long *ret_txns, unsigned long long *ret_ops)
{
	*ret_txns = atomic_load(&e->gc->txns);
	*ret_ops = atomic_load(&e->gc->ops);
}
