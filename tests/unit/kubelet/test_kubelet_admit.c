/* Admission arithmetic: requests from pod specs, fit checks and their reasons, grace periods,
 * and the pod spec -> runtime spec conversion (what the kubelet refuses). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include "testjson.h"
#include <string.h>
#include "podlogic.h"
#include "runtime_common.h"
#include "ursa/errors.h"

static void test_requests_sum_and_limit_fallback(void **state)
{
	json_t *pod = J("{\"spec\":{\"containers\":["
			"{\"name\":\"a\",\"resources\":{\"requests\":{\"cpu\":\"250m\",\"memory\":\"64Mi\"}}},"
			"{\"name\":\"b\",\"resources\":{\"limits\":{\"cpu\":\"1\",\"memory\":\"1Gi\"}}},"
			"{\"name\":\"c\"}]}}");
	struct kl_res r;
	struct buf err = BUF_INIT;
	assert_int_equal(kl_pod_requests(pod, &r, &err), 0);
	assert_int_equal(r.cpu_m, 1250);
	assert_int_equal(r.mem_m, (64LL << 20) * 1000 + (1LL << 30) * 1000);
	assert_int_equal(r.pods, 1);
	json_decref(pod);
	buf_release(&err);
}

static void test_requests_init_container_max(void **state)
{
	json_t *pod = J("{\"spec\":{\"containers\":[{\"name\":\"a\",\"resources\":{\"requests\":{\"cpu\":\"100m\"}}}],"
			"\"initContainers\":[{\"name\":\"i\",\"resources\":{\"requests\":{\"cpu\":\"2\"}}}]}}");
	struct kl_res r;
	struct buf err = BUF_INIT;
	assert_int_equal(kl_pod_requests(pod, &r, &err), 0);
	assert_int_equal(r.cpu_m, 2000);
	assert_int_equal(r.mem_m, 0);
	json_decref(pod);
	buf_release(&err);
}

static void test_requests_bad_quantity(void **state)
{
	json_t *pod = J("{\"spec\":{\"containers\":[{\"name\":\"a\",\"resources\":{\"requests\":{\"cpu\":\"lots\"}}}]}}");
	struct kl_res r = { 7, 7, 7 };
	struct buf err = BUF_INIT;
	assert_int_equal(kl_pod_requests(pod, &r, &err), E_INVALID);
	assert_non_null(strstr(buf_cstr(&err), "cpu"));
	assert_int_equal(r.cpu_m, 7);  /* untouched on error */
	json_decref(pod);
	buf_release(&err);
}

static void test_admit_reasons(void **state)
{
	struct kl_res alloc = { 2000, 4LL * (1 << 30) * 1000, 3 };
	struct kl_res used = { 1500, 1LL * (1 << 30) * 1000, 1 };
	struct buf msg = BUF_INIT;
	struct kl_res fits = { 500, 1000, 1 };
	assert_null(kl_admit(&alloc, &used, &fits, &msg));
	assert_int_equal(msg.len, 0);

	struct kl_res cpu = { 501, 0, 1 };
	assert_string_equal(kl_admit(&alloc, &used, &cpu, &msg), "OutOfcpu");
	assert_string_equal(buf_cstr(&msg),
			    "Node didn't have enough resource: cpu, requested: 501, used: 1500, capacity: 2000");
	buf_reset(&msg);

	struct kl_res mem = { 0, 3LL * (1 << 30) * 1000 + 1000, 1 };
	assert_string_equal(kl_admit(&alloc, &used, &mem, &msg), "OutOfmemory");
	assert_non_null(strstr(buf_cstr(&msg), "memory, requested: 3221225473"));
	buf_reset(&msg);

	struct kl_res full = { 1, 1, 1 };
	struct kl_res used_pods = { 0, 0, 3 };
	assert_string_equal(kl_admit(&alloc, &used_pods, &full, &msg), "OutOfpods");
	buf_reset(&msg);

	/* a zero request always fits, even on an overcommitted node */
	struct kl_res over = { 5000, 0, 0 };
	struct kl_res zero = { 0, 0, 1 };
	assert_null(kl_admit(&alloc, &over, &zero, &msg));
	/* pods are checked before cpu */
	struct kl_res both = { 9000, 0, 1 };
	assert_string_equal(kl_admit(&alloc, &used_pods, &both, &msg), "OutOfpods");
	buf_release(&msg);
}

