/* The scheduler's pure parts: pod parsing, filters, scores, spreading, sampling,
 * reservations, failure messages, and tenant fairness of its queue. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "sched.h"
#include "ursa/client.h"
#include "ursa/jsonutil.h"
#include "ursa/xalloc.h"

static json_t *node_json(const char *name, const char *zone, const char *cpu, const char *mem, int pods,
			 bool ready, const char *taint)
{
	json_t *n = json_pack("{s:{s:s, s:s, s:{s:s, s:s}}, s:{}, s:{s:{s:s, s:s, s:i}, s:[{s:s, s:s}]}}",
			      "metadata", "name", name, "resourceVersion", "7", "labels", "topology.kubernetes.io/zone",
			      zone, "kubernetes.io/hostname", name, "spec", "status", "allocatable", "cpu", cpu,
			      "memory", mem, "pods", pods, "conditions", "type", "Ready", "status",
			      ready ? "True" : "False");
	assert_non_null(n);
	if (taint)
		json_object_set_new(json_object_get(n, "spec"), "taints",
				    json_pack("[{s:s, s:s, s:s}]", "key", taint, "value", "true", "effect", "NoSchedule"));
	return n;
}

static json_t *pod_json(const char *name, const char *cpu, const char *mem)
{
	json_t *p = json_pack("{s:{s:s, s:s, s:s, s:s}, s:{s:[{s:s, s:{s:{s:s, s:s}}}]}}", "metadata", "name", name,
			      "namespace", "default", "tenant", "acme", "uid", name, "spec", "containers", "name", "c",
			      "resources", "requests", "cpu", cpu, "memory", mem);
	assert_non_null(p);
	return p;
}

static void parse(const json_t *obj, struct sched_pod *p)
{
	struct buf err = BUF_INIT;
	int rc = sched_pod_parse(obj, p, &err);
	if (rc)
		fail_msg("parse: %s", buf_cstr(&err));
	buf_release(&err);
}

static void add_nodes(struct sched_cache *c, int n, const char *cpu)
{
	for (int i = 0; i < n; i++) {
		char *name = xasprintf("n%d", i);
		json_t *o = node_json(name, i % 2 ? "az-2" : "az-1", cpu, "4Gi", 110, true, NULL);
		sched_cache_node_set(c, o, "rm-1");
		json_decref(o);
		free(name);
	}
}

static void test_pod_requests(void **state)
{
	(void)state;
	json_t *o = pod_json("p", "250m", "64Mi");
	json_array_append_new(json_path(o, "spec.containers"),
			      json_pack("{s:s, s:{s:{s:s}}}", "name", "d", "resources", "limits", "cpu", "1"));
	json_object_set_new(json_object_get(o, "spec"), "initContainers",
			    json_pack("[{s:s, s:{s:{s:s}}}]", "name", "i", "resources", "requests", "cpu", "2"));
	struct sched_res r;
	assert_int_equal(sched_pod_requests(o, &r), 0);
	assert_int_equal(r.cpu_m, 2000); /* init container's 2 beats 250m + 1 */
	assert_int_equal(r.mem_m, 64LL * 1024 * 1024 * 1000);
	assert_int_equal(r.pods, 1);
	json_object_set_new(json_path(json_array_get(json_path(o, "spec.containers"), 0), "resources.requests"), "cpu",
			    json_string("x"));
	struct sched_pod p;
	struct buf err = BUF_INIT;
	assert_int_not_equal(sched_pod_parse(o, &p, &err), 0);
	buf_release(&err);
	json_decref(o);
}

