/* ursa-rm-controller-manager: the controllers of a resource manager (node lifecycle,
 * daemonset). nodehealth.c holds the pure decisions (unit-tested without servers); the other
 * files apply them through the client library. */
#ifndef URSA_RMCM_H
#define URSA_RMCM_H
#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include "ursa/bucket.h"
#include "ursa/client.h"
#include "ursa/kinds.h"

#define LABEL_ZONE "topology.kubernetes.io/zone"
#define LABEL_ZONE_BETA "failure-domain.beta.kubernetes.io/zone"

struct rmcm_options {
	const char *kubeconfig;
	long long grace_s;          /* --node-monitor-grace-period */
	long long period_s;         /* --node-monitor-period */
	long long default_tol_s;    /* --default-toleration-seconds */
	const char *eviction_rate;  /* --node-eviction-rate, nodes per second */
	const char *secondary_rate; /* --secondary-node-eviction-rate */
	const char *unhealthy_threshold;
	long long large_cluster;    /* --large-cluster-size-threshold */
	bool leader_elect;
	const char *identity;
	const char *controllers;    /* "*", or a comma list: nodelifecycle,daemonset, "-name" disables */
	/* parsed */
	double rate, secondary, threshold;
};

struct opt;
extern const char rmcm_summary[];
/* Sets o to the defaults and returns the flag table over its fields (new array of *ret_n;
 * --health-listen and --log-level are the daemon skeleton's). */
struct opt *rmcm_options_flags(struct rmcm_options *o, int *ret_n);
/* Checks the parsed flags and parses the rates; 0, or -1 after printing the error. */
int rmcm_options_check(struct rmcm_options *o);

/* Node health (nodehealth.c): pure functions ----------------------------------------------- */
enum node_ready { NODE_READY_TRUE, NODE_READY_FALSE, NODE_READY_UNKNOWN };
/* The Ready condition of a node object; a node without one is Unknown. */
enum node_ready node_ready_of(const json_t *node);
/* The zone of a node ("" when it has no zone label); borrowed from node. */
const char *node_zone_of(const json_t *node);
/* True when the heartbeat last observed at probe_ms (local monotonic) is older than grace_ms. */
bool node_heartbeat_stale(int64_t probe_ms, int64_t now_ms, int64_t grace_ms);

enum zone_state { ZONE_NORMAL, ZONE_PARTIAL_DISRUPTION, ZONE_FULL_DISRUPTION };
/* Kubernetes' rule: every node of the zone not ready (and at least one node) is a full
 * disruption; more than two not-ready nodes forming at least threshold of the zone is a
 * partial one. */
enum zone_state zone_state_compute(int ready, int not_ready, double threshold);
const char *zone_state_name(enum zone_state s);
struct eviction_rates {
	double primary, secondary;
	int large_cluster;
};
/* Nodes per second a zone may taint: the primary rate when normal or fully disrupted (the
 * zone is gone, its pods are better elsewhere), the secondary rate when partially disrupted
 * and larger than large_cluster nodes, 0 for a small partially disrupted zone, and 0
 * everywhere when every zone is fully disrupted (the controller is probably the one cut off). */
double zone_eviction_rate(enum zone_state s, int zone_size, bool all_zones_full, const struct eviction_rates *r);
/* The burst of a zone's taint bucket at this rate: what accrues in one monitor period
 * (period_s), at least 1. Taints are drawn from the bucket every pass, as many as it holds, so
 * a zone taints about rate nodes a second whatever the period. */
double zone_eviction_burst(double rate, int64_t period_s);
/* Moves a zone's bucket to rate (and its burst for period_s) at now_us: tokens accrued so far
 * stay, up to the new burst; rate 0 empties it. */
void zone_bucket_retune(struct token_bucket *b, double rate, int64_t period_s, int64_t now_us);

/* Whether one toleration matches one taint (key/operator/value/effect, Kubernetes rules). */
/* When (wall-clock ms) the pod must go from a node with these taints: the earliest, over
 * the NoExecute taints, of taint.timeAdded + the smallest tolerationSeconds of the pod's
 * matching tolerations; 0 (now) for a NoExecute taint nothing tolerates, except that the
 * not-ready/unreachable taints get default_tol_s when the pod has no toleration for them.
 * INT64_MAX when the pod may stay forever. A taint without a readable timeAdded counts from
 * now_ms. */
int64_t pod_eviction_time_ms(const json_t *pod, const json_t *taints, int64_t default_tol_s, int64_t now_ms);
/* The NoExecute taint key the controller wants for a Ready state (NULL for Ready=True). */
const char *node_wanted_taint(enum node_ready r);
/* True when taints (an array or NULL) hold a taint with this key and effect. */
bool taints_have(const json_t *taints, const char *key, const char *effect);
/* A copy of taints (new reference, an array) without the controller's two NoExecute taints,
 * then with key:NoExecute (timeAdded = now_s) appended when key is not NULL. */
json_t *taints_replace(const json_t *taints, const char *key, int64_t now_s);
/* A copy of the node's status.conditions (new reference) with Ready (added if absent),
 * MemoryPressure, DiskPressure and PIDPressure set to Unknown, reason NodeStatusUnknown. */
json_t *conditions_unknown(const json_t *node, int64_t now_s);

/* Daemonset helpers (dsutil.c) -------------------------------------------------------------- */
/* Whether a DaemonSet's pod template should run on node: nodeSelector labels match and every
 * NoSchedule/NoExecute taint except the controller's own two is tolerated. */
bool ds_wants_node(const json_t *ds, const json_t *node);
/* The name of the DaemonSet's pod on a node: "<ds>-<hash of node>" (new string, at most 63
 * characters). */
char *ds_pod_name(const char *ds, const char *node);
/* A new Pod object (new reference) from the DaemonSet's template, bound to node. */
json_t *ds_pod_new(const json_t *ds, const char *node);

/* Tenant partitions (partitions.c) ---------------------------------------------------------- */

struct tp_set;
/* Watches the registry (apis ursa.io/v1 tenantpartitions) of rm and keeps one client per TP.
 * creds is borrowed and must outlive the set. */
struct tp_set *tp_set_start(struct rest_client *rm, const struct rest_creds *creds);
void tp_set_free(struct tp_set *s);
/* Refreshes the clients from the registry store (call from the controller thread). Returns
 * the number of partitions; *ret_clients and *ret_names are borrowed until the next refresh. */
size_t tp_set_refresh(struct tp_set *s, struct rest_client ***ret_clients, char ***ret_names);

/* Controllers ------------------------------------------------------------------------------- */
struct nodelifecycle;
/* nodes and leases are informers on the RM, owned by the caller. */
struct nodelifecycle *nodelifecycle_new(const struct rmcm_options *o, struct rest_client *rm,
					struct informer *nodes, struct informer *leases, struct tp_set *tps);
void nodelifecycle_free(struct nodelifecycle *nl);
/* One pass: observes heartbeats, marks nodes Unknown, taints within the zones' rates,
 * evicts pods whose toleration ran out. leader false only observes. */
void nodelifecycle_tick(struct nodelifecycle *nl, bool leader);

struct dscontroller;
struct dscontroller *dscontroller_new(struct rest_client *rm, struct informer *nodes);
void dscontroller_free(struct dscontroller *dc);
/* Creates and deletes daemon pods until every DaemonSet has one pod on each wanted node;
 * updates their status. */
void dscontroller_sync(struct dscontroller *dc);

#endif
