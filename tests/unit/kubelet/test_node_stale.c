/* When the API server's copy of a node is stale (the kubelet must post its status again: the
 * node lifecycle controller marked it Ready=Unknown, or a condition the kubelet reports is
 * missing), which kubelet ids can be the hollow nodes' label value, and which node a heartbeat
 * worker takes next (renewals before registrations, registrations never starved), and when a
 * restarted kubelet's node needs no metadata patch. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>
#include "kubelet.h"
#include "ursa/jsonutil.h"

static json_t *node_with(const char *ready)
{
	json_t *conds = json_array();
	const char *types[] = { "MemoryPressure", "DiskPressure", "PIDPressure" };
	for (int i = 0; i < 3; i++)
		json_array_append_new(conds, json_pack("{s:s, s:s}", "type", types[i], "status", "False"));
	if (ready)
		json_array_append_new(conds, json_pack("{s:s, s:s, s:s}", "type", "Ready", "status", ready, "reason",
						       "KubeletReady"));
	return json_pack("{s:{s:s}, s:{s:o}}", "metadata", "name", "n-1", "status", "conditions", conds);
}

static void test_ready_true_is_current(void **state)
{
	json_t *n = node_with("True");
	assert_false(kl_node_status_stale(n));
	json_decref(n);
}

static void test_ready_unknown_or_false_is_stale(void **state)
{
	json_t *n = node_with("Unknown");
	assert_true(kl_node_status_stale(n));
	json_decref(n);
	n = node_with("False");
	assert_true(kl_node_status_stale(n));
	json_decref(n);
}

static void test_missing_conditions_are_stale(void **state)
{
	json_t *n = node_with(NULL); /* no Ready */
	assert_true(kl_node_status_stale(n));
	json_decref(n);
	n = json_pack("{s:{s:s}}", "metadata", "name", "n-1"); /* no status at all */
	assert_true(kl_node_status_stale(n));
	json_decref(n);
	n = node_with("True");
	json_array_remove(json_object_get(json_object_get(n, "status"), "conditions"), 1); /* DiskPressure */
	assert_true(kl_node_status_stale(n));
	json_decref(n);
	n = node_with("True");
	json_object_del(json_array_get(json_object_get(json_object_get(n, "status"), "conditions"), 3), "status");
	assert_true(kl_node_status_stale(n)); /* Ready without a status */
	json_decref(n);
}

static void test_pressure_true_is_not_stale(void **state)
{
	/* a pressure condition is the kubelet's own report, not someone else's mark */
	json_t *n = node_with("True");
	json_object_set_new(json_array_get(json_object_get(json_object_get(n, "status"), "conditions"), 0), "status",
			    json_string("True"));
	assert_false(kl_node_status_stale(n));
	json_decref(n);
}

static void test_label_values(void **state)
{
	assert_true(kl_label_value_ok("0bd05dfbb3254989051086fcc9628cd1"));
	assert_true(kl_label_value_ok("a"));
	assert_true(kl_label_value_ok("a.b-c_d"));
	assert_false(kl_label_value_ok(NULL));
	assert_false(kl_label_value_ok(""));
	assert_false(kl_label_value_ok("-abc"));
	assert_false(kl_label_value_ok("abc."));
	assert_false(kl_label_value_ok("a b"));
	assert_false(kl_label_value_ok("a/b"));
	char long_id[65];
	memset(long_id, 'a', 64);
	long_id[64] = '\0';
	assert_false(kl_label_value_ok(long_id));
	long_id[63] = '\0';
	assert_true(kl_label_value_ok(long_id));
}

/* Six hollow nodes; worker 0 of 2 owns nodes 0, 2, 4. */
static void hb_nodes(struct kubelet *k)
{
	memset(k, 0, sizeof(*k));
	k->hollow = true;
	k->opt.hollow_nodes = 6;
	k->opt.hollow_prefix = "hb";
	kl_nodes_init(k);
}

