/* RFC 6902 JSON Patch over RFC 6901 JSON Pointers.
 *
 * Errors: a patch that is not a list of well-formed operations (unknown op, missing member,
 * bad pointer syntax) is E_BAD_REQUEST; a well-formed operation that cannot apply (missing
 * path, index out of range, failed test) is E_INVALID, as kube-apiserver answers 422 there. */
#include "ursa/patch.h"
#include "ursa/errors.h"
#include "ursa/jsonutil.h"
#include "ursa/xalloc.h"
#include "patch_internal.h"
#include <string.h>

#define JSON_PATCH_MAX_OPS 10000
/* Deepest document a patch may build: path tokens plus the depth of the value put there. */
#define JSON_PATCH_MAX_DEPTH 512
/* Node visits spent checking and duplicating values of copy/move ops, per patch: copies could
 * otherwise double the document with every op. */
#define JSON_PATCH_BUDGET 1000000L

struct ptr {
	struct buf *tok; /* unescaped reference tokens */
	size_t n;
};

struct jp {
	json_t *doc; /* owned working copy */
	long budget;
	size_t opno;
	const char *op;
	struct buf *err;
};

static void ptr_release(struct ptr *p)
{
	for (size_t i = 0; i < p->n; i++)
		buf_release(&p->tok[i]);
	free(p->tok);
	p->tok = NULL;
	p->n = 0;
}

static int fail(struct jp *jp, int code, const char *what, const json_t *path)
{
	buf_addf(jp->err, "JSON patch operation %zu", jp->opno);
	if (jp->op)
		buf_addf(jp->err, " (%s)", jp->op);
	buf_addf(jp->err, ": %s", what);
	if (path) {
		buf_adds(jp->err, ": ");
		patch_quote(jp->err, json_string_value(path), json_string_length(path));
	}
	return code;
}

/* Splits an RFC 6901 pointer ("" is the whole document) into unescaped tokens. */
static int ptr_parse(struct jp *jp, const json_t *path, struct ptr *ret)
{
	const char *s = json_string_value(path);
	size_t len = json_string_length(path);
	struct ptr p = { NULL, 0 };
	size_t alloc = 0;

	if (len && s[0] != '/')
		return fail(jp, E_BAD_REQUEST, "pointer must be empty or start with '/'", path);
	for (size_t i = 0; i < len; i++) {
		if (s[i] == '/') {
			if (p.n >= JSON_PATCH_MAX_DEPTH) {
				ptr_release(&p);
				return fail(jp, E_INVALID, "pointer is too deep", path);
			}
			if (p.n == alloc) {
				alloc = alloc ? alloc * 2 : 8;
				p.tok = xrealloc(p.tok, alloc * sizeof(*p.tok));
			}
			buf_init(&p.tok[p.n]);
			buf_add(&p.tok[p.n++], "", 0);
			continue;
		}
		struct buf *t = &p.tok[p.n - 1];
		if (s[i] != '~') {
			buf_addch(t, s[i]);
			continue;
		}
		if (i + 1 < len && (s[i + 1] == '0' || s[i + 1] == '1')) {
			buf_addch(t, s[i + 1] == '0' ? '~' : '/');
			i++;
			continue;
		}
		ptr_release(&p);
		return fail(jp, E_BAD_REQUEST, "'~' must be followed by '0' or '1' in pointer", path);
	}
	*ret = p;
	return 0;
}

/* Array index token: "0" or a decimal without leading zeros. Returns -1 if not one. */
static long long parse_index(const struct buf *t)
{
	long long v = 0;

	if (t->len == 0 || t->len > 15 || (t->len > 1 && t->ptr[0] == '0'))
		return -1;
	for (size_t i = 0; i < t->len; i++) {
		if (t->ptr[i] < '0' || t->ptr[i] > '9')
			return -1;
		v = v * 10 + (t->ptr[i] - '0');
	}
	return v;
}

/* Borrowed child of c named by t, or NULL. */
static json_t *child(json_t *c, const struct buf *t)
{
	if (json_is_object(c))
		return json_object_getn(c, t->ptr, t->len);
	if (json_is_array(c)) {
		long long i = parse_index(t);
		if (i < 0 || (size_t)i >= json_array_size(c))
			return NULL;
		return json_array_get(c, (size_t)i);
	}
	return NULL;
}

/* Borrowed value at the first n tokens of p, or NULL. */
static json_t *walk(json_t *doc, const struct ptr *p, size_t n)
{
	json_t *c = doc;
	for (size_t i = 0; c && i < n; i++)
		c = child(c, &p->tok[i]);
	return c;
}

