/* autoscaling/v2 HorizontalPodAutoscaler: defaults, validation of the scale target and replica
 * bounds, and kubectl's printer columns. Stored only: no controller acts on it (see
 * docs/controllers.md), so status stays as created or as a client writes it. */
#include <stdio.h>
#include <string.h>
#include "kinds/kinds_common.h"
#include "ursa/jsonutil.h"
#include "ursa/xalloc.h"

/* Kubernetes defaults minReplicas to 1 and an empty metrics list to 80% average CPU. */
static void hpa_defaults(json_t *obj)
{
	json_t *spec = json_object_get(obj, "spec");
	if (json_is_object(spec)) {
		default_int(spec, "minReplicas", 1);
		json_t *m = json_object_get(spec, "metrics");
		if (!m || json_is_null(m) || (json_is_array(m) && json_array_size(m) == 0))
			json_object_set_new(spec, "metrics",
					    json_pack("[{s:s,s:{s:s,s:{s:s,s:i}}}]", "type", "Resource", "resource",
						      "name", "cpu", "target", "type", "Utilization",
						      "averageUtilization", 80));
	}
	json_t *status = json_object_get(obj, "status");
	if (json_is_object(status))
		default_int(status, "desiredReplicas", 0); /* not omitempty upstream */
}

static void hpa_prepare_create(json_t *obj)
{
	json_object_set_new(obj, "status", json_pack("{s:i,s:i}", "currentReplicas", 0, "desiredReplicas", 0));
}

static bool str_in(const char *s, const char *const *list)
{
	for (; *list; list++)
		if (!strcmp(s, *list))
			return true;
	return false;
}

static void hpa_validate(const json_t *obj, const json_t *old, struct field_errors *errs)
{
	(void)old;
	static const char *const types[] = { "ContainerResource", "External", "Object", "Pods", "Resource", NULL };
	const json_t *spec = json_object_get(obj, "spec");
	if (!json_is_object(spec)) {
		field_error_required(errs, "spec");
		return;
	}
	const json_t *ref = json_object_get(spec, "scaleTargetRef");
	if (!json_is_object(ref)) {
		field_error_required(errs, "spec.scaleTargetRef");
	} else {
		const char *kind = json_str(ref, "kind"), *name = json_str(ref, "name");
		if (!kind || !*kind)
			field_error_required(errs, "spec.scaleTargetRef.kind");
		if (!name || !*name)
			field_error_required(errs, "spec.scaleTargetRef.name");
		else if (strchr(name, '/') || !strcmp(name, ".") || !strcmp(name, ".."))
			field_error_invalid(errs, "spec.scaleTargetRef.name", name, "may not contain '/' or be '.' or '..'");
	}
	const json_t *min = json_object_get(spec, "minReplicas"), *max = json_object_get(spec, "maxReplicas");
	bool min_set = min && !json_is_null(min);
	if (min_set && !json_is_integer(min))
		field_error_type(errs, "spec.minReplicas", "integer");
	else if (min_set && json_integer_value(min) < 1)
		field_error_invalid_int(errs, "spec.minReplicas", (long long)json_integer_value(min),
					"must be greater than or equal to 1");
	if (!max || json_is_null(max)) {
		field_error_required(errs, "spec.maxReplicas");
	} else if (!json_is_integer(max)) {
		field_error_type(errs, "spec.maxReplicas", "integer");
	} else if (json_integer_value(max) < 1) {
		field_error_invalid_int(errs, "spec.maxReplicas", (long long)json_integer_value(max),
					"must be greater than 0");
	} else if (min_set && json_is_integer(min) && json_integer_value(max) < json_integer_value(min)) {
		field_error_invalid_int(errs, "spec.maxReplicas", (long long)json_integer_value(max),
					"must be greater than or equal to `minReplicas`");
	}
	size_t i;
	json_t *m;
	json_array_foreach(json_object_get(spec, "metrics"), i, m) {
		char f[64];
		snprintf(f, sizeof(f), "spec.metrics[%zu].type", i);
		const char *t = json_str(m, "type");
		if (!t || !*t)
			field_error_required(errs, f);
		else if (!str_in(t, types))
			field_error_not_supported(errs, f, t, types);
	}
	const json_t *st = json_object_get(obj, "status");
	validate_nonnegative(json_object_get(st, "currentReplicas"), "status.currentReplicas", errs);
	validate_nonnegative(json_object_get(st, "desiredReplicas"), "status.desiredReplicas", errs);
}

/* A quantity as JSON holds it (a string, or a bare number), or "<unknown>". */
static void quantity_add(struct buf *out, const json_t *q)
{
	if (json_is_string(q))
		buf_adds(out, json_string_value(q));
	else if (json_is_integer(q))
		buf_addf(out, "%lld", (long long)json_integer_value(q));
	else if (json_is_real(q))
		buf_addf(out, "%g", json_real_value(q));
	else
		buf_adds(out, "<unknown>");
}

