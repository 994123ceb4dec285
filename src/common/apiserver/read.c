/* GET and LIST: single objects from etcd; lists from the watch cache (resourceVersion 0 /
 * NotOlderThan, and consistent ones with their pages once the cache has caught up with etcd) or
 * from etcd (exact reads, and what the cache cannot serve). Readers of etcd skip the caches'
 * progress markers (wcache_marker_key). */
#include "internal.h"
#include "ursa/crd.h"
#include "ursa/base64.h"
#include "ursa/jsonutil.h"
#include "ursa/timeutil.h"
#include "ursa/xalloc.h"
#include <stdlib.h>
#include <string.h>

#define CACHE_WAIT_MS 3000
/* A consistent list waits this long for the cache to reach etcd's revision, then reads etcd. */
#define CONSISTENT_WAIT_MS 1000

static bool is_marker(const struct req *q, const char *key)
{
	return wcache_marker_key(q->res->prefix, key);
}

int parse_filter(struct req *q, struct req_filter *f)
{
	return parse_filter_text(q, http_query(q->http, "labelSelector"), http_query(q->http, "fieldSelector"), f);
}

int parse_filter_text(struct req *q, const char *label_selector, const char *field_selector, struct req_filter *f)
{
	struct buf err = BUF_INIT;
	const struct api_strategy *st = q->res->r->strategy;
	int rc = label_selector_parse(label_selector, &f->labels, &err);
	if (rc == 0)
		rc = field_selector_parse(field_selector, &f->fields, &err);
	if (rc == 0)
		rc = field_selector_check(f->fields, st->fields, st->nfields, &err);
	if (rc < 0)
		reply_status(q, E_BAD_REQUEST, "%s", buf_cstr(&err));
	buf_release(&err);
	return rc < 0 ? -1 : 0;
}

void req_filter_release(struct req_filter *f)
{
	label_selector_free(f->labels);
	field_selector_free(f->fields);
	f->labels = NULL;
	f->fields = NULL;
}

const char *cobj_field_value(const struct served *sv, const struct cobj *o, const char *label)
{
	if (strcmp(label, "metadata.name") == 0)
		return o->name;
	if (strcmp(label, "metadata.namespace") == 0)
		return o->ns;
	const struct api_strategy *st = sv->r->strategy;
	for (size_t i = 0; i < st->nfields && i < o->nfields; i++)
		if (strcmp(st->fields[i].label, label) == 0)
			return o->fields[i] ? o->fields[i] : "";
	return "";
}

struct getter_ctx {
	const struct served *sv;
	const struct cobj *o;
};

static const char *get_field(void *ud, const char *label)
{
	struct getter_ctx *g = ud;
	return cobj_field_value(g->sv, g->o, label);
}

bool filter_matches_cobj(const struct served *sv, const struct req_filter *f, const struct cobj *o)
{
	if (f->labels && !label_selector_matches(f->labels, o->labels))
		return false;
	struct getter_ctx g = { sv, o };
	return !f->fields || field_selector_matches(f->fields, get_field, &g);
}

void handle_get(struct req *q)
{
	char *key = store_key(q->res, q->tenant, q->ns, q->path.name);
	json_t *obj = NULL;
	int rc = is_marker(q, key) ? E_NOT_FOUND : store_get(q->s, key, &obj, NULL);
	free(key);
	if (rc == E_NOT_FOUND) {
		reply_not_found(q, q->path.name);
		return;
	}
	if (rc < 0) {
		reply_status(q, rc, rc == E_UNAVAILABLE ? "storage is unavailable; please retry" : "storage error");
		return;
	}
	if (q->table) {
		json_t *t = table_new(q->res->r, &obj, 1, true);
		table_set_list_meta(t, 0, NULL, 0);
		json_object_del(json_object_get(t, "metadata"), "resourceVersion");
		reply_json(q, 200, t);
		json_decref(t);
	} else {
		if (crd_rewrites(q->res))
			crd_set_api_version(q->res, obj, false);
		reply_json(q, 200, obj);
	}
	json_decref(obj);
}

/* Continue tokens: base64url of {"v":"meta.k8s.io/v1","rv":R,"start":"<key suffix>"}, R the
 * revision as clients see it (rv_show: a token of another partition, a moved tenant's, is not
 * taken for this one's). The suffix is relative to the collection prefix, so a token cannot
 * reach outside it. */
static char *continue_encode(int64_t rv, const char *start_suffix)
{
	json_t *t = json_pack("{s:s,s:I,s:s}", "v", "meta.k8s.io/v1", "rv", (json_int_t)rv_show(rv), "start",
			      start_suffix);
	char *s = json_dumps(t, JSON_COMPACT);
	json_decref(t);
	struct buf out = BUF_INIT;
	base64_encode(&out, s, strlen(s), BASE64_URL | BASE64_NOPAD); /* Go's RawURLEncoding */
	free(s);
	return buf_detach(&out, NULL);
}

