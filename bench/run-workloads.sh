#!/usr/bin/env bash
# Job bursts, Deployment bursts and a CronJob-heavy tenant on hollow nodes (issue 17), end to end:
#   region: a gateway (with its etcd), one tenant partition (ursa-tp-apiserver, the TP controller
#   manager, ursa-scheduler) and RMS resource managers (zones az-1, ...), each partition with its
#   etcd, registered with `ursactl register`; one hollow kubelet per resource manager with NODES/RMS
#   nodes (8 cpu, 64Gi, 110 pods; fake runtime, whose `sleep N` containers exit 0 after N s in
#   pods with restartPolicy Never/OnFailure). Every request of the benchmark goes through the
#   gateway as a user of tenant "wl" (group ursa:tenant-admins).
#   1. CronJobs: CRONJOBS CronJobs "* * * * *" (a Job of one pod `sleep CRON_SLEEP`, restartPolicy
#      Never, default history limits) created together; for CRON_MINUTES scheduled minutes, from a
#      watch on the tenant's jobs: jobs created per minute, lag from the scheduled minute to the
#      watch event of each job's creation (median, p99, max), jobs Complete before the next minute,
#      jobs deleted (history pruning), the most successful finished jobs a CronJob keeps, and the
#      controller manager's CPU seconds and RSS per minute. The CronJobs are then deleted.
#   2. ROUNDS rounds of: a Job burst (JOBS Jobs of completions = parallelism = PODS_PER_JOB, pods
#      `sleep JOB_SLEEP`, restartPolicy Never) created at once by CLIENTS concurrent clients, timed
#      from the first create to every Job having condition Complete; then a Deployment burst of the
#      same pod count (DEPLOYS Deployments x REPLICAS, same pod spec without a command), timed to
#      every Deployment's availableReplicas = REPLICAS. Each burst runs in a fresh namespace and is
#      deleted (propagationPolicy Background) and its pods gone before the next (not timed). The
#      controller manager's CPU seconds (utime + stime from /proc/<pid>/stat) and RSS (VmRSS,
#      sampled every 0.5 s: peak and at the end) are recorded for each burst.
# Prints "RESULT <json>" lines and a summary (medians, ratios). Everything runs in one temporary
# directory (TMPDIR for the harness too), removed with every process on exit; ports are free
# loopback ports.
#
# usage: bench/run-workloads.sh [BUILD_DIR]
# Knobs (environment): NODES (120), RMS (2), JOBS (1000), PODS_PER_JOB (10), JOB_SLEEP (5),
#   DEPLOYS (1000), REPLICAS (10), ROUNDS (2), CLIENTS (32), CRONJOBS (1000), CRON_MINUTES (3),
#   CRON_SLEEP (1), BURST_TIMEOUT (900), CLEAN_TIMEOUT (600), PHASES ("cron,bursts"), GW_TENANT_QPS and
#   GW_TENANT_BURST (the gateway's --tenant-qps/--tenant-burst; default: the gateway's, 100/s and 200).
#   A 429 from the gateway is retried after its Retry-After, as client-go does.
#   SMOKE=1: 4 nodes, 1 RM, 5 jobs x 2, 5 deployments x 2, 1 round, 5 CronJobs for 1 minute, and
#   the controller manager's cronjob clock shifted (--cronjob-now-offset) so that its next minute
#   comes about 25 s after it starts: a test of the script (well under a minute of waiting).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD="$ROOT/build"
for arg in "$@"; do
	case "$arg" in
	-h|--help) sed -n '/^set -euo/q;2,$p' "$0"; exit 0 ;;
	-*) echo "run-workloads.sh: unknown option $arg" >&2; exit 2 ;;
	*) BUILD=$(cd "$arg" && pwd) || { echo "run-workloads.sh: build dir $arg not found" >&2; exit 1; } ;;
	esac
done
if [ "${SMOKE:-0}" = 1 ]; then
	: "${NODES:=4}" "${RMS:=1}" "${JOBS:=5}" "${PODS_PER_JOB:=2}" "${JOB_SLEEP:=1}" "${DEPLOYS:=5}" "${REPLICAS:=2}"
	: "${ROUNDS:=1}" "${CLIENTS:=4}" "${CRONJOBS:=5}" "${CRON_MINUTES:=1}" "${BURST_TIMEOUT:=120}" "${CLEAN_TIMEOUT:=120}"
