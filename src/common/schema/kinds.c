/* coordination, scheduling, rbac, policy, discovery and autoscaling kinds, and the table of all
 * top-level kinds. */
#include <string.h>
#include "ursa/schema.h"

static const struct pb_field lease_spec[] = {
	F_STRK(1, "holderIdentity"),
	F_I32K(2, "leaseDurationSeconds"),
	F_MTIME(3, "acquireTime"),
	F_MTIME(4, "renewTime"),
	F_I32K(5, "leaseTransitions"),
	F_STRK(6, "strategy"),
	F_STRK(7, "preferredHolder"),
};
static PB_MSG(pm_lease_spec, lease_spec);

static const struct pb_field lease[] = {
	F_MSG(1, "metadata", &pm_object_meta),
	F_MSG(2, "spec", &pm_lease_spec),
};
static PB_MSG(pm_lease, lease);

/* metrics.k8s.io/v1beta1 (read-only, answered from the kubelets: apiserver/podmetrics.c); the
 * window is a duration string in JSON ("1.5s"). */
static const struct pb_field container_metrics[] = {
	F_STRK(1, "name"),
	F_MAPQ(2, "usage"),
};
static PB_MSG(pm_container_metrics, container_metrics);

static const struct pb_field pod_metrics[] = {
	F_MSG(1, "metadata", &pm_object_meta),
	F_TIME(2, "timestamp"),
	F_STR(3, "window"),
	F_MSGR(4, "containers", &pm_container_metrics),
};
static PB_MSG(pm_pod_metrics, pod_metrics);

static const struct pb_field node_metrics[] = {
	F_MSG(1, "metadata", &pm_object_meta),
	F_TIME(2, "timestamp"),
	F_STR(3, "window"),
	F_MAPQ(4, "usage"),
};
static PB_MSG(pm_node_metrics, node_metrics);

static const struct pb_field priority_class[] = {
	F_MSG(1, "metadata", &pm_object_meta),
	F_I32K(2, "value"),
	F_BOOL(3, "globalDefault"),
	F_STR(4, "description"),
	F_STRK(5, "preemptionPolicy"),
};
static PB_MSG(pm_priority_class, priority_class);

static const struct pb_field policy_rule[] = {
	F_STRR(1, "verbs"),
	F_STRR(2, "apiGroups"),
	F_STRR(3, "resources"),
	F_STRR(4, "resourceNames"),
	F_STRR(5, "nonResourceURLs"),
};
static PB_MSG(pm_policy_rule, policy_rule);

static const struct pb_field aggregation_rule[] = {
	F_MSGR(1, "clusterRoleSelectors", &pm_label_selector),
};
static PB_MSG(pm_aggregation_rule, aggregation_rule);

static const struct pb_field role[] = {
	F_MSG(1, "metadata", &pm_object_meta),
	F_MSGR(2, "rules", &pm_policy_rule),
};
static PB_MSG(pm_role, role);

static const struct pb_field cluster_role[] = {
	F_MSG(1, "metadata", &pm_object_meta),
	F_MSGR(2, "rules", &pm_policy_rule),
	F_MSG(3, "aggregationRule", &pm_aggregation_rule),
};
static PB_MSG(pm_cluster_role, cluster_role);

static const struct pb_field subject[] = {
	F_STRK(1, "kind"),
	F_STR(2, "apiGroup"),
	F_STRK(3, "name"),
	F_STR(4, "namespace"),
};
static PB_MSG(pm_subject, subject);

static const struct pb_field role_ref[] = {
	F_STRK(1, "apiGroup"),
	F_STRK(2, "kind"),
	F_STRK(3, "name"),
};
static PB_MSG(pm_role_ref, role_ref);

/* RoleBinding and ClusterRoleBinding share one wire layout. */
static const struct pb_field role_binding[] = {
	F_MSG(1, "metadata", &pm_object_meta),
	F_MSGR(2, "subjects", &pm_subject),
	F_MSG(3, "roleRef", &pm_role_ref),
};
static PB_MSG(pm_role_binding, role_binding);

static const struct pb_field pdb_spec[] = {
	F_INTSTR(1, "minAvailable"),
	F_MSG(2, "selector", &pm_label_selector),
	F_INTSTR(3, "maxUnavailable"),
	F_STRK(4, "unhealthyPodEvictionPolicy"),
};
static PB_MSG(pm_pdb_spec, pdb_spec);

/* disruptedPods is a map of pod name to time: kept as a free-form object. */
static const struct pb_field pdb_status[] = {
	F_I64(1, "observedGeneration"),
	F_OPAQUE(2, "disruptedPods"),
	F_I32K(3, "disruptionsAllowed"),
	F_I32K(4, "currentHealthy"),
	F_I32K(5, "desiredHealthy"),
	F_I32K(6, "expectedPods"),
	F_MSGRK(7, "conditions", &pm_condition, "type"),
};
static PB_MSG(pm_pdb_status, pdb_status);

