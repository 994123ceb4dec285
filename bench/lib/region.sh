# shellcheck shell=bash
# The functions of bench/run-region.sh: a region of several partitions on loopback, started with
# deploy/lib (common.sh, components.sh) under URSA_STATE=$OUT/state, plus what the local region
# lacks: 3-member etcd clusters, two API servers per partition, many hollow kubelet processes,
# a row table of every process (kind, log, readiness probe, command line), the sampler, the
# supervisor (restarts as systemd's Restart=always would) and the fault schedule.
# Sourced after deploy/lib/common.sh and components.sh; callers run under `set -euo pipefail`
# and set OUT, LOAD (bench/ursa-load), LEASE_SECONDS, NODE_GRACE, HOLLOW_RESTART_DELAY.

# ---- rows ---------------------------------------------------------------------------------
# One row per daemon: R_NAMES (start order), R_KIND (a fault kind of faults.tsv, or haproxy),
# R_GROUP (its partition, etcd cluster or zone), R_LOG, R_PROBE (a readiness URL; "leader:URL"
# for a leader-elected daemon, ready when URL (its /metrics) says ursa_leader 1;
# "nodes:RM:PREFIX:COUNT" for a hollow kubelet, healed when its own COUNT nodes are Ready again). The daemon's command line is kept in
# $URSA_PIDS/NAME.cmd (NUL-separated), to start it again exactly as it was.
REGION_LIB_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
R_NAMES=()
declare -A R_KIND=() R_GROUP=() R_LOG=() R_PROBE=()
declare -A TP_EPS=() RM_EPS=() ETCD_EPS=()
PORTS=()
PORT_I=0

now_ms() { local t=${EPOCHREALTIME/./}; printf '%s\n' "${t:0:13}"; }

# region_alloc_ports N: N free loopback ports, handed out by take_port.
region_alloc_ports() {
	mapfile -t PORTS < <("$LOAD" free-port --count "$1")
	[ "${#PORTS[@]}" -eq "$1" ] || die "ursa-load free-port --count $1 gave ${#PORTS[@]} ports"
	PORT_I=0
}

# take_port VAR: the next free port into VAR.
take_port() {
	[ "$PORT_I" -lt "${#PORTS[@]}" ] || die "out of allocated ports (${#PORTS[@]})"
	printf -v "$1" '%s' "${PORTS[PORT_I]}"
	PORT_I=$((PORT_I + 1))
}

# region_row NAME KIND GROUP LOG PROBE: records a daemon start_daemon has just started.
region_row() {
	local name=$1 pid
	R_NAMES+=("$name")
	R_KIND[$name]=$2
	R_GROUP[$name]=$3
	R_LOG[$name]=$4
	R_PROBE[$name]=$5
	pid=$(daemon_pid "$name") || die "$name is not running right after its start; log: $4"
	region_save_cmd "$name" "$pid"
	printf '%s\t%s\t%s\t%s\t%s\n' "$name" "$2" "$3" "$4" "$5" >>"$URSA_STATE/rows.tsv"
}

# region_save_cmd NAME PID: the daemon's argv (setsid/nohup have exec'ed in place by now).
region_save_cmd() {
	local name=$1 pid=$2 argv=()
	mapfile -d '' -t argv <"/proc/$pid/cmdline"
	while [ "${#argv[@]}" -gt 0 ] && { [ "${argv[0]##*/}" = setsid ] || [ "${argv[0]##*/}" = nohup ]; }; do
		argv=("${argv[@]:1}")
	done
	[ "${#argv[@]}" -gt 0 ] || die "$name (pid $pid): empty command line"
	printf '%s\0' "${argv[@]}" >"$URSA_PIDS/$name.cmd"
}

# region_restart NAME: starts NAME again with the command line it had (in a subshell: a failed
# start must not end the caller). Prints the new PID.
region_restart() {
	local name=$1 argv=()
	mapfile -d '' -t argv <"$URSA_PIDS/$name.cmd"
	( start_daemon "$name" "${R_LOG[$name]}" "${argv[@]}" ) >/dev/null 2>&1 || return 1
	daemon_pid "$name"
}

