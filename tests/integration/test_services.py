"""Services, Endpoints, EndpointSlices and the tenant's Network against real etcd, a real
ursa-tp-apiserver and ursa-tp-controller-manager: cluster IP allocation at admission (distinct
under concurrent creates, headless, a chosen address, the 422s), the endpoints and
endpointslice controllers following ready pods (named target ports, a pod turning not ready, a
deleted pod, a deleted service), `kubectl expose`, `kubectl get endpoints`, `kubectl describe
service`, and the Network `default` and `kube-dns` objects of a new tenant.

No kubelet runs: a pod's address and readiness are set through pods/status as the admin, as a
kubelet would report them."""
import os
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from ursa_harness import *  # noqa: F401,F403
import ursa_harness as H

S = {}
NETWORKS = "/apis/arktos.futurewei.com/v1/tenants/%s/networks"


def svc_path(tenant="acme", ns="default", name=None):
    p = "/api/v1/tenants/%s/namespaces/%s/services" % (tenant, ns)
    return p + "/" + name if name else p


def ep_path(name, tenant="acme", ns="default"):
    return "/api/v1/tenants/%s/namespaces/%s/endpoints/%s" % (tenant, ns, name)


def slices(name, tenant="acme", ns="default"):
    p = "/apis/discovery.k8s.io/v1/tenants/%s/namespaces/%s/endpointslices" % (tenant, ns)
    return S["admin"].get(p + q(labelSelector="kubernetes.io/service-name=" + name)).json.get("items") or []


def setup():
    S.update(H.start_tp_with_controllers())  # kc: the tenant's administrator


def kc(*args, ok=True):
    rc, out, err = kubectl(list(args), S["kc"])
    if ok:
        check(rc == 0, "kubectl %s: rc=%s out=%s err=%s" % (" ".join(args), rc, out, err))
    return out, err


def svc(name, **spec):
    s = {"ports": [{"port": 80}]}
    s.update(spec)
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name}, "spec": s}


def pods(sel, tenant="acme", ns="default"):
    return S["admin"].get(pods_path(tenant, ns) + q(labelSelector=sel)).json.get("items") or []


def report(p, ip, ready, tenant="acme", ns="default"):
    """What a kubelet would write: the pod Running at ip, Ready or not."""
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    for _ in range(10):
        cur = S["admin"].get(pods_path(tenant, ns, p["metadata"]["name"])).json
        cur["status"] = {"phase": "Running", "podIP": ip, "podIPs": [{"ip": ip}],
                         "conditions": [{"type": "Ready", "status": "True" if ready else "False",
                                         "lastTransitionTime": now}]}
        r = S["admin"].put(pods_path(tenant, ns, p["metadata"]["name"]) + "/status", cur)
        if r.status == 200:
            return
    raise AssertionError("pod status not written: %r" % r)


def ready_ips(name):
    ep = S["admin"].get(ep_path(name))
    if ep.status != 200:
        return None
    return sorted(a["ip"] for s in ep.json.get("subsets") or [] for a in s.get("addresses") or [])


# ---- the tenant's network ---------------------------------------------------------------------

