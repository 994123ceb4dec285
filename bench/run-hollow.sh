#!/usr/bin/env bash
# Measures what a hollow kubelet costs per simulated node (RSS, CPU) at 1,000 and 10,000 nodes,
# with the resource manager's and etcd's CPU beside it, and prints a markdown table for
# docs/benchmarks.md.
#
# usage: bench/run-hollow.sh [BUILD_DIR] [--quick]
#   BUILD_DIR  a built tree with ursa-rm-apiserver, ursa-kubelet and bench/ursa-load
#              (default: build/ at the repository root)
#   --quick    100 and 500 nodes, 15 s samples, for a smoke test of the script itself
#
# Knobs (environment): COUNTS (default "1000 10000"), SAMPLE_SECONDS (60), REGISTER_TIMEOUT
# (300 s to see every node), KUBELET (path of ursa-kubelet; default BUILD_DIR/src/kubelet/ursa-kubelet).
#
# For each count: a fresh etcd and RM, then `ursa-kubelet --hollow-nodes N`; waits until the RM
# lists N nodes and every lease was renewed within the last 15 s, then samples for
# SAMPLE_SECONDS. Exits non-zero if the kubelet is missing, dies, or never gets all nodes
# registered and renewing. Loopback, free ports, a temporary directory, cleaned up on exit.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=""
QUICK=0
for arg in "$@"; do
	case "$arg" in
	--quick) QUICK=1 ;;
	-h|--help) sed -n '2,18p' "$0"; exit 0 ;;
	-*) echo "run-hollow.sh: unknown option $arg" >&2; exit 2 ;;
	*) BUILD=$arg ;;
	esac
done
BUILD=$(cd "${BUILD:-$ROOT/build}" 2>/dev/null && pwd) || { echo "run-hollow.sh: build dir not found" >&2; exit 1; }

if [ "$QUICK" = 1 ]; then
	: "${COUNTS:=100 500}" "${SAMPLE_SECONDS:=15}"
fi
: "${COUNTS:=1000 10000}" "${SAMPLE_SECONDS:=60}" "${REGISTER_TIMEOUT:=300}"

ETCD_BIN=${ETCD_BIN:-$(command -v etcd || true)}
RM=$BUILD/src/resource-manager/ursa-rm-apiserver
KUBELET=${KUBELET:-$BUILD/src/kubelet/ursa-kubelet}
LOAD=$BUILD/bench/ursa-load
TOKEN="bench-$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')"
HZ=$(getconf CLK_TCK)
LEASES=/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases

die() { echo "run-hollow.sh: $*" >&2; exit 1; }

[ -x "$ETCD_BIN" ] || die "etcd not found (apt-get install etcd-server)"
[ -x "$KUBELET" ] || die "hollow kubelet binary missing: $KUBELET (build it: cmake --build $BUILD --target ursa-kubelet)"
for b in "$RM" "$LOAD"; do
	[ -x "$b" ] || die "missing $b (build it: cmake --build $BUILD --target $(basename "$b"))"
done

# shellcheck source=bench/lib.sh
. "$ROOT/bench/lib.sh"
bench_tmp ursa-hollow

# stop_pid PID NAME LOG: SIGTERM, SIGKILL after 20 s; warns (with the log's tail) when the
# process did not exit cleanly.
stop_pid() {
	local rc=0
	kill "$1" 2>/dev/null || true
	timeout 20 tail --pid="$1" -f /dev/null 2>/dev/null || kill -9 "$1" 2>/dev/null || true
	wait "$1" 2>/dev/null || rc=$?
	if [ "$rc" != 0 ] && [ "$rc" != 143 ]; then
		echo "# warning: $2 exited with status $rc on SIGTERM; end of its log:" >&2
		tail -5 "$3" >&2 || true
	fi
}

# ---- processes (fresh per count) ----------------------------------------------------------


start_rm() { # start_rm DIR
	local dir=$1 port i
	port=$("$LOAD" free-port)
	printf '%s,admin,uid1,"system:masters",system\n' "$TOKEN" >"$dir/tokens.csv"
	"$RM" --listen "127.0.0.1:$port" --etcd-servers "$ETCD_URL" --token-auth-file "$dir/tokens.csv" \
		--log-level warn >"$dir/rm.log" 2>&1 &
	RM_PID=$!
	PIDS+=("$RM_PID")
	RM_URL="http://127.0.0.1:$port"
	for i in $(seq 150); do
		api "$LEASES?limit=1" >/dev/null 2>&1 && return 0
		kill -0 "$RM_PID" 2>/dev/null || break
		sleep 0.2
	done
	tail -20 "$dir/rm.log" >&2
	die "ursa-rm-apiserver did not start serving"
}

