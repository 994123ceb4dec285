/* batch/v1 Job strategy: the generated selector and labels, the generated-selector check, and
 * podFailurePolicy defaults and validation (messages as Kubernetes 1.32 words them). */
#include "kinds_test.h"

static json_t *job(const char *spec_extra)
{
	char s[2048];
	snprintf(s, sizeof(s),
		 "{'apiVersion':'batch/v1','kind':'Job','metadata':{'name':'j','uid':'u-1'},'spec':{"
		 "'template':{'spec':{'restartPolicy':'Never','containers':[{'name':'c','image':'busybox'}]}}%s}}",
		 spec_extra);
	return J(s);
}

static void test_generated_selector(void **state)
{
	(void)state;
	json_t *j = job("");
	struct field_errors e = run_validate(&strategy_job, j, NULL);
	expect_no_errors(&e);
	json_t *want = J("{'matchLabels':{'batch.kubernetes.io/controller-uid':'u-1'}}");
	assert_true(json_equal(json_path(j, "spec.selector"), want));
	json_decref(want);
	want = J("{'controller-uid':'u-1','batch.kubernetes.io/controller-uid':'u-1','job-name':'j',"
		 "'batch.kubernetes.io/job-name':'j'}");
	assert_true(json_equal(json_path(j, "spec.template.metadata.labels"), want));
	json_decref(want);
	assert_string_equal(json_path_str(j, "spec.podReplacementPolicy"), "TerminatingOrFailed");
	/* an update of the same job passes; one dropping a generated label does not */
	json_t *now = json_deep_copy(j);
	e = run_validate(&strategy_job, now, j);
	expect_no_errors(&e);
	json_object_del(json_path(now, "spec.template.metadata.labels"), "job-name");
	e = run_validate(&strategy_job, now, j);
	assert_string_equal(expect_cause(&e, "spec.template.metadata.labels[job-name]", "FieldValueRequired"),
			    "Required value: j");
	field_errors_release(&e);
	json_decref(now);
	json_decref(j);
}

static void test_selector_not_generated(void **state)
{
	(void)state;
	json_t *j = job(",'selector':{'matchLabels':{'app':'x'}}");
	json_object_set_new(json_path(j, "spec.template"), "metadata", J("{'labels':{'app':'x'}}"));
	struct field_errors e = run_validate(&strategy_job, j, NULL);
	assert_string_equal(expect_cause(&e, "spec.selector", "FieldValueInvalid"),
			    "Invalid value: v1.LabelSelector{MatchLabels:map[string]string{\"app\":\"x\", "
			    "\"batch.kubernetes.io/controller-uid\":\"u-1\"}, MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: "
			    "`selector` not auto-generated");
	assert_int_equal(json_array_size(e.causes), 1);
	field_errors_release(&e);
	json_decref(j);
	/* the same with manualSelector is the user's business */
	j = job(",'manualSelector':true,'selector':{'matchExpressions':[{'key':'app','operator':'In','values':['x']}]}");
	json_object_set_new(json_path(j, "spec.template"), "metadata", J("{'labels':{'app':'x'}}"));
	e = run_validate(&strategy_job, j, NULL);
	expect_no_errors(&e);
	assert_null(json_object_get(json_path(j, "spec.template.metadata.labels"), "job-name"));
	json_decref(j);
	/* a conflicting user label is kept, then refused */
	j = job("");
	json_object_set_new(json_path(j, "spec.template"), "metadata", J("{'labels':{'controller-uid':'zzz'}}"));
	e = run_validate(&strategy_job, j, NULL);
	const char *m = expect_cause(&e, "spec.template.metadata.labels[controller-uid]", "FieldValueInvalid");
	assert_non_null(strstr(m, "\"controller-uid\":\"zzz\""));
	assert_non_null(strstr(m, ": must be 'u-1'"));
	field_errors_release(&e);
	json_decref(j);
}

