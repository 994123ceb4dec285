#!/usr/bin/python3
"""Unit test of bench/region-report.py (the region simulation's report, issue 21): its percentiles,
10 s windows, SLO-violation durations and fault pairing on hand-made values, then the whole script
on a synthetic run directory written here (a fault that makes creates slow for one window, pods
with known startup latencies, one 429), on a directory with header-only files, and on one with a
file missing.

Run alone: /usr/bin/python3 tests/unit/bench/test_region_report.py"""
import importlib.util
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "lib"))
import ursa_harness as h  # noqa: E402

SCRIPT = os.path.join(HERE, "..", "..", "..", "bench", "region-report.py")
_spec = importlib.util.spec_from_file_location("region_report", SCRIPT)
rr = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(rr)

T0 = 1_700_000_000_000   # a whole multiple of 10 s, so window starts are T0 + k * 10 s
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def tmpdir():
    return h.make_tmpdir("region-report")


def test_percentiles_are_nearest_rank():
    vals = list(range(100, 0, -1))          # 100..1, unsorted on purpose
    assert rr.percentile(vals, 50) == 50
    assert rr.percentile(vals, 90) == 90
    assert rr.percentile(vals, 99) == 99
    assert rr.percentile(vals, 100) == 100
    assert rr.percentile([7], 99) == 7
    assert rr.percentile([], 50) is None
    assert rr.percentiles([], (50, 99)) == [None, None]
    # 10 values: p99 is the largest, p90 the 9th, p50 the 5th
    assert rr.percentiles(list(range(1, 11)), (50, 90, 99)) == [5, 9, 10]
    assert rr.percentiles([1, 2, 3], (1,)) == [1]


def test_windows_group_by_ten_seconds():
    pts = [(T0 + 1000, 1.0), (T0 + 9999, 3.0), (T0 + 10_000, 10.0), (T0 + 35_000, 4.0)]
    rows = rr.windowed_percentiles(pts, T0, (50, 99))
    assert rows == [(T0, 2, [1.0, 3.0]), (T0 + 10_000, 1, [10.0, 10.0]), (T0 + 30_000, 1, [4.0, 4.0])], rows
    assert rr.window_of(T0 + 19_999, T0) == 1 and rr.window_of(T0 + 20_000, T0) == 2


def test_violations_and_time_outside():
    groups = {
        ("create", "pods"): [(T0 + 500, 100.0), (T0 + 12_000, 1500.0), (T0 + 13_000, 200.0)],
        ("update", "deployments"): [(T0 + 25_000, 900.0), (T0 + 41_000, 5000.0)],
    }
    bad = rr.violating_windows(groups, lambda k: 1000.0, T0)
    # window 10-20 s: create p99 of {1500, 200} is 1500 > 1000; window 40-50 s: update 5000
    assert bad == [T0 + 10_000, T0 + 40_000], bad
    assert rr.time_outside(bad, T0, T0 + 60_000) == 20_000
    assert rr.time_outside(bad, T0 + 15_000, T0 + 42_000) == 5000 + 2000
    assert rr.time_outside(bad, T0 + 20_000, T0 + 40_000) == 0
    # per-key thresholds: reads of scope cluster may take 30 s
    reads = {("pods", "cluster"): [(T0, 20_000.0)], ("pods", "resource"): [(T0 + 10_000, 1200.0)]}
    bad = rr.violating_windows(reads, lambda k: rr.read_slo_s(k[1]) * 1000, T0)
    assert bad == [T0 + 10_000], bad


