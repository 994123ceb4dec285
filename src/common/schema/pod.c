/* core/v1 PodTemplateSpec, PodSpec, Container and what they hold (volumes: schema_volume.c). */
#include "ursa/schema.h"

static const struct pb_field pod_template_spec[] = {
	F_MSG(1, "metadata", &pm_object_meta),
	F_MSG(2, "spec", &pm_pod_spec),
};
PB_MSG(pm_pod_template_spec, pod_template_spec);

static const struct pb_field pod_spec[] = {
	F_MSGRK(1, "volumes", &pm_volume, "name"),
	F_MSGRK(2, "containers", &pm_container, "name"),
	F_STR(3, "restartPolicy"),
	F_I64K(4, "terminationGracePeriodSeconds"),
	F_I64K(5, "activeDeadlineSeconds"),
	F_STR(6, "dnsPolicy"),
	F_MAPS(7, "nodeSelector"),
	F_STR(8, "serviceAccountName"),
	F_STR(9, "serviceAccount"),
	F_STR(10, "nodeName"),
	F_BOOL(11, "hostNetwork"),
	F_BOOL(12, "hostPID"),
	F_BOOL(13, "hostIPC"),
	F_MSG(14, "securityContext", &pm_pod_security_context),
	F_MSGRK(15, "imagePullSecrets", &pm_local_object_reference, "name"),
	F_STR(16, "hostname"),
	F_STR(17, "subdomain"),
	F_MSG(18, "affinity", &pm_affinity),
	F_STR(19, "schedulerName"),
	F_MSGRK(20, "initContainers", &pm_container, "name"),
	F_BOOLK(21, "automountServiceAccountToken"),
	F_MSGR(22, "tolerations", &pm_toleration),
	F_MSGRK(23, "hostAliases", &pm_host_alias, "ip"),
	F_STR(24, "priorityClassName"),
	F_I32K(25, "priority"),
	F_MSG(26, "dnsConfig", &pm_pod_dns_config),
	F_BOOLK(27, "shareProcessNamespace"),
	F_MSGR(28, "readinessGates", &pm_pod_readiness_gate),
	F_STRK(29, "runtimeClassName"),
	F_BOOLK(30, "enableServiceLinks"),
	F_STRK(31, "preemptionPolicy"),
	F_MAPQ(32, "overhead"),
	F_MSGRK(33, "topologySpreadConstraints", &pm_topology_spread_constraint, "topologyKey"),
	F_MSGRK(34, "ephemeralContainers", &pm_ephemeral_container, "name"),
	F_BOOLK(35, "setHostnameAsFQDN"),
	F_MSG(36, "os", &pm_pod_os),
	F_BOOLK(37, "hostUsers"),
	F_MSGRK(38, "schedulingGates", &pm_pod_scheduling_gate, "name"),
	F_MSGRK(39, "resourceClaims", &pm_pod_resource_claim, "name"),
	F_MSG(40, "resources", &pm_resource_requirements),
};
PB_MSG(pm_pod_spec, pod_spec);

static const struct pb_field container[] = {
	F_STRK(1, "name"),
	F_STR(2, "image"),
	F_STRR(3, "command"),
	F_STRR(4, "args"),
	F_STR(5, "workingDir"),
	F_MSGRK(6, "ports", &pm_container_port, "containerPort"),
	F_MSGRK(7, "env", &pm_env_var, "name"),
	F_MSG(8, "resources", &pm_resource_requirements),
	F_MSGRK(9, "volumeMounts", &pm_volume_mount, "mountPath"),
	F_MSG(10, "livenessProbe", &pm_probe),
	F_MSG(11, "readinessProbe", &pm_probe),
	F_MSG(12, "lifecycle", &pm_lifecycle),
	F_STR(13, "terminationMessagePath"),
	F_STR(14, "imagePullPolicy"),
	F_MSG(15, "securityContext", &pm_security_context),
	F_BOOL(16, "stdin"),
	F_BOOL(17, "stdinOnce"),
	F_BOOL(18, "tty"),
	F_MSGR(19, "envFrom", &pm_env_from_source),
	F_STR(20, "terminationMessagePolicy"),
	F_MSGRK(21, "volumeDevices", &pm_volume_device, "devicePath"),
	F_MSG(22, "startupProbe", &pm_probe),
	F_MSGR(23, "resizePolicy", &pm_container_resize_policy),
	F_STRK(24, "restartPolicy"),
};
PB_MSG(pm_container, container);