def test_network_and_dns_of_new_tenant():
    net = wait_until(lambda: (lambda r: r.json if r.status == 200 and
                              (r.json.get("status") or {}).get("phase") == "Ready" else None)(
        S["admin"].get(NETWORKS % "acme" + "/default")), 30, "network default of acme Ready")
    eq(net["kind"], "Network", "kind")
    eq(net["spec"]["serviceCIDR"], "10.96.0.0/16", "service CIDR")
    eq(net["status"]["dnsServiceIP"], "10.96.0.10", "DNS address")
    dns = S["admin"].get(svc_path(ns="kube-system", name="kube-dns"))
    expect_status(dns, 200, "kube-dns")
    eq(dns.json["spec"]["clusterIP"], "10.96.0.10", "kube-dns cluster IP")
    eq(sorted((p["name"], p["protocol"], p["port"]) for p in dns.json["spec"]["ports"]),
       [("dns", "UDP", 53), ("dns-tcp", "TCP", 53), ("metrics", "TCP", 9153)], "kube-dns ports")
    out, _ = kc("get", "networks")
    check("default" in out and "10.96.0.0/16" in out and "10.96.0.10" in out and "Ready" in out, out)
    # a second tenant: its own network and DNS service, same addresses (tenants are isolated)
    H.create_tenant(S["admin"], "beta")
    wait_until(lambda: S["admin"].get(svc_path("beta", "kube-system", "kube-dns")).json.get("spec", {})
               .get("clusterIP") == "10.96.0.10", 30, "kube-dns of beta")
    eq(S["admin"].get(NETWORKS % "beta" + "/default").json["spec"]["serviceCIDR"], "10.96.0.0/16", "beta CIDR")
    # kube-dns deleted: its network's controller makes it again
    expect_status(S["admin"].delete(svc_path("beta", "kube-system", "kube-dns")), 200, "delete kube-dns")
    wait_until(lambda: S["admin"].get(svc_path("beta", "kube-system", "kube-dns")).status == 200, 30,
               "kube-dns made again")


# ---- cluster IPs --------------------------------------------------------------------------------

