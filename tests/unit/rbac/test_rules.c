/* PolicyRules: parsing and validation, matching requests, covering (escalation). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>
#include "ursa/rbac.h"

static struct rbac_rule *parse(const char *text, bool cluster, size_t *ret_n)
{
	json_t *j = json_loads(text, JSON_DECODE_ANY, NULL);
	assert_non_null(j);
	struct rbac_rule *r = NULL;
	struct field_errors errs = { 0 };
	assert_int_equal(rbac_rules_parse(j, "rules", cluster, &r, ret_n, &errs), 0);
	assert_false(field_errors_any(&errs));
	json_decref(j);
	return r;
}

/* The causes of a refused rules array, as "field|reason" lines. */
static char *refused(const char *text, bool cluster)
{
	json_t *j = json_loads(text, JSON_DECODE_ANY, NULL);
	assert_non_null(j);
	struct rbac_rule *r = NULL;
	size_t n = 0;
	struct field_errors errs = { 0 };
	assert_int_not_equal(rbac_rules_parse(j, "rules", cluster, &r, &n, &errs), 0);
	assert_null(r);
	assert_true(field_errors_any(&errs));
	struct buf b = BUF_INIT;
	size_t i;
	json_t *c;
	json_array_foreach(errs.causes, i, c)
		buf_addf(&b, "%s|%s\n", json_string_value(json_object_get(c, "field")),
			 json_string_value(json_object_get(c, "reason")));
	field_errors_release(&errs);
	json_decref(j);
	return buf_detach(&b, NULL);
}

static void test_parse_and_refuse(void **state)
{
	size_t n;
	struct rbac_rule *r = parse("[{\"apiGroups\":[\"\"],\"resources\":[\"pods\",\"pods/log\"],\"verbs\":[\"get\",\"list\"]},"
				    "{\"nonResourceURLs\":[\"/healthz\",\"/api/*\"],\"verbs\":[\"get\"]}]",
				    true, &n);
	assert_int_equal(n, 2);
	assert_int_equal(r[0].nresources, 2);
	assert_string_equal(r[0].resources[1], "pods/log");
	assert_int_equal(r[1].nurls, 2);
	rbac_rules_free(r, n);
	r = parse("null", false, &n);
	assert_null(r);
	assert_int_equal(n, 0);

	char *c = refused("[{\"apiGroups\":[\"\"],\"resources\":[\"pods\"],\"verbs\":[\"get\",\"frob\"]}]", false);
	assert_string_equal(c, "rules[0].verbs[1]|FieldValueNotSupported\n");
	free(c);
	c = refused("[{\"apiGroups\":[\"\"],\"resources\":[\"pods\"]}]", false);
	assert_string_equal(c, "rules[0].verbs|FieldValueRequired\n");
	free(c);
	c = refused("[{\"verbs\":[\"get\"]}]", false);
	assert_non_null(strstr(c, "rules[0].resources|FieldValueRequired"));
	assert_non_null(strstr(c, "rules[0].apiGroups|FieldValueRequired"));
	free(c);
	c = refused("[{\"nonResourceURLs\":[\"/x\"],\"verbs\":[\"get\"]}]", false); /* namespaced */
	assert_string_equal(c, "rules[0].nonResourceURLs|FieldValueInvalid\n");
	free(c);
	c = refused("[{\"nonResourceURLs\":[\"x*y\"],\"verbs\":[\"get\"]}]", true);
	assert_string_equal(c, "rules[0].nonResourceURLs[0]|FieldValueInvalid\n");
	free(c);
	c = refused("[{\"apiGroups\":[\"\"],\"resources\":[\"pods\"],\"nonResourceURLs\":[\"/x\"],\"verbs\":[\"get\"]}]", true);
	assert_string_equal(c, "rules[0]|FieldValueInvalid\n");
	free(c);
	c = refused("[{\"apiGroups\":\"\",\"resources\":[\"pods\"],\"verbs\":[\"get\"]}, 7]", false);
	assert_string_equal(c, "rules[0].apiGroups|FieldValueTypeInvalid\nrules[1]|FieldValueTypeInvalid\n");
	free(c);
	c = refused("{}", false);
	assert_string_equal(c, "rules|FieldValueTypeInvalid\n");
	free(c);
}

