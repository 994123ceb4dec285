/* CustomResourceDefinitions (apiextensions.k8s.io/v1): the definition as the servers use it, the
 * structural OpenAPI v3 schema of each version (validation, pruning, defaulting), and the
 * JSONPath subset of additionalPrinterColumns. src/common/crd (ursa_crd); pure: no I/O, no
 * globals; everything returned is owned by the caller unless it says borrowed.
 *
 * Errors are Kubernetes StatusCauses (struct field_errors, ursa/api.h) with the field's path in
 * Kubernetes' notation ("spec.versions[0].schema.openAPIV3Schema.properties[spec].type" for a
 * CRD, "spec.cronSpec" or "spec.items[2].name" for a custom resource). */
#ifndef URSA_CRD_H
#define URSA_CRD_H
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "ursa/api.h"
#include "ursa/buf.h"

/* ---- structural schemas (schema.c, validate.c, prune.c, default.c) ---- */

/* What a schema may cost before it is refused (422 on the CRD): nesting, nodes, and the size
 * of its JSON text. */
#define CRD_SCHEMA_MAX_DEPTH 32
#define CRD_SCHEMA_MAX_NODES 5000
#define CRD_SCHEMA_MAX_BYTES (1u << 20)

struct crd_schema; /* compiled, immutable after compile: any number of threads may use it */

/* Compiles an openAPIV3Schema (borrowed; the result keeps its own copy) into *ret. Checks that
 * it is structural as Kubernetes defines it (every node has a type, or x-kubernetes-int-or-string
 * / x-kubernetes-preserve-unknown-fields; properties and additionalProperties not both; the root
 * is an object; metadata at the root may only restrict name and generateName; no
 * x-kubernetes-validations: "CEL validation rules are not supported", ...), that the limits above
 * hold, and that defaults are valid under their own node. base is the path of the schema in the
 * CRD, prefixed to every cause's field. 0, or -1 with causes added (and *ret NULL). */
int crd_schema_compile(const json_t *openapi_v3, const char *base, struct crd_schema **ret, struct field_errors *errs);
void crd_schema_free(struct crd_schema *s); /* NULL is fine */
/* The schema as given (borrowed, valid for the life of s): for the OpenAPI documents. */
const json_t *crd_schema_json(const struct crd_schema *s);

/* Validates a custom resource (the whole object; apiVersion, kind and metadata are the server's,
 * only metadata's schema restrictions on name/generateName apply) against s: types (integer vs
 * number, int-or-string), required, enum, pattern (POSIX ERE via regcomp, compiled once in
 * crd_schema_compile), minimum/maximum (exclusive too), multipleOf, minLength/maxLength (in
 * characters), minItems/maxItems, uniqueItems, minProperties/maxProperties, format (int32,
 * int64, float, double, byte, date, date-time, uuid, hostname, ipv4, ipv6, cidr, email, uri:
 * unknown formats pass), nullable, x-kubernetes-list-type set/map (duplicates, map keys),
 * x-kubernetes-embedded-resource (apiVersion, kind and metadata required inside). Adds one cause
 * per violation (reasons as upstream: FieldValueRequired, FieldValueInvalid,
 * FieldValueNotSupported, FieldValueTypeInvalid, FieldValueTooLong, FieldValueDuplicate,
 * FieldValueTooMany). */
void crd_schema_validate(const struct crd_schema *s, const json_t *obj, struct field_errors *errs);
/* Removes from obj every member the schema does not describe (except at nodes with
 * x-kubernetes-preserve-unknown-fields; apiVersion, kind and metadata at the root and in embedded
 * resources are kept, metadata being pruned to ObjectMeta's fields by the caller). The removed
 * paths ("spec.foo") go to ret_paths (a JSON array; may be NULL), at most 100. Returns how many
 * members were removed. */
size_t crd_schema_prune(const struct crd_schema *s, json_t *obj, json_t *ret_paths);
/* Fills defaults: for every object node present in obj, each missing property with a default
 * gets a deep copy of it (a null where nullable is false is replaced by the default too);
 * recursion into what was filled in. */
void crd_schema_default(const struct crd_schema *s, json_t *obj);

/* ---- JSONPath of printer columns (jsonpath.c) ---- */

/* The subset kubectl and Kubernetes accept in additionalPrinterColumns[].jsonPath: a dotted path
 * from the object's root with optional [n] indexes and ['key'] members: ".spec.cronSpec",
 * ".status.conditions[0].type", ".metadata.labels['app']". true when path has that form. */
bool crd_jsonpath_valid(const char *path);
/* Evaluates path on obj: appends the value to out (strings as is, numbers and booleans as JSON,
 * objects and arrays as compact JSON) and returns true; false (nothing appended) when absent or
 * path is not valid. The value itself, borrowed, via crd_jsonpath_get (NULL if absent). */
bool crd_jsonpath_eval(const char *path, const json_t *obj, struct buf *out);
const json_t *crd_jsonpath_get(const char *path, const json_t *obj);

/* ---- the definition (def.c) ---- */

struct crd_column {
	char *name, *type, *format, *description, *json_path;
	int priority;
};

struct crd_version {
	char *name;     /* "v1" */
	bool served, storage, deprecated;
	char *deprecation_warning; /* NULL: none */
	struct crd_schema *schema; /* NULL only when the CRD has none for this version (refused by validation) */
	struct crd_column *columns; /* additionalPrinterColumns; none given: Age only (added by the server) */
	size_t ncolumns;
	char **selectable;          /* selectableFields[].jsonPath without the leading dot ("spec.color") */
	size_t nselectable;
	bool status;                /* subresources.status */
	bool scale;                 /* subresources.scale */
	char *spec_replicas_path, *status_replicas_path, *label_selector_path; /* ".spec.replicas", ... */
};

struct crd_def {
	char *name;                 /* "crontabs.stable.example.com" */
	char *tenant;               /* metadata.tenant ("system" for region-wide CRDs) */
	char *uid;
	char *group, *plural, *singular, *kind, *list_kind;
	enum api_scope scope;       /* Namespaced: SCOPE_NAMESPACE; Cluster: SCOPE_TENANT (the tenant's cluster scope) */
	char **short_names;
	size_t nshort;
	char **categories;
	size_t ncategories;
	struct crd_version *versions;
	size_t nversions;
	bool terminating;           /* metadata.deletionTimestamp is set */
};

/* Parses and validates a CustomResourceDefinition object (borrowed): names (plural, singular,
 * kind, listKind, shortNames, categories syntax; metadata.name == plural + "." + group; a group
 * with a dot, not one the servers' built-in kinds use), scope, versions (at least one, names
 * unique and DNS labels, exactly one storage version, every version with a schema, conversion
 * strategy None or absent), each schema compiled, printer columns (types, jsonPath valid),
 * selectableFields, the scale subresource's paths. With causes on failure (-1, *ret NULL); 0 and
 * the definition in *ret (free with crd_def_free). Defaults (singular = lowercase kind, listKind
 * = kind + "List") are applied to the result, not to obj. */
int crd_def_parse(const json_t *crd, struct crd_def **ret, struct field_errors *errs);
void crd_def_free(struct crd_def *d); /* NULL is fine */
/* The version named name, or NULL. The storage version. Borrowed. */
const struct crd_version *crd_def_version(const struct crd_def *d, const char *name);
const struct crd_version *crd_def_storage(const struct crd_def *d);
/* True when the group is one the built-in kinds are served under ("", "apps", "batch",
 * "*.k8s.io" and "*.kubernetes.io" groups, "ursa.io", "arktos.futurewei.com"...): refused. */
bool crd_group_reserved(const char *group);

#endif
