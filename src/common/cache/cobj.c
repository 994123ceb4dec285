/* Cached objects. One allocation holds the struct, the field-value pointers, the key, tenant,
 * namespace, name, the field values and the compact JSON, so a cached pod costs its JSON plus a
 * little over a hundred bytes, plus its labels object. The parsed tree is freed right away (the
 * tree of a recent write may be kept a while by the cache: trees.c). */
#include <stdlib.h>
#include <string.h>
#include "ursa/buf.h"
#include "ursa/jsonutil.h"
#include "ursa/revision.h"
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

/* False when the key is too short for its scope (then the object's own metadata names it). */
static bool ids_of_key(const struct api_resource *r, const char *key, struct idparts *ret)
{
	size_t end = strlen(key);
	struct sv empty = { "", 0 };
	ret->tenant = ret->ns = empty;
	ret->name = last_segment(key, &end);
	if (r->scope == SCOPE_NAMESPACE)
		ret->ns = last_segment(key, &end);
	if (r->scope != SCOPE_CLUSTER)
		ret->tenant = last_segment(key, &end);
	return end != 0 && ret->name.len != 0;
}

static void ids_from_key(const struct api_resource *r, const char *key, const json_t *meta, struct idparts *ret)
{
	if (!ids_of_key(r, key, ret)) {
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

static size_t nfields_of(const struct api_resource *r)
{
	const struct api_strategy *st = r->strategy;
	return st && st->fields ? st->nfields : 0;
}

/* vals: the nfields_of(r) field values, each NUL-terminated (released here). */
static struct cobj *assemble(const struct api_resource *r, const char *key, struct buf *vals,
			     const struct idparts *id, struct buf *json)
{
	size_t nf = nfields_of(r);
	size_t klen = strlen(key);
	size_t sz = sizeof(struct cobj) + nf * sizeof(char *) + klen + 1 + id->tenant.len + 1 + id->ns.len + 1 +
		    id->name.len + 1 + vals->len + json->len + 1;
	struct cobj *o = xmalloc(sz);
	char *p = (char *)(o + 1) + nf * sizeof(char *);
	o->fields = nf ? (char **)(o + 1) : NULL;
	o->nfields = nf;
	o->key = put_str(&p, key, klen);
	o->tenant = put_str(&p, id->tenant.ptr, id->tenant.len);
	o->ns = put_str(&p, id->ns.ptr, id->ns.len);
	o->name = put_str(&p, id->name.ptr, id->name.len);
	const char *v = buf_cstr(vals);
	for (size_t i = 0; i < nf; i++) {
		size_t n = strlen(v);
		o->fields[i] = put_str(&p, v, n);
		v += n + 1;
	}
	o->json_len = json->len;
	o->json = put_str(&p, buf_cstr(json), json->len);
	buf_release(vals);
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
	buf_addf(out, "%s\"resourceVersion\":\"%lld\"", value[close - 1] == '{' ? "" : ",", (long long)rv_show(rv));
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
	buf_addf(out, "%lld", (long long)rv_show(rv));
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
	const struct api_strategy *st = r->strategy;
	size_t nf = nfields_of(r);
	struct buf vals = BUF_INIT; /* field values, each NUL-terminated */
	for (size_t i = 0; i < nf; i++) {
		size_t before = vals.len;
		json_path_scalar(root, st->fields[i].path, &vals);
		if (vals.len == before && st->fields[i].absent)
			buf_adds(&vals, st->fields[i].absent);
		buf_addch(&vals, '\0');
	}
	struct cobj *o = assemble(r, key, &vals, &id, json);
	atomic_init(&o->refs, 1);
	o->rv = mod_rev;
	o->tree = NULL; /* wcache's trees.c may give it one once stored */
	o->plain = false;
	o->tprev = o->tnext = NULL;
	json_t *labels = json_object_get(meta, "labels");
	o->labels = json_is_object(labels) ? json_incref(labels) : NULL;
	return o;
}

/* The fast path ----------------------------------------------------------------------------
 * A list of 100,000 pods at a restart spent most of its time in jansson building trees that
 * cobj_new threw away at once. The text our API servers store is compact JSON of a plain form,
 * so cobj_new first checks the text with a validator that accepts only what jansson (with
 * JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, depth 64) would parse to the same values and that
 * needs no decoding: no whitespace, strings of ASCII without \u escapes or control characters,
 * keys without escapes, at most FAST_MAX_KEYS distinct keys per object, integers that fit long
 * long, reals without exponent. It then takes the field values, the labels (the one small
 * part parsed with jansson) and the splice straight from the text. Anything else, or a value
 * that would need decoding (a field string with an escape), returns NULL: cobj_new then takes
 * the jansson path, which gives the same object. fuzz_cache_cobj checks both agree. */
#define FAST_MAX_DEPTH 32
#define FAST_MAX_KEYS 32

static bool v_value(struct scan *c, int depth);

static bool v_string(struct scan *c, bool *ret_esc)
{
	bool esc = false;
	for (c->i++; c->i < c->n; c->i++) {
		unsigned char ch = (unsigned char)c->s[c->i];
		if (ch == '"') {
			c->i++;
			if (ret_esc)
				*ret_esc = esc;
			return true;
		}
		if (ch < 0x20 || ch >= 0x80)
			return false;
		if (ch == '\\') {
			if (++c->i >= c->n || !strchr("\"\\/bfnrt", c->s[c->i]) || c->s[c->i] == '\0')
				return false;
			esc = true;
		}
	}
	return false;
}

static bool is_digit(char ch)
{
	return ch >= '0' && ch <= '9';
}

static bool v_number(struct scan *c)
{
	size_t from = c->i;
	if (c->s[c->i] == '-')
		c->i++;
	size_t d0 = c->i;
	if (c->i < c->n && c->s[c->i] == '0')
		c->i++;
	else
		while (c->i < c->n && is_digit(c->s[c->i]))
			c->i++;
	size_t digits = c->i - d0;
	if (digits == 0)
		return false;
	if (c->i < c->n && c->s[c->i] == '.') {
		size_t f0 = ++c->i;
		while (c->i < c->n && is_digit(c->s[c->i]))
			c->i++;
		if (c->i == f0 || c->i - from > 40)
			return false;
	} else if (digits > 19 || (digits == 19 && memcmp(c->s + d0, d0 > from ? "9223372036854775808" :
							 "9223372036854775807", 19) > 0)) {
		return false; /* jansson refuses what overflows long long (a hashKey has 19 digits) */
	}
	return c->i >= c->n || (c->s[c->i] != 'e' && c->s[c->i] != 'E');
}

static bool v_lit(struct scan *c, const char *lit, size_t n)
{
	if (c->n - c->i < n || memcmp(c->s + c->i, lit, n) != 0)
		return false;
	c->i += n;
	return true;
}

static bool v_object(struct scan *c, int depth)
{
	struct sv keys[FAST_MAX_KEYS];
	size_t nk = 0;
	c->i++;
	if (c->i < c->n && c->s[c->i] == '}') {
		c->i++;
		return true;
	}
	for (;;) {
		size_t k = c->i;
		bool esc;
		if (k >= c->n || c->s[k] != '"' || !v_string(c, &esc) || esc || nk == FAST_MAX_KEYS)
			return false;
		struct sv key = { c->s + k + 1, c->i - k - 2 };
		for (size_t j = 0; j < nk; j++)
			if (keys[j].len == key.len && memcmp(keys[j].ptr, key.ptr, key.len) == 0)
				return false; /* a duplicate: jansson refuses it */
		keys[nk++] = key;
		if (c->i >= c->n || c->s[c->i] != ':')
			return false;
		c->i++;
		if (!v_value(c, depth))
			return false;
		if (c->i >= c->n)
			return false;
		if (c->s[c->i] == '}') {
			c->i++;
			return true;
		}
		if (c->s[c->i++] != ',')
			return false;
	}
}

static bool v_array(struct scan *c, int depth)
{
	c->i++;
	if (c->i < c->n && c->s[c->i] == ']') {
		c->i++;
		return true;
	}
	for (;;) {
		if (!v_value(c, depth) || c->i >= c->n)
			return false;
		if (c->s[c->i] == ']') {
			c->i++;
			return true;
		}
		if (c->s[c->i++] != ',')
			return false;
	}
}

static bool v_value(struct scan *c, int depth)
{
	if (c->i >= c->n)
		return false;
	switch (c->s[c->i]) {
	case '"':
		return v_string(c, NULL);
	case '{':
		return depth < FAST_MAX_DEPTH && v_object(c, depth + 1);
	case '[':
		return depth < FAST_MAX_DEPTH && v_array(c, depth + 1);
	case 't':
		return v_lit(c, "true", 4);
	case 'f':
		return v_lit(c, "false", 5);
	case 'n':
		return v_lit(c, "null", 4);
	default:
		return (c->s[c->i] == '-' || is_digit(c->s[c->i])) && v_number(c);
	}
}

/* The offset of the value of member key (no escapes) of the object at `at` in validated text,
 * or 0 when absent. */
static size_t member(const char *s, size_t n, size_t at, const char *key, size_t klen)
{
	struct scan c = { s, n, at + 1 };
	if (c.i < n && s[c.i] == '}')
		return 0;
	while (c.i < n) {
		size_t k = c.i;
		skip_string(&c);
		bool hit = c.i - k - 2 == klen && memcmp(s + k + 1, key, klen) == 0;
		c.i++; /* ':' */
		if (hit)
			return c.i;
		skip_value(&c);
		if (c.i >= n || s[c.i] == '}')
			return 0;
		c.i++; /* ',' */
	}
	return 0;
}

/* The offset of the value at a dotted path from the top object (as json_path), or 0 (absent, or
 * the empty path: no scalar either way). */
static size_t path_value(const char *s, size_t n, const char *dotted)
{
	size_t at = 0;
	for (const char *p = dotted; *p;) {
		const char *dot = strchr(p, '.');
		size_t k = dot ? (size_t)(dot - p) : strlen(p);
		if (k >= 256 || s[at] != '{' || !(at = member(s, n, at, p, k)))
			return 0;
		p += k + (dot ? 1 : 0);
	}
	return at;
}

/* Appends the value at `at` as json_path_scalar renders it; false when it cannot be taken from
 * the text as it is (a string with an escape). */
static bool text_scalar(const char *s, size_t n, size_t at, struct buf *out)
{
	struct scan c = { s, n, at };
	switch (s[at]) {
	case '"': {
		skip_string(&c);
		if (memchr(s + at + 1, '\\', c.i - at - 2))
			return false;
		buf_add(out, s + at + 1, c.i - at - 2);
		return true;
	}
	case 't':
		buf_adds(out, "true");
		return true;
	case 'f':
		buf_adds(out, "false");
		return true;
	case '-':
	case '0': case '1': case '2': case '3': case '4': case '5': case '6': case '7': case '8': case '9': {
		skip_value(&c);
		if (memchr(s + at, '.', c.i - at))
			return true; /* a real: no scalar */
		char num[24];
		memcpy(num, s + at, c.i - at);
		num[c.i - at] = '\0';
		buf_addf(out, "%lld", strtoll(num, NULL, 10));
		return true;
	}
	default:
		return true; /* null, an object or an array: no scalar */
	}
}

struct cobj *cobj_new_fast(const struct api_resource *r, const char *key, const char *value, size_t len,
			   int64_t mod_rev)
{
	struct scan c = { value, len, 0 };
	if (len < 2 || value[0] != '{' || !v_object(&c, 1) || c.i != len)
		return NULL;
	size_t meta = member(value, len, 0, "metadata", 8);
	if (!meta || value[meta] != '{' || member(value, len, meta, "resourceVersion", 15))
		return NULL;
	struct idparts id;
	if (!ids_of_key(r, key, &id))
		return NULL; /* ids from the object's metadata: the parse path */
	const struct api_strategy *st = r->strategy;
	size_t nf = nfields_of(r);
	struct buf vals = BUF_INIT, json = BUF_INIT;
	for (size_t i = 0; i < nf; i++) {
		size_t before = vals.len, at = path_value(value, len, st->fields[i].path);
		if (at && !text_scalar(value, len, at, &vals)) {
			buf_release(&vals);
			return NULL;
		}
		if (vals.len == before && st->fields[i].absent)
			buf_adds(&vals, st->fields[i].absent);
		buf_addch(&vals, '\0');
	}
	json_t *labels = NULL;
	size_t la = member(value, len, meta, "labels", 6);
	if (la && value[la] == '{') {
		struct scan lc = { value, len, la };
		skip_value(&lc);
		labels = json_loadb(value + la, lc.i - la, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, NULL);
		if (!json_is_object(labels)) {
			json_decref(labels);
			buf_release(&vals);
			return NULL;
		}
	}
	if (!cobj_splice_rv(value, len, mod_rev, &json)) {
		json_decref(labels);
		buf_release(&vals);
		buf_release(&json);
		return NULL;
	}
	struct cobj *o = assemble(r, key, &vals, &id, &json);
	buf_release(&json);
	atomic_init(&o->refs, 1);
	o->rv = mod_rev;
	o->tree = NULL;
	o->tprev = o->tnext = NULL;
	o->labels = labels;
	o->plain = true;
	return o;
}

int cobj_text_paths(const struct cobj *o, const char *const *paths, size_t n, struct sv *spans)
{
	struct scan c = { o->json, o->json_len, 0 };
	/* the fast path checked the text it was made from, and the splice keeps it plain */
	if (!o->plain && (o->json_len < 2 || o->json[0] != '{' || !v_object(&c, 1) || c.i != o->json_len))
		return -1;
	for (size_t i = 0; i < n; i++) {
		size_t at = path_value(o->json, o->json_len, paths[i]);
		spans[i] = (struct sv){ NULL, 0 };
		if (!at)
			continue;
		struct scan v = { o->json, o->json_len, at };
		skip_value(&v);
		spans[i] = (struct sv){ o->json + at, v.i - at };
	}
	return 0;
}

struct cobj *cobj_new(const struct api_resource *r, const char *key, const char *value, size_t len, int64_t mod_rev)
{
	struct cobj *o = cobj_new_fast(r, key, value, len, mod_rev);
	if (o)
		return o;
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
