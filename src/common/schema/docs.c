/* Descriptions of the API types for the OpenAPI documents (what `kubectl explain` prints), kept
 * apart from the type tables so that those stay compact. Rows are {message name, JSON field
 * name or NULL for the message itself, text}; a shared message (ObjectMeta, PodSpec, Container,
 * LabelSelector) is described once and serves every kind that reaches it. The texts are ours:
 * what the field means and does in Ursa, in a sentence or two. tests/unit/schema/test_docs.c
 * checks that every row names a real field of its message and that every kind has a text. */
#include "ursa/schema.h"
#include <string.h>

#define K(m, t)    { m, NULL, t }
#define F(m, f, t) { m, f, t }

const struct schema_doc schema_docs[] = {
	/* ---- top-level kinds ---- */
	K("pm_custom_resource_definition", "Defines a new kind of object for its tenant (or, in the system tenant, for "
					   "every tenant): its group, names, scope, and per version an OpenAPI v3 schema "
					   "that validates, prunes and defaults its objects."),
	F("pm_crd_spec", "group", "The API group of the new kind; the CRD's name is <plural>.<group>."),
	F("pm_crd_spec", "scope", "Namespaced or Cluster (the tenant's cluster scope)."),
	F("pm_crd_spec", "versions", "The versions served; exactly one is the storage version."),
	F("pm_crd_version", "schema", "The version's structural OpenAPI v3 schema (openAPIV3Schema)."),
	F("pm_crd_version", "additionalPrinterColumns", "Columns kubectl get prints, each a JSONPath into the object."),
	K("pm_pod", "A group of containers scheduled together onto one node, sharing its network identity. The "
		    "scheduler binds it to a node; that node's kubelet runs it (in containers on containerd or as host "
		    "processes on real nodes, a simulation on hollow ones)."),
	K("pm_namespace", "A named scope inside a tenant: names of namespaced objects are unique per namespace, and "
			  "Roles, quotas and limit ranges apply per namespace."),
	K("pm_config_map", "Non-confidential configuration stored as key/value pairs (text in data, binary in "
			   "binaryData)."),
	K("pm_secret", "Confidential values (passwords, tokens, keys) stored as key/value pairs, base64 in data. "
		       "Who may read them is decided by the tenant's RBAC."),
	K("pm_service_account", "An identity for the processes of pods. Tokens issued for it are checked on every "
				"request: deleting the account revokes them at once."),
	K("pm_service", "A stable virtual address and ports for the pods its selector picks. The cluster IP "
			"comes from the tenant's Network range and its endpoints follow the ready pods; there is no "
			"data path yet, so the address routes nowhere."),
	K("pm_event", "A report of something that happened to an object (scheduled, started, failed, ...), read "
		      "with kubectl get events or describe."),
	K("pm_node", "A machine that runs pods, registered and kept up to date by its kubelet; in Ursa a node "
		     "belongs to the resource manager of its zone and may be a simulated hollow node."),
	K("pm_binding", "Assigns a pod to a node; the scheduler posts it to the pod's binding subresource."),
	K("pm_resource_quota", "Caps the total resources and object counts of one namespace; creates that would "
			       "exceed it are refused. Tenant-wide caps are set in the Tenant's spec.quota."),
	K("pm_persistent_volume_claim", "A request for storage of a size and access mode, to be bound to a "
					"PersistentVolume. Ursa stores claims (a StatefulSet makes one per template "
					"and ordinal) but provisions and mounts no storage."),
	K("pm_persistent_volume", "A piece of storage described to the cluster for claims to bind. Ursa stores it; "
				  "nothing provisions, attaches or mounts it."),
	K("pm_endpoints", "The addresses and ports of the pods behind a Service, ready and not ready, kept by the "
			  "endpoints controller."),
	K("pm_limit_range", "Per-object bounds and defaults in a namespace: minimum, maximum and default requests "
			    "and limits, applied to pods when they are created."),
	K("pm_pod_template", "A stored pod template, an object of its own that tools may copy pods from."),
	K("pm_replication_controller", "The older form of ReplicaSet: keeps a number of pods matching an "
				       "equality-based selector. Prefer a Deployment."),
	K("pm_tenant", "An Ursa (Arktos) tenant: a cluster of its own within the region, with its namespaces, "
		       "users, RBAC and service range. Cluster-scoped and managed by the system tenant; the gateway "
		       "places each new tenant on a tenant partition."),
	K("pm_network", "A tenant's network (Arktos). The Network default, made with every tenant, holds the range "
			"Service cluster IPs come from and the address of the tenant's DNS service."),
	K("pm_resource_manager", "A resource manager of the region (Ursa): the server that owns the nodes of one "
				 "zone, registered so that kubelets, schedulers and controllers find it."),
	K("pm_tenant_partition", "A tenant partition of the region (Ursa): an API server with its own etcd that "
				 "stores a share of the tenants."),
	K("pm_controller_revision", "An immutable snapshot of a workload's pod template (StatefulSet), kept for "
				    "rollout history and undo."),
	K("pm_hpa", "Scales a workload between minReplicas and maxReplicas by observed metrics. Ursa stores and "
		    "validates it; no autoscaler acts on it yet."),
	K("pm_deployment", "A replicated, stateless application: keeps a ReplicaSet of the current pod template at "
			   "the desired number of replicas and rolls template changes out gradually."),
	K("pm_replica_set", "Keeps a number of pods matching its selector running, creating or deleting pods; "
			    "normally owned by a Deployment."),
	K("pm_daemon_set", "Runs one copy of a pod on each eligible node. Served for the system tenant only: nodes "
			   "are shared by every tenant, so other tenants see none."),
	K("pm_stateful_set", "Runs pods with stable ordinal names (web-0, web-1, ...) and a claim per template and "
			     "ordinal, created, updated and removed in order."),
	K("pm_job", "Runs pods until enough of them finish successfully, retrying failed ones up to a limit."),
	K("pm_cron_job", "Creates a Job from its template on a cron schedule."),
	K("pm_lease", "A lock with a holder and a duration that the holder renews: node heartbeats, and leader "
		      "election of controllers and schedulers."),
	K("pm_pod_metrics", "The resource usage of a pod's containers as its node's kubelet measured it (read-only; "
			    "what kubectl top pods shows)."),
	F("pm_pod_metrics", "timestamp", "When the newer of the two samples the usage comes from was taken."),
	F("pm_pod_metrics", "window", "The time between the two samples the CPU rate comes from, e.g. 1.5s."),
	F("pm_pod_metrics", "containers", "The usage of each running container of the pod."),
	K("pm_container_metrics", "The usage of one container."),
	F("pm_container_metrics", "name", "The container's name in the pod's spec."),
	F("pm_container_metrics", "usage", "cpu (cores, e.g. 250000000n) as a rate over the window, and memory "
					   "(bytes, the working set)."),
	K("pm_node_metrics", "The resource usage of a whole node as its kubelet measured it (read-only; what kubectl "
			     "top nodes shows)."),
	F("pm_node_metrics", "timestamp", "When the newer of the two samples the usage comes from was taken."),
	F("pm_node_metrics", "window", "The time between the two samples the CPU rate comes from, e.g. 1.5s."),
	F("pm_node_metrics", "usage", "cpu (cores) as a rate over the window, and memory (bytes, the working set)."),
	K("pm_priority_class", "Gives a name to a scheduling priority; pods refer to it in priorityClassName."),
	K("pm_role", "A set of permissions (rules) within one namespace of a tenant, granted by RoleBindings."),
	K("pm_cluster_role", "A set of permissions over a whole tenant (every namespace and the tenant's "
			     "cluster-scoped resources), granted by ClusterRoleBindings or, per namespace, by "
			     "RoleBindings."),
	K("pm_role_binding", "Grants the permissions of a Role or ClusterRole to users, groups or service accounts: "
			     "in its namespace (RoleBinding) or in the whole tenant (ClusterRoleBinding)."),
	K("pm_pdb", "Limits how many pods of a set voluntary disruptions may take down at once: the eviction "
		    "subresource refuses (429) an eviction that would break it."),
	K("pm_endpoint_slice", "A share of the endpoints behind a Service, with each endpoint's conditions, kept by "
			       "the endpointslice controller."),
	K("pm_token_request", "Asks for a token of a service account (its token subresource); the token is bound "
			      "to the account and, optionally, to a pod or secret."),
	K("pm_token_review", "Asks the server whether a token is valid and whom it authenticates."),
	K("pm_self_subject_review", "Tells you who the server takes you to be (kubectl auth whoami)."),
	K("pm_self_subject_access_review", "Asks whether you may perform an action (kubectl auth can-i)."),
	K("pm_subject_access_review", "Asks whether a given user or group may perform an action; the "
				      "LocalSubjectAccessReview form asks within one namespace."),
	K("pm_self_subject_rules_review", "Lists the actions you may perform in a namespace (kubectl auth can-i "
					  "--list)."),

	/* ---- meta/v1 ---- */
	K("pm_object_meta", "Metadata every stored object has: its name, namespace and tenant, labels and "
			    "annotations, and what the server maintains (uid, versions, timestamps)."),
	F("pm_object_meta", "name", "The object's name, unique per kind within its namespace (or its tenant for "
				    "cluster-scoped kinds). Cannot be changed."),
	F("pm_object_meta", "generateName", "A prefix from which the server makes a unique name when name is "
					    "empty, by appending random characters."),
	F("pm_object_meta", "namespace", "The namespace the object lives in; empty for cluster-scoped kinds. "
					 "Defaults to the namespace of the request."),
	F("pm_object_meta", "tenant", "The tenant that owns the object (Ursa/Arktos). Set by the server from the "
				      "request path; a user's short paths resolve to the user's own tenant."),
	F("pm_object_meta", "selfLink", "Not set by Ursa (deprecated upstream)."),
	F("pm_object_meta", "uid", "A unique id the server gives the object at creation; a new object of the same "
				   "name gets a new uid. Read-only."),
	F("pm_object_meta", "resourceVersion", "An opaque version the server changes on every write; send it back "
					       "on update for optimistic concurrency, or use it to resume a watch."),
	F("pm_object_meta", "generation", "A counter the server raises when the desired state (spec) changes. "
					  "Read-only."),
	F("pm_object_meta", "creationTimestamp", "When the server created the object. Read-only."),
	F("pm_object_meta", "deletionTimestamp", "When deletion was requested; the object goes once its "
						 "finalizers are removed (and a pod once its kubelet has stopped it). "
						 "Read-only."),
	F("pm_object_meta", "deletionGracePeriodSeconds", "The grace period granted by the pending deletion, in "
							  "seconds. Read-only."),
	F("pm_object_meta", "labels", "Key/value pairs that selectors match (services, workloads, kubectl -l)."),
	F("pm_object_meta", "annotations", "Free-form key/value pairs for tools and people; not used for "
					   "selection."),
	F("pm_object_meta", "ownerReferences", "Objects this one depends on; when every owner is gone, the "
					       "garbage collector deletes it. Controllers set one with controller "
					       "true."),
	F("pm_object_meta", "finalizers", "Names of pending cleanup steps; a deleted object stays (with a "
					  "deletionTimestamp) until this list is empty."),
	F("pm_object_meta", "managedFields", "Which manager (kubectl, a controller) set which fields and with which "
					     "operation, for server-side apply."),
	F("pm_object_meta", "hashKey", "A number the server derives from the uid (an Arktos field). Read-only."),

	K("pm_owner_reference", "Names an object this one belongs to."),
	F("pm_owner_reference", "apiVersion", "API version of the owner."),
	F("pm_owner_reference", "kind", "Kind of the owner."),
	F("pm_owner_reference", "name", "Name of the owner, in the same namespace and tenant."),
	F("pm_owner_reference", "uid", "Uid of the owner; a new object of the same name is not the owner."),
	F("pm_owner_reference", "controller", "True for the one owner that manages this object (a ReplicaSet for "
					      "its pods)."),
	F("pm_owner_reference", "blockOwnerDeletion", "With foreground deletion, the owner is not removed before "
						      "this object."),
	F("pm_owner_reference", "hashKey", "The owner's hashKey (an Arktos field)."),

	K("pm_label_selector", "Picks objects by their labels: every matchLabels pair and every matchExpressions "
			       "requirement must hold. An empty selector matches everything."),
	F("pm_label_selector", "matchLabels", "Labels that must be present with exactly these values."),
	F("pm_label_selector", "matchExpressions", "Requirements on labels, all of which must hold."),
	K("pm_label_selector_requirement", "One requirement on a label: key, operator and values."),
	F("pm_label_selector_requirement", "key", "The label key."),
	F("pm_label_selector_requirement", "operator", "In, NotIn, Exists or DoesNotExist."),
	F("pm_label_selector_requirement", "values", "The values for In and NotIn; must be empty for Exists and "
						     "DoesNotExist."),

	K("pm_managed_fields_entry", "The fields one manager set, and how."),
	F("pm_managed_fields_entry", "manager", "The manager's name (the client's field manager)."),
	F("pm_managed_fields_entry", "operation", "Apply or Update."),
	F("pm_managed_fields_entry", "apiVersion", "The API version the fields are expressed in."),
	F("pm_managed_fields_entry", "time", "When the manager last changed these fields."),
	F("pm_managed_fields_entry", "fieldsType", "The format of fieldsV1: FieldsV1."),
	F("pm_managed_fields_entry", "fieldsV1", "The set of fields, as a tree of field keys."),
	F("pm_managed_fields_entry", "subresource", "The subresource written (status, scale), or empty."),

	K("pm_condition", "One aspect of an object's state: its type, whether it holds, since when and why."),
	F("pm_condition", "type", "What the condition is about, in CamelCase."),
	F("pm_condition", "status", "True, False or Unknown."),
	F("pm_condition", "observedGeneration", "The object's generation the condition was computed from."),
	F("pm_condition", "lastTransitionTime", "When status last changed."),
	F("pm_condition", "reason", "A machine-readable CamelCase reason for the last transition."),
	F("pm_condition", "message", "A human-readable explanation."),

	/* ---- pod template, PodSpec ---- */
	K("pm_pod_template_spec", "The pods a controller creates: their metadata (labels, annotations) and spec."),
	F("pm_pod_template_spec", "metadata", "Metadata given to each pod; its labels must match the owner's "
					      "selector."),
	F("pm_pod_template_spec", "spec", "The spec of each pod."),

	K("pm_pod_spec", "The desired state of a pod: its containers, where it may run, and how it is run."),
	F("pm_pod_spec", "containers", "The containers of the pod, at least one, started together. Each needs a "
				       "unique name."),
	F("pm_pod_spec", "initContainers", "Containers run one after another to completion before the others "
					   "start. Ursa's kubelet refuses pods with init containers for now."),
	F("pm_pod_spec", "ephemeralContainers", "Debugging containers added to a running pod (kubectl debug)."),
	F("pm_pod_spec", "restartPolicy", "When the kubelet restarts exited containers: Always (default), "
					  "OnFailure or Never. Jobs use OnFailure or Never."),
	F("pm_pod_spec", "terminationGracePeriodSeconds", "Seconds between asking the containers to stop (TERM) "
							  "and killing them. Default 30."),
	F("pm_pod_spec", "activeDeadlineSeconds", "Seconds after start at which the pod is failed and its "
						  "containers stopped."),
	F("pm_pod_spec", "dnsPolicy", "How the pod's DNS is set up: ClusterFirst (default), Default, "
				      "ClusterFirstWithHostNet or None (then dnsConfig)."),
	F("pm_pod_spec", "dnsConfig", "DNS servers, search domains and options for the pod, merged with those "
				      "dnsPolicy gives."),
	F("pm_pod_spec", "nodeSelector", "Labels a node must carry for the pod to be scheduled there."),
	F("pm_pod_spec", "serviceAccountName", "The service account the pod runs as. Default: default."),
	F("pm_pod_spec", "serviceAccount", "Old name of serviceAccountName."),
	F("pm_pod_spec", "automountServiceAccountToken", "Whether the service account's token is made available "
							 "to the containers."),
	F("pm_pod_spec", "nodeName", "The node the pod is bound to, set by the scheduler (or by you, bypassing "
				     "it)."),
	F("pm_pod_spec", "hostNetwork", "Use the node's network namespace instead of the pod's own."),
	F("pm_pod_spec", "hostPID", "Share the node's process id namespace."),
	F("pm_pod_spec", "hostIPC", "Share the node's IPC namespace."),
	F("pm_pod_spec", "shareProcessNamespace", "Let the pod's containers see each other's processes."),
	F("pm_pod_spec", "securityContext", "Security settings for every container of the pod (user and group "
					    "ids, fsGroup, sysctls); a container's own securityContext overrides "
					    "them."),
	F("pm_pod_spec", "imagePullSecrets", "Secrets holding registry credentials for pulling the images."),
	F("pm_pod_spec", "hostname", "The pod's host name. Default: the pod's name."),
	F("pm_pod_spec", "subdomain", "With hostname, gives the pod the name <hostname>.<subdomain>.<namespace> "
				      "under a headless Service of that name."),
	F("pm_pod_spec", "affinity", "Rules attracting the pod to nodes, or to or away from other pods."),
	F("pm_pod_spec", "schedulerName", "The scheduler that places the pod. Default: default-scheduler."),
	F("pm_pod_spec", "tolerations", "Node taints the pod tolerates. Ursa's hollow nodes carry "
					"ursa.io/hollow:NoSchedule, so only pods tolerating it land there."),
	F("pm_pod_spec", "hostAliases", "Extra entries for the pod's /etc/hosts."),
	F("pm_pod_spec", "priorityClassName", "The PriorityClass giving the pod its priority."),
	F("pm_pod_spec", "priority", "The pod's priority, filled in from priorityClassName at admission."),
	F("pm_pod_spec", "preemptionPolicy", "Whether the pod may preempt lower-priority pods: PreemptLowerPriority "
					     "or Never."),
	F("pm_pod_spec", "readinessGates", "Extra pod conditions that must be True for the pod to count as "
					   "ready."),
	F("pm_pod_spec", "runtimeClassName", "The RuntimeClass to run the pod with."),
	F("pm_pod_spec", "enableServiceLinks", "Whether the services of the namespace are passed to the containers "
					       "as environment variables."),
	F("pm_pod_spec", "overhead", "Resources the pod's sandbox uses beyond its containers, set from its "
				     "RuntimeClass."),
	F("pm_pod_spec", "topologySpreadConstraints", "How to spread matching pods evenly over zones, nodes or "
						      "other topology domains."),
	F("pm_pod_spec", "setHostnameAsFQDN", "Make the pod's host name its fully qualified domain name."),
	F("pm_pod_spec", "os", "The operating system the pod needs (linux or windows)."),
	F("pm_pod_spec", "hostUsers", "False to run the pod in its own user namespace."),
	F("pm_pod_spec", "schedulingGates", "While any gate is listed, the pod is not scheduled; remove them to "
					    "release it."),
	F("pm_pod_spec", "resourceClaims", "Dynamic resource claims the pod's containers may use."),
	F("pm_pod_spec", "resources", "Requests and limits for the pod as a whole, shared by its containers."),
	F("pm_pod_spec", "volumes", "Volumes the containers can mount by name. Stored and validated; Ursa's kubelet "
				    "mounts no volumes yet."),

	/* ---- Container ---- */
	K("pm_container", "One program of a pod with its environment, ports and resources."),
	F("pm_container", "name", "The container's name, unique in the pod (a DNS label)."),
	F("pm_container", "image", "The image to run, as a registry reference (busybox:1.36). Nodes on containerd "
				   "pull it; the process runtime ignores it and runs command and args on the node."),
	F("pm_container", "command", "The program and its arguments, replacing the image's entrypoint. Not run in "
				     "a shell; $(VAR) refers to an environment variable."),
	F("pm_container", "args", "Arguments to command (or to the image's entrypoint when command is empty)."),
	F("pm_container", "workingDir", "The directory the program starts in."),
	F("pm_container", "ports", "Ports the container listens on. Informational: a port not listed is reachable "
				   "all the same."),
	F("pm_container", "env", "Environment variables, in order; later ones may refer to earlier ones as $(NAME). "
				 "Ursa's kubelet takes plain values only (no valueFrom yet)."),
	F("pm_container", "envFrom", "Sources (ConfigMaps, Secrets) whose keys all become environment variables."),
	F("pm_container", "resources", "The CPU and memory the container asks for (requests, used for scheduling "
				       "and quota) and may use at most (limits)."),
	F("pm_container", "resizePolicy", "Whether changing a resource's request or limit restarts the "
					  "container."),
	F("pm_container", "restartPolicy", "For an init container only: Always makes it a sidecar that keeps "
					   "running beside the others."),
	F("pm_container", "volumeMounts", "Where the pod's volumes appear in the container's file system."),
	F("pm_container", "volumeDevices", "Block volumes the container sees as devices."),
	F("pm_container", "livenessProbe", "A check of whether the container is alive; failing it restarts the "
					   "container. Ursa's kubelet does not run probes yet."),
	F("pm_container", "readinessProbe", "A check of whether the container can serve; a pod that is not ready "
					    "is left out of its services' endpoints. Ursa's kubelet does not run "
					    "probes yet."),
	F("pm_container", "startupProbe", "A check that must succeed once before the other probes start. Ursa's "
					  "kubelet does not run probes yet."),
	F("pm_container", "lifecycle", "Actions run right after the container starts and right before it is "
				       "stopped."),
	F("pm_container", "terminationMessagePath", "File whose content becomes the message of the container's "
						    "terminated state. Default /dev/termination-log."),
	F("pm_container", "terminationMessagePolicy", "File, or FallbackToLogsOnError to use the end of the log "
						      "when the file is empty."),
	F("pm_container", "imagePullPolicy", "When the image is pulled: Always, IfNotPresent or Never (default "
					     "Always for :latest, else IfNotPresent). Only nodes on containerd pull images."),
	F("pm_container", "securityContext", "Security settings of this container (user, capabilities, "
					     "privileges), overriding the pod's."),
	F("pm_container", "stdin", "Keep a stdin open for the container (kubectl attach)."),
	F("pm_container", "stdinOnce", "Close stdin after the first attach ends."),
	F("pm_container", "tty", "Give the container a terminal; needs stdin."),
	K("pm_ephemeral_container", "A debugging container added to a running pod; it has no ports, probes or "
				    "resources."),
	F("pm_ephemeral_container", "targetContainerName", "The container whose process namespace it joins."),

	K("pm_container_port", "A port a container listens on."),
	F("pm_container_port", "name", "A name services may refer to in targetPort (an IANA service name)."),
	F("pm_container_port", "containerPort", "The port number in the pod, 1 to 65535."),
	F("pm_container_port", "protocol", "TCP (default), UDP or SCTP."),
	F("pm_container_port", "hostPort", "A port of the node forwarded to this one; rarely needed."),
	F("pm_container_port", "hostIP", "The node address hostPort binds."),

	K("pm_env_var", "One environment variable."),
	F("pm_env_var", "name", "The variable's name."),
	F("pm_env_var", "value", "The value; $(NAME) expands a variable defined earlier, $$ is a literal $."),
	F("pm_env_var", "valueFrom", "Take the value from a ConfigMap, a Secret, a field of the pod or a resource "
				     "of the container instead."),
	K("pm_env_var_source", "Where an environment variable's value comes from; set exactly one."),
	F("pm_env_var_source", "fieldRef", "A field of the pod: metadata.name, metadata.namespace, status.podIP, "
					   "spec.nodeName, ..."),
	F("pm_env_var_source", "resourceFieldRef", "A request or limit of a container (limits.cpu, "
						   "requests.memory, ...)."),
	F("pm_env_var_source", "configMapKeyRef", "One key of a ConfigMap."),
	F("pm_env_var_source", "secretKeyRef", "One key of a Secret."),
	K("pm_env_from_source", "A ConfigMap or Secret whose keys all become environment variables."),
	F("pm_env_from_source", "prefix", "A prefix added to every variable name."),
	F("pm_env_from_source", "configMapRef", "The ConfigMap to read."),
	F("pm_env_from_source", "secretRef", "The Secret to read."),
	F("pm_config_map_key_selector", "key", "The key to read."),
	F("pm_config_map_key_selector", "optional", "If true, a missing ConfigMap or key is not an error."),
	F("pm_secret_key_selector", "key", "The key to read."),
	F("pm_secret_key_selector", "optional", "If true, a missing Secret or key is not an error."),
	F("pm_config_map_env_source", "optional", "If true, a missing ConfigMap is not an error."),
	F("pm_secret_env_source", "optional", "If true, a missing Secret is not an error."),
	K("pm_local_object_reference", "Names an object in the same namespace."),
	F("pm_local_object_reference", "name", "The object's name."),
	F("pm_object_field_selector", "fieldPath", "The path of the field, as metadata.labels['app']."),
	F("pm_object_field_selector", "apiVersion", "The version the path is written in. Default v1."),
	F("pm_resource_field_selector", "resource", "The resource: limits.cpu, requests.memory, ..."),
	F("pm_resource_field_selector", "containerName", "The container; required for volumes."),
	F("pm_resource_field_selector", "divisor", "The unit the value is expressed in. Default 1."),

	K("pm_resource_requirements", "Requests and limits of compute resources (cpu, memory, ...)."),
	F("pm_resource_requirements", "requests", "What the container needs: the scheduler only places it on a node "
						  "with this much free, and quotas count it. Defaults to limits."),
	F("pm_resource_requirements", "limits", "The most the container may use."),
	F("pm_resource_requirements", "claims", "Resource claims of the pod this container uses."),

	K("pm_volume_mount", "Mounts one of the pod's volumes into the container."),
	F("pm_volume_mount", "name", "The name of the pod's volume."),
	F("pm_volume_mount", "mountPath", "Where the volume appears in the container; may not contain ':'."),
	F("pm_volume_mount", "subPath", "A path inside the volume to mount instead of its root."),
	F("pm_volume_mount", "subPathExpr", "Like subPath, with $(VAR) expanded from the container's "
					    "environment."),
	F("pm_volume_mount", "readOnly", "Mount read-only."),
	F("pm_volume_mount", "recursiveReadOnly", "With readOnly, whether submounts are read-only too: Disabled, "
						  "IfPossible or Enabled."),
	F("pm_volume_mount", "mountPropagation", "Whether mounts propagate between the node and the container: "
						 "None, HostToContainer or Bidirectional."),

	/* ---- probes, lifecycle ---- */
	K("pm_probe", "A periodic check of a container: one action (exec, httpGet, tcpSocket or grpc) and when "
		      "and how often to run it."),
	F("pm_probe", "initialDelaySeconds", "Seconds after the container starts before the first check."),
	F("pm_probe", "periodSeconds", "Seconds between checks. Default 10."),
	F("pm_probe", "timeoutSeconds", "Seconds a check may take before it counts as failed. Default 1."),
	F("pm_probe", "successThreshold", "Consecutive successes after a failure that make the probe pass again. "
					  "Default 1."),
	F("pm_probe", "failureThreshold", "Consecutive failures that make the probe fail. Default 3."),
	F("pm_probe", "terminationGracePeriodSeconds", "Grace period when a failed liveness probe stops the "
						       "container, instead of the pod's."),
	F("pm_probe_handler", "exec", "Run a command in the container; exit status 0 passes."),
	F("pm_probe_handler", "httpGet", "Send an HTTP GET; a status from 200 to 399 passes."),
	F("pm_probe_handler", "tcpSocket", "Open a TCP connection; connecting passes."),
	F("pm_probe_handler", "grpc", "Call the gRPC health service; SERVING passes."),
	K("pm_exec_action", "A command run in the container."),
	F("pm_exec_action", "command", "The program and arguments, not run in a shell."),
	K("pm_http_get_action", "An HTTP GET request."),
	F("pm_http_get_action", "path", "The path to request."),
	F("pm_http_get_action", "port", "The port, by number or by the container port's name."),
	F("pm_http_get_action", "host", "The host to connect to. Default: the pod's IP."),
	F("pm_http_get_action", "scheme", "HTTP (default) or HTTPS."),
	F("pm_http_get_action", "httpHeaders", "Extra request headers."),
	F("pm_tcp_socket_action", "port", "The port, by number or by the container port's name."),
	F("pm_tcp_socket_action", "host", "The host to connect to. Default: the pod's IP."),
	F("pm_grpc_action", "port", "The port of the gRPC server."),
	F("pm_grpc_action", "service", "The service name sent in the health check request."),
	K("pm_lifecycle", "Actions run at a container's start and stop."),
	F("pm_lifecycle", "postStart", "Run right after the container is created; if it fails, the container is "
				       "restarted."),
	F("pm_lifecycle", "preStop", "Run before the container is stopped; the grace period includes it."),
	F("pm_lifecycle_handler", "sleep", "Wait this long."),
	F("pm_sleep_action", "seconds", "Seconds to sleep."),

	/* ---- security ---- */
	K("pm_security_context", "Security settings of one container, overriding the pod's where both set one."),
	F("pm_security_context", "runAsUser", "The user id the program runs as."),
	F("pm_security_context", "runAsGroup", "The primary group id the program runs as."),
	F("pm_security_context", "runAsNonRoot", "Refuse to start the container if it would run as user 0."),
	F("pm_security_context", "privileged", "Run with the node's full privileges."),
	F("pm_security_context", "allowPrivilegeEscalation", "Whether the program may gain more privileges than "
							     "its parent (setuid binaries); Ursa's kubelet sets "
							     "no_new_privs unless this is true."),
	F("pm_security_context", "readOnlyRootFilesystem", "Mount the container's root file system read-only."),
	F("pm_security_context", "capabilities", "Linux capabilities to add to or drop from the default set."),
	F("pm_security_context", "seccompProfile", "The seccomp profile filtering the program's system calls; "
						   "RuntimeDefault when unset (Unconfined: system tenant only)."),
	F("pm_security_context", "seLinuxOptions", "The SELinux context of the container."),
	F("pm_security_context", "appArmorProfile", "The AppArmor profile of the container."),
	F("pm_security_context", "procMount", "Default or Unmasked /proc."),
	F("pm_security_context", "windowsOptions", "Settings for Windows containers."),
	F("pm_capabilities", "add", "Capabilities to add, as NET_ADMIN."),
	F("pm_capabilities", "drop", "Capabilities to drop; ALL drops every one."),
	K("pm_pod_security_context", "Security settings for all the containers of a pod."),
	F("pm_pod_security_context", "runAsUser", "The user id every container runs as, unless it sets its own."),
	F("pm_pod_security_context", "runAsGroup", "The primary group id of every container, unless it sets its "
						   "own."),
	F("pm_pod_security_context", "runAsNonRoot", "Refuse to start containers that would run as user 0."),
	F("pm_pod_security_context", "supplementalGroups", "Extra group ids given to every container's first "
							   "process."),
	F("pm_pod_security_context", "fsGroup", "A group id that owns the pod's volumes and is added to every "
						"container."),
	F("pm_pod_security_context", "fsGroupChangePolicy", "When volume ownership is changed to fsGroup: Always or "
							    "OnRootMismatch."),
	F("pm_pod_security_context", "sysctls", "Namespaced kernel parameters set for the pod."),
	F("pm_pod_security_context", "seccompProfile", "The seccomp profile of every container, unless it sets its "
						       "own."),

	/* ---- scheduling ---- */
	K("pm_toleration", "Lets the pod be scheduled onto (or stay on) nodes with a matching taint."),
	F("pm_toleration", "key", "The taint key; empty with operator Exists matches every taint."),
	F("pm_toleration", "operator", "Equal (default: the values must match) or Exists (any value)."),
	F("pm_toleration", "value", "The taint value, for Equal."),
	F("pm_toleration", "effect", "The taint effect matched: NoSchedule, PreferNoSchedule or NoExecute; empty "
				     "matches all."),
	F("pm_toleration", "tolerationSeconds", "For NoExecute: how long the pod stays on the node once the taint "
						"appears. Unset: forever."),
	K("pm_affinity", "Scheduling preferences and requirements relative to nodes and other pods."),
	F("pm_affinity", "nodeAffinity", "Which nodes the pod may or should run on, by node labels."),
	F("pm_affinity", "podAffinity", "Run near pods matching a selector (same node, zone, ...)."),
	F("pm_affinity", "podAntiAffinity", "Run away from pods matching a selector."),
	F("pm_node_affinity", "requiredDuringSchedulingIgnoredDuringExecution", "Node terms one of which a node "
										"must match for the pod to be "
										"placed there."),
	F("pm_node_affinity", "preferredDuringSchedulingIgnoredDuringExecution", "Weighted node terms the scheduler "
										 "prefers."),
	F("pm_node_selector", "nodeSelectorTerms", "Terms of which at least one must match."),
	F("pm_node_selector_term", "matchExpressions", "Requirements on node labels, all of which must hold."),
	F("pm_node_selector_term", "matchFields", "Requirements on node fields (metadata.name)."),
	F("pm_node_selector_requirement", "key", "The label (or field) key."),
	F("pm_node_selector_requirement", "operator", "In, NotIn, Exists, DoesNotExist, Gt or Lt."),
	F("pm_node_selector_requirement", "values", "The values compared with; one integer for Gt and Lt."),
	F("pm_preferred_scheduling_term", "weight", "1 to 100, added to a node's score when it matches."),
	F("pm_preferred_scheduling_term", "preference", "The node term to match."),
	F("pm_pod_affinity", "requiredDuringSchedulingIgnoredDuringExecution", "Terms every candidate node must "
									       "satisfy."),
	F("pm_pod_affinity", "preferredDuringSchedulingIgnoredDuringExecution", "Weighted terms the scheduler "
										"prefers."),
	F("pm_pod_anti_affinity", "requiredDuringSchedulingIgnoredDuringExecution", "Terms no candidate node may "
										    "violate."),
	F("pm_pod_anti_affinity", "preferredDuringSchedulingIgnoredDuringExecution", "Weighted terms the scheduler "
										     "prefers to keep."),
	K("pm_pod_affinity_term", "Pods (by labels and namespaces) and the topology domain (by node label key) in "
				  "which they count."),
	F("pm_pod_affinity_term", "labelSelector", "The pods that count."),
	F("pm_pod_affinity_term", "namespaces", "Namespaces of those pods. Default: the pod's own."),
	F("pm_pod_affinity_term", "namespaceSelector", "Namespaces of those pods, by label; ORed with "
						       "namespaces."),
	F("pm_pod_affinity_term", "topologyKey", "The node label whose value forms the domain, as "
						 "kubernetes.io/hostname or topology.kubernetes.io/zone."),
	F("pm_pod_affinity_term", "matchLabelKeys", "Label keys whose values, taken from the incoming pod, are "
						    "added to labelSelector."),
	F("pm_pod_affinity_term", "mismatchLabelKeys", "Label keys whose values, taken from the incoming pod, must "
						       "differ."),
	F("pm_weighted_pod_affinity_term", "weight", "1 to 100, added to a node's score when it satisfies the "
						     "term."),
	F("pm_weighted_pod_affinity_term", "podAffinityTerm", "The term."),
	K("pm_topology_spread_constraint", "How evenly matching pods must be spread over the domains of a "
					   "topology key."),
	F("pm_topology_spread_constraint", "maxSkew", "The largest allowed difference in matching pods between any "
						      "two domains."),
	F("pm_topology_spread_constraint", "topologyKey", "The node label forming the domains."),
	F("pm_topology_spread_constraint", "whenUnsatisfiable", "DoNotSchedule (a hard rule) or ScheduleAnyway (a "
								"preference)."),
	F("pm_topology_spread_constraint", "labelSelector", "The pods that are counted."),
	F("pm_topology_spread_constraint", "minDomains", "The least number of domains to count, when fewer "
							 "exist."),
	F("pm_host_alias", "ip", "The address."),
	F("pm_host_alias", "hostnames", "Names for that address."),
	F("pm_pod_dns_config", "nameservers", "Extra DNS server addresses."),
	F("pm_pod_dns_config", "searches", "Extra search domains."),
	F("pm_pod_dns_config", "options", "Resolver options."),

	/* ---- pod status ---- */
	K("pm_pod_status", "The observed state of a pod, written by the scheduler and the node's kubelet."),
	F("pm_pod_status", "phase", "Pending, Running, Succeeded, Failed or Unknown: a summary of the pod's life."),
	F("pm_pod_status", "conditions", "PodScheduled, Initialized, ContainersReady, Ready and others, each True, "
					 "False or Unknown."),
	F("pm_pod_status", "message", "Why the pod is in its state, for people."),
	F("pm_pod_status", "reason", "Why the pod is in its state, a CamelCase word (Evicted, ...)."),
	F("pm_pod_status", "hostIP", "The address of the node the pod runs on."),
	F("pm_pod_status", "hostIPs", "The addresses of that node."),
	F("pm_pod_status", "podIP", "The pod's address."),
	F("pm_pod_status", "podIPs", "The pod's addresses."),
	F("pm_pod_status", "startTime", "When the kubelet accepted the pod."),
	F("pm_pod_status", "containerStatuses", "The state of each container."),
	F("pm_pod_status", "initContainerStatuses", "The state of each init container."),
	F("pm_pod_status", "qosClass", "Guaranteed, Burstable or BestEffort, from the containers' requests and "
				       "limits."),
	F("pm_pod_status", "nominatedNodeName", "The node the scheduler freed room on by preemption."),
	F("pm_pod_status", "ephemeralContainerStatuses", "The state of each ephemeral container."),
	F("pm_pod_status", "resize", "Progress of a requested change of the containers' resources."),
	F("pm_pod_status", "resourceClaimStatuses", "The claims made for the pod's resourceClaims."),
	K("pm_container_status", "The observed state of one container."),
	F("pm_container_status", "name", "The container's name."),
	F("pm_container_status", "state", "What the container is doing now: waiting, running or terminated."),
	F("pm_container_status", "lastState", "The state the container was in before its last restart."),
	F("pm_container_status", "ready", "Whether the container passes its readiness check."),
	F("pm_container_status", "restartCount", "How many times the container was restarted."),
	F("pm_container_status", "started", "Whether the container has started (and passed its startup probe)."),
	F("pm_container_status", "image", "The image the container runs."),
	F("pm_container_status", "containerID", "The runtime's id of the container, <runtime>://<id>."),

	/* ---- volumes ---- */
	K("pm_volume", "A named volume of a pod, from exactly one source. Ursa's kubelet mounts no volumes yet."),
	F("pm_volume", "name", "The volume's name, which volumeMounts refer to."),
	F("pm_volume_source", "emptyDir", "An empty directory made for the pod, removed with it."),
	F("pm_volume_source", "hostPath", "A file or directory of the node."),
	F("pm_volume_source", "configMap", "The keys of a ConfigMap, as files."),
	F("pm_volume_source", "secret", "The keys of a Secret, as files."),
	F("pm_volume_source", "persistentVolumeClaim", "The volume bound to a claim of the pod's namespace."),
	F("pm_volume_source", "downwardAPI", "Fields of the pod (labels, annotations, resources) as files."),
	F("pm_volume_source", "projected", "Several sources (ConfigMaps, Secrets, downward API, service account "
					   "token) in one directory."),
	F("pm_volume_source", "ephemeral", "A volume from a claim made for the pod and deleted with it."),
	F("pm_volume_source", "nfs", "An NFS export."),
	F("pm_volume_source", "csi", "A volume of a CSI driver, for the pod's life."),
	F("pm_volume_source", "image", "The content of an image, read-only."),
	F("pm_host_path", "path", "The path on the node."),
	F("pm_host_path", "type", "What must be at the path: \"\" (no check), DirectoryOrCreate, Directory, "
				  "FileOrCreate, File, Socket, CharDevice or BlockDevice."),
	F("pm_empty_dir", "medium", "\"\" for the node's disk, Memory for a tmpfs."),
	F("pm_empty_dir", "sizeLimit", "The most the volume may hold."),
	F("pm_config_map_volume", "items", "Which keys to project, and to which paths. Default: every key, by its "
					   "name."),
	F("pm_config_map_volume", "defaultMode", "Permission bits of the files. Default 0644."),
	F("pm_config_map_volume", "optional", "If true, a missing ConfigMap gives an empty volume."),
	F("pm_secret_volume", "secretName", "The Secret to project."),
	F("pm_secret_volume", "items", "Which keys to project, and to which paths. Default: every key, by its "
				       "name."),
	F("pm_secret_volume", "defaultMode", "Permission bits of the files. Default 0644."),
	F("pm_secret_volume", "optional", "If true, a missing Secret gives an empty volume."),
	F("pm_key_to_path", "key", "The key."),
	F("pm_key_to_path", "path", "The relative path of its file."),
	F("pm_key_to_path", "mode", "Permission bits of that file."),
	F("pm_pvc_volume", "claimName", "The claim's name, in the pod's namespace."),
	F("pm_pvc_volume", "readOnly", "Mount read-only."),
	F("pm_downward_api_volume", "items", "The files and the pod fields they hold."),
	F("pm_downward_api_file", "path", "The relative path of the file."),
	F("pm_downward_api_file", "fieldRef", "A field of the pod."),
	F("pm_downward_api_file", "resourceFieldRef", "A request or limit of a container."),
	F("pm_projected_volume", "sources", "The sources to combine."),
	F("pm_service_account_token_projection", "audience", "The audience the token is for."),
	F("pm_service_account_token_projection", "expirationSeconds", "How long the token is valid. Default one "
								      "hour."),
	F("pm_service_account_token_projection", "path", "The relative path of the token file."),

	/* ---- claims ---- */
	K("pm_pvc_spec", "The storage a claim asks for."),
	F("pm_pvc_spec", "accessModes", "ReadWriteOnce, ReadOnlyMany, ReadWriteMany or ReadWriteOncePod."),
	F("pm_pvc_spec", "resources", "requests.storage: the size asked for."),
	F("pm_pvc_spec", "storageClassName", "The StorageClass to provision from; \"\" for none."),
	F("pm_pvc_spec", "volumeName", "A PersistentVolume to bind to."),
	F("pm_pvc_spec", "selector", "Labels of the PersistentVolumes the claim may bind."),
	F("pm_pvc_spec", "volumeMode", "Filesystem (default) or Block."),
	F("pm_pvc_spec", "dataSource", "An object (a snapshot, another claim) to fill the volume from."),
	F("pm_pvc_spec", "dataSourceRef", "Like dataSource, which may also name objects of other groups and "
					  "namespaces."),
	F("pm_volume_resource_requirements", "requests", "The size asked for (storage)."),
	F("pm_volume_resource_requirements", "limits", "The largest size allowed."),
	K("pm_pv_spec", "The storage a PersistentVolume describes and how claims may use it."),
	F("pm_pv_spec", "capacity", "The size (storage)."),
	F("pm_pv_spec", "accessModes", "How the volume may be mounted."),
	F("pm_pv_spec", "claimRef", "The claim bound to the volume."),
	F("pm_pv_spec", "persistentVolumeReclaimPolicy", "What happens once its claim is deleted: Retain, Delete or "
							 "Recycle."),
	F("pm_pv_spec", "storageClassName", "The StorageClass the volume belongs to."),

	/* ---- apps/v1 ---- */
	K("pm_deployment_spec", "The desired state of a Deployment."),
	F("pm_deployment_spec", "replicas", "How many pods to run. Default 1."),
	F("pm_deployment_spec", "selector", "Labels of the pods the Deployment manages; must match the template's "
					    "labels and cannot change."),
	F("pm_deployment_spec", "template", "The pods to run; changing it starts a rollout."),
	F("pm_deployment_spec", "strategy", "How old pods are replaced by new ones during a rollout."),
	F("pm_deployment_spec", "minReadySeconds", "Seconds a new pod must be ready before it counts as "
						   "available. Default 0."),
	F("pm_deployment_spec", "revisionHistoryLimit", "How many old ReplicaSets to keep for rollback. Default "
							"10."),
	F("pm_deployment_spec", "paused", "While true, template changes start no rollout."),
	F("pm_deployment_spec", "progressDeadlineSeconds", "Seconds without progress after which the rollout is "
							   "reported as failed (condition Progressing False). "
							   "Default 600."),
	K("pm_deployment_strategy", "How a Deployment replaces old pods."),
	F("pm_deployment_strategy", "type", "RollingUpdate (default): a few pods at a time, or Recreate: delete "
					    "every old pod before creating new ones."),
	F("pm_deployment_strategy", "rollingUpdate", "Bounds of a RollingUpdate."),
	K("pm_rolling_update_deployment", "How fast a rolling update goes."),
	F("pm_rolling_update_deployment", "maxUnavailable", "How many pods (a number or a percentage of replicas) "
							    "may be unavailable during the update. Default 25%."),
	F("pm_rolling_update_deployment", "maxSurge", "How many pods (a number or a percentage of replicas) may "
						      "exist beyond replicas during the update. Default 25%."),
	K("pm_deployment_status", "The observed state of a Deployment, written by its controller."),
	F("pm_deployment_status", "observedGeneration", "The generation the controller last acted on."),
	F("pm_deployment_status", "replicas", "Pods of every revision."),
	F("pm_deployment_status", "updatedReplicas", "Pods of the current template."),
	F("pm_deployment_status", "readyReplicas", "Pods that are ready."),
	F("pm_deployment_status", "availableReplicas", "Pods ready for at least minReadySeconds."),
	F("pm_deployment_status", "unavailableReplicas", "Pods still needed for replicas to be available."),
	F("pm_deployment_status", "conditions", "Available and Progressing, each True or False with a reason."),
	F("pm_deployment_status", "collisionCount", "Bumped when a ReplicaSet name collides, to make a new "
						    "name."),

	K("pm_replica_set_spec", "The desired state of a ReplicaSet."),
	F("pm_replica_set_spec", "replicas", "How many pods to run. Default 1."),
	F("pm_replica_set_spec", "selector", "Labels of the pods the ReplicaSet counts as its own; must match the "
					     "template's labels."),
	F("pm_replica_set_spec", "template", "The pods to create when there are too few."),
	F("pm_replica_set_spec", "minReadySeconds", "Seconds a new pod must be ready before it counts as "
						    "available."),
	K("pm_replica_set_status", "The observed state of a ReplicaSet."),
	F("pm_replica_set_status", "replicas", "Pods the ReplicaSet has."),
	F("pm_replica_set_status", "fullyLabeledReplicas", "Pods whose labels match the template's."),
	F("pm_replica_set_status", "readyReplicas", "Pods that are ready."),
	F("pm_replica_set_status", "availableReplicas", "Pods ready for at least minReadySeconds."),
	F("pm_replica_set_status", "observedGeneration", "The generation the controller last acted on."),
	F("pm_replica_set_status", "conditions", "Problems such as ReplicaFailure."),

	K("pm_daemon_set_spec", "The desired state of a DaemonSet."),
	F("pm_daemon_set_spec", "selector", "Labels of the DaemonSet's pods; must match the template's."),
	F("pm_daemon_set_spec", "template", "The pod run on each eligible node."),
	F("pm_daemon_set_spec", "updateStrategy", "How pods are replaced when the template changes."),
	F("pm_daemon_set_spec", "minReadySeconds", "Seconds a new pod must be ready before it counts as "
						   "available."),
	F("pm_daemon_set_spec", "revisionHistoryLimit", "How many old revisions to keep. Default 10."),
	F("pm_daemon_set_update_strategy", "type", "RollingUpdate (default) or OnDelete: replace a pod only when "
						   "it is deleted."),
	F("pm_daemon_set_update_strategy", "rollingUpdate", "Bounds of a RollingUpdate."),
	F("pm_rolling_update_daemon_set", "maxUnavailable", "How many nodes (a number or a percentage) may lack an "
							    "available pod during the update. Default 1."),
	F("pm_rolling_update_daemon_set", "maxSurge", "How many nodes may run an old and a new pod at once during "
						      "the update. Default 0."),
	K("pm_daemon_set_status", "The observed state of a DaemonSet."),
	F("pm_daemon_set_status", "desiredNumberScheduled", "Nodes that should run the pod."),
	F("pm_daemon_set_status", "currentNumberScheduled", "Nodes that run the pod and should."),
	F("pm_daemon_set_status", "numberMisscheduled", "Nodes that run the pod but should not."),
	F("pm_daemon_set_status", "numberReady", "Nodes whose pod is ready."),
	F("pm_daemon_set_status", "numberAvailable", "Nodes whose pod is available."),
	F("pm_daemon_set_status", "updatedNumberScheduled", "Nodes that run the current template."),

	K("pm_stateful_set_spec", "The desired state of a StatefulSet."),
	F("pm_stateful_set_spec", "replicas", "How many ordinals (pods) to run. Default 1."),
	F("pm_stateful_set_spec", "selector", "Labels of the StatefulSet's pods; must match the template's."),
	F("pm_stateful_set_spec", "template", "The pods to run; pod N is named <statefulset>-N."),
	F("pm_stateful_set_spec", "volumeClaimTemplates", "Claims made for each ordinal, named "
							  "<template>-<statefulset>-N, kept across pod restarts."),
	F("pm_stateful_set_spec", "serviceName", "The headless Service giving the pods their DNS names."),
	F("pm_stateful_set_spec", "podManagementPolicy", "OrderedReady (default): one pod at a time, in order; or "
							 "Parallel: all at once."),
	F("pm_stateful_set_spec", "updateStrategy", "How pods are replaced when the template changes."),
	F("pm_stateful_set_spec", "revisionHistoryLimit", "How many old ControllerRevisions to keep. Default 10."),
	F("pm_stateful_set_spec", "minReadySeconds", "Seconds a new pod must be ready before it counts as "
						     "available."),
	F("pm_stateful_set_spec", "persistentVolumeClaimRetentionPolicy", "Whether claims are deleted with the "
									  "StatefulSet or when it scales down."),
	F("pm_stateful_set_spec", "ordinals", "The number the first ordinal gets."),
	F("pm_stateful_set_update_strategy", "type", "RollingUpdate (default): replace pods from the highest "
						     "ordinal down; or OnDelete: only when a pod is deleted."),
	F("pm_stateful_set_update_strategy", "rollingUpdate", "Bounds of a RollingUpdate."),
	F("pm_rolling_update_stateful_set", "partition", "Only ordinals at or above this are updated; lower ones "
							 "keep the old template. Default 0."),
	F("pm_rolling_update_stateful_set", "maxUnavailable", "How many pods may be unavailable during the "
							      "update. Default 1."),
	F("pm_stateful_set_pvc_retention", "whenDeleted", "Retain (default) or Delete the claims when the "
							  "StatefulSet is deleted."),
	F("pm_stateful_set_pvc_retention", "whenScaled", "Retain (default) or Delete the claims of ordinals removed "
							 "by scaling down."),
	F("pm_stateful_set_ordinals", "start", "The first ordinal. Default 0."),
	K("pm_stateful_set_status", "The observed state of a StatefulSet."),
	F("pm_stateful_set_status", "replicas", "Pods the StatefulSet has."),
	F("pm_stateful_set_status", "readyReplicas", "Pods that are ready."),
	F("pm_stateful_set_status", "availableReplicas", "Pods ready for at least minReadySeconds."),
	F("pm_stateful_set_status", "currentReplicas", "Pods of currentRevision."),
	F("pm_stateful_set_status", "updatedReplicas", "Pods of updateRevision."),
	F("pm_stateful_set_status", "currentRevision", "The ControllerRevision of the pods below the update's "
						       "progress."),
	F("pm_stateful_set_status", "updateRevision", "The ControllerRevision of the current template."),
	F("pm_stateful_set_status", "observedGeneration", "The generation the controller last acted on."),

	F("pm_controller_revision", "data", "The snapshot: the parts of the workload's spec that make a "
					    "revision."),
	F("pm_controller_revision", "revision", "The revision number, rising with each new template."),

	/* ---- batch/v1 ---- */
	K("pm_job_spec", "The desired run of a Job."),
	F("pm_job_spec", "parallelism", "How many pods may run at once. Default 1."),
	F("pm_job_spec", "completions", "How many pods must succeed. Unset: the first success (with the others "
					"done) completes the Job."),
	F("pm_job_spec", "completionMode", "NonIndexed (default) or Indexed: each pod gets an index from 0 to "
					   "completions-1 and each index must succeed once."),
	F("pm_job_spec", "activeDeadlineSeconds", "Seconds after start at which the Job fails and its pods are "
						  "stopped."),
	F("pm_job_spec", "backoffLimit", "Pod failures after which the Job fails. Default 6."),
	F("pm_job_spec", "backoffLimitPerIndex", "For Indexed Jobs: failures allowed per index. Refused by Ursa for "
						 "now (per-index back-off is not implemented)."),
	F("pm_job_spec", "maxFailedIndexes", "For Indexed Jobs with backoffLimitPerIndex: failed indexes after "
					     "which the Job fails. Refused by Ursa for now."),
	F("pm_job_spec", "selector", "Labels of the Job's pods; generated unless manualSelector is true."),
	F("pm_job_spec", "manualSelector", "Let you write selector yourself instead of the generated one."),
	F("pm_job_spec", "template", "The pods to run; restartPolicy must be Never or OnFailure."),
	F("pm_job_spec", "ttlSecondsAfterFinished", "Seconds after the Job finishes at which it is deleted, with "
						    "its pods."),
	F("pm_job_spec", "suspend", "While true, no pods are created and running ones are stopped."),
	F("pm_job_spec", "podFailurePolicy", "Rules deciding, by exit code or pod condition, whether a failed pod "
					     "fails the Job, is ignored or counts."),
	F("pm_job_spec", "podReplacementPolicy", "When a replacement pod is made: TerminatingOrFailed or Failed "
						 "(only once the old pod is gone)."),
	F("pm_job_spec", "managedBy", "The controller that manages the Job; empty for the built-in one."),
	F("pm_job_spec", "successPolicy", "Rules by which an Indexed Job succeeds before every index has."),
	K("pm_pod_failure_policy", "Rules applied in order to each failed pod; the first match decides."),
	F("pm_pod_failure_policy", "rules", "The rules."),
	F("pm_pod_failure_rule", "action", "FailJob, FailIndex (needs backoffLimitPerIndex), Ignore (not counted "
						 "toward backoffLimit) or Count."),
	F("pm_pod_failure_rule", "onExitCodes", "Match by a container's exit code."),
	F("pm_pod_failure_rule", "onPodConditions", "Match by a pod condition (DisruptionTarget, ...)."),
	F("pm_pod_failure_exit_codes", "containerName", "The container checked; empty for all."),
	F("pm_pod_failure_exit_codes", "operator", "In or NotIn."),
	F("pm_pod_failure_exit_codes", "values", "The exit codes."),
	F("pm_pod_failure_conditions", "type", "The pod condition type."),
	F("pm_pod_failure_conditions", "status", "The status it must have. Default True."),
	K("pm_job_status", "The observed state of a Job, written by its controller."),
	F("pm_job_status", "conditions", "Complete, Failed, Suspended and others."),
	F("pm_job_status", "startTime", "When the controller started working on the Job."),
	F("pm_job_status", "completionTime", "When the Job completed."),
	F("pm_job_status", "active", "Pods running or pending."),
	F("pm_job_status", "succeeded", "Pods that succeeded."),
	F("pm_job_status", "failed", "Pods that failed."),
	F("pm_job_status", "ready", "Active pods that are ready."),
	F("pm_job_status", "terminating", "Pods being stopped."),
	F("pm_job_status", "completedIndexes", "For Indexed Jobs: the indexes done, as 1,3-5."),
	F("pm_job_status", "failedIndexes", "For Indexed Jobs: the indexes failed."),

	K("pm_cron_job_spec", "The schedule and Job template of a CronJob."),
	F("pm_cron_job_spec", "schedule", "When to run, in cron syntax: minute hour day-of-month month "
					  "day-of-week, or @hourly, @daily, ..."),
	F("pm_cron_job_spec", "timeZone", "The time zone of schedule (as Europe/Paris). Default: the "
					  "controller manager's local time zone."),
	F("pm_cron_job_spec", "startingDeadlineSeconds", "A run missed by more than this many seconds is "
							 "skipped."),
	F("pm_cron_job_spec", "concurrencyPolicy", "When a run is due while the previous one is active: Allow "
						   "(default), Forbid (skip it) or Replace (stop the old one)."),
	F("pm_cron_job_spec", "suspend", "While true, no run starts."),
	F("pm_cron_job_spec", "jobTemplate", "The Job each run creates."),
	F("pm_cron_job_spec", "successfulJobsHistoryLimit", "Finished successful Jobs to keep. Default 3."),
	F("pm_cron_job_spec", "failedJobsHistoryLimit", "Failed Jobs to keep. Default 1."),
	F("pm_job_template_spec", "metadata", "Metadata given to each Job."),
	F("pm_job_template_spec", "spec", "The spec of each Job."),
	K("pm_cron_job_status", "The observed state of a CronJob."),
	F("pm_cron_job_status", "active", "The Jobs running now."),
	F("pm_cron_job_status", "lastScheduleTime", "When a Job was last started."),
	F("pm_cron_job_status", "lastSuccessfulTime", "When a Job last succeeded."),

	/* ---- core/v1 kinds ---- */
	F("pm_config_map", "data", "Text values by key (keys: letters, digits, '-', '_', '.')."),
	F("pm_config_map", "binaryData", "Binary values by key, base64 in JSON; keys may not repeat those of "
					 "data."),
	F("pm_config_map", "immutable", "If true, data can no longer change (only deletion)."),
	F("pm_secret", "data", "Values by key, base64 in JSON."),
	F("pm_secret", "stringData", "Plain text values, write-only: merged into data on write."),
	F("pm_secret", "type", "What the secret holds: Opaque (default), "
			       "kubernetes.io/dockerconfigjson, kubernetes.io/tls, kubernetes.io/basic-auth, ..."),
	F("pm_secret", "immutable", "If true, data can no longer change (only deletion)."),
	F("pm_service_account", "secrets", "Secrets pods of this account may use (legacy)."),
	F("pm_service_account", "imagePullSecrets", "Registry credentials added to the pods of this account."),
	F("pm_service_account", "automountServiceAccountToken", "Whether pods of this account get its token, "
								"unless the pod says."),

	K("pm_service_spec", "The desired state of a Service."),
	F("pm_service_spec", "selector", "Labels of the pods behind the service; the endpoints controllers follow "
					 "the ready ones. Without a selector, endpoints are yours to write."),
	F("pm_service_spec", "ports", "The ports the service exposes and the pod ports they lead to."),
	F("pm_service_spec", "type", "ClusterIP (default), ExternalName, NodePort or LoadBalancer. NodePort and "
				     "LoadBalancer are refused for every tenant but system: node ports are shared "
				     "by all tenants."),
	F("pm_service_spec", "clusterIP", "The virtual address, allocated at creation from the tenant's Network "
					  "range unless given; None makes a headless service. Cannot change. No data "
					  "path yet: it routes nowhere."),
	F("pm_service_spec", "clusterIPs", "The virtual addresses; the first equals clusterIP."),
	F("pm_service_spec", "externalName", "For type ExternalName: the DNS name the service stands for."),
	F("pm_service_spec", "externalIPs", "Extra addresses for which nodes would accept the service's "
					    "traffic."),
	F("pm_service_spec", "sessionAffinity", "None (default) or ClientIP: send a client to the same pod."),
	F("pm_service_spec", "sessionAffinityConfig", "How long ClientIP affinity lasts."),
	F("pm_service_spec", "publishNotReadyAddresses", "List pods in the endpoints even when not ready."),
	F("pm_service_spec", "ipFamilies", "IPv4 and/or IPv6. Ursa allocates IPv4 addresses."),
	F("pm_service_spec", "ipFamilyPolicy", "SingleStack, PreferDualStack or RequireDualStack."),
	F("pm_service_spec", "loadBalancerIP", "A requested load balancer address (deprecated)."),
	F("pm_service_spec", "loadBalancerSourceRanges", "Client ranges a load balancer would admit."),
	F("pm_service_spec", "externalTrafficPolicy", "Cluster or Local: whether external traffic may go to pods "
						      "on other nodes."),
	F("pm_service_spec", "internalTrafficPolicy", "Cluster or Local: whether in-cluster traffic may go to pods "
						      "on other nodes."),
	F("pm_service_spec", "healthCheckNodePort", "Health check port for Local external traffic."),
	F("pm_service_spec", "allocateLoadBalancerNodePorts", "Whether a LoadBalancer gets node ports."),
	F("pm_service_spec", "loadBalancerClass", "Which load balancer implementation to use."),
	F("pm_service_spec", "trafficDistribution", "A preference for how traffic is spread over endpoints "
						    "(PreferClose)."),
	K("pm_service_port", "One port of a Service."),
	F("pm_service_port", "name", "The port's name; required when there are several ports."),
	F("pm_service_port", "protocol", "TCP (default), UDP or SCTP."),
	F("pm_service_port", "port", "The port on the service's address."),
	F("pm_service_port", "targetPort", "The pod port traffic goes to: a number or a container port's name. "
					   "Default: port."),
	F("pm_service_port", "nodePort", "The port on every node for NodePort and LoadBalancer services (system "
					 "tenant only)."),
	F("pm_service_port", "appProtocol", "The application protocol (http, h2c, ...)."),
	K("pm_service_status", "The observed state of a Service."),
	F("pm_service_status", "loadBalancer", "The load balancer's addresses, if any."),

	K("pm_namespace_spec", "The desired state of a Namespace."),
	F("pm_namespace_spec", "finalizers", "Cleanup steps that must finish before the namespace is removed; "
					     "kubernetes empties it of objects."),
	K("pm_namespace_status", "The observed state of a Namespace."),
	F("pm_namespace_status", "phase", "Active, or Terminating while its objects are being deleted (no new ones "
					  "may be created)."),
	F("pm_namespace_status", "conditions", "Progress and problems of the namespace's deletion."),

	K("pm_resource_quota_spec", "The caps of a ResourceQuota."),
	F("pm_resource_quota_spec", "hard", "Caps by resource name: requests.cpu, limits.memory, pods, "
					    "count/deployments.apps, ..."),
	F("pm_resource_quota_spec", "scopes", "Only count objects in these scopes (Terminating, BestEffort, ...)."),
	F("pm_resource_quota_spec", "scopeSelector", "Only count objects matching these scope requirements."),
	K("pm_resource_quota_status", "The caps and current usage of a ResourceQuota."),
	F("pm_resource_quota_status", "hard", "The caps being enforced."),
	F("pm_resource_quota_status", "used", "What the namespace uses now, by resource name."),

	K("pm_limit_range_spec", "The limits of a LimitRange."),
	F("pm_limit_range_spec", "limits", "One item per object type."),
	K("pm_limit_range_item", "Bounds and defaults for one type of object."),
	F("pm_limit_range_item", "type", "Container, Pod or PersistentVolumeClaim."),
	F("pm_limit_range_item", "max", "The most any object may ask for, by resource."),
	F("pm_limit_range_item", "min", "The least any object must ask for, by resource."),
	F("pm_limit_range_item", "default", "Limits given to containers that set none."),
	F("pm_limit_range_item", "defaultRequest", "Requests given to containers that set none."),
	F("pm_limit_range_item", "maxLimitRequestRatio", "The largest allowed limit/request ratio, by resource."),

	F("pm_pod_template", "template", "The pod template stored."),
	K("pm_replication_controller_spec", "The desired state of a ReplicationController."),
	F("pm_replication_controller_spec", "replicas", "How many pods to run. Default 1."),
	F("pm_replication_controller_spec", "selector", "Labels the pods must have (equality only)."),
	F("pm_replication_controller_spec", "template", "The pods to create."),
	F("pm_replication_controller_spec", "minReadySeconds", "Seconds a new pod must be ready before it counts "
							       "as available."),

	K("pm_node_spec", "The desired state of a Node."),
	F("pm_node_spec", "unschedulable", "If true, no new pods are placed on the node (kubectl cordon)."),
	F("pm_node_spec", "taints", "Taints repelling pods that do not tolerate them."),
	F("pm_node_spec", "podCIDR", "The pod address range of the node."),
	F("pm_node_spec", "podCIDRs", "The pod address ranges of the node."),
	F("pm_node_spec", "providerID", "The node's id at its cloud provider."),
	K("pm_taint", "A mark on a node that repels pods not tolerating it."),
	F("pm_taint", "key", "The taint's key, as ursa.io/hollow."),
	F("pm_taint", "value", "The taint's value."),
	F("pm_taint", "effect", "NoSchedule, PreferNoSchedule or NoExecute (also evicts running pods)."),
	F("pm_taint", "timeAdded", "When a NoExecute taint was added."),
	K("pm_node_status", "The observed state of a Node, reported by its kubelet."),
	F("pm_node_status", "capacity", "The node's total resources."),
	F("pm_node_status", "allocatable", "The resources pods may use: capacity minus the kubelet's "
					   "--system-reserved and --kube-reserved."),
	F("pm_node_status", "conditions", "Ready and pressure conditions."),
	F("pm_node_status", "addresses", "The node's addresses."),
	F("pm_node_status", "nodeInfo", "Versions and ids of the node's system."),

	K("pm_event_source", "The component that reported an event."),
	F("pm_event", "involvedObject", "The object the event is about."),
	F("pm_event", "reason", "A short CamelCase reason (Scheduled, Started, BackOff, ...)."),
	F("pm_event", "message", "What happened, for people."),
	F("pm_event", "type", "Normal or Warning."),
	F("pm_event", "source", "The component and host that reported it."),
	F("pm_event", "count", "How many times it happened."),
	F("pm_event", "firstTimestamp", "When it first happened."),
	F("pm_event", "lastTimestamp", "When it last happened."),
	F("pm_event", "eventTime", "When it happened, with microseconds."),
	F("pm_event", "reportingComponent", "The controller that reported it."),
	F("pm_event", "reportingInstance", "The instance of that controller."),
	F("pm_binding", "target", "The node to bind the pod to."),

	K("pm_object_reference", "Names an object of any kind."),
	F("pm_object_reference", "kind", "The kind of the object."),
	F("pm_object_reference", "namespace", "Its namespace."),
	F("pm_object_reference", "name", "Its name."),
	F("pm_object_reference", "uid", "Its uid."),
	F("pm_object_reference", "apiVersion", "Its API version."),
	F("pm_object_reference", "resourceVersion", "The version referred to."),
	F("pm_object_reference", "fieldPath", "A part of the object, as spec.containers{web}."),

	F("pm_endpoints", "subsets", "Groups of addresses that share the same ports."),
	F("pm_endpoint_subset", "addresses", "Addresses of ready pods."),
	F("pm_endpoint_subset", "notReadyAddresses", "Addresses of pods not ready yet."),
	F("pm_endpoint_subset", "ports", "The ports of those addresses."),
	F("pm_endpoint_address", "ip", "The pod's address."),
	F("pm_endpoint_address", "targetRef", "The pod."),
	F("pm_endpoint_address", "nodeName", "The node the pod runs on."),
	F("pm_endpoint_slice", "addressType", "IPv4, IPv6 or FQDN."),
	F("pm_endpoint_slice", "endpoints", "The endpoints of this slice."),
	F("pm_endpoint_slice", "ports", "The ports of every endpoint of the slice."),
	F("pm_slice_endpoint", "addresses", "The endpoint's addresses."),
	F("pm_slice_endpoint", "conditions", "Whether it is ready, serving and terminating."),
	F("pm_slice_endpoint", "targetRef", "The pod."),
	F("pm_slice_endpoint", "nodeName", "The node the pod runs on."),
	F("pm_endpoint_conditions", "ready", "Serving and not terminating."),
	F("pm_endpoint_conditions", "serving", "Passing its readiness check, terminating or not."),
	F("pm_endpoint_conditions", "terminating", "Being stopped."),

	/* ---- Ursa / Arktos kinds ---- */
	K("pm_tenant_spec", "The desired state of a Tenant."),
	F("pm_tenant_spec", "quota", "Caps over the whole tenant, all namespaces together (pods, cpu, ...); a "
				     "create that would exceed them is refused."),
	F("pm_tenant_spec", "storageClusterId", "The storage cluster of the tenant (Arktos); kept as given."),
	F("pm_tenant_spec", "finalizers", "Cleanup steps to finish before the tenant is removed."),
	K("pm_tenant_quota", "Resource caps (hard) and, in the status, usage (used) by resource name."),
	F("pm_tenant_quota", "hard", "Caps by resource name, as pods, requests.cpu, limits.memory."),
	F("pm_tenant_quota", "used", "What the tenant uses now, by resource name."),
	K("pm_tenant_status", "The observed state of a Tenant."),
	F("pm_tenant_status", "phase", "Active once the tenant is created."),
	F("pm_tenant_status", "quota", "The caps being enforced and the tenant's usage."),
	K("pm_network_spec", "The desired state of a Network."),
	F("pm_network_spec", "type", "flat (the only type, and the default): every pod of the tenant reaches every "
				     "other."),
	F("pm_network_spec", "serviceCIDR", "The IPv4 range Service cluster IPs are allocated from. "
					    "10.96.0.0/16 by default; every tenant may use the same range, as tenants "
					    "are isolated. Cannot change."),
	K("pm_network_status", "The observed state of a Network, written by the network controller."),
	F("pm_network_status", "phase", "Pending until the tenant's DNS service (kube-system/kube-dns) exists, "
					"then Ready; Failed when its address is taken."),
	F("pm_network_status", "dnsServiceIP", "The address of the tenant's DNS service, the tenth of the range. "
					       "Nothing answers DNS on it yet."),
	F("pm_network_status", "message", "Why the network failed."),
	F("pm_resource_manager_spec", "endpoints", "URLs of the resource manager's API server."),
	F("pm_resource_manager_spec", "zone", "The zone whose nodes it owns."),
	F("pm_tenant_partition_spec", "endpoints", "URLs of the tenant partition's API server."),

	/* ---- other groups ---- */
	K("pm_lease_spec", "Who holds a lease, and until when."),
	F("pm_lease_spec", "holderIdentity", "The current holder."),
	F("pm_lease_spec", "leaseDurationSeconds", "How long the holder keeps the lease without renewing it."),
	F("pm_lease_spec", "acquireTime", "When the holder took the lease."),
	F("pm_lease_spec", "renewTime", "When the holder last renewed it."),
	F("pm_lease_spec", "leaseTransitions", "How many times the lease changed holder."),
	F("pm_priority_class", "value", "The priority; higher is more important."),
	F("pm_priority_class", "globalDefault", "Give this priority to pods that name no class (one class at "
						"most)."),
	F("pm_priority_class", "description", "What the class is for."),
	F("pm_priority_class", "preemptionPolicy", "PreemptLowerPriority (default) or Never."),

	F("pm_role", "rules", "The permissions the role grants."),
	F("pm_cluster_role", "rules", "The permissions the role grants."),
	F("pm_cluster_role", "aggregationRule", "Makes the rules the union of those of the ClusterRoles matching "
						"its selectors."),
	K("pm_policy_rule", "Permits some verbs on some resources (or non-resource URLs)."),
	F("pm_policy_rule", "verbs", "get, list, watch, create, update, patch, delete, deletecollection, or * for "
				     "all."),
	F("pm_policy_rule", "apiGroups", "API groups of the resources; \"\" is the core group, * all."),
	F("pm_policy_rule", "resources", "Resources, as pods or pods/log; * for all."),
	F("pm_policy_rule", "resourceNames", "Only these object names; empty for all."),
	F("pm_policy_rule", "nonResourceURLs", "Paths that are not resources, as /healthz (ClusterRoles only)."),
	F("pm_role_binding", "subjects", "Who gets the permissions."),
	F("pm_role_binding", "roleRef", "The Role or ClusterRole granted. Cannot change."),
	K("pm_subject", "A user, group or service account."),
	F("pm_subject", "kind", "User, Group or ServiceAccount."),
	F("pm_subject", "name", "Its name; users and groups are those of the tenant (ursa:tenant-admins, ...)."),
	F("pm_subject", "namespace", "For a ServiceAccount, its namespace."),
	F("pm_subject", "apiGroup", "rbac.authorization.k8s.io for users and groups, \"\" for service accounts."),
	F("pm_role_ref", "kind", "Role or ClusterRole."),
	F("pm_role_ref", "name", "Its name."),
	F("pm_role_ref", "apiGroup", "rbac.authorization.k8s.io."),

	K("pm_pdb_spec", "The desired protection of a PodDisruptionBudget."),
	F("pm_pdb_spec", "selector", "Labels of the pods protected."),
	F("pm_pdb_spec", "minAvailable", "Pods (a number or a percentage) that must stay available through an "
					 "eviction."),
	F("pm_pdb_spec", "maxUnavailable", "Pods (a number or a percentage) that may be unavailable after an "
					   "eviction. Set this or minAvailable."),
	F("pm_pdb_spec", "unhealthyPodEvictionPolicy", "IfHealthyBudget (default) or AlwaysAllow: whether pods not "
						       "ready may be evicted regardless of the budget."),
	K("pm_pdb_status", "The observed state of a PodDisruptionBudget, written by the disruption controller."),
	F("pm_pdb_status", "disruptionsAllowed", "How many more evictions are allowed now."),
	F("pm_pdb_status", "currentHealthy", "Protected pods that are healthy."),
	F("pm_pdb_status", "desiredHealthy", "Healthy pods the budget requires."),
	F("pm_pdb_status", "expectedPods", "Protected pods counted."),
	F("pm_pdb_status", "disruptedPods", "Pods evicted but not yet gone, with when."),
	F("pm_pdb_status", "observedGeneration", "The generation the controller last acted on."),
	F("pm_pdb_status", "conditions", "DisruptionAllowed."),

	K("pm_hpa_spec", "The desired scaling of a HorizontalPodAutoscaler."),
	F("pm_hpa_spec", "scaleTargetRef", "The workload to scale (a Deployment, StatefulSet, ...)."),
	F("pm_hpa_spec", "minReplicas", "The fewest replicas. Default 1."),
	F("pm_hpa_spec", "maxReplicas", "The most replicas."),
	F("pm_hpa_spec", "metrics", "The metrics compared with their targets; the largest replica count any asks "
				    "for wins."),
	F("pm_hpa_spec", "behavior", "How fast to scale up and down."),
	F("pm_cross_version_object_reference", "kind", "The kind of the target."),
	F("pm_cross_version_object_reference", "name", "Its name."),
	F("pm_cross_version_object_reference", "apiVersion", "Its API version."),
	K("pm_metric_spec", "One metric and its target."),
	F("pm_metric_spec", "type", "Resource, ContainerResource, Pods, Object or External."),
	F("pm_metric_spec", "resource", "A resource (cpu, memory) of the pods."),
	F("pm_metric_spec", "containerResource", "A resource of one container of the pods."),
	F("pm_metric_spec", "pods", "A metric of each pod, averaged."),
	F("pm_metric_spec", "object", "A metric of one object."),
	F("pm_metric_spec", "external", "A metric from outside the cluster."),
	F("pm_resource_metric_source", "name", "The resource: cpu or memory."),
	F("pm_resource_metric_source", "target", "The target value."),
	K("pm_metric_target", "The value a metric should have."),
	F("pm_metric_target", "type", "Utilization, Value or AverageValue."),
	F("pm_metric_target", "value", "The target value of the metric."),
	F("pm_metric_target", "averageValue", "The target value per pod."),
	F("pm_metric_target", "averageUtilization", "The target as a percentage of the pods' requests."),
	F("pm_hpa_behavior", "scaleUp", "Rules for scaling up."),
	F("pm_hpa_behavior", "scaleDown", "Rules for scaling down."),
	F("pm_hpa_scaling_rules", "stabilizationWindowSeconds", "Past recommendations considered, to avoid "
								"flapping."),
	F("pm_hpa_scaling_rules", "selectPolicy", "Max, Min or Disabled: which policy's change applies."),
	F("pm_hpa_scaling_rules", "policies", "Limits on how much may change per period."),
	K("pm_hpa_status", "The observed state of a HorizontalPodAutoscaler."),
	F("pm_hpa_status", "currentReplicas", "The replicas the target has."),
	F("pm_hpa_status", "desiredReplicas", "The replicas the autoscaler wants."),
};

const size_t schema_ndocs = sizeof(schema_docs) / sizeof(schema_docs[0]);

const char *schema_doc(const struct pb_msg *m, const char *field)
{
	if (!m || !m->name)
		return NULL;
	for (size_t i = 0; i < schema_ndocs; i++) {
		const struct schema_doc *d = &schema_docs[i];
		if (strcmp(d->msg, m->name) != 0)
			continue;
		if (field ? d->field && strcmp(d->field, field) == 0 : !d->field)
			return d->text;
	}
	return NULL;
}
