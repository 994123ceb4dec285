/* The API machinery's vocabulary: resources, their strategies, field errors.
 *
 * An API server serves a table of struct api_resource. Everything that differs between
 * resources lives in the resource's struct api_strategy (defaults, validation, printer
 * columns, selectable fields); handlers, storage, watch cache, discovery, OpenAPI and Table
 * printing are generic over the table. */
#ifndef URSA_API_H
#define URSA_API_H
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <time.h>

struct crd_def;
struct crd_version;

enum api_scope {
	SCOPE_CLUSTER,   /* /api/v1/{res}/{name}; stored at /registry/{res}/{name} */
	SCOPE_TENANT,    /* /api/v1/tenants/{t}/{res}/{name}; /registry/{res}/{t}/{name} */
	SCOPE_NAMESPACE, /* /api/v1/tenants/{t}/namespaces/{ns}/{res}/{name}; /registry/{res}/{t}/{ns}/{name} */
};

/* Subresources the generic server knows how to serve (bit set in api_resource.subresources). */
enum {
	SUB_STATUS = 1 << 0,   /* PUT/PATCH status only; main resource PUT keeps old status */
	SUB_SCALE = 1 << 1,    /* autoscaling/v1 Scale over spec.replicas / status.replicas / selector */
	SUB_BINDING = 1 << 2,  /* pods: POST Binding sets spec.nodeName and PodScheduled */
	SUB_EVICTION = 1 << 3, /* pods: POST policy/v1 Eviction deletes the pod */
	SUB_LOG = 1 << 4,      /* pods: GET log streamed from the node's kubelet */
	SUB_TOKEN = 1 << 5,    /* serviceaccounts: POST authentication.k8s.io/v1 TokenRequest */
	SUB_EXEC = 1 << 6,     /* pods: exec, attach, portforward upgrades tunnelled to the kubelet */
};

/* One column of a Table response (meta.k8s.io/v1 TableColumnDefinition). */
struct api_column {
	const char *name;        /* "Name", "Ready", ... as upstream prints them */
	const char *type;        /* "string", "integer", "date", "number" */
	const char *format;      /* "name" for the name column, else "" */
	const char *description;
	int priority;            /* 0: shown by default; 1: only with -o wide */
};

/* A field-selector label and the dotted JSON path whose value it compares. */
struct api_field {
	const char *label;  /* e.g. "spec.nodeName", "source" */
	const char *path;   /* e.g. "spec.nodeName", "source.component" */
	const char *absent; /* the value when the path is missing (e.g. "false" for booleans); NULL = "" */
};

/* Validation errors collected as Kubernetes StatusCause objects. */
struct field_errors {
	json_t *causes; /* array of {"reason","message","field"}; NULL until the first error */
};
/* reason is a CauseType: "FieldValueRequired", "FieldValueInvalid", "FieldValueNotSupported",
 * "FieldValueDuplicate", "FieldValueForbidden", "FieldValueTooLong", "FieldValueTypeInvalid".
 * The message reads like upstream's: for Invalid, `Invalid value: "x": <detail>`. */
