/* Internals shared by the patch engines of src/common/patch. Not a public interface. */
#ifndef URSA_PATCH_INTERNAL_H
#define URSA_PATCH_INTERNAL_H
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include "ursa/buf.h"

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

/* Strategic merge patch metadata: what the engine must know about a field of a map. */
enum smp_list {
	SMP_LIST_REPLACE,     /* default: a list in the patch replaces the live one */
	SMP_LIST_MERGE_KEYED, /* list of maps merged element-wise by merge_key */
	SMP_LIST_MERGE_SET,   /* list of primitives merged as a set (finalizers) */
};

struct smp_node;

struct smp_field {
	const char *name;
	enum smp_list list;
	const char *merge_key;       /* SMP_LIST_MERGE_KEYED only */
	const struct smp_node *node; /* schema of the value if a map, of each element if a list */
};

struct smp_node {
	const struct smp_field *fields;
	size_t nfields;
};

/* Schema of a whole object of the given kind, or NULL for kinds without metadata. */
const struct smp_node *smp_schema_for_kind(const char *kind);
/* Field key (klen bytes) of node, or NULL (also for a NULL node). */
const struct smp_field *smp_field_lookup(const struct smp_node *node, const char *key, size_t klen);

#endif
