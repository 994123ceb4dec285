/* Per-tenant token buckets: each tenant may send `rate` requests a second on average with
 * bursts of `burst`; beyond that the gateway answers 429 with Retry-After. */
#include <stdlib.h>
#include "gw.h"
#include "ursa/bucket.h"
#include "ursa/xalloc.h"

#define LIMITER_MAX_TENANTS 100000

void limiter_init(struct limiter *l, double rate, double burst)
{
	pthread_mutex_init(&l->lock, NULL);
	strmap_init(&l->buckets);
	l->rate = rate;
	l->burst = burst < 1 ? 1 : burst;
}

void limiter_release(struct limiter *l)
{
	strmap_release(&l->buckets, free);
	pthread_mutex_destroy(&l->lock);
}

int limiter_check(struct limiter *l, const char *tenant, int64_t now_us)
{
	if (l->rate <= 0)
		return 0;
	pthread_mutex_lock(&l->lock);
	if (l->buckets.n >= LIMITER_MAX_TENANTS && !strmap_get(&l->buckets, tenant)) {
		strmap_release(&l->buckets, free);
		strmap_init(&l->buckets);
	}
	struct strmap_ent *e = strmap_put(&l->buckets, tenant, NULL);
	if (!e->val) {
		e->val = xmalloc(sizeof(struct token_bucket));
		token_bucket_init(e->val, l->rate, l->burst, now_us);
	}
	int64_t wait = token_bucket_take(e->val, now_us) ? 0 : token_bucket_wait_us(e->val, now_us);
	pthread_mutex_unlock(&l->lock);
	if (wait == 0)
		return 0;
	int64_t s = (wait + 999999) / 1000000;
	return s < 1 ? 1 : (int)s;
}
