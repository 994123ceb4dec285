/* ursa-tp-controller-manager on the daemon skeleton (ursa/daemon.h): the controllers of one
 * tenant partition, active-standby through a Lease. Exits 1 when leadership is lost (a
 * supervisor restarts it as a standby). */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include "tpc.h"
#include "ursa/backup.h"
#include "ursa/daemon.h"
#include "ursa/log.h"
#include "ursa/xalloc.h"

#define LEASE_PATH "/apis/coordination.k8s.io/v1/tenants/system/namespaces/kube-system/leases/ursa-tp-controller-manager"

/* The flags and the running manager. */
struct tpcm {
	const char *kubeconfig, *identity, *controllers, *evict_rate, *root_ca_file, *final_backup_dir, *backup_key_file;
	bool leader_elect;
	long long workers, grace, default_tol, rm_period;
	struct tpc mgr;
	struct daemon *dm;
	atomic_bool stopping, lost;
};

static struct tpcm cm = {
	.controllers = "*", .evict_rate = "10", .leader_elect = true, .workers = 2, .grace = 50, .default_tol = 300,
	.rm_period = 2,
};

/* ud is the struct tpc (tpc_manager_new's): the manager is this file's one cm. */
static void on_leading(void *ud, bool leading)
{
	struct tpcm *c = &cm;
	(void)ud;
	daemon_set_leader(c->dm, leading);
	if (leading) {
		log_info("became leader", "%s", "");
		return;
	}
	if (atomic_load(&c->stopping))
		return;
	log_error("lost leadership; exiting", "%s", "");
	atomic_store(&c->lost, true);
}

static int check(void *ud)
{
	struct tpcm *c = ud;
	if (!c->kubeconfig) {
		fprintf(stderr, "ursa-tp-controller-manager: --kubeconfig is required\n");
		return -1;
	}
	if (c->grace < 1 || c->grace > 86400 || c->default_tol < 0 || c->default_tol > 86400 * 365 || c->rm_period < 1 ||
	    c->rm_period > 3600 || tpc_parse_rate(c->evict_rate, &c->mgr.evict_rate) < 0) {
		fprintf(stderr, "ursa-tp-controller-manager: --node-monitor-grace-period, "
				"--default-unreachable-toleration-seconds, --rm-monitor-period or --rmloss-eviction-rate "
				"out of range\n");
		return -1;
	}
	return 0;
}

static int start(void *ud, struct daemon *dm, char **ret_err)
{
	struct tpcm *c = ud;
	char *err = NULL;
	c->dm = dm;
	c->mgr.rest = rest_from_kubeconfig(c->kubeconfig, &err);
	if (!c->mgr.rest) {
		*ret_err = err ? err : xstrdup("bad kubeconfig");
		return 2;
	}
	c->mgr.kubeconfig = c->kubeconfig;
	if (c->root_ca_file && *c->root_ca_file) {
		FILE *f = fopen(c->root_ca_file, "r");
		struct buf ca = BUF_INIT;
		char chunk[4096];
		size_t n;
		while (f && (n = fread(chunk, 1, sizeof(chunk), f)) > 0 && ca.len < (1u << 20))
			buf_add(&ca, chunk, n);
		if (!f || ca.len == 0) {
			*ret_err = xasprintf("cannot read --root-ca-file %s", c->root_ca_file);
			if (f)
				fclose(f);
			buf_release(&ca);
			rest_free(c->mgr.rest);
			return 2;
		}
		fclose(f);
		c->mgr.root_ca = xstrdup(buf_cstr(&ca));
		buf_release(&ca);
	}
	if (c->final_backup_dir && *c->final_backup_dir)
		c->mgr.final_backup_dir = c->final_backup_dir;
	if (c->backup_key_file && *c->backup_key_file) {
		struct buf kerr = BUF_INIT;
		c->mgr.backup_key = xcalloc(1, sizeof(*c->mgr.backup_key));
		if (backup_key_load(c->backup_key_file, c->mgr.backup_key, &kerr) < 0) {
			*ret_err = xasprintf("--backup-key-file: %s", buf_cstr(&kerr));
			buf_release(&kerr);
			free(c->mgr.backup_key);
			c->mgr.backup_key = NULL;
			free(c->mgr.root_ca);
			c->mgr.root_ca = NULL;
			rest_free(c->mgr.rest);
			return 2;
		}
	}
	c->mgr.grace_s = c->grace;
	c->mgr.default_tol_s = c->default_tol;
	c->mgr.rm_period_s = c->rm_period;
	daemon_set_leader(dm, !c->leader_elect);
	struct ctl_config cc = { .controllers = c->controllers,
				 .workers = c->workers < 1 ? 1 : c->workers > 64 ? 64 : (int)c->workers,
				 .rest = c->mgr.rest, .leader_elect = c->leader_elect, .lease_path = LEASE_PATH,
				 .identity = c->identity, .lease_duration_s = 15, .renew_deadline_s = 10,
				 .retry_period_s = 2, .start_on_leading = true, .on_leading = on_leading };
	if (tpc_manager_new(&c->mgr, &cc) < 0) {
		*ret_err = xasprintf("unknown controller in --controllers %s", c->controllers);
		rest_free(c->mgr.rest);
		return 2;
	}
	if (c->leader_elect)
		log_info("campaigning for leadership", "identity=\"%s\"", ctl_manager_identity(c->mgr.ctl));
	ctl_manager_start(c->mgr.ctl);
	return 0;
}

