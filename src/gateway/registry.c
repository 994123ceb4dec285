/* The gateway's view of the region, kept in memory and current through a watch on the
 * gateway's etcd:
 *   <prefix>/partitions/<id>  {"kind":"tp"|"rm","endpoints":["https://..."],"zone":"az-1",
 *                             "draining":true (optional: ursactl partition drain; no new tenants)}
 *   <prefix>/tenants/<name>   {"partition":"tp-1","state":"pending"|"ready","since":<ms>}
 *                             and after a live move of the tenant also "moved":{"from":"tp-1",
 *                             "fromRevision":F,"toRevision":S,"move":"<id>"} (struct tenant_moved)
 * plus a node -> resource manager map learned by listing nodes (see reconcile.c).
 *
 * Sized for a million tenants: the first load reads the prefix in pages at one revision (a
 * consistent snapshot) and the watch starts at the revision after it; tenant records are
 * decoded without a JSON tree and stored as one map entry each (name inline, the partition id
 * interned: a million tenants share a handful of partitions). */
#include <stdlib.h>
#include <string.h>
#include "gw.h"
#include "ursa/errors.h"
#include "ursa/etcd.h"
#include "ursa/jsonutil.h"
#include "ursa/timeutil.h"
#include "ursa/xalloc.h"

#define MAX_ENDPOINTS 16
#define MAX_PARTITION_ID 253
#define LOAD_ATTEMPTS 4 /* a load whose snapshot revision is compacted meanwhile starts over */

/* The tenant side of the registry. Replaced whole by a reload. */
struct tmap {
	/* name -> entry: val is the partition id's entry in pnames, num the record's mod_revision */
	struct strmap tenants;
	/* name -> entry: num is since_ms, for records in state pending only (creations in flight) */
	struct strmap pending;
	/* partition id (interned) -> entry: num counts the tenants on it, val is the partition of
	 * that id in the registry's partition map (borrowed) or NULL. Entries live as long as the
	 * tmap, so tenant entries may point at them. */
	struct strmap pnames;
	/* name -> struct tenant_moved * (owned), for records with a "moved" only (moved tenants:
	 * the million records without one cost nothing more) */
	struct strmap moved;
	/* names of tenants with a move in progress (<prefix>/moves/<name>, ursactl tenant move) */
	struct strmap moving;
};

struct registry {
	struct etcd *etcd;
	char *prefix, *tprefix, *pprefix, *mprefix;
	size_t tplen, pplen, mplen;
	pthread_rwlock_t lock;
	struct tmap t;
	struct strmap partitions; /* id -> struct partition (one ref) */
	struct strmap nodes;      /* node -> rm id (char *) */
	struct etcd_watch *watch;
	atomic_bool loaded, need_resync;
	pthread_mutex_t resync_lock;
	registry_range_fn range;
	void *range_ud;
	int64_t page;
	struct registry_load_stats stats;
	registry_change_fn on_change;
	void *on_change_ud;
};

void partition_unref(struct partition *p)
{
	if (!p || atomic_fetch_sub(&p->refs, 1) != 1)
		return;
	for (size_t i = 0; i < p->nendpoints; i++)
		free(p->endpoints[i]);
	free(p->endpoints);
	free(p->id);
	free(p->zone);
	free(p);
}

static void partition_unref_v(void *v)
{
	partition_unref(v);
}

struct partition *partition_parse(const char *id, const char *json, size_t len)
{
	json_t *j = json_parse_limited(json, len, 8, NULL);
	const char *kind = json_str(j, "kind");
	json_t *eps = json_is_object(j) ? json_object_get(j, "endpoints") : NULL;
	struct partition *p = NULL;
	if (!kind || (strcmp(kind, "tp") != 0 && strcmp(kind, "rm") != 0) || !json_is_array(eps) ||
	    json_array_size(eps) == 0 || json_array_size(eps) > MAX_ENDPOINTS)
		goto out;
	p = xcalloc(1, sizeof(*p));
	atomic_init(&p->refs, 1);
	p->id = xstrdup(id);
	p->is_rm = strcmp(kind, "rm") == 0;
	p->zone = json_str(j, "zone") ? xstrdup(json_str(j, "zone")) : NULL;
	p->draining = json_is_true(json_object_get(j, "draining"));
	p->endpoints = xcalloc(json_array_size(eps), sizeof(char *));
	size_t i;
	json_t *e;
	json_array_foreach(eps, i, e) {
		if (json_is_string(e) && (strncmp(json_string_value(e), "http://", 7) == 0 ||
					  strncmp(json_string_value(e), "https://", 8) == 0))
			p->endpoints[p->nendpoints++] = xstrdup(json_string_value(e));
	}
	if (!p->nendpoints) {
		partition_unref(p);
		p = NULL;
	}
out:
	json_decref(j);
	return p;
}

