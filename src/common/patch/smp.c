/* Kubernetes strategic merge patch, applied on the server side as kube-apiserver does for
 * application/strategic-merge-patch+json.
 *
 * Semantics follow upstream apimachinery's strategicpatch (MergeParallelList and
 * IgnoreUnmatchedNulls on), with these deliberate differences:
 *  - a value the live object lacks is taken from the patch with its directives applied and
 *    its nulls dropped, so no "$patch"/"$setElementOrder/..." key ever reaches the result;
 *  - "$patch": "delete" on a map removes the field (upstream leaves {});
 *  - "$patch": "merge" is accepted (as a no-op) in maps and list elements;
 *  - live list elements without the merge key are kept in place instead of failing.
 *
 * Ownership: every helper that takes a json_t * named orig steals it; values reached through
 * orig are owned exclusively by the working copy and are changed in place. */
#include "ursa/patch.h"
#include "ursa/errors.h"
#include "ursa/xalloc.h"
#include "patch_internal.h"
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#define DIRECTIVE "$patch"
#define RETAIN_KEYS "$retainKeys"
#define SET_ORDER "$setElementOrder/"
#define DELETE_PRIM "$deleteFromPrimitiveList/"

struct smp {
	struct buf *err;
	int depth;
};

static int merge_map(struct smp *s, json_t *orig, const json_t *patch, const struct pb_msg *node,
		     json_t **ret);

static int bad(struct smp *s, int code, const char *msg, const char *name, size_t nlen)
{
	buf_adds(s->err, "strategic merge patch: ");
	buf_adds(s->err, msg);
	if (name) {
		buf_addch(s->err, ' ');
		patch_quote(s->err, name, nlen);
	}
	return code;
}

static bool has_prefix(const char *k, size_t klen, const char *prefix)
{
	size_t n = strlen(prefix);
	return klen >= n && !memcmp(k, prefix, n);
}

static bool key_is(const char *k, size_t klen, const char *s)
{
	return klen == strlen(s) && !memcmp(k, s, klen);
}

static bool is_directive_key(const char *k, size_t klen)
{
	return key_is(k, klen, DIRECTIVE) || key_is(k, klen, RETAIN_KEYS) || has_prefix(k, klen, SET_ORDER) ||
	       has_prefix(k, klen, DELETE_PRIM);
}

/* patch[prefix + name], borrowed, or NULL. */
static json_t *prefixed(const json_t *patch, const char *prefix, const char *name, size_t nlen)
{
	struct buf b = BUF_INIT;
	buf_adds(&b, prefix);
	buf_add(&b, name, nlen);
	json_t *v = json_object_getn(patch, b.ptr, b.len);
	buf_release(&b);
	return v;
}

/* ---- list element keys and ordering ---------------------------------------------------- */

/* Key of element e: its merge key's value when mk is set (false if e has none), else e itself. */
static bool elem_key(const json_t *e, const char *mk, struct buf *out)
{
	buf_reset(out);
	if (mk) {
		e = json_object_get(e, mk);
		if (!e)
			return false;
	}
	patch_canonical_key(e, out);
	return true;
}

/* key -> first position in list; elements without a key are skipped. */
static json_t *build_index(const json_t *list, const char *mk)
{
	json_t *idx = json_object();
	struct buf k = BUF_INIT;
	size_t i;
	json_t *e;

	json_array_foreach(list, i, e) {
		if (elem_key(e, mk, &k) && !json_object_getn(idx, k.ptr, k.len))
			json_object_setn_new_nocheck(idx, k.ptr, k.len, json_integer((json_int_t)i));
	}
	buf_release(&k);
	return idx;
}

static long lookup(const json_t *idx, const struct buf *k)
{
	json_t *v = idx ? json_object_getn(idx, k->ptr, k->len) : NULL;
	return v ? (long)json_integer_value(v) : -1;
}

struct ent {
	json_t *v;
	long want, server;
	size_t i;
};

