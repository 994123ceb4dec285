/* Fair queuing of requests across tenants (ursa/fairq.h). */
#include "ursa/fairq.h"
#include "ursa/strmap.h"
#include "ursa/xalloc.h"
#include <stdlib.h>
#include <string.h>

#define MAX_QUEUES 1024

/* What one flow (a tenant) does at one level. */
struct fairq_flow {
	unsigned level;
	unsigned seats;          /* executing */
	size_t waiting;
	unsigned watches;
	unsigned long long dispatched, rejected_full, rejected_timeout;
	int64_t waited_us;       /* summed over dispatched requests */
	unsigned hand[];         /* the queues dealt to it */
};

struct queue {
	struct fairq_item *head, *tail;
	size_t len;
	int64_t given;           /* seat-µs given to its requests so far (virtual time) */
};

struct level {
	struct fairq_level_config c;
	unsigned used;           /* seats in use */
	size_t waiting;
	int64_t vnow;            /* the given of the last queue served: where an idle queue starts */
	/* The two flows whose requests arrived last (distinct, [0] the latest) and when. */
	struct fairq_flow *recent[2];
	int64_t recent_us[2];
	struct queue *q;
	struct strmap flows;     /* flow name -> struct fairq_flow */
};

struct fairq {
	struct level *lv;
	size_t nlv;
	int64_t est_us;
	struct strmap watch_flows; /* flow name -> watches open (num) and refused (val: counter) */
};

static uint64_t mix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

/* Deals hand distinct queues out of n from the bits of h (shuffle sharding: two flows share
 * their whole hand rarely). */
static void deal(uint64_t h, unsigned n, unsigned hand, unsigned *ret)
{
	unsigned taken[MAX_QUEUES];
	for (unsigned i = 0; i < hand; i++) {
		unsigned card = (unsigned)(h % (n - i)), k;
		h = mix(h);
		for (k = 0; k < i && taken[k] <= card; k++)
			card++; /* the card-th queue not dealt yet */
		memmove(taken + k + 1, taken + k, (i - k) * sizeof(unsigned));
		taken[k] = card;
		ret[i] = card;
	}
}

struct fairq *fairq_new(const struct fairq_level_config *levels, size_t nlevels, int64_t est_us)
{
	struct fairq *q = xcalloc(1, sizeof(*q));
	q->lv = xcalloc(nlevels ? nlevels : 1, sizeof(*q->lv));
	q->nlv = nlevels;
	q->est_us = est_us > 0 ? est_us : 1000;
	for (size_t i = 0; i < nlevels; i++) {
		struct level *l = &q->lv[i];
		l->c = levels[i];
		if (l->c.queues < 1)
			l->c.queues = 1;
		if (l->c.queues > MAX_QUEUES)
			l->c.queues = MAX_QUEUES;
		if (l->c.hand < 1)
			l->c.hand = 1;
		if (l->c.hand > l->c.queues)
			l->c.hand = l->c.queues;
		if (!l->c.flow_seats || (l->c.seats && l->c.flow_seats > l->c.seats))
			l->c.flow_seats = l->c.seats;
		l->q = xcalloc(l->c.queues, sizeof(*l->q));
		strmap_init(&l->flows);
	}
	strmap_init(&q->watch_flows);
	return q;
}

void fairq_free(struct fairq *q)
{
	if (!q)
		return;
	for (size_t i = 0; i < q->nlv; i++) {
		free(q->lv[i].q);
		strmap_release(&q->lv[i].flows, free);
	}
	strmap_release(&q->watch_flows, free);
	free(q->lv);
	free(q);
}

static struct fairq_flow *flow_of(struct level *l, unsigned level, const char *name)
{
	bool created;
	struct strmap_ent *e = strmap_put(&l->flows, name, &created);
	if (created) {
		struct fairq_flow *f = xcalloc(1, sizeof(*f) + l->c.hand * sizeof(unsigned));
		f->level = level;
		deal(mix(e->hash), l->c.queues, l->c.hand, f->hand);
		e->val = f;
	}
	return e->val;
}

