#!/usr/bin/python3
"""The node-side set-up of issue 18: deploy/lib/images.sh and deploy/lib/containerd.sh, for real.

1. images_build makes busybox:1.36, pause:3.9 and httpd:1 from Debian's busybox-static with umoci
   (no network), once: a second call reuses the cache. Their configs and layers are checked.
2. registry_start runs Debian's docker-registry on 127.0.0.1:<free port>; registry_push copies the
   images to it with skopeo, busybox and httpd also as :latest (the same manifests).
3. containerd_write_config + containerd_start run containerd 1.6 as a plain process, with root,
   state, socket and runc root under a temporary directory and the CRI plugin loaded.
4. The CRI ImageService pulls docker.io/library/busybox:1.36 through the docker.io mirror (a raw
   gRPC call over the unix socket with curl, as the kubelet will make it) and gets our image;
   the sandbox image name resolves too; `ctr --hosts-dir` pulls with the same hosts.toml files.
5. `ctr run` of busybox prints `hi` and sees only its own processes in /proc; pause exits 0 on
   SIGTERM; httpd serves index.html; containers survive a containerd restart.
6. containerd_teardown and registry_stop leave no process and no mount behind.

A missing binary fails the test (it does not skip). Images are cached in $URSA_IMAGE_CACHE
(default ~/.cache/ursa/images); with them cached the whole file runs in well under 60 s.
"""

import json
import os
import shutil
import signal
import struct
import subprocess
import sys
import tarfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import ursa_harness as h  # noqa: E402

