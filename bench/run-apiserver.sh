#!/usr/bin/env bash
# Benchmarks ursa-tp-apiserver next to the etcd it writes to, in one run, and prints a markdown
# table for docs/benchmarks.md.
#
# usage: bench/run-apiserver.sh [BUILD_DIR] [--etcd-only] [--quick]
#   BUILD_DIR    a built tree (default: build/ at the repository root)
#   --etcd-only  run only the etcd figures (no API server needed)
#   --quick      small counts and short durations, for a smoke test of the script itself
#
# Knobs (environment): DURATION (s, default 20), VALUE_BYTES (1500), PODS_RSS (100000),
# PODS_LIST (10000), LIST_REPEAT (20), WATCHERS (1000), UPDATES (1000), WATCH_THREADS (1).
#
# Everything runs on loopback with free ports and a temporary directory; every step is bounded
# by `timeout`; processes and the directory are removed on exit.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=""
ETCD_ONLY=0
QUICK=0
for arg in "$@"; do
	case "$arg" in
	--etcd-only) ETCD_ONLY=1 ;;
	--quick) QUICK=1 ;;
	-h|--help) sed -n '2,15p' "$0"; exit 0 ;;
	-*) echo "run-apiserver.sh: unknown option $arg" >&2; exit 2 ;;
	*) BUILD=$arg ;;
	esac
done
BUILD=$(cd "${BUILD:-$ROOT/build}" 2>/dev/null && pwd) || { echo "run-apiserver.sh: build dir not found" >&2; exit 1; }

if [ "$QUICK" = 1 ]; then
	: "${DURATION:=3}" "${PODS_RSS:=2000}" "${PODS_LIST:=500}" "${LIST_REPEAT:=5}"
	: "${WATCHERS:=50}" "${UPDATES:=50}"
fi
: "${DURATION:=20}" "${VALUE_BYTES:=1500}" "${PODS_RSS:=100000}" "${PODS_LIST:=10000}"
: "${LIST_REPEAT:=20}" "${WATCHERS:=1000}" "${UPDATES:=1000}" "${WATCH_THREADS:=1}"

ETCD_BIN=${ETCD_BIN:-$(command -v etcd || true)}
APISERVER=$BUILD/src/tenant-partition/ursa-tp-apiserver
LOAD=$BUILD/bench/ursa-load
TOKEN="bench-$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')"

die() { echo "run-apiserver.sh: $*" >&2; exit 1; }

[ -x "$ETCD_BIN" ] || die "etcd not found (apt-get install etcd-server)"
if [ "$ETCD_ONLY" = 0 ] && [ ! -x "$APISERVER" ]; then
	die "API server binary missing: $APISERVER (build it first: cmake --build $BUILD --target ursa-tp-apiserver), or use --etcd-only"
fi

# shellcheck source=bench/lib.sh
. "$ROOT/bench/lib.sh"
bench_tmp ursa-bench

if [ ! -x "$LOAD" ]; then
	# The tool is self-contained, so a tree where bench/ has not been built still works.
	echo "# $LOAD not built; compiling bench/ursa-load.c into $TMP" >&2
	gcc -std=gnu11 -O2 "$ROOT/bench/ursa-load.c" -o "$TMP/ursa-load" -lcurl -ljansson -lpthread -lm \
		|| die "cannot compile bench/ursa-load.c"
	LOAD=$TMP/ursa-load
fi

ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)" 2>/dev/null || true

# ---- processes ----------------------------------------------------------------------------

# start_apiserver NAME: sets API_URL and API_PID (needs ETCD_URL).
start_apiserver() {
	local name=$1 port i
	port=$("$LOAD" free-port)
	mkdir -p "$TMP/$name"
	printf '%s,admin,uid1,"system:masters",system\n' "$TOKEN" >"$TMP/$name/tokens.csv"
	"$APISERVER" --listen "127.0.0.1:$port" --etcd-servers "$ETCD_URL" \
		--token-auth-file "$TMP/$name/tokens.csv" >"$TMP/$name/apiserver.log" 2>&1 &
	API_PID=$!
	PIDS+=("$API_PID")
	API_URL="http://127.0.0.1:$port"
	for i in $(seq 150); do
		if "$LOAD" request --server "$API_URL" --token "$TOKEN" --path /healthz --expect any >/dev/null 2>&1; then
			return 0
		fi
		kill -0 "$API_PID" 2>/dev/null || break
		sleep 0.2
	done
	tail -20 "$TMP/$name/apiserver.log" >&2
	die "ursa-tp-apiserver $name did not start listening"
}

