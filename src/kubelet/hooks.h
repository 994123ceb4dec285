/* Container lifecycle hooks (lifecycle.postStart and lifecycle.preStop), run as Kubernetes' kubelet
 * runs them. A hook's handler is exec (in the container, through the runtime's prober_ops.exec:
 * CRI ExecSync, or a child process beside a host-process container), httpGet (to the pod's IP, or
 * the host given; the status code is not looked at, as in Kubernetes: only a request that gets no
 * answer fails), or sleep.
 * - postStart runs right after the container started; until it ends the container shows Waiting
 *   (ContainerCreating) and is not ready. If it fails: a Warning FailedPostStartHook event, and the
 *   container is killed (its preStop runs first) and restarts per the pod's restart policy.
 * - preStop runs before the stop signal (pod deletion, a failed liveness or startup probe, a failed
 *   postStart), within the grace period: the hook's time counts against it, and TERM then KILL
 *   follow within what is left (at least HOOK_MIN_GRACE_S, as Kubernetes). A failure posts a Warning
 *   FailedPreStopHook event and the stop goes on. No preStop runs with a grace period of 0.
 * Event messages do not carry the hook's output (it may hold secrets); the log line does. */
#ifndef URSA_KUBELET_HOOKS_H
#define URSA_KUBELET_HOOKS_H
#include <jansson.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include "probes.h"
#include "runtime.h"
#include "ursa/buf.h"

#define HOOK_MIN_GRACE_S 2          /* TERM..KILL after a preStop gets at least this */
#define HOOK_POST_START_MAX_S 3600  /* Kubernetes has no limit; a hung postStart ends after an hour */
#define HOOK_MAX_SLEEP_S 86400

/* ---- specs ---- */

/* The hooks of container c (a Kubernetes Container object) into hooks[] (each NULL or a new
 * struct rt_hook): 0, or E_INVALID with the reason in err (a handler missing or more than one,
 * a malformed exec command or httpGet, sleep.seconds not in 0..HOOK_MAX_SLEEP_S). hooks[] is all
 * NULL on error. tcpSocket is accepted (the API allows it) but fails when run, as in Kubernetes. */
int kl_hooks_from_json(const json_t *c, struct rt_hook *hooks[RT_HOOK_KINDS], struct buf *err);
struct rt_hook *rt_hook_dup(const struct rt_hook *h); /* NULL for NULL */
void rt_hook_free(struct rt_hook *h);                 /* NULL is fine */

/* ---- pure parts (unit-tested) ---- */

/* "FailedPostStartHook", "FailedPreStopHook". */
const char *hook_event_reason(enum rt_hook_kind kind);

/* Seconds of grace left for TERM..KILL after a preStop that took elapsed_ms of grace_s: whole
 * seconds spent are taken off (as Kubernetes counts), never less than HOOK_MIN_GRACE_S. */
long long hook_grace_left(long long grace_s, int64_t elapsed_ms);

/* The log message of a failed hook h of container cname in pod <pod>_<ns>(<uid>), worded as
 * Kubernetes' kubelet does; error says what failed, output is an exec hook's output (may be
 * NULL). Appends to out. */
void hook_message(const struct rt_hook *h, const char *cname, const char *pod, const char *ns, const char *uid,
		  const char *error, const char *output, struct buf *out);

/* ---- running hooks ---- */

/* A container instance to run a hook for. Strings are borrowed for the call (copied by
 * hooks_post_start). */
struct hook_target {
	const char *uid, *tenant, *ns, *pod, *container;
	const char *cid;               /* the instance's id for ops (as the prober's) */
	const char *ip;                /* the pod's IP; NULL or "" for 127.0.0.1 (the node's network) */
	const struct prober_ops *ops;  /* exec, and kill (after a failed postStart) */
	void *ud;
};

/* Runs h once, for at most timeout_s seconds (>= 1), blocking: 0 on success; E_TIMEOUT when it ran
 * out of time; -1 when it failed, with hook_message's text in msg. */
int hook_run(const struct rt_hook *h, const struct hook_target *t, long long timeout_s, struct buf *msg);

/* The preStop h (NULL: none) of t within grace_s: runs it unless grace_s <= 0, posts
 * FailedPreStopHook if it fails, and returns the grace left for TERM..KILL (grace_s when nothing
 * ran). Blocks up to grace_s. */
long long hook_pre_stop(const struct rt_hook *h, const struct hook_target *t, long long grace_s);

/* The preStop hooks of several containers of a pod (each job's h not NULL, t's strings living
 * through the call) on threads of their own, all within grace_s: returns the grace left after
 * the slowest (grace_s when n is 0 or grace_s <= 0). */
struct hook_job {
	struct hook_target t;
	const struct rt_hook *h;
	long long left; /* the call's */
	pthread_t thread;
};
long long hooks_pre_stop_all(struct hook_job *jobs, size_t n, long long grace_s);

/* postStart for runtimes that find their running containers in status() (process): the first call
 * for an instance (a new t->cid for the container) starts post on a thread of its own; on failure
 * that thread posts FailedPostStartHook, runs pre (the preStop, may be NULL) within grace_s and
 * kills the instance through t->ops->kill; rt_pod_changed(uid) when the hook ends either way. */
enum hook_state { HOOK_DONE, HOOK_RUNNING, HOOK_FAILED };
enum hook_state hooks_post_start(const struct hook_target *t, const struct rt_hook *post, const struct rt_hook *pre,
				 long long grace_s);
/* The pod stops or goes: its postStart runs are forgotten (one still running ends without a kill). */
void hooks_forget_pod(const char *uid);
/* Forgets the runs of runtime ud and waits until none of their threads is left. */
void hooks_forget_owner(void *ud);

#endif
