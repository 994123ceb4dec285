#!/usr/bin/python3
"""Pod volumes (src/kubelet/volumes.c, atomicdir.c) on a real containerd (CRI) and on the process
runtime, and in-cluster configuration.

Set-up: tests/lib/ursa_cri.py's CriNode (containerd, CNI) and tests/lib/ursa_region.py's region
(etcd x2, RM, TP, tenant acme), ursa-tp-controller-manager (tenant, namespace and
root-ca-cert-publisher with --root-ca-file = the TP's CA), a kubelet with --runtime cri and one
with the process runtime, each with its node's own credential and --api-front-door naming the
TP's address: ursa_region has no gateway or HAProxy, so the "front door" pods reach here is the
tenant partition's API server itself.

Checks: a pod prints a configmap key from env and from a configMap volume; secret items with a
mode; downwardAPI files (labels, name, a resourceFieldRef); a configmap update reaches the running
pod's file (atomic ..data swap) within 60 s; subPath; a readOnly mount refuses writes; an emptyDir
with medium Memory is a tmpfs with its sizeLimit; a disk emptyDir over its sizeLimit evicts the
pod; the default service-account volume (token, ca.crt, namespace) and KUBERNETES_SERVICE_*; the
ConfigMap kube-root-ca.crt in every namespace; on the process runtime a configMap volume at its
mountPath (private mount namespace), and /usr/bin/python3 with python3-kubernetes's
load_incluster_config() listing its own namespace's pods as its service account. Needs root.

Run alone: URSA_BUILD_DIR=build /usr/bin/python3 tests/integration/test_volumes.py"""

import base64
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import ursa_harness as h  # noqa: E402
import ursa_cri as cri  # noqa: E402
import ursa_region  # noqa: E402

NODE = "vol-node-1"
PNODE = "vol-proc-1"
S = {}
NS = "/api/v1/tenants/acme/namespaces/default"
RBAC = "/apis/rbac.authorization.k8s.io/v1/tenants/acme/namespaces/default/rolebindings"
PROC_MOUNT = "/tmp/ursa-voltest-cfg"  # made on the node by the process runtime (a mount point)


def setup():
    cri.require()
    node = cri.CriNode(NODE, cgroup_prefix="ursa-kvol").start()
    S.update(node=node)
    S.update(ursa_region.start(tenants=("acme",)))
    tp = S["tp"]
    S["cm"] = h.TpControllerManager(tp, extra_args=["--controllers", "tenant,namespace,root-ca-cert-publisher",
                                                    "--root-ca-file", tp.ca_file, "--leader-elect=false"]).start()
    front = "127.0.0.1:%d" % tp.port
    kc = S["rm"].kubeconfig("system", "system:node:" + NODE, ("system:nodes",))
    S["kl"] = ursa_region.Kubelet(kc, ["--node-name", NODE, "--cpu", "4", "--memory", "8Gi",
                                       "--api-front-door", front] + node.kubelet_args(),
                                  label="kubelet-vol").start()
    pkc = S["rm"].kubeconfig("system", "system:node:" + PNODE, ("system:nodes",))
    S["pkl"] = ursa_region.Kubelet(pkc, ["--node-name", PNODE, "--cpu", "2", "--memory", "4Gi",
                                         "--api-front-door", front], label="kubelet-vol-proc").start()
    h.wait_until(lambda: ursa_region.node_ready(S["admin"], NODE), 60, "node %s Ready" % NODE)
    h.wait_until(lambda: ursa_region.node_ready(S["admin"], PNODE), 60, "node %s Ready" % PNODE)
    for obj in ({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "app"},
                 "data": {"color": "blue", "size": "L"}},
                {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "creds"},
                 "data": {"password": base64.b64encode(b"s3cr3t").decode(),
                          "user": base64.b64encode(b"admin").decode()}}):
        plural = "configmaps" if obj["kind"] == "ConfigMap" else "secrets"
        h.expect_status(S["tpadmin"].post(NS + "/" + plural, obj), 201, "create %s" % obj["metadata"]["name"])
    # the default service account may list pods of its namespace (what in-cluster config uses)
    h.expect_status(S["tpadmin"].post(RBAC, {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": {"name": "sa-view"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"},
        "subjects": [{"kind": "ServiceAccount", "name": "default", "namespace": "default"}]}), 201, "rolebinding")
    h.wait_until(lambda: S["tpadmin"].get(NS + "/serviceaccounts/default").status == 200, 30,
                 "default service account")


