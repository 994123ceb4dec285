/* apps/v1 and batch/v1 workload kinds. Statuses are kept as {} (clients do not send them). */
#include "ursa/schema.h"

static const struct pb_msg pm_deployment_status, pm_replica_set_status, pm_daemon_set_status,
	pm_stateful_set_status, pm_job_status, pm_cron_job_status;

/* Conditions of the apps/v1 kinds other than Deployment: {type, status, lastTransitionTime,
 * reason, message}. */
static const struct pb_field apps_condition[] = {
	F_STRK(1, "type"),
	F_STRK(2, "status"),
	F_TIME(3, "lastTransitionTime"),
	F_STR(4, "reason"),
	F_STR(5, "message"),
};
static PB_MSG(pm_apps_condition, apps_condition);

static const struct pb_field rolling_update_deployment[] = {
	F_INTSTR(1, "maxUnavailable"),
	F_INTSTR(2, "maxSurge"),
};
static PB_MSG(pm_rolling_update_deployment, rolling_update_deployment);

static const struct pb_field deployment_strategy[] = {
	F_STR(1, "type"),
	F_MSG(2, "rollingUpdate", &pm_rolling_update_deployment),
};
static PB_MSG(pm_deployment_strategy, deployment_strategy);

static const struct pb_field deployment_spec[] = {
	F_I32K(1, "replicas"),
	F_MSG(2, "selector", &pm_label_selector),
	F_MSG(3, "template", &pm_pod_template_spec),
	F_MSG(4, "strategy", &pm_deployment_strategy),
	F_I32(5, "minReadySeconds"),
	F_I32K(6, "revisionHistoryLimit"),
	F_BOOL(7, "paused"),
	F_I32K(9, "progressDeadlineSeconds"),
};
static PB_MSG(pm_deployment_spec, deployment_spec);

static const struct pb_field deployment[] = {
	F_MSG(1, "metadata", &pm_object_meta),
	F_MSG(2, "spec", &pm_deployment_spec),
	F_STATUS(3, &pm_deployment_status),
};
PB_MSG(pm_deployment, deployment);

static const struct pb_field replica_set_spec[] = {
	F_I32K(1, "replicas"),
	F_MSG(2, "selector", &pm_label_selector),
	F_MSG(3, "template", &pm_pod_template_spec),
	F_I32(4, "minReadySeconds"),
};
static PB_MSG(pm_replica_set_spec, replica_set_spec);

static const struct pb_field replica_set[] = {
	F_MSG(1, "metadata", &pm_object_meta),
	F_MSG(2, "spec", &pm_replica_set_spec),
	F_STATUS(3, &pm_replica_set_status),
};
PB_MSG(pm_replica_set, replica_set);

static const struct pb_field rolling_update_daemon_set[] = {
	F_INTSTR(1, "maxUnavailable"),
	F_INTSTR(2, "maxSurge"),
};
static PB_MSG(pm_rolling_update_daemon_set, rolling_update_daemon_set);

static const struct pb_field daemon_set_update_strategy[] = {
	F_STR(1, "type"),
	F_MSG(2, "rollingUpdate", &pm_rolling_update_daemon_set),
};
static PB_MSG(pm_daemon_set_update_strategy, daemon_set_update_strategy);

static const struct pb_field daemon_set_spec[] = {
	F_MSG(1, "selector", &pm_label_selector),
	F_MSG(2, "template", &pm_pod_template_spec),
	F_MSG(3, "updateStrategy", &pm_daemon_set_update_strategy),
	F_I32(4, "minReadySeconds"),
	F_I32K(6, "revisionHistoryLimit"),
};
static PB_MSG(pm_daemon_set_spec, daemon_set_spec);

static const struct pb_field daemon_set[] = {
	F_MSG(1, "metadata", &pm_object_meta),
	F_MSG(2, "spec", &pm_daemon_set_spec),
	F_STATUS(3, &pm_daemon_set_status),
};
PB_MSG(pm_daemon_set, daemon_set);

static const struct pb_field rolling_update_stateful_set[] = {
	F_I32K(1, "partition"),
	F_INTSTR(2, "maxUnavailable"),
};
static PB_MSG(pm_rolling_update_stateful_set, rolling_update_stateful_set);

static const struct pb_field stateful_set_update_strategy[] = {
	F_STR(1, "type"),
	F_MSG(2, "rollingUpdate", &pm_rolling_update_stateful_set),
};
static PB_MSG(pm_stateful_set_update_strategy, stateful_set_update_strategy);

static const struct pb_field stateful_set_pvc_retention[] = {
	F_STR(1, "whenDeleted"),
	F_STR(2, "whenScaled"),
};
static PB_MSG(pm_stateful_set_pvc_retention, stateful_set_pvc_retention);

