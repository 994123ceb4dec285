/* Fuzzes the Go duration parser of the image GC flags (--image-minimum-gc-age,
 * --image-gc-period): any bytes, as a string, either fail and leave the result untouched or give
 * a duration within 0..one year. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "images.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);
	if (!s)
		return 0;
	memcpy(s, data, size);
	s[size] = '\0';
	int64_t ms = -7;
	int rc = imggc_parse_duration(s, &ms);
	if (rc == 0 && (ms < 0 || ms > 366LL * 24 * 3600 * 1000))
		abort();
	if (rc != 0 && (rc != -1 || ms != -7))
		abort();
	free(s);
	return 0;
}
