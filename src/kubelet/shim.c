/* The container shim: runs one container instance, logs its output in the CRI format and
 * records its pid and exit status on disk (see shim.h). Single-threaded; it outlives the
 * kubelet that started it. */
#define _GNU_SOURCE
#include "shim.h"
#include "runtime_common.h"
#include "ursa/xalloc.h"
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

struct shim_opts {
	const char *state_dir, *log_path, *exec_path, *workdir;
	const char *uid_s, *gid_s, *groups_s; /* --uid, --gid, --groups (comma list), or NULL */
	uid_t uid;
	gid_t gid;
	gid_t groups[RT_MAX_GROUPS];
	size_t ngroups;
	const char *mounts[SHIM_MAX_MOUNTS]; /* --mount "ro|rw<TAB>host path<TAB>container path" */
	size_t nmounts;
	char **argv;
};

struct stream {
	const char *name; /* "stdout" or "stderr" */
	int fd;
	struct buf pending; /* bytes after the last newline */
};

struct shim {
	struct shim_opts o;
	int logfd;
	pid_t pid;
	int64_t started_ns;
	struct stream out, err;
};

bool shim_log_is_final(const struct stat *st)
{
	return !(st->st_mode & (S_IWUSR | S_IWGRP | S_IWOTH));
}

static int parse_id(const char *s, unsigned *ret)
{
	long long v;
	if (parse_int64(s, &v) < 0 || v < 0 || v > 2147483647)
		return -1;
	*ret = (unsigned)v;
	return 0;
}

static int parse_ids(struct shim_opts *o)
{
	if ((o->uid_s && parse_id(o->uid_s, &o->uid)) || (o->gid_s && parse_id(o->gid_s, &o->gid)))
		return -1;
	for (const char *p = o->groups_s; p && *p;) {
		const char *comma = strchr(p, ',');
		char one[16];
		size_t len = comma ? (size_t)(comma - p) : strlen(p);
		if (len == 0 || len >= sizeof(one) || o->ngroups >= RT_MAX_GROUPS)
			return -1;
		memcpy(one, p, len);
		one[len] = '\0';
		if (parse_id(one, &o->groups[o->ngroups++]))
			return -1;
		p = comma ? comma + 1 : p + len;
	}
	return 0;
}

static int parse_opts(int argc, char **argv, struct shim_opts *o)
{
	memset(o, 0, sizeof(*o));
	int i = 1;
	if (i < argc && !strcmp(argv[i], "shim"))
		i++;
	for (; i < argc; i++) {
		const char **dst = !strcmp(argv[i], "--state")	 ? &o->state_dir
				   : !strcmp(argv[i], "--log")	 ? &o->log_path
				   : !strcmp(argv[i], "--exec")	 ? &o->exec_path
				   : !strcmp(argv[i], "--workdir") ? &o->workdir
				   : !strcmp(argv[i], "--uid")	 ? &o->uid_s
				   : !strcmp(argv[i], "--gid")	 ? &o->gid_s
				   : !strcmp(argv[i], "--groups")	 ? &o->groups_s
								   : NULL;
		if (!strcmp(argv[i], "--")) {
			i++;
			break;
		}
		if (!strcmp(argv[i], "--mount") && i + 1 < argc && o->nmounts < SHIM_MAX_MOUNTS) {
			o->mounts[o->nmounts++] = argv[++i];
			continue;
		}
		if (!dst || i + 1 >= argc)
			return -1;
		*dst = argv[++i];
	}
	if (i >= argc || !o->state_dir || !o->log_path)
		return -1;
	o->argv = argv + i;
	if (!o->exec_path)
		o->exec_path = o->argv[0];
	return parse_ids(o);
}

static void write_log_record(struct shim *s, const char *stream, char tag, const char *text, size_t len)
{
	struct buf b = BUF_INIT;
	rt_cri_time_add(&b, rt_now_ns());
	buf_addf(&b, " %s %c ", stream, tag);
	buf_add(&b, text, len);
	buf_addch(&b, '\n');
	const char *p = b.ptr;
	size_t left = b.len;
	while (left) {
		ssize_t n = write(s->logfd, p, left);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break; /* disk full: the record is lost, the container goes on */
		p += n;
		left -= (size_t)n;
	}
	buf_release(&b);
}

