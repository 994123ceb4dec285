#!/usr/bin/env bash
# Pod creates/s with RBAC and a ResourceQuota against creates/s without them, in one run:
# interleaved rounds against one ursa-tp-apiserver and etcd with the same client count. Without:
# the region's administrator (system:masters, which RBAC does not decide) into a namespace with
# no quota. With: a tenant user of group "devs" whom a RoleBinding of the ClusterRole "edit"
# allows (RBAC decides every create) into a namespace with a ResourceQuota (pods and
# requests.cpu tracked, each create reserved and counted). Prints each round, the medians and
# their ratio (goal: >= 0.9).
#
# usage: bench/run-quota.sh [BUILD_DIR]
# Knobs (environment): ROUNDS (default 5), DURATION (s per leg, default 10), CLIENTS (16).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=$(cd "${1:-$ROOT/build}" 2>/dev/null && pwd) || { echo "run-quota.sh: build dir not found" >&2; exit 1; }
: "${ROUNDS:=5}" "${DURATION:=10}" "${CLIENTS:=16}"
ETCD_BIN=${ETCD_BIN:-$(command -v etcd || true)}
APISERVER=$BUILD/src/tenant-partition/ursa-tp-apiserver
LOAD=$BUILD/bench/ursa-load
die() { echo "run-quota.sh: $*" >&2; exit 1; }
[ -x "$ETCD_BIN" ] || die "etcd not found"
[ -x "$APISERVER" ] || die "missing $APISERVER"
[ -x "$LOAD" ] || die "missing $LOAD (cmake --build $BUILD --target ursa-load)"
# shellcheck source=bench/lib.sh
. "$ROOT/bench/lib.sh"
bench_tmp ursa-bench-quota
ulimit -n 65536 2>/dev/null || true

ADMIN="bench-$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')"
USER_TOKEN="user-$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')"
start_etcd "$TMP/etcd" etcd
port=$("$LOAD" free-port)
{
	printf '%s,admin,uid1,"system:masters",system\n' "$ADMIN"
	printf '%s,alice,uid2,"devs",bench\n' "$USER_TOKEN"
} >"$TMP/tokens.csv"
"$APISERVER" --listen "127.0.0.1:$port" --etcd-servers "$ETCD_URL" --token-auth-file "$TMP/tokens.csv" \
	>"$TMP/apiserver.log" 2>&1 &
API_PID=$!
PIDS+=("$API_PID")
URL="http://127.0.0.1:$port"

api() { # api TOKEN METHOD PATH BODY EXPECT
	local i
	for i in $(seq 50); do
		"$LOAD" request --server "$URL" --token "$1" --method "$2" --path "$3" ${4:+--data "$4"} \
			--expect "$5" >"$TMP/req.out" 2>&1 && return 0
		sleep 0.2
	done
	cat "$TMP/req.out" >&2
	tail -20 "$TMP/apiserver.log" >&2
	die "$2 $3 failed"
}
api "$ADMIN" POST /api/v1/tenants '{"apiVersion":"v1","kind":"Tenant","metadata":{"name":"bench"}}' 201,409
api "$ADMIN" GET /api/v1/tenants/bench/namespaces/default "" 200
for ns in quota noquota; do
	api "$ADMIN" POST /api/v1/tenants/bench/namespaces "{\"metadata\":{\"name\":\"$ns\"}}" 201,409
done
api "$ADMIN" POST /apis/rbac.authorization.k8s.io/v1/tenants/bench/namespaces/quota/rolebindings \
	'{"metadata":{"name":"devs-edit"},"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"edit"},"subjects":[{"kind":"Group","name":"devs"}]}' 201,409
api "$ADMIN" POST /api/v1/tenants/bench/namespaces/quota/resourcequotas \
	'{"metadata":{"name":"big"},"spec":{"hard":{"pods":"1000000","requests.cpu":"100000"}}}' 201
# the user's own creates must pass RBAC: say so if they do not
"$LOAD" request --server "$URL" --token "$USER_TOKEN" --path /api/v1/tenants/bench/namespaces/quota/pods \
	--expect 200 >/dev/null 2>&1 || echo "# warning: the tenant user cannot list pods (RBAC?)" >&2

leg() { # leg NS ROUND: prints ops/s (noquota as the administrator, quota as the RBAC-bound user)
	local out=$TMP/$1-$2.out token=$USER_TOKEN
	[ "$1" = noquota ] && token=$ADMIN
	timeout -k 10 $((DURATION + 60)) "$LOAD" create-pods --server "$URL" --token "$token" --tenant bench \
		--namespace "$1" --clients "$CLIENTS" --duration "$DURATION" >"$out" 2>&1 || true
	kill -0 "$API_PID" 2>/dev/null || { tail -20 "$TMP/apiserver.log" >&2; die "API server died"; }
	local errs
	errs=$(grep '^RESULT ' "$out" | sed -n 's/.*"errors":\([0-9]*\).*/\1/p')
	[ "${errs:-0}" = 0 ] || { grep -v '^RESULT' "$out" >&2; echo "# warning: $errs errors in $1 round $2" >&2; }
	grep '^RESULT ' "$out" | sed -n 's/.*"ops_per_s":\([0-9.]*\).*/\1/p'
}
median() { sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }

echo "# $(date -u +%Y-%m-%dT%H:%M:%SZ) rounds=$ROUNDS duration=${DURATION}s clients=$CLIENTS load: $(uptime | sed 's/.*load average: //')"
printf '%-6s %14s %14s\n' round plain/s rbac+quota/s
: >"$TMP/nq"; : >"$TMP/q"
for r in $(seq "$ROUNDS"); do
	if [ $((r % 2)) = 1 ]; then a=$(leg noquota "$r"); b=$(leg quota "$r"); else b=$(leg quota "$r"); a=$(leg noquota "$r"); fi
	echo "$a" >>"$TMP/nq"; echo "$b" >>"$TMP/q"
	printf '%-6s %14s %14s\n' "$r" "$a" "$b"
done
mq=$(median <"$TMP/q"); mn=$(median <"$TMP/nq")
printf 'median %14s %14s\nratio (rbac+quota)/plain = %s\n' "$mn" "$mq" "$(awk -v a="$mq" -v b="$mn" 'BEGIN{printf "%.3f", a/b}')"
used=$("$LOAD" request --server "$URL" --token "$ADMIN" --path /api/v1/tenants/bench/namespaces/quota/resourcequotas/big 2>/dev/null | grep -o '"used":{[^}]*}' || true)
echo "# quota status: $used"
