"""Smoke test of bench/run-workloads.sh (SMOKE=1): its own region (gateway, a tenant partition with
its controller manager and scheduler, a resource manager with 4 hollow nodes), 5 CronJobs for one
minute (the controller manager's cronjob clock shifted so the minute comes soon), a Job burst of
5 x 2 pods whose `sleep 1` containers exit on the hollow runtime, and a Deployment burst of 5 x 2.
Checks the script's RESULT lines: every job created for the measured minute and Complete within
it, every burst finished without create errors, the controller manager's CPU and RSS sampled.

Run alone: URSA_BUILD_DIR=build /usr/bin/python3 tests/integration/test_bench_workloads.py"""
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import ursa_harness as h  # noqa: E402

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench", "run-workloads.sh")


def results(out):
    rs = {}
    for ln in out.splitlines():
        if ln.startswith("RESULT "):
            r = json.loads(ln[len("RESULT "):])
            rs.setdefault(r["phase"], []).append(r)
    return rs


def test_smoke_run_reports_every_phase():
    env = dict(os.environ, SMOKE="1")
    p = subprocess.run(["bash", SCRIPT, h.BUILD_DIR], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                       timeout=400)
    out, err = p.stdout.decode(), p.stderr.decode()
    assert p.returncode == 0, (p.returncode, out, err[-4000:])
    rs = results(out)
    assert [r["create_errors"] for r in rs["cron-create"]] == [0], (out, err[-3000:])
    minute = rs["cron-minute"][0]
    assert minute["created"] == 5 and minute["complete_within_minute"] == 5, (minute, err[-3000:])
    assert 0 <= minute["lag_p50_s"] <= minute["lag_max_s"] < 20, minute
    assert minute["cm_rss_peak_mib"] > 1 and minute["cm_cpu_s"] >= 0, minute
    for kind in ("job-burst", "deployment-burst"):
        (b,) = rs[kind]
        assert b["create_errors"] == 0 and b["objects"] == 5 and b["pods"] == 10, b
        assert b["done"] == 5 and b["all_done_s"] is not None and b["all_done_s"] < 120, (b, err[-3000:])
        assert b["cm_rss_end_mib"] > 1, b
    # the hollow runtime's `sleep 1` must take about a second: a job cannot be Complete at once
    assert rs["job-burst"][0]["all_done_s"] >= 1.0, rs["job-burst"]
    s = rs["bursts-summary"][0]
    assert s["ratio_job_over_deployment"] > 0, s


h.run(globals(), per_test_timeout=420)
