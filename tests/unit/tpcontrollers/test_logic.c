/* Pure controller arithmetic: template hash, fenceposts, rollout steps, pod ranking. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>
#include "tpc.h"

static void test_hash(void **state)
{
	(void)state;
	json_t *a = json_loads("{\"metadata\":{\"labels\":{\"app\":\"web\"}},\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"x\"}]}}", 0, NULL);
	json_t *b = json_loads("{\"spec\":{\"containers\":[{\"image\":\"x\",\"name\":\"c\"}]},\"metadata\":{\"labels\":{\"app\":\"web\",\"pod-template-hash\":\"zz\"}}}", 0, NULL);
	struct buf ha = BUF_INIT, hb = BUF_INIT, hc = BUF_INIT;
	tpc_template_hash(a, -1, &ha);
	tpc_template_hash(b, -1, &hb);
	tpc_template_hash(a, 1, &hc);
	assert_string_equal(ha.ptr, hb.ptr); /* key order and the hash label do not matter */
	assert_string_not_equal(ha.ptr, hc.ptr);
	assert_true(ha.len >= 1 && ha.len <= 10);
	assert_int_equal(strspn(ha.ptr, "bcdfghjklmnpqrstvwxz2456789"), ha.len);
	assert_true(tpc_templates_equal(a, b));
	assert_int_equal(tpc_fnv32a("", 0), 2166136261u);
	assert_int_equal(tpc_fnv32a("a", 1), 0xe40c292cu);
	buf_release(&ha), buf_release(&hb), buf_release(&hc);
	json_decref(a), json_decref(b);
}

static void test_fenceposts(void **state)
{
	(void)state;
	long long s, u;
	assert_int_equal(tpc_fenceposts(NULL, 10, &s, &u), 0);
	assert_int_equal(s, 3); /* 25% of 10 rounds up */
	assert_int_equal(u, 2); /* and down */
	json_t *r = json_loads("{\"maxSurge\":0,\"maxUnavailable\":\"0%\"}", 0, NULL);
	assert_int_equal(tpc_fenceposts(r, 5, &s, &u), 0);
	assert_int_equal(s, 0);
	assert_int_equal(u, 1);
	json_decref(r);
	r = json_loads("{\"maxSurge\":\"x%\"}", 0, NULL);
	assert_true(tpc_fenceposts(r, 5, &s, &u) < 0);
	json_decref(r);
}

static void test_rolling(void **state)
{
	(void)state;
	/* 4 replicas, surge 1, unavailable 1: new RS goes to 1 first */
	struct rs_view neu = { 0, 0, 2, 0 }, old[1] = { { 4, 4, 1, 0 } };
	assert_true(tpc_rolling_step(4, 1, 1, &neu, old, 1));
	assert_int_equal(neu.target, 1);
	assert_int_equal(old[0].target, 4);
	/* new RS at 1 (not available): old may lose one only (minAvailable 3) */
	neu.replicas = 1;
	assert_true(tpc_rolling_step(4, 1, 1, &neu, old, 1));
	assert_int_equal(neu.target, 1);
	assert_int_equal(old[0].target, 3);
	/* scale down of a finished rollout */
	struct rs_view n2 = { 6, 6, 0, 0 };
	assert_true(tpc_rolling_step(3, 1, 0, &n2, NULL, 0));
	assert_int_equal(n2.target, 3);
	assert_false(tpc_rolling_step(6, 2, 1, &n2, NULL, 0) && n2.target != 6);
	/* recreate waits for old pods */
	struct rs_view n3 = { 0, 0, 2, 0 }, o3[1] = { { 0, 0, 1, 0 } };
	assert_false(tpc_recreate_step(3, 2, &n3, o3, 1));
	assert_true(tpc_recreate_step(3, 0, &n3, o3, 1));
	assert_int_equal(n3.target, 3);
}

static void test_rank(void **state)
{
	(void)state;
	json_t *sched = json_loads("{\"metadata\":{\"name\":\"a\",\"creationTimestamp\":\"2020-01-01T00:00:00Z\"},\"spec\":{\"nodeName\":\"n\"},\"status\":{\"phase\":\"Running\",\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]}}", 0, NULL);
	json_t *unsched = json_loads("{\"metadata\":{\"name\":\"b\",\"creationTimestamp\":\"2019-01-01T00:00:00Z\"},\"spec\":{},\"status\":{\"phase\":\"Pending\"}}", 0, NULL);
	json_t *notready = json_loads("{\"metadata\":{\"name\":\"c\",\"creationTimestamp\":\"2019-01-01T00:00:00Z\"},\"spec\":{\"nodeName\":\"n\"},\"status\":{\"phase\":\"Running\"}}", 0, NULL);
	json_t *newer = json_loads("{\"metadata\":{\"name\":\"d\",\"creationTimestamp\":\"2021-01-01T00:00:00Z\"},\"spec\":{\"nodeName\":\"n\"},\"status\":{\"phase\":\"Running\"}}", 0, NULL);
	const json_t *v[] = { sched, notready, unsched, newer };
	tpc_rank_for_deletion(v, 4);
	assert_ptr_equal(v[0], unsched);
	assert_ptr_equal(v[1], newer);
	assert_ptr_equal(v[2], notready);
	assert_ptr_equal(v[3], sched);
	json_decref(sched), json_decref(unsched), json_decref(notready), json_decref(newer);
}

static void test_batches(void **state)
{
	(void)state;
	assert_int_equal(tpc_next_batch(0, 10), 1);
	assert_int_equal(tpc_next_batch(1, 9), 2);
	assert_int_equal(tpc_next_batch(4, 3), 3);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hash), cmocka_unit_test(test_fenceposts), cmocka_unit_test(test_rolling),
		cmocka_unit_test(test_rank), cmocka_unit_test(test_batches),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
