#!/usr/bin/python3
"""Live migration of a tenant between tenant partitions (`ursactl tenant move`, issue 23).

The region of test_partitions (tp-1 and tp-2 each with its etcd, controller manager and scheduler;
a real node per zone on containerd; the gateway in front), then, through the gateway, as a user
would:

- tenant acme (on tp-1) with a Deployment of 6 pods running in containers, 1,000 ConfigMaps and a
  `kubectl get pods -w` running; `ursactl tenant move acme --to tp-2` while a loop runs
  `kubectl apply` every 100 ms: the watch keeps printing (a pod labelled after the move is seen,
  no pod seen DELETED, no pod ADDED again), every apply succeeds (at most one slower than a
  second), `kubectl get tenants` says tp-2, resourceVersions go from tp-1's number to tp-2's,
  the 6 pods keep their uids and their containers
  (same PIDs, no restart), tp-1's etcd holds no key of acme, and tp-2's controllers and scheduler
  take over (a scale to 7 runs a 7th pod);
- a move killed at each of its steps (URSA_MOVE_CRASH) and then `ursactl tenant move --recover`:
  the tenant ends whole on exactly one side (the source before the switch, the target from it
  on), with every ConfigMap, and no key left on the other; a move into a partition that already
  has the tenant, and bad arguments, are refused and change nothing;
- `ursactl partition drain tp-1` moves every tenant off tp-1; `ursactl partition balance
  --dry-run` plans from the partitions' object counts.
Needs root (containerd).

Run alone: URSA_BUILD_DIR=build /usr/bin/python3 tests/e2e/test_tenant_move.py"""

import base64
import json
import os
import re
import subprocess
import sys
import threading
import time
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ursa_harness as h  # noqa: E402
import test_region as region  # noqa: E402
import test_partitions as parts  # noqa: E402  (the region: setup, teardown, k)

S = region.S
k = parts.k

DEPLOYMENT = parts.DEPLOYMENT.replace("replicas: 4", "replicas: 6")


def setup():
    parts.setup()


def teardown():
    parts.teardown()


def etcd_keys(tp, needle):
    """Keys of tp's etcd under /registry/ that contain needle."""
    b = lambda s: base64.b64encode(s.encode()).decode()  # noqa: E731
    body = json.dumps({"key": b("/registry/"), "range_end": b("/registry0"), "keys_only": True}).encode()
    req = urllib.request.Request(tp.etcd.url() + "/v3/kv/range", data=body, method="POST")
    with urllib.request.urlopen(req, timeout=10) as r:
        kvs = json.load(r).get("kvs") or []
    keys = [base64.b64decode(kv["key"]).decode() for kv in kvs]
    return [key for key in keys if needle in key]


def tenant_keys(tp, tenant):
    return [key for key in etcd_keys(tp, "/" + tenant) if re.search(r"/%s(/|$)" % re.escape(tenant), key)]


def partition_of(tenant):
    rows = k(["get", "tenants"], S["admin_kc"]).splitlines()[1:]
    return {r.split()[0]: r.split()[3] for r in rows}.get(tenant)


def make_tenant(name, partition, configmaps):
    k(["create", "-f", "-"], S["admin_kc"], input_text=(
        "apiVersion: v1\nkind: Tenant\nmetadata:\n  name: %s\n  annotations:\n    ursa.io/partition: %s\n"
        % (name, partition)))
    kc = S["region"].kubeconfig("gw-" + name, name, "u-" + name, S["gw_url"])
    c = h.Client(S["gw_url"], S["region"].ca, h.kubeconfig_token(kc), timeout=20)
    h.wait_until(lambda: c.get("/api/v1/namespaces/default").status == 200, 30, "namespace default of " + name)
    for i in range(configmaps):
        while True:  # the gateway's rate limit per tenant: wait as Retry-After says
            r = c.post("/api/v1/namespaces/default/configmaps",
                       {"metadata": {"name": "cm-%04d" % i}, "data": {"i": str(i), "pad": "x" * 200}})
            if r.status != 429:
                break
            time.sleep(float(r.headers.get("retry-after") or 1))
        h.check(r.status == 201, "configmap %d of %s: %d %s" % (i, name, r.status, r.body[:200]))
    return kc, c


def configmap_names(c):
    r = c.get("/api/v1/namespaces/default/configmaps")
    h.eq(r.status, 200, "list configmaps")
    # kube-root-ca.crt comes and goes with the root CA publisher, not with the move
    return sorted(i["metadata"]["name"] for i in r.json["items"] if i["metadata"]["name"] != "kube-root-ca.crt")


