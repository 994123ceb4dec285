#!/usr/bin/python3
"""deploy/local-up.sh with the real nodes on containerd, in a region of its own: a temporary
state directory (URSA_STATE), every port moved by a free offset (URSA_PORT_OFFSET) and pod
addresses from an unused 10.X.0.0/16 (URSA_POD_CIDR), so the usual region on 6443/7101/...
and .ursa/ is not touched. Needs root (containerd, runc, mounts, bridges).

1. local-up.sh --no-build (URSA_BUILD_DIR) starts; every node (real and hollow) is Ready.
2. The region's registry runs on its port and holds busybox:1.36, pause:3.9 and httpd:1; each
   real node's containerd runs with the CRI plugin, restrict_oom_score_adj and its CNI network, whose
   frontDoor is HAProxy (pods reach it at 10.96.0.1:443).
3. Each kubelet runs the runtime local-up said it chose: cri (--cri-endpoint of its node's
   containerd) when `ursa-kubelet --help` has --cri-endpoint, else process with the fallback
   message. With the cri runtime, a pod with busybox:1.36 becomes Running in a container of
   the node's containerd, with KUBERNETES_SERVICE_HOST/PORT 10.96.0.1/443, where HAProxy answers
   from the pod's network namespace with a certificate the region CA verifies for 10.96.0.1.
4. A pod sandbox and a busybox:1.36 container run on a node's containerd through its CRI
   (tests/cri_probe): the image comes through the docker.io mirror from the region's registry,
   the pod (no tenant annotation: ursa-cni's network "-") gets an address of the first /26 of
   the node's /20 on the node's first tenant bridge ut-X-N-0.
5. local-zone.sh down az-1 tears az-1's containerd down (process, shims, mounts, bridges) and
   leaves the registry and az-2 running; up brings it back with its node Ready.
6. local-down.sh --purge leaves nothing: no process, mount, bridge, iptables rule, libcni cache
   or state dir.
7. When containerd cannot run (not root; no registry) a node falls back to the process runtime
   and says so; URSA_RUNTIME=cri refuses to fall back.

Run alone: URSA_BUILD_DIR=build /usr/bin/python3 tests/e2e/test_local_cri.py"""

import glob
import ipaddress
import json
import os
import random
import re
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import ursa_harness as h  # noqa: E402
import ursa_local as L  # noqa: E402

DEPLOY = L.DEPLOY
KUBELET = os.path.join(h.BUILD_DIR, "src", "kubelet", "ursa-kubelet")
PROBE = os.path.join(h.BUILD_DIR, "tests", "cri_probe")
NODES = (("az-1", "host-1", 1), ("az-2", "host-1", 2))
S = {}
port_free = L.port_free


def env():
    return S["region"].env()


def script(name, *args, timeout=600, extra=None):
    return S["region"].script(name, *args, timeout=timeout, extra=extra)


def port(base):
    return S["region"].port(base)


def admin(base):
    return S["region"].admin(base)


def cdir(zone, host):
    return os.path.join(S["state"], zone, host, "containerd")


def pid_of(path):
    try:
        pid = int(open(path).read().strip())
        os.kill(pid, 0)
        return pid
    except (OSError, ValueError):
        return None


def processes_mentioning(text):
    out = []
    for d in glob.glob("/proc/[0-9]*"):
        try:
            cmd = open(d + "/cmdline", "rb").read().replace(b"\0", b" ").decode("utf-8", "replace")
        except OSError:
            continue
        if text in cmd:
            out.append("%s: %s" % (os.path.basename(d), cmd))
    return out


def mounts_under(path):
    out = []
    with open("/proc/self/mountinfo") as f:
        for line in f:
            m = line.split()[4].replace("\\040", " ")
            if m == path or m.startswith(path + "/"):
                out.append(m)
    return out


def bridge_exists(name):
    return subprocess.run(["ip", "link", "show", name], capture_output=True).returncode == 0


def bridge(idx):
    """The node's CNI network name (libcni's cache files start with it)."""
    return "ursa-%d-%d" % (S["x"], idx)


def bridges(idx):
    """The node's tenant bridges (ursa-cni: ut-<x>-<node>-<tenant network>)."""
    return [n for n in os.listdir("/sys/class/net") if re.fullmatch(r"ut-%d-%d-[0-9]+" % (S["x"], idx), n)]


def node_subnet(idx):
    return ipaddress.ip_network("10.%d.%d.0/20" % (S["x"], idx * 16))


