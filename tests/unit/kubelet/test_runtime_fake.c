/* The fake runtime: pods run at once, stop/remove, many pods, no log files; `sleep N`, `true` and
 * `false` exit on their own in pods that do not restart always. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "runtime.h"
#include "ursa/xalloc.h"

static const struct runtime_ops *ops = &runtime_fake;

static void fill_pod(struct rt_pod *p, struct rt_container *cs, const char *uid)
{
	memset(p, 0, sizeof(*p));
	p->uid = (char *)uid;
	p->tenant = "t";
	p->ns = "default";
	p->name = (char *)uid;
	p->containers = cs;
	p->ncontainers = 2;
	memset(cs, 0, 2 * sizeof(*cs));
	cs[0].name = "app";
	cs[0].image = "nginx:1.25";
	cs[1].name = "sidecar";
	cs[1].image = "busybox";
}

static void test_lifecycle(void **state)
{
	struct runtime *rt = ops->create("/nonexistent-never-touched", NULL);
	assert_non_null(rt);
	struct rt_pod p;
	struct rt_container cs[2];
	fill_pod(&p, cs, "uid-1");
	char *err = NULL;
	assert_int_equal(ops->start_pod(rt, &p, &err), 0);
	assert_true(ops->sync(rt));
	assert_false(ops->sync(rt));
	assert_int_equal(ops->start_pod(rt, &p, &err), 0); /* idempotent */
	assert_false(ops->sync(rt));

	struct rt_container_status st[4];
	assert_int_equal(ops->status(rt, "uid-1", st, 4), 2);
	assert_string_equal(st[0].name, "app");
	assert_string_equal(st[1].name, "sidecar");
	assert_int_equal(st[0].state, RT_RUNNING);
	assert_true(st[0].ready);
	assert_true(st[0].started_at > 0);
	assert_string_equal(st[1].container_id, "fake://uid-1-sidecar-0");
	assert_true(strncmp(st[0].image_id, "fake://sha256:", 14) == 0);
	assert_string_not_equal(st[0].image_id, st[1].image_id);
	assert_int_equal(ops->status(rt, "uid-1", st, 1), 1);
	assert_int_equal(ops->status(rt, "nope", st, 4), -1);
	assert_null(ops->log_path(rt, "t", "default", "uid-1", "app"));

	assert_int_equal(ops->stop_pod(rt, "uid-1", 30), 0);
	assert_true(ops->sync(rt));
	assert_int_equal(ops->status(rt, "uid-1", st, 4), 2);
	assert_int_equal(st[1].state, RT_TERMINATED);
	assert_string_equal(st[1].reason, "Completed");
	assert_int_equal(ops->stop_pod(rt, "nope", 30), -1);
	ops->remove_pod(rt, "uid-1");
	assert_int_equal(ops->status(rt, "uid-1", st, 4), -1);
	ops->remove_pod(rt, "uid-1");

	char *bad_err = NULL;
	p.uid = NULL;
	assert_int_equal(ops->start_pod(rt, &p, &bad_err), -1);
	assert_non_null(bad_err);
	free(bad_err);
	ops->destroy(rt);
}

static void test_many_pods(void **state)
{
	struct runtime *rt = ops->create(NULL, NULL);
	enum { N = 20000 };
	char uid[32];
	struct rt_pod p;
	struct rt_container cs[2];
	for (int i = 0; i < N; i++) {
		snprintf(uid, sizeof(uid), "pod-%d", i);
		fill_pod(&p, cs, uid);
		char *err = NULL;
		assert_int_equal(ops->start_pod(rt, &p, &err), 0);
	}
	char **uids;
	size_t n = ops->list_pods(rt, &uids);
	assert_int_equal(n, N);
	bool seen_last = false;
	for (size_t i = 0; i < n; i++) {
		seen_last |= !strcmp(uids[i], "pod-19999");
		free(uids[i]);
	}
	free(uids);
	assert_true(seen_last);
	struct rt_container_status st[2];
	for (int i = 0; i < N; i += 2) {
		snprintf(uid, sizeof(uid), "pod-%d", i);
		assert_int_equal(ops->status(rt, uid, st, 2), 2);
		ops->remove_pod(rt, uid);
	}
	assert_int_equal(ops->list_pods(rt, &uids), N / 2);
	for (size_t i = 0; i < N / 2; i++)
		free(uids[i]);
	free(uids);
	assert_int_equal(ops->status(rt, "pod-1", st, 2), 2);
	assert_int_equal(ops->status(rt, "pod-2", st, 2), -1);
	ops->destroy(rt);
}

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
	nanosleep(&ts, NULL);
}

