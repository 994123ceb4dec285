/* Leader election on a Lease against a real etcd and ursa-tp-apiserver. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include "client_testlib.h"

static struct tl_env g_env;
static struct rest_client *g_c;

#define LEASES "/apis/coordination.k8s.io/v1/tenants/t1/namespaces/default/leases"

struct cb {
	atomic_int started, stopped;
};

static void on_started(void *ud)
{
	atomic_fetch_add(&((struct cb *)ud)->started, 1);
}

static void on_stopped(void *ud)
{
	atomic_fetch_add(&((struct cb *)ud)->stopped, 1);
}

static struct leader_elector *elector(const char *lease, const char *id, struct cb *cb)
{
	char *path = xasprintf("%s/%s", LEASES, lease);
	struct leader_config cfg = {
		.lease_path = path, .identity = id, .lease_duration_s = 3, .renew_deadline_s = 2,
		.retry_period_s = 1, .on_started = on_started, .on_stopped = on_stopped, .ud = cb,
	};
	struct leader_elector *le = leader_start(g_c, &cfg);
	assert_non_null(le);
	free(path);
	return le;
}

static bool is_leader(void *ud)
{
	return leader_is_leader(ud);
}

static json_t *get_lease(const char *name)
{
	char *path = xasprintf("%s/%s", LEASES, name);
	json_t *l = NULL;
	assert_int_equal(rest_do(g_c, "GET", path, NULL, NULL, &l), 200);
	free(path);
	return l;
}

static int group_setup(void **state)
{
	if (!tl_env_up(&g_env)) {
		fprintf(stderr, "ursa-tp-apiserver or etcd not found (set URSA_BUILD_DIR): the leader tests cannot run\n");
		return -1; /* a test that cannot run fails */
	}
	g_c = tl_client(&g_env);
	tl_create_tenant(g_c, "t1");
	return 0;
}

static int group_teardown(void **state)
{
	rest_free(g_c);
	if (g_env.dir)
		tl_env_down(&g_env);
	return 0;
}

#define NEED_ENV()              \
	do {                    \
		if (!g_env.dir) \
			fail_msg("no test environment"); \
	} while (0)

/* One of two electors leads; when it stops, the other takes over within lease duration +
 * retry period. */
static void test_two_electors(void **state)
{
	struct cb ca = { 0 }, cb = { 0 };
	NEED_ENV();
	struct leader_elector *a = elector("two", "a", &ca);
	assert_true(tl_wait(is_leader, a, 3000));
	assert_int_equal(atomic_load(&ca.started), 1);
	struct leader_elector *b = elector("two", "b", &cb);
	int64_t until = mono_ms() + 2500; /* past one whole lease duration of b watching */
	while (mono_ms() < until) {
		assert_true(leader_is_leader(a));
		assert_false(leader_is_leader(b));
		tl_sleep_ms(50);
	}
	json_t *l = get_lease("two");
	assert_string_equal(json_path_str(l, "spec.holderIdentity"), "a");
	assert_non_null(json_path_str(l, "spec.renewTime"));
	assert_int_equal(strlen(json_path_str(l, "spec.renewTime")), strlen("2026-01-02T03:04:05.123456Z"));
	json_decref(l);

	int64_t t0 = mono_ms();
	leader_stop(a);
	assert_int_equal(atomic_load(&ca.stopped), 1);
	assert_true(tl_wait(is_leader, b, 4000)); /* lease 3 s + retry 1 s */
	int64_t took = mono_ms() - t0;
	assert_true(took <= 4000);
	l = get_lease("two");
	assert_string_equal(json_path_str(l, "spec.holderIdentity"), "b");
	assert_true(json_integer_value(json_path(l, "spec.leaseTransitions")) >= 1);
	json_decref(l);
	leader_stop(b);
	assert_int_equal(atomic_load(&cb.started), 1);
	assert_int_equal(atomic_load(&cb.stopped), 1);
}

/* A lease held by a holder that no longer renews is taken only after it expires. */
static void test_takes_expired_lease(void **state)
{
	struct cb cc = { 0 };
	NEED_ENV();
	struct buf now = BUF_INIT;
	rfc3339_micro_add(&now, now_ms() * 1000);
	char *body = xasprintf("{\"apiVersion\":\"coordination.k8s.io/v1\",\"kind\":\"Lease\",\"metadata\":{\"name\":"
			       "\"ghost\"},\"spec\":{\"holderIdentity\":\"ghost\",\"leaseDurationSeconds\":2,"
			       "\"renewTime\":\"%s\",\"acquireTime\":\"%s\",\"leaseTransitions\":4}}",
			       now.ptr, now.ptr);
	tl_post(g_c, LEASES, body, 201);
	free(body);
	buf_release(&now);

	int64_t t0 = mono_ms();
	struct leader_elector *c = elector("ghost", "c", &cc);
	assert_true(tl_wait(is_leader, c, 5000));
	int64_t took = mono_ms() - t0;
	assert_true(took >= 1900); /* not before the ghost's 2 s ran out */
	json_t *l = get_lease("ghost");
	assert_string_equal(json_path_str(l, "spec.holderIdentity"), "c");
	assert_int_equal(json_integer_value(json_path(l, "spec.leaseTransitions")), 5);
	json_decref(l);
	leader_stop(c);
}

/* A leader that cannot renew steps down within the renew deadline (+ one retry). */
static void test_steps_down_without_server(void **state)
{
	struct cb cd = { 0 };
	NEED_ENV();
	struct leader_elector *d = elector("lonely", "d", &cd);
	assert_true(tl_wait(is_leader, d, 3000));
	tl_stop_api(&g_env);
	int64_t t0 = mono_ms();
	while (leader_is_leader(d) && mono_ms() - t0 < 5000)
		tl_sleep_ms(20);
	assert_false(leader_is_leader(d));
	assert_true(mono_ms() - t0 <= 3500); /* deadline 2 s + retry 1 s */
	assert_int_equal(atomic_load(&cd.stopped), 1);
	tl_start_api(&g_env);
	/* it campaigns again and wins back its own lease */
	assert_true(tl_wait(is_leader, d, 5000));
	assert_int_equal(atomic_load(&cd.started), 2);
	leader_stop(d);
	assert_int_equal(atomic_load(&cd.stopped), 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_two_electors),
		cmocka_unit_test(test_takes_expired_lease),
		cmocka_unit_test(test_steps_down_without_server),
	};
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
