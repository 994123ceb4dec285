#!/usr/bin/env bash
# End-to-end scheduler benchmarks on loopback (fresh etcds, free ports, temporary directories):
#   1. throughput: one ursa-scheduler, NODES hollow nodes split over two resource managers
#      (zones az-1, az-2), PODS pending pods created beforehand (across 3 tenants); times from
#      the scheduler's "scheduling" log line (leader, caches synced) to the last pod seen bound
#      on a watch of the partition's pods (pods/s), with the scheduler's counters.
#   2. streaming: the scheduler already running, PODS more pods created by bench/sched-create
#      (LOAD_CLIENTS clients) while it schedules; pods/s from the first create sent to the last
#      pod seen bound, next to the creation rate alone.
#   3. contention: two tenant partitions, each with its scheduler, fill the same FILL_NODES
#      nodes to 95 % cpu at once; reports overcommitted nodes (from the pods actually bound),
#      pods the kubelets rejected (status.reason OutOf*), and how often the schedulers collided
#      (reservation conflicts and re-decisions).
# usage: bench/run-scheduler.sh [BUILD_DIR] [--quick]
# Knobs (environment): NODES (5000), PODS (5000), FILL_NODES (200), WORKERS (64), CHUNK (16:
#   --reservation-chunk; 1 = one reservation write per pod, the old behaviour), LOAD_CLIENTS (16),
#   WHICH (throughput,streaming,contention), PERF_DIR (if set: `perf record` of the scheduler,
#   TP, RM API servers and etcds for PERF_SECONDS (8) once scheduling starts, reports there;
#   PERF_CALL_GRAPH (fp) is perf's --call-graph: dwarf,16384 unwinds the libraries too),
#   LEASE_SECONDS (40: the hollow kubelets' --lease-seconds; nodes renew every quarter of it, so
#   5,000 nodes make 500 lease writes/s to the RMs in the background; 400 makes it 50/s).
#   RM_LINGER, TP_LINGER (the RM and TP API servers' --etcd-write-linger-ms; default: theirs),
#   HB_LINGER (the RMs' --etcd-heartbeat-linger-ms; default: theirs, 40; 0: lease renewals are
#   written like any other write, as before 2026-11-26 15:30),
#   HOLLOW_NICE (a diagnostic: run the hollow kubelets under `nice -n HOLLOW_NICE`, as if the
#   hosts they simulate had cores of their own; their lease renewals still reach the RMs),
#   OBSERVER (c: bench/ursa-podwatch, an informer in C, sees pods bound — the default; python:
#   the script's own watch, which decodes every pod event and cost ~7 % of the machine).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD="$ROOT/build"
QUICK=0
for arg in "$@"; do
	case "$arg" in
	--quick) QUICK=1 ;;
	-h|--help) sed -n '2,26p' "$0"; exit 0 ;;
	-*) echo "run-scheduler.sh: unknown option $arg" >&2; exit 2 ;;
	*) BUILD=$(cd "$arg" && pwd) ;;
	esac
done
if [ "$QUICK" = 1 ]; then
	: "${NODES:=200}" "${PODS:=400}" "${FILL_NODES:=20}"
fi
export URSA_BUILD_DIR="$BUILD" NODES="${NODES:-5000}" PODS="${PODS:-5000}" FILL_NODES="${FILL_NODES:-200}" \
	WORKERS="${WORKERS:-64}" CHUNK="${CHUNK:-16}" LOAD_CLIENTS="${LOAD_CLIENTS:-16}" PERF_DIR="${PERF_DIR:-}" \
	PERF_SECONDS="${PERF_SECONDS:-8}" PERF_CALL_GRAPH="${PERF_CALL_GRAPH:-fp}"
exec python3 - "$ROOT" <<'PY'
import json, os, re, subprocess, sys, threading, time
sys.path.insert(0, os.path.join(sys.argv[1], "tests", "lib"))
import ursa_harness as h

