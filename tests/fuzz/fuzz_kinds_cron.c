/* Fuzzes the CronJob schedule parser and the next-run computation: for every schedule that
 * parses, the next run after a few instants is later, on a whole minute, and matches the fields. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "ursa/cron.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > 256)
		return 0;
	char *s = malloc(size + 1);
	memcpy(s, data, size);
	s[size] = 0;
	struct cron_schedule cs;
	struct buf err = BUF_INIT;
	if (cron_parse(s, &cs, &err) == 0) {
		static const int64_t froms[] = { 0, 1767225599, 1798761600 + 37, 4102444800LL };
		for (size_t i = 0; i < sizeof(froms) / sizeof(froms[0]); i++) {
			int64_t n;
			if (cron_next(&cs, NULL, froms[i], &n) != 0)
				continue;
			if (n <= froms[i] || n % 60 != 0)
				abort();
			time_t t = (time_t)n;
			struct tm tm;
			gmtime_r(&t, &tm);
			if (!cron_matches(&cs, tm.tm_min, tm.tm_hour, tm.tm_mday, tm.tm_mon + 1, tm.tm_wday))
				abort();
		}
	}
	buf_release(&err);
	free(s);
	return 0;
}
