#!/usr/bin/env bash
# Restart benchmark (issue 22, "restarts without a relist storm"): a tenant partition holding
# PODS pods and CONFIGMAPS configmaps, with its informers (scheduler, controller manager, hollow
# kubelets) synced and a steady create load running, has its API server killed with SIGKILL and
# started again at once (as systemd would). Measures, per second around the kill: creates (ok,
# errors, p50, p99), etcd's and the API server's CPU, and the LIST requests and 410s the
# partition served (from its /metrics); prints a markdown section for docs/benchmarks.md.
#
# usage: bench/run-restart.sh [BUILD_DIR] [--quick]
#   BUILD_DIR  a built tree (default: build/ at the repository root): the daemons and ursactl
#   --quick    small counts and short windows (about two minutes), to smoke-test the script
#
# Knobs (environment):
#   PODS (100000), CONFIGMAPS (50000): the data set, created once by bench/ursa-restart fill
#     (pods bound at creation to the hollow nodes, round robin; configmaps of ~200 bytes)
#   NODES (2000) hollow nodes over KUBELETS (4) hollow kubelet processes (each process is one
#     informer of the partition's pods: a hollow kubelet watches every bound pod, not one node's);
#     LEASE_SECONDS (400: renewals every 100 s, 20/s in all, to keep the RM's share of the two
#     cores small; registration is spread over the same 100 s)
#   RATE (200) creates/s of small configmaps from LOAD_CLIENTS (8) clients, open loop;
#   BEFORE (30) s of load before the kill, AFTER (60) s after it; P99_MS (10), GOOD_SECONDS (5):
#     "recovered" is the first second after the kill that starts GOOD_SECONDS consecutive
#     seconds with create p99 < P99_MS and no errors
#   BIN_A, BIN_B (or BASE_BIN_DIR, NEW_BIN_DIR): directories with ursa-tp-apiserver (a build
#     tree or a flat directory); rounds alternate A, B, A, B ... (ROUNDS, default 1, each) on the
#     same data set: before a round whose binary differs from the one running, the partition's
#     API server is restarted gracefully with it and the bench waits for the informers to settle.
#     BIN_A defaults to BUILD_DIR; the other daemons (etcd aside) always come from CLIENT_BIN
#     (default BIN_A), so only the API server differs between A and B.
#   SETTLE_TIMEOUT (900 s: all pods Running and the partition quiet), QUIET_PCT (25), QUIET_SECONDS
#     (35: the API server counts as quiet after this many seconds in a row under QUIET_PCT of a core
#     serving no LIST; longer than the informers' 30 s back-off cap), TP_LOG_LEVEL (info)
#   INFORMERS (1): 0 starts no resource manager, hollow kubelets, scheduler nor controller manager
#     (the pods stay bound to nodes that do not exist): only the new server's own start and the
#     creates after it are measured, and a round needs no settle for informers (see --start)
#   PERF_SECONDS (0): > 0 records `perf record -a -g` (system-wide: run as root) for this many
#     seconds from the new API server's start, one perf.data per round in PERF_DIR (default: the
#     bench's temporary dir; the log names the file and the server's pid for `perf report --pid`)
#
# --start: INFORMERS=0 with short windows (BEFORE 5, AFTER 20, QUIET_SECONDS 3) and rounds
#   alternating A and B on one data set: start-to-ready and the creates' p99 after the kill, a
#   few minutes for the fill and about 40 s a round (the full run takes ~40 min)
#
# Everything runs on loopback (HTTPS with a fresh CA, as deployed), free ports, temporary
# directories; every wait is bounded; all processes are killed on exit (tests/lib/ursa_harness.py).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD="$ROOT/build"
QUICK=0
START=0
for arg in "$@"; do
	case "$arg" in
	--quick) QUICK=1 ;;
	--start) START=1 ;;
	-h|--help) sed -n '2,44p' "$0"; exit 0 ;;
	-*) echo "run-restart.sh: unknown option $arg" >&2; exit 2 ;;
	*) BUILD=$(cd "$arg" && pwd) ;;
	esac
done
if [ "$QUICK" = 1 ]; then
	: "${PODS:=2000}" "${CONFIGMAPS:=1000}" "${NODES:=100}" "${KUBELETS:=2}" "${BEFORE:=8}" "${AFTER:=20}"
	: "${RATE:=100}" "${LEASE_SECONDS:=40}" "${QUIET_SECONDS:=5}"
fi
if [ "$START" = 1 ]; then
	: "${INFORMERS:=0}" "${BEFORE:=5}" "${AFTER:=20}" "${QUIET_SECONDS:=3}"