fi
export URSA_BUILD_DIR="$BUILD" SMOKE="${SMOKE:-0}" NODES="${NODES:-120}" RMS="${RMS:-2}" JOBS="${JOBS:-1000}" \
	PODS_PER_JOB="${PODS_PER_JOB:-10}" JOB_SLEEP="${JOB_SLEEP:-5}" DEPLOYS="${DEPLOYS:-1000}" \
	REPLICAS="${REPLICAS:-10}" ROUNDS="${ROUNDS:-2}" CLIENTS="${CLIENTS:-32}" CRONJOBS="${CRONJOBS:-1000}" \
	CRON_MINUTES="${CRON_MINUTES:-3}" CRON_SLEEP="${CRON_SLEEP:-1}" BURST_TIMEOUT="${BURST_TIMEOUT:-900}" \
	CLEAN_TIMEOUT="${CLEAN_TIMEOUT:-600}" PHASES="${PHASES:-cron,bursts}"

for b in src/tenant-partition/ursa-tp-apiserver src/tenant-partition/controllers/ursa-tp-controller-manager \
	src/resource-manager/ursa-rm-apiserver src/scheduler/ursa-scheduler src/kubelet/ursa-kubelet \
	src/gateway/ursa-gateway src/ursactl/ursactl; do
	[ -x "$BUILD/$b" ] || { echo "run-workloads.sh: missing $BUILD/$b (cmake --build $BUILD --target $(basename "$b"))" >&2; exit 1; }
done
command -v etcd >/dev/null || { echo "run-workloads.sh: etcd not found" >&2; exit 1; }

