/* batch/v1 Jobs: defaults, the generated selector and labels, validation, printer columns. */
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "kinds/kinds_common.h"
#include "ursa/jsonutil.h"
#include "ursa/selector.h"
#include "ursa/timeutil.h"
#include "ursa/xalloc.h"

#define CONTROLLER_UID "batch.kubernetes.io/controller-uid"
#define JOB_NAME "batch.kubernetes.io/job-name"
#define LEGACY_CONTROLLER_UID "controller-uid"
#define LEGACY_JOB_NAME "job-name"

/* The defaults of a Job spec (shared with a CronJob's jobTemplate.spec). */
void job_spec_defaults(json_t *spec)
{
	if (!json_is_object(spec))
		return;
	json_t *c = json_object_get(spec, "completions"), *p = json_object_get(spec, "parallelism");
	if ((!c || json_is_null(c)) && (!p || json_is_null(p))) {
		json_object_set_new(spec, "completions", json_integer(1));
		json_object_set_new(spec, "parallelism", json_integer(1));
	}
	default_int(spec, "parallelism", 1);
	default_int(spec, "backoffLimit", 6);
	default_str(spec, "completionMode", "NonIndexed");
	default_bool(spec, "suspend", false);
	const json_t *pfp = json_object_get(spec, "podFailurePolicy");
	bool has_pfp = pfp && !json_is_null(pfp);
	default_str(spec, "podReplacementPolicy", has_pfp ? "Failed" : "TerminatingOrFailed");
	/* onPodConditions[].status defaults to "True" */
	size_t i, j;
	json_t *rule, *pat;
	json_array_foreach(json_object_get(pfp, "rules"), i, rule) {
		json_array_foreach(json_object_get(rule, "onPodConditions"), j, pat) {
			if (json_is_object(pat))
				default_str(pat, "status", "True");
		}
	}
	json_t *tmpl = json_object_get(spec, "template");
	if (json_is_object(tmpl))
		pod_spec_defaults(json_object_get(tmpl, "spec"), PODSPEC_TEMPLATE);
}

static void job_defaults(json_t *obj)
{
	job_spec_defaults(json_object_get(obj, "spec"));
}

static bool manual_selector(const json_t *spec)
{
	return json_is_true(json_object_get(spec, "manualSelector"));
}

/* Without manualSelector the server generates the selector (Kubernetes 1.27+): the template gets
 * job-name / batch.kubernetes.io/job-name = name and controller-uid /
 * batch.kubernetes.io/controller-uid = uid where the user did not set them (a conflicting value
 * is then rejected by validation), and the selector's matchLabels gets
 * batch.kubernetes.io/controller-uid = uid unless present. */
static void job_prepare_create(json_t *obj)
{
	json_object_set_new(obj, "status", json_object());
	json_t *spec = json_object_get(obj, "spec");
	const char *uid = json_path_str(obj, "metadata.uid"), *name = json_path_str(obj, "metadata.name");
	if (!json_is_object(spec) || manual_selector(spec) || !uid || !name)
		return;
	json_t *tmpl = json_object_get(spec, "template");
	if (!json_is_object(tmpl))
		return;
	json_t *meta = default_obj(tmpl, "metadata");
	json_t *labels = json_is_object(meta) ? default_obj(meta, "labels") : NULL;
	if (json_is_object(labels)) {
		static const char *const name_keys[] = { LEGACY_JOB_NAME, JOB_NAME };
		static const char *const uid_keys[] = { LEGACY_CONTROLLER_UID, CONTROLLER_UID };
		for (size_t i = 0; i < 2; i++) {
			if (!json_object_get(labels, name_keys[i]))
				json_object_set_new(labels, name_keys[i], json_string(name));
			if (!json_object_get(labels, uid_keys[i]))
				json_object_set_new(labels, uid_keys[i], json_string(uid));
		}
	}
	json_t *sel = json_object_get(spec, "selector");
	if (!sel || json_is_null(sel)) {
		sel = json_object();
		json_object_set_new(spec, "selector", sel);
	}
	if (!json_is_object(sel))
		return;
	json_t *ml = json_object_get(sel, "matchLabels");
	if (!ml || json_is_null(ml)) {
		ml = json_object();
		json_object_set_new(sel, "matchLabels", ml);
	}
	if (json_is_object(ml) && !json_object_get(ml, CONTROLLER_UID))
		json_object_set_new(ml, CONTROLLER_UID, json_string(uid));
}

