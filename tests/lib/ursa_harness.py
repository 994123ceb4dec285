"""Harness for Ursa's integration and end-to-end tests. Standard library only, for /usr/bin/python3.

It starts real processes on loopback with ephemeral ports and a temporary directory:

    etcd = Etcd()                 # or Etcd(members=3)
    etcd.start()
    api = ApiServer(etcd)         # ursa-tp-apiserver from $URSA_BUILD_DIR, HTTPS, fresh CA
    api.start()
    admin = api.admin()           # HTTP client with the static admin token (tenant system)
    r = admin.get("/api/v1/tenants")
    kc = api.kubeconfig("acme", "alice")     # via `ursactl kubeconfig`
    rc, out, err = kubectl(["get", "pods"], kc)

and a tiny runner: a test file defines setup() (optional) and test_* functions and ends with
`run(globals())`. Tests run in file order, each under a time limit; the runner prints PASS/FAIL
lines, the closing line "N passed, N failed", the logs of the started processes on failure, and
exits non-zero if anything failed. Every child process is killed when the test exits, however it
exits (atexit, SIGTERM/SIGINT/SIGHUP, and PR_SET_PDEATHSIG if the runner itself is killed);
at_cleanup(fn) adds clean-up for what is not a child (tests/lib/ursa_cri.py: containerd nodes).

Environment: URSA_BUILD_DIR (default <repo>/build), URSA_KEEP_TMP=1 keeps temporary directories.
"""

import atexit
import base64
import ctypes
import http.client
import json
import os
import queue
import secrets
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import urllib.parse

SOURCE_DIR = os.path.abspath(os.environ.get("URSA_SOURCE_DIR")
                             or os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD_DIR = os.path.abspath(os.environ.get("URSA_BUILD_DIR") or os.path.join(SOURCE_DIR, "build"))
APISERVER_BIN = os.path.join(BUILD_DIR, "src", "tenant-partition", "ursa-tp-apiserver")
URSACTL_BIN = os.path.join(BUILD_DIR, "src", "ursactl", "ursactl")
TP_CM_BIN = os.path.join(BUILD_DIR, "src", "tenant-partition", "controllers", "ursa-tp-controller-manager")
ETCD_BIN = "/usr/bin/etcd"

ADMIN_TENANT = "system"
ADMIN_GROUP = "system:masters"


class HarnessError(Exception):
    """The environment could not be set up (missing binary, process died, timeout)."""


# ---------------------------------------------------------------------------------------------
# Children, temporary directories, cleanup

_children = []
_tmpdirs = []
_cleanups = []      # functions run by cleanup() after the children are killed, newest first
_logs = []          # (label, path) of every log file, printed when a test fails
_state = {"failed": False, "cleaned": False}
_used_ports = set()

_libc = None
try:
    _libc = ctypes.CDLL(None, use_errno=True)
except OSError:
    pass


def _child_setup():
    # Runs in the child between fork and exec: die with the parent (PR_SET_PDEATHSIG = 1).
    if _libc is not None:
        _libc.prctl(1, signal.SIGKILL, 0, 0, 0)


def spawn(args, log_path, env=None):
    """Starts args with stdout and stderr appended to log_path. The process is killed at exit."""
    log = open(log_path, "ab")
    log.write(("\n--- %s starting: %s\n" % (time.strftime("%H:%M:%S"), " ".join(args))).encode())
    log.flush()
    p = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                         env=env, preexec_fn=_child_setup, start_new_session=True)
    log.close()
    _children.append(p)
    return p


def terminate(p, grace=10.0):
    """TERM, then KILL after grace seconds. Returns the exit status."""
    if p is None:
        return None
    if p.poll() is None:
        try:
            p.terminate()
            return p.wait(grace)
        except subprocess.TimeoutExpired:
            p.kill()
    return p.wait()


def kill(p):
    if p is not None and p.poll() is None:
        p.kill()
    return p.wait() if p is not None else None


def make_tmpdir(label):
    d = tempfile.mkdtemp(prefix="ursa-%s-" % label)
    _tmpdirs.append(d)
    return d


def keep_tmpdir(d, why):
    """d (from make_tmpdir) is not removed at exit, say because something is still mounted in it."""
    if d in _tmpdirs:
        _tmpdirs.remove(d)
        print("kept temporary directory %s: %s" % (d, why), flush=True)


