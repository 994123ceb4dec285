/* Controller expectations (kube.c): creations and deletions raised before writing, lowered as
 * the informer observes them (a deletion counted once however many events show it), the
 * timeout, forgetting, and keys kept apart. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>
#include "tpc.h"

#define K "t1/default/web"

static void test_creations(void **state)
{
	(void)state;
	struct tpc_expect *x = tpc_expect_new(1000);
	int64_t wait = -1;
	assert_true(tpc_expect_satisfied(x, K, NULL, 0, &wait)); /* nothing recorded */
	assert_int_equal(wait, 0);
	tpc_expect_creations(x, K, NULL, 3, 100);
	assert_false(tpc_expect_satisfied(x, K, NULL, 200, &wait));
	assert_int_equal(wait, 900);
	assert_true(tpc_expect_satisfied(x, "t1/default/other", NULL, 200, NULL));
	tpc_expect_created(x, K, NULL, 1);
	tpc_expect_created(x, K, NULL, 1);
	assert_false(tpc_expect_satisfied(x, K, NULL, 300, NULL));
	tpc_expect_created(x, K, NULL, 1);
	assert_true(tpc_expect_satisfied(x, K, NULL, 300, NULL));
	assert_int_equal(tpc_expect_pending(x), 0);
	/* observations of a key with no record are ignored, and do not pre-pay later creations */
	tpc_expect_created(x, K, NULL, 5);
	tpc_expect_creations(x, K, NULL, 1, 400);
	assert_false(tpc_expect_satisfied(x, K, NULL, 400, NULL));
	/* creations that were never made (a failed POST) are lowered by the controller */
	tpc_expect_created(x, K, NULL, 1);
	assert_true(tpc_expect_satisfied(x, K, NULL, 400, NULL));
	tpc_expect_free(x);
}

static void test_deletions(void **state)
{
	(void)state;
	struct tpc_expect *x = tpc_expect_new(1000);
	tpc_expect_deletion(x, K, NULL, "t1/default/web-a", 0);
	tpc_expect_deletion(x, K, NULL, "t1/default/web-b", 0);
	assert_false(tpc_expect_satisfied(x, K, NULL, 10, NULL));
	/* the update setting deletionTimestamp and the delete event both show web-a: counted once */
	tpc_expect_deleted(x, K, NULL, "t1/default/web-a");
	tpc_expect_deleted(x, K, NULL, "t1/default/web-a");
	assert_false(tpc_expect_satisfied(x, K, NULL, 10, NULL));
	tpc_expect_deleted(x, K, NULL, "t1/default/web-zzz"); /* not one we deleted */
	assert_false(tpc_expect_satisfied(x, K, NULL, 10, NULL));
	tpc_expect_deleted(x, K, NULL, "t1/default/web-b");
	assert_true(tpc_expect_satisfied(x, K, NULL, 10, NULL));
	/* creations and deletions together */
	tpc_expect_creations(x, K, NULL, 1, 20);
	tpc_expect_deletion(x, K, NULL, "t1/default/web-c", 20);
	tpc_expect_created(x, K, NULL, 1);
	assert_false(tpc_expect_satisfied(x, K, NULL, 30, NULL));
	tpc_expect_deleted(x, K, NULL, "t1/default/web-c");
	assert_true(tpc_expect_satisfied(x, K, NULL, 30, NULL));
	tpc_expect_free(x);
}

static void test_timeout_and_forget(void **state)
{
	(void)state;
	struct tpc_expect *x = tpc_expect_new(1000);
	int64_t wait = 0;
	tpc_expect_creations(x, K, NULL, 2, 0);
	assert_false(tpc_expect_satisfied(x, K, NULL, 999, &wait));
	assert_int_equal(wait, 1);
	/* raising again restarts the clock */
	tpc_expect_creations(x, K, NULL, 1, 500);
	assert_false(tpc_expect_satisfied(x, K, NULL, 1200, &wait));
	assert_int_equal(wait, 300);
	assert_true(tpc_expect_satisfied(x, K, NULL, 1500, NULL)); /* timed out: synced anyway, record dropped */
	assert_int_equal(tpc_expect_pending(x), 0);
	assert_true(tpc_expect_satisfied(x, K, NULL, 1500, NULL));
	tpc_expect_creations(x, K, NULL, 2, 2000);
	tpc_expect_creations(x, "t2/default/web", NULL, 2, 2000);
	assert_int_equal(tpc_expect_pending(x), 2);
	tpc_expect_forget(x, K);
	assert_true(tpc_expect_satisfied(x, K, NULL, 2000, NULL));
	assert_false(tpc_expect_satisfied(x, "t2/default/web", NULL, 2000, NULL));
	tpc_expect_free(x);
	/* NULL-safe */
	tpc_expect_creations(NULL, K, NULL, 1, 0);
	assert_true(tpc_expect_satisfied(NULL, K, NULL, 0, NULL));
	tpc_expect_free(NULL);
	struct tpc_expect *d = tpc_expect_new(0); /* default timeout */
	tpc_expect_creations(d, K, NULL, 1, 0);
	assert_false(tpc_expect_satisfied(d, K, NULL, TPC_EXPECT_TIMEOUT_MS - 1, NULL));
	assert_true(tpc_expect_satisfied(d, K, NULL, TPC_EXPECT_TIMEOUT_MS, NULL));
	tpc_expect_free(d);
}

/* An object deleted and made again under the same name (a tenant deleted and restored at once)
 * does not wait on what its predecessor expected; events of the predecessor's pods leave the
 * new object's record alone. */
static void test_same_name_new_uid(void **state)
{
	(void)state;
	struct tpc_expect *x = tpc_expect_new(1000);
	tpc_expect_creations(x, K, "uid-1", 3, 0);
	tpc_expect_created(x, K, "uid-1", 1);
	assert_false(tpc_expect_satisfied(x, K, "uid-1", 10, NULL));
	assert_true(tpc_expect_satisfied(x, K, "uid-2", 10, NULL)); /* uid-1's dropped */
	assert_int_equal(tpc_expect_pending(x), 0);
	tpc_expect_creations(x, K, "uid-2", 1, 20);
	tpc_expect_created(x, K, "uid-1", 1); /* a late event of the old object's pod */
	assert_false(tpc_expect_satisfied(x, K, "uid-2", 30, NULL));
	tpc_expect_deletion(x, K, "uid-3", "t1/default/web-a", 40); /* raising for another uid replaces */
	tpc_expect_deleted(x, K, "uid-2", "t1/default/web-a");
	assert_false(tpc_expect_satisfied(x, K, "uid-3", 50, NULL));
	tpc_expect_deleted(x, K, NULL, "t1/default/web-a"); /* unknown uid: counted */
	assert_true(tpc_expect_satisfied(x, K, "uid-3", 50, NULL));
	tpc_expect_free(x);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_creations),
		cmocka_unit_test(test_deletions),
		cmocka_unit_test(test_timeout_and_forget),
		cmocka_unit_test(test_same_name_new_uid),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
