#!/usr/bin/python3
"""The report of a region simulation (bench/run-region.sh, issue 21): reads the files the run left
in OUT_DIR and writes OUT_DIR/report.md and its plots (PNG, matplotlib's Agg backend).

usage: bench/region-report.py OUT_DIR

Inputs (tab-separated with a header line, times in Unix epoch milliseconds; bench/run-region.sh
writes the region's files, `ursa-region load` and `verify` (bench/region/) the load's):
  faults.tsv   t_ms kind target pid event          (event: kill, died, restart, healed, skipped)
  samples.tsv  t_ms process kind cpu_pct rss_kib   (every daemon, every 5 s)
  etcd.tsv     t_ms cluster member db_bytes
  nodes.tsv    t_ms ready total
  calls.tsv    t_ms verb resource scope latency_us code   (one line per API call of the load)
  pods.tsv     tenant namespace name uid created_ms running_ms node
  load.json, verify.json, run.json
A missing file is an error (exit 2, naming it); a file holding only its header is reported as
"no data" and the plots say so.

The SLIs are those of Kubernetes' SIG Scalability (sig-scalability/slos/slos.md):
- mutating API calls (create, update, patch, delete): p99 per (verb, resource) <= 1 s;
- non-streaming read-only calls (get, list; watches excluded): p99 per (resource, scope) <= 1 s
  for scope=resource and <= 30 s for scope=namespace and scope=cluster;
- pod startup latency, creation to Running as the observer sees it: p99 <= 5 s (goal 2 s).
Kubernetes measures them over the whole run ("per cluster-day") and, for alerting, over the
last 5 minutes; here the whole run gives the SLO table and 10 s windows give the time series and
the time each SLI spent outside its SLO after a fault. Percentiles are nearest-rank. The
latency of a call that ended in a transport error (code 0) is not counted; the call is counted
as an error.

Exit status: 0 report written, 1 bad input (unparsable line), 2 a missing input file.
"""
import array
import itertools
import json
import math
import os
import sys
import time

WINDOW_MS = 10_000
MUTATING = ("create", "update", "patch", "delete")
READONLY = ("get", "list")
MUTATING_SLO_S = 1.0
READ_SLO_S = {"resource": 1.0, "namespace": 30.0, "cluster": 30.0}
STARTUP_SLO_S = 5.0
STARTUP_GOAL_S = 2.0
TSV_FILES = {
    "faults.tsv": ("t_ms", "kind", "target", "pid", "event"),
    "samples.tsv": ("t_ms", "process", "kind", "cpu_pct", "rss_kib"),
    "etcd.tsv": ("t_ms", "cluster", "member", "db_bytes"),
    "nodes.tsv": ("t_ms", "ready", "total"),
    "calls.tsv": ("t_ms", "verb", "resource", "scope", "latency_us", "code"),
    "pods.tsv": ("tenant", "namespace", "name", "uid", "created_ms", "running_ms", "node"),
}
JSON_FILES = ("load.json", "verify.json", "run.json")
PLOTS = ("pod-startup.png", "api-latency.png", "daemons.png", "nodes-ready.png", "etcd.png")


class InputError(Exception):
    """An input file is missing (missing=True) or holds a line that does not parse."""

    def __init__(self, msg, missing=False):
        super().__init__(msg)
        self.missing = missing


# ---------------------------------------------------------------------------------------------
# Pure computation

def percentile(values, p):
    """The nearest-rank p-th percentile (0 < p <= 100) of values (in any order), or None if empty."""
    if not values:
        return None
    return percentiles(sorted(values), (p,))[0]


def percentiles(sorted_values, ps):
    """Nearest-rank percentiles of an already sorted list: for each p the smallest value such that
    at least p % of the values are <= it. None for each p if the list is empty."""
    n = len(sorted_values)
    if n == 0:
        return [None for _ in ps]
    out = []
    for p in ps:
        rank = max(1, math.ceil(p / 100.0 * n))
        out.append(sorted_values[min(rank, n) - 1])
    return out


def window_of(t_ms, t0_ms, window_ms=WINDOW_MS):
    """The index of the window holding t_ms, windows of window_ms starting at t0_ms."""
    return (t_ms - t0_ms) // window_ms


def windowed_percentiles(points, t0_ms, ps=(50, 90, 99), window_ms=WINDOW_MS):
    """points: iterable of (t_ms, value). Returns [(window_start_ms, count, [p...])] for each window
    holding at least one point, in time order."""
    buckets = {}
    for t, v in points:
        buckets.setdefault(window_of(t, t0_ms, window_ms), []).append(v)
    out = []
    for w in sorted(buckets):
        vals = sorted(buckets[w])
        out.append((t0_ms + w * window_ms, len(vals), percentiles(vals, ps)))
    return out


def violating_windows(groups, threshold_of, t0_ms, p=99, window_ms=WINDOW_MS):
    """groups: {key: [(t_ms, value), ...]}; threshold_of(key) the SLO of that key (same unit as the
    values). Returns the sorted list of window start times (ms) in which some key's p-th percentile
    over the window exceeded its threshold."""
    bad = set()
    for key, points in groups.items():
        limit = threshold_of(key)
        for start, _n, (q,) in windowed_percentiles(points, t0_ms, (p,), window_ms):
            if q > limit:
                bad.add(start)
    return sorted(bad)


def time_outside(bad_windows, start_ms, end_ms, window_ms=WINDOW_MS):
    """How long (ms) the windows in bad_windows (start times) overlap [start_ms, end_ms)."""
    total = 0
    for w in bad_windows:
        lo, hi = max(w, start_ms), min(w + window_ms, end_ms)
        if hi > lo:
            total += hi - lo
    return total


