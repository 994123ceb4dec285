#!/usr/bin/python3
"""The gateway's part of a live tenant move (issue 23), before the partitions' move endpoints exist:
the move is simulated by hand with real processes.

Watch bridge: tenant acme lives on tp-1; a user's watch of configmaps goes through the gateway. Its
keys are copied to tp-2's etcd as they are (raw puts in one transaction, at tp-2 revision S), the
gateway's placement record is rewritten as `ursactl tenant move` will at the switch
({"partition":"tp-2",...,"moved":{"from":"tp-1","fromRevision":F,"toRevision":S,...}}), and tp-1's API
server is restarted, which ends its watches. The client's watch goes on: a configmap written through
the gateway afterwards reaches it, with no ERROR, no repeat and nothing from tp-1's clean-up. A
watch of a tenant that did not move (beta, on tp-1, no move record) ends as before, at once.

Held writes: a real partition answers 429 + X-Ursa-Tenant-Moving only with the partition side of the
move, so a TEST DOUBLE stands in for the moving source here: FakeMovingPartition, a small plain-HTTP
server registered in the gateway's etcd as partition "tp-double", answering every write with that
429 (and /readyz with 200). A write of acme placed there is held by the gateway and lands on tp-2 as
soon as the placement names tp-2; with the placement left alone the 429 is passed on after
--move-hold-seconds (2 here); a 429 without the header passes at once.

Run alone: URSA_BUILD_DIR=build /usr/bin/python3 tests/integration/test_gateway_move.py"""

import base64
import http.server
import json
import os
import re
import secrets
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import ursa_harness as h  # noqa: E402

GW_BIN = os.path.join(h.BUILD_DIR, "src", "gateway", "ursa-gateway")
PREFIX = "/ursa/gateway"
HOLD_S = 2
S = {}


def b64(s):
    return base64.b64encode(s if isinstance(s, bytes) else s.encode()).decode()


def register(pid, url):
    tp = S["tp1"]
    args = [h.URSACTL_BIN, "register", "--region-file", os.path.join(tp.dir, "region.json"),
            "--signing-key", tp.signing_key, "--certificate-authority", tp.ca_file,
            "--gateway-etcd", S["gw_etcd"].endpoints, "--kind", "tp", "--name", pid, "--endpoints", url]
    rc, out, err = h.run_cmd(args, 60)
    h.check(rc == 0, "ursactl register %s: %s %s" % (pid, out, err))


def put_record(tenant, rec):
    e = S["gw_etcd"]
    e.v3("kv/put", {"key": b64("%s/tenants/%s" % (PREFIX, tenant)), "value": b64(json.dumps(rec))})


def metrics():
    r = S["admin"].get("/metrics")
    h.expect_status(r, 200, "gateway /metrics")
    out = {}
    for line in r.text.splitlines():
        m = re.match(r"^(gateway_move_\w+) ([0-9.]+)$", line)
        if m:
            out[m.group(1)] = float(m.group(2))
    return out


def user_client(tenant, user):
    tp = S["tp1"]
    args = [h.URSACTL_BIN, "kubeconfig", "--tenant", tenant, "--user", user, "--ttl", "0", "--server", S["gw_url"],
            "--signing-key", tp.signing_key, "--certificate-authority", tp.ca_file]
    path = os.path.join(tp.dir, "kc-%s-%s" % (tenant, user))
    with open(path, "w") as f:
        f.write(h.must_run(args))
    return h.Client(S["gw_url"], tp.ca_file, h.kubeconfig_token(path))


def cm(name, data="x"):
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"k": data}}


CMS = "/api/v1/namespaces/default/configmaps"


