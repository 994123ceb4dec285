#!/usr/bin/python3
"""Fair shares on a tenant-partition API server (issue 23, apiserver/fairshare.c).

One etcd, one ursa-tp-apiserver with small shares: --tenant-seats 2 --seats-per-tenant 1
--tenant-queue-length 2 --queue-wait-seconds 2 --max-watches-per-tenant 3; tenants fa and fb, a
user of each (ursactl kubeconfig: the tenant's admins).

Checks: /metrics shows the levels and seats, and counts a tenant's requests (the region's admin
is exempt: not counted). etcd is paused (SIGSTOP) so that a create of fa holds fa's one seat:
fa's next GETs wait in the queues of fa's hand (6 queues of 2: 12 wait), the thirteenth gets 429
TooManyRequests with Retry-After at once, and fb's GET is served at once meanwhile (the other
seat); the waiting GETs get 429 "timed out in its queue" after 2 s; with etcd back, fa's create
ends 201 and fa is served again (fb's GET is a list at resourceVersion 0, from the cache: etcd is paused).
Watches: fa holds 3, the fourth gets 429, one closed makes room;
the admin's watches are not counted. The rejections show in /metrics per tenant and reason.
With --fair-queuing=false (a second server on the same etcd) nothing queues. A LIST is weighed
by its own tenant's objects: fa's LIST of 1,000 configmaps takes 3 seats, fb's of its own one.
Such a wide LIST's reply goes through a bounded send buffer only while another tenant is served.

Run alone: URSA_BUILD_DIR=build /usr/bin/python3 tests/integration/test_fair_queuing.py"""

import os
import re
import signal
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import ursa_harness as h  # noqa: E402

S = {}
ARGS = ["--tenant-seats", "2", "--seats-per-tenant", "1", "--tenant-queue-length", "2",
        "--queue-wait-seconds", "2", "--max-watches-per-tenant", "3"]
WAITING = 6 * 2  # a tenant's hand of 6 queues, 2 each


def setup():
    S["etcd"] = h.Etcd().start()
    S["api"] = h.ApiServer(S["etcd"], extra_args=ARGS).start()
    S["admin"] = S["api"].admin()
    for t in ("fa", "fb"):
        h.create_tenant(S["admin"], t)
    S["fa"] = S["api"].user_client("fa", "alice")
    S["fb"] = S["api"].user_client("fb", "bob")


def teardown():
    if S.get("paused"):
        os.kill(S["etcd"].members[0]["proc"].pid, signal.SIGCONT)


def metrics():
    r = S["admin"].get("/metrics")
    h.expect_status(r, 200, "metrics")
    return r.body.decode()


def metric(text, line_prefix):
    for line in text.splitlines():
        if line.startswith(line_prefix + " "):
            return float(line.split()[-1])
    return None


def test_metrics_show_levels_and_tenants():
    r = S["fa"].get("/api/v1/namespaces/default/configmaps")
    h.expect_status(r, 200, "fa lists its configmaps")
    S["admin"].get("/api/v1/tenants")
    m = metrics()
    h.eq(metric(m, 'ursa_fairq_seats{level="workload"}'), 2.0, "workload seats")
    h.eq(metric(m, 'ursa_fairq_seats{level="exempt"}'), 0.0, "exempt seats (unlimited)")
    h.check(metric(m, 'ursa_fairq_tenant_dispatched_total{level="workload",tenant="fa"}') >= 1,
            "fa's requests counted: %s" % [x for x in m.splitlines() if "tenant=" in x])
    h.check('tenant="system"' not in m, "the admin (system:masters) is not queued: %s"
            % [x for x in m.splitlines() if 'tenant="system"' in x])


