"""ursa-scheduler against a real region slice: two tenant partitions (TP) and two resource
managers (RM, zones az-1 and az-2), each with its own etcd, and one hollow kubelet per RM.
Test pods tolerate the hollow taint."""

import http.client
import json
import os
import re
import signal
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import ursa_harness as h  # noqa: E402
import ursa_region  # noqa: E402

KUBELET_BIN = os.path.join(h.BUILD_DIR, "src", "kubelet", "ursa-kubelet")
SCHED_BIN = os.path.join(h.BUILD_DIR, "src", "scheduler", "ursa-scheduler")
LEASE = "/apis/coordination.k8s.io/v1/tenants/system/namespaces/kube-system/leases/ursa-scheduler"
HOLLOW_TOL = [{"key": "ursa.io/hollow", "operator": "Exists", "effect": "NoSchedule"}]

S = {}


class Proc:
    """A daemon of ours with a log in its own temporary directory."""

    def __init__(self, name, args):
        self.dir = h.make_tmpdir(name)
        self.log = os.path.join(self.dir, name + ".log")
        h._logs.append((name, self.log))
        self.args = args
        self.proc = None

    def start(self):
        self.proc = h.spawn(self.args, self.log)
        return self

    def stop(self):
        return h.terminate(self.proc)

    def text(self):
        with open(self.log, errors="replace") as f:
            return f.read()


def hollow(rm, prefix, zone, n, cpu="2", pods=20):
    h.require_binary(KUBELET_BIN, "ursa-kubelet")
    p = Proc("kubelet-" + prefix, [])
    p.args = [KUBELET_BIN, "--kubeconfig", rm.admin_kubeconfig(), "--root-dir", p.dir, "--port", "0",
              "--hollow-nodes", str(n), "--hollow-prefix", prefix, "--zone", zone, "--cpu", cpu,
              "--memory", "4Gi", "--max-pods", str(pods)]
    return p.start()


def scheduler(tp, partition, identity, extra=()):
    h.require_binary(SCHED_BIN, "ursa-scheduler")
    return Proc("scheduler-" + identity,
                [SCHED_BIN, "--kubeconfig", tp.admin_kubeconfig(), "--partition-id", partition,
                 "--identity", identity, "--workers", "4", "--reservation-gc-seconds", "2",
                 "--stats-seconds", "2", "--log-level", "debug"] + list(extra)).start()


def register(tps, rms):
    for tp in tps:
        for rm in rms:
            r = tp.admin().post("/apis/ursa.io/v1/resourcemanagers",
                                {"apiVersion": "ursa.io/v1", "kind": "ResourceManager",
                                 "metadata": {"name": rm.partition_id},
                                 "spec": {"endpoints": [rm.url], "zone": rm.zone}})
            h.expect_status(r, 201, "register %s in %s" % (rm.partition_id, tp.partition_id))
    for rm in rms:
        for tp in tps:
            r = rm.admin().post("/apis/ursa.io/v1/tenantpartitions",
                                {"apiVersion": "ursa.io/v1", "kind": "TenantPartition",
                                 "metadata": {"name": tp.partition_id}, "spec": {"endpoints": [tp.url]}})
            h.expect_status(r, 201, "register %s in %s" % (tp.partition_id, rm.partition_id))


def setup():
    rms = []
    first = None
    for i, zone in ((1, "az-1"), (2, "az-2")):
        e = h.Etcd(name="etcd-rm%d" % i)
        e.start()
        rm = ursa_region.RmServer(e, "rm-%d" % i)
        rm.zone = zone
        if first:
            ursa_region.share_credentials(rm, first)
        first = first or rm
        rm.start()
        rms.append(rm)
    tps = []
    for i in (1, 2):
        e = h.Etcd(name="etcd-tp%d" % i)
        e.start()
        tp = h.ApiServer(e, partition_id="tp-%d" % i)
        ursa_region.share_credentials(tp, first)
        tp.start()
        tps.append(tp)
    register(tps, rms)
    h.create_tenant(tps[0].admin(), "acme")
    h.create_tenant(tps[1].admin(), "zeta")
    kls = [hollow(rms[0], "a1", "az-1", 3), hollow(rms[1], "a2", "az-2", 3)]
    sch = scheduler(tps[0], "tp-1", "s1")
    S.update(rms=rms, tps=tps, kls=kls, sched=[sch], tp=tps[0].admin(),
             user=tps[0].user_client("acme", "alice"))
    h.wait_until(lambda: len(nodes()) == 6, 40, "6 hollow nodes registered")


