/* Pod status built from runtime container statuses: phase, conditions, container states,
 * IPs, and stability (an unchanged pod yields an equal status, so nothing is sent). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>
#include "podlogic.h"
#include "ursa/jsonutil.h"

#define T0 1767225600 /* 2026-01-01T00:00:00Z */

static json_t *pod(const char *restart)
{
	json_t *p = json_pack("{s:{s:s, s:s, s:s, s:s}, s:{s:s, s:[{s:s, s:s}, {s:s, s:s}]}, s:{s:s, s:s}}",
			      "metadata", "name", "p", "namespace", "default", "tenant", "acme", "uid", "u1", "spec",
			      "restartPolicy", restart, "containers", "name", "a", "image", "img-a", "name", "b", "image",
			      "img-b", "status", "phase", "Pending", "qosClass", "BestEffort");
	return p;
}

static struct rt_container_status running(const char *name, int64_t started)
{
	struct rt_container_status s;
	memset(&s, 0, sizeof(s));
	snprintf(s.name, sizeof(s.name), "%s", name);
	s.state = RT_RUNNING;
	s.started_at = started;
	s.ready = true;
	snprintf(s.container_id, sizeof(s.container_id), "process://%s-1", name);
	snprintf(s.image_id, sizeof(s.image_id), "process://sha256-%s", name);
	return s;
}

static struct rt_container_status exited(const char *name, int code)
{
	struct rt_container_status s = running(name, T0);
	s.state = RT_TERMINATED;
	s.ready = false;
	s.exit_code = code;
	s.finished_at = T0 + 5;
	snprintf(s.reason, sizeof(s.reason), "%s", code ? "Error" : "Completed");
	return s;
}

static const char *cond(const json_t *st, const char *type)
{
	size_t i;
	const json_t *c;
	json_array_foreach(json_object_get(st, "conditions"), i, c)
		if (strcmp(json_str(c, "type"), type) == 0)
			return json_str(c, "status");
	return NULL;
}

static json_t *build(const json_t *p, const struct rt_container_status *cs, size_t n, int64_t now)
{
	struct kl_status_in in = { .cs = cs, .ncs = n, .host_ip = "10.0.0.5", .now = now };
	return kl_pod_status_build(p, &in);
}

static void test_running_pod(void **state)
{
	json_t *p = pod("Always");
	struct rt_container_status cs[2] = { running("b", T0 + 1), running("a", T0) };  /* any order */
	json_t *st = build(p, cs, 2, T0 + 2);
	assert_string_equal(json_str(st, "phase"), "Running");
	assert_string_equal(json_str(st, "podIP"), "10.0.0.5");
	assert_string_equal(json_str(st, "hostIP"), "10.0.0.5");
	assert_string_equal(json_path_str(json_array_get(json_object_get(st, "podIPs"), 0), "ip"), "10.0.0.5");
	assert_string_equal(json_str(st, "startTime"), "2026-01-01T00:00:02Z");
	assert_string_equal(json_str(st, "qosClass"), "BestEffort");
	assert_string_equal(cond(st, "Ready"), "True");
	assert_string_equal(cond(st, "ContainersReady"), "True");
	assert_string_equal(cond(st, "Initialized"), "True");
	assert_string_equal(cond(st, "PodScheduled"), "True");
	assert_string_equal(cond(st, "PodReadyToStartContainers"), "True");
	const json_t *a = json_array_get(json_object_get(st, "containerStatuses"), 0);
	assert_string_equal(json_str(a, "name"), "a");  /* spec order */
	assert_string_equal(json_str(a, "image"), "img-a");
	assert_string_equal(json_str(a, "imageID"), "process://sha256-a");
	assert_string_equal(json_str(a, "containerID"), "process://a-1");
	assert_true(json_is_true(json_object_get(a, "ready")));
	assert_true(json_is_true(json_object_get(a, "started")));
	assert_int_equal(json_integer_value(json_object_get(a, "restartCount")), 0);
	assert_string_equal(json_path_str(a, "state.running.startedAt"), "2026-01-01T00:00:00Z");
	assert_int_equal(json_object_size(json_object_get(a, "lastState")), 0);
	json_decref(st);
	json_decref(p);
}

static void test_pending_without_runtime_status(void **state)
{
	json_t *p = pod("Always");
	struct rt_container_status cs[1] = { running("a", T0) };
	json_t *st = build(p, cs, 1, T0);  /* b not known yet */
	assert_string_equal(json_str(st, "phase"), "Pending");
	assert_string_equal(cond(st, "Ready"), "False");
	const json_t *b = json_array_get(json_object_get(st, "containerStatuses"), 1);
	assert_string_equal(json_path_str(b, "state.waiting.reason"), "ContainerCreating");
	assert_string_equal(json_str(b, "imageID"), "");  /* present even when empty */
	size_t i;
	const json_t *c;
	json_array_foreach(json_object_get(st, "conditions"), i, c)
		if (strcmp(json_str(c, "type"), "ContainersReady") == 0)
			assert_string_equal(json_str(c, "message"), "containers with unready status: [b]");
	json_decref(st);
	json_decref(p);
}

