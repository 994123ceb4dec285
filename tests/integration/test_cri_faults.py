#!/usr/bin/python3
"""ursa-kubelet --runtime cri under faults, against a real containerd (tests/lib/ursa_cri.py) and
real RM + TP API servers (tests/lib/ursa_region.py).

Checks: a pull from a registry that accepts the connection and never answers does not hold up
another pod's start, and two pods of that image share one pull; containerd stopped and started
under running pods: they keep running, nothing is started again (same container ids, same
restartCount, same task), and new pods start after it is back; a kubelet restart adopts its
sandboxes and containers; image garbage collection, its high threshold set just under the real
usage of the image filesystem's disk, removes an unused image and keeps the used one and the
sandbox image; a kubelet whose CRI endpoint does not answer at start says so, keeps retrying
and starts once the runtime answers. Needs root.

Run alone: URSA_BUILD_DIR=build /usr/bin/python3 tests/integration/test_cri_faults.py"""

import os
import socket
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import ursa_harness as h  # noqa: E402
import ursa_cri as cri  # noqa: E402
import ursa_region as region  # noqa: E402

NODE = "cri-faults-1"
S = {}


class HangingRegistry:
    """A TCP server on 127.0.0.1 that accepts connections, reads what comes and never answers."""

    def __init__(self):
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.conns = []
        self.requests = []
        self.lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()
        h.at_cleanup(self.close)

    def _accept(self):
        while True:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            with self.lock:
                self.conns.append(c)
            threading.Thread(target=self._read, args=(c,), daemon=True).start()

    def _read(self, c):
        while True:
            try:
                data = c.recv(65536)
            except OSError:
                return
            if not data:
                return
            with self.lock:
                self.requests.append(data[:200])

    def connections(self):
        with self.lock:
            return len(self.conns)

    def close(self):
        """Shuts every connection down (a FIN even while a reader thread blocks in recv)."""
        with self.lock:
            conns = [self.sock] + self.conns
        for c in conns:
            try:
                c.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            c.close()


def setup():
    cri.require()
    node = cri.CriNode(NODE, cgroup_prefix="ursa-faults").start()
    r = region.start(tenants=("acme",))
    kc = r["rm"].kubeconfig("system", "system:node:" + NODE, ("system:nodes",))
    kl = region.Kubelet(kc, ["--node-name", NODE, "--cpu", "4", "--memory", "8Gi"] + node.kubelet_args(),
                        label="kubelet-faults")
    kl.start()
    S.update(node=node, kl=kl, kc=kc, **r)
    h.wait_until(lambda: region.node_ready(r["admin"], NODE), 60, "node %s Ready" % NODE)


def make_pod(name, image="busybox:1.36", command=("sleep", "3600")):
    c = {"name": "c", "image": image, "imagePullPolicy": "IfNotPresent"}
    if command:
        c["command"] = list(command)
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"containers": [c], "terminationGracePeriodSeconds": 1, "nodeName": NODE}}


def create(p):
    r = S["tpadmin"].post(h.pods_path("acme"), p)
    h.expect_status(r, 201, "create pod %s" % p["metadata"]["name"])


def delete(name):
    """A graceful delete (terminationGracePeriodSeconds 1): the kubelet stops the pod and
    removes it. (A forced one leaves the kubelet a 30 s grace period, ignored by `sleep`.)"""
    S["tpadmin"].delete(h.pods_path("acme", name=name))


def status(name):
    r = S["tpadmin"].get(h.pods_path("acme", name=name))
    return r.json.get("status", {}) if r.status == 200 else {}


def cstatus(name):
    return (status(name).get("containerStatuses") or [{}])[0]


def running(name):
    return status(name).get("phase") == "Running" and "running" in cstatus(name).get("state", {})


def snapshot(names):
    """What must not change across a fault, per pod: container id, restarts, sandbox, host PID."""
    snap = {}
    for n in names:
        cs = cstatus(n)
        sb = [p["id"] for p in S["node"].sandboxes(n)]
        snap[n] = {"containerID": cs.get("containerID"), "restartCount": cs.get("restartCount"),
                   "sandboxes": sb, "pid": S["node"].task_pid(cs.get("containerID", "")),
                   "phase": status(n).get("phase")}
    return snap


