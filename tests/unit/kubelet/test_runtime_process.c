/* The process runtime and its shim: real processes, CRI logs, exit codes, restart policy with
 * back-off, adoption after a kubelet restart, bad commands, graceful stop.
 * This executable is its own shim: `test_runtime_process shim ...` runs shim_main, like
 * `ursa-kubelet shim ...`. The restart back-off is shortened with URSA_KUBELET_BACKOFF_MS. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <regex.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "runtime.h"
#include "runtime_common.h"
#include "shim.h"
#include "ursa/timeutil.h"
#include "ursa/xalloc.h"

#define BACKOFF_MS 300
static const struct runtime_ops *ops = &runtime_process;

struct fixture {
	char root[64];
	struct runtime *rt;
};

static int setup(void **state)
{
	struct fixture *fx = xcalloc(1, sizeof(*fx));
	snprintf(fx->root, sizeof(fx->root), "/tmp/ursa-rt-XXXXXX");
	if (!mkdtemp(fx->root))
		return -1;
	fx->rt = ops->create(fx->root, "/proc/self/exe");
	*state = fx;
	return fx->rt ? 0 : -1;
}

static int teardown(void **state)
{
	struct fixture *fx = *state;
	char **uids;
	size_t n = ops->list_pods(fx->rt, &uids);
	for (size_t i = 0; i < n; i++) {
		ops->remove_pod(fx->rt, uids[i]);
		free(uids[i]);
	}
	free(uids);
	ops->destroy(fx->rt);
	rt_rm_rf(fx->root);
	free(fx);
	return 0;
}

/* A pod spec (heap) of one container "main" per argv list; lists end with NULL, and the
 * container list with a NULL list. */
static struct rt_pod *mkpod(const char *uid, enum rt_restart r, const char *const *const *cmds)
{
	struct rt_pod *p = xcalloc(1, sizeof(*p));
	p->uid = xstrdup(uid);
	p->tenant = xstrdup("system");
	p->ns = xstrdup("default");
	p->name = xasprintf("pod-%s", uid);
	p->restart = r;
	p->grace_s = 5;
	size_t n = 0;
	while (cmds[n])
		n++;
	p->containers = xcalloc(n, sizeof(*p->containers));
	p->ncontainers = n;
	for (size_t i = 0; i < n; i++) {
		struct rt_container *c = &p->containers[i];
		c->name = i ? xasprintf("c%zu", i) : xstrdup("main");
		c->image = xstrdup("busybox");
		size_t k = 0;
		while (cmds[i][k])
			k++;
		c->command = xcalloc(k + 1, sizeof(char *));
		for (size_t j = 0; j < k; j++)
			c->command[j] = xstrdup(cmds[i][j]);
		c->env = xcalloc(1, sizeof(*c->env));
	}
	return p;
}

static void freepod(struct rt_pod *p)
{
	rt_pod_release(p);
	free(p);
}

static void get_status(struct runtime *rt, const char *uid, size_t i, struct rt_container_status *s)
{
	struct rt_container_status st[4];
	int n = ops->status(rt, uid, st, 4);
	assert_true(n > (int)i);
	*s = st[i];
}

typedef bool (*status_pred)(const struct rt_container_status *s);

/* Syncs until container i of the pod satisfies pred; fails the test after timeout_ms. */
static void wait_for(struct runtime *rt, const char *uid, size_t i, status_pred pred, int timeout_ms,
		     struct rt_container_status *ret)
{
	int64_t end = mono_ms() + timeout_ms;
	for (;;) {
		ops->sync(rt);
		get_status(rt, uid, i, ret);
		if (pred(ret))
			return;
		if (mono_ms() > end)
			fail_msg("container %zu of %s: timed out in state %d reason %s (%s)", i, uid, ret->state,
				 ret->reason, ret->message);
		usleep(20000);
	}
}

static bool is_running(const struct rt_container_status *s) { return s->state == RT_RUNNING; }
static bool is_terminated(const struct rt_container_status *s) { return s->state == RT_TERMINATED; }
static bool is_backoff(const struct rt_container_status *s)
{
	return s->state == RT_WAITING && !strcmp(s->reason, "CrashLoopBackOff");
}
static bool is_run_error(const struct rt_container_status *s)
{
	return s->state == RT_WAITING && !strcmp(s->reason, "RunContainerError");
}
static bool restarted_twice(const struct rt_container_status *s) { return s->restart_count >= 2; }
static bool restarted_once(const struct rt_container_status *s) { return s->restart_count >= 1; }