class ApplyLoop(threading.Thread):
    """`kubectl apply` of one ConfigMap every 100 ms (a new value each time), recording each
    call's (start, seconds, rc, stderr)."""

    def __init__(self, kc):
        super().__init__(daemon=True)
        self.kc, self.stop, self.results = kc, threading.Event(), []

    def run(self):
        i = 0
        while not self.stop.is_set():
            i += 1
            doc = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: applied\ndata:\n  count: \"%d\"\n" % i
            t0 = time.monotonic()
            rc, _, err = h.kubectl(["apply", "-f", "-"], self.kc, 60, doc)
            self.results.append((t0, time.monotonic() - t0, rc, err.strip()[:300], i))
            time.sleep(0.1)


def pod_state(kc):
    items = json.loads(k(["get", "pods", "-l", "app=clock-acme", "-o", "json"], kc))["items"]
    return {p["metadata"]["uid"]: p for p in items}


def test_live_move():
    kc, c = make_tenant("acme", "tp-1", 1000)
    S["acme"] = (kc, c)
    k(["apply", "-f", "-"], kc, input_text=DEPLOYMENT % {"name": "clock-acme"})
    pods = h.wait_until(lambda: parts.running_pods(kc, "clock-acme", 6), 90, "6 pods of clock-acme Running",
                        interval=0.5)
    before = {}
    for p in pods:
        pid = h.wait_until(lambda: region.container_pid(p), 10, "container of %s" % p["metadata"]["name"])
        before[p["metadata"]["uid"]] = (p["metadata"]["name"], pid, p["spec"]["nodeName"])
    names_before = configmap_names(c)
    h.eq(len([n for n in names_before if n.startswith("cm-")]), 1000, "acme's 1,000 configmaps")
    # resourceVersions carry the partition's number (tp-N: N), so tp-1's are never taken for tp-2's
    cm0 = json.loads(k(["get", "configmap", names_before[0], "-o", "json"], kc))
    h.eq(int(cm0["metadata"]["resourceVersion"]) >> 44, 1, "a resourceVersion of tp-1's (%r)" % cm0["metadata"])

    w = h.Background(h.kubectl_args(["get", "pods", "-w", "--output-watch-events"], kc))
    loop = ApplyLoop(kc)
    try:
        def initial():
            added = {ln.split()[1] for ln in w.output() if ln.startswith("ADDED ")}
            return added if len(added) == 6 else None
        h.wait_until(initial, 20, "kubectl get pods -w lists the 6 pods (%r / %r)" % (w.output(), w.err))
        loop.start()
        time.sleep(2)
        t_move = time.monotonic()
        out = S["region"].ursactl(["tenant", "move", "acme", "--to", "tp-2"], timeout=120)
        print(out.strip())
        m = re.search(r"writes held (\d+) ms", out)
        h.check(m and re.search(r"^tenant acme moved from tp-1 to tp-2: 1\d\d\d objects copied", out, re.M),
                "ursactl tenant move: %r" % out)
        time.sleep(2)
        # the watch goes on across the switch: a change made now is printed
        k(["label", "pod", before[next(iter(before))][0], "moved=yes"], kc)
        name0 = before[next(iter(before))][0]
        line = w.wait_for(lambda ln: ln.startswith("MODIFIED ") and ln.split()[1] == name0, 20)
        h.check(line, "the watch printed the label made after the move: %r / %r" % (w.output()[-10:], w.err))
        h.check(w.proc.poll() is None, "kubectl get pods -w still watching (%r)" % w.err)
        time.sleep(1)
    finally:
        loop.stop.set()
        loop.join(70)
        w.stop()
    events = [ln.split()[:2] for ln in w.output() if ln.split()]
    h.check(not [e for e in events if e[0] == "DELETED"], "the watch saw pods DELETED: %r" % events)
    added = [e[1] for e in events if e[0] == "ADDED"]
    h.eq(sorted(added), sorted(v[0] for v in before.values()), "pods ADDED once each (no relist)")
    failed = [r for r in loop.results if r[2] != 0]
    h.check(not failed, "kubectl apply failed during the move: %r" % failed)
    during = [r for r in loop.results if r[0] >= t_move - 1]
    durations = sorted(r[1] for r in loop.results)
    median = durations[len(durations) // 2]
    slow = [round(r[1], 2) for r in during if r[1] > median + 1.0]
    print("kubectl apply: %d calls, median %.2f s, max %.2f s; slower than the median + 1 s: %r" % (
        len(loop.results), median, durations[-1], slow))
    h.check(len(loop.results) >= 10, "the apply loop ran: %d calls" % len(loop.results))
    h.check(len(slow) <= 1, "more than one apply slower than the median + 1 s: %r" % slow)
    last = loop.results[-1][4]
    got = json.loads(k(["get", "configmap", "applied", "-o", "json"], kc))
    h.eq((got.get("data") or {}).get("count"), str(last), "the last applied value (%r)" % got)
    moved = json.loads(k(["get", "configmap", names_before[0], "-o", "json"], kc))
    h.eq((moved["metadata"]["uid"], int(moved["metadata"]["resourceVersion"]) >> 44), (cm0["metadata"]["uid"], 2),
         "the same configmap on tp-2, with tp-2's resourceVersion (%r)" % moved["metadata"])

    h.eq(partition_of("acme"), "tp-2", "kubectl get tenants: acme's partition")
    after = pod_state(kc)
    h.eq(sorted(after), sorted(before), "the pods' uids after the move")
    for uid, p in after.items():
        name, pid, node = before[uid]
        h.eq(p["spec"]["nodeName"], node, "node of %s" % name)
        h.eq(region.container_pid(p), pid, "the container of %s (same process)" % name)
        h.check(region.pid_alive(pid), "container process %d of %s alive" % (pid, name))
        h.eq([cs.get("restartCount") for cs in p["status"]["containerStatuses"]], [0], "restarts of %s" % name)
    h.eq(configmap_names(c), sorted(names_before + ["applied"]), "acme's configmaps on tp-2")
    h.wait_until(lambda: not tenant_keys(S["tp1"], "acme"), 10,
                 "tp-1's etcd holds no key of acme (%r)" % tenant_keys(S["tp1"], "acme")[:5])
    h.check(tenant_keys(S["tp2"], "acme"), "tp-2's etcd holds acme")
    # tp-2's controllers and scheduler act on acme now
    k(["scale", "deployment", "clock-acme", "--replicas=7"], kc)
    pods = h.wait_until(lambda: parts.running_pods(kc, "clock-acme", 7), 60, "7 pods of clock-acme Running",
                        interval=0.5)
    h.check(set(before) <= {p["metadata"]["uid"] for p in pods}, "the 6 moved pods are among the 7")


CRASH_POINTS = ["copying", "following", "fenced", "switched", "placed", "activated", "dropped"]


def ursactl_rc(args, env=None):
    return parts.ursactl_rc(args, env)


def test_move_killed_at_each_step():
    kc, c = make_tenant("zeta", "tp-1", 50)
    names = configmap_names(c)
    side = "tp-1"
    for point in CRASH_POINTS:
        other = "tp-2" if side == "tp-1" else "tp-1"
        env = dict(S["region"].env(), URSA_MOVE_CRASH=point)
        rc, out, err = ursactl_rc(["tenant", "move", "zeta", "--to", other], env=env)
        h.eq(rc, 9, "ursactl killed at %s: %r %r" % (point, out, err))
        # a second move is refused while the first is recorded
        rc, _, err2 = ursactl_rc(["tenant", "move", "zeta", "--to", other])
        h.check(rc != 0 and "--recover" in err2, "a move while one is recorded: %r" % err2)
        out = S["region"].ursactl(["tenant", "move", "zeta", "--recover"])
        forward = point in ("switched", "placed", "activated", "dropped")
        want, gone = (other, side) if forward else (side, other)
        h.check("tenant zeta is on %s" % want in out, "recover after %s: %r" % (point, out))
        h.eq(partition_of("zeta"), want, "zeta's partition after a kill at %s" % point)
        tps = {"tp-1": S["tp1"], "tp-2": S["tp2"]}
        h.wait_until(lambda: not tenant_keys(tps[gone], "zeta"), 10,
                     "%s holds no key of zeta after a kill at %s: %r" % (gone, point, tenant_keys(tps[gone], "zeta")[:5]))
        t = tps[want].admin().get("/api/v1/tenants/zeta").json
        h.eq((t.get("status") or {}).get("phase"), "Active", "zeta's phase on %s after %s" % (want, point))
        h.check("ursa.io/move" not in ((t["metadata"].get("annotations")) or {}), "move annotation left: %r" % t)
        h.eq(configmap_names(c), names, "zeta's configmaps after a kill at %s" % point)
        r = c.post("/api/v1/namespaces/default/configmaps", {"metadata": {"name": "after-" + point}})
        h.eq(r.status, 201, "zeta takes writes after a kill at %s: %s" % (point, r.body[:200]))
        names = sorted(names + ["after-" + point])
        side = want
    # refused: to where it is; an unknown partition; a missing tenant; no --to
    for args, why in ((["tenant", "move", "zeta", "--to", side], "already"),
                      (["tenant", "move", "zeta", "--to", "tp-9"], "no tenant partition named tp-9"),
                      (["tenant", "move", "nobody", "--to", "tp-2"], "no placement"),
                      (["tenant", "move", "zeta"], "--to")):
        rc, out, err = ursactl_rc(args)
        h.check(rc != 0 and why in err, "ursactl %s: %d %r %r" % (" ".join(args), rc, out, err))
    h.eq(partition_of("zeta"), side, "zeta stayed")
    h.eq(configmap_names(c), names, "zeta's configmaps after the refused moves")
    # a target that holds a tenant of the name already (made there behind the gateways' back):
    # the move fails at its first batch and is undone; neither side's tenant is touched
    other = "tp-2" if side == "tp-1" else "tp-1"
    tps = {"tp-1": S["tp1"], "tp-2": S["tp2"]}
    r = tps[other].admin().post("/api/v1/tenants", {"apiVersion": "v1", "kind": "Tenant", "metadata": {"name": "zeta"}})
    h.eq(r.status, 201, "a stray zeta on %s: %s" % (other, r.body[:200]))
    stray_uid = r.json["metadata"]["uid"]
    rc, out, err = ursactl_rc(["tenant", "move", "zeta", "--to", other])
    h.check(rc != 0 and "exists" in err, "move onto a stray zeta: %d %r %r" % (rc, out, err))
    out = S["region"].ursactl(["tenant", "move", "zeta", "--recover"])
    h.check("no move to recover" in out, "the refused move left no record: %r" % out)
    # (kubectl get tenants lists the stray too: the gateways' merged list shows every partition's)
    h.eq((tps[side].admin().get("/api/v1/tenants/zeta").json.get("status") or {}).get("phase"), "Active",
         "zeta on %s after the refused move" % side)
    h.eq(configmap_names(c), names, "zeta's configmaps after the refused move")
    got = tps[other].admin().get("/api/v1/tenants/zeta").json
    h.eq((got["metadata"]["uid"], (got.get("status") or {}).get("phase")), (stray_uid, "Active"), "the stray zeta")
    r = c.post("/api/v1/namespaces/default/configmaps", {"metadata": {"name": "after-refused"}})
    h.eq(r.status, 201, "zeta takes writes after the refused move: %s" % r.body[:200])
    h.eq(tps[other].admin().delete("/api/v1/tenants/zeta").status in (200, 202), True, "stray zeta deleted")


def test_drain_and_balance():
    for t in ("beta", "gamma"):
        make_tenant(t, "tp-1", 20)
    on1 = [t for t in ("beta", "gamma", "zeta", "acme") if partition_of(t) == "tp-1"]
    h.check(len(on1) >= 2, "tenants on tp-1 before the drain: %r" % on1)
    out = S["region"].ursactl(["partition", "drain", "tp-1"], timeout=300)
    print(out.strip())
    h.check("tp-1 is drained" in out, "drain: %r" % out)
    for t in on1:
        h.check(re.search(r"^tenant %s moved from tp-1 to tp-2: " % t, out, re.M), "drain moved %s: %r" % (t, out))
    rows = k(["get", "tenants"], S["admin_kc"]).splitlines()[1:]
    h.eq([r.split()[0] for r in rows if r.split()[3] == "tp-1"], [], "tenants left on tp-1")
    for t in on1:
        h.eq(partition_of(t), "tp-2", "%s after the drain" % t)
    # a draining partition takes no new tenant, however empty; undrain ends that
    k(["create", "-f", "-"], S["admin_kc"], input_text="apiVersion: v1\nkind: Tenant\nmetadata:\n  name: delta\n")
    h.eq(partition_of("delta"), "tp-2", "a new tenant while tp-1 drains")
    h.check("tp-1: takes new tenants again" in S["region"].ursactl(["partition", "undrain", "tp-1"]), "undrain")
    time.sleep(0.5)  # the gateways follow their etcd by watch
    k(["create", "-f", "-"], S["admin_kc"], input_text="apiVersion: v1\nkind: Tenant\nmetadata:\n  name: epsilon\n")
    h.eq(partition_of("epsilon"), "tp-1", "a new tenant after the undrain (tp-1 is the emptier)")
    out = S["region"].ursactl(["partition", "balance", "--dry-run"])
    print(out.strip())
    h.check(re.search(r"^tp-1: \d+ objects$", out, re.M) and re.search(r"^move .* tp-2 -> tp-1$", out, re.M),
            "balance --dry-run plans moves back to the empty tp-1: %r" % out)


if __name__ == "__main__":
    h.run(globals())
