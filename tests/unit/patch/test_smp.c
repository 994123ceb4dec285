/* Strategic merge patch: the bodies kubectl's client-side apply sends, the patch metadata of
 * the built-in kinds, every directive, and the errors. JSON uses ' for " (see patch_test.h). */
#include "patch_test.h"

static int smp(const json_t *doc, const json_t *patch, const char *kind, json_t **ret, struct buf *err)
{
	return strategic_merge_patch_apply(doc, patch, kind, ret, err);
}

#define OK(n, k, d, p, w) { n, k, d, p, w, 0 }
#define ERR(n, k, d, p, rc) { n, k, d, p, NULL, rc }

#define LAST "'kubectl.kubernetes.io/last-applied-configuration'"

/* Bodies as observed from kubectl 1.32 apply (research notes, section 1). */
static const struct pcase apply_cases[] = {
	OK("apply: image change keeps live-only fields", "Pod",
	   "{'metadata':{'name':'p2','annotations':{" LAST ":'old'}},'spec':{'containers':[{'name':'c','image':'nginx:1',"
	   "'ports':[{'containerPort':80}],'terminationMessagePath':'/dev/termination-log'}],'restartPolicy':'Always'}}",
	   "{'metadata':{'annotations':{" LAST ":'new'}},'spec':{'$setElementOrder/containers':[{'name':'c'}],"
	   "'containers':[{'image':'nginx:2','name':'c'}]}}",
	   "{'metadata':{'name':'p2','annotations':{" LAST ":'new'}},'spec':{'containers':[{'name':'c','image':'nginx:2',"
	   "'ports':[{'containerPort':80}],'terminationMessagePath':'/dev/termination-log'}],'restartPolicy':'Always'}}"),
	OK("apply: add a sidecar", "Pod", "{'spec':{'containers':[{'name':'c','image':'nginx:1'}]}}",
	   "{'metadata':{'annotations':{" LAST ":'x'}},'spec':{'$setElementOrder/containers':[{'name':'c'},{'name':'side'}],"
	   "'containers':[{'image':'nginx:2','name':'c'},{'image':'busybox','name':'side'}]}}",
	   "{'metadata':{'annotations':{" LAST ":'x'}},'spec':{'containers':[{'name':'c','image':'nginx:2'},"
	   "{'name':'side','image':'busybox'}]}}"),
	OK("apply: sidecar ordered first", "Pod", "{'spec':{'containers':[{'name':'c','image':'nginx:1'}]}}",
	   "{'spec':{'$setElementOrder/containers':[{'name':'side'},{'name':'c'}],'containers':[{'image':'busybox','name':'side'}]}}",
	   "{'spec':{'containers':[{'name':'side','image':'busybox'},{'name':'c','image':'nginx:1'}]}}"),
	OK("apply: remove a container", "Pod",
	   "{'spec':{'containers':[{'name':'c','image':'nginx:1'},{'name':'side','image':'busybox'}]}}",
	   "{'spec':{'$setElementOrder/containers':[{'name':'c'}],'containers':[{'$patch':'delete','name':'side'}]}}",
	   "{'spec':{'containers':[{'name':'c','image':'nginx:1'}]}}"),
	OK("apply: env merge", "Pod",
	   "{'spec':{'containers':[{'name':'c','image':'i','env':[{'name':'A','value':'1'},{'name':'B','value':'2'}]}]}}",
	   "{'spec':{'$setElementOrder/containers':[{'name':'c'}],'containers':[{'name':'c','$setElementOrder/env':"
	   "[{'name':'A'},{'name':'B'},{'name':'C'}],'env':[{'name':'B','value':'3'},{'name':'C','value':'4'}]}]}}",
	   "{'spec':{'containers':[{'name':'c','image':'i','env':[{'name':'A','value':'1'},{'name':'B','value':'3'},"
	   "{'name':'C','value':'4'}]}]}}"),
	OK("apply: env var removed", "Pod",
	   "{'spec':{'containers':[{'name':'c','env':[{'name':'A','value':'1'},{'name':'B','value':'2'}]}]}}",
	   "{'spec':{'$setElementOrder/containers':[{'name':'c'}],'containers':[{'name':'c','$setElementOrder/env':"
	   "[{'name':'B'}],'env':[{'$patch':'delete','name':'A'}]}]}}",
	   "{'spec':{'containers':[{'name':'c','env':[{'name':'B','value':'2'}]}]}}"),
	OK("apply: label removed with null", "Pod",
	   "{'metadata':{'name':'p','labels':{'app':'web','tier':'fe'}},'spec':{}}",
	   "{'metadata':{'annotations':{" LAST ":'x'},'labels':{'tier':null}}}",
	   "{'metadata':{'name':'p','labels':{'app':'web'},'annotations':{" LAST ":'x'}},'spec':{}}"),
	OK("apply: finalizers", "ConfigMap", "{'metadata':{'finalizers':['a','b']}}",
	   "{'metadata':{'$setElementOrder/finalizers':['b','c'],'$deleteFromPrimitiveList/finalizers':['a'],'finalizers':['c']}}",
	   "{'metadata':{'finalizers':['b','c']}}"),
	OK("apply: deployment replicas and image", "Deployment",
	   "{'spec':{'replicas':2,'selector':{'matchLabels':{'app':'web'}},'template':{'metadata':{'labels':{'app':'web'}},"
	   "'spec':{'containers':[{'name':'web','image':'nginx:1','ports':[{'containerPort':80}]}]}}}}",
	   "{'spec':{'replicas':4,'template':{'spec':{'$setElementOrder/containers':[{'name':'web'}],"
	   "'containers':[{'image':'nginx:2','name':'web'}]}}}}",
	   "{'spec':{'replicas':4,'selector':{'matchLabels':{'app':'web'}},'template':{'metadata':{'labels':{'app':'web'}},"
	   "'spec':{'containers':[{'name':'web','image':'nginx:2','ports':[{'containerPort':80}]}]}}}}"),
	OK("apply: deployment replicas only", "Deployment", "{'spec':{'replicas':2,'paused':false}}",
	   "{'spec':{'replicas':4}}", "{'spec':{'replicas':4,'paused':false}}"),
};