def at_cleanup(fn):
    """Runs fn() when the test exits, however it exits (the runner's end, atexit, SIGTERM/SIGINT/
    SIGHUP): after the children are killed and before the temporary directories are removed;
    the newest first. For what is not a child of the harness (containerd and its shims, a
    registry started by a script). fn must be safe to call twice; its exceptions are printed."""
    _cleanups.append(fn)
    return fn


def cleanup():
    if _state["cleaned"]:
        return
    _state["cleaned"] = True
    for p in reversed(_children):
        try:
            if p.poll() is None:
                p.kill()
            p.wait(5)
        except Exception:  # noqa: BLE001 - cleanup must go on
            pass
    while _cleanups:
        fn = _cleanups.pop()
        try:
            fn()
        except Exception as e:  # noqa: BLE001 - cleanup must go on
            print("cleanup %s: %s" % (getattr(fn, "__qualname__", fn), e), file=sys.stderr, flush=True)
    if _state["failed"] or os.environ.get("URSA_KEEP_TMP"):
        for d in _tmpdirs:
            print("kept temporary directory %s" % d, flush=True)
        return
    import shutil
    for d in _tmpdirs:
        shutil.rmtree(d, ignore_errors=True)


def _on_signal(signum, frame):
    _state["failed"] = True
    print("harness: got signal %d, killing children" % signum, file=sys.stderr, flush=True)
    cleanup()
    os._exit(128 + signum)


atexit.register(cleanup)
for _sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
    signal.signal(_sig, _on_signal)


def free_port():
    """A loopback TCP port that was free a moment ago (bind to port 0)."""
    for _ in range(50):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        if port not in _used_ports:
            _used_ports.add(port)
            return port
    raise HarnessError("no free port found")


def log_tail(path, lines=40):
    try:
        with open(path, "rb") as f:
            data = f.read()[-200000:]
    except OSError as e:
        return "(cannot read %s: %s)" % (path, e)
    return "\n".join(data.decode("utf-8", "replace").splitlines()[-lines:])


def run_cmd(args, timeout=60, input_text=None, env=None):
    """Runs a command; returns (rc, stdout, stderr) as text."""
    try:
        p = subprocess.run(args, input=input_text, capture_output=True, text=True,
                           timeout=timeout, env=env, preexec_fn=_child_setup)
    except subprocess.TimeoutExpired as e:
        out = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
        err = e.stderr.decode() if isinstance(e.stderr, bytes) else (e.stderr or "")
        return 124, out, err + "\n(timed out after %ss: %s)" % (timeout, " ".join(args))
    except FileNotFoundError as e:
        return 127, "", str(e)
    return p.returncode, p.stdout, p.stderr


def must_run(args, timeout=60):
    rc, out, err = run_cmd(args, timeout)
    if rc != 0:
        raise HarnessError("command failed (rc %d): %s\nstdout: %s\nstderr: %s"
                           % (rc, " ".join(args), out[-2000:], err[-2000:]))
    return out


def uniq(prefix):
    """A fresh DNS-1123 name: prefix-<6 hex>."""
    return "%s-%s" % (prefix, secrets.token_hex(3))


# ---------------------------------------------------------------------------------------------
# Certificates

def make_ca(directory):
    """Writes ca.key, ca.crt, server.key, server.crt (SAN 127.0.0.1, localhost) into directory."""
    ca_key = os.path.join(directory, "ca.key")
    ca_crt = os.path.join(directory, "ca.crt")
    key = os.path.join(directory, "server.key")
    csr = os.path.join(directory, "server.csr")
    crt = os.path.join(directory, "server.crt")
    ext = os.path.join(directory, "server.ext")
    must_run(["openssl", "genrsa", "-out", ca_key, "2048"])
    must_run(["openssl", "req", "-x509", "-new", "-key", ca_key, "-sha256", "-days", "30",
              "-subj", "/CN=ursa-test-ca", "-addext", "basicConstraints=critical,CA:TRUE",
              "-addext", "keyUsage=critical,keyCertSign,cRLSign",
              "-addext", "subjectKeyIdentifier=hash", "-out", ca_crt])
    with open(ext, "w") as f:
        f.write("basicConstraints=critical,CA:FALSE\n"
                "keyUsage=critical,digitalSignature\n"
                "extendedKeyUsage=serverAuth,clientAuth\n"
                "subjectKeyIdentifier=hash\nauthorityKeyIdentifier=keyid,issuer\n"
                "subjectAltName=IP:127.0.0.1,DNS:localhost\n")
    # ECDSA P-256, as deploy/lib/common.sh's ensure_server_cert
    must_run(["openssl", "genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", key])
    must_run(["openssl", "req", "-new", "-key", key, "-subj", "/CN=ursa-test-server", "-out", csr])
    must_run(["openssl", "x509", "-req", "-in", csr, "-CA", ca_crt, "-CAkey", ca_key,
              "-CAcreateserial", "-days", "30", "-sha256", "-extfile", ext, "-out", crt])
    return ca_crt, crt, key


