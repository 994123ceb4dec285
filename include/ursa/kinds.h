/* Kinds beyond those api.h declares, and pod helpers other components reuse
 * (src/common/kinds/). The strategies of tenants, namespaces, pods, configmaps, secrets,
 * serviceaccounts, events, services, deployments, replicasets and leases are in ursa/api.h. */
#ifndef URSA_KINDS_H
#define URSA_KINDS_H
#include <jansson.h>
#include "ursa/api.h"

/* Served by the resource manager: nodes (cluster scope, system tenant) and apps/v1 DaemonSets. */
extern const struct api_strategy strategy_node, strategy_daemonset;

/* Parses a resource quantity ("100m", "0.5", "1Gi", "2e3") into milli-units, rounded up and
 * saturated at INT64_MAX; e.g. "1" -> 1000, "100m" -> 100, "1Ki" -> 1024000.
 * Returns 0, or -1 when s is not a quantity. */
int quantity_parse_milli(const char *s, long long *ret_milli);

/* QoS class of a pod object (its spec, after defaults): "Guaranteed", "Burstable" or
 * "BestEffort". Static string. */
const char *pod_qos_class(const json_t *pod);

#endif
