/* The JSONPath subset of additionalPrinterColumns, selectableFields and the scale subresource's
 * paths: ".a.b", "[n]" (n may be negative: from the end, as kubectl's JSONPath), "['key']" or
 * "[\"key\"]". No wildcards, filters, ranges or recursive descent: a path names one value. */
#include <stdlib.h>
#include <string.h>
#include "ursa/crd.h"

/* A path longer than this is refused: it is client input stored in the CRD and walked per row. */
#define JSONPATH_MAX 1024

enum step_kind { STEP_END, STEP_MEMBER, STEP_INDEX, STEP_BAD };

struct step {
	enum step_kind kind;
	const char *name; /* STEP_MEMBER: not NUL-terminated */
	size_t len;
	long long index;  /* STEP_INDEX */
};

static bool ident_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
}

/* Reads the step at *p and advances *p past it. */
static struct step next_step(const char **p)
{
	struct step st = { .kind = STEP_BAD };
	const char *s = *p;
	if (*s == 0) {
		st.kind = STEP_END;
		return st;
	}
	if (*s == '.') {
		s++;
		const char *b = s;
		while (ident_char(*s))
			s++;
		if (s == b)
			return st;
		st.kind = STEP_MEMBER;
		st.name = b;
		st.len = (size_t)(s - b);
		*p = s;
		return st;
	}
	if (*s != '[')
		return st;
	s++;
	if (*s == '\'' || *s == '"') {
		char q = *s++;
		const char *b = s;
		while (*s && *s != q)
			s++;
		if (*s != q || s == b || s[1] != ']')
			return st;
		st.kind = STEP_MEMBER;
		st.name = b;
		st.len = (size_t)(s - b);
		*p = s + 2;
		return st;
	}
	bool neg = false;
	if (*s == '-') {
		neg = true;
		s++;
	}
	const char *b = s;
	long long n = 0;
	while (*s >= '0' && *s <= '9') {
		if (s - b >= 9) /* an index past 10^9 names nothing an object can hold */
			return st;
		n = n * 10 + (*s - '0');
		s++;
	}
	if (s == b || *s != ']' || (neg && n == 0))
		return st;
	st.kind = STEP_INDEX;
	st.index = neg ? -n : n;
	*p = s + 1;
	return st;
}

bool crd_jsonpath_valid(const char *path)
{
	if (!path || path[0] != '.' || strlen(path) > JSONPATH_MAX)
		return false;
	const char *p = path;
	for (;;) {
		struct step st = next_step(&p);
		if (st.kind == STEP_END)
			return true;
		if (st.kind == STEP_BAD)
			return false;
	}
}

static const json_t *member(const json_t *obj, const char *name, size_t len)
{
	if (!json_is_object(obj))
		return NULL;
	/* keys may hold NULs in jansson; json_object_getn compares the exact bytes */
	return json_object_getn(obj, name, len);
}

const json_t *crd_jsonpath_get(const char *path, const json_t *obj)
{
	if (!crd_jsonpath_valid(path))
		return NULL;
	const char *p = path;
	const json_t *cur = obj;
	while (cur) {
		struct step st = next_step(&p);
		if (st.kind == STEP_END)
			return cur;
		if (st.kind == STEP_MEMBER) {
			cur = member(cur, st.name, st.len);
		} else if (st.kind == STEP_INDEX && json_is_array(cur)) {
			long long n = (long long)json_array_size(cur);
			long long i = st.index < 0 ? n + st.index : st.index;
			cur = i >= 0 && i < n ? json_array_get(cur, (size_t)i) : NULL;
		} else {
			return NULL;
		}
	}
	return NULL;
}

bool crd_jsonpath_eval(const char *path, const json_t *obj, struct buf *out)
{
	const json_t *v = crd_jsonpath_get(path, obj);
	if (!v || json_is_null(v))
		return false;
	if (json_is_string(v)) {
		buf_add(out, json_string_value(v), json_string_length(v));
	} else if (json_is_integer(v)) {
		buf_addf(out, "%lld", (long long)json_integer_value(v));
	} else if (json_is_true(v) || json_is_false(v)) {
		buf_adds(out, json_is_true(v) ? "true" : "false");
	} else {
		char *s = json_dumps(v, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_ENCODE_ANY);
		if (!s)
			return false;
		buf_adds(out, s);
		free(s);
	}
	return true;
}
