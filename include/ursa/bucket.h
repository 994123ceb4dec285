/* A token bucket (src/common/util/bucket.c): rate tokens a second up to burst, for the
 * gateway's per-tenant request limit and the controllers' eviction rates. Times are microseconds
 * of one monotonic clock, chosen by the caller. Not thread-safe: callers serialize. */
#ifndef URSA_BUCKET_H
#define URSA_BUCKET_H
#include <stdbool.h>
#include <stdint.h>

struct token_bucket {
	double rate, burst, tokens;
	int64_t last_us;
};

/* A full bucket at now_us: rate < 0 counts as 0 (never grants, and then it starts empty),
 * burst < 1 as 1. */
void token_bucket_init(struct token_bucket *b, double rate, double burst, int64_t now_us);
/* Changes the rate from now_us on (what accrued at the old rate stays, up to burst); rate 0
 * also empties the bucket. */
void token_bucket_set_rate(struct token_bucket *b, double rate, int64_t now_us);
/* Takes one token if there is one at now_us. */
bool token_bucket_take(struct token_bucket *b, int64_t now_us);
/* µs from now_us until one token is there: 0 when there is one now, INT64_MAX at rate 0. */
int64_t token_bucket_wait_us(struct token_bucket *b, int64_t now_us);

#endif
