# shellcheck shell=bash
# containerd (Debian's 1.6, with its CRI plugin) for one node, run as a plain process with its
# own config, root, state, socket and runc root under one directory, never the system defaults,
# so several nodes (and tests) run side by side. Sourced, never executed; callers run under
# `set -euo pipefail`. Sources images.sh (and common.sh) if the caller has not.
#
# DIR holds:
#   config.toml        containerd's config (version 2)        containerd.sock  the gRPC socket
#   root/ state/ tmp/  containerd's root, state and temp dirs  containerd.log   its output
#   runc/<namespace>/  runc's state (the runc options' Root)   containerd.pid   its PID
#   certs.d/<host>/hosts.toml  registry hosts (CRI config_path; `ctr --hosts-dir` reads it too)
#   cni/net.d/         the CRI plugin's CNI conf_dir (bin_dir is /usr/lib/cni)
#
# Functions:
#   containerd_detect_snapshotter DIR        prints overlayfs if an overlay mount with two lower
#                                            dirs works in DIR (same filesystem as root/), else native
#   containerd_write_config DIR PORT [SNAP]  writes the files above; images come from the local
#                                            registry on 127.0.0.1:PORT (docker.io mirrored to it,
#                                            sandbox_image 127.0.0.1:PORT/library/pause:3.9)
#   containerd_start DIR                     starts containerd, waits for its socket and CRI
#   containerd_stop DIR                      TERM (KILL after 10 s) containerd only: shims and
#                                            containers keep running, as on a containerd restart
#   containerd_teardown DIR                  kills and deletes every task, stops containerd, kills
#                                            what is left (runc containers, shims) and unmounts
#                                            everything under DIR
#   containerd_leftovers DIR                 prints processes and mounts of DIR still alive
#   containerd_ctr DIR ARGS...               ctr against DIR's socket
#   containerd_write_cni DIR NET BRIDGE SUBNET  the CRI plugin's CNI network (bridge, host-local)
#   containerd_remove_network DIR            deletes its bridge, leases and libcni's cache
#
# What outlives containerd, and why teardown is needed: each container (and each CRI pod
# sandbox) has a containerd-shim-runc-v2 process in its own session, reparented to PID 1,
# holding the container's rootfs mount (and for CRI the sandbox's /dev/shm and network
# namespace mounts under state/). Stopping containerd leaves them all running by design;
# they end only when their tasks are deleted. containerd 1.6 also puts each shim's socket
# under /run/containerd/s/ (a hash of DIR's socket, namespace and id; not configurable).

if ! declare -F images_build >/dev/null; then
	# shellcheck source-path=SCRIPTDIR
	source "$(dirname "${BASH_SOURCE[0]}")/images.sh"
fi

URSA_CNI_BIN_DIR=${URSA_CNI_BIN_DIR:-/usr/lib/cni}

containerd_socket() { printf '%s/containerd.sock\n' "$1"; }
containerd_runc_root() { printf '%s/runc\n' "$1"; }

containerd_ctr() {
	local dir=$1
	shift
	ctr --address "$dir/containerd.sock" "$@"
}

# containerd_detect_snapshotter DIR: overlayfs needs root, a kernel with overlay, and a backing
# filesystem that can be an upper dir (not overlayfs itself); containerd's snapshotter mounts
# several lower dirs at once, so that is what is tried.
containerd_detect_snapshotter() {
	local dir=$1 t ok=0
	mkdir -p "$dir"
	if [ "$(id -u)" -eq 0 ] && { grep -qw overlay /proc/filesystems 2>/dev/null || modprobe -q overlay 2>/dev/null; }; then
		t=$(mktemp -d "$dir/.overlay-test.XXXXXX")
		mkdir -p "$t/l1" "$t/l2" "$t/u" "$t/w" "$t/m"
		echo a >"$t/l1/a"
		if mount -t overlay overlay -o "lowerdir=$t/l2:$t/l1,upperdir=$t/u,workdir=$t/w" "$t/m" 2>/dev/null; then
			[ "$(cat "$t/m/a" 2>/dev/null)" = a ] && echo b >"$t/m/b" 2>/dev/null && ok=1
			umount "$t/m" 2>/dev/null || umount -l "$t/m" 2>/dev/null || true
		fi
		rm -rf "$t"
	fi
	if [ $ok -eq 1 ]; then echo overlayfs; else echo native; fi
}