def test_concurrent_cluster_ips_distinct():
    results = [None] * 20

    def create(i):
        c = S["api"].admin()
        results[i] = c.post(svc_path(), svc("par-%d" % i))
    ts = [threading.Thread(target=create, args=(i,)) for i in range(20)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    ips = []
    for i, r in enumerate(results):
        expect_status(r, 201, "create par-%d" % i)
        ip = r.json["spec"]["clusterIP"]
        eq(r.json["spec"]["clusterIPs"], [ip], "clusterIPs of par-%d" % i)
        check(ip.startswith("10.96.") and ip not in ("10.96.0.0", "10.96.0.1", "10.96.0.10"), ip)
        ips.append(ip)
    eq(len(set(ips)), 20, "distinct addresses: %r" % ips)
    # stored as answered
    got = S["admin"].get(svc_path(name="par-7")).json["spec"]["clusterIP"]
    eq(got, ips[7], "stored address")
    # an update that leaves the address out keeps it
    cur = S["admin"].get(svc_path(name="par-7")).json
    del cur["spec"]["clusterIP"]
    del cur["spec"]["clusterIPs"]
    cur["metadata"]["labels"] = {"x": "y"}
    r = S["admin"].put(svc_path(name="par-7"), cur)
    expect_status(r, 200, "update without clusterIP")
    eq(r.json["spec"]["clusterIP"], ips[7], "address kept on update")
    cur = r.json
    cur["spec"]["clusterIP"] = "10.96.77.77"
    cur["spec"]["clusterIPs"] = ["10.96.77.77"]
    expect_status(S["admin"].put(svc_path(name="par-7"), cur), 422, "changing the address", "Invalid")


def test_headless_and_chosen_ip():
    r = S["admin"].post(svc_path(), svc("headless", clusterIP="None"))
    expect_status(r, 201, "headless")
    eq(r.json["spec"]["clusterIP"], "None", "headless clusterIP")
    eq(r.json["spec"]["clusterIPs"], ["None"], "headless clusterIPs")
    r = S["admin"].post(svc_path(), svc("chosen", clusterIP="10.96.5.5"))
    expect_status(r, 201, "chosen address")
    eq(r.json["spec"]["clusterIP"], "10.96.5.5", "chosen address kept")
    r = S["admin"].post(svc_path(), svc("taken", clusterIP="10.96.5.5"))
    st = expect_status(r, 422, "address taken", "Invalid")
    check("already allocated" in st["message"] and st["details"]["causes"][0]["field"] == "spec.clusterIPs",
          st)
    # kube-dns's address is taken too, in acme only
    expect_status(S["admin"].post(svc_path(), svc("dns2", clusterIP="10.96.0.10")), 422, "kube-dns address")
    # 10.96.0.1 is the region's front door as CRI pods see it (ursa-cni's DNAT): nobody's service's
    st = expect_status(S["admin"].post(svc_path("beta"), svc("kubernetes2", clusterIP="10.96.0.1")), 422,
                       "the front door's address", "Invalid")
    check("front door" in st["message"], st)
    r = S["admin"].post(svc_path("beta"), svc("chosen", clusterIP="10.96.5.5"))
    expect_status(r, 201, "the same address in another tenant")
    st = expect_status(S["admin"].post(svc_path(), svc("outside", clusterIP="10.97.0.1")), 422, "out of range",
                       "Invalid")
    check("not in the valid range" in st["message"] and "10.96.0.0/16" in st["message"], st)
    expect_status(S["admin"].post(svc_path(), svc("broadcast", clusterIP="10.96.255.255")), 422, "broadcast")
    expect_status(S["admin"].post(svc_path(), svc("bad", clusterIP="10.96.5")), 422, "not an address")
    # a deleted service's address is free again once the watch says so
    expect_status(S["admin"].delete(svc_path(name="chosen")), 200, "delete chosen")
    wait_until(lambda: S["admin"].post(svc_path(), svc("again", clusterIP="10.96.5.5")).status == 201, 15,
               "address reused after delete")
    # dry run does not keep the address
    r = S["admin"].post(svc_path() + "?dryRun=All", svc("dry"))
    expect_status(r, 201, "dry run")
    r2 = S["admin"].post(svc_path(), svc("dry-real", clusterIP=r.json["spec"]["clusterIP"]))
    expect_status(r2, 201, "address of a dry run is free")


def test_nodeport_refused_for_tenants():
    for t in ("NodePort", "LoadBalancer"):
        st = expect_status(S["admin"].post(svc_path(), svc("np-" + t.lower(), type=t)), 422, t, "Invalid")
        check("no design" in st["message"] and "spec.type" in st["message"], st)
    out, err = kc("create", "service", "nodeport", "np", "--tcp=80:80", ok=False)
    check("no design" in err, err)
    # the system tenant may
    r = S["admin"].post(svc_path("system"), svc("sys-np", type="NodePort"))
    expect_status(r, 201, "NodePort in system")
    check(r.json["spec"]["clusterIP"].startswith("10.96."), r.json["spec"])


# ---- endpoints ---------------------------------------------------------------------------------

def test_expose_endpoints_follow_ready_pods():
    kc("create", "deployment", "web", "--image=nginx:1.25", "--replicas=3")
    ps = wait_until(lambda: (lambda l: l if len(l) == 3 else None)(pods("app=web")), 30, "three pods")
    kc("expose", "deployment", "web", "--port", "80")
    s = S["admin"].get(svc_path(name="web")).json
    check(s["spec"]["clusterIP"].startswith("10.96."), s["spec"])
    ips = {}
    for i, p in enumerate(ps):
        ips[p["metadata"]["name"]] = "10.244.1.%d" % (i + 1)
        report(p, ips[p["metadata"]["name"]], ready=True)
    want = sorted(ips.values())
    wait_until(lambda: ready_ips("web") == want, 30, "endpoints list the ready pods")
    ep = S["admin"].get(ep_path("web")).json
    sub = ep["subsets"][0]
    eq(sub["ports"], [{"port": 80, "protocol": "TCP"}], "endpoint ports")
    refs = sorted(a["targetRef"]["name"] for a in sub["addresses"])
    eq(refs, sorted(ips), "targetRefs")
    out, _ = kc("get", "endpoints", "web")
    check("ENDPOINTS" in out and want[0] + ":80" in out, out)
    out, _ = kc("describe", "service", "web")
    check("Endpoints:" in out and want[0] + ":80" in out, out)
    out, _ = kc("get", "endpointslices")
    check("ADDRESSTYPE" in out and "IPv4" in out and want[0] in out, out)
    sl = wait_until(lambda: (lambda l: l if len(l) == 1 and len(l[0].get("endpoints") or []) == 3 else None)(
        slices("web")), 30, "one slice of three")
    labels = sl[0]["metadata"]["labels"]
    eq(labels.get("endpointslice.kubernetes.io/managed-by"), "endpointslice-controller.k8s.io", "managed-by")
    eq(sl[0]["metadata"]["ownerReferences"][0]["uid"], s["metadata"]["uid"], "slice owner")
    # one pod not ready: to notReadyAddresses, and ready false in the slice
    name0 = sorted(ips)[0]
    report([p for p in ps if p["metadata"]["name"] == name0][0], ips[name0], ready=False)
    wait_until(lambda: ready_ips("web") == sorted(v for k, v in ips.items() if k != name0), 30,
               "not-ready pod leaves addresses")
    ep = S["admin"].get(ep_path("web")).json
    eq([a["ip"] for a in ep["subsets"][0]["notReadyAddresses"]], [ips[name0]], "notReadyAddresses")
    wait_until(lambda: any(e["addresses"] == [ips[name0]] and e["conditions"]["ready"] is False
                           for e in (slices("web")[0].get("endpoints") or [])), 30, "slice: ready false")
    # a deleted pod leaves both
    name1 = sorted(ips)[1]
    S["admin"].delete(pods_path("acme", "default", name1))
    wait_until(lambda: ips[name1] not in (ready_ips("web") or []), 30, "deleted pod leaves the endpoints")
    wait_until(lambda: all(ips[name1] not in e["addresses"] or e["conditions"]["terminating"]
                           for e in slices("web")[0].get("endpoints") or []), 30, "deleted pod leaves the slice")
    # the service gone: its endpoints and slices too
    kc("delete", "service", "web")
    wait_until(lambda: S["admin"].get(ep_path("web")).status == 404 and not slices("web"), 30,
               "endpoints and slices deleted with the service")


def test_named_target_port():
    def pod(name, port):
        m = pod_manifest(name, labels={"app": "named"})
        m["spec"]["containers"][0]["ports"] = [{"name": "http", "containerPort": port}]
        return m
    for name, port, ip in (("n1", 8080, "10.244.2.1"), ("n2", 9090, "10.244.2.2")):
        r = S["admin"].post(pods_path("acme"), pod(name, port))
        expect_status(r, 201, "pod " + name)
        report(r.json, ip, ready=True)
    r = S["admin"].post(svc_path(), svc("named", selector={"app": "named"},
                                        ports=[{"name": "web", "port": 80, "targetPort": "http"}]))
    expect_status(r, 201, "service with a named target port")

    def subsets():
        ep = S["admin"].get(ep_path("named"))
        return ep.json.get("subsets") if ep.status == 200 else None
    ss = wait_until(lambda: (lambda s: s if s and len(s) == 2 else None)(subsets()), 30, "two subsets")
    got = sorted((s["addresses"][0]["ip"], s["ports"][0]["port"], s["ports"][0]["name"]) for s in ss)
    eq(got, [("10.244.2.1", 8080, "web"), ("10.244.2.2", 9090, "web")], "ports resolved by name")
    sl = wait_until(lambda: (lambda l: l if len(l) == 2 else None)(slices("named")), 30, "two slices")
    eq(sorted(s["ports"][0]["port"] for s in sl), [8080, 9090], "slice ports")
    # headless with a selector gets endpoints too
    r = S["admin"].post(svc_path(), svc("named-headless", clusterIP="None", selector={"app": "named"}))
    expect_status(r, 201, "headless with selector")
    wait_until(lambda: ready_ips("named-headless") == ["10.244.2.1", "10.244.2.2"], 30, "headless endpoints")


def test_endpoints_put_back_and_foreign_ones_kept():
    """The controllers read services, endpoints and slices from their informers: what is changed
    or deleted behind their back is put back within seconds (not at the next resync), and
    Endpoints nobody's selector owns are left alone."""
    r = S["admin"].post(pods_path("acme"), pod_manifest("pb", labels={"app": "pb"}))
    expect_status(r, 201, "pod pb")
    report(r.json, "10.244.4.1", ready=True)
    expect_status(S["admin"].post(svc_path(), svc("pb", selector={"app": "pb"})), 201, "service pb")
    wait_until(lambda: ready_ips("pb") == ["10.244.4.1"], 30, "endpoints of pb")
    cur = S["admin"].get(ep_path("pb")).json
    cur["subsets"] = [{"addresses": [{"ip": "10.9.9.9"}], "ports": [{"port": 80}]}]
    expect_status(S["admin"].put(ep_path("pb"), cur), 200, "endpoints overwritten")
    t0 = time.time()
    wait_until(lambda: ready_ips("pb") == ["10.244.4.1"], 10, "overwritten endpoints put back")
    check(time.time() - t0 < 10, "put back only after %.1f s" % (time.time() - t0))
    expect_status(S["admin"].delete(ep_path("pb")), 200, "endpoints deleted")
    wait_until(lambda: ready_ips("pb") == ["10.244.4.1"], 10, "deleted endpoints made again")
    sl = wait_until(lambda: (lambda l: l if len(l) == 1 else None)(slices("pb")), 30, "one slice of pb")
    uid = sl[0]["metadata"]["uid"]
    p = "/apis/discovery.k8s.io/v1/tenants/acme/namespaces/default/endpointslices/" + sl[0]["metadata"]["name"]
    expect_status(S["admin"].delete(p), 200, "slice deleted")
    wait_until(lambda: (lambda l: len(l) == 1 and l[0]["metadata"]["uid"] != uid and
                        [e["addresses"] for e in l[0].get("endpoints") or []] == [["10.244.4.1"]])(slices("pb")),
               10, "deleted slice made again")
    # Endpoints of no service, and of a service without a selector, are their writer's
    manual = {"apiVersion": "v1", "kind": "Endpoints", "metadata": {"name": "manual"},
              "subsets": [{"addresses": [{"ip": "192.0.2.10"}], "ports": [{"port": 5432}]}]}
    expect_status(S["admin"].post("/api/v1/tenants/acme/namespaces/default/endpoints", manual), 201,
                  "endpoints without a service")
    expect_status(S["admin"].post(svc_path(), svc("manual", ports=[{"port": 5432}])), 201,
                  "service without a selector")
    cur = S["admin"].get(ep_path("manual")).json
    cur["subsets"][0]["addresses"].append({"ip": "192.0.2.11"})
    expect_status(S["admin"].put(ep_path("manual"), cur), 200, "manual endpoints updated")
    time.sleep(3)
    eq(ready_ips("manual"), ["192.0.2.10", "192.0.2.11"], "endpoints of a selectorless service kept")
    expect_status(S["admin"].post("/api/v1/tenants/acme/namespaces/default/endpoints",
                                  dict(manual, metadata={"name": "orphan"})), 201, "endpoints of no service")
    time.sleep(3)
    eq(ready_ips("orphan"), ["192.0.2.10"], "endpoints of no service kept")


def test_namespace_deletion_takes_endpoints():
    S["admin"].post("/api/v1/tenants/acme/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                                        "metadata": {"name": "tmp"}})
    r = S["admin"].post(pods_path("acme", "tmp"), pod_manifest("p", labels={"app": "t"}))
    expect_status(r, 201, "pod in tmp")
    report(r.json, "10.244.3.1", ready=True, ns="tmp")
    expect_status(S["admin"].post(svc_path(ns="tmp"), svc("t", selector={"app": "t"})), 201, "svc in tmp")
    wait_until(lambda: S["admin"].get(ep_path("t", ns="tmp")).status == 200, 30, "endpoints in tmp")
    S["admin"].delete("/api/v1/tenants/acme/namespaces/tmp")
    wait_until(lambda: S["admin"].get("/api/v1/tenants/acme/namespaces/tmp").status == 404, 60, "tmp gone")
    eq([k for k in S["etcd"].keys("/registry/") if "/acme/tmp/" in k], [], "etcd keys of tmp")


run(globals())