def nodes():
    out = {}
    for rm in S["rms"]:
        for n in rm.admin().get("/api/v1/nodes").json.get("items", []):
            out[n["metadata"]["name"]] = n
    return out


def pod(name, cpu="100m", tol=True, **spec):
    p = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
         "spec": {"containers": [{"name": "c", "image": "busybox:1.36", "command": ["sleep", "3600"],
                                  "resources": {"requests": {"cpu": cpu, "memory": "64Mi"}}}]}}
    if tol:
        p["spec"]["tolerations"] = HOLLOW_TOL
    p["spec"].update(spec)
    return p


def get_pod(client, tenant, name):
    r = client.get(h.pods_path(tenant, name=name))
    return r.json if r.status == 200 else None


def node_of(client, tenant, name):
    return ((get_pod(client, tenant, name) or {}).get("spec") or {}).get("nodeName")


def events(client, tenant, name):
    r = client.get("/api/v1/tenants/%s/namespaces/default/events" % tenant)
    return [e for e in r.json.get("items", []) if e["involvedObject"]["name"] == name]


def test_pod_scheduled_and_running():
    r = S["user"].post(h.pods_path("acme"), pod("first"))
    h.expect_status(r, 201, "tenant user creates a pod")
    node = h.wait_until(lambda: node_of(S["tp"], "acme", "first"), 20, "pod bound")
    h.check(node in nodes(), "bound to a region node: %s" % node)
    h.wait_until(lambda: (get_pod(S["tp"], "acme", "first") or {}).get("status", {}).get("phase") == "Running",
                 30, "pod Running")
    conds = {c["type"]: c for c in get_pod(S["tp"], "acme", "first")["status"]["conditions"]}
    h.eq(conds["PodScheduled"]["status"], "True", "PodScheduled")
    evs = h.wait_until(lambda: [e for e in events(S["tp"], "acme", "first") if e["reason"] == "Scheduled"],
                       10, "Scheduled event")
    h.check(node in evs[0]["message"] and evs[0]["source"]["component"] == "default-scheduler",
            "event %r" % evs[0])
    # the node carries tp-1's reservation covering the pod
    ann = json.loads(nodes()[node]["metadata"]["annotations"]["ursa.io/reserved"])
    h.check(ann["tp-1"]["cpu"] >= 100 and ann["tp-1"]["pods"] >= 1, "reservation %r" % ann)
    kc = S["tps"][0].kubeconfig("acme", "alice")
    try:
        rc, out, err = h.kubectl(["get", "pods", "-o", "wide"], kc)
    except OSError:
        rc = None
    if rc is not None and rc == 0:
        row = [ln.split() for ln in out.splitlines() if ln.startswith("first ")]
        h.check(row and node in row[0], "kubectl -o wide shows the node: %r" % out)


def test_zone_selector():
    for zone, prefix in (("az-2", "a2-"), ("az-1", "a1-")):
        name = "in-" + zone
        p = pod(name, nodeSelector={"topology.kubernetes.io/zone": zone})
        h.expect_status(S["user"].post(h.pods_path("acme"), p), 201, "create " + name)
        node = h.wait_until(lambda: node_of(S["tp"], "acme", name), 20, name + " bound")
        h.check(node.startswith(prefix), "%s landed in %s: %s" % (name, zone, node))


