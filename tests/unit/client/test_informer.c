/* Informers against a real etcd and ursa-tp-apiserver: paged initial list, add/update/delete
 * events, resuming after the API server restarts, relisting after etcd compaction. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include "client/client_internal.h"
#include "client_testlib.h"

static struct tl_env g_env;
static struct rest_client *g_c; /* to api[0] */

#define CM_PATH "/api/v1/tenants/t1/namespaces/default/configmaps"

/* ---- what the handlers saw ---- */

struct rec {
	pthread_mutex_t mu;
	struct strmap mirror; /* key → resourceVersion (string) */
	int adds, updates, deletes, synced;
	bool bad; /* an update whose old object differs from the mirror, or similar */
};

static void rec_init(struct rec *r)
{
	memset(r, 0, sizeof(*r));
	pthread_mutex_init(&r->mu, NULL);
	strmap_init(&r->mirror);
}

static void rec_release(struct rec *r)
{
	strmap_release(&r->mirror, free);
	pthread_mutex_destroy(&r->mu);
}

static void mirror_set(struct rec *r, const json_t *obj)
{
	char *key = object_key(obj);
	struct strmap_ent *e = strmap_put(&r->mirror, key, NULL);
	free(e->val);
	e->val = xstrdup(json_path_str(obj, "metadata.resourceVersion"));
	free(key);
}

static void on_add(void *ud, const json_t *obj)
{
	struct rec *r = ud;
	char *key = object_key(obj);
	pthread_mutex_lock(&r->mu);
	if (strmap_get(&r->mirror, key))
		r->bad = true; /* added twice */
	mirror_set(r, obj);
	r->adds++;
	pthread_mutex_unlock(&r->mu);
	free(key);
}

static void on_update(void *ud, const json_t *old_obj, const json_t *new_obj)
{
	struct rec *r = ud;
	char *key = object_key(new_obj);
	pthread_mutex_lock(&r->mu);
	struct strmap_ent *e = strmap_get(&r->mirror, key);
	if (!e || strcmp(e->val, json_path_str(old_obj, "metadata.resourceVersion")))
		r->bad = true;
	mirror_set(r, new_obj);
	r->updates++;
	pthread_mutex_unlock(&r->mu);
	free(key);
}

static void on_delete(void *ud, const json_t *obj)
{
	struct rec *r = ud;
	char *key = object_key(obj);
	void *v = NULL;
	pthread_mutex_lock(&r->mu);
	if (!strmap_del(&r->mirror, key, &v))
		r->bad = true;
	free(v);
	r->deletes++;
	pthread_mutex_unlock(&r->mu);
	free(key);
}

static void on_synced(void *ud)
{
	struct rec *r = ud;
	pthread_mutex_lock(&r->mu);
	r->synced++;
	pthread_mutex_unlock(&r->mu);
}

static const struct informer_handlers rec_handlers = { on_add, on_update, on_delete, on_synced };

struct want_key {
	struct rec *r;
	const char *key;
	bool present;
	const char *rv; /* if set, the mirror's resourceVersion must differ from it */
};

static bool has_key(void *ud)
{
	struct want_key *w = ud;
	pthread_mutex_lock(&w->r->mu);
	struct strmap_ent *e = strmap_get(&w->r->mirror, w->key);
	bool ok = w->present ? e && (!w->rv || strcmp(e->val, w->rv)) : !e;
	pthread_mutex_unlock(&w->r->mu);
	return ok;
}

static void wait_key(struct rec *r, const char *key, bool present, const char *old_rv)
{
	struct want_key w = { r, key, present, old_rv };
	if (!tl_wait(has_key, &w, 20000))
		fail_msg("key %s never became %s", key, present ? "present" : "absent");
}

static bool inf_synced(void *ud)
{
	return informer_synced(ud);
}

static bool inf_watching(void *ud)
{
	unsigned lists, watches;
	informer_counts(ud, &lists, &watches);
	return informer_synced(ud) && watches >= 1;
}

/* ---- server-side helpers ---- */

