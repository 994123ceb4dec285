/* The one description of every API type the servers know (src/common/schema): for each
 * message its fields {protobuf number, JSON name, type, flags, sub-schema, patch merge key}.
 * Read by the protobuf decoder (ursa_proto), the strategic merge patch engine (ursa_patch),
 * the OpenAPI documents and field validation of the API servers (ursa_apiserver).
 *
 * Field numbers come from the upstream generated.proto files (k8s.io/api and
 * k8s.io/apimachinery as of Kubernetes 1.32, ObjectMeta with the Arktos additions); the
 * Ursa/Arktos-only kinds (Tenant, Network, ResourceManager, TenantPartition) number their fields
 * themselves. Every field of 1.32 is listed, statuses included (F_STATUS), since field validation
 * prunes what a table lacks; list merge keys are Kubernetes' patchMergeKey tags.
 * Tables are static, read-only data; nothing here allocates.
 */
#ifndef URSA_SCHEMA_H
#define URSA_SCHEMA_H
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
#define PF_SET      0x4  /* repeated scalar merged as a set by strategic merge patch (finalizers) */
#define PF_NODECODE 0x8  /* the protobuf decoder keeps the value as {} (statuses clients never send) */

struct pb_msg;

struct pb_field {
	uint32_t num;
	const char *name;
	uint8_t type;
	uint8_t flags;
	const struct pb_msg *sub;
	const char *merge_key; /* repeated PT_MSG merged by this key by strategic merge patch, or NULL */
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
#define F_MSGRK(n, j, s, k) { n, j, PT_MSG, PF_REPEATED, s, k }  /* merged by key k */
#define F_STRSET(n, j)   { n, j, PT_STRING, PF_REPEATED | PF_SET, NULL }
/* A kind's status: a full message (for patch metadata, OpenAPI and field validation) that the
 * protobuf decoder keeps as {} as clients never send one. */
#define F_STATUS(n, s)   { n, "status", PT_MSG, PF_NODECODE, s }
#define F_INLINE(n, s)   { n, NULL, PT_INLINE, 0, s }
#define F_OPAQUE(n, j)   { n, j, PT_OPAQUE, 0, NULL }
#define F_QTY(n, j)      { n, j, PT_QUANTITY, 0, NULL }
#define F_TIME(n, j)     { n, j, PT_TIME, 0, NULL }
#define F_MTIME(n, j)    { n, j, PT_MICROTIME, 0, NULL }
#define F_INTSTR(n, j)   { n, j, PT_INTSTR, 0, NULL }
#define F_MAPS(n, j)     { n, j, PT_MAP_STRING, 0, NULL }
#define F_MAPB(n, j)     { n, j, PT_MAP_BYTES, 0, NULL }
#define F_MAPQ(n, j)     { n, j, PT_MAP_QUANTITY, 0, NULL }

/* meta/v1 (meta.c); pm_condition is metav1.Condition. */
extern const struct pb_msg pm_object_meta, pm_owner_reference, pm_label_selector,
	pm_label_selector_requirement, pm_managed_fields_entry, pm_condition;

/* core/v1 pod template pieces (pod.c) */
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
	pm_pod_scheduling_gate, pm_pod_os, pm_ephemeral_container, pm_volume_device,
	pm_container_resize_policy, pm_pod_resource_claim, pm_app_armor_profile,
	pm_windows_security_context, pm_pod_status;

/* core/v1 volumes (volume.c) */
extern const struct pb_msg pm_volume, pm_volume_source, pm_empty_dir, pm_config_map_volume,
	pm_secret_volume, pm_key_to_path, pm_host_path, pm_pvc_volume, pm_downward_api_volume,
	pm_downward_api_file, pm_projected_volume, pm_volume_projection, pm_config_map_projection,
	pm_secret_projection, pm_service_account_token_projection, pm_persistent_volume_claim,
	pm_pvc_spec, pm_volume_resource_requirements, pm_typed_local_object_reference,
	pm_persistent_volume;

/* Top-level kinds: apps/v1 and batch/v1 (workloads.c), core/v1 (core.c), the Ursa/Arktos
 * kinds (arktos.c), the smaller groups (kinds.c, static there). */
extern const struct pb_msg pm_deployment, pm_replica_set, pm_daemon_set, pm_stateful_set,
	pm_job, pm_cron_job, pm_controller_revision;
extern const struct pb_msg pm_pod, pm_namespace, pm_config_map, pm_secret, pm_service_account,
	pm_service, pm_event, pm_node, pm_binding, pm_resource_quota, pm_object_reference,
	pm_endpoints, pm_limit_range, pm_pod_template, pm_replication_controller;
extern const struct pb_msg pm_tenant, pm_network, pm_resource_manager, pm_tenant_partition;
/* apiextensions.k8s.io/v1 (apiextensions.c) */
extern const struct pb_msg pm_custom_resource_definition;

/* authentication.k8s.io/v1 request bodies (authn.c) */
extern const struct pb_msg pm_token_request, pm_token_review, pm_self_subject_review;
/* authorization.k8s.io/v1 request bodies (authz.c) */
extern const struct pb_msg pm_self_subject_access_review, pm_subject_access_review, pm_self_subject_rules_review;

/* Every top-level kind with a schema (kinds.c), in no particular order. RoleBinding and
 * ClusterRoleBinding share one msg; LocalSubjectAccessReview and SubjectAccessReview too. */
struct pb_kind {
	const char *api_version;
	const char *kind;
	const struct pb_msg *msg;
};
extern const struct pb_kind pb_kinds[];
extern const size_t pb_nkinds;

/* Top-level kinds, by apiVersion and kind (kinds.c). NULL if unknown (or an argument is NULL). */
const struct pb_msg *pb_kind_schema(const char *api_version, const char *kind);
/* The same by kind alone, for callers that know no apiVersion (strategic merge patch): the first
 * entry of that kind; kinds are unique across the groups served. NULL if unknown. */
const struct pb_msg *pb_kind_schema_any(const char *kind);

/* Field of m whose JSON name is name (len bytes), looking through inlined (PT_INLINE)
 * messages; NULL if none (or m is NULL). */
const struct pb_field *pb_field_by_name(const struct pb_msg *m, const char *name, size_t len);

/* Descriptions (docs.c), for the OpenAPI documents (kubectl explain): one table keyed by
 * message name (pb_msg.name, "pm_pod_spec") and JSON field name, field NULL for the message
 * itself, so a shared message (ObjectMeta, PodSpec) is described once for every kind. A field
 * of an inlined message is described under the message that declares it. */
struct schema_doc {
	const char *msg, *field, *text;
};
extern const struct schema_doc schema_docs[];
extern const size_t schema_ndocs;
/* The description of m (field NULL) or of its field named field; NULL if none is written (or m
 * is NULL). Static text. */
const char *schema_doc(const struct pb_msg *m, const char *field);

/* Field validation (prune.c). schema_prune removes from obj (a JSON object of type msg, the
 * root of a kind: its apiVersion and kind are known) every member msg does not describe,
 * descending into PT_MSG/PT_INLINE members (and arrays of them); values of other types (maps,
 * opaque statuses, scalars) are not looked into. The removed members' paths in Kubernetes'
 * notation ("spec.template.spec.containers[0].bar") are appended to ret_paths (a JSON array;
 * may be NULL), at most SCHEMA_PRUNE_MAX_PATHS of them. Nothing deeper than
 * SCHEMA_PRUNE_MAX_DEPTH levels is looked at. Returns how many members were removed.
 * schema_json_duplicates scans JSON text for repeated keys in one object and appends their
 * paths (same notation, same cap) to ret_paths; returns how many; stops quietly at the first
 * syntax error or past the depth cap (the text is meant to be parsed by jansson as well). */
#define SCHEMA_PRUNE_MAX_PATHS 100
#define SCHEMA_PRUNE_MAX_DEPTH 64
struct json_t;
size_t schema_prune(struct json_t *obj, const struct pb_msg *msg, struct json_t *ret_paths);
size_t schema_json_duplicates(const char *text, size_t len, struct json_t *ret_paths);

#endif /* URSA_SCHEMA_H */