def test_untolerated_taint_and_replicaset_spread():
    # without the toleration no hollow node fits
    h.expect_status(S["user"].post(h.pods_path("acme"), pod("notol", tol=False)), 201, "create")
    ev = h.wait_until(lambda: [e for e in events(S["tp"], "acme", "notol") if e["reason"] == "FailedScheduling"],
                      20, "FailedScheduling for untolerated taint")
    h.check("untolerated taint {ursa.io/hollow}" in ev[0]["message"], "message %r" % ev[0]["message"])
    S["tp"].delete(h.pods_path("acme", name="notol"))
    # pods of one ReplicaSet spread over both zones
    zones = {"a1": 0, "a2": 0}
    for i in range(4):
        p = pod("rs-%d" % i)
        p["metadata"]["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs",
                                             "uid": "6f1c-rs-uid", "controller": True}]
        h.expect_status(S["user"].post(h.pods_path("acme"), p), 201, "create rs pod")
        node = h.wait_until(lambda: node_of(S["tp"], "acme", "rs-%d" % i), 20, "rs pod bound")
        zones[node.split("-")[0]] += 1
    h.eq(zones, {"a1": 2, "a2": 2}, "ReplicaSet pods per zone")


def test_unschedulable_then_node_appears():
    h.expect_status(S["user"].post(h.pods_path("acme"), pod("big", cpu="3")), 201, "create big pod")
    ev = h.wait_until(lambda: [e for e in events(S["tp"], "acme", "big") if e["reason"] == "FailedScheduling"],
                      20, "FailedScheduling event")
    h.check("Insufficient cpu" in ev[0]["message"] and ev[0]["type"] == "Warning", "event %r" % ev[0])
    p = get_pod(S["tp"], "acme", "big")
    h.eq(p["status"].get("phase"), "Pending", "phase")
    cond = [c for c in p["status"]["conditions"] if c["type"] == "PodScheduled"][0]
    h.eq((cond["status"], cond["reason"]), ("False", "Unschedulable"), "PodScheduled condition")
    h.check("Insufficient cpu" in cond["message"], "condition message %r" % cond["message"])
    # a bigger node registers in RM 2: the pod is scheduled there without waiting out back-off
    S["kls"].append(hollow(S["rms"][1], "big2", "az-2", 1, cpu="4"))
    node = h.wait_until(lambda: node_of(S["tp"], "acme", "big"), 30, "big pod bound once a node has room")
    h.eq(node, "big2-0", "node of the big pod")


def test_rm_added_without_restart():
    e = h.Etcd(name="etcd-rm3")
    e.start()
    rm3 = ursa_region.RmServer(e, "rm-3")
    rm3.zone = "az-3"
    ursa_region.share_credentials(rm3, S["rms"][0])
    rm3.start()
    register([], [rm3])
    for tp in S["tps"]:
        r = tp.admin().post("/apis/ursa.io/v1/resourcemanagers",
                            {"apiVersion": "ursa.io/v1", "kind": "ResourceManager", "metadata": {"name": "rm-3"},
                             "spec": {"endpoints": [rm3.url], "zone": "az-3"}})
        h.expect_status(r, 201, "register rm-3")
    r = rm3.admin().post("/apis/ursa.io/v1/tenantpartitions",
                         {"apiVersion": "ursa.io/v1", "kind": "TenantPartition", "metadata": {"name": "tp-1"},
                          "spec": {"endpoints": [S["tps"][0].url]}})
    h.expect_status(r, 201, "tp-1 in rm-3")
    S["kls"].append(hollow(rm3, "a3", "az-3", 1))
    p = pod("in-az-3", nodeSelector={"topology.kubernetes.io/zone": "az-3"})
    h.expect_status(S["user"].post(h.pods_path("acme"), p), 201, "create")
    h.eq(h.wait_until(lambda: node_of(S["tp"], "acme", "in-az-3"), 40, "bound in az-3"), "a3-0", "node")
    S["rm3"] = rm3