# ---------------------------------------------------------------------------------------------
# HTTP client

class Response:
    def __init__(self, status, reason, headers, body):
        self.status = status
        self.reason = reason
        self.headers = {k.lower(): v for k, v in headers}
        self.body = body
        self.text = body.decode("utf-8", "replace")
        try:
            self.json = json.loads(self.text) if self.text else None
        except ValueError:
            self.json = None

    def header(self, name):
        return self.headers.get(name.lower())

    def __repr__(self):
        t = self.text if len(self.text) < 1500 else self.text[:1500] + "...(%d bytes)" % len(self.text)
        return "HTTP %d %s: %s" % (self.status, self.reason, t)


class Client:
    """HTTP(S) client for one server. Bodies given as dict or list are sent as JSON."""

    def __init__(self, base_url, ca_file=None, token=None, timeout=30):
        u = urllib.parse.urlsplit(base_url)
        self.base_url = base_url
        self.https = u.scheme == "https"
        self.host = u.hostname
        self.port = u.port or (443 if self.https else 80)
        self.token = token
        self.timeout = timeout
        self.ctx = None
        if self.https:
            self.ctx = ssl.create_default_context(cafile=ca_file)

    def connect(self, timeout=None):
        t = timeout or self.timeout
        if self.https:
            return http.client.HTTPSConnection(self.host, self.port, timeout=t, context=self.ctx)
        return http.client.HTTPConnection(self.host, self.port, timeout=t)

    def _headers(self, headers, content_type, has_body):
        h = {"Accept": "application/json"}
        if self.token:
            h["Authorization"] = "Bearer " + self.token
        if has_body:
            h["Content-Type"] = content_type
        h.update(headers or {})
        return h

    @staticmethod
    def encode(body):
        if body is None:
            return None
        if isinstance(body, (dict, list)):
            return json.dumps(body).encode()
        if isinstance(body, str):
            return body.encode()
        return body

    def request(self, method, path, body=None, content_type="application/json", headers=None,
                timeout=None):
        data = self.encode(body)
        conn = self.connect(timeout)
        try:
            conn.request(method, path, body=data,
                         headers=self._headers(headers, content_type, data is not None))
            r = conn.getresponse()
            return Response(r.status, r.reason, r.getheaders(), r.read())
        finally:
            conn.close()

    def get(self, path, **kw):
        return self.request("GET", path, **kw)

    def post(self, path, body, **kw):
        return self.request("POST", path, body, **kw)

    def put(self, path, body, **kw):
        return self.request("PUT", path, body, **kw)

    def patch(self, path, body, content_type="application/merge-patch+json", **kw):
        return self.request("PATCH", path, body, content_type=content_type, **kw)

    def delete(self, path, body=None, **kw):
        return self.request("DELETE", path, body, **kw)

    def watch(self, path, headers=None, timeout=120, method="GET", body=None):
        return Watch(self, path, headers, timeout, method, body)


