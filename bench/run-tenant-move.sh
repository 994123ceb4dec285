#!/usr/bin/env bash
# Tenant moves (`ursactl tenant move`, issue 23): for tenants of 100, 10,000 and 100,000 objects
# (pods of about 1.5 KB as sent, plus what every tenant has), the time the tenant's writes are
# held (the fence: from the source refusing them to the target taking them) and the whole move,
# each tenant moved tp-1 -> tp-2 -> tp-1 ... ROUNDS times; beside it, in the same run, the
# reference `ursactl tenant restore` of the same tenant's backup (objects/s), rounds interleaved.
# With WRITERS > 0, that many clients update one of the tenant's configmaps in a loop during each
# move (straight to the partition the gateways' registry names, retrying 429s after 50 ms, as
# the gateway does): their p99 and max update latency, and that no update was lost.
#
# Two ursa-tp-apiservers (tp-1, tp-2) on etcds of their own and a third etcd for the gateways'
# registry (the tenant's placement and the move record); no controllers, scheduler or kubelet,
# so nothing else writes. Plain HTTP on loopback; ursactl uses a region directory made here.
#
# usage: bench/run-tenant-move.sh [BUILD_DIR]
# Knobs (environment): SIZES (default "100 10000 100000"), ROUNDS (default 3), WRITERS (default 2).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=$(cd "${1:-$ROOT/build}" 2>/dev/null && pwd) || { echo "run-tenant-move.sh: build dir not found" >&2; exit 1; }
: "${SIZES:=100 10000 100000}" "${ROUNDS:=3}" "${WRITERS:=2}"
ETCD_BIN=${ETCD_BIN:-$(command -v etcd || true)}
APISERVER=$BUILD/src/tenant-partition/ursa-tp-apiserver
URSACTL=$BUILD/src/ursactl/ursactl
LOAD=$BUILD/bench/ursa-load
die() { echo "run-tenant-move.sh: $*" >&2; exit 1; }
[ -x "$ETCD_BIN" ] || die "etcd not found"
for b in "$APISERVER" "$URSACTL" "$LOAD"; do [ -x "$b" ] || die "missing $b"; done
# shellcheck source=bench/lib.sh
. "$ROOT/bench/lib.sh"
bench_tmp ursa-bench-move
ulimit -n 65536 2>/dev/null || true

export URSA_HOME=$TMP/region
mkdir -p "$URSA_HOME"
"$URSACTL" keygen --out-dir "$URSA_HOME" >/dev/null
(umask 077; openssl rand -base64 32 >"$URSA_HOME/backup.key")
ADMIN="bench-$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')"
printf '%s,admin,uid1,"system:masters",system\n' "$ADMIN" >"$TMP/tokens.csv"
start_etcd "$TMP/etcd-gw" etcd-gw
GW_ETCD=$ETCD_URL
declare -A URL APIPID
for tp in tp-1 tp-2; do
	start_etcd "$TMP/etcd-$tp" "etcd-$tp"
	port=$("$LOAD" free-port)
	"$APISERVER" --listen "127.0.0.1:$port" --etcd-servers "$ETCD_URL" --token-auth-file "$TMP/tokens.csv" \
		--token-signing-public-key "$URSA_HOME/signing-key.pub" --partition-id "$tp" --partition-number "${tp#tp-}" >"$TMP/apiserver-$tp.log" 2>&1 &
	APIPID[$tp]=$!
	PIDS+=("$!")
	URL[$tp]="http://127.0.0.1:$port"
done
TOKEN=$ADMIN CA=""
for tp in tp-1 tp-2; do wait_up "${URL[$tp]}" "$tp" "${APIPID[$tp]}" "$TMP/apiserver-$tp.log"; done
printf '{"tenantPartitions":[{"name":"tp-1","endpoints":["%s"]},{"name":"tp-2","endpoints":["%s"]}],"resourceManagers":[],"gatewayEtcd":"%s","gatewayEtcdPrefix":"/ursa/gateway"}\n' \
	"${URL[tp-1]}" "${URL[tp-2]}" "$GW_ETCD" >"$URSA_HOME/region.json"

