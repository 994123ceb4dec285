/* coordination, scheduling, rbac and policy kinds, and the table of all top-level kinds. */
#include <string.h>
#include "schema.h"

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

static const struct pb_field pdb_status[] = {
	F_I64(1, "observedGeneration"),
	F_I32K(3, "disruptionsAllowed"),
	F_I32K(4, "currentHealthy"),
	F_I32K(5, "desiredHealthy"),
	F_I32K(6, "expectedPods"),
};
static PB_MSG(pm_pdb_status, pdb_status);

static const struct pb_field pdb[] = {
	F_MSG(1, "metadata", &pm_object_meta),
	F_MSG(2, "spec", &pm_pdb_spec),
	F_MSG(3, "status", &pm_pdb_status),
};
static PB_MSG(pm_pdb, pdb);

static const struct {
	const char *api_version;
	const char *kind;
	const struct pb_msg *msg;
} kinds[] = {
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
	{ "apps/v1", "Deployment", &pm_deployment },
	{ "apps/v1", "ReplicaSet", &pm_replica_set },
	{ "apps/v1", "DaemonSet", &pm_daemon_set },
	{ "apps/v1", "StatefulSet", &pm_stateful_set },
	{ "batch/v1", "Job", &pm_job },
	{ "batch/v1", "CronJob", &pm_cron_job },
	{ "coordination.k8s.io/v1", "Lease", &pm_lease },
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

const struct pb_msg *pb_kind_schema(const char *api_version, const char *kind)
{
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
		if (!strcmp(kinds[i].api_version, api_version) && !strcmp(kinds[i].kind, kind))
			return kinds[i].msg;
	return NULL;
}
