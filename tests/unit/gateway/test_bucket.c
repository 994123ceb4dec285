/* The per-tenant limiter: Retry-After, per-tenant independence (the bucket itself is
 * tests/unit/util/test_bucket.c); partition records. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>
#include "gw.h"

static void test_limiter_per_tenant(void **state)
{
	struct limiter l;
	limiter_init(&l, 1, 2);
	int64_t t = 5000000;
	assert_int_equal(limiter_check(&l, "a", t), 0);
	assert_int_equal(limiter_check(&l, "a", t), 0);
	assert_int_equal(limiter_check(&l, "a", t), 1); /* Retry-After 1 s */
	assert_int_equal(limiter_check(&l, "allison", t), 0);
	assert_int_equal(limiter_check(&l, "a", t + 1000000), 0);
	limiter_release(&l);
	limiter_init(&l, 0, 1); /* disabled */
	for (int i = 0; i < 100; i++)
		assert_int_equal(limiter_check(&l, "a", t), 0);
	limiter_release(&l);
}

static void test_partition_parse(void **state)
{
	const char *ok = "{\"kind\":\"rm\",\"endpoints\":[\"https://127.0.0.1:7201\",\"http://h:1\"],\"zone\":\"az-1\"}";
	struct partition *p = partition_parse("rm-az-1", ok, strlen(ok));
	assert_non_null(p);
	assert_true(p->is_rm);
	assert_int_equal(p->nendpoints, 2);
	assert_string_equal(p->zone, "az-1");
	assert_false(p->draining);
	partition_unref(p);
	const char *drain = "{\"kind\":\"tp\",\"endpoints\":[\"https://a\"],\"draining\":true}";
	p = partition_parse("tp-1", drain, strlen(drain));
	assert_non_null(p);
	assert_true(p->draining);
	partition_unref(p);
	static const char *bad[] = { "{}", "{\"kind\":\"xx\",\"endpoints\":[\"https://a\"]}",
				     "{\"kind\":\"tp\",\"endpoints\":[]}", "{\"kind\":\"tp\",\"endpoints\":[\"ftp://a\"]}",
				     "[", "" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_null(partition_parse("x", bad[i], strlen(bad[i])));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_limiter_per_tenant),
		cmocka_unit_test(test_partition_parse),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
