/* Fuzzes the base64 codec: the input is decoded under every flag combination (from an exact-size
 * copy, so that ASan sees any read past its end), the decoded length must match what
 * base64_decoded_len promised, a canonical decoding must re-encode to the input, and the input
 * taken as bytes must round-trip through every encoding. */
#include "ursa/base64.h"
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static const unsigned flag_sets[] = {
	0,
	BASE64_PAD_OPTIONAL,
	BASE64_NOPAD,
	BASE64_CANONICAL,
	BASE64_PAD_OPTIONAL | BASE64_CANONICAL,
	BASE64_URL,
	BASE64_URL | BASE64_PAD_OPTIONAL,
	BASE64_URL | BASE64_NOPAD,
	BASE64_URL | BASE64_NOPAD | BASE64_CANONICAL,
	BASE64_URL | BASE64_CANONICAL,
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *in = malloc(size ? size : 1);
	if (size)
		memcpy(in, data, size);
	struct buf dec = BUF_INIT, enc = BUF_INIT;
	for (size_t f = 0; f < sizeof(flag_sets) / sizeof(flag_sets[0]); f++) {
		unsigned flags = flag_sets[f];
		buf_reset(&dec);
		buf_addch(&dec, 'x'); /* decode appends after what is there */
		long long want = base64_decoded_len(in, size, flags);
		int rc = base64_decode(&dec, in, size, flags);
		if ((rc == 0) != (want >= 0) || dec.ptr[dec.len] != '\0' || dec.ptr[0] != 'x')
			abort();
		if (rc < 0) {
			if (dec.len != 1)
				abort();
			continue;
		}
		if ((long long)dec.len != want + 1 || (size_t)want > size)
			abort();
		/* A canonical decoding has one spelling: its re-encoding (with the padding the input
		 * had) is the input itself. */
		if (flags & BASE64_CANONICAL) {
			unsigned eflags = flags & BASE64_URL;
			if ((flags & BASE64_NOPAD) || (size % 4 && (flags & BASE64_PAD_OPTIONAL)))
				eflags |= BASE64_NOPAD;
			buf_reset(&enc);
			base64_encode(&enc, dec.ptr + 1, dec.len - 1, eflags);
			if (enc.len != size || memcmp(enc.ptr, in, size) != 0)
				abort();
		}
	}
	for (unsigned flags = 0; flags < 4; flags++) {
		buf_reset(&enc);
		buf_reset(&dec);
		base64_encode(&enc, in, size, flags);
		if (enc.len != base64_encoded_len(size, flags) || enc.ptr[enc.len] != '\0')
			abort();
		if (base64_decode(&dec, enc.ptr, enc.len, flags | BASE64_CANONICAL) < 0 || dec.len != size ||
		    (size && memcmp(dec.ptr, in, size) != 0))
			abort();
		buf_reset(&dec);
		if (base64_decode(&dec, enc.ptr, enc.len, (flags & BASE64_URL) | BASE64_PAD_OPTIONAL) < 0 ||
		    dec.len != size)
			abort();
	}
	buf_release(&dec);
	buf_release(&enc);
	free(in);
	return 0;
}
