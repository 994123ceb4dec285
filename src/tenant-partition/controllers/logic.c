/* Pure controller arithmetic: template hashing, rollout steps, pod ranking. No I/O. */
#include <stdlib.h>
#include <string.h>
#include "tpc.h"
#include "ursa/errors.h"
#include "ursa/jsonutil.h"
#include "ursa/timeutil.h"
#include "ursa/xalloc.h"

uint32_t tpc_fnv32a(const void *data, size_t len)
{
	const unsigned char *p = data;
	uint32_t h = 2166136261u;
	for (size_t i = 0; i < len; i++) {
		h ^= p[i];
		h *= 16777619u;
	}
	return h;
}

/* A copy of the template without the pod-template-hash label (new reference). */
static json_t *strip_hash(const json_t *tmpl)
{
	json_t *c = json_deep_copy(tmpl ? tmpl : json_null());
	json_t *labels = json_path(c, "metadata.labels");
	if (json_is_object(labels))
		json_object_del(labels, TPC_HASH_LABEL);
	return c;
}

void tpc_template_hash(const json_t *tmpl, long long collision_count, struct buf *out)
{
	static const char alphabet[] = "bcdfghjklmnpqrstvwxz2456789";
	json_t *c = strip_hash(tmpl);
	char *s = json_dumps(c, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
	struct buf in = BUF_INIT;
	buf_adds(&in, s ? s : "null");
	if (collision_count >= 0)
		buf_addf(&in, "%lld", collision_count);
	struct buf dec = BUF_INIT;
	buf_addf(&dec, "%u", (unsigned)tpc_fnv32a(in.ptr, in.len));
	for (size_t i = 0; i < dec.len; i++)
		buf_addch(out, alphabet[(unsigned char)dec.ptr[i] % (sizeof(alphabet) - 1)]);
	buf_release(&dec);
	buf_release(&in);
	free(s);
	json_decref(c);
}

bool tpc_templates_equal(const json_t *a, const json_t *b)
{
	json_t *ca = strip_hash(a), *cb = strip_hash(b);
	/* an empty labels object left behind by the strip equals no labels at all */
	json_t *la = json_path(ca, "metadata.labels"), *lb = json_path(cb, "metadata.labels");
	if (json_is_object(la) && json_object_size(la) == 0)
		json_object_del(json_object_get(ca, "metadata"), "labels");
	if (json_is_object(lb) && json_object_size(lb) == 0)
		json_object_del(json_object_get(cb, "metadata"), "labels");
	bool eq = json_equal(ca, cb);
	json_decref(ca);
	json_decref(cb);
	return eq;
}

int tpc_int_or_percent(const json_t *v, const char *def, long long total, bool round_up, long long *ret)
{
	if (json_is_integer(v)) {
		if (json_integer_value(v) < 0)
			return E_INVALID;
		*ret = json_integer_value(v);
		return 0;
	}
	const char *s = json_is_string(v) ? json_string_value(v) : def;
	if (!s || !*s)
		return E_INVALID;
	size_t n = strlen(s);
	bool pct = s[n - 1] == '%';
	long long x;
	struct sv num = { s, pct ? n - 1 : n };
	if (parse_int64_sv(num, &x) < 0 || x < 0 || x > 1000000000)
		return E_INVALID;
	if (!pct) {
		*ret = x;
		return 0;
	}
	if (total < 0)
		total = 0;
	*ret = round_up ? (x * total + 99) / 100 : (x * total) / 100;
	return 0;
}

int tpc_fenceposts(const json_t *rolling, long long replicas, long long *ret_surge, long long *ret_unavail)
{
	long long s, u;
	int rc = tpc_int_or_percent(json_object_get(rolling, "maxSurge"), "25%", replicas, true, &s);
	if (rc == 0)
		rc = tpc_int_or_percent(json_object_get(rolling, "maxUnavailable"), "25%", replicas, false, &u);
	if (rc < 0)
		return rc;
	if (s == 0 && u == 0)
		u = 1;
	*ret_surge = s;
	*ret_unavail = u;
	return 0;
}

static int cmp_created(const void *a, const void *b)
{
	const struct rs_view *x = *(struct rs_view *const *)a, *y = *(struct rs_view *const *)b;
	return (x->created > y->created) - (x->created < y->created);
}

/* Old ReplicaSets oldest first (array of pointers into old[]; caller frees). */
static struct rs_view **oldest_first(struct rs_view *old, size_t nold)
{
	struct rs_view **v = xcalloc(nold ? nold : 1, sizeof(*v));
	for (size_t i = 0; i < nold; i++)
		v[i] = &old[i];
	qsort(v, nold, sizeof(*v), cmp_created);
	return v;
}

static long long min_ll(long long a, long long b)
{
	return a < b ? a : b;
}

static bool scale_old_down(long long want, long long unavail, struct rs_view *neu, struct rs_view *old, size_t nold)
{
	long long old_pods = 0, all = neu ? neu->target : 0, avail = neu ? neu->available : 0;
	for (size_t i = 0; i < nold; i++) {
		old_pods += old[i].target;
		all += old[i].target;
		avail += old[i].available;
	}
	if (old_pods == 0)
		return false;
	long long min_avail = want - unavail;
	long long new_unavail = neu ? neu->target - neu->available : 0;
	if (new_unavail < 0)
		new_unavail = 0;
	long long max_down = all - min_avail - new_unavail;
	if (max_down <= 0)
		return false;
	struct rs_view **v = oldest_first(old, nold);
	long long done = 0;
	/* unhealthy replicas first: removing them costs no availability */
	for (size_t i = 0; i < nold && done < max_down; i++) {
		long long unhealthy = v[i]->target - v[i]->available;
		if (v[i]->target == 0 || unhealthy <= 0)
			continue;
		long long d = min_ll(max_down - done, unhealthy);
		v[i]->target -= d;
		done += d;
	}
	/* then available ones, as far as minAvailable allows */
	long long budget = avail - min_avail, taken = 0;
	for (size_t i = 0; i < nold && taken < budget; i++) {
		if (v[i]->target == 0)
			continue;
		long long d = min_ll(v[i]->target, budget - taken);
		v[i]->target -= d;
		taken += d;
	}
	free(v);
	return done + taken > 0;
}

bool tpc_rolling_step(long long want, long long surge, long long unavail, struct rs_view *neu, struct rs_view *old,
		      size_t nold)
{
	long long total = neu ? neu->replicas : 0;
	for (size_t i = 0; i < nold; i++) {
		old[i].target = old[i].replicas;
		total += old[i].replicas;
	}
	if (neu) {
		neu->target = neu->replicas;
		if (neu->replicas > want) {
			neu->target = want;
			return true;
		}
		if (neu->replicas < want) {
			long long room = want + surge - total;
			if (room > 0) {
				neu->target += min_ll(room, want - neu->replicas);
				return true;
			}
		}
	}
	return scale_old_down(want, unavail, neu, old, nold);
}

bool tpc_recreate_step(long long want, long long old_pods, struct rs_view *neu, struct rs_view *old, size_t nold)
{
	bool changed = false;
	for (size_t i = 0; i < nold; i++) {
		old[i].target = 0;
		changed |= old[i].replicas != 0;
	}
	if (neu) {
		neu->target = neu->replicas;
		if (!changed && old_pods == 0 && neu->replicas != want) {
			neu->target = want;
			changed = true;
		}
	}
	return changed;
}

static const json_t *ready_condition(const json_t *pod)
{
	size_t i;
	json_t *c;
	json_array_foreach(json_path(pod, "status.conditions"), i, c) {
		const char *t = json_str(c, "type");
		if (t && strcmp(t, "Ready") == 0)
			return c;
	}
	return NULL;
}

bool tpc_pod_ready(const json_t *pod)
{
	const char *st = json_str(ready_condition(pod), "status");
	return st && strcmp(st, "True") == 0;
}

static time_t ready_since(const json_t *pod)
{
	time_t t = 0;
	const char *s = json_str(ready_condition(pod), "lastTransitionTime");
	if (!s || rfc3339_parse(s, &t) != 0)
		return 0;
	return t;
}

bool tpc_pod_available(const json_t *pod, long long min_ready_seconds, time_t now)
{
	if (!tpc_pod_ready(pod))
		return false;
	if (min_ready_seconds <= 0)
		return true;
	time_t since = ready_since(pod);
	return since > 0 && (long long)(now - since) >= min_ready_seconds;
}

bool tpc_pod_active(const json_t *pod)
{
	if (json_path(pod, "metadata.deletionTimestamp"))
		return false;
	const char *ph = json_path_str(pod, "status.phase");
	return !ph || (strcmp(ph, "Succeeded") != 0 && strcmp(ph, "Failed") != 0);
}

static int phase_rank(const json_t *pod)
{
	const char *ph = json_path_str(pod, "status.phase");
	if (!ph || strcmp(ph, "Pending") == 0)
		return 0;
	if (strcmp(ph, "Running") == 0)
		return 2;
	return 1;
}

static long long restarts(const json_t *pod)
{
	long long n = 0;
	size_t i;
	json_t *c;
	json_array_foreach(json_path(pod, "status.containerStatuses"), i, c)
		n += json_integer_value(json_object_get(c, "restartCount"));
	return n;
}

static time_t created(const json_t *pod)
{
	time_t t = 0;
	const char *s = json_path_str(pod, "metadata.creationTimestamp");
	if (s)
		rfc3339_parse(s, &t);
	return t;
}

int tpc_pod_delete_cmp(const json_t *a, const json_t *b)
{
	const char *na = json_path_str(a, "spec.nodeName"), *nb = json_path_str(b, "spec.nodeName");
	bool sa = na && *na, sb = nb && *nb;
	if (sa != sb)
		return sa ? 1 : -1;
	int pa = phase_rank(a), pb = phase_rank(b);
	if (pa != pb)
		return pa - pb;
	bool ra = tpc_pod_ready(a), rb = tpc_pod_ready(b);
	if (ra != rb)
		return ra ? 1 : -1;
	if (ra) {
		time_t ta = ready_since(a), tb = ready_since(b);
		if (ta != tb)
			return ta > tb ? -1 : 1;
	}
	long long xa = restarts(a), xb = restarts(b);
	if (xa != xb)
		return xa > xb ? -1 : 1;
	time_t ca = created(a), cb = created(b);
	if (ca != cb)
		return ca > cb ? -1 : 1;
	const char *ma = json_path_str(a, "metadata.name"), *mb = json_path_str(b, "metadata.name");
	return strcmp(ma ? ma : "", mb ? mb : "");
}

static int cmp_pods(const void *a, const void *b)
{
	return tpc_pod_delete_cmp(*(const json_t *const *)a, *(const json_t *const *)b);
}

void tpc_rank_for_deletion(const json_t **pods, size_t n)
{
	if (n > 1)
		qsort(pods, n, sizeof(*pods), cmp_pods);
}

long long tpc_next_batch(long long prev, long long remaining)
{
	long long next = prev <= 0 ? 1 : prev * 2;
	return next < remaining ? next : remaining;
}

