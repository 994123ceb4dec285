/* policy/v1 PodDisruptionBudget: defaults, validation, printer columns, and the budget
 * arithmetic (ursa/pdb.h) the disruption controller and the eviction subresource share. */
#include <stdlib.h>
#include <string.h>
#include "kinds/kinds_common.h"
#include "ursa/errors.h"
#include "ursa/jsonutil.h"
#include "ursa/pdb.h"
#include "ursa/selector.h"
#include "ursa/timeutil.h"
#include "ursa/xalloc.h"

/* Strategy ----------------------------------------------------------------------------------- */

static bool set(const json_t *v)
{
	return v && !json_is_null(v);
}

/* Neither bound given means minAvailable 1, as Kubernetes defaults it. */
static void pdb_defaults(json_t *obj)
{
	json_t *spec = json_object_get(obj, "spec");
	if (!json_is_object(spec))
		return;
	if (!set(json_object_get(spec, "minAvailable")) && !set(json_object_get(spec, "maxUnavailable")))
		json_object_set_new(spec, "minAvailable", json_integer(1));
}

static void pdb_prepare_create(json_t *obj)
{
	json_object_set_new(obj, "status", json_pack("{s:i,s:i,s:i,s:i}", "disruptionsAllowed", 0, "currentHealthy",
						     0, "desiredHealthy", 0, "expectedPods", 0));
}

static void pdb_validate(const json_t *obj, const json_t *old, struct field_errors *errs)
{
	(void)old;
	static const char *const policies[] = { "IfHealthyBudget", "AlwaysAllow", NULL };
	const json_t *spec = json_object_get(obj, "spec");
	if (!json_is_object(spec)) {
		field_error_required(errs, "spec");
		return;
	}
	const json_t *min = json_object_get(spec, "minAvailable"), *max = json_object_get(spec, "maxUnavailable");
	if (set(min) && set(max))
		field_error_invalid_json(errs, "spec.minAvailable", min,
					 "minAvailable and maxUnavailable cannot be both set");
	validate_int_or_percent(min, "spec.minAvailable", true, errs);
	validate_int_or_percent(max, "spec.maxUnavailable", true, errs);
	const json_t *sel = json_object_get(spec, "selector");
	if (set(sel))
		validate_label_selector(sel, "spec.selector", errs);
	const char *pol = json_str(spec, "unhealthyPodEvictionPolicy");
	if (pol && strcmp(pol, "IfHealthyBudget") && strcmp(pol, "AlwaysAllow"))
		field_error_not_supported(errs, "spec.unhealthyPodEvictionPolicy", pol, policies);
	const json_t *st = json_object_get(obj, "status");
	static const char *const counts[] = { "disruptionsAllowed", "currentHealthy", "desiredHealthy",
					      "expectedPods" };
	for (size_t i = 0; i < ARRAY_SIZE(counts); i++) {
		char f[64];
		snprintf(f, sizeof(f), "status.%s", counts[i]);
		validate_nonnegative(json_object_get(st, counts[i]), f, errs);
	}
}

static void cell_bound(json_t *cells, const json_t *v)
{
	char num[32];
	if (json_is_integer(v)) {
		snprintf(num, sizeof(num), "%lld", (long long)json_integer_value(v));
		cell_str(cells, num);
	} else {
		cell_str_or(cells, json_string_value(v), "N/A");
	}
}

static void pdb_cells(const json_t *obj, time_t now, json_t *cells)
{
	cell_name(obj, cells);
	cell_bound(cells, json_path(obj, "spec.minAvailable"));
	cell_bound(cells, json_path(obj, "spec.maxUnavailable"));
	cell_int(cells, int_at(obj, "status.disruptionsAllowed", 0));
	cell_age(obj, now, cells);
}

static const struct api_column pdb_columns[] = {
	COLUMN_NAME,
	{ "Min Available", "string", "", "The minimum number of pods that must be available.", 0 },
	{ "Max Unavailable", "string", "", "The maximum number of pods that may be unavailable.", 0 },
	{ "Allowed Disruptions", "integer", "", "Number of pod disruptions that are currently allowed.", 0 },
	COLUMN_AGE,
};

const struct api_strategy strategy_pdb = {
	.defaults = pdb_defaults,
	.prepare_create = pdb_prepare_create,
	.validate = pdb_validate,
	.columns = pdb_columns,
	.ncolumns = ARRAY_SIZE(pdb_columns),
	.cells = pdb_cells,
};

