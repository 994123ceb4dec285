#!/usr/bin/python3
"""The gateway's own HTTP/1.1 client for plain requests (src/gateway/h1conn.c) against a real
tenant partition over TLS, with a counting TCP relay between the two (the gateway's etcd names the
relay as tp-1's endpoint): sequential requests share one kept connection; an error Status, its
Warning headers and its content type pass unchanged; a LIST of several MB comes through whole;
kept connections that the partition drops under a request are replaced once for a GET and never
for a POST (504, and the object was not created twice); the partition restarting under the
gateway costs no 504. A TLS stand-in partition answers chunked (the real one sends chunked
bodies only for streams, which stay on libcurl).

Run alone: URSA_BUILD_DIR=build /usr/bin/python3 tests/integration/test_gateway_upstream.py"""

import http.server
import json
import os
import secrets
import socket
import ssl
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import ursa_harness as h  # noqa: E402

GW_BIN = os.path.join(h.BUILD_DIR, "src", "gateway", "ursa-gateway")
S = {}
CM = "/api/v1/tenants/t1/namespaces/default/configmaps"


class Relay:
    """A TCP relay on loopback to 127.0.0.1:port that counts the connections it accepts. drop()
    arms every open connection: the next bytes the gateway sends on it are not passed on, and both
    sides are closed (a partition that closed a kept connection just as a request went out)."""

    def __init__(self, port):
        self.port = port
        self.accepted = 0
        self.dropped = 0
        self.lock = threading.Lock()
        self.pairs = []
        self.ls = socket.socket()
        self.ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.ls.bind(("127.0.0.1", 0))
        self.ls.listen(128)
        self.url = "https://127.0.0.1:%d" % self.ls.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                c, _ = self.ls.accept()
            except OSError:
                return
            try:
                u = socket.create_connection(("127.0.0.1", self.port), timeout=5)
                u.settimeout(None)
            except OSError:
                c.close()
                continue
            pair = {"c": c, "u": u, "drop": False}
            with self.lock:
                self.accepted += 1
                self.pairs.append(pair)
            threading.Thread(target=self._pump, args=(pair, c, u, True), daemon=True).start()
            threading.Thread(target=self._pump, args=(pair, u, c, False), daemon=True).start()

    def _close(self, pair):
        for s in (pair["c"], pair["u"]):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            s.close()
        with self.lock:
            if pair in self.pairs:
                self.pairs.remove(pair)

    def _pump(self, pair, src, dst, from_gateway):
        try:
            while True:
                b = src.recv(65536)
                if not b:
                    break
                if from_gateway and pair["drop"]:
                    with self.lock:
                        self.dropped += 1
                    break
                dst.sendall(b)
        except OSError:
            pass
        self._close(pair)

    def drop(self):
        with self.lock:
            for p in self.pairs:
                p["drop"] = True
            return len(self.pairs)

    def count(self):
        with self.lock:
            return self.accepted


def etcdctl(*args):
    rc, out, err = h.run_cmd(["etcdctl", "--endpoints", S["gw_etcd"].endpoints] + list(args), 30,
                             env=dict(os.environ, ETCDCTL_API="3"))
    assert rc == 0, (rc, out, err)


def register(pid, url):
    tp = S["tp"]
    args = [h.URSACTL_BIN, "register", "--region-file", os.path.join(tp.dir, "region.json"),
            "--signing-key", tp.signing_key, "--certificate-authority", tp.ca_file,
            "--gateway-etcd", S["gw_etcd"].endpoints, "--kind", "tp", "--name", pid, "--endpoints", url]
    rc, out, err = h.run_cmd(args, 60)
    assert rc == 0 and " %s recorded" % pid in out, (rc, out, err)


def create_tenant(name, annotations=None):
    deadline = time.monotonic() + 20
    r = None
    while time.monotonic() < deadline:
        meta = {"name": name}
        if annotations:
            meta["annotations"] = annotations
        r = S["gw"].post("/api/v1/tenants", {"apiVersion": "v1", "kind": "Tenant", "metadata": meta})
        if r.status in (201, 409):
            return
        time.sleep(0.3)
    raise AssertionError(r)


