/* The "process" runtime: each container is a local process group started through a shim
 * (shim.c), so containers survive a kubelet restart and their exits are recorded on disk.
 *
 * Layout under root_dir:
 *   pods/<uid>/pod.json                         the spec (and "stopped"), to recover the pod
 *   pods/<uid>/containers/<name>/container.json  this runtime's view: phase, restarts, shim pid
 *   pods/<uid>/containers/<name>/state.json      written by the shim (container pid)
 *   pods/<uid>/containers/<name>/exit.json       written by the shim when the container ended
 *   logs/<tenant>_<ns>_<pod>/<container>/<uid>-<restart>.log, and "current" (symlink to the
 *   log of the newest instance). The uid in the file name keeps a re-created pod of the same
 *   name from mixing with (or deleting) the logs of its predecessor. */
#define _GNU_SOURCE
#include "hooks.h"
#include "probes.h"
#include "runtime.h"
#include "runtime_common.h"
#include "shim.h"
#include "ursa/errors.h"
#include "ursa/jsonutil.h"
#include "ursa/timeutil.h"
#include "ursa/xalloc.h"
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define KILL_WAIT_MS 10000 /* after SIGKILL, how long stop_pod waits for the exit record */

enum cphase { C_CREATING, C_RUNNING, C_BACKOFF, C_ERROR, C_TERMINATED };
static const char *const phase_names[] = { "creating", "running", "backoff", "error", "terminated" };

struct term {
	int exit_code, signal;
	char reason[64];
	char message[256];
	int64_t started_at, finished_at; /* unix s */
};

struct pcont {
	enum cphase phase;
	int launches;                    /* instances started; restartCount = launches - 1 */
	pid_t shim_pid, pid;             /* pid: the container's, from state.json (0 until known) */
	unsigned long long shim_start, pid_start;
	int64_t started_at;              /* unix s of the running instance */
	bool has_term, has_prev;
	struct term term, prev;          /* newest termination and the one before */
	int64_t backoff_ms, retry_at_ms; /* retry_at: wall ms */
	char error[256];                 /* C_ERROR: why it could not start */
	bool sent_term;                  /* stop_pod bookkeeping, not saved */
	bool post_start_due;             /* launched by this kubelet: its postStart runs (hooks.h); not saved */
};

struct ppod {
	struct rt_pod spec;
	struct pcont *c;
	char *dir;
	bool stopped, stopping;
	struct ppod *next;
};

struct reap {
	pid_t pid;
	unsigned long long start;
};

struct runtime {
	char *root, *self_exe;
	struct ppod *pods;
	bool changed;
	int64_t backoff_base_ms, backoff_max_ms;
	struct reap *reap;
	size_t nreap, areap;
};

/* ---- paths and persistence ---- */

static char *cont_dir(const struct ppod *p, size_t i)
{
	return xasprintf("%s/containers/%s", p->dir, p->spec.containers[i].name);
}

static char *cont_file(const struct ppod *p, size_t i, const char *file)
{
	return xasprintf("%s/containers/%s/%s", p->dir, p->spec.containers[i].name, file);
}

static char *log_dir(const struct runtime *rt, const char *tenant, const char *ns, const char *pod,
		     const char *container)
{
	return xasprintf("%s/logs/%s_%s_%s/%s", rt->root, tenant, ns, pod, container);
}

static void save_pod(const struct ppod *p)
{
	json_t *j = rt_pod_to_json(&p->spec);
	json_object_set_new(j, "stopped", json_boolean(p->stopped));
	char *path = xasprintf("%s/pod.json", p->dir);
	rt_write_json(path, j);
	free(path);
	json_decref(j);
}

static json_t *term_json(const struct term *t)
{
	return json_pack("{s:i,s:i,s:s,s:s,s:I,s:I}", "exitCode", t->exit_code, "signal", t->signal, "reason",
			 t->reason, "message", t->message, "startedAt", (json_int_t)t->started_at, "finishedAt",
			 (json_int_t)t->finished_at);
}

static void term_from_json(const json_t *j, struct term *t)
{
	memset(t, 0, sizeof(*t));
	t->exit_code = (int)json_integer_value(json_object_get(j, "exitCode"));
	t->signal = (int)json_integer_value(json_object_get(j, "signal"));
	snprintf(t->reason, sizeof(t->reason), "%s", json_str(j, "reason") ? json_str(j, "reason") : "");
	snprintf(t->message, sizeof(t->message), "%s", json_str(j, "message") ? json_str(j, "message") : "");
	t->started_at = json_integer_value(json_object_get(j, "startedAt"));
	t->finished_at = json_integer_value(json_object_get(j, "finishedAt"));
}

static void save_cont(const struct ppod *p, size_t i)
{
	const struct pcont *c = &p->c[i];
	json_t *j = json_pack("{s:s,s:i,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:s}", "phase", phase_names[c->phase],
			      "launches", c->launches, "shimPid", (json_int_t)c->shim_pid, "shimStart",
			      (json_int_t)c->shim_start, "pid", (json_int_t)c->pid, "pidStart",
			      (json_int_t)c->pid_start, "startedAt", (json_int_t)c->started_at, "backoffMs",
			      (json_int_t)c->backoff_ms, "retryAtMs", (json_int_t)c->retry_at_ms, "error", c->error);
	if (c->has_term)
		json_object_set_new(j, "term", term_json(&c->term));
	if (c->has_prev)
		json_object_set_new(j, "prev", term_json(&c->prev));
	char *path = cont_file(p, i, "container.json");
	rt_write_json(path, j);
	free(path);
	json_decref(j);
}

