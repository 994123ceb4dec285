/* spec.podFailurePolicy matching of a failed pod (job_pod_failure_match): exit codes with In and
 * NotIn, containerName, init containers, pod conditions, rule order, and the FailJob messages. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>
#include <jansson.h>
#include "batch.h"

static json_t *parse(const char *s)
{
	json_error_t e;
	json_t *v = json_loads(s, 0, &e);
	assert_non_null(v);
	return v;
}

/* A failed pod "ns/p-1" whose container "main" exited with code (and sidecar "side" with 0). */
static json_t *pod_exit(int code)
{
	char s[1024];
	snprintf(s, sizeof(s),
		 "{\"metadata\":{\"name\":\"p-1\",\"namespace\":\"ns\"},\"status\":{\"phase\":\"Failed\","
		 "\"containerStatuses\":[{\"name\":\"side\",\"state\":{\"terminated\":{\"exitCode\":0}}},"
		 "{\"name\":\"main\",\"state\":{\"terminated\":{\"exitCode\":%d}}}]}}",
		 code);
	return parse(s);
}

static enum pfp_action match(const char *policy, const json_t *pod, struct buf *msg)
{
	json_t *p = parse(policy);
	enum pfp_action a = job_pod_failure_match(p, pod, msg);
	json_decref(p);
	return a;
}

static void test_exit_codes(void **state)
{
	(void)state;
	json_t *pod = pod_exit(42);
	struct buf msg = BUF_INIT;
	const char *failjob = "{\"rules\":[{\"action\":\"FailJob\",\"onExitCodes\":{\"operator\":\"In\",\"values\":[42]}}]}";
	assert_int_equal(match(failjob, pod, &msg), PFP_FAIL_JOB);
	assert_string_equal(buf_cstr(&msg), "Container main for pod ns/p-1 failed with exit code 42 matching FailJob rule at index 0");
	buf_reset(&msg);
	assert_int_equal(match("{\"rules\":[{\"action\":\"FailJob\",\"onExitCodes\":{\"operator\":\"In\",\"values\":[1,2]}}]}",
			       pod, &msg),
			 PFP_NO_MATCH);
	assert_int_equal(msg.len, 0);
	/* NotIn: 42 is not among 1,2; the sidecar's 0 never matches */
	assert_int_equal(match("{\"rules\":[{\"action\":\"Ignore\",\"onExitCodes\":{\"operator\":\"NotIn\",\"values\":[1,2]}}]}",
			       pod, NULL),
			 PFP_IGNORE);
	assert_int_equal(match("{\"rules\":[{\"action\":\"Ignore\",\"onExitCodes\":{\"operator\":\"NotIn\",\"values\":[42]}}]}",
			       pod, NULL),
			 PFP_NO_MATCH);
	/* containerName narrows the match */
	assert_int_equal(match("{\"rules\":[{\"action\":\"Count\",\"onExitCodes\":{\"containerName\":\"side\","
			       "\"operator\":\"NotIn\",\"values\":[5]}}]}", pod, NULL),
			 PFP_NO_MATCH);
	assert_int_equal(match("{\"rules\":[{\"action\":\"Count\",\"onExitCodes\":{\"containerName\":\"main\","
			       "\"operator\":\"In\",\"values\":[3,42]}}]}", pod, NULL),
			 PFP_COUNT);
	/* an unknown operator or action matches nothing */
	assert_int_equal(match("{\"rules\":[{\"action\":\"FailJob\",\"onExitCodes\":{\"operator\":\"Has\",\"values\":[42]}}]}",
			       pod, NULL),
			 PFP_NO_MATCH);
	assert_int_equal(match("{\"rules\":[{\"action\":\"Boom\",\"onExitCodes\":{\"operator\":\"In\",\"values\":[42]}}]}",
			       pod, NULL),
			 PFP_NO_MATCH);
	/* no policy, no rules */
	assert_int_equal(job_pod_failure_match(NULL, pod, NULL), PFP_NO_MATCH);
	assert_int_equal(match("{}", pod, NULL), PFP_NO_MATCH);
	buf_release(&msg);
	json_decref(pod);
}

