#!/usr/bin/env bash
# What a page of a LIST costs the tenant-partition API server as a Table (what kubectl asks
# for) against the same page as plain JSON, for one or more builds side by side (issue 22).
#
# usage: bench/run-table-list.sh BUILD_DIR [BUILD_DIR...]
# One etcd holds PODS pods of tenant bench (bench/ursa-load create-pods, POD_BYTES each, spread
# over NAMESPACES namespaces, then PATCHED of them given a running status the way a kubelet
# reports it). One ursa-tp-apiserver per build serves that etcd at the same time. In each
# round, for every build (A, B, A, B, ...) and form (Table, JSON), a client pages through
# /api/v1/tenants/bench/pods with limit=LIMIT as kubectl does (consistent pages from etcd,
# following continue tokens) and the server's CPU (utime+stime of its process) and the wall
# time per page are recorded. Prints one row per run, then medians per build and form.
# Knobs (environment): ROUNDS (5), PODS (20000), LIMIT (500), POD_BYTES (1500),
# NAMESPACES (20), PATCHED (all).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
[ $# -ge 1 ] || { sed -n '2,15p' "$0"; exit 2; }
export ROUNDS="${ROUNDS:-5}" PODS="${PODS:-20000}" LIMIT="${LIMIT:-500}" POD_BYTES="${POD_BYTES:-1500}"
export NAMESPACES="${NAMESPACES:-20}" PATCHED="${PATCHED:-all}"
exec /usr/bin/python3 - "$ROOT" "$@" <<'PY'
import http.client, json, os, ssl, statistics, subprocess, sys, threading, time, urllib.parse
root, builds = sys.argv[1], [os.path.abspath(b) for b in sys.argv[2:]]
sys.path.insert(0, os.path.join(root, "tests", "lib"))
import ursa_harness as h

pods, limit, nns = int(os.environ["PODS"]), int(os.environ["LIMIT"]), int(os.environ["NAMESPACES"])
patched = pods if os.environ["PATCHED"] == "all" else int(os.environ["PATCHED"])
TICK = os.sysconf("SC_CLK_TCK")
TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json"
print("# %s, %d cores, load average %s; %d pods of %d bytes in %d namespaces, pages of %d" % (
    time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()), os.cpu_count(), open("/proc/loadavg").read().split()[0],
    pods, int(os.environ["POD_BYTES"]), nns, limit), flush=True)


def cpu_s(pid):
    f = open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / TICK


def conn(srv):
    ctx = ssl.create_default_context(cafile=srv.ca_file)
    return http.client.HTTPSConnection("127.0.0.1", srv.port, context=ctx, timeout=120)


def get(c, srv, path, accept):
    c.request("GET", path, headers={"Authorization": "Bearer " + srv.admin_token, "Accept": accept})
    r = c.getresponse()
    body = r.read()
    if r.status != 200:
        raise RuntimeError("GET %s: %d %s" % (path, r.status, body[:300]))
    return json.loads(body), len(body)


def page_through(srv, accept):
    """Pages through the tenant's pods; returns (pages, rows, bytes, server CPU s, wall s, page walls)."""
    c = conn(srv)
    get(c, srv, "/api/v1/tenants/bench/namespaces/default", "application/json")  # handshake outside
    cont, pages, rows, nbytes, walls = None, 0, 0, 0, []
    c0, t0 = cpu_s(srv.proc.pid), time.monotonic()
    while True:
        q = {"limit": str(limit)}
        if cont:
            q["continue"] = cont
        t = time.monotonic()
        doc, n = get(c, srv, "/api/v1/tenants/bench/pods?" + urllib.parse.urlencode(q), accept)
        walls.append(time.monotonic() - t)
        pages += 1
        nbytes += n
        rows += len(doc.get("rows") if accept == TABLE else doc.get("items")) or 0
        cont = doc["metadata"].get("continue")
        if not cont:
            break
    cpu, wall = cpu_s(srv.proc.pid) - c0, time.monotonic() - t0
    c.close()
    return pages, rows, nbytes, cpu, wall, walls


