"""The kubelet's stream endpoints (/exec, /attach, /portforward) driven directly with a WebSocket
client (python3-kubernetes' `websocket` module) and raw SPDY: a kubelet with the process runtime on
a region slice (etcd + RM + TP), and one on containerd (CriNode) when the machine has it."""

import atexit
import glob
import json
import os
import socket
import struct
import sys
import threading
import time
import zlib

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import ursa_harness as h  # noqa: E402
import ursa_cri as cri  # noqa: E402
import ursa_region  # noqa: E402
import websocket  # noqa: E402  (websocket-client, from python3-kubernetes' dependencies)

NODE = "st-node-1"
CRI_NODE = "st-cri-1"
TOKEN = "kubelet-stream-token-0123456789"

S = {}
KUBELETS = []


def kill_containers():
    """Containers outlive their kubelet by design: end those our kubelets left behind."""
    ursa_region.kill_containers(KUBELETS)


atexit.register(kill_containers)


class Kubelet(ursa_region.Kubelet):
    """A kubelet whose server requires TOKEN (--client-token-file), as the partitions call it."""

    def __init__(self, kubeconfig, extra=(), label="kubelet"):
        d = h.make_tmpdir(label + "-token")
        self.token_file = os.path.join(d, "client-token")
        with open(self.token_file, "w") as f:
            f.write(TOKEN + "\n")
        super().__init__(kubeconfig, list(extra) + ["--client-token-file", self.token_file], label)
        KUBELETS.append(self)


def create_bound(tpa, pod, node):
    pod["spec"]["nodeName"] = node
    h.expect_status(tpa.post(h.pods_path("acme"), pod), 201, "create pod %s" % pod["metadata"]["name"])


def running(tpa, name):
    return (tpa.get(h.pods_path("acme", name=name)).json.get("status", {}).get("phase")) == "Running"


def setup():
    cri.require()
    node = cri.CriNode(CRI_NODE, cgroup_prefix="ursa-kst").start()
    S.update(ursa_region.start(tenants=("acme",)))
    rm, tpa = S["rm"], S["tpadmin"]
    kl = Kubelet(rm.kubeconfig("system", "system:node:" + NODE, ("system:nodes",)),
                 ["--node-name", NODE, "--cpu", "2", "--memory", "4Gi", "--max-pods", "10"], "kubelet-proc").start()
    kc = Kubelet(rm.kubeconfig("system", "system:node:" + CRI_NODE, ("system:nodes",)),
                 ["--node-name", CRI_NODE, "--cpu", "4", "--memory", "8Gi"] + node.kubelet_args(),
                 "kubelet-cri").start()
    S.update(kl=kl, kc=kc, node=node)
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web"},
           "spec": {"terminationGracePeriodSeconds": 2, "containers": [
               {"name": "c", "image": "busybox:1.36", "workingDir": "/tmp",
                "env": [{"name": "GREETING", "value": "hello-env"}],
                "command": ["sh", "-c", "i=0; while true; do echo tick-$i; echo tock-$i >&2; i=$((i+1)); sleep 0.3; done"]}]}}
    create_bound(tpa, pod, NODE)
    cpod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "cweb"},
            "spec": {"terminationGracePeriodSeconds": 2, "containers": [
                {"name": "c", "image": "busybox:1.36", "workingDir": "/tmp",
                 "env": [{"name": "GREETING", "value": "hello-cri"}],
                 "command": ["sh", "-c", "echo hello-from-cri > /tmp/index.html; httpd -p 8080 -h /tmp; i=0; "
                             "while true; do echo tick-$i; echo tock-$i >&2; i=$((i+1)); sleep 0.3; done"]}]}}
    create_bound(tpa, cpod, CRI_NODE)
    h.wait_until(lambda: running(tpa, "web"), 30, "process pod Running")
    h.wait_until(lambda: running(tpa, "cweb"), 120, "CRI pod Running")


def teardown():
    kill_containers()
    if S.get("kc"):
        S["kc"].stop()
    if S.get("node"):
        S["node"].teardown()


# ---- a small WebSocket client of the remote command protocol ----

def ws_open(port, path, protos, token=TOKEN, scheme="ws"):
    hdr = ["Authorization: Bearer %s" % token] if token else []
    return websocket.create_connection("%s://127.0.0.1:%d%s" % (scheme, port, path), subprotocols=protos,
                                       header=hdr, timeout=15)


