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
#   cni/net.d/         the CRI plugin's CNI conf_dir
#   cni/bin/           its bin_dir: links to /usr/lib/cni's plugins and to ursa-cni
#   cni/ursa-cni.state, cni/ipam/  ursa-cni's tenant networks (their blocks and containers) and
#                      host-local's leases (one directory per block in use)
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
#   containerd_write_cni DIR NET PREFIX RANGE [LEN [FRONT]]  the CRI plugin's CNI network:
#                                            ursa-cni, a bridge PREFIX-N per tenant with as many
#                                            /LEN blocks of RANGE as its pods need; pods reach
#                                            FRONT (IPV4:PORT) at 10.96.0.1:443
#   containerd_remove_network DIR            deletes its bridges, iptables rules, leases and
#                                            libcni's cache
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
# ursa-cni (src/cni): the build's when there is one, else the host's (installed in /usr/lib/cni).
URSA_CNI_PLUGIN=${URSA_CNI_PLUGIN:-}

# _cni_plugin: prints the ursa-cni binary to use, or nothing.
_cni_plugin() {
	local p
	for p in "$URSA_CNI_PLUGIN" "${URSA_BUILD_DIR:-}/src/cni/ursa-cni" "$URSA_CNI_BIN_DIR/ursa-cni"; do
		[ -n "$p" ] && [ -x "$p" ] && { printf '%s\n' "$(cd "$(dirname "$p")" && pwd)/$(basename "$p")"; return 0; }
	done
	return 0
}

