/* apidisc: Accept negotiation in the client's order, the aggregated document built from legacy
 * APIResourceLists (resources, subresources, response kinds, scope, order), the gateway's
 * merge, entity tags and If-None-Match. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>
#include "ursa/apidisc.h"
#include "ursa/jsonutil.h"

#define ACCEPT_130 \
	"application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList," \
	"application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json"

static void test_negotiate(void **state)
{
	(void)state;
	static const struct {
		const char *accept;
		enum apidisc_form want;
	} cases[] = {
		{ NULL, APIDISC_LEGACY },
		{ "", APIDISC_LEGACY },
		{ "application/json", APIDISC_LEGACY },
		{ "*/*", APIDISC_LEGACY },
		{ ACCEPT_130, APIDISC_V2 },
		/* kubectl 1.27/1.28 */
		{ "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json",
		  APIDISC_V2BETA1 },
		/* kubectl 1.30+ with protobuf first: passed over, the JSON v2 range is next */
		{ "application/vnd.kubernetes.protobuf;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,"
		  "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList",
		  APIDISC_V2 },
		/* the client's order wins */
		{ "application/json, application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList",
		  APIDISC_LEGACY },
		/* spaces, quotes, case of the type */
		{ " Application/JSON ; g=\"apidiscovery.k8s.io\" ; v=v2 ; as=APIGroupDiscoveryList", APIDISC_V2 },
		/* unknown version, wrong as, wrong group: not aggregated */
		{ "application/json;g=apidiscovery.k8s.io;v=v3;as=APIGroupDiscoveryList", APIDISC_LEGACY },
		{ "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscovery", APIDISC_LEGACY },
		{ "application/json;g=meta.k8s.io;v=v1;as=Table", APIDISC_LEGACY },
		/* q=0 refuses a range */
		{ "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList;q=0,"
		  "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList",
		  APIDISC_V2BETA1 },
		{ "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList;q=0.5", APIDISC_V2 },
		{ ",,,;;;===", APIDISC_LEGACY },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		if (apidisc_negotiate(cases[i].accept) != cases[i].want)
			fail_msg("accept %s", cases[i].accept ? cases[i].accept : "(null)");
	}
	assert_int_equal(apidisc_form_of(apidisc_content_type(APIDISC_V2)), APIDISC_V2);
	assert_int_equal(apidisc_form_of(apidisc_content_type(APIDISC_V2BETA1)), APIDISC_V2BETA1);
	assert_int_equal(apidisc_form_of("application/json"), APIDISC_LEGACY);
	assert_int_equal(apidisc_form_of(NULL), APIDISC_LEGACY);
	assert_string_equal(apidisc_content_type(APIDISC_V2),
			    "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList");
}

static json_t *load(const char *text)
{
	json_error_t e;
	json_t *j = json_loads(text, 0, &e);
	if (!j)
		fail_msg("bad test JSON: %s", e.text);
	return j;
}

static const char *apps_v1 =
	"{\"kind\":\"APIResourceList\",\"apiVersion\":\"v1\",\"groupVersion\":\"apps/v1\",\"resources\":["
	"{\"name\":\"deployments\",\"singularName\":\"deployment\",\"namespaced\":true,\"kind\":\"Deployment\","
	"\"verbs\":[\"get\",\"list\"],\"shortNames\":[\"deploy\"],\"categories\":[\"all\"]},"
	"{\"name\":\"deployments/status\",\"singularName\":\"\",\"namespaced\":true,\"kind\":\"Deployment\","
	"\"verbs\":[\"get\",\"patch\",\"update\"]},"
	"{\"name\":\"deployments/scale\",\"singularName\":\"\",\"namespaced\":true,\"kind\":\"Scale\","
	"\"group\":\"autoscaling\",\"version\":\"v1\",\"verbs\":[\"get\"]},"
	"{\"name\":\"controllerrevisions\",\"singularName\":\"controllerrevision\",\"namespaced\":true,"
	"\"kind\":\"ControllerRevision\",\"verbs\":[\"get\"],\"shortNames\":[]}]}";

