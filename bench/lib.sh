# shellcheck shell=bash
# Shared by the bench/run-*.sh scripts (sourced after they define die, LOAD and ETCD_BIN).

# bench_tmp PREFIX: a temporary directory $TMP, removed on exit together with every process
# whose PID is in PIDS (and RUN_PID, the step running now).
bench_tmp() {
	TMP=$(mktemp -d "/tmp/$1.XXXXXX")
	PIDS=()
	RUN_PID=""
	trap bench_cleanup EXIT
	trap 'exit 130' INT TERM
}

bench_cleanup() {
	local pid
	for pid in $RUN_PID "${PIDS[@]}"; do
		kill "$pid" 2>/dev/null || true
	done
	for pid in "${PIDS[@]}"; do
		wait "$pid" 2>/dev/null || true
	done
	rm -rf "$TMP"
}

# start_etcd DIR NAME: a one-member etcd on free loopback ports, data in DIR/etcd and log in
# DIR/etcd.log; sets ETCD_PID, ETCD_URL and ETCD_METRICS and waits until it is healthy.
start_etcd() {
	local dir=$1 name=$2 ports c p m i
	mkdir -p "$dir"
	ports=$("$LOAD" free-port --count 3)
	c=$(sed -n 1p <<<"$ports"); p=$(sed -n 2p <<<"$ports"); m=$(sed -n 3p <<<"$ports")
	"$ETCD_BIN" --name "$name" --data-dir "$dir/etcd" \
		--listen-client-urls "http://127.0.0.1:$c" --advertise-client-urls "http://127.0.0.1:$c" \
		--listen-peer-urls "http://127.0.0.1:$p" --initial-advertise-peer-urls "http://127.0.0.1:$p" \
		--initial-cluster "$name=http://127.0.0.1:$p" --listen-metrics-urls "http://127.0.0.1:$m" \
		--quota-backend-bytes 8589934592 >"$dir/etcd.log" 2>&1 &
	ETCD_PID=$!
	PIDS+=("$ETCD_PID")
	ETCD_URL="http://127.0.0.1:$c"
	ETCD_METRICS="http://127.0.0.1:$m"
	for i in $(seq 100); do
		"$LOAD" request --server "$ETCD_URL" --path /health --expect 200 >/dev/null 2>&1 && return 0
		kill -0 "$ETCD_PID" 2>/dev/null || break
		sleep 0.2
	done
	tail -20 "$dir/etcd.log" >&2
	die "etcd $name did not become healthy"
}
