#!/usr/bin/env bash
# Finds how many nodes one resource-manager API server sustains with node-lease renewals, next
# to the put rate of the etcd it writes to, and prints a markdown table for docs/benchmarks.md.
#
# usage: bench/run-rm-heartbeat.sh [BUILD_DIR] [--quick]
#   BUILD_DIR  a built tree with ursa-rm-apiserver, bench/ursa-heartbeat and bench/ursa-load
#              (default: build/ at the repository root)
#   --quick    two small short steps, for a smoke test of the script itself
#
# Knobs (environment): STEPS (node counts, default "2000 5000 10000 20000 30000 40000 50000"),
# STEP_SECONDS (60), PERIOD (10), THREADS (32), P99_MS (100), ETCD_SECONDS (15),
# VALUE_BYTES (400), BUDGET_SECONDS (540: no new step starts after this), RETRIES (1: a failing
# step is run again this many times before stepping stops, since other work on the machine can
# spoil one minute), RM_WORKERS (the RM's --workers; default: its own default).
#
# A step passes when the p99 renewal latency (send -> response) is at most P99_MS, at least 99%
# of the scheduled renewals succeeded, and at most 1% started more than 100 ms late. Stepping
# stops at the first step that fails RETRIES + 1 times; repeated rows are marked "(2)" etc. Everything runs on loopback with free ports and a
# temporary directory; every step is bounded by `timeout`; processes are removed on exit.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=""
QUICK=0
for arg in "$@"; do
	case "$arg" in
	--quick) QUICK=1 ;;
	-h|--help) sed -n '2,18p' "$0"; exit 0 ;;
	-*) echo "run-rm-heartbeat.sh: unknown option $arg" >&2; exit 2 ;;
	*) BUILD=$arg ;;
	esac
done
BUILD=$(cd "${BUILD:-$ROOT/build}" 2>/dev/null && pwd) || { echo "run-rm-heartbeat.sh: build dir not found" >&2; exit 1; }

if [ "$QUICK" = 1 ]; then
	: "${STEPS:=500 1000}" "${STEP_SECONDS:=10}" "${ETCD_SECONDS:=3}"
fi
: "${STEPS:=2000 5000 10000 20000 30000 40000 50000}" "${STEP_SECONDS:=60}" "${PERIOD:=10}"
: "${THREADS:=32}" "${P99_MS:=100}" "${ETCD_SECONDS:=15}" "${VALUE_BYTES:=400}" "${BUDGET_SECONDS:=540}"
: "${RETRIES:=1}"

ETCD_BIN=${ETCD_BIN:-$(command -v etcd || true)}
RM=$BUILD/src/resource-manager/ursa-rm-apiserver
HB=$BUILD/bench/ursa-heartbeat
LOAD=$BUILD/bench/ursa-load
TOKEN="bench-$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')"
HZ=$(getconf CLK_TCK)

die() { echo "run-rm-heartbeat.sh: $*" >&2; exit 1; }

[ -x "$ETCD_BIN" ] || die "etcd not found (apt-get install etcd-server)"
for b in "$RM" "$HB" "$LOAD"; do
	[ -x "$b" ] || die "missing $b (build it: cmake --build $BUILD --target $(basename "$b"))"
done

# shellcheck source=bench/lib.sh
. "$ROOT/bench/lib.sh"
bench_tmp ursa-rm-heartbeat

# ---- processes ----------------------------------------------------------------------------


start_rm() {
	local port i
	port=$("$LOAD" free-port)
	printf '%s,admin,uid1,"system:masters",system\n' "$TOKEN" >"$TMP/tokens.csv"
	"$RM" --listen "127.0.0.1:$port" --etcd-servers "$ETCD_URL" --token-auth-file "$TMP/tokens.csv" \
		--log-level warn ${RM_WORKERS:+--workers "$RM_WORKERS"} >"$TMP/rm.log" 2>&1 &
	RM_PID=$!
	PIDS+=("$RM_PID")
	RM_URL="http://127.0.0.1:$port"
	for i in $(seq 150); do
		"$LOAD" request --server "$RM_URL" --token "$TOKEN" \
			--path /apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases?limit=1 \
			--expect 200 >/dev/null 2>&1 && return 0
		kill -0 "$RM_PID" 2>/dev/null || break
		sleep 0.2
	done
	tail -20 "$TMP/rm.log" >&2
	die "ursa-rm-apiserver did not start serving leases"
}

