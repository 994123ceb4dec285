/* Discovery's order of a custom resource group's versions (src/common/apiserver/discovery.c):
 * Kubernetes' version priority. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "apiserver/internal.h"

static int cmp(const void *a, const void *b)
{
	return discovery_version_cmp(*(const char *const *)a, *(const char *const *)b);
}

static void test_priority_order(void **state)
{
	(void)state;
	/* Kubernetes' own example of the order, shuffled */
	const char *v[] = { "v1beta1", "foo10", "v11alpha2", "v2", "v12alpha1", "v3beta1", "v10", "v1",
			    "foo1",    "v10beta3", "v11beta2" };
	const char *want[] = { "v10",	   "v2",	"v1",	     "v11beta2", "v10beta3", "v3beta1",
			       "v1beta1", "v12alpha1", "v11alpha2", "foo1",	 "foo10" };
	size_t n = sizeof(v) / sizeof(v[0]);
	qsort(v, n, sizeof(v[0]), cmp);
	for (size_t i = 0; i < n; i++)
		assert_string_equal(v[i], want[i]);
}

static void test_not_kube_like(void **state)
{
	(void)state;
	/* a suffix after the minor, a missing minor, no digits: plain names, after every kube-like one */
	assert_true(discovery_version_cmp("v1alpha1", "v1alpha1x") < 0);
	assert_true(discovery_version_cmp("v1alpha1", "v1beta") < 0);
	assert_true(discovery_version_cmp("v1alpha1", "v") < 0);
	assert_true(discovery_version_cmp("valpha1", "vbeta1") < 0); /* both plain: alphabetical */
	assert_true(discovery_version_cmp("v1", "v1") == 0);
	assert_true(discovery_version_cmp("v1beta2", "v1beta10") > 0);
	assert_true(discovery_version_cmp("v2alpha1", "v1beta1") > 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_priority_order),
		cmocka_unit_test(test_not_kube_like),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
