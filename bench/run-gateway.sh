#!/usr/bin/env bash
# The gateway's throughput and its million-tenant map (issue 6), in one run, printing a markdown
# section for docs/benchmarks.md.
#
# usage: bench/run-gateway.sh [BUILD_DIR] [--quick] [--skip-map] [--skip-throughput]
#   BUILD_DIR          a built tree (default build/): ursa-tp-apiserver, ursa-gateway, ursactl, bench/ursa-*
#   --quick            short rounds and 20,000 tenants, to smoke-test the script
#
# Throughput: etcd + one TLS tenant-partition API server (tp-1), the gateway's etcd + one
# TLS ursa-gateway registered with tp-1, and HAProxy (TLS front, re-encrypting to tp-1 with the
# CA) in front of tp-1 alone. The same GETs go to all three with CLIENTS keep-alive clients,
# interleaved (gateway, direct, haproxy, gateway, ...) for ROUNDS rounds of DURATION s each per
# workload: GET of one pod, and LIST of a namespace of PODS small pods. Medians over rounds.
# Map: MAP_TENANTS tenant records written into a fresh etcd, then loaded by the gateway's
# registry code in-process (bench/ursa-gwmap), with the lookup cost.
#
# Knobs (environment): CLIENTS (64), ROUNDS (5), DURATION (8), PODS (100), MAP_TENANTS (1000000),
# GW_THREADS (the gateway's --threads; default: the gateway's own default), GW2_THREADS and
# GW2_BIN (either set: a second gateway is measured too, as "gateway2", in the same rounds:
# GW2_BIN another ursa-gateway binary, say an older build's, default this build's; GW2_THREADS
# its --threads). GW_ARGS and GW2_ARGS: further arguments for either gateway (say
# "--workers 2"; GW2_ARGS set also measures gateway2).
# Everything runs on loopback, free ports, a temporary directory; bounded by timeouts.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=""
QUICK=0
DO_MAP=1
DO_TP=1
for arg in "$@"; do
	case "$arg" in
	--quick) QUICK=1 ;;
	--skip-map) DO_MAP=0 ;;
	--skip-throughput) DO_TP=0 ;;
	-h|--help) sed -n '2,20p' "$0"; exit 0 ;;
	-*) echo "run-gateway.sh: unknown option $arg" >&2; exit 2 ;;
	*) BUILD=$arg ;;
	esac
done
BUILD=$(cd "${BUILD:-$ROOT/build}" 2>/dev/null && pwd) || { echo "run-gateway.sh: build dir not found" >&2; exit 1; }
if [ "$QUICK" = 1 ]; then
	: "${ROUNDS:=2}" "${DURATION:=2}" "${MAP_TENANTS:=20000}"
fi
: "${CLIENTS:=64}" "${ROUNDS:=5}" "${DURATION:=8}" "${PODS:=100}" "${MAP_TENANTS:=1000000}" "${GW_THREADS:=}"

die() { echo "run-gateway.sh: $*" >&2; exit 1; }

REAL_ETCD=$(command -v etcd || true)
HAPROXY=$(command -v haproxy || true)
APISERVER=$BUILD/src/tenant-partition/ursa-tp-apiserver
GATEWAY=$BUILD/src/gateway/ursa-gateway
URSACTL=$BUILD/src/ursactl/ursactl
LOAD=$BUILD/bench/ursa-load
GWLOAD=$BUILD/bench/ursa-gwload
GWMAP=$BUILD/bench/ursa-gwmap
[ -x "$REAL_ETCD" ] || die "etcd not found (apt-get install etcd-server)"
for b in "$LOAD" "$GWLOAD" "$GWMAP"; do [ -x "$b" ] || die "missing $b (cmake --build $BUILD --target $(basename "$b"))"; done
if [ "$DO_TP" = 1 ]; then
	[ -x "$HAPROXY" ] || die "haproxy not found (apt-get install haproxy)"
	for b in "$APISERVER" "$GATEWAY" "$URSACTL"; do [ -x "$b" ] || die "missing $b"; done
fi

# shellcheck source=bench/lib.sh
. "$ROOT/bench/lib.sh"
bench_tmp ursa-bench-gw
ulimit -n 65536 2>/dev/null || true
# etcd with larger txns for seeding the map (start_etcd in lib.sh runs $ETCD_BIN).
ETCD_BIN=$TMP/etcd
printf '#!/bin/sh\nexec %s "$@" --max-txn-ops 1024\n' "$REAL_ETCD" >"$ETCD_BIN"
chmod +x "$ETCD_BIN"

