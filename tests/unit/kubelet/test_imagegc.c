/* Image garbage collection's choice (imagegc.c): how much to free for a disk's usage and the
 * thresholds, which unused images go in which order, and the duration flags. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>
#include "images.h"

#define GB (1000ULL * 1000 * 1000)
#define MIN (60LL * 1000)

static const struct imggc_policy defaults = { .high_pct = 85, .low_pct = 80, .min_age_ms = 2 * MIN };

static void test_bytes_to_free(void **state)
{
	(void)state;
	/* 100 GB disk: 84% used is under the threshold, 85% is at it: free down to 80% */
	assert_int_equal(imggc_bytes_to_free(&defaults, 100 * GB, 16 * GB), 0);
	assert_int_equal(imggc_bytes_to_free(&defaults, 100 * GB, 15 * GB), 5 * GB);
	assert_int_equal(imggc_bytes_to_free(&defaults, 100 * GB, 3 * GB), 17 * GB);
	/* whole percents as the kubelet computes them (100 - floor(free%)): 84.5% used counts as 85,
	 * 83.5% as 84 */
	assert_int_equal(imggc_bytes_to_free(&defaults, 100 * GB, 15 * GB + GB / 2), 4 * GB + GB / 2);
	assert_int_equal(imggc_bytes_to_free(&defaults, 100 * GB, 16 * GB + GB / 2), 0);
	/* 100 disables it, even on a full disk; an unknown capacity frees nothing */
	struct imggc_policy off = { .high_pct = 100, .low_pct = 80 };
	assert_int_equal(imggc_bytes_to_free(&off, 100 * GB, 0), 0);
	assert_int_equal(imggc_bytes_to_free(&defaults, 0, 0), 0);
	/* huge filesystems do not overflow: 10 EB, 90% used, free down to 80% = 1 EB */
	uint64_t eb = 1000ULL * 1000 * GB;
	assert_int_equal(imggc_bytes_to_free(&defaults, 10 * eb, eb), eb);
	/* available above capacity (a racy statvfs) is taken as empty */
	assert_int_equal(imggc_bytes_to_free(&defaults, 100 * GB, 200 * GB), 0);
}

static void test_select_lru_skips_used_pinned_and_young(void **state)
{
	(void)state;
	int64_t now = 100 * MIN;
	struct imggc_image imgs[] = {
		{ .id = "used", .size = 5 * GB, .first_seen_ms = 0, .last_used_ms = now, .in_use = true },
		{ .id = "pause", .size = 1 * GB, .first_seen_ms = 0, .pinned = true },
		{ .id = "young", .size = 9 * GB, .first_seen_ms = now - MIN },         /* under 2 min old */
		{ .id = "recent", .size = 2 * GB, .first_seen_ms = 0, .last_used_ms = now - 10 * MIN },
		{ .id = "old", .size = 2 * GB, .first_seen_ms = 0, .last_used_ms = now - 50 * MIN },
		{ .id = "never", .size = 1 * GB, .first_seen_ms = 5 * MIN },            /* never used */
		{ .id = "never-older", .size = 1 * GB, .first_seen_ms = 1 * MIN },
	};
	size_t n = sizeof(imgs) / sizeof(imgs[0]), idx[8];
	uint64_t freed;
	/* enough to free: least recently used first (never used before used long ago), then first
	 * detected first among equals */
	size_t k = imggc_select(&defaults, imgs, n, now, 100 * GB, idx, &freed);
	assert_int_equal(k, 4);
	assert_string_equal(imgs[idx[0]].id, "never-older");
	assert_string_equal(imgs[idx[1]].id, "never");
	assert_string_equal(imgs[idx[2]].id, "old");
	assert_string_equal(imgs[idx[3]].id, "recent");
	assert_int_equal(freed, 6 * GB); /* less than asked: only this much was eligible */
	/* stops as soon as enough is freed */
	k = imggc_select(&defaults, imgs, n, now, 2 * GB, idx, &freed);
	assert_int_equal(k, 2);
	assert_int_equal(freed, 2 * GB);
	k = imggc_select(&defaults, imgs, n, now, 2 * GB + 1, idx, &freed);
	assert_int_equal(k, 3);
	assert_string_equal(imgs[idx[2]].id, "old");
	/* nothing to free: nothing removed */
	k = imggc_select(&defaults, imgs, n, now, 0, idx, &freed);
	assert_int_equal(k, 0);
	assert_int_equal(freed, 0);
	/* a minimum age of 0 makes the young image eligible, by its first detection */
	struct imggc_policy p0 = defaults;
	p0.min_age_ms = 0;
	k = imggc_select(&p0, imgs, n, now, 100 * GB, idx, &freed);
	assert_int_equal(k, 5);
	assert_string_equal(imgs[idx[2]].id, "young"); /* never used, first seen last */
	for (size_t i = 0; i < k; i++) {
		assert_string_not_equal(imgs[idx[i]].id, "used");
		assert_string_not_equal(imgs[idx[i]].id, "pause");
	}
}

static void test_select_empty(void **state)
{
	(void)state;
	size_t idx[1];
	uint64_t freed = 7;
	assert_int_equal(imggc_select(&defaults, NULL, 0, 0, GB, idx, &freed), 0);
	assert_int_equal(freed, 0);
}

static void test_parse_duration(void **state)
{
	(void)state;
	int64_t ms = -1;
	assert_int_equal(imggc_parse_duration("2m", &ms), 0);
	assert_int_equal(ms, 120000);
	assert_int_equal(imggc_parse_duration("2m0s", &ms), 0);
	assert_int_equal(ms, 120000);
	assert_int_equal(imggc_parse_duration("1h30m", &ms), 0);
	assert_int_equal(ms, 5400000);
	assert_int_equal(imggc_parse_duration("1.5s", &ms), 0);
	assert_int_equal(ms, 1500);
	assert_int_equal(imggc_parse_duration("250ms", &ms), 0);
	assert_int_equal(ms, 250);
	assert_int_equal(imggc_parse_duration("0", &ms), 0);
	assert_int_equal(ms, 0);
	assert_int_equal(imggc_parse_duration("0s", &ms), 0);
	assert_int_equal(ms, 0);
	const char *bad[] = { "", "2", "m", "-1m", "1d", "1 m", "1m ", "s1", "1.s.", "9999999h", "1us", "..5s" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ms = 42;
		assert_int_equal(imggc_parse_duration(bad[i], &ms), -1);
		assert_int_equal(ms, 42);
	}
	assert_int_equal(imggc_parse_duration(NULL, &ms), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bytes_to_free),
		cmocka_unit_test(test_select_lru_skips_used_pinned_and_young),
		cmocka_unit_test(test_select_empty),
		cmocka_unit_test(test_parse_duration),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
