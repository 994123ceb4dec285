#!/usr/bin/env bash
# Pod startup on one real node, CRI runtime (containerd) beside the process runtime, in one run
# (issue 18's figures):
#   region: etcd x2, a resource manager and a tenant partition (tests/lib/ursa_region.py), tenant
#   "bench"; node cri-1: ursa-kubelet --runtime cri on its own containerd (tests/lib/ursa_cri.py:
#   images from the local registry, ursa-cni networks, a cgroup parent with the pids limit);
#   node proc-1: ursa-kubelet --runtime process. Both kubelets --cpu 64 --memory 256Gi --max-pods 250.
#   The image (busybox:1.36) is pulled on cri-1 once before the rounds (a cached image, as the
#   issue asks).
#   ROUNDS rounds; each runs both nodes in turn (the order alternates between rounds):
#     1. bench/ursa-startup creates PODS pods (busybox:1.36, `sleep 3600`, spec.nodeName = the
#        node, so no scheduler is involved) at RATE pods/s, open loop, and times each from the
#        client's create to the watch event showing it Running: p50/p90/p99/max.
#     2. With every pod Running, the kubelet's CPU (utime+stime from /proc/<pid>/stat over
#        SAMPLE_S seconds, in % of one core) and RSS (VmRSS); for cri-1 also containerd's and the
#        shims' (containerd-shim-runc-v2 of the node) CPU and summed RSS.
#     3. The pods are deleted (grace 1 s) and the next step waits until the node runs none.
# Prints "RESULT <json>" per round and node, then medians per node and the ratio cri/process of
# the medians. Runs alone (nothing else of Ursa's); everything under one temporary directory,
# removed on exit with every process, container, network and cgroup it made. Needs root.
#
# usage: bench/run-pod-startup.sh [BUILD_DIR]
# Knobs (environment): PODS (100), RATE (10), ROUNDS (3), SAMPLE_S (20), WAIT (120).
#   SMOKE=1: 10 pods at 10/s, 1 round, 3 s samples (a test of the script, about a minute).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD="$ROOT/build"
for arg in "$@"; do
	case "$arg" in
	-h|--help) sed -n '/^set -euo/q;2,$p' "$0"; exit 0 ;;
	-*) echo "run-pod-startup.sh: unknown option $arg" >&2; exit 2 ;;
	*) BUILD=$(cd "$arg" && pwd) || { echo "run-pod-startup.sh: build dir $arg not found" >&2; exit 1; } ;;
	esac
done
if [ "${SMOKE:-0}" = 1 ]; then
	: "${PODS:=10}" "${ROUNDS:=1}" "${SAMPLE_S:=3}"
fi
export URSA_BUILD_DIR="$BUILD" URSA_SOURCE_DIR="$ROOT" SMOKE="${SMOKE:-0}" PODS="${PODS:-100}" RATE="${RATE:-10}" \
	ROUNDS="${ROUNDS:-3}" SAMPLE_S="${SAMPLE_S:-20}" WAIT="${WAIT:-120}"
[ "$(id -u)" -eq 0 ] || { echo "run-pod-startup.sh: needs root (containerd, runc, mounts, bridges)" >&2; exit 1; }
for b in src/tenant-partition/ursa-tp-apiserver src/resource-manager/ursa-rm-apiserver src/kubelet/ursa-kubelet \
	src/cni/ursa-cni bench/ursa-startup tests/cri_probe; do
	[ -x "$BUILD/$b" ] || { echo "run-pod-startup.sh: missing $BUILD/$b (cmake --build $BUILD)" >&2; exit 1; }
done

echo "# $(date -u +%Y-%m-%dT%H:%M:%SZ) $(nproc) CPUs, load average $(uptime | sed 's/.*load average: //')"
echo "# PODS=$PODS RATE=$RATE ROUNDS=$ROUNDS SAMPLE_S=$SAMPLE_S SMOKE=$SMOKE"
exec /usr/bin/python3 - "$ROOT" <<'PY'
import json, os, statistics, subprocess, sys, time
sys.path.insert(0, os.path.join(sys.argv[1], "tests", "lib"))
import ursa_harness as h
import ursa_cri as cri
import ursa_region as region

B = os.environ["URSA_BUILD_DIR"]
STARTUP = os.path.join(B, "bench", "ursa-startup")
E = {k: int(os.environ[k]) for k in ("PODS", "RATE", "ROUNDS", "SAMPLE_S", "WAIT", "SMOKE")}
TENANT, IMAGE = "bench", "busybox:1.36"
HZ = os.sysconf("SC_CLK_TCK")


def note(msg):
    print("# " + msg, file=sys.stderr, flush=True)


