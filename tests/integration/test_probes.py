#!/usr/bin/python3
"""Liveness, readiness and startup probes in ursa-kubelet with --runtime cri against a real containerd.

Set-up: test_kubelet_cri.py's (a CriNode, etcd + RM + TP, the kubelet on CRI), with a short crash
back-off. The pods start together and the checks follow them:
- readiness httpGet: busybox httpd on :8080 serves /www, /www/ready appears after a few seconds:
  the pod is Running but not Ready (container ready false, Ready and ContainersReady False,
  Warning Unhealthy "Readiness probe failed: HTTP probe failed with statuscode: 404", the
  Service's endpoints list it under notReadyAddresses), then Ready (addresses);
- readiness tcpSocket: a port that opens after a few seconds;
- liveness exec (`cat /tmp/healthy`, removed after a few seconds): the container is killed and
  restarted (restartCount 1) with Kubernetes' Unhealthy and Killing events;
- startup probe: while it fails the container is not started nor ready and its failing liveness
  probe does not run; once it succeeds the container is started and ready, never restarted;
- a Deployment of a pod with a readiness probe is Available only once the probe succeeds;
- the process runtime on a second node: an exec readiness probe in the container's environment,
  an httpGet liveness probe that restarts the container.
Needs root (containerd). Run alone: URSA_BUILD_DIR=build /usr/bin/python3 tests/integration/test_probes.py"""

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


PODS = ("web", "tcp", "live", "slow")  # and the Deployment "dep"
PROC_NODE = "proc-node-1"


def setup():
    os.environ["URSA_KUBELET_BACKOFF_MS"] = "1000"
    kc.setup()
    S["cm"] = h.TpControllerManager(S["tp"], extra_args=("--controllers", "replicaset,deployment,endpoints")).start()
    S["hist"] = {n: [] for n in PODS + ("dep",)}
    S["sampling"] = True
    threading.Thread(target=sample, daemon=True).start()


def teardown():
    kc.ursa_region.kill_containers()  # the process runtime's containers outlive their kubelet
    S["sampling"] = False
    if S.get("kl2"):
        S["kl2"].stop()
    if S.get("cm"):
        S["cm"].stop()
    kc.teardown()


def sample():
    """What each probed pod looked like, every 0.3 s: the pods change faster than the checks run
    one after the other."""
    while S.get("sampling"):
        for n in PODS:
            try:
                st = kc.status(n)
            except Exception:  # noqa: BLE001 - the region is going away
                return
            if st:
                S["hist"][n].append(st)
        try:
            r = S["tpadmin"].get("/apis/apps/v1/tenants/acme/namespaces/default/deployments/dep")
        except Exception:  # noqa: BLE001
            return
        if r.status == 200:
            S["hist"]["dep"].append(r.json.get("status", {}))
        time.sleep(0.3)


def seen(name, pred):
    return any(pred(st) for st in S["hist"][name])


def probe_pod(name, script, **probes):
    p = kc.make_pod(name, ["sh", "-c", script])
    p["metadata"]["labels"] = {"app": name}
    p["spec"]["containers"][0].update(probes)
    return p


def cond_of(st, ctype):
    for c in st.get("conditions") or []:
        if c.get("type") == ctype:
            return c.get("status")
    return None


def cs_of(st):
    return (st.get("containerStatuses") or [{}])[0]


def cond(name, ctype):
    return cond_of(kc.status(name), ctype)


def events(name, reason=None):
    r = S["tpadmin"].get(EVENTS)
    h.expect_status(r, 200, "list events")
    return [e for e in r.json["items"] if e["involvedObject"].get("name") == name and
            (reason is None or e.get("reason") == reason)]


def messages(name, reason):
    return [e["message"] for e in events(name, reason)]


def not_ready_st(st):
    cs = cs_of(st)
    return (st.get("phase") == "Running" and "running" in cs.get("state", {}) and cs.get("ready") is False and
            cond_of(st, "Ready") == "False" and cond_of(st, "ContainersReady") == "False")


def running_not_ready(name):
    return seen(name, not_ready_st)


def ready(name):
    cs = kc.cstatus(name)
    return cs.get("ready") is True and cond(name, "Ready") == "True" and cond(name, "ContainersReady") == "True"