/* EphemeralContainerCommon has Container's fields and numbers, inlined. */
static const struct pb_field ephemeral_container[] = {
	F_INLINE(1, &pm_container),
	F_STR(2, "targetContainerName"),
};
PB_MSG(pm_ephemeral_container, ephemeral_container);

static const struct pb_field volume_device[] = {
	F_STRK(1, "name"),
	F_STRK(2, "devicePath"),
};
PB_MSG(pm_volume_device, volume_device);

static const struct pb_field container_resize_policy[] = {
	F_STRK(1, "resourceName"),
	F_STRK(2, "restartPolicy"),
};
PB_MSG(pm_container_resize_policy, container_resize_policy);

static const struct pb_field pod_resource_claim[] = {
	F_STRK(1, "name"),
	F_STRK(3, "resourceClaimName"),
	F_STRK(4, "resourceClaimTemplateName"),
};
PB_MSG(pm_pod_resource_claim, pod_resource_claim);

static const struct pb_field container_port[] = {
	F_STR(1, "name"),
	F_I32(2, "hostPort"),
	F_I32K(3, "containerPort"),
	F_STR(4, "protocol"),
	F_STR(5, "hostIP"),
};
PB_MSG(pm_container_port, container_port);

static const struct pb_field env_var[] = {
	F_STRK(1, "name"),
	F_STR(2, "value"),
	F_MSG(3, "valueFrom", &pm_env_var_source),
};
PB_MSG(pm_env_var, env_var);

static const struct pb_field env_var_source[] = {
	F_MSG(1, "fieldRef", &pm_object_field_selector),
	F_MSG(2, "resourceFieldRef", &pm_resource_field_selector),
	F_MSG(3, "configMapKeyRef", &pm_config_map_key_selector),
	F_MSG(4, "secretKeyRef", &pm_secret_key_selector),
};
PB_MSG(pm_env_var_source, env_var_source);

static const struct pb_field env_from_source[] = {
	F_STR(1, "prefix"),
	F_MSG(2, "configMapRef", &pm_config_map_env_source),
	F_MSG(3, "secretRef", &pm_secret_env_source),
};
PB_MSG(pm_env_from_source, env_from_source);

static const struct pb_field config_map_env_source[] = {
	F_INLINE(1, &pm_local_object_reference),
	F_BOOLK(2, "optional"),
};
PB_MSG(pm_config_map_env_source, config_map_env_source);

static const struct pb_field secret_env_source[] = {
	F_INLINE(1, &pm_local_object_reference),
	F_BOOLK(2, "optional"),
};
PB_MSG(pm_secret_env_source, secret_env_source);

static const struct pb_field object_field_selector[] = {
	F_STR(1, "apiVersion"),
	F_STRK(2, "fieldPath"),
};
PB_MSG(pm_object_field_selector, object_field_selector);

static const struct pb_field resource_field_selector[] = {
	F_STR(1, "containerName"),
	F_STRK(2, "resource"),
	F_QTY(3, "divisor"),
};
PB_MSG(pm_resource_field_selector, resource_field_selector);

static const struct pb_field config_map_key_selector[] = {
	F_INLINE(1, &pm_local_object_reference),
	F_STRK(2, "key"),
	F_BOOLK(3, "optional"),
};
PB_MSG(pm_config_map_key_selector, config_map_key_selector);

static const struct pb_field secret_key_selector[] = {
	F_INLINE(1, &pm_local_object_reference),
	F_STRK(2, "key"),
	F_BOOLK(3, "optional"),
};
PB_MSG(pm_secret_key_selector, secret_key_selector);

static const struct pb_field local_object_reference[] = {
	F_STR(1, "name"),
};
PB_MSG(pm_local_object_reference, local_object_reference);

