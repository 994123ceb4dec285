/* A fast path for parsing request bodies into jansson trees: the plain JSON API clients send
 * (ASCII strings with simple escapes, integers, objects and arrays) is parsed here in one pass
 * without jansson's lexer (about 180 instructions a byte on a pod: the largest part of a create's
 * CPU after the change in docs/benchmarks.md). Anything else, valid or not, makes it give up
 * (NULL) and the caller parses with jansson as before: non-ASCII bytes, \u escapes, reals and
 * integers of 18 digits or more, duplicate keys, nesting deeper than max_depth, a top level
 * that is not an object, any syntax error. So every tree it returns is the tree
 * json_loadb(JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL) gives for the same text (key order, types
 * and values): the fuzz target fuzz_apiserver_jsondec checks exactly that. Errors and their
 * messages stay jansson's. */
#include "internal.h"
#include "ursa/buf.h"
#include <string.h>

struct dec {
	const char *s;
	size_t n, i;
	int max_depth;
	struct buf tmp; /* unescaped strings */
};

static void skip_ws(struct dec *d)
{
	while (d->i < d->n && (d->s[d->i] == ' ' || d->s[d->i] == '\n' || d->s[d->i] == '\r' || d->s[d->i] == '\t'))
		d->i++;
}

/* Bytes a string's fast scan stops at: the quote, the backslash, control characters and
 * everything above ASCII. */
static bool stop_byte(unsigned char c)
{
	return c == '"' || c == '\\' || c < 0x20 || c >= 0x80;
}

/* d->s[d->i] is the opening quote. On success, ret_p and ret_len give the string's bytes (in the
 * text, or in d->tmp when it had escapes). */
static bool dec_string(struct dec *d, const char **ret_p, size_t *ret_len)
{
	size_t start = ++d->i;
	while (d->i < d->n && !stop_byte((unsigned char)d->s[d->i]))
		d->i++;
	if (d->i >= d->n)
		return false;
	if (d->s[d->i] == '"') {
		*ret_p = d->s + start;
		*ret_len = d->i - start;
		d->i++;
		return true;
	}
	buf_reset(&d->tmp);
	buf_add(&d->tmp, d->s + start, d->i - start);
	while (d->i < d->n) {
		unsigned char c = (unsigned char)d->s[d->i];
		if (c == '"') {
			d->i++;
			*ret_p = d->tmp.ptr;
			*ret_len = d->tmp.len;
			return true;
		}
		if (c < 0x20 || c >= 0x80)
			return false;
		if (c != '\\') {
			buf_addch(&d->tmp, (char)c);
			d->i++;
			continue;
		}
		if (d->i + 1 >= d->n)
			return false;
		char e = d->s[d->i + 1], out;
		switch (e) {
		case '"': out = '"'; break;
		case '\\': out = '\\'; break;
		case '/': out = '/'; break;
		case 'b': out = '\b'; break;
		case 'f': out = '\f'; break;
		case 'n': out = '\n'; break;
		case 'r': out = '\r'; break;
		case 't': out = '\t'; break;
		default: return false; /* \u and anything else: jansson's */
		}
		buf_addch(&d->tmp, out);
		d->i += 2;
	}
	return false;
}

/* An integer of at most 17 digits, as jansson reads it: -?(0|[1-9][0-9]*), not followed by a
 * fraction or an exponent (those are reals: given up). */
static json_t *dec_number(struct dec *d)
{
	size_t i = d->i;
	bool neg = false;
	if (d->s[i] == '-') {
		neg = true;
		i++;
	}
	size_t first = i;
	long long v = 0;
	while (i < d->n && d->s[i] >= '0' && d->s[i] <= '9') {
		v = v * 10 + (d->s[i] - '0');
		i++;
		if (i - first > 17)
			return NULL;
	}
	if (i == first || (d->s[first] == '0' && i - first > 1))
		return NULL;
	if (i < d->n && (d->s[i] == '.' || d->s[i] == 'e' || d->s[i] == 'E'))
		return NULL;
	d->i = i;
	return json_integer(neg ? -v : v);
}

static bool literal(struct dec *d, const char *word, size_t len)
{
	if (d->n - d->i < len || memcmp(d->s + d->i, word, len) != 0)
		return false;
	d->i += len;
	return true;
}

static json_t *dec_value(struct dec *d, int depth);

static json_t *dec_object(struct dec *d, int depth)
{
	json_t *o = json_object();
	d->i++; /* '{' */
	skip_ws(d);
	if (d->i < d->n && d->s[d->i] == '}') {
		d->i++;
		return o;
	}
	for (;;) {
		const char *k;
		size_t klen;
		skip_ws(d);
		if (d->i >= d->n || d->s[d->i] != '"' || !dec_string(d, &k, &klen))
			goto fail;
		if (k == d->tmp.ptr)
			goto fail; /* an escaped key (rare) would be overwritten by the value's strings */
		skip_ws(d);
		if (d->i >= d->n || d->s[d->i] != ':')
			goto fail;
		d->i++;
		json_t *v = dec_value(d, depth + 1);
		size_t before = json_object_size(o);
		if (!v || json_object_setn_new_nocheck(o, k, klen, v) < 0 || json_object_size(o) == before)
			goto fail; /* a duplicate key: jansson's error, or fieldval's own handling */
		skip_ws(d);
		if (d->i >= d->n)
			goto fail;
		if (d->s[d->i] == '}') {
			d->i++;
			return o;
		}
		if (d->s[d->i] != ',')
			goto fail;
		d->i++;
	}
fail:
	json_decref(o);
	return NULL;
}

static json_t *dec_array(struct dec *d, int depth)
{
	json_t *a = json_array();
	d->i++; /* '[' */
	skip_ws(d);
	if (d->i < d->n && d->s[d->i] == ']') {
		d->i++;
		return a;
	}
	for (;;) {
		json_t *v = dec_value(d, depth + 1);
		if (!v || json_array_append_new(a, v) < 0)
			goto fail;
		skip_ws(d);
		if (d->i >= d->n)
			goto fail;
		if (d->s[d->i] == ']') {
			d->i++;
			return a;
		}
		if (d->s[d->i] != ',')
			goto fail;
		d->i++;
	}
fail:
	json_decref(a);
	return NULL;
}

static json_t *dec_value(struct dec *d, int depth)
{
	if (depth > d->max_depth)
		return NULL;
	skip_ws(d);
	if (d->i >= d->n)
		return NULL;
	char c = d->s[d->i];
	const char *p;
	size_t len;
	switch (c) {
	case '{': return dec_object(d, depth);
	case '[': return dec_array(d, depth);
	case '"': return dec_string(d, &p, &len) ? json_stringn_nocheck(p, len) : NULL;
	case 't': return literal(d, "true", 4) ? json_true() : NULL;
	case 'f': return literal(d, "false", 5) ? json_false() : NULL;
	case 'n': return literal(d, "null", 4) ? json_null() : NULL;
	default: return (c == '-' || (c >= '0' && c <= '9')) ? dec_number(d) : NULL;
	}
}

json_t *json_parse_fast(const char *s, size_t n, int max_depth)
{
	struct dec d = { .s = s, .n = n, .max_depth = max_depth };
	json_t *j = NULL;
	skip_ws(&d);
	if (d.i < n && s[d.i] == '{')
		j = dec_value(&d, 1);
	if (j) {
		skip_ws(&d);
		if (d.i != n) {
			json_decref(j);
			j = NULL;
		}
	}
	buf_release(&d.tmp);
	return j;
}