# region_probe NAME: true when NAME answers its readiness probe.
region_probe() {
	local probe=${R_PROBE[$1]} code last
	case $probe in
	nodes:*)
		# a hollow kubelet (nodes:RM:PREFIX:COUNT): every one of its own nodes listed and Ready
		# (other processes' nodes going NotReady meanwhile is no part of this fault's healing)
		local rm prefix count
		IFS=: read -r _ rm prefix count <<<"$probe"
		last=$(awk -v p="$prefix" '$1 == p { print $2, $3 }' "$URSA_STATE/nodes-$rm.count" 2>/dev/null)
		# shellcheck disable=SC2086 # ready total
		set -- $last
		[ "${2:-0}" -ge "$count" ] && [ "$1" = "$2" ]
		return
		;;
	leader:*)
		# a leader-elected daemon is ready when it holds its lease again (ursa_leader 1)
		curl -s --max-time 2 "${probe#leader:}" 2>/dev/null | grep -q '^ursa_leader{.*} 1'
		return
		;;
	https://*)
		code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 --cacert "$URSA_CA" \
			-H "Authorization: Bearer $ADMIN_TOKEN" "$probe" 2>/dev/null || true) ;;
	*)
		code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 "$probe" 2>/dev/null || true) ;;
	esac
	[ "$code" = 200 ]
}

# region_wait_probe NAME SECONDS: waits until NAME is ready; dies naming its log otherwise.
region_wait_probe() {
	local name=$1 secs=$2 i
	for ((i = 0; i < secs * 4; i++)); do
		region_probe "$name" && return 0
		if ! daemon_pid "$name" >/dev/null; then
			tail -n 20 "${R_LOG[$name]}" >&2 || true
			die "$name died while starting; log: ${R_LOG[$name]}"
		fi
		sleep 0.25
	done
	tail -n 20 "${R_LOG[$name]}" >&2 || true
	die "$name not ready (${R_PROBE[$name]}) within ${secs}s; log: ${R_LOG[$name]}"
}

# ---- etcd clusters ------------------------------------------------------------------------

# start_etcd_cluster CLUSTER: three members CLUSTER-etcd-1..3 on free ports, data and logs in
# $URSA_STATE/CLUSTER/etcd-N{,.log}; ETCD_EPS[CLUSTER] is their client URLs. The settings of
# deploy/lib's start_etcd (5-minute periodic compaction, snapshot count 10,000), with a
# heartbeat of 200 ms and an election timeout of 2 s (etcd's 100/1000 ms assume an idle machine;
# here 2 cores carry the whole region, and a member starved for a second would call elections).
start_etcd_cluster() {
	local cl=$1 i c p cluster="" urls="" name
	local -a cports=() pports=()
	for i in 1 2 3; do
		take_port c
		take_port p
		cports+=("$c")
		pports+=("$p")
		cluster+="${cluster:+,}$cl-etcd-$i=http://127.0.0.1:$p"
		urls+="${urls:+,}http://127.0.0.1:$c"
	done
	mkdir -p "$URSA_STATE/$cl"
	for i in 1 2 3; do
		name=$cl-etcd-$i
		c=${cports[i - 1]}
		p=${pports[i - 1]}
		mkdir -p "$URSA_STATE/$cl/etcd-$i"
		chmod 700 "$URSA_STATE/$cl/etcd-$i"
		start_daemon "$name" "$URSA_STATE/$cl/etcd-$i.log" etcd \
			--name "$name" --data-dir "$URSA_STATE/$cl/etcd-$i" \
			--listen-client-urls "http://127.0.0.1:$c" --advertise-client-urls "http://127.0.0.1:$c" \
			--listen-peer-urls "http://127.0.0.1:$p" --initial-advertise-peer-urls "http://127.0.0.1:$p" \
			--initial-cluster "$cluster" --initial-cluster-state new --initial-cluster-token "ursa-sim-$cl" \
			--heartbeat-interval 200 --election-timeout 2000 \
			--auto-compaction-mode periodic --auto-compaction-retention 5m --snapshot-count 10000 \
			--quota-backend-bytes 8589934592 --logger zap --log-outputs stderr >/dev/null
		region_row "$name" etcd "$cl" "$URSA_STATE/$cl/etcd-$i.log" "http://127.0.0.1:$c/health"
	done
	ETCD_EPS[$cl]=$urls
}