static void moved_release(struct tenant_moved *m)
{
	free(m->from);
	free(m->move);
	*m = (struct tenant_moved){ 0 };
}

static void moved_free(void *v)
{
	if (v) {
		moved_release(v);
		free(v);
	}
}

void tenant_rec_release(struct tenant_rec *t)
{
	free(t->partition);
	t->partition = NULL;
	moved_release(&t->moved);
}

void tenant_rec_free(void *v)
{
	if (v) {
		tenant_rec_release(v);
		free(v);
	}
}

/* --- tenant record decoding ------------------------------------------------------------------ */

static const char *skip_ws(const char *p, const char *end)
{
	while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r'))
		p++;
	return p;
}

/* A string without escapes at p (on the opening quote): its contents, and p after it. NULL
 * when it has escapes or no end (the caller falls back to the full parser). */
static const char *plain_string(const char *p, const char *end, struct sv *ret)
{
	const char *s = ++p;
	while (p < end && *p != '"') {
		if (*p == '\\' || (unsigned char)*p < 0x20 || (unsigned char)*p >= 0x80) /* UTF-8: jansson checks */
			return NULL;
		p++;
	}
	if (p >= end)
		return NULL;
	*ret = (struct sv){ s, (size_t)(p - s) };
	return p + 1;
}

/* A plain integer or literal at p: its text, and p after it; NULL for anything else. */
static const char *plain_scalar(const char *p, const char *end, struct sv *ret)
{
	const char *s = p;
	if (p < end && *p == '-')
		p++;
	while (p < end && ((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'z')))
		p++;
	if (p == s)
		return NULL;
	/* A leading zero before more digits is not JSON: let the full parser refuse it. */
	const char *d = *s == '-' ? s + 1 : s;
	if (p - d > 1 && d[0] == '0')
		return NULL;
	*ret = (struct sv){ s, (size_t)(p - s) };
	return p;
}

/* One member of a record: key k, value v (a plain string when str, else an integer n or a
 * literal). nested: a member of "moved". */
static void scan_member(struct tenant_val *ret, bool nested, struct sv k, struct sv v, bool str, bool literal,
			long long n)
{
	bool num = !str && !literal;
	if (nested) {
		if (sv_eq(k, "from"))
			ret->moved_from = str ? v : (struct sv){ 0 };
		else if (sv_eq(k, "move"))
			ret->move_id = str ? v : (struct sv){ 0 };
		else if (sv_eq(k, "fromRevision"))
			ret->moved_from_rev = num ? n : 0;
		else if (sv_eq(k, "toRevision"))
			ret->moved_to_rev = num ? n : 0;
	} else if (sv_eq(k, "partition")) {
		ret->partition = str ? v : (struct sv){ 0 };
	} else if (sv_eq(k, "state")) {
		ret->pending = str && sv_eq(v, "pending");
	} else if (sv_eq(k, "since")) {
		ret->since_ms = num ? n : 0;
	}
}

/* Decodes an object of plain strings, integers and literals at *pp (its '{') into ret, and
 * moves *pp past its '}'; at the top (!nested) a member "moved" may be such an object itself.
 * 0 on success, -1 when the text needs the full parser (escapes, other nesting, fractions,
 * anything unexpected). */
static int scan_object(const char **pp, const char *end, struct tenant_val *ret, bool nested)
{
	const char *p = *pp;
	if (p >= end || *p++ != '{')
		return -1;
	p = skip_ws(p, end);
	if (p < end && *p == '}') {
		*pp = p + 1;
		return 0;
	}
	struct sv keys[16]; /* a repeated key is refused, as jansson does; more keys: jansson's job */
	size_t nkeys = 0;
	for (;;) {
		struct sv k, v;
		if (p >= end || *p != '"' || !(p = plain_string(p, end, &k)) || nkeys == 16)
			return -1;
		for (size_t i = 0; i < nkeys; i++)
			if (keys[i].len == k.len && memcmp(keys[i].ptr, k.ptr, k.len) == 0)
				return -1;
		keys[nkeys++] = k;
		p = skip_ws(p, end);
		if (p >= end || *p++ != ':')
			return -1;
		p = skip_ws(p, end);
		if (!nested && p < end && *p == '{') {
			if (!sv_eq(k, "moved") || scan_object(&p, end, ret, true) != 0)
				return -1;
			ret->has_moved = true;
		} else {
			bool str = p < end && *p == '"';
			if (!(p = str ? plain_string(p, end, &v) : plain_scalar(p, end, &v)))
				return -1;
			long long n = 0;
			bool literal = !str && (sv_eq(v, "true") || sv_eq(v, "false") || sv_eq(v, "null"));
			if (!str && !literal && parse_int64_sv(v, &n) != 0)
				return -1; /* floats, big numbers, junk: left to jansson */
			scan_member(ret, nested, k, v, str, literal, n);
		}
		p = skip_ws(p, end);
		if (p < end && *p == ',') {
			p = skip_ws(p + 1, end);
			continue;
		}
		if (p < end && *p == '}') {
			*pp = p + 1;
			return 0;
		}
		return -1;
	}
}