def test_start_probed_pods():
    kc.create(probe_pod("web", "mkdir -p /www; (sleep 12; echo ok > /www/ready) & exec httpd -f -p 8080 -h /www",
                        readinessProbe={"httpGet": {"path": "/ready", "port": "http"}, "periodSeconds": 1},
                        ports=[{"name": "http", "containerPort": 8080}]))
    kc.create(probe_pod("tcp", "sleep 8; mkdir -p /w; exec httpd -f -p 9000 -h /w",
                        readinessProbe={"tcpSocket": {"port": 9000}, "periodSeconds": 1}))
    kc.create(probe_pod("live", "touch /tmp/healthy; sleep 8; rm /tmp/healthy; sleep 3600",
                        livenessProbe={"exec": {"command": ["cat", "/tmp/healthy"]}, "periodSeconds": 1,
                                       "failureThreshold": 2}))
    kc.create(probe_pod("slow", "sleep 10; touch /tmp/alive /tmp/started; sleep 3600",
                        startupProbe={"exec": {"command": ["cat", "/tmp/started"]}, "periodSeconds": 1,
                                      "failureThreshold": 60},
                        livenessProbe={"exec": {"command": ["cat", "/tmp/alive"]}, "periodSeconds": 1,
                                       "failureThreshold": 1}))
    r = S["tpadmin"].post("/api/v1/tenants/acme/namespaces/default/services", {
        "apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"},
        "spec": {"selector": {"app": "web"}, "ports": [{"port": 80, "targetPort": 8080}]}})
    h.expect_status(r, 201, "create service web")
    tmpl = probe_pod("dep", "mkdir -p /www; (sleep 12; echo ok > /www/ready) & exec httpd -f -p 8080 -h /www",
                     readinessProbe={"httpGet": {"path": "/ready", "port": 8080}, "periodSeconds": 1})
    r = S["tpadmin"].post("/apis/apps/v1/tenants/acme/namespaces/default/deployments", {
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "dep"},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "dep"}},
                 "template": {"metadata": {"labels": {"app": "dep"}}, "spec": tmpl["spec"]}}})
    h.expect_status(r, 201, "create deployment dep")


def test_readiness_http_gates_ready_and_endpoints():
    h.wait_until(lambda: running_not_ready("web"), 90, "pod web seen Running but not Ready")
    h.wait_until(lambda: any(m == "Readiness probe failed: HTTP probe failed with statuscode: 404"
                             for m in messages("web", "Unhealthy")), 30, "Unhealthy event of the 404")
    e = events("web", "Unhealthy")[0]
    h.eq(e["type"], "Warning", "type of the Unhealthy event")
    h.eq(e["involvedObject"].get("fieldPath"), "spec.containers{c}", "fieldPath of the Unhealthy event")
    h.check(not ready("web") or len(messages("web", "Unhealthy")) >= 3,
            "not ready while the probe fails: %s" % kc.status("web"))

    def endpoints(key):
        r = S["tpadmin"].get("/api/v1/tenants/acme/namespaces/default/endpoints/web")
        if r.status != 200:
            return None
        subsets = r.json.get("subsets") or []
        return [a["ip"] for s in subsets for a in s.get(key) or []]
    ip = kc.status("web").get("podIP")
    if not ready("web"):
        h.wait_until(lambda: endpoints("notReadyAddresses") == [ip] and not endpoints("addresses"), 30,
                     "the unready pod under notReadyAddresses of the Service's endpoints")
    h.wait_until(lambda: ready("web"), 60, "pod web Ready once /ready answers")
    h.eq(kc.cstatus("web")["restartCount"], 0, "readiness failures do not restart")
    h.wait_until(lambda: endpoints("addresses") == [ip], 30, "the ready pod under addresses of the endpoints")
    # kubectl's READY column follows
    rc, out, err = h.kubectl(["get", "pod", "web", "--no-headers"], S["kc"])
    h.eq(rc, 0, "kubectl get pod web: %s" % err)
    h.eq(out.split()[1], "1/1", "READY column: %r" % out)


def test_deployment_available_with_readiness():
    """The Deployment's pod runs before its readiness probe succeeds: the Deployment has its
    replica but none available (Available not True) until then."""
    def available(st):
        return [c.get("status") for c in st.get("conditions") or [] if c.get("type") == "Available"]
    h.wait_until(lambda: seen("dep", lambda st: st.get("replicas") == 1 and st.get("updatedReplicas") == 1 and
                              not st.get("availableReplicas") and available(st) != ["True"]), 60,
                 "deployment dep seen with its replica not available")
    h.wait_until(lambda: seen("dep", lambda st: st.get("availableReplicas") == 1 and st.get("readyReplicas") == 1
                              and available(st) == ["True"]), 90, "deployment dep Available once its pod is ready")
    first_ready = next(i for i, st in enumerate(S["hist"]["dep"]) if st.get("readyReplicas") == 1)
    h.check(first_ready > 0 and any(not st.get("readyReplicas") for st in S["hist"]["dep"][:first_ready]),
            "readyReplicas 0 before 1: %s" % S["hist"]["dep"][:first_ready + 1])


def test_readiness_tcp():
    h.wait_until(lambda: running_not_ready("tcp"), 60, "pod tcp Running but not Ready")
    h.wait_until(lambda: any("dial tcp" in m and ":9000: connect: connection refused" in m
                             for m in messages("tcp", "Unhealthy")), 30, "Unhealthy event of the closed port")
    h.wait_until(lambda: ready("tcp"), 60, "pod tcp Ready once the port is open")


