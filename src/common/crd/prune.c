/* crd_schema_prune: drops what the schema does not describe, as Kubernetes does before
 * defaulting and validation. Only the structural spine counts (properties, additionalProperties,
 * items); value validations (allOf, ...) never keep or drop a member. */
#include <string.h>
#include "crd/schema_internal.h"
#include "ursa/crd.h"

/* At most this many removed paths are reported (all are removed). */
#define PRUNE_MAX_PATHS 100

static bool resource_key(const char *key)
{
	return !strcmp(key, "apiVersion") || !strcmp(key, "kind") || !strcmp(key, "metadata");
}

size_t snode_prune(const struct snode *n, json_t *v, struct buf *path, json_t *ret_paths)
{
	size_t removed = 0;
	if (!n)
		return 0;
	if (json_is_array(v)) {
		if (!n->items)
			return 0;
		size_t i;
		json_t *e;
		json_array_foreach(v, i, e) {
			size_t len = path_push_index(path, i);
			removed += snode_prune(n->items, e, path, ret_paths);
			path_cut(path, len);
		}
		return removed;
	}
	if (!json_is_object(v))
		return 0;
	bool resource = n->is_root || n->embedded;
	const char *key;
	json_t *m;
	void *tmp;
	json_object_foreach_safe(v, tmp, key, m) {
		/* apiVersion, kind and metadata of a resource are the server's (metadata is pruned to
		 * ObjectMeta by the caller). */
		if (resource && resource_key(key))
			continue;
		size_t len = path_push_key(path, key);
		const struct snode *child = snode_prop(n, key);
		if (child) {
			removed += snode_prune(child, m, path, ret_paths);
		} else if (!n->preserve_unknown && !n->additional_true) {
			if (ret_paths && json_array_size(ret_paths) < PRUNE_MAX_PATHS)
				json_array_append_new(ret_paths, json_string(buf_cstr(path)));
			json_object_del(v, key);
			removed++;
		}
		path_cut(path, len);
	}
	return removed;
}

size_t crd_schema_prune(const struct crd_schema *s, json_t *obj, json_t *ret_paths)
{
	struct buf path = BUF_INIT;
	size_t n = s && s->root ? snode_prune(s->root, obj, &path, ret_paths) : 0;
	buf_release(&path);
	return n;
}
