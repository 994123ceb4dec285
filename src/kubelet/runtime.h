/* The container runtime interface of ursa-kubelet. Three implementations: "process" runs each
 * container's command as a local child process (through a small shim, so containers survive
 * a kubelet restart and their exit codes are recorded), "fake" reports containers running at
 * once (hollow nodes, simulation), "cri" runs pods in a CRI runtime (containerd). A runtime is
 * used from one thread (the kubelet's pod worker) except runtime_log_path, which the log server
 * may call from any thread. A runtime may work on pods on threads of its own (cri: starts and
 * stops): it tells the pod worker through rt_pod_changed when a pod's status may have changed. */
#ifndef URSA_KUBELET_RUNTIME_H
#define URSA_KUBELET_RUNTIME_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* from: how the value came (podenv.h): a literal value (expanded by podenv_finish while the
 * container's env_pending), a resolved one (valueFrom, envFrom: never expanded), or the pod's IP(s)
 * not known yet (value NULL until podenv_finish). */
enum { RT_ENV_LITERAL, RT_ENV_RESOLVED, RT_ENV_POD_IP, RT_ENV_POD_IPS };
struct rt_env {
	char *name, *value;
	unsigned char from;
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

/* The rest of a container's securityContext (the container's over the pod's), used by the CRI
 * runtime only. seccompProfile: RuntimeDefault unless Unconfined (admission allows it for the
 * system tenant only) or Localhost (seccomp_ref: localhostProfile, a relative path under
 * <root-dir>/seccomp). no_new_privs: unless allowPrivilegeEscalation is true. non_root:
 * runAsNonRoot, checked against the image's user when no runAsUser is set. Capabilities: the
 * runtime's default set with cap_add/cap_drop applied. */
enum rt_seccomp { RT_SECCOMP_RUNTIME_DEFAULT, RT_SECCOMP_UNCONFINED, RT_SECCOMP_LOCALHOST };
#define RT_MAX_CAPS 16
struct rt_security {
	enum rt_seccomp seccomp;
	char seccomp_ref[128];
	bool no_new_privs;
	bool non_root;
	char cap_add[RT_MAX_CAPS][32], cap_drop[RT_MAX_CAPS][32];
	unsigned nadd, ndrop;
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

/* A container's liveness, readiness or startup probe (probes.h), Kubernetes' defaults applied. */
enum rt_probe_kind { RT_PROBE_LIVENESS, RT_PROBE_READINESS, RT_PROBE_STARTUP, RT_PROBE_KINDS };
enum rt_probe_handler { RT_PROBE_EXEC, RT_PROBE_HTTP, RT_PROBE_TCP, RT_PROBE_GRPC };
struct rt_probe {
	enum rt_probe_handler handler;
	char **exec;              /* exec: the command, NULL-terminated */
	char *host;               /* http, tcp: NULL for the pod's IP */
	char *path;               /* http: starts with '/' */
	bool https;               /* http: scheme HTTPS */
	int port;                 /* http, tcp, grpc: 1..65535 (named ports resolved) */
	struct rt_env *headers;   /* http: httpHeaders */
	size_t nheaders;
	char *service;            /* grpc: may be NULL */
	int initial_delay_s, period_s, timeout_s, success_threshold, failure_threshold;
	long long grace_s;        /* terminationGracePeriodSeconds of the probe; -1: the pod's */
};

/* A container's lifecycle hook (hooks.h): exec and httpGet are kept as a struct rt_probe (handler
 * RT_PROBE_EXEC or RT_PROBE_HTTP; only the handler's fields are used), sleep as sleep_s with
 * action NULL. */
enum rt_hook_kind { RT_HOOK_POST_START, RT_HOOK_PRE_STOP, RT_HOOK_KINDS };
struct rt_hook {
	struct rt_probe *action; /* exec or httpGet; NULL: sleep */
	long long sleep_s;
};

/* A volume mounted into a container (volumes.h): host_path is a directory or file the kubelet
 * prepared; the CRI runtime passes it as a CRI Mount, the process runtime bind-mounts it in a
 * private mount namespace of the container. */
struct rt_mount {
	char *host_path, *container_path;
	bool readonly;
};

struct rt_container {
	char *name;
	char *image;        /* informational for "process": the command is what runs */
	char **command;     /* NULL-terminated, may be NULL (then args[0] is the program) */
	char **args;        /* NULL-terminated, may be NULL */
	struct rt_env *env;
	size_t nenv;
	bool env_pending;   /* env, command and args wait for the pod's IP: podenv_finish (podenv.h) */
	char *working_dir;  /* may be NULL */
	bool stdin_open, stdin_once, tty; /* spec stdin, stdinOnce, tty (CRI: for attach) */
	struct rt_ids ids;
	/* Used by the CRI runtime only (the others run the command line as it is): */
	enum rt_pull pull;
	struct rt_resources res;
	bool default_command;  /* command is the kubelet's placeholder: the image's own runs instead */
	struct rt_security sec;
	struct rt_probe *probes[RT_PROBE_KINDS]; /* by enum rt_probe_kind; NULL: none. Owned (copied by
						    rt_pod_copy). Used by the CRI and process runtimes. */
	struct rt_hook *hooks[RT_HOOK_KINDS]; /* lifecycle.postStart, preStop (hooks.h); NULL: none. Owned
						 (copied by rt_pod_copy). CRI and process runtimes. */
	struct rt_mount *mounts;  /* volumeMounts (volumes.h), owned; copied by rt_pod_copy */
	size_t nmounts;
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
	bool startup_pending;   /* running, but its startup probe has not succeeded yet (started: false) */
	/* last termination, for lastState.terminated */
	bool has_last;
	int last_exit_code;
	char last_reason[64];
	int64_t last_started_at, last_finished_at;
};

struct runtime;

/* A stream into a container (streams.c: kubectl exec, attach, port-forward). */
enum rt_stream_kind { RT_STREAM_EXEC, RT_STREAM_ATTACH, RT_STREAM_PORTFORWARD };
struct rt_stream_req {
	enum rt_stream_kind kind;
	const char *tenant, *ns, *pod;
	const char *container;   /* exec, attach */
	char *const *cmd;        /* exec: NULL-terminated */
	bool tty, in, out, err;  /* exec, attach */
	const int *ports;        /* port-forward: the ports asked for in the query (may be none) */
	size_t nports;
};
/* Where the stream goes. The CRI runtime answers with its streaming server's URL; the process
 * runtime with what the kubelet needs to run the stream itself. Release with rt_stream_target_release. */
struct rt_stream_target {
	char *url;          /* cri: the runtime's streaming URL (exec, attach, port-forward) */
	char **envp;        /* process exec: the container's environment, "NAME=VALUE", NULL-terminated */
	char *working_dir;  /* process exec: may be NULL */
	struct rt_ids ids;  /* process exec */
	long pid;           /* process: the container's main process (0: unknown) */
	char *log_path;     /* process attach: the container's current log (CRI format) */
};
void rt_stream_target_release(struct rt_stream_target *t);

struct runtime_ops {
	const char *name;
	/* root_dir: where the runtime keeps state and logs (created if missing). NULL on error. */
	struct runtime *(*create)(const char *root_dir, const char *self_exe);
	void (*destroy)(struct runtime *rt);
	/* Starts (or adopts, if it is already running from before a restart) the pod's containers.
	 * Idempotent: calling it again for a running pod changes nothing. 0 or -1 with *ret_err
	 * (new string) for a spec it cannot run (e.g. no command and no args). The start may go on
	 * in the background after 0 (cri): status() shows the containers Waiting meanwhile. */
	int (*start_pod)(struct runtime *rt, const struct rt_pod *pod, char **ret_err);
	/* Stops the pod's containers: SIGTERM, then SIGKILL after grace_s. Forgets the pod once
	 * everything exited (removes its state; logs are kept until remove_pod). 0 once the pod is
	 * stopped (or unknown; -1 for unknown is fine too); 1 while the stop goes on in the background
	 * (cri): call again later, rt_pod_changed tells when it ended (later calls do not change the
	 * grace period). The pod stays known (status, list_pods) until remove_pod. */
	int (*stop_pod)(struct runtime *rt, const char *uid, long long grace_s);
	/* Frees everything of a stopped pod (stop_pod returned 0), logs included. */
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
	/* Optional (NULL: none kept): like log_path, the log of the container's instance before the
	 * newest (`kubectl logs --previous`), NULL when there is none. Thread-safe. */
	char *(*prev_log_path)(struct runtime *rt, const char *tenant, const char *ns, const char *pod,
			       const char *container);
	/* Optional (NULL: no streams): where a stream into a running container (the pod, for
	 * port-forward) goes. Thread-safe (the kubelet server's threads). 0 with *out filled;
	 * E_NOT_FOUND (no such pod or container), E_CONFLICT (not running) or another E_* code with
	 * *ret_err (new string). */
	int (*stream_target)(struct runtime *rt, const struct rt_stream_req *req, struct rt_stream_target *out,
			     char **ret_err);
};

extern const struct runtime_ops runtime_process, runtime_fake, runtime_cri;

/* The CRI runtime's settings, given before runtime_cri.create: the runtime's endpoint
 * ("unix:///run/containerd/containerd.sock") and the cgroup parent of pod sandboxes (NULL or ""
 * leaves the runtime's default). The strings are copied. */
void runtime_cri_configure(const char *endpoint, const char *cgroup_parent);

/* The CRI runtime's image garbage collection (images.h): thresholds in percent of the image
 * filesystem (high 100: none), the minimum age of an image to remove, how often to check. Before
 * runtime_cri.create; defaults 85, 80, 2 min, 5 min. */
void runtime_cri_configure_image_gc(int high_pct, int low_pct, int64_t min_age_ms, int64_t period_ms);

/* One Version call to the configured endpoint (5 s at most): 0 when the runtime answers, else
 * -1 for a malformed endpoint or an E_* code, with the reason in ret_err. For waiting at start. */
int runtime_cri_ping(char *ret_err, size_t max);

/* The CRI runtime's pids limit per pod (--pod-max-pids): written to the pids controller of the
 * pod's cgroup (<cgroup parent>/pod<uid>) before its sandbox starts; <= 0: none. */
void runtime_cri_set_pod_max_pids(long long max_pids);

/* The CRI runtime's pool of threads that start pods (RunPodSandbox, CNI, CreateContainer,
 * StartContainer), several pods at once, each pod's steps in order (--pod-start-parallelism).
 * Before runtime_cri.create; 1..64, default 4. */
void runtime_cri_set_pod_start_parallelism(int n);

/* Frees the contents of a pod spec. */
void rt_pod_release(struct rt_pod *p);

/* Events about pods and their containers, as Kubernetes' kubelet records them (Pulling, Pulled,
 * Failed, BackOff, Created, Started, Killing). A runtime calls rt_event from whatever thread it
 * is on; the sink, set once before the runtime is created (none: events are dropped), must be
 * thread-safe and must not block. container may be NULL (an event about the pod itself). */
typedef void (*rt_event_sink)(void *ud, const char *tenant, const char *ns, const char *pod, const char *uid,
			      const char *container, bool warning, const char *reason, const char *message);
void rt_set_event_sink(rt_event_sink fn, void *ud);
void rt_event(const char *tenant, const char *ns, const char *pod, const char *uid, const char *container,
	      bool warning, const char *reason, const char *fmt, ...) __attribute__((format(printf, 8, 9)));

/* A pod's status may have changed outside the pod worker's calls (a start or stop that ran on a
 * runtime's thread ended): rt_pod_changed calls the sink (none: nothing; the pod worker finds the
 * change at its next sync anyway). The sink may be set or cleared at any time (NULL); it must be
 * thread-safe and must not block; it is not called after rt_set_pod_change_sink(NULL) returns. */
typedef void (*rt_pod_change_sink)(void *ud, const char *uid);
void rt_set_pod_change_sink(rt_pod_change_sink fn, void *ud);
void rt_pod_changed(const char *uid);

#endif