static const struct pb_field stateful_set_ordinals[] = {
	F_I32K(1, "start"),
};
static PB_MSG(pm_stateful_set_ordinals, stateful_set_ordinals);

static const struct pb_field stateful_set_spec[] = {
	F_I32K(1, "replicas"),
	F_MSG(2, "selector", &pm_label_selector),
	F_MSG(3, "template", &pm_pod_template_spec),
	F_MSGR(4, "volumeClaimTemplates", &pm_persistent_volume_claim),
	F_STR(5, "serviceName"),
	F_STR(6, "podManagementPolicy"),
	F_MSG(7, "updateStrategy", &pm_stateful_set_update_strategy),
	F_I32K(8, "revisionHistoryLimit"),
	F_I32(9, "minReadySeconds"),
	F_MSG(10, "persistentVolumeClaimRetentionPolicy", &pm_stateful_set_pvc_retention),
	F_MSG(11, "ordinals", &pm_stateful_set_ordinals),
};
static PB_MSG(pm_stateful_set_spec, stateful_set_spec);

static const struct pb_field stateful_set[] = {
	F_MSG(1, "metadata", &pm_object_meta),
	F_MSG(2, "spec", &pm_stateful_set_spec),
	F_STATUS(3, &pm_stateful_set_status),
};
PB_MSG(pm_stateful_set, stateful_set);

static const struct pb_field pod_failure_exit_codes[] = {
	F_STRK(1, "containerName"),
	F_STRK(2, "operator"),
	F_I32R(3, "values"),
};
static PB_MSG(pm_pod_failure_exit_codes, pod_failure_exit_codes);

static const struct pb_field pod_failure_conditions[] = {
	F_STRK(1, "type"),
	F_STRK(2, "status"),
};
static PB_MSG(pm_pod_failure_conditions, pod_failure_conditions);

static const struct pb_field pod_failure_rule[] = {
	F_STRK(1, "action"),
	F_MSG(2, "onExitCodes", &pm_pod_failure_exit_codes),
	F_MSGR(3, "onPodConditions", &pm_pod_failure_conditions),
};
static PB_MSG(pm_pod_failure_rule, pod_failure_rule);

static const struct pb_field pod_failure_policy[] = {
	F_MSGR(1, "rules", &pm_pod_failure_rule),
};
static PB_MSG(pm_pod_failure_policy, pod_failure_policy);

static const struct pb_field success_policy_rule[] = {
	F_STRK(1, "succeededIndexes"),
	F_I32K(2, "succeededCount"),
};
static PB_MSG(pm_success_policy_rule, success_policy_rule);

static const struct pb_field success_policy[] = {
	F_MSGR(1, "rules", &pm_success_policy_rule),
};
static PB_MSG(pm_success_policy, success_policy);

/* Every scalar of JobSpec is a Go pointer, hence kept when zero. */
static const struct pb_field job_spec[] = {
	F_I32K(1, "parallelism"),
	F_I32K(2, "completions"),
	F_I64K(3, "activeDeadlineSeconds"),
	F_MSG(4, "selector", &pm_label_selector),
	F_BOOLK(5, "manualSelector"),
	F_MSG(6, "template", &pm_pod_template_spec),
	F_I32K(7, "backoffLimit"),
	F_I32K(8, "ttlSecondsAfterFinished"),
	F_STRK(9, "completionMode"),
	F_BOOLK(10, "suspend"),
	F_MSG(11, "podFailurePolicy", &pm_pod_failure_policy),
	F_I32K(12, "backoffLimitPerIndex"),
	F_I32K(13, "maxFailedIndexes"),
	F_STRK(14, "podReplacementPolicy"),
	F_STRK(15, "managedBy"),
	F_MSG(16, "successPolicy", &pm_success_policy),
};
static PB_MSG(pm_job_spec, job_spec);

static const struct pb_field job[] = {
	F_MSG(1, "metadata", &pm_object_meta),
	F_MSG(2, "spec", &pm_job_spec),
	F_STATUS(3, &pm_job_status),
};
PB_MSG(pm_job, job);

static const struct pb_field job_template_spec[] = {
	F_MSG(1, "metadata", &pm_object_meta),
	F_MSG(2, "spec", &pm_job_spec),
};
static PB_MSG(pm_job_template_spec, job_template_spec);

static const struct pb_field cron_job_spec[] = {
	F_STRK(1, "schedule"),
	F_I64K(2, "startingDeadlineSeconds"),
	F_STR(3, "concurrencyPolicy"),
	F_BOOLK(4, "suspend"),
	F_MSG(5, "jobTemplate", &pm_job_template_spec),
	F_I32K(6, "successfulJobsHistoryLimit"),
	F_I32K(7, "failedJobsHistoryLimit"),
	F_STRK(8, "timeZone"),
};
static PB_MSG(pm_cron_job_spec, cron_job_spec);