/* Counts nodes of v against the patch budget; -1 once the budget is spent. Also returns the
 * depth of v in *ret_depth. */
static int measure(struct jp *jp, const json_t *v, int *ret_depth)
{
	int max = 0, d;
	const char *k;
	json_t *e;
	size_t i;

	if (--jp->budget < 0)
		return -1;
	if (json_is_object(v)) {
		json_object_foreach((json_t *)v, k, e) {
			if (measure(jp, e, &d) < 0)
				return -1;
			if (d > max)
				max = d;
		}
		*ret_depth = max + 1;
		return 0;
	}
	if (json_is_array(v)) {
		json_array_foreach(v, i, e) {
			if (measure(jp, e, &d) < 0)
				return -1;
			if (d > max)
				max = d;
		}
		*ret_depth = max + 1;
		return 0;
	}
	*ret_depth = 0;
	return 0;
}

static int check_fits(struct jp *jp, const struct ptr *p, const json_t *v, const json_t *path)
{
	int d;
	if (measure(jp, v, &d) < 0)
		return fail(jp, E_INVALID, "patch copies or moves too much data", NULL);
	if ((size_t)d + p->n > JSON_PATCH_MAX_DEPTH)
		return fail(jp, E_INVALID, "result would be nested too deeply", path);
	return 0;
}

/* Adds v (stolen) at p. */
static int do_add(struct jp *jp, const struct ptr *p, json_t *v, const json_t *path)
{
	if (p->n == 0) {
		json_decref(jp->doc);
		jp->doc = v;
		return 0;
	}
	json_t *parent = walk(jp->doc, p, p->n - 1);
	const struct buf *last = &p->tok[p->n - 1];
	if (json_is_object(parent)) {
		json_object_setn_new(parent, last->ptr, last->len, v);
		return 0;
	}
	if (json_is_array(parent)) {
		if (last->len == 1 && last->ptr[0] == '-') {
			json_array_append_new(parent, v);
			return 0;
		}
		long long i = parse_index(last);
		if (i >= 0 && (size_t)i <= json_array_size(parent)) {
			json_array_insert_new(parent, (size_t)i, v);
			return 0;
		}
		json_decref(v);
		return fail(jp, E_INVALID, "array index out of range", path);
	}
	json_decref(v);
	return fail(jp, E_INVALID, "parent of path does not exist", path);
}

/* Removes the value at p; stores a new reference to it in *ret_v when ret_v is not NULL. */
static int do_remove(struct jp *jp, const struct ptr *p, json_t **ret_v, const json_t *path)
{
	if (p->n == 0)
		return fail(jp, E_INVALID, "cannot remove the whole document", path);
	json_t *parent = walk(jp->doc, p, p->n - 1);
	const struct buf *last = &p->tok[p->n - 1];
	json_t *v = parent ? child(parent, last) : NULL;
	if (!v)
		return fail(jp, E_INVALID, "path does not exist", path);
	if (ret_v)
		*ret_v = json_incref(v);
	if (json_is_object(parent))
		json_object_deln(parent, last->ptr, last->len);
	else
		json_array_remove(parent, (size_t)parse_index(last));
	return 0;
}

static int do_replace(struct jp *jp, const struct ptr *p, json_t *v, const json_t *path)
{
	if (p->n == 0)
		return do_add(jp, p, v, path);
	json_t *parent = walk(jp->doc, p, p->n - 1);
	const struct buf *last = &p->tok[p->n - 1];
	if (!parent || !child(parent, last)) {
		json_decref(v);
		return fail(jp, E_INVALID, "path does not exist", path);
	}
	if (json_is_object(parent))
		json_object_setn_new(parent, last->ptr, last->len, v);
	else
		json_array_set_new(parent, (size_t)parse_index(last), v);
	return 0;
}

static bool is_prefix(const struct ptr *a, const struct ptr *b)
{
	if (a->n > b->n)
		return false;
	for (size_t i = 0; i < a->n; i++)
		if (a->tok[i].len != b->tok[i].len || memcmp(a->tok[i].ptr, b->tok[i].ptr, a->tok[i].len))
			return false;
	return true;
}

static int do_move_copy(struct jp *jp, bool move, const struct ptr *from, const struct ptr *to,
			const json_t *jfrom, const json_t *jpath)
{
	json_t *src = walk(jp->doc, from, from->n);
	int rc;

	if (!src)
		return fail(jp, E_INVALID, "\"from\" path does not exist", jfrom);
	if (move && is_prefix(from, to)) {
		if (from->n == to->n)
			return 0;
		return fail(jp, E_INVALID, "cannot move a value into one of its children", jfrom);
	}
	rc = check_fits(jp, to, src, jpath);
	if (rc)
		return rc;
	if (!move)
		return do_add(jp, to, json_deep_copy(src), jpath);
	json_t *v = NULL;
	rc = do_remove(jp, from, &v, jfrom);
	if (rc)
		return rc;
	return do_add(jp, to, v, jpath);
}

