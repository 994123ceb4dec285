/* policy/v1 PodDisruptionBudget: the strategy (defaults, validation, cells) and the budget
 * arithmetic of ursa/pdb.h (status computation, eviction verdicts). */
#include "kinds_test.h"
#include "ursa/errors.h"
#include "ursa/pdb.h"

#define NOW "2024-05-01T12:00:00Z"

static json_t *pdb(const char *spec_status)
{
	json_t *o = J(spec_status);
	json_object_set_new(o, "metadata", J("{'name':'db','namespace':'default','generation':1,"
					      "'creationTimestamp':'2024-05-01T11:59:30Z'}"));
	return o;
}

/* A pod: phase, Ready condition status, labels app=db, optionally terminating. */
static json_t *pod(const char *name, const char *phase, const char *ready, bool terminating)
{
	json_t *p = J("{'metadata':{'labels':{'app':'db'}},'status':{}}");
	json_object_set_new(json_object_get(p, "metadata"), "name", json_string(name));
	if (terminating)
		json_object_set_new(json_object_get(p, "metadata"), "deletionTimestamp", json_string(NOW));
	json_object_set_new(json_object_get(p, "status"), "phase", json_string(phase));
	json_object_set_new(json_object_get(p, "status"), "conditions",
			    json_pack("[{s:s,s:s}]", "type", "Ready", "status", ready));
	return p;
}

static void test_validate(void **state)
{
	(void)state;
	json_t *ok = pdb("{'spec':{'minAvailable':2,'selector':{'matchLabels':{'app':'db'}}}}");
	struct field_errors e = run_validate(&strategy_pdb, ok, NULL);
	expect_no_errors(&e);
	assert_int_equal(int_at(ok, "status.disruptionsAllowed", -1), 0);

	json_t *none = pdb("{'spec':{'selector':{}}}");
	e = run_validate(&strategy_pdb, none, NULL);
	expect_no_errors(&e);
	assert_int_equal(int_at(none, "spec.minAvailable", 0), 1);

	json_t *both = pdb("{'spec':{'minAvailable':1,'maxUnavailable':'10%','selector':{}}}");
	e = run_validate(&strategy_pdb, both, NULL);
	const char *msg = expect_cause(&e, "spec.minAvailable", "FieldValueInvalid");
	assert_non_null(strstr(msg, "minAvailable and maxUnavailable cannot be both set"));
	field_errors_release(&e);

	json_t *bad = pdb("{'spec':{'maxUnavailable':'150%','selector':{'matchLabels':{'a b':'x'}},"
			  "'unhealthyPodEvictionPolicy':'Sometimes'}}");
	e = run_validate(&strategy_pdb, bad, NULL);
	expect_cause(&e, "spec.maxUnavailable", "FieldValueInvalid");
	expect_cause(&e, "spec.unhealthyPodEvictionPolicy", "FieldValueNotSupported");
	assert_non_null(e.causes);
	field_errors_release(&e);

	json_t *neg = pdb("{'spec':{'minAvailable':-1,'selector':{}}}");
	e = run_validate(&strategy_pdb, neg, NULL);
	expect_cause(&e, "spec.minAvailable", "FieldValueInvalid");
	field_errors_release(&e);
	json_decref(ok), json_decref(none), json_decref(both), json_decref(bad), json_decref(neg);
}

static void test_cells(void **state)
{
	(void)state;
	json_t *o = pdb("{'spec':{'minAvailable':'50%'},'status':{'disruptionsAllowed':3}}");
	json_t *cells = json_array();
	strategy_pdb.cells(o, T(NOW), cells);
	assert_int_equal(json_array_size(cells), strategy_pdb.ncolumns);
	assert_string_equal(json_string_value(json_array_get(cells, 0)), "db");
	assert_string_equal(json_string_value(json_array_get(cells, 1)), "50%");
	assert_string_equal(json_string_value(json_array_get(cells, 2)), "N/A");
	assert_int_equal(json_integer_value(json_array_get(cells, 3)), 3);
	assert_string_equal(json_string_value(json_array_get(cells, 4)), "30s");
	json_decref(cells), json_decref(o);
	o = pdb("{'spec':{'maxUnavailable':1}}");
	cells = json_array();
	strategy_pdb.cells(o, T(NOW), cells);
	assert_string_equal(json_string_value(json_array_get(cells, 1)), "N/A");
	assert_string_equal(json_string_value(json_array_get(cells, 2)), "1");
	json_decref(cells), json_decref(o);
}