def run_stream(ws, stdin=(), close_stdin=True, resize=None, until=None):
    """Sends stdin chunks (and the v5 close), reads until the server closes: (stdout, stderr, status)."""
    if resize:
        ws.send_binary(b"\x04" + json.dumps({"Width": resize[0], "Height": resize[1]}).encode())
    for chunk in stdin:
        ws.send_binary(b"\x00" + chunk)
    if close_stdin:
        ws.send_binary(b"\xff\x00")
    out, err, status = b"", b"", None
    while True:
        try:
            op, data = ws.recv_data(control_frame=True)
        except (websocket.WebSocketConnectionClosedException, ConnectionError):
            break
        if op == websocket.ABNF.OPCODE_CLOSE:
            break
        if op != websocket.ABNF.OPCODE_BINARY or not data:
            continue
        ch, payload = data[0], data[1:]
        if ch == 1:
            out += payload
        elif ch == 2:
            err += payload
        elif ch == 3:
            status = json.loads(payload)
        if until and until(out, err):
            break
    ws.close()
    return out, err, status


def exec_path(cmd, ns="default", pod="web", container="c", **flags):
    from urllib.parse import urlencode
    params = [("tenant", "acme")] + [("command", c) for c in cmd] + [(k, v) for k, v in flags.items()]
    return "/exec/%s/%s/%s?%s" % (ns, pod, container, urlencode(params))


# ---- process runtime ----

def test_exec_stdout_env_and_workdir():
    ws = ws_open(S["kl"].port, exec_path(["sh", "-c", "echo $GREETING; pwd; echo to-err >&2"], stdout=1, stderr=1),
                 ["v5.channel.k8s.io"])
    h.eq(ws.subprotocol, "v5.channel.k8s.io", "negotiated subprotocol")
    out, err, status = run_stream(ws, close_stdin=False)
    h.eq(out, b"hello-env\n/tmp\n", "stdout (container env and workingDir)")
    h.eq(err, b"to-err\n", "stderr")
    h.eq(status, {"metadata": {}, "status": "Success"}, "status")


def test_exec_nonzero_exit():
    ws = ws_open(S["kl"].port, exec_path(["sh", "-c", "exit 7"], stdout=1, stderr=1), ["v4.channel.k8s.io"])
    h.eq(ws.subprotocol, "v4.channel.k8s.io", "v4 accepted")
    _, _, status = run_stream(ws, close_stdin=False)
    h.eq(status["status"], "Failure", "status")
    h.eq(status["reason"], "NonZeroExitCode", "reason")
    h.eq(status["details"]["causes"], [{"reason": "ExitCode", "message": "7"}], "causes")


def test_exec_missing_command():
    ws = ws_open(S["kl"].port, exec_path(["no-such-cmd-xyz"], stdout=1, stderr=1), ["v5.channel.k8s.io"])
    _, err, status = run_stream(ws, close_stdin=False)
    h.check(b"executable file not found" in err, "message on stderr: %r" % err)
    h.eq(status["reason"], "NonZeroExitCode", "reason")
    h.eq(status["details"]["causes"][0]["message"], "127", "exit code 127 as sh and Kubernetes report it")


def test_exec_stdin_and_eof():
    data = os.urandom(300000)
    ws = ws_open(S["kl"].port, exec_path(["sh", "-c", "cat | wc -c; echo done"], stdin=1, stdout=1, stderr=1),
                 ["v5.channel.k8s.io"])
    chunks = [data[i:i + 32768] for i in range(0, len(data), 32768)]
    out, _, status = run_stream(ws, stdin=chunks, close_stdin=True)
    h.eq(out.split(), [str(len(data)).encode(), b"done"], "cat saw every stdin byte, then EOF")
    h.eq(status["status"], "Success", "status")


def test_exec_large_output_backpressure():
    ws = ws_open(S["kl"].port, exec_path(["sh", "-c", "head -c 5000000 /dev/zero"], stdout=1),
                 ["v5.channel.k8s.io"])
    time.sleep(1)  # the command is done long before we read: the kubelet holds back, no loss
    out, _, status = run_stream(ws, close_stdin=False)
    h.eq(len(out), 5000000, "all output")
    h.eq(status["status"], "Success", "status")


def test_exec_tty_and_resize():
    ws = ws_open(S["kl"].port, exec_path(["sh", "-c", "stty size; tty >/dev/null && echo is-a-tty"], stdin=1,
                                         stdout=1, tty=1), ["v5.channel.k8s.io"])
    time.sleep(0.1)  # the size comes late: the command waits for it rather than see a 0x0 terminal
    out, _, status = run_stream(ws, resize=(91, 33), close_stdin=False)
    h.check(b"33 91" in out and b"is-a-tty" in out, "terminal with the size sent: %r" % out)
    h.eq(status["status"], "Success", "status")


