#!/usr/bin/python3
"""ursa-gateway with real processes: a gateway etcd, two tenant partitions (tp-1, tp-2, each with
its etcd), one resource manager (rm-az-1) and a gateway. Tenant creation is placed and recorded
in the gateway's etcd, kubectl works through the gateway for two tenants that cannot see each
other, unknown tenants get 404, nodes go to their resource manager, and a killed partition gets
a fast 503 for its tenants while the other partition's tenants go on working.

Streams: with a second resource manager (rm-az-2), node lists carry a composite resourceVersion,
`kubectl get nodes -w` and python3-kubernetes list-then-watch see nodes of both resource managers,
a watch resumed from an event's composite resourceVersion sees only later events, malformed ones
get 400, a client that leaves frees its upstream transfers (gateway /metrics), and 200 concurrent
watches through one gateway each get their event. A client that leaves while its plain request
waits on a (stand-in, slow) partition costs nothing once the partition answers.

Run alone: URSA_BUILD_DIR=build /usr/bin/python3 tests/integration/test_gateway.py"""

import base64
import json
import os
import re
import secrets
import signal
import socket
import sys
import threading
import time
import urllib.parse

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import ursa_harness as h  # noqa: E402

GW_BIN = os.path.join(h.BUILD_DIR, "src", "gateway", "ursa-gateway")
RM_BIN = os.path.join(h.BUILD_DIR, "src", "resource-manager", "ursa-rm-apiserver")
S = {}


def partition_args(tp, binary, etcd, pid, port):
    return [binary, "--listen", "127.0.0.1:%d" % port, "--etcd-servers", etcd.endpoints, "--etcd-prefix", "/registry",
            "--token-auth-file", tp.token_file, "--token-signing-public-key", tp.signing_pub,
            "--partition-id", pid, "--tls-cert-file", tp.cert_file, "--tls-private-key-file", tp.key_file,
            "--identity-key-file", S["idkey"], "--log-level", "info"]


def register(pid, kind, url, zone=None):
    """`ursactl register --gateway-etcd`: the partition goes into a region file, the registries of
    the partitions of the other kind, and the gateway's etcd (what the gateway follows)."""
    tp = S["tp1"]
    args = [h.URSACTL_BIN, "register", "--region-file", os.path.join(tp.dir, "region.json"),
            "--signing-key", tp.signing_key, "--certificate-authority", tp.ca_file,
            "--gateway-etcd", S["gw_etcd"].endpoints, "--kind", kind, "--name", pid, "--endpoints", url]
    if zone:
        args += ["--zone", zone]
    rc, out, err = h.run_cmd(args, 60)
    assert rc == 0 and " %s recorded" % pid in out, (rc, out, err)