write_kubeconfig() { # write_kubeconfig FILE
	cat >"$1" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: rm
  cluster:
    server: $RM_URL
users:
- name: bench
  user:
    token: $TOKEN
contexts:
- name: rm
  context:
    cluster: rm
    user: bench
current-context: rm
EOF
}

# ---- samples ------------------------------------------------------------------------------

api() { "$LOAD" request --server "$RM_URL" --token "$TOKEN" --path "$1" --expect 200 2>/dev/null; }
cpu_ticks() { sed 's/.*) //' "/proc/$1/stat" | awk '{print $12 + $13}'; }
busy_ticks() { awk '/^cpu / {print $2 + $3 + $4 + $7 + $8 + $9; exit}' /proc/stat; }
status_kb() { awk -v k="$2:" '$1 == k {print $2}' "/proc/$1/status"; }
now_s() { date +%s.%N; }
calc() { LC_ALL=C awk "BEGIN {printf \"$1\", $2}"; }
metric() { { api /metrics || true; } | awk -v m="$1" '$1 == m {print $2; f = 1} END {if (!f) print 0}'; }

# node_count PREFIX: nodes PREFIX-* the RM lists (a full list: the RM's paged lists carry no
# remainingItemCount), or 0.
node_count() {
	{ api /api/v1/nodes || true; } | { grep -o "\"name\":\"$1-[0-9]*\"" || true; } | sort -u | wc -l
}

# fresh_leases PREFIX SECONDS: leases of PREFIX-* renewed within the last SECONDS.
fresh_leases() {
	local since
	since=$(date -u -d "-$2 sec" +%Y-%m-%dT%H:%M:%S)
	{ api "$LEASES" || true; } |
		{ grep -o "\"holderIdentity\":\"$1-[0-9]*\",[^}]*\"renewTime\":\"[^\"]*\"" || true; } |
		sed 's/.*"renewTime":"\([^"]*\)"/\1/' | awk -v s="$since" '$0 >= s' | wc -l
}

# busiest: processes above 5% of a core over one second (what else shares the machine).
busiest() {
	top -b -n 2 -d 1 -w 200 2>/dev/null | awk '/^top -/ {n++}
		n == 2 && $1 ~ /^[0-9]+$/ && $9 + 0 >= 5 {printf "%s%s %s%%", sep, $12, $9; sep = ", "}'
}

# ---- run ----------------------------------------------------------------------------------

LOAD_BEFORE=$(uptime | sed 's/.*load average: //')
START_DATE=$(date -u +%Y-%m-%dT%H:%M:%SZ)
OTHERS_BEFORE=$(busiest)
ROWS=()
RSS_BY_N=()

