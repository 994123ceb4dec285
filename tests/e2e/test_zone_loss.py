#!/usr/bin/python3
"""Losing a whole zone: a region like deploy/local-up.sh's in a temporary directory (tenant
partition tp-1 with its controller manager, resource managers rm-az-1 and rm-az-2 with theirs,
a process-runtime kubelet per zone, a hollow kubelet in az-2), node grace 10 s. A tenant's
deployment runs on az-1-host-1 with pods tolerating node.kubernetes.io/unreachable for 5 s.
Then everything of az-1 is killed at once (kubelet and its containers, RM controller manager,
RM API server, RM etcd). The tenant partition's rmloss controller must notice the RM is gone
after the grace period, mark the pods Ready=False, keep them until their toleration runs out,
and evict them within grace + toleration + 10 s; their replacements run in az-2 (placed by
ursa-scheduler, which takes the nodes of an unreachable resource manager out of scheduling;
URSA_ZONE_LOSS_SCHEDULER=0 makes the test bind them itself instead). A
second tenant keeps creating and listing objects throughout without a single error.

Run alone: URSA_BUILD_DIR=build /usr/bin/python3 tests/e2e/test_zone_loss.py"""

import glob
import json
import os
import signal
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ursa_harness as h  # noqa: E402
import test_region as region  # noqa: E402  (Region, Partition, Kubelet, container cleanup)

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
                     "containers": [{"name": "main", "image": "busybox",
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
    for p in got:
        h.check(region.container_pid(p), "container process of %s" % p["metadata"]["name"])


def kill_zone_az1():
    """Everything of az-1 dies at once, as in a power loss."""
    h.kill(S["host1"].proc)
    kill_containers(S["host1"])
    h.kill(S["rmcm-az-1"])
    h.kill(S["rm1"].proc)
    S["rm1"].etcd.kill()


def kill_containers(kubelet):
    for f in glob.glob(os.path.join(kubelet.root, "runtime", "pods", "*", "containers", "*", "state.json")):
        try:
            with open(f) as fh:
                st = json.load(fh)
        except (OSError, ValueError):
            continue
        for pid_key, start_key, group in (("pid", "pidStart", True), ("shimPid", "shimStart", False)):
            pid = int(st.get(pid_key) or 0)
            if pid > 1 and region.proc_start(pid) == str(st.get(start_key)):
                try:
                    (os.killpg if group else os.kill)(pid, signal.SIGKILL)
                except OSError:
                    pass


def test_zone_loss_evicts_and_replaces():
    tp1, sched = S["tp1"], S["sched"]
    load = TenantLoad(tp1, "zeta")
    load.start()
    try:
        time.sleep(2)
        t0 = time.monotonic()
        kill_zone_az1()
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
        print("az-1 pods evicted %.1fs after the zone went down; marked not ready first: %s" %
              (gone_at, sorted(marked)), flush=True)
        h.eq(marked, old, "pods marked Ready=False before eviction")
        got = h.wait_until(lambda: running_on(tp1, "acme", "web", "az-2-host-1", 2, not sched), 60,
                           "2 replacement pods Running on az-2-host-1")
        h.check(not (old & {p["metadata"]["name"] for p in got}), "replacements are new pods")
    finally:
        load.stop.set()
        load.join(10)
    h.check(load.ops > 20, "tenant zeta made only %d requests" % load.ops)
    h.eq(load.errors, [], "errors of tenant zeta while az-1 was down")
    log = open(os.path.join(S["region"].dir, "tp-1 controller manager.log")).read()
    h.check("resource manager lost" in log and 'rm="rm-az-1"' in log, "rmloss logged the loss of rm-az-1")


def test_zone_comes_back_and_eviction_stops():
    """rm-az-1 back (same etcd data): rmloss notices, and a pod bound to az-1-host-1 now stays."""
    rm1 = S["rm1"]
    rm1.start()  # its etcd first, on the same data directory
    log = os.path.join(S["region"].dir, "tp-1 controller manager.log")
    h.wait_until(lambda: "resource manager is back" in open(log).read(), 30, "rmloss saw rm-az-1 come back")
    tp1 = S["tp1"]
    r = tp1.admin().post(h.pods_path("acme"), {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "stay"},
        "spec": {"tolerations": [{"key": "node.kubernetes.io/unreachable", "operator": "Exists",
                                  "effect": "NoExecute", "tolerationSeconds": 0}],
                 "containers": [{"name": "c", "image": "busybox", "command": ["sleep", "3600"]}]}})
    h.expect_status(r, 201, "create pod stay")
    bind(tp1, "acme", r.json, "az-1-host-1")
    time.sleep(4)  # more than the monitor period: were az-1 still counted lost, it would be gone
    h.eq(tp1.admin().get(h.pods_path("acme", name="stay")).status, 200, "pod on az-1 after it came back")


def teardown():
    for key in ("sched", "tpcm", "rmcm-az-1", "rmcm-az-2"):
        if S.get(key):
            h.terminate(S[key], 10)
    region.teardown()


if __name__ == "__main__":
    h.run(globals())