def test_start_region():
    h.require_binary(GW_BIN, "ursa-gateway")
    h.require_binary(RM_BIN, "ursa-rm-apiserver")
    etcds = {n: h.Etcd(name=n) for n in ("tp1", "tp2", "rm", "gw")}
    for e in etcds.values():
        e.start()
    S.update({n + "_etcd": e for n, e in etcds.items()})
    # Gateways and partitions share an identity key: partitions learn the caller from the
    # gateway's assertion, not from a forwarded token.
    S["idkey"] = os.path.join(h.make_tmpdir("idkey"), "identity.key")
    with open(S["idkey"], "w") as f:
        f.write(secrets.token_hex(32))
    tp = h.ApiServer(etcds["tp1"], partition_id="tp-1", extra_args=["--identity-key-file", S["idkey"]]).start()
    S["tp1"] = tp
    d = tp.dir
    S["tp2_port"], S["rm_port"], S["gw_port"] = h.free_port(), h.free_port(), h.free_port()
    S["tp2"] = h.spawn(partition_args(tp, h.APISERVER_BIN, etcds["tp2"], "tp-2", S["tp2_port"]),
                       os.path.join(d, "tp2.log"))
    S["rm"] = h.spawn(partition_args(tp, RM_BIN, etcds["rm"], "rm-az-1", S["rm_port"]), os.path.join(d, "rm.log"))
    h._logs.extend([("tp-2", os.path.join(d, "tp2.log")), ("rm-az-1", os.path.join(d, "rm.log")),
                    ("gateway", os.path.join(d, "gw.log"))])
    h.wait_ok(h.Client("https://127.0.0.1:%d" % S["tp2_port"], tp.ca_file, tp.admin_token), "/readyz")
    h.wait_ok(h.Client("https://127.0.0.1:%d" % S["rm_port"], tp.ca_file, tp.admin_token), "/readyz")
    register("tp-1", "tp", tp.url)
    register("tp-2", "tp", "https://127.0.0.1:%d" % S["tp2_port"])
    register("rm-az-1", "rm", "https://127.0.0.1:%d" % S["rm_port"], "az-1")
    token = os.path.join(d, "gw.token")
    with open(token, "w") as f:
        f.write(tp.admin_token)
    S["gw_args"] = [GW_BIN, "--etcd-servers", etcds["gw"].endpoints,
                    "--tls-cert-file", tp.cert_file, "--tls-private-key-file", tp.key_file,
                    "--token-auth-file", tp.token_file, "--token-signing-public-key", tp.signing_pub,
                    "--partition-ca-file", tp.ca_file, "--partition-token-file", token,
                    "--identity-key-file", S["idkey"],
                    "--audit-log-path", os.path.join(d, "audit.log"), "--log-level", "debug"]
    S["gw"] = h.spawn(S["gw_args"] + ["--listen", "127.0.0.1:%d" % S["gw_port"]], os.path.join(d, "gw.log"))
    S["gw_url"] = "https://127.0.0.1:%d" % S["gw_port"]
    S["admin"] = h.Client(S["gw_url"], tp.ca_file, tp.admin_token)
    h.wait_ok(S["admin"], "/readyz")
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


def gw_record(name):
    """The gateway etcd's record of tenant name (decoded), or None."""
    e = S["gw_etcd"]
    r = e.v3("kv/range", {"key": e._b64("/ursa/gateway/tenants/" + name)})
    kvs = r.get("kvs") or []
    return json.loads(base64.b64decode(kvs[0]["value"])) if kvs else None


def test_reconciler_finishes_undoes_and_adopts():
    """A gateway that dies between the steps of a tenant creation leaves a pending record: a
    reconciler confirms it when the partition has the tenant and undoes it after the grace period
    when it has not. A tenant made on a partition directly is adopted by the sweep."""
    e = S["gw_etcd"]
    since = int(time.time() * 1000) - 60000

    def pending(name, partition):
        value = json.dumps({"partition": partition, "state": "pending", "since": since})
        e.v3("kv/put", {"key": e._b64("/ursa/gateway/tenants/" + name), "value": e._b64(value)})
    tp2 = h.Client("https://127.0.0.1:%d" % S["tp2_port"], S["tp1"].ca_file, S["tp1"].admin_token)
    pending("halfmade", "tp-1")  # died after recording the placement, before creating the tenant
    h.expect_status(tp2.post("/api/v1/tenants", h.tenant_manifest("finished")), 201, "create on tp-2")
    pending("finished", "tp-2")  # died after creating it, before confirming
    h.expect_status(S["tp1"].admin().post("/api/v1/tenants", h.tenant_manifest("direct")), 201, "create on tp-1")
    h.eq(gw_record("direct"), None, "no record for a tenant made on tp-1 directly")

    # A gateway that reconciles often; the first one (default periods) follows its writes.
    port = h.free_port()
    log = os.path.join(S["tp1"].dir, "gw-reconcile.log")
    h._logs.append(("gateway (reconciling)", log))
    p = h.spawn(S["gw_args"] + ["--listen", "127.0.0.1:%d" % port, "--resync-seconds", "1",
                                "--sweep-seconds", "2", "--pending-grace-seconds", "3"], log)
    try:
        h.wait_until(lambda: gw_record("halfmade") is None, 20, "the abandoned placement undone")
        h.wait_until(lambda: (gw_record("finished") or {}).get("state") == "ready", 20,
                     "the finished placement confirmed")
        h.wait_until(lambda: gw_record("direct"), 20, "the tenant made on tp-1 adopted")
        h.eq(gw_record("direct").get("partition"), "tp-1", "adopted on its partition")
        h.eq(gw_record("direct").get("state"), "ready", "adopted as ready")
    finally:
        h.terminate(p)
    a = S["admin"]
    h.wait_until(lambda: a.get("/api/v1/tenants/direct").status == 200, 10, "direct reachable through the gateway")
    h.wait_until(lambda: a.get("/api/v1/tenants/finished").status == 200, 10,
                 "finished reachable through the gateway")
    h.eq(a.get("/api/v1/tenants/halfmade").status, 404, "the undone tenant")


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


