/* batch/v1 Jobs: defaults, the generated selector and labels, validation, printer columns. */
#include <stdlib.h>
#include <string.h>
#include "kinds/kinds_common.h"
#include "ursa/jsonutil.h"
#include "ursa/selector.h"
#include "ursa/timeutil.h"
#include "ursa/xalloc.h"

#define CONTROLLER_UID "batch.kubernetes.io/controller-uid"
#define JOB_NAME "batch.kubernetes.io/job-name"

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
	default_str(spec, "podReplacementPolicy", "TerminatingOrFailed");
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

/* Without manualSelector the server chooses the selector (the job's uid) and labels the template. */
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
	if (!json_object_get(spec, "selector") || json_is_null(json_object_get(spec, "selector")))
		json_object_set_new(spec, "selector", json_pack("{s:{s:s}}", "matchLabels", CONTROLLER_UID, uid));
	json_t *meta = default_obj(tmpl, "metadata");
	if (!json_is_object(meta))
		return;
	json_t *labels = default_obj(meta, "labels");
	if (!json_is_object(labels))
		return;
	json_object_set_new(labels, CONTROLLER_UID, json_string(uid));
	json_object_set_new(labels, JOB_NAME, json_string(name));
	json_object_set_new(labels, "controller-uid", json_string(uid));
	json_object_set_new(labels, "job-name", json_string(name));
}

/* Validates a Job spec at prefix ("spec" or "spec.jobTemplate.spec"); old_spec on update. When
 * need_selector, spec.selector is required and must select the template's labels. */
void job_spec_validate(const json_t *spec, const json_t *old_spec, const char *prefix, bool need_selector,
		       struct field_errors *errs)
{
	static const char *const restart[] = { "OnFailure", "Never", NULL };
	static const char *const modes[] = { "NonIndexed", "Indexed", NULL };
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
	const char *rp = json_str(ps, "restartPolicy");
	if (!rp || (strcmp(rp, "Never") && strcmp(rp, "OnFailure")))
		field_error_not_supported(errs, F("template.spec.restartPolicy"), rp ? rp : "", restart);
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
	}
#undef F
}

static void job_validate(const json_t *obj, const json_t *old, struct field_errors *errs)
{
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