# etcd_leader CLUSTER: the name of the cluster's leader member (from each member's /metrics),
# or member 1 when none says so.
etcd_leader() {
	local cl=$1 i url
	for i in 1 2 3; do
		url=${R_PROBE[$cl-etcd-$i]%/health}
		if curl -s --max-time 2 "$url/metrics" 2>/dev/null | grep -q '^etcd_server_is_leader 1'; then
			printf '%s\n' "$cl-etcd-$i"
			return 0
		fi
	done
	printf '%s\n' "$cl-etcd-1"
}

# ---- partitions ---------------------------------------------------------------------------

# start_partition_apiservers KIND NAME [ZONE]: two API servers NAME-apiserver-a and -b over the
# cluster NAME's etcd, logs $URSA_STATE/NAME/apiserver-{a,b}.log; TP_EPS/RM_EPS[NAME] lists both.
start_partition_apiservers() {
	local kind=$1 part=$2 zone=${3:-} s port eps="" bin extra=()
	if [ "$kind" = tp ]; then
		bin=$URSA_BUILD_DIR/src/tenant-partition/ursa-tp-apiserver
		extra=(--service-account-signing-key-file "$URSA_STATE/signing-key.pem")
	else
		bin=$URSA_BUILD_DIR/src/resource-manager/ursa-rm-apiserver
	fi
	for s in a b; do
		take_port port
		URSA_APISERVER_LOG=$URSA_STATE/$part/apiserver-$s.log \
			start_apiserver "$part-apiserver-$s" "$part" "$port" "${ETCD_EPS[$part]}" "$bin" "${extra[@]}" >/dev/null
		region_row "$part-apiserver-$s" "$kind-apiserver" "$part" "$URSA_STATE/$part/apiserver-$s.log" \
			"https://127.0.0.1:$port/readyz"
		eps+="${eps:+,}https://127.0.0.1:$port"
	done
	if [ "$kind" = tp ]; then TP_EPS[$part]=$eps; else RM_EPS[$part]=$eps; fi
	say "$part: API servers $eps"
}

# region_register: every partition in the gateways' etcd and in each other's registries, with
# both API servers as its endpoints (ursactl register --endpoints URL1,URL2).
region_register() {
	local part out i=0
	for part in "${TP_NAMES[@]}"; do
		out=$(URSA_HOME=$URSA_STATE "$URSACTL" register --gateway-etcd "${ETCD_EPS[gateway]}" --kind tp \
			--name "$part" --endpoints "${TP_EPS[$part]}" 2>&1) || die "ursactl register tp $part: $out"
	done
	for part in "${RM_NAMES[@]}"; do
		i=$((i + 1))
		out=$(URSA_HOME=$URSA_STATE "$URSACTL" register --gateway-etcd "${ETCD_EPS[gateway]}" --kind rm \
			--name "$part" --zone "z-$i" --endpoints "${RM_EPS[$part]}" 2>&1) || die "ursactl register rm $part: $out"
	done
	say "registered ${#TP_NAMES[@]} tenant partition(s) and ${#RM_NAMES[@]} resource manager(s)"
}

# ---- hollow kubelets ----------------------------------------------------------------------

