/* batch/v1 CronJobs: defaults, validation (schedule, time zone, policies), printer columns. */
#include <string.h>
#include "kinds/kinds_common.h"
#include "ursa/cron.h"
#include "ursa/jsonutil.h"
#include "ursa/xalloc.h"

static void cronjob_defaults(json_t *obj)
{
	json_t *spec = json_object_get(obj, "spec");
	if (!json_is_object(spec))
		return;
	default_str(spec, "concurrencyPolicy", "Allow");
	default_bool(spec, "suspend", false);
	default_int(spec, "successfulJobsHistoryLimit", 3);
	default_int(spec, "failedJobsHistoryLimit", 1);
	json_t *jt = json_object_get(spec, "jobTemplate");
	if (json_is_object(jt))
		job_spec_defaults(json_object_get(jt, "spec"));
}

static void cronjob_prepare_create(json_t *obj)
{
	json_object_set_new(obj, "status", json_object());
}

static void cronjob_validate(const json_t *obj, const json_t *old, struct field_errors *errs)
{
	static const char *const policies[] = { "Allow", "Forbid", "Replace", NULL };
	const json_t *spec = json_object_get(obj, "spec");
	const char *name = json_path_str(obj, "metadata.name");
	if (name && strlen(name) > 52)
		field_error_invalid(errs, "metadata.name", name, "must be no more than 52 characters");
	if (!json_is_object(spec)) {
		field_error_required(errs, "spec");
		return;
	}
	const char *sched = json_str(spec, "schedule");
	if (!sched || !*sched) {
		field_error_required(errs, "spec.schedule");
	} else {
		struct cron_schedule cs;
		struct buf e = BUF_INIT;
		if (cron_parse(sched, &cs, &e) < 0)
			field_error_invalid(errs, "spec.schedule", sched, "%s", buf_cstr(&e));
		buf_release(&e);
	}
	const json_t *tz = json_object_get(spec, "timeZone");
	if (tz && !json_is_null(tz)) {
		const char *s = json_string_value(tz);
		if (!s)
			field_error_type(errs, "spec.timeZone", "a string");
		else if (!*s || !cron_valid_tz(s))
			field_error_invalid(errs, "spec.timeZone", s, "unknown time zone %s", s);
	}
	const char *cp = json_str(spec, "concurrencyPolicy");
	if (!cp || !*cp)
		field_error_required(errs, "spec.concurrencyPolicy");
	else if (strcmp(cp, "Allow") && strcmp(cp, "Forbid") && strcmp(cp, "Replace"))
		field_error_not_supported(errs, "spec.concurrencyPolicy", cp, policies);
	validate_nonnegative(json_object_get(spec, "startingDeadlineSeconds"), "spec.startingDeadlineSeconds", errs);
	validate_nonnegative(json_object_get(spec, "successfulJobsHistoryLimit"), "spec.successfulJobsHistoryLimit",
			     errs);
	validate_nonnegative(json_object_get(spec, "failedJobsHistoryLimit"), "spec.failedJobsHistoryLimit", errs);
	const json_t *jt = json_object_get(spec, "jobTemplate");
	if (!json_is_object(jt)) {
		field_error_required(errs, "spec.jobTemplate");
		return;
	}
	validate_labels(json_path(jt, "metadata.labels"), "spec.jobTemplate.metadata.labels", errs);
	const json_t *js = json_object_get(jt, "spec");
	job_spec_validate(js, NULL, "spec.jobTemplate.spec", json_is_true(json_object_get(js, "manualSelector")), errs);
	(void)old;
}

static void cronjob_cells(const json_t *obj, time_t now, json_t *cells)
{
	struct buf b = BUF_INIT;
	cell_name(obj, cells);
	cell_str(cells, json_path_str(obj, "spec.schedule"));
	cell_str_or(cells, json_path_str(obj, "spec.timeZone"), "<none>");
	const json_t *susp = json_path(obj, "spec.suspend");
	cell_str(cells, json_is_boolean(susp) ? (json_is_true(susp) ? "True" : "False") : "<unset>");
	cell_int(cells, (long long)json_array_size(json_path(obj, "status.active")));
	const char *last = json_path_str(obj, "status.lastScheduleTime");
	if (last)
		since_add(&b, last, now);
	else
		buf_adds(&b, "<none>");
	cell_str(cells, buf_cstr(&b));
	cell_age(obj, now, cells);
	cell_containers_images(cells, json_path(obj, "spec.jobTemplate.spec.template.spec"));
	cell_selector(cells, json_path(obj, "spec.jobTemplate.spec.selector"), "<none>", "<error>");
	buf_release(&b);
}

static const struct api_column cronjob_columns[] = {
	COLUMN_NAME,
	{ "Schedule", "string", "", "The schedule in Cron format, see https://en.wikipedia.org/wiki/Cron.", 0 },
	{ "Timezone", "string", "", "The time zone name for the given schedule.", 0 },
	{ "Suspend", "boolean", "", "This flag tells the controller to suspend subsequent executions.", 0 },
	{ "Active", "integer", "", "A list of pointers to currently running jobs.", 0 },
	{ "Last Schedule", "string", "", "Information when was the last time the job was successfully scheduled.", 0 },
	COLUMN_AGE,
	COLUMN_CONTAINERS,
	COLUMN_IMAGES,
	{ "Selector", "string", "", "A label query over pods that should match the pod count.", 1 },
};

const struct api_strategy strategy_cronjob = {
	.defaults = cronjob_defaults,
	.prepare_create = cronjob_prepare_create,
	.validate = cronjob_validate,
	.columns = cronjob_columns,
	.ncolumns = ARRAY_SIZE(cronjob_columns),
	.cells = cronjob_cells,
};
