/* Identity assertions (gateway -> partition): round trip, expiry, tampering, wrong key, key files. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "auth/auth_internal.h"
#include "ursa/errors.h"
#include "ursa/xalloc.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char key_a[] = "0123456789abcdef0123456789abcdef";
static const char key_b[] = "0123456789abcdef0123456789abcdeF";

static struct identity sample(void)
{
	struct identity id = { .user = xstrdup("alice"), .uid = xstrdup("u-1"), .tenant = xstrdup("acme") };
	identity_add_group(&id, "dev", 3);
	identity_add_group(&id, "ops", 3);
	return id;
}

static void test_round_trip(void **state)
{
	struct idkey *k = idkey_from_bytes(key_a, strlen(key_a));
	struct identity id = sample(), got = { 0 };
	char *a = identity_assert(k, &id, 1000, 30);
	assert_non_null(a);
	assert_int_equal(strncmp(a, "v1.", 3), 0);
	assert_int_equal(identity_assertion_verify(k, a, strlen(a), 1010, &got), 0);
	assert_string_equal(got.user, "alice");
	assert_string_equal(got.uid, "u-1");
	assert_string_equal(got.tenant, "acme");
	assert_int_equal(got.ngroups, 2);
	assert_true(identity_in_group(&got, "ops"));
	identity_release(&got);
	/* expired, and not yet valid */
	assert_int_equal(identity_assertion_verify(k, a, strlen(a), 1031, &got), E_UNAUTHORIZED);
	free(a);
	identity_release(&id);
	idkey_free(k);
}

static void test_forgery(void **state)
{
	struct idkey *k = idkey_from_bytes(key_a, strlen(key_a));
	struct idkey *other = idkey_from_bytes(key_b, strlen(key_b));
	struct identity id = sample(), got = { 0 };
	char *a = identity_assert(k, &id, 1000, 30);
	size_t n = strlen(a);
	/* another key */
	assert_int_equal(identity_assertion_verify(other, a, n, 1000, &got), E_UNAUTHORIZED);
	/* any flipped character of the claims or the MAC */
	for (size_t i = 3; i < n; i++) {
		char *t = xstrdup(a);
		t[i] = t[i] == 'A' ? 'B' : 'A';
		assert_int_equal(identity_assertion_verify(k, t, n, 1000, &got), E_UNAUTHORIZED);
		free(t);
	}
	/* truncations */
	for (size_t i = 0; i < n; i++)
		assert_int_equal(identity_assertion_verify(k, a, i, 1000, &got), E_UNAUTHORIZED);
	/* a client's own bearer token is not an assertion */
	assert_int_equal(identity_assertion_verify(k, "v2.abc.def", 10, 1000, &got), E_UNAUTHORIZED);
	assert_int_equal(identity_assertion_verify(NULL, a, n, 1000, &got), E_UNAUTHORIZED);
	assert_null(got.user);
	free(a);
	identity_release(&id);
	idkey_free(k);
	idkey_free(other);
}

static void test_unexpressible_identity(void **state)
{
	struct idkey *k = idkey_from_bytes(key_a, strlen(key_a));
	struct identity bad = { .user = xstrdup("x"), .tenant = xstrdup("all") };
	assert_null(identity_assert(k, &bad, 1000, 30));
	identity_release(&bad);
	idkey_free(k);
}

static char *write_tmp(const char *content)
{
	char *path = xstrdup("/tmp/ursa-idkey-XXXXXX");
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, content, strlen(content)), (ssize_t)strlen(content));
	close(fd);
	return path;
}

static void test_key_file(void **state)
{
	struct idkey *k = NULL;
	char *err = NULL;
	char *good = write_tmp("  0123456789abcdef0123456789abcdef\n");
	char *shortk = write_tmp("tooshort\n");
	assert_int_equal(idkey_load(good, &k, &err), 0);
	/* whitespace around the key is not part of it */
	struct idkey *same = idkey_from_bytes(key_a, strlen(key_a));
	struct identity id = sample(), got = { 0 };
	char *a = identity_assert(k, &id, 1000, 30);
	assert_int_equal(identity_assertion_verify(same, a, strlen(a), 1000, &got), 0);
	identity_release(&got);
	assert_int_equal(idkey_load(shortk, &k, &err), E_BAD_REQUEST);
	assert_non_null(strstr(err, "at least 32"));
	free(err);
	err = NULL;
	assert_int_equal(idkey_load("/nonexistent/idkey", &k, &err), E_BAD_REQUEST);
	free(err);
	free(a);
	identity_release(&id);
	idkey_free(same);
	unlink(good);
	unlink(shortk);
	free(good);
	free(shortk);
	idkey_free(k);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_forgery),
		cmocka_unit_test(test_unexpressible_identity),
		cmocka_unit_test(test_key_file),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
