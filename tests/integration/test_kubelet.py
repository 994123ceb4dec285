"""ursa-kubelet against a real region slice: etcd + resource manager (RM) + tenant partition (TP),
a kubelet with the process runtime, and a hollow kubelet with 100 nodes."""

import atexit
import glob
import os
import signal
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import ursa_harness as h  # noqa: E402
import ursa_region  # noqa: E402

KUBELET_BIN = os.path.join(h.BUILD_DIR, "src", "kubelet", "ursa-kubelet")
LEASES = "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases"
REGISTRY = "/apis/ursa.io/v1/tenantpartitions"
NODE = "kl-node-1"

S = {}
KUBELETS = []


def kill_containers():
    """Containers outlive their kubelet by design: end those our kubelets left behind."""
    ursa_region.kill_containers(KUBELETS)


def teardown():
    kill_containers()  # before the harness removes the directories


atexit.register(kill_containers)  # also when the run is cut short


class Kubelet:
    def __init__(self, kubeconfig, extra=(), name="kubelet"):
        h.require_binary(KUBELET_BIN, "ursa-kubelet")
        self.dir = h.make_tmpdir(name)
        self.port = h.free_port()
        self.kubeconfig = kubeconfig
        self.extra = list(extra)
        self.log = os.path.join(self.dir, "kubelet.log")
        h._logs.append((name, self.log))
        self.proc = None
        KUBELETS.append(self)

    def args(self):
        return [KUBELET_BIN, "--kubeconfig", self.kubeconfig, "--root-dir", self.dir,
                "--port", str(self.port), "--address", "127.0.0.1", "--zone", "az-1"] + self.extra

    def start(self):
        self.proc = h.spawn(self.args(), self.log)
        return self

    def stop(self):
        return h.terminate(self.proc)

    def log_text(self):
        with open(self.log, errors="replace") as f:
            return f.read()


def setup():
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
    # the kubelets hold a node's credential (group system:nodes), as in a region
    S["node_kc"] = rm.kubeconfig("system", "kubelet-it", ("system:nodes",))
    kl = Kubelet(S["node_kc"], ["--node-name", NODE, "--cpu", "2", "--memory", "4Gi",
                                         "--max-pods", "10"])
    kl.start()
    S.update(etcd_tp=etcd_tp, etcd_rm=etcd_rm, rm=rm, tp=tp, kl=kl, admin=admin, tpadmin=tp.admin())


def get_node(name=NODE):
    r = S["admin"].get("/api/v1/nodes/" + name)
    return r.json if r.status == 200 else None


def ready(node):
    for c in (node or {}).get("status", {}).get("conditions", []):
        if c.get("type") == "Ready":
            return c.get("status") == "True"
    return False


def test_node_registers_ready():
    h.wait_until(lambda: ready(get_node()), 20, "node %s Ready" % NODE)
    n = get_node()
    labels = n["metadata"]["labels"]
    h.eq(labels.get("kubernetes.io/hostname"), NODE, "hostname label")
    h.eq(labels.get("topology.kubernetes.io/zone"), "az-1", "zone label")
    h.eq(labels.get("topology.kubernetes.io/region"), "local", "region label")
    h.check("node-role.kubernetes.io/worker" in labels, "worker role label: %s" % labels)
    h.eq(n["metadata"]["annotations"].get("ursa.io/kubelet-scheme"), "http", "scheme annotation")
    h.check(n["metadata"]["annotations"].get("ursa.io/kubelet-id"), "kubelet-id annotation")
    st = n["status"]
    h.eq(st["capacity"]["cpu"], "2", "cpu capacity")
    h.eq(st["allocatable"]["memory"], "4194304Ki", "memory allocatable")
    h.eq(st["capacity"]["pods"], "10", "pods capacity")
    h.eq(st["daemonEndpoints"]["kubeletEndpoint"]["Port"], S["kl"].port, "kubelet port")
    h.check({"type": "InternalIP", "address": "127.0.0.1"} in st["addresses"], "InternalIP %s" % st["addresses"])
    types = sorted(c["type"] for c in st["conditions"])
    h.eq(types, ["DiskPressure", "MemoryPressure", "PIDPressure", "Ready"], "condition types")
    h.check(st["nodeInfo"]["kubeletVersion"].startswith("v1.32"), "kubeletVersion")
    rc, out, err = h.kubectl(["get", "nodes"], S["rm"].admin_kubeconfig())
    h.eq(rc, 0, "kubectl get nodes rc (stderr %s)" % err)
    lines = out.splitlines()
    h.check(lines[0].split() == ["NAME", "STATUS", "ROLES", "AGE", "VERSION"], "header: %r" % lines[0])
    row = [line.split() for line in lines[1:] if line.split()[0] == NODE]
    h.check(row and row[0][1] == "Ready" and row[0][2] == "worker", "kubectl row: %r" % out)


