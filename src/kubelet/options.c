/* ursa-kubelet's flag table. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "images.h"
#include "kubelet.h"
#include "ursa/cri.h"
#include "ursa/options.h"
#include "ursa/xalloc.h"

const char kl_summary[] =
	"The Ursa node agent: registers its node with a resource manager, renews its lease, runs the pods "
	"bound to it from every tenant partition and reports their status. `ursa-kubelet shim ...` is the "
	"process runtime's container shim.";

struct opt *kl_options_flags(struct kl_options *o, int *ret_n)
{
	*o = (struct kl_options){
		.region = "local", .runtime = "process", .root_dir = "/var/lib/ursa-kubelet",
		.address = "127.0.0.1", .port = 10250, .max_pods = 110, .hollow_nodes = 0,
		.hollow_prefix = "hollow-node", .status_report_s = 300, .lease_s = 40, .image_gc_high = 85,
		.image_gc_low = 80, .image_min_gc_age = "2m", .image_gc_period = "5m", .pod_max_pids = 1024,
		.pod_start_parallelism = 4,
	};
	const struct opt opts[] = {
		{ "kubeconfig", OPT_STRING, &o->kubeconfig,
		  "kubeconfig of the resource manager; its token and CA are also used for every tenant partition" },
		{ "node-name", OPT_STRING, &o->node_name, "name of the node (default: the hostname)" },
		{ "zone", OPT_STRING, &o->zone, "zone label topology.kubernetes.io/zone" },
		{ "region", OPT_STRING, &o->region, "region label topology.kubernetes.io/region" },
		{ "runtime", OPT_STRING, &o->runtime, "container runtime: process, fake or cri" },
		{ "cri-endpoint", OPT_STRING, &o->cri_endpoint,
		  "CRI runtime endpoint for --runtime cri, e.g. unix:///run/containerd/containerd.sock" },
		{ "cgroup-parent", OPT_STRING, &o->cgroup_parent,
		  "cgroup under which --runtime cri puts each pod (<parent>/pod<uid>); default: the runtime's" },
		{ "image-gc-high-threshold", OPT_INT, &o->image_gc_high,
		  "--runtime cri: percent of the image filesystem's disk in use at which unused images are removed; "
		  "100 disables image garbage collection" },
		{ "image-gc-low-threshold", OPT_INT, &o->image_gc_low,
		  "--runtime cri: percent of disk usage image garbage collection frees down to (below the high "
		  "threshold)" },
		{ "image-minimum-gc-age", OPT_STRING, &o->image_min_gc_age,
		  "--runtime cri: minimum age of an unused image before it may be removed (a duration: 2m, 90s)" },
		{ "image-gc-period", OPT_STRING, &o->image_gc_period,
		  "--runtime cri: how often disk usage is checked for image garbage collection (a duration)" },
		{ "root-dir", OPT_STRING, &o->root_dir, "directory for the kubelet's and runtime's state and logs" },
		{ "address", OPT_STRING, &o->address, "node InternalIP and the kubelet server's bind address" },
		{ "port", OPT_INT, &o->port, "kubelet server port (/healthz, /containerLogs); 0 disables it" },
		{ "tls-cert-file", OPT_STRING, &o->tls_cert, "PEM certificate of the kubelet server (HTTPS)" },
		{ "tls-private-key-file", OPT_STRING, &o->tls_key, "PEM private key of --tls-cert-file" },
		{ "client-token-file", OPT_STRING, &o->client_token_file,
		  "file holding the bearer token /containerLogs requires (the region token the tenant partitions' log proxy sends); without it the server asks for none" },
		{ "api-front-door", OPT_STRING, &o->api_front_door,
		  "HOST:PORT of the region's front door (HAProxy or gateway) that pods reach the API at: their "
		  "KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT (unset: none); pods of --runtime cri with a network "
		  "of their own get the front door's service address 10.96.0.1:443 instead, which the node's ursa-cni "
		  "forwards to its front door" },
		{ "cpu", OPT_STRING, &o->cpu, "cpu capacity, a quantity (default: online CPUs)" },
		{ "memory", OPT_STRING, &o->memory, "memory capacity, a quantity (default: physical memory)" },
		{ "max-pods", OPT_INT, &o->max_pods, "pod capacity" },
		{ "system-reserved", OPT_STRING, &o->system_reserved,
		  "resources reserved for the system, e.g. cpu=500m,memory=1Gi (also ephemeral-storage, pid): "
		  "allocatable is capacity minus this and --kube-reserved" },
		{ "kube-reserved", OPT_STRING, &o->kube_reserved,
		  "resources reserved for Kubernetes' own daemons, same syntax as --system-reserved" },
		{ "pod-max-pids", OPT_INT, &o->pod_max_pids,
		  "--runtime cri: most processes (and threads) all containers of a pod may have together, set on the "
		  "pod's cgroup <--cgroup-parent>/pod<uid> (so it needs --cgroup-parent); 0 or -1: no limit" },
		{ "pod-start-parallelism", OPT_INT, &o->pod_start_parallelism,
		  "--runtime cri: how many pods are started at once (sandbox, network, containers; each pod's steps in "
		  "order), 1..64; stops run beside them, each on its own thread" },
		{ "hollow-nodes", OPT_INT, &o->hollow_nodes,
		  "simulate this many nodes in this process (fake runtime); 0 runs one real node" },
		{ "hollow-prefix", OPT_STRING, &o->hollow_prefix, "name prefix of hollow nodes (<prefix>-<i>)" },
		{ "node-status-report-seconds", OPT_INT, &o->status_report_s,
		  "post node status at least this often (and on every change)" },
		{ "lease-seconds", OPT_INT, &o->lease_s, "node lease duration; renewed every quarter of it" },
	};
	*ret_n = (int)ARRAY_SIZE(opts);
	struct opt *r = xmalloc(sizeof(opts));
	memcpy(r, opts, sizeof(opts));
	return r;
}

int kl_options_check(const struct kl_options *o)
{
	if (!o->kubeconfig) {
		fprintf(stderr, "ursa-kubelet: --kubeconfig is required\n");
		return -1;
	}
	if (o->api_front_door && *o->api_front_door) {
		const char *colon = strrchr(o->api_front_door, ':');
		char *end = NULL;
		long port = colon ? strtol(colon + 1, &end, 10) : 0;
		if (!colon || colon == o->api_front_door || !end || *end || port < 1 || port > 65535) {
			fprintf(stderr, "ursa-kubelet: --api-front-door must be HOST:PORT, not \"%s\"\n", o->api_front_door);
			return -1;
		}
	}
	if (strcmp(o->runtime, "process") != 0 && strcmp(o->runtime, "fake") != 0 && strcmp(o->runtime, "cri") != 0) {
		fprintf(stderr, "ursa-kubelet: --runtime must be process, fake or cri, not \"%s\"\n", o->runtime);
		return -1;
	}
	if (strcmp(o->runtime, "cri") == 0 && o->hollow_nodes == 0 && (!o->cri_endpoint || !*o->cri_endpoint)) {
		fprintf(stderr, "ursa-kubelet: --runtime cri needs --cri-endpoint (e.g. unix:///run/containerd/containerd.sock)\n");
		return -1;
	}
	if (strcmp(o->runtime, "cri") == 0 && o->cri_endpoint && *o->cri_endpoint &&
	    !cri_socket_path(o->cri_endpoint)) {
		fprintf(stderr, "ursa-kubelet: --cri-endpoint must be unix:///absolute/path/to/socket, not \"%s\"\n",
			o->cri_endpoint);
		return -1;
	}
	if (o->image_gc_high < 0 || o->image_gc_high > 100 || o->image_gc_low < 0 || o->image_gc_low > 100) {
		fprintf(stderr,
			"ursa-kubelet: --image-gc-high-threshold and --image-gc-low-threshold must be 0..100\n");
		return -1;
	}
	if (o->image_gc_low >= o->image_gc_high && o->image_gc_high < 100) {
		fprintf(stderr,
			"ursa-kubelet: --image-gc-low-threshold (%lld) must be less than "
			"--image-gc-high-threshold (%lld)\n",
			o->image_gc_low, o->image_gc_high);
		return -1;
	}
	int64_t ms;
	if (imggc_parse_duration(o->image_min_gc_age, &ms) != 0 || imggc_parse_duration(o->image_gc_period, &ms) != 0 ||
	    ms < 1000) {
		fprintf(stderr, "ursa-kubelet: --image-minimum-gc-age and --image-gc-period must be durations "
				"(e.g. 2m, 90s), the period at least 1s\n");
		return -1;
	}
	if (o->cgroup_parent && *o->cgroup_parent && o->cgroup_parent[0] != '/') {
		fprintf(stderr, "ursa-kubelet: --cgroup-parent must be an absolute cgroup path\n");
		return -1;
	}
	if (o->hollow_nodes < 0 || o->hollow_nodes > KL_MAX_NODES) {
		fprintf(stderr, "ursa-kubelet: --hollow-nodes must be 0..%d\n", KL_MAX_NODES);
		return -1;
	}
	if (o->port < 0 || o->port > 65535 || o->max_pods < 0 || o->max_pods > 100000 || o->lease_s < 4 ||
	    o->lease_s > 3600 || o->status_report_s < 1 || o->status_report_s > 86400) {
		fprintf(stderr, "ursa-kubelet: --port, --max-pods, --lease-seconds (4..3600) or "
				"--node-status-report-seconds out of range\n");
		return -1;
	}
	if (o->pod_start_parallelism < 1 || o->pod_start_parallelism > 64) {
		fprintf(stderr, "ursa-kubelet: --pod-start-parallelism must be 1..64\n");
		return -1;
	}
	if (o->pod_max_pids < -1 || o->pod_max_pids > 4194304) {
		fprintf(stderr, "ursa-kubelet: --pod-max-pids must be -1..4194304\n");
		return -1;
	}
	if (!o->tls_cert != !o->tls_key) {
		fprintf(stderr, "ursa-kubelet: --tls-cert-file and --tls-private-key-file go together\n");
		return -1;
	}
	return 0;
}
