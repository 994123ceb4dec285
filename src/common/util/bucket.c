/* The token bucket of include/ursa/bucket.h. */
#include <math.h>
#include "ursa/bucket.h"

/* A token counts as there when this close to 1 (accrual in small steps rounds below it). */
#define TOKEN_EPSILON 1e-9

void token_bucket_init(struct token_bucket *b, double rate, double burst, int64_t now_us)
{
	b->rate = rate > 0 ? rate : 0;
	b->burst = burst > 1 ? burst : 1;
	b->tokens = b->rate > 0 ? b->burst : 0;
	b->last_us = now_us;
}

static void refill(struct token_bucket *b, int64_t now_us)
{
	if (now_us <= b->last_us)
		return;
	b->tokens = fmin(b->burst, b->tokens + b->rate * (double)(now_us - b->last_us) / 1e6);
	b->last_us = now_us;
}

void token_bucket_set_rate(struct token_bucket *b, double rate, int64_t now_us)
{
	refill(b, now_us);
	b->rate = rate > 0 ? rate : 0;
	if (b->rate == 0)
		b->tokens = 0;
}

bool token_bucket_take(struct token_bucket *b, int64_t now_us)
{
	refill(b, now_us);
	if (b->rate <= 0 || b->tokens < 1.0 - TOKEN_EPSILON)
		return false;
	b->tokens = fmax(0, b->tokens - 1.0);
	return true;
}

int64_t token_bucket_wait_us(struct token_bucket *b, int64_t now_us)
{
	refill(b, now_us);
	if (b->rate <= 0)
		return INT64_MAX;
	if (b->tokens >= 1.0 - TOKEN_EPSILON)
		return 0;
	return (int64_t)ceil((1.0 - b->tokens) * 1e6 / b->rate);
}