def test_two_partitions_do_not_overcommit():
    """tp-1 and tp-2 fill the same 6 nodes (2 cpu each, 12 cpu) with 500m pods: 2 x 14 pods ask
    for 14 cpu; at most the room left fits and no kubelet rejects a pod."""
    S["sched"].append(scheduler(S["tps"][1], "tp-2", "s2"))
    tp2 = S["tps"][1].admin()
    for i in range(14):
        for client, tenant in ((S["tp"], "acme"), (tp2, "zeta")):
            p = pod("fill-%d" % i, cpu="500m", nodeSelector={"node-role.kubernetes.io/hollow": ""})
            p["spec"]["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "NotIn",
                                                             "values": ["big2-0", "a3-0"]}]}]}}}
            h.expect_status(client.post(h.pods_path(tenant), p), 201, "create fill pod")
    time.sleep(8)
    placed = {}
    for client, tenant in ((S["tp"], "acme"), (tp2, "zeta")):
        for p in client.get(h.pods_path(tenant)).json["items"]:
            n = p["spec"].get("nodeName")
            if n and p["status"].get("phase") != "Failed":
                cpu = p["spec"]["containers"][0]["resources"]["requests"]["cpu"]
                m = int(cpu[:-1]) if cpu.endswith("m") else int(cpu) * 1000
                placed[n] = placed.get(n, 0) + m
            h.check(p["status"].get("reason") not in ("OutOfcpu", "OutOfpods", "OutOfmemory"),
                    "kubelet rejected %s/%s: %s" % (tenant, p["metadata"]["name"], p["status"]))
    for n, m in placed.items():
        h.check(m <= 2000 or n == "big2-0", "node %s overcommitted: %d m" % (n, m))
    print("placed (milli-cpu per node): %s" % sorted(placed.items()))
    print("reservations: %s" % sorted((n, o["metadata"].get("annotations", {}).get("ursa.io/reserved"))
                                      for n, o in nodes().items()))
    # filled: no small node has room for one more 500m pod (earlier tests left 100m pods around)
    for n in ("a1-0", "a1-1", "a1-2", "a2-0", "a2-1", "a2-2"):
        h.check(2000 - placed.get(n, 0) < 500, "node %s still has room: %d m used" % (n, placed.get(n, 0)))


def last_counters(proc):
    lines = [ln for ln in proc.text().splitlines() if 'msg="stats"' in ln or "msg=stats" in ln]
    return {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)", lines[-1])} if lines else {}


def test_reserve_ahead_two_partitions():
    """Both partitions reserve room ahead (--reservation-chunk) on the same 4 fresh nodes of
    2 cpu and fill them exactly (2 x 16 pods of 250m). At every sample the entries of the
    two partitions on a node add up to at most its cpu; in the end every pod is bound,
    nothing is overcommitted or rejected, fewer reservation writes than pods were made, and
    once idle each partition's entry is released down to what its pods use."""
    tp2 = S["tps"][1].admin()
    for client, tenant in ((S["tp"], "acme"), (tp2, "zeta")):  # earlier tests' leftovers
        for p in client.get(h.pods_path(tenant)).json["items"]:
            if not p["spec"].get("nodeName"):
                client.delete(h.pods_path(tenant) + "/" + p["metadata"]["name"])
    before = [last_counters(s) for s in S["sched"][:2]]
    S["kls"].append(hollow(S["rms"][0], "ra", "az-1", 4, cpu="2", pods=20))
    ra = ["ra-%d" % i for i in range(4)]
    h.wait_until(lambda: all(n in nodes() for n in ra), 30, "4 ra nodes registered")
    for i in range(16):
        for client, tenant in ((S["tp"], "acme"), (tp2, "zeta")):
            p = pod("ra-%d" % i, cpu="250m")
            p["spec"]["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In",
                                                             "values": ra}]}]}}}
            h.expect_status(client.post(h.pods_path(tenant), p), 201, "create ra pod")

    def ra_pods():
        out = []
        for client, tenant, part in ((S["tp"], "acme", "tp-1"), (tp2, "zeta", "tp-2")):
            out += [(part, p) for p in client.get(h.pods_path(tenant)).json["items"]
                    if p["metadata"]["name"].startswith("ra-")]
        return out

    samples, deadline = 0, time.monotonic() + 45
    while time.monotonic() < deadline:
        for n, o in nodes().items():
            if n in ra:
                ann = json.loads(o["metadata"].get("annotations", {}).get("ursa.io/reserved") or "{}")
                total = sum(e.get("cpu", 0) for e in ann.values())
                h.check(total <= 2000, "node %s: reservations add up to %d m > 2000: %r" % (n, total, ann))
        samples += 1
        if sum(1 for _, p in ra_pods() if p["spec"].get("nodeName")) == 32:
            break
        time.sleep(0.2)
    pods = ra_pods()
    h.eq(sum(1 for _, p in pods if p["spec"].get("nodeName")), 32, "ra pods bound (%d samples)" % samples)
    used = {}
    for part, p in pods:
        n = p["spec"]["nodeName"]
        h.check(n in ra, "ra pod on %s" % n)
        h.check(p["status"].get("reason") not in ("OutOfcpu", "OutOfpods", "OutOfmemory"),
                "kubelet rejected %s: %s" % (p["metadata"]["name"], p["status"]))
        used[(n, part)] = used.get((n, part), 0) + 250
    for n in ra:
        h.eq(used.get((n, "tp-1"), 0) + used.get((n, "tp-2"), 0), 2000, "node %s filled exactly" % n)

    def released():
        objs = nodes()
        for n in ra:
            ann = json.loads(objs[n]["metadata"].get("annotations", {}).get("ursa.io/reserved") or "{}")
            for part in ("tp-1", "tp-2"):
                if (ann.get(part) or {}).get("cpu", 0) != used.get((n, part), 0):
                    return None
        return True
    h.wait_until(released, 20, "entries released down to what the pods use")
    time.sleep(2.5)  # the counters are logged every 2 s
    after = [last_counters(s) for s in S["sched"][:2]]
    writes = sum(a.get("reserve_writes", 0) - b.get("reserve_writes", 0) - (a.get("gc_writes", 0) -
                 b.get("gc_writes", 0)) for a, b in zip(after, before))
    print("reserve ahead: 32 pods bound with %d reservation writes (GC releases not counted)" % writes)
    h.check(0 < writes < 32, "fewer reservation writes than pods: %d" % writes)