static int cmp_want(const void *a, const void *b)
{
	const struct ent *x = a, *y = b;
	if (x->want != y->want)
		return x->want < y->want ? -1 : 1;
	return x->i < y->i ? -1 : x->i > y->i;
}

static int cmp_server(const void *a, const void *b)
{
	const struct ent *x = a, *y = b;
	long xs = x->server < 0 ? LONG_MAX : x->server, ys = y->server < 0 ? LONG_MAX : y->server;
	if (xs != ys)
		return xs < ys ? -1 : 1;
	return x->i < y->i ? -1 : x->i > y->i;
}

/* New array of items' elements, ordered as upstream's normalizeElementOrder does: the items
 * named in want (key -> position) sorted by that position, the others by their position in
 * the live list (server), and the two runs interleaved so that a live-only item goes before
 * the first wanted item it preceded in the live list. */
static json_t *order_items(const json_t *items, const char *mk, const json_t *want, const json_t *server)
{
	size_t n = json_array_size(items), np = 0, ns = 0, i, j;
	struct ent *p = xcalloc(n ? n : 1, sizeof(*p)), *so = xcalloc(n ? n : 1, sizeof(*so));
	struct buf k = BUF_INIT;
	json_t *out = json_array();

	for (i = 0; i < n; i++) {
		struct ent e = { json_array_get(items, i), -1, -1, i };
		if (elem_key(e.v, mk, &k)) {
			e.want = lookup(want, &k);
			e.server = lookup(server, &k);
		}
		if (e.want >= 0)
			p[np++] = e;
		else
			so[ns++] = e;
	}
	qsort(p, np, sizeof(*p), cmp_want);
	qsort(so, ns, sizeof(*so), cmp_server);
	for (i = 0, j = 0; i < ns || j < np;) {
		bool left = j >= np ||
			    (i < ns && so[i].server >= 0 && p[j].server >= 0 && so[i].server < p[j].server);
		json_array_append(out, left ? so[i++].v : p[j++].v);
	}
	buf_release(&k);
	free(p);
	free(so);
	return out;
}

/* ---- lists ----------------------------------------------------------------------------- */

static int materialize(struct smp *s, const json_t *v, const struct pb_msg *node, json_t **ret);

/* A list taken from the patch as is (replace strategy): only directives and nulls inside its
 * maps are resolved. */
static int materialize_list(struct smp *s, const json_t *list, const struct pb_msg *node, json_t **ret)
{
	json_t *out = json_array(), *e, *m;
	size_t i;
	int rc;

	json_array_foreach(list, i, e) {
		rc = materialize(s, e, node, &m);
		if (rc) {
			json_decref(out);
			return rc;
		}
		if (m)
			json_array_append_new(out, m);
	}
	*ret = out;
	return 0;
}

/* The value v would have if the live object lacked it; *ret is NULL if a "$patch": "delete"
 * map makes it vanish. */
static int materialize(struct smp *s, const json_t *v, const struct pb_msg *node, json_t **ret)
{
	int rc;

	if (json_is_object(v))
		return merge_map(s, NULL, v, node, ret);
	if (!json_is_array(v)) {
		*ret = json_deep_copy(v);
		return 0;
	}
	if (++s->depth > PATCH_MAX_DEPTH)
		rc = bad(s, E_BAD_REQUEST, "patch is nested too deeply", NULL, 0);
	else
		rc = materialize_list(s, v, node, ret);
	s->depth--;
	return rc;
}

