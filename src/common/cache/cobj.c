/* Cached objects. One allocation holds the struct, the field-value pointers, the key, tenant,
 * namespace, name, the field values and the compact JSON, so a cached pod costs its JSON plus a
 * little over a hundred bytes, plus its labels object. The parsed tree is freed right away (the
 * tree of a recent write may be kept a while by the cache: trees.c). */
#include <stdlib.h>
#include <string.h>
#include "ursa/buf.h"
#include "ursa/jsonutil.h"
#include "ursa/wcache.h"
#include "ursa/xalloc.h"

#define COBJ_MAX_DEPTH 64 /* stored objects were validated on write; this only bounds recursion */

/* Tenant, namespace and name as the last segments of the key, by scope. */
struct idparts {
	struct sv tenant, ns, name;
};

static struct sv last_segment(const char *key, size_t *end)
{
	size_t e = *end, b = e;
	while (b > 0 && key[b - 1] != '/')
		b--;
	*end = b > 0 ? b - 1 : 0;
	return (struct sv){ key + b, e - b };
}

static void ids_from_key(const struct api_resource *r, const char *key, const json_t *meta, struct idparts *ret)
{
	size_t end = strlen(key);
	struct sv empty = { "", 0 };
	ret->tenant = ret->ns = empty;
	ret->name = last_segment(key, &end);
	if (r->scope == SCOPE_NAMESPACE)
		ret->ns = last_segment(key, &end);
	if (r->scope != SCOPE_CLUSTER)
		ret->tenant = last_segment(key, &end);
	/* a key too short for its scope: fall back to the object's own metadata */
	if (end == 0 || ret->name.len == 0) {
		ret->name = sv_from(json_str(meta, "name") ? json_str(meta, "name") : "");
		if (r->scope == SCOPE_NAMESPACE)
			ret->ns = sv_from(json_str(meta, "namespace") ? json_str(meta, "namespace") : "");
		if (r->scope != SCOPE_CLUSTER)
			ret->tenant = sv_from(json_str(meta, "tenant") ? json_str(meta, "tenant") : "");
	}
}

static char *put_str(char **p, const char *s, size_t n)
{
	char *d = *p;
	memcpy(d, s, n);
	d[n] = '\0';
	*p = d + n + 1;
	return d;
}

static struct cobj *assemble(const struct api_resource *r, const char *key, const json_t *root,
			     const struct idparts *id, struct buf *json)
{
	const struct api_strategy *st = r->strategy;
	size_t nf = st && st->fields ? st->nfields : 0;
	struct buf vals = BUF_INIT; /* field values, each NUL-terminated */
	for (size_t i = 0; i < nf; i++) {
		size_t before = vals.len;
		json_path_scalar(root, st->fields[i].path, &vals);
		if (vals.len == before && st->fields[i].absent)
			buf_adds(&vals, st->fields[i].absent);
		buf_addch(&vals, '\0');
	}
	size_t klen = strlen(key);
	size_t sz = sizeof(struct cobj) + nf * sizeof(char *) + klen + 1 + id->tenant.len + 1 + id->ns.len + 1 +
		    id->name.len + 1 + vals.len + json->len + 1;
	struct cobj *o = xmalloc(sz);
	char *p = (char *)(o + 1) + nf * sizeof(char *);
	o->fields = nf ? (char **)(o + 1) : NULL;
	o->nfields = nf;
	o->key = put_str(&p, key, klen);
	o->tenant = put_str(&p, id->tenant.ptr, id->tenant.len);
	o->ns = put_str(&p, id->ns.ptr, id->ns.len);
	o->name = put_str(&p, id->name.ptr, id->name.len);
	const char *v = buf_cstr(&vals);
	for (size_t i = 0; i < nf; i++) {
		size_t n = strlen(v);
		o->fields[i] = put_str(&p, v, n);
		v += n + 1;
	}
	o->json_len = json->len;
	o->json = put_str(&p, buf_cstr(json), json->len);
	buf_release(&vals);
	return o;
}

/* Splicing resourceVersion into the stored text ----------------------------------------------
 * Objects are stored as compact JSON without metadata.resourceVersion. Rather than dump the
 * parsed tree again with it added, the text is copied with `,"resourceVersion":"N"` put before
 * the '}' closing metadata: the same bytes the dump would give for the compact text our API
 * servers write. Any text this scanner does not expect (whitespace between tokens, metadata
 * twice or not an object, trailing bytes) takes the dump path instead. The text has already
 * been parsed, so only its structure is tracked here. */
struct scan {
	const char *s;
	size_t n, i;
};

static bool skip_string(struct scan *c)
{
	for (c->i++; c->i < c->n;) {
		/* to the next quote at memchr's pace (values run to hundreds of bytes), then count the
		 * backslashes before it: an odd number escapes it */
		const char *q = memchr(c->s + c->i, '"', c->n - c->i);
		if (!q)
			return false;
		size_t at = (size_t)(q - c->s), bs = 0;
		while (at - bs > c->i && c->s[at - bs - 1] == '\\')
			bs++;
		c->i = at + 1;
		if (bs % 2 == 0)
			return true;
	}
	return false;
}

static bool is_ws(char ch)
{
	return ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r';
}