static void load_cont(const struct ppod *p, size_t i)
{
	struct pcont *c = &p->c[i];
	char *path = cont_file(p, i, "container.json");
	json_t *j = rt_read_json(path);
	free(path);
	if (!j)
		return; /* never saved: C_CREATING, started by recovery */
	const char *ph = json_str(j, "phase");
	for (size_t k = 0; ph && k < ARRAY_SIZE(phase_names); k++)
		if (!strcmp(ph, phase_names[k]))
			c->phase = (enum cphase)k;
	c->launches = (int)json_integer_value(json_object_get(j, "launches"));
	c->shim_pid = (pid_t)json_integer_value(json_object_get(j, "shimPid"));
	c->shim_start = (unsigned long long)json_integer_value(json_object_get(j, "shimStart"));
	c->pid = (pid_t)json_integer_value(json_object_get(j, "pid"));
	c->pid_start = (unsigned long long)json_integer_value(json_object_get(j, "pidStart"));
	c->started_at = json_integer_value(json_object_get(j, "startedAt"));
	c->backoff_ms = json_integer_value(json_object_get(j, "backoffMs"));
	c->retry_at_ms = json_integer_value(json_object_get(j, "retryAtMs"));
	snprintf(c->error, sizeof(c->error), "%s", json_str(j, "error") ? json_str(j, "error") : "");
	if ((c->has_term = json_is_object(json_object_get(j, "term"))))
		term_from_json(json_object_get(j, "term"), &c->term);
	if ((c->has_prev = json_is_object(json_object_get(j, "prev"))))
		term_from_json(json_object_get(j, "prev"), &c->prev);
	json_decref(j);
}

/* ---- processes ---- */

static void reap_later(struct runtime *rt, pid_t pid, unsigned long long start)
{
	if (pid <= 0)
		return;
	if (rt->nreap == rt->areap) {
		rt->areap = rt->areap ? rt->areap * 2 : 8;
		rt->reap = xrealloc(rt->reap, rt->areap * sizeof(*rt->reap));
	}
	rt->reap[rt->nreap++] = (struct reap){ pid, start };
}

/* Collects exited shims that are our children; forgets those that are gone or not ours. */
static void reap_pass(struct runtime *rt)
{
	size_t keep = 0;
	for (size_t i = 0; i < rt->nreap; i++) {
		unsigned long long st;
		bool zombie;
		struct reap r = rt->reap[i];
		if (rt_proc_starttime(r.pid, &st, &zombie) == 0 && st == r.start) {
			if (!zombie || waitpid(r.pid, NULL, WNOHANG) == 0)
				rt->reap[keep++] = r;
		}
	}
	rt->nreap = keep;
}

/* True while the shim runs. A dead shim that is our child is reaped here. */
static bool shim_alive(const struct pcont *c)
{
	unsigned long long st;
	bool zombie;
	if (c->shim_pid <= 0 || rt_proc_starttime(c->shim_pid, &st, &zombie) < 0 || st != c->shim_start)
		return false;
	if (zombie)
		waitpid(c->shim_pid, NULL, WNOHANG);
	return !zombie;
}

/* Signals the container's process group, if the container is still the process we started. */
static void signal_container(const struct pcont *c, int sig)
{
	if (c->pid > 0 && rt_proc_alive(c->pid, c->pid_start))
		kill(-c->pid, sig);
}

static const char *env_lookup(const struct rt_container *c, const char *name)
{
	for (size_t i = 0; i < c->nenv; i++)
		if (c->env[i].name && !strcmp(c->env[i].name, name))
			return c->env[i].value ? c->env[i].value : "";
	return NULL;
}

/* The program to run for argv0: new string, or NULL with *ret_err (new string). */
static char *resolve_program(const struct rt_container *c, const char *argv0, char **ret_err)
{
	const char *path_env = env_lookup(c, "PATH");
	int code;
	if (!path_env)
		path_env = getenv("PATH") ? getenv("PATH") : RT_DEFAULT_PATH;
	return rt_find_program(argv0, path_env, c->working_dir, &code, ret_err);
}

/* "NAME=VALUE" strings of the container's environment, with PATH and HOSTNAME defaulted. */
static char **build_env(const struct rt_pod *pod, const struct rt_container *c)
{
	char **envp = xcalloc(c->nenv + 3, sizeof(*envp));
	size_t n = 0;
	for (size_t i = 0; i < c->nenv; i++)
		if (c->env[i].name && *c->env[i].name)
			envp[n++] = xasprintf("%s=%s", c->env[i].name, c->env[i].value ? c->env[i].value : "");
	if (!env_lookup(c, "PATH"))
		envp[n++] = xasprintf("PATH=%s", getenv("PATH") ? getenv("PATH") : RT_DEFAULT_PATH);
	if (!env_lookup(c, "HOSTNAME"))
		envp[n++] = xasprintf("HOSTNAME=%s", pod->name);
	return envp;
}

static void free_strv(char **v)
{
	for (char **p = v; p && *p; p++)
		free(*p);
	free(v);
}

/* Points logs/.../current at the file name of the new instance's log. */
static void set_current_log(const char *dir, const char *file)
{
	char *tmp = xasprintf("%s/current.tmp", dir);
	char *cur = xasprintf("%s/current", dir);
	unlink(tmp);
	if (symlink(file, tmp) == 0 && rename(tmp, cur) < 0)
		unlink(tmp);
	free(tmp);
	free(cur);
}

/* Builds the shim's argv (borrowed strings except the ones in *owned). */
static char **shim_argv(const struct runtime *rt, const char *cdir, const char *logf, const char *prog,
			const struct rt_container *c, char **argv, size_t argc, struct buf *ids, char **mounts)
{
	char **v = xcalloc(argc + 18 + 2 * c->nmounts, sizeof(*v));
	size_t n = 0;
	/* the ids' texts live in ids, NUL-separated; their offsets first, pointers once it is built */
	size_t off[3];
	int nid = 0;
	const char *flag[3];
	if (c->ids.has_uid) {
		flag[nid] = "--uid";
		off[nid++] = ids->len;
		buf_addf(ids, "%lld", c->ids.uid);
		buf_addch(ids, '\0');
	}
	if (c->ids.has_gid) {
		flag[nid] = "--gid";
		off[nid++] = ids->len;
		buf_addf(ids, "%lld", c->ids.gid);
		buf_addch(ids, '\0');
	}
	if (c->ids.ngroups) {
		flag[nid] = "--groups";
		off[nid++] = ids->len;
		for (unsigned i = 0; i < c->ids.ngroups; i++)
			buf_addf(ids, "%s%lld", i ? "," : "", c->ids.groups[i]);
		buf_addch(ids, '\0');
	}
	v[n++] = rt->self_exe;
	v[n++] = "shim";
	v[n++] = "--state";
	v[n++] = (char *)cdir;
	v[n++] = "--log";
	v[n++] = (char *)logf;
	v[n++] = "--exec";
	v[n++] = (char *)prog;
	if (c->working_dir) {
		v[n++] = "--workdir";
		v[n++] = c->working_dir;
	}
	for (int i = 0; i < nid; i++) {
		v[n++] = (char *)flag[i];
		v[n++] = ids->ptr + off[i];
	}
	for (size_t i = 0; mounts && mounts[i]; i++) {
		v[n++] = "--mount";
		v[n++] = mounts[i];
	}
	v[n++] = "--";
	for (size_t i = 0; i < argc; i++)
		v[n++] = argv[i];
	return v;
}

