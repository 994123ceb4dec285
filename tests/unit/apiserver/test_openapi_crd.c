/* OpenAPI documents of custom resources (src/common/apiserver/openapi.c): definitions named as
 * Kubernetes names them, the version's schema with apiVersion, kind, metadata (ObjectMeta) and
 * x-kubernetes-group-version-kind, the listKind's list, paths; v2 without what Swagger 2.0
 * lacks (nullable, anyOf...), v3 with it. */
#define _GNU_SOURCE /* memmem */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "apiserver/internal.h"
#include "ursa/crd.h"
#include "ursa/jsonutil.h"

static const char crd_text[] =
	"{\"apiVersion\":\"apiextensions.k8s.io/v1\",\"kind\":\"CustomResourceDefinition\","
	"\"metadata\":{\"name\":\"crontabs.stable.example.com\",\"tenant\":\"acme\"},"
	"\"spec\":{\"group\":\"stable.example.com\",\"scope\":\"Namespaced\","
	"\"names\":{\"plural\":\"crontabs\",\"singular\":\"crontab\",\"kind\":\"CronTab\","
	"\"listKind\":\"CronTabCollection\",\"shortNames\":[\"ct\"]},"
	"\"versions\":[{\"name\":\"v1\",\"served\":true,\"storage\":true,\"schema\":{\"openAPIV3Schema\":"
	"{\"type\":\"object\",\"description\":\"A cron table.\",\"properties\":{\"spec\":{\"type\":\"object\","
	"\"description\":\"The schedule.\",\"properties\":{"
	"\"cronSpec\":{\"type\":\"string\",\"description\":\"When it runs.\"},"
	"\"replicas\":{\"type\":\"integer\",\"nullable\":true},"
	"\"port\":{\"x-kubernetes-int-or-string\":true,\"anyOf\":[{\"type\":\"integer\"},{\"type\":\"string\"}]},"
	"\"tags\":{\"type\":\"array\",\"items\":{\"type\":\"string\",\"nullable\":true}}}}}}}}]}}";

static struct crd_def *def;
static struct api_resource r_ct;
static const struct api_resource r_pods = { "", "v1", "pods", "pod", "Pod", SCOPE_NAMESPACE, { "po", NULL } };

static int setup(void **state)
{
	(void)state;
	json_error_t je;
	json_t *obj = json_loads(crd_text, 0, &je);
	if (!obj)
		fail_msg("test CRD does not parse: %s", je.text);
	struct field_errors errs = { 0 };
	if (crd_def_parse(obj, &def, &errs) != 0) {
		char *c = json_dumps(errs.causes, 0);
		fail_msg("crd_def_parse: %s", c ? c : "?");
	}
	field_errors_release(&errs);
	json_decref(obj);
	r_ct = (struct api_resource){ .group = def->group,
				      .version = def->versions[0].name,
				      .plural = def->plural,
				      .singular = def->singular,
				      .kind = def->kind,
				      .scope = def->scope,
				      .subresources = 0,
				      .crd = def,
				      .crd_version = &def->versions[0] };
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	crd_def_free(def);
	return 0;
}

static const json_t *path_get(const json_t *j, const char *first, ...)
{
	va_list ap;
	va_start(ap, first);
	for (const char *k = first; k && j; k = va_arg(ap, const char *))
		j = json_object_get(j, k);
	va_end(ap);
	return j;
}

static void check_str(const json_t *j, const char *want, const char *what)
{
	const char *got = json_string_value(j);
	if (!got || strcmp(got, want) != 0)
		fail_msg("%s: got %s, want %s", what, got ? got : "(not a string)", want);
}

