/* Helpers for the structural schema tests (header-only, included by test_schema.c,
 * test_validate.c and test_prune_default.c). */
#ifndef CRD_SCHEMA_TEST_H
#define CRD_SCHEMA_TEST_H
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>
#include <jansson.h>
#include "ursa/crd.h"

#define BASE "spec.versions[0].schema.openAPIV3Schema"

/* Parses JSON written with single quotes (none inside strings). New reference. */
static inline json_t *SJ(const char *s)
{
	char *d = strdup(s);
	for (char *p = d; *p; p++)
		if (*p == '\'')
			*p = '"';
	json_error_t e;
	json_t *j = json_loads(d, JSON_DECODE_ANY | JSON_ALLOW_NUL, &e);
	if (!j)
		fail_msg("bad test JSON: %s: %s", e.text, d);
	free(d);
	return j;
}

static inline char *dump(const json_t *j)
{
	return j ? json_dumps(j, JSON_INDENT(1) | JSON_ENCODE_ANY) : strdup("(none)");
}

/* Compiles schema text that must compile. */
static inline struct crd_schema *compile_ok(const char *schema)
{
	json_t *j = SJ(schema);
	struct field_errors e = { NULL };
	struct crd_schema *s = NULL;
	if (crd_schema_compile(j, BASE, &s, &e) != 0 || !s)
		fail_msg("schema refused: %s", dump(e.causes));
	assert_null(e.causes);
	json_decref(j);
	return s;
}

/* Compiles schema text that must be refused; its causes (new reference). */
static inline json_t *compile_err(const char *schema)
{
	json_t *j = SJ(schema);
	struct field_errors e = { NULL };
	struct crd_schema *s = (struct crd_schema *)1;
	if (crd_schema_compile(j, BASE, &s, &e) != -1)
		fail_msg("schema accepted: %s", schema);
	assert_null(s);
	assert_non_null(e.causes);
	json_decref(j);
	return e.causes;
}

/* Asserts causes has one at field with reason (and message unless NULL). */
static inline void assert_cause(const json_t *causes, const char *field, const char *reason, const char *message)
{
	size_t i;
	const json_t *c;
	json_array_foreach(causes, i, c) {
		if (strcmp(json_string_value(json_object_get(c, "field")), field))
			continue;
		if (strcmp(json_string_value(json_object_get(c, "reason")), reason))
			continue;
		if (message && strcmp(json_string_value(json_object_get(c, "message")), message))
			fail_msg("cause at %s: message\n  %s\nwanted\n  %s", field,
				 json_string_value(json_object_get(c, "message")), message);
		return;
	}
	fail_msg("no %s cause at %s in %s", reason, field, dump(causes));
}

/* Validates obj (text) against schema (text): the causes (new reference; NULL when none). */
static inline json_t *validate(const char *schema, const char *obj)
{
	struct crd_schema *s = compile_ok(schema);
	json_t *o = SJ(obj);
	struct field_errors e = { NULL };
	crd_schema_validate(s, o, &e);
	json_decref(o);
	crd_schema_free(s);
	return e.causes;
}

/* The only cause of validating obj against schema must be (field, reason, message). */
static inline void assert_one(const char *schema, const char *obj, const char *field, const char *reason,
			      const char *message)
{
	json_t *c = validate(schema, obj);
	if (json_array_size(c) != 1)
		fail_msg("wanted one cause, got %s", dump(c));
	assert_cause(c, field, reason, message);
	json_decref(c);
}

static inline void assert_valid(const char *schema, const char *obj)
{
	json_t *c = validate(schema, obj);
	if (c)
		fail_msg("%s refused: %s", obj, dump(c));
}

#endif