static bool skip_value(struct scan *c)
{
	if (c->i >= c->n)
		return false;
	char ch = c->s[c->i];
	if (ch == '"')
		return skip_string(c);
	if (ch != '{' && ch != '[') {
		size_t from = c->i;
		while (c->i < c->n && !is_ws(c->s[c->i]) && c->s[c->i] != ',' && c->s[c->i] != '}' && c->s[c->i] != ']')
			c->i++;
		return c->i > from;
	}
	int depth = 0;
	char closer = ch == '{' ? '}' : ']';
	while (c->i < c->n) {
		ch = c->s[c->i];
		if (ch == '"') {
			if (!skip_string(c))
				return false;
			continue;
		}
		if (is_ws(ch))
			return false;
		c->i++;
		if (ch == '{' || ch == '[')
			depth++;
		else if ((ch == '}' || ch == ']') && --depth == 0)
			return ch == closer; /* text that never parsed may pair them wrongly */
	}
	return false;
}

size_t cobj_metadata_close(const char *s, size_t n)
{
	struct scan c = { s, n, 1 };
	size_t found = 0;
	/* jansson lets a raw NUL through between tokens; copied into the cache, it would cut the
	 * text short for a C string reader */
	if (n < 2 || s[0] != '{' || s[1] == '}' || memchr(s, '\0', n))
		return 0;
	for (;;) {
		size_t k = c.i;
		if (k >= n || s[k] != '"' || !skip_string(&c))
			return 0;
		bool is_meta = c.i - k == 10 && memcmp(s + k, "\"metadata\"", 10) == 0;
		if (c.i >= n || s[c.i] != ':')
			return 0;
		size_t v = ++c.i;
		if (!skip_value(&c))
			return 0;
		if (is_meta) {
			if (found || s[v] != '{')
				return 0;
			found = c.i - 1;
		}
		if (c.i >= n)
			return 0;
		if (s[c.i] == '}')
			return c.i + 1 == n ? found : 0;
		if (s[c.i] != ',')
			return 0;
		c.i++;
	}
}

bool cobj_splice_rv(const char *value, size_t len, int64_t rv, struct buf *out)
{
	size_t close = cobj_metadata_close(value, len);
	if (!close)
		return false;
	buf_grow(out, len + 48); /* one allocation: the text, the member, the revision */
	buf_add(out, value, close);
	buf_addf(out, "%s\"resourceVersion\":\"%lld\"", value[close - 1] == '{' ? "" : ",", (long long)rv);
	buf_add(out, value + close, len - close);
	return true;
}

/* The cached text of root (parsed from value) with resourceVersion rv, into out. root is only
 * changed on the dump path (value not splicable, or metadata already has a resourceVersion). */
static void cached_text(json_t *root, const char *value, size_t len, int64_t rv, struct buf *out)
{
	json_t *meta = json_object_get(root, "metadata");
	if (json_is_object(meta) && !json_object_get(meta, "resourceVersion") && cobj_splice_rv(value, len, rv, out))
		return;
	buf_addf(out, "%lld", (long long)rv);
	json_object_set_new(json_obj_child(root, "metadata"), "resourceVersion", json_stringn(out->ptr, out->len));
	buf_reset(out);
	json_dump_buf(root, out);
}

/* The cobj with text json, given root: the parsed value, or a tree equal to it (a write hint);
 * root has an object "metadata" and is only read. */
static struct cobj *build(const struct api_resource *r, const char *key, int64_t mod_rev, const json_t *root,
			  struct buf *json)
{
	json_t *meta = json_object_get(root, "metadata");
	struct idparts id;
	ids_from_key(r, key, meta, &id);
	struct cobj *o = assemble(r, key, root, &id, json);
	atomic_init(&o->refs, 1);
	o->rv = mod_rev;
	o->tree = NULL; /* wcache's trees.c may give it one once stored */
	o->tprev = o->tnext = NULL;
	json_t *labels = json_object_get(meta, "labels");
	o->labels = json_is_object(labels) ? json_incref(labels) : NULL;
	return o;
}

struct cobj *cobj_new(const struct api_resource *r, const char *key, const char *value, size_t len, int64_t mod_rev)
{
	struct cobj *o = NULL;
	struct buf json = BUF_INIT;
	json_t *root = json_parse_limited(value, len, COBJ_MAX_DEPTH, NULL);
	if (json_is_object(root)) {
		cached_text(root, value, len, mod_rev, &json);
		o = build(r, key, mod_rev, root, &json);
	}
	json_decref(root);
	buf_release(&json);
	return o;
}

struct cobj *cobj_new_tree(const struct api_resource *r, const char *key, const char *value, size_t len,
			   int64_t mod_rev, const json_t *tree)
{
	const json_t *meta = json_object_get(tree, "metadata");
	struct buf json = BUF_INIT;
	/* the tree is shared and must stay as it is: only the splice path may use it */
	if (!json_is_object(tree) || !json_is_object(meta) || json_object_get(meta, "resourceVersion") ||
	    !cobj_splice_rv(value, len, mod_rev, &json)) {
		buf_release(&json);
		return cobj_new(r, key, value, len, mod_rev);
	}
	struct cobj *o = build(r, key, mod_rev, tree, &json);
	buf_release(&json);
	return o;
}

struct cobj *cobj_ref(struct cobj *o)
{
	if (o)
		atomic_fetch_add_explicit(&o->refs, 1, memory_order_relaxed);
	return o;
}

void cobj_unref(struct cobj *o)
{
	if (!o || atomic_fetch_sub_explicit(&o->refs, 1, memory_order_acq_rel) != 1)
		return;
	json_decref(o->labels);
	json_decref(o->tree); /* NULL: the cache drops a tree before it lets go of the object */
	free(o);
}

void wevent_release(struct wevent *ev)
{
	if (!ev)
		return;
	cobj_unref(ev->obj);
	ev->obj = NULL;
}