def pair_faults(events, end_ms=None):
    """events: [(t_ms, kind, target, pid, event)] in any order, event one of kill (a fault of the
    schedule), died (a death no fault caused), restart, healed, skipped (the target was not running).
    Returns one dict per kill or death, in time order: t, kind, target, pid, event, restart_ms and
    healed_ms (delay after it, None if not seen), and until (the next kill's or death's time, or
    end_ms): the interval it is charged with."""
    ev = sorted(events, key=lambda e: e[0])
    kills = [e for e in ev if e[4] in ("kill", "died")]
    out = []
    for i, (t, kind, target, pid, event) in enumerate(kills):
        nxt_same = next((k[0] for k in kills[i + 1:] if k[2] == target), None)

        def first(name):
            for e in ev:
                if e[4] == name and e[2] == target and e[0] >= t and (nxt_same is None or e[0] < nxt_same):
                    return e[0] - t
            return None
        until = kills[i + 1][0] if i + 1 < len(kills) else end_ms
        out.append({"t": t, "kind": kind, "target": target, "pid": pid, "event": event,
                    "restart_ms": first("restart"), "healed_ms": first("healed"), "until": until})
    return out


def call_class(verb):
    """'mutating', 'read' or None (watches and anything else are not in the latency SLIs)."""
    if verb in MUTATING:
        return "mutating"
    if verb in READONLY:
        return "read"
    return None


def read_slo_s(scope):
    return READ_SLO_S.get(scope, 30.0)


def is_error(code):
    return code == 0 or code >= 400


def fmt_s(ms):
    """Milliseconds as seconds for the tables: '0.012 s', '-' for None."""
    if ms is None:
        return "-"
    s = ms / 1000.0
    if s >= 100:
        return "%.0f s" % s
    if s >= 10:
        return "%.1f s" % s
    return "%.3f s" % s


def fmt_bytes(n):
    if n is None:
        return "-"
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(n) < 1024 or unit == "GiB":
            return ("%d %s" % (n, unit)) if unit == "B" else ("%.1f %s" % (n, unit))
        n /= 1024.0
    return str(n)


def flatten(obj, prefix=""):
    """A JSON value as [(dotted.key, scalar)]; lists of scalars become one comma-joined value."""
    out = []
    if isinstance(obj, dict):
        for k, v in obj.items():
            out.extend(flatten(v, "%s.%s" % (prefix, k) if prefix else str(k)))
    elif isinstance(obj, list):
        if all(not isinstance(v, (dict, list)) for v in obj):
            out.append((prefix, ", ".join(str(v) for v in obj)))
        else:
            for i, v in enumerate(obj):
                out.extend(flatten(v, "%s[%d]" % (prefix, i)))
    else:
        out.append((prefix, obj))
    return out


def find_number(obj, *names):
    """The first number among the flattened keys of obj whose last component is one of names
    (tried in that order), or None."""
    flat = flatten(obj)
    for name in names:
        for k, v in flat:
            last = k.rsplit(".", 1)[-1]
            if last == name and isinstance(v, (int, float)) and not isinstance(v, bool):
                return v
    return None


VERIFY_PROBLEMS = ("missing", "mismatched", "not_deleted", "unchecked", "unknown_outcome", "unreadable_lines",
                   "over_replicas", "short", "wrong_image", "node_changes", "namespaces_unlisted")


def verify_summary(v):
    """What the report and the quick test need from verify.json (ursa-region verify): objects
    checked, acknowledged writes, missing, mismatched, pods run twice (a pod seen Running on two
    nodes: pods.node_changes), pass, and the non-zero problem counters; None where it does not say."""
    passed = v.get("pass") if isinstance(v, dict) else None
    return {
        "checked": find_number(v, "objects_checked", "writes_checked", "checked"),
        "acknowledged": find_number(v, "writes_acknowledged", "acknowledged"),
        "missing": find_number(v, "missing", "writes_missing", "lost"),
        "mismatched": find_number(v, "mismatched", "writes_mismatched"),
        "run_twice": find_number(v, "pods_run_twice", "run_twice", "node_changes"),
        "pass": passed if isinstance(passed, bool) else None,
        "problems": {k: n for k in VERIFY_PROBLEMS for n in (find_number(v, k),) if n},
    }


# ---------------------------------------------------------------------------------------------
# Reading

def iter_tsv(out_dir, name):
    """The rows of OUT_DIR/name as lists of strings, one at a time (header checked and dropped)."""
    path = os.path.join(out_dir, name)
    if not os.path.exists(path):
        raise InputError("missing %s" % path, missing=True)
    want = TSV_FILES[name]
    least = len(want) - (1 if name == "pods.tsv" else 0)     # pods.tsv: node empty if never bound
    with open(path, encoding="utf-8", errors="replace") as f:
        header = None
        for lineno, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if not line.strip():
                continue
            cols = line.split("\t")
            if header is None:
                header = cols
                if tuple(c.strip() for c in cols[:len(want)]) != want:
                    raise InputError("%s: header %r, expected %r" % (path, cols, list(want)))
                continue
            if len(cols) < least:
                raise InputError("%s:%d: %d columns, expected %d" % (path, lineno, len(cols), len(want)))
            yield cols


def read_tsv(out_dir, name):
    return list(iter_tsv(out_dir, name))


def read_json(out_dir, name):
    path = os.path.join(out_dir, name)
    if not os.path.exists(path):
        raise InputError("missing %s" % path, missing=True)
    with open(path, encoding="utf-8") as f:
        text = f.read()
    if not text.strip():
        return {}
    try:
        return json.loads(text)
    except ValueError as e:
        raise InputError("%s: not JSON: %s" % (path, e)) from e


