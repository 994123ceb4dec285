/* pod_qos_class as Kubernetes computes it: sums of cpu and memory requests and limits over init
 * containers and containers; BestEffort with none, Guaranteed when every container limits both
 * and requests equal limits, Burstable otherwise. (The API server defaults requests from limits
 * before this runs; these pods are given as stored.) */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>
#include <jansson.h>
#include "ursa/kinds.h"

static void expect_qos(const char *spec, const char *want)
{
	json_error_t e;
	json_t *pod = json_pack("{s:o}", "spec", json_loads(spec, 0, &e));
	if (!pod)
		fail_msg("bad test JSON: %s", spec);
	const char *got = pod_qos_class(pod);
	if (strcmp(got, want) != 0)
		fail_msg("%s: got %s, want %s", spec, got, want);
	json_decref(pod);
}

#define LIM(c, m) "\"limits\":{\"cpu\":\"" c "\",\"memory\":\"" m "\"}"
#define REQ(c, m) "\"requests\":{\"cpu\":\"" c "\",\"memory\":\"" m "\"}"

static void test_best_effort(void **state)
{
	(void)state;
	expect_qos("{\"containers\":[{\"name\":\"a\"},{\"name\":\"b\",\"resources\":{}}]}", "BestEffort");
	/* zero quantities and other resources do not count */
	expect_qos("{\"containers\":[{\"name\":\"a\",\"resources\":{\"requests\":{\"cpu\":\"0\","
		   "\"ephemeral-storage\":\"1Gi\"}}}]}", "BestEffort");
}

static void test_guaranteed(void **state)
{
	(void)state;
	expect_qos("{\"containers\":[{\"name\":\"a\",\"resources\":{" LIM("1", "1Gi") "," REQ("1000m", "1024Mi") "}}]}",
		   "Guaranteed");
	/* an init container held to the same rule */
	expect_qos("{\"initContainers\":[{\"name\":\"i\",\"resources\":{" LIM("100m", "64Mi") "," REQ("100m", "64Mi")
		   "}}],\"containers\":[{\"name\":\"a\",\"resources\":{" LIM("1", "1Gi") "," REQ("1", "1Gi") "}}]}",
		   "Guaranteed");
}

static void test_burstable(void **state)
{
	(void)state;
	/* request below the limit */
	expect_qos("{\"containers\":[{\"name\":\"a\",\"resources\":{" LIM("1", "1Gi") "," REQ("500m", "1Gi") "}}]}",
		   "Burstable");
	/* one container without limits */
	expect_qos("{\"containers\":[{\"name\":\"a\",\"resources\":{" LIM("1", "1Gi") "," REQ("1", "1Gi")
		   "}},{\"name\":\"b\"}]}", "Burstable");
	/* only the init container asks for anything */
	expect_qos("{\"initContainers\":[{\"name\":\"i\",\"resources\":{" REQ("100m", "64Mi") "}}],"
		   "\"containers\":[{\"name\":\"a\"}]}", "Burstable");
	/* a cpu limit only */
	expect_qos("{\"containers\":[{\"name\":\"a\",\"resources\":{\"limits\":{\"cpu\":\"1\"},"
		   "\"requests\":{\"cpu\":\"1\"}}}]}", "Burstable");
	/* the init container is Burstable, the rest Guaranteed */
	expect_qos("{\"initContainers\":[{\"name\":\"i\",\"resources\":{" LIM("200m", "64Mi") "," REQ("100m", "64Mi")
		   "}}],\"containers\":[{\"name\":\"a\",\"resources\":{" LIM("1", "1Gi") "," REQ("1", "1Gi") "}}]}",
		   "Burstable");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_best_effort),
		cmocka_unit_test(test_guaranteed),
		cmocka_unit_test(test_burstable),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
