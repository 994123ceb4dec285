#!/usr/bin/env bash
# Installs Ursa for systemd: the built daemons and ursactl, the units of deploy/systemd, the
# HAProxy drop-in with its renderer and template, the example settings and the sysusers entry.
#
#   ./deploy/install.sh --root DIR [--prefix PREFIX] [--build-dir DIR] [--haproxy]
#
#   --root DIR       install under DIR (a staging or test root). `--root /` installs on this
#                    machine, then creates the user ursa (systemd-sysusers) and runs
#                    `systemctl daemon-reload` when systemd runs. Required: nothing is
#                    installed on the running system unless asked this way.
#   --prefix PREFIX  where binaries and shared files go (default /usr/local): PREFIX/bin,
#                    PREFIX/lib/ursa, PREFIX/share/ursa, PREFIX/share/doc/ursa. The units
#                    are rewritten to name PREFIX.
#   --build-dir DIR  the build directory holding the binaries (default build/).
#   --haproxy        also put the drop-in for Debian's haproxy.service in place (front-door
#                    hosts only: it makes that HAProxy serve the region and nothing else).
#                    Without it the drop-in is only copied to PREFIX/share/ursa.
#
# Layout under the root: units (and with --haproxy the drop-in) in /etc/systemd/system,
# /etc/sysusers.d/ursa.conf, the directories /etc/ursa/<kind>/ for the settings files (never
# written: copy PREFIX/share/ursa/env/<kind>.env.example to /etc/ursa/<kind>/<instance>.env).
# Idempotent: a file whose content is already installed is left alone, and the output says
# what changed. No unit is enabled or started.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(dirname "$here")
src=$here/systemd

die() { printf 'install.sh: %s\n' "$*" >&2; exit 1; }
say() { printf '==> %s\n' "$*"; }

root="" prefix=/usr/local build=$repo/build haproxy=0
while [ $# -gt 0 ]; do
	case $1 in
	--root) root=${2:?--root needs a directory}; shift 2 ;;
	--root=*) root=${1#*=}; shift ;;
	--prefix) prefix=${2:?--prefix needs a directory}; shift 2 ;;
	--prefix=*) prefix=${1#*=}; shift ;;
	--build-dir) build=${2:?--build-dir needs a directory}; shift 2 ;;
	--build-dir=*) build=${1#*=}; shift ;;
	--haproxy) haproxy=1; shift ;;
	-h | --help) sed -n '2,23p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) die "unknown argument: $1 (see --help)" ;;
	esac
done
[ -n "$root" ] || die "--root is required (--root / installs on this machine)"
case $prefix in /*) ;; *) die "--prefix must be absolute: $prefix" ;; esac
case $build in /*) ;; *) build=$PWD/$build ;; esac
prefix=${prefix%/}
[ -d "$root" ] || die "--root $root is not a directory"
root=$(cd "$root" && pwd)
# dest PATH: PATH under the root.
dest() {
	if [ "$root" = / ]; then printf '%s' "$1"; else printf '%s%s' "$root" "$1"; fi
}

# name in PREFIX/bin -> path under the build directory
binaries=(
	"ursa-tp-apiserver          src/tenant-partition/ursa-tp-apiserver"
	"ursa-rm-apiserver          src/resource-manager/ursa-rm-apiserver"
	"ursa-tp-controller-manager src/tenant-partition/controllers/ursa-tp-controller-manager"
	"ursa-rm-controller-manager src/resource-manager/controllers/ursa-rm-controller-manager"
	"ursa-scheduler             src/scheduler/ursa-scheduler"
	"ursa-kubelet               src/kubelet/ursa-kubelet"
	"ursa-gateway               src/gateway/ursa-gateway"
	"ursactl                    src/ursactl/ursactl"
)
# kinds of settings files: /etc/ursa/<kind>/
kinds=(etcd tp-apiserver rm-apiserver tp-controller-manager rm-controller-manager scheduler
	kubelet hollow-kubelet gateway haproxy)

changed=0

# put SRC DST MODE [filter]: installs SRC (after an optional sed filter) as DST unless DST
# already has that content and mode. Written beside DST and renamed, so a running binary is
# never overwritten in place.
put() {
	local from=$1 to=$2 mode=$3 filter=${4:-} tmp
	mkdir -p "$(dirname "$to")"
	tmp=$(mktemp "$(dirname "$to")/.install.XXXXXX")
	if [ -n "$filter" ]; then
		sed "$filter" "$from" >"$tmp"
	else
		cat "$from" >"$tmp"
	fi
	chmod "$mode" "$tmp"
	if [ -f "$to" ] && cmp -s "$tmp" "$to" && [ "$(stat -c %a "$to")" = "${mode#0}" ]; then
		rm -f "$tmp"
		return 0
	fi
	mv -f "$tmp" "$to"
	say "installed $to"
	changed=1
}

# Units name /usr/local; another prefix is substituted.
unit_filter=
[ "$prefix" = /usr/local ] || unit_filter="s|/usr/local/|$prefix/|g"

for row in "${binaries[@]}"; do
	read -r name path <<<"$row"
	[ -x "$build/$path" ] || die "$build/$path is missing: build first (cmake --build $build)"
	put "$build/$path" "$(dest "$prefix/bin/$name")" 755
done

for f in "$src"/*.service "$src"/*.target; do
	put "$f" "$(dest "/etc/systemd/system/$(basename "$f")")" 644 "$unit_filter"
done
put "$src/haproxy/haproxy.service.d/ursa.conf" "$(dest "$prefix/share/ursa/haproxy.service.d/ursa.conf")" 644 "$unit_filter"
if [ $haproxy -eq 1 ]; then
	put "$src/haproxy/haproxy.service.d/ursa.conf" "$(dest /etc/systemd/system/haproxy.service.d/ursa.conf)" 644 "$unit_filter"
fi
put "$src/haproxy/ursa-haproxy-config" "$(dest "$prefix/lib/ursa/ursa-haproxy-config")" 755
put "$repo/deploy/haproxy/haproxy.cfg.in" "$(dest "$prefix/share/ursa/haproxy.cfg.in")" 644
put "$src/sysusers.d/ursa.conf" "$(dest /etc/sysusers.d/ursa.conf)" 644
for f in "$src"/env/*.env.example; do
	put "$f" "$(dest "$prefix/share/ursa/env/$(basename "$f")")" 644
done
put "$repo/docs/operations.md" "$(dest "$prefix/share/doc/ursa/operations.md")" 644

if [ "$root" = / ] && command -v systemd-sysusers >/dev/null 2>&1; then
	systemd-sysusers /etc/sysusers.d/ursa.conf
fi
group=root
[ "$root" = / ] && getent group ursa >/dev/null 2>&1 && group=ursa
for d in "${kinds[@]}" pki kubeconfig; do
	d=$(dest "/etc/ursa/$d")
	[ -d "$d" ] && continue # an existing directory keeps its owner and mode
	mkdir -p "$d"
	# Settings and keys: readable by the daemons' group, by no one else.
	chmod 750 "$d"
	[ "$(id -u)" -ne 0 ] || chown "root:$group" "$d"
	say "created $d"
	changed=1
done
if [ "$root" = / ] && [ $changed -eq 1 ] && [ -d /run/systemd/system ]; then
	systemctl daemon-reload
	say "systemctl daemon-reload"
fi
[ $changed -eq 1 ] || say "nothing to do: every file is up to date"
