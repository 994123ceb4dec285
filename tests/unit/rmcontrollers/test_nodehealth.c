/* The node lifecycle controller's pure decisions: heartbeat staleness, zone states and rates,
 * toleration expiry, taint and condition edits; and the daemonset helpers. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include "testjson.h"
#include <stdlib.h>
#include <string.h>
#include "rmcm.h"
#include "ursa/jsonutil.h"

static void test_staleness(void **state)
{
	(void)state;
	assert_false(node_heartbeat_stale(1000, 11000, 10000));
	assert_true(node_heartbeat_stale(1000, 11001, 10000));
	assert_false(node_heartbeat_stale(5000, 1000, 10000)); /* a probe newer than now is fresh */
}

static void test_ready_and_zone(void **state)
{
	(void)state;
	json_t *n = J("{\"metadata\":{\"labels\":{\"topology.kubernetes.io/zone\":\"az-1\"}},"
		      "\"status\":{\"conditions\":[{\"type\":\"DiskPressure\",\"status\":\"False\"},"
		      "{\"type\":\"Ready\",\"status\":\"True\"}]}}");
	assert_int_equal(node_ready_of(n), NODE_READY_TRUE);
	assert_string_equal(node_zone_of(n), "az-1");
	json_decref(n);
	n = J("{\"metadata\":{\"labels\":{\"failure-domain.beta.kubernetes.io/zone\":\"old\"}},"
	      "\"status\":{\"conditions\":[{\"type\":\"Ready\",\"status\":\"False\"}]}}");
	assert_int_equal(node_ready_of(n), NODE_READY_FALSE);
	assert_string_equal(node_zone_of(n), "old");
	json_decref(n);
	n = J("{\"metadata\":{}}");
	assert_int_equal(node_ready_of(n), NODE_READY_UNKNOWN);
	assert_string_equal(node_zone_of(n), "");
	json_decref(n);
}

static void test_zone_state(void **state)
{
	(void)state;
	assert_int_equal(zone_state_compute(10, 0, 0.55), ZONE_NORMAL);
	assert_int_equal(zone_state_compute(0, 0, 0.55), ZONE_NORMAL);
	assert_int_equal(zone_state_compute(0, 1, 0.55), ZONE_FULL_DISRUPTION);
	assert_int_equal(zone_state_compute(1, 2, 0.55), ZONE_NORMAL); /* at most 2 down never counts */
	assert_int_equal(zone_state_compute(2, 3, 0.55), ZONE_PARTIAL_DISRUPTION); /* 0.6 */
	assert_int_equal(zone_state_compute(4, 3, 0.55), ZONE_NORMAL);            /* 0.43 */
	assert_int_equal(zone_state_compute(45, 55, 0.55), ZONE_PARTIAL_DISRUPTION);
	assert_int_equal(zone_state_compute(46, 54, 0.55), ZONE_NORMAL);
}

static void test_zone_rate(void **state)
{
	(void)state;
	struct eviction_rates r = { 0.1, 0.01, 50 };
	assert_true(zone_eviction_rate(ZONE_NORMAL, 10, false, &r) == 0.1);
	assert_true(zone_eviction_rate(ZONE_FULL_DISRUPTION, 10, false, &r) == 0.1);
	assert_true(zone_eviction_rate(ZONE_PARTIAL_DISRUPTION, 51, false, &r) == 0.01);
	assert_true(zone_eviction_rate(ZONE_PARTIAL_DISRUPTION, 50, false, &r) == 0);
	assert_true(zone_eviction_rate(ZONE_NORMAL, 10, true, &r) == 0);
	assert_true(zone_eviction_rate(ZONE_FULL_DISRUPTION, 10, true, &r) == 0);
}

/* Nodes a zone taints when `queued` nodes wait from t=0 and a pass runs every pass_ms for
 * total_ms (passes at 0, pass_ms, ...), each taking as many as its bucket holds, the bucket
 * made as the controller makes it. */
