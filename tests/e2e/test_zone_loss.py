#!/usr/bin/python3
"""Losing a whole zone: a region like deploy/local-up.sh's in a temporary directory (tenant
partition tp-1 with its controller manager, resource managers rm-az-1 and rm-az-2 with theirs,
a real node per zone on the cri runtime with a containerd of its own (test_region.Kubelet,
tests/lib/ursa_cri.py), a hollow kubelet in az-2), node grace 10 s. A tenant's deployment runs
in containers on az-1-host-1 with pods tolerating node.kubernetes.io/unreachable for 5 s.
Then everything of az-1 is killed at once (RM API server, RM etcd, RM controller manager,
kubelet, and its containerd with every container: containerd_teardown). The tenant partition's
rmloss controller must notice the RM is gone after the grace period, mark the pods Ready=False,
keep them until their toleration runs out, and evict them within grace + toleration + 10 s;
their replacements run in containers of az-2-host-1 (placed by ursa-scheduler, which takes the
nodes of an unreachable resource manager out of scheduling; URSA_ZONE_LOSS_SCHEDULER=0 makes
the test bind them itself instead). A second tenant keeps creating and listing objects
throughout without a single error. Then az-1 comes back: its RM (same etcd data) and controller
manager, which marks az-1-host-1 NotReady (no heartbeat); the node's containerd and kubelet,
which make it Ready again and remove the sandboxes of the evicted pods; a pod bound there runs
in a container and is not evicted. Needs root.

Run alone: URSA_BUILD_DIR=build /usr/bin/python3 tests/e2e/test_zone_loss.py"""

import os
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ursa_harness as h  # noqa: E402
import test_region as region  # noqa: E402  (Region, Partition, Kubelet on CRI nodes)

TPCM_BIN = os.path.join(h.BUILD_DIR, "src", "tenant-partition", "controllers", "ursa-tp-controller-manager")
RMCM_BIN = os.path.join(h.BUILD_DIR, "src", "resource-manager", "controllers", "ursa-rm-controller-manager")
SCHED_BIN = os.path.join(h.BUILD_DIR, "src", "scheduler", "ursa-scheduler")
GRACE, TOLERATION = 10, 5
S = region.S


def deployment(name, replicas):
    tmpl = {"metadata": {"labels": {"app": name}},
            "spec": {"terminationGracePeriodSeconds": 5,
                     "tolerations": [{"key": "node.kubernetes.io/unreachable", "operator": "Exists",
                                      "effect": "NoExecute", "tolerationSeconds": TOLERATION}],
                     "containers": [{"name": "main", "image": "busybox:1.36",
                                     "command": ["sh", "-c", "while true; do sleep 1; done"]}]}}
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}}, "template": tmpl}}


def start_daemon(label, args):
    log = os.path.join(S["region"].dir, label + ".log")
    h._logs.append((label, log))
    return h.spawn(args, log)


def scheduler_works():
    if os.environ.get("URSA_ZONE_LOSS_SCHEDULER") == "0" or not os.access(SCHED_BIN, os.X_OK):
        return False
    rc, out, _ = h.run_cmd([SCHED_BIN, "--help"], 10)
    return rc == 0 and "--kubeconfig" in out


def set_unschedulable(rm, node, value):
    r = rm.admin().patch("/api/v1/nodes/" + node, {"spec": {"unschedulable": value}})
    h.check(r.status == 200, "cordon %s=%s: %r" % (node, value, r))


def pods(tp, tenant, app):
    r = tp.admin().get(h.pods_path(tenant) + h.q(labelSelector="app=" + app))
    h.check(r.status == 200, "list pods: %r" % r)
    return r.json.get("items") or []


def bind(tp, tenant, pod, node):
    name = pod["metadata"]["name"]
    b = {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": name},
         "target": {"apiVersion": "v1", "kind": "Node", "name": node}}
    r = tp.admin().post(h.pods_path(tenant, name=name) + "/binding", b)
    h.check(r.status in (201, 409), "bind %s to %s: %r" % (name, node, r))


