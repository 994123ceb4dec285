#!/usr/bin/python3
"""The hops of pods/exec, pods/attach and pods/portforward: client -> gateway -> tenant partition
-> kubelet, each an upgrade tunnel (ursa/tunnel.h) that does not parse the protocol.

Set-up: a region (etcd, resource manager, tenant partition; tenants acme and beta) with a
gateway in front (identity assertions), and a fake kubelet: a node object whose kubelet endpoint
is a small TLS server here (the RM's certificate, so the partition verifies it against the
region CA) that records each upgrade request, answers 101 like a WebSocket server and then
speaks raw bytes (greeting, echo; or "bye" and close).

Checks: the request reaching the kubelet (path /exec/{ns}/{pod}/{container}?tenant=T&<query>,
/attach/..., /portforward/{ns}/{pod}?..., the kubelet token, the client's upgrade headers);
the 101's protocol headers relayed back; bytes both ways; GET and POST (old kubectl);
the default-container annotation, an unknown container (400), a request without Upgrade (400),
a kubelet refusal relayed as is; another tenant's user gets 403 at the gateway and at the
partition; a client that vanishes frees every hop (the kubelet sees the end) within seconds,
and a kubelet that ends ends the client's connection.

Run alone: URSA_BUILD_DIR=build /usr/bin/python3 tests/integration/test_streams_proxy.py"""

import base64
import hashlib
import os
import socket
import ssl
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import ursa_harness as h  # noqa: E402
import ursa_region  # noqa: E402

S = {}
NODE = "stream-node-1"
WS_GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"


class FakeKubelet:
    """TLS server: records requests; 101 then greeting + echo ("bye" + close on command=bye;
    403 Status on command=deny)."""

    def __init__(self, cert, key):
        self.ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.ctx.load_cert_chain(cert, key)
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.port = self.sock.getsockname()[1]
        self.requests = []      # (method, target, headers dict lower-case -> list)
        self.ended = []         # times connections ended (the peer's EOF)
        self.lock = threading.Lock()
        self.sink_total = 1 << 62
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            c, _ = self.sock.accept()
            threading.Thread(target=self._serve, args=(c,), daemon=True).start()

    def _serve(self, raw):
        try:
            c = self.ctx.wrap_socket(raw, server_side=True)
        except (ssl.SSLError, OSError):
            raw.close()
            return
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = c.recv(4096)
            if not chunk:
                c.close()
                return
            data += chunk
        head, rest = data.split(b"\r\n\r\n", 1)
        lines = head.decode().split("\r\n")
        method, target, _ = lines[0].split(" ", 2)
        hdrs = {}
        for ln in lines[1:]:
            k, v = ln.split(":", 1)
            hdrs.setdefault(k.strip().lower(), []).append(v.strip())
        with self.lock:
            self.requests.append((method, target, hdrs))
        if "command=deny" in target:
            body = b'{"kind":"Status","apiVersion":"v1","status":"Failure","message":"denied by kubelet","code":403}'
            c.sendall(b"HTTP/1.1 403 Forbidden\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s"
                      % (len(body), body))
            c.close()
            return
        key = hdrs.get("sec-websocket-key", [""])[0]
        accept = base64.b64encode(hashlib.sha1((key + WS_GUID).encode()).digest()).decode()
        proto = hdrs.get("sec-websocket-protocol", [""])[0].split(",")[0].strip()
        resp = ("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                "Sec-WebSocket-Accept: %s\r\nSec-WebSocket-Protocol: %s\r\nX-Kubelet-Private: 1\r\n\r\n"
                % (accept, proto))
        c.sendall(resp.encode())
        if "command=sink" in target:  # bench/streams_bench.py: counts what arrives, then says how much
            n = len(rest)
            try:
                while True:
                    chunk = c.recv(1 << 20)
                    if not chunk:
                        break
                    n += len(chunk)
                    if n >= self.sink_total:
                        break
                c.sendall(b"%d\n" % n)
            except (ssl.SSLError, OSError):
                pass
            c.close()
            return
        if "command=bye" in target:
            c.sendall(b"bye")
            time.sleep(0.2)
            c.close()
            return
        c.sendall(b"hello")
        if rest:
            c.sendall(rest)
        try:
            while True:
                chunk = c.recv(65536)
                if not chunk:
                    break
                c.sendall(chunk)
        except (ssl.SSLError, OSError):
            pass
        with self.lock:
            self.ended.append(time.monotonic())
        c.close()

    def last(self):
        with self.lock:
            return self.requests[-1] if self.requests else None


