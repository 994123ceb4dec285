#!/usr/bin/python3
"""kubectl's typed generators (`kubectl create deployment|namespace|configmap|secret|
serviceaccount|service`) send Kubernetes protobuf bodies; the server decodes them and stores
the same objects the JSON path would.

Run alone: URSA_BUILD_DIR=build /usr/bin/python3 tests/e2e/test_kubectl_generators.py"""

import base64
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from ursa_harness import ApiServer, Etcd, check, eq, kubectl, run, uniq  # noqa: E402

S = {}


def setup():
    S["etcd"] = Etcd().start()
    S["api"] = ApiServer(S["etcd"]).start()
    admin = S["api"].admin_kubeconfig()
    S["tenant"] = uniq("gen")
    path = os.path.join(S["api"].dir, "tenant.yaml")
    with open(path, "w") as f:
        f.write("apiVersion: v1\nkind: Tenant\nmetadata:\n  name: %s\n" % S["tenant"])
    rc, out, err = kubectl(["create", "-f", path], admin)
    eq(rc, 0, "create tenant: %s" % err)
    S["kc"] = S["api"].kubeconfig(S["tenant"], "carol")


def ok(args):
    rc, out, err = kubectl(args, S["kc"])
    if rc != 0:
        raise AssertionError("kubectl %s: exit %d\nstdout: %s\nstderr: %s" % (" ".join(args), rc, out, err))
    return out


def get_json(*args):
    return json.loads(ok(["get"] + list(args) + ["-o", "json"]))


def test_create_deployment():
    eq(ok(["create", "deployment", "web", "--image=nginx:1.25", "--replicas=3"]).strip(),
       "deployment.apps/web created", "create deployment output")
    d = get_json("deployment", "web")
    eq(d["spec"]["replicas"], 3, "replicas")
    eq(d["spec"]["selector"], {"matchLabels": {"app": "web"}}, "selector")
    c = d["spec"]["template"]["spec"]["containers"]
    eq([(x["name"], x["image"]) for x in c], [("nginx", "nginx:1.25")], "containers")
    eq(d["metadata"]["tenant"], S["tenant"], "tenant of the stored object")
    eq(d["spec"]["strategy"]["type"], "RollingUpdate", "server-side defaults applied")


def test_create_namespace_configmap_secret():
    eq(ok(["create", "namespace", "team-a"]).strip(), "namespace/team-a created", "create namespace")
    eq(get_json("namespace", "team-a")["status"]["phase"], "Active", "namespace phase")
    ok(["create", "configmap", "cfg", "--from-literal=colour=blue", "--from-literal=size=2"])
    eq(get_json("configmap", "cfg")["data"], {"colour": "blue", "size": "2"}, "configmap data")
    ok(["create", "secret", "generic", "pw", "--from-literal=password=s3cret"])
    sec = get_json("secret", "pw")
    eq(base64.b64decode(sec["data"]["password"]).decode(), "s3cret", "secret data round trip")
    eq(sec["type"], "Opaque", "secret type")


def test_create_serviceaccount_and_service():
    eq(ok(["create", "serviceaccount", "robot"]).strip(), "serviceaccount/robot created", "create sa")
    ok(["create", "service", "clusterip", "web", "--tcp=80:8080"])
    svc = get_json("service", "web")
    eq([(p["port"], p["targetPort"]) for p in svc["spec"]["ports"]], [(80, 8080)], "service ports")


def test_garbage_protobuf_is_rejected():
    api = S["api"]
    coll = "/api/v1/tenants/%s/namespaces/default/configmaps" % S["tenant"]
    before = len(api.admin().get(coll).json["items"])
    r = api.admin().request("POST", "/api/v1/tenants/%s/namespaces/default/configmaps" % S["tenant"],
                            b"k8s\x00\x0a\xff\xff", content_type="application/vnd.kubernetes.protobuf")
    check(r.status == 400, "truncated protobuf body: status %r" % (r.status,))
    eq(len(api.admin().get(coll).json["items"]), before, "configmaps after a rejected body")


if __name__ == "__main__":
    run(globals())