def health_get(port, path):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    try:
        conn.request("GET", path)
        r = conn.getresponse()
        return r.status, r.read().decode()
    finally:
        conn.close()


def metric(port, name):
    """The value of the sample whose line starts with name in the scheduler's /metrics."""
    status, text = health_get(port, "/metrics")
    h.eq(status, 200, "GET /metrics")
    for line in text.splitlines():
        if line.startswith(name + " ") or line.startswith(name + "{"):
            return float(line.rsplit(" ", 1)[1])
    raise h.HarnessError("no %s in /metrics:\n%s" % (name, text))


def test_leader_failover():
    hport = h.free_port()
    standby = scheduler(S["tps"][0], "tp-1", "s1b", ["--health-listen", "127.0.0.1:%d" % hport])
    S["sched"].append(standby)
    time.sleep(2)
    lease = S["tp"].get(LEASE).json
    h.eq(lease["spec"]["holderIdentity"], "s1", "leader before")
    # The standby's health endpoint: alive, and says it is not the leader.
    h.eq(health_get(hport, "/healthz"), (200, "ok"), "standby /healthz")
    h.eq(metric(hport, "ursa_leader"), 0, "standby's ursa_leader")
    h.check(metric(hport, "ursa_scheduler_nodes") > 0, "the standby has the nodes in view")
    h.eq(health_get(hport, "/nope")[0], 404, "unknown path")
    S["sched"][0].proc.send_signal(signal.SIGKILL)
    S["sched"][0].proc.wait(5)
    killed = time.monotonic()
    h.expect_status(S["user"].post(h.pods_path("acme"), pod("after-failover")), 201, "create")
    h.wait_until(lambda: node_of(S["tp"], "acme", "after-failover"), 20, "scheduled by the standby")
    took = time.monotonic() - killed
    h.eq(S["tp"].get(LEASE).json["spec"]["holderIdentity"], "s1b", "new leader")
    h.check(took < 12, "takeover within seconds: %.1fs" % took)
    print("failover: pod scheduled %.1fs after the leader was killed" % took)
    h.eq(metric(hport, "ursa_leader"), 1, "new leader's ursa_leader")
    h.check(metric(hport, "ursa_scheduler_pods_scheduled_total") >= 1, "the new leader counts what it bound")


def teardown():
    for s in S.get("sched", []):
        if s.proc and s.proc.poll() is None:
            s.proc.send_signal(signal.SIGTERM)
            h.eq(s.proc.wait(15), 0, "scheduler exits cleanly on SIGTERM")
            for line in s.text().splitlines():
                if "msg=stopped" in line:
                    print(line)


h.run(globals())
