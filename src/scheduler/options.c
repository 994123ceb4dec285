/* ursa-scheduler's flag table. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "daemon.h"
#include "ursa/options.h"
#include "ursa/xalloc.h"

const char sched_summary[] =
	"The Ursa scheduler of one tenant partition: places the partition's pending pods (all tenants) on "
	"the nodes of every resource manager of the region, reserving room on each node in its resource "
	"manager before binding so that schedulers of several partitions never overcommit a node.";

struct opt *sched_options_flags(struct sched_options *o, int *ret_n)
{
	*o = (struct sched_options){
		.scheduler_name = "default-scheduler", .partition = "tp-1",
		.leader_elect = true, .scheduled_events = true, .workers = 64, .pct = 0, .max_nodes = 500,
		.lease_s = 6, .renew_s = 4, .retry_s = 1, .gc_s = 1, .stats_s = 10, .rm_down_s = 10,
		.chunk = 16, .idle_ms = 2000,
	};
	const struct opt opts[] = {
		{ "kubeconfig", OPT_STRING, &o->kubeconfig,
		  "kubeconfig of the tenant partition (system:masters); its token and CA are also used for the "
		  "resource managers" },
		{ "partition-id", OPT_STRING, &o->partition,
		  "this tenant partition's id in the region (the key of its reservations on nodes)" },
		{ "scheduler-name", OPT_STRING, &o->scheduler_name, "schedule only pods with this spec.schedulerName" },
		{ "leader-elect", OPT_BOOL, &o->leader_elect,
		  "elect one active scheduler through the Lease kube-system/ursa-scheduler of tenant system" },
		{ "leader-elect-lease-duration", OPT_INT, &o->lease_s, "lease duration in seconds" },
		{ "leader-elect-renew-deadline", OPT_INT, &o->renew_s, "give up leadership after this many seconds without renewal" },
		{ "leader-elect-retry-period", OPT_INT, &o->retry_s, "seconds between lease attempts" },
		{ "identity", OPT_STRING, &o->identity, "holder identity in the lease (default hostname_pid)" },
		{ "workers", OPT_INT, &o->workers, "pods scheduled in parallel (decisions are serialised, I/O is not)" },
		{ "percentage-of-nodes-to-score", OPT_INT, &o->pct,
		  "stop filtering once this percentage of the nodes was found feasible; 0 adaptive (50 % at 100 "
		  "nodes down to 5 %)" },
		{ "max-nodes-to-score", OPT_INT, &o->max_nodes,
		  "and never look for more than this many feasible nodes (0: no cap); keeps a decision's cost flat" },
		{ "reservation-chunk", OPT_INT, &o->chunk,
		  "when a node's reservation must grow, reserve room for this many pods like the one being placed "
		  "(at most half of the node's free room); later pods fit without a write. 1: one write per pod" },
		{ "reservation-idle-ms", OPT_INT, &o->idle_ms,
		  "release reserved room our pods do not use on a node where nothing was placed for this long" },
		{ "reservation-gc-seconds", OPT_INT, &o->gc_s,
		  "how often reserved room beyond our pods' use is looked for and released" },
		{ "rm-down-seconds", OPT_INT, &o->rm_down_s,
		  "a resource manager failing its health checks this long has its nodes taken out of scheduling" },
		{ "stats-seconds", OPT_INT, &o->stats_s, "how often to log the counters (0: never)" },
		{ "scheduled-events", OPT_BOOL, &o->scheduled_events, "record a Scheduled event for every bound pod" },
	};
	*ret_n = (int)ARRAY_SIZE(opts);
	struct opt *r = xmalloc(sizeof(opts));
	memcpy(r, opts, sizeof(opts));
	return r;
}

int sched_options_check(const struct sched_options *o)
{
	if (!o->kubeconfig) {
		fprintf(stderr, "ursa-scheduler: --kubeconfig is required\n");
		return -1;
	}
	if (o->workers < 1 || o->workers > 256 || o->pct < 0 || o->pct > 100 || o->max_nodes < 0 ||
	    o->lease_s < 2 || o->renew_s < 1 || o->renew_s >= o->lease_s || o->retry_s < 1 ||
	    o->retry_s >= o->renew_s + 1 || o->gc_s < 1 || o->stats_s < 0 || o->rm_down_s < 1 || o->chunk < 1 || o->chunk > 1000 ||
	    o->idle_ms < 0 || o->idle_ms > 3600 * 1000) {
		fprintf(stderr, "ursa-scheduler: --workers (1..256), --percentage-of-nodes-to-score (0..100), "
				"--reservation-chunk (1..1000), --reservation-idle-ms (0..3600000) or the lease "
				"timings (retry <= renew < duration) are out of range\n");
		return -1;
	}
	if (!*o->partition || strchr(o->partition, '"')) {
		fprintf(stderr, "ursa-scheduler: --partition-id must be a plain name\n");
		return -1;
	}
	return 0;
}