def teardown():
    ursa_region.kill_containers()  # the process runtime's containers outlive their kubelet
    for k in ("pkl", "kl", "cm"):
        if S.get(k):
            S[k].stop()
    if S.get("node"):
        S["node"].teardown()
    try:
        os.rmdir(PROC_MOUNT)
    except OSError:
        pass


def create(p):
    h.expect_status(S["tpadmin"].post(h.pods_path("acme"), p), 201, "create pod %s" % p["metadata"]["name"])


def status(name):
    r = S["tpadmin"].get(h.pods_path("acme", name=name))
    return r.json.get("status", {}) if r.status == 200 else {}


def logs(name):
    rc, out, err = h.kubectl(["logs", name], S["tp"].kubeconfig("acme", "alice"))
    return out if rc == 0 else ""


def wait_logs(name, marker, timeout=60):
    return h.wait_until(lambda: (lambda o: o if marker in o else None)(logs(name)), timeout,
                        "%s in the logs of %s" % (marker, name))


def pod(name, node, script, volumes, mounts, env=None, restart="Never", extra=None):
    c = {"name": "c", "image": "busybox:1.36", "command": ["sh", "-c", script], "volumeMounts": mounts,
         "resources": {"limits": {"memory": "64Mi"}}}
    if env:
        c["env"] = env
    spec = {"containers": [c], "restartPolicy": restart, "terminationGracePeriodSeconds": 1, "nodeName": node,
            "volumes": volumes}
    spec.update(extra or {})
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": {"app": "voltest"}},
            "spec": spec}


def kv(out):
    return dict(line.split("=", 1) for line in out.splitlines() if "=" in line)


def delete(name):
    S["tpadmin"].delete(h.pods_path("acme", name=name), {"gracePeriodSeconds": 0})


def test_root_ca_configmap_in_every_namespace():
    for ns in ("default", "kube-system", "kube-public"):
        r = h.wait_until(lambda: (lambda r: r if r.status == 200 else None)(
            S["tpadmin"].get("/api/v1/tenants/acme/namespaces/%s/configmaps/kube-root-ca.crt" % ns)), 30,
            "kube-root-ca.crt in %s" % ns)
        with open(S["tp"].ca_file) as f:
            h.eq(r.json["data"]["ca.crt"], f.read(), "ca.crt of %s is the TP's CA" % ns)
    # deleted or changed behind the publisher's back: put back within seconds, not at its resync
    path = "/api/v1/tenants/acme/namespaces/default/configmaps/kube-root-ca.crt"
    cur = S["tpadmin"].get(path).json
    want = cur["data"]["ca.crt"]
    cur["data"]["ca.crt"] = "not a CA"
    h.expect_status(S["tpadmin"].put(path, cur), 200, "kube-root-ca.crt changed")
    h.wait_until(lambda: (lambda r: r.status == 200 and r.json["data"]["ca.crt"] == want)(S["tpadmin"].get(path)),
                 10, "changed kube-root-ca.crt put back")
    h.expect_status(S["tpadmin"].delete(path), 200, "kube-root-ca.crt deleted")
    h.wait_until(lambda: (lambda r: r.status == 200 and r.json["data"]["ca.crt"] == want)(S["tpadmin"].get(path)),
                 10, "deleted kube-root-ca.crt made again")


