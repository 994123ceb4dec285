/* A container's environment as Kubernetes' kubelet builds it: envFrom (configMapRef, secretRef,
 * with prefix and optional), env (value with $(VAR) expansion, valueFrom configMapKeyRef,
 * secretKeyRef, fieldRef, resourceFieldRef), then $(VAR) expansion of command and args. Pure:
 * the configmaps and secrets come through a callback, the pod's IPs and the node's allocatable
 * from the caller. The pod's own IP (status.podIP, status.podIPs) may be unknown when the spec
 * is built (CRI: the sandbox is not there yet): such entries are left for podenv_finish, which
 * the runtime calls once it knows the IP; expansion waits for it too. */
#ifndef URSA_KUBELET_PODENV_H
#define URSA_KUBELET_PODENV_H
#include <jansson.h>
#include <stdbool.h>
#include "runtime.h"
#include "ursa/buf.h"

/* Expands $(NAME) references in s as Kubernetes does: $(NAME) becomes lookup's value when it
 * returns non-NULL and stays as written otherwise; $$ gives $; $( without a closing ) and a $
 * before anything else stay as written. New string. */
typedef const char *(*podenv_lookup_fn)(void *ud, const char *name, size_t len);
char *podenv_expand(const char *s, podenv_lookup_fn lookup, void *ud);

/* True for a name Kubernetes accepts for an environment variable: [-._a-zA-Z][-._a-zA-Z0-9]*. */
bool podenv_valid_name(const char *name);

/* What the pod's IPs are for the downward API. host_ip: the node's; pod_ip/pod_ips: NULL while
 * unknown (deferred), else the pod's ("a" or "a,b"). */
struct podenv_ips {
	const char *host_ip, *pod_ip, *pod_ips;
};

/* A downward API field of the pod for env (fieldRef.fieldPath): metadata.name, .namespace, .uid,
 * .labels['k'], .annotations['k'], spec.nodeName, spec.serviceAccountName, status.hostIP(s),
 * status.podIP(s). 0 with a new string in *ret; 1 when it is the pod's IP and that is unknown
 * (*ret NULL: RT_ENV_POD_IP or RT_ENV_POD_IPS in *ret_kind); -1 for a path Kubernetes does not
 * support for env. */
int podenv_field(const json_t *pod, const char *path, const struct podenv_ips *ips, char **ret, int *ret_kind);

/* The node's allocatable, the default of a limit a container does not set (resourceFieldRef). */
struct podenv_alloc {
	long long cpu_m, mem_bytes, storage_bytes;
};

/* The quantity resources.<section>.<name> of container c (a JSON container) in milli-units: 0
 * and *ret 0 when absent, -1 when it does not parse or is negative. */
int podenv_res_milli(const json_t *c, const char *section, const char *name, long long *ret);

/* resourceFieldRef: resource (limits.cpu, limits.memory, limits.ephemeral-storage, requests.*) of
 * the container c, divided by divisor (a quantity; NULL or "": 1) and rounded up, as Kubernetes
 * does; limits not set are the node's allocatable. 0 with a new string, -1 with a message. */
int podenv_resource(const json_t *c, const char *resource, const char *divisor, const struct podenv_alloc *alloc,
		    char **ret, struct buf *err);

/* Where configmaps and secrets come from: get returns the object (borrowed until the build ends)
 * of the pod's namespace, or NULL with *ret_code (404 when it does not exist). */
struct podenv_src {
	const json_t *(*get)(void *ud, bool secret, const char *name, int *ret_code);
	void *ud;
	/* called for each envFrom source with keys that are not valid names (may be NULL): kind is
	 * "configMap" or "secret", keys comma-separated in sorted order */
	void (*invalid_keys)(void *ud, const char *kind, const char *name, const char *keys);
};

/* Fills rc->env (rc->nenv) from container c of pod, and expands rc->command and rc->args. 0, or
 * -1 with Kubernetes' message in err for what may resolve later (the container is then Waiting,
 * CreateContainerConfigError): `configmap "x" not found`, `couldn't find key k in ConfigMap ns/x`,
 * the same for secrets, a read error; -2 with a message for what never will (a fieldPath or a
 * resource that is not supported, a bad divisor, an unknown containerName, no source). When
 * ips->pod_ip is NULL and the pod's IP is asked for, the entries stay deferred (rc->env_pending)
 * until podenv_finish. Replaces what rc->env held. */
int podenv_build(const json_t *pod, const json_t *c, const struct podenv_ips *ips, const struct podenv_alloc *alloc,
		 const struct podenv_src *src, struct rt_container *rc, struct buf *err);

/* Fills deferred entries with the pod's IPs, expands $(VAR) in the literal env values (each with
 * the variables defined before it), command and args, and drops overridden duplicates. Nothing
 * when rc->env_pending is false. */
void podenv_finish(struct rt_container *rc, const char *pod_ip, const char *pod_ips);

/* A finished copy of rc's env, command and args for a launch (rc itself unchanged). */
struct podenv_copy {
	struct rt_container c; /* only env, nenv, command, args are owned */
};
const struct rt_container *podenv_finished(const struct rt_container *rc, const char *pod_ip,
					   struct podenv_copy *tmp);
void podenv_copy_release(struct podenv_copy *tmp);

#endif