def test_lease_renewed():
    path = LEASES + "/" + NODE
    h.wait_until(lambda: S["admin"].get(path).status == 200, 20, "lease exists")
    first = S["admin"].get(path).json["spec"]
    h.eq(first["holderIdentity"], NODE, "holderIdentity")
    h.eq(first["leaseDurationSeconds"], 40, "leaseDurationSeconds")
    h.wait_until(lambda: S["admin"].get(path).json["spec"]["renewTime"] != first["renewTime"], 15,
                 "lease renewTime advances within one renew period (10 s)")


def make_pod(name, command, cpu=None, restart="Always"):
    c = {"name": "c", "image": "busybox:1.36", "command": command}
    if cpu:
        c["resources"] = {"requests": {"cpu": cpu}}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"containers": [c], "restartPolicy": restart, "terminationGracePeriodSeconds": 5}}


def bind(admin, tenant, name, node=NODE):
    body = {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": name},
            "target": {"apiVersion": "v1", "kind": "Node", "name": node}}
    for _ in range(50):
        r = admin.post(h.pods_path(tenant, name=name) + "/binding", body)
        if r.status != 404:  # the pod may not be visible to the binding a moment after its create
            break
        time.sleep(0.1)
    h.check(r.status in (200, 201), "bind %s: %s %s" % (name, r.status, r.body[:300]))


def create_bound(admin, tenant, pod, node=NODE):
    r = admin.post(h.pods_path(tenant), pod)
    h.expect_status(r, 201, "create pod %s" % pod["metadata"]["name"])
    bind(admin, tenant, pod["metadata"]["name"], node)


def pod_status(admin, tenant, name):
    r = admin.get(h.pods_path(tenant, name=name))
    return r.json.get("status", {}) if r.status == 200 else None


def test_pod_runs_and_logs():
    tp = S["tpadmin"]
    create_bound(tp, "acme", make_pod("web", ["sh", "-c", "echo hello-from-web; exec sleep 300"]))
    h.wait_until(lambda: (pod_status(tp, "acme", "web") or {}).get("phase") == "Running", 30, "pod Running")
    st = pod_status(tp, "acme", "web")
    h.eq(st["podIP"], "127.0.0.1", "podIP")
    h.eq(st["hostIP"], "127.0.0.1", "hostIP")
    h.check(st.get("startTime"), "startTime")
    cs = st["containerStatuses"][0]
    h.check(cs["ready"] and cs["started"] and "running" in cs["state"], "container status %s" % cs)
    h.check(cs["imageID"] and cs["containerID"].startswith("process://"), "ids %s" % cs)
    conds = {c["type"]: c["status"] for c in st["conditions"]}
    h.eq(conds, {"PodScheduled": "True", "Initialized": "True", "ContainersReady": "True", "Ready": "True",
                 "PodReadyToStartContainers": "True"}, "conditions")
    uid = tp.get(h.pods_path("acme", name="web")).json["metadata"]["uid"]
    S["web_uid"] = uid

    def logged():
        files = glob.glob(os.path.join(S["kl"].dir, "runtime", "logs", "acme_default_web", "c", "*.log"))
        return any("hello-from-web" in open(f, errors="replace").read() for f in files)
    h.wait_until(logged, 10, "container output in its log file")
    c = h.Client("http://127.0.0.1:%d" % S["kl"].port)
    r = c.get("/containerLogs/default/web/c?tenant=acme")
    h.check(r.status == 200 and b"hello-from-web" in r.body, "/containerLogs: %s %r" % (r.status, r.body[:200]))
    h.eq(c.get("/healthz").status, 200, "/healthz")


def test_too_big_fails_outofcpu():
    tp = S["tpadmin"]
    create_bound(tp, "acme", make_pod("huge", ["sleep", "100"], cpu="3"))
    h.wait_until(lambda: (pod_status(tp, "acme", "huge") or {}).get("phase") == "Failed", 20, "pod Failed")
    st = pod_status(tp, "acme", "huge")
    h.eq(st.get("reason"), "OutOfcpu", "reason")
    h.check("cpu" in st.get("message", ""), "message: %s" % st.get("message"))


