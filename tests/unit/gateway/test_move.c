/* The pure parts of following a moving tenant (move.c): which answers hold a write, and the
 * watch request that continues a watch on the tenant's new partition. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "gw.h"

static void test_hold_decide(void **state)
{
	(void)state;
	static const struct {
		int status;
		const char *moving, *tenant, *sent_to, *now_on;
		int64_t held_ms, budget_ms;
		enum move_hold want;
	} cases[] = {
		{ 429, "acme", "acme", "tp-1", "tp-1", 0, 5000, MOVE_HOLD },
		{ 429, "acme", "acme", "tp-1", "tp-1", 4900, 5000, MOVE_HOLD },
		{ 429, "acme", "acme", "tp-1", "tp-1", 5000, 5000, MOVE_PASS },    /* budget spent: the 429 goes on */
		{ 429, "acme", "acme", "tp-1", "tp-2", 0, 5000, MOVE_RESEND },     /* switched while it was out */
		{ 429, "acme", "acme", "tp-1", "tp-2", 6000, 5000, MOVE_PASS },
		{ 429, "acme", "acme", "tp-1", NULL, 0, 5000, MOVE_HOLD },         /* placement unknown: wait */
		{ 429, NULL, "acme", "tp-1", "tp-1", 0, 5000, MOVE_PASS },         /* fair queuing's 429 */
		{ 429, "other", "acme", "tp-1", "tp-1", 0, 5000, MOVE_PASS },      /* another tenant's move */
		{ 429, "acme", NULL, "rm-1", NULL, 0, 5000, MOVE_PASS },           /* not a tenant's request */
		{ 429, "acme", "acme", "tp-1", "tp-1", 0, 0, MOVE_PASS },          /* --move-hold-seconds 0 */
		{ 200, "acme", "acme", "tp-1", "tp-1", 0, 5000, MOVE_PASS },
		{ 503, "acme", "acme", "tp-1", "tp-2", 0, 5000, MOVE_PASS },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		enum move_hold got = move_hold_decide(cases[i].status, cases[i].moving, cases[i].tenant, cases[i].sent_to,
						      cases[i].now_on, cases[i].held_ms, cases[i].budget_ms);
		if (got != cases[i].want)
			fail_msg("case %zu: got %d, want %d", i, got, cases[i].want);
	}
}

static void test_watch_path(void **state)
{
	(void)state;
	static const struct {
		const char *path;
		int64_t rv, elapsed;
		const char *want;
	} cases[] = {
		{ "/api/v1/namespaces/default/configmaps?watch=true&resourceVersion=120", 57, 0,
		  "/api/v1/namespaces/default/configmaps?watch=true&resourceVersion=57" },
		{ "/api/v1/namespaces/default/configmaps?resourceVersion=120&watch=1&allowWatchBookmarks=true", 57, 0,
		  "/api/v1/namespaces/default/configmaps?watch=1&allowWatchBookmarks=true&resourceVersion=57" },
		/* streaming lists: the initial events were sent by the source */
		{ "/api/v1/pods?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&resourceVersion=",
		  9, 0, "/api/v1/pods?watch=true&resourceVersion=9" },
		/* percent-encoded keys are the same keys */
		{ "/api/v1/pods?watch=true&resource%56ersion=5&labelSelector=app%3Dx", 9, 0,
		  "/api/v1/pods?watch=true&labelSelector=app%3Dx&resourceVersion=9" },
		/* the timeout the client asked for goes on, less what passed */
		{ "/api/v1/pods?watch=true&timeoutSeconds=300&resourceVersion=4", 9, 100,
		  "/api/v1/pods?watch=true&timeoutSeconds=200&resourceVersion=9" },
		{ "/api/v1/pods?timeoutSeconds=30&watch=true", 9, 100, "/api/v1/pods?timeoutSeconds=1&watch=true&resourceVersion=9" },
		{ "/api/v1/pods?timeoutSeconds=abc&watch=true", 9, 100, "/api/v1/pods?timeoutSeconds=abc&watch=true&resourceVersion=9" },
		/* /watch/ paths, no query */
		{ "/api/v1/watch/namespaces/default/pods", 3, 0, "/api/v1/watch/namespaces/default/pods?resourceVersion=3" },
		{ "/api/v1/pods?watch=true&&resourceVersion=4&", 9, 0, "/api/v1/pods?watch=true&resourceVersion=9" },
		{ "/api/v1/pods?resourceVersionX=1&watch", 9, 0, "/api/v1/pods?resourceVersionX=1&watch&resourceVersion=9" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *got = move_watch_path(cases[i].path, cases[i].rv, cases[i].elapsed);
		if (strcmp(got, cases[i].want) != 0)
			fail_msg("case %zu: got %s\n   want %s", i, got, cases[i].want);
		free(got);
	}
}

static void test_watch_timeout(void **state)
{
	(void)state;
	assert_int_equal(move_watch_timeout_s("/api/v1/pods?watch=true&timeoutSeconds=421"), 421);
	assert_int_equal(move_watch_timeout_s("/api/v1/pods?timeout%53econds=7"), 7);
	assert_int_equal(move_watch_timeout_s("/api/v1/pods?watch=true"), 0);
	assert_int_equal(move_watch_timeout_s("/api/v1/pods?timeoutSeconds=0"), 0);
	assert_int_equal(move_watch_timeout_s("/api/v1/pods?timeoutSeconds=-5"), 0);
	assert_int_equal(move_watch_timeout_s("/api/v1/pods?timeoutSeconds=9999999999999999999999"), 0);
	assert_int_equal(move_watch_timeout_s("/api/v1/pods"), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hold_decide),
		cmocka_unit_test(test_watch_path),
		cmocka_unit_test(test_watch_timeout),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
