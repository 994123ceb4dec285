/* A Node object turned into what the filters need, and the reservation annotation. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include "sched.h"
#include "ursa/jsonutil.h"
#include "ursa/kinds.h"
#include "ursa/xalloc.h"

#define RESERVED_MAX_LEN (64u << 10)
#define RESERVED_MAX_PARTITIONS 1024

static long long quantity(const json_t *res, const char *name)
{
	const json_t *v = json_object_get(res, name);
	long long m = 0;
	if (json_is_integer(v))
		return (long long)json_integer_value(v) * 1000;
	if (!json_is_string(v) || quantity_parse_milli(json_string_value(v), &m) != 0 || m < 0)
		return 0;
	return m;
}

static int effect_of(const char *s)
{
	if (!s)
		return 0;
	if (strcmp(s, "NoSchedule") == 0)
		return TAINT_NO_SCHEDULE;
	if (strcmp(s, "PreferNoSchedule") == 0)
		return TAINT_PREFER_NO_SCHEDULE;
	if (strcmp(s, "NoExecute") == 0)
		return TAINT_NO_EXECUTE;
	return 0;
}

static void free_taints(struct sched_node *n)
{
	for (size_t i = 0; i < n->ntaints; i++) {
		free(n->taints[i].key);
		free(n->taints[i].value);
	}
	free(n->taints);
	n->taints = NULL;
	n->ntaints = 0;
	n->taints_sig = 0;
}

static bool condition_true(const json_t *obj, const char *type)
{
	size_t i;
	const json_t *c;
	json_array_foreach(json_path(obj, "status.conditions"), i, c) {
		const char *t = json_str(c, "type"), *s = json_str(c, "status");
		if (t && strcmp(t, type) == 0)
			return s && strcmp(s, "True") == 0;
	}
	return false;
}

static void res_from_entry(const json_t *e, struct sched_res *r)
{
	const json_t *cpu = json_object_get(e, "cpu"), *mem = json_object_get(e, "memory"),
		     *pods = json_object_get(e, "pods");
	r->cpu_m = json_is_integer(cpu) && json_integer_value(cpu) > 0 ? (long long)json_integer_value(cpu) : 0;
	/* memory in bytes on the wire, milli-bytes inside */
	r->mem_m = json_is_integer(mem) && json_integer_value(mem) > 0 && json_integer_value(mem) < INT64_MAX / 1000
			   ? (long long)json_integer_value(mem) * 1000
			   : 0;
	r->pods = json_is_integer(pods) && json_integer_value(pods) > 0 ? (long long)json_integer_value(pods) : 0;
}

void sched_reserved_parse(const char *value, const char *partition, struct sched_res *ret_other,
			  struct sched_res *ret_own, json_t **ret_obj)
{
	struct sched_res other = { 0, 0, 0 }, own = { 0, 0, 0 };
	json_t *obj = NULL;
	if (value && strlen(value) <= RESERVED_MAX_LEN)
		obj = json_parse_limited(value, strlen(value), 4, NULL);
	if (!json_is_object(obj) || json_object_size(obj) > RESERVED_MAX_PARTITIONS) {
		json_decref(obj);
		obj = NULL;
	}
	const char *k;
	json_t *e;
	json_object_foreach(obj, k, e) {
		struct sched_res r;
		res_from_entry(e, &r);
		sched_res_add(strcmp(k, partition) == 0 ? &own : &other, &r);
	}
	*ret_other = other;
	*ret_own = own;
	if (ret_obj)
		*ret_obj = obj;
	else
		json_decref(obj);
}

char *sched_reserved_format(const json_t *cur, const char *partition, const struct sched_res *r)
{
	json_t *obj = json_is_object(cur) ? json_deep_copy(cur) : json_object();
	if (r->cpu_m == 0 && r->mem_m == 0 && r->pods == 0)
		json_object_del(obj, partition);
	else
		json_object_set_new(obj, partition,
				    json_pack("{s:I, s:I, s:I}", "cpu", (json_int_t)r->cpu_m, "memory",
					      (json_int_t)(r->mem_m / 1000 + (r->mem_m % 1000 != 0)), "pods",
					      (json_int_t)r->pods));
	char *s = json_dumps(obj, JSON_COMPACT | JSON_SORT_KEYS);
	json_decref(obj);
	return s;
}

