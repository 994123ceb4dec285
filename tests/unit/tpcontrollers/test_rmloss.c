/* rmloss timing: when an RM counts as lost, when a pod of its nodes must go, the eviction
 * rate flag. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>
#include "tpc.h"
#include "ursa/errors.h"

static json_t *pod_with(const char *tolerations_json)
{
	json_t *tols = json_loads(tolerations_json, 0, NULL);
	assert_non_null(tols);
	json_t *pod = json_pack("{s:{s:s}, s:{s:o}}", "metadata", "name", "p", "spec", "tolerations", tols);
	assert_non_null(pod);
	return pod;
}

static int64_t deadline(const char *tols, int64_t lost, long long def)
{
	json_t *pod = pod_with(tols);
	int64_t d = tpc_unreachable_deadline_ms(pod, lost, def);
	json_decref(pod);
	return d;
}

static void test_rm_lost(void **state)
{
	(void)state;
	assert_false(tpc_rm_lost(1000, 1000, 10));
	assert_false(tpc_rm_lost(1000, 11000, 10)); /* exactly the grace: not yet */
	assert_true(tpc_rm_lost(1000, 11001, 10));
	assert_true(tpc_rm_lost(0, 1, 0));
	assert_false(tpc_rm_lost(0, 0, -5)); /* negative grace counts as 0 */
	assert_false(tpc_rm_lost(5000, 1000, 1)); /* a clock that went back is not silence */
}

/* the names are listed again only when needed: never listed, or a minute passed */
static void test_rm_relist(void **state)
{
	(void)state;
	assert_true(tpc_rm_relist(false, 0, 0, 60000));
	assert_true(tpc_rm_relist(false, 5000, 6000, 60000)); /* a failed first list: again at once */
	assert_false(tpc_rm_relist(true, 1000, 2000, 60000));
	assert_false(tpc_rm_relist(true, 1000, 60999, 60000));
	assert_true(tpc_rm_relist(true, 1000, 61000, 60000));
}

static void test_deadline_tolerations(void **state)
{
	(void)state;
	const int64_t lost = 100000;
	/* the case: tolerate unreachable for 5 s */
	assert_int_equal(deadline("[{\"key\":\"node.kubernetes.io/unreachable\",\"operator\":\"Exists\","
				  "\"effect\":\"NoExecute\",\"tolerationSeconds\":5}]", lost, 300),
			 lost + 5000);
	/* no toleration of it: the default */
	assert_int_equal(deadline("[]", lost, 300), lost + 300000);
	assert_int_equal(deadline("[{\"key\":\"node.kubernetes.io/not-ready\",\"operator\":\"Exists\","
				  "\"effect\":\"NoExecute\",\"tolerationSeconds\":1}]", lost, 300),
			 lost + 300000);
	/* a NoSchedule toleration does not tolerate NoExecute */
	assert_int_equal(deadline("[{\"key\":\"node.kubernetes.io/unreachable\",\"operator\":\"Exists\","
				  "\"effect\":\"NoSchedule\",\"tolerationSeconds\":1}]", lost, 7),
			 lost + 7000);
	/* matching without tolerationSeconds: forever */
	assert_true(deadline("[{\"key\":\"node.kubernetes.io/unreachable\",\"operator\":\"Exists\"}]", lost, 300) ==
		    INT64_MAX);
	/* an empty key with Exists tolerates everything, forever */
	assert_true(deadline("[{\"operator\":\"Exists\"}]", lost, 300) == INT64_MAX);
	/* several: the smallest tolerationSeconds wins, even next to a forever one */
	assert_int_equal(deadline("[{\"operator\":\"Exists\"},"
				  "{\"key\":\"node.kubernetes.io/unreachable\",\"operator\":\"Exists\",\"tolerationSeconds\":30},"
				  "{\"key\":\"node.kubernetes.io/unreachable\",\"effect\":\"NoExecute\",\"operator\":\"Exists\","
				  "\"tolerationSeconds\":8}]",
				  lost, 300),
			 lost + 8000);
	/* negative seconds mean now */
	assert_int_equal(deadline("[{\"key\":\"node.kubernetes.io/unreachable\",\"operator\":\"Exists\","
				  "\"tolerationSeconds\":-4}]", lost, 300),
			 lost);
	/* Equal with a value does not match the value-less taint; Equal without one does */
	assert_int_equal(deadline("[{\"key\":\"node.kubernetes.io/unreachable\",\"operator\":\"Equal\",\"value\":\"x\","
				  "\"tolerationSeconds\":2}]", lost, 60),
			 lost + 60000);
	assert_int_equal(deadline("[{\"key\":\"node.kubernetes.io/unreachable\",\"tolerationSeconds\":2}]", lost, 60),
			 lost + 2000);
	/* an unknown operator matches nothing; a non-integer tolerationSeconds is no limit */
	assert_int_equal(deadline("[{\"key\":\"node.kubernetes.io/unreachable\",\"operator\":\"Gt\","
				  "\"tolerationSeconds\":2}]", lost, 60),
			 lost + 60000);
	assert_true(deadline("[{\"key\":\"node.kubernetes.io/unreachable\",\"operator\":\"Exists\","
			     "\"tolerationSeconds\":\"5\"}]", lost, 60) == INT64_MAX);
	/* huge seconds do not overflow */
	assert_true(deadline("[{\"key\":\"node.kubernetes.io/unreachable\",\"operator\":\"Exists\","
			     "\"tolerationSeconds\":9223372036854775807}]", lost, 60) > lost);
	/* a pod without spec or tolerations gets the default */
	json_t *bare = json_object();
	assert_int_equal(tpc_unreachable_deadline_ms(bare, lost, 0), lost);
	json_decref(bare);
}

static void test_parse_rate(void **state)
{
	(void)state;
	double v = -1;
	assert_int_equal(tpc_parse_rate("10", &v), 0);
	assert_true(v == 10.0);
	assert_int_equal(tpc_parse_rate("0.25", &v), 0);
	assert_true(v == 0.25);
	assert_int_equal(tpc_parse_rate("0", &v), 0);
	assert_true(v == 0.0);
	assert_int_equal(tpc_parse_rate("", &v), E_INVALID);
	assert_int_equal(tpc_parse_rate("-1", &v), E_INVALID);
	assert_int_equal(tpc_parse_rate("10x", &v), E_INVALID);
	assert_int_equal(tpc_parse_rate("nan", &v), E_INVALID);
	assert_int_equal(tpc_parse_rate("inf", &v), E_INVALID);
	assert_int_equal(tpc_parse_rate("1e9", &v), E_INVALID);
	assert_int_equal(tpc_parse_rate(NULL, &v), E_INVALID);
	assert_true(v == 0.0); /* untouched on failure */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rm_lost),
		cmocka_unit_test(test_rm_relist),
		cmocka_unit_test(test_deadline_tolerations),
		cmocka_unit_test(test_parse_rate),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
