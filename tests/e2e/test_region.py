#!/usr/bin/python3
"""A small region like the one deploy/local-up.sh starts, in a temporary directory on free
ports: tenant partition tp-1 and resource managers rm-az-1 (zone az-1) and rm-az-2 (zone az-2),
each with its own etcd, registered with `ursactl register`; a real node per zone (az-1-host-1,
az-2-host-1: ursa-kubelet --runtime cri on a containerd of its own, images busybox:1.36 and
httpd:1 from a local registry, tests/lib/ursa_cri.py) and a hollow kubelet of three nodes in
az-2. With stock kubectl: each RM lists its nodes Ready with their zone labels; a tenant's pod
bound to az-1-host-1 runs in a container of that node's containerd (its command in a task of
the CRI namespace, an address of the node's pod network), `kubectl logs [-f]` prints its output
through the partitions, and deleting it kills the container and removes its sandbox; a second
TP registered after the kubelets started is picked up by them without a restart. Needs root.

Run alone: URSA_BUILD_DIR=build /usr/bin/python3 tests/e2e/test_region.py
The steps build on each other and run in file order."""

import http.client
import ipaddress
import json
import os
import re
import secrets
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import ursa_harness as h  # noqa: E402
import ursa_cri as cri  # noqa: E402

TP_BIN = os.path.join(h.BUILD_DIR, "src", "tenant-partition", "ursa-tp-apiserver")
RM_BIN = os.path.join(h.BUILD_DIR, "src", "resource-manager", "ursa-rm-apiserver")
KUBELET_BIN = os.path.join(h.BUILD_DIR, "src", "kubelet", "ursa-kubelet")
ZONE_LABEL = "topology.kubernetes.io/zone"
HOLLOW = ["az-2-hollow-0", "az-2-hollow-1", "az-2-hollow-2"]

S = {"kubelets": []}

# The shell is PID 1 of the container's PID namespace, which ignores TERM without a handler: the
# trap makes it end on the kubelet's TERM rather than wait out the grace period for the KILL.
POD_YAML = """apiVersion: v1
kind: Pod
metadata:
  name: %(name)s
spec:
  terminationGracePeriodSeconds: 5
  containers:
  - name: main
    image: busybox:1.36
    command: ["sh", "-c", "trap 'exit 0' TERM; i=0; while true; do i=$((i+1)); echo %(marker)s-$i; sleep 1; done"]
"""


class Region:
    """The region's shared identity: one CA and server certificate, the ursactl signing key,
    a static admin token and the region token, in one directory that is URSA_HOME."""

    def __init__(self):
        self.dir = h.make_tmpdir("region")
        self.ca, self.cert, self.key = h.make_ca(self.dir)
        h.must_run([h.URSACTL_BIN, "keygen", "--out-dir", self.dir])
        self.admin_token = secrets.token_hex(24)
        self.tokens = os.path.join(self.dir, "tokens.csv")
        with open(self.tokens, "w") as f:
            f.write('%s,admin,admin,"%s",%s\n' % (self.admin_token, h.ADMIN_GROUP, h.ADMIN_TENANT))
        self.region_token = os.path.join(self.dir, "region.token")
        with open(self.region_token, "w") as f:
            f.write(self.ursactl(["token", "--tenant", "system", "--user", "region",
                                  "--groups", "system:masters", "--ttl", "0"]))
        # what the API servers send to kubelets for pod logs: a secret no API server accepts
        self.kubelet_token = os.path.join(self.dir, "kubelet-client.token")
        with open(self.kubelet_token, "w") as f:
            f.write(os.urandom(32).hex() + "\n")

    def env(self):
        e = dict(os.environ, URSA_HOME=self.dir)
        for k in ("URSA_SIGNING_KEY", "URSA_SERVER", "URSA_CA_FILE"):
            e.pop(k, None)
        return e

    def ursactl(self, args, timeout=60):
        rc, out, err = h.run_cmd([h.URSACTL_BIN] + args, timeout, env=self.env())
        if rc != 0:
            raise h.HarnessError("ursactl %s: exit %d\nstdout: %s\nstderr: %s" % (" ".join(args), rc, out, err))
        return out

    def kubeconfig(self, name, tenant, user, server, groups=None):
        args = ["kubeconfig", "--tenant", tenant, "--user", user, "--ttl", "0", "--server", server]
        if groups:
            args += ["--groups", groups]
        path = os.path.join(self.dir, name + ".kubeconfig")
        with open(path, "w") as f:
            f.write(self.ursactl(args))
        return path