def test_attach_streams_output():
    from urllib.parse import urlencode
    ws = ws_open(S["kl"].port, "/attach/default/web/c?" + urlencode({"tenant": "acme", "stdout": 1, "stderr": 1}),
                 ["v5.channel.k8s.io"])
    out, err, _ = run_stream(ws, close_stdin=False, until=lambda o, e: b"tick-" in o and b"tock-" in e)
    h.check(b"tick-" in out and b"tock-" in err, "attach: stdout %r stderr %r" % (out[:100], err[:100]))


def test_errors_before_upgrade():
    c = h.Client("http://127.0.0.1:%d" % S["kl"].port)
    r = c.get(exec_path(["ls"], stdout=1))
    h.eq(r.status, 401, "no token")
    hdr = {"Authorization": "Bearer " + TOKEN, "Connection": "Upgrade", "Upgrade": "websocket",
           "Sec-WebSocket-Version": "13", "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ==",
           "Sec-WebSocket-Protocol": "v5.channel.k8s.io"}
    r = c.get(exec_path(["ls"], pod="nope", stdout=1), headers=hdr)
    h.eq(r.status, 404, "unknown pod")
    r = c.get(exec_path(["ls"], container="nope", stdout=1), headers=hdr)
    h.eq(r.status, 404, "unknown container")
    r = c.get(exec_path(["ls"], stdout=1), headers=dict(hdr, **{"Sec-WebSocket-Protocol": "channel.k8s.io"}))
    h.eq(r.status, 400, "unsupported subprotocol")
    r = c.get(exec_path(["ls"], stdout=1), headers=dict(hdr, Upgrade="SPDY/3.1"))
    h.check(r.status == 400 and b"kubectl 1.30" in r.body, "SPDY exec names the minimum kubectl: %s %r" %
            (r.status, r.body))
    r = c.get("/exec/default/web/c?tenant=acme&stdout=1", headers=hdr)
    h.eq(r.status, 400, "no command")


def raw_ws_frames(port, path, frames, read_for=3.0):
    """Opens a WebSocket by hand and writes raw frame bytes: returns what the server sent after the 101."""
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    s.sendall(("GET %s HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nConnection: Upgrade\r\n"
               "Upgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
               "Sec-WebSocket-Protocol: v5.channel.k8s.io\r\n\r\n" % (path, TOKEN)).encode())
    buf = b""
    while b"\r\n\r\n" not in buf:
        buf += s.recv(4096)
    head, rest = buf.split(b"\r\n\r\n", 1)
    h.check(head.startswith(b"HTTP/1.1 101"), "101: %r" % head[:100])
    h.check(b"s3pPLMBiTxaQ9kYGzzhZRbK+xOo=" in head, "Sec-WebSocket-Accept per RFC 6455: %r" % head)
    s.sendall(frames)
    end = time.time() + read_for
    s.settimeout(0.5)
    while time.time() < end:
        try:
            d = s.recv(65536)
        except socket.timeout:
            continue
        if not d:
            break
        rest += d
    s.close()
    return rest


def close_code(data):
    """The status code of the first close frame (opcode 8) in a server's (unmasked) frames, or None."""
    i = 0
    while i + 2 <= len(data):
        op, ln = data[i] & 0x0F, data[i + 1] & 0x7F
        j = i + 2
        if ln == 126:
            ln = struct.unpack(">H", data[j:j + 2])[0]
            j += 2
        elif ln == 127:
            ln = struct.unpack(">Q", data[j:j + 8])[0]
            j += 8
        if op == 8:
            return struct.unpack(">H", data[j:j + 2])[0] if ln >= 2 else 0
        i = j + ln
    return None


def test_malformed_and_oversized_frames_close_the_stream():
    path = exec_path(["sh", "-c", "sleep 30"], stdin=1, stdout=1)
    # an unmasked client frame is a protocol error (1002)
    got = raw_ws_frames(S["kl"].port, path, b"\x82\x03\x00ab")
    h.eq(close_code(got), 1002, "unmasked frame: close 1002")
    # a message over the limit (1 MiB): 1009
    big = 2 << 20
    frame = b"\x82\xff" + struct.pack(">Q", big) + b"\x01\x02\x03\x04" + b"\x00" * 65536
    got = raw_ws_frames(S["kl"].port, path, frame)
    h.eq(close_code(got), 1009, "oversized message: close 1009")
    # a reserved opcode: 1002
    got = raw_ws_frames(S["kl"].port, path, b"\x83\x80\x01\x02\x03\x04")
    h.eq(close_code(got), 1002, "reserved opcode: close 1002")
    # the kubelet lives on and serves the next stream
    ws = ws_open(S["kl"].port, exec_path(["echo", "still-here"], stdout=1), ["v5.channel.k8s.io"])
    out, _, _ = run_stream(ws, close_stdin=False)
    h.eq(out, b"still-here\n", "kubelet still serves")


