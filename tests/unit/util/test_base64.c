/* Unit tests for the base64 codec (ursa/base64.h): RFC 4648 section 10 vectors in both
 * alphabets, padding modes, canonical trailing bits, invalid input. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>
#include "ursa/base64.h"

static const char *rfc[][2] = {
	{ "", "" },		{ "f", "Zg==" },	 { "fo", "Zm8=" },	     { "foo", "Zm9v" },
	{ "foob", "Zm9vYg==" }, { "fooba", "Zm9vYmE=" }, { "foobar", "Zm9vYmFy" },
};

static char *enc(const void *d, size_t n, unsigned flags)
{
	struct buf b = BUF_INIT;
	base64_encode(&b, d, n, flags);
	return buf_detach(&b, NULL);
}

/* The decoding as a new string, or NULL when invalid. */
static char *dec(const char *s, unsigned flags)
{
	struct buf b = BUF_INIT;
	if (base64_decode(&b, s, strlen(s), flags) < 0) {
		buf_release(&b);
		return NULL;
	}
	return buf_detach(&b, NULL);
}

static void test_rfc_vectors(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(rfc) / sizeof(rfc[0]); i++) {
		const char *in = rfc[i][0], *out = rfc[i][1];
		char *e = enc(in, strlen(in), 0);
		assert_string_equal(e, out);
		free(e);
		assert_int_equal(base64_encoded_len(strlen(in), 0), strlen(out));
		char *d = dec(out, 0);
		assert_non_null(d);
		assert_string_equal(d, in);
		free(d);
		assert_int_equal(base64_decoded_len(out, strlen(out), 0), (long long)strlen(in));
		/* unpadded: the same text without '=' */
		size_t np = strcspn(out, "=");
		e = enc(in, strlen(in), BASE64_NOPAD | BASE64_URL);
		assert_int_equal(strlen(e), np);
		assert_memory_equal(e, out, np);
		assert_int_equal(base64_encoded_len(strlen(in), BASE64_NOPAD), np);
		free(e);
		char unpadded[16];
		memcpy(unpadded, out, np);
		unpadded[np] = '\0';
		d = dec(unpadded, BASE64_NOPAD | BASE64_CANONICAL);
		assert_non_null(d);
		assert_string_equal(d, in);
		free(d);
		/* optional padding takes both spellings */
		d = dec(unpadded, BASE64_PAD_OPTIONAL);
		assert_string_equal(d, in);
		free(d);
		d = dec(out, BASE64_PAD_OPTIONAL);
		assert_string_equal(d, in);
		free(d);
	}
}

static void test_alphabets(void **state)
{
	(void)state;
	const unsigned char bytes[] = { 0xfb, 0xff, 0xbf, 0xfe };
	char *e = enc(bytes, sizeof(bytes), 0);
	assert_string_equal(e, "+/+//g==");
	free(e);
	e = enc(bytes, sizeof(bytes), BASE64_URL);
	assert_string_equal(e, "-_-__g==");
	free(e);
	e = enc(bytes, sizeof(bytes), BASE64_URL | BASE64_NOPAD);
	assert_string_equal(e, "-_-__g");
	free(e);
	char *d = dec("-_-__g", BASE64_URL | BASE64_NOPAD);
	assert_non_null(d);
	assert_memory_equal(d, bytes, sizeof(bytes));
	free(d);
	/* each alphabet rejects the other's two characters */
	assert_null(dec("+/+//g==", BASE64_URL));
	assert_null(dec("-_-__g==", 0));
	assert_null(dec("ab+c", BASE64_URL));
	assert_null(dec("ab_c", 0));
	/* all 64 characters of each */
	const char *std = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	const char *url = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
	struct buf b = BUF_INIT, r = BUF_INIT;
	assert_int_equal(base64_decode(&b, std, 64, 0), 0);
	assert_int_equal(b.len, 48);
	base64_encode(&r, b.ptr, b.len, 0);
	assert_string_equal(r.ptr, std);
	buf_reset(&r);
	base64_encode(&r, b.ptr, b.len, BASE64_URL);
	assert_string_equal(r.ptr, url);
	buf_release(&b);
	buf_release(&r);
}

