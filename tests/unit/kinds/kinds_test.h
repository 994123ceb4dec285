/* Helpers for the kind strategy tests (header-only, included by each test_*.c). */
#ifndef KINDS_TEST_H
#define KINDS_TEST_H
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>
#include <jansson.h>
#include "ursa/api.h"
#include "kinds/kinds_common.h"
#include "ursa/jsonutil.h"
#include "ursa/timeutil.h"

/* Parses JSON written with single quotes (no single quotes inside strings). New reference. */
static inline json_t *J(const char *s)
{
	char *d = strdup(s);
	for (char *p = d; *p; p++)
		if (*p == '\'')
			*p = '"';
	json_error_t e;
	json_t *j = json_loads(d, 0, &e);
	if (!j)
		fail_msg("bad test JSON: %s: %s", e.text, d);
	free(d);
	return j;
}

static inline time_t T(const char *rfc3339)
{
	time_t t = 0;
	assert_int_equal(rfc3339_parse(rfc3339, &t), 0);
	return t;
}

/* The cause with this field (first one), or NULL. Borrowed. */
static inline const json_t *cause_at(const struct field_errors *e, const char *field)
{
	size_t i;
	json_t *c;
	json_array_foreach(e->causes, i, c)
		if (!strcmp(json_string_value(json_object_get(c, "field")), field))
			return c;
	return NULL;
}

/* Asserts a cause with field and reason exists; returns its message. */
static inline const char *expect_cause(const struct field_errors *e, const char *field, const char *reason)
{
	const json_t *c = cause_at(e, field);
	if (!c) {
		char *dump = e->causes ? json_dumps(e->causes, 0) : strdup("(none)");
		print_error("no cause for field %s; causes: %s\n", field, dump);
		free(dump);
		fail();
	}
	assert_string_equal(json_string_value(json_object_get(c, "reason")), reason);
	return json_string_value(json_object_get(c, "message"));
}

static inline void expect_no_errors(const struct field_errors *e)
{
	if (e->causes) {
		char *dump = json_dumps(e->causes, 0);
		print_error("unexpected causes: %s\n", dump);
		free(dump);
		fail();
	}
}

/* Runs defaults (+ prepare_create when create) then validate; returns the errors. */
static inline struct field_errors run_validate(const struct api_strategy *s, json_t *obj, const json_t *old)
{
	struct field_errors e = { NULL };
	if (s->defaults)
		s->defaults(obj);
	if (!old && s->prepare_create)
		s->prepare_create(obj);
	if (s->validate)
		s->validate(obj, old, &e);
	return e;
}

/* Cells of obj; asserts there is one per column. New reference. */
static inline json_t *cells_of(const struct api_strategy *s, const json_t *obj, time_t now)
{
	json_t *cells = json_array();
	s->cells(obj, now, cells);
	assert_int_equal(json_array_size(cells), s->ncolumns);
	return cells;
}

static inline const char *cell_s(const json_t *cells, size_t i)
{
	const json_t *c = json_array_get(cells, i);
	if (!json_is_string(c))
		fail_msg("cell %zu is not a string", i);
	return json_string_value(c);
}

static inline long long cell_i(const json_t *cells, size_t i)
{
	const json_t *c = json_array_get(cells, i);
	if (!json_is_integer(c))
		fail_msg("cell %zu is not an integer", i);
	return (long long)json_integer_value(c);
}

/* Index of the column with this name; fails if absent. */
static inline size_t col(const struct api_strategy *s, const char *name)
{
	for (size_t i = 0; i < s->ncolumns; i++)
		if (!strcmp(s->columns[i].name, name))
			return i;
	fail_msg("no column %s", name);
	return 0;
}

#endif