def test_client_vanishing_kills_the_command():
    marker = "vanish-%d" % os.getpid()
    ws = ws_open(S["kl"].port, exec_path(["sh", "-c", "sleep 1000; echo " + marker], stdout=1),
                 ["v5.channel.k8s.io"])
    time.sleep(0.5)

    def running():
        for p in glob.glob("/proc/[0-9]*/cmdline"):
            try:
                if marker.encode() in open(p, "rb").read():
                    return True
            except OSError:
                pass
        return False
    h.check(running(), "exec'd command runs")
    ws.sock.close()  # no close frame: the client just goes
    h.wait_until(lambda: not running(), 5, "the command ends once its client is gone")


# ---- SPDY (port-forward) ----

DICT = (b"\x00\x00\x00\x07options\x00\x00\x00\x04head\x00\x00\x00\x04post\x00\x00\x00\x03put\x00\x00\x00\x06delete"
        b"\x00\x00\x00\x05trace\x00\x00\x00\x06accept\x00\x00\x00\x0eaccept-charset\x00\x00\x00\x0faccept-encoding"
        b"\x00\x00\x00\x0faccept-language\x00\x00\x00\x0daccept-ranges\x00\x00\x00\x03age\x00\x00\x00\x05allow"
        b"\x00\x00\x00\x0dauthorization\x00\x00\x00\x0dcache-control\x00\x00\x00\x0aconnection\x00\x00\x00\x0c"
        b"content-base\x00\x00\x00\x10content-encoding\x00\x00\x00\x10content-language\x00\x00\x00\x0econtent-length"
        b"\x00\x00\x00\x10content-location\x00\x00\x00\x0bcontent-md5\x00\x00\x00\x0dcontent-range\x00\x00\x00\x0c"
        b"content-type\x00\x00\x00\x04date\x00\x00\x00\x04etag\x00\x00\x00\x06expect\x00\x00\x00\x07expires\x00\x00"
        b"\x00\x04from\x00\x00\x00\x04host\x00\x00\x00\x08if-match\x00\x00\x00\x11if-modified-since\x00\x00\x00\x0d"
        b"if-none-match\x00\x00\x00\x08if-range\x00\x00\x00\x13if-unmodified-since\x00\x00\x00\x0dlast-modified\x00"
        b"\x00\x00\x08location\x00\x00\x00\x0cmax-forwards\x00\x00\x00\x06pragma\x00\x00\x00\x12proxy-authenticate"
        b"\x00\x00\x00\x13proxy-authorization\x00\x00\x00\x05range\x00\x00\x00\x07referer\x00\x00\x00\x0bretry-after"
        b"\x00\x00\x00\x06server\x00\x00\x00\x02te\x00\x00\x00\x07trailer\x00\x00\x00\x11transfer-encoding\x00\x00"
        b"\x00\x07upgrade\x00\x00\x00\x0auser-agent\x00\x00\x00\x04vary\x00\x00\x00\x03via\x00\x00\x00\x07warning"
        b"\x00\x00\x00\x10www-authenticate\x00\x00\x00\x06method\x00\x00\x00\x03get\x00\x00\x00\x06status\x00\x00"
        b"\x00\x06200 OK\x00\x00\x00\x07version\x00\x00\x00\x08HTTP/1.1\x00\x00\x00\x03url\x00\x00\x00\x06public"
        b"\x00\x00\x00\x0aset-cookie\x00\x00\x00\x0akeep-alive\x00\x00\x00\x06origin100101201202205206300302303304"
        b"305306307402405406407408409410411412413414415416417502504505203 Non-Authoritative Information204 No "
        b"Content301 Moved Permanently400 Bad Request401 Unauthorized403 Forbidden404 Not Found500 Internal Server "
        b"Error501 Not Implemented503 Service UnavailableJan Feb Mar Apr May Jun Jul Aug Sept Oct Nov Dec 00:00:00 "
        b"Mon, Tue, Wed, Thu, Fri, Sat, Sun, GMTchunked,text/html,image/png,image/jpg,image/gif,application/xml,"
        b"application/xhtml+xml,text/plain,text/javascript,publicprivatemax-age=gzip,deflate,sdchcharset=utf-8"
        b"charset=iso-8859-1,utf-,*,enq=0.")


