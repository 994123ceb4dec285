#!/usr/bin/env bash
# Watch fan-out through one ursa-gateway: starts an etcd and a tenant partition API server, a
# gateway etcd and one gateway (plain HTTP, loopback, free ports, temporary directory), creates a
# tenant, then runs bench/ursa-watchers: WATCHES concurrent watches on the tenant's configmaps
# through the gateway, OBJECTS creates, and the fan-out figures (events received, latency
# p50/p99, RSS and CPU seconds of the gateway and the API server).
#
# usage: bench/run-gateway-watches.sh [BUILD_DIR]
# Knobs (environment): WATCHES (10000), OBJECTS (20), INTERVAL_MS (500), BATCH (200), SETTLE (30),
# DIRECT=1 also runs the same watches straight at the API server afterwards (the baseline),
# GW_WORKERS (1) the gateway's --workers, GETS=1 also measures what holding the watches does to
# plain requests: GETs of one object through the gateway (bench/ursa-gwload, 16 clients, 8 s)
# before the watches and again while they are held, with the gateway's and the API server's CPU
# per GET (libmicrohttpd walks every suspended connection on each resume, and an idle stream is
# one: docs/architecture.md).
#
# Each watch costs the gateway two descriptors (client + partition) and a process cannot open
# more than `ulimit -Hn` files, so with a hard limit of 20000 one gateway process holds about
# 9,9xx watches and answers the rest 503 at once; the script prints exactly how many it held.
# With GW_WORKERS=2 the instance's two worker processes share the watches (SO_REUSEPORT).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=$(cd "${1:-$ROOT/build}" 2>/dev/null && pwd) || { echo "run-gateway-watches.sh: build dir not found" >&2; exit 1; }
: "${WATCHES:=10000}" "${OBJECTS:=20}" "${INTERVAL_MS:=500}" "${BATCH:=200}" "${SETTLE:=30}" "${GW_WORKERS:=1}"

ETCD_BIN=${ETCD_BIN:-$(command -v etcd || true)}
APISERVER=$BUILD/src/tenant-partition/ursa-tp-apiserver
GATEWAY=$BUILD/src/gateway/ursa-gateway
LOAD=$BUILD/bench/ursa-load
WATCHERS=$BUILD/bench/ursa-watchers
GWLOAD=$BUILD/bench/ursa-gwload
URSACTL=$BUILD/src/ursactl/ursactl
TOKEN="bench-$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')"

die() { echo "run-gateway-watches.sh: $*" >&2; exit 1; }
[ -x "$ETCD_BIN" ] || die "etcd not found (apt-get install etcd-server)"
for b in "$APISERVER" "$GATEWAY" "$LOAD" "$WATCHERS" "$URSACTL"; do
	[ -x "$b" ] || die "missing $b (cmake --build $BUILD --target ursa-tp-apiserver ursa-gateway ursa-load ursa-watchers ursactl)"
done

# shellcheck source=bench/lib.sh
. "$ROOT/bench/lib.sh"
bench_tmp ursa-gw-watches
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true

wait_http() { # URL PID LOG WHAT
	local i
	for i in $(seq 150); do
		"$LOAD" request --server "$1" --token "$TOKEN" --path /readyz --expect 200 >/dev/null 2>&1 && return 0
		kill -0 "$2" 2>/dev/null || break
		sleep 0.2
	done
	tail -20 "$3" >&2
	die "$4 did not become ready"
}

start_etcd "$TMP/tp-etcd" tp
TP_ETCD=$ETCD_URL
start_etcd "$TMP/gw-etcd" gw
GW_ETCD=$ETCD_URL

printf '%s,admin,uid1,"system:masters",system\n' "$TOKEN" >"$TMP/tokens.csv"
printf '%s\n' "$TOKEN" >"$TMP/gw.token"
TP_PORT=$("$LOAD" free-port)
"$APISERVER" --listen "127.0.0.1:$TP_PORT" --etcd-servers "$TP_ETCD" --partition-id tp-1 \
	--token-auth-file "$TMP/tokens.csv" --log-level warn >"$TMP/apiserver.log" 2>&1 &
TP_PID=$!
PIDS+=("$TP_PID")
wait_http "http://127.0.0.1:$TP_PORT" "$TP_PID" "$TMP/apiserver.log" ursa-tp-apiserver

URSA_HOME=$TMP "$URSACTL" register --region-file "$TMP/region.json" --gateway-etcd "$GW_ETCD" --kind tp \
	--name tp-1 --endpoints "http://127.0.0.1:$TP_PORT" >/dev/null
GW_PORT=$("$LOAD" free-port)
"$GATEWAY" --listen "127.0.0.1:$GW_PORT" --etcd-servers "$GW_ETCD" --token-auth-file "$TMP/tokens.csv" \
	--partition-token-file "$TMP/gw.token" --tenant-qps 0 --log-level warn --workers "$GW_WORKERS" \
	>"$TMP/gateway.log" 2>&1 &
GW_PID=$!
PIDS+=("$GW_PID")
GW=http://127.0.0.1:$GW_PORT
wait_http "$GW" "$GW_PID" "$TMP/gateway.log" ursa-gateway
# The processes that serve: the gateway itself, or its workers.
GW_PIDS=(--pid "gateway=$GW_PID")
if [ "$GW_WORKERS" -gt 1 ]; then
	GW_PIDS=()
	for w in $(pgrep -P "$GW_PID"); do GW_PIDS+=(--pid "gw-$w=$w"); done
	[ "${#GW_PIDS[@]}" = $((2 * GW_WORKERS)) ] || die "expected $GW_WORKERS gateway workers"