static char *read_log(struct runtime *rt, const char *pod, const char *container)
{
	char *path = ops->log_path(rt, "system", "default", pod, container);
	assert_non_null(path);
	struct buf b = BUF_INIT;
	assert_int_equal(rt_read_file(path, 1 << 20, &b), 0);
	free(path);
	return buf_detach(&b, NULL);
}

static bool matches(const char *text, const char *re)
{
	regex_t r;
	assert_int_equal(regcomp(&r, re, REG_EXTENDED | REG_NEWLINE | REG_NOSUB), 0);
	bool ok = regexec(&r, text, 0, NULL, 0) == 0;
	regfree(&r);
	return ok;
}

#define TS "[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\\.[0-9]{9}Z"

static void test_exit_logs_and_onfailure_restart(void **state)
{
	struct fixture *fx = *state;
	static const char *const cmd[] = { "sh", "-c", "echo hello; echo oops >&2; exit 3", NULL };
	static const char *const *const cmds[] = { cmd, NULL };
	struct rt_pod *p = mkpod("u-fail", RT_RESTART_ON_FAILURE, cmds);
	char *err = NULL;
	assert_int_equal(ops->start_pod(fx->rt, p, &err), 0);
	struct rt_container_status s;
	wait_for(fx->rt, "u-fail", 0, is_backoff, 5000, &s);
	assert_true(s.has_last);
	assert_int_equal(s.last_exit_code, 3);
	assert_string_equal(s.last_reason, "Error");
	assert_int_equal(s.restart_count, 0);
	assert_non_null(strstr(s.message, "back-off"));
	assert_true(matches(s.container_id, "^process://u-fail-main-0$"));
	assert_true(matches(s.image_id, "^process://sha256:[0-9a-f]{64}$"));

	/* no instance before the first: kubectl logs --previous has nothing */
	assert_null(ops->prev_log_path(fx->rt, "system", "default", "pod-u-fail", "main"));
	char *log = read_log(fx->rt, "pod-u-fail", "main");
	assert_true(matches(log, "^" TS " stdout F hello$"));
	assert_true(matches(log, "^" TS " stderr F oops$"));
	free(log);

	/* After the back-off it runs again, fails again, and the back-off doubles. */
	int64_t t0 = mono_ms();
	wait_for(fx->rt, "u-fail", 0, restarted_once, 5000, &s);
	assert_true(mono_ms() - t0 >= BACKOFF_MS / 2);
	wait_for(fx->rt, "u-fail", 0, is_backoff, 5000, &s);
	assert_int_equal(s.restart_count, 1);
	assert_int_equal(s.last_exit_code, 3);
	char *path = ops->log_path(fx->rt, "system", "default", "pod-u-fail", "main");
	assert_non_null(path);
	assert_true(matches(path, "/logs/system_default_pod-u-fail/main/u-fail-1\\.log$"));
	char *prev = ops->prev_log_path(fx->rt, "system", "default", "pod-u-fail", "main");
	assert_non_null(prev);
	assert_true(matches(prev, "/logs/system_default_pod-u-fail/main/u-fail-0\\.log$"));
	free(prev);
	/* A third instance: only its log and the previous one are kept. */
	wait_for(fx->rt, "u-fail", 0, restarted_twice, 5000, &s);
	char *first = xasprintf("%s/logs/system_default_pod-u-fail/main/u-fail-0.log", fx->root);
	char *second = xasprintf("%s/logs/system_default_pod-u-fail/main/u-fail-1.log", fx->root);
	assert_int_equal(access(first, F_OK), -1);
	assert_int_equal(access(second, F_OK), 0);
	prev = ops->prev_log_path(fx->rt, "system", "default", "pod-u-fail", "main");
	assert_non_null(prev);
	assert_string_equal(prev, second);
	free(prev);
	free(first);
	free(second);
	free(path);

	ops->remove_pod(fx->rt, "u-fail");
	assert_int_equal(ops->status(fx->rt, "u-fail", &s, 1), -1);
	assert_null(ops->log_path(fx->rt, "system", "default", "pod-u-fail", "main"));
	char *dir = xasprintf("%s/pods/u-fail", fx->root);
	assert_int_equal(access(dir, F_OK), -1);
	free(dir);
	freepod(p);
}