def test_one_tenant_stuck_another_served():
    pid = S["etcd"].members[0]["proc"].pid
    os.kill(pid, signal.SIGSTOP)
    S["paused"] = True
    results = {}

    def call(key, client, method, path, body=None):
        t0 = time.monotonic()
        try:
            r = client.request(method, path, body)
            results[key] = (r.status, r.json if r.body else None, r.headers,
                            time.monotonic() - t0)
        except Exception as e:  # noqa: BLE001 - recorded, asserted below
            results[key] = (None, repr(e), {}, time.monotonic() - t0)

    threads = []
    try:
        cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "held"}, "data": {"a": "1"}}
        fa_create = h.Client(S["api"].url, S["api"].ca_file, S["fa"].token, timeout=60)
        t = threading.Thread(target=call, args=("create", fa_create, "POST",
                                                "/api/v1/namespaces/default/configmaps", cm))
        t.start()
        threads.append(t)
        time.sleep(0.5)  # the create holds fa's seat, waiting for etcd
        for i in range(WAITING):
            c = h.Client(S["api"].url, S["api"].ca_file, S["fa"].token, timeout=30)
            t = threading.Thread(target=call, args=("wait%d" % i, c, "GET", "/api/v1/namespaces/default"))
            t.start()
            threads.append(t)
        h.wait_until(lambda: metric(metrics(), 'ursa_fairq_tenant_waiting{level="workload",tenant="fa"}') == WAITING,
                     10, "%d GETs of fa waiting" % WAITING)
        r = S["fa"].get("/api/v1/namespaces/default")
        h.expect_status(r, 429, "fa's request beyond its queues", "TooManyRequests")
        h.eq(r.header("Retry-After"), "1", "Retry-After")
        h.check("waiting" in r.json.get("message", ""), r.json)
        t0 = time.monotonic()
        r = S["fb"].get("/api/v1/namespaces/default/configmaps?resourceVersion=0")  # from the cache
        took = time.monotonic() - t0
        h.expect_status(r, 200, "fb served while fa waits")
        h.check(took < 1.0, "fb's GET took %.3fs" % took)
        time.sleep(3.0)  # the waiting GETs time out (2 s, the ticker every 250 ms)
        for i in range(WAITING):
            st = results.get("wait%d" % i)
            h.check(st is not None, "fa's waiting GET %d answered" % i)
            h.eq(st[0], 429, "fa's waiting GET %d: %r" % (i, st))
            h.check("timed out in its queue" in st[1].get("message", ""), st[1])
            h.check(1.5 <= st[3] < 5, "it waited %.2fs" % st[3])
    finally:
        os.kill(pid, signal.SIGCONT)
        S["paused"] = False
    for t in threads:
        t.join(60)
    h.eq(results["create"][0], 201, "fa's create once etcd is back: %r" % (results["create"],))
    h.wait_until(lambda: S["fa"].get("/api/v1/namespaces/default/configmaps/held").status == 200, 30,
                 "fa served again")
    m = metrics()
    h.check(metric(m, 'ursa_fairq_tenant_rejected_total{level="workload",tenant="fa",reason="timeout"}') >= WAITING,
            "fa's timeouts counted")
    h.check(metric(m, 'ursa_fairq_tenant_rejected_total{level="workload",tenant="fa",reason="queue-full"}') >= 1,
            "fa's full queue counted")
    h.eq(metric(m, 'ursa_fairq_tenant_rejected_total{level="workload",tenant="fb",reason="timeout"}'), 0.0,
         "fb never refused")
    h.eq(metric(m, 'ursa_fairq_seats_in_use{level="workload"}'), 0.0, "every seat given back")


def test_watch_limit():
    path = "/api/v1/namespaces/default/configmaps?watch=1"
    ws = [S["fa"].watch(path) for _ in range(3)]
    for w in ws:
        h.eq(w.status, 200, "fa's watch")
    extra = S["fa"].watch(path)
    h.eq(extra.status, 429, "fa's fourth watch")
    h.check("watches" in extra.response.json.get("message", ""), extra.response.json)
    h.eq(S["fb"].watch(path).status, 200, "fb's watch (its own limit)")
    admin = [S["admin"].watch("/api/v1/tenants/fa/namespaces/default/configmaps?watch=1") for _ in range(4)]
    for w in admin:
        h.eq(w.status, 200, "the admin's watch (not counted)")
    ws[0].close()
    # the server notices a closed watch at its second write after the close (the first gets the
    # client's reset): an event now, then the idle newline within 10 s
    r = S["fa"].post("/api/v1/namespaces/default/configmaps",
                     {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "nudge"}})
    h.expect_status(r, 201, "a configmap all of fa's watches see")
    h.wait_until(lambda: metric(metrics(), 'ursa_fairq_tenant_watches{tenant="fa"}') == 2.0, 30,
                 "fa's closed watch given back")
    again = S["fa"].watch(path)
    h.eq(again.status, 200, "fa's watch after one closed")
    m = metrics()
    h.eq(metric(m, 'ursa_fairq_tenant_watches_rejected_total{tenant="fa"}'), 1.0, "fa's refused watch counted")
    for w in ws[1:] + [again] + admin:
        w.close()


def test_fair_queuing_off():
    api = h.ApiServer(S["etcd"], extra_args=["--fair-queuing=false"]).start()
    h.at_cleanup(api.stop)
    admin = api.admin()
    r = admin.get("/metrics")
    h.check("ursa_fairq_seats" not in r.body.decode(), "no fair queue metrics without fair queuing")
    fa = api.user_client("fa", "alice")
    ws = [fa.watch("/api/v1/namespaces/default/configmaps?watch=1") for _ in range(5)]
    h.eq([w.status for w in ws], [200] * 5, "no watch limit without fair queuing")
    for w in ws:
        w.close()


