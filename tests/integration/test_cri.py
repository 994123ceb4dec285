#!/usr/bin/python3
"""The CRI client (ursa_cri, through tests/integration/cri_probe) against a real containerd.

The test starts its own containerd (config, root, state and socket under a temporary directory,
snapshotter overlayfs when an overlay mount works here, else native; CNI bridge + host-local with
a bridge name and subnet of its own), imports a small image it builds from busybox-static with
umoci (`ctr -n k8s.io images import`, no network), and drives RuntimeService and ImageService
calls: version, status, images, pod sandboxes with pod and node networking, containers, logs,
errors. Needs root (containerd, runc, mounts).

Run alone: URSA_BUILD_DIR=build /usr/bin/python3 tests/integration/test_cri.py"""

import ipaddress
import json
import os
import secrets
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import ursa_harness  # noqa: E402
from ursa_harness import (BUILD_DIR, HarnessError, check, eq, free_port, log_tail, make_tmpdir,  # noqa: E402
                          must_run, run, run_cmd, spawn, terminate, wait_until)

PROBE = os.path.join(BUILD_DIR, "tests", "cri_probe")
IMAGE = "ursa.local/test/busybox:1"
PAUSE = "ursa.local/test/pause:1"
S = {}


def probe(*args, ok=True, timeout=60):
    """Runs cri_probe on the test's socket; its JSON answer. ok: the call must (not) succeed."""
    return probe_at(S["endpoint"], *args, ok=ok, timeout=timeout)


def probe_at(endpoint, *args, ok=True, timeout=60):
    rc, out, err = run_cmd([PROBE, endpoint] + [str(a) for a in args], timeout=timeout)
    if rc not in (0, 1):
        raise HarnessError("cri_probe %s: rc %d: %s %s" % (" ".join(map(str, args)), rc, out, err))
    try:
        doc = json.loads(out)
    except ValueError:
        raise HarnessError("cri_probe %s printed no JSON: %r %r" % (" ".join(map(str, args)), out, err))
    if ok is True and rc != 0:
        raise AssertionError("cri_probe %s failed: %s" % (" ".join(map(str, args)), out.strip()))
    if ok is False and rc == 0:
        raise AssertionError("cri_probe %s succeeded, expected an error: %s" % (" ".join(map(str, args)), out))
    return doc


def ctr(*args, timeout=120):
    return must_run(["ctr", "--address", S["sock"], "-n", "k8s.io"] + list(args), timeout=timeout)


# ---------------------------------------------------------------------------------------------
# Set-up

def overlay_works(d):
    """Whether an overlay mount can be made here (the overlayfs snapshotter needs it)."""
    for sub in ("lower", "upper", "work", "merged"):
        os.makedirs(os.path.join(d, sub), exist_ok=True)
    rc, _, _ = run_cmd(["mount", "-t", "overlay", "overlay", "-o",
                        "lowerdir=%s/lower,upperdir=%s/upper,workdir=%s/work" % (d, d, d), d + "/merged"])
    if rc != 0:
        return False
    run_cmd(["umount", d + "/merged"])
    return True


def build_image(d):
    """An OCI layout with IMAGE (busybox, cmd sh) and PAUSE (sleeps, exits on TERM), as a tar."""
    layout = os.path.join(d, "oci")
    bundle = os.path.join(d, "bundle")
    must_run(["umoci", "init", "--layout", layout])
    must_run(["umoci", "new", "--image", layout + ":busybox"])
    must_run(["umoci", "unpack", "--image", layout + ":busybox", bundle])
    root = os.path.join(bundle, "rootfs")
    for sub in ("bin", "etc", "tmp", "proc", "sys", "dev"):
        os.makedirs(os.path.join(root, sub), exist_ok=True)
    must_run(["cp", "/bin/busybox", os.path.join(root, "bin", "busybox")])
    for applet in ("sh", "echo", "sleep", "cat", "hostname", "ls", "id"):
        os.symlink("busybox", os.path.join(root, "bin", applet))
    with open(os.path.join(root, "etc", "passwd"), "w") as f:
        f.write("root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/sh\n")
    must_run(["umoci", "repack", "--image", layout + ":busybox", bundle])
    must_run(["umoci", "config", "--image", layout + ":busybox", "--config.env", "PATH=/bin",
              "--config.cmd", "sh"])
    must_run(["umoci", "config", "--image", layout + ":busybox", "--tag", "pause",
              "--config.entrypoint", "/bin/sh", "--config.entrypoint=-c", "--config.entrypoint",
              'trap "exit 0" TERM INT; while :; do sleep 2147483647 & wait $!; done'])
    must_run(["umoci", "gc", "--layout", layout])
    tar = os.path.join(d, "images.tar")
    must_run(["tar", "-C", layout, "-cf", tar, "."])
    return tar