static void test_never_and_completed(void **state)
{
	struct fixture *fx = *state;
	static const char *const fail[] = { "sh", "-c", "exit 3", NULL };
	static const char *const ok[] = { "true", NULL };
	static const char *const *const cmds[] = { fail, ok, NULL };
	struct rt_pod *p = mkpod("u-never", RT_RESTART_NEVER, cmds);
	static const char *const *const okcmds[] = { ok, NULL };
	struct rt_pod *q = mkpod("u-done", RT_RESTART_ON_FAILURE, okcmds);
	char *err = NULL;
	assert_int_equal(ops->start_pod(fx->rt, p, &err), 0);
	assert_int_equal(ops->start_pod(fx->rt, q, &err), 0);
	struct rt_container_status s;
	wait_for(fx->rt, "u-never", 0, is_terminated, 5000, &s);
	assert_string_equal(s.reason, "Error");
	assert_int_equal(s.exit_code, 3);
	assert_true(s.finished_at >= s.started_at && s.started_at > 0);
	wait_for(fx->rt, "u-never", 1, is_terminated, 5000, &s);
	assert_string_equal(s.reason, "Completed");
	assert_int_equal(s.exit_code, 0);
	wait_for(fx->rt, "u-done", 0, is_terminated, 5000, &s);
	assert_string_equal(s.reason, "Completed");
	/* Well past the back-off: nothing restarted. */
	usleep(3 * BACKOFF_MS * 1000);
	ops->sync(fx->rt);
	get_status(fx->rt, "u-never", 0, &s);
	assert_int_equal(s.state, RT_TERMINATED);
	assert_int_equal(s.restart_count, 0);
	get_status(fx->rt, "u-done", 0, &s);
	assert_int_equal(s.state, RT_TERMINATED);
	assert_int_equal(s.restart_count, 0);
	freepod(p);
	freepod(q);
}

static json_t *read_state_json(const struct fixture *fx, const char *uid)
{
	char *path = xasprintf("%s/pods/%s/containers/main/state.json", fx->root, uid);
	json_t *j = rt_read_json(path);
	free(path);
	return j;
}

/* Gone or a zombie (orphans are reaped by whatever init this sandbox has, maybe late). */
static bool proc_gone(pid_t pid)
{
	unsigned long long st;
	bool zombie;
	return rt_proc_starttime(pid, &st, &zombie) < 0 || zombie;
}

