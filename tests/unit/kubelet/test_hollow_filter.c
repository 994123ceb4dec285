/* The hollow kubelet's raw event filter: which pod watch events name only nodes held elsewhere,
 * and may be dropped unparsed. Anything it cannot read plainly is kept. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "kubelet.h"

static struct kubelet K;

static int setup(void **state)
{
	K.hollow = true;
	K.opt.hollow_nodes = 3;
	K.opt.hollow_prefix = "rm-1-n";
	kl_nodes_init(&K); /* rm-1-n-0, rm-1-n-1, rm-1-n-2 */
	return 0;
}

static int teardown(void **state)
{
	kl_nodes_release(&K);
	return 0;
}

static bool foreign(const char *line)
{
	return kl_event_foreign(&K, line, strlen(line));
}

#define EV(meta, spec) "{\"type\":\"MODIFIED\",\"object\":{\"metadata\":{\"name\":\"p\"" meta "},\"spec\":{" spec "}}}"

static void test_spec_node_name(void **state)
{
	assert_false(foreign(EV("", "\"nodeName\":\"rm-1-n-1\"")));
	assert_true(foreign(EV("", "\"nodeName\":\"rm-2-n-1\"")));
	assert_true(foreign(EV("", "\"nodeName\":\"rm-1-n-10\""))); /* not held: only 3 nodes */
	assert_true(foreign(EV("", "\"nodeName\":\"\"")));
	assert_true(foreign(EV("", "\"nodeName\" :\n \"rm-2-n-0\""))); /* whitespace around the colon */
}

static void test_no_member_is_kept(void **state)
{
	assert_false(foreign("{\"type\":\"BOOKMARK\",\"object\":{\"kind\":\"Pod\",\"metadata\":{\"resourceVersion\":\"9\"}}}"));
	assert_false(foreign(EV("", "\"containers\":[]")));
	assert_false(foreign(""));
	/* the name only inside a string (escaped quotes): no member */
	assert_false(foreign(EV(",\"annotations\":{\"a\":\"{\\\"nodeName\\\":\\\"rm-2-n-0\\\"}\"}", "\"containers\":[]")));
	/* "nodeName" as a string value, not a member */
	assert_false(foreign(EV(",\"labels\":{\"role\":\"nodeName\"}", "\"containers\":[]")));
}

static void test_any_node_of_ours_keeps(void **state)
{
	/* a label called nodeName naming another node does not hide spec.nodeName, and back */
	assert_false(foreign(EV(",\"labels\":{\"nodeName\":\"rm-2-n-0\"}", "\"nodeName\":\"rm-1-n-0\"")));
	assert_false(foreign(EV(",\"labels\":{\"nodeName\":\"rm-1-n-0\"}", "\"nodeName\":\"rm-2-n-0\"")));
	assert_true(foreign(EV(",\"labels\":{\"nodeName\":\"x\"}", "\"nodeName\":\"rm-2-n-0\"")));
	/* escaped text next to a real member: only the member counts */
	assert_true(foreign(EV(",\"annotations\":{\"a\":\"\\\"nodeName\\\":\\\"rm-1-n-0\\\"\"}", "\"nodeName\":\"rm-2-n-0\"")));
	assert_true(foreign(EV(",\"labels\":{\"role\":\"nodeName\"}", "\"nodeName\":\"rm-2-n-0\"")));
}

static void test_unreadable_values_are_kept(void **state)
{
	char long_name[400];
	assert_false(foreign(EV("", "\"nodeName\":null")));
	assert_false(foreign(EV("", "\"nodeName\":\"rm-\\u0031-n-0\""))); /* an escape: not read plainly */
	assert_false(foreign("{\"object\":{\"spec\":{\"nodeName\":\"rm-2-n-0")); /* cut short */
	assert_false(foreign("{\"object\":{\"spec\":{\"nodeName\":"));
	memset(long_name, 'a', sizeof(long_name) - 1);
	long_name[sizeof(long_name) - 1] = '\0';
	char *line = NULL;
	assert_true(asprintf(&line, EV("", "\"nodeName\":\"%s\""), long_name) > 0);
	assert_false(foreign(line));
	free(line);
	/* the length bounds the scan: a member past it is not seen */
	const char *two = EV("", "\"nodeName\":\"rm-2-n-0\"");
	assert_false(kl_event_foreign(&K, two, strlen(two) - 20));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_spec_node_name),
		cmocka_unit_test(test_no_member_is_kept),
		cmocka_unit_test(test_any_node_of_ours_keeps),
		cmocka_unit_test(test_unreadable_values_are_kept),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
