/* Pod volumes on the node: each volume of a pod gets a directory <dir>/<volume name> (dir is
 * <root-dir>/volumes/<pod uid>), filled before the containers start and kept current while the pod
 * runs; each container's volumeMounts become rt_mounts (runtime.h) that the runtime mounts.
 *
 *   emptyDir          an empty directory (0777); medium Memory: a tmpfs mounted there, sized by
 *                     sizeLimit; a disk emptyDir over its sizeLimit gets the pod evicted
 *                     (kl_volumes_over_limit)
 *   configMap/secret  items (key, path, mode), defaultMode, optional; atomic writer (atomicdir.h)
 *   downwardAPI       items with fieldRef (metadata.name, namespace, uid, labels, annotations,
 *                     labels['k'], annotations['k'], spec.nodeName, spec.serviceAccountName,
 *                     status.hostIP, status.podIP) or resourceFieldRef (containerName required)
 *   projected         configMap, secret, downwardAPI and serviceAccountToken sources in one
 *                     directory; a token comes from TokenRequest (bound to the pod, audience,
 *                     expirationSeconds >= 600, default 3600) and is requested again once 80% of
 *                     its life has passed
 *   hostPath          the node's path itself (the system tenant only: admission and
 *                     kl_admit_isolation refuse it for tenants); type DirectoryOrCreate creates it
 * Unless spec.automountServiceAccountToken is false, every container without a mount at
 * KL_SA_MOUNT gets the default service-account volume there (token, ca.crt from the namespace's
 * ConfigMap kube-root-ca.crt, namespace) - as Kubernetes' admission adds "kube-api-access-*",
 * but made here and not written into the pod; its sources are optional (a missing token or CA
 * leaves the file out until a later refresh finds it).
 * configMap, secret, downwardAPI and projected mounts are read-only; subPath mounts one entry
 * of a volume (and, as in Kubernetes, does not see later updates). */
#ifndef URSA_KUBELET_VOLUMES_H
#define URSA_KUBELET_VOLUMES_H
#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include "podenv.h"
#include "runtime.h"
#include "ursa/buf.h"

#define KL_SA_MOUNT "/var/run/secrets/kubernetes.io/serviceaccount"
#define KL_SA_VOLUME "kube-api-access"
#define KL_ROOT_CA_CONFIGMAP "kube-root-ca.crt"

/* Where volume contents come from (the pod worker: the node's credential against the pod's
 * partition). get: as podenv_src's (configmaps and secrets of the pod's namespace, borrowed).
 * token: a TokenRequest for the pod's service account bound to the pod: 0 with a new token and
 * its expiry (unix seconds), else -1 with the reason in err. now: unix seconds. */
struct kl_vol_src {
	const json_t *(*get)(void *ud, bool secret, const char *name, int *ret_code);
	int (*token)(void *ud, const char *audience, long long expiration_s, char **ret_token, int64_t *ret_exp,
		     struct buf *err);
	void *ud;
	const struct podenv_ips *ips;
	const struct podenv_alloc *alloc;
	int64_t now;
};

/* Writes every volume of pod under dir (created) and, when spec is not NULL, fills each of its
 * containers' mounts. 0; E_NOT_FOUND with Kubernetes' message in err for a configmap, secret or
 * key that is missing and not optional (the pod waits, as Kubernetes' "FailedMount"); E_INVALID
 * for a volume or mount that can never work (unknown volume, bad subPath, a kind not supported).
 * Called again for a running pod (spec NULL) it brings contents up to date; unchanged volumes are
 * not touched. */
int kl_volumes_setup(const char *dir, const json_t *pod, const struct kl_vol_src *src, struct rt_pod *spec,
		     struct buf *err);

/* True when a disk emptyDir of pod under dir uses more than its sizeLimit: Kubernetes' eviction
 * message in msg ("Usage of EmptyDir volume \"x\" exceeds the limit \"1Mi\". "). */
bool kl_volumes_over_limit(const char *dir, const json_t *pod, struct buf *msg);

/* True when pod has volumes whose contents can change (configMap, secret, downwardAPI,
 * projected, the default service-account volume): worth a refresh now and then. */
bool kl_volumes_refreshable(const json_t *pod);

/* Unmounts the tmpfs volumes under dir and removes it. */
void kl_volumes_remove(const char *dir);

/* Downward API file contents of a map (labels, annotations): "k=\"v\"\n" lines sorted by key,
 * values quoted with \", \\, \n, \t escaped. Appended to out. */
void kl_volumes_map_text(const json_t *map, struct buf *out);

#endif