api() { # api URL METHOD PATH BODY EXPECT
	local u=$1
	shift
	bench_api "$u" "$@" && return 0
	die "$1 $2 failed"
}
place() { # place TENANT PARTITION: the gateways' record, as a gateway writes it
	local v
	v=$(printf '{"partition":"%s","state":"ready","since":%s}' "$2" "$(date +%s%3N)")
	"$LOAD" request --server "$GW_ETCD" --method POST --path /v3/kv/put --expect 200 \
		--data "{\"key\":\"$(printf '/ursa/gateway/tenants/%s' "$1" | base64 -w0)\",\"value\":\"$(printf '%s' "$v" | base64 -w0)\"}" \
		>/dev/null 2>&1 || die "placing $1"
}
where() { # the partition the registry names for TENANT
	"$LOAD" request --server "$GW_ETCD" --method POST --path /v3/kv/range --expect 200 \
		--data "{\"key\":\"$(printf '/ursa/gateway/tenants/%s' "$1" | base64 -w0)\"}" 2>/dev/null |
		sed -n 's/.*"value":"\([^"]*\)".*/\1/p' | base64 -d | sed -n 's/.*"partition":"\([^"]*\)".*/\1/p'
}
writer() { # writer TENANT OUT: updates configmap w of TENANT until $TMP/stop exists; one line per update: ms
	local t=$1 out=$2 i=0 p t0 t1 code name="w-$BASHPID"
	p=$(where "$t")
	api "${URL[$p]}" POST "/api/v1/tenants/$t/namespaces/default/configmaps" "{\"metadata\":{\"name\":\"$name\"}}" 201,409
	while [ ! -e "$TMP/stop" ]; do
		i=$((i + 1))
		t0=$(date +%s%N)
		while :; do
			p=$(where "$t")
			code=$("$LOAD" request --server "${URL[$p]}" --token "$ADMIN" --method PUT \
				--path "/api/v1/tenants/$t/namespaces/default/configmaps/$name" \
				--data "{\"metadata\":{\"name\":\"$name\"},\"data\":{\"i\":\"$i\"}}" 2>&1 >/dev/null |
				sed -n 's/.* -> //p')
			case $code in 200) break ;; *) sleep 0.05 ;; esac
		done
		t1=$(date +%s%N)
		echo $(((t1 - t0) / 1000000)) >>"$out"
	done
	# nothing lost: the last update is there, wherever the tenant is now
	p=$(where "$t")
	"$LOAD" request --server "${URL[$p]}" --token "$ADMIN" \
		--path "/api/v1/tenants/$t/namespaces/default/configmaps/$name" 2>/dev/null |
		grep -q "\"i\":\"$i\"" || echo "LOST $name $i" >>"$out"
}
secs() { sed -n "s/.*$1 \([0-9.]*\) s.*/\1/p"; }

