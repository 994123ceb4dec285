#include "ursa/log.h"
#include "ursa/buf.h"
#include "ursa/timeutil.h"
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <sys/time.h>
#include <string.h>
#include <time.h>

static enum log_level min_level = LOG_INFO;
static const char *component = "ursa";
static const char *const names[] = { "debug", "info", "warn", "error" };

void log_set_level(enum log_level lvl)
{
	min_level = lvl;
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
	gettimeofday(&tv, NULL);
	struct tm tm;
	gmtime_r(&tv.tv_sec, &tm);
	buf_addf(&b, "ts=%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ level=%s component=%s msg=", tm.tm_year + 1900,
		 tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (long)(tv.tv_usec / 1000), names[lvl],
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
