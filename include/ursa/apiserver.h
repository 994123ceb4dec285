/* The generic Kubernetes-style API server shared by the tenant-partition and
 * resource-manager API servers: give it a table of resources and options, and it serves
 * them from its etcd with watch caches, discovery, OpenAPI, Tables, auth and metrics. */
#ifndef URSA_APISERVER_H
#define URSA_APISERVER_H
#include <stdbool.h>
#include <stddef.h>
#include "ursa/api.h"

struct apiserver;
struct apiserver_options {
	const char *component;       /* "tp-apiserver" (logs, metrics) */
	const char *listen;          /* "127.0.0.1:7101" */
	const char *tls_cert, *tls_key;
	const char *etcd_servers;    /* comma-separated */
	const char *etcd_prefix;     /* "/registry" */
	const char *token_file;      /* static tokens (CSV) */
	const char *token_public_key;/* verifies signed tokens */
	const char *identity_key;    /* gateways' identity-assertion key (auth.h); NULL: not accepted */
	/* PEM private key signing service-account tokens (serviceaccounts/token); NULL: not served */
	const char *sa_signing_key;
	const char *partition_id;
	const char *region_token_file; /* bearer token this server uses towards other partitions */
	const char *region_ca_file;    /* CA bundle for those connections and kubelets' */
	/* Bearer token sent to kubelets (/containerLogs): one the API servers do not accept, since
	 * every node holds it. NULL: the region token. */
	const char *kubelet_token_file;
	unsigned workers;
	long etcd_write_linger_ms;   /* etcd_options.write_linger_ms */
	long etcd_heartbeat_linger_ms; /* etcd_options.lazy_linger_ms, for resources marked heartbeat */
	long cache_trees_mb;         /* wcache_options.tree_budget of each resource, in MiB (0: none) */
	const struct api_resource *resources;
	size_t nresources;
	/* Fair shares (apiserver/fairshare.c): tenants' requests take seats of at most tenant_seats
	 * (0: no fair queuing: every request goes straight to a worker, first come first served),
	 * one tenant at most seats_per_tenant of them (0: three quarters); the rest wait in
	 * shuffle-sharded queues of queue_length (0: 50) for at most queue_wait_s (0: 15) seconds.
	 * A tenant may hold max_watches_per_tenant watches (0: no limit). */
	unsigned tenant_seats, seats_per_tenant, queue_length, queue_wait_s, max_watches_per_tenant;
	/* A wide request (a LIST of more than 500 of its tenant's objects) admitted while another
	 * tenant is served sends its reply through a kernel send buffer of this many bytes (SO_SNDBUF;
	 * 0: never bounded). */
	unsigned bulk_send_buffer;
	/* Start without serving: apiserver_listen serves (e.g. once the system namespaces exist). */
	bool defer_listen;
	/* Called after an object was created through the API (e.g. a Tenant's namespaces). */
	void (*on_created)(struct apiserver *s, const struct api_resource *r, const json_t *obj);
};

/* The authentication reviews every API server serves, as rows of its resource table: TokenReview
 * and SelfSubjectReview (v1, and v1beta1, which kubectl 1.27's `auth whoami` asks), create-only,
 * in the tenant's cluster scope (SCOPE_TENANT: short paths reach the caller's tenant). */
#define APISERVER_AUTHN_REVIEWS                                                                                       \
	{ "authentication.k8s.io", "v1", "tokenreviews", "tokenreview", "TokenReview", SCOPE_TENANT, { NULL }, 0,     \
	  false, false, &strategy_review, .ephemeral = true },                                                        \
	{ "authentication.k8s.io", "v1", "selfsubjectreviews", "selfsubjectreview", "SelfSubjectReview",             \
	  SCOPE_TENANT, { NULL }, 0, false, false, &strategy_review, .ephemeral = true },                             \
	{ "authentication.k8s.io", "v1beta1", "selfsubjectreviews", "selfsubjectreview", "SelfSubjectReview",        \
	  SCOPE_TENANT, { NULL }, 0, false, false, &strategy_review, .ephemeral = true }

struct apiserver;
/* Connects, starts the caches and the HTTP server. NULL with *ret_err (new string) on failure. */
struct apiserver *apiserver_start(const struct apiserver_options *o, char **ret_err);
void apiserver_stop(struct apiserver *s);
/* Starts serving (with defer_listen). 0, or -1 with *ret_err (new string). */
int apiserver_listen(struct apiserver *s, char **ret_err);
/* Creates an object directly in storage, with the same defaulting and validation as the API
 * (for server-side hooks). obj is borrowed. 0, E_ALREADY_EXISTS, E_INVALID, ... */
int apiserver_create(struct apiserver *s, const char *plural, const char *tenant, const char *ns, const json_t *obj);

/* Creates the default RBAC roles and bindings of tenant that are missing (servers that serve
 * RBAC; a no-op elsewhere). The server also does this at start for the system tenant and every
 * tenant that lacks them. */
void apiserver_bootstrap_tenant(struct apiserver *s, const char *tenant);

/* What distinguishes one API server daemon from another. */
struct apiserver_daemon {
	const char *program;           /* "ursa-tp-apiserver" */
	const char *summary;           /* one line for --help */
	const char *component;         /* "tp-apiserver" (logs) */
	const char *default_listen;
	const char *default_partition;
	const struct api_resource *resources;
	size_t nresources;
	void (*on_created)(struct apiserver *s, const struct api_resource *r, const json_t *obj);
	const char *const *system_namespaces; /* NULL-terminated; ensured in tenant system at start */
	long long default_write_linger_ms;    /* --etcd-write-linger-ms unless given */
	long long default_workers;            /* --workers unless given; 0: 16 */
};
/* Parses the common flags (--help lists them), serves until SIGTERM/SIGINT. Exit code. */
int apiserver_main(const struct apiserver_daemon *d, int argc, char **argv);

#endif
