#!/usr/bin/python3
"""Custom resources (issue 20): three figures for docs/benchmarks.md, in one run.

1. Creates/s of a custom resource against creates/s of a ConfigMap of the same JSON size, straight
   to one ursa-tp-apiserver (real etcd, plain HTTP as bench/run-apiserver.sh), interleaved rounds
   (CR, ConfigMap, ConfigMap, CR, ...: the order alternates each round), N objects a leg, with 8
   and 64 concurrent clients. Clients are keep-alive HTTP/1.1 connections, one per client,
   driven by forked worker processes (8 at most, each with clients/8 threads) so the GIL does
   not cap the rate. The CRD is a CronTab with a realistic structural schema (pattern,
   minimum/maximum, enum, defaults, a nested object, a map and lists); the ConfigMap's data is
   padded to the CR's exact body size. Medians of the rounds and the ratio (goal >= 0.9), p50/p99.
2. Memory per served CRD: a fresh etcd and API server (TLS, as a region runs it) behind a gateway;
   T tenants created through the gateway, then C CRDs in each (the same CronTab schema, 5 groups
   of 2 kinds) created straight at the partition by 8 clients; the API server's VmRSS and Threads
   (/proc/<pid>/status) before and after, and the time from the first create until every CRD
   reports Established.
3. Discovery latency through the gateway for one tenant while the region serves all those CRDs:
   /apis (aggregated v2), /apis (legacy), /apis/<group>/<version> and /openapi/v3, R sequential
   requests each on one keep-alive TLS connection, without and with If-None-Match (as kubectl
   revalidates its cache), p50/p99 (goal p99 < 50 ms); the same straight at the partition, and
   for one more tenant holding B CRDs of its own. The gateway runs with --tenant-qps 0: its
   per-tenant rate limit (100/s by default) would otherwise answer 429 to the back-to-back
   requests, and what is measured is the latency of one discovery request, not the limit.

Usage: URSA_BUILD_DIR=build /usr/bin/python3 bench/crd_bench.py [--smoke] [--objects 6000]
       [--rounds 5] [--clients 8,64] [--tenants 100] [--crds-per-tenant 10] [--big-crds 1000]
       [--requests 200]
--smoke: tiny counts (well under a minute), for tests/integration/test_crd_bench_smoke.py.
Prints markdown table rows and a closing "FIGURES {json}" line."""

import argparse
import http.client
import json
import os
import signal
import ssl
import statistics
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "lib"))
import ursa_harness as h  # noqa: E402

GW_BIN = os.path.join(h.BUILD_DIR, "src", "gateway", "ursa-gateway")
AGGREGATED = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json"
CRDS = "/apis/apiextensions.k8s.io/v1/tenants/%s/customresourcedefinitions"
GROUP = "stable.example.com"
MAX_PROCS = 8


# ---------------------------------------------------------------------------------------------
# Objects

def crontab_schema():
    """A structural schema of the kind operators ship: typed fields with pattern, bounds, enum and
    defaults, a nested object with a map, lists of scalars and of objects (a list-map)."""
    return {"openAPIV3Schema": {"type": "object", "properties": {
        "spec": {"type": "object", "required": ["cronSpec", "image"], "properties": {
            "cronSpec": {"type": "string", "pattern": "^[0-9*/,-]+( [0-9*/,-]+){4}$", "maxLength": 64},
            "image": {"type": "string", "minLength": 1, "maxLength": 256},
            "replicas": {"type": "integer", "minimum": 1, "maximum": 100, "default": 1},
            "suspend": {"type": "boolean", "default": False},
            "concurrencyPolicy": {"type": "string", "enum": ["Allow", "Forbid", "Replace"], "default": "Allow"},
            "startingDeadlineSeconds": {"type": "integer", "format": "int64", "minimum": 0},
            "args": {"type": "array", "maxItems": 32, "items": {"type": "string"}},
            "env": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
                    "items": {"type": "object", "required": ["name"], "properties": {
                        "name": {"type": "string", "pattern": "^[A-Za-z_][A-Za-z0-9_]*$"},
                        "value": {"type": "string"}}}},
            "template": {"type": "object", "properties": {
                "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                "resources": {"type": "object", "properties": {
                    "cpu": {"x-kubernetes-int-or-string": True},
                    "memory": {"x-kubernetes-int-or-string": True}}},
                "restartPolicy": {"type": "string", "enum": ["OnFailure", "Never"], "default": "OnFailure"}}}}},
        "status": {"type": "object", "properties": {
            "lastScheduleTime": {"type": "string", "format": "date-time"},
            "active": {"type": "integer", "minimum": 0}}}}}}


