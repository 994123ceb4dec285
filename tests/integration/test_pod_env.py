#!/usr/bin/python3
"""A container's environment from the API (src/kubelet/podenv.c), as Kubernetes' kubelet builds
it, on a real containerd (CRI) and on the process runtime.

Set-up: tests/lib/ursa_cri.py's CriNode (containerd, CNI) and tests/lib/ursa_region.py's region
(etcd x2, RM, TP, tenant acme), a kubelet with --runtime cri for one node and a kubelet with the
process runtime for another, each with its node's own credential (system:node:<name>).

Checks: a pod prints env from a configmap key, a secret key, fieldRefs (name, namespace, podIP
— the sandbox's, known before the containers are created —, nodeName, a label),
resourceFieldRef limits.memory, envFrom with a prefix (a key that is no valid name skipped with an
InvalidEnvironmentVariableNames event), and $(VAR) expansion in args ($$ escapes); a pod whose
configmap is missing is Waiting with CreateContainerConfigError and Kubernetes' message and a
Failed event, then runs once the configmap is created; the node credential GETs a configmap or
secret its pod names and gets 403 for others (and for lists); env valueFrom on the process
runtime. Needs root (containerd).

Run alone: URSA_BUILD_DIR=build /usr/bin/python3 tests/integration/test_pod_env.py"""

import base64
import ipaddress
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import ursa_harness as h  # noqa: E402
import ursa_cri as cri  # noqa: E402
import ursa_region  # noqa: E402

NODE = "env-node-1"
PNODE = "env-proc-1"
S = {}
NS = "/api/v1/tenants/acme/namespaces/default"


def setup():
    cri.require()
    node = cri.CriNode(NODE, cgroup_prefix="ursa-kenv").start()
    S.update(node=node, subnet=node.subnet)
    S.update(ursa_region.start(tenants=("acme",)))
    kc = S["rm"].kubeconfig("system", "system:node:" + NODE, ("system:nodes",))
    S["kl"] = ursa_region.Kubelet(kc, ["--node-name", NODE, "--cpu", "4", "--memory", "8Gi"] + node.kubelet_args(),
                                  label="kubelet-env").start()
    pkc = S["rm"].kubeconfig("system", "system:node:" + PNODE, ("system:nodes",))
    S["pkl"] = ursa_region.Kubelet(pkc, ["--node-name", PNODE, "--cpu", "2", "--memory", "4Gi"],
                                   label="kubelet-env-proc").start()
    h.wait_until(lambda: ursa_region.node_ready(S["admin"], NODE), 60, "node %s Ready" % NODE)
    h.wait_until(lambda: ursa_region.node_ready(S["admin"], PNODE), 60, "node %s Ready" % PNODE)
    for obj in ({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "app"},
                 "data": {"color": "blue", "size": "L", "9lives": "x"}},
                {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "creds"},
                 "data": {"password": base64.b64encode(b"s3cr3t").decode()}},
                {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "unrelated"}, "data": {"a": "b"}},
                {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "unrelated"}, "data": {}}):
        plural = "configmaps" if obj["kind"] == "ConfigMap" else "secrets"
        h.expect_status(S["tpadmin"].post(NS + "/" + plural, obj), 201, "create %s" % obj["metadata"]["name"])


def teardown():
    ursa_region.kill_containers()  # the process runtime's containers outlive their kubelet
    for k in ("pkl", "kl"):
        if S.get(k):
            S[k].stop()
    if S.get("node"):
        S["node"].teardown()


def env_pod(name, node, script, env, env_from=(), limits=None, restart="Never"):
    c = {"name": "c", "image": "busybox:1.36", "command": ["sh", "-c"], "args": [script], "env": env}
    if env_from:
        c["envFrom"] = list(env_from)
    if limits:
        c["resources"] = {"limits": limits, "requests": limits}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": {"app": "envtest"}},
            "spec": {"containers": [c], "restartPolicy": restart, "terminationGracePeriodSeconds": 1,
                     "nodeName": node}}


def create(p):
    h.expect_status(S["tpadmin"].post(h.pods_path("acme"), p), 201, "create pod %s" % p["metadata"]["name"])


def status(name):
    r = S["tpadmin"].get(h.pods_path("acme", name=name))
    return r.json.get("status", {}) if r.status == 200 else {}


def kubectl_logs(name):
    rc, out, err = h.kubectl(["logs", name], S["tp"].kubeconfig("acme", "alice"))
    return out if rc == 0 else ""


def events(pod, reason):
    r = S["tpadmin"].get(NS + "/events")
    h.expect_status(r, 200, "list events")
    return [e for e in r.json.get("items") or []
            if e["involvedObject"].get("name") == pod and e.get("reason") == reason]


def parse_env(out):
    return dict(line.split("=", 1) for line in out.splitlines() if "=" in line)