def setup():
    S.update(ursa_region.start(tenants=("acme", "beta")))
    rm = S["rm"]
    S["kubelet"] = FakeKubelet(rm.cert_file, rm.key_file)
    start_gateway()
    # the fake node: its kubelet endpoint is the fake kubelet (https, region CA)
    admin = S["admin"]
    r = admin.post("/api/v1/nodes", {"apiVersion": "v1", "kind": "Node", "metadata": {
        "name": NODE, "annotations": {"ursa.io/kubelet-scheme": "https"}}})
    h.expect_status(r, 201, "create node")
    node = r.json
    node["status"] = {"addresses": [{"type": "InternalIP", "address": "127.0.0.1"}],
                      "daemonEndpoints": {"kubeletEndpoint": {"Port": S["kubelet"].port}}}
    r = admin.put("/api/v1/nodes/%s/status" % NODE, node)
    h.expect_status(r, 200, "node status")
    for name, ann in (("web", None), ("two", {"kubectl.kubernetes.io/default-container": "side"})):
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
               "spec": {"nodeName": NODE, "containers": [{"name": "main", "image": "busybox:1.36"}]}}
        if ann:
            pod["metadata"]["annotations"] = ann
            pod["spec"]["containers"].append({"name": "side", "image": "busybox:1.36"})
        h.expect_status(S["tpadmin"].post(h.pods_path("acme"), pod), 201, "create pod " + name)
    # alice edits acme's default namespace and bob beta's (the bootstrap role grants create on
    # pods/exec, attach, portforward): bob's 403 below is the tenant boundary, not RBAC
    for tenant, user in (("acme", "alice"), ("beta", "bob")):
        rb = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
              "metadata": {"name": user + "-edit"},
              "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "edit"},
              "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}]}
        r = S["tpadmin"].post("/apis/rbac.authorization.k8s.io/v1/tenants/%s/namespaces/default/rolebindings"
                              % tenant, rb)
        h.expect_status(r, 201, "bind %s to edit" % user)
    S["alice"] = h.kubeconfig_token(S["tp"].kubeconfig("acme", "alice"))
    S["bob"] = h.kubeconfig_token(S["tp"].kubeconfig("beta", "bob"))


def start_gateway():
    S["gw"], url, _ = ursa_region.start_gateway(S["rm"], S["tp"])
    S["gw_port"] = int(url.rsplit(":", 1)[1])


def teardown():
    ursa_region.kill_containers()  # the process runtime's containers outlive their kubelet
    if S.get("real_kubelet"):
        S["real_kubelet"].stop()
    if S.get("gw"):
        h.terminate(S["gw"])


class Conn:
    """A raw TLS connection speaking one upgrade request."""

    def __init__(self, port):
        ctx = ssl.create_default_context(cafile=S["rm"].ca_file)
        self.s = ctx.wrap_socket(socket.create_connection(("127.0.0.1", port), timeout=10),
                                 server_hostname="127.0.0.1")

    def request(self, method, path, token, upgrade=True):
        req = "%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer %s\r\n" % (method, path, token)
        if upgrade:
            req += ("Connection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\n"
                    "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
                    "Sec-WebSocket-Protocol: v5.channel.k8s.io,v4.channel.k8s.io\r\n"
                    "X-Stream-Protocol-Version: v5.channel.k8s.io\r\n")
        if method == "POST":
            req += "Content-Length: 0\r\n"
        self.s.sendall((req + "\r\n").encode())
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = self.s.recv(1)
            h.check(chunk, "response head: connection ended after %r" % data)
            data += chunk
        lines = data.decode().split("\r\n")
        status = int(lines[0].split(" ")[1])
        hdrs = {}
        for ln in lines[1:]:
            if ":" in ln:
                k, v = ln.split(":", 1)
                hdrs[k.strip().lower()] = v.strip()
        return status, hdrs

    def read(self, n, timeout=10):
        self.s.settimeout(timeout)
        out = b""
        while len(out) < n:
            chunk = self.s.recv(n - len(out))
            if not chunk:
                break
            out += chunk
        return out

    def body(self, hdrs):
        return self.read(int(hdrs.get("content-length", "0")))

    def close(self):
        self.s.close()