def write_config(d, snapshotter):
    S["bridge"] = "ucri%s" % secrets.token_hex(3)
    S["subnet"] = ipaddress.ip_network("10.231.%d.0/24" % (secrets.randbelow(250) + 2))
    os.makedirs(os.path.join(d, "cni"), exist_ok=True)
    with open(os.path.join(d, "cni", "10-ursa-test.conflist"), "w") as f:
        json.dump({"cniVersion": "0.4.0", "name": "ursa-cri-test", "plugins": [
            {"type": "bridge", "bridge": S["bridge"], "isGateway": True, "ipMasq": False,
             "ipam": {"type": "host-local", "ranges": [[{"subnet": str(S["subnet"])}]],
                      "dataDir": os.path.join(d, "ipam")}}]}, f)
    cfg = os.path.join(d, "config.toml")
    with open(cfg, "w") as f:
        f.write("""version = 2
root = "{d}/root"
state = "{d}/state"
[grpc]
  address = "{d}/containerd.sock"
[ttrpc]
  address = "{d}/containerd.sock.ttrpc"
[debug]
  address = "{d}/debug.sock"
[metrics]
  address = ""
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "{pause}"
  # this machine withholds CAP_SYS_RESOURCE: runc cannot set the sandbox's oom_score_adj -998
  restrict_oom_score_adj = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "{stream_port}"
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "{snap}"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "{d}/cni"
""".format(d=d, pause=PAUSE, snap=snapshotter, stream_port=free_port()))
    return cfg


def setup():
    for tool in ("containerd", "ctr", "runc", "umoci"):
        rc, _, _ = run_cmd(["which", tool])
        if rc != 0:
            raise HarnessError("%s not found (Debian packages containerd runc umoci busybox-static)" % tool)
    if os.geteuid() != 0:
        raise HarnessError("test_cri needs root (containerd and runc)")
    if not os.path.exists(PROBE):
        raise HarnessError("%s missing: build the cri_probe target" % PROBE)
    # containerd keeps unix socket paths short (108 bytes): a short temporary directory
    d = make_tmpdir("cri")
    S["dir"] = d
    S["snapshotter"] = "overlayfs" if overlay_works(os.path.join(d, "ovl")) else "native"
    tar = build_image(os.path.join(d, "img"))
    cfg = write_config(d, S["snapshotter"])
    S["sock"] = os.path.join(d, "containerd.sock")
    S["endpoint"] = "unix://" + S["sock"]
    S["log"] = os.path.join(d, "containerd.log")
    ursa_harness._logs.append(("containerd", S["log"]))
    S["proc"] = spawn(["containerd", "--config", cfg], S["log"])
    wait_until(lambda: os.path.exists(S["sock"]) and run_cmd(
        ["ctr", "--address", S["sock"], "version"], timeout=10)[0] == 0, 30, "containerd answers")
    out = ctr("images", "import", "--base-name", "ursa.local/test/busybox", tar)
    check("unpacking" in out, "ctr import output: %r" % out)
    ctr("images", "tag", "--force", "ursa.local/test/busybox:busybox", IMAGE)
    ctr("images", "tag", "--force", "ursa.local/test/busybox:pause", PAUSE)
    # the CRI plugin picks the CNI config up within a few seconds
    wait_until(lambda: probe("status")["conditions"]["NetworkReady"]["status"], 30, "CNI network ready")


def teardown():
    """Removes every sandbox through CRI, stops containerd (TERM), then whatever it left: shims,
    mounts under the temporary directory, the bridge."""
    d = S.get("dir")
    if not d:
        return
    if S.get("proc") is not None and S["proc"].poll() is None:
        try:
            for p in probe("list-pods"):
                probe("stop-pod", p["id"], ok=None)
                probe("rm-pod", p["id"], ok=None)
        except Exception as e:  # noqa: BLE001 - clean up the rest anyway
            print("teardown: removing sandboxes: %s" % e)
        terminate(S["proc"], 15)
    # shims of this containerd (they outlive it by design): found by our socket path
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open("/proc/%s/cmdline" % pid, "rb") as f:
                cmd = f.read().split(b"\0")
        except OSError:
            continue
        if cmd and cmd[0].endswith(b"containerd-shim-runc-v2") and S["sock"].encode() in cmd:
            try:
                os.kill(int(pid), 9)
            except OSError:
                pass
    with open("/proc/self/mounts") as f:
        mounts = [line.split()[1] for line in f]
    for m in sorted((m for m in mounts if m.startswith(d + "/")), key=len, reverse=True):
        run_cmd(["umount", "-l", m])
    if S.get("bridge"):
        run_cmd(["ip", "link", "del", S["bridge"]])