FULL_ENV = [
    {"name": "COLOR", "valueFrom": {"configMapKeyRef": {"name": "app", "key": "color"}}},
    {"name": "PASSWORD", "valueFrom": {"secretKeyRef": {"name": "creds", "key": "password"}}},
    {"name": "OPT", "valueFrom": {"configMapKeyRef": {"name": "app", "key": "nokey", "optional": True}}},
    {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
    {"name": "POD_NS", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}},
    {"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
    {"name": "NODE", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
    {"name": "APP", "valueFrom": {"fieldRef": {"fieldPath": "metadata.labels['app']"}}},
    {"name": "MEM_MI", "valueFrom": {"resourceFieldRef": {"resource": "limits.memory", "divisor": "1Mi"}}},
    {"name": "URL", "value": "http://$(POD_IP):80/$(COLOR)"},
]


def test_env_from_everything_on_cri():
    script = "echo COLOR=$COLOR; echo PASSWORD=$PASSWORD; echo OPT=${OPT-unset}; echo POD_NAME=$POD_NAME; " \
             "echo POD_NS=$POD_NS; echo POD_IP=$POD_IP; echo NODE=$NODE; echo APP=$APP; echo MEM_MI=$MEM_MI; " \
             "echo URL=$URL; echo CFG_size=$CFG_size; echo CFG_9lives=$CFG_9lives; echo size=$size; echo ARG=$(ARG_COLOR)/$$(COLOR)/$(UNDEFINED)"
    # $(ARG_COLOR) in args: expanded by the kubelet (not the shell); $$(COLOR) escaped: the shell's $(COLOR)
    env = FULL_ENV + [{"name": "ARG_COLOR", "value": "arg-$(COLOR)"}]
    create(env_pod("envall", NODE, script, env, env_from=[{"configMapRef": {"name": "app"}, "prefix": "CFG_"},
                                                           {"configMapRef": {"name": "app"}}],
                   limits={"memory": "64Mi", "cpu": "250m"}))
    h.wait_until(lambda: status("envall").get("phase") == "Succeeded", 120, "pod envall Succeeded")
    out = h.wait_until(lambda: (lambda o: o if "ARG=" in o else None)(kubectl_logs("envall")), 30, "logs of envall")
    got = parse_env(out)
    st = status("envall")
    pod_ip = st.get("podIP")
    h.check(pod_ip and ipaddress.ip_address(pod_ip) in S["subnet"], "podIP %r in the CNI subnet" % pod_ip)
    want = {"COLOR": "blue", "PASSWORD": "s3cr3t", "OPT": "unset", "POD_NAME": "envall", "POD_NS": "default",
            "POD_IP": pod_ip, "NODE": NODE, "APP": "envtest", "MEM_MI": "64", "URL": "http://%s:80/blue" % pod_ip,
            "CFG_size": "L", "CFG_9lives": "x", "size": "L"}
    for k, v in want.items():
        h.eq(got.get(k), v, "env %s in %r" % (k, out))
    # the shell ran $(COLOR) as a command (not found): empty; the undefined reference stays as written,
    # which the shell again takes for a command substitution
    h.check(got.get("ARG", "").startswith("arg-blue/"), "args expansion: %r" % got.get("ARG"))
    evs = h.wait_until(lambda: events("envall", "InvalidEnvironmentVariableNames"), 30,
                       "InvalidEnvironmentVariableNames event")
    h.check("[9lives]" in evs[0]["message"] and "default/app" in evs[0]["message"] and evs[0]["type"] == "Warning",
            "event: %r" % evs[0])
    S["tpadmin"].delete(h.pods_path("acme", name="envall"))


def test_escaped_args_literal():
    """$$ in args gives a literal $ to the program: with echo (no shell) it prints as is."""
    p = env_pod("envesc", NODE, "", [{"name": "A", "value": "x"}])
    c = p["spec"]["containers"][0]
    c["command"] = ["echo"]
    c["args"] = ["$(A)", "$$(A)", "$(B)", "$$"]
    create(p)
    h.wait_until(lambda: status("envesc").get("phase") == "Succeeded", 120, "pod envesc Succeeded")
    out = h.wait_until(lambda: kubectl_logs("envesc") or None, 30, "logs of envesc")
    h.eq(out.strip(), "x $(A) $(B) $", "echo's arguments")
    S["tpadmin"].delete(h.pods_path("acme", name="envesc"))


def test_missing_configmap_then_created():
    env = [{"name": "LATE", "valueFrom": {"configMapKeyRef": {"name": "late", "key": "k"}}}]
    create(env_pod("envlate", NODE, "echo LATE=$LATE; sleep 3600", env, restart="Always"))

    def waiting():
        cs = (status("envlate").get("containerStatuses") or [{}])[0]
        w = cs.get("state", {}).get("waiting") or {}
        return w if w.get("reason") == "CreateContainerConfigError" else None
    w = h.wait_until(waiting, 60, "envlate Waiting with CreateContainerConfigError")
    h.eq(w.get("message"), 'configmap "late" not found', "message")
    h.eq(status("envlate").get("phase"), "Pending", "phase")
    evs = h.wait_until(lambda: events("envlate", "Failed"), 30, "Failed event")
    h.check(evs[0]["type"] == "Warning" and 'configmap "late" not found' in evs[0]["message"], "event %r" % evs[0])
    # a configmap without the key: Kubernetes' other message
    h.expect_status(S["tpadmin"].post(NS + "/configmaps", {"apiVersion": "v1", "kind": "ConfigMap",
                                                           "metadata": {"name": "late"}, "data": {"other": "1"}}),
                    201, "create configmap late")
    h.wait_until(lambda: (waiting() or {}).get("message") == "couldn't find key k in ConfigMap default/late", 60,
                 "message about the missing key")
    r = S["tpadmin"].get(NS + "/configmaps/late")
    obj = r.json
    obj["data"] = {"k": "arrived"}
    h.expect_status(S["tpadmin"].put(NS + "/configmaps/late", obj), 200, "update configmap late")
    h.wait_until(lambda: status("envlate").get("phase") == "Running", 90, "envlate Running once the key exists")
    out = h.wait_until(lambda: (lambda o: o if "LATE=" in o else None)(kubectl_logs("envlate")), 30, "logs")
    h.check("LATE=arrived" in out, "env LATE: %r" % out)
    S["tpadmin"].delete(h.pods_path("acme", name="envlate"))


def test_node_reads_only_named_objects():
    me = S["tp"].user_client("system", "system:node:" + NODE, ("system:nodes",))
    other = S["tp"].user_client("system", "system:node:" + PNODE, ("system:nodes",))
    # a running pod on NODE naming app and creds keeps them readable
    create(env_pod("envhold", NODE, "sleep 3600", FULL_ENV[:2], restart="Always"))
    # (the API server's pod cache may take a moment to show the new pod)
    h.wait_until(lambda: me.get(NS + "/configmaps/app").status == 200, 10, "node GETs a configmap its pod names")
    h.wait_until(lambda: me.get(NS + "/secrets/creds").status == 200, 10, "node GETs a secret its pod names")
    h.expect_status(me.get(NS + "/configmaps/unrelated"), 403, "node GETs a configmap no pod of it names")
    h.expect_status(me.get(NS + "/secrets/unrelated"), 403, "node GETs a secret no pod of it names")
    h.expect_status(me.get(NS + "/configmaps"), 403, "node lists configmaps")
    h.expect_status(me.get(NS + "/configmaps?watch=1"), 403, "node watches configmaps")
    h.expect_status(me.get("/api/v1/tenants/all/configmaps"), 403, "node lists all configmaps")
    h.expect_status(other.get(NS + "/configmaps/app"), 403, "another node GETs the configmap")
    r = me.request("PUT", NS + "/configmaps/app", {"apiVersion": "v1", "kind": "ConfigMap",
                                                   "metadata": {"name": "app"}, "data": {}})
    h.expect_status(r, 403, "node updates the configmap")
    r = S["tpadmin"].delete(h.pods_path("acme", name="envhold"), {"gracePeriodSeconds": 0})
    h.check(r.status in (200, 202), "delete envhold: %s" % r.status)
    h.wait_until(lambda: S["tpadmin"].get(h.pods_path("acme", name="envhold")).status == 404, 60, "envhold gone")
    h.wait_until(lambda: me.get(NS + "/configmaps/app").status == 403, 10,
                 "node GETs the configmap after its pod went: 403")


def test_process_runtime_env_value_from():
    env = [{"name": "COLOR", "valueFrom": {"configMapKeyRef": {"name": "app", "key": "color"}}},
           {"name": "PASSWORD", "valueFrom": {"secretKeyRef": {"name": "creds", "key": "password"}}},
           {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
           {"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
           {"name": "MSG", "value": "$(POD_NAME)-$(COLOR)"}]
    p = env_pod("envproc", PNODE, "echo COLOR=$COLOR; echo PASSWORD=$PASSWORD; echo MSG=$MSG; echo POD_IP=$POD_IP; "
                "echo ARG=$(COLOR)", env, env_from=[{"secretRef": {"name": "creds"}, "prefix": "S_"}])
    create(p)
    h.wait_until(lambda: status("envproc").get("phase") == "Succeeded", 60, "pod envproc Succeeded")
    out = h.wait_until(lambda: (lambda o: o if "ARG=" in o else None)(kubectl_logs("envproc")), 30, "logs")
    got = parse_env(out)
    h.eq(got.get("COLOR"), "blue", "COLOR on the process runtime: %r" % out)
    h.eq(got.get("PASSWORD"), "s3cr3t", "PASSWORD")
    h.eq(got.get("MSG"), "envproc-blue", "MSG")
    h.eq(got.get("POD_IP"), status("envproc").get("podIP") or "127.0.0.1", "POD_IP (the node's)")
    h.eq(got.get("ARG"), "blue", "args expansion")
    S["tpadmin"].delete(h.pods_path("acme", name="envproc"))


if __name__ == "__main__":
    h.run(globals())