def exec_path(pod, query, tenant=None):
    prefix = "/api/v1/tenants/%s" % tenant if tenant else "/api/v1"
    return "%s/namespaces/default/pods/%s/exec?%s" % (prefix, pod, query)


def test_exec_through_every_hop():
    kl = S["kubelet"]
    c = Conn(S["gw_port"])
    status, hdrs = c.request("GET", exec_path("web", "command=ls&command=%2F&stdout=true&stderr=true"), S["alice"])
    h.eq(status, 101, "101 through the gateway")
    h.eq(hdrs.get("sec-websocket-protocol"), "v5.channel.k8s.io", "subprotocol relayed")
    h.eq(hdrs.get("upgrade", "").lower(), "websocket", "Upgrade relayed")
    h.check("sec-websocket-accept" in hdrs, "Sec-WebSocket-Accept relayed: %r" % hdrs)
    h.check("x-kubelet-private" not in hdrs, "other kubelet headers are not relayed")
    h.eq(c.read(5), b"hello", "the kubelet's greeting")
    for msg in (b"\x00abc", b"x" * 100000):
        c.s.sendall(msg)
        h.eq(c.read(len(msg)), msg, "echo of %d bytes" % len(msg))
    method, target, khdrs = kl.last()
    h.eq(method, "GET", "method at the kubelet")
    h.eq(target, "/exec/default/web/main?tenant=acme&command=ls&command=%2F&stdout=true&stderr=true",
         "the kubelet's path")
    h.eq(khdrs.get("authorization"), ["Bearer " + S["rm"].admin_token], "the partition's kubelet token")
    h.eq(khdrs.get("sec-websocket-key"), ["dGhlIHNhbXBsZSBub25jZQ=="], "key copied")
    h.eq(khdrs.get("x-stream-protocol-version"), ["v5.channel.k8s.io"], "stream protocol copied")
    # the client vanishes: every hop ends, the kubelet sees it within seconds
    n0 = len(kl.ended)
    t0 = time.monotonic()
    c.close()
    h.wait_until(lambda: len(kl.ended) > n0, 10, "the kubelet's connection ends after the client's")
    h.check(kl.ended[-1] - t0 < 6, "freed within seconds (%.1f s)" % (kl.ended[-1] - t0))


def test_kubelet_ends_the_stream():
    c = Conn(S["gw_port"])
    status, _ = c.request("GET", exec_path("web", "command=bye&stdout=true"), S["alice"])
    h.eq(status, 101, "101")
    h.eq(c.read(3), b"bye", "last bytes")
    t0 = time.monotonic()
    try:
        rest = c.read(1, timeout=10)
    except (ssl.SSLError, OSError):
        rest = b""
    h.eq(rest, b"", "then the end")
    h.check(time.monotonic() - t0 < 5, "within seconds (%.1f s)" % (time.monotonic() - t0))
    c.close()


def test_post_attach_portforward_and_default_container():
    kl = S["kubelet"]
    for method, path, want in (
            ("POST", "/api/v1/namespaces/default/pods/web/attach?stdin=true&stdout=true",
             "/attach/default/web/main?tenant=acme&stdin=true&stdout=true"),
            ("GET", "/api/v1/namespaces/default/pods/web/portforward?ports=80",
             "/portforward/default/web?tenant=acme&ports=80"),
            ("GET", exec_path("two", "command=date&stdout=true"),
             "/exec/default/two/side?tenant=acme&command=date&stdout=true"),
            ("GET", exec_path("two", "command=date&container=main&stdout=true"),
             "/exec/default/two/main?tenant=acme&command=date&container=main&stdout=true")):
        c = Conn(S["gw_port"])
        status, _ = c.request(method, path, S["alice"])
        h.eq(status, 101, "%s %s" % (method, path))
        h.eq(c.read(5), b"hello", "greeting")
        h.eq(kl.last()[0], method, "method passed on")
        h.eq(kl.last()[1], want, "kubelet path for %s" % path)
        c.close()


