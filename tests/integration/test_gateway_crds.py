#!/usr/bin/python3
"""CustomResourceDefinitions behind the gateway: two tenant partitions (tp-1, tp-2, each with its
etcd) and a gateway (mirroring every second). Tenant ta lives on tp-1, tb on tp-2.

- discovery is per tenant: ta's CRD group is in ta's /apis (legacy and aggregated) and
  /apis/<group>/<version>, not in tb's (404 there), and tb's own group (tp-2: not the partition
  that "any partition" would pick) in tb's only; /openapi/v3 lists each tenant's group for that
  tenant only, ta's document is served (with a hash-pinned URL that answers immutable), and the
  gateway's entity tags give 304s;
- the system tenant's CRDs are mirrored: one created through the gateway (it lands on the system
  tenant's partition, tp-1) appears in tenant system of tp-2 (read there directly) marked
  ursa.io/mirrored-from: tp-1, its group shows in tb's discovery, a change of its spec reaches
  the copy, and deleting the original deletes the copy.

Run alone: URSA_BUILD_DIR=build /usr/bin/python3 tests/integration/test_gateway_crds.py"""

import json
import os
import secrets
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import ursa_harness as h  # noqa: E402

GW_BIN = os.path.join(h.BUILD_DIR, "src", "gateway", "ursa-gateway")
CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
SYSTEM_CRDS = "/apis/apiextensions.k8s.io/v1/tenants/system/customresourcedefinitions"
AGGREGATED = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
S = {}


def crd(group, plural, kind, scope="Namespaced", extra_prop=None):
    props = {"spec": {"type": "object", "properties": {"size": {"type": "integer"}}}}
    if extra_prop:
        props["spec"]["properties"][extra_prop] = {"type": "string"}
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "%s.%s" % (plural, group)},
            "spec": {"group": group, "scope": scope,
                     "names": {"plural": plural, "singular": kind.lower(), "kind": kind},
                     "versions": [{"name": "v1", "served": True, "storage": True,
                                   "schema": {"openAPIV3Schema": {"type": "object", "properties": props}}}]}}


def wait_ok(client, path, timeout=60):
    h.wait_until(lambda: _status(client, path) == 200, timeout, "%s ready" % path)


def _status(client, path, **kw):
    try:
        return client.get(path, **kw).status
    except OSError:
        return 0


def register(pid, url):
    tp = S["tp1"]
    args = [h.URSACTL_BIN, "register", "--region-file", os.path.join(tp.dir, "region.json"),
            "--signing-key", tp.signing_key, "--certificate-authority", tp.ca_file,
            "--gateway-etcd", S["gw_etcd"].endpoints, "--kind", "tp", "--name", pid, "--endpoints", url]
    rc, out, err = h.run_cmd(args, 60)
    assert rc == 0 and " %s recorded" % pid in out, (rc, out, err)


def user(tenant, name):
    tp = S["tp1"]
    args = [h.URSACTL_BIN, "kubeconfig", "--tenant", tenant, "--user", name, "--ttl", "0", "--server", S["gw_url"],
            "--signing-key", tp.signing_key, "--certificate-authority", tp.ca_file]
    path = os.path.join(tp.dir, "gw-kc-%s-%s" % (tenant, name))
    with open(path, "w") as f:
        f.write(h.must_run(args))
    return h.Client(S["gw_url"], tp.ca_file, h.kubeconfig_token(path))


