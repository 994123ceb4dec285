/* schema_prune and schema_json_duplicates: synthetic tables for the walk itself, and full real
 * manifests (tests/unit/schema/manifests) against the real tables: a field Kubernetes has that a
 * table lacks would make fieldValidation=Strict refuse a valid manifest, so those tests list
 * every field pruned. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <jansson.h>
#include "ursa/schema.h"

/* Single quotes stand for double quotes so the cases stay readable. */
static json_t *J(const char *s)
{
	char *t = strdup(s);
	for (char *p = t; *p; p++)
		if (*p == '\'')
			*p = '"';
	json_error_t e;
	json_t *j = json_loads(t, 0, &e);
	if (!j)
		fail_msg("bad test JSON %s: %s", s, e.text);
	free(t);
	return j;
}

static void assert_json_eq(const json_t *got, const char *want_s)
{
	json_t *want = J(want_s);
	if (!json_equal(got, want)) {
		char *g = json_dumps(got, JSON_SORT_KEYS | JSON_COMPACT), *w = json_dumps(want, JSON_SORT_KEYS | JSON_COMPACT);
		fail_msg("got  %s\nwant %s", g, w);
	}
	json_decref(want);
}

/* A small synthetic type: root {metadata (the real ObjectMeta), spec {replicas, items[] {name,
 * port}, labels map, blob opaque, inline {extra}}, status opaque}. */
static const struct pb_field t_item[] = { F_STR(1, "name"), F_I32(2, "port") };
static PB_MSG(tm_item, t_item);
static const struct pb_field t_inline[] = { F_STR(9, "extra") };
static PB_MSG(tm_inline, t_inline);
static const struct pb_field t_spec[] = {
	F_I32(1, "replicas"), F_MSGR(2, "items", &tm_item), F_MAPS(3, "labels"), F_OPAQUE(4, "blob"), F_INLINE(5, &tm_inline),
	F_MSG(6, "one", &tm_item), F_MAPQ(7, "limits"),
};
static PB_MSG(tm_spec, t_spec);
static const struct pb_field t_root[] = {
	F_MSG(1, "metadata", &pm_object_meta), F_MSG(2, "spec", &tm_spec), F_OPAQUE(3, "status"),
};
static PB_MSG(tm_root, t_root);

/* Recursive: for the depth cap. */
extern const struct pb_msg tm_node;
static const struct pb_field t_node[] = { F_MSG(1, "child", &tm_node) };
PB_MSG(tm_node, t_node);

static void test_prune_unknown(void **state)
{
	json_t *o = J("{'apiVersion':'x/v1','kind':'T','foo':1,'metadata':{'name':'a','bogus':{},'labels':{'any':'x'}},"
		      "'spec':{'replicas':2,'bar':true,'items':[{'name':'a','port':1,'zap':1},{'name':'b'},'notanobject',{'q':[]}],"
		      "'labels':{'k':'v','deep':'v'},'blob':{'anything':{'goes':1}},'extra':'inline','one':{'name':'x','y':2},"
		      "'limits':{'cpu':'1'}},'status':{'whatever':1}}");
	json_t *paths = json_array();
	size_t n = schema_prune(o, &tm_root, paths);
	assert_int_equal(n, 6);
	assert_json_eq(paths, "['foo','metadata.bogus','spec.bar','spec.items[0].zap','spec.items[3].q','spec.one.y']");
	assert_json_eq(o, "{'apiVersion':'x/v1','kind':'T','metadata':{'name':'a','labels':{'any':'x'}},"
			  "'spec':{'replicas':2,'items':[{'name':'a','port':1},{'name':'b'},'notanobject',{}],"
			  "'labels':{'k':'v','deep':'v'},'blob':{'anything':{'goes':1}},'extra':'inline','one':{'name':'x'},"
			  "'limits':{'cpu':'1'}},'status':{'whatever':1}}");
	json_decref(paths);
	json_decref(o);
}

