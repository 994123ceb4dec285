/* The fair queue of the partition API servers (ursa/fairq.h): seats and a tenant's cap, turns by
 * seat time given (a tenant with a long backlog does not hold back one with a short one), full
 * queues, waits that time out, wide requests, shuffle-sharded hands, watch limits, metrics. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "ursa/fairq.h"

#define MS 1000LL
#define S 1000000LL

enum { EXEMPT, WORK };

static struct fairq *make(unsigned seats, unsigned flow_seats, unsigned queues, unsigned hand, unsigned qlen)
{
	struct fairq_level_config lv[] = {
		{ .name = "exempt", .seats = 0 },
		{ .name = "workload", .seats = seats, .flow_seats = flow_seats, .queues = queues, .hand = hand,
		  .queue_length = qlen },
	};
	return fairq_new(lv, 2, 1 * MS);
}

static size_t count(const struct fairq_item *it)
{
	size_t n = 0;
	for (; it; it = it->next)
		n++;
	return n;
}

/* Seats first, then the tenant's cap: both queue the rest; exempt never queues. */
static void test_seats_and_cap(void **state)
{
	(void)state;
	struct fairq *q = make(4, 2, 8, 2, 10);
	struct fairq_item it[8];
	assert_int_equal(fairq_arrive(q, WORK, "a", 1, &it[0], 0), FAIRQ_RUN);
	assert_int_equal(fairq_arrive(q, WORK, "a", 1, &it[1], 0), FAIRQ_RUN);
	assert_int_equal(fairq_arrive(q, WORK, "a", 1, &it[2], 0), FAIRQ_QUEUED); /* a's cap: 2 */
	assert_int_equal(fairq_arrive(q, WORK, "a", 1, &it[3], 0), FAIRQ_QUEUED);
	/* only a's capped requests wait: b runs at once, and c */
	assert_int_equal(fairq_arrive(q, WORK, "b", 1, &it[4], 0), FAIRQ_RUN);
	assert_int_equal(fairq_arrive(q, WORK, "c", 1, &it[5], 0), FAIRQ_RUN);
	assert_int_equal(fairq_arrive(q, WORK, "d", 1, &it[6], 0), FAIRQ_QUEUED); /* 4 seats in use */
	assert_int_equal(fairq_seats_used(q, WORK), 4);
	assert_int_equal(fairq_waiting(q, WORK), 3);
	/* a's first ends: one seat, for one of a's (in either queue of a's hand: a's order across
	 * its queues is not kept) or d */
	struct fairq_item *go = fairq_finish(q, &it[0], 1 * MS), *last = NULL;
	assert_int_equal(count(go), 1);
	assert_true(go == &it[2] || go == &it[3] || go == &it[6]);
	struct fairq_item *go2 = fairq_finish(q, &it[4], 2 * MS);
	assert_int_equal(count(go2), 1);
	assert_true(go2 != go && (go2 == &it[2] || go2 == &it[3] || go2 == &it[6]));
	assert_true(go == &it[6] || go2 == &it[6]); /* d got one of the two */
	last = (go == &it[2] || go2 == &it[2]) ? &it[3] : &it[2];
	/* a holds 2 again: its last waits for a's seat, not c's */
	assert_int_equal(fairq_waiting(q, WORK), 1);
	assert_null(fairq_finish(q, &it[5], 3 * MS));
	go = fairq_finish(q, &it[1], 4 * MS);
	assert_ptr_equal(go, last);
	for (int i = 0; i < 100; i++) {
		struct fairq_item x;
		assert_int_equal(fairq_arrive(q, EXEMPT, "system", 1, &x, 0), FAIRQ_RUN);
	}
	assert_int_equal(fairq_seats_used(q, WORK), 3);
	assert_int_equal(fairq_waiting(q, WORK), 0);
	fairq_free(q);
}

/* Tenant a has 40 requests waiting, b then asks for 4: b's are served within b's first turns,
 * not after a's backlog. */
static void test_turns(void **state)
{
	(void)state;
	struct fairq *q = make(2, 2, 16, 1, 100);
	struct fairq_item a[42], b[4];
	int64_t t = 0;
	assert_int_equal(fairq_arrive(q, WORK, "a", 1, &a[0], t), FAIRQ_RUN);
	assert_int_equal(fairq_arrive(q, WORK, "a", 1, &a[1], t), FAIRQ_RUN);
	for (int i = 2; i < 42; i++)
		assert_int_equal(fairq_arrive(q, WORK, "a", 1, &a[i], t), FAIRQ_QUEUED);
	/* a's requests run a while, then b arrives */
	struct fairq_item *run[2] = { &a[0], &a[1] };
	for (int round = 0; round < 6; round++) {
		t += 10 * MS;
		for (int k = 0; k < 2; k++) {
			struct fairq_item *go = fairq_finish(q, run[k], t);
			assert_non_null(go);
			run[k] = go;
		}
	}
	for (int i = 0; i < 4; i++)
		assert_int_equal(fairq_arrive(q, WORK, "b", 1, &b[i], t), FAIRQ_QUEUED);
	/* the next dispatches alternate at worst: all 4 of b within 8 finishes */
	int b_done = 0, finishes = 0;
	while (b_done < 4 && finishes < 8) {
		t += 10 * MS;
		struct fairq_item *go = fairq_finish(q, run[finishes % 2], t);
		assert_non_null(go);
		assert_null(go->next);
		if (go >= b && go < b + 4)
			b_done++;
		run[finishes % 2] = go;
		finishes++;
	}
	assert_int_equal(b_done, 4);
	fairq_free(q);
}

