/* ursa-tp-apiserver: the API server of a tenant partition. */
#include "tp.h"

int main(int argc, char **argv)
{
	const struct apiserver_daemon d = {
		.program = "ursa-tp-apiserver",
		.summary = "The API server of an Ursa tenant partition: tenants and everything inside them, stored in the partition's etcd.",
		.component = "tp-apiserver",
		.default_listen = "127.0.0.1:7101",
		.default_partition = "tp-1",
		.resources = tp_resources,
		.nresources = tp_nresources,
		.on_created = tp_on_created,
		.system_namespaces = (const char *const[]){ "default", "kube-system", "kube-public", NULL },
	};
	return apiserver_main(&d, argc, argv);
}