fi
BIN_A=${BIN_A:-${BASE_BIN_DIR:-$BUILD}}
BIN_B=${BIN_B:-${NEW_BIN_DIR:-}}
export URSA_BUILD_DIR="$BUILD" QUICK PODS="${PODS:-100000}" CONFIGMAPS="${CONFIGMAPS:-50000}" \
	NODES="${NODES:-2000}" KUBELETS="${KUBELETS:-4}" RATE="${RATE:-200}" LOAD_CLIENTS="${LOAD_CLIENTS:-8}" \
	BEFORE="${BEFORE:-30}" AFTER="${AFTER:-60}" P99_MS="${P99_MS:-10}" GOOD_SECONDS="${GOOD_SECONDS:-5}" \
	BIN_A="$BIN_A" BIN_B="$BIN_B" CLIENT_BIN="${CLIENT_BIN:-$BIN_A}" ROUNDS="${ROUNDS:-1}" \
	LEASE_SECONDS="${LEASE_SECONDS:-400}" QUIET_SECONDS="${QUIET_SECONDS:-35}" \
	SETTLE_TIMEOUT="${SETTLE_TIMEOUT:-900}" QUIET_PCT="${QUIET_PCT:-25}" TP_LOG_LEVEL="${TP_LOG_LEVEL:-info}" \
	INFORMERS="${INFORMERS:-1}" PERF_SECONDS="${PERF_SECONDS:-0}" PERF_DIR="${PERF_DIR:-}"
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
exec python3 - "$ROOT" <<'PY'
import json, math, os, re, subprocess, sys, threading, time
sys.path.insert(0, os.path.join(sys.argv[1], "tests", "lib"))
import ursa_harness as h

ROOT = sys.argv[1]
E = os.environ
PODS, CONFIGMAPS, NODES, KUBELETS = (int(E[k]) for k in ("PODS", "CONFIGMAPS", "NODES", "KUBELETS"))
RATE, LOAD_CLIENTS, BEFORE, AFTER = (int(E[k]) for k in ("RATE", "LOAD_CLIENTS", "BEFORE", "AFTER"))
P99_MS, GOOD_SECONDS, ROUNDS = float(E["P99_MS"]), int(E["GOOD_SECONDS"]), int(E["ROUNDS"])
SETTLE_TIMEOUT, QUIET_PCT, LEASE_SECONDS = int(E["SETTLE_TIMEOUT"]), float(E["QUIET_PCT"]), int(E["LEASE_SECONDS"])
QUIET_SECONDS, INFORMERS, PERF_SECONDS = int(E["QUIET_SECONDS"]), int(E["INFORMERS"]), int(E["PERF_SECONDS"])
HZ = os.sysconf("SC_CLK_TCK")
TENANT = "bench"


def log(msg):
    print("# %s %s" % (time.strftime("%H:%M:%S"), msg), file=sys.stderr, flush=True)


def find(d, name, sub):
    """The binary name in directory d: a flat directory of daemons, or a build tree (d/sub/name)."""
    for p in (os.path.join(d, name), os.path.join(d, sub, name)):
        if os.access(p, os.X_OK):
            return p
    raise SystemExit("run-restart.sh: %s not found in %s (nor in %s/%s)" % (name, d, d, sub))


CB = E["CLIENT_BIN"]
h.URSACTL_BIN = find(CB, "ursactl", "src/ursactl")
h.TP_CM_BIN = find(CB, "ursa-tp-controller-manager", "src/tenant-partition/controllers")
RM_BIN = find(CB, "ursa-rm-apiserver", "src/resource-manager")
KL_BIN = find(CB, "ursa-kubelet", "src/kubelet")
SCHED_BIN = find(CB, "ursa-scheduler", "src/scheduler")
TP_BINS = {"A": find(E["BIN_A"], "ursa-tp-apiserver", "src/tenant-partition")}
if E["BIN_B"]:
    TP_BINS["B"] = find(E["BIN_B"], "ursa-tp-apiserver", "src/tenant-partition")
h.APISERVER_BIN = TP_BINS["A"]


def load_tool():
    """bench/ursa-restart from the client build or the build dir (built with the tree)."""
    for d in (CB, E["URSA_BUILD_DIR"]):
        p = os.path.join(d, "bench", "ursa-restart")
        if os.access(p, os.X_OK):
            return p
    raise SystemExit("run-restart.sh: missing bench/ursa-restart (cmake --build <dir> --target ursa-restart)")


TOOL = load_tool()


class Rm(h.ApiServer):
    def args(self):
        a = super().args()
        a[0] = RM_BIN
        a[a.index("--log-level") + 1] = "warn"
        return a