static void test_group(void **state)
{
	(void)state;
	json_t *l = load(apps_v1);
	json_t *g = apidisc_group("apps", &l, 1);
	assert_string_equal(json_path_str(g, "metadata.name"), "apps");
	json_t *vers = json_object_get(g, "versions");
	assert_int_equal(json_array_size(vers), 1);
	json_t *v = json_array_get(vers, 0);
	assert_string_equal(json_str(v, "version"), "v1");
	assert_string_equal(json_str(v, "freshness"), "Current");
	json_t *rs = json_object_get(v, "resources");
	assert_int_equal(json_array_size(rs), 2); /* subresources are not resources */
	json_t *d = json_array_get(rs, 0);
	assert_string_equal(json_str(d, "resource"), "deployments");
	assert_string_equal(json_str(d, "singularResource"), "deployment");
	assert_string_equal(json_str(d, "scope"), "Namespaced");
	assert_string_equal(json_path_str(d, "responseKind.group"), "apps");
	assert_string_equal(json_path_str(d, "responseKind.version"), "v1");
	assert_string_equal(json_path_str(d, "responseKind.kind"), "Deployment");
	assert_string_equal(json_string_value(json_array_get(json_object_get(d, "shortNames"), 0)), "deploy");
	assert_string_equal(json_string_value(json_array_get(json_object_get(d, "categories"), 0)), "all");
	assert_int_equal(json_array_size(json_object_get(d, "verbs")), 2);
	json_t *subs = json_object_get(d, "subresources");
	assert_int_equal(json_array_size(subs), 2);
	json_t *st = json_array_get(subs, 0), *sc = json_array_get(subs, 1);
	assert_string_equal(json_str(st, "subresource"), "status");
	assert_string_equal(json_path_str(st, "responseKind.kind"), "Deployment");
	assert_string_equal(json_path_str(st, "responseKind.group"), "apps");
	assert_int_equal(json_array_size(json_object_get(st, "verbs")), 3);
	assert_string_equal(json_str(sc, "subresource"), "scale");
	assert_string_equal(json_path_str(sc, "responseKind.group"), "autoscaling");
	assert_string_equal(json_path_str(sc, "responseKind.kind"), "Scale");
	json_t *cr = json_array_get(rs, 1);
	assert_null(json_object_get(cr, "shortNames")); /* empty lists are left out */
	assert_null(json_object_get(cr, "subresources"));
	json_decref(g);
	json_decref(l);

	/* the core group: no name, version "v1", cluster scope, response group "" */
	json_t *core = load("{\"groupVersion\":\"v1\",\"resources\":[{\"name\":\"namespaces\",\"singularName\":"
			    "\"namespace\",\"namespaced\":false,\"kind\":\"Namespace\",\"verbs\":[\"get\"]}]}");
	g = apidisc_group("", &core, 1);
	assert_null(json_path(g, "metadata.name"));
	json_t *ns = json_path(json_array_get(json_object_get(g, "versions"), 0), "resources");
	assert_string_equal(json_str(json_array_get(ns, 0), "scope"), "Cluster");
	assert_string_equal(json_path_str(json_array_get(ns, 0), "responseKind.group"), "");
	assert_string_equal(json_str(json_array_get(json_object_get(g, "versions"), 0), "version"), "v1");

	json_t *items = json_array();
	json_array_append_new(items, g);
	json_t *list = apidisc_list(APIDISC_V2, items);
	assert_string_equal(json_str(list, "kind"), "APIGroupDiscoveryList");
	assert_string_equal(json_str(list, "apiVersion"), "apidiscovery.k8s.io/v2");
	json_decref(list);
	list = apidisc_list(APIDISC_V2BETA1, json_array());
	assert_string_equal(json_str(list, "apiVersion"), "apidiscovery.k8s.io/v2beta1");
	json_decref(list);
	json_decref(core);
}

static void test_merge(void **state)
{
	(void)state;
	json_t *tp = load("{\"items\":[{\"metadata\":{},\"versions\":[{\"version\":\"v1\",\"resources\":["
			  "{\"resource\":\"pods\",\"verbs\":[\"get\"]}]}]},"
			  "{\"metadata\":{\"name\":\"apps\"},\"versions\":[{\"version\":\"v1\",\"resources\":[]}]}]}");
	json_t *rm = load("{\"items\":[{\"metadata\":{},\"versions\":[{\"version\":\"v1\",\"resources\":["
			  "{\"resource\":\"pods\",\"verbs\":[\"list\"]},{\"resource\":\"nodes\"}]}]},"
			  "{\"metadata\":{\"name\":\"coordination.k8s.io\"},\"versions\":[{\"version\":\"v1\"}]},"
			  "{\"metadata\":{\"name\":\"apps\"},\"versions\":[{\"version\":\"v2\"}]}, 7, {\"x\":1}]}");
	apidisc_merge(tp, rm);
	json_t *items = json_object_get(tp, "items");
	assert_int_equal(json_array_size(items), 3);
	json_t *core = json_path(json_array_get(json_path(json_array_get(items, 0), "versions"), 0), "resources");
	assert_int_equal(json_array_size(core), 2);
	assert_string_equal(json_str(json_array_get(core, 1), "resource"), "nodes");
	/* the tenant partition's pods win */
	assert_string_equal(json_string_value(json_array_get(json_object_get(json_array_get(core, 0), "verbs"), 0)),
			    "get");
	assert_int_equal(json_array_size(json_object_get(json_array_get(items, 1), "versions")), 2);
	assert_string_equal(json_path_str(json_array_get(items, 2), "metadata.name"), "coordination.k8s.io");
	json_decref(tp);
	json_decref(rm);
}

static void test_etag(void **state)
{
	(void)state;
	struct buf a = BUF_INIT, b = BUF_INIT;
	apidisc_etag("{}", 2, &a);
	apidisc_etag("{ }", 3, &b);
	assert_int_equal(a.len, 66);
	assert_int_equal(a.ptr[0], '"');
	assert_string_not_equal(buf_cstr(&a), buf_cstr(&b));
	assert_true(apidisc_etag_matches(buf_cstr(&a), buf_cstr(&a)));
	assert_false(apidisc_etag_matches(buf_cstr(&b), buf_cstr(&a)));
	assert_false(apidisc_etag_matches(NULL, buf_cstr(&a)));
	assert_false(apidisc_etag_matches("", buf_cstr(&a)));
	assert_true(apidisc_etag_matches("*", buf_cstr(&a)));
	struct buf l = BUF_INIT;
	buf_addf(&l, "\"x\", W/%s", buf_cstr(&a));
	assert_true(apidisc_etag_matches(buf_cstr(&l), buf_cstr(&a)));
	/* unquoted: not the same tag */
	buf_reset(&l);
	buf_add(&l, a.ptr + 1, a.len - 2);
	assert_false(apidisc_etag_matches(buf_cstr(&l), buf_cstr(&a)));
	buf_release(&l);
	buf_release(&a);
	buf_release(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_negotiate),
		cmocka_unit_test(test_group),
		cmocka_unit_test(test_merge),
		cmocka_unit_test(test_etag),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
