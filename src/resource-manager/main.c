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
		/* A worker is held for a request's whole etcd round trip, a lease renewal's for up to
		 * its heartbeat linger too: 10,000 nodes renew 250 leases/s, and on busy cores
		 * (the region simulation, 2 cores at load 80) a round trip took ~0.5 s, so 16 workers
		 * served ~30 renewals/s and hollow nodes' renewals fell 2 minutes behind (nodes went
		 * Ready=Unknown that were alive). Blocked workers cost a thread each, not CPU. */
		.default_workers = 128,
	};
	return apiserver_main(&d, argc, argv);
}
