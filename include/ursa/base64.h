/* Base64 (RFC 4648): the standard alphabet (section 4, '+' '/') and the URL- and filename-safe
 * one (section 5, '-' '_', as JWTs, composite resourceVersions and continue tokens use it).
 * The one codec of the codebase; callers pick alphabet and strictness with flags. */
#ifndef URSA_BASE64_H
#define URSA_BASE64_H
#include <stddef.h>
#include "ursa/buf.h"

/* The URL-safe alphabet instead of the standard one (both directions). */
#define BASE64_URL 0x1u
/* Encoding: no '=' padding. Decoding: '=' is invalid anywhere. */
#define BASE64_NOPAD 0x2u
/* Decoding: the input may be either exactly padded or not padded at all. Without this and
 * without BASE64_NOPAD, padding is required (length a multiple of 4, at most two '=' at the end). */
#define BASE64_PAD_OPTIONAL 0x4u
/* Decoding: the unused low bits of the last character must be zero, so that every value has
 * exactly one spelling (JWTs, tokens compared or cached by their text). */
#define BASE64_CANONICAL 0x8u

/* The length of the encoding of len bytes with these flags (BASE64_URL and BASE64_NOPAD). */
size_t base64_encoded_len(size_t len, unsigned flags);

/* Appends the encoding of data[0..len) to out (which is always allocated and NUL-terminated
 * afterwards, even for len 0). Flags: BASE64_URL, BASE64_NOPAD. */
void base64_encode(struct buf *out, const void *data, size_t len, unsigned flags);

/* The length that s[0..len) decodes to under flags, or -1 when it is not valid: a character
 * outside the alphabet (no whitespace is skipped), padding other than flags allow, an impossible
 * length, or (BASE64_CANONICAL) non-zero trailing bits. Reads exactly s[0..len). */
long long base64_decoded_len(const char *s, size_t len, unsigned flags);

/* Appends the decoding of s[0..len) to out (always allocated and NUL-terminated afterwards, even
 * when nothing was added). 0, or -1 (as base64_decoded_len) with out's contents unchanged. */
int base64_decode(struct buf *out, const char *s, size_t len, unsigned flags);

#endif