class Tp(h.ApiServer):
    """The partition's API server; self.bin is the binary the next start runs, each start logs to a file of its own."""
    bin = TP_BINS["A"]
    starts = 0

    def args(self):
        a = super().args()
        a[0] = self.bin
        a[a.index("--log-level") + 1] = E["TP_LOG_LEVEL"]
        return a

    def start(self, wait=True, timeout=120):
        self.starts += 1
        self.log = os.path.join(self.dir, "apiserver-%d.log" % self.starts)
        h._logs.append(("ursa-tp-apiserver start %d" % self.starts, self.log))
        return super().start(wait, timeout)


def share(dst, src):
    for a in ("ca_file", "cert_file", "key_file", "signing_key", "signing_pub", "admin_token", "token_file"):
        setattr(dst, a, getattr(src, a))


def spawn(name, args):
    d = h.make_tmpdir(name)
    p = os.path.join(d, name + ".log")
    h._logs.append((name, p))
    return h.spawn(args, p), p


def ticks(pid):
    try:
        f = open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()
        return int(f[11]) + int(f[12])
    except (OSError, IndexError, ValueError):
        return None


def loadavg():
    return " ".join(open("/proc/loadavg").read().split()[:3])


# ---- the partition's counters ---------------------------------------------------------------

REQ_RE = re.compile(r'^ursa_apiserver_request_total\{verb="([^"]*)",resource="([^"]*)",code="(\d+)"\} (\d+)$', re.M)
ETCD_RE = re.compile(r'^ursa_etcd_request_duration_seconds_count\{operation="([^"]*)"\} (\d+)$', re.M)


def counters(tp):
    """{"list": {resource: n}, "410": n, "watch": n, "etcd": {op: n}} from tp's /metrics, or None."""
    try:
        r = tp.admin(timeout=2).get("/metrics")
        if r.status != 200:
            return None
    except Exception:
        return None
    c = {"list": {}, "410": 0, "watch": 0, "etcd": {}}
    for verb, res, code, n in REQ_RE.findall(r.text):
        n = int(n)
        if verb == "list":
            c["list"][res] = c["list"].get(res, 0) + n
        if verb == "watch":
            c["watch"] += n
        if code == "410":
            c["410"] += n
    for op, n in ETCD_RE.findall(r.text):
        c["etcd"][op] = int(n)
    return c


def cdiff(a, b):
    """b - a for two counters() of one process; a of None (a restart in between) counts from zero."""
    a = a or {"list": {}, "410": 0, "watch": 0, "etcd": {}}
    return {"list": {k: v - a["list"].get(k, 0) for k, v in b["list"].items() if v - a["list"].get(k, 0)},
            "410": b["410"] - a["410"], "watch": b["watch"] - a["watch"],
            "etcd": {k: v - a["etcd"].get(k, 0) for k, v in b["etcd"].items() if v - a["etcd"].get(k, 0)}}


class Sampler(threading.Thread):
    """Once a second (on the wall clock's second): CPU ticks of etcd and the API server, and the
    API server's counters. Rows: (t, etcd ticks, tp pid, tp ticks, counters or None)."""

    def __init__(self, etcd_pid, tp):
        super().__init__(daemon=True)
        self.etcd_pid, self.tp, self.rows, self.stop = etcd_pid, tp, [], threading.Event()

    def run(self):
        while not self.stop.is_set():
            time.sleep(1 - time.time() % 1)
            t = time.time()
            p = self.tp.proc
            self.rows.append((t, ticks(self.etcd_pid), p.pid, ticks(p.pid) if p.poll() is None else None,
                              counters(self.tp)))


# ---- the region -----------------------------------------------------------------------------

