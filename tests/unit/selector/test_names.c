/* Name validators and hash_key_of_uid. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>
#include "ursa/api.h"
#include "ursa/buf.h"

static char *repeat(char c, size_t n)
{
	struct buf b = BUF_INIT;
	for (size_t i = 0; i < n; i++)
		buf_addch(&b, c);
	return buf_detach(&b, NULL);
}

static void test_dns1123_label(void **state)
{
	static const char *const good[] = { "a", "0", "abc", "a-b", "a--b", "1a", "a1", "x0-9y" };
	static const char *const bad[] = { "", "-a", "a-", "A", "aB", "a_b", "a.b", "a b", "é", "a/b" };
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		if (!valid_dns1123_label(good[i]))
			print_error("'%s' rejected\n", good[i]);
		assert_true(valid_dns1123_label(good[i]));
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (valid_dns1123_label(bad[i]))
			print_error("'%s' accepted\n", bad[i]);
		assert_false(valid_dns1123_label(bad[i]));
	}
	char *s = repeat('a', 63);
	assert_true(valid_dns1123_label(s));
	free(s);
	s = repeat('a', 64);
	assert_false(valid_dns1123_label(s));
	free(s);
	assert_false(valid_dns1123_label(NULL));
}

static void test_dns1123_subdomain(void **state)
{
	static const char *const good[] = { "a", "a.b", "example.com", "a-1.b-2.c", "0.0", "kube-system" };
	static const char *const bad[] = { "", ".", "a.", ".a", "a..b", "A.b", "a_b.c", "a.-b", "a-.b", "a b" };
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		assert_true(valid_dns1123_subdomain(good[i]));
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (valid_dns1123_subdomain(bad[i]))
			print_error("'%s' accepted\n", bad[i]);
		assert_false(valid_dns1123_subdomain(bad[i]));
	}
	/* labels inside a subdomain are not capped at 63; the whole is capped at 253 */
	char *s = repeat('a', 100);
	assert_true(valid_dns1123_subdomain(s));
	free(s);
	s = repeat('a', 253);
	assert_true(valid_dns1123_subdomain(s));
	free(s);
	s = repeat('a', 254);
	assert_false(valid_dns1123_subdomain(s));
	free(s);
	assert_false(valid_dns1123_subdomain(NULL));
}

static void test_label_key(void **state)
{
	static const char *const good[] = {
		"a", "A", "app", "App.Name_1-x", "9", "example.com/a", "k8s.io/Name", "a.b.c/x-y_z.w", "0/a",
	};
	static const char *const bad[] = {
		"", "-a", "a-", "_a", "a_", ".a", "a b", "a/b/c", "/a", "a/", "A.com/a", "a_b/c", "-a.com/b",
		"a.com/-b", "a$", "a/b c",
	};
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		if (!valid_label_key(good[i]))
			print_error("'%s' rejected\n", good[i]);
		assert_true(valid_label_key(good[i]));
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (valid_label_key(bad[i]))
			print_error("'%s' accepted\n", bad[i]);
		assert_false(valid_label_key(bad[i]));
	}
	struct buf b = BUF_INIT;
	char *name63 = repeat('n', 63), *name64 = repeat('n', 64), *prefix253 = repeat('p', 253);
	assert_true(valid_label_key(name63));
	assert_false(valid_label_key(name64));
	buf_addf(&b, "%s/%s", prefix253, name63);
	assert_true(valid_label_key(buf_cstr(&b)));
	buf_reset(&b);
	buf_addf(&b, "p%s/a", prefix253);
	assert_false(valid_label_key(buf_cstr(&b)));
	buf_reset(&b);
	buf_addf(&b, "p/%s", name64);
	assert_false(valid_label_key(buf_cstr(&b)));
	free(name63);
	free(name64);
	free(prefix253);
	buf_release(&b);
	assert_false(valid_label_key(NULL));
}

static void test_label_value(void **state)
{
	static const char *const good[] = { "", "a", "A", "1", "a.b", "a_b", "a-b", "MyValue", "my_value", "12345" };
	static const char *const bad[] = { "-", "_", ".", "a-", "-a", "a b", "a/b", "a:b", "a,b", "a=b" };
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		assert_true(valid_label_value(good[i]));
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (valid_label_value(bad[i]))
			print_error("'%s' accepted\n", bad[i]);
		assert_false(valid_label_value(bad[i]));
	}
	char *s = repeat('v', 63);
	assert_true(valid_label_value(s));
	free(s);
	s = repeat('v', 64);
	assert_false(valid_label_value(s));
	free(s);
}

static void test_hash_key(void **state)
{
	/* FNV-1a 64 reference values: "" -> cbf29ce484222325, "a" -> af63dc4c8601ec8c,
	 * "foobar" -> 85944171f73967e8; the top bit is cleared. */
	assert_int_equal(hash_key_of_uid(""), 0x4bf29ce484222325LL);
	assert_int_equal(hash_key_of_uid("a"), 0x2f63dc4c8601ec8cLL);
	assert_int_equal(hash_key_of_uid("foobar"), 0x05944171f73967e8LL);
	const char *uid = "3f0e6c52-9a4b-4c1e-8a44-5b1f7e2d9c10";
	long long h = hash_key_of_uid(uid);
	assert_true(h >= 0);
	assert_int_equal(h, hash_key_of_uid(uid));
	assert_true(h != hash_key_of_uid("3f0e6c52-9a4b-4c1e-8a44-5b1f7e2d9c11"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_dns1123_label), cmocka_unit_test(test_dns1123_subdomain),
		cmocka_unit_test(test_label_key),     cmocka_unit_test(test_label_value),
		cmocka_unit_test(test_hash_key),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