/* Merge strategy over a list of primitives: the union, deduplicated. */
static int merge_set(struct smp *s, const json_t *cur, const json_t *pv, const char *name, size_t nlen,
		     json_t **ret)
{
	json_t *seen = json_object(), *merged = json_array(), *want, *server, *e;
	const json_t *lists[2] = { cur, pv };
	struct buf k = BUF_INIT;
	size_t i;
	int rc = 0;

	for (int l = 0; l < 2; l++) {
		json_array_foreach(lists[l], i, e) {
			if (json_is_object(e) || json_is_array(e)) {
				rc = bad(s, l ? E_BAD_REQUEST : E_INVALID, "list holds a non-primitive:", name, nlen);
				goto out;
			}
			elem_key(e, NULL, &k);
			if (json_object_getn(seen, k.ptr, k.len))
				continue;
			json_object_setn_new_nocheck(seen, k.ptr, k.len, json_true());
			json_array_append_new(merged, json_deep_copy(e));
		}
	}
	want = build_index(pv, NULL);
	server = build_index(cur, NULL);
	*ret = order_items(merged, NULL, want, server);
	json_decref(want);
	json_decref(server);
out:
	buf_release(&k);
	json_decref(seen);
	json_decref(merged);
	return rc;
}

/* Reads the "$patch" directive of a patch list element: 0 none or merge, 'd' delete,
 * 'r' replace; -1 for an unknown one. */
static int elem_directive(const json_t *e)
{
	const json_t *d = json_object_get(e, DIRECTIVE);
	const char *v = json_string_value(d);

	if (!d)
		return 0;
	if (!v)
		return -1;
	if (!strcmp(v, "merge"))
		return 0;
	if (!strcmp(v, "delete"))
		return 'd';
	if (!strcmp(v, "replace"))
		return 'r';
	return -1;
}

/* First pass over a keyed patch list: validates it, collects the keys of "$patch": "delete"
 * elements into del and reports a "$patch": "replace" element. */
static int scan_keyed_patch(struct smp *s, const json_t *pv, const char *mk, const char *name, size_t nlen,
			    json_t *del, bool *ret_replace)
{
	struct buf k = BUF_INIT;
	size_t i;
	json_t *e;
	int rc = 0;

	*ret_replace = false;
	json_array_foreach(pv, i, e) {
		if (!json_is_object(e)) {
			rc = bad(s, E_BAD_REQUEST, "elements must be maps in list", name, nlen);
			break;
		}
		int d = elem_directive(e);
		if (d < 0) {
			rc = bad(s, E_BAD_REQUEST, "unknown $patch directive in an element of list", name, nlen);
			break;
		}
		if (d == 'r')
			*ret_replace = true;
		if (d == 'r' || d == 0)
			continue;
		if (!elem_key(e, mk, &k)) {
			rc = bad(s, E_BAD_REQUEST, "$patch: delete element lacks the merge key in list", name, nlen);
			break;
		}
		json_object_setn_new_nocheck(del, k.ptr, k.len, json_true());
	}
	buf_release(&k);
	return rc;
}

/* Merges the ordinary elements of pv into w (live elements), by merge key. */
static int merge_keyed_elems(struct smp *s, json_t *w, const json_t *pv, const struct pb_field *f,
			     const char *name, size_t nlen, json_t *want)
{
	json_t *widx = build_index(w, f->merge_key), *e, *m;
	struct buf k = BUF_INIT;
	json_int_t nwant = 0;
	size_t i;
	int rc = 0;

	json_array_foreach(pv, i, e) {
		if (elem_directive(e))
			continue;
		if (!elem_key(e, f->merge_key, &k)) {
			rc = bad(s, E_BAD_REQUEST, "an element lacks the merge key in list", name, nlen);
			break;
		}
		if (!json_object_getn(want, k.ptr, k.len))
			json_object_setn_new_nocheck(want, k.ptr, k.len, json_integer(nwant++));
		long at = lookup(widx, &k);
		if (at >= 0) {
			rc = merge_map(s, json_incref(json_array_get(w, (size_t)at)), e, smp_sub(f), &m);
			if (!rc)
				json_array_set_new(w, (size_t)at, m ? m : json_object());
		} else {
			rc = merge_map(s, NULL, e, smp_sub(f), &m);
			if (!rc && m) {
				json_object_setn_new_nocheck(widx, k.ptr, k.len, json_integer((json_int_t)json_array_size(w)));
				json_array_append_new(w, m);
			}
		}
		if (rc)
			break;
	}
	buf_release(&k);
	json_decref(widx);
	return rc;
}