def ready_nodes(rm_base):
    r = admin(rm_base).get("/api/v1/nodes")
    if r.status != 200:
        return set()
    return {n["metadata"]["name"] for n in r.json.get("items") or []
            if any(c.get("type") == "Ready" and c.get("status") == "True"
                   for c in (n.get("status") or {}).get("conditions") or [])}


def probe(zone, host, *args, ok=True, timeout=120):
    ep = "unix://" + os.path.join(cdir(zone, host), "containerd.sock")
    rc, out, err = h.run_cmd([PROBE, ep] + [str(a) for a in args], timeout=timeout)
    h.check(rc in (0, 1), "cri_probe %s: rc %d %s %s" % (" ".join(map(str, args)), rc, out, err))
    res = json.loads(out) if out.strip() else None
    if ok:
        h.check(rc == 0, "cri_probe %s failed: %s %s" % (" ".join(map(str, args)), out, err))
    return res


def setup():
    h.check(os.geteuid() == 0, "this test needs root (containerd, mounts, bridges)")
    for b in (KUBELET, PROBE, os.path.join(h.BUILD_DIR, "src", "ursactl", "ursactl")):
        h.require_binary(b, os.path.basename(b))
    S["tmp"] = h.make_tmpdir("localcri")
    S["sandboxes"] = set()
    R = S["region"] = L.LocalRegion(S["tmp"])
    S["state"], S["off"], S["x"] = R.state, R.off, R.x
    helptext = subprocess.run([KUBELET, "--help"], capture_output=True, text=True)
    S["has_cri"] = "--cri-endpoint" in helptext.stdout + helptext.stderr
    print("state %s, port offset %d, pods 10.%d.0.0/16, kubelet cri runtime: %s"
          % (S["state"], S["off"], S["x"], S["has_cri"]), flush=True)
    R.up()
    S["up_out"], S["token"] = R.up_out, R.token


def teardown():
    if "region" in S:
        S["region"].down()


def test_nodes_ready():
    want = {"az-1": 7201, "az-2": 7202}
    for zone, rm in want.items():
        names = {"%s-host-1" % zone} | {"%s-hollow-%d" % (zone, i) for i in range(3)}
        h.wait_until(lambda: names <= ready_nodes(rm), 30, "nodes %s Ready" % sorted(names))
    h.check("127.0.0.1:%d" % port(6443) in S["up_out"], "local-up names HAProxy's moved port")
    # Nothing of this region listens on the usual ports' numbers: its processes use the offset.
    for p in processes_mentioning(S["state"]):
        h.check(not re.search(r"127\.0\.0\.1:(6443|7101|7201|23791)\b", p), "unmoved port in %s" % p)


def test_registry_serves_images():
    reg = h.Client("http://127.0.0.1:%d" % port(7401), timeout=5)
    r = reg.get("/v2/_catalog")
    h.eq(r.status, 200, "registry /v2/_catalog")
    h.eq(sorted(r.json["repositories"]), ["library/busybox", "library/httpd", "library/pause"],
         "repositories in the region's registry")
    for repo, tag in (("library/busybox", "1.36"), ("library/pause", "3.9"), ("library/httpd", "1")):
        h.check(tag in (reg.get("/v2/%s/tags/list" % repo).json or {}).get("tags", []),
                "%s:%s in the registry" % (repo, tag))
    pid = pid_of(os.path.join(S["state"], "registry", "registry.pid"))
    h.check(pid, "registry.pid names a live process")
    h.check("docker-registry" in open("/proc/%d/cmdline" % pid).read(), "the registry is docker-registry")
    h.check(not port_free(port(7401)), "the registry listens on its moved port")


