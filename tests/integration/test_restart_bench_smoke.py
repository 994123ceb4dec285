#!/usr/bin/python3
"""Smoke test of bench/run-restart.sh at toy size: a partition with 300 pods bound to 10 hollow nodes
(2 kubelet processes) and 100 configmaps, its scheduler and controller manager, a steady create load,
kill -9 of the API server and an immediate restart. Checks the FIGURES line on stderr: the server came
back, creates succeeded again after the kill, the informers reconnected (watches opened on the new
server), the per-second CPU and counter samples are there, and the markdown table was printed. The
--start mode (no informers, A/B rounds) is run at toy size as well.

Run alone: URSA_BUILD_DIR=build /usr/bin/python3 tests/integration/test_restart_bench_smoke.py"""
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import ursa_harness as h  # noqa: E402

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench", "run-restart.sh")


def figures(err):
    lines = [ln for ln in err.splitlines() if ln.startswith("FIGURES ")]
    assert len(lines) == 1, err[-3000:]
    return json.loads(lines[0][len("FIGURES "):])


def test_smoke_run_kills_restarts_and_reports():
    env = dict(os.environ, PODS="300", CONFIGMAPS="100", NODES="10", KUBELETS="2", LEASE_SECONDS="8",
               BEFORE="4", AFTER="20", RATE="50", LOAD_CLIENTS="4", SETTLE_TIMEOUT="60", QUIET_SECONDS="5")
    p = subprocess.run([SCRIPT, h.BUILD_DIR], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, timeout=170)
    out, err = p.stdout.decode(), p.stderr.decode()
    assert p.returncode == 0, (p.returncode, out[-3000:], err[-4000:])
    f = figures(err)
    assert f["fill"]["ok"] == 400 and f["fill"]["failed"] == 0, f["fill"]
    assert len(f["rounds"]) == 1, f
    r = f["rounds"][0]
    assert r["side"] == "A" and r["before_ok"] > 0 and r["before_err"] == 0, r
    assert 0 < r["before_p50"] <= r["before_p99"], r
    assert r["ready"] is not None and 0 < r["ready"] < 8, r
    assert r["first_ok"] is not None and 0 < r["first_ok"] < 8, r
    # the scheduler, controller manager and kubelets watch the new server, whether they relisted or resumed
    # (within AFTER: 8 s was too short twice on a loaded machine: an informer that failed while the server
    # was down retries after 1, 2, 4, 8 s, ...; src/common/client/informer.c)
    assert r["watches"] >= 3, r
    assert r["etcd_30"] is not None and r["etcd_30"] > 0 and r["tp_30"] is not None and r["tp_30"] > 0, r
    assert "| s after kill | creates ok |" in out and "### Restart of a tenant partition" in out, out[-3000:]


def test_start_mode_alternates_and_reports_cpu_to_ready():
    """--start: no informers, A and B alternating on one data set (here the same build twice), the
    new server's CPU-seconds and etcd's until ready reported per round."""
    env = dict(os.environ, PODS="300", CONFIGMAPS="100", NODES="10", KUBELETS="2", RATE="50", LOAD_CLIENTS="4",
               AFTER="6", BIN_B=h.BUILD_DIR)
    p = subprocess.run([SCRIPT, h.BUILD_DIR, "--start"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                       timeout=170)
    out, err = p.stdout.decode(), p.stderr.decode()
    assert p.returncode == 0, (p.returncode, out[-3000:], err[-4000:])
    f = figures(err)
    assert [r["side"] for r in f["rounds"]] == ["A", "B"], f
    for r in f["rounds"]:
        assert r["ready"] is not None and 0 < r["ready"] < 8, r
        assert r["ready_cpu"] is not None and r["ready_cpu"] > 0, r
        assert r["etcd_ready_cpu"] is not None and r["etcd_ready_cpu"] >= 0, r
        assert r["first_ok"] is not None and r["before_ok"] > 0, r
        assert r["watches"] == 0 and r["lists"] == 0, r  # nothing informs: no watch, no relist
    assert "INFORMERS=0" in out and "| API server CPU-s until ready |" in out, out[-3000:]
    assert "hollow nodes registered" not in err, err[-3000:]


h.run(globals(), per_test_timeout=200)