stop_pid() {
	kill "$1" 2>/dev/null || true
	wait "$1" 2>/dev/null || true
}

check_alive() {
	kill -0 "$API_PID" 2>/dev/null && return 0
	tail -30 "$TMP"/*/apiserver.log >&2 || true
	die "ursa-tp-apiserver died during: $1"
}

# api METHOD PATH BODY EXPECT: one request with retries for a few seconds.
api() {
	local i
	for i in $(seq 25); do
		if "$LOAD" request --server "$API_URL" --token "$TOKEN" --method "$1" --path "$2" \
			${3:+--data "$3"} --expect "$4" >"$TMP/last-request.out" 2>&1; then
			return 0
		fi
		sleep 0.2
	done
	cat "$TMP/last-request.out" >&2
	return 1
}

create_tenant() {
	api POST /api/v1/tenants '{"apiVersion":"v1","kind":"Tenant","metadata":{"name":"bench"}}' 201,409 \
		|| die "cannot create tenant bench"
	# The tenant's namespace "default" is created with it, possibly asynchronously.
	api GET /api/v1/tenants/bench/namespaces/default "" 200 \
		|| echo "# warning: namespace bench/default not visible" >&2
}

# ---- measurements -------------------------------------------------------------------------

# run NAME LIMIT_S ursa-load-args...: runs ursa-load, keeps its output in $TMP/NAME.out.
run() {
	local name=$1 limit=$2
	shift 2
	echo "## $name: ursa-load $*" >&2
	# In the background so that a signal to this script is handled at once (see bench_cleanup in bench/lib.sh).
	timeout -k 10 "$limit" "$LOAD" "$@" >"$TMP/$name.out" 2>&1 &
	RUN_PID=$!
	wait "$RUN_PID" || echo "# $name exited with $?" >&2
	RUN_PID=""
	grep -v '^RESULT ' "$TMP/$name.out" >&2 || true
}

# field NAME KEY: a scalar from the RESULT line of run NAME ("-" if absent).
field() {
	local v
	v=$(grep '^RESULT ' "$TMP/$1.out" 2>/dev/null | tail -1 | sed -n "s/.*\"$2\":\([^,}]*\).*/\1/p")
	echo "${v:--}"
}

fmt() { # fmt PRINTF-FORMAT VALUE
	if [ "$2" = "-" ]; then echo "-"; else LC_ALL=C printf "$1" "$2"; fi
}

rss_kb() { "$LOAD" rss --pid "$1" | sed -n 's/.*"rss_kb":\([0-9-]*\).*/\1/p'; }

LOAD_BEFORE=$(uptime | sed 's/.*load average: //')
START_DATE=$(date -u +%Y-%m-%dT%H:%M:%SZ)

# Phase 1: throughput, etcd directly and through the API server, on the same etcd.
start_etcd "$TMP/etcd1" etcd1
if [ "$ETCD_ONLY" = 0 ]; then
	start_apiserver api1
	create_tenant
fi
for n in 8 64; do
	run "etcd-put-$n" $((DURATION + 60)) etcd-put --endpoint "$ETCD_URL" --clients "$n" \
		--duration "$DURATION" --value-bytes "$VALUE_BYTES"
	if [ "$ETCD_ONLY" = 0 ]; then
		run "create-pods-$n" $((DURATION + 60)) create-pods --server "$API_URL" --token "$TOKEN" \
			--tenant bench --namespace default --clients "$n" --duration "$DURATION" \
			--pod-bytes "$VALUE_BYTES"
		check_alive "create-pods at $n clients"
	fi
done

if [ "$ETCD_ONLY" = 0 ]; then
	stop_pid "$API_PID"
	stop_pid "$ETCD_PID"

	# Phase 2: memory, LIST and watch on a fresh etcd and API server.
	start_etcd "$TMP/etcd2" etcd2
	start_apiserver api2
	sleep 2
	RSS_IDLE=$(rss_kb "$API_PID")
	create_tenant
	run create-pods-rss 1800 create-pods --server "$API_URL" --token "$TOKEN" --tenant bench \
		--namespace default --clients 64 --count "$PODS_RSS" --duration 1700 --pod-bytes "$VALUE_BYTES"
	check_alive "creating $PODS_RSS pods"
	sleep 2
	RSS_FULL=$(rss_kb "$API_PID")

	api POST /api/v1/tenants/bench/namespaces \
		'{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"list10k"}}' 201,409 \
		|| die "cannot create namespace list10k"
	run create-pods-list 900 create-pods --server "$API_URL" --token "$TOKEN" --tenant bench \
		--namespace list10k --clients 64 --count "$PODS_LIST" --duration 800 --pod-bytes "$VALUE_BYTES"
	run list 600 list --server "$API_URL" --token "$TOKEN" --repeat "$LIST_REPEAT" \
		--path "/api/v1/tenants/bench/namespaces/list10k/pods?resourceVersion=0&limit=$PODS_LIST"
	check_alive "LIST"

	run watch 900 watch --server "$API_URL" --token "$TOKEN" --tenant bench --namespace default \
		--watchers "$WATCHERS" --updates "$UPDATES" --watch-threads "$WATCH_THREADS" --duration 800
	check_alive "watch"
