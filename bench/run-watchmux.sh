#!/usr/bin/env bash
# Watches by the hundred thousand on one tenant-partition API server (issue 22): multiplexed
# watch connections (POST /ursa/v1/watches, bench/ursa-muxwatch), and what holding them costs.
#
# usage: bench/run-watchmux.sh [BUILD_DIR]
#
# Starts etcd and one TLS ursa-tp-apiserver (free loopback ports, a temporary directory), creates
# a tenant and one ConfigMap, then for ROUNDS rounds, interleaved:
#   A. GETs of the ConfigMap (bench/ursa-gwload, GET_CLIENTS clients, GET_SECONDS s) with no watch
#      held: the server's CPU per GET;
#   B. the same GETs while ursa-muxwatch holds WATCHES watches (NODE_SHARE % of them one node's
#      pods each, `spec.nodeName=...` on every tenant's pods; the rest one namespace's pods each)
#      over CONNS connections, idle; then WRITES_PER_S pod creates/s for WRITE_SECONDS s, each
#      bound to a watched node: the lag from create to event on that node's watch.
# Reports per round and as medians: CPU per GET without / with the watches (goal: at most 1.2x),
# the server's RSS per held watch (goal: at most 4 KB, TLS included: the connections' TLS is
# shared by the watches they carry), the server's CPU while the watches are held idle, and the
# event lag p50/p99 (goal p99 < 1 s at 1,000 writes/s).
# Knobs (environment): WATCHES (100000), NODE_SHARE (90), CONNS (20), ROUNDS (3), GET_CLIENTS
# (16), GET_SECONDS (8), WRITES_PER_S (1000), WRITE_SECONDS (10), IDLE_SECONDS (10: the watches held
# with nothing else running, for the server's idle CPU), PLAIN (10000: afterwards, that many plain
# watches of a TLS connection each, bench/ursa-watchers, for their RSS per watch; 0: skip).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=$(cd "${1:-$ROOT/build}" 2>/dev/null && pwd) || { echo "run-watchmux.sh: build dir not found" >&2; exit 1; }
: "${WATCHES:=100000}" "${NODE_SHARE:=90}" "${CONNS:=20}" "${ROUNDS:=3}" "${GET_CLIENTS:=16}" "${GET_SECONDS:=8}"
: "${WRITES_PER_S:=1000}" "${WRITE_SECONDS:=10}" "${IDLE_SECONDS:=10}" "${PLAIN:=10000}"

die() { echo "run-watchmux.sh: $*" >&2; exit 1; }
ETCD_BIN=$(command -v etcd || true)
APISERVER=$BUILD/src/tenant-partition/ursa-tp-apiserver
LOAD=$BUILD/bench/ursa-load
GWLOAD=$BUILD/bench/ursa-gwload
MUXWATCH=$BUILD/bench/ursa-muxwatch
[ -x "$ETCD_BIN" ] || die "etcd not found (apt-get install etcd-server)"
for b in "$APISERVER" "$LOAD" "$GWLOAD" "$MUXWATCH"; do [ -x "$b" ] || die "missing $b"; done

# shellcheck source=bench/lib.sh
. "$ROOT/bench/lib.sh"
bench_tmp ursa-bench-watchmux
TOKEN="admin-$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')"
CA=$TMP/pki/ca.crt
START_DATE=$(date -u +%Y-%m-%dT%H:%M:%SZ)
LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
make_pki
printf '%s,admin,uid1,"system:masters",system\n' "$TOKEN" >"$TMP/tokens.csv"
start_etcd "$TMP/etcd" wmetcd
PORT=$("$LOAD" free-port)
"$APISERVER" --listen "127.0.0.1:$PORT" --etcd-servers "$ETCD_URL" --partition-id tp-1 \
	--tls-cert-file "$TMP/pki/server.crt" --tls-private-key-file "$TMP/pki/server.key" \
	--token-auth-file "$TMP/tokens.csv" --log-level warn >"$TMP/tp.log" 2>&1 &
