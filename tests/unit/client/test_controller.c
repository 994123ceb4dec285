/* The controller engine: --controllers parsing, event dispatch to keys (with fake key
 * functions), workers with rate-limited retries, ticks, start/stop hooks, standby gating; then
 * shared informers and leader election against a real etcd and ursa-tp-apiserver. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include "client_testlib.h"
#include "ursa/controller.h"
#include "ursa/timeutil.h"
#include "ursa/errors.h"

/* ---- parsing ---- */

static int sync_nop(void *ud, const char *key)
{
	(void)ud;
	(void)key;
	return 0;
}

static const struct ctl_def rm_like[] = {
	{ "nodelifecycle", { { NULL } }, sync_nop },
	{ "daemonset", { { NULL } }, sync_nop },
	{ "extra", { { NULL } }, sync_nop, .off_by_default = true },
};

/* "n1,n2,n3" of what list enables, or "ERR". */
static void expect_parse(const char *list, const char *want)
{
	bool on[3] = { true, true, true };
	struct buf got = BUF_INIT;
	if (ctl_parse_controllers(rm_like, 3, list, on) < 0) {
		buf_adds(&got, "ERR");
		assert_true(on[0] && on[1] && on[2]); /* untouched */
	} else {
		for (int i = 0; i < 3; i++)
			if (on[i])
				buf_addf(&got, "%s%s", got.len ? "," : "", rm_like[i].name);
	}
	if (strcmp(buf_cstr(&got), want) != 0)
		fail_msg("--controllers \"%s\": got \"%s\", want \"%s\"", list ? list : "(null)", buf_cstr(&got), want);
	buf_release(&got);
}

static void test_parse(void **state)
{
	(void)state;
	expect_parse("*", "nodelifecycle,daemonset");
	expect_parse(NULL, "nodelifecycle,daemonset");
	expect_parse("", "nodelifecycle,daemonset");
	expect_parse("nodelifecycle,daemonset", "nodelifecycle,daemonset");
	expect_parse("nodelifecycle", "nodelifecycle");
	expect_parse("*,-daemonset", "nodelifecycle");
	expect_parse("-daemonset,*", "nodelifecycle");
	expect_parse("daemonset,-daemonset", "");
	expect_parse("*,extra", "nodelifecycle,daemonset,extra");
	expect_parse("extra", "extra");
	expect_parse("daemonsetx,daemon", "ERR");
	expect_parse("*,-nope", "ERR");
	expect_parse("daemonset,,nodelifecycle", "ERR");
	expect_parse("daemonset,", "ERR");
	expect_parse("-", "ERR");
	expect_parse("**", "ERR");
}

/* ---- dispatch, with fake key functions ---- */

#define P_PODS "/api/v1/tenants/all/pods"
#define P_RS "/apis/apps/v1/tenants/all/replicasets"

static void key_ns(void *ud, struct workqueue *q, const json_t *obj)
{
	int *calls = ud;
	(*calls)++;
	char *k = xasprintf("%s/%s/", json_path_str(obj, "metadata.tenant"), json_path_str(obj, "metadata.namespace"));
	wq_add(q, k);
	free(k);
}

static void key_fixed(void *ud, struct workqueue *q, const json_t *obj)
{
	(void)ud;
	(void)obj;
	wq_add(q, "t/gone/x");
}

static const struct ctl_def dispatch_defs[] = {
	{ "self", { { P_PODS, CTL_ADD | CTL_UPDATE, NULL }, { P_PODS, CTL_DELETE, key_fixed } }, sync_nop },
	{ "ns", { { P_PODS, 0, key_ns }, { P_RS, CTL_DELETE, key_ns } }, sync_nop },
	{ "off", { { P_PODS, 0, NULL } }, sync_nop },
	{ "reader", { { P_RS, 0, ctl_key_none } }, sync_nop },
};

/* The keys waiting in q, sorted by arrival, comma-joined; empties q. */
static char *drain(struct workqueue *q)
{
	struct buf b = BUF_INIT;
	while (wq_len(q) > 0) {
		char *k = wq_get(q);
		buf_addf(&b, "%s%s", b.len ? "," : "", k);
		wq_done(q, k);
		free(k);
	}
	char *s = b.len ? buf_detach(&b, NULL) : xstrdup("");
	buf_release(&b);
	return s;
}

static void expect_keys(struct ctl_manager *m, const char *name, const char *want)
{
	char *got = drain(ctl_manager_queue(m, name));
	if (strcmp(got, want) != 0)
		fail_msg("controller %s: keys \"%s\", want \"%s\"", name, got, want);
	free(got);
}

