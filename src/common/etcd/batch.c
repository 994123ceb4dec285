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
 * lone write, a fraction of the txns; under load batches form without it.
 *
 * Heartbeats can wait longer still. Keys under a lazy prefix (etcd_lazy_prefix_add: node
 * leases) wait up to lazy_linger_ms, counted from the oldest queued write, until lazy_batch
 * writes have gathered; any other write ends the wait at once, so a reservation or a binding
 * never waits behind a lease. At 250 renewals/s a 40 ms wait turns ~2.5 writes per txn into
 * ~8 (and a resource manager's etcd's CPU into a third); a writer blocks meanwhile, so
 * lazy_batch stays well under the API server's workers. */
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
	bool done;             /* rc and rev are final: its writer may go (under the lock) */
	bool lazy;             /* under a lazy prefix */
	pthread_cond_t cond;   /* its writer waits here: done, or its turn to commit */
	struct timespec since; /* queued at (CLOCK_MONOTONIC) */
	struct gc_op *next;
};

struct etcd_gc {
	pthread_mutex_t lock;
	pthread_cond_t wake;   /* a lingering committer: an urgent write came, or enough lazy ones */
	struct gc_op *head, *tail;
	size_t queued, urgent; /* ops in the queue; those not lazy */
	int committing;        /* txns in flight */
	long linger_ms, lazy_ms;
	size_t lazy_batch;
	char **lazy_prefixes; /* NULL-terminated; set before the first write */
	atomic_ullong txns, ops;
};

struct etcd_gc *etcd_gc_new(const struct etcd_options *o)
{
	struct etcd_gc *gc = xcalloc(1, sizeof(*gc));
	pthread_condattr_t ca;
	gc->linger_ms = o && o->write_linger_ms > 0 ? o->write_linger_ms : 0;
	gc->lazy_ms = o && o->lazy_linger_ms > 0 ? o->lazy_linger_ms : 0;
	gc->lazy_batch = o && o->lazy_batch ? o->lazy_batch : 8; /* 1: heartbeats never wait */
	if (gc->lazy_batch > GC_MAX_OPS)
		gc->lazy_batch = GC_MAX_OPS;
	gc->lazy_prefixes = xcalloc(1, sizeof(char *));
	pthread_mutex_init(&gc->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&gc->wake, &ca);
	pthread_condattr_destroy(&ca);
	return gc;
}

void etcd_gc_free(struct etcd_gc *gc)
{
	if (!gc)
		return;
	for (char **p = gc->lazy_prefixes; *p; p++)
		free(*p);
	free(gc->lazy_prefixes);
	pthread_mutex_destroy(&gc->lock);
	pthread_cond_destroy(&gc->wake);
	free(gc);
}

void etcd_lazy_prefix_add(struct etcd *e, const char *prefix)
{
	struct etcd_gc *gc = e->gc;
	size_t n = 0;
	while (gc->lazy_prefixes[n])
		n++;
	gc->lazy_prefixes = xrealloc(gc->lazy_prefixes, (n + 2) * sizeof(char *));
	gc->lazy_prefixes[n] = xstrdup(prefix);
	gc->lazy_prefixes[n + 1] = NULL;
}

static bool is_lazy(const struct etcd_gc *gc, const char *key)
{
	if (!gc->lazy_ms)
		return false;
	for (char **p = gc->lazy_prefixes; *p; p++)
		if (strncmp(key, *p, strlen(*p)) == 0)
			return true;
	return false;
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
	}
	return left;
}

/* Commits ops (n > 0) until each has its rc (and rev). Runs without the queue lock; ops stay
 * the committer's to touch until it marks them done under the lock (settle_batch). */
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
				ops[i]->rc = rc;
			buf_release(&resp);
			return;
		}
		if (t.succeeded) {
			for (size_t i = 0; i < n; i++)
				ops[i]->rc = 0, ops[i]->rev = t.revision;
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
		gc->queued--;
		if (!op->lazy)
			gc->urgent--;
		if (gc->tail == op)
			gc->tail = prev;
		ops[n++] = op;
		bytes += sz;
	}
	return n;
}