TMP=$(mktemp -d /tmp/ursa-workloads.XXXXXX)
PY_PID=""
cleanup() {
	if [ -n "$PY_PID" ]; then
		kill "$PY_PID" 2>/dev/null || true   # the harness kills its children on SIGTERM
		wait "$PY_PID" 2>/dev/null || true
	fi
	rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
export TMPDIR="$TMP"
ulimit -n 65536 2>/dev/null || true

echo "# $(date -u +%Y-%m-%dT%H:%M:%SZ) $(nproc) CPUs, load average $(uptime | sed 's/.*load average: //')"
echo "# NODES=$NODES RMS=$RMS JOBS=$JOBS PODS_PER_JOB=$PODS_PER_JOB JOB_SLEEP=$JOB_SLEEP DEPLOYS=$DEPLOYS REPLICAS=$REPLICAS ROUNDS=$ROUNDS CLIENTS=$CLIENTS CRONJOBS=$CRONJOBS CRON_MINUTES=$CRON_MINUTES CRON_SLEEP=$CRON_SLEEP SMOKE=$SMOKE"
T0=$(date +%s)
python3 - "$ROOT" <<'PY' &
import http.client, json, os, queue, secrets, ssl, statistics, sys, threading, time
from datetime import datetime, timezone
sys.path.insert(0, os.path.join(sys.argv[1], "tests", "lib"))
import ursa_harness as h

B = os.environ["URSA_BUILD_DIR"]
RM_BIN = os.path.join(B, "src", "resource-manager", "ursa-rm-apiserver")
KL_BIN = os.path.join(B, "src", "kubelet", "ursa-kubelet")
SCHED_BIN = os.path.join(B, "src", "scheduler", "ursa-scheduler")
TPCM_BIN = os.path.join(B, "src", "tenant-partition", "controllers", "ursa-tp-controller-manager")
GW_BIN = os.path.join(B, "src", "gateway", "ursa-gateway")
E = {k: int(os.environ[k]) for k in ("SMOKE", "NODES", "RMS", "JOBS", "PODS_PER_JOB", "JOB_SLEEP", "DEPLOYS",
                                      "REPLICAS", "ROUNDS", "CLIENTS", "CRONJOBS", "CRON_MINUTES", "CRON_SLEEP",
                                      "BURST_TIMEOUT", "CLEAN_TIMEOUT")}
PHASES = os.environ["PHASES"].split(",")
GW_LIMITS = []   # the gateway's per-tenant request rate: its defaults unless GW_TENANT_QPS/BURST say
for k, flag in (("GW_TENANT_QPS", "--tenant-qps"), ("GW_TENANT_BURST", "--tenant-burst")):
    if os.environ.get(k):
        GW_LIMITS += [flag, os.environ[k]]
TOL = [{"key": "ursa.io/hollow", "operator": "Exists", "effect": "NoSchedule"}]
RES = {"requests": {"cpu": "10m", "memory": "10Mi"}}
CM_OFFSET = 0   # --cronjob-now-offset of the controller manager (SMOKE only)
STATS = {"429": 0}   # answers 429 (tenant over its rate at the gateway) retried
STATS_LOCK = threading.Lock()


def note(msg):
    print("# " + msg, file=sys.stderr, flush=True)


def result(kind, **kw):
    kw["phase"] = kind
    print("RESULT " + json.dumps(kw, sort_keys=True), flush=True)


class Quiet(h.ApiServer):
    binary = None

    def args(self):
        a = super().args()
        if self.binary:
            a[0] = self.binary
        a[a.index("--log-level") + 1] = "warn"
        return a


class Rm(Quiet):
    binary = RM_BIN


def share(dst, src):
    for a in ("ca_file", "cert_file", "key_file", "signing_key", "signing_pub", "admin_token", "token_file"):
        setattr(dst, a, getattr(src, a))


def proc(name, args):
    d = h.make_tmpdir(name)
    log = os.path.join(d, name + ".log")
    h._logs.append((name, log))
    return h.spawn(args, log), log


class Conn:
    """One keep-alive HTTPS connection to the gateway (one per client thread)."""

    def __init__(self, url, ca, token, timeout=120):
        self.c = h.Client(url, ca, token, timeout)
        self.conn = None

    def do(self, method, path, body=None):
        """(status, parsed body); a 429 (the gateway's per-tenant rate) is retried after its
        Retry-After, as client-go does, for up to 300 s."""
        data = json.dumps(body).encode() if body is not None else None
        failures, deadline = 0, time.monotonic() + 300
        while True:
            try:
                if self.conn is None:
                    self.conn = self.c.connect()
                self.conn.request(method, path, body=data, headers=self.c._headers(None, "application/json",
                                                                                    data is not None))
                r = self.conn.getresponse()
                raw = r.read()
                if r.getheader("Connection", "").lower() == "close":
                    self.conn.close()
                    self.conn = None
                if r.status == 429 and time.monotonic() < deadline:
                    with STATS_LOCK:
                        STATS["429"] += 1
                    time.sleep(float(r.getheader("Retry-After") or 1))
                    continue
                try:
                    return r.status, json.loads(raw) if raw else None
                except ValueError:
                    return r.status, None
            except (OSError, http.client.HTTPException):
                if self.conn is not None:
                    self.conn.close()
                self.conn = None
                failures += 1
                if failures == 3:
                    raise


def parallel(items, fn, clients):
    """fn(conn, item) for every item on `clients` threads, each with its own connection; returns
    the list of (item, status) whose status was unexpected (fn returns True when it was fine)."""
    q = queue.Queue()
    for it in items:
        q.put(it)
    bad = []
    lock = threading.Lock()

    def worker():
        c = Conn(S["gw_url"], S["ca"], S["token"])
        while True:
            try:
                it = q.get_nowait()
            except queue.Empty:
                return
            try:
                ok = fn(c, it)
            except Exception as e:  # noqa: BLE001 - counted and reported
                ok = repr(e)
            if ok is not True:
                with lock:
                    bad.append((it, ok))
    ts = [threading.Thread(target=worker, daemon=True) for _ in range(min(clients, max(1, len(items))))]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return bad


class Sampler(threading.Thread):
    """CPU seconds (utime + stime) and RSS of one process every 0.5 s."""

    def __init__(self, pid):
        super().__init__(daemon=True)
        self.pid, self.tick = pid, os.sysconf("SC_CLK_TCK")
        self.samples = []   # (monotonic, cpu s, rss KiB)
        self.lock = threading.Lock()
        self.stop = False

    def read(self):
        with open("/proc/%d/stat" % self.pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        cpu = (int(fields[11]) + int(fields[12])) / self.tick
        rss = 0
        with open("/proc/%d/status" % self.pid) as f:
            for ln in f:
                if ln.startswith("VmRSS:"):
                    rss = int(ln.split()[1])
        return time.monotonic(), cpu, rss

    def run(self):
        while not self.stop:
            try:
                s = self.read()
            except OSError:
                return
            with self.lock:
                self.samples.append(s)
            time.sleep(0.5)

    def window(self, t0, t1):
        """cpu seconds used in [t0, t1], peak RSS MiB, RSS MiB at the end."""
        with self.lock:
            ss = [s for s in self.samples if t0 <= s[0] <= t1]
            before = [s for s in self.samples if s[0] < t0]
        if before:
            ss.insert(0, before[-1])
        if len(ss) < 2:
            return 0.0, 0.0, 0.0
        return ss[-1][1] - ss[0][1], max(s[2] for s in ss) / 1024.0, ss[-1][2] / 1024.0


S = {}


def region():
    idkey = os.path.join(h.make_tmpdir("idkey"), "identity.key")
    with open(idkey, "w") as f:
        f.write(secrets.token_hex(32))
    ida = ["--identity-key-file", idkey]
    gw_etcd = h.Etcd(name="etcd-gw"); gw_etcd.start()
    rms = []
    for i in range(1, E["RMS"] + 1):
        e = h.Etcd(name="etcd-rm%d" % i); e.start()
        rm = Rm(e, partition_id="rm-%d" % i, extra_args=ida)
        if rms:
            share(rm, rms[0])
        rm.start(); rm.zone = "az-%d" % i; rms.append(rm)
    e = h.Etcd(name="etcd-tp1"); e.start()
    tp = Quiet(e, partition_id="tp-1", extra_args=ida); share(tp, rms[0]); tp.start()

    def register(pid, kind, url, zone=None):
        a = [h.URSACTL_BIN, "register", "--region-file", os.path.join(tp.dir, "region.json"),
             "--signing-key", tp.signing_key, "--certificate-authority", tp.ca_file,
             "--gateway-etcd", gw_etcd.endpoints, "--kind", kind, "--name", pid, "--endpoints", url]
        if zone:
            a += ["--zone", zone]
        h.must_run(a, 60)
    register(tp.partition_id, "tp", tp.url)
    for rm in rms:
        register(rm.partition_id, "rm", rm.url, rm.zone)
    for rm in rms:   # what register should have done already: make sure (201 or 409)
        tp.admin().post("/apis/ursa.io/v1/resourcemanagers", {"apiVersion": "ursa.io/v1", "kind": "ResourceManager",
                        "metadata": {"name": rm.partition_id}, "spec": {"endpoints": [rm.url], "zone": rm.zone}})
        rm.admin().post("/apis/ursa.io/v1/tenantpartitions", {"apiVersion": "ursa.io/v1", "kind": "TenantPartition",
                        "metadata": {"name": tp.partition_id}, "spec": {"endpoints": [tp.url]}})
    token = os.path.join(tp.dir, "gw.token")
    with open(token, "w") as f:
        f.write(tp.admin_token)
    gw_port = h.free_port()
    proc("gateway", [GW_BIN, "--listen", "127.0.0.1:%d" % gw_port, "--etcd-servers", gw_etcd.endpoints,
                     "--tls-cert-file", tp.cert_file, "--tls-private-key-file", tp.key_file,
                     "--token-auth-file", tp.token_file, "--token-signing-public-key", tp.signing_pub,
                     "--partition-ca-file", tp.ca_file, "--partition-token-file", token] + ida + GW_LIMITS +
         ["--log-level", "warn"])
    S["gw_url"] = "https://127.0.0.1:%d" % gw_port
    S["ca"] = tp.ca_file
    admin = h.Client(S["gw_url"], tp.ca_file, tp.admin_token, 60)
    h.wait_until(lambda: _ok(admin, "/readyz"), 60, "gateway ready")
    per_rm = E["NODES"] // E["RMS"]
    for rm in rms:
        proc("kubelet-" + rm.partition_id, [KL_BIN, "--kubeconfig", rm.admin_kubeconfig(), "--port", "0",
             "--root-dir", h.make_tmpdir("klroot"), "--hollow-nodes", str(per_rm), "--hollow-prefix",
             rm.partition_id + "-n", "--zone", rm.zone, "--cpu", "8", "--memory", "64Gi", "--max-pods", "110",
             "--log-level", "warn"])
    want = per_rm * E["RMS"]
    t = time.monotonic()
    h.wait_until(lambda: sum(len(rm.admin().get("/api/v1/nodes").json.get("items", [])) for rm in rms) >= want,
                 600, "%d nodes registered" % want, interval=1)
    note("%d hollow nodes registered in %.1f s" % (want, time.monotonic() - t))
    kc = tp.admin_kubeconfig()
    global CM_OFFSET
    if E["SMOKE"]:
        now = int(time.time())
        CM_OFFSET = 60 - (now + 25) % 60   # the cronjob clock's next minute: about 25 s from now
    cm, _ = proc("tp-controller-manager", [TPCM_BIN, "--kubeconfig", kc, "--log-level", "warn",
                                           "--cronjob-now-offset", str(CM_OFFSET)])
    sc, sc_log = proc("scheduler", [SCHED_BIN, "--kubeconfig", kc, "--partition-id", tp.partition_id,
                                    "--identity", "bench", "--log-level", "info"])
    h.wait_until(lambda: "msg=\"scheduling\"" in open(sc_log).read(), 120, "scheduler leading")
    h.expect_status(admin.post("/api/v1/tenants", h.tenant_manifest("wl")), 201, "create tenant wl")
    h.wait_until(lambda: admin.get("/api/v1/tenants/wl/namespaces/default").status == 200, 30, "tenant wl ready")
    out = h.must_run([h.URSACTL_BIN, "kubeconfig", "--tenant", "wl", "--user", "bench", "--ttl", "0",
                      "--server", S["gw_url"], "--signing-key", tp.signing_key, "--certificate-authority",
                      tp.ca_file, "--groups", "ursa:tenant-admins"])
    path = os.path.join(tp.dir, "wl.kubeconfig")
    with open(path, "w") as f:
        f.write(out)
    S["token"] = h.kubeconfig_token(path)
    S["user"] = Conn(S["gw_url"], S["ca"], S["token"])
    S["procs"] = [cm, sc]
    S["sampler"] = Sampler(cm.pid)
    S["sampler"].start()


def _ok(c, path):
    try:
        return c.get(path).status == 200
    except (OSError, http.client.HTTPException):
        return False


def alive():
    for p in S["procs"]:
        if p.poll() is not None:
            raise h.HarnessError("%s exited with %s" % (p.args[0], p.returncode))


def namespace(name):
    st, _ = S["user"].do("POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                                          "metadata": {"name": name}})
    if st not in (201, 409):
        raise h.HarnessError("create namespace %s: %s" % (name, st))


def pod_spec(command=None):
    c = {"name": "c", "image": "busybox", "resources": RES}
    if command:
        c["command"] = command
    spec = {"tolerations": TOL, "containers": [c], "terminationGracePeriodSeconds": 0}
    if command:
        spec["restartPolicy"] = "Never"
    return spec


def job(name, pods):
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name},
            "spec": {"completions": pods, "parallelism": pods, "backoffLimit": 6,
                     "template": {"metadata": {"labels": {"bench": "job"}},
                                  "spec": pod_spec(["sleep", str(E["JOB_SLEEP"])])}}}


def deployment(name, replicas):
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}}, "spec": pod_spec()}}}


