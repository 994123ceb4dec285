#!/usr/bin/env bash
# Pod creates straight to ursa-tp-apiserver against etcd's own JSON-gateway puts, in one run of
# interleaved rounds, optionally beside a previous build (issue 22, "creates near etcd's pace").
# Prints a markdown report for docs/benchmarks.md.
#
# usage: bench/run-creates.sh [--base BUILD_A] [BUILD_B]
#   BUILD_B       the build measured (default: build/ at the repository root)
#   --base DIR    also measure this build's API server in the same rounds ("A", the change's parent)
#
# Knobs (environment): ROUNDS (3), DURATION (s per leg, 10), CLIENTS ("8 64"), POD_BYTES (1500:
# the pod as sent), PUT_BYTES (default: the size of such a pod as stored in etcd, measured at
# start), PERF_DIR (if set: `perf record -g` of the API server and etcd during B's create legs,
# one perf.data per client count, left in that directory; PERF_CALLGRAPH: perf's --call-graph,
# dwarf,16384 by default since the C code is built without frame pointers; the leg's row, with
# its ok count, says how many creates the profile covers), KEEP_ROWS (a file to copy the raw rows to).
#
# Each leg starts a fresh one-member etcd (and, for a create leg, a fresh API server with tenant
# "bench"), so that no leg inherits another's database or cache; the order of the legs rotates
# each round. CPU per op is utime+stime from /proc/PID/stat over the load, divided by the ops
# that succeeded: the API server's, etcd's and the load generator's. Everything is on loopback,
# bounded by `timeout`, and removed on exit.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=""
BASE=""
while [ $# -gt 0 ]; do
	case "$1" in
	--base) BASE=${2:?--base needs a build dir}; shift 2 ;;
	-h|--help) sed -n '2,22p' "$0"; exit 0 ;;
	-*) echo "run-creates.sh: unknown option $1" >&2; exit 2 ;;
	*) BUILD=$1; shift ;;
	esac
done
BUILD=$(cd "${BUILD:-$ROOT/build}" 2>/dev/null && pwd) || { echo "run-creates.sh: build dir not found" >&2; exit 1; }
if [ -n "$BASE" ]; then
	BASE=$(cd "$BASE" 2>/dev/null && pwd) || { echo "run-creates.sh: base build dir not found" >&2; exit 1; }
fi

: "${ROUNDS:=3}" "${DURATION:=10}" "${CLIENTS:=8 64}" "${POD_BYTES:=1500}" "${PUT_BYTES:=}" "${PERF_DIR:=}" "${KEEP_ROWS:=}"
: "${PERF_CALLGRAPH:=dwarf,16384}"

ETCD_BIN=${ETCD_BIN:-$(command -v etcd || true)}
LOAD=$BUILD/bench/ursa-load
TOKEN="bench-$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')"
HZ=$(getconf CLK_TCK)

die() { echo "run-creates.sh: $*" >&2; exit 1; }

[ -x "$ETCD_BIN" ] || die "etcd not found (apt-get install etcd-server)"
[ -x "$BUILD/src/tenant-partition/ursa-tp-apiserver" ] || die "no ursa-tp-apiserver in $BUILD"
[ -z "$BASE" ] || [ -x "$BASE/src/tenant-partition/ursa-tp-apiserver" ] || die "no ursa-tp-apiserver in $BASE"
[ -z "$PERF_DIR" ] || command -v perf >/dev/null || die "PERF_DIR set but perf not found"

# shellcheck source=bench/lib.sh
. "$ROOT/bench/lib.sh"
bench_tmp ursa-creates

if [ ! -x "$LOAD" ]; then
	echo "# $LOAD not built; compiling bench/ursa-load.c into $TMP" >&2
	gcc -std=gnu11 -O2 "$ROOT/bench/ursa-load.c" -o "$TMP/ursa-load" -lcurl -ljansson -lpthread -lm \
		|| die "cannot compile bench/ursa-load.c"
	LOAD=$TMP/ursa-load
fi
ulimit -n 65536 2>/dev/null || true