static void test_dispatch(void **state)
{
	(void)state;
	int calls = 0;
	struct ctl_config cfg = { .defs = dispatch_defs, .ndefs = 4, .controllers = "*,-off", .ud = &calls };
	struct ctl_manager *m = NULL;
	assert_int_equal(ctl_manager_new(&cfg, &m), 0);
	assert_true(ctl_manager_enabled(m, "ns"));
	assert_false(ctl_manager_enabled(m, "off"));
	assert_null(ctl_manager_queue(m, "off"));
	assert_null(ctl_manager_queue(m, "nope"));
	assert_null(ctl_manager_informer(m, P_PODS)); /* not started */

	json_t *pod = json_pack("{s:{s:s,s:s,s:s}}", "metadata", "tenant", "t", "namespace", "a", "name", "p1");
	json_t *rs = json_pack("{s:{s:s,s:s,s:s}}", "metadata", "tenant", "t", "namespace", "b", "name", "r1");
	ctl_manager_deliver(m, P_PODS, CTL_ADD, pod);
	ctl_manager_deliver(m, P_PODS, CTL_UPDATE, pod); /* de-duplicated while waiting */
	expect_keys(m, "self", "t/a/p1");
	expect_keys(m, "ns", "t/a/");
	ctl_manager_deliver(m, P_PODS, CTL_DELETE, pod);
	expect_keys(m, "self", "t/gone/x");
	expect_keys(m, "ns", "t/a/");
	ctl_manager_deliver(m, P_RS, CTL_ADD, rs);
	ctl_manager_deliver(m, P_RS, CTL_UPDATE, rs);
	expect_keys(m, "ns", "");
	expect_keys(m, "reader", "");
	ctl_manager_deliver(m, P_RS, CTL_DELETE, rs);
	expect_keys(m, "ns", "t/b/");
	expect_keys(m, "self", "");
	assert_int_equal(calls, 4); /* pod add, update, delete; rs delete */
	ctl_manager_deliver(m, "/api/v1/nodes", CTL_ADD, pod);
	assert_int_equal(calls, 4);
	json_decref(pod);
	json_decref(rs);
	ctl_manager_free(m);

	cfg.controllers = "self,nope";
	m = (struct ctl_manager *)&cfg;
	assert_int_equal(ctl_manager_new(&cfg, &m), E_INVALID);
	assert_ptr_equal(m, (struct ctl_manager *)&cfg); /* not written on failure */
}

/* ---- workers, retries, ticks, hooks ---- */

struct fake {
	pthread_mutex_t mu;
	int fails_left;   /* "retry" fails this many times first */
	int retry_syncs, tick_syncs, started, stopped;
	int64_t first_ms, last_ms, tick1_ms, tick6_ms;
	char *bad_key;
};

static int sync_retry(void *ud, const char *key)
{
	struct fake *f = ud;
	pthread_mutex_lock(&f->mu);
	int rc = 0;
	if (strcmp(key, "t/retry/k") != 0 && !f->bad_key)
		f->bad_key = xstrdup(key);
	if (f->retry_syncs++ == 0)
		f->first_ms = mono_ms();
	f->last_ms = mono_ms();
	if (f->fails_left > 0) {
		f->fails_left--;
		rc = E_UNAVAILABLE;
	}
	pthread_mutex_unlock(&f->mu);
	return rc;
}

static int sync_tick(void *ud, const char *key)
{
	struct fake *f = ud;
	pthread_mutex_lock(&f->mu);
	if (strcmp(key, "t/tick/k") != 0 && !f->bad_key)
		f->bad_key = xstrdup(key);
	if (++f->tick_syncs == 1)
		f->tick1_ms = mono_ms();
	else if (f->tick_syncs == 6)
		f->tick6_ms = mono_ms();
	pthread_mutex_unlock(&f->mu);
	return 0;
}

static int hook_start(void *ud)
{
	struct fake *f = ud;
	pthread_mutex_lock(&f->mu);
	f->started++;
	pthread_mutex_unlock(&f->mu);
	return 0;
}

static int hook_start_fails(void *ud)
{
	(void)ud;
	return E_UNAVAILABLE;
}

static void hook_stop(void *ud)
{
	struct fake *f = ud;
	pthread_mutex_lock(&f->mu);
	f->stopped++;
	pthread_mutex_unlock(&f->mu);
}

static int sync_never(void *ud, const char *key)
{
	(void)ud;
	(void)key;
	fail_msg("a controller whose start hook failed was synced");
	return 0;
}

