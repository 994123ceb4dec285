/* Tenant backup and restore's pure parts (src/common/apiserver/backup.c): continue tokens
 * round-trip and refuse what they did not make; restore_item places each kind's item at its key,
 * rewrites it for the tenant restored (new uids that still join owners to what they own; pods
 * come back unscheduled; controlled pods are skipped) and refuses items that do not fit; a move's
 * copy keeps objects as stored and takes deletes; the keys a move's follow reports (changes.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>
#include "apiserver/internal.h"
#include "ursa/jsonutil.h"

static int scope(void *ud, const char *resource)
{
	(void)ud;
	if (strcmp(resource, "tenants") == 0)
		return SCOPE_CLUSTER;
	if (strcmp(resource, "namespaces") == 0 || strcmp(resource, "clusterroles") == 0)
		return SCOPE_TENANT;
	if (strcmp(resource, "pods") == 0 || strcmp(resource, "replicasets") == 0 || strcmp(resource, "secrets") == 0)
		return SCOPE_NAMESPACE;
	return -1;
}

static void test_token(void **state)
{
	(void)state;
	struct buf b = BUF_INIT;
	backup_token_format(1234, 7, "/registry/pods/acme/default/web", &b);
	int64_t rev;
	size_t range;
	char *after;
	assert_int_equal(backup_token_parse(buf_cstr(&b), &rev, &range, &after), 0);
	assert_int_equal(rev, 1234);
	assert_int_equal(range, 7);
	assert_string_equal(after, "/registry/pods/acme/default/web");
	free(after);
	buf_reset(&b);
	backup_token_format(9, 0, NULL, &b);
	assert_int_equal(backup_token_parse(buf_cstr(&b), &rev, &range, &after), 0);
	assert_string_equal(after, "");
	free(after);
	static const char *const bad[] = {
		"", "0", "zz", "not base64!", "e30", /* {} */
		"eyJyZXYiOjAsInJhbmdlIjowLCJhZnRlciI6IiJ9",     /* rev 0 */
		"eyJyZXYiOjUsInJhbmdlIjotMSwiYWZ0ZXIiOiIifQ",   /* range -1 */
		"eyJyZXYiOjUsInJhbmdlIjowfQ",                   /* no after */
		"eyJyZXYiOiI1IiwicmFuZ2UiOjAsImFmdGVyIjoiIn0", /* rev a string */
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(backup_token_parse(bad[i], &rev, &range, &after), -1);
	buf_release(&b);
}

static int item(const struct restore_target *t, const char *json, char **rel, json_t **obj)
{
	json_t *it = json_loads(json, 0, NULL);
	assert_non_null(it);
	struct buf err = BUF_INIT;
	int rc = restore_item(t, it, rel, obj, &err);
	if (rc < 0)
		assert_true(err.len > 0);
	buf_release(&err);
	json_decref(it);
	return rc;
}