static int tenant_val_scan(const char *p, size_t len, struct tenant_val *ret)
{
	const char *end = p + len;
	*ret = (struct tenant_val){ 0 };
	p = skip_ws(p, end);
	if (scan_object(&p, end, ret, false) != 0)
		return -1;
	return skip_ws(p, end) == end ? 0 : -1;
}

/* A string member of j appended to scratch with its NUL: its offset there in *ret_off and its
 * length returned (0 when it is missing, not a string, empty or holds a NUL: \u0000). */
static size_t json_str_into(json_t *j, const char *key, struct buf *scratch, size_t *ret_off)
{
	json_t *s = json_object_get(j, key);
	size_t n = json_string_length(s);
	if (!json_is_string(s) || !n || strlen(json_string_value(s)) != n)
		return 0;
	*ret_off = scratch->len;
	buf_add(scratch, json_string_value(s), n);
	buf_addch(scratch, '\0');
	return n;
}

/* The same record through jansson (what the fast path cannot take). The views point into
 * scratch. */
static int tenant_val_json(const char *json, size_t len, struct tenant_val *ret, struct buf *scratch)
{
	json_t *j = json_parse_limited(json, len, 4, NULL);
	const char *state = json_str(j, "state");
	size_t part_off = 0, from_off = 0, id_off = 0, part_len, from_len = 0, id_len = 0;
	int rc = -1;
	*ret = (struct tenant_val){ 0 };
	buf_reset(scratch);
	part_len = json_str_into(j, "partition", scratch, &part_off);
	if (part_len) {
		ret->pending = state && strcmp(state, "pending") == 0;
		ret->since_ms = json_integer_value(json_object_get(j, "since"));
		json_t *m = json_object_get(j, "moved");
		if (json_is_object(m)) {
			ret->has_moved = true;
			from_len = json_str_into(m, "from", scratch, &from_off);
			id_len = json_str_into(m, "move", scratch, &id_off);
			ret->moved_from_rev = json_integer_value(json_object_get(m, "fromRevision"));
			ret->moved_to_rev = json_integer_value(json_object_get(m, "toRevision"));
		}
		/* scratch is complete: views into it now stay valid */
		ret->partition = (struct sv){ scratch->ptr + part_off, part_len };
		if (from_len)
			ret->moved_from = (struct sv){ scratch->ptr + from_off, from_len };
		if (id_len)
			ret->move_id = (struct sv){ scratch->ptr + id_off, id_len };
		rc = 0;
	}
	json_decref(j);
	return rc;
}

int tenant_val_parse(const char *json, size_t len, struct tenant_val *ret, struct buf *scratch)
{
	if (tenant_val_scan(json, len, ret) != 0 && tenant_val_json(json, len, ret, scratch) != 0)
		return -1;
	if (!ret->partition.len || ret->partition.len > MAX_PARTITION_ID ||
	    memchr(ret->partition.ptr, '\0', ret->partition.len))
		return -1;
	/* A "moved" the bridge could not use is no "moved" (the placement itself stands). */
	if (ret->has_moved && (!ret->moved_from.len || ret->moved_from.len > MAX_PARTITION_ID ||
			       memchr(ret->moved_from.ptr, '\0', ret->moved_from.len) || ret->moved_to_rev <= 0 ||
			       ret->moved_from_rev < 0 || ret->move_id.len > MAX_PARTITION_ID))
		ret->has_moved = false;
	if (!ret->has_moved) {
		ret->moved_from = ret->move_id = (struct sv){ 0 };
		ret->moved_from_rev = ret->moved_to_rev = 0;
	}
	return 0;
}

/* --- the maps --------------------------------------------------------------------------------- */

static void tmap_init(struct tmap *m)
{
	strmap_init(&m->tenants);
	strmap_init(&m->pending);
	strmap_init(&m->pnames);
	strmap_init(&m->moved);
	strmap_init(&m->moving);
}

static void tmap_release(struct tmap *m)
{
	strmap_release(&m->tenants, NULL);
	strmap_release(&m->pending, NULL);
	strmap_release(&m->pnames, NULL);
	strmap_release(&m->moved, moved_free);
	strmap_release(&m->moving, NULL);
}

/* The interned entry of partition id (NUL-terminated copy in scratch), created if new. */
static struct strmap_ent *intern(struct tmap *m, const struct strmap *partitions, struct sv id, struct buf *scratch)
{
	if (id.ptr != scratch->ptr) {
		buf_reset(scratch);
		buf_add(scratch, id.ptr, id.len);
	}
	bool created;
	struct strmap_ent *pe = strmap_put(&m->pnames, buf_cstr(scratch), &created);
	if (created) {
		struct strmap_ent *p = strmap_get(partitions, pe->key);
		pe->val = p ? p->val : NULL;
	}
	return pe;
}

