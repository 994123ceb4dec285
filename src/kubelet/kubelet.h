/* ursa-kubelet: the node agent. One process runs one node, or in hollow mode many simulated
 * nodes that share connections and threads.
 *
 * Threads and who owns what:
 *   - main: parses options, starts everything, waits for SIGTERM/SIGINT, stops everything.
 *   - heartbeat workers (lease.c): a small pool; node i belongs to worker i % nworkers, which
 *     alone touches the node's heartbeat fields (registration, lease, status post).
 *   - the pod worker (pods.c): alone calls the runtime and alone touches pod state and the
 *     nodes' admission counters.
 *   - informer threads (client library, partitions.c): only enqueue keys for the pod worker.
 *   - the runtime's own threads (cri: pod starts and stops, image pulls, image GC): work on the
 *     runtime's state only and tell the pod worker through rt_pod_changed.
 *   - the events thread (events.c): posts what the runtime reports through rt_event.
 */
#ifndef URSA_KUBELET_H
#define URSA_KUBELET_H
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "ursa/client.h"
#include "runtime.h"

#define KL_VERSION "v1.32.0-ursa"
#define KL_LEASE_NS_PATH "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases"
#define KL_ANN_ID "ursa.io/kubelet-id"
#define KL_ANN_SCHEME "ursa.io/kubelet-scheme"
#define KL_LABEL_ID "ursa.io/kubelet-id" /* hollow nodes: their process's node watch selects on it */
#define KL_HOLLOW_TAINT "ursa.io/hollow"
#define KL_RM_PARTITION "@rm"   /* partition name of the RM's own (system) pods */
#define KL_MAX_NODES 100000

struct kl_options {
	const char *kubeconfig, *node_name, *zone, *region, *runtime, *root_dir, *address;
	const char *cri_endpoint, *cgroup_parent; /* --runtime cri */
	long long image_gc_high, image_gc_low;    /* --runtime cri: image GC thresholds, percent */
	const char *image_min_gc_age, *image_gc_period; /* Go durations */
	long long port;
	const char *tls_cert, *tls_key;
	const char *client_token_file; /* bearer token the kubelet server requires (or NULL: none) */
	const char *api_front_door;    /* HOST:PORT pods on the node network reach the API at (KUBERNETES_SERVICE_*), or NULL */
	const char *cpu, *memory;
	const char *system_reserved, *kube_reserved; /* Kubernetes' "cpu=..,memory=.." */
	long long max_pods;
	long long pod_max_pids;                      /* --runtime cri: pids limit per pod, 0: none */
	long long pod_start_parallelism;             /* --runtime cri: pods started at once */
	long long hollow_nodes;
	const char *hollow_prefix;
	long long status_report_s, lease_s;
};

struct opt;
extern const char kl_summary[];
/* Sets o to the defaults and returns the flag table over its fields (new array of *ret_n;
 * --log-level is the daemon skeleton's). */
struct opt *kl_options_flags(struct kl_options *o, int *ret_n);
/* 0, or -1 after printing what is wrong with the parsed flags to stderr. */
int kl_options_check(const struct kl_options *o);

/* Conditions a node reports besides Ready. */
enum kl_pressure { KL_MEMORY_PRESSURE, KL_DISK_PRESSURE, KL_PID_PRESSURE, KL_NPRESSURE };

/* Per-node state: kept small (hollow mode runs 10,000 of these). The heartbeat fields belong
 * to the node's heartbeat worker, the usage fields to the pod worker. */
struct kl_node {
	char *name;
	/* heartbeat worker */
	int64_t status_posted_ms;    /* mono ms of the last status post, 0 = never */
	int64_t renewed_ms;        /* last successful lease renewal (mono) */
	int64_t ready_since;         /* unix s of Ready's lastTransitionTime */
	int64_t pressure_since[KL_NPRESSURE];
	int64_t next_due_ms;         /* mono ms of the node's next turn (renewal, or registration) */
	uint8_t pressure;            /* bit per enum kl_pressure */
	bool registered, lease_ok, status_dirty;
	bool created;                /* registration created the node (its lease is new too) */
	/* hints from the start-up list (kl_nodes_check_unique), used once by the registration:
	 * the node exists already (no create, which would be 409), and its labels, annotations
	 * and taint are ours (no metadata patch either) */
	bool known, known_meta_ok;
	/* node watch (nodewatch.c) sets it, the heartbeat worker clears it: the API server's copy
	 * of the node is not what the kubelet reports (Ready not True: the node lifecycle
	 * controller marked it), so the worker posts the status again */
	atomic_bool status_stale;
	/* pod worker */
	long long cpu_used_m, mem_used_m, pods_used;
};

struct kl_partitions;
struct kl_pods;
struct kl_heartbeat;
struct kl_logs;

struct kubelet {
	struct kl_options opt;
	bool hollow;
	char *kubelet_id;
	char *hostname;
	long long cpu_m, mem_m, max_pods;   /* capacity, per node */
	long long alloc_cpu_m, alloc_mem_m; /* allocatable: capacity - system and kube reservations */
	int64_t boot_unix;

	struct rest_creds *creds; /* of the RM kubeconfig, reused for every tenant partition */
	struct rest_client *rm;

	struct kl_node *nodes;
	size_t nnodes;
	uint32_t *node_index;               /* open addressing: 0 empty, else node idx + 1 */
	size_t node_index_mask;

	const struct runtime_ops *rt_ops;
	struct runtime *rt;

	struct workqueue *wq;               /* pod keys "tenant/ns/name|partition" */
	struct kl_partitions *parts;
	struct kl_pods *pods;
	struct kl_heartbeat *hb;

