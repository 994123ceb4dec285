/* Resource requests and the admission check. */
#include <string.h>
#include "podlogic.h"
#include "ursa/errors.h"
#include "ursa/jsonutil.h"
#include "ursa/kinds.h"
#include "ursa/podsecurity.h"

int kl_pod_requests(const json_t *pod, struct kl_res *ret, struct buf *err)
{
	struct pod_requests r;
	int rc = pod_requests(pod, &r, err);
	if (rc == 0)
		*ret = (struct kl_res){ r.cpu_m, r.mem_m, 1 };
	return rc;
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

const char *kl_admit_isolation(const json_t *pod, struct buf *msg)
{
	if (!pod_security_applies(json_path_str(pod, "metadata.tenant")))
		return NULL;
	struct buf v = BUF_INIT;
	const char *reason = NULL;
	if (pod_security_violations(pod, &v) > 0) {
		buf_addf(msg, "violates %s: %s", POD_SECURITY_POLICY, buf_cstr(&v));
		reason = "TenantIsolation";
	}
	buf_release(&v);
	return reason;
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
