/* The pod worker's decision for a pod served by two partitions while its tenant moves
 * (kl_pod_key_action): the whole table, then a move and an undone move as the worker sees them. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include "podlogic.h"

static void test_table(void **state)
{
	static const struct {
		enum kl_pod_key key;
		bool present, other;
		enum kl_pod_action want;
	} rows[] = {
		/* a key no pod runs under: a new pod, or a copy of one running under another key */
		{ KL_KEY_NEW, false, false, KL_POD_NONE },
		{ KL_KEY_NEW, false, true, KL_POD_NONE },
		{ KL_KEY_NEW, true, false, KL_POD_RUN },
		{ KL_KEY_NEW, true, true, KL_POD_ADD_COPY },
		/* the home: runs while there; gone, it hands off to a copy or stops */
		{ KL_KEY_HOME, true, false, KL_POD_RUN },
		{ KL_KEY_HOME, true, true, KL_POD_RUN },
		{ KL_KEY_HOME, false, true, KL_POD_HAND_OFF },
		{ KL_KEY_HOME, false, false, KL_POD_STOP },
		/* the second copy: its changes are ignored, its going forgotten */
		{ KL_KEY_COPY, true, false, KL_POD_NONE },
		{ KL_KEY_COPY, true, true, KL_POD_NONE },
		{ KL_KEY_COPY, false, false, KL_POD_FORGET_COPY },
		{ KL_KEY_COPY, false, true, KL_POD_FORGET_COPY },
	};
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		enum kl_pod_action got = kl_pod_key_action(rows[i].key, rows[i].present, rows[i].other);
		if (got != rows[i].want)
			print_error("row %zu: key=%d present=%d other=%d: got %d, want %d\n", i, rows[i].key,
				    rows[i].present, rows[i].other, got, rows[i].want);
		assert_int_equal(got, rows[i].want);
	}
}

/* A move: the pod runs from A (home); B's copy appears (remembered, not started); B's copy
 * changes (ignored); A's copy is deleted (raw: no deletionTimestamp): B becomes the home; a
 * graceful deletion through B is B's home change and runs as a deletion always has. */
static void test_move(void **state)
{
	assert_int_equal(kl_pod_key_action(KL_KEY_NEW, true, false), KL_POD_RUN);      /* A: started */
	assert_int_equal(kl_pod_key_action(KL_KEY_NEW, true, true), KL_POD_ADD_COPY);  /* B: copy */
	assert_int_equal(kl_pod_key_action(KL_KEY_COPY, true, true), KL_POD_NONE);     /* B changes */
	assert_int_equal(kl_pod_key_action(KL_KEY_HOME, true, true), KL_POD_RUN);      /* A changes */
	assert_int_equal(kl_pod_key_action(KL_KEY_HOME, false, true), KL_POD_HAND_OFF); /* A deleted */
	assert_int_equal(kl_pod_key_action(KL_KEY_HOME, true, false), KL_POD_RUN);     /* B, home now */
	assert_int_equal(kl_pod_key_action(KL_KEY_HOME, false, false), KL_POD_STOP);   /* B deleted */
}

/* An undone move: B's copy is deleted, A stays the home and nothing stops. */
static void test_abort(void **state)
{
	assert_int_equal(kl_pod_key_action(KL_KEY_NEW, true, true), KL_POD_ADD_COPY);
	assert_int_equal(kl_pod_key_action(KL_KEY_COPY, false, true), KL_POD_FORGET_COPY);
	assert_int_equal(kl_pod_key_action(KL_KEY_HOME, true, false), KL_POD_RUN);
	/* B's key again, after the copy was forgotten: gone, nothing to do */
	assert_int_equal(kl_pod_key_action(KL_KEY_NEW, false, false), KL_POD_NONE);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_table),
		cmocka_unit_test(test_move),
		cmocka_unit_test(test_abort),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
