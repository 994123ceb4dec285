/* ursa-kubelet on the daemon skeleton (ursa/daemon.h): builds the kubelet, starts its threads,
 * runs until SIGINT/SIGTERM. `ursa-kubelet shim ...` runs the process runtime's container shim
 * instead (a subcommand of the skeleton's table). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <openssl/rand.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "images.h"
#include "kubelet.h"
#include "logs.h"
#include "stats.h"
#include "podlogic.h"
#include "shim.h"
#include "ursa/errors.h"
#include "ursa/kinds.h"
#include "ursa/log.h"
#include "ursa/daemon.h"
#include "ursa/timeutil.h"
#include "ursa/auth.h"
#include "ursa/xalloc.h"

static int mkdir_p(const char *path)
{
	char *p = xstrdup(path);
	int rc = 0;
	for (char *s = p + 1;; s++) {
		if (*s == '/' || *s == '\0') {
			char c = *s;
			*s = '\0';
			if (mkdir(p, 0755) != 0 && errno != EEXIST)
				rc = -1;
			*s = c;
			if (!c)
				break;
		}
	}
	free(p);
	return rc;
}

/* The kubelet's identity, kept in root-dir so a restarted kubelet is recognised as itself. */
static char *load_kubelet_id(const char *root)
{
	char *path = xasprintf("%s/kubelet-id", root);
	struct buf b = BUF_INIT;
	FILE *f = fopen(path, "r");
	if (f) {
		char chunk[128];
		size_t n = fread(chunk, 1, sizeof(chunk) - 1, f);
		fclose(f);
		while (n && (chunk[n - 1] == '\n' || chunk[n - 1] == ' '))
			n--;
		if (n >= 16)
			buf_add(&b, chunk, n);
	}
	if (!b.len) {
		unsigned char rnd[16];
		if (RAND_bytes(rnd, sizeof(rnd)) != 1) {
			for (size_t i = 0; i < sizeof(rnd); i++)
				rnd[i] = (unsigned char)((now_ms() >> (i % 8)) ^ getpid() ^ i);
		}
		for (size_t i = 0; i < sizeof(rnd); i++)
			buf_addf(&b, "%02x", rnd[i]);
		char *tmp = xasprintf("%s.tmp", path);
		f = fopen(tmp, "w");
		if (f) {
			fprintf(f, "%s\n", buf_cstr(&b));
			fclose(f);
			rename(tmp, path);
		}
		free(tmp);
	}
	free(path);
	return buf_detach(&b, NULL);
}

static int capacity(struct kubelet *k)
{
	if (k->opt.cpu) {
		if (quantity_parse_milli(k->opt.cpu, &k->cpu_m) != 0 || k->cpu_m <= 0) {
			fprintf(stderr, "ursa-kubelet: --cpu \"%s\" is not a positive quantity\n", k->opt.cpu);
			return -1;
		}
	} else {
		long n = sysconf(_SC_NPROCESSORS_ONLN);
		k->cpu_m = (n > 0 ? n : 1) * 1000LL;
	}
	if (k->opt.memory) {
		if (quantity_parse_milli(k->opt.memory, &k->mem_m) != 0 || k->mem_m <= 0) {
			fprintf(stderr, "ursa-kubelet: --memory \"%s\" is not a positive quantity\n", k->opt.memory);
			return -1;
		}
	} else {
		long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
		k->mem_m = (pages > 0 && psz > 0 ? (long long)pages * psz : 1LL << 30) * 1000LL;
	}
	k->max_pods = k->opt.max_pods;
	struct kl_reserved sys, kube;
	struct buf err = BUF_INIT;
	if (kl_reserved_parse(k->opt.system_reserved, &sys, &err) != 0 ||
	    kl_reserved_parse(k->opt.kube_reserved, &kube, &err) != 0) {
		fprintf(stderr, "ursa-kubelet: --system-reserved or --kube-reserved: %s\n", buf_cstr(&err));
		buf_release(&err);
		return -1;
	}
	struct kl_res cap = { k->cpu_m, k->mem_m, k->max_pods }, alloc;
	kl_allocatable(&cap, &sys, &kube, &alloc);
	k->alloc_cpu_m = alloc.cpu_m;
	k->alloc_mem_m = alloc.mem_m;
	return 0;
}

