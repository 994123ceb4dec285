/* Service-account tokens: the signer (aud, nbf, kubernetes.io claims), audiences at
 * verification, the kubernetes.io claim's checks, the identity's service-account fields through
 * copies, assertions and the token cache, user-name parsing, and TokenRequest specs. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "auth/auth_internal.h"
#include "ursa/errors.h"
#include "ursa/tokenreq.h"
#include "ursa/xalloc.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char *dir, *priv, *pub;

static int setup(void **state)
{
	char tmpl[] = "/tmp/ursa-satok-XXXXXX";
	if (!mkdtemp(tmpl))
		return -1;
	dir = xstrdup(tmpl);
	priv = xasprintf("%s/k.pem", dir);
	pub = xasprintf("%s/k.pub", dir);
	return keypair_generate(priv, pub);
}

static int teardown(void **state)
{
	unlink(priv);
	unlink(pub);
	rmdir(dir);
	free(priv), free(pub), free(dir);
	return 0;
}

/* robot of namespace team in tenant acme, bound to pod p (uid pod-1) when bound. */
static struct identity robot(bool bound)
{
	struct identity id = { .user = xstrdup("system:serviceaccount:team:robot"), .uid = xstrdup("sa-1"),
			       .tenant = xstrdup("acme"), .sa_uid = xstrdup("sa-1") };
	identity_add_group(&id, "system:serviceaccounts", 22);
	identity_add_group(&id, "system:serviceaccounts:team", 27);
	if (bound) {
		id.bound_kind = xstrdup("Pod");
		id.bound_name = xstrdup("p");
		id.bound_uid = xstrdup("pod-1");
	}
	return id;
}

static void check_robot(const struct identity *got, bool bound)
{
	assert_string_equal(got->user, "system:serviceaccount:team:robot");
	assert_string_equal(got->uid, "sa-1");
	assert_string_equal(got->sa_uid, "sa-1");
	assert_string_equal(got->tenant, "acme");
	assert_int_equal(got->ngroups, 2);
	assert_true(identity_in_group(got, "system:serviceaccounts:team"));
	if (bound) {
		assert_string_equal(got->bound_kind, "Pod");
		assert_string_equal(got->bound_name, "p");
		assert_string_equal(got->bound_uid, "pod-1");
	} else {
		assert_null(got->bound_kind);
		assert_null(got->bound_name);
		assert_null(got->bound_uid);
	}
}

static struct jwt_signer *signer(void)
{
	struct jwt_signer *s = NULL;
	char *err = NULL;
	if (jwt_signer_load(priv, &s, &err) < 0)
		fail_msg("jwt_signer_load: %s", err);
	return s;
}

static json_t *claims_of(const char *tok)
{
	const char *d1 = strchr(tok, '.'), *d2 = strchr(d1 + 1, '.');
	struct buf raw = BUF_INIT;
	assert_int_equal(b64url_decode((struct sv){ d1 + 1, (size_t)(d2 - d1 - 1) }, &raw), 0);
	json_t *c = json_loadb(raw.ptr, raw.len, 0, NULL);
	buf_release(&raw);
	assert_non_null(c);
	return c;
}