# ---- samples ------------------------------------------------------------------------------

# cpu_ticks PID: utime + stime of a process, in clock ticks.
cpu_ticks() { sed 's/.*) //' "/proc/$1/stat" | awk '{print $12 + $13}'; }
# busy_ticks: ticks all CPUs spent not idle (user nice system irq softirq steal).
busy_ticks() { awk '/^cpu / {print $2 + $3 + $4 + $7 + $8 + $9; exit}' /proc/stat; }
now_s() { date +%s.%N; }

# metric NAME: a counter from the RM's /metrics ("0" if absent).
metric() {
	{ "$LOAD" request --server "$RM_URL" --token "$TOKEN" --path /metrics --expect 200 2>/dev/null || true; } |
		awk -v m="$1" '$1 == m {print $2; found = 1} END {if (!found) print 0}'
}

# etcd_metric REGEX: the sum of etcd's own metrics whose line (name and labels) matches REGEX.
etcd_metric() {
	{ "$LOAD" request --server "$ETCD_METRICS" --path /metrics --expect 200 2>/dev/null || true; } |
		awk -v re="$1" '$1 ~ re {s += $2} END {printf "%.6f\n", s}'
}

snapshot() { # snapshot VAR-PREFIX: sets ${p}_T, _RM, _ETCD, _BUSY, _TXN, _WR, _ETXN, _FSN, _FSS
	local p=$1
	printf -v "${p}_ETXN" '%s' "$(etcd_metric '^grpc_server_handled_total.*grpc_method="Txn"')"
	printf -v "${p}_FSN" '%s' "$(etcd_metric '^etcd_disk_wal_fsync_duration_seconds_count')"
	printf -v "${p}_FSS" '%s' "$(etcd_metric '^etcd_disk_wal_fsync_duration_seconds_sum')"
	printf -v "${p}_T" '%s' "$(now_s)"
	printf -v "${p}_RM" '%s' "$(cpu_ticks "$RM_PID")"
	printf -v "${p}_ETCD" '%s' "$(cpu_ticks "$ETCD_PID")"
	printf -v "${p}_BUSY" '%s' "$(busy_ticks)"
	printf -v "${p}_TXN" '%s' "$(metric ursa_etcd_write_txns_total)"
	printf -v "${p}_WR" '%s' "$(metric ursa_etcd_writes_total)"
}

# field FILE KEY: a scalar from a RESULT line ("-" if absent).
field() {
	local v
	v=$(grep '^RESULT ' "$1" 2>/dev/null | tail -1 | sed -n "s/.*\"$2\":\([^,}]*\).*/\1/p")
	echo "${v:--}"
}

fmt() { if [ "$2" = "-" ]; then echo "-"; else LC_ALL=C printf "$1" "$2"; fi; }
calc() { LC_ALL=C awk "BEGIN {printf \"$1\", $2}"; }

# ---- run ----------------------------------------------------------------------------------

T_START=$(date +%s)
LOAD_BEFORE=$(uptime | sed 's/.*load average: //')
START_DATE=$(date -u +%Y-%m-%dT%H:%M:%SZ)
# busiest: processes above 5% of a core over one second (what else shares the machine).
busiest() {
	top -b -n 2 -d 1 -w 200 2>/dev/null | awk '/^top -/ {n++}
		n == 2 && $1 ~ /^[0-9]+$/ && $9 + 0 >= 5 {printf "%s%s %s%%", sep, $12, $9; sep = ", "}'
}
OTHERS_BEFORE=$(busiest)

start_etcd "$TMP" hb
echo "## etcd put rate: $THREADS clients, $VALUE_BYTES-byte values, $ETCD_SECONDS s" >&2
P0_ETCD=$(cpu_ticks "$ETCD_PID"); P0_T=$(now_s); P0_FSN=$(etcd_metric '^etcd_disk_wal_fsync_duration_seconds_count')
timeout -k 10 $((ETCD_SECONDS + 60)) "$LOAD" etcd-put --endpoint "$ETCD_URL" --clients "$THREADS" \
	--duration "$ETCD_SECONDS" --value-bytes "$VALUE_BYTES" >"$TMP/etcd-put.out" 2>&1 ||
	echo "# etcd-put exited with $?" >&2