/* Starts the shim in a session of its own, with stdio on /dev/null (shim errors go to
 * shim.log in the state dir). 0 or an errno value. */
static int spawn_shim(const char *exe, char **argv, char **envp, const char *errlog, pid_t *ret_pid)
{
	posix_spawnattr_t at;
	posix_spawn_file_actions_t fa;
	posix_spawnattr_init(&at);
	posix_spawn_file_actions_init(&fa);
	sigset_t none, def;
	sigemptyset(&none);
	sigemptyset(&def);
	int defsigs[] = { SIGPIPE, SIGHUP, SIGINT, SIGTERM, SIGQUIT, SIGCHLD, SIGUSR1, SIGUSR2, SIGALRM };
	for (size_t i = 0; i < ARRAY_SIZE(defsigs); i++)
		sigaddset(&def, defsigs[i]);
	posix_spawnattr_setsigmask(&at, &none);
	posix_spawnattr_setsigdefault(&at, &def);
	posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
	posix_spawn_file_actions_addopen(&fa, 2, errlog, O_WRONLY | O_CREAT | O_APPEND, 0640);
	posix_spawn_file_actions_addclosefrom_np(&fa, 3);
	int r = posix_spawn(ret_pid, exe, &fa, &at, argv, envp);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&at);
	return r;
}

/* Launches a new instance of container i. 0, or -1 with *ret_err (new string) when the spec
 * cannot run; the caller records the error. */
static int launch(struct runtime *rt, struct ppod *p, size_t i, char **ret_err)
{
	const struct rt_container *c = &p->spec.containers[i];
	struct pcont *pc = &p->c[i];
	size_t argc;
	char **argv = rt_container_argv(c, &argc);
	char *prog = NULL, *cdir = NULL, *ldir = NULL, *lname = NULL, *lpath = NULL, *errlog = NULL;
	char **envp = NULL, **sargv = NULL, **mounts = NULL;
	struct buf ids = BUF_INIT; /* texts of the shim's --uid, --gid, --groups */
	int ret = -1;
	struct stat st;
	if (!argc) {
		*ret_err = xstrdup("no command specified");
		goto out;
	}
	if (c->working_dir && (stat(c->working_dir, &st) < 0 || !S_ISDIR(st.st_mode))) {
		*ret_err = xasprintf("working directory \"%s\" does not exist or is not a directory", c->working_dir);
		goto out;
	}
	if (!(prog = resolve_program(c, argv[0], ret_err)))
		goto out;
	cdir = cont_dir(p, i);
	ldir = log_dir(rt, p->spec.tenant, p->spec.ns, p->spec.name, c->name);
	lname = xasprintf("%s-%d.log", p->spec.uid, pc->launches);
	lpath = xasprintf("%s/%s", ldir, lname);
	errlog = xasprintf("%s/shim.log", cdir);
	int err = rt_mkdir_p(cdir, 0750);
	if (!err)
		err = rt_mkdir_p(ldir, 0750);
	int fd = err ? -1 : open(lpath, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0640);
	if (fd < 0) {
		*ret_err = xasprintf("cannot create the log file \"%s\": %s", lpath, strerror(err ? -err : errno));
		goto out;
	}
	close(fd);
	set_current_log(ldir, lname);
	if (pc->launches >= 2) { /* keep this instance's log and the previous one */
		char *old = xasprintf("%s/%s-%d.log", ldir, p->spec.uid, pc->launches - 2);
		unlink(old);
		free(old);
	}
	char *f = cont_file(p, i, "exit.json");
	unlink(f);
	free(f);
	f = cont_file(p, i, "state.json");
	unlink(f);
	free(f);
	/* Saved before the spawn: a restart in between finds "creating" and looks for a shim. */
	pc->phase = C_CREATING;
	save_cont(p, i);
	envp = build_env(&p->spec, c);
	if (c->nmounts > SHIM_MAX_MOUNTS) {
		*ret_err = xasprintf("more than %d volume mounts", SHIM_MAX_MOUNTS);
		goto out;
	}
	mounts = xcalloc(c->nmounts + 1, sizeof(*mounts));
	for (size_t m = 0; m < c->nmounts; m++)
		mounts[m] = xasprintf("%s\t%s\t%s", c->mounts[m].readonly ? "ro" : "rw", c->mounts[m].host_path,
				      c->mounts[m].container_path);
	sargv = shim_argv(rt, cdir, lpath, prog, c, argv, argc, &ids, mounts);
	pid_t pid;
	if ((err = spawn_shim(rt->self_exe, sargv, envp, errlog, &pid))) {
		*ret_err = xasprintf("cannot start the shim \"%s\": %s", rt->self_exe, strerror(err));
		goto out;
	}
	pc->shim_pid = pid;
	pc->shim_start = 0;
	rt_proc_starttime(pid, &pc->shim_start, NULL);
	pc->pid = 0;
	pc->pid_start = 0;
	pc->started_at = now_ms() / 1000;
	pc->launches++;
	pc->post_start_due = true;
	pc->phase = C_RUNNING;
	pc->error[0] = '\0';
	save_cont(p, i);
	ret = 0;
out:
	free(argv);
	free(prog);
	free(cdir);
	free(ldir);
	free(lname);
	free(lpath);
	free(errlog);
	free_strv(envp);
	free(sargv);
	free_strv(mounts);
	buf_release(&ids);
	return ret;
}

static bool wants_restart(const struct ppod *p, const struct term *t)
{
	if (p->stopping || p->stopped)
		return false;
	return p->spec.restart == RT_RESTART_ALWAYS || (p->spec.restart == RT_RESTART_ON_FAILURE && t->exit_code != 0);
}

