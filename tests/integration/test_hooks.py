#!/usr/bin/python3
"""Container lifecycle hooks (lifecycle.postStart, lifecycle.preStop) in ursa-kubelet, on the CRI
runtime against a real containerd and on the process runtime.

Set-up: test_kubelet_cri.py's (a CriNode, etcd + RM + TP, the kubelet on CRI) with a short crash
back-off, a second kubelet with --runtime process, and an HTTP server of the test's own that
records the requests preStop httpGet hooks make.
- postStart exec: writes a file the main command waits for and prints; the container is shown
  Running only once the hook has ended;
- a failing postStart: Warning FailedPostStartHook ("PostStartHook failed"), Killing
  "FailedPostStartHook", and the container restarts (restartPolicy Always);
- preStop exec on delete: `echo bye > /proc/1/fd/1` shows in the container's log on the node, and
  the delete takes at least the hook's sleep and less than the grace period;
- preStop httpGet on delete: our server gets the GET (User-Agent kube-lifecycle/...); one to a
  closed port gives FailedPreStopHook and the delete goes on;
- a liveness kill runs the preStop first (its output in the killed instance's log);
- the process runtime: postStart exec in the container's environment seen by the main command, a
  failing postStart restarts the container, preStop exec and httpGet (to the pod's IP, the node's
  here) on delete within the grace period; a kubelet restart does not run a postStart again.
Needs root (containerd). Run alone: URSA_BUILD_DIR=build /usr/bin/python3 tests/integration/test_hooks.py"""

import glob
import http.server
import os
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ursa_harness as h  # noqa: E402
import test_kubelet_cri as kc  # noqa: E402 - its set-up, helpers and state (kc.S)

S = kc.S
EVENTS = "/api/v1/tenants/acme/namespaces/default/events"
PROC_NODE = "proc-node-1"


class Recorder(http.server.BaseHTTPRequestHandler):
    def do_GET(self):  # noqa: N802 - the stdlib's name
        S["requests"].append((self.path, self.headers.get("User-Agent", ""), time.time()))
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


def setup():
    os.environ["URSA_KUBELET_BACKOFF_MS"] = "1000"
    kc.setup()
    S["requests"] = []
    S["http"] = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Recorder)
    threading.Thread(target=S["http"].serve_forever, daemon=True).start()
    node_kc = S["rm"].kubeconfig("system", "system:node:" + PROC_NODE, ("system:nodes",))
    S["kl2"] = kc.ursa_region.Kubelet(node_kc, ["--node-name", PROC_NODE, "--cpu", "2", "--memory", "4Gi",
                                                "--runtime", "process"], label="kubelet-proc").start()
    h.wait_until(lambda: kc.ursa_region.node_ready(S["admin"], PROC_NODE), 60, "node %s Ready" % PROC_NODE)


def teardown():
    kc.ursa_region.kill_containers()  # the process runtime's containers outlive their kubelet
    if S.get("http"):
        S["http"].shutdown()
    if S.get("kl2"):
        S["kl2"].stop()
    kc.teardown()


def hook_pod(name, script, node=kc.NODE, grace=2, **container):
    p = kc.make_pod(name, ["sh", "-c", script])
    p["spec"]["nodeName"] = node
    p["spec"]["terminationGracePeriodSeconds"] = grace
    p["spec"]["containers"][0].update(container)
    return p


def events(name, reason=None):
    r = S["tpadmin"].get(EVENTS)
    h.expect_status(r, 200, "list events")
    return [e for e in r.json["items"] if e["involvedObject"].get("name") == name and
            (reason is None or e.get("reason") == reason)]


def running(name):
    cs = kc.cstatus(name)
    return "running" in cs.get("state", {})


def log_files(uid, kubelet):
    return sorted(glob.glob(os.path.join(kubelet.dir, "**", uid, "**", "*.log"), recursive=True))


def logs_text(uid, kubelet):
    text = ""
    for f in log_files(uid, kubelet):
        try:
            with open(f, errors="replace") as fh:
                text += fh.read()
        except OSError:
            pass
    return text


def delete_and_time(name):
    t0 = time.time()
    r = S["tpadmin"].delete(h.pods_path("acme", name=name))
    h.check(r.status in (200, 202), "delete %s: %s" % (name, r.status))
    return t0


def wait_gone(name, t0, timeout=60):
    h.wait_until(lambda: kc.pod(name) is None, timeout, "pod %s gone" % name)
    return time.time() - t0


# ---- CRI ----