def test_identity_reaches_partitions_only_as_the_gateway_asserts_it():
    """The partitions hold the identity key: a caller's own X-Ursa-Identity header is never passed
    on, and without the key nobody can make one a partition accepts."""
    alice = h.Client(S["gw_url"], S["tp1"].ca_file, h.kubeconfig_token(kc("ta", "alice")))
    forged = "v1.eyJpc3MiOiJ1cnNhIiwic3ViIjoicm9vdCIsInRlbmFudCI6InN5c3RlbSIsImdyb3VwcyI6WyJzeXN0ZW06bWFzdGVycyJdfQ.AAAA"
    r = alice.get("/api/v1/tenants/tb/namespaces/default/pods", headers={"X-Ursa-Identity": forged})
    h.expect_status(r, 403, "tenant user with a forged assertion", "Forbidden")
    r = alice.get("/api/v1/tenants/ta/namespaces/default/pods", headers={"X-Ursa-Identity": forged})
    h.expect_status(r, 200, "tenant user's own pods (forged header ignored)")
    direct = h.Client(S["tp1"].url, S["tp1"].ca_file)
    r = direct.get("/api/v1/tenants/ta/namespaces/default/pods", headers={"X-Ursa-Identity": forged})
    h.expect_status(r, 401, "forged assertion straight to the partition", "Unauthorized")
    # SREs read through the gateway, and cannot write.
    sre = h.Client(S["gw_url"], S["tp1"].ca_file, h.kubeconfig_token(kc("system", "sre", ("ursa:sre",))))
    h.expect_status(sre.get("/api/v1/tenants/ta/namespaces/default/pods"), 200, "SRE reads a tenant")
    h.expect_status(sre.get("/api/v1/tenants/all/pods"), 200, "SRE reads all tenants")
    h.expect_status(sre.delete("/api/v1/tenants/ta/namespaces/default/pods/p1"), 403, "SRE deletes", "Forbidden")


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


# --- streams and merged watches ----------------------------------------------------------------

def metric(name):
    r = S["admin"].get("/metrics")
    assert r.status == 200, r
    for line in r.text.splitlines():
        if line.startswith(name + " "):
            return int(line.split()[1])
    raise AssertionError("no %s in %s" % (name, r.text))


def wait_metric(name, pred, timeout=15):
    deadline = time.monotonic() + timeout
    v = None
    while time.monotonic() < deadline:
        v = metric(name)
        if pred(v):
            return v
        time.sleep(0.2)
    raise AssertionError("%s stayed at %s" % (name, v))


def node(name, zone):
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": {
        "topology.kubernetes.io/zone": zone}}}


def create_node(name, zone):
    r = S["admin"].post("/api/v1/nodes", node(name, zone))
    assert r.status == 201, r


def q(v):
    return urllib.parse.quote(v, safe="")