def setup():
    h.require_binary(GW_BIN, "ursa-gateway")
    etcds = {n: h.Etcd(name=n).start() for n in ("tp1", "tp2", "gw")}
    S["gw_etcd"] = etcds["gw"]
    idkey = os.path.join(h.make_tmpdir("idkey"), "identity.key")
    with open(idkey, "w") as f:
        f.write(secrets.token_hex(32))
    tp1 = h.ApiServer(etcds["tp1"], partition_id="tp-1", extra_args=["--identity-key-file", idkey]).start()
    S["tp1"] = tp1
    d = tp1.dir
    port2 = h.free_port()
    S["tp2_proc"] = h.spawn([h.APISERVER_BIN, "--listen", "127.0.0.1:%d" % port2, "--etcd-servers",
                             etcds["tp2"].endpoints, "--etcd-prefix", "/registry",
                             "--token-auth-file", tp1.token_file, "--token-signing-public-key", tp1.signing_pub,
                             "--partition-id", "tp-2", "--tls-cert-file", tp1.cert_file,
                             "--tls-private-key-file", tp1.key_file, "--identity-key-file", idkey,
                             "--log-level", "info"], os.path.join(d, "tp2.log"))
    h._logs.extend([("tp-2", os.path.join(d, "tp2.log")), ("gateway", os.path.join(d, "gw.log"))])
    S["tp2"] = h.Client("https://127.0.0.1:%d" % port2, tp1.ca_file, tp1.admin_token)
    wait_ok(S["tp2"], "/readyz")
    register("tp-1", tp1.url)
    register("tp-2", "https://127.0.0.1:%d" % port2)
    token = os.path.join(d, "gw.token")
    with open(token, "w") as f:
        f.write(tp1.admin_token)
    gw_port = h.free_port()
    S["gw"] = h.spawn([GW_BIN, "--etcd-servers", etcds["gw"].endpoints, "--listen", "127.0.0.1:%d" % gw_port,
                       "--tls-cert-file", tp1.cert_file, "--tls-private-key-file", tp1.key_file,
                       "--token-auth-file", tp1.token_file, "--token-signing-public-key", tp1.signing_pub,
                       "--partition-ca-file", tp1.ca_file, "--partition-token-file", token,
                       "--identity-key-file", idkey, "--crd-mirror-seconds", "1", "--log-level", "debug"],
                      os.path.join(d, "gw.log"))
    S["gw_url"] = "https://127.0.0.1:%d" % gw_port
    S["admin"] = h.Client(S["gw_url"], tp1.ca_file, tp1.admin_token)
    wait_ok(S["admin"], "/readyz")
    for name, part in (("ta", "tp-1"), ("tb", "tp-2")):
        r = S["admin"].post("/api/v1/tenants", {"apiVersion": "v1", "kind": "Tenant", "metadata": {
            "name": name, "annotations": {"ursa.io/partition": part}}})
        h.expect_status(r, 201, "create tenant %s on %s" % (name, part))
        # the tenant's administrators (ursactl's default group) as its controller manager would bind them
        r = S["admin"].post("/apis/rbac.authorization.k8s.io/v1/tenants/%s/clusterrolebindings" % name, {
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
            "metadata": {"name": "ursa:tenant-admins"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "ursa:tenant-admins"}]})
        h.check(r.status in (201, 409), "bind %s's administrators: %r" % (name, r))
    S["ta"], S["tb"] = user("ta", "alice"), user("tb", "bob")


def groups(client, accept=None):
    r = client.get("/apis", headers={"Accept": accept} if accept else None)
    h.expect_status(r, 200, "GET /apis")
    if accept:
        return {g["metadata"]["name"] for g in r.json["items"]}
    return {g["name"] for g in r.json["groups"]}


def test_discovery_per_tenant():
    ta, tb = S["ta"], S["tb"]
    h.expect_status(ta.post(CRDS, crd("stable.example.com", "crontabs", "CronTab")), 201, "ta creates a CRD")
    h.wait_until(lambda: _status(ta, "/apis/stable.example.com/v1") == 200, 30, "ta's CRD served")
    r = ta.get("/apis/stable.example.com/v1")
    h.eq({x["name"] for x in r.json["resources"]} >= {"crontabs"}, True, "ta's group version lists crontabs")
    assert "stable.example.com" in groups(ta), groups(ta)
    assert "stable.example.com" in groups(ta, AGGREGATED)
    assert "apps" in groups(tb)
    assert "stable.example.com" not in groups(tb), groups(tb)
    assert "stable.example.com" not in groups(tb, AGGREGATED)
    h.eq(_status(tb, "/apis/stable.example.com/v1"), 404, "tb: no such group version")
    # tb (on tp-2, not the first partition) sees its own group: its partition answers, not any one
    h.expect_status(tb.post(CRDS, crd("tb.example.com", "widgets", "Widget")), 201, "tb creates a CRD")
    h.wait_until(lambda: _status(tb, "/apis/tb.example.com/v1") == 200, 30, "tb's CRD served")
    assert "tb.example.com" in groups(tb), groups(tb)
    assert "tb.example.com" in groups(tb, AGGREGATED)
    assert "tb.example.com" not in groups(ta), groups(ta)
    h.eq(_status(ta, "/apis/tb.example.com/v1"), 404, "ta: no such group version")
    # revalidation: the gateway's entity tag gives a 304, and a new CRD changes the document at once
    r = ta.get("/apis")
    tag = r.header("ETag")
    assert tag, r
    h.eq(ta.get("/apis", headers={"If-None-Match": tag}).status, 304, "ta /apis with its tag")
    h.expect_status(ta.post(CRDS, crd("other.example.com", "gizmos", "Gizmo")), 201, "ta creates a second CRD")
    h.wait_until(lambda: "other.example.com" in groups(ta), 30, "ta's second group in discovery")
    r = ta.get("/apis", headers={"If-None-Match": tag})
    h.eq(r.status, 200, "ta /apis after a change")
    assert "other.example.com" not in groups(tb)


