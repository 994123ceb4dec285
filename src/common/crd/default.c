/* crd_schema_default: fills the schema's defaults into an object, as Kubernetes does after
 * pruning and before validation. A null member whose node is not nullable gets the default, or
 * is dropped when there is none (upstream prunes such nulls too), so that "field: null" means
 * "unset" to a non-nullable field. Values filled in are defaulted in turn. */
#include <string.h>
#include "crd/schema_internal.h"
#include "ursa/crd.h"

void snode_default(const struct snode *n, json_t *v)
{
	if (!n)
		return;
	if (json_is_array(v)) {
		size_t i;
		json_t *e;
		if (n->items)
			json_array_foreach(v, i, e)
				snode_default(n->items, e);
		return;
	}
	if (!json_is_object(v))
		return;
	bool resource = n->is_root || n->embedded;
	for (size_t i = 0; i < n->nprops; i++) {
		const struct sprop *p = &n->props[i];
		if (resource && !strcmp(p->name, "metadata"))
			continue;
		json_t *cur = json_object_get(v, p->name);
		if (p->node->deflt && (!cur || (json_is_null(cur) && !p->node->nullable)))
			json_object_set_new(v, p->name, json_deep_copy(p->node->deflt));
		else if (cur && json_is_null(cur) && !p->node->nullable)
			json_object_del(v, p->name);
	}
	const char *key;
	json_t *m;
	void *tmp;
	json_object_foreach_safe(v, tmp, key, m) {
		if (resource && (!strcmp(key, "metadata") || !strcmp(key, "apiVersion") || !strcmp(key, "kind")))
			continue;
		const struct snode *child = snode_prop(n, key);
		if (!child)
			continue;
		if (json_is_null(m) && !child->nullable && n->additional == child) {
			if (child->deflt)
				json_object_set_new(v, key, json_deep_copy(child->deflt));
			else
				json_object_del(v, key);
			continue;
		}
		snode_default(child, m);
	}
}

void crd_schema_default(const struct crd_schema *s, json_t *obj)
{
	if (s && s->root)
		snode_default(s->root, obj);
}