static const struct pb_field resource_requirements[] = {
	F_MAPQ(1, "limits"),
	F_MAPQ(2, "requests"),
	F_MSGR(3, "claims", &pm_resource_claim),
};
PB_MSG(pm_resource_requirements, resource_requirements);

static const struct pb_field resource_claim[] = {
	F_STRK(1, "name"),
	F_STR(2, "request"),
};
PB_MSG(pm_resource_claim, resource_claim);

static const struct pb_field volume_mount[] = {
	F_STRK(1, "name"),
	F_BOOL(2, "readOnly"),
	F_STRK(3, "mountPath"),
	F_STR(4, "subPath"),
	F_STRK(5, "mountPropagation"),
	F_STR(6, "subPathExpr"),
	F_STRK(7, "recursiveReadOnly"),
};
PB_MSG(pm_volume_mount, volume_mount);

static const struct pb_field probe[] = {
	F_INLINE(1, &pm_probe_handler),
	F_I32(2, "initialDelaySeconds"),
	F_I32(3, "timeoutSeconds"),
	F_I32(4, "periodSeconds"),
	F_I32(5, "successThreshold"),
	F_I32(6, "failureThreshold"),
	F_I64K(7, "terminationGracePeriodSeconds"),
};
PB_MSG(pm_probe, probe);

static const struct pb_field probe_handler[] = {
	F_MSG(1, "exec", &pm_exec_action),
	F_MSG(2, "httpGet", &pm_http_get_action),
	F_MSG(3, "tcpSocket", &pm_tcp_socket_action),
	F_MSG(4, "grpc", &pm_grpc_action),
};
PB_MSG(pm_probe_handler, probe_handler);

static const struct pb_field exec_action[] = {
	F_STRR(1, "command"),
};
PB_MSG(pm_exec_action, exec_action);

static const struct pb_field http_get_action[] = {
	F_STR(1, "path"),
	F_INTSTR(2, "port"),
	F_STR(3, "host"),
	F_STR(4, "scheme"),
	F_MSGR(5, "httpHeaders", &pm_http_header),
};
PB_MSG(pm_http_get_action, http_get_action);

static const struct pb_field http_header[] = {
	F_STRK(1, "name"),
	F_STRK(2, "value"),
};
PB_MSG(pm_http_header, http_header);

static const struct pb_field tcp_socket_action[] = {
	F_INTSTR(1, "port"),
	F_STR(2, "host"),
};
PB_MSG(pm_tcp_socket_action, tcp_socket_action);

static const struct pb_field grpc_action[] = {
	F_I32K(1, "port"),
	F_STRK(2, "service"),
};
PB_MSG(pm_grpc_action, grpc_action);

static const struct pb_field lifecycle[] = {
	F_MSG(1, "postStart", &pm_lifecycle_handler),
	F_MSG(2, "preStop", &pm_lifecycle_handler),
};
PB_MSG(pm_lifecycle, lifecycle);

static const struct pb_field lifecycle_handler[] = {
	F_MSG(1, "exec", &pm_exec_action),
	F_MSG(2, "httpGet", &pm_http_get_action),
	F_MSG(3, "tcpSocket", &pm_tcp_socket_action),
	F_MSG(4, "sleep", &pm_sleep_action),
};
PB_MSG(pm_lifecycle_handler, lifecycle_handler);

static const struct pb_field sleep_action[] = {
	F_I64K(1, "seconds"),
};
PB_MSG(pm_sleep_action, sleep_action);

static const struct pb_field security_context[] = {
	F_MSG(1, "capabilities", &pm_capabilities),
	F_BOOLK(2, "privileged"),
	F_MSG(3, "seLinuxOptions", &pm_se_linux_options),
	F_I64K(4, "runAsUser"),
	F_BOOLK(5, "runAsNonRoot"),
	F_BOOLK(6, "readOnlyRootFilesystem"),
	F_BOOLK(7, "allowPrivilegeEscalation"),
	F_I64K(8, "runAsGroup"),
	F_STRK(9, "procMount"),
	F_MSG(10, "windowsOptions", &pm_windows_security_context),
	F_MSG(11, "seccompProfile", &pm_seccomp_profile),
	F_MSG(12, "appArmorProfile", &pm_app_armor_profile),
};
PB_MSG(pm_security_context, security_context);

