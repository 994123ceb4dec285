/* Fuzzes the $(VAR) expansion of env values, command and args (src/kubelet/podenv.c): any bytes
 * up to the first NUL, with two variables defined. The result never grows past what the
 * references can give, an input without '$' comes back unchanged, and expanding with no
 * variables drops exactly the escapes. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "podenv.h"

static const char *lookup(void *ud, const char *name, size_t len)
{
	(void)ud;
	if (len == 1 && name[0] == 'A')
		return "alpha";
	if (len == 1 && name[0] == 'B')
		return "$(A)";
	return NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);
	if (!s)
		return 0;
	memcpy(s, data, size);
	s[size] = '\0';
	size_t n = strlen(s);
	char *out = podenv_expand(s, lookup, NULL);
	if (!out || strlen(out) > n * 5)
		abort();
	if (!strchr(s, '$') && strcmp(out, s) != 0)
		abort();
	char *plain = podenv_expand(s, NULL, NULL);
	size_t escapes = 0;
	for (size_t i = 0; i + 1 < n; i++) {
		if (s[i] != '$')
			continue;
		if (s[i + 1] == '$') {
			escapes++, i++;
		} else if (s[i + 1] == '(') {
			const char *close = strchr(s + i + 2, ')'); /* a reference, kept whole */
			if (close)
				i = (size_t)(close - s);
		}
	}
	if (strlen(plain) != n - escapes)
		abort();
	free(plain);
	free(out);
	free(s);
	return 0;
}
