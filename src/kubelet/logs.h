/* The kubelet's HTTP endpoints (the apiserver's proxy target for `kubectl logs`):
 *   GET /healthz                                   "ok"
 *   GET /containerLogs/{namespace}/{pod}/{container}
 *       ?tenant=  (default "system")  tailLines=N  follow=true  timestamps=true
 *        limitBytes=N  sinceSeconds=N  sinceTime=RFC3339
 *   text/plain, the container's current log without the CRI prefix ("<ts> <text>" with
 *   timestamps=true). follow=true streams lines as they are appended and ends when the
 *   container has ended (the shim marks its log final) or its log is removed.
 *   GET /stats/usage                               resource usage of the node and its pods (stats.h)
 *   /exec/..., /attach/..., /portforward/...       streams (streams.h)
 *   404 for an unknown pod or container, 400 for bad parameters, 401 without the bearer token
 *   when one is configured, 405 for other methods. */
#ifndef URSA_KUBELET_LOGS_H
#define URSA_KUBELET_LOGS_H
#include <stddef.h>
#include "runtime.h"

struct kl_logs;

/* Starts serving on listen ("IPv4:PORT"), over TLS when both tls_cert and tls_key (PEM files)
 * are given. auth_token (may be NULL) is copied. ops/rt are borrowed and must outlive the
 * server; ops->log_path and ops->stream_target are called from server threads. NULL with *ret_err (new string)
 * on failure. */
struct kl_logs *kl_logs_start(const char *listen, const char *tls_cert, const char *tls_key, const char *auth_token,
			      const struct runtime_ops *ops, struct runtime *rt, char **ret_err);
/* Number of log responses in progress (following or not), for metrics and tests. */
size_t kl_logs_streams(struct kl_logs *l);
/* Ends every follower, stops the server and frees it. NULL is fine. */
void kl_logs_stop(struct kl_logs *l);

#endif
