#!/usr/bin/env bash
# Stops the local Ursa region started by deploy/local-up.sh.
#
#   ./deploy/local-down.sh [--purge]
#
# Every process recorded under .ursa/pids/ gets TERM, then KILL if it is still alive after
# 10 s; components stop in the reverse of their start order: the kubelets first, then each real
# node's containerd with everything it ran (tasks killed and deleted, shims, mounts under
# .ursa/, the node's CNI bridge), then the image registry. Then the containers the process
# runtime started (processes under `ursa-kubelet shim`, which outlive their kubelet) are stopped
# the same way. --purge also deletes .ursa/ (data, keys, certificates, logs, image cache).
# URSA_STATE and URSA_PORT_OFFSET name another region, as for local-up.sh.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source-path=SCRIPTDIR
. "$here/lib/common.sh"
. "$here/lib/components.sh"
lock_region

purge=0
for arg in "$@"; do
	case $arg in
	--purge) purge=1 ;;
	-h | --help) sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) die "unknown argument: $arg (see --help)" ;;
	esac
done

if [ -d "$URSA_STATE" ]; then
	# The table's components in reverse order (a kind with a stop_<kind> function, containerd
	# and the registry, stops through it), then anything else recorded (from an older table).
	shopt -s nullglob
	for ((i = ${#URSA_COMPONENTS[@]} - 1; i >= 0; i--)); do
		read -r n kind args <<<"${URSA_COMPONENTS[i]}"
		if declare -F "stop_$kind" >/dev/null; then
			# shellcheck disable=SC2086 # args is a word list by design
			"stop_$kind" "$n" $args
		elif [ -f "$(pidfile "$n")" ]; then
			daemon_pid "$n" >/dev/null || say "$n was not running"
			stop_daemon "$n"
		fi
	done
	for pf in "$URSA_PIDS"/*.pid; do
		n=$(basename "$pf" .pid)
		daemon_pid "$n" >/dev/null || say "$n was not running"
		stop_daemon "$n"
	done
	# A node's containerd the table no longer names.
	for d in "$URSA_STATE"/*/*/containerd; do
		if [ -f "$d/config.toml" ] && [ -n "$(containerd_leftovers "$d")$(cat "$d/containerd.pid" 2>/dev/null)" ]; then
			say "cleaning up containerd of $d"
			containerd_teardown "$d"
		fi
		containerd_remove_network "$d"
	done
	stop_containers
fi

if [ $purge -eq 1 ] && [ -d "$URSA_STATE" ]; then
	left=$(_containerd_mounts "$URSA_STATE")
	[ -z "$left" ] || die "still mounted under $URSA_STATE, not deleting it: $(tr '\n' ' ' <<<"$left")"
	rm -rf "$URSA_STATE"
	say "removed $URSA_STATE"
	# kubectl keeps what it discovered of https://127.0.0.1:<port>[/tenants/<t>] for 6 hours
	# without asking again: a region made anew on the same port (with other tenants' kinds, say a
	# CustomResourceDefinition that is gone) must not be seen through the old one's discovery.
	kcache=${KUBECACHEDIR:-${HOME:-/root}/.kube/cache}/discovery
	front="127.0.0.1_$((6443 + URSA_PORT_OFFSET))"
	if compgen -G "$kcache/$front*" >/dev/null; then
		rm -rf "$kcache/$front" "$kcache/$front"_*
		say "removed kubectl's discovery cache of https://127.0.0.1:$((6443 + URSA_PORT_OFFSET))"
	fi
fi
say "local region stopped"
