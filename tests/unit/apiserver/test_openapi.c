/* The OpenAPI documents generated from the type tables (src/common/apiserver/openapi.c) and
 * their gnostic protobuf form (openapi_pb.c), read back with a small protobuf reader. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "apiserver/internal.h"
#include "ursa/jsonutil.h"

static const struct api_resource r_pods = {"", "v1", "pods", "pod", "Pod", SCOPE_NAMESPACE, {"po", NULL}};
static const struct api_resource r_deploy = {
	"apps", "v1", "deployments", "deployment", "Deployment", SCOPE_NAMESPACE, {"deploy", NULL}};
static const struct api_resource r_rb = {
	"rbac.authorization.k8s.io", "v1", "rolebindings", "rolebinding", "RoleBinding", SCOPE_NAMESPACE, {NULL}};
static const struct api_resource r_crb = {"rbac.authorization.k8s.io",
					  "v1",
					  "clusterrolebindings",
					  "clusterrolebinding",
					  "ClusterRoleBinding",
					  SCOPE_CLUSTER,
					  {NULL}};
static const struct api_resource r_widget = {"example.com", "v1", "widgets", "widget", "Widget", SCOPE_CLUSTER, {NULL}};
static const struct api_resource r_ssar = {"authorization.k8s.io",
					   "v1",
					   "selfsubjectaccessreviews",
					   "selfsubjectaccessreview",
					   "SelfSubjectAccessReview",
					   SCOPE_CLUSTER,
					   {NULL},
					   .ephemeral = true};
/* Apps before core on purpose: core messages still get core names. */
static const struct api_resource *const served[] = {&r_deploy, &r_pods, &r_rb, &r_crb, &r_widget, &r_ssar};
#define NSERVED (sizeof(served) / sizeof(served[0]))

