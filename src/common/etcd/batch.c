/* Group commit of conditional puts.
 *
 * Every create (create_revision == 0) and update (mod_revision == N) goes through a queue.
 * A caller that finds fewer than GC_MAX_INFLIGHT commits in flight becomes a committer: it
 * sends everything queued as ONE txn (all compares, all puts, and a range per key in the failure branch),
 * while callers arriving meanwhile queue up for the next txn. So under concurrency many
 * writes share one raft entry and one fsync, and a lone write costs what it always did.
 *
 * A txn is all-or-nothing: if any compare fails, the failure branch's ranges tell which
 * ops failed (AlreadyExists, Conflict, NotFound); the others are sent again at once.
 *
 * Writes that come one at a time (a resource manager's node lease renewals: hundreds a second,
 * rarely two at once) would each be a txn of their own, and etcd's cost per txn is several
 * times its cost per op. With a linger (etcd_options.write_linger_ms) a committer whose write is
 * alone in the queue waits that long for company before it sends: a few milliseconds more per
 * lone write, a fraction of the txns; under load batches form without it. */
#include "etcd/etcd_internal.h"
#include "etcd/pb.h"
#include "ursa/errors.h"
#include "ursa/xalloc.h"
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define GC_MAX_OPS 64                 /* etcd's --max-txn-ops default is 128 per branch */
#define GC_MAX_INFLIGHT 1          /* txns in flight at once, so etcd's pipeline stays busy */
#define GC_MAX_BYTES ((size_t)1 << 20) /* under --max-request-bytes (1.5 MiB) with the keys twice more */

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
	long linger_ms;
	atomic_ullong txns, ops;
};

struct etcd_gc *etcd_gc_new(long linger_ms)
{
	struct etcd_gc *gc = xcalloc(1, sizeof(*gc));
	gc->linger_ms = linger_ms > 0 ? linger_ms : 0;
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

/* One TxnRequest: a compare per op, a put per op on success, a keys-only range per op on
 * failure (so a failed txn tells which compares failed). */
static void build_txn(struct gc_op **ops, size_t n, struct buf *b)
{
	struct buf m = BUF_INIT, ro = BUF_INIT;

	for (size_t i = 0; i < n; i++) {
		buf_reset(&m);
		if (ops[i]->expect < 0)
			etcd_pb_compare(&m, ops[i]->key, ETCD_CMP_CREATE, ETCD_CMP_EQUAL, 0);
		else
			etcd_pb_compare(&m, ops[i]->key, ETCD_CMP_MOD, ETCD_CMP_EQUAL, ops[i]->expect);
		etcd_pb_put_msg(b, 1, &m);
	}
	for (size_t i = 0; i < n; i++) {
		buf_reset(&m);
		buf_reset(&ro);
		etcd_pb_put_request(&m, ops[i]->key, ops[i]->value, ops[i]->len, ops[i]->lease);
		etcd_pb_put_msg(&ro, ETCD_OP_PUT, &m);
		etcd_pb_put_msg(b, 2, &ro);
	}
	for (size_t i = 0; i < n; i++) {
		buf_reset(&m);
		buf_reset(&ro);
		etcd_pb_range_request(&m, ops[i]->key, NULL, 0, 0, true, false);
		etcd_pb_put_msg(&ro, ETCD_OP_RANGE, &m);
		etcd_pb_put_msg(b, 3, &ro);
	}
	buf_release(&m);
	buf_release(&ro);
}

/* After a failed txn: settles the ops whose compare failed; returns how many remain. */
static size_t settle_failures(const struct etcd_pb_txn_result *t, struct gc_op **ops, size_t n)
{
	size_t left = 0;
	for (size_t i = 0; i < n; i++) {
		struct etcd_range_result r = { 0 };
		if (i >= t->n || t->ops[i].kind != ETCD_OP_RANGE ||
		    etcd_pb_decode_range(t->ops[i].data, t->ops[i].len, &r) < 0) {
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
		struct buf b = BUF_INIT, resp = BUF_INIT;
		struct etcd_pb_txn_result t = { 0 };
		build_txn(ops, n, &b);
		atomic_fetch_add(&e->gc->txns, 1);
		atomic_fetch_add(&e->gc->ops, n);
		int rc = etcd_grpc_call(e, "/etcdserverpb.KV/Txn", &b, false, &resp);
		buf_release(&b);
		if (rc == 0 && etcd_pb_decode_txn(resp.ptr, resp.len, &t) < 0)
			rc = E_INTERNAL;
		if (rc < 0 && n > 1 && rc == E_TOO_LARGE) {
			/* split: one value may be the culprit */
			size_t half = n / 2;
			buf_release(&resp);
			commit(e, ops, half);
			commit(e, ops + half, n - half);
			return;
		}
		if (rc < 0) {
			for (size_t i = 0; i < n; i++)
				ops[i]->rc = rc, ops[i]->done = true;
			buf_release(&resp);
			return;
		}
		if (t.succeeded) {
			for (size_t i = 0; i < n; i++)
				ops[i]->rc = 0, ops[i]->rev = t.revision, ops[i]->done = true;
			n = 0;
		} else {
			n = settle_failures(&t, ops, n);
		}
		etcd_pb_txn_release(&t);
		buf_release(&resp);
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

/* The committer, lock held: lets writers queue up for linger_ms (the lock is released while
 * it waits). */
static void linger(struct etcd_gc *gc)
{
	struct timespec until;
	clock_gettime(CLOCK_REALTIME, &until); /* the condition variable's clock */
	until.tv_nsec += gc->linger_ms * 1000000L;
	until.tv_sec += until.tv_nsec / 1000000000L;
	until.tv_nsec %= 1000000000L;
	while (pthread_cond_timedwait(&gc->cond, &gc->lock, &until) == 0)
		;
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
		if (gc->linger_ms && gc->head == gc->tail)
			linger(gc); /* alone: wait for company (a queue that has it needs no wait) */
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
