/* Parses arbitrary token-file content; when it parses, looks up the first line's token (which
 * may or may not be an entry) and checks what comes back is a well-formed identity. */
#include "auth/auth_internal.h"
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct tokentab *t = NULL;
	struct buf err = BUF_INIT;
	const char *text = (const char *)data;
	if (tokentab_parse(text, size, &t, &err) == 0) {
		if (err.len)
			abort();
		size_t n = 0;
		while (n < size && text[n] != ',' && text[n] != '\n')
			n++;
		const struct identity *id = tokentab_lookup(t, text, n);
		if (id && (!id->user || !id->tenant || !auth_tenant_ok(id->tenant, strlen(id->tenant))))
			abort();
		tokentab_free(t);
	} else if (t || err.len == 0) {
		abort();
	}
	buf_release(&err);
	return 0;
}