fi

"$LOAD" request --server "$GW" --token "$TOKEN" --path /api/v1/tenants --method POST \
	--data '{"apiVersion":"v1","kind":"Tenant","metadata":{"name":"bench"}}' --expect 201,409 >/dev/null
for i in $(seq 50); do
	"$LOAD" request --server "$GW" --token "$TOKEN" --path /api/v1/tenants/bench/namespaces --method POST \
		--data '{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"default"}}' --expect 201,409 \
		>/dev/null 2>&1 && break
	sleep 0.2
done

echo "# $(date -u +%FT%TZ) $(nproc) cores, load: $(cut -d' ' -f1-3 /proc/loadavg), nofile hard limit $(ulimit -Hn)"
echo "# gateway pid $GW_PID (--workers $GW_WORKERS), tp apiserver pid $TP_PID; everything on 127.0.0.1, plain HTTP"
rc=0
CM=/api/v1/tenants/bench/namespaces/default/configmaps
HOLD=()
ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
# gets WHAT: 8 s of GETs through the gateway; prints the rate and both processes' CPU per GET.
gets() {
	local g0 t0 out ok
	g0=$(ticks "$GW_PID") t0=$(ticks "$TP_PID")
	out=$("$GWLOAD" --base "$GW" --path "$CM/probe" --token "$TOKEN" --clients 16 --duration 8 --warmup 0 | tail -1)
	ok=$(printf '%s' "$out" | sed -E 's/.*"ok":([0-9]+).*/\1/')
	awk -v what="$1" -v ok="$ok" -v g="$(($(ticks "$GW_PID") - g0))" -v t="$(($(ticks "$TP_PID") - t0))" \
		-v hz="$(getconf CLK_TCK)" 'BEGIN { printf "GETS %s: %d GETs in 8 s (%.0f/s), CPU per GET: gateway %.0f us, API server %.0f us\n",
			what, ok, ok / 8, g / hz * 1e6 / ok, t / hz * 1e6 / ok }'
}
if [ "${GETS:-0}" = 1 ]; then
	[ -x "$GWLOAD" ] || die "missing $GWLOAD"
	[ "$GW_WORKERS" = 1 ] || die "GETS=1 measures one gateway process: GW_WORKERS=1"
	"$LOAD" request --server "$GW" --token "$TOKEN" --path "$CM" --method POST \
		--data '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"probe"}}' --expect 201 >/dev/null
	gets "no watches"
	HOLD=(--hold 25) # the watches stay, idle, while the idle and the second round run
fi
"$WATCHERS" --server "$GW" --token "$TOKEN" --path "$CM" \
	--watches "$WATCHES" --objects "$OBJECTS" --interval-ms "$INTERVAL_MS" --batch "$BATCH" --settle "$SETTLE" \
	"${HOLD[@]}" "${GW_PIDS[@]}" --pid "tp-api=$TP_PID" >"$TMP/watchers.out" &
WPID=$!
if [ "${GETS:-0}" = 1 ]; then
	# once the watches are held and their events are in
	for _ in $(seq 1200); do
		grep -q "^holding the watches" "$TMP/watchers.out" && break
		kill -0 "$WPID" 2>/dev/null || break
		sleep 0.25
	done
	g0=$(ticks "$GW_PID") t0=$(ticks "$TP_PID")
	sleep 8 # what the held watches cost by themselves (a quiet watch gets a newline every 10 s)
	awk -v g="$(($(ticks "$GW_PID") - g0))" -v t="$(($(ticks "$TP_PID") - t0))" -v hz="$(getconf CLK_TCK)" \
		'BEGIN { printf "IDLE watches held, no requests: CPU gateway %.2f s/s, API server %.2f s/s\n", g / hz / 8, t / hz / 8 }'
	gets "while $(($(ls "/proc/$GW_PID/fd" | wc -l) / 2)) watches are held"
fi
wait "$WPID" || rc=$?
cat "$TMP/watchers.out"
grep -E "stream refused|warn|error" "$TMP/gateway.log" | sed 's/^ts=[^ ]* //' | sort | uniq -c | sort -rn | head -5 || true
echo "# gateway /metrics right after the run (departed clients are noticed within 10 s):"
curl -s -H "Authorization: Bearer $TOKEN" "$GW/metrics" | grep -v '^#' || true
if [ "${DIRECT:-0}" = 1 ]; then
	sleep 15
	echo "# gateway /metrics 15 s later:"
	curl -s -H "Authorization: Bearer $TOKEN" "$GW/metrics" | grep -v '^#' || true
	# The API server, too, notices a departed watcher only when it writes to it: two events
	# in the collection make it drop the gateway's closed connections (and their descriptors).
	for f in flush-1 flush-2; do
		"$LOAD" request --server "http://127.0.0.1:$TP_PORT" --token "$TOKEN" --method POST \
			--path /api/v1/tenants/bench/namespaces/default/configmaps \
			--data "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"$f\"}}" \
			--expect 201 >/dev/null
		sleep 3
	done
	echo "# api server descriptors before the baseline: $(ls /proc/$TP_PID/fd | wc -l)"
	echo "# baseline: the same watches straight at the API server"
	"$WATCHERS" --server "http://127.0.0.1:$TP_PORT" --token "$TOKEN" \
		--path /api/v1/tenants/bench/namespaces/default/configmaps --prefix d- \
		--watches "$WATCHES" --objects "$OBJECTS" --interval-ms "$INTERVAL_MS" --batch "$BATCH" \
		--settle "$SETTLE" --pid "tp-api=$TP_PID" || rc=$?
fi
exit $rc