# cpu_ticks PID: utime+stime of PID (0 if gone).
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat" 2>/dev/null || echo 0; }

stop_pid() {
	kill "$1" 2>/dev/null || true
	wait "$1" 2>/dev/null || true
}

# start_apiserver BIN DIR: sets API_URL and API_PID (needs ETCD_URL).
start_apiserver() {
	local bin=$1 dir=$2 port i
	port=$("$LOAD" free-port)
	mkdir -p "$dir"
	printf '%s,admin,uid1,"system:masters",system\n' "$TOKEN" >"$dir/tokens.csv"
	"$bin" --listen "127.0.0.1:$port" --etcd-servers "$ETCD_URL" --token-auth-file "$dir/tokens.csv" \
		>"$dir/apiserver.log" 2>&1 &
	API_PID=$!
	PIDS+=("$API_PID")
	API_URL="http://127.0.0.1:$port"
	for i in $(seq 150); do
		"$LOAD" request --server "$API_URL" --token "$TOKEN" --path /healthz --expect any >/dev/null 2>&1 && return 0
		kill -0 "$API_PID" 2>/dev/null || break
		sleep 0.2
	done
	tail -20 "$dir/apiserver.log" >&2
	die "ursa-tp-apiserver ($bin) did not start listening"
}

api() { # api METHOD PATH BODY EXPECT, retried for a few seconds
	local i
	for i in $(seq 25); do
		"$LOAD" request --server "$API_URL" --token "$TOKEN" --method "$1" --path "$2" ${3:+--data "$3"} \
			--expect "$4" >"$TMP/last-request.out" 2>&1 && return 0
		sleep 0.2
	done
	cat "$TMP/last-request.out" >&2
	return 1
}

create_tenant() {
	api POST /api/v1/tenants '{"apiVersion":"v1","kind":"Tenant","metadata":{"name":"bench"}}' 201,409 \
		|| die "cannot create tenant bench"
	api GET /api/v1/tenants/bench/namespaces/default "" 200 || die "namespace bench/default not visible"
}

# field FILE KEY: a scalar from the RESULT line of an ursa-load output ("-" if absent).
field() {
	local v
	v=$(grep '^RESULT ' "$1" 2>/dev/null | tail -1 | sed -n "s/.*\"$2\":\([^,}]*\).*/\1/p")
	echo "${v:--}"
}

