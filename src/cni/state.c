/* ursa-cni's allocation state: tenant networks of the node, their blocks and containers. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cni.h"
#include "ursa/buf.h"
#include "ursa/xalloc.h"

#define STATE_V2 "v2"
#define MAX_INDEX (1L << 24)

static void use_release(struct cni_use *u)
{
	for (size_t i = 0; i < u->ncids; i++)
		free(u->cids[i]);
	free(u->cids);
}

static void net_release(struct cni_net *n)
{
	for (size_t i = 0; i < n->nblocks; i++)
		use_release(&n->blocks[i]);
	free(n->blocks);
	free(n->tenant);
}

void cni_state_release(struct cni_state *s)
{
	for (size_t i = 0; i < s->n; i++)
		net_release(&s->nets[i]);
	free(s->nets);
	s->nets = NULL;
	s->n = 0;
}

const struct cni_net *cni_state_find(const struct cni_state *s, const char *cid, long *ret_blk)
{
	for (size_t i = 0; i < s->n; i++)
		for (size_t b = 0; b < s->nets[i].nblocks; b++)
			for (size_t j = 0; j < s->nets[i].blocks[b].ncids; j++)
				if (strcmp(s->nets[i].blocks[b].cids[j], cid) == 0) {
					if (ret_blk)
						*ret_blk = s->nets[i].blocks[b].blk;
					return &s->nets[i];
				}
	return NULL;
}

static struct cni_net *find_tenant(struct cni_state *s, const char *tenant)
{
	for (size_t i = 0; i < s->n; i++)
		if (strcmp(s->nets[i].tenant, tenant) == 0)
			return &s->nets[i];
	return NULL;
}

static bool idx_used(const struct cni_state *s, long idx)
{
	for (size_t i = 0; i < s->n; i++)
		if (s->nets[i].idx == idx)
			return true;
	return false;
}

static bool blk_used(const struct cni_state *s, long blk)
{
	for (size_t i = 0; i < s->n; i++)
		for (size_t b = 0; b < s->nets[i].nblocks; b++)
			if (s->nets[i].blocks[b].blk == blk)
				return true;
	return false;
}

static void add_cid(struct cni_use *u, const char *cid)
{
	u->cids = xrealloc(u->cids, (u->ncids + 1) * sizeof(*u->cids));
	u->cids[u->ncids++] = xstrdup(cid);
}

/* Adds block blk to n, keeping block order; returns it. */
static struct cni_use *add_block(struct cni_net *n, long blk)
{
	n->blocks = xrealloc(n->blocks, (n->nblocks + 1) * sizeof(*n->blocks));
	size_t at = 0;
	while (at < n->nblocks && n->blocks[at].blk < blk)
		at++;
	memmove(&n->blocks[at + 1], &n->blocks[at], (n->nblocks - at) * sizeof(*n->blocks));
	n->nblocks++;
	memset(&n->blocks[at], 0, sizeof(n->blocks[at]));
	n->blocks[at].blk = blk;
	return &n->blocks[at];
}

static struct cni_net *add_net(struct cni_state *s, long idx, const char *tenant)
{
	s->nets = xrealloc(s->nets, (s->n + 1) * sizeof(*s->nets));
	struct cni_net *n = &s->nets[s->n++];
	memset(n, 0, sizeof(*n));
	n->idx = idx;
	n->tenant = xstrdup(tenant);
	return n;
}

/* A decimal index 0..2^24 spanning [p, end) (end NULL: to the string's end); -1 otherwise. */
static long parse_index(const char *p, const char *end)
{
	long v = 0;
	if (!end)
		end = p + strlen(p);
	if (p == end)
		return -1;
	for (; p < end; p++) {
		if (*p < '0' || *p > '9' || v > MAX_INDEX)
			return -1;
		v = v * 10 + (*p - '0');
	}
	return v > MAX_INDEX ? -1 : v;
}

/* The container ids of one block, comma-separated (possibly none), into u; NULL or what is wrong. */
static const char *parse_cids(struct cni_state *s, struct cni_use *u, char *list)
{
	char *save = NULL;
	if (*list == ',' || (*list && list[strlen(list) - 1] == ',') || strstr(list, ",,"))
		return "empty container id";
	for (char *c = strtok_r(list, ",", &save); c; c = strtok_r(NULL, ",", &save)) {
		if (!cni_token_valid(c))
			return "invalid container id";
		if (cni_state_find(s, c, NULL)) /* u is in s already */
			return "container listed twice";
		add_cid(u, c);
	}
	return NULL;
}

