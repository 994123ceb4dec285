#!/usr/bin/python3
"""Two tenant partitions behind the gateway, and the loss of one of them.

A region like deploy/local-up.sh's in a temporary directory on free ports: tenant partitions
tp-1 and tp-2 (each with its etcd, controller manager and scheduler), resource managers rm-az-1
and rm-az-2 (each with its etcd), a real node per zone (az-1-host-1, az-2-host-1: ursa-kubelet on
the cri runtime with a containerd of its own, test_region.Kubelet and tests/lib/ursa_cri.py),
all registered with `ursactl register`, and the front door: the gateway's etcd with the
partitions recorded by `ursactl register --gateway-etcd`, and one ursa-gateway. Everything below
goes through the gateway with stock kubectl or raw HTTPS:

- tenants system-x, allison and a, each placed with the annotation ursa.io/partition (system-x
  and a on tp-2, allison on tp-1: names that a prefix match would send to the system tenant's or
  to allison's partition), then acme without one, which goes to the partition with fewest tenants
  (tp-1); `kubectl get tenants` shows each one's partition, and each exists in that partition only;
- a user of each tenant (`ursactl kubeconfig`) sees its own namespaces and gets 403 for the
  paths of the other tenants, across partitions and for the system tenant;
- a deployment in a (tp-2) and one in allison (tp-1) run 2+2 on the nodes of both zones, placed
  by each partition's own scheduler, each pod in a container of its node's containerd with an
  address of that node's pod network; `kubectl logs` and `kubectl get pods -w` work for a;
- tp-1's API server is killed (SIGKILL) while a, system-x (tp-2) and allison (tp-1) send requests
  in a loop: the tp-2 tenants see no error at all (HTTP and kubectl), allison gets 503 within 1 s;
  once tp-1's API server is started again allison succeeds within a few seconds, with the same
  gateway process, and allison's pods kept running in their containers throughout;
- tenant a is backed up (`ursactl tenant backup`), deleted and at once restored (`ursactl
  tenant restore`, which waits while tp-2 still removes the old a's objects): its configmap,
  secret (sealed in the file, never plaintext), CRD and custom resource come back as new
  objects (new uids whose owner references still join up) and its deployment runs its 5 pods
  again; the same backup restored as a2 on tp-1 is a copy on the other partition; a backup
  sealed with another key, a file cut short, a bad restore body and a non-admin are refused and
  leave nothing. Needs root.

Run alone: URSA_BUILD_DIR=build /usr/bin/python3 tests/e2e/test_partitions.py
The steps build on each other and run in file order."""

import base64
import json
import os
import re
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ursa_harness as h  # noqa: E402
import test_region as region  # noqa: E402  (Region, Partition, Kubelet on CRI nodes)

TPCM_BIN = os.path.join(h.BUILD_DIR, "src", "tenant-partition", "controllers", "ursa-tp-controller-manager")
SCHED_BIN = os.path.join(h.BUILD_DIR, "src", "scheduler", "ursa-scheduler")
GW_BIN = os.path.join(h.BUILD_DIR, "src", "gateway", "ursa-gateway")
NODES = {"az-1-host-1", "az-2-host-1"}
# tenant -> the partition named by its annotation (None: placed by the gateway)
TENANTS = [("system-x", "tp-2"), ("allison", "tp-1"), ("a", "tp-2"), ("acme", None)]
WANT = {"system-x": "tp-2", "allison": "tp-1", "a": "tp-2", "acme": "tp-1"}
S = region.S

DEPLOYMENT = """apiVersion: apps/v1
kind: Deployment
metadata:
  name: %(name)s
spec:
  replicas: 4
  selector:
    matchLabels:
      app: %(name)s
  template:
    metadata:
      labels:
        app: %(name)s
    spec:
      terminationGracePeriodSeconds: 2
      containers:
      - name: main
        image: busybox:1.36
        command: ["sh", "-c", "i=0; while true; do i=$((i+1)); echo %(name)s-$i; sleep 1; done"]
"""


