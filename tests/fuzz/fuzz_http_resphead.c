/* Fuzzes the tunnel's response-head parser (ursa/tunnel.h) and the chunked-body decoder: the
 * head of the input is parsed as a next hop's answer, every field looked up, and what follows
 * the head decoded as a chunked body. A head that parses must parse the same from every longer
 * prefix, and never reach past the input. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "ursa/tunnel.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *copy = malloc(size ? size : 1);
	memcpy(copy, data, size);
	struct tunnel_head h;
	int r = tunnel_head_parse(copy, size, &h);
	if (r == 1) {
		if (h.head_len > size || h.status < 100 || h.status > 999)
			abort();
		for (size_t i = 0; i < h.nfields; i++) {
			size_t n;
			char name[64];
			size_t nl = h.f[i].name_len < sizeof(name) - 1 ? h.f[i].name_len : sizeof(name) - 1;
			memcpy(name, h.f[i].name, nl);
			name[nl] = '\0';
			if (!tunnel_head_get(&h, name, 0, &n) && nl == h.f[i].name_len)
				abort();
			if (h.f[i].value + h.f[i].value_len > copy + size)
				abort();
		}
		struct tunnel_head again;
		if (tunnel_head_parse(copy, h.head_len, &again) != 1 || again.head_len != h.head_len)
			abort();
		ssize_t n = tunnel_dechunk(copy + h.head_len, size - h.head_len);
		if (n > (ssize_t)(size - h.head_len))
			abort();
	}
	free(copy);
	return 0;
}