def test_start_region():
    h.require_binary(GW_BIN, "ursa-gateway")
    etcds = {n: h.Etcd(name=n) for n in ("tp1", "tp2", "gw")}
    for e in etcds.values():
        e.start()
    S.update({n + "_etcd": e for n, e in etcds.items()})
    idkey = os.path.join(h.make_tmpdir("idkey"), "identity.key")
    with open(idkey, "w") as f:
        f.write(secrets.token_hex(32))
    tp1 = h.ApiServer(etcds["tp1"], partition_id="tp-1", extra_args=["--identity-key-file", idkey]).start()
    S["tp1"] = tp1
    # tp-2 shares tp-1's CA, keys and tokens (one region)
    port2 = h.free_port()
    S["tp2"] = h.spawn([h.APISERVER_BIN, "--listen", "127.0.0.1:%d" % port2, "--etcd-servers", etcds["tp2"].endpoints,
                        "--etcd-prefix", "/registry", "--token-auth-file", tp1.token_file,
                        "--token-signing-public-key", tp1.signing_pub, "--partition-id", "tp-2",
                        "--tls-cert-file", tp1.cert_file, "--tls-private-key-file", tp1.key_file,
                        "--identity-key-file", idkey, "--log-level", "info"], os.path.join(tp1.dir, "tp2.log"))
    h._logs.extend([("tp-2", os.path.join(tp1.dir, "tp2.log")), ("gateway", os.path.join(tp1.dir, "gw.log"))])
    S["tp2_url"] = "https://127.0.0.1:%d" % port2
    h.wait_ok(h.Client(S["tp2_url"], tp1.ca_file, tp1.admin_token), "/readyz")
    register("tp-1", tp1.url)
    register("tp-2", S["tp2_url"])
    token = os.path.join(tp1.dir, "gw.token")
    with open(token, "w") as f:
        f.write(tp1.admin_token)
    gw_port = h.free_port()
    S["gw"] = h.spawn([GW_BIN, "--etcd-servers", etcds["gw"].endpoints, "--tls-cert-file", tp1.cert_file,
                       "--tls-private-key-file", tp1.key_file, "--token-auth-file", tp1.token_file,
                       "--token-signing-public-key", tp1.signing_pub, "--partition-ca-file", tp1.ca_file,
                       "--partition-token-file", token, "--identity-key-file", idkey,
                       "--listen", "127.0.0.1:%d" % gw_port, "--move-hold-seconds", str(HOLD_S),
                       "--log-level", "debug"], os.path.join(tp1.dir, "gw.log"))
    S["gw_url"] = "https://127.0.0.1:%d" % gw_port
    S["admin"] = h.Client(S["gw_url"], tp1.ca_file, tp1.admin_token)
    h.wait_ok(S["admin"], "/readyz")
    for t in ("acme", "beta"):
        r = S["admin"].post("/api/v1/tenants", {"apiVersion": "v1", "kind": "Tenant", "metadata": {
            "name": t, "annotations": {"ursa.io/partition": "tp-1"}}})
        h.expect_status(r, 201, "create tenant " + t)
    S["acme"] = user_client("acme", "alice")
    S["beta"] = user_client("beta", "bob")
    h.wait_until(lambda: S["acme"].get(CMS).status == 200, 15, "acme's namespace default")
    h.wait_until(lambda: S["beta"].get(CMS).status == 200, 15, "beta's namespace default")


def tenant_keys(etcd, tenant):
    """Every key of tenant in a partition's etcd, with its value (what backup_ranges covers)."""
    r = etcd.v3("kv/range", {"key": b64("/registry/"), "range_end": b64(etcd._prefix_end("/registry/"))})
    out = []
    for kv in r.get("kvs") or []:
        k = base64.b64decode(kv["key"]).decode()
        seg = k.split("/")
        if (len(seg) > 3 and seg[3] == tenant) or (len(seg) > 5 and seg[2] == "customresources" and seg[5] == tenant):
            out.append((k, kv.get("value", "")))
    return out


def events(w):
    return [(t, n) for t, n in w.summary() if t != "BOOKMARK"]


