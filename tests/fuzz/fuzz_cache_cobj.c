/* Fuzzes cobj_new, the watch cache's decoder of stored objects: whatever the stored text, a
 * cached object's JSON must parse and equal the stored object with metadata.resourceVersion
 * set (whether it was spliced into the text or dumped from the tree). cobj_new_tree, given the
 * parsed text as its write hint, must build the same object and leave the tree as it was.
 * cobj_new_fast, when it takes the text, must build exactly what the parse builds, and
 * cobj_text_paths must give the text of the same members a parse finds. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "ursa/jsonutil.h"
#include "ursa/wcache.h"

static const struct api_field fields[] = {
	{ "spec.nodeName", "spec.nodeName" },
	{ "status.phase", "status.phase" },
	{ "spec.n", "spec.n", "absent" },
	{ "metadata.name", "metadata.name" },
};
static const struct api_strategy strategy = { .fields = fields, .nfields = 4 };
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
		struct cobj *f = cobj_new_fast(&pods, "/registry/pods/t/ns/name", s, size, 4242);
		if (f && (f->json_len != t->json_len || memcmp(f->json, t->json, t->json_len) != 0 || f->rv != t->rv ||
			  strcmp(f->key, t->key) || strcmp(f->tenant, t->tenant) || strcmp(f->ns, t->ns) ||
			  strcmp(f->name, t->name) || !f->labels != !t->labels ||
			  (f->labels && !json_equal(f->labels, t->labels)) || f->nfields != t->nfields))
			abort();
		for (size_t i = 0; f && i < f->nfields; i++)
			if (strcmp(f->fields[i], t->fields[i]) != 0)
				abort();
		/* members' text (cobj_text_paths) equals the parsed members */
		static const char *const paths[] = { "spec.containers", "status.phase", "metadata", "spec.n" };
		struct sv spans[4];
		json_t *whole = json_loadb(o->json, o->json_len, 0, NULL);
		for (int k = 0; f && k < 2; k++) { /* the fast path's object, then the parsed one */
			const struct cobj *x = k ? t : f;
			if (cobj_text_paths(x, paths, 4, spans) < 0)
				continue;
			for (size_t i = 0; i < 4; i++) {
				json_t *want_v = json_path(whole, paths[i]);
				json_t *got_v = NULL;
				if (spans[i].ptr)
					got_v = json_loadb(spans[i].ptr, spans[i].len, JSON_DECODE_ANY, NULL);
				if (!want_v != !got_v || (got_v && !json_equal(got_v, want_v)))
					abort();
				json_decref(got_v);
			}
		}
		json_decref(whole);
		cobj_unref(f);
		cobj_unref(t);
		json_decref(tree);
		json_decref(before);
		cobj_unref(o);
	}
	json_decref(want);
	return 0;
}