def test_fault_pairing():
    ev = [
        (T0 + 21_000, "tp-apiserver", "tp-1-apiserver-a", "200", "restart"),
        (T0 + 20_000, "tp-apiserver", "tp-1-apiserver-a", "100", "kill"),
        (T0 + 26_000, "tp-apiserver", "tp-1-apiserver-a", "200", "healed"),
        (T0 + 40_000, "etcd", "tp-1-etcd-2", "300", "kill"),
        (T0 + 70_000, "tp-apiserver", "tp-1-apiserver-a", "400", "kill"),
        (T0 + 72_000, "tp-apiserver", "tp-1-apiserver-a", "500", "restart"),
        (T0 + 80_000, "gateway", "gateway-1", "600", "died"),
        (T0 + 81_000, "gateway", "gateway-1", "700", "restart"),
        (T0 + 85_000, "scheduler", "tp-1-scheduler", "0", "skipped"),
    ]
    f = rr.pair_faults(ev, end_ms=T0 + 90_000)
    assert [x["target"] for x in f] == ["tp-1-apiserver-a", "tp-1-etcd-2", "tp-1-apiserver-a", "gateway-1"], f
    assert [x["event"] for x in f] == ["kill", "kill", "kill", "died"], f
    assert f[0]["restart_ms"] == 1000 and f[0]["healed_ms"] == 6000 and f[0]["until"] == T0 + 40_000, f[0]
    assert f[1]["restart_ms"] is None and f[1]["healed_ms"] is None and f[1]["until"] == T0 + 70_000, f[1]
    # the second kill of the same API server is paired with its own restart, not the first one's
    assert f[2]["restart_ms"] == 2000 and f[2]["healed_ms"] is None and f[2]["until"] == T0 + 80_000, f[2]
    # a death no fault caused is charged like a kill; a skipped fault is not a fault
    assert f[3]["restart_ms"] == 1000 and f[3]["until"] == T0 + 90_000, f[3]


def verify_json(**over):
    """A verify.json as `ursa-region verify` writes it (bench/region/verify.c)."""
    v = {"writes_acknowledged": 700, "unreadable_lines": 0, "unknown_outcome": 0, "objects_checked": 650,
         "ok": 650, "missing": 0, "mismatched": 0, "not_deleted": 0, "unchecked": 0, "lost": 0,
         "pods": {"deployments_checked": 20, "running": 60, "over_replicas": 0, "short": 0, "wrong_image": 0,
                  "node_changes": 0, "namespaces_unlisted": 0, "node_change_examples": None},
         "converged": True, "pass": True, "seconds": 1.5, "examples": []}
    for k, val in over.items():
        if k in v["pods"]:
            v["pods"][k] = val
        else:
            v[k] = val
    return v


def test_verify_summary_finds_nested_counts():
    s = rr.verify_summary(verify_json())
    assert s == {"checked": 650, "acknowledged": 700, "missing": 0, "mismatched": 0, "run_twice": 0, "pass": True,
                 "problems": {}}, s
    s = rr.verify_summary(verify_json(missing=2, lost=2, node_changes=1, over_replicas=3, **{"pass": False}))
    assert s["missing"] == 2 and s["run_twice"] == 1 and s["pass"] is False, s
    assert s["problems"] == {"missing": 2, "node_changes": 1, "over_replicas": 3}, s
    s = rr.verify_summary({"writes_checked": 7, "writes_missing": 2, "pods_run_twice": 1})
    assert s["checked"] == 7 and s["missing"] == 2 and s["run_twice"] == 1 and s["mismatched"] is None, s
    assert s["pass"] is None, s


def write_tsv(path, header, rows):
    with open(path, "w") as f:
        f.write("\t".join(header) + "\n")
        for r in rows:
            f.write("\t".join("" if c is None else str(c) for c in r) + "\n")


