#!/usr/bin/python3
"""ursa-kubelet with --runtime cri against a real containerd: pods become CRI pod sandboxes.

Set-up: images from deploy/lib/images.sh (busybox:1.36 and pause:3.9 built from busybox-static)
in a local registry (docker-registry), containerd from deploy/lib/containerd.sh (docker.io
mirrored to that registry, a CNI bridge of the test's own), etcd + resource manager + tenant
partition, and the kubelet with `--runtime cri --cri-endpoint unix://...`.

Checks: a busybox pod runs (Running, its log through `kubectl logs`, its own PID namespace, a
pod IP from CNI that is not the node's); a missing image gives ErrImagePull then
ImagePullBackOff; a container over its memory limit ends OOMKilled; a kubelet restart adopts the
running pod (same container, restartCount unchanged); deleting the pod removes its sandbox.
Needs root (containerd, runc, mounts). Images are cached in $URSA_IMAGE_CACHE
(default ~/.cache/ursa/images).

Run alone: URSA_BUILD_DIR=build /usr/bin/python3 tests/integration/test_kubelet_cri.py"""

import base64
import glob
import ipaddress
import json
import os
import secrets
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import ursa_harness as h  # noqa: E402

RM_BIN = os.path.join(h.BUILD_DIR, "src", "resource-manager", "ursa-rm-apiserver")
KUBELET_BIN = os.path.join(h.BUILD_DIR, "src", "kubelet", "ursa-kubelet")
REGISTRY = "/apis/ursa.io/v1/tenantpartitions"
LIB = os.path.join(h.SOURCE_DIR, "deploy", "lib", "containerd.sh")
CACHE = os.environ.get("URSA_IMAGE_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "ursa", "images")
PROBE = os.path.join(h.BUILD_DIR, "tests", "cri_probe")
NODE = "cri-node-1"
S = {}


def sh(script, timeout=300, check=True):
    rc, out, err = h.run_cmd(["bash", "-c", 'set -euo pipefail; source "$0"; ' + script, LIB], timeout)
    if check and rc != 0:
        raise AssertionError("shell failed (rc %d): %s\nstdout: %s\nstderr: %s"
                             % (rc, script, out[-3000:], err[-3000:]))
    return out


def probe(*args, ok=True):
    rc, out, err = h.run_cmd([PROBE, S["endpoint"]] + [str(a) for a in args], 60)
    if ok and rc != 0:
        raise AssertionError("cri_probe %s: %s %s" % (" ".join(map(str, args)), out, err))
    return json.loads(out)


class RmServer(h.ApiServer):
    """ursa-rm-apiserver, started like the harness starts a TP (as in test_kubelet.py)."""

    def __init__(self, etcd):
        h.require_binary(RM_BIN, "ursa-rm-apiserver")
        super().__init__(etcd, partition_id="rm-1")

    def args(self):
        a = super().args()
        a[0] = RM_BIN
        return a


def share_credentials(tp, rm):
    """The kubelet uses its RM kubeconfig's token and CA for every TP: give the TP the RM's."""
    for attr in ("ca_file", "cert_file", "key_file", "signing_key", "signing_pub", "admin_token", "token_file"):
        setattr(tp, attr, getattr(rm, attr))


class Kubelet:
    def __init__(self, kubeconfig, extra=()):
        h.require_binary(KUBELET_BIN, "ursa-kubelet")
        self.dir = h.make_tmpdir("kubelet-cri")
        self.port = h.free_port()
        self.args = [KUBELET_BIN, "--kubeconfig", kubeconfig, "--root-dir", self.dir, "--port", str(self.port),
                     "--address", "127.0.0.1", "--zone", "az-1"] + list(extra)
        self.log = os.path.join(self.dir, "kubelet.log")
        h._logs.append(("kubelet", self.log))
        self.proc = None

    def start(self):
        self.proc = h.spawn(self.args, self.log)
        return self

    def stop(self):
        return h.terminate(self.proc)

    def log_text(self):
        with open(self.log, errors="replace") as f:
            return f.read()


def write_cni(cdir):
    S["bridge"] = "ukc%s" % secrets.token_hex(3)
    S["subnet"] = ipaddress.ip_network("10.233.%d.0/24" % (secrets.randbelow(250) + 2))
    with open(os.path.join(cdir, "cni", "net.d", "10-ursa-kcri.conflist"), "w") as f:
        json.dump({"cniVersion": "0.4.0", "name": "ursa-kcri", "plugins": [
            {"type": "bridge", "bridge": S["bridge"], "isGateway": True, "ipMasq": False,
             "ipam": {"type": "host-local", "ranges": [[{"subnet": str(S["subnet"])}]],
                      "dataDir": os.path.join(cdir, "ipam")}}]}, f)


def setup():
    if os.geteuid() != 0:
        raise h.HarnessError("test_kubelet_cri needs root (containerd and runc)")
    h.require_binary(PROBE, "cri_probe")
    tmp = h.make_tmpdir("kcri")
    S["tmp"] = tmp
    S["cdir"] = os.path.join(tmp, "c")
    S["rdir"] = os.path.join(tmp, "registry")
    S["port"] = h.free_port()
    S["endpoint"] = "unix://" + os.path.join(S["cdir"], "containerd.sock")
    h._logs.append(("containerd", os.path.join(S["cdir"], "containerd.log")))
    h._logs.append(("registry", os.path.join(S["rdir"], "registry.log")))
    layout = sh('images_build "%s" >&2; printf "%%s\\n" "$URSA_IMAGE_LAYOUT"' % CACHE, timeout=600).strip()
    layout = layout.splitlines()[-1]
    sh('registry_start "%s" %d; registry_push "%s" %d' % (S["rdir"], S["port"], layout, S["port"]))
    sh('containerd_write_config "%s" %d' % (S["cdir"], S["port"]))
    write_cni(S["cdir"])
    sh('containerd_start "%s"' % S["cdir"])
    h.wait_until(lambda: probe("status")["conditions"]["NetworkReady"]["status"], 30, "CNI network ready")

    etcd_rm = h.Etcd(name="etcd-rm").start()
    etcd_tp = h.Etcd(name="etcd-tp").start()
    rm = RmServer(etcd_rm)
    rm.start()
    # the TP asks the RM for the node when it proxies `kubectl logs` (region token = RM admin token)
    token = os.path.join(tmp, "region.token")
    with open(token, "w") as f:
        f.write(rm.admin_token + "\n")
    tp = h.ApiServer(etcd_tp, partition_id="tp-1", extra_args=("--region-token-file", token,
                                                               "--region-ca-file", rm.ca_file))
    share_credentials(tp, rm)
    tp.start()
    admin = rm.admin()
    r = admin.post(REGISTRY, {"apiVersion": "ursa.io/v1", "kind": "TenantPartition",
                              "metadata": {"name": "tp-1"}, "spec": {"endpoints": [tp.url]}})
    h.expect_status(r, 201, "register tp-1")
    r = tp.admin().post("/apis/ursa.io/v1/resourcemanagers", {
        "apiVersion": "ursa.io/v1", "kind": "ResourceManager", "metadata": {"name": "rm-1"},
        "spec": {"endpoints": [rm.url], "zone": "az-1"}})
    h.expect_status(r, 201, "register rm-1 with the TP")
    h.create_tenant(tp.admin(), "acme")
    node_kc = rm.kubeconfig("system", "system:node:" + NODE, ("system:nodes",))
    S["cgroup"] = "/ursa-kcri-%s" % secrets.token_hex(4)
    kl = Kubelet(node_kc, ["--node-name", NODE, "--cpu", "4", "--memory", "8Gi", "--runtime", "cri",
                           "--cri-endpoint", S["endpoint"], "--cgroup-parent", S["cgroup"]])
    kl.start()
    S.update(rm=rm, tp=tp, kl=kl, admin=admin, tpadmin=tp.admin(), kc=tp.kubeconfig("acme", "alice"))
    h.wait_until(lambda: node_ready(), 60, "node %s Ready" % NODE)


def teardown():
    if S.get("cdir"):
        sh('containerd_teardown "%s"' % S["cdir"], check=False)
    if S.get("rdir"):
        sh('registry_stop "%s"' % S["rdir"], check=False)
    if S.get("bridge"):
        h.run_cmd(["ip", "link", "del", S["bridge"]])
    # the pods' parent cgroups (--cgroup-parent), empty once containerd removed the containers
    cg = S.get("cgroup", "/none")
    for top in glob.glob("/sys/fs/cgroup/*" + cg) + glob.glob("/sys/fs/cgroup" + cg):
        for d, _, _ in sorted(os.walk(top), key=lambda w: len(w[0]), reverse=True):
            try:
                os.rmdir(d)
            except OSError:
                pass


def node_ready():
    r = S["admin"].get("/api/v1/nodes/" + NODE)
    if r.status != 200:
        return False
    return any(c.get("type") == "Ready" and c.get("status") == "True"
               for c in r.json.get("status", {}).get("conditions", []))


def make_pod(name, command, image="busybox:1.36", restart="Always", limits=None):
    c = {"name": "c", "image": image}
    if command:
        c["command"] = command
    if limits:
        c["resources"] = {"limits": limits, "requests": limits}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"containers": [c], "restartPolicy": restart, "terminationGracePeriodSeconds": 2,
                     "nodeName": NODE}}


