/* Which secrets a pod names (src/common/apiserver/nodesecrets.c): what a node credential may
 * then GET. Every place a pod can name a secret counts; anything else, or another name, does not. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include "testjson.h"
#include "apiserver/internal.h"

static void test_every_reference(void **state)
{
	json_t *pod = J("{\"spec\":{"
			"\"imagePullSecrets\":[{\"name\":\"pull\"}],"
			"\"volumes\":[{\"name\":\"v\",\"secret\":{\"secretName\":\"vol\"}},"
			"{\"name\":\"p\",\"projected\":{\"sources\":[{\"configMap\":{\"name\":\"cm\"}},{\"secret\":{\"name\":\"proj\"}}]}}],"
			"\"initContainers\":[{\"name\":\"i\",\"envFrom\":[{\"secretRef\":{\"name\":\"initfrom\"}}]}],"
			"\"containers\":[{\"name\":\"c\",\"env\":[{\"name\":\"A\",\"value\":\"plain\"},"
			"{\"name\":\"B\",\"valueFrom\":{\"secretKeyRef\":{\"name\":\"envref\",\"key\":\"k\"}}},"
			"{\"name\":\"C\",\"valueFrom\":{\"configMapKeyRef\":{\"name\":\"cmref\",\"key\":\"k\"}}}]}],"
			"\"ephemeralContainers\":[{\"name\":\"e\",\"envFrom\":[{\"secretRef\":{\"name\":\"eph\"}}]}]}}");
	static const char *const yes[] = { "pull", "vol", "proj", "initfrom", "envref", "eph" };
	static const char *const no[] = { "cm", "cmref", "plain", "A", "c", "v", "", "pul" };
	for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++)
		if (!pod_uses_secret(pod, yes[i]))
			fail_msg("pod should name secret %s", yes[i]);
	for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++)
		if (pod_uses_secret(pod, no[i]))
			fail_msg("pod should not name secret %s", no[i]);
	json_decref(pod);
}

static void test_malformed(void **state)
{
	static const char *const pods[] = {
		"{}", "{\"spec\":7}", "{\"spec\":{\"imagePullSecrets\":{\"name\":\"x\"}}}",
		"{\"spec\":{\"imagePullSecrets\":[\"x\",{\"name\":7}]}}", "{\"spec\":{\"volumes\":[{\"secret\":\"x\"}]}}",
		"{\"spec\":{\"containers\":[{\"env\":[{\"valueFrom\":{\"secretKeyRef\":\"x\"}}]}]}}",
	};
	for (size_t i = 0; i < sizeof(pods) / sizeof(pods[0]); i++) {
		json_t *pod = J(pods[i]);
		assert_false(pod_uses_secret(pod, "x"));
		json_decref(pod);
	}
	assert_false(pod_uses_secret(NULL, "x"));
}

/* Configmaps: volumes, projections, env configMapKeyRef and envFrom configMapRef of every kind of
 * container; a secret of the same name, or an image pull secret, is not a configmap. */
static void test_configmaps(void **state)
{
	json_t *pod = J("{\"spec\":{"
			"\"imagePullSecrets\":[{\"name\":\"pull\"}],"
			"\"volumes\":[{\"name\":\"v\",\"configMap\":{\"name\":\"vol\"}},"
			"{\"name\":\"s\",\"secret\":{\"secretName\":\"secvol\"}},"
			"{\"name\":\"p\",\"projected\":{\"sources\":[{\"configMap\":{\"name\":\"proj\"}},{\"secret\":{\"name\":\"sproj\"}}]}}],"
			"\"initContainers\":[{\"name\":\"i\",\"envFrom\":[{\"configMapRef\":{\"name\":\"initfrom\"}},"
			"{\"secretRef\":{\"name\":\"sfrom\"}}]}],"
			"\"containers\":[{\"name\":\"c\",\"env\":[{\"name\":\"A\",\"value\":\"plain\"},"
			"{\"name\":\"B\",\"valueFrom\":{\"secretKeyRef\":{\"name\":\"senv\",\"key\":\"k\"}}},"
			"{\"name\":\"C\",\"valueFrom\":{\"configMapKeyRef\":{\"name\":\"envref\",\"key\":\"k\"}}}]}],"
			"\"ephemeralContainers\":[{\"name\":\"e\",\"envFrom\":[{\"configMapRef\":{\"name\":\"eph\"}}]}]}}");
	static const char *const yes[] = { "vol", "proj", "initfrom", "envref", "eph" };
	static const char *const no[] = { "pull", "secvol", "sproj", "sfrom", "senv", "plain", "A", "v", "", "vo" };
	for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++)
		if (!pod_uses_configmap(pod, yes[i]))
			fail_msg("pod should name configmap %s", yes[i]);
	for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++)
		if (pod_uses_configmap(pod, no[i]))
			fail_msg("pod should not name configmap %s", no[i]);
	json_decref(pod);
	static const char *const bad[] = { "{}", "{\"spec\":{\"volumes\":[{\"configMap\":\"x\"}]}}",
					   "{\"spec\":{\"containers\":[{\"envFrom\":[{\"configMapRef\":[\"x\"]}]}]}}" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		pod = J(bad[i]);
		assert_false(pod_uses_configmap(pod, "x"));
		json_decref(pod);
	}
	assert_false(pod_uses_configmap(NULL, "x"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_reference),
		cmocka_unit_test(test_configmaps),
		cmocka_unit_test(test_malformed),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
