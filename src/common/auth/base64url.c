/* base64url without padding (RFC 4648 section 5), as JWT compact serialization uses it. */
#include "auth/auth_internal.h"

static const char alphabet[] =
	"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

void b64url_encode(struct buf *out, const void *data, size_t len)
{
	const unsigned char *p = data;
	buf_grow(out, (len + 2) / 3 * 4);
	out->ptr[out->len] = '\0'; /* buf_grow does not terminate; the input may be empty */
	size_t i = 0;
	for (; i + 3 <= len; i += 3) {
		unsigned v = (unsigned)p[i] << 16 | (unsigned)p[i + 1] << 8 | p[i + 2];
		char q[4] = { alphabet[v >> 18], alphabet[(v >> 12) & 63], alphabet[(v >> 6) & 63],
			      alphabet[v & 63] };
		buf_add(out, q, 4);
	}
	if (len - i == 1) {
		unsigned v = (unsigned)p[i] << 16;
		char q[2] = { alphabet[v >> 18], alphabet[(v >> 12) & 63] };
		buf_add(out, q, 2);
	} else if (len - i == 2) {
		unsigned v = (unsigned)p[i] << 16 | (unsigned)p[i + 1] << 8;
		char q[3] = { alphabet[v >> 18], alphabet[(v >> 12) & 63], alphabet[(v >> 6) & 63] };
		buf_add(out, q, 3);
	}
}

static int sextet(char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '-')
		return 62;
	if (c == '_')
		return 63;
	return -1;
}

/* Rejects non-canonical encodings (leftover bits set), so each token has one spelling. */
int b64url_decode(struct sv in, struct buf *out)
{
	if (in.len % 4 == 1)
		return -1;
	buf_grow(out, in.len / 4 * 3 + 2);
	out->ptr[out->len] = '\0';
	unsigned acc = 0;
	int bits = 0;
	for (size_t i = 0; i < in.len; i++) {
		int s = sextet(in.ptr[i]);
		if (s < 0)
			return -1;
		acc = (acc << 6) | (unsigned)s;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			buf_addch(out, (char)((acc >> bits) & 0xff));
			acc &= (1u << bits) - 1;
		}
	}
	return acc == 0 ? 0 : -1;
}
