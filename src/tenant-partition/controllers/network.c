/* The network controller: a tenant's Network gets its DNS service, `kube-dns` in `kube-system`
 * with the range's DNS address (IPNET_DNS_OFFSET: .10 of 10.96.0.0/16, as Kubernetes places
 * it; .1 is kept for the `kubernetes` service), and status.phase Ready with
 * status.dnsServiceIP once that service holds the address. No data path: nothing answers DNS. */
#include <stdlib.h>
#include <string.h>
#include "tpc.h"
#include "ursa/errors.h"
#include "ursa/ipnet.h"
#include "ursa/jsonutil.h"
#include "ursa/log.h"
#include "ursa/xalloc.h"

#define DNS_NS "kube-system"
#define DNS_NAME "kube-dns"

static json_t *dns_service(const char *ip)
{
	return json_pack("{s:s,s:s,s:{s:s,s:{s:s,s:s,s:s}},s:{s:{s:s},s:s,s:[{s:s,s:i,s:s,s:i},{s:s,s:i,s:s,s:i},"
			 "{s:s,s:i,s:s,s:i}]}}",
			 "apiVersion", "v1", "kind", "Service", "metadata", "name", DNS_NAME, "labels", "k8s-app",
			 "kube-dns", "kubernetes.io/cluster-service", "true", "kubernetes.io/name", "CoreDNS", "spec",
			 "selector", "k8s-app", "kube-dns", "clusterIP", ip, "ports", "name", "dns", "port", 53,
			 "protocol", "UDP", "targetPort", 53, "name", "dns-tcp", "port", 53, "protocol", "TCP",
			 "targetPort", 53, "name", "metrics", "port", 9153, "protocol", "TCP", "targetPort", 9153);
}

int tpc_sync_network(struct tpc *m, const char *key)
{
	struct tpc_live live;
	int rc = tpc_get_live(m, "networks", key, TPC_LIVE_TENANT_SCOPED, &live);
	if (rc <= 0)
		return rc;
	rc = 0;
	const char *t = live.tenant, *name = live.name;
	json_t *net = live.obj, *svc = NULL;
	struct buf np = BUF_INIT, sp = BUF_INIT, ipb = BUF_INIT;
	int code;
	tpc_path(&np, "networks", t, NULL, name);
	struct ipv4_net n;
	const char *cidr = json_path_str(net, "spec.serviceCIDR");
	if (ipv4_cidr_parse(cidr ? cidr : IPNET_DEFAULT_SERVICE_CIDR, &n, NULL) < 0)
		goto out;
	ipv4_format(n.base + IPNET_DNS_OFFSET, &ipb);
	tpc_path(&sp, "services", t, DNS_NS, DNS_NAME);
	code = tpc_get(m, sp.ptr, &svc);
	const char *phase = "Pending", *message = NULL;
	if (code == 404 && !strcmp(name, "default")) {
		json_t *body = dns_service(ipb.ptr), *resp = NULL;
		struct buf coll = BUF_INIT;
		tpc_path(&coll, "services", t, DNS_NS, NULL);
		code = tpc_send(m, "POST", coll.ptr, body, &resp);
		if (code == 201 || code == 200) {
			log_info("dns service created", "tenant=\"%s\" ip=%s", t, ipb.ptr);
			phase = "Ready";
		} else if (code == 422) {
			message = json_str(resp, "message"); /* the address is someone else's: say so */
			phase = "Failed";
		} else {
			rc = E_UNAVAILABLE; /* kube-system not there yet, or the server busy */
		}
		json_t *st = json_pack("{s:s,s:s,s:s?}", "phase", phase, "dnsServiceIP", ipb.ptr, "message", message);
		json_object_set_new(net, "status", st);
		json_decref(resp);
		json_decref(body);
		buf_release(&coll);
	} else if (code == 200) {
		const char *ip = json_path_str(svc, "spec.clusterIP");
		phase = ip && !strcmp(ip, ipb.ptr) ? "Ready" : "Failed";
		json_t *st = json_pack("{s:s,s:s}", "phase", phase, "dnsServiceIP", ipb.ptr);
		if (strcmp(phase, "Ready"))
			json_object_set_new(st, "message",
					    json_string("the kube-dns service does not hold the DNS address"));
		json_t *old = json_object_get(net, "status");
		if (old && json_equal(old, st)) {
			json_decref(st);
			goto out;
		}
		json_object_set_new(net, "status", st);
	} else if (code == 404) {
		json_object_set_new(net, "status", json_pack("{s:s,s:s}", "phase", "Pending", "dnsServiceIP", ipb.ptr));
	} else {
		rc = E_UNAVAILABLE;
		goto out;
	}
	buf_adds(&np, "/status");
	code = tpc_send(m, "PUT", np.ptr, net, NULL);
	if (code != 200 && code != 404)
		rc = code == 409 ? E_CONFLICT : E_UNAVAILABLE;
out:
	json_decref(svc);
	buf_release(&np);
	buf_release(&sp);
	buf_release(&ipb);
	tpc_live_release(&live);
	return rc;
}