# ---------------------------------------------------------------------------------------------
# Tests

def test_version():
    v = probe("version")
    eq(v["runtime_name"], "containerd", "runtime name")
    eq(v["runtime_api_version"], "v1", "runtime API version")
    check(v["runtime_version"].startswith("1."), "runtime version %r" % v["runtime_version"])


def test_status():
    conds = probe("status")["conditions"]
    eq(conds["RuntimeReady"]["status"], True, "RuntimeReady")
    eq(conds["NetworkReady"]["status"], True, "NetworkReady (CNI config of the test)")


def test_list_images():
    imgs = probe("images")
    mine = [i for i in imgs if IMAGE in i["repo_tags"]]
    eq(len(mine), 1, "images tagged %s in %r" % (IMAGE, imgs))
    check(mine[0]["id"].startswith("sha256:"), "image id %r" % mine[0]["id"])
    check(mine[0]["size"] > 500000, "image size %d (busybox is ~1 MB)" % mine[0]["size"])
    check(any(PAUSE in i["repo_tags"] for i in imgs), "sandbox image %s listed" % PAUSE)


def test_image_status():
    st = probe("image-status", IMAGE)
    check(st["id"] and st["id"].startswith("sha256:"), "status of %s: %r" % (IMAGE, st))
    eq(probe("image-status", "ursa.local/test/absent:1")["id"], None, "status of an absent image")


def test_image_fs_info():
    fs = probe("imagefs")
    check(len(fs) >= 1, "image filesystems: %r" % fs)
    check(fs[0]["mountpoint"].startswith(S["dir"] + "/root/"), "mountpoint %r under our root" % fs[0]["mountpoint"])
    check(S["snapshotter"] in fs[0]["mountpoint"], "mountpoint %r is the %s snapshotter's"
          % (fs[0]["mountpoint"], S["snapshotter"]))
    # used_bytes comes from containerd's periodic snapshot sync (0 until its first pass)
    check(fs[0]["used_bytes"] >= 0 and abs(fs[0]["timestamp"] / 1e9 - time.time()) < 3600, "usage %r" % fs[0])


def test_errors_carry_code_and_message():
    e = probe("cstatus", "no-such-container", ok=False)
    eq(e["error"], "NotFound", "status of an unknown container")
    eq(e["grpc_code"], 5, "gRPC code")
    check("no-such-container" in e["message"], "message names the id: %r" % e["message"])
    e = probe("pod-status", "no-such-sandbox", ok=False)
    eq(e["error"], "NotFound", "status of an unknown sandbox")
    e = probe_at("unix://" + S["dir"] + "/absent.sock", "version", ok=False)
    eq(e["error"], "ServiceUnavailable", "no runtime at the socket")
    eq(e["grpc_code"], -1, "no gRPC status without a server")
    # a registry that refuses: the runtime's error comes back with its message
    e = probe("pull", "127.0.0.1:%d/none/absent:1" % free_port(), ok=False)
    check(e["grpc_code"] > 0 and e["message"], "pull from a closed port: %r" % e)


def wait_state(cid, state, timeout):
    wait_until(lambda: probe("cstatus", cid)["state"] == state, timeout, "container %s %s" % (cid[:12], state))
    return probe("cstatus", cid)


def read_log(path):
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return ""


