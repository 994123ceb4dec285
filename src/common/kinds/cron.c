/* CronJob schedules (ursa/cron.h): parsing and the next firing time. Pure apart from the time
 * zone files the C library reads. */
#include <ctype.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>
#include "ursa/cron.h"
#include "ursa/errors.h"

struct field {
	const char *what;
	int lo, hi;
	const char *const *names; /* names[i] stands for lo + i, or NULL */
};

static const char *const month_names[] = { "jan", "feb", "mar", "apr", "may", "jun",
					   "jul", "aug", "sep", "oct", "nov", "dec", NULL };
static const char *const dow_names[] = { "sun", "mon", "tue", "wed", "thu", "fri", "sat", NULL };

static const struct field fields[5] = {
	{ "minute", 0, 59, NULL },  { "hour", 0, 23, NULL },	 { "day of month", 1, 31, NULL },
	{ "month", 1, 12, month_names }, { "day of week", 0, 7, dow_names },
};

static void fail(struct buf *err, const char *fmt, const char *a, const char *b)
{
	if (err)
		buf_addf(err, fmt, a, b);
}

/* A number or a name of f in s[0..n). */
static int parse_value(const struct field *f, const char *s, size_t n, int *ret)
{
	if (n == 0 || n > 9)
		return -1;
	if (isdigit((unsigned char)s[0])) {
		int v = 0;
		for (size_t i = 0; i < n; i++) {
			if (!isdigit((unsigned char)s[i]))
				return -1;
			v = v * 10 + (s[i] - '0');
		}
		*ret = v;
		return v >= f->lo && v <= f->hi ? 0 : -1;
	}
	for (int i = 0; f->names && f->names[i]; i++)
		if (n == 3 && strncasecmp(s, f->names[i], 3) == 0) {
			*ret = f->lo + i;
			return 0;
		}
	return -1;
}

/* One comma-separated item: `*`, `?`, v, a-b, each optionally /step. */
static int parse_item(const struct field *f, const char *s, size_t n, uint64_t *bits)
{
	const char *slash = memchr(s, '/', n);
	size_t rn = slash ? (size_t)(slash - s) : n;
	int lo, hi, step = 1;
	if (slash) {
		const char *st = slash + 1;
		size_t sn = n - rn - 1;
		if (sn == 0 || sn > 4)
			return -1;
		step = 0;
		for (size_t i = 0; i < sn; i++) {
			if (!isdigit((unsigned char)st[i]))
				return -1;
			step = step * 10 + (st[i] - '0');
		}
		if (step < 1)
			return -1;
	}
	if (rn == 1 && (s[0] == '*' || s[0] == '?')) {
		lo = f->lo, hi = f->hi;
		if (f->hi == 7)
			hi = 6; /* 7 is Sunday again */
	} else {
		const char *dash = memchr(s, '-', rn);
		if (dash) {
			if (parse_value(f, s, (size_t)(dash - s), &lo) < 0 ||
			    parse_value(f, dash + 1, rn - (size_t)(dash - s) - 1, &hi) < 0 || hi < lo)
				return -1;
		} else {
			if (parse_value(f, s, rn, &lo) < 0)
				return -1;
			hi = slash ? f->hi : lo; /* "a/n" means a through the end */
		}
	}
	for (int v = lo; v <= hi; v += step)
		*bits |= 1ull << v;
	return 0;
}

static int parse_field(const struct field *f, const char *s, size_t n, uint64_t *bits, bool *any, struct buf *err)
{
	*bits = 0;
	*any = n >= 1 && (s[0] == '*' || s[0] == '?');
	size_t i = 0;
	while (i <= n) {
		const char *c = memchr(s + i, ',', n - i);
		size_t e = c ? (size_t)(c - s) : n;
		if (parse_item(f, s + i, e - i, bits) < 0) {
			char *item = strndup(s + i, e - i);
			fail(err, "invalid %s value \"%s\"", f->what, item ? item : "");
			free(item);
			return E_INVALID;
		}
		i = e + 1;
	}
	return 0;
}

static const struct {
	const char *name, *spec;
} macros[] = {
	{ "@yearly", "0 0 1 1 *" }, { "@annually", "0 0 1 1 *" }, { "@monthly", "0 0 1 * *" },
	{ "@weekly", "0 0 * * 0" }, { "@daily", "0 0 * * *" },	 { "@midnight", "0 0 * * *" },
	{ "@hourly", "0 * * * *" },
};