class SpdyClient:
    """Just enough of a SPDY/3.1 client for port-forward tests: SYN_STREAM, DATA, FIN."""

    def __init__(self, send):
        self.send = send
        self.comp = zlib.compressobj(zdict=DICT)
        self.decomp = zlib.decompressobj(zdict=DICT)
        self.next_id = 1
        self.buf = b""
        self.data = {}
        self.fin = set()
        self.replied = set()
        self.rst = set()

    def headers(self, hs):
        block = struct.pack(">I", len(hs))
        for k, v in hs:
            block += struct.pack(">I", len(k)) + k.encode() + struct.pack(">I", len(v)) + v.encode()
        return self.comp.compress(block) + self.comp.flush(zlib.Z_SYNC_FLUSH)

    def syn(self, hs):
        sid = self.next_id
        self.next_id += 2
        payload = struct.pack(">II", sid, 0) + b"\x00\x00" + self.headers(hs)
        self.send(struct.pack(">HHI", 0x8003, 1, len(payload)) + payload)
        return sid

    def data_frame(self, sid, data, fin=False):
        self.send(struct.pack(">II", sid, ((1 if fin else 0) << 24) | len(data)) + data)

    def feed(self, data):
        self.buf += data
        while len(self.buf) >= 8:
            w1, w2 = struct.unpack(">II", self.buf[:8])
            ln = w2 & 0xFFFFFF
            flags = w2 >> 24
            if len(self.buf) < 8 + ln:
                break
            payload, self.buf = self.buf[8:8 + ln], self.buf[8 + ln:]
            if w1 & 0x80000000:
                typ = w1 & 0xFFFF
                if typ == 2:  # SYN_REPLY
                    sid = struct.unpack(">I", payload[:4])[0] & 0x7FFFFFFF
                    self.decomp.decompress(payload[4:])
                    self.replied.add(sid)
                    if flags & 1:
                        self.fin.add(sid)
                elif typ == 3:
                    self.rst.add(struct.unpack(">I", payload[:4])[0] & 0x7FFFFFFF)
            else:
                self.data[w1] = self.data.get(w1, b"") + payload
                if flags & 1:
                    self.fin.add(w1)


def echo_server():
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(8)

    def serve():
        while True:
            try:
                c, _ = srv.accept()
            except OSError:
                return

            def one(c=c):
                got = b""
                while True:
                    d = c.recv(65536)
                    if not d:
                        break
                    got += d
                c.sendall(b"echo:" + got)
                c.close()
            threading.Thread(target=one, daemon=True).start()
    threading.Thread(target=serve, daemon=True).start()
    return srv


def closed_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def portforward_session(transport, port, bad_port, kl_port=None, pod="web", request=b"hello through the tunnel",
                        expect=b"echo:hello through the tunnel", proto="v2.portforward.k8s.io"):
    """One forwarded connection (request -> expect), one to a closed port, then another good one, on
    one session."""
    kl_port = kl_port or S["kl"].port
    if transport == "ws":
        ws = ws_open(kl_port, "/portforward/default/%s?tenant=acme" % pod, [proto])
        h.eq(ws.subprotocol.lower(), proto.lower(), "port-forward subprotocol")
        sp = SpdyClient(lambda b: ws.send_binary(b))

        def pump():
            op, data = ws.recv_data(control_frame=True)
            if op == websocket.ABNF.OPCODE_BINARY:
                sp.feed(data)
    else:
        s = socket.create_connection(("127.0.0.1", kl_port), timeout=10)
        s.sendall(("POST /portForward/default/%s?tenant=acme HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n"
                   "Connection: Upgrade\r\nUpgrade: SPDY/3.1\r\nX-Stream-Protocol-Version: portforward.k8s.io\r\n"
                   "Content-Length: 0\r\n\r\n" % (pod, TOKEN)).encode())
        buf = b""
        while b"\r\n\r\n" not in buf:
            buf += s.recv(4096)
        head, rest = buf.split(b"\r\n\r\n", 1)
        h.check(head.startswith(b"HTTP/1.1 101") and b"portforward.k8s.io" in head, "SPDY 101: %r" % head)
        sp = SpdyClient(s.sendall)
        sp.feed(rest)

        def pump():
            sp.feed(s.recv(65536))
    e1 = sp.syn([("streamtype", "error"), ("port", str(port)), ("requestid", "0")])
    d1 = sp.syn([("streamtype", "data"), ("port", str(port)), ("requestid", "0")])
    sp.data_frame(d1, request, fin=True)
    e2 = sp.syn([("streamtype", "error"), ("port", str(bad_port)), ("requestid", "1")])
    d2 = sp.syn([("streamtype", "data"), ("port", str(bad_port)), ("requestid", "1")])
    end = time.time() + 10
    while time.time() < end and not (d1 in sp.fin and e2 in sp.fin):
        pump()
    h.check(expect in sp.data.get(d1, b""), "data through the forwarded connection: %r" % sp.data.get(d1))
    h.check(b"forwarding port %d" % bad_port in sp.data.get(e2, b""), "closed port reported: %r" % sp.data.get(e2))
    # the session lives on: a third connection works
    e3 = sp.syn([("streamtype", "error"), ("port", str(port)), ("requestid", "2")])
    d3 = sp.syn([("streamtype", "data"), ("port", str(port)), ("requestid", "2")])
    sp.data_frame(d3, request, fin=True)
    end = time.time() + 10
    while time.time() < end and d3 not in sp.fin:
        pump()
    h.check(expect in sp.data.get(d3, b""), "session kept after the closed port: %r" % sp.data.get(d3))
    h.check({e1, e2, e3} <= sp.replied and {d1, d2, d3} <= sp.replied, "every stream answered")