def test_second_rm_gives_composite_list_rv():
    d = S["tp1"].dir
    e = h.Etcd(name="rm2")
    e.start()
    S["rm2_etcd"], S["rm2_port"] = e, h.free_port()
    S["rm2"] = h.spawn(partition_args(S["tp1"], RM_BIN, e, "rm-az-2", S["rm2_port"]), os.path.join(d, "rm2.log"))
    h._logs.append(("rm-az-2", os.path.join(d, "rm2.log")))
    h.wait_ok(h.Client("https://127.0.0.1:%d" % S["rm2_port"], S["tp1"].ca_file, S["tp1"].admin_token), "/readyz")
    register("rm-az-2", "rm", "https://127.0.0.1:%d" % S["rm2_port"], "az-2")
    deadline = time.monotonic() + 20
    rv = ""
    while time.monotonic() < deadline and not rv.startswith("u1."):
        r = S["admin"].get("/api/v1/nodes")
        assert r.status == 200, r
        rv = r.json["metadata"]["resourceVersion"]
        time.sleep(0.2)
    assert rv.startswith("u1."), rv
    create_node("n2", "az-2")
    r = S["admin"].get("/api/v1/nodes")
    names = sorted(n["metadata"]["name"] for n in r.json["items"])
    assert names == ["n1", "n2"], names
    # a list at a composite resourceVersion gives every resource manager its own
    r2 = S["admin"].get("/api/v1/nodes?resourceVersion=" + q(r.json["metadata"]["resourceVersion"]))
    assert r2.status == 200 and len(r2.json["items"]) == 2, r2
    # every query parameter reaches the partitions, unchanged
    r3 = S["admin"].get("/api/v1/nodes?labelSelector=" + q("topology.kubernetes.io/zone=az-2"))
    assert [n["metadata"]["name"] for n in r3.json["items"]] == ["n2"], r3


def test_kubectl_get_nodes_watch_across_rms():
    k = kc("system", "admin", ("system:masters",))
    bg = h.Background(h.kubectl_args(["get", "nodes", "-w"], k))
    try:
        assert bg.wait_for(lambda ln: ln.startswith("n2 "), 30), (bg.output(), bg.err)
        create_node("kw-1", "az-1")
        create_node("kw-2", "az-2")
        for n in ("kw-1", "kw-2"):
            assert bg.wait_for(lambda ln, n=n: ln.startswith(n + " "), 30), (n, bg.output(), bg.err)
        assert bg.proc.poll() is None, bg.err
    finally:
        bg.stop()


def composite_of(ev):
    rv = ev["object"]["metadata"]["resourceVersion"]
    assert rv.startswith("u1."), ev
    return rv


def test_watch_resumes_from_composite_rv():
    a = S["admin"]
    rv = a.get("/api/v1/nodes").json["metadata"]["resourceVersion"]
    w = a.watch("/api/v1/nodes?watch=true&allowWatchBookmarks=true&resourceVersion=" + q(rv))
    assert w.status == 200, w.response
    create_node("r1", "az-1")
    ev = w.until(lambda e: e["type"] == "ADDED" and e["object"]["metadata"]["name"] == "r1", 20)
    assert ev, w.summary()
    assert not [e for e in w.events if e["type"] == "ADDED" and e["object"]["metadata"]["name"] != "r1"], w.summary()
    resume = composite_of(ev)
    w.close()
    create_node("r2", "az-2")
    create_node("r3", "az-1")
    w = a.watch("/api/v1/nodes?watch=true&resourceVersion=" + q(resume))
    assert w.status == 200, w.response
    got = set()
    deadline = time.monotonic() + 20
    while got != {"r2", "r3"} and time.monotonic() < deadline:
        e = w.next(deadline - time.monotonic())
        if e and e["type"] == "ADDED":
            got.add(e["object"]["metadata"]["name"])
            composite_of(e)
    w.drain(1)
    w.close()
    added = [n for t, n in w.summary() if t == "ADDED"]
    assert sorted(added) == ["r2", "r3"], w.summary()


def test_malformed_composite_rv_is_400():
    a = S["admin"]
    for rv in ("u1.!!notbase64", "u1.W10", "u1." + "A" * 9000):
        r = a.get("/api/v1/nodes?watch=true&resourceVersion=" + q(rv))
        assert r.status == 400 and r.json["kind"] == "Status" and r.json["reason"] == "BadRequest", r
        assert "resourceVersion" in r.json["message"], r
        r = a.get("/api/v1/nodes?resourceVersion=" + q(rv))
        assert r.status == 400, r
    # a plain resourceVersion means nothing across two resource managers: relist
    r = a.get("/api/v1/nodes?watch=true&resourceVersion=12345")
    assert r.status == 410 and r.json["reason"] == "Expired", r
    # a client that accepts no JSON cannot get a merged watch
    r = a.get("/api/v1/nodes?watch=true", headers={"Accept": "application/vnd.kubernetes.protobuf"})
    assert r.status == 406, r