def start_daemon(label, args):
    log = os.path.join(S["region"].dir, label + ".log")
    h._logs.append((label, log))
    return h.spawn(args, log)


def k(args, kc, timeout=60, input_text=None):
    rc, out, err = h.kubectl(args, kc, timeout, input_text)
    if rc != 0:
        raise AssertionError("kubectl %s: exit %d\nstdout: %s\nstderr: %s" % (" ".join(args), rc, out, err))
    return out


def user_client(tenant):
    return h.Client(S["gw_url"], S["region"].ca, h.kubeconfig_token(S["kc"][tenant]), timeout=10)


def setup():
    for b in (TPCM_BIN, SCHED_BIN, GW_BIN):
        h.require_binary(b, os.path.basename(b))
    reg = region.Region()
    tp1 = region.Partition(reg, "tp", "tp-1").start()
    tp2 = region.Partition(reg, "tp", "tp-2").start()
    rm1 = region.Partition(reg, "rm", "rm-az-1", "az-1").start()
    rm2 = region.Partition(reg, "rm", "rm-az-2", "az-2").start()
    gw_etcd = h.Etcd(name="etcd-gateway").start()
    for p in (tp1, tp2, rm1, rm2):
        out = p.register(gateway_etcd=gw_etcd.endpoints)
        assert "gateway registry: " in out and " %s recorded" % p.name in out, out
    S.update(region=reg, tp1=tp1, tp2=tp2, rm1=rm1, rm2=rm2, daemons=[])
    S["host1"] = region.Kubelet(reg, rm1, "az-1-host-1").start()
    S["host2"] = region.Kubelet(reg, rm2, "az-2-host-1").start()
    for tp in (tp1, tp2):
        # No leader election: a scheduler that loses its lease (tp-1's, while its API server is
        # down) exits, and the test has no supervisor to start it again.
        S["daemons"].append(start_daemon(tp.name + " controller manager", [
            TPCM_BIN, "--kubeconfig", tp.admin_kc, "--leader-elect=false", "--log-level", "info"]))
        S["daemons"].append(start_daemon(tp.name + " scheduler", [
            SCHED_BIN, "--kubeconfig", tp.admin_kc, "--partition-id", tp.name, "--leader-elect=false",
            "--log-level", "info"]))
    port = h.free_port()
    S["gw_url"] = "https://127.0.0.1:%d" % port
    S["gw"] = start_daemon("gateway", [
        GW_BIN, "--listen", "127.0.0.1:%d" % port, "--etcd-servers", gw_etcd.endpoints,
        "--tls-cert-file", reg.cert, "--tls-private-key-file", reg.key,
        "--token-auth-file", reg.tokens, "--token-signing-public-key", os.path.join(reg.dir, "signing-key.pub"),
        "--partition-ca-file", reg.ca, "--partition-token-file", reg.region_token,
        "--audit-log-path", os.path.join(reg.dir, "audit.log"), "--log-level", "info"])
    gw = h.Client(S["gw_url"], reg.ca, timeout=3)

    def ready():
        if S["gw"].poll() is not None:
            raise h.HarnessError("the gateway exited (%s)" % S["gw"].returncode)
        try:
            return gw.get("/readyz").status == 200
        except OSError:
            return False
    h.wait_until(ready, 30, "gateway /readyz")
    S["admin_kc"] = reg.kubeconfig("gw-admin", "system", "admin", S["gw_url"], "system:masters")
    for rm, node in ((rm1, "az-1-host-1"), (rm2, "az-2-host-1")):
        h.wait_until(lambda: node in region.ready_nodes(rm), 60, "node %s Ready" % node)