/* Which lists merge, and by what key, for each kind. */
static const struct pcase metadata_cases[] = {
	OK("env: new item goes first without an order list", "Pod",
	   "{'spec':{'containers':[{'name':'c','env':[{'name':'A'},{'name':'B'}]}]}}",
	   "{'spec':{'containers':[{'name':'c','env':[{'name':'C','value':'4'}]}]}}",
	   "{'spec':{'containers':[{'name':'c','env':[{'name':'C','value':'4'},{'name':'A'},{'name':'B'}]}]}}"),
	OK("env: changed item keeps its place", "Pod",
	   "{'spec':{'containers':[{'name':'c','env':[{'name':'A'},{'name':'B'},{'name':'C'}]}]}}",
	   "{'spec':{'containers':[{'name':'c','env':[{'name':'B','value':'x'}]}]}}",
	   "{'spec':{'containers':[{'name':'c','env':[{'name':'A'},{'name':'B','value':'x'},{'name':'C'}]}]}}"),
	OK("env: null drops a field of an element", "Pod",
	   "{'spec':{'containers':[{'name':'c','env':[{'name':'A','value':'1'}]}]}}",
	   "{'spec':{'containers':[{'name':'c','env':[{'name':'A','value':null,'valueFrom':{'fieldRef':{'fieldPath':'x'}}}]}]}}",
	   "{'spec':{'containers':[{'name':'c','env':[{'name':'A','valueFrom':{'fieldRef':{'fieldPath':'x'}}}]}]}}"),
	OK("ports by containerPort, 80 matches 80.0", "Pod",
	   "{'spec':{'containers':[{'name':'c','ports':[{'containerPort':80,'protocol':'TCP'},{'containerPort':443}]}]}}",
	   "{'spec':{'containers':[{'name':'c','ports':[{'containerPort':80.0,'name':'http'}]}]}}",
	   "{'spec':{'containers':[{'name':'c','ports':[{'containerPort':80.0,'protocol':'TCP','name':'http'},{'containerPort':443}]}]}}"),
	OK("volumes by name, volumeMounts by mountPath", "Pod",
	   "{'spec':{'volumes':[{'name':'v1','emptyDir':{}}],'containers':[{'name':'c','volumeMounts':[{'mountPath':'/a','name':'v1'}]}]}}",
	   "{'spec':{'volumes':[{'name':'v2','configMap':{'name':'cm'}}],'containers':[{'name':'c','volumeMounts':"
	   "[{'mountPath':'/a','readOnly':true},{'mountPath':'/b','name':'v2'}]}]}}",
	   "{'spec':{'volumes':[{'name':'v2','configMap':{'name':'cm'}},{'name':'v1','emptyDir':{}}],'containers':[{'name':'c',"
	   "'volumeMounts':[{'mountPath':'/a','name':'v1','readOnly':true},{'mountPath':'/b','name':'v2'}]}]}}"),
	OK("volumeDevices by devicePath", "Pod",
	   "{'spec':{'containers':[{'name':'c','volumeDevices':[{'devicePath':'/dev/a','name':'x'}]}]}}",
	   "{'spec':{'containers':[{'name':'c','volumeDevices':[{'devicePath':'/dev/a','name':'y'}]}]}}",
	   "{'spec':{'containers':[{'name':'c','volumeDevices':[{'devicePath':'/dev/a','name':'y'}]}]}}"),
	OK("initContainers and ephemeralContainers by name", "Pod",
	   "{'spec':{'initContainers':[{'name':'i','image':'a'}],'ephemeralContainers':[{'name':'e','image':'a','tty':true}]}}",
	   "{'spec':{'initContainers':[{'name':'i','image':'b'}],'ephemeralContainers':[{'name':'e','image':'b'}]}}",
	   "{'spec':{'initContainers':[{'name':'i','image':'b'}],'ephemeralContainers':[{'name':'e','image':'b','tty':true}]}}"),
	OK("imagePullSecrets, hostAliases, topologySpreadConstraints", "Pod",
	   "{'spec':{'imagePullSecrets':[{'name':'a'}],'hostAliases':[{'ip':'1.1.1.1','hostnames':['x']}],"
	   "'topologySpreadConstraints':[{'topologyKey':'zone','maxSkew':1}]}}",
	   "{'spec':{'imagePullSecrets':[{'name':'b'}],'hostAliases':[{'ip':'1.1.1.1','hostnames':['y']}],"
	   "'topologySpreadConstraints':[{'topologyKey':'zone','maxSkew':2}]}}",
	   "{'spec':{'imagePullSecrets':[{'name':'b'},{'name':'a'}],'hostAliases':[{'ip':'1.1.1.1','hostnames':['y']}],"
	   "'topologySpreadConstraints':[{'topologyKey':'zone','maxSkew':2}]}}"),
	OK("tolerations are replaced", "Pod", "{'spec':{'tolerations':[{'key':'a'},{'key':'b'}]}}",
	   "{'spec':{'tolerations':[{'key':'c'}]}}", "{'spec':{'tolerations':[{'key':'c'}]}}"),
	OK("container args are replaced", "Pod", "{'spec':{'containers':[{'name':'c','args':['a','b']}]}}",
	   "{'spec':{'containers':[{'name':'c','args':['b']}]}}", "{'spec':{'containers':[{'name':'c','args':['b']}]}}"),
	OK("finalizers merge as a set", "Pod", "{'metadata':{'finalizers':['a','b']}}",
	   "{'metadata':{'finalizers':['b','c']}}", "{'metadata':{'finalizers':['a','b','c']}}"),
	OK("finalizers: new one goes first", "Secret", "{'metadata':{'finalizers':['a','b']}}",
	   "{'metadata':{'finalizers':['c']}}", "{'metadata':{'finalizers':['c','a','b']}}"),
	OK("finalizers: deleteFromPrimitiveList", "Namespace", "{'metadata':{'finalizers':['a','b','a']}}",
	   "{'metadata':{'$deleteFromPrimitiveList/finalizers':['a','zz']}}", "{'metadata':{'finalizers':['b']}}"),
	OK("deleteFromPrimitiveList on a missing list", "Pod", "{'metadata':{}}",
	   "{'metadata':{'$deleteFromPrimitiveList/finalizers':['a']}}", "{'metadata':{}}"),
	OK("ownerReferences by uid", "ReplicaSet",
	   "{'metadata':{'ownerReferences':[{'uid':'1','name':'a'},{'uid':'2','name':'b'}]}}",
	   "{'metadata':{'ownerReferences':[{'uid':'2','controller':true}]}}",
	   "{'metadata':{'ownerReferences':[{'uid':'1','name':'a'},{'uid':'2','name':'b','controller':true}]}}"),
	OK("pod status.conditions by type", "Pod",
	   "{'status':{'phase':'Pending','conditions':[{'type':'Ready','status':'False'},{'type':'PodScheduled','status':'True'}]}}",
	   "{'status':{'phase':'Running','conditions':[{'type':'Ready','status':'True'}]}}",
	   "{'status':{'phase':'Running','conditions':[{'type':'Ready','status':'True'},{'type':'PodScheduled','status':'True'}]}}"),
	OK("deployment status.conditions by type", "Deployment",
	   "{'status':{'conditions':[{'type':'Available','status':'False'},{'type':'Progressing','status':'True'}]}}",
	   "{'status':{'conditions':[{'type':'Progressing','reason':'NewReplicaSetAvailable'}]}}",
	   "{'status':{'conditions':[{'type':'Available','status':'False'},{'type':'Progressing','status':'True',"
	   "'reason':'NewReplicaSetAvailable'}]}}"),
	OK("node status.addresses and conditions by type", "Node",
	   "{'status':{'addresses':[{'type':'InternalIP','address':'10.0.0.1'},{'type':'Hostname','address':'n1'}],"
	   "'conditions':[{'type':'Ready','status':'True'}]}}",
	   "{'status':{'addresses':[{'type':'InternalIP','address':'10.0.0.2'}],'conditions':[{'type':'Ready','status':'Unknown'}]}}",
	   "{'status':{'addresses':[{'type':'InternalIP','address':'10.0.0.2'},{'type':'Hostname','address':'n1'}],"
	   "'conditions':[{'type':'Ready','status':'Unknown'}]}}"),
	OK("node spec.taints replaced", "Node", "{'spec':{'taints':[{'key':'a','effect':'NoSchedule'},{'key':'b'}]}}",
	   "{'spec':{'taints':[{'key':'c','effect':'NoExecute'}]}}", "{'spec':{'taints':[{'key':'c','effect':'NoExecute'}]}}"),
	OK("node spec.podCIDRs merge as a set", "Node", "{'spec':{'podCIDRs':['10.0.0.0/24']}}",
	   "{'spec':{'podCIDRs':['10.0.0.0/24','fd00::/64']}}", "{'spec':{'podCIDRs':['10.0.0.0/24','fd00::/64']}}"),
	OK("service spec.ports by port", "Service",
	   "{'spec':{'ports':[{'port':80,'targetPort':8080},{'port':443,'targetPort':8443}],'selector':{'app':'a'}}}",
	   "{'spec':{'ports':[{'port':80,'targetPort':9090}]}}",
	   "{'spec':{'ports':[{'port':80,'targetPort':9090},{'port':443,'targetPort':8443}],'selector':{'app':'a'}}}"),
	OK("service selector is a map merged", "Service", "{'spec':{'selector':{'app':'a','tier':'b'}}}",
	   "{'spec':{'selector':{'tier':null,'x':'y'}}}", "{'spec':{'selector':{'app':'a','x':'y'}}}"),
	OK("serviceaccount secrets by name", "ServiceAccount", "{'secrets':[{'name':'a'}]}",
	   "{'secrets':[{'name':'b'}]}", "{'secrets':[{'name':'b'},{'name':'a'}]}"),
	OK("statefulset pod template merges containers", "StatefulSet",
	   "{'spec':{'template':{'spec':{'containers':[{'name':'db','image':'pg:1','ports':[{'containerPort':5432}]}]}}}}",
	   "{'spec':{'template':{'spec':{'containers':[{'name':'db','image':'pg:2'}]}}}}",
	   "{'spec':{'template':{'spec':{'containers':[{'name':'db','image':'pg:2','ports':[{'containerPort':5432}]}]}}}}"),
	OK("daemonset pod template merges containers", "DaemonSet",
	   "{'spec':{'template':{'spec':{'containers':[{'name':'a','image':'1'},{'name':'b','image':'1'}]}}}}",
	   "{'spec':{'template':{'spec':{'containers':[{'name':'b','image':'2'}]}}}}",
	   "{'spec':{'template':{'spec':{'containers':[{'name':'a','image':'1'},{'name':'b','image':'2'}]}}}}"),
	OK("job pod template merges initContainers", "Job",
	   "{'spec':{'template':{'spec':{'initContainers':[{'name':'a','image':'1'}]}}}}",
	   "{'spec':{'template':{'spec':{'initContainers':[{'name':'a','command':['x']}]}}}}",
	   "{'spec':{'template':{'spec':{'initContainers':[{'name':'a','image':'1','command':['x']}]}}}}"),
	OK("cronjob job template merges containers", "CronJob",
	   "{'spec':{'jobTemplate':{'spec':{'template':{'spec':{'containers':[{'name':'a','image':'1','tty':true}]}}}}}}",
	   "{'spec':{'jobTemplate':{'spec':{'template':{'spec':{'containers':[{'name':'a','image':'2'}]}}}}}}",
	   "{'spec':{'jobTemplate':{'spec':{'template':{'spec':{'containers':[{'name':'a','image':'2','tty':true}]}}}}}}"),
	OK("pod template labels merge in a deployment", "Deployment",
	   "{'spec':{'template':{'metadata':{'labels':{'app':'a'}}}}}",
	   "{'spec':{'template':{'metadata':{'labels':{'v':'2'}}}}}",
	   "{'spec':{'template':{'metadata':{'labels':{'app':'a','v':'2'}}}}}"),
	OK("deployment spec.containers is not a pod spec", "Deployment", "{'spec':{'containers':[{'name':'a','x':1}]}}",
	   "{'spec':{'containers':[{'name':'a'}]}}", "{'spec':{'containers':[{'name':'a'}]}}"),
	OK("unknown kind: merge-patch semantics", "Widget",
	   "{'spec':{'containers':[{'name':'a','image':'1','tty':true}],'m':{'x':1}}}",
	   "{'spec':{'containers':[{'name':'a','image':'2'}],'m':{'y':2}}}",
	   "{'spec':{'containers':[{'name':'a','image':'2'}],'m':{'x':1,'y':2}}}"),
	OK("no kind: merge-patch semantics", NULL, "{'metadata':{'finalizers':['a']}}",
	   "{'metadata':{'finalizers':['b']}}", "{'metadata':{'finalizers':['b']}}"),
	OK("new keyed list keeps patch order", "Pod", "{'spec':{}}",
	   "{'spec':{'containers':[{'name':'b'},{'name':'a'}]}}", "{'spec':{'containers':[{'name':'b'},{'name':'a'}]}}"),
	OK("duplicate keys in the patch merge into one", "Pod", "{'spec':{}}",
	   "{'spec':{'containers':[{'name':'a','image':'1'},{'name':'a','tty':true}]}}",
	   "{'spec':{'containers':[{'name':'a','image':'1','tty':true}]}}"),
	OK("scalar replaces a list", "Pod", "{'spec':{'containers':[{'name':'a'}]}}", "{'spec':{'containers':'x'}}",
	   "{'spec':{'containers':'x'}}"),
	OK("map replaces a list", "Pod", "{'spec':{'containers':[{'name':'a'}]}}", "{'spec':{'containers':{'a':null,'b':1}}}",
	   "{'spec':{'containers':{'b':1}}}"),
	OK("list replaces a scalar", "Pod", "{'spec':{'containers':5}}", "{'spec':{'containers':[{'name':'a'}]}}",
	   "{'spec':{'containers':[{'name':'a'}]}}"),
	OK("empty patch", "Pod", "{'a':1}", "{}", "{'a':1}"),
};

