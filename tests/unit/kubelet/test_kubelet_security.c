/* The kubelet's security and limit defaults: the securityContext fields the CRI runtime applies
 * (seccomp RuntimeDefault unless asked otherwise, no_new_privs unless allowPrivilegeEscalation,
 * capabilities, runAsNonRoot against the image's user), the pids cgroup mount lookup, and the
 * --system-reserved / --kube-reserved parser with node allocatable. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include "testjson.h"
#include <stdlib.h>
#include <string.h>
#include "podlogic.h"
#include "runtime_cri.h"
#include "ursa/errors.h"

/* The first container's security of the pod whose spec is given (image_users: the CRI runtime). */
static int convert(const char *spec, bool image_users, struct rt_pod *ret, struct buf *err)
{
	json_t *spec_j = J(spec);
	json_t *pod = json_pack("{s:{s:s,s:s},s:o}", "metadata", "uid", "u1", "name", "p", "spec", spec_j);
	int rc = kl_rt_pod_from_json_for(pod, image_users, ret, err);
	json_decref(pod);
	return rc;
}

static void test_security_defaults(void **state)
{
	(void)state;
	struct rt_pod p;
	struct buf err = BUF_INIT;
	assert_int_equal(convert("{\"containers\":[{\"name\":\"c\",\"image\":\"busybox\"}]}", true, &p, &err), 0);
	const struct rt_security *s = &p.containers[0].sec;
	assert_int_equal(s->seccomp, RT_SECCOMP_RUNTIME_DEFAULT);
	assert_true(s->no_new_privs);
	assert_false(s->non_root);
	assert_int_equal(s->nadd + s->ndrop, 0);
	rt_pod_release(&p);
	buf_release(&err);
}

static void test_security_from_spec(void **state)
{
	(void)state;
	struct rt_pod p;
	struct buf err = BUF_INIT;
	/* the pod's seccompProfile and runAsNonRoot, the container's over them where it sets them */
	assert_int_equal(convert("{\"securityContext\":{\"seccompProfile\":{\"type\":\"Unconfined\"},\"runAsNonRoot\":true},"
				 "\"containers\":[{\"name\":\"a\"},{\"name\":\"b\",\"securityContext\":{"
				 "\"seccompProfile\":{\"type\":\"Localhost\",\"localhostProfile\":\"prof/x.json\"},"
				 "\"allowPrivilegeEscalation\":true,\"capabilities\":{\"add\":[\"NET_ADMIN\"],"
				 "\"drop\":[\"ALL\"]}}}]}", true, &p, &err), 0);
	const struct rt_security *a = &p.containers[0].sec, *b = &p.containers[1].sec;
	assert_int_equal(a->seccomp, RT_SECCOMP_UNCONFINED);
	assert_true(a->non_root && a->no_new_privs);
	assert_int_equal(b->seccomp, RT_SECCOMP_LOCALHOST);
	assert_string_equal(b->seccomp_ref, "prof/x.json");
	assert_false(b->no_new_privs);
	assert_int_equal(b->nadd, 1);
	assert_string_equal(b->cap_add[0], "NET_ADMIN");
	assert_int_equal(b->ndrop, 1);
	assert_string_equal(b->cap_drop[0], "ALL");
	rt_pod_release(&p);

	/* a Localhost profile outside the seccomp root, an unknown type, too many capabilities */
	static const char *const bad[] = {
		"{\"containers\":[{\"name\":\"c\",\"securityContext\":{\"seccompProfile\":{\"type\":\"Localhost\","
		"\"localhostProfile\":\"../../etc/x\"}}}]}",
		"{\"containers\":[{\"name\":\"c\",\"securityContext\":{\"seccompProfile\":{\"type\":\"Localhost\"}}}]}",
		"{\"containers\":[{\"name\":\"c\",\"securityContext\":{\"seccompProfile\":{\"type\":\"Weird\"}}}]}",
		"{\"containers\":[{\"name\":\"c\",\"securityContext\":{\"capabilities\":{\"drop\":[\"A\",\"B\",\"C\",\"D\","
		"\"E\",\"F\",\"G\",\"H\",\"I\",\"J\",\"K\",\"L\",\"M\",\"N\",\"O\",\"P\",\"Q\"]}}}]}",
		"{\"containers\":[{\"name\":\"c\",\"securityContext\":{\"capabilities\":{\"add\":[7]}}}]}",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		buf_reset(&err);
		assert_int_equal(convert(bad[i], true, &p, &err), E_INVALID);
		assert_non_null(strstr(buf_cstr(&err), "container \"c\""));
	}
	buf_release(&err);
}

