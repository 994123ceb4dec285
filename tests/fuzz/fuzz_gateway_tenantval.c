/* Fuzzes the tenant record decoder (registry.c): whatever it accepts must be what jansson reads
 * from the same text (partition string without NUL, 1..253 bytes; state "pending"; integer since;
 * a kept "moved" whose from, toRevision and fromRevision jansson reads the same). */
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
		json_t *m = json_is_object(j) ? json_object_get(j, "moved") : NULL;
		json_t *from = json_object_get(m, "from");
		if (v.has_moved &&
		    (!json_is_object(m) || !json_is_string(from) || json_string_length(from) != v.moved_from.len ||
		     memcmp(json_string_value(from), v.moved_from.ptr, v.moved_from.len) != 0 ||
		     json_integer_value(json_object_get(m, "toRevision")) != v.moved_to_rev ||
		     json_integer_value(json_object_get(m, "fromRevision")) != v.moved_from_rev || v.moved_to_rev <= 0))
			abort();
	}
	json_decref(j);
	buf_release(&scratch);
	return 0;
}