#define ATTRS(v, g, res, sub, nm) (&(struct rbac_attrs){ .verb = v, .group = g, .resource = res, .subresource = sub, .name = nm, .ns = "team" })

static void test_matching(void **state)
{
	size_t n;
	struct rbac_rule *r = parse("[{\"apiGroups\":[\"\"],\"resources\":[\"pods\"],\"verbs\":[\"get\",\"list\"]},"
				    "{\"apiGroups\":[\"apps\"],\"resources\":[\"deployments/scale\"],\"verbs\":[\"*\"]},"
				    "{\"apiGroups\":[\"*\"],\"resources\":[\"*/status\"],\"verbs\":[\"get\"]},"
				    "{\"apiGroups\":[\"\"],\"resources\":[\"secrets\"],\"resourceNames\":[\"pub\"],\"verbs\":[\"get\"]},"
				    "{\"apiGroups\":[\"\"],\"resources\":[\"pods/*\"],\"verbs\":[\"create\"]},"
				    "{\"nonResourceURLs\":[\"/api/*\",\"/version\"],\"verbs\":[\"get\"]}]",
				    true, &n);
	assert_true(rbac_rule_allows(&r[0], ATTRS("get", "", "pods", NULL, "p")));
	assert_true(rbac_rule_allows(&r[0], ATTRS("list", "", "pods", NULL, NULL)));
	assert_false(rbac_rule_allows(&r[0], ATTRS("create", "", "pods", NULL, NULL)));
	assert_false(rbac_rule_allows(&r[0], ATTRS("get", "apps", "pods", NULL, "p")));
	assert_false(rbac_rule_allows(&r[0], ATTRS("get", "", "pods", "log", "p"))); /* a subresource is its own */
	assert_true(rbac_rule_allows(&r[1], ATTRS("update", "apps", "deployments", "scale", "d")));
	assert_false(rbac_rule_allows(&r[1], ATTRS("update", "apps", "deployments", NULL, "d")));
	assert_true(rbac_rule_allows(&r[2], ATTRS("get", "apps", "deployments", "status", "d")));
	assert_false(rbac_rule_allows(&r[2], ATTRS("get", "apps", "deployments", NULL, "d")));
	assert_true(rbac_rule_allows(&r[3], ATTRS("get", "", "secrets", NULL, "pub")));
	assert_false(rbac_rule_allows(&r[3], ATTRS("get", "", "secrets", NULL, "priv")));
	assert_false(rbac_rule_allows(&r[3], ATTRS("list", "", "secrets", NULL, NULL)));
	assert_false(rbac_rule_allows(&r[3], ATTRS("get", "", "secrets", NULL, NULL)));
	assert_true(rbac_rule_allows(&r[4], ATTRS("create", "", "pods", "exec", "p")));
	assert_false(rbac_rule_allows(&r[4], ATTRS("create", "", "pods", NULL, NULL)));
	struct rbac_attrs url = { .verb = "get", .path = "/api/v1" };
	assert_true(rbac_rule_allows(&r[5], &url));
	url.path = "/apis";
	assert_false(rbac_rule_allows(&r[5], &url));
	url.path = "/version";
	assert_true(rbac_rule_allows(&r[5], &url));
	url.verb = "post";
	assert_false(rbac_rule_allows(&r[5], &url));
	assert_false(rbac_rule_allows(&r[0], &url)); /* resource rules never match a path */
	rbac_rules_free(r, n);
}

