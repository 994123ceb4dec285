/* Signed tokens: sign/verify round trips (RS256, ES256), expiry, tampering, algorithm
 * confusion, wrong keys, claim validation, base64url strictness. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "auth/auth_internal.h"
#include "ursa/errors.h"
#include "ursa/xalloc.h"
#include <openssl/pem.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct keys {
	char *dir;
	char *rsa_priv, *rsa_pub, *rsa2_pub, *ec_priv, *ec_pub;
	EVP_PKEY *rsa, *rsa2, *ec;
};
static struct keys K;

static int write_ec_pair(const char *priv, const char *pub)
{
	EVP_PKEY *k = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256");
	FILE *f1 = fopen(priv, "w"), *f2 = fopen(pub, "w");
	int ok = k && f1 && f2 && PEM_write_PrivateKey(f1, k, NULL, NULL, 0, NULL, NULL) == 1 &&
		 PEM_write_PUBKEY(f2, k) == 1;
	if (f1)
		fclose(f1);
	if (f2)
		fclose(f2);
	EVP_PKEY_free(k);
	return ok ? 0 : -1;
}

static EVP_PKEY *load_priv(const char *path)
{
	EVP_PKEY *k = NULL;
	char *err = NULL;
	if (auth_load_private_key(path, &k, &err) < 0) {
		fprintf(stderr, "%s\n", err);
		free(err);
		return NULL;
	}
	return k;
}

static int setup(void **state)
{
	char tmpl[] = "/tmp/ursa-jwt-XXXXXX";
	if (!mkdtemp(tmpl))
		return -1;
	K.dir = xstrdup(tmpl);
	K.rsa_priv = xasprintf("%s/rsa.pem", K.dir);
	K.rsa_pub = xasprintf("%s/rsa.pub", K.dir);
	K.rsa2_pub = xasprintf("%s/rsa2.pub", K.dir);
	K.ec_priv = xasprintf("%s/ec.pem", K.dir);
	K.ec_pub = xasprintf("%s/ec.pub", K.dir);
	char *rsa2_priv = xasprintf("%s/rsa2.pem", K.dir);
	if (keypair_generate(K.rsa_priv, K.rsa_pub) < 0 || keypair_generate(rsa2_priv, K.rsa2_pub) < 0 ||
	    write_ec_pair(K.ec_priv, K.ec_pub) < 0)
		return -1;
	K.rsa = load_priv(K.rsa_priv);
	K.rsa2 = load_priv(rsa2_priv);
	K.ec = load_priv(K.ec_priv);
	free(rsa2_priv);
	return K.rsa && K.rsa2 && K.ec ? 0 : -1;
}

static int teardown(void **state)
{
	char *files[] = { K.rsa_priv, K.rsa_pub, K.rsa2_pub, K.ec_priv, K.ec_pub };
	for (size_t i = 0; i < ARRAY_SIZE(files); i++) {
		unlink(files[i]);
		free(files[i]);
	}
	char *rsa2_priv = xasprintf("%s/rsa2.pem", K.dir);
	unlink(rsa2_priv);
	free(rsa2_priv);
	rmdir(K.dir);
	free(K.dir);
	EVP_PKEY_free(K.rsa);
	EVP_PKEY_free(K.rsa2);
	EVP_PKEY_free(K.ec);
	return 0;
}

static struct identity alice(void)
{
	struct identity id = { .user = xstrdup("alice"), .uid = xstrdup("uid-7"), .tenant = xstrdup("acme") };
	identity_add_group(&id, "dev", 3);
	identity_add_group(&id, "qa", 2);
	return id;
}

static struct authn *authn_with_key(const char *pub)
{
	struct authn *a = NULL;
	char *err = NULL;
	if (authn_new(NULL, pub, &a, &err) != 0)
		fail_msg("authn_new(%s): %s", pub, err);
	return a;
}

static void check_alice(const struct identity *got)
{
	assert_string_equal(got->user, "alice");
	assert_string_equal(got->uid, "uid-7");
	assert_string_equal(got->tenant, "acme");
	assert_int_equal(got->ngroups, 2);
	assert_string_equal(got->groups[0], "dev");
	assert_string_equal(got->groups[1], "qa");
}

static void round_trip(const char *priv, const char *pub, const char *want_alg)
{
	struct identity id = alice(), got = { 0 };
	char *err = NULL;
	char *tok = jwt_sign_file(priv, &id, 3600, &err);
	assert_non_null(tok);

	struct buf header = BUF_INIT;
	assert_int_equal(b64url_decode((struct sv){ tok, strcspn(tok, ".") }, &header), 0);
	assert_non_null(strstr(buf_cstr(&header), want_alg));
	buf_release(&header);

	struct authn *a = authn_with_key(pub);
	assert_int_equal(authn_token(a, tok, &got), 0);
	check_alice(&got);
	identity_release(&got);
	authn_free(a);

	/* The private key file also serves as the verifying key. */
	a = authn_with_key(priv);
	assert_int_equal(authn_token(a, tok, &got), 0);
	identity_release(&got);
	authn_free(a);

	free(tok);
	identity_release(&id);
}

