/* CronJob schedules: the five-field cron syntax (minute hour day-of-month month day-of-week;
 * lists, ranges, steps, `*`, `?`, month and weekday names, weekday 7 = Sunday) and the macros
 * @yearly, @annually, @monthly, @weekly, @daily, @midnight, @hourly; and the next time a schedule
 * fires after a given instant in a time zone.
 *
 * Time zones are TZ database names ("Europe/Berlin", "Etc/UTC") read by the C library: a
 * computation in a zone other than UTC sets TZ under a process-wide lock for its duration (the
 * rest of the process formats times in UTC with gmtime_r, which TZ does not affect). */
#ifndef URSA_CRON_H
#define URSA_CRON_H
#include <stdbool.h>
#include <stdint.h>
#include "ursa/buf.h"

struct cron_schedule {
	uint64_t minute; /* bit m for minute m (0-59) */
	uint32_t hour;   /* bit h (0-23) */
	uint32_t dom;    /* bit d (1-31) */
	uint32_t month;  /* bit m (1-12) */
	uint32_t dow;    /* bit d (0-6, 0 = Sunday) */
	bool dom_any;    /* the day-of-month field was `*` or `?` (unrestricted) */
	bool dow_any;
};

/* Parses spec into *ret. E_INVALID with a reason appended to err (may be NULL) on a bad spec
 * (including a TZ= or CRON_TZ= prefix, which Kubernetes refuses in favour of spec.timeZone). */
int cron_parse(const char *spec, struct cron_schedule *ret, struct buf *err);
/* True if the broken-down local time (minute, hour, day of month 1-31, month 1-12, weekday 0-6)
 * matches: both day fields when either is unrestricted, else either of them (as cron does). */
bool cron_matches(const struct cron_schedule *s, int min, int hour, int mday, int mon, int wday);
/* True if tz is a usable time zone name: NULL or "" (UTC), or a TZ database name (letters,
 * digits, "_+-/", no "..", not absolute) whose zoneinfo file exists. */
bool cron_valid_tz(const char *tz);
/* The first whole minute strictly after `from` (unix seconds) at which s fires in tz (NULL or ""
 * = UTC); 0 and *ret, or E_NOT_FOUND when none within five years (e.g. "0 0 30 2 *"), or
 * E_INVALID for an unknown tz. */
int cron_next(const struct cron_schedule *s, const char *tz, int64_t from, int64_t *ret);

#endif