static void test_filters(void **state)
{
	(void)state;
	struct sched_node n = { .name = xstrdup("n1") };
	struct sched_pod p;
	json_t *no = node_json("n1", "az-1", "1", "1Gi", 2, true, NULL);
	json_t *po = pod_json("p", "600m", "100Mi");
	sched_node_set(&n, no, "rm-1", "tp-1");
	parse(po, &p);
	assert_int_equal(sched_filter_node(&n, &p, NULL, NULL, NULL), FAIL_NONE);
	n.used.cpu_m = 500;
	assert_int_equal(sched_filter_node(&n, &p, NULL, NULL, NULL), FAIL_CPU);
	n.used.cpu_m = 0;
	n.other.pods = 2; /* another partition's reservation fills the pod slots */
	assert_int_equal(sched_filter_node(&n, &p, NULL, NULL, NULL), FAIL_PODS);
	n.other.pods = 0;
	n.ready = false;
	assert_int_equal(sched_filter_node(&n, &p, NULL, NULL, NULL), FAIL_NOT_READY);
	n.ready = true;
	n.unschedulable = true;
	assert_int_equal(sched_filter_node(&n, &p, NULL, NULL, NULL), FAIL_UNSCHEDULABLE);
	n.unschedulable = false;
	sched_pod_release(&p);

	/* zone nodeSelector */
	json_object_set_new(json_object_get(po, "spec"), "nodeSelector",
			    json_pack("{s:s}", "topology.kubernetes.io/zone", "az-2"));
	parse(po, &p);
	assert_int_equal(sched_filter_node(&n, &p, NULL, NULL, NULL), FAIL_SELECTOR);
	sched_pod_release(&p);
	json_object_del(json_object_get(po, "spec"), "nodeSelector");

	/* required node affinity: zone In (az-1) passes, NotIn fails */
	json_object_set_new(json_object_get(po, "spec"), "affinity",
			    json_pack("{s:{s:{s:[{s:[{s:s, s:s, s:[s]}]}]}}}", "nodeAffinity",
				      "requiredDuringSchedulingIgnoredDuringExecution", "nodeSelectorTerms",
				      "matchExpressions", "key", "topology.kubernetes.io/zone", "operator", "In",
				      "values", "az-1"));
	parse(po, &p);
	assert_int_equal(sched_filter_node(&n, &p, NULL, NULL, NULL), FAIL_NONE);
	sched_pod_release(&p);
	json_t *terms = json_path(po, "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution."
				      "nodeSelectorTerms");
	json_t *expr = json_array_get(json_object_get(json_array_get(terms, 0), "matchExpressions"), 0);
	json_object_set_new(expr, "operator", json_string("NotIn"));
	parse(po, &p);
	assert_int_equal(sched_filter_node(&n, &p, NULL, NULL, NULL), FAIL_SELECTOR);
	sched_pod_release(&p);
	json_object_del(json_object_get(po, "spec"), "affinity");

	/* taints: untolerated, then tolerated with Exists */
	json_decref(no);
	no = node_json("n1", "az-1", "1", "1Gi", 2, true, "ursa.io/hollow");
	sched_node_set(&n, no, "rm-1", "tp-1");
	parse(po, &p);
	const char *taint = NULL;
	assert_int_equal(sched_filter_node(&n, &p, NULL, NULL, &taint), FAIL_TAINT);
	assert_string_equal(taint, "ursa.io/hollow");
	sched_pod_release(&p);
	json_object_set_new(json_object_get(po, "spec"), "tolerations",
			    json_pack("[{s:s, s:s}]", "key", "ursa.io/hollow", "operator", "Exists"));
	parse(po, &p);
	assert_int_equal(sched_filter_node(&n, &p, NULL, NULL, NULL), FAIL_NONE);
	sched_pod_release(&p);
	json_decref(no);
	json_decref(po);
	sched_node_clear(&n);
	free(n.name);
}

/* Nodes with the same taints share one verdict per decision (the memo); other taints, a
 * PreferNoSchedule taint and a memo of another pod are judged on their own. */
