#!/usr/bin/python3
"""What people do with pods every day, through the whole stack: stock kubectl -> HAProxy ->
gateway -> tenant partition -> kubelet -> containerd, in a local-up region of its own
(tests/lib/ursa_local.py: temporary state, moved ports, its own pod network). Needs root.

1. A Deployment whose readiness probe asks httpd for /ready.txt is not Available until
   `kubectl exec` writes that file into its container; then it is.
2. A failing liveness probe restarts the container (RESTARTS counts up).
3. A pod prints a ConfigMap key from its environment and from a ConfigMap volume; a change of the
   ConfigMap reaches the mounted file of the running pod.
4. `kubectl exec` with kubectl 1.30 and 1.33 (WebSocket v5.channel.k8s.io): output, stderr,
   the exit code, a missing command (126/127), stdin to EOF (`exec -i ... cat`); kubectl 1.29
   (SPDY only) is refused with a message naming kubectl 1.30.
5. `kubectl cp` a file into a container and back.
6. `kubectl exec -it ... sh` driven through tmux: a command's output and the terminal's size,
   before and after the window is resized.
7. `kubectl attach -i` to a container reading its stdin.
8. `kubectl port-forward` (1.33: SPDY tunnelled in WebSocket; 1.30: SPDY): curl through it gets
   httpd's page; a forwarded port nothing listens on fails that connection and not the session.
9. `kubectl top pods` and (admin) `kubectl top nodes`.
10. A user of another tenant asking for exec on the first tenant's pod: 403 at the gateway and
    again at the tenant partition.

Run alone: URSA_BUILD_DIR=build /usr/bin/python3 tests/e2e/test_pod_features.py
The steps build on each other and run in file order."""

import json
import os
import shutil
import socket
import ssl
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import ursa_harness as h  # noqa: E402
import ursa_local as L  # noqa: E402

KUBECTL_DIR = os.path.dirname(os.path.realpath(shutil.which("kubectl") or "/usr/bin/kubectl"))
S = {}

WEB = """apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: web
        image: httpd:1
        readinessProbe:
          httpGet: {path: /ready.txt, port: 80}
          periodSeconds: 1
"""

LIVENESS = """apiVersion: v1
kind: Pod
metadata:
  name: fragile
spec:
  containers:
  - name: c
    image: busybox:1.36
    command: ["sh", "-c", "trap 'exit 0' TERM; sleep 3600 & wait"]
    livenessProbe:
      exec: {command: ["cat", "/tmp/alive"]}
      periodSeconds: 1
      failureThreshold: 2
"""

GREET = """apiVersion: v1
kind: Pod
metadata:
  name: greet
spec:
  containers:
  - name: c
    image: busybox:1.36
    command: ["sh", "-c", "echo env=$WORD file=$(cat /etc/greet/word); trap 'exit 0' TERM; sleep 3600 & wait"]
    env:
    - name: WORD
      valueFrom: {configMapKeyRef: {name: greeting, key: word}}
    volumeMounts:
    - {name: greeting, mountPath: /etc/greet}
  volumes:
  - name: greeting
    configMap: {name: greeting}
"""

ATTACH = """apiVersion: v1
kind: Pod
metadata:
  name: echoer
spec:
  containers:
  - name: c
    image: busybox:1.36
    stdin: true
    stdinOnce: true
    command: ["sh", "-c", "while read l; do echo got:$l; done; echo stdin-closed"]
  restartPolicy: Never
"""


def kubectl(args, kubeconfig=None, version=None, timeout=60, input_text=None):
    """kubectl (the dispatcher on PATH, or kubectl.1.NN) -> (rc, stdout, stderr)."""
    exe = os.path.join(KUBECTL_DIR, "kubectl.%s" % version) if version else "kubectl"
    args = [exe, "--kubeconfig", kubeconfig or S["alice"], "--cache-dir", os.path.join(S["tmp"], "kcache")] + list(args)
    return h.run_cmd(args, timeout, input_text)