LIB = os.path.join(h.SOURCE_DIR, "deploy", "lib", "containerd.sh")
CACHE = os.environ.get("URSA_IMAGE_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "ursa", "images")
BINARIES = ["containerd", "ctr", "runc", "containerd-shim-runc-v2", "docker-registry", "umoci", "skopeo",
            "curl", "pgrep", "/bin/busybox", "/usr/lib/cni/bridge", "/usr/lib/cni/host-local"]

S = {}


def sh(script, timeout=120, check=True):
    """Runs script in bash with deploy/lib/containerd.sh (and images.sh, common.sh) sourced."""
    rc, out, err = h.run_cmd(["bash", "-c", 'set -euo pipefail; source "$0"; ' + script, LIB], timeout)
    if check and rc != 0:
        raise AssertionError("shell failed (rc %d): %s\nstdout: %s\nstderr: %s"
                             % (rc, script, out[-3000:], err[-3000:]))
    return out


def ctr(*args, timeout=60, check=True, ns="k8s.io"):
    cmd = ["ctr", "--address", S["sock"], "-n", ns] + list(args)
    rc, out, err = h.run_cmd(cmd, timeout)
    if check and rc != 0:
        raise AssertionError("ctr failed (rc %d): %s\n%s%s" % (rc, " ".join(cmd), out[-2000:], err[-2000:]))
    return rc, out, err


def run_flags():
    return ["--snapshotter", S["snap"], "--runc-root", S["cdir"] + "/runc", "--fifo-dir", S["cdir"] + "/state/fifo"]


# --- CRI over the unix socket: gRPC framing and the two protobuf messages used here ----------

def pb_bytes(field, data):
    n, varint = len(data), b""
    while True:
        b, n = n & 0x7F, n >> 7
        varint += bytes([b | (0x80 if n else 0)])
        if not n:
            break
    return bytes([(field << 3) | 2]) + varint + data


def cri_call(method, msg):
    """One unary CRI call with curl's HTTP/2 over the socket: (grpc-status, grpc-message, reply)."""
    req = os.path.join(S["tmp"], "cri-req.bin")
    resp = os.path.join(S["tmp"], "cri-resp.bin")
    hdr = os.path.join(S["tmp"], "cri-hdr.txt")
    with open(req, "wb") as f:
        f.write(b"\x00" + struct.pack(">I", len(msg)) + msg)
    for p in (resp, hdr):
        if os.path.exists(p):
            os.unlink(p)
    rc, out, err = h.run_cmd(["curl", "-sS", "--http2-prior-knowledge", "--unix-socket", S["sock"],
                              "-H", "content-type: application/grpc", "-H", "te: trailers",
                              "--data-binary", "@" + req, "-D", hdr, "-o", resp,
                              "http://localhost/" + method], 60)
    h.check(rc == 0, "curl %s failed: %s" % (method, err))
    status, message = None, ""
    with open(hdr) as f:
        for line in f:
            k, _, v = line.partition(":")
            if k.strip().lower() == "grpc-status":
                status = int(v.strip())
            elif k.strip().lower() == "grpc-message":
                message = v.strip()
    with open(resp, "rb") as f:
        body = f.read()
    return status, message, body[5:]


def cri_pull(image):
    """PullImage(PullImageRequest{image: ImageSpec{image}}): (status, message, image_ref)."""
    status, message, body = cri_call("runtime.v1.ImageService/PullImage", pb_bytes(1, pb_bytes(1, image.encode())))
    ref = ""
    if status == 0:
        h.check(body[:1] == b"\x0a", "PullImageResponse field 1 expected, got %r" % body[:8])
        ref = body[2:2 + body[1]].decode()
    return status, message, ref


# --- the OCI layout -------------------------------------------------------------------------

def blob(digest):
    return os.path.join(S["layout"], "blobs", "sha256", digest.split(":", 1)[1])


def image(tag):
    with open(os.path.join(S["layout"], "index.json")) as f:
        index = json.load(f)
    for m in index["manifests"]:
        if m.get("annotations", {}).get("org.opencontainers.image.ref.name") == tag:
            with open(blob(m["digest"])) as f:
                manifest = json.load(f)
            with open(blob(manifest["config"]["digest"])) as f:
                config = json.load(f)
            return manifest, config
    raise AssertionError("tag %s not in %s" % (tag, S["layout"]))


def leftovers():
    """Processes whose command line names the temporary dir, and mounts under it."""
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            with open("/proc/%s/cmdline" % pid, "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode("utf-8", "replace")
        except OSError:
            continue
        if S["tmp"] in cmd:
            found.append("process %s: %s" % (pid, cmd))
    with open("/proc/self/mountinfo") as f:
        for line in f:
            mp = line.split()[4]
            if mp.startswith(S["tmp"]):
                found.append("mount " + mp)
    return found


def setup():
    missing = [b for b in BINARIES if not (os.access(b, os.X_OK) if b.startswith("/") else shutil.which(b))]
    if missing:
        raise h.HarnessError("missing binaries: %s (Debian packages: containerd runc containernetworking-plugins "
                             "docker-registry umoci skopeo busybox-static)" % " ".join(missing))
    h.check(os.getuid() == 0, "containerd and runc need root here")
    S["tmp"] = h.make_tmpdir("node")
    S["cdir"] = os.path.join(S["tmp"], "c")
    S["rdir"] = os.path.join(S["tmp"], "registry")
    S["sock"] = os.path.join(S["cdir"], "containerd.sock")
    S["port"] = h.free_port()
    h._logs.append(("containerd", os.path.join(S["cdir"], "containerd.log")))
    h._logs.append(("registry", os.path.join(S["rdir"], "registry.log")))
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, _on_signal)


def teardown():
    if S.get("torn_down") or "tmp" not in S:
        return
    S["torn_down"] = True
    sh('containerd_teardown "%s"; registry_stop "%s"' % (S["cdir"], S["rdir"]), check=False)


def _on_signal(signum, frame):
    teardown()
    h._on_signal(signum, frame)


def test_images_build():
    start = time.monotonic()
    out = sh('images_build "%s" >&2; printf "%%s\\n" "$URSA_IMAGE_LAYOUT"' % CACHE, timeout=300)
    S["layout"] = out.strip().splitlines()[-1]
    first = time.monotonic() - start
    complete = os.path.join(os.path.dirname(S["layout"]), "complete")
    h.check(os.path.isfile(complete), "no %s" % complete)
    with open(complete) as f:
        print("  images: %s (%.1f s this run; %s)" % (S["layout"], first, f.read().strip()))
    mtime = os.stat(complete).st_mtime
    start = time.monotonic()
    again = sh('images_build "%s" >&2; printf "%%s\\n" "$URSA_IMAGE_LAYOUT"' % CACHE).strip().splitlines()[-1]
    h.eq(again, S["layout"], "layout of the second build")
    h.check(time.monotonic() - start < 3, "cached images_build took %.1f s" % (time.monotonic() - start))
    h.eq(os.stat(complete).st_mtime, mtime, "cache marker mtime (no rebuild)")

    bm, bc = image("busybox-1.36")
    pm, pc = image("pause-3.9")
    hm, hc = image("httpd-1")
    for c in (bc, pc, hc):
        h.eq((c["architecture"], c["os"], c["config"].get("User")), ("amd64", "linux", "root"), "platform and user")
    h.eq(bc["config"].get("Cmd"), ["sh"], "busybox cmd")
    h.check(not bc["config"].get("Entrypoint"), "busybox has an entrypoint: %s" % bc["config"].get("Entrypoint"))
    h.eq(pc["config"]["Entrypoint"][:2], ["/bin/sh", "-c"], "pause entrypoint")
    h.check("trap" in pc["config"]["Entrypoint"][2] and "TERM" in pc["config"]["Entrypoint"][2], "pause traps TERM")
    h.check(not pc["config"].get("Cmd"), "pause has a cmd")
    h.eq(hc["config"].get("Cmd"), ["httpd", "-f", "-p", "80", "-h", "/www"], "httpd cmd")
    h.check("80/tcp" in hc["config"].get("ExposedPorts", {}), "httpd exposes 80/tcp")
    base = [l["digest"] for l in bm["layers"]]
    h.eq(len(base), 1, "busybox layers")
    h.eq([l["digest"] for l in pm["layers"]], base, "pause layers (the busybox layer)")
    h.eq([l["digest"] for l in hm["layers"]][:1], base, "httpd's first layer")
    h.eq(len(hm["layers"]), 2, "httpd layers")

    with tarfile.open(blob(base[0])) as t:
        members = {m.name.lstrip("./"): m for m in t.getmembers()}
        h.check(members["bin/sh"].issym() and members["bin/sh"].linkname == "/bin/busybox", "bin/sh -> /bin/busybox")
        h.check(members["usr/sbin/httpd"].issym(), "httpd applet link")
        h.eq(members["bin/busybox"].size, os.path.getsize("/bin/busybox"), "busybox size")
        h.eq(members["tmp"].mode & 0o7777, 0o1777, "/tmp mode")
        passwd = t.extractfile(members["etc/passwd"]).read().decode()
        group = t.extractfile(members["etc/group"]).read().decode()
    h.check("root:x:0:0:" in passwd and "nobody:x:65534:65534:" in passwd, "passwd: %s" % passwd)
    h.check("root:x:0:" in group and "nobody:x:65534:" in group, "group: %s" % group)
    with tarfile.open(blob(hm["layers"][1]["digest"])) as t:
        names = [m.name.lstrip("./") for m in t.getmembers() if m.isfile()]
        h.eq(names, ["www/index.html"], "httpd's own layer")
    sizes = {tag: sum(l["size"] for l in m["layers"]) for tag, m in
             (("busybox", bm), ("pause", pm), ("httpd", hm))}
    print("  compressed layer bytes: %s" % sizes)


def test_registry_push():
    start = time.monotonic()
    sh('registry_start "%s" %d; registry_push "%s" %d' % (S["rdir"], S["port"], S["layout"], S["port"]))
    print("  registry started and images pushed in %.1f s" % (time.monotonic() - start))
    base = "http://127.0.0.1:%d/v2/" % S["port"]
    cat = json.loads(h.must_run(["curl", "-sf", base + "_catalog"]))
    h.eq(sorted(cat["repositories"]), ["library/busybox", "library/httpd", "library/pause"], "catalog")
    for repo, tags_want in (("busybox", ["1.36", "latest"]), ("pause", ["3.9"]), ("httpd", ["1", "latest"])):
        tags = json.loads(h.must_run(["curl", "-sf", base + "library/%s/tags/list" % repo]))
        h.eq(sorted(tags["tags"]), tags_want, "%s tags" % repo)
    # The aliases are the same images: one manifest digest under both tags.
    for repo, tag in (("busybox", "1.36"), ("httpd", "1")):
        digests = []
        for t in (tag, "latest"):
            hdrs = h.must_run(["curl", "-sfI", "-H", "Accept: application/vnd.oci.image.manifest.v1+json",
                               base + "library/%s/manifests/%s" % (repo, t)])
            d = [l.split(":", 1)[1].strip() for l in hdrs.splitlines()
                 if l.lower().startswith("docker-content-digest:")]
            h.check(len(d) == 1 and d[0].startswith("sha256:"), "%s:%s digest header: %r" % (repo, t, hdrs))
            digests.append(d[0])
        h.eq(digests[1], digests[0], "%s:latest is %s:%s" % (repo, repo, tag))


def test_containerd_start():
    S["snap"] = sh('containerd_detect_snapshotter "%s"' % S["tmp"]).strip()
    h.check(S["snap"] in ("overlayfs", "native"), "snapshotter %r" % S["snap"])
    print("  snapshotter here: %s" % S["snap"])
    start = time.monotonic()
    sh('containerd_write_config "%s" %d; containerd_start "%s"' % (S["cdir"], S["port"], S["cdir"]))
    print("  containerd ready in %.1f s" % (time.monotonic() - start))
    with open(os.path.join(S["cdir"], "config.toml")) as f:
        conf = f.read()
    for system_path in ("/run/containerd", "/var/lib/containerd", "/etc/cni", "/opt/cni"):
        h.check(system_path not in conf, "config mentions %s" % system_path)
    h.check('sandbox_image = "127.0.0.1:%d/library/pause:3.9"' % S["port"] in conf, "sandbox_image")
    h.check(os.path.exists(S["sock"]), "no socket %s" % S["sock"])
    _, out, _ = ctr("plugins", "ls")
    rows = [line.split() for line in out.splitlines()]
    h.check(["io.containerd.grpc.v1", "cri", "linux/amd64", "ok"] in rows, "cri plugin not ok:\n" + out)
    h.check(any(r[:2] == ["io.containerd.snapshotter.v1", S["snap"]] and r[-1] == "ok" for r in rows),
            "snapshotter %s not ok:\n%s" % (S["snap"], out))
    h.check(not any(r[1:2] == ["devmapper"] or r[1:2] == ["zfs"] for r in rows), "disabled plugins listed")


def test_cri_pull_through_mirror():
    _, bc = image("busybox-1.36")
    start = time.monotonic()
    status, message, ref = cri_pull("docker.io/library/busybox:1.36")
    h.eq((status, message), (0, ""), "PullImage busybox:1.36 status")
    print("  CRI PullImage busybox:1.36 in %.1f s: %s" % (time.monotonic() - start, ref))
    # The image id is the config's digest: the image came from our layout through the registry.
    with open(os.path.join(S["layout"], "index.json")) as f:
        index = json.load(f)
    bm = [m for m in index["manifests"] if m["annotations"]["org.opencontainers.image.ref.name"] == "busybox-1.36"][0]
    with open(blob(bm["digest"])) as f:
        h.eq(ref, json.load(f)["config"]["digest"], "image ref")
    status, message, ref = cri_pull("127.0.0.1:%d/library/pause:3.9" % S["port"])
    h.eq(status, 0, "PullImage of the sandbox image (%s)" % message)
    status, message, _ = cri_pull("docker.io/library/httpd:1")
    h.eq(status, 0, "PullImage httpd:1 (%s)" % message)
    status, message, _ = cri_pull("127.0.0.1:%d/library/nosuch:1" % S["port"])
    h.check(status not in (None, 0) and "not found" in message, "missing image: %s %s" % (status, message))
    _, out, _ = ctr("images", "ls", "-q")
    for name in ("docker.io/library/busybox:1.36", "docker.io/library/httpd:1",
                 "127.0.0.1:%d/library/pause:3.9" % S["port"]):
        h.check(name in out.split(), "%s not in the k8s.io images:\n%s" % (name, out))


def test_ctr_pull_hosts_dir():
    ctr("images", "pull", "--snapshotter", S["snap"], "--hosts-dir", os.path.join(S["cdir"], "certs.d"),
        "docker.io/library/busybox:1.36", ns="ursa-test")
    _, out, _ = ctr("images", "ls", "-q", ns="ursa-test")
    h.check("docker.io/library/busybox:1.36" in out.split(), "ctr --hosts-dir pull:\n" + out)
    ctr("images", "rm", "--sync", "docker.io/library/busybox:1.36", ns="ursa-test")


def test_ctr_run_busybox():
    _, out, _ = ctr("run", "--rm", *run_flags(), "docker.io/library/busybox:1.36", "t-echo", "echo", "hi")
    h.eq(out, "hi\n", "echo hi")
    script = 'echo "self $$"; for p in /proc/[0-9]*; do echo "pid ${p#/proc/}"; done; id -un'
    _, out, _ = ctr("run", "--rm", *run_flags(), "docker.io/library/busybox:1.36", "t-proc", "sh", "-c", script)
    lines = out.split()
    pids = sorted(int(lines[i + 1]) for i in range(len(lines) - 1) if lines[i] == "pid")
    h.check("self 1" in out, "sh is not PID 1 in its namespace:\n" + out)
    h.check(pids and pids[0] == 1 and len(pids) <= 3, "/proc shows other processes: %s" % pids)
    host = [p for p in os.listdir("/proc") if p.isdigit()]
    h.check(len(host) > 10, "host has %d processes?" % len(host))
    h.check("root" in lines, "user: %s" % out)


def test_pause_and_httpd():
    pause = "127.0.0.1:%d/library/pause:3.9" % S["port"]
    ctr("run", "-d", *run_flags(), pause, "t-pause")
    ctr("run", "-d", *run_flags(), "docker.io/library/httpd:1", "t-httpd")
    time.sleep(0.3)
    _, out, _ = ctr("tasks", "ls")
    h.check(any(l.split()[0] == "t-pause" and l.split()[2] == "RUNNING" for l in out.splitlines()[1:]),
            "pause not running:\n" + out)
    _, out, _ = ctr("tasks", "exec", "--fifo-dir", S["cdir"] + "/state/fifo", "--exec-id", "wget", "t-httpd",
                    "wget", "-qO-", "http://127.0.0.1:80/")
    h.check("Hello from Ursa" in out, "httpd answered:\n" + out)
    start = time.monotonic()
    ctr("tasks", "kill", "-s", "SIGTERM", "t-pause")

    def stopped():
        _, o, _ = ctr("tasks", "ls")
        return any(l.split()[0] == "t-pause" and l.split()[2] == "STOPPED" for l in o.splitlines()[1:])
    h.wait_until(stopped, 5, "pause to exit on SIGTERM")
    print("  pause exited %.2f s after SIGTERM" % (time.monotonic() - start))
    _, out, _ = ctr("tasks", "delete", "t-pause")
    h.check("exit status 0" in out or out.strip() == "" or "0" in out.split(), "pause exit: %r" % out)
    ctr("containers", "rm", "t-pause")


def test_containerd_restart_keeps_containers():
    _, out, _ = ctr("tasks", "ls")
    pid = [int(l.split()[1]) for l in out.splitlines()[1:] if l.split()[0] == "t-httpd"][0]
    sh('containerd_stop "%s"' % S["cdir"])
    h.check(os.path.exists("/proc/%d" % pid), "httpd died with containerd")
    h.check(sh('containerd_leftovers "%s"' % S["cdir"]).strip() != "", "no shim left while containerd is down")
    sh('containerd_start "%s"' % S["cdir"])
    _, out, _ = ctr("tasks", "ls")
    h.check(any(l.split()[:3] == ["t-httpd", str(pid), "RUNNING"] for l in out.splitlines()[1:]),
            "httpd not adopted after restart:\n" + out)
    S["httpd_pid"] = pid


def test_teardown_leaves_nothing():
    h.check(leftovers(), "nothing running before teardown?")
    start = time.monotonic()
    teardown()
    print("  teardown in %.1f s" % (time.monotonic() - start))
    h.eq(sh('containerd_leftovers "%s"' % S["cdir"]).strip(), "", "containerd_leftovers")
    h.eq(leftovers(), [], "processes and mounts of %s" % S["tmp"])
    h.check(not os.path.exists("/proc/%d" % S["httpd_pid"]), "httpd process %d still alive" % S["httpd_pid"])


if __name__ == "__main__":
    h.run(globals(), per_test_timeout=300)
