/* Resource requests and the admission check. */
#include <string.h>
#include "podlogic.h"
#include "ursa/errors.h"
#include "ursa/jsonutil.h"
#include "ursa/kinds.h"

static long long sat_add(long long a, long long b)
{
	if (b > 0 && a > INT64_MAX - b)
		return INT64_MAX;
	return a + b;
}

/* One resource of one container: requests[name], else limits[name], else 0. */
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
		long long n = json_integer_value(v);
		if (n < 0 || n > INT64_MAX / 1000)
			goto bad;
		*ret = n * 1000;
		return 0;
	}
	if (!json_is_string(v) || quantity_parse_milli(json_string_value(v), &m) != 0 || m < 0)
		goto bad;
	*ret = m;
	return 0;
bad:
	buf_addf(err, "container \"%s\": invalid %s quantity", json_str(c, "name") ? json_str(c, "name") : "",
		 name);
	return E_INVALID;
}

static int sum_containers(const json_t *list, bool take_max, struct kl_res *acc, struct buf *err)
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

int kl_pod_requests(const json_t *pod, struct kl_res *ret, struct buf *err)
{
	const json_t *spec = json_object_get(pod, "spec");
	struct kl_res sum = { 0, 0, 1 }, init = { 0, 0, 1 };
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

/* Free amount, never negative. */
static long long room(long long alloc, long long used)
{
	return used >= alloc ? 0 : alloc - used;
}

const char *kl_admit(const struct kl_res *alloc, const struct kl_res *used, const struct kl_res *req,
		     struct buf *msg)
{
	if (used->pods + req->pods > alloc->pods) {
		buf_addf(msg, "Node didn't have enough resource: pods, requested: %lld, used: %lld, capacity: %lld",
			 req->pods, used->pods, alloc->pods);
		return "OutOfpods";
	}
	if (req->cpu_m > 0 && req->cpu_m > room(alloc->cpu_m, used->cpu_m)) {
		buf_addf(msg, "Node didn't have enough resource: cpu, requested: %lld, used: %lld, capacity: %lld",
			 req->cpu_m, used->cpu_m, alloc->cpu_m);
		return "OutOfcpu";
	}
	if (req->mem_m > 0 && req->mem_m > room(alloc->mem_m, used->mem_m)) {
		/* memory in bytes, rounded up, as Kubernetes prints it */
		buf_addf(msg, "Node didn't have enough resource: memory, requested: %lld, used: %lld, capacity: %lld",
			 req->mem_m / 1000 + (req->mem_m % 1000 != 0), used->mem_m / 1000 + (used->mem_m % 1000 != 0),
			 alloc->mem_m / 1000);
		return "OutOfmemory";
	}
	return NULL;
}

bool kl_phase_terminal(const char *phase)
{
	return phase && (strcmp(phase, "Succeeded") == 0 || strcmp(phase, "Failed") == 0);
}

long long kl_pod_grace(const json_t *pod)
{
	const json_t *g = json_path(pod, "metadata.deletionGracePeriodSeconds");
	if (!json_is_integer(g))
		g = json_path(pod, "spec.terminationGracePeriodSeconds");
	if (!json_is_integer(g))
		return 30;
	long long v = json_integer_value(g);
	if (v < 0)
		return 0;
	return v > 3600 ? 3600 : v;
}
