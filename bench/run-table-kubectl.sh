#!/usr/bin/env bash
# `kubectl get pods -A` through the gateway for a tenant of PODS pods (issue 22), with the
# tenant partition's binary taken from each build in turn (A, B, A, B, ...), and what kubectl
# itself spends: its wall time, its own CPU (user+sys), the partition's and the gateway's CPU.
#
# usage: bench/run-table-kubectl.sh BUILD_DIR [BUILD_DIR...]
# A small region (tests/lib/ursa_region.py: etcd, resource manager, one partition, a gateway) from
# the LAST build; pods made with that build's bench/ursa-load straight at the partition, then
# given a running status. Each round restarts the partition with the next build's
# ursa-tp-apiserver, runs `kubectl get pods -A` once to warm up and then KUBECTL_RUNS times timed.
# Knobs (environment): ROUNDS (3), PODS (20000), POD_BYTES (1500), NAMESPACES (20), KUBECTL_RUNS (1),
# KUBECTL_ARGS (more arguments for the timed runs, say "-v=6" or "--chunk-size=0"; kubectl's
# standard error of the last timed run of each build is kept as kubectl-<n>.log in KUBECTL_LOGS,
# default the current directory, when KUBECTL_ARGS is set), KUBECTL (the kubectl to run: default
# the one on PATH; say kubectl.1.32 for a bundled version without the dispatcher).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
[ $# -ge 1 ] || { sed -n '2,12p' "$0"; exit 2; }
export ROUNDS="${ROUNDS:-3}" PODS="${PODS:-20000}" POD_BYTES="${POD_BYTES:-1500}" NAMESPACES="${NAMESPACES:-20}"
export KUBECTL="${KUBECTL:-kubectl}" KUBECTL_RUNS="${KUBECTL_RUNS:-1}" KUBECTL_ARGS="${KUBECTL_ARGS:-}" KUBECTL_LOGS="${KUBECTL_LOGS:-$PWD}"
builds=()
for b in "$@"; do builds+=("$(cd "$b" && pwd)"); done
export URSA_BUILD_DIR="${builds[-1]}" URSA_SOURCE_DIR="$ROOT"
exec /usr/bin/python3 - "$ROOT" "${builds[@]}" <<'PY'
import os, resource, statistics, subprocess, sys, threading, time
root, builds = sys.argv[1], sys.argv[2:]
sys.path.insert(0, os.path.join(root, "tests", "lib"))
import ursa_harness as h
import ursa_region as region

pods, nns = int(os.environ["PODS"]), int(os.environ["NAMESPACES"])
TICK = os.sysconf("SC_CLK_TCK")
print("# %s, %d cores, load average %s; %d pods of %d bytes in %d namespaces; kubectl %s" % (
    time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()), os.cpu_count(), open("/proc/loadavg").read().split()[0],
    pods, int(os.environ["POD_BYTES"]), nns,
    subprocess.run([os.environ["KUBECTL"], "version", "--client"], capture_output=True, text=True).stdout.split("\n")[0]), flush=True)


def cpu_s(pid):
    f = open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / TICK


def child_cpu():
    u = resource.getrusage(resource.RUSAGE_CHILDREN)
    return u.ru_utime + u.ru_stime


