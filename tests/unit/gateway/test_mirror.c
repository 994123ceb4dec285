/* The system CRD mirror's pure parts: the copy keeps name, labels, annotations and spec and marks
 * its source; a pass creates what a target lacks, updates copies that differ, deletes copies
 * whose original is gone, and leaves a target's own CRD of the same name and objects being
 * deleted alone. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "reconcile.h"
#include "ursa/jsonutil.h"

static json_t *parse(const char *s)
{
	json_error_t e;
	json_t *j = json_loads(s, 0, &e);
	if (!j)
		fail_msg("bad test JSON: %s: %s", e.text, s);
	return j;
}

#define SRC_CRD(name, spec)                                                                                          \
	"{\"apiVersion\":\"apiextensions.k8s.io/v1\",\"kind\":\"CustomResourceDefinition\",\"metadata\":{\"name\":\"" \
	name "\",\"uid\":\"u-1\",\"resourceVersion\":\"7\",\"finalizers\":[\"customresourcecleanup.apiextensions.k8s.io\"]," \
	"\"labels\":{\"app\":\"x\"},\"annotations\":{\"note\":\"n\"},\"creationTimestamp\":\"2024-01-01T00:00:00Z\"}," \
	"\"spec\":" spec ",\"status\":{\"acceptedNames\":{}}}"

static void test_object(void **state)
{
	(void)state;
	json_t *src = parse(SRC_CRD("widgets.a.io", "{\"group\":\"a.io\"}"));
	json_t *m = mirror_object(src, "tp-1");
	assert_non_null(m);
	json_t *want = parse("{\"apiVersion\":\"apiextensions.k8s.io/v1\",\"kind\":\"CustomResourceDefinition\","
			     "\"metadata\":{\"name\":\"widgets.a.io\",\"labels\":{\"app\":\"x\"},"
			     "\"annotations\":{\"note\":\"n\",\"ursa.io/mirrored-from\":\"tp-1\"}},"
			     "\"spec\":{\"group\":\"a.io\"}}");
	assert_true(json_equal(m, want));
	/* a copy that matches needs no update; one whose spec differs gets the source's, keeping
	 * what the server owns (resourceVersion, finalizers) and dropping status */
	json_t *have = json_deep_copy(m);
	json_object_set_new(json_object_get(have, "metadata"), "resourceVersion", json_string("3"));
	assert_null(mirror_update(m, have));
	json_object_set_new(have, "spec", parse("{\"group\":\"old.io\"}"));
	json_object_set_new(json_object_get(have, "metadata"), "finalizers", parse("[\"f\"]"));
	json_object_set_new(have, "status", json_object());
	json_t *u = mirror_update(m, have);
	assert_non_null(u);
	assert_string_equal(json_path_str(u, "spec.group"), "a.io");
	assert_string_equal(json_path_str(u, "metadata.resourceVersion"), "3");
	assert_non_null(json_path(u, "metadata.finalizers"));
	assert_null(json_object_get(u, "status"));
	json_decref(u);
	/* a label removed at the source goes from the copy too */
	json_object_del(json_object_get(m, "metadata"), "labels");
	json_object_set_new(have, "spec", parse("{\"group\":\"a.io\"}"));
	u = mirror_update(m, have);
	assert_non_null(u);
	assert_int_equal(json_object_size(json_path(u, "metadata.labels")), 0);
	json_decref(u);
	json_decref(have);
	json_decref(m);
	json_decref(want);
	json_decref(src);
	/* no name or no spec: nothing to copy */
	src = parse("{\"metadata\":{\"name\":\"x\"}}");
	assert_null(mirror_object(src, "tp-1"));
	json_decref(src);
}

static bool in(const json_t *arr, const char *name)
{
	size_t i;
	json_t *v;
	json_array_foreach ((json_t *)arr, i, v) {
		const char *n = json_is_string(v) ? json_string_value(v) : json_path_str(v, "metadata.name");
		if (n && strcmp(n, name) == 0)
			return true;
	}
	return false;
}

static void test_plan(void **state)
{
	(void)state;
	json_t *src = json_array();
	json_array_append_new(src, parse(SRC_CRD("new.a.io", "{\"group\":\"a.io\"}")));
	json_array_append_new(src, parse(SRC_CRD("same.a.io", "{\"group\":\"a.io\"}")));
	json_array_append_new(src, parse(SRC_CRD("changed.a.io", "{\"group\":\"a.io\",\"v\":2}")));
	json_array_append_new(src, parse(SRC_CRD("own.a.io", "{\"group\":\"a.io\"}")));
	json_t *going = parse(SRC_CRD("going.a.io", "{\"group\":\"a.io\"}"));
	json_object_set_new(json_object_get(going, "metadata"), "deletionTimestamp", json_string("2024-01-01T00:00:00Z"));
	json_array_append_new(src, going);
	json_t *copy = parse(SRC_CRD("elsewhere.a.io", "{}")); /* a copy on the source: no original */
	json_object_set_new(json_object_get(json_object_get(copy, "metadata"), "annotations"), MIRROR_ANNOTATION,
			    json_string("tp-9"));
	json_array_append_new(src, copy);

	json_t *dst = json_array();
	json_t *same = mirror_object(json_array_get(src, 1), "tp-1");
	json_object_set_new(json_object_get(same, "metadata"), "resourceVersion", json_string("1"));
	json_array_append_new(dst, same);
	json_t *changed = parse(SRC_CRD("changed.a.io", "{\"group\":\"a.io\",\"v\":1}"));
	json_t *mo = mirror_object(changed, "tp-1");
	json_array_append_new(dst, mo);
	json_decref(changed);
	json_array_append_new(dst, parse(SRC_CRD("own.a.io", "{\"group\":\"mine.io\"}"))); /* the target's own */
	json_t *orphan = mirror_object(json_array_get(src, 4), "tp-1"); /* its original is being deleted */
	json_array_append_new(dst, orphan);
	json_t *gone = parse(SRC_CRD("gone.a.io", "{}"));
	json_t *gm = mirror_object(gone, "tp-1");
	json_array_append_new(dst, gm);
	json_decref(gone);
	json_array_append_new(dst, parse(SRC_CRD("local.b.io", "{}"))); /* the target's own, not in the source */

	struct mirror_plan p;
	mirror_plan(src, dst, "tp-1", &p);
	assert_int_equal(json_array_size(p.create), 1);
	assert_true(in(p.create, "new.a.io"));
	assert_string_equal(json_str(json_path(json_array_get(p.create, 0), "metadata.annotations"), MIRROR_ANNOTATION),
			    "tp-1");
	assert_int_equal(json_array_size(p.update), 1);
	assert_true(in(p.update, "changed.a.io"));
	assert_int_equal(json_integer_value(json_path(json_array_get(p.update, 0), "spec.v")), 2);
	assert_int_equal(json_array_size(p.del), 2);
	assert_true(in(p.del, "going.a.io"));
	assert_true(in(p.del, "gone.a.io"));
	assert_int_equal(p.shadowed, 1);
	mirror_plan_release(&p);
	/* nothing to do the second time round: the target as the pass left it */
	json_t *src2 = json_array();
	json_array_append(src2, json_array_get(src, 1));
	json_t *dst2 = json_array();
	json_array_append(dst2, json_array_get(dst, 0));
	mirror_plan(src2, dst2, "tp-1", &p);
	assert_int_equal(json_array_size(p.create) + json_array_size(p.update) + json_array_size(p.del), 0);
	mirror_plan_release(&p);
	json_decref(src2);
	json_decref(dst2);
	json_decref(src);
	json_decref(dst);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_object),
		cmocka_unit_test(test_plan),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