/* Budget arithmetic --------------------------------------------------------------------------- */

bool pdb_selects(const json_t *pdb, const json_t *pod)
{
	const json_t *sel = json_path(pdb, "spec.selector");
	if (!set(sel))
		return false;
	struct label_selector *ls = NULL;
	if (label_selector_from_json(sel, &ls, NULL) != 0)
		return false;
	const json_t *labels = json_path(pod, "metadata.labels");
	bool ok = label_selector_matches(ls, json_is_object(labels) ? labels : NULL);
	label_selector_free(ls);
	return ok;
}

static bool pod_ready(const json_t *pod)
{
	size_t i;
	json_t *c;
	json_array_foreach(json_path(pod, "status.conditions"), i, c) {
		const char *t = json_str(c, "type"), *s = json_str(c, "status");
		if (t && !strcmp(t, "Ready"))
			return s && !strcmp(s, "True");
	}
	return false;
}

bool pdb_pod_healthy(const json_t *pod)
{
	const char *phase = json_path_str(pod, "status.phase");
	return phase && !strcmp(phase, "Running") && pod_ready(pod) &&
	       !set(json_path(pod, "metadata.deletionTimestamp"));
}

int pdb_scaled(const json_t *v, long long total, long long *ret)
{
	if (json_is_integer(v)) {
		if (json_integer_value(v) < 0)
			return E_INVALID;
		*ret = json_integer_value(v);
		return 0;
	}
	const char *s = json_string_value(v);
	if (!s || !*s)
		return E_INVALID;
	size_t digits = strspn(s, "0123456789"), n = strlen(s);
	if (digits == 0 || digits > 9 || (digits != n && (digits + 1 != n || s[digits] != '%')))
		return E_INVALID;
	long long x = atoll(s);
	if (digits == n)
		*ret = x;
	else
		*ret = total > 0 ? (x * total + 99) / 100 : 0;
	return 0;
}

static bool is_percent(const json_t *v)
{
	const char *s = json_string_value(v);
	return s && strchr(s, '%');
}

bool pdb_needs_scale(const json_t *spec)
{
	return set(json_object_get(spec, "maxUnavailable")) || is_percent(json_object_get(spec, "minAvailable"));
}

int pdb_desired_healthy(const json_t *spec, long long expected, long long *ret)
{
	const json_t *min = json_object_get(spec, "minAvailable"), *max = json_object_get(spec, "maxUnavailable");
	long long v;
	if (set(max)) {
		if (pdb_scaled(max, expected, &v) < 0)
			return E_INVALID;
		*ret = expected - v > 0 ? expected - v : 0;
		return 0;
	}
	if (set(min)) {
		if (pdb_scaled(min, expected, &v) < 0)
			return E_INVALID;
		*ret = v;
		return 0;
	}
	return E_INVALID;
}

static const json_t *pod_named(const json_t *pods, const char *name)
{
	size_t i;
	json_t *p;
	json_array_foreach(pods, i, p) {
		const char *n = json_path_str(p, "metadata.name");
		if (n && !strcmp(n, name))
			return p;
	}
	return NULL;
}

/* The DisruptionAllowed condition for allowed, keeping old's transition time when the status
 * holds. */
static json_t *allowed_condition(const json_t *old_status, bool allowed, long long gen, time_t now)
{
	const char *status = allowed ? "True" : "False";
	const char *since = NULL;
	size_t i;
	json_t *c;
	json_array_foreach(json_object_get(old_status, "conditions"), i, c) {
		const char *t = json_str(c, "type"), *s = json_str(c, "status");
		if (t && !strcmp(t, "DisruptionAllowed") && s && !strcmp(s, status))
			since = json_str(c, "lastTransitionTime");
	}
	struct buf ts = BUF_INIT;
	if (since)
		buf_adds(&ts, since);
	else
		rfc3339_add(&ts, now);
	json_t *cond = json_pack("{s:s,s:s,s:s,s:s,s:s,s:I}", "type", "DisruptionAllowed", "status", status, "reason",
				 allowed ? "SufficientPods" : "InsufficientPods", "message", "", "lastTransitionTime",
				 buf_cstr(&ts), "observedGeneration", (json_int_t)gen);
	buf_release(&ts);
	return cond;
}

