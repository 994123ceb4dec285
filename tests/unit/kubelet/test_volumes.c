/* Pod volumes (src/kubelet/volumes.c) and the atomic writer (atomicdir.c): paths, the ..data
 * swap and its no-op when nothing changed, configMap/secret items with modes and optional,
 * downwardAPI files, projected tokens cached until 80% of their life, the default
 * service-account volume, mounts with subPath and readOnly, and disk emptyDir limits. Files go
 * to a temporary directory. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>
#include "testjson.h"
#include "atomicdir.h"
#include "runtime_common.h"
#include "volumes.h"
#include "ursa/errors.h"
#include "ursa/xalloc.h"

static char *tmpdir(void)
{
	char *t = xstrdup("/tmp/ursa-vol-test.XXXXXX");
	if (!mkdtemp(t))
		fail_msg("mkdtemp");
	return t;
}

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return NULL;
	char buf[4096];
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	return xstrdup(buf);
}

static void expect_file(const char *dir, const char *rel, const char *want)
{
	char *p = xasprintf("%s/%s", dir, rel);
	char *got = slurp(p);
	if (!got || strcmp(got, want) != 0)
		fail_msg("%s: \"%s\", want \"%s\"", p, got ? got : "(missing)", want);
	free(got);
	free(p);
}

static void test_path_ok(void **state)
{
	(void)state;
	assert_true(atomicdir_path_ok("a"));
	assert_true(atomicdir_path_ok("a/b.txt"));
	assert_true(atomicdir_path_ok(".hidden"));
	assert_false(atomicdir_path_ok(""));
	assert_false(atomicdir_path_ok("/abs"));
	assert_false(atomicdir_path_ok("../x"));
	assert_false(atomicdir_path_ok("a/../b"));
	assert_false(atomicdir_path_ok("..data"));
	assert_false(atomicdir_path_ok("a//b"));
	assert_false(atomicdir_path_ok("a/"));
}

static void test_atomic_swap(void **state)
{
	(void)state;
	char *d = tmpdir();
	struct atomic_file f1[] = { { "k1", "one", 3, 0644 }, { "sub/k2", "two", 3, 0600 } };
	struct buf err = BUF_INIT;
	bool changed = false;
	assert_int_equal(atomicdir_write(d, f1, 2, &changed, &err), 0);
	assert_true(changed);
	expect_file(d, "k1", "one");
	expect_file(d, "sub/k2", "two");
	char target[256], link[256];
	char *dl = xasprintf("%s/..data", d), *kl = xasprintf("%s/k1", d);
	ssize_t n = readlink(dl, target, sizeof(target) - 1);
	assert_true(n > 2);
	target[n] = '\0';
	assert_memory_equal(target, "..", 2);
	n = readlink(kl, link, sizeof(link) - 1);
	assert_true(n > 0);
	link[n] = '\0';
	assert_string_equal(link, "..data/k1");
	struct stat st;
	char *k2 = xasprintf("%s/sub/k2", d);
	assert_int_equal(stat(k2, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	/* the same again: nothing changes */
	assert_int_equal(atomicdir_write(d, f1, 2, &changed, &err), 0);
	assert_false(changed);
	/* a new value and a dropped key: swapped, the old generation and the stale link gone */
	struct atomic_file f2[] = { { "k1", "uno", 3, 0644 } };
	assert_int_equal(atomicdir_write(d, f2, 1, &changed, &err), 0);
	assert_true(changed);
	expect_file(d, "k1", "uno");
	assert_int_not_equal(access(k2, F_OK), 0);
	char *old = xasprintf("%s/%s", d, target);
	assert_int_not_equal(access(old, F_OK), 0);
	/* a mode change alone is a change */
	f2[0].mode = 0400;
	assert_int_equal(atomicdir_write(d, f2, 1, &changed, &err), 0);
	assert_true(changed);
	/* conflicting or bad paths: refused, nothing written */
	struct atomic_file bad[] = { { "a", "x", 1, 0644 }, { "a/b", "y", 1, 0644 } };
	assert_int_equal(atomicdir_write(d, bad, 2, &changed, &err), -1);
	struct atomic_file bad2[] = { { "../evil", "x", 1, 0644 } };
	assert_int_equal(atomicdir_write(d, bad2, 1, &changed, &err), -1);
	expect_file(d, "k1", "uno");
	rt_rm_rf(d);
	free(old), free(k2), free(dl), free(kl), free(d);
	buf_release(&err);
}