def synthetic_run(d):
    """60 s of a region: creates of pods take 50 ms, except 2 s in the window after the API server
    kill at +20 s; gets 5 ms; cluster lists 3 s (within their 30 s SLO); one 429 and one transport
    error after the kill; 100 pods with startup 1..100 * 30 ms (p99 2.97 s); one pod never Running."""
    write_tsv(os.path.join(d, "faults.tsv"), rr.TSV_FILES["faults.tsv"], [
        (T0 + 20_000, "tp-apiserver", "tp-1-apiserver-a", 111, "kill"),
        (T0 + 21_000, "tp-apiserver", "tp-1-apiserver-a", 222, "restart"),
        (T0 + 24_000, "tp-apiserver", "tp-1-apiserver-a", 222, "healed"),
        (T0 + 50_000, "scheduler", "tp-1-scheduler", 0, "skipped"),
    ])
    samples = []
    for i in range(13):
        t = T0 + i * 5000
        samples.append((t, "tp-1-apiserver-a", "tp-apiserver", 50 + i, 100_000 + i * 1000))
        samples.append((t, "tp-1-etcd-1", "etcd", 20, 200_000))
        samples.append((t, "hollow-1", "hollow-kubelet", 10, 300_000 if i != 6 else 350_000))
    write_tsv(os.path.join(d, "samples.tsv"), rr.TSV_FILES["samples.tsv"], samples)
    write_tsv(os.path.join(d, "etcd.tsv"), rr.TSV_FILES["etcd.tsv"],
              [(T0 + i * 5000, "tp-1", "m%d" % m, 1_048_576 * (1 + i)) for i in range(13) for m in (1, 2, 3)])
    write_tsv(os.path.join(d, "nodes.tsv"), rr.TSV_FILES["nodes.tsv"],
              [(T0 + i * 5000, 500 if i != 5 else 400, 500) for i in range(13)])
    calls = []
    for i in range(600):                      # one call every 100 ms
        t = T0 + i * 100
        slow = T0 + 20_000 <= t < T0 + 30_000
        calls.append((t, "create", "pods", "resource", 2_000_000 if slow else 50_000, 201))
        calls.append((t, "get", "configmaps", "resource", 5_000, 200))
        if i % 10 == 0:
            calls.append((t, "list", "pods", "cluster", 3_000_000, 200))
            calls.append((t, "watch-start", "pods", "namespace", 1_000, 200))
    calls.append((T0 + 20_500, "create", "pods", "resource", 100, 429))
    calls.append((T0 + 20_600, "update", "deployments", "resource", 0, 0))
    write_tsv(os.path.join(d, "calls.tsv"), rr.TSV_FILES["calls.tsv"], calls)
    pods = [("t-00001", "default", "p%d" % i, "u%d" % i, T0 + i * 500, T0 + i * 500 + i * 30, "node-%d" % i)
            for i in range(1, 101)]
    pods.append(("t-00002", "default", "lost", "u0", T0 + 100, None, None))
    write_tsv(os.path.join(d, "pods.tsv"), rr.TSV_FILES["pods.tsv"], pods)
    json.dump({"settings": {"nodes": 500, "tenants": 100, "quick": True}, "machine": {"cpus": 2},
               "start_ms": T0 - 30_000, "exit_status": 0,
               "phases": [{"name": "start", "start_ms": T0 - 30_000, "end_ms": T0 - 5000, "seconds": 25.0,
                           "status": "ok"}],
               "limits": ["the fault schedule was cut short: the load ended first"]},
              open(os.path.join(d, "run.json"), "w"))
    json.dump({"pods_created": 100, "rate": 2.0}, open(os.path.join(d, "load.json"), "w"))
    json.dump(verify_json(), open(os.path.join(d, "verify.json"), "w"))


def run_script(d):
    return h.run_cmd(["/usr/bin/python3", SCRIPT, d], timeout=120)


def assert_pngs(d):
    for name in rr.PLOTS:
        with open(os.path.join(d, name), "rb") as f:
            data = f.read()
        assert data.startswith(PNG_MAGIC) and len(data) > 2000, (name, len(data))