static const struct ctl_def worker_defs[] = {
	{ "retry", { { NULL } }, sync_retry, .tick_key = "t/retry/k", .start = hook_start, .stop = hook_stop },
	{ "tick", { { NULL } }, sync_tick, .tick_key = "t/tick/k", .period_ms = 40 },
	{ "broken", { { NULL } }, sync_never, .tick_key = "t/broken/k", .start = hook_start_fails, .stop = hook_stop },
};

static bool retried_enough(void *ud)
{
	struct fake *f = ud;
	pthread_mutex_lock(&f->mu);
	bool ok = f->retry_syncs >= 4 && f->tick_syncs >= 6;
	pthread_mutex_unlock(&f->mu);
	return ok;
}

static int leading_calls;
static void on_leading(void *ud, bool leading)
{
	(void)ud;
	assert_true(leading);
	leading_calls++;
}

static void test_workers(void **state)
{
	(void)state;
	struct fake f = { .fails_left = 3 };
	pthread_mutex_init(&f.mu, NULL);
	struct ctl_config cfg = { .defs = worker_defs, .ndefs = 3, .controllers = "*", .workers = 2, .ud = &f,
				  .identity = "me", .on_leading = on_leading };
	struct ctl_manager *m = NULL;
	assert_int_equal(ctl_manager_new(&cfg, &m), 0);
	assert_string_equal(ctl_manager_identity(m), "me");
	assert_false(ctl_manager_leading(m));
	ctl_manager_start(m);
	assert_true(ctl_manager_leading(m)); /* no election: leading at once */
	assert_int_equal(leading_calls, 1);
	assert_true(tl_wait(retried_enough, &f, 5000));
	tl_sleep_ms(200);
	pthread_mutex_lock(&f.mu);
	/* three failures then success: exactly four syncs, with back-off (5+10+20 ms at least) */
	assert_int_equal(f.retry_syncs, 4);
	assert_true(f.last_ms - f.first_ms >= 35);
	assert_null(f.bad_key);
	int ticks = f.tick_syncs;
	int64_t five_periods = f.tick6_ms - f.tick1_ms; /* each tick 40 ms after the previous one ended */
	pthread_mutex_unlock(&f.mu);
	if (five_periods < 200 || five_periods > 2000)
		fail_msg("6 ticks of 40 ms took %lld ms", (long long)five_periods);
	ctl_manager_free(m);
	assert_int_equal(f.started, 1);
	assert_int_equal(f.stopped, 1); /* the broken controller's stop is not called */
	assert_true(ticks >= 6);
	pthread_mutex_destroy(&f.mu);
}

/* ---- a controller's own worker count ---- */

struct conc {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int inflight, max, done;
};

/* Holds its worker until 4 syncs are in flight at once (or 300 ms), noting the most seen. */
static int sync_wait_company(void *ud, const char *key)
{
	(void)key;
	struct conc *c = ud;
	pthread_mutex_lock(&c->mu);
	if (++c->inflight > c->max)
		c->max = c->inflight;
	pthread_cond_broadcast(&c->cv);
	int64_t until = mono_ms() + 300;
	while (c->max < 4 && mono_ms() < until) {
		struct timespec ts;
		wall_deadline(&ts, 20);
		pthread_cond_timedwait(&c->cv, &c->mu, &ts);
	}
	c->inflight--;
	c->done++;
	pthread_mutex_unlock(&c->mu);
	return 0;
}

static bool conc_done(void *ud)
{
	struct conc *c = ud;
	pthread_mutex_lock(&c->mu);
	bool ok = c->done >= 4;
	pthread_mutex_unlock(&c->mu);
	return ok;
}

static const struct ctl_def own_defs[] = {
	{ "wide", { { NULL } }, sync_wait_company, .workers = 4 },
	{ "narrow", { { NULL } }, sync_wait_company },
};

static void run_conc(const char *ctl, int want_max)
{
	struct conc c = { .max = 0 };
	pthread_mutex_init(&c.mu, NULL);
	pthread_cond_init(&c.cv, NULL);
	struct ctl_config cfg = { .defs = own_defs, .ndefs = 2, .controllers = ctl, .workers = 1, .ud = &c };
	struct ctl_manager *m = NULL;
	assert_int_equal(ctl_manager_new(&cfg, &m), 0);
	ctl_manager_start(m);
	struct workqueue *q = ctl_manager_queue(m, ctl);
	assert_non_null(q);
	wq_add(q, "t/a/1");
	wq_add(q, "t/a/2");
	wq_add(q, "t/a/3");
	wq_add(q, "t/a/4");
	assert_true(tl_wait(conc_done, &c, 5000));
	ctl_manager_free(m);
	assert_int_equal(c.max, want_max);
	pthread_cond_destroy(&c.cv);
	pthread_mutex_destroy(&c.mu);
}

