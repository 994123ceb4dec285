#!/usr/bin/env bash
# Fair shares (issue 23): what one tenant's heavy LISTs do to another tenant's GETs on the same
# tenant partition, with fair queuing (the default) and without (--fair-queuing=false), in one
# run, rounds interleaved.
#
# One etcd; two ursa-tp-apiservers on it at once, plain HTTP on loopback, default flags (16
# workers; fair: 8 tenant seats, 6 per tenant): FAIR and FIFO (--fair-queuing=false). Tenant
# heavy holds PODS pods (about 1.5 KB each) in its namespace default; tenant light holds 10.
# In each round, for FAIR then FIFO: "idle": light's user GETs one of its pods by name, one
# request at a time, 10 ms apart, for SECS seconds (bench/ursa-load fairness --clients 0);
# "loaded": the same while CLIENTS clients of heavy's user LIST all of heavy's pods over and over
# (a 429 makes such a client pause 100 ms, as one honouring Retry-After would). Prints light's
# p50/p99 per phase and round, then medians and the ratio loaded/idle per server (goal for FAIR:
# p99 ratio at most 2), and the heavy LISTs/s each server sustained. Only the bench runs.
#
# usage: bench/run-fair-queuing.sh [BUILD_DIR]
# Knobs (environment): ROUNDS (3), SECS (10), CLIENTS (64), PODS (3000), HEAVY_PATH (what heavy's
# clients GET; default its pods' list; /api/v1/namespaces/default/pods/p-0 measures what fair
# queuing costs a tenant alone on its partition: its GETs/s with and without), FAIR_ARGS (more
# flags for FAIR's server, e.g. "--tenant-seats 12"), HEAVY_NICE (0: the nice value of heavy's
# client threads, a stand-in for clients on other machines; the probe stays at 0), PROBE_PATH
# (what light GETs; default one of its pods by name, a read from etcd), B (another build dir:
# its ursa-tp-apiserver runs too, as FAIR_B and FIFO_B, in the same rounds; e.g. the commit
# before a change; FAIR_B_ARGS: FAIR_B's flags instead of FAIR_ARGS, e.g. B=build
# FAIR_B_ARGS="--fair-bulk-send-buffer 0" for the same build without paced replies).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=$(cd "${1:-$ROOT/build}" 2>/dev/null && pwd) || { echo "run-fair-queuing.sh: build dir not found" >&2; exit 1; }
: "${ROUNDS:=3}" "${SECS:=10}" "${CLIENTS:=64}" "${PODS:=3000}"
: "${HEAVY_PATH:=/api/v1/namespaces/default/pods}"
ETCD_BIN=${ETCD_BIN:-$(command -v etcd || true)}
APISERVER=$BUILD/src/tenant-partition/ursa-tp-apiserver
LOAD=$BUILD/bench/ursa-load
die() { echo "run-fair-queuing.sh: $*" >&2; exit 1; }
[ -x "$ETCD_BIN" ] || die "etcd not found"
for b in "$APISERVER" "$LOAD"; do [ -x "$b" ] || die "missing $b"; done
SERVERS=(FAIR FIFO)
declare -A BIN=([FAIR]=$APISERVER [FIFO]=$APISERVER)
if [ -n "${B:-}" ]; then
	BIN[FAIR_B]=$B/src/tenant-partition/ursa-tp-apiserver BIN[FIFO_B]=$B/src/tenant-partition/ursa-tp-apiserver
	[ -x "${BIN[FAIR_B]}" ] || die "missing ${BIN[FAIR_B]}"
	SERVERS+=(FAIR_B FIFO_B)
fi
# shellcheck source=bench/lib.sh
. "$ROOT/bench/lib.sh"
bench_tmp ursa-bench-fairq
ulimit -n 65536 2>/dev/null || true

tok() { od -An -N12 -tx1 /dev/urandom | tr -d ' \n'; }
ADMIN=$(tok) HEAVY=$(tok) LIGHT=$(tok)
{
	printf '%s,admin,uid1,"system:masters",system\n' "$ADMIN"
	printf '%s,hank,uid2,"ursa:tenant-admins",heavy\n' "$HEAVY"
	printf '%s,lucy,uid3,"ursa:tenant-admins",light\n' "$LIGHT"
} >"$TMP/tokens.csv"
start_etcd "$TMP/etcd" etcd
declare -A URL
for s in "${SERVERS[@]}"; do
	port=$("$LOAD" free-port)
	extra=()
	[ "${s%_B}" = FIFO ] && extra=(--fair-queuing=false)
	# shellcheck disable=SC2206 # split at spaces, as documented
	[ "$s" = FAIR ] && extra=(${FAIR_ARGS:-})
	# shellcheck disable=SC2206
	[ "$s" = FAIR_B ] && extra=(${FAIR_B_ARGS-${FAIR_ARGS:-}})
	"${BIN[$s]}" --listen "127.0.0.1:$port" --etcd-servers "$ETCD_URL" --token-auth-file "$TMP/tokens.csv" \
		--partition-id tp-1 "${extra[@]}" >"$TMP/apiserver-$s.log" 2>&1 &
	PIDS+=("$!")
	URL[$s]="http://127.0.0.1:$port"