TP_PID=$!
PIDS+=("$TP_PID")
URL="https://127.0.0.1:$PORT"
wait_up "$URL" ursa-tp-apiserver "$TP_PID" "$TMP/tp.log"
bench_api "$URL" POST /api/v1/tenants '{"apiVersion":"v1","kind":"Tenant","metadata":{"name":"wm"}}' 201 ||
	die "cannot create the tenant"
for i in $(seq 50); do
	bench_api "$URL" POST /api/v1/tenants/wm/namespaces/default/configmaps \
		'{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"probe"},"data":{"k":"v"}}' 201 && break
	sleep 0.2
done
GET_PATH=/api/v1/tenants/wm/namespaces/default/configmaps/probe
NODES=$((WATCHES * NODE_SHARE / 100))
NSS=$((WATCHES - NODES))

# get_cpu OUT: GETs for GET_SECONDS; prints "ok_per_s cpu_us_per_get".
get_cpu() {
	local c0 c1 ok
	c0=$(cpu_ticks "$TP_PID")
	"$GWLOAD" --base "$URL" --path "$GET_PATH" --token "$TOKEN" --cacert "$CA" --clients "$GET_CLIENTS" \
		--duration "$GET_SECONDS" --warmup 1 >"$1" 2>&1 || die "GET load failed: $(tail -3 "$1")"
	c1=$(cpu_ticks "$TP_PID")
	ok=$(bench_result_field "$1" ok_per_s)
	awk -v ok="$ok" -v c="$((c1 - c0))" -v hz="$(getconf CLK_TCK)" -v d="$GET_SECONDS" \
		'BEGIN {printf "%.0f %.1f\n", ok, c / hz * 1e6 / (ok * (d + 1))}'
}

kv() { sed -n "s/^RESULT .*[ ]$2=\([^ ]*\).*/\1/p" "$1" | tail -1; }
open_watches() {
	"$LOAD" request --server "$URL" --cacert "$CA" --token "$TOKEN" --path /metrics --expect 200 2>/dev/null |
		sed -n 's/^ursa_apiserver_open_watches \([0-9]*\)/\1/p'
}

echo "# run-watchmux.sh: $WATCHES watches ($NODES node, $NSS namespace) over $CONNS connections, $ROUNDS rounds"
ROWS=""
for r in $(seq "$ROUNDS"); do
	W0=$(open_watches)
	read -r A_OK A_US < <(get_cpu "$TMP/get-a-$r.out")
	echo "round $r A (no watches): $A_OK GET/s, $A_US us of TP CPU per GET"
	"$MUXWATCH" --server "$URL" --token "$TOKEN" --cacert "$CA" --tenant wm --node-watches "$NODES" \
		--ns-watches "$NSS" --conns "$CONNS" --idle "$IDLE_SECONDS" --hold $((GET_SECONDS + 6)) --writes-per-s "$WRITES_PER_S" \
		--write-seconds "$WRITE_SECONDS" --pod-prefix "mw$r-" --pid "tp=$TP_PID" >"$TMP/mux-$r.out" 2>&1 &
	RUN_PID=$!
	for i in $(seq 600); do grep -q '^HOLDING' "$TMP/mux-$r.out" && break; kill -0 "$RUN_PID" 2>/dev/null || break; sleep 0.5; done
	grep -q '^HOLDING' "$TMP/mux-$r.out" || die "the watches were not held: $(tail -5 "$TMP/mux-$r.out")"
	sleep 2
	read -r B_OK B_US < <(get_cpu "$TMP/get-b-$r.out")
	echo "round $r B ($WATCHES watches held): $B_OK GET/s, $B_US us of TP CPU per GET"
	wait "$RUN_PID" || echo "round $r: ursa-muxwatch exited $? (see below)"
	RUN_PID=""
	grep -v '^RESULT' "$TMP/mux-$r.out" | sed 's/^/    /'
	M=$TMP/mux-$r.out
	ROWS+="| $r | $A_OK / $B_OK | $A_US / $B_US | $(awk -v a="$A_US" -v b="$B_US" 'BEGIN {printf "%.2f", b / a}') | $(kv "$M" opened) of $CONNS | $(kv "$M" tp_bytes_per_watch) | $(kv "$M" tp_cpu_idle_pct) | $(kv "$M" received) of $(kv "$M" writes) | $(kv "$M" lag_p50_ms) / $(kv "$M" lag_p99_ms) / $(kv "$M" lag_max_ms) |"$'\n'
	echo "$B_US $A_US" >>"$TMP/ratios"
	kv "$M" tp_bytes_per_watch >>"$TMP/bpw"
	kv "$M" lag_p99_ms >>"$TMP/p99"
	# the next round starts from a server without the watches (the client's exit ended them)
	for i in $(seq 60); do
		[ "$(open_watches)" -le "${W0:-0}" ] 2>/dev/null && break
		sleep 1
	done