static char *hostname(void)
{
	char h[HOST_NAME_MAX + 1];  /* bounded by the kernel */
	if (gethostname(h, sizeof(h)) != 0)
		return xstrdup("localhost");
	h[sizeof(h) - 1] = '\0';
	for (char *c = h; *c; c++)
		if (*c >= 'A' && *c <= 'Z')
			*c = (char)(*c - 'A' + 'a');
	return xstrdup(h);
}

/* Waits until the node names are ours to use; -1 if another live kubelet holds one. */
static int wait_unique(struct kubelet *k, struct daemon *dm)
{
	for (int attempt = 0;; attempt++) {
		char *err = NULL;
		int rc = kl_nodes_check_unique(k, &err);
		if (rc == 0)
			return 0;
		if (rc == -1) {
			fprintf(stderr, "ursa-kubelet: %s\n", err);
			log_error("refusing to start", "reason=\"%s\"", err);
			free(err);
			return -1;
		}
		if (attempt % 10 == 0)
			log_warn("resource manager not reachable, retrying", "err=%s", err_reason(rc));
		if (daemon_sleep(dm, 1000))
			return -1;
	}
}

/* Image GC settings for the CRI runtime (the flags were checked). */
static int configure_cri_images(struct kubelet *k)
{
	int64_t min_age_ms, period_ms;
	if (imggc_parse_duration(k->opt.image_min_gc_age, &min_age_ms) != 0 ||
	    imggc_parse_duration(k->opt.image_gc_period, &period_ms) != 0)
		return -1;
	runtime_cri_configure_image_gc((int)k->opt.image_gc_high, (int)k->opt.image_gc_low, min_age_ms, period_ms);
	return 0;
}

/* Waits until the CRI runtime answers (containerd may start after the kubelet, or be restarting),
 * saying why at once and then every 30 s; -1 on SIGTERM/SIGINT or a malformed endpoint. */
static int wait_cri(struct kubelet *k, struct daemon *dm)
{
	for (int attempt = 0;; attempt++) {
		char why[512];
		int rc = runtime_cri_ping(why, sizeof(why));
		if (rc == 0) {
			if (attempt)
				log_info("container runtime answers", "endpoint=\"%s\"", k->opt.cri_endpoint);
			return 0;
		}
		if (rc == -1) {
			fprintf(stderr, "ursa-kubelet: --cri-endpoint: %s\n", why);
			return -1;
		}
		if (attempt == 0)
			fprintf(stderr, "ursa-kubelet: container runtime at %s not answering (%s); retrying\n",
				k->opt.cri_endpoint, why);
		if (attempt % 30 == 0)
			log_warn("container runtime not answering, retrying", "endpoint=\"%s\" err=\"%s\"",
				 k->opt.cri_endpoint, why);
		if (daemon_sleep(dm, 1000))
			return -1;
	}
}

static struct runtime *make_runtime(struct kubelet *k)
{
	char self[PATH_MAX];  /* readlink's result, bounded by PATH_MAX */
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	self[n > 0 ? n : 0] = '\0';
	char *dir = xasprintf("%s/runtime", k->opt.root_dir);
	struct runtime *rt = k->rt_ops->create(dir, self);
	kl_stats_set_runtime_root(dir);
	free(dir);
	return rt;
}

/* The kubelet and its server for /healthz and /containerLogs. */
struct kl_main {
	struct kubelet k;
	struct kl_logs *logs;
	struct kl_events *events; /* real nodes only */
	bool nodes; /* kl_nodes_init done */
};

static int check(void *ud)
{
	struct kl_main *m = ud;
	if (kl_options_check(&m->k.opt) != 0)
		return -1;
	m->k.hollow = m->k.opt.hollow_nodes > 0;
	return capacity(&m->k);
}

/* Frees what start built (in any state). */
static void release(struct kl_main *m)
{
	struct kubelet *k = &m->k;
	kl_events_stop(m->events);
	if (k->rt)
		k->rt_ops->destroy(k->rt);
	kl_events_free(m->events);
	m->events = NULL;
	if (m->nodes)
		kl_nodes_release(k);
	rest_free(k->rm);
	rest_creds_free(k->creds);
	free(k->kubelet_id);
	free(k->hostname);
}

