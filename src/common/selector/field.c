/* Field selectors (?fieldSelector=): comma-separated f=v, f==v, f!=v terms.
 *
 * As upstream: terms split on commas not preceded by '\', empty terms are skipped, the operator
 * is the first "!=", "==" or "=" found scanning left to right, and the value is unescaped
 * (\\ \, \= and, as our header promises, \!); a bare ',' or '=' in a value is an error. Field
 * names are not trimmed or checked here: field_selector_check does that against a table. */
#include <stdlib.h>
#include <string.h>
#include "ursa/errors.h"
#include "ursa/jsonutil.h"
#include "ursa/selector.h"
#include "ursa/xalloc.h"
#include "selector/selector_int.h"

struct field_term {
	char *field;
	char *value;
	bool neq;
};

struct field_selector {
	struct field_term *terms;
	size_t n;
};

static int unescape_value(struct sv v, struct buf *out, struct buf *err)
{
	for (size_t i = 0; i < v.len; i++) {
		char c = v.ptr[i];
		if (c == ',' || c == '=') {
			buf_addf(err, "invalid field selector: unescaped character in value: %c", c);
			return E_BAD_REQUEST;
		}
		if (c != '\\') {
			buf_addch(out, c);
			continue;
		}
		if (++i == v.len) {
			buf_adds(err, "invalid field selector: invalid escape sequence: \\");
			return E_BAD_REQUEST;
		}
		c = v.ptr[i];
		if (c != '\\' && c != ',' && c != '=' && c != '!') {
			buf_addf(err, "invalid field selector: invalid escape sequence: \\%c", c);
			return E_BAD_REQUEST;
		}
		buf_addch(out, c);
	}
	return 0;
}

/* Splits one term at its operator; false when it has none. */
static bool split_term(struct sv term, struct sv *ret_lhs, bool *ret_neq, struct sv *ret_rhs)
{
	for (size_t i = 0; i < term.len; i++) {
		size_t oplen;
		struct sv rest = { term.ptr + i, term.len - i };
		if (sv_has_prefix(rest, "!=") || sv_has_prefix(rest, "=="))
			oplen = 2;
		else if (rest.ptr[0] == '=')
			oplen = 1;
		else
			continue;
		*ret_lhs = (struct sv){ term.ptr, i };
		*ret_neq = rest.ptr[0] == '!';
		*ret_rhs = (struct sv){ rest.ptr + oplen, rest.len - oplen };
		return true;
	}
	return false;
}

static int add_term(struct field_selector *fs, const char *whole, struct sv term, struct buf *err)
{
	struct sv lhs, rhs;
	bool neq;
	struct buf value = BUF_INIT;
	if (term.len == 0)
		return 0;
	if (fs->n >= SELECTOR_MAX_REQUIREMENTS) {
		buf_addf(err, "too many field selector terms (max %d)", SELECTOR_MAX_REQUIREMENTS);
		return E_BAD_REQUEST;
	}
	if (!split_term(term, &lhs, &neq, &rhs)) {
		buf_addf(err, "invalid selector: '%s'; can't understand '%.*s'", whole, (int)term.len, term.ptr);
		return E_BAD_REQUEST;
	}
	if (unescape_value(rhs, &value, err)) {
		buf_release(&value);
		return E_BAD_REQUEST;
	}
	fs->terms = xrealloc(fs->terms, (fs->n + 1) * sizeof(*fs->terms));
	fs->terms[fs->n++] = (struct field_term){ sv_dup(lhs), buf_detach(&value, NULL), neq };
	return 0;
}