/* Schedules the next attempt: 10 s doubling to 300 s, reset after a long clean run. */
static void schedule_retry(struct runtime *rt, struct pcont *c, int64_t ran_s)
{
	if (!c->backoff_ms || ran_s * 1000 > 2 * rt->backoff_max_ms)
		c->backoff_ms = rt->backoff_base_ms;
	else
		c->backoff_ms = c->backoff_ms * 2 > rt->backoff_max_ms ? rt->backoff_max_ms : c->backoff_ms * 2;
	c->retry_at_ms = now_ms() + c->backoff_ms;
}

/* Records a termination and decides what comes next. */
static void on_terminated(struct runtime *rt, struct ppod *p, size_t i, const struct term *t)
{
	struct pcont *c = &p->c[i];
	if (c->has_term) {
		c->prev = c->term;
		c->has_prev = true;
	}
	c->term = *t;
	c->has_term = true;
	if (wants_restart(p, t)) {
		schedule_retry(rt, c, t->finished_at - t->started_at);
		c->phase = C_BACKOFF;
	} else {
		c->phase = C_TERMINATED;
	}
	reap_later(rt, c->shim_pid, c->shim_start);
	save_cont(p, i);
	rt->changed = true;
}

/* A spec that cannot run: RunContainerError (retried with back-off), or, for restartPolicy
 * Never, terminated with StartError. */
static void on_start_error(struct runtime *rt, struct ppod *p, size_t i, const char *msg)
{
	struct pcont *c = &p->c[i];
	if (p->spec.restart == RT_RESTART_NEVER || p->stopping) {
		struct term t = { .exit_code = 128, .finished_at = now_ms() / 1000 };
		snprintf(t.reason, sizeof(t.reason), "StartError");
		snprintf(t.message, sizeof(t.message), "%s", msg);
		t.started_at = t.finished_at;
		if (c->has_term) {
			c->prev = c->term;
			c->has_prev = true;
		}
		c->term = t;
		c->has_term = true;
		c->phase = C_TERMINATED;
	} else {
		schedule_retry(rt, c, 0);
		snprintf(c->error, sizeof(c->error), "%s", msg);
		c->phase = C_ERROR;
	}
	save_cont(p, i);
	rt->changed = true;
}

static void read_state(struct ppod *p, size_t i)
{
	struct pcont *c = &p->c[i];
	char *path = cont_file(p, i, "state.json");
	json_t *j = rt_read_json(path);
	free(path);
	if (!j)
		return;
	c->pid = (pid_t)json_integer_value(json_object_get(j, "pid"));
	c->pid_start = (unsigned long long)json_integer_value(json_object_get(j, "pidStart"));
	int64_t ns = json_integer_value(json_object_get(j, "startedAt"));
	if (ns > 0)
		c->started_at = ns / 1000000000;
	if (!c->shim_pid) {
		c->shim_pid = (pid_t)json_integer_value(json_object_get(j, "shimPid"));
		c->shim_start = (unsigned long long)json_integer_value(json_object_get(j, "shimStart"));
	}
	json_decref(j);
	save_cont(p, i);
}

static bool read_exit(struct ppod *p, size_t i, struct term *t)
{
	char *path = cont_file(p, i, "exit.json");
	json_t *j = rt_read_json(path);
	free(path);
	if (!j)
		return false;
	term_from_json(j, t);
	t->started_at /= 1000000000;
	t->finished_at /= 1000000000;
	if (!t->reason[0])
		snprintf(t->reason, sizeof(t->reason), "%s", t->exit_code == 0 ? "Completed" : "Error");
	json_decref(j);
	return true;
}

/* Checks a running container; true if it has ended (and was recorded). */
static bool check_running(struct runtime *rt, struct ppod *p, size_t i)
{
	struct pcont *c = &p->c[i];
	struct term t;
	if (!c->pid) {
		read_state(p, i);
		if (c->pid)
			rt->changed = true; /* status() starts its postStart (hooks.h) */
	}
	if (read_exit(p, i, &t)) {
		on_terminated(rt, p, i, &t);
		return true;
	}
	if (shim_alive(c))
		return false;
	if (read_exit(p, i, &t)) { /* it wrote the record just before it went */
		on_terminated(rt, p, i, &t);
		return true;
	}
	/* The shim died without a record (killed): the container must not run unwatched. */
	signal_container(c, SIGKILL);
	memset(&t, 0, sizeof(t));
	t.exit_code = 255;
	t.started_at = c->started_at;
	t.finished_at = now_ms() / 1000;
	snprintf(t.reason, sizeof(t.reason), "Error");
	snprintf(t.message, sizeof(t.message), "the container's shim (pid %ld) exited unexpectedly", (long)c->shim_pid);
	on_terminated(rt, p, i, &t);
	return true;
}

static void try_start(struct runtime *rt, struct ppod *p, size_t i)
{
	char *err = NULL;
	if (launch(rt, p, i, &err) < 0) {
		on_start_error(rt, p, i, err);
		free(err);
	}
	rt->changed = true;
}

/* ---- pods ---- */

static struct ppod *find_pod(struct runtime *rt, const char *uid, struct ppod ***ret_link)
{
	for (struct ppod **l = &rt->pods; *l; l = &(*l)->next) {
		if (!strcmp((*l)->spec.uid, uid)) {
			if (ret_link)
				*ret_link = l;
			return *l;
		}
	}
	return NULL;
}

static void free_pod(struct ppod *p)
{
	rt_pod_release(&p->spec);
	free(p->c);
	free(p->dir);
	free(p);
}

static struct ppod *new_pod(struct runtime *rt, struct rt_pod *spec /* taken */)
{
	struct ppod *p = xcalloc(1, sizeof(*p));
	p->spec = *spec;
	p->c = xcalloc(spec->ncontainers ? spec->ncontainers : 1, sizeof(*p->c));
	p->dir = xasprintf("%s/pods/%s", rt->root, spec->uid);
	p->next = rt->pods;
	rt->pods = p;
	return p;
}

static bool spec_ok(const struct rt_pod *pod, char **ret_err)
{
	if (!rt_path_component_ok(pod->uid) || !rt_path_component_ok(pod->tenant) || !rt_path_component_ok(pod->ns) ||
	    !rt_path_component_ok(pod->name)) {
		*ret_err = xstrdup("pod uid, tenant, namespace and name must be plain names");
		return false;
	}
	for (size_t i = 0; i < pod->ncontainers; i++) {
		if (!rt_path_component_ok(pod->containers[i].name) || !strcmp(pod->containers[i].name, "current")) {
			*ret_err = xasprintf("invalid container name \"%s\"",
					     pod->containers[i].name ? pod->containers[i].name : "");
			return false;
		}
	}
	return true;
}