LEG=0
# leg ROUND N KIND [BUILD_LABEL BIN]: one measured leg on a fresh etcd; appends a row to $TMP/rows.
leg() {
	local round=$1 n=$2 kind=$3 label=${4:-etcd} bin=${5:-} dir out a0 e0 a1 e1 l0 l1 perf_pid=""
	LEG=$((LEG + 1))
	dir=$TMP/leg$LEG
	start_etcd "$dir" "leg$LEG"
	if [ "$kind" = create ]; then
		start_apiserver "$bin" "$dir"
		create_tenant
	else
		API_PID=""
	fi
	sleep 1
	out=$dir/load.out
	if [ -n "$PERF_DIR" ] && [ "$kind" = create ] && [ "$label" = B ] && [ ! -e "$PERF_DIR/perf-$n.data" ]; then
		perf record --call-graph "$PERF_CALLGRAPH" -F 999 -o "$PERF_DIR/perf-$n.data" -p "$API_PID,$ETCD_PID" >"$dir/perf.log" 2>&1 &
		perf_pid=$!
		sleep 0.5
	fi
	a0=$( [ -n "$API_PID" ] && cpu_ticks "$API_PID" || echo 0)
	e0=$(cpu_ticks "$ETCD_PID")
	l0=$(awk '{print $14 + $15 + $16 + $17}' /proc/$$/stat)
	if [ "$kind" = create ]; then
		timeout -k 10 $((DURATION + 60)) "$LOAD" create-pods --server "$API_URL" --token "$TOKEN" \
			--tenant bench --namespace default --clients "$n" --duration "$DURATION" \
			--pod-bytes "$POD_BYTES" >"$out" 2>&1 &
	else
		timeout -k 10 $((DURATION + 60)) "$LOAD" etcd-put --endpoint "$ETCD_URL" --clients "$n" \
			--duration "$DURATION" --value-bytes "$PUT_BYTES" >"$out" 2>&1 &
	fi
	RUN_PID=$!
	wait "$RUN_PID" || echo "# leg $LEG ($kind $label, $n clients) exited with $?" >&2
	RUN_PID=""
	a1=$( [ -n "$API_PID" ] && cpu_ticks "$API_PID" || echo 0)
	e1=$(cpu_ticks "$ETCD_PID")
	# the load generator was a child of this shell: its CPU shows in cutime+cstime once reaped
	l1=$(awk '{print $14 + $15 + $16 + $17}' /proc/$$/stat)
	if [ -n "$perf_pid" ]; then
		kill -INT "$perf_pid" 2>/dev/null || true
		wait "$perf_pid" 2>/dev/null || true
	fi
	local ok ops wpt="-"
	if [ "$kind" = create ]; then
		curl -sf -H "Authorization: Bearer $TOKEN" "$API_URL/metrics" >"$dir/metrics" 2>/dev/null || true
		wpt=$(awk '$1 == "ursa_etcd_writes_total" {w = $2} $1 == "ursa_etcd_write_txns_total" {t = $2}
			END {if (t > 0) printf "%.2f", w / t; else print "-"}' "$dir/metrics")
	fi
	ok=$(field "$out" ok)
	ops=$(field "$out" ops_per_s)
	awk -v r="$round" -v n="$n" -v k="$kind" -v b="$label" -v ok="$ok" -v ops="$ops" \
		-v p50="$(field "$out" p50_ms)" -v p99="$(field "$out" p99_ms)" -v err="$(field "$out" errors)" \
		-v wpt="$wpt" -v a=$((a1 - a0)) -v e=$((e1 - e0)) -v l=$((l1 - l0)) -v hz="$HZ" 'BEGIN {
		us = 1e6 / hz
		if (ok == "-" || ok == 0) { ok = 0; d = 1 } else d = ok
		printf "%s %s %s %s %.0f %.2f %.2f %s %.1f %.1f %.1f %s %s\n", r, n, k, b, ops, p50, p99, err,
			(k == "create" ? a * us / d : 0), e * us / d, l * us / d, wpt, ok
	}' >>"$TMP/rows"
	grep -v '^RESULT ' "$out" | sed "s/^/# leg $LEG: /" >&2 || true
	[ -z "$API_PID" ] || stop_pid "$API_PID"
	stop_pid "$ETCD_PID"
	rm -rf "$dir/etcd"
}

LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
START_DATE=$(date -u +%Y-%m-%dT%H:%M:%SZ)
[ -z "$PERF_DIR" ] || mkdir -p "$PERF_DIR"

# The stored size of a pod of POD_BYTES: the put legs write values of that size.
if [ -z "$PUT_BYTES" ]; then
	start_etcd "$TMP/probe" probe
	start_apiserver "$BUILD/src/tenant-partition/ursa-tp-apiserver" "$TMP/probe"
	create_tenant
	"$LOAD" create-pods --server "$API_URL" --token "$TOKEN" --tenant bench --namespace default --clients 1 \
		--count 1 --pod-bytes "$POD_BYTES" >"$TMP/probe/load.out" 2>&1 || die "probe create failed"
	# the pod as the API server returns it, less the resourceVersion it splices in
	PUT_BYTES=$(curl -sf -H "Authorization: Bearer $TOKEN" "$API_URL/api/v1/tenants/bench/namespaces/default/pods" |
		python3 -c 'import json,sys; p=json.load(sys.stdin)["items"][0]; p["metadata"].pop("resourceVersion",None); print(len(json.dumps(p,separators=(",",":"))))')
	stop_pid "$API_PID"
	stop_pid "$ETCD_PID"
	echo "# put value size: $PUT_BYTES bytes (a $POD_BYTES-byte pod as stored)" >&2
