#!/usr/bin/env bash
# Takes one tenant partition of the local region down, or brings it back, to rehearse losing it.
#
#   ./deploy/local-partition.sh down|up PARTITION    # e.g. tp-1
#
# A tenant partition is every row of the component table (deploy/lib/components.sh) whose name
# starts with "PARTITION-" (its etcd, API server, controller manager and scheduler). `down`
# stops them in reverse table order (TERM, KILL after 10 s). `up` starts, in table order, those
# that are not running, as local-up.sh would (no build, no registration: the registries live in
# the etcds and survive), so after a crash of one daemon
# (`kill -9 $(cat .ursa/pids/tp-1-apiserver.pid)`) `up` starts just that one; then it waits
# until the gateways route to the partition again.
# Meanwhile the gateways answer 503 for the partition's tenants at once (the other partitions'
# tenants are not affected) and route to it again within a second of its API server being ready;
# the containers of its pods go on running on their nodes.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source-path=SCRIPTDIR
. "$here/lib/common.sh"
. "$here/lib/components.sh"
lock_region

usage() { sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'; }

[ $# -eq 1 ] && case $1 in -h | --help) usage; exit 0 ;; esac
[ $# -eq 2 ] || { usage >&2; exit 2; }
action=$1 part=$2
case $action in up | down) ;; *) die "unknown action: $action (up or down)" ;; esac
[[ $part =~ ^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$ ]] || die "bad partition name: $part"
[ -d "$URSA_STATE" ] || die "no local region in $URSA_STATE (run ./deploy/local-up.sh first)"

# The partition's rows, in table order; only tenant partitions (a tp_apiserver row) qualify.
rows=() is_tp=0
for row in "${URSA_COMPONENTS[@]}"; do
	read -r name kind _ <<<"$row"
	case $name in "$part-"*) rows+=("$row") ;; *) continue ;; esac
	if [ "$kind" = tp_apiserver ]; then is_tp=1; fi
done
if [ $is_tp -eq 0 ]; then
	known=
	for row in "${URSA_COMPONENTS[@]}"; do
		read -r _ kind dir _ <<<"$row"
		if [ "$kind" = tp_apiserver ]; then known+="$dir "; fi
	done
	die "no tenant partition $part in the table (tenant partitions: ${known% }; for a zone see ./deploy/local-zone.sh)"
fi

# partition_tenant URL: prints the name of one tenant stored in the tenant partition at URL,
# "system" if it is the first tenant partition (the gateways keep the system tenant there), or
# nothing.
partition_tenant() {
	local first="" row kind dir
	for row in "${URSA_COMPONENTS[@]}"; do
		read -r _ kind dir _ <<<"$row"
		if [ "$kind" = tp_apiserver ]; then first=$dir; break; fi
	done
	if [ "$first" = "$part" ]; then
		printf 'system\n'
		return 0
	fi
	curl -s --max-time 5 --cacert "$URSA_CA" -H "Authorization: Bearer $(admin_static_token)" \
		"$1/api/v1/tenants?limit=1" 2>/dev/null |
		python3 -c '
import json, sys
try:
    items = json.load(sys.stdin).get("items") or []
except ValueError:
    items = []
if items:
    print(items[0]["metadata"]["name"])'
}

# wait_gateways_route URL: after `up`, waits (up to 10 s) until every running gateway forwards
# requests for a tenant of the partition again. A gateway checks each partition's /readyz every
# second and opens its circuit again on the first success, so this takes up to a second; without
# the wait a command run right after `up` could still get 503.
wait_gateways_route() {
	local url=$1 tenant row name kind port i code="" pending
	tenant=$(partition_tenant "$url")
	[ -n "$tenant" ] || return 0
	for ((i = 0; i < 50; i++)); do
		pending=
		for row in "${URSA_COMPONENTS[@]}"; do
			read -r name kind _ port _ <<<"$row"
			if [ "$kind" != gateway ] || ! daemon_pid "$name" >/dev/null; then continue; fi
			code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 --cacert "$URSA_CA" \
				-H "Authorization: Bearer $(admin_static_token)" \
				"https://127.0.0.1:$port/api/v1/tenants/$tenant/namespaces?limit=1" 2>/dev/null || true)
			[ "$code" = 200 ] || pending+="$name "
		done
		if [ -z "$pending" ]; then
			say "the gateways route to $part again (tenant $tenant)"
			return 0
		fi
		sleep 0.2
	done
	warn "gateways still not routing to $part after 10 s: ${pending% } (last status $code)"
}

use_recorded_node_grace
case $action in
down)
	stop_rows "${rows[@]}"
	say "tenant partition $part is down: $(printf '%s ' "${rows[@]%% *}")"
	;;
up)
	for row in "${rows[@]}"; do
		up_component "$row"
	done
	for row in "${URSA_PARTITIONS[@]}"; do
		read -r _ name url _ <<<"$row"
		if [ "$name" = "$part" ]; then wait_gateways_route "$url"; fi
	done
	printf '%s\n' "${URSA_SUMMARY[@]}" | sed 's/^/  /'
	say "tenant partition $part is up: $(printf '%s ' "${rows[@]%% *}")"
	;;
esac