TOKEN="admin-$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')"
USER_TOKEN="user-$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')"
CA=$TMP/pki/ca.crt

START_DATE=$(date -u +%Y-%m-%dT%H:%M:%SZ)
LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
OTHERS=$(ps -eo pcpu=,comm= --sort=-pcpu | awk '$1 > 5 {printf "%s%s (%s%%)", sep, $2, $1; sep=", "}' | head -c 300)

# ---- throughput -------------------------------------------------------------------------------
if [ "$DO_TP" = 1 ]; then
	make_pki
	printf '%s,admin,uid1,"system:masters",system\n%s,alice,uid2,"ursa:tenant-admins",bench\n' \
		"$TOKEN" "$USER_TOKEN" >"$TMP/tokens.csv"
	printf '%s\n' "$TOKEN" >"$TMP/admin.token"

	start_etcd "$TMP/tp-etcd" tpetcd
	TP_ETCD_PID=$ETCD_PID
	TP_PORT=$("$LOAD" free-port)
	"$APISERVER" --listen "127.0.0.1:$TP_PORT" --etcd-servers "$ETCD_URL" --partition-id tp-1 \
		--tls-cert-file "$TMP/pki/server.crt" --tls-private-key-file "$TMP/pki/server.key" \
		--token-auth-file "$TMP/tokens.csv" --log-level warn >"$TMP/tp.log" 2>&1 &
	TP_PID=$!
	PIDS+=("$TP_PID")
	TP_URL="https://127.0.0.1:$TP_PORT"
	wait_up "$TP_URL" ursa-tp-apiserver "$TP_PID" "$TMP/tp.log"

	start_etcd "$TMP/gw-etcd" gwetcd
	GW_ETCD_PID=$ETCD_PID
	# The partition record the gateways follow, written by its one writer (no resource manager
	# is registered, so no signing key is needed).
	URSA_HOME=$TMP "$URSACTL" register --region-file "$TMP/region.json" --gateway-etcd "$ETCD_URL" --kind tp \
		--name tp-1 --endpoints "$TP_URL" >/dev/null || die "cannot record tp-1 in the gateway's etcd"
	GW_PORT=$("$LOAD" free-port)
	"$GATEWAY" --listen "127.0.0.1:$GW_PORT" --etcd-servers "$ETCD_URL" \
		--tls-cert-file "$TMP/pki/server.crt" --tls-private-key-file "$TMP/pki/server.key" \
		--token-auth-file "$TMP/tokens.csv" --partition-ca-file "$CA" \
		--partition-token-file "$TMP/admin.token" --tenant-qps 0 --log-level info \
		${GW_THREADS:+--threads "$GW_THREADS"} ${GW_ARGS:-} >"$TMP/gw.log" 2>&1 &
	GW_PID=$!
	PIDS+=("$GW_PID")
	GW_URL="https://127.0.0.1:$GW_PORT"
	wait_up "$GW_URL" ursa-gateway "$GW_PID" "$TMP/gw.log"

	TARGETS="gateway direct haproxy"
	if [ -n "${GW2_THREADS:-}" ] || [ -n "${GW2_BIN:-}" ] || [ -n "${GW2_ARGS:-}" ]; then
		# A second gateway (another binary or worker count), measured alongside (gateway2).
		GW2_BIN=${GW2_BIN:-$GATEWAY}
		[ -x "$GW2_BIN" ] || die "GW2_BIN $GW2_BIN is not executable"
		GW2_PORT=$("$LOAD" free-port)
		"$GW2_BIN" --listen "127.0.0.1:$GW2_PORT" --etcd-servers "$ETCD_URL" \
			--tls-cert-file "$TMP/pki/server.crt" --tls-private-key-file "$TMP/pki/server.key" \
			--token-auth-file "$TMP/tokens.csv" --partition-ca-file "$CA" \
			--partition-token-file "$TMP/admin.token" --tenant-qps 0 --log-level info \
			${GW2_THREADS:+--threads "$GW2_THREADS"} ${GW2_ARGS:-} >"$TMP/gw2.log" 2>&1 &
		GW2_PID=$!
		PIDS+=("$GW2_PID")
		GW2_URL="https://127.0.0.1:$GW2_PORT"
		wait_up "$GW2_URL" "ursa-gateway (2)" "$GW2_PID" "$TMP/gw2.log"
		TARGETS="gateway gateway2 direct haproxy"
	fi

	HA_PORT=$("$LOAD" free-port)
	cat >"$TMP/haproxy.cfg" <<-EOF
		global
			maxconn 8000
		defaults
			mode http
			timeout connect 2s
			timeout client 1h
			timeout server 1h
			timeout http-request 30s
			timeout http-keep-alive 120s
		frontend bench
			bind 127.0.0.1:$HA_PORT ssl crt $TMP/pki/haproxy.pem
			default_backend tp
		backend tp
			server tp-1 127.0.0.1:$TP_PORT ssl verify required ca-file $CA
	EOF
	"$HAPROXY" -f "$TMP/haproxy.cfg" -db >"$TMP/haproxy.log" 2>&1 &
	HA_PID=$!
	PIDS+=("$HA_PID")
	HA_URL="https://127.0.0.1:$HA_PORT"
	wait_up "$HA_URL" haproxy "$HA_PID" "$TMP/haproxy.log"

	# The tenant is created through the gateway (placed on tp-1, recorded in the gateway's etcd).
	bench_api "$GW_URL" POST /api/v1/tenants '{"apiVersion":"v1","kind":"Tenant","metadata":{"name":"bench"}}' 201,409 \
		|| die "cannot create tenant bench"
	bench_api "$TP_URL" GET /api/v1/tenants/bench/namespaces/default "" 200 || die "namespace bench/default missing"
	NS=/api/v1/tenants/bench/namespaces/default
	for i in $(seq "$PODS"); do
		bench_api "$TP_URL" POST "$NS/pods" "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p$i\",\"labels\":{\"app\":\"bench\"}},\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"registry.k8s.io/pause:3.9\"}]}}" 201,409 \
			|| die "cannot create pod p$i"
	done
	GET_PATH="$NS/pods/p1"
	LIST_PATH="$NS/pods"
	for u in "$GW_URL" "$TP_URL" "$HA_URL"; do
		"$LOAD" request --server "$u" --cacert "$CA" --token "$USER_TOKEN" --path "$GET_PATH" --expect 200 >/dev/null 2>&1 \
			|| die "GET $GET_PATH through $u failed"
	done

	declare -A TARGET=([gateway]=$GW_URL [gateway2]=${GW2_URL:-} [direct]=$TP_URL [haproxy]=$HA_URL)
	declare -A TPID=([gateway]=$GW_PID [gateway2]=${GW2_PID:-0} [direct]=$TP_PID [haproxy]=$HA_PID)
	# CPU ticks and requests per target, and per workload-target ("get-gateway").
	declare -A CPU_T=([gateway]=0 [gateway2]=0 [direct]=0 [haproxy]=0) NREQ=([gateway]=0 [gateway2]=0 [direct]=0 [haproxy]=0)
	for w in get list; do for t in gateway gateway2 direct haproxy; do CPU_T[$w-$t]=0; NREQ[$w-$t]=0; done; done
	declare -A WPATH=([get]=$GET_PATH [list]=$LIST_PATH)
	CPU0_GW=$(tree_cpu_ticks "$GW_PID"); CPU0_TP=$(cpu_ticks "$TP_PID"); CPU0_HA=$(cpu_ticks "$HA_PID")
	CPU0_TE=$(cpu_ticks "$TP_ETCD_PID")
	for r in $(seq "$ROUNDS"); do
		for w in get list; do
			for t in $TARGETS; do
				echo "## round $r $w $t" >&2
				timeout -k 5 $((DURATION + 60)) "$GWLOAD" --base "${TARGET[$t]}" --path "${WPATH[$w]}" \
					--token "$USER_TOKEN" --cacert "$CA" --clients "$CLIENTS" --duration "$DURATION" \
					--warmup 1 >"$TMP/r$r-$w-$t.out" 2>"$TMP/r$r-$w-$t.err" &
				RUN_PID=$!
				c0=$(tree_cpu_ticks "${TPID[$t]}")
				wait "$RUN_PID" || echo "# round $r $w $t: errors (see below)" >&2
				RUN_PID=""
				dc=$(( $(tree_cpu_ticks "${TPID[$t]}") - c0 ))
				CPU_T[$t]=$(( CPU_T[$t] + dc )); CPU_T[$w-$t]=$(( CPU_T[$w-$t] + dc ))
				n=$(bench_result_field "$TMP/r$r-$w-$t.out" ok); NREQ[$t]=$(( NREQ[$t] + ${n:-0} )); NREQ[$w-$t]=$(( NREQ[$w-$t] + ${n:-0} ))
				grep -v '^RESULT' "$TMP/r$r-$w-$t.out" >&2 || true
				head -3 "$TMP/r$r-$w-$t.err" >&2 || true
			done
		done
	done
	CPU_GW=$(( $(tree_cpu_ticks "$GW_PID") - CPU0_GW )); CPU_TP=$(( $(cpu_ticks "$TP_PID") - CPU0_TP ))
	CPU_HA=$(( $(cpu_ticks "$HA_PID") - CPU0_HA )); CPU_TE=$(( $(cpu_ticks "$TP_ETCD_PID") - CPU0_TE ))
	kill -0 "$GW_PID" 2>/dev/null || { tail -20 "$TMP/gw.log" >&2; die "the gateway died"; }
	# Keep-alive to the partition: the gateway's open connections to the TP, and how many it
	# ever opened (logged when it stops).
	GW_UP_CONNS=$(ss -tnpH state established "( dport = :$TP_PORT )" 2>/dev/null | grep -c "pid=$GW_PID," || true)
	kill -TERM "$GW_PID" 2>/dev/null || true
	for i in $(seq 50); do kill -0 "$GW_PID" 2>/dev/null || break; sleep 0.1; done
	GW_MADE=$(sed -n 's/.*upstream_connections_made=\([0-9]*\).*/\1/p' "$TMP/gw.log" | tail -1)
	# CPU per request of the process serving each target during its own rounds (the 1 s warm-up
	# is not in the request count, so these are slight overestimates).
	cpu_per_req() { awk -v t="${CPU_T[$1]}" -v n="${NREQ[$1]}" -v d="$DURATION" -v hz="$(getconf CLK_TCK)" \
		'BEGIN {if (n > 0) printf "%.0f", t / hz * 1e6 / (n * (d + 1) / d); else print "-"}'; }
	declare -A RPS P50 P99 ERR
	for w in get list; do
		for t in $TARGETS; do
			RPS[$w-$t]=$(for r in $(seq "$ROUNDS"); do bench_result_field "$TMP/r$r-$w-$t.out" ok_per_s; done | median)
			P50[$w-$t]=$(for r in $(seq "$ROUNDS"); do bench_result_field "$TMP/r$r-$w-$t.out" p50_ms; done | median)
			P99[$w-$t]=$(for r in $(seq "$ROUNDS"); do bench_result_field "$TMP/r$r-$w-$t.out" p99_ms; done | median)
			ERR[$w-$t]=$(for r in $(seq "$ROUNDS"); do bench_result_field "$TMP/r$r-$w-$t.out" errors; done | awk '{s+=$1} END {print s+0}')
		done
	done
	# Per-round ratios (same round, adjacent in time), then their median.
	ratio() { # ratio W A B: median over rounds of A/B req/s
		for r in $(seq "$ROUNDS"); do
			a=$(bench_result_field "$TMP/r$r-$1-$2.out" ok_per_s); b=$(bench_result_field "$TMP/r$r-$1-$3.out" ok_per_s)
			[ -n "$a" ] && [ -n "$b" ] && awk -v a="$a" -v b="$b" 'BEGIN {if (b > 0) printf "%.3f\n", a / b}'
		done | median
	}
