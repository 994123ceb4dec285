#!/usr/bin/python3
"""The stock kubectl on PATH (the dispatcher picks kubectl 1.32 from the server's /version)
against ursa-tp-apiserver: tenants as admin, then pods and deployments as a tenant user, watch,
delete, and isolation between two tenants.

Run alone: URSA_BUILD_DIR=build /usr/bin/python3 tests/e2e/test_kubectl_basics.py
The steps build on each other and run in file order."""

import json
import os
import re
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from ursa_harness import (ApiServer, Background, Etcd, check, eq, expect_status,  # noqa: E402
                          kubeconfig_token, kubectl, kubectl_args, run, uniq)

S = {}

TENANT_YAML = """apiVersion: v1
kind: Tenant
metadata:
  name: %s
spec:
  storageClusterId: "0"
"""

POD_YAML = """apiVersion: v1
kind: Pod
metadata:
  name: %s
  labels:
    app: web
spec:
  containers:
  - name: c
    image: nginx:1.25
"""

DEPLOY_YAML = """apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: %d
  selector:
    matchLabels:
      app: web-d
  template:
    metadata:
      labels:
        app: web-d
    spec:
      containers:
      - name: c
        image: nginx:1.25
"""


def write(name, text):
    path = os.path.join(S["api"].dir, name)
    with open(path, "w") as f:
        f.write(text)
    return path


def setup():
    S["etcd"] = Etcd().start()
    S["api"] = ApiServer(S["etcd"]).start()
    S["admin_kc"] = S["api"].admin_kubeconfig()
    S["t1"] = uniq("kc")
    S["t2"] = uniq("kc-other")


def k(args, kc=None, timeout=60):
    """kubectl as the tenant user (or the given kubeconfig); returns (rc, out, err)."""
    return kubectl(args, kc or S["user_kc"], timeout)


def ok(args, kc=None, timeout=60):
    rc, out, err = k(args, kc, timeout)
    if rc != 0:
        raise AssertionError("kubectl %s: exit %d\nstdout: %s\nstderr: %s" % (" ".join(args), rc, out, err))
    return out


def table(out):
    """kubectl's column output: (header words, {first cell: row words})."""
    lines = [ln for ln in out.splitlines() if ln.strip()]
    check(lines, "empty kubectl output")
    return lines[0], {ln.split()[0]: ln.split() for ln in lines[1:]}


def test_version():
    out = ok(["version", "-o", "json"], S["admin_kc"])
    v = json.loads(out)
    sv = v.get("serverVersion") or {}
    eq((sv.get("major"), sv.get("minor")), ("1", "32"), "server major/minor")
    check((v.get("clientVersion") or {}).get("gitVersion", "").startswith("v1.32."),
          "the dispatcher did not run kubectl 1.32: %r" % v.get("clientVersion"))
    out = ok(["version"], S["admin_kc"])
    check(re.search(r"^Server Version: v1\.32", out, re.M), "kubectl version output: %r" % out)


def test_api_resources():
    out = ok(["api-resources"], S["admin_kc"])
    header, rows = table(out)
    check(re.match(r"^NAME\s+SHORTNAMES\s+APIVERSION\s+NAMESPACED\s+KIND$", header), "header: %r" % header)
    # pods are listed twice, as with metrics-server: core pods and metrics.k8s.io PodMetrics
    pod_rows = [line.split() for line in out.splitlines()[1:] if line.split()[:1] == ["pods"]]
    check(["pods", "po", "v1", "true", "Pod"] in pod_rows, "core pods row: %r" % pod_rows)
    check(["pods", "metrics.k8s.io/v1beta1", "true", "PodMetrics"] in pod_rows, "PodMetrics row: %r" % pod_rows)
    eq(rows.get("deployments"), ["deployments", "deploy", "apps/v1", "true", "Deployment"], "deployments row")
    tr = rows.get("tenants")
    check(tr is not None and tr[-2:] == ["false", "Tenant"] and "v1" in tr, "tenants row: %r" % tr)
    check("namespaces" in rows, "namespaces missing from api-resources")


