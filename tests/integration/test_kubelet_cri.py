#!/usr/bin/python3
"""ursa-kubelet with --runtime cri against a real containerd: pods become CRI pod sandboxes.

Set-up: tests/lib/ursa_cri.py's registry and CriNode (images from deploy/lib/images.sh in a local
registry, containerd from deploy/lib/containerd.sh with docker.io mirrored to that registry and a
CNI network of the test's own), etcd + resource manager + tenant partition, and the kubelet with
`--runtime cri --cri-endpoint unix://...`.

Checks: a busybox pod runs (Running, its log through `kubectl logs`, its own PID namespace, a
pod IP from CNI that is not the node's); a missing image gives ErrImagePull then
ImagePullBackOff; a container over its memory limit ends OOMKilled; a kubelet restart adopts the
running pod (same container, restartCount unchanged); deleting the pod removes its sandbox.
Needs root (containerd, runc, mounts). Images are cached in $URSA_IMAGE_CACHE
(default <build dir>/test-images).

Run alone: URSA_BUILD_DIR=build /usr/bin/python3 tests/integration/test_kubelet_cri.py"""

import base64
import ipaddress
import json
import os
import re
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import ursa_harness as h  # noqa: E402
import ursa_cri as cri  # noqa: E402
import ursa_region  # noqa: E402

LIB = cri.LIB
CACHE = cri.IMAGE_CACHE
PROBE = cri.PROBE
NODE = "cri-node-1"
S = {}
sh = cri.sh  # sh(script, timeout=300, check=True): bash with deploy/lib/containerd.sh sourced


def probe(*args, ok=True):
    """One CRI call to the node's containerd (tests/cri_probe)."""
    return cri.probe(S["endpoint"], *args, ok=ok)


def setup(kubelet_extra=()):
    """kubelet_extra: more kubelet flags (test_cri_limits.py reuses this set-up). S gets the node
    (a ursa_cri.CriNode) and, as before, its cdir, rdir, port, endpoint, bridge (prefix), subnet
    (the node's pod range) and cgroup (the kubelet's --cgroup-parent)."""
    cri.require()
    tmp = h.make_tmpdir("kcri")
    S["tmp"] = tmp
    node = cri.CriNode(NODE, cgroup_prefix="ursa-kcri").start()
    S.update(node=node, cdir=node.dir, rdir=node.reg.dir, port=node.reg.port, endpoint=node.endpoint,
             bridge=node.bridge, subnet=node.subnet, cgroup=node.cgroup)

    S.update(ursa_region.start(tenants=("acme",)))
    node_kc = S["rm"].kubeconfig("system", "system:node:" + NODE, ("system:nodes",))
    S["kl"] = ursa_region.Kubelet(node_kc, ["--node-name", NODE, "--cpu", "4", "--memory", "8Gi"] +
                                  node.kubelet_args() + list(kubelet_extra), label="kubelet-cri").start()
    S["kc"] = S["tp"].kubeconfig("acme", "alice")
    h.wait_until(lambda: node_ready(), 60, "node %s Ready" % NODE)


def teardown():
    """The kubelet, then the node: containers, containerd, shims, mounts, bridges, the pods' cgroups
    (ursa_cri does the same at exit however the test ends; the registry goes then too)."""
    if S.get("kl"):
        S["kl"].stop()
    if S.get("node"):
        S["node"].teardown()


def node_ready():
    return ursa_region.node_ready(S["admin"], NODE)


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
    # the region's registry has no such tag (and containerd tries nothing after it)
    h.check("failed to pull" in msg and "busybox:no-such-tag: not found" in msg,
            "ErrImagePull message of the runtime, with the registry's answer: %r" % msg)
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