static void test_taint_memo(void **state)
{
	(void)state;
	struct sched_node n[4] = { { .name = xstrdup("n0") }, { .name = xstrdup("n1") }, { .name = xstrdup("n2") },
				   { .name = xstrdup("n3") } };
	const char *keys[] = { "dedicated", "dedicated", "gpu", NULL };
	for (int i = 0; i < 4; i++) {
		json_t *no = node_json(n[i].name, "az-1", "4", "4Gi", 110, true, keys[i]);
		if (i == 3) /* a soft taint only */
			json_object_set_new(json_object_get(no, "spec"), "taints",
					    json_pack("[{s:s, s:s}]", "key", "slow", "effect", "PreferNoSchedule"));
		sched_node_set(&n[i], no, "rm-1", "tp-1");
		json_decref(no);
	}
	assert_int_equal(n[0].taints_sig, n[1].taints_sig);
	assert_int_not_equal(n[0].taints_sig, n[2].taints_sig);
	assert_int_not_equal(n[0].taints_sig, 0);

	json_t *po = pod_json("p", "100m", "64Mi");
	json_object_set_new(json_object_get(po, "spec"), "tolerations",
			    json_pack("[{s:s, s:s, s:s}]", "key", "dedicated", "operator", "Equal", "value", "true"));
	struct sched_pod p;
	parse(po, &p);
	struct taint_memo memo = { 0 };
	const char *taint = NULL;
	assert_int_equal(sched_filter_node(&n[0], &p, NULL, &memo, &taint), FAIL_NONE);
	assert_int_equal(sched_filter_node(&n[1], &p, NULL, &memo, &taint), FAIL_NONE);
	assert_int_equal(memo.n, 1); /* n1 got n0's verdict */
	assert_int_equal(sched_filter_node(&n[2], &p, NULL, &memo, &taint), FAIL_TAINT);
	assert_string_equal(taint, "gpu");
	assert_int_equal(sched_filter_node(&n[3], &p, NULL, &memo, &taint), FAIL_NONE);
	assert_int_equal(memo.n, 3);
	/* the soft taint costs n3 its score, through the memo as without it */
	long long plain = sched_score_node(&n[0], &p, NULL, &memo), soft = sched_score_node(&n[3], &p, NULL, &memo);
	assert_int_equal(soft, plain - 100);
	assert_int_equal(sched_score_node(&n[3], &p, NULL, NULL), soft);
	assert_int_equal(memo.n, 3);
	sched_pod_release(&p);

	/* another pod starts from an empty memo: n0 and n1 are now out */
	json_object_del(json_object_get(po, "spec"), "tolerations");
	parse(po, &p);
	struct taint_memo other = { 0 };
	taint = NULL;
	assert_int_equal(sched_filter_node(&n[1], &p, NULL, &other, &taint), FAIL_TAINT);
	assert_string_equal(taint, "dedicated");
	assert_int_equal(sched_filter_node(&n[0], &p, NULL, &other, NULL), FAIL_TAINT);
	assert_int_equal(other.n, 1);
	sched_pod_release(&p);
	json_decref(po);
	for (int i = 0; i < 4; i++) {
		sched_node_clear(&n[i]);
		free(n[i].name);
	}
}

static void test_least_allocated_and_preferred(void **state)
{
	(void)state;
	struct sched_node a = { .name = xstrdup("a") }, b = { .name = xstrdup("b") };
	json_t *ao = node_json("a", "az-1", "4", "4Gi", 110, true, NULL);
	json_t *bo = node_json("b", "az-2", "4", "4Gi", 110, true, NULL);
	sched_node_set(&a, ao, "rm-1", "tp-1");
	sched_node_set(&b, bo, "rm-2", "tp-1");
	json_t *po = pod_json("p", "500m", "256Mi");
	struct sched_pod p;
	parse(po, &p);
	a.used.cpu_m = 3000;
	a.used.mem_m = 3LL << 30;
	a.used.mem_m *= 1000;
	assert_true(sched_score_node(&b, &p, NULL, NULL) > sched_score_node(&a, &p, NULL, NULL));
	sched_pod_release(&p);
	/* a strong preference for az-1 beats the emptier node */
	a.used = (struct sched_res){ 1000, 1000LL << 30, 1 };
	json_object_set_new(json_object_get(po, "spec"), "affinity",
			    json_pack("{s:{s:[{s:i, s:{s:[{s:s, s:s, s:[s]}]}}]}}", "nodeAffinity",
				      "preferredDuringSchedulingIgnoredDuringExecution", "weight", 100, "preference",
				      "matchExpressions", "key", "topology.kubernetes.io/zone", "operator", "In",
				      "values", "az-1"));
	parse(po, &p);
	assert_true(sched_score_node(&a, &p, NULL, NULL) > sched_score_node(&b, &p, NULL, NULL));
	sched_pod_release(&p);
	json_decref(po);
	json_decref(ao);
	json_decref(bo);
	sched_node_clear(&a);
	sched_node_clear(&b);
	free(a.name);
	free(b.name);
}

