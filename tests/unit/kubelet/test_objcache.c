/* The node-wide answers of volume refreshes: reused within the ttl, then gone. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include "objcache.h"

static void test_reuse_within_ttl(void **state)
{
	(void)state;
	struct kl_objcache *c = kl_objcache_new(1000);
	json_t *cm = json_pack("{s:s}", "kind", "ConfigMap");
	json_t *got = NULL;
	int code = 0;
	assert_false(kl_objcache_get(c, "tp-1|/cm/a", 0, &got, &code));
	kl_objcache_put(c, "tp-1|/cm/a", 100, cm, 200);
	assert_true(kl_objcache_get(c, "tp-1|/cm/a", 1100, &got, &code));
	assert_int_equal(code, 200);
	assert_ptr_equal(got, cm); /* a new reference to what was stored */
	json_decref(got);
	assert_false(kl_objcache_get(c, "tp-1|/cm/a", 1101, &got, &code)); /* older than the ttl */
	assert_false(kl_objcache_get(c, "tp-2|/cm/a", 100, &got, &code));  /* another partition */
	json_decref(cm);
	kl_objcache_free(c);
}

static void test_not_found_and_replace(void **state)
{
	(void)state;
	struct kl_objcache *c = kl_objcache_new(1000);
	json_t *got = (json_t *)1;
	int code = 0;
	kl_objcache_put(c, "k", 0, NULL, 404);
	assert_true(kl_objcache_get(c, "k", 10, &got, &code));
	assert_null(got);
	assert_int_equal(code, 404);
	json_t *cm = json_object();
	kl_objcache_put(c, "k", 20, cm, 200);
	json_decref(cm);
	assert_true(kl_objcache_get(c, "k", 30, &got, &code));
	assert_int_equal(code, 200);
	assert_true(json_is_object(got));
	json_decref(got);
	kl_objcache_free(c);
}

static void test_old_answers_swept(void **state)
{
	(void)state;
	struct kl_objcache *c = kl_objcache_new(1000);
	kl_objcache_put(c, "a", 0, NULL, 404);
	kl_objcache_put(c, "b", 0, NULL, 404);
	assert_int_equal(kl_objcache_size(c), 2);
	kl_objcache_put(c, "c", 5000, NULL, 404); /* a and b are long past the ttl */
	assert_int_equal(kl_objcache_size(c), 1);
	kl_objcache_free(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_reuse_within_ttl),
		cmocka_unit_test(test_not_found_and_replace),
		cmocka_unit_test(test_old_answers_swept),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