def crd_manifest(group, plural, kind):
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "%s.%s" % (plural, group)},
            "spec": {"group": group, "scope": "Namespaced",
                     "names": {"plural": plural, "singular": kind.lower(), "kind": kind, "listKind": kind + "List"},
                     "versions": [{"name": "v1", "served": True, "storage": True, "schema": crontab_schema(),
                                   "subresources": {"status": {}},
                                   "additionalPrinterColumns": [
                                       {"name": "Spec", "type": "string", "jsonPath": ".spec.cronSpec"},
                                       {"name": "Replicas", "type": "integer", "jsonPath": ".spec.replicas"}]}]}}


def cr_body(name):
    return {"apiVersion": GROUP + "/v1", "kind": "CronTab",
            "metadata": {"name": name, "labels": {"app": "bench", "tier": "batch"}},
            "spec": {"cronSpec": "*/5 * * * *", "image": "registry.example.com/team/report-builder:1.4.2",
                     "replicas": 2, "startingDeadlineSeconds": 120,
                     "args": ["--output=/data/report", "--format=json", "--verbose"],
                     "env": [{"name": "REGION", "value": "eu-west"}, {"name": "LOG_LEVEL", "value": "info"},
                             {"name": "BATCH_SIZE", "value": "500"}],
                     "template": {"labels": {"job": "report", "owner": "analytics"},
                                  "resources": {"cpu": "500m", "memory": "256Mi"}}}}


def cm_body(name, size):
    """A ConfigMap whose JSON body is exactly size bytes (data padded)."""
    doc = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "labels": {"app": "bench",
                                                                                       "tier": "batch"}},
           "data": {"pad": ""}}
    base = len(json.dumps(doc, separators=(",", ":")))
    doc["data"]["pad"] = "x" * max(0, size - base)
    return doc


def dumps(doc):
    return json.dumps(doc, separators=(",", ":")).encode()


# ---------------------------------------------------------------------------------------------
# Small helpers

def proc_status(pid):
    out = {}
    with open("/proc/%d/status" % pid) as f:
        for ln in f:
            k, _, v = ln.partition(":")
            if k in ("VmRSS", "Threads"):
                out[k] = int(v.split()[0])
    return out


def pct(values, p):
    if not values:
        return float("nan")
    s = sorted(values)
    return s[min(len(s) - 1, int(round(p / 100.0 * (len(s) - 1))))]


def load_average():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def say(*a):
    print(*a, flush=True)


def retry_post(client, path, body, ok=(201, 409), tries=50):
    last = None
    for _ in range(tries):
        try:
            last = client.post(path, body)
            if last.status in ok:
                return last
        except OSError as e:
            last = e
        time.sleep(0.2)
    raise h.HarnessError("POST %s: %r" % (path, last))


# ---------------------------------------------------------------------------------------------
# Create load: forked workers, keep-alive connections

