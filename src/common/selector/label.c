/* Label selectors: the string syntax of ?labelSelector= and the LabelSelector JSON form.
 *
 * The grammar and error texts follow apimachinery's labels parser: a hand-written lexer whose
 * identifiers run until whitespace or one of "=!(),<>", and a recursive-descent parser over it.
 * Its quirks are kept on purpose so that clients see the same answers: "in"/"notin" are keywords
 * only in operator position, "k=" means k equals the empty value, and "k in ()" is the set {""}. */
#include <stdlib.h>
#include <string.h>
#include "ursa/errors.h"
#include "ursa/selector.h"
#include "ursa/xalloc.h"
#include "selector/names.h"
#include "selector/selector_int.h"

enum op { OP_EXISTS, OP_NOT_EXISTS, OP_EQ, OP_DEQ, OP_NEQ, OP_IN, OP_NOTIN, OP_GT, OP_LT };

struct requirement {
	char *key;
	enum op op;
	char **values; /* sorted, unique */
	size_t nvalues;
};

struct label_selector {
	struct requirement *reqs; /* sorted by key (stable) */
	size_t n;
	bool nothing; /* from a null LabelSelector: matches no object */
};

enum tok { TK_EOS, TK_ID, TK_COMMA, TK_OPEN, TK_CLOSE, TK_NOT, TK_EQ, TK_DEQ, TK_NEQ, TK_GT, TK_LT };

struct token {
	enum tok type;
	struct sv lit;
};

struct parser {
	const char *s;
	size_t pos;
	struct token la; /* lookahead */
	struct label_selector *sel;
	struct buf *err;
};

static bool is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

static bool is_special(char c)
{
	return c == '=' || c == '!' || c == '(' || c == ')' || c == ',' || c == '>' || c == '<';
}

static enum tok special_tok(char c)
{
	switch (c) {
	case '=': return TK_EQ;
	case '!': return TK_NOT;
	case '(': return TK_OPEN;
	case ')': return TK_CLOSE;
	case ',': return TK_COMMA;
	case '>': return TK_GT;
	default: return TK_LT;
	}
}

/* Scans the next token into p->la. Two-character operators win over their first character. */
static void lex(struct parser *p)
{
	const char *s = p->s;
	while (is_space(s[p->pos]))
		p->pos++;
	size_t start = p->pos;
	char c = s[start];
	if (c == '\0') {
		p->la = (struct token){ TK_EOS, { s + start, 0 } };
	} else if (is_special(c)) {
		char d = s[start + 1];
		if ((c == '=' || c == '!') && d == '=') {
			p->la = (struct token){ c == '=' ? TK_DEQ : TK_NEQ, { s + start, 2 } };
			p->pos += 2;
		} else {
			p->la = (struct token){ special_tok(c), { s + start, 1 } };
			p->pos++;
		}
	} else {
		while (s[p->pos] && !is_space(s[p->pos]) && !is_special(s[p->pos]))
			p->pos++;
		p->la = (struct token){ TK_ID, { s + start, p->pos - start } };
	}
}

static struct token consume(struct parser *p)
{
	struct token t = p->la;
	lex(p);
	return t;
}