static void test_scaled_and_desired(void **state)
{
	(void)state;
	long long v = -1;
	json_t *x = J("['50%','2',3,'x','5%%','-1',-2,'%']");
	assert_int_equal(pdb_scaled(json_array_get(x, 0), 3, &v), 0);
	assert_int_equal(v, 2); /* rounded up */
	assert_int_equal(pdb_scaled(json_array_get(x, 1), 3, &v), 0);
	assert_int_equal(v, 2);
	assert_int_equal(pdb_scaled(json_array_get(x, 2), 3, &v), 0);
	assert_int_equal(v, 3);
	for (size_t i = 3; i < json_array_size(x); i++)
		assert_int_equal(pdb_scaled(json_array_get(x, i), 3, &v), E_INVALID);
	json_decref(x);

	json_t *s = J("{'maxUnavailable':'34%'}");
	assert_true(pdb_needs_scale(s));
	assert_int_equal(pdb_desired_healthy(s, 3, &v), 0);
	assert_int_equal(v, 1); /* 3 - ceil(1.02) */
	json_decref(s);
	s = J("{'maxUnavailable':5}");
	assert_int_equal(pdb_desired_healthy(s, 3, &v), 0);
	assert_int_equal(v, 0);
	json_decref(s);
	s = J("{'minAvailable':2}");
	assert_false(pdb_needs_scale(s));
	assert_int_equal(pdb_desired_healthy(s, 7, &v), 0);
	assert_int_equal(v, 2);
	json_decref(s);
	s = J("{'minAvailable':'100%'}");
	assert_true(pdb_needs_scale(s));
	assert_int_equal(pdb_desired_healthy(s, 4, &v), 0);
	assert_int_equal(v, 4);
	json_decref(s);
	s = J("{}");
	assert_int_equal(pdb_desired_healthy(s, 4, &v), E_INVALID);
	json_decref(s);
}

static void test_selects_and_healthy(void **state)
{
	(void)state;
	json_t *p = pod("a", "Running", "True", false);
	json_t *b = pdb("{'spec':{'selector':{'matchExpressions':[{'key':'app','operator':'In','values':['db']}]}}}");
	json_t *other = pdb("{'spec':{'selector':{'matchLabels':{'app':'web'}}}}");
	json_t *empty = pdb("{'spec':{'selector':{}}}"), *nosel = pdb("{'spec':{}}");
	assert_true(pdb_selects(b, p));
	assert_false(pdb_selects(other, p));
	assert_true(pdb_selects(empty, p));
	assert_false(pdb_selects(nosel, p));
	assert_true(pdb_pod_healthy(p));
	json_t *q = pod("b", "Running", "False", false), *r = pod("c", "Running", "True", true),
	       *s = pod("d", "Pending", "True", false);
	assert_false(pdb_pod_healthy(q));
	assert_false(pdb_pod_healthy(r));
	assert_false(pdb_pod_healthy(s));
	json_decref(p), json_decref(q), json_decref(r), json_decref(s);
	json_decref(b), json_decref(other), json_decref(empty), json_decref(nosel);
}

static void test_status(void **state)
{
	(void)state;
	json_t *b = pdb("{'spec':{'minAvailable':2,'selector':{}},'status':{'disruptedPods':{"
			"'a':'2024-05-01T11:59:00Z','gone':'2024-05-01T11:59:00Z','old':'2024-05-01T11:50:00Z'}}}");
	json_t *pods = json_array();
	json_array_append_new(pods, pod("a", "Running", "True", false));
	json_array_append_new(pods, pod("b", "Running", "True", false));
	json_array_append_new(pods, pod("c", "Running", "True", false));
	json_array_append_new(pods, pod("old", "Running", "True", false));
	json_array_append_new(pods, pod("e", "Running", "False", false));
	time_t recheck = 0;
	json_t *st = pdb_status_compute(b, pods, 5, T(NOW), &recheck);
	assert_non_null(st);
	/* a is still counted as disrupted; gone is gone; old expired */
	assert_int_equal(json_object_size(json_object_get(st, "disruptedPods")), 1);
	assert_non_null(json_path(st, "disruptedPods.a"));
	assert_int_equal(recheck, T("2024-05-01T12:01:00Z"));
	assert_int_equal(int_at(st, "currentHealthy", -1), 3); /* b, c, old */
	assert_int_equal(int_at(st, "desiredHealthy", -1), 2);
	assert_int_equal(int_at(st, "expectedPods", -1), 5);
	assert_int_equal(int_at(st, "disruptionsAllowed", -1), 1);
	assert_int_equal(int_at(st, "observedGeneration", -1), 1);
	const json_t *c = json_array_get(json_object_get(st, "conditions"), 0);
	assert_string_equal(json_str(c, "type"), "DisruptionAllowed");
	assert_string_equal(json_str(c, "status"), "True");
	assert_string_equal(json_str(c, "reason"), "SufficientPods");
	assert_string_equal(json_str(c, "lastTransitionTime"), NOW);

	/* the same status later keeps its transition time (so the controller writes nothing) */
	json_object_set(b, "status", st);
	json_t *again = pdb_status_compute(b, pods, 5, T("2024-05-01T12:00:30Z"), NULL);
	assert_true(json_equal(again, st));
	json_decref(again);

	/* 2 healthy of minAvailable 2: none allowed */
	json_array_remove(pods, 2);
	json_array_remove(pods, 2);
	json_t *st2 = pdb_status_compute(b, pods, 3, T(NOW), NULL);
	assert_int_equal(int_at(st2, "currentHealthy", -1), 1);
	assert_int_equal(int_at(st2, "disruptionsAllowed", -1), 0);
	c = json_array_get(json_object_get(st2, "conditions"), 0);
	assert_string_equal(json_str(c, "status"), "False");
	assert_string_equal(json_str(c, "reason"), "InsufficientPods");
	json_decref(st), json_decref(st2), json_decref(pods), json_decref(b);
}

