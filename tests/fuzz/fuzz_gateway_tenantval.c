/* Fuzzes the tenant record decoder (registry.c): whatever it accepts must be what jansson reads
 * from the same text (partition string without NUL, 1..253 bytes; state "pending"; integer since). */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "gw.h"
#include "ursa/jsonutil.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct buf scratch = BUF_INIT;
	struct tenant_val v;
	int rc = tenant_val_parse((const char *)data, size, &v, &scratch);
	json_t *j = json_parse_limited((const char *)data, size, 4, NULL);
	json_t *part = json_is_object(j) ? json_object_get(j, "partition") : NULL;
	if (rc == 0) {
		/* accepted: jansson must agree on the partition */
		if (!json_is_string(part) || json_string_length(part) != v.partition.len ||
		    memcmp(json_string_value(part), v.partition.ptr, v.partition.len) != 0)
			abort();
	}
	json_decref(j);
	buf_release(&scratch);
	return 0;
}