/* A key suffix as this server writes them: '/'-separated non-empty segments, none "." or "..". */
static bool valid_key_suffix(const char *s)
{
	if (!*s)
		return false;
	for (const char *p = s; *p;) {
		size_t n = strcspn(p, "/");
		if (n == 0 || (n == 1 && p[0] == '.') || (n == 2 && p[0] == '.' && p[1] == '.'))
			return false;
		p += n;
		if (*p == '/' && !*++p)
			return false;
	}
	return true;
}

/* 0 with the token's etcd revision and key suffix (new string); -1 when it is malformed; -2 when
 * it is another partition's (expired here). */
static int continue_decode(const char *tok, int64_t *ret_rv, char **ret_suffix)
{
	size_t n = strlen(tok);
	if (n == 0 || n > 4096)
		return -1;
	struct buf raw = BUF_INIT;
	int rc = -1;
	json_t *j = NULL;
	if (base64_decode(&raw, tok, n, BASE64_URL | BASE64_NOPAD) == 0)
		j = json_loadb(raw.ptr, raw.len, 0, NULL);
	const char *start = json_str(j, "start");
	json_t *rv = json_object_get(j, "rv");
	if (j && start && json_is_integer(rv) && json_integer_value(rv) > 0 && valid_key_suffix(start) &&
	    json_str(j, "v") && strcmp(json_str(j, "v"), "meta.k8s.io/v1") == 0) {
		rc = rv_resolve(json_integer_value(rv), 0, 0, ret_rv) == RV_HERE ? 0 : -2;
		*ret_suffix = rc == 0 ? xstrdup(start) : NULL;
	}
	json_decref(j);
	buf_release(&raw);
	return rc;
}

struct list_result {
	struct cobj **objs;
	size_t n, cap;
	int64_t rv;
	char *cont;
	long long remaining;
};

static void result_push(struct list_result *lr, struct cobj *o)
{
	if (lr->n == lr->cap) {
		lr->cap = lr->cap ? lr->cap * 2 : 64;
		lr->objs = xrealloc(lr->objs, lr->cap * sizeof(*lr->objs));
	}
	lr->objs[lr->n++] = o;
}

static void result_release(struct list_result *lr)
{
	for (size_t i = 0; i < lr->n; i++)
		cobj_unref(lr->objs[i]);
	free(lr->objs);
	free(lr->cont);
}

static const char *filter_name(const struct req_filter *f)
{
	return f->fields ? field_selector_exact(f->fields, "metadata.name") : NULL;
}

static int list_from_cache(struct req *q, const struct req_filter *f, int64_t min_rv, struct list_result *lr)
{
	if (min_rv > 0 && wcache_wait_for(q->res->cache, min_rv, CACHE_WAIT_MS) < 0) {
		reply_status(q, E_TIMEOUT, "Too large resource version: %lld, current: %lld", (long long)rv_show(min_rv),
			     (long long)rv_show(wcache_revision(q->res->cache)));
		return -1;
	}
	bool all = strcmp(q->tenant, TENANT_ALL) == 0 || q->res->r->scope == SCOPE_CLUSTER;
	struct wfilter wf = {
		.tenant = all ? NULL : q->tenant, .ns = q->ns, .name = filter_name(f),
		.labels = f->labels, .fields = f->fields,
	};
	int rc = wcache_list(q->res->cache, &wf, &lr->objs, &lr->n, &lr->rv);
	if (rc < 0) {
		reply_status(q, E_UNAVAILABLE, "the watch cache is not ready yet; please retry");
		return -1;
	}
	lr->cap = lr->n;
	return 0;
}

/* 1 when the cache's progress marker, existing at rev, is among the keys after key in the range
 * (etcd's count includes it). Custom resources' marker is outside their kinds' ranges. */
static long long marker_after(const struct req *q, const char *key, const char *end, int64_t rev)
{
	struct wcache *c = q->res->cache;
	int64_t created = c ? wcache_marker_created(c) : 0;
	if (!created || created > rev)
		return 0;
	char *m = xasprintf("%s" WCACHE_MARKER, q->res->prefix);
	long long in = strcmp(m, key) > 0 && (!*end || strcmp(m, end) < 0);
	free(m);
	return in;
}

/* Pages through etcd from start (skipping the key skip_key, where a previous page ended),
 * filtering, until limit matching objects are found or the range ends. */
