/* Helpers for building Kubernetes-style field errors (StatusCause objects) and for the
 * checks every kind repeats. The basic add/required/release functions are declared in
 * ursa/api.h; these add the upstream message shapes:
 *
 *   Invalid       `Invalid value: "x": <detail>`        (FieldValueInvalid)
 *   NotSupported  `Unsupported value: "x": supported values: "a", "b"`
 *   Duplicate     `Duplicate value: "x"`
 *   Forbidden     `Forbidden: <detail>`
 *   TooLong       `Too long: must have at most N bytes`
 *   NotFound      `Not found: "x"`
 *
 * Field paths are built by the caller ("spec.containers[0].name", "data[key]"). Quoted values
 * are JSON-escaped and truncated, so client-controlled strings cannot blow up a message.
 * At most FIELD_ERRORS_MAX causes are kept; later ones are dropped. */
#ifndef URSA_API_VALIDATION_H
#define URSA_API_VALIDATION_H
#include <jansson.h>
#include <stdbool.h>
#include "ursa/api.h"
#include "ursa/buf.h"

#define FIELD_ERRORS_MAX 100

void field_error_invalid(struct field_errors *e, const char *field, const char *value, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
/* Invalid with a non-string value printed bare (e.g. `Invalid value: -1: must be ...`). */
void field_error_invalid_int(struct field_errors *e, const char *field, long long value, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
/* Invalid with a JSON value rendered compactly (objects, arrays). */
void field_error_invalid_json(struct field_errors *e, const char *field, const json_t *value, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
/* supported is a NULL-terminated list. */
void field_error_not_supported(struct field_errors *e, const char *field, const char *value,
			       const char *const *supported);
void field_error_duplicate(struct field_errors *e, const char *field, const char *value);
void field_error_forbidden(struct field_errors *e, const char *field, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
void field_error_too_long(struct field_errors *e, const char *field, long long max);
void field_error_not_found(struct field_errors *e, const char *field, const char *value);
/* "Invalid value: <type>: must be a <want>" reported as FieldValueTypeInvalid. */
void field_error_type(struct field_errors *e, const char *field, const char *want);
/* Required with a detail: `Required value: <detail>`. */
void field_error_required_why(struct field_errors *e, const char *field, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Detail text for a broken name rule, or NULL when s is valid (static strings, upstream wording). */
const char *dns1123_label_error(const char *s);
const char *dns1123_subdomain_error(const char *s);
const char *dns1035_label_error(const char *s);
bool valid_dns1035_label(const char *s); /* [a-z]([-a-z0-9]*[a-z0-9])?, <= 63 (Service names) */
/* Why s is not a valid label key (qualified name) / label value, or NULL when it is. */
const char *label_key_why(const char *s);
const char *label_value_why(const char *s);
/* IANA service name (named ports): <= 15, [-a-z0-9], a letter, no "--", no leading/trailing '-'. */
const char *iana_svc_name_error(const char *s);

/* Validates a map of labels (JSON object of strings) at field (e.g. "metadata.labels",
 * "spec.selector"). A non-object, non-null value is a type error. */
void validate_labels(const json_t *labels, const char *field, struct field_errors *errs);
/* Validates a metav1.LabelSelector JSON object at field: matchLabels as labels, matchExpressions
 * with operators In/NotIn (values required) and Exists/DoesNotExist (values forbidden). */
void validate_label_selector(const json_t *sel, const char *field, struct field_errors *errs);
/* Integer field checks that report `Invalid value: N: must be greater than or equal to 0` etc.
 * Absent (NULL) values pass; non-integers are type errors. */
void validate_nonnegative(const json_t *v, const char *field, struct field_errors *errs);
void validate_positive(const json_t *v, const char *field, struct field_errors *errs);
/* Adds `field is immutable` (Invalid, value rendered as JSON) when now and old differ. */
void validate_immutable(const json_t *now, const json_t *old, const char *field, struct field_errors *errs);

#endif