P1_ETCD=$(cpu_ticks "$ETCD_PID"); P1_T=$(now_s); P1_FSN=$(etcd_metric '^etcd_disk_wal_fsync_duration_seconds_count')
PUT_CPU=$(calc %.0f "($P1_ETCD - $P0_ETCD) / $HZ / ($P1_T - $P0_T) * 100")
PUT_FSYNC=$(calc %.0f "($P1_FSN - $P0_FSN) / ($P1_T - $P0_T)")
grep -v '^RESULT ' "$TMP/etcd-put.out" >&2 || true
start_rm

ROWS=()
CAPACITY=0
CAPACITY_ROW=""
VERDICT="all steps passed"
# run_step N ATTEMPT: one step; appends a row to ROWS and sets PASS (yes/no/none).
run_step() {
	local n=$1 attempt=$2 out rc el txn_s wr_s per_txn rm_cpu etcd_cpu tool_cpu other_cpu sched ok late p99
	local etxn_s fsync_s fsync_ms
	out=$TMP/hb-$n-$attempt.out
	echo "## $n nodes, ${PERIOD}s period, ${STEP_SECONDS}s (attempt $attempt)" >&2
	timeout -k 10 $((STEP_SECONDS + 240)) "$HB" --server "$RM_URL" --token "$TOKEN" --nodes "$n" \
		--period "$PERIOD" --duration "$STEP_SECONDS" --threads "$THREADS" --create >"$out" 2>&1 &
	RUN_PID=$!
	# Measure the server side over the renewals only, not the lease creation before them.
	while kill -0 "$RUN_PID" 2>/dev/null && ! grep -q 'leases ready' "$out"; do
		sleep 0.1
	done
	snapshot A
	rc=0
	wait "$RUN_PID" || rc=$?
	RUN_PID=""
	snapshot B
	grep -v '^RESULT ' "$out" | grep -v '^  renew: t=' >&2 || true
	kill -0 "$RM_PID" 2>/dev/null || { tail -30 "$TMP/rm.log" >&2; die "ursa-rm-apiserver died at $n nodes"; }
	PASS=none
	[ "$(field "$out" ok)" != "-" ] || { echo "# no result at $n nodes (exit $rc)" >&2; return 0; }

	el=$(calc %.3f "$B_T - $A_T")
	txn_s=$(calc %.0f "($B_TXN - $A_TXN) / $el")
	wr_s=$(calc %.0f "($B_WR - $A_WR) / $el")
	per_txn=$(calc %.2f "($B_TXN > $A_TXN) ? ($B_WR - $A_WR) / ($B_TXN - $A_TXN) : 0")
	etxn_s=$(calc %.0f "($B_ETXN - $A_ETXN) / $el")
	fsync_s=$(calc %.0f "($B_FSN - $A_FSN) / $el")
	fsync_ms=$(calc %.2f "($B_FSN > $A_FSN) ? ($B_FSS - $A_FSS) * 1000 / ($B_FSN - $A_FSN) : 0")
	rm_cpu=$(calc %.0f "($B_RM - $A_RM) / $HZ / $el * 100")
	etcd_cpu=$(calc %.0f "($B_ETCD - $A_ETCD) / $HZ / $el * 100")
	tool_cpu=$(calc %.0f "$(field "$out" tool_cpu_cores) * 100")
	other_cpu=$(calc %.0f "(($B_BUSY - $A_BUSY) - ($B_RM - $A_RM) - ($B_ETCD - $A_ETCD)) / $HZ / $el * 100 - $tool_cpu")
	sched=$(field "$out" scheduled); ok=$(field "$out" ok); late=$(field "$out" late)
	p99=$(field "$out" p99_ms)
	PASS=$(LC_ALL=C awk -v p="$p99" -v lim="$P99_MS" -v s="$sched" -v ok="$ok" -v l="$late" \
		'BEGIN {print (p <= lim && ok >= 0.99 * s && l <= 0.01 * s) ? "yes" : "no"}')
	local label=$n
	[ "$attempt" = 1 ] || label="$n ($attempt)"
	ROWS+=("| $label | $(calc %.0f "$n / $PERIOD") | $(fmt %.0f "$(field "$out" achieved_per_s)") | $(fmt %.1f "$(field "$out" p50_ms)") | $(fmt %.1f "$p99") | $(fmt %.1f "$(field "$out" total_p99_ms)") | $late | $(field "$out" errors) | $txn_s | $wr_s | $per_txn | $etxn_s | $fsync_s | $fsync_ms | $rm_cpu | $etcd_cpu | $tool_cpu | $other_cpu | $PASS |")
	echo "# $n nodes: pass=$PASS p99=${p99}ms etcd txns/s=$txn_s writes/s=$wr_s RM=${rm_cpu}% etcd=${etcd_cpu}% other=${other_cpu}%" >&2
	[ "$PASS" = yes ] && CAPACITY_ROW="$(fmt %.0f "$(field "$out" achieved_per_s)") renewals/s, p99 $(fmt %.1f "$p99") ms"
	return 0
}

