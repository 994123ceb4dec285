/* The kubelet's resource usage arithmetic (stats.h): CPU rates from two cumulative samples and
 * the parsers of /proc/stat, /proc/meminfo and the cgroup files. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>
#include "stats.h"

static void test_rate(void **state)
{
	(void)state;
	/* 0.5 s of CPU in 1 s: half a core */
	assert_int_equal(stats_rate_nanocores(1000000000ULL, 1500000000ULL, 1000000000LL), 500000000ULL);
	/* 2 s of CPU in 1 s: two cores */
	assert_int_equal(stats_rate_nanocores(0, 2000000000ULL, 1000000000LL), 2000000000ULL);
	/* 3 ms in 2 s */
	assert_int_equal(stats_rate_nanocores(10, 3000010ULL, 2000000000LL), 1500000ULL);
	/* a restarted counter, no time, negative time */
	assert_int_equal(stats_rate_nanocores(5000, 100, 1000000000LL), 0);
	assert_int_equal(stats_rate_nanocores(0, 100, 0), 0);
	assert_int_equal(stats_rate_nanocores(0, 100, -5), 0);
	/* large counters do not overflow: 10^6 s of CPU at 64 cores over a 10^6 s window */
	assert_int_equal(stats_rate_nanocores(0, 64000000000000000ULL, 1000000000000000LL), 64000000000ULL);
}

static void test_proc_stat(void **state)
{
	(void)state;
	uint64_t ns = 0;
	const char *t = "cpu  100 20 30 1000 50 5 5 10 0 0\ncpu0 50 10 15 500 25 2 2 5 0 0\nintr 1\n";
	assert_int_equal(stats_proc_stat_cpu_ns(t, 100, &ns), 0);
	/* busy = 100+20+30+5+5+10 = 170 ticks of 10 ms */
	assert_int_equal(ns, 1700000000ULL);
	/* only four fields (old kernels) */
	assert_int_equal(stats_proc_stat_cpu_ns("cpu 1 2 3 4\n", 100, &ns), 0);
	assert_int_equal(ns, 60000000ULL);
	assert_int_equal(stats_proc_stat_cpu_ns("intr 1\ncpu0 1 2 3 4\n", 100, &ns), -1);
	assert_int_equal(stats_proc_stat_cpu_ns("cpu 1\n", 100, &ns), -1);
	assert_int_equal(stats_proc_stat_cpu_ns("cpu 1 2 3 4\n", 0, &ns), -1);
	assert_int_equal(stats_proc_stat_cpu_ns("", 100, &ns), -1);
}

static void test_meminfo(void **state)
{
	(void)state;
	uint64_t b = 0;
	const char *t = "MemTotal:       8000000 kB\nMemFree:         100 kB\nMemAvailable:    6000000 kB\n";
	assert_int_equal(stats_meminfo_working_set(t, &b), 0);
	assert_int_equal(b, 2000000ULL * 1024);
	assert_int_equal(stats_meminfo_working_set("MemTotal: 10 kB\n", &b), -1);
	assert_int_equal(stats_meminfo_working_set("MemTotal: 10 kB\nMemAvailable: 20 kB\n", &b), 0);
	assert_int_equal(b, 0);
}

static void test_cgroup_files(void **state)
{
	(void)state;
	const char *v1 = "cache 100\nrss 200\ninactive_file 7\ntotal_cache 1000\ntotal_inactive_file 4096\n";
	assert_int_equal(stats_cgroup_working_set(10000, v1, false), 10000 - 4096);
	const char *v2 = "anon 100\nfile 900\ninactive_file 300\nactive_file 600\n";
	assert_int_equal(stats_cgroup_working_set(1000, v2, true), 700);
	assert_int_equal(stats_cgroup_working_set(100, v2, true), 0);
	assert_int_equal(stats_cgroup_working_set(100, NULL, false), 100);
	assert_int_equal(stats_cgroup_working_set(100, "nothing 1\n", false), 100);
	uint64_t ns = 0;
	assert_int_equal(stats_cpu_stat_usage_ns("usage_usec 1234\nuser_usec 1000\n", &ns), 0);
	assert_int_equal(ns, 1234000ULL);
	assert_int_equal(stats_cpu_stat_usage_ns("user_usec 1000\n", &ns), -1);
}

static void test_proc_pid_stat(void **state)
{
	(void)state;
	uint64_t ns = 0, rss = 0;
	/* comm with a space and a parenthesis; utime 100 stime 50 cutime 7 cstime 3, rss 250 pages */
	const char *t = "4242 (sh (x) y) R 1 4242 4242 0 -1 4194560 100 0 0 0 100 50 7 3 20 0 1 0 12345 "
			"1000000 250 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n";
	assert_int_equal(stats_proc_pid_stat(t, 100, 4096, &ns, &rss), 0);
	assert_int_equal(ns, 1600000000ULL);
	assert_int_equal(rss, 250ULL * 4096);
	assert_int_equal(stats_proc_pid_stat("4242 (sh) R 1 2 3\n", 100, 4096, &ns, &rss), -1);
	assert_int_equal(stats_proc_pid_stat("no parens", 100, 4096, &ns, &rss), -1);
	assert_int_equal(stats_proc_pid_stat(NULL, 100, 4096, &ns, &rss), -1);
	assert_int_equal(stats_proc_pid_stat(t, 0, 4096, &ns, &rss), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rate),
		cmocka_unit_test(test_proc_stat),
		cmocka_unit_test(test_meminfo),
		cmocka_unit_test(test_cgroup_files),
		cmocka_unit_test(test_proc_pid_stat),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
