#!/usr/bin/python3
"""Smoke test of the region simulation (issue 21): `bench/run-region.sh --quick` (1 tenant partition
x 1 resource manager, 500 hollow nodes, 100 tenants, a one-minute load, one fault) on this build,
so the simulation itself cannot rot. Checks: the script exits 0; report.md and every plot exist
and are PNGs; verify.json says writes were checked, none is lost or changed and no pod ran twice;
faults.tsv holds a kill followed by a restart of the same process; pods.tsv holds pods that ran;
and when the script has returned no process of the run is left: none of the PIDs the run's pid
files and faults.tsv named while it ran (same PID and start time), and nothing with the run's
directory in its command line.

Run alone: URSA_BUILD_DIR=build /usr/bin/python3 tests/integration/test_region_quick.py"""
import importlib.util
import json
import os
import signal
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
import ursa_harness as h  # noqa: E402

ROOT = os.path.join(HERE, "..", "..")
SCRIPT = os.path.join(ROOT, "bench", "run-region.sh")
_spec = importlib.util.spec_from_file_location("region_report", os.path.join(ROOT, "bench", "region-report.py"))
rr = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(rr)

RUN_TIMEOUT = 480
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
seen = {}        # pid -> (start time in clock ticks, command line) of every process the run recorded


def proc_start(pid):
    """The start time of pid (field 22 of /proc/PID/stat), or None if it is gone."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            stat = f.read()
    except OSError:
        return None
    return int(stat[stat.rindex(")") + 2:].split()[19])


def proc_cmdline(pid):
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return None


def note(pid):
    if pid > 1 and pid not in seen:
        start = proc_start(pid)
        if start is not None:
            seen[pid] = (start, proc_cmdline(pid))


def record_pids(out, stop):
    """While the run goes on: every PID in its pid files (state/pids/*.pid) and in faults.tsv."""
    piddir = os.path.join(out, "state", "pids")
    while not stop.is_set():
        try:
            names = os.listdir(piddir)
        except OSError:
            names = []
        for n in names:
            if n.endswith(".pid"):
                try:
                    note(int(open(os.path.join(piddir, n)).read().split()[0]))
                except (OSError, ValueError, IndexError):
                    pass
        try:
            for line in open(os.path.join(out, "faults.tsv")).read().splitlines()[1:]:
                cols = line.split("\t")
                if len(cols) >= 4 and cols[3].strip().isdigit():
                    note(int(cols[3]))
        except OSError:
            pass
        stop.wait(0.5)


def leftovers(out):
    """Processes of the run still alive: recorded ones (same PID, same start time) and any
    process whose command line names the run's directory."""
    left = {pid: cmd for pid, (start, cmd) in seen.items() if proc_start(pid) == start}
    me = os.getpid()
    for d in os.listdir("/proc"):
        if d.isdigit() and int(d) != me:
            cmd = proc_cmdline(int(d))
            if cmd and out in cmd:
                left[int(d)] = cmd
    return left


def kill_leftovers(out):
    """Clean-up after a failed run: SIGKILL what the run left (only processes identified above)."""
    for pid in leftovers(out):
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


def tail(path, n=60):
    try:
        return "\n".join(open(path, errors="replace").read().splitlines()[-n:])
    except OSError:
        return "(no %s)" % path


def rows(path):
    with open(path) as f:
        lines = [ln.rstrip("\n").split("\t") for ln in f if ln.strip()]
    return lines[0], lines[1:]


def test_quick_region_runs_heals_verifies_and_cleans_up():
    out = h.make_tmpdir("region-quick")
    h.at_cleanup(lambda: kill_leftovers(out))
    stop = threading.Event()
    watcher = threading.Thread(target=record_pids, args=(out, stop), daemon=True)
    watcher.start()
    log = open(os.path.join(out, "test-output.log"), "w")
    p = subprocess.Popen([SCRIPT, "--quick", "--out", out, "--build-dir", h.BUILD_DIR], stdout=log,
                         stderr=subprocess.STDOUT, start_new_session=True)
    try:
        rc = p.wait(RUN_TIMEOUT)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGTERM)     # its trap cleans up the region
        try:
            p.wait(60)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
        rc = "timeout after %d s" % RUN_TIMEOUT
    finally:
        stop.set()
        watcher.join(5)
        log.close()
    output = tail(os.path.join(out, "test-output.log"), 80)
    # nothing of the run is left (daemons, restarted ones, the sampler and supervisor), whether
    # the run passed or failed
    time.sleep(1)
    left = leftovers(out)
    assert rc == 0 and not left, (rc, "processes left: %r" % left, output)
    assert len(seen) >= 5, ("the run's pid files named too few processes", seen)
    check_output(out)


def check_output(out):
    """The run's files in out: report, plots, verify, faults, pods, calls."""
    # the report and its plots
    md = open(os.path.join(out, "report.md")).read()
    assert "# Region simulation report" in md and "## Faults" in md, md[:2000]
    for name in rr.PLOTS:
        assert "](%s)" % name in md, name
        with open(os.path.join(out, name), "rb") as f:
            data = f.read()
        assert data.startswith(PNG_MAGIC) and len(data) > 2000, (name, len(data))

    # nothing lost, nothing run twice, and something was checked
    v = json.load(open(os.path.join(out, "verify.json")))
    s = rr.verify_summary(v)
    assert s["checked"] is not None and s["checked"] > 0, (s, v)
    assert s["missing"] == 0 and s["run_twice"] == 0, (s, v)
    assert s["mismatched"] in (None, 0), (s, v)
    assert "Nothing lost, nothing run twice." in md, md

    # the fault happened: a kill, then a restart of the same process
    header, faults = rows(os.path.join(out, "faults.tsv"))
    assert header[:5] == ["t_ms", "kind", "target", "pid", "event"], header
    paired = rr.pair_faults([(int(r[0]), r[1], r[2], r[3], r[4]) for r in faults])
    assert any(f["event"] == "kill" and f["restart_ms"] is not None for f in paired), faults
    assert not [f for f in paired if f["event"] == "died"], ("a daemon died without a fault", faults)
    assert all(f["kind"] in ("tp-apiserver", "rm-apiserver", "scheduler", "tp-controller-manager",
                             "rm-controller-manager", "gateway", "etcd", "hollow-kubelet") for f in paired), faults

    # pods ran, and the report counted them
    header, pods = rows(os.path.join(out, "pods.tsv"))
    assert header[:6] == ["tenant", "namespace", "name", "uid", "created_ms", "running_ms"], header
    running = [r for r in pods if len(r) > 5 and r[5].strip()]
    assert running, ("no pod in pods.tsv ran", pods[:5])
    assert "| %d |" % len(running) in md, md

    # the load went through: calls were made, and few failed in transport or with a server error
    # (404 and 409 are answers a load of creates, updates and deletes meets by design)
    header, calls = rows(os.path.join(out, "calls.tsv"))
    assert header[:6] == ["t_ms", "verb", "resource", "scope", "latency_us", "code"], header
    codes = [int(c[5]) for c in calls if len(c) >= 6 and c[5].strip().isdigit()]
    ok = sum(1 for c in codes if 200 <= c < 300)
    bad = sum(1 for c in codes if c == 0 or c >= 500)
    assert ok > 100 and bad <= 0.1 * len(codes), (ok, bad, len(codes))

    # the fault hit while the load ran: the process was down or not yet healed while calls were made
    times = sorted(int(c[0]) for c in calls if c[0].isdigit())
    hit = [f for f in paired if f["event"] == "kill" and f["t"] <= times[-1]
           and f["t"] + (f["healed_ms"] if f["healed_ms"] is not None else f["restart_ms"]) >= times[0]]
    assert hit, ("no kill overlapped the load's calls", times[0], times[-1], faults)


h.run(globals(), per_test_timeout=RUN_TIMEOUT + 90)