void field_error_add(struct field_errors *e, const char *reason, const char *field, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
void field_error_required(struct field_errors *e, const char *field);
void field_errors_release(struct field_errors *e);
static inline bool field_errors_any(const struct field_errors *e) { return e->causes != NULL; }

struct api_strategy {
	/* Fills server-side defaults. Called on create and on every update of the main resource
	 * (so PUT of a stripped object gets the same defaults). May be NULL. */
	void (*defaults)(json_t *obj);
	/* Prepares a new object before validation: e.g. status.phase = Pending, generation.
	 * The generic code already set metadata uid, creationTimestamp, tenant, hashKey. May be NULL. */
	void (*prepare_create)(json_t *obj);
	/* Validates obj (after defaults); old is NULL on create. Generic metadata validation
	 * (name, labels, annotations, namespace, tenant) is done by the caller. May be NULL. */
	void (*validate)(const json_t *obj, const json_t *old, struct field_errors *errs);
	/* Printer columns for Table responses (the name column has format "name"). */
	const struct api_column *columns;
	size_t ncolumns;
	/* Appends exactly ncolumns cells for obj to the JSON array cells. */
	void (*cells)(const json_t *obj, time_t now, json_t *cells);
	/* The dotted paths cells reads ("spec.containers.*.name"; src/common/apiserver/jsontext.h), NULL-terminated:
	 * a list's Table parses only these parts of each object. NULL: cells gets the whole object. */
	const char *const *cell_paths;
	/* Field-selector fields beyond metadata.name and metadata.namespace (always supported). */
	const struct api_field *fields;
	size_t nfields;
};

struct api_resource {
	const char *group;    /* "" for the core group */
	const char *version;  /* "v1" */
	const char *plural;   /* "pods": URL segment and etcd key segment */
	const char *singular; /* "pod" */
	const char *kind;     /* "Pod"; lists are kind + "List" */
	enum api_scope scope;
	const char *short_names[4]; /* NULL-terminated, e.g. { "po", NULL } */
	unsigned subresources;      /* SUB_* bits */
	bool has_spec_generation;   /* metadata.generation tracks .spec changes (else any change but status) */
	bool system_only;           /* only the system tenant may create/update/delete (tenants, nodes) */
	const struct api_strategy *strategy;
	/* Its writes are heartbeats (node leases: hundreds a second, each alone): they may wait
	 * --etcd-heartbeat-linger-ms to share an etcd txn (etcd_lazy_prefix_add). */
	bool heartbeat;
	/* Create-only and never stored (access reviews, token reviews): no etcd prefix, no watch
	 * cache; POST is answered by the API server's handler for the plural (apiserver/reviews.c). */
	bool ephemeral;
	/* metrics.k8s.io (PodMetrics, NodeMetrics): get and list only, never stored; answered from
	 * the nodes' kubelets (apiserver/podmetrics.c). No strategy. */
	bool metrics;
	/* A custom resource (apiserver/crd.c builds such entries at run time from a tenant's
	 * CustomResourceDefinition; ursa/crd.h): its definition and the version this entry serves.
	 * Validation, pruning, defaulting, printer columns and selectable fields come from them,
	 * not from strategy (NULL). */
	const struct crd_def *crd;
	const struct crd_version *crd_version;
};

/* A tenant annotated TENANT_FINAL_BACKUP: "true" is backed up when deleted: its strategy gives it
 * the finalizer of the same name, which the tenant partition's controller manager takes away
 * once the backup is written (src/tenant-partition/controllers/finalbackup.c, ursa/backup.h). */
#define TENANT_FINAL_BACKUP "ursa.io/final-backup"

/* Kinds in src/common/kinds/: one strategy each, shared by every API server that serves them. */
extern const struct api_strategy strategy_tenant, strategy_namespace, strategy_pod, strategy_configmap,
	strategy_secret, strategy_serviceaccount, strategy_event, strategy_service, strategy_deployment,
	strategy_replicaset, strategy_lease, strategy_resourcequota, strategy_limitrange;
/* src/common/kinds/job.c, cronjob.c: batch/v1. */
extern const struct api_strategy strategy_job, strategy_cronjob;
/* src/common/kinds/endpoints.c, endpointslice.c, network.c: v1 Endpoints, discovery.k8s.io/v1
 * EndpointSlice, arktos.futurewei.com/v1 Network (ursa/ipnet.h has its address helpers). */
extern const struct api_strategy strategy_endpoints, strategy_endpointslice, strategy_network;
/* src/common/kinds/pdb.c: policy/v1 PodDisruptionBudget (ursa/pdb.h has its budget arithmetic). */
extern const struct api_strategy strategy_pdb;
/* src/common/kinds/hpa.c: autoscaling/v2 HorizontalPodAutoscaler (stored only; no controller). */
extern const struct api_strategy strategy_hpa;
/* src/common/kinds/statefulset.c, volume.c: apps/v1 StatefulSet and ControllerRevision, v1
 * PersistentVolumeClaim and PersistentVolume. */
extern const struct api_strategy strategy_statefulset, strategy_controllerrevision, strategy_persistentvolumeclaim,
	strategy_persistentvolume;
/* src/common/kinds/rbac.c: the RBAC kinds, and the create-only reviews (no stored state). */
extern const struct api_strategy strategy_role, strategy_clusterrole, strategy_rolebinding,
	strategy_clusterrolebinding, strategy_review;

/* src/common/kinds/crd.c: apiextensions.k8s.io/v1 CustomResourceDefinition (ursa/crd.h). */
extern const struct api_strategy strategy_crd;
#define CRD_CLEANUP_FINALIZER "customresourcecleanup.apiextensions.k8s.io"

/* Name validators (src/common/selector/names.c) and generic metadata validation (src/common/api/validation.c). */
bool valid_dns1123_label(const char *s);     /* [a-z0-9]([-a-z0-9]*[a-z0-9])?, <= 63 */
bool valid_dns1123_subdomain(const char *s); /* labels joined by '.', <= 253 */
/* Label key [prefix/]name and value syntax, as Kubernetes checks them. */
bool valid_label_key(const char *s);
bool valid_label_value(const char *s);
/* Validates metadata of obj for resource r: name (DNS-1123 subdomain, or label for namespaces
 * and tenants), labels, annotations (keys; total size <= 256 KiB), and that tenant/namespace are
 * strings. Adds causes to errs. */
void validate_object_meta(const struct api_resource *r, const json_t *obj, struct field_errors *errs);

/* FNV-1a 64 of the uid, folded into [0, INT64_MAX], as Arktos's metadata.hashKey. */
long long hash_key_of_uid(const char *uid);

#endif