def test_openapi_per_tenant():
    ta, tb = S["ta"], S["tb"]
    key = "apis/stable.example.com/v1"
    h.wait_until(lambda: key in ta.get("/openapi/v3").json.get("paths", {}), 30, "ta's group in /openapi/v3")
    idx = ta.get("/openapi/v3").json["paths"]
    tb_paths = tb.get("/openapi/v3").json.get("paths", {})
    assert key not in tb_paths
    assert "apis/tb.example.com/v1" in tb_paths and "apis/tb.example.com/v1" not in idx, (list(tb_paths), list(idx))
    url = idx[key]["serverRelativeURL"]
    r = ta.get(url)
    h.expect_status(r, 200, "ta's group version document")
    assert "immutable" in (r.header("Cache-Control") or ""), r.header("Cache-Control")
    assert "crontab" in json.dumps(r.json).lower()
    h.eq(_status(tb, "/openapi/v3/" + key), 404, "tb: no such document")
    r = ta.get("/openapi/v2")
    h.expect_status(r, 200, "ta /openapi/v2")
    tag = r.header("ETag")
    h.eq(ta.get("/openapi/v2", headers={"If-None-Match": tag}).status, 304, "ta /openapi/v2 with its tag")


def test_system_crds_mirrored():
    admin, tb = S["admin"], S["tb"]
    name = "gadgets.sys.example.com"
    h.expect_status(admin.post(CRDS, crd("sys.example.com", "gadgets", "Gadget")), 201, "system CRD")
    # stored on the system tenant's partition (tp-1), copied into tp-2's tenant system
    h.expect_status(S["tp1"].admin().get(SYSTEM_CRDS + "/" + name), 200, "the original on tp-1")
    h.wait_until(lambda: _status(S["tp2"], SYSTEM_CRDS + "/" + name) == 200, 30, "the copy on tp-2")
    copy = S["tp2"].get(SYSTEM_CRDS + "/" + name).json
    h.eq(copy["metadata"]["annotations"].get("ursa.io/mirrored-from"), "tp-1", "the copy's mark")
    h.eq(copy["spec"]["group"], "sys.example.com", "the copy's spec")
    # served to tenants of tp-2
    h.wait_until(lambda: "sys.example.com" in groups(tb), 30, "the system group in tb's discovery")
    h.eq(_status(tb, "/apis/sys.example.com/v1"), 200, "tb: the system group version")
    # a change of the original reaches the copy
    orig = admin.get(CRDS + "/" + name).json
    orig["metadata"].setdefault("labels", {})["tier"] = "addon"
    h.expect_status(admin.put(CRDS + "/" + name, orig), 200, "label the original")
    h.wait_until(lambda: S["tp2"].get(SYSTEM_CRDS + "/" + name).json["metadata"].get("labels", {}).get("tier")
                 == "addon", 30, "the label on the copy")
    # only one copy and only of the system tenant's CRDs: ta's stay on tp-1
    names = {c["metadata"]["name"] for c in S["tp2"].get(SYSTEM_CRDS).json["items"]}
    h.eq(names, {name}, "tenant system's CRDs on tp-2")
    # the original deleted: the copy goes (or is being deleted, its custom resources first)
    h.eq(admin.delete(CRDS + "/" + name).status in (200, 202), True, "delete the original")

    def copy_going():
        r = S["tp2"].get(SYSTEM_CRDS + "/" + name)
        return r.status == 404 or (r.status == 200 and r.json["metadata"].get("deletionTimestamp"))
    h.wait_until(copy_going, 30, "the copy deleted")


if __name__ == "__main__":
    h.run(globals())
