/* The kinds only Ursa (Arktos) has: v1 Tenant, arktos.futurewei.com/v1 Network, ursa.io/v1
 * ResourceManager and TenantPartition. Their field numbers are ours (no upstream .proto); the
 * fields are what their validation in src/common/kinds (tenant.c, network.c, region.c) accepts
 * and what the servers write into their statuses. */
#include "ursa/schema.h"

/* spec.quota and status.quota of a tenant: {hard} and {hard, used}, resource lists. */
static const struct pb_field tenant_quota[] = {
	F_MAPQ(1, "hard"),
	F_MAPQ(2, "used"),
};
static PB_MSG(pm_tenant_quota, tenant_quota);

static const struct pb_field tenant_spec[] = {
	F_STRR(1, "finalizers"),
	F_STR(2, "storageClusterId"),
	F_MSG(3, "quota", &pm_tenant_quota),
};
static PB_MSG(pm_tenant_spec, tenant_spec);

static const struct pb_field tenant_status[] = {
	F_STR(1, "phase"),
	F_MSG(2, "quota", &pm_tenant_quota),
};
static PB_MSG(pm_tenant_status, tenant_status);

static const struct pb_field tenant[] = {
	F_MSG(1, "metadata", &pm_object_meta),
	F_MSG(2, "spec", &pm_tenant_spec),
	F_STATUS(3, &pm_tenant_status),
};
PB_MSG(pm_tenant, tenant);

static const struct pb_field network_spec[] = {
	F_STR(1, "type"),
	F_STR(2, "serviceCIDR"),
};
static PB_MSG(pm_network_spec, network_spec);

static const struct pb_field network_status[] = {
	F_STR(1, "phase"),
	F_STR(2, "dnsServiceIP"),
	F_STR(3, "message"),
};
static PB_MSG(pm_network_status, network_status);

static const struct pb_field network[] = {
	F_MSG(1, "metadata", &pm_object_meta),
	F_MSG(2, "spec", &pm_network_spec),
	F_STATUS(3, &pm_network_status),
};
PB_MSG(pm_network, network);

/* The region registry objects (no status). */
static const struct pb_field resource_manager_spec[] = {
	F_STRR(1, "endpoints"),
	F_STR(2, "zone"),
};
static PB_MSG(pm_resource_manager_spec, resource_manager_spec);

static const struct pb_field resource_manager[] = {
	F_MSG(1, "metadata", &pm_object_meta),
	F_MSG(2, "spec", &pm_resource_manager_spec),
};
PB_MSG(pm_resource_manager, resource_manager);

static const struct pb_field tenant_partition_spec[] = {
	F_STRR(1, "endpoints"),
};
static PB_MSG(pm_tenant_partition_spec, tenant_partition_spec);

static const struct pb_field tenant_partition[] = {
	F_MSG(1, "metadata", &pm_object_meta),
	F_MSG(2, "spec", &pm_tenant_partition_spec),
};
PB_MSG(pm_tenant_partition, tenant_partition);