void sched_node_set(struct sched_node *n, const json_t *obj, const char *rm, const char *partition)
{
	const json_t *alloc = json_path(obj, "status.allocatable");
	const char *zone = json_str(json_path(obj, "metadata.labels"), SCHED_ZONE_LABEL);
	const char *rv = json_path_str(obj, "metadata.resourceVersion");
	const json_t *ann = json_path(obj, "metadata.annotations");
	sched_node_clear(n);
	n->rm = xstrdup(rm ? rm : "");
	n->zone = xstrdup(zone ? zone : "");
	n->rv = xstrdup(rv ? rv : "");
	n->labels = json_incref(json_path(obj, "metadata.labels"));
	n->alloc.cpu_m = quantity(alloc, "cpu");
	n->alloc.mem_m = quantity(alloc, "memory");
	n->alloc.pods = quantity(alloc, "pods") / 1000;
	n->ready = condition_true(obj, "Ready");
	n->unschedulable = json_is_true(json_path(obj, "spec.unschedulable"));
	sched_reserved_parse(json_str(ann, SCHED_ANN_RESERVED), partition, &n->other, &n->own_reserved,
			     &n->reserved);
	const json_t *taints = json_path(obj, "spec.taints");
	size_t i, cnt = json_array_size(taints) < SCHED_MAX_ITEMS ? json_array_size(taints) : SCHED_MAX_ITEMS;
	const json_t *t;
	n->taints = xcalloc(cnt + 1, sizeof(*n->taints));
	json_array_foreach(taints, i, t) {
		if (i >= cnt)
			break;
		const char *k = json_str(t, "key"), *v = json_str(t, "value");
		n->taints[n->ntaints].key = xstrdup(k ? k : "");
		n->taints[n->ntaints].value = xstrdup(v ? v : "");
		n->taints[n->ntaints].effect = effect_of(json_str(t, "effect"));
		n->ntaints++;
	}
	n->taints_sig = sched_taints_sig(n->taints, n->ntaints);
	n->present = true;
}

/* Frees the object-derived fields; keeps name, used and idx. */
void sched_node_clear(struct sched_node *n)
{
	free(n->rm);
	free(n->zone);
	free(n->rv);
	json_decref(n->labels);
	json_decref(n->reserved);
	free_taints(n);
	n->rm = n->zone = n->rv = NULL;
	n->labels = n->reserved = NULL;
	n->alloc = n->other = n->own_reserved = (struct sched_res){ 0, 0, 0 };
	n->ready = n->unschedulable = n->present = false;
}

/* Reservation accounting ------------------------------------------------------------------ */

static long long min_ll(long long a, long long b)
{
	return a < b ? a : b;
}

void sched_reserved_effective(const struct sched_node *n, struct sched_res *ret)
{
	*ret = n->own_reserved;
	if (!n->writing)
		return;
	ret->cpu_m = min_ll(ret->cpu_m, n->write_target.cpu_m);
	ret->mem_m = min_ll(ret->mem_m, n->write_target.mem_m);
	ret->pods = min_ll(ret->pods, n->write_target.pods);
}

bool sched_reservation_covers(const struct sched_node *n)
{
	struct sched_res room;
	sched_reserved_effective(n, &room);
	return n->used.cpu_m <= room.cpu_m && n->used.mem_m <= room.mem_m && n->used.pods <= room.pods;
}

/* Headroom of one dimension: (chunk - 1) more of req, at most half of what nobody holds. */
static long long headroom(long long req, long long chunk, long long alloc, long long other, long long used)
{
	long long free_room = alloc - other - used;
	if (req <= 0 || free_room <= 0)
		return 0;
	long long want = req > (LLONG_MAX / 2) / chunk ? LLONG_MAX / 2 : req * (chunk - 1);
	return min_ll(want, free_room / 2);
}

void sched_reserve_target(const struct sched_node *n, const struct sched_res *req, long long chunk,
			  struct sched_res *ret)
{
	*ret = n->used;
	if (chunk <= 1)
		return;
	ret->cpu_m += headroom(req->cpu_m, chunk, n->alloc.cpu_m, n->other.cpu_m, n->used.cpu_m);
	ret->mem_m += headroom(req->mem_m, chunk, n->alloc.mem_m, n->other.mem_m, n->used.mem_m);
	ret->pods += headroom(req->pods, chunk, n->alloc.pods, n->other.pods, n->used.pods);
}