# start_hollow NAME ZONE RM COUNT: a hollow kubelet process holding COUNT nodes NAME-0.. of
# ZONE, against resource manager RM's two API servers (failing over between them).
start_hollow() {
	local name=$1 zone=$2 rm=$3 count=$4 kc root=$URSA_STATE/$2/$1 log=$URSA_STATE/$2/$1.log
	kc=$(kubelet_kubeconfig "$zone" "${RM_EPS[$rm]}")
	mkdir -p "$root"
	start_daemon "$name" "$log" "$URSA_BUILD_DIR/src/kubelet/ursa-kubelet" \
		--kubeconfig "$kc" --zone "$zone" --region local \
		--hollow-nodes "$count" --hollow-prefix "$name" --port 0 \
		--root-dir "$root" --cpu 8 --memory 32Gi --max-pods 110 \
		--lease-seconds "$LEASE_SECONDS" --log-level info >/dev/null
	region_row "$name" hollow-kubelet "$zone" "$log" "nodes:$rm:$name:$count"
}

# start_node_watchers: one bench/lib/region_nodes.py per resource manager (a list and a watch of
# its nodes, failing over between its API servers), keeping "READY TOTAL" in
# $URSA_STATE/nodes-RM.count; their PIDs go to BG_PIDS.
start_node_watchers() {
	local rm
	for rm in "${RM_NAMES[@]}"; do
		python3 "$REGION_LIB_DIR/region_nodes.py" "$URSA_STATE/nodes-$rm.count" "${RM_EPS[$rm]}" "$URSA_CA" \
			"$URSA_STATE/admin.token" "$URSA_STATE/stopping" &
		BG_PIDS+=("$!")
	done
}

# nodes_ready: prints "READY TOTAL" over every resource manager (Ready: the node's Ready
# condition is True), as the node watchers last wrote it.
nodes_ready() {
	local rm ready=0 total=0 r t
	for rm in "${RM_NAMES[@]}"; do
		r=0 t=0
		read -r r t 2>/dev/null <"$URSA_STATE/nodes-$rm.count" || true
		ready=$((ready + r))
		total=$((total + t))
	done
	printf '%s %s\n' "$ready" "$total"
}

# wait_registered WANT SECONDS: until the RMs list WANT nodes (Ready or not), a progress line
# every 5 s; false when time runs out (the caller goes on: wait_nodes decides).
wait_registered() {
	local want=$1 secs=$2 t0 ready total
	t0=$(date +%s)
	while :; do
		read -r ready total <<<"$(nodes_ready)"
		[ "$total" -ge "$want" ] && return 0
		say "nodes registered $total of $want so far ($ready Ready) after $(($(date +%s) - t0)) s"
		[ $(($(date +%s) - t0)) -lt "$secs" ] || return 1
		sleep 5
	done
}

# wait_nodes SECONDS: until NODES nodes are Ready, a progress line every 5 s. Nodes a hollow
# kubelet registered late in its first round may sit at Ready=Unknown until their next status
# report (5 minutes; see run-region.sh): once 99% are Ready and the count has not grown for 30 s,
# it goes on (noting it in LIMITS). Dies naming the hollow kubelets' logs otherwise.
wait_nodes() {
	local secs=$1 t0 now ready total name best=0 best_t
	t0=$(date +%s)
	best_t=$t0
	while :; do
		read -r ready total <<<"$(nodes_ready)"
		now=$(date +%s)
		say "nodes Ready $ready of $NODES ($total registered) after $((now - t0)) s"
		[ "$ready" -ge "$NODES" ] && return 0
		if [ "$ready" -gt "$best" ]; then best=$ready; best_t=$now; fi
		if [ $((ready * 100)) -ge $((NODES * 99)) ] && [ $((now - best_t)) -ge 30 ]; then
			LIMITS+=("start: $ready of $NODES nodes Ready (the rest Ready=Unknown until their next status report)")
			warn "$ready of $NODES nodes Ready, no more for 30 s: going on (see the RMs' controller-manager.log)"
			return 0
		fi
		for name in "${R_NAMES[@]}"; do
			[ "${R_KIND[$name]}" = hollow-kubelet ] || continue
			daemon_pid "$name" >/dev/null || { tail -n 20 "${R_LOG[$name]}" >&2; die "$name died; log: ${R_LOG[$name]}"; }
		done
		if [ $((now - t0)) -ge "$secs" ]; then
			LIMITS+=("only $ready of $NODES nodes Ready after ${secs}s")
			die "only $ready of $NODES nodes Ready within ${secs}s; logs: $URSA_STATE/z-*/z-*-hollow-*.log and $URSA_STATE/rm-*/apiserver-*.log"
		fi
		sleep 5
	done
}