/* at + ms, on the condition variables' clock. */
static struct timespec after(struct timespec at, long ms)
{
	at.tv_nsec += ms % 1000 * 1000000L;
	at.tv_sec += ms / 1000 + at.tv_nsec / 1000000000L;
	at.tv_nsec %= 1000000000L;
	return at;
}

/* Whether the queue is all heartbeats, too few to send yet. Lock held. */
static bool lazy_wait(const struct etcd_gc *gc)
{
	return gc->lazy_ms && gc->queued && !gc->urgent && gc->queued < gc->lazy_batch;
}

/* The committer, lock held (released while it waits): a lone write waits linger_ms for
 * company; a queue of heartbeats waits until lazy_ms after the oldest was queued, or until
 * lazy_batch of them or an urgent write came. */
static void linger(struct etcd_gc *gc)
{
	struct timespec until;
	if (lazy_wait(gc)) {
		until = after(gc->head->since, gc->lazy_ms);
		while (lazy_wait(gc) && pthread_cond_timedwait(&gc->wake, &gc->lock, &until) == 0)
			;
	} else if (gc->linger_ms && gc->head == gc->tail) {
		clock_gettime(CLOCK_MONOTONIC, &until);
		until = after(until, gc->linger_ms);
		while (pthread_cond_timedwait(&gc->wake, &gc->lock, &until) == 0)
			;
	}
}

/* The writers of a committed batch go, each woken alone; then the writer first in the queue, if
 * a txn may start, becomes the next committer. Lock held. (A broadcast to every writer would
 * wake each queued one at every txn's end only to wait again: at 8 concurrent creates, futex
 * traffic of ~20 µs of CPU per write.) */
static void settle_batch(struct etcd_gc *gc, struct gc_op **batch, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		batch[i]->done = true;
		pthread_cond_signal(&batch[i]->cond);
	}
	if (gc->head && gc->committing < GC_MAX_INFLIGHT)
		pthread_cond_signal(&gc->head->cond);
}

int etcd_gc_put(struct etcd *e, const char *key, const char *value, size_t len, int64_t lease, int64_t expect_rev,
		int64_t *ret_rev)
{
	struct etcd_gc *gc = e->gc;
	struct gc_op op = { .key = key, .value = value, .len = len, .lease = lease, .expect = expect_rev };
	struct gc_op *batch[GC_MAX_OPS], *work[GC_MAX_OPS]; /* commit reorders work (retries) */
	op.lazy = is_lazy(gc, key);
	if (gc->lazy_ms)
		clock_gettime(CLOCK_MONOTONIC, &op.since);
	pthread_cond_init(&op.cond, NULL);
	pthread_mutex_lock(&gc->lock);
	gc->queued++;
	if (!op.lazy)
		gc->urgent++;
	if (gc->committing && (!op.lazy || gc->queued >= gc->lazy_batch))
		pthread_cond_signal(&gc->wake); /* a lingering committer sends now */
	if (gc->tail)
		gc->tail->next = &op;
	else
		gc->head = &op;
	gc->tail = &op;
	while (!op.done) {
		if (gc->committing >= GC_MAX_INFLIGHT || !gc->head) {
			pthread_cond_wait(&op.cond, &gc->lock);
			continue;
		}
		gc->committing++;
		linger(gc);
		size_t n = take_batch(gc, batch);
		pthread_mutex_unlock(&gc->lock);
		memcpy(work, batch, n * sizeof(batch[0]));
		commit(e, work, n);
		pthread_mutex_lock(&gc->lock);
		gc->committing--;
		settle_batch(gc, batch, n);
	}
	pthread_mutex_unlock(&gc->lock);
	pthread_cond_destroy(&op.cond);
	if (op.rc == 0 && ret_rev)
		*ret_rev = op.rev;
	return op.rc;
}

void etcd_write_stats(struct etcd *e, unsigned long long *ret_txns, unsigned long long *ret_ops)
{
	*ret_txns = atomic_load(&e->gc->txns);
	*ret_ops = atomic_load(&e->gc->ops);
}