static void test_signer_claims(void **state)
{
	struct jwt_signer *s = signer();
	struct identity id = robot(true);
	char *err = NULL;
	const char *aud[] = { "ursa", "vault" };
	char *tok = jwt_signer_sign(s, &id, aud, 2, 1000, 600, &err);
	assert_non_null(tok);
	json_t *c = claims_of(tok);
	assert_int_equal(json_integer_value(json_object_get(c, "exp")), 1600);
	assert_int_equal(json_integer_value(json_object_get(c, "nbf")), 1000);
	assert_int_equal(json_integer_value(json_object_get(c, "iat")), 1000);
	assert_string_equal(json_string_value(json_array_get(json_object_get(c, "aud"), 1)), "vault");
	json_t *k = json_object_get(c, "kubernetes.io");
	assert_string_equal(json_string_value(json_object_get(k, "namespace")), "team");
	assert_string_equal(json_string_value(json_object_get(json_object_get(k, "serviceaccount"), "name")), "robot");
	assert_string_equal(json_string_value(json_object_get(json_object_get(k, "serviceaccount"), "uid")), "sa-1");
	assert_string_equal(json_string_value(json_object_get(json_object_get(k, "pod"), "uid")), "pod-1");
	assert_null(json_object_get(k, "secret"));
	json_decref(c);

	EVP_PKEY *key = NULL;
	assert_int_equal(auth_load_public_key(pub, &key, &err), 0);
	struct identity got = { 0 };
	assert_int_equal(jwt_verify_for(key, tok, strlen(tok), 1001, "vault", &got), 0);
	check_robot(&got, true);
	identity_release(&got);
	assert_int_equal(jwt_verify(key, tok, strlen(tok), 1001, &got), 0); /* lists "ursa" */
	identity_release(&got);
	assert_int_equal(jwt_verify_for(key, tok, strlen(tok), 1001, "other", &got), E_UNAUTHORIZED);
	assert_int_equal(jwt_verify(key, tok, strlen(tok), 999, &got), E_UNAUTHORIZED);  /* before nbf */
	assert_int_equal(jwt_verify(key, tok, strlen(tok), 1600, &got), E_UNAUTHORIZED); /* expired */
	free(tok);

	/* a token for another audience only is no API token */
	tok = jwt_signer_sign(s, &id, (const char *[]){ "vault" }, 1, time(NULL), 600, &err);
	assert_non_null(tok);
	struct authn *a = NULL;
	assert_int_equal(authn_new(NULL, pub, &a, &err), 0);
	assert_int_equal(authn_token(a, tok, &got), E_UNAUTHORIZED);
	assert_int_equal(authn_token_for(a, tok, "vault", &got), 0);
	check_robot(&got, true);
	identity_release(&got);
	free(tok);

	/* no audience: an API token, for no one else */
	struct identity plain = robot(false);
	tok = jwt_signer_sign(s, &plain, NULL, 0, time(NULL), 600, &err);
	assert_non_null(tok);
	assert_int_equal(authn_token(a, tok, &got), 0);
	check_robot(&got, false);
	identity_release(&got);
	assert_int_equal(authn_token_for(a, tok, "vault", &got), E_UNAUTHORIZED);
	free(tok);

	/* what cannot be signed */
	assert_null(jwt_signer_sign(s, &plain, NULL, 0, 1000, 0, &err));
	free(err);
	err = NULL;
	free(plain.bound_kind);
	plain.bound_kind = xstrdup("Pod"); /* kind without name and uid */
	assert_null(jwt_signer_sign(s, &plain, NULL, 0, 1000, 600, &err));
	free(err);
	err = NULL;
	assert_null(jwt_signer_sign(s, &plain, (const char *[]){ "" }, 1, 1000, 600, &err));
	free(err);
	EVP_PKEY_free(key);
	authn_free(a);
	identity_release(&plain);
	identity_release(&id);
	jwt_signer_free(s);
}