static void test_round_trip_rsa(void **state)
{
	round_trip(K.rsa_priv, K.rsa_pub, "\"RS256\"");
}

static void test_round_trip_ec(void **state)
{
	round_trip(K.ec_priv, K.ec_pub, "\"ES256\"");
}

static void test_es256_signature_is_raw(void **state)
{
	struct identity id = alice();
	char *err = NULL;
	char *tok = jwt_sign(K.ec, &id, 1000, 0, &err);
	assert_non_null(tok);
	struct buf sig = BUF_INIT;
	assert_int_equal(b64url_decode(sv_from(strrchr(tok, '.') + 1), &sig), 0);
	assert_int_equal(sig.len, 64);
	buf_release(&sig);
	/* ttl 0: no exp claim, valid far in the future. */
	struct identity got = { 0 };
	assert_int_equal(jwt_verify(K.ec, tok, strlen(tok), 4000000000, &got), 0);
	identity_release(&got);
	free(tok);
	identity_release(&id);
}

static void test_expiry(void **state)
{
	struct identity id = alice(), got = { 0 };
	char *err = NULL;
	char *tok = jwt_sign(K.rsa, &id, 1000000, 60, &err);
	assert_non_null(tok);
	size_t n = strlen(tok);
	assert_int_equal(jwt_verify(K.rsa, tok, n, 1000059, &got), 0);
	identity_release(&got);
	assert_int_equal(jwt_verify(K.rsa, tok, n, 1000060, &got), E_UNAUTHORIZED);
	assert_int_equal(jwt_verify(K.rsa, tok, n, 2000000, &got), E_UNAUTHORIZED);
	assert_null(got.user);
	free(tok);

	/* Through the real clock: a token that expired ten seconds ago. */
	tok = jwt_sign_file(K.ec_priv, &id, -10, &err);
	assert_non_null(tok);
	struct authn *a = authn_with_key(K.ec_pub);
	assert_int_equal(authn_token(a, tok, &got), E_UNAUTHORIZED);
	authn_free(a);
	free(tok);
	identity_release(&id);
}

static char *raw(EVP_PKEY *key, const char *alg, const char *header, const char *claims)
{
	char *tok = jwt_sign_raw(key, alg, header, claims);
	assert_non_null(tok);
	return tok;
}

static int verify_at(EVP_PKEY *key, const char *tok, time_t now)
{
	struct identity got = { 0 };
	int r = jwt_verify(key, tok, strlen(tok), now, &got);
	identity_release(&got);
	return r;
}

static const char *RS_HDR = "{\"alg\":\"RS256\",\"typ\":\"JWT\"}";
static const char *ES_HDR = "{\"alg\":\"ES256\"}";

static void test_not_before(void **state)
{
	char *tok = raw(K.rsa, "RS256", RS_HDR,
			"{\"iss\":\"ursa\",\"sub\":\"a\",\"tenant\":\"acme\",\"nbf\":5000,\"exp\":9000}");
	assert_int_equal(verify_at(K.rsa, tok, 4999), E_UNAUTHORIZED);
	assert_int_equal(verify_at(K.rsa, tok, 5000), 0);
	assert_int_equal(verify_at(K.rsa, tok, 9000), E_UNAUTHORIZED);
	free(tok);
}

/* Replaces part idx (0 header, 1 payload, 2 signature) of tok with repl. New string. */
static char *swap_part(const char *tok, int idx, const char *repl)
{
	const char *d1 = strchr(tok, '.'), *d2 = strchr(d1 + 1, '.');
	struct buf b = BUF_INIT;
	struct sv parts[3] = { { tok, (size_t)(d1 - tok) }, { d1 + 1, (size_t)(d2 - d1 - 1) }, sv_from(d2 + 1) };
	parts[idx] = sv_from(repl);
	for (int i = 0; i < 3; i++) {
		if (i)
			buf_addch(&b, '.');
		buf_add(&b, parts[i].ptr, parts[i].len);
	}
	return buf_detach(&b, NULL);
}