def test_portforward_websocket_and_spdy():
    srv = echo_server()
    try:
        bad = closed_port()
        portforward_session("ws", srv.getsockname()[1], bad)
        portforward_session("spdy", srv.getsockname()[1], bad)
    finally:
        srv.close()


# ---- CRI runtime (containerd's streaming server behind the kubelet) ----

def cri_exec(cmd, **flags):
    return ws_open(S["kc"].port, exec_path(cmd, pod="cweb", **flags), ["v5.channel.k8s.io"])


def test_cri_exec_stdout_stderr_and_status():
    out, err, status = run_stream(cri_exec(["sh", "-c", "echo $GREETING; pwd; echo e >&2"], stdout=1, stderr=1),
                                  close_stdin=False)
    h.eq((out, err), (b"hello-cri\n/tmp\n", b"e\n"), "stdout and stderr from containerd")
    h.eq(status.get("status"), "Success", "status %r" % status)


def test_cri_exec_nonzero_exit():
    _, _, status = run_stream(cri_exec(["sh", "-c", "exit 3"], stdout=1, stderr=1), close_stdin=False)
    h.eq((status.get("reason"), status["details"]["causes"][0]), ("NonZeroExitCode", {"reason": "ExitCode",
                                                                                       "message": "3"}), "exit 3")


def test_cri_exec_missing_command():
    out, err, status = run_stream(cri_exec(["no-such-cmd-xyz"], stdout=1, stderr=1), close_stdin=False)
    # containerd answers InternalError; the kubelet reports it as the process runtime does: the runtime's
    # words on stderr and exit code 127 (kubectl: "command terminated with exit code 127")
    h.check(b"executable file not found" in err, "runtime's message on stderr: %r" % err)
    h.eq((status.get("reason"), status["details"]["causes"][0]["message"]), ("NonZeroExitCode", "127"),
         "missing command: exit code 127")


def test_cri_exec_stdin_eof_through_spdy():
    data = os.urandom(200000)
    chunks = [data[i:i + 32768] for i in range(0, len(data), 32768)]
    out, _, status = run_stream(cri_exec(["sh", "-c", "cat | wc -c"], stdin=1, stdout=1, stderr=1), stdin=chunks)
    h.eq(out.strip(), str(len(data)).encode(), "every byte, then EOF (FIN on the SPDY stdin stream)")
    h.eq(status.get("status"), "Success", "status")


def test_cri_exec_tty_resize():
    out, _, status = run_stream(cri_exec(["sh", "-c", "sleep 0.5; stty size"], stdin=1, stdout=1, tty=1),
                                resize=(101, 37), close_stdin=False)
    h.check(b"37 101" in out, "terminal size through the resize stream: %r" % out)


def test_cri_attach():
    from urllib.parse import urlencode
    ws = ws_open(S["kc"].port, "/attach/default/cweb/c?" + urlencode({"tenant": "acme", "stdout": 1, "stderr": 1}),
                 ["v5.channel.k8s.io"])
    out, err, _ = run_stream(ws, close_stdin=False, until=lambda o, e: b"tick-" in o and b"tock-" in e)
    h.check(b"tick-" in out and b"tock-" in err, "attach through containerd: %r %r" % (out[:80], err[:80]))


def test_cri_portforward_tunnel():
    req = b"GET /index.html HTTP/1.0\r\n\r\n"
    for transport in ("ws", "spdy"):
        portforward_session(transport, 8080, 8081, kl_port=S["kc"].port, pod="cweb", request=req,
                            expect=b"hello-from-cri")
    portforward_session("ws", 8080, 8081, kl_port=S["kc"].port, pod="cweb", request=req, expect=b"hello-from-cri",
                        proto="SPDY/3.1+portforward.k8s.io")