static void test_claims(void **state)
{
#define BASE "\"iss\":\"ursa\",\"tenant\":\"acme\",\"sub\":\"system:serviceaccount:team:robot\""
#define SA "\"serviceaccount\":{\"name\":\"robot\",\"uid\":\"u1\"}"
	static const struct {
		const char *claims, *aud;
		int want;
	} cases[] = {
		{ "{" BASE "}", "ursa", 0 },
		{ "{" BASE "}", "vault", E_UNAUTHORIZED },
		{ "{" BASE ",\"aud\":\"vault\"}", "vault", 0 },
		{ "{" BASE ",\"aud\":\"vault\"}", "ursa", E_UNAUTHORIZED },
		{ "{" BASE ",\"aud\":[\"a\",\"ursa\"]}", "ursa", 0 },
		{ "{" BASE ",\"aud\":[]}", "ursa", E_UNAUTHORIZED },
		{ "{" BASE ",\"aud\":[\"ursa\",1]}", "ursa", E_UNAUTHORIZED },
		{ "{" BASE ",\"aud\":{}}", "ursa", E_UNAUTHORIZED },
		{ "{" BASE ",\"kubernetes.io\":{\"namespace\":\"team\"," SA "}}", "ursa", 0 },
		{ "{" BASE ",\"kubernetes.io\":{\"namespace\":\"team\"," SA ",\"pod\":{\"name\":\"p\",\"uid\":\"x\"}}}",
		  "ursa", 0 },
		{ "{" BASE ",\"kubernetes.io\":{\"namespace\":\"team\"," SA ",\"secret\":{\"name\":\"s\",\"uid\":\"x\"}}}",
		  "ursa", 0 },
		/* both bound kinds, a bound object without uid, another namespace or name than sub's */
		{ "{" BASE ",\"kubernetes.io\":{\"namespace\":\"team\"," SA ",\"pod\":{\"name\":\"p\",\"uid\":\"x\"},"
		  "\"secret\":{\"name\":\"s\",\"uid\":\"x\"}}}", "ursa", E_UNAUTHORIZED },
		{ "{" BASE ",\"kubernetes.io\":{\"namespace\":\"team\"," SA ",\"pod\":{\"name\":\"p\"}}}", "ursa",
		  E_UNAUTHORIZED },
		{ "{" BASE ",\"kubernetes.io\":{\"namespace\":\"other\"," SA "}}", "ursa", E_UNAUTHORIZED },
		{ "{" BASE ",\"kubernetes.io\":{\"namespace\":\"team\",\"serviceaccount\":{\"name\":\"x\",\"uid\":\"u\"}}}",
		  "ursa", E_UNAUTHORIZED },
		{ "{" BASE ",\"kubernetes.io\":{\"namespace\":\"team\",\"serviceaccount\":{\"name\":\"robot\"}}}", "ursa",
		  E_UNAUTHORIZED },
		{ "{" BASE ",\"kubernetes.io\":{\"namespace\":\"team\"}}", "ursa", E_UNAUTHORIZED },
		{ "{" BASE ",\"kubernetes.io\":\"team\"}", "ursa", E_UNAUTHORIZED },
		{ "{\"iss\":\"ursa\",\"tenant\":\"acme\",\"sub\":\"bob\",\"kubernetes.io\":{\"namespace\":\"team\"," SA "}}",
		  "ursa", E_UNAUTHORIZED },
	};
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		struct identity got = { 0 };
		int r = jwt_claims_identity_for(cases[i].claims, strlen(cases[i].claims), 100, cases[i].aud, &got);
		if (r != cases[i].want)
			fail_msg("claims %s for %s: got %d want %d", cases[i].claims, cases[i].aud, r, cases[i].want);
		if (r == 0 && strstr(cases[i].claims, "kubernetes.io"))
			assert_string_equal(got.sa_uid, "u1");
		if (r == 0 && !strstr(cases[i].claims, "kubernetes.io"))
			assert_null(got.sa_uid);
		identity_release(&got);
	}
#undef BASE
#undef SA
}

static void test_copy_assert_cache(void **state)
{
	struct identity id = robot(true), copy = { 0 }, got = { 0 };
	identity_copy(&id, &copy);
	check_robot(&copy, true);
	identity_release(&copy);
	assert_null(copy.sa_uid);

	static const char key[] = "0123456789abcdef0123456789abcdef";
	struct idkey *k = idkey_from_bytes(key, strlen(key));
	char *a = identity_assert(k, &id, 1000, 30);
	assert_non_null(a);
	assert_int_equal(identity_assertion_verify(k, a, strlen(a), 1001, &got), 0);
	check_robot(&got, true);
	identity_release(&got);
	free(a);
	idkey_free(k);

	struct tokcache *c = tokcache_new();
	tokcache_put(c, "tok", 3, &id, 1000);
	assert_int_equal(tokcache_get(c, "tok", 3, 1001, &got), 0);
	check_robot(&got, true);
	identity_release(&got);
	tokcache_free(c);
	identity_release(&id);
}

static void test_user_split(void **state)
{
	char *ns = NULL, *name = NULL;
	assert_int_equal(sa_user_split("system:serviceaccount:team:robot", &ns, &name), 0);
	assert_string_equal(ns, "team");
	assert_string_equal(name, "robot");
	free(ns), free(name);
	const char *bad[] = { "robot", "system:serviceaccount:team", "system:serviceaccount::robot",
			      "system:serviceaccount:team:", "system:serviceaccount:a:b:c", "system:serviceaccounts:team" };
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++)
		if (sa_user_split(bad[i], &ns, &name) != -1)
			fail_msg("%s split", bad[i]);
	assert_int_equal(sa_user_split(NULL, &ns, &name), -1);

	/* jwt_check_identity: a service account's fields hang together */
	struct identity id = robot(true);
	assert_null(jwt_check_identity(&id));
	free(id.user);
	id.user = xstrdup("bob");
	assert_non_null(jwt_check_identity(&id));
	identity_release(&id);
	struct identity plain = { .user = xstrdup("bob"), .tenant = xstrdup("acme"), .bound_kind = xstrdup("Pod") };
	assert_non_null(jwt_check_identity(&plain));
	identity_release(&plain);
}