static void tenant_del(struct tmap *m, const char *name)
{
	struct strmap_ent *e = strmap_get(&m->tenants, name);
	if (!e)
		return;
	((struct strmap_ent *)e->val)->num--;
	strmap_del(&m->tenants, name, NULL);
	strmap_del(&m->pending, name, NULL);
	void *old = NULL;
	if (strmap_del(&m->moved, name, &old))
		moved_free(old);
}

/* Records name -> v at mod_rev. A record older than the one held (the watch delivering a write
 * this gateway applied already, after a newer one) is ignored; mod_rev 0 always applies. */
static void tenant_put(struct tmap *m, const struct strmap *partitions, const char *name, const struct tenant_val *v,
		       int64_t mod_rev, struct buf *scratch)
{
	struct strmap_ent *e = strmap_get(&m->tenants, name);
	if (e && mod_rev && e->num > mod_rev)
		return;
	struct strmap_ent *pe = intern(m, partitions, v->partition, scratch);
	if (!e)
		e = strmap_put(&m->tenants, name, NULL);
	else
		((struct strmap_ent *)e->val)->num--;
	e->val = pe;
	e->num = mod_rev;
	pe->num++;
	if (v->pending)
		strmap_put(&m->pending, name, NULL)->num = v->since_ms;
	else
		strmap_del(&m->pending, name, NULL);
	void *old = NULL;
	if (v->has_moved) {
		struct strmap_ent *me = strmap_put(&m->moved, name, NULL);
		moved_free(me->val);
		struct tenant_moved *mv = xcalloc(1, sizeof(*mv));
		*mv = (struct tenant_moved){ .from = sv_dup(v->moved_from), .from_rev = v->moved_from_rev,
					     .to_rev = v->moved_to_rev, .move = v->move_id.len ? sv_dup(v->move_id) : NULL };
		me->val = mv;
	} else if (m->moved.n && strmap_del(&m->moved, name, &old)) {
		moved_free(old);
	}
}

/* Points every interned partition id at its partition in partitions (or NULL). */
static void relink(struct tmap *m, const struct strmap *partitions)
{
	size_t it;
	for (struct strmap_ent *e = strmap_next(&m->pnames, NULL, &it); e; e = strmap_next(&m->pnames, e, &it)) {
		struct strmap_ent *p = strmap_get(partitions, e->key);
		e->val = p ? p->val : NULL;
	}
}

static void partition_set(struct strmap *partitions, struct tmap *m, const char *id, struct partition *p)
{
	void *old = NULL;
	if (p) {
		struct strmap_ent *e = strmap_put(partitions, id, NULL);
		struct partition *prev = e->val;
		if (prev)
			atomic_store(&p->down, atomic_load(&prev->down));
		partition_unref(prev);
		e->val = p;
	} else if (strmap_del(partitions, id, &old)) {
		partition_unref(old);
	}
	struct strmap_ent *pe = strmap_get(&m->pnames, id);
	if (pe)
		pe->val = p;
}

/* Applies one key to maps m and partitions. value NULL: deleted. */
static void apply_to(struct registry *r, struct tmap *m, struct strmap *partitions, const char *key, const char *value,
		     size_t len, int64_t mod_rev, struct buf *scratch)
{
	if (strncmp(key, r->tprefix, r->tplen) == 0 && key[r->tplen]) {
		const char *name = key + r->tplen;
		struct tenant_val v;
		if (value && tenant_val_parse(value, len, &v, scratch) == 0)
			tenant_put(m, partitions, name, &v, mod_rev, scratch);
		else
			tenant_del(m, name);
	} else if (strncmp(key, r->pprefix, r->pplen) == 0 && key[r->pplen]) {
		const char *id = key + r->pplen;
		partition_set(partitions, m, id, value ? partition_parse(id, value, len) : NULL);
	} else if (strncmp(key, r->mprefix, r->mplen) == 0 && key[r->mplen]) {
		if (value)
			strmap_put(&m->moving, key + r->mplen, NULL);
		else
			strmap_del(&m->moving, key + r->mplen, NULL);
	}
}

/* The change hook for key, when it is a tenant's; the caller holds the write lock. */
static void notify(struct registry *r, const char *key)
{
	if (r->on_change && strncmp(key, r->tprefix, r->tplen) == 0 && key[r->tplen])
		r->on_change(r->on_change_ud, key + r->tplen);
}

/* Applies one key to the live maps; the caller holds the write lock. */
static void apply(struct registry *r, const char *key, const char *value, size_t len, int64_t mod_rev)
{
	struct buf scratch = BUF_INIT;
	apply_to(r, &r->t, &r->partitions, key, value, len, mod_rev, &scratch);
	notify(r, key);
	buf_release(&scratch);
}