int cron_parse(const char *spec, struct cron_schedule *ret, struct buf *err)
{
	if (!spec) {
		fail(err, "%s%s", "empty schedule", "");
		return E_INVALID;
	}
	while (isspace((unsigned char)*spec))
		spec++;
	if (strncmp(spec, "TZ=", 3) == 0 || strncmp(spec, "CRON_TZ=", 8) == 0) {
		fail(err, "%s%s", "cannot use TZ or CRON_TZ in schedule, use timeZone field instead", "");
		return E_INVALID;
	}
	if (spec[0] == '@') {
		size_t n = strcspn(spec, " \t\n");
		for (size_t i = 0; i < sizeof(macros) / sizeof(macros[0]); i++)
			if (strlen(macros[i].name) == n && strncasecmp(spec, macros[i].name, n) == 0 &&
			    spec[n + strspn(spec + n, " \t\n")] == 0)
				return cron_parse(macros[i].spec, ret, err);
		fail(err, "unrecognized descriptor \"%s\"%s", spec, "");
		return E_INVALID;
	}
	const char *p = spec;
	uint64_t bits[5];
	bool any[5];
	for (int k = 0; k < 5; k++) {
		while (isspace((unsigned char)*p))
			p++;
		size_t n = strcspn(p, " \t\n\r\v\f");
		if (n == 0) {
			fail(err, "expected exactly 5 fields, found %s%s", k == 0 ? "0" : "fewer", "");
			return E_INVALID;
		}
		if (parse_field(&fields[k], p, n, &bits[k], &any[k], err) < 0)
			return E_INVALID;
		p += n;
	}
	while (isspace((unsigned char)*p))
		p++;
	if (*p) {
		fail(err, "expected exactly 5 fields, found %s%s", "more", "");
		return E_INVALID;
	}
	if (bits[4] & (1ull << 7))
		bits[4] = (bits[4] | 1) & 0x7f;
	*ret = (struct cron_schedule){ .minute = bits[0], .hour = (uint32_t)bits[1], .dom = (uint32_t)bits[2],
				       .month = (uint32_t)bits[3], .dow = (uint32_t)bits[4], .dom_any = any[2],
				       .dow_any = any[4] };
	return 0;
}

bool cron_matches(const struct cron_schedule *s, int min, int hour, int mday, int mon, int wday)
{
	if (min < 0 || min > 59 || hour < 0 || hour > 23 || mday < 1 || mday > 31 || mon < 1 || mon > 12 || wday < 0 ||
	    wday > 6)
		return false;
	if (!(s->minute >> min & 1) || !(s->hour >> hour & 1) || !(s->month >> mon & 1))
		return false;
	bool d = s->dom >> mday & 1, w = s->dow >> wday & 1;
	return s->dom_any || s->dow_any ? d && w : d || w;
}

bool cron_valid_tz(const char *tz)
{
	if (!tz || !*tz)
		return true;
	size_t n = strlen(tz);
	if (n > 200 || tz[0] == '/' || tz[0] == '.' || strstr(tz, "..") || strstr(tz, "//"))
		return false;
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)tz[i]) && !strchr("_+-/", tz[i]))
			return false;
	if (strcmp(tz, "UTC") == 0 || strcmp(tz, "Etc/UTC") == 0)
		return true;
	char path[300];
	snprintf(path, sizeof(path), "/usr/share/zoneinfo/%s", tz);
	return access(path, R_OK) == 0;
}

static pthread_mutex_t tz_lock = PTHREAD_MUTEX_INITIALIZER;

struct clock {
	bool utc;
};

static void to_tm(const struct clock *c, time_t t, struct tm *tm)
{
	if (c->utc)
		gmtime_r(&t, tm);
	else
		localtime_r(&t, tm);
}

static time_t from_tm(const struct clock *c, struct tm *tm)
{
	tm->tm_isdst = -1;
	return c->utc ? timegm(tm) : mktime(tm);
}

#define FIVE_YEARS (5LL * 366 * 86400)

static int64_t next_in(const struct clock *c, const struct cron_schedule *s, int64_t from)
{
	int64_t t = (from >= 0 ? from / 60 : (from - 59) / 60) * 60 + 60, end = from + FIVE_YEARS;
	for (int guard = 0; t <= end && guard < 200000; guard++) {
		struct tm tm;
		to_tm(c, (time_t)t, &tm);
		int64_t nt;
		bool dom = s->dom >> tm.tm_mday & 1, dow = s->dow >> tm.tm_wday & 1;
		bool dayok = s->dom_any || s->dow_any ? dom && dow : dom || dow;
		if (!(s->month >> (tm.tm_mon + 1) & 1)) {
			tm.tm_mday = 1, tm.tm_hour = 0, tm.tm_min = 0, tm.tm_sec = 0, tm.tm_mon++;
			nt = from_tm(c, &tm);
		} else if (!dayok) {
			tm.tm_hour = 0, tm.tm_min = 0, tm.tm_sec = 0, tm.tm_mday++;
			nt = from_tm(c, &tm);
		} else if (!(s->hour >> tm.tm_hour & 1)) {
			nt = t - tm.tm_min * 60 - tm.tm_sec + 3600;
		} else if (!(s->minute >> tm.tm_min & 1)) {
			nt = t - tm.tm_sec + 60;
		} else {
			return t - tm.tm_sec;
		}
		t = nt > t ? nt : t + 60; /* always progress, even across odd DST transitions */
	}
	return -1;
}

int cron_next(const struct cron_schedule *s, const char *tz, int64_t from, int64_t *ret)
{
	bool utc = !tz || !*tz || strcmp(tz, "UTC") == 0 || strcmp(tz, "Etc/UTC") == 0;
	if (!utc && !cron_valid_tz(tz))
		return E_INVALID;
	struct clock c = { utc };
	int64_t r;
	if (utc) {
		r = next_in(&c, s, from);
	} else {
		pthread_mutex_lock(&tz_lock);
		char *old = getenv("TZ") ? strdup(getenv("TZ")) : NULL;
		setenv("TZ", tz, 1);
		tzset();
		r = next_in(&c, s, from);
		if (old)
			setenv("TZ", old, 1);
		else
			unsetenv("TZ");
		tzset();
		free(old);
		pthread_mutex_unlock(&tz_lock);
	}
	if (r < 0)
		return E_NOT_FOUND;
	*ret = r;
	return 0;
}
