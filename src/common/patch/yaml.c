/* YAML -> JSON for application/apply-patch+yaml bodies, on libyaml's event API.
 *
 * Scalar typing mimics sigs.k8s.io/yaml (go-yaml v2, YAML 1.1) where it matters for manifests:
 *  - quoted, literal and folded scalars are strings; so is anything tagged !!str or "!";
 *  - plain "", ~, null, Null, NULL are null; true/True/TRUE and false/False/FALSE booleans;
 *  - plain integers: decimal, 0x hex, 0o or leading-0 octal (YAML 1.1: mode 0644 is 420),
 *    0b binary, optional sign, '_' separators ignored; integers beyond int64 become reals;
 *  - plain floats: [-+]?(.d+|d+(.d*)?)([eE][-+]?d+)?; integral values come out as JSON
 *    integers, as Go's JSON encoder prints float64 1.0 as 1; .inf and .nan stay strings
 *    because JSON cannot carry them;
 *  - yes/no/on/off/y/n stay strings (YAML 1.2 reading; go-yaml v2 would make them booleans:
 *    the string is the value a manifest author meant in every field Kubernetes types as string);
 *  - timestamps stay the strings written (go-yaml would normalise them to RFC 3339);
 *  - explicit !!int, !!float, !!bool, !!null tags are honoured and fail if the text does not
 *    fit; other tags (!!binary, !!timestamp, local tags) give strings;
 *  - mapping keys are always strings (the scalar's text); duplicate keys, non-scalar keys and
 *    keys holding NUL are rejected; the merge key "<<" is an ordinary key.
 * Aliases are expanded into copies; the nodes they add are capped (billion laughs). */
#include "ursa/patch.h"
#include "ursa/errors.h"
#include "ursa/xalloc.h"
#include "patch_internal.h"
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#define YAML_MAX_ALIAS_NODES 100000

struct frame {
	json_t *node;    /* object or array under construction */
	char *anchor;    /* owned, NULL if none */
	char *key;       /* pending mapping key, owned */
	size_t klen;
	bool have_key;
	size_t weight;   /* nodes inside, aliases expanded */
	int depth;       /* deepest child */
};

struct yd {
	yaml_parser_t p;
	struct frame *st;
	size_t n, alloc;
	int max_depth;
	json_t *anchors; /* name -> [value, weight, depth] */
	size_t alias_nodes;
	json_t *root;
	int docs;
	struct buf *err;
};

/* Ends a message already started in err with its position. */
static int at_mark(struct yd *y, const yaml_mark_t *m)
{
	if (m)
		buf_addf(y->err, " at line %zu column %zu", m->line + 1, m->column + 1);
	return E_BAD_REQUEST;
}

static int yfail(struct yd *y, const char *msg, const yaml_mark_t *m)
{
	buf_addf(y->err, "YAML: %s", msg);
	return at_mark(y, m);
}

static struct frame *top(struct yd *y)
{
	return y->n ? &y->st[y->n - 1] : NULL;
}

/* True when the next node of the innermost mapping is a key. */
static bool expecting_key(struct yd *y)
{
	struct frame *f = top(y);
	return f && json_is_object(f->node) && !f->have_key;
}

/* Puts v (stolen) where the parser is: document root, sequence item or mapping value. */
static int attach(struct yd *y, json_t *v, size_t weight, int depth, const yaml_mark_t *m)
{
	struct frame *f = top(y);

	if (!f) {
		json_decref(y->root);
		y->root = v;
		return 0;
	}
	f->weight += weight;
	if (depth > f->depth)
		f->depth = depth;
	if (json_is_array(f->node)) {
		json_array_append_new(f->node, v);
		return 0;
	}
	int rc = 0;
	if (json_object_getn(f->node, f->key, f->klen)) {
		json_decref(v);
		buf_adds(y->err, "YAML: duplicate mapping key ");
		patch_quote(y->err, f->key, f->klen);
		rc = at_mark(y, m);
	} else if (json_object_setn_new(f->node, f->key, f->klen, v)) {
		rc = yfail(y, "mapping key is not valid UTF-8", m);
	}
	free(f->key);
	f->key = NULL;
	f->have_key = false;
	return rc;
}