def _worker(host, port, token, path, bodies, threads, go_r, out_w):
    """In a forked child: threads keep-alive connections posting bodies (split among them), after
    the parent's go byte. Writes {"start","end","lat":[s...],"errors":n,"first_error":...} to out_w."""
    for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(s, signal.SIG_DFL)
    hdrs = {"Content-Type": "application/json", "Accept": "application/json", "Connection": "keep-alive"}
    if token:
        hdrs["Authorization"] = "Bearer " + token
    res = {"lat": [], "errors": 0, "first_error": None}
    lock = threading.Lock()
    conns = [http.client.HTTPConnection(host, port, timeout=60) for _ in range(threads)]
    for c in conns:
        c.connect()
    parts = [bodies[i::threads] for i in range(threads)]

    def run(conn, mine):
        lat, errors, first = [], 0, None
        for b in mine:
            t = time.perf_counter()
            try:
                conn.request("POST", path, body=b, headers=hdrs)
                r = conn.getresponse()
                data = r.read()
                st = r.status
            except (OSError, http.client.HTTPException) as e:
                st, data = 0, str(e).encode()
                conn.close()
            lat.append(time.perf_counter() - t)
            if st != 201:
                errors += 1
                if first is None:
                    first = "%d %s" % (st, data[:300].decode("utf-8", "replace"))
        with lock:
            res["lat"].extend(lat)
            res["errors"] += errors
            res["first_error"] = res["first_error"] or first

    ts = [threading.Thread(target=run, args=(conns[i], parts[i])) for i in range(threads)]
    os.read(go_r, 1)
    res["start"] = time.monotonic()
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    res["end"] = time.monotonic()
    data = json.dumps(res).encode()
    while data:
        n = os.write(out_w, data)
        data = data[n:]
    os.close(out_w)


def create_leg(url, token, path, make_body, names, clients):
    """Posts one body per name with `clients` concurrent keep-alive connections; returns
    (creates/s, latencies in s, errors, first error)."""
    u = url.split("://", 1)[1]
    host, port = u.rsplit(":", 1)
    procs = min(clients, MAX_PROCS)
    threads = clients // procs
    bodies = [dumps(make_body(n)) for n in names]
    chunks = [bodies[i::procs] for i in range(procs)]
    go_r, go_w = os.pipe()
    children = []
    for i in range(procs):
        out_r, out_w = os.pipe()
        pid = os.fork()
        if pid == 0:
            try:
                os.close(out_r)
                _worker(host, int(port), token, path, chunks[i], threads, go_r, out_w)
            finally:
                os._exit(0)
        os.close(out_w)
        children.append((pid, out_r))
    time.sleep(0.3)  # every child connected
    os.write(go_w, b"g" * procs)
    results = []
    for pid, out_r in children:
        buf = b""
        while True:
            d = os.read(out_r, 1 << 20)
            if not d:
                break
            buf += d
        os.close(out_r)
        os.waitpid(pid, 0)
        results.append(json.loads(buf) if buf else {"lat": [], "errors": 1, "first_error": "worker died",
                                                        "start": 0, "end": 0})
    os.close(go_r)
    os.close(go_w)
    lat = [x for r in results for x in r["lat"]]
    errors = sum(r["errors"] for r in results)
    first = next((r["first_error"] for r in results if r["first_error"]), None)
    span = max(r["end"] for r in results) - min(r["start"] for r in results)
    ok = len(lat) - errors
    return ok / span if span > 0 else 0.0, lat, errors, first


