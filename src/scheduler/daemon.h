/* ursa-scheduler's daemon: options, credentials, and the running scheduler (informers on
 * the partition's pods and registry of resource managers, node informers per resource
 * manager, workers that reserve and bind, leader election). */
#ifndef URSA_SCHED_DAEMON_H
#define URSA_SCHED_DAEMON_H
#include <stdbool.h>
#include "ursa/buf.h"
#include "ursa/client.h"

struct sched_options {
	const char *kubeconfig, *scheduler_name, *identity, *partition;
	bool leader_elect, scheduled_events;
	long long workers, pct, max_nodes, lease_s, renew_s, retry_s, gc_s, stats_s, rm_down_s, chunk, idle_ms;
};
struct opt;
extern const char sched_summary[];
/* Sets o to the defaults and returns the flag table over its fields (new array of *ret_n;
 * --health-listen and --log-level are the daemon skeleton's). */
struct opt *sched_options_flags(struct sched_options *o, int *ret_n);
/* -1 (message printed) when the parsed flags are out of range. */
int sched_options_check(const struct sched_options *o);

struct sched_daemon;
struct health_server;
/* Starts informers (and, once leader, the workers); reports leadership to health (borrowed,
 * may be NULL). NULL with *ret_err on failure. */
struct sched_daemon *sched_daemon_start(const struct sched_options *o, struct health_server *health, char **ret_err);
/* The scheduler's metric families (health_metrics_fn over a started daemon). */
void sched_daemon_metrics(void *d, struct buf *out);
/* True once the daemon lost its lease and must exit. */
bool sched_daemon_lost(struct sched_daemon *d);
/* Stops everything, releases the lease, logs the totals. */
void sched_daemon_stop(struct sched_daemon *d);

#endif
