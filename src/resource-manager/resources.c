/* The resources a resource manager serves: one table entry each. */
#include "rm.h"
#include "ursa/kinds.h"
#include "ursa/region.h"

const struct api_resource rm_resources[] = {
	{ "", "v1", "nodes", "node", "Node", SCOPE_CLUSTER, { "no", NULL }, SUB_STATUS, false, true, &strategy_node },
	{ "", "v1", "pods", "pod", "Pod", SCOPE_NAMESPACE, { "po", NULL }, SUB_STATUS | SUB_BINDING | SUB_EVICTION | SUB_LOG,
	  false, true, &strategy_pod },
	{ "", "v1", "namespaces", "namespace", "Namespace", SCOPE_TENANT, { "ns", NULL }, SUB_STATUS, false, true,
	  &strategy_namespace },
	{ "", "v1", "events", "event", "Event", SCOPE_NAMESPACE, { "ev", NULL }, 0, false, false, &strategy_event },
	{ "apps", "v1", "daemonsets", "daemonset", "DaemonSet", SCOPE_NAMESPACE, { "ds", NULL }, SUB_STATUS, true, true,
	  &strategy_daemonset },
	{ "coordination.k8s.io", "v1", "leases", "lease", "Lease", SCOPE_NAMESPACE, { NULL }, 0, false, false,
	  &strategy_lease, .heartbeat = true },
	{ URSA_GROUP, "v1", "tenantpartitions", "tenantpartition", "TenantPartition", SCOPE_CLUSTER, { "tp", NULL }, 0,
	  false, true, &strategy_tenantpartition },
	/* answered from the kubelets (apiserver/podmetrics.c): kubectl top nodes */
	{ "metrics.k8s.io", "v1beta1", "nodes", "", "NodeMetrics", SCOPE_CLUSTER, { NULL }, 0, false, true, NULL,
	  .metrics = true },
	APISERVER_AUTHN_REVIEWS,
};
const size_t rm_nresources = sizeof(rm_resources) / sizeof(rm_resources[0]);