static bool lost(void *ud)
{
	return atomic_load(&((struct tpcm *)ud)->lost);
}

static void stop(void *ud)
{
	struct tpcm *c = ud;
	atomic_store(&c->stopping, true);
	ctl_manager_free(c->mgr.ctl);
	tpc_manager_release(&c->mgr);
	free(c->mgr.root_ca);
	c->mgr.root_ca = NULL;
	if (c->mgr.backup_key)
		backup_key_forget(c->mgr.backup_key);
	free(c->mgr.backup_key);
	c->mgr.backup_key = NULL;
	rest_free(c->mgr.rest);
}

int main(int argc, char **argv)
{
	const struct opt opts[] = {
		{ "kubeconfig", OPT_STRING, &cm.kubeconfig, "kubeconfig of the tenant partition's admin (system:masters)" },
		{ "leader-elect", OPT_BOOL, &cm.leader_elect, "campaign for the Lease kube-system/ursa-tp-controller-manager" },
		{ "identity", OPT_STRING, &cm.identity, "leader election identity (default hostname_pid)" },
		{ "workers", OPT_INT, &cm.workers, "worker threads per controller (at least: the garbage collector has 20, namespace 10, replicaset, deployment, job, cronjob, endpoints, endpointslice and statefulset 5)" },
		{ "controllers", OPT_STRING, &cm.controllers,
		  "comma list of tenant,namespace,replicaset,deployment,garbagecollector,rmloss,job,cronjob,endpoints,"
		  "endpointslice,network,statefulset,disruption,root-ca-cert-publisher,customresourcecleanup "
		  "(* = all, -name disables one)" },
		{ "node-monitor-grace-period", OPT_INT, &cm.grace,
		  "rmloss: seconds a resource manager may be unreachable before its nodes count as unreachable" },
		{ "default-unreachable-toleration-seconds", OPT_INT, &cm.default_tol,
		  "rmloss: how long a pod without a toleration of node.kubernetes.io/unreachable stays" },
		{ "rm-monitor-period", OPT_INT, &cm.rm_period, "rmloss: seconds between health checks of the resource managers" },
		{ "rmloss-eviction-rate", OPT_STRING, &cm.evict_rate, "rmloss: pods per second this partition evicts at most" },
		{ "job-backoff-base-ms", OPT_INT, &cm.mgr.job_backoff_base_ms,
		  "job: first pod failure back-off in ms, doubling up to 36 times it (default 10000; tests shorten it)" },
		{ "root-ca-file", OPT_STRING, &cm.root_ca_file,
		  "root-ca-cert-publisher: PEM CA bundle of the API's front door, published in every namespace as the "
		  "ConfigMap kube-root-ca.crt (unset: none)" },
		{ "final-backup-dir", OPT_STRING, &cm.final_backup_dir,
		  "tenant: where the backup of a deleted tenant annotated ursa.io/final-backup=true is written "
		  "(<tenant>-<time>.backup; unset: such tenants wait, marked for deletion)" },
		{ "backup-key-file", OPT_STRING, &cm.backup_key_file,
		  "tenant: the region's backup key (one line, base64 of 32 bytes) sealing secrets in final backups" },
		{ "cronjob-now-offset", OPT_INT, &cm.mgr.cronjob_now_offset_s,
		  "cronjob: seconds added to the clock the schedules are run by (tests; default 0)" },
	};
	const struct daemon_def def = {
		.program = "ursa-tp-controller-manager", .summary = "Controllers of a tenant partition.",
		.component = "tp-controller-manager", .opts = opts, .nopts = (int)ARRAY_SIZE(opts),
		.health_example = "127.0.0.1:10257", .check = check, .start = start, .lost = lost, .stop = stop,
	};
	return daemon_main(&def, &cm, argc, argv);
}
