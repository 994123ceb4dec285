/* core/v1 volumes and persistent volume claims. */
#include "ursa/schema.h"

static const struct pb_msg pm_gce_pd, pm_aws_ebs, pm_git_repo, pm_nfs, pm_iscsi, pm_glusterfs, pm_rbd, pm_flex,
	pm_cinder, pm_cephfs, pm_flocker, pm_fc, pm_azure_file, pm_vsphere_volume, pm_quobyte, pm_azure_disk,
	pm_photon_pd, pm_portworx, pm_scale_io, pm_storageos, pm_csi_volume, pm_ephemeral_volume, pm_image_volume,
	pm_downward_api_projection, pm_cluster_trust_bundle_projection, pm_pvc_status, pm_typed_object_reference;

static const struct pb_field volume[] = {
	F_STRK(1, "name"),
	F_INLINE(2, &pm_volume_source),
};
PB_MSG(pm_volume, volume);

/* Every in-tree source of Kubernetes 1.32 (most are refused by pod validation, but they are
 * known fields). */
static const struct pb_field volume_source[] = {
	F_MSG(1, "hostPath", &pm_host_path),
	F_MSG(2, "emptyDir", &pm_empty_dir),
	F_MSG(3, "gcePersistentDisk", &pm_gce_pd),
	F_MSG(4, "awsElasticBlockStore", &pm_aws_ebs),
	F_MSG(5, "gitRepo", &pm_git_repo),
	F_MSG(6, "secret", &pm_secret_volume),
	F_MSG(7, "nfs", &pm_nfs),
	F_MSG(8, "iscsi", &pm_iscsi),
	F_MSG(9, "glusterfs", &pm_glusterfs),
	F_MSG(10, "persistentVolumeClaim", &pm_pvc_volume),
	F_MSG(11, "rbd", &pm_rbd),
	F_MSG(12, "flexVolume", &pm_flex),
	F_MSG(13, "cinder", &pm_cinder),
	F_MSG(14, "cephfs", &pm_cephfs),
	F_MSG(15, "flocker", &pm_flocker),
	F_MSG(16, "downwardAPI", &pm_downward_api_volume),
	F_MSG(17, "fc", &pm_fc),
	F_MSG(18, "azureFile", &pm_azure_file),
	F_MSG(19, "configMap", &pm_config_map_volume),
	F_MSG(20, "vsphereVolume", &pm_vsphere_volume),
	F_MSG(21, "quobyte", &pm_quobyte),
	F_MSG(22, "azureDisk", &pm_azure_disk),
	F_MSG(23, "photonPersistentDisk", &pm_photon_pd),
	F_MSG(24, "portworxVolume", &pm_portworx),
	F_MSG(25, "scaleIO", &pm_scale_io),
	F_MSG(26, "projected", &pm_projected_volume),
	F_MSG(27, "storageos", &pm_storageos),
	F_MSG(28, "csi", &pm_csi_volume),
	F_MSG(29, "ephemeral", &pm_ephemeral_volume),
	F_MSG(30, "image", &pm_image_volume),
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
	F_MSG(2, "downwardAPI", &pm_downward_api_projection),
	F_MSG(3, "configMap", &pm_config_map_projection),
	F_MSG(4, "serviceAccountToken", &pm_service_account_token_projection),
	F_MSG(5, "clusterTrustBundle", &pm_cluster_trust_bundle_projection),
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
	F_STATUS(3, &pm_pvc_status),
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
	F_MSG(8, "dataSourceRef", &pm_typed_object_reference),
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

static const struct pb_field typed_object_reference[] = {
	F_STRK(1, "apiGroup"),
	F_STRK(2, "kind"),
	F_STRK(3, "name"),
	F_STRK(4, "namespace"),
};
static PB_MSG(pm_typed_object_reference, typed_object_reference);

static const struct pb_field pvc_condition[] = {
	F_STRK(1, "type"),
	F_STRK(2, "status"),
	F_TIME(3, "lastProbeTime"),
	F_TIME(4, "lastTransitionTime"),
	F_STR(5, "reason"),
	F_STR(6, "message"),
};
static PB_MSG(pm_pvc_condition, pvc_condition);

static const struct pb_field modify_volume_status[] = {
	F_STR(1, "targetVolumeAttributesClassName"),
	F_STRK(2, "status"),
};
static PB_MSG(pm_modify_volume_status, modify_volume_status);

static const struct pb_field pvc_status[] = {
	F_STR(1, "phase"),
	F_STRR(2, "accessModes"),
	F_MAPQ(3, "capacity"),
	F_MSGRK(4, "conditions", &pm_pvc_condition, "type"),
	F_MAPQ(5, "allocatedResources"),
	F_MAPS(7, "allocatedResourceStatuses"),
	F_STRK(8, "currentVolumeAttributesClassName"),
	F_MSG(9, "modifyVolumeStatus", &pm_modify_volume_status),
};
static PB_MSG(pm_pvc_status, pvc_status);

static const struct pb_field downward_api_projection[] = {
	F_MSGR(1, "items", &pm_downward_api_file),
};
static PB_MSG(pm_downward_api_projection, downward_api_projection);

static const struct pb_field cluster_trust_bundle_projection[] = {
	F_STRK(1, "name"),
	F_STRK(2, "signerName"),
	F_MSG(3, "labelSelector", &pm_label_selector),
	F_STR(4, "path"),
	F_BOOLK(5, "optional"),
};
static PB_MSG(pm_cluster_trust_bundle_projection, cluster_trust_bundle_projection);

/* ---- the other in-tree volume sources ---- */

static const struct pb_field secret_reference[] = {
	F_STR(1, "name"),
	F_STR(2, "namespace"),
};
static PB_MSG(pm_secret_reference, secret_reference);

static const struct pb_field gce_pd[] = {
	F_STR(1, "pdName"),
	F_STR(2, "fsType"),
	F_I32(3, "partition"),
	F_BOOL(4, "readOnly"),
};
static PB_MSG(pm_gce_pd, gce_pd);

static const struct pb_field aws_ebs[] = {
	F_STR(1, "volumeID"),
	F_STR(2, "fsType"),
	F_I32(3, "partition"),
	F_BOOL(4, "readOnly"),
};
static PB_MSG(pm_aws_ebs, aws_ebs);

static const struct pb_field git_repo[] = {
	F_STR(1, "repository"),
	F_STR(2, "revision"),
	F_STR(3, "directory"),
};
static PB_MSG(pm_git_repo, git_repo);

static const struct pb_field nfs[] = {
	F_STR(1, "server"),
	F_STR(2, "path"),
	F_BOOL(3, "readOnly"),
};
static PB_MSG(pm_nfs, nfs);

static const struct pb_field iscsi[] = {
	F_STR(1, "targetPortal"),
	F_STR(2, "iqn"),
	F_I32K(3, "lun"),
	F_STR(4, "iscsiInterface"),
	F_STR(5, "fsType"),
	F_BOOL(6, "readOnly"),
	F_STRR(7, "portals"),
	F_BOOL(8, "chapAuthDiscovery"),
	F_MSG(10, "secretRef", &pm_local_object_reference),
	F_BOOL(11, "chapAuthSession"),
	F_STRK(12, "initiatorName"),
};
static PB_MSG(pm_iscsi, iscsi);

static const struct pb_field iscsi_pv[] = {
	F_STR(1, "targetPortal"),
	F_STR(2, "iqn"),
	F_I32K(3, "lun"),
	F_STR(4, "iscsiInterface"),
	F_STR(5, "fsType"),
	F_BOOL(6, "readOnly"),
	F_STRR(7, "portals"),
	F_BOOL(8, "chapAuthDiscovery"),
	F_MSG(10, "secretRef", &pm_secret_reference),
	F_BOOL(11, "chapAuthSession"),
	F_STRK(12, "initiatorName"),
};
static PB_MSG(pm_iscsi_pv, iscsi_pv);

static const struct pb_field glusterfs[] = {
	F_STR(1, "endpoints"),
	F_STR(2, "path"),
	F_BOOL(3, "readOnly"),
};
static PB_MSG(pm_glusterfs, glusterfs);

static const struct pb_field glusterfs_pv[] = {
	F_STR(1, "endpoints"),
	F_STR(2, "path"),
	F_BOOL(3, "readOnly"),
	F_STRK(4, "endpointsNamespace"),
};
static PB_MSG(pm_glusterfs_pv, glusterfs_pv);

static const struct pb_field rbd[] = {
	F_STRR(1, "monitors"),
	F_STR(2, "image"),
	F_STR(3, "fsType"),
	F_STR(4, "pool"),
	F_STR(5, "user"),
	F_STR(6, "keyring"),
	F_MSG(7, "secretRef", &pm_local_object_reference),
	F_BOOL(8, "readOnly"),
};
static PB_MSG(pm_rbd, rbd);

static const struct pb_field rbd_pv[] = {
	F_STRR(1, "monitors"),
	F_STR(2, "image"),
	F_STR(3, "fsType"),
	F_STR(4, "pool"),
	F_STR(5, "user"),
	F_STR(6, "keyring"),
	F_MSG(7, "secretRef", &pm_secret_reference),
	F_BOOL(8, "readOnly"),
};
static PB_MSG(pm_rbd_pv, rbd_pv);

static const struct pb_field flex[] = {
	F_STR(1, "driver"),
	F_STR(2, "fsType"),
	F_MSG(3, "secretRef", &pm_local_object_reference),
	F_BOOL(4, "readOnly"),
	F_MAPS(5, "options"),
};
static PB_MSG(pm_flex, flex);

static const struct pb_field flex_pv[] = {
	F_STR(1, "driver"),
	F_STR(2, "fsType"),
	F_MSG(3, "secretRef", &pm_secret_reference),
	F_BOOL(4, "readOnly"),
	F_MAPS(5, "options"),
};
static PB_MSG(pm_flex_pv, flex_pv);

static const struct pb_field cinder[] = {
	F_STR(1, "volumeID"),
	F_STR(2, "fsType"),
	F_BOOL(3, "readOnly"),
	F_MSG(4, "secretRef", &pm_local_object_reference),
};
static PB_MSG(pm_cinder, cinder);

static const struct pb_field cinder_pv[] = {
	F_STR(1, "volumeID"),
	F_STR(2, "fsType"),
	F_BOOL(3, "readOnly"),
	F_MSG(4, "secretRef", &pm_secret_reference),
};
static PB_MSG(pm_cinder_pv, cinder_pv);

static const struct pb_field cephfs[] = {
	F_STRR(1, "monitors"),
	F_STR(2, "path"),
	F_STR(3, "user"),
	F_STR(4, "secretFile"),
	F_MSG(5, "secretRef", &pm_local_object_reference),
	F_BOOL(6, "readOnly"),
};
static PB_MSG(pm_cephfs, cephfs);

static const struct pb_field cephfs_pv[] = {
	F_STRR(1, "monitors"),
	F_STR(2, "path"),
	F_STR(3, "user"),
	F_STR(4, "secretFile"),
	F_MSG(5, "secretRef", &pm_secret_reference),
	F_BOOL(6, "readOnly"),
};
static PB_MSG(pm_cephfs_pv, cephfs_pv);

static const struct pb_field flocker[] = {
	F_STR(1, "datasetName"),
	F_STR(2, "datasetUUID"),
};
static PB_MSG(pm_flocker, flocker);

static const struct pb_field fc[] = {
	F_STRR(1, "targetWWNs"),
	F_I32K(2, "lun"),
	F_STR(3, "fsType"),
	F_BOOL(4, "readOnly"),
	F_STRR(5, "wwids"),
};
static PB_MSG(pm_fc, fc);

static const struct pb_field azure_file[] = {
	F_STR(1, "secretName"),
	F_STR(2, "shareName"),
	F_BOOL(3, "readOnly"),
};
static PB_MSG(pm_azure_file, azure_file);

static const struct pb_field azure_file_pv[] = {
	F_STR(1, "secretName"),
	F_STR(2, "shareName"),
	F_BOOL(3, "readOnly"),
	F_STRK(4, "secretNamespace"),
};
static PB_MSG(pm_azure_file_pv, azure_file_pv);

static const struct pb_field vsphere_volume[] = {
	F_STR(1, "volumePath"),
	F_STR(2, "fsType"),
	F_STR(3, "storagePolicyName"),
	F_STR(4, "storagePolicyID"),
};
static PB_MSG(pm_vsphere_volume, vsphere_volume);

static const struct pb_field quobyte[] = {
	F_STR(1, "registry"),
	F_STR(2, "volume"),
	F_BOOL(3, "readOnly"),
	F_STR(4, "user"),
	F_STR(5, "group"),
	F_STR(6, "tenant"),
};
static PB_MSG(pm_quobyte, quobyte);

static const struct pb_field azure_disk[] = {
	F_STR(1, "diskName"),
	F_STR(2, "diskURI"),
	F_STRK(3, "cachingMode"),
	F_STRK(4, "fsType"),
	F_BOOLK(5, "readOnly"),
	F_STRK(6, "kind"),
};
static PB_MSG(pm_azure_disk, azure_disk);

static const struct pb_field photon_pd[] = {
	F_STR(1, "pdID"),
	F_STR(2, "fsType"),
};
static PB_MSG(pm_photon_pd, photon_pd);

static const struct pb_field portworx[] = {
	F_STR(1, "volumeID"),
	F_STR(2, "fsType"),
	F_BOOL(3, "readOnly"),
};
static PB_MSG(pm_portworx, portworx);

static const struct pb_field scale_io[] = {
	F_STR(1, "gateway"),
	F_STR(2, "system"),
	F_MSG(3, "secretRef", &pm_local_object_reference),
	F_BOOL(4, "sslEnabled"),
	F_STR(5, "protectionDomain"),
	F_STR(6, "storagePool"),
	F_STR(7, "storageMode"),
	F_STR(8, "volumeName"),
	F_STR(9, "fsType"),
	F_BOOL(10, "readOnly"),
};
static PB_MSG(pm_scale_io, scale_io);

static const struct pb_field scale_io_pv[] = {
	F_STR(1, "gateway"),
	F_STR(2, "system"),
	F_MSG(3, "secretRef", &pm_secret_reference),
	F_BOOL(4, "sslEnabled"),
	F_STR(5, "protectionDomain"),
	F_STR(6, "storagePool"),
	F_STR(7, "storageMode"),
	F_STR(8, "volumeName"),
	F_STR(9, "fsType"),
	F_BOOL(10, "readOnly"),
};
static PB_MSG(pm_scale_io_pv, scale_io_pv);

static const struct pb_field storageos[] = {
	F_STR(1, "volumeName"),
	F_STR(2, "volumeNamespace"),
	F_STR(3, "fsType"),
	F_BOOL(4, "readOnly"),
	F_MSG(5, "secretRef", &pm_local_object_reference),
};
static PB_MSG(pm_storageos, storageos);

static const struct pb_field storageos_pv[] = {
	F_STR(1, "volumeName"),
	F_STR(2, "volumeNamespace"),
	F_STR(3, "fsType"),
	F_BOOL(4, "readOnly"),
	F_MSG(5, "secretRef", &pm_object_reference),
};
static PB_MSG(pm_storageos_pv, storageos_pv);

static const struct pb_field csi_volume[] = {
	F_STR(1, "driver"),
	F_BOOLK(2, "readOnly"),
	F_STRK(3, "fsType"),
	F_MAPS(4, "volumeAttributes"),
	F_MSG(5, "nodePublishSecretRef", &pm_local_object_reference),
};
static PB_MSG(pm_csi_volume, csi_volume);

static const struct pb_field csi_pv[] = {
	F_STR(1, "driver"),
	F_STR(2, "volumeHandle"),
	F_BOOL(3, "readOnly"),
	F_STR(4, "fsType"),
	F_MAPS(5, "volumeAttributes"),
	F_MSG(6, "controllerPublishSecretRef", &pm_secret_reference),
	F_MSG(7, "nodeStageSecretRef", &pm_secret_reference),
	F_MSG(8, "nodePublishSecretRef", &pm_secret_reference),
	F_MSG(9, "controllerExpandSecretRef", &pm_secret_reference),
	F_MSG(10, "nodeExpandSecretRef", &pm_secret_reference),
};
static PB_MSG(pm_csi_pv, csi_pv);

static const struct pb_field pvc_template[] = {
	F_MSG(1, "metadata", &pm_object_meta),
	F_MSG(2, "spec", &pm_pvc_spec),
};
static PB_MSG(pm_pvc_template, pvc_template);

static const struct pb_field ephemeral_volume[] = {
	F_MSG(1, "volumeClaimTemplate", &pm_pvc_template),
};
static PB_MSG(pm_ephemeral_volume, ephemeral_volume);

static const struct pb_field image_volume[] = {
	F_STR(1, "reference"),
	F_STR(2, "pullPolicy"),
};
static PB_MSG(pm_image_volume, image_volume);

static const struct pb_field local_volume[] = {
	F_STR(1, "path"),
	F_STRK(2, "fsType"),
};
static PB_MSG(pm_local_volume, local_volume);

/* ---- PersistentVolume ---- */

static const struct pb_field persistent_volume_source[] = {
	F_MSG(1, "gcePersistentDisk", &pm_gce_pd),
	F_MSG(2, "awsElasticBlockStore", &pm_aws_ebs),
	F_MSG(3, "hostPath", &pm_host_path),
	F_MSG(4, "glusterfs", &pm_glusterfs_pv),
	F_MSG(5, "nfs", &pm_nfs),
	F_MSG(6, "rbd", &pm_rbd_pv),
	F_MSG(7, "iscsi", &pm_iscsi_pv),
	F_MSG(8, "cinder", &pm_cinder_pv),
	F_MSG(9, "cephfs", &pm_cephfs_pv),
	F_MSG(10, "fc", &pm_fc),
	F_MSG(11, "flocker", &pm_flocker),
	F_MSG(12, "flexVolume", &pm_flex_pv),
	F_MSG(13, "azureFile", &pm_azure_file_pv),
	F_MSG(14, "vsphereVolume", &pm_vsphere_volume),
	F_MSG(15, "quobyte", &pm_quobyte),
	F_MSG(16, "azureDisk", &pm_azure_disk),
	F_MSG(17, "photonPersistentDisk", &pm_photon_pd),
	F_MSG(18, "portworxVolume", &pm_portworx),
	F_MSG(19, "scaleIO", &pm_scale_io_pv),
	F_MSG(20, "local", &pm_local_volume),
	F_MSG(21, "storageos", &pm_storageos_pv),
	F_MSG(22, "csi", &pm_csi_pv),
};
static PB_MSG(pm_persistent_volume_source, persistent_volume_source);

static const struct pb_field volume_node_affinity[] = {
	F_MSG(1, "required", &pm_node_selector),
};
static PB_MSG(pm_volume_node_affinity, volume_node_affinity);

static const struct pb_field pv_spec[] = {
	F_MAPQ(1, "capacity"),
	F_INLINE(2, &pm_persistent_volume_source),
	F_STRR(3, "accessModes"),
	F_MSG(4, "claimRef", &pm_object_reference),
	F_STR(5, "persistentVolumeReclaimPolicy"),
	F_STR(6, "storageClassName"),
	F_STRR(7, "mountOptions"),
	F_STRK(8, "volumeMode"),
	F_MSG(9, "nodeAffinity", &pm_volume_node_affinity),
	F_STRK(10, "volumeAttributesClassName"),
};
static PB_MSG(pm_pv_spec, pv_spec);

static const struct pb_field pv_status[] = {
	F_STR(1, "phase"),
	F_STR(2, "message"),
	F_STR(3, "reason"),
	F_TIME(4, "lastPhaseTransitionTime"),
};
static PB_MSG(pm_pv_status, pv_status);

static const struct pb_field persistent_volume[] = {
	F_MSG(1, "metadata", &pm_object_meta),
	F_MSG(2, "spec", &pm_pv_spec),
	F_STATUS(3, &pm_pv_status),
};
PB_MSG(pm_persistent_volume, persistent_volume);