class Watch:
    """A streaming GET (or a POST: multiplexed watches) read by a background thread, one JSON
    event per line.

    If the server answers with anything but 200, .status and .response hold the answer and no
    event will come. next(timeout) returns an event dict, None on timeout, or raises EOFError
    once the stream has ended and every event was consumed."""

    _EOF = object()

    def __init__(self, client, path, headers, timeout, method="GET", body=None):
        self.path = path
        self.events = []          # every event received so far
        self.bad_lines = []
        self._q = queue.Queue()
        self._conn = client.connect(timeout)
        data = client.encode(body)
        self._conn.request(method, path, body=data,
                           headers=client._headers(headers, "application/json", data is not None))
        r = self._conn.getresponse()
        self.status = r.status
        self.headers = {k.lower(): v for k, v in r.getheaders()}
        self.response = None
        self.ended = False
        if r.status != 200:
            self.response = Response(r.status, r.reason, r.getheaders(), r.read())
            self._conn.close()
            self.ended = True
            self._q.put(self._EOF)
            return
        self._resp = r
        self._t = threading.Thread(target=self._reader, daemon=True)
        self._t.start()

    def _reader(self):
        try:
            while True:
                line = self._resp.readline()
                if not line:
                    break
                line = line.strip()
                if not line:
                    continue
                try:
                    ev = json.loads(line)
                except ValueError:
                    self.bad_lines.append(line)
                    continue
                self._q.put(ev)
        except Exception as e:  # noqa: BLE001 - a closed socket ends the stream
            self.error = e
        self._q.put(self._EOF)

    def next(self, timeout):
        try:
            ev = self._q.get(timeout=max(timeout, 0.001))
        except queue.Empty:
            return None
        if ev is self._EOF:
            self.ended = True
            self._q.put(self._EOF)
            raise EOFError("watch stream ended")
        self.events.append(ev)
        return ev

    def until(self, pred, timeout):
        """Reads events until pred(event) is true; returns that event or None (timeout or end)."""
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            try:
                ev = self.next(left)
            except EOFError:
                return None
            if ev is not None and pred(ev):
                return ev

    def drain(self, timeout):
        """Reads until the stream ends or timeout; returns every event received so far."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                self.next(deadline - time.monotonic())
            except EOFError:
                break
        return self.events

    def close(self):
        try:
            if self._conn.sock is not None:
                self._conn.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self._conn.close()

    def summary(self):
        return [(e.get("type"), ((e.get("object") or {}).get("metadata") or {}).get("name"))
                for e in self.events]


# ---------------------------------------------------------------------------------------------
# etcd

class Etcd:
    """One etcd member or a cluster of several, on loopback ports, in a temporary directory."""

    def __init__(self, members=1, name="etcd", extra_args=()):
        self.dir = make_tmpdir(name)
        self.token = "ursa-" + secrets.token_hex(4)
        self.extra_args = list(extra_args)
        self.members = []
        for i in range(members):
            m = {"name": "%s-%d" % (name, i), "client": free_port(), "peer": free_port(),
                 "proc": None}
            m["data"] = os.path.join(self.dir, m["name"])
            m["log"] = os.path.join(self.dir, m["name"] + ".log")
            _logs.append(("etcd " + m["name"], m["log"]))
            self.members.append(m)

    def url(self, i=0):
        return "http://127.0.0.1:%d" % self.members[i]["client"]

    @property
    def endpoints(self):
        return ",".join(self.url(i) for i in range(len(self.members)))

    def _indexes(self, i):
        return range(len(self.members)) if i is None else [i]

    def _args(self, m):
        cluster = ",".join("%s=http://127.0.0.1:%d" % (x["name"], x["peer"]) for x in self.members)
        client = "http://127.0.0.1:%d" % m["client"]
        peer = "http://127.0.0.1:%d" % m["peer"]
        return [ETCD_BIN, "--name", m["name"], "--data-dir", m["data"],
                "--listen-client-urls", client, "--advertise-client-urls", client,
                "--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
                "--initial-cluster", cluster, "--initial-cluster-state", "new",
                "--initial-cluster-token", self.token,
                "--logger", "zap", "--log-outputs", "stderr"] + self.extra_args

    def start(self, i=None, wait=True):
        if not os.access(ETCD_BIN, os.X_OK):
            raise HarnessError("%s is missing: install etcd-server" % ETCD_BIN)
        for j in self._indexes(i):
            m = self.members[j]
            if m["proc"] is None or m["proc"].poll() is not None:
                m["proc"] = spawn(self._args(m), m["log"])
        if wait:
            for j in self._indexes(i):
                self.wait_healthy(j)
        return self

    def wait_healthy(self, i=0, timeout=30):
        m = self.members[i]
        deadline = time.monotonic() + timeout
        c = Client(self.url(i), timeout=2)
        while time.monotonic() < deadline:
            if m["proc"].poll() is not None:
                raise HarnessError("etcd %s exited (%s); log %s:\n%s"
                                   % (m["name"], m["proc"].returncode, m["log"], log_tail(m["log"])))
            try:
                r = c.get("/health")
                if r.status == 200 and r.json and r.json.get("health") == "true":
                    return
            except OSError:
                pass
            time.sleep(0.1)
        raise HarnessError("etcd %s not healthy after %ss; log %s:\n%s"
                           % (m["name"], timeout, m["log"], log_tail(m["log"])))

    def running(self, i=0):
        p = self.members[i]["proc"]
        return p is not None and p.poll() is None

    def stop(self, i=None):
        for j in self._indexes(i):
            terminate(self.members[j]["proc"])

    def kill(self, i=None):
        for j in self._indexes(i):
            kill(self.members[j]["proc"])

    def restart(self, i=None):
        self.stop(i)
        return self.start(i)

    # The v3 JSON gateway, for checks behind the API server's back.
    def v3(self, path, body):
        last = None
        for j in range(len(self.members)):
            if not self.running(j):
                continue
            try:
                r = Client(self.url(j), timeout=10).post("/v3/" + path, body)
            except OSError as e:
                last = e
                continue
            if r.status != 200:
                raise HarnessError("etcd /v3/%s: %r" % (path, r))
            return r.json
        raise HarnessError("no etcd member answered /v3/%s (%s)" % (path, last))

    @staticmethod
    def _b64(s):
        return base64.b64encode(s.encode() if isinstance(s, str) else s).decode()

    @staticmethod
    def _prefix_end(prefix):
        b = bytearray(prefix.encode())
        b[-1] += 1
        return bytes(b)

    def revision(self):
        return int(self.v3("kv/range", {"key": self._b64("\0")})["header"]["revision"])

    def count(self, prefix):
        r = self.v3("kv/range", {"key": self._b64(prefix), "range_end": self._b64(self._prefix_end(prefix)),
                                 "count_only": True})
        return int(r.get("count", 0))

    def keys(self, prefix):
        r = self.v3("kv/range", {"key": self._b64(prefix), "range_end": self._b64(self._prefix_end(prefix)),
                                 "keys_only": True})
        return [base64.b64decode(kv["key"]).decode() for kv in r.get("kvs", [])]

    def compact(self, revision=None):
        rev = revision or self.revision()
        self.v3("kv/compaction", {"revision": rev, "physical": True})
        return rev


# ---------------------------------------------------------------------------------------------
# ursa-tp-apiserver

def require_binary(path, what):
    if not os.access(path, os.X_OK):
        raise HarnessError("%s not found at %s: build it first (cmake -S . -B build && cmake --build "
                           "build -j2), or point URSA_BUILD_DIR at a build directory" % (what, path))


class ApiServer:
    """ursa-tp-apiserver on a free loopback port with a fresh CA, signing keys and token file."""

    def __init__(self, etcd, partition_id="tp-1", extra_args=(), tls=True, etcd_servers=None, log_level="debug",
                 partition_number=None):
        require_binary(APISERVER_BIN, "ursa-tp-apiserver")
        require_binary(URSACTL_BIN, "ursactl")
        self.etcd = etcd
        self.dir = make_tmpdir("apiserver")
        self.port = free_port()
        self.partition_id = partition_id
        self.partition_number = partition_number  # --partition-number (None: the server's default, 0)
        self.log_level = log_level
        self.extra_args = list(extra_args)
        self.etcd_servers = etcd_servers or etcd.endpoints
        self.log = os.path.join(self.dir, "apiserver.log")
        _logs.append(("ursa-tp-apiserver " + partition_id, self.log))
        self.proc = None
        self.tls = tls
        self.ca_file = None
        if tls:
            self.ca_file, self.cert_file, self.key_file = make_ca(self.dir)
        must_run([URSACTL_BIN, "keygen", "--out-dir", self.dir])
        self.signing_key = os.path.join(self.dir, "signing-key.pem")
        self.signing_pub = os.path.join(self.dir, "signing-key.pub")
        for f in (self.signing_key, self.signing_pub):
            if not os.path.exists(f):
                raise HarnessError("ursactl keygen --out-dir %s did not write %s" % (self.dir, f))
        self.admin_token = secrets.token_hex(24)
        self.token_file = os.path.join(self.dir, "tokens.csv")
        with open(self.token_file, "w") as f:
            f.write('%s,admin,admin-uid,"%s",%s\n' % (self.admin_token, ADMIN_GROUP, ADMIN_TENANT))
        self.kube_cache = os.path.join(self.dir, "kube-cache")
        self._kubeconfigs = {}

    @property
    def url(self):
        return "%s://127.0.0.1:%d" % ("https" if self.tls else "http", self.port)

    def args(self):
        a = [APISERVER_BIN, "--listen", "127.0.0.1:%d" % self.port,
             "--etcd-servers", self.etcd_servers, "--etcd-prefix", "/registry",
             "--token-auth-file", self.token_file,
             "--token-signing-public-key", self.signing_pub,
             "--service-account-signing-key-file", self.signing_key,
             "--partition-id", self.partition_id, "--log-level", self.log_level]
        if self.partition_number is not None:
            a += ["--partition-number", str(self.partition_number)]
        if self.tls:
            a += ["--tls-cert-file", self.cert_file, "--tls-private-key-file", self.key_file]
        return a + self.extra_args

    def start(self, wait=True, timeout=60):
        self.proc = spawn(self.args(), self.log)
        if wait:
            self.wait_ready(timeout)
        return self

    def wait_ready(self, timeout=60):
        c = self.admin(timeout=3)
        deadline = time.monotonic() + timeout
        last = None
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise HarnessError("ursa-tp-apiserver exited with %s before /readyz; log %s:\n%s"
                                   % (self.proc.returncode, self.log, log_tail(self.log)))
            try:
                last = c.get("/readyz")
                if last.status == 200:
                    return
            except (OSError, http.client.HTTPException) as e:
                last = e
            time.sleep(0.1)
        raise HarnessError("ursa-tp-apiserver not ready after %ss (last: %r); log %s:\n%s"
                           % (timeout, last, self.log, log_tail(self.log)))

    def running(self):
        return self.proc is not None and self.proc.poll() is None

    def stop(self):
        return terminate(self.proc)

    def kill(self):
        return kill(self.proc)

    def restart(self, timeout=60):
        self.stop()
        return self.start(timeout=timeout)

    def client(self, token=None, timeout=30):
        return Client(self.url, self.ca_file, token, timeout)

    def admin(self, timeout=30):
        return self.client(self.admin_token, timeout)

    def kubeconfig(self, tenant, user, groups=(), ttl=0):
        """Path of a kubeconfig made by `ursactl kubeconfig` for this server."""
        key = (tenant, user, tuple(groups), ttl)
        if key in self._kubeconfigs:
            return self._kubeconfigs[key]
        args = [URSACTL_BIN, "kubeconfig", "--tenant", tenant, "--user", user, "--ttl", str(ttl),
                "--server", self.url, "--signing-key", self.signing_key]
        if groups:
            args += ["--groups", ",".join(groups)]
        if self.ca_file:
            args += ["--certificate-authority", self.ca_file]
        out = must_run(args)
        path = os.path.join(self.dir, "kubeconfig-%s-%s-%d" % (tenant, user, len(self._kubeconfigs)))
        with open(path, "w") as f:
            f.write(out)
        self._kubeconfigs[key] = path
        return path

    def admin_kubeconfig(self):
        return self.kubeconfig(ADMIN_TENANT, "admin", (ADMIN_GROUP,))

    def user_client(self, tenant, user, groups=()):
        return self.client(kubeconfig_token(self.kubeconfig(tenant, user, groups)))


class TpControllerManager:
    """ursa-tp-controller-manager on api with its admin credentials, logging at debug level into
    api's directory (<identity>.log, shown as "controller-manager" when a test fails)."""

    def __init__(self, api, identity="cm", extra_args=()):
        require_binary(TP_CM_BIN, "ursa-tp-controller-manager")
        self.api = api
        self.identity = identity
        self.extra_args = list(extra_args)
        self.log = os.path.join(api.dir, "%s.log" % identity)
        self.proc = None
        _logs.append(("controller-manager", self.log))

    def start(self):
        self.proc = spawn([TP_CM_BIN, "--kubeconfig", self.api.admin_kubeconfig(), "--identity", self.identity,
                           "--log-level", "debug"] + self.extra_args, self.log)
        return self

    def running(self):
        return self.proc is not None and self.proc.poll() is None

    def stop(self):
        if self.proc is not None:
            terminate(self.proc)
            self.proc = None


