#!/usr/bin/python3
"""Streams through the hops (issue 19): N concurrent exec-like sessions through one gateway and
one tenant partition, each streaming 1 KB/s both ways, and the throughput of one session
against a direct copy.

The region is the one tests/integration/test_streams_proxy.py builds (etcd, resource manager,
tenant partition, a gateway with identity assertions) with its fake kubelet at the end: a TLS
server that answers the upgrade with 101 and then echoes (or, for the throughput run, counts
what arrives). So what is measured is the gateway's and the partition's share: authentication,
authorization, the dial of the next hop and the two upgrade tunnels (TLS in and out at each),
not a container runtime.

Usage: URSA_BUILD_DIR=build /usr/bin/python3 bench/streams_bench.py [--sessions 1000] [--window 30]
       [--mib 256]
Prints one line per figure (markdown table rows for docs/benchmarks.md)."""

import argparse
import asyncio
import os
import resource
import socket
import ssl
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "lib"))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "integration"))
import ursa_harness as h  # noqa: E402
import test_streams_proxy as t  # noqa: E402

TICK = os.sysconf("SC_CLK_TCK")


def cpu_s(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def rss_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        for ln in f:
            if ln.startswith("VmRSS:"):
                return int(ln.split()[1])
    return 0


def upgrade_request(path, token):
    return ("GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer %s\r\nConnection: Upgrade\r\n"
            "Upgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
            "Sec-WebSocket-Protocol: v5.channel.k8s.io\r\n\r\n" % (path, token)).encode()


class Sessions:
    def __init__(self, n, port, token, ca):
        self.n, self.port, self.token, self.ca = n, port, token, ca
        self.open = 0
        self.failed = 0
        self.retried = 0
        self.echoed = 0
        self.stop = False
        self.all_open = None

    async def one(self, i, sem):
        ctx = ssl.create_default_context(cafile=self.ca)
        async with sem:
            for attempt in range(10):
                try:
                    r, w = await asyncio.wait_for(asyncio.open_connection(
                        "127.0.0.1", self.port, ssl=ctx, server_hostname="127.0.0.1"), 60)
                    w.write(upgrade_request(t.exec_path("web", "command=cat&stdin=true&stdout=true&s=%d" % i),
                                            self.token))
                    head = await asyncio.wait_for(r.readuntil(b"\r\n\r\n"), 60)
                    if b" 429 " in head.split(b"\r\n", 1)[0]:  # the gateway's per-tenant rate limit
                        self.retried += 1
                        w.close()
                        await asyncio.sleep(1)
                        continue
                    if b" 101 " not in head.split(b"\r\n", 1)[0]:
                        raise RuntimeError(head[:200])
                    await asyncio.wait_for(r.readexactly(5), 60)
                    break
                except Exception as e:  # noqa: BLE001 (counted and reported)
                    self.failed += 1
                    if self.failed < 4:
                        print("session %d failed: %r" % (i, e), file=sys.stderr)
                    return
            else:
                self.failed += 1
                return
        self.open += 1
        if self.open == self.n:
            self.all_open.set()
        payload = b"k" * 1024
        next_at = time.monotonic()
        try:
            while not self.stop:
                w.write(payload)
                await w.drain()
                await r.readexactly(len(payload))
                self.echoed += len(payload)
                next_at += 1.0
                await asyncio.sleep(max(0.0, next_at - time.monotonic()))
        except Exception:  # noqa: BLE001
            self.failed += 1
        w.close()

    async def run(self, measure):
        self.all_open = asyncio.Event()
        sem = asyncio.Semaphore(32)  # sessions being opened at once
        tasks = [asyncio.create_task(self.one(i, sem)) for i in range(self.n)]
        t0 = time.monotonic()
        while not self.all_open.is_set() and self.open + self.failed < self.n:
            await asyncio.sleep(0.5)
        opened_in = time.monotonic() - t0
        await asyncio.sleep(3)  # steady state
        result = await asyncio.get_running_loop().run_in_executor(None, measure)
        self.stop = True
        await asyncio.gather(*tasks, return_exceptions=True)
        return opened_in, result


def sink_copy(sock, mib):
    block = b"\0" * (1 << 16)
    t0 = time.monotonic()
    for _ in range(mib * 16):
        sock.sendall(block)
    got = b""
    while not got.endswith(b"\n"):
        chunk = sock.recv(64)
        if not chunk:
            break
        got += chunk
    dt = time.monotonic() - t0
    if int(got or b"0") != mib << 20:
        raise RuntimeError("sink counted %r, want %d" % (got, mib << 20))
    return (mib / dt), dt


def throughput(mib, gw_port, kubelet_port, token, ca):
    t.S["kubelet"].sink_total = mib << 20
    rows = []
    # plain TCP: a Python sink on loopback
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)

    def plain_sink():
        c, _ = srv.accept()
        n = 0
        while n < mib << 20:
            d = c.recv(1 << 20)
            if not d:
                break
            n += len(d)
        c.sendall(b"%d\n" % n)
        c.close()
    threading.Thread(target=plain_sink, daemon=True).start()
    s = socket.create_connection(srv.getsockname())
    rows.append(("direct TCP copy (no TLS)",) + sink_copy(s, mib))
    s.close()
    ctx = ssl.create_default_context(cafile=ca)
    for what, port in (("direct to the (fake) kubelet, one TLS hop", kubelet_port),
                       ("through gateway + partition tunnels (3 TLS hops)", gw_port)):
        s = ctx.wrap_socket(socket.create_connection(("127.0.0.1", port)), server_hostname="127.0.0.1")
        s.sendall(upgrade_request(t.exec_path("web", "command=sink"), token)
                  if port == gw_port else upgrade_request("/exec/default/web/main?tenant=acme&command=sink", token))
        head = b""
        while b"\r\n\r\n" not in head:
            head += s.recv(1)
        if b" 101 " not in head:
            raise RuntimeError(head)
        rows.append((what,) + sink_copy(s, mib))
        s.close()
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sessions", type=int, default=1000)
    ap.add_argument("--window", type=int, default=30)
    ap.add_argument("--mib", type=int, default=256)
    a = ap.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    try:
        t.setup()
        gw_pid, tp_pid = t.S["gw"].pid, t.S["tp"].proc.pid
        port, token, ca = t.S["gw_port"], t.S["alice"], t.S["rm"].ca_file
        time.sleep(2)
        base = {p: (rss_kib(p), cpu_s(p)) for p in (gw_pid, tp_pid)}
        idle0 = {p: cpu_s(p) for p in (gw_pid, tp_pid)}
        time.sleep(a.window / 3)
        idle = {p: (cpu_s(p) - idle0[p]) / (a.window / 3) for p in (gw_pid, tp_pid)}
        sess = Sessions(a.sessions, port, token, ca)

        def measure():
            c0 = {p: cpu_s(p) for p in (gw_pid, tp_pid)}
            e0 = sess.echoed
            t0 = time.monotonic()
            time.sleep(a.window)
            dt = time.monotonic() - t0
            return ({p: (cpu_s(p) - c0[p]) / dt for p in (gw_pid, tp_pid)},
                    {p: rss_kib(p) for p in (gw_pid, tp_pid)}, (sess.echoed - e0) / dt)
        opened_in, (cpu, rss, echo_rate) = asyncio.run(sess.run(measure))
        n = sess.open
        print("sessions open: %d of %d (failed %d, retried after 429: %d), opened in %.1f s, echo %.0f KB/s "
              "during the window" % (n, a.sessions, sess.failed, sess.retried, opened_in, echo_rate / 1024))
        print("| Process | idle CPU | CPU with %d sessions | CPU per session | RSS before | RSS with sessions "
              "| RSS per session |" % n)
        print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
        for name, p in (("gateway", gw_pid), ("tenant partition", tp_pid)):
            per_cpu = (cpu[p] - idle[p]) / max(n, 1)
            per_rss = (rss[p] - base[p][0]) / max(n, 1)
            print("| %s | %.1f %% | %.1f %% | %.3f %% | %.1f MiB | %.1f MiB | %.1f KiB |"
                  % (name, idle[p] * 100, cpu[p] * 100, per_cpu * 100, base[p][0] / 1024, rss[p] / 1024, per_rss))
        time.sleep(3)
        rows = throughput(a.mib, port, t.S["kubelet"].port, token, ca)
        print("\n| One session, %d MiB | MiB/s | seconds | share of direct TCP |" % a.mib)
        print("| --- | ---: | ---: | ---: |")
        for what, rate, dt in rows:
            print("| %s | %.0f | %.2f | %.2f |" % (what, rate, dt, rate / rows[0][1]))
    finally:
        t.teardown()
        h.cleanup()


if __name__ == "__main__":
    main()