def test_tenants_placed_on_both_partitions():
    kc = S["admin_kc"]
    for name, part in TENANTS:
        ann = "  annotations:\n    ursa.io/partition: %s\n" % part if part else ""
        out = k(["create", "-f", "-"], kc,
                input_text="apiVersion: v1\nkind: Tenant\nmetadata:\n  name: %s\n%s" % (name, ann))
        h.eq(out.strip(), "tenant/%s created" % name, "kubectl create tenant %s" % name)
    lines = k(["get", "tenants"], kc).splitlines()
    head = lines[0].split()
    h.eq(head, ["NAME", "STATUS", "AGE", "PARTITION"], "kubectl get tenants header")
    got = {row.split()[0]: row.split()[3] for row in lines[1:]}
    h.eq(got, WANT, "kubectl get tenants: NAME -> PARTITION")
    for tp in (S["tp1"], S["tp2"]):
        here = {t["metadata"]["name"] for t in tp.admin().get("/api/v1/tenants").json["items"]}
        h.eq(here, {n for n, p in WANT.items() if p == tp.name}, "tenants stored in %s" % tp.name)
    # a name is placed once in the region, whatever partition the second request names
    rc, _, err = h.kubectl(["create", "-f", "-"], kc, input_text=(
        "apiVersion: v1\nkind: Tenant\nmetadata:\n  name: a\n  annotations:\n    ursa.io/partition: tp-1\n"))
    h.check(rc != 0 and "AlreadyExists" in err, "second tenant a: %r" % err)


def test_users_see_only_their_tenant():
    S["kc"] = {t: S["region"].kubeconfig("gw-" + t, t, "u-" + t, S["gw_url"]) for t in WANT}
    for t in WANT:
        out = k(["get", "namespaces", "-o", "name"], S["kc"][t])
        h.eq(sorted(out.split()), ["namespace/default", "namespace/kube-public", "namespace/kube-system"],
             "namespaces of %s" % t)
    # across partitions both ways, within a partition, and the system tenant
    for user, other in (("allison", "a"), ("a", "allison"), ("acme", "a"), ("a", "system-x"),
                        ("system-x", "system"), ("allison", "acme")):
        r = user_client(user).get(h.pods_path(other))
        h.expect_status(r, 403, "%s reads pods of %s" % (user, other), "Forbidden")
        rc, _, err = h.kubectl(["get", "--raw", h.pods_path(other)], S["kc"][user])
        h.check(rc != 0 and "Forbidden" in err, "kubectl of %s on %s: %r" % (user, other, err))


def running_pods(kc, app, n=4):
    items = json.loads(k(["get", "pods", "-l", "app=" + app, "-o", "json"], kc))["items"]
    ok = [p for p in items if (p.get("status") or {}).get("phase") == "Running"
          and not p["metadata"].get("deletionTimestamp")]
    return ok if len(ok) == len(items) == n else None