def test_bad_spec_fails_pod_only():
    tp = S["tpadmin"]
    pod = make_pod("nocmd", ["/nonexistent/program"], restart="Never")
    pod["spec"]["containers"][0]["env"] = [{"name": "X", "valueFrom": {"fieldRef": {"fieldPath": "x"}}}]
    create_bound(tp, "acme", pod)
    h.wait_until(lambda: (pod_status(tp, "acme", "nocmd") or {}).get("phase") == "Failed", 20, "bad pod Failed")
    h.eq(pod_status(tp, "acme", "nocmd").get("reason"), "InvalidPodSpec", "reason")
    h.check(S["kl"].proc.poll() is None, "kubelet still running")
    h.eq(pod_status(tp, "acme", "web")["phase"], "Running", "other pod still Running")


def test_security_context_ids():
    """runAsUser/runAsGroup/supplementalGroups reach the process (the kubelet runs as root here);
    runAsNonRoot without runAsUser fails the pod, which would run as root."""
    tp = S["tpadmin"]
    pod = make_pod("ids", ["sh", "-c", "echo uid=$(id -u) gid=$(id -g) groups=$(id -G); exec sleep 300"])
    pod["spec"]["securityContext"] = {"runAsUser": 65534, "runAsGroup": 65534, "supplementalGroups": [4242]}
    create_bound(tp, "acme", pod)
    h.wait_until(lambda: (pod_status(tp, "acme", "ids") or {}).get("phase") == "Running", 30, "ids Running")
    c = h.Client("http://127.0.0.1:%d" % S["kl"].port)
    h.wait_until(lambda: b"uid=" in c.get("/containerLogs/default/ids/c?tenant=acme").body, 10, "ids logged")
    h.check(b"uid=65534 gid=65534 groups=65534 4242" in c.get("/containerLogs/default/ids/c?tenant=acme").body,
            "the container's ids")
    uid = tp.get(h.pods_path("acme", name="ids")).json["metadata"]["uid"]
    pid = ursa_region.container_pid(S["kl"], uid)
    h.eq(os.stat("/proc/%d" % pid).st_uid, 65534, "owner of the container's process")
    nonroot = make_pod("nonroot", ["sleep", "300"], restart="Never")
    nonroot["spec"]["securityContext"] = {"runAsNonRoot": True}
    create_bound(tp, "acme", nonroot)
    h.wait_until(lambda: (pod_status(tp, "acme", "nonroot") or {}).get("phase") == "Failed", 20, "nonroot Failed")
    st = pod_status(tp, "acme", "nonroot")
    h.eq(st.get("reason"), "InvalidPodSpec", "reason")
    h.check("runAsNonRoot" in st.get("message", ""), "message: %s" % st.get("message"))
    for name in ("ids", "nonroot"):
        tp.delete(h.pods_path("acme", name=name) + "?gracePeriodSeconds=0")


def test_restart_kubelet_does_not_start_twice():
    tp = S["tpadmin"]
    uid = S["web_uid"]
    pid = ursa_region.container_pid(S["kl"], uid)
    h.check(pid and ursa_region.pid_alive(pid), "container pid %s alive" % pid)
    S["kl"].stop()
    h.check(ursa_region.pid_alive(pid), "container survives the kubelet stopping")
    S["kl"].start()
    time.sleep(4)
    h.wait_until(lambda: ready(get_node()), 20, "node Ready after restart")
    h.eq(ursa_region.container_pid(S["kl"], uid), pid, "same container pid after restart")
    h.check(ursa_region.pid_alive(pid), "container still alive")
    st = pod_status(tp, "acme", "web")
    h.eq(st["phase"], "Running", "phase after restart")
    h.eq(st["containerStatuses"][0]["restartCount"], 0, "restartCount after restart")
    h.check("refusing" not in S["kl"].log_text(), "restarted kubelet was not refused")


def test_delete_stops_process():
    tp = S["tpadmin"]
    uid = S["web_uid"]
    pid = ursa_region.container_pid(S["kl"], uid)
    r = tp.delete(h.pods_path("acme", name="web"))
    h.check(r.status in (200, 202), "delete: %s %s" % (r.status, r.body[:200]))
    h.wait_until(lambda: tp.get(h.pods_path("acme", name="web")).status == 404, 30, "pod gone from the TP")
    h.wait_until(lambda: not ursa_region.pid_alive(pid), 10, "container process %s ended" % pid)