def test_python_client_list_then_watch():
    from kubernetes import client, config, watch
    v1 = client.CoreV1Api(config.new_client_from_config(config_file=kc("system", "admin", ("system:masters",))))
    lst = v1.list_node()
    assert lst.metadata.resource_version.startswith("u1."), lst.metadata
    threading.Timer(1.0, create_node, ("py-n1", "az-2")).start()
    w = watch.Watch()
    seen = None
    for ev in w.stream(v1.list_node, resource_version=lst.metadata.resource_version, timeout_seconds=20):
        if ev["type"] == "ADDED" and ev["object"].metadata.name == "py-n1":
            seen = ev["object"]
            break
    w.stop()
    assert seen is not None
    assert seen.metadata.resource_version.startswith("u1."), seen.metadata
    # the informer pattern without a resourceVersion: every node of both resource managers
    names = set()
    for ev in watch.Watch().stream(v1.list_node, timeout_seconds=3):
        names.add(ev["object"].metadata.name)
    assert {"n1", "n2", "py-n1"} <= names, names


def test_client_disconnect_frees_upstream():
    a = S["admin"]
    # The earlier tests' watches are closed; wait until the gateway has let go of them too, so
    # that the counts below are this test's alone (a baseline taken while they were still
    # closing hid the two new streams once).
    base_s = wait_metric("gateway_streams_open", lambda v: v == 0, 30)
    base_u = wait_metric("gateway_stream_upstreams_open", lambda v: v == 0, 30)
    ws = [a.watch("/api/v1/nodes?watch=true"), a.watch("/api/v1/tenants/ta/namespaces/default/pods?watch=true")]
    for w in ws:
        assert w.status == 200, w.response
    wait_metric("gateway_streams_open", lambda v: v >= base_s + 2)
    assert metric("gateway_stream_upstreams_open") >= base_u + 3  # two RMs + one TP
    for w in ws:
        w.close()
    wait_metric("gateway_streams_open", lambda v: v <= base_s, 30)
    wait_metric("gateway_stream_upstreams_open", lambda v: v <= base_u, 30)


def test_200_concurrent_watches():
    a = S["admin"]
    rv = a.get("/api/v1/tenants/ta/namespaces/default/configmaps").json["metadata"]["resourceVersion"]
    nrv = a.get("/api/v1/nodes").json["metadata"]["resourceVersion"]
    ws = []
    try:
        for i in range(200):
            if i % 2:
                ws.append(a.watch("/api/v1/nodes?watch=true&resourceVersion=" + q(nrv)))
            else:
                ws.append(a.watch("/api/v1/tenants/ta/namespaces/default/configmaps?watch=true&resourceVersion=" + rv))
            assert ws[-1].status == 200, (i, ws[-1].response)
        assert metric("gateway_streams_open") >= 200
        r = a.post("/api/v1/tenants/ta/namespaces/default/configmaps",
                   {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "fan"}, "data": {"k": "v"}})
        assert r.status == 201, r
        create_node("fan-node", "az-2")
        missing = []
        for i, w in enumerate(ws):
            want = "fan-node" if i % 2 else "fan"
            if not w.until(lambda e, want=want: e["object"]["metadata"].get("name") == want, 30):
                missing.append((i, w.summary()))
        assert not missing, missing[:3]
    finally:
        for w in ws:
            w.close()
    wait_metric("gateway_streams_open", lambda v: v < 5, 30)


def children_of(pid):
    kids = []
    for e in os.listdir("/proc"):
        if e.isdigit():
            try:
                with open("/proc/%s/stat" % e) as f:
                    if int(f.read().rsplit(")", 1)[1].split()[1]) == pid:
                        kids.append(int(e))
            except (OSError, IndexError, ValueError):
                pass
    return sorted(kids)


def socket_owners(port):
    """PIDs holding the accepted (server side) connections of 127.0.0.1:port."""
    rc, out, err = h.run_cmd(["ss", "-tnpH", "state", "established", "( sport = :%d )" % port], 10)
    assert rc == 0, err
    return {int(m) for m in re.findall(r"pid=(\d+),", out)}