json_t *pdb_status_compute(const json_t *pdb, const json_t *pods, long long expected, time_t now,
			   time_t *ret_recheck)
{
	long long desired;
	if (ret_recheck)
		*ret_recheck = 0;
	if (pdb_desired_healthy(json_object_get(pdb, "spec"), expected, &desired) < 0)
		return NULL;
	const json_t *old = json_object_get(pdb, "status");
	json_t *disrupted = json_object();
	const char *k;
	json_t *v;
	json_object_foreach(json_object_get(old, "disruptedPods"), k, v) {
		const json_t *p = pod_named(pods, k);
		time_t at;
		if (!p || set(json_path(p, "metadata.deletionTimestamp")) || !json_string_value(v) ||
		    rfc3339_parse(json_string_value(v), &at) != 0 || at + PDB_DISRUPTED_TIMEOUT_S < now)
			continue;
		json_object_set(disrupted, k, v);
		if (ret_recheck && (!*ret_recheck || at + PDB_DISRUPTED_TIMEOUT_S < *ret_recheck))
			*ret_recheck = at + PDB_DISRUPTED_TIMEOUT_S;
	}
	long long healthy = 0;
	size_t i;
	json_t *p;
	json_array_foreach(pods, i, p) {
		const char *n = json_path_str(p, "metadata.name");
		if (pdb_pod_healthy(p) && !(n && json_object_get(disrupted, n)))
			healthy++;
	}
	long long allowed = healthy - desired > 0 ? healthy - desired : 0;
	long long gen = int_at(pdb, "metadata.generation", 0);
	json_t *st = json_pack("{s:I,s:I,s:I,s:I,s:I}", "observedGeneration", (json_int_t)gen, "disruptionsAllowed",
			       (json_int_t)allowed, "currentHealthy", (json_int_t)healthy, "desiredHealthy",
			       (json_int_t)desired, "expectedPods", (json_int_t)expected);
	if (json_object_size(disrupted))
		json_object_set(st, "disruptedPods", disrupted);
	json_decref(disrupted);
	json_object_set_new(st, "conditions", json_pack("[o]", allowed_condition(old, allowed > 0, gen, now)));
	return st;
}

enum pdb_verdict pdb_eviction_verdict(const json_t *pdb, const json_t *pod)
{
	const char *phase = json_path_str(pod, "status.phase");
	if (!phase || !strcmp(phase, "Succeeded") || !strcmp(phase, "Failed") || !strcmp(phase, "Pending") ||
	    set(json_path(pod, "metadata.deletionTimestamp")))
		return PDB_EVICT_IGNORE;
	const char *pol = json_path_str(pdb, "spec.unhealthyPodEvictionPolicy");
	long long cur = int_at(pdb, "status.currentHealthy", 0), want = int_at(pdb, "status.desiredHealthy", 0);
	if (!pod_ready(pod)) {
		if (pol && !strcmp(pol, "AlwaysAllow"))
			return PDB_EVICT_IGNORE;
		if (cur >= want && want > 0)
			return PDB_EVICT_IGNORE;
	}
	if (int_at(pdb, "status.observedGeneration", 0) < int_at(pdb, "metadata.generation", 0))
		return PDB_EVICT_STALE;
	long long allowed = int_at(pdb, "status.disruptionsAllowed", 0);
	if (allowed < 0 || json_object_size(json_path(pdb, "status.disruptedPods")) > PDB_MAX_DISRUPTED)
		return PDB_EVICT_FORBIDDEN;
	return allowed == 0 ? PDB_EVICT_DENY : PDB_EVICT_CONSUME;
}

json_t *pdb_status_after_eviction(const json_t *pdb, const char *pod_name, time_t now)
{
	const json_t *old = json_object_get(pdb, "status");
	json_t *st = json_is_object(old) ? json_deep_copy(old) : json_object();
	long long allowed = int_at(pdb, "status.disruptionsAllowed", 0) - 1;
	json_object_set_new(st, "disruptionsAllowed", json_integer(allowed > 0 ? allowed : 0));
	if (allowed <= 0) {
		long long gen = int_at(pdb, "status.observedGeneration", 0);
		json_object_set_new(st, "conditions", json_pack("[o]", allowed_condition(old, false, gen, now)));
	}
	json_t *d = json_object_get(st, "disruptedPods");
	if (!json_is_object(d)) {
		d = json_object();
		json_object_set_new(st, "disruptedPods", d);
	}
	struct buf ts = BUF_INIT;
	rfc3339_add(&ts, now);
	json_object_set_new(d, pod_name, json_string(buf_cstr(&ts)));
	buf_release(&ts);
	return st;
}
