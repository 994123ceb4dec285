/* Quotas: hard keys, scopes, pod usage, canonical quantities, the exceeded message, the
 * ResourceQuota and LimitRange strategies and LimitRange admission of a pod. */
#include "kinds_test.h"
#include "ursa/quota.h"

static void fmt(long long milli, bool binary, const char *want)
{
	struct buf b = BUF_INIT;
	quantity_format_milli(milli, binary, &b);
	assert_string_equal(buf_cstr(&b), want);
	buf_release(&b);
}

static void test_quantity_format(void **state)
{
	(void)state;
	fmt(0, false, "0");
	fmt(500, false, "500m");
	fmt(1500, false, "1500m");
	fmt(2000, false, "2");
	fmt(1000000, false, "1k");
	fmt(1024LL * 1024 * 1024 * 1000, true, "1Gi");
	fmt(1536LL * 1024 * 1024 * 1000, true, "1536Mi");
	fmt(1500LL * 1000, true, "1500"); /* not a multiple of 1024: decimal */
	fmt(-300, false, "-300m");
	long long m;
	bool bin;
	json_t *v = json_string("512Mi");
	assert_int_equal(quota_value_milli(v, &m, &bin), 0);
	assert_true(bin);
	assert_int_equal(m, 512LL * 1024 * 1024 * 1000);
	json_decref(v);
	v = json_integer(3);
	assert_int_equal(quota_value_milli(v, &m, &bin), 0);
	assert_false(bin);
	assert_int_equal(m, 3000);
	json_decref(v);
	v = json_string("abc");
	assert_int_equal(quota_value_milli(v, &m, NULL), -1);
	json_decref(v);
}

static void test_resource_names(void **state)
{
	(void)state;
	enum qres k;
	const char *p, *g;
	size_t pl, gl;
	assert_int_equal(quota_resource_parse("pods", &k, &p, &pl, &g, &gl), 0);
	assert_int_equal(k, QR_PODS);
	assert_int_equal(quota_resource_parse("cpu", &k, &p, &pl, &g, &gl), 0);
	assert_int_equal(k, QR_REQ_CPU);
	assert_int_equal(quota_resource_parse("limits.memory", &k, &p, &pl, &g, &gl), 0);
	assert_int_equal(k, QR_LIM_MEM);
	assert_int_equal(quota_resource_parse("services", &k, &p, &pl, &g, &gl), 0);
	assert_int_equal(k, QR_COUNT);
	assert_true(pl == 8 && !strncmp(p, "services", pl) && gl == 0);
	assert_int_equal(quota_resource_parse("count/deployments.apps", &k, &p, &pl, &g, &gl), 0);
	assert_true(pl == 11 && !strncmp(p, "deployments", pl) && gl == 4 && !strncmp(g, "apps", gl));
	assert_int_equal(quota_resource_parse("count/secrets", &k, &p, &pl, &g, &gl), 0);
	assert_true(pl == 7 && gl == 0);
	assert_int_equal(quota_resource_parse("bananas", &k, &p, &pl, &g, &gl), -1);
	assert_int_equal(quota_resource_parse("count/", &k, &p, &pl, &g, &gl), -1);
	assert_int_equal(quota_resource_parse("count/Pods", &k, &p, &pl, &g, &gl), -1);
	assert_int_equal(quota_resource_parse("count/x.", &k, &p, &pl, &g, &gl), -1);
}

static void test_scopes(void **state)
{
	(void)state;
	struct quota_scopes s;
	json_t *a = J("['Terminating','NotBestEffort']");
	assert_int_equal(quota_scopes_parse(a, &s), 0);
	assert_true(quota_scopes_match(s, QCLASS_TERMINATING));
	assert_false(quota_scopes_match(s, QCLASS_TERMINATING | QCLASS_BESTEFFORT));
	assert_false(quota_scopes_match(s, 0));
	json_decref(a);
	a = J("['NotTerminating']");
	assert_int_equal(quota_scopes_parse(a, &s), 0);
	assert_true(quota_scopes_match(s, QCLASS_BESTEFFORT));
	assert_false(quota_scopes_match(s, QCLASS_TERMINATING));
	json_decref(a);
	assert_int_equal(quota_scopes_parse(NULL, &s), 0);
	assert_false(quota_scopes_any(s));
	assert_true(quota_scopes_match(s, 3));
	a = J("['Sometimes']");
	assert_int_equal(quota_scopes_parse(a, &s), -1);
	json_decref(a);
	a = json_string("BestEffort");
	assert_int_equal(quota_scopes_parse(a, &s), -1);
	json_decref(a);
}

