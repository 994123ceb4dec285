/* Strategic merge patch metadata of the built-in kinds: the patchStrategy/patchMergeKey tags of
 * the Kubernetes API types, as one table per shared type. A field not listed here is a plain
 * field: maps merge recursively, lists are replaced. */
#include "patch_internal.h"
#include "ursa/xalloc.h"
#include <string.h>

#define NODE(arr) { (arr), ARRAY_SIZE(arr) }
#define MAP(n, sub) { (n), SMP_LIST_REPLACE, NULL, (sub) }
#define KEYED(n, key, sub) { (n), SMP_LIST_MERGE_KEYED, (key), (sub) }
#define SET(n) { (n), SMP_LIST_MERGE_SET, NULL, NULL }

static const struct smp_field object_meta_f[] = {
	KEYED("ownerReferences", "uid", NULL),
	SET("finalizers"),
};
static const struct smp_node object_meta = NODE(object_meta_f);

static const struct smp_field container_f[] = {
	KEYED("env", "name", NULL),
	KEYED("ports", "containerPort", NULL),
	KEYED("volumeMounts", "mountPath", NULL),
	KEYED("volumeDevices", "devicePath", NULL),
};
static const struct smp_node container = NODE(container_f);

static const struct smp_field pod_spec_f[] = {
	KEYED("containers", "name", &container),
	KEYED("initContainers", "name", &container),
	KEYED("ephemeralContainers", "name", &container),
	KEYED("volumes", "name", NULL),
	KEYED("imagePullSecrets", "name", NULL),
	KEYED("hostAliases", "ip", NULL),
	KEYED("topologySpreadConstraints", "topologyKey", NULL),
	KEYED("resourceClaims", "name", NULL),
	KEYED("schedulingGates", "name", NULL),
};
static const struct smp_node pod_spec = NODE(pod_spec_f);

static const struct smp_field pod_template_f[] = {
	MAP("metadata", &object_meta),
	MAP("spec", &pod_spec),
};
static const struct smp_node pod_template = NODE(pod_template_f);

/* Status of every kind with conditions keyed by type. */
static const struct smp_field status_f[] = {
	KEYED("conditions", "type", NULL),
};
static const struct smp_node status = NODE(status_f);

static const struct smp_field pod_status_f[] = {
	KEYED("conditions", "type", NULL),
	KEYED("podIPs", "ip", NULL),
	KEYED("hostIPs", "ip", NULL),
};
static const struct smp_node pod_status = NODE(pod_status_f);

/* Deployment, ReplicaSet, DaemonSet, StatefulSet, Job, ReplicationController. */
static const struct smp_field workload_spec_f[] = {
	MAP("template", &pod_template),
};
static const struct smp_node workload_spec = NODE(workload_spec_f);

static const struct smp_field job_template_f[] = {
	MAP("metadata", &object_meta),
	MAP("spec", &workload_spec),
};
static const struct smp_node job_template = NODE(job_template_f);

static const struct smp_field cronjob_spec_f[] = {
	MAP("jobTemplate", &job_template),
};
static const struct smp_node cronjob_spec = NODE(cronjob_spec_f);

static const struct smp_field service_spec_f[] = {
	KEYED("ports", "port", NULL),
};
static const struct smp_node service_spec = NODE(service_spec_f);

/* spec.taints has no strategy: it is replaced. */
static const struct smp_field node_spec_f[] = {
	SET("podCIDRs"),
};
static const struct smp_node node_spec = NODE(node_spec_f);

static const struct smp_field node_status_f[] = {
	KEYED("addresses", "type", NULL),
	KEYED("conditions", "type", NULL),
};
static const struct smp_node node_status = NODE(node_status_f);

/* Whole objects. */
static const struct smp_field plain_obj_f[] = {
	MAP("metadata", &object_meta),
	MAP("status", &status),
};
static const struct smp_field pod_obj_f[] = {
	MAP("metadata", &object_meta),
	MAP("spec", &pod_spec),
	MAP("status", &pod_status),
};
static const struct smp_field workload_obj_f[] = {
	MAP("metadata", &object_meta),
	MAP("spec", &workload_spec),
	MAP("status", &status),
};
static const struct smp_field cronjob_obj_f[] = {
	MAP("metadata", &object_meta),
	MAP("spec", &cronjob_spec),
	MAP("status", &status),
};
static const struct smp_field pod_template_obj_f[] = {
	MAP("metadata", &object_meta),
	MAP("template", &pod_template),
};
static const struct smp_field service_obj_f[] = {
	MAP("metadata", &object_meta),
	MAP("spec", &service_spec),
	MAP("status", &status),
};
static const struct smp_field node_obj_f[] = {
	MAP("metadata", &object_meta),
	MAP("spec", &node_spec),
	MAP("status", &node_status),
};
static const struct smp_field service_account_obj_f[] = {
	MAP("metadata", &object_meta),
	KEYED("secrets", "name", NULL),
	KEYED("imagePullSecrets", "name", NULL),
};

static const struct smp_node plain_obj = NODE(plain_obj_f);
static const struct smp_node pod_obj = NODE(pod_obj_f);
static const struct smp_node workload_obj = NODE(workload_obj_f);
static const struct smp_node cronjob_obj = NODE(cronjob_obj_f);
static const struct smp_node pod_template_obj = NODE(pod_template_obj_f);
static const struct smp_node service_obj = NODE(service_obj_f);
static const struct smp_node node_obj = NODE(node_obj_f);
static const struct smp_node service_account_obj = NODE(service_account_obj_f);

static const struct {
	const char *kind;
	const struct smp_node *node;
} kinds[] = {
	{ "Pod", &pod_obj },
	{ "PodTemplate", &pod_template_obj },
	{ "Deployment", &workload_obj },
	{ "ReplicaSet", &workload_obj },
	{ "DaemonSet", &workload_obj },
	{ "StatefulSet", &workload_obj },
	{ "Job", &workload_obj },
	{ "ReplicationController", &workload_obj },
	{ "CronJob", &cronjob_obj },
	{ "Service", &service_obj },
	{ "Node", &node_obj },
	{ "ServiceAccount", &service_account_obj },
	{ "Namespace", &plain_obj },
	{ "ConfigMap", &plain_obj },
	{ "Secret", &plain_obj },
	{ "Event", &plain_obj },
	{ "Lease", &plain_obj },
	{ "Tenant", &plain_obj },
	{ "Endpoints", &plain_obj },
	{ "PersistentVolume", &plain_obj },
	{ "PersistentVolumeClaim", &plain_obj },
	{ "ResourceQuota", &plain_obj },
	{ "LimitRange", &plain_obj },
};

const struct smp_node *smp_schema_for_kind(const char *kind)
{
	if (!kind)
		return NULL;
	for (size_t i = 0; i < ARRAY_SIZE(kinds); i++)
		if (!strcmp(kinds[i].kind, kind))
			return kinds[i].node;
	return NULL;
}

const struct smp_field *smp_field_lookup(const struct smp_node *node, const char *key, size_t klen)
{
	if (!node)
		return NULL;
	for (size_t i = 0; i < node->nfields; i++) {
		const struct smp_field *f = &node->fields[i];
		if (strlen(f->name) == klen && !memcmp(f->name, key, klen))
			return f;
	}
	return NULL;
}