def test_refusals():
    # unknown container, no upgrade, the kubelet's own refusal
    for path, upgrade, want in ((exec_path("web", "command=ls&container=nope"), True, 400),
                                (exec_path("web", "command=ls"), False, 400),
                                (exec_path("web", "command=deny"), True, 403),
                                (exec_path("missing", "command=ls"), True, 404)):
        c = Conn(S["gw_port"])
        status, hdrs = c.request("GET", path, S["alice"], upgrade=upgrade)
        body = c.body(hdrs)
        h.eq(status, want, "%s (upgrade %s): %r" % (path, upgrade, body))
        if want == 403:
            h.check(b"denied by kubelet" in body, "the kubelet's Status relayed: %r" % body)
        c.close()


def test_other_tenant_forbidden_at_gateway_and_partition():
    n0 = len(S["kubelet"].requests)
    c = Conn(S["gw_port"])
    status, hdrs = c.request("GET", exec_path("web", "command=ls", tenant="acme"), S["bob"])
    h.eq(status, 403, "bob's exec into acme's pod at the gateway: %r" % c.body(hdrs))
    c.close()
    tp_port = int(S["tp"].url.rsplit(":", 1)[1])
    c = Conn(tp_port)
    status, hdrs = c.request("GET", exec_path("web", "command=ls", tenant="acme"), S["bob"])
    h.eq(status, 403, "bob's exec into acme's pod at the partition: %r" % c.body(hdrs))
    c.close()
    h.eq(len(S["kubelet"].requests), n0, "nothing reached the kubelet")


def gw_kubeconfig(tenant, user):
    rm = S["rm"]
    out = h.must_run([h.URSACTL_BIN, "kubeconfig", "--tenant", tenant, "--user", user, "--ttl", "0",
                      "--server", "https://127.0.0.1:%d" % S["gw_port"], "--signing-key", rm.signing_key,
                      "--certificate-authority", rm.ca_file])
    path = os.path.join(h.make_tmpdir("gwkc"), "kc-%s-%s" % (tenant, user))
    with open(path, "w") as f:
        f.write(out)
    return path


def test_kubectl_exec_through_the_gateway_to_a_real_kubelet():
    """Stock kubectl, the gateway, the partition and a process-runtime kubelet (KUBELET's end)."""
    tok = os.path.join(h.make_tmpdir("kltoken"), "token")
    with open(tok, "w") as f:
        f.write(S["rm"].admin_token + "\n")  # the partition's kubelet token (its region token here)
    name = "stream-proc-1"
    kc = S["rm"].kubeconfig("system", "system:node:" + name, ("system:nodes",))
    kl = ursa_region.Kubelet(kc, ["--node-name", name, "--cpu", "2", "--memory", "4Gi", "--client-token-file", tok],
                             label="kubelet-" + name).start()
    S["real_kubelet"] = kl
    h.wait_until(lambda: ursa_region.node_ready(S["admin"], name), 60, "node %s Ready" % name)
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "pweb"},
           "spec": {"nodeName": name, "terminationGracePeriodSeconds": 1,
                    "containers": [{"name": "main", "image": "busybox:1.36", "command": ["sleep", "3600"]}]}}
    h.expect_status(S["tpadmin"].post(h.pods_path("acme"), pod), 201, "create pweb")

    def running():
        r = S["tpadmin"].get(h.pods_path("acme", name="pweb"))
        return r.status == 200 and r.json.get("status", {}).get("phase") == "Running"
    h.wait_until(running, 60, "pweb Running")
    kc_alice = gw_kubeconfig("acme", "alice")
    rc, out, err = h.run_cmd(["kubectl", "--kubeconfig", kc_alice, "exec", "pweb", "--", "echo", "hi"], 60)
    h.eq((rc, out.strip()), (0, "hi"), "kubectl exec through the gateway: %s" % err)
    rc, out, err = h.run_cmd(["kubectl", "--kubeconfig", kc_alice, "exec", "-i", "pweb", "--", "cat"], 60,
                             input_text="from stdin\n")
    h.eq((rc, out), (0, "from stdin\n"), "stdin through every hop: %s" % err)
    rc, out, err = h.run_cmd(["kubectl", "--kubeconfig", kc_alice, "exec", "pweb", "--", "sh", "-c", "exit 3"], 60)
    h.eq(rc, 3, "exit code through every hop: %s %s" % (out, err))


if __name__ == "__main__":
    h.run(globals())
