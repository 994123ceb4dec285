/* Request path → what it addresses (Arktos RequestInfo without the resource table).
 *
 * The path is split on '/', each segment is percent-decoded on its own (so "%2F" cannot forge a
 * segment boundary; a decoded '/' is refused outright because names end up in etcd keys), and the
 * segments are then read left to right the way NewRequestInfo does: prefix, group, version,
 * "watch", "tenants/{t}" unless followed by a tenant subresource, "namespaces/{ns}" unless
 * followed by a namespace subresource, then resource[/name[/subresource]].
 *
 * A single trailing '/' is tolerated (upstream trims it); any other empty segment is refused. */
#include <stdlib.h>
#include <string.h>
#include "ursa/buf.h"
#include "ursa/errors.h"
#include "ursa/path.h"
#include "ursa/xalloc.h"

#define PATH_MAX_BYTES 4096
#define PATH_MAX_SEGMENTS 11 /* apis g v watch tenants t namespaces ns res name sub */
#define SEGMENT_MAX_BYTES 253

struct segments {
	char *v[PATH_MAX_SEGMENTS];
	size_t n;
};

static void segments_release(struct segments *s)
{
	for (size_t i = 0; i < s->n; i++)
		free(s->v[i]);
	s->n = 0;
}

/* Decodes one raw segment; NULL when it is malformed or decodes to something refused. */
static char *decode_segment(struct sv raw)
{
	struct buf out = BUF_INIT;
	for (size_t i = 0; i < raw.len; i++) {
		char c = raw.ptr[i];
		if (c == '%') {
			int hi = i + 2 < raw.len ? hex_digit(raw.ptr[i + 1]) : -1;
			int lo = hi >= 0 ? hex_digit(raw.ptr[i + 2]) : -1;
			if (lo < 0)
				goto bad;
			c = (char)(hi << 4 | lo);
			i += 2;
			if (c == '\0' || c == '/')
				goto bad;
		}
		buf_addch(&out, c);
	}
	if (out.len == 0 || out.len > SEGMENT_MAX_BYTES || strcmp(out.ptr, ".") == 0 || strcmp(out.ptr, "..") == 0)
		goto bad;
	return buf_detach(&out, NULL);
bad:
	buf_release(&out);
	return NULL;
}

static int split_path(const char *path, struct segments *ret)
{
	size_t len = strlen(path);
	if (path[0] != '/' || len > PATH_MAX_BYTES)
		return E_NOT_FOUND;
	if (len > 1 && path[len - 1] == '/')
		len--;
	ret->n = 0;
	for (size_t start = 1; start <= len;) {
		const char *end = memchr(path + start, '/', len - start);
		size_t seglen = end ? (size_t)(end - (path + start)) : len - start;
		char *seg;
		if (ret->n == PATH_MAX_SEGMENTS || !(seg = decode_segment((struct sv){ path + start, seglen }))) {
			segments_release(ret);
			return E_NOT_FOUND;
		}
		ret->v[ret->n++] = seg;
		start += seglen + 1;
	}
	return ret->n ? 0 : E_NOT_FOUND;
}

static bool is_subresource_of_scope(const char *s)
{
	return strcmp(s, "status") == 0 || strcmp(s, "finalize") == 0;
}

/* Moves segment i of segs into *slot (so segments_release will not free it). */
static void take(struct segments *segs, size_t i, char **slot)
{
	*slot = segs->v[i];
	segs->v[i] = NULL;
}

/* Reads the resource part: [watch/][tenants/{t}/][namespaces/{ns}/]{res}[/{name}[/{sub}]]. */
static int parse_resource(struct segments *segs, size_t i, struct path_info *p)
{
	size_t n = segs->n;
	if (strcmp(segs->v[i], "watch") == 0) {
		p->watch_prefix = true;
		if (++i == n)
			return E_NOT_FOUND;
	}
	if (strcmp(segs->v[i], "tenants") == 0 && n - i > 2 && !is_subresource_of_scope(segs->v[i + 2])) {
		take(segs, i + 1, &p->tenant);
		i += 2;
	}
	if (strcmp(segs->v[i], "namespaces") == 0 && n - i > 2 && !is_subresource_of_scope(segs->v[i + 2])) {
		take(segs, i + 1, &p->namespace_);
		i += 2;
	}
	if (n - i > 3)
		return E_NOT_FOUND;
	take(segs, i, &p->resource);
	if (n - i > 1)
		take(segs, i + 1, &p->name);
	if (n - i > 2)
		take(segs, i + 2, &p->subresource);
	p->kind = PATH_RESOURCE;
	return 0;
}

/* Reads /api[/{v}] or /apis[/{g}[/{v}]]; returns the index of the first segment after them,
 * or segs->n when the path is discovery. */
static size_t parse_prefix(struct segments *segs, struct path_info *p)
{
	size_t i = 1;
	p->legacy_core = strcmp(segs->v[0], "api") == 0;
	p->kind = PATH_DISCOVERY_ROOT;
	if (p->legacy_core) {
		p->group = xstrdup("");
	} else if (segs->n > 1) {
		take(segs, i++, &p->group);
		p->kind = PATH_DISCOVERY_GROUP;
	}
	if (segs->n > i) {
		take(segs, i++, &p->version);
		p->kind = PATH_DISCOVERY_GV;
	}
	if (!p->group)
		p->group = xstrdup("");
	return i;
}

int path_parse(const char *path, struct path_info *ret)
{
	struct segments segs = { .n = 0 };
	struct path_info p = { 0 };
	int rc;
	if (!path || (rc = split_path(path, &segs)))
		return E_NOT_FOUND;
	if (strcmp(segs.v[0], "api") != 0 && strcmp(segs.v[0], "apis") != 0) {
		rc = E_NOT_FOUND;
		goto out;
	}
	size_t i = parse_prefix(&segs, &p);
	if (i < segs.n && (rc = parse_resource(&segs, i, &p)))
		goto out;
	*ret = p;
	memset(&p, 0, sizeof(p));
	rc = 0;
out:
	path_info_release(&p);
	segments_release(&segs);
	return rc;
}

void path_info_release(struct path_info *p)
{
	if (!p)
		return;
	free(p->group);
	free(p->version);
	free(p->tenant);
	free(p->namespace_);
	free(p->resource);
	free(p->name);
	free(p->subresource);
	memset(p, 0, sizeof(*p));
}

char *path_client_prefix(const char *path, const char **ret_rest)
{
	*ret_rest = path;
	if (strncmp(path, "/tenants/", 9) != 0)
		return NULL;
	const char *t = path + 9, *rest = strchr(t, '/');
	size_t n = rest ? (size_t)(rest - t) : strlen(t);
	if (n == 0)
		return NULL;
	*ret_rest = rest ? rest : "/";
	return xstrndup(t, n);
}
