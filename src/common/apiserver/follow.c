/* Followers: a thread that keeps a view of some of the server's own watch caches (the RBAC
 * authorizer's index, the quota tracker's usage), fed with each cache's state and then its
 * changes, in order, and started over when a cache's watch ends (a relist). */
#include "internal.h"
#include "ursa/log.h"
#include "ursa/timeutil.h"
#include "ursa/xalloc.h"
#include <stdlib.h>
#include <time.h>

#define FOLLOW_QUEUE 1000000 /* events a follower may fall behind before its watch ends */

struct follower {
	struct served **sv;
	struct watcher **w;
	size_t n;
	struct follower_ops ops;
	void *ud;
	pthread_t thread;
	bool running;
	pthread_mutex_t mu; /* only for wake-ups: notify may run under a cache's lock */
	pthread_cond_t cv;
	bool wake;
	pthread_mutex_t applied_mu; /* guards applied; applied_cv: it moved */
	pthread_cond_t applied_cv;
	int64_t *applied;           /* per cache: the revision applied up to (0 while (re)starting) */
	atomic_bool stop;
};

static void notify(void *ud)
{
	struct follower *f = ud;
	pthread_mutex_lock(&f->mu);
	f->wake = true;
	pthread_cond_signal(&f->cv);
	pthread_mutex_unlock(&f->mu);
}

static void nap_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
	nanosleep(&ts, NULL);
}

/* Delivers cache i's state and watches it from there. 0, or -1 when stopping. */
static int start(struct follower *f, size_t i)
{
	struct wcache *c = f->sv[i]->cache;
	for (;;) {
		if (atomic_load(&f->stop))
			return -1;
		if (!wcache_ready(c)) {
			nap_ms(20);
			continue;
		}
		struct cobj **objs = NULL;
		size_t n = 0;
		int64_t rv = 0;
		if (wcache_list(c, &(struct wfilter){ 0 }, &objs, &n, &rv) < 0)
			continue;
		for (size_t k = 0; k < n; k++) {
			f->ops.event(f->ud, i, WEV_ADDED, objs[k]);
			cobj_unref(objs[k]);
		}
		free(objs);
		if (wcache_watch(c, &(struct wfilter){ 0 }, rv, FOLLOW_QUEUE, notify, f, &f->w[i]) == 0) {
			if (f->ops.listed)
				f->ops.listed(f->ud, i);
			return 0;
		}
		f->ops.reset(f->ud, i); /* the history moved past the list meanwhile: again */
	}
}

static void set_applied(struct follower *f, size_t i, int64_t rv)
{
	pthread_mutex_lock(&f->applied_mu);
	if (f->applied[i] != rv) {
		f->applied[i] = rv;
		pthread_cond_broadcast(&f->applied_cv);
	}
	pthread_mutex_unlock(&f->applied_mu);
}

static void *follower_main(void *arg)
{
	struct follower *f = arg;
	for (size_t i = 0; i < f->n; i++)
		if (start(f, i) < 0)
			return NULL;
	if (f->ops.synced)
		f->ops.synced(f->ud);
	while (!atomic_load(&f->stop)) {
		pthread_mutex_lock(&f->mu);
		if (!f->wake) {
			struct timespec ts;
			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_sec += 1;
			pthread_cond_timedwait(&f->cv, &f->mu, &ts);
		}
		f->wake = false;
		pthread_mutex_unlock(&f->mu);
		for (size_t i = 0; i < f->n && !atomic_load(&f->stop); i++) {
			struct wevent ev;
			int rc;
			while ((rc = watcher_next(f->w[i], &ev)) == 1) {
				if (ev.obj && (ev.type == WEV_ADDED || ev.type == WEV_MODIFIED || ev.type == WEV_DELETED))
					f->ops.event(f->ud, i, ev.type, ev.obj);
				wevent_release(&ev);
			}
			if (rc == 0)
				set_applied(f, i, watcher_revision(f->w[i]));
			if (rc < 0) {
				set_applied(f, i, 0);
				log_info("follower relists", "resource=%s", f->sv[i]->r->plural);
				watcher_close(f->w[i]);
				f->w[i] = NULL;
				f->ops.reset(f->ud, i);
				if (start(f, i) < 0)
					return NULL;
			}
		}
	}
	return NULL;
}

struct follower *follower_start(struct served *const *sv, size_t n, const struct follower_ops *ops, void *ud)
{
	struct follower *f = xcalloc(1, sizeof(*f));
	f->sv = xcalloc(n, sizeof(*f->sv));
	f->w = xcalloc(n, sizeof(*f->w));
	f->applied = xcalloc(n, sizeof(*f->applied));
	pthread_mutex_init(&f->applied_mu, NULL);
	pthread_cond_init(&f->applied_cv, NULL);
	for (size_t i = 0; i < n; i++)
		f->sv[i] = sv[i];
	f->n = n;
	f->ops = *ops;
	f->ud = ud;
	pthread_mutex_init(&f->mu, NULL);
	pthread_cond_init(&f->cv, NULL);
	if (pthread_create(&f->thread, NULL, follower_main, f) != 0) {
		follower_stop(f);
		return NULL;
	}
	f->running = true;
	return f;
}

void follower_stop(struct follower *f)
{
	if (!f)
		return;
	atomic_store(&f->stop, true);
	if (f->running) {
		notify(f);
		pthread_join(f->thread, NULL);
	}
	for (size_t i = 0; i < f->n; i++)
		if (f->w[i])
			watcher_close(f->w[i]);
	pthread_mutex_destroy(&f->mu);
	pthread_cond_destroy(&f->cv);
	pthread_mutex_destroy(&f->applied_mu);
	pthread_cond_destroy(&f->applied_cv);
	free(f->applied);
	free(f->sv);
	free(f->w);
	free(f);
}

bool follower_catch_up(struct follower *f, int64_t timeout_ms)
{
	int64_t deadline = mono_ms() + timeout_ms;
	int64_t *want = xcalloc(f->n, sizeof(*want));
	bool behind = false;
	for (size_t i = 0; i < f->n; i++) {
		want[i] = atomic_load(&f->sv[i]->written_rev);
		int64_t left = deadline - mono_ms();
		if (want[i] > 0 && (left <= 0 || wcache_wait_for(f->sv[i]->cache, want[i], left) != 0)) {
			free(want);
			return false;
		}
		pthread_mutex_lock(&f->applied_mu);
		behind = behind || f->applied[i] < want[i];
		pthread_mutex_unlock(&f->applied_mu);
	}
	if (behind)
		notify(f); /* the caches' events may not have woken it yet */
	struct timespec ts;
	int64_t left = deadline - mono_ms();
	wall_deadline(&ts, left < 0 ? 0 : left);
	bool ok;
	pthread_mutex_lock(&f->applied_mu);
	for (;;) {
		ok = true;
		for (size_t i = 0; i < f->n; i++)
			if (f->applied[i] < want[i])
				ok = false;
		if (ok || pthread_cond_timedwait(&f->applied_cv, &f->applied_mu, &ts) != 0)
			break;
	}
	pthread_mutex_unlock(&f->applied_mu);
	free(want);
	return ok;
}