def test_deployments_run_on_both_zones():
    for t in ("a", "allison"):
        k(["apply", "-f", "-"], S["kc"][t], input_text=DEPLOYMENT % {"name": "clock-" + t})
    for t in ("a", "allison"):
        pods = h.wait_until(lambda: running_pods(S["kc"][t], "clock-" + t), 60,
                            "4 pods of clock-%s Running" % t, interval=0.5)
        h.eq(sorted(p["spec"]["nodeName"] for p in pods), sorted(sorted(NODES) * 2), "nodes of clock-%s" % t)
        containers = {}
        for p in pods:
            pid = h.wait_until(lambda: region.container_pid(p), 10, "container of %s" % p["metadata"]["name"])
            region.check_in_container(p, pid, "clock-%s-" % t)
            containers[p["metadata"]["name"]] = pid
        S["containers-" + t] = containers
        k(["rollout", "status", "deployment", "clock-" + t, "--timeout", "30s"], S["kc"][t])
    kc = S["kc"]["a"]

    def logged():
        rc, out, _ = h.kubectl(["logs", "deployment/clock-a"], kc)
        return out if rc == 0 and re.match(r"clock-a-1\nclock-a-2\n", out) else None
    h.wait_until(logged, 20, "kubectl logs deployment/clock-a", interval=0.5)
    # kubectl get -w prints the pods there are (ADDED), then every change: a fifth pod that
    # goes from Pending to Running.
    w = h.Background(h.kubectl_args(["get", "pods", "-w", "--output-watch-events"], kc))
    try:
        def initial():
            added = {ln.split()[1] for ln in w.output() if ln.startswith("ADDED ")}
            return added if len(added) == 4 else None
        old = h.wait_until(initial, 15, "kubectl get pods -w lists the 4 pods (%r / %r)" % (w.output(), w.err))
        k(["scale", "deployment", "clock-a", "--replicas=5"], kc)
        line = w.wait_for(lambda ln: len(ln.split()) > 3 and ln.split()[0] == "MODIFIED" and
                          ln.split()[1] not in old and ln.split()[3] == "Running", 30)
        h.check(line, "watch saw no new pod Running: %r / %r" % (w.output(), w.err))
        h.check(w.proc.poll() is None, "kubectl get pods -w still watching")
    finally:
        w.stop()


class Prober(threading.Thread):
    """Lists the pods of one tenant through the gateway every 50 ms (raw HTTPS, or kubectl when
    kubectl=True), recording (start, seconds taken, status) of each request."""

    def __init__(self, tenant, kubectl=False):
        super().__init__(daemon=True)
        self.tenant, self.kubectl, self.stop, self.results = tenant, kubectl, threading.Event(), []
        self.client = user_client(tenant)

    def once(self):
        if self.kubectl:
            rc, _, err = h.kubectl(["get", "pods", "-o", "name"], S["kc"][self.tenant], timeout=20)
            return (200, None) if rc == 0 else ("kubectl rc %d" % rc, err.strip()[:300])
        try:
            r = self.client.get("/api/v1/namespaces/default/pods")
            return r.status, r
        except Exception as e:  # noqa: BLE001 - every failure counts
            return "%s: %s" % (type(e).__name__, e), None

    def run(self):
        while not self.stop.is_set():
            t0 = time.monotonic()
            status, detail = self.once()
            self.results.append((t0, time.monotonic() - t0, status, detail))
            time.sleep(0.05)

    def first(self, pred, after):
        return next((r for r in self.results if r[0] >= after and pred(r)), None)

    def failures(self, since=0.0):
        """Requests that did not succeed: (seconds after since, status, detail)."""
        return [(round(r[0] - since, 2), r[2], r[3]) for r in self.results if r[2] != 200]