static void test_sampling(void **state)
{
	(void)state;
	assert_int_equal(sched_nodes_to_find(50, 0, 500), 50);
	assert_int_equal(sched_nodes_to_find(500, 0, 500), 230);   /* 46 % */
	assert_int_equal(sched_nodes_to_find(5000, 0, 500), 500);  /* 10 % */
	assert_int_equal(sched_nodes_to_find(50000, 0, 500), 500); /* capped */
	assert_int_equal(sched_nodes_to_find(50000, 0, 0), 2500);  /* 5 % floor */
	assert_int_equal(sched_nodes_to_find(1000, 100, 0), 1000);

	struct sched_cache c;
	sched_cache_init(&c, "tp-1");
	add_nodes(&c, 5000, "8");
	json_t *po = pod_json("p", "100m", "10Mi");
	struct sched_pod p;
	parse(po, &p);
	struct sched_result r;
	sched_decide(&c, &p, &r);
	assert_non_null(r.node);
	assert_int_equal(r.feasible, 500);
	assert_int_equal(r.evaluated, 500);
	size_t start = c.next_start;
	assert_int_equal(start, 500); /* the next decision looks at the next slice */
	sched_result_release(&r);
	sched_pod_release(&p);
	json_decref(po);
	sched_cache_release(&c);
}

static json_t *rs_pod(int i)
{
	char *name = xasprintf("web-%d", i);
	json_t *o = pod_json(name, "100m", "10Mi");
	json_object_set_new(json_object_get(o, "metadata"), "ownerReferences",
			    json_pack("[{s:s, s:s, s:s, s:b}]", "kind", "ReplicaSet", "name", "web", "uid", "rs-uid",
				      "controller", 1));
	free(name);
	return o;
}

static void test_replicaset_spreads_across_zones(void **state)
{
	(void)state;
	struct sched_cache c;
	sched_cache_init(&c, "tp-1");
	add_nodes(&c, 6, "8");
	/* make az-1 nodes emptier so least-allocated alone would pick az-1 every time */
	for (size_t i = 0; i < c.n; i++)
		if (strcmp(c.list[i]->zone, "az-2") == 0)
			c.list[i]->other.cpu_m = 3000;
	int per_zone[2] = { 0, 0 };
	for (int i = 0; i < 6; i++) {
		json_t *o = rs_pod(i);
		struct sched_cpod *cp = sched_cache_pod_set(&c, o, NULL);
		struct sched_pod p;
		parse(o, &p);
		assert_int_equal(p.nspreads, 2);
		struct sched_result r;
		sched_decide(&c, &p, &r);
		assert_non_null(r.node);
		per_zone[strcmp(r.node->zone, "az-1") == 0 ? 0 : 1]++;
		sched_cache_assume(&c, cp, r.node->name);
		sched_result_release(&r);
		sched_pod_release(&p);
		json_decref(o);
	}
	assert_int_equal(per_zone[0], 3);
	assert_int_equal(per_zone[1], 3);
	sched_cache_release(&c);
}