static const struct pb_field capabilities[] = {
	F_STRR(1, "add"),
	F_STRR(2, "drop"),
};
PB_MSG(pm_capabilities, capabilities);

static const struct pb_field se_linux_options[] = {
	F_STR(1, "user"),
	F_STR(2, "role"),
	F_STR(3, "type"),
	F_STR(4, "level"),
};
PB_MSG(pm_se_linux_options, se_linux_options);

static const struct pb_field seccomp_profile[] = {
	F_STRK(1, "type"),
	F_STRK(2, "localhostProfile"),
};
PB_MSG(pm_seccomp_profile, seccomp_profile);

static const struct pb_field app_armor_profile[] = {
	F_STRK(1, "type"),
	F_STRK(2, "localhostProfile"),
};
PB_MSG(pm_app_armor_profile, app_armor_profile);

static const struct pb_field windows_security_context[] = {
	F_STRK(1, "gmsaCredentialSpecName"),
	F_STRK(2, "gmsaCredentialSpec"),
	F_STRK(3, "runAsUserName"),
	F_BOOLK(4, "hostProcess"),
};
PB_MSG(pm_windows_security_context, windows_security_context);

static const struct pb_field pod_security_context[] = {
	F_MSG(1, "seLinuxOptions", &pm_se_linux_options),
	F_I64K(2, "runAsUser"),
	F_BOOLK(3, "runAsNonRoot"),
	F_I64R(4, "supplementalGroups"),
	F_I64K(5, "fsGroup"),
	F_I64K(6, "runAsGroup"),
	F_MSGR(7, "sysctls", &pm_sysctl),
	F_MSG(8, "windowsOptions", &pm_windows_security_context),
	F_STRK(9, "fsGroupChangePolicy"),
	F_MSG(10, "seccompProfile", &pm_seccomp_profile),
	F_MSG(11, "appArmorProfile", &pm_app_armor_profile),
	F_STRK(12, "supplementalGroupsPolicy"),
	F_STRK(13, "seLinuxChangePolicy"),
};
PB_MSG(pm_pod_security_context, pod_security_context);

static const struct pb_field sysctl[] = {
	F_STRK(1, "name"),
	F_STRK(2, "value"),
};
PB_MSG(pm_sysctl, sysctl);

static const struct pb_field toleration[] = {
	F_STR(1, "key"),
	F_STR(2, "operator"),
	F_STR(3, "value"),
	F_STR(4, "effect"),
	F_I64K(5, "tolerationSeconds"),
};
PB_MSG(pm_toleration, toleration);

static const struct pb_field affinity[] = {
	F_MSG(1, "nodeAffinity", &pm_node_affinity),
	F_MSG(2, "podAffinity", &pm_pod_affinity),
	F_MSG(3, "podAntiAffinity", &pm_pod_anti_affinity),
};
PB_MSG(pm_affinity, affinity);

static const struct pb_field node_affinity[] = {
	F_MSG(1, "requiredDuringSchedulingIgnoredDuringExecution", &pm_node_selector),
	F_MSGR(2, "preferredDuringSchedulingIgnoredDuringExecution", &pm_preferred_scheduling_term),
};
PB_MSG(pm_node_affinity, node_affinity);

static const struct pb_field node_selector[] = {
	F_MSGR(1, "nodeSelectorTerms", &pm_node_selector_term),
};
PB_MSG(pm_node_selector, node_selector);

static const struct pb_field node_selector_term[] = {
	F_MSGR(1, "matchExpressions", &pm_node_selector_requirement),
	F_MSGR(2, "matchFields", &pm_node_selector_requirement),
};
PB_MSG(pm_node_selector_term, node_selector_term);

static const struct pb_field node_selector_requirement[] = {
	F_STRK(1, "key"),
	F_STRK(2, "operator"),
	F_STRR(3, "values"),
};
PB_MSG(pm_node_selector_requirement, node_selector_requirement);

