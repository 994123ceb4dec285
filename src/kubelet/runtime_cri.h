/* The CRI runtime's helpers (internal to src/kubelet): its labels, and the pure conversions of
 * cri_convert.c (pod specs to CRI resources and security profiles, CRI container statuses to the
 * kubelet's, the restart back-off; unit-tested) and the pod cgroups of podcgroup.c. */
#ifndef URSA_KUBELET_RUNTIME_CRI_H
#define URSA_KUBELET_RUNTIME_CRI_H
#include <stdbool.h>
#include <stdint.h>
#include "runtime.h"
#include "ursa/cri.h"

/* Labels on every sandbox and container this runtime makes, to find them again. */
#define CRI_LABEL_UID "io.kubernetes.pod.uid"
#define CRI_LABEL_NAME "io.kubernetes.pod.name"
#define CRI_LABEL_NS "io.kubernetes.pod.namespace"
#define CRI_LABEL_CONTAINER "io.kubernetes.container.name"
#define CRI_LABEL_TENANT "ursa.io/tenant"
#define CRI_LABEL_OWNER "ursa.io/kubelet-runtime" /* a hash of the runtime's root_dir */

#define CRI_CPU_PERIOD 100000 /* us, as the kubelet sets it */
#define CRI_MIN_SHARES 2
#define CRI_MAX_SHARES 262144
#define CRI_MIN_QUOTA 1000

/* Linux resources of a container from its requests and limits: cpu shares from the cpu request
 * (1024 per core, at least 2, the kubelet's mapping), quota/period from the cpu limit (none
 * without one), the memory limit. out must be initialised; only these fields are set. */
void cri_linux_resources(const struct rt_resources *r, Runtime__V1__LinuxContainerResources *out);

/* runAsNonRoot without runAsUser against the image's user (img: ImageStatus's image, may be NULL):
 * NULL when the image runs as a non-zero numeric uid, else "CreateContainerConfigError" with
 * *ret_msg (new string) in Kubernetes' words: the image runs as root (uid 0, the name "root", or no
 * user at all), or its user is another name, which cannot be verified. */
const char *cri_nonroot_refusal(const Runtime__V1__Image *img, const struct rt_pod *pod, const char *container,
				char **ret_msg);

/* The CRI seccomp profile of a container (out is initialised here): RuntimeDefault, Unconfined, or
 * Localhost with localhost_ref <seccomp_root>/<seccomp_ref> (*ret_ref, new string, NULL otherwise;
 * out points at it). */
void cri_seccomp_profile(const struct rt_security *sec, const char *seccomp_root, Runtime__V1__SecurityProfile *out,
			 char **ret_ref);

/* The mount point of the pids cgroup controller in /proc/self/mounts text: the cgroup v1 hierarchy
 * with the "pids" option, else the first cgroup2 mount. false when there is neither. */
bool cri_pids_mount(const char *mounts, char *out, size_t max);

/* podcgroup.c: the pod's cgroup (an absolute cgroupfs path; NULL: none) made in the pids
 * hierarchy with pids.max = max_pids before its sandbox starts (<= 0: nothing done; failures are
 * logged, not fatal), and removed from every hierarchy once the pod's containers are gone. */
void cri_pod_pids_limit(const char *cgroup, long long max_pids);
void cri_pod_cgroup_remove(const char *cgroup);

/* One ended container instance. */
struct cri_term {
	int exit_code;
	char reason[64];   /* Completed, Error, OOMKilled, StartError, ContainerStatusUnknown */
	char message[256];
	int64_t started_at, finished_at; /* unix s */
};

/* The termination a CRI status describes (state EXITED): the runtime's reason when it gives one
 * (containerd: "OOMKilled", "Completed", "Error"), else Completed for exit 0 and Error. */
void cri_term_from_status(const Runtime__V1__ContainerStatus *s, struct cri_term *t);

/* What the runtime knows of one container of a pod. */
enum cri_phase {
	CP_WAITING,    /* no instance runs yet: image, create or sandbox trouble (reason says), retry_at */
	CP_RUNNING,    /* the current instance was created (cri_state: CREATED or RUNNING) */
	CP_BACKOFF,    /* the current instance exited and restarts at retry_at (CrashLoopBackOff) */
	CP_TERMINATED, /* it exited and stays so */
};

struct cri_cont {
	char name[64];
	enum cri_phase phase;
	char *id;                 /* current (newest) instance, NULL if none */
	char *prev_id;            /* the one before, kept for lastState */
	int launches;             /* instances created; the current one's attempt is launches - 1 */
	int cri_state;            /* Runtime__V1__ContainerState of id at the last poll */
	int64_t started_at;       /* of the running instance, unix s */
	char image_ref[160];
	bool has_term, has_prev;
	struct cri_term term, prev;
	char reason[64], message[256]; /* CP_WAITING */
	int64_t retry_at_ms, backoff_ms;       /* wall ms; crash back-off */
	int64_t pull_failed_ms, pull_backoff_ms;
	char *cred_server, *cred_user, *cred_pass; /* PullImage's AuthConfig, or NULL */
	struct img_pull *pull;                     /* the pull it waits for (images.h), or NULL */
	int64_t pull_started_ms;                   /* when that pull was asked for (mono ms) */
};

/* The kubelet's status of c (pod for the back-off message), as Kubernetes shows it.
 * runtime_name prefixes the container id ("containerd://<id>"). */
void cri_cont_status(const struct cri_cont *c, const struct rt_pod *pod, const char *runtime_name,
		     struct rt_container_status *s);

/* The next back-off: base at first or after a run longer than twice the cap, else doubled,
 * capped at max. */
int64_t cri_backoff_next(int64_t cur_ms, int64_t base_ms, int64_t max_ms, int64_t ran_ms);

#endif
