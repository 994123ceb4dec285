#!/usr/bin/python3
"""Tenant isolation on a shared node (issue 18) against a real region slice: etcd + resource manager
+ tenant partition + a kubelet with the process runtime. A tenant's pods, and the pod templates of
its workloads, that ask for privileged containers, host namespaces, host ports, hostPath volumes,
added capabilities beyond Kubernetes' baseline set and the like are refused with 403 and Pod
Security Admission's kind of reason (kubectl run --privileged, a Deployment with hostNetwork, ...);
the system tenant may. A pod that reaches the kubelet anyway (written to etcd behind the API
server's back) is rejected there: Failed with reason TenantIsolation, never started.

Run alone: URSA_BUILD_DIR=build-x /usr/bin/python3 tests/integration/test_pod_security.py"""
import base64
import copy
import glob
import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import ursa_harness as h  # noqa: E402
import ursa_region  # noqa: E402

KUBECTL_DIR = "/usr/lib/google-cloud-sdk/bin"
KUBELET_BIN = os.path.join(h.BUILD_DIR, "src", "kubelet", "ursa-kubelet")
REGISTRY = "/apis/ursa.io/v1/tenantpartitions"
NODE = "ps-node-1"
S = {}


def setup():
    h.require_binary(KUBELET_BIN, "ursa-kubelet")
    h.require_binary(os.path.join(KUBECTL_DIR, "kubectl"), "kubectl")
    h.KUBECTL = os.path.join(KUBECTL_DIR, "kubectl")  # with a fresh --cache-dir (the harness's)
    etcd_rm = h.Etcd(name="etcd-rm").start()
    etcd_tp = h.Etcd(name="etcd-tp").start()
    rm = ursa_region.RmServer(etcd_rm).start()
    tp = h.ApiServer(etcd_tp, partition_id="tp-1")
    # the kubelet uses its RM kubeconfig's token and CA for every TP: the TP gets the RM's
    for attr in ("ca_file", "cert_file", "key_file", "signing_key", "signing_pub", "admin_token", "token_file"):
        setattr(tp, attr, getattr(rm, attr))
    tp.start()
    r = rm.admin().post(REGISTRY, {"apiVersion": "ursa.io/v1", "kind": "TenantPartition",
                                   "metadata": {"name": "tp-1"}, "spec": {"endpoints": [tp.url]}})
    h.expect_status(r, 201, "register tp-1")
    admin = tp.admin()
    h.create_tenant(admin, "acme")
    kl_dir = h.make_tmpdir("kubelet")
    kl_log = os.path.join(kl_dir, "kubelet.log")
    h._logs.append(("kubelet", kl_log))
    node_kc = rm.kubeconfig("system", "kubelet-ps", ("system:nodes",))
    kl = h.spawn([KUBELET_BIN, "--kubeconfig", node_kc, "--root-dir", kl_dir, "--port", str(h.free_port()),
                  "--address", "127.0.0.1", "--zone", "az-1", "--node-name", NODE, "--cpu", "2",
                  "--memory", "4Gi", "--max-pods", "10"], kl_log)
    S.update(etcd_tp=etcd_tp, rm=rm, tp=tp, admin=admin, kl=kl, kl_dir=kl_dir,
             kc=tp.kubeconfig("acme", "alice"), alice=tp.user_client("acme", "alice"))


def teardown():
    """Containers outlive their kubelet by design: end those it left behind."""
    for f in glob.glob(os.path.join(S.get("kl_dir", "/nonexistent"), "runtime", "pods", "*", "containers", "*",
                                    "state.json")):
        try:
            with open(f) as fh:
                pid = json.load(fh).get("pid")
            if isinstance(pid, int) and pid > 1:
                os.killpg(pid, 9)
        except (OSError, ValueError):
            pass


def kc(*args, input_text=None):
    return h.kubectl(list(args), S["kc"], input_text=input_text)