def create(pod):
    r = S["tpadmin"].post(h.pods_path("acme"), pod)
    h.expect_status(r, 201, "create pod %s" % pod["metadata"]["name"])
    return r.json["metadata"]["uid"]


def pod(name):
    r = S["tpadmin"].get(h.pods_path("acme", name=name))
    return r.json if r.status == 200 else None


def status(name):
    return (pod(name) or {}).get("status", {})


def cstatus(name):
    cs = status(name).get("containerStatuses") or [{}]
    return cs[0]


def kubectl_logs(name):
    rc, out, err = h.kubectl(["logs", name], S["kc"])
    return out if rc == 0 else "error: " + err


def test_pod_runs_with_own_ip_pid_namespace_and_logs():
    uid = create(make_pod("hi", ["sh", "-c", "echo hi; echo procs=$(ls /proc | grep -c '^[0-9]'); sleep 3600"]))
    S["hi_uid"] = uid
    h.wait_until(lambda: status("hi").get("phase") == "Running", 120, "pod hi Running")
    st = status("hi")
    cs = cstatus("hi")
    h.check(cs["containerID"].startswith("containerd://"), "containerID %r" % cs["containerID"])
    h.check(cs["ready"] and "running" in cs["state"], "container status %s" % cs)
    h.check(cs["imageID"], "imageID %r" % cs["imageID"])
    h.eq(cs["restartCount"], 0, "restartCount")
    h.check(st.get("podIP") and ipaddress.ip_address(st["podIP"]) in S["subnet"],
            "podIP %r in the CNI subnet %s" % (st.get("podIP"), S["subnet"]))
    h.check(st["podIP"] != st.get("hostIP"), "podIP %s differs from the node's %s" % (st["podIP"], st.get("hostIP")))
    h.eq(st.get("podIPs"), [{"ip": st["podIP"]}], "podIPs")
    out = h.wait_until(lambda: (lambda o: o if "procs=" in o else None)(kubectl_logs("hi")), 30,
                       "kubectl logs hi prints the output")
    lines = out.splitlines()
    h.eq(lines[0], "hi", "first line of kubectl logs: %r" % out)
    procs = int(lines[1].split("=", 1)[1])
    # sh, the $(...) subshell, ls and grep: the container sees its own PID namespace, not the node's
    host = len([p for p in os.listdir("/proc") if p.isdigit()])
    h.check(1 <= procs <= 4 < host, "processes visible in the container: %d (%r), on the node: %d" % (procs, out, host))
    S["hi_cid"] = cs["containerID"]
    # the container runs in <--cgroup-parent>/pod<uid>
    cid = cs["containerID"].split("://", 1)[1]
    tasks = sh('containerd_ctr "%s" -n k8s.io tasks ls' % S["cdir"])
    pid = [line.split()[1] for line in tasks.splitlines() if line.startswith(cid)]
    h.eq(len(pid), 1, "task of the container in %r" % tasks)
    with open("/proc/%s/cgroup" % pid[0]) as f:
        cg = f.read()
    h.check("%s/pod%s/" % (S["cgroup"], uid) in cg, "cgroup of the container under the parent: %r" % cg)