def test_cri_post_start_exec_runs_before_running():
    uid = kc.create(hook_pod("pstart", "while [ ! -f /tmp/hook ]; do sleep 0.1; done; echo main saw $(cat /tmp/hook); "
                             "exec sleep 3600",
                             lifecycle={"postStart": {"exec": {"command": ["sh", "-c",
                                                                           "sleep 3; date +%s > /tmp/hook"]}}}))
    seen_running = h.wait_until(lambda: time.time() if running("pstart") else None, 120, "pod pstart running")
    out = h.wait_until(lambda: (lambda t: t if "main saw" in t else None)(logs_text(uid, S["kl"])), 30,
                       "the main command's line in the log")
    hook_end = int(out.split("main saw")[1].split()[0])
    h.check(seen_running >= hook_end, "shown running (%.1f) only after the postStart hook ended (%d)" %
            (seen_running, hook_end))
    cs = kc.cstatus("pstart")
    h.eq(cs.get("ready"), True, "ready after the hook")
    h.eq(cs.get("restartCount"), 0, "restartCount")
    h.eq(events("pstart", "FailedPostStartHook"), [], "FailedPostStartHook events of pstart")


def test_cri_post_start_failure_kills_and_restarts():
    kc.create(hook_pod("pfail", "exec sleep 3600",
                       lifecycle={"postStart": {"exec": {"command": ["sh", "-c", "echo nope; exit 3"]}}}))
    h.wait_until(lambda: events("pfail", "FailedPostStartHook"), 120, "FailedPostStartHook event")
    e = events("pfail", "FailedPostStartHook")[0]
    h.eq(e["type"], "Warning", "type of FailedPostStartHook")
    h.eq(e["message"], "PostStartHook failed", "message of FailedPostStartHook")
    h.eq(e["involvedObject"].get("fieldPath"), "spec.containers{c}", "fieldPath")
    h.check(any(k["message"] == "FailedPostStartHook" for k in events("pfail", "Killing")),
            "Killing events: %s" % [k["message"] for k in events("pfail", "Killing")])
    h.wait_until(lambda: kc.cstatus("pfail").get("restartCount", 0) >= 1, 60, "pfail restarted")
    h.check(kc.cstatus("pfail").get("ready") is not True, "never ready: %s" % kc.cstatus("pfail"))
    wait_gone("pfail", delete_and_time("pfail"))


def test_cri_pre_stop_exec_on_delete():
    uid = kc.create(hook_pod("pstop", "trap 'echo got TERM; exit 0' TERM; echo started; while true; do sleep 0.2; done",
                             grace=20,
                             lifecycle={"preStop": {"exec": {"command": ["sh", "-c",
                                                                         "echo bye > /proc/1/fd/1; sleep 4"]}}}))
    h.wait_until(lambda: running("pstop"), 120, "pod pstop running")
    h.wait_until(lambda: "started" in logs_text(uid, S["kl"]), 30, "pstop's first line")
    t0 = delete_and_time("pstop")
    seen = {"text": ""}

    def bye():
        seen["text"] = logs_text(uid, S["kl"]) or seen["text"]
        return "bye" in seen["text"]
    h.wait_until(bye, 30, "the preStop's line in the container's log")
    took = wait_gone("pstop", t0)
    h.check(4 <= took < 20, "delete took %.1f s: at least the hook's 4 s, less than the 20 s grace" % took)
    h.eq(events("pstop", "FailedPreStopHook"), [], "FailedPreStopHook events of pstop")


def test_cri_pre_stop_http_on_delete():
    port = S["http"].server_address[1]
    kc.create(hook_pod("phttp", "exec sleep 3600", grace=10,
                       lifecycle={"preStop": {"httpGet": {"host": "127.0.0.1", "port": port, "path": "/bye-phttp"}}}))
    kc.create(hook_pod("pclosed", "exec sleep 3600", grace=10,
                       lifecycle={"preStop": {"httpGet": {"host": "127.0.0.1", "port": h.free_port(),
                                                          "path": "/nobody"}}}))
    h.wait_until(lambda: running("phttp") and running("pclosed"), 120, "pods phttp and pclosed running")
    t0 = delete_and_time("phttp")
    t1 = delete_and_time("pclosed")
    wait_gone("phttp", t0)
    wait_gone("pclosed", t1)
    got = [r for r in S["requests"] if r[0] == "/bye-phttp"]
    h.eq(len(got), 1, "preStop GETs to our server: %s" % S["requests"])
    h.check(got[0][1].startswith("kube-lifecycle/"), "User-Agent %r" % got[0][1])
    h.check(got[0][2] >= t0, "the GET came after the delete")
    h.wait_until(lambda: events("pclosed", "FailedPreStopHook"), 30, "FailedPreStopHook event of pclosed")
    e = events("pclosed", "FailedPreStopHook")[0]
    h.eq((e["type"], e["message"]), ("Warning", "PreStopHook failed"), "FailedPreStopHook event")
    h.eq(events("phttp", "FailedPreStopHook"), [], "FailedPreStopHook events of phttp")


