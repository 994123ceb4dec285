/* Work queue: de-duplication, one worker per key, delays and back-off, tenant fairness,
 * shutdown. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include "ursa/client.h"
#include "ursa/timeutil.h"
#include "ursa/xalloc.h"

static void expect_get(struct workqueue *q, const char *want)
{
	char *k = wq_get(q);
	assert_non_null(k);
	assert_string_equal(k, want);
	free(k);
}

static void test_dedupe(void **state)
{
	struct workqueue *q = wq_new();
	wq_add(q, "t1/ns/a");
	wq_add(q, "t1/ns/a");
	wq_add(q, "t1/ns/b");
	assert_int_equal(wq_len(q), 2);
	expect_get(q, "t1/ns/a");
	/* added again while processing: waits for wq_done instead of going to a second worker */
	wq_add(q, "t1/ns/a");
	wq_add(q, "t1/ns/a");
	assert_int_equal(wq_len(q), 1);
	expect_get(q, "t1/ns/b");
	assert_int_equal(wq_len(q), 0);
	wq_done(q, "t1/ns/b");
	assert_int_equal(wq_len(q), 0);
	wq_done(q, "t1/ns/a");
	assert_int_equal(wq_len(q), 1);
	expect_get(q, "t1/ns/a");
	wq_done(q, "t1/ns/a");
	assert_int_equal(wq_len(q), 0);
	wq_free(q);
}

/* Many workers, few keys re-added all the time: no key is ever held by two workers. */
#define NKEYS 8
struct conc {
	struct workqueue *q;
	atomic_int busy[NKEYS];
	atomic_int violations;
	atomic_int processed;
};

static void *worker(void *arg)
{
	struct conc *c = arg;
	char *k;
	while ((k = wq_get(c->q))) {
		int i = k[strlen(k) - 1] - '0';
		if (atomic_fetch_add(&c->busy[i], 1) != 0)
			atomic_fetch_add(&c->violations, 1);
		wq_add(c->q, k); /* re-added while being processed */
		for (volatile int spin = 0; spin < 2000; spin++)
			;
		atomic_fetch_sub(&c->busy[i], 1);
		atomic_fetch_add(&c->processed, 1);
		wq_done(c->q, k);
		free(k);
	}
	return NULL;
}

static void test_no_concurrent_processing(void **state)
{
	struct conc c = { .q = wq_new() };
	pthread_t th[6];
	for (int i = 0; i < NKEYS; i++) {
		char *k = xasprintf("t%d/ns/k%d", i % 3, i);
		wq_add(c.q, k);
		free(k);
	}
	for (size_t i = 0; i < 6; i++)
		pthread_create(&th[i], NULL, worker, &c);
	int64_t deadline = mono_ms() + 10000;
	while (atomic_load(&c.processed) < 20000 && mono_ms() < deadline) {
		struct timespec ts = { 0, 5 * 1000000L };
		nanosleep(&ts, NULL);
	}
	assert_true(atomic_load(&c.processed) >= 20000);
	wq_shutdown(c.q);
	for (size_t i = 0; i < 6; i++)
		pthread_join(th[i], NULL);
	assert_int_equal(atomic_load(&c.violations), 0);
	wq_free(c.q);
}

static int64_t time_get(struct workqueue *q, const char *want)
{
	int64_t t0 = mono_ms();
	expect_get(q, want);
	wq_done(q, want);
	return mono_ms() - t0;
}

static void test_backoff(void **state)
{
	struct workqueue *q = wq_new();
	int64_t d;

	/* 5 ms doubling: 5, 10, 20, 40, 80, 160 */
	for (int i = 0; i < 5; i++) {
		wq_add_rate_limited(q, "t/ns/x");
		time_get(q, "t/ns/x");
	}
	wq_add_rate_limited(q, "t/ns/x");
	d = time_get(q, "t/ns/x");
	assert_in_range(d, 150, 400);
	wq_forget(q, "t/ns/x");
	wq_add_rate_limited(q, "t/ns/x");
	d = time_get(q, "t/ns/x");
	assert_in_range(d, 0, 60);

	/* a delayed key is not handed out early; an earlier delay wins */
	wq_add_after(q, "t/ns/y", 200);
	assert_int_equal(wq_len(q), 0);
	d = time_get(q, "t/ns/y");
	assert_in_range(d, 190, 500);
	wq_add_after(q, "t/ns/z", 5000);
	wq_add_after(q, "t/ns/z", 50);
	d = time_get(q, "t/ns/z");
	assert_in_range(d, 40, 300);

	/* a plain add of a waiting key goes out at once; the delayed copy is then deduplicated
	 * as long as the key is still queued */
	wq_add_after(q, "t/ns/w", 100);
	wq_add(q, "t/ns/w");
	d = time_get(q, "t/ns/w");
	assert_in_range(d, 0, 50);
	wq_free(q);
}

static void test_fairness(void **state)
{
	struct workqueue *q = wq_new();
	for (int i = 0; i < 1000; i++) {
		char *k = xasprintf("a/ns/k%d", i);
		wq_add(q, k);
		free(k);
	}
	wq_add(q, "b/ns/only");
	assert_int_equal(wq_len(q), 1001);
	char *k1 = wq_get(q), *k2 = wq_get(q);
	assert_true(!strcmp(k1, "b/ns/only") || !strcmp(k2, "b/ns/only"));
	assert_string_equal(k1, "a/ns/k0"); /* FIFO inside a tenant */
	free(k1);
	free(k2);
	/* a's keys keep their order */
	for (int i = 1; i < 1000; i++) {
		char *want = xasprintf("a/ns/k%d", i);
		expect_get(q, want);
		free(want);
	}
	assert_int_equal(wq_len(q), 0);
	wq_free(q);
}

static void *blocked_get(void *arg)
{
	return wq_get(arg);
}

static void test_shutdown(void **state)
{
	struct workqueue *q = wq_new();
	pthread_t th;
	void *res = (void *)1;
	wq_add_after(q, "t/ns/later", 60000);
	pthread_create(&th, NULL, blocked_get, q);
	struct timespec ts = { 0, 50 * 1000000L };
	nanosleep(&ts, NULL);
	int64_t t0 = mono_ms();
	wq_shutdown(q);
	pthread_join(th, &res);
	assert_null(res);
	assert_true(mono_ms() - t0 < 500);
	wq_add(q, "t/ns/after");
	assert_null(wq_get(q));
	wq_free(q);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_dedupe),
		cmocka_unit_test(test_no_concurrent_processing),
		cmocka_unit_test(test_backoff),
		cmocka_unit_test(test_fairness),
		cmocka_unit_test(test_shutdown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