def test_command_args_env_user_and_image_default():
    """command/args/env/workingDir/runAsUser reach the container; without a command the image's
    own runs (busybox: sh, which ends at once without input)."""
    p = make_pod("spec", ["sh", "-c"], restart="Never")
    c = p["spec"]["containers"][0]
    c["args"] = ["echo $GREETING uid=$(id -u) dir=$(pwd)"]
    c["env"] = [{"name": "GREETING", "value": "hello"}]
    c["workingDir"] = "/tmp"
    c["securityContext"] = {"runAsUser": 65534}
    create(p)
    h.wait_until(lambda: status("spec").get("phase") == "Succeeded", 60, "pod spec Succeeded")
    h.eq(kubectl_logs("spec"), "hello uid=65534 dir=/tmp\n", "output of the container")
    t = cstatus("spec")["state"]["terminated"]
    h.eq((t["exitCode"], t["reason"]), (0, "Completed"), "termination")
    create(make_pod("default", None, restart="Never"))
    h.wait_until(lambda: status("default").get("phase") == "Succeeded", 60, "image's own command ran and ended")
    for name in ("spec", "default"):
        S["tpadmin"].delete(h.pods_path("acme", name=name))


def test_image_pull_secret_read():
    """imagePullSecrets: the kubelet reads the secret with its node credential and hands the
    matching entry to PullImage (the test registry asks for none, so the pull just works)."""
    auths = {"auths": {"docker.io": {"username": "u", "password": "p"}}}
    r = S["tpadmin"].post("/api/v1/tenants/acme/namespaces/default/secrets", {
        "apiVersion": "v1", "kind": "Secret", "metadata": {"name": "regcred"},
        "type": "kubernetes.io/dockerconfigjson",
        "data": {".dockerconfigjson": base64.b64encode(json.dumps(auths).encode()).decode()}})
    h.expect_status(r, 201, "create secret regcred")
    p = make_pod("secret", ["sh", "-c", "echo pulled; sleep 3600"])
    p["spec"]["imagePullSecrets"] = [{"name": "regcred"}]
    p["spec"]["containers"][0]["imagePullPolicy"] = "Always"
    create(p)
    h.wait_until(lambda: status("secret").get("phase") == "Running", 60, "pod secret Running")
    log = S["kl"].log_text()
    h.check('path="/api/v1/tenants/acme/namespaces/default/secrets/regcred"' not in log, "pull secret refused")
    h.check('msg="image pull credentials" pod="default/secret" container=c registry="docker.io"' in log,
            "the kubelet found credentials for docker.io in the pull secret")
    S["tpadmin"].delete(h.pods_path("acme", name="secret"))