static int tainted_in(double rate, int64_t period_s, int64_t pass_ms, int64_t total_ms, int queued)
{
	struct token_bucket b;
	token_bucket_init(&b, rate, zone_eviction_burst(rate, period_s), 0);
	int done = 0;
	for (int64_t t = 0; t <= total_ms; t += pass_ms)
		while (done < queued && token_bucket_take(&b, t * 1000))
			done++;
	return done;
}

static void test_zone_burst(void **state)
{
	(void)state;
	assert_true(zone_eviction_burst(0.1, 5) == 1); /* Kubernetes' defaults: one node at a time */
	assert_true(zone_eviction_burst(0, 5) == 1);
	assert_true(zone_eviction_burst(200, 2) == 400);
	assert_true(zone_eviction_burst(0.5, 4) == 2);
	assert_true(zone_eviction_burst(3, 0) == 3); /* a period below 1 s counts as 1 s */

	/* the region simulation: rate 200, monitor period 2 s, 1,000 lost nodes. One pass every
	 * period drains rate * period nodes: all within the third pass (400 + 400 + 200), where a
	 * burst of 1 took one node a pass (~80 after minutes). */
	assert_int_equal(tainted_in(200, 2, 2000, 0, 1000), 400);
	assert_int_equal(tainted_in(200, 2, 2000, 2000, 1000), 800);
	assert_int_equal(tainted_in(200, 2, 2000, 4000, 1000), 1000);
	/* passes more often than the period (the controller's 250 ms ticks) make the same rate */
	int n = tainted_in(200, 2, 250, 3000, 100000);
	assert_true(n >= 400 + 200 * 3 - 1 && n <= 400 + 200 * 3);
	/* and the rate still limits: 0.1/s over 100 s is the first node plus 10 */
	assert_int_equal(tainted_in(0.1, 5, 5000, 100000, 1000), 11);
	assert_int_equal(tainted_in(0.1, 5, 250, 100000, 1000), 11);
	/* a rate of 5/s with 1 s passes: 5 + 5 a second */
	assert_int_equal(tainted_in(5, 1, 1000, 10000, 1000), 55);
	/* rate 0 never taints */
	assert_int_equal(tainted_in(0, 5, 1000, 100000, 10), 0);
}

static void test_zone_bucket_retune(void **state)
{
	(void)state;
	struct token_bucket b;
	token_bucket_init(&b, 200, zone_eviction_burst(200, 2), 0);
	assert_true(b.tokens == 400);
	/* partial disruption: the secondary rate, burst 1, what accrued capped to it */
	zone_bucket_retune(&b, 0.01, 2, 1000000);
	assert_true(b.burst == 1 && b.tokens == 1);
	assert_true(token_bucket_take(&b, 1000000));
	assert_false(token_bucket_take(&b, 2000000));
	/* every zone fully disrupted: rate 0 empties the bucket */
	zone_bucket_retune(&b, 0, 2, 3000000);
	assert_false(token_bucket_take(&b, 100000000));
	/* back to normal: tokens accrue from empty at the rate, up to rate * period */
	zone_bucket_retune(&b, 200, 2, 100000000);
	assert_true(b.burst == 400 && b.tokens == 0);
	int n = 0;
	while (token_bucket_take(&b, 100500000))
		n++;
	assert_int_equal(n, 100);
	while (token_bucket_take(&b, 200000000))
		n++;
	assert_int_equal(n, 500);
}