static char *b64(const char *s)
{
	struct buf b = BUF_INIT;
	b64url_encode(&b, s, strlen(s));
	return buf_detach(&b, NULL);
}

static void test_tampering(void **state)
{
	struct identity id = alice();
	char *err = NULL;
	EVP_PKEY *keys[] = { K.rsa, K.ec };
	for (size_t k = 0; k < ARRAY_SIZE(keys); k++) {
		char *tok = jwt_sign(keys[k], &id, 1000, 0, &err);
		assert_non_null(tok);
		assert_int_equal(verify_at(keys[k], tok, 2000), 0);

		/* Payload claiming the system tenant, original signature. */
		char *p = b64("{\"iss\":\"ursa\",\"sub\":\"alice\",\"tenant\":\"system\",\"groups\":[\"system:masters\"]}");
		char *t2 = swap_part(tok, 1, p);
		assert_int_equal(verify_at(keys[k], t2, 2000), E_UNAUTHORIZED);
		free(t2);
		free(p);

		/* One signature character changed. */
		t2 = xstrdup(tok);
		char *s = strrchr(t2, '.') + 5;
		*s = *s == 'A' ? 'B' : 'A';
		assert_int_equal(verify_at(keys[k], t2, 2000), E_UNAUTHORIZED);
		free(t2);

		/* Signature truncated, or dropped. */
		t2 = xstrdup(tok);
		t2[strlen(t2) - 4] = '\0';
		assert_int_equal(verify_at(keys[k], t2, 2000), E_UNAUTHORIZED);
		free(t2);
		t2 = swap_part(tok, 2, "");
		assert_int_equal(verify_at(keys[k], t2, 2000), E_UNAUTHORIZED);
		free(t2);

		/* Extra part, trailing junk. */
		t2 = xasprintf("%s.x", tok);
		assert_int_equal(verify_at(keys[k], t2, 2000), E_UNAUTHORIZED);
		free(t2);
		free(tok);
	}
	identity_release(&id);
}

static void test_alg_none_and_mismatch(void **state)
{
	const char *claims = "{\"iss\":\"ursa\",\"sub\":\"mallory\",\"tenant\":\"system\"}";
	char *h = b64("{\"alg\":\"none\",\"typ\":\"JWT\"}"), *c = b64(claims);
	char *none = xasprintf("%s.%s.", h, c);
	assert_int_equal(verify_at(K.rsa, none, 10), E_UNAUTHORIZED);
	assert_int_equal(verify_at(K.ec, none, 10), E_UNAUTHORIZED);
	free(none);
	free(h);

	/* A real RS256 signature, but a header saying none / HS256 / ES256. */
	char *good = raw(K.rsa, "RS256", RS_HDR, claims);
	assert_int_equal(verify_at(K.rsa, good, 10), 0);
	const char *headers[] = { "{\"alg\":\"none\"}", "{\"alg\":\"HS256\"}", "{\"alg\":\"ES256\"}",
				  "{\"alg\":\"rs256\"}", "{\"typ\":\"JWT\"}", "{\"alg\":[\"RS256\"]}" };
	for (size_t i = 0; i < ARRAY_SIZE(headers); i++) {
		char *tok = raw(K.rsa, "RS256", headers[i], claims);
		if (verify_at(K.rsa, tok, 10) != E_UNAUTHORIZED)
			fail_msg("header %s accepted", headers[i]);
		free(tok);
	}
	/* An ES256 token shown to an RSA verifier, and the other way round. */
	char *es = raw(K.ec, "ES256", ES_HDR, claims);
	assert_int_equal(verify_at(K.ec, es, 10), 0);
	assert_int_equal(verify_at(K.rsa, es, 10), E_UNAUTHORIZED);
	assert_int_equal(verify_at(K.ec, good, 10), E_UNAUTHORIZED);
	/* Header lies about the algorithm the signature was made with. */
	char *lie = raw(K.ec, "ES256", RS_HDR, claims);
	assert_int_equal(verify_at(K.rsa, lie, 10), E_UNAUTHORIZED);
	assert_int_equal(verify_at(K.ec, lie, 10), E_UNAUTHORIZED);
	/* Unknown critical extensions and odd typ values. */
	char *crit = raw(K.rsa, "RS256", "{\"alg\":\"RS256\",\"crit\":[\"x\"],\"x\":1}", claims);
	assert_int_equal(verify_at(K.rsa, crit, 10), E_UNAUTHORIZED);
	char *typ = raw(K.rsa, "RS256", "{\"alg\":\"RS256\",\"typ\":\"at+jwt\"}", claims);
	assert_int_equal(verify_at(K.rsa, typ, 10), E_UNAUTHORIZED);
	free(good);
	free(es);
	free(lie);
	free(crit);
	free(typ);
	free(c);
}

