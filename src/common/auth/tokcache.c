/* Authenticated bearer tokens, kept briefly (see ursa/auth.h). A slot is chosen by a hash of the
 * token's tail (a signed token's tail is its signature) and holds a full copy of the token,
 * compared in constant time, so a lookup never confuses two tokens. */
#include <jansson.h>
#include <openssl/crypto.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "auth_internal.h"
#include "ursa/auth.h"
#include "ursa/buf.h"
#include "ursa/errors.h"
#include "ursa/jsonutil.h"
#include "ursa/xalloc.h"

#define HASHED_TAIL 64
#define CLAIMS_DEPTH 8

struct slot {
	char *tok;
	size_t len;
	time_t expires;
	struct identity id;
};

struct tokcache {
	pthread_mutex_t mu;
	struct slot slots[TOKCACHE_SLOTS];
};

struct tokcache *tokcache_new(void)
{
	struct tokcache *c = xcalloc(1, sizeof(*c));
	pthread_mutex_init(&c->mu, NULL);
	return c;
}

static void slot_clear(struct slot *s)
{
	free(s->tok);
	identity_release(&s->id);
	memset(s, 0, sizeof(*s));
}

void tokcache_free(struct tokcache *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < TOKCACHE_SLOTS; i++)
		slot_clear(&c->slots[i]);
	pthread_mutex_destroy(&c->mu);
	free(c);
}

static size_t slot_of(const char *tok, size_t len)
{
	uint64_t h = 1469598103934665603ull; /* FNV-1a */
	size_t from = len > HASHED_TAIL ? len - HASHED_TAIL : 0;
	for (size_t i = from; i < len; i++) {
		h ^= (unsigned char)tok[i];
		h *= 1099511628211ull;
	}
	h ^= len;
	return (size_t)(h % TOKCACHE_SLOTS);
}

int tokcache_get(struct tokcache *c, const char *tok, size_t len, time_t now, struct identity *ret)
{
	if (!c || len == 0 || len > TOKCACHE_MAX_TOKEN)
		return E_NOT_FOUND;
	struct slot *s = &c->slots[slot_of(tok, len)];
	int rc = E_NOT_FOUND;
	pthread_mutex_lock(&c->mu);
	if (s->tok && s->len == len && CRYPTO_memcmp(s->tok, tok, len) == 0) {
		if (now < s->expires) {
			identity_copy(&s->id, ret);
			rc = 0;
		} else {
			slot_clear(s);
		}
	}
	pthread_mutex_unlock(&c->mu);
	return rc;
}

long long tokcache_token_exp(const char *tok, size_t len)
{
	const char *dot1 = memchr(tok, '.', len);
	if (!dot1)
		return 0;
	const char *claims = dot1 + 1, *end = tok + len;
	const char *dot2 = memchr(claims, '.', (size_t)(end - claims));
	if (!dot2)
		return 0;
	struct buf raw = BUF_INIT;
	long long exp = 0;
	if (b64url_decode((struct sv){ claims, (size_t)(dot2 - claims) }, &raw) == 0 && raw.len) {
		json_t *c = json_parse_limited(raw.ptr, raw.len, CLAIMS_DEPTH, NULL);
		json_t *e = json_object_get(c, "exp");
		if (json_is_number(e) && json_number_value(e) > 0 && json_number_value(e) < 9.0e18)
			exp = (long long)json_number_value(e);
		json_decref(c);
	}
	buf_release(&raw);
	return exp;
}

void tokcache_put(struct tokcache *c, const char *tok, size_t len, const struct identity *id, time_t now)
{
	if (!c || len == 0 || len > TOKCACHE_MAX_TOKEN)
		return;
	time_t expires = now + TOKCACHE_TTL_S;
	long long exp = tokcache_token_exp(tok, len);
	if (exp > 0 && exp < (long long)expires)
		expires = (time_t)exp; /* the verifier refuses a token from its exp on */
	if (expires <= now)
		return;
	struct slot fresh = { .tok = xmalloc(len), .len = len, .expires = expires };
	memcpy(fresh.tok, tok, len);
	identity_copy(id, &fresh.id);
	struct slot *s = &c->slots[slot_of(tok, len)];
	pthread_mutex_lock(&c->mu);
	struct slot old = *s;
	*s = fresh;
	pthread_mutex_unlock(&c->mu);
	slot_clear(&old);
}