def test_watch_follows_the_tenant_to_its_new_partition():
    acme, beta = S["acme"], S["beta"]
    rv = acme.get(CMS).json["metadata"]["resourceVersion"]
    w = acme.watch("%s?watch=true&resourceVersion=%s" % (CMS, rv))
    h.check(w.status == 200, "acme's watch through the gateway: %r" % w.response)
    wb = beta.watch("%s?watch=true&resourceVersion=%s" % (CMS, beta.get(CMS).json["metadata"]["resourceVersion"]))
    h.check(wb.status == 200, "beta's watch: %r" % wb.response)
    h.expect_status(acme.post(CMS, cm("before")), 201, "a configmap on tp-1")
    h.check(w.until(lambda e: e["object"]["metadata"]["name"] == "before", 10), "the event from tp-1")

    # The copy: acme's keys as they are, in one transaction on tp-2's etcd (revision S).
    keys = tenant_keys(S["tp1_etcd"], "acme")
    h.check(any(k == "/registry/tenants/acme" for k, _ in keys), "acme's keys on tp-1: %s" % [k for k, _ in keys])
    F = S["tp1_etcd"].revision()
    r = S["tp2_etcd"].v3("kv/txn", {"success": [{"requestPut": {"key": b64(k), "value": v}} for k, v in keys]})
    to_rev = int(r["header"]["revision"])
    tp2 = h.Client(S["tp2_url"], S["tp1"].ca_file, S["tp1"].admin_token)
    h.wait_until(lambda: tp2.get("/api/v1/tenants/acme/namespaces/default/configmaps/before").status == 200, 15,
                 "tp-2 serves acme's copy")
    # acme's move is recorded (ursactl writes the record first): a watch the source ends waits
    # for the switch; beta has none: its watch ends at once.
    S["gw_etcd"].v3("kv/put", {"key": b64("%s/moves/acme" % PREFIX), "value": b64(json.dumps(
        {"tenant": "acme", "from": "tp-1", "to": "tp-2", "move": "test-1", "phase": "switched"}))})
    time.sleep(0.3)  # the gateway's etcd watch delivers it
    before = metrics()
    # The source ends its watches before this gateway sees the switch (written 1 s after the
    # restart began, as ursactl's is, here late): acme's watch waits for it.
    switch = threading.Timer(1.0, put_record, ("acme", {
        "partition": "tp-2", "state": "ready", "since": int(time.time() * 1000),
        "moved": {"from": "tp-1", "fromRevision": F, "toRevision": to_rev, "move": "test-1"}}))
    t0 = time.monotonic()
    switch.start()
    S["tp1"].restart()
    took = time.monotonic() - t0
    wb.drain(0.2)
    h.check(wb.ended, "beta's watch (no move) ended with tp-1's at once (restart took %.1f s)" % took)
    switch.join()
    h.wait_until(lambda: metrics().get("gateway_move_watches_bridged_total", 0) >= before.get(
        "gateway_move_watches_bridged_total", 0) + 1, 15, "the gateway continues acme's watch on tp-2")
    S["gw_etcd"].v3("kv/deleterange", {"key": b64("%s/moves/acme" % PREFIX)})
    # The source's clean-up (raw deletes of acme's keys on tp-1) does not reach the client.
    S["tp1_etcd"].v3("kv/txn", {"success": [{"requestDeleteRange": {"key": b64(k)}} for k, _ in keys]})
    h.expect_status(acme.post(CMS, cm("after")), 201, "a configmap after the move")
    h.check(w.until(lambda e: e["object"]["metadata"]["name"] == "after", 10),
            "the event from tp-2 on the same watch: %s" % w.summary())
    r = acme.patch(CMS + "/before", {"data": {"k": "y"}})
    h.expect_status(r, 200, "change of a configmap copied from tp-1")
    ev = w.until(lambda e: e["type"] == "MODIFIED", 10)
    h.check(ev and int(ev["object"]["metadata"]["resourceVersion"]) > to_rev, "MODIFIED from tp-2: %s" % ev)
    time.sleep(0.5)
    w.drain(0.5)
    h.check(not w.ended, "acme's watch is still open")
    got = events(w)
    h.check(got == [("ADDED", "before"), ("ADDED", "after"), ("MODIFIED", "before")],
            "one continuous watch, no error, no repeat: %s" % got)
    w.close()
    # beta did not move: its watch ended (above), cleanly.
    h.check(not any(t == "ERROR" for t, _ in wb.summary()), "no ERROR for beta: %s" % wb.summary())
    h.check(metrics().get("gateway_move_watch_waits_total", 0) >= before.get("gateway_move_watch_waits_total", 0) + 2,
            "both watches waited: %s" % metrics())


class FakeMovingPartition:
    """TEST DOUBLE of a tenant partition in the middle of a move: answers every write with 429,
    Retry-After: 1 and X-Ursa-Tenant-Moving: acme (a body naming "plain-429" gets a 429 without the
    header, as the partition's fair queuing answers), GET /readyz with 200 and anything else with 404.
    Plain HTTP on loopback; it records the bodies of the writes it refused."""

    def __init__(self):
        self.bodies = []
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def _send(self, code, headers=()):
                body = json.dumps({"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": code,
                                   "reason": "TooManyRequests" if code == 429 else "NotFound",
                                   "message": "test double"}).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                for k, v in headers:
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self):
                if self.path.startswith("/readyz"):
                    self.send_response(200)
                    self.send_header("Content-Length", "2")
                    self.end_headers()
                    self.wfile.write(b"ok")
                else:
                    self._send(404)

            def do_POST(self):
                n = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(n)
                outer.bodies.append(body)
                if b"plain-429" in body:
                    self._send(429, [("Retry-After", "1")])
                else:
                    self._send(429, [("Retry-After", "1"), ("X-Ursa-Tenant-Moving", "acme")])

            do_PUT = do_PATCH = do_DELETE = do_POST

        self.srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = "http://127.0.0.1:%d" % self.srv.server_address[1]
        threading.Thread(target=self.srv.serve_forever, daemon=True).start()
        h.at_cleanup(self.srv.shutdown)