/* apiVersion and kind belong to the root (and embedded claims), not to a nested message. */
static void test_type_meta_only_at_root(void **state)
{
	json_t *o = J("{'kind':'T','spec':{'kind':'x','apiVersion':'y','one':{'kind':'z'}}}");
	json_t *paths = json_array();
	assert_int_equal(schema_prune(o, &tm_root, paths), 3);
	assert_json_eq(paths, "['spec.kind','spec.apiVersion','spec.one.kind']");
	json_decref(paths);
	json_decref(o);
	/* a StatefulSet's claim templates carry them, a Deployment's pod template does not */
	o = J("{'apiVersion':'apps/v1','kind':'StatefulSet','spec':{'volumeClaimTemplates':[{'apiVersion':'v1',"
	      "'kind':'PersistentVolumeClaim','metadata':{'name':'d'}}],'template':{'kind':'PodTemplate'}}}");
	paths = json_array();
	assert_int_equal(schema_prune(o, pb_kind_schema("apps/v1", "StatefulSet"), paths), 1);
	assert_json_eq(paths, "['spec.template.kind']");
	json_decref(paths);
	json_decref(o);
}

/* Wrong types are left for validation to judge, not pruned nor descended. */
static void test_wrong_types_left(void **state)
{
	json_t *o = J("{'spec':{'items':{'name':1},'one':[1,2],'replicas':{'x':1}},'metadata':null}");
	assert_int_equal(schema_prune(o, &tm_root, NULL), 0);
	assert_json_eq(o, "{'spec':{'items':{'name':1},'one':[1,2],'replicas':{'x':1}},'metadata':null}");
	json_decref(o);
	assert_int_equal(schema_prune(NULL, &tm_root, NULL), 0);
	o = J("{'a':1}");
	assert_int_equal(schema_prune(o, NULL, NULL), 0); /* kinds without a table are not checked */
	json_decref(o);
}

static void test_caps(void **state)
{
	/* more unknown fields than paths kept: all removed, the count says how many */
	json_t *o = json_object();
	for (int i = 0; i < 150; i++) {
		char k[16];
		snprintf(k, sizeof(k), "f%d", i);
		json_object_set_new(o, k, json_integer(i));
	}
	json_t *paths = json_array();
	assert_int_equal(schema_prune(o, &tm_root, paths), 150);
	assert_int_equal(json_array_size(paths), SCHEMA_PRUNE_MAX_PATHS);
	assert_int_equal(json_object_size(o), 0);
	json_decref(paths);
	json_decref(o);
	/* a recursive table over a deep object: the walk stops at the depth cap */
	json_t *root = json_object(), *cur = root;
	for (int i = 0; i < 200; i++) {
		json_t *c = json_object();
		json_object_set_new(cur, "junk", json_integer(i));
		json_object_set_new(cur, "child", c);
		cur = c;
	}
	paths = json_array();
	assert_int_equal(schema_prune(root, &tm_node, paths), SCHEMA_PRUNE_MAX_DEPTH);
	assert_string_equal(json_string_value(json_array_get(paths, 1)), "child.junk");
	json_decref(paths);
	json_decref(root);
}

static void dups(const char *text, const char *want)
{
	json_t *paths = json_array();
	size_t n = schema_json_duplicates(text, strlen(text), paths);
	assert_int_equal(n, json_array_size(paths));
	assert_json_eq(paths, want);
	json_decref(paths);
}

static void test_duplicates(void **state)
{
	dups("{\"replicas\":1,\"replicas\":2}", "['replicas']");
	dups("{\"spec\":{\"replicas\":1,\"x\":{},\"replicas\":2},\"spec\":{}}", "['spec.replicas','spec']");
	dups("{\"a\":[{\"n\":1,\"n\":2},{\"n\":1}],\"b\":{\"n\":1}}", "['a[0].n']");
	dups("{\"a\":1,\"\\u0061\":2}", "['a']"); /* escapes compare by value */
	dups("{\"a\\\"b\":1,\"a\\\"b\":2}", "['a\\'b']");
	dups("{\"k\":\"x,\\\"}\",\"k\":[1,\"]\",{}]}", "['k']");
	dups(" [ {\"a\" : true , \"a\" : null } ] ", "['[0].a']");
	dups("{}", "[]");
	dups("{\"a\":1}", "[]");
	/* malformed text: whatever was found before the error, no crash */
	dups("{\"a\":1,\"a\":", "['a']");
	dups("{\"a", "[]");
	dups("{\"a\":1 \"a\":2}", "[]");
	dups("", "[]");
	dups("[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[", "[]");
	dups("{\"\\ud800\":1,\"\\ud800\":1}", "[]"); /* a key jansson refuses ends the scan */
}

