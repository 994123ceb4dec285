/* core/v1 top-level kinds other than the pod template pieces. */
#include "ursa/schema.h"

static const struct pb_msg pm_node_status, pm_resource_quota_status, pm_load_balancer_status,
	pm_namespace_condition, pm_node_config_source;

static const struct pb_field pod[] = {
	F_MSG(1, "metadata", &pm_object_meta),
	F_MSG(2, "spec", &pm_pod_spec),
	F_STATUS(3, &pm_pod_status),
};
PB_MSG(pm_pod, pod);

static const struct pb_field namespace_spec[] = {
	F_STRR(1, "finalizers"),
};
static PB_MSG(pm_namespace_spec, namespace_spec);

static const struct pb_field namespace_condition[] = {
	F_STRK(1, "type"),
	F_STRK(2, "status"),
	F_TIME(4, "lastTransitionTime"),
	F_STR(5, "reason"),
	F_STR(6, "message"),
};
static PB_MSG(pm_namespace_condition, namespace_condition);

/* Decoded (unlike most statuses): kubectl sends phase when it replaces a namespace. */
static const struct pb_field namespace_status[] = {
	F_STR(1, "phase"),
	F_MSGRK(2, "conditions", &pm_namespace_condition, "type"),
};
static PB_MSG(pm_namespace_status, namespace_status);

static const struct pb_field namespace_[] = {
	F_MSG(1, "metadata", &pm_object_meta),
	F_MSG(2, "spec", &pm_namespace_spec),
	F_MSG(3, "status", &pm_namespace_status),
};
PB_MSG(pm_namespace, namespace_);

static const struct pb_field config_map[] = {
	F_MSG(1, "metadata", &pm_object_meta),
	F_MAPS(2, "data"),
	F_MAPB(3, "binaryData"),
	F_BOOLK(4, "immutable"),
};
PB_MSG(pm_config_map, config_map);

static const struct pb_field secret[] = {
	F_MSG(1, "metadata", &pm_object_meta),
	F_MAPB(2, "data"),
	F_STR(3, "type"),
	F_MAPS(4, "stringData"),
	F_BOOLK(5, "immutable"),
};
PB_MSG(pm_secret, secret);

static const struct pb_field object_reference[] = {
	F_STR(1, "kind"),
	F_STR(2, "namespace"),
	F_STR(3, "name"),
	F_STR(4, "uid"),
	F_STR(5, "apiVersion"),
	F_STR(6, "resourceVersion"),
	F_STR(7, "fieldPath"),
};
PB_MSG(pm_object_reference, object_reference);

static const struct pb_field service_account[] = {
	F_MSG(1, "metadata", &pm_object_meta),
	F_MSGRK(2, "secrets", &pm_object_reference, "name"),
	F_MSGR(3, "imagePullSecrets", &pm_local_object_reference),
	F_BOOLK(4, "automountServiceAccountToken"),
};
PB_MSG(pm_service_account, service_account);

static const struct pb_field service_port[] = {
	F_STR(1, "name"),
	F_STR(2, "protocol"),
	F_I32K(3, "port"),
	F_INTSTR(4, "targetPort"),
	F_I32(5, "nodePort"),
	F_STRK(6, "appProtocol"),
};
static PB_MSG(pm_service_port, service_port);

static const struct pb_field client_ip_config[] = {
	F_I32K(1, "timeoutSeconds"),
};
static PB_MSG(pm_client_ip_config, client_ip_config);

static const struct pb_field session_affinity_config[] = {
	F_MSG(1, "clientIP", &pm_client_ip_config),
};
static PB_MSG(pm_session_affinity_config, session_affinity_config);

static const struct pb_field service_spec[] = {
	F_MSGRK(1, "ports", &pm_service_port, "port"),
	F_MAPS(2, "selector"),
	F_STR(3, "clusterIP"),
	F_STR(4, "type"),
	F_STRR(5, "externalIPs"),
	F_STR(7, "sessionAffinity"),
	F_STR(8, "loadBalancerIP"),
	F_STRR(9, "loadBalancerSourceRanges"),
	F_STR(10, "externalName"),
	F_STR(11, "externalTrafficPolicy"),
	F_I32(12, "healthCheckNodePort"),
	F_BOOL(13, "publishNotReadyAddresses"),
	F_MSG(14, "sessionAffinityConfig", &pm_session_affinity_config),
	F_STRK(17, "ipFamilyPolicy"),
	F_STRR(18, "clusterIPs"),
	F_STRR(19, "ipFamilies"),
	F_BOOLK(20, "allocateLoadBalancerNodePorts"),
	F_STRK(21, "loadBalancerClass"),
	F_STRK(22, "internalTrafficPolicy"),
	F_STRK(23, "trafficDistribution"),
};
static PB_MSG(pm_service_spec, service_spec);

