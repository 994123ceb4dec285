# shellcheck shell=bash
# The local region's components: one table row per process, one start_<kind> function per kind.
# Sourced after common.sh. To add a component (a gateway, a second partition, a resource
# manager...), add a row to URSA_COMPONENTS and, for a new kind, a start_<kind> function that
# calls start_daemon and waits for the process to be ready (and, if stopping takes more than
# stopping its daemon, a stop_<kind> function with the same arguments).

# shellcheck source-path=SCRIPTDIR
. "$(dirname "${BASH_SOURCE[0]}")/containerd.sh" # and images.sh

# Rows are started top to bottom and stopped bottom to top. One row is a step, not a process:
# `register` records every partition started above it in the region (.ursa/region.json) with
# `ursactl register`, which writes the tenant partitions into every resource manager's registry,
# the resource managers into every tenant partition, and all of them into the gateways' etcd
# (started above it for that reason). Kubelets find the tenant partitions in
# their resource manager's registry, so they come after it (and follow a tenant partition
# registered later without a restart).
# A tenant partition is the rows named tp-N-*, a zone the rows named rm-ZONE-* and ZONE-*:
# deploy/local-partition.sh and deploy/local-zone.sh stop and start them by these names.
# Real nodes (kind kubelet) run their pods on containerd when they can: a row of kind containerd
# (named ZONE-HOST-containerd, so it belongs to the zone) before the kubelet's starts the node's
# containerd, which pulls from the region's one local registry (row `registry`, before them).
#
# Every port is the number below plus URSA_PORT_OFFSET (default 0), so a second region (a test)
# runs beside the usual one with URSA_STATE=/some/dir URSA_PORT_OFFSET=1000.
#   name               kind            arguments passed to start_<kind> after the name
URSA_PORT_OFFSET=${URSA_PORT_OFFSET:-0}
if ! [[ $URSA_PORT_OFFSET =~ ^[0-9]{1,5}$ ]] || [ "$URSA_PORT_OFFSET" -gt 40000 ]; then
	die "URSA_PORT_OFFSET must be a number from 0 to 40000 (is '$URSA_PORT_OFFSET')"
fi
_o=$URSA_PORT_OFFSET
URSA_REGISTRY_PORT=$((7401 + _o))
URSA_COMPONENTS=(
	"tp-1-etcd         etcd            tp-1 $((23791 + _o)) $((23801 + _o))"
	"tp-1-apiserver    tp_apiserver    tp-1 $((7101 + _o)) http://127.0.0.1:$((23791 + _o))"
	"tp-2-etcd         etcd            tp-2 $((23792 + _o)) $((23802 + _o))"
	"tp-2-apiserver    tp_apiserver    tp-2 $((7102 + _o)) http://127.0.0.1:$((23792 + _o))"
	"rm-az-1-etcd      etcd            rm-az-1 $((23891 + _o)) $((23901 + _o))"
	"rm-az-1-apiserver rm_apiserver    rm-az-1 az-1 $((7201 + _o)) http://127.0.0.1:$((23891 + _o))"
	"rm-az-2-etcd      etcd            rm-az-2 $((23892 + _o)) $((23902 + _o))"
	"rm-az-2-apiserver rm_apiserver    rm-az-2 az-2 $((7202 + _o)) http://127.0.0.1:$((23892 + _o))"
	"gateway-etcd      etcd            gateway $((23991 + _o)) $((24001 + _o))"
	"region            register        http://127.0.0.1:$((23991 + _o))"
	"tp-1-controllers  tp_controller_manager tp-1 $((7101 + _o)) $((10271 + _o))"
	"tp-1-scheduler    scheduler       tp-1 $((7101 + _o)) $((10261 + _o))"
	"tp-2-controllers  tp_controller_manager tp-2 $((7102 + _o)) $((10272 + _o))"
	"tp-2-scheduler    scheduler       tp-2 $((7102 + _o)) $((10262 + _o))"
	"rm-az-1-controllers rm_controller_manager rm-az-1 $((7201 + _o)) $((10281 + _o))"
	"rm-az-2-controllers rm_controller_manager rm-az-2 $((7202 + _o)) $((10282 + _o))"
	"registry          registry        $URSA_REGISTRY_PORT"
	"az-1-host-1-containerd containerd az-1 host-1 1"
	"az-1-host-1       kubelet         az-1 $((7201 + _o)) host-1 $((10251 + _o))"
	"az-1-hollow       hollow_kubelet  az-1 $((7201 + _o)) 3"
	"az-2-host-1-containerd containerd az-2 host-1 2"
	"az-2-host-1       kubelet         az-2 $((7202 + _o)) host-1 $((10252 + _o))"
	"az-2-hollow       hollow_kubelet  az-2 $((7202 + _o)) 3"
	"gateway-1         gateway         1 $((7001 + _o)) http://127.0.0.1:$((23991 + _o))"
	"gateway-2         gateway         2 $((7002 + _o)) http://127.0.0.1:$((23991 + _o))"
	"haproxy           haproxy         $((6443 + _o))"
)
unset _o

URSA_CA=$URSA_STATE/ca.crt
URSA_PKI=$URSA_STATE/pki
URSA_REGION_TOKEN=$URSA_STATE/region.token
URSA_KUBELET_TOKEN=$URSA_STATE/kubelet-client.token
URSACTL=$URSA_BUILD_DIR/src/ursactl/ursactl
URSA_SUMMARY=()    # lines printed by local-up.sh at the end
URSA_PARTITIONS=() # "kind name url [zone]" of every partition started, for `register`
URSA_GATEWAY_BIN=${URSA_GATEWAY_BIN:-$URSA_BUILD_DIR/src/gateway/ursa-gateway}
URSA_GATEWAYS=()   # "host:port" of every gateway started, for haproxy