static void test_hard_spread(void **state)
{
	(void)state;
	struct sched_cache c;
	sched_cache_init(&c, "tp-1");
	add_nodes(&c, 2, "8"); /* n0 az-1, n1 az-2 */
	json_t *bound = pod_json("x", "100m", "1Mi");
	json_object_set_new(json_object_get(bound, "metadata"), "labels", json_pack("{s:s}", "app", "db"));
	json_object_set_new(json_object_get(bound, "spec"), "nodeName", json_string("n0"));
	sched_cache_pod_set(&c, bound, NULL);
	json_t *po = pod_json("y", "100m", "1Mi");
	json_object_set_new(json_object_get(po, "metadata"), "labels", json_pack("{s:s}", "app", "db"));
	json_object_set_new(json_object_get(po, "spec"), "topologySpreadConstraints",
			    json_pack("[{s:i, s:s, s:s, s:{s:{s:s}}}]", "maxSkew", 1, "topologyKey",
				      "topology.kubernetes.io/zone", "whenUnsatisfiable", "DoNotSchedule",
				      "labelSelector", "matchLabels", "app", "db"));
	struct sched_pod p;
	parse(po, &p);
	struct spread_state *s = sched_spread_compute(&c, &p);
	assert_int_equal(sched_filter_node(sched_cache_node(&c, "n0"), &p, s, NULL, NULL), FAIL_SPREAD);
	assert_int_equal(sched_filter_node(sched_cache_node(&c, "n1"), &p, s, NULL, NULL), FAIL_NONE);
	sched_spread_release(s, p.nspreads);
	sched_pod_release(&p);
	json_decref(po);
	json_decref(bound);
	sched_cache_release(&c);
}

static void test_usage_accounting(void **state)
{
	(void)state;
	struct sched_cache c;
	sched_cache_init(&c, "tp-1");
	json_t *po = pod_json("p", "500m", "1Mi");
	json_object_set_new(json_object_get(po, "spec"), "nodeName", json_string("late"));
	sched_cache_pod_set(&c, po, NULL); /* bound before its node is known */
	add_nodes(&c, 1, "1");
	json_t *late = node_json("late", "az-1", "1", "1Gi", 10, true, NULL);
	sched_cache_node_set(&c, late, "rm-1");
	assert_int_equal(sched_cache_node(&c, "late")->used.cpu_m, 500);
	bool freed = false;
	json_object_set_new(po, "status", json_pack("{s:s}", "phase", "Failed"));
	sched_cache_pod_set(&c, po, &freed);
	assert_true(freed);
	assert_int_equal(sched_cache_node(&c, "late")->used.cpu_m, 0);
	/* assume then forget */
	json_t *q = pod_json("q", "300m", "1Mi");
	struct sched_cpod *cp = sched_cache_pod_set(&c, q, NULL);
	sched_cache_assume(&c, cp, "late");
	assert_int_equal(sched_cache_node(&c, "late")->used.cpu_m, 300);
	sched_cache_forget(&c, cp);
	assert_int_equal(sched_cache_node(&c, "late")->used.cpu_m, 0);
	sched_cache_node_del(&c, "late");
	assert_null(sched_cache_node(&c, "late"));
	assert_int_equal(c.n, 1);
	json_decref(q);
	json_decref(late);
	json_decref(po);
	sched_cache_release(&c);
}

