/* The informers' secondary indexes (by namespace, by controller uid, orphans by namespace): what
 * each object is indexed under, and buckets following adds, updates that move an object
 * (orphaning, adoption) and deletes. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "ursa/client.h"
#include "ursa/jsonutil.h"
#include "ursa/xalloc.h"

static json_t *pod(const char *t, const char *ns, const char *name, const char *ctl_uid)
{
	json_t *p = json_pack("{s:s,s:{s:s,s:s,s:s}}", "kind", "Pod", "metadata", "tenant", t, "namespace", ns, "name",
			      name);
	if (ctl_uid) {
		json_t *refs = json_pack("[{s:s,s:s,s:b},{s:s,s:s,s:b}]", "kind", "Other", "uid", "not-controller",
					 "controller", 0, "kind", "ReplicaSet", "uid", ctl_uid, "controller", 1);
		json_object_set_new(json_object_get(p, "metadata"), "ownerReferences", refs);
	}
	return p;
}

static void test_values(void **state)
{
	(void)state;
	json_t *a = pod("t1", "default", "a", "u1"), *b = pod("t1", "default", "b", NULL);
	char *v = obj_index_value(OBJ_INDEX_NAMESPACE, a);
	assert_string_equal(v, "t1/default");
	free(v);
	v = obj_index_value(OBJ_INDEX_CONTROLLER, a);
	assert_string_equal(v, "u1");
	free(v);
	assert_null(obj_index_value(OBJ_INDEX_ORPHANS, a));
	assert_null(obj_index_value(OBJ_INDEX_CONTROLLER, b));
	v = obj_index_value(OBJ_INDEX_ORPHANS, b);
	assert_string_equal(v, "t1/default");
	free(v);
	/* a reference without controller: true does not count */
	json_t *c = pod("t1", "default", "c", NULL);
	json_object_set_new(json_object_get(c, "metadata"), "ownerReferences",
			    json_pack("[{s:s,s:s}]", "kind", "X", "uid", "u9"));
	assert_null(obj_index_value(OBJ_INDEX_CONTROLLER, c));
	/* cluster-scoped */
	json_t *n = json_pack("{s:{s:s,s:s}}", "metadata", "tenant", "system", "name", "node-1");
	v = obj_index_value(OBJ_INDEX_NAMESPACE, n);
	assert_string_equal(v, "system/");
	free(v);
	v = obj_index_ns_value("t", "n");
	assert_string_equal(v, "t/n");
	free(v);
	json_decref(a), json_decref(b), json_decref(c), json_decref(n);
}

struct seen {
	char names[16][16];
	int n;
};

static void record(void *ud, const json_t *obj)
{
	struct seen *s = ud;
	if (s->n < 16)
		snprintf(s->names[s->n++], 16, "%s", json_path_str(obj, "metadata.name"));
}

static bool saw(const struct seen *s, const char *name)
{
	for (int i = 0; i < s->n; i++)
		if (!strcmp(s->names[i], name))
			return true;
	return false;
}

static struct seen lookup(struct obj_index *x, enum obj_index_kind k, const char *v)
{
	struct seen s = { .n = 0 };
	obj_index_foreach(x, k, v, record, &s);
	assert_int_equal((size_t)s.n, obj_index_count(x, k, v));
	return s;
}