static const struct pb_field pdb[] = {
	F_MSG(1, "metadata", &pm_object_meta),
	F_MSG(2, "spec", &pm_pdb_spec),
	F_MSG(3, "status", &pm_pdb_status),
};
static PB_MSG(pm_pdb, pdb);

/* ---- discovery.k8s.io/v1 EndpointSlice ---- */

static const struct pb_field endpoint_conditions[] = {
	F_BOOLK(1, "ready"),
	F_BOOLK(2, "serving"),
	F_BOOLK(3, "terminating"),
};
static PB_MSG(pm_endpoint_conditions, endpoint_conditions);

static const struct pb_field for_zone[] = {
	F_STRK(1, "name"),
};
static PB_MSG(pm_for_zone, for_zone);

static const struct pb_field endpoint_hints[] = {
	F_MSGR(1, "forZones", &pm_for_zone),
};
static PB_MSG(pm_endpoint_hints, endpoint_hints);

static const struct pb_field slice_endpoint[] = {
	F_STRR(1, "addresses"),
	F_MSG(2, "conditions", &pm_endpoint_conditions),
	F_STRK(3, "hostname"),
	F_MSG(4, "targetRef", &pm_object_reference),
	F_MAPS(5, "deprecatedTopology"),
	F_STRK(6, "nodeName"),
	F_STRK(7, "zone"),
	F_MSG(8, "hints", &pm_endpoint_hints),
};
static PB_MSG(pm_slice_endpoint, slice_endpoint);

static const struct pb_field slice_port[] = {
	F_STRK(1, "name"),
	F_STRK(2, "protocol"),
	F_I32K(3, "port"),
	F_STRK(4, "appProtocol"),
};
static PB_MSG(pm_slice_port, slice_port);

static const struct pb_field endpoint_slice[] = {
	F_MSG(1, "metadata", &pm_object_meta),
	F_MSGR(2, "endpoints", &pm_slice_endpoint),
	F_MSGR(3, "ports", &pm_slice_port),
	F_STRK(4, "addressType"),
};
static PB_MSG(pm_endpoint_slice, endpoint_slice);

/* ---- autoscaling/v2 HorizontalPodAutoscaler ---- */

static const struct pb_field cross_version_object_reference[] = {
	F_STRK(1, "kind"),
	F_STRK(2, "name"),
	F_STR(3, "apiVersion"),
};
static PB_MSG(pm_cross_version_object_reference, cross_version_object_reference);

static const struct pb_field metric_identifier[] = {
	F_STRK(1, "name"),
	F_MSG(2, "selector", &pm_label_selector),
};
static PB_MSG(pm_metric_identifier, metric_identifier);

static const struct pb_field metric_target[] = {
	F_STRK(1, "type"),
	F_QTY(2, "value"),
	F_QTY(3, "averageValue"),
	F_I32K(4, "averageUtilization"),
};
static PB_MSG(pm_metric_target, metric_target);

static const struct pb_field metric_value_status[] = {
	F_QTY(1, "value"),
	F_QTY(2, "averageValue"),
	F_I32K(3, "averageUtilization"),
};
static PB_MSG(pm_metric_value_status, metric_value_status);

static const struct pb_field object_metric_source[] = {
	F_MSG(1, "describedObject", &pm_cross_version_object_reference),
	F_MSG(2, "target", &pm_metric_target),
	F_MSG(3, "metric", &pm_metric_identifier),
};
static PB_MSG(pm_object_metric_source, object_metric_source);

static const struct pb_field pods_metric_source[] = {
	F_MSG(1, "metric", &pm_metric_identifier),
	F_MSG(2, "target", &pm_metric_target),
};
static PB_MSG(pm_pods_metric_source, pods_metric_source);

static const struct pb_field resource_metric_source[] = {
	F_STRK(1, "name"),
	F_MSG(2, "target", &pm_metric_target),
};
static PB_MSG(pm_resource_metric_source, resource_metric_source);

static const struct pb_field container_resource_metric_source[] = {
	F_STRK(1, "name"),
	F_MSG(2, "target", &pm_metric_target),
	F_STRK(3, "container"),
};
static PB_MSG(pm_container_resource_metric_source, container_resource_metric_source);

static const struct pb_field external_metric_source[] = {
	F_MSG(1, "metric", &pm_metric_identifier),
	F_MSG(2, "target", &pm_metric_target),
};
static PB_MSG(pm_external_metric_source, external_metric_source);