static void test_non_root_left_to_the_image_runtime(void **state)
{
	(void)state;
	struct rt_pod p;
	struct buf err = BUF_INIT;
	static const char spec[] = "{\"securityContext\":{\"runAsNonRoot\":true},\"containers\":[{\"name\":\"c\"}]}";
	/* the CRI runtime checks the image's user itself */
	assert_int_equal(convert(spec, true, &p, &err), 0);
	assert_true(p.containers[0].sec.non_root);
	rt_pod_release(&p);
	/* runAsUser 0 is refused whichever the runtime */
	assert_int_equal(convert("{\"securityContext\":{\"runAsNonRoot\":true,\"runAsUser\":0},"
				 "\"containers\":[{\"name\":\"c\"}]}", true, &p, &err), E_INVALID);
	assert_non_null(strstr(buf_cstr(&err), "runAsNonRoot"));
	buf_release(&err);
}

static void test_nonroot_refusal(void **state)
{
	(void)state;
	struct rt_pod pod = { .uid = "u1", .name = "p", .ns = "default" };
	Runtime__V1__Image img = RUNTIME__V1__IMAGE__INIT;
	Runtime__V1__Int64Value uid = RUNTIME__V1__INT64_VALUE__INIT;
	char *msg;
	/* no user at all: root */
	assert_string_equal(cri_nonroot_refusal(&img, &pod, "c", &msg), "CreateContainerConfigError");
	assert_string_equal(msg, "container has runAsNonRoot and image will run as root (pod: \"p_default(u1)\", "
				 "container: c)");
	free(msg);
	assert_string_equal(cri_nonroot_refusal(NULL, &pod, "c", &msg), "CreateContainerConfigError");
	free(msg);
	uid.value = 0;
	img.uid = &uid;
	assert_string_equal(cri_nonroot_refusal(&img, &pod, "c", &msg), "CreateContainerConfigError");
	free(msg);
	uid.value = 1000;
	assert_null(cri_nonroot_refusal(&img, &pod, "c", &msg));
	assert_null(msg);
	img.uid = NULL;
	img.username = "nginx";
	assert_string_equal(cri_nonroot_refusal(&img, &pod, "c", &msg), "CreateContainerConfigError");
	assert_non_null(strstr(msg, "image has non-numeric user (nginx), cannot verify user is non-root"));
	free(msg);
	img.username = "root";
	assert_string_equal(cri_nonroot_refusal(&img, &pod, "c", &msg), "CreateContainerConfigError");
	assert_non_null(strstr(msg, "image will run as root"));
	free(msg);
}

static void test_seccomp_profile(void **state)
{
	(void)state;
	struct rt_security s = { .seccomp = RT_SECCOMP_RUNTIME_DEFAULT };
	Runtime__V1__SecurityProfile out;
	char *ref;
	cri_seccomp_profile(&s, "/var/lib/k/seccomp", &out, &ref);
	assert_int_equal(out.profile_type, RUNTIME__V1__SECURITY_PROFILE__PROFILE_TYPE__RuntimeDefault);
	assert_null(ref);
	s.seccomp = RT_SECCOMP_UNCONFINED;
	cri_seccomp_profile(&s, "/var/lib/k/seccomp", &out, &ref);
	assert_int_equal(out.profile_type, RUNTIME__V1__SECURITY_PROFILE__PROFILE_TYPE__Unconfined);
	s.seccomp = RT_SECCOMP_LOCALHOST;
	strcpy(s.seccomp_ref, "a/b.json");
	cri_seccomp_profile(&s, "/var/lib/k/seccomp", &out, &ref);
	assert_int_equal(out.profile_type, RUNTIME__V1__SECURITY_PROFILE__PROFILE_TYPE__Localhost);
	assert_string_equal(out.localhost_ref, "/var/lib/k/seccomp/a/b.json");
	free(ref);
}