def test_hanging_pull_does_not_block_other_pods():
    hang = HangingRegistry()
    S["hang"] = hang
    host = "127.0.0.1:%d" % hang.port
    # plain HTTP to it (containerd's hosts.toml), so the pull waits on an answer that never comes
    d = os.path.join(S["node"].dir, "certs.d", host)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "hosts.toml"), "w") as f:
        f.write('server = "http://%s"\n\n[host."http://%s"]\n  capabilities = ["pull", "resolve"]\n' % (host, host))
    image = "%s/hang/app:1" % host
    create(make_pod("stuck", image=image))
    h.wait_until(lambda: hang.connections() >= 1 and hang.requests, 30, "the pull reached the hanging registry")
    create(make_pod("stuck2", image=image))
    t0 = time.monotonic()
    create(make_pod("quick"))
    h.wait_until(lambda: running("quick"), 30, "pod quick Running while the other pull hangs")
    took = time.monotonic() - t0
    h.check(took < 20, "quick started in %.1f s" % took)
    for n in ("stuck", "stuck2"):
        w = cstatus(n).get("state", {}).get("waiting", {})
        h.eq(w.get("reason"), "ContainerCreating", "%s waits for its image: %r" % (n, w))
        h.eq(status(n).get("phase"), "Pending", "phase of %s" % n)
    h.eq(hang.connections(), 1, "connections to the hanging registry (one pull for both pods)")
    log = S["kl"].log_text()
    h.eq(log.count('msg="cri: pulling image" image="%s"' % image), 1, "pulls of %s started" % image)
    # the registry goes away: the pull fails, the pods show ErrImagePull/ImagePullBackOff
    hang.close()
    h.wait_until(lambda: cstatus("stuck").get("state", {}).get("waiting", {}).get("reason")
                 in ("ErrImagePull", "ImagePullBackOff"), 30, "stuck's pull failed once the registry closed")
    delete("stuck")
    delete("stuck2")
    h.check(running("quick"), "quick still running")


def test_containerd_restart_keeps_pods():
    create(make_pod("steady", command=("sh", "-c", "echo up; sleep 3600")))
    h.wait_until(lambda: running("steady"), 60, "pod steady Running")
    before = snapshot(["quick", "steady"])
    for n, s in before.items():
        h.check(s["pid"] and len(s["sandboxes"]) == 1, "%s before: %r" % (n, s))
    mark = len(S["kl"].log_text())
    cri.sh("containerd_stop %s" % cri.q(S["node"].dir), timeout=60)
    h.check(not S["node"].running(), "containerd stopped")
    # the kubelet's syncs fail for a while; its pods keep running (shims outlive containerd)
    time.sleep(6)
    for n in before:
        h.eq(status(n).get("phase"), "Running", "phase of %s while containerd is down" % n)
        h.check(os.path.exists("/proc/%d" % before[n]["pid"]), "process of %s alive while containerd is down" % n)
    S["node"].start()
    time.sleep(5)  # a few syncs against the restarted containerd
    after = snapshot(["quick", "steady"])
    h.eq(after, before, "pods after the containerd restart")
    for n in before:
        h.eq(len(S["node"].containers(before[n]["sandboxes"][0])), 1, "containers in %s's sandbox" % n)
    log = S["kl"].log_text()[mark:]
    h.check("pod sandbox lost" not in log, "no sandbox taken for lost: %s" % log[-2000:])
    # the kubelet talks to the new containerd: a new pod starts
    create(make_pod("after"))
    h.wait_until(lambda: running("after"), 60, "a pod created after the containerd restart runs")
    S["before"] = snapshot(["quick", "steady", "after"])


def test_kubelet_restart_adopts_pods():
    before = S["before"]
    S["kl"].stop()
    mark_adopted = S["kl"].log_text().count("cri: pod adopted")
    S["kl"].start()
    h.wait_until(lambda: S["kl"].log_text().count("cri: pod adopted") >= mark_adopted + 3, 60,
                 "the restarted kubelet adopted its 3 pods")
    time.sleep(3)
    h.eq(snapshot(list(before)), before, "pods after the kubelet restart")


