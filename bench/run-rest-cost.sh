#!/usr/bin/env bash
# CPU the shared REST client spends per request, for one or more builds side by side.
#
# usage: bench/run-rest-cost.sh BUILD_DIR [BUILD_DIR...]
# One etcd and one ursa-tp-apiserver (TLS, from the first build) serve every round; in each
# round every build's ursa-restcost sends REQUESTS sequential GETs of /healthz (the client's
# own cost dominates) and of a namespace (a read the server answers from etcd), interleaved
# (A, B, A, B, ...) so that a noisy machine hits the builds alike. Prints one row per run and
# the median per build and path.
# Knobs (environment): ROUNDS (3), REQUESTS (20000).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
[ $# -ge 1 ] || { sed -n '2,10p' "$0"; exit 2; }
export ROUNDS="${ROUNDS:-3}" REQUESTS="${REQUESTS:-20000}"
exec /usr/bin/python3 - "$ROOT" "$@" <<'PY'
import json, os, statistics, subprocess, sys, time
root, builds = sys.argv[1], [os.path.abspath(b) for b in sys.argv[2:]]
sys.path.insert(0, os.path.join(root, "tests", "lib"))
import ursa_harness as h

n = int(os.environ["REQUESTS"])
paths = ["/healthz", "/api/v1/tenants/bench/namespaces/default"]
print("# %s, %d cores, load average %s" % (time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()), os.cpu_count(),
      open("/proc/loadavg").read().split()[0]), flush=True)
h.APISERVER_BIN = os.path.join(builds[0], "src", "tenant-partition", "ursa-tp-apiserver")
e = h.Etcd(); e.start()
tp = h.ApiServer(e); tp.start()
got = {}
try:
    h.create_tenant(tp.admin(), "bench")
    print("| round | build | path | client µs/request | wall µs/request |")
    print("| --- | --- | --- | ---: | ---: |", flush=True)
    for rnd in range(int(os.environ["ROUNDS"])):
        for b in builds:
            for path in paths:
                out = subprocess.run([os.path.join(b, "bench", "ursa-restcost"), "--kubeconfig", tp.admin_kubeconfig(),
                                      "--path", path, "--requests", str(n)], capture_output=True, text=True, timeout=600)
                res = [l for l in out.stdout.splitlines() if l.startswith("RESULT ")]
                r = json.loads(res[-1][7:]) if res else {}
                if out.returncode != 0 or r.get("errors") != 0:
                    raise RuntimeError("ursa-restcost failed: %s %s" % (out.stdout[-400:], out.stderr[-400:]))
                got.setdefault((b, path), []).append(r["cpu_us"])
                print("| %d | %s | %s | %.1f | %.1f |" % (rnd + 1, b, path, r["cpu_us"], r["wall_us"]), flush=True)
finally:
    tp.stop()
    e.stop()
print()
print("| build | path | median client µs/request |")
print("| --- | --- | ---: |")
for (b, path), v in got.items():
    print("| %s | %s | %.1f |" % (b, path, statistics.median(v)))
PY