/* A recovered container whose launch was interrupted: adopt its shim if it got going. */
static void recover_creating(struct ppod *p, size_t i)
{
	struct pcont *c = &p->c[i];
	c->shim_pid = 0;
	read_state(p, i);
	char *ex = cont_file(p, i, "exit.json");
	bool exited = access(ex, F_OK) == 0;
	free(ex);
	if (exited || (c->shim_pid && shim_alive(c))) {
		c->phase = C_RUNNING; /* launch() counts the instance only after the spawn */
		c->launches++;
		save_cont(p, i);
	} else {
		c->phase = C_BACKOFF;
		c->retry_at_ms = 0;
	}
}

static void recover_pod(struct runtime *rt, const char *uid)
{
	char *path = xasprintf("%s/pods/%s/pod.json", rt->root, uid);
	json_t *j = rt_read_json(path);
	free(path);
	struct rt_pod spec;
	if (!j || rt_pod_from_json(j, &spec) < 0 || strcmp(spec.uid, uid)) {
		json_decref(j);
		return;
	}
	struct ppod *p = new_pod(rt, &spec);
	p->stopped = json_is_true(json_object_get(j, "stopped"));
	json_decref(j);
	for (size_t i = 0; i < p->spec.ncontainers; i++) {
		load_cont(p, i);
		if (p->c[i].phase == C_CREATING && !p->stopped)
			recover_creating(p, i);
	}
}

static void recover(struct runtime *rt)
{
	char *dir = xasprintf("%s/pods", rt->root);
	DIR *d = opendir(dir);
	free(dir);
	if (!d)
		return;
	struct dirent *e;
	while ((e = readdir(d)))
		if (e->d_name[0] != '.')
			recover_pod(rt, e->d_name);
	closedir(d);
}

static struct runtime *proc_create(const char *root_dir, const char *self_exe)
{
	if (!root_dir || !*root_dir)
		return NULL;
	struct runtime *rt = xcalloc(1, sizeof(*rt));
	rt->root = xstrdup(root_dir);
	rt->self_exe = xstrdup(self_exe && *self_exe ? self_exe : "/proc/self/exe");
	rt->backoff_base_ms = rt_backoff_base_ms();
	rt->backoff_max_ms = rt->backoff_base_ms * 30;
	char *pods = xasprintf("%s/pods", root_dir), *logs = xasprintf("%s/logs", root_dir);
	int r = rt_mkdir_p(pods, 0750);
	if (!r)
		r = rt_mkdir_p(logs, 0750);
	free(pods);
	free(logs);
	if (r < 0) {
		free(rt->root);
		free(rt->self_exe);
		free(rt);
		return NULL;
	}
	recover(rt);
	rt->changed = true;
	return rt;
}

/* Frees memory only: containers keep running and are adopted by the next create(). */
static void proc_destroy(struct runtime *rt)
{
	if (!rt)
		return;
	prober_forget_owner(rt);
	hooks_forget_owner(rt);
	while (rt->pods) {
		struct ppod *p = rt->pods;
		rt->pods = p->next;
		free_pod(p);
	}
	free(rt->reap);
	free(rt->root);
	free(rt->self_exe);
	free(rt);
}

/* A pod recovered from its saved spec has no probes (rt_pod_to_json keeps none): the pod worker's
 * spec brings them. */
static void adopt_probes(struct ppod *p, const struct rt_pod *pod)
{
	for (size_t i = 0; i < p->spec.ncontainers; i++)
		for (size_t j = 0; j < pod->ncontainers; j++) {
			if (strcmp(p->spec.containers[i].name, pod->containers[j].name) != 0)
				continue;
			for (int k = 0; k < RT_PROBE_KINDS; k++)
				if (!p->spec.containers[i].probes[k])
					p->spec.containers[i].probes[k] = rt_probe_dup(pod->containers[j].probes[k]);
			for (int k = 0; k < RT_HOOK_KINDS; k++) /* nor hooks */
				if (!p->spec.containers[i].hooks[k])
					p->spec.containers[i].hooks[k] = rt_hook_dup(pod->containers[j].hooks[k]);
		}
}

static int proc_start_pod(struct runtime *rt, const struct rt_pod *pod, char **ret_err)
{
	if (!pod || !pod->uid) {
		*ret_err = xstrdup("pod has no uid");
		return -1;
	}
	struct ppod *known = find_pod(rt, pod->uid, NULL);
	if (known) { /* running, adopted or stopped: nothing is started twice */
		adopt_probes(known, pod);
		return 0;
	}
	if (!spec_ok(pod, ret_err))
		return -1;
	struct rt_pod copy;
	rt_pod_copy(&copy, pod);
	struct ppod *p = new_pod(rt, &copy);
	int r = rt_mkdir_p(p->dir, 0750);
	if (r < 0) {
		*ret_err = xasprintf("cannot create \"%s\": %s", p->dir, strerror(-r));
		rt->pods = p->next;
		free_pod(p);
		return -1;
	}
	save_pod(p);
	int ret = 0;
	for (size_t i = 0; i < p->spec.ncontainers; i++) {
		char *err = NULL;
		if (launch(rt, p, i, &err) == 0)
			continue;
		on_start_error(rt, p, i, err);
		size_t n;
		char **argv = rt_container_argv(&p->spec.containers[i], &n);
		free(argv);
		if (!n && ret == 0) { /* a spec error, not a runtime condition */
			*ret_err = xasprintf("container \"%s\": %s", p->spec.containers[i].name, err);
			ret = -1;
		}
		free(err);
	}
	rt->changed = true;
	return ret;
}

/* One round of stop_pod: signals what runs; true when nothing runs any more. */
static bool stop_round(struct runtime *rt, struct ppod *p, bool kill_now)
{
	bool done = true;
	for (size_t i = 0; i < p->spec.ncontainers; i++) {
		struct pcont *c = &p->c[i];
		if (c->phase != C_RUNNING || check_running(rt, p, i))
			continue;
		done = false;
		if (c->pid && (!c->sent_term || kill_now)) {
			signal_container(c, kill_now ? SIGKILL : SIGTERM);
			c->sent_term = true;
		}
	}
	return done;
}