static void test_same_tenant(void **state)
{
	(void)state;
	struct restore_target t = { .from = "acme", .to = "acme", .restore_id = "r1", .scope_of = scope };
	char *rel;
	json_t *obj;
	assert_int_equal(item(&t, "{\"resource\":\"replicasets\",\"path\":\"default/web\",\"object\":{\"metadata\":{"
				  "\"name\":\"web\",\"namespace\":\"default\",\"tenant\":\"acme\",\"uid\":\"u-1\","
				  "\"hashKey\":5,\"resourceVersion\":\"77\",\"deletionTimestamp\":\"x\"}}}",
			      &rel, &obj),
			 0);
	assert_string_equal(rel, "replicasets/acme/default/web");
	/* a restored object is a new one: a new uid, the same for every reference in this restore */
	char want[37];
	restore_map_uid("r1", "acme", "u-1", want);
	assert_string_equal(json_path_str(obj, "metadata.uid"), want);
	assert_int_equal(json_integer_value(json_path(obj, "metadata.hashKey")), hash_key_of_uid(want));
	char other[37];
	restore_map_uid("r2", "acme", "u-1", other); /* another restore: another uid */
	assert_string_not_equal(other, want);
	assert_null(json_path(obj, "metadata.resourceVersion"));
	assert_null(json_path(obj, "metadata.deletionTimestamp"));
	free(rel);
	json_decref(obj);
	/* the tenant object: Restoring, marked with the restore's id */
	assert_int_equal(item(&t, "{\"resource\":\"tenants\",\"path\":\"acme\",\"object\":{\"metadata\":{\"name\":"
				  "\"acme\",\"tenant\":\"system\"},\"status\":{\"phase\":\"Terminating\"}}}",
			      &rel, &obj),
			 0);
	assert_string_equal(rel, "tenants/acme");
	assert_string_equal(json_path_str(obj, "status.phase"), "Restoring");
	assert_string_equal(json_string_value(json_object_get(json_path(obj, "metadata.annotations"), "ursa.io/restore")),
			    "r1");
	free(rel);
	json_decref(obj);
	/* a bare pod: new uid, unscheduled, Pending */
	assert_int_equal(item(&t, "{\"resource\":\"pods\",\"path\":\"default/p\",\"object\":{\"metadata\":{\"name\":"
				  "\"p\",\"namespace\":\"default\",\"uid\":\"u-2\"},\"spec\":{\"nodeName\":\"n-1\"},"
				  "\"status\":{\"phase\":\"Running\",\"podIP\":\"10.0.0.1\"}}}",
			      &rel, &obj),
			 0);
	assert_string_not_equal(json_path_str(obj, "metadata.uid"), "u-2");
	assert_int_equal(json_integer_value(json_path(obj, "metadata.hashKey")),
			 hash_key_of_uid(json_path_str(obj, "metadata.uid")));
	assert_null(json_path(obj, "spec.nodeName"));
	assert_string_equal(json_path_str(obj, "status.phase"), "Pending");
	assert_null(json_path(obj, "status.podIP"));
	free(rel);
	json_decref(obj);
	/* a pod a ReplicaSet controls: left to the ReplicaSet */
	assert_int_equal(item(&t, "{\"resource\":\"pods\",\"path\":\"default/web-x\",\"object\":{\"metadata\":{"
				  "\"name\":\"web-x\",\"namespace\":\"default\",\"ownerReferences\":[{\"kind\":"
				  "\"ReplicaSet\",\"uid\":\"u-1\",\"controller\":true}]}}}",
			      &rel, &obj),
			 1);
	assert_null(rel);
	assert_null(obj);
}