done
RATIO=$(awk '{print $1 / $2}' "$TMP/ratios" | median)
PLAIN_LINE=""
if [ "$PLAIN" -gt 0 ]; then
	# the reference: the same server holding PLAIN watches of a connection each (bench/ursa-watchers)
	"$BUILD/bench/ursa-watchers" --server "$URL" --token "$TOKEN" --cacert "$CA" \
		--path /api/v1/tenants/wm/namespaces/default/configmaps --watches "$PLAIN" --objects 1 --settle 10 \
		--prefix plain- --pid "tp=$TP_PID" >"$TMP/plain.out" 2>&1 || true
	sed 's/^/    /' "$TMP/plain.out" | grep -v RESULT
	RSS0=$(sed -n 's/^tp *before .*rss=\([0-9]*\) MiB.*/\1/p' "$TMP/plain.out")
	RSS1=$(sed -n 's/^tp *holding .*rss=\([0-9]*\) MiB.*/\1/p' "$TMP/plain.out")
	HELD=$(sed -n 's/^RESULT .* held=\([0-9]*\).*/\1/p' "$TMP/plain.out")
	PLAIN_LINE="The same server holding $HELD plain watches (a TLS connection each, \`bench/ursa-watchers\`): RSS $RSS0 -> $RSS1 MiB,
**$(awk -v a="$RSS0" -v b="$RSS1" -v n="$HELD" 'BEGIN {printf "%.0f", (b - a) * 1048576 / n}') bytes per watch**
(one process may hold at most \`ulimit -Hn\` = $(ulimit -Hn) descriptors here)."
fi
cat <<EOF

### Run of $START_DATE ($(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown))

\`WATCHES=$WATCHES CONNS=$CONNS ROUNDS=$ROUNDS bench/run-watchmux.sh\`: one TLS ursa-tp-apiserver and its etcd;
$NODES watches of one node's pods (\`spec.nodeName\`, every tenant) and $NSS of one namespace's pods, over $CONNS
multiplexed watch connections; GETs of one ConfigMap by $GET_CLIENTS keep-alive TLS clients for ${GET_SECONDS} s,
without (A) and with (B) the watches held, interleaved; then $WRITES_PER_S pod creates/s for ${WRITE_SECONDS} s bound to
watched nodes. Load average $LOAD_BEFORE before, $(cut -d' ' -f1-3 /proc/loadavg) after.

| round | GET/s A / B | TP CPU per GET A / B (µs) | B / A | connections | TP RSS per watch (bytes) | TP CPU, watches idle (% of a core) | events received | lag p50 / p99 / max (ms) |
| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |
$ROWS
Medians: CPU per GET with the watches / without **$RATIO** (goal ≤ 1.2); event lag p99 **$(median <"$TMP/p99") ms**
(goal < 1,000). RSS per watch on the fresh server (round 1; later rounds reuse what the first one's
watches freed): **$(head -1 "$TMP/bpw") bytes** (goal ≤ 4,096).
$PLAIN_LINE
EOF
