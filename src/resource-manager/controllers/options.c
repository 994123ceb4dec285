/* The flag table of ursa-rm-controller-manager. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "rmcm.h"
#include "ursa/options.h"
#include "ursa/xalloc.h"

const char rmcm_summary[] =
	"The controllers of an Ursa resource manager: node lifecycle (Ready=Unknown, NoExecute taints and "
	"rate-limited eviction of the node's pods in every tenant partition) and daemonsets of the system "
	"tenant. Active-standby through a Lease.";

/* Parses a non-negative finite decimal; 0 or -1. */
static int parse_rate(const char *s, double *ret)
{
	char *end = NULL;
	if (!s || !*s)
		return -1;
	double v = strtod(s, &end);
	if (*end || !(v >= 0) || v > 1e6)
		return -1;
	*ret = v;
	return 0;
}

struct opt *rmcm_options_flags(struct rmcm_options *o, int *ret_n)
{
	*o = (struct rmcm_options){
		.grace_s = 50, .period_s = 5, .default_tol_s = 300, .eviction_rate = "0.1",
		.secondary_rate = "0.01", .unhealthy_threshold = "0.55", .large_cluster = 50, .leader_elect = true,
		.controllers = "*",
	};
	const struct opt opts[] = {
		{ "kubeconfig", OPT_STRING, &o->kubeconfig,
		  "kubeconfig of the resource manager (admin); its token and CA are also used for every tenant partition" },
		{ "node-monitor-grace-period", OPT_INT, &o->grace_s,
		  "seconds without a heartbeat before a node becomes Ready=Unknown" },
		{ "node-monitor-period", OPT_INT, &o->period_s, "seconds between two checks of the nodes' heartbeats" },
		{ "default-toleration-seconds", OPT_INT, &o->default_tol_s,
		  "how long pods without an explicit toleration tolerate the not-ready/unreachable taints" },
		{ "node-eviction-rate", OPT_STRING, &o->eviction_rate, "nodes per second tainted for eviction per zone" },
		{ "secondary-node-eviction-rate", OPT_STRING, &o->secondary_rate,
		  "nodes per second when a large zone is partially disrupted" },
		{ "unhealthy-zone-threshold", OPT_STRING, &o->unhealthy_threshold,
		  "fraction of not-ready nodes (more than 2) that makes a zone partially disrupted" },
		{ "large-cluster-size-threshold", OPT_INT, &o->large_cluster,
		  "zones up to this many nodes stop evicting when partially disrupted" },
		{ "leader-elect", OPT_BOOL, &o->leader_elect,
		  "elect a leader through Lease kube-system/ursa-rm-controller-manager" },
		{ "identity", OPT_STRING, &o->identity, "leader election identity (default hostname_pid)" },
		{ "controllers", OPT_STRING, &o->controllers,
		  "controllers to run: '*' or a comma list of nodelifecycle,daemonset ('-name' disables one)" },
	};
	*ret_n = (int)ARRAY_SIZE(opts);
	struct opt *r = xmalloc(sizeof(opts));
	memcpy(r, opts, sizeof(opts));
	return r;
}

int rmcm_options_check(struct rmcm_options *o)
{
	if (!o->kubeconfig) {
		fprintf(stderr, "ursa-rm-controller-manager: --kubeconfig is required\n");
		return -1;
	}
	if (o->grace_s < 1 || o->grace_s > 86400 || o->period_s < 1 || o->period_s > 3600 || o->default_tol_s < 0 ||
	    o->default_tol_s > 86400 * 365 || o->large_cluster < 0 || o->large_cluster > 1000000) {
		fprintf(stderr, "ursa-rm-controller-manager: a period, grace, toleration or size flag is out of range\n");
		return -1;
	}
	if (parse_rate(o->eviction_rate, &o->rate) || parse_rate(o->secondary_rate, &o->secondary) ||
	    parse_rate(o->unhealthy_threshold, &o->threshold) || o->threshold > 1) {
		fprintf(stderr, "ursa-rm-controller-manager: rates must be numbers >= 0, the threshold in 0..1\n");
		return -1;
	}
	return 0;
}