/* Emits every complete line of st->pending, and P records for runs longer than the cap. */
static void flush_lines(struct shim *s, struct stream *st, bool at_eof)
{
	size_t off = 0;
	while (off < st->pending.len) {
		const char *start = st->pending.ptr + off;
		size_t left = st->pending.len - off;
		size_t scan = left < RT_LOG_MAX_LINE + 1 ? left : RT_LOG_MAX_LINE + 1;
		const char *nl = memchr(start, '\n', scan);
		if (nl && (size_t)(nl - start) <= RT_LOG_MAX_LINE) {
			write_log_record(s, st->name, 'F', start, (size_t)(nl - start));
			off += (size_t)(nl - start) + 1;
		} else if (left > RT_LOG_MAX_LINE) {
			write_log_record(s, st->name, 'P', start, RT_LOG_MAX_LINE);
			off += RT_LOG_MAX_LINE;
		} else {
			if (at_eof)
				write_log_record(s, st->name, 'F', start, left), off += left;
			break;
		}
	}
	if (off) {
		memmove(st->pending.ptr, st->pending.ptr + off, st->pending.len - off);
		st->pending.len -= off;
		st->pending.ptr[st->pending.len] = '\0';
	}
}

/* Reads what is available; returns false at EOF (the fd is then closed). */
static bool pump(struct shim *s, struct stream *st)
{
	char tmp[16384];
	for (;;) {
		ssize_t n = read(st->fd, tmp, sizeof(tmp));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return true;
		if (n <= 0) {
			flush_lines(s, st, true);
			close(st->fd);
			st->fd = -1;
			return false;
		}
		buf_add(&st->pending, tmp, (size_t)n);
		flush_lines(s, st, false);
	}
}

static void write_state(struct shim *s)
{
	unsigned long long pstart = 0, sstart = 0;
	rt_proc_starttime(s->pid, &pstart, NULL);
	rt_proc_starttime(getpid(), &sstart, NULL);
	json_t *j = json_pack("{s:I,s:I,s:I,s:I,s:I}", "pid", (json_int_t)s->pid, "pidStart", (json_int_t)pstart,
			      "shimPid", (json_int_t)getpid(), "shimStart", (json_int_t)sstart, "startedAt",
			      (json_int_t)s->started_ns);
	char *path = xasprintf("%s/state.json", s->o.state_dir);
	rt_write_json(path, j);
	free(path);
	json_decref(j);
}

static void write_exit(struct shim *s, int code, int sig, const char *reason, const char *message)
{
	json_t *j = json_pack("{s:i,s:i,s:I,s:I}", "exitCode", code, "signal", sig, "startedAt",
			      (json_int_t)s->started_ns, "finishedAt", (json_int_t)rt_now_ns());
	if (reason)
		json_object_set_new(j, "reason", json_string(reason));
	if (message)
		json_object_set_new(j, "message", json_string(message));
	char *path = xasprintf("%s/exit.json", s->o.state_dir);
	rt_write_json(path, j);
	free(path);
	json_decref(j);
}

/* In the forked child: the container's groups, then its group, then its user (the working
 * directory is entered as that user). Nothing to do when no id was given. False with *what
 * set ('g' groups, 'u' user) on failure, errno telling why. */
static bool switch_ids(const struct shim_opts *o, int *what)
{
	if (!o->uid_s && !o->gid_s && !o->groups_s)
		return true;
	*what = 'g';
	if (setgroups(o->ngroups, o->groups) < 0 || (o->gid_s && setgid(o->gid) < 0))
		return false;
	*what = 'u';
	if (o->uid_s && setuid(o->uid) < 0)
		return false;
	return true;
}

/* In the forked child: a mount namespace of its own in which each --mount's host path is
 * bind-mounted (read-only for "ro") at its container path, created on the node first (an empty
 * directory, or an empty file for a file) if missing. False with errno set on failure. */