def test_partition_loss_and_recovery():
    tp1, gw_pid = S["tp1"], S["gw"].pid
    probers = {t: Prober(t) for t in ("a", "system-x", "allison")}
    probers["kubectl a"] = Prober("a", kubectl=True)
    for p in probers.values():
        p.start()
    try:
        time.sleep(1.5)
        for name, p in probers.items():
            h.eq(p.failures(), [], "requests of %s before the loss" % name)
        t_kill = time.monotonic()
        h.kill(tp1.proc)  # returns once the process is gone
        t_dead = time.monotonic()
        h.wait_until(lambda: probers["allison"].first(lambda r: r[2] == 503, t_kill), 5, "allison gets 503")
        time.sleep(4)  # an outage of a few seconds for the tp-2 tenants to ride through
        t_restart = time.monotonic()
        tp1.start()  # the API server again, on the same port and etcd; returns once it is ready
        t_ready = time.monotonic()
        h.wait_until(lambda: probers["allison"].first(lambda r: r[2] == 200, t_restart), 15,
                     "allison succeeds again")
        time.sleep(1)
    finally:
        for p in probers.values():
            p.stop.set()
        for p in probers.values():
            p.join(30)
    al = probers["allison"]
    first503 = al.first(lambda r: r[2] == 503, t_kill)
    to_503 = first503[0] + first503[1] - t_kill
    back = al.first(lambda r: r[2] == 200, t_restart)
    to_back = back[0] + back[1] - t_restart
    print("tp-1 killed: first 503 for allison after %.3f s (answered in %.3f s); tp-1 restarted: ready after "
          "%.3f s, first success for allison %.3f s after the restart (%.3f s after ready); requests during the "
          "outage: %s" % (to_503, first503[1], t_ready - t_restart, to_back, back[0] + back[1] - t_ready,
                          ", ".join("%s %d" % (n, len(p.results)) for n, p in probers.items())), flush=True)
    h.check(to_503 <= 1.0, "first 503 for the tp-1 tenant %.3f s after the kill (want <= 1 s)" % to_503)
    h.expect_status(first503[3], 503, "allison while tp-1 is down", "ServiceUnavailable")
    outage = [r for r in al.results if t_kill <= r[0] and r[0] + r[1] <= t_restart]
    h.eq(sorted({r[2] for r in outage if r[0] >= first503[0]}), [503], "answers for allison during the outage")
    # a request the partition was answering when it died may end otherwise (504); any later
    # one gets 503 until the partition is back
    h.check({r[2] for r in al.results if r[0] >= t_dead} <= {200, 503},
            "allison got other answers than 200 and 503: %r" % al.failures(t_kill))
    h.check(max(r[1] for r in outage) < 1.0, "a 503 took %.3f s" % max(r[1] for r in outage))
    h.check(to_back <= 5.0, "allison succeeded %.3f s after tp-1's restart (want <= 5 s)" % to_back)
    after = [r for r in al.results if r[0] >= back[0]]
    h.eq([r[2] for r in after if r[2] != 200], [], "allison after the recovery")
    for name in ("a", "system-x", "kubectl a"):
        p = probers[name]
        during = [r for r in p.results if t_kill <= r[0] <= t_ready]
        # enough requests that the outage was really crossed, even on a loaded machine (a kubectl
        # run takes up to a second there; one outage lasts about 4 s)
        h.check(len(during) >= (2 if p.kubectl else 5), "%s made only %d requests during the outage" %
                (name, len(during)))
        h.eq(p.failures(t_kill), [], "failed requests of %s (tp-2) around tp-1's loss" % name)
    h.check(S["gw"].poll() is None and S["gw"].pid == gw_pid, "the gateway was not restarted")
    out = k(["get", "deployment", "clock-allison", "-o", "jsonpath={.status.readyReplicas}"], S["kc"]["allison"])
    h.eq(out, "4", "ready replicas of allison's deployment after the recovery")
    # tp-1's loss does not touch the nodes: allison's containers ran on, the same processes
    for name, pid in S["containers-allison"].items():
        h.check(region.pid_alive(pid), "container %d of %s (tp-1) still running" % (pid, name))


CRONTAB_CRD = """apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: crontabs.stable.example.com
spec:
  group: stable.example.com
  scope: Namespaced
  names: {plural: crontabs, singular: crontab, kind: CronTab}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              cronSpec: {type: string}
"""
SECRET_VALUE = "backup-test-plaintext-4f1c"


def ursactl_rc(args, env=None):
    return h.run_cmd([h.URSACTL_BIN] + args, 120, env=env or S["region"].env())


def tenant_objects(kc):
    out = {}
    for kind in ("configmaps", "secrets", "deployments", "crontabs"):
        items = json.loads(k(["get", kind, "-o", "json"], kc))["items"]
        out[kind] = {i["metadata"]["name"]: i for i in items}
    return out


