/* StatefulSet ordering, naming and revision data: pure functions (sts.h). */
#include <string.h>
#include "sts.h"
#include "ursa/jsonutil.h"

long long sts_ordinal(const char *set, const char *pod)
{
	size_t n = strlen(set);
	if (strncmp(pod, set, n) != 0 || pod[n] != '-')
		return -1;
	const char *d = pod + n + 1;
	size_t len = strlen(d);
	if (len == 0 || len > 9 || strspn(d, "0123456789") != len || (d[0] == '0' && len > 1))
		return -1;
	long long v = 0;
	for (; *d; d++)
		v = v * 10 + (*d - '0');
	return v;
}

static bool push(struct sts_action *out, size_t max, size_t *n, long long ord, bool create)
{
	if (*n >= max)
		return false;
	out[(*n)++] = (struct sts_action){ ord, create };
	return true;
}

size_t sts_plan(const struct sts_in *in, const struct sts_pod *pods, size_t npods, struct sts_action *out,
		size_t max)
{
	size_t n = 0;
	long long want = in->replicas < 0 ? 0 : in->replicas;
	bool blocked = false;
	for (long long i = 0; i < want && i < (long long)npods && !blocked; i++) {
		const struct sts_pod *p = &pods[i];
		if (!p->exists) {
			push(out, max, &n, i, true);
			blocked = !in->parallel;
		} else if (p->terminating) {
			blocked = !in->parallel;
		} else if (p->ended) {
			push(out, max, &n, i, false);
			blocked = !in->parallel;
		} else if (!p->ready) {
			blocked = !in->parallel;
		}
	}
	if (blocked)
		return n;
	/* condemned, highest first */
	for (long long i = (long long)npods - 1; i >= want; i--) {
		const struct sts_pod *p = &pods[i];
		if (!p->exists)
			continue;
		if (p->terminating) {
			if (!in->parallel)
				return n;
			continue;
		}
		push(out, max, &n, i, false);
		if (!in->parallel)
			return n;
	}
	if (n > 0 || in->on_delete)
		return n;
	long long low = in->partition < 0 ? 0 : in->partition;
	for (long long i = (want < (long long)npods ? want : (long long)npods) - 1; i >= low; i--) {
		const struct sts_pod *p = &pods[i];
		if (!p->exists || p->terminating)
			return n;
		if (!p->updated) {
			push(out, max, &n, i, false);
			return n;
		}
		if (!p->ready)
			return n;
	}
	return n;
}

bool sts_new_pod_updated(const struct sts_in *in, long long ordinal)
{
	return in->on_delete || ordinal >= in->partition;
}

void sts_claim_name(const char *tmpl, const char *set, long long ordinal, struct buf *out)
{
	buf_addf(out, "%s-%s-%lld", tmpl, set, ordinal);
}

json_t *sts_revision_data(const json_t *set)
{
	json_t *tmpl = json_deep_copy(json_path(set, "spec.template"));
	if (!json_is_object(tmpl)) {
		json_decref(tmpl);
		tmpl = json_object();
	}
	json_object_set_new(tmpl, "$patch", json_string("replace"));
	return json_pack("{s:{s:o}}", "spec", "template", tmpl);
}

bool sts_revision_matches(const json_t *data, const json_t *set)
{
	json_t *a = json_deep_copy(json_path(data, "spec.template"));
	if (json_is_object(a))
		json_object_del(a, "$patch");
	bool eq = a && json_equal(a, json_path(set, "spec.template"));
	json_decref(a);
	return eq;
}