def pod(name, **spec):
    p = h.pod_manifest(name, image="busybox:1.36")
    p["spec"]["containers"][0]["command"] = ["sleep", "300"]
    p["spec"]["terminationGracePeriodSeconds"] = 1
    p["spec"].update(spec)
    return p


def forbidden(resp, what, message):
    """resp is a 403 Status naming the object, with exactly message."""
    st = h.expect_status(resp, 403, what, "Forbidden")
    h.eq(st["message"], message, what + ": message")
    return st


def test_kubectl_run_privileged_refused():
    rc, out, err = kc("run", "p", "--image=busybox", "--privileged")
    h.check(rc != 0, "kubectl run --privileged as a tenant user succeeded: %s" % out)
    h.eq(err.strip(), 'Error from server (Forbidden): pods "p" is forbidden: violates tenant isolation: privileged '
         '(container "p" must not set securityContext.privileged=true)', "kubectl's error")
    h.eq(S["alice"].get(h.pods_path("acme", name="p")).status, 404, "refused pod not stored")
    # an ordinary pod, and one that merely allows privilege escalation, are created
    rc, out, err = kc("run", "plain", "--image=busybox")
    h.check(rc == 0 and "pod/plain created" in out, "kubectl run plain: rc=%s out=%s err=%s" % (rc, out, err))
    esc = pod("esc")
    esc["spec"]["containers"][0]["securityContext"] = {"allowPrivilegeEscalation": True, "privileged": False}
    h.expect_status(S["alice"].post(h.pods_path("acme"), esc), 201, "pod with allowPrivilegeEscalation")


def test_deployment_host_network_refused():
    d = h.deployment_manifest("netd", image="busybox:1.36")
    d["spec"]["template"]["spec"]["hostNetwork"] = True
    rc, out, err = kc("apply", "-f", "-", input_text=json.dumps(d))
    h.check(rc != 0, "deployment with hostNetwork applied: %s" % out)
    h.check('deployments.apps "netd" is forbidden: pod template violates tenant isolation: host namespaces '
            '(hostNetwork=true)' in err, "kubectl's error: %s" % err)
    r = S["alice"].post(h.deployments_path("acme"), d)
    st = forbidden(r, "deployment with hostNetwork", 'deployments.apps "netd" is forbidden: pod template violates '
                   'tenant isolation: host namespaces (hostNetwork=true)')
    h.eq(st["details"], {"name": "netd", "group": "apps", "kind": "deployments"}, "details")
    h.eq(S["alice"].get(h.deployments_path("acme", name="netd")).status, 404, "refused deployment not stored")


def test_host_path_refused():
    p = pod("hp", volumes=[{"name": "root", "hostPath": {"path": "/"}}])
    p["spec"]["containers"][0]["volumeMounts"] = [{"name": "root", "mountPath": "/host"}]
    forbidden(S["alice"].post(h.pods_path("acme"), p), "hostPath pod",
              'pods "hp" is forbidden: violates tenant isolation: hostPath volumes (volume "root")')


def test_many_violations_in_psa_order():
    p = pod("many", hostPID=True, hostIPC=True, volumes=[{"name": "v", "hostPath": {"path": "/etc"}}])
    c = p["spec"]["containers"][0]
    c["ports"] = [{"containerPort": 80, "hostPort": 8080}]
    c["securityContext"] = {"privileged": True, "capabilities": {"add": ["SYS_ADMIN", "NET_BIND_SERVICE"]},
                            "procMount": "Unmasked", "seccompProfile": {"type": "Unconfined"}}
    p["spec"]["initContainers"] = [{"name": "init", "image": "busybox:1.36", "securityContext": {"privileged": True}}]
    p["spec"]["securityContext"] = {"sysctls": [{"name": "kernel.msgmax", "value": "1"}]}
    forbidden(S["alice"].post(h.pods_path("acme"), p), "pod with many violations",
              'pods "many" is forbidden: violates tenant isolation: non-default capabilities (container "c" must '
              'not include "SYS_ADMIN" in securityContext.capabilities.add), host namespaces (hostPID=true, '
              'hostIPC=true), hostPath volumes (volume "v"), hostPort (container "c" uses hostPort 8080), '
              'privileged (containers "init", "c" must not set securityContext.privileged=true), procMount '
              '(container "c" must not set securityContext.procMount to "Unmasked"), seccompProfile (container '
              '"c" must not set securityContext.seccompProfile.type to "Unconfined"), forbidden sysctls '
              '(kernel.msgmax)')