static const json_t *member(const json_t *op, const char *name)
{
	return json_object_get(op, name);
}

static int need_string(struct jp *jp, const json_t *op, const char *name, const json_t **ret)
{
	const json_t *v = member(op, name);
	if (!json_is_string(v)) {
		buf_addf(jp->err, "JSON patch operation %zu", jp->opno);
		if (jp->op)
			buf_addf(jp->err, " (%s)", jp->op);
		buf_addf(jp->err, ": missing or non-string \"%s\"", name);
		return E_BAD_REQUEST;
	}
	*ret = v;
	return 0;
}

static int need_value(struct jp *jp, const json_t *op, json_t **ret)
{
	const json_t *v = member(op, "value");
	if (!v)
		return fail(jp, E_BAD_REQUEST, "missing \"value\"", NULL);
	*ret = json_deep_copy(v);
	return 0;
}

static int apply_value_op(struct jp *jp, const char *op, const struct ptr *p, const json_t *o,
			  const json_t *path)
{
	json_t *v = NULL;
	int rc = need_value(jp, o, &v);
	if (rc)
		return rc;
	if ((size_t)json_depth(v) + p->n > JSON_PATCH_MAX_DEPTH) {
		json_decref(v);
		return fail(jp, E_INVALID, "result would be nested too deeply", path);
	}
	if (!strcmp(op, "add"))
		return do_add(jp, p, v, path);
	if (!strcmp(op, "replace"))
		return do_replace(jp, p, v, path);
	/* test */
	json_t *cur = walk(jp->doc, p, p->n);
	bool same = cur && patch_json_equal(cur, v);
	json_decref(v);
	if (!cur)
		return fail(jp, E_INVALID, "path does not exist", path);
	if (!same)
		return fail(jp, E_INVALID, "test failed: value differs at", path);
	return 0;
}

static int apply_op(struct jp *jp, const json_t *o)
{
	const json_t *jop, *path, *from;
	struct ptr p = { NULL, 0 }, f = { NULL, 0 };
	int rc;

	jp->op = NULL;
	if (!json_is_object(o))
		return fail(jp, E_BAD_REQUEST, "operation must be an object", NULL);
	rc = need_string(jp, o, "op", &jop);
	if (rc)
		return rc;
	const char *op = json_string_value(jop);
	if (strcmp(op, "add") && strcmp(op, "remove") && strcmp(op, "replace") && strcmp(op, "move") &&
	    strcmp(op, "copy") && strcmp(op, "test")) {
		buf_addf(jp->err, "JSON patch operation %zu: unknown op ", jp->opno);
		patch_quote(jp->err, op, json_string_length(jop));
		return E_BAD_REQUEST;
	}
	jp->op = op;
	rc = need_string(jp, o, "path", &path);
	if (!rc)
		rc = ptr_parse(jp, path, &p);
	if (rc)
		return rc;
	if (!strcmp(op, "remove")) {
		rc = do_remove(jp, &p, NULL, path);
	} else if (!strcmp(op, "move") || !strcmp(op, "copy")) {
		rc = need_string(jp, o, "from", &from);
		if (!rc)
			rc = ptr_parse(jp, from, &f);
		if (!rc)
			rc = do_move_copy(jp, op[0] == 'm', &f, &p, from, path);
	} else {
		rc = apply_value_op(jp, op, &p, o, path);
	}
	ptr_release(&p);
	ptr_release(&f);
	return rc;
}

int json_patch_apply(const json_t *doc, const json_t *patch, json_t **ret, struct buf *err)
{
	struct jp jp = { NULL, JSON_PATCH_BUDGET, 0, NULL, err };
	size_t i;
	json_t *o;
	int rc = 0;

	if (!json_is_array(patch)) {
		buf_adds(err, "JSON patch must be an array of operations");
		return E_BAD_REQUEST;
	}
	if (json_array_size(patch) > JSON_PATCH_MAX_OPS) {
		buf_addf(err, "JSON patch has more than %d operations", JSON_PATCH_MAX_OPS);
		return E_BAD_REQUEST;
	}
	jp.doc = doc ? json_deep_copy(doc) : json_null();
	json_array_foreach(patch, i, o) {
		jp.opno = i;
		rc = apply_op(&jp, o);
		if (rc)
			goto out;
	}
	*ret = jp.doc;
	jp.doc = NULL;
out:
	json_decref(jp.doc);
	return rc;
}