static void test_tokenreq(void **state)
{
	static const struct {
		const char *spec;
		int want;
		long long exp;
		const char *err; /* a piece of the message */
	} cases[] = {
		{ NULL, 0, 3600, NULL },
		{ "{}", 0, 3600, NULL },
		{ "{\"expirationSeconds\":600}", 0, 600, NULL },
		{ "{\"expirationSeconds\":599}", E_INVALID, 0, "spec.expirationSeconds: Invalid value: 599: may not specify a duration less than 10 minutes" },
		{ "{\"expirationSeconds\":1000000}", 0, 48 * 3600, NULL },
		{ "{\"expirationSeconds\":4294967297}", E_INVALID, 0, "larger than 2^32" },
		{ "{\"expirationSeconds\":\"600\"}", E_INVALID, 0, "spec.expirationSeconds" },
		{ "{\"expirationSeconds\":null}", 0, 3600, NULL },
		{ "{\"audiences\":[\"a\",\"b\"]}", 0, 3600, NULL },
		{ "{\"audiences\":\"a\"}", E_INVALID, 0, "spec.audiences" },
		{ "{\"audiences\":[\"a\",\"\"]}", E_INVALID, 0, "spec.audiences[1]" },
		{ "{\"boundObjectRef\":{\"kind\":\"Pod\",\"apiVersion\":\"v1\",\"name\":\"p\",\"uid\":\"u\"}}", 0, 3600, NULL },
		{ "{\"boundObjectRef\":{\"kind\":\"Secret\",\"name\":\"s\"}}", 0, 3600, NULL },
		{ "{\"boundObjectRef\":{\"kind\":\"Node\",\"name\":\"n\"}}", E_INVALID, 0, "spec.boundObjectRef.kind: Unsupported value: \"Node\"" },
		{ "{\"boundObjectRef\":{\"kind\":\"Pod\",\"apiVersion\":\"apps/v1\",\"name\":\"p\"}}", E_INVALID, 0, "apiVersion" },
		{ "{\"boundObjectRef\":{\"kind\":\"Pod\"}}", E_INVALID, 0, "spec.boundObjectRef.name: Required value" },
		{ "{\"boundObjectRef\":{\"kind\":\"Pod\",\"name\":7}}", E_INVALID, 0, "must be strings" },
		{ "{\"boundObjectRef\":[]}", E_INVALID, 0, "spec.boundObjectRef" },
		{ "[]", E_INVALID, 0, "spec: Invalid value" },
	};
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		json_t *spec = cases[i].spec ? json_loads(cases[i].spec, JSON_DECODE_ANY, NULL) : NULL;
		struct tokenreq r = { 0 };
		char *err = NULL;
		int got = tokenreq_parse(spec, &r, &err);
		if (got != cases[i].want)
			fail_msg("%s: got %d want %d (%s)", cases[i].spec, got, cases[i].want, err ? err : "");
		if (got == 0) {
			assert_int_equal(r.expiration_s, cases[i].exp);
			assert_true(r.naudiences >= 1);
			if (!strstr(cases[i].spec ? cases[i].spec : "", "audiences"))
				assert_string_equal(r.audiences[0], API_AUDIENCE);
		} else if (!strstr(err, cases[i].err)) {
			fail_msg("%s: message %s lacks %s", cases[i].spec, err, cases[i].err);
		}
		if (got == 0 && strstr(cases[i].spec ? cases[i].spec : "", "\"Pod\",\"apiVersion\":\"v1\"")) {
			assert_string_equal(r.bound_kind, "Pod");
			assert_string_equal(r.bound_name, "p");
			assert_string_equal(r.bound_uid, "u");
		}
		if (got == 0 && strstr(cases[i].spec ? cases[i].spec : "", "Secret"))
			assert_null(r.bound_uid);
		tokenreq_release(&r);
		free(err);
		json_decref(spec);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_signer_claims), cmocka_unit_test(test_claims), cmocka_unit_test(test_copy_assert_cache),
		cmocka_unit_test(test_user_split),    cmocka_unit_test(test_tokenreq),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
