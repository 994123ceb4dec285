#!/usr/bin/env bash
# End-to-end scheduler benchmarks on loopback (fresh etcds, free ports, temporary directories):
#   1. throughput: one ursa-scheduler, NODES hollow nodes split over two resource managers
#      (zones az-1, az-2), PODS pending pods created beforehand (across 3 tenants); times the
#      scheduler from leadership to the last binding (pods/s), with its counters.
#   2. contention: two tenant partitions, each with its scheduler, fill the same FILL_NODES
#      nodes to 95 % cpu at once; reports overcommitted nodes (from the pods actually bound),
#      pods the kubelets rejected (status.reason OutOf*), and how often the schedulers collided
#      (reservation conflicts and re-decisions).
# usage: bench/run-scheduler.sh [BUILD_DIR] [--quick]
# Knobs (environment): NODES (5000), PODS (5000), FILL_NODES (200), WORKERS (16).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD="$ROOT/build"
QUICK=0
for arg in "$@"; do
	case "$arg" in
	--quick) QUICK=1 ;;
	-h|--help) sed -n '2,12p' "$0"; exit 0 ;;
	-*) echo "run-scheduler.sh: unknown option $arg" >&2; exit 2 ;;
	*) BUILD=$(cd "$arg" && pwd) ;;
	esac
done
if [ "$QUICK" = 1 ]; then
	: "${NODES:=200}" "${PODS:=400}" "${FILL_NODES:=20}"
fi
export URSA_BUILD_DIR="$BUILD" NODES="${NODES:-5000}" PODS="${PODS:-5000}" FILL_NODES="${FILL_NODES:-200}" \
	WORKERS="${WORKERS:-16}"
exec python3 - "$ROOT" <<'PY'
import json, os, re, sys, threading, time
sys.path.insert(0, os.path.join(sys.argv[1], "tests", "lib"))
import ursa_harness as h

B = os.environ["URSA_BUILD_DIR"]
RM_BIN = os.path.join(B, "src", "resource-manager", "ursa-rm-apiserver")
KL_BIN = os.path.join(B, "src", "kubelet", "ursa-kubelet")
SCHED_BIN = os.path.join(B, "src", "scheduler", "ursa-scheduler")
NODES, PODS, FILL, WORKERS = (int(os.environ[k]) for k in ("NODES", "PODS", "FILL_NODES", "WORKERS"))
TOL = [{"key": "ursa.io/hollow", "operator": "Exists", "effect": "NoSchedule"}]


class Rm(h.ApiServer):
    def args(self):
        a = super().args()
        a[0] = RM_BIN
        return a


def share(dst, src):
    for a in ("ca_file", "cert_file", "key_file", "signing_key", "signing_pub", "admin_token", "token_file"):
        setattr(dst, a, getattr(src, a))


def proc(name, args):
    d = h.make_tmpdir(name)
    log = os.path.join(d, name + ".log")
    h._logs.append((name, log))
    return h.spawn(args, log), log, d


def region(ntp, per_rm, cpu, pods_per_node):
    rms, tps, first = [], [], None
    for i, zone in ((1, "az-1"), (2, "az-2")):
        e = h.Etcd(name="etcd-rm%d" % i); e.start()
        rm = Rm(e, partition_id="rm-%d" % i)
        if first: share(rm, first)
        first = first or rm
        rm.start(); rm.zone = zone; rms.append(rm)
    for i in range(1, ntp + 1):
        e = h.Etcd(name="etcd-tp%d" % i); e.start()
        tp = h.ApiServer(e, partition_id="tp-%d" % i); share(tp, first); tp.start(); tps.append(tp)
    for tp in tps:
        for rm in rms:
            tp.admin().post("/apis/ursa.io/v1/resourcemanagers", {"apiVersion": "ursa.io/v1", "kind": "ResourceManager",
                            "metadata": {"name": rm.partition_id}, "spec": {"endpoints": [rm.url], "zone": rm.zone}})
            rm.admin().post("/apis/ursa.io/v1/tenantpartitions", {"apiVersion": "ursa.io/v1", "kind": "TenantPartition",
                            "metadata": {"name": tp.partition_id}, "spec": {"endpoints": [tp.url]}})
    for rm in rms:
        proc("kubelet-" + rm.partition_id, [KL_BIN, "--kubeconfig", rm.admin_kubeconfig(), "--port", "0",
             "--root-dir", h.make_tmpdir("klroot"), "--hollow-nodes", str(per_rm), "--hollow-prefix",
             rm.partition_id + "-n", "--zone", rm.zone, "--cpu", str(cpu), "--memory", "64Gi",
             "--max-pods", str(pods_per_node)])
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


def all_pods(tp):
    return tp.admin().get("/api/v1/tenants/all/pods").json.get("items", [])


def sched(tp, ident, extra=()):
    return proc("sched-" + ident, [SCHED_BIN, "--kubeconfig", tp.admin_kubeconfig(), "--partition-id",
                tp.partition_id, "--identity", ident, "--workers", str(WORKERS), "--scheduled-events=false",
                "--stats-seconds", "5"] + list(extra))


def last_stats(log):
    line = [l for l in open(log) if "msg=\"stats\"" in l or "msg=\"stopped\"" in l]
    return dict(re.findall(r"(\w+)=(\d+)", line[-1])) if line else {}


def throughput():
    rms, tps = region(1, NODES // 2, 8, 110)
    tp = tps[0]
    tenants = ["t%d" % i for i in range(3)]
    for t in tenants:
        h.create_tenant(tp.admin(), t)
    t0 = time.monotonic()
    create_pods(tp, tenants, PODS, "100m", "p")
    print("created %d pods in %.1fs" % (PODS, time.monotonic() - t0), flush=True)
    p, log, _ = sched(tp, "bench")
    h.wait_until(lambda: "msg=\"scheduling\"" in open(log).read(), 120, "scheduler leading")
    start = time.monotonic()
    def bound():
        s = last_stats(log)
        return int(s.get("scheduled", 0)) >= PODS
    # the counters are logged every 5 s; poll the log more finely through the API instead
    while time.monotonic() - start < 600:
        items = all_pods(tp)
        n = sum(1 for i in items if i["spec"].get("nodeName"))
        if n >= PODS:
            break
        time.sleep(0.5)
    el = time.monotonic() - start
    h.terminate(p)
    s = last_stats(log)
    print("| one scheduler, %d hollow nodes over 2 RMs, %d pods, %d workers | %.1f s | **%.0f pods/s** | "
          "decision avg %s us, reserve writes %s, reservation conflicts %s, bind errors %s |"
          % (NODES, PODS, WORKERS, el, PODS / el, s.get("decision_avg_us"), s.get("reserve_writes"),
             s.get("reserve_conflicts"), s.get("bind_errors")), flush=True)


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
    which = os.environ.get("WHICH", "throughput,contention").split(",")
    if "throughput" in which:
        throughput()
        h.cleanup()
    if "contention" in which:
        contention()
finally:
    h.cleanup()
PY