def start_tp_with_controllers(tenant="acme", user="alice", identity="cm", cm_args=()):
    """The stage of a controller test: etcd, a TP API server, tenant `tenant` with a kubeconfig of
    its administrator `user`, and a running TpControllerManager (extra flags cm_args). Returns a
    dict with etcd, api, admin (an admin Client), kc (the kubeconfig path) and cm."""
    require_binary(TP_CM_BIN, "ursa-tp-controller-manager")
    st = {"etcd": Etcd().start()}
    st["api"] = ApiServer(st["etcd"]).start()
    st["admin"] = st["api"].admin()
    create_tenant(st["admin"], tenant)
    st["kc"] = st["api"].kubeconfig(tenant, user)
    st["cm"] = TpControllerManager(st["api"], identity, cm_args).start()
    return st


def kubeconfig_token(path):
    """The bearer token of a kubeconfig's (first) user, whether the file is JSON or YAML."""
    with open(path) as f:
        text = f.read()
    try:
        doc = json.loads(text)
        return doc["users"][0]["user"]["token"]
    except (ValueError, KeyError, IndexError, TypeError):
        pass
    for line in text.splitlines():
        s = line.strip()
        if s.startswith("token:"):
            return s[len("token:"):].strip().strip("'\"")
    raise HarnessError("no user token found in kubeconfig %s" % path)