def test_workers_serve_one_address_and_are_replaced():
    """--workers 2: both workers take connections on one address; the master alone tells systemd
    READY=1, replaces a worker that dies, and stops them all on SIGTERM."""
    port = h.free_port()
    notify = os.path.join(h.make_tmpdir("notify"), "notify.sock")
    ns = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    ns.bind(notify)
    ns.settimeout(60)
    log = os.path.join(S["tp1"].dir, "gw-workers.log")
    h._logs.append(("gateway --workers 2", log))
    p = h.spawn(S["gw_args"] + ["--listen", "127.0.0.1:%d" % port, "--workers", "2"], log,
                env=dict(os.environ, NOTIFY_SOCKET=notify))
    try:
        assert ns.recv(64) == b"READY=1"
        workers = children_of(p.pid)
        assert len(workers) == 2, workers
        url = "https://127.0.0.1:%d" % port
        c = h.Client(url, S["tp1"].ca_file, S["tp1"].admin_token)
        assert c.get("/api/v1/tenants/ta/namespaces/default/configmaps").status == 200
        # Connections spread over both workers (SO_REUSEPORT hashes each one).
        conns = [socket.create_connection(("127.0.0.1", port)) for _ in range(64)]
        deadline = time.monotonic() + 10
        while socket_owners(port) != set(workers) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert socket_owners(port) == set(workers), (socket_owners(port), workers)
        for k in conns:
            k.close()
        # A worker that dies is replaced; the other serves meanwhile; no second READY=1.
        os.kill(workers[0], signal.SIGKILL)
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            now = children_of(p.pid)
            if len(now) == 2 and workers[0] not in now:
                break
            time.sleep(0.1)
        assert len(now) == 2 and workers[0] not in now and workers[1] in now, (workers, now)
        for _ in range(20):
            r = h.Client(url, S["tp1"].ca_file, S["tp1"].admin_token).get("/api/v1/tenants/ta/namespaces/default/pods")
            assert r.status == 200, r
        ns.settimeout(0.5)
        try:
            extra = ns.recv(64)
        except socket.timeout:
            extra = None
        assert extra is None, extra
        p.terminate()
        assert p.wait(45) == 0
        for w in now:  # the master waited for them: they are gone, not even zombies
            assert not os.path.exists("/proc/%d" % w), "worker %d outlived its master" % w
    finally:
        ns.close()
        h.kill(p)


def test_tenant_watch_across_tps():
    a = S["admin"]
    rv = a.get("/api/v1/tenants").json["metadata"]["resourceVersion"]
    assert rv.startswith("u1."), rv
    w = a.watch("/api/v1/tenants?watch=1&resourceVersion=" + q(rv))
    assert w.status == 200, w.response
    r = a.post("/api/v1/tenants", {"apiVersion": "v1", "kind": "Tenant", "metadata": {
        "name": "tw", "annotations": {"ursa.io/partition": "tp-2"}}})
    assert r.status == 201, r
    ev = w.until(lambda e: e["object"]["metadata"].get("name") == "tw", 20)
    w.close()
    assert ev and ev["type"] == "ADDED", w.summary()
    assert ev["object"]["metadata"]["annotations"]["ursa.io/partition"] == "tp-2", ev
    composite_of(ev)


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


class SlowPartition:
    """A stand-in tenant partition over plain HTTP: answers /readyz, tenant creation and tenant
    lists at once and any path ending in /slow after delay seconds (for forwards in flight)."""

    def __init__(self, delay):
        import http.server
        tenants, outer = [], self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def reply(self, code, obj):
                b = json.dumps(obj).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(b)))
                self.end_headers()
                self.wfile.write(b)

            def do_GET(self):
                if self.path.endswith("/slow"):
                    outer.started += 1
                    time.sleep(delay)
                if self.path.startswith("/api/v1/tenants") and "/namespaces/" not in self.path:
                    self.reply(200, {"kind": "TenantList", "apiVersion": "v1", "metadata": {},
                                     "items": [{"kind": "Tenant", "metadata": {"name": n}} for n in tenants]})
                else:
                    self.reply(200, {"kind": "Pod", "apiVersion": "v1", "metadata": {"name": self.path}})

            def do_POST(self):
                obj = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))) or b"{}")
                tenants.append(obj["metadata"]["name"])
                self.reply(201, obj)

        self.started = 0
        self.srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = "http://127.0.0.1:%d" % self.srv.server_address[1]
        threading.Thread(target=self.srv.serve_forever, daemon=True).start()

    def stop(self):
        self.srv.shutdown()


