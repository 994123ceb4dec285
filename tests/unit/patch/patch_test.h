/* Helpers shared by the patch unit tests: table cases and JSON comparison that prints both
 * sides. Each test_*.c includes this once. */
#ifndef URSA_PATCH_TEST_H
#define URSA_PATCH_TEST_H
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <jansson.h>
#include "ursa/buf.h"
#include "ursa/errors.h"
#include "ursa/patch.h"

/* One case: apply patch to doc (kind for SMP); expect want, or error code rc. */
struct pcase {
	const char *name;
	const char *kind;
	const char *doc;
	const char *patch;
	const char *want; /* NULL when rc != 0 */
	int rc;
};

typedef int (*patch_fn)(const json_t *doc, const json_t *patch, const char *kind, json_t **ret,
			struct buf *err);

/* Parses test JSON; single quotes stand for double quotes so tables stay readable. */
static inline json_t *J(const char *s)
{
	json_error_t e;
	char *t = strdup(s);
	for (char *p = t; *p; p++)
		if (*p == '\'')
			*p = '"';
	json_t *j = json_loads(t, JSON_DECODE_ANY | JSON_ALLOW_NUL, &e);
	if (!j)
		fail_msg("bad JSON in test: %s: %s", e.text, s);
	free(t);
	return j;
}

static inline char *dump(const json_t *j)
{
	return json_dumps(j, JSON_COMPACT | JSON_ENCODE_ANY);
}

/* Fails unless got equals want exactly (array order and integer/real kind matter). */
static inline void check_json(const char *what, const json_t *got, const char *want)
{
	json_t *w = J(want);
	if (!json_equal((json_t *)got, w)) {
		char *g = dump(got), *x = dump(w);
		print_error("%s:\n  want %s\n  got  %s\n", what, x, g);
		free(g);
		free(x);
		json_decref(w);
		fail();
	}
	json_decref(w);
}

static inline void run_cases(const struct pcase *cases, size_t n, patch_fn fn)
{
	for (size_t i = 0; i < n; i++) {
		const struct pcase *c = &cases[i];
		json_t *doc = J(c->doc), *patch = J(c->patch), *out = NULL;
		char *before = dump(doc), *pbefore = dump(patch);
		struct buf err = BUF_INIT;
		int rc = fn(doc, patch, c->kind, &out, &err);
		if (rc != c->rc) {
			char *g = out ? dump(out) : NULL;
			print_error("case %s: rc want %d got %d (%s) result %s\n", c->name, c->rc, rc,
				    buf_cstr(&err), g ? g : "-");
			free(g);
			fail();
		}
		if (rc) {
			if (!err.len)
				fail_msg("case %s: error without a message", c->name);
		} else {
			struct buf what = BUF_INIT;
			buf_addf(&what, "case %s", c->name);
			check_json(what.ptr, out, c->want);
			buf_release(&what);
		}
		char *after = dump(doc), *pafter = dump(patch);
		if (strcmp(before, after) || strcmp(pbefore, pafter))
			fail_msg("case %s: an input was modified", c->name);
		free(before);
		free(after);
		free(pbefore);
		free(pafter);
		buf_release(&err);
		json_decref(out);
		json_decref(doc);
		json_decref(patch);
	}
}

#endif