# _hosts_toml SERVER MIRROR: a certs.d hosts.toml sending pulls for SERVER to MIRROR first.
_hosts_toml() {
	cat <<-EOF
		# Written by deploy/lib/containerd.sh.
		server = "$1"

		[host."$2"]
		  capabilities = ["pull", "resolve"]
	EOF
}

# containerd_write_config DIR PORT [SNAPSHOTTER]
containerd_write_config() {
	local dir=$1 port=$2 snap=${3:-} reg
	mkdir -p "$dir"
	dir=$(cd "$dir" && pwd)
	[ ${#dir} -le 80 ] || die "$dir is too long for containerd's sockets (unix socket paths are limited to 107 bytes)"
	[ -n "$snap" ] || snap=$(containerd_detect_snapshotter "$dir")
	reg=127.0.0.1:$port
	mkdir -p "$dir/root" "$dir/state" "$dir/tmp" "$dir/runc" "$dir/cni/net.d" \
		"$dir/certs.d/docker.io" "$dir/certs.d/$reg"
	_hosts_toml https://registry-1.docker.io "http://$reg" >"$dir/certs.d/docker.io/hosts.toml"
	_hosts_toml "http://$reg" "http://$reg" >"$dir/certs.d/$reg/hosts.toml"
	cat >"$dir/config.toml" <<-EOF
		# Written by deploy/lib/containerd.sh: containerd for one Ursa node, nothing in system paths.
		version = 2
		root = "$dir/root"
		state = "$dir/state"
		temp = "$dir/tmp"
		# Not needed here; the opt plugin would also create /opt/containerd. (The v1 runtime
		# io.containerd.runtime.v1.linux stays: 1.6's tasks service, hence CRI, requires it.)
		disabled_plugins = [
		  "io.containerd.snapshotter.v1.aufs",
		  "io.containerd.snapshotter.v1.btrfs",
		  "io.containerd.snapshotter.v1.zfs",
		  "io.containerd.snapshotter.v1.devmapper",
		  "io.containerd.internal.v1.opt",
		  "io.containerd.internal.v1.tracing",
		  "io.containerd.tracing.processor.v1.otlp",
		]
		# containerd exits at start when the CRI plugin cannot load, rather than run without it.
		required_plugins = ["io.containerd.grpc.v1.cri"]

		[grpc]
		  address = "$dir/containerd.sock"

		[ttrpc]
		  address = "$dir/containerd.sock.ttrpc"

		[debug]
		  address = ""
		  level = "info"

		[metrics]
		  address = ""

		[plugins."io.containerd.grpc.v1.cri"]
		  sandbox_image = "$reg/library/pause:3.9"
		  # Without CAP_SYS_RESOURCE (containers, some VMs) runc cannot give the sandbox
		  # oom_score_adj -998; this keeps every score at or above containerd's own.
		  restrict_oom_score_adj = true
		  disable_tcp_service = true
		  stream_server_address = "127.0.0.1"
		  stream_server_port = "0"
		  systemd_cgroup = false
		  # network namespaces under state/ rather than /var/run/netns
		  netns_mounts_under_state_dir = true

		  [plugins."io.containerd.grpc.v1.cri".containerd]
		    snapshotter = "$snap"
		    default_runtime_name = "runc"

		    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
		      runtime_type = "io.containerd.runc.v2"

		      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
		        SystemdCgroup = false
		        Root = "$dir/runc"

		  [plugins."io.containerd.grpc.v1.cri".cni]
		    bin_dir = "$URSA_CNI_BIN_DIR"
		    conf_dir = "$dir/cni/net.d"

		  [plugins."io.containerd.grpc.v1.cri".registry]
		    config_path = "$dir/certs.d"
	EOF
	printf '%s\n' "$snap" >"$dir/snapshotter"
}

# containerd_write_cni DIR NETWORK BRIDGE SUBNET: the CRI plugin's network, DIR/cni/net.d/
# 10-NETWORK.conflist: a bridge BRIDGE (created on the first pod; the gateway, SUBNET's first
# address, on it) and host-local addresses from SUBNET, leases under DIR/cni/ipam. No masquerade
# and no port mapping, so no iptables rules. The pods' loopback is containerd's: its CRI
# plugin runs the loopback plugin from bin_dir for every sandbox. DIR/cni/network records
# "NETWORK BRIDGE SUBNET" for containerd_remove_network.
containerd_write_cni() {
	local dir=$1 net=$2 bridge=$3 subnet=$4 b
	[ ${#bridge} -le 15 ] || die "bridge name $bridge is longer than 15 characters"
	for b in bridge host-local loopback; do
		[ -x "$URSA_CNI_BIN_DIR/$b" ] || die "$URSA_CNI_BIN_DIR/$b missing (Debian package containernetworking-plugins)"
	done
	mkdir -p "$dir/cni/net.d" "$dir/cni/ipam"
	cat >"$dir/cni/net.d/10-$net.conflist" <<-EOF
		{
		  "cniVersion": "0.4.0",
		  "name": "$net",
		  "plugins": [
		    {
		      "type": "bridge",
		      "bridge": "$bridge",
		      "isGateway": true,
		      "ipMasq": false,
		      "hairpinMode": true,
		      "ipam": {
		        "type": "host-local",
		        "ranges": [[{"subnet": "$subnet"}]],
		        "routes": [{"dst": "0.0.0.0/0"}],
		        "dataDir": "$dir/cni/ipam"
		      }
		    }
		  ]
		}
	EOF
	printf '%s %s %s\n' "$net" "$bridge" "$subnet" >"$dir/cni/network"
}

# containerd_remove_network DIR: after containerd_teardown, deletes what DIR's CNI network left
# on the host: its bridge, the address leases and libcni's cached results of its sandboxes
# (/var/lib/cni/results/NETWORK-* and cni-loopback-<sandbox>-lo, written there whatever the
# config says, and left behind when sandboxes are killed rather than stopped through the CRI).
containerd_remove_network() {
	local dir=$1 net bridge subnet sb
	for sb in "$dir"/root/io.containerd.grpc.v1.cri/sandboxes/* "$dir"/state/io.containerd.grpc.v1.cri/sandboxes/*; do
		[ -e "$sb" ] && rm -f "/var/lib/cni/results/cni-loopback-$(basename "$sb")-lo"
	done
	[ -s "$dir/cni/network" ] || return 0
	read -r net bridge subnet <"$dir/cni/network"
	if [ -n "$bridge" ] && ip link show "$bridge" >/dev/null 2>&1; then
		ip link del "$bridge" 2>/dev/null || warn "cannot delete bridge $bridge"
	fi
	rm -rf "${dir:?}/cni/ipam"
	[ -n "$net" ] && rm -f "/var/lib/cni/results/$net-"*
	return 0
}

# containerd_snapshotter DIR: the snapshotter DIR's config uses.
containerd_snapshotter() { cat "$1/snapshotter"; }

# containerd_start DIR: starts containerd with DIR/config.toml (written before) and waits up to
# 30 s until it answers on its socket with the CRI plugin loaded.
containerd_start() {
	local dir=$1 exe pid deadline
	_images_need containerd ctr runc containerd-shim-runc-v2
	[ -f "$dir/config.toml" ] || die "$dir/config.toml missing (containerd_write_config first)"
	exe=$(command -v containerd)
	if pid=$(_node_pid "$dir/containerd.pid" "$exe"); then
		say "containerd of $dir already running (pid $pid)"
	else
		if [ -S "$dir/containerd.sock" ] && containerd_ctr "$dir" --timeout 2s version >/dev/null 2>&1; then
			die "another containerd serves $dir/containerd.sock (not the one in $dir/containerd.pid)"
		fi
		_node_spawn "$dir/containerd.pid" "$dir/containerd.log" "$exe" --config "$dir/config.toml"
		pid=$(cat "$dir/containerd.pid")
	fi
	deadline=$((SECONDS + 30))
	while [ $SECONDS -lt $deadline ]; do
		if [ -S "$dir/containerd.sock" ] &&
			containerd_ctr "$dir" --timeout 2s plugins ls 2>/dev/null |
			grep -Eq '^io\.containerd\.grpc\.v1[[:space:]]+cri[[:space:]].*[[:space:]]ok[[:space:]]*$'; then
			return 0
		fi
		if ! kill -0 "$pid" 2>/dev/null; then
			tail -n 20 "$dir/containerd.log" >&2 || true
			die "containerd exited; log: $dir/containerd.log"
		fi
		sleep 0.2
	done
	tail -n 20 "$dir/containerd.log" >&2 || true
	die "containerd of $dir did not become ready in 30 s; log: $dir/containerd.log"
}

containerd_stop() {
	local dir=$1
	_node_stop "$dir/containerd.pid" "$(command -v containerd || echo /usr/bin/containerd)" containerd
}

# _containerd_shims DIR: PIDs of the containerd-shim-runc-v2 processes serving DIR's socket.
_containerd_shims() {
	local sock re
	sock=$1/containerd.sock
	re=$(printf '%s' "$sock" | sed 's/[][\\.*^$+?(){}|]/\\&/g')
	pgrep -f -- "containerd-shim-runc-v2 .*-address $re( |\$)" || true
}

# _containerd_mounts DIR: mount points at or under DIR, deepest first.
_containerd_mounts() {
	local dir=$1
	awk -v d="$dir" '{ m = $5; gsub(/\\040/, " ", m); if (m == d || index(m, d "/") == 1) print m }' \
		/proc/self/mountinfo | awk '{ print length($0) "\t" $0 }' | sort -rn | cut -f2-
}

# containerd_leftovers DIR: one line per process (shim or runc container) or mount of DIR that
# is still there; prints nothing when the node is clean.
containerd_leftovers() {
	local dir=$1 p ns id state
	for p in $(_containerd_shims "$dir"); do
		printf 'process %s: %s\n' "$p" "$(tr '\0' ' ' 2>/dev/null <"/proc/$p/cmdline")"
	done
	for ns in "$dir"/runc/*/; do
		[ -d "$ns" ] || continue
		for state in "$ns"*/state.json; do
			[ -f "$state" ] || continue
			id=$(basename "$(dirname "$state")")
			printf 'runc container %s in %s\n' "$id" "$ns"
		done
	done
	_containerd_mounts "$dir" | sed 's/^/mount /'
}

# containerd_teardown DIR: nothing of DIR keeps running or mounted afterwards.
containerd_teardown() {
	local dir=$1 ns id p m i
	dir=$(cd "$dir" 2>/dev/null && pwd) || return 0
	if _node_pid "$dir/containerd.pid" "$(command -v containerd || echo /usr/bin/containerd)" >/dev/null; then
		for ns in $(containerd_ctr "$dir" --timeout 5s namespaces ls -q 2>/dev/null || true); do
			for id in $(containerd_ctr "$dir" --timeout 5s -n "$ns" tasks ls -q 2>/dev/null || true); do
				containerd_ctr "$dir" --timeout 10s -n "$ns" tasks kill -a -s SIGKILL "$id" >/dev/null 2>&1 || true
			done
			for id in $(containerd_ctr "$dir" --timeout 5s -n "$ns" tasks ls -q 2>/dev/null || true); do
				for ((i = 0; i < 50; i++)); do
					containerd_ctr "$dir" --timeout 10s -n "$ns" tasks delete -f "$id" >/dev/null 2>&1 && break
					sleep 0.1
				done
			done
		done
	fi
	containerd_stop "$dir"
	# containerd was gone or did not clean up: runc kills and deletes what it still knows about.
	if [ -d "$dir/runc" ] && command -v runc >/dev/null; then
		for ns in "$dir"/runc/*/; do
			[ -d "$ns" ] || continue
			for id in $(runc --root "$ns" list -q 2>/dev/null || true); do
				runc --root "$ns" kill --all "$id" KILL >/dev/null 2>&1 || true
				runc --root "$ns" delete -f "$id" >/dev/null 2>&1 || true
			done
		done
	fi
	for p in $(_containerd_shims "$dir"); do
		kill -KILL "$p" 2>/dev/null || true
	done
	for ((i = 0; i < 50; i++)); do
		[ -z "$(_containerd_shims "$dir")" ] && break
		sleep 0.1
	done
	while IFS= read -r m; do
		[ -n "$m" ] || continue
		umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || warn "cannot unmount $m"
	done < <(_containerd_mounts "$dir")
}