void registry_on_tenant_change(struct registry *r, registry_change_fn fn, void *ud)
{
	pthread_rwlock_wrlock(&r->lock);
	r->on_change = fn;
	r->on_change_ud = ud;
	pthread_rwlock_unlock(&r->lock);
}

static void on_events(void *ud, const struct etcd_event *ev, size_t n)
{
	struct registry *r = ud;
	struct buf scratch = BUF_INIT;
	pthread_rwlock_wrlock(&r->lock);
	for (size_t i = 0; i < n; i++) {
		if (ev[i].type == ETCD_EV_PUT)
			apply_to(r, &r->t, &r->partitions, ev[i].kv.key, ev[i].kv.value, ev[i].kv.value_len,
				 ev[i].kv.mod_rev, &scratch);
		else
			apply_to(r, &r->t, &r->partitions, ev[i].kv.key, NULL, 0, 0, &scratch);
		notify(r, ev[i].kv.key);
	}
	pthread_rwlock_unlock(&r->lock);
	buf_release(&scratch);
}

static void on_compacted(void *ud, int64_t rev)
{
	struct registry *r = ud;
	(void)rev;
	atomic_store(&r->need_resync, true);
}

static int etcd_range_fn(void *ud, const char *key, const char *end, int64_t rev, int64_t limit,
			 struct etcd_range_result *ret)
{
	return etcd_range(ud, key, end, rev, limit, false, ret);
}

struct registry *registry_new(struct etcd *e, const char *prefix)
{
	struct registry *r = xcalloc(1, sizeof(*r));
	r->etcd = e;
	r->prefix = xstrdup(prefix);
	r->tprefix = xasprintf("%s/tenants/", prefix);
	r->pprefix = xasprintf("%s/partitions/", prefix);
	r->mprefix = xasprintf("%s/moves/", prefix);
	r->tplen = strlen(r->tprefix);
	r->pplen = strlen(r->pprefix);
	r->mplen = strlen(r->mprefix);
	pthread_rwlock_init(&r->lock, NULL);
	pthread_mutex_init(&r->resync_lock, NULL);
	tmap_init(&r->t);
	strmap_init(&r->partitions);
	strmap_init(&r->nodes);
	r->range = etcd_range_fn;
	r->range_ud = e;
	r->page = REGISTRY_PAGE;
	return r;
}

void registry_set_range(struct registry *r, registry_range_fn fn, void *ud, int64_t page)
{
	r->range = fn;
	r->range_ud = ud;
	r->page = page >= 2 ? page : 2;
}

/* --- loading ---------------------------------------------------------------------------------- */

/* The end of the keys that start with the first k bytes of key (k capped to its length): new
 * string, or a copy of hi when that end is past hi (or does not exist). */
static char *bound_of(const char *key, size_t k, const char *hi)
{
	size_t n = strlen(key);
	char *pre = xstrndup(key, k < n ? k : n);
	char *b = etcd_prefix_end(pre);
	free(pre);
	if (!*b || (*hi && strcmp(b, hi) >= 0)) {
		free(b);
		b = xstrdup(hi);
	}
	return b;
}

static size_t common_prefix(const char *a, const char *b)
{
	size_t i = 0;
	while (a[i] && a[i] == b[i])
		i++;
	return i;
}

/* One pass over the prefix at one revision, into fresh maps. E_GONE when the snapshot revision
 * was compacted between pages.
 *
 * etcd 3.4 walks its whole index from a range's start to its end for every range request, even
 * with a limit (to count), so paging [last key, end of prefix) costs O(keys left) per page and
 * O(n^2 / page) in all. Each page is therefore bounded to the keys sharing the first k bytes of
 * its start key, with k adapted so such a slice holds about one to four pages: deeper when a
 * slice was larger, shallower when it was smaller. Every key is read exactly once: a page
 * either ends its slice (the next starts at the slice's end) or continues at its last key. */
