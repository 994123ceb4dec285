/* Internals shared by the patch engines of src/common/patch. Not a public interface. */
#ifndef URSA_PATCH_INTERNAL_H
#define URSA_PATCH_INTERNAL_H
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include "ursa/buf.h"
#include "ursa/schema.h"

/* Recursion guard of the merge engines; callers cap parsed depth far below this. */
#define PATCH_MAX_DEPTH 512

/* RFC 6902 equality: numbers compare by value (1 == 1.0), objects ignore member order. */
bool patch_json_equal(const json_t *a, const json_t *b);

/* Appends a canonical text of v to out, used as a hash key when matching list elements:
 * integral numbers print the same whether stored as integer or real (Go decodes every JSON
 * number as float64, so upstream matches 80 and 80.0); containers print with sorted keys. */
void patch_canonical_key(const json_t *v, struct buf *out);

/* Appends s (len bytes, may hold NULs) JSON-quoted, shortened past 200 bytes, for messages. */
void patch_quote(struct buf *out, const char *s, size_t len);

/* Strategic merge patch metadata comes from the one type description, ursa/schema.h: the
 * schema of a map is a struct pb_msg, a field of it a struct pb_field (merge_key, PF_SET). */
enum smp_list {
	SMP_LIST_REPLACE,     /* default: a list in the patch replaces the live one */
	SMP_LIST_MERGE_KEYED, /* list of maps merged element-wise by merge_key */
	SMP_LIST_MERGE_SET,   /* list of primitives merged as a set (finalizers) */
};

/* Schema of a whole object of the given kind, or NULL for kinds without one. */
const struct pb_msg *smp_schema_for_kind(const char *kind);
/* Field key (klen bytes) of node, looking through inlined messages, or NULL (also for a NULL
 * node). */
const struct pb_field *smp_field_lookup(const struct pb_msg *node, const char *key, size_t klen);
/* How a list in field f (NULL: unknown field) merges. */
enum smp_list smp_list_of(const struct pb_field *f);
/* Schema of f's value if a map, of each element if a list of maps; NULL if none (or f is NULL). */
const struct pb_msg *smp_sub(const struct pb_field *f);

#endif