class Partition:
    """ursa-tp-apiserver or ursa-rm-apiserver with its own etcd, on a free port."""

    def __init__(self, region, kind, name, zone=None):
        self.region, self.kind, self.name, self.zone = region, kind, name, zone
        self.bin = TP_BIN if kind == "tp" else RM_BIN
        h.require_binary(self.bin, os.path.basename(self.bin))
        self.etcd = h.Etcd(name="etcd-" + name)
        self.port = h.free_port()
        self.url = "https://127.0.0.1:%d" % self.port
        self.log = os.path.join(region.dir, name + ".log")
        h._logs.append((name, self.log))
        self.proc = None

    def number_args(self):
        """A tenant partition's --partition-number, as deploy/local-up.sh gives it: tp-2 -> 2."""
        num = self.name.rsplit("-", 1)[-1]
        return ["--partition-number", num] if self.bin == TP_BIN and num.isdigit() else []

    def start(self):
        self.etcd.start()
        r = self.region
        self.proc = h.spawn([self.bin, "--listen", "127.0.0.1:%d" % self.port,
                             "--etcd-servers", self.etcd.endpoints, "--etcd-prefix", "/registry",
                             "--tls-cert-file", r.cert, "--tls-private-key-file", r.key,
                             "--token-auth-file", r.tokens,
                             "--token-signing-public-key", os.path.join(r.dir, "signing-key.pub"),
                             "--region-token-file", r.region_token, "--region-ca-file", r.ca,
                             "--kubelet-token-file", r.kubelet_token,
                             "--partition-id", self.name, "--log-level", "info"] + self.number_args(), self.log)
        c = self.admin(timeout=3)
        deadline = time.monotonic() + 60
        while True:
            if self.proc.poll() is not None:
                raise h.HarnessError("%s exited (%s); log:\n%s" % (self.name, self.proc.returncode,
                                                                     h.log_tail(self.log)))
            try:
                if c.get("/readyz").status == 200:
                    break
            except (OSError, http.client.HTTPException):
                pass
            if time.monotonic() > deadline:
                raise h.HarnessError("%s not ready in 60 s; log:\n%s" % (self.name, h.log_tail(self.log)))
            time.sleep(0.1)
        self.admin_kc = r.kubeconfig(self.name, "system", "admin", self.url, "system:masters")
        return self

    def register(self, gateway_etcd=None):
        """`ursactl register`; with gateway_etcd (URLs), also records the partition there."""
        args = ["register", "--kind", self.kind, "--name", self.name, "--endpoints", self.url]
        if self.zone:
            args += ["--zone", self.zone]
        if gateway_etcd:
            args += ["--gateway-etcd", gateway_etcd]
        return self.region.ursactl(args)

    def admin(self, timeout=30):
        return h.Client(self.url, self.region.ca, self.region.admin_token, timeout)


