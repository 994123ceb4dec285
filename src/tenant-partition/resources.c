/* The resources a tenant partition serves: one table entry each. */
#include "tp.h"
#include "ursa/region.h"

const struct api_resource tp_resources[] = {
	{ "", "v1", "tenants", "tenant", "Tenant", SCOPE_CLUSTER, { "te", NULL }, SUB_STATUS, false, true, &strategy_tenant },
	{ "", "v1", "namespaces", "namespace", "Namespace", SCOPE_TENANT, { "ns", NULL }, SUB_STATUS, false, false,
	  &strategy_namespace },
	{ "", "v1", "pods", "pod", "Pod", SCOPE_NAMESPACE, { "po", NULL },
	  SUB_STATUS | SUB_BINDING | SUB_EVICTION | SUB_LOG, false, false, &strategy_pod },
	{ "", "v1", "configmaps", "configmap", "ConfigMap", SCOPE_NAMESPACE, { "cm", NULL }, 0, false, false,
	  &strategy_configmap },
	{ "", "v1", "secrets", "secret", "Secret", SCOPE_NAMESPACE, { NULL }, 0, false, false, &strategy_secret },
	{ "", "v1", "serviceaccounts", "serviceaccount", "ServiceAccount", SCOPE_NAMESPACE, { "sa", NULL }, 0, false, false,
	  &strategy_serviceaccount },
	{ "", "v1", "events", "event", "Event", SCOPE_NAMESPACE, { "ev", NULL }, 0, false, false, &strategy_event },
	{ "", "v1", "services", "service", "Service", SCOPE_NAMESPACE, { "svc", NULL }, SUB_STATUS, false, false,
	  &strategy_service },
	{ "apps", "v1", "deployments", "deployment", "Deployment", SCOPE_NAMESPACE, { "deploy", NULL },
	  SUB_STATUS | SUB_SCALE, true, false, &strategy_deployment },
	{ "apps", "v1", "replicasets", "replicaset", "ReplicaSet", SCOPE_NAMESPACE, { "rs", NULL }, SUB_STATUS | SUB_SCALE,
	  true, false, &strategy_replicaset },
	{ "coordination.k8s.io", "v1", "leases", "lease", "Lease", SCOPE_NAMESPACE, { NULL }, 0, false, false,
	  &strategy_lease, .heartbeat = true },
	{ URSA_GROUP, "v1", "resourcemanagers", "resourcemanager", "ResourceManager", SCOPE_CLUSTER, { "rm", NULL }, 0,
	  false, true, &strategy_resourcemanager },
};
const size_t tp_nresources = sizeof(tp_resources) / sizeof(tp_resources[0]);