def post_async(client, body):
    out = {}

    def run():
        t0 = time.monotonic()
        out["r"] = client.post(CMS, body)
        out["s"] = time.monotonic() - t0
    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t, out


def test_writes_held_while_the_tenant_moves():
    acme = S["acme"]
    fake = FakeMovingPartition()
    S["gw_etcd"].v3("kv/put", {"key": b64(PREFIX + "/partitions/tp-double"),
                               "value": b64(json.dumps({"kind": "tp", "endpoints": [fake.url]}))})
    put_record("acme", {"partition": "tp-double", "state": "ready", "since": 1})
    h.wait_until(lambda: acme.post(CMS, cm("probe", "plain-429")).status == 429, 10,
                 "the gateway routes acme to the test double")
    fake.bodies.clear()
    before = metrics()
    # held, then sent to tp-2 once the placement names it
    body = cm("held", "payload-" + secrets.token_hex(8))
    t, out = post_async(acme, body)
    h.wait_until(lambda: len(fake.bodies) >= 3, 5, "the held write is sent again every 100 ms")
    h.check(metrics().get("gateway_move_held_requests") == 1, "one request held now: %s" % metrics())
    h.check("r" not in out, "the client still waits: %s" % out)
    put_record("acme", {"partition": "tp-2", "state": "ready", "since": 2,
                        "moved": {"from": "tp-double", "fromRevision": 1, "toRevision": 1, "move": "test-2"}})
    t.join(HOLD_S + 5)
    h.check("r" in out, "the held write was answered")
    h.expect_status(out["r"], 201, "the held write, on tp-2")
    h.check(out["s"] < HOLD_S, "answered before the hold budget: %.2f s" % out["s"])
    h.check(all(b == json.dumps(body).encode() for b in fake.bodies), "the same body each time: %s" % fake.bodies)
    tp2 = h.Client(S["tp2_url"], S["tp1"].ca_file, S["tp1"].admin_token)
    r = tp2.get("/api/v1/tenants/acme/namespaces/default/configmaps/held")
    h.expect_status(r, 200, "the held write landed on tp-2")
    h.check(r.json["data"] == body["data"], "its body: %s" % r.json)
    m = metrics()
    h.check(m["gateway_move_held_requests_total"] >= before.get("gateway_move_held_requests_total", 0) + 1 and
            m["gateway_move_held_resends_total"] >= before.get("gateway_move_held_resends_total", 0) + 3 and
            m["gateway_move_hold_seconds_total"] > before.get("gateway_move_hold_seconds_total", 0) and
            m["gateway_move_held_requests"] == 0, "counted: %s" % m)

    # the placement does not change: the last 429 goes on after --move-hold-seconds
    put_record("acme", {"partition": "tp-double", "state": "ready", "since": 3})
    h.wait_until(lambda: acme.post(CMS, cm("probe2", "plain-429")).status == 429, 10, "acme on the double again")
    fake.bodies.clear()
    t0 = time.monotonic()
    r = acme.post(CMS, cm("late"))
    took = time.monotonic() - t0
    h.expect_status(r, 429, "a write held past the budget")
    h.check(r.header("X-Ursa-Tenant-Moving") == "acme" and r.header("Retry-After") == "1",
            "the 429 keeps what clients retry by: %s" % r.headers)
    h.check(HOLD_S - 0.2 <= took <= HOLD_S + 2, "held for the budget: %.2f s" % took)
    h.check(metrics()["gateway_move_held_expired_total"] >= 1, "counted as expired")
    # a 429 without the header is the client's at once
    fake.bodies.clear()
    t0 = time.monotonic()
    r = acme.post(CMS, cm("fq", "plain-429"))
    h.check(r.status == 429 and time.monotonic() - t0 < 1 and len(fake.bodies) == 1,
            "fair queuing's 429 passes at once: %r %d" % (r, len(fake.bodies)))
    put_record("acme", {"partition": "tp-2", "state": "ready", "since": 4})


if __name__ == "__main__":
    h.run(globals())
