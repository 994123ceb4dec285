#!/usr/bin/env bash
# CPU an API server and its etcd spend per update, for one or more builds side by side.
#
# usage: bench/run-update-cost.sh BUILD_DIR [BUILD_DIR...]
# For each round and each build: a fresh etcd and ursa-tp-apiserver (TLS) from that build, one
# tenant, then `ursa-load watch` (one watcher; UPDATES sequential merge patches of a ConfigMap,
# each a write) and the CPU of the API server and of etcd per update from /proc. Builds are
# interleaved (A, B, A, B, ...) so that a noisy machine hits them alike.
# Knobs (environment): ROUNDS (3), UPDATES (4000).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
[ $# -ge 1 ] || { sed -n '2,9p' "$0"; exit 2; }
export ROUNDS="${ROUNDS:-3}" UPDATES="${UPDATES:-4000}"
exec /usr/bin/python3 - "$ROOT" "$@" <<'PY'
import json, os, subprocess, sys, time
root, builds = sys.argv[1], [os.path.abspath(b) for b in sys.argv[2:]]
sys.path.insert(0, os.path.join(root, "tests", "lib"))
import ursa_harness as h

def cpu(pid):
    f = open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")

n = int(os.environ["UPDATES"])
print("# %s, %d cores, load average %s" % (time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()), os.cpu_count(),
      open("/proc/loadavg").read().split()[0]), flush=True)
print("| round | build | API server µs/update | etcd µs/update | updates/s |")
print("| --- | --- | ---: | ---: | ---: |", flush=True)
for rnd in range(int(os.environ["ROUNDS"])):
    for b in builds:
        h.APISERVER_BIN = os.path.join(b, "src", "tenant-partition", "ursa-tp-apiserver")
        e = h.Etcd(); e.start()
        tp = h.ApiServer(e); tp.start()
        try:
            h.create_tenant(tp.admin(), "bench")
            c0, e0 = cpu(tp.proc.pid), cpu(e.members[0]["proc"].pid)
            out = subprocess.run([os.path.join(b, "bench", "ursa-load"), "watch", "--server", tp.url, "--token",
                                  tp.admin_token, "--cacert", tp.ca_file, "--tenant", "bench", "--watchers", "1",
                                  "--updates", str(n), "--name", "cm"], capture_output=True, text=True, timeout=600)
            c1, e1 = cpu(tp.proc.pid), cpu(e.members[0]["proc"].pid)
            res = [l for l in out.stdout.splitlines() if l.startswith("RESULT ")]
            r = json.loads(res[-1][7:]) if res else {}
            if r.get("updates_ok") != n:
                raise RuntimeError("ursa-load watch failed: %s %s" % (out.stdout[-400:], out.stderr[-400:]))
            print("| %d | %s | %.0f | %.0f | %.0f |" % (rnd + 1, b, (c1 - c0) * 1e6 / n, (e1 - e0) * 1e6 / n,
                  r.get("updates_per_s", 0)), flush=True)
        finally:
            tp.stop()
            e.stop()
PY
