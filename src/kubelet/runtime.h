/* The container runtime interface of ursa-kubelet. Two implementations: "process" runs each
 * container's command as a local child process (through a small shim, so containers survive
 * a kubelet restart and their exit codes are recorded), "fake" reports containers running at
 * once (hollow nodes, simulation). A runtime is used from one thread (the kubelet's pod
 * worker) except runtime_log_path, which the log server may call from any thread. */
#ifndef URSA_KUBELET_RUNTIME_H
#define URSA_KUBELET_RUNTIME_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct rt_env {
	char *name, *value;
};

/* Who a container runs as (its securityContext over the pod's). Unset ids leave the
 * kubelet's: there are no images here to name a user. */
#define RT_MAX_GROUPS 32
struct rt_ids {
	bool has_uid, has_gid;            /* all zero: nothing set */
	long long uid, gid;               /* runAsUser, runAsGroup */
	long long groups[RT_MAX_GROUPS];  /* the pod's supplementalGroups */
	unsigned ngroups;
};

/* imagePullPolicy (CRI runtime only). */
enum rt_pull { RT_PULL_IF_NOT_PRESENT, RT_PULL_ALWAYS, RT_PULL_NEVER };

/* Requests and limits of a container (CRI runtime only): cpu in millicores, memory in bytes;
 * 0 means not set. */
struct rt_resources {
	long long cpu_request_m, cpu_limit_m;
	long long mem_request, mem_limit;
};

/* Registry credentials for a container's image (from the pod's imagePullSecrets). */
struct rt_pull_cred {
	const char *server, *username, *password;
};

struct rt_container {
	char *name;
	char *image;        /* informational for "process": the command is what runs */
	char **command;     /* NULL-terminated, may be NULL (then args[0] is the program) */
	char **args;        /* NULL-terminated, may be NULL */
	struct rt_env *env;
	size_t nenv;
	char *working_dir;  /* may be NULL */
	struct rt_ids ids;
	/* Used by the CRI runtime only (the others run the command line as it is): */
	enum rt_pull pull;
	struct rt_resources res;
	bool default_command;  /* command is the kubelet's placeholder: the image's own runs instead */
	const struct rt_pull_cred *pull_cred; /* borrowed for the start_pod call only (the runtime copies
						 it); NULL: none. Not copied by rt_pod_copy. */
};

enum rt_restart { RT_RESTART_ALWAYS, RT_RESTART_ON_FAILURE, RT_RESTART_NEVER };

struct rt_pod {
	char *uid;          /* identity of the pod across restarts */
	char *tenant, *ns, *name;
	enum rt_restart restart;
	long long grace_s;  /* terminationGracePeriodSeconds */
	struct rt_container *containers;
	size_t ncontainers;
	bool host_network;  /* CRI runtime only: the node's network (and UTS) namespace */
	bool share_pid;     /* CRI runtime only: shareProcessNamespace */
};

enum rt_state { RT_WAITING, RT_RUNNING, RT_TERMINATED };

struct rt_container_status {
	char name[64];
	enum rt_state state;
	char reason[64];        /* Waiting: ContainerCreating, CrashLoopBackOff, RunContainerError;
				   Terminated: Completed, Error, OOMKilled... */
	char message[256];
	int exit_code;
	int signal;
	int64_t started_at;     /* unix seconds; 0 if never */
	int64_t finished_at;
	int restart_count;
	char container_id[96];  /* "process://<id>" */
	char image_id[128];     /* e.g. "process://<sha256 of command line>" */
	bool ready;
	/* last termination, for lastState.terminated */
	bool has_last;
	int last_exit_code;
	char last_reason[64];
	int64_t last_started_at, last_finished_at;
};

struct runtime;

struct runtime_ops {
	const char *name;
	/* root_dir: where the runtime keeps state and logs (created if missing). NULL on error. */
	struct runtime *(*create)(const char *root_dir, const char *self_exe);
	void (*destroy)(struct runtime *rt);
	/* Starts (or adopts, if it is already running from before a restart) the pod's containers.
	 * Idempotent: calling it again for a running pod changes nothing. 0 or -1 with *ret_err
	 * (new string) for a spec it cannot run (e.g. no command and no args). */
	int (*start_pod)(struct runtime *rt, const struct rt_pod *pod, char **ret_err);
	/* Stops the pod's containers: SIGTERM, then SIGKILL after grace_s. Forgets the pod once
	 * everything exited (removes its state; logs are kept until remove_pod). */
	int (*stop_pod)(struct runtime *rt, const char *uid, long long grace_s);
	/* Frees everything of a stopped pod, logs included. */
	void (*remove_pod)(struct runtime *rt, const char *uid);
	/* Fills up to max statuses for the pod's containers (in spec order); returns the count,
	 * or -1 if the pod is unknown. */
	int (*status)(struct runtime *rt, const char *uid, struct rt_container_status *out, size_t max);
	/* Reaps exits and restarts containers per the restart policy with back-off (10 s doubling
	 * to 300 s). Returns true if any container's status changed since the last call. */
	bool (*sync)(struct runtime *rt);
	/* uids of pods the runtime knows (after create: those recovered from root_dir). New array
	 * of new strings via *ret; returns the count. */
	size_t (*list_pods)(struct runtime *rt, char ***ret);
	/* Path of a container's log file (new string) or NULL. Thread-safe. Log lines are
	 * "<RFC3339Nano timestamp> <stdout|stderr> <F|P> <text>\n" (the CRI format). */
	char *(*log_path)(struct runtime *rt, const char *tenant, const char *ns, const char *pod, const char *container);
	/* Optional (NULL: every pod has the node's IP). 0 with the pod's own IP in out ("" while it
	 * has none yet), 1 when the pod is on the node's network (its IP is the node's), -1 if the pod
	 * is unknown. Pod worker only. */
	int (*pod_ip)(struct runtime *rt, const char *uid, char *out, size_t max);
};

extern const struct runtime_ops runtime_process, runtime_fake, runtime_cri;

/* The CRI runtime's settings, given before runtime_cri.create: the runtime's endpoint
 * ("unix:///run/containerd/containerd.sock") and the cgroup parent of pod sandboxes (NULL or ""
 * leaves the runtime's default). The strings are copied. */
void runtime_cri_configure(const char *endpoint, const char *cgroup_parent);

/* Frees the contents of a pod spec. */
void rt_pod_release(struct rt_pod *p);

#endif