def num(s, path, what):
    try:
        return int(s)
    except ValueError:
        try:
            return float(s)
        except ValueError as e:
            raise InputError("%s: %s %r is not a number" % (path, what, s)) from e


def load(out_dir):
    """Reads every input; returns a dict of parsed data. Raises InputError."""
    missing = [n for n in list(TSV_FILES) + list(JSON_FILES) if not os.path.exists(os.path.join(out_dir, n))]
    if missing:
        raise InputError("missing input file(s) in %s: %s" % (out_dir, ", ".join(missing)), missing=True)
    d = {}
    d["faults"] = [(num(r[0], "faults.tsv", "t_ms"), r[1], r[2], r[3], r[4].strip())
                   for r in read_tsv(out_dir, "faults.tsv")]
    d["samples"] = [(num(r[0], "samples.tsv", "t_ms"), r[1], r[2], float(r[3] or 0), float(r[4] or 0))
                    for r in read_tsv(out_dir, "samples.tsv")]
    d["etcd"] = [(num(r[0], "etcd.tsv", "t_ms"), r[1], r[2], num(r[3], "etcd.tsv", "db_bytes"))
                 for r in read_tsv(out_dir, "etcd.tsv")]
    d["nodes"] = [(num(r[0], "nodes.tsv", "t_ms"), num(r[1], "nodes.tsv", "ready"), num(r[2], "nodes.tsv", "total"))
                  for r in read_tsv(out_dir, "nodes.tsv")]
    d["calls"] = analyse_calls((num(r[0], "calls.tsv", "t_ms"), r[1], r[2], r[3],
                                num(r[4], "calls.tsv", "latency_us"), num(r[5].strip() or "0", "calls.tsv", "code"))
                               for r in iter_tsv(out_dir, "calls.tsv"))
    pods = []
    for r in read_tsv(out_dir, "pods.tsv"):
        r = r + [""] * (7 - len(r))
        created = num(r[4], "pods.tsv", "created_ms") if r[4].strip() else None
        running = num(r[5], "pods.tsv", "running_ms") if r[5].strip() else None
        pods.append((r[0], r[1], r[2], r[3], created, running, r[6].strip()))
    d["pods"] = pods
    for name in JSON_FILES:
        d[name.split(".")[0]] = read_json(out_dir, name)
    return d


# ---------------------------------------------------------------------------------------------
# Analysis (pure, on the loaded data)

class Series:
    """(t_ms, value) points kept in two arrays (calls.tsv may hold millions of lines); iterates as
    (t_ms, value) pairs."""

    def __init__(self):
        self.t = array.array("q")
        self.v = array.array("d")

    def append(self, t, v):
        self.t.append(int(t))
        self.v.append(v)

    def __len__(self):
        return len(self.t)

    def __iter__(self):
        return zip(self.t, self.v)


def analyse_calls(calls):
    """calls: iterable of (t_ms, verb, resource, scope, latency_us, code), read once. Returns the
    latencies in ms of mutating calls by (verb, resource) and of read-only calls by (resource,
    scope) (Series), the verbs seen per read group, counts of other verbs, calls per code, calls per
    (code, verb, resource) and the (t_ms, code) of each error, for code >= 400 or 0 (transport
    error; no latency counted), the number of calls, and the first and last call's time."""
    mut, read, read_verbs, other = {}, {}, {}, {}
    codes, code_calls, err_times = {}, {}, []
    total, t_min, t_max = 0, None, None
    intern = sys.intern
    for t, verb, resource, scope, lat_us, code in calls:
        total += 1
        if t_min is None or t < t_min:
            t_min = t
        if t_max is None or t > t_max:
            t_max = t
        codes[code] = codes.get(code, 0) + 1
        if is_error(code):
            err_times.append((t, code))
            key = (code, intern(verb), intern(resource))
            code_calls[key] = code_calls.get(key, 0) + 1
        if code == 0:
            continue
        cls = call_class(verb)
        if cls == "mutating":
            key = (verb, resource)
            if key not in mut:
                mut[key] = Series()
            mut[key].append(t, lat_us / 1000.0)
        elif cls == "read":
            key = (resource, scope)
            if key not in read:
                read[key], read_verbs[key] = Series(), set()
            read[key].append(t, lat_us / 1000.0)
            read_verbs[key].add(verb)
        else:
            other[verb] = other.get(verb, 0) + 1
    return {"mutating": mut, "read": read, "read_verbs": {k: sorted(v) for k, v in read_verbs.items()},
            "other_verbs": other, "codes": codes, "code_calls": code_calls, "err_times": err_times,
            "total": total, "t_min": t_min, "t_max": t_max}


def time_span(d):
    """(t0_ms, end_ms) of the run's data: the first and last timestamp seen in any series."""
    ts = []
    for key in ("faults", "samples", "etcd", "nodes"):
        if d[key]:
            ts.append(min(r[0] for r in d[key]))
            ts.append(max(r[0] for r in d[key]))
    if d["calls"]["total"]:
        ts += [d["calls"]["t_min"], d["calls"]["t_max"]]
    for p in d["pods"]:
        for t in (p[4], p[5]):
            if t is not None:
                ts.append(t)
    if not ts:
        return None, None
    return min(ts), max(ts)