def check_restored(kc, before, tenant):
    """The objects of before, back in tenant as new objects (new uids) whose owner references join
    up, with the secret's value and the custom resource's spec."""
    got = tenant_objects(kc)
    for kind, names in before.items():
        h.eq(sorted(got[kind]), sorted(names), "%s of %s after the restore" % (kind, tenant))
        for n, o in names.items():
            h.check(got[kind][n]["metadata"]["uid"] != o["metadata"]["uid"], "%s/%s of %s has a new uid" %
                    (kind, n, tenant))
            h.eq(got[kind][n]["metadata"].get("labels"), o["metadata"].get("labels"), "labels of %s/%s" % (kind, n))
    dep_uid = got["deployments"]["clock-a"]["metadata"]["uid"]
    rs = json.loads(k(["get", "replicasets", "-o", "json"], kc))["items"]
    h.check(rs and all(r["metadata"]["ownerReferences"][0]["uid"] == dep_uid for r in rs),
            "%s's replicasets point at its deployment" % tenant)
    h.eq(base64.b64decode(got["secrets"]["db"]["data"]["password"]).decode(), SECRET_VALUE, "secret of " + tenant)
    h.eq(got["crontabs"]["nightly"]["spec"]["cronSpec"], "0 3 * * *", "the custom resource of " + tenant)