def running_on(tp, tenant, app, node, want, bind_pending):
    """Pods of app Running on node, binding pending ones there first when there is no scheduler."""
    items = pods(tp, tenant, app)
    if bind_pending:
        for p in items:
            if not p["spec"].get("nodeName") and not p["metadata"].get("deletionTimestamp"):
                bind(tp, tenant, p, node)
    ok = [p for p in items if p["spec"].get("nodeName") == node and not p["metadata"].get("deletionTimestamp")
          and (p.get("status") or {}).get("phase") == "Running"]
    return ok if len(ok) == want else None


class TenantLoad(threading.Thread):
    """Creates and lists ConfigMaps of another tenant until stopped, counting every error."""

    def __init__(self, tp, tenant):
        super().__init__(daemon=True)
        self.c = h.Client(tp.url, tp.region.ca, h.kubeconfig_token(
            tp.region.kubeconfig("zeta-bob", tenant, "bob", tp.url)), timeout=10)
        self.tenant, self.stop, self.errors, self.ops = tenant, threading.Event(), [], 0

    def run(self):
        base = "/api/v1/tenants/%s/namespaces/default/configmaps" % self.tenant
        i = 0
        while not self.stop.is_set():
            i += 1
            try:
                r = self.c.post(base, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm-%d" % i},
                                       "data": {"i": str(i)}})
                if r.status != 201:
                    self.errors.append("create cm-%d: %r" % (i, r))
                r = self.c.get(base)
                if r.status != 200 or len(r.json.get("items") or []) != i:
                    self.errors.append("list after cm-%d: %r" % (i, r))
                self.ops += 2
            except Exception as e:  # noqa: BLE001 - every failure counts
                self.errors.append("request %d: %s" % (i, e))
            time.sleep(0.2)


def setup():
    for b in (TPCM_BIN, RMCM_BIN):
        h.require_binary(b, os.path.basename(b))
    reg = region.Region()
    tp1 = region.Partition(reg, "tp", "tp-1").start()
    rm1 = region.Partition(reg, "rm", "rm-az-1", "az-1").start()
    rm2 = region.Partition(reg, "rm", "rm-az-2", "az-2").start()
    for p in (tp1, rm1, rm2):
        p.register()
    S.update(region=reg, tp1=tp1, rm1=rm1, rm2=rm2)
    S["host1"] = region.Kubelet(reg, rm1, "az-1-host-1").start()
    S["host2"] = region.Kubelet(reg, rm2, "az-2-host-1").start()
    S["hollow"] = region.Kubelet(reg, rm2, "az-2-hollow", hollow=3).start()
    S["tpcm"] = start_daemon("tp-1 controller manager", [
        TPCM_BIN, "--kubeconfig", tp1.admin_kc, "--leader-elect=false", "--log-level", "info",
        "--node-monitor-grace-period", str(GRACE), "--rm-monitor-period", "1", "--rmloss-eviction-rate", "10"])
    for rm in (rm1, rm2):
        S["rmcm-" + rm.zone] = start_daemon(rm.name + " controller manager", [
            RMCM_BIN, "--kubeconfig", rm.admin_kc, "--leader-elect=false", "--log-level", "info",
            "--node-monitor-grace-period", str(GRACE)])
    S["sched"] = None
    if scheduler_works():
        S["sched"] = start_daemon("scheduler", [SCHED_BIN, "--kubeconfig", tp1.admin_kc, "--partition-id", "tp-1",
                                                "--log-level", "info"])
    for rm, want in ((rm1, {"az-1-host-1"}), (rm2, {"az-2-host-1"} | set(region.HOLLOW))):
        h.wait_until(lambda: region.ready_nodes(rm) >= want, 60, "Ready nodes of %s" % rm.name)
    admin = tp1.admin()
    h.create_tenant(admin, "acme")
    h.create_tenant(admin, "zeta")
    print("scheduler: %s" % ("ursa-scheduler" if S["sched"] else "none (the test binds pods)"), flush=True)