# ---------------------------------------------------------------------------------------------
# kubectl

KUBECTL = os.environ.get("KUBECTL", "kubectl")
_kcache = {}


def _cache_dir():
    if "dir" not in _kcache:
        _kcache["dir"] = make_tmpdir("kubectl-cache")
    return _kcache["dir"]


def kubectl_args(args, kubeconfig):
    return [KUBECTL, "--kubeconfig", kubeconfig, "--cache-dir", _cache_dir()] + list(args)


def kubectl(args, kubeconfig, timeout=60, input_text=None):
    """Runs the kubectl on PATH; returns (rc, stdout, stderr)."""
    return run_cmd(kubectl_args(args, kubeconfig), timeout, input_text)


class Background:
    """A command whose stdout lines are collected by a thread (for `kubectl get -w`)."""

    def __init__(self, args):
        self.args = args
        self.lines = []
        self.err = []
        self.proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True, preexec_fn=_child_setup)
        _children.append(self.proc)
        self._lock = threading.Lock()
        threading.Thread(target=self._read, args=(self.proc.stdout, self.lines), daemon=True).start()
        threading.Thread(target=self._read, args=(self.proc.stderr, self.err), daemon=True).start()

    def _read(self, stream, into):
        for line in stream:
            with self._lock:
                into.append(line.rstrip("\n"))

    def output(self):
        with self._lock:
            return list(self.lines)

    def wait_for(self, pred, timeout):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for line in self.output():
                if pred(line):
                    return line
            if self.proc.poll() is not None:
                time.sleep(0.2)  # let the readers finish
                return next((ln for ln in self.output() if pred(ln)), None)
            time.sleep(0.1)
        return None

    def stop(self):
        terminate(self.proc, 5)
        time.sleep(0.1)
        return self.output()