static const struct pb_field port_status[] = {
	F_I32K(1, "port"),
	F_STRK(2, "protocol"),
	F_STRK(3, "error"),
};
static PB_MSG(pm_port_status, port_status);

static const struct pb_field load_balancer_ingress[] = {
	F_STR(1, "ip"),
	F_STR(2, "hostname"),
	F_MSGR(4, "ports", &pm_port_status),
	F_STRK(5, "ipMode"),
};
static PB_MSG(pm_load_balancer_ingress, load_balancer_ingress);

static const struct pb_field load_balancer_status[] = {
	F_MSGR(1, "ingress", &pm_load_balancer_ingress),
};
static PB_MSG(pm_load_balancer_status, load_balancer_status);

/* loadBalancer is a Go struct, so the JSON always carries "loadBalancer": {}. */
static const struct pb_field service_status[] = {
	F_MSG(1, "loadBalancer", &pm_load_balancer_status),
	F_MSGRK(2, "conditions", &pm_condition, "type"),
};
static PB_MSG(pm_service_status, service_status);

static const struct pb_field service[] = {
	F_MSG(1, "metadata", &pm_object_meta),
	F_MSG(2, "spec", &pm_service_spec),
	F_MSG(3, "status", &pm_service_status),
};
PB_MSG(pm_service, service);

static const struct pb_field event_source[] = {
	F_STR(1, "component"),
	F_STR(2, "host"),
};
static PB_MSG(pm_event_source, event_source);

static const struct pb_field event_series[] = {
	F_I32(1, "count"),
	F_MTIME(2, "lastObservedTime"),
};
static PB_MSG(pm_event_series, event_series);

static const struct pb_field event[] = {
	F_MSG(1, "metadata", &pm_object_meta),
	F_MSG(2, "involvedObject", &pm_object_reference),
	F_STR(3, "reason"),
	F_STR(4, "message"),
	F_MSG(5, "source", &pm_event_source),
	F_TIME(6, "firstTimestamp"),
	F_TIME(7, "lastTimestamp"),
	F_I32(8, "count"),
	F_STR(9, "type"),
	F_MTIME(10, "eventTime"),
	F_MSG(11, "series", &pm_event_series),
	F_STR(12, "action"),
	F_MSG(13, "related", &pm_object_reference),
	F_STR(14, "reportingComponent"),
	F_STR(15, "reportingInstance"),
};
PB_MSG(pm_event, event);

static const struct pb_field taint[] = {
	F_STRK(1, "key"),
	F_STR(2, "value"),
	F_STRK(3, "effect"),
	F_TIME(4, "timeAdded"),
};
static PB_MSG(pm_taint, taint);

static const struct pb_field node_spec[] = {
	F_STR(1, "podCIDR"),
	F_STR(2, "externalID"),
	F_STR(3, "providerID"),
	F_BOOL(4, "unschedulable"),
	F_MSGR(5, "taints", &pm_taint),
	F_MSG(6, "configSource", &pm_node_config_source),
	F_STRSET(7, "podCIDRs"),
};
static PB_MSG(pm_node_spec, node_spec);

static const struct pb_field node[] = {
	F_MSG(1, "metadata", &pm_object_meta),
	F_MSG(2, "spec", &pm_node_spec),
	F_STATUS(3, &pm_node_status),
};
PB_MSG(pm_node, node);

static const struct pb_field binding[] = {
	F_MSG(1, "metadata", &pm_object_meta),
	F_MSG(2, "target", &pm_object_reference),
};
PB_MSG(pm_binding, binding);

static const struct pb_field scoped_resource_selector_requirement[] = {
	F_STRK(1, "scopeName"),
	F_STRK(2, "operator"),
	F_STRR(3, "values"),
};
static PB_MSG(pm_scoped_resource_selector_requirement, scoped_resource_selector_requirement);

static const struct pb_field scope_selector[] = {
	F_MSGR(1, "matchExpressions", &pm_scoped_resource_selector_requirement),
};
static PB_MSG(pm_scope_selector, scope_selector);

