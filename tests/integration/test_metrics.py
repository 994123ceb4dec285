#!/usr/bin/python3
"""metrics.k8s.io from real containers: `kubectl top pods` and `kubectl top nodes`.

Set-up as test_kubelet_cri.py: a CriNode (containerd), etcd + resource manager + tenant partition,
a kubelet with `--runtime cri --cgroup-parent ...`. Two busybox pods: one burning CPU
(`while :; do :; done`), one holding memory (a 64 MiB tmpfs file in the container's /dev/shm is
charged to its memory cgroup).

Checks: the kubelet's /stats/usage; PodMetrics from the tenant partition (list, get, label
selector, all namespaces, 404 for an unknown pod, 405 for writes); NodeMetrics from the
resource manager; discovery lists the group; `kubectl top pods` and `kubectl top nodes` print
the figures, against the partitions and through a gateway (started in front of the region, as
test_gateway.py does); a user of another tenant gets 403 for the first tenant's pod metrics;
pods of the process runtime are measured from /proc, those of the fake (hollow) runtime get its
synthetic figures; /stats/usage wants the kubelet's bearer token when it has one.

Run alone: URSA_BUILD_DIR=build /usr/bin/python3 tests/integration/test_metrics.py"""

import json
import os
import re
import sys
import urllib.error
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import ursa_harness as h  # noqa: E402
import ursa_cri as cri  # noqa: E402
import ursa_region  # noqa: E402

NODE = "metrics-node-1"
S = {}
PM = "/apis/metrics.k8s.io/v1beta1"


def setup():
    cri.require()
    node = cri.CriNode(NODE, cgroup_prefix="ursa-metrics").start()
    S["node"] = node
    S.update(ursa_region.start(tenants=("acme", "beta")))
    start_gateway()
    node_kc = S["rm"].kubeconfig("system", "system:node:" + NODE, ("system:nodes",))
    S["kl"] = ursa_region.Kubelet(node_kc, ["--node-name", NODE, "--cpu", "4", "--memory", "8Gi"] +
                                  node.kubelet_args(), label="kubelet-metrics").start()
    S["kc"] = S["tp"].kubeconfig("acme", "alice")
    S["kc_beta"] = S["tp"].kubeconfig("beta", "bob")
    S["kc_rm"] = S["rm"].admin_kubeconfig()
    h.wait_until(lambda: ursa_region.node_ready(S["admin"], NODE), 60, "node %s Ready" % NODE)
    create(make_pod("busy", ["sh", "-c", "while :; do :; done"], {"app": "busy"}))
    create(make_pod("hog", ["sh", "-c", "dd if=/dev/zero of=/dev/shm/fill bs=1M count=64; sleep 3600"],
                    {"app": "hog"}))
    for name in ("busy", "hog"):
        h.wait_until(lambda: phase(name) == "Running", 120, "pod %s Running" % name)


def start_gateway():
    """A gateway in front of the region (tests/lib/ursa_region.py)."""
    S["gw"], S["gw_url"], S["gwadmin"] = ursa_region.start_gateway(S["rm"], S["tp"])


def gw_kubeconfig(tenant, user):
    rm = S["rm"]
    out = h.must_run([h.URSACTL_BIN, "kubeconfig", "--tenant", tenant, "--user", user, "--ttl", "0",
                      "--server", S["gw_url"], "--signing-key", rm.signing_key, "--certificate-authority",
                      rm.ca_file] + (["--groups", "system:masters"] if tenant == "system" else []))
    path = os.path.join(h.make_tmpdir("gwkc"), "kc-%s-%s" % (tenant, user))
    with open(path, "w") as f:
        f.write(out)
    return path


def teardown():
    ursa_region.kill_containers()  # the process runtime's containers outlive their kubelet
    for kl in S.get("extra_kubelets", []):
        kl.stop()
    if S.get("kl"):
        S["kl"].stop()
    if S.get("node"):
        S["node"].teardown()


def make_pod(name, command, labels):
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": labels},
            "spec": {"containers": [{"name": "main", "image": "busybox:1.36", "command": command}],
                     "terminationGracePeriodSeconds": 1, "nodeName": NODE}}


