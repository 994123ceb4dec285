/* Pure StatefulSet controller logic: ordinals, the per-sync plan (OrderedReady, Parallel,
 * scale-down, RollingUpdate with partition, OnDelete), claim names and revision data. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>
#include "sts.h"

#define READY { .exists = true, .ready = true, .updated = true }
#define MISSING { 0 }

static void test_ordinal(void **state)
{
	(void)state;
	assert_int_equal(sts_ordinal("db", "db-0"), 0);
	assert_int_equal(sts_ordinal("db", "db-12"), 12);
	assert_int_equal(sts_ordinal("db", "db-01"), -1);
	assert_int_equal(sts_ordinal("db", "db-"), -1);
	assert_int_equal(sts_ordinal("db", "db-x"), -1);
	assert_int_equal(sts_ordinal("db", "dbx-1"), -1);
	assert_int_equal(sts_ordinal("db", "db-web-1"), -1);
	assert_int_equal(sts_ordinal("db-web", "db-web-1"), 1);
	assert_int_equal(sts_ordinal("db", "db-1234567890"), -1);
}

static void test_ordered_scale_up(void **state)
{
	(void)state;
	struct sts_in in = { .replicas = 3 };
	struct sts_action a[8];
	struct sts_pod none[3] = { MISSING, MISSING, MISSING };
	assert_int_equal(sts_plan(&in, none, 3, a, 8), 1);
	assert_int_equal(a[0].ordinal, 0);
	assert_true(a[0].create);
	/* db-0 exists but is not ready: nothing */
	struct sts_pod starting[3] = { { .exists = true, .updated = true }, MISSING, MISSING };
	assert_int_equal(sts_plan(&in, starting, 3, a, 8), 0);
	/* db-0 ready: db-1 next, only */
	struct sts_pod one[3] = { READY, MISSING, MISSING };
	assert_int_equal(sts_plan(&in, one, 3, a, 8), 1);
	assert_int_equal(a[0].ordinal, 1);
	assert_true(a[0].create);
	/* a hole below is filled first */
	struct sts_pod hole[3] = { MISSING, READY, MISSING };
	assert_int_equal(sts_plan(&in, hole, 3, a, 8), 1);
	assert_int_equal(a[0].ordinal, 0);
	/* an ended pod is deleted and nothing after it */
	struct sts_pod ended[3] = { { .exists = true, .ended = true }, MISSING, MISSING };
	assert_int_equal(sts_plan(&in, ended, 3, a, 8), 1);
	assert_int_equal(a[0].ordinal, 0);
	assert_false(a[0].create);
	/* all ready, up to date: nothing */
	struct sts_pod all[3] = { READY, READY, READY };
	assert_int_equal(sts_plan(&in, all, 3, a, 8), 0);
}

static void test_parallel(void **state)
{
	(void)state;
	struct sts_in in = { .replicas = 3, .parallel = true };
	struct sts_action a[8];
	struct sts_pod none[3] = { MISSING, { .exists = true }, MISSING };
	assert_int_equal(sts_plan(&in, none, 3, a, 8), 2);
	assert_int_equal(a[0].ordinal, 0);
	assert_int_equal(a[1].ordinal, 2);
	assert_true(a[0].create && a[1].create);
	/* scale down to 1: both condemned at once, highest first */
	in.replicas = 1;
	struct sts_pod all[3] = { READY, READY, READY };
	assert_int_equal(sts_plan(&in, all, 3, a, 8), 2);
	assert_int_equal(a[0].ordinal, 2);
	assert_int_equal(a[1].ordinal, 1);
	assert_false(a[0].create || a[1].create);
	/* max bounds the output */
	assert_int_equal(sts_plan(&in, all, 3, a, 1), 1);
}

