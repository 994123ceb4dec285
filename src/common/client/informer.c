/* Informers: list (in pages) + watch from the list's resourceVersion into a local store,
 * resuming dropped watches from the last resourceVersion and relisting after 410 Expired. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "client/client_internal.h"
#include "ursa/errors.h"
#include "ursa/jsonutil.h"
#include "ursa/path.h"
#include "ursa/timeutil.h"
#include "ursa/xalloc.h"

#define INF_PAGE_LIMIT 500
#define INF_MAX_PAGES 100000
#define INF_WATCH_TIMEOUT_S 300
#define INF_BACKOFF_FIRST_MS 1000
#define INF_BACKOFF_MAX_MS 30000
#define INF_HEALTHY_WATCH_MS 1000 /* a watch that ran this long resets the back-off */

struct informer {
	struct rest_client *c;
	char *path, *query;
	struct informer_handlers h;
	void *ud;
	pthread_t thread;
	bool started;
	atomic_bool stop;
	atomic_bool synced;
	atomic_uint lists, watches;
	pthread_mutex_t sleep_lock;
	pthread_cond_t sleep_cond;

	pthread_rwlock_t lock; /* guards store and idx */
	struct strmap store;   /* key → json_t * (one reference each, immutable) */
	struct obj_index *idx; /* secondary indexes over store's objects (borrowed from store) */

	/* Used by the informer thread only. */
	char *rv;
	/* A multiplexed watch (informer_start_mux): a watch of path per field selector, each
	 * resumed from its own resourceVersion (events of two watches are not in one order). */
	char **mux_fields, **mux_rv;
	size_t nmux;
	struct watch_lines wl;
	bool need_relist;
	bool watch_events;
};

char *object_key(const json_t *obj)
{
	json_t *md = json_object_get(obj, "metadata");
	const char *t = json_str(md, "tenant"), *ns = json_str(md, "namespace"), *n = json_str(md, "name");
	return xasprintf("%s/%s/%s", t ? t : "", ns ? ns : "", n ? n : "");
}

static const char *obj_rv(const json_t *obj)
{
	return json_path_str(obj, "metadata.resourceVersion");
}

static void set_rv(struct informer *inf, const char *rv)
{
	if (!rv || !*rv)
		return;
	free(inf->rv);
	inf->rv = xstrdup(rv);
}

/* An event line of a multiplexed watch starts with its watch's id, our index: that index, or
 * -1 (a plain watch's line, or not one of ours). */
static long mux_line_id(const struct informer *inf, const char *line, size_t len)
{
	static const char head[] = "{\"id\":\"";
	if (!inf->nmux || len < sizeof(head) || memcmp(line, head, sizeof(head) - 1) != 0)
		return -1;
	size_t i = sizeof(head) - 1;
	long v = 0;
	for (; i < len && line[i] >= '0' && line[i] <= '9' && v < 1000000; i++)
		v = v * 10 + (line[i] - '0');
	return i < len && line[i] == '"' && i > sizeof(head) - 1 && (size_t)v < inf->nmux ? v : -1;
}

/* The resourceVersion the line's watch resumes from moves on to rv. */
static void set_line_rv(struct informer *inf, long sub, const char *rv)
{
	if (sub < 0) {
		set_rv(inf, rv);
	} else if (rv && *rv) {
		free(inf->mux_rv[sub]);
		inf->mux_rv[sub] = xstrdup(rv);
	}
}

/* Secondary indexes --------------------------------------------------------------------------- */

/* One index: value → bucket (struct strmap: store key → borrowed json_t *). */
struct one_index {
	struct strmap buckets;
};

struct obj_index {
	struct one_index ix[OBJ_INDEX__N];
};

struct obj_index *obj_index_new(void)
{
	struct obj_index *x = xcalloc(1, sizeof(*x));
	for (int i = 0; i < OBJ_INDEX__N; i++)
		strmap_init(&x->ix[i].buckets);
	return x;
}

static void bucket_free(void *v)
{
	struct strmap *b = v;
	strmap_release(b, NULL);
	free(b);
}

void obj_index_free(struct obj_index *x)
{
	if (!x)
		return;
	for (int i = 0; i < OBJ_INDEX__N; i++)
		strmap_release(&x->ix[i].buckets, bucket_free);
	free(x);
}