static void test_reservations(void **state)
{
	(void)state;
	struct sched_res other, own, r = { 1500, 2048LL * 1000, 3 };
	json_t *obj;
	char *s = sched_reserved_format(NULL, "tp-1", &r);
	assert_string_equal(s, "{\"tp-1\":{\"cpu\":1500,\"memory\":2048,\"pods\":3}}");
	sched_reserved_parse(s, "tp-2", &other, &own, &obj);
	assert_int_equal(other.cpu_m, 1500);
	assert_int_equal(other.mem_m, 2048000);
	assert_int_equal(own.pods, 0);
	struct sched_res mine = { 100, 0, 1 };
	char *s2 = sched_reserved_format(obj, "tp-2", &mine);
	json_decref(obj);
	sched_reserved_parse(s2, "tp-2", &other, &own, NULL);
	assert_int_equal(other.cpu_m, 1500);
	assert_int_equal(own.cpu_m, 100);
	struct sched_res zero = { 0, 0, 0 };
	sched_reserved_parse(s2, "tp-1", &other, &own, &obj);
	char *s3 = sched_reserved_format(obj, "tp-1", &zero);
	assert_string_equal(s3, "{\"tp-2\":{\"cpu\":100,\"memory\":0,\"pods\":1}}");
	json_decref(obj);
	sched_reserved_parse("not json", "tp-1", &other, &own, NULL);
	assert_int_equal(other.cpu_m, 0);
	free(s);
	free(s2);
	free(s3);

	/* a node whose annotation carries another partition's reservation has less room */
	json_t *no = node_json("n", "az-1", "2", "1Gi", 10, true, NULL);
	json_object_set_new(json_object_get(no, "metadata"), "annotations",
			    json_pack("{s:s}", SCHED_ANN_RESERVED, "{\"tp-2\":{\"cpu\":1800,\"memory\":0,\"pods\":1}}"));
	struct sched_node n = { .name = xstrdup("n") };
	sched_node_set(&n, no, "rm-1", "tp-1");
	struct sched_res req = { 300, 0, 1 };
	enum sched_fail why;
	assert_false(sched_fits(&n, &req, &why));
	assert_int_equal(why, FAIL_CPU);
	req.cpu_m = 200;
	assert_true(sched_fits(&n, &req, NULL));
	sched_node_clear(&n);
	free(n.name);
	json_decref(no);
}

static void test_message(void **state)
{
	(void)state;
	struct sched_cache c;
	sched_cache_init(&c, "tp-1");
	add_nodes(&c, 3, "1");
	json_t *t = node_json("h", "az-1", "64", "64Gi", 110, true, "ursa.io/hollow");
	sched_cache_node_set(&c, t, "rm-1");
	json_t *po = pod_json("big", "2", "1Mi");
	struct sched_pod p;
	parse(po, &p);
	struct sched_result r;
	sched_decide(&c, &p, &r);
	assert_null(r.node);
	struct buf m = BUF_INIT;
	sched_result_message(&r, c.n, &m);
	assert_string_equal(buf_cstr(&m),
			    "0/4 nodes are available: 1 node(s) had untolerated taint {ursa.io/hollow}, 3 Insufficient cpu.");
	buf_release(&m);
	sched_result_release(&r);
	sched_pod_release(&p);
	json_decref(po);
	json_decref(t);
	sched_cache_release(&c);
}

/* The scheduler's queue keys are "tenant/ns/name": a burst of one tenant must not delay
 * another tenant's single pod by more than a couple of pops. */
static void test_tenant_fairness(void **state)
{
	(void)state;
	struct workqueue *q = wq_new();
	for (int i = 0; i < 10000; i++) {
		char *k = xasprintf("burst/default/p-%d", i);
		wq_add(q, k);
		free(k);
	}
	wq_add(q, "quiet/default/one");
	int pos = -1;
	for (int i = 0; i < 10 && pos < 0; i++) {
		char *k = wq_get(q);
		if (strcmp(k, "quiet/default/one") == 0)
			pos = i;
		wq_done(q, k);
		free(k);
	}
	assert_in_range(pos, 0, 2);
	wq_shutdown(q);
	wq_free(q);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pod_requests),
		cmocka_unit_test(test_filters),
		cmocka_unit_test(test_taint_memo),
		cmocka_unit_test(test_least_allocated_and_preferred),
		cmocka_unit_test(test_sampling),
		cmocka_unit_test(test_replicaset_spreads_across_zones),
		cmocka_unit_test(test_hard_spread),
		cmocka_unit_test(test_usage_accounting),
		cmocka_unit_test(test_reservations),
		cmocka_unit_test(test_message),
		cmocka_unit_test(test_tenant_fairness),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
