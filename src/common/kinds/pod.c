/* Pods: defaults and admission defaults, create-time status, update rules and the printer
 * columns kubectl shows (READY, STATUS and RESTARTS follow upstream's printPod). */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include "kinds/kinds_common.h"
#include "ursa/jsonutil.h"
#include "ursa/timeutil.h"
#include "ursa/xalloc.h"

static void pod_defaults(json_t *obj)
{
	pod_spec_defaults(json_object_get(obj, "spec"), PODSPEC_POD);
}

static void pod_prepare_create(json_t *obj)
{
	const char *qos = pod_spec_qos_class(json_object_get(obj, "spec"));
	json_object_set_new(obj, "status", json_pack("{s:s, s:s}", "phase", "Pending", "qosClass", qos));
}

/* ---- update rules ---- */

static const char update_forbidden[] =
	"pod updates may not change fields other than `spec.containers[*].image`,"
	"`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to "
	"existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was "
	"previously negative)";

/* Copies old images into now so that image changes do not count as spec changes. */
static void mirror_images(json_t *now, const json_t *old, const char *key)
{
	json_t *a = json_object_get(now, key);
	const json_t *b = json_object_get(old, key);
	for (size_t i = 0; i < json_array_size(a) && i < json_array_size(b); i++) {
		json_t *c = json_array_get(a, i), *img = json_object_get(json_array_get(b, i), "image");
		if (json_is_object(c) && img)
			json_object_set(c, "image", img);
		else if (json_is_object(c))
			json_object_del(c, "image");
	}
}

static void mirror_key(json_t *now, const json_t *old, const char *key)
{
	json_t *v = json_object_get(old, key);
	if (v)
		json_object_set(now, key, v);
	else
		json_object_del(now, key);
}

static bool array_contains(const json_t *arr, const json_t *v)
{
	size_t i;
	json_t *x;
	json_array_foreach(arr, i, x)
		if (json_equal(x, (json_t *)v))
			return true;
	return false;
}

static void check_deadline(const json_t *now, const json_t *old, struct field_errors *errs)
{
	const json_t *n = json_object_get(now, "activeDeadlineSeconds");
	const json_t *o = json_object_get(old, "activeDeadlineSeconds");
	if (!json_is_integer(o))
		return;
	if (!json_is_integer(n))
		field_error_invalid(errs, "spec.activeDeadlineSeconds", "nil",
				    "must not update from a positive integer to nil value");
	else if (json_integer_value(n) > json_integer_value(o))
		field_error_invalid_int(errs, "spec.activeDeadlineSeconds", (long long)json_integer_value(n),
					"must be less than or equal to previous value");
}

static void validate_pod_update(const json_t *spec, const json_t *old_spec, struct field_errors *errs)
{
	if (!json_is_object(spec) || !json_is_object(old_spec))
		return;
	json_t *now = json_deep_copy(spec);
	mirror_images(now, old_spec, "containers");
	mirror_images(now, old_spec, "initContainers");
	check_deadline(spec, old_spec, errs);
	mirror_key(now, old_spec, "activeDeadlineSeconds");
	const json_t *old_tols = json_object_get(old_spec, "tolerations");
	size_t i;
	json_t *t;
	json_array_foreach(old_tols, i, t) {
		if (!array_contains(json_object_get(spec, "tolerations"), t)) {
			field_error_forbidden(errs, "spec.tolerations", "existing toleration can not be modified "
					      "except its tolerationSeconds");
			break;
		}
	}
	mirror_key(now, old_spec, "tolerations");
	if (int_at(old_spec, "terminationGracePeriodSeconds", 0) < 0)
		mirror_key(now, old_spec, "terminationGracePeriodSeconds");
	if (!json_equal(now, (json_t *)old_spec))
		field_error_forbidden(errs, "spec", "%s", update_forbidden);
	json_decref(now);
}

static void pod_validate(const json_t *obj, const json_t *old, struct field_errors *errs)
{
	const json_t *spec = json_object_get(obj, "spec");
	pod_spec_validate(spec, "spec", PODSPEC_POD, errs);
	if (old)
		validate_pod_update(spec, json_object_get(old, "spec"), errs);
}

/* ---- printing ---- */

struct pod_row {
	long long restarts;
	time_t last_restart; /* 0: none seen */
	int ready, total;
	struct buf reason;
};