def test_missing_image_err_image_pull_then_backoff():
    create(make_pod("nope", ["sh"], image="busybox:no-such-tag"))
    seen = []

    def reason():
        w = cstatus("nope").get("state", {}).get("waiting", {})
        r = w.get("reason")
        if r and (not seen or seen[-1][0] != r):
            seen.append((r, w.get("message", "")))
        return r == "ImagePullBackOff" and any(s[0] == "ErrImagePull" for s in seen)
    h.wait_until(reason, 60, "ErrImagePull then ImagePullBackOff", interval=0.1)
    msg = dict(seen)["ErrImagePull"]
    # the mirror has no such tag; containerd then tries docker.io itself, out of reach here
    h.check("failed to pull" in msg and "busybox:no-such-tag" in msg, "ErrImagePull message of the runtime: %r" % msg)
    h.eq(dict(seen)["ImagePullBackOff"], 'Back-off pulling image "busybox:no-such-tag"', "back-off message")
    h.eq(status("nope").get("phase"), "Pending", "phase of a pod whose image is missing")
    S["tpadmin"].delete(h.pods_path("acme", name="nope"))


def test_memory_limit_oomkilled():
    create(make_pod("oom", ["sh", "-c", "x=a; while :; do x=$x$x; done"], restart="Never",
                    limits={"memory": "32Mi", "cpu": "500m"}))
    h.wait_until(lambda: status("oom").get("phase") in ("Failed", "Succeeded"), 120, "pod oom ended")
    t = cstatus("oom")["state"]["terminated"]
    h.eq(t.get("reason"), "OOMKilled", "termination reason (exit code %s)" % t.get("exitCode"))
    h.eq(t.get("exitCode"), 137, "exit code of an OOM kill")
    S["tpadmin"].delete(h.pods_path("acme", name="oom"))