class Kubelet:
    """ursa-kubelet against its zone's RM: one real node (the cri runtime on a containerd of its
    own, .cri, started here; HTTPS server) or hollow nodes (fake runtime, no server)."""

    def __init__(self, region, rm, name, hollow=0):
        h.require_binary(KUBELET_BIN, "ursa-kubelet")
        self.rm, self.name, self.hollow = rm, name, hollow
        self.root = os.path.join(region.dir, rm.zone, name)
        self.log = os.path.join(region.dir, rm.zone, name + ".log")
        os.makedirs(self.root)
        h._logs.append(("kubelet " + name, self.log))
        # A node's credential (group system:nodes), as local-up makes it: a real node's names it
        # (user system:node:<name>: it writes only that node, its lease and its pods), the hollow
        # kubelet's, holding many nodes, names none.
        kc = os.path.join(region.dir, rm.zone, ("node" if hollow else name) + ".kubeconfig")
        user = "kubelet-" + rm.zone if hollow else "system:node:" + name
        if not os.path.exists(kc):
            with open(kc, "w") as f:
                f.write(region.ursactl(["kubeconfig", "--tenant", "system", "--user", user,
                                        "--groups", "system:nodes", "--ttl", "0", "--server", rm.url]))
        a = [KUBELET_BIN, "--kubeconfig", kc, "--zone", rm.zone, "--region", "local",
             "--root-dir", self.root, "--address", "127.0.0.1"]
        self.cri = None
        if hollow:
            self.nodes = ["%s-%d" % (name, i) for i in range(hollow)]
            a += ["--hollow-nodes", str(hollow), "--hollow-prefix", name, "--port", "0",
                  "--cpu", "8", "--memory", "32Gi"]
        else:
            self.nodes = [name]
            self.port = h.free_port()
            self.cri = cri.CriNode(name)
            a += ["--node-name", name, "--port", str(self.port),
                  "--tls-cert-file", region.cert, "--tls-private-key-file", region.key,
                  "--client-token-file", region.kubelet_token] + self.cri.kubelet_args()
        self.args = a
        self.proc = None

    def start(self):
        if self.cri is not None and not self.cri.running():
            self.cri.start()
        self.proc = h.spawn(self.args, self.log)
        if self not in S["kubelets"]:
            S["kubelets"].append(self)
        return self

    def running(self):
        return self.proc is not None and self.proc.poll() is None


def teardown():
    """The kubelets first, then their nodes' containerd (containers, shims, mounts, bridges).
    ursa_cri does the same at exit when the test ends otherwise."""
    t0 = time.monotonic()
    for k in S["kubelets"]:
        h.terminate(k.proc, 10)
    t1 = time.monotonic()
    for k in S["kubelets"]:
        if k.cri is not None:
            k.cri.teardown()
    print("teardown: kubelets stopped in %.1fs, their containerd torn down in %.1fs"
          % (t1 - t0, time.monotonic() - t1), flush=True)


# ---------------------------------------------------------------------------------------------
# Helpers

def k(args, kc, timeout=60):
    rc, out, err = h.kubectl(args, kc, timeout)
    if rc != 0:
        raise AssertionError("kubectl %s: exit %d\nstdout: %s\nstderr: %s" % (" ".join(args), rc, out, err))
    return out


def write(name, text):
    path = os.path.join(S["region"].dir, name)
    with open(path, "w") as f:
        f.write(text)
    return path


def ready_nodes(rm):
    r = rm.admin().get("/api/v1/nodes")
    if r.status != 200:
        return set()
    return {n["metadata"]["name"] for n in r.json.get("items") or []
            if any(c.get("type") == "Ready" and c.get("status") == "True"
                   for c in (n.get("status") or {}).get("conditions") or [])}


def run_bound_pod(tp_kc, name, marker, node="az-1-host-1"):
    """Creates a pod with kubectl, binds it to node with `kubectl create --raw` and waits until
    it is Running there. Returns the pod object."""
    out = k(["create", "-f", write(name + ".yaml", POD_YAML % {"name": name, "marker": marker})], tp_kc)
    h.eq(out.strip(), "pod/%s created" % name, "kubectl create -f output")
    binding = {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": name},
               "target": {"apiVersion": "v1", "kind": "Node", "name": node}}
    out = k(["create", "--raw", "/api/v1/namespaces/default/pods/%s/binding" % name,
             "-f", write(name + "-binding.json", json.dumps(binding))], tp_kc)
    st = json.loads(out)
    h.eq((st.get("kind"), st.get("status")), ("Status", "Success"), "binding answer %s" % out)

    def running():
        p = json.loads(k(["get", "pod", name, "-o", "json"], tp_kc))
        return p if (p.get("status") or {}).get("phase") == "Running" else None
    pod = h.wait_until(running, 60, "pod %s Running" % name, interval=0.5)
    h.eq(pod["spec"]["nodeName"], node, "spec.nodeName")
    out = k(["get", "pod", name, "-o", "wide"], tp_kc)
    row = out.splitlines()[1].split()
    h.eq((row[0], row[2], row[6]), (name, "Running", node), "kubectl get pod -o wide row %r" % out)
    return pod


