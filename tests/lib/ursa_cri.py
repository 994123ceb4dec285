"""Real CRI nodes for Ursa's tests: a local image registry and one containerd per node.

    import ursa_harness as h
    import ursa_cri as cri

    node = cri.CriNode("az-1-host-1").start()   # containerd under a temporary directory
    kubelet_args = [...] + node.kubelet_args()   # --runtime cri --cri-endpoint ... --cgroup-parent ...
    node.probe("list-pods")                      # one CRI call (tests/cri_probe), parsed JSON
    node.task_pid(container_id)                  # host PID of a running container (ctr tasks ls)

Images come from deploy/lib/images.sh: built once into URSA_IMAGE_CACHE (default
<build dir>/test-images; images_build locks the cache, so concurrent tests build them once) and
pushed to a registry (docker-registry on a free loopback port) that each test process starts once,
on the first CriNode (registry()). Every node's containerd (deploy/lib/containerd.sh) mirrors
docker.io to it, so pods name busybox:1.36, httpd:1 (and containerd's sandbox image pause:3.9)
as users do.

Each node has a CNI network of its own (containerd_write_cni: ursa-cni, a bridge ut-e<4 hex>-N
and a /26 of the node's range per tenant with pods there): the range is a /24 of a 10.X.0.0/16 that
this process claims (a lock file under /tmp/ursa-test-nets/, held while the process lives, and an X
that no address or route of the host uses), nodes numbered from 1: 10.X.1.0/24, 10.X.2.0/24...
The lead's region (10.244/16), the other tests' networks and each other are not disturbed.

Everything is undone when the test exits, however it exits (ursa_harness.at_cleanup: the runner's
end, atexit, SIGTERM/SIGINT/SIGHUP), after the harness has killed its children (the kubelets):
each node's containers, shims, mounts, bridge and cgroups (containerd_teardown,
containerd_remove_network), then the registry. A node whose mounts could not be removed keeps its
temporary directory rather than have it deleted through the mounts. Needs root."""

import fcntl
import glob
import ipaddress
import json
import os
import random
import secrets
import shlex
import time

import ursa_harness as h

LIB = os.path.join(h.SOURCE_DIR, "deploy", "lib", "containerd.sh")
PROBE = os.path.join(h.BUILD_DIR, "tests", "cri_probe")
CNI_PLUGIN = os.path.join(h.BUILD_DIR, "src", "cni", "ursa-cni")
IMAGE_CACHE = os.environ.get("URSA_IMAGE_CACHE") or os.path.join(h.BUILD_DIR, "test-images")
NET_LOCKS = "/tmp/ursa-test-nets"
# Second octets this module picks from: not 10.244 (local-up's default), 10.200-249
# (test_local_cri.py's regions), 10.100-239 (test_cni.py's) or 10.233 (test_kubelet_cri.py's before).
NET_OCTETS = range(20, 96)

_registry = {}
_net = {"x": None, "fd": None, "next": 1}


def sh(script, timeout=300, check=True):
    """Runs a bash script with deploy/lib/containerd.sh (and images.sh) sourced, under set -euo
    pipefail; returns its stdout. Quote arguments with shlex.quote (q below)."""
    env = dict(os.environ, URSA_BUILD_DIR=h.BUILD_DIR, URSA_CNI_PLUGIN=CNI_PLUGIN)
    rc, out, err = h.run_cmd(["bash", "-c", 'set -euo pipefail; source "$0"; ' + script, LIB], timeout, env=env)
    if check and rc != 0:
        raise AssertionError("shell failed (rc %d): %s\nstdout: %s\nstderr: %s"
                             % (rc, script, out[-3000:], err[-3000:]))
    return out


def q(*words):
    return " ".join(shlex.quote(str(w)) for w in words)


def probe(endpoint, *args, ok=True):
    """One CRI call through tests/cri_probe against endpoint (unix://...); the parsed JSON answer.
    With ok=False a failed call returns its {"error", "grpc_code", "message"} instead of raising."""
    rc, out, err = h.run_cmd([PROBE, endpoint] + [str(a) for a in args], 60)
    if ok and rc != 0:
        raise AssertionError("cri_probe %s: %s %s" % (" ".join(map(str, args)), out, err))
    try:
        return json.loads(out)
    except ValueError:
        if ok:
            raise
        return {"error": "rc %d" % rc, "grpc_code": -1, "message": (out + err).strip()}


def require():
    """The CRI nodes' prerequisites: root, the cri_probe test binary and ursa-cni."""
    if os.geteuid() != 0:
        raise h.HarnessError("CRI nodes need root (containerd, runc, mounts, bridges)")
    h.require_binary(PROBE, "cri_probe")
    h.require_binary(CNI_PLUGIN, "ursa-cni")