fi

# ---- the map ----------------------------------------------------------------------------------
if [ "$DO_MAP" = 1 ]; then
	start_etcd "$TMP/map-etcd" mapetcd
	MAP_ETCD_PID=$ETCD_PID
	echo "## seeding $MAP_TENANTS tenants" >&2
	timeout -k 5 3600 "$GWMAP" seed --etcd "$ETCD_URL" --count "$MAP_TENANTS" --partitions 4 --clients 4 \
		--txn-ops 1024 >"$TMP/seed.out" 2>&1 || { cat "$TMP/seed.out" >&2; die "seeding failed"; }
	grep -v '^RESULT' "$TMP/seed.out" >&2
	for i in 1 2 3; do
		c0=$(cpu_ticks "$MAP_ETCD_PID")
		timeout -k 5 900 "$GWMAP" load --etcd "$ETCD_URL" --rounds 5 --lookups 2000000 >"$TMP/load$i.out" 2>&1 \
			|| { cat "$TMP/load$i.out" >&2; die "load failed"; }
		echo $(( $(cpu_ticks "$MAP_ETCD_PID") - c0 )) >"$TMP/load$i.etcdcpu"
		grep -v '^RESULT' "$TMP/load$i.out" >&2
	done
	mfield() { for i in 1 2 3; do bench_result_field "$TMP/load$i.out" "$1"; done | median; }
	LOAD_S=$(mfield load_s); LOAD_CPU=$(mfield load_cpu_s); RSS_MB=$(mfield rss_growth_mb); HWM_MB=$(mfield hwm_growth_mb)
	NS1=$(mfield lookup_ns_1); NS2=$(mfield lookup_ns_2); PAGES=$(mfield pages)
	ETCD_CPU=$(for i in 1 2 3; do cat "$TMP/load$i.etcdcpu"; done | median)
	ETCD_CPU_S=$(awk -v t="$ETCD_CPU" -v hz="$(getconf CLK_TCK)" 'BEGIN {printf "%.1f", t / hz}')
	# The same snapshot over etcd's gRPC API (etcdctl), for the share of the JSON gateway.
	c0=$(cpu_ticks "$MAP_ETCD_PID")
	t0=$(date +%s.%N)
	if command -v etcdctl >/dev/null; then
		ETCDCTL_API=3 etcdctl --endpoints "$ETCD_URL" --command-timeout=300s get --prefix /ursa/gateway/ \
			-w protobuf >/dev/null
	fi
	t1=$(date +%s.%N)
	GRPC_S=$(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.1f", b - a}')
	GRPC_CPU_S=$(awk -v t="$(( $(cpu_ticks "$MAP_ETCD_PID") - c0 ))" -v hz="$(getconf CLK_TCK)" 'BEGIN {printf "%.1f", t / hz}')
fi

LOAD_AFTER=$(cut -d' ' -f1-3 /proc/loadavg)

# ---- report -----------------------------------------------------------------------------------
met() { awk -v v="$1" -v g="$2" -v dir="$3" 'BEGIN {if (v == "-" || v == "") print "-"; else if ((dir == "ge" && v + 0 >= g + 0) || (dir == "le" && v + 0 <= g + 0)) print "met"; else print "**not met**"}'; }
MODEL=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)
cat <<EOF