static void set_reason(struct pod_row *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void set_reason(struct pod_row *r, const char *fmt, ...)
{
	va_list ap;
	buf_reset(&r->reason);
	va_start(ap, fmt);
	buf_vaddf(&r->reason, fmt, ap);
	va_end(ap);
}

static bool has_condition(const json_t *pod, const char *type, const char *status, const char *reason)
{
	size_t i;
	json_t *c;
	json_array_foreach(json_path(pod, "status.conditions"), i, c) {
		const char *t = json_str(c, "type");
		if (!t || strcmp(t, type))
			continue;
		if (status && (!json_str(c, "status") || strcmp(json_str(c, "status"), status)))
			continue;
		if (reason && (!json_str(c, "reason") || strcmp(json_str(c, "reason"), reason)))
			continue;
		return true;
	}
	return false;
}

/* An init container with restartPolicy Always is a sidecar: it counts as a container. */
static bool is_sidecar(const json_t *spec, const char *name)
{
	size_t i;
	json_t *c;
	json_array_foreach(json_object_get(spec, "initContainers"), i, c) {
		const char *n = json_str(c, "name"), *rp = json_str(c, "restartPolicy");
		if (n && name && !strcmp(n, name))
			return rp && !strcmp(rp, "Always");
	}
	return false;
}

static void note_restart(const json_t *cs, time_t *last)
{
	time_t t;
	const char *fin = json_path_str(cs, "lastState.terminated.finishedAt");
	if (fin && rfc3339_parse(fin, &t) == 0 && t > *last)
		*last = t;
}

/* Terminated state reason, or "<prefix>Signal:N" / "<prefix>ExitCode:N". */
static void terminated_reason(struct pod_row *r, const json_t *term, const char *prefix)
{
	const char *why = json_str(term, "reason");
	if (why && *why)
		set_reason(r, "%s%s", prefix, why);
	else if (int_at(term, "signal", 0))
		set_reason(r, "%sSignal:%lld", prefix, int_at(term, "signal", 0));
	else
		set_reason(r, "%sExitCode:%lld", prefix, int_at(term, "exitCode", 0));
}

/* Returns true while the pod is still initializing. */
static bool scan_init_statuses(const json_t *pod, struct pod_row *r, long long *side_restarts, time_t *side_last)
{
	const json_t *spec = json_object_get(pod, "spec");
	size_t ninit = json_array_size(json_object_get(spec, "initContainers"));
	size_t i;
	json_t *cs;
	json_array_foreach(json_path(pod, "status.initContainerStatuses"), i, cs) {
		const char *name = json_str(cs, "name");
		bool sidecar = is_sidecar(spec, name);
		const json_t *term = json_path(cs, "state.terminated");
		const char *waiting = json_path_str(cs, "state.waiting.reason");
		r->restarts += int_at(cs, "restartCount", 0);
		note_restart(cs, &r->last_restart);
		if (sidecar) {
			*side_restarts += int_at(cs, "restartCount", 0);
			note_restart(cs, side_last);
		}
		if (json_is_object(term) && int_at(term, "exitCode", 0) == 0)
			continue;
		if (sidecar && json_is_true(json_object_get(cs, "started"))) {
			r->ready += json_is_true(json_object_get(cs, "ready"));
			continue;
		}
		if (json_is_object(term))
			terminated_reason(r, term, "Init:");
		else if (waiting && *waiting && strcmp(waiting, "PodInitializing"))
			set_reason(r, "Init:%s", waiting);
		else
			set_reason(r, "Init:%zu/%zu", i, ninit);
		return true;
	}
	return false;
}

static void scan_container_statuses(const json_t *pod, struct pod_row *r)
{
	const json_t *list = json_path(pod, "status.containerStatuses");
	bool running = false;
	for (size_t i = json_array_size(list); i-- > 0;) {
		const json_t *cs = json_array_get(list, i);
		const json_t *term = json_path(cs, "state.terminated");
		const char *waiting = json_path_str(cs, "state.waiting.reason");
		r->restarts += int_at(cs, "restartCount", 0);
		note_restart(cs, &r->last_restart);
		if (waiting && *waiting) {
			set_reason(r, "%s", waiting);
		} else if (json_is_object(term)) {
			terminated_reason(r, term, "");
		} else if (json_is_true(json_object_get(cs, "ready")) && json_is_object(json_path(cs, "state.running"))) {
			running = true;
			r->ready++;
		}
	}
	if (running && !strcmp(buf_cstr(&r->reason), "Completed"))
		set_reason(r, "%s", has_condition(pod, "Ready", "True", NULL) ? "Running" : "NotReady");
}

static void pod_row_compute(const json_t *pod, struct pod_row *r)
{
	const json_t *spec = json_object_get(pod, "spec");
	const char *phase = json_path_str(pod, "status.phase"), *why = json_path_str(pod, "status.reason");
	size_t i;
	json_t *c;
	r->total = (int)json_array_size(json_object_get(spec, "containers"));
	json_array_foreach(json_object_get(spec, "initContainers"), i, c) {
		const char *rp = json_str(c, "restartPolicy");
		r->total += rp && !strcmp(rp, "Always");
	}
	set_reason(r, "%s", why && *why ? why : phase ? phase : "");
	if (has_condition(pod, "PodScheduled", NULL, "SchedulingGated"))
		set_reason(r, "SchedulingGated");

	long long side_restarts = 0;
	time_t side_last = 0;
	bool initializing = scan_init_statuses(pod, r, &side_restarts, &side_last);
	if (!initializing || has_condition(pod, "Initialized", "True", NULL)) {
		r->restarts = side_restarts;
		r->last_restart = side_last;
		scan_container_statuses(pod, r);
	}
	if (json_path_str(pod, "metadata.deletionTimestamp")) {
		bool terminal = phase && (!strcmp(phase, "Succeeded") || !strcmp(phase, "Failed"));
		if (why && !strcmp(why, "NodeLost"))
			set_reason(r, "Unknown");
		else if (!terminal)
			set_reason(r, "Terminating");
	}
}

static void cell_readiness_gates(const json_t *pod, json_t *cells)
{
	const json_t *gates = json_path(pod, "spec.readinessGates");
	size_t n = json_array_size(gates), ok = 0, i;
	json_t *g;
	if (n == 0) {
		cell_str(cells, "<none>");
		return;
	}
	json_array_foreach(gates, i, g) {
		const char *type = json_str(g, "conditionType");
		ok += type && has_condition(pod, type, "True", NULL);
	}
	struct buf b = BUF_INIT;
	buf_addf(&b, "%zu/%zu", ok, n);
	cell_str(cells, buf_cstr(&b));
	buf_release(&b);
}

static void pod_cells(const json_t *pod, time_t now, json_t *cells)
{
	struct pod_row r = { .reason = BUF_INIT };
	struct buf b = BUF_INIT;
	pod_row_compute(pod, &r);
	cell_name(pod, cells);
	buf_addf(&b, "%d/%d", r.ready, r.total);
	cell_str(cells, buf_cstr(&b));
	cell_str(cells, buf_cstr(&r.reason));
	buf_reset(&b);
	buf_addf(&b, "%lld", r.restarts);
	if (r.restarts && r.last_restart) {
		buf_adds(&b, " (");
		age_add(&b, r.last_restart, now);
		buf_adds(&b, " ago)");
	}
	cell_str(cells, buf_cstr(&b));
	cell_age(pod, now, cells);

	const char *ip = json_str(json_array_get(json_path(pod, "status.podIPs"), 0), "ip");
	cell_str_or(cells, ip && *ip ? ip : json_path_str(pod, "status.podIP"), "<none>");
	cell_str_or(cells, json_path_str(pod, "spec.nodeName"), "<none>");
	cell_str_or(cells, json_path_str(pod, "status.nominatedNodeName"), "<none>");
	cell_readiness_gates(pod, cells);
	buf_release(&b);
	buf_release(&r.reason);
}

static const struct api_column pod_columns[] = {
	COLUMN_NAME,
	{ "Ready", "string", "", "The aggregate readiness state of this pod for accepting traffic.", 0 },
	{ "Status", "string", "", "The aggregate status of the containers in this pod.", 0 },
	{ "Restarts", "string", "",
	  "The number of times the containers in this pod have been restarted and when the last container in "
	  "this pod has restarted.", 0 },
	COLUMN_AGE,
	{ "IP", "string", "", "IP address allocated to the pod.", 1 },
	{ "Node", "string", "", "NodeName is the name of the node the pod is scheduled onto.", 1 },
	{ "Nominated Node", "string", "", "The node the scheduler nominated for this pod to preempt on.", 1 },
	{ "Readiness Gates", "string", "", "Pod readiness gates that are true, over all of them.", 1 },
};

static const struct api_field pod_fields[] = {
	{ "spec.nodeName", "spec.nodeName" },
	{ "spec.restartPolicy", "spec.restartPolicy" },
	{ "spec.schedulerName", "spec.schedulerName" },
	{ "spec.serviceAccountName", "spec.serviceAccountName" },
	{ "spec.hostNetwork", "spec.hostNetwork", "false" },
	{ "status.phase", "status.phase" },
	{ "status.podIP", "status.podIP" },
	{ "status.nominatedNodeName", "status.nominatedNodeName" },
};

/* What pod_cells reads: the containers are only counted (and init containers matched by name). */
static const char *const pod_cell_paths[] = {
	"metadata.name", "metadata.creationTimestamp", "metadata.deletionTimestamp", "spec.nodeName",
	"spec.readinessGates", "spec.containers.*.name", "spec.initContainers.*.name",
	"spec.initContainers.*.restartPolicy", "status.phase", "status.reason", "status.podIP", "status.podIPs",
	"status.nominatedNodeName", "status.conditions.*.type", "status.conditions.*.status", "status.conditions.*.reason",
	"status.containerStatuses.*.name", "status.containerStatuses.*.ready", "status.containerStatuses.*.started",
	"status.containerStatuses.*.restartCount", "status.containerStatuses.*.state",
	"status.containerStatuses.*.lastState.terminated.finishedAt", "status.initContainerStatuses.*.name",
	"status.initContainerStatuses.*.ready", "status.initContainerStatuses.*.started",
	"status.initContainerStatuses.*.restartCount", "status.initContainerStatuses.*.state",
	"status.initContainerStatuses.*.lastState.terminated.finishedAt", NULL,
};

const struct api_strategy strategy_pod = {
	.defaults = pod_defaults,
	.prepare_create = pod_prepare_create,
	.validate = pod_validate,
	.columns = pod_columns,
	.ncolumns = ARRAY_SIZE(pod_columns),
	.cells = pod_cells,
	.cell_paths = pod_cell_paths,
	.fields = pod_fields,
	.nfields = ARRAY_SIZE(pod_fields),
};
