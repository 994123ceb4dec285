/* Small helpers the bench programs share (header only: each bench C file is a program of its own).
 * Not for the daemons: src/common has their utilities. */
#ifndef URSA_BENCHUTIL_H
#define URSA_BENCHUTIL_H
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Prints "<prog>: msg" and exits 1. */
static inline void bench_die(const char *prog, const char *msg)
{
	fprintf(stderr, "%s: %s\n", prog, msg);
	exit(1);
}

/* A whole non-negative number up to max, or -1 when v is not one. */
static inline long bench_num(const char *v, long max)
{
	char *end;
	long x = strtol(v, &end, 10);
	return *end || end == v || x < 0 || x > max ? -1 : x;
}

/* RSS and its high-water mark (KiB) and CPU seconds (user + system) of a process: -1 each when
 * it is gone. */
struct bench_pstat {
	long rss_kb, hwm_kb;
	double cpu_s;
};

static inline struct bench_pstat bench_proc_stat(int pid)
{
	struct bench_pstat p = { -1, -1, -1 };
	char path[64], line[512];
	snprintf(path, sizeof(path), "/proc/%d/status", pid);
	FILE *f = fopen(path, "r");
	while (f && fgets(line, sizeof(line), f)) {
		if (strncmp(line, "VmRSS:", 6) == 0)
			p.rss_kb = strtol(line + 6, NULL, 10);
		else if (strncmp(line, "VmHWM:", 6) == 0)
			p.hwm_kb = strtol(line + 6, NULL, 10);
	}
	if (f)
		fclose(f);
	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	f = fopen(path, "r");
	char buf[2048];
	size_t n = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;
	if (f)
		fclose(f);
	buf[n] = '\0';
	const char *rp = strrchr(buf, ')');
	unsigned long ut, st;
	/* after ") ": state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime */
	if (rp && sscanf(rp + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &st) == 2)
		p.cpu_s = (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
	return p;
}

#endif