static void remember(struct yd *y, const yaml_char_t *anchor, json_t *v, size_t weight, int depth)
{
	if (anchor)
		json_object_set_new(y->anchors, (const char *)anchor,
				    json_pack("[O,I,i]", v, (json_int_t)weight, depth));
}

/* ---- scalars --------------------------------------------------------------------------- */

static bool text_in(const char *s, const char *const *set)
{
	for (; *set; set++)
		if (!strcmp(s, *set))
			return true;
	return false;
}

static const char *const nulls[] = { "", "~", "null", "Null", "NULL", NULL };
static const char *const trues[] = { "true", "True", "TRUE", NULL };
static const char *const falses[] = { "false", "False", "FALSE", NULL };

static int digit_value(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return 99;
}

/* Go's strconv.ParseInt(s, 0, 64) rules: 0 and *ret set, -1 not an integer, 1 too large. */
static int parse_int(const char *s, long long *ret)
{
	bool neg = false;
	unsigned base = 10;
	unsigned long long v = 0, lim;

	if (*s == '+' || *s == '-')
		neg = *s++ == '-';
	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
		base = 16, s += 2;
	else if (s[0] == '0' && (s[1] == 'o' || s[1] == 'O'))
		base = 8, s += 2;
	else if (s[0] == '0' && (s[1] == 'b' || s[1] == 'B'))
		base = 2, s += 2;
	else if (s[0] == '0' && s[1])
		base = 8, s += 1;
	if (!*s)
		return -1;
	lim = neg ? (unsigned long long)LLONG_MAX + 1 : (unsigned long long)LLONG_MAX;
	bool big = false;
	for (; *s; s++) {
		unsigned d = (unsigned)digit_value(*s);
		if (d >= base)
			return -1;
		if (v > (lim - d) / base)
			big = true;
		else
			v = v * base + d;
	}
	if (big)
		return 1;
	*ret = neg ? (long long)(0 - v) : (long long)v;
	return 0;
}

/* [-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)? */
static bool float_syntax(const char *s)
{
	size_t n = 0;

	if (*s == '+' || *s == '-')
		s++;
	if (*s == '.') {
		for (s++; *s >= '0' && *s <= '9'; s++)
			n++;
		if (!n)
			return false;
	} else {
		for (; *s >= '0' && *s <= '9'; s++)
			n++;
		if (!n)
			return false;
		if (*s == '.')
			for (s++; *s >= '0' && *s <= '9'; s++)
				;
	}
	if (*s == 'e' || *s == 'E') {
		s++;
		if (*s == '+' || *s == '-')
			s++;
		n = 0;
		for (; *s >= '0' && *s <= '9'; s++)
			n++;
		if (!n)
			return false;
	}
	return *s == '\0';
}

/* A number from plain text s (underscores already removed), or NULL. */
static json_t *number_of(const char *s, bool want_real)
{
	long long iv;
	double d;

	if (parse_int(s, &iv) == 0)
		return want_real ? json_real((double)iv) : json_integer(iv);
	if (!float_syntax(s))
		return NULL;
	d = strtod(s, NULL);
	if (!isfinite(d))
		return NULL;
	if (!want_real && floor(d) == d && fabs(d) < 9007199254740992.0)
		return json_integer((json_int_t)d);
	return json_real(d);
}

/* The text of a scalar with '_' removed, for number parsing. */
static void strip_underscores(const char *s, size_t len, struct buf *out)
{
	buf_add(out, "", 0);
	for (size_t i = 0; i < len; i++)
		if (s[i] != '_')
			buf_addch(out, s[i]);
}

static bool looks_numeric(const char *s, size_t len)
{
	return len && memchr(s, '\0', len) == NULL && strchr("+-0123456789.", s[0]);
}

static json_t *resolve_plain(const char *s, size_t len)
{
	struct buf b = BUF_INIT;
	json_t *v = NULL;

	if (memchr(s, '\0', len) == NULL) {
		if (text_in(s, nulls))
			return json_null();
		if (text_in(s, trues))
			return json_true();
		if (text_in(s, falses))
			return json_false();
	}
	if (looks_numeric(s, len)) {
		strip_underscores(s, len, &b);
		v = number_of(b.ptr, false);
		buf_release(&b);
	}
	return v ? v : json_stringn(s, len);
}

