#!/usr/bin/env bash
# Takes one zone of the local region down, or brings it back, to rehearse losing a zone.
#
#   ./deploy/local-zone.sh down ZONE    # e.g. az-1
#   ./deploy/local-zone.sh up ZONE
#
# A zone is every row of the component table (deploy/lib/components.sh) whose name starts with
# "rm-ZONE-" (its resource manager's etcd, API server and controller manager) or "ZONE-" (its
# kubelets, and its real nodes' containerds). `down` stops them in reverse table order (TERM,
# KILL after 10 s): the kubelets, then each node's containerd with its containers, shims,
# mounts and CNI bridge (containerd_teardown), then the containers the process runtime started
# (they run under shims that outlive a kubelet). The region's image registry stays.
# `up` starts exactly those rows again, in table order, as local-up.sh would (no build, no
# registration: the registries live in the partitions' etcd and survive). The tenant
# partitions notice a lost resource manager after the node grace period
# (URSA_NODE_MONITOR_GRACE_SECONDS when local-up.sh started them) and evict their pods there.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source-path=SCRIPTDIR
. "$here/lib/common.sh"
. "$here/lib/components.sh"
lock_region

usage() { sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; }

[ $# -eq 1 ] && case $1 in -h | --help) usage; exit 0 ;; esac
[ $# -eq 2 ] || { usage >&2; exit 2; }
action=$1 zone=$2
case $action in up | down) ;; *) die "unknown action: $action (up or down)" ;; esac
[[ $zone =~ ^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$ ]] || die "bad zone name: $zone"
[ -d "$URSA_STATE" ] || die "no local region in $URSA_STATE (run ./deploy/local-up.sh first)"

# The zone's rows, in table order.
rows=()
for row in "${URSA_COMPONENTS[@]}"; do
	read -r name _ <<<"$row"
	case $name in "rm-$zone-"* | "$zone-"*) rows+=("$row") ;; esac
done
if [ ${#rows[@]} -eq 0 ]; then
	known=$(component_names | sed -n 's/^rm-\(.*\)-[a-z]*$/\1/p' | sort -u | tr '\n' ' ')
	die "no component of zone $zone in the table (zones: ${known:-none})"
fi

# stop_zone_containers: stop_containers (components.sh) over this zone's kubelet state only.
# It globs $URSA_STATE/*/*/runtime/..., so it runs against a directory holding just the zone.
stop_zone_containers() {
	[ -d "$URSA_STATE/$zone" ] || return 0
	local view
	view=$(mktemp -d)
	ln -s "$URSA_STATE/$zone" "$view/$zone"
	( URSA_STATE=$view; stop_containers )
	rm -rf "$view"
}

use_recorded_node_grace
case $action in
down)
	stop_rows "${rows[@]}"
	stop_zone_containers
	say "zone $zone is down: $(printf '%s ' "${rows[@]%% *}")"
	;;
up)
	for row in "${rows[@]}"; do
		up_component "$row"
	done
	printf '%s\n' "${URSA_SUMMARY[@]}" | sed 's/^/  /'
	say "zone $zone is up: $(printf '%s ' "${rows[@]%% *}")"
	;;
esac
