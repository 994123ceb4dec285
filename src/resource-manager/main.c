/* ursa-rm-apiserver: the API server of a resource manager (one per availability zone). */
#include "rm.h"

int main(int argc, char **argv)
{
	const struct apiserver_daemon d = {
		.program = "ursa-rm-apiserver",
		.summary = "The API server of an Ursa resource manager: nodes, node leases, daemonsets and system pods of one zone, and the region's registry of tenant partitions.",
		.component = "rm-apiserver",
		.default_listen = "127.0.0.1:7201",
		.default_partition = "rm-1",
		.resources = rm_resources,
		.nresources = rm_nresources,
		.system_namespaces = (const char *const[]){ "default", "kube-system", "kube-node-lease", NULL },
		/* Node lease renewals and status updates come one at a time and nobody waits on them:
		 * a few milliseconds buy several of them per etcd transaction. */
		.default_write_linger_ms = 5,
	};
	return apiserver_main(&d, argc, argv);
}