def create(pod):
    r = S["tpadmin"].post(h.pods_path("acme"), pod)
    h.expect_status(r, 201, "create pod %s" % pod["metadata"]["name"])


def phase(name):
    r = S["tpadmin"].get(h.pods_path("acme", name=name))
    return r.json.get("status", {}).get("phase") if r.status == 200 else None


def nanocores(q):
    m = re.fullmatch(r"(\d+)(n|u|m)?", q)
    h.check(m, "cpu quantity %r" % q)
    return int(m.group(1)) * {"n": 1, "u": 1000, "m": 1000000, None: 1000000000}[m.group(2)]


def mem_bytes(q):
    m = re.fullmatch(r"(\d+)(Ki|Mi|Gi)?", q)
    h.check(m, "memory quantity %r" % q)
    return int(m.group(1)) * {"Ki": 1 << 10, "Mi": 1 << 20, "Gi": 1 << 30, None: 1}[m.group(2)]


def tp_get(path, client=None):
    return (client or S["tpadmin"]).get(path)


def acme_pm(name=None, query=""):
    p = PM + "/tenants/acme/namespaces/default/pods" + ("/" + name if name else "") + query
    return tp_get(p)


def test_kubelet_stats_usage():
    url = "http://127.0.0.1:%d/stats/usage" % S["kl"].port
    with urllib.request.urlopen(url, timeout=10) as r:
        j = json.loads(r.read())
    h.eq(j["source"], "cgroup", "source")
    h.check(j["windowSeconds"] >= 0.9, "window %r" % j["windowSeconds"])
    h.check(j["node"]["cpuNanoCores"] > 0 and j["node"]["memoryWorkingSetBytes"] > 0, "node %r" % j["node"])
    h.check(len(j["pods"]) >= 2, "pods measured: %r" % j["pods"])
    for p in j["pods"]:
        h.check(p["uid"] and p["containers"], "pod entry %r" % p)


def test_pod_metrics_list_get_and_selector():
    def busy_hot():
        r = acme_pm("busy")
        if r.status != 200:
            return None
        c = r.json["containers"]
        return r.json if c and nanocores(c[0]["usage"]["cpu"]) > 50000000 else None
    pm = h.wait_until(busy_hot, 60, "busy's PodMetrics show > 50m cpu (a shared machine)")
    h.eq(pm["kind"], "PodMetrics", "kind")
    h.eq(pm["apiVersion"], "metrics.k8s.io/v1beta1", "apiVersion")
    h.eq((pm["metadata"]["name"], pm["metadata"]["namespace"]), ("busy", "default"), "metadata")
    h.eq(pm["metadata"]["labels"], {"app": "busy"}, "labels")
    h.check(re.fullmatch(r"\d+(\.\d+)?s", pm["window"]), "window %r" % pm["window"])
    h.check(pm["timestamp"].endswith("Z"), "timestamp %r" % pm["timestamp"])
    h.eq([c["name"] for c in pm["containers"]], ["main"], "containers")

    def hog_big():
        r = acme_pm("hog")
        return r.json if r.status == 200 and mem_bytes(r.json["containers"][0]["usage"]["memory"]) > (48 << 20) \
            else None
    hog = h.wait_until(hog_big, 60, "hog's PodMetrics show > 48 MiB")
    h.check(nanocores(hog["containers"][0]["usage"]["cpu"]) < 50000000, "hog is idle: %r" % hog)
    print(json.dumps(pm), json.dumps(hog), flush=True)

    r = acme_pm()
    h.expect_status(r, 200, "list")
    h.eq(r.json["kind"], "PodMetricsList", "list kind")
    h.eq(sorted(i["metadata"]["name"] for i in r.json["items"]), ["busy", "hog"], "listed")
    r = acme_pm(query="?labelSelector=app%3Dhog")
    h.eq([i["metadata"]["name"] for i in r.json["items"]], ["hog"], "label selector")
    r = tp_get(PM + "/tenants/acme/pods")
    h.eq(sorted(i["metadata"]["name"] for i in r.json["items"]), ["busy", "hog"], "all namespaces")
    h.expect_status(acme_pm("nope"), 404, "unknown pod")
    r = S["tpadmin"].post(PM + "/tenants/acme/namespaces/default/pods", {"metadata": {"name": "x"}})
    h.expect_status(r, 405, "create")
    r = S["tpadmin"].delete(PM + "/tenants/acme/namespaces/default/pods/busy")
    h.expect_status(r, 405, "delete")


