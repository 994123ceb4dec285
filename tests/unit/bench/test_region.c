/* ursa-region's pure parts (bench/region/pure.c): region.env, the pacing schedule, histograms,
 * Kubernetes' SLI scopes, TSV lines, the acknowledged-writes log and its fold, JSON subsets. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "region/region.h"

static void test_env_parse(void **state)
{
	(void)state;
	const char *text = "# region of run X\n"
			   "GATEWAY_URL=https://127.0.0.1:40001\n"
			   "export CA_FILE='/tmp/a dir/ca.crt'  # the CA\n"
			   "SIGNING_KEY=\"/k/signing-key.pem\"; ADMIN_TOKEN_FILE=/k/admin.token\n"
			   "TP_URLS=\"tp-1=https://127.0.0.1:1,https://127.0.0.1:2 tp-2=https://127.0.0.1:3\"\n"
			   "OTHER=ignored NODES=500 TENANTS=100\n";
	struct region_env e;
	char *err = NULL;
	assert_int_equal(region_env_parse(text, strlen(text), &e, &err), 0);
	assert_null(err);
	assert_string_equal(e.gateway_url, "https://127.0.0.1:40001");
	assert_string_equal(e.ca_file, "/tmp/a dir/ca.crt");
	assert_string_equal(e.signing_key, "/k/signing-key.pem");
	assert_string_equal(e.admin_token_file, "/k/admin.token");
	assert_string_equal(e.tp_urls, "tp-1=https://127.0.0.1:1,https://127.0.0.1:2 tp-2=https://127.0.0.1:3");
	assert_null(e.rm_urls);
	assert_int_equal(e.nodes, 500);
	assert_int_equal(e.tenants, 100);
	region_env_release(&e);

	/* escapes in double quotes and bare words; a later assignment wins */
	text = "RM_URLS=\"a\\\"b\" RM_URLS=x\\ y\n";
	assert_int_equal(region_env_parse(text, strlen(text), &e, &err), 0);
	assert_string_equal(e.rm_urls, "x y");
	assert_int_equal(e.nodes, -1);
	region_env_release(&e);

	const char *bad[] = {"CA_FILE='open\n", "just words\n", "NODES=many\n", "1X=2\n", "=v\n"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(region_env_parse(bad[i], strlen(bad[i]), &e, &err), -1);
		assert_non_null(err);
		free(err);
		err = NULL;
	}
}

static void test_tenant_name(void **state)
{
	(void)state;
	char *a = region_tenant_name("t", 1), *b = region_tenant_name("t", 123456);
	assert_string_equal(a, "t-00001");
	assert_string_equal(b, "t-123456");
	free(a);
	free(b);
}

static void test_pace(void **state)
{
	(void)state;
	struct pace p = {.rate = 100, .duration_s = 600, .burst_rate = 1000, .burst_s = 10};
	assert_int_equal(pace_total(&p), 70000);
	assert_int_equal(pace_due_us(&p, 0), 0);
	assert_int_equal(pace_due_us(&p, 1), 10000); /* 100/s: 10 ms apart */
	assert_int_equal(pace_due_us(&p, 59999), 599990000);
	assert_int_equal(pace_due_us(&p, 60000), 600000000); /* the burst starts at 600 s */
	assert_int_equal(pace_due_us(&p, 60001), 600001000); /* 1000/s: 1 ms apart */
	assert_int_equal(pace_due_us(&p, 70000), 610000000);
	assert_int_equal(pace_due_us(&p, 99999), 610000000); /* past the end: at the end */
	/* monotonic over the whole schedule */
	int64_t prev = -1;
	for (long long k = 0; k <= 70000; k += 7) {
		int64_t d = pace_due_us(&p, k);
		assert_true(d >= prev);
		prev = d;
	}
	/* no burst */
	struct pace q = {.rate = 20, .duration_s = 60};
	assert_int_equal(pace_total(&q), 1200);
	assert_int_equal(pace_due_us(&q, 1200), 60000000);
	/* fractional products round */
	struct pace r = {.rate = 3, .duration_s = 0.5, .burst_rate = 0, .burst_s = 5};
	assert_int_equal(pace_total(&r), 2);
}