static void test_cover(void **state)
{
	size_t n, m;
	struct rbac_rule *own = parse("[{\"apiGroups\":[\"\"],\"resources\":[\"pods\",\"pods/*\"],\"verbs\":[\"get\",\"list\"]},"
				      "{\"apiGroups\":[\"apps\"],\"resources\":[\"*\"],\"verbs\":[\"*\"]},"
				      "{\"apiGroups\":[\"\"],\"resources\":[\"secrets\"],\"resourceNames\":[\"a\",\"b\"],\"verbs\":[\"get\"]},"
				      "{\"nonResourceURLs\":[\"/api/*\"],\"verbs\":[\"get\"]}]",
				      true, &n);
	struct rbac_rule *want = parse("[{\"apiGroups\":[\"\"],\"resources\":[\"pods\"],\"verbs\":[\"get\"]},"
				       "{\"apiGroups\":[\"\"],\"resources\":[\"pods/log\"],\"verbs\":[\"list\"]},"
				       "{\"apiGroups\":[\"apps\"],\"resources\":[\"deployments\",\"replicasets/scale\"],\"verbs\":[\"delete\",\"patch\"]},"
				       "{\"apiGroups\":[\"\"],\"resources\":[\"secrets\"],\"resourceNames\":[\"a\"],\"verbs\":[\"get\"]},"
				       "{\"nonResourceURLs\":[\"/api/v1\"],\"verbs\":[\"get\"]},"
				       /* not held: */
				       "{\"apiGroups\":[\"\"],\"resources\":[\"pods\"],\"verbs\":[\"create\"]},"
				       "{\"apiGroups\":[\"\"],\"resources\":[\"*\"],\"verbs\":[\"get\"]},"
				       "{\"apiGroups\":[\"\"],\"resources\":[\"secrets\"],\"verbs\":[\"get\"]},"
				       "{\"apiGroups\":[\"\"],\"resources\":[\"secrets\"],\"resourceNames\":[\"a\",\"c\"],\"verbs\":[\"get\"]},"
				       "{\"nonResourceURLs\":[\"/apis\"],\"verbs\":[\"get\"]},"
				       "{\"apiGroups\":[\"*\"],\"resources\":[\"deployments\"],\"verbs\":[\"get\"]}]",
				       true, &m);
	for (size_t i = 0; i < 5; i++)
		assert_true(rbac_rules_cover(own, n, &want[i]));
	for (size_t i = 5; i < m; i++)
		assert_false(rbac_rules_cover(own, n, &want[i]));
	assert_false(rbac_rules_cover(NULL, 0, &want[0]));
	rbac_rules_free(own, n);
	rbac_rules_free(want, m);
}

static void test_rule_json_round_trip(void **state)
{
	size_t n, m;
	struct rbac_rule *r = parse("[{\"apiGroups\":[\"\"],\"resources\":[\"secrets\"],\"resourceNames\":[\"a\"],\"verbs\":[\"get\"]},"
				    "{\"nonResourceURLs\":[\"/x\"],\"verbs\":[\"get\"]}]",
				    true, &n);
	json_t *a = json_array();
	for (size_t i = 0; i < n; i++)
		json_array_append_new(a, rbac_rule_json(&r[i]));
	char *text = json_dumps(a, JSON_COMPACT);
	struct rbac_rule *back = parse(text, true, &m);
	assert_int_equal(m, n);
	assert_true(rbac_rules_cover(back, m, &r[0]) && rbac_rules_cover(r, n, &back[0]));
	assert_true(rbac_rules_cover(back, m, &r[1]));
	free(text);
	json_decref(a);
	rbac_rules_free(r, n);
	rbac_rules_free(back, m);
}

static void test_verbs_known(void **state)
{
	assert_true(rbac_verb_known("get"));
	assert_true(rbac_verb_known("escalate"));
	assert_true(rbac_verb_known("*"));
	assert_false(rbac_verb_known("GET"));
	assert_false(rbac_verb_known(""));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_and_refuse),
		cmocka_unit_test(test_matching),
		cmocka_unit_test(test_cover),
		cmocka_unit_test(test_rule_json_round_trip),
		cmocka_unit_test(test_verbs_known),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