# ---- sampler ------------------------------------------------------------------------------

# region_sampler: every SAMPLE_SECONDS, samples.tsv (CPU % and RSS of every row's process),
# etcd.tsv (each member's db size) and nodes.tsv (nodes Ready); a progress line every
# PROGRESS_SECONDS. Runs until killed.
region_sampler() {
	local hz pagekib name pid line rest t dt now last_progress=0 ready total cpu rss n
	local -a f
	local -A prev_ticks=() prev_pid=()
	local prev_t=0
	hz=$(getconf CLK_TCK)
	pagekib=$(($(getconf PAGESIZE) / 1024))
	while :; do
		t=$(now_ms)
		dt=$((t - prev_t))
		local top_name="" top_cpu=0 sum_cpu=0 sum_rss=0
		for name in "${R_NAMES[@]}"; do
			pid=""
			read -r pid 2>/dev/null <"$URSA_PIDS/$name.pid" || true
			[ -n "$pid" ] && read -r line 2>/dev/null <"/proc/$pid/stat" || continue
			rest=${line##*) }
			read -ra f <<<"$rest"
			n=$((f[11] + f[12]))
			read -r _ rss _ 2>/dev/null <"/proc/$pid/statm" || rss=0
			rss=$((rss * pagekib))
			cpu=""
			if [ "${prev_pid[$name]:-}" = "$pid" ] && [ "$prev_t" -gt 0 ] && [ "$dt" -gt 0 ]; then
				# percent of one core, one decimal: ticks * 100 / hz over dt ms
				cpu=$(((n - prev_ticks[$name]) * 100000 * 10 / hz / dt))
				sum_cpu=$((sum_cpu + cpu))
				[ "$cpu" -gt "$top_cpu" ] && top_cpu=$cpu && top_name=$name
				cpu="$((cpu / 10)).$((cpu % 10))"
			fi
			prev_ticks[$name]=$n
			prev_pid[$name]=$pid
			sum_rss=$((sum_rss + rss))
			[ -n "$cpu" ] && printf '%s\t%s\t%s\t%s\t%s\n' "$t" "$name" "${R_KIND[$name]}" "$cpu" "$rss" >>"$OUT/samples.tsv"
		done
		# every member's /metrics in one curl (one process, not one per member), each answer
		# followed by a line "@@ URL"
		local -a eurls=() enames=()
		for name in "${R_NAMES[@]}"; do
			[ "${R_KIND[$name]}" = etcd ] || continue
			eurls+=("${R_PROBE[$name]%/health}/metrics")
			enames+=("${R_GROUP[$name]} $name")
		done
		{ curl -s --max-time 3 -w '\n@@ %{url_effective}\n' "${eurls[@]}" 2>/dev/null || true; } |
			awk -v t="$t" -v names="$(printf '%s\n' "${enames[@]}")" '
				BEGIN { n = split(names, nm, "\n") }
				$1 == "etcd_mvcc_db_total_size_in_bytes" { db = sprintf("%d", $2) }
				$1 == "@@" { i++; if (db != "" && i <= n) { split(nm[i], p, " "); printf "%s\t%s\t%s\t%s\n", t, p[1], p[2], db }; db = "" }
			' >>"$OUT/etcd.tsv"
		read -r ready total <<<"$(nodes_ready)"
		printf '%s\t%s\t%s\n' "$(now_ms)" "$ready" "$total" >>"$OUT/nodes.tsv"
		now=$(date +%s)
		if [ $((now - last_progress)) -ge "$PROGRESS_SECONDS" ] && [ "$prev_t" -gt 0 ]; then
			last_progress=$now
			printf '[sampler %s] nodes Ready %s/%s; daemons %d.%d cores, RSS %d MiB; busiest %s %d.%d%%; load %s\n' \
				"$(date -u +%T)" "$ready" "$total" $((sum_cpu / 1000)) $((sum_cpu % 1000 / 100)) \
				$((sum_rss / 1024)) "${top_name:-none}" $((top_cpu / 10)) $((top_cpu % 10)) \
				"$(cut -d' ' -f1-3 /proc/loadavg)"
		fi
		prev_t=$t
		# every SAMPLE_SECONDS from start to start, not after the work (it takes seconds at scale)
		n=$((SAMPLE_SECONDS * 1000 - ($(now_ms) - t)))
		[ "$n" -ge 500 ] || n=500
		sleep "$((n / 1000)).$(printf '%03d' $((n % 1000)))"
	done
}

# ---- supervision and faults ---------------------------------------------------------------

fault_line() { printf '%s\t%s\t%s\t%s\t%s\n' "$(now_ms)" "$1" "$2" "$3" "$4" >>"$OUT/faults.tsv"; }

# restart_delay KIND: seconds a dead process stays down before it is started again (systemd's
# RestartSec=1 s; a hollow kubelet HOLLOW_RESTART_DELAY, so that its nodes go NotReady and their
# pods are evicted first, as when a host is down).
restart_delay() { if [ "$1" = hollow-kubelet ]; then echo "$HOLLOW_RESTART_DELAY"; else echo 1; fi; }

# region_supervisor: every 0.5 s, each row's process; a dead one is started again after its
# restart_delay (faults.tsv: `restart` with the new PID, then `healed` once its probe answers; a
# death the fault schedule did not cause is recorded as `died` first). Stops restarting once
# $URSA_STATE/stopping exists. Runs until killed.
region_supervisor() {
	local name pid now kind newpid
	local -A cur=() dead=() heal=()
	for name in "${R_NAMES[@]}"; do
		read -r "cur[$name]" <"$URSA_PIDS/$name.pid"
	done
	while [ ! -e "$URSA_STATE/stopping" ]; do
		for name in "${R_NAMES[@]}"; do
			pid=${cur[$name]}
			kind=${R_KIND[$name]}
			if kill -0 "$pid" 2>/dev/null && [ -z "${dead[$name]:-}" ]; then
				if [ -n "${heal[$name]:-}" ] && region_probe "$name"; then
					fault_line "$kind" "$name" "$pid" healed
					say "$name healed ($(( ($(now_ms) - heal[$name]) / 1000 )) s after its restart)"
					unset "heal[$name]"
					rm -f "$URSA_STATE/faults/$name"
				fi
				continue
			fi
			now=$(now_ms)
			if [ -z "${dead[$name]:-}" ]; then
				dead[$name]=$now
				if [ ! -e "$URSA_STATE/faults/$name" ]; then
					fault_line "$kind" "$name" "$pid" died
					warn "$name (pid $pid) died by itself; log: ${R_LOG[$name]}"
				fi
			fi
			[ $((now - dead[$name])) -ge $(($(restart_delay "$kind") * 1000)) ] || continue
			[ -e "$URSA_STATE/stopping" ] && break
			if newpid=$(region_restart "$name"); then
				cur[$name]=$newpid
				unset "dead[$name]"
				heal[$name]=$(now_ms)
				fault_line "$kind" "$name" "$newpid" restart
				say "$name restarted (pid $newpid)"
			else
				# systemd would retry too: once a second, with the log telling why
				dead[$name]=$((now - $(restart_delay "$kind") * 1000 + 1000))
				warn "$name did not start again; retrying; log: ${R_LOG[$name]}"
			fi
		done
		sleep 0.5
	done
}

# fault_target KIND: the row a fault of KIND kills.
fault_target() {
	local last_tp=${TP_NAMES[${#TP_NAMES[@]} - 1]} last_rm=${RM_NAMES[${#RM_NAMES[@]} - 1]}
	case $1 in
	tp-apiserver) echo "${TP_NAMES[0]}-apiserver-a" ;;
	rm-apiserver) echo "$last_rm-apiserver-b" ;;
	scheduler) echo "${TP_NAMES[0]}-scheduler" ;;           # the partition's only one: its leader
	tp-controller-manager) echo "$last_tp-controller-manager" ;;
	rm-controller-manager) echo "${RM_NAMES[0]}-controller-manager" ;;
	gateway) echo gateway-1 ;;
	etcd) etcd_leader "${TP_NAMES[0]}" ;;                   # the busiest cluster's leader
	hollow-kubelet) echo "z-1-hollow-1" ;;
	*) return 1 ;;
	esac
}

