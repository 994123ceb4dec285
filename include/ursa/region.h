/* The region's topology as API objects (group ursa.io/v1, cluster scope, system tenant):
 * every resource manager holds the region's TenantPartitions, every tenant partition the
 * region's ResourceManagers, so daemons discover partitions at run time.
 *   TenantPartition  {spec: {endpoints: ["https://127.0.0.1:7101"]}}
 *   ResourceManager  {spec: {endpoints: ["https://127.0.0.1:7201"], zone: "az-1"}} */
#ifndef URSA_REGION_H
#define URSA_REGION_H
#include "ursa/api.h"

#define URSA_GROUP "ursa.io"
extern const struct api_strategy strategy_tenantpartition, strategy_resourcemanager;

/* Following the region's partitions (src/common/client/region.c) ---------------------------
 * How every daemon that talks to other partitions (kubelet and RM controller manager: the
 * tenant partitions; scheduler, TP controller manager, TP API server's pods/log: the resource
 * managers) reads the registry objects above. */
#define REGION_ENDPOINTS_MAX 16      /* endpoints kept per object */
#define REGION_ENDPOINT_LEN_MAX 2048 /* longer endpoints are skipped */

/* The endpoints of a TenantPartition or ResourceManager object as one comma-separated list
 * ("https://a,https://b", what rest_new takes as servers): non-strings, empty strings, strings
 * holding a comma or longer than REGION_ENDPOINT_LEN_MAX are skipped, at most
 * REGION_ENDPOINTS_MAX kept. A new string, or NULL when none is left. */
char *region_endpoints(const json_t *obj);

/* A set of partitions followed by name, each with the endpoints it is followed at and the
 * caller's value for it (a client, an informer, health state...). What the caller keeps is
 * made and freed through callbacks, called from the set's functions on the caller's thread and
 * under whatever lock the caller holds around them. Not thread-safe: callers serialize. */
struct region_follow {
	/* A partition to follow at servers: its value, or NULL to leave it out for now (it is
	 * offered again at its next sight). */
	void *(*open)(void *ud, const char *name, const char *servers, const json_t *obj);
	/* Optional. The partition moved to servers: val's replacement (val itself, changed, is
	 * fine), or NULL to go on at the old endpoints (offered again at its next sight). Without
	 * it a moved partition is closed, then opened again. */
	void *(*move)(void *ud, void *val, const char *servers, const json_t *obj);
	/* Optional. Every sight of a followed partition, after open or move. */
	void (*seen)(void *ud, void *val, const json_t *obj);
	/* The partition is no longer followed (it left the registry, lost its endpoints, moved
	 * without .move, or the set is released): frees val. Optional: without it the values
	 * closed wait in the set for region_peers_take_closed, for callers that must free them
	 * outside the lock they hold around the set (stopping an informer whose handlers take it). */
	void (*close)(void *ud, const char *name, void *val);
};
struct region_peer {
	char *name, *servers; /* owned by the set */
	void *val;            /* the caller's, never NULL */
	bool seen;            /* during a sweep */
};
struct region_peers {
	const struct region_follow *ops;
	void *ud;
	struct region_peer *v; /* n of them, in the order they were opened */
	size_t n, max;
	void **closed;         /* without .close: values closed and not yet taken */
	size_t nclosed;
};
struct informer;

/* An empty set following at most max partitions (further ones are left out). */
void region_peers_init(struct region_peers *s, const struct region_follow *ops, void *ud, size_t max);
/* Closes every partition and frees the set's memory (not s); without .close the values closed
 * are then taken with region_peers_take_closed, as after any change. */
void region_peers_release(struct region_peers *s);
/* Without .close: the values closed since the last call, in the order they were closed (a new
 * array the caller frees, or NULL when none), their count in *ret_n. */
void **region_peers_take_closed(struct region_peers *s, size_t *ret_n);
/* The partition called name, or NULL; borrowed until the set's next change. */
struct region_peer *region_peers_find(const struct region_peers *s, const char *name);
/* One sight of a registry object (added or updated): opens, moves or keeps its partition, and
 * closes it when the object has no usable endpoints left. Objects without a name are ignored. */
void region_peers_offer(struct region_peers *s, const json_t *obj);
/* The registry object called name is gone: closes its partition. True if there was one. */
bool region_peers_remove(struct region_peers *s, const char *name);
/* The sweep: offers every object of the registry informer's store, then closes the
 * partitions none of them named. */
void region_peers_sweep(struct region_peers *s, struct informer *registry);
/* The sweep in parts, for objects from elsewhere: begin, region_peers_offer each, end. */
void region_peers_sweep_begin(struct region_peers *s);
void region_peers_sweep_end(struct region_peers *s);

#endif
