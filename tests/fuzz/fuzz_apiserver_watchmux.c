/* Fuzzes the multiplexed watch request's parser (wm_parse) on arbitrary bytes. Invariants: it
 * either refuses with a message and returns nothing, or returns 1 to 10,000 watches, each with
 * an id and an absolute path without a query, and a resourceVersion of -1 or more. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "apiserver/internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct wm_spec *v;
	size_t n;
	long long timeout;
	struct buf err = BUF_INIT;
	if (wm_parse((const char *)data, size, &v, &n, &timeout, &err) < 0) {
		if (v || n || !err.len)
			abort();
	} else {
		if (!v || n == 0 || n > 10000 || timeout < 0)
			abort();
		for (size_t i = 0; i < n; i++)
			if (!v[i].id || !*v[i].id || !v[i].path || v[i].path[0] != '/' || strchr(v[i].path, '?') ||
			    v[i].rv < -1)
				abort();
		wm_specs_free(v, n);
	}
	buf_release(&err);
	return 0;
}
