#!/usr/bin/env bash
# Deployment roll-out time and pod startup latency, end to end on loopback:
#   region: one tenant partition (ursa-tp-apiserver + ursa-tp-controller-manager + ursa-scheduler)
#   and RMS resource managers (zones az-1, az-2, ...), each with its own etcd and a hollow kubelet
#   of NODES/RMS nodes (8 cpu, 64Gi, 110 pods; tainted ursa.io/hollow:NoSchedule, fake runtime).
#   1. roll-out: one Deployment of REPLICAS pods (10m cpu / 10Mi, tolerating the hollow taint);
#      time from the create to all pods Running (pods listed with fieldSelector
#      status.phase=Running every second) and to status.availableReplicas == REPLICAS.
#   2. startup latency: bench/ursa-startup creates pods at RATE/s for DURATION s (open loop) in
#      another tenant and records, per pod, the client-side send time to the first watch event
#      with status.phase Running; p50/p90/p99, waiting at most 60 s after the last create.
# Prints a markdown table for docs/benchmarks.md. Everything runs in one temporary directory
# (TMPDIR for the harness too), removed with every process on exit.
#
# usage: bench/run-deploy.sh [BUILD_DIR] [--quick]
#   BUILD_DIR  a built tree (default: build/ at the repository root)
#   --quick    100 nodes, 300 replicas, 20 pods/s for 10 s: a smoke test of the script
# Knobs (environment): NODES (1000), RMS (2), REPLICAS (3000), RATE (100), DURATION (30),
#   WAIT (60), ROLLOUT_TIMEOUT (600).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD="$ROOT/build"
QUICK=0
for arg in "$@"; do
	case "$arg" in
	--quick) QUICK=1 ;;
	-h|--help) sed -n '2,20p' "$0"; exit 0 ;;
	-*) echo "run-deploy.sh: unknown option $arg" >&2; exit 2 ;;
	*) BUILD=$(cd "$arg" && pwd) || { echo "run-deploy.sh: build dir $arg not found" >&2; exit 1; } ;;
	esac
done
if [ "$QUICK" = 1 ]; then
	: "${NODES:=100}" "${REPLICAS:=300}" "${RATE:=20}" "${DURATION:=10}"
fi
export URSA_BUILD_DIR="$BUILD" NODES="${NODES:-1000}" RMS="${RMS:-2}" REPLICAS="${REPLICAS:-3000}" \
	RATE="${RATE:-100}" DURATION="${DURATION:-30}" WAIT="${WAIT:-60}" ROLLOUT_TIMEOUT="${ROLLOUT_TIMEOUT:-600}"

for b in src/tenant-partition/ursa-tp-apiserver src/tenant-partition/controllers/ursa-tp-controller-manager \
	src/resource-manager/ursa-rm-apiserver src/scheduler/ursa-scheduler src/kubelet/ursa-kubelet \
	src/ursactl/ursactl bench/ursa-startup; do
	[ -x "$BUILD/$b" ] || { echo "run-deploy.sh: missing $BUILD/$b (build it: cmake --build $BUILD --target $(basename "$b"))" >&2; exit 1; }
done
command -v etcd >/dev/null || { echo "run-deploy.sh: etcd not found (apt-get install etcd-server)" >&2; exit 1; }

TMP=$(mktemp -d /tmp/ursa-deploy.XXXXXX)
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

LOAD_BEFORE=$(uptime | sed 's/.*load average: //')
START_DATE=$(date -u +%Y-%m-%dT%H:%M:%SZ)
T0=$(date +%s)
python3 - "$ROOT" >"$TMP/result.md" <<'PY' &
import json, os, subprocess, sys, time
sys.path.insert(0, os.path.join(sys.argv[1], "tests", "lib"))
import ursa_harness as h

B = os.environ["URSA_BUILD_DIR"]
RM_BIN = os.path.join(B, "src", "resource-manager", "ursa-rm-apiserver")
KL_BIN = os.path.join(B, "src", "kubelet", "ursa-kubelet")
SCHED_BIN = os.path.join(B, "src", "scheduler", "ursa-scheduler")
TPCM_BIN = os.path.join(B, "src", "tenant-partition", "controllers", "ursa-tp-controller-manager")
STARTUP_BIN = os.path.join(B, "bench", "ursa-startup")
NODES, RMS, REPLICAS, RATE, DURATION, WAIT, ROLLOUT_TIMEOUT = (int(os.environ[k]) for k in (
    "NODES", "RMS", "REPLICAS", "RATE", "DURATION", "WAIT", "ROLLOUT_TIMEOUT"))
