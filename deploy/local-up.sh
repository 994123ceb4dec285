#!/usr/bin/env bash
# Starts the local Ursa region on loopback, with its state under .ursa/ at the repository root.
#
#   ./deploy/local-up.sh [--no-build]
#
# Installs missing Debian packages, builds build/ (RelWithDebInfo), creates the CA, the server
# certificate and the token signing keys (once), starts every component of the table in
# deploy/lib/components.sh and writes .ursa/admin.kubeconfig.
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

build=1
for arg in "$@"; do
	case $arg in
	--no-build) build=0 ;;
	-h | --help) sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) die "unknown argument: $arg (see --help)" ;;
	esac
done

cd "$URSA_ROOT"
ensure_packages
keep_debian_etcd_quiet
[ $build -eq 1 ] && build_tree "$URSA_BUILD_DIR"

ursactl=$URSA_BUILD_DIR/src/ursactl/ursactl
[ -x "$ursactl" ] || die "$ursactl is missing: the build did not produce ursactl"

ensure_identity "$ursactl"
for row in "${URSA_COMPONENTS[@]}"; do
	up_component "$row"
done

# ursactl finds signing-key.pem, server and ca.crt through URSA_HOME.
URSA_HOME=$URSA_STATE "$ursactl" kubeconfig --tenant system --user admin \
	--groups system:masters --ttl 0 >"$URSA_STATE/admin.kubeconfig.tmp"
chmod 600 "$URSA_STATE/admin.kubeconfig.tmp"
mv "$URSA_STATE/admin.kubeconfig.tmp" "$URSA_STATE/admin.kubeconfig"

rel=${URSA_STATE#"$PWD"/}
cat <<MSG

Ursa local region is up.
$(printf '  %s\n' "${URSA_SUMMARY[@]}")

  API server:   $(cat "$URSA_STATE/server")   (CA: $rel/ca.crt)
  kubeconfig:   $rel/admin.kubeconfig   (tenant system, user admin, group system:masters)

Use it with kubectl:
  export KUBECONFIG=$URSA_STATE/admin.kubeconfig
  kubectl get tenants

A kubeconfig for a user of a tenant (ursactl reads .ursa/ through URSA_HOME):
  export URSA_HOME=$URSA_STATE
  $ursactl kubeconfig --tenant acme --user alice > acme-alice.kubeconfig

Raw HTTP with the static admin token:
  curl --cacert $rel/ca.crt -H "Authorization: Bearer \$(cut -d, -f1 $rel/tokens.csv)" https://127.0.0.1:7101/api/v1/tenants

Stop everything with ./deploy/local-down.sh (add --purge to delete $rel/).
MSG