/* One pod "uid" of one container running argv (command, then args), started in rt. */
static void start_cmd(struct runtime *rt, const char *uid, enum rt_restart rp, char **command, char **args)
{
	struct rt_container c = { .name = "c", .image = "busybox", .command = command, .args = args };
	struct rt_pod p = { .uid = (char *)uid, .tenant = "t", .ns = "default", .name = (char *)uid,
			    .restart = rp, .containers = &c, .ncontainers = 1 };
	char *err = NULL;
	assert_int_equal(ops->start_pod(rt, &p, &err), 0);
}

static enum rt_state state_of(struct runtime *rt, const char *uid, int *ret_code, char *ret_reason)
{
	struct rt_container_status st;
	assert_int_equal(ops->status(rt, uid, &st, 1), 1);
	*ret_code = st.exit_code;
	strcpy(ret_reason, st.reason);
	return st.state;
}

static void test_commands_exit(void **state)
{
	struct runtime *rt = ops->create(NULL, NULL);
	char *sleep_short[] = { "/bin/sleep", "0.2", NULL }, *sleep_long[] = { "sleep", "1h", NULL };
	char *t[] = { "true", NULL }, *f[] = { "false", NULL }, *sleep_cmd[] = { "sleep", NULL };
	char *arg[] = { "0.05s", NULL }, *bad[] = { "sleep", "x", NULL }, *two[] = { "sleep", "1", "2", NULL };
	start_cmd(rt, "short", RT_RESTART_NEVER, sleep_short, NULL);
	start_cmd(rt, "long", RT_RESTART_ON_FAILURE, sleep_long, NULL);
	start_cmd(rt, "true", RT_RESTART_ON_FAILURE, NULL, t);
	start_cmd(rt, "false", RT_RESTART_NEVER, f, NULL);
	start_cmd(rt, "false-onfailure", RT_RESTART_ON_FAILURE, f, NULL); /* restarts: not simulated */
	start_cmd(rt, "always", RT_RESTART_ALWAYS, t, NULL);
	start_cmd(rt, "split", RT_RESTART_NEVER, sleep_cmd, arg);
	start_cmd(rt, "bad", RT_RESTART_NEVER, bad, NULL);
	start_cmd(rt, "two", RT_RESTART_NEVER, two, NULL);
	start_cmd(rt, "none", RT_RESTART_NEVER, NULL, NULL);
	int code;
	char reason[64];
	assert_true(ops->sync(rt));
	assert_int_equal(state_of(rt, "true", &code, reason), RT_TERMINATED);
	assert_int_equal(code, 0);
	assert_string_equal(reason, "Completed");
	assert_int_equal(state_of(rt, "false", &code, reason), RT_TERMINATED);
	assert_int_equal(code, 1);
	assert_string_equal(reason, "Error");
	assert_int_equal(state_of(rt, "short", &code, reason), RT_RUNNING);
	sleep_ms(100);
	assert_true(ops->sync(rt)); /* split: 50 ms */
	assert_int_equal(state_of(rt, "split", &code, reason), RT_TERMINATED);
	assert_int_equal(state_of(rt, "short", &code, reason), RT_RUNNING);
	sleep_ms(150);
	assert_true(ops->sync(rt));
	assert_false(ops->sync(rt));
	assert_int_equal(state_of(rt, "short", &code, reason), RT_TERMINATED);
	assert_int_equal(code, 0);
	const char *running[] = { "long", "false-onfailure", "always", "bad", "two", "none" };
	for (size_t i = 0; i < sizeof(running) / sizeof(*running); i++)
		assert_int_equal(state_of(rt, running[i], &code, reason), RT_RUNNING);
	/* a pod stopped before its command exits: stopped, never exits by itself afterwards */
	char *soon[] = { "sleep", "0.1", NULL };
	start_cmd(rt, "soon", RT_RESTART_NEVER, soon, NULL);
	assert_int_equal(ops->stop_pod(rt, "soon", 30), 0);
	ops->remove_pod(rt, "long");
	sleep_ms(150);
	assert_true(ops->sync(rt));
	assert_false(ops->sync(rt));
	assert_int_equal(state_of(rt, "soon", &code, reason), RT_TERMINATED);
	assert_string_equal(reason, "Completed");
	ops->destroy(rt);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lifecycle),
		cmocka_unit_test(test_many_pods),
		cmocka_unit_test(test_commands_exit),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