static const struct pb_field metric_spec[] = {
	F_STRK(1, "type"),
	F_MSG(2, "object", &pm_object_metric_source),
	F_MSG(3, "pods", &pm_pods_metric_source),
	F_MSG(4, "resource", &pm_resource_metric_source),
	F_MSG(5, "external", &pm_external_metric_source),
	F_MSG(7, "containerResource", &pm_container_resource_metric_source),
};
static PB_MSG(pm_metric_spec, metric_spec);

static const struct pb_field hpa_scaling_policy[] = {
	F_STRK(1, "type"),
	F_I32K(2, "value"),
	F_I32K(3, "periodSeconds"),
};
static PB_MSG(pm_hpa_scaling_policy, hpa_scaling_policy);

static const struct pb_field hpa_scaling_rules[] = {
	F_STRK(1, "selectPolicy"),
	F_MSGR(2, "policies", &pm_hpa_scaling_policy),
	F_I32K(3, "stabilizationWindowSeconds"),
};
static PB_MSG(pm_hpa_scaling_rules, hpa_scaling_rules);

static const struct pb_field hpa_behavior[] = {
	F_MSG(1, "scaleUp", &pm_hpa_scaling_rules),
	F_MSG(2, "scaleDown", &pm_hpa_scaling_rules),
};
static PB_MSG(pm_hpa_behavior, hpa_behavior);

static const struct pb_field hpa_spec[] = {
	F_MSG(1, "scaleTargetRef", &pm_cross_version_object_reference),
	F_I32K(2, "minReplicas"),
	F_I32K(3, "maxReplicas"),
	F_MSGR(4, "metrics", &pm_metric_spec),
	F_MSG(5, "behavior", &pm_hpa_behavior),
};
static PB_MSG(pm_hpa_spec, hpa_spec);

static const struct pb_field object_metric_status[] = {
	F_MSG(1, "metric", &pm_metric_identifier),
	F_MSG(2, "current", &pm_metric_value_status),
	F_MSG(3, "describedObject", &pm_cross_version_object_reference),
};
static PB_MSG(pm_object_metric_status, object_metric_status);

static const struct pb_field pods_metric_status[] = {
	F_MSG(1, "metric", &pm_metric_identifier),
	F_MSG(2, "current", &pm_metric_value_status),
};
static PB_MSG(pm_pods_metric_status, pods_metric_status);

static const struct pb_field resource_metric_status[] = {
	F_STRK(1, "name"),
	F_MSG(2, "current", &pm_metric_value_status),
};
static PB_MSG(pm_resource_metric_status, resource_metric_status);

static const struct pb_field container_resource_metric_status[] = {
	F_STRK(1, "name"),
	F_MSG(2, "current", &pm_metric_value_status),
	F_STRK(3, "container"),
};
static PB_MSG(pm_container_resource_metric_status, container_resource_metric_status);

static const struct pb_field external_metric_status[] = {
	F_MSG(1, "metric", &pm_metric_identifier),
	F_MSG(2, "current", &pm_metric_value_status),
};
static PB_MSG(pm_external_metric_status, external_metric_status);

static const struct pb_field metric_status[] = {
	F_STRK(1, "type"),
	F_MSG(2, "object", &pm_object_metric_status),
	F_MSG(3, "pods", &pm_pods_metric_status),
	F_MSG(4, "resource", &pm_resource_metric_status),
	F_MSG(5, "external", &pm_external_metric_status),
	F_MSG(7, "containerResource", &pm_container_resource_metric_status),
};
static PB_MSG(pm_metric_status, metric_status);

static const struct pb_field hpa_condition[] = {
	F_STRK(1, "type"),
	F_STRK(2, "status"),
	F_TIME(3, "lastTransitionTime"),
	F_STR(4, "reason"),
	F_STR(5, "message"),
};
static PB_MSG(pm_hpa_condition, hpa_condition);

static const struct pb_field hpa_status[] = {
	F_I64K(1, "observedGeneration"),
	F_TIME(2, "lastScaleTime"),
	F_I32(3, "currentReplicas"),
	F_I32K(4, "desiredReplicas"),
	F_MSGR(5, "currentMetrics", &pm_metric_status),
	F_MSGRK(6, "conditions", &pm_hpa_condition, "type"),
};
static PB_MSG(pm_hpa_status, hpa_status);

static const struct pb_field hpa[] = {
	F_MSG(1, "metadata", &pm_object_meta),
	F_MSG(2, "spec", &pm_hpa_spec),
	F_STATUS(3, &pm_hpa_status),
};
static PB_MSG(pm_hpa, hpa);

