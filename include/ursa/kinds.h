/* Kinds beyond those api.h declares, and pod helpers other components reuse
 * (src/common/kinds/). The strategies of tenants, namespaces, pods, configmaps, secrets,
 * serviceaccounts, events, services, deployments, replicasets and leases are in ursa/api.h. */
#ifndef URSA_KINDS_H
#define URSA_KINDS_H
#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>
#include "ursa/api.h"
#include "ursa/buf.h"

/* Served by the resource manager: nodes (cluster scope, system tenant) and apps/v1 DaemonSets. */
extern const struct api_strategy strategy_node, strategy_daemonset;

/* Parses a resource quantity ("100m", "0.5", "1Gi", "2e3") into milli-units, rounded up and
 * saturated at INT64_MAX; e.g. "1" -> 1000, "100m" -> 100, "1Ki" -> 1024000.
 * Returns 0, or -1 when s is not a quantity. */
int quantity_parse_milli(const char *s, long long *ret_milli);

/* QoS class of a pod object (its spec, after defaults): "Guaranteed", "Burstable" or
 * "BestEffort". Static string. */
const char *pod_qos_class(const json_t *pod);

/* What a pod asks of a node: the sum of its containers' requests (a limit alone counts as an
 * equal request), or the largest init container's when that is more. Milli-units. */
struct pod_requests {
	long long cpu_m, mem_m;
};
/* 0, or E_INVALID with a message appended to err (may be NULL) for a bad quantity. */
int pod_requests(const json_t *pod, struct pod_requests *ret, struct buf *err);

/* The NoExecute taints of a node whose Ready condition is False (not-ready) or Unknown
 * (unreachable); a tenant partition treats every node of a lost resource manager as unreachable. */
#define TAINT_NOT_READY "node.kubernetes.io/not-ready"
#define TAINT_UNREACHABLE "node.kubernetes.io/unreachable"

/* Whether a toleration object matches a taint {key, value, effect} (empty key with Exists
 * tolerates everything; empty effect matches every effect). */
bool toleration_matches(const json_t *toleration, const json_t *taint);
/* When the pod's spec.tolerations stop tolerating taint, applied at since_ms: since_ms plus
 * the smallest tolerationSeconds of the matching tolerations (negative counts as 0), INT64_MAX
 * when a matching toleration has none (tolerated forever), or -1 when none matches (the
 * caller applies its default). */
int64_t toleration_deadline_ms(const json_t *pod, const json_t *taint, int64_t since_ms);
/* The pod's status.conditions (borrowed pod) with Ready and ContainersReady set to False,
 * reason NodeNotReady, message (when not NULL) and lastTransitionTime now, as a node that is
 * not ready does to its pods: a new array to PATCH into status.conditions, or NULL when neither
 * condition was other than False (nothing to write). */
json_t *pod_conditions_not_ready(const json_t *pod, const char *message, time_t now);

#endif