def test_containerd_per_node():
    for zone, host, idx in NODES:
        d = cdir(zone, host)
        pid = pid_of(os.path.join(d, "containerd.pid"))
        h.check(pid, "containerd of %s-%s runs" % (zone, host))
        cmd = open("/proc/%d/cmdline" % pid).read().split("\0")
        h.eq(cmd[1:3], ["--config", os.path.join(d, "config.toml")], "containerd's own config")
        cfg = open(os.path.join(d, "config.toml")).read()
        h.check("restrict_oom_score_adj = true" in cfg, "restrict_oom_score_adj in the CRI section")
        h.check('sandbox_image = "127.0.0.1:%d/library/pause:3.9"' % port(7401) in cfg, "sandbox image")
        hosts = open(os.path.join(d, "certs.d", "docker.io", "hosts.toml")).read()
        h.check('[host."http://127.0.0.1:%d"]' % port(7401) in hosts, "docker.io mirrored to the registry")
        conf = json.load(open(os.path.join(d, "cni", "net.d", "10-%s.conflist" % bridge(idx))))
        plugin = conf["plugins"][0]
        h.eq((plugin["type"], plugin["bridgePrefix"], plugin["tenantPrefixLength"]),
             ("ursa-cni", "ut-%d-%d" % (S["x"], idx), 26), "CNI plugin")
        h.eq(plugin["subnet"], str(node_subnet(idx)), "node's subnet")
        h.eq(plugin["capabilities"], {"io.kubernetes.cri.pod-annotations": True}, "ursa-cni gets the annotations")
        h.eq(plugin.get("frontDoor"), "127.0.0.1:%d" % port(6443), "pods reach HAProxy at 10.96.0.1:443")
        v = probe(zone, host, "status")
        h.check(v["conditions"]["RuntimeReady"]["status"], "CRI RuntimeReady on %s-%s: %s" % (zone, host, v))
        h.check(v["conditions"]["NetworkReady"]["status"], "CRI NetworkReady on %s-%s: %s" % (zone, host, v))


def test_kubelet_runtime_choice():
    for zone, host, _ in NODES:
        name = "%s-%s" % (zone, host)
        pid = pid_of(os.path.join(S["state"], "pids", name + ".pid"))
        h.check(pid, "kubelet %s runs" % name)
        cmd = open("/proc/%d/cmdline" % pid).read().split("\0")
        rt = cmd[cmd.index("--runtime") + 1]
        h.eq(open(os.path.join(S["state"], zone, host + ".runtime")).read().strip(), rt, "recorded runtime")
        if S["has_cri"]:
            h.eq(rt, "cri", "runtime of %s" % name)
            h.eq(cmd[cmd.index("--cri-endpoint") + 1], "unix://" + os.path.join(cdir(zone, host), "containerd.sock"),
                 "cri endpoint of %s" % name)
            h.check("%s: cri runtime on containerd" % name in S["up_out"], "local-up says %s runs on cri" % name)
        else:
            h.eq(rt, "process", "runtime of %s" % name)
            h.check("%s: process runtime (this ursa-kubelet has no cri runtime" % name in S["up_out"],
                    "local-up says why %s falls back to the process runtime" % name)


def test_pod_through_cri_on_node_containerd():
    zone, host, idx = NODES[0]
    probe(zone, host, "pull", "docker.io/library/busybox:1.36")
    imgs = probe(zone, host, "images")
    h.check(any("docker.io/library/busybox:1.36" in (i.get("repo_tags") or []) for i in imgs),
            "busybox:1.36 pulled through the mirror: %s" % imgs)
    logdir = os.path.join(S["tmp"], "probe-logs")
    os.makedirs(logdir, exist_ok=True)
    pod = ("probe-1", "uid-%d" % random.randrange(1 << 30), "default", logdir, 0)
    sb = probe(zone, host, "run-pod", *pod)["id"]
    st = probe(zone, host, "pod-status", sb)
    h.eq(st["state"], "READY", "sandbox state")
    first = list(node_subnet(idx).subnets(new_prefix=26))[0]
    h.check(ipaddress.ip_address(st["ip"]) in first, "pod IP %s in the node's first /26 %s" % (st["ip"], first))
    h.check(bridge_exists("ut-%d-%d-0" % (S["x"], idx)), "bridge ut-%d-%d-0 exists" % (S["x"], idx))
    cid = probe(zone, host, "create", sb, *pod, "app", "docker.io/library/busybox:1.36", "app/0.log", 64 << 20,
                "sh", "-c", "echo hello-from-busybox; sleep 600")["id"]
    probe(zone, host, "start", cid)
    h.wait_until(lambda: probe(zone, host, "cstatus", cid)["state"] == "RUNNING", 20, "container running")
    log = os.path.join(logdir, "app", "0.log")
    h.wait_until(lambda: os.path.exists(log) and "hello-from-busybox" in open(log).read(), 10, "container log")
    S["sandboxes"].add(sb)  # left running: local-zone down and local-down must clean it up


