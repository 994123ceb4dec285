/* The region's topology as API objects (group ursa.io/v1, cluster scope, system tenant):
 * every resource manager holds the region's TenantPartitions, every tenant partition the
 * region's ResourceManagers, so daemons discover partitions at run time.
 *   TenantPartition  {spec: {endpoints: ["https://127.0.0.1:7101"]}}
 *   ResourceManager  {spec: {endpoints: ["https://127.0.0.1:7201"], zone: "az-1"}} */
#ifndef URSA_REGION_H
#define URSA_REGION_H
#include "ursa/api.h"

#define URSA_GROUP "ursa.io"
extern const struct api_strategy strategy_tenantpartition, strategy_resourcemanager;

#endif