static void test_wrong_key(void **state)
{
	struct identity id = alice(), got = { 0 };
	char *err = NULL;
	char *tok = jwt_sign_file(K.rsa_priv, &id, 600, &err);
	assert_non_null(tok);
	struct authn *a = authn_with_key(K.rsa2_pub);
	assert_int_equal(authn_token(a, tok, &got), E_UNAUTHORIZED);
	authn_free(a);
	a = authn_with_key(K.rsa_pub);
	assert_int_equal(authn_token(a, tok, &got), 0);
	identity_release(&got);
	authn_free(a);
	free(tok);
	identity_release(&id);
}

static void test_claims(void **state)
{
	static const struct {
		const char *claims;
		int want;
	} cases[] = {
		{ "{\"iss\":\"ursa\",\"sub\":\"a\",\"tenant\":\"acme\"}", 0 },
		{ "{\"iss\":\"ursa\",\"sub\":\"a\",\"tenant\":\"acme\",\"uid\":null,\"groups\":null}", 0 },
		{ "{\"iss\":\"ursa\",\"sub\":\"a\"}", E_UNAUTHORIZED },                      /* no tenant */
		{ "{\"iss\":\"ursa\",\"tenant\":\"acme\"}", E_UNAUTHORIZED },                /* no sub */
		{ "{\"sub\":\"a\",\"tenant\":\"acme\"}", E_UNAUTHORIZED },                    /* no iss */
		{ "{\"iss\":\"other\",\"sub\":\"a\",\"tenant\":\"acme\"}", E_UNAUTHORIZED },
		{ "{\"iss\":\"ursa\",\"sub\":\"a\",\"tenant\":\"all\"}", E_UNAUTHORIZED },
		{ "{\"iss\":\"ursa\",\"sub\":\"a\",\"tenant\":\"../x\"}", E_UNAUTHORIZED },
		{ "{\"iss\":\"ursa\",\"sub\":\"\",\"tenant\":\"acme\"}", E_UNAUTHORIZED },
		{ "{\"iss\":\"ursa\",\"sub\":\"a\\u0000b\",\"tenant\":\"acme\"}", E_UNAUTHORIZED },
		{ "{\"iss\":\"ursa\",\"sub\":1,\"tenant\":\"acme\"}", E_UNAUTHORIZED },
		{ "{\"iss\":\"ursa\",\"sub\":\"a\",\"tenant\":\"acme\",\"groups\":[1]}", E_UNAUTHORIZED },
		{ "{\"iss\":\"ursa\",\"sub\":\"a\",\"tenant\":\"acme\",\"groups\":\"g\"}", E_UNAUTHORIZED },
		{ "{\"iss\":\"ursa\",\"sub\":\"a\",\"tenant\":\"acme\",\"exp\":\"9999999999\"}", E_UNAUTHORIZED },
		{ "{\"iss\":\"ursa\",\"sub\":\"a\",\"tenant\":\"acme\",\"exp\":99}", E_UNAUTHORIZED },
		{ "{\"iss\":\"ursa\",\"sub\":\"a\",\"tenant\":\"acme\",\"exp\":101}", 0 },
		{ "{\"iss\":\"ursa\",\"sub\":\"a\",\"tenant\":\"acme\",\"sub\":\"b\"}", E_UNAUTHORIZED },
		{ "{\"iss\":\"ursa\",\"sub\":\"a\",\"tenant\":\"acme\",\"x\":[[[[[1]]]]]}", E_UNAUTHORIZED },
		{ "[\"iss\",\"ursa\"]", E_UNAUTHORIZED },
	};
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		char *tok = raw(K.ec, "ES256", ES_HDR, cases[i].claims);
		int r = verify_at(K.ec, tok, 100);
		if (r != cases[i].want)
			fail_msg("claims %s: got %d want %d", cases[i].claims, r, cases[i].want);
		free(tok);
	}
}