B = os.environ["URSA_BUILD_DIR"]
RM_BIN = os.path.join(B, "src", "resource-manager", "ursa-rm-apiserver")
KL_BIN = os.path.join(B, "src", "kubelet", "ursa-kubelet")
SCHED_BIN = os.path.join(B, "src", "scheduler", "ursa-scheduler")
CREATE_BIN = os.path.join(B, "bench", "sched-create")
WATCH_BIN = os.path.join(B, "bench", "ursa-podwatch")
OBSERVER = os.environ.get("OBSERVER", "c")
NODES, PODS, FILL, WORKERS, CHUNK, LOAD_CLIENTS = (int(os.environ[k]) for k in (
    "NODES", "PODS", "FILL_NODES", "WORKERS", "CHUNK", "LOAD_CLIENTS"))
PERF_DIR, PERF_SECONDS = os.environ.get("PERF_DIR"), int(os.environ.get("PERF_SECONDS", "8"))
PERF_CALL_GRAPH = os.environ.get("PERF_CALL_GRAPH", "fp")
LEASE_SECONDS = int(os.environ.get("LEASE_SECONDS", "40"))
TOL = [{"key": "ursa.io/hollow", "operator": "Exists", "effect": "NoSchedule"}]


RM_LINGER = os.environ.get("RM_LINGER", "")
TP_LINGER = os.environ.get("TP_LINGER", "")
HB_LINGER = os.environ.get("HB_LINGER", "")
# A diagnostic, not the figure: the hollow kubelets (the simulated hosts) at a lower priority.
HOLLOW_NICE = ["nice", "-n", os.environ["HOLLOW_NICE"]] if os.environ.get("HOLLOW_NICE") else []


class Rm(h.ApiServer):
    def args(self):
        a = super().args()
        a[0] = RM_BIN
        if RM_LINGER:
            a += ["--etcd-write-linger-ms", RM_LINGER]
        if HB_LINGER:
            a += ["--etcd-heartbeat-linger-ms", HB_LINGER]
        return a


class Tp(h.ApiServer):
    def args(self):
        a = super().args()
        if TP_LINGER:
            a += ["--etcd-write-linger-ms", TP_LINGER]
        return a


def share(dst, src):
    for a in ("ca_file", "cert_file", "key_file", "signing_key", "signing_pub", "admin_token", "token_file"):
        setattr(dst, a, getattr(src, a))


ROLES = []  # (role, Popen) of every daemon started, for the CPU accounting


def proc(name, args):
    d = h.make_tmpdir(name)
    log = os.path.join(d, name + ".log")
    h._logs.append((name, log))
    p = h.spawn(args, log)
    ROLES.append((name, p))
    return p, log, d


def cpu_seconds(p):
    try:
        f = open("/proc/%d/stat" % p.pid).read().rsplit(")", 1)[1].split()
        return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return 0.0


def cpu_snapshot():
    snap = {r: cpu_seconds(p) for r, p in ROLES if p}
    t = os.times()
    snap["bench-client"] = t.user + t.system  # this script (with OBSERVER=python, its watch of every pod)
    snap["machine"] = sum(float(x) for x in open("/proc/stat").readline().split()[1:4]) / os.sysconf("SC_CLK_TCK")
    return snap


def cpu_report(a, b, seconds, what):
    """CPU seconds per role between two snapshots, as a share of the window."""
    parts = ["%s %.1f" % (r, b[r] - a.get(r, 0)) for r in b if r != "machine" and b[r] - a.get(r, 0) >= 0.05]
    print("cpu seconds over %.1f s %s: %s; whole machine %.1f (of %.0f available)"
          % (seconds, what, ", ".join(parts), b["machine"] - a["machine"], seconds * os.cpu_count()), flush=True)


