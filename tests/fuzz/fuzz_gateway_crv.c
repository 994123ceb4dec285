/* Fuzzes the composite resourceVersion parser: whatever it accepts must encode back to a value
 * that parses to the same partitions and resourceVersions. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "gw.h"
#include "ursa/xalloc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = xstrndup((const char *)data, size);
	struct crv c, d;
	const char *msg = NULL;
	if (crv_parse(s, &c, &msg) == 0) {
		char *again = crv_encode(&c);
		if (crv_parse(again, &d, &msg) != 0 || d.n != c.n)
			abort();
		for (size_t i = 0; i < c.n; i++)
			if (strcmp(c.pid[i], d.pid[i]) != 0 || strcmp(c.rv[i], d.rv[i]) != 0)
				abort();
		crv_release(&d);
		crv_release(&c);
		free(again);
	} else if (!msg) {
		abort();
	}
	free(s);
	return 0;
}
