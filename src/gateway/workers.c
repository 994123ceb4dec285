/* Worker processes (--workers N), as nginx runs them: the master forks N whole gateways that
 * listen on the same address with SO_REUSEPORT, so the kernel spreads new connections over
 * them. Each worker has its own map, reconciler, loops and descriptors: N workers use N cores,
 * and the per-process descriptor limit bounds each worker's connections, not the instance's.
 * The master holds no threads and no connections. It tells systemd READY=1 once every worker
 * serves, restarts a worker that dies (after a second), and passes SIGTERM and SIGINT on. */
#define _GNU_SOURCE /* pipe2 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>
#include "gw.h"
#include "ursa/log.h"
#include "ursa/notify.h"
#include "ursa/timeutil.h"
#include "ursa/xalloc.h"

#define RESTART_DELAY_MS 1000
#define STOP_GRACE_MS 40000 /* then SIGKILL: a worker's own stop takes up to ~25 s */

struct master {
	const struct gw_options *o;
	gw_serve_fn *serve;
	int n;
	pid_t *pid;           /* 0: not running */
	int64_t *restart_at;  /* ms; 0: none due */
	int ready_rd, ready_wr, sigfd;
	int ready;            /* readiness bytes read */
	bool notified, stopping;
	int64_t kill_at;
};

static void spawn(struct master *m, int i)
{
	pid_t parent = getpid();
	pid_t pid = fork();
	if (pid < 0) {
		log_error("cannot fork a worker", "worker=%d error=\"%s\"", i, strerror(errno));
		m->restart_at[i] = mono_ms() + RESTART_DELAY_MS;
		return;
	}
	if (pid == 0) {
		/* The worker dies with the master, tells the master (not systemd) it serves and
		 * waits for its own SIGTERM/SIGINT (still blocked, as the master left them). */
		prctl(PR_SET_PDEATHSIG, SIGTERM);
		if (getppid() != parent)
			_exit(1);
		close(m->ready_rd);
		close(m->sigfd);
		sigset_t chld;
		sigemptyset(&chld);
		sigaddset(&chld, SIGCHLD);
		sigprocmask(SIG_UNBLOCK, &chld, NULL);
		unsetenv("NOTIFY_SOCKET");
		static char name[32];
		snprintf(name, sizeof(name), "ursa-gateway/%d", i);
		log_set_component(name);
		_exit(m->serve(m->o, m->ready_wr));
	}
	m->pid[i] = pid;
	m->restart_at[i] = 0;
	log_info("worker started", "worker=%d pid=%d", i, (int)pid);
}

static int running(const struct master *m)
{
	int k = 0;
	for (int i = 0; i < m->n; i++)
		k += m->pid[i] > 0;
	return k;
}

static void signal_all(const struct master *m, int sig)
{
	for (int i = 0; i < m->n; i++)
		if (m->pid[i] > 0)
			kill(m->pid[i], sig);
}

static void begin_stop(struct master *m, const char *why)
{
	if (m->stopping)
		return;
	log_info("stopping workers", "why=\"%s\" workers=%d", why, running(m));
	m->stopping = true;
	m->kill_at = mono_ms() + STOP_GRACE_MS;
	signal_all(m, SIGTERM);
}

/* Collects exited workers; returns false if one failed before all were ready (a start error:
 * it would fail again). */
static bool reap(struct master *m)
{
	bool ok = true;
	int status;
	pid_t pid;
	while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
		for (int i = 0; i < m->n; i++) {
			if (m->pid[i] != pid)
				continue;
			m->pid[i] = 0;
			if (m->stopping)
				break;
			log_error("worker exited", "worker=%d pid=%d status=%d signal=%d", i, (int)pid,
				  WIFEXITED(status) ? WEXITSTATUS(status) : -1, WIFSIGNALED(status) ? WTERMSIG(status) : 0);
			if (!m->notified)
				ok = false;
			else
				m->restart_at[i] = mono_ms() + RESTART_DELAY_MS;
		}
	}
	return ok;
}

static void on_ready_bytes(struct master *m)
{
	char b[64];
	ssize_t r = read(m->ready_rd, b, sizeof(b));
	if (r > 0)
		m->ready += (int)r;
	if (!m->notified && m->ready >= m->n && !m->stopping) {
		m->notified = true;
		log_info("serving", "listen=%s workers=%d", m->o->listen, m->n);
		notify_ready();
	}
}

static int on_signal(struct master *m)
{
	struct signalfd_siginfo si;
	if (read(m->sigfd, &si, sizeof(si)) != (ssize_t)sizeof(si))
		return 0;
	if (si.ssi_signo == SIGCHLD) {
		if (!reap(m)) {
			begin_stop(m, "a worker failed to start");
			return 1;
		}
		return 0;
	}
	begin_stop(m, si.ssi_signo == SIGINT ? "SIGINT" : "SIGTERM");
	return 0;
}

static int next_timeout(const struct master *m)
{
	int64_t now = mono_ms(), due = -1;
	if (m->stopping)
		due = m->kill_at;
	else
		for (int i = 0; i < m->n; i++)
			if (m->restart_at[i] && (due < 0 || m->restart_at[i] < due))
				due = m->restart_at[i];
	if (due < 0)
		return -1;
	return due <= now ? 0 : (int)(due - now);
}

static void on_timers(struct master *m)
{
	int64_t now = mono_ms();
	if (m->stopping) {
		if (now >= m->kill_at && running(m)) {
			log_warn("workers did not stop in time; killing them", "workers=%d", running(m));
			signal_all(m, SIGKILL);
			m->kill_at = now + STOP_GRACE_MS;
		}
		return;
	}
	for (int i = 0; i < m->n; i++)
		if (m->restart_at[i] && m->restart_at[i] <= now)
			spawn(m, i);
}

int gw_workers_run(const struct gw_options *o, gw_serve_fn *serve)
{
	struct master m = { .o = o, .serve = serve, .n = (int)o->workers };
	int fds[2];
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGCHLD);
	sigprocmask(SIG_BLOCK, &set, NULL); /* the workers unblock SIGCHLD */
	if (pipe2(fds, O_CLOEXEC) != 0 || (m.sigfd = signalfd(-1, &set, SFD_CLOEXEC)) < 0) {
		log_error("cannot start workers", "error=\"%s\"", strerror(errno));
		return 1;
	}
	m.ready_rd = fds[0];
	m.ready_wr = fds[1];
	m.pid = xcalloc((size_t)m.n, sizeof(*m.pid));
	m.restart_at = xcalloc((size_t)m.n, sizeof(*m.restart_at));
	for (int i = 0; i < m.n; i++)
		spawn(&m, i);
	int status = 0;
	while (!m.stopping || running(&m) > 0) {
		struct pollfd p[2] = { { .fd = m.sigfd, .events = POLLIN }, { .fd = m.ready_rd, .events = POLLIN } };
		if (poll(p, 2, next_timeout(&m)) < 0 && errno != EINTR)
			break;
		if (p[1].revents & POLLIN)
			on_ready_bytes(&m);
		if (p[0].revents & POLLIN)
			status |= on_signal(&m);
		on_timers(&m);
	}
	log_info("workers stopped", "status=%d", status);
	close(m.ready_rd);
	close(m.ready_wr);
	close(m.sigfd);
	free(m.pid);
	free(m.restart_at);
	return status;
}