static bool tag_is(const char *tag, const char *name)
{
	static const char prefix[] = "tag:yaml.org,2002:";
	return !strncmp(tag, prefix, sizeof(prefix) - 1) && !strcmp(tag + sizeof(prefix) - 1, name);
}

/* A scalar with an explicit tag; NULL if the text does not fit it. */
static json_t *resolve_tagged(const char *tag, const char *s, size_t len)
{
	struct buf b = BUF_INIT;
	json_t *v = NULL;
	static const char *const yes[] = { "true", "True", "TRUE", "yes", "Yes", "YES", "on", "On", "ON", NULL };
	static const char *const no[] = { "false", "False", "FALSE", "no", "No", "NO", "off", "Off", "OFF", NULL };

	if (tag_is(tag, "null"))
		return json_null();
	if (memchr(s, '\0', len))
		return NULL;
	if (tag_is(tag, "bool"))
		return text_in(s, yes) ? json_true() : text_in(s, no) ? json_false() : NULL;
	strip_underscores(s, len, &b);
	if (tag_is(tag, "int")) {
		long long iv;
		if (parse_int(b.ptr, &iv) == 0)
			v = json_integer(iv);
	} else if (looks_numeric(s, len)) {
		v = number_of(b.ptr, true);
	}
	buf_release(&b);
	return v;
}

static int on_scalar(struct yd *y, const yaml_event_t *ev)
{
	const char *s = (const char *)ev->data.scalar.value;
	size_t len = ev->data.scalar.length;
	const char *tag = (const char *)ev->data.scalar.tag;
	json_t *v;

	if (expecting_key(y)) {
		struct frame *f = top(y);
		/* jansson cannot parse such keys back, so JSON bodies cannot have them either */
		if (memchr(s, '\0', len))
			return yfail(y, "mapping key contains a NUL character", &ev->start_mark);
		f->key = xmalloc(len + 1);
		memcpy(f->key, s, len);
		f->key[len] = '\0';
		f->klen = len;
		f->have_key = true;
		v = json_stringn(s, len);
		if (!v)
			return yfail(y, "mapping key is not valid UTF-8", &ev->start_mark);
		remember(y, ev->data.scalar.anchor, v, 1, 0);
		json_decref(v);
		return 0;
	}
	if (tag && (tag_is(tag, "null") || tag_is(tag, "bool") || tag_is(tag, "int") || tag_is(tag, "float"))) {
		v = resolve_tagged(tag, s, len);
		if (!v)
			return yfail(y, "scalar does not match its tag", &ev->start_mark);
	} else if (tag || ev->data.scalar.style != YAML_PLAIN_SCALAR_STYLE) {
		v = json_stringn(s, len);
	} else {
		v = resolve_plain(s, len);
	}
	if (!v)
		return yfail(y, "string is not valid UTF-8", &ev->start_mark);
	remember(y, ev->data.scalar.anchor, v, 1, 0);
	return attach(y, v, 1, 0, &ev->start_mark);
}

/* ---- containers and aliases ------------------------------------------------------------ */

static int on_start(struct yd *y, const yaml_event_t *ev, bool mapping)
{
	const yaml_char_t *anchor = mapping ? ev->data.mapping_start.anchor : ev->data.sequence_start.anchor;

	if (expecting_key(y))
		return yfail(y, "mapping keys must be scalars", &ev->start_mark);
	if (y->n + 1 > (size_t)(y->max_depth > 0 ? y->max_depth : 0)) {
		buf_addf(y->err, "YAML: nesting deeper than %d levels", y->max_depth);
		return at_mark(y, &ev->start_mark);
	}
	if (y->n == y->alloc) {
		y->alloc = y->alloc ? y->alloc * 2 : 16;
		y->st = xrealloc(y->st, y->alloc * sizeof(*y->st));
	}
	y->st[y->n++] = (struct frame){
		.node = mapping ? json_object() : json_array(),
		.anchor = anchor ? xstrdup((const char *)anchor) : NULL,
	};
	return 0;
}

