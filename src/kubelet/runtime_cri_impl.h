/* The CRI runtime's own state, shared by its files (internal to runtime_cri*.c, cri_pool.c and
 * cri_probes.c; see runtime_cri.c for the threads and the locking). */
#ifndef URSA_KUBELET_RUNTIME_CRI_IMPL_H
#define URSA_KUBELET_RUNTIME_CRI_IMPL_H
#include <pthread.h>
#include <stdatomic.h>
#include "runtime_cri.h"

/* An event about container cname (NULL: the pod) of cpod p (runtime.h rt_event). */
#define POD_EVENT(p, cname, warning, reason, ...) \
	rt_event((p)->tenant, (p)->ns, (p)->name, (p)->uid, (cname), (warning), (reason), __VA_ARGS__)

/* Operations of a pod that run off the pod worker (cpod.op). */
enum pod_op {
	OP_START,   /* start_pod: a dead sandbox cleaned up, then the sandbox and the containers */
	OP_ADVANCE, /* sync: what is due (a restart after back-off, a finished pull, a sandbox retry) */
	OP_LOST,    /* sync: the sandbox is gone: everything again in a new one */
	OP_STOP,    /* stop_pod (on a thread of its own, not the pool) */
};

struct cpod {
	char *uid, *tenant, *ns, *name;
	bool has_spec;
	struct rt_pod spec;
	char *sandbox_id;
	uint32_t sandbox_attempt;
	bool sandbox_ready;
	int64_t sandbox_retry_ms, sandbox_backoff_ms;
	char sandbox_error[256];
	char ip[64];
	struct cri_cont *c;
	size_t nc;
	bool stopped;
	/* Hand-over (rt->lock): busy from dispatch until the operation ends; shown* are the status
	 * and IP at the hand-over, for status()/pod_ip() meanwhile; a stop asked for while busy
	 * follows the running operation (stop_wanted); stop_done once a stop has finished. */
	bool busy, stop_wanted, stop_done;
	enum pod_op op;
	long long stop_grace_s;
	struct rt_container_status *shown;
	size_t nshown;
	char shown_ip[64];
	struct cpod *qnext; /* the pool's queue */
	struct cpod *next;
};

struct runtime {
	char *root;
	char owner[24];
	char runtime_name[32];
	struct cri *cri;
	pthread_mutex_t lock;
	struct cpod *pods;
	atomic_bool changed; /* set from any thread, taken by sync */
	int64_t backoff_base_ms, backoff_max_ms;
	/* the pool (rt->lock): its threads, the queue of busy pods waiting for one, stop threads
	 * running; work wakes the pool, idle signals a pod no longer busy or a stop thread ended */
	pthread_t *pool;
	size_t npool;
	struct cpod *qhead, *qtail;
	size_t nstoppers;
	bool quit;
	pthread_cond_t work, idle;
	struct img_puller *puller; /* PullImage off the pod worker (images.h) */
	struct img_gc *gc;         /* image garbage collection, or NULL */
};

struct stopper {
	struct runtime *rt;
	const char *id;
	long long grace_s;
	struct cpod *p;                /* with pre_stop: the pod, and the container's index in it */
	size_t i;
	const struct rt_hook *pre_stop; /* runs first (hooks.h), taking its time off grace_s; may be NULL */
	pthread_t thread;
};

/* runtime_cri.c: what the pool's operations and stops call (all on the pod's operation). */
void crirt_advance(struct runtime *rt, struct cpod *p, bool force);
void crirt_poll_container(struct runtime *rt, struct cpod *p, size_t i);
void crirt_remove_container(struct runtime *rt, const char *id);
void crirt_stop_sandbox(struct runtime *rt, const char *id);
void crirt_remove_sandbox(struct runtime *rt, const char *id);
void crirt_sandbox_lost(struct runtime *rt, struct cpod *p);

/* cri_pool.c: a pod's operations off the pod worker. dispatch hands a pod (not busy; on the pod
 * worker) to the pool, or to a stop thread of its own for OP_STOP; op_done ends an operation;
 * is_busy and wait_idle read and wait on the hand-over; stop_now stops a pod's containers and
 * sandbox (on the calling thread); stop_one is one StopContainer (a pthread start routine). */
void crirt_dispatch(struct runtime *rt, struct cpod *p, enum pod_op op);
void crirt_op_done(struct runtime *rt, struct cpod *p, enum pod_op op);
bool crirt_is_busy(struct runtime *rt, struct cpod *p);
void crirt_wait_idle(struct runtime *rt, struct cpod *p);
void crirt_stop_now(struct runtime *rt, struct cpod *p, long long grace_s);
void *crirt_stop_one(void *arg);
void *crirt_pool_main(void *arg); /* a pool thread; arg: the runtime */

/* cri_streams.c: runtime_ops.stream_target (streams.h; any thread). */
int crirt_stream_target(struct runtime *rt, const struct rt_stream_req *req, struct rt_stream_target *out,
			char **ret_err);

/* cri_probes.c: the prober's view of the pod's containers (probes.h), folded into statuses. */
void crirt_apply_probes(struct runtime *rt, struct cpod *p, const char *ip, struct rt_container_status *out,
		      size_t n);
/* cri_probes.c: lifecycle hooks (hooks.h) of container i of p, on the thread that owns p. post_start
 * runs right after StartContainer: false when it failed (event posted, preStop run, the container
 * stopped: poll it). pre_stop runs h within grace_s and returns the grace left. */
bool crirt_post_start(struct runtime *rt, struct cpod *p, size_t i);
long long crirt_pre_stop(struct runtime *rt, struct cpod *p, size_t i, const char *cid, const struct rt_hook *h,
			 long long grace_s);

#endif
