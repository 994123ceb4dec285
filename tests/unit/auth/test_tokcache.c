/* The cache of authenticated bearer tokens: hits, expiry by TTL and by the exp claim, no
 * confusion between tokens sharing a slot, copies owned by the caller. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>
#include "ursa/auth.h"
#include "ursa/buf.h"
#include "ursa/errors.h"
#include "ursa/xalloc.h"

/* claims {"sub":"a","exp":1000} and {"sub":"a"} and {"exp":1e3}, base64url */
#define TOK_EXP1000 "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJhIiwiZXhwIjoxMDAwfQ.c2lnbmF0dXJl"
#define TOK_NOEXP "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJhIn0.c2lnbmF0dXJl"
#define TOK_REALEXP "x.eyJleHAiOjFlM30.y"

static struct identity ident(const char *user, const char *tenant)
{
	struct identity id = { .user = xstrdup(user), .tenant = xstrdup(tenant), .ngroups = 1 };
	id.groups = xcalloc(1, sizeof(*id.groups));
	id.groups[0] = xstrdup("system:masters");
	return id;
}

static void put(struct tokcache *c, const char *tok, const char *user, time_t now)
{
	struct identity id = ident(user, "system");
	tokcache_put(c, tok, strlen(tok), &id, now);
	identity_release(&id);
}

static int get(struct tokcache *c, const char *tok, time_t now, struct identity *ret)
{
	return tokcache_get(c, tok, strlen(tok), now, ret);
}

static void test_exp_claim(void **state)
{
	(void)state;
	assert_int_equal(tokcache_token_exp(TOK_EXP1000, strlen(TOK_EXP1000)), 1000);
	assert_int_equal(tokcache_token_exp(TOK_NOEXP, strlen(TOK_NOEXP)), 0);
	assert_int_equal(tokcache_token_exp(TOK_REALEXP, strlen(TOK_REALEXP)), 1000);
	assert_int_equal(tokcache_token_exp("static-token", 12), 0);
	assert_int_equal(tokcache_token_exp("a.b", 3), 0);
	assert_int_equal(tokcache_token_exp("a.!!!.b", 7), 0);
	assert_int_equal(tokcache_token_exp("a..b", 4), 0);
}

static void test_hit_and_copy(void **state)
{
	(void)state;
	struct tokcache *c = tokcache_new();
	struct identity got = { 0 };
	assert_int_equal(get(c, TOK_NOEXP, 100, &got), E_NOT_FOUND);
	put(c, TOK_NOEXP, "alice", 100);
	assert_int_equal(get(c, TOK_NOEXP, 105, &got), 0);
	assert_string_equal(got.user, "alice");
	assert_string_equal(got.tenant, "system");
	assert_int_equal(got.ngroups, 1);
	assert_string_equal(got.groups[0], "system:masters");
	identity_release(&got);
	/* a prefix, a longer token, another token: misses */
	assert_int_equal(tokcache_get(c, TOK_NOEXP, strlen(TOK_NOEXP) - 1, 105, &got), E_NOT_FOUND);
	assert_int_equal(get(c, TOK_NOEXP "x", 105, &got), E_NOT_FOUND);
	assert_int_equal(get(c, TOK_EXP1000, 105, &got), E_NOT_FOUND);
	assert_null(got.user);
	tokcache_free(c);
}

static void test_ttl(void **state)
{
	(void)state;
	struct tokcache *c = tokcache_new();
	struct identity got = { 0 };
	put(c, TOK_NOEXP, "alice", 100);
	assert_int_equal(get(c, TOK_NOEXP, 100 + TOKCACHE_TTL_S - 1, &got), 0);
	identity_release(&got);
	assert_int_equal(get(c, TOK_NOEXP, 100 + TOKCACHE_TTL_S, &got), E_NOT_FOUND);
	tokcache_free(c);
}

static void test_exp_bounds_entry(void **state)
{
	(void)state;
	struct tokcache *c = tokcache_new();
	struct identity got = { 0 };
	put(c, TOK_EXP1000, "bob", 995);
	assert_int_equal(get(c, TOK_EXP1000, 999, &got), 0);
	identity_release(&got);
	assert_int_equal(get(c, TOK_EXP1000, 1000, &got), E_NOT_FOUND); /* exp reached, TTL not */
	put(c, TOK_EXP1000, "bob", 1000);                                /* already expired: not kept */
	assert_int_equal(get(c, TOK_EXP1000, 1000, &got), E_NOT_FOUND);
	tokcache_free(c);
}

static void test_many_tokens(void **state)
{
	(void)state;
	struct tokcache *c = tokcache_new();
	struct buf t = BUF_INIT;
	size_t hits = 0, n = 3 * TOKCACHE_SLOTS;
	for (size_t i = 0; i < n; i++) {
		buf_reset(&t);
		buf_addf(&t, "token-%zu", i);
		put(c, buf_cstr(&t), buf_cstr(&t), 10);
	}
	for (size_t i = 0; i < n; i++) {
		struct identity got = { 0 };
		buf_reset(&t);
		buf_addf(&t, "token-%zu", i);
		if (get(c, buf_cstr(&t), 11, &got) == 0) {
			assert_string_equal(got.user, buf_cstr(&t)); /* never another token's identity */
			hits++;
		}
		identity_release(&got);
	}
	assert_true(hits > 0 && hits <= TOKCACHE_SLOTS);
	struct identity got = { 0 };
	buf_reset(&t);
	buf_addf(&t, "token-%zu", n - 1);
	assert_int_equal(get(c, buf_cstr(&t), 11, &got), 0); /* the last put is always there */
	identity_release(&got);
	buf_release(&t);
	tokcache_free(c);
}

static void test_limits(void **state)
{
	(void)state;
	struct tokcache *c = tokcache_new();
	struct identity got = { 0 };
	char *big = xcalloc(TOKCACHE_MAX_TOKEN + 2, 1);
	memset(big, 'a', TOKCACHE_MAX_TOKEN + 1);
	put(c, big, "x", 10);
	assert_int_equal(get(c, big, 10, &got), E_NOT_FOUND);
	free(big);
	assert_int_equal(tokcache_get(c, "", 0, 10, &got), E_NOT_FOUND);
	assert_int_equal(tokcache_get(NULL, "a", 1, 10, &got), E_NOT_FOUND);
	tokcache_free(c);
	tokcache_free(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_exp_claim), cmocka_unit_test(test_hit_and_copy),
		cmocka_unit_test(test_ttl), cmocka_unit_test(test_exp_bounds_entry),
		cmocka_unit_test(test_many_tokens), cmocka_unit_test(test_limits),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
