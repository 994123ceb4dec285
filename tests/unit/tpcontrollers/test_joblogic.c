/* Pure Job and CronJob controller logic: back-off, the plan per sync, indexes, job names,
 * missed schedules. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>
#include "batch.h"
#include "ursa/cron.h"

static void test_backoff(void **state)
{
	(void)state;
	assert_int_equal(job_backoff_ms(0, 10000), 0);
	assert_int_equal(job_backoff_ms(1, 10000), 10000);
	assert_int_equal(job_backoff_ms(2, 10000), 20000);
	assert_int_equal(job_backoff_ms(3, 10000), 40000);
	assert_int_equal(job_backoff_ms(6, 10000), 320000);
	assert_int_equal(job_backoff_ms(7, 10000), 360000); /* capped at 6 min */
	assert_int_equal(job_backoff_ms(1000, 10000), 360000);
	assert_int_equal(job_backoff_ms(3, 100), 400);
}

static struct job_in base(void)
{
	return (struct job_in){ .completions = 1, .parallelism = 1, .backoff_limit = 6, .deadline_s = -1,
				.now_ms = 1000000, .start_ms = 1000000, .last_fail_ms = -1, .backoff_base_ms = 10000 };
}

static void test_plan(void **state)
{
	(void)state;
	struct job_out o;
	struct job_in in = base();
	job_plan(&in, &o);
	assert_int_equal(o.verdict, JOB_RUNNING);
	assert_int_equal(o.create, 1);
	in.active = 1;
	job_plan(&in, &o);
	assert_int_equal(o.create, 0);
	assert_int_equal(o.remove, 0);
	in.active = 0, in.succeeded = 1;
	job_plan(&in, &o);
	assert_int_equal(o.verdict, JOB_COMPLETE);
	assert_string_equal(o.reason, "CompletionsReached");
	/* parallelism bounded by what remains */
	in = base();
	in.completions = 5, in.parallelism = 3, in.succeeded = 3, in.active = 0;
	job_plan(&in, &o);
	assert_int_equal(o.create, 2);
	in.parallelism = 1, in.active = 2;
	job_plan(&in, &o);
	assert_int_equal(o.remove, 1);
	/* work queue: done when one succeeded and none runs */
	in = base();
	in.completions = -1, in.parallelism = 2, in.succeeded = 1, in.active = 1;
	job_plan(&in, &o);
	assert_int_equal(o.verdict, JOB_RUNNING);
	assert_int_equal(o.create, 0);
	in.active = 0;
	job_plan(&in, &o);
	assert_int_equal(o.verdict, JOB_COMPLETE);
}

static void test_failures(void **state)
{
	(void)state;
	struct job_out o;
	struct job_in in = base();
	in.failed = 2, in.last_fail_ms = in.now_ms - 5000;
	job_plan(&in, &o);
	assert_int_equal(o.create, 0); /* back-off 20 s not over */
	assert_int_equal(o.recheck_ms, 15000);
	in.now_ms += 15000;
	job_plan(&in, &o);
	assert_int_equal(o.create, 1);
	in.failed = 7;
	job_plan(&in, &o);
	assert_int_equal(o.verdict, JOB_FAILED);
	assert_string_equal(o.reason, "BackoffLimitExceeded");
	in.backoff_limit = 0, in.failed = 1, in.active = 2;
	job_plan(&in, &o);
	assert_int_equal(o.verdict, JOB_FAILED);
	assert_int_equal(o.remove, 2);
	/* deadline first */
	in = base();
	in.deadline_s = 30, in.active = 1;
	in.now_ms = in.start_ms + 10000;
	job_plan(&in, &o);
	assert_int_equal(o.verdict, JOB_RUNNING);
	assert_int_equal(o.recheck_ms, 20000);
	in.now_ms = in.start_ms + 30000;
	job_plan(&in, &o);
	assert_int_equal(o.verdict, JOB_FAILED);
	assert_string_equal(o.reason, "DeadlineExceeded");
	assert_int_equal(o.remove, 1);
	/* suspended: active pods go, nothing new */
	in = base();
	in.suspend = true, in.active = 1, in.completions = 3, in.parallelism = 3;
	job_plan(&in, &o);
	assert_int_equal(o.remove, 1);
	assert_int_equal(o.create, 0);
	assert_int_equal(o.verdict, JOB_RUNNING);
}

static void test_indexes(void **state)
{
	(void)state;
	char st[6] = { 's', 'a', 0, 's', 0, 0 };
	long long ix[5];
	assert_int_equal(job_pick_indexes(st, 5, 5, ix), 2);
	assert_int_equal(ix[0], 2);
	assert_int_equal(ix[1], 4);
	assert_int_equal(job_pick_indexes(st, 5, 1, ix), 1);
	struct buf b = BUF_INIT;
	job_format_indexes(st, 5, &b);
	assert_string_equal(b.ptr, "0,3");
	char all[5] = { 's', 's', 's', 0, 's' };
	buf_reset(&b);
	job_format_indexes(all, 5, &b);
	assert_string_equal(b.ptr, "0-2,4");
	buf_reset(&b);
	cronjob_job_name("hello", 1767225600 + 59, &b);
	assert_string_equal(b.ptr, "hello-29453760");
	buf_release(&b);
}

static void test_missed(void **state)
{
	(void)state;
	struct cron_schedule s;
	assert_int_equal(cron_parse("* * * * *", &s, NULL), 0);
	int64_t last;
	int n;
	int64_t t0 = 1767225600; /* 2026-01-01T00:00:00Z */
	assert_int_equal(cronjob_missed(&s, NULL, t0, t0 + 30, &last, &n), 0);
	assert_int_equal(n, 0);
	assert_int_equal(last, 0);
	assert_int_equal(cronjob_missed(&s, NULL, t0, t0 + 150, &last, &n), 0);
	assert_int_equal(n, 2);
	assert_int_equal(last, t0 + 120);
	/* three hours missed: more than 100, and the last is still the most recent */
	assert_int_equal(cronjob_missed(&s, NULL, t0, t0 + 3 * 3600 + 5, &last, &n), 0);
	assert_true(n > 100);
	assert_int_equal(last, t0 + 3 * 3600);
	assert_int_equal(cron_parse("0 0 * * *", &s, NULL), 0);
	assert_int_equal(cronjob_missed(&s, NULL, t0, t0 + 400 * 86400, &last, &n), 0);
	assert_true(n > 100);
	assert_int_equal(last, t0 + 400 * 86400 - (t0 + 400 * 86400) % 86400);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_backoff), cmocka_unit_test(test_plan), cmocka_unit_test(test_failures),
		cmocka_unit_test(test_indexes), cmocka_unit_test(test_missed),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