def test_start_region():
    h.require_binary(GW_BIN, "ursa-gateway")
    tp_etcd, gw_etcd = h.Etcd(name="tp1"), h.Etcd(name="gw")
    tp_etcd.start()
    gw_etcd.start()
    S["gw_etcd"] = gw_etcd
    idkey = os.path.join(h.make_tmpdir("idkey"), "identity.key")
    with open(idkey, "w") as f:
        f.write(secrets.token_hex(32))
    tp = h.ApiServer(tp_etcd, partition_id="tp-1", extra_args=["--identity-key-file", idkey]).start()
    S["tp"] = tp
    S["relay"] = Relay(tp.port)
    register("tp-1", S["relay"].url)
    token = os.path.join(tp.dir, "gw.token")
    with open(token, "w") as f:
        f.write(tp.admin_token)
    port = h.free_port()
    log = os.path.join(tp.dir, "gw.log")
    h._logs.append(("gateway", log))
    S["gw_proc"] = h.spawn([GW_BIN, "--etcd-servers", gw_etcd.endpoints, "--listen", "127.0.0.1:%d" % port,
                            "--tls-cert-file", tp.cert_file, "--tls-private-key-file", tp.key_file,
                            "--token-auth-file", tp.token_file, "--token-signing-public-key", tp.signing_pub,
                            "--partition-ca-file", tp.ca_file, "--partition-token-file", token,
                            "--identity-key-file", idkey, "--log-level", "info"], log)
    S["gw"] = h.Client("https://127.0.0.1:%d" % port, tp.ca_file, tp.admin_token)
    h.wait_ok(S["gw"], "/readyz")
    create_tenant("t1")
    h.wait_ok(S["gw"], CM)


def test_sequential_requests_share_one_connection():
    gw, relay = S["gw"], S["relay"]
    assert gw.get(CM).status == 200
    n0 = relay.count()
    for i in range(60):
        r = gw.get(CM + "/nope-%d" % i)
        assert r.status == 404, r
        r = gw.get(CM)
        assert r.status == 200 and r.json["kind"] == "ConfigMapList", r
    # The health checker (libcurl, its own kept connection) may add one.
    assert relay.count() - n0 <= 1, (n0, relay.count())


def test_error_status_and_warnings_pass_unchanged():
    gw, tp = S["gw"], S["tp"].admin()
    r = gw.get(CM + "/nope")
    d = tp.get(CM + "/nope")
    assert r.status == d.status == 404, (r, d)
    assert r.json == d.json and r.json["reason"] == "NotFound", (r, d)
    assert r.header("Content-Type") == d.header("Content-Type") == "application/json", (r.headers, d.headers)
    bad = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "Not_A_Name"}}
    r, d = gw.post(CM, bad), tp.post(CM, bad)
    assert r.status == d.status == 422 and r.json == d.json and r.json["reason"] == "Invalid", (r, d)
    # Field validation's Warning header, on a success.
    obj = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "warned"}, "data": {"a": "1"}, "bogus": 1}
    r = gw.post(CM + "?fieldValidation=Warn", obj)
    assert r.status == 201, r
    w = r.header("Warning") or ""
    assert "bogus" in w, r.headers
    r = gw.post(CM, obj)
    assert r.status == 409 and r.json["reason"] == "AlreadyExists", r


def test_large_list_comes_whole():
    gw, tp = S["gw"], S["tp"].admin()
    blob = "x" * 8000
    for i in range(400):
        r = gw.post(CM, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "big-%03d" % i},
                         "data": {"blob": blob}})
        assert r.status == 201, r
    r = gw.get(CM)
    d = tp.get(CM)
    assert r.status == 200 and len(r.body) > 3_000_000, (r.status, len(r.body))
    assert r.json["items"] == d.json["items"], (len(r.body), len(d.body))
    names = [i["metadata"]["name"] for i in r.json["items"]]
    assert sum(n.startswith("big-") for n in names) == 400