static bool setup_mounts(const struct shim_opts *o)
{
	if (!o->nmounts)
		return true;
	if (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
		return false;
	for (size_t i = 0; i < o->nmounts; i++) {
		char *spec = xstrdup(o->mounts[i]);
		char *host = strchr(spec, '\t'), *dest = host ? strchr(host + 1, '\t') : NULL;
		struct stat st;
		bool ok = host && dest;
		if (ok) {
			*host++ = '\0';
			*dest++ = '\0';
			ok = stat(host, &st) == 0;
		}
		if (ok && S_ISDIR(st.st_mode)) {
			ok = rt_mkdir_p(dest, 0755) == 0;
		} else if (ok) {
			char *slash = strrchr(dest, '/');
			if (slash && slash != dest) {
				*slash = '\0';
				rt_mkdir_p(dest, 0755);
				*slash = '/';
			}
			int fd = open(dest, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
			ok = fd >= 0 || errno == EISDIR || errno == EROFS || errno == ETXTBSY;
			if (fd >= 0)
				close(fd);
		}
		ok = ok && mount(host, dest, NULL, MS_BIND | MS_REC, NULL) == 0;
		if (ok && !strcmp(spec, "ro"))
			ok = mount(NULL, dest, NULL, MS_BIND | MS_REMOUNT | MS_RDONLY, NULL) == 0;
		int e = errno;
		free(spec);
		errno = e;
		if (!ok)
			return false;
	}
	return true;
}

/* In the forked child: becomes the container. Reports errno through errfd if exec fails. */
static void __attribute__((noreturn)) exec_child(struct shim *s, int outw, int errw, int errfd)
{
	setpgid(0, 0);
	sigset_t all;
	sigemptyset(&all);
	sigprocmask(SIG_SETMASK, &all, NULL);
	for (int sig = 1; sig < NSIG; sig++)
		signal(sig, SIG_DFL);
	int devnull = open("/dev/null", O_RDONLY);
	if (devnull >= 0 && devnull != 0)
		dup2(devnull, 0), close(devnull);
	dup2(outw, 1);
	dup2(errw, 2);
	int what = 'x';
	if (!setup_mounts(&s->o))
		what = 'm';
	else if (!switch_ids(&s->o, &what))
		; /* what says which step failed */
	else if (s->o.workdir && chdir(s->o.workdir) < 0)
		what = 'c';
	else
		execv(s->o.exec_path, s->o.argv);
	int msg[2] = { what, errno };
	ssize_t ignored = write(errfd, msg, sizeof(msg));
	(void)ignored;
	_exit(127);
}

/* Forks the container. 0, or -1 with *ret_msg (new string) if it could not be started. */
static int start_child(struct shim *s, char **ret_msg)
{
	int outp[2], errp[2], report[2];
	if (pipe2(outp, O_CLOEXEC) < 0 || pipe2(errp, O_CLOEXEC) < 0 || pipe2(report, O_CLOEXEC) < 0) {
		*ret_msg = xasprintf("pipe: %s", strerror(errno));
		return -1;
	}
	s->started_ns = rt_now_ns();
	s->pid = fork();
	if (s->pid == 0)
		exec_child(s, outp[1], errp[1], report[1]);
	close(outp[1]);
	close(errp[1]);
	close(report[1]);
	s->out.fd = outp[0];
	s->err.fd = errp[0];
	if (s->pid < 0) {
		*ret_msg = xasprintf("fork: %s", strerror(errno));
		close(report[0]);
		return -1;
	}
	setpgid(s->pid, s->pid);
	int msg[2];
	ssize_t n;
	do
		n = read(report[0], msg, sizeof(msg));
	while (n < 0 && errno == EINTR);
	close(report[0]);
	if (n == (ssize_t)sizeof(msg)) {
		if (msg[0] == 'c')
			*ret_msg = xasprintf("chdir to working directory \"%s\" failed: %s", s->o.workdir,
					     strerror(msg[1]));
		else if (msg[0] == 'g')
			*ret_msg = xasprintf("cannot set the container's groups (runAsGroup %s, supplementalGroups %s): %s",
					     s->o.gid_s ? s->o.gid_s : "unset", s->o.groups_s ? s->o.groups_s : "none",
					     strerror(msg[1]));
		else if (msg[0] == 'm')
			*ret_msg = xasprintf("cannot mount the container's volumes: %s", strerror(msg[1]));
		else if (msg[0] == 'u')
			*ret_msg = xasprintf("cannot run as user %s (runAsUser): %s", s->o.uid_s, strerror(msg[1]));
		else
			*ret_msg = xasprintf("exec: \"%s\": %s", s->o.exec_path, strerror(msg[1]));
		return -1;
	}
	fcntl(s->out.fd, F_SETFL, O_NONBLOCK);
	fcntl(s->err.fd, F_SETFL, O_NONBLOCK);
	return 0;
}

/* Copies output until the container ends; returns its wait status. */
static int run_loop(struct shim *s)
{
	int status = 0;
	bool exited = false;
	int drain_ticks = 0;
	while (s->out.fd >= 0 || s->err.fd >= 0) {
		struct pollfd pfd[2] = { { s->out.fd, POLLIN, 0 }, { s->err.fd, POLLIN, 0 } };
		int r = poll(pfd, 2, 100);
		if (r < 0 && errno != EINTR)
			break;
		if (s->out.fd >= 0 && pfd[0].revents)
			pump(s, &s->out);
		if (s->err.fd >= 0 && pfd[1].revents)
			pump(s, &s->err);
		if (!exited && waitpid(s->pid, &status, WNOHANG) == s->pid) {
			exited = true;
			/* Like a container whose init ends: nothing of it may linger. */
			kill(-s->pid, SIGKILL);
		}
		/* A process that left the group may still hold the pipes: give up after ~2 s. */
		if (exited && r == 0 && ++drain_ticks > 20)
			break;
	}
	if (!exited) {
		while (waitpid(s->pid, &status, 0) < 0 && errno == EINTR)
			;
		kill(-s->pid, SIGKILL);
	}
	if (s->out.fd >= 0)
		flush_lines(s, &s->out, true), close(s->out.fd);
	if (s->err.fd >= 0)
		flush_lines(s, &s->err, true), close(s->err.fd);
	return status;
}

/* The program could not be started: says so in the log and in exit.json. */
static void start_failed(struct shim *s, const char *msg)
{
	if (s->pid > 0)
		while (waitpid(s->pid, NULL, 0) < 0 && errno == EINTR)
			;
	if (s->out.fd >= 0)
		close(s->out.fd);
	if (s->err.fd >= 0)
		close(s->err.fd);
	write_log_record(s, "stderr", 'F', msg, strlen(msg));
	fchmod(s->logfd, 0440);
	close(s->logfd);
	write_exit(s, 128, 0, "StartError", msg);
}

int shim_main(int argc, char **argv)
{
	struct shim s = { .logfd = -1, .out = { "stdout", -1, BUF_INIT }, .err = { "stderr", -1, BUF_INIT } };
	if (parse_opts(argc, argv, &s.o) < 0) {
		fprintf(stderr, "usage: shim --state DIR --log FILE [--exec PATH] [--workdir DIR] [--uid N] [--gid N] "
				"[--groups N,N...] -- ARGV...\n");
		return 2;
	}
	signal(SIGPIPE, SIG_IGN);
	signal(SIGHUP, SIG_IGN);
	signal(SIGINT, SIG_IGN);
	s.logfd = open(s.o.log_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0640);
	if (s.logfd < 0) {
		char *m = xasprintf("cannot open log file \"%s\": %s", s.o.log_path, strerror(errno));
		write_exit(&s, 128, 0, "StartError", m);
		free(m);
		return 1;
	}
	fchmod(s.logfd, 0640);
	char *msg = NULL;
	int code = 0, sig = 0;
	if (start_child(&s, &msg) < 0) {
		start_failed(&s, msg);
		free(msg);
		return 0;
	}
	write_state(&s);
	int status = run_loop(&s);
	if (WIFSIGNALED(status)) {
		sig = WTERMSIG(status);
		code = 128 + sig;
	} else {
		code = WEXITSTATUS(status);
	}
	buf_release(&s.out.pending);
	buf_release(&s.err.pending);
	fchmod(s.logfd, 0440);
	close(s.logfd);
	write_exit(&s, code, sig, NULL, NULL);
	return 0;
}
