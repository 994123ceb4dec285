/* A daemon's health and metrics endpoint, for the daemons that serve no API (scheduler,
 * controller managers): plain HTTP, meant for loopback (like the kubelet's healthz port), where
 * systemd watchdogs, load balancers' checks and Prometheus scrapers ask
 *   GET /healthz, /livez  200 "ok" while the process runs its loops
 *   GET /readyz           200 "ok" once started (leader or standby)
 *   GET /metrics          Prometheus text: ursa_leader, process start time, and the daemon's own
 * Anything else is 404, any method but GET and HEAD 405. */
#ifndef URSA_HEALTH_H
#define URSA_HEALTH_H
#include <stdbool.h>
#include "ursa/buf.h"

struct health_server;

/* The help text of each daemon's --health-listen flag (the example port is the caller's). */
#define HEALTH_LISTEN_HELP(example) \
	"serve /healthz, /readyz and /metrics over plain HTTP at this address (e.g. " example "; default: not served)"

/* Appends the daemon's own metric families (Prometheus text, "# HELP"/"# TYPE" lines
 * included) to out. Runs on a server thread: read only what is safe to read from there. */
typedef void (*health_metrics_fn)(void *ud, struct buf *out);

/* Serves at listen ("127.0.0.1:10259"). component labels ursa_leader. NULL with a message in
 * *ret_err (new string) when it cannot listen. */
struct health_server *health_start(const char *listen, const char *component, health_metrics_fn metrics, void *ud,
				   char **ret_err);
/* Leadership as ursa_leader reports it: 1 leader, 0 standby (before any call: 1, no election). */
void health_set_leader(struct health_server *h, bool leader);
/* NULL-safe. */
void health_stop(struct health_server *h);

/* Prometheus text helpers for health_metrics_fn: one counter or gauge family with one sample. */
void health_counter(struct buf *out, const char *name, const char *help, long long v);
void health_gauge(struct buf *out, const char *name, const char *help, long long v);

#endif
