/* ursa-kubelet: parse options, build the kubelet, start its threads, wait for a signal.
 * `ursa-kubelet shim ...` runs the process runtime's container shim instead. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <openssl/rand.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "kubelet.h"
#include "logs.h"
#include "shim.h"
#include "ursa/errors.h"
#include "ursa/kinds.h"
#include "ursa/log.h"
#include "ursa/notify.h"
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
static int wait_unique(struct kubelet *k, sigset_t *sigs)
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
		struct timespec ts = { 1, 0 };
		if (sigtimedwait(sigs, NULL, &ts) > 0)
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
	free(dir);
	return rt;
}

static int run(struct kubelet *k, sigset_t *sigs)
{
	struct kl_logs *logs = NULL;
	char *err = NULL;
	if (wait_unique(k, sigs) != 0)
		return 1;
	if (k->opt.port > 0) {
		char *listen = xasprintf("%s:%lld", k->opt.address, k->opt.port);
		char *terr = NULL;
		char *token = k->opt.client_token_file ? auth_read_token_file(k->opt.client_token_file, &terr) : NULL;
		if (k->opt.client_token_file && !token) {
			fprintf(stderr, "ursa-kubelet: --client-token-file: %s\n", terr);
			free(terr);
			return -1;
		}
		logs = kl_logs_start(listen, k->opt.tls_cert, k->opt.tls_key, token, k->rt_ops, k->rt, &err);
		free(token);
		free(listen);
		if (!logs) {
			fprintf(stderr, "ursa-kubelet: kubelet server: %s\n", err);
			free(err);
			return 1;
		}
	}
	k->wq = wq_new();
	kl_partitions_start(k);  /* its handlers only enqueue; the worker starts after it */
	k->pods = kl_pods_start(k);
	k->hb = kl_heartbeat_start(k);
	log_info("kubelet started", "nodes=%zu first=\"%s\" runtime=%s id=%s port=%lld", k->nnodes, k->nodes[0].name,
		 k->rt_ops->name, k->kubelet_id, k->opt.port);
	notify_ready();
	int sig = 0;
	sigwait(sigs, &sig);
	log_info("kubelet stopping", "signal=%d", sig);
	kl_heartbeat_stop(k->hb);
	kl_pods_stop(k->pods);   /* first: it holds partition references */
	kl_partitions_stop(k->parts);
	kl_logs_stop(logs);
	wq_free(k->wq);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "shim") == 0)
		return shim_main(argc - 1, argv + 1);
	struct kubelet k = { .hollow = false };
	if (kl_options_parse(&k.opt, argc, argv) != 0)
		return 2;
	log_set_component("ursa-kubelet");
	log_set_level_name(k.opt.log_level);
	k.hollow = k.opt.hollow_nodes > 0;
	k.hostname = hostname();
	k.boot_unix = now_ms() / 1000;
	if (capacity(&k) != 0)
		return 2;
	char *err = NULL;
	if (!(k.creds = rest_creds_from_kubeconfig(k.opt.kubeconfig, &err))) {
		fprintf(stderr, "ursa-kubelet: %s\n", err);
		return 1;
	}
	k.rm = rest_new_with_creds(k.creds, rest_creds_server(k.creds), "ursa-kubelet");
	if (!k.rm || mkdir_p(k.opt.root_dir) != 0) {
		fprintf(stderr, "ursa-kubelet: cannot use server \"%s\" or create --root-dir \"%s\"\n", rest_creds_server(k.creds),
			k.opt.root_dir);
		return 1;
	}
	k.kubelet_id = load_kubelet_id(k.opt.root_dir);
	k.rt_ops = k.hollow || strcmp(k.opt.runtime, "fake") == 0 ? &runtime_fake : &runtime_process;
	k.rt = make_runtime(&k);
	if (!k.rt) {
		fprintf(stderr, "ursa-kubelet: cannot create the %s runtime under %s\n", k.rt_ops->name, k.opt.root_dir);
		return 1;
	}
	kl_nodes_init(&k);

	sigset_t sigs;
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGINT);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);  /* before any thread starts: all inherit it */
	signal(SIGPIPE, SIG_IGN);

	int rc = run(&k, &sigs);
	k.rt_ops->destroy(k.rt);
	kl_nodes_release(&k);
	rest_free(k.rm);
	rest_creds_free(k.creds);
	free(k.kubelet_id);
	free(k.hostname);
	return rc;
}
