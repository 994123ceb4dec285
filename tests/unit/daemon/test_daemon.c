/* The daemon skeleton over fake definitions: flags, exit codes, stop signals, lost leases,
 * start failures, subcommands. The stop signals are sent to this process (blocked by the
 * skeleton, so they only end its waits). */
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>
#include "ursa/daemon.h"
#include "ursa/timeutil.h"

struct fake {
	const char *name;         /* a flag of the fake's own */
	long long count;
	int start_rc;             /* start's exit code */
	bool signal_in_start;     /* start sends SIGTERM and daemon_sleep must see it */
	bool signal_later;        /* a thread sends SIGTERM 100 ms after start */
	int lost_after;           /* lost() true from this call on (0: never) */
	int starts, stops, readies, losts, checks;
	bool slept, had_health;
	pthread_t th;
};

static void *later(void *arg)
{
	(void)arg;
	usleep(100 * 1000);
	kill(getpid(), SIGTERM);
	return NULL;
}

static int check(void *ud)
{
	struct fake *f = ud;
	f->checks++;
	return f->count < 0 ? -1 : 0;
}

static int start(void *ud, struct daemon *dm, char **ret_err)
{
	struct fake *f = ud;
	f->starts++;
	f->had_health = daemon_health(dm) != NULL;
	if (f->start_rc) {
		*ret_err = strdup("no luck");
		return f->start_rc;
	}
	if (f->signal_in_start) {
		kill(getpid(), SIGTERM);
		int64_t t0 = mono_ms();
		f->slept = daemon_sleep(dm, 5000) && mono_ms() - t0 < 2000;
	}
	if (f->signal_later)
		pthread_create(&f->th, NULL, later, NULL);
	return 0;
}

static bool lost(void *ud)
{
	struct fake *f = ud;
	f->losts++;
	return f->lost_after && f->losts >= f->lost_after;
}

static void ready(void *ud)
{
	((struct fake *)ud)->readies++;
}

static void stop(void *ud)
{
	struct fake *f = ud;
	f->stops++;
	if (f->signal_later)
		pthread_join(f->th, NULL);
}

static int sub_argc;
static char sub_arg0[32];

static int sub_main(int argc, char **argv)
{
	sub_argc = argc;
	snprintf(sub_arg0, sizeof(sub_arg0), "%s", argv[0]);
	return 7;
}

static const struct daemon_command commands[] = { { "sub", sub_main }, { NULL, NULL } };

static int run_fake(struct fake *f, bool with_lost, bool with_health, int argc, char **argv)
{
	const struct opt opts[] = {
		{ "name", OPT_STRING, &f->name, "a name" },
		{ "count", OPT_INT, &f->count, "a count" },
	};
	const struct daemon_def def = {
		.program = "fake-daemon", .summary = "A fake.", .component = "fake", .opts = opts, .nopts = 2,
		.health_example = with_health ? "127.0.0.1:1" : NULL, .commands = commands, .check = check,
		.start = start, .lost = with_lost ? lost : NULL, .ready = ready, .stop = stop,
	};
	return daemon_main(&def, f, argc, argv);
}

static void test_signal_stops_with_0(void **state)
{
	(void)state;
	struct fake f = { .signal_later = true };
	char *argv[] = { "fake-daemon", "--name", "x", "--count=3", "--log-level", "error", NULL };
	int64_t t0 = mono_ms();
	assert_int_equal(run_fake(&f, false, false, 6, argv), 0);
	assert_true(mono_ms() - t0 >= 90);
	assert_string_equal(f.name, "x");
	assert_int_equal(f.count, 3);
	assert_int_equal(f.checks, 1);
	assert_int_equal(f.starts, 1);
	assert_int_equal(f.readies, 1);
	assert_int_equal(f.stops, 1);
	assert_false(f.had_health);
}

static void test_signal_while_lost_is_polled(void **state)
{
	(void)state;
	struct fake f = { .signal_later = true };
	char *argv[] = { "fake-daemon", NULL };
	assert_int_equal(run_fake(&f, true, false, 1, argv), 0);
	assert_int_equal(f.stops, 1);
	assert_true(f.losts >= 1);
}