static const struct pcase directive_cases[] = {
	OK("$patch replace on a map", "Pod", "{'metadata':{'labels':{'a':'b'}}}",
	   "{'metadata':{'labels':{'$patch':'replace','x':'y'}}}", "{'metadata':{'labels':{'x':'y'}}}"),
	OK("$patch replace on the whole object", "Pod", "{'a':1,'b':2}", "{'$patch':'replace','c':{'d':null,'e':1}}",
	   "{'c':{'e':1}}"),
	OK("$patch delete on a map", "Pod", "{'spec':{'securityContext':{'runAsUser':1},'x':1}}",
	   "{'spec':{'securityContext':{'$patch':'delete'}}}", "{'spec':{'x':1}}"),
	OK("$patch delete on the whole object", "Pod", "{'a':1}", "{'$patch':'delete'}", "{}"),
	OK("$patch merge is a no-op", "Pod", "{'metadata':{'labels':{'a':'b'}}}",
	   "{'metadata':{'labels':{'$patch':'merge','x':'y'}}}", "{'metadata':{'labels':{'a':'b','x':'y'}}}"),
	OK("$patch merge in a list element", "Pod", "{'spec':{'containers':[{'name':'a','image':'1'}]}}",
	   "{'spec':{'containers':[{'name':'a','$patch':'merge','tty':true}]}}",
	   "{'spec':{'containers':[{'name':'a','image':'1','tty':true}]}}"),
	OK("$patch replace in a list", "Pod", "{'spec':{'containers':[{'name':'a'},{'name':'b'}]}}",
	   "{'spec':{'containers':[{'name':'n','image':'i'},{'$patch':'replace'}]}}",
	   "{'spec':{'containers':[{'name':'n','image':'i'}]}}"),
	OK("$patch delete of a missing element", "Pod", "{'spec':{'containers':[{'name':'a'}]}}",
	   "{'spec':{'containers':[{'name':'zz','$patch':'delete'}]}}", "{'spec':{'containers':[{'name':'a'}]}}"),
	OK("$patch delete of duplicates", "Pod", "{'status':{'conditions':[{'type':'A'},{'type':'B'},{'type':'A'}]}}",
	   "{'status':{'conditions':[{'type':'A','$patch':'delete'}]}}", "{'status':{'conditions':[{'type':'B'}]}}"),
	OK("$retainKeys", "Deployment", "{'spec':{'strategy':{'type':'RollingUpdate','rollingUpdate':{'maxSurge':1}}}}",
	   "{'spec':{'strategy':{'$retainKeys':['type'],'type':'Recreate'}}}", "{'spec':{'strategy':{'type':'Recreate'}}}"),
	OK("$retainKeys with a merged field", "Pod",
	   "{'spec':{'volumes':[{'name':'v','emptyDir':{},'hostPath':{'path':'/x'}}]}}",
	   "{'spec':{'volumes':[{'name':'v','$retainKeys':['name','hostPath'],'hostPath':{'type':'Directory'}}]}}",
	   "{'spec':{'volumes':[{'name':'v','hostPath':{'path':'/x','type':'Directory'}}]}}"),
	OK("$setElementOrder alone reorders", "Pod",
	   "{'spec':{'containers':[{'name':'a'},{'name':'b'},{'name':'c'}]}}",
	   "{'spec':{'$setElementOrder/containers':[{'name':'c'},{'name':'a'},{'name':'b'}]}}",
	   "{'spec':{'containers':[{'name':'c'},{'name':'a'},{'name':'b'}]}}"),
	OK("$setElementOrder keeps live-only items by live order", "Pod",
	   "{'spec':{'containers':[{'name':'a'},{'name':'x'},{'name':'b'}]}}",
	   "{'spec':{'$setElementOrder/containers':[{'name':'b'},{'name':'a'}]}}",
	   "{'spec':{'containers':[{'name':'x'},{'name':'b'},{'name':'a'}]}}"),
	OK("$setElementOrder for a missing list", "Pod", "{'spec':{}}",
	   "{'spec':{'$setElementOrder/containers':[{'name':'a'}]}}", "{'spec':{}}"),
	OK("$setElementOrder for a new list", "Pod", "{'spec':{}}",
	   "{'spec':{'$setElementOrder/containers':[{'name':'b'},{'name':'a'}],'containers':[{'name':'b'},{'name':'a'}]}}",
	   "{'spec':{'containers':[{'name':'b'},{'name':'a'}]}}"),
	OK("$setElementOrder of primitives", "Pod", "{'metadata':{'finalizers':['a','b','c']}}",
	   "{'metadata':{'$setElementOrder/finalizers':['c','b','a']}}", "{'metadata':{'finalizers':['c','b','a']}}"),
	OK("directives in new values do not leak", "Pod", "{'spec':{}}",
	   "{'spec':{'containers':[{'name':'a','env':[{'$patch':'delete','name':'X'},{'name':'Y','value':'1'}],"
	   "'$setElementOrder/env':[{'name':'Y'}],'resources':{'$patch':'replace','limits':{'cpu':'1'}},"
	   "'securityContext':{'$patch':'delete'},'$deleteFromPrimitiveList/args':['x'],'$retainKeys':['name','env','resources','securityContext']}]}}",
	   "{'spec':{'containers':[{'name':'a','env':[{'name':'Y','value':'1'}],'resources':{'limits':{'cpu':'1'}}}]}}"),
	OK("nulls in new maps are dropped", "Pod", "{}", "{'metadata':{'labels':{'a':null,'b':'1'}}}",
	   "{'metadata':{'labels':{'b':'1'}}}"),
	OK("directives inside replaced lists do not leak", "Pod", "{}",
	   "{'spec':{'tolerations':[{'key':'a','value':null,'x':{'$patch':'replace','y':1}}]}}",
	   "{'spec':{'tolerations':[{'key':'a','x':{'y':1}}]}}"),
	OK("unknown kind still applies directives", "Widget", "{'spec':{'m':{'a':1}}}",
	   "{'spec':{'m':{'$patch':'replace','b':2}}}", "{'spec':{'m':{'b':2}}}"),
};