static void test_toleration_matches(void **state)
{
	(void)state;
	json_t *taint = J("{\"key\":\"node.kubernetes.io/unreachable\",\"effect\":\"NoExecute\"}");
	const char *yes[] = {
		"{\"key\":\"node.kubernetes.io/unreachable\",\"operator\":\"Exists\",\"effect\":\"NoExecute\"}",
		"{\"key\":\"node.kubernetes.io/unreachable\",\"operator\":\"Exists\"}",
		"{\"operator\":\"Exists\"}",
		"{\"key\":\"node.kubernetes.io/unreachable\",\"operator\":\"Equal\",\"value\":\"\"}",
		"{\"key\":\"node.kubernetes.io/unreachable\"}",
	};
	const char *no[] = {
		"{\"key\":\"node.kubernetes.io/not-ready\",\"operator\":\"Exists\"}",
		"{\"key\":\"node.kubernetes.io/unreachable\",\"operator\":\"Exists\",\"effect\":\"NoSchedule\"}",
		"{\"key\":\"node.kubernetes.io/unreachable\",\"operator\":\"Equal\",\"value\":\"x\"}",
		"{\"operator\":\"Equal\"}",
		"{\"key\":\"node.kubernetes.io/unreachable\",\"operator\":\"Bogus\"}",
	};
	for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
		json_t *t = J(yes[i]);
		if (!toleration_matches(t, taint))
			fail_msg("should match: %s", yes[i]);
		json_decref(t);
	}
	for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++) {
		json_t *t = J(no[i]);
		if (toleration_matches(t, taint))
			fail_msg("should not match: %s", no[i]);
		json_decref(t);
	}
	json_decref(taint);
}

/* Taint added at 2026-01-01T00:00:00Z = 1767225600 s. */
#define T0 1767225600000LL

static void test_eviction_time(void **state)
{
	(void)state;
	json_t *taints = J("[{\"key\":\"node.kubernetes.io/unreachable\",\"effect\":\"NoExecute\","
			   "\"timeAdded\":\"2026-01-01T00:00:00Z\"},"
			   "{\"key\":\"other\",\"effect\":\"NoSchedule\"}]");
	json_t *plain = J("{\"spec\":{}}");
	assert_int_equal(pod_eviction_time_ms(plain, taints, 300, 0), T0 + 300000);
	json_t *five = J("{\"spec\":{\"tolerations\":[{\"key\":\"node.kubernetes.io/unreachable\","
			 "\"operator\":\"Exists\",\"effect\":\"NoExecute\",\"tolerationSeconds\":5}]}}");
	assert_int_equal(pod_eviction_time_ms(five, taints, 300, 0), T0 + 5000);
	json_t *two = J("{\"spec\":{\"tolerations\":[{\"operator\":\"Exists\",\"tolerationSeconds\":60},"
			"{\"key\":\"node.kubernetes.io/unreachable\",\"tolerationSeconds\":7}]}}");
	assert_int_equal(pod_eviction_time_ms(two, taints, 300, 0), T0 + 7000);
	json_t *forever = J("{\"spec\":{\"tolerations\":[{\"operator\":\"Exists\"}]}}");
	assert_int_equal(pod_eviction_time_ms(forever, taints, 300, 0), INT64_MAX);
	json_t *neg = J("{\"spec\":{\"tolerations\":[{\"operator\":\"Exists\",\"tolerationSeconds\":-3}]}}");
	assert_int_equal(pod_eviction_time_ms(neg, taints, 300, 0), T0);
	/* NoSchedule taints never evict */
	json_t *soft = J("[{\"key\":\"x\",\"effect\":\"NoSchedule\"}]");
	assert_int_equal(pod_eviction_time_ms(plain, soft, 300, 0), INT64_MAX);
	/* a foreign NoExecute taint nobody tolerates evicts now; no timeAdded counts from now */
	json_t *foreign = J("[{\"key\":\"x\",\"effect\":\"NoExecute\"}]");
	assert_int_equal(pod_eviction_time_ms(plain, foreign, 300, 12345), 0);
	json_t *nr = J("[{\"key\":\"node.kubernetes.io/not-ready\",\"effect\":\"NoExecute\"}]");
	assert_int_equal(pod_eviction_time_ms(plain, nr, 30, 12345), 12345 + 30000);
	json_decref(taints);
	json_decref(plain);
	json_decref(five);
	json_decref(two);
	json_decref(forever);
	json_decref(neg);
	json_decref(soft);
	json_decref(foreign);
	json_decref(nr);
}