def test_configmap_secret_downward_on_cri():
    script = ("echo ENV=$COLOR; echo VOL=$(cat /etc/app/color); echo SIZE=$(cat /etc/app/size); "
              "echo PW=$(cat /etc/creds/pw); echo PWMODE=$(stat -L -c %a /etc/creds/pw); "
              "echo NOUSER=$(test -e /etc/creds/user && echo present || echo absent); "
              "echo NAME=$(cat /etc/podinfo/name); echo LABELS=$(cat /etc/podinfo/labels); "
              "echo MEM=$(cat /etc/podinfo/mem); echo ONE=$(cat /etc/one.conf); "
              "echo DATA=$(readlink /etc/app/..data | cut -c1-2); "
              "if echo x > /etc/app/new 2>/dev/null; then echo CMW=ok; else echo CMW=refused; fi; "
              "if touch /ro/x 2>/dev/null; then echo ROW=ok; else echo ROW=refused; fi; "
              "if touch /rw/x 2>/dev/null; then echo RWW=ok; else echo RWW=refused; fi; "
              "echo TMPFS=$(grep ' /cache ' /proc/mounts | cut -d' ' -f3); "
              "echo TMPFSOPT=$(grep ' /cache ' /proc/mounts | cut -d' ' -f4); "
              "echo SA_NS=$(cat /var/run/secrets/kubernetes.io/serviceaccount/namespace); "
              "echo SA_TOK=$(cut -c1-3 /var/run/secrets/kubernetes.io/serviceaccount/token); "
              "echo SA_CA=$(head -1 /var/run/secrets/kubernetes.io/serviceaccount/ca.crt); "
              "echo KSH=$KUBERNETES_SERVICE_HOST; echo KSP=$KUBERNETES_SERVICE_PORT; echo END=1")
    vols = [{"name": "app", "configMap": {"name": "app"}},
            {"name": "creds", "secret": {"secretName": "creds", "items": [{"key": "password", "path": "pw",
                                                                           "mode": 0o400}]}},
            {"name": "podinfo", "downwardAPI": {"items": [
                {"path": "name", "fieldRef": {"fieldPath": "metadata.name"}},
                {"path": "labels", "fieldRef": {"fieldPath": "metadata.labels"}},
                {"path": "mem", "resourceFieldRef": {"containerName": "c", "resource": "limits.memory",
                                                     "divisor": "1Mi"}}]}},
            {"name": "scratch", "emptyDir": {}},
            {"name": "cache", "emptyDir": {"medium": "Memory", "sizeLimit": "8Mi"}},
            {"name": "missing", "configMap": {"name": "nope", "optional": True}}]
    mounts = [{"name": "app", "mountPath": "/etc/app"},
              {"name": "creds", "mountPath": "/etc/creds"},
              {"name": "podinfo", "mountPath": "/etc/podinfo"},
              {"name": "app", "mountPath": "/etc/one.conf", "subPath": "color"},
              {"name": "scratch", "mountPath": "/ro", "readOnly": True},
              {"name": "scratch", "mountPath": "/rw"},
              {"name": "cache", "mountPath": "/cache"},
              {"name": "missing", "mountPath": "/etc/missing"}]
    env = [{"name": "COLOR", "valueFrom": {"configMapKeyRef": {"name": "app", "key": "color"}}}]
    create(pod("volcri", NODE, script, vols, mounts, env=env))
    h.wait_until(lambda: status("volcri").get("phase") in ("Succeeded", "Failed"), 120, "pod volcri ends")
    got = kv(wait_logs("volcri", "END=1"))
    h.eq(status("volcri").get("phase"), "Succeeded", "volcri phase (logs %r)" % got)
    h.eq(got.get("ENV"), "blue", "configmap key from env")
    h.eq(got.get("VOL"), "blue", "configmap key from the volume")
    h.eq(got.get("SIZE"), "L", "second key")
    h.eq(got.get("PW"), "s3cr3t", "secret item")
    h.eq(got.get("PWMODE"), "400", "secret item mode")
    h.eq(got.get("NOUSER"), "absent", "items list only what they name")
    h.eq(got.get("NAME"), "volcri", "downwardAPI metadata.name")
    h.eq(got.get("LABELS"), 'app="voltest"', "downwardAPI labels")
    h.eq(got.get("MEM"), "64", "downwardAPI limits.memory in Mi")
    h.eq(got.get("ONE"), "blue", "subPath of a configMap volume")
    h.eq(got.get("DATA"), "..", "..data points at a timestamped directory")
    h.eq(got.get("CMW"), "refused", "configMap volumes are read-only")
    h.eq(got.get("ROW"), "refused", "readOnly mount refuses writes")
    h.eq(got.get("RWW"), "ok", "the same emptyDir read-write elsewhere")
    h.eq(got.get("TMPFS"), "tmpfs", "emptyDir medium Memory is a tmpfs")
    h.check("size=8192k" in got.get("TMPFSOPT", ""), "tmpfs sized by sizeLimit: %r" % got.get("TMPFSOPT"))
    h.eq(got.get("SA_NS"), "default", "service-account namespace file")
    h.eq(got.get("SA_TOK"), "eyJ", "service-account token (a JWT)")
    h.eq(got.get("SA_CA"), "-----BEGIN CERTIFICATE-----", "ca.crt from kube-root-ca.crt")
    # a CRI pod in its own network namespace: the front door's service address (ursa-cni DNATs it)
    h.eq(got.get("KSH"), "10.96.0.1", "KUBERNETES_SERVICE_HOST")
    h.eq(got.get("KSP"), "443", "KUBERNETES_SERVICE_PORT")
    delete("volcri")


