/* Log lines: "ts=... level=... component=... msg=\"...\" key=value..." on stderr. When stderr
 * is the systemd journal (JOURNAL_STREAM names its device and inode), every line starts with
 * the syslog priority "<N>", which journald takes as the entry's priority (journalctl -p). */
#include "ursa/log.h"
#include "ursa/buf.h"
#include "ursa/timeutil.h"
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static enum log_level min_level = LOG_INFO;
static const char *component = "ursa";
static const char *const level_names[] = { "debug", "info", "warn", "error" };
static const char *const priorities[] = { "<7>", "<6>", "<4>", "<3>" }; /* syslog: debug, info, warning, err */
static pthread_once_t journal_once = PTHREAD_ONCE_INIT;
static bool to_journal;

/* JOURNAL_STREAM is "<device>:<inode>" of the stream systemd connected; it may be inherited by
 * a process whose stderr was redirected since, so it counts only if stderr is that file. */
static void journal_check(void)
{
	const char *v = getenv("JOURNAL_STREAM");
	struct stat st;
	uintmax_t dev, ino;
	char *end;
	if (!v || fstat(STDERR_FILENO, &st) != 0)
		return;
	dev = strtoumax(v, &end, 10);
	if (end == v || *end != ':')
		return;
	v = end + 1;
	ino = strtoumax(v, &end, 10);
	if (end == v || *end)
		return;
	to_journal = dev == (uintmax_t)st.st_dev && ino == (uintmax_t)st.st_ino;
}

void log_set_level(enum log_level lvl)
{
	min_level = lvl;
}

void log_set_level_name(const char *name)
{
	min_level = LOG_INFO;
	for (size_t i = 0; name && i < sizeof(level_names) / sizeof(level_names[0]); i++)
		if (strcmp(level_names[i], name) == 0)
			min_level = (enum log_level)i;
}

void log_set_component(const char *name)
{
	component = name;
}

void log_msg(enum log_level lvl, const char *msg, const char *fmt, ...)
{
	if (lvl < min_level)
		return;
	struct buf b = BUF_INIT;
	struct timeval tv;
	pthread_once(&journal_once, journal_check);
	if (to_journal)
		buf_adds(&b, priorities[lvl]);
	gettimeofday(&tv, NULL);
	struct tm tm;
	gmtime_r(&tv.tv_sec, &tm);
	buf_addf(&b, "ts=%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ level=%s component=%s msg=", tm.tm_year + 1900,
		 tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (long)(tv.tv_usec / 1000), level_names[lvl],
		 component);
	buf_add_json_str(&b, msg, strlen(msg));
	if (fmt && *fmt) {
		buf_addch(&b, ' ');
		va_list ap;
		va_start(ap, fmt);
		buf_vaddf(&b, fmt, ap);
		va_end(ap);
	}
	buf_addch(&b, '\n');
	fwrite(b.ptr, 1, b.len, stderr);
	buf_release(&b);
}