static void test_taints_replace(void **state)
{
	(void)state;
	json_t *taints = J("[{\"key\":\"a\",\"effect\":\"NoSchedule\"},"
			   "{\"key\":\"node.kubernetes.io/not-ready\",\"effect\":\"NoExecute\"},"
			   "{\"key\":\"node.kubernetes.io/unreachable\",\"effect\":\"NoSchedule\"}]");
	assert_true(taints_have(taints, TAINT_NOT_READY, "NoExecute"));
	assert_false(taints_have(taints, TAINT_UNREACHABLE, "NoExecute"));
	json_t *t = taints_replace(taints, TAINT_UNREACHABLE, 1767225600);
	assert_int_equal(json_array_size(t), 3);
	assert_false(taints_have(t, TAINT_NOT_READY, "NoExecute"));
	assert_true(taints_have(t, TAINT_UNREACHABLE, "NoExecute"));
	assert_true(taints_have(t, TAINT_UNREACHABLE, "NoSchedule")); /* not ours: kept */
	assert_string_equal(json_str(json_array_get(t, 2), "timeAdded"), "2026-01-01T00:00:00Z");
	json_t *none = taints_replace(t, NULL, 0);
	assert_int_equal(json_array_size(none), 2);
	assert_false(taints_have(none, TAINT_UNREACHABLE, "NoExecute"));
	json_t *empty = taints_replace(NULL, NULL, 0);
	assert_true(json_is_array(empty) && json_array_size(empty) == 0);
	assert_null(node_wanted_taint(NODE_READY_TRUE));
	assert_string_equal(node_wanted_taint(NODE_READY_FALSE), TAINT_NOT_READY);
	assert_string_equal(node_wanted_taint(NODE_READY_UNKNOWN), TAINT_UNREACHABLE);
	json_decref(taints);
	json_decref(t);
	json_decref(none);
	json_decref(empty);
}

static void test_conditions_unknown(void **state)
{
	(void)state;
	json_t *n = J("{\"status\":{\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\","
		      "\"lastTransitionTime\":\"2020-01-01T00:00:00Z\",\"lastHeartbeatTime\":\"x\"},"
		      "{\"type\":\"NetworkUnavailable\",\"status\":\"False\"}]}}");
	json_t *c = conditions_unknown(n, 1767225600);
	assert_int_equal(json_array_size(c), 2);
	json_t *r = json_array_get(c, 0);
	assert_string_equal(json_str(r, "status"), "Unknown");
	assert_string_equal(json_str(r, "reason"), "NodeStatusUnknown");
	assert_string_equal(json_str(r, "lastTransitionTime"), "2026-01-01T00:00:00Z");
	assert_string_equal(json_str(r, "lastHeartbeatTime"), "x"); /* the kubelet's, kept */
	assert_string_equal(json_str(json_array_get(c, 1), "status"), "False");
	/* the source is not modified */
	assert_string_equal(json_str(json_array_get(json_path(n, "status.conditions"), 0), "status"), "True");
	json_t *again = J("{\"status\":{\"conditions\":[]}}");
	json_object_set(json_path(again, "status"), "conditions", c);
	json_t *c2 = conditions_unknown(again, 1767229200);
	assert_string_equal(json_str(json_array_get(c2, 0), "lastTransitionTime"), "2026-01-01T00:00:00Z");
	json_t *bare = J("{}");
	json_t *c3 = conditions_unknown(bare, 1767225600);
	assert_int_equal(json_array_size(c3), 1);
	assert_string_equal(json_str(json_array_get(c3, 0), "type"), "Ready");
	assert_int_equal(node_ready_of(n), NODE_READY_TRUE);
	json_decref(n);
	json_decref(c);
	json_decref(again);
	json_decref(c2);
	json_decref(bare);
	json_decref(c3);
}