static void test_survives_kubelet_restart(void **state)
{
	struct fixture *fx = *state;
	char *pidfile = xasprintf("%s/sleep.pid", fx->root);
	char *script = xasprintf("echo started; sleep 3600 & echo $! > %s; wait", pidfile);
	const char *const cmd[] = { "sh", "-c", script, NULL };
	const char *const *const cmds[] = { cmd, NULL };
	struct rt_pod *p = mkpod("u-long", RT_RESTART_ALWAYS, cmds);
	char *err = NULL;
	assert_int_equal(ops->start_pod(fx->rt, p, &err), 0);
	struct rt_container_status s;
	wait_for(fx->rt, "u-long", 0, is_running, 5000, &s);
	json_t *st = NULL;
	for (int i = 0; i < 250 && !st; i++, usleep(20000))
		st = read_state_json(fx, "u-long");
	assert_non_null(st);
	json_int_t shim = json_integer_value(json_object_get(st, "shimPid"));
	json_int_t pid = json_integer_value(json_object_get(st, "pid"));
	json_decref(st);
	assert_true(shim > 0 && pid > 0);

	/* "Restart" the kubelet: forget everything in memory, recover from root_dir. */
	ops->destroy(fx->rt);
	fx->rt = ops->create(fx->root, "/proc/self/exe");
	assert_non_null(fx->rt);
	char **uids;
	size_t n = ops->list_pods(fx->rt, &uids);
	assert_int_equal(n, 1);
	assert_string_equal(uids[0], "u-long");
	free(uids[0]);
	free(uids);
	assert_int_equal(ops->start_pod(fx->rt, p, &err), 0);
	for (int i = 0; i < 10; i++, usleep(20000))
		ops->sync(fx->rt);
	get_status(fx->rt, "u-long", 0, &s);
	assert_int_equal(s.state, RT_RUNNING);
	assert_int_equal(s.restart_count, 0);
	assert_string_equal(s.container_id, "process://u-long-main-0");
	st = read_state_json(fx, "u-long");
	assert_non_null(st);
	assert_int_equal(json_integer_value(json_object_get(st, "shimPid")), shim);
	assert_int_equal(json_integer_value(json_object_get(st, "pid")), pid);
	json_decref(st);
	assert_int_equal(kill((pid_t)pid, 0), 0);
	char *log = read_log(fx->rt, "pod-u-long", "main");
	assert_non_null(strstr(log, "started"));
	assert_null(strstr(strstr(log, "started") + 1, "started")); /* started once */
	free(log);

	struct buf b = BUF_INIT;
	assert_int_equal(rt_read_file(pidfile, 64, &b), 0);
	long long sleep_pid = 0;
	while (b.len && (b.ptr[b.len - 1] == '\n'))
		b.ptr[--b.len] = '\0';
	assert_int_equal(parse_int64(b.ptr, &sleep_pid), 0);
	buf_release(&b);

	int64_t t0 = mono_ms();
	assert_int_equal(ops->stop_pod(fx->rt, "u-long", 5), 0);
	assert_true(mono_ms() - t0 < 3000);
	assert_true(proc_gone((pid_t)pid));
	assert_true(proc_gone((pid_t)sleep_pid)); /* the whole group went */
	assert_int_equal(kill((pid_t)shim, 0), -1); /* and the shim, our child, was reaped */
	get_status(fx->rt, "u-long", 0, &s);
	assert_int_equal(s.state, RT_TERMINATED);
	assert_int_equal(s.signal, SIGTERM);
	assert_int_equal(s.exit_code, 128 + SIGTERM);
	/* Stopped pods stay stopped, across a restart too. */
	assert_int_equal(ops->start_pod(fx->rt, p, &err), 0);
	ops->destroy(fx->rt);
	fx->rt = ops->create(fx->root, "/proc/self/exe");
	for (int i = 0; i < 5; i++)
		ops->sync(fx->rt);
	get_status(fx->rt, "u-long", 0, &s);
	assert_int_equal(s.state, RT_TERMINATED);
	assert_int_equal(s.restart_count, 0);
	free(pidfile);
	free(script);
	freepod(p);
}

static void test_bad_commands(void **state)
{
	struct fixture *fx = *state;
	char *noexec = xasprintf("%s/not-executable", fx->root);
	assert_int_equal(rt_write_file_atomic(noexec, "#!/bin/sh\n", 10), 0);
	static const char *const missing[] = { "no-such-program-xyz", NULL };
	static const char *const abs[] = { "/nonexistent/prog", NULL };
	const char *const nox[] = { noexec, NULL };
	const char *const *const cmds[] = { missing, abs, nox, NULL };
	struct rt_pod *p = mkpod("u-bad", RT_RESTART_ALWAYS, cmds);
	char *err = NULL;
	assert_int_equal(ops->start_pod(fx->rt, p, &err), 0);
	assert_null(err);
	struct rt_container_status s;
	wait_for(fx->rt, "u-bad", 0, is_run_error, 1000, &s);
	assert_non_null(strstr(s.message, "executable file not found in $PATH"));
	wait_for(fx->rt, "u-bad", 1, is_run_error, 1000, &s);
	assert_non_null(strstr(s.message, "No such file or directory"));
	wait_for(fx->rt, "u-bad", 2, is_run_error, 1000, &s);
	assert_non_null(strstr(s.message, "ermission denied"));
	/* Retried under back-off, still the same error, nothing crashed. */
	usleep(2 * BACKOFF_MS * 1000);
	wait_for(fx->rt, "u-bad", 0, is_run_error, 1000, &s);

	static const char *const *const never_cmds[] = { missing, NULL };
	struct rt_pod *q = mkpod("u-bad-never", RT_RESTART_NEVER, never_cmds);
	assert_int_equal(ops->start_pod(fx->rt, q, &err), 0);
	get_status(fx->rt, "u-bad-never", 0, &s);
	assert_int_equal(s.state, RT_TERMINATED);
	assert_string_equal(s.reason, "StartError");
	assert_int_equal(s.exit_code, 128);
	assert_non_null(strstr(s.message, "no-such-program-xyz"));

	/* No command at all: a spec error, reported to the caller and in the status. */
	struct rt_pod *e = mkpod("u-empty", RT_RESTART_ALWAYS, never_cmds);
	free(e->containers[0].command[0]);
	e->containers[0].command[0] = NULL;
	assert_int_equal(ops->start_pod(fx->rt, e, &err), -1);
	assert_non_null(err);
	assert_non_null(strstr(err, "no command"));
	free(err);
	get_status(fx->rt, "u-empty", 0, &s);
	assert_string_equal(s.reason, "RunContainerError");

	/* A working directory that does not exist. */
	static const char *const t[] = { "true", NULL };
	static const char *const *const tc[] = { t, NULL };
	struct rt_pod *w = mkpod("u-wd", RT_RESTART_ALWAYS, tc);
	w->containers[0].working_dir = xstrdup("/nonexistent-dir");
	err = NULL;
	assert_int_equal(ops->start_pod(fx->rt, w, &err), 0);
	get_status(fx->rt, "u-wd", 0, &s);
	assert_string_equal(s.reason, "RunContainerError");
	assert_non_null(strstr(s.message, "/nonexistent-dir"));

	/* Invalid names are refused before anything touches the disk. */
	struct rt_pod *bad = mkpod("../x", RT_RESTART_ALWAYS, tc);
	assert_int_equal(ops->start_pod(fx->rt, bad, &err), -1);
	free(err);
	assert_int_equal(ops->status(fx->rt, "../x", &s, 1), -1);
	freepod(p);
	freepod(q);
	freepod(e);
	freepod(w);
	freepod(bad);
	free(noexec);
}