static void settle_stopped(struct runtime *rt, struct ppod *p)
{
	for (size_t i = 0; i < p->spec.ncontainers; i++) {
		struct pcont *c = &p->c[i];
		if (c->phase == C_RUNNING) { /* gave up waiting: take the shim down too */
			signal_container(c, SIGKILL);
			if (shim_alive(c))
				kill(c->shim_pid, SIGKILL);
			struct term t = { .exit_code = 137, .signal = SIGKILL, .started_at = c->started_at,
					  .finished_at = now_ms() / 1000 };
			snprintf(t.reason, sizeof(t.reason), "Error");
			snprintf(t.message, sizeof(t.message), "killed: no exit record after SIGKILL");
			on_terminated(rt, p, i, &t);
		} else if (c->phase == C_ERROR || c->phase == C_CREATING) {
			on_start_error(rt, p, i, c->error[0] ? c->error : "stopped before it started");
		}
		c->phase = C_TERMINATED;
		save_cont(p, i);
		char *f = cont_file(p, i, "state.json");
		unlink(f);
		free(f);
		f = cont_file(p, i, "exit.json");
		unlink(f);
		free(f);
	}
	/* Exited shims go away right after their record; collect them while we are here. */
	for (int tries = 0; tries < 50 && rt->nreap; tries++) {
		reap_pass(rt);
		if (rt->nreap)
			usleep(10000);
	}
}

static const struct prober_ops proc_probe_ops;

/* The preStop hooks (hooks.h) of p's running containers, all at once within grace_s: the grace
 * left for TERM..KILL. */
static long long pre_stop_hooks(struct runtime *rt, struct ppod *p, long long grace_s)
{
	struct hook_job *jobs = xcalloc(p->spec.ncontainers + 1, sizeof(*jobs));
	char (*cids)[64] = xcalloc(p->spec.ncontainers + 1, sizeof(*cids));
	size_t n = 0;
	for (size_t i = 0; i < p->spec.ncontainers; i++) {
		struct pcont *c = &p->c[i];
		const struct rt_hook *h = p->spec.containers[i].hooks[RT_HOOK_PRE_STOP];
		if (!h || c->phase != C_RUNNING || check_running(rt, p, i) || c->pid <= 0)
			continue;
		snprintf(cids[n], sizeof(cids[n]), "%d:%llu", (int)c->pid, c->pid_start);
		jobs[n].h = h;
		jobs[n].t = (struct hook_target){ .uid = p->spec.uid, .tenant = p->spec.tenant, .ns = p->spec.ns,
						  .pod = p->spec.name, .container = p->spec.containers[i].name,
						  .cid = cids[n], .ip = NULL, .ops = &proc_probe_ops, .ud = rt };
		n++;
	}
	grace_s = hooks_pre_stop_all(jobs, n, grace_s);
	free(jobs);
	free(cids);
	return grace_s;
}

static int proc_stop_pod(struct runtime *rt, const char *uid, long long grace_s)
{
	prober_forget_pod(uid);
	struct ppod *p = find_pod(rt, uid, NULL);
	if (!p)
		return -1;
	if (p->stopped)
		return 0;
	p->stopping = true;
	hooks_forget_pod(uid);
	if (grace_s < 0)
		grace_s = 0;
	grace_s = pre_stop_hooks(rt, p, grace_s);
	int64_t start = mono_ms(), kill_at = start + grace_s * 1000, give_up = kill_at + KILL_WAIT_MS;
	for (size_t i = 0; i < p->spec.ncontainers; i++)
		p->c[i].sent_term = false;
	for (;;) {
		int64_t now = mono_ms();
		if (stop_round(rt, p, now >= kill_at) || now >= give_up)
			break;
		usleep(now - start < 1000 ? 10000 : 50000);
	}
	settle_stopped(rt, p);
	p->stopping = false;
	p->stopped = true;
	save_pod(p);
	rt->changed = true;
	return 0;
}

/* Deletes the pod's own log files (named after its uid) and the directories left empty. */
static void remove_logs(struct runtime *rt, const struct ppod *p)
{
	size_t ulen = strlen(p->spec.uid);
	for (size_t i = 0; i < p->spec.ncontainers; i++) {
		char *dir = log_dir(rt, p->spec.tenant, p->spec.ns, p->spec.name, p->spec.containers[i].name);
		char *cur = xasprintf("%s/current", dir);
		char target[512];
		ssize_t n = readlink(cur, target, sizeof(target) - 1);
		if (n > 0 && (size_t)n > ulen && !strncmp(target, p->spec.uid, ulen) && target[ulen] == '-')
			unlink(cur);
		DIR *d = opendir(dir);
		struct dirent *e;
		while (d && (e = readdir(d))) {
			if (!strncmp(e->d_name, p->spec.uid, ulen) && e->d_name[ulen] == '-') {
				char *f = xasprintf("%s/%s", dir, e->d_name);
				unlink(f);
				free(f);
			}
		}
		if (d)
			closedir(d);
		rmdir(dir);
		free(cur);
		free(dir);
	}
	char *pdir = xasprintf("%s/logs/%s_%s_%s", rt->root, p->spec.tenant, p->spec.ns, p->spec.name);
	rmdir(pdir);
	free(pdir);
}

static void proc_remove_pod(struct runtime *rt, const char *uid)
{
	prober_forget_pod(uid);
	hooks_forget_pod(uid);
	struct ppod **link;
	struct ppod *p = find_pod(rt, uid, &link);
	if (!p)
		return;
	if (!p->stopped)
		proc_stop_pod(rt, uid, 0);
	remove_logs(rt, p);
	rt_rm_rf(p->dir);
	*link = p->next;
	free_pod(p);
	rt->changed = true;
}

static void term_to_status(const struct term *t, struct rt_container_status *s)
{
	s->exit_code = t->exit_code;
	s->signal = t->signal;
	snprintf(s->reason, sizeof(s->reason), "%s", t->reason);
	snprintf(s->message, sizeof(s->message), "%s", t->message);
	s->started_at = t->started_at;
	s->finished_at = t->finished_at;
}