def complete(j):
    return any(c.get("type") == "Complete" and c.get("status") == "True"
               for c in (j.get("status") or {}).get("conditions") or [])


def pct(v, p):
    if not v:
        return None
    v = sorted(v)
    return v[min(len(v) - 1, int(round(p / 100.0 * (len(v) - 1))))]


def create_all(path, objs):
    def fn(c, o):
        st, body = c.do("POST", path, o)
        return True if st == 201 else "%s %s" % (st, (body or {}).get("message", ""))
    t = time.monotonic()
    r0 = STATS["429"]
    bad = parallel(objs, fn, E["CLIENTS"])
    if bad:
        note("%d creates failed, first: %r" % (len(bad), bad[0]))
    note("%d creates in %.1f s, %d answers 429 retried" % (len(objs), time.monotonic() - t, STATS["429"] - r0))
    return time.monotonic() - t, len(bad)


def clean(ns, plural_paths):
    """Deletes every object of plural_paths in ns (Background), waits for the pods to go."""
    t = time.monotonic()
    for path in plural_paths:
        st, body = S["user"].do("GET", path)
        names = [i["metadata"]["name"] for i in (body or {}).get("items", [])]

        def fn(c, n, path=path):
            st, _ = c.do("DELETE", path + "/" + n, {"kind": "DeleteOptions", "apiVersion": "v1",
                                                     "propagationPolicy": "Background"})
            return True if st in (200, 202, 404) else st
        parallel(names, fn, E["CLIENTS"])
    left = -1
    while time.monotonic() - t < E["CLEAN_TIMEOUT"]:
        st, body = S["user"].do("GET", "/api/v1/namespaces/%s/pods?limit=500" % ns)
        left = len((body or {}).get("items", [])) + ((body or {}).get("metadata") or {}).get("remainingItemCount", 0)
        if st == 200 and left == 0:
            break
        time.sleep(2)
    note("cleaned %s in %.1f s (%s pods left)" % (ns, time.monotonic() - t, "500 or more" if left >= 500 else left))
    S["user"].do("DELETE", "/api/v1/namespaces/" + ns)