def test_discovery_lists_the_group():
    r = tp_get("/apis")
    groups = {g["name"]: g for g in r.json["groups"]}
    h.check("metrics.k8s.io" in groups, "metrics.k8s.io in TP /apis")
    r = tp_get(PM)
    res = {x["name"]: x for x in r.json["resources"]}
    h.eq(res["pods"]["kind"], "PodMetrics", "PodMetrics in the resource list")
    h.eq(sorted(res["pods"]["verbs"]), ["get", "list"], "verbs")
    r = S["admin"].get(PM)
    res = {x["name"]: x for x in r.json["resources"]}
    h.eq((res["nodes"]["kind"], res["nodes"]["namespaced"]), ("NodeMetrics", False), "NodeMetrics on the RM")


def test_node_metrics():
    r = S["admin"].get(PM + "/nodes")
    h.expect_status(r, 200, "list NodeMetrics")
    items = {i["metadata"]["name"]: i for i in r.json["items"]}
    h.check(NODE in items, "node listed: %r" % r.json)
    u = items[NODE]["usage"]
    h.check(nanocores(u["cpu"]) > 0 and mem_bytes(u["memory"]) > (64 << 20), "node usage %r" % u)
    r = S["admin"].get(PM + "/nodes/" + NODE)
    h.expect_status(r, 200, "get NodeMetrics")
    h.eq(r.json["kind"], "NodeMetrics", "kind")


def test_kubectl_top_pods_and_nodes():
    def top_pods():
        rc, out, err = h.kubectl(["top", "pods"], S["kc"])
        return out if rc == 0 and "busy" in out and "hog" in out else None
    out = h.wait_until(top_pods, 60, "kubectl top pods lists busy and hog")
    print(out, flush=True)
    rows = {line.split()[0]: line.split() for line in out.splitlines()[1:]}
    h.check(out.splitlines()[0].split()[:3] == ["NAME", "CPU(cores)", "MEMORY(bytes)"], "header: %r" % out)
    h.check(int(rows["busy"][1].rstrip("m")) >= 50, "busy cpu in %r" % out)
    h.check(int(rows["hog"][2].rstrip("Mi")) >= 48, "hog memory in %r" % out)
    rc, out, err = h.kubectl(["top", "pods", "--containers", "-l", "app=busy"], S["kc"])
    h.eq(rc, 0, "kubectl top pods --containers: %s" % err)
    h.check("busy" in out and "main" in out and "hog" not in out, "per container: %r" % out)
    rc, out, err = h.kubectl(["top", "nodes"], S["kc_rm"])
    h.eq(rc, 0, "kubectl top nodes: %s" % err)
    print(out, flush=True)
    line = [x for x in out.splitlines() if x.startswith(NODE)]
    h.check(line and re.search(r"\d+m\s+\d+%\s+\d+Mi\s+\d+%", line[0]), "node row in %r" % out)


def test_kubectl_top_through_the_gateway():
    kc = gw_kubeconfig("acme", "alice")
    rc, out, err = h.kubectl(["top", "pods"], kc)
    h.eq(rc, 0, "kubectl top pods via the gateway: %s" % err)
    print(out, flush=True)
    h.check("busy" in out and "hog" in out, "pods in %r" % out)
    kc_sys = gw_kubeconfig("system", "admin")
    rc, out, err = h.kubectl(["top", "nodes"], kc_sys)
    h.eq(rc, 0, "kubectl top nodes via the gateway: %s" % err)
    print(out, flush=True)
    h.check(re.search(r"^%s\s+\d+m\s+\d+%%" % NODE, out, re.M), "node row in %r" % out)
    gw = S["gwadmin"]
    r = gw.get("/apis")
    h.check("metrics.k8s.io" in [g["name"] for g in r.json["groups"]], "group in the gateway's /apis")
    r = gw.get(PM)
    h.eq(sorted(x["name"] for x in r.json["resources"]), ["nodes", "pods"], "merged resource list")
    # another tenant's user is refused at the gateway
    rc, out, err = h.kubectl(["get", "--raw", PM + "/tenants/acme/namespaces/default/pods"],
                             gw_kubeconfig("beta", "bob"))
    h.check(rc != 0 and ("Forbidden" in err or "forbidden" in err), "bob via the gateway: %r %r" % (out, err))
    rc, out, err = h.kubectl(["top", "nodes"], kc)
    h.check(rc != 0, "a tenant user may not read NodeMetrics: %r" % out)


