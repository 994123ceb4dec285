#!/usr/bin/python3
"""Smoke test of bench/crd_bench.py --smoke: creates of a CronTab custom resource against ConfigMaps
of the same body size (2 rounds, 8 clients, straight at one partition), a few CRDs across 4
tenants (RSS and threads before and after, all Established) and discovery through a gateway and
at the partition, with and without If-None-Match. Checks the FIGURES line: every figure present
and plausible, every revalidation a 304 (the bench itself fails on any other status).

Run alone: URSA_BUILD_DIR=build /usr/bin/python3 tests/integration/test_crd_bench_smoke.py"""
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import ursa_harness as h  # noqa: E402

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench", "crd_bench.py")


def figures(out):
    lines = [ln for ln in out.splitlines() if ln.startswith("FIGURES ")]
    assert len(lines) == 1, out[-3000:]
    return json.loads(lines[0][len("FIGURES "):])


def test_smoke_run_prints_every_figure():
    env = dict(os.environ, URSA_BUILD_DIR=h.BUILD_DIR)
    p = subprocess.run(["/usr/bin/python3", SCRIPT, "--smoke"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       env=env, timeout=170)
    out, err = p.stdout.decode(), p.stderr.decode()
    assert p.returncode == 0, (p.returncode, out[-3000:], err[-4000:])
    f = figures(out)
    assert f["body_bytes"] == f["cm_body_bytes"] and f["body_bytes"] > 400, f
    c = f["creates"]["8"]
    assert len(c["cr_per_s"]) == 2 and len(c["cm_per_s"]) == 2, c
    assert c["cr_median"] > 0 and c["cm_median"] > 0 and 0 < c["ratio"] < 100, c
    assert 0 < c["cr_p50_ms"] <= c["cr_p99_ms"] and 0 < c["cm_p50_ms"] <= c["cm_p99_ms"], c
    m = f["memory"]
    assert m["crds"] == 12 and m["tenants"] == 4, m
    assert m["rss_after_kib"] > m["rss_before_kib"] > 1000, m
    # one etcd watch feeds every CRD's cache (wcache_mux): no thread per CRD
    assert m["threads_after"] <= m["threads_before"] + 2, m
    assert 0 < m["create_s"] <= m["established_s"] < 120, m
    rows = f["discovery"]
    # 2 tenants x 2 hops x 4 requests x with/without If-None-Match
    assert len(rows) == 32, len(rows)
    assert {r["via"] for r in rows} == {"gateway", "partition"}, rows
    assert {r["what"] for r in rows} >= {"/apis aggregated", "/apis legacy", "/openapi/v3"}, rows
    for r in rows:
        assert r["bytes"] > 100 and 0 < r["p50_ms"] <= r["p99_ms"] <= r["max_ms"], r
    assert "| **RSS per served CRD** |" in out and "(of medians)" in out, out[-3000:]


h.run(globals(), per_test_timeout=200)
