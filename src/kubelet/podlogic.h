/* Pure pod logic of the kubelet, free of I/O so unit tests can drive it: resource requests and
 * admission (admit.c), pod spec to runtime spec (rtpod.c), and pod status from runtime
 * statuses (podstatus.c). */
#ifndef URSA_KUBELET_PODLOGIC_H
#define URSA_KUBELET_PODLOGIC_H
#include <jansson.h>
#include <stdint.h>
#include "ursa/buf.h"
#include "runtime.h"

#define KL_MAX_CONTAINERS 64
#define KL_MAX_ARGS 4096
#define KL_MAX_ENV 4096

/* Amounts of the resources the kubelet admits on: cpu and memory in milli-units (memory
 * "1Gi" = 1073741824000), pods as a plain count. */
struct kl_res {
	long long cpu_m, mem_m, pods;
};

/* A reservation of --system-reserved or --kube-reserved: cpu in millicores, memory and
 * ephemeral-storage in thousandths of bytes (as kl_res), pid a count; 0 when not given. */
struct kl_reserved {
	long long cpu_m, mem_m, pids, storage_m;
};

/* Parses Kubernetes' syntax "cpu=500m,memory=1Gi,ephemeral-storage=1Gi,pid=1000" (any subset, each
 * name once, quantities non-negative; NULL or "" reserves nothing). 0, or E_INVALID with the reason
 * in err (and *ret untouched). */
int kl_reserved_parse(const char *spec, struct kl_reserved *ret, struct buf *err);

/* Node allocatable as Kubernetes computes it: capacity minus both reservations, at least 0; pods
 * stay the capacity's. */
void kl_allocatable(const struct kl_res *capacity, const struct kl_reserved *system, const struct kl_reserved *kube,
		    struct kl_res *ret);

/* The pod's effective requests: the sum over containers (a limit stands in for a missing
 * request, as apiserver defaulting does), or the largest init container's if larger;
 * pods = 1. 0, or E_INVALID with a message in err when a quantity does not parse. */
int kl_pod_requests(const json_t *pod, struct kl_res *ret, struct buf *err);

/* Kubernetes' fit check: pod count first, then cpu, then memory (a zero request always fits).
 * Returns NULL when req fits into alloc - used, else the rejection reason ("OutOfpods",
 * "OutOfcpu", "OutOfmemory"; static string) with the message appended to msg. */
const char *kl_admit(const struct kl_res *alloc, const struct kl_res *used, const struct kl_res *req,
		     struct buf *msg);
/* Tenant isolation again, after the tenant partition's admission (ursa/podsecurity.h): a pod of
 * any tenant but system (metadata.tenant) that asks for privileged containers, host namespaces,
 * hostPath volumes, host ports, added capabilities and the like. NULL when it may run, else the
 * rejection reason "TenantIsolation" (static) with the violations appended to msg. */
const char *kl_admit_isolation(const json_t *pod, struct buf *msg);

/* Converts a pod object into a runtime spec. 0, or E_INVALID with a message in err (the
 * pod is then failed with reason "InvalidPodSpec"). *ret is filled only on success; release
 * it with rt_pod_release. */
int kl_rt_pod_from_json(const json_t *pod, struct rt_pod *ret, struct buf *err);
/* The same for a runtime that knows its images' users (image_users: the CRI runtime): runAsNonRoot
 * without runAsUser is then left to the runtime, which checks the image's user. */
int kl_rt_pod_from_json_for(const json_t *pod, bool image_users, struct rt_pod *ret, struct buf *err);
/* The same with the environment's sources (podenv.h; ctx NULL: no configmaps or secrets, the pod's
 * IPs deferred): E_NOT_FOUND with Kubernetes' message in err and the container's name in
 * *ret_container (new string; may be NULL) when a reference cannot be resolved now
 * (CreateContainerConfigError), E_INVALID for a spec the kubelet cannot run. */
struct podenv_ips;
struct podenv_alloc;
struct podenv_src;
struct kl_env_ctx {
	const struct podenv_ips *ips;
	const struct podenv_alloc *alloc;
	const struct podenv_src *src;
};
int kl_rt_pod_from_json_env(const json_t *pod, bool image_users, const struct kl_env_ctx *ctx, struct rt_pod *ret,
			    struct buf *err, char **ret_container);

/* Grace period to stop a pod with: metadata.deletionGracePeriodSeconds, else
 * spec.terminationGracePeriodSeconds, else 30. */
long long kl_pod_grace(const json_t *pod);

/* What the kubelet knows about a pod, beyond the pod object. */
struct kl_status_in {
	const struct rt_container_status *cs; /* runtime statuses (any order), may be NULL */
	size_t ncs;
	const char *host_ip;                  /* node address; also the pod IP unless pod_ip is set */
	const char *pod_ip;                   /* the pod's own IP (CRI sandbox network); "": none yet
						 (no podIP); NULL: the node's (process runtime, hostNetwork) */
	int64_t now;                          /* unix seconds */
	const char *fail_reason;              /* non-NULL: the pod failed without running */
	const char *fail_message;
};

/* The pod's new status: a copy of its current status with phase, conditions,
 * containerStatuses, hostIP(s), podIP(s), startTime and qosClass computed from in.
 * lastTransitionTime of a condition whose status did not change is kept, so a pod whose
 * state did not change gets a status json_equal to its current one. New reference. */
json_t *kl_pod_status_build(const json_t *pod, const struct kl_status_in *in);

/* True if the phase is Succeeded or Failed. */
bool kl_phase_terminal(const char *phase);

/* One pod, two partitions (podmove.c): while its tenant moves between tenant partitions
 * (docs/migration.md, "Pods keep running") the same pod, same uid, is served by both. The pod
 * worker runs each uid once: its home is the key ("tenant/ns/name|partition") it was first seen
 * under; the same uid under another partition's key is its second copy, remembered, never
 * started. */
enum kl_pod_key {
	KL_KEY_NEW,  /* neither the home nor the second copy of a pod the worker runs */
	KL_KEY_HOME, /* the home of a pod the worker runs */
	KL_KEY_COPY, /* the second copy of a pod the worker runs (its home is another key) */
};

enum kl_pod_action {
	KL_POD_NONE,        /* nothing: no object, or the second copy changed (ignored) */
	KL_POD_RUN,         /* the home (or a new pod): admit, start, report, delete as usual */
	KL_POD_ADD_COPY,    /* a pod the worker runs under another key: remember this one as its copy */
	KL_POD_FORGET_COPY, /* the second copy went away: forget it, the pod runs on */
	KL_POD_HAND_OFF,    /* the home went away, the second copy lives: it becomes the home (status
			       goes there), no container stops */
	KL_POD_STOP,        /* the home went away and there is no copy: the pod stops */
};

/* What the pod worker does with a key (pure). present: the key's object is there, bound to one of
 * our nodes, and for HOME and COPY has the uid of the pod the key belongs to. other: for HOME, the
 * pod has a second copy; for NEW, the object's uid is a pod the worker runs under another key;
 * ignored for COPY. A graceful deletion (deletionTimestamp) is a change like any other: the home's
 * is RUN (the pod stops as it always has), a copy's is ignored until the copy becomes the home. */
enum kl_pod_action kl_pod_key_action(enum kl_pod_key key, bool present, bool other);

#endif
