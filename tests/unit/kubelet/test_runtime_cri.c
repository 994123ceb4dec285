/* The CRI runtime's pure helpers: requests/limits to CRI linux resources, CRI statuses to the
 * kubelet's, the back-off; and the pod-spec fields only the CRI runtime uses (rtpod.c), and the
 * pod IP in the pod status (podstatus.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>
#include "podlogic.h"
#include "runtime_cri.h"
#include "ursa/errors.h"
#include "ursa/jsonutil.h"

static Runtime__V1__LinuxContainerResources resources(long long req_m, long long lim_m, long long mem)
{
	struct rt_resources r = { .cpu_request_m = req_m, .cpu_limit_m = lim_m, .mem_limit = mem };
	Runtime__V1__LinuxContainerResources out = RUNTIME__V1__LINUX_CONTAINER_RESOURCES__INIT;
	cri_linux_resources(&r, &out);
	return out;
}

static void test_resources(void **state)
{
	(void)state;
	Runtime__V1__LinuxContainerResources r = resources(0, 0, 0);
	assert_int_equal(r.cpu_shares, 2); /* best effort: the minimum */
	assert_int_equal(r.cpu_quota, 0);
	assert_int_equal(r.cpu_period, 0);
	assert_int_equal(r.memory_limit_in_bytes, 0);
	r = resources(250, 500, 32LL << 20);
	assert_int_equal(r.cpu_shares, 256);
	assert_int_equal(r.cpu_period, 100000);
	assert_int_equal(r.cpu_quota, 50000);
	assert_int_equal(r.memory_limit_in_bytes, 32LL << 20);
	r = resources(2000, 2000, 0);
	assert_int_equal(r.cpu_shares, 2048);
	assert_int_equal(r.cpu_quota, 200000);
	r = resources(1, 1, 0); /* 1m: shares floor 2, quota floor 1000us */
	assert_int_equal(r.cpu_shares, 2);
	assert_int_equal(r.cpu_quota, 1000);
	r = resources(1000000, 0, 0);
	assert_int_equal(r.cpu_shares, 262144);
}

static void test_term_from_status(void **state)
{
	(void)state;
	Runtime__V1__ContainerStatus s = RUNTIME__V1__CONTAINER_STATUS__INIT;
	struct cri_term t;
	s.state = RUNTIME__V1__CONTAINER_STATE__CONTAINER_EXITED;
	s.exit_code = 137;
	s.reason = "OOMKilled";
	s.started_at = 1767225600LL * 1000000000 + 5;
	s.finished_at = 1767225610LL * 1000000000;
	cri_term_from_status(&s, &t);
	assert_string_equal(t.reason, "OOMKilled");
	assert_int_equal(t.exit_code, 137);
	assert_int_equal(t.started_at, 1767225600);
	assert_int_equal(t.finished_at, 1767225610);
	s.reason = "";
	s.exit_code = 0;
	cri_term_from_status(&s, &t);
	assert_string_equal(t.reason, "Completed");
	s.exit_code = 3;
	s.started_at = 0;
	cri_term_from_status(&s, &t);
	assert_string_equal(t.reason, "Error");
	assert_int_equal(t.started_at, 0);
}

static void test_cont_status(void **state)
{
	(void)state;
	struct rt_pod pod = { .uid = "u1", .name = "web", .ns = "default", .tenant = "acme" };
	struct cri_cont c;
	struct rt_container_status s;
	memset(&c, 0, sizeof(c));
	snprintf(c.name, sizeof(c.name), "app");
	c.phase = CP_WAITING;
	snprintf(c.reason, sizeof(c.reason), "ErrImagePull");
	snprintf(c.message, sizeof(c.message), "not found");
	cri_cont_status(&c, &pod, "containerd", &s);
	assert_int_equal(s.state, RT_WAITING);
	assert_string_equal(s.reason, "ErrImagePull");
	assert_string_equal(s.message, "not found");
	assert_string_equal(s.container_id, "");
	assert_int_equal(s.restart_count, 0);

	char id[] = "abc123";
	c.id = id;
	c.launches = 1;
	c.phase = CP_RUNNING;
	c.cri_state = RUNTIME__V1__CONTAINER_STATE__CONTAINER_CREATED;
	cri_cont_status(&c, &pod, "containerd", &s);
	assert_int_equal(s.state, RT_WAITING);
	assert_string_equal(s.reason, "ContainerCreating");
	assert_string_equal(s.container_id, "containerd://abc123");
	c.cri_state = RUNTIME__V1__CONTAINER_STATE__CONTAINER_RUNNING;
	c.started_at = 1767225600;
	cri_cont_status(&c, &pod, "containerd", &s);
	assert_int_equal(s.state, RT_RUNNING);
	assert_true(s.ready);
	assert_int_equal(s.started_at, 1767225600);
	assert_false(s.has_last);

	/* crashed once, waiting to restart: CrashLoopBackOff with the last termination */
	c.phase = CP_BACKOFF;
	c.has_term = true;
	c.term = (struct cri_term){ .exit_code = 1, .reason = "Error", .started_at = 10, .finished_at = 20 };
	c.backoff_ms = 10000;
	c.launches = 2;
	cri_cont_status(&c, &pod, "containerd", &s);
	assert_int_equal(s.state, RT_WAITING);
	assert_string_equal(s.reason, "CrashLoopBackOff");
	assert_string_equal(s.message, "back-off 10s restarting failed container=app pod=web_default(u1)");
	assert_int_equal(s.restart_count, 1);
	assert_true(s.has_last);
	assert_int_equal(s.last_exit_code, 1);
	assert_string_equal(s.last_reason, "Error");

	/* terminated for good: the state is the newest termination, lastState the one before */
	c.phase = CP_TERMINATED;
	c.has_prev = true;
	c.prev = c.term;
	c.term = (struct cri_term){ .exit_code = 137, .reason = "OOMKilled", .started_at = 30, .finished_at = 40 };
	cri_cont_status(&c, &pod, "containerd", &s);
	assert_int_equal(s.state, RT_TERMINATED);
	assert_string_equal(s.reason, "OOMKilled");
	assert_int_equal(s.exit_code, 137);
	assert_int_equal(s.finished_at, 40);
	assert_true(s.has_last);
	assert_int_equal(s.last_exit_code, 1);
}

