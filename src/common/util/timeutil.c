#include "ursa/timeutil.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

int64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t mono_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

void rfc3339_add(struct buf *out, time_t t)
{
	struct tm tm;
	gmtime_r(&t, &tm);
	buf_addf(out, "%04d-%02d-%02dT%02d:%02d:%02dZ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
		 tm.tm_min, tm.tm_sec);
}

void rfc3339_micro_add(struct buf *out, int64_t unix_us)
{
	time_t t = (time_t)(unix_us / 1000000);
	struct tm tm;
	gmtime_r(&t, &tm);
	buf_addf(out, "%04d-%02d-%02dT%02d:%02d:%02d.%06dZ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
		 tm.tm_hour, tm.tm_min, tm.tm_sec, (int)(unix_us % 1000000));
}

int rfc3339_parse(const char *s, time_t *ret_t)
{
	int y, mo, d, h, mi, sec, n = 0;
	if (!s || sscanf(s, "%4d-%2d-%2dT%2d:%2d:%2d%n", &y, &mo, &d, &h, &mi, &sec, &n) != 6)
		return -1;
	const char *p = s + n;
	if (*p == '.') {
		p++;
		while (*p >= '0' && *p <= '9')
			p++;
	}
	long off = 0;
	if (*p == 'Z' || *p == 'z') {
		p++;
	} else if (*p == '+' || *p == '-') {
		int oh, om;
		if (sscanf(p + 1, "%2d:%2d", &oh, &om) != 2)
			return -1;
		off = (oh * 3600L + om * 60L) * (*p == '+' ? 1 : -1);
		p += 6;
	} else {
		return -1;
	}
	if (*p)
		return -1;
	struct tm tm = { 0 };
	tm.tm_year = y - 1900;
	tm.tm_mon = mo - 1;
	tm.tm_mday = d;
	tm.tm_hour = h;
	tm.tm_min = mi;
	tm.tm_sec = sec;
	*ret_t = timegm(&tm) - off;
	return 0;
}

void age_add(struct buf *out, time_t since, time_t now)
{
	long s = (long)(now - since);
	if (s < 0)
		s = 0;
	long m = s / 60, h = m / 60;
	if (s < 120)
		buf_addf(out, "%lds", s);
	else if (m < 10)
		s % 60 ? buf_addf(out, "%ldm%lds", m, s % 60) : buf_addf(out, "%ldm", m);
	else if (m < 180)
		buf_addf(out, "%ldm", m);
	else if (h < 8)
		m % 60 ? buf_addf(out, "%ldh%ldm", h, m % 60) : buf_addf(out, "%ldh", h);
	else if (h < 48)
		buf_addf(out, "%ldh", h);
	else if (h < 24 * 8)
		h % 24 ? buf_addf(out, "%ldd%ldh", h / 24, h % 24) : buf_addf(out, "%ldd", h / 24);
	else if (h < 24 * 365 * 2)
		buf_addf(out, "%ldd", h / 24);
	else if (h < 24 * 365 * 8)
		(h / 24) % 365 ? buf_addf(out, "%ldy%ldd", h / 24 / 365, (h / 24) % 365) : buf_addf(out, "%ldy", h / 24 / 365);
	else
		buf_addf(out, "%ldy", h / 24 / 365);
}

static void deadline(clockid_t clock, struct timespec *ret, int64_t ms)
{
	clock_gettime(clock, ret);
	ret->tv_sec += ms / 1000;
	ret->tv_nsec += (ms % 1000) * 1000000L;
	if (ret->tv_nsec >= 1000000000L) {
		ret->tv_sec++;
		ret->tv_nsec -= 1000000000L;
	}
}

void mono_deadline(struct timespec *ret, int64_t ms)
{
	deadline(CLOCK_MONOTONIC, ret, ms);
}

void wall_deadline(struct timespec *ret, int64_t ms)
{
	deadline(CLOCK_REALTIME, ret, ms);
}

void cond_sleep_ms(pthread_mutex_t *lock, pthread_cond_t *cond, const atomic_bool *stop, int64_t ms)
{
	struct timespec ts;
	mono_deadline(&ts, ms);
	pthread_mutex_lock(lock);
	while (!atomic_load(stop))
		if (pthread_cond_timedwait(cond, lock, &ts))
			break;
	pthread_mutex_unlock(lock);
}
