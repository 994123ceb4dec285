/* What Deployments, ReplicaSets and DaemonSets share: a selector over a pod template. */
#include <stdlib.h>
#include <string.h>
#include "kinds/kinds_common.h"
#include "ursa/jsonutil.h"
#include "ursa/selector.h"
#include "ursa/xalloc.h"

void workload_template_defaults(json_t *obj)
{
	json_t *tmpl = json_path(obj, "spec.template");
	if (json_is_object(tmpl))
		pod_spec_defaults(json_object_get(tmpl, "spec"), PODSPEC_TEMPLATE);
}

static bool selector_empty(const json_t *sel)
{
	return json_object_size(json_object_get(sel, "matchLabels")) == 0 &&
	       json_array_size(json_object_get(sel, "matchExpressions")) == 0;
}

/* The selector must select the template's own pods, or the controller would create pods forever. */
static void check_selector_matches(const json_t *sel, const json_t *tmpl, struct field_errors *errs)
{
	struct label_selector *ls = NULL;
	const json_t *labels = json_path(tmpl, "metadata.labels");
	if (label_selector_from_json(sel, &ls, NULL) != 0)
		return; /* validate_label_selector reported why */
	if (!label_selector_matches(ls, json_is_object(labels) ? labels : NULL))
		field_error_invalid_json(errs, "spec.template.metadata.labels", labels,
					 "`selector` does not match template `labels`");
	label_selector_free(ls);
}

static void validate_template(const json_t *tmpl, struct field_errors *errs)
{
	static const char *const always[] = { "Always", NULL };
	if (!json_is_object(tmpl)) {
		field_error_required(errs, "spec.template");
		return;
	}
	const json_t *meta = json_object_get(tmpl, "metadata");
	if (meta && !json_is_null(meta) && !json_is_object(meta))
		field_error_type(errs, "spec.template.metadata", "an object");
	validate_labels(json_object_get(meta, "labels"), "spec.template.metadata.labels", errs);
	const json_t *spec = json_object_get(tmpl, "spec");
	pod_spec_validate(spec, "spec.template.spec", PODSPEC_TEMPLATE, errs);
	const char *rp = json_str(spec, "restartPolicy");
	if (rp && strcmp(rp, "Always"))
		field_error_not_supported(errs, "spec.template.spec.restartPolicy", rp, always);
}

void workload_validate(const json_t *obj, const json_t *old, const char *what, struct field_errors *errs)
{
	const json_t *spec = json_object_get(obj, "spec");
	if (!json_is_object(spec)) {
		field_error_required(errs, "spec");
		return;
	}
	validate_nonnegative(json_object_get(spec, "replicas"), "spec.replicas", errs);
	validate_nonnegative(json_object_get(spec, "minReadySeconds"), "spec.minReadySeconds", errs);
	validate_nonnegative(json_object_get(spec, "revisionHistoryLimit"), "spec.revisionHistoryLimit", errs);

	const json_t *sel = json_object_get(spec, "selector");
	const json_t *tmpl = json_object_get(spec, "template");
	size_t before = errs->causes ? json_array_size(errs->causes) : 0;
	if (!sel || json_is_null(sel)) {
		field_error_required(errs, "spec.selector");
	} else {
		validate_label_selector(sel, "spec.selector", errs);
		if (json_is_object(sel) && selector_empty(sel))
			field_error_invalid_json(errs, "spec.selector", sel, "empty selector is invalid for %s", what);
	}
	bool sel_ok = sel && (errs->causes ? json_array_size(errs->causes) : 0) == before;
	validate_template(tmpl, errs);
	if (sel_ok && json_is_object(tmpl))
		check_selector_matches(sel, tmpl, errs);
	if (old)
		validate_immutable(sel, json_path(old, "spec.selector"), "spec.selector", errs);
}

bool validate_int_or_percent(const json_t *v, const char *field, bool cap100, struct field_errors *errs)
{
	if (!v || json_is_null(v))
		return false;
	if (json_is_integer(v)) {
		validate_nonnegative(v, field, errs);
		return json_integer_value(v) == 0;
	}
	const char *s = json_string_value(v);
	if (!s) {
		field_error_type(errs, field, "an integer or a percentage string");
		return false;
	}
	size_t n = strlen(s), digits = strspn(s, "0123456789");
	long long pct;
	char *num = xstrndup(s, digits);
	int bad = digits == 0 || digits + 1 != n || s[digits] != '%' || parse_int64(num, &pct) != 0;
	free(num);
	if (bad) {
		field_error_invalid(errs, field, s,
				    "a valid percent string must be a numeric string followed by an ending '%%' "
				    "(e.g. '1%%',  or '93%%', regex used for validation is '[0-9]+%%')");
		return false;
	}
	if (cap100 && pct > 100)
		field_error_invalid(errs, field, s, "must not be greater than 100%%");
	return pct == 0;
}