static int list_from_etcd(struct req *q, const struct req_filter *f, int64_t exact_rv, long long limit,
			  const char *cont, struct list_result *lr)
{
	char *prefix = store_collection_prefix(q->res, q->tenant, q->ns);
	char *end = etcd_prefix_end(prefix);
	char *start = NULL, *suffix = NULL, *skip = NULL;
	size_t plen = strlen(prefix);
	int64_t rev = exact_rv;
	int rc = 0;
	if (cont) {
		int drc = continue_decode(cont, &rev, &suffix);
		if (drc == -2)
			reply_status(q, E_GONE, "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter.");
		else if (drc < 0)
			reply_status(q, E_BAD_REQUEST, "continue key is not valid: the token is malformed");
		if (drc < 0) {
			rc = -1;
			goto out;
		}
		start = xasprintf("%s%s", prefix, suffix);
		skip = xstrdup(start);
	} else {
		start = xstrdup(prefix);
	}
	for (;;) {
		struct etcd_range_result rr = { 0 };
		long long want = limit ? limit - (long long)lr->n + 1 : 0;
		int64_t t0 = mono_us();
		rc = etcd_range(q->s->etcd, start, end, rev, want ? want + 1 : 0, false, &rr);
		metrics_etcd(q->s->metrics, "list", mono_us() - t0);
		if (rc == E_GONE) {
			if (cont)
				reply_status(q, E_GONE, "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter.");
			else
				reply_status(q, E_GONE, "too old resource version: %lld", (long long)rv_show(rev));
			rc = -1;
			goto out;
		}
		if (rc < 0) {
			reply_status(q, rc, rc == E_UNAVAILABLE ? "storage is unavailable; please retry" : "storage error");
			rc = -1;
			goto out;
		}
		if (!rev)
			rev = rr.revision;
		long long seen = 0;
		for (size_t i = 0; i < rr.n && !lr->cont; i++) {
			const struct etcd_kv *kv = &rr.kvs[i];
			if (skip && strcmp(kv->key, skip) == 0)
				continue;
			seen++;
			if (is_marker(q, kv->key))
				continue;
			if (limit && (long long)lr->n == limit) {
				lr->cont = continue_encode(rev, lr->objs[lr->n - 1]->key + plen);
				if (label_selector_empty(f->labels) && field_selector_empty(f->fields))
					lr->remaining = rr.count - (long long)i - marker_after(q, kv->key, end, rev);
				break;
			}
			struct cobj *o = cobj_new(q->res->r, kv->key, kv->value, kv->value_len, kv->mod_rev);
			if (o && filter_matches_cobj(q->res, f, o))
				result_push(lr, o);
			else
				cobj_unref(o);
		}
		bool stop = lr->cont || !rr.more || seen == 0;
		if (!stop) {
			free(start);
			free(skip);
			start = xstrdup(rr.kvs[rr.n - 1].key);
			skip = xstrdup(start);
		}
		etcd_range_result_release(&rr);
		if (stop)
			break;
	}
	lr->rv = rev;
out:
	free(prefix);
	free(end);
	free(start);
	free(skip);
	free(suffix);
	return rc;
}

/* Consistent lists from the watch cache (as upstream since 1.31). A list with resourceVersion
 * unset must show a state at least as new as etcd's when the request came: read etcd's current
 * revision (the header of a one-key range; etcd_current_revision counts the whole keyspace) and
 * wait until the cache has applied it, which a quiet kind's cache proves with its progress
 * marker (wcache_wait_current). Pages after the first (continue tokens, from here or from etcd)
 * are served at the token's revision while the cache's ring still covers it.
 * 1: served into lr; 0: the cache cannot serve it (the caller reads etcd); never replies. */
static int list_consistent_from_cache(struct req *q, const struct req_filter *f, long long limit, const char *cont,
				      struct list_result *lr)
{
	struct wcache *c = q->res->cache;
	if (!c || !wcache_ready(c))
		return 0;
	char *prefix = store_collection_prefix(q->res, q->tenant, q->ns);
	char *after = NULL, *suffix = NULL;
	int64_t at = 0;
	int rc = 0;
	if (cont) {
		if (continue_decode(cont, &at, &suffix) < 0)
			goto out; /* list_from_etcd says why */
		after = xasprintf("%s%s", prefix, suffix);
	} else {
		struct etcd_range_result rr;
		int64_t t0 = mono_us();
		int erc = etcd_range(q->s->etcd, prefix, NULL, 0, 1, true, &rr);
		metrics_etcd(q->s->metrics, "revision", mono_us() - t0);
		if (erc != 0)
			goto out;
		int64_t cur = rr.revision;
		etcd_range_result_release(&rr);
		if (wcache_wait_current(c, cur, CONSISTENT_WAIT_MS) != 0)
			goto out;
	}
	bool all = strcmp(q->tenant, TENANT_ALL) == 0 || q->res->r->scope == SCOPE_CLUSTER;
	struct wfilter wf = {
		.tenant = all ? NULL : q->tenant, .ns = q->ns, .name = filter_name(f),
		.labels = f->labels, .fields = f->fields,
	};
	if (wcache_list_page(c, &wf, after, at, (size_t)limit, &lr->objs, &lr->n, &lr->rv) != 0)
		goto out;
	lr->cap = lr->n;
	if (limit && (long long)lr->n > limit) {
		while ((long long)lr->n > limit)
			cobj_unref(lr->objs[--lr->n]);
		lr->cont = continue_encode(lr->rv, lr->objs[lr->n - 1]->key + strlen(prefix));
	}
	rc = 1;
out:
	free(prefix);
	free(after);
	free(suffix);
	return rc;
}