static int on_end(struct yd *y, const yaml_event_t *ev)
{
	struct frame f = y->st[--y->n];

	free(f.key);
	if (f.anchor)
		remember(y, (const yaml_char_t *)f.anchor, f.node, f.weight + 1, f.depth + 1);
	free(f.anchor);
	return attach(y, f.node, f.weight + 1, f.depth + 1, &ev->start_mark);
}

static int on_alias(struct yd *y, const yaml_event_t *ev)
{
	json_t *a = json_object_get(y->anchors, (const char *)ev->data.alias.anchor);
	size_t weight;
	int depth;

	if (!a)
		return yfail(y, "alias to an unknown anchor", &ev->start_mark);
	if (expecting_key(y))
		return yfail(y, "aliases cannot be mapping keys", &ev->start_mark);
	weight = (size_t)json_integer_value(json_array_get(a, 1));
	depth = (int)json_integer_value(json_array_get(a, 2));
	y->alias_nodes += weight;
	if (y->alias_nodes > YAML_MAX_ALIAS_NODES)
		return yfail(y, "aliases expand to too many nodes", &ev->start_mark);
	if ((long)y->n + depth > (long)y->max_depth) {
		buf_addf(y->err, "YAML: nesting deeper than %d levels", y->max_depth);
		return at_mark(y, &ev->start_mark);
	}
	return attach(y, json_deep_copy(json_array_get(a, 0)), weight, depth, &ev->start_mark);
}

/* ---- driver ---------------------------------------------------------------------------- */

static int on_event(struct yd *y, const yaml_event_t *ev, bool *ret_done)
{
	switch (ev->type) {
	case YAML_DOCUMENT_START_EVENT:
		if (++y->docs > 1)
			return yfail(y, "expected a single document, found several", &ev->start_mark);
		return 0;
	case YAML_STREAM_END_EVENT:
		*ret_done = true;
		return 0;
	case YAML_SCALAR_EVENT:
		return on_scalar(y, ev);
	case YAML_SEQUENCE_START_EVENT:
		return on_start(y, ev, false);
	case YAML_MAPPING_START_EVENT:
		return on_start(y, ev, true);
	case YAML_SEQUENCE_END_EVENT:
	case YAML_MAPPING_END_EVENT:
		return on_end(y, ev);
	case YAML_ALIAS_EVENT:
		return on_alias(y, ev);
	default:
		return 0;
	}
}

static int parse_error(struct yd *y)
{
	buf_addf(y->err, "YAML: %s", y->p.problem ? y->p.problem : "syntax error");
	if (y->p.context)
		buf_addf(y->err, " %s", y->p.context);
	buf_addf(y->err, " at line %zu column %zu", y->p.problem_mark.line + 1, y->p.problem_mark.column + 1);
	return E_BAD_REQUEST;
}

int yaml_to_json(const char *data, size_t len, int max_depth, json_t **ret, struct buf *err)
{
	struct yd y = { .max_depth = max_depth, .err = err };
	yaml_event_t ev;
	bool done = false;
	int rc = 0;

	if (!yaml_parser_initialize(&y.p)) {
		buf_adds(err, "YAML: parser initialisation failed");
		return E_INTERNAL;
	}
	yaml_parser_set_input_string(&y.p, (const unsigned char *)data, len);
	y.anchors = json_object();
	while (!done && !rc) {
		if (!yaml_parser_parse(&y.p, &ev)) {
			rc = parse_error(&y);
			break;
		}
		rc = on_event(&y, &ev, &done);
		yaml_event_delete(&ev);
	}
	if (!rc && !y.root)
		rc = yfail(&y, "no document", NULL);
	if (!rc) {
		*ret = y.root;
		y.root = NULL;
	}
	for (size_t i = 0; i < y.n; i++) {
		json_decref(y.st[i].node);
		free(y.st[i].anchor);
		free(y.st[i].key);
	}
	free(y.st);
	json_decref(y.root);
	json_decref(y.anchors);
	yaml_parser_delete(&y.p);
	return rc;
}
