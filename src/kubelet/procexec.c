/* `kubectl exec` for the process runtime (see procexec.h). */
#define _GNU_SOURCE
#include "procexec.h"
#include "runtime_common.h"
#include "ursa/xalloc.h"
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

static const char *env_get(char *const *envp, const char *name)
{
	size_t n = strlen(name);
	for (size_t i = 0; envp && envp[i]; i++)
		if (!strncmp(envp[i], name, n) && envp[i][n] == '=')
			return envp[i] + n + 1;
	return NULL;
}


static void nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);
	if (fl >= 0)
		fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

/* In the child: reports errno on the status pipe and exits. */
static void fail_child(int status_fd, int code)
{
	int e = errno;
	if (write(status_fd, &e, sizeof(e)) < 0) {
		/* nothing to do */
	}
	_exit(code);
}

/* The child's side: namespaces, identity, directory, stdio, exec. */
static void child(const struct rt_stream_target *t, const char *prog, char *const *cmd, int fds[3], int pty_slave,
		  int status_fd)
{
	sigset_t none;
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	for (int sig = 1; sig < 32; sig++)
		if (sig != SIGKILL && sig != SIGSTOP)
			signal(sig, SIG_DFL);
	if (pty_slave >= 0) {
		setsid();
		ioctl(pty_slave, TIOCSCTTY, 0);
		for (int i = 0; i < 3; i++)
			dup2(pty_slave, i);
	} else {
		setpgid(0, 0);
		for (int i = 0; i < 3; i++)
			dup2(fds[i], i);
	}
	/* none of the kubelet's descriptors (but the status pipe, closed by the exec) reach the command */
	if (status_fd > 3)
		syscall(SYS_close_range, 3u, (unsigned)status_fd - 1, 0u);
	syscall(SYS_close_range, (unsigned)status_fd + 1, ~0u, 0u);
	if (t->pid > 0) { /* the container's own mount namespace, when it has one */
		char path[64];
		struct stat mine, theirs;
		snprintf(path, sizeof(path), "/proc/%ld/ns/mnt", t->pid);
		if (stat(path, &theirs) == 0 && stat("/proc/self/ns/mnt", &mine) == 0 && mine.st_ino != theirs.st_ino) {
			int nsfd = open(path, O_RDONLY | O_CLOEXEC);
			if (nsfd < 0 || setns(nsfd, CLONE_NEWNS) < 0)
				fail_child(status_fd, 126);
		}
	}
	if (geteuid() == 0 && (t->ids.has_uid || t->ids.has_gid || t->ids.ngroups)) {
		gid_t groups[RT_MAX_GROUPS];
		for (unsigned i = 0; i < t->ids.ngroups; i++)
			groups[i] = (gid_t)t->ids.groups[i];
		if (setgroups(t->ids.ngroups, groups) < 0 || (t->ids.has_gid && setgid((gid_t)t->ids.gid) < 0) ||
		    (t->ids.has_uid && setuid((uid_t)t->ids.uid) < 0))
			fail_child(status_fd, 126);
	}
	if (t->working_dir && chdir(t->working_dir) < 0)
		fail_child(status_fd, 126);
	if (!t->working_dir && t->pid > 0) {
		char cwd[64];
		snprintf(cwd, sizeof(cwd), "/proc/%ld/cwd", t->pid);
		if (chdir(cwd) < 0 && chdir("/") < 0)
			fail_child(status_fd, 126);
	}
	execve(prog, cmd, t->envp);
	fail_child(status_fd, errno == ENOENT ? 127 : 126);
}

/* The terminal's size, on its master side. */
static void set_size(int pty, unsigned width, unsigned height)
{
	struct winsize ws = { .ws_row = (unsigned short)height, .ws_col = (unsigned short)width };
	ioctl(pty, TIOCSWINSZ, &ws);
}