static void test_clone(void **state)
{
	(void)state;
	struct restore_target t = { .from = "acme", .to = "acme2", .restore_id = "r1", .scope_of = scope };
	char *rel, *rel2;
	json_t *obj, *obj2;
	assert_int_equal(item(&t, "{\"resource\":\"replicasets\",\"path\":\"default/web\",\"object\":{\"metadata\":{"
				  "\"name\":\"web\",\"namespace\":\"default\",\"tenant\":\"acme\",\"uid\":\"u-1\","
				  "\"ownerReferences\":[{\"kind\":\"Deployment\",\"uid\":\"u-0\",\"controller\":true}]}}}",
			      &rel, &obj),
			 0);
	assert_string_equal(rel, "replicasets/acme2/default/web");
	assert_string_equal(json_path_str(obj, "metadata.tenant"), "acme2");
	const char *uid = json_path_str(obj, "metadata.uid");
	assert_int_equal(strlen(uid), 36);
	assert_string_not_equal(uid, "u-1");
	assert_int_equal(uid[14], '8'); /* version 8 */
	char want[37];
	restore_map_uid("r1", "acme2", "u-0", want);
	assert_string_equal(json_string_value(json_object_get(json_array_get(json_path(obj, "metadata.ownerReferences"), 0), "uid")),
			    want);
	/* the deployment u-0 maps to the same uid its ReplicaSet's reference now names */
	assert_int_equal(item(&t, "{\"resource\":\"replicasets\",\"path\":\"default/dep\",\"object\":{\"metadata\":{"
				  "\"name\":\"dep\",\"namespace\":\"default\",\"uid\":\"u-0\"}}}",
			      &rel2, &obj2),
			 0);
	assert_string_equal(json_path_str(obj2, "metadata.uid"), want);
	free(rel);
	free(rel2);
	json_decref(obj);
	json_decref(obj2);
	/* a service account token secret follows its account */
	assert_int_equal(item(&t, "{\"resource\":\"secrets\",\"path\":\"default/tok\",\"object\":{\"metadata\":{"
				  "\"name\":\"tok\",\"namespace\":\"default\",\"annotations\":{"
				  "\"kubernetes.io/service-account.uid\":\"u-9\"}}}}",
			      &rel, &obj),
			 0);
	restore_map_uid("r1", "acme2", "u-9", want);
	assert_string_equal(json_string_value(json_object_get(json_path(obj, "metadata.annotations"),
							      "kubernetes.io/service-account.uid")),
			    want);
	free(rel);
	json_decref(obj);
	/* tenant-scoped kinds and custom resources */
	assert_int_equal(item(&t, "{\"resource\":\"clusterroles\",\"path\":\"system:view\",\"object\":{\"metadata\":{"
				  "\"name\":\"system:view\"}}}",
			      &rel, &obj),
			 0);
	assert_string_equal(rel, "clusterroles/acme2/system:view");
	free(rel);
	json_decref(obj);
	assert_int_equal(item(&t, "{\"resource\":\"customresources/stable.example.com/crontabs\",\"path\":\"default/c\","
				  "\"object\":{\"metadata\":{\"name\":\"c\",\"namespace\":\"default\"}}}",
			      &rel, &obj),
			 0);
	assert_string_equal(rel, "customresources/stable.example.com/crontabs/acme2/default/c");
	free(rel);
	json_decref(obj);
	assert_int_equal(item(&t, "{\"resource\":\"tenants\",\"path\":\"acme\",\"object\":{\"metadata\":{\"name\":"
				  "\"acme\"}}}",
			      &rel, &obj),
			 0);
	assert_string_equal(rel, "tenants/acme2");
	assert_string_equal(json_path_str(obj, "metadata.name"), "acme2");
	free(rel);
	json_decref(obj);
}

static void test_refused(void **state)
{
	(void)state;
	struct restore_target t = { .from = "acme", .to = "acme2", .restore_id = "r1", .scope_of = scope };
	static const char *const bad[] = {
		"[]",
		"{\"resource\":\"pods\",\"path\":\"default/p\"}",
		"{\"resource\":\"widgets\",\"path\":\"default/p\",\"object\":{\"metadata\":{\"name\":\"p\",\"namespace\":\"default\"}}}",
		"{\"resource\":\"pods\",\"path\":\"p\",\"object\":{\"metadata\":{\"name\":\"p\"}}}",
		"{\"resource\":\"pods\",\"path\":\"default/p\",\"object\":{\"metadata\":{\"name\":\"q\",\"namespace\":\"default\"}}}",
		"{\"resource\":\"pods\",\"path\":\"default/p\",\"object\":{\"metadata\":{\"name\":\"p\",\"namespace\":\"other\"}}}",
		"{\"resource\":\"pods\",\"path\":\"default/../p\",\"object\":{\"metadata\":{\"name\":\"../p\",\"namespace\":\"default\"}}}",
		"{\"resource\":\"pods\",\"path\":\"Default/p\",\"object\":{\"metadata\":{\"name\":\"p\",\"namespace\":\"Default\"}}}",
		"{\"resource\":\"namespaces\",\"path\":\"a/b\",\"object\":{\"metadata\":{\"name\":\"b\",\"namespace\":\"a\"}}}",
		"{\"resource\":\"tenants\",\"path\":\"other\",\"object\":{\"metadata\":{\"name\":\"other\"}}}",
		"{\"resource\":\"customresources/example/crontabs\",\"path\":\"c\",\"object\":{\"metadata\":{\"name\":\"c\"}}}",
		"{\"resource\":\"customresources/stable.example.com/cron/tabs\",\"path\":\"c\",\"object\":{\"metadata\":{\"name\":\"c\"}}}",
		"{\"resource\":\"pods\",\"path\":\"default/\",\"object\":{\"metadata\":{\"name\":\"\",\"namespace\":\"default\"}}}",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char *rel;
		json_t *obj;
		print_message("%s\n", bad[i]);
		assert_int_equal(item(&t, bad[i], &rel, &obj), -1);
		assert_null(rel);
		assert_null(obj);
	}
}