static const struct pcase error_cases[] = {
	ERR("patch is not an object", "Pod", "{}", "[1]", E_BAD_REQUEST),
	ERR("element lacks the merge key", "Pod", "{'spec':{'containers':[{'name':'a'}]}}",
	    "{'spec':{'containers':[{'image':'x'}]}}", E_BAD_REQUEST),
	ERR("element is not a map", "Pod", "{'spec':{}}", "{'spec':{'containers':['x']}}", E_BAD_REQUEST),
	ERR("unknown $patch in a map", "Pod", "{}", "{'metadata':{'$patch':'frob'}}", E_BAD_REQUEST),
	ERR("$patch is not a string", "Pod", "{}", "{'metadata':{'$patch':1}}", E_BAD_REQUEST),
	ERR("unknown $patch in an element", "Pod", "{}", "{'spec':{'containers':[{'name':'a','$patch':'frob'}]}}",
	    E_BAD_REQUEST),
	ERR("$patch delete without the merge key", "Pod", "{'spec':{'containers':[{'name':'a'}]}}",
	    "{'spec':{'containers':[{'$patch':'delete'}]}}", E_BAD_REQUEST),
	ERR("$setElementOrder is not a list", "Pod", "{}", "{'spec':{'$setElementOrder/containers':{}}}", E_BAD_REQUEST),
	ERR("$setElementOrder contradicts the list", "Pod", "{}",
	    "{'spec':{'$setElementOrder/containers':[{'name':'a'}],'containers':[{'name':'b'}]}}", E_BAD_REQUEST),
	ERR("$setElementOrder in the wrong order", "Pod", "{}",
	    "{'spec':{'$setElementOrder/containers':[{'name':'a'},{'name':'b'}],'containers':[{'name':'b'},{'name':'a'}]}}",
	    E_BAD_REQUEST),
	ERR("$setElementOrder element lacks the key", "Pod", "{}",
	    "{'spec':{'$setElementOrder/containers':[{'x':1}],'containers':[{'name':'b'}]}}", E_BAD_REQUEST),
	ERR("$setElementOrder with a non-list value", "Pod", "{}",
	    "{'spec':{'$setElementOrder/containers':[{'name':'a'}],'containers':{'name':'a'}}}", E_BAD_REQUEST),
	ERR("$retainKeys is not a list", "Pod", "{}", "{'spec':{'$retainKeys':'a'}}", E_BAD_REQUEST),
	ERR("$retainKeys holds a number", "Pod", "{}", "{'spec':{'$retainKeys':[1]}}", E_BAD_REQUEST),
	ERR("field missing from $retainKeys", "Deployment", "{}",
	    "{'spec':{'strategy':{'$retainKeys':['type'],'rollingUpdate':{}}}}", E_INVALID),
	ERR("$deleteFromPrimitiveList is not a list", "Pod", "{'metadata':{'finalizers':['a']}}",
	    "{'metadata':{'$deleteFromPrimitiveList/finalizers':'a'}}", E_BAD_REQUEST),
	ERR("finalizers hold a map", "Pod", "{}", "{'metadata':{'finalizers':[{'a':1}]}}", E_BAD_REQUEST),
	ERR("live keyed list holds a scalar", "Pod", "{'spec':{'containers':[1]}}",
	    "{'spec':{'containers':[{'name':'a'}]}}", E_INVALID),
};