/* One queue per hand: a full queue rejects, a full queue of one tenant leaves another's alone
 * when their hands differ. */
static void test_full_queue(void **state)
{
	(void)state;
	struct fairq *q = make(1, 1, 64, 1, 3);
	unsigned ha, hb;
	fairq_hand(q, WORK, "a", &ha);
	const char *other = NULL;
	char name[16];
	for (int i = 0; i < 1000 && !other; i++) {
		snprintf(name, sizeof(name), "t%d", i);
		fairq_hand(q, WORK, name, &hb);
		if (hb != ha)
			other = name;
	}
	assert_non_null(other);
	struct fairq_item it[8];
	assert_int_equal(fairq_arrive(q, WORK, "a", 1, &it[0], 0), FAIRQ_RUN);
	for (int i = 1; i <= 3; i++)
		assert_int_equal(fairq_arrive(q, WORK, "a", 1, &it[i], 0), FAIRQ_QUEUED);
	assert_int_equal(fairq_arrive(q, WORK, "a", 1, &it[4], 0), FAIRQ_REJECTED);
	assert_int_equal(fairq_arrive(q, WORK, other, 1, &it[5], 0), FAIRQ_QUEUED);
	assert_int_equal(fairq_waiting(q, WORK), 4);
	struct buf b = BUF_INIT;
	fairq_render(q, &b);
	assert_non_null(strstr(buf_cstr(&b), "ursa_fairq_tenant_rejected_total{level=\"workload\",tenant=\"a\",reason=\"queue-full\"} 1\n"));
	assert_non_null(strstr(buf_cstr(&b), "ursa_fairq_tenant_waiting{level=\"workload\",tenant=\"a\"} 3\n"));
	assert_non_null(strstr(buf_cstr(&b), "ursa_fairq_seats_in_use{level=\"workload\"} 1\n"));
	buf_release(&b);
	fairq_free(q);
}

/* Waits that last too long end expired; the rest stay; a flush takes everything. */
static void test_expire_and_flush(void **state)
{
	(void)state;
	struct fairq *q = make(1, 1, 4, 2, 10);
	struct fairq_item it[4];
	assert_int_equal(fairq_arrive(q, WORK, "a", 1, &it[0], 0), FAIRQ_RUN);
	assert_int_equal(fairq_arrive(q, WORK, "a", 1, &it[1], 0), FAIRQ_QUEUED);
	assert_int_equal(fairq_arrive(q, WORK, "b", 1, &it[2], 5 * S), FAIRQ_QUEUED);
	assert_null(fairq_expire(q, 10 * S, 15 * S));
	struct fairq_item *gone = fairq_expire(q, 16 * S, 15 * S);
	assert_ptr_equal(gone, &it[1]);
	assert_null(gone->next);
	assert_true(gone->expired);
	assert_int_equal(fairq_waiting(q, WORK), 1);
	assert_int_equal(fairq_seats_used(q, WORK), 1); /* the running one keeps its seat */
	gone = fairq_flush(q);
	assert_ptr_equal(gone, &it[2]);
	assert_true(gone->expired);
	assert_int_equal(fairq_waiting(q, WORK), 0);
	assert_null(fairq_finish(q, &it[0], 17 * S));
	assert_int_equal(fairq_seats_used(q, WORK), 0);
	fairq_free(q);
}

/* A wide request (a big LIST) is clamped to the tenant's cap and waits for its seats at the head
 * of its queue; a narrow one behind it does not overtake it. */
