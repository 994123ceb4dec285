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

# make_pki: a CA and a server certificate for 127.0.0.1 in $TMP/pki (ca.crt, server.crt,
# server.key, and haproxy.pem for HAProxy), the recipe of deploy/lib/common.sh.
make_pki() {
	local d=$TMP/pki
	mkdir -p "$d"
	openssl genrsa -out "$d/ca.key" 2048 2>/dev/null
	openssl req -x509 -new -key "$d/ca.key" -sha256 -days 2 -subj "/CN=ursa-bench-ca" \
		-addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" \
		-addext "subjectKeyIdentifier=hash" -out "$d/ca.crt" 2>/dev/null
	cat >"$d/ext" <<-EOF
		basicConstraints=critical,CA:FALSE
		keyUsage=critical,digitalSignature
		extendedKeyUsage=serverAuth,clientAuth
		subjectKeyIdentifier=hash
		authorityKeyIdentifier=keyid,issuer
		subjectAltName=IP:127.0.0.1,DNS:localhost
	EOF
	openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$d/server.key" 2>/dev/null
	openssl req -new -key "$d/server.key" -subj "/CN=127.0.0.1" -out "$d/server.csr" 2>/dev/null
	openssl x509 -req -in "$d/server.csr" -CA "$d/ca.crt" -CAkey "$d/ca.key" -CAcreateserial -days 2 \
		-sha256 -extfile "$d/ext" -out "$d/server.crt" 2>/dev/null
	cat "$d/server.crt" "$d/server.key" >"$d/haproxy.pem"
}

# wait_up URL NAME PID LOG: until URL/healthz answers 200 (with $CA and $TOKEN), else dies with
# the log's tail.
wait_up() {
	local url=$1 name=$2 pid=$3 log=$4 i
	for i in $(seq 150); do
		"$LOAD" request --server "$url" --cacert "$CA" --token "$TOKEN" --path /healthz --expect 200 \
			>/dev/null 2>&1 && return 0
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.2
	done
	tail -20 "$log" >&2
	die "$name did not come up"
}

# bench_api BASE METHOD PATH BODY EXPECT: one request with $CA and $TOKEN, retried for 5 s.
bench_api() {
	local i
	for i in $(seq 25); do
		"$LOAD" request --server "$1" --cacert "$CA" --token "$TOKEN" --method "$2" --path "$3" \
			${4:+--data "$4"} --expect "$5" >"$TMP/last.out" 2>&1 && return 0
		sleep 0.2
	done
	cat "$TMP/last.out" >&2
	return 1
}

# cpu_ticks PID: user + system clock ticks of a process so far (0 if gone).
cpu_ticks() { sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | awk '{print $12 + $13}' || echo 0; }

# tree_cpu_ticks PID: cpu_ticks of PID and of its direct children (a master's workers).
tree_cpu_ticks() {
	local t c
	t=$(cpu_ticks "$1")
	for c in $(cat /proc/"$1"/task/*/children 2>/dev/null); do
		t=$(( t + $(cpu_ticks "$c") ))
	done
	echo "$t"
}

# bench_result_field FILE KEY: a value from the `RESULT {json}` line of a program's output.
bench_result_field() { sed -n "s/^RESULT .*\"$2\":\([^,}]*\).*/\1/p" "$1" | tail -1; }

# median: the median of the numbers on standard input, one per line ("-" when none).
median() { sort -g | awk '{v[NR]=$1} END {if (NR == 0) print "-"; else if (NR % 2) print v[(NR+1)/2]; else print (v[NR/2]+v[NR/2+1])/2}'; }