static void test_pick_renewal_before_registration(void **state)
{
	struct kubelet k;
	int64_t wake;
	hb_nodes(&k);
	k.nodes[0].registered = true;
	k.nodes[0].next_due_ms = 1000;
	k.nodes[2].next_due_ms = 500; /* a registration due earlier */
	k.nodes[4].next_due_ms = 600;
	k.nodes[1].next_due_ms = 0;   /* another worker's: never picked */
	assert_int_equal(kl_hb_pick(&k, 0, 2, 1000, 900, 10000, &wake), 0);
	/* the renewal done (next due a period on): the registrations in due order */
	k.nodes[0].next_due_ms = 11000;
	assert_int_equal(kl_hb_pick(&k, 0, 2, 1000, 900, 10000, &wake), 2);
	k.nodes[2].registered = true;
	k.nodes[2].next_due_ms = 10500;
	assert_int_equal(kl_hb_pick(&k, 0, 2, 1000, 1000, 10000, &wake), 4);
	/* nothing due: the earliest due time to wake at */
	k.nodes[4].registered = true;
	k.nodes[4].next_due_ms = 10600;
	assert_int_equal(kl_hb_pick(&k, 0, 2, 1000, 1000, 10000, &wake), -1);
	assert_int_equal(wake, 10500);
	kl_nodes_release(&k);
}

static void test_pick_registration_not_starved(void **state)
{
	struct kubelet k;
	hb_nodes(&k);
	k.nodes[0].registered = true;
	k.nodes[0].next_due_ms = 5000;
	k.nodes[2].next_due_ms = 100;
	k.nodes[4].next_due_ms = 200;
	/* a renewal due, the last registration 3 s ago: the renewal */
	assert_int_equal(kl_hb_pick(&k, 0, 2, 5000, 2000, 10000, NULL), 0);
	/* a whole period without a registration: one goes ahead of the renewal */
	assert_int_equal(kl_hb_pick(&k, 0, 2, 12000, 2000, 10000, NULL), 2);
	kl_nodes_release(&k);
}

static void test_meta_current(void **state)
{
	struct kubelet k;
	hb_nodes(&k);
	k.kubelet_id = "0bd05dfbb3254989051086fcc9628cd1";
	k.opt.zone = "z-1";
	json_t *node = kl_node_object(&k, 2);
	assert_true(kl_node_meta_current(&k, 2, node));
	/* what others add (labels, annotations, the lifecycle controller's taints) does not matter */
	json_object_set_new(json_path(node, "metadata.labels"), "team", json_string("a"));
	json_array_append_new(json_object_get(json_object_get(node, "spec"), "taints"),
			      json_pack("{s:s, s:s}", "key", "node.kubernetes.io/unreachable", "effect", "NoExecute"));
	assert_true(kl_node_meta_current(&k, 2, node));
	/* another node's object, another kubelet's id, a label changed, the taint gone: a patch */
	assert_false(kl_node_meta_current(&k, 4, node));
	k.kubelet_id = "ffd05dfbb3254989051086fcc9628cd1";
	assert_false(kl_node_meta_current(&k, 2, node));
	k.kubelet_id = "0bd05dfbb3254989051086fcc9628cd1";
	k.opt.zone = "z-2";
	assert_false(kl_node_meta_current(&k, 2, node));
	k.opt.zone = "z-1";
	json_array_remove(json_object_get(json_object_get(node, "spec"), "taints"), 0);
	assert_false(kl_node_meta_current(&k, 2, node));
	json_object_del(node, "spec");
	assert_false(kl_node_meta_current(&k, 2, node));
	json_decref(node);
	kl_nodes_release(&k);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ready_true_is_current),
		cmocka_unit_test(test_ready_unknown_or_false_is_stale),
		cmocka_unit_test(test_missing_conditions_are_stale),
		cmocka_unit_test(test_pressure_true_is_not_stale),
		cmocka_unit_test(test_label_values),
		cmocka_unit_test(test_pick_renewal_before_registration),
		cmocka_unit_test(test_pick_registration_not_starved),
		cmocka_unit_test(test_meta_current),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
