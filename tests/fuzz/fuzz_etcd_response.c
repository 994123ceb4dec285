/* Fuzzes the etcd JSON gateway parsers that remain (lease replies, errors): the whole input goes
 * through the JSON parser with its depth cap, the error mapper and the int64 field reader. The
 * KV calls' and the watch stream's protobuf decoders are fuzz_etcd_pb.c. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "etcd/etcd_internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	json_t *j = etcd_json_parse((const char *)data, size);
	int64_t v;

	if (etcd_parse_error(j, 400) == 0)
		abort();
	if (etcd_json_i64(j, "TTL", &v) == 0 && !(json_is_object(j) && json_object_get(j, "TTL")) && v != 0)
		abort(); /* an absent field reads as 0 */
	json_decref(j);
	return 0;
}