static void test_terminal_phases(void **state)
{
	json_t *never = pod("Never"), *onfail = pod("OnFailure"), *always = pod("Always");
	struct rt_container_status ok[2] = { exited("a", 0), exited("b", 0) };
	struct rt_container_status bad[2] = { exited("a", 0), exited("b", 3) };
	json_t *st = build(never, ok, 2, T0 + 9);
	assert_string_equal(json_str(st, "phase"), "Succeeded");
	assert_string_equal(cond(st, "Ready"), "False");
	const json_t *a = json_array_get(json_object_get(st, "containerStatuses"), 0);
	assert_int_equal(json_integer_value(json_path(a, "state.terminated.exitCode")), 0);
	assert_string_equal(json_path_str(a, "state.terminated.reason"), "Completed");
	assert_string_equal(json_path_str(a, "state.terminated.finishedAt"), "2026-01-01T00:00:05Z");
	json_decref(st);
	st = build(never, bad, 2, T0 + 9);
	assert_string_equal(json_str(st, "phase"), "Failed");
	json_decref(st);
	st = build(onfail, bad, 2, T0 + 9);
	assert_string_equal(json_str(st, "phase"), "Running");  /* will be restarted */
	json_decref(st);
	st = build(always, ok, 2, T0 + 9);
	assert_string_equal(json_str(st, "phase"), "Running");
	json_decref(st);
	json_decref(never);
	json_decref(onfail);
	json_decref(always);
}

static void test_backoff_and_last_state(void **state)
{
	json_t *p = pod("Always");
	struct rt_container_status cs[2] = { running("a", T0), running("b", T0) };
	cs[1].state = RT_WAITING;
	cs[1].ready = false;
	snprintf(cs[1].reason, sizeof(cs[1].reason), "CrashLoopBackOff");
	snprintf(cs[1].message, sizeof(cs[1].message), "back-off 10s");
	cs[1].restart_count = 2;
	cs[1].has_last = true;
	cs[1].last_exit_code = 1;
	snprintf(cs[1].last_reason, sizeof(cs[1].last_reason), "Error");
	cs[1].last_finished_at = T0 + 3;
	json_t *st = build(p, cs, 2, T0 + 4);
	assert_string_equal(json_str(st, "phase"), "Running");
	const json_t *b = json_array_get(json_object_get(st, "containerStatuses"), 1);
	assert_string_equal(json_path_str(b, "state.waiting.reason"), "CrashLoopBackOff");
	assert_string_equal(json_path_str(b, "state.waiting.message"), "back-off 10s");
	assert_int_equal(json_integer_value(json_object_get(b, "restartCount")), 2);
	assert_int_equal(json_integer_value(json_path(b, "lastState.terminated.exitCode")), 1);
	assert_false(json_is_true(json_object_get(b, "started")));
	json_decref(st);
	json_decref(p);
}

static void test_stable_and_transition_times(void **state)
{
	json_t *p = pod("Always");
	struct rt_container_status cs[2] = { running("a", T0), running("b", T0) };
	json_t *st1 = build(p, cs, 2, T0 + 10);
	json_object_set(p, "status", st1);
	/* same runtime state later: an equal status, so the kubelet sends nothing */
	json_t *st2 = build(p, cs, 2, T0 + 99);
	assert_true(json_equal(st1, st2));
	/* b stops being ready: Ready flips with a new transition time, Initialized keeps its own */
	cs[1].ready = false;
	json_t *st3 = build(p, cs, 2, T0 + 200);
	assert_false(json_equal(st2, st3));
	assert_string_equal(cond(st3, "Ready"), "False");
	size_t i;
	const json_t *c;
	json_array_foreach(json_object_get(st3, "conditions"), i, c) {
		const char *ltt = json_str(c, "lastTransitionTime");
		if (strcmp(json_str(c, "type"), "Ready") == 0)
			assert_string_equal(ltt, "2026-01-01T00:03:20Z");
		if (strcmp(json_str(c, "type"), "Initialized") == 0)
			assert_string_equal(ltt, "2026-01-01T00:00:10Z");
	}
	assert_string_equal(json_str(st3, "startTime"), "2026-01-01T00:00:10Z");
	json_decref(st1);
	json_decref(st2);
	json_decref(st3);
	json_decref(p);
}

static void test_rejected_pod(void **state)
{
	json_t *p = pod("Always");
	struct kl_status_in in = { .host_ip = "10.0.0.5", .now = T0, .fail_reason = "OutOfcpu",
				   .fail_message = "Pod was rejected: Node didn't have enough resource: cpu" };
	json_t *st = kl_pod_status_build(p, &in);
	assert_string_equal(json_str(st, "phase"), "Failed");
	assert_string_equal(json_str(st, "reason"), "OutOfcpu");
	assert_non_null(strstr(json_str(st, "message"), "cpu"));
	assert_string_equal(json_str(st, "hostIP"), "10.0.0.5");
	assert_null(json_object_get(st, "podIP"));
	json_decref(st);
	/* a pod that runs after all (e.g. a re-created one) drops reason and message */
	json_object_set_new(p, "status", json_pack("{s:s, s:s, s:s}", "phase", "Pending", "reason", "X", "message", "y"));
	struct rt_container_status cs[2] = { running("a", T0), running("b", T0) };
	st = build(p, cs, 2, T0);
	assert_null(json_object_get(st, "reason"));
	assert_null(json_object_get(st, "message"));
	json_decref(st);
	json_decref(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_running_pod),
		cmocka_unit_test(test_pending_without_runtime_status),
		cmocka_unit_test(test_terminal_phases),
		cmocka_unit_test(test_backoff_and_last_state),
		cmocka_unit_test(test_stable_and_transition_times),
		cmocka_unit_test(test_rejected_pod),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
