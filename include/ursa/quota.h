/* Quotas and limit ranges: the pure parts shared by the ResourceQuota, LimitRange and Tenant
 * strategies (src/common/kinds/resourcequota.c, limitrange.c) and the API server's admission
 * (src/common/apiserver/quota.c). All json_t arguments are borrowed; nothing here locks. */
#ifndef URSA_QUOTA_H
#define URSA_QUOTA_H
#include <jansson.h>
#include <stdbool.h>
#include "ursa/api.h"
#include "ursa/buf.h"

/* What a quota's hard key measures. */
enum qres {
	QR_PODS,    /* pods that are not terminal (phase Succeeded/Failed) */
	QR_REQ_CPU, /* "requests.cpu" or "cpu" */
	QR_REQ_MEM, /* "requests.memory" or "memory" */
	QR_LIM_CPU,
	QR_LIM_MEM,
	QR_NPOD,    /* the number of pod measures above */
	QR_COUNT = QR_NPOD, /* objects of one resource ("services", "count/deployments.apps") */
};

/* Parses a hard key. For QR_COUNT, *ret_plural and *ret_group (static or pointing into name;
 * lengths in *ret_plural_len and *ret_group_len) name the counted resource. "count/pods" counts like
 * "pods". -1 for a key not supported. */
int quota_resource_parse(const char *name, enum qres *ret_kind, const char **ret_plural, size_t *ret_plural_len,
			 const char **ret_group, size_t *ret_group_len);
/* Whether a hard key's value counts in milli-units shown as quantities (cpu, memory) rather
 * than whole objects. */
static inline bool quota_resource_is_quantity(enum qres k) { return k >= QR_REQ_CPU && k <= QR_LIM_MEM; }

/* A pod's class: the bits its scopes test. */
enum { QCLASS_TERMINATING = 1, QCLASS_BESTEFFORT = 2 };
#define QCLASS_N 4
/* A quota's spec.scopes as bits the class must have (need) and must not have (forbid). */
struct quota_scopes {
	unsigned need, forbid;
};
/* Parses spec.scopes (absent/null: none). -1 when it is not an array of known scope names
 * (Terminating, NotTerminating, BestEffort, NotBestEffort). */
int quota_scopes_parse(const json_t *scopes, struct quota_scopes *ret);
static inline bool quota_scopes_any(struct quota_scopes s) { return s.need || s.forbid; }
static inline bool quota_scopes_match(struct quota_scopes s, unsigned cls)
{
	return (cls & s.need) == s.need && !(cls & s.forbid);
}

/* What a pod counts for: amounts indexed by enum qres < QR_NPOD (pods is 1, or 0 when the pod
 * is terminal), its class, and which of requests.cpu, requests.memory, limits.cpu,
 * limits.memory some container (or init container) leaves unset (bits 1 << QR_*). Requests and
 * limits are the larger of the containers' sum and the largest init container's. 0, or -1 when
 * a quantity does not parse. */
struct quota_pod {
	long long v[QR_NPOD];
	unsigned cls;
	unsigned missing;
};
int quota_pod_usage(const json_t *pod, struct quota_pod *ret);
bool quota_pod_terminal(const json_t *pod);

/* Validates a map of hard limits at field ("spec.hard"): keys supported, values quantities
 * (strings or numbers) >= 0; with scoped (a quota with scopes), only pod keys are allowed. */
void quota_hard_validate(const json_t *hard, const char *field, bool scoped, struct field_errors *errs);
/* A quantity value of a hard map (string or number) in milli-units, with *ret_binary true when
 * written with a binary suffix (Ki, Mi, ...). -1 when it is not a quantity. */
int quota_value_milli(const json_t *v, long long *ret_milli, bool *ret_binary);

/* Appends a quantity in canonical form: "500m", "2", "1Gi" (binary when binary and the value is
 * a whole multiple of 1024), "1k". Negative values print with a '-'. */
void quantity_format_milli(long long milli, bool binary, struct buf *out);

/* One resource of an "exceeded quota" message. */
struct quota_item {
	const char *name;
	long long requested, used, hard; /* milli-units for quantities, else whole numbers */
	bool quantity, binary;
};
/* Appends "<what>: <quota>, requested: a=1,b=2, used: a=3,b=4, limited: a=3,b=5" with items
 * sorted by name (items is reordered). what is "exceeded quota" or "exceeded tenant quota". */
void quota_exceeded_message(const char *what, const char *quota, struct quota_item *items, size_t n, struct buf *out);

/* LimitRange: applies the Container items' default (limits) and defaultRequest (requests) of
 * the LimitRange spec lr to every container and init container of pod that lacks them, then
 * checks their min and max. 0, or -1 with the messages appended to err as Kubernetes' error
 * aggregate prints them ("a" alone, "[a, b]" for several). A LimitRange that does not parse is
 * ignored. */
int limitrange_admit_pod(const json_t *lr_spec, json_t *pod, struct buf *err);

#endif