static void fill_status(const struct ppod *p, size_t i, struct rt_container_status *s)
{
	const struct rt_container *c = &p->spec.containers[i];
	const struct pcont *pc = &p->c[i];
	memset(s, 0, sizeof(*s));
	snprintf(s->name, sizeof(s->name), "%s", c->name);
	s->restart_count = pc->launches > 1 ? pc->launches - 1 : 0;
	if (pc->launches)
		snprintf(s->container_id, sizeof(s->container_id), "process://%.8s-%s-%d", p->spec.uid, c->name,
			 pc->launches - 1);
	struct buf img = BUF_INIT;
	rt_image_id_add(&img, "process", c);
	snprintf(s->image_id, sizeof(s->image_id), "%s", buf_cstr(&img));
	buf_release(&img);
	/* lastState: the newest termination while waiting/running, the one before when terminated */
	const struct term *last = pc->phase == C_TERMINATED ? (pc->has_prev ? &pc->prev : NULL)
							    : (pc->has_term ? &pc->term : NULL);
	if (last)
		rt_status_set_last(s, last->exit_code, last->reason, last->started_at, last->finished_at);
	switch (pc->phase) {
	case C_CREATING:
		s->state = RT_WAITING;
		snprintf(s->reason, sizeof(s->reason), "ContainerCreating");
		break;
	case C_RUNNING:
		s->state = RT_RUNNING;
		s->started_at = pc->started_at;
		s->ready = true;
		break;
	case C_BACKOFF:
		rt_status_set_backoff(s, pc->backoff_ms, c->name, p->spec.name, p->spec.ns, p->spec.uid);
		break;
	case C_ERROR:
		s->state = RT_WAITING;
		snprintf(s->reason, sizeof(s->reason), "RunContainerError");
		snprintf(s->message, sizeof(s->message), "%s", pc->error);
		break;
	case C_TERMINATED:
		s->state = RT_TERMINATED;
		if (pc->has_term)
			term_to_status(&pc->term, s);
		else
			snprintf(s->reason, sizeof(s->reason), "Completed");
		break;
	}
}

/* ---- probes (probes.h): the prober's instance id of a container is "<pid>:<pid's start time>" ---- */

static bool parse_instance(const char *cid, pid_t *ret_pid, unsigned long long *ret_start)
{
	char *end;
	long pid = strtol(cid, &end, 10);
	if (pid <= 0 || *end != ':')
		return false;
	*ret_pid = (pid_t)pid;
	*ret_start = strtoull(end + 1, NULL, 10);
	return true;
}

static int probe_exec(void *ud, const char *cid, char *const *cmd, int timeout_s, struct buf *out, int *ret_code)
{
	(void)ud;
	pid_t pid;
	unsigned long long start;
	if (!parse_instance(cid, &pid, &start) || !rt_proc_alive(pid, start)) {
		buf_adds(out, "the container is not running");
		return E_NOT_FOUND;
	}
	return probe_exec_local(pid, cmd, timeout_s, out, ret_code);
}

static void probe_kill(void *ud, const char *uid, const char *container, const char *cid, long long grace_s)
{
	(void)ud, (void)uid, (void)container;
	pid_t pid;
	unsigned long long start;
	if (parse_instance(cid, &pid, &start))
		probe_kill_local(pid, start, grace_s);
}

static const struct prober_ops proc_probe_ops = { .exec = probe_exec, .kill = probe_kill };

/* A running container whose postStart (hooks.h) has not succeeded yet (cid NULL: its process is not
 * known yet) shows Waiting and not ready, as in Kubernetes; true then. The first call for an
 * instance starts the hook. */
static bool post_start_pending(struct runtime *rt, struct ppod *p, size_t i, const char *cid,
			       struct rt_container_status *s)
{
	const struct rt_container *c = &p->spec.containers[i];
	if (!c->hooks[RT_HOOK_POST_START] || !p->c[i].post_start_due) /* adopted: it ran before a restart */
		return false;
	struct hook_target t = { .uid = p->spec.uid, .tenant = p->spec.tenant, .ns = p->spec.ns, .pod = p->spec.name,
				 .container = c->name, .cid = cid, .ip = NULL, .ops = &proc_probe_ops, .ud = rt };
	if (cid && hooks_post_start(&t, c->hooks[RT_HOOK_POST_START], c->hooks[RT_HOOK_PRE_STOP], p->spec.grace_s) ==
			   HOOK_DONE)
		return false;
	s->state = RT_WAITING;
	s->started_at = 0;
	s->ready = false;
	snprintf(s->reason, sizeof(s->reason), "ContainerCreating");
	return true;
}

static int proc_status(struct runtime *rt, const char *uid, struct rt_container_status *out, size_t max)
{
	struct ppod *p = find_pod(rt, uid, NULL);
	if (!p)
		return -1;
	size_t n = p->spec.ncontainers < max ? p->spec.ncontainers : max;
	for (size_t i = 0; i < n; i++) {
		fill_status(p, i, &out[i]);
		if (p->stopped || p->stopping)
			continue;
		if (out[i].state != RT_RUNNING || p->c[i].pid <= 0) {
			prober_container_gone(p->spec.uid, p->spec.containers[i].name);
			if (out[i].state == RT_RUNNING)
				post_start_pending(rt, p, i, NULL, &out[i]);
			continue;
		}
		char cid[64];
		snprintf(cid, sizeof(cid), "%d:%llu", (int)p->c[i].pid, p->c[i].pid_start);
		if (post_start_pending(rt, p, i, cid, &out[i]))
			continue;
		struct prober_target t = {
			.uid = p->spec.uid, .tenant = p->spec.tenant, .ns = p->spec.ns, .pod = p->spec.name,
			.spec = &p->spec.containers[i], .pod_grace_s = p->spec.grace_s, .cid = cid,
			.started_at = out[i].started_at, .ip = NULL, .ops = &proc_probe_ops, .ud = rt,
		};
		bool started, ready;
		prober_container(&t, &started, &ready);
		out[i].startup_pending = !started;
		out[i].ready = ready;
	}
	return (int)n;
}

static bool proc_sync(struct runtime *rt)
{
	reap_pass(rt);
	int64_t now = now_ms();
	for (struct ppod *p = rt->pods; p; p = p->next) {
		if (p->stopped)
			continue;
		for (size_t i = 0; i < p->spec.ncontainers; i++) {
			struct pcont *c = &p->c[i];
			if (c->phase == C_RUNNING)
				check_running(rt, p, i);
			else if ((c->phase == C_BACKOFF || c->phase == C_ERROR || c->phase == C_CREATING) &&
				 now >= c->retry_at_ms)
				try_start(rt, p, i);
		}
	}
	bool changed = rt->changed;
	rt->changed = false;
	return changed;
}