/* The uid of obj's controller ownerReference, or NULL (borrowed). */
static const char *controller_uid(const json_t *obj)
{
	return json_controller_uid(obj, NULL);
}

char *obj_index_value(enum obj_index_kind kind, const json_t *obj)
{
	json_t *md = json_object_get(obj, "metadata");
	const char *t = json_str(md, "tenant"), *ns = json_str(md, "namespace");
	const char *uid = controller_uid(obj);
	switch (kind) {
	case OBJ_INDEX_NAMESPACE:
		return obj_index_ns_value(t, ns);
	case OBJ_INDEX_CONTROLLER:
		return uid && *uid ? xstrdup(uid) : NULL;
	case OBJ_INDEX_ORPHANS:
		return uid && *uid ? NULL : obj_index_ns_value(t, ns);
	default:
		return NULL;
	}
}

char *obj_index_ns_value(const char *tenant, const char *ns)
{
	return xasprintf("%s/%s", tenant ? tenant : "", ns ? ns : "");
}

static void bucket_del(struct one_index *ix, const char *value, const char *key)
{
	struct strmap_ent *e = strmap_get(&ix->buckets, value);
	if (!e)
		return;
	strmap_del(e->val, key, NULL);
	if (((struct strmap *)e->val)->n == 0) {
		void *b = NULL;
		strmap_del(&ix->buckets, value, &b);
		bucket_free(b);
	}
}

static void bucket_put(struct one_index *ix, const char *value, const char *key, const json_t *obj)
{
	struct strmap_ent *e = strmap_put(&ix->buckets, value, NULL);
	if (!e->val) {
		e->val = xmalloc(sizeof(struct strmap));
		strmap_init(e->val);
	}
	strmap_put(e->val, key, NULL)->val = (void *)obj;
}

void obj_index_update(struct obj_index *x, const char *key, const json_t *old_obj, const json_t *new_obj)
{
	for (int i = 0; i < OBJ_INDEX__N; i++) {
		char *ov = old_obj ? obj_index_value((enum obj_index_kind)i, old_obj) : NULL;
		char *nv = new_obj ? obj_index_value((enum obj_index_kind)i, new_obj) : NULL;
		if (ov && (!nv || strcmp(ov, nv) != 0))
			bucket_del(&x->ix[i], ov, key);
		if (nv)
			bucket_put(&x->ix[i], nv, key, new_obj);
		free(ov);
		free(nv);
	}
}

void obj_index_foreach(const struct obj_index *x, enum obj_index_kind kind, const char *value,
		       void (*fn)(void *ud, const json_t *obj), void *ud)
{
	if ((int)kind < 0 || kind >= OBJ_INDEX__N || !value)
		return;
	struct strmap_ent *b = strmap_get(&x->ix[kind].buckets, value), *e;
	size_t it;
	if (!b)
		return;
	for (e = strmap_next(b->val, NULL, &it); e; e = strmap_next(b->val, e, &it))
		fn(ud, e->val);
}

size_t obj_index_count(const struct obj_index *x, enum obj_index_kind kind, const char *value)
{
	if ((int)kind < 0 || kind >= OBJ_INDEX__N || !value)
		return 0;
	struct strmap_ent *b = strmap_get(&x->ix[kind].buckets, value);
	return b ? ((struct strmap *)b->val)->n : 0;
}

size_t obj_index_buckets(const struct obj_index *x, enum obj_index_kind kind)
{
	return (int)kind >= 0 && kind < OBJ_INDEX__N ? x->ix[kind].buckets.n : 0;
}

/* Store updates: the store changes first, then the handler runs (outside the lock). ------------- */

/* Takes obj. */
static void store_upsert(struct informer *inf, json_t *obj)
{
	char *key = object_key(obj);
	json_t *old;

	pthread_rwlock_wrlock(&inf->lock);
	struct strmap_ent *e = strmap_put(&inf->store, key, NULL);
	old = e->val;
	e->val = json_incref(obj);
	obj_index_update(inf->idx, key, old, obj);
	pthread_rwlock_unlock(&inf->lock);
	if (old && inf->h.on_update)
		inf->h.on_update(inf->ud, old, obj);
	else if (!old && inf->h.on_add)
		inf->h.on_add(inf->ud, obj);
	json_decref(old);
	json_decref(obj);
	free(key);
}

