#!/usr/bin/env bash
# Instructions per pod create in ursa-tp-apiserver, counted by callgrind (repeatable whatever
# else the machine runs, unlike the clock), for one or more builds, with a per-function
# breakdown (inclusive) of the create path.
#
# usage: bench/creates-callgrind.sh BUILD [BUILD...]
# Knobs: CREATES (2000), WARMUP (300), CLIENTS (8), POD_BYTES (1500).
#
# Each build gets a fresh etcd and its API server under valgrind --tool=callgrind; counters are
# zeroed after the warm-up creates (callgrind_control -z), dumped after CREATES more and a
# second for the watch cache to apply their events (callgrind_control -d): every thread's
# instructions, the watch cache's included, are divided by CREATES.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
: "${CREATES:=2000}" "${WARMUP:=300}" "${CLIENTS:=8}" "${POD_BYTES:=1500}"
[ $# -ge 1 ] || { sed -n '2,12p' "$0"; exit 2; }
ETCD_BIN=${ETCD_BIN:-$(command -v etcd || true)}
LOAD=$(cd "$1" && pwd)/bench/ursa-load
TOKEN="bench-$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')"
die() { echo "creates-callgrind.sh: $*" >&2; exit 1; }
[ -x "$LOAD" ] || die "no $LOAD"
command -v valgrind >/dev/null || die "valgrind not found"

# shellcheck source=bench/lib.sh
. "$ROOT/bench/lib.sh"
bench_tmp ursa-cg

FUNCS=(on_http handle_create parse_body check_fields prepare_new_object validate_mode admit store_encode_expect
	etcd_gc_put etcd_grpc_call reply_written watch_main wcache_apply_events follower_main)

for build in "$@"; do
	build=$(cd "$build" && pwd)
	name=$(basename "$build")
	dir=$TMP/$name
	mkdir -p "$dir"
	start_etcd "$dir" "cg-$name"
	port=$("$LOAD" free-port)
	printf '%s,admin,uid1,"system:masters",system\n' "$TOKEN" >"$dir/tokens.csv"
	valgrind --tool=callgrind --callgrind-out-file="$dir/cg.out" --dump-instr=no \
		"$build/src/tenant-partition/ursa-tp-apiserver" --listen "127.0.0.1:$port" --etcd-servers "$ETCD_URL" \
		--token-auth-file "$dir/tokens.csv" >"$dir/apiserver.log" 2>&1 &
	VG_PID=$!
	PIDS+=("$VG_PID")
	URL="http://127.0.0.1:$port"
	for i in $(seq 300); do
		"$LOAD" request --server "$URL" --token "$TOKEN" --path /healthz --expect any >/dev/null 2>&1 && break
		sleep 0.5
	done
	for i in $(seq 60); do
		"$LOAD" request --server "$URL" --token "$TOKEN" --method POST --path /api/v1/tenants \
			--data '{"apiVersion":"v1","kind":"Tenant","metadata":{"name":"bench"}}' --expect 201,409 >/dev/null 2>&1 &&
			"$LOAD" request --server "$URL" --token "$TOKEN" --path /api/v1/tenants/bench/namespaces/default \
				--expect 200 >/dev/null 2>&1 && break
		sleep 0.5
	done
	"$LOAD" create-pods --server "$URL" --token "$TOKEN" --tenant bench --namespace default --clients "$CLIENTS" \
		--count "$WARMUP" --duration 600 --pod-bytes "$POD_BYTES" >"$dir/warmup.out" 2>&1 || die "warm-up failed ($name)"
	sleep 2
	callgrind_control -z "$VG_PID" >/dev/null
	"$LOAD" create-pods --server "$URL" --token "$TOKEN" --tenant bench --namespace default --clients "$CLIENTS" \
		--count "$CREATES" --duration 1200 --pod-bytes "$POD_BYTES" >"$dir/load.out" 2>&1 || die "creates failed ($name)"
	sleep 1
	callgrind_control -d "$VG_PID" >/dev/null
	sleep 1
	kill "$VG_PID" 2>/dev/null || true
	wait "$VG_PID" 2>/dev/null || true
	kill "$ETCD_PID" 2>/dev/null || true
	wait "$ETCD_PID" 2>/dev/null || true
	dump=$(ls "$dir"/cg.out.* 2>/dev/null | sort | head -1)
	[ -n "$dump" ] || die "no callgrind dump ($name)"
	callgrind_annotate --inclusive=yes "$dump" >"$dir/annotate.txt" 2>/dev/null
	total=$(sed -n 's/^ *\([0-9,]*\) .*PROGRAM TOTALS.*/\1/p' "$dir/annotate.txt" | tr -d ,)
	echo "## $name: $(awk -v t="$total" -v n="$CREATES" 'BEGIN {printf "%.0f", t / n}') instructions per create (all threads)"
	for f in "${FUNCS[@]}"; do
		v=$(grep -E "[ :]$f( |\$|'|\[)" "$dir/annotate.txt" | head -1 | awk '{print $1}' | tr -d , || true)
		[ -n "$v" ] && echo "   $f: $(awk -v t="$v" -v n="$CREATES" 'BEGIN {printf "%.0f", t / n}')"
	done
done
