/* Shared helpers of the kind strategies (module-private): JSON defaults, Table cells, the pod
 * spec (used by pods and by the pod templates of Deployment, ReplicaSet and DaemonSet) and the
 * workload checks those three share. All json_t arguments are borrowed. */
#ifndef URSA_KINDS_COMMON_H
#define URSA_KINDS_COMMON_H
#include <jansson.h>
#include <stdbool.h>
#include <time.h>
#include "api/validation.h"
#include "ursa/api.h"
#include "ursa/buf.h"

/* ---- defaults ---- */
/* Sets obj[key] when it is absent, null or "" (Go's zero value means "unset"). */
void default_str(json_t *obj, const char *key, const char *value);
/* Sets obj[key] when absent or null. */
void default_int(json_t *obj, const char *key, long long value);
void default_bool(json_t *obj, const char *key, bool value);
/* Sets obj[key] = {} when it is absent or null; returns obj[key] (borrowed; may be a non-object
 * the client sent, which validation then reports). */
json_t *default_obj(json_t *obj, const char *key);
/* Integer at a dotted path, or dflt when absent or not an integer. */
long long int_at(const json_t *obj, const char *dotted, long long dflt);

/* ---- Table cells (append to the cells array) ---- */
#define COLUMN_NAME { "Name", "string", "name", "Name must be unique within a namespace (or tenant, for " \
		      "tenant-scoped resources).", 0 }
#define COLUMN_AGE { "Age", "string", "", "CreationTimestamp is a timestamp representing the server time " \
		     "when this object was created.", 0 }
#define COLUMN_CONTAINERS { "Containers", "string", "", "Names of each container in the template.", 1 }
#define COLUMN_IMAGES { "Images", "string", "", "Images referenced by each container in the template.", 1 }

void cell_str(json_t *cells, const char *s);                      /* NULL -> "" */
void cell_str_or(json_t *cells, const char *s, const char *none); /* NULL or "" -> none */
void cell_int(json_t *cells, long long v);
void cell_name(const json_t *obj, json_t *cells);
/* Age since metadata.creationTimestamp, "<unknown>" when absent or unparseable. */
void cell_age(const json_t *obj, time_t now, json_t *cells);
/* Name, status.phase, age: the cells of namespaces and tenants. */
void cells_name_phase_age(const json_t *obj, time_t now, json_t *cells);
/* The field selector status.phase. */
extern const struct api_field phase_fields[1];
/* spec.finalizers, if present, is an array of qualified names. */
void validate_spec_finalizers(const json_t *obj, struct field_errors *errs);
/* Appends the age since an RFC3339 timestamp (or "<unknown>") to out. */
void since_add(struct buf *out, const char *ts, time_t now);
/* labels.FormatLabels: "k=v,k2=v2" sorted by key; "<none>" for an empty or absent map. */
void labels_format(const json_t *map, struct buf *out);
void cell_labels(json_t *cells, const json_t *map);
/* A metav1.LabelSelector as a selector string (sorted requirements). An absent or empty selector
 * prints as empty_text; an unparseable one as bad_text. */
void cell_selector(json_t *cells, const json_t *sel, const char *empty_text, const char *bad_text);
/* Two cells: container names and images of a pod spec, comma-joined. */
void cell_containers_images(json_t *cells, const json_t *pod_spec);

/* ---- ConfigMap and Secret data (kinds_common.c) ---- */
#define CONFIG_DATA_MAX (1024 * 1024) /* bytes of keys plus (decoded) values */
/* Checks the keys of map (an object) at field ("data"): `[-._a-zA-Z0-9]+`, <= 253, not "."/".." or
 * a ".." prefix. Keys already in seen (may be NULL) are duplicates. Adds each key's length and its
 * value's size (decoded when base64, which must then be valid) to *size. */
void validate_config_data(const json_t *map, const char *field, bool base64, const json_t *seen, size_t *size,
			  struct field_errors *errs);
/* When old has immutable=true: data, binaryData (or stringData) and immutable may not change. */
void validate_immutable_data(const json_t *obj, const json_t *old, struct field_errors *errs);

/* ---- pod spec (podspec.c) ---- */
enum pod_spec_owner {
	PODSPEC_POD,      /* a Pod's spec: admission defaults (service account, priority, tolerations) too */
	PODSPEC_TEMPLATE, /* spec.template.spec of a workload */
};
void pod_spec_defaults(json_t *spec, enum pod_spec_owner owner);
/* Validates a pod spec at path (e.g. "spec" or "spec.template.spec"). */
void pod_spec_validate(const json_t *spec, const char *path, enum pod_spec_owner owner, struct field_errors *errs);
/* "Guaranteed", "Burstable" or "BestEffort" for a (defaulted) pod spec. */
const char *pod_spec_qos_class(const json_t *spec);

/* ---- workloads: Deployment, ReplicaSet, DaemonSet (workload.c) ---- */
/* Defaults spec.template.spec of obj, if there is a template. */
void workload_template_defaults(json_t *obj);
/* spec.selector (required, non-empty, immutable when old != NULL), spec.template (labels match
 * the selector, restartPolicy Always, pod spec), spec.replicas >= 0, minReadySeconds,
 * revisionHistoryLimit. what names the kind in "empty selector is invalid for <what>". */
/* IntOrString that is an integer >= 0 or "N%" (N <= 100 when cap100). Returns true when the
 * value is zero (0 or "0%"). Absent values pass and are not zero. */
bool validate_int_or_percent(const json_t *v, const char *field, bool cap100, struct field_errors *errs);
void workload_validate(const json_t *obj, const json_t *old, const char *what, struct field_errors *errs);

/* ---- volumes (volume.c) ---- */
/* Validates a PersistentVolumeClaim spec at prefix ("spec", "spec.volumeClaimTemplates[0].spec"):
 * accessModes (known, at least one), resources.requests.storage (a positive quantity), volumeMode. */
void pvc_spec_validate(const json_t *spec, const char *prefix, struct field_errors *errs);

/* ---- batch: Job and CronJob (job.c) ---- */
/* Defaults of a Job spec (completions and parallelism 1 when both unset, backoffLimit 6,
 * completionMode NonIndexed, suspend false, the template's pod spec). spec may be a non-object. */
void job_spec_defaults(json_t *spec);
/* Validates a Job spec at prefix ("spec", "spec.jobTemplate.spec"); old_spec (NULL on create)
 * makes selector and completionMode immutable. need_selector: the selector is required and must
 * match the template's labels (a Job's; a CronJob's template has none). Template restartPolicy
 * must be Never or OnFailure. */
void job_spec_validate(const json_t *spec, const json_t *old_spec, const char *prefix, bool need_selector,
		       struct field_errors *errs);

#endif