static void test_ordered_scale_down(void **state)
{
	(void)state;
	struct sts_in in = { .replicas = 1 };
	struct sts_action a[8];
	struct sts_pod all[3] = { READY, READY, READY };
	assert_int_equal(sts_plan(&in, all, 3, a, 8), 1);
	assert_int_equal(a[0].ordinal, 2);
	assert_false(a[0].create);
	/* the top one terminating: wait */
	struct sts_pod going[3] = { READY, READY, { .exists = true, .ready = true, .terminating = true } };
	assert_int_equal(sts_plan(&in, going, 3, a, 8), 0);
	/* gone: the next one */
	struct sts_pod two[3] = { READY, READY, MISSING };
	assert_int_equal(sts_plan(&in, two, 3, a, 8), 1);
	assert_int_equal(a[0].ordinal, 1);
	/* a lower pod not ready blocks scale-down */
	struct sts_pod sick[3] = { { .exists = true, .updated = true }, READY, READY };
	assert_int_equal(sts_plan(&in, sick, 3, a, 8), 0);
	/* to zero */
	in.replicas = 0;
	assert_int_equal(sts_plan(&in, all, 3, a, 8), 1);
	assert_int_equal(a[0].ordinal, 2);
}

static void test_rolling_update(void **state)
{
	(void)state;
	struct sts_in in = { .replicas = 3 };
	struct sts_action a[8];
	struct sts_pod old = { .exists = true, .ready = true };
	struct sts_pod p[3] = { old, old, old };
	assert_int_equal(sts_plan(&in, p, 3, a, 8), 1);
	assert_int_equal(a[0].ordinal, 2);
	assert_false(a[0].create);
	/* db-2 recreated but not ready yet: wait */
	p[2] = (struct sts_pod){ .exists = true, .updated = true };
	assert_int_equal(sts_plan(&in, p, 3, a, 8), 0);
	p[2].ready = true;
	assert_int_equal(sts_plan(&in, p, 3, a, 8), 1);
	assert_int_equal(a[0].ordinal, 1);
	/* partition 2: only db-2 is updated */
	in.partition = 2;
	struct sts_pod q[3] = { old, old, READY };
	assert_int_equal(sts_plan(&in, q, 3, a, 8), 0);
	in.partition = 0;
	/* OnDelete: never deletes for an update */
	in.on_delete = true;
	struct sts_pod r[3] = { old, old, old };
	assert_int_equal(sts_plan(&in, r, 3, a, 8), 0);
	/* but recreates a deleted pod */
	r[1] = (struct sts_pod)MISSING;
	assert_int_equal(sts_plan(&in, r, 3, a, 8), 1);
	assert_true(a[0].create);
	assert_int_equal(a[0].ordinal, 1);
}

static void test_new_pod_revision(void **state)
{
	(void)state;
	struct sts_in in = { .replicas = 3, .partition = 2 };
	assert_false(sts_new_pod_updated(&in, 1));
	assert_true(sts_new_pod_updated(&in, 2));
	in.on_delete = true;
	assert_true(sts_new_pod_updated(&in, 0));
}

static void test_claims_and_revisions(void **state)
{
	(void)state;
	struct buf b = BUF_INIT;
	sts_claim_name("data", "db", 2, &b);
	assert_string_equal(b.ptr, "data-db-2");
	buf_release(&b);
	json_t *set = json_loads("{\"spec\":{\"replicas\":3,\"template\":{\"metadata\":{\"labels\":{\"a\":\"b\"}},"
				 "\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"i:1\"}]}}}}", 0, NULL);
	assert_non_null(set);
	json_t *d = sts_revision_data(set);
	assert_string_equal(json_string_value(json_object_get(json_object_get(json_object_get(d, "spec"), "template"),
							     "$patch")), "replace");
	assert_null(json_object_get(json_object_get(d, "spec"), "replicas"));
	assert_true(sts_revision_matches(d, set));
	json_t *c = json_object_get(json_array_get(json_object_get(json_object_get(json_object_get(json_object_get(
		set, "spec"), "template"), "spec"), "containers"), 0), "image") ? set : NULL;
	assert_non_null(c);
	json_object_set_new(json_array_get(json_object_get(json_object_get(json_object_get(json_object_get(set, "spec"),
		"template"), "spec"), "containers"), 0), "image", json_string("i:2"));
	assert_false(sts_revision_matches(d, set));
	json_decref(d);
	json_decref(set);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ordinal),
		cmocka_unit_test(test_ordered_scale_up),
		cmocka_unit_test(test_parallel),
		cmocka_unit_test(test_ordered_scale_down),
		cmocka_unit_test(test_rolling_update),
		cmocka_unit_test(test_new_pod_revision),
		cmocka_unit_test(test_claims_and_revisions),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
