/* Following the region's partitions: the endpoints of a registry object and the set of
 * partitions a daemon follows (include/ursa/region.h). */
#include <string.h>
#include "ursa/client.h"
#include "ursa/jsonutil.h"
#include "ursa/region.h"
#include "ursa/xalloc.h"

char *region_endpoints(const json_t *obj)
{
	struct buf b = BUF_INIT;
	size_t i, kept = 0;
	const json_t *e;
	json_array_foreach(json_path(obj, "spec.endpoints"), i, e) {
		const char *s = json_string_value(e);
		if (!s || !*s || strchr(s, ',') || strlen(s) > REGION_ENDPOINT_LEN_MAX)
			continue;
		if (kept++ == REGION_ENDPOINTS_MAX)
			break;
		if (b.len)
			buf_addch(&b, ',');
		buf_adds(&b, s);
	}
	return b.len ? buf_detach(&b, NULL) : NULL;
}

void region_peers_init(struct region_peers *s, const struct region_follow *ops, void *ud, size_t max)
{
	*s = (struct region_peers){ .ops = ops, .ud = ud, .max = max };
}

/* Unlinks v[i] (keeping the others' order) and closes it. */
static void drop(struct region_peers *s, size_t i)
{
	struct region_peer p = s->v[i];
	memmove(&s->v[i], &s->v[i + 1], (s->n - i - 1) * sizeof(*s->v));
	s->n--;
	if (s->ops->close) {
		s->ops->close(s->ud, p.name, p.val);
	} else {
		s->closed = xrealloc(s->closed, (s->nclosed + 1) * sizeof(*s->closed));
		s->closed[s->nclosed++] = p.val;
	}
	free(p.name);
	free(p.servers);
}

void region_peers_release(struct region_peers *s)
{
	while (s->n)
		drop(s, s->n - 1);
	free(s->v);
	s->v = NULL;
}

void **region_peers_take_closed(struct region_peers *s, size_t *ret_n)
{
	void **v = s->closed;
	*ret_n = s->nclosed;
	s->closed = NULL;
	s->nclosed = 0;
	return v;
}

struct region_peer *region_peers_find(const struct region_peers *s, const char *name)
{
	for (size_t i = 0; i < s->n; i++)
		if (strcmp(s->v[i].name, name) == 0)
			return &s->v[i];
	return NULL;
}

bool region_peers_remove(struct region_peers *s, const char *name)
{
	struct region_peer *p = name ? region_peers_find(s, name) : NULL;
	if (!p)
		return false;
	drop(s, (size_t)(p - s->v));
	return true;
}

/* Opens name at servers (taken) at the end of the set; false when left out. */
static bool add(struct region_peers *s, const char *name, char *servers, const json_t *obj)
{
	void *val = s->n < s->max ? s->ops->open(s->ud, name, servers, obj) : NULL;
	if (!val) {
		free(servers);
		return false;
	}
	s->v = xrealloc(s->v, (s->n + 1) * sizeof(*s->v));
	s->v[s->n++] = (struct region_peer){ .name = xstrdup(name), .servers = servers, .val = val, .seen = true };
	return true;
}

void region_peers_offer(struct region_peers *s, const json_t *obj)
{
	const char *name = json_path_str(obj, "metadata.name");
	if (!name || !*name)
		return;
	char *servers = region_endpoints(obj);
	struct region_peer *p = region_peers_find(s, name);
	if (!servers) {
		region_peers_remove(s, name);
		return;
	}
	if (!p) {
		if (add(s, name, servers, obj) && s->ops->seen)
			s->ops->seen(s->ud, s->v[s->n - 1].val, obj);
		return;
	}
	if (strcmp(p->servers, servers) == 0) {
		free(servers);
	} else if (s->ops->move) {
		void *val = s->ops->move(s->ud, p->val, servers, obj);
		if (val) {
			p->val = val;
			free(p->servers);
			p->servers = servers;
		} else {
			free(servers);
		}
	} else {
		drop(s, (size_t)(p - s->v));
		if (add(s, name, servers, obj) && s->ops->seen)
			s->ops->seen(s->ud, s->v[s->n - 1].val, obj);
		return;
	}
	p->seen = true;
	if (s->ops->seen)
		s->ops->seen(s->ud, p->val, obj);
}

static void offer_one(void *ud, const json_t *obj)
{
	region_peers_offer(ud, obj);
}

void region_peers_sweep_begin(struct region_peers *s)
{
	for (size_t i = 0; i < s->n; i++)
		s->v[i].seen = false;
}

void region_peers_sweep_end(struct region_peers *s)
{
	for (size_t i = s->n; i-- > 0;)
		if (!s->v[i].seen)
			drop(s, i);
}

void region_peers_sweep(struct region_peers *s, struct informer *registry)
{
	region_peers_sweep_begin(s);
	informer_foreach(registry, offer_one, s);
	region_peers_sweep_end(s);
}
