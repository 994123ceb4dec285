"""ursa-rm-controller-manager against a real region slice: etcd + resource manager (RM) + one
tenant partition (TP) registered in the RM, two fake-runtime kubelets (two nodes in one zone, so
losing one is not a full disruption), and the controller manager with short periods
(grace 10 s, monitor period 1 s)."""

import datetime
import os
import re
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
        """SIGTERM (KILL after 10 s); the exit status, None when not running."""
        rc = None
        if self.proc is not None:
            rc = h.terminate(self.proc)
            self.proc = None
        return rc

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


LOST_ZONE, LOST_N, RATE, RL_GRACE = "az-lost", 80, 20, 5
TS_RE = re.compile(r'ts=(\S+) .*msg="node tainted" node="(rl-node-\d+)"')


def taint_times(text):
    """node -> wall time (s) of its "node tainted" log line."""
    out = {}
    for line in text.splitlines():
        m = TS_RE.search(line)
        if m:
            t = datetime.datetime.strptime(m.group(1), "%Y-%m-%dT%H:%M:%S.%fZ")
            out.setdefault(m.group(2), t.replace(tzinfo=datetime.timezone.utc).timestamp())
    return out


def test_many_lost_nodes_tainted_at_the_rate():
    """--node-eviction-rate drains a zone's queue at that rate: every monitor pass taints as many
    waiting nodes as the zone's bucket holds (burst rate x period), not one a pass."""
    h.wait_until(lambda: "became leader" in S["cm"].text(), 20, "controller manager leads")
    rc = S["cm"].stop()  # SIGTERM while leading: it hands the lease back and exits cleanly
    h.eq(rc, 0, "controller manager exit status on SIGTERM")
    # Ready nodes no kubelet posts for, created before the controller starts so that it sees
    # them all at once and they all go silent in the same pass: a whole zone lost (the kubelets'
    # zone az-1 stays up, so not every zone is disrupted and this one keeps --node-eviction-rate)
    for i in range(LOST_N):
        r = S["admin"].post("/api/v1/nodes", {"apiVersion": "v1", "kind": "Node", "metadata": {
            "name": "rl-node-%03d" % i, "labels": {"topology.kubernetes.io/zone": LOST_ZONE}}})
        h.expect_status(r, 201, "create node rl-node-%03d" % i)
        now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        r = S["admin"].patch("/api/v1/nodes/rl-node-%03d/status" % i, {"status": {"conditions": [
            {"type": "Ready", "status": "True", "reason": "KubeletReady", "lastHeartbeatTime": now,
             "lastTransitionTime": now}]}})
        h.expect_status(r, 200, "post status of rl-node-%03d" % i)
    r = S["admin"].post("/api/v1/nodes", {"apiVersion": "v1", "kind": "Node", "metadata": {
        "name": "rl-nocond", "labels": {"topology.kubernetes.io/zone": LOST_ZONE}}})
    h.expect_status(r, 201, "create node rl-nocond (never posts a status)")
    cm = Proc("rm-controller-manager-rate", lambda p: [
        CM_BIN, "--kubeconfig", S["kc"], "--node-monitor-grace-period", str(RL_GRACE),
        "--node-monitor-period", "1", "--node-eviction-rate", str(RATE), "--identity", "cm-test-1",
        "--controllers", "nodelifecycle"]).start()
    S["cm"] = cm
    h.wait_until(lambda: "became leader" in cm.text(), 20, "restarted controller manager leads")
    h.wait_until(lambda: len(taint_times(cm.text())) >= 1, RL_GRACE + 15, "a lost node tainted")
    h.wait_until(lambda: len(taint_times(cm.text())) >= LOST_N, 30, "every lost node tainted")
    times = sorted(taint_times(cm.text()).values())
    first, last = times[0], times[-1]
    in_first_s = sum(1 for t in times if t - first <= 1.0)
    burst = RATE * 1
    print("  %d lost nodes tainted in %.2fs (%d in the first second)" % (LOST_N, last - first, in_first_s), flush=True)
    # all within a couple of monitor periods of the first: (80 - burst 20) / 20 per s = 3 s.
    # One node per pass (or per 250 ms tick) would take 20 s or more.
    h.check(last - first <= 6.0, "%d lost nodes tainted within %.1fs of the first (want <= 6 s at %d/s)"
            % (LOST_N, last - first, RATE))
    # and the rate still limits: the bucket's burst plus a second's worth, not the whole zone at
    # once (the times are when each taint's write was logged: on a busy machine one pass's writes
    # land late, so two passes' worth may fall in a second; all 80 may not)
    h.check(in_first_s <= burst + RATE * 2 + 6, "%d nodes tainted in the first second (burst %d, rate %d/s)"
            % (in_first_s, burst, RATE))
    for i in (0, LOST_N - 1):
        node = get_node("rl-node-%03d" % i)
        h.eq(ready_status(node), "Unknown", "rl-node-%03d Ready" % i)
        h.check(UNREACHABLE in taint_keys(node), "rl-node-%03d tainted unreachable" % i)
    for n in (NODE_A, NODE_B):
        h.eq(taint_keys(get_node(n)), [], "%s (live zone) untainted" % n)
    h.check('zone="%s" from=Normal to=FullDisruption' % LOST_ZONE in cm.text(), "lost zone seen as disrupted")
    # a node that never posted a Ready condition is marked Unknown after the grace period, then
    # tainted like the others
    h.wait_until(lambda: ready_status(get_node("rl-nocond")) == "Unknown", 10, "rl-nocond Ready=Unknown")
    h.wait_until(lambda: UNREACHABLE in taint_keys(get_node("rl-nocond")), 10, "rl-nocond tainted")


def teardown():
    for k in ("cm", "ka", "kb"):
        if k in S:
            S[k].stop()


if __name__ == "__main__":
    h.run(globals())