static void test_rule_order(void **state)
{
	(void)state;
	json_t *pod = pod_exit(3);
	struct buf msg = BUF_INIT;
	const char *p = "{\"rules\":["
			"{\"action\":\"Ignore\",\"onExitCodes\":{\"operator\":\"In\",\"values\":[1]}},"
			"{\"action\":\"FailJob\",\"onExitCodes\":{\"operator\":\"In\",\"values\":[3]}},"
			"{\"action\":\"Ignore\",\"onExitCodes\":{\"operator\":\"In\",\"values\":[3]}}]}";
	assert_int_equal(match(p, pod, &msg), PFP_FAIL_JOB);
	assert_string_equal(buf_cstr(&msg), "Container main for pod ns/p-1 failed with exit code 3 matching FailJob rule at index 1");
	buf_release(&msg);
	json_decref(pod);
}

static void test_init_containers_and_running(void **state)
{
	(void)state;
	json_t *pod = parse("{\"metadata\":{\"name\":\"p\",\"namespace\":\"d\"},\"status\":{"
			    "\"containerStatuses\":[{\"name\":\"main\",\"state\":{\"waiting\":{}}}],"
			    "\"initContainerStatuses\":[{\"name\":\"init\",\"state\":{\"terminated\":{\"exitCode\":7}}}]}}");
	struct buf msg = BUF_INIT;
	assert_int_equal(match("{\"rules\":[{\"action\":\"FailJob\",\"onExitCodes\":{\"operator\":\"In\",\"values\":[7]}}]}",
			       pod, &msg),
			 PFP_FAIL_JOB);
	assert_string_equal(buf_cstr(&msg), "Container init for pod d/p failed with exit code 7 matching FailJob rule at index 0");
	buf_release(&msg);
	json_decref(pod);
}

static void test_conditions(void **state)
{
	(void)state;
	json_t *pod = parse("{\"metadata\":{\"name\":\"p\",\"namespace\":\"d\"},\"status\":{\"phase\":\"Failed\","
			    "\"conditions\":[{\"type\":\"Ready\",\"status\":\"False\"},"
			    "{\"type\":\"DisruptionTarget\",\"status\":\"True\"}]}}");
	struct buf msg = BUF_INIT;
	assert_int_equal(match("{\"rules\":[{\"action\":\"Ignore\",\"onPodConditions\":[{\"type\":\"DisruptionTarget\","
			       "\"status\":\"True\"}]}]}", pod, NULL),
			 PFP_IGNORE);
	assert_int_equal(match("{\"rules\":[{\"action\":\"Ignore\",\"onPodConditions\":[{\"type\":\"DisruptionTarget\","
			       "\"status\":\"False\"}]}]}", pod, NULL),
			 PFP_NO_MATCH);
	assert_int_equal(match("{\"rules\":[{\"action\":\"FailJob\",\"onPodConditions\":[{\"type\":\"Other\",\"status\":"
			       "\"True\"},{\"type\":\"DisruptionTarget\",\"status\":\"True\"}]}]}", pod, &msg),
			 PFP_FAIL_JOB);
	assert_string_equal(buf_cstr(&msg), "Pod d/p has condition DisruptionTarget matching FailJob rule at index 0");
	/* a rule on exit codes ignores conditions (the pod has no terminated container) */
	assert_int_equal(match("{\"rules\":[{\"action\":\"Ignore\",\"onExitCodes\":{\"operator\":\"NotIn\",\"values\":[1]},"
			       "\"onPodConditions\":[{\"type\":\"DisruptionTarget\",\"status\":\"True\"}]}]}", pod, NULL),
			 PFP_NO_MATCH);
	buf_release(&msg);
	json_decref(pod);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_exit_codes),
		cmocka_unit_test(test_rule_order),
		cmocka_unit_test(test_init_containers_and_running),
		cmocka_unit_test(test_conditions),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