def bench_creates(args, fig):
    say("## 1. custom resource creates against ConfigMap creates (plain HTTP, one partition)")
    etcd = h.Etcd(name="etcd-crbench").start()
    api = h.ApiServer(etcd, tls=False, extra_args=["--log-level", "info"]).start()
    admin = api.admin()
    h.create_tenant(admin, "bench", timeout=30)
    retry_post(admin, CRDS % "bench", crd_manifest(GROUP, "crontabs", "CronTab"))
    cr_path = "/apis/%s/v1/tenants/bench/namespaces/default/crontabs" % GROUP
    cm_path = "/api/v1/tenants/bench/namespaces/default/configmaps"
    h.wait_until(lambda: admin.get(cr_path).status == 200, 30, "crontabs served")
    size = len(dumps(cr_body("r0-c0-000000")))
    check = admin.post(cr_path, cr_body("probe"))
    h.expect_status(check, 201, "probe CronTab")
    stored = check.json
    h.check(stored["spec"].get("concurrencyPolicy") == "Allow" and stored["spec"]["template"].get(
        "restartPolicy") == "OnFailure", "defaults filled in: %r" % stored["spec"])
    h.expect_status(admin.post(cr_path, dict(cr_body("bad"), spec={"cronSpec": "x", "image": "i"})), 422,
                    "a CronTab the schema forbids")
    fig["body_bytes"] = size
    fig["cm_body_bytes"] = len(dumps(cm_body("r0-c0-000000", size)))
    say("body sizes: CronTab %d bytes, ConfigMap %d bytes; stored CronTab %d bytes (with defaults)"
        % (size, fig["cm_body_bytes"], len(json.dumps(stored, separators=(",", ":")))))
    fig["creates"] = {}
    for clients in args.clients:
        rows = {"cr": [], "cm": []}
        lats = {"cr": [], "cm": []}
        for rnd in range(args.rounds):
            order = ("cr", "cm") if rnd % 2 == 0 else ("cm", "cr")
            for kind in order:
                names = ["%s-c%d-r%d-%06d" % (kind, clients, rnd, i) for i in range(args.objects)]
                if kind == "cr":
                    rate, lat, err, first = create_leg(api.url, api.admin_token, cr_path, cr_body, names, clients)
                else:
                    rate, lat, err, first = create_leg(api.url, api.admin_token, cm_path,
                                                       lambda n: cm_body(n, size), names, clients)
                if err:
                    raise h.HarnessError("%s leg: %d errors, first: %s" % (kind, err, first))
                if not api.running():
                    raise h.HarnessError("ursa-tp-apiserver died")
                rows[kind].append(rate)
                lats[kind].append((pct(lat, 50) * 1000, pct(lat, 99) * 1000))
                say("clients %d round %d %-2s: %7.0f creates/s  p50 %6.2f ms  p99 %6.2f ms  (load %s)"
                    % (clients, rnd + 1, kind, rate, lats[kind][-1][0], lats[kind][-1][1], load_average()))
        med = {k: statistics.median(v) for k, v in rows.items()}
        pairs = [a / b for a, b in zip(rows["cr"], rows["cm"])]
        fig["creates"][clients] = {
            "cr_per_s": rows["cr"], "cm_per_s": rows["cm"], "cr_median": med["cr"], "cm_median": med["cm"],
            "ratio": med["cr"] / med["cm"], "pair_ratio_median": statistics.median(pairs),
            "cr_p50_ms": statistics.median(x[0] for x in lats["cr"]),
            "cr_p99_ms": statistics.median(x[1] for x in lats["cr"]),
            "cm_p50_ms": statistics.median(x[0] for x in lats["cm"]),
            "cm_p99_ms": statistics.median(x[1] for x in lats["cm"])}
    fig["creates_rss_kib"] = proc_status(api.proc.pid)["VmRSS"]
    api.stop()
    etcd.stop()
    say("| clients | round | CronTab creates/s | ConfigMap creates/s | pair ratio |")
    say("|---:|---:|---:|---:|---:|")
    for clients, c in fig["creates"].items():
        for i, (a, b) in enumerate(zip(c["cr_per_s"], c["cm_per_s"])):
            say("| %d | %d | %.0f | %.0f | %.2f |" % (clients, i + 1, a, b, a / b))
        say("| %d | **median** | **%.0f** | **%.0f** | **%.3f** (of medians) |"
            % (clients, c["cr_median"], c["cm_median"], c["ratio"]))
    say("| clients | CronTab p50 / p99 ms | ConfigMap p50 / p99 ms | (medians of the rounds) |")
    for clients, c in fig["creates"].items():
        say("| %d | %.2f / %.2f | %.2f / %.2f | |" % (clients, c["cr_p50_ms"], c["cr_p99_ms"], c["cm_p50_ms"],
                                                    c["cm_p99_ms"]))