static int load_pass(struct registry *r, struct tmap *m, struct strmap *partitions, int64_t *ret_rev,
		     struct registry_load_stats *st)
{
	char *start = xasprintf("%s/", r->prefix);
	char *hi = etcd_prefix_end(start);
	char *lo = xstrdup(start); /* next key to read */
	bool lo_seen = false;      /* lo was the last key of the page before (skip it) */
	size_t kmin = strlen(start), k = kmin;
	struct buf scratch = BUF_INIT;
	int64_t rev = 0, page = r->page;
	int err = 0;
	for (;;) {
		struct etcd_range_result res = { 0 };
		char *b = bound_of(lo, k, hi);
		err = r->range(r->range_ud, lo, b, rev, page, &res);
		if (err) {
			etcd_range_result_release(&res);
			free(b);
			break;
		}
		st->pages++;
		if (!rev)
			rev = res.revision;
		size_t i = lo_seen && res.n && strcmp(res.kvs[0].key, lo) == 0 ? 1 : 0;
		for (; i < res.n; i++) {
			apply_to(r, m, partitions, res.kvs[i].key, res.kvs[i].value, res.kvs[i].value_len,
				 res.kvs[i].mod_rev, &scratch);
			st->keys++;
		}
		bool more = res.more && res.n >= 2;
		free(lo);
		if (more) {
			/* The slice [lo, b) is larger than a page: continue in it, narrower next time if
			 * it holds many pages (on the first page, start from where its keys differ). */
			lo = xstrdup(res.kvs[res.n - 1].key);
			lo_seen = true;
			if (k == kmin)
				k = common_prefix(res.kvs[0].key, lo) + 1;
			else if (res.count > 4 * page)
				k++;
			free(b);
		} else {
			lo = b;
			lo_seen = false;
			if (res.count < page / 2 && k > kmin)
				k--;
		}
		if (k > strlen(lo))
			k = strlen(lo) > kmin ? strlen(lo) : kmin;
		etcd_range_result_release(&res);
		if (!more && strcmp(lo, hi) == 0)
			break;
	}
	buf_release(&scratch);
	free(start);
	free(hi);
	free(lo);
	*ret_rev = rev;
	return err;
}

/* Carries the circuit state of partitions already known over to their new records. */
static void carry_down(struct strmap *to, const struct strmap *from)
{
	size_t it;
	for (struct strmap_ent *e = strmap_next(to, NULL, &it); e; e = strmap_next(to, e, &it)) {
		struct strmap_ent *o = strmap_get(from, e->key);
		if (o)
			atomic_store(&((struct partition *)e->val)->down,
				     atomic_load(&((struct partition *)o->val)->down));
	}
}

int registry_load(struct registry *r, int64_t *ret_rev)
{
	struct registry_load_stats st = { 0 };
	int64_t t0 = mono_us();
	int err = E_GONE;
	for (int attempt = 0; attempt < LOAD_ATTEMPTS && err == E_GONE; attempt++) {
		struct tmap m;
		struct strmap partitions;
		int64_t rev = 0;
		tmap_init(&m);
		strmap_init(&partitions);
		st.attempts++;
		err = load_pass(r, &m, &partitions, &rev, &st);
		if (err) {
			tmap_release(&m);
			strmap_release(&partitions, partition_unref_v);
			continue;
		}
		relink(&m, &partitions);
		pthread_rwlock_wrlock(&r->lock);
		carry_down(&partitions, &r->partitions);
		struct tmap old_t = r->t;
		struct strmap old_p = r->partitions;
		r->t = m;
		r->partitions = partitions;
		st.revision = rev;
		st.us = mono_us() - t0;
		r->stats = st;
		if (r->on_change)
			r->on_change(r->on_change_ud, NULL);
		pthread_rwlock_unlock(&r->lock);
		tmap_release(&old_t);
		strmap_release(&old_p, partition_unref_v);
		*ret_rev = rev;
	}
	return err;
}

void registry_load_stats(struct registry *r, struct registry_load_stats *ret)
{
	pthread_rwlock_rdlock(&r->lock);
	*ret = r->stats;
	pthread_rwlock_unlock(&r->lock);
}

static int load_and_watch(struct registry *r)
{
	int64_t rev = 0;
	int err = registry_load(r, &rev);
	if (err)
		return err;
	if (r->etcd) {
		static const struct etcd_watch_handlers h = { .on_events = on_events, .on_compacted = on_compacted };
		char *start = xasprintf("%s/", r->prefix);
		char *end = etcd_prefix_end(start);
		r->watch = etcd_watch_start(r->etcd, start, end, rev + 1, false, &h, r);
		free(start);
		free(end);
	}
	atomic_store(&r->loaded, true);
	return 0;
}

int registry_start(struct registry *r)
{
	return load_and_watch(r);
}

void registry_resync_if_needed(struct registry *r)
{
	if (!atomic_exchange(&r->need_resync, false))
		return;
	etcd_watch_stop(r->watch);
	r->watch = NULL;
	if (load_and_watch(r) != 0)
		atomic_store(&r->need_resync, true);
}

bool registry_loaded(struct registry *r)
{
	return atomic_load(&r->loaded);
}

void registry_free(struct registry *r)
{
	if (!r)
		return;
	etcd_watch_stop(r->watch);
	tmap_release(&r->t);
	strmap_release(&r->partitions, partition_unref_v);
	strmap_release(&r->nodes, free);
	pthread_rwlock_destroy(&r->lock);
	pthread_mutex_destroy(&r->resync_lock);
	free(r->prefix);
	free(r->tprefix);
	free(r->pprefix);
	free(r->mprefix);
	free(r);
}

/* --- reads ------------------------------------------------------------------------------------ */