static size_t proc_list_pods(struct runtime *rt, char ***ret)
{
	size_t n = 0;
	for (struct ppod *p = rt->pods; p; p = p->next)
		n++;
	char **v = xcalloc(n ? n : 1, sizeof(*v));
	size_t i = 0;
	for (struct ppod *p = rt->pods; p; p = p->next)
		v[i++] = xstrdup(p->spec.uid);
	*ret = v;
	return n;
}

/* Reads only the file system (root is immutable), so any thread may call it. */
static char *proc_log_path(struct runtime *rt, const char *tenant, const char *ns, const char *pod,
			   const char *container)
{
	if (!rt_path_component_ok(tenant) || !rt_path_component_ok(ns) || !rt_path_component_ok(pod) ||
	    !rt_path_component_ok(container))
		return NULL;
	char *dir = log_dir(rt, tenant, ns, pod, container);
	char *cur = xasprintf("%s/current", dir);
	char target[512];
	char *path = NULL;
	ssize_t n = readlink(cur, target, sizeof(target) - 1);
	if (n > 0) {
		target[n] = '\0';
		struct stat st;
		if (rt_path_component_ok(target)) {
			path = xasprintf("%s/%s", dir, target);
			if (stat(path, &st) < 0 || !S_ISREG(st.st_mode)) {
				free(path);
				path = NULL;
			}
		}
	}
	free(cur);
	free(dir);
	return path;
}

/* The log of the instance before the newest: current points at <uid>-<n>.log, that one is
 * <uid>-<n-1>.log (launch keeps the two newest). */
static char *proc_prev_log_path(struct runtime *rt, const char *tenant, const char *ns, const char *pod,
				const char *container)
{
	char *cur = proc_log_path(rt, tenant, ns, pod, container);
	char *dash = cur ? strrchr(cur, '-') : NULL;
	char *path = NULL;
	int n;
	if (dash && sscanf(dash + 1, "%d.log", &n) == 1 && n > 0) {
		*dash = '\0';
		path = xasprintf("%s-%d.log", cur, n - 1);
		struct stat st;
		if (stat(path, &st) < 0 || !S_ISREG(st.st_mode)) {
			free(path);
			path = NULL;
		}
	}
	free(cur);
	return path;
}

/* Streams (streams.h): reads only the file system, like proc_log_path, so any thread may call it. The
 * pod is found by name among pods/<uid>/pod.json (the one not stopped). */
static int proc_stream_target(struct runtime *rt, const struct rt_stream_req *req, struct rt_stream_target *out,
			      char **ret_err)
{
	memset(out, 0, sizeof(*out));
	char *pods = xasprintf("%s/pods", rt->root);
	DIR *d = opendir(pods);
	struct rt_pod spec = { 0 };
	bool found = false;
	char *dir = NULL;
	int rc = 0;
	for (struct dirent *de; d && !found && (de = readdir(d));) {
		if (!rt_path_component_ok(de->d_name))
			continue;
		char *f = xasprintf("%s/%s/pod.json", pods, de->d_name);
		json_t *j = rt_read_json(f);
		free(f);
		if (j && !json_is_true(json_object_get(j, "stopped")) && rt_pod_from_json(j, &spec) == 0) {
			if (!strcmp(spec.tenant, req->tenant) && !strcmp(spec.ns, req->ns) && !strcmp(spec.name, req->pod)) {
				found = true;
				dir = xasprintf("%s/%s", pods, de->d_name);
			} else {
				rt_pod_release(&spec);
			}
		}
		json_decref(j);
	}
	if (d)
		closedir(d);
	free(pods);
	if (!found) {
		*ret_err = xasprintf("pod \"%s\" (namespace \"%s\", tenant \"%s\") is not running on this node", req->pod,
				     req->ns, req->tenant);
		return E_NOT_FOUND;
	}
	if (req->kind == RT_STREAM_PORTFORWARD)
		goto out; /* the node's network: 127.0.0.1 */
	const struct rt_container *c = NULL;
	for (size_t i = 0; i < spec.ncontainers && !c; i++)
		if (!strcmp(spec.containers[i].name, req->container))
			c = &spec.containers[i];
	if (!c) {
		*ret_err = xasprintf("container \"%s\" is not valid for pod \"%s\"", req->container, req->pod);
		rc = E_NOT_FOUND;
		goto out;
	}
	char *sf = xasprintf("%s/containers/%s/state.json", dir, c->name);
	json_t *st = rt_read_json(sf);
	free(sf);
	pid_t pid = (pid_t)json_integer_value(json_object_get(st, "pid"));
	unsigned long long start = (unsigned long long)json_integer_value(json_object_get(st, "pidStart"));
	json_decref(st);
	if (pid <= 0 || !rt_proc_alive(pid, start)) {
		*ret_err = xasprintf("container \"%s\" in pod \"%s\" is not running", req->container, req->pod);
		rc = E_CONFLICT;
		goto out;
	}
	out->pid = pid;
	if (req->kind == RT_STREAM_EXEC) {
		out->envp = build_env(&spec, c);
		out->working_dir = c->working_dir ? xstrdup(c->working_dir) : NULL;
		out->ids = c->ids;
	} else if (!(out->log_path = proc_log_path(rt, req->tenant, req->ns, req->pod, req->container))) {
		*ret_err = xasprintf("container \"%s\" in pod \"%s\" has no output yet", req->container, req->pod);
		rc = E_CONFLICT;
	}
out:
	if (rc)
		rt_stream_target_release(out);
	rt_pod_release(&spec);
	free(dir);
	return rc;
}

const struct runtime_ops runtime_process = {
	.name = "process",
	.create = proc_create,
	.destroy = proc_destroy,
	.start_pod = proc_start_pod,
	.stop_pod = proc_stop_pod,
	.remove_pod = proc_remove_pod,
	.status = proc_status,
	.sync = proc_sync,
	.list_pods = proc_list_pods,
	.log_path = proc_log_path,
	.prev_log_path = proc_prev_log_path,
	.stream_target = proc_stream_target,
};