static void test_backoff(void **state)
{
	(void)state;
	assert_int_equal(cri_backoff_next(0, 10000, 300000, 0), 10000);
	assert_int_equal(cri_backoff_next(10000, 10000, 300000, 0), 20000);
	assert_int_equal(cri_backoff_next(160000, 10000, 300000, 0), 300000);
	assert_int_equal(cri_backoff_next(300000, 10000, 300000, 1000), 300000);
	assert_int_equal(cri_backoff_next(300000, 10000, 300000, 600001), 10000); /* ran long: reset */
}

static void test_rt_pod_cri_fields(void **state)
{
	(void)state;
	json_t *pod = json_loads("{\"metadata\":{\"uid\":\"u\",\"name\":\"p\",\"namespace\":\"default\","
				 "\"tenant\":\"acme\"},"
				 "\"spec\":{\"hostNetwork\":true,\"containers\":["
				 "{\"name\":\"a\",\"image\":\"busybox\",\"resources\":{\"requests\":{\"cpu\":\"250m\"},"
				 "\"limits\":{\"cpu\":\"1\",\"memory\":\"32Mi\"}}},"
				 "{\"name\":\"b\",\"image\":\"busybox:1.36\",\"command\":[\"sh\"]},"
				 "{\"name\":\"c\",\"image\":\"busybox:1.36\",\"imagePullPolicy\":\"Never\"},"
				 "{\"name\":\"d\",\"image\":\"r.example:5000/x/y:latest\"}]}}",
				 0, NULL);
	struct rt_pod p;
	struct buf err = BUF_INIT;
	assert_int_equal(kl_rt_pod_from_json(pod, &p, &err), 0);
	assert_true(p.host_network);
	assert_int_equal(p.containers[0].pull, RT_PULL_ALWAYS); /* no tag: latest */
	assert_true(p.containers[0].default_command);
	assert_int_equal(p.containers[0].res.cpu_request_m, 250);
	assert_int_equal(p.containers[0].res.cpu_limit_m, 1000);
	assert_int_equal(p.containers[0].res.mem_limit, 32LL << 20);
	assert_int_equal(p.containers[0].res.mem_request, 32LL << 20); /* the limit stands in */
	assert_int_equal(p.containers[1].pull, RT_PULL_IF_NOT_PRESENT);
	assert_false(p.containers[1].default_command);
	assert_int_equal(p.containers[1].res.cpu_request_m, 0);
	assert_int_equal(p.containers[2].pull, RT_PULL_NEVER);
	assert_int_equal(p.containers[3].pull, RT_PULL_ALWAYS);
	rt_pod_release(&p);
	json_decref(pod);
	pod = json_loads("{\"metadata\":{\"uid\":\"u\",\"name\":\"p\"},\"spec\":{\"containers\":"
			 "[{\"name\":\"a\",\"image\":\"x\",\"resources\":{\"limits\":{\"memory\":\"lots\"}}}]}}",
			 0, NULL);
	assert_int_equal(kl_rt_pod_from_json(pod, &p, &err), E_INVALID);
	assert_non_null(strstr(buf_cstr(&err), "quantity"));
	buf_release(&err);
	json_decref(pod);
}

static void test_pod_ip_in_status(void **state)
{
	(void)state;
	json_t *pod = json_loads("{\"metadata\":{\"uid\":\"u\",\"name\":\"p\"},\"spec\":{\"containers\":"
				 "[{\"name\":\"a\",\"image\":\"x\"}]}}",
				 0, NULL);
	struct kl_status_in in = { .host_ip = "192.0.2.1", .pod_ip = "10.88.0.5", .now = 1767225600 };
	json_t *st = kl_pod_status_build(pod, &in);
	assert_string_equal(json_str(st, "podIP"), "10.88.0.5");
	assert_string_equal(json_str(json_array_get(json_object_get(st, "podIPs"), 0), "ip"), "10.88.0.5");
	assert_string_equal(json_str(st, "hostIP"), "192.0.2.1");
	json_decref(st);
	in.pod_ip = NULL; /* the node's network, or the process runtime: the node's IP */
	st = kl_pod_status_build(pod, &in);
	assert_string_equal(json_str(st, "podIP"), "192.0.2.1");
	json_object_set_new(pod, "status", st);
	in.pod_ip = ""; /* no sandbox IP (yet): no podIP, not the node's */
	st = kl_pod_status_build(pod, &in);
	assert_null(json_object_get(st, "podIP"));
	assert_null(json_object_get(st, "podIPs"));
	assert_string_equal(json_str(st, "hostIP"), "192.0.2.1");
	json_decref(st);
	json_decref(pod);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_resources),
		cmocka_unit_test(test_term_from_status),
		cmocka_unit_test(test_cont_status),
		cmocka_unit_test(test_backoff),
		cmocka_unit_test(test_rt_pod_cri_fields),
		cmocka_unit_test(test_pod_ip_in_status),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