static bool log_has_ready(struct runtime *rt, const char *pod)
{
	char *path = ops->log_path(rt, "system", "default", pod, "main");
	struct buf b = BUF_INIT;
	bool ok = path && rt_read_file(path, 1 << 16, &b) == 0 && b.ptr && strstr(b.ptr, "ready");
	buf_release(&b);
	free(path);
	return ok;
}

static void test_stop_grace_then_kill(void **state)
{
	struct fixture *fx = *state;
	static const char *const cmd[] = { "sh", "-c", "trap '' TERM; echo ready; while :; do sleep 0.05; done",
					   NULL };
	static const char *const *const cmds[] = { cmd, NULL };
	struct rt_pod *p = mkpod("u-stubborn", RT_RESTART_ALWAYS, cmds);
	char *err = NULL;
	assert_int_equal(ops->start_pod(fx->rt, p, &err), 0);
	int64_t end = mono_ms() + 5000;
	while (!log_has_ready(fx->rt, "pod-u-stubborn") && mono_ms() < end)
		usleep(20000);
	assert_true(log_has_ready(fx->rt, "pod-u-stubborn"));
	int64_t t0 = mono_ms();
	assert_int_equal(ops->stop_pod(fx->rt, "u-stubborn", 1), 0);
	int64_t took = mono_ms() - t0;
	assert_true(took >= 1000);
	assert_true(took < 5000);
	struct rt_container_status s;
	get_status(fx->rt, "u-stubborn", 0, &s);
	assert_int_equal(s.state, RT_TERMINATED);
	assert_int_equal(s.signal, SIGKILL);
	assert_int_equal(s.exit_code, 137);
	assert_string_equal(s.reason, "Error");
	freepod(p);
}

static void test_env_workdir_and_long_lines(void **state)
{
	struct fixture *fx = *state;
	static const char *const cmd[] = { "sh", "-c",
					   "pwd; echo \"$FOO\"; head -c 40000 /dev/zero | tr '\\0' a; echo; printf tail",
					   NULL };
	static const char *const *const cmds[] = { cmd, NULL };
	struct rt_pod *p = mkpod("u-env", RT_RESTART_NEVER, cmds);
	struct rt_container *c = &p->containers[0];
	free(c->env);
	c->env = xcalloc(1, sizeof(*c->env));
	c->env[0].name = xstrdup("FOO");
	c->env[0].value = xstrdup("bar baz");
	c->nenv = 1;
	c->working_dir = xstrdup(fx->root);
	char *err = NULL;
	assert_int_equal(ops->start_pod(fx->rt, p, &err), 0);
	struct rt_container_status s;
	wait_for(fx->rt, "u-env", 0, is_terminated, 5000, &s);
	assert_string_equal(s.reason, "Completed");
	char *log = read_log(fx->rt, "pod-u-env", "main");
	char *want = xasprintf(" stdout F %s\n", fx->root);
	assert_non_null(strstr(log, want));
	assert_non_null(strstr(log, " stdout F bar baz\n"));
	/* 40000 = 16384 + 16384 + 7232; the unterminated last line is flushed at exit. */
	assert_true(matches(log, "^" TS " stdout P a{16384}$"));
	assert_true(matches(log, "^" TS " stdout F a{7232}$"));
	assert_true(matches(log, "^" TS " stdout F tail$"));
	int parts = 0;
	for (const char *q = log; (q = strstr(q, " stdout P ")); q++)
		parts++;
	assert_int_equal(parts, 2);
	/* The finished log is marked final for followers. */
	char *path = ops->log_path(fx->rt, "system", "default", "pod-u-env", "main");
	struct stat st;
	assert_int_equal(stat(path, &st), 0);
	assert_true(shim_log_is_final(&st));
	free(path);
	free(want);
	free(log);
	freepod(p);
}

