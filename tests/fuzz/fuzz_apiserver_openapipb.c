/* Fuzzes openapi_v2_protobuf (Swagger JSON -> gnostic protobuf) with any JSON document: it must
 * skip what it does not know and never crash, and write the same bytes twice. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <jansson.h>
#include "apiserver/internal.h"
#include "ursa/jsonutil.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	json_t *doc = json_parse_limited((const char *)data, size, 64, NULL);
	if (!doc)
		return 0;
	struct buf a = BUF_INIT, b = BUF_INIT;
	openapi_v2_protobuf(doc, &a);
	openapi_v2_protobuf(doc, &b);
	if (a.len != b.len || (a.len && memcmp(a.ptr, b.ptr, a.len) != 0))
		abort();
	buf_release(&a);
	buf_release(&b);
	json_decref(doc);
	return 0;
}
