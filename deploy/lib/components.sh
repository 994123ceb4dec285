# shellcheck shell=bash
# The local region's components: one table row per process, one start_<kind> function per kind.
# Sourced after common.sh. To add a component (a gateway, a second partition, a resource
# manager...), add a row to URSA_COMPONENTS and, for a new kind, a start_<kind> function that
# calls start_daemon and waits for the process to be ready.

# Rows are started top to bottom and stopped bottom to top.
#   name             kind           arguments passed to start_<kind> after the name
URSA_COMPONENTS=(
	"tp-1-etcd        etcd           tp-1 23791 23801"
	"tp-1-apiserver   tp_apiserver   tp-1 7101 http://127.0.0.1:23791"
)

URSA_CA=$URSA_STATE/ca.crt
URSA_PKI=$URSA_STATE/pki
URSA_SUMMARY=() # lines printed by local-up.sh at the end

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

# start_tp_apiserver NAME DIR PORT ETCD_URLS: the tenant partition's API server over HTTPS
# with the local CA's server certificate, the static token file and the ursactl signing key.
start_tp_apiserver() {
	local name=$1 dir=$2 port=$3 etcd=$4
	local log=$URSA_STATE/$dir/apiserver.log url=https://127.0.0.1:$port
	local bin=$URSA_BUILD_DIR/src/tenant-partition/ursa-tp-apiserver
	[ -x "$bin" ] || die "$bin is missing: the build did not produce ursa-tp-apiserver"
	start_daemon "$name" "$log" "$bin" \
		--listen "127.0.0.1:$port" \
		--etcd-servers "$etcd" --etcd-prefix /registry \
		--tls-cert-file "$URSA_PKI/server.crt" --tls-private-key-file "$URSA_PKI/server.key" \
		--token-auth-file "$URSA_STATE/tokens.csv" \
		--token-signing-public-key "$URSA_STATE/signing-key.pub" \
		--partition-id "$dir" --log-level info
	wait_http "$url/readyz" 60 "$name" "$log" --cacert "$URSA_CA" \
		-H "Authorization: Bearer $(admin_static_token)"
	URSA_SUMMARY+=("$name: tenant partition $dir API server $url (log $log)")
}

admin_static_token() {
	cut -d, -f1 "$URSA_STATE/tokens.csv"
}

# ensure_identity: CA, server certificate, ursactl signing keys, the static admin token and
# the default server URL under .ursa/. Existing files are kept.
ensure_identity() {
	local ursactl=$1
	mkdir -p "$URSA_STATE" "$URSA_PKI"
	chmod 700 "$URSA_PKI"
	ensure_ca "$URSA_PKI"
	cp "$URSA_PKI/ca.crt" "$URSA_CA"
	ensure_server_cert "$URSA_PKI" "$URSA_PKI" server "IP:127.0.0.1,DNS:localhost"
	if [ ! -s "$URSA_STATE/signing-key.pem" ] || [ ! -s "$URSA_STATE/signing-key.pub" ]; then
		say "creating token signing keys"
		"$ursactl" keygen --out-dir "$URSA_STATE"
		if [ ! -s "$URSA_STATE/signing-key.pem" ] || [ ! -s "$URSA_STATE/signing-key.pub" ]; then
			die "ursactl keygen did not write $URSA_STATE/signing-key.pem and .pub"
		fi
	fi
	if [ ! -s "$URSA_STATE/tokens.csv" ]; then
		# A static token for curl and scripts; kubectl uses signed tokens from ursactl.
		( umask 077; printf '%s,admin,admin,"system:masters",system\n' \
			"$(openssl rand -hex 24)" >"$URSA_STATE/tokens.csv" )
	fi
	printf 'https://127.0.0.1:7101\n' >"$URSA_STATE/server"
}
