"""ursa-rm-controller-manager against a real region slice: etcd + resource manager (RM) + one
tenant partition (TP) registered in the RM, two fake-runtime kubelets (two nodes in one zone, so
losing one is not a full disruption), and the controller manager with short periods
(grace 10 s, monitor period 1 s)."""

import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import ursa_harness as h  # noqa: E402
import ursa_region  # noqa: E402

CM_BIN = os.path.join(h.BUILD_DIR, "src", "resource-manager", "controllers", "ursa-rm-controller-manager")
KUBELET_BIN = os.path.join(h.BUILD_DIR, "src", "kubelet", "ursa-kubelet")
REGISTRY = "/apis/ursa.io/v1/tenantpartitions"
CM_LEASE = "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/ursa-rm-controller-manager"
DS_PATH = "/apis/apps/v1/namespaces/default/daemonsets"
RM_PODS = "/api/v1/namespaces/default/pods"
UNREACHABLE = "node.kubernetes.io/unreachable"
NODE_A, NODE_B = "rmc-node-a", "rmc-node-b"
GRACE = 10

S = {}


class Proc:
    """A daemon of ours with a log in its own temporary directory."""

    def __init__(self, label, argv_fn):
        self.dir = h.make_tmpdir(label)
        self.log = os.path.join(self.dir, label + ".log")
        h._logs.append((label, self.log))
        self.argv_fn = argv_fn
        self.proc = None

    def start(self):
        self.proc = h.spawn(self.argv_fn(self), self.log)
        return self

    def stop(self):
        if self.proc is not None:
            h.terminate(self.proc)
            self.proc = None

    def text(self):
        with open(self.log, errors="replace") as f:
            return f.read()


def kubelet(kubeconfig, node):
    port = h.free_port()
    h.require_binary(KUBELET_BIN, "ursa-kubelet")
    return Proc("kubelet-" + node, lambda p: [
        KUBELET_BIN, "--kubeconfig", kubeconfig, "--root-dir", p.dir, "--runtime", "fake",
        "--node-name", node, "--port", str(port), "--zone", "az-1", "--lease-seconds", "8",
        "--node-status-report-seconds", "5"])


def setup():
    h.require_binary(CM_BIN, "ursa-rm-controller-manager")
    etcd_rm = h.Etcd(name="etcd-rm")
    etcd_rm.start()
    etcd_tp = h.Etcd(name="etcd-tp")
    etcd_tp.start()
    rm = ursa_region.RmServer(etcd_rm)
    rm.start()
    tp = h.ApiServer(etcd_tp, partition_id="tp-1")
    ursa_region.share_credentials(tp, rm)
    tp.start()
    admin = rm.admin()
    r = admin.post(REGISTRY, {"apiVersion": "ursa.io/v1", "kind": "TenantPartition",
                              "metadata": {"name": "tp-1"}, "spec": {"endpoints": [tp.url]}})
    h.expect_status(r, 201, "register tp-1")
    h.create_tenant(tp.admin(), "acme")
    kc = rm.admin_kubeconfig()
    ka, kb = kubelet(kc, NODE_A).start(), kubelet(kc, NODE_B).start()
    cm = Proc("rm-controller-manager", lambda p: [
        CM_BIN, "--kubeconfig", kc, "--node-monitor-grace-period", str(GRACE), "--node-monitor-period", "1",
        "--default-toleration-seconds", "300", "--identity", "cm-test-1", "--log-level", "debug"]).start()
    S.update(rm=rm, tp=tp, admin=admin, tpadmin=tp.admin(), ka=ka, kb=kb, cm=cm, kc=kc)


def get_node(name):
    r = S["admin"].get("/api/v1/nodes/" + name)
    return r.json if r.status == 200 else None


def ready_status(node):
    for c in (node or {}).get("status", {}).get("conditions", []):
        if c.get("type") == "Ready":
            return c.get("status")
    return None


def taint_keys(node):
    return [t.get("key") for t in (node or {}).get("spec", {}).get("taints", []) or []
            if t.get("effect") == "NoExecute"]


def make_bound_pod(name, tolerate_s):
    spec = {"containers": [{"name": "c", "image": "busybox:1.36", "command": ["sleep", "3600"]}],
            "terminationGracePeriodSeconds": 0}
    if tolerate_s is not None:
        spec["tolerations"] = [{"key": UNREACHABLE, "operator": "Exists", "effect": "NoExecute",
                                "tolerationSeconds": tolerate_s}]
    tp = S["tpadmin"]
    r = tp.post(h.pods_path("acme"), {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
                                      "spec": spec})
    h.expect_status(r, 201, "create pod " + name)
    body = {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": name},
            "target": {"apiVersion": "v1", "kind": "Node", "name": NODE_A}}
    for _ in range(50):
        r = tp.post(h.pods_path("acme", name=name) + "/binding", body)
        if r.status != 404:
            break
        time.sleep(0.1)
    h.check(r.status in (200, 201), "bind %s: %s %s" % (name, r.status, r.body[:200]))


def pod(name):
    r = S["tpadmin"].get(h.pods_path("acme", name=name))
    return r.json if r.status == 200 else None


def evicted(name):
    p = pod(name)
    return p is None or bool(p["metadata"].get("deletionTimestamp"))


def test_leader_lease():
    h.wait_until(lambda: S["admin"].get(CM_LEASE).status == 200, 20, "controller manager lease exists")
    spec = S["admin"].get(CM_LEASE).json["spec"]
    h.eq(spec.get("holderIdentity"), "cm-test-1", "lease holder")