static bool fits(const struct level *l, const struct fairq_flow *f, unsigned width)
{
	return l->used + width <= l->c.seats && f->seats + width <= l->c.flow_seats;
}

/* Nothing waiting could run now: every waiting queue's head is held back by its flow's cap
 * (dispatch gives every free seat it can, so only that, or a wide head waiting for seats that a
 * newcomer must not overtake, keeps a request waiting). */
static bool only_capped_wait(const struct level *l)
{
	if (!l->waiting)
		return true;
	for (unsigned i = 0; i < l->c.queues; i++) {
		const struct fairq_item *h = l->q[i].head;
		if (h && h->flow->seats + h->width <= l->c.flow_seats)
			return false;
	}
	return true;
}

static void note_arrival(struct level *l, struct fairq_flow *f, int64_t now_us)
{
	if (l->recent[0] != f) {
		l->recent[1] = l->recent[0];
		l->recent_us[1] = l->recent_us[0];
		l->recent[0] = f;
	}
	l->recent_us[0] = now_us;
}

/* Whether a flow other than f holds seats of l or had a request arrive within FAIRQ_SHARED_US. */
static bool shared(const struct level *l, const struct fairq_flow *f, int64_t now_us)
{
	if (l->used > f->seats)
		return true;
	int i = l->recent[0] == f ? 1 : 0;
	return l->recent[i] && now_us - l->recent_us[i] <= FAIRQ_SHARED_US;
}

static void take(struct level *l, struct fairq_item *it, int64_t now_us, int64_t est_us)
{
	it->shared = shared(l, it->flow, now_us);
	l->used += it->width;
	it->flow->seats += it->width;
	it->flow->dispatched++;
	it->started_us = now_us;
	it->charged = (int64_t)it->width * est_us;
	struct queue *qu = &l->q[it->queue];
	qu->given += it->charged;
	l->vnow = qu->given;
}

enum fairq_verdict fairq_arrive(struct fairq *q, unsigned level, const char *flow, unsigned width,
				struct fairq_item *it, int64_t now_us)
{
	struct level *l = &q->lv[level < q->nlv ? level : q->nlv - 1];
	memset(it, 0, sizeof(*it));
	it->level = (unsigned)(l - q->lv);
	it->flow = flow_of(l, it->level, flow);
	it->queued_us = now_us;
	if (!l->c.seats) {
		it->width = width ? width : 1;
		it->flow->seats += it->width;
		it->flow->dispatched++;
		it->started_us = now_us;
		return FAIRQ_RUN;
	}
	it->width = width < 1 ? 1 : width > l->c.flow_seats ? l->c.flow_seats : width;
	note_arrival(l, it->flow, now_us);
	/* the shortest queue of the flow's hand */
	unsigned best = it->flow->hand[0];
	for (unsigned i = 1; i < l->c.hand; i++)
		if (l->q[it->flow->hand[i]].len < l->q[best].len)
			best = it->flow->hand[i];
	it->queue = best;
	if (fits(l, it->flow, it->width) && only_capped_wait(l)) {
		take(l, it, now_us, q->est_us);
		return FAIRQ_RUN;
	}
	struct queue *qu = &l->q[best];
	if (qu->len >= l->c.queue_length) {
		it->flow->rejected_full++;
		return FAIRQ_REJECTED;
	}
	if (!qu->len && qu->given < l->vnow)
		qu->given = l->vnow; /* an idle queue saves no credit */
	if (qu->tail)
		qu->tail->next = it;
	else
		qu->head = it;
	qu->tail = it;
	qu->len++;
	l->waiting++;
	it->flow->waiting++;
	return FAIRQ_QUEUED;
}

static void unlink_head(struct level *l, struct queue *qu)
{
	struct fairq_item *it = qu->head;
	qu->head = it->next;
	if (!qu->head)
		qu->tail = NULL;
	it->next = NULL;
	qu->len--;
	l->waiting--;
	it->flow->waiting--;
}