static void test_sign_validates_identity(void **state)
{
	char *err = NULL;
	struct identity id = { .user = xstrdup("bob"), .tenant = xstrdup("all") };
	assert_null(jwt_sign(K.rsa, &id, 0, 60, &err));
	assert_non_null(strstr(err, "tenant"));
	free(err);
	err = NULL;
	free(id.tenant);
	id.tenant = NULL; /* defaults to system */
	char *tok = jwt_sign(K.rsa, &id, 0, 60, &err);
	assert_non_null(tok);
	struct identity got = { 0 };
	assert_int_equal(jwt_verify(K.rsa, tok, strlen(tok), 1, &got), 0);
	assert_string_equal(got.tenant, TENANT_SYSTEM);
	assert_null(got.uid);
	assert_int_equal(got.ngroups, 0);
	identity_release(&got);
	free(tok);
	identity_release(&id);

	assert_null(jwt_sign_file("/nonexistent/key.pem", &id, 60, &err));
	assert_non_null(strstr(err, "/nonexistent/key.pem"));
	free(err);
}

static void test_length_cap(void **state)
{
	struct buf b = BUF_INIT;
	for (size_t i = 0; i <= AUTH_TOKEN_MAX; i++)
		buf_addch(&b, 'a');
	struct identity got = { 0 };
	struct authn *a = authn_with_key(K.rsa_pub);
	assert_int_equal(authn_token(a, buf_cstr(&b), &got), E_UNAUTHORIZED);
	assert_int_equal(jwt_verify(K.rsa, b.ptr, b.len, 1, &got), E_UNAUTHORIZED);
	authn_free(a);
	buf_release(&b);
}

static void test_bad_key_files(void **state)
{
	struct authn *a = NULL;
	char *err = NULL;
	char *junk = xasprintf("%s/junk.pem", K.dir);
	FILE *f = fopen(junk, "w");
	fputs("-----BEGIN PUBLIC KEY-----\nnot base64!\n-----END PUBLIC KEY-----\n", f);
	fclose(f);
	assert_int_equal(authn_new(NULL, junk, &a, &err), E_BAD_REQUEST);
	assert_null(a);
	assert_non_null(strstr(err, junk));
	free(err);
	err = NULL;

	/* An EC key on another curve is refused. */
	EVP_PKEY *k = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-384");
	f = fopen(junk, "w");
	PEM_write_PUBKEY(f, k);
	fclose(f);
	EVP_PKEY_free(k);
	assert_int_equal(authn_new(NULL, junk, &a, &err), E_BAD_REQUEST);
	assert_non_null(strstr(err, "unsupported"));
	free(err);
	unlink(junk);
	free(junk);
}

static void test_keypair_modes(void **state)
{
	struct stat st;
	assert_int_equal(stat(K.rsa_priv, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	assert_int_equal(keypair_generate("/nonexistent/dir/k.pem", "/nonexistent/dir/k.pub"), -1);
}

static void test_b64url(void **state)
{
	static const char *vec[][2] = { { "", "" }, { "f", "Zg" }, { "fo", "Zm8" }, { "foo", "Zm9v" },
					{ "foob", "Zm9vYg" }, { "\xfb\xff", "-_8" } };
	for (size_t i = 0; i < ARRAY_SIZE(vec); i++) {
		struct buf e = BUF_INIT, d = BUF_INIT;
		b64url_encode(&e, vec[i][0], strlen(vec[i][0]));
		assert_string_equal(buf_cstr(&e), vec[i][1]);
		assert_int_equal(b64url_decode(sv_from(vec[i][1]), &d), 0);
		assert_string_equal(buf_cstr(&d), vec[i][0]);
		buf_release(&e);
		buf_release(&d);
	}
	static const char *bad[] = { "Zg==", "Z", "Zh", "Zm9v+", "Zm9v/", "Zm 9v", "Zm9=" };
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		struct buf d = BUF_INIT;
		if (b64url_decode(sv_from(bad[i]), &d) == 0)
			fail_msg("\"%s\" decoded", bad[i]);
		buf_release(&d);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip_rsa),
		cmocka_unit_test(test_round_trip_ec),
		cmocka_unit_test(test_es256_signature_is_raw),
		cmocka_unit_test(test_expiry),
		cmocka_unit_test(test_not_before),
		cmocka_unit_test(test_tampering),
		cmocka_unit_test(test_alg_none_and_mismatch),
		cmocka_unit_test(test_wrong_key),
		cmocka_unit_test(test_claims),
		cmocka_unit_test(test_sign_validates_identity),
		cmocka_unit_test(test_length_cap),
		cmocka_unit_test(test_bad_key_files),
		cmocka_unit_test(test_keypair_modes),
		cmocka_unit_test(test_b64url),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