/* "<current>/<target>" of one metric whose source (resource, pods, ...) is at key, its status at
 * the same key of the matching status entry (may be NULL). */
static void metric_add(struct buf *out, const json_t *spec, const json_t *status, const char *key)
{
	const json_t *src = json_object_get(spec, key), *cur = json_path(json_object_get(status, key), "current");
	const json_t *target = json_object_get(src, "target");
	bool resource = !strcmp(key, "resource") || !strcmp(key, "containerResource");
	if (resource)
		buf_addf(out, "%s: ", json_str(src, "name") ? json_str(src, "name") : "");
	const json_t *avg = json_object_get(target, "averageValue");
	if (resource && !(avg && !json_is_null(avg))) {
		const json_t *cu = json_object_get(cur, "averageUtilization"), *tu = json_object_get(target,
												   "averageUtilization");
		if (json_is_integer(cu))
			buf_addf(out, "%lld%%", (long long)json_integer_value(cu));
		else
			buf_adds(out, "<unknown>");
		if (json_is_integer(tu))
			buf_addf(out, "/%lld%%", (long long)json_integer_value(tu));
		else
			buf_adds(out, "/<auto>");
		return;
	}
	bool by_avg = (avg && !json_is_null(avg)) || !strcmp(key, "pods");
	quantity_add(out, cur ? json_object_get(cur, by_avg ? "averageValue" : "value") : NULL);
	buf_addch(out, '/');
	quantity_add(out, json_object_get(target, by_avg ? "averageValue" : "value"));
	if (by_avg && !resource && strcmp(key, "pods"))
		buf_adds(out, " (avg)");
}

/* kubectl's TARGETS: up to two metrics joined by ", ", then " + N more..."; "<none>" for none. */
static void targets_add(struct buf *out, const json_t *hpa)
{
	static const struct {
		const char *type, *key;
	} sources[] = { { "Resource", "resource" }, { "ContainerResource", "containerResource" },
			{ "Pods", "pods" },	    { "Object", "object" },
			{ "External", "external" } };
	const json_t *specs = json_path(hpa, "spec.metrics"), *statuses = json_path(hpa, "status.currentMetrics");
	size_t n = json_array_size(specs);
	if (n == 0) {
		buf_adds(out, "<none>");
		return;
	}
	for (size_t i = 0; i < n && i < 2; i++) {
		const json_t *m = json_array_get(specs, i);
		const char *t = json_str(m, "type"), *key = NULL;
		for (size_t k = 0; t && k < ARRAY_SIZE(sources); k++)
			if (!strcmp(t, sources[k].type))
				key = sources[k].key;
		if (i)
			buf_adds(out, ", ");
		if (key)
			metric_add(out, m, json_array_get(statuses, i), key);
		else
			buf_adds(out, "<unknown type>");
	}
	if (n > 2)
		buf_addf(out, " + %zu more...", n - 2);
}

static void hpa_cells(const json_t *obj, time_t now, json_t *cells)
{
	cell_name(obj, cells);
	struct buf b = BUF_INIT;
	const json_t *ref = json_path(obj, "spec.scaleTargetRef");
	buf_addf(&b, "%s/%s", json_str(ref, "kind") ? json_str(ref, "kind") : "",
		 json_str(ref, "name") ? json_str(ref, "name") : "");
	cell_str(cells, buf_cstr(&b));
	buf_reset(&b);
	targets_add(&b, obj);
	cell_str(cells, buf_cstr(&b));
	buf_release(&b);
	const json_t *min = json_path(obj, "spec.minReplicas");
	if (json_is_integer(min))
		cell_int(cells, (long long)json_integer_value(min));
	else
		cell_str(cells, "<unset>");
	cell_int(cells, int_at(obj, "spec.maxReplicas", 0));
	cell_int(cells, int_at(obj, "status.currentReplicas", 0));
	cell_age(obj, now, cells);
}

static const struct api_column hpa_columns[] = {
	COLUMN_NAME,
	{ "Reference", "string", "", "The kind and name of the resource this autoscaler scales.", 0 },
	{ "Targets", "string", "", "The current and target values of the autoscaler's metrics.", 0 },
	{ "MinPods", "string", "", "The lower limit for the number of replicas.", 0 },
	{ "MaxPods", "integer", "", "The upper limit for the number of replicas.", 0 },
	{ "Replicas", "integer", "", "The current number of replicas of the scaled resource.", 0 },
	COLUMN_AGE,
};

const struct api_strategy strategy_hpa = {
	.defaults = hpa_defaults,
	.prepare_create = hpa_prepare_create,
	.validate = hpa_validate,
	.columns = hpa_columns,
	.ncolumns = ARRAY_SIZE(hpa_columns),
	.cells = hpa_cells,
};