	atomic_bool stop;
};

/* Node table (hollow.c): builds k->nodes from the options (one node, or the hollow set). */
void kl_nodes_init(struct kubelet *k);
void kl_nodes_release(struct kubelet *k);
/* Index of the node called name, or -1 if it is not one of this process's nodes. */
long kl_node_find(const struct kubelet *k, const char *name);
/* True when a raw watch event line of pods names only nodes held elsewhere (see hollow.c). */
bool kl_event_foreign(const struct kubelet *k, const char *line, size_t len);

/* Node objects (node.c). Both return new references, built on demand. */
json_t *kl_node_object(const struct kubelet *k, size_t i);
json_t *kl_node_status(const struct kubelet *k, size_t i);
/* Creates the node, or updates labels/annotations/taints and status if it exists. 0 or E_*. */
int kl_node_register(struct kubelet *k, size_t i);
/* Posts the status (merge patch of /status). 0 or E_*. */
int kl_node_post_status(struct kubelet *k, size_t i);
/* Refuses (-1 with *ret_err) when another live kubelet (different kubelet-id annotation,
 * lease renewed within its duration) already holds one of our node names. E_UNAVAILABLE when
 * the RM cannot be asked. */
int kl_nodes_check_unique(struct kubelet *k, char **ret_err);
/* True when the API server's copy of node i holds every label and annotation this kubelet
 * sets and, for a hollow node, its taint: re-registering it needs no metadata patch. */
bool kl_node_meta_current(const struct kubelet *k, size_t i, const json_t *node);
/* True when the API server's copy of a node (a watch event's object) misses a condition the
 * kubelet reports or has Ready other than True: the kubelet's status must be posted again. */
bool kl_node_status_stale(const json_t *node);
/* True when v can be a label value (1-63 of [A-Za-z0-9._-], alphanumeric at both ends). */
bool kl_label_value_ok(const char *v);
/* Samples the host's pressure conditions into a bit set (real mode only). */
uint8_t kl_host_pressure(const struct kubelet *k);

/* Lease and heartbeat workers (lease.c). */
int kl_lease_renew(struct kubelet *k, size_t i);
struct kl_heartbeat *kl_heartbeat_start(struct kubelet *k);
void kl_heartbeat_stop(struct kl_heartbeat *hb);
/* From any thread: node i's status is stale on the API server (sets status_stale); its worker
 * posts it again soon, at most at the pace of its renewals. */
void kl_heartbeat_flag_stale(struct kl_heartbeat *hb, size_t i);
/* A heartbeat worker's next turn among nodes first, first + step, ... (pure): the earliest due
 * renewal of a registered node, else the earliest due registration, except that a registration
 * goes first when none was made for a period (now - last_register >= period), so registering
 * goes on however busy the renewals keep the worker. -1 when nothing is due. *ret_wake (may be
 * NULL) gets the earliest due time of any of them (INT64_MAX: none). */
long kl_hb_pick(const struct kubelet *k, size_t first, size_t step, int64_t now, int64_t last_register,
		int64_t period, int64_t *ret_wake);

/* The node watch (nodewatch.c): one watch of this process's nodes (a real node: by name; hollow
 * nodes: by their KL_LABEL_ID label), kept without a store: each event's Ready condition is
 * checked and the node flagged through kl_heartbeat_flag_stale. NULL if the thread cannot
 * start or the nodes cannot be selected. Stop joins. */
struct kl_nodewatch;
struct kl_nodewatch *kl_nodewatch_start(struct kubelet *k, struct kl_heartbeat *hb);
void kl_nodewatch_stop(struct kl_nodewatch *nw);

/* Partitions (partitions.c): the RM's own pods plus one client and pod informer per TP of the
 * RM's registry, followed at run time. */
struct kl_partition {
	char *name;
	char *servers;
	bool is_rm;
	atomic_int refs;
	struct kubelet *k;
	struct rest_client *rc;  /* borrowed k->rm for the RM */
	struct informer *inf;
	const char *pods_path;   /* collection path for status and delete URLs' prefix */
};
struct kl_partitions *kl_partitions_start(struct kubelet *k);
void kl_partitions_stop(struct kl_partitions *ps);
/* A reference to the partition called name, or NULL if there is none (any more). */
struct kl_partition *kl_partition_get(struct kubelet *k, const char *name);
void kl_partition_put(struct kl_partition *p);
/* True when the registry and every partition's informer have synced. */
bool kl_partitions_synced(struct kubelet *k);
/* True when some partition's store holds a pod with this uid. */
bool kl_partitions_have_uid(struct kubelet *k, const char *uid);

/* A reference to the partition whose store holds the pod with store key "tenant/ns/name" and
 * this uid, or NULL. */
struct kl_partition *kl_partition_holding(struct kubelet *k, const char *key, const char *uid);

/* The runtime's events, posted as core/v1 Events (events.c). Start sets the runtime's event sink
 * (rt_set_event_sink) and returns NULL only if its thread cannot start. Stop stops posting (later
 * events are dropped); free, once no runtime thread is left, unsets the sink and frees. */
struct kl_events;
struct kl_events *kl_events_start(struct kubelet *k);
void kl_events_stop(struct kl_events *ev);
void kl_events_free(struct kl_events *ev);

/* The pod worker (pods.c). */
struct kl_pods *kl_pods_start(struct kubelet *k);
void kl_pods_stop(struct kl_pods *p);
/* The work-queue key of a pod of a partition: "tenant/ns/name|partition". New string. */
char *kl_pod_wkey(const char *obj_key, const char *partition);

#endif
