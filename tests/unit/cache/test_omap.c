/* The skip list against a sorted reference array under random inserts, replaces and deletes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>
#include "cache/omap.h"
#include "ursa/xalloc.h"

#define NKEYS 2000

static char *keys[NKEYS];
static int present[NKEYS]; /* 0 absent, else value tag */

static int cmp_idx(const void *a, const void *b)
{
	return strcmp(keys[*(const int *)a], keys[*(const int *)b]);
}

static void check_against_reference(struct omap *m, const int *order)
{
	size_t n = 0;
	struct omap_node *x = omap_first(m);
	for (int i = 0; i < NKEYS; i++) {
		int k = order[i];
		if (!present[k])
			continue;
		assert_non_null(x);
		assert_string_equal(x->key, keys[k]);
		assert_int_equal((intptr_t)x->val, present[k]);
		x = omap_next(x);
		n++;
	}
	assert_null(x);
	assert_int_equal(omap_size(m), n);
}

static void test_random_ops(void **state)
{
	srand(7);
	int order[NKEYS];
	for (int i = 0; i < NKEYS; i++) {
		/* shared prefixes and the '/' vs '0' ordering trap of tenant names */
		keys[i] = xasprintf("/registry/pods/t%d/%s/p%d", rand() % 20, rand() % 2 ? "a" : "ab", rand() % 500);
		order[i] = i;
	}
	/* duplicate key strings would make the reference ambiguous: make them unique */
	for (int i = 0; i < NKEYS; i++) {
		char *k = xasprintf("%s-%d", keys[i], i);
		free(keys[i]);
		keys[i] = k;
	}
	qsort(order, NKEYS, sizeof(order[0]), cmp_idx);
	struct omap *m = omap_new();
	for (int round = 0; round < 20000; round++) {
		int k = rand() % NKEYS;
		int op = rand() % 3;
		if (op < 2) {
			int tag = round + 1;
			void *old = omap_put(m, keys[k], (void *)(intptr_t)tag);
			assert_int_equal((intptr_t)old, present[k]);
			present[k] = tag;
		} else {
			void *old = omap_del(m, keys[k]);
			assert_int_equal((intptr_t)old, present[k]);
			present[k] = 0;
		}
		assert_int_equal((intptr_t)omap_get(m, keys[k]), present[k]);
		if (round % 2000 == 0)
			check_against_reference(m, order);
	}
	check_against_reference(m, order);
	/* lower_bound: first present key >= probe */
	for (int i = 0; i < NKEYS; i += 7) {
		const char *probe = keys[order[i]];
		struct omap_node *x = omap_lower_bound(m, probe);
		int j = i;
		while (j < NKEYS && !present[order[j]])
			j++;
		if (j == NKEYS)
			assert_null(x);
		else
			assert_string_equal(x->key, keys[order[j]]);
	}
	assert_null(omap_lower_bound(m, "\x7f"));
	assert_ptr_equal(omap_lower_bound(m, ""), omap_first(m));
	omap_free(m, NULL);
	for (int i = 0; i < NKEYS; i++)
		free(keys[i]);
}

static void test_replace_updates_key_pointer(void **state)
{
	struct omap *m = omap_new();
	char *k1 = xstrdup("a/b"), *k2 = xstrdup("a/b");
	assert_null(omap_put(m, k1, k1));
	assert_ptr_equal(omap_put(m, k2, k2), k1);
	free(k1); /* the map must now hold k2 */
	assert_ptr_equal(omap_first(m)->key, k2);
	assert_ptr_equal(omap_get(m, "a/b"), k2);
	assert_null(omap_del(m, "zz"));
	assert_ptr_equal(omap_del(m, "a/b"), k2);
	assert_int_equal(omap_size(m), 0);
	assert_null(omap_first(m));
	omap_free(m, free);
	free(k2);
	omap_free(NULL, NULL);
}

static void free_val(void *v)
{
	free(v);
}

static void test_free_values(void **state)
{
	struct omap *m = omap_new();
	for (int i = 0; i < 1000; i++) {
		char *k = xasprintf("%05d", i);
		omap_put(m, k, k);
	}
	assert_int_equal(omap_size(m), 1000);
	assert_string_equal(omap_lower_bound(m, "00500x")->key, "00501");
	omap_free(m, free_val); /* ASan checks that every value was freed exactly once */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_random_ops),
		cmocka_unit_test(test_replace_updates_key_pointer),
		cmocka_unit_test(test_free_values),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
