#!/usr/bin/python3
"""bench/capacity-model.py, the model behind docs/capacity.md (no daemons, under a second):

1. docs/capacity.md's generated section is exactly what `--markdown` prints now: the page cannot
   drift from its inputs.
2. Every input row says where it comes from: a measured, design or region-run row names a file
   and section, and every figure it quotes as written is in that file (for files of the
   repository); an assumption gives its reason.
3. The arithmetic, by hand, for a few limits of the seeds' region; the counts are the smallest
   that hold; more hosts, pods or tenants never need fewer components.

Run alone: /usr/bin/python3 tests/integration/test_capacity_model.py"""
import importlib.util
import math
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import ursa_harness as h  # noqa: E402

SCRIPT = os.path.join(h.SOURCE_DIR, "bench", "capacity-model.py")
DOC = os.path.join(h.SOURCE_DIR, "docs", "capacity.md")


def load():
    spec = importlib.util.spec_from_file_location("capacity_model", SCRIPT)
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    return m


def test_doc_is_the_scripts_output():
    p = subprocess.run(["/usr/bin/python3", SCRIPT, "--markdown"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       timeout=60)
    assert p.returncode == 0, p.stderr.decode()
    out = p.stdout.decode()
    m = load()
    with open(DOC) as f:
        doc = f.read()
    assert m.generated(doc) == out, ("docs/capacity.md is stale: run "
                                     "/usr/bin/python3 bench/capacity-model.py --update-doc docs/capacity.md")
    assert "capacity.png" in doc and os.path.exists(os.path.join(h.SOURCE_DIR, "docs", "capacity.png"))
    # the text summary names every component's count
    p = subprocess.run(["/usr/bin/python3", SCRIPT], stdout=subprocess.PIPE, timeout=60)
    text = p.stdout.decode()
    for what in ("tenant partitions:", "resource managers:", "gateway instances:", "etcd clusters:"):
        assert what in text, text


def test_every_input_has_a_source():
    m = load()
    kinds = {m.MEASURED, m.DESIGN, m.PUBLISHED, m.ASSUMPTION, m.REGION_RUN}
    number = re.compile(r"\d+(?:,\d{3})*(?:\.\d+)?")
    checked = 0
    for i in m.INPUTS:
        assert i.kind in kinds, i.key
        assert i.source and i.use and i.unit, i.key
        assert isinstance(i.value, (int, float)) and i.value > 0, i.key
        if i.kind == m.ASSUMPTION:
            assert len(i.source) > 20, (i.key, "an assumption gives its reason")
            continue
        assert i.written, (i.key, "a sourced row quotes its figure as written")
        if i.kind == m.REGION_RUN:
            assert "docs/scale.md" in i.source, i.key
        path = i.source.split(",")[0]
        if not path.startswith("docs/"):
            continue  # seeds and research notes live outside the repository
        with open(os.path.join(h.SOURCE_DIR, path)) as f:
            body = f.read()
        section = re.findall(r'"([^"]+)"', i.source)
        assert section, (i.key, "names a section")
        assert section[0].split("...")[0].strip() in body, (i.key, section[0])
        for n in number.findall(i.written):
            assert n in body, (i.key, n, "not in", path)
        checked += 1
    assert checked >= 30, checked
    region_run = [i.key for i in m.INPUTS if i.kind == m.REGION_RUN]
    assert len(region_run) >= 4, region_run


def test_arithmetic_by_hand():
    m = load()
    v = m.V
    r = m.model()
    n = r["tp"]
    assert n == 47 and r["rm"] == 3 and r["gw"] == 2 and r["etcd"] == n + r["rm"] + 1, (n, r["rm"], r["gw"])
    lims = {x.name: x for x in r["tp_limits"]}
    # restart: every object of the TP listed at 11.0 s per 150,000
    objects = 9_000_000 / n * 2.0 + 1_000_000 / n * 20
    assert math.isclose(lims["TP restart to ready"].used, objects * 11.0 / 150_000, rel_tol=1e-9)
    # etcd writes: 2,000 pods/s over n TPs, 6 writes each
    assert math.isclose(lims["TP etcd writes"].used, 2_000 / n * 6, rel_tol=1e-9)
    # watch connections per API server: every host's kubelet + a watch per tenant, over 3 API servers
    assert math.isclose(lims["TP watch connections"].used, (300_000 + 1_000_000 / n) / 3, rel_tol=1e-9)
    # the connection walk: (512 - 253) µs over 10,000 connections = 25.9 ns per connection and resume
    assert math.isclose(m.walk_ns_per_conn(v), 25.9, rel_tol=1e-9)
    # RM: 100,000 nodes each: 10,000 renewals/s + 333.3 status writes/s + reservations 2,000 x 335/5,000 / 3
    rm = {x.name: x for x in r["rm_limits"]}
    assert math.isclose(rm["RM etcd writes"].used, 10_000 + 100_000 / 300 + 2_000 * 0.067 / 3, rel_tol=1e-9)
    assert math.isclose(rm["RM host CPU"].cap, 32 * 0.5 * 0.7, rel_tol=1e-9)
    # etcd leader's share of the RM host: its writes at 160 µs each
    assert "etcd leader {:.2f}".format(rm["RM etcd writes"].used * 160 / 1e6) in rm["RM host CPU"].what
    # gateway memory: the whole map (78.7 MB per million) + 500,000 watches x 46 KiB
    gw = {x.name: x for x in r["gw_limits"]}
    want = (78.7e6 + 500_000 * 46 * 1024) / 2 ** 30
    assert math.isclose(gw["gateway host memory"].used, want, rel_tol=1e-9)
    assert math.isclose(gw["gateway watch descriptors"].used, 1_000_000, rel_tol=1e-9)


def test_counts_are_the_smallest_and_grow_with_the_region():
    m = load()
    r = m.model()
    v = m.V
    below = m.tp_limits(v, r["hosts"], r["pods"], r["tenants"], r["tp"] - 1)
    assert any(x.util > 1 for x in below) and all(x.util <= 1 for x in r["tp_limits"])
    assert max(below, key=lambda x: x.util).name == r["tp_bind"]
    assert all(x.util <= 1 for x in r["rm_limits"]) and all(x.util <= 1 for x in r["gw_limits"])
    prev = None
    for f in (0.1, 0.5, 1, 2, 4):
        c = m.model(hosts=300_000 * f, pods=9_000_000 * f, tenants=1_000_000 * f)
        assert c["tp"] is not None, f
        if prev:
            assert c["tp"] >= prev["tp"] and c["rm"] >= prev["rm"] and c["gw"] >= prev["gw"], (f, c, prev)
        prev = c
    # hosts alone: the TP count never falls, the RM count grows, and the TPs stop somewhere
    a, b = m.model(hosts=600_000), m.model(hosts=3_000_000)
    assert a["tp"] >= r["tp"] and a["rm"] >= r["rm"]
    assert b["tp"] is None and b["tp_bind"].startswith("no count suffices")
    # an override changes what binds: without the restart budget, fewer TPs
    v2 = dict(v)
    v2["restart_budget_s"] = math.inf
    assert m.model(v=v2)["tp"] < r["tp"]


h.run(globals(), per_test_timeout=60)