def ok(args, **kw):
    rc, out, err = kubectl(args, **kw)
    h.check(rc == 0, "kubectl %s: rc %d\n%s%s" % (" ".join(args), rc, out, err))
    return out


def apply(text, **kw):
    return ok(["apply", "-f", "-"], input_text=text, **kw)


def pod_of(label):
    return ok(["get", "pods", "-l", label, "-o", "jsonpath={.items[0].metadata.name}"]).strip()


def wait_running(name, timeout=120):
    ok(["wait", "--for=jsonpath={.status.phase}=Running", "pod/" + name, "--timeout=%ds" % timeout],
       timeout=timeout + 10)


def setup():
    h.check(os.geteuid() == 0, "this test needs root (containerd, mounts, bridges)")
    for tool in ("tmux", "curl"):
        h.check(shutil.which(tool), "%s is needed (deploy/lib/common.sh installs it)" % tool)
    for v in ("1.29", "1.30", "1.33"):
        h.check(os.access(os.path.join(KUBECTL_DIR, "kubectl." + v), os.X_OK), "kubectl.%s next to kubectl" % v)
    S["tmp"] = h.make_tmpdir("podfeat")
    R = S["region"] = L.LocalRegion(S["tmp"])
    R.up()
    admin = R.admin_kubeconfig()
    for t in ("acme", "zeta"):
        ok(["create", "-f", "-"], kubeconfig=admin, input_text="apiVersion: v1\nkind: Tenant\nmetadata:\n  name: %s\n" % t)
    S["alice"] = R.kubeconfig("acme", "alice")
    S["bob"] = R.kubeconfig("zeta", "bob")
    h.wait_until(lambda: kubectl(["get", "serviceaccount", "default"])[0] == 0, 30, "acme's default service account")


def teardown():
    if "region" in S:
        S["region"].down()


def test_readiness_gates_availability():
    apply(WEB)
    h.wait_until(lambda: kubectl(["get", "pods", "-l", "app=web", "-o", "jsonpath={.items[0].status.phase}"])[1]
                 == "Running", 120, "web's pod Running")
    time.sleep(4)
    avail = ok(["get", "deployment", "web", "-o", "jsonpath={.status.availableReplicas}"]).strip()
    h.check(avail in ("", "0"), "web is not Available before /ready.txt exists (availableReplicas %r)" % avail)
    S["web"] = pod_of("app=web")
    ok(["exec", S["web"], "--", "sh", "-c", "echo ready > /www/ready.txt"])
    ok(["rollout", "status", "deployment", "web", "--timeout=60s"], timeout=70)
    ok(["wait", "--for=condition=Available", "deployment/web", "--timeout=30s"], timeout=40)


def test_liveness_restarts():
    apply(LIVENESS)

    def restarts():
        out = kubectl(["get", "pod", "fragile", "-o", "jsonpath={.status.containerStatuses[0].restartCount}"])[1]
        return int(out) if out.strip().isdigit() else 0
    h.wait_until(lambda: restarts() >= 1, 90, "fragile restarted by its liveness probe")
    events = ok(["get", "events", "--field-selector", "involvedObject.name=fragile"])
    h.check("Unhealthy" in events or "Killing" in events, "an event says why:\n%s" % events)


def test_configmap_env_and_volume():
    ok(["create", "configmap", "greeting", "--from-literal=word=hello"])
    apply(GREET)
    wait_running("greet")
    h.wait_until(lambda: "env=hello file=hello" in kubectl(["logs", "greet"])[1], 30, "greet prints both")
    apply(ok(["create", "configmap", "greeting", "--from-literal=word=bonjour", "--dry-run=client", "-o", "yaml"]))
    h.wait_until(lambda: kubectl(["exec", "greet", "--", "cat", "/etc/greet/word"])[1] == "bonjour", 120,
                 "the ConfigMap's change in the running pod's file")