static void test_grace(void **state)
{
	json_t *a = J("{\"metadata\":{\"deletionGracePeriodSeconds\":3},\"spec\":{\"terminationGracePeriodSeconds\":9}}");
	json_t *b = J("{\"metadata\":{},\"spec\":{\"terminationGracePeriodSeconds\":9}}");
	json_t *c = J("{\"metadata\":{},\"spec\":{}}");
	json_t *d = J("{\"metadata\":{},\"spec\":{\"terminationGracePeriodSeconds\":-4}}");
	assert_int_equal(kl_pod_grace(a), 3);
	assert_int_equal(kl_pod_grace(b), 9);
	assert_int_equal(kl_pod_grace(c), 30);
	assert_int_equal(kl_pod_grace(d), 0);
	json_decref(a);
	json_decref(b);
	json_decref(c);
	json_decref(d);
}

static void test_rt_pod_conversion(void **state)
{
	json_t *pod = J("{\"metadata\":{\"uid\":\"u1\",\"name\":\"p\",\"namespace\":\"ns\",\"tenant\":\"acme\"},"
			"\"spec\":{\"restartPolicy\":\"OnFailure\",\"terminationGracePeriodSeconds\":5,\"containers\":["
			"{\"name\":\"c\",\"image\":\"busybox\",\"command\":[\"sh\",\"-c\"],\"args\":[\"echo hi\"],"
			"\"env\":[{\"name\":\"A\",\"value\":\"1\"},{\"name\":\"B\"}],\"workingDir\":\"/tmp\"}]}}");
	struct rt_pod p;
	struct buf err = BUF_INIT;
	assert_int_equal(kl_rt_pod_from_json(pod, &p, &err), 0);
	assert_string_equal(p.uid, "u1");
	assert_string_equal(p.tenant, "acme");
	assert_string_equal(p.ns, "ns");
	assert_int_equal(p.restart, RT_RESTART_ON_FAILURE);
	assert_int_equal(p.grace_s, 5);
	assert_int_equal(p.ncontainers, 1);
	assert_string_equal(p.containers[0].command[1], "-c");
	assert_null(p.containers[0].command[2]);
	assert_string_equal(p.containers[0].args[0], "echo hi");
	assert_int_equal(p.containers[0].nenv, 2);
	assert_string_equal(p.containers[0].env[1].name, "B");
	assert_string_equal(p.containers[0].env[1].value, "");
	assert_string_equal(p.containers[0].working_dir, "/tmp");
	rt_pod_release(&p);
	json_decref(pod);
	buf_release(&err);
}

static void expect_refused(const char *text, const char *needle)
{
	json_t *pod = J(text);
	struct rt_pod p;
	struct buf err = BUF_INIT;
	assert_int_equal(kl_rt_pod_from_json(pod, &p, &err), E_INVALID);
	if (!strstr(buf_cstr(&err), needle))
		fail_msg("error \"%s\" does not mention \"%s\"", buf_cstr(&err), needle);
	json_decref(pod);
	buf_release(&err);
}

