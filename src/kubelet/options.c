/* ursa-kubelet's flag table. */
#include <stdio.h>
#include <string.h>
#include "kubelet.h"
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
		.hollow_prefix = "hollow-node", .status_report_s = 300, .lease_s = 40,
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
		{ "root-dir", OPT_STRING, &o->root_dir, "directory for the kubelet's and runtime's state and logs" },
		{ "address", OPT_STRING, &o->address, "node InternalIP and the kubelet server's bind address" },
		{ "port", OPT_INT, &o->port, "kubelet server port (/healthz, /containerLogs); 0 disables it" },
		{ "tls-cert-file", OPT_STRING, &o->tls_cert, "PEM certificate of the kubelet server (HTTPS)" },
		{ "tls-private-key-file", OPT_STRING, &o->tls_key, "PEM private key of --tls-cert-file" },
		{ "client-token-file", OPT_STRING, &o->client_token_file,
		  "file holding the bearer token /containerLogs requires (the region token the tenant partitions' log proxy sends); without it the server asks for none" },
		{ "cpu", OPT_STRING, &o->cpu, "cpu capacity, a quantity (default: online CPUs)" },
		{ "memory", OPT_STRING, &o->memory, "memory capacity, a quantity (default: physical memory)" },
		{ "max-pods", OPT_INT, &o->max_pods, "pod capacity" },
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
	if (strcmp(o->runtime, "process") != 0 && strcmp(o->runtime, "fake") != 0 && strcmp(o->runtime, "cri") != 0) {
		fprintf(stderr, "ursa-kubelet: --runtime must be process, fake or cri, not \"%s\"\n", o->runtime);
		return -1;
	}
	if (strcmp(o->runtime, "cri") == 0 && o->hollow_nodes == 0 && (!o->cri_endpoint || !*o->cri_endpoint)) {
		fprintf(stderr, "ursa-kubelet: --runtime cri needs --cri-endpoint (e.g. unix:///run/containerd/containerd.sock)\n");
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
	if (!o->tls_cert != !o->tls_key) {
		fprintf(stderr, "ursa-kubelet: --tls-cert-file and --tls-private-key-file go together\n");
		return -1;
	}
	return 0;
}