def test_tenant_backup_and_restore():
    reg, kc = S["region"], S["kc"]["a"]
    key = os.path.join(reg.dir, "backup.key")
    with open(key, "w") as f:
        f.write(base64.b64encode(os.urandom(32)).decode() + "\n")
    k(["apply", "-f", "-"], kc, input_text=CRONTAB_CRD)
    h.wait_until(lambda: h.kubectl(["get", "crontabs"], kc)[0] == 0, 20, "crontabs served in tenant a")
    k(["apply", "-f", "-"], kc, input_text=(
        "apiVersion: stable.example.com/v1\nkind: CronTab\nmetadata:\n  name: nightly\n"
        "spec:\n  cronSpec: '0 3 * * *'\n"))
    k(["create", "configmap", "settings", "--from-literal=color=blue"], kc)
    k(["create", "secret", "generic", "db", "--from-literal=password=" + SECRET_VALUE], kc)
    before = tenant_objects(kc)
    path = os.path.join(reg.dir, "a.backup")
    out = reg.ursactl(["tenant", "backup", "a", path])
    h.check(re.search(r"^tenant a: \d+ objects \(1 secrets sealed", out), "ursactl backup: %r" % out)
    with open(path) as f:
        text = f.read()
    lines = [json.loads(line) for line in text.splitlines()]
    h.eq((lines[0]["kind"], lines[0]["tenant"], lines[0]["partition"]), ("TenantBackup", "a", "tp-2"), "header")
    h.eq(lines[-1], {"end": True, "objects": len(lines) - 2}, "trailer")
    kinds = {line.get("resource") for line in lines[1:-1]}
    for want in ("tenants", "namespaces", "customresourcedefinitions", "customresources/stable.example.com/crontabs",
                 "deployments", "replicasets", "pods", "configmaps", "secrets", "clusterroles"):
        h.check(want in kinds, "the backup has %s: %s" % (want, sorted(kinds)))
    for plain in (SECRET_VALUE, base64.b64encode(SECRET_VALUE.encode()).decode()):
        h.check(plain not in text, "the secret's value is in the backup file")
    h.check(any("sealed" in line for line in lines if line.get("resource") == "secrets"), "secrets sealed")

    # refused, and nothing left behind: another key, a file cut short, a bad body, a non-admin
    other = os.path.join(reg.dir, "other.key")
    with open(other, "w") as f:
        f.write(base64.b64encode(os.urandom(32)).decode() + "\n")
    rc, _, err = ursactl_rc(["tenant", "restore", path, "--as", "a3", "--key", other])
    h.check(rc != 0 and "sealed with backup key" in err, "restore with another key: %r" % err)
    cut = os.path.join(reg.dir, "cut.backup")
    with open(cut, "w") as f:
        f.write("\n".join(text.splitlines()[:-1]) + "\n")
    rc, _, err = ursactl_rc(["tenant", "restore", cut, "--as", "a3"])
    h.check(rc != 0 and "incomplete" in err, "restore of a file cut short: %r" % err)
    admin1 = S["tp1"].admin()
    r = admin1.post("/ursa/v1/tenants/a3/restore", {"from": "a", "restore": "r1", "items": [
        lines[1], {"resource": "pods", "path": "default/x", "object": {"metadata": {"name": "y"}}}]})
    h.expect_status(r, 400, "restore with a bad item", "BadRequest")
    h.check("items[1]" in r.json["message"], r.json["message"])
    r = admin1.post("/ursa/v1/tenants/a3/restore", {"from": "a", "restore": "r1", "items": []})
    h.expect_status(r, 404, "restore batch without the tenant", "NotFound")
    r = user_client("a").get("/ursa/v1/tenants/a/backup")
    h.check(r.status in (403, 404), "a tenant's user reads a backup through the gateway: %d" % r.status)
    r = h.Client(S["tp2"].url, reg.ca, h.kubeconfig_token(kc)).get("/ursa/v1/tenants/a/backup")
    h.expect_status(r, 403, "a tenant's user reads a backup from the partition", "Forbidden")
    h.expect_status(admin1.get("/ursa/v1/tenants/nobody/backup"), 404, "backup of a missing tenant", "NotFound")
    for tp in (S["tp1"], S["tp2"]):
        h.expect_status(tp.admin().get("/api/v1/tenants/a3"), 404, "a3 after the refused restores", "NotFound")
    rc, _, err = ursactl_rc(["tenant", "restore", path])
    h.check(rc != 0 and "exists" in err, "restore over the existing tenant a: %r" % err)

    # delete a and restore it at once (ursactl waits while the partition removes a's objects):
    # the same objects, and the deployment runs again
    k(["delete", "tenant", "a", "--wait=false"], S["admin_kc"])
    t0 = time.monotonic()
    out = reg.ursactl(["tenant", "restore", path])
    h.check(re.search(r"(?m)^tenant a: \d+ objects restored on tp-2", out), "ursactl restore: %r" % out)
    h.eq(k(["get", "tenant", "a", "-o", "jsonpath={.status.phase}"], S["admin_kc"]), "Active", "a's phase")
    n = before["deployments"]["clock-a"]["spec"]["replicas"]
    pods = h.wait_until(lambda: running_pods(kc, "clock-a", n), 90, "%d pods of clock-a Running again" % n,
                        interval=0.5)
    print("restore of a: deployment Running again %.1f s after the restore began" % (time.monotonic() - t0))
    check_restored(kc, before, "a")
    h.check(all(p["spec"]["nodeName"] in NODES for p in pods), "pods placed on the nodes")

    # the same backup as a copy, a2, on the other partition
    out = reg.ursactl(["tenant", "restore", path, "--as", "a2", "--to", "tp-1"])
    h.check("a2 (a copy of a" in out, out)
    kc2 = reg.kubeconfig("gw-a2", "a2", "u-a2", S["gw_url"])
    h.wait_until(lambda: running_pods(kc2, "clock-a", n), 90, "%d pods of a2's clock-a Running" % n, interval=0.5)
    check_restored(kc2, before, "a2")
    got = {row.split()[0]: row.split()[3] for row in k(["get", "tenants"], S["admin_kc"]).splitlines()[1:]}
    h.eq((got.get("a"), got.get("a2")), ("tp-2", "tp-1"), "partitions of a and a2")
    h.expect_status(S["tp2"].admin().get("/api/v1/tenants/a2"), 404, "a2 only on tp-1", "NotFound")


def teardown():
    for p in S.get("daemons") or []:
        h.terminate(p, 10)
    h.terminate(S.get("gw"), 10)
    region.teardown()


if __name__ == "__main__":
    h.run(globals())