/* Merge strategy over a list of maps keyed by f->merge_key. */
static int merge_keyed(struct smp *s, const json_t *cur, const json_t *pv, const struct pb_field *f,
		       const char *name, size_t nlen, json_t **ret)
{
	json_t *del = json_object(), *w = json_array(), *want = json_object(), *server = NULL, *e;
	struct buf k = BUF_INIT;
	bool replace;
	size_t i;
	int rc;

	rc = scan_keyed_patch(s, pv, f->merge_key, name, nlen, del, &replace);
	if (rc)
		goto out;
	if (replace) {
		/* the patch's own elements, in its order; the live list is dropped */
		json_t *plain = json_array();
		json_array_foreach(pv, i, e)
			if (!elem_directive(e))
				json_array_append(plain, e);
		rc = materialize_list(s, plain, smp_sub(f), ret);
		json_decref(plain);
		goto out;
	}
	json_array_foreach(cur, i, e) {
		if (!json_is_object(e)) {
			rc = bad(s, E_INVALID, "live list holds a non-map:", name, nlen);
			goto out;
		}
		if (elem_key(e, f->merge_key, &k) && json_object_getn(del, k.ptr, k.len))
			continue;
		json_array_append(w, e);
	}
	server = build_index(w, f->merge_key);
	rc = merge_keyed_elems(s, w, pv, f, name, nlen, want);
	if (!rc)
		*ret = order_items(w, f->merge_key, want, server);
out:
	buf_release(&k);
	json_decref(del);
	json_decref(w);
	json_decref(want);
	json_decref(server);
	return rc;
}

/* Merges patch list pv into the live list cur (borrowed, NULL if absent) under field f's
 * strategy; *ret is new. */
static int merge_list(struct smp *s, const json_t *cur, const json_t *pv, const struct pb_field *f,
		      const char *name, size_t nlen, json_t **ret)
{
	json_t *empty = NULL;
	int rc;

	if (smp_list_of(f) == SMP_LIST_REPLACE)
		return materialize(s, pv, smp_sub(f), ret);
	if (!cur)
		cur = empty = json_array();
	if (++s->depth > PATCH_MAX_DEPTH)
		rc = bad(s, E_BAD_REQUEST, "patch is nested too deeply", NULL, 0);
	else if (smp_list_of(f) == SMP_LIST_MERGE_SET)
		rc = merge_set(s, cur, pv, name, nlen, ret);
	else
		rc = merge_keyed(s, cur, pv, f, name, nlen, ret);
	s->depth--;
	json_decref(empty);
	return rc;
}

/* ---- map directives -------------------------------------------------------------------- */

static int retain_keys(struct smp *s, json_t *orig, const json_t *patch)
{
	const json_t *rk = json_object_get(patch, RETAIN_KEYS);
	json_t *set, *v, *tmp;
	const char *k;
	size_t klen, i;
	int rc = 0;

	if (!rk)
		return 0;
	if (!json_is_array(rk))
		return bad(s, E_BAD_REQUEST, "$retainKeys must be a list of field names", NULL, 0);
	set = json_object();
	json_array_foreach(rk, i, v) {
		if (!json_is_string(v)) {
			rc = bad(s, E_BAD_REQUEST, "$retainKeys must be a list of field names", NULL, 0);
			goto out;
		}
		json_object_setn_new_nocheck(set, json_string_value(v), json_string_length(v), json_true());
	}
	json_object_keylen_foreach((json_t *)patch, k, klen, v) {
		if (json_is_null(v) || is_directive_key(k, klen) || json_object_getn(set, k, klen))
			continue;
		rc = bad(s, E_INVALID, "field is not present in $retainKeys:", k, klen);
		goto out;
	}
	json_object_keylen_foreach_safe(orig, tmp, k, klen, v) {
		if (!json_object_getn(set, k, klen))
			json_object_deln(orig, k, klen);
	}
out:
	json_decref(set);
	return rc;
}

/* Checks, as upstream does, that the patch list names its elements in the same relative order
 * as the $setElementOrder list. */
