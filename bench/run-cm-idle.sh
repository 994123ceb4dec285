#!/usr/bin/env bash
# What a tenant partition's controller manager costs when nothing changes, base build A against
# build B, in one run: one etcd and one ursa-tp-apiserver (B's) hold TENANTS tenants (each with
# its three namespaces, kube-dns Service, Endpoints, EndpointSlice and kube-root-ca.crt
# ConfigMaps, made by a warm-up controller manager); then, in interleaved rounds, A's and B's
# ursa-tp-controller-manager each start on that same partition, catch up for CATCHUP s (their
# first sync of every object), and are measured for WINDOW s: CPU of the controller manager, the
# API server and etcd (the resyncs of every service each 30 s and every namespace each minute
# fall in it), and the API server's requests. Prints each leg, the medians and B/A.
#
# usage: bench/run-cm-idle.sh BUILD_A BUILD_B
# Knobs (environment): ROUNDS (2), TENANTS (2000), CATCHUP (60), WINDOW (65).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
[ $# = 2 ] || { sed -n '2,12p' "$0"; exit 2; }
A=$(cd "$1" && pwd) B=$(cd "$2" && pwd)
: "${ROUNDS:=2}" "${TENANTS:=2000}" "${CATCHUP:=60}" "${WINDOW:=65}"
ETCD_BIN=${ETCD_BIN:-$(command -v etcd || true)}
APISERVER=$B/src/tenant-partition/ursa-tp-apiserver
LOAD=$B/bench/ursa-load
REGION=$B/bench/ursa-region
die() { echo "run-cm-idle.sh: $*" >&2; exit 1; }
[ -x "$ETCD_BIN" ] || die "etcd not found"
for f in "$APISERVER" "$LOAD" "$REGION" "$A/src/tenant-partition/controllers/ursa-tp-controller-manager" \
	"$B/src/tenant-partition/controllers/ursa-tp-controller-manager"; do
	[ -x "$f" ] || die "missing $f"
done
# shellcheck source=bench/lib.sh
. "$ROOT/bench/lib.sh"
bench_tmp ursa-bench-cmidle
make_pki
CA=$TMP/pki/ca.crt
TOKEN="bench-$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')"
printf '%s,admin,uid1,"system:masters",system\n' "$TOKEN" >"$TMP/tokens.csv"
printf '%s\n' "$TOKEN" >"$TMP/admin.token"

start_etcd "$TMP/etcd" etcd
port=$("$LOAD" free-port)
URL="https://127.0.0.1:$port"
"$APISERVER" --listen "127.0.0.1:$port" --etcd-servers "$ETCD_URL" --token-auth-file "$TMP/tokens.csv" \
	--tls-cert-file "$TMP/pki/server.crt" --tls-private-key-file "$TMP/pki/server.key" --log-level warn \
	>"$TMP/apiserver.log" 2>&1 &
API_PID=$!
PIDS+=("$API_PID")
wait_up "$URL" apiserver "$API_PID" "$TMP/apiserver.log"
cat >"$TMP/kubeconfig" <<-EOF
	apiVersion: v1
	kind: Config
	clusters: [{name: b, cluster: {server: "$URL", certificate-authority: "$CA"}}]
	users: [{name: b, user: {token: "$TOKEN"}}]
	contexts: [{name: b, context: {cluster: b, user: b}}]
	current-context: b
EOF
printf 'GATEWAY_URL=%s\nCA_FILE=%s\nADMIN_TOKEN_FILE=%s\n' "$URL" "$CA" "$TMP/admin.token" >"$TMP/region.env"

CM_PID=""
start_cm() { # start_cm BUILD NAME
	"$1/src/tenant-partition/controllers/ursa-tp-controller-manager" --kubeconfig "$TMP/kubeconfig" \
		--root-ca-file "$CA" --identity "$2" --log-level warn >"$TMP/cm-$2.log" 2>&1 &
	CM_PID=$!
	PIDS+=("$CM_PID")
}
stop_cm() {
	kill "$CM_PID" 2>/dev/null || true
	wait "$CM_PID" 2>/dev/null || true
	CM_PID=""
}
# requests the API server has answered so far (the sum of its request counters)
api_requests() {
	"$LOAD" request --server "$URL" --cacert "$CA" --token "$TOKEN" --path /metrics --expect 200 2>/dev/null |
		awk '/^ursa_apiserver_request_total/ {s += $NF} END {printf "%d\n", s}'
}
# CM objects: namespaces with kube-root-ca.crt (the warm-up is done when every namespace has one)
count() {
	"$LOAD" request --server "$URL" --cacert "$CA" --token "$TOKEN" --path "$1" --expect 200 2>/dev/null |
		python3 -c 'import json,sys; print(len(json.load(sys.stdin).get("items") or []))'
}

echo "# $(date -u +%Y-%m-%dT%H:%M:%SZ) A=$A B=$B rounds=$ROUNDS tenants=$TENANTS catchup=${CATCHUP}s window=${WINDOW}s load: $(cut -d' ' -f1-3 /proc/loadavg)"
"$REGION" tenants --env "$TMP/region.env" --count "$TENANTS" --prefix t --concurrency 32 >"$TMP/tenants.out" 2>&1 ||
	{ tail -5 "$TMP/tenants.out" >&2; die "creating the tenants failed"; }
echo "# tenants: $(grep '^RESULT' "$TMP/tenants.out" | sed 's/.*"seconds":\([0-9.]*\).*/\1 s/')"
# warm-up: B's controller manager makes what every tenant holds, until every namespace has its root CA
start_cm "$B" warmup
want=$((TENANTS * 3 + 3))
for _ in $(seq 600); do
	have=$(count /api/v1/tenants/all/configmaps) || have=0
	[ "$have" -ge "$want" ] && break
	sleep 2
done
[ "$have" -ge "$want" ] || die "warm-up: $have of $want kube-root-ca.crt after 20 minutes"
sleep 10
stop_cm
echo "# warm-up done: $have ConfigMaps, $(count /api/v1/tenants/all/services) services, $(count /api/v1/tenants/all/endpoints) endpoints"

declare -A R
for r in $(seq "$ROUNDS"); do
	for v in A B; do
		[ "$v" = A ] && build=$A || build=$B
		start_cm "$build" "$v-$r"
		c0=$(cpu_ticks "$CM_PID")
		sleep "$CATCHUP"
		c1=$(cpu_ticks "$CM_PID") a1=$(cpu_ticks "$API_PID") e1=$(cpu_ticks "$ETCD_PID") q1=$(api_requests)
		sleep "$WINDOW"
		c2=$(cpu_ticks "$CM_PID") a2=$(cpu_ticks "$API_PID") e2=$(cpu_ticks "$ETCD_PID") q2=$(api_requests)
		kill -0 "$CM_PID" 2>/dev/null || { tail -20 "$TMP/cm-$v-$r.log" >&2; die "controller manager $v died"; }
		stop_cm
		hz=$(getconf CLK_TCK)
		line=$(awk -v c0="$c0" -v c1="$c1" -v c2="$c2" -v a="$((a2 - a1))" -v e="$((e2 - e1))" -v q="$((q2 - q1))" \
			-v hz="$hz" -v w="$WINDOW" -v cu="$CATCHUP" \
			'BEGIN { printf "%.3f %.3f %.3f %.3f %.1f %.2f", (c2-c1)/hz/w, a/hz/w, e/hz/w, (c2-c1+a+e)/hz/w, q/w, (c1-c0)/hz }')
		echo "round $r $v: idle cores cm/api/etcd/sum $(cut -d' ' -f1-4 <<<"$line"); API requests/s $(cut -d' ' -f5 <<<"$line"); catch-up CM CPU-s $(cut -d' ' -f6 <<<"$line")"
		R[$v]+="$line"$'\n'
	done
done
col() { printf '%s' "${R[$1]}" | awk -v k="$2" 'NF {print $k}' | median; }
echo "# medians     A          B          B/A"
for k in 1:cm_cores 2:api_cores 3:etcd_cores 4:sum_cores 5:api_requests_per_s 6:catchup_cm_cpu_s; do
	i=${k%%:*} n=${k#*:}
	a=$(col A "$i") b=$(col B "$i")
	printf '%-20s %-10s %-10s %s\n' "$n" "$a" "$b" "$(awk -v a="$a" -v b="$b" 'BEGIN { if (a > 0) printf "%.3f", b / a; else print "-" }')"
done
echo "# load after: $(cut -d' ' -f1-3 /proc/loadavg)"