def test_tp_registered_later():
    etcd2 = h.Etcd(name="etcd-tp2")
    etcd2.start()
    tp2 = h.ApiServer(etcd2, partition_id="tp-2")
    ursa_region.share_credentials(tp2, S["rm"])
    tp2.start()
    a2 = tp2.admin()
    h.create_tenant(a2, "zeta")
    r = S["admin"].post(REGISTRY, {"apiVersion": "ursa.io/v1", "kind": "TenantPartition",
                                   "metadata": {"name": "tp-2"}, "spec": {"endpoints": [tp2.url]}})
    h.expect_status(r, 201, "register tp-2")
    create_bound(a2, "zeta", make_pod("late", ["sh", "-c", "echo late; exec sleep 300"]))
    h.wait_until(lambda: (pod_status(a2, "zeta", "late") or {}).get("phase") == "Running", 30,
                 "pod of the later TP Running")
    S["tp2"] = tp2


def test_tp_restart_keeps_pods():
    tp2 = S["tp2"]
    a2 = tp2.admin()
    uid = a2.get(h.pods_path("zeta", name="late")).json["metadata"]["uid"]
    pid = ursa_region.container_pid(S["kl"], uid)
    h.check(pid and ursa_region.pid_alive(pid), "late pod's container alive")
    tp2.restart()
    create_bound(a2, "zeta", make_pod("after", ["sh", "-c", "exec sleep 300"]))
    h.wait_until(lambda: (pod_status(a2, "zeta", "after") or {}).get("phase") == "Running", 40,
                 "pod created after the TP restart Running")
    h.eq(ursa_region.container_pid(S["kl"], uid), pid, "earlier pod's container not restarted")
    h.eq(pod_status(a2, "zeta", "late")["containerStatuses"][0]["restartCount"], 0, "restartCount")
    h.eq(pod_status(S["tpadmin"], "acme", "huge")["reason"], "OutOfcpu", "tp-1 pods untouched")


def test_orphan_stopped_after_restart():
    a2 = S["tp2"].admin()
    uid = a2.get(h.pods_path("zeta", name="after")).json["metadata"]["uid"]
    pid = ursa_region.container_pid(S["kl"], uid)
    h.check(pid and ursa_region.pid_alive(pid), "container alive")
    S["kl"].stop()
    # removed while the kubelet was down, without the kubelet's help (grace 0)
    r = a2.delete(h.pods_path("zeta", name="after"), {"gracePeriodSeconds": 0})
    h.check(r.status in (200, 202), "force delete: %s" % r.status)
    h.wait_until(lambda: a2.get(h.pods_path("zeta", name="after")).status == 404, 10, "pod gone")
    S["kl"].start()
    h.wait_until(lambda: not ursa_region.pid_alive(pid), 30, "orphaned container %s stopped after the restart" % pid)
    late = a2.get(h.pods_path("zeta", name="late")).json["metadata"]["uid"]
    h.check(ursa_region.pid_alive(ursa_region.container_pid(S["kl"], late)), "the other pod of the partition still runs")


def test_duplicate_node_name_refused():
    h.wait_until(lambda: ready(get_node()), 20, "node %s Ready" % NODE)
    h.wait_until(lambda: S["admin"].get(LEASES + "/" + NODE).status == 200, 20, "lease exists")
    other = Kubelet(S["node_kc"], ["--node-name", NODE, "--port", "0"], name="kubelet-dup")
    other.start()
    rc = other.proc.wait(20)
    h.check(rc != 0, "second kubelet with the same node name exits non-zero (rc %s)" % rc)
    h.check("already registered" in other.log_text(), "clear error: %s" % other.log_text()[-500:])


