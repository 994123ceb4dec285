/* core/v1 volumes and persistent volume claims. */
#include "schema.h"

static const struct pb_field volume[] = {
	F_STRK(1, "name"),
	F_INLINE(2, &pm_volume_source),
};
PB_MSG(pm_volume, volume);

/* Only the in-tree sources a tenant is expected to use; others are skipped. */
static const struct pb_field volume_source[] = {
	F_MSG(1, "hostPath", &pm_host_path),
	F_MSG(2, "emptyDir", &pm_empty_dir),
	F_MSG(6, "secret", &pm_secret_volume),
	F_MSG(10, "persistentVolumeClaim", &pm_pvc_volume),
	F_MSG(16, "downwardAPI", &pm_downward_api_volume),
	F_MSG(19, "configMap", &pm_config_map_volume),
	F_MSG(26, "projected", &pm_projected_volume),
};
PB_MSG(pm_volume_source, volume_source);

static const struct pb_field host_path[] = {
	F_STRK(1, "path"),
	F_STRK(2, "type"),
};
PB_MSG(pm_host_path, host_path);

static const struct pb_field empty_dir[] = {
	F_STR(1, "medium"),
	F_QTY(2, "sizeLimit"),
};
PB_MSG(pm_empty_dir, empty_dir);

static const struct pb_field secret_volume[] = {
	F_STR(1, "secretName"),
	F_MSGR(2, "items", &pm_key_to_path),
	F_I32K(3, "defaultMode"),
	F_BOOLK(4, "optional"),
};
PB_MSG(pm_secret_volume, secret_volume);

static const struct pb_field config_map_volume[] = {
	F_INLINE(1, &pm_local_object_reference),
	F_MSGR(2, "items", &pm_key_to_path),
	F_I32K(3, "defaultMode"),
	F_BOOLK(4, "optional"),
};
PB_MSG(pm_config_map_volume, config_map_volume);

static const struct pb_field key_to_path[] = {
	F_STRK(1, "key"),
	F_STRK(2, "path"),
	F_I32K(3, "mode"),
};
PB_MSG(pm_key_to_path, key_to_path);

static const struct pb_field pvc_volume[] = {
	F_STRK(1, "claimName"),
	F_BOOL(2, "readOnly"),
};
PB_MSG(pm_pvc_volume, pvc_volume);

static const struct pb_field downward_api_volume[] = {
	F_MSGR(1, "items", &pm_downward_api_file),
	F_I32K(2, "defaultMode"),
};
PB_MSG(pm_downward_api_volume, downward_api_volume);

static const struct pb_field downward_api_file[] = {
	F_STRK(1, "path"),
	F_MSG(2, "fieldRef", &pm_object_field_selector),
	F_MSG(3, "resourceFieldRef", &pm_resource_field_selector),
	F_I32K(4, "mode"),
};
PB_MSG(pm_downward_api_file, downward_api_file);

static const struct pb_field projected_volume[] = {
	F_MSGR(1, "sources", &pm_volume_projection),
	F_I32K(2, "defaultMode"),
};
PB_MSG(pm_projected_volume, projected_volume);

static const struct pb_field volume_projection[] = {
	F_MSG(1, "secret", &pm_secret_projection),
	F_MSG(2, "downwardAPI", &pm_downward_api_volume),
	F_MSG(3, "configMap", &pm_config_map_projection),
	F_MSG(4, "serviceAccountToken", &pm_service_account_token_projection),
};
PB_MSG(pm_volume_projection, volume_projection);

static const struct pb_field config_map_projection[] = {
	F_INLINE(1, &pm_local_object_reference),
	F_MSGR(2, "items", &pm_key_to_path),
	F_BOOLK(4, "optional"),
};
PB_MSG(pm_config_map_projection, config_map_projection);

static const struct pb_field secret_projection[] = {
	F_INLINE(1, &pm_local_object_reference),
	F_MSGR(2, "items", &pm_key_to_path),
	F_BOOLK(4, "optional"),
};
PB_MSG(pm_secret_projection, secret_projection);

static const struct pb_field service_account_token_projection[] = {
	F_STR(1, "audience"),
	F_I64K(2, "expirationSeconds"),
	F_STRK(3, "path"),
};
PB_MSG(pm_service_account_token_projection, service_account_token_projection);

static const struct pb_field persistent_volume_claim[] = {
	F_MSG(1, "metadata", &pm_object_meta),
	F_MSG(2, "spec", &pm_pvc_spec),
	F_OPAQUE(3, "status"),
};
PB_MSG(pm_persistent_volume_claim, persistent_volume_claim);

static const struct pb_field pvc_spec[] = {
	F_STRR(1, "accessModes"),
	F_MSG(2, "resources", &pm_volume_resource_requirements),
	F_STR(3, "volumeName"),
	F_MSG(4, "selector", &pm_label_selector),
	F_STRK(5, "storageClassName"),
	F_STRK(6, "volumeMode"),
	F_MSG(7, "dataSource", &pm_typed_local_object_reference),
	F_STRK(9, "volumeAttributesClassName"),
};
PB_MSG(pm_pvc_spec, pvc_spec);

static const struct pb_field volume_resource_requirements[] = {
	F_MAPQ(1, "limits"),
	F_MAPQ(2, "requests"),
};
PB_MSG(pm_volume_resource_requirements, volume_resource_requirements);

static const struct pb_field typed_local_object_reference[] = {
	F_STRK(1, "apiGroup"),
	F_STRK(2, "kind"),
	F_STRK(3, "name"),
};
PB_MSG(pm_typed_local_object_reference, typed_local_object_reference);
