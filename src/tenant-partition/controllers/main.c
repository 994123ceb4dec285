/* ursa-tp-controller-manager: the controllers of one tenant partition, active-standby through
 * a Lease. Exits when leadership is lost (a supervisor restarts it as a standby). */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "tpc.h"
#include "ursa/health.h"
#include "ursa/log.h"
#include "ursa/notify.h"
#include "ursa/options.h"
#include "ursa/xalloc.h"

#define LEASE_PATH "/apis/coordination.k8s.io/v1/tenants/system/namespaces/kube-system/leases/ursa-tp-controller-manager"

static volatile sig_atomic_t stopping;
static struct tpc mgr;
static struct health_server *health;

static void on_signal(int sig)
{
	(void)sig;
	stopping = 1;
}

static void on_leading(void *ud, bool leading)
{
	(void)ud;
	health_set_leader(health, leading);
	if (leading) {
		log_info("became leader", "%s", "");
		return;
	}
	if (stopping)
		return;
	log_error("lost leadership; exiting", "%s", "");
	_exit(1);
}

int main(int argc, char **argv)
{
	const char *kubeconfig = NULL, *identity = NULL, *controllers = "*", *level = "info", *health_listen = NULL;
	bool leader_elect = true;
	long long workers = 2, grace = 50, default_tol = 300, rm_period = 2;
	const char *evict_rate = "10";
	const struct opt opts[] = {
		{ "kubeconfig", OPT_STRING, &kubeconfig, "kubeconfig of the tenant partition's admin (system:masters)" },
		{ "leader-elect", OPT_BOOL, &leader_elect, "campaign for the Lease kube-system/ursa-tp-controller-manager" },
		{ "identity", OPT_STRING, &identity, "leader election identity (default hostname_pid)" },
		{ "workers", OPT_INT, &workers, "worker threads per controller" },
		{ "controllers", OPT_STRING, &controllers,
		  "comma list of tenant,namespace,replicaset,deployment,garbagecollector,rmloss "
		  "(* = all, -name disables one)" },
		{ "node-monitor-grace-period", OPT_INT, &grace,
		  "rmloss: seconds a resource manager may be unreachable before its nodes count as unreachable" },
		{ "default-unreachable-toleration-seconds", OPT_INT, &default_tol,
		  "rmloss: how long a pod without a toleration of node.kubernetes.io/unreachable stays" },
		{ "rm-monitor-period", OPT_INT, &rm_period, "rmloss: seconds between health checks of the resource managers" },
		{ "rmloss-eviction-rate", OPT_STRING, &evict_rate, "rmloss: pods per second this partition evicts at most" },
		{ "health-listen", OPT_STRING, &health_listen,
		  HEALTH_LISTEN_HELP("127.0.0.1:10257") },
		{ "log-level", OPT_STRING, &level, "debug, info, warn or error" },
	};
	if (opts_parse("ursa-tp-controller-manager", "Controllers of a tenant partition.", opts, ARRAY_SIZE(opts), argc,
		       argv) < 0)
		return 2;
	log_set_component("tp-controller-manager");
	log_set_level_name(level);
	if (!kubeconfig) {
		fprintf(stderr, "ursa-tp-controller-manager: --kubeconfig is required\n");
		return 2;
	}
	char *err = NULL;
	mgr.rest = rest_from_kubeconfig(kubeconfig, &err);
	if (!mgr.rest) {
		fprintf(stderr, "ursa-tp-controller-manager: %s\n", err ? err : "bad kubeconfig");
		free(err);
		return 2;
	}
	if (grace < 1 || grace > 86400 || default_tol < 0 || default_tol > 86400 * 365 || rm_period < 1 ||
	    rm_period > 3600 || tpc_parse_rate(evict_rate, &mgr.evict_rate) < 0) {
		fprintf(stderr, "ursa-tp-controller-manager: --node-monitor-grace-period, "
				"--default-unreachable-toleration-seconds, --rm-monitor-period or --rmloss-eviction-rate "
				"out of range\n");
		return 2;
	}
	mgr.kubeconfig = kubeconfig;
	mgr.grace_s = grace;
	mgr.default_tol_s = default_tol;
	mgr.rm_period_s = rm_period;
	if (health_listen && *health_listen) {
		health = health_start(health_listen, "ursa-tp-controller-manager", NULL, NULL, &err);
		if (!health) {
			fprintf(stderr, "ursa-tp-controller-manager: --health-listen %s: %s\n", health_listen, err);
			free(err);
			rest_free(mgr.rest);
			return 1;
		}
		health_set_leader(health, !leader_elect);
	}
	signal(SIGTERM, on_signal);
	signal(SIGINT, on_signal);
	signal(SIGPIPE, SIG_IGN);
	struct ctl_config cc = { .controllers = controllers,
				 .workers = workers < 1 ? 1 : workers > 64 ? 64 : (int)workers,
				 .rest = mgr.rest, .leader_elect = leader_elect, .lease_path = LEASE_PATH,
				 .identity = identity, .lease_duration_s = 15, .renew_deadline_s = 10,
				 .retry_period_s = 2, .start_on_leading = true, .on_leading = on_leading };
	if (tpc_manager_new(&mgr, &cc) < 0) {
		fprintf(stderr, "ursa-tp-controller-manager: unknown controller in --controllers %s\n", controllers);
		health_stop(health);
		rest_free(mgr.rest);
		return 2;
	}
	if (leader_elect)
		log_info("campaigning for leadership", "identity=\"%s\"", ctl_manager_identity(mgr.ctl));
	ctl_manager_start(mgr.ctl);
	notify_ready(); /* started: leader or standby */
	while (!stopping)
		usleep(100 * 1000);
	ctl_manager_free(mgr.ctl);
	health_stop(health);
	rest_free(mgr.rest);
	return 0;
}