TOL = [{"key": "ursa.io/hollow", "operator": "Exists", "effect": "NoSchedule"}]


def note(msg):
    print("# " + msg, file=sys.stderr, flush=True)


class Rm(h.ApiServer):
    def args(self):
        a = super().args()
        a[0] = RM_BIN
        a[a.index("--log-level") + 1] = "warn"
        return a


class Tp(h.ApiServer):
    def args(self):
        a = super().args()
        a[a.index("--log-level") + 1] = "warn"
        return a


def share(dst, src):
    for a in ("ca_file", "cert_file", "key_file", "signing_key", "signing_pub", "admin_token", "token_file"):
        setattr(dst, a, getattr(src, a))


def proc(name, args):
    d = h.make_tmpdir(name)
    log = os.path.join(d, name + ".log")
    h._logs.append((name, log))
    return h.spawn(args, log), log


def region():
    rms = []
    for i in range(1, RMS + 1):
        e = h.Etcd(name="etcd-rm%d" % i); e.start()
        rm = Rm(e, partition_id="rm-%d" % i)
        if rms:
            share(rm, rms[0])
        rm.start(); rm.zone = "az-%d" % i; rms.append(rm)
    e = h.Etcd(name="etcd-tp1"); e.start()
    tp = Tp(e, partition_id="tp-1"); share(tp, rms[0]); tp.start()
    for rm in rms:
        tp.admin().post("/apis/ursa.io/v1/resourcemanagers", {"apiVersion": "ursa.io/v1", "kind": "ResourceManager",
                        "metadata": {"name": rm.partition_id}, "spec": {"endpoints": [rm.url], "zone": rm.zone}})
        rm.admin().post("/apis/ursa.io/v1/tenantpartitions", {"apiVersion": "ursa.io/v1", "kind": "TenantPartition",
                        "metadata": {"name": tp.partition_id}, "spec": {"endpoints": [tp.url]}})
    per_rm = NODES // RMS
    for rm in rms:
        proc("kubelet-" + rm.partition_id, [KL_BIN, "--kubeconfig", rm.admin_kubeconfig(), "--port", "0",
             "--root-dir", h.make_tmpdir("klroot"), "--hollow-nodes", str(per_rm), "--hollow-prefix",
             rm.partition_id + "-n", "--zone", rm.zone, "--cpu", "8", "--memory", "64Gi", "--max-pods", "110",
             "--log-level", "warn"])
    want = per_rm * RMS
    t = time.monotonic()
    h.wait_until(lambda: sum(len(rm.admin().get("/api/v1/nodes").json.get("items", [])) for rm in rms) >= want,
                 600, "%d nodes registered" % want, interval=2)
    note("%d hollow nodes registered in %.1f s" % (want, time.monotonic() - t))
    kc = tp.admin_kubeconfig()
    cm, cm_log = proc("tp-controller-manager", [TPCM_BIN, "--kubeconfig", kc, "--log-level", "warn"])
    sc, sc_log = proc("scheduler", [SCHED_BIN, "--kubeconfig", kc, "--partition-id", tp.partition_id,
                                    "--identity", "bench", "--log-level", "info"])
    h.wait_until(lambda: "msg=\"scheduling\"" in open(sc_log).read(), 120, "scheduler leading")
    return rms, tp, (cm, sc)


def alive(procs):
    for p in procs:
        if p.poll() is not None:
            raise h.HarnessError("%s exited with %s" % (p.args[0], p.returncode))


