/* Label and field selectors, as in the Kubernetes API (labelSelector=, fieldSelector=). */
#ifndef URSA_SELECTOR_H
#define URSA_SELECTOR_H
#include <jansson.h>
#include <stdbool.h>
#include "ursa/api.h"
#include "ursa/buf.h"

/* Label selector: comma = AND of requirements k=v, k==v, k!=v, k in (a,b), k notin (a,b), k, !k.
 * Keys and values are checked with the Kubernetes syntax rules. Whitespace around tokens is allowed. */
struct label_selector;
/* s may be NULL or "" (matches everything). On error returns E_BAD_REQUEST and appends a message
 * (like upstream's "unable to parse requirement: ...") to err. *ret is new; free with label_selector_free. */
int label_selector_parse(const char *s, struct label_selector **ret, struct buf *err);
/* Builds a selector from a LabelSelector JSON object {matchLabels:{}, matchExpressions:[{key,operator,values}]}
 * (operators In, NotIn, Exists, DoesNotExist). E_INVALID with err on bad input. */
int label_selector_from_json(const json_t *sel, struct label_selector **ret, struct buf *err);
/* labels is a JSON object of string values, or NULL (no labels). */
bool label_selector_matches(const struct label_selector *s, const json_t *labels);
bool label_selector_empty(const struct label_selector *s);
/* The value of an equality requirement k=v on key, or NULL (borrowed). */
const char *label_selector_exact(const struct label_selector *s, const char *key);
/* Canonical string form ("a=b,c in (d,e)"), appended to out. */
void label_selector_format(const struct label_selector *s, struct buf *out);
void label_selector_free(struct label_selector *s);

/* Field selector: comma = AND of f=v, f==v, f!=v. Values may escape ',' '=' '!' '\' with '\'. */
struct field_selector;
int field_selector_parse(const char *s, struct field_selector **ret, struct buf *err);
/* E_BAD_REQUEST (message 'field label not supported: X') if a field is neither metadata.name,
 * metadata.namespace nor one of fields[]. */
int field_selector_check(const struct field_selector *s, const struct api_field *fields, size_t nfields,
			 struct buf *err);
/* get(ud, label) returns the object's value for a field label ("" when absent; never NULL). */
typedef const char *(*field_getter)(void *ud, const char *label);
bool field_selector_matches(const struct field_selector *s, field_getter get, void *ud);
/* Convenience: values read from a parsed object through fields[] (label -> path), plus metadata.*. */
bool field_selector_matches_obj(const struct field_selector *s, const json_t *obj, const struct api_field *fields,
				size_t nfields);
bool field_selector_empty(const struct field_selector *s);
/* The value of an equality requirement f=v on label, or NULL (borrowed). */
const char *field_selector_exact(const struct field_selector *s, const char *label);
/* Canonical string form (values escaped), appended to out; parses back to an equal selector. */
void field_selector_format(const struct field_selector *s, struct buf *out);
void field_selector_free(struct field_selector *s);

#endif