static void test_ds_wants_node(void **state)
{
	(void)state;
	json_t *ds = J("{\"metadata\":{\"name\":\"agent\",\"namespace\":\"kube-system\",\"uid\":\"u1\"},"
		       "\"spec\":{\"template\":{\"metadata\":{\"labels\":{\"app\":\"agent\"}},"
		       "\"spec\":{\"nodeSelector\":{\"role\":\"edge\"},\"containers\":[{\"name\":\"c\"}]}}}}");
	json_t *match = J("{\"metadata\":{\"name\":\"n1\",\"labels\":{\"role\":\"edge\",\"x\":\"y\"}},"
			  "\"spec\":{\"taints\":[{\"key\":\"node.kubernetes.io/unreachable\",\"effect\":\"NoExecute\"},"
			  "{\"key\":\"soft\",\"effect\":\"PreferNoSchedule\"}]}}");
	json_t *other = J("{\"metadata\":{\"name\":\"n2\",\"labels\":{\"role\":\"core\"}}}");
	json_t *tainted = J("{\"metadata\":{\"name\":\"n3\",\"labels\":{\"role\":\"edge\"}},"
			    "\"spec\":{\"taints\":[{\"key\":\"ursa.io/hollow\",\"value\":\"true\",\"effect\":\"NoSchedule\"}]}}");
	assert_true(ds_wants_node(ds, match));
	assert_false(ds_wants_node(ds, other));
	assert_false(ds_wants_node(ds, tainted));
	json_t *tols = J("[{\"key\":\"ursa.io/hollow\",\"operator\":\"Exists\"}]");
	json_object_set_new(json_path(ds, "spec.template.spec"), "tolerations", tols);
	assert_true(ds_wants_node(ds, tainted));

	json_t *pod = ds_pod_new(ds, "n1");
	assert_string_equal(json_path_str(pod, "spec.nodeName"), "n1");
	assert_string_equal(json_path_str(pod, "metadata.namespace"), "kube-system");
	assert_string_equal(json_path_str(pod, "metadata.labels.app"), "agent");
	json_t *owner = json_array_get(json_path(pod, "metadata.ownerReferences"), 0);
	assert_string_equal(json_str(owner, "uid"), "u1");
	assert_true(json_is_true(json_object_get(owner, "controller")));
	/* the template's own toleration is kept and the standard daemon ones added */
	assert_true(json_array_size(json_path(pod, "spec.tolerations")) > 4);
	assert_null(json_path(ds, "spec.template.spec.nodeName")); /* template untouched */
	json_decref(pod);
	json_decref(ds);
	json_decref(match);
	json_decref(other);
	json_decref(tainted);
}

static void test_ds_pod_name(void **state)
{
	(void)state;
	char *a = ds_pod_name("agent", "node-1"), *b = ds_pod_name("agent", "node-2"), *a2 = ds_pod_name("agent", "node-1");
	assert_string_equal(a, a2);
	assert_string_not_equal(a, b);
	assert_int_equal(strncmp(a, "agent-", 6), 0);
	assert_int_equal(strlen(a), 6 + 8);
	char longname[100];
	memset(longname, 'x', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	longname[53] = '-';
	char *l = ds_pod_name(longname, "n");
	assert_true(strlen(l) <= 63);
	assert_true(strstr(l, "--") == NULL);
	free(a);
	free(b);
	free(a2);
	free(l);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_staleness),
		cmocka_unit_test(test_ready_and_zone),
		cmocka_unit_test(test_zone_state),
		cmocka_unit_test(test_zone_rate),
		cmocka_unit_test(test_zone_burst),
		cmocka_unit_test(test_zone_bucket_retune),
		cmocka_unit_test(test_toleration_matches),
		cmocka_unit_test(test_eviction_time),
		cmocka_unit_test(test_taints_replace),
		cmocka_unit_test(test_conditions_unknown),
		cmocka_unit_test(test_ds_wants_node),
		cmocka_unit_test(test_ds_pod_name),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