### Gateway (issue 6) ($START_DATE)

Machine: $(nproc) CPUs (${MODEL:-unknown CPU}), Linux $(uname -r), etcd $("$REAL_ETCD" --version | sed -n 's/^etcd Version: //p'), $("$HAPROXY" -v 2>/dev/null | head -1 | cut -d' ' -f1-3).
Everything below ran on the same $(nproc) cores at once: the load generator, etcd(s), the TP API
server, the gateway and HAProxy. Load average before: $LOAD_BEFORE, after: $LOAD_AFTER.
Other busy processes at the start: ${OTHERS:-none}.
Reproduce: \`bench/run-gateway.sh $BUILD\` (CLIENTS=$CLIENTS ROUNDS=$ROUNDS DURATION=$DURATION PODS=$PODS MAP_TENANTS=$MAP_TENANTS${GW_ARGS:+ GW_ARGS=\"$GW_ARGS\"}${GW2_PID:+ GW2_BIN=$GW2_BIN${GW2_THREADS:+ GW2_THREADS=$GW2_THREADS}${GW2_ARGS:+ GW2_ARGS=\"$GW2_ARGS\"}}).
EOF
if [ "$DO_TP" = 1 ]; then
	R_GD_GET=$(ratio get gateway direct); R_GH_GET=$(ratio get gateway haproxy)
	R_GD_LIST=$(ratio list gateway direct); R_GH_LIST=$(ratio list gateway haproxy)
	cat <<EOF

Throughput: $CLIENTS keep-alive TLS clients (bench/ursa-gwload: a thread and a libcurl handle
each, TLS sessions shared), closed loop, $ROUNDS interleaved rounds of $DURATION s per workload
and target (1 s warm-up not counted); medians over rounds. Ratios are per round, then the median.
GET = one pod; LIST = a namespace of $PODS small pods. The gateway checks the token and the
tenant, looks the tenant up and forwards from its request loop over kept-alive TLS connections;
"direct" is the TP API server itself over TLS; "haproxy" is HAProxy alone (TLS front,
re-encrypting to the TP).

| Workload | Target | req/s | p50 ms | p99 ms | errors |
| --- | --- | ---: | ---: | ---: | ---: |
EOF
	for w in get list; do
		for t in $TARGETS; do
			echo "| ${w^^} | $t | ${RPS[$w-$t]} | ${P50[$w-$t]} | ${P99[$w-$t]} | ${ERR[$w-$t]} |"
		done
	done
	cat <<EOF

CPU per request (GET and LIST together) of the proxy in front of the TP, during its own rounds:
gateway $(cpu_per_req gateway) µs${GW2_PID:+, gateway2 ($GW2_BIN${GW2_THREADS:+ --threads $GW2_THREADS}${GW2_ARGS:+ $GW2_ARGS}) $(cpu_per_req gateway2) µs}, HAProxy $(cpu_per_req haproxy) µs; the TP API server itself (direct rounds)
$(cpu_per_req direct) µs. By workload (GET / LIST): gateway $(cpu_per_req get-gateway) / $(cpu_per_req list-gateway) µs${GW2_PID:+, gateway2 $(cpu_per_req get-gateway2) / $(cpu_per_req list-gateway2) µs}, HAProxy $(cpu_per_req get-haproxy) / $(cpu_per_req list-haproxy) µs, TP $(cpu_per_req get-direct) / $(cpu_per_req list-direct) µs. Keep-alive: after the rounds the gateway held $GW_UP_CONNS connections to the TP
and had opened ${GW_MADE:-?} in all (about one per request in flight at once).
CPU used during all rounds: gateway $(awk -v t="$CPU_GW" 'BEGIN {printf "%.1f", t/100}') s, TP API server $(awk -v t="$CPU_TP" 'BEGIN {printf "%.1f", t/100}') s, TP etcd $(awk -v t="$CPU_TE" 'BEGIN {printf "%.1f", t/100}') s, HAProxy $(awk -v t="$CPU_HA" 'BEGIN {printf "%.1f", t/100}') s.
EOF
fi
cat <<EOF

| Goal | Measured | |
| --- | --- | --- |
EOF
if [ "$DO_TP" = 1 ]; then
	echo "| GET: gateway >= 90 % of direct | $R_GD_GET | $(met "$R_GD_GET" 0.9 ge) |"
	echo "| GET: gateway >= HAProxy alone | $R_GH_GET | $(met "$R_GH_GET" 1.0 ge) |"
	echo "| LIST: gateway >= 90 % of direct | $R_GD_LIST | $(met "$R_GD_LIST" 0.9 ge) |"
	echo "| LIST: gateway >= HAProxy alone | $R_GH_LIST | $(met "$R_GH_LIST" 1.0 ge) |"
	if [ -n "${GW2_PID:-}" ]; then
		for w in get list; do
			echo "| ${w^^}: gateway2 / direct, / HAProxy, gateway / gateway2 | $(ratio $w gateway2 direct), $(ratio $w gateway2 haproxy), $(ratio $w gateway gateway2) | |"
		done
	fi
fi
if [ "$DO_MAP" = 1 ]; then
	echo "| load $MAP_TENANTS tenants <= 5 s | $LOAD_S s wall ($PAGES pages; CPU: the loading process $LOAD_CPU s, etcd $ETCD_CPU_S s) | $(met "$LOAD_S" 5 le) |"
	echo "| resident memory of the map <= 150 MB | VmRSS +$RSS_MB MB (VmHWM +$HWM_MB MB) | $(met "$HWM_MB" 150 le) |"
	echo "| one lookup <= 1 µs | $NS1 ns (1 thread), $NS2 ns per lookup per thread (2 threads) | $(met "$NS1" 1000 le) |"
	cat <<EOF

The map: $MAP_TENANTS records \`{"partition":"tp-N","state":"ready","since":...}\` over 4 partitions in a
fresh etcd, loaded 3 times by the gateway's own registry code (bench/ursa-gwmap load: registry_new +
registry_start, paged range at one revision, then the watch); medians of the 3. Memory is this
process's VmRSS/VmHWM growth over the load. Lookups: registry_tenant_partition() (read lock,
hash lookup, partition ref taken and dropped) over random existing names, 2,000,000 per round,
median of 5 rounds, in thread CPU time (time the thread was preempted is not counted). For comparison, etcdctl reading the same keys over gRPC took $GRPC_S s
(etcd CPU $GRPC_CPU_S s): most of the load time is etcd's JSON gateway encoding the keys.
EOF
fi