static void test_hist(void **state)
{
	(void)state;
	struct hist *h = calloc(1, sizeof(*h));
	assert_int_equal(hist_quantile(h, 0.99), 0);
	for (int i = 1; i <= 1000; i++)
		hist_add(h, i * 1000); /* 1 ms .. 1 s */
	assert_int_equal(h->n, 1000);
	int64_t p50 = hist_quantile(h, 0.5), p99 = hist_quantile(h, 0.99), p100 = hist_quantile(h, 1.0);
	assert_in_range(p50, 500000, 510000); /* within a bucket (2 %) above the true value */
	assert_in_range(p99, 990000, 1000000);
	assert_int_equal(p100, 1000000); /* never above the max */
	/* bucket bounds hold their values */
	for (int64_t v = 1; v < 100000000; v = v * 3 + 1) {
		int b = hist_bucket(v);
		assert_true(v <= hist_bucket_upper(b));
		assert_true(b == 1 || v > hist_bucket_upper(b - 1));
	}
	assert_int_equal(hist_bucket(0), 0);
	assert_int_equal(hist_bucket(-5), 0);
	struct hist *g = calloc(1, sizeof(*g));
	hist_add(g, 5000000);
	hist_merge(h, g);
	assert_int_equal(h->n, 1001);
	assert_int_equal(h->max, 5000000);
	assert_int_equal(hist_quantile(h, 1.0), 5000000);
	free(g);
	free(h);
}

static void test_sli_scope(void **state)
{
	(void)state;
	char r[64];
	struct {
		const char *verb, *path, *res;
		enum sli_scope scope;
	} cases[] = {
		{"create", "/api/v1/tenants", "tenants", SLI_RESOURCE},
		{"get", "/api/v1/tenants/t-00001", "tenants", SLI_RESOURCE},
		{"list", "/api/v1/tenants", "tenants", SLI_CLUSTER},
		{"get", "/api/v1/tenants/t-1/namespaces/default", "namespaces", SLI_RESOURCE},
		{"list", "/api/v1/tenants/t-1/namespaces", "namespaces", SLI_CLUSTER},
		{"create", "/api/v1/tenants/t-1/namespaces", "namespaces", SLI_RESOURCE},
		{"create", "/api/v1/tenants/t-1/namespaces/ld-0/configmaps", "configmaps", SLI_RESOURCE},
		{"list", "/api/v1/tenants/t-1/namespaces/ld-0/pods?labelSelector=a%3Db", "pods", SLI_NAMESPACE},
		{"list", "/api/v1/tenants/all/pods?watch=1", "pods", SLI_CLUSTER},
		{"patch", "/apis/apps/v1/tenants/t-1/namespaces/ld-1/deployments/d-3", "deployments", SLI_RESOURCE},
		{"list", "/apis/apps/v1/tenants/t-1/deployments?limit=500", "deployments", SLI_CLUSTER},
		{"update", "/apis/apps/v1/tenants/t-1/namespaces/n/deployments/d/scale", "deployments/scale",
		 SLI_RESOURCE},
		{"get", "/api/v1/namespaces/default/pods/p", "pods", SLI_RESOURCE},
		{"list", "/api/v1/nodes", "nodes", SLI_CLUSTER},
		{"get", "/healthz", "healthz", SLI_CLUSTER},
		{"get", "/", "", SLI_CLUSTER},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		enum sli_scope s = sli_classify(cases[i].verb, cases[i].path, r, sizeof(r));
		if (s != cases[i].scope || strcmp(r, cases[i].res) != 0)
			fail_msg("%s %s: %s %s, want %s %s", cases[i].verb, cases[i].path, r, sli_scope_name(s),
				 cases[i].res, sli_scope_name(cases[i].scope));
	}
	/* a short buffer truncates */
	char tiny[4];
	sli_classify("get", "/api/v1/tenants/t/namespaces/n/configmaps/x", tiny, sizeof(tiny));
	assert_string_equal(tiny, "con");
	assert_true(sli_mutating("create") && sli_mutating("patch") && sli_mutating("delete") &&
		    sli_mutating("update"));
	assert_false(sli_mutating("get") || sli_mutating("list") || sli_mutating("watch-start"));
}

static void test_tsv(void **state)
{
	(void)state;
	struct buf b = BUF_INIT;
	tsv_call_line(&b, 1700000000123, "create", "configmaps", SLI_RESOURCE, 4567, 201);
	tsv_call_line(&b, 1, "get", "pods", SLI_NAMESPACE, 9, -1000); /* a transport error is code 0 */
	assert_string_equal(buf_cstr(&b), "1700000000123\tcreate\tconfigmaps\tresource\t4567\t201\n"
					  "1\tget\tpods\tnamespace\t9\t0\n");
	buf_reset(&b);
	tsv_pod_line(&b, "t-00001", "ld-0", "d-1-abc", "u-1", 1000, 2500, "rm-1-n7");
	tsv_pod_line(&b, "t\t1", "ns", "p", "u", 5, -1, "");
	assert_string_equal(buf_cstr(&b), "t-00001\tld-0\td-1-abc\tu-1\t1000\t2500\trm-1-n7\n"
					  "t 1\tns\tp\tu\t5\t\t\n");
	buf_release(&b);
}