static int fail(struct parser *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(struct parser *p, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	buf_vaddf(p->err, fmt, ap);
	va_end(ap);
	return E_BAD_REQUEST;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void req_release(struct requirement *r)
{
	free(r->key);
	for (size_t i = 0; i < r->nvalues; i++)
		free(r->values[i]);
	free(r->values);
}

/* A set of values being collected for one requirement. */
struct vset {
	char **v;
	size_t n;
};

static void vset_release(struct vset *vs)
{
	for (size_t i = 0; i < vs->n; i++)
		free(vs->v[i]);
	free(vs->v);
	vs->v = NULL;
	vs->n = 0;
}

static int vset_add(struct vset *vs, struct sv v, struct buf *err)
{
	if (vs->n >= SELECTOR_MAX_VALUES) {
		buf_addf(err, "too many values in a set (max %d)", SELECTOR_MAX_VALUES);
		return E_BAD_REQUEST;
	}
	vs->v = xrealloc(vs->v, (vs->n + 1) * sizeof(*vs->v));
	vs->v[vs->n++] = sv_dup(v);
	return 0;
}

/* Sorts and removes duplicates, as upstream's string sets do. */
static void vset_normalize(struct vset *vs)
{
	if (vs->n < 2)
		return;
	qsort(vs->v, vs->n, sizeof(*vs->v), cmp_str);
	size_t out = 1;
	for (size_t i = 1; i < vs->n; i++) {
		if (strcmp(vs->v[i], vs->v[out - 1]) == 0)
			free(vs->v[i]);
		else
			vs->v[out++] = vs->v[i];
	}
	vs->n = out;
}

/* Checks values against the operator, then appends the requirement to sel (taking key and vs). */
static int add_requirement(struct label_selector *sel, char *key, enum op op, struct vset *vs, struct buf *err)
{
	int rc = E_BAD_REQUEST;
	const char *why;
	long long n;
	if (sel->n >= SELECTOR_MAX_REQUIREMENTS) {
		buf_addf(err, "too many requirements (max %d)", SELECTOR_MAX_REQUIREMENTS);
		goto out;
	}
	if ((why = label_key_error(key))) {
		buf_addf(err, "invalid label key \"%s\": %s", key, why);
		goto out;
	}
	vset_normalize(vs);
	if ((op == OP_IN || op == OP_NOTIN) && vs->n == 0) {
		buf_adds(err, "for 'in', 'notin' operators, values set can't be empty");
		goto out;
	}
	if ((op == OP_EQ || op == OP_DEQ || op == OP_NEQ) && vs->n != 1) {
		buf_adds(err, "exact-match compatibility requires one single value");
		goto out;
	}
	if ((op == OP_EXISTS || op == OP_NOT_EXISTS) && vs->n != 0) {
		buf_adds(err, "values set must be empty for exists and does not exist");
		goto out;
	}
	if (op == OP_GT || op == OP_LT) {
		if (vs->n != 1) {
			buf_adds(err, "for 'Gt', 'Lt' operators, exactly one value is required");
			goto out;
		}
		if (parse_int64(vs->v[0], &n) < 0) {
			buf_adds(err, "for 'Gt', 'Lt' operators, the value must be an integer");
			goto out;
		}
	}
	for (size_t i = 0; i < vs->n; i++) {
		if ((why = label_value_error(vs->v[i]))) {
			buf_addf(err, "invalid label value: \"%s\": at key: \"%s\": %s", vs->v[i], key, why);
			goto out;
		}
	}
	sel->reqs = xrealloc(sel->reqs, (sel->n + 1) * sizeof(*sel->reqs));
	sel->reqs[sel->n++] = (struct requirement){ key, op, vs->v, vs->n };
	key = NULL;
	vs->v = NULL;
	vs->n = 0;
	rc = 0;
out:
	free(key);
	vset_release(vs);
	return rc;
}

static int parse_operator(struct parser *p, enum op *ret_op)
{
	struct token t = consume(p);
	switch (t.type) {
	case TK_EQ: *ret_op = OP_EQ; return 0;
	case TK_DEQ: *ret_op = OP_DEQ; return 0;
	case TK_NEQ: *ret_op = OP_NEQ; return 0;
	case TK_GT: *ret_op = OP_GT; return 0;
	case TK_LT: *ret_op = OP_LT; return 0;
	case TK_ID:
		if (sv_eq(t.lit, "in")) {
			*ret_op = OP_IN;
			return 0;
		}
		if (sv_eq(t.lit, "notin")) {
			*ret_op = OP_NOTIN;
			return 0;
		}
		break;
	default:
		break;
	}
	return fail(p, "found '%.*s', expected: in, notin, =, ==, !=, gt, lt", (int)t.lit.len, t.lit.ptr);
}

/* After '=', '!=' etc.: one identifier, or nothing (the empty value) before ',' or the end. */
static int parse_exact_value(struct parser *p, struct vset *vs)
{
	if (p->la.type == TK_EOS || p->la.type == TK_COMMA)
		return vset_add(vs, SV(""), p->err);
	struct token t = consume(p);
	if (t.type != TK_ID)
		return fail(p, "found '%.*s', expected: identifier", (int)t.lit.len, t.lit.ptr);
	return vset_add(vs, t.lit, p->err);
}

/* The list inside "( ... )" after the first token; empty entries ("(,a)", "(a,,b)", "(a,)") are "". */
static int parse_identifiers(struct parser *p, struct vset *vs)
{
	int rc;
	for (;;) {
		struct token t = consume(p);
		if (t.type == TK_ID) {
			if ((rc = vset_add(vs, t.lit, p->err)))
				return rc;
			if (p->la.type == TK_CLOSE)
				return 0;
			if (p->la.type != TK_COMMA)
				return fail(p, "found '%.*s', expected: ',' or ')'", (int)p->la.lit.len, p->la.lit.ptr);
		} else if (t.type == TK_COMMA) {
			bool empty_next = p->la.type == TK_CLOSE || p->la.type == TK_COMMA;
			if ((vs->n == 0 || empty_next) && (rc = vset_add(vs, SV(""), p->err)))
				return rc;
			if (p->la.type == TK_CLOSE)
				return 0;
			if (p->la.type == TK_COMMA)
				consume(p);
		} else {
			return fail(p, "found '%.*s', expected: ',', or identifier", (int)t.lit.len, t.lit.ptr);
		}
	}
}

static int parse_set(struct parser *p, struct vset *vs)
{
	int rc;
	struct token t = consume(p);
	if (t.type != TK_OPEN)
		return fail(p, "found '%.*s' expected: '('", (int)t.lit.len, t.lit.ptr);
	if (p->la.type == TK_CLOSE) {
		consume(p);
		return vset_add(vs, SV(""), p->err);
	}
	if (p->la.type != TK_ID && p->la.type != TK_COMMA)
		return fail(p, "found '%.*s', expected: ',', ')' or identifier", (int)p->la.lit.len, p->la.lit.ptr);
	if ((rc = parse_identifiers(p, vs)))
		return rc;
	t = consume(p);
	if (t.type != TK_CLOSE)
		return fail(p, "found '%.*s', expected: ')'", (int)t.lit.len, t.lit.ptr);
	return 0;
}

static int parse_requirement(struct parser *p)
{
	struct vset vs = { NULL, 0 };
	enum op op = OP_EXISTS;
	int rc;
	struct token t = consume(p);
	if (t.type == TK_NOT) {
		op = OP_NOT_EXISTS;
		t = consume(p);
	}
	if (t.type != TK_ID)
		return fail(p, "found '%.*s', expected: identifier", (int)t.lit.len, t.lit.ptr);
	char *key = sv_dup(t.lit);
	if (op != OP_NOT_EXISTS && p->la.type != TK_EOS && p->la.type != TK_COMMA) {
		if ((rc = parse_operator(p, &op)))
			goto out;
		if (op == OP_IN || op == OP_NOTIN)
			rc = parse_set(p, &vs);
		else
			rc = parse_exact_value(p, &vs);
		if (rc)
			goto out;
	}
	return add_requirement(p->sel, key, op, &vs, p->err);
out:
	free(key);
	vset_release(&vs);
	return rc;
}

/* Upstream prefixes every error from inside a requirement; errors between requirements are bare. */
static int parse_requirement_wrapped(struct parser *p)
{
	struct buf *outer = p->err;
	struct buf detail = BUF_INIT;
	p->err = &detail;
	int rc = parse_requirement(p);
	p->err = outer;
	if (rc)
		buf_addf(outer, "unable to parse requirement: %s", buf_cstr(&detail));
	buf_release(&detail);
	return rc;
}

static int parse_all(struct parser *p)
{
	lex(p);
	if (p->la.type == TK_EOS)
		return 0;
	for (;;) {
		if (p->la.type != TK_ID && p->la.type != TK_NOT)
			return fail(p, "found '%.*s', expected: !, identifier, or 'end of string'", (int)p->la.lit.len,
				    p->la.lit.ptr);
		if (parse_requirement_wrapped(p))
			return E_BAD_REQUEST;
		struct token t = consume(p);
		if (t.type == TK_EOS)
			return 0;
		if (t.type != TK_COMMA)
			return fail(p, "found '%.*s', expected: ',' or 'end of string'", (int)t.lit.len, t.lit.ptr);
		if (p->la.type != TK_ID && p->la.type != TK_NOT)
			return fail(p, "found '%.*s', expected: identifier after ','", (int)p->la.lit.len,
				    p->la.lit.ptr);
	}
}

static struct label_selector *selector_new(void)
{
	return xcalloc(1, sizeof(struct label_selector));
}

/* Stable by key (insertion sort: there are at most SELECTOR_MAX_REQUIREMENTS), so that
 * requirements on the same key keep the order they were written in. */
static void selector_sort(struct label_selector *sel)
{
	for (size_t i = 1; i < sel->n; i++) {
		struct requirement r = sel->reqs[i];
		size_t j = i;
		for (; j > 0 && strcmp(sel->reqs[j - 1].key, r.key) > 0; j--)
			sel->reqs[j] = sel->reqs[j - 1];
		sel->reqs[j] = r;
	}
}

int label_selector_parse(const char *s, struct label_selector **ret, struct buf *err)
{
	struct buf scratch = BUF_INIT;
	struct parser p = { s ? s : "", 0, { TK_EOS, { NULL, 0 } }, selector_new(), err ? err : &scratch };
	int rc = 0;
	if (strlen(p.s) > SELECTOR_MAX_INPUT) {
		rc = fail(&p, "label selector too long (max %d bytes)", SELECTOR_MAX_INPUT);
		goto out;
	}
	if ((rc = parse_all(&p)))
		goto out;
	selector_sort(p.sel);
	*ret = p.sel;
	p.sel = NULL;
out:
	label_selector_free(p.sel);
	buf_release(&scratch);
	return rc;
}

/* ---- LabelSelector JSON ---- */

static int json_fail(struct buf *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int json_fail(struct buf *err, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	buf_vaddf(err, fmt, ap);
	va_end(ap);
	return E_INVALID;
}

static int from_match_labels(struct label_selector *sel, const json_t *ml, struct buf *err)
{
	const char *k;
	json_t *v;
	if (!ml || json_is_null(ml))
		return 0;
	if (!json_is_object(ml))
		return json_fail(err, "matchLabels: must be an object of strings");
	json_object_foreach((json_t *)ml, k, v) {
		struct vset vs = { NULL, 0 };
		if (!json_is_string(v))
			return json_fail(err, "matchLabels[%s]: must be a string", k);
		vset_add(&vs, sv_from(json_string_value(v)), err);
		if (add_requirement(sel, xstrdup(k), OP_EQ, &vs, err))
			return E_INVALID;
	}
	return 0;
}

static int expr_operator(const char *s, enum op *ret_op)
{
	static const struct {
		const char *name;
		enum op op;
	} ops[] = { { "In", OP_IN }, { "NotIn", OP_NOTIN }, { "Exists", OP_EXISTS }, { "DoesNotExist", OP_NOT_EXISTS } };
	for (size_t i = 0; s && i < ARRAY_SIZE(ops); i++) {
		if (strcmp(s, ops[i].name) == 0) {
			*ret_op = ops[i].op;
			return 0;
		}
	}
	return -1;
}

static int from_expression(struct label_selector *sel, const json_t *e, size_t idx, struct buf *err)
{
	struct vset vs = { NULL, 0 };
	const json_t *vals = json_object_get(e, "values");
	const char *key = json_string_value(json_object_get(e, "key"));
	const char *opname = json_string_value(json_object_get(e, "operator"));
	enum op op;
	size_t i;
	json_t *v;
	if (!json_is_object(e))
		return json_fail(err, "matchExpressions[%zu]: must be an object", idx);
	if (!key)
		return json_fail(err, "matchExpressions[%zu].key: Required value", idx);
	if (expr_operator(opname, &op) < 0)
		return json_fail(err, "\"%s\" is not a valid pod selector operator", opname ? opname : "");
	if (vals && !json_is_null(vals) && !json_is_array(vals))
		return json_fail(err, "matchExpressions[%zu].values: must be an array of strings", idx);
	json_array_foreach(vals, i, v) {
		if (!json_is_string(v)) {
			vset_release(&vs);
			return json_fail(err, "matchExpressions[%zu].values[%zu]: must be a string", idx, i);
		}
		if (vset_add(&vs, sv_from(json_string_value(v)), err)) {
			vset_release(&vs);
			return E_INVALID;
		}
	}
	return add_requirement(sel, xstrdup(key), op, &vs, err) ? E_INVALID : 0;
}

static int from_match_expressions(struct label_selector *sel, const json_t *me, struct buf *err)
{
	size_t i;
	json_t *e;
	if (!me || json_is_null(me))
		return 0;
	if (!json_is_array(me))
		return json_fail(err, "matchExpressions: must be an array");
	json_array_foreach(me, i, e) {
		int rc = from_expression(sel, e, i, err);
		if (rc)
			return rc;
	}
	return 0;
}

int label_selector_from_json(const json_t *js, struct label_selector **ret, struct buf *err)
{
	struct buf scratch = BUF_INIT;
	struct label_selector *sel = selector_new();
	int rc = 0;
	if (!err)
		err = &scratch;
	if (!js || json_is_null(js)) {
		sel->nothing = true;
	} else if (!json_is_object(js)) {
		rc = json_fail(err, "invalid label selector: must be an object");
	} else if (!(rc = from_match_labels(sel, json_object_get(js, "matchLabels"), err))) {
		rc = from_match_expressions(sel, json_object_get(js, "matchExpressions"), err);
	}
	if (rc)
		goto out;
	selector_sort(sel);
	*ret = sel;
	sel = NULL;
out:
	label_selector_free(sel);
	buf_release(&scratch);
	return rc;
}

/* ---- matching and inspection ---- */

static bool has_value(const struct requirement *r, const char *v)
{
	return bsearch(&v, r->values, r->nvalues, sizeof(*r->values), cmp_str) != NULL;
}

static bool compare_int(const struct requirement *r, const char *v)
{
	long long have, want;
	if (!v || parse_int64(v, &have) < 0 || parse_int64(r->values[0], &want) < 0)
		return false;
	return r->op == OP_GT ? have > want : have < want;
}

static bool req_matches(const struct requirement *r, const json_t *labels)
{
	const json_t *jv = labels ? json_object_get(labels, r->key) : NULL;
	const char *v = json_is_string(jv) ? json_string_value(jv) : NULL;
	switch (r->op) {
	case OP_EXISTS: return v != NULL;
	case OP_NOT_EXISTS: return v == NULL;
	case OP_EQ:
	case OP_DEQ:
	case OP_IN: return v && has_value(r, v);
	case OP_NEQ:
	case OP_NOTIN: return !v || !has_value(r, v);
	case OP_GT:
	case OP_LT: return compare_int(r, v);
	}
	return false;
}

bool label_selector_matches(const struct label_selector *s, const json_t *labels)
{
	if (!s)
		return true;
	if (s->nothing)
		return false;
	for (size_t i = 0; i < s->n; i++)
		if (!req_matches(&s->reqs[i], labels))
			return false;
	return true;
}

bool label_selector_empty(const struct label_selector *s)
{
	return !s || (!s->nothing && s->n == 0);
}

const char *label_selector_exact(const struct label_selector *s, const char *key)
{
	for (size_t i = 0; s && i < s->n; i++) {
		const struct requirement *r = &s->reqs[i];
		bool exact = r->op == OP_EQ || r->op == OP_DEQ || (r->op == OP_IN && r->nvalues == 1);
		if (exact && strcmp(r->key, key) == 0)
			return r->values[0];
	}
	return NULL;
}

static void format_requirement(const struct requirement *r, struct buf *out)
{
	static const char *const opstr[] = {
		[OP_EQ] = "=", [OP_DEQ] = "==", [OP_NEQ] = "!=", [OP_IN] = " in ",
		[OP_NOTIN] = " notin ", [OP_GT] = ">", [OP_LT] = "<",
	};
	if (r->op == OP_NOT_EXISTS)
		buf_addch(out, '!');
	buf_adds(out, r->key);
	if (r->op == OP_EXISTS || r->op == OP_NOT_EXISTS)
		return;
	buf_adds(out, opstr[r->op]);
	bool set = r->op == OP_IN || r->op == OP_NOTIN;
	if (set)
		buf_addch(out, '(');
	for (size_t i = 0; i < r->nvalues; i++) {
		if (i)
			buf_addch(out, ',');
		buf_adds(out, r->values[i]);
	}
	if (set)
		buf_addch(out, ')');
}

void label_selector_format(const struct label_selector *s, struct buf *out)
{
	for (size_t i = 0; s && i < s->n; i++) {
		if (i)
			buf_addch(out, ',');
		format_requirement(&s->reqs[i], out);
	}
}

void label_selector_free(struct label_selector *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->n; i++)
		req_release(&s->reqs[i]);
	free(s->reqs);
	free(s);
}
