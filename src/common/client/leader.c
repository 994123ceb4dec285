/* Leader election on a coordination.k8s.io/v1 Lease with optimistic concurrency. A lease
 * counts as expired when its record has not changed for leaseDurationSeconds of this
 * process's monotonic clock (so clock skew between holders does not matter), or at once
 * when its holderIdentity is empty (released). */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "client/client_internal.h"
#include "ursa/jsonutil.h"
#include "ursa/timeutil.h"
#include "ursa/xalloc.h"

struct leader_elector {
	struct rest_client *c;
	char *lease_path, *collection, *name, *identity;
	int dur_s, deadline_s, retry_s;
	void (*on_started)(void *ud);
	void (*on_stopped)(void *ud);
	void *ud;
	pthread_t thread;
	bool started;
	atomic_bool stop;
	atomic_bool leader;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	unsigned int seed;

	/* The last lease record seen and when (monotonic); elector thread only. */
	char *obs_record;
	int64_t obs_ms;
	int obs_dur_s;
};

static int64_t wall_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static json_t *micro_now(void)
{
	struct buf b = BUF_INIT;
	rfc3339_micro_add(&b, wall_us());
	json_t *s = json_string(buf_cstr(&b));
	buf_release(&b);
	return s;
}

/* Remembers the record (holder, renewTime, resourceVersion); restarts the expiry clock when it
 * changed. */
static void observe(struct leader_elector *le, const json_t *lease)
{
	const json_t *spec = json_object_get(lease, "spec");
	const char *holder = json_str(spec, "holderIdentity"), *renew = json_str(spec, "renewTime");
	json_t *dur = json_object_get(spec, "leaseDurationSeconds");
	const char *rv = json_path_str(lease, "metadata.resourceVersion");
	char *rec = xasprintf("%s|%s|%s", holder ? holder : "", renew ? renew : "", rv ? rv : "");

	le->obs_dur_s = json_is_integer(dur) && json_integer_value(dur) > 0 && json_integer_value(dur) < 86400
				? (int)json_integer_value(dur)
				: le->dur_s;
	if (!le->obs_record || strcmp(le->obs_record, rec)) {
		free(le->obs_record);
		le->obs_record = rec;
		le->obs_ms = mono_ms();
	} else {
		free(rec);
	}
}

static bool expired(struct leader_elector *le)
{
	return mono_ms() >= le->obs_ms + (int64_t)le->obs_dur_s * 1000;
}

static json_t *new_lease(struct leader_elector *le)
{
	json_t *now = micro_now();
	json_t *l = json_pack("{s:s, s:s, s:{s:s}, s:{s:s, s:i, s:O, s:O, s:i}}", "apiVersion", "coordination.k8s.io/v1",
			      "kind", "Lease", "metadata", "name", le->name, "spec", "holderIdentity", le->identity,
			      "leaseDurationSeconds", le->dur_s, "acquireTime", now, "renewTime", now,
			      "leaseTransitions", 0);
	json_decref(now);
	return l;
}

/* One attempt to take or keep the lease. 0 when we hold it afterwards, -1 otherwise. */
static int try_acquire_or_renew(struct leader_elector *le)
{
	json_t *lease = NULL, *copy = NULL, *spec;
	const char *holder;
	int rc = -1, st;

	st = rest_do(le->c, "GET", le->lease_path, NULL, NULL, &lease);
	if (st == 404) {
		json_t *fresh = new_lease(le);
		st = rest_do(le->c, "POST", le->collection, fresh, NULL, NULL);
		json_decref(fresh);
		rc = st == 200 || st == 201 ? 0 : -1;
		goto out;
	}
	if (st != 200 || !json_is_object(lease))
		goto out;
	observe(le, lease);
	holder = json_path_str(lease, "spec.holderIdentity");
	bool mine = holder && !strcmp(holder, le->identity);
	if (!mine && holder && *holder && !expired(le))
		goto out;
	copy = json_deep_copy(lease);
	spec = json_obj_child(copy, "spec");
	json_object_set_new(spec, "holderIdentity", json_string(le->identity));
	json_object_set_new(spec, "leaseDurationSeconds", json_integer(le->dur_s));
	json_object_set_new(spec, "renewTime", micro_now());
	if (!mine) {
		json_t *tr = json_object_get(spec, "leaseTransitions");
		json_object_set_new(spec, "acquireTime", micro_now());
		json_object_set_new(spec, "leaseTransitions",
				    json_integer(json_is_integer(tr) ? json_integer_value(tr) + 1 : 1));
	}
	st = rest_do(le->c, "PUT", le->lease_path, copy, NULL, NULL);
	rc = st == 200 ? 0 : -1; /* 409: someone else wrote it first */
out:
	json_decref(lease);
	json_decref(copy);
	return rc;
}