def test_cri_liveness_kill_runs_pre_stop():
    uid = kc.create(hook_pod("plive", "touch /tmp/healthy; sleep 5; rm /tmp/healthy; exec sleep 3600",
                             livenessProbe={"exec": {"command": ["cat", "/tmp/healthy"]}, "periodSeconds": 1,
                                            "failureThreshold": 1},
                             lifecycle={"preStop": {"exec": {"command": ["sh", "-c",
                                                                         "echo prestop-ran > /proc/1/fd/1"]}}}))
    h.wait_until(lambda: kc.cstatus("plive").get("restartCount", 0) >= 1, 120, "plive restarted by its liveness probe")
    h.check("prestop-ran" in logs_text(uid, S["kl"]), "the preStop ran before the kill: %s" %
            log_files(uid, S["kl"]))
    wait_gone("plive", delete_and_time("plive"))
    h.check(S["kl"].alive(), "the kubelet still runs")


# ---- process runtime ----

def test_process_runtime_hooks():
    d = h.make_tmpdir("hooks-proc")
    started, stopped = os.path.join(d, "started"), os.path.join(d, "stopped")
    port = S["http"].server_address[1]
    kc.create(hook_pod("qstart", "while [ ! -f \"$F\" ]; do sleep 0.1; done; cp \"$F\" \"$F.seen\"; exec sleep 3600",
                       node=PROC_NODE, env=[{"name": "F", "value": started}],
                       lifecycle={"postStart": {"exec": {"command": ["sh", "-c", "sleep 2; echo hooked >> \"$F\""]}}}))
    kc.create(hook_pod("qfail", "exec sleep 3600", node=PROC_NODE,
                       lifecycle={"postStart": {"exec": {"command": ["false"]}}}))
    kc.create(hook_pod("qstop", "trap 'exit 0' TERM; while :; do sleep 0.2; done", node=PROC_NODE, grace=15,
                       env=[{"name": "F", "value": stopped}],
                       lifecycle={"preStop": {"exec": {"command": ["sh", "-c", "echo bye >> \"$F\"; sleep 3"]}}}))
    kc.create(hook_pod("qhttp", "exec sleep 3600", node=PROC_NODE, grace=10,
                       lifecycle={"preStop": {"httpGet": {"port": port, "path": "/bye-qhttp"}}}))
    h.wait_until(lambda: os.path.exists(started + ".seen"), 60, "qstart's main command saw the postStart's file")
    with open(started + ".seen") as f:
        h.eq(f.read().strip(), "hooked", "the file the postStart wrote")
    h.wait_until(lambda: running("qstart") and kc.cstatus("qstart").get("ready") is True, 30, "qstart running, ready")
    # a kubelet restart adopts the running container: its postStart does not run again
    cid = kc.cstatus("qstart")["containerID"]
    S["kl2"].stop()
    S["kl2"].start()
    h.wait_until(lambda: kc.ursa_region.node_ready(S["admin"], PROC_NODE), 60, "node %s Ready again" % PROC_NODE)
    time.sleep(4)
    with open(started) as f:
        h.eq(f.read(), "hooked\n", "the postStart ran once, not again after the kubelet restart")
    cs = kc.cstatus("qstart")
    h.eq((cs.get("containerID"), "running" in cs.get("state", {}), cs.get("ready")), (cid, True, True),
         "qstart after the kubelet restart")
    h.wait_until(lambda: events("qfail", "FailedPostStartHook"), 60, "FailedPostStartHook of qfail")
    h.wait_until(lambda: kc.cstatus("qfail").get("restartCount", 0) >= 1, 60, "qfail restarted")
    h.wait_until(lambda: running("qstop") and running("qhttp"), 60, "qstop and qhttp running")
    t0 = delete_and_time("qstop")
    t1 = delete_and_time("qhttp")
    took = wait_gone("qstop", t0)
    h.check(3 <= took < 15, "qstop's delete took %.1f s: at least the hook's 3 s, less than the 15 s grace" % took)
    with open(stopped) as f:
        h.eq(f.read().strip(), "bye", "what the preStop wrote")
    wait_gone("qhttp", t1)
    h.eq(len([r for r in S["requests"] if r[0] == "/bye-qhttp"]), 1, "qhttp's preStop GET: %s" % S["requests"])
    for name in ("qstart", "qfail"):
        wait_gone(name, delete_and_time(name))
    h.check(S["kl2"].alive(), "the process kubelet still runs")


if __name__ == "__main__":
    h.run(globals())
