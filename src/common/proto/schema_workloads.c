/* apps/v1 and batch/v1 workload kinds. Statuses are kept as {} (clients do not send them). */
#include "schema.h"

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
	F_OPAQUE(3, "status"),
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
	F_OPAQUE(3, "status"),
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
	F_OPAQUE(3, "status"),
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
	F_OPAQUE(3, "status"),
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
	F_OPAQUE(3, "status"),
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
	F_OPAQUE(3, "status"),
};
PB_MSG(pm_cron_job, cron_job);
