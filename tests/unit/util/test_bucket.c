/* The shared token bucket: bursts, refill rates, waits, rate changes, rate 0, as its three users
 * (the gateway's tenant limit, the RM's zone taint rate, the TP's rmloss eviction rate) use it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include "ursa/bucket.h"

#define MS 1000LL
#define S 1000000LL

/* The gateway: rate 10, burst 5, Retry-After from the wait. */
static void test_burst_then_refill(void **state)
{
	(void)state;
	struct token_bucket b;
	int64_t t = 1 * S;
	token_bucket_init(&b, 10, 5, t);
	for (int i = 0; i < 5; i++)
		assert_true(token_bucket_take(&b, t));
	assert_false(token_bucket_take(&b, t));
	assert_in_range(token_bucket_wait_us(&b, t), 99000, 100000); /* one token per 100 ms */
	assert_true(token_bucket_take(&b, t + 100 * MS));
	assert_false(token_bucket_take(&b, t + 100 * MS));
	assert_true(token_bucket_wait_us(&b, t + 100 * MS) > 0);
	/* a long pause refills to the burst, not beyond */
	t += 60 * S;
	for (int i = 0; i < 5; i++)
		assert_true(token_bucket_take(&b, t));
	assert_false(token_bucket_take(&b, t));
	/* a clock that goes back changes nothing */
	assert_false(token_bucket_take(&b, t - S));
}

/* The RM: burst 1, rate changes with the zone's state. */
static void test_burst_one_and_set_rate(void **state)
{
	(void)state;
	struct token_bucket b;
	token_bucket_init(&b, 0.1, 1, 0);
	assert_true(token_bucket_take(&b, 0)); /* burst of one */
	assert_false(token_bucket_take(&b, 0));
	assert_false(token_bucket_take(&b, 9 * S));
	assert_true(token_bucket_take(&b, 10 * S)); /* one token per 10 s */
	assert_false(token_bucket_take(&b, 10 * S + MS));
	/* a long pause does not bank more than one token */
	assert_true(token_bucket_take(&b, 1000 * S));
	assert_false(token_bucket_take(&b, 1000 * S));
	token_bucket_set_rate(&b, 0, 2000 * S);
	assert_false(token_bucket_take(&b, 9000 * S));
	assert_true(token_bucket_wait_us(&b, 9000 * S) == INT64_MAX);
	token_bucket_set_rate(&b, 1, 9000 * S); /* emptied at rate 0: starts from nothing */
	assert_false(token_bucket_take(&b, 9000 * S + 500 * MS));
	assert_true(token_bucket_take(&b, 9001 * S));
	/* a lower rate keeps what accrued */
	token_bucket_set_rate(&b, 1, 9002 * S);
	token_bucket_set_rate(&b, 0.001, 9002 * S);
	assert_true(token_bucket_take(&b, 9002 * S));
	assert_false(token_bucket_take(&b, 9003 * S));
}

/* The TP's rmloss: burst = rate, waits in whole ms. */
static void test_burst_rate_and_wait(void **state)
{
	(void)state;
	struct token_bucket b;
	token_bucket_init(&b, 10, 10, 0);
	int taken = 0;
	while (token_bucket_take(&b, 0))
		taken++;
	assert_int_equal(taken, 10);
	assert_int_equal(token_bucket_wait_us(&b, 0), 100 * MS);
	assert_false(token_bucket_take(&b, 99 * MS));
	assert_in_range(token_bucket_wait_us(&b, 99 * MS), 1 * MS, 1 * MS + 1); /* rounded up */
	assert_true(token_bucket_take(&b, 100 * MS));
	assert_false(token_bucket_take(&b, 100 * MS));
	taken = 0;
	while (token_bucket_take(&b, 60 * S))
		taken++;
	assert_int_equal(taken, 10);
	/* fractional rate, burst clamped to 1: one every 2 s */
	token_bucket_init(&b, 0.5, 0.5, 1 * S);
	assert_true(token_bucket_take(&b, 1 * S));
	assert_false(token_bucket_take(&b, 2 * S));
	assert_int_equal(token_bucket_wait_us(&b, 2 * S), 1 * S);
	assert_int_equal(token_bucket_wait_us(&b, 3 * S), 0);
	assert_true(token_bucket_take(&b, 3 * S));
	/* many small steps add up to a token despite rounding */
	token_bucket_init(&b, 3, 1, 0);
	assert_true(token_bucket_take(&b, 0));
	int64_t t = 0;
	for (int i = 0; i < 333; i++) {
		t += 1 * MS;
		assert_false(token_bucket_take(&b, t));
	}
	assert_true(token_bucket_take(&b, t + 1 * MS));
}

static void test_rate_zero_and_negative(void **state)
{
	(void)state;
	struct token_bucket b;
	token_bucket_init(&b, 0, 5, 0);
	assert_false(token_bucket_take(&b, 1000 * S));
	assert_true(token_bucket_wait_us(&b, 0) == INT64_MAX);
	token_bucket_init(&b, -3, -1, 0);
	assert_false(token_bucket_take(&b, 1000 * S));
	assert_true(b.rate == 0 && b.burst == 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_burst_then_refill),
		cmocka_unit_test(test_burst_one_and_set_rate),
		cmocka_unit_test(test_burst_rate_and_wait),
		cmocka_unit_test(test_rate_zero_and_negative),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
