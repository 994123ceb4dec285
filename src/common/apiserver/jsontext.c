/* JSON text surgery without parsing: see jsontext.h. */
#include "jsontext.h"
#include "ursa/buf.h"
#include "ursa/xalloc.h"
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define BAD ((size_t)-1)
#define MAX_SKIP_DEPTH 512
#define MAX_PROJECT_DEPTH 64 /* deeper values are copied whole */
#define MAX_PATHS 32         /* paths alive at one level; more are copied whole */

static size_t skip_ws(const char *s, size_t len, size_t i)
{
	while (i < len && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r'))
		i++;
	return i;
}

/* s[i] is the opening quote; returns the offset past the closing one. */
static size_t skip_string(const char *s, size_t len, size_t i)
{
	for (i++; i < len;) {
		const char *q = memchr(s + i, '"', len - i);
		if (!q)
			return BAD;
		size_t at = (size_t)(q - s), bs = 0;
		while (at - bs > i && s[at - bs - 1] == '\\')
			bs++;
		if (bs % 2 == 0)
			return at + 1;
		i = at + 1;
	}
	return BAD;
}

/* The bytes a container skip stops at. */
static const unsigned char special[256] = {
	['"'] = 1, ['{'] = 2, ['['] = 2, ['}'] = 3, [']'] = 3,
};

size_t json_text_skip(const char *s, size_t len, size_t i)
{
	i = skip_ws(s, len, i);
	if (i >= len)
		return BAD;
	if (s[i] == '"')
		return skip_string(s, len, i);
	if (s[i] == '{' || s[i] == '[') {
		int depth = 0;
		while (i < len) {
			unsigned char k = special[(unsigned char)s[i]];
			if (!k) {
				i++;
				continue;
			}
			if (k == 1) {
				i = skip_string(s, len, i);
				if (i == BAD)
					return BAD;
				continue;
			}
			if (k == 2) {
				if (++depth > MAX_SKIP_DEPTH)
					return BAD;
			} else if (--depth == 0) {
				return i + 1;
			}
			i++;
		}
		return BAD;
	}
	if (s[i] == '}' || s[i] == ']' || s[i] == ',' || s[i] == ':')
		return BAD;
	size_t start = i;
	while (i < len && !strchr(",}] \t\r\n:", s[i]))
		i++;
	return i > start ? i : BAD;
}

/* Walks the members of the object at s[i]: calls fn for each with the key's raw text (between
 * the quotes) and the value's span. Returns the offset past the object, or BAD. fn returns false
 * to stop early (the walk then returns the offset of the value's end). */
typedef bool (*member_fn)(void *ud, const char *key, size_t klen, size_t voff, size_t vend);

static size_t walk_object(const char *s, size_t len, size_t i, member_fn fn, void *ud)
{
	i = skip_ws(s, len, i);
	if (i >= len || s[i] != '{')
		return BAD;
	i = skip_ws(s, len, i + 1);
	if (i < len && s[i] == '}')
		return i + 1;
	for (;;) {
		if (i >= len || s[i] != '"')
			return BAD;
		size_t kend = skip_string(s, len, i);
		if (kend == BAD)
			return BAD;
		size_t colon = skip_ws(s, len, kend);
		if (colon >= len || s[colon] != ':')
			return BAD;
		size_t voff = skip_ws(s, len, colon + 1);
		size_t vend = json_text_skip(s, len, voff);
		if (vend == BAD)
			return BAD;
		if (!fn(ud, s + i + 1, kend - i - 2, voff, vend))
			return vend;
		i = skip_ws(s, len, vend);
		if (i < len && s[i] == ',') {
			i = skip_ws(s, len, i + 1);
			continue;
		}
		if (i < len && s[i] == '}')
			return i + 1;
		return BAD;
	}
}

static bool key_is(const char *key, size_t klen, const char *want, size_t wlen)
{
	return klen == wlen && memcmp(key, want, klen) == 0;
}

struct find_ctx {
	const char *key;
	size_t off, len;
	bool found;
};

static bool find_cb(void *ud, const char *key, size_t klen, size_t voff, size_t vend)
{
	struct find_ctx *f = ud;
	if (!key_is(key, klen, f->key, strlen(f->key)))
		return true;
	f->off = voff;
	f->len = vend - voff;
	f->found = true;
	return false;
}

int json_text_member(const char *s, size_t len, const char *key, size_t *ret_off, size_t *ret_len)
{
	struct find_ctx f = { .key = key };
	if (walk_object(s, len, 0, find_cb, &f) == BAD || !f.found)
		return -1;
	*ret_off = f.off;
	*ret_len = f.len;
	return 0;
}

struct drop_ctx {
	const char *s, *key;
	struct buf *out;
	bool first;
};

static bool drop_cb(void *ud, const char *key, size_t klen, size_t voff, size_t vend)
{
	struct drop_ctx *d = ud;
	if (key_is(key, klen, d->key, strlen(d->key)))
		return true;
	if (!d->first)
		buf_addch(d->out, ',');
	d->first = false;
	buf_add(d->out, key - 1, klen + 2);
	buf_addch(d->out, ':');
	buf_add(d->out, d->s + voff, vend - voff);
	return true;
}

int json_text_drop_member(const char *s, size_t len, const char *key, struct buf *out)
{
	size_t mark = out->len;
	struct drop_ctx d = { .s = s, .key = key, .out = out, .first = true };
	buf_addch(out, '{');
	if (walk_object(s, len, 0, drop_cb, &d) == BAD) {
		out->len = mark;
		if (out->ptr)
			out->ptr[mark] = '\0';
		return -1;
	}
	buf_addch(out, '}');
	return 0;
}

/* ---- projection ---- */

struct paths {
	const char *p[MAX_PATHS]; /* the rest of each path below the current level */
	size_t seg[MAX_PATHS];    /* the length of its first segment */
	size_t n;
	bool whole;               /* a path ends here: keep everything */
	bool overflow;
};

static void paths_add(struct paths *ps, const char *p)
{
	if (ps->n == MAX_PATHS) {
		ps->overflow = true;
		return;
	}
	const char *dot = strchr(p, '.');
	ps->p[ps->n] = p;
	ps->seg[ps->n++] = dot ? (size_t)(dot - p) : strlen(p);
}

/* Paths whose first segment matches key (klen bytes; NULL for an array element) go to child. */
static void paths_step(const struct paths *cur, const char *key, size_t klen, struct paths *child)
{
	child->n = 0;
	child->whole = child->overflow = false;
	for (size_t i = 0; i < cur->n; i++) {
		const char *p = cur->p[i];
		size_t slen = cur->seg[i];
		if (!(slen == 1 && p[0] == '*') && (!key || !key_is(key, klen, p, slen)))
			continue;
		if (!p[slen])
			child->whole = true;
		else
			paths_add(child, p + slen + 1);
	}
}

static size_t project(const char *s, size_t i, size_t end, const struct paths *ps, int depth, struct buf *out);

struct proj_ctx {
	const char *s;
	size_t len;
	const struct paths *ps;
	int depth;
	struct buf *out;
	bool first, bad;
};

static bool proj_cb(void *ud, const char *key, size_t klen, size_t voff, size_t vend)
{
	struct proj_ctx *c = ud;
	struct paths child;
	paths_step(c->ps, key, klen, &child);
	if (!child.whole && !child.overflow && child.n == 0)
		return true;
	if (!c->first)
		buf_addch(c->out, ',');
	c->first = false;
	buf_add(c->out, key - 1, klen + 2);
	buf_addch(c->out, ':');
	if (child.whole || child.overflow || (c->s[voff] != '{' && c->s[voff] != '[')) {
		buf_add(c->out, c->s + voff, vend - voff);
		return true;
	}
	if (project(c->s, voff, vend, &child, c->depth + 1, c->out) == BAD) {
		c->bad = true;
		return false;
	}
	return true;
}

/* Appends the projection of the value s[i, end) (i at its first byte); returns end or BAD. */
static size_t project(const char *s, size_t i, size_t end, const struct paths *ps, int depth, struct buf *out)
{
	if (ps->whole || ps->overflow || depth > MAX_PROJECT_DEPTH || (s[i] != '{' && s[i] != '[')) {
		buf_add(out, s + i, end - i);
		return end;
	}
	if (s[i] == '{') {
		struct proj_ctx c = { .s = s, .len = end, .ps = ps, .depth = depth, .out = out, .first = true };
		buf_addch(out, '{');
		if (walk_object(s, end, i, proj_cb, &c) == BAD || c.bad)
			return BAD;
		buf_addch(out, '}');
		return end;
	}
	struct paths child;
	paths_step(ps, NULL, 0, &child);
	buf_addch(out, '[');
	size_t j = skip_ws(s, end, i + 1);
	bool first = true;
	while (j < end && s[j] != ']') {
		if (!first)
			buf_addch(out, ',');
		first = false;
		size_t e = json_text_skip(s, end, j);
		if (e == BAD)
			return BAD;
		if (child.whole || child.overflow || child.n)
			e = project(s, j, e, &child, depth + 1, out);
		else if (s[j] == '{')
			buf_adds(out, "{}");
		else if (s[j] == '[')
			buf_adds(out, "[]");
		else
			buf_add(out, s + j, e - j);
		if (e == BAD)
			return BAD;
		j = skip_ws(s, end, e);
		if (j < end && s[j] == ',')
			j = skip_ws(s, end, j + 1);
		else if (j >= end || s[j] != ']')
			return BAD;
	}
	buf_addch(out, ']');
	return end;
}

int json_text_project(const char *s, size_t len, const char *const *keep, struct buf *out)
{
	struct paths ps = { .n = 0 };
	for (size_t i = 0; keep && keep[i]; i++)
		paths_add(&ps, keep[i]);
	size_t i = skip_ws(s, len, 0), end = json_text_skip(s, len, i);
	if (end == BAD)
		return -1;
	return project(s, i, end, &ps, 0, out) == BAD ? -1 : 0;
}

/* ---- parsing a projection straight into jansson values ---- */

static long hex4(const char *p)
{
	long v = 0;
	for (int k = 0; k < 4; k++) {
		int h = hex_digit(p[k]);
		if (h < 0)
			return -1;
		v = v * 16 + h;
	}
	return v;
}

static void add_utf8(struct buf *b, unsigned long cp)
{
	char u[4];
	size_t n;
	if (cp < 0x80) {
		u[0] = (char)cp;
		n = 1;
	} else if (cp < 0x800) {
		u[0] = (char)(0xC0 | (cp >> 6));
		u[1] = (char)(0x80 | (cp & 0x3F));
		n = 2;
	} else if (cp < 0x10000) {
		u[0] = (char)(0xE0 | (cp >> 12));
		u[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
		u[2] = (char)(0x80 | (cp & 0x3F));
		n = 3;
	} else {
		u[0] = (char)(0xF0 | (cp >> 18));
		u[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
		u[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
		u[3] = (char)(0x80 | (cp & 0x3F));
		n = 4;
	}
	buf_add(b, u, n);
}

/* Decodes the string literal s[i, end) (quotes included) into tmp; -1 when an escape is bad or
 * decodes to NUL (jansson refuses those too). */
static int unescape(const char *s, size_t i, size_t end, struct buf *tmp)
{
	buf_reset(tmp);
	for (size_t k = i + 1; k < end - 1; k++) {
		if (s[k] != '\\') {
			size_t run = k;
			while (run < end - 1 && s[run] != '\\')
				run++;
			buf_add(tmp, s + k, run - k);
			k = run - 1;
			continue;
		}
		if (++k >= end - 1)
			return -1;
		char c = s[k];
		const char *simple = strchr("\"\\/bfnrt", c);
		if (simple && c) {
			buf_addch(tmp, "\"\\/\b\f\n\r\t"[simple - "\"\\/bfnrt"]);
			continue;
		}
		if (c != 'u' || k + 4 >= end)
			return -1;
		long cp = hex4(s + k + 1);
		k += 4;
		if (cp <= 0)
			return -1;
		if (cp >= 0xD800 && cp < 0xDC00) {
			if (k + 6 >= end || s[k + 1] != '\\' || s[k + 2] != 'u')
				return -1;
			long lo = hex4(s + k + 3);
			if (lo < 0xDC00 || lo > 0xDFFF)
				return -1;
			cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
			k += 6;
		} else if (cp >= 0xDC00 && cp <= 0xDFFF) {
			return -1;
		}
		add_utf8(tmp, (unsigned long)cp);
	}
	return 0;
}

struct loader {
	const char *s;
	struct buf tmp;
};

static json_t *load_scalar(struct loader *L, size_t i, size_t end)
{
	const char *s = L->s;
	if (s[i] == '"') {
		if (!memchr(s + i + 1, '\\', end - i - 2))
			return json_stringn_nocheck(s + i + 1, end - i - 2);
		if (unescape(s, i, end, &L->tmp) < 0)
			return NULL;
		return json_stringn_nocheck(L->tmp.ptr ? L->tmp.ptr : "", L->tmp.len);
	}
	size_t n = end - i;
	if (n == 4 && !memcmp(s + i, "true", 4))
		return json_true();
	if (n == 5 && !memcmp(s + i, "false", 5))
		return json_false();
	if (n == 4 && !memcmp(s + i, "null", 4))
		return json_null();
	char num[64];
	if (n >= sizeof(num) || !strchr("-0123456789", s[i]))
		return NULL;
	memcpy(num, s + i, n);
	num[n] = '\0';
	char *e;
	errno = 0;
	if (!strpbrk(num, ".eE")) {
		long long v = strtoll(num, &e, 10);
		return *e || errno ? NULL : json_integer(v);
	}
	double d = strtod(num, &e);
	return *e || errno ? NULL : json_real(d);
}

static json_t *load(struct loader *L, size_t i, size_t end, const struct paths *ps, int depth);

struct load_ctx {
	struct loader *L;
	const struct paths *ps;
	int depth;
	json_t *obj;
	bool bad;
};

static bool load_cb(void *ud, const char *key, size_t klen, size_t voff, size_t vend)
{
	struct load_ctx *c = ud;
	struct paths child;
	char *dkey = NULL;
	if (memchr(key, '\\', klen)) {
		if (unescape(key - 1, 0, klen + 2, &c->L->tmp) < 0) {
			c->bad = true;
			return false;
		}
		dkey = buf_detach(&c->L->tmp, &klen);
		if (!dkey)
			dkey = xstrdup("");
		key = dkey;
	}
	if (c->ps->whole || c->ps->overflow)
		child = *c->ps;
	else
		paths_step(c->ps, key, klen, &child);
	json_t *v = NULL;
	if (child.whole || child.overflow || child.n) {
		v = load(c->L, voff, vend, &child, c->depth + 1);
		if (!v)
			c->bad = true;
		else
			json_object_setn_new_nocheck(c->obj, key, klen, v);
	}
	free(dkey);
	return !c->bad;
}

/* The value s[i, end) projected to ps (everything when ps->whole), or NULL when malformed. */
static json_t *load(struct loader *L, size_t i, size_t end, const struct paths *ps, int depth)
{
	const char *s = L->s;
	if (depth > MAX_SKIP_DEPTH)
		return NULL;
	if (s[i] != '{' && s[i] != '[')
		return load_scalar(L, i, end);
	if (s[i] == '{') {
		struct load_ctx c = { .L = L, .ps = ps, .depth = depth, .obj = json_object() };
		if (walk_object(s, end, i, load_cb, &c) == BAD || c.bad) {
			json_decref(c.obj);
			return NULL;
		}
		return c.obj;
	}
	struct paths child;
	if (ps->whole || ps->overflow)
		child = *ps;
	else
		paths_step(ps, NULL, 0, &child);
	json_t *arr = json_array();
	size_t j = skip_ws(s, end, i + 1);
	while (j < end && s[j] != ']') {
		size_t e = json_text_skip(s, end, j);
		json_t *v = NULL;
		if (e != BAD) {
			if (child.whole || child.overflow || child.n)
				v = load(L, j, e, &child, depth + 1);
			else
				v = s[j] == '{' ? json_object() : s[j] == '[' ? json_array() : load_scalar(L, j, e);
		}
		if (!v) {
			json_decref(arr);
			return NULL;
		}
		json_array_append_new(arr, v);
		j = skip_ws(s, end, e);
		if (j < end && s[j] == ',')
			j = skip_ws(s, end, j + 1);
		else if (j >= end || s[j] != ']') {
			json_decref(arr);
			return NULL;
		}
	}
	return arr;
}

json_t *json_text_load(const char *s, size_t len, const char *const *keep)
{
	struct paths ps = { .n = 0, .whole = keep == NULL };
	for (size_t i = 0; keep && keep[i]; i++)
		paths_add(&ps, keep[i]);
	size_t i = skip_ws(s, len, 0), end = json_text_skip(s, len, i);
	if (end == BAD || skip_ws(s, len, end) != len)
		return NULL;
	struct loader L = { .s = s, .tmp = BUF_INIT };
	json_t *j = load(&L, i, end, &ps, 0);
	buf_release(&L.tmp);
	return j;
}