def rollout(tp, procs):
    c = tp.admin(timeout=60)
    h.create_tenant(c, "deploy")
    d = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
         "spec": {"replicas": REPLICAS, "selector": {"matchLabels": {"app": "web"}},
                  "template": {"metadata": {"labels": {"app": "web"}},
                               "spec": {"tolerations": TOL, "containers": [{"name": "c", "image": "pause",
                                        "resources": {"requests": {"cpu": "10m", "memory": "10Mi"}}}]}}}}
    running_q = h.q(labelSelector="app=web", fieldSelector="status.phase=Running")
    t0 = time.monotonic()
    h.expect_status(c.post(h.deployments_path("deploy"), d), 201, "create deployment")
    t_running = t_avail = None
    running = avail = 0
    while time.monotonic() - t0 < ROLLOUT_TIMEOUT and (t_running is None or t_avail is None):
        alive(procs)
        time.sleep(1)
        if t_running is None:
            r = c.get(h.pods_path("deploy") + running_q)
            if r.status == 200:
                running = sum(1 for i in r.json.get("items", []) if (i.get("status") or {}).get("phase") == "Running")
                if running >= REPLICAS:
                    t_running = time.monotonic() - t0
        if t_avail is None:
            r = c.get(h.deployments_path("deploy", name="web"))
            if r.status == 200:
                avail = (r.json.get("status") or {}).get("availableReplicas") or 0
                if avail >= REPLICAS:
                    t_avail = time.monotonic() - t0
        note("roll-out %.0f s: %d Running, availableReplicas %d" % (time.monotonic() - t0, running, avail))
    return t_running, t_avail, running, avail


def startup(tp):
    c = tp.admin(timeout=60)
    h.create_tenant(c, "startup")
    out = subprocess.run([STARTUP_BIN, "--kubeconfig", tp.admin_kubeconfig(), "--tenant", "startup",
                          "--rate", str(RATE), "--duration", str(DURATION), "--wait", str(WAIT)],
                         stdout=subprocess.PIPE, timeout=DURATION + WAIT + 120, check=True).stdout.decode()
    sys.stderr.write(out)
    line = [ln for ln in out.splitlines() if ln.startswith("RESULT ")][-1]
    return json.loads(line[len("RESULT "):])


def fmt(t):
    return "%.1f s" % t if t is not None else "not reached"


try:
    rms, tp, procs = region()
    t_running, t_avail, running, avail = rollout(tp, procs)
    note("roll-out: all Running after %s, availableReplicas after %s" % (fmt(t_running), fmt(t_avail)))
    s = startup(tp)
    alive(procs)
    print("| Deployment of %d replicas (10m cpu / 10Mi) on %d hollow nodes (%d RM x %d), TP controller manager + "
          "scheduler | create to all pods Running: **%s** (%d/%d Running at the end); to availableReplicas = %d: %s |"
          % (REPLICAS, NODES // RMS * RMS, RMS, NODES // RMS, fmt(t_running), running, REPLICAS, REPLICAS,
             fmt(t_avail)))
    print("| Pod startup latency, %d pods/s open loop for %d s (achieved %.1f pods/s), same region with the "
          "deployment in place | p50 **%.0f ms**, p90 **%.0f ms**, p99 **%.0f ms** (max %.0f ms); %d of %d created "
          "reached Running, %d create errors |"
          % (RATE, DURATION, s["create_rate"], s["p50_ms"], s["p90_ms"], s["p99_ms"], s["max_ms"], s["running"],
             s["created"], s["create_errors"]), flush=True)
finally:
    h.cleanup()
PY
PY_PID=$!
rc=0
wait "$PY_PID" || rc=$?
PY_PID=""
[ "$rc" = 0 ] || { echo "run-deploy.sh: benchmark failed (exit $rc)" >&2; exit "$rc"; }
ELAPSED=$(( $(date +%s) - T0 ))
LOAD_AFTER=$(uptime | sed 's/.*load average: //')
MODEL=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)
cat <<EOF

### Deployment roll-out and pod startup latency ($START_DATE)

Command: \`bench/run-deploy.sh $*\` (NODES=$NODES RMS=$RMS REPLICAS=$REPLICAS RATE=$RATE DURATION=$DURATION WAIT=$WAIT); the whole script took ${ELAPSED} s.
Machine: $(nproc) CPUs, ${MODEL:-unknown CPU}, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo) RAM, Linux $(uname -r); etcd $(etcd --version | sed -n 's/^etcd Version: //p'), one member per partition; every process on this machine, HTTPS on loopback.
Load average before: $LOAD_BEFORE; after: $LOAD_AFTER.

| Benchmark | Result |
| --- | --- |
EOF
cat "$TMP/result.md"
