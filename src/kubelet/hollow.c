/* The node table: one real node, or in hollow mode N simulated nodes "<prefix>-<i>". Node
 * objects are not kept: node.c builds them on demand from this small per-node state, and a
 * hash index of names lets the shared pod informers dispatch pods by spec.nodeName. */
#include <string.h>
#include "kubelet.h"
#include "ursa/xalloc.h"

static uint64_t hash_name(const char *s)
{
	uint64_t h = 1469598103934665603ull;  /* FNV-1a */
	for (; *s; s++) {
		h ^= (unsigned char)*s;
		h *= 1099511628211ull;
	}
	return h;
}

static void index_insert(struct kubelet *k, size_t i)
{
	size_t slot = hash_name(k->nodes[i].name) & k->node_index_mask;
	while (k->node_index[slot])
		slot = (slot + 1) & k->node_index_mask;
	k->node_index[slot] = (uint32_t)(i + 1);
}

long kl_node_find(const struct kubelet *k, const char *name)
{
	if (!name || !k->node_index)
		return -1;
	size_t slot = hash_name(name) & k->node_index_mask;
	for (uint32_t v; (v = k->node_index[slot]) != 0; slot = (slot + 1) & k->node_index_mask)
		if (strcmp(k->nodes[v - 1].name, name) == 0)
			return (long)(v - 1);
	return -1;
}

void kl_nodes_init(struct kubelet *k)
{
	k->nnodes = k->hollow ? (size_t)k->opt.hollow_nodes : 1;
	k->nodes = xcalloc(k->nnodes, sizeof(*k->nodes));
	for (size_t i = 0; i < k->nnodes; i++)
		k->nodes[i].name = k->hollow ? xasprintf("%s-%zu", k->opt.hollow_prefix, i)
					     : xstrdup(k->opt.node_name ? k->opt.node_name : k->hostname);
	size_t cap = 4;
	while (cap < 2 * k->nnodes)
		cap <<= 1;
	k->node_index = xcalloc(cap, sizeof(*k->node_index));
	k->node_index_mask = cap - 1;
	for (size_t i = 0; i < k->nnodes; i++)
		index_insert(k, i);
}

void kl_nodes_release(struct kubelet *k)
{
	for (size_t i = 0; i < k->nnodes; i++)
		free(k->nodes[i].name);
	free(k->nodes);
	free(k->node_index);
	k->nodes = NULL;
	k->node_index = NULL;
	k->nnodes = 0;
}