static void test_v2(void **state)
{
	(void)state;
	const struct api_resource *res[] = { &r_pods, &r_ct };
	json_t *doc = openapi_v2_document(res, 2);
	const json_t *defs = json_object_get(doc, "definitions");
	const json_t *ct = json_object_get(defs, "com.example.stable.v1.CronTab");
	assert_non_null(ct);
	check_str(json_object_get(ct, "description"), "A cron table.", "CronTab description");
	check_str(path_get(ct, "properties", "spec", "properties", "cronSpec", "description", NULL), "When it runs.",
		  "cronSpec");
	check_str(path_get(ct, "properties", "metadata", "$ref", NULL),
		  "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta", "metadata");
	assert_int_equal(json_object_size(path_get(ct, "properties", "metadata", NULL)), 1); /* $ref alone */
	check_str(path_get(ct, "properties", "apiVersion", "type", NULL), "string", "apiVersion");
	check_str(path_get(ct, "properties", "kind", "type", NULL), "string", "kind");
	const json_t *gvk = json_array_get(json_object_get(ct, "x-kubernetes-group-version-kind"), 0);
	check_str(json_object_get(gvk, "group"), "stable.example.com", "gvk group");
	check_str(json_object_get(gvk, "version"), "v1", "gvk version");
	check_str(json_object_get(gvk, "kind"), "CronTab", "gvk kind");
	/* Swagger 2.0: no nullable, no anyOf (the int-or-string marker stays) */
	const json_t *spec = path_get(ct, "properties", "spec", "properties", NULL);
	assert_null(path_get(spec, "replicas", "nullable", NULL));
	assert_null(path_get(spec, "tags", "items", "nullable", NULL));
	assert_null(path_get(spec, "port", "anyOf", NULL));
	assert_true(json_is_true(path_get(spec, "port", "x-kubernetes-int-or-string", NULL)));
	/* the list is named by listKind */
	const json_t *list = json_object_get(defs, "com.example.stable.v1.CronTabCollection");
	assert_non_null(list);
	assert_null(json_object_get(defs, "com.example.stable.v1.CronTabList"));
	check_str(path_get(list, "properties", "items", "items", "$ref", NULL),
		  "#/definitions/com.example.stable.v1.CronTab", "list items");
	check_str(json_object_get(json_array_get(json_object_get(list, "x-kubernetes-group-version-kind"), 0), "kind"),
		  "CronTabCollection", "list gvk");
	/* paths as a built-in kind's; the list operation answers with the list */
	const json_t *paths = json_object_get(doc, "paths");
	const json_t *coll = json_object_get(paths, "/apis/stable.example.com/v1/namespaces/{namespace}/crontabs");
	assert_non_null(coll);
	check_str(path_get(coll, "get", "x-kubernetes-action", NULL), "list", "list operation");
	check_str(path_get(coll, "get", "responses", "200", "schema", "$ref", NULL),
		  "#/definitions/com.example.stable.v1.CronTabCollection", "list response");
	const json_t *item =
		json_object_get(paths, "/apis/stable.example.com/v1/namespaces/{namespace}/crontabs/{name}");
	assert_non_null(path_get(item, "get", NULL));
	assert_non_null(path_get(item, "patch", NULL));
	/* built-ins untouched */
	assert_non_null(json_object_get(defs, "io.k8s.api.core.v1.Pod"));
	/* and the source schema was not changed by the v2 form */
	const json_t *src = crd_schema_json(def->versions[0].schema);
	assert_non_null(path_get(src, "properties", "spec", "properties", "replicas", "nullable", NULL));
	assert_null(path_get(src, "properties", "apiVersion", NULL));
	json_decref(doc);
}

static void test_v3(void **state)
{
	(void)state;
	const struct api_resource *res[] = { &r_ct };
	json_t *docs = openapi_v3_documents(res, 1);
	assert_int_equal(json_object_size(docs), 1);
	const json_t *doc = json_object_get(docs, "apis/stable.example.com/v1");
	assert_non_null(doc);
	const json_t *schemas = path_get(doc, "components", "schemas", NULL);
	const json_t *ct = json_object_get(schemas, "com.example.stable.v1.CronTab");
	assert_non_null(ct);
	assert_true(json_is_true(path_get(ct, "properties", "spec", "properties", "replicas", "nullable", NULL)));
	assert_non_null(path_get(ct, "properties", "spec", "properties", "port", "anyOf", NULL));
	const json_t *meta = path_get(ct, "properties", "metadata", NULL);
	check_str(json_object_get(json_array_get(json_object_get(meta, "allOf"), 0), "$ref"),
		  "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta", "v3 metadata");
	/* everything referred to is in the document */
	assert_non_null(json_object_get(schemas, "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"));
	assert_non_null(json_object_get(schemas, "io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta"));
	assert_non_null(json_object_get(schemas, "io.k8s.apimachinery.pkg.apis.meta.v1.Time"));
	assert_non_null(json_object_get(schemas, "com.example.stable.v1.CronTabCollection"));
	assert_non_null(path_get(doc, "paths", "/apis/stable.example.com/v1/namespaces/{namespace}/crontabs/{name}",
				 "get", NULL));
	json_decref(docs);
}

static void test_v2_protobuf(void **state)
{
	(void)state;
	const struct api_resource *res[] = { &r_ct };
	json_t *doc = openapi_v2_document(res, 1);
	struct buf pb = BUF_INIT;
	openapi_v2_protobuf(doc, &pb);
	assert_true(pb.len > 0);
	assert_non_null(memmem(pb.ptr, pb.len, "com.example.stable.v1.CronTab", 29));
	assert_non_null(memmem(pb.ptr, pb.len, "When it runs.", 13));
	buf_release(&pb);
	json_decref(doc);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_v2),
		cmocka_unit_test(test_v3),
		cmocka_unit_test(test_v2_protobuf),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