#define RUN(t) run_cases(t, sizeof(t) / sizeof((t)[0]), smp)

static void test_kubectl_apply(void **state)
{
	(void)state;
	RUN(apply_cases);
}

static void test_patch_metadata(void **state)
{
	(void)state;
	RUN(metadata_cases);
}

static void test_directives(void **state)
{
	(void)state;
	RUN(directive_cases);
}

static void test_errors(void **state)
{
	(void)state;
	RUN(error_cases);
}

static bool has_directive(const json_t *j)
{
	const char *k;
	json_t *v;
	size_t i;

	if (json_is_object(j)) {
		json_object_foreach((json_t *)j, k, v) {
			if (k[0] == '$' || has_directive(v))
				return true;
		}
	} else if (json_is_array(j)) {
		json_array_foreach(j, i, v)
			if (has_directive(v))
				return true;
	}
	return false;
}

/* No successful case leaves a "$..." key in its result. */
static void test_no_directive_leaks(void **state)
{
	(void)state;
	const struct pcase *sets[] = { apply_cases, metadata_cases, directive_cases };
	size_t sizes[] = { sizeof(apply_cases) / sizeof(apply_cases[0]), sizeof(metadata_cases) / sizeof(metadata_cases[0]),
			   sizeof(directive_cases) / sizeof(directive_cases[0]) };
	for (size_t s = 0; s < 3; s++) {
		for (size_t i = 0; i < sizes[s]; i++) {
			json_t *doc = J(sets[s][i].doc), *patch = J(sets[s][i].patch), *out = NULL;
			struct buf err = BUF_INIT;
			assert_int_equal(strategic_merge_patch_apply(doc, patch, sets[s][i].kind, &out, &err), 0);
			if (has_directive(out))
				fail_msg("case %s leaks a directive", sets[s][i].name);
			json_decref(out);
			json_decref(doc);
			json_decref(patch);
			buf_release(&err);
		}
	}
}