def node_of(pod):
    name = pod["spec"]["nodeName"]
    return next(kl for kl in S["kubelets"] if kl.cri is not None and kl.name == name)


def container_pid(pod):
    """The host PID of the pod's container (the first one's) as the node's containerd reports
    its task, once the pod status names the container; None before."""
    st = pod.get("status") or {}
    cid = ((st.get("containerStatuses") or [{}])[0]).get("containerID") or ""
    if not cid.startswith("containerd://"):
        return None
    return node_of(pod).cri.task_pid(cid)


def check_in_container(pod, pid, marker):
    """pid (container_pid) runs the pod's command (its command line has marker) in a container of
    the pod's sandbox on the node's containerd, with an address of the node's pod network.
    Returns the sandbox's id."""
    name = pod["metadata"]["name"]
    node = node_of(pod).cri
    with open("/proc/%d/cmdline" % pid, "rb") as f:
        cmdline = f.read()
    h.check(marker.encode() in cmdline, "the container of %s runs the pod's command: %r" % (name, cmdline))
    # its own PID namespace: not the host's
    h.check(os.readlink("/proc/%d/ns/pid" % pid) != os.readlink("/proc/self/ns/pid"),
            "container %d of %s in the host's PID namespace" % (pid, name))
    sb = node.sandboxes(name)
    h.eq([s["state"] for s in sb], [0], "sandboxes of %s on %s (state 0: ready)" % (name, node.name))
    cid = pod["status"]["containerStatuses"][0]["containerID"].split("://", 1)[1]
    cs = node.containers(sb[0]["id"])
    h.eq([(c["id"], c["state"]) for c in cs], [(cid, "RUNNING")], "containers of %s's sandbox" % name)
    ip = pod["status"].get("podIP")
    h.check(ip and ipaddress.ip_address(ip) in node.subnet,
            "podIP %r of %s in %s's pod network %s" % (ip, name, node.name, node.subnet))
    return sb[0]["id"]