/* obj (borrowed) is what the handler gets; defaults to the stored object. */
static void store_delete(struct informer *inf, const char *key, json_t *obj)
{
	void *old = NULL;

	pthread_rwlock_wrlock(&inf->lock);
	bool had = strmap_del(&inf->store, key, &old);
	if (had)
		obj_index_update(inf->idx, key, old, NULL);
	pthread_rwlock_unlock(&inf->lock);
	if (had && inf->h.on_delete)
		inf->h.on_delete(inf->ud, obj ? obj : old);
	json_decref(old);
}

/* Listing ------------------------------------------------------------------------------------------- */

static void json_free_val(void *v)
{
	json_decref(v);
}

/* Items of a list lack kind/apiVersion; fill them in from the list's. */
static void add_items(struct strmap *out, json_t *list)
{
	const char *kind = json_str(list, "kind"), *api = json_str(list, "apiVersion");
	json_t *items = json_object_get(list, "items"), *it;
	char *item_kind = NULL;
	size_t i, kl = kind ? strlen(kind) : 0;

	if (kl > 4 && !strcmp(kind + kl - 4, "List"))
		item_kind = xstrndup(kind, kl - 4);
	json_array_foreach(items, i, it) {
		if (!json_is_object(it))
			continue;
		if (item_kind && !json_object_get(it, "kind"))
			json_object_set_new(it, "kind", json_string(item_kind));
		if (api && !json_object_get(it, "apiVersion"))
			json_object_set_new(it, "apiVersion", json_string(api));
		char *key = object_key(it);
		struct strmap_ent *e = strmap_put(out, key, NULL);
		json_decref(e->val);
		e->val = json_incref(it);
		free(key);
	}
	free(item_kind);
}

/* Lists everything into out (key → new reference); sets *ret_rv (new string). 0, an HTTP
 * status other than 200, or an E_* code. */
static int list_all(struct informer *inf, struct strmap *out, char **ret_rv)
{
	char *cont = NULL;
	int rc = 0, restarts = 0;

	for (int page = 0; page < INF_MAX_PAGES && !atomic_load(&inf->stop); page++) {
		struct buf p = BUF_INIT;
		json_t *body = NULL;

		/* A consistent list (resourceVersion unset, from etcd): lists at resourceVersion 0
		 * from a watch cache may lag what this informer already saw, and etcd 3.4's progress
		 * notifications cannot tell a cache is current. */
		buf_addf(&p, "%s?limit=%d", inf->path, INF_PAGE_LIMIT);
		if (inf->query && *inf->query)
			buf_addf(&p, "&%s", inf->query);
		if (cont) {
			buf_adds(&p, "&continue=");
			buf_add_query_escaped(&p, cont);
		}
		rc = rest_do(inf->c, "GET", p.ptr, NULL, NULL, &body);
		buf_release(&p);
		if (rc == 410 && cont && restarts++ < 3) {
			/* the continue token expired: start over */
			json_decref(body);
			free(cont);
			cont = NULL;
			strmap_release(out, json_free_val);
			continue;
		}
		if (rc != 200 || !json_is_object(body)) {
			json_decref(body);
			rc = rc == 200 ? E_INTERNAL : rc;
			break;
		}
		add_items(out, body);
		const char *rv = json_path_str(body, "metadata.resourceVersion");
		const char *next = json_path_str(body, "metadata.continue");
		free(cont);
		cont = next && *next ? xstrdup(next) : NULL;
		if (!cont) {
			*ret_rv = xstrdup(rv ? rv : "");
			json_decref(body);
			return 0;
		}
		json_decref(body);
		rc = E_INTERNAL;
	}
	free(cont);
	strmap_release(out, json_free_val);
	return rc ? rc : E_UNAVAILABLE;
}