static void test_pids_mount(void **state)
{
	(void)state;
	char dir[256];
	static const char hybrid[] =
		"tmpfs /sys/fs/cgroup tmpfs rw,relatime,mode=755 0 0\n"
		"cgroup2 /sys/fs/cgroup/unified cgroup2 rw,relatime 0 0\n"
		"cgroup /sys/fs/cgroup/memory cgroup rw,relatime,memory 0 0\n"
		"cgroup /sys/fs/cgroup/pids cgroup rw,relatime,pids 0 0\n";
	assert_true(cri_pids_mount(hybrid, dir, sizeof(dir)));
	assert_string_equal(dir, "/sys/fs/cgroup/pids");
	assert_true(cri_pids_mount("cgroup2 /sys/fs/cgroup cgroup2 rw,nsdelegate 0 0", dir, sizeof(dir)));
	assert_string_equal(dir, "/sys/fs/cgroup");
	/* a controller whose name merely contains "pids" is not it */
	assert_false(cri_pids_mount("cgroup /x cgroup rw,nopids 0 0\nproc /proc proc rw 0 0\n", dir, sizeof(dir)));
	assert_false(cri_pids_mount("", dir, sizeof(dir)));
}

static void test_reserved_parse(void **state)
{
	(void)state;
	struct kl_reserved r;
	struct buf err = BUF_INIT;
	assert_int_equal(kl_reserved_parse("cpu=500m,memory=1Gi,ephemeral-storage=2Gi,pid=1000", &r, &err), 0);
	assert_int_equal(r.cpu_m, 500);
	assert_int_equal(r.mem_m, (1LL << 30) * 1000);
	assert_int_equal(r.storage_m, (2LL << 30) * 1000);
	assert_int_equal(r.pids, 1000);
	assert_int_equal(kl_reserved_parse(NULL, &r, &err), 0);
	assert_int_equal(r.cpu_m + r.mem_m + r.pids + r.storage_m, 0);
	assert_int_equal(kl_reserved_parse("", &r, &err), 0);
	assert_int_equal(kl_reserved_parse("memory=100Mi", &r, &err), 0);
	assert_int_equal(r.cpu_m, 0);
	assert_int_equal(r.mem_m, 100LL * 1024 * 1024 * 1000);
	static const struct {
		const char *spec, *reason;
	} bad[] = {
		{ "cpu", "is not name=quantity" },
		{ "cpu=", "is not name=quantity" },
		{ "=1", "is not name=quantity" },
		{ "cpu=1,", "empty entry" },
		{ ",cpu=1", "empty entry" },
		{ "cpu=1,,memory=1Gi", "empty entry" },
		{ "cpu=abc", "cpu: \"abc\" is not a non-negative quantity" },
		{ "cpu=-1", "not a non-negative quantity" },
		{ "gpu=1", "unknown resource \"gpu\"" },
		{ "cpu=1,cpu=2", "cpu given twice" },
		{ "pid=1.5", "not a whole number" },
		{ "cpu=1 ,memory=1Gi", "cpu: \"1 \" is not a non-negative quantity" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		buf_reset(&err);
		r.cpu_m = 77;
		assert_int_equal(kl_reserved_parse(bad[i].spec, &r, &err), E_INVALID);
		if (!strstr(buf_cstr(&err), bad[i].reason))
			fail_msg("%s: %s", bad[i].spec, buf_cstr(&err));
		assert_int_equal(r.cpu_m, 77); /* untouched */
	}
	buf_release(&err);
}

static void test_allocatable(void **state)
{
	(void)state;
	struct kl_res cap = { 4000, 8LL * 1024 * 1024 * 1024 * 1000, 110 }, alloc;
	struct kl_reserved sys = { .cpu_m = 500, .mem_m = 1LL * 1024 * 1024 * 1024 * 1000 };
	struct kl_reserved kube = { .cpu_m = 250, .mem_m = 512LL * 1024 * 1024 * 1000 };
	kl_allocatable(&cap, &sys, &kube, &alloc);
	assert_int_equal(alloc.cpu_m, 3250);
	assert_int_equal(alloc.mem_m, (8LL * 1024 - 1536) * 1024 * 1024 * 1000);
	assert_int_equal(alloc.pods, 110);
	/* reservations beyond capacity leave nothing, never less */
	sys.cpu_m = 10000;
	kl_allocatable(&cap, &sys, &kube, &alloc);
	assert_int_equal(alloc.cpu_m, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_security_defaults),
		cmocka_unit_test(test_security_from_spec),
		cmocka_unit_test(test_non_root_left_to_the_image_runtime),
		cmocka_unit_test(test_nonroot_refusal),
		cmocka_unit_test(test_seccomp_profile),
		cmocka_unit_test(test_pids_mount),
		cmocka_unit_test(test_reserved_parse),
		cmocka_unit_test(test_allocatable),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