# ---------------------------------------------------------------------------------------------
# Assertions

def check(cond, msg):
    if not cond:
        raise AssertionError(msg)


def eq(actual, expected, what):
    if actual != expected:
        raise AssertionError("%s: expected %r, got %r" % (what, expected, actual))


def expect_status(resp, code, what, reason=None):
    """resp has HTTP status code; for errors, the body is a v1 Status with that code (and reason)."""
    if resp.status != code:
        raise AssertionError("%s: expected HTTP %d, got %r" % (what, code, resp))
    if code >= 400:
        s = resp.json
        check(isinstance(s, dict) and s.get("kind") == "Status" and s.get("apiVersion") == "v1",
              "%s: error body is not a v1 Status: %r" % (what, resp))
        eq(s.get("status"), "Failure", what + ": Status.status")
        eq(s.get("code"), code, what + ": Status.code")
        if reason is not None:
            eq(s.get("reason"), reason, what + ": Status.reason")
        check(s.get("message"), "%s: Status has no message: %r" % (what, resp))
    return resp.json


def wait_until(pred, timeout, what, interval=0.2):
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = pred()
        if last:
            return last
        time.sleep(interval)
    raise AssertionError("%s: not true after %ss (last: %r)" % (what, timeout, last))


def wait_ok(client, path, timeout=60):
    """Waits until client's GET of path answers 200 (connection errors count as not yet)."""
    def ok():
        try:
            return client.get(path).status == 200
        except OSError:
            return False
    wait_until(ok, timeout, "%s%s answering 200" % (client.base_url, path))


def names(list_obj):
    return sorted(((i.get("metadata") or {}).get("name") for i in (list_obj or {}).get("items") or []))