static void test_eviction(void **state)
{
	(void)state;
	json_t *ready = pod("a", "Running", "True", false), *unready = pod("b", "Running", "False", false);
	json_t *pending = pod("c", "Pending", "False", false), *term = pod("d", "Running", "True", true);
	json_t *ok = pdb("{'spec':{'minAvailable':2},'status':{'observedGeneration':1,'disruptionsAllowed':1,"
			 "'currentHealthy':3,'desiredHealthy':2}}");
	json_t *zero = pdb("{'spec':{'minAvailable':2},'status':{'observedGeneration':1,'disruptionsAllowed':0,"
			   "'currentHealthy':2,'desiredHealthy':2}}");
	json_t *stale = pdb("{'spec':{'minAvailable':2},'status':{'observedGeneration':0,'disruptionsAllowed':4}}");
	json_t *neg = pdb("{'spec':{'minAvailable':2},'status':{'observedGeneration':1,'disruptionsAllowed':-1}}");
	json_t *unmet = pdb("{'spec':{'minAvailable':3},'status':{'observedGeneration':1,'disruptionsAllowed':0,"
			    "'currentHealthy':2,'desiredHealthy':3}}");
	json_t *always = pdb("{'spec':{'minAvailable':3,'unhealthyPodEvictionPolicy':'AlwaysAllow'},"
			     "'status':{'observedGeneration':1,'disruptionsAllowed':0,'currentHealthy':2,"
			     "'desiredHealthy':3}}");
	assert_int_equal(pdb_eviction_verdict(ok, ready), PDB_EVICT_CONSUME);
	assert_int_equal(pdb_eviction_verdict(zero, ready), PDB_EVICT_DENY);
	assert_int_equal(pdb_eviction_verdict(stale, ready), PDB_EVICT_STALE);
	assert_int_equal(pdb_eviction_verdict(neg, ready), PDB_EVICT_FORBIDDEN);
	assert_int_equal(pdb_eviction_verdict(zero, pending), PDB_EVICT_IGNORE);
	assert_int_equal(pdb_eviction_verdict(zero, term), PDB_EVICT_IGNORE);
	assert_int_equal(pdb_eviction_verdict(zero, unready), PDB_EVICT_IGNORE); /* budget met */
	assert_int_equal(pdb_eviction_verdict(unmet, unready), PDB_EVICT_DENY);  /* budget not met */
	assert_int_equal(pdb_eviction_verdict(always, unready), PDB_EVICT_IGNORE);
	assert_int_equal(pdb_eviction_verdict(always, ready), PDB_EVICT_DENY);

	json_t *st = pdb_status_after_eviction(ok, "a", T(NOW));
	assert_int_equal(int_at(st, "disruptionsAllowed", -1), 0);
	assert_string_equal(json_path_str(st, "disruptedPods.a"), NOW);
	assert_string_equal(json_path_str(json_array_get(json_object_get(st, "conditions"), 0), "reason"),
			    "InsufficientPods");
	json_t *ok2 = pdb("{'spec':{'minAvailable':1},'status':{'observedGeneration':1,'disruptionsAllowed':2,"
			  "'disruptedPods':{'x':'2024-05-01T11:59:59Z'}}}");
	json_t *st2 = pdb_status_after_eviction(ok2, "a", T(NOW));
	assert_int_equal(int_at(st2, "disruptionsAllowed", -1), 1);
	assert_int_equal(json_object_size(json_object_get(st2, "disruptedPods")), 2);
	assert_null(json_object_get(st2, "conditions"));
	json_decref(st), json_decref(st2), json_decref(ok2);
	json_decref(ready), json_decref(unready), json_decref(pending), json_decref(term);
	json_decref(ok), json_decref(zero), json_decref(stale), json_decref(neg), json_decref(unmet), json_decref(always);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_validate),	  cmocka_unit_test(test_cells),
		cmocka_unit_test(test_scaled_and_desired), cmocka_unit_test(test_selects_and_healthy),
		cmocka_unit_test(test_status),		  cmocka_unit_test(test_eviction),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