def test_node_credential_on_the_resource_manager():
    """A node's credential (group system:nodes) on its resource manager: registers nodes, their
    status and leases in kube-node-lease; may not delete nodes, create pods or daemonsets, or
    write leases elsewhere. (The other tests of this file run their kubelets with it.)"""
    node = S["rm"].client(h.kubeconfig_token(S["node_kc"]))
    name = "kl-role-%d" % os.getpid()
    h.expect_status(node.post("/api/v1/nodes", {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}}),
                    201, "node registers a node")
    h.expect_status(node.patch("/api/v1/nodes/%s/status" % name, {"status": {"capacity": {"pods": "10"}}}), 200,
                    "node patches a node's status")
    h.expect_status(node.post(LEASES, {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                                       "metadata": {"name": name},
                                       "spec": {"holderIdentity": name, "leaseDurationSeconds": 40}}),
                    201, "node creates a lease in kube-node-lease")
    for method, path, body in [
        ("DELETE", "/api/v1/nodes/%s" % name, None),
        ("POST", "/apis/coordination.k8s.io/v1/namespaces/default/leases",
         {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": name}}),
        ("POST", "/api/v1/namespaces/default/pods", {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
                                                     "spec": {"containers": [{"name": "c", "image": "x"}]}}),
        ("POST", "/apis/apps/v1/namespaces/default/daemonsets", {"apiVersion": "apps/v1", "kind": "DaemonSet",
                                                                 "metadata": {"name": name}}),
    ]:
        h.expect_status(node.request(method, path, body), 403, "node %s %s" % (method, path), "Forbidden")
    h.expect_status(S["admin"].request("DELETE", "/api/v1/nodes/%s" % name, None), 200, "admin deletes the node")
    h.expect_status(S["admin"].request("DELETE", "%s/%s" % (LEASES, name), None), 200, "admin deletes the lease")


def test_named_node_credential_writes_only_its_node():
    """A node credential that names its node (user system:node:<name>): that node, its status and
    its lease only; another node's or lease (by path or by a created object's name) gets 403."""
    me, other, third = ("kl-%s-%d" % (w, os.getpid()) for w in ("me", "other", "third"))
    kc = S["rm"].kubeconfig("system", "system:node:" + me, ("system:nodes",))
    node = S["rm"].client(h.kubeconfig_token(kc))

    def node_obj(name):
        return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}}

    def lease_obj(name):
        return {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": name},
                "spec": {"holderIdentity": name, "leaseDurationSeconds": 40}}
    h.expect_status(node.post("/api/v1/nodes", node_obj(me)), 201, "node registers itself")
    h.expect_status(node.patch("/api/v1/nodes/%s/status" % me, {"status": {"capacity": {"pods": "10"}}}), 200,
                    "node patches its own status")
    h.expect_status(node.post(LEASES, lease_obj(me)), 201, "node creates its own lease")
    h.expect_status(node.patch("%s/%s" % (LEASES, me), {"spec": {"renewTime": "2026-01-01T00:00:00.000000Z"}}),
                    200, "node renews its own lease")
    h.expect_status(S["admin"].post("/api/v1/nodes", node_obj(other)), 201, "admin registers another node")
    h.expect_status(S["admin"].post(LEASES, lease_obj(other)), 201, "admin creates its lease")
    for method, path, body in [
        ("POST", "/api/v1/nodes", node_obj(third)),
        ("PATCH", "/api/v1/nodes/%s" % other, {"metadata": {"labels": {"x": "y"}}}),
        ("PATCH", "/api/v1/nodes/%s/status" % other, {"status": {"capacity": {"pods": "1"}}}),
        ("POST", LEASES, lease_obj(third)),
        ("PATCH", "%s/%s" % (LEASES, other), {"spec": {"holderIdentity": me}}),
    ]:
        r = node.patch(path, body) if method == "PATCH" else node.request(method, path, body)
        h.expect_status(r, 403, "named node %s %s" % (method, path), "Forbidden")
        h.check("can only modify its own" in r.json.get("message", ""), "403 names the rule: %s" % r.json.get("message"))
    h.expect_status(S["admin"].get("/api/v1/nodes/%s" % third), 404, "no node was created under another name")
    h.expect_status(S["admin"].get("%s/%s" % (LEASES, third)), 404, "no lease was created under another name")
    h.eq(S["admin"].get("%s/%s" % (LEASES, other)).json["spec"]["holderIdentity"], other, "the other lease is unchanged")
    for name in (me, other):
        h.expect_status(S["admin"].request("DELETE", "/api/v1/nodes/%s" % name, None), 200, "admin deletes a node")
        h.expect_status(S["admin"].request("DELETE", "%s/%s" % (LEASES, name), None), 200, "admin deletes a lease")