fi

LOAD_AFTER=$(uptime | sed 's/.*load average: //')

# ---- report -------------------------------------------------------------------------------

MODEL=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)
ETCD_VER=$("$ETCD_BIN" --version | sed -n 's/^etcd Version: //p')
cat <<EOF

### Ursa tenant-partition API server vs etcd ($START_DATE)

Machine: $(nproc) CPUs, ${MODEL:-unknown CPU}, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo) RAM, Linux $(uname -r); etcd $ETCD_VER; everything on loopback, plain HTTP.
Load average before: $LOAD_BEFORE; after: $LOAD_AFTER.
Writes are closed-loop for ${DURATION} s, ${VALUE_BYTES}-byte values (etcd) and pods of about ${VALUE_BYTES} bytes of JSON (API server).

| Write path | Clients | ok/s | p50 ms | p90 ms | p99 ms | max ms | errors |
| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |
EOF
for n in 8 64; do
	for t in etcd-put create-pods; do
		[ -f "$TMP/$t-$n.out" ] || continue
		case $t in etcd-put) label="etcd \`/v3/kv/put\`" ;; *) label="API server pod create" ;; esac
		echo "| $label | $n | $(fmt %.0f "$(field "$t-$n" ops_per_s)") | $(fmt %.2f "$(field "$t-$n" p50_ms)") | $(fmt %.2f "$(field "$t-$n" p90_ms)") | $(fmt %.2f "$(field "$t-$n" p99_ms)") | $(fmt %.2f "$(field "$t-$n" max_ms)") | $(field "$t-$n" errors) |"
	done
done

if [ "$ETCD_ONLY" = 0 ]; then
	PODS_MADE=$(field create-pods-rss ok)
	PER_POD="-"
	if [ -n "$RSS_IDLE" ] && [ -n "$RSS_FULL" ] && [ "$PODS_MADE" != "-" ] && [ "$PODS_MADE" -gt 0 ]; then
		PER_POD=$(awk -v a="$RSS_IDLE" -v b="$RSS_FULL" -v n="$PODS_MADE" 'BEGIN {printf "%.2f", (b - a) * 1024 / n / 1024}')
	fi
	cat <<EOF

| API server memory | Value |
| --- | ---: |
| RSS, fresh and idle | $(awk -v k="${RSS_IDLE:-0}" 'BEGIN {printf "%.1f MiB", k/1024}') |
| RSS after creating $PODS_MADE pods (64 clients, $(fmt %.0f "$(field create-pods-rss ops_per_s)") pods/s) | $(awk -v k="${RSS_FULL:-0}" 'BEGIN {printf "%.1f MiB", k/1024}') |
| Per pod | $PER_POD KiB |

| LIST $(field list items) pods of one namespace, \`resourceVersion=0\` | Value |
| --- | ---: |
| p50 / p99 latency | $(fmt %.1f "$(field list p50_ms)") / $(fmt %.1f "$(field list p99_ms)") ms |
| Bytes per response | $(fmt %.0f "$(field list bytes_per_response)") |
| Throughput | $(fmt %.1f "$(field list mb_per_s)") MB/s |

| Watch: $WATCHERS watchers of configmaps, $UPDATES merge-patches | Value |
| --- | ---: |
| Streams established | $(field watch established) |
| Updates (ok/s, p50 ms) | $(field watch updates_ok) ($(fmt %.0f "$(field watch updates_per_s)")/s, $(fmt %.2f "$(field watch update_p50_ms)") ms) |
| Events delivered / expected | $(field watch events) / $(field watch expected) |
| Duplicate events / streams ended early | $(field watch duplicates) / $(field watch ended_early) |
| Delivery rate | $(fmt %.0f "$(field watch events_per_s)") events/s |
| Lag p50 / p99 / max | $(fmt %.1f "$(field watch lag_p50_ms)") / $(fmt %.1f "$(field watch lag_p99_ms)") / $(fmt %.1f "$(field watch lag_max_ms)") ms |
| Every watcher got every event | $(field watch all_delivered) |
EOF
fi