# ---------------------------------------------------------------------------------------------
# Region: one partition (TLS) behind a gateway

def start_region():
    etcd = h.Etcd(name="etcd-crdtp").start()
    idkey = os.path.join(h.make_tmpdir("idkey"), "identity.key")
    with open(idkey, "w") as f:
        f.write(os.urandom(32).hex())
    tp = h.ApiServer(etcd, partition_id="tp-1",
                     extra_args=["--identity-key-file", idkey, "--log-level", "info"]).start()
    gw_etcd = h.Etcd(name="etcd-crdgw").start()
    region = os.path.join(tp.dir, "region.json")
    rc, out, err = h.run_cmd([h.URSACTL_BIN, "register", "--region-file", region, "--signing-key", tp.signing_key,
                              "--certificate-authority", tp.ca_file, "--gateway-etcd", gw_etcd.endpoints,
                              "--kind", "tp", "--name", "tp-1", "--endpoints", tp.url], 60)
    h.check(rc == 0, "ursactl register: %s %s" % (out, err))
    token = os.path.join(tp.dir, "gw.token")
    with open(token, "w") as f:
        f.write(tp.admin_token)
    port = h.free_port()
    log = os.path.join(tp.dir, "gw.log")
    h._logs.append(("gateway", log))
    gw = h.spawn([GW_BIN, "--etcd-servers", gw_etcd.endpoints, "--listen", "127.0.0.1:%d" % port,
                  "--tls-cert-file", tp.cert_file, "--tls-private-key-file", tp.key_file,
                  "--token-auth-file", tp.token_file, "--token-signing-public-key", tp.signing_pub,
                  "--partition-ca-file", tp.ca_file, "--partition-token-file", token,
                  "--identity-key-file", idkey, "--tenant-qps", "0", "--log-level", "info"], log)
    gw_url = "https://127.0.0.1:%d" % port
    gw_admin = h.Client(gw_url, tp.ca_file, tp.admin_token)
    h.wait_until(lambda: _status(gw_admin, "/readyz") == 200, 60, "gateway ready")
    return {"etcd": etcd, "tp": tp, "gw": gw, "gw_url": gw_url, "gw_admin": gw_admin, "gw_etcd": gw_etcd}


def _status(client, path, **kw):
    try:
        return client.get(path, **kw).status
    except (OSError, http.client.HTTPException):
        return 0


def tenant_client(reg, tenant, user, base_url):
    tp = reg["tp"]
    out = h.must_run([h.URSACTL_BIN, "kubeconfig", "--tenant", tenant, "--user", user, "--ttl", "0",
                      "--server", base_url, "--signing-key", tp.signing_key,
                      "--certificate-authority", tp.ca_file])
    path = os.path.join(tp.dir, "kc-%s-%s-%d" % (tenant, user, abs(hash(base_url)) % 10000))
    with open(path, "w") as f:
        f.write(out)
    return h.kubeconfig_token(path)