static void test_pod_usage(void **state)
{
	(void)state;
	json_t *p = J("{'spec':{'containers':[{'name':'a','resources':{'requests':{'cpu':'100m','memory':'1Gi'},"
		      "'limits':{'cpu':'1'}}},{'name':'b','resources':{'requests':{'cpu':'200m'}}}],"
		      "'initContainers':[{'name':'i','resources':{'requests':{'cpu':'500m'}}}]}}");
	struct quota_pod u;
	assert_int_equal(quota_pod_usage(p, &u), 0);
	assert_int_equal(u.v[QR_PODS], 1);
	assert_int_equal(u.v[QR_REQ_CPU], 500); /* the init container's 500m beats the sum 300m */
	assert_int_equal(u.v[QR_REQ_MEM], 1024LL * 1024 * 1024 * 1000);
	assert_int_equal(u.v[QR_LIM_CPU], 1000);
	assert_int_equal(u.cls, 0);
	assert_true(u.missing & (1u << QR_LIM_MEM));
	assert_true(u.missing & (1u << QR_REQ_MEM)); /* container b */
	json_object_set_new(json_object_get(p, "spec"), "activeDeadlineSeconds", json_integer(30));
	json_object_set_new(p, "status", J("{'phase':'Failed'}"));
	assert_int_equal(quota_pod_usage(p, &u), 0);
	assert_int_equal(u.v[QR_PODS], 0);
	assert_true(u.cls & QCLASS_TERMINATING);
	json_decref(p);
	p = J("{'spec':{'containers':[{'name':'a','image':'x'}]}}");
	assert_int_equal(quota_pod_usage(p, &u), 0);
	assert_int_equal(u.cls, QCLASS_BESTEFFORT);
	assert_int_equal(u.missing, 0xfu << 1);
	json_decref(p);
}

static void test_exceeded_message(void **state)
{
	(void)state;
	struct quota_item items[] = {
		{ "requests.cpu", 500, 1500, 2000, true, false },
		{ "pods", 1, 3, 3, false, false },
	};
	struct buf b = BUF_INIT;
	quota_exceeded_message("exceeded quota", "q", items, 2, &b);
	assert_string_equal(buf_cstr(&b), "exceeded quota: q, requested: pods=1,requests.cpu=500m, used: "
					  "pods=3,requests.cpu=1500m, limited: pods=3,requests.cpu=2");
	buf_release(&b);
	struct quota_item mem[] = { { "requests.memory", 512LL << 20 << 0, 0, 0, true, true } };
	mem[0].requested *= 1000;
	mem[0].used = 1024LL * 1024 * 1024 * 1000;
	mem[0].hard = 1024LL * 1024 * 1024 * 1000;
	quota_exceeded_message("exceeded tenant quota", "acme", mem, 1, &b);
	assert_string_equal(buf_cstr(&b), "exceeded tenant quota: acme, requested: requests.memory=512Mi, used: "
					  "requests.memory=1Gi, limited: requests.memory=1Gi");
	buf_release(&b);
}

static void test_quota_strategy(void **state)
{
	(void)state;
	json_t *q = J("{'metadata':{'name':'q','namespace':'team','creationTimestamp':'2024-05-01T11:55:00Z'},"
		      "'spec':{'hard':{'pods':'3','requests.cpu':'1','limits.memory':'1Gi'}}}");
	struct field_errors e = run_validate(&strategy_resourcequota, q, NULL);
	expect_no_errors(&e);
	assert_string_equal(json_path_str(q, "status.hard.pods"), "3");
	json_object_set_new(json_object_get(q, "status"), "used", J("{'pods':'1','requests.cpu':'100m'}"));
	json_t *cells = json_array();
	strategy_resourcequota.cells(q, T("2024-05-01T12:00:00Z"), cells);
	assert_int_equal(json_array_size(cells), strategy_resourcequota.ncolumns);
	assert_string_equal(json_string_value(json_array_get(cells, 2)), "pods: 1/3, requests.cpu: 100m/1");
	assert_string_equal(json_string_value(json_array_get(cells, 3)), "limits.memory: 0/1Gi");
	json_decref(cells);
	json_decref(q);

	q = J("{'metadata':{'name':'q'},'spec':{'hard':{'pods':'abc','bananas':'1','services':'1.5',"
	      "'cpu':-1},'scopes':['BestEffort','Sometimes']}}");
	e = run_validate(&strategy_resourcequota, q, NULL);
	expect_cause(&e, "spec.hard[pods]", "FieldValueInvalid");
	expect_cause(&e, "spec.hard[bananas]", "FieldValueInvalid");
	expect_cause(&e, "spec.hard[services]", "FieldValueInvalid");
	expect_cause(&e, "spec.hard[cpu]", "FieldValueInvalid");
	expect_cause(&e, "spec.scopes[1]", "FieldValueNotSupported");
	field_errors_release(&e);
	json_decref(q);

	q = J("{'metadata':{'name':'q'},'spec':{'hard':{'services':'1'},'scopes':['Terminating']}}");
	e = run_validate(&strategy_resourcequota, q, NULL);
	expect_cause(&e, "spec.hard[services]", "FieldValueInvalid");
	field_errors_release(&e);
	json_decref(q);

	json_t *t = J("{'metadata':{'name':'acme'},'spec':{'quota':{'hard':{'pods':'x'}}}}");
	e = run_validate(&strategy_tenant, t, NULL);
	expect_cause(&e, "spec.quota.hard[pods]", "FieldValueInvalid");
	field_errors_release(&e);
	json_decref(t);
}