/* Brings the store to fresh's content, delivering the differences. Consumes fresh. */
static void replace_store(struct informer *inf, struct strmap *fresh)
{
	struct strmap_ent *e;
	size_t it;
	char **gone = NULL;
	size_t ngone = 0, alloc = 0;

	for (e = strmap_next(fresh, NULL, &it); e; e = strmap_next(fresh, e, &it)) {
		pthread_rwlock_rdlock(&inf->lock);
		struct strmap_ent *cur = strmap_get(&inf->store, e->key);
		const char *old_rv = cur ? obj_rv(cur->val) : NULL, *new_rv = obj_rv(e->val);
		bool same = cur && old_rv && new_rv && !strcmp(old_rv, new_rv);
		pthread_rwlock_unlock(&inf->lock);
		if (!same)
			store_upsert(inf, json_incref(e->val));
	}
	pthread_rwlock_rdlock(&inf->lock);
	for (e = strmap_next(&inf->store, NULL, &it); e; e = strmap_next(&inf->store, e, &it)) {
		if (strmap_get(fresh, e->key))
			continue;
		if (ngone == alloc) {
			alloc = alloc ? alloc * 2 : 16;
			gone = xrealloc(gone, alloc * sizeof(*gone));
		}
		gone[ngone++] = xstrdup(e->key);
	}
	pthread_rwlock_unlock(&inf->lock);
	for (size_t i = 0; i < ngone; i++) {
		store_delete(inf, gone[i], NULL);
		free(gone[i]);
	}
	free(gone);
	strmap_release(fresh, json_free_val);
}

static int relist(struct informer *inf)
{
	struct strmap fresh;
	char *rv = NULL;
	int rc;

	strmap_init(&fresh);
	rc = list_all(inf, &fresh, &rv);
	if (rc)
		return rc;
	replace_store(inf, &fresh);
	set_rv(inf, rv);
	for (size_t i = 0; i < inf->nmux; i++)
		set_line_rv(inf, (long)i, rv);
	free(rv);
	atomic_fetch_add(&inf->lists, 1);
	return 0;
}

/* Watching ------------------------------------------------------------------------------------------ */

enum { LINE_BAD = 1, LINE_EXPIRED, LINE_ERROR };

static int on_watch_line(void *ud, const char *line, size_t len)
{
	struct informer *inf = ud;
	struct watch_event ev;
	int rc = 0;

	if (inf->h.skip_event && inf->h.skip_event(inf->ud, line, len)) {
		inf->watch_events = true;
		return 0;
	}
	if (watch_event_parse(line, len, &ev))
		return LINE_BAD;
	long sub = mux_line_id(inf, line, len);
	switch (ev.type) {
	case WEV_ADDED:
	case WEV_MODIFIED:
		set_line_rv(inf, sub, obj_rv(ev.object));
		store_upsert(inf, json_incref(ev.object));
		break;
	case WEV_DELETED: {
		char *key = object_key(ev.object);
		set_line_rv(inf, sub, obj_rv(ev.object));
		store_delete(inf, key, ev.object);
		free(key);
		break;
	}
	case WEV_BOOKMARK:
		set_line_rv(inf, sub, obj_rv(ev.object));
		break;
	case WEV_ERROR:
		rc = watch_status_expired(ev.object) ? LINE_EXPIRED : LINE_ERROR;
		break;
	}
	if (!rc)
		inf->watch_events = true;
	else if (rc == LINE_EXPIRED)
		inf->need_relist = true;
	json_decref(ev.object);
	return rc;
}

static int on_watch_data(void *ud, const char *data, size_t len)
{
	struct informer *inf = ud;
	return watch_lines_feed(&inf->wl, data, len, on_watch_line, inf) ? 1 : 0;
}

/* Frees the multiplexed watch's selectors and resourceVersions: from then on the informer
 * watches path?query plainly. */
static void mux_drop(struct informer *inf)
{
	for (size_t i = 0; i < inf->nmux; i++) {
		free(inf->mux_fields[i]);
		free(inf->mux_rv[i]);
	}
	free(inf->mux_fields);
	free(inf->mux_rv);
	inf->mux_fields = inf->mux_rv = NULL;
	inf->nmux = 0;
}

