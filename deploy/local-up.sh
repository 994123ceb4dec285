#!/usr/bin/env bash
# Starts the local Ursa region on loopback, with its state under .ursa/ at the repository root.
#
#   ./deploy/local-up.sh [--no-build]
#
# Installs missing Debian packages, builds build/ (RelWithDebInfo), creates the CA, the server
# and kubelet certificates, the token signing keys and the region token (once), starts every
# component of the table in deploy/lib/components.sh (tenant partitions tp-1 and tp-2, resource
# managers rm-az-1 and rm-az-2, registered in .ursa/region.json and the gateway's etcd, per
# zone a real and a hollow kubelet, two gateways behind HAProxy on 6443), and writes an admin
# kubeconfig per partition (.ursa/tp-1.kubeconfig, .ursa/tp-2.kubeconfig,
# .ursa/rm-az-1.kubeconfig, .ursa/rm-az-2.kubeconfig) and .ursa/admin.kubeconfig (HAProxy).
#
# The real nodes run their pods in containers on containerd (URSA_RUNTIME=auto, the default):
# one containerd per node under .ursa/ZONE/HOST/containerd (its own config, sockets, CNI
# networks), images from one local registry for the region (127.0.0.1:7401, docker.io mirrored
# to it: busybox:1.36 and :latest, httpd:1 and :latest, pause:3.9). When containerd cannot run
# (not root, no writable cgroups) or ursa-kubelet lacks the cri runtime, a node falls back to the
# process runtime (each container's command a process of this machine) and this says so;
# URSA_RUNTIME=cri fails instead, URSA_RUNTIME=process always runs processes.
#
# Another region beside this one: URSA_STATE=/dir URSA_PORT_OFFSET=N (every port + N)
# URSA_POD_CIDR=10.245.0.0/16 (the pods' addresses; default 10.244.0.0/16).
#
# Safe to run again: a component whose PID is alive is left alone, unless its binary was
# rebuilt or its flags changed, in which case it is restarted (so `cmake --build build &&
# ./deploy/local-up.sh` picks up a new server). Keys and certificates are never regenerated;
# `./deploy/local-down.sh --purge` starts from scratch.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source-path=SCRIPTDIR
. "$here/lib/common.sh"
. "$here/lib/components.sh"
lock_region

build=1
for arg in "$@"; do
	case $arg in
	--no-build) build=0 ;;
	-h | --help) sed -n '2,27p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) die "unknown argument: $arg (see --help)" ;;
	esac
done

cd "$URSA_ROOT"
ensure_packages
keep_debian_etcd_quiet
[ $build -eq 1 ] && build_tree "$URSA_BUILD_DIR"

ursactl=$URSACTL # from lib/components.sh
[ -x "$ursactl" ] || die "$ursactl is missing: the build did not produce ursactl"

ensure_identity
record_node_grace
for row in "${URSA_COMPONENTS[@]}"; do
	up_component "$row"
done
# ursactl finds signing-key.pem and ca.crt through URSA_HOME.
write_kubeconfigs
use_gateway_kubeconfig # admin.kubeconfig -> HAProxy (the gateways) when it runs

rel=${URSA_STATE#"$PWD"/}
kubeconfigs=() tps=()
for row in "${URSA_PARTITIONS[@]}"; do
	read -r kind name url _ <<<"$row"
	kubeconfigs+=("$rel/$name.kubeconfig")
	[ "$kind" = tp ] && tps+=("$name $url")
done
cat <<MSG

Ursa local region is up.
$(printf '  %s\n' "${URSA_SUMMARY[@]}")

  API server:   $(cat "$URSA_STATE/server")   (CA: $rel/ca.crt)
  kubeconfig:   $rel/admin.kubeconfig   (HAProxy on $((6443 + URSA_PORT_OFFSET)) when it runs, else tp-1; tenant system, user admin, group system:masters)
  real nodes:   $(for f in "$URSA_STATE"/*/*.runtime; do n=${f%.runtime}; printf '%s-%s: %s runtime; ' "$(basename "$(dirname "$n")")" "$(basename "$n")" "$(cat "$f")"; done | sed 's/; $//')
  tenant partitions: $(printf '%s; ' "${tps[@]}" | sed 's/; $//')   (new tenants go to the one with fewest tenants, or the one named by annotation ursa.io/partition)
  per partition: ${kubeconfigs[*]}
  region:       $rel/region.json   ($ursactl partitions)

Use it with kubectl:
  export KUBECONFIG=$URSA_STATE/admin.kubeconfig
  kubectl get tenants
  KUBECONFIG=$rel/rm-az-1.kubeconfig kubectl get nodes

A kubeconfig for a user of a tenant (ursactl reads .ursa/ through URSA_HOME):
  export URSA_HOME=$URSA_STATE
  $ursactl kubeconfig --tenant acme --user alice > acme-alice.kubeconfig

Raw HTTP with the static admin token:
  curl --cacert $rel/ca.crt -H "Authorization: Bearer \$(cut -d, -f1 $rel/tokens.csv)" https://127.0.0.1:$((7101 + URSA_PORT_OFFSET))/api/v1/tenants

Lose a zone or a tenant partition, and get it back:
  ./deploy/local-zone.sh down|up az-1
  ./deploy/local-partition.sh down|up tp-1

Stop everything with ./deploy/local-down.sh (add --purge to delete $rel/).
MSG