def analyse(d):
    """Everything the report and the plots show, computed from the loaded data."""
    a = {}
    t0, end = time_span(d)
    a["t0"], a["end"] = t0, end
    c = d["calls"]
    a["mutating"], a["read"], a["read_verbs"], a["other_verbs"] = c["mutating"], c["read"], c["read_verbs"], \
        c["other_verbs"]
    a["codes"], a["code_calls"], a["err_times"], a["calls_total"] = c["codes"], c["code_calls"], c["err_times"], \
        c["total"]

    startup, never = [], 0
    for p in d["pods"]:
        if p[4] is not None and p[5] is not None:
            startup.append((p[4], float(p[5] - p[4])))
        else:
            never += 1
    a["startup"], a["never_running"] = startup, never
    running_times = sorted(p[5] for p in d["pods"] if p[5] is not None)
    a["running_times"] = running_times
    thr = {}
    if running_times and t0 is not None:
        for t in running_times:
            w = window_of(t, t0)
            thr[w] = thr.get(w, 0) + 1
    a["running_per_window"] = thr

    if t0 is not None:
        a["bad"] = {
            "mutating p99": violating_windows(a["mutating"], lambda k: MUTATING_SLO_S * 1000, t0),
            "read-only p99": violating_windows(a["read"], lambda k: read_slo_s(k[1]) * 1000, t0),
            "pod startup p99": violating_windows({"pods": startup}, lambda k: STARTUP_SLO_S * 1000, t0),
        }
    else:
        a["bad"] = {"mutating p99": [], "read-only p99": [], "pod startup p99": []}
    faults = pair_faults(d["faults"], end)
    for f in faults:
        until = f["until"] if f["until"] is not None else f["t"]
        f["outside"] = {k: time_outside(v, f["t"], until) for k, v in a["bad"].items()}
        errs = {}
        for t, code in a["err_times"]:
            if f["t"] <= t < until:
                errs[code] = errs.get(code, 0) + 1
        f["errors"] = errs
    a["faults"] = faults

    procs = {}
    for t, proc, kind, cpu, rss in d["samples"]:
        p = procs.setdefault(proc, {"kind": kind, "n": 0, "cpu_sum": 0.0, "cpu_peak": 0.0, "rss_peak": 0.0,
                                    "rss_last": 0.0, "t_last": None})
        p["n"] += 1
        p["cpu_sum"] += cpu
        p["cpu_peak"] = max(p["cpu_peak"], cpu)
        p["rss_peak"] = max(p["rss_peak"], rss)
        if p["t_last"] is None or t >= p["t_last"]:
            p["t_last"], p["rss_last"] = t, rss
    a["procs"] = procs

    etcd = {}
    for t, cluster, member, size in d["etcd"]:
        e = etcd.setdefault((cluster, member), {"first": None, "t_first": None, "last": None, "t_last": None,
                                                "peak": 0})
        if e["t_first"] is None or t < e["t_first"]:
            e["t_first"], e["first"] = t, size
        if e["t_last"] is None or t >= e["t_last"]:
            e["t_last"], e["last"] = t, size
        e["peak"] = max(e["peak"], size)
    a["etcd"] = etcd
    a["verify"] = verify_summary(d["verify"])
    return a


# ---------------------------------------------------------------------------------------------
# Plots

def fault_lines(ax, faults, t0, labels=True):
    for f in faults:
        x = (f["t"] - t0) / 1000.0
        ax.axvline(x, color="crimson", linestyle="--", linewidth=0.9, alpha=0.8)
        if labels:
            ax.text(x, 1.0, " " + f["kind"], transform=ax.get_xaxis_transform(), rotation=90, fontsize=7,
                    color="crimson", va="top", ha="right")


def no_data(ax, what):
    ax.text(0.5, 0.5, "no data: %s" % what, transform=ax.transAxes, ha="center", va="center", fontsize=12,
            color="gray")