def test_crash_loop_backoff():
    """An exiting container restarts with Kubernetes' back-off (10 s, then 20 s...), keeping its
    last termination; its log is that of the newest attempt."""
    create(make_pod("crash", ["sh", "-c", "echo crashed; exit 2"]))

    def waiting(backoff):
        cs = cstatus("crash")
        w = cs.get("state", {}).get("waiting", {})
        last = cs.get("lastState", {}).get("terminated", {})
        return (w.get("reason") == "CrashLoopBackOff" and "back-off %ds" % backoff in w.get("message", "")
                and last.get("exitCode") == 2 and last.get("reason") == "Error") and cs
    cs = h.wait_until(lambda: waiting(10), 60, "CrashLoopBackOff after the first exit")
    h.eq(cs["restartCount"], 0, "restartCount before the first restart")
    cs = h.wait_until(lambda: waiting(20), 40, "restarted after 10 s, then back-off 20 s")
    h.eq(cs["restartCount"], 1, "restartCount after one restart")
    h.eq(status("crash")["phase"], "Running", "phase of a crash-looping pod (restartPolicy Always)")
    h.eq(kubectl_logs("crash"), "crashed\n", "kubectl logs of the newest attempt")
    S["tpadmin"].delete(h.pods_path("acme", name="crash"))


def test_invalid_image_name():
    create(make_pod("badname", ["sh"], image="Busy Box::1"))
    h.wait_until(lambda: cstatus("badname").get("state", {}).get("waiting", {}).get("reason") == "InvalidImageName",
                 30, "InvalidImageName")
    h.check("invalid reference format" in cstatus("badname")["state"]["waiting"].get("message", ""),
            "message %r" % cstatus("badname")["state"]["waiting"])
    S["tpadmin"].delete(h.pods_path("acme", name="badname"))


def test_host_network_pod_of_system():
    """hostNetwork (allowed for the system tenant only): the node's IP, no CNI address."""
    p = make_pod("hostnet", ["sh", "-c", "echo up; sleep 3600"])
    p["spec"]["hostNetwork"] = True
    r = S["tpadmin"].post(h.pods_path("system"), p)
    h.expect_status(r, 201, "create hostnet pod")
    h.wait_until(lambda: (S["tpadmin"].get(h.pods_path("system", name="hostnet")).json.get("status", {})
                          .get("phase")) == "Running", 60, "hostnet Running")
    st = S["tpadmin"].get(h.pods_path("system", name="hostnet")).json["status"]
    h.eq(st["podIP"], st["hostIP"], "podIP of a hostNetwork pod")
    S["tpadmin"].delete(h.pods_path("system", name="hostnet"))


