/* The default roles every tenant starts with, after Kubernetes' bootstrap policy: the
 * user-facing ClusterRoles cluster-admin, admin, edit and view (the last three aggregated from
 * the system:aggregate-to-* roles, so a tenant extends them by labelling its own ClusterRoles),
 * the discovery roles bound to every authenticated user, and cluster-admin bound to the tenant's
 * administrators' group. */
#include <string.h>
#include "ursa/rbac.h"

#define RO "\"get\",\"list\",\"watch\""
#define RW "\"create\",\"delete\",\"deletecollection\",\"patch\",\"update\""
#define LABELS(k) "\"labels\":{\"kubernetes.io/bootstrapping\":\"rbac-defaults\"" k "}"
#define AGG(to) ",\"rbac.authorization.k8s.io/aggregate-to-" to "\":\"true\""

static const char *const objects[] = {
	/* cluster-admin: everything */
	"{\"kind\":\"ClusterRole\",\"metadata\":{\"name\":\"cluster-admin\"," LABELS("") "},"
	"\"rules\":[{\"apiGroups\":[\"*\"],\"resources\":[\"*\"],\"verbs\":[\"*\"]},"
	"{\"nonResourceURLs\":[\"*\"],\"verbs\":[\"*\"]}]}",

	/* the pieces admin, edit and view aggregate */
	"{\"kind\":\"ClusterRole\",\"metadata\":{\"name\":\"system:aggregate-to-view\"," LABELS(AGG("view")) "},"
	"\"rules\":["
	"{\"apiGroups\":[\"\"],\"resources\":[\"configmaps\",\"endpoints\",\"persistentvolumeclaims\","
	"\"persistentvolumeclaims/status\",\"pods\",\"replicationcontrollers\",\"replicationcontrollers/scale\","
	"\"serviceaccounts\",\"services\",\"services/status\"],\"verbs\":[" RO "]},"
	"{\"apiGroups\":[\"\"],\"resources\":[\"bindings\",\"events\",\"limitranges\",\"namespaces/status\",\"pods/log\","
	"\"pods/status\",\"replicationcontrollers/status\",\"resourcequotas\",\"resourcequotas/status\"],\"verbs\":[" RO "]},"
	"{\"apiGroups\":[\"\"],\"resources\":[\"namespaces\"],\"verbs\":[" RO "]},"
	"{\"apiGroups\":[\"discovery.k8s.io\"],\"resources\":[\"endpointslices\"],\"verbs\":[" RO "]},"
	"{\"apiGroups\":[\"apps\"],\"resources\":[\"controllerrevisions\",\"daemonsets\",\"daemonsets/status\","
	"\"deployments\",\"deployments/scale\",\"deployments/status\",\"replicasets\",\"replicasets/scale\","
	"\"replicasets/status\",\"statefulsets\",\"statefulsets/scale\",\"statefulsets/status\"],\"verbs\":[" RO "]},"
	"{\"apiGroups\":[\"autoscaling\"],\"resources\":[\"horizontalpodautoscalers\",\"horizontalpodautoscalers/status\"],"
	"\"verbs\":[" RO "]},"
	"{\"apiGroups\":[\"batch\"],\"resources\":[\"cronjobs\",\"cronjobs/status\",\"jobs\",\"jobs/status\"],"
	"\"verbs\":[" RO "]},"
	"{\"apiGroups\":[\"policy\"],\"resources\":[\"poddisruptionbudgets\",\"poddisruptionbudgets/status\"],"
	"\"verbs\":[" RO "]},"
	"{\"apiGroups\":[\"networking.k8s.io\"],\"resources\":[\"ingresses\",\"ingresses/status\",\"networkpolicies\"],"
	"\"verbs\":[" RO "]},"
	"{\"apiGroups\":[\"coordination.k8s.io\"],\"resources\":[\"leases\"],\"verbs\":[" RO "]},"
	/* metrics-server's system:aggregated-metrics-reader, which Kubernetes aggregates into view */
	"{\"apiGroups\":[\"metrics.k8s.io\"],\"resources\":[\"pods\",\"nodes\"],\"verbs\":[" RO "]}]}",

	"{\"kind\":\"ClusterRole\",\"metadata\":{\"name\":\"system:aggregate-to-edit\"," LABELS(AGG("edit")) "},"
	"\"rules\":["
	"{\"apiGroups\":[\"\"],\"resources\":[\"pods/attach\",\"pods/exec\",\"pods/portforward\",\"pods/proxy\","
	"\"secrets\",\"services/proxy\"],\"verbs\":[" RO "]},"
	"{\"apiGroups\":[\"\"],\"resources\":[\"serviceaccounts\"],\"verbs\":[\"impersonate\"]},"
	"{\"apiGroups\":[\"\"],\"resources\":[\"pods\",\"pods/attach\",\"pods/exec\",\"pods/portforward\",\"pods/proxy\"],"
	"\"verbs\":[" RW "]},"
	"{\"apiGroups\":[\"\"],\"resources\":[\"pods/eviction\"],\"verbs\":[\"create\"]},"
	"{\"apiGroups\":[\"\"],\"resources\":[\"configmaps\",\"events\",\"persistentvolumeclaims\",\"replicationcontrollers\","
	"\"replicationcontrollers/scale\",\"secrets\",\"serviceaccounts\",\"services\",\"services/proxy\"],"
	"\"verbs\":[" RW "]},"
	"{\"apiGroups\":[\"\"],\"resources\":[\"serviceaccounts/token\"],\"verbs\":[\"create\"]},"
	"{\"apiGroups\":[\"apps\"],\"resources\":[\"daemonsets\",\"deployments\",\"deployments/rollback\","
	"\"deployments/scale\",\"replicasets\",\"replicasets/scale\",\"statefulsets\",\"statefulsets/scale\"],"
	"\"verbs\":[" RW "]},"
	"{\"apiGroups\":[\"autoscaling\"],\"resources\":[\"horizontalpodautoscalers\"],\"verbs\":[" RW "]},"
	"{\"apiGroups\":[\"batch\"],\"resources\":[\"cronjobs\",\"jobs\"],\"verbs\":[" RW "]},"
	"{\"apiGroups\":[\"policy\"],\"resources\":[\"poddisruptionbudgets\"],\"verbs\":[" RW "]},"
	"{\"apiGroups\":[\"networking.k8s.io\"],\"resources\":[\"ingresses\",\"networkpolicies\"],\"verbs\":[" RW "]},"
	"{\"apiGroups\":[\"coordination.k8s.io\"],\"resources\":[\"leases\"],\"verbs\":[" RW "]}]}",

	"{\"kind\":\"ClusterRole\",\"metadata\":{\"name\":\"system:aggregate-to-admin\"," LABELS(AGG("admin")) "},"
	"\"rules\":["
	"{\"apiGroups\":[\"authorization.k8s.io\"],\"resources\":[\"localsubjectaccessreviews\"],\"verbs\":[\"create\"]},"
	"{\"apiGroups\":[\"" RBAC_GROUP "\"],\"resources\":[\"rolebindings\",\"roles\"],\"verbs\":[" RW "," RO "]}]}",

	/* the aggregated user-facing roles; their rules are filled from the pieces above */
	"{\"kind\":\"ClusterRole\",\"metadata\":{\"name\":\"view\"," LABELS(AGG("edit")) "},"
	"\"aggregationRule\":{\"clusterRoleSelectors\":[{\"matchLabels\":{\"rbac.authorization.k8s.io/aggregate-to-view\":\"true\"}}]},"
	"\"rules\":[]}",
	"{\"kind\":\"ClusterRole\",\"metadata\":{\"name\":\"edit\"," LABELS(AGG("admin")) "},"
	"\"aggregationRule\":{\"clusterRoleSelectors\":[{\"matchLabels\":{\"rbac.authorization.k8s.io/aggregate-to-edit\":\"true\"}}]},"
	"\"rules\":[]}",
	"{\"kind\":\"ClusterRole\",\"metadata\":{\"name\":\"admin\"," LABELS("") "},"
	"\"aggregationRule\":{\"clusterRoleSelectors\":[{\"matchLabels\":{\"rbac.authorization.k8s.io/aggregate-to-admin\":\"true\"}}]},"
	"\"rules\":[]}",

	/* what every authenticated user may do */
	"{\"kind\":\"ClusterRole\",\"metadata\":{\"name\":\"system:discovery\"," LABELS("") "},"
	"\"rules\":[{\"nonResourceURLs\":[\"/api\",\"/api/*\",\"/apis\",\"/apis/*\",\"/healthz\",\"/livez\",\"/openapi\","
	"\"/openapi/*\",\"/readyz\",\"/version\",\"/version/\"],\"verbs\":[\"get\"]}]}",
	"{\"kind\":\"ClusterRole\",\"metadata\":{\"name\":\"system:basic-user\"," LABELS("") "},"
	"\"rules\":[{\"apiGroups\":[\"authorization.k8s.io\"],\"resources\":[\"selfsubjectaccessreviews\","
	"\"selfsubjectrulesreviews\"],\"verbs\":[\"create\"]},"
	"{\"apiGroups\":[\"authentication.k8s.io\"],\"resources\":[\"selfsubjectreviews\"],\"verbs\":[\"create\"]}]}",
	"{\"kind\":\"ClusterRole\",\"metadata\":{\"name\":\"system:public-info-viewer\"," LABELS("") "},"
	"\"rules\":[{\"nonResourceURLs\":[\"/healthz\",\"/livez\",\"/readyz\",\"/version\",\"/version/\"],\"verbs\":[\"get\"]}]}",

	"{\"kind\":\"ClusterRoleBinding\",\"metadata\":{\"name\":\"system:discovery\"," LABELS("") "},"
	"\"roleRef\":{\"apiGroup\":\"" RBAC_GROUP "\",\"kind\":\"ClusterRole\",\"name\":\"system:discovery\"},"
	"\"subjects\":[{\"apiGroup\":\"" RBAC_GROUP "\",\"kind\":\"Group\",\"name\":\"" GROUP_AUTHENTICATED "\"}]}",
	"{\"kind\":\"ClusterRoleBinding\",\"metadata\":{\"name\":\"system:basic-user\"," LABELS("") "},"
	"\"roleRef\":{\"apiGroup\":\"" RBAC_GROUP "\",\"kind\":\"ClusterRole\",\"name\":\"system:basic-user\"},"
	"\"subjects\":[{\"apiGroup\":\"" RBAC_GROUP "\",\"kind\":\"Group\",\"name\":\"" GROUP_AUTHENTICATED "\"}]}",
	"{\"kind\":\"ClusterRoleBinding\",\"metadata\":{\"name\":\"system:public-info-viewer\"," LABELS("") "},"
	"\"roleRef\":{\"apiGroup\":\"" RBAC_GROUP "\",\"kind\":\"ClusterRole\",\"name\":\"system:public-info-viewer\"},"
	"\"subjects\":[{\"apiGroup\":\"" RBAC_GROUP "\",\"kind\":\"Group\",\"name\":\"" GROUP_AUTHENTICATED "\"}]}",
	"{\"kind\":\"ClusterRoleBinding\",\"metadata\":{\"name\":\"ursa:tenant-admins\"," LABELS("") "},"
	"\"roleRef\":{\"apiGroup\":\"" RBAC_GROUP "\",\"kind\":\"ClusterRole\",\"name\":\"cluster-admin\"},"
	"\"subjects\":[{\"apiGroup\":\"" RBAC_GROUP "\",\"kind\":\"Group\",\"name\":\"" GROUP_TENANT_ADMINS "\"}]}",
};

void rbac_bootstrap_objects(void (*fn)(void *ud, const char *plural, const json_t *obj), void *ud)
{
	for (size_t i = 0; i < sizeof(objects) / sizeof(objects[0]); i++) {
		json_error_t err;
		json_t *o = json_loads(objects[i], 0, &err);
		if (!o)
			continue; /* a unit test parses every one */
		json_object_set_new(o, "apiVersion", json_string(RBAC_GROUP "/v1"));
		bool binding = strcmp(json_string_value(json_object_get(o, "kind")), "ClusterRoleBinding") == 0;
		fn(ud, binding ? "clusterrolebindings" : "clusterroles", o);
		json_decref(o);
	}
}