int procexec_start(const struct rt_stream_target *t, char *const *cmd, const struct procexec_tty *term, bool in,
		   bool out, bool err, struct procexec *ret, char **ret_err)
{
	bool tty = term && term->on;
	int code = 126;
	const char *path = env_get(t->envp, "PATH");
	char *prog = rt_find_program(cmd[0], path ? path : RT_DEFAULT_PATH, t->working_dir, &code, ret_err);
	if (!prog)
		return code;
	int child_fds[3] = { -1, -1, -1 }, ours[3] = { -1, -1, -1 };
	int master = -1, slave = -1, status[2] = { -1, -1 };
	if (pipe2(status, O_CLOEXEC) < 0)
		goto sys_fail;
	if (tty) {
		master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
		if (master < 0 || grantpt(master) < 0 || unlockpt(master) < 0)
			goto sys_fail;
		const char *name = ptsname(master);
		if (!name || (slave = open(name, O_RDWR | O_NOCTTY | O_CLOEXEC)) < 0)
			goto sys_fail;
		if (term->width && term->height)
			set_size(master, term->width, term->height);
	} else {
		bool want[3] = { in, out, err };
		for (int i = 0; i < 3; i++) {
			int p[2];
			if (!want[i]) {
				child_fds[i] = open("/dev/null", i == 0 ? O_RDONLY | O_CLOEXEC : O_WRONLY | O_CLOEXEC);
				if (child_fds[i] < 0)
					goto sys_fail;
				continue;
			}
			if (pipe2(p, O_CLOEXEC) < 0)
				goto sys_fail;
			child_fds[i] = i == 0 ? p[0] : p[1];
			ours[i] = i == 0 ? p[1] : p[0];
		}
	}
	pid_t pid = fork();
	if (pid < 0)
		goto sys_fail;
	if (pid == 0)
		child(t, prog, cmd, child_fds, slave, status[1]);
	close(status[1]);
	status[1] = -1;
	for (int i = 0; i < 3; i++)
		if (child_fds[i] >= 0)
			close(child_fds[i]);
	if (slave >= 0)
		close(slave);
	int e = 0;
	ssize_t n;
	do
		n = read(status[0], &e, sizeof(e));
	while (n < 0 && errno == EINTR);
	close(status[0]);
	if (n == (ssize_t)sizeof(e)) { /* it did not get to run */
		int st;
		while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
			;
		for (int i = 0; i < 3; i++)
			if (ours[i] >= 0)
				close(ours[i]);
		if (master >= 0)
			close(master);
		*ret_err = xasprintf("exec: \"%s\": %s", cmd[0], strerror(e));
		free(prog);
		return WIFEXITED(st) ? WEXITSTATUS(st) : 126;
	}
	free(prog);
	ret->pid = pid;
	ret->pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	ret->in = ours[0];
	ret->out = ours[1];
	ret->err = ours[2];
	ret->pty = master;
	for (int i = 0; i < 3; i++)
		if (ours[i] >= 0)
			nonblock(ours[i]);
	if (master >= 0)
		nonblock(master);
	return 0;
sys_fail:
	*ret_err = xasprintf("cannot start \"%s\": %s", cmd[0], strerror(errno));
	for (int i = 0; i < 3; i++) {
		if (child_fds[i] >= 0)
			close(child_fds[i]);
		if (ours[i] >= 0)
			close(ours[i]);
	}
	if (master >= 0)
		close(master);
	if (slave >= 0)
		close(slave);
	if (status[0] >= 0)
		close(status[0]);
	if (status[1] >= 0)
		close(status[1]);
	free(prog);
	return 126;
}

bool procexec_reap(struct procexec *p, int *ret_code)
{
	int st;
	pid_t r;
	if (p->pid <= 0)
		return false;
	do
		r = waitpid(p->pid, &st, WNOHANG);
	while (r < 0 && errno == EINTR);
	if (r != p->pid)
		return false;
	p->pid = 0;
	*ret_code = WIFEXITED(st) ? WEXITSTATUS(st) : WIFSIGNALED(st) ? 128 + WTERMSIG(st) : 1;
	return true;
}

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

void procexec_close(struct procexec *p)
{
	close_fd(&p->in);
	close_fd(&p->out);
	close_fd(&p->err);
	close_fd(&p->pty);
	close_fd(&p->pidfd);
}

void procexec_kill(struct procexec *p)
{
	if (p->pid > 0) {
		kill(-p->pid, SIGKILL);
		kill(p->pid, SIGKILL);
		while (waitpid(p->pid, NULL, 0) < 0 && errno == EINTR)
			;
		p->pid = 0;
	}
	procexec_close(p);
}

void procexec_resize(struct procexec *p, unsigned width, unsigned height)
{
	if (p->pty >= 0)
		set_size(p->pty, width, height);
}
