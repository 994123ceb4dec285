#!/usr/bin/env bash
# What the etcd client's writes and reads cost etcd (bench/ursa-etcdwrite), against a fresh
# one-member etcd on free loopback ports in a temporary directory.
#
# usage: bench/run-etcd-write.sh [BUILD_DIR] [RUNS]
#   BUILD_DIR  a built tree (default build/): bench/ursa-etcdwrite and bench/ursa-load
#   RUNS       fresh etcds, one run each (default 1); figures of every run are printed
# Knobs (environment): THREADS (16), COUNT (20000), VALUE_SIZE (1000), WATCHERS (0: watch
#   streams of the client following the keys written, as API servers' caches do),
#   ETCDWRITE (another ursa-etcdwrite binary, e.g. one linked against an older client).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=$(cd "${1:-$ROOT/build}" 2>/dev/null && pwd) || { echo "run-etcd-write.sh: build dir not found" >&2; exit 1; }
RUNS=${2:-1}
: "${THREADS:=16}" "${COUNT:=20000}" "${VALUE_SIZE:=1000}" "${WATCHERS:=0}"
die() { echo "run-etcd-write.sh: $*" >&2; exit 1; }
LOAD=$BUILD/bench/ursa-load
WRITE=${ETCDWRITE:-$BUILD/bench/ursa-etcdwrite}
ETCD_BIN=$(command -v etcd || true)
[ -x "$ETCD_BIN" ] || die "etcd not found (apt-get install etcd-server)"
for b in "$LOAD" "$WRITE"; do [ -x "$b" ] || die "missing $b"; done

# shellcheck source=bench/lib.sh
. "$ROOT/bench/lib.sh"
bench_tmp ursa-bench-etcdwrite
echo "# $(date -u +%FT%TZ) $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg); $WRITE"
for r in $(seq "$RUNS"); do
	start_etcd "$TMP/etcd$r" etcdw$r
	"$WRITE" --etcd "$ETCD_URL" --etcd-pid "$ETCD_PID" --threads "$THREADS" --count "$COUNT" \
		--value-size "$VALUE_SIZE" --watchers "$WATCHERS"
	kill "$ETCD_PID"
	wait "$ETCD_PID" 2>/dev/null || true
	rm -rf "$TMP/etcd$r"
done