# ---------------------------------------------------------------------------------------------
# Images and the registry

def build_images():
    """The OCI layout of deploy/lib/images.sh's images, built into IMAGE_CACHE unless there."""
    out = sh("images_build %s >&2; printf '%%s\\n' \"$URSA_IMAGE_LAYOUT\"" % q(IMAGE_CACHE), timeout=600)
    return out.strip().splitlines()[-1]


class Registry:
    """docker-registry on a free loopback port holding busybox:1.36, pause:3.9 and httpd:1."""

    def __init__(self):
        self.dir = h.make_tmpdir("registry")
        self.port = None
        self.layout = None
        h._logs.append(("registry", os.path.join(self.dir, "registry.log")))

    def start(self):
        h.at_cleanup(self.stop)
        self.layout = build_images()
        last = None
        for _ in range(3):  # a free port may be taken by someone else before the registry binds it
            self.port = h.free_port()
            try:
                sh("registry_start %s %d" % (q(self.dir), self.port), timeout=60)
                break
            except AssertionError as e:
                last = e
                sh("registry_stop %s" % q(self.dir), check=False)
        else:
            raise h.HarnessError("the test registry did not start: %s" % last)
        sh("registry_push %s %d %s" % (q(self.layout), self.port, q(os.path.join(self.dir, "policy.json"))),
           timeout=300)
        return self

    @property
    def host(self):
        return "127.0.0.1:%d" % self.port

    def stop(self):
        sh("registry_stop %s" % q(self.dir), check=False)


def registry():
    """The registry of this test process, started on first use."""
    if "r" not in _registry:
        _registry["r"] = Registry()
        _registry["r"].start()
    return _registry["r"]


# ---------------------------------------------------------------------------------------------
# Pod networks

def _used_octets():
    text = h.must_run(["ip", "-4", "addr"]) + h.must_run(["ip", "-4", "route"])
    return {x for x in NET_OCTETS if " 10.%d." % x in text or "\n10.%d." % x in "\n" + text}


