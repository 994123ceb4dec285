/* policy/v1 PodDisruptionBudget arithmetic shared by the disruption controller (which keeps a
 * PDB's status) and the API server's eviction subresource (which honours it). Pure functions
 * over borrowed JSON; implemented in src/common/kinds/pdb.c. */
#ifndef URSA_PDB_H
#define URSA_PDB_H
#include <jansson.h>
#include <stdbool.h>
#include <time.h>

/* Seconds an entry of status.disruptedPods stays (the eviction wrote it; the pod's deletion is
 * expected to show within this), as Kubernetes' DeletionTimeout. */
#define PDB_DISRUPTED_TIMEOUT_S 120
#define PDB_MAX_DISRUPTED 2000 /* disruptedPods entries beyond this make evictions 403 */
#define PDB_EVICT_MESSAGE "Cannot evict pod as it would violate the pod's disruption budget."
#define PDB_CAUSE "DisruptionBudget"

/* Whether pdb's spec.selector picks pod: an absent or null selector picks none, an empty one
 * every pod (policy/v1); a selector that does not parse picks none. Namespaces are the
 * caller's business. */
bool pdb_selects(const json_t *pdb, const json_t *pod);
/* A pod the budget counts as healthy: Running, condition Ready True, not terminating. */
bool pdb_pod_healthy(const json_t *pod);
/* An IntOrString (integer, "N" or "N%") resolved against total, percentages rounded up.
 * E_INVALID when absent or malformed. */
int pdb_scaled(const json_t *v, long long total, long long *ret);
/* Whether spec needs the pods' controllers' scale (maxUnavailable, or a percent minAvailable);
 * otherwise expected pods are the matching pods. */
bool pdb_needs_scale(const json_t *spec);
/* desiredHealthy of spec given expected pods: minAvailable (scaled against expected), or
 * expected - maxUnavailable (never below 0). E_INVALID when neither resolves. */
int pdb_desired_healthy(const json_t *spec, long long expected, long long *ret);

/* The disruption controller's status for pdb (whose generation becomes observedGeneration)
 * from pods (array: the pods it selects in its namespace), expected and now: currentHealthy
 * counts healthy pods not named in the kept disruptedPods; disruptedPods keeps the entries of
 * pods still present, not terminating and younger than PDB_DISRUPTED_TIMEOUT_S;
 * disruptionsAllowed = max(0, currentHealthy - desiredHealthy); condition DisruptionAllowed
 * (SufficientPods / InsufficientPods) keeps its lastTransitionTime while its status holds.
 * *ret_recheck (may be NULL) is the time at which a kept entry expires, 0 when none. New
 * object, or NULL when the spec does not resolve. */
json_t *pdb_status_compute(const json_t *pdb, const json_t *pods, long long expected, time_t now,
			   time_t *ret_recheck);

/* What an eviction of pod does with pdb (one that selects it). */
enum pdb_verdict {
	PDB_EVICT_IGNORE,   /* delete without touching the budget (pod not counted, or unhealthy and the budget met) */
	PDB_EVICT_CONSUME,  /* take one of disruptionsAllowed (pdb_status_after_eviction) and delete */
	PDB_EVICT_STALE,    /* 429: the status is older than the spec (observedGeneration < generation) */
	PDB_EVICT_DENY,     /* 429: disruptionsAllowed is 0 */
	PDB_EVICT_FORBIDDEN /* 403: negative disruptionsAllowed or too many disruptedPods */
};
enum pdb_verdict pdb_eviction_verdict(const json_t *pdb, const json_t *pod);
/* pdb's status after consuming one disruption for pod_name at now (new object). */
json_t *pdb_status_after_eviction(const json_t *pdb, const char *pod_name, time_t now);

#endif
