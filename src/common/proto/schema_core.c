/* core/v1 top-level kinds other than the pod template pieces. */
#include "schema.h"

static const struct pb_field pod[] = {
	F_MSG(1, "metadata", &pm_object_meta),
	F_MSG(2, "spec", &pm_pod_spec),
	F_OPAQUE(3, "status"),
};
PB_MSG(pm_pod, pod);

static const struct pb_field namespace_spec[] = {
	F_STRR(1, "finalizers"),
};
static PB_MSG(pm_namespace_spec, namespace_spec);

static const struct pb_field namespace_status[] = {
	F_STR(1, "phase"),
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
	F_MSGR(2, "secrets", &pm_object_reference),
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
	F_MSGR(1, "ports", &pm_service_port),
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

/* loadBalancer is a Go struct, so the JSON always carries "loadBalancer": {}. */
static const struct pb_field service_status[] = {
	F_OPAQUE(1, "loadBalancer"),
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
	F_STRR(7, "podCIDRs"),
};
static PB_MSG(pm_node_spec, node_spec);

static const struct pb_field node[] = {
	F_MSG(1, "metadata", &pm_object_meta),
	F_MSG(2, "spec", &pm_node_spec),
	F_OPAQUE(3, "status"),
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
	F_OPAQUE(3, "status"),
};
PB_MSG(pm_resource_quota, resource_quota);