/* The body of a multiplexed watch: every selector's watch from its resourceVersion. */
static char *mux_body(const struct informer *inf, size_t *ret_len)
{
	json_t *ws = json_array();
	for (size_t i = 0; i < inf->nmux; i++) {
		char id[24];
		snprintf(id, sizeof(id), "%zu", i);
		json_array_append_new(ws, json_pack("{s:s, s:s, s:s, s:s, s:b}", "id", id, "path", inf->path, "fieldSelector",
						    inf->mux_fields[i], "resourceVersion", inf->mux_rv[i] ? inf->mux_rv[i] : "",
						    "allowWatchBookmarks", 1));
	}
	json_t *doc = json_pack("{s:i, s:o}", "timeoutSeconds", INF_WATCH_TIMEOUT_S, "watches", ws);
	char *body = json_dumps(doc, JSON_COMPACT);
	json_decref(doc);
	*ret_len = strlen(body);
	return body;
}

/* One watch from inf->rv (or a multiplexed one from each watch's). Returns the HTTP status or
 * an E_* code; sets need_relist on 410. */
static int watch_once(struct informer *inf)
{
	struct buf p = BUF_INIT;
	int rc;

	if (inf->nmux) {
		size_t len;
		char *body = mux_body(inf, &len);
		inf->need_relist = false;
		inf->watch_events = false;
		buf_reset(&inf->wl.partial);
		atomic_fetch_add(&inf->watches, 1);
		rc = rest_stream_post(inf->c, WATCHMUX_PATH, body, len, on_watch_data, inf, &inf->stop);
		free(body);
		if (rc == 404 || rc == 405) {
			/* a server from before multiplexed watches: relist, then one plain watch of
			 * path?query (its handlers' skip_event drops what is not ours) */
			mux_drop(inf);
			inf->need_relist = true;
		}
		return rc;
	}

	buf_addf(&p, "%s?watch=true&resourceVersion=", inf->path);
	buf_add_query_escaped(&p, inf->rv ? inf->rv : "");
	buf_addf(&p, "&allowWatchBookmarks=true&timeoutSeconds=%d", INF_WATCH_TIMEOUT_S);
	if (inf->query && *inf->query)
		buf_addf(&p, "&%s", inf->query);
	inf->need_relist = false;
	inf->watch_events = false;
	buf_reset(&inf->wl.partial);
	atomic_fetch_add(&inf->watches, 1);
	rc = rest_stream(inf->c, p.ptr, on_watch_data, inf, &inf->stop);
	buf_release(&p);
	if (rc == 410)
		inf->need_relist = true;
	return rc;
}

/* Thread ------------------------------------------------------------------------------------------- */

static void sleep_ms_interruptible(struct informer *inf, int64_t ms)
{
	cond_sleep_ms(&inf->sleep_lock, &inf->sleep_cond, &inf->stop, ms);
}

static void back_off(struct informer *inf, int64_t *backoff)
{
	*backoff = *backoff ? *backoff * 2 : INF_BACKOFF_FIRST_MS;
	if (*backoff > INF_BACKOFF_MAX_MS)
		*backoff = INF_BACKOFF_MAX_MS;
	sleep_ms_interruptible(inf, *backoff);
}

static void *informer_main(void *arg)
{
	struct informer *inf = arg;
	bool need_list = true;
	int64_t backoff = 0;

	while (!atomic_load(&inf->stop)) {
		if (need_list) {
			if (relist(inf)) {
				back_off(inf, &backoff);
				continue;
			}
			need_list = false;
			if (!atomic_exchange(&inf->synced, true) && inf->h.on_synced)
				inf->h.on_synced(inf->ud);
		}
		int64_t t0 = mono_ms();
		int rc = watch_once(inf);
		if (atomic_load(&inf->stop))
			break;
		if (inf->need_relist) {
			need_list = true;
			continue;
		}
		if (rc == 200 && (inf->watch_events || mono_ms() - t0 >= INF_HEALTHY_WATCH_MS)) {
			backoff = 0;
			continue;
		}
		back_off(inf, &backoff);
	}
	return NULL;
}

struct informer *informer_start(struct rest_client *c, const char *path, const char *query,
				const struct informer_handlers *h, void *ud)
{
	return informer_start_mux(c, path, query, NULL, 0, h, ud);
}

