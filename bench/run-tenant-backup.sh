#!/usr/bin/env bash
# Tenant backup and restore rates (`ursactl tenant backup` / `ursactl tenant restore --as`) for
# tenants of 100, 10,000 and 100,000 objects (pods of about 1.5 KB as sent, no controllers or
# scheduler running, so nothing else writes), beside two references in the same run, rounds
# interleaved: reading the same pods as one LIST through the API server (what `kubectl get pods
# -A -o json` reads), and creating as many pods through the API server with 8 clients (what
# re-applying manifests writes). Objects/s each; medians of the rounds and the ratios.
#
# One ursa-tp-apiserver on its own etcd, plain HTTP on loopback; ursactl talks to it through a
# region directory made here (region.json, signing key, backup key).
#
# usage: bench/run-tenant-backup.sh [BUILD_DIR]
# Knobs (environment): SIZES (default "100 10000 100000"), ROUNDS (default 3).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=$(cd "${1:-$ROOT/build}" 2>/dev/null && pwd) || { echo "run-tenant-backup.sh: build dir not found" >&2; exit 1; }
: "${SIZES:=100 10000 100000}" "${ROUNDS:=3}"
ETCD_BIN=${ETCD_BIN:-$(command -v etcd || true)}
APISERVER=$BUILD/src/tenant-partition/ursa-tp-apiserver
URSACTL=$BUILD/src/ursactl/ursactl
LOAD=$BUILD/bench/ursa-load
die() { echo "run-tenant-backup.sh: $*" >&2; exit 1; }
[ -x "$ETCD_BIN" ] || die "etcd not found"
for b in "$APISERVER" "$URSACTL" "$LOAD"; do [ -x "$b" ] || die "missing $b"; done
# shellcheck source=bench/lib.sh
. "$ROOT/bench/lib.sh"
bench_tmp ursa-bench-backup
ulimit -n 65536 2>/dev/null || true

export URSA_HOME=$TMP/region
mkdir -p "$URSA_HOME"
"$URSACTL" keygen --out-dir "$URSA_HOME" >/dev/null
(umask 077; openssl rand -base64 32 >"$URSA_HOME/backup.key")
ADMIN="bench-$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')"
printf '%s,admin,uid1,"system:masters",system\n' "$ADMIN" >"$TMP/tokens.csv"
start_etcd "$TMP/etcd" etcd
port=$("$LOAD" free-port)
"$APISERVER" --listen "127.0.0.1:$port" --etcd-servers "$ETCD_URL" --token-auth-file "$TMP/tokens.csv" \
	--token-signing-public-key "$URSA_HOME/signing-key.pub" --partition-id tp-1 >"$TMP/apiserver.log" 2>&1 &
API_PID=$!
PIDS+=("$API_PID")
URL="http://127.0.0.1:$port"
printf '{"tenantPartitions":[{"name":"tp-1","endpoints":["%s"]}],"resourceManagers":[]}\n' "$URL" \
	>"$URSA_HOME/region.json"

TOKEN=$ADMIN CA="" # for bench_api (plain HTTP)
api() { # api METHOD PATH BODY EXPECT
	bench_api "$URL" "$@" && return 0
	tail -20 "$TMP/apiserver.log" >&2
	die "$1 $2 failed"
}
create_pods() { # create_pods TENANT NS COUNT: prints creates/s
	local out=$TMP/create.out
	api POST "/api/v1/tenants/$1/namespaces" "{\"metadata\":{\"name\":\"$2\"}}" 201,409
	timeout -k 10 1800 "$LOAD" create-pods --server "$URL" --token "$ADMIN" --tenant "$1" --namespace "$2" \
		--clients 8 --count "$3" --duration 1800 >"$out" 2>&1 || true
	local errs
	errs=$(bench_result_field "$out" errors)
	[ "${errs:-0}" = 0 ] || { tail -5 "$out" >&2; die "$errs errors creating pods in $1/$2"; }
	bench_result_field "$out" ops_per_s
}
list_rate() { # list_rate TENANT COUNT: objects/s of one LIST of every pod of the tenant
	local t0 t1
	t0=$(date +%s.%N)
	"$LOAD" request --server "$URL" --token "$ADMIN" --path "/api/v1/tenants/$1/pods" --expect 200 >/dev/null 2>&1
	t1=$(date +%s.%N)
	awk -v n="$2" -v a="$t0" -v b="$t1" 'BEGIN {printf "%.0f\n", n / (b - a)}'
}
rate_of() { sed -n 's/.*(\([0-9]*\) objects\/s).*/\1/p' "$1" | tail -1; }

echo "# $(date -u +%Y-%m-%dT%H:%M:%SZ) sizes=\"$SIZES\" rounds=$ROUNDS load: $(uptime | sed 's/.*load average: //')"
echo "# objects/s per round: size round list backup restore create"
declare -A RES
for size in $SIZES; do
	t="bench-$size" ref="ref-$size" # the reference's creates go to a tenant of their own
	for x in "$t" "$ref"; do
		api POST /api/v1/tenants "{\"apiVersion\":\"v1\",\"kind\":\"Tenant\",\"metadata\":{\"name\":\"$x\"}}" 201,409
		api GET "/api/v1/tenants/$x/namespaces/default" "" 200
	done
	create_pods "$t" default "$size" >/dev/null
	objects=0
	for r in $(seq "$ROUNDS"); do
		l=$(list_rate "$t" "$size")
		"$URSACTL" tenant backup "$t" "$TMP/$t.backup" >"$TMP/backup.out" 2>&1 || { cat "$TMP/backup.out" >&2; die "backup failed"; }
		b=$(rate_of "$TMP/backup.out")
		objects=$(sed -n 's/.*: \([0-9]*\) objects (.*/\1/p' "$TMP/backup.out")
		"$URSACTL" tenant restore "$TMP/$t.backup" --as "$t-copy-$r" >"$TMP/restore.out" 2>&1 ||
			{ cat "$TMP/restore.out" >&2; die "restore failed"; }
		s=$(rate_of "$TMP/restore.out")
		c=$(create_pods "$ref" "round-$r" "$size")
		echo "$size $r $l $b $s $c"
		RES[$size]+="$l $b $s $c"$'\n'
		kill -0 "$API_PID" 2>/dev/null || { tail -20 "$TMP/apiserver.log" >&2; die "API server died"; }
	done
	echo "# tenant $t: $objects objects in a backup (its $size pods and what every tenant has), $(stat -c %s "$TMP/$t.backup") bytes"
done
echo "# medians (objects/s): size list backup restore create backup/list restore/create"
for size in $SIZES; do
	col() { printf '%s' "${RES[$size]}" | awk -v c="$1" 'NF {print $c}' | median; }
	l=$(col 1) b=$(col 2) s=$(col 3) c=$(col 4)
	awk -v z="$size" -v l="$l" -v b="$b" -v s="$s" -v c="$c" \
		'BEGIN {printf "%s %s %s %s %s %.2f %.2f\n", z, l, b, s, c, b / l, s / c}'
done
echo "# done $(date -u +%Y-%m-%dT%H:%M:%SZ) load: $(uptime | sed 's/.*load average: //')"