static const struct pb_field cron_job[] = {
	F_MSG(1, "metadata", &pm_object_meta),
	F_MSG(2, "spec", &pm_cron_job_spec),
	F_STATUS(3, &pm_cron_job_status),
};
PB_MSG(pm_cron_job, cron_job);

/* ---- statuses ---- */

static const struct pb_field deployment_condition[] = {
	F_STRK(1, "type"),
	F_STRK(2, "status"),
	F_STR(4, "reason"),
	F_STR(5, "message"),
	F_TIME(6, "lastUpdateTime"),
	F_TIME(7, "lastTransitionTime"),
};
static PB_MSG(pm_deployment_condition, deployment_condition);

static const struct pb_field deployment_status[] = {
	F_I64(1, "observedGeneration"),
	F_I32(2, "replicas"),
	F_I32(3, "updatedReplicas"),
	F_I32(4, "availableReplicas"),
	F_I32(5, "unavailableReplicas"),
	F_MSGRK(6, "conditions", &pm_deployment_condition, "type"),
	F_I32(7, "readyReplicas"),
	F_I32K(8, "collisionCount"),
};
static PB_MSG(pm_deployment_status, deployment_status);

static const struct pb_field replica_set_status[] = {
	F_I32K(1, "replicas"),
	F_I32(2, "fullyLabeledReplicas"),
	F_I64(3, "observedGeneration"),
	F_I32(4, "readyReplicas"),
	F_I32(5, "availableReplicas"),
	F_MSGRK(6, "conditions", &pm_apps_condition, "type"),
};
static PB_MSG(pm_replica_set_status, replica_set_status);

static const struct pb_field daemon_set_status[] = {
	F_I32K(1, "currentNumberScheduled"),
	F_I32K(2, "numberMisscheduled"),
	F_I32K(3, "desiredNumberScheduled"),
	F_I32K(4, "numberReady"),
	F_I64(5, "observedGeneration"),
	F_I32(6, "updatedNumberScheduled"),
	F_I32(7, "numberAvailable"),
	F_I32(8, "numberUnavailable"),
	F_I32K(9, "collisionCount"),
	F_MSGRK(10, "conditions", &pm_apps_condition, "type"),
};
static PB_MSG(pm_daemon_set_status, daemon_set_status);

static const struct pb_field stateful_set_status[] = {
	F_I64(1, "observedGeneration"),
	F_I32K(2, "replicas"),
	F_I32(3, "readyReplicas"),
	F_I32(4, "currentReplicas"),
	F_I32(5, "updatedReplicas"),
	F_STR(6, "currentRevision"),
	F_STR(7, "updateRevision"),
	F_I32K(9, "collisionCount"),
	F_MSGRK(10, "conditions", &pm_apps_condition, "type"),
	F_I32K(11, "availableReplicas"),
};
static PB_MSG(pm_stateful_set_status, stateful_set_status);

static const struct pb_field job_condition[] = {
	F_STRK(1, "type"),
	F_STRK(2, "status"),
	F_TIME(3, "lastProbeTime"),
	F_TIME(4, "lastTransitionTime"),
	F_STR(5, "reason"),
	F_STR(6, "message"),
};
static PB_MSG(pm_job_condition, job_condition);

static const struct pb_field uncounted_terminated_pods[] = {
	F_STRR(1, "succeeded"),
	F_STRR(2, "failed"),
};
static PB_MSG(pm_uncounted_terminated_pods, uncounted_terminated_pods);

static const struct pb_field job_status[] = {
	F_MSGRK(1, "conditions", &pm_job_condition, "type"),
	F_TIME(2, "startTime"),
	F_TIME(3, "completionTime"),
	F_I32(4, "active"),
	F_I32(5, "succeeded"),
	F_I32(6, "failed"),
	F_STR(7, "completedIndexes"),
	F_MSG(8, "uncountedTerminatedPods", &pm_uncounted_terminated_pods),
	F_I32K(9, "ready"),
	F_STRK(10, "failedIndexes"),
	F_I32K(11, "terminating"),
};
static PB_MSG(pm_job_status, job_status);

static const struct pb_field cron_job_status[] = {
	F_MSGR(1, "active", &pm_object_reference),
	F_TIME(4, "lastScheduleTime"),
	F_TIME(5, "lastSuccessfulTime"),
};
static PB_MSG(pm_cron_job_status, cron_job_status);

/* ---- ControllerRevision: data is a RawExtension (any JSON object) ---- */

static const struct pb_field controller_revision[] = {
	F_MSG(1, "metadata", &pm_object_meta),
	F_OPAQUE(2, "data"),
	F_I64K(3, "revision"),
};
PB_MSG(pm_controller_revision, controller_revision);