static int check_order(struct smp *s, const json_t *pv, const json_t *order, const char *mk, const char *name,
		       size_t nlen)
{
	struct buf a = BUF_INIT, b = BUF_INIT;
	size_t n = json_array_size(pv), pi = 0, oi;
	int rc = 0;

	for (oi = 0; oi < json_array_size(order); oi++) {
		if (!elem_key(json_array_get(order, oi), mk, &b)) {
			rc = bad(s, E_BAD_REQUEST, "an element lacks the merge key in $setElementOrder list", name, nlen);
			goto out;
		}
		while (pi < n && elem_directive(json_array_get(pv, pi)))
			pi++;
		if (pi < n && elem_key(json_array_get(pv, pi), mk, &a) && a.len == b.len && !memcmp(a.ptr, b.ptr, a.len))
			pi++;
	}
	while (pi < n && elem_directive(json_array_get(pv, pi)))
		pi++;
	if (pi < n && json_array_size(order))
		rc = bad(s, E_BAD_REQUEST, "list does not match the order of its $setElementOrder list:", name, nlen);
out:
	buf_release(&a);
	buf_release(&b);
	return rc;
}

/* Handles "$setElementOrder/<name>": merges list name and orders the result. */
static int set_order_one(struct smp *s, json_t *orig, const json_t *patch, const char *name, size_t nlen,
			 const json_t *order, const struct pb_field *f)
{
	const char *mk = smp_list_of(f) == SMP_LIST_MERGE_KEYED ? f->merge_key : NULL;
	const json_t *pv = json_object_getn(patch, name, nlen);
	json_t *cur = json_object_getn(orig, name, nlen);
	json_t *merged = NULL, *want = NULL, *server = NULL;
	int rc;

	if (!json_is_array(order))
		return bad(s, E_BAD_REQUEST, "$setElementOrder must be a list:", name, nlen);
	if (pv && !json_is_array(pv))
		return bad(s, E_BAD_REQUEST, "field with a $setElementOrder list must be a list:", name, nlen);
	if (!json_is_array(cur))
		cur = NULL;
	if (!cur && !pv)
		return 0;
	rc = check_order(s, pv, order, mk, name, nlen);
	if (rc)
		return rc;
	server = build_index(cur, mk);
	want = build_index(order, mk);
	if (pv)
		rc = merge_list(s, cur, pv, f, name, nlen, &merged);
	else
		merged = json_incref(cur);
	if (!rc)
		json_object_setn_new(orig, name, nlen, order_items(merged, mk, want, server));
	json_decref(merged);
	json_decref(want);
	json_decref(server);
	return rc;
}

static int set_orders(struct smp *s, json_t *orig, const json_t *patch, const struct pb_msg *node)
{
	const char *k;
	size_t klen, plen = strlen(SET_ORDER);
	json_t *v;

	json_object_keylen_foreach((json_t *)patch, k, klen, v) {
		if (!has_prefix(k, klen, SET_ORDER))
			continue;
		const char *name = k + plen;
		size_t nlen = klen - plen;
		int rc = set_order_one(s, orig, patch, name, nlen, v, smp_field_lookup(node, name, nlen));
		if (rc)
			return rc;
	}
	return 0;
}

static int delete_from_lists(struct smp *s, json_t *orig, const json_t *patch)
{
	const char *k;
	size_t klen, plen = strlen(DELETE_PRIM), i;
	json_t *v, *e;
	struct buf key = BUF_INIT;

	json_object_keylen_foreach((json_t *)patch, k, klen, v) {
		if (!has_prefix(k, klen, DELETE_PRIM))
			continue;
		if (!json_is_array(v)) {
			buf_release(&key);
			return bad(s, E_BAD_REQUEST, "$deleteFromPrimitiveList must be a list:", k + plen, klen - plen);
		}
		json_t *cur = json_object_getn(orig, k + plen, klen - plen);
		if (!json_is_array(cur))
			continue;
		json_t *gone = build_index(v, NULL), *kept = json_array();
		json_array_foreach(cur, i, e) {
			elem_key(e, NULL, &key);
			if (!json_object_getn(gone, key.ptr, key.len))
				json_array_append(kept, e);
		}
		json_object_setn_new(orig, k + plen, klen - plen, kept);
		json_decref(gone);
	}
	buf_release(&key);
	return 0;
}