def test_connection_dropped_under_a_request():
    gw, relay = S["gw"], S["relay"]
    assert gw.get(CM + "/warned").status == 200
    # A GET on a kept connection that closes as the request goes out: sent once more, on a new one.
    assert relay.drop() >= 1
    d0, n0 = relay.dropped, relay.count()
    r = gw.get(CM + "/warned")
    assert r.status == 200 and r.json["metadata"]["name"] == "warned", r
    assert relay.dropped >= d0 + 1 and relay.count() >= n0 + 1, (relay.dropped, relay.count())
    # A POST is never sent twice: its outcome is unknown to the gateway (504), and it was not
    # created behind the client's back.
    assert relay.drop() >= 1
    d0 = relay.dropped
    obj = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "once"}, "data": {"a": "1"}}
    r = gw.post(CM, obj)
    assert r.status == 504 and r.json["kind"] == "Status", r
    assert relay.dropped >= d0 + 1
    assert gw.get(CM + "/once").status == 404
    assert gw.post(CM, obj).status == 201


def test_partition_restarts_under_the_gateway():
    gw, tp, relay = S["gw"], S["tp"], S["relay"]
    for _ in range(5):
        assert gw.get(CM + "/warned").status == 200
    n0 = relay.count()
    tp.restart()
    # The kept connections died with the old process: none of them is used (no 504). While the
    # health checker has the circuit open the gateway answers 503 at once; then 200.
    statuses = []
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        r = gw.get(CM + "/warned")
        statuses.append(r.status)
        if r.status == 200 and statuses[-3:] == [200] * min(3, len(statuses)) and len(statuses) >= 3:
            break
        time.sleep(0.1)
    assert statuses[-1] == 200, statuses
    assert all(s in (200, 503) for s in statuses), statuses
    first_ok = statuses.index(200)
    assert all(s == 200 for s in statuses[first_ok:]), statuses
    for _ in range(20):
        assert gw.get(CM + "/warned").status == 200
    assert relay.count() > n0


class ChunkedPartition:
    """A TLS stand-in tenant partition (the real partition's certificate) answering tenant
    creation, /readyz and everything else with a chunked body in several pieces and a Warning."""

    def __init__(self, tp):
        tenants = []

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def do_GET(self):
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Transfer-Encoding", "chunked")
                self.send_header("Warning", '299 - "chunky"')
                self.end_headers()
                body = json.dumps({"kind": "ConfigMap", "apiVersion": "v1", "metadata": {"name": self.path},
                                   "data": {"blob": "y" * 70000}}).encode()
                for i in range(0, len(body), 9000):
                    piece = body[i:i + 9000]
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
                    self.wfile.flush()
                self.wfile.write(b"0\r\n\r\n")

            def do_POST(self):
                obj = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))) or b"{}")
                tenants.append(obj["metadata"]["name"])
                b = json.dumps(obj).encode()
                self.send_response(201)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(b)))
                self.end_headers()
                self.wfile.write(b)

        self.srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(tp.cert_file, tp.key_file)
        self.srv.socket = ctx.wrap_socket(self.srv.socket, server_side=True)
        self.url = "https://127.0.0.1:%d" % self.srv.server_address[1]
        threading.Thread(target=self.srv.serve_forever, daemon=True).start()

    def stop(self):
        self.srv.shutdown()


def test_chunked_answer():
    part = ChunkedPartition(S["tp"])
    try:
        etcdctl("put", "/ursa/gateway/partitions/tp-chunky", json.dumps({"kind": "tp", "endpoints": [part.url]}))
        create_tenant("tchunky", {"ursa.io/partition": "tp-chunky"})
        path = "/api/v1/tenants/tchunky/namespaces/default/configmaps/c1"
        for _ in range(3):
            r = S["gw"].get(path)
            assert r.status == 200, r
            assert r.json["metadata"]["name"] == path and len(r.json["data"]["blob"]) == 70000, r
            assert r.header("Warning") == '299 - "chunky"', r.headers
    finally:
        etcdctl("del", "/ursa/gateway/partitions/tp-chunky")
        etcdctl("del", "/ursa/gateway/tenants/tchunky")
        part.stop()


if __name__ == "__main__":
    h.run(globals())