static void test_wide(void **state)
{
	(void)state;
	struct fairq *q = make(4, 3, 1, 1, 10);
	struct fairq_item it[4];
	assert_int_equal(fairq_arrive(q, WORK, "a", 100, &it[0], 0), FAIRQ_RUN);
	assert_int_equal(it[0].width, 3);
	assert_int_equal(fairq_arrive(q, WORK, "b", 1, &it[1], 0), FAIRQ_RUN);
	assert_int_equal(fairq_arrive(q, WORK, "c", 3, &it[2], 0), FAIRQ_QUEUED);
	assert_int_equal(fairq_arrive(q, WORK, "d", 1, &it[3], 0), FAIRQ_QUEUED);
	assert_null(fairq_finish(q, &it[1], 1 * MS)); /* one seat free: c needs 3, d waits behind it */
	struct fairq_item *go = fairq_finish(q, &it[0], 2 * MS);
	assert_ptr_equal(go, &it[2]);
	assert_ptr_equal(go->next, &it[3]);
	assert_int_equal(fairq_seats_used(q, WORK), 4);
	fairq_free(q);
}

/* A request is shared when another tenant holds seats or asked within FAIRQ_SHARED_US; a tenant
 * alone, however busy, is not. */
static void test_shared(void **state)
{
	(void)state;
	struct fairq *q = make(4, 3, 8, 2, 10);
	struct fairq_item it[6];
	assert_int_equal(fairq_arrive(q, WORK, "heavy", 3, &it[0], 0), FAIRQ_RUN);
	assert_false(it[0].shared); /* alone */
	assert_int_equal(fairq_arrive(q, WORK, "heavy", 3, &it[1], 1 * MS), FAIRQ_QUEUED);
	assert_int_equal(fairq_arrive(q, WORK, "light", 1, &it[2], 2 * MS), FAIRQ_RUN);
	assert_true(it[2].shared); /* heavy holds seats */
	assert_null(fairq_finish(q, &it[2], 3 * MS));
	/* heavy's next is dispatched: light left 7 ms ago but asked within the window */
	assert_ptr_equal(fairq_finish(q, &it[0], 10 * MS), &it[1]);
	assert_true(it[1].shared);
	/* a second later than light's request, heavy is alone again, even after asking many times */
	for (int i = 0; i < 3; i++)
		assert_int_equal(fairq_arrive(q, WORK, "heavy", 1, &it[3 + i], 2 * MS + FAIRQ_SHARED_US + 11 * MS + i),
				 FAIRQ_QUEUED);
	struct fairq_item *go = fairq_finish(q, &it[1], 2 * MS + FAIRQ_SHARED_US + 20 * MS);
	assert_int_equal(count(go), 3);
	for (; go; go = go->next)
		assert_false(go->shared);
	/* light again: heavy is both recent and holding seats */
	struct fairq_item l2;
	assert_int_equal(fairq_arrive(q, WORK, "light", 1, &l2, 3 * S), FAIRQ_RUN);
	assert_true(l2.shared);
	fairq_free(q);
}

/* Hands: distinct queues in range, the same for the same name. */
static void test_hands(void **state)
{
	(void)state;
	struct fairq *q = make(8, 4, 64, 6, 50);
	unsigned h1[6], h2[6];
	for (int i = 0; i < 500; i++) {
		char name[16];
		snprintf(name, sizeof(name), "tenant-%d", i);
		fairq_hand(q, WORK, name, h1);
		fairq_hand(q, WORK, name, h2);
		assert_memory_equal(h1, h2, sizeof(h1));
		for (int j = 0; j < 6; j++) {
			assert_true(h1[j] < 64);
			for (int k = 0; k < j; k++)
				assert_int_not_equal(h1[j], h1[k]);
		}
	}
	fairq_free(q);
}

/* Watches: up to the limit per tenant; a closed one frees its place; 0 means no limit. */
static void test_watches(void **state)
{
	(void)state;
	struct fairq *q = make(8, 4, 8, 2, 10);
	for (int i = 0; i < 3; i++)
		assert_true(fairq_watch_open(q, "a", 3));
	assert_false(fairq_watch_open(q, "a", 3));
	assert_true(fairq_watch_open(q, "b", 3));
	fairq_watch_close(q, "a");
	assert_true(fairq_watch_open(q, "a", 3));
	for (int i = 0; i < 10; i++)
		assert_true(fairq_watch_open(q, "c", 0));
	fairq_watch_close(q, "nobody");
	struct buf b = BUF_INIT;
	fairq_render(q, &b);
	assert_non_null(strstr(buf_cstr(&b), "ursa_fairq_tenant_watches{tenant=\"a\"} 3\n"));
	assert_non_null(strstr(buf_cstr(&b), "ursa_fairq_tenant_watches_rejected_total{tenant=\"a\"} 1\n"));
	assert_non_null(strstr(buf_cstr(&b), "ursa_fairq_tenant_watches{tenant=\"c\"} 10\n"));
	buf_release(&b);
	fairq_free(q);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_seats_and_cap), cmocka_unit_test(test_turns),
		cmocka_unit_test(test_full_queue),    cmocka_unit_test(test_expire_and_flush),
		cmocka_unit_test(test_wide),          cmocka_unit_test(test_hands),
		cmocka_unit_test(test_watches),       cmocka_unit_test(test_shared),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