static void test_own_workers(void **state)
{
	(void)state;
	run_conc("wide", 4);   /* its own 4, though the manager's --workers is 1 */
	run_conc("narrow", 1); /* no count of its own: the manager's 1 */
}

/* ---- shared informers and leader election against a real API server ---- */

#define CM_PATH "/api/v1/tenants/t1/namespaces/default/configmaps"
#define CM_ALL "/api/v1/tenants/all/configmaps"
#define LEASE "/apis/coordination.k8s.io/v1/tenants/t1/namespaces/default/leases/ctl-test"

struct seen {
	pthread_mutex_t mu;
	struct buf keys; /* "|ctl:key|..." */
	bool block;      /* leader only: sync_a fails while set */
};

static void seen_add(struct seen *s, const char *ctl, const char *key)
{
	pthread_mutex_lock(&s->mu);
	buf_addf(&s->keys, "|%s:%s", ctl, key);
	pthread_mutex_unlock(&s->mu);
}

static int sync_a(void *ud, const char *key)
{
	seen_add(ud, "a", key);
	return 0;
}

static int sync_b(void *ud, const char *key)
{
	seen_add(ud, "b", key);
	return 0;
}

static int sync_c(void *ud, const char *key)
{
	seen_add(ud, "c", key);
	return 0;
}

static const struct ctl_def inf_defs[] = {
	{ "a", { { CM_ALL, 0, NULL } }, sync_a },
	{ "b", { { CM_ALL, CTL_ADD, key_fixed } }, sync_b },
	/* no event it watches happens: only its period re-queues every object */
	{ "c", { { CM_ALL, CTL_DELETE, NULL } }, sync_c, .period_ms = 200 },
};

struct want {
	struct seen *s;
	const char *what;
};

static bool seen_has(void *ud)
{
	struct want *w = ud;
	pthread_mutex_lock(&w->s->mu);
	bool ok = strstr(buf_cstr(&w->s->keys), w->what) != NULL;
	pthread_mutex_unlock(&w->s->mu);
	return ok;
}

static void test_informers_and_election(void **state)
{
	(void)state;
	struct tl_env env;
	if (!tl_env_up(&env)) {
		fail_msg("ursa-tp-apiserver not built (set URSA_BUILD_DIR)");
	}
	struct rest_client *c = tl_client(&env);
	tl_create_tenant(c, "t1");
	tl_post(c, CM_PATH, "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"before\"}}", 201);

	struct seen s = { .keys = BUF_INIT };
	pthread_mutex_init(&s.mu, NULL);
	struct ctl_config cfg = { .defs = inf_defs, .ndefs = 3, .controllers = "*", .rest = c, .ud = &s,
				  .leader_elect = true, .lease_path = LEASE, .identity = "first",
				  .lease_duration_s = 3, .renew_deadline_s = 2, .retry_period_s = 1,
				  .start_on_leading = true };
	struct ctl_manager *m = NULL;
	assert_int_equal(ctl_manager_new(&cfg, &m), 0);
	ctl_manager_start(m);
	struct want w = { &s, "|a:t1/default/before" };
	assert_true(tl_wait(seen_has, &w, 15000));
	assert_true(ctl_manager_leading(m));
	struct informer *inf = ctl_manager_informer(m, CM_ALL);
	assert_non_null(inf); /* one informer for both controllers */
	w.what = "|b:t/gone/x";
	assert_true(tl_wait(seen_has, &w, 5000));
	w.what = "|c:t1/default/before";
	assert_true(tl_wait(seen_has, &w, 5000));

	/* a second manager with the same lease stays standby and starts nothing */
	struct seen s2 = { .keys = BUF_INIT };
	pthread_mutex_init(&s2.mu, NULL);
	struct ctl_config cfg2 = cfg;
	cfg2.identity = "second";
	cfg2.ud = &s2;
	struct ctl_manager *m2 = NULL;
	assert_int_equal(ctl_manager_new(&cfg2, &m2), 0);
	ctl_manager_start(m2);

	tl_post(c, CM_PATH, "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"after\"}}", 201);
	w.what = "|a:t1/default/after";
	assert_true(tl_wait(seen_has, &w, 10000));
	tl_sleep_ms(1500);
	assert_false(ctl_manager_leading(m2));
	assert_null(ctl_manager_informer(m2, CM_ALL));
	assert_int_equal(s2.keys.len, 0);

	/* the leader goes (releasing the lease): the standby takes over and lists */
	ctl_manager_free(m);
	struct want w2 = { &s2, "|a:t1/default/after" };
	assert_true(tl_wait(seen_has, &w2, 15000));
	assert_true(ctl_manager_leading(m2));
	ctl_manager_free(m2);

	buf_release(&s.keys);
	buf_release(&s2.keys);
	pthread_mutex_destroy(&s.mu);
	pthread_mutex_destroy(&s2.mu);
	rest_free(c);
	tl_env_down(&env);
}