static const struct pb_field resource_quota_spec[] = {
	F_MAPQ(1, "hard"),
	F_STRR(2, "scopes"),
	F_MSG(3, "scopeSelector", &pm_scope_selector),
};
static PB_MSG(pm_resource_quota_spec, resource_quota_spec);

static const struct pb_field resource_quota[] = {
	F_MSG(1, "metadata", &pm_object_meta),
	F_MSG(2, "spec", &pm_resource_quota_spec),
	F_STATUS(3, &pm_resource_quota_status),
};
PB_MSG(pm_resource_quota, resource_quota);

static const struct pb_field resource_quota_status[] = {
	F_MAPQ(1, "hard"),
	F_MAPQ(2, "used"),
};
static PB_MSG(pm_resource_quota_status, resource_quota_status);

/* ---- Node status ---- */

static const struct pb_field config_map_node_config_source[] = {
	F_STRK(1, "namespace"),
	F_STRK(2, "name"),
	F_STR(3, "uid"),
	F_STR(4, "resourceVersion"),
	F_STRK(5, "kubeletConfigKey"),
};
static PB_MSG(pm_config_map_node_config_source, config_map_node_config_source);

static const struct pb_field node_config_source[] = {
	F_MSG(2, "configMap", &pm_config_map_node_config_source),
};
static PB_MSG(pm_node_config_source, node_config_source);

static const struct pb_field node_config_status[] = {
	F_MSG(1, "assigned", &pm_node_config_source),
	F_MSG(2, "active", &pm_node_config_source),
	F_MSG(3, "lastKnownGood", &pm_node_config_source),
	F_STR(4, "error"),
};
static PB_MSG(pm_node_config_status, node_config_status);

static const struct pb_field node_condition[] = {
	F_STRK(1, "type"),
	F_STRK(2, "status"),
	F_TIME(3, "lastHeartbeatTime"),
	F_TIME(4, "lastTransitionTime"),
	F_STR(5, "reason"),
	F_STR(6, "message"),
};
static PB_MSG(pm_node_condition, node_condition);

static const struct pb_field node_address[] = {
	F_STRK(1, "type"),
	F_STRK(2, "address"),
};
static PB_MSG(pm_node_address, node_address);

static const struct pb_field daemon_endpoint[] = {
	F_I32K(1, "Port"),
};
static PB_MSG(pm_daemon_endpoint, daemon_endpoint);

static const struct pb_field node_daemon_endpoints[] = {
	F_MSG(1, "kubeletEndpoint", &pm_daemon_endpoint),
};
static PB_MSG(pm_node_daemon_endpoints, node_daemon_endpoints);

static const struct pb_field node_swap_status[] = {
	F_I64K(1, "capacity"),
};
static PB_MSG(pm_node_swap_status, node_swap_status);

static const struct pb_field node_system_info[] = {
	F_STRK(1, "machineID"),
	F_STRK(2, "systemUUID"),
	F_STRK(3, "bootID"),
	F_STRK(4, "kernelVersion"),
	F_STRK(5, "osImage"),
	F_STRK(6, "containerRuntimeVersion"),
	F_STRK(7, "kubeletVersion"),
	F_STRK(8, "kubeProxyVersion"),
	F_STRK(9, "operatingSystem"),
	F_STRK(10, "architecture"),
	F_MSG(11, "swap", &pm_node_swap_status),
};
static PB_MSG(pm_node_system_info, node_system_info);

static const struct pb_field container_image[] = {
	F_STRR(1, "names"),
	F_I64(2, "sizeBytes"),
};
static PB_MSG(pm_container_image, container_image);

static const struct pb_field attached_volume[] = {
	F_STRK(1, "name"),
	F_STRK(2, "devicePath"),
};
static PB_MSG(pm_attached_volume, attached_volume);

static const struct pb_field node_runtime_handler_features[] = {
	F_BOOLK(1, "recursiveReadOnlyMounts"),
	F_BOOLK(2, "userNamespaces"),
};
static PB_MSG(pm_node_runtime_handler_features, node_runtime_handler_features);

static const struct pb_field node_runtime_handler[] = {
	F_STRK(1, "name"),
	F_MSG(2, "features", &pm_node_runtime_handler_features),
};
static PB_MSG(pm_node_runtime_handler, node_runtime_handler);

static const struct pb_field node_features[] = {
	F_BOOLK(1, "supplementalGroupsPolicy"),
};
static PB_MSG(pm_node_features, node_features);

