#!/usr/bin/python3
"""Security defaults and limits of ursa-kubelet's CRI runtime against a real containerd.

Set-up: test_kubelet_cri.py's (registry, containerd, RM + TP, the kubelet on CRI), with
--pod-max-pids 48, --system-reserved and --kube-reserved, and a crash back-off of 2 s.

Checks: every container runs under seccomp RuntimeDefault with no_new_privs and containerd's
default capabilities; Unconfined is refused for a tenant (403) and honoured for the system tenant;
runAsNonRoot against the image's user (CreateContainerConfigError for busybox, which runs as root;
running with runAsUser); a container forking without end hits its pod's pids limit while the node
forks on; a container over its memory limit is OOMKilled and restarted, `kubectl logs --previous`
shows the killed instance's output (an error before there is one); status.qosClass through kubectl;
node allocatable = capacity - reservations. Needs root.

Run alone: URSA_BUILD_DIR=build /usr/bin/python3 tests/integration/test_cri_limits.py"""

import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ursa_harness as h  # noqa: E402
import test_kubelet_cri as kc  # noqa: E402 - its set-up, helpers and state (kc.S)

S = kc.S
MAX_PIDS = 48
# containerd's default capability set (CHOWN DAC_OVERRIDE FOWNER FSETID KILL SETGID SETUID SETPCAP
# NET_BIND_SERVICE NET_RAW SYS_CHROOT MKNOD AUDIT_WRITE SETFCAP)
DEFAULT_CAPS = 0x00000000a80425fb


def setup():
    os.environ["URSA_KUBELET_BACKOFF_MS"] = "2000"
    kc.setup(["--pod-max-pids", str(MAX_PIDS), "--system-reserved", "cpu=500m,memory=1Gi",
              "--kube-reserved", "cpu=250m,memory=512Mi,pid=100"])


def teardown():
    kc.teardown()


def status_field(text, name):
    for line in text.splitlines():
        if line.startswith(name + ":"):
            return line.split(":", 1)[1].strip()
    raise AssertionError("no %s in %r" % (name, text))


def wait_logs(name, marker):
    def got():
        rc, out, err = h.kubectl(["logs", name], S["kc"])
        return out if rc == 0 and marker in out else None
    return h.wait_until(got, 60, "log of %s shows %r" % (name, marker))


def test_seccomp_no_new_privs_and_default_capabilities():
    show = ["sh", "-c", "grep -E '^(Seccomp|NoNewPrivs|CapEff):' /proc/self/status; echo done; sleep 3600"]
    kc.create(kc.make_pod("sec", show, limits={"cpu": "250m", "memory": "64Mi"}))
    out = wait_logs("sec", "done")
    h.eq(status_field(out, "Seccomp"), "2", "seccomp mode (filter) in %r" % out)
    h.eq(status_field(out, "NoNewPrivs"), "1", "no_new_privs in %r" % out)
    h.eq(int(status_field(out, "CapEff"), 16), DEFAULT_CAPS, "effective capabilities in %r" % out)
    # requests = limits in every container: Guaranteed, as kubectl shows
    rc, qos, err = h.kubectl(["get", "pod", "sec", "-o", "jsonpath={.status.qosClass}"], S["kc"])
    h.eq((rc, qos), (0, "Guaranteed"), "qosClass of pod sec (%s)" % err)
    # the kubelet's status updates keep it
    h.wait_until(lambda: kc.status("sec").get("phase") == "Running", 60, "sec Running")
    h.eq(kc.status("sec").get("qosClass"), "Guaranteed", "qosClass after the kubelet's status updates")
    S["tpadmin"].delete(h.pods_path("acme", name="sec"))


def test_seccomp_unconfined_system_only_and_escalation_opt_out():
    p = kc.make_pod("unconf", ["sh", "-c", "grep -E '^(Seccomp|NoNewPrivs):' /proc/self/status; echo done; "
                                          "sleep 3600"])
    p["spec"]["securityContext"] = {"seccompProfile": {"type": "Unconfined"}}
    r = S["tpadmin"].post(h.pods_path("acme"), p)
    h.expect_status(r, 403, "a tenant's pod with seccomp Unconfined")
    h.check("seccompProfile" in r.json.get("message", ""), "reason of the refusal: %r" % r.json.get("message"))
    p["spec"]["containers"][0]["securityContext"] = {"allowPrivilegeEscalation": True}
    r = S["tpadmin"].post(h.pods_path("system"), p)
    h.expect_status(r, 201, "the system tenant's pod with seccomp Unconfined")

    def logs():
        r = S["tpadmin"].get(h.pods_path("system", name="unconf") + "/log")
        return r.body.decode() if r.status == 200 and b"done" in r.body else None
    out = h.wait_until(logs, 60, "log of the system pod")
    h.eq(status_field(out, "Seccomp"), "0", "seccomp mode of an Unconfined pod in %r" % out)
    h.eq(status_field(out, "NoNewPrivs"), "0", "no_new_privs with allowPrivilegeEscalation in %r" % out)
    S["tpadmin"].delete(h.pods_path("system", name="unconf"))