static struct partition *ref(struct partition *p)
{
	if (p)
		atomic_fetch_add(&p->refs, 1);
	return p;
}

static struct partition *first_tp_locked(struct registry *r)
{
	struct partition *best = NULL;
	size_t it;
	for (struct strmap_ent *e = strmap_next(&r->partitions, NULL, &it); e; e = strmap_next(&r->partitions, e, &it)) {
		struct partition *p = e->val;
		if (!p->is_rm && (!best || strcmp(p->id, best->id) < 0))
			best = p;
	}
	return best;
}

struct partition *registry_tenant_partition(struct registry *r, const char *tenant)
{
	struct partition *p = NULL;
	pthread_rwlock_rdlock(&r->lock);
	struct strmap_ent *e = strmap_get(&r->t.tenants, tenant);
	if (e)
		p = ((struct strmap_ent *)e->val)->val;
	else if (strcmp(tenant, TENANT_SYSTEM) == 0)
		p = first_tp_locked(r);
	if (p && p->is_rm)
		p = NULL;
	ref(p);
	pthread_rwlock_unlock(&r->lock);
	return p;
}

struct partition *registry_partition(struct registry *r, const char *id)
{
	pthread_rwlock_rdlock(&r->lock);
	struct strmap_ent *e = strmap_get(&r->partitions, id);
	struct partition *p = ref(e ? e->val : NULL);
	pthread_rwlock_unlock(&r->lock);
	return p;
}

static int by_id(const void *a, const void *b)
{
	return strcmp((*(struct partition *const *)a)->id, (*(struct partition *const *)b)->id);
}

struct partition **registry_partitions(struct registry *r, bool rm, size_t *ret_n)
{
	pthread_rwlock_rdlock(&r->lock);
	struct partition **ps = xcalloc(r->partitions.n + 1, sizeof(*ps));
	size_t n = 0, it;
	for (struct strmap_ent *e = strmap_next(&r->partitions, NULL, &it); e; e = strmap_next(&r->partitions, e, &it)) {
		struct partition *p = e->val;
		if (p->is_rm == rm)
			ps[n++] = ref(p);
	}
	pthread_rwlock_unlock(&r->lock);
	qsort(ps, n, sizeof(*ps), by_id);
	*ret_n = n;
	return ps;
}

void partitions_free(struct partition **ps, size_t n)
{
	for (size_t i = 0; i < n; i++)
		partition_unref(ps[i]);
	free(ps);
}

bool registry_tenant_moving(struct registry *r, const char *tenant)
{
	pthread_rwlock_rdlock(&r->lock);
	bool moving = strmap_get(&r->t.moving, tenant) != NULL;
	pthread_rwlock_unlock(&r->lock);
	return moving;
}

struct partition *registry_pick_tp(struct registry *r)
{
	struct partition *best = NULL;
	int64_t best_n = 0;
	size_t it;
	pthread_rwlock_rdlock(&r->lock);
	for (struct strmap_ent *e = strmap_next(&r->partitions, NULL, &it); e; e = strmap_next(&r->partitions, e, &it)) {
		struct partition *p = e->val;
		if (p->is_rm || p->draining || atomic_load(&p->down))
			continue;
		struct strmap_ent *pe = strmap_get(&r->t.pnames, p->id);
		int64_t n = pe ? pe->num : 0;
		if (!best || n < best_n || (n == best_n && strcmp(p->id, best->id) < 0)) {
			best = p;
			best_n = n;
		}
	}
	ref(best);
	pthread_rwlock_unlock(&r->lock);
	return best;
}

/* Fills ret from a tenant entry; the caller holds the lock. */
static void rec_of(struct registry *r, const struct strmap_ent *e, struct tenant_rec *ret)
{
	struct strmap_ent *pend = strmap_get(&r->t.pending, e->key);
	*ret = (struct tenant_rec){
		.partition = xstrdup(((struct strmap_ent *)e->val)->key),
		.pending = pend != NULL,
		.since_ms = pend ? pend->num : 0,
		.mod_rev = e->num,
	};
	struct strmap_ent *mv = r->t.moved.n ? strmap_get(&r->t.moved, e->key) : NULL;
	if (mv) {
		const struct tenant_moved *m = mv->val;
		ret->moved = (struct tenant_moved){ .from = xstrdup(m->from), .from_rev = m->from_rev, .to_rev = m->to_rev,
						    .move = m->move ? xstrdup(m->move) : NULL };
	}
}

int registry_tenant(struct registry *r, const char *tenant, struct tenant_rec *ret)
{
	int err = E_NOT_FOUND;
	pthread_rwlock_rdlock(&r->lock);
	struct strmap_ent *e = strmap_get(&r->t.tenants, tenant);
	if (e) {
		rec_of(r, e, ret);
		err = 0;
	}
	pthread_rwlock_unlock(&r->lock);
	return err;
}

