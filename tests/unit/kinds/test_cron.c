/* CronJob schedules: parsing, macros, matching, next firing times (UTC and TZ database zones). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <cmocka.h>
#include "ursa/cron.h"
#include "ursa/errors.h"

static int64_t utc(int y, int mo, int d, int h, int mi)
{
	struct tm tm = { .tm_year = y - 1900, .tm_mon = mo - 1, .tm_mday = d, .tm_hour = h, .tm_min = mi };
	return (int64_t)timegm(&tm);
}

static int64_t next(const char *spec, const char *tz, int64_t from)
{
	struct cron_schedule s;
	assert_int_equal(cron_parse(spec, &s, NULL), 0);
	int64_t r = 0;
	assert_int_equal(cron_next(&s, tz, from, &r), 0);
	return r;
}

static void test_parse(void **state)
{
	(void)state;
	struct cron_schedule s;
	struct buf e = BUF_INIT;
	assert_int_equal(cron_parse("*/15 0-6/2 1,15 jan-MAR mon-fri", &s, &e), 0);
	assert_true(s.minute == (1ull << 0 | 1ull << 15 | 1ull << 30 | 1ull << 45));
	assert_true(s.hour == (1u << 0 | 1u << 2 | 1u << 4 | 1u << 6));
	assert_true(s.dom == (1u << 1 | 1u << 15));
	assert_true(s.month == (1u << 1 | 1u << 2 | 1u << 3));
	assert_true(s.dow == 0x3e);
	assert_false(s.dom_any);
	assert_int_equal(cron_parse("0 0 * * 7", &s, NULL), 0);
	assert_true(s.dow == 1); /* 7 is Sunday */
	assert_int_equal(cron_parse("5/20 * ? * *", &s, NULL), 0);
	assert_true(s.minute == (1ull << 5 | 1ull << 25 | 1ull << 45));
	assert_true(s.dom_any);
	struct cron_schedule d;
	assert_int_equal(cron_parse("@daily", &d, NULL), 0);
	assert_int_equal(cron_parse("0 0 * * *", &s, NULL), 0);
	assert_true(s.minute == d.minute && s.hour == d.hour && s.dom == d.dom && s.month == d.month);
	assert_true(s.dow == d.dow && s.dom_any == d.dom_any && s.dow_any == d.dow_any);
	static const char *const bad[] = { "", "* * * *", "* * * * * *", "60 * * * *", "* 24 * * *", "* * 0 * *",
					   "* * * 13 *", "* * * * 8", "5-1 * * * *", "*/0 * * * *", "a * * * *",
					   "@reboot", "@every 5m", "TZ=UTC * * * * *", "1,,2 * * * *", "-1 * * * *",
					   "* * * foo *", "CRON_TZ=UTC 0 * * * *", "@daily x" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		buf_reset(&e);
		assert_int_equal(cron_parse(bad[i], &s, &e), E_INVALID);
		assert_true(e.len > 0);
	}
	buf_release(&e);
}

static void test_next_utc(void **state)
{
	(void)state;
	int64_t t0 = utc(2026, 3, 10, 12, 30);
	assert_true(next("* * * * *", NULL, t0) == t0 + 60);
	assert_true(next("* * * * *", NULL, t0 + 59) == t0 + 60);
	assert_true(next("@hourly", "", t0) == utc(2026, 3, 10, 13, 0));
	assert_true(next("@daily", NULL, t0) == utc(2026, 3, 11, 0, 0));
	assert_true(next("@weekly", NULL, t0) == utc(2026, 3, 15, 0, 0)); /* a Sunday */
	assert_true(next("@monthly", NULL, t0) == utc(2026, 4, 1, 0, 0));
	assert_true(next("@yearly", NULL, t0) == utc(2027, 1, 1, 0, 0));
	assert_true(next("0 9 29 2 *", NULL, t0) == utc(2028, 2, 29, 9, 0));
	/* both day fields restricted: either matches (the 13th or a Monday) */
	assert_true(next("0 0 13 * 1", NULL, t0) == utc(2026, 3, 13, 0, 0));
	assert_true(next("0 0 13 * 1", NULL, utc(2026, 3, 13, 0, 0)) == utc(2026, 3, 16, 0, 0));
	/* one of them unrestricted: both must match */
	assert_true(next("0 0 * * 5", NULL, t0) == utc(2026, 3, 13, 0, 0));
	struct cron_schedule s;
	int64_t r;
	assert_int_equal(cron_parse("0 0 30 2 *", &s, NULL), 0);
	assert_int_equal(cron_next(&s, NULL, t0, &r), E_NOT_FOUND);
	assert_int_equal(cron_next(&s, "No/Such_Zone", t0, &r), E_INVALID);
}

static void test_next_tz(void **state)
{
	(void)state;
	int64_t t0 = utc(2026, 1, 10, 12, 0);
	/* 09:00 in Berlin (UTC+1 in winter, +2 in summer) */
	assert_true(next("0 9 * * *", "Europe/Berlin", t0) == utc(2026, 1, 11, 8, 0));
	assert_true(next("0 9 * * *", "Europe/Berlin", utc(2026, 7, 1, 12, 0)) == utc(2026, 7, 2, 7, 0));
	assert_true(next("30 * * * *", "Asia/Kolkata", t0) == utc(2026, 1, 10, 13, 0)); /* UTC+5:30 */
	assert_true(next("0 9 * * *", "Etc/UTC", t0) == utc(2026, 1, 11, 9, 0));
	/* spring forward: 02:30 does not exist on 2026-03-29 in Berlin; the run after is the 30th */
	assert_true(next("30 2 * * *", "Europe/Berlin", utc(2026, 3, 28, 12, 0)) == utc(2026, 3, 30, 0, 30));
	assert_true(cron_valid_tz(NULL) && cron_valid_tz("America/New_York") && cron_valid_tz("UTC"));
	assert_false(cron_valid_tz("../etc/passwd") || cron_valid_tz("/etc/localtime") || cron_valid_tz("Foo/Bar") ||
		     cron_valid_tz("Europe/Berlin;x"));
}

static void test_next_invariants(void **state)
{
	(void)state;
	static const char *const specs[] = { "*/7 3-5 * * *", "15 14 1 * *", "0 22 * * 1-5", "23 0-20/2 * * *",
					     "5 4 * * sun", "0 0,12 1 */2 *", "@hourly" };
	for (size_t i = 0; i < sizeof(specs) / sizeof(specs[0]); i++) {
		struct cron_schedule s;
		assert_int_equal(cron_parse(specs[i], &s, NULL), 0);
		int64_t t = utc(2026, 12, 30, 23, 58) + 17;
		for (int k = 0; k < 50; k++) {
			int64_t n;
			assert_int_equal(cron_next(&s, NULL, t, &n), 0);
			assert_true(n > t && n % 60 == 0);
			time_t tt = (time_t)n;
			struct tm tm;
			gmtime_r(&tt, &tm);
			assert_true(cron_matches(&s, tm.tm_min, tm.tm_hour, tm.tm_mday, tm.tm_mon + 1, tm.tm_wday));
			/* nothing in between matches */
			for (int64_t m = (t / 60 + 1) * 60; m < n && m < t + 3 * 86400; m += 60) {
				tt = (time_t)m;
				gmtime_r(&tt, &tm);
				assert_false(
					cron_matches(&s, tm.tm_min, tm.tm_hour, tm.tm_mday, tm.tm_mon + 1, tm.tm_wday));
			}
			t = n;
		}
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse),
		cmocka_unit_test(test_next_utc),
		cmocka_unit_test(test_next_tz),
		cmocka_unit_test(test_next_invariants),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