/* Parses one line's words into s (v2: the second form); NULL or what is wrong. */
static const char *parse_line(struct cni_state *s, char *line, bool v2)
{
	char *save = NULL, *w = strtok_r(line, " \t", &save);
	if (!w)
		return NULL; /* blank */
	long idx = parse_index(w, NULL);
	if (idx < 0)
		return "index is not a number (0..2^24)";
	char *tenant = strtok_r(NULL, " \t", &save);
	if (!tenant || !cni_token_valid(tenant))
		return "no valid tenant";
	if (idx_used(s, idx))
		return "index used twice";
	if (find_tenant(s, tenant))
		return "tenant listed twice";
	size_t ni = (size_t)(add_net(s, idx, tenant) - s->nets);
	if (!v2) {
		/* first version: the network's one block is its index */
		if (blk_used(s, idx))
			return "block used twice";
		add_block(&s->nets[ni], idx);
		while ((w = strtok_r(NULL, " \t", &save))) {
			if (!cni_token_valid(w))
				return "invalid container id";
			if (cni_state_find(s, w, NULL))
				return "container listed twice";
			add_cid(&s->nets[ni].blocks[0], w);
		}
		return NULL;
	}
	while ((w = strtok_r(NULL, " \t", &save))) {
		char *colon = strchr(w, ':');
		long blk = colon ? parse_index(w, colon) : -1;
		if (blk < 0)
			return "block is not <number>:<container ids>";
		if (blk_used(s, blk))
			return "block used twice";
		const char *why = parse_cids(s, add_block(&s->nets[ni], blk), colon + 1);
		if (why)
			return why;
	}
	if (s->nets[ni].nblocks == 0)
		return "network without a block";
	return NULL;
}

int cni_state_parse(const char *text, struct cni_state *ret_state, char **ret_err)
{
	memset(ret_state, 0, sizeof(*ret_state));
	char *copy = xstrdup(text ? text : ""), *save = NULL;
	int lineno = 0;
	bool v2 = false, first = true;
	for (char *line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		lineno++;
		const char *why;
		if (first && strcmp(line, STATE_V2) == 0) {
			v2 = true;
			why = NULL;
		} else {
			why = parse_line(ret_state, line, v2);
		}
		first = false;
		if (why) {
			*ret_err = xasprintf("state line %d: %s", lineno, why);
			free(copy);
			cni_state_release(ret_state);
			return -1;
		}
	}
	free(copy);
	return 0;
}

static int by_idx(const void *a, const void *b)
{
	long x = (*(const struct cni_net *const *)a)->idx, y = (*(const struct cni_net *const *)b)->idx;
	return x < y ? -1 : x > y;
}

char *cni_state_format(const struct cni_state *s)
{
	const struct cni_net **v = xcalloc(s->n + 1, sizeof(*v));
	for (size_t i = 0; i < s->n; i++)
		v[i] = &s->nets[i];
	qsort(v, s->n, sizeof(*v), by_idx);
	struct buf b = BUF_INIT;
	buf_adds(&b, STATE_V2 "\n");
	for (size_t i = 0; i < s->n; i++) {
		buf_addf(&b, "%ld %s", v[i]->idx, v[i]->tenant);
		for (size_t k = 0; k < v[i]->nblocks; k++) {
			const struct cni_use *u = &v[i]->blocks[k];
			buf_addf(&b, " %ld:", u->blk);
			for (size_t j = 0; j < u->ncids; j++)
				buf_addf(&b, "%s%s", j ? "," : "", u->cids[j]);
		}
		buf_addch(&b, '\n');
	}
	free(v);
	return buf_detach(&b, NULL);
}

/* The lowest value below capacity that used() says is free, or -1. */
static long lowest_free(const struct cni_state *s, long capacity, bool (*used)(const struct cni_state *, long))
{
	for (long v = 0; v < capacity; v++)
		if (!used(s, v))
			return v;
	return -1;
}

long cni_state_join(struct cni_state *s, const char *tenant, const char *cid, long capacity, long hosts,
		    struct cni_join *ret)
{
	memset(ret, 0, sizeof(*ret));
	const struct cni_net *have = cni_state_find(s, cid, &ret->blk);
	if (have)
		return have->idx;
	struct cni_net *n = find_tenant(s, tenant);
	if (n) {
		for (size_t k = 0; k < n->nblocks; k++) {
			struct cni_use *u = &n->blocks[k];
			if (u->blk < capacity && (long)u->ncids < hosts) {
				add_cid(u, cid);
				ret->blk = u->blk;
				return n->idx;
			}
		}
	}
	long blk = lowest_free(s, capacity, blk_used);
	if (blk < 0)
		return -1;
	if (!n) {
		/* a network has at least one block, so with a block free an index below capacity is too */
		long idx = lowest_free(s, capacity, idx_used);
		if (idx < 0)
			return -1;
		n = add_net(s, idx, tenant);
		ret->new_net = true;
	}
	add_cid(add_block(n, blk), cid);
	ret->blk = blk;
	ret->new_block = true;
	return n->idx;
}

long cni_state_leave(struct cni_state *s, const char *cid, struct cni_leave *ret)
{
	memset(ret, 0, sizeof(*ret));
	ret->blk = -1;
	for (size_t i = 0; i < s->n; i++) {
		struct cni_net *n = &s->nets[i];
		for (size_t k = 0; k < n->nblocks; k++) {
			struct cni_use *u = &n->blocks[k];
			for (size_t j = 0; j < u->ncids; j++) {
				if (strcmp(u->cids[j], cid) != 0)
					continue;
				long idx = n->idx;
				ret->blk = u->blk;
				free(u->cids[j]);
				memmove(&u->cids[j], &u->cids[j + 1], (u->ncids - j - 1) * sizeof(*u->cids));
				if (--u->ncids > 0)
					return idx;
				ret->block_empty = true;
				use_release(u);
				memmove(&n->blocks[k], &n->blocks[k + 1], (n->nblocks - k - 1) * sizeof(*n->blocks));
				if (--n->nblocks > 0)
					return idx;
				ret->net_empty = true;
				net_release(n);
				s->nets[i] = s->nets[--s->n];
				return idx;
			}
		}
	}
	return -1;
}