static void reply_list(struct req *q, struct list_result *lr)
{
	if (q->table) {
		struct buf t = BUF_INIT;
		table_list_text(q->res->r, lr->objs, lr->n, lr->rv, lr->cont, lr->remaining, &t);
		reply_buf(q, 200, &t);
		return;
	}
	struct buf b = BUF_INIT, av = BUF_INIT;
	size_t total = 256;
	for (size_t i = 0; i < lr->n; i++)
		total += lr->objs[i]->json_len + 1;
	buf_grow(&b, total);
	api_version_of(q->res->r, &av);
	buf_addf(&b, "{\"kind\":\"%sList\",\"apiVersion\":\"%s\",\"metadata\":{\"resourceVersion\":\"%lld\"",
		 q->res->r->kind, buf_cstr(&av), (long long)rv_show(lr->rv));
	if (lr->cont)
		buf_addf(&b, ",\"continue\":\"%s\"", lr->cont);
	if (lr->remaining > 0)
		buf_addf(&b, ",\"remainingItemCount\":%lld", lr->remaining);
	buf_adds(&b, "},\"items\":[");
	for (size_t i = 0; i < lr->n; i++) {
		if (i)
			buf_addch(&b, ',');
		crd_object_text(q->res, lr->objs[i]->json, lr->objs[i]->json_len, &b);
	}
	buf_adds(&b, "]}");
	reply_buf(q, 200, &b);
	buf_release(&av);
}

void handle_list(struct req *q)
{
	struct req_filter f = { 0 };
	struct list_result lr = { 0 };
	if (parse_filter(q, &f) < 0)
		goto out;
	const char *rvs = http_query(q->http, "resourceVersion");
	const char *match = http_query(q->http, "resourceVersionMatch");
	const char *cont = http_query(q->http, "continue");
	const char *lim = http_query(q->http, "limit");
	long long limit = 0, rv = -1;
	if (lim && *lim && (parse_int64(lim, &limit) < 0 || limit < 0)) {
		reply_status(q, E_BAD_REQUEST, "limit must be a non-negative integer");
		goto out;
	}
	if (limit > MAX_LIST_LIMIT)
		limit = MAX_LIST_LIMIT;
	if (rvs && *rvs && (parse_int64(rvs, &rv) < 0 || rv < 0)) {
		reply_status(q, E_BAD_REQUEST, "resourceVersion must be a non-negative integer");
		goto out;
	}
	if (match && *match && strcmp(match, "NotOlderThan") != 0 && strcmp(match, "Exact") != 0) {
		reply_status(q, E_BAD_REQUEST, "resourceVersionMatch must be NotOlderThan or Exact");
		goto out;
	}
	if (cont && *cont && rv > 0) {
		reply_status(q, E_BAD_REQUEST, "specifying resource version is not allowed when using continue");
		goto out;
	}
	bool exact = (match && strcmp(match, "Exact") == 0) || (rv > 0 && limit > 0 && !match);
	int64_t shown = rv, at;
	switch (req_resolve_rv(q, shown, &at)) {
	case RV_HERE:
	case RV_CAUGHT_UP: /* the tenant here at the move's revision is the source at the client's */
		rv = at;
		break;
	case RV_ELSEWHERE: /* another partition's, older than the tenant's move here */
		if (exact) {
			reply_status(q, E_GONE, "too old resource version: %lld", (long long)shown);
			goto out;
		}
		rv = 0; /* anything here is newer */
		break;
	}
	bool from_cache = !(cont && *cont) && rv >= 0 && !exact;
	bool consistent = !(cont && *cont) && rv < 0;
	int rc;
	if (from_cache)
		rc = list_from_cache(q, &f, rv, &lr);
	else if ((consistent || (cont && *cont)) &&
		 list_consistent_from_cache(q, &f, limit, cont && *cont ? cont : NULL, &lr))
		rc = 0;
	else
		rc = list_from_etcd(q, &f, exact ? rv : 0, limit, cont && *cont ? cont : NULL, &lr);
	if (rc == 0)
		reply_list(q, &lr);
out:
	result_release(&lr);
	req_filter_release(&f);
}