static void test_lost_exits_1(void **state)
{
	(void)state;
	struct fake f = { .lost_after = 3 };
	char *argv[] = { "fake-daemon", NULL };
	assert_int_equal(run_fake(&f, true, false, 1, argv), 1);
	assert_int_equal(f.readies, 1);
	assert_int_equal(f.stops, 1);
	assert_true(f.losts >= 3);
}

static void test_start_failure_is_the_exit_code(void **state)
{
	(void)state;
	struct fake f = { .start_rc = 3 };
	char *argv[] = { "fake-daemon", NULL };
	assert_int_equal(run_fake(&f, true, false, 1, argv), 3);
	assert_int_equal(f.starts, 1);
	assert_int_equal(f.readies, 0);
	assert_int_equal(f.stops, 0);
}

static void test_signal_during_start(void **state)
{
	(void)state;
	struct fake f = { .signal_in_start = true };
	char *argv[] = { "fake-daemon", NULL };
	int64_t t0 = mono_ms();
	assert_int_equal(run_fake(&f, false, false, 1, argv), 0);
	assert_true(f.slept);
	assert_true(mono_ms() - t0 < 2000);
	assert_int_equal(f.readies, 1);
	assert_int_equal(f.stops, 1);
}

static void test_bad_flags_exit_2(void **state)
{
	(void)state;
	struct fake f = { 0 };
	char *unknown[] = { "fake-daemon", "--nope", NULL };
	assert_int_equal(run_fake(&f, false, false, 2, unknown), 2);
	char *bad_int[] = { "fake-daemon", "--count", "many", NULL };
	assert_int_equal(run_fake(&f, false, false, 3, bad_int), 2);
	/* --health-listen exists only for daemons that serve one */
	char *health[] = { "fake-daemon", "--health-listen", "127.0.0.1:0", NULL };
	assert_int_equal(run_fake(&f, false, false, 3, health), 2);
	assert_int_equal(f.starts, 0);
	char *failed_check[] = { "fake-daemon", "--count=-1", NULL };
	assert_int_equal(run_fake(&f, false, false, 2, failed_check), 2);
	assert_int_equal(f.checks, 1);
	assert_int_equal(f.starts, 0);
}

static void test_health_listener(void **state)
{
	(void)state;
	struct fake f = { .signal_later = true };
	char *argv[] = { "fake-daemon", "--health-listen", "127.0.0.1:0", NULL };
	assert_int_equal(run_fake(&f, false, true, 3, argv), 0);
	assert_true(f.had_health);
	assert_int_equal(f.stops, 1);
	/* without the flag: none */
	struct fake g = { .signal_later = true };
	char *plain[] = { "fake-daemon", NULL };
	assert_int_equal(run_fake(&g, false, true, 1, plain), 0);
	assert_false(g.had_health);
}

static void test_subcommand(void **state)
{
	(void)state;
	struct fake f = { 0 };
	char *argv[] = { "fake-daemon", "sub", "--whatever", "x", NULL };
	assert_int_equal(run_fake(&f, false, false, 4, argv), 7);
	assert_int_equal(sub_argc, 3);
	assert_string_equal(sub_arg0, "sub");
	assert_int_equal(f.checks, 0);
	assert_int_equal(f.starts, 0);
	char *other[] = { "fake-daemon", "subway", NULL };
	assert_int_equal(run_fake(&f, false, false, 2, other), 2); /* not a command: an unexpected argument */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_signal_stops_with_0),
		cmocka_unit_test(test_signal_while_lost_is_polled),
		cmocka_unit_test(test_lost_exits_1),
		cmocka_unit_test(test_start_failure_is_the_exit_code),
		cmocka_unit_test(test_signal_during_start),
		cmocka_unit_test(test_bad_flags_exit_2),
		cmocka_unit_test(test_health_listener),
		cmocka_unit_test(test_subcommand),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