def test_sandbox_lost_starts_pod_again():
    """The sandbox's pause process dies: the kubelet starts the pod again in a new sandbox."""
    create(make_pod("phoenix", ["sh", "-c", "echo risen; sleep 3600"]))
    h.wait_until(lambda: status("phoenix").get("phase") == "Running", 60, "pod phoenix Running")
    old = [p["id"] for p in probe("list-pods") if p.get("name") == "phoenix"]
    old_cid = cstatus("phoenix")["containerID"]
    h.eq(len(old), 1, "one sandbox of phoenix")
    sh('containerd_ctr "%s" -n k8s.io tasks kill -s SIGKILL %s' % (S["cdir"], old[0]))

    def again():
        ids = [p["id"] for p in probe("list-pods") if p.get("name") == "phoenix"]
        cs = cstatus("phoenix")
        return ids and ids != old and cs.get("containerID") != old_cid and "running" in cs.get("state", {}) and cs
    cs = h.wait_until(again, 60, "phoenix running again in a new sandbox")
    h.eq(cs["restartCount"], 1, "restartCount after the sandbox was replaced")
    h.check(ipaddress.ip_address(status("phoenix")["podIP"]) in S["subnet"], "pod IP of the new sandbox")
    S["tpadmin"].delete(h.pods_path("acme", name="phoenix"))


def test_kubelet_restart_adopts_running_pod():
    """A restarted kubelet adopts the pod it ran (same container, nothing started twice) and
    removes the sandbox of a pod deleted while it was down."""
    create(make_pod("orphan", ["sleep", "3600"]))
    h.wait_until(lambda: status("orphan").get("phase") == "Running", 60, "pod orphan Running")
    before = cstatus("hi")
    S["kl"].stop()
    r = S["tpadmin"].delete(h.pods_path("acme", name="orphan"), {"gracePeriodSeconds": 0})
    h.check(r.status in (200, 202), "force delete: %s" % r.status)
    h.wait_until(lambda: pod("orphan") is None, 10, "orphan gone from the TP")
    h.eq(len([p for p in probe("list-pods") if p.get("name") == "orphan"]), 1, "orphan's sandbox while down")
    S["kl"].start()
    h.wait_until(lambda: not [p for p in probe("list-pods") if p.get("name") == "orphan"], 60,
                 "the orphan's sandbox removed after the restart")
    h.wait_until(lambda: "cri: pod adopted" in S["kl"].log_text(), 60, "kubelet adopted the pod")
    time.sleep(3)
    after = cstatus("hi")
    h.eq(after["containerID"], before["containerID"], "same container after the kubelet restart")
    h.eq(after["restartCount"], 0, "restartCount after the kubelet restart")
    h.eq(status("hi")["phase"], "Running", "phase after the restart")
    sb = [p for p in probe("list-pods") if p.get("name") == "hi"]
    h.eq(len(sb), 1, "one sandbox for pod hi: %r" % sb)
    cs = probe("list-containers", sb[0]["id"])
    h.eq(len(cs), 1, "one container in the sandbox: %r" % cs)
    h.check("hi" in kubectl_logs("hi"), "logs after the restart")


def test_delete_removes_sandbox():
    sb = [p for p in probe("list-pods") if p.get("name") == "hi"]
    h.eq(len(sb), 1, "sandbox of hi before the delete")
    r = S["tpadmin"].delete(h.pods_path("acme", name="hi"))
    h.check(r.status in (200, 202), "delete: %s" % r.status)
    h.wait_until(lambda: pod("hi") is None, 60, "pod hi gone from the TP")
    h.wait_until(lambda: all(p["id"] != sb[0]["id"] for p in probe("list-pods")), 30, "sandbox removed")
    logdir = os.path.join(S["kl"].dir, "runtime", "pods", S["hi_uid"])
    h.check(not os.path.exists(logdir), "log directory %s removed" % logdir)


if __name__ == "__main__":
    h.run(globals())