static void test_buckets(void **state)
{
	(void)state;
	struct obj_index *x = obj_index_new();
	json_t *a = pod("t1", "default", "a", "u1"), *b = pod("t1", "default", "b", "u1");
	json_t *c = pod("t1", "other", "c", "u2"), *d = pod("t2", "default", "d", NULL);
	obj_index_update(x, "t1/default/a", NULL, a);
	obj_index_update(x, "t1/default/b", NULL, b);
	obj_index_update(x, "t1/other/c", NULL, c);
	obj_index_update(x, "t2/default/d", NULL, d);

	struct seen s = lookup(x, OBJ_INDEX_NAMESPACE, "t1/default");
	assert_int_equal(s.n, 2);
	assert_true(saw(&s, "a") && saw(&s, "b"));
	s = lookup(x, OBJ_INDEX_NAMESPACE, "t2/default"); /* tenants do not mix */
	assert_int_equal(s.n, 1);
	assert_true(saw(&s, "d"));
	s = lookup(x, OBJ_INDEX_CONTROLLER, "u1");
	assert_int_equal(s.n, 2);
	s = lookup(x, OBJ_INDEX_ORPHANS, "t2/default");
	assert_int_equal(s.n, 1);
	assert_int_equal(lookup(x, OBJ_INDEX_ORPHANS, "t1/default").n, 0);
	assert_int_equal(lookup(x, OBJ_INDEX_NAMESPACE, "nope/none").n, 0);
	assert_int_equal(obj_index_buckets(x, OBJ_INDEX_NAMESPACE), 3);

	/* b orphaned: leaves u1's bucket, joins the orphans of t1/default */
	json_t *b2 = pod("t1", "default", "b", NULL);
	obj_index_update(x, "t1/default/b", b, b2);
	s = lookup(x, OBJ_INDEX_CONTROLLER, "u1");
	assert_int_equal(s.n, 1);
	assert_true(saw(&s, "a"));
	s = lookup(x, OBJ_INDEX_ORPHANS, "t1/default");
	assert_int_equal(s.n, 1);
	assert_true(saw(&s, "b"));
	assert_int_equal(lookup(x, OBJ_INDEX_NAMESPACE, "t1/default").n, 2);

	/* d adopted by u2 */
	json_t *d2 = pod("t2", "default", "d", "u2");
	obj_index_update(x, "t2/default/d", d, d2);
	assert_int_equal(lookup(x, OBJ_INDEX_ORPHANS, "t2/default").n, 0);
	assert_int_equal(obj_index_buckets(x, OBJ_INDEX_ORPHANS), 1); /* empty buckets go */
	s = lookup(x, OBJ_INDEX_CONTROLLER, "u2");
	assert_int_equal(s.n, 2);
	assert_true(saw(&s, "c") && saw(&s, "d"));

	/* deletes empty the buckets */
	obj_index_update(x, "t1/default/a", a, NULL);
	obj_index_update(x, "t1/default/b", b2, NULL);
	obj_index_update(x, "t1/other/c", c, NULL);
	obj_index_update(x, "t2/default/d", d2, NULL);
	for (int k = 0; k < OBJ_INDEX__N; k++)
		assert_int_equal(obj_index_buckets(x, (enum obj_index_kind)k), 0);
	struct seen none = { .n = 0 };
	obj_index_foreach(x, OBJ_INDEX__N, "x", record, &none); /* out of range: nothing */
	obj_index_foreach(x, OBJ_INDEX_NAMESPACE, NULL, record, &none);
	assert_int_equal(none.n, 0);
	obj_index_free(x);
	obj_index_free(NULL);
	json_decref(a), json_decref(b), json_decref(c), json_decref(d);
	json_decref(b2), json_decref(d2);
}

/* The index hands out the very object stored (borrowed), the newest after an update. */
static void fetch_ptr(void *ud, const json_t *obj)
{
	*(const json_t **)ud = obj;
}

static void test_borrowed(void **state)
{
	(void)state;
	struct obj_index *x = obj_index_new();
	json_t *a = pod("t", "n", "a", "u"), *a2 = pod("t", "n", "a", "u");
	const json_t *got = NULL;
	obj_index_update(x, "t/n/a", NULL, a);
	obj_index_foreach(x, OBJ_INDEX_NAMESPACE, "t/n", fetch_ptr, &got);
	assert_ptr_equal(got, a);
	obj_index_update(x, "t/n/a", a, a2); /* same buckets */
	obj_index_foreach(x, OBJ_INDEX_CONTROLLER, "u", fetch_ptr, &got);
	assert_ptr_equal(got, a2);
	obj_index_foreach(x, OBJ_INDEX_NAMESPACE, "t/n", fetch_ptr, &got);
	assert_ptr_equal(got, a2);
	assert_int_equal(obj_index_count(x, OBJ_INDEX_NAMESPACE, "t/n"), 1);
	obj_index_free(x);
	json_decref(a), json_decref(a2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_values),
		cmocka_unit_test(test_buckets),
		cmocka_unit_test(test_borrowed),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
