/* Work queue: de-duplicated keys, one worker per key at a time, delayed re-adds from a
 * min-heap, per-key exponential back-off, round-robin between tenants. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "client/client_internal.h"
#include "ursa/timeutil.h"
#include "ursa/xalloc.h"

#define WQ_BACKOFF_BASE_MS 5
#define WQ_BACKOFF_MAX_MS 60000

/* The FIFO of one tenant's ready keys; on the ring while it has any. */
struct tenant_q {
	char *tenant;
	char **keys;
	size_t head, n, alloc;
	struct tenant_q *ring_next;
};

struct delayed {
	int64_t due_ms;
	char *key;
};

struct workqueue {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct strmap dirty;      /* waiting to be handed out (or re-queued once done) */
	struct strmap processing; /* handed out, not yet done */
	struct strmap tenants;    /* tenant → struct tenant_q */
	struct tenant_q *ring_head, *ring_tail;
	size_t ready;             /* keys in tenant queues */
	struct delayed *heap;
	size_t nheap, heap_alloc;
	struct strmap waiting;    /* key in the heap → earliest due (num) */
	struct strmap failures;   /* key → retries (num) */
	bool shutdown;
};

struct workqueue *wq_new(void)
{
	struct workqueue *q = xcalloc(1, sizeof(*q));
	pthread_condattr_t ca;
	pthread_mutex_init(&q->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&q->cond, &ca);
	pthread_condattr_destroy(&ca);
	strmap_init(&q->dirty);
	strmap_init(&q->processing);
	strmap_init(&q->tenants);
	strmap_init(&q->waiting);
	strmap_init(&q->failures);
	return q;
}

static void tenant_q_free(void *p)
{
	struct tenant_q *t = p;
	for (size_t i = 0; i < t->n; i++)
		free(t->keys[(t->head + i) % t->alloc]);
	free(t->keys);
	free(t->tenant);
	free(t);
}

void wq_free(struct workqueue *q)
{
	if (!q)
		return;
	strmap_release(&q->tenants, tenant_q_free);
	strmap_release(&q->dirty, NULL);
	strmap_release(&q->processing, NULL);
	strmap_release(&q->waiting, NULL);
	strmap_release(&q->failures, NULL);
	for (size_t i = 0; i < q->nheap; i++)
		free(q->heap[i].key);
	free(q->heap);
	pthread_cond_destroy(&q->cond);
	pthread_mutex_destroy(&q->lock);
	free(q);
}

/* Ready queues ------------------------------------------------------------------------------------ */

static void tq_push(struct tenant_q *t, char *key)
{
	if (t->n == t->alloc) {
		size_t na = t->alloc ? t->alloc * 2 : 8;
		char **k = xmalloc(na * sizeof(*k));
		for (size_t i = 0; i < t->n; i++)
			k[i] = t->keys[(t->head + i) % t->alloc];
		free(t->keys);
		t->keys = k;
		t->alloc = na;
		t->head = 0;
	}
	t->keys[(t->head + t->n) % t->alloc] = key;
	t->n++;
}

static char *tq_pop(struct tenant_q *t)
{
	char *k = t->keys[t->head];
	t->head = (t->head + 1) % t->alloc;
	t->n--;
	return k;
}

static void ring_append(struct workqueue *q, struct tenant_q *t)
{
	t->ring_next = NULL;
	if (q->ring_tail)
		q->ring_tail->ring_next = t;
	else
		q->ring_head = t;
	q->ring_tail = t;
}

/* Appends key to its tenant's queue (tenant = the key up to the first '/'). Lock held. */
static void enqueue(struct workqueue *q, const char *key)
{
	const char *slash = strchr(key, '/');
	char *tenant = slash ? xstrndup(key, (size_t)(slash - key)) : xstrdup(key);
	bool created;
	struct strmap_ent *e = strmap_put(&q->tenants, tenant, &created);
	struct tenant_q *t = e->val;

	if (created) {
		t = xcalloc(1, sizeof(*t));
		t->tenant = tenant;
		e->val = t;
	} else {
		free(tenant);
	}
	if (!t->n)
		ring_append(q, t);
	tq_push(t, xstrdup(key));
	q->ready++;
	pthread_cond_signal(&q->cond);
}

/* Takes the next key round-robin over tenants. Lock held; q->ready > 0. */
static char *dequeue(struct workqueue *q)
{
	struct tenant_q *t = q->ring_head;
	char *key = tq_pop(t);

	q->ring_head = t->ring_next;
	if (!q->ring_head)
		q->ring_tail = NULL;
	q->ready--;
	if (t->n) {
		ring_append(q, t);
	} else {
		void *v;
		strmap_del(&q->tenants, t->tenant, &v);
		tenant_q_free(v);
	}
	return key;
}

static void add_locked(struct workqueue *q, const char *key)
{
	bool created;
	if (q->shutdown)
		return;
	strmap_put(&q->dirty, key, &created);
	if (!created)
		return;
	if (strmap_get(&q->processing, key))
		return; /* wq_done re-queues it */
	enqueue(q, key);
}

void wq_add(struct workqueue *q, const char *key)
{
	pthread_mutex_lock(&q->lock);
	add_locked(q, key);
	pthread_mutex_unlock(&q->lock);
}

/* Delayed keys ------------------------------------------------------------------------------------ */