def burst(kind, r):
    ns = "%s%d" % (kind[0], r)
    namespace(ns)
    time.sleep(1)
    if kind == "job":
        path = "/apis/batch/v1/namespaces/%s/jobs" % ns
        objs = [job("j%d" % i, E["PODS_PER_JOB"]) for i in range(E["JOBS"])]
        want, pods = E["JOBS"], E["JOBS"] * E["PODS_PER_JOB"]
    else:
        path = "/apis/apps/v1/namespaces/%s/deployments" % ns
        objs = [deployment("d%d" % i, E["REPLICAS"]) for i in range(E["DEPLOYS"])]
        want, pods = E["DEPLOYS"], E["DEPLOYS"] * E["REPLICAS"]
    t0 = time.monotonic()
    t_create, errors = create_all(path, objs)
    done, t_done, last_note = 0, None, 0
    while time.monotonic() - t0 < E["BURST_TIMEOUT"]:
        alive()
        st, body = S["user"].do("GET", path)
        items = (body or {}).get("items", [])
        if kind == "job":
            done = sum(1 for j in items if complete(j))
        else:
            done = sum(1 for d in items if ((d.get("status") or {}).get("availableReplicas") or 0) >= E["REPLICAS"])
        if st == 200 and done >= want:
            t_done = time.monotonic() - t0
            break
        if time.monotonic() - last_note > 10:
            note("%s burst %d: %.0f s, %d/%d done" % (kind, r, time.monotonic() - t0, done, want))
            last_note = time.monotonic()
        time.sleep(1)
    t1 = time.monotonic()
    cpu, rss_peak, rss_end = S["sampler"].window(t0, t1)
    result(kind + "-burst", round=r, objects=want, pods=pods, create_s=round(t_create, 2), create_errors=errors,
           done=done, all_done_s=round(t_done, 1) if t_done else None, cm_cpu_s=round(cpu, 2),
           cm_rss_peak_mib=round(rss_peak, 1), cm_rss_end_mib=round(rss_end, 1))
    clean(ns, [path])
    return t_done