def region(ntp, per_rm, cpu, pods_per_node):
    rms, tps, first = [], [], None
    del ROLES[:]
    for i, zone in ((1, "az-1"), (2, "az-2")):
        e = h.Etcd(name="etcd-rm%d" % i); e.start()
        rm = Rm(e, partition_id="rm-%d" % i)
        if first: share(rm, first)
        first = first or rm
        rm.start(); rm.zone = zone; rms.append(rm)
        ROLES.extend([("etcd-rm%d" % i, e.members[0]["proc"]), ("rm-%d" % i, rm.proc)])
    for i in range(1, ntp + 1):
        e = h.Etcd(name="etcd-tp%d" % i); e.start()
        tp = Tp(e, partition_id="tp-%d" % i); share(tp, first); tp.start(); tps.append(tp)
        ROLES.extend([("etcd-tp%d" % i, e.members[0]["proc"]), ("tp-%d" % i, tp.proc)])
    for tp in tps:
        for rm in rms:
            tp.admin().post("/apis/ursa.io/v1/resourcemanagers", {"apiVersion": "ursa.io/v1", "kind": "ResourceManager",
                            "metadata": {"name": rm.partition_id}, "spec": {"endpoints": [rm.url], "zone": rm.zone}})
            rm.admin().post("/apis/ursa.io/v1/tenantpartitions", {"apiVersion": "ursa.io/v1", "kind": "TenantPartition",
                            "metadata": {"name": tp.partition_id}, "spec": {"endpoints": [tp.url]}})
    for rm in rms:
        proc("kubelet-" + rm.partition_id, HOLLOW_NICE + [KL_BIN, "--kubeconfig", rm.admin_kubeconfig(), "--port", "0",
             "--root-dir", h.make_tmpdir("klroot"), "--hollow-nodes", str(per_rm), "--hollow-prefix",
             rm.partition_id + "-n", "--zone", rm.zone, "--cpu", str(cpu), "--memory", "64Gi",
             "--max-pods", str(pods_per_node), "--lease-seconds", str(LEASE_SECONDS)])
    want = per_rm * 2
    h.wait_until(lambda: sum(len(rm.admin().get("/api/v1/nodes").json.get("items", [])) for rm in rms) >= want,
                 600, "%d nodes registered" % want, interval=2)
    return rms, tps


def create_pods(tp, tenants, n, cpu, prefix):
    def work(k):
        c = tp.admin()
        for i in range(k, n, 8):
            t = tenants[i % len(tenants)]
            p = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "%s-%d" % (prefix, i)},
                 "spec": {"tolerations": TOL, "containers": [{"name": "c", "image": "x",
                          "resources": {"requests": {"cpu": cpu, "memory": "64Mi"}}}]}}
            for _ in range(5):
                if c.post(h.pods_path(t), p).status in (201, 409):
                    break
    ts = [threading.Thread(target=work, args=(k,)) for k in range(8)]
    [t.start() for t in ts]
    [t.join() for t in ts]


def fast_create(tp, tenant, n, prefix):
    """Creates n pending pods (100m cpu, 64Mi) in tenant with bench/sched-create; returns its RESULT."""
    out = subprocess.run([CREATE_BIN, "--server", tp.url, "--token", tp.admin_token, "--cacert", tp.ca_file,
                          "--tenant", tenant, "--clients", str(LOAD_CLIENTS), "--count", str(n), "--prefix", prefix,
                          "--cpu", "100m", "--memory", "64Mi"], capture_output=True, text=True, timeout=900)
    res = [l for l in out.stdout.splitlines() if l.startswith("RESULT ")]
    if out.returncode or not res:
        raise RuntimeError("sched-create failed: %s %s" % (out.stdout, out.stderr))
    return json.loads(res[-1][7:])


def all_pods(tp):
    return tp.admin().get("/api/v1/tenants/all/pods").json.get("items", [])