static bool heap_less(const struct delayed *a, const struct delayed *b)
{
	return a->due_ms < b->due_ms;
}

static void heap_swap(struct delayed *a, struct delayed *b)
{
	struct delayed t = *a;
	*a = *b;
	*b = t;
}

static void heap_push(struct workqueue *q, int64_t due, const char *key)
{
	if (q->nheap == q->heap_alloc) {
		q->heap_alloc = q->heap_alloc ? q->heap_alloc * 2 : 16;
		q->heap = xrealloc(q->heap, q->heap_alloc * sizeof(*q->heap));
	}
	size_t i = q->nheap++;
	q->heap[i] = (struct delayed){ due, xstrdup(key) };
	while (i && heap_less(&q->heap[i], &q->heap[(i - 1) / 2])) {
		heap_swap(&q->heap[i], &q->heap[(i - 1) / 2]);
		i = (i - 1) / 2;
	}
}

static struct delayed heap_pop(struct workqueue *q)
{
	struct delayed top = q->heap[0];
	size_t i = 0;
	q->heap[0] = q->heap[--q->nheap];
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, m = i;
		if (l < q->nheap && heap_less(&q->heap[l], &q->heap[m]))
			m = l;
		if (r < q->nheap && heap_less(&q->heap[r], &q->heap[m]))
			m = r;
		if (m == i)
			break;
		heap_swap(&q->heap[i], &q->heap[m]);
		i = m;
	}
	return top;
}

/* Moves due keys into the ready queues. Entries superseded by an earlier due time of the
 * same key are dropped. Lock held. */
static void promote_due(struct workqueue *q, int64_t now)
{
	while (q->nheap && q->heap[0].due_ms <= now) {
		struct delayed d = heap_pop(q);
		struct strmap_ent *w = strmap_get(&q->waiting, d.key);
		if (w && w->num == d.due_ms) {
			strmap_del(&q->waiting, d.key, NULL);
			add_locked(q, d.key);
		}
		free(d.key);
	}
}

static void add_after_locked(struct workqueue *q, const char *key, int64_t delay_ms)
{
	bool created;
	int64_t due;
	struct strmap_ent *w;

	if (q->shutdown)
		return;
	if (delay_ms <= 0) {
		add_locked(q, key);
		return;
	}
	due = mono_ms() + delay_ms;
	w = strmap_put(&q->waiting, key, &created);
	if (!created && w->num <= due)
		return;
	w->num = due;
	heap_push(q, due, key);
	pthread_cond_broadcast(&q->cond); /* a waiter may need a shorter timeout */
}

void wq_add_after(struct workqueue *q, const char *key, int64_t delay_ms)
{
	pthread_mutex_lock(&q->lock);
	add_after_locked(q, key, delay_ms);
	pthread_mutex_unlock(&q->lock);
}

void wq_add_rate_limited(struct workqueue *q, const char *key)
{
	pthread_mutex_lock(&q->lock);
	struct strmap_ent *f = strmap_put(&q->failures, key, NULL);
	int64_t delay = WQ_BACKOFF_BASE_MS;
	for (int64_t i = 0; i < f->num && delay < WQ_BACKOFF_MAX_MS; i++)
		delay *= 2;
	if (delay > WQ_BACKOFF_MAX_MS)
		delay = WQ_BACKOFF_MAX_MS;
	if (f->num < 64)
		f->num++;
	add_after_locked(q, key, delay);
	pthread_mutex_unlock(&q->lock);
}

void wq_forget(struct workqueue *q, const char *key)
{
	pthread_mutex_lock(&q->lock);
	strmap_del(&q->failures, key, NULL);
	pthread_mutex_unlock(&q->lock);
}

/* Workers ------------------------------------------------------------------------------------------ */

static void wait_until(struct workqueue *q, int64_t due_mono_ms)
{
	struct timespec ts;
	int64_t wait = due_mono_ms - mono_ms();
	mono_deadline(&ts, wait < 1 ? 1 : wait);
	pthread_cond_timedwait(&q->cond, &q->lock, &ts);
}

char *wq_get(struct workqueue *q)
{
	char *key = NULL;

	pthread_mutex_lock(&q->lock);
	while (!q->shutdown) {
		promote_due(q, mono_ms());
		if (q->ready)
			break;
		if (q->nheap)
			wait_until(q, q->heap[0].due_ms);
		else
			pthread_cond_wait(&q->cond, &q->lock);
	}
	if (!q->shutdown) {
		key = dequeue(q);
		strmap_del(&q->dirty, key, NULL);
		strmap_put(&q->processing, key, NULL);
	}
	pthread_mutex_unlock(&q->lock);
	return key;
}

void wq_done(struct workqueue *q, const char *key)
{
	pthread_mutex_lock(&q->lock);
	if (strmap_del(&q->processing, key, NULL) && strmap_get(&q->dirty, key) && !q->shutdown)
		enqueue(q, key);
	pthread_mutex_unlock(&q->lock);
}

void wq_shutdown(struct workqueue *q)
{
	pthread_mutex_lock(&q->lock);
	q->shutdown = true;
	pthread_cond_broadcast(&q->cond);
	pthread_mutex_unlock(&q->lock);
}

size_t wq_len(struct workqueue *q)
{
	pthread_mutex_lock(&q->lock);
	size_t n = q->ready;
	pthread_mutex_unlock(&q->lock);
	return n;
}
