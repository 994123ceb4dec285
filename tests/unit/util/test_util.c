/* Unit tests for the shared utilities: buffers, JSON helpers, time formatting, flags, errors. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>
#include <unistd.h>
#include "ursa/buf.h"
#include "ursa/errors.h"
#include "ursa/jsonutil.h"
#include "ursa/options.h"
#include "ursa/timeutil.h"

static void test_hex_digit(void **state)
{
	(void)state;
	assert_int_equal(hex_digit('0'), 0);
	assert_int_equal(hex_digit('9'), 9);
	assert_int_equal(hex_digit('a'), 10);
	assert_int_equal(hex_digit('F'), 15);
	assert_int_equal(hex_digit('g'), -1);
	assert_int_equal(hex_digit('%'), -1);
	assert_int_equal(hex_digit('\0'), -1);
}

/* buf_read_fd: everything up to end of file, or max bytes; a bad descriptor is -EBADF. */
static void test_buf_read_fd(void **state)
{
	(void)state;
	int p[2];
	assert_int_equal(pipe(p), 0);
	char big[20000];
	for (size_t i = 0; i < sizeof(big); i++)
		big[i] = (char)('a' + i % 26);
	assert_int_equal(write(p[1], big, sizeof(big)), (ssize_t)sizeof(big));
	close(p[1]);
	struct buf b = BUF_INIT;
	buf_adds(&b, "x");
	assert_int_equal(buf_read_fd(&b, p[0], 10001), 0);
	assert_int_equal(b.len, 1 + 10001);
	assert_memory_equal(b.ptr + 1, big, 10001);
	assert_int_equal(buf_read_fd(&b, p[0], SIZE_MAX), 0);
	assert_int_equal(b.len, 1 + sizeof(big));
	assert_memory_equal(b.ptr + 1, big, sizeof(big));
	assert_int_equal(buf_read_fd(&b, p[0], SIZE_MAX), 0); /* at end of file: nothing more */
	assert_int_equal(b.len, 1 + sizeof(big));
	close(p[0]);
	assert_int_equal(buf_read_fd(&b, p[0], 10), -EBADF);
	buf_release(&b);
}

static void test_buf(void **state)
{
	struct buf b = BUF_INIT;
	assert_string_equal(buf_cstr(&b), "");
	buf_adds(&b, "abc");
	buf_addf(&b, "-%d-", 42);
	for (int i = 0; i < 1000; i++)
		buf_addch(&b, 'x');
	assert_int_equal(b.len, 3 + 4 + 1000);
	assert_memory_equal(b.ptr, "abc-42-x", 8);
	buf_reset(&b);
	buf_add_json_str(&b, "a\"b\\c\n\x01", 7);
	assert_string_equal(b.ptr, "\"a\\\"b\\\\c\\n\\u0001\"");
	buf_reset(&b);
	buf_add_query_escaped(&b, "app=web,x in (a)~_.-Z9/\xc3\xa9");
	assert_string_equal(b.ptr, "app%3Dweb%2Cx%20in%20%28a%29~_.-Z9%2F%C3%A9");
	size_t len;
	char *p = buf_detach(&b, &len);
	assert_int_equal(len, strlen(p));
	assert_null(b.ptr);
	free(p);
}

static void test_parse_int(void **state)
{
	long long v;
	assert_int_equal(parse_int64("123", &v), 0);
	assert_int_equal(v, 123);
	assert_int_equal(parse_int64("-5", &v), 0);
	assert_int_equal(v, -5);
	assert_int_equal(parse_int64("12a", &v), -1);
	assert_int_equal(parse_int64("", &v), -1);
	assert_int_equal(parse_int64("99999999999999999999", &v), -1);
	assert_int_equal(parse_int64_sv((struct sv){ "77xyz", 2 }, &v), 0);
	assert_int_equal(v, 77);
}

static void test_json_limits(void **state)
{
	struct buf err = BUF_INIT;
	const char *deep = "[[[[[[[[[[1]]]]]]]]]]";
	assert_null(json_parse_limited(deep, strlen(deep), 5, &err));
	assert_non_null(strstr(buf_cstr(&err), "nesting"));
	json_t *j = json_parse_limited(deep, strlen(deep), 10, NULL);
	assert_non_null(j);
	assert_int_equal(json_depth(j), 10);
	json_decref(j);
	/* a bracket inside a string does not count as nesting */
	const char *s = "{\"a\":\"[[[[[[[[[[[[\"}";
	j = json_parse_limited(s, strlen(s), 2, NULL);
	assert_non_null(j);
	json_decref(j);
	const char *dup = "{\"a\":1,\"a\":2}";
	assert_null(json_parse_limited(dup, strlen(dup), 10, NULL));
	buf_release(&err);
}