# ---- stock kubectl (1.30 and 1.33) through a stand-in for the partition's stream proxy ----
#
# The partition's own proxy (src/common/apiserver/streamproxy.c) is tested in test_streams_proxy.py.
# Here a small proxy plays its part so that stock kubectl meets this kubelet: ordinary requests go to
# the TP unchanged (TLS, the caller's token), pods/exec, attach and portforward are rewritten to the
# kubelet's paths with its token, and then bytes are pumped both ways.

import re  # noqa: E402
import ssl  # noqa: E402
from urllib.parse import urlsplit, parse_qsl, urlencode  # noqa: E402

KUBECTLS = {"1.30": "/usr/lib/google-cloud-sdk/bin/kubectl.1.30", "1.33": "/usr/lib/google-cloud-sdk/bin/kubectl.1.33"}
STREAM_RE = re.compile(r"^/api/v1/namespaces/([^/]+)/pods/([^/]+)/(exec|attach|portforward)$")


def pump(a, b):
    def one(src, dst):
        try:
            while True:
                d = src.recv(65536)
                if not d:
                    break
                dst.sendall(d)
        except OSError:
            pass
        for x in (dst,):
            try:
                x.shutdown(socket.SHUT_WR)
            except OSError:
                pass
    t = threading.Thread(target=one, args=(b, a), daemon=True)
    t.start()
    one(a, b)
    t.join(30)
    a.close()
    b.close()


def proxy_conn(c, kubelets):
    buf = b""
    while b"\r\n\r\n" not in buf:
        d = c.recv(65536)
        if not d:
            c.close()
            return
        buf += d
    head, rest = buf.split(b"\r\n\r\n", 1)
    lines = head.decode("latin-1").split("\r\n")
    method, target, version = lines[0].split(" ", 2)
    hdrs = [l for l in lines[1:] if l]
    u = urlsplit(target)
    m = STREAM_RE.match(u.path)
    if m:
        ns, pod, kind = m.groups()
        kl_port = kubelets[pod]
        params = [(k, v) for k, v in parse_qsl(u.query, keep_blank_values=True) if k != "container"]
        container = dict(parse_qsl(u.query)).get("container", "c")
        path = "/%s/%s/%s%s?%s" % (kind, ns, pod, "" if kind == "portforward" else "/" + container,
                                   urlencode([("tenant", "acme")] + params))
        hdrs = [l for l in hdrs if not l.lower().startswith(("authorization:", "host:"))]
        up = socket.create_connection(("127.0.0.1", kl_port), timeout=30)
        up.settimeout(None)
        up.sendall(("%s %s %s\r\nHost: 127.0.0.1\r\nAuthorization: Bearer %s\r\n%s\r\n\r\n" % (
            method, path, version, TOKEN, "\r\n".join(hdrs))).encode("latin-1") + rest)
    else:
        tp = urlsplit(S["tp"].url)
        ctx = ssl.create_default_context(cafile=S["tp"].ca_file)
        raw = socket.create_connection((tp.hostname, tp.port), timeout=30)
        up = ctx.wrap_socket(raw, server_hostname=tp.hostname)
        # kubectl sends no bearer token over plain http: the proxy adds the user's
        hdrs = [l for l in hdrs if not l.lower().startswith(("connection:", "authorization:"))] + [
            "Connection: close", "Authorization: Bearer " + S["ptoken"]]
        up.sendall(("%s %s %s\r\n%s\r\n\r\n" % (method, target, version, "\r\n".join(hdrs))).encode("latin-1")
                   + rest)
    c.settimeout(None)
    pump(c, up)


def start_proxy():
    srv = socket.socket()
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(("127.0.0.1", 0))
    srv.listen(64)
    kubelets = {"web": S["kl"].port, "cweb": S["kc"].port}

    def loop():
        while True:
            try:
                c, _ = srv.accept()
            except OSError:
                return
            threading.Thread(target=proxy_conn, args=(c, kubelets), daemon=True).start()
    threading.Thread(target=loop, daemon=True).start()
    token = h.kubeconfig_token(S["tp"].kubeconfig("acme", "alice"))
    kc = os.path.join(h.make_tmpdir("kst-kubeconfig"), "kubeconfig")
    with open(kc, "w") as f:
        json.dump({"apiVersion": "v1", "kind": "Config", "current-context": "c",
                   "clusters": [{"name": "p", "cluster": {"server": "http://127.0.0.1:%d" % srv.getsockname()[1]}}],
                   "users": [{"name": "u", "user": {"token": token}}],
                   "contexts": [{"name": "c", "context": {"cluster": "p", "user": "u", "namespace": "default"}}]}, f)
    S["proxy"], S["pkc"], S["ptoken"] = srv, kc, token
    return kc