def test_create_tenants_as_admin():
    for t in (S["t1"], S["t2"]):
        out = ok(["create", "-f", write(t + ".yaml", TENANT_YAML % t)], S["admin_kc"])
        eq(out.strip(), "tenant/%s created" % t, "kubectl create -f tenant output")
    header, rows = table(ok(["get", "tenants"], S["admin_kc"]))
    check(header.split()[0] == "NAME" and "AGE" in header.split(), "get tenants header: %r" % header)
    check(S["t1"] in rows and S["t2"] in rows, "get tenants rows: %r" % list(rows))
    S["user_kc"] = S["api"].kubeconfig(S["t1"], "alice")
    S["other_kc"] = S["api"].kubeconfig(S["t2"], "bob")


def test_tenant_namespaces_exist():
    def nss():
        rc, out, _ = k(["get", "namespaces", "-o", "name"])
        return rc == 0 and sorted(out.split())
    deadline = time.monotonic() + 10
    got = nss()
    while got != ["namespace/default", "namespace/kube-public", "namespace/kube-system"] \
            and time.monotonic() < deadline:
        time.sleep(0.3)
        got = nss()
    eq(got, ["namespace/default", "namespace/kube-public", "namespace/kube-system"],
       "namespaces of a new tenant, seen by its user")


def test_create_pod():
    out = ok(["create", "-f", write("pod.yaml", POD_YAML % "web-1")])
    eq(out.strip(), "pod/web-1 created", "kubectl create -f pod.yaml")


def test_get_pods():
    header, rows = table(ok(["get", "pods"]))
    eq(header.split(), ["NAME", "READY", "STATUS", "RESTARTS", "AGE"], "get pods header")
    row = rows.get("web-1")
    check(row is not None, "web-1 missing from get pods: %r" % rows)
    eq(row[1:4], ["0/1", "Pending", "0"], "READY STATUS RESTARTS of web-1")
    check(re.match(r"^\d+[smhd]", row[4]), "AGE of web-1: %r" % row[4])


def test_get_pods_wide():
    header, rows = table(ok(["get", "pods", "-o", "wide"]))
    check(re.match(r"^NAME\s+READY\s+STATUS\s+RESTARTS\s+AGE\s+IP\s+NODE\s+NOMINATED NODE\s+READINESS GATES$",
                   header), "get pods -o wide header: %r" % header)
    row = rows.get("web-1")
    check(row is not None, "web-1 missing from get pods -o wide")
    eq(row[5:], ["<none>"] * 4, "IP NODE NOMINATED-NODE READINESS-GATES of an unscheduled pod")


def test_apply_deployment_created_configured_unchanged():
    path = write("deployment.yaml", DEPLOY_YAML % 1)
    eq(ok(["apply", "-f", path]).strip(), "deployment.apps/web created", "first apply")
    path = write("deployment.yaml", DEPLOY_YAML % 2)
    eq(ok(["apply", "-f", path]).strip(), "deployment.apps/web configured", "apply with replicas 2")
    eq(ok(["apply", "-f", path]).strip(), "deployment.apps/web unchanged", "apply of the same manifest")
    eq(ok(["get", "deployment", "web", "-o", "jsonpath={.spec.replicas}"]).strip(), "2", "replicas after apply")


def test_get_deploy():
    header, rows = table(ok(["get", "deploy"]))
    eq(header.split(), ["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE"], "get deploy header")
    row = rows.get("web")
    check(row is not None, "web missing from get deploy: %r" % rows)
    check(re.match(r"^\d+/2$", row[1]), "READY of web: %r" % row[1])