static void test_pod_failure_policy(void **state)
{
	(void)state;
	json_t *j = job(",'podFailurePolicy':{'rules':[{'action':'FailJob','onExitCodes':{'operator':'In','values':[42]}},"
			"{'action':'Ignore','onPodConditions':[{'type':'DisruptionTarget'}]}]}");
	struct field_errors e = run_validate(&strategy_job, j, NULL);
	expect_no_errors(&e);
	assert_string_equal(json_path_str(j, "spec.podReplacementPolicy"), "Failed");
	const json_t *pat = json_array_get(json_object_get(json_array_get(json_path(j, "spec.podFailurePolicy.rules"), 1),
							   "onPodConditions"),
					   0);
	assert_string_equal(json_string_value(json_object_get(pat, "status")), "True");
	json_object_set_new(json_path(j, "spec.template.spec"), "restartPolicy", json_string("OnFailure"));
	e = run_validate(&strategy_job, j, NULL);
	assert_string_equal(expect_cause(&e, "spec.template.spec.restartPolicy", "FieldValueInvalid"),
			    "Invalid value: \"OnFailure\": only \"Never\" is supported when podFailurePolicy is specified");
	field_errors_release(&e);
	json_decref(j);

	j = job(",'podFailurePolicy':{'rules':[{'action':'Count','onExitCodes':{'containerName':'nope','operator':'In',"
		"'values':[3,0,3]}},{'action':''},{'action':'FailIndex','onPodConditions':[{'type':'A','status':'True'}]},"
		"{'action':'Ignore','onExitCodes':{'operator':'NotIn','values':[1]},'onPodConditions':[{'type':'A','status':'x'}]}]}");
	e = run_validate(&strategy_job, j, NULL);
	assert_string_equal(expect_cause(&e, "spec.podFailurePolicy.rules[0].onExitCodes.containerName", "FieldValueInvalid"),
			    "Invalid value: \"nope\": must be one of the container or initContainer names in the pod template");
	assert_string_equal(expect_cause(&e, "spec.podFailurePolicy.rules[0].onExitCodes.values[1]", "FieldValueInvalid"),
			    "Invalid value: 0: must not be 0 for the In operator");
	assert_string_equal(expect_cause(&e, "spec.podFailurePolicy.rules[0].onExitCodes.values[2]", "FieldValueDuplicate"),
			    "Duplicate value: 3");
	assert_string_equal(expect_cause(&e, "spec.podFailurePolicy.rules[0].onExitCodes.values", "FieldValueInvalid"),
			    "Invalid value: []int32{3, 0, 3}: must be ordered");
	assert_string_equal(expect_cause(&e, "spec.podFailurePolicy.rules[1].action", "FieldValueRequired"),
			    "Required value: valid values: [\"Count\" \"FailIndex\" \"FailJob\" \"Ignore\"]");
	assert_string_equal(expect_cause(&e, "spec.podFailurePolicy.rules[1]", "FieldValueInvalid"),
			    "Invalid value: specifying one of OnExitCodes and OnPodConditions is required");
	assert_string_equal(expect_cause(&e, "spec.podFailurePolicy.rules[2].action", "FieldValueInvalid"),
			    "Invalid value: \"FailIndex\": requires the backoffLimitPerIndex to be set");
	assert_string_equal(expect_cause(&e, "spec.podFailurePolicy.rules[3].onPodConditions[0].status",
					 "FieldValueNotSupported"),
			    "Unsupported value: \"x\": supported values: \"False\", \"True\", \"Unknown\"");
	assert_string_equal(expect_cause(&e, "spec.podFailurePolicy.rules[3]", "FieldValueInvalid"),
			    "Invalid value: specifying both OnExitCodes and OnPodConditions is not supported");
	field_errors_release(&e);
	json_decref(j);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_generated_selector),
		cmocka_unit_test(test_selector_not_generated),
		cmocka_unit_test(test_pod_failure_policy),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
