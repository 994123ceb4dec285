#!/usr/bin/python3
"""ursa-gateway with real processes: a gateway etcd, two tenant partitions (tp-1, tp-2, each with
its etcd), one resource manager (rm-az-1) and a gateway. Tenant creation is placed and recorded
in the gateway's etcd, kubectl works through the gateway for two tenants that cannot see each
other, unknown tenants get 404, nodes go to their resource manager, and a killed partition gets
a fast 503 for its tenants while the other partition's tenants go on working.

Run alone: URSA_BUILD_DIR=build /usr/bin/python3 tests/integration/test_gateway.py"""

import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import ursa_harness as h  # noqa: E402

GW_BIN = os.path.join(h.BUILD_DIR, "src", "gateway", "ursa-gateway")
RM_BIN = os.path.join(h.BUILD_DIR, "src", "resource-manager", "ursa-rm-apiserver")
S = {}


def partition_args(tp, binary, etcd, pid, port):
    return [binary, "--listen", "127.0.0.1:%d" % port, "--etcd-servers", etcd.endpoints, "--etcd-prefix", "/registry",
            "--token-auth-file", tp.token_file, "--token-signing-public-key", tp.signing_pub,
            "--partition-id", pid, "--tls-cert-file", tp.cert_file, "--tls-private-key-file", tp.key_file,
            "--log-level", "info"]


def wait_ok(client, path, timeout=60):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if client.get(path).status == 200:
                return
        except OSError:
            pass
        time.sleep(0.2)
    raise h.HarnessError("%s%s not ready" % (client, path))


def register(pid, kind, url, zone=None):
    args = [GW_BIN, "register-partition", "--etcd-servers", S["gw_etcd"].endpoints, "--id", pid, "--kind", kind,
            "--endpoints", url]
    if zone:
        args += ["--zone", zone]
    h.must_run(args)


def test_start_region():
    h.require_binary(GW_BIN, "ursa-gateway")
    h.require_binary(RM_BIN, "ursa-rm-apiserver")
    etcds = {n: h.Etcd(name=n) for n in ("tp1", "tp2", "rm", "gw")}
    for e in etcds.values():
        e.start()
    S.update({n + "_etcd": e for n, e in etcds.items()})
    tp = h.ApiServer(etcds["tp1"], partition_id="tp-1").start()
    S["tp1"] = tp
    d = tp.dir
    S["tp2_port"], S["rm_port"], S["gw_port"] = h.free_port(), h.free_port(), h.free_port()
    S["tp2"] = h.spawn(partition_args(tp, h.APISERVER_BIN, etcds["tp2"], "tp-2", S["tp2_port"]),
                       os.path.join(d, "tp2.log"))
    S["rm"] = h.spawn(partition_args(tp, RM_BIN, etcds["rm"], "rm-az-1", S["rm_port"]), os.path.join(d, "rm.log"))
    h._logs.extend([("tp-2", os.path.join(d, "tp2.log")), ("rm-az-1", os.path.join(d, "rm.log")),
                    ("gateway", os.path.join(d, "gw.log"))])
    wait_ok(h.Client("https://127.0.0.1:%d" % S["tp2_port"], tp.ca_file, tp.admin_token), "/readyz")
    wait_ok(h.Client("https://127.0.0.1:%d" % S["rm_port"], tp.ca_file, tp.admin_token), "/readyz")
    register("tp-1", "tp", tp.url)
    register("tp-2", "tp", "https://127.0.0.1:%d" % S["tp2_port"])
    register("rm-az-1", "rm", "https://127.0.0.1:%d" % S["rm_port"], "az-1")
    token = os.path.join(d, "gw.token")
    with open(token, "w") as f:
        f.write(tp.admin_token)
    S["gw"] = h.spawn([GW_BIN, "--listen", "127.0.0.1:%d" % S["gw_port"], "--etcd-servers", etcds["gw"].endpoints,
                       "--tls-cert-file", tp.cert_file, "--tls-private-key-file", tp.key_file,
                       "--token-auth-file", tp.token_file, "--token-signing-public-key", tp.signing_pub,
                       "--partition-ca-file", tp.ca_file, "--partition-token-file", token,
                       "--audit-log-path", os.path.join(d, "audit.log"), "--log-level", "debug"],
                      os.path.join(d, "gw.log"))
    S["gw_url"] = "https://127.0.0.1:%d" % S["gw_port"]
    S["admin"] = h.Client(S["gw_url"], tp.ca_file, tp.admin_token)
    wait_ok(S["admin"], "/readyz")
    assert S["admin"].get("/api/v1/namespaces/default/pods").status == 200


