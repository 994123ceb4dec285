/* Fuzzes cobj_new, the watch cache's decoder of stored objects: whatever the stored text, a
 * cached object's JSON must parse and equal the stored object with metadata.resourceVersion
 * set (whether it was spliced into the text or dumped from the tree). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "ursa/jsonutil.h"
#include "ursa/wcache.h"

static const struct api_field fields[] = {
	{ "spec.nodeName", "spec.nodeName" },
	{ "status.phase", "status.phase" },
};
static const struct api_strategy strategy = { .fields = fields, .nfields = 2 };
static const struct api_resource pods = {
	.group = "", .version = "v1", .plural = "pods", .singular = "pod", .kind = "Pod",
	.scope = SCOPE_NAMESPACE, .strategy = &strategy,
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *s = (const char *)data;
	size_t close = cobj_metadata_close(s, size);
	if (close && (close >= size || s[close] != '}'))
		abort();
	struct cobj *o = cobj_new(&pods, "/registry/pods/t/ns/name", s, size, 4242);
	json_t *want = json_parse_limited(s, size, 64, NULL);
	if (!o != !json_is_object(want))
		abort();
	if (o) {
		json_object_set_new(json_obj_child(want, "metadata"), "resourceVersion", json_string("4242"));
		json_t *got = json_loadb(o->json, o->json_len, 0, NULL);
		if (!got || !json_equal(got, want) || strlen(o->json) != o->json_len)
			abort();
		json_decref(got);
		cobj_unref(o);
	}
	json_decref(want);
	return 0;
}