size_t registry_tenant_count(struct registry *r)
{
	pthread_rwlock_rdlock(&r->lock);
	size_t n = r->t.tenants.n;
	pthread_rwlock_unlock(&r->lock);
	return n;
}

void registry_tenants_snapshot(struct registry *r, struct strmap *ret)
{
	strmap_init(ret);
	size_t it;
	pthread_rwlock_rdlock(&r->lock);
	for (struct strmap_ent *e = strmap_next(&r->t.tenants, NULL, &it); e; e = strmap_next(&r->t.tenants, e, &it)) {
		struct tenant_rec *t = xmalloc(sizeof(*t));
		rec_of(r, e, t);
		strmap_put(ret, e->key, NULL)->val = t;
	}
	pthread_rwlock_unlock(&r->lock);
}

void registry_pending_snapshot(struct registry *r, struct strmap *ret)
{
	strmap_init(ret);
	size_t it;
	pthread_rwlock_rdlock(&r->lock);
	for (struct strmap_ent *p = strmap_next(&r->t.pending, NULL, &it); p; p = strmap_next(&r->t.pending, p, &it)) {
		struct strmap_ent *e = strmap_get(&r->t.tenants, p->key);
		if (!e)
			continue;
		struct tenant_rec *t = xmalloc(sizeof(*t));
		rec_of(r, e, t);
		strmap_put(ret, e->key, NULL)->val = t;
	}
	pthread_rwlock_unlock(&r->lock);
}

/* --- writes ----------------------------------------------------------------------------------- */

static char *tenant_value(const char *partition, bool pending)
{
	struct buf b = BUF_INIT;
	buf_adds(&b, "{\"partition\":");
	buf_add_json_str(&b, partition, strlen(partition));
	buf_addf(&b, ",\"state\":\"%s\",\"since\":%lld}", pending ? "pending" : "ready", (long long)now_ms());
	return buf_detach(&b, NULL);
}

/* The watch applies writes asynchronously; apply our own at once too, so that the request
 * that made them (and the next one on this gateway) sees them. */
static void apply_now(struct registry *r, const char *key, const char *value, int64_t rev)
{
	pthread_rwlock_wrlock(&r->lock);
	apply(r, key, value, value ? strlen(value) : 0, rev);
	pthread_rwlock_unlock(&r->lock);
}

int registry_assign(struct registry *r, const char *tenant, const char *partition, bool pending, int64_t *ret_rev)
{
	char *key = xasprintf("%s%s", r->tprefix, tenant);
	char *val = tenant_value(partition, pending);
	int64_t rev = 0;
	int err = etcd_create(r->etcd, key, val, strlen(val), 0, &rev);
	if (!err) {
		apply_now(r, key, val, rev);
		*ret_rev = rev;
	}
	free(key);
	free(val);
	return err;
}

int registry_confirm(struct registry *r, const char *tenant, const char *partition, int64_t rev)
{
	char *key = xasprintf("%s%s", r->tprefix, tenant);
	char *val = tenant_value(partition, false);
	int64_t nrev = 0;
	int err = etcd_update(r->etcd, key, val, strlen(val), rev, &nrev, NULL);
	if (!err)
		apply_now(r, key, val, nrev);
	free(key);
	free(val);
	return err;
}

int registry_unassign(struct registry *r, const char *tenant, int64_t rev)
{
	char *key = xasprintf("%s%s", r->tprefix, tenant);
	int err = etcd_delete(r->etcd, key, rev, NULL, NULL);
	if (!err || err == E_NOT_FOUND)
		apply_now(r, key, NULL, 0);
	free(key);
	return err;
}

void registry_set_nodes(struct registry *r, const char *rm, char **nodes, size_t n)
{
	pthread_rwlock_wrlock(&r->lock);
	size_t it;
	/* Drop this RM's old entries, then record the current ones. */
	struct strmap keep;
	strmap_init(&keep);
	for (struct strmap_ent *e = strmap_next(&r->nodes, NULL, &it); e; e = strmap_next(&r->nodes, e, &it)) {
		if (strcmp(e->val, rm) != 0)
			strmap_put(&keep, e->key, NULL)->val = xstrdup(e->val);
	}
	strmap_release(&r->nodes, free);
	r->nodes = keep;
	for (size_t i = 0; i < n; i++) {
		struct strmap_ent *e = strmap_put(&r->nodes, nodes[i], NULL);
		free(e->val);
		e->val = xstrdup(rm);
	}
	pthread_rwlock_unlock(&r->lock);
}

char *registry_node_rm(struct registry *r, const char *node)
{
	pthread_rwlock_rdlock(&r->lock);
	struct strmap_ent *e = strmap_get(&r->nodes, node);
	char *rm = e ? xstrdup(e->val) : NULL;
	pthread_rwlock_unlock(&r->lock);
	return rm;
}
