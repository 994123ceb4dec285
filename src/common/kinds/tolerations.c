/* Tolerations against taints, and the Ready=False conditions of pods on a node that is not
 * ready: shared by the node lifecycle controller (resource manager) and the tenant partitions'
 * eviction of pods on a lost zone. */
#include <stdint.h>
#include <string.h>
#include "ursa/buf.h"
#include "ursa/jsonutil.h"
#include "ursa/kinds.h"
#include "ursa/timeutil.h"

static bool str_eq_opt(const char *a, const char *b)
{
	return strcmp(a ? a : "", b ? b : "") == 0;
}

bool toleration_matches(const json_t *tol, const json_t *taint)
{
	const char *effect = json_str(tol, "effect");
	if (effect && *effect && !str_eq_opt(effect, json_str(taint, "effect")))
		return false;
	const char *key = json_str(tol, "key");
	const char *op = json_str(tol, "operator");
	bool exists = op && strcmp(op, "Exists") == 0;
	if (!key || !*key)
		return exists; /* an empty key with Exists tolerates everything */
	if (!str_eq_opt(key, json_str(taint, "key")))
		return false;
	if (exists)
		return true;
	if (op && *op && strcmp(op, "Equal") != 0)
		return false;
	return str_eq_opt(json_str(tol, "value"), json_str(taint, "value"));
}

int64_t toleration_deadline_ms(const json_t *pod, const json_t *taint, int64_t since_ms)
{
	bool matched = false;
	int64_t best = INT64_MAX; /* a matching toleration without tolerationSeconds: forever */
	size_t i;
	const json_t *tol;
	json_array_foreach(json_path(pod, "spec.tolerations"), i, tol) {
		if (!toleration_matches(tol, taint))
			continue;
		matched = true;
		const json_t *secs = json_object_get(tol, "tolerationSeconds");
		if (!json_is_integer(secs))
			continue;
		json_int_t s = json_integer_value(secs);
		if (s < 0)
			s = 0;
		if (s > INT64_MAX / 4000)
			s = INT64_MAX / 4000;
		if (since_ms + (int64_t)s * 1000 < best)
			best = since_ms + (int64_t)s * 1000;
	}
	return matched ? best : -1;
}

json_t *pod_conditions_not_ready(const json_t *pod, const char *message, time_t now)
{
	json_t *copy = json_array();
	bool changed = false;
	size_t i;
	const json_t *c;
	json_array_foreach(json_path(pod, "status.conditions"), i, c) {
		json_t *cc = json_deep_copy(c);
		const char *t = json_str(c, "type"), *st = json_str(c, "status");
		if (json_is_object(cc) && t && (strcmp(t, "Ready") == 0 || strcmp(t, "ContainersReady") == 0) && st &&
		    strcmp(st, "False") != 0) {
			struct buf ts = BUF_INIT;
			rfc3339_add(&ts, now);
			json_object_set_new(cc, "status", json_string("False"));
			json_object_set_new(cc, "reason", json_string("NodeNotReady"));
			if (message)
				json_object_set_new(cc, "message", json_string(message));
			json_object_set_new(cc, "lastTransitionTime", json_string(buf_cstr(&ts)));
			buf_release(&ts);
			changed = true;
		}
		json_array_append_new(copy, cc);
	}
	if (!changed) {
		json_decref(copy);
		return NULL;
	}
	return copy;
}
