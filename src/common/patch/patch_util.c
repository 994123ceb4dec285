#include "patch_internal.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

static bool numbers_equal(const json_t *a, const json_t *b)
{
	if (json_is_integer(a) && json_is_integer(b))
		return json_integer_value(a) == json_integer_value(b);
	return json_number_value(a) == json_number_value(b);
}

static bool objects_equal(const json_t *a, const json_t *b)
{
	const char *k;
	size_t klen;
	json_t *v;

	if (json_object_size(a) != json_object_size(b))
		return false;
	json_object_keylen_foreach((json_t *)a, k, klen, v) {
		json_t *w = json_object_getn(b, k, klen);
		if (!w || !patch_json_equal(v, w))
			return false;
	}
	return true;
}

bool patch_json_equal(const json_t *a, const json_t *b)
{
	if (!a || !b)
		return a == b;
	if (json_is_number(a) && json_is_number(b))
		return numbers_equal(a, b);
	if (json_typeof(a) != json_typeof(b))
		return false;
	switch (json_typeof(a)) {
	case JSON_STRING:
		return json_string_length(a) == json_string_length(b) &&
		       memcmp(json_string_value(a), json_string_value(b), json_string_length(a)) == 0;
	case JSON_ARRAY:
		if (json_array_size(a) != json_array_size(b))
			return false;
		for (size_t i = 0; i < json_array_size(a); i++)
			if (!patch_json_equal(json_array_get(a, i), json_array_get(b, i)))
				return false;
		return true;
	case JSON_OBJECT:
		return objects_equal(a, b);
	default:
		return true; /* true, false, null */
	}
}

void patch_canonical_key(const json_t *v, struct buf *out)
{
	double d;

	switch (json_typeof(v)) {
	case JSON_STRING:
		buf_add_json_str(out, json_string_value(v), json_string_length(v));
		return;
	case JSON_INTEGER:
		buf_addf(out, "%lld", (long long)json_integer_value(v));
		return;
	case JSON_REAL:
		d = json_real_value(v);
		if (floor(d) == d && fabs(d) < 9.0e18)
			buf_addf(out, "%lld", (long long)d);
		else
			buf_addf(out, "%.17g", d);
		return;
	case JSON_TRUE:
		buf_adds(out, "true");
		return;
	case JSON_FALSE:
		buf_adds(out, "false");
		return;
	case JSON_NULL:
		buf_adds(out, "null");
		return;
	default: {
		char *s = json_dumps(v, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
		if (s)
			buf_adds(out, s);
		free(s);
		return;
	}
	}
}

void patch_quote(struct buf *out, const char *s, size_t len)
{
	size_t cut = len;

	if (cut > 200) {
		cut = 200;
		/* never split a UTF-8 sequence: the message ends up in a JSON Status */
		while (cut > 0 && ((unsigned char)s[cut] & 0xC0) == 0x80)
			cut--;
	}
	buf_add_json_str(out, s, cut);
	if (cut < len)
		buf_adds(out, "...");
}
