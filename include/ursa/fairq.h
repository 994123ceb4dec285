/* Fair queuing of requests across tenants (src/common/util/fairq.c), for the partition API
 * servers: priority levels, each with a number of seats (requests executing at once, a wide
 * request taking several) and a cap on the seats of one flow (a tenant); a request that finds
 * no seat waits in one of its level's queues, chosen by shuffle sharding (a flow is dealt a hand
 * of queues and joins the shortest), and the queues take turns by the seat time they were given
 * (start-time fair queuing: the queue given the least goes next). A full queue rejects. Flows
 * also count their open watches against a limit. docs/architecture.md, "Fair shares".
 *
 * Pure bookkeeping, not thread-safe: the caller serializes every call, and owns the items (a
 * struct fairq_item inside its own request record), which must stay put while queued or
 * executing. Times are microseconds of one monotonic clock, chosen by the caller. */
#ifndef URSA_FAIRQ_H
#define URSA_FAIRQ_H
#include "ursa/buf.h"
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct fairq_level_config {
	const char *name;      /* "workload" (metrics); borrowed, must outlive the fairq */
	unsigned seats;        /* seats in use at once; 0: unlimited (exempt: nothing queues) */
	unsigned flow_seats;   /* at most this many of them for one flow (0 or more than seats: seats) */
	unsigned queues;       /* 1..1024 */
	unsigned hand;         /* queues dealt to a flow, 1..queues */
	unsigned queue_length; /* requests waiting in one queue; one more is rejected */
};

enum fairq_verdict {
	FAIRQ_RUN,      /* seats taken: run it, then fairq_finish */
	FAIRQ_QUEUED,   /* waits: fairq_finish or fairq_expire hands it back */
	FAIRQ_REJECTED, /* its queue is full: refuse it (429) */
};

struct fairq_flow;
struct fairq_item {
	struct fairq_item *next; /* in a queue; in the lists fairq hands back */
	struct fairq_flow *flow;
	unsigned level, queue, width;
	int64_t queued_us, started_us;
	int64_t charged;         /* seat-µs charged to its queue at dispatch */
	bool expired;            /* handed back by fairq_expire or fairq_flush: refuse it */
	bool shared;             /* at dispatch, another flow of its level held seats or had a request
				    arrive within FAIRQ_SHARED_US: it is not alone on the server */
};
#define FAIRQ_SHARED_US 1000000

struct fairq;
/* levels is copied (names borrowed). est_us: the service time charged per seat at dispatch,
 * corrected when the request finishes. */
struct fairq *fairq_new(const struct fairq_level_config *levels, size_t nlevels, int64_t est_us);
void fairq_free(struct fairq *q);

/* A request of flow at level, taking width seats (clamped to 1..the flow's cap). RUN: it holds
 * its seats until fairq_finish. QUEUED: it is in a queue. REJECTED: nothing is kept. */
enum fairq_verdict fairq_arrive(struct fairq *q, unsigned level, const char *flow, unsigned width,
				struct fairq_item *it, int64_t now_us);
/* A request that ran (RUN, or handed back by fairq_finish) ended: its seats are given to
 * waiting requests. Returns those that now hold seats (a list by ->next; run each, then
 * fairq_finish it), or NULL. */
struct fairq_item *fairq_finish(struct fairq *q, struct fairq_item *it, int64_t now_us);
/* Requests that waited longer than max_wait_us leave their queues, marked expired (a list by
 * ->next, or NULL): refuse them; they hold no seats. */
struct fairq_item *fairq_expire(struct fairq *q, int64_t now_us, int64_t max_wait_us);
/* Every waiting request, marked expired (stopping). */
struct fairq_item *fairq_flush(struct fairq *q);

/* Watches of flow: true and counted if it has fewer than limit open (limit 0: no limit). */
bool fairq_watch_open(struct fairq *q, const char *flow, unsigned limit);
void fairq_watch_close(struct fairq *q, const char *flow);

/* Seconds a refused request's client should wait (Retry-After): 1. */
#define FAIRQ_RETRY_AFTER_S 1

/* The queues in Prometheus text: per level its seats and seats in use; per flow (and level)
 * waiting requests, seats in use, dispatched, rejected (queue full, timed out) and the time
 * waited; per flow its open watches and those refused. */
void fairq_render(const struct fairq *q, struct buf *out);

/* Tests: the hand of queues dealt to flow at level (ret_queues holds the level's hand); the flow
 * is made if new. */
void fairq_hand(struct fairq *q, unsigned level, const char *flow, unsigned *ret_queues);
/* Tests: requests waiting at level, and its seats in use. */
size_t fairq_waiting(const struct fairq *q, unsigned level);
unsigned fairq_seats_used(const struct fairq *q, unsigned level);

#endif
