/* Tenant isolation on a shared node (src/common/kinds/podsecurity.c): the pod settings that reach
 * past a pod's own sandbox into the node and so into every other tenant's pods on it. They are
 * Kubernetes' Pod Security Standards "baseline" level: privileged containers, host namespaces,
 * hostPath volumes, host ports, capabilities beyond the default set, AppArmor, SELinux, seccomp
 * Unconfined, unmasked /proc, unsafe sysctls and Windows HostProcess. The tenant partition's
 * admission refuses them (403) for every tenant but system, on pods and on the pod templates of
 * workloads; the kubelet refuses such a pod again. Pure functions. */
#ifndef URSA_PODSECURITY_H
#define URSA_PODSECURITY_H
#include <jansson.h>
#include <stdbool.h>
#include "ursa/buf.h"

/* The words of the refusal: "violates tenant isolation: <violations>". */
#define POD_SECURITY_POLICY "tenant isolation"

/* Whether the pods of tenant are held to the checks: true for every tenant but system, and for
 * NULL or "" (a pod that names no tenant). */
bool pod_security_applies(const char *tenant);

/* The violations of pod, a Pod or a pod template (an object with metadata and spec; borrowed),
 * appended to ret_msg (may be NULL) in Pod Security Admission's form, one "reason (details)" per
 * violated check in PSA's order (by check id), joined by ", ", e.g.
 *   privileged (container "c" must not set securityContext.privileged=true), hostPath volumes (volume "v")
 * Returns the number of checks violated, 0 when none. Malformed fields count as unset (validation
 * reports them). */
int pod_security_violations(const json_t *pod, struct buf *ret_msg);

/* The pod or pod template an object of resource group/plural carries (borrowed from obj): the pod
 * itself; spec.template of deployments, replicasets, statefulsets, daemonsets (apps), jobs (batch),
 * replicationcontrollers; template of podtemplates; spec.jobTemplate.spec.template of cronjobs.
 * NULL when the resource carries none or the object has no such field. *ret_is_template tells a
 * template from a pod. */
const json_t *pod_security_subject(const char *group, const char *plural, const json_t *obj, bool *ret_is_template);

#endif