def test_allowed_capabilities_created():
    p = pod("bind")
    p["spec"]["containers"][0]["securityContext"] = {"capabilities": {"add": ["NET_BIND_SERVICE"], "drop": ["ALL"]}}
    p["spec"]["securityContext"] = {"sysctls": [{"name": "net.ipv4.ip_unprivileged_port_start", "value": "0"}]}
    h.expect_status(S["alice"].post(h.pods_path("acme"), p), 201, "pod adding NET_BIND_SERVICE")
    rc, out, err = kc("get", "pod", "bind", "-o", "jsonpath={.spec.containers[0].securityContext.capabilities.add}")
    h.eq((rc, out.strip()), (0, '["NET_BIND_SERVICE"]'), "stored capabilities (stderr %s)" % err)
    p = pod("admin")
    p["spec"]["containers"][0]["securityContext"] = {"capabilities": {"add": ["NET_ADMIN"]}}
    forbidden(S["alice"].post(h.pods_path("acme"), p), "pod adding NET_ADMIN",
              'pods "admin" is forbidden: violates tenant isolation: non-default capabilities (container "c" must '
              'not include "NET_ADMIN" in securityContext.capabilities.add)')


def test_workload_templates_refused():
    tmpl = {"metadata": {"labels": {"app": "x"}},
            "spec": {"restartPolicy": "Never", "containers": [
                {"name": "c", "image": "busybox:1.36", "securityContext": {"privileged": True}}]}}
    msg = ('pod template violates tenant isolation: privileged (container "c" must not set '
           'securityContext.privileged=true)')
    cases = [
        ("/apis/batch/v1/tenants/acme/namespaces/default/jobs", "jobs.batch",
         {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "x"}, "spec": {"template": tmpl}}),
        ("/apis/batch/v1/tenants/acme/namespaces/default/cronjobs", "cronjobs.batch",
         {"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "x"},
          "spec": {"schedule": "*/5 * * * *", "jobTemplate": {"spec": {"template": tmpl}}}}),
        ("/apis/apps/v1/tenants/acme/namespaces/default/statefulsets", "statefulsets.apps",
         {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "x"},
          "spec": {"serviceName": "x", "selector": {"matchLabels": {"app": "x"}}, "template": tmpl}}),
        ("/apis/apps/v1/tenants/acme/namespaces/default/replicasets", "replicasets.apps",
         {"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "x"},
          "spec": {"selector": {"matchLabels": {"app": "x"}}, "template": tmpl}}),
    ]
    for path, res, obj in cases:
        o = copy.deepcopy(obj)
        if res in ("statefulsets.apps", "replicasets.apps"):
            o["spec"]["template"]["spec"]["restartPolicy"] = "Always"
        forbidden(S["alice"].post(path, o), res, '%s "x" is forbidden: %s' % (res, msg))


def test_update_adding_violation_refused():
    d = h.deployment_manifest("web", image="busybox:1.36")
    h.expect_status(S["alice"].post(h.deployments_path("acme"), d), 201, "plain deployment")
    rc, out, err = kc("patch", "deployment", "web", "-p",
                      json.dumps({"spec": {"template": {"spec": {"hostIPC": True}}}}))
    h.check(rc != 0 and "violates tenant isolation: host namespaces (hostIPC=true)" in err,
            "patch adding hostIPC: rc=%s out=%s err=%s" % (rc, out, err))
    rc, out, err = kc("label", "deployment", "web", "team=a")
    h.eq(rc, 0, "a label on an allowed deployment (stderr %s)" % err)