r = region.start(tenants=("bench",))
tp, rm = r["tp"], r["rm"]
gw_proc, gw_url, gw = region.start_gateway(rm, tp)
adm = tp.admin()
nsn = ["default"] + ["ns-%02d" % i for i in range(1, nns)]
for n in nsn[1:]:
    h.expect_status(adm.post("/api/v1/tenants/bench/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                                                  "metadata": {"name": n}}), 201, "namespace")
t0 = time.monotonic()
for i, n in enumerate(nsn):
    cnt = pods // nns + (1 if i < pods % nns else 0)
    out = subprocess.run([os.path.join(builds[-1], "bench", "ursa-load"), "create-pods", "--server", tp.url,
                          "--token", tp.admin_token, "--tenant", "bench", "--namespace", n, "--clients", "8",
                          "--count", str(cnt), "--duration", "600", "--pod-bytes", os.environ["POD_BYTES"],
                          "--cacert", tp.ca_file], capture_output=True, text=True, timeout=900)
    if out.returncode != 0:
        raise RuntimeError("create-pods: %s %s" % (out.stdout[-500:], out.stderr[-500:]))
items = adm.get("/api/v1/tenants/bench/pods").json["items"]
h.check(len(items) == pods, "listed %d pods, want %d" % (len(items), pods))
print("# created %d pods in %.1f s" % (pods, time.monotonic() - t0), flush=True)
ts = "2026-11-26T10:00:00Z"


def patch_some(part):
    cl = tp.admin()
    for k, (ns, name) in part:
        ip = "10.1.%d.%d" % (k // 250, k % 250 + 1)
        st = {"status": {"phase": "Running", "hostIP": "10.0.0.1", "podIP": ip, "podIPs": [{"ip": ip}],
                         "startTime": ts, "qosClass": "Burstable",
                         "conditions": [{"type": t, "status": "True", "lastTransitionTime": ts}
                                        for t in ("PodReadyToStartContainers", "Initialized", "Ready",
                                                  "ContainersReady", "PodScheduled")],
                         "containerStatuses": [{"name": "app", "ready": True, "started": True, "restartCount": 0,
                                                "image": "registry.k8s.io/pause:3.9",
                                                "imageID": "registry.k8s.io/pause@sha256:7031c1b283388d2c",
                                                "containerID": "containerd://%032x" % k,
                                                "state": {"running": {"startedAt": ts}}}]}}
        h.expect_status(cl.patch("/api/v1/tenants/bench/namespaces/%s/pods/%s/status" % (ns, name), st), 200, "status")
names = list(enumerate((p["metadata"]["namespace"], p["metadata"]["name"]) for p in items))
th = [threading.Thread(target=patch_some, args=(names[i::4],)) for i in range(4)]
for t in th:
    t.start()
for t in th:
    t.join()
print("# gave them a running status", flush=True)
kc = os.path.join(h.make_tmpdir("kc"), "bench.kubeconfig")
with open(kc, "w") as f:
    f.write(h.must_run([h.URSACTL_BIN, "kubeconfig", "--tenant", "bench", "--user", "alice", "--ttl", "0", "--server", gw_url, "--signing-key", rm.signing_key,
                        "--certificate-authority", rm.ca_file]))
env = dict(os.environ, KUBECONFIG=kc, HOME=h.make_tmpdir("kchome"))
got = {}
print("| round | build | lines | kubectl wall s | kubectl CPU s | partition CPU s | gateway CPU s |")
print("| --- | --- | ---: | ---: | ---: | ---: | ---: |", flush=True)
try:
    for rnd in range(int(os.environ["ROUNDS"])):
        for b in builds:
            h.APISERVER_BIN = os.path.join(b, "src", "tenant-partition", "ursa-tp-apiserver")
            tp.restart()
            w = subprocess.run([os.environ["KUBECTL"], "get", "pods", "-A"], env=env, capture_output=True, text=True, timeout=600)
            if w.returncode != 0:
                raise RuntimeError("kubectl get pods -A (warm-up): %s" % w.stderr[-600:])
            for _ in range(int(os.environ["KUBECTL_RUNS"])):
                c0, tpc, gwc, t0 = child_cpu(), cpu_s(tp.proc.pid), cpu_s(gw_proc.pid), time.monotonic()
                out = subprocess.run([os.environ["KUBECTL"], "get", "pods", "-A"] + os.environ["KUBECTL_ARGS"].split(), env=env,
                                     capture_output=True, text=True, timeout=600)
                wall = time.monotonic() - t0
                kcpu, tpc, gwc = child_cpu() - c0, cpu_s(tp.proc.pid) - tpc, cpu_s(gw_proc.pid) - gwc
                lines = out.stdout.count("\n")
                if out.returncode != 0 or lines != pods + 1:
                    raise RuntimeError("kubectl get pods -A: rc %d, %d lines: %s" % (out.returncode, lines,
                                                                                      out.stderr[-400:]))
                got.setdefault(b, []).append((wall, kcpu, tpc, gwc))
                if os.environ["KUBECTL_ARGS"]:
                    with open(os.path.join(os.environ["KUBECTL_LOGS"], "kubectl-%d.log" % builds.index(b)), "w") as f:
                        f.write(out.stderr)
                print("| %d | %s | %d | %.2f | %.2f | %.2f | %.2f |" % (rnd + 1, b, lines, wall, kcpu, tpc, gwc),
                      flush=True)
finally:
    h.terminate(gw_proc)
print()
print("| build | median kubectl wall s | median kubectl CPU s | median partition CPU s | median gateway CPU s |")
print("| --- | ---: | ---: | ---: | ---: |")
for b, v in got.items():
    print("| %s | %.2f | %.2f | %.2f | %.2f |" % (b, *(statistics.median(x[k] for x in v) for k in range(4))))
PY