/* ---- maps ------------------------------------------------------------------------------ */

static int merge_field(struct smp *s, json_t *orig, const char *k, size_t klen, const json_t *v,
		       const struct pb_msg *node)
{
	const struct pb_field *f = smp_field_lookup(node, k, klen);
	json_t *cur = json_object_getn(orig, k, klen), *nv = NULL;
	int rc = 0;

	if (json_is_null(v)) {
		json_object_deln(orig, k, klen);
		return 0;
	}
	if (json_is_object(v))
		rc = merge_map(s, json_is_object(cur) ? json_incref(cur) : NULL, v, smp_sub(f), &nv);
	else if (json_is_array(v))
		rc = merge_list(s, json_is_array(cur) ? cur : NULL, v, f, k, klen, &nv);
	else
		nv = json_deep_copy(v);
	if (rc)
		return rc;
	if (nv)
		json_object_setn_new(orig, k, klen, nv);
	else
		json_object_deln(orig, k, klen);
	return 0;
}

static int merge_fields(struct smp *s, json_t *orig, const json_t *patch, const struct pb_msg *node)
{
	const char *k;
	size_t klen;
	json_t *v;

	json_object_keylen_foreach((json_t *)patch, k, klen, v) {
		if (is_directive_key(k, klen) || prefixed(patch, SET_ORDER, k, klen))
			continue;
		int rc = merge_field(s, orig, k, klen, v, node);
		if (rc)
			return rc;
	}
	return 0;
}

/* Merges patch (an object) into orig (stolen; NULL or a non-object count as absent). *ret is
 * the new value, or NULL when "$patch": "delete" removes it. */
static int merge_map(struct smp *s, json_t *orig, const json_t *patch, const struct pb_msg *node,
		     json_t **ret)
{
	const json_t *d = json_object_get(patch, DIRECTIVE);
	const char *dv = json_string_value(d);
	int rc = 0;

	*ret = NULL;
	if (++s->depth > PATCH_MAX_DEPTH) {
		rc = bad(s, E_BAD_REQUEST, "patch is nested too deeply", NULL, 0);
		goto out;
	}
	if (d && (!dv || (strcmp(dv, "delete") && strcmp(dv, "replace") && strcmp(dv, "merge")))) {
		rc = bad(s, E_BAD_REQUEST, "unknown $patch directive in a map", NULL, 0);
		goto out;
	}
	if (dv && !strcmp(dv, "delete"))
		goto out;
	if (!json_is_object(orig) || (dv && !strcmp(dv, "replace"))) {
		json_decref(orig);
		orig = json_object();
	}
	rc = retain_keys(s, orig, patch);
	if (!rc)
		rc = set_orders(s, orig, patch, node);
	if (!rc)
		rc = merge_fields(s, orig, patch, node);
	if (!rc)
		rc = delete_from_lists(s, orig, patch);
	if (!rc) {
		*ret = orig;
		orig = NULL;
	}
out:
	s->depth--;
	json_decref(orig);
	return rc;
}

int strategic_merge_patch_apply(const json_t *doc, const json_t *patch, const char *kind, json_t **ret,
				struct buf *err)
{
	struct smp s = { err, 0 };
	json_t *out = NULL;
	int rc;

	if (!json_is_object(patch)) {
		buf_adds(err, "strategic merge patch must be a JSON object");
		return E_BAD_REQUEST;
	}
	rc = merge_map(&s, json_is_object(doc) ? json_deep_copy(doc) : NULL, patch, smp_schema_for_kind(kind), &out);
	if (rc)
		return rc;
	*ret = out ? out : json_object();
	return 0;
}