echo "# $(date -u +%Y-%m-%dT%H:%M:%SZ) sizes=\"$SIZES\" rounds=$ROUNDS writers=$WRITERS load: $(uptime | sed 's/.*load average: //')"
echo "# per round: size round direction held_ms total_s copy_objects_per_s restore_objects_per_s writer_p99_ms writer_max_ms"
declare -A RES
for size in $SIZES; do
	t="move-$size"
	api "${URL[tp-1]}" POST /api/v1/tenants "{\"apiVersion\":\"v1\",\"kind\":\"Tenant\",\"metadata\":{\"name\":\"$t\"}}" 201,409
	api "${URL[tp-1]}" GET "/api/v1/tenants/$t/namespaces/default" "" 200
	place "$t" tp-1
	timeout -k 10 1800 "$LOAD" create-pods --server "${URL[tp-1]}" --token "$ADMIN" --tenant "$t" --namespace default \
		--clients 8 --count "$size" --duration 1800 >"$TMP/create.out" 2>&1 || true
	[ "$(bench_result_field "$TMP/create.out" errors)" = 0 ] || die "creating pods of $t failed"
	for r in $(seq "$ROUNDS"); do
		from=$(where "$t")
		to=tp-2
		[ "$from" = tp-2 ] && to=tp-1
		rm -f "$TMP/stop" "$TMP"/w-*.ms
		WP=()
		for w in $(seq "$WRITERS"); do
			writer "$t" "$TMP/w-$w.ms" &
			WP+=("$!")
		done
		sleep 1
		"$URSACTL" tenant move "$t" --to "$to" >"$TMP/move.out" 2>&1 || { cat "$TMP/move.out" >&2; die "move of $t failed"; }
		sleep 1
		touch "$TMP/stop"
		for p in "${WP[@]}"; do wait "$p" || true; done
		! grep -h LOST "$TMP"/w-*.ms 2>/dev/null || die "an update was lost across the move"
		held=$(sed -n 's/.*writes held \([0-9.]*\) ms.*/\1/p' "$TMP/move.out")
		total=$(sed -n 's/.*; \([0-9.]*\) s in all.*/\1/p' "$TMP/move.out")
		copied=$(sed -n 's/.*: \([0-9]*\) objects copied in \([0-9.]*\) s.*/\1 \2/p' "$TMP/move.out")
		cps=$(awk -v a="${copied% *}" -v b="${copied#* }" 'BEGIN {printf "%.0f", (b > 0 ? a / b : 0)}')
		if [ "$WRITERS" -gt 0 ]; then
			wp99=$(cat "$TMP"/w-*.ms | sort -n | awk '{v[NR]=$1} END {i=int(NR*0.99); if (i<1) i=1; print v[i]}')
			wmax=$(cat "$TMP"/w-*.ms | sort -n | tail -1)
		else
			wp99=- wmax=-
		fi
		# the reference: a restore of the same tenant (as a copy) on the partition it left
		"$URSACTL" tenant backup "$t" "$TMP/$t.backup" >/dev/null 2>&1 || die "backup of $t failed"
		"$URSACTL" tenant restore "$TMP/$t.backup" --as "$t-copy-$r" --to "$from" >"$TMP/restore.out" 2>&1 ||
			{ cat "$TMP/restore.out" >&2; die "restore failed"; }
		rs=$(sed -n 's/.*(\([0-9]*\) objects\/s).*/\1/p' "$TMP/restore.out" | tail -1)
		api "${URL[$from]}" DELETE "/api/v1/tenants/$t-copy-$r" "" 200,202
		echo "$size $r $from->$to $held $total $cps $rs $wp99 $wmax"
		RES[$size]+="$held $total $cps $rs $wp99 $wmax"$'\n'
		for tp in tp-1 tp-2; do
			kill -0 "${APIPID[$tp]}" 2>/dev/null || { tail -20 "$TMP/apiserver-$tp.log" >&2; die "$tp's API server died"; }
		done
	done
	echo "# tenant $t: $(sed -n 's/.*: \([0-9]*\) objects copied.*/\1/p' "$TMP/move.out") objects moved"
done
echo "# medians: size held_ms total_s copy_objects_per_s restore_objects_per_s copy/restore writer_p99_ms writer_max_ms"
for size in $SIZES; do
	col() { printf '%s' "${RES[$size]}" | awk -v c="$1" 'NF && $c != "-" {print $c}' | median; }
	h=$(col 1) a=$(col 2) c=$(col 3) s=$(col 4) p=$(col 5) m=$(col 6)
	awk -v z="$size" -v h="$h" -v a="$a" -v c="$c" -v s="$s" -v p="${p:--}" -v m="${m:--}" \
		'BEGIN {printf "%s %s %s %s %s %.2f %s %s\n", z, h, a, c, s, (s > 0 ? c / s : 0), p, m}'
done
echo "# done $(date -u +%Y-%m-%dT%H:%M:%SZ) load: $(uptime | sed 's/.*load average: //')"