static void test_rt_pod_refusals(void **state)
{
	expect_refused("{\"metadata\":{\"uid\":\"u\",\"name\":\"p\"},\"spec\":{\"containers\":[]}}", "spec.containers");
	expect_refused("{\"metadata\":{\"uid\":\"u\",\"name\":\"p\"},\"spec\":{}}", "spec.containers");
	expect_refused("{\"metadata\":{\"name\":\"p\"},\"spec\":{\"containers\":[{\"name\":\"c\"}]}}", "uid");
	expect_refused("{\"metadata\":{\"uid\":\"u\",\"name\":\"p\"},\"spec\":{\"containers\":[{\"name\":\"c\","
		       "\"command\":[1,2]}]}}", "command");
	expect_refused("{\"metadata\":{\"uid\":\"u\",\"name\":\"p\"},\"spec\":{\"containers\":[{\"name\":\"c\"},"
		       "{\"name\":\"c\"}]}}", "duplicate");
	expect_refused("{\"metadata\":{\"uid\":\"u\",\"name\":\"p\"},\"spec\":{\"containers\":[{\"name\":\"c\","
		       "\"env\":[{\"name\":\"X\",\"valueFrom\":{}}]}]}}", "valueFrom");
	expect_refused("{\"metadata\":{\"uid\":\"u\",\"name\":\"p\"},\"spec\":{\"containers\":[{\"name\":\"c\","
		       "\"env\":[{\"name\":\"A=B\",\"value\":\"x\"}]}]}}", "env[0]");
	expect_refused("{\"metadata\":{\"uid\":\"u\",\"name\":\"p\"},\"spec\":{\"containers\":[{\"image\":\"x\"}]}}",
		       "no name");
	expect_refused("{\"metadata\":{\"uid\":\"u\",\"name\":\"p\"},\"spec\":{\"securityContext\":{\"runAsUser\":-1},"
		       "\"containers\":[{\"name\":\"c\"}]}}", "runAsUser");
	expect_refused("{\"metadata\":{\"uid\":\"u\",\"name\":\"p\"},\"spec\":{\"containers\":[{\"name\":\"c\","
		       "\"securityContext\":{\"runAsGroup\":\"10\"}}]}}", "runAsGroup");
	expect_refused("{\"metadata\":{\"uid\":\"u\",\"name\":\"p\"},\"spec\":{\"securityContext\":{\"supplementalGroups\":"
		       "[1,2147483648]},\"containers\":[{\"name\":\"c\"}]}}", "supplementalGroups");
	expect_refused("{\"metadata\":{\"uid\":\"u\",\"name\":\"p\"},\"spec\":{\"securityContext\":{\"runAsNonRoot\":true},"
		       "\"containers\":[{\"name\":\"c\",\"securityContext\":{\"runAsUser\":0}}]}}", "runAsNonRoot");
}

/* securityContext: the container's ids over the pod's, the pod's supplementalGroups; a pod
 * without one sets nothing. */
static void test_rt_pod_ids(void **state)
{
	(void)state;
	json_t *pod = J("{\"metadata\":{\"uid\":\"u\",\"name\":\"p\"},\"spec\":{\"securityContext\":{\"runAsUser\":1000,"
			"\"runAsGroup\":3000,\"supplementalGroups\":[4000,4001],\"runAsNonRoot\":true},\"containers\":["
			"{\"name\":\"a\"},{\"name\":\"b\",\"securityContext\":{\"runAsUser\":2000}},{\"name\":\"c\","
			"\"securityContext\":{\"runAsGroup\":0}}]}}");
	struct rt_pod p;
	struct buf err = BUF_INIT;
	assert_int_equal(kl_rt_pod_from_json(pod, &p, &err), 0);
	const struct rt_ids *a = &p.containers[0].ids, *b = &p.containers[1].ids, *c = &p.containers[2].ids;
	assert_true(a->has_uid && a->uid == 1000 && a->has_gid && a->gid == 3000);
	assert_int_equal(a->ngroups, 2);
	assert_int_equal(a->groups[0], 4000);
	assert_int_equal(a->groups[1], 4001);
	assert_true(b->has_uid && b->uid == 2000 && b->gid == 3000);
	assert_true(c->uid == 1000 && c->has_gid && c->gid == 0);
	struct rt_pod copy;
	rt_pod_copy(&copy, &p);
	assert_true(copy.containers[1].ids.has_uid && copy.containers[1].ids.uid == 2000);
	assert_int_equal(copy.containers[0].ids.ngroups, 2);
	rt_pod_release(&copy);
	rt_pod_release(&p);
	json_decref(pod);
	pod = J("{\"metadata\":{\"uid\":\"u\",\"name\":\"p\"},\"spec\":{\"containers\":[{\"name\":\"a\"}]}}");
	assert_int_equal(kl_rt_pod_from_json(pod, &p, &err), 0);
	assert_false(p.containers[0].ids.has_uid || p.containers[0].ids.has_gid || p.containers[0].ids.ngroups);
	rt_pod_release(&p);
	json_decref(pod);
	buf_release(&err);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_requests_sum_and_limit_fallback),
		cmocka_unit_test(test_requests_init_container_max),
		cmocka_unit_test(test_requests_bad_quantity),
		cmocka_unit_test(test_admit_reasons),
		cmocka_unit_test(test_rt_pod_ids),
		cmocka_unit_test(test_grace),
		cmocka_unit_test(test_rt_pod_conversion),
		cmocka_unit_test(test_rt_pod_refusals),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