static void check_str(const json_t *j, const char *want, const char *what)
{
	const char *got = json_string_value(j);
	if (!got || strcmp(got, want) != 0)
		fail_msg("%s: got %s, want %s", what, got ? got : "(not a string)", want);
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

static bool has_param(const json_t *op, const char *name, const char *in)
{
	size_t i;
	const json_t *p;
	json_array_foreach (json_object_get(op, "parameters"), i, p)
		if (strcmp(json_string_value(json_object_get(p, "name")), name) == 0 &&
		    strcmp(json_string_value(json_object_get(p, "in")), in) == 0)
			return true;
	return false;
}

static void check_gvk_list(const json_t *def, const char *group, const char *kind, const char *what)
{
	const json_t *gvk = json_array_get(json_object_get(def, "x-kubernetes-group-version-kind"), 0);
	if (!gvk)
		fail_msg("%s: no x-kubernetes-group-version-kind", what);
	check_str(json_object_get(gvk, "group"), group, what);
	check_str(json_object_get(gvk, "version"), "v1", what);
	check_str(json_object_get(gvk, "kind"), kind, what);
}

static void test_v2_definitions(void **state)
{
	json_t *doc = openapi_v2_document(served, NSERVED);
	const json_t *defs = json_object_get(doc, "definitions");
	check_str(json_object_get(doc, "swagger"), "2.0", "swagger");

	const json_t *dep = json_object_get(defs, "io.k8s.api.apps.v1.Deployment");
	assert_non_null(dep);
	check_gvk_list(dep, "apps", "Deployment", "Deployment");
	check_str(path_get(dep, "properties", "spec", "$ref", NULL), "#/definitions/io.k8s.api.apps.v1.DeploymentSpec",
		  "Deployment.spec");
	check_str(path_get(dep, "properties", "kind", "type", NULL), "string", "Deployment.kind");
	check_str(path_get(defs, "io.k8s.api.apps.v1.DeploymentSpec", "properties", "strategy", "$ref", NULL),
		  "#/definitions/io.k8s.api.apps.v1.DeploymentStrategy", "DeploymentSpec.strategy");
	check_str(path_get(defs, "io.k8s.api.apps.v1.RollingUpdateDeployment", "properties", "maxSurge", "$ref", NULL),
		  "#/definitions/io.k8s.apimachinery.pkg.util.intstr.IntOrString", "maxSurge");
	check_str(path_get(defs, "io.k8s.api.apps.v1.DeploymentSpec", "properties", "replicas", "format", NULL),
		  "int32", "replicas");
	check_gvk_list(json_object_get(defs, "io.k8s.api.apps.v1.DeploymentList"), "apps", "DeploymentList",
		       "DeploymentList");

	/* core/v1 messages reached from apps first are core's; lists merged by key say so */
	const json_t *containers = path_get(defs, "io.k8s.api.core.v1.PodSpec", "properties", "containers", NULL);
	check_str(json_object_get(containers, "type"), "array", "containers");
	check_str(path_get(containers, "items", "$ref", NULL), "#/definitions/io.k8s.api.core.v1.Container",
		  "containers.items");
	check_str(json_object_get(containers, "x-kubernetes-patch-merge-key"), "name", "containers merge key");
	check_str(json_object_get(containers, "x-kubernetes-patch-strategy"), "merge", "containers strategy");
	check_str(json_object_get(containers, "x-kubernetes-list-type"), "map", "containers list type");
	assert_non_null(json_object_get(defs, "io.k8s.api.core.v1.HTTPGetAction"));
	assert_non_null(json_object_get(defs, "io.k8s.api.core.v1.EmptyDirVolumeSource"));
	const json_t *fin =
		path_get(defs, "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta", "properties", "finalizers", NULL);
	check_str(json_object_get(fin, "x-kubernetes-patch-strategy"), "merge", "finalizers (a set)");
	check_str(path_get(defs, "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta", "properties", "labels",
			   "additionalProperties", "type", NULL),
		  "string", "labels map");
	check_str(path_get(defs, "io.k8s.apimachinery.pkg.apis.meta.v1.Time", "format", NULL), "date-time", "Time");

	/* one message, two kinds: each its own definition and GVK */
	check_gvk_list(json_object_get(defs, "io.k8s.api.rbac.v1.RoleBinding"), "rbac.authorization.k8s.io",
		       "RoleBinding", "RoleBinding");
	check_gvk_list(json_object_get(defs, "io.k8s.api.rbac.v1.ClusterRoleBinding"), "rbac.authorization.k8s.io",
		       "ClusterRoleBinding", "ClusterRoleBinding");
	assert_int_equal(json_array_size(path_get(defs, "io.k8s.api.rbac.v1.RoleBinding",
						  "x-kubernetes-group-version-kind", NULL)),
			 1);

	/* a kind without a table keeps unknown fields */
	const json_t *w = json_object_get(defs, "com.example.v1.Widget");
	assert_non_null(w);
	assert_true(json_is_true(json_object_get(w, "x-kubernetes-preserve-unknown-fields")));
	check_gvk_list(w, "example.com", "Widget", "Widget");
	json_decref(doc);
}

static void test_v2_paths(void **state)
{
	json_t *doc = openapi_v2_document(served, NSERVED);
	const json_t *paths = json_object_get(doc, "paths");
	const json_t *item = json_object_get(paths, "/apis/apps/v1/namespaces/{namespace}/deployments/{name}");
	assert_non_null(item);
	const json_t *patch = json_object_get(item, "patch");
	check_str(path_get(patch, "x-kubernetes-group-version-kind", "kind", NULL), "Deployment", "patch GVK");
	check_str(json_object_get(patch, "x-kubernetes-action"), "patch", "patch action");
	assert_true(has_param(patch, "fieldValidation", "query"));
	assert_true(has_param(patch, "force", "query"));
	assert_true(has_param(patch, "dryRun", "query"));
	assert_true(has_param(patch, "name", "path"));
	assert_true(has_param(patch, "body", "body"));
	assert_true(has_param(json_object_get(item, "put"), "fieldValidation", "query"));
	assert_false(has_param(json_object_get(item, "put"), "force", "query"));
	check_str(path_get(item, "get", "x-kubernetes-action", NULL), "get", "get action");
	check_str(path_get(item, "delete", "x-kubernetes-action", NULL), "delete", "delete action");
	const json_t *coll = json_object_get(paths, "/apis/apps/v1/namespaces/{namespace}/deployments");
	check_str(path_get(coll, "get", "x-kubernetes-action", NULL), "list", "list action");
	check_str(path_get(coll, "get", "responses", "200", "schema", "$ref", NULL),
		  "#/definitions/io.k8s.api.apps.v1.DeploymentList", "list response");
	assert_true(has_param(json_object_get(coll, "post"), "fieldValidation", "query"));
	assert_non_null(json_object_get(paths, "/api/v1/namespaces/{namespace}/pods/{name}"));
	assert_non_null(json_object_get(paths, "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/{name}"));
	/* create-only kinds: a POST and nothing else */
	const json_t *ssar = json_object_get(paths, "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews");
	assert_non_null(json_object_get(ssar, "post"));
	assert_null(json_object_get(ssar, "get"));
	assert_null(json_object_get(paths, "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews/{name}"));
	json_decref(doc);
}

static void test_v3_documents(void **state)
{
	json_t *docs = openapi_v3_documents(served, NSERVED);
	assert_non_null(json_object_get(docs, "api/v1"));
	const json_t *apps = json_object_get(docs, "apis/apps/v1");
	assert_non_null(apps);
	check_str(json_object_get(apps, "openapi"), "3.0.0", "openapi version");
	const json_t *schemas = path_get(apps, "components", "schemas", NULL);
	check_gvk_list(json_object_get(schemas, "io.k8s.api.apps.v1.Deployment"), "apps", "Deployment",
		       "v3 Deployment");
	/* what Deployment reaches is there; other groups' kinds are not */
	assert_non_null(json_object_get(schemas, "io.k8s.api.core.v1.PodSpec"));
	assert_non_null(json_object_get(schemas, "io.k8s.apimachinery.pkg.api.resource.Quantity"));
	assert_null(json_object_get(schemas, "io.k8s.api.core.v1.Pod"));
	assert_null(json_object_get(schemas, "io.k8s.api.rbac.v1.RoleBinding"));
	const json_t *all_of = path_get(schemas, "io.k8s.api.apps.v1.DeploymentSpec", "properties", "strategy", "allOf",
					NULL);
	check_str(json_object_get(json_array_get(all_of, 0), "$ref"),
		  "#/components/schemas/io.k8s.api.apps.v1.DeploymentStrategy", "v3 allOf ref");
	assert_true(json_is_true(path_get(schemas, "io.k8s.apimachinery.pkg.util.intstr.IntOrString",
					  "x-kubernetes-int-or-string", NULL)));
	const json_t *patch =
		path_get(apps, "paths", "/apis/apps/v1/namespaces/{namespace}/deployments/{name}", "patch", NULL);
	assert_true(has_param(patch, "fieldValidation", "query"));
	const json_t *first = json_array_get(json_object_get(patch, "parameters"), 0);
	check_str(path_get(first, "schema", "type", NULL), "string", "v3 parameter schema");
	assert_non_null(path_get(patch, "requestBody", "content", "application/strategic-merge-patch+json", NULL));
	assert_null(path_get(apps, "paths", "/api/v1/namespaces/{namespace}/pods/{name}", NULL));
	json_decref(docs);
}

/* --- a protobuf reader for the checks below --- */

struct pbr {
	const uint8_t *p, *end;
};

static bool rd_varint(struct pbr *r, uint64_t *v)
{
	*v = 0;
	for (int shift = 0; shift < 64 && r->p < r->end; shift += 7) {
		uint8_t c = *r->p++;
		*v |= (uint64_t)(c & 0x7f) << shift;
		if (!(c & 0x80))
			return true;
	}
	return false;
}

/* Next field: number, wire type, and for length-delimited ones the bytes. false at the end;
 * fails the test on malformed input. */
static bool rd_field(struct pbr *r, uint32_t *num, unsigned *wt, struct pbr *ret_sub, uint64_t *ret_v)
{
	if (r->p == r->end)
		return false;
	uint64_t key, v = 0;
	assert_true(rd_varint(r, &key));
	*num = (uint32_t)(key >> 3);
	*wt = key & 7;
	switch (*wt) {
	case 0:
		assert_true(rd_varint(r, &v));
		break;
	case 1:
		assert_true(r->end - r->p >= 8);
		r->p += 8;
		break;
	case 2:
		assert_true(rd_varint(r, &v));
		assert_true((uint64_t)(r->end - r->p) >= v);
		ret_sub->p = r->p;
		ret_sub->end = r->p + v;
		r->p += v;
		break;
	default:
		fail_msg("wire type %u", *wt);
	}
	*ret_v = v;
	return true;
}

static bool sub_eq(const struct pbr *s, const char *str)
{
	return (size_t)(s->end - s->p) == strlen(str) && memcmp(s->p, str, strlen(str)) == 0;
}

/* The first length-delimited field num of m. */
static bool find(struct pbr m, uint32_t num, struct pbr *ret)
{
	uint32_t n;
	unsigned wt;
	struct pbr sub;
	uint64_t v;
	while (rd_field(&m, &n, &wt, &sub, &v))
		if (n == num && wt == 2) {
			*ret = sub;
			return true;
		}
	return false;
}

/* In m, the entry of repeated field num (a Named* message {name = 1, value = 2}) called name:
 * its value. */
static bool find_named(struct pbr m, uint32_t num, const char *name, struct pbr *ret_value)
{
	uint32_t n;
	unsigned wt;
	struct pbr sub, nm;
	uint64_t v;
	while (rd_field(&m, &n, &wt, &sub, &v))
		if (n == num && wt == 2 && find(sub, 1, &nm) && sub_eq(&nm, name))
			return find(sub, 2, ret_value);
	return false;
}

static void test_v2_protobuf(void **state)
{
	json_t *doc = openapi_v2_document(served, NSERVED);
	struct buf pb = BUF_INIT;
	openapi_v2_protobuf(doc, &pb);
	struct pbr d = {(const uint8_t *)pb.ptr, (const uint8_t *)pb.ptr + pb.len}, s, t, u;
	/* Document.swagger = 1 */
	assert_true(find(d, 1, &s));
	assert_true(sub_eq(&s, "2.0"));
	/* definitions (9) -> NamedSchema (1) Deployment -> vendor_extension (31) GVK -> Any.yaml (2) */
	assert_true(find(d, 9, &s));
	struct pbr s_defs = s;
	assert_true(find_named(s, 1, "io.k8s.api.apps.v1.Deployment", &t));
	assert_true(find_named(t, 31, "x-kubernetes-group-version-kind", &u));
	struct pbr yaml;
	assert_true(find(u, 2, &yaml));
	json_t *gvk = json_loadb((const char *)yaml.p, (size_t)(yaml.end - yaml.p), 0, NULL);
	check_str(path_get(json_array_get(gvk, 0), "kind", NULL), "Deployment", "GVK from the protobuf");
	json_decref(gvk);
	/* Schema.properties (25) -> strategy ... in DeploymentSpec: _ref = 1 */
	assert_true(find_named(s, 1, "io.k8s.api.apps.v1.DeploymentSpec", &t));
	assert_true(find(t, 25, &u));
	struct pbr strat, ref;
	assert_true(find_named(u, 1, "strategy", &strat));
	assert_true(find(strat, 1, &ref));
	assert_true(sub_eq(&ref, "#/definitions/io.k8s.api.apps.v1.DeploymentStrategy"));
	/* a type: TypeItem (22) {value = 1} */
	struct pbr rep, ti, tv;
	assert_true(find_named(u, 1, "replicas", &rep));
	assert_true(find(rep, 22, &ti));
	assert_true(find(ti, 1, &tv));
	assert_true(sub_eq(&tv, "integer"));

	/* paths (8) -> path (2) -> PathItem.patch (8) -> parameters (8) -> ParametersItem.parameter (1)
	 * -> non_body_parameter (2) -> query_parameter_sub_schema (3) -> name (4): fieldValidation */
	assert_true(find(d, 8, &s));
	assert_true(find_named(s, 2, "/apis/apps/v1/namespaces/{namespace}/deployments/{name}", &t));
	struct pbr op;
	assert_true(find(t, 8, &op));
	struct pbr ext;
	assert_true(find_named(op, 13, "x-kubernetes-group-version-kind", &ext));
	/* scalar extensions keep their value (YAML of a string) */
	struct pbr action, action_yaml;
	assert_true(find_named(op, 13, "x-kubernetes-action", &action));
	assert_true(find(action, 2, &action_yaml));
	assert_true(sub_eq(&action_yaml, "\"patch\""));
	struct pbr podspec, pprops, containers, mk, mk_yaml;
	assert_true(find_named(s_defs, 1, "io.k8s.api.core.v1.PodSpec", &podspec));
	assert_true(find(podspec, 25, &pprops));
	assert_true(find_named(pprops, 1, "containers", &containers));
	assert_true(find_named(containers, 31, "x-kubernetes-patch-merge-key", &mk));
	assert_true(find(mk, 2, &mk_yaml));
	assert_true(sub_eq(&mk_yaml, "\"name\""));
	bool found = false;
	uint32_t n;
	unsigned wt;
	uint64_t v;
	struct pbr item, it = op;
	while (rd_field(&it, &n, &wt, &item, &v)) {
		struct pbr param, nb, q, name;
		if (n == 8 && wt == 2 && find(item, 1, &param) && find(param, 2, &nb) && find(nb, 3, &q) &&
		    find(q, 4, &name) && sub_eq(&name, "fieldValidation"))
			found = true;
	}
	assert_true(found);
	/* the whole message is well-formed at the top */
	struct pbr all = d, sub;
	while (rd_field(&all, &n, &wt, &sub, &v))
		;
	assert_ptr_equal(all.p, all.end);
	buf_release(&pb);
	json_decref(doc);
}

static void test_wants_protobuf(void **state)
{
	assert_true(openapi_wants_protobuf("application/com.github.proto-openapi.spec.v2@v1.0+protobuf"));
	assert_true(openapi_wants_protobuf("application/com.github.proto-openapi.spec.v2.v1.0+protobuf"));
	assert_true(openapi_wants_protobuf(
		"application/com.github.proto-openapi.spec.v2@v1.0+protobuf, application/json;q=0.9"));
	assert_false(
		openapi_wants_protobuf("application/json, application/com.github.proto-openapi.spec.v2@v1.0+protobuf"));
	assert_false(openapi_wants_protobuf("application/json"));
	assert_false(openapi_wants_protobuf("*/*"));
	assert_false(openapi_wants_protobuf(NULL));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_v2_definitions), cmocka_unit_test(test_v2_paths),
		cmocka_unit_test(test_v3_documents),   cmocka_unit_test(test_v2_protobuf),
		cmocka_unit_test(test_wants_protobuf),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