def test_api_pod_runs_in_container():
    if not S["has_cri"]:
        # Without the cri runtime the nodes run the process runtime: a busybox pod would run
        # /bin/sh of this host, not a container. What can be checked is that nothing claims cri.
        h.check("cri runtime on containerd" not in S["up_out"], "no node claims the cri runtime")
        return
    tp = admin(7101)
    name = h.uniq("bb")
    body = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"nodeName": "az-2-host-1", "containers": [
                {"name": "c", "image": "busybox:1.36", "command": ["sh", "-c", "echo up; sleep 600"]}]}}
    r = tp.post(h.pods_path("system"), body)
    h.check(r.status == 201, "create pod: %s %s" % (r.status, r.text[:300]))

    def phase():
        p = tp.get(h.pods_path("system", name=name))
        return p.json.get("status", {}).get("phase") if p.status == 200 else None
    h.wait_until(lambda: phase() == "Running", 90, "pod %s Running" % name)
    ip = tp.get(h.pods_path("system", name=name)).json["status"].get("podIP")
    h.check(ip and ipaddress.ip_address(ip) in node_subnet(2), "podIP %s in az-2's %s" % (ip, node_subnet(2)))
    d = cdir("az-2", "host-1")
    out = h.must_run(["ctr", "--address", os.path.join(d, "containerd.sock"), "-n", "k8s.io", "containers", "ls"])
    h.check("busybox:1.36" in out, "a busybox:1.36 container in az-2's containerd:\n%s" % out)
    # in-cluster configuration: the container's KUBERNETES_SERVICE_* name the front door's service
    # address, and from the pod's network namespace HAProxy answers there with a certificate
    # that verifies against the region CA (the pods' ca.crt) for host 10.96.0.1
    cid = tp.get(h.pods_path("system", name=name)).json["status"]["containerStatuses"][0]["containerID"]
    tasks = h.must_run(["ctr", "--address", os.path.join(d, "containerd.sock"), "-n", "k8s.io", "tasks", "ls"])
    pid = next(int(f[1]) for f in (line.split() for line in tasks.splitlines()) if f and f[0] == cid.split("://")[-1])
    env = open("/proc/%d/environ" % pid, "rb").read().decode().split("\0")
    h.check("KUBERNETES_SERVICE_HOST=10.96.0.1" in env and "KUBERNETES_SERVICE_PORT=443" in env,
            "the pod's front door is 10.96.0.1:443: %r" % [e for e in env if e.startswith("KUBERNETES")])
    check = ("import socket, ssl\n"
             "ctx = ssl.create_default_context(cafile=%r)\n"
             "with socket.create_connection(('10.96.0.1', 443), timeout=5) as s:\n"
             "    with ctx.wrap_socket(s, server_hostname='10.96.0.1') as t:\n"
             "        t.sendall(b'GET /version HTTP/1.0\\r\\nHost: 10.96.0.1\\r\\n\\r\\n')\n"
             "        print(t.recv(64).decode().split()[0])\n") % os.path.join(S["state"], "pki", "ca.crt")
    rc, out, err = h.run_cmd(["nsenter", "-t", str(pid), "-n", "/usr/bin/python3", "-c", check], 30)
    h.eq((rc, out.strip()), (0, "HTTP/1.1"), "HAProxy through 10.96.0.1:443 from the pod, TLS verified: %s" % err)


def zone_clean(zone, host, idx):
    d = cdir(zone, host)
    left = []
    if pid_of(os.path.join(d, "containerd.pid")):
        left.append("containerd")
    left += processes_mentioning(os.path.join(d, "containerd.sock"))
    left += ["mount " + m for m in mounts_under(d)]
    left += ["bridge " + b for b in bridges(idx)]
    return left


def test_zone_down_and_up():
    rc, out, err = script("local-zone.sh", "down", "az-1", timeout=300)
    h.check(rc == 0, "local-zone.sh down az-1 (rc %d):\n%s%s" % (rc, out, err))
    h.eq(zone_clean("az-1", "host-1", 1), [], "left of az-1's containerd after zone down")
    h.check(pid_of(os.path.join(cdir("az-2", "host-1"), "containerd.pid")), "az-2's containerd still runs")
    h.check(pid_of(os.path.join(S["state"], "registry", "registry.pid")), "the registry still runs")
    rc, out, err = script("local-zone.sh", "up", "az-1", timeout=300)
    h.check(rc == 0, "local-zone.sh up az-1 (rc %d):\n%s%s" % (rc, out, err))
    h.check(pid_of(os.path.join(cdir("az-1", "host-1"), "containerd.pid")), "az-1's containerd runs again")
    h.wait_until(lambda: "az-1-host-1" in ready_nodes(7201), 30, "az-1-host-1 Ready again")
    # A container again on az-1, for local-down to clean up.
    probe("az-1", "host-1", "pull", "docker.io/library/busybox:1.36")
    sb = probe("az-1", "host-1", "run-pod", "probe-2", "uid-2", "default", os.path.join(S["tmp"], "l2"), 0)["id"]
    h.eq(probe("az-1", "host-1", "pod-status", sb)["state"], "READY", "sandbox after zone up")
    S["sandboxes"].add(sb)