def cpu_ticks(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


def rss_kb(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def shim_pids(node_dir):
    """containerd-shim-runc-v2 processes of the node (their -address names its socket)."""
    sock = os.path.join(node_dir, "containerd.sock")
    pids = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open("/proc/%s/cmdline" % d, "rb") as f:
                argv = f.read().split(b"\0")
        except OSError:
            continue
        if argv and argv[0].endswith(b"containerd-shim-runc-v2") and sock.encode() in argv:
            pids.append(int(d))
    return pids


def sample(groups, seconds):
    """{name: (cpu % of one core over `seconds`, RSS MiB)} for groups {name: [pid, ...]}."""
    t0 = {n: sum(cpu_ticks(p) for p in ps) for n, ps in groups.items()}
    time.sleep(seconds)
    out = {}
    for n, ps in groups.items():
        ticks = sum(cpu_ticks(p) for p in ps) - t0[n]
        out[n] = (100.0 * ticks / HZ / seconds, sum(rss_kb(p) for p in ps) / 1024.0)
    return out


def pods_on(c, node):
    r = c.get(h.pods_path(TENANT) + h.q(fieldSelector="spec.nodeName=" + node))
    h.expect_status(r, 200, "list pods of " + node)
    return r.json["items"]


def clean(c, node, node_obj):
    for p in pods_on(c, node):
        c.delete(h.pods_path(TENANT, name=p["metadata"]["name"]) + h.q(gracePeriodSeconds="1"))
    h.wait_until(lambda: not pods_on(c, node), 300, "pods of %s gone" % node)
    if node_obj is not None:   # and their sandboxes
        h.wait_until(lambda: not node_obj.sandboxes(), 120, "sandboxes of %s gone" % node)


def one(tag, node, kubelet, node_obj, kc):
    c = S["tpadmin"]
    out = subprocess.run([STARTUP, "--kubeconfig", kc, "--tenant", TENANT, "--prefix", tag, "--node", node,
                          "--image", IMAGE, "--command", "sleep 3600", "--cpu", "1m", "--memory", "1Mi",
                          "--rate", str(E["RATE"]), "--duration", str(max(1, E["PODS"] // E["RATE"])),
                          "--wait", str(E["WAIT"]), "--senders", "4"],
                         stdout=subprocess.PIPE, timeout=E["PODS"] // E["RATE"] + E["WAIT"] + 120,
                         check=True).stdout.decode()
    res = json.loads([ln for ln in out.splitlines() if ln.startswith("RESULT ")][-1][len("RESULT "):])
    groups = {"kubelet": [kubelet.proc.pid]}
    if node_obj is not None:
        with open(os.path.join(node_obj.dir, "containerd.pid")) as f:
            groups["containerd"] = [int(f.read().strip())]
        groups["shims"] = shim_pids(node_obj.dir)
    running = sum(1 for p in pods_on(c, node) if (p.get("status") or {}).get("phase") == "Running")
    use = sample(groups, E["SAMPLE_S"])
    res.update(node=node, running_at_sample=running, sample_s=E["SAMPLE_S"],
               **{"%s_cpu_pct" % n: round(v[0], 2) for n, v in use.items()},
               **{"%s_rss_mib" % n: round(v[1], 1) for n, v in use.items()})
    if node_obj is not None:
        res["shims"] = len(groups["shims"])
    print("RESULT " + json.dumps(res, sort_keys=True), flush=True)
    clean(c, node, node_obj)
    return res


def main():
    cri.require()
    node = cri.CriNode("cri-1", cgroup_prefix="ursa-bench").start()
    r = region.start(tenants=(TENANT,))
    S.update(r)
    rm, tp = r["rm"], r["tp"]
    kls = {}
    for name, extra in (("cri-1", node.kubelet_args()), ("proc-1", ["--runtime", "process"])):
        kc = rm.kubeconfig("system", "system:node:" + name, ("system:nodes",))
        kls[name] = region.Kubelet(kc, ["--node-name", name, "--cpu", "64", "--memory", "256Gi", "--max-pods", "250",
                                        "--log-level", "warn"] + extra, label="kubelet-" + name).start()
    for name in kls:
        h.wait_until(lambda: region.node_ready(r["admin"], name), 60, "node %s Ready" % name)
    kc = tp.kubeconfig(TENANT, "bench")
    # the image, once (the figures are for a cached image)
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "warm"},
           "spec": {"nodeName": "cri-1", "terminationGracePeriodSeconds": 1,
                    "containers": [{"name": "c", "image": IMAGE, "command": ["sleep", "3600"]}]}}
    h.expect_status(S["tpadmin"].post(h.pods_path(TENANT), pod), 201, "create warm-up pod")
    h.wait_until(lambda: (S["tpadmin"].get(h.pods_path(TENANT, name="warm")).json.get("status") or {})
                 .get("phase") == "Running", 120, "warm-up pod Running")
    clean(S["tpadmin"], "cri-1", node)
    note("region up, image cached; %d rounds of %d pods at %d/s per node" % (E["ROUNDS"], E["PODS"], E["RATE"]))
    results = {"cri-1": [], "proc-1": []}
    for k in range(E["ROUNDS"]):
        order = ["cri-1", "proc-1"] if k % 2 == 0 else ["proc-1", "cri-1"]
        for name in order:
            res = one("r%d-%s" % (k, name), name, kls[name], node if name == "cri-1" else None, kc)
            note("round %d %s: %d/%d Running, p50 %s ms, p99 %s ms, kubelet %.1f%% CPU, %.0f MiB" % (
                k + 1, name, res["running"], res["created"], res["p50_ms"], res["p99_ms"],
                res["kubelet_cpu_pct"], res["kubelet_rss_mib"]))
            results[name].append(res)
    med = {}
    for name, rs in results.items():
        keys = sorted(k for k in rs[0] if isinstance(rs[0][k], (int, float)))
        med[name] = {k: statistics.median(r[k] for r in rs) for k in keys}
        note("median %s: %s" % (name, json.dumps(med[name], sort_keys=True)))
    for k in ("p50_ms", "p99_ms", "kubelet_cpu_pct", "kubelet_rss_mib"):
        a, b = med["cri-1"].get(k), med["proc-1"].get(k)
        if a is not None and b:
            note("cri/process %s: %.2f" % (k, a / b))
    print("SUMMARY " + json.dumps(med, sort_keys=True), flush=True)
    ok = all(r["running"] == r["created"] == E["PODS"] for rs in results.values() for r in rs)
    return 0 if ok else 1


S = {}
try:
    rc = main()
except Exception as e:  # noqa: BLE001 - report and clean up
    note("failed: %s" % e)
    for name, log in h._logs:
        note("--- %s: %s" % (name, log))
        sys.stderr.write(h.log_tail(log, 15))
    rc = 1
finally:
    h.cleanup()
sys.exit(rc)
PY