/* Real manifests against the real tables ---------------------------------------------------- */
static json_t *load_manifest(const char *file)
{
	char path[4096];
	const char *src = __FILE__, *slash = strrchr(src, '/');
	snprintf(path, sizeof(path), "%.*s/manifests/%s", slash ? (int)(slash - src) : 1, slash ? src : ".", file);
	json_error_t e;
	json_t *j = json_load_file(path, 0, &e);
	if (!j)
		fail_msg("cannot read %s: %s", path, e.text);
	return j;
}

static void check_manifest(const char *file)
{
	json_t *m = load_manifest(file);
	const char *av = json_string_value(json_object_get(m, "apiVersion")), *kind = json_string_value(json_object_get(m, "kind"));
	const struct pb_msg *msg = pb_kind_schema(av, kind);
	if (!msg)
		fail_msg("%s: no table for %s %s", file, av, kind);
	json_t *copy = json_deep_copy(m), *paths = json_array();
	size_t n = schema_prune(copy, msg, paths);
	if (n) {
		char *p = json_dumps(paths, JSON_COMPACT);
		fail_msg("%s (%s %s): the tables lack %zu field(s) Kubernetes has, Strict would refuse this manifest: %s",
			 file, av, kind, n, p);
	}
	assert_true(json_equal(copy, m));
	json_decref(paths);
	json_decref(copy);
	json_decref(m);
}

static void test_manifest_deployment(void **state) { check_manifest("deployment.json"); }
static void test_manifest_statefulset(void **state) { check_manifest("statefulset.json"); }
static void test_manifest_job(void **state) { check_manifest("job.json"); }
static void test_manifest_cronjob(void **state) { check_manifest("cronjob.json"); }
static void test_manifest_service(void **state) { check_manifest("service.json"); }
static void test_manifest_configmap(void **state) { check_manifest("configmap.json"); }
static void test_manifest_pod(void **state) { check_manifest("pod.json"); }

/* The same Deployment with mistakes in it: exactly those are pruned, in Kubernetes' notation. */
static void test_manifest_with_unknowns(void **state)
{
	json_t *m = load_manifest("deployment.json");
	json_object_set_new(json_object_get(m, "spec"), "foo", json_integer(1));
	json_t *c0 = json_array_get(json_object_get(json_object_get(json_object_get(json_object_get(m, "spec"), "template"),
							    "spec"), "containers"), 0);
	json_object_set_new(c0, "bar", json_string("x"));
	json_object_set_new(json_object_get(c0, "livenessProbe"), "httpGett", json_object());
	json_t *paths = json_array();
	assert_int_equal(schema_prune(m, pb_kind_schema("apps/v1", "Deployment"), paths), 3);
	/* in document order: the added keys come last in their objects */
	assert_json_eq(paths, "['spec.template.spec.containers[0].livenessProbe.httpGett','spec.template.spec.containers[0].bar',"
			      "'spec.foo']");
	json_decref(paths);
	json_decref(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_prune_unknown),
		cmocka_unit_test(test_type_meta_only_at_root),
		cmocka_unit_test(test_wrong_types_left),
		cmocka_unit_test(test_caps),
		cmocka_unit_test(test_duplicates),
		cmocka_unit_test(test_manifest_deployment),
		cmocka_unit_test(test_manifest_statefulset),
		cmocka_unit_test(test_manifest_job),
		cmocka_unit_test(test_manifest_cronjob),
		cmocka_unit_test(test_manifest_service),
		cmocka_unit_test(test_manifest_configmap),
		cmocka_unit_test(test_manifest_pod),
		cmocka_unit_test(test_manifest_with_unknowns),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