/* The kubelet server (/healthz, /containerLogs), unless --port 0. */
static int start_server(struct kl_main *m)
{
	struct kubelet *k = &m->k;
	if (k->opt.port <= 0)
		return 0;
	char *listen = xasprintf("%s:%lld", k->opt.address, k->opt.port);
	char *err = NULL;
	char *token = k->opt.client_token_file ? auth_read_token_file(k->opt.client_token_file, &err) : NULL;
	if (k->opt.client_token_file && !token) {
		fprintf(stderr, "ursa-kubelet: --client-token-file: %s\n", err);
		free(err);
		free(listen);
		return -1;
	}
	m->logs = kl_logs_start(listen, k->opt.tls_cert, k->opt.tls_key, token, k->rt_ops, k->rt, &err);
	free(token);
	free(listen);
	if (!m->logs) {
		fprintf(stderr, "ursa-kubelet: kubelet server: %s\n", err);
		free(err);
		return -1;
	}
	return 0;
}

static int start(void *ud, struct daemon *dm, char **ret_err)
{
	struct kl_main *m = ud;
	struct kubelet *k = &m->k;
	char *err = NULL;
	(void)ret_err;
	k->hostname = hostname();
	k->boot_unix = now_ms() / 1000;
	if (!(k->creds = rest_creds_from_kubeconfig(k->opt.kubeconfig, &err))) {
		fprintf(stderr, "ursa-kubelet: %s\n", err);
		free(err);
		release(m);
		return 1;
	}
	k->rm = rest_new_with_creds(k->creds, rest_creds_server(k->creds), "ursa-kubelet");
	if (!k->rm || mkdir_p(k->opt.root_dir) != 0) {
		fprintf(stderr, "ursa-kubelet: cannot use server \"%s\" or create --root-dir \"%s\"\n",
			rest_creds_server(k->creds), k->opt.root_dir);
		release(m);
		return 1;
	}
	k->kubelet_id = load_kubelet_id(k->opt.root_dir);
	k->rt_ops = k->hollow || strcmp(k->opt.runtime, "fake") == 0 ? &runtime_fake : &runtime_process;
	if (!k->hollow && strcmp(k->opt.runtime, "cri") == 0) {
		k->rt_ops = &runtime_cri;
		runtime_cri_configure(k->opt.cri_endpoint, k->opt.cgroup_parent);
		kl_stats_configure(k->opt.cgroup_parent);
		runtime_cri_set_pod_max_pids(k->opt.pod_max_pids);
		runtime_cri_set_pod_start_parallelism((int)k->opt.pod_start_parallelism);
		if (configure_cri_images(k) != 0 || wait_cri(k, dm) != 0) {
			release(m);
			return 1;
		}
	}
	if (!k->hollow)
		m->events = kl_events_start(k);
	k->rt = make_runtime(k);
	if (!k->rt) {
		fprintf(stderr, "ursa-kubelet: cannot create the %s runtime under %s\n", k->rt_ops->name, k->opt.root_dir);
		release(m);
		return 1;
	}
	kl_nodes_init(k);
	m->nodes = true;
	if (wait_unique(k, dm) != 0 || start_server(m) != 0) {
		release(m);
		return 1;
	}
	k->wq = wq_new();
	kl_partitions_start(k);  /* its handlers only enqueue; the worker starts after it */
	k->pods = kl_pods_start(k);
	k->hb = kl_heartbeat_start(k);
	log_info("kubelet started", "nodes=%zu first=\"%s\" runtime=%s id=%s port=%lld", k->nnodes, k->nodes[0].name,
		 k->rt_ops->name, k->kubelet_id, k->opt.port);
	return 0;
}

static void stop(void *ud)
{
	struct kl_main *m = ud;
	struct kubelet *k = &m->k;
	kl_heartbeat_stop(k->hb);
	kl_events_stop(m->events); /* before the partitions it posts to */
	kl_pods_stop(k->pods);   /* first: it holds partition references */
	kl_partitions_stop(k->parts);
	kl_logs_stop(m->logs);
	wq_free(k->wq);
	release(m);
}

static const struct daemon_command commands[] = {
	{ "shim", shim_main },
	{ NULL, NULL },
};

int main(int argc, char **argv)
{
	static struct kl_main m;
	int n;
	struct opt *flags = kl_options_flags(&m.k.opt, &n);
	const struct daemon_def def = {
		.program = "ursa-kubelet", .summary = kl_summary, .component = "ursa-kubelet", .opts = flags,
		.nopts = n, .commands = commands, .check = check, .start = start, .stop = stop,
	};
	int rc = daemon_main(&def, &m, argc, argv);
	free(flags);
	return rc;
}