def sched(tp, ident, extra=()):
    return proc("sched-" + ident, [SCHED_BIN, "--kubeconfig", tp.admin_kubeconfig(), "--partition-id",
                tp.partition_id, "--identity", ident, "--workers", str(WORKERS), "--scheduled-events=false",
                "--reservation-chunk", str(CHUNK),
                "--stats-seconds", "5"] + list(extra))


def last_stats(log):
    line = [l for l in open(log) if "msg=\"stats\"" in l or "msg=\"stopped\"" in l]
    return dict(re.findall(r"(\w+)=(\d+)", line[-1])) if line else {}


class BoundWatch:
    """Watches every pod of a partition and records when each was first seen with a node."""

    def __init__(self, tp):
        self.w = tp.admin(timeout=900).watch("/api/v1/tenants/all/pods?watch=1", timeout=900)
        self.bound, self.last, self.lock = set(), 0.0, threading.Lock()
        self.t = threading.Thread(target=self._run, daemon=True)
        self.t.start()

    def _run(self):
        while True:
            try:
                ev = self.w.next(1.0)
            except EOFError:
                return
            if not ev:
                continue
            o = ev.get("object") or {}
            if (o.get("spec") or {}).get("nodeName"):
                m = o.get("metadata") or {}
                k = (m.get("tenant"), m.get("namespace"), m.get("name"))
                with self.lock:
                    if k not in self.bound:
                        self.bound.add(k)
                        self.last = time.monotonic()
            self.w.events.clear()

    @property
    def count(self):
        with self.lock:
            return len(self.bound)

    def wait(self, n, timeout):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self.lock:
                if len(self.bound) >= n:
                    return self.last
            time.sleep(0.05)
        raise RuntimeError("only %d of %d pods bound" % (len(self.bound), n))


class PodWatch:
    """The same from bench/ursa-podwatch (an informer in C): its lines "BOUND <count> <when>"."""

    def __init__(self, tp):
        self.p = subprocess.Popen([WATCH_BIN, "--server", tp.url, "--token", tp.admin_token, "--cacert", tp.ca_file],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, start_new_session=True)
        h._children.append(self.p)
        ROLES.append(("observer", self.p))
        self._count, self.last, self.lock, self.synced = 0, 0.0, threading.Lock(), threading.Event()
        threading.Thread(target=self._run, daemon=True).start()
        if not self.synced.wait(120):
            raise RuntimeError("ursa-podwatch did not sync")

    def _run(self):
        for line in self.p.stdout:
            f = line.split()
            if f and f[0] == "SYNCED":
                self.synced.set()
            elif len(f) == 3 and f[0] == "BOUND":
                with self.lock:
                    self._count, self.last = int(f[1]), float(f[2])

    @property
    def count(self):
        with self.lock:
            return self._count

    def wait(self, n, timeout):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self.lock:
                if self._count >= n:
                    return self.last
            time.sleep(0.05)
        raise RuntimeError("only %d of %d pods bound" % (self.count, n))


def bound_watch(tp):
    return PodWatch(tp) if OBSERVER == "c" else BoundWatch(tp)