def test_small_tenants_list_is_narrow():
    """A LIST is weighed by its tenant's objects of the kind, not every tenant's: with fa's
    1,000 configmaps, fa's consistent LIST of them takes 3 seats (1 + 1,000/500) and, etcd paused,
    holds them; fb's LIST of its own configmaps takes 1 and is served from the fourth seat at once
    (weighed by the kind's 1,000-odd objects it would want 3 and wait until it timed out)."""
    api = h.ApiServer(S["etcd"], extra_args=["--tenant-seats", "4", "--seats-per-tenant", "3",
                                             "--queue-wait-seconds", "2"]).start()
    h.at_cleanup(api.stop)
    fa, fb = api.user_client("fa", "alice"), api.user_client("fb", "bob")
    ensure_configmaps(fa, 1000)
    pid = S["etcd"].members[0]["proc"].pid
    held = {}

    def hold():
        held["r"] = fa.get("/api/v1/namespaces/default/configmaps")  # consistent: waits for etcd
    os.kill(pid, signal.SIGSTOP)
    S["paused"] = True
    t = threading.Thread(target=hold)
    try:
        t.start()
        h.wait_until(lambda: metric(api_metrics(api), 'ursa_fairq_tenant_seats_in_use{level="workload",tenant="fa"}') == 3,
                     10, "fa's LIST holds 3 seats")
        t0 = time.monotonic()
        r = fb.get("/api/v1/namespaces/default/configmaps?resourceVersion=0")
        took = time.monotonic() - t0
        h.expect_status(r, 200, "fb's LIST while fa's holds 3 of 4 seats")
        h.check(took < 1.0, "fb's LIST took %.3fs" % took)
    finally:
        os.kill(pid, signal.SIGCONT)
        S["paused"] = False
    t.join(60)
    h.eq(held["r"].status, 200, "fa's LIST once etcd is back")


def server_sndbuf(port, client_port):
    """The kernel send buffer (ss's skmem tb) of the server's socket of one connection, or None."""
    rc, out, _ = h.run_cmd(["ss", "-tmnH", "state", "established", "( sport = :%d and dport = :%d )" % (port, client_port)],
                           10)
    m = re.search(r"\btb(\d+)", out)
    return int(m.group(1)) if rc == 0 and m else None


def test_wide_reply_paced_only_when_shared():
    """A LIST of more than 500 of its tenant's objects (fa's 1,000 configmaps: 3 seats) sends its
    reply through a 64 KiB send buffer (--fair-bulk-send-buffer, the kernel shows twice that) only
    when another tenant is being served: alone, fa's LIST is not paced; right after fb's GET it
    is, and /metrics counts it."""
    api = h.ApiServer(S["etcd"]).start()
    h.at_cleanup(api.stop)
    fa, fb = api.user_client("fa", "alice"), api.user_client("fb", "bob")
    ensure_configmaps(fa, 1000)
    paced = lambda: metric(api_metrics(api), "ursa_fairq_paced_replies_total")  # noqa: E731
    h.eq(paced(), 0, "nothing paced yet")
    time.sleep(1.2)  # fa's own requests above were its; nobody else asked within a second
    r = fa.get("/api/v1/namespaces/default/configmaps")
    h.check(r.status == 200 and len(r.json["items"]) >= 1000, "fa's LIST alone: %s" % r.status)
    h.eq(paced(), 0, "fa alone on the partition: its LIST not paced")
    h.expect_status(fb.get("/api/v1/namespaces/default/configmaps"), 200, "fb's LIST")
    conn = fa.connect()
    try:
        conn.request("GET", "/api/v1/namespaces/default/configmaps", headers=fa._headers(None, None, False))
        resp = conn.getresponse()
        body = resp.read()
        h.check(resp.status == 200 and len(body) > 100000, "fa's LIST right after fb's: %s" % resp.status)
        h.eq(server_sndbuf(api.port, conn.sock.getsockname()[1]), 2 * 65536, "the server's send buffer of that connection")
    finally:
        conn.close()
    h.eq(paced(), 1, "fa's LIST while fb is served: paced")


def ensure_configmaps(client, n):
    have = len(client.get("/api/v1/namespaces/default/configmaps?resourceVersion=0").json["items"])
    errs = []

    def make(lo, hi):
        for i in range(lo, hi):
            r = client.post("/api/v1/namespaces/default/configmaps",
                            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "n%04d" % i}})
            if r.status not in (201, 409):
                errs.append(r.status)
    if have < n:
        step = (n + 7) // 8
        threads = [threading.Thread(target=make, args=(k * step, min(n, (k + 1) * step))) for k in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
    h.eq(errs, [], "%d configmaps created" % n)
    h.wait_until(lambda: len(client.get("/api/v1/namespaces/default/configmaps?resourceVersion=0").json["items"]) >= n,
                 20, "the configmaps in the cache")


def api_metrics(api):
    r = api.admin().get("/metrics")
    h.expect_status(r, 200, "metrics")
    return r.body.decode()


def test_bad_flags():
    for args in (["--tenant-seats", "99"], ["--tenant-queue-length", "0"], ["--queue-wait-seconds", "0"],
                 ["--fair-queuing=maybe"]):
        rc, out, err = h.run_cmd(h.ApiServer(S["etcd"], extra_args=args).args(), 10)
        h.check(rc != 0, "%s refused: rc %s %s" % (args, rc, err))
        h.check("--" in err, "%s: the message names the flag: %r" % (args, err))


if __name__ == "__main__":
    h.run(globals())