def test_kubelet_events():
    """What the kubelet did is told as Kubernetes' kubelet tells it: Events about the pod (source
    kubelet on the node, the container's fieldPath) that `kubectl describe pod` shows."""
    def events():
        r = S["tpadmin"].get("/api/v1/tenants/acme/namespaces/default/events")
        h.expect_status(r, 200, "list events")
        return [e for e in r.json["items"] if (e.get("source") or {}).get("component") == "kubelet"]

    def of(pod, reason):
        return [e for e in events() if e["involvedObject"].get("name") == pod and e.get("reason") == reason]

    h.wait_until(lambda: of("hi", "Started"), 30, "Started event of pod hi")
    for reason, msg in (("Pulled", None), ("Created", "Created container: c"), ("Started", "Started container c")):
        evs = of("hi", reason)
        h.check(evs, "no %s event for pod hi: %s" % (reason, [(e["reason"], e["message"]) for e in events()]))
        e = evs[0]
        if msg:
            h.eq(e["message"], msg, "%s message" % reason)
        else:
            h.check(e["message"].startswith(('Successfully pulled image "busybox:1.36"',
                                             'Container image "busybox:1.36" already present')), e["message"])
        h.eq(e["type"], "Normal", "%s type" % reason)
        h.eq(e["source"], {"component": "kubelet", "host": NODE}, "%s source" % reason)
        h.eq(e["involvedObject"].get("fieldPath"), "spec.containers{c}", "%s fieldPath" % reason)
        h.eq(e["involvedObject"].get("uid"), S["hi_uid"], "%s involvedObject uid" % reason)
        h.eq(e["involvedObject"].get("kind"), "Pod", "%s involvedObject kind" % reason)
    failed = [e["message"] for e in of("nope", "Failed")]
    h.check(any(m.startswith('Failed to pull image "busybox:no-such-tag": ') for m in failed) and
            "Error: ErrImagePull" in failed, "Failed events of pod nope: %r" % failed)
    h.check(all(e["type"] == "Warning" for e in of("nope", "Failed")), "Failed events are warnings")
    h.check(any(e["message"] == 'Back-off pulling image "busybox:no-such-tag"' for e in of("nope", "BackOff")),
            "BackOff event of pod nope")
    h.check(any(e["message"].startswith("Back-off restarting failed container c in pod crash_default(")
                for e in of("crash", "BackOff")), "BackOff event of pod crash")
    rc, out, err = h.kubectl(["describe", "pod", "hi"], S["kc"])
    h.eq(rc, 0, "kubectl describe pod hi: %s" % err)
    h.check(re.search(r"Normal\s+Started\s+\S+\s+kubelet\s+Started container c", out),
            "describe shows the kubelet's Started event:\n%s" % out[-1500:])


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


def test_stop_in_grace_period_does_not_hold_up_other_pods():
    """A container that ignores SIGTERM, its pod deleted with a long grace period: the kubelet stops
    it in the background (the pod stays, Terminating, until SIGKILL at the end of the grace period)
    while another pod of the node starts meanwhile."""
    p = make_pod("stubborn", ["sh", "-c", "trap '' TERM; echo up; while true; do sleep 1; done"])
    p["spec"]["terminationGracePeriodSeconds"] = 60
    create(p)
    h.wait_until(lambda: status("stubborn").get("phase") == "Running", 60, "pod stubborn Running")
    grace = 15
    t0 = time.time()
    r = S["tpadmin"].delete(h.pods_path("acme", name="stubborn"), {"gracePeriodSeconds": grace})
    h.check(r.status in (200, 202), "delete stubborn: %s" % r.status)

    def killing():
        evs = S["tpadmin"].get("/api/v1/tenants/acme/namespaces/default/events").json.get("items") or []
        return [e for e in evs if e["involvedObject"].get("name") == "stubborn" and e.get("reason") == "Killing"]
    h.wait_until(killing, 10, "the kubelet stopping stubborn (Killing event)")
    create(make_pod("quick", ["sleep", "3600"]))
    h.wait_until(lambda: status("quick").get("phase") == "Running", grace - 3, "pod quick Running meanwhile")
    ran = time.time() - t0
    h.check(pod("stubborn") is not None, "stubborn still Terminating when quick runs (%.1f s after the delete)" % ran)
    sb = [x for x in probe("list-pods") if x.get("name") == "stubborn"]
    h.eq(len(sb), 1, "stubborn's sandbox while it terminates")
    h.eq([c.get("state") for c in probe("list-containers", sb[0]["id"])], ["RUNNING"],
         "stubborn's container still running within its grace period")
    h.wait_until(lambda: pod("stubborn") is None, grace + 30, "stubborn deleted after its grace period")
    gone = time.time() - t0
    h.check(gone >= grace - 1, "stubborn deleted %.1f s after the delete, not before its grace period (%d s)"
            % (gone, grace))
    h.wait_until(lambda: not [x for x in probe("list-pods") if x.get("name") == "stubborn"], 30,
                 "stubborn's sandbox removed")
    r = S["tpadmin"].delete(h.pods_path("acme", name="quick"), {"gracePeriodSeconds": 0})
    h.check(r.status in (200, 202), "delete quick: %s" % r.status)


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