def scheduled_of(j):
    a = ((j.get("metadata") or {}).get("annotations") or {}).get("batch.kubernetes.io/cronjob-scheduled-timestamp")
    if not a:
        return None
    return int(datetime.strptime(a, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc).timestamp())


def cron_phase():
    ns = "cron"
    namespace(ns)
    N = E["CRONJOBS"]
    cm_now = lambda: time.time() + CM_OFFSET  # noqa: E731 - the controller manager's cronjob clock
    # create them all within one minute, well before its end
    while cm_now() % 60 > 45 - min(30, N / 50):
        time.sleep(0.5)
    jobs = {}            # name -> dict(scheduled, added, complete, deleted)
    lock = threading.Lock()
    w = h.Client(S["gw_url"], S["ca"], S["token"], 7200).watch(
        "/apis/batch/v1/namespaces/%s/jobs?watch=1&timeoutSeconds=7200" % ns, timeout=7200)
    if w.status != 200:
        raise h.HarnessError("watch jobs: %s" % w.status)

    def follow():
        while True:
            try:
                ev = w.next(3600)
            except EOFError:
                return
            if ev is None:
                continue
            now = cm_now()
            o = ev.get("object") or {}
            name = (o.get("metadata") or {}).get("name")
            with lock:
                j = jobs.setdefault(name, {"scheduled": scheduled_of(o), "added": None, "complete": None,
                                           "deleted": None})
                if ev.get("type") == "ADDED" and j["added"] is None:
                    j["added"] = now
                if ev.get("type") in ("ADDED", "MODIFIED") and complete(o) and j["complete"] is None:
                    j["complete"] = now
                if ev.get("type") == "DELETED":
                    j["deleted"] = now
    threading.Thread(target=follow, daemon=True).start()
    cj = [{"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "c%d" % i},
           "spec": {"schedule": "* * * * *",
                    "jobTemplate": {"spec": {"backoffLimit": 0, "template": {
                        "metadata": {"labels": {"bench": "cron"}},
                        "spec": pod_spec(["sleep", str(E["CRON_SLEEP"])])}}}}} for i in range(N)]
    t_create, errors = create_all("/apis/batch/v1/namespaces/%s/cronjobs" % ns, cj)
    first = int(cm_now() // 60 + 1) * 60
    note("%d CronJobs created in %.1f s (%d errors); first scheduled minute in %.0f s"
         % (N, t_create, errors, first - cm_now()))
    result("cron-create", cronjobs=N, create_s=round(t_create, 2), create_errors=errors)
    rows = []
    for k in range(E["CRON_MINUTES"]):
        m = first + 60 * k
        last = k == E["CRON_MINUTES"] - 1
        t_start_mono = time.monotonic() + (m - cm_now())
        while cm_now() < m + 60:
            alive()
            time.sleep(0.5)
            if last and cm_now() > m + 5:
                with lock:
                    mine = [j for j in jobs.values() if j["scheduled"] == m]
                    if len(mine) >= N and all(j["complete"] for j in mine):
                        break
        with lock:
            mine = [j for j in jobs.values() if j["scheduled"] == m]
            lags = [j["added"] - m for j in mine if j["added"] is not None]
            done = [j["complete"] - m for j in mine if j["complete"] is not None]
            on_time = sum(1 for d in done if d < 60)
            deleted = sum(1 for j in jobs.values() if j["deleted"] is not None and m <= j["deleted"] < m + 60)
            existing = sum(1 for j in jobs.values() if j["added"] is not None and j["deleted"] is None)
            per_cj = {}
            for name, j in jobs.items():
                if j["complete"] and j["deleted"] is None:
                    c = name.rsplit("-", 1)[0]
                    per_cj[c] = per_cj.get(c, 0) + 1
        cpu, rss_peak, rss_end = S["sampler"].window(t_start_mono, time.monotonic())
        row = dict(minute=k + 1, created=len(mine), lag_p50_s=round(pct(lags, 50), 2) if lags else None,
                   lag_p99_s=round(pct(lags, 99), 2) if lags else None,
                   lag_max_s=round(max(lags), 2) if lags else None, complete=len(done),
                   complete_within_minute=on_time, done_p50_s=round(pct(done, 50), 2) if done else None,
                   done_max_s=round(max(done), 2) if done else None, deleted=deleted, jobs_existing=existing,
                   max_finished_kept=max(per_cj.values()) if per_cj else 0, cm_cpu_s=round(cpu, 2),
                   cm_rss_peak_mib=round(rss_peak, 1), cm_rss_end_mib=round(rss_end, 1))
        result("cron-minute", **row)
        rows.append(row)
    w.close()
    clean(ns, ["/apis/batch/v1/namespaces/%s/cronjobs" % ns, "/apis/batch/v1/namespaces/%s/jobs" % ns])
    return rows


try:
    region()
    alive()
    if "cron" in PHASES:
        cron_phase()
    times = {"job": [], "deployment": []}
    if "bursts" in PHASES:
        for r in range(1, E["ROUNDS"] + 1):
            for kind in ("job", "deployment"):
                times[kind].append(burst(kind, r))
        ok = {k: [t for t in v if t is not None] for k, v in times.items()}
        mj = statistics.median(ok["job"]) if ok["job"] else None
        md = statistics.median(ok["deployment"]) if ok["deployment"] else None
        result("bursts-summary", job_median_s=mj, deployment_median_s=md,
               ratio_job_over_deployment=round(mj / md, 3) if mj and md else None,
               rounds=E["ROUNDS"], job_times=times["job"], deployment_times=times["deployment"])
    alive()
finally:
    h.cleanup()
PY
PY_PID=$!
rc=0
wait "$PY_PID" || rc=$?
PY_PID=""
echo "# took $(( $(date +%s) - T0 )) s; load average after $(uptime | sed 's/.*load average: //')"
[ "$rc" = 0 ] || { echo "run-workloads.sh: benchmark failed (exit $rc)" >&2; exit "$rc"; }