def test_report_of_a_synthetic_run():
    d = tmpdir()
    synthetic_run(d)
    rc, out, err = run_script(d)
    assert rc == 0, (rc, out, err)
    assert_pngs(d)
    md = open(os.path.join(d, "report.md")).read()
    # the SLO tables: creates miss (p99 2 s; the 429 counts, the transport error does not), gets
    # and cluster lists meet theirs, watches are left out
    assert "| create | pods | 601 | 0.050 s | 2.000 s | 2.000 s | **no** |" in md, md
    assert "| configmaps | resource | get | 600 | 0.005 s | 0.005 s | 0.005 s | 1 s | yes |" in md, md
    assert "| pods | cluster | list | 60 | 3.000 s | 3.000 s | 3.000 s | 30 s | yes |" in md, md
    assert "watch-start 60" in md, md
    assert "- Mutating API calls: worst p99 2.000 s (create pods): **missed** (SLO 1 s)" in md, md
    assert "- Read-only, scope resource: worst p99 0.005 s (configmaps, resource): met" in md, md
    assert "- Read-only, scope namespace and cluster: worst p99 3.000 s (pods, cluster): met" in md, md
    assert "- Pod startup: p50 1.500 s, p99 2.970 s over 100 pods: SLO 5 s met, goal 2 s missed" in md, md
    # pod startup: 100 Running with i * 30 ms, one never
    assert "| 100 | 1 | 1.500 s | 2.700 s | 2.970 s | 3.000 s | yes | **no** |" in md, md
    # errors by code, and the fault's row: restarted after 1 s, healed after 4 s, creates outside
    # their SLO for the one window 20-30 s, the 429 and the transport error charged to it
    assert "| 0 | 1 |" in md and "| 429 | 1 |" in md and "429 (Too Many Requests): 1." in md, md
    row = [ln for ln in md.splitlines() if ln.startswith("| tp-apiserver | tp-1-apiserver-a | +")]
    assert row == [], row
    row = [ln for ln in md.splitlines() if ln.startswith("| tp-apiserver | tp-1-apiserver-a | kill -9 |")]
    assert row == ["| tp-apiserver | tp-1-apiserver-a | kill -9 | +20 s | 1.000 s | 4.000 s | 40 s | 10 s | 0 s "
                   "| 0 s | 0: 1, 429: 1 |"], row
    assert "Skipped (the target was not running): scheduler tp-1-scheduler at +50 s." in md, md
    # run.json: settings, machine, phases, limits
    assert "| nodes | 500 |" in md and "Machine: cpus 2." in md and "| start | 25 | ok |" in md, md
    assert "What limited the run: the fault schedule was cut short: the load ended first." in md, md
    assert "| exit_status | 0 |" in md, md
    assert "Nothing lost, nothing run twice." in md and "- verify: pass." in md, md
    assert "| tp-apiserver | tp-1-apiserver-a | 13 | 56 % | 62 % | 109.4 MiB | 109.4 MiB |" in md, md
    assert "| tp-1 | m2 | 1.0 MiB | 13.0 MiB | 13.0 MiB |" in md, md
    assert "lowest 400" in md, md
    for name in rr.PLOTS:
        assert "](%s)" % name in md, name


def test_failed_verify_is_flagged():
    d = tmpdir()
    synthetic_run(d)
    json.dump(verify_json(objects_checked=10, missing=1, lost=1, node_changes=2, **{"pass": False}),
              open(os.path.join(d, "verify.json"), "w"))
    rc, out, err = run_script(d)
    assert rc == 0, (rc, out, err)
    md = open(os.path.join(d, "report.md")).read()
    assert "**FAILED**: 1 lost or changed writes, 2 pods run twice, 10 objects checked." in md, md
    assert "- verify: **did not pass**; missing 1, node_changes 2." in md, md


def test_header_only_files_give_a_report_that_says_so():
    d = tmpdir()
    for name, header in rr.TSV_FILES.items():
        write_tsv(os.path.join(d, name), header, [])
    for name in rr.JSON_FILES:
        open(os.path.join(d, name), "w").write("{}\n")
    rc, out, err = run_script(d)
    assert rc == 0, (rc, out, err)
    assert_pngs(d)
    md = open(os.path.join(d, "report.md")).read()
    assert "**No data** in: calls.tsv, pods.tsv, samples.tsv, faults.tsv, nodes.tsv, etcd.tsv" in md, md
    assert "No data: no mutating calls" in md and "No faults in faults.tsv." in md, md
    assert "verify.json does not state" in md, md


def test_missing_file_exits_2_naming_it():
    d = tmpdir()
    synthetic_run(d)
    os.unlink(os.path.join(d, "verify.json"))
    os.unlink(os.path.join(d, "nodes.tsv"))
    rc, out, err = run_script(d)
    assert rc == 2, (rc, out, err)
    assert "nodes.tsv" in err and "verify.json" in err and "missing" in err, err
    assert not os.path.exists(os.path.join(d, "report.md"))
    rc, out, err = h.run_cmd(["/usr/bin/python3", SCRIPT, os.path.join(d, "nonexistent")])
    assert rc == 2 and "nonexistent" in err, (rc, err)
    # a line that does not parse is a different error (1), naming the file and line
    synthetic_run(d)
    with open(os.path.join(d, "calls.tsv"), "a") as f:
        f.write("x\tcreate\tpods\tresource\t5\t201\n")
    rc, out, err = run_script(d)
    assert rc == 1 and "calls.tsv" in err, (rc, err)


h.run(globals(), per_test_timeout=120)