# _cni_bin_dir DIR: DIR/cni/bin, the CRI plugin's bin_dir (containerd 1.6 takes one directory):
# links to the plugins of URSA_CNI_BIN_DIR and to ursa-cni.
_cni_bin_dir() {
	local dir=$1 p u
	mkdir -p "$dir/cni/bin"
	for p in "$URSA_CNI_BIN_DIR"/*; do
		[ -x "$p" ] && [ "$(basename "$p")" != ursa-cni ] && ln -sfn "$p" "$dir/cni/bin/$(basename "$p")"
	done
	u=$(_cni_plugin)
	if [ -n "$u" ]; then ln -sfn "$u" "$dir/cni/bin/ursa-cni"; fi
	return 0
}

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
	_cni_bin_dir "$dir"
	mkdir -p "$dir/root" "$dir/state" "$dir/tmp" "$dir/runc" "$dir/cni/net.d" \
		"$dir/certs.d/docker.io" "$dir/certs.d/$reg"
	# docker.io: the region's registry, and nothing after it unless URSA_DOCKERHUB_FALLBACK=1 (a
	# mirror's usual fallback to Docker Hub fails here, with no network, and its DNS error would
	# hide the registry's answer, e.g. that a tag does not exist)
	if [ "${URSA_DOCKERHUB_FALLBACK:-0}" = 1 ]; then
		_hosts_toml https://registry-1.docker.io "http://$reg" >"$dir/certs.d/docker.io/hosts.toml"
	else
		_hosts_toml "http://$reg" "http://$reg" >"$dir/certs.d/docker.io/hosts.toml"
	fi
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
		    bin_dir = "$dir/cni/bin"
		    conf_dir = "$dir/cni/net.d"

		  [plugins."io.containerd.grpc.v1.cri".registry]
		    config_path = "$dir/certs.d"
	EOF
	printf '%s\n' "$snap" >"$dir/snapshotter"
}

# containerd_write_cni DIR NETWORK PREFIX RANGE [LEN [FRONT]]: the CRI plugin's one network, DIR/cni/net.d/
# 10-NETWORK.conflist: ursa-cni (src/cni), which gives each tenant with pods on the node a
# bridge PREFIX-N (PREFIX starts with ut-; created on the tenant's first pod, deleted after its
# last) and blocks of the node's RANGE, /LEN each (default 26: 61 pods a block): the lowest free
# one with the tenant's first pod, another on the same bridge whenever the tenant's blocks are
# full, each given back when its last pod goes. Addresses come from Debian's bridge and
# host-local plugins (leases under DIR/cni/ipam), each block's gateway on the bridge from
# ursa-cni. A small LEN (/29: 5 pods a block) makes tests outgrow a block with a handful of
# pods. Forwarding between two ut-* bridges is dropped
# (iptables chain URSA-CNI); the node reaches every pod. No masquerade, no port mapping. The
# pods' loopback is containerd's own. With FRONT (IPV4:PORT, the node's front door, e.g.
# 127.0.0.1:6443) pods reach it at 10.96.0.1:443, the front door's service address (ursa-cni's
# DNAT in chain URSA-CNI of the nat table). DIR/cni/network records "ursa-cni NETWORK PREFIX
# RANGE" for containerd_remove_network.
containerd_write_cni() {
	local dir=$1 net=$2 prefix=$3 range=$4 len=${5:-26} front=${6:-} b fd=""
	[[ $prefix =~ ^ut-[a-z0-9-]+$ ]] || die "bridge prefix $prefix must be ut-[a-z0-9-]+"
	for b in bridge host-local loopback; do
		[ -x "$URSA_CNI_BIN_DIR/$b" ] || die "$URSA_CNI_BIN_DIR/$b missing (Debian package containernetworking-plugins)"
	done
	[ -n "$(_cni_plugin)" ] || die "ursa-cni not found (build it, or set URSA_CNI_PLUGIN, or install it in $URSA_CNI_BIN_DIR)"
	command -v iptables >/dev/null || die "iptables missing (ursa-cni keeps tenants' bridges apart with it)"
	if [ -n "$front" ]; then
		[[ $front =~ ^[0-9]+\.[0-9]+\.[0-9]+\.[0-9]+:[0-9]+$ ]] || die "front door $front must be IPV4:PORT"
		fd=$'\n'"      \"frontDoor\": \"$front\","
	fi
	_cni_bin_dir "$dir"
	mkdir -p "$dir/cni/net.d" "$dir/cni/ipam"
	cat >"$dir/cni/net.d/10-$net.conflist" <<-EOF
		{
		  "cniVersion": "0.4.0",
		  "name": "$net",
		  "plugins": [
		    {
		      "type": "ursa-cni",
		      "bridgePrefix": "$prefix",
		      "subnet": "$range",
		      "tenantPrefixLength": $len,
		      "dataDir": "$(cd "$dir" && pwd)/cni",$fd
		      "ipMasq": false,
		      "hairpinMode": true,
		      "capabilities": {"io.kubernetes.cri.pod-annotations": true}
		    }
		  ]
		}
	EOF
	printf 'ursa-cni %s %s %s\n' "$net" "$prefix" "$range" >"$dir/cni/network"
}

# _cni_chain_rules [TABLE]: the rules of chain URSA-CNI ("-A URSA-CNI ...") of TABLE (filter),
# nothing when it does not exist.
_cni_chain_rules() { iptables -w 5 -t "${1:-filter}" -S URSA-CNI 2>/dev/null | grep '^-A URSA-CNI' || true; }

# containerd_remove_network DIR: after containerd_teardown, deletes what DIR's CNI network left
# on the host: its tenant bridges and their iptables rules (and the URSA-CNI chain once no node
# uses it), ursa-cni's state, the address leases and libcni's cached results of its sandboxes
# (/var/lib/cni/results/NETWORK-* and cni-loopback-<sandbox>-lo, written there whatever the
# config says, and left behind when sandboxes are killed rather than stopped through the CRI).
# A network of the single-bridge form ("NETWORK BRIDGE SUBNET") is removed as well.
containerd_remove_network() {
	local dir=$1 kind net prefix range sb br rule
	for sb in "$dir"/root/io.containerd.grpc.v1.cri/sandboxes/* "$dir"/state/io.containerd.grpc.v1.cri/sandboxes/*; do
		[ -e "$sb" ] && rm -f "/var/lib/cni/results/cni-loopback-$(basename "$sb")-lo"
	done
	[ -s "$dir/cni/network" ] || return 0
	read -r kind net prefix range <"$dir/cni/network"
	if [ "$kind" != ursa-cni ]; then # the single-bridge form: NETWORK BRIDGE SUBNET
		range=$prefix prefix=$net net=$kind
		if [ -n "$prefix" ] && ip link show "$prefix" >/dev/null 2>&1; then
			ip link del "$prefix" 2>/dev/null || warn "cannot delete bridge $prefix"
		fi
	elif [[ $prefix =~ ^ut-[a-z0-9-]+$ ]]; then
		for br in /sys/class/net/"$prefix"-*; do
			br=$(basename "$br")
			[[ $br =~ ^$prefix-[0-9]+$ ]] || continue
			ip link del "$br" 2>/dev/null || warn "cannot delete bridge $br"
		done
		if command -v iptables >/dev/null; then
			while IFS= read -r rule; do
				[[ $rule =~ ^-A\ URSA-CNI\ -i\ ($prefix-[0-9]+)\ -o\ ($prefix-[0-9]+)\ -j\ RETURN$ ]] || continue
				iptables -w 5 -D URSA-CNI -i "${BASH_REMATCH[1]}" -o "${BASH_REMATCH[2]}" -j RETURN 2>/dev/null ||
					warn "cannot delete iptables rule $rule"
			done < <(_cni_chain_rules)
			# the last node's network gone: the chain (only its DROP left) and FORWARD's jump to it
			if [ "$(_cni_chain_rules)" = "-A URSA-CNI -j DROP" ]; then
				while iptables -w 5 -D FORWARD -i 'ut-+' -o 'ut-+' -j URSA-CNI 2>/dev/null; do :; done
				iptables -w 5 -F URSA-CNI 2>/dev/null || true
				iptables -w 5 -X URSA-CNI 2>/dev/null || warn "cannot delete iptables chain URSA-CNI"
			fi
			# the front door's DNAT rules of its bridges (nat table), then the chain once empty
			while IFS= read -r rule; do
				[[ $rule =~ ^-A\ URSA-CNI\ .*-i\ $prefix-[0-9]+\  ]] || continue
				# shellcheck disable=SC2086 # the rule's words, no quoting in them
				iptables -w 5 -t nat -D ${rule#-A } 2>/dev/null || warn "cannot delete iptables nat rule $rule"
			done < <(_cni_chain_rules nat)
			if iptables -w 5 -t nat -S URSA-CNI >/dev/null 2>&1 && [ -z "$(_cni_chain_rules nat)" ]; then
				while iptables -w 5 -t nat -D PREROUTING -i 'ut-+' -j URSA-CNI 2>/dev/null; do :; done
				iptables -w 5 -t nat -X URSA-CNI 2>/dev/null || warn "cannot delete iptables nat chain URSA-CNI"
			fi
		fi
	fi
	rm -rf "${dir:?}/cni/ipam"
	rm -f "$dir/cni/ursa-cni.state" "$dir/cni/ursa-cni.state.tmp" "$dir/cni/ursa-cni.lock"
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