for n in $STEPS; do
	attempt=1
	while :; do
		if [ $(($(date +%s) - T_START)) -gt "$BUDGET_SECONDS" ]; then
			VERDICT="time budget reached before $n nodes (attempt $attempt)"
			break 2
		fi
		run_step "$n" "$attempt"
		[ "$PASS" = yes ] && break
		if [ "$attempt" -gt "$RETRIES" ]; then
			VERDICT="first failing step: $n nodes ($attempt attempts)"
			break 2
		fi
		attempt=$((attempt + 1))
	done
	CAPACITY=$n
done

LOAD_AFTER=$(uptime | sed 's/.*load average: //')
OTHERS_AFTER=$(busiest)

# ---- report -------------------------------------------------------------------------------

MODEL=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)
ETCD_VER=$("$ETCD_BIN" --version | sed -n 's/^etcd Version: //p')
ETCD_PUT=$(fmt %.0f "$(field "$TMP/etcd-put.out" ops_per_s)")
cat <<EOF

### Resource manager node-lease renewals ($START_DATE)

Machine: $(nproc) CPUs, ${MODEL:-unknown CPU}, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo) RAM, Linux $(uname -r); etcd $ETCD_VER (one member, loopback, plain HTTP); RM --workers ${RM_WORKERS:-16 (default)}.
Load average before: $LOAD_BEFORE; after: $LOAD_AFTER. Processes above 5% of a core (1 s sample) before: ${OTHERS_BEFORE:-none}; after: ${OTHERS_AFTER:-none}.
etcd's own put rate (\`ursa-load etcd-put\`, $THREADS clients, $VALUE_BYTES-byte values, new keys, ${ETCD_SECONDS} s): **$ETCD_PUT puts/s**, p50 $(fmt %.2f "$(field "$TMP/etcd-put.out" p50_ms)") ms, p99 $(fmt %.2f "$(field "$TMP/etcd-put.out" p99_ms)") ms, etcd CPU ${PUT_CPU}% of a core, $PUT_FSYNC WAL fsyncs/s.
Each step: \`ursa-heartbeat\` with $THREADS keep-alive connections renews every lease once per ${PERIOD} s on an open-loop schedule for ${STEP_SECONDS} s
(PUT with the last resourceVersion; latency is send -> response; "p99 + lag" adds the wait past the scheduled time; late = started > 100 ms after schedule).
"RM etcd txns/s" and "writes/s" come from the RM's /metrics (its conditional writes are group-committed, several per txn); "etcd Txn/s (all)", fsyncs and mean fsync time from etcd's own metrics.
CPU columns are % of one core over the renewal phase; "other" is everything else on the machine (other engineers' builds and tests share these cores).

| Nodes | Target/s | Achieved/s | p50 ms | p99 ms | p99 + lag ms | Late | Errors | RM etcd txns/s | RM etcd writes/s | Writes/txn | etcd Txn/s (all) | WAL fsyncs/s | fsync ms | RM CPU % | etcd CPU % | Load tool CPU % | Other CPU % | Pass |
| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | :---: |
EOF
printf '%s\n' "${ROWS[@]}"
cat <<EOF

Capacity (largest passing step, p99 <= ${P99_MS} ms, on schedule): **$CAPACITY nodes**${CAPACITY_ROW:+ ($CAPACITY_ROW)}; $VERDICT.
EOF