for n in $COUNTS; do
	dir=$TMP/n$n
	mkdir -p "$dir"
	start_etcd "$dir" hollow
	start_rm "$dir"
	write_kubeconfig "$dir/kubeconfig"
	prefix=hollow$n
	kport=$("$LOAD" free-port)
	echo "## hollow kubelet with $n nodes" >&2
	t_start=$(now_s)
	"$KUBELET" --hollow-nodes "$n" --hollow-prefix "$prefix" --kubeconfig "$dir/kubeconfig" --zone az-1 \
		--root-dir "$dir/kubelet" --port "$kport" --log-level warn >"$dir/kubelet.log" 2>&1 &
	KL_PID=$!
	PIDS+=("$KL_PID")

	# Registration: every node listed by the RM.
	seen=0
	deadline=$(( $(date +%s) + REGISTER_TIMEOUT ))
	while [ "$(date +%s)" -lt "$deadline" ]; do
		kill -0 "$KL_PID" 2>/dev/null || { tail -30 "$dir/kubelet.log" >&2; die "ursa-kubelet exited during registration ($n nodes)"; }
		seen=$(node_count "$prefix")
		[ "$seen" -ge "$n" ] && break
		sleep 2
	done
	[ "$seen" -ge "$n" ] || { tail -30 "$dir/kubelet.log" >&2; die "only $seen of $n nodes registered in ${REGISTER_TIMEOUT}s"; }
	reg_s=$(calc %.1f "$(now_s) - $t_start")
	echo "# $n nodes registered in ${reg_s}s" >&2

	# Steady state: one more renewal period, then every lease fresh (renewed within 15 s).
	sleep 12
	fresh=$(fresh_leases "$prefix" 15)
	echo "# $fresh of $n leases renewed in the last 15 s" >&2
	[ "$fresh" -ge "$n" ] || { tail -30 "$dir/kubelet.log" >&2; die "leases are not renewing steadily: $fresh of $n fresh"; }

	# Sample.
	a_t=$(now_s); a_kl=$(cpu_ticks "$KL_PID"); a_rm=$(cpu_ticks "$RM_PID"); a_etcd=$(cpu_ticks "$ETCD_PID")
	a_busy=$(busy_ticks); a_wr=$(metric ursa_etcd_writes_total); a_txn=$(metric ursa_etcd_write_txns_total)
	rss_max=0
	end=$(( $(date +%s) + SAMPLE_SECONDS ))
	while [ "$(date +%s)" -lt "$end" ]; do
		kill -0 "$KL_PID" 2>/dev/null || { tail -30 "$dir/kubelet.log" >&2; die "ursa-kubelet died while sampling ($n nodes)"; }
		r=$(status_kb "$KL_PID" VmRSS)
		[ "${r:-0}" -gt "$rss_max" ] && rss_max=$r
		sleep 5
	done
	b_t=$(now_s); b_kl=$(cpu_ticks "$KL_PID"); b_rm=$(cpu_ticks "$RM_PID"); b_etcd=$(cpu_ticks "$ETCD_PID")
	b_busy=$(busy_ticks); b_wr=$(metric ursa_etcd_writes_total); b_txn=$(metric ursa_etcd_write_txns_total)
	rss=$(status_kb "$KL_PID" VmRSS)
	threads=$(status_kb "$KL_PID" Threads)
	fresh_end=$(fresh_leases "$prefix" 15)
	el=$(calc %.3f "$b_t - $a_t")

	kl_cores=$(calc %.3f "($b_kl - $a_kl) / $HZ / $el")
	rm_cores=$(calc %.3f "($b_rm - $a_rm) / $HZ / $el")
	etcd_cores=$(calc %.3f "($b_etcd - $a_etcd) / $HZ / $el")
	other_cores=$(calc %.2f "(($b_busy - $a_busy) - ($b_kl - $a_kl) - ($b_rm - $a_rm) - ($b_etcd - $a_etcd)) / $HZ / $el")
	ROWS+=("| $n | $reg_s | $(calc %.1f "$rss / 1024") | $(calc %.2f "$rss / $n") | $(calc %.1f "$rss_max / 1024") | $kl_cores | $(calc %.2f "$kl_cores * 1000000 / $n") | $threads | $(calc %.0f "($b_wr - $a_wr) / $el") | $(calc %.0f "($b_txn - $a_txn) / $el") | $rm_cores | $etcd_cores | $other_cores | $fresh_end/$n |")
	RSS_BY_N+=("$n:$rss")
	echo "# $n nodes: RSS ${rss} kB, kubelet ${kl_cores} cores, RM ${rm_cores}, etcd ${etcd_cores}, other ${other_cores}" >&2

	stop_pid "$KL_PID" ursa-kubelet "$dir/kubelet.log"
	stop_pid "$RM_PID" ursa-rm-apiserver "$dir/rm.log"
	stop_pid "$ETCD_PID" etcd "$dir/etcd.log"
done

LOAD_AFTER=$(uptime | sed 's/.*load average: //')
OTHERS_AFTER=$(busiest)

# ---- report -------------------------------------------------------------------------------

MARGINAL=""
if [ "${#RSS_BY_N[@]}" -ge 2 ]; then
	first=${RSS_BY_N[0]}; last=${RSS_BY_N[${#RSS_BY_N[@]}-1]}
	MARGINAL=$(calc %.2f "(${last#*:} - ${first#*:}) / (${last%%:*} - ${first%%:*})")
fi
MODEL=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)
cat <<EOF

### Hollow kubelet cost per node ($START_DATE)

Machine: $(nproc) CPUs, ${MODEL:-unknown CPU}, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo) RAM, Linux $(uname -r); etcd $("$ETCD_BIN" --version | sed -n 's/^etcd Version: //p'), one member; RM over plain HTTP on loopback.
Load average before: $LOAD_BEFORE; after: $LOAD_AFTER. Processes above 5% of a core (1 s sample) before: ${OTHERS_BEFORE:-none}; after: ${OTHERS_AFTER:-none}.
One \`ursa-kubelet --hollow-nodes N\` process per row, fresh etcd and RM each time; leases renewed every 10 s (lease 40 s), node status every 300 s.
Figures are sampled over ${SAMPLE_SECONDS} s once every node was registered and every lease renewed within 15 s. Cores are CPU-seconds per second; "other" is the rest of the machine.

| Nodes | Registered in s | Kubelet RSS MiB | RSS KiB/node | Peak RSS MiB | Kubelet cores | Kubelet µcores/node | Threads | etcd writes/s | etcd txns/s | RM cores | etcd cores | Other cores | Leases fresh at end |
| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |
EOF
printf '%s\n' "${ROWS[@]}"
[ -z "$MARGINAL" ] || echo "
Marginal RSS between the first and last rows: **$MARGINAL KiB per node**."
