#ifndef URSA_TIMEUTIL_H
#define URSA_TIMEUTIL_H
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>
#include "ursa/buf.h"

int64_t now_ms(void);            /* wall clock, ms since epoch */
int64_t mono_ms(void);           /* monotonic clock, ms */
int64_t mono_us(void);
/* RFC3339 UTC "2026-01-02T03:04:05Z" of t into out (appends). */
void rfc3339_add(struct buf *out, time_t t);
/* RFC3339 with microseconds "2026-01-02T03:04:05.123456Z" (for MicroTime fields). */
void rfc3339_micro_add(struct buf *out, int64_t unix_us);
/* Parses RFC3339 (with optional fraction and Z or +hh:mm); 0 on success. */
int rfc3339_parse(const char *s, time_t *ret_t);
/* Kubernetes-style short age: "5s", "3m", "3h2m", "12d" (appends). */
void age_add(struct buf *out, time_t since, time_t now);

/* The CLOCK_MONOTONIC time ms from now, for pthread_cond_timedwait on a monotonic cond. */
void mono_deadline(struct timespec *ret, int64_t ms);
/* The same on CLOCK_REALTIME, for a cond created with the default clock. */
void wall_deadline(struct timespec *ret, int64_t ms);
/* Sleeps up to ms on cond (created with CLOCK_MONOTONIC) and lock, returning early once *stop is
 * true: whoever sets it broadcasts cond under lock. */
void cond_sleep_ms(pthread_mutex_t *lock, pthread_cond_t *cond, const atomic_bool *stop, int64_t ms);

#endif
