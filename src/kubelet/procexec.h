/* `kubectl exec` for the process runtime: a command started beside a container's process, with
 * the container's environment, working directory, user and (when the container has one of its
 * own) mount namespace; stdio on pipes, or on a pseudo-terminal. */
#ifndef URSA_KUBELET_PROCEXEC_H
#define URSA_KUBELET_PROCEXEC_H
#include <stdbool.h>
#include <sys/types.h>
#include "runtime.h"

struct procexec {
	pid_t pid;
	int pidfd;            /* readable once the process ended; -1 if the kernel has none */
	int in, out, err;     /* our ends (non-blocking), -1 when not asked for; with a tty all three
				 are -1 but pty */
	int pty;              /* the terminal's master side, or -1 */
};

/* A terminal for the command (on), of width x height when both are known (else the kernel's
 * 0x0 until procexec_resize): set before the command starts, so it never sees another size. */
struct procexec_tty {
	bool on;
	unsigned width, height;
};

/* Starts cmd (NULL-terminated, non-empty; looked up in the container's PATH). 0 with *ret filled;
 * otherwise the exit code Kubernetes reports for a command that cannot run (127: not found,
 * 126: not executable, or another failure) with *ret_err (new string) saying why. */
int procexec_start(const struct rt_stream_target *t, char *const *cmd, const struct procexec_tty *tty, bool in,
		   bool out, bool err, struct procexec *ret, char **ret_err);

/* Waits (without blocking) for the process: true with its exit code (128 + signal when killed). */
bool procexec_reap(struct procexec *p, int *ret_code);
/* Kills the process group and reaps it (the client left); closes every descriptor. */
void procexec_kill(struct procexec *p);
/* Closes the descriptors still open (after the process ended and its output was read). */
void procexec_close(struct procexec *p);
/* The terminal's size. */
void procexec_resize(struct procexec *p, unsigned width, unsigned height);

#endif