/* Go's %#v of a string (label keys and values: plain ASCII; quotes and backslashes escaped). */
static void go_quote(struct buf *b, const char *s)
{
	buf_addch(b, '"');
	for (; s && *s; s++) {
		if (*s == '"' || *s == '\\')
			buf_addch(b, '\\');
		buf_addch(b, *s);
	}
	buf_addch(b, '"');
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Go's %#v of a map[string]string (keys sorted), as Kubernetes prints a bad value. */
static void go_string_map(struct buf *b, const json_t *map)
{
	if (!json_is_object(map)) {
		buf_adds(b, "map[string]string(nil)");
		return;
	}
	size_t n = json_object_size(map), k = 0;
	const char **keys = xcalloc(n ? n : 1, sizeof(*keys));
	const char *key;
	json_t *v;
	json_object_foreach((json_t *)map, key, v) keys[k++] = key;
	qsort(keys, k, sizeof(*keys), cmp_str);
	buf_adds(b, "map[string]string{");
	for (size_t i = 0; i < k; i++) {
		if (i)
			buf_adds(b, ", ");
		go_quote(b, keys[i]);
		buf_addch(b, ':');
		const char *s = json_str(map, keys[i]);
		go_quote(b, s ? s : "");
	}
	buf_addch(b, '}');
	free(keys);
}

/* Go's %#v of a metav1.LabelSelector. */
static void go_label_selector(struct buf *b, const json_t *sel)
{
	buf_adds(b, "v1.LabelSelector{MatchLabels:");
	go_string_map(b, json_object_get(sel, "matchLabels"));
	buf_adds(b, ", MatchExpressions:");
	const json_t *exprs = json_object_get(sel, "matchExpressions");
	if (!json_is_array(exprs)) {
		buf_adds(b, "[]v1.LabelSelectorRequirement(nil)}");
		return;
	}
	buf_adds(b, "[]v1.LabelSelectorRequirement{");
	size_t i, j;
	json_t *e, *v;
	json_array_foreach(exprs, i, e) {
		buf_adds(b, i ? ", v1.LabelSelectorRequirement{Key:" : "v1.LabelSelectorRequirement{Key:");
		go_quote(b, json_str(e, "key"));
		buf_adds(b, ", Operator:");
		go_quote(b, json_str(e, "operator"));
		buf_adds(b, ", Values:");
		const json_t *vals = json_object_get(e, "values");
		if (!json_is_array(vals)) {
			buf_adds(b, "[]string(nil)}");
			continue;
		}
		buf_adds(b, "[]string{");
		json_array_foreach(vals, j, v) {
			if (j)
				buf_adds(b, ", ");
			go_quote(b, json_string_value(v));
		}
		buf_adds(b, "}}");
	}
	buf_adds(b, "}}");
}

/* The template must carry label key = want (Kubernetes' ValidateHasLabel). */
static void validate_has_label(const json_t *labels, const char *key, const char *want, struct field_errors *errs)
{
	char f[200];
	snprintf(f, sizeof(f), "spec.template.metadata.labels[%s]", key);
	const char *have = json_str(labels, key);
	if (!json_object_get(labels, key)) {
		field_error_required_why(errs, f, "%s", want);
	} else if (!have || strcmp(have, want)) {
		struct buf b = BUF_INIT;
		go_string_map(&b, labels);
		field_error_add(errs, "FieldValueInvalid", f, "Invalid value: %s: must be '%s'", buf_cstr(&b), want);
		buf_release(&b);
	}
}

/* Kubernetes' validateGeneratedSelector: without manualSelector the template must carry the generated
 * labels and the selector must select them. prefixed: also the batch.kubernetes.io/ labels. */
static void validate_generated_selector(const json_t *obj, bool prefixed, struct field_errors *errs)
{
	const json_t *spec = json_object_get(obj, "spec");
	const json_t *sel = json_object_get(spec, "selector");
	if (!json_is_object(spec) || manual_selector(spec) || !sel || json_is_null(sel))
		return;
	const char *uid = json_path_str(obj, "metadata.uid"), *name = json_path_str(obj, "metadata.name");
	if (!uid || !*uid)
		field_error_required(errs, "metadata.uid");
	uid = uid ? uid : "";
	name = name ? name : "";
	const json_t *labels = json_path(spec, "template.metadata.labels");
	validate_has_label(labels, LEGACY_CONTROLLER_UID, uid, errs);
	validate_has_label(labels, LEGACY_JOB_NAME, name, errs);
	json_t *expected = json_pack("{s:s,s:s}", LEGACY_CONTROLLER_UID, uid, LEGACY_JOB_NAME, name);
	if (prefixed) {
		validate_has_label(labels, CONTROLLER_UID, uid, errs);
		validate_has_label(labels, JOB_NAME, name, errs);
		json_object_set_new(expected, CONTROLLER_UID, json_string(uid));
		json_object_set_new(expected, JOB_NAME, json_string(name));
	}
	struct label_selector *ls = NULL;
	if (label_selector_from_json(sel, &ls, NULL) == 0 && !label_selector_matches(ls, expected)) {
		struct buf b = BUF_INIT;
		go_label_selector(&b, sel);
		field_error_add(errs, "FieldValueInvalid", "spec.selector", "Invalid value: %s: `selector` not auto-generated",
				buf_cstr(&b));
		buf_release(&b);
	}
	label_selector_free(ls);
	json_decref(expected);
}

#define PFP_MAX_RULES 20
#define PFP_MAX_VALUES 255
#define PFP_MAX_PATTERNS 20


static void too_many(struct field_errors *errs, const char *f, size_t n, int max)
{
	field_error_add(errs, "FieldValueTooMany", f, "Too many: %zu: must have at most %d items", n, max);
}

/* Go's %#v of the exit code values ([]int32). */
static void go_int32s(struct buf *b, const json_t *vals)
{
	if (!json_is_array(vals) || json_array_size(vals) == 0) {
		buf_adds(b, json_is_array(vals) ? "[]int32{}" : "[]int32(nil)");
		return;
	}
	buf_adds(b, "[]int32{");
	size_t i;
	json_t *v;
	json_array_foreach(vals, i, v) buf_addf(b, i ? ", %lld" : "%lld", (long long)json_integer_value(v));
	buf_addch(b, '}');
}

static bool has_container(const json_t *ps, const char *name)
{
	static const char *const lists[] = { "containers", "initContainers" };
	for (size_t k = 0; k < 2; k++) {
		size_t i;
		json_t *c;
		json_array_foreach(json_object_get(ps, lists[k]), i, c) {
			const char *n = json_str(c, "name");
			if (n && !strcmp(n, name))
				return true;
		}
	}
	return false;
}

static void validate_on_exit_codes(const json_t *oec, const json_t *ps, const char *path, struct field_errors *errs)
{
	static const char *const ops[] = { "In", "NotIn", NULL };
	struct buf f = BUF_INIT;
	const char *op = json_str(oec, "operator");
	buf_setf(&f, "%s.operator", path);
	if (!op || !*op)
		field_error_required_why(errs, buf_cstr(&f), "valid values: [\"In\" \"NotIn\"]");
	else if (strcmp(op, "In") && strcmp(op, "NotIn"))
		field_error_not_supported(errs, buf_cstr(&f), op, ops);
	const json_t *cn = json_object_get(oec, "containerName");
	if (json_is_string(cn) && !has_container(ps, json_string_value(cn))) {
		buf_setf(&f, "%s.containerName", path);
		field_error_invalid(errs, buf_cstr(&f), json_string_value(cn),
				    "must be one of the container or initContainer names in the pod template");
	}
	const json_t *vals = json_object_get(oec, "values");
	size_t n = json_is_array(vals) ? json_array_size(vals) : 0;
	struct buf vf = BUF_INIT;
	buf_setf(&vf, "%s.values", path);
	struct buf b = BUF_INIT;
	if (n == 0) {
		go_int32s(&b, vals);
		field_error_add(errs, "FieldValueInvalid", buf_cstr(&vf), "Invalid value: %s: at least one value is required",
				buf_cstr(&b));
	} else if (n > PFP_MAX_VALUES) {
		too_many(errs, buf_cstr(&vf), n, PFP_MAX_VALUES);
	}
	bool ordered = true;
	for (size_t i = 0; i < n; i++) {
		const json_t *v = json_array_get(vals, i);
		buf_setf(&f, "%s[%zu]", buf_cstr(&vf), i);
		if (!json_is_integer(v) || json_integer_value(v) < INT32_MIN || json_integer_value(v) > INT32_MAX) {
			field_error_type(errs, buf_cstr(&f), "an integer");
			continue;
		}
		long long x = json_integer_value(v);
		if (op && !strcmp(op, "In") && x == 0)
			field_error_invalid_int(errs, buf_cstr(&f), x, "must not be 0 for the In operator");
		for (size_t k = 0; k < i; k++) {
			if (json_integer_value(json_array_get(vals, k)) == x) {
				field_error_add(errs, "FieldValueDuplicate", buf_cstr(&f), "Duplicate value: %lld", x);
				break;
			}
		}
		if (i > 0 && json_integer_value(json_array_get(vals, i - 1)) > x)
			ordered = false;
	}
	if (!ordered) {
		go_int32s(&b, vals);
		field_error_add(errs, "FieldValueInvalid", buf_cstr(&vf), "Invalid value: %s: must be ordered", buf_cstr(&b));
	}
	buf_release(&b);
	buf_release(&vf);
	buf_release(&f);
}

static void validate_on_pod_conditions(const json_t *pats, const char *path, struct field_errors *errs)
{
	static const char *const statuses[] = { "False", "True", "Unknown", NULL };
	struct buf f = BUF_INIT;
	if (json_array_size(pats) > PFP_MAX_PATTERNS)
		too_many(errs, path, json_array_size(pats), PFP_MAX_PATTERNS);
	size_t i;
	json_t *p;
	json_array_foreach(pats, i, p) {
		const char *type = json_str(p, "type"), *why;
		buf_setf(&f, "%s[%zu].type", path, i);
		if (!type || !*type)
			field_error_required_why(errs, buf_cstr(&f), "name part must be non-empty");
		else if ((why = label_key_why(type)))
			field_error_invalid(errs, buf_cstr(&f), type, "%s", why);
		const char *st = json_str(p, "status");
		buf_setf(&f, "%s[%zu].status", path, i);
		if (!st || !*st)
			field_error_required_why(errs, buf_cstr(&f), "valid values: [\"False\" \"True\" \"Unknown\"]");
		else if (strcmp(st, "True") && strcmp(st, "False") && strcmp(st, "Unknown"))
			field_error_not_supported(errs, buf_cstr(&f), st, statuses);
	}
	buf_release(&f);
}

/* spec.podFailurePolicy as Kubernetes validates it (1.32). FailIndex needs backoffLimitPerIndex,
 * which this server does not implement: such rules are refused. */
static void validate_pod_failure_policy(const json_t *spec, const char *prefix, struct field_errors *errs)
{
	static const char *const actions[] = { "Count", "FailIndex", "FailJob", "Ignore", NULL };
	const json_t *pfp = json_object_get(spec, "podFailurePolicy");
	const json_t *rules = json_object_get(pfp, "rules");
	const json_t *ps = json_path(spec, "template.spec");
	struct buf rp = BUF_INIT, f = BUF_INIT, path = BUF_INIT;
	buf_setf(&rp, "%s.podFailurePolicy.rules", prefix);
	if (json_array_size(rules) > PFP_MAX_RULES)
		too_many(errs, buf_cstr(&rp), json_array_size(rules), PFP_MAX_RULES);
	size_t i;
	json_t *rule;
	json_array_foreach(rules, i, rule) {
		buf_setf(&path, "%s[%zu]", buf_cstr(&rp), i);
		const char *action = json_str(rule, "action");
		buf_setf(&f, "%s.action", buf_cstr(&path));
		if (!action || !*action) {
			field_error_required_why(errs, buf_cstr(&f),
						 "valid values: [\"Count\" \"FailIndex\" \"FailJob\" \"Ignore\"]");
		} else if (!strcmp(action, "FailIndex")) {
			const json_t *bl = json_object_get(spec, "backoffLimitPerIndex");
			if (!bl || json_is_null(bl))
				field_error_invalid(errs, buf_cstr(&f), action, "requires the backoffLimitPerIndex to be set");
			else
				field_error_invalid(errs, buf_cstr(&f), action,
						    "not supported by this server: backoffLimitPerIndex is not implemented");
		} else if (strcmp(action, "Count") && strcmp(action, "FailJob") && strcmp(action, "Ignore")) {
			field_error_not_supported(errs, buf_cstr(&f), action, actions);
		}
		const json_t *oec = json_object_get(rule, "onExitCodes");
		const json_t *opc = json_object_get(rule, "onPodConditions");
		bool has_oec = oec && !json_is_null(oec), has_opc = json_array_size(opc) > 0;
		if (has_oec) {
			buf_setf(&f, "%s.onExitCodes", buf_cstr(&path));
			validate_on_exit_codes(oec, ps, buf_cstr(&f), errs);
		}
		if (has_opc) {
			buf_setf(&f, "%s.onPodConditions", buf_cstr(&path));
			validate_on_pod_conditions(opc, buf_cstr(&f), errs);
		}
		if (has_oec && has_opc)
			field_error_add(errs, "FieldValueInvalid", buf_cstr(&path),
					"Invalid value: specifying both OnExitCodes and OnPodConditions is not supported");
		if (!has_oec && !has_opc)
			field_error_add(errs, "FieldValueInvalid", buf_cstr(&path),
					"Invalid value: specifying one of OnExitCodes and OnPodConditions is required");
	}
	buf_release(&rp);
	buf_release(&f);
	buf_release(&path);
}

/* Validates a Job spec at prefix ("spec" or "spec.jobTemplate.spec"); old_spec on update. When
 * need_selector, spec.selector is required and must select the template's labels. */
void job_spec_validate(const json_t *spec, const json_t *old_spec, const char *prefix, bool need_selector,
		       struct field_errors *errs)
{
	static const char *const restart[] = { "OnFailure", "Never", NULL };
	static const char *const modes[] = { "NonIndexed", "Indexed", NULL };
	static const char *const replacement[] = { "Failed", "TerminatingOrFailed", NULL };
	static const char *const replacement_pfp[] = { "Failed", NULL };
	char f[200];
	if (!json_is_object(spec)) {
		field_error_required(errs, prefix);
		return;
	}
#define F(s) (snprintf(f, sizeof(f), "%s.%s", prefix, s), f)
	validate_nonnegative(json_object_get(spec, "parallelism"), F("parallelism"), errs);
	validate_nonnegative(json_object_get(spec, "completions"), F("completions"), errs);
	validate_nonnegative(json_object_get(spec, "backoffLimit"), F("backoffLimit"), errs);
	validate_nonnegative(json_object_get(spec, "ttlSecondsAfterFinished"), F("ttlSecondsAfterFinished"), errs);
	validate_positive(json_object_get(spec, "activeDeadlineSeconds"), F("activeDeadlineSeconds"), errs);
	const char *mode = json_str(spec, "completionMode");
	if (mode && strcmp(mode, "NonIndexed") && strcmp(mode, "Indexed"))
		field_error_not_supported(errs, F("completionMode"), mode, modes);
	const json_t *comp = json_object_get(spec, "completions");
	if (mode && !strcmp(mode, "Indexed") && !json_is_integer(comp))
		field_error_required(errs, F("completions"));
	const json_t *tmpl = json_object_get(spec, "template");
	if (!json_is_object(tmpl)) {
		field_error_required(errs, F("template"));
		return;
	}
	const json_t *meta = json_object_get(tmpl, "metadata");
	validate_labels(json_object_get(meta, "labels"), F("template.metadata.labels"), errs);
	const json_t *ps = json_object_get(tmpl, "spec");
	pod_spec_validate(ps, F("template.spec"), PODSPEC_TEMPLATE, errs);
	/* per-index back-off is not implemented: refused rather than silently ignored */
	static const char *const per_index[] = { "backoffLimitPerIndex", "maxFailedIndexes" };
	for (size_t i = 0; i < 2; i++) {
		const json_t *v = json_object_get(spec, per_index[i]);
		if (json_is_integer(v))
			field_error_invalid_int(errs, F(per_index[i]), json_integer_value(v),
						"not supported by this server (per-index back-off is not implemented)");
		else if (v && !json_is_null(v))
			field_error_type(errs, F(per_index[i]), "an integer");
	}
	const json_t *pfp = json_object_get(spec, "podFailurePolicy");
	bool has_pfp = pfp && !json_is_null(pfp);
	if (has_pfp)
		validate_pod_failure_policy(spec, prefix, errs);
	const char *prp = json_str(spec, "podReplacementPolicy");
	if (prp && has_pfp && strcmp(prp, "Failed"))
		field_error_not_supported(errs, F("podReplacementPolicy"), prp, replacement_pfp);
	else if (prp && strcmp(prp, "Failed") && strcmp(prp, "TerminatingOrFailed"))
		field_error_not_supported(errs, F("podReplacementPolicy"), prp, replacement);
	const char *rp = json_str(ps, "restartPolicy");
	if (!rp || !*rp || !strcmp(rp, "Always"))
		field_error_required_why(errs, F("template.spec.restartPolicy"), "valid values: \"OnFailure\", \"Never\"");
	else if (strcmp(rp, "Never") && strcmp(rp, "OnFailure"))
		field_error_not_supported(errs, F("template.spec.restartPolicy"), rp, restart);
	else if (has_pfp && strcmp(rp, "Never"))
		field_error_invalid(errs, F("template.spec.restartPolicy"), rp,
				    "only \"Never\" is supported when podFailurePolicy is specified");
	const json_t *sel = json_object_get(spec, "selector");
	if (need_selector) {
		if (!sel || json_is_null(sel)) {
			field_error_required(errs, F("selector"));
		} else {
			size_t before = errs->causes ? json_array_size(errs->causes) : 0;
			validate_label_selector(sel, F("selector"), errs);
			struct label_selector *ls = NULL;
			const json_t *labels = json_object_get(meta, "labels");
			if ((errs->causes ? json_array_size(errs->causes) : 0) == before &&
			    label_selector_from_json(sel, &ls, NULL) == 0) {
				if (label_selector_empty(ls))
					field_error_invalid_json(errs, F("selector"), sel,
								 "empty selector is invalid for job");
				else if (!label_selector_matches(ls, json_is_object(labels) ? labels : NULL))
					field_error_invalid_json(errs, F("template.metadata.labels"), labels,
								 "`selector` does not match template `labels`");
			}
			label_selector_free(ls);
		}
	}
	if (old_spec) {
		validate_immutable(sel, json_object_get(old_spec, "selector"), F("selector"), errs);
		validate_immutable(json_object_get(spec, "completionMode"), json_object_get(old_spec, "completionMode"),
				   F("completionMode"), errs);
		validate_immutable(json_object_get(spec, "podFailurePolicy"), json_object_get(old_spec, "podFailurePolicy"),
				   F("podFailurePolicy"), errs);
	}
#undef F
}

static void job_validate(const json_t *obj, const json_t *old, struct field_errors *errs)
{
	/* new jobs must carry the batch.kubernetes.io/ labels; older ones only when they already did */
	bool prefixed = !old || json_object_get(json_path(old, "spec.template.metadata.labels"), CONTROLLER_UID);
	validate_generated_selector(obj, prefixed, errs);
	job_spec_validate(json_object_get(obj, "spec"), old ? json_object_get(old, "spec") : NULL, "spec", true, errs);
}

/* The condition of type with status "True", or NULL. */
static const json_t *true_condition(const json_t *obj, const char *type)
{
	size_t i;
	json_t *c;
	json_array_foreach(json_path(obj, "status.conditions"), i, c) {
		const char *t = json_str(c, "type"), *s = json_str(c, "status");
		if (t && s && !strcmp(t, type) && !strcmp(s, "True"))
			return c;
	}
	return NULL;
}

static const char *job_status_text(const json_t *obj)
{
	if (true_condition(obj, "Complete"))
		return "Complete";
	if (true_condition(obj, "Failed"))
		return "Failed";
	if (json_path(obj, "metadata.deletionTimestamp"))
		return "Terminating";
	if (true_condition(obj, "FailureTarget"))
		return "FailureTarget";
	if (true_condition(obj, "SuccessCriteriaMet"))
		return "SuccessCriteriaMet";
	if (true_condition(obj, "Suspended"))
		return "Suspended";
	return "Running";
}

static void job_cells(const json_t *obj, time_t now, json_t *cells)
{
	struct buf b = BUF_INIT;
	cell_name(obj, cells);
	cell_str(cells, job_status_text(obj));
	long long succeeded = int_at(obj, "status.succeeded", 0);
	const json_t *comp = json_path(obj, "spec.completions");
	long long par = int_at(obj, "spec.parallelism", 1);
	if (json_is_integer(comp))
		buf_addf(&b, "%lld/%lld", succeeded, (long long)json_integer_value(comp));
	else if (par > 1)
		buf_addf(&b, "%lld/1 of %lld", succeeded, par);
	else
		buf_addf(&b, "%lld/1", succeeded);
	cell_str(cells, buf_cstr(&b));
	buf_reset(&b);
	time_t start, end = now;
	const char *st = json_path_str(obj, "status.startTime"), *ct = json_path_str(obj, "status.completionTime");
	if (st && rfc3339_parse(st, &start) == 0) {
		if (ct)
			rfc3339_parse(ct, &end);
		age_add(&b, start, end);
	}
	cell_str(cells, buf_cstr(&b));
	cell_age(obj, now, cells);
	cell_containers_images(cells, json_path(obj, "spec.template.spec"));
	cell_selector(cells, json_path(obj, "spec.selector"), "<none>", "<error>");
	buf_release(&b);
}

static const struct api_column job_columns[] = {
	COLUMN_NAME,
	{ "Status", "string", "", "Status of the job.", 0 },
	{ "Completions", "string", "", "The number of successfully finished pods of the job.", 0 },
	{ "Duration", "string", "", "Time required to complete the job.", 0 },
	COLUMN_AGE,
	COLUMN_CONTAINERS,
	COLUMN_IMAGES,
	{ "Selector", "string", "", "A label query over pods that should match the pod count.", 1 },
};

const struct api_strategy strategy_job = {
	.defaults = job_defaults,
	.prepare_create = job_prepare_create,
	.validate = job_validate,
	.columns = job_columns,
	.ncolumns = ARRAY_SIZE(job_columns),
	.cells = job_cells,
};
