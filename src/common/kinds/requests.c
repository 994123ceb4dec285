/* A pod's resource requests, as the scheduler and the kubelet both count them. */
#include <stdint.h>
#include "ursa/errors.h"
#include "ursa/jsonutil.h"
#include "ursa/kinds.h"

static long long sat_add(long long a, long long b)
{
	if (b > 0 && a > INT64_MAX - b)
		return INT64_MAX;
	return a + b;
}

/* requests[name], else limits[name] (a limit alone implies an equal request), else 0. */
static int container_amount(const json_t *c, const char *name, long long *ret, struct buf *err)
{
	const json_t *res = json_object_get(c, "resources");
	const json_t *v = json_object_get(json_object_get(res, "requests"), name);
	if (!v)
		v = json_object_get(json_object_get(res, "limits"), name);
	*ret = 0;
	if (!v)
		return 0;
	long long m;
	if (json_is_integer(v)) {
		json_int_t n = json_integer_value(v);
		if (n >= 0 && n <= INT64_MAX / 1000) {
			*ret = (long long)n * 1000;
			return 0;
		}
	} else if (json_is_string(v) && quantity_parse_milli(json_string_value(v), &m) == 0 && m >= 0) {
		*ret = m;
		return 0;
	}
	if (err)
		buf_addf(err, "container \"%s\": invalid %s quantity", json_str(c, "name") ? json_str(c, "name") : "",
			 name);
	return E_INVALID;
}

static int sum_containers(const json_t *list, bool take_max, struct pod_requests *acc, struct buf *err)
{
	size_t i;
	const json_t *c;
	json_array_foreach(list, i, c) {
		long long cpu, mem;
		int rc = container_amount(c, "cpu", &cpu, err);
		if (rc == 0)
			rc = container_amount(c, "memory", &mem, err);
		if (rc)
			return rc;
		if (take_max) {
			acc->cpu_m = cpu > acc->cpu_m ? cpu : acc->cpu_m;
			acc->mem_m = mem > acc->mem_m ? mem : acc->mem_m;
		} else {
			acc->cpu_m = sat_add(acc->cpu_m, cpu);
			acc->mem_m = sat_add(acc->mem_m, mem);
		}
	}
	return 0;
}

int pod_requests(const json_t *pod, struct pod_requests *ret, struct buf *err)
{
	const json_t *spec = json_object_get(pod, "spec");
	struct pod_requests sum = { 0, 0 }, init = { 0, 0 };
	int rc = sum_containers(json_object_get(spec, "containers"), false, &sum, err);
	if (rc == 0)
		rc = sum_containers(json_object_get(spec, "initContainers"), true, &init, err);
	if (rc)
		return rc;
	if (init.cpu_m > sum.cpu_m)
		sum.cpu_m = init.cpu_m;
	if (init.mem_m > sum.mem_m)
		sum.mem_m = init.mem_m;
	*ret = sum;
	return 0;
}
