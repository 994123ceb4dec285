/* Small helpers over jansson. Unless stated, returned json_t pointers are borrowed. */
#ifndef URSA_JSONUTIL_H
#define URSA_JSONUTIL_H
#include <jansson.h>
#include <stdbool.h>
#include "ursa/buf.h"

/* Borrowed child at a dotted path ("spec.nodeName"); NULL if any step is missing. */
json_t *json_path(const json_t *obj, const char *dotted);
/* Borrowed string value of obj[key], or NULL if absent or not a string. */
const char *json_str(const json_t *obj, const char *key);
const char *json_path_str(const json_t *obj, const char *dotted);
/* Object obj[key], created (as {}) if absent or not an object; borrowed. */
json_t *json_obj_child(json_t *obj, const char *key);
/* A Kubernetes object's controller: the entry of metadata.ownerReferences with controller true
 * (borrowed), or NULL. */
const json_t *json_controller_ref(const json_t *obj);
/* Its uid (borrowed) when its kind is kind (NULL: any kind), else NULL. */
const char *json_controller_uid(const json_t *obj, const char *kind);
/* Whether metadata.finalizers of a Kubernetes object holds fin. */
bool json_has_finalizer(const json_t *obj, const char *fin);
/* Renders a scalar at a dotted path the way field selectors compare it:
 * strings as is, booleans "true"/"false", integers in decimal, absent/null as "".
 * Appends to out. */
void json_path_scalar(const json_t *obj, const char *dotted, struct buf *out);
/* Serializes compactly (key order kept) and appends to out. */
void json_dump_buf(const json_t *j, struct buf *out);
/* Parses with a depth cap; returns a new reference or NULL (and err text in ret_err if given). */
json_t *json_parse_limited(const char *data, size_t len, int max_depth, struct buf *ret_err);
/* Depth of nesting of arrays/objects (scalar = 0). */
int json_depth(const json_t *j);

#endif
