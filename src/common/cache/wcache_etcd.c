/* The etcd side of a watch cache: one thread per cache lists the prefix (pages of 10,000 pinned
 * to the first page's revision), starts a watch from the list revision + 1 (without prev_kv: the store holds every previous state), and
 * relists when etcd reports the watch's revision compacted. It is the only place that calls
 * etcd, so caches built with wcache_new_detached (the unit tests) never link the client in. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "cache/wcache_internal.h"
#include "ursa/errors.h"
#include "ursa/timeutil.h"
#include "ursa/xalloc.h"

_Atomic long wcache_list_page_size = 10000;
#define RETRY_MS 1000

struct wdriver {
	struct wcache *c;
	struct etcd *etcd;
	char *prefix, *range_end;
	pthread_t th;
	pthread_mutex_t mu;
	pthread_cond_t cond;
	bool stop;    /* under mu */
	bool relist;  /* under mu: the watch was compacted */
	struct etcd_watch *watch; /* driver thread only */
};

static void on_events(void *ud, const struct etcd_event *ev, size_t n)
{
	struct wdriver *d = ud;
	wcache_apply_events(d->c, ev, n);
}

static void on_compacted(void *ud, int64_t compact_rev)
{
	struct wdriver *d = ud;
	pthread_mutex_lock(&d->mu);
	d->relist = true;
	pthread_cond_signal(&d->cond);
	pthread_mutex_unlock(&d->mu);
}

/* While etcd is unreachable the cache keeps serving what it has (stale reads beat none, as
 * upstream's cacher); the watch resumes by itself from its last revision. */
static void on_state(void *ud, bool connected)
{
}

static const struct etcd_watch_handlers handlers = { on_events, on_compacted, on_state };

static bool stopping(struct wdriver *d)
{
	pthread_mutex_lock(&d->mu);
	bool s = d->stop;
	pthread_mutex_unlock(&d->mu);
	return s;
}

struct objvec {
	struct cobj **v;
	size_t n, alloc;
};

static void objvec_release(struct objvec *a)
{
	for (size_t i = 0; i < a->n; i++)
		cobj_unref(a->v[i]);
	free(a->v);
	memset(a, 0, sizeof(*a));
}

static void add_page(struct wdriver *d, struct objvec *a, const struct etcd_range_result *res)
{
	const struct api_resource *r = wcache_resource(d->c);
	if (a->n + res->n > a->alloc) {
		a->alloc = a->n + res->n + (a->alloc / 2);
		a->v = xrealloc(a->v, a->alloc * sizeof(*a->v));
	}
	for (size_t i = 0; i < res->n; i++) {
		const struct etcd_kv *kv = &res->kvs[i];
		struct cobj *o = cobj_new(r, kv->key, kv->value, kv->value_len, kv->mod_rev);
		if (o)
			a->v[a->n++] = o;
	}
}

/* One consistent listing at the first page's revision. E_GONE if that revision got compacted
 * between pages, E_UNAVAILABLE when stopping, or the client's error. */
static int list_pages(struct wdriver *d, struct objvec *a, int64_t *ret_rev)
{
	struct buf start = BUF_INIT;
	int64_t rev = 0;
	long page = atomic_load(&wcache_list_page_size);
	int rc;
	buf_adds(&start, d->prefix);
	for (;;) {
		struct etcd_range_result res;
		if ((rc = etcd_range(d->etcd, buf_cstr(&start), d->range_end, rev, page, false, &res)))
			goto out;
		if (rev == 0)
			rev = res.revision;
		add_page(d, a, &res);
		bool more = res.more && res.n > 0;
		if (more) {
			/* the next key after K is K"\0", which a C string cannot carry; keys never hold
			 * NUL, so K"\x01" is the smallest key that can follow */
			buf_reset(&start);
			buf_adds(&start, res.kvs[res.n - 1].key);
			buf_addch(&start, '\x01');
		}
		etcd_range_result_release(&res);
		if (!more)
			break;
		if (stopping(d)) {
			rc = E_UNAVAILABLE;
			goto out;
		}
	}
	*ret_rev = rev;
out:
	buf_release(&start);
	return rc;
}

static int list_and_watch(struct wdriver *d)
{
	struct objvec a = { NULL, 0, 0 };
	int64_t rev = 0;
	int rc = list_pages(d, &a, &rev);
	if (rc == E_GONE) { /* compacted between pages: start over at the newest revision */
		objvec_release(&a);
		rc = list_pages(d, &a, &rev);
	}
	if (rc != 0) {
		objvec_release(&a);
		return rc;
	}
	wcache_install(d->c, a.v, a.n, rev);
	free(a.v);
	d->watch = etcd_watch_start(d->etcd, d->prefix, d->range_end, rev + 1, false, &handlers, d);
	return d->watch ? 0 : E_UNAVAILABLE;
}

static void wait_ms(struct wdriver *d, long ms)
{
	struct timespec dl;
	mono_deadline(&dl, ms);
	pthread_cond_timedwait(&d->cond, &d->mu, &dl);
}

static void *run(void *arg)
{
	struct wdriver *d = arg;
	bool need_list = true;
	pthread_mutex_lock(&d->mu);
	while (!d->stop) {
		if (d->relist) {
			d->relist = false;
			need_list = true;
		}
		if (!need_list) {
			pthread_cond_wait(&d->cond, &d->mu);
			continue;
		}
		pthread_mutex_unlock(&d->mu);
		etcd_watch_stop(d->watch); /* joins: no on_compacted from it after this */
		d->watch = NULL;
		pthread_mutex_lock(&d->mu);
		d->relist = false;
		pthread_mutex_unlock(&d->mu);
		int rc = list_and_watch(d);
		pthread_mutex_lock(&d->mu);
		need_list = rc != 0;
		if (need_list && !d->stop)
			wait_ms(d, RETRY_MS);
	}
	pthread_mutex_unlock(&d->mu);
	etcd_watch_stop(d->watch);
	d->watch = NULL;
	return NULL;
}

static void driver_stop(void *arg)
{
	struct wdriver *d = arg;
	pthread_mutex_lock(&d->mu);
	d->stop = true;
	pthread_cond_signal(&d->cond);
	pthread_mutex_unlock(&d->mu);
	pthread_join(d->th, NULL);
	pthread_mutex_destroy(&d->mu);
	pthread_cond_destroy(&d->cond);
	free(d->prefix);
	free(d->range_end);
	free(d);
}

struct wcache *wcache_new(const struct api_resource *r, struct etcd *etcd, const struct wcache_options *opts)
{
	struct wcache *c = wcache_new_detached(r, opts);
	struct wdriver *d = xcalloc(1, sizeof(*d));
	d->c = c;
	d->etcd = etcd;
	d->prefix = xstrdup(opts && opts->watch_prefix ? opts->watch_prefix : wcache_key_prefix(c));
	d->range_end = etcd_prefix_end(d->prefix);
	pthread_mutex_init(&d->mu, NULL);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&d->cond, &ca);
	pthread_condattr_destroy(&ca);
	wcache_set_driver(c, d, driver_stop);
	if (pthread_create(&d->th, NULL, run, d) != 0)
		abort(); /* like an allocation failure: nothing sensible to continue with */
	return c;
}