/* Gives free seats to waiting requests, the queue given the least first; a queue whose head's
 * flow is at its cap is passed over, one whose head needs more seats than are free stops the
 * round (a wide request is not starved by narrow ones behind it). */
static struct fairq_item *dispatch(struct fairq *q, struct level *l, int64_t now_us)
{
	struct fairq_item *out = NULL, **tail = &out;
	while (l->waiting && l->used < l->c.seats) {
		struct queue *best = NULL;
		for (unsigned i = 0; i < l->c.queues; i++) {
			struct queue *qu = &l->q[i];
			if (!qu->head || qu->head->flow->seats + qu->head->width > l->c.flow_seats)
				continue;
			if (!best || qu->given < best->given)
				best = qu;
		}
		if (!best || l->used + best->head->width > l->c.seats)
			break;
		struct fairq_item *it = best->head;
		unlink_head(l, best);
		it->flow->waited_us += now_us - it->queued_us;
		take(l, it, now_us, q->est_us);
		*tail = it;
		tail = &it->next;
	}
	return out;
}

struct fairq_item *fairq_finish(struct fairq *q, struct fairq_item *it, int64_t now_us)
{
	struct level *l = &q->lv[it->level];
	it->flow->seats -= it->width;
	if (!l->c.seats)
		return NULL;
	l->used -= it->width;
	/* the queue is charged what the request really took */
	int64_t took = now_us - it->started_us;
	if (took < 0)
		took = 0;
	l->q[it->queue].given += (int64_t)it->width * took - it->charged;
	return dispatch(q, l, now_us);
}

static struct fairq_item *take_expired(struct fairq *q, int64_t now_us, int64_t max_wait_us, bool all)
{
	struct fairq_item *out = NULL, **tail = &out;
	for (size_t i = 0; i < q->nlv; i++) {
		struct level *l = &q->lv[i];
		for (unsigned j = 0; j < l->c.queues && l->waiting; j++) {
			struct queue *qu = &l->q[j];
			while (qu->head && (all || now_us - qu->head->queued_us > max_wait_us)) {
				struct fairq_item *it = qu->head;
				unlink_head(l, qu);
				it->expired = true;
				if (!all)
					it->flow->rejected_timeout++;
				*tail = it;
				tail = &it->next;
			}
		}
	}
	return out;
}

struct fairq_item *fairq_expire(struct fairq *q, int64_t now_us, int64_t max_wait_us)
{
	return take_expired(q, now_us, max_wait_us, false);
}

struct fairq_item *fairq_flush(struct fairq *q)
{
	return take_expired(q, 0, 0, true);
}

bool fairq_watch_open(struct fairq *q, const char *flow, unsigned limit)
{
	bool created;
	struct strmap_ent *e = strmap_put(&q->watch_flows, flow, &created);
	if (created)
		e->val = xcalloc(1, sizeof(unsigned long long));
	if (limit && e->num >= limit) {
		++*(unsigned long long *)e->val;
		return false;
	}
	e->num++;
	return true;
}

void fairq_watch_close(struct fairq *q, const char *flow)
{
	struct strmap_ent *e = strmap_get(&q->watch_flows, flow);
	if (e && e->num > 0)
		e->num--;
}