def etcdctl(*args):
    rc, out, err = h.run_cmd(["etcdctl", "--endpoints", S["gw_etcd"].endpoints] + list(args), 30,
                             env=dict(os.environ, ETCDCTL_API="3"))
    assert rc == 0, (rc, out, err)


def test_client_leaves_while_its_request_is_at_the_partition():
    """A plain request waits for its partition on the gateway's request loop (no thread): a client
    that gives up meanwhile costs nothing once the partition answers, and others are served."""
    slow = SlowPartition(2.5)
    a = S["admin"]
    try:
        etcdctl("put", "/ursa/gateway/partitions/tp-slow", json.dumps({"kind": "tp", "endpoints": [slow.url]}))
        deadline = time.monotonic() + 15
        code = None
        while time.monotonic() < deadline and code != 201:
            code = a.post("/api/v1/tenants", {"apiVersion": "v1", "kind": "Tenant", "metadata": {
                "name": "tslow", "annotations": {"ursa.io/partition": "tp-slow"}}}).status
            time.sleep(0.2)
        assert code == 201, code
        base = metric("gateway_requests_in_flight")
        path = "/api/v1/tenants/tslow/namespaces/default/pods/"
        conn = a.connect(timeout=0.5)
        conn.request("GET", path + "slow", headers={"Authorization": "Bearer " + S["tp1"].admin_token})
        try:
            conn.getresponse()
            raise AssertionError("the slow partition answered within 0.5 s")
        except TimeoutError:
            pass
        conn.close()  # the client leaves while its request is at the partition
        assert slow.started == 1
        assert metric("gateway_requests_in_flight") >= base + 1
        t0 = time.monotonic()
        r = a.get(path + "fast")  # served meanwhile: nothing waits on the slow one
        assert r.status == 200 and r.json["metadata"]["name"].endswith("/fast"), r
        assert time.monotonic() - t0 < 1.5
        wait_metric("gateway_requests_in_flight", lambda v: v <= base, 10)
        assert a.get(path + "again").status == 200
    finally:
        etcdctl("del", "/ursa/gateway/partitions/tp-slow")
        etcdctl("del", "/ursa/gateway/tenants/tslow")
        slow.stop()


def test_tenant_rate_limit_spares_the_region_admins():
    """--tenant-qps: a tenant's user over its budget gets 429 with Retry-After; the region's
    administrators (system:masters) are exempt, as Kubernetes' priority and fairness exempts them."""
    port = h.free_port()
    log = os.path.join(S["tp1"].dir, "gw-qps.log")
    h._logs.append(("gateway --tenant-qps 1", log))
    p = h.spawn(S["gw_args"] + ["--listen", "127.0.0.1:%d" % port, "--tenant-qps", "1", "--tenant-burst", "3"], log)
    try:
        url = "https://127.0.0.1:%d" % port
        admin = h.Client(url, S["tp1"].ca_file, S["tp1"].admin_token)
        h.wait_ok(admin, "/readyz")
        codes = [admin.get("/api/v1/tenants/ta/namespaces/default/configmaps").status for _ in range(20)]
        h.check(codes == [200] * 20, "the region's admin is not rate limited: %s" % codes)
        user = h.kubeconfig_token(kc("ta", "qps-user"))
        c = h.Client(url, S["tp1"].ca_file, user)
        rs = [c.get("/api/v1/namespaces/default/configmaps") for _ in range(10)]
        codes = [r.status for r in rs]
        h.check(codes[:3] == [200] * 3 and 429 in codes, "a tenant's user meets its budget: %s" % codes)
        r = [r for r in rs if r.status == 429][0]
        h.expect_status(r, 429, "over the tenant's rate", "TooManyRequests")
        h.check(r.header("Retry-After"), "429 carries Retry-After")
    finally:
        h.terminate(p)


if __name__ == "__main__":
    h.run(globals())
