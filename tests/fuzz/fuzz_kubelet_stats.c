/* Fuzzes the kubelet's usage parsers (stats.h): any bytes as /proc/stat, /proc/meminfo, a
 * cgroup's memory.stat and cpu.stat, and a /proc/<pid>/stat line. None may crash or read past
 * the text; a failed parse leaves its results untouched; a working set never exceeds the usage. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "stats.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);
	if (!s)
		return 0;
	memcpy(s, data, size);
	s[size] = '\0';
	uint64_t a = 7, b = 9;
	if (stats_proc_stat_cpu_ns(s, 100, &a) != 0 && a != 7)
		abort();
	a = 7;
	if (stats_meminfo_working_set(s, &a) != 0 && a != 7)
		abort();
	a = 7;
	if (stats_cpu_stat_usage_ns(s, &a) != 0 && a != 7)
		abort();
	a = 7;
	if (stats_proc_pid_stat(s, 100, 4096, &a, &b) != 0 && (a != 7 || b != 9))
		abort();
	if (stats_cgroup_working_set(12345, s, false) > 12345 || stats_cgroup_working_set(12345, s, true) > 12345)
		abort();
	free(s);
	return 0;
}