/* Hands the lease back (empty holder) so a peer can take it at once. */
static void release(struct leader_elector *le)
{
	json_t *lease = NULL, *copy;
	if (rest_do(le->c, "GET", le->lease_path, NULL, NULL, &lease) != 200 || !json_is_object(lease))
		goto out;
	const char *holder = json_path_str(lease, "spec.holderIdentity");
	if (!holder || strcmp(holder, le->identity))
		goto out;
	copy = json_deep_copy(lease);
	json_t *spec = json_obj_child(copy, "spec");
	json_object_set_new(spec, "holderIdentity", json_string(""));
	json_object_set_new(spec, "leaseDurationSeconds", json_integer(1));
	json_object_set_new(spec, "renewTime", micro_now());
	rest_do(le->c, "PUT", le->lease_path, copy, NULL, NULL);
	json_decref(copy);
out:
	json_decref(lease);
}

/* Sleeps about ms (plus up to jitter_pct percent), returning early on stop. */
static void nap(struct leader_elector *le, int64_t ms, int jitter_pct)
{
	if (jitter_pct > 0)
		ms += ms * (rand_r(&le->seed) % (jitter_pct + 1)) / 100;
	cond_sleep_ms(&le->lock, &le->cond, &le->stop, ms);
}

static void set_leader(struct leader_elector *le, bool on)
{
	atomic_store(&le->leader, on);
	if (on && le->on_started)
		le->on_started(le->ud);
	else if (!on && le->on_stopped)
		le->on_stopped(le->ud);
}

/* Leads until stop or until renewing fails for the renew deadline. */
static void lead(struct leader_elector *le)
{
	int64_t last_renew = mono_ms();
	while (!atomic_load(&le->stop)) {
		nap(le, (int64_t)le->retry_s * 1000, 0);
		if (atomic_load(&le->stop))
			return;
		if (!try_acquire_or_renew(le))
			last_renew = mono_ms();
		else if (mono_ms() - last_renew >= (int64_t)le->deadline_s * 1000)
			break;
	}
	set_leader(le, false);
}

static void *elector_main(void *arg)
{
	struct leader_elector *le = arg;
	while (!atomic_load(&le->stop)) {
		if (try_acquire_or_renew(le)) {
			nap(le, (int64_t)le->retry_s * 1000, 20);
			continue;
		}
		set_leader(le, true);
		lead(le);
	}
	if (atomic_load(&le->leader)) {
		release(le);
		set_leader(le, false);
	}
	return NULL;
}

struct leader_elector *leader_start(struct rest_client *c, const struct leader_config *cfg)
{
	const char *slash = cfg && cfg->lease_path ? strrchr(cfg->lease_path, '/') : NULL;
	struct leader_elector *le;
	pthread_condattr_t ca;

	if (!c || !slash || !slash[1] || !cfg->identity || !*cfg->identity)
		return NULL;
	le = xcalloc(1, sizeof(*le));
	le->c = c;
	le->lease_path = xstrdup(cfg->lease_path);
	le->collection = xstrndup(cfg->lease_path, (size_t)(slash - cfg->lease_path));
	le->name = xstrdup(slash + 1);
	le->identity = xstrdup(cfg->identity);
	le->dur_s = cfg->lease_duration_s > 0 ? cfg->lease_duration_s : 15;
	le->deadline_s = cfg->renew_deadline_s > 0 ? cfg->renew_deadline_s : 10;
	le->retry_s = cfg->retry_period_s > 0 ? cfg->retry_period_s : 2;
	le->on_started = cfg->on_started;
	le->on_stopped = cfg->on_stopped;
	le->ud = cfg->ud;
	le->seed = (unsigned int)(getpid() ^ mono_us());
	atomic_init(&le->stop, false);
	atomic_init(&le->leader, false);
	pthread_mutex_init(&le->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&le->cond, &ca);
	pthread_condattr_destroy(&ca);
	if (pthread_create(&le->thread, NULL, elector_main, le)) {
		leader_stop(le);
		return NULL;
	}
	le->started = true;
	return le;
}

bool leader_is_leader(struct leader_elector *le)
{
	return le && atomic_load(&le->leader);
}

void leader_stop(struct leader_elector *le)
{
	if (!le)
		return;
	pthread_mutex_lock(&le->lock);
	atomic_store(&le->stop, true);
	pthread_cond_broadcast(&le->cond);
	pthread_mutex_unlock(&le->lock);
	if (le->started)
		pthread_join(le->thread, NULL);
	pthread_cond_destroy(&le->cond);
	pthread_mutex_destroy(&le->lock);
	free(le->obs_record);
	free(le->lease_path);
	free(le->collection);
	free(le->name);
	free(le->identity);
	free(le);
}