def region():
    if not INFORMERS:
        log("starting etcd and the partition (%s); no informers" % TP_BINS["A"])
        tp_etcd = h.Etcd(name="etcd-tp", extra_args=["--quota-backend-bytes", "8589934592"]).start()
        tp = Tp(tp_etcd, partition_id="tp-1")
        tp.start()
        h.create_tenant(tp.admin(), TENANT)
        r = tp.admin().post("/api/v1/tenants/%s/namespaces" % TENANT,
                            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "load"}})
        if r.status not in (201, 409):
            raise SystemExit("cannot create namespace load: %s %s" % (r.status, r.text))
        return None, tp, tp_etcd, []
    log("starting etcds, an RM and the partition (%s)" % TP_BINS["A"])
    rm_etcd = h.Etcd(name="etcd-rm").start()
    rm = Rm(rm_etcd, partition_id="rm-1")
    rm.start()
    tp_etcd = h.Etcd(name="etcd-tp", extra_args=["--quota-backend-bytes", "8589934592"]).start()
    tp = Tp(tp_etcd, partition_id="tp-1")
    share(tp, rm)
    tp.start()
    tp.admin().post("/apis/ursa.io/v1/resourcemanagers", {"apiVersion": "ursa.io/v1", "kind": "ResourceManager",
                    "metadata": {"name": "rm-1"}, "spec": {"endpoints": [rm.url], "zone": "az-1"}})
    rm.admin().post("/apis/ursa.io/v1/tenantpartitions", {"apiVersion": "ursa.io/v1", "kind": "TenantPartition",
                    "metadata": {"name": "tp-1"}, "spec": {"endpoints": [tp.url]}})
    h.create_tenant(tp.admin(), TENANT)
    r = tp.admin().post("/api/v1/tenants/%s/namespaces" % TENANT,
                        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "load"}})
    if r.status not in (201, 409):
        raise SystemExit("cannot create namespace load: %s %s" % (r.status, r.text))
    per = -(-NODES // KUBELETS)
    max_pods = -(-PODS // NODES) + 20
    kubelets = []
    for k in range(KUBELETS):
        n = min(per, NODES - k * per)
        p, _ = spawn("kubelet-%d" % k, [KL_BIN, "--kubeconfig", rm.admin_kubeconfig(), "--port", "0", "--root-dir",
                     h.make_tmpdir("klroot"), "--hollow-nodes", str(n), "--hollow-prefix", "h%d" % k, "--zone", "az-1",
                     "--cpu", "64", "--memory", "256Gi", "--max-pods", str(max_pods),
                     "--lease-seconds", str(LEASE_SECONDS),
                     "--log-level", "warn"])
        kubelets.append(p)
    h.wait_until(lambda: len(rm.admin().get("/api/v1/nodes").json.get("items", [])) >= NODES, 600,
                 "%d hollow nodes registered" % NODES, interval=2)
    log("%d hollow nodes registered (%d kubelet processes)" % (NODES, KUBELETS))
    sched, slog = spawn("scheduler", [SCHED_BIN, "--kubeconfig", tp.admin_kubeconfig(), "--partition-id", "tp-1",
                        "--identity", "bench", "--log-level", "info"])
    cm, _ = spawn("controller-manager", [h.TP_CM_BIN, "--kubeconfig", tp.admin_kubeconfig(), "--identity", "cm",
                  "--log-level", "warn"])
    return rm, tp, tp_etcd, kubelets + [sched, cm]


def fill(tp):
    t0 = time.monotonic()
    # nodes were registered as h<k>-<i>, k < KUBELETS: the tool names them P<j mod G>-<j / G>
    per = -(-NODES // KUBELETS)
    if NODES % KUBELETS:
        raise SystemExit("run-restart.sh: NODES must be a multiple of KUBELETS")
    out = subprocess.run([TOOL, "fill", "--server", tp.url, "--token", tp.admin_token, "--cacert", tp.ca_file,
                          "--tenant", TENANT, "--pods", str(PODS), "--configmaps", str(CONFIGMAPS), "--nodes",
                          str(per * KUBELETS), "--node-prefix", "h", "--node-groups", str(KUBELETS), "--clients", "16",
                          "--prefix", "f"], capture_output=True, text=True, timeout=7200)
    res = [l for l in out.stdout.splitlines() if l.startswith("RESULT ")]
    if out.returncode or not res:
        raise SystemExit("ursa-restart fill failed: %s %s" % (out.stdout[-2000:], out.stderr[-2000:]))
    r = json.loads(res[-1][7:])
    log("filled %d objects in %.0f s (%.0f/s)" % (r["ok"], time.monotonic() - t0, r["ops_per_s"]))
    return r


def not_running(tp):
    try:
        r = tp.admin(timeout=120).get("/api/v1/tenants/%s/namespaces/default/pods"
                                      "?fieldSelector=status.phase%%21%%3DRunning&limit=500" % TENANT)
    except Exception as e:  # a slow list on a busy machine: try again
        log("listing pods not Running: %r" % e)
        return None
    if r.status != 200:
        return None
    return len(r.json.get("items", [])) + (1 if (r.json.get("metadata") or {}).get("continue") else 0)


def settle(tp, what, pods=True):
    """Waits (bounded) until every fill pod is Running (if pods) and the API server's CPU stays under
    QUIET_PCT, serving no LIST, for QUIET_SECONDS in a row: the informers have listed, the kubelets
    have reported. Returns the seconds waited."""
    t0 = time.monotonic()
    deadline = t0 + SETTLE_TIMEOUT
    left = None if pods else 0
    while pods and time.monotonic() < deadline:
        left = not_running(tp)
        if left == 0:
            break
        time.sleep(3)
    if left != 0:
        raise SystemExit("run-restart.sh: pods still not Running after %d s (%s)" % (SETTLE_TIMEOUT, left))
    # quiet: the API server under QUIET_PCT of a core and serving no LIST (no informer still relisting)
    quiet = 0
    prev, prev_c = ticks(tp.proc.pid), counters(tp)
    while time.monotonic() < deadline and quiet < QUIET_SECONDS:
        time.sleep(1)
        cur, cur_c = ticks(tp.proc.pid), counters(tp)
        lists = sum(cdiff(prev_c, cur_c)["list"].values()) if prev_c and cur_c else 1
        idle = cur is not None and prev is not None and (cur - prev) * 100.0 / HZ < QUIET_PCT
        quiet = quiet + 1 if idle and not lists else 0
        prev, prev_c = cur, cur_c
    el = time.monotonic() - t0
    log("%s: settled in %.0f s (all pods Running%s)" % (what, el, "" if quiet >= QUIET_SECONDS else ", never quiet"))
    return el


# ---- one round ------------------------------------------------------------------------------

class Load:
    """bench/ursa-restart steady in the background; .reqs collects (start, latency s, code)."""

    def __init__(self, tp, prefix, duration):
        self.p = subprocess.Popen([TOOL, "steady", "--server", tp.url, "--token", tp.admin_token,
                                   "--cacert", tp.ca_file, "--tenant", TENANT, "--namespace", "load",
                                   "--rate", str(RATE), "--clients", str(LOAD_CLIENTS), "--duration", str(duration),
                                   "--prefix", prefix, "--timeout", "10"],
                                  stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, start_new_session=True)
        h._children.append(self.p)
        self.reqs, self.result = [], {}
        self.t = threading.Thread(target=self._read, daemon=True)
        self.t.start()

    def _read(self):
        for line in self.p.stdout:
            f = line.split()
            if len(f) == 4 and f[0] == "REQ":
                self.reqs.append((float(f[1]), int(f[2]) / 1e6, int(f[3])))
            elif line.startswith("RESULT "):
                self.result = json.loads(line[7:])

    def finish(self):
        self.p.terminate()
        self.p.wait(30)
        self.t.join(10)


def pct(v, q):
    if not v:
        return None
    v = sorted(v)
    return v[min(len(v) - 1, max(0, int(math.ceil(q * len(v))) - 1))]


def bins(reqs, t0, lo, hi):
    """Per-second stats of requests started in [t0 + s, t0 + s + 1) for lo <= s < hi. A failure
    started before the kill at t0 but ended after it was in flight when the server died: it counts
    in the second it ended in, not among the errors before the kill."""
    out = {s: {"ok": [], "err": 0} for s in range(lo, hi)}
    for start, lat, code in reqs:
        s = int(math.floor(start - t0))
        if code != 201 and start < t0 <= start + lat:
            s = int(math.floor(start + lat - t0))
        if lo <= s < hi:
            if code == 201:
                out[s]["ok"].append(lat * 1000)
            else:
                out[s]["err"] += 1
    return out


def one_round(n, side, tp, tp_etcd):
    if tp.bin != TP_BINS[side]:
        log("round %d: switching the API server to %s (graceful restart)" % (n, side))
        tp.stop()
        tp.bin = TP_BINS[side]
        tp.start()
        settle(tp, "after switching to %s" % side, pods=False)
    etcd_pid = tp_etcd.members[0]["proc"].pid
    la0 = loadavg()
    perf = None
    sampler = Sampler(etcd_pid, tp)
    sampler.start()
    load = Load(tp, "r%d" % n, BEFORE + AFTER + 30)
    log("round %d (%s): load running, kill -9 in %d s" % (n, side, BEFORE))
    time.sleep(BEFORE)
    old_pid = tp.proc.pid
    t_kill = time.time()
    h.kill(tp.proc)
    tp.start(wait=False)  # at once, as systemd's Restart=always would
    t_spawn = time.time()
    if PERF_SECONDS > 0:
        pdir = E["PERF_DIR"] or h.make_tmpdir("restart-perf")
        pout = os.path.join(pdir, "perf-%d-%s.data" % (n, side))
        # system-wide (root): a -p attached this early misses the threads the server starts next;
        # `perf report --pid` (printed) picks the server, `--comm etcd` its etcd
        perf = subprocess.Popen(["perf", "record", "-a", "-g", "-q", "-o", pout, "--", "sleep", str(PERF_SECONDS)],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                start_new_session=True)
        h._children.append(perf)
        log("round %d: perf record -a into %s; the new server is pid %d" % (n, pout, tp.proc.pid))
    ready = ready_cpu = etcd_ready_cpu = None
    e_kill = ticks(etcd_pid)
    try:
        tp.wait_ready(120)
        ready = time.time() - t_kill
        # CPU-seconds the new server and etcd spent until ready: on a busy machine these say more
        # than the seconds
        tk, ek = ticks(tp.proc.pid), ticks(etcd_pid)
        ready_cpu = tk / HZ if tk is not None else None
        etcd_ready_cpu = (ek - e_kill) / HZ if ek is not None and e_kill is not None else None
    except h.HarnessError as e:
        log("not ready: %s" % e)
    log("round %d: killed %d, restarted as %d; /readyz after %s s (%s CPU-s; etcd %s CPU-s)" % (
        n, old_pid, tp.proc.pid, "%.2f" % ready if ready is not None else "-",
        "%.2f" % ready_cpu if ready_cpu is not None else "-",
        "%.2f" % etcd_ready_cpu if etcd_ready_cpu is not None else "-"))
    time.sleep(max(0, t_kill + AFTER - time.time()))
    if perf is not None:
        try:
            perf.wait(max(5, PERF_SECONDS + 10))
        except subprocess.TimeoutExpired:
            perf.terminate()
            perf.wait(10)
    load.finish()
    sampler.stop.set()
    sampler.join(3)
    la1 = loadavg()

    # -- analysis
    b = bins(load.reqs, t_kill, -BEFORE, AFTER)
    before = [x for s in range(-BEFORE, 0) for x in b[s]["ok"]]
    before_err = sum(b[s]["err"] for s in range(-BEFORE, 0))
    ok_after = [st + lat for st, lat, code in load.reqs if code == 201 and st >= t_kill]
    first_ok = min(ok_after) - t_kill if ok_after else None
    good = [s for s in range(0, AFTER) if b[s]["ok"] and not b[s]["err"] and pct(b[s]["ok"], 0.99) < P99_MS]
    gs = set(good)
    recovered = next((s for s in range(0, AFTER - GOOD_SECONDS + 1)
                      if all(x in gs for x in range(s, s + GOOD_SECONDS))), None)
    # samples: per-second CPU and counter deltas, keyed by the second after the kill they end in
    rows = sampler.rows
    per = {}
    for (t0, e0, p0, c0, m0), (t1, e1, p1, c1, m1) in zip(rows, rows[1:]):
        s = int(math.floor(t1 - t_kill - 0.5))
        d = {"etcd": (e1 - e0) * 100.0 / HZ / (t1 - t0) if e0 is not None and e1 is not None else None,
             "tp": (c1 - c0) * 100.0 / HZ / (t1 - t0) if p0 == p1 and c0 is not None and c1 is not None else
             (c1 * 100.0 / HZ / (t1 - t0) if c1 is not None else None)}
        if m1 is not None:
            dd = cdiff(m0 if (p0 == p1 and m0 is not None) else None, m1)
            d["lists"], d["410"], d["watch"] = sum(dd["list"].values()), dd["410"], dd["watch"]
            d["etcd_ops"] = dd["etcd"]
            d["list_by"] = dd["list"]
        per[s] = d
    # etcd CPU in the 30 s after the restart: ticks between the samples closest to t_spawn and t_spawn + 30
    def at(t):
        return min(rows, key=lambda r: abs(r[0] - t))
    e_a, e_b = at(t_spawn), at(t_spawn + 30)
    etcd_30 = (e_b[1] - e_a[1]) / HZ if e_a[1] is not None and e_b[1] is not None else None
    e_pre_a, e_pre_b = at(t_kill - min(30, BEFORE - 2)), at(t_kill)
    etcd_pre = ((e_pre_b[1] - e_pre_a[1]) / HZ * 30.0 / max(1.0, e_pre_b[0] - e_pre_a[0])
                if e_pre_a[1] is not None and e_pre_b[1] is not None else None)
    tp_30 = 0.0
    tp_known = False
    for s in range(0, 30):
        if s in per and per[s]["tp"] is not None:
            tp_30 += per[s]["tp"] / 100.0
            tp_known = True
    lists_after, list_by, gone, watches, etcd_ops = 0, {}, 0, 0, {}
    for s in range(-1, AFTER):
        d = per.get(s) or {}
        lists_after += d.get("lists", 0)
        gone += d.get("410", 0)
        watches += d.get("watch", 0)
        for k, v in (d.get("list_by") or {}).items():
            list_by[k] = list_by.get(k, 0) + v
        for k, v in (d.get("etcd_ops") or {}).items():
            etcd_ops[k] = etcd_ops.get(k, 0) + v
    list_secs = [s for s in range(0, AFTER) if (per.get(s) or {}).get("lists")]
    return {"n": n, "side": side, "bin": TP_BINS[side],
            "lists_first": list_secs[0] if list_secs else None, "lists_last": list_secs[-1] if list_secs else None,
            "load_before": la0, "load_after": la1, "ready": ready, "ready_cpu": ready_cpu,
            "etcd_ready_cpu": etcd_ready_cpu,
            "first_ok": first_ok, "recovered": recovered, "etcd_30": etcd_30, "etcd_pre30": etcd_pre,
            "tp_30": tp_30 if tp_known else None, "lists": lists_after, "list_by": list_by, "gone": gone,
            "watches": watches, "etcd_ops": etcd_ops,
            "p99_0_10": pct([x for s in range(0, min(10, AFTER)) for x in b[s]["ok"]], 0.99),
            "p99_10_30": pct([x for s in range(10, min(30, AFTER)) for x in b[s]["ok"]], 0.99),
            "err_after": sum(b[s]["err"] for s in range(0, AFTER)),
            "before_p50": pct(before, 0.5), "before_p99": pct(before, 0.99), "before_ok": len(before),
            "before_err": before_err, "bins": b, "per": per, "result": load.result}


# ---- report ---------------------------------------------------------------------------------

def f(v, spec="%.1f"):
    return "-" if v is None else spec % v


def report(rounds, fill_res, meta):
    model = ""
    for line in open("/proc/cpuinfo"):
        if line.startswith("model name"):
            model = line.split(":", 1)[1].strip()
            break
    etcd_ver = subprocess.run([h.ETCD_BIN, "--version"], capture_output=True, text=True).stdout.split("\n")[0]
    print("""
### Restart of a tenant partition's API server under load (%s)

Machine: %d CPUs, %s, Linux %s; %s. Load average at start: %s; at end: %s
(other people's builds and tests share the machine). One etcd, one TP API server (HTTPS), one RM with
%d hollow nodes in %d hollow kubelet processes (lease %d s), the TP's scheduler and controller manager;
%d pods bound to the hollow nodes and %d configmaps (filled in %.0f s, %.0f objects/s), every pod Running
and the API server quiet before the first round (settled in %.0f s; quiet: %d s in a row without a LIST,
under %g %% of a core). Load: %d creates/s of small configmaps from %d clients, open loop (a late client
skips slots). kill -9 of the API server after %d s of load, started again at once; %d s measured after.
"Recovered": the first second after the kill starting %d seconds in a row with create p99 < %g ms and no
errors (informers back off while the new server is not ready and may relist only later: check the
seconds with LISTs; AFTER=120 shows the whole storm). Binaries: %s.
""" % (meta["date"], os.cpu_count(), model or "unknown CPU", os.uname().release, etcd_ver.strip(),
       meta["load_start"], meta["load_end"], NODES, KUBELETS, LEASE_SECONDS, PODS, CONFIGMAPS,
       fill_res.get("seconds", 0), fill_res.get("ops_per_s", 0), meta["settle"], QUIET_SECONDS, QUIET_PCT, RATE,
       LOAD_CLIENTS, BEFORE, AFTER, GOOD_SECONDS, P99_MS,
       "; ".join("%s = %s" % kv for kv in TP_BINS.items())))
    if not INFORMERS:
        print("INFORMERS=0: no RM, hollow kubelets, scheduler nor controller manager ran (the pods are bound to "
              "nodes that do not exist); only the new server's start and the creates are measured.\n")
    print("| Round | API server | Before: p50 / p99 ms | /readyz after s (its CPU-s / etcd's) | "
          "First create ok after s | "
          "Recovered after s | p99 ms 0–10 s / 10–30 s after | Errors after | "
          "etcd CPU-s, 30 s after (30 s before) | API server CPU-s, 30 s after | "
          "LISTs served after (seconds with LISTs) | 410s | Load avg |")
    print("| ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |")
    for r in rounds:
        print("| %d | %s | %s / %s | %s (%s / %s) | %s | %s | %s / %s | %d | %s (%s) | %s | %s | %d | %s → %s |" % (
            r["n"], r["side"], f(r["before_p50"], "%.2f"), f(r["before_p99"], "%.2f"), f(r["ready"], "%.2f"),
            f(r["ready_cpu"], "%.2f"), f(r["etcd_ready_cpu"], "%.2f"),
            f(r["first_ok"], "%.2f"), "**%s**" % f(r["recovered"], "%d") if r["recovered"] is not None else
            "**not in %d s**" % AFTER, f(r["p99_0_10"]), f(r["p99_10_30"]), r["err_after"], f(r["etcd_30"]),
            f(r["etcd_pre30"]), f(r["tp_30"]), "%d (%s–%s)" % (r["lists"], f(r["lists_first"], "%d"),
                                                                f(r["lists_last"], "%d")), r["gone"],
            r["load_before"], r["load_after"]))
    for r in rounds:
        print("\nRound %d (%s): LISTs by resource after the restart: %s; watches opened: %d; etcd requests by the "
              "new API server: %s; load tool: %s." % (
                  r["n"], r["side"], ", ".join("%s %d" % kv for kv in sorted(r["list_by"].items(), key=lambda x: -x[1]))
                  or "none", r["watches"], ", ".join("%s %d" % kv for kv in sorted(r["etcd_ops"].items())) or "-",
                  json.dumps(r["result"])))
        print("\n| s after kill | creates ok | errors | p50 ms | p99 ms | etcd CPU % | API server CPU % | LISTs "
              "| 410s |")
        print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
        spans = [(s, s + 1) for s in range(-3, min(AFTER, 20))] + [(s, min(AFTER, s + 5)) for s in range(20, AFTER, 5)]
        for lo, hi in spans:
            ok = [x for s in range(lo, hi) for x in r["bins"][s]["ok"]]
            err = sum(r["bins"][s]["err"] for s in range(lo, hi))
            ps = [r["per"].get(s) for s in range(lo, hi) if r["per"].get(s)]
            def avg(k):
                v = [p[k] for p in ps if p.get(k) is not None]
                return sum(v) / len(v) if v else None
            print("| %s | %d | %d | %s | %s | %s | %s | %d | %d |" % (
                str(lo) if hi == lo + 1 else "%d–%d" % (lo, hi - 1), len(ok), err, f(pct(ok, 0.5), "%.1f"),
                f(pct(ok, 0.99), "%.1f"), f(avg("etcd"), "%.0f"), f(avg("tp"), "%.0f"),
                sum(p.get("lists", 0) for p in ps), sum(p.get("410", 0) for p in ps)))
    if len(TP_BINS) > 1:
        def med(side, k):
            v = sorted(r[k] for r in rounds if r["side"] == side and r[k] is not None)
            return v[len(v) // 2] if v else None
        print("\n| Medians | A | B |\n| --- | ---: | ---: |")
        for k, label in (("recovered", "recovered after s"), ("ready", "/readyz after s"),
                         ("ready_cpu", "API server CPU-s until ready"), ("etcd_ready_cpu", "etcd CPU-s until ready"),
                         ("first_ok", "first create ok after s"),
                         ("p99_0_10", "create p99 ms, 0–10 s after"), ("p99_10_30", "create p99 ms, 10–30 s after"),
                         ("etcd_30", "etcd CPU-s in the 30 s after"), ("lists", "LISTs served after the restart")):
            print("| %s | %s | %s |" % (label, f(med("A", k), "%.2f"), f(med("B", k), "%.2f")))


try:
    meta = {"date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "load_start": loadavg()}
    rm, tp, tp_etcd, _ = region()
    fill_res = fill(tp)
    meta["settle"] = settle(tp, "after the fill", pods=bool(INFORMERS))
    sides = [s for _ in range(ROUNDS) for s in sorted(TP_BINS)]
    rounds = []
    try:
        for i, side in enumerate(sides, 1):
            rounds.append(one_round(i, side, tp, tp_etcd))
            r = rounds[-1]
            log("round %d (%s): first ok %s s, recovered %s s, etcd %s CPU-s in 30 s, %d LISTs, %d 410s" % (
                i, side, f(r["first_ok"], "%.2f"), f(r["recovered"], "%d"), f(r["etcd_30"]), r["lists"], r["gone"]))
            if i < len(sides):
                settle(tp, "after round %d" % i, pods=False)
    except BaseException as e:  # report the rounds done so far, then fail
        log("stopped after %d of %d rounds: %r" % (len(rounds), len(sides), e))
        if not rounds:
            raise
        failed = e
    else:
        failed = None
    meta["load_end"] = loadavg()
    report(rounds, fill_res, meta)
    keys = ("n", "side", "ready", "ready_cpu", "etcd_ready_cpu", "first_ok", "recovered", "p99_0_10", "p99_10_30",
            "err_after", "etcd_30", "etcd_pre30", "tp_30", "lists", "lists_first", "lists_last", "list_by", "gone",
            "watches", "before_p50", "before_p99", "before_ok", "before_err")
    print("FIGURES " + json.dumps({"fill": fill_res, "settle_s": meta["settle"], "load_start": meta["load_start"],
                                     "load_end": meta["load_end"],
                                     "rounds": [{k: r[k] for k in keys} for r in rounds]}), file=sys.stderr, flush=True)
    if failed:
        raise SystemExit(1)
finally:
    h.cleanup()
PY
