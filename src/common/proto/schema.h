/* Field tables for the Kubernetes protobuf messages the decoder knows. Internal to ursa_proto.
 *
 * A message schema is an array of fields {number, JSON name, type, flags, sub-schema}.
 * Field numbers come from the upstream generated.proto files (k8s.io/api and
 * k8s.io/apimachinery as of Kubernetes 1.32, ObjectMeta with the Arktos additions).
 */
#ifndef URSA_PROTO_SCHEMA_H
#define URSA_PROTO_SCHEMA_H
#include <stddef.h>
#include <stdint.h>

enum pb_type {
	PT_STRING,
	PT_BYTES,       /* JSON: base64 string */
	PT_INT32,       /* varint, sign-extended from 64 bits as protobuf int32 is */
	PT_INT64,
	PT_BOOL,
	PT_MSG,         /* JSON object decoded with sub */
	PT_INLINE,      /* Go embedded struct (json:",inline"): sub's fields go into the parent */
	PT_OPAQUE,      /* message whose content is skipped: JSON {} (statuses) */
	PT_QUANTITY,    /* resource.Quantity {string = 1}: JSON string */
	PT_TIME,        /* meta.Time {seconds = 1, nanos = 2}: RFC3339 seconds, null when zero */
	PT_MICROTIME,   /* meta.MicroTime: RFC3339 with microseconds, null when zero */
	PT_INTSTR,      /* intstr.IntOrString {type = 1, intVal = 2, strVal = 3}: number or string */
	PT_MAP_STRING,  /* map<string, string>: repeated entries {key = 1, value = 2} */
	PT_MAP_BYTES,   /* map<string, bytes>: values base64 */
	PT_MAP_QUANTITY,/* map<string, Quantity> (ResourceList) */
};

#define PF_REPEATED 0x1  /* JSON array, one element per occurrence (or per packed varint) */
#define PF_KEEP     0x2  /* emit zero scalars too: Go pointer field or field without omitempty */

struct pb_msg;

struct pb_field {
	uint32_t num;
	const char *name;
	uint8_t type;
	uint8_t flags;
	const struct pb_msg *sub;
};

struct pb_msg {
	const char *name;
	const struct pb_field *fields;
	size_t nfields;
};

#define PB_MSG(var, table) const struct pb_msg var = { #var, table, sizeof(table) / sizeof(table[0]) }

/* Row helpers: F_<type>[K|R](number, "jsonName"[, &sub]). K = keep zero, R = repeated. */
#define F_STR(n, j)      { n, j, PT_STRING, 0, NULL }
#define F_STRK(n, j)     { n, j, PT_STRING, PF_KEEP, NULL }
#define F_STRR(n, j)     { n, j, PT_STRING, PF_REPEATED, NULL }
#define F_BYTES(n, j)    { n, j, PT_BYTES, 0, NULL }
#define F_I32(n, j)      { n, j, PT_INT32, 0, NULL }
#define F_I32K(n, j)     { n, j, PT_INT32, PF_KEEP, NULL }
#define F_I32R(n, j)     { n, j, PT_INT32, PF_REPEATED, NULL }
#define F_I64(n, j)      { n, j, PT_INT64, 0, NULL }
#define F_I64K(n, j)     { n, j, PT_INT64, PF_KEEP, NULL }
#define F_I64R(n, j)     { n, j, PT_INT64, PF_REPEATED, NULL }
#define F_BOOL(n, j)     { n, j, PT_BOOL, 0, NULL }
#define F_BOOLK(n, j)    { n, j, PT_BOOL, PF_KEEP, NULL }
#define F_MSG(n, j, s)   { n, j, PT_MSG, 0, s }
#define F_MSGR(n, j, s)  { n, j, PT_MSG, PF_REPEATED, s }
#define F_INLINE(n, s)   { n, NULL, PT_INLINE, 0, s }
#define F_OPAQUE(n, j)   { n, j, PT_OPAQUE, 0, NULL }
#define F_QTY(n, j)      { n, j, PT_QUANTITY, 0, NULL }
#define F_TIME(n, j)     { n, j, PT_TIME, 0, NULL }
#define F_MTIME(n, j)    { n, j, PT_MICROTIME, 0, NULL }
#define F_INTSTR(n, j)   { n, j, PT_INTSTR, 0, NULL }
#define F_MAPS(n, j)     { n, j, PT_MAP_STRING, 0, NULL }
#define F_MAPB(n, j)     { n, j, PT_MAP_BYTES, 0, NULL }
#define F_MAPQ(n, j)     { n, j, PT_MAP_QUANTITY, 0, NULL }

