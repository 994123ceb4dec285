/* ursa-rm-controller-manager on the daemon skeleton (ursa/daemon.h): runs the controller table
 * below on the controller engine (ursa/controller.h): the node lifecycle controller ticks every 250 ms, also
 * as a standby (it only observes then), the daemonset controller every second while leading. */
#include <stdio.h>
#include <stdlib.h>
#include "rmcm.h"
#include "ursa/controller.h"
#include "ursa/daemon.h"
#include "ursa/log.h"
#include "ursa/xalloc.h"

#define NL_PERIOD_MS 250
#define DS_SYNC_MS 1000
#define LEASE_PATH "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/ursa-rm-controller-manager"
#define NODES_PATH "/api/v1/nodes"
#define NODE_LEASES_PATH "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases"
#define NL_KEY "system/nodelifecycle/tick"
#define DS_KEY "system/daemonset/tick"

struct rmcm {
	struct rmcm_options o;
	struct rest_client *rm;
	struct rest_creds *creds;
	struct daemon *dm;
	struct ctl_manager *ctl;
	struct tp_set *tps;
	struct nodelifecycle *nl;
	struct dscontroller *dc;
};

static void on_leading(void *ud, bool leading)
{
	struct rmcm *r = ud;
	daemon_set_leader(r->dm, leading);
	if (leading)
		log_info("became leader", "lease=%s", "kube-system/ursa-rm-controller-manager");
	else
		log_warn("lost leadership", "lease=%s", "kube-system/ursa-rm-controller-manager");
}

static int nl_start(void *ud)
{
	struct rmcm *r = ud;
	r->tps = tp_set_start(r->rm, r->creds);
	r->nl = nodelifecycle_new(&r->o, r->rm, ctl_manager_informer(r->ctl, NODES_PATH),
				  ctl_manager_informer(r->ctl, NODE_LEASES_PATH), r->tps);
	return 0;
}

static void nl_stop(void *ud)
{
	struct rmcm *r = ud;
	nodelifecycle_free(r->nl);
	tp_set_free(r->tps);
}

/* Observes (and, leading, acts) once both informers have listed. */
static int nl_sync(void *ud, const char *key)
{
	struct rmcm *r = ud;
	(void)key;
	if (informer_synced(ctl_manager_informer(r->ctl, NODES_PATH)) &&
	    informer_synced(ctl_manager_informer(r->ctl, NODE_LEASES_PATH)))
		nodelifecycle_tick(r->nl, ctl_manager_leading(r->ctl));
	return 0;
}

static int ds_start(void *ud)
{
	struct rmcm *r = ud;
	r->dc = dscontroller_new(r->rm, ctl_manager_informer(r->ctl, NODES_PATH));
	return 0;
}

static void ds_stop(void *ud)
{
	dscontroller_free(((struct rmcm *)ud)->dc);
}

static int ds_sync(void *ud, const char *key)
{
	(void)key;
	dscontroller_sync(((struct rmcm *)ud)->dc);
	return 0;
}

static const struct ctl_def controllers[] = {
	{ "nodelifecycle", { { NODES_PATH, 0, ctl_key_none }, { NODE_LEASES_PATH, 0, ctl_key_none } }, nl_sync,
	  .tick_key = NL_KEY, .period_ms = NL_PERIOD_MS, .standby = true, .start = nl_start, .stop = nl_stop },
	{ "daemonset", { { NODES_PATH, 0, ctl_key_none } }, ds_sync, .tick_key = DS_KEY, .period_ms = DS_SYNC_MS,
	  .start = ds_start, .stop = ds_stop },
};

static int check(void *ud)
{
	return rmcm_options_check(&((struct rmcm *)ud)->o);
}

static int start(void *ud, struct daemon *dm, char **ret_err)
{
	struct rmcm *r = ud;
	char *err = NULL;
	r->dm = dm;
	r->rm = rest_from_kubeconfig(r->o.kubeconfig, &err);
	r->creds = r->rm ? rest_creds_from_kubeconfig(r->o.kubeconfig, &err) : NULL;
	if (!r->rm || !r->creds) {
		fprintf(stderr, "ursa-rm-controller-manager: %s\n", err ? err : "bad kubeconfig");
		free(err);
		rest_free(r->rm);
		return 1;
	}
	struct ctl_config cc = { .defs = controllers, .ndefs = ARRAY_SIZE(controllers),
				 .controllers = r->o.controllers, .workers = 1, .rest = r->rm, .ud = r,
				 .leader_elect = r->o.leader_elect, .lease_path = LEASE_PATH, .identity = r->o.identity,
				 .on_leading = on_leading };
	if (ctl_manager_new(&cc, &r->ctl) < 0) {
		*ret_err = xasprintf("unknown controller in --controllers %s", r->o.controllers);
		rest_creds_free(r->creds);
		rest_free(r->rm);
		return 2;
	}
	daemon_set_leader(dm, !r->o.leader_elect);
	ctl_manager_start(r->ctl);
	log_info("started", "identity=\"%s\" nodelifecycle=%d daemonset=%d grace_s=%lld period_s=%lld "
			    "default_toleration_s=%lld eviction_rate=%g secondary_rate=%g threshold=%g",
		 ctl_manager_identity(r->ctl), ctl_manager_enabled(r->ctl, "nodelifecycle"),
		 ctl_manager_enabled(r->ctl, "daemonset"), r->o.grace_s, r->o.period_s, r->o.default_tol_s, r->o.rate,
		 r->o.secondary, r->o.threshold);
	return 0;
}

static void stop(void *ud)
{
	struct rmcm *r = ud;
	log_info("stopping", "identity=\"%s\"", ctl_manager_identity(r->ctl));
	ctl_manager_free(r->ctl);
	rest_creds_free(r->creds);
	rest_free(r->rm);
}

int main(int argc, char **argv)
{
	static struct rmcm r;
	int n;
	struct opt *flags = rmcm_options_flags(&r.o, &n);
	const struct daemon_def def = {
		.program = "ursa-rm-controller-manager", .summary = rmcm_summary,
		.component = "ursa-rm-controller-manager", .opts = flags, .nopts = n,
		.health_example = "127.0.0.1:10258", .check = check, .start = start, .stop = stop,
	};
	int rc = daemon_main(&def, &r, argc, argv);
	free(flags);
	return rc;
}