def test_configmap_update_reaches_running_pod():
    create(pod("volwatch", NODE, "while true; do echo COLOR=$(cat /etc/app/color); sleep 1; done",
               [{"name": "app", "configMap": {"name": "app"}}], [{"name": "app", "mountPath": "/etc/app"}],
               restart="Always"))
    wait_logs("volwatch", "COLOR=blue", 120)
    r = S["tpadmin"].patch(NS + "/configmaps/app", {"data": {"color": "green"}})
    h.expect_status(r, 200, "update the configmap")
    wait_logs("volwatch", "COLOR=green", 75)
    h.check("COLOR=blue" in logs("volwatch"), "the old value was there before")
    S["tpadmin"].patch(NS + "/configmaps/app", {"data": {"color": "blue"}})
    delete("volwatch")


def test_disk_empty_dir_over_size_limit_evicts():
    create(pod("volfill", NODE, "dd if=/dev/zero of=/data/blob bs=1M count=3; sleep 3600",
               [{"name": "data", "emptyDir": {"sizeLimit": "1Mi"}}], [{"name": "data", "mountPath": "/data"}]))
    h.wait_until(lambda: status("volfill").get("reason") == "Evicted", 90, "volfill Evicted")
    st = status("volfill")
    h.eq(st.get("phase"), "Failed", "evicted pod phase")
    h.check('EmptyDir volume "data" exceeds the limit "1Mi"' in st.get("message", ""), "message %r" % st)
    delete("volfill")


def test_node_token_request_restricted():
    """The node credential gets tokens only for its own pods' service accounts, bound to them."""
    create(pod("voltok", NODE, "sleep 3600", [], [], restart="Always"))
    h.wait_until(lambda: status("voltok").get("phase") == "Running", 120, "voltok Running")
    uid = S["tpadmin"].get(h.pods_path("acme", name="voltok")).json["metadata"]["uid"]
    me = S["tp"].user_client("system", "system:node:" + NODE, ("system:nodes",))
    other = S["tp"].user_client("system", "system:node:" + PNODE, ("system:nodes",))
    body = lambda: {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",  # noqa: E731
                    "spec": {"boundObjectRef": {"kind": "Pod", "apiVersion": "v1", "name": "voltok", "uid": uid}}}
    h.expect_status(me.post(NS + "/serviceaccounts/default/token", body()), 201, "own pod's token")
    h.expect_status(other.post(NS + "/serviceaccounts/default/token", body()), 403, "another node's pod")
    unbound = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {}}
    h.expect_status(me.post(NS + "/serviceaccounts/default/token", unbound), 403, "unbound token")
    delete("voltok")


def test_process_runtime_volume_and_in_cluster_config():
    script = ("import os\n"
              "from kubernetes import client, config\n"
              "print('CFG=' + open('%s/color').read())\n"
              "config.load_incluster_config()\n"
              "ns = open('/var/run/secrets/kubernetes.io/serviceaccount/namespace').read()\n"
              "pods = client.CoreV1Api().list_namespaced_pod(ns)\n"
              "print('PODS=' + ','.join(sorted(p.metadata.name for p in pods.items)))\n"
              "print('HOST=' + os.environ['KUBERNETES_SERVICE_HOST'])\n" % PROC_MOUNT)
    p = pod("volproc", PNODE, "", [{"name": "app", "configMap": {"name": "app"}}],
            [{"name": "app", "mountPath": PROC_MOUNT}])
    p["spec"]["containers"][0]["command"] = ["/usr/bin/python3", "-c", script]
    create(p)
    h.wait_until(lambda: status("volproc").get("phase") in ("Succeeded", "Failed"), 90, "volproc ends")
    out = logs("volproc")
    h.eq(status("volproc").get("phase"), "Succeeded", "volproc phase (logs %r)" % out)
    got = kv(out)
    h.eq(got.get("CFG"), "blue", "configMap volume at its mountPath on the process runtime")
    h.check("volproc" in got.get("PODS", "").split(","), "in-cluster client lists its own pod: %r" % out)
    h.eq(got.get("HOST"), "127.0.0.1", "KUBERNETES_SERVICE_HOST")
    h.check(not os.path.exists(os.path.join(PROC_MOUNT, "color")),
            "the volume is mounted in the container's own mount namespace only")
    delete("volproc")


if __name__ == "__main__":
    h.run(globals())
