/* The node table: one real node, or in hollow mode N simulated nodes "<prefix>-<i>". Node
 * objects are not kept: node.c builds them on demand from this small per-node state, and a
 * hash index of names lets the shared pod informers dispatch pods by spec.nodeName. */
#define _GNU_SOURCE /* memmem */
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

#define NODE_NAME_MAX 253 /* a DNS subdomain */

static const char *skip_ws(const char *p, const char *end)
{
	while (p < end && (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n'))
		p++;
	return p;
}

/* A hollow process watches every bound pod of a partition (a field selector names one node, not
 * a set), so most events it receives are about other processes' nodes; this lets it drop them
 * without parsing. Inside a JSON string a quote is escaped, so "nodeName" followed by a colon is
 * a member name: spec.nodeName, or a label or annotation of that name. The line is foreign when
 * it has at least one such member and every one is a plain string naming no node of ours; a line
 * without one, or with another kind of value (null, escapes, too long), is not. */
bool kl_event_foreign(const struct kubelet *k, const char *line, size_t len)
{
	static const char key[] = "\"nodeName\"";
	const char *p = line, *end = line + len;
	bool named = false;

	while (p < end && (p = memmem(p, (size_t)(end - p), key, sizeof(key) - 1))) {
		const char *q = skip_ws(p + sizeof(key) - 1, end), *v, *ve;
		char name[NODE_NAME_MAX + 1];

		p += sizeof(key) - 1;
		if (q == end || *q != ':')
			continue; /* a string value "nodeName", not a member */
		q = skip_ws(q + 1, end);
		if (q == end || *q != '"')
			return false;
		v = q + 1;
		ve = memchr(v, '"', (size_t)(end - v));
		if (!ve || ve - v > NODE_NAME_MAX || memchr(v, '\\', (size_t)(ve - v)))
			return false;
		memcpy(name, v, (size_t)(ve - v));
		name[ve - v] = '\0';
		if (kl_node_find(k, name) >= 0)
			return false;
		named = true;
		p = ve + 1;
	}
	return named;
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