/* A fake source: one configmap "app", one secret "creds", tokens numbered. */
struct fake {
	json_t *cm, *secret;
	int tokens;
};

static const json_t *fake_get(void *ud, bool secret, const char *name, int *ret_code)
{
	struct fake *f = ud;
	if (!secret && !strcmp(name, "app")) {
		*ret_code = 200;
		return f->cm;
	}
	if (secret && !strcmp(name, "creds")) {
		*ret_code = 200;
		return f->secret;
	}
	*ret_code = 404;
	return NULL;
}

static int fake_token(void *ud, const char *aud, long long exp_s, char **ret, int64_t *ret_exp, struct buf *err)
{
	struct fake *f = ud;
	f->tokens++;
	*ret = xasprintf("tok%d-%s", f->tokens, aud ? aud : "");
	*ret_exp = 1000 + exp_s;
	return 0;
}

static const char *POD =
	"{\"metadata\":{\"name\":\"p\",\"namespace\":\"ns\",\"uid\":\"u1\",\"labels\":{\"b\":\"2\",\"a\":\"q\\\"x\"}},"
	"\"spec\":{\"containers\":[{\"name\":\"c\",\"resources\":{\"limits\":{\"memory\":\"64Mi\"}},\"volumeMounts\":["
	"{\"name\":\"cfg\",\"mountPath\":\"/etc/cfg\"},"
	"{\"name\":\"cfg\",\"mountPath\":\"/etc/one\",\"subPath\":\"color\"},"
	"{\"name\":\"s\",\"mountPath\":\"/etc/s\"},"
	"{\"name\":\"e\",\"mountPath\":\"/ro\",\"readOnly\":true},"
	"{\"name\":\"e\",\"mountPath\":\"/w\",\"subPath\":\"deep\"},"
	"{\"name\":\"info\",\"mountPath\":\"/info\"},"
	"{\"name\":\"proj\",\"mountPath\":\"/proj\"}]}],"
	"\"volumes\":["
	"{\"name\":\"cfg\",\"configMap\":{\"name\":\"app\",\"defaultMode\":256}},"
	"{\"name\":\"s\",\"secret\":{\"secretName\":\"creds\",\"items\":[{\"key\":\"pw\",\"path\":\"x/pw\",\"mode\":384}]}},"
	"{\"name\":\"e\",\"emptyDir\":{\"sizeLimit\":\"64Ki\"}},"
	"{\"name\":\"opt\",\"configMap\":{\"name\":\"nope\",\"optional\":true}},"
	"{\"name\":\"info\",\"downwardAPI\":{\"items\":[{\"path\":\"labels\",\"fieldRef\":{\"fieldPath\":\"metadata.labels\"}},"
	"{\"path\":\"name\",\"fieldRef\":{\"fieldPath\":\"metadata.name\"}},"
	"{\"path\":\"mem\",\"resourceFieldRef\":{\"containerName\":\"c\",\"resource\":\"limits.memory\",\"divisor\":\"1Mi\"}}]}},"
	"{\"name\":\"proj\",\"projected\":{\"sources\":[{\"serviceAccountToken\":{\"path\":\"token\",\"audience\":\"vault\","
	"\"expirationSeconds\":1000}},{\"configMap\":{\"name\":\"app\",\"items\":[{\"key\":\"size\",\"path\":\"size\"}]}}]}}]}}";