def fs_usage_percent(path):
    st = os.statvfs(path)
    cap, avail = st.f_blocks * st.f_frsize, st.f_bavail * st.f_frsize
    return 100 - (avail * 100 // cap)


def image_tags():
    return {t: im["id"] for im in S["node"].probe("images") for t in im["repo_tags"]}


def test_image_gc_removes_unused_images_only():
    node = S["node"]
    node.probe("pull", "httpd:1")  # on the node, used by no container
    tags = image_tags()
    httpd = [t for t in tags if "/library/httpd:1" in t]
    busybox = [t for t in tags if "/library/busybox:1.36" in t]
    pause = [t for t in tags if "/library/pause:3.9" in t]
    h.check(httpd and busybox and pause, "images on the node: %r" % sorted(tags))
    # the real usage of the disk holding containerd's snapshots (what ImageFsInfo names)
    mount = node.probe("imagefs")[0]["mountpoint"]
    h.check(mount.startswith(node.dir), "image filesystem mountpoint %r under the node's root" % mount)
    usage = fs_usage_percent(mount)
    high = max(1, usage - 1)
    low = high - 1
    before = snapshot(["quick", "steady", "after"])
    S["kl"].stop()
    S["kl"].args += ["--image-gc-high-threshold", str(high), "--image-gc-low-threshold", str(low),
                     "--image-minimum-gc-age", "0s", "--image-gc-period", "2s"]
    S["kl"].start()
    h.wait_until(lambda: httpd[0] not in image_tags(), 40,
                 "the unused httpd image removed (disk %d%% used, high threshold %d%%)" % (usage, high))
    left = image_tags()
    h.check(busybox[0] in left, "busybox (in use) kept: %r" % sorted(left))
    h.check(pause[0] in left, "the sandbox image kept: %r" % sorted(left))
    log = S["kl"].log_text()
    h.check('msg="image gc: removed image" id=%s' % tags[httpd[0]] in log, "log line of the removed image")
    h.check("image gc: disk usage over the high threshold" in log, "GC reason logged")
    time.sleep(3)  # a few more GC rounds: nothing in use goes
    h.check(busybox[0] in image_tags() and pause[0] in image_tags(), "busybox and pause still there")
    h.eq(snapshot(list(before)), before, "pods after image GC")


def test_unanswering_endpoint_at_start_retries():
    d = h.make_tmpdir("silent-cri")
    path = os.path.join(d, "cri.sock")
    silent = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)  # accepts, never answers
    silent.bind(path)
    silent.listen(8)
    h.at_cleanup(silent.close)
    kc = S["rm"].kubeconfig("system", "system:node:cri-faults-2", ("system:nodes",))
    kl = region.Kubelet(kc, ["--node-name", "cri-faults-2", "--runtime", "cri", "--cri-endpoint", "unix://" + path],
                        label="kubelet-silent")
    kl.start()
    h.wait_until(lambda: "not answering" in kl.log_text(), 20, "the kubelet says the runtime does not answer")
    time.sleep(7)  # more than one attempt (5 s each)
    h.check(kl.alive(), "the kubelet keeps retrying: %s" % kl.log_text()[-1500:])
    h.check("retrying" in kl.log_text(), "message: %s" % kl.log_text()[-1500:])
    # the runtime appears at that path: the kubelet goes on and registers its node
    silent.close()
    os.unlink(path)
    os.symlink(os.path.join(S["node"].dir, "containerd.sock"), path)
    h.wait_until(lambda: region.node_ready(S["admin"], "cri-faults-2"), 60,
                 "cri-faults-2 Ready once the runtime answers")
    h.check("container runtime answers" in kl.log_text(), "log of the runtime answering")
    rc = kl.stop()
    h.check(rc is not None and rc >= 0, "kubelet exit status %r (no crash)" % rc)
    # a malformed endpoint is refused at once
    rc, out, err = h.run_cmd(region.Kubelet(kc, ["--node-name", "x", "--runtime", "cri", "--cri-endpoint",
                                                 "tcp://127.0.0.1:1"], label="kubelet-bad").args, 20)
    h.check(rc != 0 and "--cri-endpoint must be unix://" in err, "malformed endpoint: rc %d %r" % (rc, err))


def test_cleanup_pods():
    for n in ("stuck", "stuck2", "quick", "steady", "after"):
        delete(n)
    h.wait_until(lambda: not S["node"].sandboxes(), 60, "sandboxes removed")


if __name__ == "__main__":
    h.run(globals())
