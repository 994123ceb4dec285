/* Pure decisions of the node lifecycle controller: heartbeat staleness, zone states and their
 * eviction rates, tolerations against NoExecute taints. */
#include <string.h>
#include "rmcm.h"
#include "ursa/jsonutil.h"
#include "ursa/timeutil.h"

static const json_t *find_condition(const json_t *node, const char *type)
{
	size_t i;
	const json_t *c;
	json_array_foreach(json_path(node, "status.conditions"), i, c) {
		const char *t = json_str(c, "type");
		if (t && strcmp(t, type) == 0)
			return c;
	}
	return NULL;
}

enum node_ready node_ready_of(const json_t *node)
{
	const char *s = json_str(find_condition(node, "Ready"), "status");
	if (s && strcmp(s, "True") == 0)
		return NODE_READY_TRUE;
	if (s && strcmp(s, "False") == 0)
		return NODE_READY_FALSE;
	return NODE_READY_UNKNOWN;
}

const char *node_zone_of(const json_t *node)
{
	const json_t *labels = json_path(node, "metadata.labels");
	const char *z = json_str(labels, LABEL_ZONE);
	if (!z)
		z = json_str(labels, LABEL_ZONE_BETA);
	return z ? z : "";
}

bool node_heartbeat_stale(int64_t probe_ms, int64_t now_ms, int64_t grace_ms)
{
	return now_ms - probe_ms > grace_ms;
}

enum zone_state zone_state_compute(int ready, int not_ready, double threshold)
{
	if (ready == 0 && not_ready > 0)
		return ZONE_FULL_DISRUPTION;
	if (not_ready > 2 && (double)not_ready / (double)(ready + not_ready) >= threshold)
		return ZONE_PARTIAL_DISRUPTION;
	return ZONE_NORMAL;
}

const char *zone_state_name(enum zone_state s)
{
	switch (s) {
	case ZONE_NORMAL:
		return "Normal";
	case ZONE_PARTIAL_DISRUPTION:
		return "PartialDisruption";
	case ZONE_FULL_DISRUPTION:
		return "FullDisruption";
	}
	return "Unknown";
}

double zone_eviction_rate(enum zone_state s, int zone_size, bool all_zones_full, const struct eviction_rates *r)
{
	if (all_zones_full)
		return 0;
	if (s == ZONE_PARTIAL_DISRUPTION)
		return zone_size > r->large_cluster ? r->secondary : 0;
	return r->primary;
}

double zone_eviction_burst(double rate, int64_t period_s)
{
	double b = rate * (double)(period_s > 0 ? period_s : 1);
	return b > 1 ? b : 1;
}

void zone_bucket_retune(struct token_bucket *b, double rate, int64_t period_s, int64_t now_us)
{
	token_bucket_set_rate(b, rate, now_us);
	b->burst = zone_eviction_burst(b->rate, period_s);
	if (b->tokens > b->burst)
		b->tokens = b->burst;
}

static bool str_eq_opt(const char *a, const char *b)
{
	return strcmp(a ? a : "", b ? b : "") == 0;
}

static int64_t taint_added_ms(const json_t *taint, int64_t now_ms)
{
	const char *s = json_str(taint, "timeAdded");
	time_t t;
	if (!s || rfc3339_parse(s, &t) != 0)
		return now_ms;
	return (int64_t)t * 1000;
}

static bool is_ours(const char *key)
{
	return key && (strcmp(key, TAINT_UNREACHABLE) == 0 || strcmp(key, TAINT_NOT_READY) == 0);
}

/* The deadline one NoExecute taint sets for the pod: the pod's tolerations, else for our own
 * taints the default toleration, else at once (0). */
static int64_t deadline_for(const json_t *pod, const json_t *taint, int64_t default_tol_s, int64_t now_ms)
{
	int64_t added = taint_added_ms(taint, now_ms);
	int64_t d = toleration_deadline_ms(pod, taint, added);
	if (d >= 0)
		return d;
	if (is_ours(json_str(taint, "key")))
		return added + default_tol_s * 1000;
	return 0;
}

int64_t pod_eviction_time_ms(const json_t *pod, const json_t *taints, int64_t default_tol_s, int64_t now_ms)
{
	int64_t when = INT64_MAX;
	size_t i;
	const json_t *taint;
	json_array_foreach(taints, i, taint) {
		const char *effect = json_str(taint, "effect");
		if (!effect || strcmp(effect, "NoExecute") != 0)
			continue;
		int64_t d = deadline_for(pod, taint, default_tol_s, now_ms);
		if (d < when)
			when = d;
	}
	return when;
}

const char *node_wanted_taint(enum node_ready r)
{
	switch (r) {
	case NODE_READY_TRUE:
		return NULL;
	case NODE_READY_FALSE:
		return TAINT_NOT_READY;
	case NODE_READY_UNKNOWN:
		return TAINT_UNREACHABLE;
	}
	return NULL;
}

bool taints_have(const json_t *taints, const char *key, const char *effect)
{
	size_t i;
	const json_t *t;
	json_array_foreach(taints, i, t)
		if (str_eq_opt(json_str(t, "key"), key) && str_eq_opt(json_str(t, "effect"), effect))
			return true;
	return false;
}

json_t *taints_replace(const json_t *taints, const char *key, int64_t now_s)
{
	json_t *out = json_array();
	size_t i;
	const json_t *t;
	json_array_foreach(taints, i, t) {
		const char *effect = json_str(t, "effect");
		if (is_ours(json_str(t, "key")) && effect && strcmp(effect, "NoExecute") == 0)
			continue;
		json_array_append_new(out, json_deep_copy(t));
	}
	if (key) {
		struct buf b = BUF_INIT;
		rfc3339_add(&b, (time_t)now_s);
		json_array_append_new(out, json_pack("{s:s, s:s, s:s}", "key", key, "effect", "NoExecute",
						     "timeAdded", buf_cstr(&b)));
		buf_release(&b);
	}
	return out;
}

static void set_unknown(json_t *c, const char *now)
{
	const char *old = json_str(c, "status");
	if (!old || strcmp(old, "Unknown") != 0)
		json_object_set_new(c, "lastTransitionTime", json_string(now));
	json_object_set_new(c, "status", json_string("Unknown"));
	json_object_set_new(c, "reason", json_string("NodeStatusUnknown"));
	json_object_set_new(c, "message", json_string("Kubelet stopped posting node status."));
}

json_t *conditions_unknown(const json_t *node, int64_t now_s)
{
	static const char *const types[] = { "Ready", "MemoryPressure", "DiskPressure", "PIDPressure" };
	const json_t *src = json_path(node, "status.conditions");
	json_t *out = json_is_array(src) ? json_deep_copy(src) : json_array();
	struct buf now = BUF_INIT;
	rfc3339_add(&now, (time_t)now_s);
	for (size_t k = 0; k < sizeof(types) / sizeof(types[0]); k++) {
		json_t *hit = NULL, *c;
		size_t i;
		json_array_foreach(out, i, c) {
			const char *t = json_str(c, "type");
			if (t && strcmp(t, types[k]) == 0)
				hit = c;
		}
		if (!hit && k == 0) {
			hit = json_pack("{s:s}", "type", "Ready");
			json_array_append_new(out, hit);
		}
		if (hit)
			set_unknown(hit, buf_cstr(&now));
	}
	buf_release(&now);
	return out;
}