static const struct pb_field preferred_scheduling_term[] = {
	F_I32K(1, "weight"),
	F_MSG(2, "preference", &pm_node_selector_term),
};
PB_MSG(pm_preferred_scheduling_term, preferred_scheduling_term);

static const struct pb_field pod_affinity[] = {
	F_MSGR(1, "requiredDuringSchedulingIgnoredDuringExecution", &pm_pod_affinity_term),
	F_MSGR(2, "preferredDuringSchedulingIgnoredDuringExecution", &pm_weighted_pod_affinity_term),
};
PB_MSG(pm_pod_affinity, pod_affinity);

static const struct pb_field pod_anti_affinity[] = {
	F_MSGR(1, "requiredDuringSchedulingIgnoredDuringExecution", &pm_pod_affinity_term),
	F_MSGR(2, "preferredDuringSchedulingIgnoredDuringExecution", &pm_weighted_pod_affinity_term),
};
PB_MSG(pm_pod_anti_affinity, pod_anti_affinity);

static const struct pb_field pod_affinity_term[] = {
	F_MSG(1, "labelSelector", &pm_label_selector),
	F_STRR(2, "namespaces"),
	F_STRK(3, "topologyKey"),
	F_MSG(4, "namespaceSelector", &pm_label_selector),
	F_STRR(5, "matchLabelKeys"),
	F_STRR(6, "mismatchLabelKeys"),
};
PB_MSG(pm_pod_affinity_term, pod_affinity_term);

static const struct pb_field weighted_pod_affinity_term[] = {
	F_I32K(1, "weight"),
	F_MSG(2, "podAffinityTerm", &pm_pod_affinity_term),
};
PB_MSG(pm_weighted_pod_affinity_term, weighted_pod_affinity_term);

static const struct pb_field topology_spread_constraint[] = {
	F_I32K(1, "maxSkew"),
	F_STRK(2, "topologyKey"),
	F_STRK(3, "whenUnsatisfiable"),
	F_MSG(4, "labelSelector", &pm_label_selector),
	F_I32K(5, "minDomains"),
	F_STRK(6, "nodeAffinityPolicy"),
	F_STRK(7, "nodeTaintsPolicy"),
	F_STRR(8, "matchLabelKeys"),
};
PB_MSG(pm_topology_spread_constraint, topology_spread_constraint);

static const struct pb_field host_alias[] = {
	F_STRK(1, "ip"),
	F_STRR(2, "hostnames"),
};
PB_MSG(pm_host_alias, host_alias);

static const struct pb_field pod_dns_config[] = {
	F_STRR(1, "nameservers"),
	F_STRR(2, "searches"),
	F_MSGR(3, "options", &pm_pod_dns_config_option),
};
PB_MSG(pm_pod_dns_config, pod_dns_config);

static const struct pb_field pod_dns_config_option[] = {
	F_STR(1, "name"),
	F_STRK(2, "value"),
};
PB_MSG(pm_pod_dns_config_option, pod_dns_config_option);

static const struct pb_field pod_readiness_gate[] = {
	F_STRK(1, "conditionType"),
};
PB_MSG(pm_pod_readiness_gate, pod_readiness_gate);

static const struct pb_field pod_scheduling_gate[] = {
	F_STRK(1, "name"),
};
PB_MSG(pm_pod_scheduling_gate, pod_scheduling_gate);

static const struct pb_field pod_os[] = {
	F_STRK(1, "name"),
};
PB_MSG(pm_pod_os, pod_os);

/* ---- status (kept as {} by the protobuf decoder) ---- */

static const struct pb_field pod_condition[] = {
	F_STRK(1, "type"),
	F_STRK(2, "status"),
	F_TIME(3, "lastProbeTime"),
	F_TIME(4, "lastTransitionTime"),
	F_STR(5, "reason"),
	F_STR(6, "message"),
};
static PB_MSG(pm_pod_condition, pod_condition);

static const struct pb_field pod_ip[] = {
	F_STR(1, "ip"),
};
static PB_MSG(pm_pod_ip, pod_ip);

static const struct pb_field container_state_waiting[] = {
	F_STR(1, "reason"),
	F_STR(2, "message"),
};
static PB_MSG(pm_container_state_waiting, container_state_waiting);