def kc(tenant, user, groups=()):
    args = [h.URSACTL_BIN, "kubeconfig", "--tenant", tenant, "--user", user, "--ttl", "0", "--server", S["gw_url"],
            "--signing-key", S["tp1"].signing_key, "--certificate-authority", S["tp1"].ca_file]
    if groups:
        args += ["--groups", ",".join(groups)]
    path = os.path.join(S["tp1"].dir, "gw-kc-%s-%s" % (tenant, user))
    with open(path, "w") as f:
        f.write(h.must_run(args))
    return path


def test_tenant_creation_is_placed_and_recorded():
    a = S["admin"]
    r = a.post("/api/v1/tenants", {"apiVersion": "v1", "kind": "Tenant", "metadata": {"name": "ta"}})
    assert r.status == 201, r
    r = a.post("/api/v1/tenants", {"apiVersion": "v1", "kind": "Tenant", "metadata": {
        "name": "tb", "annotations": {"ursa.io/partition": "tp-2"}}})
    assert r.status == 201, r
    keys = {}
    for k in S["gw_etcd"].keys("/ursa/gateway/tenants/"):
        keys[k] = k
    assert "/ursa/gateway/tenants/ta" in keys and "/ursa/gateway/tenants/tb" in keys, keys
    tb = h.Client("https://127.0.0.1:%d" % S["tp2_port"], S["tp1"].ca_file, S["tp1"].admin_token)
    assert tb.get("/api/v1/tenants/tb").status == 200
    assert S["tp1"].admin().get("/api/v1/tenants/tb").status == 404
    r = a.post("/api/v1/tenants", {"apiVersion": "v1", "kind": "Tenant", "metadata": {"name": "ta"}})
    assert r.status == 409, r
    listed = a.get("/api/v1/tenants")
    parts = {t["metadata"]["name"]: t["metadata"]["annotations"]["ursa.io/partition"] for t in listed.json["items"]}
    assert parts.get("ta") and parts.get("tb") == "tp-2", parts


def test_unknown_tenant_404():
    r = S["admin"].get("/api/v1/tenants/nosuch/namespaces/default/pods")
    assert r.status == 404 and r.json["kind"] == "Status", r


def test_kubectl_two_tenants_isolated():
    time.sleep(2)  # namespaces of new tenants (tenant controller absent: create default ourselves)
    for t in ("ta", "tb"):
        S["admin"].post("/api/v1/tenants/%s/namespaces" % t, {"apiVersion": "v1", "kind": "Namespace",
                                                              "metadata": {"name": "default"}})
    ka, kb = kc("ta", "alice"), kc("tb", "bob")
    pod = "apiVersion: v1\nkind: Pod\nmetadata: {name: p1}\nspec:\n  containers: [{name: c, image: busybox}]\n"
    for k in (ka, kb):
        rc, out, err = h.kubectl(["apply", "-f", "-"], k, input_text=pod)
        assert rc == 0, (out, err)
        rc, out, err = h.kubectl(["get", "pods"], k)
        assert rc == 0 and "p1" in out, (out, err)
    rc, out, err = h.kubectl(["get", "--raw", "/api/v1/tenants/tb/namespaces/default/pods"], ka)
    assert rc != 0 and "Forbidden" in err, (out, err)


def test_nodes_go_to_their_resource_manager():
    a = S["admin"]
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1", "labels": {
        "topology.kubernetes.io/zone": "az-1"}}}
    r = a.post("/api/v1/nodes", node)
    assert r.status == 201, r
    assert a.get("/api/v1/nodes/n1").status == 200
    names = [n["metadata"]["name"] for n in a.get("/api/v1/nodes").json["items"]]
    assert names == ["n1"], names
    user = h.Client(S["gw_url"], S["tp1"].ca_file, h.kubeconfig_token(kc("ta", "alice")))
    assert user.get("/api/v1/nodes").status == 403


def test_killed_partition_fails_fast():
    h.kill(S["tp2"])
    a = S["admin"]
    deadline = time.monotonic() + 10
    code = None
    while time.monotonic() < deadline:
        t0 = time.monotonic()
        code = a.get("/api/v1/tenants/tb/namespaces/default/pods").status
        took = time.monotonic() - t0
        if code == 503:
            break
        time.sleep(0.2)
    assert code == 503, code
    t0 = time.monotonic()
    assert a.get("/api/v1/tenants/tb/namespaces/default/pods").status == 503
    assert time.monotonic() - t0 < 0.5, took
    assert a.get("/api/v1/tenants/ta/namespaces/default/pods").status == 200


if __name__ == "__main__":
    h.run(globals())
