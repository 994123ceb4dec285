/* Liveness, readiness and startup probes (exec, httpGet, tcpSocket, grpc) of running containers.
 *
 * The prober: one thread per probed container instance runs that container's probes, each on its
 * own schedule (initialDelaySeconds from the container's start, then every periodSeconds; a probe
 * that times out counts as failed). A startup probe holds the others off until it succeeds.
 * Results change after successThreshold successes or failureThreshold failures in a row, as
 * Kubernetes counts them. A runtime asks prober_container from its status() for each running
 * container: the first call for an instance (a new container id) starts its thread; the answer is
 * whether the container has started and is ready. Effects, off the caller's thread:
 * - every failed run: a Warning "Unhealthy" event ("Readiness probe failed: ...");
 * - readiness or startup changes: rt_pod_changed(uid), so the pod worker reports the status again;
 * - liveness (or startup) failure: a Normal "Killing" event and ops->kill; the runtime restarts the
 *   container per its restart policy with back-off, and the new instance starts over.
 * The prober runs nothing for a container without probes (started and ready while running). */
#ifndef URSA_KUBELET_PROBES_H
#define URSA_KUBELET_PROBES_H
#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include "runtime.h"
#include "ursa/buf.h"

#define PROBE_MAX_OUTPUT 10240 /* bytes of exec output or http body kept for a message */
#define PROBE_MAX_SECONDS 86400

/* ---- specs ---- */

/* The probe j (a Kubernetes Probe object; NULL or null: none, *ret NULL) of container c (its ports
 * name the named ports) as a new struct rt_probe in *ret. Absent or 0 numbers take Kubernetes'
 * defaults (period 10, timeout 1, success 1, failure 3). E_INVALID with the reason in err for a
 * probe with no handler or more than one, bad numbers, an unknown named port, or a
 * successThreshold other than 1 for liveness and startup. */
int kl_probe_from_json(const json_t *j, const json_t *c, enum rt_probe_kind kind, struct rt_probe **ret,
		       struct buf *err);
/* One exec or httpGet handler object h (of a Probe or a lifecycle hook) of container c into p
 * (handler set): 0, or -1 if malformed (p may be partly filled: free it with rt_probe_free). */
int kl_probe_handler_from_json(const json_t *h, const json_t *c, enum rt_probe_handler handler, struct rt_probe *p);
struct rt_probe *rt_probe_dup(const struct rt_probe *p); /* NULL for NULL */
void rt_probe_free(struct rt_probe *p);                  /* NULL is fine */

/* "Liveness", "Readiness", "Startup". */
const char *probe_kind_title(enum rt_probe_kind kind);

/* ---- pure parts (unit-tested) ---- */

enum probe_result { PROBE_UNKNOWN, PROBE_SUCCESS, PROBE_FAILURE };

/* The result of one probe of a container instance and the run of equal outcomes behind it. */
struct probe_state {
	enum probe_result result; /* liveness starts as success, readiness as failure, startup unknown */
	enum probe_result last;   /* the latest outcome */
	int run;                  /* how many outcomes equal to last in a row */
};
void probe_state_init(struct probe_state *s, enum rt_probe_kind kind);
/* Records one outcome; true when the result changed (the run reached the threshold). */
bool probe_state_record(struct probe_state *s, bool success, const struct rt_probe *p);

/* An HTTP probe's status code: success for 200..399. */
bool probe_http_ok(long status);

/* When the first run is due (wall ms): initialDelaySeconds after started_ms. After a run that
 * ended at ran_ms: periodSeconds later. */
int64_t probe_first_due(const struct rt_probe *p, int64_t started_ms);
int64_t probe_next_due(const struct rt_probe *p, int64_t ran_ms);

/* A grpc.health.v1.Health/Check request body for service (NULL: ""): the gRPC frame. */
void probe_grpc_request(const char *service, struct buf *out);
/* The serving status of a gRPC Check response body (one frame holding a HealthCheckResponse):
 * 0 UNKNOWN, 1 SERVING, 2 NOT_SERVING, 3 SERVICE_UNKNOWN; -1 if the body is not such a frame. */
int probe_grpc_status(const uint8_t *body, size_t len);

/* ---- the prober ---- */

/* How the prober reaches a runtime's containers; ud is the runtime. Called on prober threads. */
struct prober_ops {
	/* Runs cmd in container cid (the runtime's id, without scheme) for at most timeout_s: 0 with
	 * *ret_code the exit code and the output (stdout then stderr, capped) in out; E_TIMEOUT when
	 * it ran out of time; another E_* code (with a reason in out) when it could not run. */
	int (*exec)(void *ud, const char *cid, char *const *cmd, int timeout_s, struct buf *out, int *ret_code);
	/* Stops container cid with grace_s seconds of grace (the runtime restarts it as usual). */
	void (*kill)(void *ud, const char *uid, const char *container, const char *cid, long long grace_s);
};

/* A running container instance as its runtime's status() sees it. Strings are copied. */
struct prober_target {
	const char *uid, *tenant, *ns, *pod;
	const struct rt_container *spec; /* its probes are copied */
	long long pod_grace_s;           /* the pod's terminationGracePeriodSeconds */
	const char *cid;                 /* the instance's runtime id (without scheme) */
	int64_t started_at;              /* unix s */
	const char *ip;                  /* the pod's IP, or NULL/"" for 127.0.0.1 (the node) */
	const struct prober_ops *ops;
	void *ud;
};

/* Starts probing t's instance unless already (a different instance of the same container: the
 * old one's probes stop). *ret_started: no startup probe or it succeeded; *ret_ready: started
 * and (no readiness probe or it succeeds). Without probes: both true, nothing runs. */
void prober_container(const struct prober_target *t, bool *ret_started, bool *ret_ready);
/* The container is not running (any more): its probes stop. */
void prober_container_gone(const char *uid, const char *container);
/* The pod stops or goes: all its probes stop. */
void prober_forget_pod(const char *uid);
/* Stops every probe of runtime ud and waits until none of its threads is left (before the
 * runtime goes away). */
void prober_forget_owner(void *ud);

/* For runtimes whose containers are host processes (process): cmd as a child in the environment
 * of process pid (its environ, working directory, uid and gid), as prober_ops.exec; and pid's
 * process group stopped (SIGTERM, SIGKILL after grace_s), if pid is still the process that started
 * at start (rt_proc_starttime). probe_kill_local blocks up to grace_s. */
int probe_exec_local(pid_t pid, char *const *cmd, int timeout_s, struct buf *out, int *ret_code);
void probe_kill_local(pid_t pid, unsigned long long start, long long grace_s);

/* One run of probe p against ip (exec: through ops/ud on cid): true on success, else false with
 * the reason in msg (as Kubernetes words it). Blocks up to the probe's timeout. */
bool probe_run(const struct rt_probe *p, const char *ip, const struct prober_ops *ops, void *ud, const char *cid,
	       struct buf *msg);

#endif
