/* resourceVersions with the partition's number: shown values, and where a client's value points
 * after its tenant moved (revision.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include "ursa/revision.h"

#define N(n) ((int64_t)(n) << RV_NUMBER_SHIFT)

static void test_show(void **state)
{
	(void)state;
	assert_int_equal(rv_set_number(0), 0);
	assert_int_equal(rv_show(1234), 1234); /* number 0: etcd's revisions as they are */
	assert_int_equal(rv_set_number(3), 0);
	assert_int_equal(rv_number(), 3);
	assert_int_equal(rv_show(1234), N(3) | 1234);
	assert_int_equal(rv_show(0), 0);
	assert_int_equal(rv_show(-1), -1);
	assert_int_equal(rv_number_of(N(3) | 1234), 3);
	assert_int_equal(rv_number_of(77), 0);
	assert_int_equal(rv_show_at(5, 9), N(5) | 9);
	assert_int_equal(rv_show_at(0, 9), 9);
	assert_int_equal(rv_show_at(5, 0), 0);
	/* the largest number keeps resourceVersions JavaScript-exact */
	assert_int_equal(rv_set_number(RV_NUMBER_MAX), 0);
	assert_true(rv_show(1) < (INT64_C(1) << 53));
	assert_int_equal(rv_set_number(RV_NUMBER_MAX + 1), -1);
	assert_int_equal(rv_set_number(-1), -1);
	assert_int_equal(rv_number(), RV_NUMBER_MAX); /* refused: unchanged */
}

static void test_resolve_own(void **state)
{
	(void)state;
	int64_t rev;
	rv_set_number(2);
	assert_int_equal(rv_resolve(N(2) | 500, 0, 0, &rev), RV_HERE);
	assert_int_equal(rev, 500);
	assert_int_equal(rv_resolve(0, N(1) | 9, N(2) | 7, &rev), RV_HERE); /* "0": any, as is */
	assert_int_equal(rev, 0);
	assert_int_equal(rv_resolve(-1, 0, 0, &rev), RV_HERE);
	assert_int_equal(rev, -1);
	/* another partition's, and the tenant never moved here */
	assert_int_equal(rv_resolve(N(1) | 500, 0, 0, &rev), RV_ELSEWHERE);
	/* a bare etcd revision (a number-0 partition's) is not this one's */
	assert_int_equal(rv_resolve(500, 0, 0, &rev), RV_ELSEWHERE);
}

static void test_resolve_after_move(void **state)
{
	(void)state;
	int64_t rev;
	rv_set_number(2);
	int64_t from = N(1) | 1000, to = N(2) | 40; /* fenced at 1000 on tp-1, copied by 40 here */
	/* a client that saw every change up to the fence (an event at it, a later list or bookmark) */
	assert_int_equal(rv_resolve(N(1) | 1000, from, to, &rev), RV_CAUGHT_UP);
	assert_int_equal(rev, 40);
	assert_int_equal(rv_resolve(N(1) | 1700, from, to, &rev), RV_CAUGHT_UP);
	assert_int_equal(rev, 40);
	/* one behind the fence missed changes the target cannot replay */
	assert_int_equal(rv_resolve(N(1) | 999, from, to, &rev), RV_ELSEWHERE);
	assert_int_equal(rev, N(1) | 999);
	/* a third partition's (a move before the last), and a bare revision, do not compare */
	assert_int_equal(rv_resolve(N(3) | 5000, from, to, &rev), RV_ELSEWHERE);
	assert_int_equal(rv_resolve(5000, from, to, &rev), RV_ELSEWHERE);
	/* after the move the tenant's own values are this partition's */
	assert_int_equal(rv_resolve(N(2) | 41, from, to, &rev), RV_HERE);
	assert_int_equal(rev, 41);
	/* a record naming another partition as the target (a restored annotation) is not used */
	assert_int_equal(rv_resolve(N(1) | 1700, from, N(4) | 40, &rev), RV_ELSEWHERE);
	/* a move from a number-0 partition */
	assert_int_equal(rv_resolve(1200, 1000, to, &rev), RV_CAUGHT_UP);
	assert_int_equal(rv_resolve(900, 1000, to, &rev), RV_ELSEWHERE);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_show),
		cmocka_unit_test(test_resolve_own),
		cmocka_unit_test(test_resolve_after_move),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