# ---------------------------------------------------------------------------------------------
# Common objects and paths

def tenant_manifest(name):
    return {"apiVersion": "v1", "kind": "Tenant", "metadata": {"name": name},
            "spec": {"storageClusterId": "0"}}


def create_tenant(admin, name, timeout=15):
    """Creates a Tenant as admin (expects 201) and waits for its namespace default."""
    r = admin.post("/api/v1/tenants", tenant_manifest(name))
    expect_status(r, 201, "create tenant %s" % name)
    wait_until(lambda: admin.get("/api/v1/tenants/%s/namespaces/default" % name).status == 200,
               timeout, "namespace default of new tenant %s exists" % name)
    return r.json


def pod_manifest(name, labels=None, image="nginx:1.25", **meta):
    m = {"name": name}
    if labels:
        m["labels"] = labels
    m.update(meta)
    return {"apiVersion": "v1", "kind": "Pod", "metadata": m,
            "spec": {"containers": [{"name": "c", "image": image}]}}


def deployment_manifest(name, replicas=1, image="nginx:1.25"):
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}},
                                  "spec": {"containers": [{"name": "c", "image": image}]}}}}


def pods_path(tenant, ns="default", name=None):
    p = "/api/v1/tenants/%s/namespaces/%s/pods" % (tenant, ns)
    return p + "/" + name if name else p


def deployments_path(tenant, ns="default", name=None):
    p = "/apis/apps/v1/tenants/%s/namespaces/%s/deployments" % (tenant, ns)
    return p + "/" + name if name else p


def q(**params):
    """A query string: q(labelSelector="a=b", limit=2) -> '?labelSelector=a%3Db&limit=2'."""
    return "?" + urllib.parse.urlencode(params)


# ---------------------------------------------------------------------------------------------
# Runner

class _Timeout(Exception):
    pass


def _on_alarm(signum, frame):
    raise _Timeout("test took too long")


def run(namespace, per_test_timeout=240):
    """Runs setup() and the test_* functions of a test module in file order, then exits."""
    tests = sorted((f for n, f in namespace.items() if n.startswith("test_") and callable(f)),
                   key=lambda f: f.__code__.co_firstlineno)
    only = os.environ.get("URSA_TEST")
    if only:
        tests = [t for t in tests if t.__name__ in only.split(",")]
    module = os.path.basename(namespace.get("__file__", "test"))
    signal.signal(signal.SIGALRM, _on_alarm)
    passed, failed = [], []
    setup = namespace.get("setup")
    setup_error = None
    if setup is not None:
        signal.alarm(per_test_timeout)
        try:
            setup()
        except BaseException as e:  # noqa: BLE001 - reported below
            setup_error = e
            print("SETUP FAILED (%s): %s" % (module, e), flush=True)
            traceback.print_exc(file=sys.stdout)
        finally:
            signal.alarm(0)
    for t in tests:
        name = t.__name__
        if setup_error is not None:
            failed.append(name)
            print("FAIL %s: setup failed: %s" % (name, str(setup_error).splitlines()[0]), flush=True)
            continue
        start = time.monotonic()
        signal.alarm(per_test_timeout)
        try:
            t()
            passed.append(name)
            print("PASS %s (%.1fs)" % (name, time.monotonic() - start), flush=True)
        except BaseException as e:  # noqa: BLE001 - every failure is reported
            if isinstance(e, KeyboardInterrupt):
                raise
            failed.append(name)
            print("FAIL %s (%.1fs): %s: %s" % (name, time.monotonic() - start, type(e).__name__, e),
                  flush=True)
            traceback.print_exc(file=sys.stdout)
            sys.stdout.flush()
        finally:
            signal.alarm(0)
    teardown = namespace.get("teardown")
    if teardown is not None:
        try:
            teardown()
        except Exception as e:  # noqa: BLE001
            print("teardown: %s" % e)
    if failed:
        _state["failed"] = True
        for label, path in _logs:
            if label.startswith("etcd"):
                print("log of %s: %s" % (label, path))
            else:
                print("\n--- log of %s: %s (last lines)\n%s" % (label, path, log_tail(path, 30)))
        print("\n%s: failed: %s" % (module, ", ".join(failed)))
    print("%d passed, %d failed" % (len(passed), len(failed)), flush=True)
    cleanup()
    sys.exit(1 if failed else 0)