static const struct pb_field node_status[] = {
	F_MAPQ(1, "capacity"),
	F_MAPQ(2, "allocatable"),
	F_STR(3, "phase"),
	F_MSGRK(4, "conditions", &pm_node_condition, "type"),
	F_MSGRK(5, "addresses", &pm_node_address, "type"),
	F_MSG(6, "daemonEndpoints", &pm_node_daemon_endpoints),
	F_MSG(7, "nodeInfo", &pm_node_system_info),
	F_MSGR(8, "images", &pm_container_image),
	F_STRR(9, "volumesInUse"),
	F_MSGR(10, "volumesAttached", &pm_attached_volume),
	F_MSG(11, "config", &pm_node_config_status),
	F_MSGR(12, "runtimeHandlers", &pm_node_runtime_handler),
	F_MSG(13, "features", &pm_node_features),
};
static PB_MSG(pm_node_status, node_status);

/* ---- Endpoints ---- */

static const struct pb_field endpoint_address[] = {
	F_STRK(1, "ip"),
	F_MSG(2, "targetRef", &pm_object_reference),
	F_STR(3, "hostname"),
	F_STRK(4, "nodeName"),
};
static PB_MSG(pm_endpoint_address, endpoint_address);

static const struct pb_field endpoint_port[] = {
	F_STR(1, "name"),
	F_I32K(2, "port"),
	F_STR(3, "protocol"),
	F_STRK(4, "appProtocol"),
};
static PB_MSG(pm_endpoint_port, endpoint_port);

static const struct pb_field endpoint_subset[] = {
	F_MSGR(1, "addresses", &pm_endpoint_address),
	F_MSGR(2, "notReadyAddresses", &pm_endpoint_address),
	F_MSGR(3, "ports", &pm_endpoint_port),
};
static PB_MSG(pm_endpoint_subset, endpoint_subset);

static const struct pb_field endpoints[] = {
	F_MSG(1, "metadata", &pm_object_meta),
	F_MSGR(2, "subsets", &pm_endpoint_subset),
};
PB_MSG(pm_endpoints, endpoints);

/* ---- LimitRange ---- */

static const struct pb_field limit_range_item[] = {
	F_STR(1, "type"),
	F_MAPQ(2, "max"),
	F_MAPQ(3, "min"),
	F_MAPQ(4, "default"),
	F_MAPQ(5, "defaultRequest"),
	F_MAPQ(6, "maxLimitRequestRatio"),
};
static PB_MSG(pm_limit_range_item, limit_range_item);

static const struct pb_field limit_range_spec[] = {
	F_MSGR(1, "limits", &pm_limit_range_item),
};
static PB_MSG(pm_limit_range_spec, limit_range_spec);

static const struct pb_field limit_range[] = {
	F_MSG(1, "metadata", &pm_object_meta),
	F_MSG(2, "spec", &pm_limit_range_spec),
};
PB_MSG(pm_limit_range, limit_range);

/* ---- PodTemplate and ReplicationController (not served; their patch metadata is kept) ---- */

static const struct pb_field pod_template[] = {
	F_MSG(1, "metadata", &pm_object_meta),
	F_MSG(2, "template", &pm_pod_template_spec),
};
PB_MSG(pm_pod_template, pod_template);

static const struct pb_field replication_controller_spec[] = {
	F_I32K(1, "replicas"),
	F_MAPS(2, "selector"),
	F_MSG(3, "template", &pm_pod_template_spec),
	F_I32(4, "minReadySeconds"),
};
static PB_MSG(pm_replication_controller_spec, replication_controller_spec);

static const struct pb_field replication_controller_condition[] = {
	F_STRK(1, "type"),
	F_STRK(2, "status"),
	F_TIME(3, "lastTransitionTime"),
	F_STR(4, "reason"),
	F_STR(5, "message"),
};
static PB_MSG(pm_replication_controller_condition, replication_controller_condition);

static const struct pb_field replication_controller_status[] = {
	F_I32K(1, "replicas"),
	F_I32(2, "fullyLabeledReplicas"),
	F_I64(3, "observedGeneration"),
	F_I32(4, "readyReplicas"),
	F_I32(5, "availableReplicas"),
	F_MSGRK(6, "conditions", &pm_replication_controller_condition, "type"),
};
static PB_MSG(pm_replication_controller_status, replication_controller_status);

static const struct pb_field replication_controller[] = {
	F_MSG(1, "metadata", &pm_object_meta),
	F_MSG(2, "spec", &pm_replication_controller_spec),
	F_STATUS(3, &pm_replication_controller_status),
};
PB_MSG(pm_replication_controller, replication_controller);
