/* Fuzzes cobj_new, the watch cache's decoder of stored objects: whatever the stored text, a
 * cached object's JSON must parse and equal the stored object with metadata.resourceVersion
 * set (whether it was spliced into the text or dumped from the tree). cobj_new_tree, given the
 * parsed text as its write hint, must build the same object and leave the tree as it was. */
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
		json_t *tree = json_parse_limited(s, size, 64, NULL), *before = json_deep_copy(tree);
		struct cobj *t = cobj_new_tree(&pods, "/registry/pods/t/ns/name", s, size, 4242, tree);
		if (!t || t->json_len != o->json_len || memcmp(t->json, o->json, o->json_len) != 0 ||
		    !json_equal(tree, before) || ((t->labels || o->labels) && !json_equal(t->labels, o->labels)))
			abort();
		for (size_t i = 0; i < o->nfields; i++)
			if (strcmp(t->fields[i], o->fields[i]) != 0)
				abort();
		cobj_unref(t);
		json_decref(tree);
		json_decref(before);
		cobj_unref(o);
	}
	json_decref(want);
	return 0;
}