# region_faults START_MS DURATION_S KIND...: kills (SIGKILL) one target of each KIND in turn, at
# DURATION * i/(n+1) * 0.9 seconds after START_MS (i = 1..n), spread over the load.
region_faults() {
	local start=$1 dur=$2 i=0 n at kind target pid
	shift 2
	n=$#
	mkdir -p "$URSA_STATE/faults"
	for kind in "$@"; do
		i=$((i + 1))
		at=$((start + dur * 900 * i / (n + 1)))
		while [ "$(now_ms)" -lt "$at" ]; do sleep 0.2; done
		target=$(fault_target "$kind") || { warn "unknown fault kind $kind"; continue; }
		if ! pid=$(daemon_pid "$target"); then
			warn "fault $kind: $target is not running; skipped"
			fault_line "$kind" "$target" 0 skipped
			continue
		fi
		: >"$URSA_STATE/faults/$target"
		kill -KILL "$pid"
		fault_line "$kind" "$target" "$pid" kill
		say "FAULT: kill -9 $target (pid $pid, $kind)"
	done
}

# pending_faults: how many killed processes have not healed yet.
pending_faults() {
	local n=0 f
	shopt -s nullglob
	for f in "$URSA_STATE"/faults/*; do n=$((n + 1)); done
	shopt -u nullglob
	echo "$n"
}

# ---- cleanup ------------------------------------------------------------------------------

# region_stop_all: TERM to every daemon of the region (those with a pid file under
# $URSA_STATE/pids whose PID still runs their binary), KILL after 15 s.
region_stop_all() {
	local pf name pid i alive
	local -a pids=() names=()
	: >"$URSA_STATE/stopping" 2>/dev/null || true
	for _ in 1 2; do
		pids=()
		names=()
		shopt -s nullglob
		for pf in "$URSA_PIDS"/*.pid; do
			name=$(basename "$pf" .pid)
			if pid=$(daemon_pid "$name"); then
				pids+=("$pid")
				names+=("$name")
			fi
		done
		shopt -u nullglob
		[ "${#pids[@]}" -eq 0 ] && return 0
		say "stopping ${#pids[@]} process(es) of the region"
		kill -TERM "${pids[@]}" 2>/dev/null || true
		for ((i = 0; i < 150; i++)); do
			alive=0
			for pid in "${pids[@]}"; do kill -0 "$pid" 2>/dev/null && alive=$((alive + 1)); done
			[ "$alive" -eq 0 ] && break
			sleep 0.1
		done
		for i in "${!pids[@]}"; do
			if kill -0 "${pids[i]}" 2>/dev/null; then
				warn "${names[i]} (pid ${pids[i]}) did not stop in 15 s; sending KILL"
				kill -KILL "${pids[i]}" 2>/dev/null || true
			fi
		done
		sleep 0.5
	done
}
