#!/usr/bin/env python3
"""Where a pod create's CPU goes: buckets a `perf record --call-graph dwarf` profile of
ursa-tp-apiserver and etcd (bench/run-creates.sh with PERF_DIR) by the innermost known frame of
each sample, and prints µs of CPU per create for each bucket.

usage: bench/create-profile.py PERF_DATA CREATES [APISERVER_US_PER_CREATE ETCD_US_PER_CREATE]

CREATES: the creates made while perf recorded (the leg's ok count). Without the measured CPU per
create, samples are turned into µs at perf's sampling rate (-F 999 in run-creates.sh);
with it, each process's samples are scaled to its measured CPU (perf loses some samples).
"""
import collections
import subprocess
import sys

# (bucket, frames): a sample goes to the bucket of the innermost frame of its stack found here.
BUCKETS = [
    ("request JSON parse (parse_body)", ["parse_body"]),
    ("unknown-field check (check_fields)", ["check_fields", "fieldval_check"]),
    ("uid, hashKey, timestamp", ["new_uid", "set_now", "random_suffix", "hash_key_of_uid"]),
    ("defaults (strategy)", ["pod_defaults", "pod_spec_defaults", "pod_prepare_create"]),
    ("validation", ["validate_mode", "validate_object_meta", "pod_validate"]),
    ("prepare_new_object (rest)", ["prepare_new_object", "check_type_meta"]),
    ("parent namespace lookup", ["check_parents", "lookup_phase"]),
    ("admission (podsecurity, quota, ...)", ["admit"]),
    ("encode to JSON + write hint", ["store_encode_expect"]),
    ("etcd: txn build/decode", ["build_txn", "etcd_pb_decode_txn", "settle_failures"]),
    ("etcd: gRPC call (libcurl, nghttp2, socket)", ["etcd_grpc_call"]),
    ("etcd: group commit (locks, waits)", ["etcd_gc_put", "etcd_create"]),
    ("reply (splice rv, response)", ["reply_written", "reply_json", "reply_buf"]),
    ("do_create (rest)", ["do_create"]),
    ("handle_create (rest)", ["handle_create"]),
    ("authn/authz/routing (on_http rest)", ["on_http"]),
    ("worker pool: queue, resume", ["worker_main"]),
    ("watch: cache apply (cobj, index, fan-out)", ["wcache_apply_events"]),
    ("watch: gRPC stream decode", ["etcd_pb_decode_watch", "on_stream_data"]),
    ("watch: stream (libcurl, socket)", ["watch_main"]),
    ("cache follower (watch delivery)", ["follower_main"]),
    ("HTTP server threads (libmicrohttpd)", ["MHD_run", "MHD_polling_thread", "MHD_select_thread"]),
]
FRAME_BUCKET = {f: b for b, fs in BUCKETS for f in fs}
ORDER = [b for b, _ in BUCKETS]


def samples(path):
    out = subprocess.run(["perf", "script", "-i", path, "-F", "comm,tid,period,ip,sym"], capture_output=True,
                         text=True, errors="replace").stdout
    comm, stack = None, []
    for line in out.splitlines():
        if not line.strip():
            if comm:
                yield comm, stack
            comm, stack = None, []
        elif not line.startswith("\t") and not line.startswith(" " * 8):
            comm = line.split()[0]
        else:
            parts = line.split(None, 1)
            sym = parts[1].replace(" (inlined)", "").strip() if len(parts) > 1 else "?"
            # kernel frames are marked, by address, for etcd's split (its Go symbols are stripped)
            stack.append(("[k]" if parts[0].startswith("ffffffff") else "") + sym)
    if comm:
        yield comm, stack


def main():
    path, creates = sys.argv[1], int(sys.argv[2])
    measured = [float(x) for x in sys.argv[3:5]] if len(sys.argv) >= 5 else None
    counts = {"api": collections.Counter(), "etcd": collections.Counter()}
    kernel = {"api": collections.Counter(), "etcd": collections.Counter()}
    for comm, stack in samples(path):
        proc = "etcd" if comm == "etcd" else "api"
        if proc == "etcd":
            leaf = stack[0] if stack else "?"
            counts["etcd"]["etcd (kernel: network, fsync, scheduling)" if leaf.startswith("[k]") else "etcd (user)"] += 1
            continue
        stack = [f[3:] if f.startswith("[k]") else f for f in stack]
        b = None
        for f in stack:  # innermost first
            if f in FRAME_BUCKET:
                b = FRAME_BUCKET[f]
                break
        if b is None:
            b = "MHD threads (libmicrohttpd, sockets)" if comm == "MHD-worker" else "other"
        counts["api"][b] += 1
    hz = 999.0
    for proc in ("api", "etcd"):
        total = sum(counts[proc].values())
        if not total:
            continue
        scale = (measured[0 if proc == "api" else 1] / total) if measured else (1e6 / hz / creates)
        print("\n| %s | µs CPU per create | share |" % ("ursa-tp-apiserver" if proc == "api" else "etcd"))
        print("| --- | ---: | ---: |")
        keys = sorted(counts[proc], key=lambda k: -counts[proc][k])
        for k in keys:
            print("| %s | %.1f | %.1f %% |" % (k, counts[proc][k] * scale, 100.0 * counts[proc][k] / total))
        print("| **total** (%d samples) | **%.0f** | |" % (total, total * scale))


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    main()