static void cm_create(struct rest_client *c, const char *ns_path, const char *name, const char *labels)
{
	char *body = xasprintf("{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"%s\"%s%s%s},"
			       "\"data\":{\"v\":\"0\"}}",
			       name, labels ? ",\"labels\":" : "", labels ? labels : "", "");
	tl_post(c, ns_path, body, 201);
	free(body);
}

/* Sets data.v; returns the new resourceVersion (new string). */
static char *cm_update(struct rest_client *c, const char *ns_path, const char *name, const char *v)
{
	char *path = xasprintf("%s/%s", ns_path, name);
	json_t *obj = NULL, *out = NULL;
	assert_int_equal(rest_do(c, "GET", path, NULL, NULL, &obj), 200);
	json_object_set_new(json_obj_child(obj, "data"), "v", json_string(v));
	int rc = rest_do(c, "PUT", path, obj, NULL, &out);
	if (rc != 200)
		fail_msg("PUT %s: %d", path, rc);
	char *rv = xstrdup(json_path_str(out, "metadata.resourceVersion"));
	json_decref(obj);
	json_decref(out);
	free(path);
	return rv;
}

static void cm_delete(struct rest_client *c, const char *ns_path, const char *name)
{
	char *path = xasprintf("%s/%s", ns_path, name);
	int rc = rest_do(c, "DELETE", path, NULL, NULL, NULL);
	if (rc != 200 && rc != 202)
		fail_msg("DELETE %s: %d", path, rc);
	free(path);
}

static char *key_rv(struct informer *inf, const char *key)
{
	json_t *o = informer_get(inf, key);
	char *rv = o ? xstrdup(json_path_str(o, "metadata.resourceVersion")) : NULL;
	json_decref(o);
	return rv;
}

/* The informer's store, the handlers' mirror and the server's list all agree. */
static void assert_converged(struct informer *inf, struct rec *r, const char *list_path)
{
	json_t *list = NULL, *it;
	size_t i;
	assert_int_equal(rest_do(g_c, "GET", list_path, NULL, NULL, &list), 200);
	json_t *items = json_object_get(list, "items");
	assert_int_equal(informer_size(inf), json_array_size(items));
	pthread_mutex_lock(&r->mu);
	assert_int_equal(r->mirror.n, json_array_size(items));
	json_array_foreach(items, i, it) {
		char *key = object_key(it), *rv = key_rv(inf, key);
		const char *want = json_path_str(it, "metadata.resourceVersion");
		struct strmap_ent *e = strmap_get(&r->mirror, key);
		if (!rv || strcmp(rv, want))
			fail_msg("store %s: rv %s, server %s", key, rv ? rv : "(none)", want);
		if (!e || strcmp(e->val, want))
			fail_msg("handlers %s: rv %s, server %s", key, e ? (char *)e->val : "(none)", want);
		free(rv);
		free(key);
	}
	assert_false(r->bad);
	pthread_mutex_unlock(&r->mu);
	json_decref(list);
}

static struct informer *start_synced(const char *path, const char *query, struct rec *r)
{
	struct informer *inf = informer_start(g_c, path, query, &rec_handlers, r);
	assert_non_null(inf);
	assert_true(tl_wait(inf_synced, inf, 15000));
	assert_int_equal(r->synced, 1);
	return inf;
}