def test_deployment_runs_in_az1():
    tp1, sched = S["tp1"], S["sched"]
    if sched:
        set_unschedulable(S["rm2"], "az-2-host-1", True)  # so that the scheduler picks az-1
    r = tp1.admin().post(h.deployments_path("acme"), deployment("web", 2))
    h.expect_status(r, 201, "create deployment")
    got = h.wait_until(lambda: running_on(tp1, "acme", "web", "az-1-host-1", 2, not sched), 60,
                       "2 pods of web Running on az-1-host-1")
    S["old"] = sorted(p["metadata"]["name"] for p in got)
    if sched:
        set_unschedulable(S["rm2"], "az-2-host-1", False)
    found = check_in_containers(got)
    S["old_pids"] = [pid for pid, _ in found.values()]
    S["old_sandboxes"] = {name: sb for name, (_, sb) in found.items()}


def check_in_containers(pods):
    """Each pod runs in a container (and sandbox) of its node's containerd: {name: (host PID of
    the container, sandbox id)}."""
    found = {}
    for p in pods:
        name = p["metadata"]["name"]
        pid = h.wait_until(lambda: region.container_pid(p), 10, "container process of %s" % name)
        found[name] = (pid, region.check_in_container(p, pid, "sleep"))
    return found


def kill_zone_az1():
    """Everything of az-1 dies at once, as in a power loss: the zone's control plane and the
    kubelet at once, the node's containerd and containers in the background (containerd_teardown
    takes seconds; the eviction clock must not wait for it). Returns that thread."""
    h.kill(S["rm1"].proc)
    S["rm1"].etcd.kill()
    h.kill(S["rmcm-az-1"])
    h.kill(S["host1"].proc)
    # the sandboxes stay recorded in containerd's root, as after a power loss
    t = threading.Thread(target=S["host1"].cri.teardown, kwargs={"drain": False}, daemon=True)
    t.start()
    return t


def test_zone_loss_evicts_and_replaces():
    tp1, sched = S["tp1"], S["sched"]
    load = TenantLoad(tp1, "zeta")
    load.start()
    try:
        time.sleep(2)
        t0 = time.monotonic()
        node_down = kill_zone_az1()
        h.check(S["rm1"].proc.poll() is not None and not S["rm1"].etcd.running(), "rm-az-1 and its etcd killed")
        marked, old, gone_at = set(), set(S["old"]), None
        while time.monotonic() - t0 < GRACE + TOLERATION + 10:
            items = {p["metadata"]["name"]: p for p in pods(tp1, "acme", "web")}
            left = old & set(items)
            elapsed = time.monotonic() - t0
            if not left:
                gone_at = elapsed
                break
            # nothing may go before the grace period plus the toleration (2 s of slack for the
            # monitor period and the last successful check before the kill)
            h.check(len(left) == len(old) or elapsed >= GRACE + TOLERATION - 2,
                    "pods evicted too early at %.1fs: left %s" % (elapsed, sorted(left)))
            for n in left:
                conds = (items[n].get("status") or {}).get("conditions") or []
                if any(c.get("type") == "Ready" and c.get("status") == "False" for c in conds):
                    h.check(elapsed >= GRACE - 2, "%s marked not ready at %.1fs, before the grace period" % (n, elapsed))
                    marked.add(n)
            time.sleep(0.3)
        h.check(gone_at is not None, "pods of az-1 %s not evicted within %ds" % (sorted(old), GRACE + TOLERATION + 10))
        node_down.join(120)
        h.check(not node_down.is_alive(), "containerd_teardown of az-1-host-1 still running after 120 s")
        h.check(not any(region.pid_alive(p) for p in S["old_pids"]), "containers of az-1 killed")
        h.check(not S["host1"].cri.running(), "containerd of az-1-host-1 stopped")
        print("az-1 pods evicted %.1fs after the zone went down; marked not ready first: %s" %
              (gone_at, sorted(marked)), flush=True)
        h.eq(marked, old, "pods marked Ready=False before eviction")
        got = h.wait_until(lambda: running_on(tp1, "acme", "web", "az-2-host-1", 2, not sched), 60,
                           "2 replacement pods Running on az-2-host-1")
        h.check(not (old & {p["metadata"]["name"] for p in got}), "replacements are new pods")
        check_in_containers(got)
    finally:
        load.stop.set()
        load.join(10)
    h.check(load.ops > 20, "tenant zeta made only %d requests" % load.ops)
    h.eq(load.errors, [], "errors of tenant zeta while az-1 was down")
    log = open(os.path.join(S["region"].dir, "tp-1 controller manager.log")).read()
    h.check("resource manager lost" in log and 'rm="rm-az-1"' in log, "rmloss logged the loss of rm-az-1")