/* meta/v1 (schema_meta.c) */
extern const struct pb_msg pm_object_meta, pm_owner_reference, pm_label_selector,
	pm_label_selector_requirement;

/* core/v1 pod template pieces (schema_pod.c) */
extern const struct pb_msg pm_pod_template_spec, pm_pod_spec, pm_container, pm_container_port,
	pm_env_var, pm_env_var_source, pm_env_from_source, pm_config_map_env_source,
	pm_secret_env_source, pm_object_field_selector, pm_resource_field_selector,
	pm_config_map_key_selector, pm_secret_key_selector, pm_local_object_reference,
	pm_resource_requirements, pm_resource_claim, pm_volume_mount, pm_probe, pm_probe_handler,
	pm_exec_action, pm_http_get_action, pm_http_header, pm_tcp_socket_action, pm_grpc_action,
	pm_lifecycle, pm_lifecycle_handler, pm_sleep_action, pm_security_context,
	pm_capabilities, pm_se_linux_options, pm_seccomp_profile, pm_pod_security_context,
	pm_sysctl, pm_toleration, pm_affinity, pm_node_affinity, pm_node_selector,
	pm_node_selector_term, pm_node_selector_requirement, pm_preferred_scheduling_term,
	pm_pod_affinity, pm_pod_anti_affinity, pm_pod_affinity_term,
	pm_weighted_pod_affinity_term, pm_topology_spread_constraint, pm_host_alias,
	pm_pod_dns_config, pm_pod_dns_config_option, pm_pod_readiness_gate,
	pm_pod_scheduling_gate, pm_pod_os;

/* core/v1 volumes (schema_volume.c) */
extern const struct pb_msg pm_volume, pm_volume_source, pm_empty_dir, pm_config_map_volume,
	pm_secret_volume, pm_key_to_path, pm_host_path, pm_pvc_volume, pm_downward_api_volume,
	pm_downward_api_file, pm_projected_volume, pm_volume_projection, pm_config_map_projection,
	pm_secret_projection, pm_service_account_token_projection, pm_persistent_volume_claim,
	pm_pvc_spec, pm_volume_resource_requirements, pm_typed_local_object_reference;

/* Top-level kinds: apps/v1 and batch/v1 (schema_workloads.c), core/v1 (schema_core.c),
 * the smaller groups (schema_kinds.c). */
extern const struct pb_msg pm_deployment, pm_replica_set, pm_daemon_set, pm_stateful_set,
	pm_job, pm_cron_job;
extern const struct pb_msg pm_pod, pm_namespace, pm_config_map, pm_secret, pm_service_account,
	pm_service, pm_event, pm_node, pm_binding, pm_resource_quota, pm_object_reference;

/* authentication.k8s.io/v1 request bodies (schema_authn.c) */
extern const struct pb_msg pm_token_request, pm_token_review, pm_self_subject_review;
/* authorization.k8s.io/v1 request bodies (schema_authz.c) */
extern const struct pb_msg pm_self_subject_access_review, pm_subject_access_review, pm_self_subject_rules_review;

/* Top-level kinds, by apiVersion and kind (schema_kinds.c). NULL if unknown. */
const struct pb_msg *pb_kind_schema(const char *api_version, const char *kind);

#endif