def test_exec_versions():
    for v in ("1.30", "1.33"):
        out = ok(["exec", S["web"], "--", "ls", "/"], version=v)
        h.check("www" in out.split() and "bin" in out.split(), "kubectl %s exec ls /: %r" % (v, out))
        rc, out, err = kubectl(["exec", S["web"], "--", "sh", "-c", "echo out; echo err >&2; exit 3"], version=v)
        h.eq((rc, out.strip()), (3, "out"), "kubectl %s exec exit code and stdout (stderr %r)" % (v, err))
        h.check("err" in err, "stderr reaches kubectl %s: %r" % (v, err))
        rc, out, err = kubectl(["exec", S["web"], "--", "no-such-command"], version=v)
        h.check(rc in (126, 127), "missing command: rc %d (126/127 as Kubernetes): %r" % (rc, err))
        out = ok(["exec", "-i", S["web"], "--", "sh", "-c", "cat; echo eof"], version=v, input_text="abc\n")
        h.eq(out, "abc\neof\n", "kubectl %s exec -i: stdin to its end" % v)
    # kubectl 1.29 asks for SPDY only: a clear refusal that names the kubectl that works.
    rc, out, err = kubectl(["exec", S["web"], "--", "true"], version="1.29")
    h.check(rc != 0 and "kubectl 1.30 or later" in err, "kubectl 1.29 exec is told why: rc %d %r" % (rc, err))


def test_cp_both_ways():
    src = os.path.join(S["tmp"], "in.txt")
    data = "".join("line %d of a file to copy\n" % i for i in range(2000))
    with open(src, "w") as f:
        f.write(data)
    ok(["cp", src, "%s:/tmp/in.txt" % S["web"]], timeout=60)
    h.eq(ok(["exec", S["web"], "--", "wc", "-l", "/tmp/in.txt"]).split()[0], "2000", "the file arrived whole")
    back = os.path.join(S["tmp"], "back.txt")
    ok(["cp", "%s:/tmp/in.txt" % S["web"], back], timeout=60)
    h.eq(open(back).read(), data, "the file came back the same")


def test_exec_tty_through_tmux():
    sess = "ursa-e2e-%d" % os.getpid()
    cmd = " ".join(["kubectl", "--kubeconfig", S["alice"], "--cache-dir", os.path.join(S["tmp"], "kcache"),
                    "exec", "-it", S["web"], "--", "sh"])
    h.must_run(["tmux", "new-session", "-d", "-s", sess, "-x", "100", "-y", "30", cmd])
    try:
        def screen():
            return h.must_run(["tmux", "capture-pane", "-p", "-t", sess])
        h.wait_until(lambda: "#" in screen() or "$" in screen(), 30, "a shell prompt in tmux")
        h.must_run(["tmux", "send-keys", "-t", sess, "echo $((6*7)); stty size", "Enter"])
        h.wait_until(lambda: "42" in screen() and "30 100" in screen(), 15, "output and size 30x100:\n" + screen())
        h.must_run(["tmux", "resize-window", "-t", sess, "-x", "120", "-y", "40"])
        time.sleep(1)
        h.must_run(["tmux", "send-keys", "-t", sess, "clear; stty size", "Enter"])
        h.wait_until(lambda: "40 120" in screen(), 15, "size 40x120 after the resize:\n" + screen())
        h.must_run(["tmux", "send-keys", "-t", sess, "exit", "Enter"])
        h.wait_until(lambda: subprocess.run(["tmux", "has-session", "-t", sess], capture_output=True).returncode != 0,
                     15, "kubectl exec -it ends with the shell")
    finally:
        subprocess.run(["tmux", "kill-session", "-t", sess], capture_output=True)


def test_attach():
    apply(ATTACH)
    wait_running("echoer")
    rc, out, err = kubectl(["attach", "-i", "echoer"], input_text="one\ntwo\n", timeout=60)
    h.wait_until(lambda: "stdin-closed" in kubectl(["logs", "echoer"])[1], 30,
                 "the container saw its stdin end (attach rc %d, %r %r)" % (rc, out, err))
    log = kubectl(["logs", "echoer"])[1]
    h.check("got:one" in log and "got:two" in log, "the container read what attach -i sent: %r" % log)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def port_forward(version, *ports):
    exe = os.path.join(KUBECTL_DIR, "kubectl." + version)
    pf = h.Background([exe, "--kubeconfig", S["alice"], "--cache-dir", os.path.join(S["tmp"], "kcache"),
                       "port-forward", "pod/" + S["web"]] + list(ports))
    h.wait_until(lambda: sum("Forwarding from 127.0.0.1" in l for l in pf.output()) >= len(ports), 30,
                 "kubectl %s port-forward listening (%s)" % (version, pf.err))
    return pf