def node_ready_status(rm, name):
    r = rm.admin().get("/api/v1/nodes/" + name)
    h.check(r.status == 200, "get node %s: %r" % (name, r))
    return next((c.get("status") for c in (r.json.get("status") or {}).get("conditions") or []
                 if c.get("type") == "Ready"), None)


def test_zone_comes_back_and_eviction_stops():
    """rm-az-1 back (same etcd data): rmloss notices; its controller manager marks the silent node
    NotReady; the node back (containerd on its old root, kubelet) is Ready again, removes the
    evicted pods' sandboxes, and a pod bound to az-1-host-1 runs there and stays."""
    rm1 = S["rm1"]
    rm1.start()  # its etcd first, on the same data directory
    log = os.path.join(S["region"].dir, "tp-1 controller manager.log")
    h.wait_until(lambda: "resource manager is back" in open(log).read(), 30, "rmloss saw rm-az-1 come back")
    S["rmcm-az-1"] = start_daemon(rm1.name + " controller manager (again)", [
        RMCM_BIN, "--kubeconfig", rm1.admin_kc, "--leader-elect=false", "--log-level", "info",
        "--node-monitor-grace-period", str(GRACE)])
    t = time.monotonic()
    h.wait_until(lambda: node_ready_status(rm1, "az-1-host-1") != "True", GRACE + 20,
                 "az-1-host-1 NotReady without heartbeats", interval=0.5)
    print("az-1-host-1 %s %.1fs after rm-az-1's controller manager started" %
          (node_ready_status(rm1, "az-1-host-1"), time.monotonic() - t), flush=True)
    node = S["host1"]
    node.cri.start()  # its containerd first, on the root it had: tasks gone, sandboxes left
    left = set(S["old_sandboxes"].values()) & {s["id"] for s in node.cri.sandboxes()}
    h.eq(left, set(S["old_sandboxes"].values()), "sandboxes of before in the restarted containerd of az-1-host-1")
    node.start()
    h.wait_until(lambda: node_ready_status(rm1, "az-1-host-1") == "True", 60, "az-1-host-1 Ready again")
    h.wait_until(lambda: not set(S["old_sandboxes"].values()) & {s["id"] for s in node.cri.sandboxes()}, 60,
                 "sandboxes of the evicted pods %s removed from az-1-host-1" % sorted(S["old_sandboxes"]))
    tp1 = S["tp1"]
    r = tp1.admin().post(h.pods_path("acme"), {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "stay", "labels": {"app": "stay"}},
        "spec": {"tolerations": [{"key": "node.kubernetes.io/unreachable", "operator": "Exists",
                                  "effect": "NoExecute", "tolerationSeconds": 0}],
                 "containers": [{"name": "main", "image": "busybox:1.36", "command": ["sleep", "3600"]}]}})
    h.expect_status(r, 201, "create pod stay")
    bind(tp1, "acme", r.json, "az-1-host-1")
    pod = h.wait_until(lambda: running_on(tp1, "acme", "stay", "az-1-host-1", 1, False), 60,
                       "pod stay Running on az-1-host-1")[0]
    pid = h.wait_until(lambda: region.container_pid(pod), 10, "container process of stay")
    region.check_in_container(pod, pid, "sleep")
    time.sleep(4)  # more than the monitor period: were az-1 still counted lost, it would be gone
    r = tp1.admin().get(h.pods_path("acme", name="stay"))
    h.eq(r.status, 200, "pod on az-1 after it came back")
    h.check(not r.json["metadata"].get("deletionTimestamp"), "pod stay being deleted: %r" % r.json["metadata"])
    h.check(region.pid_alive(pid), "container of stay still running")


def teardown():
    for key in ("sched", "tpcm", "rmcm-az-1", "rmcm-az-2"):
        if S.get(key):
            h.terminate(S[key], 10)
    region.teardown()


if __name__ == "__main__":
    h.run(globals())
