/* Compact JSON text of a jansson tree, byte for byte what json_dump_buf (jansson's compact dump
 * in insertion order) writes, at a fraction of its cost: jansson 2.14 checks every container for
 * loops through a hash table keyed by the container's address printed with snprintf, and hands
 * the text over in a callback per token. Every create and update encodes its object once (a pod:
 * about 2.3 KB, ~25 µs with jansson, profiled in docs/benchmarks.md). Reals, rare in objects,
 * are left to jansson, whose number format is its own. */
#include "internal.h"
#include "ursa/jsonutil.h"
#include <string.h>

#define ENC_MAX_DEPTH 2048 /* trees come from parses bounded far below; a bound on recursion all the same */

/* Bytes that need an escape inside a JSON string, as jansson escapes them: '"', '\\' and the
 * control characters; everything else (UTF-8 included, 0x7f included) is copied. */
static const char esc[256] = {
	['\b'] = 'b', ['\f'] = 'f', ['\n'] = 'n', ['\r'] = 'r', ['\t'] = 't', ['"'] = '"', ['\\'] = '\\',
	[0] = 'u', [1] = 'u', [2] = 'u', [3] = 'u', [4] = 'u', [5] = 'u', [6] = 'u', [7] = 'u', [11] = 'u',
	[14] = 'u', [15] = 'u', [16] = 'u', [17] = 'u', [18] = 'u', [19] = 'u', [20] = 'u', [21] = 'u', [22] = 'u',
	[23] = 'u', [24] = 'u', [25] = 'u', [26] = 'u', [27] = 'u', [28] = 'u', [29] = 'u', [30] = 'u', [31] = 'u',
};

static void enc_string(const char *s, size_t n, struct buf *out)
{
	static const char hex[] = "0123456789ABCDEF";
	buf_addch(out, '"');
	size_t from = 0;
	for (size_t i = 0; i < n; i++) {
		char e = esc[(unsigned char)s[i]];
		if (!e)
			continue;
		buf_add(out, s + from, i - from);
		if (e == 'u') {
			char u[6] = { '\\', 'u', '0', '0', hex[((unsigned char)s[i]) >> 4], hex[s[i] & 15] };
			buf_add(out, u, sizeof(u));
		} else {
			char two[2] = { '\\', e };
			buf_add(out, two, 2);
		}
		from = i + 1;
	}
	buf_add(out, s + from, n - from);
	buf_addch(out, '"');
}

static void enc_integer(json_int_t v, struct buf *out)
{
	char tmp[24], *p = tmp + sizeof(tmp);
	unsigned long long u = v < 0 ? 0ULL - (unsigned long long)v : (unsigned long long)v;
	do {
		*--p = (char)('0' + u % 10);
		u /= 10;
	} while (u);
	if (v < 0)
		*--p = '-';
	buf_add(out, p, (size_t)(tmp + sizeof(tmp) - p));
}

static int enc(const json_t *j, struct buf *out, int depth)
{
	if (depth > ENC_MAX_DEPTH)
		return -1;
	switch (json_typeof(j)) {
	case JSON_OBJECT: {
		const char *k;
		size_t klen;
		json_t *v;
		bool first = true;
		buf_addch(out, '{');
		json_object_keylen_foreach((json_t *)j, k, klen, v) {
			if (!first)
				buf_addch(out, ',');
			first = false;
			enc_string(k, klen, out);
			buf_addch(out, ':');
			if (enc(v, out, depth + 1) < 0)
				return -1;
		}
		buf_addch(out, '}');
		return 0;
	}
	case JSON_ARRAY: {
		size_t n = json_array_size(j);
		buf_addch(out, '[');
		for (size_t i = 0; i < n; i++) {
			if (i)
				buf_addch(out, ',');
			if (enc(json_array_get(j, i), out, depth + 1) < 0)
				return -1;
		}
		buf_addch(out, ']');
		return 0;
	}
	case JSON_STRING:
		enc_string(json_string_value(j), json_string_length(j), out);
		return 0;
	case JSON_INTEGER:
		enc_integer(json_integer_value(j), out);
		return 0;
	case JSON_TRUE:
		buf_add(out, "true", 4);
		return 0;
	case JSON_FALSE:
		buf_add(out, "false", 5);
		return 0;
	case JSON_NULL:
		buf_add(out, "null", 4);
		return 0;
	case JSON_REAL:
		json_dump_buf(j, out);
		return 0;
	}
	return -1;
}

void store_dump(const json_t *j, struct buf *out)
{
	size_t start = out->len;
	if (j && enc(j, out, 0) == 0)
		return;
	out->len = start; /* not a tree this encoder knows: jansson's own dump */
	if (out->ptr)
		out->ptr[start] = '\0';
	json_dump_buf(j, out);
}