def test_run_as_non_root():
    p = kc.make_pod("nonroot", ["sh", "-c", "echo uid=$(id -u); sleep 3600"])
    p["spec"]["securityContext"] = {"runAsNonRoot": True}
    kc.create(p)

    def waiting():
        w = kc.cstatus("nonroot").get("state", {}).get("waiting", {})
        return w if w.get("reason") == "CreateContainerConfigError" else None
    w = h.wait_until(waiting, 60, "CreateContainerConfigError for an image running as root")
    uid = kc.pod("nonroot")["metadata"]["uid"]
    h.eq(w.get("message"), 'container has runAsNonRoot and image will run as root (pod: "nonroot_default(%s)", '
         'container: c)' % uid, "message")
    h.eq(kc.status("nonroot").get("phase"), "Pending", "phase")
    S["tpadmin"].delete(h.pods_path("acme", name="nonroot"))
    p = kc.make_pod("nonroot2", ["sh", "-c", "echo uid=$(id -u); sleep 3600"])
    p["spec"]["securityContext"] = {"runAsNonRoot": True, "runAsUser": 1000}
    kc.create(p)
    h.check("uid=1000" in wait_logs("nonroot2", "uid="), "runs as 1000")
    S["tpadmin"].delete(h.pods_path("acme", name="nonroot2"))


def test_pids_limit_per_pod():
    script = ("(i=0; while [ $i -lt 500 ]; do sleep 600 & i=$((i+1)); echo $i > /tmp/n; done) 2>/tmp/err; "
              "read n < /tmp/n; read e < /tmp/err; echo \"made=$n err=$e\"; kill -9 -1; wait; "
              "echo after; sleep 3600")
    uid = kc.create(kc.make_pod("forker", ["sh", "-c", script]))
    out = wait_logs("forker", "after")
    line = [x for x in out.splitlines() if x.startswith("made=")][0]
    made = int(line.split()[0].split("=")[1])
    h.check(0 < made < MAX_PIDS, "children before the limit: %r" % line)
    h.check("fork" in line or "Resource temporarily unavailable" in line, "fork failure inside: %r" % line)
    with open("/sys/fs/cgroup/pids%s/pod%s/pids.max" % (S["cgroup"], uid)) as f:
        h.eq(f.read().strip(), str(MAX_PIDS), "pids.max of the pod's cgroup")
    # the node is fine: it forks, and the pod recovered once its children were gone
    h.eq(subprocess.run(["true"]).returncode, 0, "a fork on the node")
    h.eq(kc.status("forker").get("phase"), "Running", "phase of the pod")
    S["tpadmin"].delete(h.pods_path("acme", name="forker"))


def test_oom_killed_restarts_and_logs_previous():
    """Over its memory limit with restartPolicy Always: OOMKilled (137) as lastState, restarted;
    `kubectl logs --previous` shows the killed instance's output."""
    script = "echo run-$(cat /proc/sys/kernel/random/uuid); x=a; while :; do x=$x$x; done"
    kc.create(kc.make_pod("oomer", ["sh", "-c", script], limits={"memory": "32Mi", "cpu": "250m"}))
    first = wait_logs("oomer", "run-").strip()
    rc, out, err = h.kubectl(["logs", "oomer", "--previous"], S["kc"])
    if rc == 0:  # already restarted: its previous is the first run
        h.check(out.strip() and out.strip() != first, "previous differs from current: %r %r" % (out, first))
    else:
        h.check('previous terminated container "c" in pod "oomer" not found' in err, "error: %r" % err)

    def restarted():
        cs = kc.cstatus("oomer")
        last = cs.get("lastState", {}).get("terminated", {})
        return cs if cs.get("restartCount", 0) >= 1 and last.get("reason") == "OOMKilled" else None
    cs = h.wait_until(restarted, 120, "restarted after an OOM kill")
    h.eq(cs["lastState"]["terminated"]["exitCode"], 137, "exit code of the OOM kill")
    h.eq(kc.status("oomer").get("qosClass"), "Guaranteed", "qosClass")

    def prev_and_cur():
        rc1, prev, _ = h.kubectl(["logs", "oomer", "--previous"], S["kc"])
        rc2, cur, _ = h.kubectl(["logs", "oomer"], S["kc"])
        ok = rc1 == 0 and rc2 == 0 and prev.startswith("run-") and cur.startswith("run-") and prev != cur
        return (prev, cur) if ok else None
    prev, cur = h.wait_until(prev_and_cur, 60, "logs --previous and current of two instances")
    S["tpadmin"].delete(h.pods_path("acme", name="oomer"))


def test_logs_previous_never_restarted():
    kc.create(kc.make_pod("once", ["sh", "-c", "echo once; sleep 3600"]))
    wait_logs("once", "once")
    rc, out, err = h.kubectl(["logs", "once", "--previous"], S["kc"])
    h.check(rc != 0 and 'previous terminated container "c" in pod "once" not found' in err,
            "kubectl logs --previous of a pod never restarted: rc %d %r %r" % (rc, out, err))
    S["tpadmin"].delete(h.pods_path("acme", name="once"))


def test_node_allocatable_minus_reservations():
    st = S["admin"].get("/api/v1/nodes/" + kc.NODE).json["status"]
    h.eq((st["capacity"]["cpu"], st["capacity"]["memory"]), ("4", "8388608Ki"), "capacity")
    # 4 - 500m - 250m; 8Gi - 1Gi - 512Mi
    h.eq((st["allocatable"]["cpu"], st["allocatable"]["memory"]), ("3250m", "6815744Ki"), "allocatable")
    kcfg = S["rm"].admin_kubeconfig()
    rc, out, err = h.kubectl(["describe", "node", kc.NODE], kcfg)
    h.eq(rc, 0, "kubectl describe node: %s" % err)
    alloc = out.split("Allocatable:", 1)[1].split("System Info:", 1)[0]
    h.check("3250m" in alloc and "6656Mi" in alloc, "Allocatable in describe (6815744Ki = 6656Mi): %r" % alloc)


if __name__ == "__main__":
    h.run(globals())