def test_describe_pod():
    out = ok(["describe", "pod", "web-1"])
    for pat in (r"^Name:\s+web-1$", r"^Namespace:\s+default$", r"^Status:\s+Pending$", r"^Containers:$",
                r"^\s+c:$", r"^\s+Image:\s+nginx:1\.25$", r"^Labels:\s+app=web$"):
        check(re.search(pat, out, re.M), "describe pod output lacks %r:\n%s" % (pat, out))


def test_label_pod():
    eq(ok(["label", "pod", "web-1", "tier=fe"]).strip(), "pod/web-1 labeled", "kubectl label")
    eq(ok(["get", "pod", "web-1", "-o", "jsonpath={.metadata.labels.tier}"]).strip(), "fe", "label tier")
    eq(ok(["get", "pods", "-l", "tier=fe", "-o", "name"]).split(), ["pod/web-1"], "get pods -l tier=fe")


def test_scale_deployment():
    eq(ok(["scale", "deployment", "web", "--replicas=3"]).strip(), "deployment.apps/web scaled", "kubectl scale")
    eq(ok(["get", "deployment", "web", "-o", "jsonpath={.spec.replicas}"]).strip(), "3",
       "spec.replicas after scale")


def test_watch_sees_new_pod():
    w = Background(kubectl_args(["get", "pods", "-w"], S["user_kc"]))
    try:
        first = w.wait_for(lambda ln: ln.startswith("web-1 "), 20)
        check(first is not None, "get pods -w never listed web-1; output %r, stderr %r" % (w.output(), w.err))
        out = ok(["create", "-f", write("pod2.yaml", POD_YAML % "web-2")])
        eq(out.strip(), "pod/web-2 created", "create web-2")
        line = w.wait_for(lambda ln: ln.startswith("web-2 "), 15)
        check(line is not None, "web-2 did not appear in get pods -w; output %r, stderr %r" % (w.output(), w.err))
        check(re.search(r"\bPending\b", line), "watch line of web-2: %r" % line)
    finally:
        lines = w.stop()
    headers = [ln for ln in lines if ln.startswith("NAME ")]
    eq(len(headers), 1, "header lines in get pods -w output %r" % lines)


def test_delete_pod_and_deployment():
    eq(ok(["delete", "pod", "web-1"], timeout=90).strip(), 'pod "web-1" deleted', "kubectl delete pod")
    eq(ok(["delete", "deployment", "web"], timeout=90).strip(), 'deployment.apps "web" deleted',
       "kubectl delete deployment")
    rc, out, err = k(["get", "pod", "web-1"])
    check(rc != 0 and 'Error from server (NotFound): pods "web-1" not found' in err,
          "get of a deleted pod: rc %d, stdout %r, stderr %r" % (rc, out, err))
    header, rows = table(ok(["get", "pods"]))
    eq(sorted(rows), ["web-2"], "pods left")


def test_second_tenant_is_isolated():
    for res in ("pods", "deployments"):
        rc, out, err = k(["get", res], S["other_kc"])
        eq((rc, out.strip()), (0, ""), "tenant %s's user: get %s" % (S["t2"], res))
        check("No resources found in default namespace." in err, "get %s stderr: %r" % (res, err))
    path = "/api/v1/tenants/%s/namespaces/default/pods" % S["t1"]
    bob = S["api"].client(kubeconfig_token(S["other_kc"]))
    expect_status(bob.get(path), 403, "another tenant's user lists %s" % path, "Forbidden")
    expect_status(bob.get(path + "/web-2"), 403, "another tenant's user gets a pod of %s" % S["t1"], "Forbidden")
    rc, out, err = k(["get", "--raw", path], S["other_kc"])
    check(rc != 0 and "Forbidden" in err, "kubectl get --raw %s as bob: rc %d, stdout %r, stderr %r"
          % (path, rc, out, err))
    eq(ok(["get", "pods", "-o", "name"]).split(), ["pod/web-2"], "the first tenant still sees its pod")


if __name__ == "__main__":
    run(globals())