def test_down_purge_leaves_nothing():
    for zone, host, _ in NODES:
        S["sandboxes"].update(p["id"] for p in probe(zone, host, "list-pods"))
    h.check(S["sandboxes"], "sandboxes run before local-down")
    rc, out, err = script("local-down.sh", "--purge", timeout=300)
    h.check(rc == 0, "local-down.sh --purge (rc %d):\n%s%s" % (rc, out, err))
    h.check(not os.path.exists(S["state"]), "state dir removed")
    h.eq(processes_mentioning(S["state"]), [], "processes of the region")
    h.eq(mounts_under(S["tmp"]), [], "mounts under the test's directory")
    links = h.must_run(["ip", "-o", "link"])
    h.check("ursa-%d-" % S["x"] not in links and "ut-%d-" % S["x"] not in links,
            "bridges of the region left:\n%s" % links)
    rules = subprocess.run(["iptables", "-w", "5", "-S"], capture_output=True, text=True).stdout
    h.check("ut-%d-" % S["x"] not in rules, "iptables rules of the region left:\n%s" % rules)
    rules = subprocess.run(["iptables", "-w", "5", "-t", "nat", "-S"], capture_output=True, text=True).stdout
    h.check("ut-%d-" % S["x"] not in rules, "iptables nat rules (front door DNAT) of the region left:\n%s" % rules)
    h.eq(glob.glob("/var/lib/cni/results/ursa-%d-*" % S["x"]), [], "libcni cached results")
    h.eq([f for f in glob.glob("/var/lib/cni/results/cni-loopback-*") if os.path.basename(f)[13:-3] in S["sandboxes"]],
         [], "libcni cached loopback results of the region's sandboxes")
    h.eq(glob.glob("/run/netns/*%s*" % os.path.basename(S["tmp"])), [], "netns")
    h.check(port_free(port(7401)), "registry port free again")
    h.check(port_free(port(7101)), "tp-1 port free again")


def test_fallback_when_containerd_cannot_run():
    state = os.path.join(S["tmp"], "fallback")
    os.makedirs(state)
    snippet = ('set -euo pipefail; . "$1/lib/common.sh"; . "$1/lib/components.sh"; '
               'start_containerd az-9-host-1-containerd az-9 host-1 1; echo started-ok')
    e = dict(env(), URSA_STATE=state)
    # No registry runs in this state dir: containerd would have no images.
    p = subprocess.run(["bash", "-c", snippet, "x", DEPLOY], capture_output=True, text=True, env=e, timeout=60)
    h.check(p.returncode == 0 and "started-ok" in p.stdout, "auto falls back (rc %d): %s" % (p.returncode, p.stderr))
    h.check("containerd cannot run (the region's image registry is not running): node az-9-host-1 falls back "
            "to the process runtime" in p.stderr, "fallback message: %r" % p.stderr)
    h.check(not os.path.exists(os.path.join(cdir("az-9", "host-1").replace(S["state"], state), "containerd.pid")),
            "no containerd started")
    # Not root.
    os.chmod(S["tmp"], 0o755)
    os.chmod(state, 0o777)
    p = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "bash", "-c", snippet,
                        "x", DEPLOY], capture_output=True, text=True, env=e, timeout=60)
    h.check(p.returncode == 0 and "containerd cannot run (not root)" in p.stderr,
            "not root falls back (rc %d): %s" % (p.returncode, p.stderr))
    # URSA_RUNTIME=cri insists.
    e["URSA_RUNTIME"] = "cri"
    p = subprocess.run(["bash", "-c", snippet, "x", DEPLOY], capture_output=True, text=True, env=e, timeout=60)
    h.check(p.returncode != 0 and "URSA_RUNTIME=cri" in p.stderr, "cri does not fall back: %s" % p.stderr)


if __name__ == "__main__":
    h.run(globals(), per_test_timeout=600)