struct informer *informer_start_mux(struct rest_client *c, const char *path, const char *query,
				    const char *const *fields, size_t nfields, const struct informer_handlers *h,
				    void *ud)
{
	struct informer *inf = xcalloc(1, sizeof(*inf));
	pthread_condattr_t ca;

	if (nfields) {
		inf->nmux = nfields;
		inf->mux_fields = xcalloc(nfields, sizeof(*inf->mux_fields));
		inf->mux_rv = xcalloc(nfields, sizeof(*inf->mux_rv));
		for (size_t i = 0; i < nfields; i++)
			inf->mux_fields[i] = xstrdup(fields[i]);
	}

	inf->c = c;
	inf->path = xstrdup(path);
	inf->query = query ? xstrdup(query) : NULL;
	if (h)
		inf->h = *h;
	inf->ud = ud;
	atomic_init(&inf->stop, false);
	atomic_init(&inf->synced, false);
	pthread_mutex_init(&inf->sleep_lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&inf->sleep_cond, &ca);
	pthread_condattr_destroy(&ca);
	pthread_rwlock_init(&inf->lock, NULL);
	strmap_init(&inf->store);
	inf->idx = obj_index_new();
	watch_lines_init(&inf->wl);
	if (pthread_create(&inf->thread, NULL, informer_main, inf)) {
		informer_stop(inf);
		return NULL;
	}
	inf->started = true;
	return inf;
}

void informer_stop(struct informer *inf)
{
	if (!inf)
		return;
	pthread_mutex_lock(&inf->sleep_lock);
	atomic_store(&inf->stop, true);
	pthread_cond_broadcast(&inf->sleep_cond);
	pthread_mutex_unlock(&inf->sleep_lock);
	if (inf->started)
		pthread_join(inf->thread, NULL);
	obj_index_free(inf->idx);
	strmap_release(&inf->store, json_free_val);
	watch_lines_release(&inf->wl);
	pthread_rwlock_destroy(&inf->lock);
	pthread_cond_destroy(&inf->sleep_cond);
	pthread_mutex_destroy(&inf->sleep_lock);
	free(inf->rv);
	mux_drop(inf);
	free(inf->path);
	free(inf->query);
	free(inf);
}

bool informer_synced(struct informer *inf)
{
	return atomic_load(&inf->synced);
}

json_t *informer_get(struct informer *inf, const char *key)
{
	pthread_rwlock_rdlock(&inf->lock);
	struct strmap_ent *e = strmap_get(&inf->store, key);
	json_t *obj = e ? json_incref(e->val) : NULL;
	pthread_rwlock_unlock(&inf->lock);
	return obj;
}

void informer_foreach(struct informer *inf, void (*fn)(void *ud, const json_t *obj), void *ud)
{
	struct strmap_ent *e;
	size_t it;
	pthread_rwlock_rdlock(&inf->lock);
	for (e = strmap_next(&inf->store, NULL, &it); e; e = strmap_next(&inf->store, e, &it))
		fn(ud, e->val);
	pthread_rwlock_unlock(&inf->lock);
}

void informer_foreach_indexed(struct informer *inf, enum obj_index_kind kind, const char *value,
			      void (*fn)(void *ud, const json_t *obj), void *ud)
{
	pthread_rwlock_rdlock(&inf->lock);
	obj_index_foreach(inf->idx, kind, value, fn, ud);
	pthread_rwlock_unlock(&inf->lock);
}

void informer_foreach_ns(struct informer *inf, const char *tenant, const char *ns,
			 void (*fn)(void *ud, const json_t *obj), void *ud)
{
	char *v = obj_index_ns_value(tenant, ns);
	informer_foreach_indexed(inf, OBJ_INDEX_NAMESPACE, v, fn, ud);
	free(v);
}

size_t informer_size(struct informer *inf)
{
	pthread_rwlock_rdlock(&inf->lock);
	size_t n = inf->store.n;
	pthread_rwlock_unlock(&inf->lock);
	return n;
}

void informer_counts(struct informer *inf, unsigned *ret_lists, unsigned *ret_watches)
{
	*ret_lists = atomic_load(&inf->lists);
	*ret_watches = atomic_load(&inf->watches);
}
