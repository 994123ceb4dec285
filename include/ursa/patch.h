/* Patch engines for PATCH requests, and YAML decoding for apply-patch+yaml.
 * All functions leave their inputs unchanged and return a new object, or fail with
 * E_BAD_REQUEST (malformed patch) or E_INVALID (a well-formed patch that cannot apply, e.g. a
 * failed "test" op or a path that does not exist), with a message appended to err. */
#ifndef URSA_PATCH_H
#define URSA_PATCH_H
#include <jansson.h>
#include "ursa/buf.h"

/* RFC 6902 JSON Patch: patch must be an array of operations (add, remove, replace, move,
 * copy, test); paths are RFC 6901 pointers ("~0", "~1" escapes, "-" appends). */
int json_patch_apply(const json_t *doc, const json_t *patch, json_t **ret, struct buf *err);

/* RFC 7386 JSON Merge Patch. Never fails for an object patch. */
int merge_patch_apply(const json_t *doc, const json_t *patch, json_t **ret, struct buf *err);

/* Kubernetes strategic merge patch for the built-in kinds. kind selects the patch metadata
 * (e.g. "Pod", "Deployment"): lists with a merge key (containers by name, ports by
 * containerPort, volumeMounts by mountPath, env by name, conditions by type, ownerReferences by
 * uid, ...) merge element-wise, finalizers merge as a set, other lists are replaced, maps merge
 * recursively and null deletes. Directives: $patch (replace|delete|merge), $setElementOrder/<list>,
 * $deleteFromPrimitiveList/<list>, $retainKeys. Unknown kinds fall back to merge-patch semantics. */
int strategic_merge_patch_apply(const json_t *doc, const json_t *patch, const char *kind, json_t **ret,
				struct buf *err);

/* Decodes one YAML document (or JSON, which is YAML) into JSON. Scalars follow YAML 1.1 core
 * rules as Kubernetes' yaml decoder does: quoted => string; true/false, null/~, integers,
 * floats => typed; everything else string. Nesting deeper than max_depth is E_BAD_REQUEST. */
int yaml_to_json(const char *data, size_t len, int max_depth, json_t **ret, struct buf *err);

#endif
