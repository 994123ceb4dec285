/* Parses a request path into what it addresses, as Arktos's RequestInfo does, without
 * knowing the resource table (the caller checks resource and scope against its table).
 *
 *   /api/{v}[/watch]/tenants/{t}/namespaces/{ns}/{res}[/{name}[/{sub}]]
 *   /apis/{g}/{v}[/watch]/tenants/{t}/...        the same under a group
 *   /api/v1/namespaces/{ns}/{res}/...            short paths: tenant is the caller's
 *   /api/v1/tenants/{t}/{res}[/{name}[/{sub}]]   tenant-scoped resources (e.g. namespaces)
 *   /api/v1/{res}[/{name}[/{sub}]]               cluster-scoped resources, or tenant-scoped ones in the
 *                                                caller's tenant (e.g. /api/v1/namespaces/ns1)
 *   /api/v1/tenants[/{name}[/{sub}]]             tenant objects: "tenants/{t}/status" and
 *                                                "tenants/{t}/finalize" are subresources, not a prefix
 *   /api/v1/namespaces/{ns}[/status|finalize]    the namespace object itself: resource "namespaces",
 *                                                name {ns}, namespace_ NULL (same under tenants/{t}/)
 * Everything else under /api or /apis (/api, /api/v1, /apis/{g}, /apis/{g}/{v}) is discovery.
 * Non-API paths (/version, /healthz, /openapi/...) are not handled here. */
#ifndef URSA_PATH_H
#define URSA_PATH_H
#include <stdbool.h>

enum path_kind {
	PATH_DISCOVERY_ROOT,  /* /api or /apis */
	PATH_DISCOVERY_GROUP, /* /apis/{g} */
	PATH_DISCOVERY_GV,    /* /api/v1 or /apis/{g}/{v} */
	PATH_RESOURCE,        /* addresses a resource (collection or object) */
};

struct path_info {
	enum path_kind kind;
	bool legacy_core;  /* /api (core group) rather than /apis */
	bool watch_prefix; /* ".../watch/..." form */
	char *group;       /* "" for core; owned */
	char *version;     /* owned; NULL for roots */
	char *tenant;      /* from "tenants/{t}/..."; NULL when the path has none (short path) */
	char *namespace_;  /* from "namespaces/{ns}/{res}"; NULL otherwise */
	char *resource;    /* plural, e.g. "pods"; NULL for discovery */
	char *name;        /* NULL for collections */
	char *subresource; /* NULL unless .../{name}/{sub} */
};

/* Parses path (no query string; percent-decoding of segments is done here). Returns 0, or
 * E_NOT_FOUND for paths that are not API paths or are malformed (empty segments, too many
 * segments, segments longer than 253 bytes, "..", NUL bytes). ret is filled only on success. */
int path_parse(const char *path, struct path_info *ret);
/* A client's tenant prefix: a tenant's kubeconfig names its server https://<front door>/tenants/<t>
 * (ursactl kubeconfig), since clients cache discovery per server URL and tenants see different
 * APIs (their CustomResourceDefinitions). Every front door (gateway, API server) drops it: when
 * path starts with "/tenants/<t>" (t non-empty), returns a new string t and sets *ret_rest to the
 * rest of path ("/" when nothing follows); else NULL (and *ret_rest = path). The caller checks
 * that t is the caller's tenant. */
char *path_client_prefix(const char *path, const char **ret_rest);

/* Many watches on one connection (POST, docs/architecture.md "Multiplexed watches"): served by
 * every API server (src/common/apiserver/watchmux.c), used by informer_start_mux. */
#define WATCHMUX_PATH "/ursa/v1/watches"
/* Tenant backup and restore (docs/operations.md): <this><tenant>/backup (GET, pages) and
 * <this><tenant>/restore (POST), served by tenant partitions' API servers (apiserver/backup.c),
 * used by ursactl tenant. */
#define TENANT_BACKUP_PATH "/ursa/v1/tenants/"
/* The reason of the cause a restore's 409 gives while an earlier tenant of the name is still
 * being emptied: the client waits and sends the batch again. */
#define RESTORE_LEFTOVERS_REASON "TenantStillBeingDeleted"
void path_info_release(struct path_info *p);

#endif