/* runAsUser, runAsGroup and supplementalGroups: the container (not the shim) switches to
 * them. Only root may; for anyone else the container ends in a StartError saying why. */
static void test_run_as_user(void **state)
{
	struct fixture *fx = *state;
	static const char *const cmd[] = { "sh", "-c", "echo uid=$(id -u) gid=$(id -g) groups=$(id -G)", NULL };
	static const char *const *const cmds[] = { cmd, NULL };
	struct rt_pod *p = mkpod("u-ids", RT_RESTART_NEVER, cmds);
	p->containers[0].ids = (struct rt_ids){ .has_uid = true, .uid = 65534, .has_gid = true, .gid = 65533,
						 .groups = { 4242 }, .ngroups = 1 };
	char *err = NULL;
	assert_int_equal(ops->start_pod(fx->rt, p, &err), 0);
	struct rt_container_status s;
	if (geteuid() == 0) {
		wait_for(fx->rt, "u-ids", 0, is_terminated, 5000, &s);
		assert_string_equal(s.reason, "Completed");
		char *log = read_log(fx->rt, "pod-u-ids", "main");
		assert_non_null(strstr(log, " stdout F uid=65534 gid=65533 groups=65533 4242\n"));
		free(log);
	} else {
		wait_for(fx->rt, "u-ids", 0, is_terminated, 5000, &s);
		assert_string_equal(s.reason, "StartError");
		assert_non_null(strstr(s.message, "cannot set the container's groups"));
	}
	freepod(p);
}

/* The shim on its own: a program that cannot be executed gives a StartError record. */
static void test_shim_start_error(void **state)
{
	struct fixture *fx = *state;
	char *logf = xasprintf("%s/direct.log", fx->root);
	char *args[] = { "shim", "--state", fx->root, "--log", logf, "--exec", "/nonexistent/x", "--", "x", NULL };
	pid_t pid = fork();
	if (pid == 0)
		_exit(shim_main(9, args));
	int status;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	char *ex = xasprintf("%s/exit.json", fx->root);
	json_t *j = rt_read_json(ex);
	assert_non_null(j);
	assert_int_equal(json_integer_value(json_object_get(j, "exitCode")), 128);
	assert_string_equal(json_string_value(json_object_get(j, "reason")), "StartError");
	json_decref(j);
	struct buf b = BUF_INIT;
	assert_int_equal(rt_read_file(logf, 4096, &b), 0);
	assert_true(matches(b.ptr, "^" TS " stderr F exec: \"/nonexistent/x\": No such file or directory$"));
	buf_release(&b);
	char *bad[] = { "shim", "--state", fx->root, NULL };
	assert_int_equal(shim_main(3, bad), 2);
	free(ex);
	free(logf);
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "shim"))
		return shim_main(argc - 1, argv + 1);
	char ms[32];
	snprintf(ms, sizeof(ms), "%d", BACKOFF_MS);
	setenv("URSA_KUBELET_BACKOFF_MS", ms, 1);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_exit_logs_and_onfailure_restart, setup, teardown),
		cmocka_unit_test_setup_teardown(test_never_and_completed, setup, teardown),
		cmocka_unit_test_setup_teardown(test_survives_kubelet_restart, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bad_commands, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stop_grace_then_kill, setup, teardown),
		cmocka_unit_test_setup_teardown(test_env_workdir_and_long_lines, setup, teardown),
		cmocka_unit_test_setup_teardown(test_run_as_user, setup, teardown),
		cmocka_unit_test_setup_teardown(test_shim_start_error, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
