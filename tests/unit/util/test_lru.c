/* The bounded cache: recency order, both bounds, replacement, pins, resize and deletion, as its
 * four users (gateway discovery and OpenAPI, API server discovery and per-tenant OpenAPI) use it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>
#include "ursa/lru.h"
#include "ursa/xalloc.h"

static int freed;

static void free_val(void *v)
{
	freed++;
	free(v);
}

static void *val(const char *s)
{
	return xstrdup(s);
}

static void test_count_bound_evicts_least_recent(void **state)
{
	(void)state;
	struct lru l;
	freed = 0;
	lru_init(&l, 3, 1000, free_val);
	assert_true(lru_put(&l, "a", val("A"), 10));
	assert_true(lru_put(&l, "b", val("B"), 10));
	assert_true(lru_put(&l, "c", val("C"), 10));
	assert_string_equal(lru_get(&l, "a"), "A"); /* a is now the newest: b goes first */
	assert_true(lru_put(&l, "d", val("D"), 10));
	assert_int_equal(l.n, 3);
	assert_null(lru_get(&l, "b"));
	assert_non_null(lru_get(&l, "a"));
	assert_non_null(lru_get(&l, "c"));
	assert_non_null(lru_get(&l, "d"));
	assert_int_equal(l.evictions, 1);
	assert_int_equal(freed, 1);
	assert_int_equal(l.bytes, 30);
	lru_release(&l);
	assert_int_equal(freed, 4);
}

static void test_byte_bound_and_peek(void **state)
{
	(void)state;
	struct lru l;
	freed = 0;
	lru_init(&l, 100, 100, free_val);
	lru_put(&l, "a", val("A"), 40);
	lru_put(&l, "b", val("B"), 40);
	assert_non_null(lru_peek(&l, "a")); /* peeking leaves a the oldest */
	lru_put(&l, "c", val("C"), 40);
	assert_null(lru_peek(&l, "a"));
	assert_int_equal(l.bytes, 80);
	/* an entry larger than the bound alone stays (the caller just built it) but evicts the rest */
	lru_put(&l, "huge", val("H"), 500);
	assert_int_equal(l.n, 1);
	assert_non_null(lru_peek(&l, "huge"));
	lru_release(&l);
	assert_int_equal(freed, 4);
}

static void test_replace_frees_old(void **state)
{
	(void)state;
	struct lru l;
	freed = 0;
	lru_init(&l, 4, 1000, free_val);
	lru_put(&l, "a", val("A1"), 10);
	lru_put(&l, "a", val("A2"), 25);
	assert_int_equal(freed, 1);
	assert_int_equal(l.n, 1);
	assert_int_equal(l.bytes, 25);
	assert_string_equal(lru_get(&l, "a"), "A2");
	assert_true(lru_del(&l, "a"));
	assert_false(lru_del(&l, "a"));
	assert_int_equal(l.n, 0);
	assert_int_equal(l.bytes, 0);
	assert_int_equal(freed, 2);
	lru_release(&l);
}

static void test_pins(void **state)
{
	(void)state;
	struct lru l;
	freed = 0;
	lru_init(&l, 2, 1000, free_val);
	lru_put(&l, "a", val("A"), 1);
	lru_put(&l, "b", val("B"), 1);
	assert_true(lru_pin(&l, "a"));
	assert_true(lru_pin(&l, "b"));
	assert_false(lru_pin(&l, "zz"));
	assert_false(lru_make_room(&l, 1)); /* both pinned: no room */
	char *c = val("C");
	assert_true(lru_put(&l, "c", c, 1)); /* over the bound until a pin goes */
	assert_int_equal(l.n, 3);
	char *a2 = val("A2");
	assert_false(lru_put(&l, "a", a2, 1)); /* a pinned entry is not replaced */
	free(a2);
	assert_string_equal(lru_peek(&l, "a"), "A");
	lru_unpin(&l, "a");
	assert_true(lru_make_room(&l, 1)); /* a (oldest unpinned) and then c go */
	assert_null(lru_peek(&l, "a"));
	assert_non_null(lru_peek(&l, "b"));
	assert_true(l.n < 2);
	lru_unpin(&l, "b");
	lru_release(&l);
	assert_int_equal(freed, 3);
}

static void test_resize(void **state)
{
	(void)state;
	struct lru l;
	freed = 0;
	lru_init(&l, 10, 100, free_val);
	lru_put(&l, "a", val("A"), 30);
	lru_put(&l, "b", val("B"), 30);
	lru_resize(&l, "b", 90); /* b grew: a goes */
	assert_null(lru_peek(&l, "a"));
	assert_int_equal(l.bytes, 90);
	lru_resize(&l, "nope", 5);
	assert_int_equal(l.bytes, 90);
	lru_release(&l);
	/* released and initialized again */
	lru_init(&l, 1, 10, NULL);
	assert_null(lru_get(&l, "x"));
	static char stat[] = "S";
	lru_put(&l, "x", stat, 1);
	lru_put(&l, "y", stat, 1); /* no free_val: nothing freed */
	assert_int_equal(l.n, 1);
	lru_release(&l);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_count_bound_evicts_least_recent),
		cmocka_unit_test(test_byte_bound_and_peek),
		cmocka_unit_test(test_replace_frees_old),
		cmocka_unit_test(test_pins),
		cmocka_unit_test(test_resize),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