def pid_alive(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def check_logs(tp_kc, name, marker):
    def logged():
        rc, out, _ = h.kubectl(["logs", name], tp_kc)
        lines = out.splitlines() if rc == 0 else []
        return lines if len(lines) >= 2 else None
    lines = h.wait_until(logged, 20, "kubectl logs %s prints two lines" % name, interval=0.5)
    h.eq(lines[:2], ["%s-1" % marker, "%s-2" % marker], "kubectl logs %s" % name)
    out = k(["logs", "--tail", "1", name], tp_kc)
    h.check(re.fullmatch(r"%s-\d+\n" % marker, out), "kubectl logs --tail 1: %r" % out)
    # -f goes on printing as the container does
    f = h.Background(h.kubectl_args(["logs", "-f", name], tp_kc))
    try:
        last = len(lines)
        line = f.wait_for(lambda ln: ln.startswith(marker + "-") and int(ln.split("-")[-1]) > last + 1, 20)
        h.check(line, "kubectl logs -f printed no new line past %d: %r / %r" % (last, f.output(), f.err))
        h.eq(f.output()[0], "%s-1" % marker, "kubectl logs -f starts at the first line")
        h.check(f.proc.poll() is None, "kubectl logs -f still following")
    finally:
        f.stop()


def delete_and_check_stopped(tp_kc, name, pid, node, sandbox):
    out = k(["delete", "pod", name], tp_kc, timeout=60)
    h.eq(out.strip(), 'pod "%s" deleted' % name, "kubectl delete output")
    h.wait_until(lambda: not pid_alive(pid), 15, "container process %d ended" % pid)
    rc, _, err = h.kubectl(["get", "pod", name], tp_kc)
    h.check(rc != 0 and "NotFound" in err, "pod still there after delete: %s" % err)
    h.wait_until(lambda: all(s["id"] != sandbox for s in node.sandboxes()), 30,
                 "sandbox %s of %s removed from %s's containerd" % (sandbox, name, node.name))
    h.eq(node.containers(sandbox), [], "containers of the removed sandbox")


# ---------------------------------------------------------------------------------------------
# Tests

def setup():
    region = Region()
    tp1 = Partition(region, "tp", "tp-1").start()
    rm1 = Partition(region, "rm", "rm-az-1", "az-1").start()
    rm2 = Partition(region, "rm", "rm-az-2", "az-2").start()
    for p in (tp1, rm1, rm2):
        p.register()
    S.update(region=region, tp1=tp1, rm1=rm1, rm2=rm2)
    S["host1"] = Kubelet(region, rm1, "az-1-host-1").start()
    S["host2"] = Kubelet(region, rm2, "az-2-host-1").start()
    S["hollow"] = Kubelet(region, rm2, "az-2-hollow", hollow=3).start()


def test_registry():
    out = S["region"].ursactl(["partitions"])
    rows = [ln.split() for ln in out.splitlines()[1:]]
    h.eq(sorted(r[:3] for r in rows), [["rm", "rm-az-1", "az-1"], ["rm", "rm-az-2", "az-2"], ["tp", "tp-1", "-"]],
         "ursactl partitions")
    for rm in (S["rm1"], S["rm2"]):
        tps = json.loads(k(["get", "tenantpartitions", "-o", "json"], rm.admin_kc))["items"]
        h.eq([(t["metadata"]["name"], t["spec"]["endpoints"]) for t in tps], [("tp-1", [S["tp1"].url])],
             "tenant partitions in %s" % rm.name)
    rms = json.loads(k(["get", "resourcemanagers", "-o", "json"], S["tp1"].admin_kc))["items"]
    h.eq(sorted((r["metadata"]["name"], r["spec"]["zone"], r["spec"]["endpoints"][0]) for r in rms),
         [("rm-az-1", "az-1", S["rm1"].url), ("rm-az-2", "az-2", S["rm2"].url)], "resource managers in tp-1")


def test_nodes_ready_per_zone():
    want = {"rm-az-1": {"az-1-host-1"}, "rm-az-2": {"az-2-host-1"} | set(HOLLOW)}
    for rm in (S["rm1"], S["rm2"]):
        h.wait_until(lambda: ready_nodes(rm) == want[rm.name], 60, "Ready nodes of %s" % rm.name)
        for kl in S["kubelets"]:
            h.check(kl.running(), "kubelet %s exited (%s)" % (kl.name, kl.proc.poll()))
        out = k(["get", "nodes"], rm.admin_kc)
        lines = out.splitlines()
        h.check(re.fullmatch(r"NAME\s+STATUS\s+ROLES\s+AGE\s+VERSION", lines[0]), "header %r" % lines[0])
        rows = {ln.split()[0]: ln.split() for ln in lines[1:]}
        h.eq(set(rows), want[rm.name], "kubectl get nodes of %s" % rm.name)
        for name, row in rows.items():
            h.eq(row[1], "Ready", "STATUS of %s" % name)
        nodes = json.loads(k(["get", "nodes", "-o", "json"], rm.admin_kc))["items"]
        zone = rm.zone
        for n in nodes:
            labels = n["metadata"].get("labels") or {}
            h.eq(labels.get(ZONE_LABEL), zone, "zone label of %s" % n["metadata"]["name"])
            h.eq(labels.get("kubernetes.io/hostname"), n["metadata"]["name"], "hostname label")
        out = k(["get", "nodes", "-l", "%s=%s" % (ZONE_LABEL, zone), "-o", "name"], rm.admin_kc)
        h.eq(sorted(out.split()), sorted("node/" + n for n in want[rm.name]), "nodes selected by zone label")


def test_pod_on_real_node_runs_and_logs():
    tp1 = S["tp1"]
    out = k(["create", "-f", write("acme.yaml", "apiVersion: v1\nkind: Tenant\nmetadata:\n  name: acme\n")],
            tp1.admin_kc)
    h.eq(out.strip(), "tenant/acme created", "create tenant")
    h.wait_until(lambda: tp1.admin().get("/api/v1/tenants/acme/namespaces/default").status == 200, 15,
                 "namespace default of acme")
    S["alice"] = S["region"].kubeconfig("acme-alice", "acme", "alice", tp1.url)
    pod = run_bound_pod(S["alice"], "clock", "tick")
    pid = h.wait_until(lambda: container_pid(pod), 10, "container process of clock")
    S["clock"] = (pid, node_of(pod).cri, check_in_container(pod, pid, "tick-"))
    check_logs(S["alice"], "clock", "tick")
    # The kubelet serves logs to the holder of the kubelet token only: the partitions' region
    # token (an administrator's) and no token are refused, and the kubelet token itself opens no
    # API server.
    node = [kl for kl in S["kubelets"] if not kl.hollow][0]
    logs = "/containerLogs/default/clock/main?tenant=acme&tailLines=1"
    with open(S["region"].kubelet_token) as f:
        kubelet_token = f.read().strip()
    with open(S["region"].region_token) as f:
        region_token = f.read().strip()
    kc = h.Client("https://127.0.0.1:%d" % node.port, S["region"].ca, kubelet_token)
    h.expect_status(kc.get(logs), 200, "kubelet logs with the kubelet token")
    for tok, what in ((region_token, "the region token"), (None, "no token")):
        r = h.Client("https://127.0.0.1:%d" % node.port, S["region"].ca, tok).get(logs)
        h.check(r.status in (401, 403), "kubelet logs with %s: %r" % (what, r))
    r = h.Client(tp1.url, S["region"].ca, kubelet_token).get("/api/v1/namespaces")
    h.check(r.status == 401, "the kubelet token opens no API server: %r" % r)


def test_delete_stops_container():
    delete_and_check_stopped(S["alice"], "clock", *S["clock"])


def test_tp_registered_later_is_picked_up():
    pids = [kl.proc.pid for kl in S["kubelets"]]
    tp2 = Partition(S["region"], "tp", "tp-2").start()
    out = tp2.register()
    for rm in ("rm-az-1", "rm-az-2"):
        h.check("rm %s: tenantpartition tp-2 registered" % rm in out, "ursactl register output: %r" % out)
    out = k(["create", "-f", write("zeta.yaml", "apiVersion: v1\nkind: Tenant\nmetadata:\n  name: zeta\n")],
            tp2.admin_kc)
    h.eq(out.strip(), "tenant/zeta created", "create tenant on tp-2")
    h.wait_until(lambda: tp2.admin().get("/api/v1/tenants/zeta/namespaces/default").status == 200, 15,
                 "namespace default of zeta")
    bob = S["region"].kubeconfig("zeta-bob", "zeta", "bob", tp2.url)
    pod = run_bound_pod(bob, "late", "late")
    pid = h.wait_until(lambda: container_pid(pod), 10, "container process of late")
    sandbox = check_in_container(pod, pid, "late-")
    check_logs(bob, "late", "late")
    h.eq([kl.proc.pid for kl in S["kubelets"]], pids, "kubelet pids (no restart)")
    h.check(all(kl.running() for kl in S["kubelets"]), "every kubelet still running")
    delete_and_check_stopped(bob, "late", pid, node_of(pod).cri, sandbox)


if __name__ == "__main__":
    h.run(globals())