# The node grace period: how long a node (and a resource manager) may go without a heartbeat
# before it counts as lost, given to the controller managers. local-up.sh takes it from
# URSA_NODE_MONITOR_GRACE_SECONDS (default 50) and records it in .ursa/node-grace, so that
# local-zone.sh and local-partition.sh start the controller managers again with the same flags
# (a different value would also count as changed flags and restart running ones).
record_node_grace() {
	URSA_NODE_MONITOR_GRACE_SECONDS=${URSA_NODE_MONITOR_GRACE_SECONDS:-50}
	printf '%s\n' "$URSA_NODE_MONITOR_GRACE_SECONDS" >"$URSA_STATE/node-grace"
}
use_recorded_node_grace() {
	if [ -z "${URSA_NODE_MONITOR_GRACE_SECONDS:-}" ] && [ -s "$URSA_STATE/node-grace" ]; then
		URSA_NODE_MONITOR_GRACE_SECONDS=$(cat "$URSA_STATE/node-grace")
	fi
}

# stop_rows ROW...: stops the components of these table rows, last first; a component that is not
# running only has its stale pid files removed.
stop_rows() {
	local rows=("$@") i name
	local kind args
	for ((i = ${#rows[@]} - 1; i >= 0; i--)); do
		read -r name kind args <<<"${rows[i]}"
		if declare -F "stop_$kind" >/dev/null; then
			# shellcheck disable=SC2086 # args is a word list by design
			"stop_$kind" "$name" $args
		elif daemon_pid "$name" >/dev/null; then
			stop_daemon "$name"
		else
			say "$name was not running"
			rm -f "$(pidfile "$name")" "$URSA_PIDS/$name.exe" "$URSA_PIDS/$name.sig"
		fi
	done
}


# up_component "ROW": starts the component a table row describes.
up_component() {
	local name kind args
	read -r name kind args <<<"$1"
	# shellcheck disable=SC2086 # args is a word list by design
	"start_$kind" "$name" $args
}

component_names() {
	local row name
	for row in "${URSA_COMPONENTS[@]}"; do
		read -r name _ <<<"$row"
		printf '%s\n' "$name"
	done
}

# start_etcd NAME DIR CLIENT_PORT PEER_PORT: a one-member etcd on loopback with its data in
# .ursa/DIR/etcd and its log in .ursa/DIR/etcd.log.
#
# Compaction: --auto-compaction-mode periodic --auto-compaction-retention 5m keeps about five
# minutes of revision history, the window kube-apiserver keeps by compacting every 5 minutes.
# Watchers may resume from a resourceVersion up to ~5 minutes old; anything older gets 410
# Expired and must relist, which is what clients are built for. Without compaction etcd 3.4
# keeps every revision until the 2 GiB backend quota raises NOSPACE and refuses writes.
# --snapshot-count 10000 (the etcd 3.5 default) bounds the raft log kept in memory.
start_etcd() {
	local name=$1 dir=$2 client=$3 peer=$4
	local data=$URSA_STATE/$dir/etcd log=$URSA_STATE/$dir/etcd.log
	local client_url=http://127.0.0.1:$client peer_url=http://127.0.0.1:$peer
	mkdir -p "$data"
	chmod 700 "$data"
	start_daemon "$name" "$log" etcd \
		--name "$name" \
		--data-dir "$data" \
		--listen-client-urls "$client_url" --advertise-client-urls "$client_url" \
		--listen-peer-urls "$peer_url" --initial-advertise-peer-urls "$peer_url" \
		--initial-cluster "$name=$peer_url" --initial-cluster-state new \
		--initial-cluster-token "ursa-$name" \
		--auto-compaction-mode periodic --auto-compaction-retention 5m \
		--snapshot-count 10000 \
		--logger zap --log-outputs stderr
	wait_http "$client_url/health" 30 "$name" "$log"
	URSA_SUMMARY+=("$name: etcd $client_url (data $data, log $log)")
}

# start_apiserver NAME DIR PORT ETCD_URLS BINARY [FLAG...]: a partition's API server over HTTPS
# with the local CA's server certificate, the static token file and the ursactl signing key. The
# region token and CA let it reach the other partitions and the kubelets (`kubectl logs`).
# URSA_APISERVER_LOG, if set, is the log file instead of .ursa/DIR/apiserver.log (a partition
# with two API servers, bench/run-region.sh).
start_apiserver() {
	local name=$1 dir=$2 port=$3 etcd=$4 bin=$5
	shift 5
	local log=${URSA_APISERVER_LOG:-$URSA_STATE/$dir/apiserver.log} url=https://127.0.0.1:$port
	[ -x "$bin" ] || die "$bin is missing: the build did not produce $(basename "$bin")"
	start_daemon "$name" "$log" "$bin" \
		--listen "127.0.0.1:$port" \
		--etcd-servers "$etcd" --etcd-prefix /registry \
		--tls-cert-file "$URSA_PKI/server.crt" --tls-private-key-file "$URSA_PKI/server.key" \
		--token-auth-file "$URSA_STATE/tokens.csv" \
		--token-signing-public-key "$URSA_STATE/signing-key.pub" \
		--identity-key-file "$URSA_STATE/identity.key" \
		--region-token-file "$URSA_REGION_TOKEN" --region-ca-file "$URSA_CA" \
		--kubelet-token-file "$URSA_KUBELET_TOKEN" \
		--partition-id "$dir" --log-level info "$@"
	wait_http "$url/readyz" 60 "$name" "$log" --cacert "$URSA_CA" \
		-H "Authorization: Bearer $(admin_static_token)"
}

# start_tp_apiserver NAME DIR PORT ETCD_URLS: the API server of tenant partition DIR.
# Its --partition-number is the number ending DIR (tp-2: 2).
start_tp_apiserver() {
	local name=$1 dir=$2 port=$3 etcd=$4 number=${2##*-}
	[[ $number =~ ^[0-9]+$ ]] || number=0
	start_apiserver "$name" "$dir" "$port" "$etcd" "$URSA_BUILD_DIR/src/tenant-partition/ursa-tp-apiserver" \
		--service-account-signing-key-file "$URSA_STATE/signing-key.pem" --partition-number "$number"
	URSA_PARTITIONS+=("tp $dir https://127.0.0.1:$port")
	URSA_SUMMARY+=("$name: tenant partition $dir API server https://127.0.0.1:$port (log $URSA_STATE/$dir/apiserver.log)")
}

# start_rm_apiserver NAME DIR ZONE PORT ETCD_URLS: the API server of resource manager DIR,
# which owns the nodes of ZONE.
start_rm_apiserver() {
	local name=$1 dir=$2 zone=$3 port=$4 etcd=$5
	start_apiserver "$name" "$dir" "$port" "$etcd" "$URSA_BUILD_DIR/src/resource-manager/ursa-rm-apiserver"
	URSA_PARTITIONS+=("rm $dir https://127.0.0.1:$port $zone")
	URSA_SUMMARY+=("$name: resource manager $dir (zone $zone) API server https://127.0.0.1:$port (log $URSA_STATE/$dir/apiserver.log)")
}

# start_register NAME GATEWAY_ETCD: registers every partition started so far with `ursactl
# register` (safe to repeat; it also repairs registries that missed an earlier registration):
# in .ursa/region.json, in the partitions' own registries, and in the gateways' etcd
# (<prefix>/partitions/<id>, followed by every gateway by watch). A failure is a warning: a
# partition recorded in .ursa/region.json that is not running (say, one registered by hand and
# since stopped) must not keep the rest of the region from starting. Tenants need no step: the
# gateways adopt every tenant their partitions already hold.
start_register() {
	local gw=$2 row kind name url zone out
	for row in "${URSA_PARTITIONS[@]}"; do
		read -r kind name url zone <<<"$row"
		if out=$(URSA_HOME=$URSA_STATE "$URSACTL" register --gateway-etcd "$gw" --kind "$kind" --name "$name" \
			--endpoints "$url" ${zone:+--zone "$zone"} 2>&1); then
			say "registered $kind $name ($url${zone:+, zone $zone})"
		else
			warn "ursactl register --kind $kind --name $name: $(printf '%s' "$out" | tr '\n' ' ')"
		fi
	done
	URSA_SUMMARY+=("$1: partitions registered in $URSA_STATE/region.json and the gateways' etcd $gw")
}

# kubelet_kubeconfig ZONE RM_PORT [NODE]: a node's credential against the zone's resource
# manager (tenant system, group system:nodes — a node's role: it reads, and writes only nodes,
# node leases, pod status and a pod's final delete). With NODE: .ursa/ZONE/NODE.kubeconfig, user
# system:node:NODE, which writes only that node, its lease and the pods bound to it. Without:
# .ursa/ZONE/node.kubeconfig, user kubelet-ZONE, for the hollow kubelet that holds many nodes.
# The kubelets use its token and CA for every tenant partition too. Made once. RM_PORT may also
# be the server list itself ("https://127.0.0.1:A,https://127.0.0.1:B", a partition's API servers
# to fail over between; bench/run-region.sh).
kubelet_kubeconfig() {
	local zone=$1 port=$2 node=${3:-}
	local kc=$URSA_STATE/$zone/${node:-node}.kubeconfig user=${node:+system:node:$node}
	local server=https://127.0.0.1:$port
	[[ $port == *://* ]] && server=$port
	if [ ! -s "$kc" ]; then
		mkdir -p "$URSA_STATE/$zone"
		( umask 077; URSA_HOME=$URSA_STATE "$URSACTL" kubeconfig --tenant system \
			--user "${user:-kubelet-$zone}" --groups system:nodes --ttl 0 \
			--server "$server" >"$kc.tmp" )
		mv "$kc.tmp" "$kc"
		rm -f "$URSA_STATE/$zone/kubelet.kubeconfig" # an administrator's, from before node credentials
	fi
	printf '%s\n' "$kc"
}

# --- containerd for the real nodes -----------------------------------------------------------
# URSA_RUNTIME chooses the real nodes' runtime: auto (the default) runs a node on containerd
# (CRI) when containerd can run here (root, a writable cgroup filesystem, the region's registry
# up, containerd starting with its CRI plugin) and ursa-kubelet has the cri runtime, else on the
# process runtime, and says which and why; cri insists (fails instead of falling back); process
# starts neither the registry nor containerd.
URSA_RUNTIME=${URSA_RUNTIME:-auto}
case $URSA_RUNTIME in auto | cri | process) ;; *) die "URSA_RUNTIME must be auto, cri or process (is '$URSA_RUNTIME')" ;; esac
# Where images_build keeps the OCI layout of the images the registry serves.
URSA_IMAGE_CACHE=${URSA_IMAGE_CACHE:-$URSA_STATE/cache/images}
# The pods' addresses: node N (0..15) of the table gets the /20 number N of this /16
# (10.244.16.0/20 for node 1), split in 64 blocks of a /26 (61 pods each); each tenant with pods
# on the node gets a bridge ut-<second octet>-N-<index> of its own and as many blocks as its pods
# there need, given back as they empty (ursa-cni); forwarding between tenants' bridges is
# dropped, the node reaches every pod.
URSA_POD_CIDR=${URSA_POD_CIDR:-10.244.0.0/16}

# cri_blocker: prints why containerd cannot run on this machine, or nothing.
cri_blocker() {
	if [ "$(id -u)" -ne 0 ]; then
		echo "not root"
	elif ! awk '$2 == "/sys/fs/cgroup" && $4 ~ /(^|,)rw(,|$)/ { ok = 1 } END { exit !ok }' /proc/self/mounts; then
		echo "no writable cgroup filesystem at /sys/fs/cgroup"
	elif ! command -v containerd >/dev/null || ! command -v runc >/dev/null; then
		echo "containerd or runc not installed"
	elif [ ! -s "$URSA_STATE/registry/up" ] ||
		! _node_pid "$URSA_STATE/registry/registry.pid" "$(command -v docker-registry || echo /usr/bin/docker-registry)" >/dev/null; then
		echo "the region's image registry is not running"
	fi
}

# node_containerd_dir ZONE HOST: the directory of node ZONE-HOST's containerd.
node_containerd_dir() { printf '%s/%s/%s/containerd\n' "$URSA_STATE" "$1" "$2"; }

# node_cgroup_parent ZONE HOST: the cgroup under which node ZONE-HOST's kubelet puts its pods
# (--cgroup-parent; each pod's cgroup <parent>/pod<uid> carries its pids limit), one per region
# (the pods' /16 tells regions apart) so that regions side by side keep apart.
node_cgroup_parent() {
	local net=${URSA_POD_CIDR%%.0.0/*}
	printf '/ursa-%s/%s-%s\n' "${net//./-}" "$1" "$2"
}

# remove_node_cgroups ZONE HOST: the node's cgroups in every hierarchy, once its containers are
# gone (empty cgroups only: rmdir refuses the others).
remove_node_cgroups() {
	local parent top d
	parent=$(node_cgroup_parent "$1" "$2")
	for top in /sys/fs/cgroup/*"$parent" /sys/fs/cgroup"$parent"; do
		[ -d "$top" ] || continue
		find "$top" -depth -type d -exec rmdir {} + 2>/dev/null || true
		d=$(dirname "$top")
		rmdir "$d" 2>/dev/null || true
	done
}

# kubelet_has_cri: ursa-kubelet was built with the cri runtime (its --help lists --cri-endpoint).
kubelet_has_cri() {
	# grep reads it all (not -q): with pipefail, a kubelet still writing its help after grep -q
	# left would die of SIGPIPE and fail the pipeline
	"$URSA_BUILD_DIR/src/kubelet/ursa-kubelet" --help 2>&1 | grep -- '--cri-endpoint' >/dev/null
}

# start_registry NAME PORT: the region's image registry (docker-registry) on 127.0.0.1:PORT,
# data under .ursa/registry, holding the images of deploy/lib/images.sh (built once into
# URSA_IMAGE_CACHE and pushed on every start; unchanged layers are not copied again). Every
# node's containerd mirrors docker.io to it. Not Debian's docker-registry service (:5000).
start_registry() {
	local name=$1 port=$2 dir=$URSA_STATE/registry
	rm -f "$dir/up"
	[ "$URSA_RUNTIME" = process ] && { say "$name: not started (URSA_RUNTIME=process)"; return 0; }
	if ! ( images_build "$URSA_IMAGE_CACHE" && registry_start "$dir" "$port" &&
		registry_push "$URSA_IMAGE_LAYOUT" "$port" ); then
		[ "$URSA_RUNTIME" = cri ] && die "$name: the image registry did not start (URSA_RUNTIME=cri)"
		warn "$name: the image registry did not start; the real nodes use the process runtime"
		registry_stop "$dir"
		return 0
	fi
	printf '127.0.0.1:%s\n' "$port" >"$dir/up"
	URSA_SUMMARY+=("$name: image registry http://127.0.0.1:$port (${URSA_IMAGES[*]}; data $dir, log $dir/registry.log)")
}

stop_registry() {
	local dir=$URSA_STATE/registry
	[ -d "$dir" ] || return 0
	rm -f "$dir/up"
	registry_stop "$dir"
	say "stopped $1"
}

# start_containerd NAME ZONE HOST INDEX: node ZONE-HOST's containerd (deploy/lib/containerd.sh)
# in .ursa/ZONE/HOST/containerd, pulling through the region's registry, with the CNI network
# of node number INDEX (URSA_POD_CIDR). When it cannot run, the node falls back to the process
# runtime (URSA_RUNTIME=auto) and this says why.
start_containerd() {
	local name=$1 zone=$2 host=$3 idx=$4 dir why prefix bridge subnet
	dir=$(node_containerd_dir "$zone" "$host")
	[ "$URSA_RUNTIME" = process ] && { say "$name: not started (URSA_RUNTIME=process)"; return 0; }
	why=$(cri_blocker)
	if [ -n "$why" ]; then
		[ "$URSA_RUNTIME" = cri ] && die "$name: containerd cannot run: $why (URSA_RUNTIME=cri)"
		warn "$name: containerd cannot run ($why): node $zone-$host falls back to the process runtime"
		return 0
	fi
	[[ $URSA_POD_CIDR =~ ^([0-9]+)\.([0-9]+)\.0\.0/16$ ]] || die "URSA_POD_CIDR must be a /16 like 10.244.0.0/16 (is $URSA_POD_CIDR)"
	prefix=${BASH_REMATCH[1]}.${BASH_REMATCH[2]}
	if [ "$idx" -lt 0 ] || [ "$idx" -gt 15 ]; then die "$name: node number $idx has no /20 in $URSA_POD_CIDR (0..15)"; fi
	bridge=ut-${BASH_REMATCH[2]}-$idx subnet=$prefix.$((idx * 16)).0/20
	mkdir -p "$dir"
	# pods reach the front door (HAProxy) at its service address 10.96.0.1:443 (ursa-cni's DNAT)
	if ! ( containerd_write_cni "$dir" "ursa-${BASH_REMATCH[2]}-$idx" "$bridge" "$subnet" 26 \
		"127.0.0.1:$((6443 + URSA_PORT_OFFSET))" &&
		containerd_write_config "$dir" "${URSA_REGISTRY_PORT:?}" && containerd_start "$dir" ); then
		[ "$URSA_RUNTIME" = cri ] && die "$name: containerd did not start; log: $dir/containerd.log"
		warn "$name: containerd did not start (log: $dir/containerd.log): node $zone-$host falls back to the process runtime"
		containerd_teardown "$dir"
		containerd_remove_network "$dir"
		return 0
	fi
	say "$name: containerd of node $zone-$host up (pid $(cat "$dir/containerd.pid"), snapshotter $(containerd_snapshotter "$dir"), pods $subnet, a bridge $bridge-N and /26 blocks per tenant)"
	URSA_SUMMARY+=("$name: containerd of node $zone-$host, unix://$dir/containerd.sock, pods $subnet, a bridge $bridge-N and /26 blocks per tenant (log $dir/containerd.log)")
}

# containerd_running DIR: DIR's containerd runs.
containerd_running() {
	_node_pid "$1/containerd.pid" "$(command -v containerd || echo /usr/bin/containerd)" >/dev/null
}

# stop_containerd NAME ZONE HOST INDEX: the node's containers and sandboxes killed and deleted,
# its containerd stopped, shims and mounts gone (containerd_teardown), then its bridge deleted.
stop_containerd() {
	local name=$1 dir
	dir=$(node_containerd_dir "$2" "$3")
	[ -d "$dir" ] || { say "$name was not running"; return 0; }
	containerd_running "$dir" || say "$name was not running; cleaning up after it"
	containerd_teardown "$dir"
	containerd_remove_network "$dir"
	remove_node_cgroups "$2" "$3"
	say "stopped $name (containers, shims, mounts, networks and cgroups of node $2-$3 gone)"
}

# start_kubelet NAME ZONE RM_PORT HOST PORT: a real node ZONE-HOST, its state under
# .ursa/ZONE/HOST and its HTTPS server (logs) on 127.0.0.1:PORT. Its pods run on the node's
# containerd (the cri runtime) when that runs and ursa-kubelet has the cri runtime, else as
# local processes (the process runtime); it says which.
start_kubelet() {
	local name=$1 zone=$2 rm=$3 host=$4 port=$5
	local kc root=$URSA_STATE/$zone/$host log=$URSA_STATE/$zone/$host.log cdir runtime=(--runtime process) rt=process
	kc=$(kubelet_kubeconfig "$zone" "$rm" "$zone-$host")
	mkdir -p "$root"
	cdir=$(node_containerd_dir "$zone" "$host")
	if [ "$URSA_RUNTIME" = process ]; then
		say "$name: process runtime (URSA_RUNTIME=process)"
	elif ! containerd_running "$cdir"; then
		[ "$URSA_RUNTIME" = cri ] && die "$name: the node's containerd does not run (URSA_RUNTIME=cri)"
		say "$name: process runtime (the node's containerd does not run; see above)"
	elif ! kubelet_has_cri; then
		[ "$URSA_RUNTIME" = cri ] && die "$name: this ursa-kubelet has no cri runtime (URSA_RUNTIME=cri)"
		say "$name: process runtime (this ursa-kubelet has no cri runtime; containerd runs unused)"
	else
		runtime=(--runtime cri --cri-endpoint "unix://$(containerd_socket "$cdir")"
			--cgroup-parent "$(node_cgroup_parent "$zone" "$host")")
		rt=cri
		say "$name: cri runtime on containerd unix://$(containerd_socket "$cdir")"
	fi
	printf '%s\n' "$rt" >"$root.runtime"
	start_daemon "$name" "$log" "$URSA_BUILD_DIR/src/kubelet/ursa-kubelet" \
		--kubeconfig "$kc" --node-name "$zone-$host" --zone "$zone" --region local \
		"${runtime[@]}" --root-dir "$root" \
		--address 127.0.0.1 --port "$port" \
		--tls-cert-file "$URSA_PKI/kubelet.crt" --tls-private-key-file "$URSA_PKI/kubelet.key" \
		--client-token-file "$URSA_KUBELET_TOKEN" \
		--api-front-door "127.0.0.1:$((6443 + URSA_PORT_OFFSET))" \
		--log-level info
	wait_http "https://127.0.0.1:$port/healthz" 30 "$name" "$log" --cacert "$URSA_CA"
	wait_nodes_ready "$name" "$log" "$rm" "$zone-$host"
	URSA_SUMMARY+=("$name: kubelet of node $zone-$host ($rt runtime), https://127.0.0.1:$port (state $root, log $log)")
}

# start_hollow_kubelet NAME ZONE RM_PORT COUNT: one process simulating COUNT nodes
# ZONE-hollow-0.. (fake runtime: pods become Running without running anything).
start_hollow_kubelet() {
	local name=$1 zone=$2 rm=$3 count=$4
	local kc root=$URSA_STATE/$zone/hollow log=$URSA_STATE/$zone/hollow.log i nodes=()
	kc=$(kubelet_kubeconfig "$zone" "$rm")
	mkdir -p "$root"
	start_daemon "$name" "$log" "$URSA_BUILD_DIR/src/kubelet/ursa-kubelet" \
		--kubeconfig "$kc" --zone "$zone" --region local \
		--hollow-nodes "$count" --hollow-prefix "$zone-hollow" --port 0 \
		--root-dir "$root" --cpu 8 --memory 32Gi --max-pods 110 \
		--log-level info
	for ((i = 0; i < count; i++)); do
		nodes+=("$zone-hollow-$i")
	done
	wait_nodes_ready "$name" "$log" "$rm" "${nodes[@]}"
	URSA_SUMMARY+=("$name: hollow kubelet of nodes $zone-hollow-0..$((count - 1)) (state $root, log $log)")
}

# component_kubeconfig DIR USER PORT: .ursa/DIR/USER.kubeconfig, an admin of tenant system
# (group system:masters) against https://127.0.0.1:PORT, for a control-plane daemon. Made once.
# PORT may also be the server list itself ("https://127.0.0.1:A,https://127.0.0.1:B").
component_kubeconfig() {
	local dir=$1 user=$2 port=$3 kc=$URSA_STATE/$1/$2.kubeconfig server=https://127.0.0.1:$3
	[[ $port == *://* ]] && server=$port
	if [ ! -s "$kc" ]; then
		mkdir -p "$URSA_STATE/$dir"
		( umask 077; URSA_HOME=$URSA_STATE "$URSACTL" kubeconfig --tenant system --user "$user" \
			--groups system:masters --ttl 0 --server "$server" >"$kc.tmp" )
		mv "$kc.tmp" "$kc"
	fi
	printf '%s\n' "$kc"
}

# start_tp_controller_manager NAME PARTITION PORT HEALTH_PORT: the tenant partition's controllers
# (tenant, namespace, replicaset, deployment, garbage collector), leader-elected through a Lease;
# /healthz and /metrics on http://127.0.0.1:HEALTH_PORT; deleted tenants' final backups in
# .ursa/PARTITION/final-backups. Any FLAG... after them is passed on.
start_tp_controller_manager() {
	local name=$1 part=$2 port=$3 health=$4 kc log=$URSA_STATE/$2/controller-manager.log
	shift 4
	kc=$(component_kubeconfig "$part" controller-manager "$port")
	mkdir -p "$URSA_STATE/$part/final-backups"
	start_daemon "$name" "$log" "$URSA_BUILD_DIR/src/tenant-partition/controllers/ursa-tp-controller-manager" \
		--kubeconfig "$kc" --node-monitor-grace-period "${URSA_NODE_MONITOR_GRACE_SECONDS:-50}" \
		--health-listen "127.0.0.1:$health" --root-ca-file "$URSA_CA" \
		--final-backup-dir "$URSA_STATE/$part/final-backups" --backup-key-file "$URSA_STATE/backup.key" \
		--log-level info "$@"
	URSA_SUMMARY+=("$name: controller manager of $part, http://127.0.0.1:$health/healthz (log $log)")
}

# start_scheduler NAME PARTITION PORT HEALTH_PORT: the tenant partition's scheduler
# (leader-elected), placing its pods on the nodes of every resource manager in the partition's
# registry; /healthz and /metrics on http://127.0.0.1:HEALTH_PORT. Any FLAG... after them is
# passed on.
start_scheduler() {
	local name=$1 part=$2 port=$3 health=$4 kc log=$URSA_STATE/$2/scheduler.log
	shift 4
	kc=$(component_kubeconfig "$part" scheduler "$port")
	start_daemon "$name" "$log" "$URSA_BUILD_DIR/src/scheduler/ursa-scheduler" \
		--kubeconfig "$kc" --partition-id "$part" --health-listen "127.0.0.1:$health" --log-level info "$@"
	URSA_SUMMARY+=("$name: scheduler of $part, http://127.0.0.1:$health/metrics (log $log)")
}

# start_rm_controller_manager NAME PARTITION PORT HEALTH_PORT: the resource manager's node
# lifecycle and daemonset controllers; /healthz and /metrics on http://127.0.0.1:HEALTH_PORT.
# URSA_NODE_MONITOR_GRACE_SECONDS (default 50) is how long a node may go without a heartbeat
# before it becomes Ready=Unknown and is tainted. Any FLAG... after the four arguments is passed on.
start_rm_controller_manager() {
	local name=$1 part=$2 port=$3 health=$4 kc log=$URSA_STATE/$2/controller-manager.log
	shift 4
	kc=$(component_kubeconfig "$part" controller-manager "$port")
	start_daemon "$name" "$log" "$URSA_BUILD_DIR/src/resource-manager/controllers/ursa-rm-controller-manager" \
		--kubeconfig "$kc" --node-monitor-grace-period "${URSA_NODE_MONITOR_GRACE_SECONDS:-50}" \
		--health-listen "127.0.0.1:$health" --log-level info "$@"
	URSA_SUMMARY+=("$name: controller manager of $part, node grace ${URSA_NODE_MONITOR_GRACE_SECONDS:-50} s, http://127.0.0.1:$health/healthz (log $log)")
}

# wait_nodes_ready NAME LOG RM_PORT NODE...: waits up to 30 s until the resource manager on
# RM_PORT has every NODE with condition Ready=True.
wait_nodes_ready() {
	local name=$1 log=$2 rm=$3 i
	shift 3
	local want=" $* "
	for ((i = 0; i < 150; i++)); do
		if [ "$(ready_nodes "$rm" "$want")" = "$#" ]; then
			return 0
		fi
		if ! daemon_pid "$name" >/dev/null; then
			tail -n 30 "$log" >&2 || true
			die "$name died before its nodes became Ready; log: $log"
		fi
		sleep 0.2
	done
	tail -n 30 "$log" >&2 || true
	die "$name: nodes $* not Ready in resource manager https://127.0.0.1:$rm within 30s; log: $log"
}

# ready_nodes RM_PORT " NODE NODE ... ": prints how many of the nodes are Ready.
ready_nodes() {
	curl -s --max-time 5 --cacert "$URSA_CA" -H "Authorization: Bearer $(admin_static_token)" \
		"https://127.0.0.1:$1/api/v1/nodes" 2>/dev/null |
		python3 -c '
import json, sys
want = sys.argv[1].split()
try:
    items = json.load(sys.stdin).get("items") or []
except ValueError:
    items = []
ready = 0
for n in items:
    conds = (n.get("status") or {}).get("conditions") or []
    if (n.get("metadata") or {}).get("name") in want and any(
            c.get("type") == "Ready" and c.get("status") == "True" for c in conds):
        ready += 1
print(ready)' "$2"
}

admin_static_token() {
	cut -d, -f1 "$URSA_STATE/tokens.csv"
}

# partition_kubeconfig NAME URL: .ursa/NAME.kubeconfig, an admin of tenant system (group
# system:masters) on the partition at URL, rewritten on every run.
partition_kubeconfig() {
	local out=$URSA_STATE/$1.kubeconfig
	( umask 077; URSA_HOME=$URSA_STATE "$URSACTL" kubeconfig --tenant system --user admin \
		--groups system:masters --ttl 0 --server "$2" >"$out.tmp" )
	mv "$out.tmp" "$out"
}

# write_kubeconfigs: one admin kubeconfig per partition started, and admin.kubeconfig for the
# first tenant partition.
write_kubeconfigs() {
	local row kind name url first_tp=
	for row in "${URSA_PARTITIONS[@]}"; do
		read -r kind name url _ <<<"$row"
		partition_kubeconfig "$name" "$url"
		[ "$kind" = tp ] && [ -z "$first_tp" ] && first_tp=$name
	done
	if [ -n "$first_tp" ]; then
		cp "$URSA_STATE/$first_tp.kubeconfig" "$URSA_STATE/admin.kubeconfig.tmp"
		mv "$URSA_STATE/admin.kubeconfig.tmp" "$URSA_STATE/admin.kubeconfig"
	fi
}

# ensure_identity: CA, server and kubelet certificates, ursactl signing keys, the static admin
# token, the region token, the backup key and the default server URL under .ursa/. Existing files are kept.
ensure_identity() {
	mkdir -p "$URSA_STATE" "$URSA_PKI"
	chmod 700 "$URSA_PKI"
	ensure_ca "$URSA_PKI"
	cp "$URSA_PKI/ca.crt" "$URSA_CA"
	ensure_server_cert "$URSA_PKI" "$URSA_PKI" server "IP:127.0.0.1,DNS:localhost"
	ensure_server_cert "$URSA_PKI" "$URSA_PKI" kubelet "IP:127.0.0.1,DNS:localhost"
	if [ ! -s "$URSA_STATE/signing-key.pem" ] || [ ! -s "$URSA_STATE/signing-key.pub" ]; then
		say "creating token signing keys"
		"$URSACTL" keygen --out-dir "$URSA_STATE"
		if [ ! -s "$URSA_STATE/signing-key.pem" ] || [ ! -s "$URSA_STATE/signing-key.pub" ]; then
			die "ursactl keygen did not write $URSA_STATE/signing-key.pem and .pub"
		fi
	fi
	if [ ! -s "$URSA_STATE/identity.key" ]; then
		# Shared by gateways and partitions: gateways assert callers' identities with it.
		( umask 077; openssl rand -hex 32 >"$URSA_STATE/identity.key" )
	fi
	if [ ! -s "$URSA_STATE/tokens.csv" ]; then
		# A static token for curl and scripts; kubectl uses signed tokens from ursactl.
		( umask 077; printf '%s,admin,admin,"system:masters",system\n' \
			"$(openssl rand -hex 24)" >"$URSA_STATE/tokens.csv" )
	fi
	if [ ! -s "$URSA_KUBELET_TOKEN" ]; then
		# What partitions present to kubelets for pod logs. Every node holds it, so it is a random
		# secret no API server accepts, not the region token.
		( umask 077; openssl rand -hex 32 >"$URSA_KUBELET_TOKEN" )
	fi
	if [ ! -s "$URSA_REGION_TOKEN" ]; then
		# What a partition presents to the other partitions.
		( umask 077; URSA_HOME=$URSA_STATE "$URSACTL" token --tenant system --user region \
			--groups system:masters --ttl 0 >"$URSA_REGION_TOKEN.tmp" )
		mv "$URSA_REGION_TOKEN.tmp" "$URSA_REGION_TOKEN"
	fi
	if [ ! -s "$URSA_STATE/backup.key" ]; then
		# Seals secrets in tenant backups (ursactl backup / restore): base64 of 32 bytes.
		( umask 077; openssl rand -base64 32 >"$URSA_STATE/backup.key" )
	fi
	printf 'https://127.0.0.1:%d\n' $((7101 + URSA_PORT_OFFSET)) >"$URSA_STATE/server"
}

# --- containers of the process runtime ------------------------------------------------------
# Each container of a real node runs under an `ursa-kubelet shim` in a session of its own, so it
# outlives its kubelet (a restarted kubelet takes its containers back). local-down.sh stops them
# after the kubelets: every container whose shim recorded it in
# .ursa/<zone>/<host>/runtime/pods/<uid>/containers/<name>/state.json.

# proc_start PID: the process's start time (field 22 of /proc/PID/stat), or nothing.
proc_start() {
	local stat rest
	stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 0
	rest=${stat##*) } # the command name may hold spaces and parentheses
	# shellcheck disable=SC2086 # split into fields on purpose
	set -- $rest
	printf '%s\n' "${20}"
}

# stop_containers: TERM to the process group of every recorded container still running (the
# same PID and start time as in state.json, so a reused PID is never hit); its shim then
# records the exit and ends. Whatever still runs after 10 s gets KILL, shims included.
stop_containers() {
	local f pid pstart spid sstart i alive groups=() shims=()
	shopt -s nullglob
	for f in "$URSA_STATE"/*/*/runtime/pods/*/containers/*/state.json; do
		read -r pid pstart spid sstart < <(python3 -c '
import json, sys
try:
    d = json.load(open(sys.argv[1]))
except (OSError, ValueError):
    d = {}
print(*(int(d.get(k) or 0) for k in ("pid", "pidStart", "shimPid", "shimStart")))' "$f")
		if [ "$pid" -gt 1 ] && [ "$(proc_start "$pid")" = "$pstart" ]; then
			kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || true
			groups+=("$pid:$pstart")
		fi
		if [ "$spid" -gt 1 ] && [ "$(proc_start "$spid")" = "$sstart" ]; then
			shims+=("$spid:$sstart")
		fi
	done
	[ ${#groups[@]} -eq 0 ] && [ ${#shims[@]} -eq 0 ] && return 0
	for ((i = 0; i < 100; i++)); do
		alive=0
		for f in "${groups[@]}" "${shims[@]}"; do
			[ "$(proc_start "${f%%:*}")" = "${f#*:}" ] && alive=1 && break
		done
		[ $alive -eq 0 ] && break
		sleep 0.1
	done
	for f in "${groups[@]}"; do
		if [ "$(proc_start "${f%%:*}")" = "${f#*:}" ]; then
			warn "container process ${f%%:*} did not stop in 10 s; sending KILL"
			kill -KILL -- "-${f%%:*}" 2>/dev/null || kill -KILL "${f%%:*}" 2>/dev/null || true
		fi
	done
	for f in "${shims[@]}"; do
		if [ "$(proc_start "${f%%:*}")" = "${f#*:}" ]; then
			kill -KILL "${f%%:*}" 2>/dev/null || true
		fi
	done
	say "stopped ${#groups[@]} container(s) of the process runtime"
}

# --- the gateway tier -------------------------------------------------------------------------

# start_gateway NAME INDEX PORT ETCD_URL: gateway INDEX on https://127.0.0.1:PORT (state and
# audit log under .ursa/gateway-INDEX).
start_gateway() {
	local name=$1 idx=$2 port=$3 etcd=$4 dir=$URSA_STATE/gateway-$2
	local log=$dir/gateway.log
	mkdir -p "$dir"
	start_daemon "$name" "$log" "$URSA_GATEWAY_BIN" \
		--listen "127.0.0.1:$port" --etcd-servers "$etcd" \
		--tls-cert-file "$URSA_PKI/server.crt" --tls-private-key-file "$URSA_PKI/server.key" \
		--token-auth-file "$URSA_STATE/tokens.csv" \
		--token-signing-public-key "$URSA_STATE/signing-key.pub" \
		--partition-ca-file "$URSA_CA" --partition-token-file "$URSA_REGION_TOKEN" \
		--identity-key-file "$URSA_STATE/identity.key" \
		--audit-log-path "$dir/audit.log" --log-level info
	wait_http "https://127.0.0.1:$port/readyz" 30 "$name" "$log" --cacert "$URSA_CA"
	URSA_GATEWAYS+=("127.0.0.1:$port")
	URSA_SUMMARY+=("$name: gateway https://127.0.0.1:$port (log $log, audit $dir/audit.log)")
}

# start_haproxy NAME PORT: HAProxy on https://127.0.0.1:PORT (certificate for 127.0.0.1 from
# the region CA) balancing over every gateway started above, from deploy/haproxy/haproxy.cfg.in.
start_haproxy() {
	local name=$1 port=$2 dir=$URSA_STATE/haproxy servers="" g i=0
	local bin=${URSA_HAPROXY_BIN:-/usr/sbin/haproxy}
	[ -x "$bin" ] || die "$bin is missing (Debian package haproxy)"
	[ ${#URSA_GATEWAYS[@]} -gt 0 ] || die "$name: no gateway was started before it"
	mkdir -p "$dir"
	# 10.96.0.1 and kubernetes.default.svc: the front door as CRI pods reach it (ursa-cni's DNAT of
	# the `kubernetes` service address), verified against the ca.crt of their service account
	ensure_server_cert "$URSA_PKI" "$URSA_PKI" haproxy \
		"IP:127.0.0.1,DNS:localhost,IP:10.96.0.1,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc"
	( umask 077; cat "$URSA_PKI/haproxy.crt" "$URSA_PKI/haproxy.key" >"$dir/haproxy.pem" )
	for g in "${URSA_GATEWAYS[@]}"; do
		i=$((i + 1))
		servers+=$'\t'"server gateway-$i $g"$'\n'
	done
	python3 - "$URSA_ROOT/deploy/haproxy/haproxy.cfg.in" "$dir/haproxy.cfg" "$URSA_STATE" "$port" "$URSA_CA" "$servers" <<-'PY'
		import sys
		src, dst, state, port, ca, servers = sys.argv[1:]
		text = open(src).read().replace("@STATE@", state).replace("@PORT@", port).replace("@CA@", ca)
		open(dst + ".tmp", "w").write(text.replace("@SERVERS@\n", servers))
	PY
	"$bin" -c -q -f "$dir/haproxy.cfg.tmp" || die "$name: haproxy rejects $dir/haproxy.cfg.tmp"
	mv "$dir/haproxy.cfg.tmp" "$dir/haproxy.cfg"
	start_daemon "$name" "$dir/haproxy.log" "$bin" -db -f "$dir/haproxy.cfg"
	wait_http "https://127.0.0.1:$port/healthz" 30 "$name" "$dir/haproxy.log" --cacert "$URSA_CA"
	partition_kubeconfig gateway "https://127.0.0.1:$port"
	URSA_SUMMARY+=("$name: HAProxy https://127.0.0.1:$port over ${URSA_GATEWAYS[*]} (kubeconfig $URSA_STATE/gateway.kubeconfig, log $dir/haproxy.log)")
}

# use_gateway_kubeconfig: once HAProxy is up (.ursa/gateway.kubeconfig written by
# start_haproxy), admin.kubeconfig and .ursa/server point at https://127.0.0.1:6443.
use_gateway_kubeconfig() {
	local kc=$URSA_STATE/gateway.kubeconfig
	[ -s "$kc" ] && daemon_pid haproxy >/dev/null || return 0
	cp "$kc" "$URSA_STATE/admin.kubeconfig.tmp"
	mv "$URSA_STATE/admin.kubeconfig.tmp" "$URSA_STATE/admin.kubeconfig"
	printf 'https://127.0.0.1:%d\n' $((6443 + URSA_PORT_OFFSET)) >"$URSA_STATE/server"
}