/* A move's copy: the object as stored, but for resourceVersion and selfLink. */
static void test_move(void **state)
{
	(void)state;
	struct restore_target t = { .from = "acme", .to = "acme", .restore_id = "m1", .move = true, .scope_of = scope };
	char *rel;
	json_t *obj;
	const char *pod = "{\"resource\":\"pods\",\"path\":\"default/web-x\",\"object\":{\"metadata\":{"
			  "\"name\":\"web-x\",\"namespace\":\"default\",\"tenant\":\"acme\",\"uid\":\"u-2\",\"hashKey\":5,"
			  "\"resourceVersion\":\"77\",\"selfLink\":\"/x\",\"generation\":3,"
			  "\"creationTimestamp\":\"2026-01-01T00:00:00Z\",\"deletionTimestamp\":\"2026-01-02T00:00:00Z\","
			  "\"managedFields\":[{\"manager\":\"kubectl\"}],\"ownerReferences\":[{\"kind\":\"ReplicaSet\","
			  "\"uid\":\"u-1\",\"controller\":true}]},\"spec\":{\"nodeName\":\"n-1\"},"
			  "\"status\":{\"phase\":\"Running\",\"podIP\":\"10.0.0.1\"}}}";
	assert_int_equal(item(&t, pod, &rel, &obj), 0);
	assert_string_equal(rel, "pods/acme/default/web-x");
	json_t *it = json_loads(pod, 0, NULL), *want = json_deep_copy(json_object_get(it, "object"));
	json_object_del(json_object_get(want, "metadata"), "resourceVersion");
	json_object_del(json_object_get(want, "metadata"), "selfLink");
	assert_true(json_equal(obj, want));
	json_decref(want);
	json_decref(it);
	free(rel);
	json_decref(obj);
	/* the tenant object: MovingIn under the move's id, whatever the source's says */
	assert_int_equal(item(&t, "{\"resource\":\"tenants\",\"path\":\"acme\",\"object\":{\"metadata\":{\"name\":"
				  "\"acme\",\"tenant\":\"system\",\"uid\":\"u-t\",\"annotations\":{\"a\":\"b\","
				  "\"ursa.io/move\":\"m0\"}},\"status\":{\"phase\":\"MovingOut\"}}}",
			      &rel, &obj),
			 0);
	assert_string_equal(rel, "tenants/acme");
	assert_string_equal(json_path_str(obj, "status.phase"), "MovingIn");
	assert_string_equal(json_path_str(obj, "metadata.uid"), "u-t");
	assert_string_equal(json_string_value(json_object_get(json_path(obj, "metadata.annotations"), "ursa.io/move")), "m1");
	assert_string_equal(json_string_value(json_object_get(json_path(obj, "metadata.annotations"), "a")), "b");
	free(rel);
	json_decref(obj);
	/* deletes: the key, no object */
	assert_int_equal(item(&t, "{\"resource\":\"secrets\",\"path\":\"default/s\",\"deleted\":true}", &rel, &obj), 2);
	assert_string_equal(rel, "secrets/acme/default/s");
	assert_null(obj);
	free(rel);
	assert_int_equal(item(&t, "{\"resource\":\"customresources/stable.example.com/crontabs\",\"path\":\"default/c\","
				  "\"deleted\":true}",
			      &rel, &obj),
			 2);
	assert_string_equal(rel, "customresources/stable.example.com/crontabs/acme/default/c");
	free(rel);
	static const char *const bad[] = {
		"{\"resource\":\"tenants\",\"path\":\"acme\",\"deleted\":true}",
		"{\"resource\":\"pods\",\"path\":\"default/p\",\"deleted\":true,\"object\":{\"metadata\":{\"name\":\"p\",\"namespace\":\"default\"}}}",
		"{\"resource\":\"pods\",\"path\":\"default/p\",\"deleted\":\"yes\"}",
		"{\"resource\":\"pods\",\"path\":\"default/p\",\"deleted\":false}",
		"{\"resource\":\"pods\",\"path\":\"p\",\"deleted\":true}",
		"{\"resource\":\"pods\",\"path\":\"default/../p\",\"deleted\":true}",
		"{\"resource\":\"widgets\",\"path\":\"default/p\",\"deleted\":true}",
		"{\"resource\":\"pods\",\"path\":\"default/p\",\"object\":{\"metadata\":{\"name\":\"p\",\"namespace\":\"default\",\"tenant\":\"other\"}}}",
		"{\"resource\":\"tenants\",\"path\":\"other\",\"object\":{\"metadata\":{\"name\":\"other\"}}}",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		print_message("%s\n", bad[i]);
		assert_int_equal(item(&t, bad[i], &rel, &obj), -1);
		assert_null(rel);
		assert_null(obj);
	}
	/* a plain restore takes no deletes */
	t.move = false;
	assert_int_equal(item(&t, "{\"resource\":\"pods\",\"path\":\"default/p\",\"deleted\":true}", &rel, &obj), -1);
}

