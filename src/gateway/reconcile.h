/* The gateway's background thread: partition health checks (circuit breaker), the node ->
 * resource manager map, and repair of the tenant map (see reconcile.c). */
#ifndef URSA_GW_RECONCILE_H
#define URSA_GW_RECONCILE_H
#include "gw.h"

struct reconciler {
	struct registry *reg;   /* borrowed */
	const char *auth;       /* "Bearer <gateway token>" for its own reads, borrowed; may be NULL */
	int64_t resync_ms;        /* pending placements checked */
	int64_t sweep_ms;         /* whole tenant and node maps compared with the partitions */
	int64_t pending_grace_ms;
	atomic_bool stop;
	pthread_t thread;
};
int reconciler_start(struct reconciler *rc);
void reconciler_stop(struct reconciler *rc);
/* Lists every resource manager's nodes now (on a miss in the node map). Thread-safe. */
void reconciler_refresh_nodes(struct reconciler *rc);

#endif
