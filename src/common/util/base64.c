/* Base64 encoding and decoding, both alphabets; see ursa/base64.h. */
#include <stdbool.h>
#include "ursa/base64.h"

static const char std_alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
static const char url_alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

size_t base64_encoded_len(size_t len, unsigned flags)
{
	if (!(flags & BASE64_NOPAD))
		return (len + 2) / 3 * 4;
	return len / 3 * 4 + (len % 3 ? len % 3 + 1 : 0);
}

void base64_encode(struct buf *out, const void *data, size_t len, unsigned flags)
{
	const unsigned char *d = data;
	const char *tab = flags & BASE64_URL ? url_alphabet : std_alphabet;
	bool pad = !(flags & BASE64_NOPAD);

	buf_grow(out, base64_encoded_len(len, flags));
	char *p = out->ptr + out->len;
	size_t i = 0;
	for (; i + 3 <= len; i += 3) {
		unsigned v = (unsigned)d[i] << 16 | (unsigned)d[i + 1] << 8 | d[i + 2];
		*p++ = tab[v >> 18];
		*p++ = tab[(v >> 12) & 63];
		*p++ = tab[(v >> 6) & 63];
		*p++ = tab[v & 63];
	}
	if (len - i == 1) {
		unsigned v = (unsigned)d[i] << 16;
		*p++ = tab[v >> 18];
		*p++ = tab[(v >> 12) & 63];
		if (pad) {
			*p++ = '=';
			*p++ = '=';
		}
	} else if (len - i == 2) {
		unsigned v = (unsigned)d[i] << 16 | (unsigned)d[i + 1] << 8;
		*p++ = tab[v >> 18];
		*p++ = tab[(v >> 12) & 63];
		*p++ = tab[(v >> 6) & 63];
		if (pad)
			*p++ = '=';
	}
	out->len = (size_t)(p - out->ptr);
	*p = '\0';
}

static int sextet(unsigned char c, bool url)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == (url ? '-' : '+'))
		return 62;
	if (c == (url ? '_' : '/'))
		return 63;
	return -1;
}

/* The length of s without its padding, or -1 when the padding or the length is not what flags
 * allow. At most two '=' are taken as padding; a third is then an invalid character. */
static long long unpadded_len(const char *s, size_t len, unsigned flags)
{
	size_t pad = 0;
	while (pad < 2 && pad < len && s[len - 1 - pad] == '=')
		pad++;
	if (pad) {
		if ((flags & BASE64_NOPAD) || len % 4)
			return -1;
	} else if (!(flags & (BASE64_NOPAD | BASE64_PAD_OPTIONAL)) && len % 4) {
		return -1;
	}
	size_t n = len - pad;
	if (n % 4 == 1)
		return -1;
	return (long long)n;
}

/* Validates s and, when out is not NULL, writes its decoding there (base64_decoded_len bytes).
 * The decoded length or -1. */
static long long run(const char *s, size_t len, unsigned flags, unsigned char *out)
{
	long long n = unpadded_len(s, len, flags);
	if (n < 0)
		return -1;
	bool url = flags & BASE64_URL;
	size_t o = 0;
	unsigned acc = 0;
	int bits = 0;
	for (size_t i = 0; i < (size_t)n; i++) {
		int v = sextet((unsigned char)s[i], url);
		if (v < 0)
			return -1;
		acc = (acc << 6) | (unsigned)v;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			if (out)
				out[o] = (unsigned char)(acc >> bits);
			o++;
			acc &= (1u << bits) - 1;
		}
	}
	if (acc && (flags & BASE64_CANONICAL))
		return -1;
	return (long long)o;
}

long long base64_decoded_len(const char *s, size_t len, unsigned flags)
{
	return run(s, len, flags, NULL);
}

int base64_decode(struct buf *out, const char *s, size_t len, unsigned flags)
{
	long long n = run(s, len, flags, NULL);
	buf_grow(out, n > 0 ? (size_t)n : 0);
	out->ptr[out->len] = '\0';
	if (n < 0)
		return -1;
	run(s, len, flags, (unsigned char *)out->ptr + out->len);
	out->len += (size_t)n;
	out->ptr[out->len] = '\0';
	return 0;
}
