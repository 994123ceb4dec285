/* ursa-rm-controller-manager: parses flags, starts the shared informers and leader election,
 * then runs the enabled controllers from one loop on the main thread while it leads. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "rmcm.h"
#include "ursa/health.h"
#include "ursa/log.h"
#include "ursa/notify.h"
#include "ursa/timeutil.h"
#include "ursa/xalloc.h"

#define LOOP_MS 250
#define DS_SYNC_MS 1000
#define LEASE_PATH "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/ursa-rm-controller-manager"
#define NODES_PATH "/api/v1/nodes"
#define NODE_LEASES_PATH "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases"

static volatile sig_atomic_t stopping;

static void on_signal(int sig)
{
	(void)sig;
	stopping = 1;
}

static void on_started(void *ud)
{
	(void)ud;
	log_info("became leader", "lease=%s", "kube-system/ursa-rm-controller-manager");
}

static void on_stopped(void *ud)
{
	(void)ud;
	log_warn("lost leadership", "lease=%s", "kube-system/ursa-rm-controller-manager");
}

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
	nanosleep(&ts, NULL);
}

int main(int argc, char **argv)
{
	struct rmcm_options o;
	if (rmcm_options_parse(&o, argc, argv) != 0)
		return 2;
	log_set_component("ursa-rm-controller-manager");
	log_set_level_name(o.log_level);
	char *err = NULL;
	struct rest_client *rm = rest_from_kubeconfig(o.kubeconfig, &err);
	struct rest_creds *creds = rm ? rest_creds_from_kubeconfig(o.kubeconfig, &err) : NULL;
	if (!rm || !creds) {
		fprintf(stderr, "ursa-rm-controller-manager: %s\n", err ? err : "bad kubeconfig");
		free(err);
		rest_free(rm);
		return 1;
	}
	struct health_server *health = NULL;
	if (o.health_listen && *o.health_listen &&
	    !(health = health_start(o.health_listen, "ursa-rm-controller-manager", NULL, NULL, &err))) {
		fprintf(stderr, "ursa-rm-controller-manager: --health-listen %s: %s\n", o.health_listen, err);
		free(err);
		rest_creds_free(creds);
		rest_free(rm);
		return 1;
	}
	signal(SIGPIPE, SIG_IGN);
	signal(SIGTERM, on_signal);
	signal(SIGINT, on_signal);

	bool run_nl = rmcm_controller_enabled(o.controllers, "nodelifecycle");
	bool run_ds = rmcm_controller_enabled(o.controllers, "daemonset");
	static const struct informer_handlers none = { 0 };
	struct informer *nodes = informer_start(rm, NODES_PATH, NULL, &none, NULL);
	struct informer *leases = run_nl ? informer_start(rm, NODE_LEASES_PATH, NULL, &none, NULL) : NULL;
	struct tp_set *tps = run_nl ? tp_set_start(rm, creds) : NULL;
	struct nodelifecycle *nl = run_nl ? nodelifecycle_new(&o, rm, nodes, leases, tps) : NULL;
	struct dscontroller *dc = run_ds ? dscontroller_new(rm, nodes) : NULL;

	char *identity = o.identity ? xstrdup(o.identity) : NULL;
	if (!identity) {
		char host[256] = "host";
		gethostname(host, sizeof(host) - 1);
		host[sizeof(host) - 1] = '\0';
		identity = xasprintf("%s_%ld", host, (long)getpid());
	}
	struct leader_elector *le = NULL;
	if (o.leader_elect) {
		struct leader_config lc = { .lease_path = LEASE_PATH, .identity = identity, .on_started = on_started,
					    .on_stopped = on_stopped };
		le = leader_start(rm, &lc);
	}
	log_info("started", "identity=\"%s\" nodelifecycle=%d daemonset=%d grace_s=%lld period_s=%lld "
			    "default_toleration_s=%lld eviction_rate=%g secondary_rate=%g threshold=%g",
		 identity, run_nl, run_ds, o.grace_s, o.period_s, o.default_tol_s, o.rate, o.secondary, o.threshold);
	notify_ready(); /* started: leader or standby */

	int64_t last_ds = 0;
	while (!stopping) {
		bool leader = !le || leader_is_leader(le);
		health_set_leader(health, leader);
		bool synced = informer_synced(nodes) && (!leases || informer_synced(leases));
		if (nl && synced)
			nodelifecycle_tick(nl, leader);
		if (dc && leader && mono_ms() - last_ds >= DS_SYNC_MS) {
			last_ds = mono_ms();
			dscontroller_sync(dc);
		}
		sleep_ms(LOOP_MS);
	}
	log_info("stopping", "identity=\"%s\"", identity);
	if (le)
		leader_stop(le);
	health_stop(health);
	dscontroller_free(dc);
	nodelifecycle_free(nl);
	tp_set_free(tps);
	if (leases)
		informer_stop(leases);
	informer_stop(nodes);
	rest_creds_free(creds);
	rest_free(rm);
	free(identity);
	return 0;
}