static int group_setup(void **state)
{
	if (!tl_env_up(&g_env)) {
		fprintf(stderr, "ursa-tp-apiserver or etcd not found (set URSA_BUILD_DIR): the informer tests cannot run\n");
		return -1; /* a test that cannot run fails */
	}
	g_c = tl_client(&g_env);
	tl_create_tenant(g_c, "t1");
	tl_create_tenant(g_c, "bulk");
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

/* ---- tests ---- */

struct counts {
	int adds, updates, deletes;
};

static struct counts rec_counts(struct rec *r)
{
	pthread_mutex_lock(&r->mu);
	struct counts c = { r->adds, r->updates, r->deletes };
	pthread_mutex_unlock(&r->mu);
	return c;
}


/* All tenants: initial list, then add/update/delete events (before the bulk tenant fills up:
 * see test_paged_list). */
static void test_list_and_events(void **state)
{
	struct rec r;
	NEED_ENV();
	rec_init(&r);
	cm_create(g_c, CM_PATH, "c1", NULL);
	cm_create(g_c, CM_PATH, "c2", NULL);
	cm_create(g_c, "/api/v1/tenants/bulk/namespaces/default/configmaps", "first", NULL);

	struct informer *inf = start_synced("/api/v1/tenants/all/configmaps", NULL, &r);
	assert_true(informer_size(inf) >= 3);
	assert_int_equal(r.adds, (int)informer_size(inf));
	assert_int_equal(r.updates + r.deletes, 0);
	assert_converged(inf, &r, "/api/v1/tenants/all/configmaps");
	json_t *o = informer_get(inf, "bulk/default/first");
	assert_non_null(o);
	assert_string_equal(json_str(o, "kind"), "ConfigMap");
	json_decref(o);

	cm_create(g_c, CM_PATH, "n1", NULL);
	wait_key(&r, "t1/default/n1", true, NULL);
	char *rv0 = key_rv(inf, "t1/default/n1");
	char *rv1 = cm_update(g_c, CM_PATH, "n1", "1");
	wait_key(&r, "t1/default/n1", true, rv0);
	o = informer_get(inf, "t1/default/n1");
	assert_string_equal(json_path_str(o, "data.v"), "1");
	assert_string_equal(json_path_str(o, "metadata.resourceVersion"), rv1);
	json_decref(o);
	cm_delete(g_c, CM_PATH, "n1");
	wait_key(&r, "t1/default/n1", false, NULL);
	assert_null(informer_get(inf, "t1/default/n1"));
	assert_int_equal(r.updates, 1);
	assert_int_equal(r.deletes, 1);
	assert_converged(inf, &r, "/api/v1/tenants/all/configmaps");

	int64_t t0 = mono_ms();
	informer_stop(inf);
	assert_true(mono_ms() - t0 < 1000);
	free(rv0);
	free(rv1);
	rec_release(&r);
}

/* More objects than one page of 500: the informer follows metadata.continue. */
static void test_paged_list(void **state)
{
	struct rec r;
	NEED_ENV();
	rec_init(&r);
	for (int i = 0; i < 520; i++) {
		char *name = xasprintf("b%03d", i);
		cm_create(g_c, "/api/v1/tenants/bulk/namespaces/default/configmaps", name, NULL);
		free(name);
	}
	struct informer *inf = start_synced("/api/v1/tenants/bulk/namespaces/default/configmaps", NULL, &r);
	assert_int_equal(informer_size(inf), 521);
	assert_int_equal(r.adds, 521);
	assert_converged(inf, &r, "/api/v1/tenants/bulk/namespaces/default/configmaps");
	json_t *o = informer_get(inf, "bulk/default/b519");
	assert_non_null(o);
	json_decref(o);
	informer_stop(inf);
	rec_release(&r);
}

/* With two servers configured, the informer fails over when one dies and resumes its
 * watch from the last resourceVersion on the other: no relist, no lost event. */
static void test_failover_resume(void **state)
{
	struct rec r;
	unsigned lists, watches;
	NEED_ENV();
	rec_init(&r);
	/* The second server starts only once the informer has listed and watched from the first:
	 * on a loaded machine a slow first connection could otherwise land it on the second
	 * server from the start, and there would be no fail-over to observe. */
	char *servers = xasprintf("%s,%s", g_env.api[0].url, g_env.api[1].url);
	struct rest_client *c = rest_new(&(struct rest_config){ .servers = servers, .token = TL_TOKEN });
	struct informer *inf = informer_start(c, CM_PATH, NULL, &rec_handlers, &r);
	assert_true(tl_wait(inf_watching, inf, 15000));
	tl_start_api_n(&g_env, 1);
	struct counts c0 = rec_counts(&r);

	tl_stop_api(&g_env);
	struct rest_client *c2 = rest_new(&(struct rest_config){ .servers = g_env.api[1].url, .token = TL_TOKEN });
	cm_create(c2, CM_PATH, "f1", NULL);
	free(cm_update(c2, CM_PATH, "c1", "failover"));
	cm_delete(c2, CM_PATH, "f1");
	cm_create(c2, CM_PATH, "f2", NULL);
	wait_key(&r, "t1/default/f2", true, NULL);
	tl_sleep_ms(200);
	struct counts c1 = rec_counts(&r);
	assert_int_equal(c1.adds - c0.adds, 2);
	assert_int_equal(c1.updates - c0.updates, 1);
	assert_int_equal(c1.deletes - c0.deletes, 1);
	informer_counts(inf, &lists, &watches);
	assert_int_equal(lists, 1);
	assert_true(watches >= 2);
	informer_stop(inf);
	tl_start_api(&g_env);
	cm_delete(g_c, CM_PATH, "f2");
	tl_stop_api_n(&g_env, 1);
	rest_free(c);
	rest_free(c2);
	free(servers);
	rec_release(&r);
}

static void test_selector_query(void **state)
{
	struct rec r;
	NEED_ENV();
	rec_init(&r);
	cm_create(g_c, CM_PATH, "web1", "{\"app\":\"web\"}");
	struct informer *inf = start_synced(CM_PATH, "labelSelector=app%3Dweb", &r);
	assert_int_equal(informer_size(inf), 1);
	cm_create(g_c, CM_PATH, "db1", "{\"app\":\"db\"}");
	cm_create(g_c, CM_PATH, "web2", "{\"app\":\"web\"}");
	wait_key(&r, "t1/default/web2", true, NULL);
	assert_null(informer_get(inf, "t1/default/db1"));
	assert_int_equal(informer_size(inf), 2);
	informer_stop(inf);
	cm_delete(g_c, CM_PATH, "web1");
	cm_delete(g_c, CM_PATH, "web2");
	cm_delete(g_c, CM_PATH, "db1");
	rec_release(&r);
}

/* A skip_event hook drops watch events unparsed: no handler runs for them and the store does not
 * change, while the events around them arrive as usual. */
static atomic_int g_skipped;

static bool skip_marked(void *ud, const char *line, size_t len)
{
	(void)ud;
	bool skip = memmem(line, len, "\"skip-", 6) != NULL;
	if (skip)
		atomic_fetch_add(&g_skipped, 1);
	return skip;
}

static const struct informer_handlers skip_handlers = { on_add, on_update, on_delete, on_synced, skip_marked };

static void test_skip_event(void **state)
{
	struct rec r;
	NEED_ENV();
	rec_init(&r);
	struct informer *inf = informer_start(g_c, CM_PATH, "labelSelector=suite%3Dskip", &skip_handlers, &r);
	assert_non_null(inf);
	assert_true(tl_wait(inf_synced, inf, 15000));
	cm_create(g_c, CM_PATH, "skip-1", "{\"suite\":\"skip\"}");
	cm_create(g_c, CM_PATH, "keep-1", "{\"suite\":\"skip\"}");
	wait_key(&r, "t1/default/keep-1", true, NULL); /* after skip-1's event */
	assert_int_equal(atomic_load(&g_skipped), 1);
	assert_null(informer_get(inf, "t1/default/skip-1"));
	assert_int_equal(informer_size(inf), 1);
	assert_int_equal(r.adds, 1);
	informer_stop(inf);
	cm_delete(g_c, CM_PATH, "skip-1");
	cm_delete(g_c, CM_PATH, "keep-1");
	rec_release(&r);
}

/* The API server goes away; changes are made through a second API server; the first comes
 * back. The informer sees every change exactly once. */
static void test_resume_after_restart(void **state)
{
	struct rec r;
	unsigned lists, watches;
	NEED_ENV();
	rec_init(&r);
	struct informer *inf = start_synced(CM_PATH, NULL, &r);
	struct counts c0 = rec_counts(&r);
	char *c1_rv = key_rv(inf, "t1/default/c1");
	assert_non_null(c1_rv);

	tl_stop_api(&g_env);
	tl_start_api_n(&g_env, 1);
	struct rest_client *c2 = rest_new(&(struct rest_config){ .servers = g_env.api[1].url, .token = TL_TOKEN });
	cm_create(c2, CM_PATH, "r1", NULL);
	free(cm_update(c2, CM_PATH, "c1", "during-outage"));
	cm_delete(c2, CM_PATH, "c2");
	tl_start_api(&g_env);
	cm_create(g_c, CM_PATH, "r2", NULL);

	wait_key(&r, "t1/default/r2", true, NULL);
	wait_key(&r, "t1/default/r1", true, NULL);
	wait_key(&r, "t1/default/c2", false, NULL);
	wait_key(&r, "t1/default/c1", true, c1_rv);
	tl_sleep_ms(300); /* nothing more may arrive */
	struct counts c1 = rec_counts(&r);
	assert_int_equal(c1.adds - c0.adds, 2);
	assert_int_equal(c1.updates - c0.updates, 1);
	assert_int_equal(c1.deletes - c0.deletes, 1);
	assert_converged(inf, &r, CM_PATH);
	/* the restarted server's watch cache starts after the informer's resourceVersion, so it
	 * answers 410 and the informer relists: either way nothing is lost or repeated */
	informer_counts(inf, &lists, &watches);
	assert_true(watches >= 2);

	informer_stop(inf);
	rest_free(c2);
	tl_stop_api_n(&g_env, 1);
	free(c1_rv);
	rec_release(&r);
}

/* While the informer is cut off, objects change and etcd's history is compacted: its watch
 * from the old resourceVersion gets 410 and it relists, delivering the differences. */
static void test_relist_after_compaction(void **state)
{
	struct rec r;
	unsigned lists, watches;
	NEED_ENV();
	rec_init(&r);
	struct informer *inf = start_synced(CM_PATH, NULL, &r);
	struct counts c0 = rec_counts(&r);
	char *r1_rv = key_rv(inf, "t1/default/r1");
	assert_non_null(r1_rv);
	json_t *r2 = informer_get(inf, "t1/default/r2");
	assert_non_null(r2);
	json_decref(r2);

	tl_stop_api(&g_env);
	tl_start_api_n(&g_env, 1);
	struct rest_client *c2 = rest_new(&(struct rest_config){ .servers = g_env.api[1].url, .token = TL_TOKEN });
	cm_create(c2, CM_PATH, "x1", NULL);
	free(cm_update(c2, CM_PATH, "r1", "a"));
	free(cm_update(c2, CM_PATH, "r1", "b"));
	cm_delete(c2, CM_PATH, "r2");
	cm_create(c2, "/api/v1/tenants/bulk/namespaces/default/configmaps", "other", NULL);
	tl_etcd_compact(&g_env);
	tl_start_api(&g_env);

	wait_key(&r, "t1/default/x1", true, NULL);
	wait_key(&r, "t1/default/r2", false, NULL);
	wait_key(&r, "t1/default/r1", true, r1_rv);
	tl_sleep_ms(300);
	struct counts c1 = rec_counts(&r);
	assert_int_equal(c1.adds - c0.adds, 1);
	assert_int_equal(c1.updates - c0.updates, 1); /* two changes, one difference */
	assert_int_equal(c1.deletes - c0.deletes, 1);
	assert_converged(inf, &r, CM_PATH);
	informer_counts(inf, &lists, &watches);
	assert_true(lists >= 2);

	/* and it watches again afterwards */
	cm_create(g_c, CM_PATH, "x2", NULL);
	wait_key(&r, "t1/default/x2", true, NULL);
	informer_stop(inf);
	rest_free(c2);
	tl_stop_api_n(&g_env, 1);
	free(r1_rv);
	rec_release(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_list_and_events),
		cmocka_unit_test(test_paged_list),
		cmocka_unit_test(test_selector_query),
		cmocka_unit_test(test_skip_event),
		cmocka_unit_test(test_failover_resume),
		cmocka_unit_test(test_resume_after_restart),
		cmocka_unit_test(test_relist_after_compaction),
	};
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