def test_pod_with_cni_network():
    """RunPodSandbox + CreateContainer + StartContainer of sh -c 'echo hi; sleep 30' on the CNI
    bridge; status, limits, log; StopContainer, RemoveContainer, StopPodSandbox, RemovePodSandbox."""
    logdir = os.path.join(S["dir"], "logs", "p1")
    os.makedirs(logdir)
    uid = secrets.token_hex(8)
    pod = ("web-1", uid, "default", logdir, 0)
    sb = probe("run-pod", *pod)["id"]
    st = probe("pod-status", sb)
    eq(st["state"], "READY", "sandbox state")
    eq(st["name"], "web-1", "sandbox metadata name")
    check(st["ip"] and ipaddress.ip_address(st["ip"]) in S["subnet"], "pod IP %r in %s" % (st["ip"], S["subnet"]))
    check(any(p["id"] == sb for p in probe("list-pods")), "ListPodSandbox has the sandbox")

    cid = probe("create", sb, *pod, "app", IMAGE, "app/0.log", 64 << 20,
                "sh", "-c", "echo hi; echo greeting=$GREETING; hostname; sleep 30")["id"]
    eq(probe("cstatus", cid)["state"], "CREATED", "state after CreateContainer")
    probe("start", cid)
    cs = wait_state(cid, "RUNNING", 20)
    eq(cs["log_path"], os.path.join(logdir, "app", "0.log"), "log path")
    eq(cs["memory_limit"], 64 << 20, "memory limit echoed in the status")
    eq(cs["cpu_quota"], 50000, "cpu quota echoed in the status")
    check(cs["image_ref"].startswith("sha256:"), "image ref %r" % cs["image_ref"])
    wait_until(lambda: "stdout F hi\n" in read_log(cs["log_path"]), 10, "'hi' in the CRI log")
    log = read_log(cs["log_path"])
    check("greeting=hi" in log, "env from the container config in the log: %r" % log)
    check("stdout F web-1" in log, "pod hostname in the log: %r" % log)
    lst = probe("list-containers", sb)
    eq([(c["id"], c["state"]) for c in lst], [(cid, "RUNNING")], "ListContainers of the sandbox")

    start = time.monotonic()
    probe("stop", cid, 1)
    cs = probe("cstatus", cid)
    eq(cs["state"], "EXITED", "state after StopContainer")
    check(cs["exit_code"] in (137, 143), "exit code %d after stop" % cs["exit_code"])
    check(time.monotonic() - start < 15, "stop took %.1fs" % (time.monotonic() - start))
    probe("rm", cid)
    eq(probe("cstatus", cid, ok=False)["error"], "NotFound", "status of a removed container")
    probe("stop-pod", sb)
    eq(probe("pod-status", sb)["state"], "NOTREADY", "sandbox state after StopPodSandbox")
    probe("rm-pod", sb)
    check(all(p["id"] != sb for p in probe("list-pods")), "sandbox gone from ListPodSandbox")
    eq(probe("pod-status", sb, ok=False)["error"], "NotFound", "status of a removed sandbox")
    probe("rm-pod", sb)  # idempotent, as the CRI asks


def test_pod_with_node_network_and_exit_code():
    """A host-network sandbox (no CNI) with a container that exits on its own."""
    logdir = os.path.join(S["dir"], "logs", "p2")
    os.makedirs(logdir)
    pod = ("hostnet", secrets.token_hex(8), "kube-system", logdir, 1)
    sb = probe("run-pod", *pod)["id"]
    eq(probe("pod-status", sb)["ip"], "", "no pod IP on the node's network")
    cid = probe("create", sb, *pod, "once", IMAGE, "once.log", 0, "sh", "-c", "echo bye; exit 3")["id"]
    probe("start", cid)
    cs = wait_state(cid, "EXITED", 20)
    eq(cs["exit_code"], 3, "exit code")
    eq(cs["reason"], "Error", "reason of a non-zero exit")
    check("stdout F bye" in read_log(os.path.join(logdir, "once.log")), "log of the exited container")
    # RemovePodSandbox removes its containers too
    probe("stop-pod", sb)
    probe("rm-pod", sb)
    eq(probe("cstatus", cid, ok=False)["error"], "NotFound", "container removed with its sandbox")


def test_image_remove():
    probe("remove-image", "ursa.local/test/absent:1")  # idempotent, as the CRI asks
    ctr("images", "tag", "--force", IMAGE, "ursa.local/test/copy:1")
    check(probe("image-status", "ursa.local/test/copy:1")["id"], "copy tagged")
    eq(probe("image-status", "ursa.local/test/copy:1")["id"], probe("image-status", IMAGE)["id"], "same image")
    probe("remove-image", "ursa.local/test/copy:1")
    eq(probe("image-status", "ursa.local/test/copy:1")["id"], None, "copy removed")
    # the CRI removes the image, not the tag: every name of it goes (run last)
    eq(probe("image-status", IMAGE)["id"], None, "other tag of the removed image")
    check(all(IMAGE not in i["repo_tags"] for i in probe("images")), "image gone from ListImages")


if __name__ == "__main__":
    run(globals())