static void test_json_controller(void **state)
{
	(void)state;
	json_t *o = json_loads("{\"metadata\":{\"ownerReferences\":[{\"kind\":\"Deployment\",\"uid\":\"u0\"},"
			       "{\"kind\":\"ReplicaSet\",\"uid\":\"u1\",\"controller\":true}]}}",
			       0, NULL);
	assert_string_equal(json_str(json_controller_ref(o), "uid"), "u1");
	assert_string_equal(json_controller_uid(o, NULL), "u1");
	assert_string_equal(json_controller_uid(o, "ReplicaSet"), "u1");
	assert_null(json_controller_uid(o, "Deployment")); /* an owner, not the controller */
	json_t *bare = json_loads("{\"metadata\":{\"ownerReferences\":[{\"uid\":\"u0\",\"controller\":false}]}}", 0, NULL);
	assert_null(json_controller_ref(bare));
	assert_null(json_controller_uid(bare, NULL));
	assert_null(json_controller_ref(NULL));
	json_decref(o);
	json_decref(bare);
}

static void test_json_path(void **state)
{
	json_t *o = json_loads("{\"spec\":{\"nodeName\":\"n1\",\"hostNetwork\":true,\"n\":3}}", 0, NULL);
	assert_string_equal(json_path_str(o, "spec.nodeName"), "n1");
	assert_null(json_path(o, "spec.missing.deeper"));
	struct buf b = BUF_INIT;
	json_path_scalar(o, "spec.hostNetwork", &b);
	buf_addch(&b, ',');
	json_path_scalar(o, "spec.n", &b);
	buf_addch(&b, ',');
	json_path_scalar(o, "spec.none", &b);
	assert_string_equal(b.ptr, "true,3,");
	buf_release(&b);
	json_decref(o);
}

static void test_time(void **state)
{
	struct buf b = BUF_INIT;
	rfc3339_add(&b, 0);
	assert_string_equal(b.ptr, "1970-01-01T00:00:00Z");
	time_t t;
	assert_int_equal(rfc3339_parse("2026-11-21T10:00:00Z", &t), 0);
	time_t t2;
	assert_int_equal(rfc3339_parse("2026-11-21T12:00:00.123+02:00", &t2), 0);
	assert_int_equal(t, t2);
	assert_int_equal(rfc3339_parse("yesterday", &t), -1);
	static const struct {
		long secs;
		const char *want;
	} ages[] = { { 5, "5s" }, { 119, "119s" }, { 150, "2m30s" }, { 600, "10m" }, { 7000, "116m" }, { 3 * 3600 + 120, "3h2m" },
		     { 30 * 3600, "30h" }, { 3 * 86400 + 3600, "3d1h" }, { 30 * 86400, "30d" } };
	for (size_t i = 0; i < sizeof(ages) / sizeof(ages[0]); i++) {
		buf_reset(&b);
		age_add(&b, 1000000, 1000000 + ages[i].secs);
		assert_string_equal(b.ptr, ages[i].want);
	}
	buf_release(&b);
}

static void test_options(void **state)
{
	const char *s = "def";
	long long n = 1;
	bool f = false;
	const struct opt opts[] = {
		{ "name", OPT_STRING, &s, "a string" },
		{ "count", OPT_INT, &n, "a number" },
		{ "flag", OPT_BOOL, &f, "a flag" },
	};
	char *argv[] = { "prog", "--name", "x", "--count=7", "--flag" };
	assert_int_equal(opts_parse("prog", "", opts, 3, 5, argv), 0);
	assert_string_equal(s, "x");
	assert_int_equal(n, 7);
	assert_true(f);
	char *bad[] = { "prog", "--nope" };
	assert_int_equal(opts_parse("prog", "", opts, 3, 2, bad), -1);
	char *badint[] = { "prog", "--count", "x1" };
	assert_int_equal(opts_parse("prog", "", opts, 3, 3, badint), -1);
}

static void test_errors(void **state)
{
	assert_int_equal(err_http_code(E_NOT_FOUND), 404);
	assert_string_equal(err_reason(E_GONE), "Expired");
	assert_int_equal(err_http_code(E_INVALID), 422);
	assert_string_equal(err_reason(E_ALREADY_EXISTS), "AlreadyExists");
	assert_int_equal(err_http_code(12345), 500);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_buf),
		cmocka_unit_test(test_json_controller),
		cmocka_unit_test(test_buf_read_fd),
		cmocka_unit_test(test_hex_digit),	   cmocka_unit_test(test_parse_int), cmocka_unit_test(test_json_limits),
		cmocka_unit_test(test_json_path), cmocka_unit_test(test_time),	    cmocka_unit_test(test_options),
		cmocka_unit_test(test_errors),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