def test_other_tenant_forbidden():
    bob = S["tp"].user_client("beta", "bob")
    r = bob.get(PM + "/tenants/acme/namespaces/default/pods")
    h.expect_status(r, 403, "bob lists acme's pod metrics")
    r = bob.get(PM + "/tenants/acme/namespaces/default/pods/busy")
    h.expect_status(r, 403, "bob gets acme's busy")
    r = bob.get(PM + "/namespaces/default/pods")
    h.expect_status(r, 200, "bob lists his own")
    h.eq(r.json["items"], [], "beta has no pods")



def start_node(name, extra):
    """Another kubelet of the region (not CRI) on node name; the caller stops it."""
    kc = S["rm"].kubeconfig("system", "system:node:" + name, ("system:nodes",))
    kl = ursa_region.Kubelet(kc, ["--node-name", name, "--cpu", "2", "--memory", "4Gi"] + extra,
                             label="kubelet-" + name).start()
    S.setdefault("extra_kubelets", []).append(kl)
    h.wait_until(lambda: ursa_region.node_ready(S["admin"], name), 60, "node %s Ready" % name)
    return kl


def test_process_runtime_pods_measured():
    start_node("metrics-proc-1", [])
    pod = make_pod("pbusy", ["sh", "-c", "while :; do :; done"], {"app": "pbusy"})
    pod["spec"]["nodeName"] = "metrics-proc-1"
    create(pod)
    h.wait_until(lambda: phase("pbusy") == "Running", 60, "pod pbusy Running")

    def hot():
        r = acme_pm("pbusy")
        c = r.json.get("containers") if r.status == 200 else None
        return r.json if c and nanocores(c[0]["usage"]["cpu"]) > 50000000 else None
    pm = h.wait_until(hot, 60, "pbusy (process runtime) shows > 50m cpu")
    h.eq(pm["containers"][0]["name"], "main", "container name")
    h.check(mem_bytes(pm["containers"][0]["usage"]["memory"]) > 0, "memory of pbusy %r" % pm)
    r = S["admin"].get(PM + "/nodes/metrics-proc-1")
    h.expect_status(r, 200, "NodeMetrics of the process node")
    S["tpadmin"].delete(h.pods_path("acme", name="pbusy"), {"gracePeriodSeconds": 0})


def test_fake_runtime_synthetic_figures():
    start_node("metrics-fake-1", ["--runtime", "fake"])
    pod = make_pod("fk", ["sleep", "3600"], {"app": "fk"})
    pod["spec"]["nodeName"] = "metrics-fake-1"
    create(pod)
    h.wait_until(lambda: phase("fk") == "Running", 60, "pod fk Running")
    r = acme_pm("fk")
    h.expect_status(r, 200, "PodMetrics of a pod on the fake runtime")
    h.eq(r.json["containers"], [{"name": "main", "usage": {"cpu": "1000000n", "memory": "4Mi"}}],
         "synthetic figures")


def test_kubelet_stats_needs_token_when_set():
    """The stats endpoint is behind the kubelet's bearer token like /containerLogs."""
    tok = os.path.join(h.make_tmpdir("kltoken"), "token")
    with open(tok, "w") as f:
        f.write("s3cret\n")
    kl = start_node("metrics-tok-1", ["--runtime", "fake", "--client-token-file", tok])
    url = "http://127.0.0.1:%d/stats/usage" % kl.port
    try:
        urllib.request.urlopen(url, timeout=10)
        h.check(False, "no token: expected 401")
    except urllib.error.HTTPError as e:
        h.eq(e.code, 401, "no token")
    req = urllib.request.Request(url, headers={"Authorization": "Bearer s3cret"})
    with urllib.request.urlopen(req, timeout=10) as r:
        h.eq(json.loads(r.read())["source"], "synthetic", "with the token")


if __name__ == "__main__":
    h.run(globals())