done
TOKEN=$ADMIN CA=""
for s in "${SERVERS[@]}"; do wait_up "${URL[$s]}" "$s" "${PIDS[-1]}" "$TMP/apiserver-$s.log"; done
api() { bench_api "${URL[FAIR]}" "$@" || die "$1 $2 failed"; }
for t in heavy light; do
	api POST /api/v1/tenants "{\"apiVersion\":\"v1\",\"kind\":\"Tenant\",\"metadata\":{\"name\":\"$t\"}}" 201,409
	for _ in $(seq 50); do bench_api "${URL[FAIR]}" GET "/api/v1/tenants/$t/namespaces/default" "" 200 && break; sleep 0.2; done
done
"$LOAD" create-pods --server "${URL[FAIR]}" --token "$ADMIN" --tenant heavy --namespace default --clients 8 \
	--count "$PODS" --duration 600 >"$TMP/create.out" 2>&1 || die "creating heavy's pods failed"
for t in light heavy; do
	for i in $(seq 0 9); do
		api POST "/api/v1/tenants/$t/namespaces/default/pods" \
			"{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p-$i\"},\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"busybox\"}]}}" 201,409
	done
done

phase() { # phase SERVER CLIENTS: prints "p50 p99 heavy_per_s code429"
	local out=$TMP/phase.out
	timeout -k 10 $((SECS + 60)) "$LOAD" fairness --server "${URL[$1]}" --token "$HEAVY" \
		--path "$HEAVY_PATH" --clients "$2" --heavy-nice "${HEAVY_NICE:-0}" --probe-token "$LIGHT" \
		--probe-path "${PROBE_PATH:-/api/v1/namespaces/default/pods/p-0}" --duration "$SECS" --timeout 120 >"$out" 2>&1 ||
		{ tail -5 "$out" >&2; die "fairness run failed"; }
	local p50 p99 hps c429
	p50=$(bench_result_field "$out" probe_p50_ms) p99=$(bench_result_field "$out" probe_p99_ms)
	hps=$(bench_result_field "$out" heavy_per_s)
	c429=$(sed -n 's/^RESULT .*"heavy_codes":{[^}]*"429":\([0-9]*\).*/\1/p' "$out" | tail -1)
	echo "$p50 $p99 $hps ${c429:-0} $(bench_result_field "$out" heavy_bytes)"
}

echo "# $(date -u +%Y-%m-%dT%H:%M:%SZ) rounds=$ROUNDS secs=$SECS clients=$CLIENTS pods=$PODS heavy=$HEAVY_PATH fair_args=\"${FAIR_ARGS:-}\" fair_b_args=\"${FAIR_B_ARGS-}\" heavy_nice=${HEAVY_NICE:-0} $(nproc) cores; load: $(uptime | sed 's/.*load average: //')"
echo "# per round: server round phase light_p50_ms light_p99_ms heavy_lists_per_s heavy_429s bytes_per_list"
declare -A RES
for r in $(seq "$ROUNDS"); do
	for s in "${SERVERS[@]}"; do
		for ph in idle loaded; do
			n=0
			[ "$ph" = loaded ] && n=$CLIENTS
			line=$(phase "$s" "$n")
			echo "$s $r $ph $line"
			RES[$s-$ph]+="$line"$'\n'
		done
	done
done
echo "# medians: server idle_p50 idle_p99 loaded_p50 loaded_p99 p99_ratio heavy_lists_per_s"
for s in "${SERVERS[@]}"; do
	col() { printf '%s' "${RES[$s-$1]}" | awk -v c="$2" 'NF {print $c}' | median; }
	ip50=$(col idle 1) ip99=$(col idle 2) lp50=$(col loaded 1) lp99=$(col loaded 2) hps=$(col loaded 3)
	awk -v s="$s" -v a="$ip50" -v b="$ip99" -v c="$lp50" -v d="$lp99" -v h="$hps" \
		'BEGIN {printf "%s %.2f %.2f %.2f %.2f %.2f %.1f\n", s, a, b, c, d, d / b, h}'
done
echo "# done $(date -u +%Y-%m-%dT%H:%M:%SZ) load: $(uptime | sed 's/.*load average: //')"