void fairq_render(const struct fairq *q, struct buf *out)
{
	buf_adds(out, "# HELP ursa_fairq_seats Seats (requests executing at once) of each priority level; 0: unlimited.\n"
		      "# TYPE ursa_fairq_seats gauge\n");
	for (size_t i = 0; i < q->nlv; i++)
		buf_addf(out, "ursa_fairq_seats{level=\"%s\"} %u\n", q->lv[i].c.name, q->lv[i].c.seats);
	buf_adds(out, "# HELP ursa_fairq_seats_in_use Seats in use at each priority level.\n"
		      "# TYPE ursa_fairq_seats_in_use gauge\n");
	for (size_t i = 0; i < q->nlv; i++)
		buf_addf(out, "ursa_fairq_seats_in_use{level=\"%s\"} %u\n", q->lv[i].c.name, q->lv[i].used);
	static const struct {
		const char *name, *type, *help;
	} m[] = {
		{ "ursa_fairq_tenant_waiting", "gauge", "Requests of a tenant waiting in its level's queues." },
		{ "ursa_fairq_tenant_seats_in_use", "gauge", "Seats a tenant's executing requests hold." },
		{ "ursa_fairq_tenant_dispatched_total", "counter", "Requests of a tenant given seats (or run unqueued)." },
		{ "ursa_fairq_tenant_rejected_total", "counter",
		  "Requests of a tenant refused with 429: its queue full, or timed out waiting." },
		{ "ursa_fairq_tenant_wait_seconds_total", "counter", "Time a tenant's dispatched requests waited in queues." },
	};
	for (size_t k = 0; k < sizeof(m) / sizeof(m[0]); k++) {
		buf_addf(out, "# HELP %s %s\n# TYPE %s %s\n", m[k].name, m[k].help, m[k].name, m[k].type);
		for (size_t i = 0; i < q->nlv; i++) {
			const struct level *l = &q->lv[i];
			size_t it = 0;
			for (struct strmap_ent *e = strmap_next(&l->flows, NULL, &it); e; e = strmap_next(&l->flows, e, &it)) {
				const struct fairq_flow *f = e->val;
				const char *lb = l->c.name;
				switch (k) {
				case 0:
					buf_addf(out, "%s{level=\"%s\",tenant=\"%s\"} %zu\n", m[k].name, lb, e->key, f->waiting);
					break;
				case 1:
					buf_addf(out, "%s{level=\"%s\",tenant=\"%s\"} %u\n", m[k].name, lb, e->key, f->seats);
					break;
				case 2:
					buf_addf(out, "%s{level=\"%s\",tenant=\"%s\"} %llu\n", m[k].name, lb, e->key, f->dispatched);
					break;
				case 3:
					buf_addf(out, "%s{level=\"%s\",tenant=\"%s\",reason=\"queue-full\"} %llu\n", m[k].name, lb,
						 e->key, f->rejected_full);
					buf_addf(out, "%s{level=\"%s\",tenant=\"%s\",reason=\"timeout\"} %llu\n", m[k].name, lb,
						 e->key, f->rejected_timeout);
					break;
				default:
					buf_addf(out, "%s{level=\"%s\",tenant=\"%s\"} %.6f\n", m[k].name, lb, e->key,
						 (double)f->waited_us / 1e6);
				}
			}
		}
	}
	buf_adds(out, "# HELP ursa_fairq_tenant_watches Open watches of a tenant.\n"
		      "# TYPE ursa_fairq_tenant_watches gauge\n");
	size_t it = 0;
	for (struct strmap_ent *e = strmap_next(&q->watch_flows, NULL, &it); e; e = strmap_next(&q->watch_flows, e, &it))
		buf_addf(out, "ursa_fairq_tenant_watches{tenant=\"%s\"} %lld\n", e->key, (long long)e->num);
	buf_adds(out, "# HELP ursa_fairq_tenant_watches_rejected_total Watches of a tenant refused with 429 (over its limit).\n"
		      "# TYPE ursa_fairq_tenant_watches_rejected_total counter\n");
	it = 0;
	for (struct strmap_ent *e = strmap_next(&q->watch_flows, NULL, &it); e; e = strmap_next(&q->watch_flows, e, &it))
		buf_addf(out, "ursa_fairq_tenant_watches_rejected_total{tenant=\"%s\"} %llu\n", e->key,
			 *(unsigned long long *)e->val);
}

void fairq_hand(struct fairq *q, unsigned level, const char *flow, unsigned *ret_queues)
{
	struct level *l = &q->lv[level];
	struct fairq_flow *f = flow_of(l, level, flow);
	memcpy(ret_queues, f->hand, l->c.hand * sizeof(unsigned));
}

size_t fairq_waiting(const struct fairq *q, unsigned level)
{
	return q->lv[level].waiting;
}

unsigned fairq_seats_used(const struct fairq *q, unsigned level)
{
	return q->lv[level].used;
}
