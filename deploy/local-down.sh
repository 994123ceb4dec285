#!/usr/bin/env bash
# Stops the local Ursa region started by deploy/local-up.sh.
#
#   ./deploy/local-down.sh [--purge]
#
# Every process recorded under .ursa/pids/ gets TERM, then KILL if it is still alive after
# 10 s; components stop in the reverse of their start order. Then the containers the kubelets
# started (processes under `ursa-kubelet shim`, which outlive their kubelet) are stopped the
# same way. --purge also deletes .ursa/ (data, keys, certificates, logs).
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
	-h | --help) sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) die "unknown argument: $arg (see --help)" ;;
	esac
done

if [ -d "$URSA_PIDS" ]; then
	# The table's components in reverse order, then anything else recorded (from an older table).
	mapfile -t names < <(component_names | tac)
	shopt -s nullglob
	for pf in "$URSA_PIDS"/*.pid; do
		n=$(basename "$pf" .pid)
		printf '%s\n' "${names[@]}" | grep -qxF "$n" || names+=("$n")
	done
	for n in "${names[@]}"; do
		if [ -f "$(pidfile "$n")" ]; then
			daemon_pid "$n" >/dev/null || say "$n was not running"
			stop_daemon "$n"
		fi
	done
fi
if [ -d "$URSA_STATE" ]; then
	stop_containers
fi

if [ $purge -eq 1 ] && [ -d "$URSA_STATE" ]; then
	rm -rf "$URSA_STATE"
	say "removed $URSA_STATE"
fi
say "local region stopped"