const struct pb_kind pb_kinds[] = {
	{ "v1", "Pod", &pm_pod },
	{ "v1", "Namespace", &pm_namespace },
	{ "v1", "ConfigMap", &pm_config_map },
	{ "v1", "Secret", &pm_secret },
	{ "v1", "ServiceAccount", &pm_service_account },
	{ "v1", "Service", &pm_service },
	{ "v1", "Event", &pm_event },
	{ "v1", "Node", &pm_node },
	{ "v1", "Binding", &pm_binding },
	{ "v1", "ResourceQuota", &pm_resource_quota },
	{ "v1", "PersistentVolumeClaim", &pm_persistent_volume_claim },
	{ "v1", "PersistentVolume", &pm_persistent_volume },
	{ "v1", "Endpoints", &pm_endpoints },
	{ "v1", "LimitRange", &pm_limit_range },
	{ "v1", "PodTemplate", &pm_pod_template },
	{ "v1", "ReplicationController", &pm_replication_controller },
	{ "v1", "Tenant", &pm_tenant },
	{ "discovery.k8s.io/v1", "EndpointSlice", &pm_endpoint_slice },
	{ "arktos.futurewei.com/v1", "Network", &pm_network },
	{ "ursa.io/v1", "ResourceManager", &pm_resource_manager },
	{ "ursa.io/v1", "TenantPartition", &pm_tenant_partition },
	{ "apiextensions.k8s.io/v1", "CustomResourceDefinition", &pm_custom_resource_definition },
	{ "apps/v1", "ControllerRevision", &pm_controller_revision },
	{ "autoscaling/v2", "HorizontalPodAutoscaler", &pm_hpa },
	{ "apps/v1", "Deployment", &pm_deployment },
	{ "apps/v1", "ReplicaSet", &pm_replica_set },
	{ "apps/v1", "DaemonSet", &pm_daemon_set },
	{ "apps/v1", "StatefulSet", &pm_stateful_set },
	{ "batch/v1", "Job", &pm_job },
	{ "batch/v1", "CronJob", &pm_cron_job },
	{ "coordination.k8s.io/v1", "Lease", &pm_lease },
	{ "metrics.k8s.io/v1beta1", "PodMetrics", &pm_pod_metrics },
	{ "metrics.k8s.io/v1beta1", "NodeMetrics", &pm_node_metrics },
	{ "scheduling.k8s.io/v1", "PriorityClass", &pm_priority_class },
	{ "rbac.authorization.k8s.io/v1", "Role", &pm_role },
	{ "rbac.authorization.k8s.io/v1", "ClusterRole", &pm_cluster_role },
	{ "rbac.authorization.k8s.io/v1", "RoleBinding", &pm_role_binding },
	{ "rbac.authorization.k8s.io/v1", "ClusterRoleBinding", &pm_role_binding },
	{ "policy/v1", "PodDisruptionBudget", &pm_pdb },
	{ "authentication.k8s.io/v1", "TokenRequest", &pm_token_request },
	{ "authentication.k8s.io/v1", "TokenReview", &pm_token_review },
	{ "authentication.k8s.io/v1", "SelfSubjectReview", &pm_self_subject_review },
	{ "authentication.k8s.io/v1beta1", "SelfSubjectReview", &pm_self_subject_review },
	{ "authorization.k8s.io/v1", "SelfSubjectAccessReview", &pm_self_subject_access_review },
	{ "authorization.k8s.io/v1", "SubjectAccessReview", &pm_subject_access_review },
	{ "authorization.k8s.io/v1", "LocalSubjectAccessReview", &pm_subject_access_review },
	{ "authorization.k8s.io/v1", "SelfSubjectRulesReview", &pm_self_subject_rules_review },
};

const size_t pb_nkinds = sizeof(pb_kinds) / sizeof(pb_kinds[0]);

const struct pb_msg *pb_kind_schema(const char *api_version, const char *kind)
{
	if (!api_version || !kind)
		return NULL;
	for (size_t i = 0; i < pb_nkinds; i++)
		if (!strcmp(pb_kinds[i].api_version, api_version) && !strcmp(pb_kinds[i].kind, kind))
			return pb_kinds[i].msg;
	return NULL;
}

const struct pb_msg *pb_kind_schema_any(const char *kind)
{
	if (!kind)
		return NULL;
	for (size_t i = 0; i < pb_nkinds; i++)
		if (!strcmp(pb_kinds[i].kind, kind))
			return pb_kinds[i].msg;
	return NULL;
}

const struct pb_field *pb_field_by_name(const struct pb_msg *m, const char *name, size_t len)
{
	if (!m)
		return NULL;
	for (size_t i = 0; i < m->nfields; i++) {
		const struct pb_field *f = &m->fields[i], *in;
		if (f->type == PT_INLINE) {
			if ((in = pb_field_by_name(f->sub, name, len)))
				return in;
		} else if (f->name && strlen(f->name) == len && !memcmp(f->name, name, len)) {
			return f;
		}
	}
	return NULL;
}