fi

: >"$TMP/rows"
for round in $(seq "$ROUNDS"); do
	for n in $CLIENTS; do
		legs=("put" "B")
		[ -z "$BASE" ] || legs+=("A")
		k=$(((round - 1) % ${#legs[@]}))
		for i in $(seq 0 $((${#legs[@]} - 1))); do
			which=${legs[$(((i + k) % ${#legs[@]}))]}
			case $which in
			put) leg "$round" "$n" put ;;
			B) leg "$round" "$n" create B "$BUILD/src/tenant-partition/ursa-tp-apiserver" ;;
			A) leg "$round" "$n" create A "$BASE/src/tenant-partition/ursa-tp-apiserver" ;;
			esac
		done
	done
done

LOAD_AFTER=$(cut -d' ' -f1-3 /proc/loadavg)

# ---- report -------------------------------------------------------------------------------

MODEL=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)
ETCD_VER=$("$ETCD_BIN" --version | sed -n 's/^etcd Version: //p')
cat <<EOF

### Pod creates against etcd puts ($START_DATE, $ROUNDS interleaved rounds of ${DURATION} s legs)

Machine: $(nproc) CPUs, ${MODEL:-unknown CPU}, Linux $(uname -r); etcd $ETCD_VER; loopback, plain HTTP.
B = $BUILD${BASE:+; A = $BASE}. Pods of about $POD_BYTES bytes as sent; puts of $PUT_BYTES-byte values
(the pod as stored). Load average (1/5/15 min) before: $LOAD_BEFORE; after: $LOAD_AFTER.

Every leg (raw):

| round | clients | leg | ok/s | p50 ms | p99 ms | errors | API server µs CPU/op | etcd µs CPU/op | load generator µs CPU/op | writes per etcd txn |
| ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |
EOF
awk '{ leg = ($3 == "put") ? "etcd put" : "create " $4
	printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", $1, $2, leg, $5, $6, $7, $8,
		($3 == "put" ? "-" : $9), $10, $11, $12 }' "$TMP/rows"
[ -z "$KEEP_ROWS" ] || cp "$TMP/rows" "$KEEP_ROWS"

cat <<EOF

Medians over the rounds; "of puts" is the median of each round's creates/s over the same
round's puts/s:

| clients | leg | ok/s | of puts | p50 ms | p99 ms | API server µs CPU/op | etcd µs CPU/op | load generator µs CPU/op | writes per etcd txn |
| ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |
EOF
python3 - "$TMP/rows" "$CLIENTS" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1]) if l.strip()]
med = lambda xs: statistics.median(xs) if xs else float("nan")
for n in sys.argv[2].split():
    puts = {r[0]: float(r[4]) for r in rows if r[1] == n and r[2] == "put"}
    for label, sel in (("etcd put", lambda r: r[2] == "put"), ("create A", lambda r: r[2] == "create" and r[3] == "A"),
                       ("create B", lambda r: r[2] == "create" and r[3] == "B")):
        rs = [r for r in rows if r[1] == n and sel(r)]
        if not rs:
            continue
        ratio = [float(r[4]) / puts[r[0]] for r in rs if puts.get(r[0])]
        api = "-" if label == "etcd put" else "%.0f" % med([float(r[8]) for r in rs])
        wpt = [float(r[11]) for r in rs if r[11] != "-"]
        print("| %s | %s | %.0f | %s | %.2f | %.2f | %s | %.0f | %.0f | %s |" % (
            n, label, med([float(r[4]) for r in rs]), "%.2f" % med(ratio) if label != "etcd put" else "1",
            med([float(r[5]) for r in rs]), med([float(r[6]) for r in rs]), api,
            med([float(r[9]) for r in rs]), med([float(r[10]) for r in rs]), "%.1f" % med(wpt) if wpt else "-"))
PY
if [ -n "$PERF_DIR" ]; then
	echo
	echo "Profiles of B's first create leg per client count: $PERF_DIR/perf-N.data (perf report -i ... --no-children --sort comm,dso,sym)"
fi