static bool covered(void *ud, const char *plural)
{
	(void)ud;
	return strcmp(plural, "pods") == 0 || strcmp(plural, "namespaces") == 0 || strcmp(plural, "clusterroles") == 0;
}

/* Which keys are a tenant's, as a backup reads them, and how a change names them. */
static void test_change_keys(void **state)
{
	(void)state;
	static const struct {
		const char *rel, *resource, *path;
	} cases[] = {
		{ "tenants/acme", "tenants", "acme" },
		{ "pods/acme/default/web", "pods", "default/web" },
		{ "namespaces/acme/default", "namespaces", "default" },
		{ "clusterroles/acme/system:view", "clusterroles", "system:view" },
		{ "customresources/stable.example.com/crontabs/acme/default/c", "customresources/stable.example.com/crontabs",
		  "default/c" },
		{ "customresources/stable.example.com/crontabs/acme/c", "customresources/stable.example.com/crontabs", "c" },
		{ "tenants/acme2", NULL, NULL },
		{ "tenants/acm", NULL, NULL },
		{ "tenants/acme/x", NULL, NULL },
		{ "pods/acme2/default/web", NULL, NULL },
		{ "pods/acme", NULL, NULL },
		{ "pods/acme/", NULL, NULL },
		{ "pods/~progress", NULL, NULL },
		{ "events/acme/default/e", NULL, NULL },
		{ "leases/acme/kube-node-lease/n", NULL, NULL },
		{ "nodes/acme", NULL, NULL },
		{ "customresources/~progress", NULL, NULL },
		{ "customresources/g/p/acme", NULL, NULL },
		{ "customresources/g/p/acme/", NULL, NULL },
		{ "customresources/g/p/other/acme/x", NULL, NULL },
		{ "customresources//p/acme/x", NULL, NULL },
		{ "~changes-progress", NULL, NULL },
		{ "", NULL, NULL },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *resource = NULL;
		const char *path = NULL;
		print_message("%s\n", cases[i].rel);
		bool ok = change_key_classify(cases[i].rel, "acme", covered, NULL, &resource, &path);
		assert_int_equal(ok, cases[i].resource != NULL);
		if (ok) {
			assert_string_equal(resource, cases[i].resource);
			assert_string_equal(path, cases[i].path);
		}
		free(resource);
	}
	/* the lines: a put as a backup's, a delete with "deleted" */
	struct buf b = BUF_INIT;
	assert_true(backup_line(&b, "pods", "default/web", "{\"a\":1}", 7));
	assert_true(backup_line(&b, "pods", "default/web", NULL, 0));
	assert_false(backup_line(&b, "pods", "default/web", "x", 1));
	assert_string_equal(buf_cstr(&b), "{\"resource\":\"pods\",\"path\":\"default/web\",\"object\":{\"a\":1}}\n"
					  "{\"resource\":\"pods\",\"path\":\"default/web\",\"deleted\":true}\n");
	buf_release(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_token),
		cmocka_unit_test(test_same_tenant),
		cmocka_unit_test(test_clone),
		cmocka_unit_test(test_refused),
		cmocka_unit_test(test_move),
		cmocka_unit_test(test_change_keys),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
