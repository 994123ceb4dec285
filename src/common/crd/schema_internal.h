/* The compiled form of a structural schema, shared by schema.c (compile), validate.c, prune.c,
 * default.c and format.c. Private to src/common/crd. A tree of nodes built once by
 * crd_schema_compile and never changed afterwards; every const json_t * is borrowed from the
 * schema's own copy (struct crd_schema.json). */
#ifndef URSA_CRD_SCHEMA_INTERNAL_H
#define URSA_CRD_SCHEMA_INTERNAL_H
#include <jansson.h>
#include <regex.h>
#include <stdbool.h>
#include <stddef.h>
#include "ursa/api.h"
#include "ursa/buf.h"

enum snode_type { ST_ANY = 0, ST_OBJECT, ST_ARRAY, ST_STRING, ST_INTEGER, ST_NUMBER, ST_BOOLEAN };
enum slist_type { SL_NONE = 0, SL_ATOMIC, SL_SET, SL_MAP };

struct snode;

struct sprop {
	char *name;
	struct snode *node;
};

struct snode {
	enum snode_type type;
	bool int_or_string, preserve_unknown, embedded, nullable, unique_items;
	/* Where the node sits: the custom resource's root, or metadata of the root or of an embedded
	 * resource (only name and generateName are looked at). */
	bool is_root, is_metadata;
	/* object */
	struct sprop *props; /* sorted by name */
	size_t nprops;
	struct snode *additional; /* additionalProperties: <schema> */
	bool additional_true;     /* additionalProperties: true (anything, never pruned) */
	bool additional_false;    /* additionalProperties: false (no other member allowed) */
	char **required;
	size_t nrequired;
	long long min_props, max_props; /* -1: none */
	/* array */
	struct snode *items;
	enum slist_type list_type;
	char **map_keys;
	size_t nmap_keys;
	long long min_items, max_items;
	/* scalars */
	const json_t *enum_vals;
	regex_t *pattern;
	const char *pattern_src;
	const json_t *minimum, *maximum, *multiple_of;
	bool excl_min, excl_max;
	long long min_length, max_length;
	const char *format;
	json_t *deflt; /* owned: the default, pruned by this node; NULL: none */
	/* value validations */
	struct snode **all_of, **any_of, **one_of;
	size_t nall_of, nany_of, none_of;
	struct snode *not_;
};

struct crd_schema {
	json_t *json; /* the schema as given (own deep copy) */
	struct snode *root;
};

/* The child node for object member key (a property, or additionalProperties), or NULL. */
struct snode *snode_prop(const struct snode *n, const char *key);
void snode_free(struct snode *n);

/* Path building in Kubernetes notation: members as ".key" ("key" at the start), or "[key]" when
 * the key has a dot, bracket or is empty; array elements as "[i]". Returns the length before
 * the addition, for path_cut. */
size_t path_push_key(struct buf *p, const char *key);
size_t path_push_index(struct buf *p, size_t i);
void path_cut(struct buf *p, size_t len);

/* The recursive workers behind the public calls; path is the value's path (grown and restored). */
void snode_validate(const struct snode *n, const json_t *v, struct buf *path, struct field_errors *errs);
size_t snode_prune(const struct snode *n, json_t *v, struct buf *path, json_t *ret_paths);
void snode_default(const struct snode *n, json_t *v);

/* Whether s is valid under the named format; unknown formats pass (format.c). */
bool crd_format_ok(const char *format, const json_t *v);

/* Translates a JavaScript-flavoured pattern to POSIX ERE and compiles it (REG_EXTENDED |
 * REG_NOSUB). 0 and *ret (free with regfree + free), or -1 with a static reason in *ret_why. */
int crd_pattern_compile(const char *src, regex_t **ret, const char **ret_why);

/* Printing values as upstream does in messages: the JSON type name ("string", "integer",
 * "number", "boolean", "object", "array", "null"), and a number in Go's %v form. */
const char *json_type_name(const json_t *v);
void number_add(struct buf *b, const json_t *v);
/* A value as messages show it: strings quoted, numbers bare, the rest as compact JSON; cut
 * after 256 bytes. */
void value_add(struct buf *b, const json_t *v);

#endif