def test_hollow_nodes_register_and_renew():
    hk = Kubelet(S["node_kc"], ["--hollow-nodes", "100", "--hollow-prefix", "hollow-t", "--port", "0"],
                 name="kubelet-hollow")
    hk.start()

    def count(prefix_path, key):
        r = S["admin"].get(prefix_path)
        if r.status != 200:
            print("list %s: %s %s" % (prefix_path, r.status, r.body[:200]))
            return {}
        return {i["metadata"]["name"]: i for i in r.json["items"]
                if i["metadata"]["name"].startswith("hollow-t-")}
    h.wait_until(lambda: len(count("/api/v1/nodes", None)) == 100, 40, "100 hollow nodes registered")
    nodes = count("/api/v1/nodes", None)
    n0 = nodes["hollow-t-0"]
    h.check(ready(n0), "hollow node Ready")
    h.eq(n0["spec"].get("taints"), [{"key": "ursa.io/hollow", "value": "true", "effect": "NoSchedule"}], "taint")
    h.wait_until(lambda: len(count(LEASES, None)) == 100, 20, "100 leases")
    first = {n: l["spec"]["renewTime"] for n, l in count(LEASES, None).items()}
    time.sleep(11)
    later = {n: l["spec"]["renewTime"] for n, l in count(LEASES, None).items()}
    renewed = [n for n in first if later.get(n) != first[n]]
    h.eq(len(renewed), 100, "leases renewed within 11 s")
    # a pod tolerating the taint, bound to a hollow node, runs (fake runtime)
    pod = make_pod("sim", ["sleep", "1"])
    pod["spec"]["tolerations"] = [{"key": "ursa.io/hollow", "operator": "Exists", "effect": "NoSchedule"}]
    create_bound(S["tpadmin"], "acme", pod, node="hollow-t-42")
    h.wait_until(lambda: (pod_status(S["tpadmin"], "acme", "sim") or {}).get("phase") == "Running", 20,
                 "pod on a hollow node Running")
    with open("/proc/%d/status" % hk.proc.pid) as f:
        rss = [line for line in f if line.startswith("VmRSS")]
    print("hollow kubelet, 100 nodes: %s" % rss[0].strip())
    hk.proc.send_signal(signal.SIGTERM)
    h.eq(hk.proc.wait(15), 0, "hollow kubelet exits cleanly on SIGTERM")

    # Down, its nodes are marked as the node lifecycle controller would: Ready=Unknown and the
    # unreachable NoExecute taint. Started again (same root dir, same kubelet id), it reports
    # every node Ready again and leaves the controller's taint for the controller to remove.
    hollow_taint = {"key": "ursa.io/hollow", "value": "true", "effect": "NoSchedule"}
    unreachable = {"key": "node.kubernetes.io/unreachable", "effect": "NoExecute"}
    marked = ["hollow-t-%d" % i for i in (0, 7, 99)]
    for name in marked:
        st = {"status": {"conditions": [{"type": "Ready", "status": "Unknown", "reason": "NodeStatusUnknown",
                                         "message": "Kubelet stopped posting node status."}]}}
        h.expect_status(S["admin"].request("PATCH", "/api/v1/nodes/%s/status" % name, st,
                                           content_type="application/merge-patch+json"), 200, "mark %s" % name)
        h.expect_status(S["admin"].request("PATCH", "/api/v1/nodes/" + name,
                                           {"spec": {"taints": [hollow_taint, unreachable]}},
                                           content_type="application/merge-patch+json"), 200, "taint %s" % name)
        h.check(not ready(get_node(name)), "%s marked NotReady" % name)
    hk.start()
    h.wait_until(lambda: all(ready(n) for n in count("/api/v1/nodes", None).values()), 30,
                 "every hollow node Ready again after the restart")
    nodes = count("/api/v1/nodes", None)
    h.eq(len(nodes), 100, "still 100 nodes")
    for name in marked:
        h.eq(nodes[name]["spec"].get("taints"), [hollow_taint, unreachable],
             "%s: the restarted kubelet left the controller's taint alone" % name)
    h.eq(nodes["hollow-t-1"]["spec"].get("taints"), [hollow_taint], "an unmarked node keeps its own taint")
    h.check("refusing" not in hk.log_text(), "the restart was not refused")
    hk.proc.send_signal(signal.SIGTERM)
    h.eq(hk.proc.wait(15), 0, "restarted hollow kubelet exits cleanly")


h.run(globals())
