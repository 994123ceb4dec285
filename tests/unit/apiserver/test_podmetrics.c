/* metrics.k8s.io quantities as metrics-server writes them, which kubectl top parses. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>
#include "apiserver/podmetrics.h"

static void test_cpu(void **state)
{
	(void)state;
	char out[32];
	metrics_cpu_quantity(0, out);
	assert_string_equal(out, "0");
	metrics_cpu_quantity(123456, out);
	assert_string_equal(out, "123456n");
	metrics_cpu_quantity(2000000000ULL, out);
	assert_string_equal(out, "2000000000n");
	metrics_cpu_quantity(UINT64_MAX, out);
	assert_string_equal(out, "18446744073709551615n");
}

static void test_memory(void **state)
{
	(void)state;
	char out[32];
	metrics_memory_quantity(0, out);
	assert_string_equal(out, "0");
	metrics_memory_quantity(1000, out);
	assert_string_equal(out, "1000");
	metrics_memory_quantity(1234 * 1024, out);
	assert_string_equal(out, "1234Ki");
	metrics_memory_quantity(64ULL << 20, out);
	assert_string_equal(out, "64Mi");
	metrics_memory_quantity(3ULL << 30, out);
	assert_string_equal(out, "3Gi");
	metrics_memory_quantity((1ULL << 20) + 1024, out);
	assert_string_equal(out, "1025Ki");
	metrics_memory_quantity(1ULL << 60, out);
	assert_string_equal(out, "1024Pi");
}

static void test_window(void **state)
{
	(void)state;
	char out[32];
	metrics_window(1.0, out);
	assert_string_equal(out, "1s");
	metrics_window(1.5, out);
	assert_string_equal(out, "1.5s");
	metrics_window(1.019, out);
	assert_string_equal(out, "1.019s");
	metrics_window(10.25, out);
	assert_string_equal(out, "10.25s");
	metrics_window(0.0004, out);
	assert_string_equal(out, "0s");
	metrics_window(-3, out);
	assert_string_equal(out, "0s");
	metrics_window(0.1, out);
	assert_string_equal(out, "0.1s");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cpu),
		cmocka_unit_test(test_memory),
		cmocka_unit_test(test_window),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