e = h.Etcd(); e.start()
servers = []
try:
    for b in builds:
        h.APISERVER_BIN = os.path.join(b, "src", "tenant-partition", "ursa-tp-apiserver")
        s = h.ApiServer(e, partition_id="tp-1"); s.start(); servers.append(s)
    tp = servers[0]
    adm = tp.admin()
    h.create_tenant(adm, "bench")
    nsn = ["default"] + ["ns-%02d" % i for i in range(1, nns)]
    for n in nsn[1:]:
        h.expect_status(adm.post("/api/v1/tenants/bench/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                                                      "metadata": {"name": n}}), 201, "namespace")
    load = os.path.join(builds[-1], "bench", "ursa-load")
    t0 = time.monotonic()
    for i, n in enumerate(nsn):
        cnt = pods // nns + (1 if i < pods % nns else 0)
        out = subprocess.run([load, "create-pods", "--server", tp.url, "--token", tp.admin_token, "--tenant", "bench",
                              "--namespace", n, "--clients", "8", "--count", str(cnt), "--duration", "600",
                              "--pod-bytes", os.environ["POD_BYTES"], "--cacert", tp.ca_file],
                             capture_output=True, text=True, timeout=900)
        if out.returncode != 0:
            raise RuntimeError("create-pods: %s %s" % (out.stdout[-500:], out.stderr[-500:]))
    print("# created %d pods in %.1f s" % (pods, time.monotonic() - t0), flush=True)
    # A kubelet's status: scheduled, running, one ready container, an IP.
    names = []
    c = conn(tp)
    doc, _ = get(c, tp, "/api/v1/tenants/bench/pods", "application/json")
    names = [(p["metadata"]["namespace"], p["metadata"]["name"]) for p in doc["items"]][:patched]
    if len(doc["items"]) != pods:
        raise RuntimeError("expected %d pods, listed %d" % (pods, len(doc["items"])))
    t0 = time.monotonic()

    def patch_some(part):
        cl = tp.admin()
        for k, (ns, name) in enumerate(part):
            ts = "2026-11-26T10:00:00Z"
            st = {"status": {"phase": "Running", "hostIP": "10.0.0.1", "podIP": "10.1.%d.%d" % (k // 250, k % 250 + 1),
                             "podIPs": [{"ip": "10.1.%d.%d" % (k // 250, k % 250 + 1)}], "startTime": ts,
                             "qosClass": "Burstable",
                             "conditions": [{"type": t, "status": "True", "lastTransitionTime": ts}
                                            for t in ("PodReadyToStartContainers", "Initialized", "Ready",
                                                      "ContainersReady", "PodScheduled")],
                             "containerStatuses": [{"name": "app", "ready": True, "started": True, "restartCount": 0,
                                                    "image": "registry.k8s.io/pause:3.9",
                                                    "imageID": "registry.k8s.io/pause@sha256:7031c1b283388d2c",
                                                    "containerID": "containerd://%032x" % k,
                                                    "state": {"running": {"startedAt": ts}}}]}}
            r = cl.patch("/api/v1/tenants/bench/namespaces/%s/pods/%s/status" % (ns, name), st)
            h.expect_status(r, 200, "patch status")
    th = [threading.Thread(target=patch_some, args=(names[i::4],)) for i in range(4)]
    for t in th:
        t.start()
    for t in th:
        t.join()
    print("# gave %d pods a running status in %.1f s" % (len(names), time.monotonic() - t0), flush=True)
    got = {}
    print("| round | build | form | pages | rows | MB | server CPU ms/page | wall ms/page | median page ms |")
    print("| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |", flush=True)
    for rnd in range(int(os.environ["ROUNDS"])):
        for b, s in zip(builds, servers):
            for form, accept in (("Table", TABLE), ("JSON", "application/json")):
                pages, rows, nb, cpu, wall, walls = page_through(s, accept)
                if rows != pods:
                    raise RuntimeError("%s %s: %d rows, expected %d" % (b, form, rows, pods))
                got.setdefault((b, form), []).append((cpu * 1e3 / pages, wall * 1e3 / pages, statistics.median(walls) * 1e3))
                print("| %d | %s | %s | %d | %d | %.1f | %.1f | %.1f | %.1f |" % (
                    rnd + 1, b, form, pages, rows, nb / 1e6, cpu * 1e3 / pages, wall * 1e3 / pages,
                    statistics.median(walls) * 1e3), flush=True)
finally:
    for s in servers:
        s.stop()
    e.stop()
print()
print("| build | form | median server CPU ms/page | median wall ms/page | median page ms |")
print("| --- | --- | ---: | ---: | ---: |")
for (b, form), v in got.items():
    print("| %s | %s | %.1f | %.1f | %.1f |" % (b, form, statistics.median(x[0] for x in v),
                                               statistics.median(x[1] for x in v), statistics.median(x[2] for x in v)))
PY