static const struct pb_field container_state_running[] = {
	F_TIME(1, "startedAt"),
};
static PB_MSG(pm_container_state_running, container_state_running);

static const struct pb_field container_state_terminated[] = {
	F_I32K(1, "exitCode"),
	F_I32(2, "signal"),
	F_STR(3, "reason"),
	F_STR(4, "message"),
	F_TIME(5, "startedAt"),
	F_TIME(6, "finishedAt"),
	F_STR(7, "containerID"),
};
static PB_MSG(pm_container_state_terminated, container_state_terminated);

static const struct pb_field container_state[] = {
	F_MSG(1, "waiting", &pm_container_state_waiting),
	F_MSG(2, "running", &pm_container_state_running),
	F_MSG(3, "terminated", &pm_container_state_terminated),
};
static PB_MSG(pm_container_state, container_state);

static const struct pb_field volume_mount_status[] = {
	F_STRK(1, "name"),
	F_STRK(2, "mountPath"),
	F_BOOL(3, "readOnly"),
	F_STRK(4, "recursiveReadOnly"),
};
static PB_MSG(pm_volume_mount_status, volume_mount_status);

static const struct pb_field linux_container_user[] = {
	F_I64K(1, "uid"),
	F_I64K(2, "gid"),
	F_I64R(3, "supplementalGroups"),
};
static PB_MSG(pm_linux_container_user, linux_container_user);

static const struct pb_field container_user[] = {
	F_MSG(1, "linux", &pm_linux_container_user),
};
static PB_MSG(pm_container_user, container_user);

static const struct pb_field resource_health[] = {
	F_STRK(1, "resourceID"),
	F_STR(2, "health"),
};
static PB_MSG(pm_resource_health, resource_health);

static const struct pb_field resource_status[] = {
	F_STRK(1, "name"),
	F_MSGR(2, "resources", &pm_resource_health),
};
static PB_MSG(pm_resource_status, resource_status);

static const struct pb_field container_status[] = {
	F_STRK(1, "name"),
	F_MSG(2, "state", &pm_container_state),
	F_MSG(3, "lastState", &pm_container_state),
	F_BOOLK(4, "ready"),
	F_I32K(5, "restartCount"),
	F_STRK(6, "image"),
	F_STRK(7, "imageID"),
	F_STR(8, "containerID"),
	F_BOOLK(9, "started"),
	F_MAPQ(10, "allocatedResources"),
	F_MSG(11, "resources", &pm_resource_requirements),
	F_MSGRK(12, "volumeMounts", &pm_volume_mount_status, "mountPath"),
	F_MSG(13, "user", &pm_container_user),
	F_MSGRK(14, "allocatedResourcesStatus", &pm_resource_status, "name"),
};
static PB_MSG(pm_container_status, container_status);

static const struct pb_field pod_resource_claim_status[] = {
	F_STRK(1, "name"),
	F_STRK(2, "resourceClaimName"),
};
static PB_MSG(pm_pod_resource_claim_status, pod_resource_claim_status);

static const struct pb_field pod_status[] = {
	F_STR(1, "phase"),
	F_MSGRK(2, "conditions", &pm_pod_condition, "type"),
	F_STR(3, "message"),
	F_STR(4, "reason"),
	F_STR(5, "hostIP"),
	F_STR(6, "podIP"),
	F_TIME(7, "startTime"),
	F_MSGR(8, "containerStatuses", &pm_container_status),
	F_STR(9, "qosClass"),
	F_MSGR(10, "initContainerStatuses", &pm_container_status),
	F_STR(11, "nominatedNodeName"),
	F_MSGRK(12, "podIPs", &pm_pod_ip, "ip"),
	F_MSGR(13, "ephemeralContainerStatuses", &pm_container_status),
	F_STR(14, "resize"),
	F_MSGRK(15, "resourceClaimStatuses", &pm_pod_resource_claim_status, "name"),
	F_MSGRK(16, "hostIPs", &pm_pod_ip, "ip"),
};
PB_MSG(pm_pod_status, pod_status);