static void test_padding_modes(void **state)
{
	(void)state;
	/* required (the default): a multiple of 4, at most two '=' and only at the end */
	assert_null(dec("Zg", 0));
	assert_null(dec("Zg=", 0));
	assert_null(dec("Zg===", 0));
	assert_null(dec("Z===", 0));
	assert_null(dec("====", 0));
	assert_null(dec("Zg=a", 0));
	assert_null(dec("Zg==Zg==", 0));
	assert_int_equal(base64_decoded_len("Zm8=", 4, 0), 2);
	/* none: '=' anywhere is invalid, length 1 mod 4 impossible */
	assert_null(dec("Zg==", BASE64_NOPAD));
	assert_null(dec("Z", BASE64_NOPAD));
	assert_null(dec("Zm9vY", BASE64_NOPAD));
	assert_int_equal(base64_decoded_len("Zm9vYg", 6, BASE64_NOPAD), 4);
	/* optional: exact padding or none, nothing in between */
	assert_null(dec("Zg=", BASE64_PAD_OPTIONAL));
	assert_null(dec("Zm9vY", BASE64_PAD_OPTIONAL));
	assert_int_equal(base64_decoded_len("Zm8", 3, BASE64_PAD_OPTIONAL), 2);
	assert_int_equal(base64_decoded_len("", 0, BASE64_PAD_OPTIONAL), 0);
}

static void test_canonical(void **state)
{
	(void)state;
	/* "Zh" and "Zm9=" carry non-zero unused bits: accepted unless canonical is asked for */
	char *d = dec("Zh==", 0);
	assert_string_equal(d, "f");
	free(d);
	assert_null(dec("Zh==", BASE64_CANONICAL));
	assert_null(dec("Zh", BASE64_NOPAD | BASE64_CANONICAL));
	assert_null(dec("Zm9", BASE64_URL | BASE64_NOPAD | BASE64_CANONICAL));
	assert_int_equal(base64_decoded_len("Zm9", 3, BASE64_NOPAD), 2);
	assert_int_equal(base64_decoded_len("Zm9", 3, BASE64_NOPAD | BASE64_CANONICAL), -1);
	d = dec("Zm8", BASE64_URL | BASE64_NOPAD | BASE64_CANONICAL);
	assert_string_equal(d, "fo");
	free(d);
}

static void test_invalid(void **state)
{
	(void)state;
	assert_null(dec("Zm9v\n", 0));
	assert_null(dec("Zm 9v", BASE64_PAD_OPTIONAL));
	assert_null(dec("Zm9v$A==", 0));
	assert_null(dec("=Zm9", 0));
	assert_int_equal(base64_decoded_len("Zm\0v", 4, 0), -1);
	assert_int_equal(base64_decoded_len("Zm9v\x80", 5, BASE64_PAD_OPTIONAL), -1);
	/* a failed decode leaves what was in out, and out terminated */
	struct buf b = BUF_INIT;
	buf_adds(&b, "keep");
	assert_int_equal(base64_decode(&b, "Zm9v!", 5, 0), -1);
	assert_string_equal(b.ptr, "keep");
	assert_int_equal(base64_decode(&b, "Zm9v", 4, 0), 0);
	assert_string_equal(b.ptr, "keepfoo");
	buf_release(&b);
	/* an empty decode still allocates and terminates, as callers read out.ptr */
	assert_int_equal(base64_decode(&b, "", 0, BASE64_NOPAD), 0);
	assert_non_null(b.ptr);
	assert_int_equal(b.len, 0);
	assert_string_equal(b.ptr, "");
	buf_release(&b);
	/* reads stop at len: a valid prefix of a longer invalid string */
	assert_int_equal(base64_decoded_len("Zm9v!!!!", 4, 0), 3);
}

static void test_round_trip(void **state)
{
	(void)state;
	unsigned char data[256];
	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = (unsigned char)(i * 37 + 11);
	for (size_t n = 0; n <= sizeof(data); n++) {
		for (unsigned flags = 0; flags < 4; flags++) {
			struct buf e = BUF_INIT, d = BUF_INIT;
			base64_encode(&e, data, n, flags);
			assert_int_equal(e.len, base64_encoded_len(n, flags));
			assert_int_equal(base64_decode(&d, e.ptr, e.len, flags | BASE64_CANONICAL), 0);
			assert_int_equal(d.len, n);
			if (n)
				assert_memory_equal(d.ptr, data, n);
			buf_release(&e);
			buf_release(&d);
		}
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rfc_vectors), cmocka_unit_test(test_alphabets), cmocka_unit_test(test_padding_modes),
		cmocka_unit_test(test_canonical),   cmocka_unit_test(test_invalid),   cmocka_unit_test(test_round_trip),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