/* ---- shutdown while a sync reads an informer ---- */

#define SLOW_LEASE "/apis/coordination.k8s.io/v1/tenants/t1/namespaces/default/leases/ctl-slow"

struct slow {
	struct ctl_manager *m; /* set before start */
	atomic_bool hold;      /* the next sync waits, then reads the informer */
	atomic_bool in_sync, done, found;
	atomic_int leading_changes;
};

/* As the RM's node lifecycle tick: a standby tick controller reading the informer. Once held,
 * it sleeps through the manager's shutdown (which begins meanwhile), then looks an object up:
 * the informer must still be there. */
static int sync_slow(void *ud, const char *key)
{
	struct slow *s = ud;
	(void)key;
	struct informer *inf = ctl_manager_informer(s->m, CM_ALL);
	if (!inf || !informer_synced(inf) || !atomic_load(&s->hold) || atomic_load(&s->in_sync))
		return 0;
	atomic_store(&s->in_sync, true);
	tl_sleep_ms(800);
	json_t *o = informer_get(inf, "t1/default/before");
	atomic_store(&s->found, o != NULL);
	json_decref(o);
	atomic_store(&s->done, true);
	return 0;
}

static const struct ctl_def slow_defs[] = {
	{ "slow", { { CM_ALL, 0, ctl_key_none } }, sync_slow, .tick_key = "t/slow/tick", .period_ms = 50,
	  .standby = true },
};

static void on_leading_slow(void *ud, bool leading)
{
	struct slow *s = ud;
	(void)leading;
	atomic_fetch_add(&s->leading_changes, 1);
}

static bool slow_state(void *ud)
{
	struct slow *s = ud;
	return ctl_manager_leading(s->m) && atomic_load(&s->in_sync);
}

/* The crash of ursa-rm-controller-manager on SIGTERM: the manager stopped (and freed) its
 * informers while a worker was still syncing, then joined the workers. Stopping now loses
 * leadership first (the lease is released), ends the workers, and only then the informers. */
static void test_free_while_syncing(void **state)
{
	(void)state;
	struct tl_env env;
	if (!tl_env_up(&env)) {
		fail_msg("ursa-tp-apiserver not built (set URSA_BUILD_DIR)");
	}
	struct rest_client *c = tl_client(&env);
	tl_create_tenant(c, "t1");
	tl_post(c, CM_PATH, "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"before\"}}", 201);
	for (int round = 0; round < 3; round++) {
		struct slow s = { 0 };
		struct ctl_config cfg = { .defs = slow_defs, .ndefs = 1, .controllers = "*", .rest = c, .ud = &s,
					  .leader_elect = true, .lease_path = SLOW_LEASE, .identity = "slow",
					  .lease_duration_s = 3, .renew_deadline_s = 2, .retry_period_s = 1,
					  .on_leading = on_leading_slow };
		assert_int_equal(ctl_manager_new(&cfg, &s.m), 0);
		ctl_manager_start(s.m);
		atomic_store(&s.hold, true);
		assert_true(tl_wait(slow_state, &s, 15000));
		ctl_manager_free(s.m); /* what SIGTERM does, while the sync sleeps */
		assert_true(atomic_load(&s.done));  /* the worker ended before the manager returned */
		assert_true(atomic_load(&s.found)); /* and its informer was still there */
		assert_int_equal(atomic_load(&s.leading_changes), 2); /* became leader, lost it on the way out */
	}
	rest_free(c);
	tl_env_down(&env);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse),
		cmocka_unit_test(test_dispatch),
		cmocka_unit_test(test_workers),
		cmocka_unit_test(test_own_workers),
		cmocka_unit_test(test_informers_and_election),
		cmocka_unit_test(test_free_while_syncing),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