static void test_ack_roundtrip_and_fold(void **state)
{
	(void)state;
	struct strmap m;
	struct buf b = BUF_INIT;
	strmap_init(&m);
	struct ack a = {.op = "put",
			.kind = "configmaps",
			.tenant = "t-1",
			.ns = "ld-0",
			.name = "cm-1",
			.uid = "U1",
			.rv = "7",
			.content = json_pack("{s:{s:s}}", "data", "gen", "0")};
	ack_format(&b, &a);
	json_decref(a.content);
	struct ack p;
	assert_int_equal(ack_parse(b.ptr, b.len, &p), 0);
	assert_string_equal(p.op, "put");
	assert_string_equal(p.uid, "U1");
	assert_string_equal(p.rv, "7");
	assert_string_equal(json_string_value(json_object_get(json_object_get(p.content, "data"), "gen")), "0");
	ack_fold(&m, &p);
	/* an update without a uid keeps the create's; the last content wins */
	const char *upd =
		"{\"op\":\"put\",\"kind\":\"configmaps\",\"tenant\":\"t-1\",\"ns\":\"ld-0\",\"name\":\"cm-1\","
		"\"content\":{\"data\":{\"gen\":\"1\"}}}";
	assert_int_equal(ack_parse(upd, strlen(upd), &p), 0);
	ack_fold(&m, &p);
	struct ack *cur = strmap_get(&m, "configmaps/t-1/ld-0/cm-1")->val;
	assert_string_equal(cur->uid, "U1");
	assert_string_equal(json_string_value(json_object_get(json_object_get(cur->content, "data"), "gen")), "1");
	/* then a delete */
	const char *del =
		"{\"op\":\"delete\",\"kind\":\"configmaps\",\"tenant\":\"t-1\",\"ns\":\"ld-0\",\"name\":\"cm-1\"}";
	assert_int_equal(ack_parse(del, strlen(del), &p), 0);
	ack_fold(&m, &p);
	cur = strmap_get(&m, "configmaps/t-1/ld-0/cm-1")->val;
	assert_string_equal(cur->op, "delete");
	assert_string_equal(cur->uid, "U1");
	assert_int_equal(m.n, 1);
	/* cluster-scoped: ns "" */
	const char *ns =
		"{\"op\":\"unknown\",\"kind\":\"namespaces\",\"tenant\":\"t-1\",\"ns\":\"\",\"name\":\"ld-0\"}";
	assert_int_equal(ack_parse(ns, strlen(ns), &p), 0);
	ack_fold(&m, &p);
	assert_non_null(strmap_get(&m, "namespaces/t-1//ld-0"));
	ack_fold_release(&m);
	buf_release(&b);

	const char *bad[] = {
		"",
		"[]",
		"{\"op\":\"put\"}",
		"{\"op\":\"drop\",\"kind\":\"k\",\"tenant\":\"t\",\"ns\":\"\",\"name\":\"n\"}",
		"{\"op\":\"put\",\"kind\":\"k\",\"tenant\":\"t\",\"ns\":\"\",\"name\":\"\"}",
		"{\"op\":\"put\",\"kind\":\"k\",\"tenant\":\"t\",\"ns\":1,\"name\":\"n\"}",
		"{\"op\":\"put\",\"kind\":\"k\",\"tenant\":\"t\",\"ns\":\"\",\"name\":\"n\",\"uid\":5}",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(ack_parse(bad[i], strlen(bad[i]), &p), -1);
}

static void test_json_subset(void **state)
{
	(void)state;
	json_t *given = json_pack("{s:{s:s}, s:[{s:s, s:i}], s:i}", "labels", "app", "d-1", "containers", "name", "c",
				  "port", 80, "n", 3);
	json_t *have = json_pack("{s:{s:s, s:s}, s:[{s:s, s:i, s:s}], s:f, s:s}", "labels", "app", "d-1", "x", "y",
				 "containers", "name", "c", "port", 80, "protocol", "TCP", "n", 3.0, "extra", "z");
	assert_true(json_subset(given, have));
	assert_false(json_subset(have, given));
	json_object_set_new(json_object_get(have, "labels"), "app", json_string("d-2"));
	assert_false(json_subset(given, have));
	json_object_set_new(json_object_get(have, "labels"), "app", json_string("d-1"));
	json_array_append_new(json_object_get(have, "containers"), json_object());
	assert_false(json_subset(given, have)); /* arrays must have the same length */
	assert_true(json_subset(NULL, have));
	assert_false(json_subset(given, NULL));
	json_decref(given);
	json_decref(have);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_env_parse),
		cmocka_unit_test(test_tenant_name),
		cmocka_unit_test(test_pace),
		cmocka_unit_test(test_hist),
		cmocka_unit_test(test_sli_scope),
		cmocka_unit_test(test_tsv),
		cmocka_unit_test(test_ack_roundtrip_and_fold),
		cmocka_unit_test(test_json_subset),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