/* A merge-keyed list of many elements merges in well under a second (hash lookups). */
static void test_large_list(void **state)
{
	(void)state;
	json_t *doc = J("{'spec':{'containers':[]}}"), *patch = J("{'spec':{'containers':[]}}"), *out = NULL;
	json_t *live = json_object_get(json_object_get(doc, "spec"), "containers");
	json_t *pl = json_object_get(json_object_get(patch, "spec"), "containers");
	struct buf err = BUF_INIT;
	char name[32];
	for (int i = 0; i < 20000; i++) {
		snprintf(name, sizeof(name), "c%d", i);
		json_array_append_new(live, json_pack("{s:s,s:i}", "name", name, "n", i));
		if (i % 2)
			json_array_append_new(pl, json_pack("{s:s,s:b}", "name", name, "tty", 1));
	}
	assert_int_equal(strategic_merge_patch_apply(doc, patch, "Pod", &out, &err), 0);
	json_t *res = json_object_get(json_object_get(out, "spec"), "containers");
	assert_int_equal(json_array_size(res), 20000);
	assert_true(json_is_true(json_object_get(json_array_get(res, 19999), "tty")));
	assert_string_equal(json_string_value(json_object_get(json_array_get(res, 0), "name")), "c0");
	json_decref(out);
	json_decref(doc);
	json_decref(patch);
	buf_release(&err);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_kubectl_apply),
		cmocka_unit_test(test_patch_metadata),
		cmocka_unit_test(test_directives),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_no_directive_leaks),
		cmocka_unit_test(test_large_list),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