def test_liveness_exec_restarts_container():
    h.wait_until(lambda: seen("live", lambda st: "running" in cs_of(st).get("state", {})), 60, "pod live running")
    first = [cs_of(st).get("containerID") for st in S["hist"]["live"] if "running" in cs_of(st).get("state", {})][0]
    cs = h.wait_until(lambda: (lambda c: c if c.get("restartCount") == 1 and "running" in c.get("state", {})
                               else None)(kc.cstatus("live")), 60, "container restarted once after its liveness failed")
    h.check(cs["containerID"] != first, "a new container instance: %s" % cs["containerID"])
    h.check("terminated" in cs.get("lastState", {}), "lastState of the killed instance: %s" % cs)
    unhealthy = messages("live", "Unhealthy")
    h.check("Liveness probe failed: cat: can't open '/tmp/healthy': No such file or directory" in unhealthy,
            "Unhealthy events: %s" % unhealthy)
    h.eq(events("live", "Unhealthy")[0]["type"], "Warning", "Unhealthy type")
    killing = events("live", "Killing")
    h.check(any(e["message"] == "Container c failed liveness probe, will be restarted" and e["type"] == "Normal"
                for e in killing), "Killing events: %s" % [(e["type"], e["message"]) for e in killing])
    h.eq(kc.status("live")["phase"], "Running", "phase after the restart")


def test_startup_probe_holds_liveness_off():
    def pending(st):
        cs = cs_of(st)
        return ("running" in cs.get("state", {}) and cs.get("started") is False and cs.get("ready") is False and
                cond_of(st, "Ready") == "False")
    h.wait_until(lambda: seen("slow", pending), 60, "pod slow seen running, not started, not ready")
    h.wait_until(lambda: any(m.startswith("Startup probe failed: cat: can't open '/tmp/started'")
                             for m in messages("slow", "Unhealthy")), 30, "Startup probe failures")
    h.wait_until(lambda: kc.cstatus("slow").get("started") is True and ready("slow"), 60,
                 "pod slow started and Ready after its startup probe")
    time.sleep(3)  # the liveness probe runs now, and succeeds
    cs = kc.cstatus("slow")
    h.eq(cs["restartCount"], 0, "no restart: liveness was held off until the startup probe succeeded")
    live = [m for m in messages("slow", "Unhealthy") if m.startswith("Liveness")]
    h.eq(live, [], "liveness probe failures of pod slow")
    h.eq(events("slow", "Killing"), [], "Killing events of pod slow")


def test_delete_probed_pods():
    S["sampling"] = False
    for name in PODS:
        r = S["tpadmin"].delete(h.pods_path("acme", name=name))
        h.check(r.status in (200, 202), "delete %s: %s" % (name, r.status))
    for name in PODS:
        h.wait_until(lambda: kc.pod(name) is None, 60, "pod %s gone" % name)
    h.check(S["kl"].alive(), "the kubelet still runs")


def test_process_runtime_probes():
    """The process runtime (containers as host processes): an exec readiness probe runs in the
    container's environment (its env names the file it checks), and a failing httpGet liveness
    probe restarts the container."""
    node_kc = S["rm"].kubeconfig("system", "system:node:" + PROC_NODE, ("system:nodes",))
    S["kl2"] = kc.ursa_region.Kubelet(node_kc, ["--node-name", PROC_NODE, "--cpu", "2", "--memory", "4Gi",
                                                "--runtime", "process"], label="kubelet-proc").start()
    h.wait_until(lambda: kc.ursa_region.node_ready(S["admin"], PROC_NODE), 60, "node %s Ready" % PROC_NODE)
    flag = os.path.join(h.make_tmpdir("probe-flag"), "ready")
    p = probe_pod("pready", "sleep 3; touch \"$READY_FILE\"; exec sleep 3600",
                  env=[{"name": "READY_FILE", "value": flag}],
                  readinessProbe={"exec": {"command": ["sh", "-c", "test -f \"$READY_FILE\""]}, "periodSeconds": 1})
    p["spec"]["nodeName"] = PROC_NODE
    kc.create(p)
    port = h.free_port()
    p = probe_pod("plive", "exec sleep 3600",
                  livenessProbe={"httpGet": {"path": "/healthz", "port": port}, "periodSeconds": 1,
                                 "failureThreshold": 2})
    p["spec"]["nodeName"] = PROC_NODE
    kc.create(p)
    h.wait_until(lambda: "running" in kc.cstatus("pready").get("state", {}) and kc.cstatus("pready").get("ready") is False,
                 30, "pod pready running, not ready")
    h.wait_until(lambda: ready("pready"), 30, "pod pready Ready once its file exists")
    h.check(os.path.exists(flag), "the flag file the probe found")
    cs = h.wait_until(lambda: (lambda c: c if c.get("restartCount", 0) >= 1 else None)(kc.cstatus("plive")), 60,
                      "pod plive restarted after its liveness probe failed")
    unhealthy = messages("plive", "Unhealthy")
    h.check(any(m.startswith('Liveness probe failed: Get "http://127.0.0.1:%d/healthz"' % port) for m in unhealthy),
            "Unhealthy events of plive: %s" % unhealthy)
    h.check("Container c failed liveness probe, will be restarted" in messages("plive", "Killing"),
            "Killing events of plive: %s" % messages("plive", "Killing"))
    for name in ("pready", "plive"):
        S["tpadmin"].delete(h.pods_path("acme", name=name))
    for name in ("pready", "plive"):
        h.wait_until(lambda: kc.pod(name) is None, 60, "pod %s gone" % name)


if __name__ == "__main__":
    h.run(globals())
