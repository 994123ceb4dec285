#!/usr/bin/env bash
# The gateway's tenant-map load, two builds in one run: seeds MAP_TENANTS tenant records into a
# fresh etcd (free ports, temporary directory), then loads them ROUNDS times with each build's
# bench/ursa-gwmap, interleaved (A, B, A, B, ...), printing wall time, the loader's CPU, memory
# growth, lookup cost and etcd's CPU per load (from /proc). Medians are left to the reader.
# usage: bench/run-gwmap-ab.sh BUILD_A BUILD_B
# Knobs: MAP_TENANTS (1000000), ROUNDS (3), PAGE_A / PAGE_B (--page for that build's loader;
#   unset: the build's REGISTRY_PAGE; builds before ursa-gwmap had --page must leave it unset).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
[ $# -eq 2 ] || { sed -n '2,9p' "$0"; exit 2; }
A=$(cd "$1" && pwd)/bench/ursa-gwmap
B=$(cd "$2" && pwd)/bench/ursa-gwmap
for b in "$A" "$B"; do [ -x "$b" ] || { echo "missing $b (cmake --build <dir> --target ursa-gwmap)" >&2; exit 1; }; done
: "${MAP_TENANTS:=1000000}" "${ROUNDS:=3}"
die() { echo "run-gwmap-ab.sh: $*" >&2; exit 1; }
LOAD=$(cd "$2" && pwd)/bench/ursa-load
ETCD_BIN=$(command -v etcd || echo /usr/bin/etcd)
[ -x "$LOAD" ] || die "missing $LOAD (cmake --build $2 --target ursa-load)"
. "$ROOT/bench/lib.sh"
bench_tmp ursa-gwmap-ab
start_etcd "$TMP/etcd" map
"$B" seed --etcd "$ETCD_URL" --count "$MAP_TENANTS" --partitions 4 --clients 4 --txn-ops 128 | grep -v '^RESULT'
cpu() { awk '{print $14 + $15}' "/proc/$ETCD_PID/stat"; }
hz=$(getconf CLK_TCK)
for ((i = 1; i <= ROUNDS; i++)); do
	for side in A B; do
		bin=$A page=${PAGE_A:-}
		[ $side = B ] && bin=$B page=${PAGE_B:-}
		echo "=== $side round $i ($bin${page:+, page $page}) $(uptime)"
		c0=$(cpu)
		"$bin" load --etcd "$ETCD_URL" ${page:+--page "$page"} --rounds 1 --lookups 200000 | grep -E '^(loaded|lookup)'
		c1=$(cpu)
		echo "etcd CPU for this load: $(( (c1 - c0) * 1000 / hz )) ms"
	done
done