def kubectl(version, args, input_text=None, timeout=60):
    kc = S.get("pkc") or start_proxy()
    return h.run_cmd([KUBECTLS[version], "--kubeconfig", kc] + list(args), timeout, input_text=input_text)


def test_kubectl_exec_both_versions_and_runtimes():
    for v in ("1.30", "1.33"):
        for pod, want in (("web", "hello-env"), ("cweb", "hello-cri")):
            rc, out, err = kubectl(v, ["exec", pod, "--", "sh", "-c", "echo $GREETING; ls /"])
            h.check(rc == 0 and out.startswith(want + "\n") and "tmp" in out.split(),
                    "kubectl %s exec %s: rc=%d out=%r err=%r" % (v, pod, rc, out[:200], err[-300:]))
            rc, out, err = kubectl(v, ["exec", "-i", pod, "--", "sh", "-c", "wc -c"], input_text="x" * 100000)
            h.check(rc == 0 and out.strip() == "100000", "kubectl %s exec -i %s (stdin, then EOF): rc=%d out=%r err=%r"
                    % (v, pod, rc, out, err[-300:]))
            rc, out, err = kubectl(v, ["exec", pod, "--", "sh", "-c", "exit 5"])
            h.check(rc == 5 and "command terminated with exit code 5" in err,
                    "kubectl %s exec exit 5 on %s: rc=%d err=%r" % (v, pod, rc, err[-300:]))
            rc, out, err = kubectl(v, ["exec", pod, "--", "no-such-cmd-xyz"])
            h.check(rc == 127 and "command terminated with exit code 127" in err and "not found" in err + out,
                    "kubectl %s exec of a missing command on %s: rc=%d out=%r err=%r" % (v, pod, rc, out, err[-300:]))


def test_kubectl_cp_both_ways():
    d = h.make_tmpdir("kst-cp")
    src = os.path.join(d, "in.bin")
    payload = os.urandom(150000)
    with open(src, "wb") as f:
        f.write(payload)
    for v in ("1.30", "1.33"):
        for pod in ("web", "cweb"):
            # the process runtime's containers share the node's file system: a private path there
            remote = (d if pod == "web" else "/tmp") + "/copied-%s-%s" % (v, pod)
            rc, out, err = kubectl(v, ["cp", src, "%s:%s" % (pod, remote)])
            h.check(rc == 0, "kubectl %s cp in to %s: rc=%d err=%r" % (v, pod, rc, err[-300:]))
            back = os.path.join(d, "back-%s-%s" % (v, pod))
            rc, out, err = kubectl(v, ["cp", "%s:%s" % (pod, remote), back])
            h.check(rc == 0, "kubectl %s cp out of %s: rc=%d err=%r" % (v, pod, rc, err[-300:]))
            with open(back, "rb") as f:
                h.check(f.read() == payload, "kubectl %s cp round trip through %s" % (v, pod))


def test_kubectl_attach():
    for v in ("1.30", "1.33"):
        for pod in ("web", "cweb"):
            rc, out, err = kubectl(v, ["attach", pod, "-c", "c"], timeout=3)
            h.check("tick-" in out, "kubectl %s attach %s prints the container's output: rc=%d out=%r err=%r" %
                    (v, pod, rc, out[:200], err[-300:]))


def test_kubectl_port_forward():
    srv = echo_server()  # the process runtime's pod shares the node's network
    try:
        for v in ("1.30", "1.33"):
            for pod, port, req, want in (("web", srv.getsockname()[1], b"ping", b"echo:ping"),
                                         ("cweb", 8080, b"GET /index.html HTTP/1.0\r\n\r\n", b"hello-from-cri")):
                local = h.free_port()
                pf = h.spawn([KUBECTLS[v], "--kubeconfig", S.get("pkc") or start_proxy(), "port-forward",
                              "pod/" + pod, "%d:%d" % (local, port)],
                             os.path.join(h.make_tmpdir("kst-pf"), "pf.log"))
                try:
                    def fetch():
                        try:
                            c = socket.create_connection(("127.0.0.1", local), timeout=5)
                        except OSError:
                            return None
                        c.sendall(req)
                        c.shutdown(socket.SHUT_WR)
                        got = b""
                        while True:
                            dd = c.recv(65536)
                            if not dd:
                                break
                            got += dd
                        c.close()
                        return got if want in got else None
                    h.wait_until(fetch, 20, "kubectl %s port-forward to %s answers" % (v, pod))
                    h.check(fetch(), "a second connection through kubectl %s port-forward to %s" % (v, pod))
                finally:
                    h.terminate(pf)
    finally:
        srv.close()


h.run(globals())