def _claim_net():
    """10.X of this process: X not used on the host and not claimed by another test process."""
    if _net["x"] is not None:
        return _net["x"]
    os.makedirs(NET_LOCKS, exist_ok=True)
    free = [x for x in NET_OCTETS if x not in _used_octets()]
    random.shuffle(free)
    for x in free:
        fd = os.open(os.path.join(NET_LOCKS, "10.%d.lock" % x), os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            continue
        os.set_inheritable(fd, False)
        _net.update(x=x, fd=fd)
        return x
    raise h.HarnessError("no free 10.X.0.0/16 for pod networks (X in %d-%d)" % (NET_OCTETS[0], NET_OCTETS[-1]))


def next_subnet():
    """A /24 of this process's 10.X.0.0/16 that no node of it has had yet."""
    x = _claim_net()
    if _net["next"] > 254:
        raise h.HarnessError("more than 254 pod networks in one test")
    n = _net["next"]
    _net["next"] += 1
    return ipaddress.ip_network("10.%d.%d.0/24" % (x, n))


def _free_bridge_prefix():
    """ut-e<4 hex>: containerd_write_cni's bridge prefix (ut-...), no bridge of the host has it."""
    links = h.must_run(["ip", "-o", "link"])
    for _ in range(50):
        b = "ut-e" + secrets.token_hex(2)
        if (" %s-" % b) not in links:
            return b
    raise h.HarnessError("no free bridge prefix")


# ---------------------------------------------------------------------------------------------
# Nodes

class CriNode:
    """containerd for one node (deploy/lib/containerd.sh) in a temporary directory: its config
    pulling through registry() (or reg), its CNI network (bridge, subnet), a cgroup parent for the
    kubelet's pods. start() starts it; teardown() (run at exit in any case) removes everything."""

    def __init__(self, name, reg=None, cgroup_prefix="ursa-e2e", block=None, front_door=None):
        self.name = name
        self.reg = reg
        self.top = h.make_tmpdir("cri-" + name)
        self.dir = os.path.join(self.top, "c")
        self.endpoint = "unix://" + os.path.join(self.dir, "containerd.sock")
        self.log = os.path.join(self.dir, "containerd.log")
        self.network = None
        self.bridge = None      # the prefix of its bridges: <bridge>-N, one per tenant
        self.subnet = None      # the node's pod range: one /26 of it per tenant
        self.cgroup = "/%s-%s" % (cgroup_prefix, secrets.token_hex(4))
        self.block = block      # prefix length of a tenant's address blocks (None: ursa-cni's /26)
        self.front_door = front_door  # "127.0.0.1:PORT" pods reach at 10.96.0.1:443 (ursa-cni's DNAT), or None
        self._cleanup_added = False
        self._down = True       # torn down (or never started): teardown() has nothing to do
        h._logs.append(("containerd " + name, self.log))

    def start(self, timeout=60):
        """Writes the config and the CNI network (first time only) and starts containerd; waits
        until its CRI reports the network ready. Also starts a node again after teardown()."""
        require()
        if self.reg is None:
            self.reg = registry()
        if not self._cleanup_added:
            h.at_cleanup(self.teardown)
            self._cleanup_added = True
        self._down = False
        if self.subnet is None:
            self.subnet = next_subnet()
            self.bridge = _free_bridge_prefix()
            self.network = "ursa-" + self.bridge[3:]
            cni = [self.dir, self.network, self.bridge, self.subnet]
            if self.block or self.front_door:
                cni.append(self.block or 26)
            if self.front_door:
                cni.append(self.front_door)
            sh("containerd_write_cni %s; containerd_write_config %s %d" % (q(*cni), q(self.dir), self.reg.port))
        sh("containerd_start %s" % q(self.dir), timeout=timeout)
        h.wait_until(lambda: self.probe("status")["conditions"]["NetworkReady"]["status"], 30,
                     "CNI network of %s ready" % self.name)
        return self

    def kubelet_args(self):
        return ["--runtime", "cri", "--cri-endpoint", self.endpoint, "--cgroup-parent", self.cgroup]

    def running(self):
        """containerd of this node runs (its pid file names a live containerd)."""
        rc, _, _ = h.run_cmd(["bash", "-c", 'source "$0"; _node_pid "$1/containerd.pid" "$(command -v containerd)"',
                              LIB, self.dir], 10)
        return rc == 0

    def probe(self, *args, ok=True):
        return probe(self.endpoint, *args, ok=ok)

    def ctr(self, *args, timeout=60):
        return sh("containerd_ctr %s" % q(self.dir, *args), timeout=timeout)

    def tasks(self):
        """{task id: (host pid, status)} of the CRI namespace (k8s.io): sandboxes and containers."""
        out = self.ctr("-n", "k8s.io", "tasks", "ls")
        t = {}
        for line in out.splitlines()[1:]:
            f = line.split()
            if len(f) >= 3:
                t[f[0]] = (int(f[1]), f[2])
        return t

    def task_pid(self, container_id):
        """The host PID of a running container (a pod status's containerID, with or without its
        containerd:// prefix), or None."""
        cid = container_id.split("://", 1)[-1]
        pid, status = self.tasks().get(cid, (0, ""))
        return pid if pid > 0 and status == "RUNNING" else None

    def sandboxes(self, pod_name=None):
        """The node's CRI pod sandboxes [{id, name, state (0 ready)}], of one pod name if given."""
        return [p for p in self.probe("list-pods") if pod_name is None or p.get("name") == pod_name]

    def containers(self, sandbox_id=None):
        return self.probe(*(["list-containers"] + ([sandbox_id] if sandbox_id else [])))

    def leftovers(self):
        return sh("containerd_leftovers %s" % q(self.dir), check=False).strip()

    def teardown(self, drain=True):
        """Kills and deletes every container and sandbox, stops containerd, removes shims, mounts,
        the bridges, address leases, libcni's cache and the pods' cgroups. Safe to repeat.
        drain=False skips removing the sandboxes through the CRI first (slower): the node as after
        a power loss, its CRI sandboxes still recorded in containerd's root for a later start()."""
        if self._down or not os.path.isdir(self.dir):
            return
        if drain:
            self._drain()
        sh("containerd_teardown %s; containerd_remove_network %s" % (q(self.dir), q(self.dir)),
           timeout=180, check=False)
        self._remove_cgroups()
        self._down = True
        left = self.leftovers()
        if any(line.startswith("mount ") for line in left.splitlines()):
            h.keep_tmpdir(self.top, "containerd of %s left mounts:\n%s" % (self.name, left))

    def _drain(self):
        """Stops and removes every pod sandbox through the CRI, as a kubelet would (containers
        killed at once, CNI DEL): much faster than containerd_teardown's one ctr process per task,
        which then only has stragglers to kill. Errors are left to containerd_teardown."""
        if not self.running():
            return
        pods = self.probe("list-pods", ok=False)
        if not isinstance(pods, list):
            return
        for p in pods:
            self.probe("stop-pod", p["id"], ok=False)
            self.probe("rm-pod", p["id"], ok=False)

    def _remove_cgroups(self):
        cg = self.cgroup
        for top in glob.glob("/sys/fs/cgroup/*" + cg) + glob.glob("/sys/fs/cgroup" + cg):
            for d, _, _ in sorted(os.walk(top), key=lambda w: len(w[0]), reverse=True):
                for _ in range(10):
                    try:
                        os.rmdir(d)
                        break
                    except FileNotFoundError:
                        break
                    except OSError:
                        time.sleep(0.05)