int field_selector_parse(const char *s, struct field_selector **ret, struct buf *err)
{
	struct buf scratch = BUF_INIT;
	struct field_selector *fs = xcalloc(1, sizeof(*fs));
	size_t len = s ? strlen(s) : 0, start = 0;
	int rc = 0;
	if (!err)
		err = &scratch;
	if (len > SELECTOR_MAX_INPUT) {
		buf_addf(err, "field selector too long (max %d bytes)", SELECTOR_MAX_INPUT);
		rc = E_BAD_REQUEST;
		goto out;
	}
	for (size_t i = 0; i <= len; i++) {
		if (i + 1 < len && s[i] == '\\') {
			i++; /* the escaped byte never ends a term */
			continue;
		}
		if (i < len && s[i] != ',')
			continue;
		if ((rc = add_term(fs, s, (struct sv){ s + start, i - start }, err)))
			goto out;
		start = i + 1;
	}
	*ret = fs;
	fs = NULL;
out:
	field_selector_free(fs);
	buf_release(&scratch);
	return rc;
}

static bool field_known(const char *f, const struct api_field *fields, size_t nfields)
{
	if (strcmp(f, "metadata.name") == 0 || strcmp(f, "metadata.namespace") == 0)
		return true;
	for (size_t i = 0; i < nfields; i++)
		if (strcmp(f, fields[i].label) == 0)
			return true;
	return false;
}

int field_selector_check(const struct field_selector *s, const struct api_field *fields, size_t nfields,
			 struct buf *err)
{
	for (size_t i = 0; s && i < s->n; i++) {
		if (!field_known(s->terms[i].field, fields, nfields)) {
			if (err)
				buf_addf(err, "field label not supported: %s", s->terms[i].field);
			return E_BAD_REQUEST;
		}
	}
	return 0;
}

static bool term_matches(const struct field_term *t, const char *have)
{
	return (strcmp(have ? have : "", t->value) == 0) != t->neq;
}

bool field_selector_matches(const struct field_selector *s, field_getter get, void *ud)
{
	for (size_t i = 0; s && i < s->n; i++)
		if (!term_matches(&s->terms[i], get(ud, s->terms[i].field)))
			return false;
	return true;
}

/* The JSON path a field label reads: fields[] first, then metadata.* as itself; NULL if unknown. */
static const char *field_path(const char *label, const struct api_field *fields, size_t nfields)
{
	for (size_t i = 0; i < nfields; i++)
		if (strcmp(label, fields[i].label) == 0)
			return fields[i].path;
	if (strcmp(label, "metadata.name") == 0 || strcmp(label, "metadata.namespace") == 0)
		return label;
	return NULL;
}

bool field_selector_matches_obj(const struct field_selector *s, const json_t *obj, const struct api_field *fields,
				size_t nfields)
{
	struct buf have = BUF_INIT;
	bool ok = true;
	for (size_t i = 0; ok && s && i < s->n; i++) {
		const char *path = field_path(s->terms[i].field, fields, nfields);
		buf_reset(&have);
		if (path)
			json_path_scalar(obj, path, &have);
		for (size_t k = 0; k < nfields && have.len == 0; k++)
			if (fields[k].absent && strcmp(fields[k].label, s->terms[i].field) == 0)
				buf_adds(&have, fields[k].absent);
		ok = term_matches(&s->terms[i], buf_cstr(&have));
	}
	buf_release(&have);
	return ok;
}

bool field_selector_empty(const struct field_selector *s)
{
	return !s || s->n == 0;
}

const char *field_selector_exact(const struct field_selector *s, const char *label)
{
	for (size_t i = 0; s && i < s->n; i++)
		if (!s->terms[i].neq && strcmp(s->terms[i].field, label) == 0)
			return s->terms[i].value;
	return NULL;
}

void field_selector_free(struct field_selector *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->n; i++) {
		free(s->terms[i].field);
		free(s->terms[i].value);
	}
	free(s->terms);
	free(s);
}

static void add_escaped(struct buf *out, const char *s)
{
	for (; *s; s++) {
		if (*s == '\\' || *s == ',' || *s == '=' || *s == '!')
			buf_addch(out, '\\');
		buf_addch(out, *s);
	}
}

void field_selector_format(const struct field_selector *s, struct buf *out)
{
	for (size_t i = 0; s && i < s->n; i++) {
		if (i)
			buf_addch(out, ',');
		buf_adds(out, s->terms[i].field);
		buf_adds(out, s->terms[i].neq ? "!=" : "=");
		add_escaped(out, s->terms[i].value);
	}
}