def test_port_forward():
    for v in ("1.33", "1.30"):
        p = free_port()
        pf = port_forward(v, "%d:80" % p)
        try:
            for path, want in (("/", "<"), ("/ready.txt", "ready"), ("/ready.txt", "ready")):
                page = h.must_run(["curl", "-sS", "--max-time", "10", "http://127.0.0.1:%d%s" % (p, path)])
                h.check(want in page, "%s through kubectl %s port-forward: %r" % (path, v, page))
            h.check(pf.proc.poll() is None, "kubectl %s port-forward still runs: %s" % (v, pf.err))
        finally:
            pf.proc.terminate()
            pf.proc.wait(10)
    # A port nothing listens on: the connection fails and kubectl says why (kubectl itself then
    # ends the session, as it does with Kubernetes; the kubelet keeps it, see test_kubelet_streams).
    p = free_port()
    pf = port_forward("1.33", "%d:81" % p)
    try:
        r = subprocess.run(["curl", "-sS", "--max-time", "10", "http://127.0.0.1:%d/" % p], capture_output=True,
                           text=True)
        h.check(r.returncode != 0, "a forwarded port nothing listens on fails the connection")
        h.wait_until(lambda: any("81" in l and ("refused" in l or "error" in l.lower()) for l in pf.err), 10,
                     "kubectl reports the failed port: %s" % pf.err)
    finally:
        pf.proc.terminate()
        pf.proc.wait(10)


def test_top():
    def has_web():
        rc, out, _ = kubectl(["top", "pods"])
        return rc == 0 and S["web"] in out
    h.wait_until(has_web, 90, "kubectl top pods lists web")
    h.wait_until(lambda: "az-1-host-1" in kubectl(["top", "nodes"], kubeconfig=S["region"].admin_kubeconfig())[1],
                 90, "kubectl top nodes lists az-1-host-1")


def token_of(kubeconfig):
    import yaml
    doc = yaml.safe_load(open(kubeconfig))
    return doc["users"][0]["user"]["token"]


def ws_status(base, path, token):
    """The HTTP status of a WebSocket exec upgrade (101 when it is accepted)."""
    import websocket
    ctx = {"ca_certs": os.path.join(S["region"].state, "ca.crt"), "cert_reqs": ssl.CERT_REQUIRED}
    try:
        ws = websocket.create_connection("wss://127.0.0.1:%d%s" % (S["region"].port(base), path), sslopt=ctx,
                                         header=["Authorization: Bearer " + token],
                                         subprotocols=["v5.channel.k8s.io"], timeout=10)
        ws.close()
        return 101
    except websocket.WebSocketBadStatusException as e:
        return e.status_code


def test_other_tenant_exec_forbidden():
    path = "/api/v1/tenants/acme/namespaces/default/pods/%s/exec?command=ls&stdout=1" % S["web"]
    h.eq(ws_status(6443, path, token_of(S["bob"])), 403, "bob's exec into acme's pod at the gateway")
    h.eq(ws_status(7101, path, token_of(S["bob"])), 403, "bob's exec into acme's pod at the partition")
    h.eq(ws_status(6443, path, token_of(S["alice"])), 101, "alice's own exec upgrades")
    rc, out, err = kubectl(["exec", S["web"], "--", "ls"], kubeconfig=S["bob"])
    h.check(rc != 0, "bob's kubectl finds no such pod in zeta: %s" % err)
    print(json.dumps({"bob": err.strip()[:200]}))


if __name__ == "__main__":
    h.run(globals(), per_test_timeout=600)