def test_system_tenant_may():
    admin = S["admin"]
    p = pod("priv", hostNetwork=True, volumes=[{"name": "h", "hostPath": {"path": "/tmp"}}])
    p["spec"]["containers"][0]["securityContext"] = {"privileged": True, "capabilities": {"add": ["SYS_ADMIN"]}}
    h.expect_status(admin.post(h.pods_path("system"), p), 201, "privileged pod of the system tenant")
    rc, out, err = h.kubectl(["run", "sysp", "--image=busybox", "--privileged", "-n", "default"],
                             S["tp"].admin_kubeconfig())
    h.check(rc == 0 and "pod/sysp created" in out, "system admin's kubectl run --privileged: %s %s" % (out, err))
    # what counts is the pod's tenant, not who asks: the system admin cannot put one into acme
    p = pod("intoacme")
    p["spec"]["containers"][0]["securityContext"] = {"privileged": True}
    forbidden(admin.post(h.pods_path("acme"), p), "system admin's privileged pod in acme",
              'pods "intoacme" is forbidden: violates tenant isolation: privileged (container "c" must not set '
              'securityContext.privileged=true)')


def etcd_pod_key(tenant, name):
    suffix = "/%s/default/%s" % (tenant, name)
    keys = [k for k in S["etcd_tp"].keys("/registry/") if "/pods/" in k and k.endswith(suffix)]
    h.eq(len(keys), 1, "etcd key of pod %s/%s (%s)" % (tenant, name, keys))
    return keys[0]


def bind(tenant, name):
    body = {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": name},
            "target": {"apiVersion": "v1", "kind": "Node", "name": NODE}}
    for _ in range(50):
        r = S["admin"].post(h.pods_path(tenant, name=name) + "/binding", body)
        if r.status != 404:
            break
        time.sleep(0.1)
    h.check(r.status in (200, 201), "bind %s: %s %s" % (name, r.status, r.body[:300]))


def pod_status(tenant, name):
    r = S["admin"].get(h.pods_path(tenant, name=name))
    return r.json.get("status", {}) if r.status == 200 else {}


def test_kubelet_rejects_pod_that_arrives_anyway():
    """A pod made privileged in etcd behind the API server's back, then bound: the kubelet fails it."""
    e = S["etcd_tp"]
    h.expect_status(S["alice"].post(h.pods_path("acme"), pod("sneaky")), 201, "ordinary pod")
    key = etcd_pod_key("acme", "sneaky")
    kv = e.v3("kv/range", {"key": e._b64(key)})["kvs"][0]
    obj = json.loads(base64.b64decode(kv["value"]))
    obj["spec"]["containers"][0]["securityContext"] = {"privileged": True}
    obj["spec"]["hostPID"] = True
    e.v3("kv/put", {"key": e._b64(key), "value": e._b64(json.dumps(obj))})
    h.wait_until(lambda: S["admin"].get(h.pods_path("acme", name="sneaky")).json["spec"].get("hostPID"), 10,
                 "the TP sees the changed pod")
    bind("acme", "sneaky")
    h.wait_until(lambda: pod_status("acme", "sneaky").get("phase") == "Failed", 30, "sneaky pod Failed")
    st = pod_status("acme", "sneaky")
    h.eq(st.get("reason"), "TenantIsolation", "reason")
    h.eq(st.get("message"), 'Pod was rejected: violates tenant isolation: host namespaces (hostPID=true), '
         'privileged (container "c" must not set securityContext.privileged=true)', "message")
    uid = S["admin"].get(h.pods_path("acme", name="sneaky")).json["metadata"]["uid"]
    h.eq(glob.glob(os.path.join(S["kl_dir"], "runtime", "pods", uid, "containers", "*")), [],
         "no container was started for the rejected pod")
    # the system tenant's privileged pod (test_system_tenant_may) runs on the same kubelet
    bind("system", "priv")
    h.wait_until(lambda: pod_status("system", "priv").get("phase") == "Running", 30, "system pod Running")
    h.check(S["kl"].poll() is None, "kubelet still running")


h.run(globals())
