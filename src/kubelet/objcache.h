/* The ConfigMaps and Secrets the kubelet reads for its pods' volumes, shared by the pods of the
 * node for a short time: the periodic refresh of many pods naming one object (every pod's
 * kube-root-ca.crt) costs the partition one GET per object and period, not one per pod.
 * Thread-safe. A pod starting reads its objects fresh; only the refreshes use this. */
#ifndef URSA_KUBELET_OBJCACHE_H
#define URSA_KUBELET_OBJCACHE_H
#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

struct kl_objcache;
/* ttl_ms: how long an answer is reused. */
struct kl_objcache *kl_objcache_new(int64_t ttl_ms);
void kl_objcache_free(struct kl_objcache *c);
/* The answer stored for key (a partition and an object path) at most ttl ago: true, with
 * *ret_obj a new reference (NULL when the answer was not 200) and *ret_code the status; false
 * when there is none that fresh. */
bool kl_objcache_get(struct kl_objcache *c, const char *key, int64_t now_ms, json_t **ret_obj, int *ret_code);
/* Stores an answer (obj borrowed, may be NULL); answers older than ttl are dropped meanwhile. */
void kl_objcache_put(struct kl_objcache *c, const char *key, int64_t now_ms, json_t *obj, int code);
/* Entries held (for tests). */
size_t kl_objcache_size(struct kl_objcache *c);

#endif