def perf_targets(procs):
    if not PERF_DIR:
        return None
    os.makedirs(PERF_DIR, exist_ok=True)
    with open(os.path.join(PERF_DIR, "pids.txt"), "w") as f:
        for r, p in ROLES:
            f.write("%d %s\n" % (p.pid, r))
    pids = ",".join(str(p.pid) for p in procs if p)
    return subprocess.Popen(["perf", "record", "--call-graph", PERF_CALL_GRAPH, "-o", os.path.join(PERF_DIR, "perf.data"), "-p", pids,
                             "--", "sleep", str(PERF_SECONDS)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def request_counts(servers):
    """ursa_apiserver_request_total of each server: {(server, verb, resource, code): count}."""
    out = {}
    for srv in servers:
        text = srv.admin().get("/metrics").text
        for m in re.finditer(r'^ursa_apiserver_request_total\{verb="([^"]*)",resource="([^"]*)",code="(\d+)"\} (\d+)$',
                             text, re.M):
            out[(srv.partition_id,) + m.groups()[:3]] = int(m.group(4))
        for m in re.finditer(r'^ursa_apiserver_cache_(write_hints|trees)_total\{result="(\w+)"\} (\d+)$', text, re.M):
            out[(srv.partition_id, "cache", m.group(1), m.group(2))] = int(m.group(3))
        for m in re.finditer(r'^ursa_etcd_(write_txns|writes)_total (\d+)$', text, re.M):
            out[(srv.partition_id, "etcd", m.group(1), "")] = int(m.group(2))
    return out


def request_report(a, b, what):
    parts = ["%s %s %s %s: %d" % (k + (b[k] - a.get(k, 0),)) for k in sorted(b) if b[k] - a.get(k, 0) > 0]
    print("requests %s: %s" % (what, "; ".join(parts)), flush=True)


def stats_text(s):
    return ("decision avg %s us, reserve writes %s (conflicts %s), gc writes %s, bind errors %s"
            % (s.get("decision_avg_us"), s.get("reserve_writes"), s.get("reserve_conflicts"), s.get("gc_writes"),
               s.get("bind_errors")))


def throughput():
    rms, tps = region(1, NODES // 2, 8, 110)
    tp = tps[0]
    tenants = ["t%d" % i for i in range(3)]
    for t in tenants:
        h.create_tenant(tp.admin(), t)
    t0 = time.monotonic()
    for i, t in enumerate(tenants):
        n = PODS // len(tenants) + (1 if i < PODS % len(tenants) else 0)
        fast_create(tp, t, n, "p")
    print("created %d pods in %.1fs" % (PODS, time.monotonic() - t0), flush=True)
    bw = bound_watch(tp)
    idle0, t_idle = cpu_snapshot(), time.monotonic()
    time.sleep(5)
    cpu_report(idle0, cpu_snapshot(), time.monotonic() - t_idle, "before the scheduler starts (background)")
    t_start = time.monotonic()
    p, log, _ = sched(tp, "bench")
    while "msg=\"scheduling\"" not in open(log).read():
        if time.monotonic() - t_start > 120:
            raise RuntimeError("scheduler not leading")
        time.sleep(0.02)
    start, c0, r0 = time.monotonic(), cpu_snapshot(), request_counts([tp] + rms)
    procs = [p] + [s.proc for s in [tp] + rms] + [m["proc"] for s in [tp] + rms for m in s.etcd.members]
    perf = perf_targets(procs)
    end = bw.wait(PODS, 600)
    el = end - start
    if not perf:
        window = time.monotonic() - start
        cpu_report(c0, cpu_snapshot(), window, "while scheduling")
        r1 = request_counts([tp] + rms)
        request_report(r0, r1, "served while scheduling")
        renewals = sum(r1[k] - r0.get(k, 0) for k in r1 if k[0].startswith("rm-") and k[2] == "leases")
        # the simulated hosts must keep their pace: a slower benchmark would hide heartbeat cost
        print("lease renewals while scheduling: %.0f/s (the nodes' pace: %.0f/s)"
              % (renewals / window, NODES / (LEASE_SECONDS / 4.0)), flush=True)
    if perf:
        perf.wait()
    time.sleep(1.5)
    h.terminate(p)
    s = last_stats(log)
    print("| one scheduler, %d hollow nodes over 2 RMs (lease %d s), %d pods created before, %d workers, chunk %d "
          "| %.2f s (%.2f s from process start) | **%.0f pods/s** | %s |"
          % (NODES, LEASE_SECONDS, PODS, WORKERS, CHUNK, el, end - t_start, PODS / el, stats_text(s)), flush=True)
    if WHICH_STREAMING:
        streaming(tp, log)


def streaming(tp, old_log):
    """A fresh scheduler leads; sched-create makes PODS more pods (100m cpu) while it schedules."""
    h.create_tenant(tp.admin(), "load")
    bw = bound_watch(tp)
    time.sleep(1)
    p, log, _ = sched(tp, "bench-stream")
    h.wait_until(lambda: "msg=\"scheduling\"" in open(log).read(), 120, "scheduler leading", interval=0.1)
    base = bw.count
    start, c0 = time.monotonic(), cpu_snapshot()
    res = fast_create(tp, "load", PODS, "s")
    created = time.monotonic() - start
    end = bw.wait(base + PODS, 600)
    el = end - start
    cpu_report(c0, cpu_snapshot(), time.monotonic() - start, "creating and scheduling")
    time.sleep(1.5)
    h.terminate(p)
    s = last_stats(log)
    rate = res.get("ops_per_s")
    print("| pods created while it runs: %d pods by sched-create (%d clients) | %.2f s (the creates, meanwhile, took %.2f s: "
          "%s creates/s) | **%.0f pods/s** | %s |"
          % (PODS, LOAD_CLIENTS, el, created, rate, PODS / el, stats_text(s)), flush=True)


def contention():
    per_rm = FILL // 2
    rms, tps = region(2, per_rm, 2, 110)
    for tp, t in zip(tps, ("acme", "zeta")):
        h.create_tenant(tp.admin(), t)
    # 2 cpu per node, 500m pods: 95 % of the region's cpu, half from each partition
    total = int(FILL * 4 * 0.95)
    logs = []
    for tp in tps:
        p, log, _ = sched(tp, "s-" + tp.partition_id)
        logs.append((p, log))
    for p, log in logs:
        h.wait_until(lambda: "msg=\"scheduling\"" in open(log).read(), 120, "scheduler leading")
    start = time.monotonic()
    ths = [threading.Thread(target=create_pods, args=(tp, [t], total // 2, "500m", "f"))
           for tp, t in zip(tps, ("acme", "zeta"))]
    [t.start() for t in ths]
    [t.join() for t in ths]
    want = (total // 2) * 2
    while time.monotonic() - start < 300:
        n = sum(1 for tp in tps for i in all_pods(tp) if i["spec"].get("nodeName"))
        if n >= want:
            break
        time.sleep(1)
    time.sleep(5)  # let the kubelets admit the last pods
    el = time.monotonic() - start
    used, rejected, bound = {}, 0, 0
    for tp in tps:
        for i in all_pods(tp):
            n = i["spec"].get("nodeName")
            if not n:
                continue
            bound += 1
            if (i.get("status") or {}).get("reason", "").startswith("OutOf"):
                rejected += 1
                continue
            used[n] = used.get(n, 0) + 500
    over = [n for n, m in used.items() if m > 2000]
    stats = []
    for p, log in logs:
        h.terminate(p)
        stats.append(last_stats(log))
    print("| two partitions fill %d nodes to 95 %% (%d pods of 500m) | %.1f s | %d of %d bound, "
          "**%d nodes overcommitted, %d pods rejected by kubelets** | reservation conflicts %s + %s, "
          "re-decisions after a collision %s + %s, reserve writes %s + %s |"
          % (FILL, want, el, bound, want, len(over), rejected, stats[0].get("reserve_conflicts"),
             stats[1].get("reserve_conflicts"), stats[0].get("collisions"), stats[1].get("collisions"),
             stats[0].get("reserve_writes"), stats[1].get("reserve_writes")), flush=True)


try:
    which = os.environ.get("WHICH", "throughput,streaming,contention").split(",")
    WHICH_STREAMING = "streaming" in which
    if "throughput" in which:
        throughput()
        h.cleanup()
        # the harness cleans up once: arm it again for the contention region
        h._state["cleaned"] = False
        del h._children[:], h._tmpdirs[:], h._logs[:]
    if "contention" in which:
        contention()
finally:
    h.cleanup()
PY
