#!/usr/bin/python3
"""Image pull secrets as the kubelet reads them: a pod's imagePullSecrets fetched from its tenant
partition with its node's credential (src/kubelet/secrets.c, through tests/integration/
pullsecret_probe) and the registry entry picked for an image (src/kubelet/images.c); and the
narrow rule that lets a node credential read secrets at all (src/common/apiserver/nodesecrets.c):
GET only, only secrets that a pod bound to that very node names.

Run alone: URSA_BUILD_DIR=build /usr/bin/python3 tests/integration/test_pull_secrets.py"""

import base64
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from ursa_harness import (BUILD_DIR, ApiServer, Etcd, HarnessError, check, create_tenant, eq,  # noqa: E402
                          expect_status, pod_manifest, pods_path, run, run_cmd, uniq)

S = {}
PROBE = os.path.join(BUILD_DIR, "tests", "pullsecret_probe")
REG = "registry.example:5000"


def b64(s):
    return base64.b64encode(s.encode()).decode()


def secrets_path(ns="default", name=None):
    p = "/api/v1/tenants/%s/namespaces/%s/secrets" % (S["t"], ns)
    return p + "/" + name if name else p


def docker_secret(name, auths, legacy=False):
    if legacy:
        return {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name}, "type": "kubernetes.io/dockercfg",
                "data": {".dockercfg": b64(json.dumps(auths))}}
    return {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name},
            "type": "kubernetes.io/dockerconfigjson", "data": {".dockerconfigjson": b64(json.dumps({"auths": auths}))}}


def node_client(node):
    return S["api"].user_client("system", "system:node:" + node, ("system:nodes",))


def node_kubeconfig(node):
    return S["api"].kubeconfig("system", "system:node:" + node, ("system:nodes",))


def probe(kubeconfig, pod_path, *images):
    if not os.access(PROBE, os.X_OK):
        raise HarnessError("pullsecret_probe not built at %s" % PROBE)
    rc, out, err = run_cmd([PROBE, kubeconfig, pod_path] + list(images), timeout=30)
    eq(rc, 0, "pullsecret_probe exit (stderr: %s)" % err)
    return json.loads(out)


def setup():
    S["etcd"] = Etcd().start()
    S["api"] = ApiServer(S["etcd"]).start()
    S["admin"] = S["api"].admin()
    S["t"] = uniq("ps")
    create_tenant(S["admin"], S["t"])
    S["node"], S["other_node"] = uniq("node-a"), uniq("node-b")
    a = S["admin"]
    expect_status(a.post(secrets_path(), docker_secret("regcred", {
        "https://" + REG: {"username": "ignored", "password": "ignored", "auth": b64("alice:pw1")}})), 201,
        "create the dockerconfigjson secret")
    expect_status(a.post(secrets_path(), docker_secret("legacy", {
        "quay.io/team": {"username": "bob", "password": "pw2"}}, legacy=True)), 201, "create the dockercfg secret")
    expect_status(a.post(secrets_path(), docker_secret("unrelated", {REG: {"username": "eve", "password": "x"}})),
                  201, "create a secret no pod names")
    pod = pod_manifest(uniq("pull"), image=REG + "/team/app:1")
    pod["spec"]["imagePullSecrets"] = [{"name": "regcred"}, {"name": "gone"}, {"name": "legacy"}]
    r = a.post(pods_path(S["t"]), pod)
    expect_status(r, 201, "create the pod")
    S["pod"] = pods_path(S["t"], name=r.json["metadata"]["name"])
    name = r.json["metadata"]["name"]
    expect_status(a.post(S["pod"] + "/binding", {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": name},
                                                 "target": {"kind": "Node", "name": S["node"]}}), 201, "bind the pod")


def test_kubelet_fetches_pull_secrets_and_picks_the_registry():
    out = probe(node_kubeconfig(S["node"]), S["pod"], REG + "/team/app:1", "quay.io/team/x", "quay.io/other/x",
                "registry.other:5000/team/app", "busybox")
    eq(out["fetched"], 2, "secrets fetched (regcred, legacy): %r" % out)
    eq(out["missing"], 1, "secrets missing (gone)")
    eq(out["auth"][REG + "/team/app:1"],
       {"server": "https://" + REG, "username": "alice", "password": "pw1"},
       "credentials for the secret's registry come from its auth field")
    eq(out["auth"]["quay.io/team/x"], {"server": "quay.io/team", "username": "bob", "password": "pw2"},
       "the dockercfg secret's entry for its path prefix")
    eq(out["auth"]["quay.io/other/x"], None, "no credentials outside the entry's path")
    eq(out["auth"]["registry.other:5000/team/app"], None, "no credentials for another registry")
    eq(out["auth"]["busybox"], None, "no credentials for Docker Hub")


def test_other_node_gets_no_secrets():
    out = probe(node_kubeconfig(S["other_node"]), S["pod"], REG + "/team/app:1")
    eq(out["fetched"], 0, "a node the pod is not bound to fetches none: %r" % out)
    eq(out["missing"], 3, "every secret refused")
    eq(out["auth"][REG + "/team/app:1"], None, "so no credentials")


def test_node_secret_reads_are_narrow():
    me = node_client(S["node"])
    expect_status(me.get(secrets_path(name="regcred")), 200, "node GETs a secret its pod names")
    expect_status(me.get(secrets_path(name="unrelated")), 403, "node GETs a secret no pod of it names", "Forbidden")
    expect_status(me.get(secrets_path()), 403, "node lists secrets", "Forbidden")
    expect_status(me.get(secrets_path() + "?watch=1"), 403, "node watches secrets", "Forbidden")
    expect_status(me.get("/api/v1/tenants/all/secrets"), 403, "node lists all tenants' secrets", "Forbidden")
    expect_status(me.get("/api/v1/tenants/%s/namespaces/other/secrets/regcred" % S["t"]), 403,
                  "node GETs a same-named secret in another namespace", "Forbidden")
    expect_status(node_client(S["other_node"]).get(secrets_path(name="regcred")), 403,
                  "another node GETs the secret", "Forbidden")
    zone = S["api"].user_client("system", "kubelet-zone", ("system:nodes",))
    expect_status(zone.get(secrets_path(name="regcred")), 403,
                  "a node credential that names no node GETs the secret", "Forbidden")
    r = me.request("PUT", secrets_path(name="regcred"), S["admin"].get(secrets_path(name="regcred")).json)
    expect_status(r, 403, "node updates the secret", "Forbidden")
    # Once the pod is gone, so is the node's access.
    expect_status(S["admin"].request("DELETE", S["pod"] + "?gracePeriodSeconds=0", None), 200, "delete the pod")
    check(S["admin"].get(S["pod"]).status in (200, 404), "pod read after delete")
    if S["admin"].get(S["pod"]).status == 200:  # graceful: the node's final delete removes it
        expect_status(me.request("DELETE", S["pod"], None), 200, "node's final delete")
    expect_status(me.get(secrets_path(name="regcred")), 403, "node GETs the secret after its pod went", "Forbidden")


if __name__ == "__main__":
    run(globals())