static void test_limitrange(void **state)
{
	(void)state;
	json_t *lr = J("{'metadata':{'name':'l'},'spec':{'limits':[{'type':'Container','max':{'cpu':'1'},"
		       "'min':{'memory':'64Mi'}}]}}");
	struct field_errors e = run_validate(&strategy_limitrange, lr, NULL);
	expect_no_errors(&e);
	/* max defaults the limit, the limit the request, min the request */
	assert_string_equal(json_path_str(json_array_get(json_path(lr, "spec.limits"), 0), "default.cpu"), "1");
	assert_string_equal(json_path_str(json_array_get(json_path(lr, "spec.limits"), 0), "defaultRequest.cpu"), "1");
	assert_string_equal(json_path_str(json_array_get(json_path(lr, "spec.limits"), 0), "defaultRequest.memory"),
			    "64Mi");

	json_t *pod = J("{'metadata':{'name':'p'},'spec':{'containers':[{'name':'a','image':'x'}]}}");
	struct buf err = BUF_INIT;
	assert_int_equal(limitrange_admit_pod(json_object_get(lr, "spec"), pod, &err), 0);
	json_t *res = json_object_get(json_array_get(json_path(pod, "spec.containers"), 0), "resources");
	assert_string_equal(json_path_str(res, "limits.cpu"), "1");
	assert_string_equal(json_path_str(res, "requests.cpu"), "1");
	assert_string_equal(json_path_str(res, "requests.memory"), "64Mi");
	json_decref(pod);

	pod = J("{'metadata':{'name':'p'},'spec':{'containers':[{'name':'a','image':'x','resources':"
		"{'limits':{'cpu':'2'},'requests':{'cpu':'2','memory':'32Mi'}}}]}}");
	assert_int_equal(limitrange_admit_pod(json_object_get(lr, "spec"), pod, &err), -1);
	assert_string_equal(buf_cstr(&err), "[minimum memory usage per Container is 64Mi, but request is 32Mi, "
					    "maximum cpu usage per Container is 1, but limit is 2]");
	buf_reset(&err);
	json_decref(pod);
	pod = J("{'metadata':{'name':'p'},'spec':{'containers':[{'name':'a','image':'x','resources':"
		"{'limits':{'cpu':'2000m'},'requests':{'memory':'1Gi'}}}]}}");
	assert_int_equal(limitrange_admit_pod(json_object_get(lr, "spec"), pod, &err), -1);
	assert_string_equal(buf_cstr(&err), "maximum cpu usage per Container is 1, but limit is 2");
	buf_release(&err);
	json_decref(pod);
	json_decref(lr);

	lr = J("{'metadata':{'name':'l'},'spec':{'limits':[{'type':'Container','min':{'cpu':'2'},'max':{'cpu':'1'}},"
	       "{'type':'Node'},{'type':'Pod','default':{'cpu':'1'}}]}}");
	e = run_validate(&strategy_limitrange, lr, NULL);
	expect_cause(&e, "spec.limits[0].min[cpu]", "FieldValueInvalid");
	expect_cause(&e, "spec.limits[1].type", "FieldValueNotSupported");
	expect_cause(&e, "spec.limits[2].default", "FieldValueForbidden");
	field_errors_release(&e);
	json_decref(lr);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_quantity_format), cmocka_unit_test(test_resource_names),
		cmocka_unit_test(test_scopes),		cmocka_unit_test(test_pod_usage),
		cmocka_unit_test(test_exceeded_message), cmocka_unit_test(test_quota_strategy),
		cmocka_unit_test(test_limitrange),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
