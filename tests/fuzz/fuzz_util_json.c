/* Fuzzes the request-body JSON decoder: depth-capped parsing, then the helpers that read
 * parsed objects, and re-serialization. */
#include "ursa/jsonutil.h"
#include <stdint.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct buf err = BUF_INIT, out = BUF_INIT;
	json_t *j = json_parse_limited((const char *)data, size, 64, &err);
	if (j) {
		if (json_depth(j) > 64)
			abort();
		json_path_str(j, "metadata.name");
		json_path_scalar(j, "spec.nodeName", &out);
		json_path_scalar(j, "a.b.c.d.e", &out);
		json_dump_buf(j, &out);
		json_decref(j);
	}
	buf_release(&err);
	buf_release(&out);
	return 0;
}
