/* --system-reserved / --kube-reserved and node allocatable (see podlogic.h). */
#include <stdio.h>
#include <string.h>
#include "podlogic.h"
#include "ursa/errors.h"
#include "ursa/kinds.h"
#include "ursa/xalloc.h"

#define MAX_SPEC 1024

/* One "name=quantity" pair of the list (no separators inside): 0 or E_INVALID with err. */
static int reserve_one(const char *pair, size_t n, struct kl_reserved *r, struct buf *err)
{
	const char *eq = memchr(pair, '=', n);
	if (!eq || eq == pair || eq == pair + n - 1) {
		buf_addf(err, "\"%.*s\" is not name=quantity", (int)n, pair);
		return E_INVALID;
	}
	char name[32], value[64];
	size_t nl = (size_t)(eq - pair), vl = n - nl - 1;
	if (nl >= sizeof(name) || vl >= sizeof(value)) {
		buf_addf(err, "\"%.*s\" is too long", (int)n, pair);
		return E_INVALID;
	}
	memcpy(name, pair, nl);
	name[nl] = '\0';
	memcpy(value, eq + 1, vl);
	value[vl] = '\0';
	long long milli;
	if (quantity_parse_milli(value, &milli) != 0 || milli < 0) {
		buf_addf(err, "%s: \"%s\" is not a non-negative quantity", name, value);
		return E_INVALID;
	}
	long long *slot;
	if (strcmp(name, "cpu") == 0)
		slot = &r->cpu_m;
	else if (strcmp(name, "memory") == 0)
		slot = &r->mem_m;
	else if (strcmp(name, "pid") == 0)
		slot = &r->pids;
	else if (strcmp(name, "ephemeral-storage") == 0)
		slot = &r->storage_m;
	else {
		buf_addf(err, "unknown resource \"%s\" (cpu, memory, ephemeral-storage or pid)", name);
		return E_INVALID;
	}
	if (*slot >= 0) {
		buf_addf(err, "%s given twice", name);
		return E_INVALID;
	}
	if (slot == &r->pids) {
		if (milli % 1000 != 0) {
			buf_addf(err, "pid: \"%s\" is not a whole number", value);
			return E_INVALID;
		}
		milli /= 1000;
	}
	*slot = milli;
	return 0;
}

int kl_reserved_parse(const char *spec, struct kl_reserved *ret, struct buf *err)
{
	struct kl_reserved r = { -1, -1, -1, -1 };
	if (spec && strlen(spec) > MAX_SPEC) {
		buf_addf(err, "longer than %d characters", MAX_SPEC);
		return E_INVALID;
	}
	for (const char *p = spec; p && *p;) {
		const char *comma = strchr(p, ',');
		size_t n = comma ? (size_t)(comma - p) : strlen(p);
		if (n == 0 || (comma && !comma[1])) {
			buf_adds(err, "empty entry in the list");
			return E_INVALID;
		}
		if (reserve_one(p, n, &r, err))
			return E_INVALID;
		p = comma ? comma + 1 : NULL;
	}
	ret->cpu_m = r.cpu_m > 0 ? r.cpu_m : 0;
	ret->mem_m = r.mem_m > 0 ? r.mem_m : 0;
	ret->pids = r.pids > 0 ? r.pids : 0;
	ret->storage_m = r.storage_m > 0 ? r.storage_m : 0;
	return 0;
}

static long long sub_floor0(long long a, long long b)
{
	return a > b ? a - b : 0;
}

void kl_allocatable(const struct kl_res *capacity, const struct kl_reserved *system, const struct kl_reserved *kube,
		    struct kl_res *ret)
{
	ret->cpu_m = sub_floor0(sub_floor0(capacity->cpu_m, system->cpu_m), kube->cpu_m);
	ret->mem_m = sub_floor0(sub_floor0(capacity->mem_m, system->mem_m), kube->mem_m);
	ret->pods = capacity->pods;
}