def crd_names(j):
    """The j-th CRD of a tenant: 5 groups of 2 kinds."""
    group = "g%d.example.com" % (j // 2)
    kind = "Kind%d" % j
    return group, "kind%ds" % j, kind


def create_crds(tp, items, clients=8):
    """Posts (tenant, manifest) pairs to the partition with `clients` threads, each one keep-alive
    TLS connection. Returns the seconds it took."""
    ctx = ssl.create_default_context(cafile=tp.ca_file)
    errors = []
    hdrs = {"Content-Type": "application/json", "Authorization": "Bearer " + tp.admin_token}

    def run(mine):
        conn = http.client.HTTPSConnection("127.0.0.1", tp.port, timeout=60, context=ctx)
        for tenant, m in mine:
            for attempt in range(20):
                try:
                    conn.request("POST", CRDS % tenant, body=dumps(m), headers=hdrs)
                    r = conn.getresponse()
                    body = r.read()
                except (OSError, http.client.HTTPException) as e:
                    conn.close()
                    body, r = str(e).encode(), None
                if r is not None and r.status in (201, 409):
                    break
                time.sleep(0.2)
            else:
                errors.append("%s %s: %s" % (tenant, m["metadata"]["name"], body[:300]))
        conn.close()

    t0 = time.monotonic()
    ts = [threading.Thread(target=run, args=(items[i::clients],)) for i in range(clients)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    if errors:
        raise h.HarnessError("%d CRD creates failed, first: %s" % (len(errors), errors[0]))
    return time.monotonic() - t0


def established_count(admin, tenants):
    n = 0
    for t in tenants:
        r = admin.get(CRDS % t)
        if r.status != 200:
            continue
        for item in r.json.get("items") or []:
            conds = (item.get("status") or {}).get("conditions") or []
            if any(c.get("type") == "Established" and c.get("status") == "True" for c in conds):
                n += 1
    return n


def bench_crd_memory(args, reg, fig):
    say("## 2. memory per served CRD: %d tenants x %d CRDs" % (args.tenants, args.crds_per_tenant))
    tp, gw_admin = reg["tp"], reg["gw_admin"]
    tenants = ["t%03d" % i for i in range(args.tenants)]
    t0 = time.monotonic()
    for t in tenants:
        retry_post(gw_admin, "/api/v1/tenants", h.tenant_manifest(t))
    say("created %d tenants through the gateway in %.1f s" % (len(tenants), time.monotonic() - t0))
    admin = tp.admin()
    h.wait_until(lambda: all(admin.get("/api/v1/tenants/%s/namespaces/default" % t).status == 200
                             for t in tenants[-3:]), 60, "the last tenants' namespaces")
    time.sleep(3)
    before = proc_status(tp.proc.pid)
    items = [(t, crd_manifest(*crd_names(j))) for j in range(args.crds_per_tenant) for t in tenants]
    t0 = time.monotonic()
    create_s = create_crds(tp, items)
    total = len(items)
    h.wait_until(lambda: established_count(admin, tenants) >= total, max(120, total * 0.5),
                 "%d CRDs Established" % total, interval=0.5)
    est_s = time.monotonic() - t0
    time.sleep(3)
    after = proc_status(tp.proc.pid)
    fig["memory"] = {"crds": total, "tenants": len(tenants), "rss_before_kib": before["VmRSS"],
                     "rss_after_kib": after["VmRSS"], "threads_before": before["Threads"],
                     "threads_after": after["Threads"],
                     "kib_per_crd": (after["VmRSS"] - before["VmRSS"]) / total,
                     "threads_per_crd": (after["Threads"] - before["Threads"]) / total,
                     "create_s": create_s, "established_s": est_s}
    m = fig["memory"]
    say("| ursa-tp-apiserver with %d CRDs across %d tenants | value |" % (total, len(tenants)))
    say("|---|---:|")
    say("| RSS before (tenants only) / after | %.1f / %.1f MiB |" % (m["rss_before_kib"] / 1024,
                                                                     m["rss_after_kib"] / 1024))
    say("| **RSS per served CRD** | **%.1f KiB** |" % m["kib_per_crd"])
    say("| threads before / after | %d / %d (%.2f per CRD) |" % (m["threads_before"], m["threads_after"],
                                                                m["threads_per_crd"]))
    say("| %d creates (8 clients) / until all Established | %.1f s / %.1f s |" % (total, create_s, est_s))
    return tenants


def cpu_s(pid):
    with open("/proc/%d/stat" % pid) as f:
        x = f.read().rsplit(")", 1)[1].split()
    return (int(x[11]) + int(x[12])) / os.sysconf("SC_CLK_TCK")


def wait_quiet(pid, limit):
    """Seconds until pid uses under 20 % of a core over one second (what the CRD registry still
    does after every CRD reports Established), counted from the call; at most limit."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < limit:
        c0 = cpu_s(pid)
        time.sleep(1)
        if cpu_s(pid) - c0 < 0.2:
            return time.monotonic() - t0 - 1
    return limit


def timed_gets(base_url, ca, token, path, n, accept, revalidate):
    """n sequential GETs on one keep-alive TLS connection; returns (latencies s, status counts, bytes)."""
    u = base_url.split("://", 1)[1]
    host, port = u.rsplit(":", 1)
    conn = http.client.HTTPSConnection(host, int(port), timeout=60,
                                       context=ssl.create_default_context(cafile=ca))
    hdrs = {"Accept": accept, "Authorization": "Bearer " + token}
    t = time.perf_counter()
    conn.request("GET", path, headers=hdrs)
    r = conn.getresponse()
    body = r.read()
    first = time.perf_counter() - t
    if r.status != 200:
        raise h.HarnessError("GET %s%s: %d %s" % (base_url, path, r.status, body[:300]))
    etag = r.getheader("ETag")
    if revalidate:
        if not etag:
            raise h.HarnessError("GET %s%s: no ETag" % (base_url, path))
        hdrs["If-None-Match"] = etag
    lat, codes, size = [], {}, len(body)
    for _ in range(n):
        t = time.perf_counter()
        conn.request("GET", path, headers=hdrs)
        r = conn.getresponse()
        r.read()
        lat.append(time.perf_counter() - t)
        codes[r.status] = codes.get(r.status, 0) + 1
    conn.close()
    return lat, codes, size, first


def bench_discovery(args, reg, tenants, fig):
    say("## 3. discovery latency")
    tp = reg["tp"]
    cases = []
    small = tenants[len(tenants) // 2]
    cases.append((small, args.crds_per_tenant))
    if args.big_crds:
        big = "big"
        retry_post(reg["gw_admin"], "/api/v1/tenants", h.tenant_manifest(big))
        items = [(big, crd_manifest("g%d.big.example.com" % (j // 10), "kind%ds" % j, "Kind%d" % j))
                 for j in range(args.big_crds)]
        t0 = time.monotonic()
        s = create_crds(tp, items)
        admin = tp.admin()
        h.wait_until(lambda: established_count(admin, [big]) >= args.big_crds, max(120, args.big_crds * 0.5),
                     "tenant big's CRDs Established", interval=0.5)
        est = time.monotonic() - t0
        wait_quiet(tp.proc.pid, 300)
        quiet = time.monotonic() - t0 - 1
        st = proc_status(tp.proc.pid)
        fig["big"] = {"crds": args.big_crds, "create_s": s, "established_s": est, "quiet_s": quiet,
                      "rss_kib": st["VmRSS"], "threads": st["Threads"]}
        say("tenant big: %d CRDs of its own (groups of 10 kinds) created in %.1f s, all Established after %.1f s, "
            "the partition busy (CPU > 20 %%) until %.1f s; RSS then %.1f MiB, %d threads"
            % (args.big_crds, s, est, quiet, st["VmRSS"] / 1024, st["Threads"]))
        cases.append((big, args.big_crds))
    fig["discovery"] = []
    for tenant, own in cases:
        group = "g0.example.com" if tenant != "big" else "g0.big.example.com"
        paths = [("/apis", AGGREGATED, "/apis aggregated"), ("/apis", "application/json", "/apis legacy"),
                 ("/apis/%s/v1" % group, "application/json", "/apis/%s/v1" % group),
                 ("/openapi/v3", "application/json", "/openapi/v3")]
        for where, base in (("gateway", reg["gw_url"]), ("partition", tp.url)):
            token = tenant_client(reg, tenant, "dev", base)
            for path, accept, label in paths:
                for reval in (False, True):
                    lat, codes, size, first = timed_gets(base, tp.ca_file, token, path, args.requests, accept, reval)
                    want = 304 if reval else 200
                    if codes.get(want, 0) != args.requests:
                        raise h.HarnessError("%s %s: statuses %r, want %d" % (where, label, codes, want))
                    row = {"tenant": tenant, "own_crds": own, "via": where, "what": label,
                           "if_none_match": reval, "bytes": size, "p50_ms": pct(lat, 50) * 1000,
                           "p99_ms": pct(lat, 99) * 1000, "max_ms": max(lat) * 1000, "first_ms": first * 1000}
                    fig["discovery"].append(row)
    say("| tenant (own CRDs; %d region-wide) | via | request | If-None-Match | bytes | first ms | p50 ms | p99 ms "
        "| max ms |" % (len(tenants) * args.crds_per_tenant + args.big_crds))
    say("|---|---|---|---|---:|---:|---:|---:|---:|")
    for r in fig["discovery"]:
        say("| %s (%d) | %s | %s | %s | %d | %.2f | %.2f | %.2f | %.2f |"
            % (r["tenant"], r["own_crds"], r["via"], r["what"], "yes (304)" if r["if_none_match"] else "no",
               r["bytes"], r["first_ms"], r["p50_ms"], r["p99_ms"], r["max_ms"]))
    gw_rows = [r for r in fig["discovery"] if r["via"] == "gateway"]
    fig["discovery_gateway_worst_p99_ms"] = max(r["p99_ms"] for r in gw_rows)
    fig["memory"]["rss_end_kib"] = proc_status(tp.proc.pid)["VmRSS"]
    fig["memory"]["threads_end"] = proc_status(tp.proc.pid)["Threads"]
    fig["gateway_rss_kib"] = proc_status(reg["gw"].pid)["VmRSS"]
    say("partition RSS at the end: %.1f MiB, %d threads; gateway RSS %.1f MiB"
        % (fig["memory"]["rss_end_kib"] / 1024, fig["memory"]["threads_end"], fig["gateway_rss_kib"] / 1024))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--smoke", action="store_true", help="tiny counts, for the smoke test")
    ap.add_argument("--objects", type=int, default=6000, help="objects per create leg")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--clients", default="8,64", help="comma-separated client counts")
    ap.add_argument("--tenants", type=int, default=100)
    ap.add_argument("--crds-per-tenant", type=int, default=10)
    ap.add_argument("--big-crds", type=int, default=1000, help="CRDs of one more tenant (0: none)")
    ap.add_argument("--requests", type=int, default=200, help="discovery requests per row")
    ap.add_argument("--skip", default="", help="comma-separated parts to skip: creates,region")
    args = ap.parse_args()
    if args.smoke:
        args.objects, args.rounds, args.clients = 150, 2, "8"
        args.tenants, args.crds_per_tenant, args.big_crds, args.requests = 4, 3, 5, 20
    args.clients = [int(x) for x in args.clients.split(",") if x]
    skip = set(args.skip.split(","))
    h.require_binary(GW_BIN, "ursa-gateway")
    fig = {"started": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()), "load_before": load_average(),
           "build": h.BUILD_DIR}
    try:
        commit = subprocess.run(["git", "-C", h.SOURCE_DIR, "rev-parse", "--short", "HEAD"], capture_output=True,
                                text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        commit = "?"
    fig["commit"] = commit
    say("# crd_bench %s, commit %s, build %s, load average before %s"
        % (fig["started"], commit, h.BUILD_DIR, fig["load_before"]))
    t0 = time.monotonic()
    if "creates" not in skip:
        bench_creates(args, fig)
    if "region" not in skip:
        reg = start_region()
        tenants = bench_crd_memory(args, reg, fig)
        bench_discovery(args, reg, tenants, fig)
    fig["load_after"] = load_average()
    fig["seconds"] = time.monotonic() - t0
    say("# load average after %s; %.0f s" % (fig["load_after"], fig["seconds"]))
    say("FIGURES " + json.dumps(fig, sort_keys=True))
    h.cleanup()


if __name__ == "__main__":
    try:
        main()
    except Exception:
        h._state["failed"] = True
        import traceback
        traceback.print_exc()
        for label, path in h._logs:
            print("--- %s (%s):\n%s" % (label, path, h.log_tail(path, 30)), file=sys.stderr)
        sys.exit(1)