def plot_all(out_dir, d, a):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    t0 = a["t0"] or 0
    faults = a["faults"]
    # every time series on the same axis: from the first sample of any file to the end of the window
    # holding the last one
    xlim = (0, (window_of(a["end"] or t0, t0) + 1) * WINDOW_MS / 1000.0)

    # Pod startup latency: histogram and CDF, percentiles and the SLO/goal marked.
    fig, (h, c) = plt.subplots(1, 2, figsize=(12, 4.5))
    lat = sorted(v / 1000.0 for _t, v in a["startup"])
    if lat:
        p50, p90, p99 = percentiles(lat, (50, 90, 99))
        h.hist(lat, bins=min(80, max(10, len(lat) // 20)), color="steelblue")
        h.set_yscale("log")
        c.plot(lat, [(i + 1) / len(lat) for i in range(len(lat))], color="steelblue")
        for ax in (h, c):
            for x, name, col in ((p50, "p50", "green"), (p90, "p90", "orange"), (p99, "p99", "red")):
                ax.axvline(x, color=col, linewidth=1, label="%s %.2f s" % (name, x))
            ax.axvline(STARTUP_SLO_S, color="black", linestyle="--", label="SLO 5 s")
            ax.axvline(STARTUP_GOAL_S, color="gray", linestyle=":", label="goal 2 s")
            ax.set_xlabel("creation to Running (s)")
        h.set_ylabel("pods")
        c.set_ylabel("fraction of pods")
        c.legend(fontsize=8, loc="lower right")
    else:
        no_data(h, "no pod reached Running")
        no_data(c, "no pod reached Running")
    h.set_title("Pod startup latency (%d pods)" % len(lat))
    c.set_title("Pod startup latency, CDF")
    fig.tight_layout()
    fig.savefig(os.path.join(out_dir, "pod-startup.png"), dpi=100)
    plt.close(fig)

    # API call latency p50/p90/p99 per 10 s window: mutating, reads of single objects, and lists of a
    # namespace or the cluster (their SLOs differ: 1 s, 1 s, 30 s).
    fig, axes = plt.subplots(3, 1, figsize=(13, 9.5), sharex=True)
    panels = (
        ("mutating calls", a["mutating"], MUTATING_SLO_S),
        ("read-only calls, scope resource", {k: v for k, v in a["read"].items() if k[1] == "resource"},
         READ_SLO_S["resource"]),
        ("read-only calls, scope namespace and cluster", {k: v for k, v in a["read"].items() if k[1] != "resource"},
         READ_SLO_S["cluster"]),
    )
    for ax, (what, groups, slo) in zip(axes, panels):
        if any(len(v) for v in groups.values()):
            rows = windowed_percentiles(itertools.chain(*groups.values()), t0)
            xs = [(w - t0) / 1000.0 + WINDOW_MS / 2000.0 for w, _n, _q in rows]
            for i, (name, col) in enumerate((("p50", "green"), ("p90", "orange"), ("p99", "red"))):
                ax.plot(xs, [q[i] / 1000.0 for _w, _n, q in rows], color=col, marker=".", label=name)
            ax.set_yscale("log")
            ax.axhline(slo, color="black", linestyle="--", label="SLO %g s" % slo)
            ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0))
        else:
            no_data(ax, "no " + what)
        fault_lines(ax, faults, t0, labels=(ax is axes[0]))
        ax.set_ylabel("latency (s)")
        ax.set_title("API call latency, %s, per %d s window" % (what, WINDOW_MS // 1000))
    axes[-1].set_xlabel("time since start (s)")
    axes[-1].set_xlim(xlim)
    fig.tight_layout()
    fig.savefig(os.path.join(out_dir, "api-latency.png"), dpi=100)
    plt.close(fig)

    # CPU and RSS per daemon, one row per kind.
    kinds = sorted({p["kind"] for p in a["procs"].values()})
    fig, axes = plt.subplots(max(1, len(kinds)), 2, figsize=(13, 2.4 * max(1, len(kinds)) + 0.6), squeeze=False)
    if not kinds:
        no_data(axes[0][0], "no samples")
        no_data(axes[0][1], "no samples")
    series = {}
    for t, proc, kind, cpu, rss in d["samples"]:
        series.setdefault(proc, []).append((t, cpu, rss))
    for row, kind in enumerate(kinds):
        cax, rax = axes[row]
        top_c = top_r = 0.0
        for proc in sorted(p for p, v in a["procs"].items() if v["kind"] == kind):
            s = sorted(series[proc])
            xs = [(t - t0) / 1000.0 for t, _c, _r in s]
            cax.plot(xs, [c for _t, c, _r in s], linewidth=0.9, label=proc)
            rax.plot(xs, [r / 1024.0 for _t, _c, r in s], linewidth=0.9, label=proc)
            top_c = max([top_c] + [c for _t, c, _r in s])
            top_r = max([top_r] + [r / 1024.0 for _t, _c, r in s])
        cax.set_ylim(0, top_c * 1.15 or 1)
        rax.set_ylim(0, top_r * 1.15 or 1)
        cax.set_ylabel("%s\nCPU %%" % kind, fontsize=8)
        rax.set_ylabel("RSS MiB", fontsize=8)
        for ax in (cax, rax):
            fault_lines(ax, faults, t0, labels=(row == 0))
            ax.set_xlim(xlim)
        n = len([v for v in a["procs"].values() if v["kind"] == kind])
        if n <= 12:
            rax.legend(fontsize=6, loc="lower right", ncol=1 if n <= 4 else 3)
    axes[0][0].set_title("CPU per daemon (% of one core)")
    axes[0][1].set_title("RSS per daemon")
    axes[-1][0].set_xlabel("time since start (s)")
    axes[-1][1].set_xlabel("time since start (s)")
    fig.tight_layout()
    fig.savefig(os.path.join(out_dir, "daemons.png"), dpi=90)
    plt.close(fig)

    # Nodes Ready.
    fig, ax = plt.subplots(figsize=(12, 3.5))
    if d["nodes"]:
        s = sorted(d["nodes"])
        xs = [(t - t0) / 1000.0 for t, _r, _n in s]
        ax.plot(xs, [r for _t, r, _n in s], color="green", label="Ready")
        ax.plot(xs, [n for _t, _r, n in s], color="gray", linestyle=":", label="total")
        ax.legend(fontsize=8, loc="lower right")
    else:
        no_data(ax, "no node samples")
    fault_lines(ax, faults, t0)
    ax.set_xlim(xlim)
    ax.set_xlabel("time since start (s)")
    ax.set_ylim(bottom=0)
    ax.set_ylabel("nodes")
    ax.set_title("Nodes Ready")
    fig.tight_layout()
    fig.savefig(os.path.join(out_dir, "nodes-ready.png"), dpi=100)
    plt.close(fig)

    # etcd database sizes.
    fig, ax = plt.subplots(figsize=(12, 3.5))
    if d["etcd"]:
        by = {}
        for t, cluster, member, size in d["etcd"]:
            by.setdefault((cluster, member), []).append((t, size))
        for key in sorted(by):
            s = sorted(by[key])
            ax.plot([(t - t0) / 1000.0 for t, _s in s], [v / 1048576.0 for _t, v in s], linewidth=0.9,
                    label="%s/%s" % key)
        if len(by) <= 12:
            ax.legend(fontsize=6, loc="upper left")
    else:
        no_data(ax, "no etcd samples")
    fault_lines(ax, faults, t0)
    ax.set_xlim(xlim)
    ax.set_xlabel("time since start (s)")
    ax.set_ylabel("db size (MiB)")
    ax.set_title("etcd database sizes")
    fig.tight_layout()
    fig.savefig(os.path.join(out_dir, "etcd.png"), dpi=100)
    plt.close(fig)


# ---------------------------------------------------------------------------------------------
# Markdown

def table(header, rows):
    out = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    for r in rows:
        out.append("| " + " | ".join(str(c).replace("|", "\\|") for c in r) + " |")
    return out


def kv_table(obj, limit=60):
    flat = flatten(obj)
    if not flat:
        return ["(empty)"]
    rows = [(k, v) for k, v in flat[:limit]]
    out = table(("key", "value"), rows)
    if len(flat) > limit:
        out.append("")
        out.append("(%d more entries in the file)" % (len(flat) - limit))
    return out


def met(value_ms, limit_s):
    if value_ms is None:
        return "-"
    return "yes" if value_ms <= limit_s * 1000 else "**no**"


def utc(ms):
    if ms is None:
        return "-"
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(ms / 1000.0))


def worst_p99(groups):
    """(p99 in ms, key) of the group with the highest p99, or (None, None)."""
    best = (None, None)
    for key, pts in groups.items():
        q = percentiles(sorted(v for _t, v in pts), (99,))[0]
        if q is not None and (best[0] is None or q > best[0]):
            best = (q, key)
    return best


def slo_summary(a):
    """The SLOs in a few lines: the worst p99 of each SLI over the whole run against its SLO."""
    L = ["SLOs over the whole run:", ""]
    q, key = worst_p99(a["mutating"])
    L.append("- Mutating API calls: %s" % ("no data" if q is None else "worst p99 %s (%s %s): %s" % (
        fmt_s(q), key[0], key[1], "met" if q <= MUTATING_SLO_S * 1000 else "**missed** (SLO 1 s)")))
    for label, scopes, slo in (("Read-only, scope resource", ("resource",), READ_SLO_S["resource"]),
                               ("Read-only, scope namespace and cluster", ("namespace", "cluster"),
                                READ_SLO_S["cluster"])):
        q, key = worst_p99({k: v for k, v in a["read"].items() if k[1] in scopes})
        L.append("- %s: %s" % (label, "no data" if q is None else "worst p99 %s (%s, %s): %s" % (
            fmt_s(q), key[0], key[1], "met" if q <= slo * 1000 else "**missed** (SLO %g s)" % slo)))
    lat = sorted(v for _t, v in a["startup"])
    if lat:
        p50, p99 = percentiles(lat, (50, 99))
        L.append("- Pod startup: p50 %s, p99 %s over %d pods: SLO 5 s %s, goal 2 s %s" % (
            fmt_s(p50), fmt_s(p99), len(lat), "met" if p99 <= STARTUP_SLO_S * 1000 else "**missed**",
            "met" if p99 <= STARTUP_GOAL_S * 1000 else "missed"))
    else:
        L.append("- Pod startup: no data (no pod reached Running)")
    return L


def run_section(run):
    """run.json as tables: settings, machine, phases, limits; anything else as key/value rows."""
    if not isinstance(run, dict) or not run:
        return ["run.json is empty."]
    L = []
    if isinstance(run.get("settings"), dict):
        L += ["From run.json:", ""] + kv_table(run["settings"]) + [""]
    if isinstance(run.get("machine"), dict):
        L += ["Machine: " + "; ".join("%s %s" % kv for kv in flatten(run["machine"])) + ".", ""]
    phases = run.get("phases")
    if isinstance(phases, list) and phases and all(isinstance(p, dict) for p in phases):
        L += table(("phase", "seconds", "status"),
                   [(p.get("name", "?"), "%.0f" % p["seconds"] if isinstance(p.get("seconds"), (int, float)) else "-",
                     p.get("status", "-")) for p in phases]) + [""]
    limits = run.get("limits")
    if isinstance(limits, list):
        what = "; ".join(str(x) for x in limits) if limits else "nothing recorded"
        L += ["What limited the run: %s." % what, ""]
    rest = {k: v for k, v in run.items() if k not in ("settings", "machine", "phases", "limits")}
    if rest:
        L += kv_table(rest)
    return L


def report(out_dir, d, a):
    t0 = a["t0"]
    L = ["# Region simulation report", ""]
    L.append("Run directory: `%s`. Data from %s to %s (%s)." % (
        out_dir, utc(t0), utc(a["end"]), fmt_s(a["end"] - t0) if t0 is not None else "no data"))
    L.append("")
    empty = [n for n, k in (("pods.tsv", "pods"), ("samples.tsv", "samples"), ("faults.tsv", "faults"),
                            ("nodes.tsv", "nodes"), ("etcd.tsv", "etcd")) if not d[k]]
    if not a["calls_total"]:
        empty.insert(0, "calls.tsv")
    if empty:
        L.append("**No data** in: %s (the file holds no rows)." % ", ".join(empty))
        L.append("")

    L += ["## Settings", ""] + run_section(d["run"]) + [""]

    # Summary verdict
    v = a["verify"]
    L += ["## Verdict", ""]
    lost = None
    if v["missing"] is not None or v["mismatched"] is not None:
        lost = (v["missing"] or 0) + (v["mismatched"] or 0)
    def show(x):
        return "-" if x is None else x
    L.append("- Acknowledged writes: %s; objects checked: %s; missing: %s; mismatched: %s; pods run twice: %s." % (
        show(v["acknowledged"]), show(v["checked"]), show(v["missing"]), show(v["mismatched"]), show(v["run_twice"])))
    if lost is None or v["run_twice"] is None or v["checked"] is None:
        L.append("- **verify.json does not state** all of checked / missing / mismatched / run twice (see below).")
    elif lost == 0 and v["run_twice"] == 0 and v["checked"] > 0:
        L.append("- Nothing lost, nothing run twice.")
    else:
        L.append("- **FAILED**: %s lost or changed writes, %s pods run twice, %s objects checked." % (
            lost, v["run_twice"], v["checked"]))
    if v["pass"] is not None or v["problems"]:
        L.append("- verify: %s%s." % ("pass" if v["pass"] else "**did not pass**" if v["pass"] is False else "-",
                                      "; " + ", ".join("%s %s" % kv for kv in sorted(v["problems"].items()))
                                      if v["problems"] else ""))
    L.append("")

    L += slo_summary(a) + [""]

    # SLO tables
    L += ["## SLOs (Kubernetes' SLIs)", "",
          "Latency is measured by the load driver from sending the request to the last byte of the response, "
          "through HAProxy and a gateway. Percentiles are nearest-rank over the whole run; watches are "
          "excluded; calls that failed in transport (code 0) count as errors, not in the latency.", ""]
    L += ["### Mutating API calls (SLO: p99 <= 1 s per verb and resource)", ""]
    if a["mutating"]:
        rows = []
        for (verb, resource), pts in sorted(a["mutating"].items()):
            q = percentiles(sorted(v for _t, v in pts), (50, 90, 99))
            rows.append((verb, resource, len(pts), fmt_s(q[0]), fmt_s(q[1]), fmt_s(q[2]), met(q[2], MUTATING_SLO_S)))
        L += table(("verb", "resource", "calls", "p50", "p90", "p99", "SLO met"), rows)
    else:
        L.append("No data: no mutating calls in calls.tsv.")
    L += ["", "### Read-only API calls (SLO: p99 <= 1 s for scope resource, <= 30 s for namespace and cluster)", ""]
    if a["read"]:
        rows = []
        for (resource, scope), pts in sorted(a["read"].items()):
            q = percentiles(sorted(v for _t, v in pts), (50, 90, 99))
            rows.append((resource, scope, ", ".join(a["read_verbs"][(resource, scope)]), len(pts), fmt_s(q[0]),
                         fmt_s(q[1]), fmt_s(q[2]), "%g s" % read_slo_s(scope), met(q[2], read_slo_s(scope))))
        L += table(("resource", "scope", "verbs", "calls", "p50", "p90", "p99", "SLO", "met"), rows)
        L += ["", "(clusterloader2 checks scope=namespace at 5 s, stricter than the published 30 s.)"]
    else:
        L.append("No data: no read-only calls in calls.tsv.")
    if a["other_verbs"]:
        others = ", ".join("%s %d" % kv for kv in sorted(a["other_verbs"].items()))
        L += ["", "Not in the latency SLIs: %s." % others]

    L += ["", "### Pod startup latency (SLO: p99 <= 5 s; goal <= 2 s)", "",
          "From the pod's creation (the observer's first sight of it, or the create's send time for bare pods) "
          "to Running as the observer's watch sees it.", ""]
    lat = sorted(v for _t, v in a["startup"])
    if lat:
        q = percentiles(lat, (50, 90, 99))
        L += table(("pods Running", "never Running", "p50", "p90", "p99", "max", "SLO 5 s", "goal 2 s"),
                   [(len(lat), a["never_running"], fmt_s(q[0]), fmt_s(q[1]), fmt_s(q[2]), fmt_s(lat[-1]),
                     met(q[2], STARTUP_SLO_S), met(q[2], STARTUP_GOAL_S))])
    else:
        L.append("No data: no pod in pods.tsv reached Running (%d pods listed)." % len(d["pods"]))

    L += ["", "### Scheduling throughput", "",
          "Pods reaching Running per second, as the observer sees them (every Running pod was scheduled, so "
          "this is a lower bound on the scheduling rate), per %d s window:" % (WINDOW_MS // 1000), ""]
    if a["running_per_window"]:
        per_s = sorted(n * 1000.0 / WINDOW_MS for n in a["running_per_window"].values())
        rt = a["running_times"]
        span = (rt[-1] - rt[0]) / 1000.0 if len(rt) > 1 else 0
        L += table(("pods Running", "first to last", "mean rate", "median window", "peak window"),
                   [(len(rt), "%.0f s" % span, ("%.1f pods/s" % (len(rt) / span)) if span > 0 else "-",
                     "%.1f pods/s" % percentiles(per_s, (50,))[0], "%.1f pods/s" % per_s[-1])])
    else:
        L.append("No data: no pod reached Running.")
    mine = [(k, val) for k, val in flatten(d["load"]) if k in ("pods_scheduled", "pods_seen", "pods_running",
                                                               "pods_pending_at_end", "pod_rate_achieved")]
    if mine:
        L += ["", "The load driver's own counts (load.json; pods_scheduled: the pods its schedule planned):", ""]
        L += table(("key", "value"), mine)

    L += ["", "### Errors and 429s by code", ""]
    total = a["calls_total"]
    if total:
        errs = sorted((c, n) for c, n in a["codes"].items() if is_error(c))
        ok = sum(n for c, n in a["codes"].items() if not is_error(c))
        L.append("%d calls, %d answered below 400 (%.3f %%), %d errors (code 400 or above, or 0 for a "
                 "transport error)." % (total, ok, 100.0 * ok / total, total - ok))
        if errs:
            L.append("")
            rows = []
            for c, n in errs:
                top = sorted(((cnt, "%s %s" % (vb, rs)) for (cc, vb, rs), cnt in a["code_calls"].items()
                              if cc == c), reverse=True)[:4]
                rows.append((c, n, "%.3f %%" % (100.0 * n / total), ", ".join("%s: %d" % (w, cnt) for cnt, w in top)))
            L += table(("code", "calls", "share", "most frequent verb resource"), rows)
        n429 = a["codes"].get(429, 0)
        L += ["", "429 (Too Many Requests): %d." % n429]
    else:
        L.append("No data: calls.tsv holds no calls.")

    # Faults
    L += ["", "## Faults", "",
          "Each kill -9 of the fault schedule (and each death no fault caused), the delay until the simulation "
          "restarted the process and until it was reported healed, how long each SLI stayed outside its SLO in "
          "the %d s windows from the kill until the next one (or the end of the run), and the failed calls in "
          "that interval." % (WINDOW_MS // 1000), ""]
    if a["faults"]:
        rows = []
        for f in a["faults"]:
            errs = ", ".join("%s: %d" % (c, n) for c, n in sorted(f["errors"].items())) or "none"
            what = "kill -9" if f["event"] == "kill" else "**died by itself**"
            rows.append((f["kind"], f["target"], what, "+%.0f s" % ((f["t"] - t0) / 1000.0),
                         fmt_s(f["restart_ms"]), fmt_s(f["healed_ms"]),
                         "%.0f s" % ((f["until"] - f["t"]) / 1000.0) if f["until"] else "-",
                         "%.0f s" % (f["outside"]["mutating p99"] / 1000.0),
                         "%.0f s" % (f["outside"]["read-only p99"] / 1000.0),
                         "%.0f s" % (f["outside"]["pod startup p99"] / 1000.0), errs))
        L += table(("kind", "target", "event", "at", "restarted after", "healed after", "interval",
                    "mutating p99 > SLO", "read-only p99 > SLO", "pod startup p99 > SLO", "errors (code: calls)"), rows)
        unrestarted = [f for f in a["faults"] if f["restart_ms"] is None]
        if unrestarted:
            L += ["", "**Not restarted**: " + ", ".join("%s %s" % (f["kind"], f["target"]) for f in unrestarted) + "."]
    else:
        L.append("No faults in faults.tsv.")
    skipped = [e for e in d["faults"] if e[4] == "skipped"]
    if skipped:
        L += ["", "Skipped (the target was not running): " +
              ", ".join("%s %s at +%.0f s" % (e[1], e[2], (e[0] - t0) / 1000.0) for e in skipped) + "."]
    tot = {k: len(v) * WINDOW_MS / 1000.0 for k, v in a["bad"].items()}
    L += ["", "Over the whole run, windows outside the SLO: " +
          "; ".join("%s %.0f s" % (k, s) for k, s in tot.items()) + "."]

    # Daemons
    L += ["", "## Daemons: CPU and memory", "", "CPU in % of one core (5 s samples); RSS peak and at the end.", ""]
    if a["procs"]:
        rows = []
        for name, p in sorted(a["procs"].items(), key=lambda kv: (kv[1]["kind"], kv[0])):
            rows.append((p["kind"], name, p["n"], "%.0f %%" % (p["cpu_sum"] / p["n"]), "%.0f %%" % p["cpu_peak"],
                         fmt_bytes(p["rss_peak"] * 1024), fmt_bytes(p["rss_last"] * 1024)))
        L += table(("kind", "process", "samples", "mean CPU", "peak CPU", "peak RSS", "last RSS"), rows)
        kinds = {}
        for p in a["procs"].values():
            k = kinds.setdefault(p["kind"], [0, 0.0, 0.0])
            k[0] += 1
            k[1] += p["cpu_sum"] / p["n"]
            k[2] += p["rss_peak"]
        L += ["", "By kind (sums over the processes):", ""]
        L += table(("kind", "processes", "mean CPU (sum)", "peak RSS (sum)"),
                   [(k, v[0], "%.0f %%" % v[1], fmt_bytes(v[2] * 1024)) for k, v in sorted(kinds.items())])
    else:
        L.append("No data: samples.tsv holds no samples.")

    L += ["", "## etcd sizes", ""]
    if a["etcd"]:
        L += table(("cluster", "member", "first", "last", "peak"),
                   [(c, m, fmt_bytes(e["first"]), fmt_bytes(e["last"]), fmt_bytes(e["peak"]))
                    for (c, m), e in sorted(a["etcd"].items())])
    else:
        L.append("No data: etcd.tsv holds no samples.")

    L += ["", "## Nodes", ""]
    if d["nodes"]:
        s = sorted(d["nodes"])
        L.append("Ready at the first sample %d of %d, at the last %d of %d; lowest %d." % (
            s[0][1], s[0][2], s[-1][1], s[-1][2], min(r for _t, r, _n in s)))
    else:
        L.append("No data: nodes.tsv holds no samples.")

    L += ["", "## Verify (verify.json)", ""] + kv_table(d["verify"])
    L += ["", "## Load (load.json)", ""] + kv_table(d["load"])

    L += ["", "## Plots", ""]
    for name, title in (("pod-startup.png", "Pod startup latency"), ("api-latency.png", "API call latency over time"),
                        ("daemons.png", "CPU and RSS per daemon"), ("nodes-ready.png", "Nodes Ready"),
                        ("etcd.png", "etcd database sizes")):
        L += ["![%s](%s)" % (title, name), ""]
    with open(os.path.join(out_dir, "report.md"), "w", encoding="utf-8") as f:
        f.write("\n".join(L).rstrip("\n") + "\n")


def main(argv):
    if len(argv) != 2 or argv[1].startswith("-"):
        print("usage: %s OUT_DIR" % argv[0], file=sys.stderr)
        return 2
    out_dir = os.path.abspath(argv[1])
    if not os.path.isdir(out_dir):
        print("region-report: missing %s (not a directory)" % out_dir, file=sys.stderr)
        return 2
    try:
        d = load(out_dir)
    except InputError as e:
        print("region-report: %s" % e, file=sys.stderr)
        return 2 if e.missing else 1
    a = analyse(d)
    plot_all(out_dir, d, a)
    report(out_dir, d, a)
    print("region-report: wrote %s and %s" % (os.path.join(out_dir, "report.md"), ", ".join(PLOTS)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