static void test_setup_and_mounts(void **state)
{
	(void)state;
	char *d = tmpdir();
	struct fake f = { J("{\"data\":{\"color\":\"blue\",\"size\":\"L\"},\"binaryData\":{\"bin\":\"aGk=\"}}"),
			  J("{\"data\":{\"pw\":\"czNjcjN0\"}}"), 0 };
	json_t *pod = J(POD);
	struct podenv_ips ips = { "10.0.0.1", "10.1.0.5", "10.1.0.5" };
	struct podenv_alloc alloc = { 4000, 8LL << 30, 0 };
	struct kl_vol_src src = { fake_get, fake_token, &f, &ips, &alloc, 1000 };
	struct rt_pod spec = { 0 };
	spec.ncontainers = 1;
	spec.containers = xcalloc(1, sizeof(*spec.containers));
	spec.containers[0].name = xstrdup("c");
	struct buf err = BUF_INIT;
	int rc = kl_volumes_setup(d, pod, &src, &spec, &err);
	if (rc)
		fail_msg("setup: %d %s", rc, buf_cstr(&err));
	char *cfg = xasprintf("%s/cfg", d), *info = xasprintf("%s/info", d), *proj = xasprintf("%s/proj", d);
	expect_file(cfg, "color", "blue");
	expect_file(cfg, "bin", "hi"); /* binaryData, decoded */
	expect_file(d, "s/x/pw", "s3cr3t");
	expect_file(info, "labels", "a=\"q\\\"x\"\nb=\"2\"\n");
	expect_file(info, "name", "p");
	expect_file(info, "mem", "64");
	expect_file(proj, "token", "tok1-vault");
	expect_file(proj, "size", "L");
	expect_file(d, KL_SA_VOLUME "/namespace", "ns");
	expect_file(d, KL_SA_VOLUME "/token", "tok2-");
	struct stat st;
	char *pw = xasprintf("%s/s/x/pw", d), *color = xasprintf("%s/color", cfg);
	assert_int_equal(stat(pw, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	assert_int_equal(stat(color, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0400);
	/* mounts: 7 named + the default service-account one */
	struct rt_container *c = &spec.containers[0];
	assert_int_equal(c->nmounts, 8);
	assert_string_equal(c->mounts[0].container_path, "/etc/cfg");
	assert_string_equal(c->mounts[0].host_path, cfg);
	assert_true(c->mounts[0].readonly);
	assert_true(strstr(c->mounts[1].host_path, "/cfg/..") != NULL); /* subPath resolved into ..data's target */
	assert_true(c->mounts[3].readonly);
	assert_false(c->mounts[4].readonly);
	char *deep = xasprintf("%s/e/deep", d);
	assert_string_equal(c->mounts[4].host_path, deep);
	assert_int_equal(access(deep, F_OK), 0);
	assert_string_equal(c->mounts[7].container_path, KL_SA_MOUNT);
	assert_true(c->mounts[7].readonly);
	/* a refresh within 80% of the tokens' life reuses them; the configmap's new value arrives */
	json_object_set_new(json_object_get(f.cm, "data"), "color", json_string("green"));
	src.now = 1700;
	assert_int_equal(kl_volumes_setup(d, pod, &src, NULL, &err), 0);
	assert_int_equal(f.tokens, 2);
	expect_file(cfg, "color", "green");
	/* past 80% of 1000 s: a new token for that one */
	src.now = 1801;
	assert_int_equal(kl_volumes_setup(d, pod, &src, NULL, &err), 0);
	assert_int_equal(f.tokens, 3); /* the default volume's (3607 s) is still fresh */
	expect_file(proj, "token", "tok3-vault");
	/* the disk emptyDir's limit */
	struct buf msg = BUF_INIT;
	assert_false(kl_volumes_over_limit(d, pod, &msg));
	char *blob = xasprintf("%s/e/blob", d);
	FILE *fb = fopen(blob, "w");
	for (int i = 0; i < 128 * 1024; i++)
		fputc('x', fb);
	fclose(fb);
	assert_true(kl_volumes_over_limit(d, pod, &msg));
	assert_string_equal(buf_cstr(&msg), "Usage of EmptyDir volume \"e\" exceeds the limit \"64Ki\". ");
	kl_volumes_remove(d);
	assert_int_not_equal(access(d, F_OK), 0);
	rt_pod_release(&spec);
	json_decref(pod);
	json_decref(f.cm);
	json_decref(f.secret);
	buf_release(&err);
	buf_release(&msg);
	free(cfg), free(info), free(proj), free(pw), free(color), free(deep), free(blob), free(d);
}

static void test_errors(void **state)
{
	(void)state;
	char *d = tmpdir();
	struct fake f = { J("{\"data\":{\"color\":\"blue\"}}"), J("{\"data\":{}}"), 0 };
	struct kl_vol_src src = { fake_get, fake_token, &f, NULL, NULL, 1000 };
	struct buf err = BUF_INIT;
	/* a missing configmap: E_NOT_FOUND (retried) with Kubernetes' words */
	json_t *pod = J("{\"metadata\":{\"uid\":\"u\",\"namespace\":\"ns\"},\"spec\":{\"automountServiceAccountToken\":false,"
			"\"containers\":[{\"name\":\"c\"}],\"volumes\":[{\"name\":\"v\",\"configMap\":{\"name\":\"gone\"}}]}}");
	assert_int_equal(kl_volumes_setup(d, pod, &src, NULL, &err), E_NOT_FOUND);
	assert_string_equal(buf_cstr(&err), "configmap \"gone\" not found (volume \"v\")");
	json_decref(pod);
	/* a missing key of items */
	buf_reset(&err);
	pod = J("{\"metadata\":{\"uid\":\"u\"},\"spec\":{\"automountServiceAccountToken\":false,\"containers\":[{\"name\":\"c\"}],"
		"\"volumes\":[{\"name\":\"v\",\"configMap\":{\"name\":\"app\",\"items\":[{\"key\":\"k\",\"path\":\"p\"}]}}]}}");
	assert_int_equal(kl_volumes_setup(d, pod, &src, NULL, &err), E_NOT_FOUND);
	json_decref(pod);
	/* unsupported kind, escaping subPath, mount of no volume: E_INVALID */
	static const char *const invalid[] = {
		"{\"metadata\":{\"uid\":\"u\"},\"spec\":{\"containers\":[{\"name\":\"c\"}],\"volumes\":[{\"name\":\"v\",\"nfs\":{}}]}}",
		"{\"metadata\":{\"uid\":\"u\"},\"spec\":{\"automountServiceAccountToken\":false,\"containers\":[{\"name\":\"c\","
		"\"volumeMounts\":[{\"name\":\"v\",\"mountPath\":\"/x\",\"subPath\":\"../../etc\"}]}],"
		"\"volumes\":[{\"name\":\"v\",\"emptyDir\":{}}]}}",
		"{\"metadata\":{\"uid\":\"u\"},\"spec\":{\"automountServiceAccountToken\":false,\"containers\":[{\"name\":\"c\","
		"\"volumeMounts\":[{\"name\":\"w\",\"mountPath\":\"/x\"}]}],\"volumes\":[{\"name\":\"v\",\"emptyDir\":{}}]}}",
		"{\"metadata\":{\"uid\":\"u\"},\"spec\":{\"automountServiceAccountToken\":false,\"containers\":[{\"name\":\"c\"}],"
		"\"volumes\":[{\"name\":\"v\",\"secret\":{\"secretName\":\"creds\",\"defaultMode\":4095}}]}}",
	};
	for (size_t i = 0; i < sizeof(invalid) / sizeof(invalid[0]); i++) {
		pod = J(invalid[i]);
		struct rt_pod spec = { 0 };
		spec.ncontainers = 1;
		spec.containers = xcalloc(1, sizeof(*spec.containers));
		spec.containers[0].name = xstrdup("c");
		buf_reset(&err);
		int rc = kl_volumes_setup(d, pod, &src, &spec, &err);
		if (rc != E_INVALID)
			fail_msg("case %zu: %d (%s)", i, rc, buf_cstr(&err));
		rt_pod_release(&spec);
		json_decref(pod);
	}
	/* automount off and no volumes: nothing to refresh */
	pod = J("{\"spec\":{\"automountServiceAccountToken\":false,\"volumes\":[{\"name\":\"e\",\"emptyDir\":{}}]}}");
	assert_false(kl_volumes_refreshable(pod));
	json_decref(pod);
	pod = J("{\"spec\":{}}");
	assert_true(kl_volumes_refreshable(pod));
	json_decref(pod);
	kl_volumes_remove(d);
	json_decref(f.cm);
	json_decref(f.secret);
	buf_release(&err);
	free(d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_path_ok),
		cmocka_unit_test(test_atomic_swap),
		cmocka_unit_test(test_setup_and_mounts),
		cmocka_unit_test(test_errors),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
