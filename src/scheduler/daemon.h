/* ursa-scheduler's daemon: options, credentials, and the running scheduler (informers on
 * the partition's pods and registry of resource managers, node informers per resource
 * manager, workers that reserve and bind, leader election). */
#ifndef URSA_SCHED_DAEMON_H
#define URSA_SCHED_DAEMON_H
#include <stdbool.h>
#include "ursa/buf.h"
#include "ursa/client.h"

struct sched_options {
	const char *kubeconfig, *scheduler_name, *identity, *partition, *log_level, *health_listen;
	bool leader_elect, scheduled_events;
	long long workers, pct, max_nodes, lease_s, renew_s, retry_s, gc_s, stats_s, rm_down_s, chunk, idle_ms;
};
/* Fills o from argv (defaults first). -1 on bad flags (message printed). */
int sched_options_parse(struct sched_options *o, int argc, char **argv);

struct sched_daemon;
/* Starts informers (and, once leader, the workers). NULL with *ret_err on failure. */
struct sched_daemon *sched_daemon_start(const struct sched_options *o, char **ret_err);
/* True once the daemon lost its lease and must exit. */
bool sched_daemon_lost(struct sched_daemon *d);
/* Stops everything, releases the lease, logs the totals. */
void sched_daemon_stop(struct sched_daemon *d);

#endif