def test_nodes_ready_untainted():
    for n in (NODE_A, NODE_B):
        h.wait_until(lambda: ready_status(get_node(n)) == "True", 30, "node %s Ready" % n)
    time.sleep(3)  # several monitor periods: healthy nodes stay untouched
    for n in (NODE_A, NODE_B):
        node = get_node(n)
        h.eq(ready_status(node), "True", "%s still Ready" % n)
        h.eq(taint_keys(node), [], "%s NoExecute taints" % n)


def test_unreachable_node_tainted_and_pods_evicted():
    make_bound_pod("short", 5)
    make_bound_pod("long", 3600)
    make_bound_pod("plain", None)  # default toleration 300 s: stays during this test
    h.wait_until(lambda: (pod("short") or {}).get("status", {}).get("phase") == "Running", 30,
                 "pod short Running on %s" % NODE_A)
    S["ka"].stop()
    t0 = time.monotonic()
    h.wait_until(lambda: ready_status(get_node(NODE_A)) == "Unknown", GRACE + 8, "node Ready=Unknown")
    t_unknown = time.monotonic() - t0
    h.check(t_unknown >= GRACE - 4, "Unknown not before the grace period (%.1fs)" % t_unknown)
    cond = [c for c in get_node(NODE_A)["status"]["conditions"] if c["type"] == "Ready"][0]
    h.eq(cond.get("reason"), "NodeStatusUnknown", "Ready reason")
    h.wait_until(lambda: UNREACHABLE in taint_keys(get_node(NODE_A)), GRACE + 10 - (time.monotonic() - t0),
                 "unreachable taint within grace")
    taint = [t for t in get_node(NODE_A)["spec"]["taints"] if t["key"] == UNREACHABLE][0]
    h.check(taint.get("timeAdded"), "taint has timeAdded: %s" % taint)
    # pods are marked not ready while they wait out their toleration
    h.wait_until(lambda: any(c.get("type") == "Ready" and c.get("status") == "False"
                             for c in (pod("long") or {}).get("status", {}).get("conditions", [])),
                 10, "pod long marked Ready=False")
    h.wait_until(lambda: evicted("short"), GRACE + 5 + 8 - (time.monotonic() - t0),
                 "pod short evicted within grace + toleration + a few seconds")
    t_evict = time.monotonic() - t0
    h.check(t_evict >= GRACE + 5 - 4, "short evicted no earlier than its toleration (%.1fs)" % t_evict)
    time.sleep(2)
    h.check(not evicted("long"), "pod tolerating 3600 s stays")
    h.check(not evicted("plain"), "pod with the default 300 s toleration stays")
    h.eq(ready_status(get_node(NODE_B)), "True", "the other node stays Ready")
    h.eq(taint_keys(get_node(NODE_B)), [], "the other node stays untainted")
    h.check("pod evicted" in S["cm"].text(), "eviction logged")


def test_node_back_taint_removed():
    S["ka"].start()
    h.wait_until(lambda: ready_status(get_node(NODE_A)) == "True", 30, "node Ready again")
    h.wait_until(lambda: taint_keys(get_node(NODE_A)) == [], 10, "unreachable taint removed")
    time.sleep(2)
    h.check(not evicted("long"), "pod long not evicted after the node came back")


def ds_pods(name="agent"):
    r = S["admin"].get(RM_PODS)
    h.expect_status(r, 200, "list RM pods")
    return [p for p in r.json["items"]
            if any(o.get("kind") == "DaemonSet" and o.get("name") == name
                   for o in p["metadata"].get("ownerReferences", []))
            and not p["metadata"].get("deletionTimestamp")]


def ds_nodes(name="agent"):
    return sorted(p["spec"].get("nodeName") for p in ds_pods(name))


def test_daemonset_one_pod_per_node():
    ds = {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "agent"},
          "spec": {"selector": {"matchLabels": {"app": "agent"}},
                   "template": {"metadata": {"labels": {"app": "agent"}},
                                "spec": {"nodeSelector": {"kubernetes.io/os": "linux"},
                                         "containers": [{"name": "a", "image": "busybox:1.36",
                                                         "command": ["sleep", "3600"]}]}}}}
    r = S["admin"].post(DS_PATH, ds)
    h.expect_status(r, 201, "create daemonset")
    h.wait_until(lambda: ds_nodes() == sorted([NODE_A, NODE_B]), 20, "one daemon pod per node")
    time.sleep(2)
    h.eq(len(ds_pods()), 2, "no duplicate daemon pods")
    # a node that does not match the selector gets none; a matching new node gets one
    for name, os_label in (("rmc-node-win", "windows"), ("rmc-node-c", "linux")):
        r = S["admin"].post("/api/v1/nodes", {"apiVersion": "v1", "kind": "Node",
                                              "metadata": {"name": name,
                                                           "labels": {"kubernetes.io/os": os_label}}})
        h.expect_status(r, 201, "create node " + name)
    h.wait_until(lambda: ds_nodes() == sorted([NODE_A, NODE_B, "rmc-node-c"]), 20,
                 "daemon pod added on the new matching node")
    h.check("rmc-node-win" not in ds_nodes(), "no daemon pod on a non-matching node")
    h.wait_until(lambda: (S["admin"].get(DS_PATH + "/agent").json.get("status") or {})
                 .get("desiredNumberScheduled") == 3, 10, "status desiredNumberScheduled=3")
    h.expect_status(S["admin"].delete("/api/v1/nodes/rmc-node-c"), 200, "delete node c")
    h.wait_until(lambda: ds_nodes() == sorted([NODE_A, NODE_B]), 20, "daemon pod of a deleted node removed")


def teardown():
    for k in ("cm", "ka", "kb"):
        if k in S:
            S[k].stop()


if __name__ == "__main__":
    h.run(globals())
