#!/usr/bin/env bash
# A whole region at scale, under faults (issue 21): starts a region on loopback, creates tenants
# through the front door, drives a cluster-loader2-style load while daemons are killed with
# SIGKILL and restarted as systemd would, verifies that nothing was lost, writes a report.
#
# usage: bench/run-region.sh [--quick] [--tps N] [--rms M] [--nodes H] [--tenants T]
#          [--duration S] [--rate P] [--burst-rate P] [--burst-seconds S] [--faults LIST|none]
#          [--active-share F] [--lease-seconds L] [--out DIR] [--build-dir DIR] [--keep]
#          [--start-only [--hold S]]
#   --tps N, --rms M    tenant partitions tp-1..N, resource managers rm-1..M owning zones z-1..M
#                       (default 2 x 2)
#   --nodes H           hollow nodes in all (default 20,000), spread evenly over the zones, at
#                       most 5,000 per hollow kubelet process and at least 2 processes per zone
#   --tenants T         tenants t-00001.. created through HAProxy (default 10,000)
#   --duration S        seconds of load (600) at --rate P pods/s (100), with a burst of
#                       --burst-rate pods/s (1,000) for --burst-seconds (10); --active-share F
#                       (0.1) of the tenants create workloads, the rest only read
#   --faults LIST       comma list of fault kinds (default all eight: hollow-kubelet,
#                       tp-apiserver, rm-apiserver, scheduler, tp-controller-manager,
#                       rm-controller-manager, gateway, etcd), or none; spread over the load
#   --lease-seconds L   hollow nodes' lease, renewed every L/4 s (default auto: 40 s, as kubelets
#                       do, up to 5,000 nodes; above, NODES/125 s, so that all nodes together
#                       renew ~500 leases/s: 20,000 nodes at 40 s, 2,000 renewals/s with each
#                       write on 3 etcd members, left nodes falsely NotReady on this machine)
#   --out DIR           output directory (default /var/tmp/ursa-region/<UTC stamp>)
#   --build-dir DIR     a built tree (default build/)
#   --keep              leave the region running at the end (stop it: kill the PIDs in
#                       DIR/state/pids/*.pid)
#   --start-only        start the region, sample it for --hold S seconds (60), stop (no tenants,
#                       load nor faults): measures start-up time and the idle region's cost
#   --quick             1 x 1, 500 nodes, 100 tenants, 60 s at 20 pods/s (burst 100 pods/s for
#                       5 s), one fault (tp-apiserver): the smoke test of the test suite
# Knobs (environment): REGION_DRIVER (default BUILD/bench/ursa-region; a stand-in for testing
# the launcher), SAMPLE_SECONDS (5), PROGRESS_SECONDS (10), PER_HOLLOW (5000 nodes per process).
#
# Phases (docs/scale.md; files in OUT):
#  1. start: per partition a 3-member etcd cluster and two API servers registered together
#     (ursactl register --endpoints URL1,URL2: gateways, schedulers, controllers and kubelets fail
#     over between them); the gateways' etcd (3 members), two gateways, HAProxy (TLS); a scheduler
#     and controller manager per TP, a controller manager per RM. Reuses deploy/lib with
#     URSA_STATE=OUT/state and free ports. Writes OUT/region.env.
#  2. tenants: `ursa-region tenants` (bench/ursa-region.c) creates the tenants, before the nodes.
#  3. nodes: the hollow kubelets, until the nodes are Ready. Then the sampler (samples.tsv,
#     etcd.tsv, nodes.tsv every SAMPLE_SECONDS) and the supervisor (a dead process is started
#     again after 1 s, a hollow kubelet later) from here on; the fault schedule during the load
#     (faults.tsv: kill, restart, healed; `died` for a death no fault caused; `skipped` if the
#     target was not running).
#  4. `ursa-region load`, 5. `ursa-region verify`, 6. bench/region-report.py OUT (report.md).
#  7. cleanup: every process of the region stopped (TERM, KILL after 15 s) on exit, error,
#     SIGINT or SIGTERM, unless --keep. run.json records settings, phase times and limits.
#
# Node grace and eviction (so that a hollow-kubelet fault shows within the run): a hollow node
# renews its lease every L/4 s (10 s at L = 40; 40 s at 20,000 nodes, L = 160). The RMs'
# controller managers get --node-monitor-grace-period 3 x L/4, at least 20 (30 s at L = 40;
# Kubernetes' default 40-50 s would also do, but eats a tenth of the run; 120 s at 20,000
# nodes), --node-monitor-period 2, --default-toleration-seconds 30 (Kubernetes:
# 300 s, longer than a 10-minute run can show) and --node-eviction-rate 200 nodes/s per zone
# (Kubernetes: 0.1/s, which would taint a 5,000-node process's nodes in 14 hours). A zone is
# "partially disrupted" (secondary rate) when >= 55% of its nodes are NotReady and "fully
# disrupted" when none is Ready (eviction stops when all zones are): each zone therefore holds
# at least 2 hollow processes, so killing one leaves the zone Normal. The killed process is
# started again HOLLOW_RESTART_DELAY = grace + toleration + 30 s after the kill: its nodes go
# Ready=Unknown ~30 s after the kill, are tainted NoExecute within seconds, their pods are
# evicted 30 s later (the RM controller deletes them in every tenant partition; ReplicaSets
# create replacements, the scheduler places them on Ready nodes), then the nodes come back.
# Found in a run (4,000 nodes, 1,000 killed): all 1,000 went Ready=Unknown 30 s after the kill,
# but only ~80 were tainted before the kubelet came back: the RM controller's token bucket had a
# burst of 1 and took one node a pass. Fixed (commit c87366f): a zone's bucket holds rate x
# monitor period and every pass drains it.
# Pods must tolerate ursa.io/hollow:NoSchedule (hollow nodes carry that taint) but not
# node.kubernetes.io/unreachable, or they will not be evicted.
#
# Start-up at scale: a hollow kubelet registered its nodes in its heartbeat workers' first round
# (100 nodes a worker); when that round outlasted the grace period (several processes at once on
# busy cores), its first nodes went Ready=Unknown before their first renewal and stayed so until
# their next status report (5 minutes: the kubelet did not notice the controller's mark). Fixed
# (commit b0eb2d3: renewals go before registrations, and a kubelet reports a node the controller
# marked at once). The processes still register one after another, and the wait goes on once
# 99% are Ready and stay so 30 s (run.json "limits" says so). Nodes Ready are counted by bench/lib/region_nodes.py (a
# list + watch per RM), not by listing 10,000 nodes every 5 s, which took seconds of RM CPU.
# Measured (2026-11-27, 2 shared cores, load average 20-50 from other work): --quick starts in
# 20-50 s; the default region (20,000 nodes) in 6 min (control plane 1 min, nodes 5 min) and
# then idles at ~1.2 cores and 6.4 GiB RSS (etcd 0.34 cores, TP controller managers 0.25, RM API
# servers 0.20, RM controller managers 0.17, hollow kubelets 0.11); 40,000 nodes (--nodes 40000,
# lease 320 s) start in 13.5 min (control plane 24 s, 8 hollow processes one after another) and
# idle at 1.44 cores, 11.2 GiB RSS: with 2 cores, that leaves ~0.5 core for the load.
set -euo pipefail
# The whole script is one compound command: bash parses it all before running it, so an edit of
# this file while a run is going cannot derail that run.
{
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
TPS=2 RMS=2 NODES=20000 TENANTS=10000 DURATION=600 RATE=100 BURST_RATE=1000 BURST_SECONDS=10
FAULTS=default ACTIVE_SHARE=0.1 LEASE_SECONDS=auto OUT="" BUILD="" KEEP=0 QUICK=0 START_ONLY=0 HOLD=60
usage() { sed -n '2,33p' "$0"; }
COMMAND_LINE="bench/run-region.sh$(printf ' %q' "$@")"
# --quick first sets the small defaults; options after or before it override them.
for a in "$@"; do [ "$a" = --quick ] && QUICK=1; done
if [ "$QUICK" = 1 ]; then
	TPS=1 RMS=1 NODES=500 TENANTS=100 DURATION=60 RATE=20 BURST_RATE=100 BURST_SECONDS=5
	FAULTS=tp-apiserver ACTIVE_SHARE=0.2
fi
while [ $# -gt 0 ]; do
	case $1 in
	--quick) ;;
	--keep) KEEP=1 ;;
	--start-only) START_ONLY=1 ;;
	--tps | --rms | --nodes | --tenants | --duration | --rate | --burst-rate | --burst-seconds | --faults | \
		--active-share | --lease-seconds | --out | --build-dir | --hold)
		[ $# -ge 2 ] || { echo "run-region.sh: $1 needs a value" >&2; exit 2; }
		case $1 in
		--tps) TPS=$2 ;; --rms) RMS=$2 ;; --nodes) NODES=$2 ;; --tenants) TENANTS=$2 ;;
		--duration) DURATION=$2 ;; --rate) RATE=$2 ;; --burst-rate) BURST_RATE=$2 ;;
		--burst-seconds) BURST_SECONDS=$2 ;; --faults) FAULTS=$2 ;; --active-share) ACTIVE_SHARE=$2 ;;
		--lease-seconds) LEASE_SECONDS=$2 ;; --out) OUT=$2 ;; --build-dir) BUILD=$2 ;; --hold) HOLD=$2 ;;
		esac
		shift ;;
	-h | --help) usage; exit 0 ;;
	*) echo "run-region.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
	esac
	shift
done
if [ "$LEASE_SECONDS" = auto ]; then
	# 40 s (Kubernetes' default) up to 5,000 nodes; above, renewals held at ~500/s in all
	LEASE_SECONDS=40
	[[ $NODES =~ ^[0-9]+$ ]] && [ "$NODES" -gt 5000 ] && LEASE_SECONDS=$((NODES * 4 / 500))
fi
for v in TPS RMS NODES TENANTS DURATION RATE BURST_RATE BURST_SECONDS LEASE_SECONDS HOLD; do
	[[ ${!v} =~ ^[0-9]+$ ]] || { echo "run-region.sh: ${v,,} must be a whole number (is '${!v}')" >&2; exit 2; }
done
if [ "$TPS" -lt 1 ] || [ "$TPS" -gt 16 ] || [ "$RMS" -lt 1 ] || [ "$RMS" -gt 16 ]; then
	echo "run-region.sh: --tps and --rms must be 1..16" >&2
	exit 2
fi
[ "$LEASE_SECONDS" -ge 8 ] || { echo "run-region.sh: --lease-seconds must be >= 8" >&2; exit 2; }
ALL_FAULTS=(hollow-kubelet tp-apiserver rm-apiserver scheduler tp-controller-manager rm-controller-manager gateway etcd)
case $FAULTS in
default) FAULT_LIST=("${ALL_FAULTS[@]}") ;;
none) FAULT_LIST=() ;;
*)
	IFS=, read -ra FAULT_LIST <<<"$FAULTS"
	for f in "${FAULT_LIST[@]}"; do
		[[ " ${ALL_FAULTS[*]} " == *" $f "* ]] || { echo "run-region.sh: unknown fault kind $f (one of ${ALL_FAULTS[*]})" >&2; exit 2; }
	done ;;
esac

BUILD=$(cd "${BUILD:-$ROOT/build}" 2>/dev/null && pwd) || { echo "run-region.sh: build dir not found" >&2; exit 1; }
OUT=${OUT:-/var/tmp/ursa-region/$(date -u +%Y%m%dT%H%M%SZ)}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
[ ! -e "$OUT/state" ] || { echo "run-region.sh: $OUT/state exists (a previous run?); choose another --out" >&2; exit 1; }
LOAD=$BUILD/bench/ursa-load
REGION_DRIVER=${REGION_DRIVER:-$BUILD/bench/ursa-region}
SAMPLE_SECONDS=${SAMPLE_SECONDS:-5}
PROGRESS_SECONDS=${PROGRESS_SECONDS:-10}
PER_HOLLOW=${PER_HOLLOW:-5000}
NODE_GRACE=$((LEASE_SECONDS * 3 / 4))
[ "$NODE_GRACE" -ge 20 ] || NODE_GRACE=20
TOLERATION_SECONDS=30
HOLLOW_RESTART_DELAY=$((NODE_GRACE + TOLERATION_SECONDS + 30))

export URSA_STATE=$OUT/state URSA_BUILD_DIR=$BUILD URSA_NODE_MONITOR_GRACE_SECONDS=$NODE_GRACE
# shellcheck source=deploy/lib/common.sh
. "$ROOT/deploy/lib/common.sh"
# shellcheck source=deploy/lib/components.sh
. "$ROOT/deploy/lib/components.sh"
# shellcheck source=bench/lib/region.sh
. "$ROOT/bench/lib/region.sh"

# tee in a session of its own: a signal to the whole process group (timeout(1), ^C) must not end
# it before the cleanup has run (bash's "Terminated" notice to a dead pipe would kill the shell)
exec > >(setsid tee -a "$OUT/progress.log") 2>&1
TEE_PID=$!

for b in "$LOAD" "$URSACTL" "$BUILD/src/kubelet/ursa-kubelet" "$BUILD/src/tenant-partition/ursa-tp-apiserver" \
	"$BUILD/src/resource-manager/ursa-rm-apiserver" "$URSA_GATEWAY_BIN" "$BUILD/src/scheduler/ursa-scheduler"; do
	[ -x "$b" ] || die "missing $b (build the tree: cmake --build $BUILD -j2)"
done
command -v etcd >/dev/null || die "etcd not found (Debian package etcd-server)"
if [ "$START_ONLY" = 0 ] && [ ! -x "$REGION_DRIVER" ]; then
	die "missing $REGION_DRIVER (bench/ursa-region.c; build it: cmake --build $BUILD --target ursa-region)"
fi

# ---- bookkeeping --------------------------------------------------------------------------
T0=$(now_ms)
PHASES=()   # "name start_ms end_ms status"
LIMITS=()   # what limited the run, for run.json
BG_PIDS=()  # the sampler, supervisor and fault schedule
RUN_PID=""  # the ursa-region step running now
RC=0
LOADAVG_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
phase_begin() { PHASE_NAME=$1; PHASE_T=$(now_ms); say "phase $1 ($(date -u +%T))"; }
phase_end() {
	local t
	t=$(now_ms)
	PHASES+=("$PHASE_NAME $PHASE_T $t ${1:-ok}")
	say "phase $PHASE_NAME: ${1:-ok} in $(((t - PHASE_T) / 1000)) s"
}

write_run_json() {
	local phases limits
	phases=$(printf '%s\n' "${PHASES[@]+"${PHASES[@]}"}")
	limits=$(printf '%s\n' "${LIMITS[@]+"${LIMITS[@]}"}")
	PHASES_TXT=$phases LIMITS_TXT=$limits COMMAND_LINE=$COMMAND_LINE LOADAVG_AFTER=$(cut -d' ' -f1-3 /proc/loadavg) \
		python3 - "$OUT/run.json" <<-PY || warn "could not write $OUT/run.json"
		import json, os, sys
		phases = []
		for line in os.environ["PHASES_TXT"].splitlines():
		    if line.strip():
		        n, s, e, st = line.split(" ", 3)
		        phases.append({"name": n, "start_ms": int(s), "end_ms": int(e), "seconds": (int(e) - int(s)) / 1000, "status": st})
		run = {
		    "settings": {"tps": $TPS, "rms": $RMS, "nodes": $NODES, "tenants": $TENANTS, "duration_s": $DURATION,
		                 "rate": $RATE, "burst_rate": $BURST_RATE, "burst_seconds": $BURST_SECONDS,
		                 "active_share": float("$ACTIVE_SHARE"), "faults": "${FAULT_LIST[*]}".split(),
		                 "lease_seconds": $LEASE_SECONDS, "node_monitor_grace_s": $NODE_GRACE,
		                 "default_toleration_s": $TOLERATION_SECONDS, "hollow_restart_delay_s": $HOLLOW_RESTART_DELAY,
		                 "nodes_per_hollow_max": $PER_HOLLOW, "quick": $QUICK == 1, "start_only": $START_ONLY == 1,
		                 "build_dir": "$BUILD", "command": os.environ["COMMAND_LINE"]},
		    "machine": {"cpus": os.cpu_count(), "loadavg_before": "$LOADAVG_BEFORE",
		                "loadavg_after": os.environ["LOADAVG_AFTER"],
		                "mem_total_kib": int(open("/proc/meminfo").read().split()[1])},
		    "start_ms": $T0, "phases": phases,
		    "limits": [l for l in os.environ["LIMITS_TXT"].splitlines() if l.strip()],
		    "exit_status": $RC,
		}
		# what the samples show: the daemons' CPU (cores) and RSS, by kind, and the fewest nodes Ready
		out = os.path.dirname(sys.argv[1])
		try:
		    per_t, per_kind, rss_t = {}, {}, {}
		    with open(os.path.join(out, "samples.tsv")) as f:
		        next(f)
		        for line in f:
		            t, proc, kind, cpu, rss = line.rstrip("\n").split("\t")
		            per_t[t] = per_t.get(t, 0.0) + float(cpu) / 100
		            rss_t[t] = rss_t.get(t, 0) + int(rss)
		            per_kind.setdefault(kind, {}).setdefault(t, 0.0)
		            per_kind[kind][t] += float(cpu) / 100
		    if per_t:
		        run["observed"] = {
		            "daemons_cores_mean": round(sum(per_t.values()) / len(per_t), 3),
		            "daemons_cores_max": round(max(per_t.values()), 3),
		            "daemons_rss_mib_max": round(max(rss_t.values()) / 1024),
		            "cores_mean_by_kind": {k: round(sum(v.values()) / len(per_t), 3)
		                                   for k, v in sorted(per_kind.items(), key=lambda kv: -sum(kv[1].values()))},
		        }
		        if run["observed"]["daemons_cores_mean"] > 0.75 * (os.cpu_count() or 1):
		            run["limits"].append("CPU: the region's daemons used %.2f of %d cores on average"
		                                 % (run["observed"]["daemons_cores_mean"], os.cpu_count()))
		    with open(os.path.join(out, "nodes.tsv")) as f:
		        next(f)
		        ready = [int(l.split("\t")[1]) for l in f if l.strip()]
		    if ready:
		        run.setdefault("observed", {})["nodes_ready_min"] = min(ready)
		except (OSError, ValueError, StopIteration):
		    pass
		try:
		    load = json.load(open(os.path.join(out, "load.json")))
		    got = load.get("pod_rate_achieved")
		    if isinstance(got, (int, float)) and got < 0.9 * $RATE:
		        run["limits"].append("load: %.1f pods/s achieved of %d asked (see load.json, calls.tsv)" % (got, $RATE))
		except (OSError, ValueError):
		    pass
		json.dump(run, open(sys.argv[1], "w"), indent=1)
		PY
}

CLEANED=0
cleanup() {
	local rc=$?
	[ "$CLEANED" = 1 ] && return
	CLEANED=1
	# a signal sent to the whole process group (timeout(1), a terminal's ^C) may have ended tee:
	# from here on no write may end the cleanup
	set +e
	trap '' INT TERM PIPE
	kill -0 "$TEE_PID" 2>/dev/null || exec >>"$OUT/progress.log" 2>&1
	[ "$RC" != 0 ] || RC=$rc
	: >"$URSA_STATE/stopping" 2>/dev/null || true
	for pid in $RUN_PID "${BG_PIDS[@]+"${BG_PIDS[@]}"}"; do
		kill -TERM "$pid" 2>/dev/null || true
	done
	for pid in $RUN_PID "${BG_PIDS[@]+"${BG_PIDS[@]}"}"; do
		timeout 10 tail --pid="$pid" -f /dev/null 2>/dev/null || kill -KILL "$pid" 2>/dev/null || true
	done
	if [ "$KEEP" = 1 ] && [ "$RC" = 0 ]; then
		rm -f "$URSA_STATE/stopping"
		say "--keep: the region keeps running (PIDs in $URSA_PIDS/*.pid); region.env: $OUT/region.env"
	else
		region_stop_all
	fi
	write_run_json
	say "done (exit $RC); output in $OUT"
	exit "$RC"
}
trap cleanup EXIT
trap 'trap "" INT TERM; RC=130; exit 130' INT
trap 'trap "" INT TERM; RC=143; exit 143' TERM

# run_step NAME CMD...: runs a step of ursa-region in the background (so that signals reach the
# trap at once) and waits for it; its status is the function's.
run_step() {
	local rc=0
	"$@" &
	RUN_PID=$!
	wait "$RUN_PID" || rc=$?
	RUN_PID=""
	return "$rc"
}

# ---- phase 1: the region ------------------------------------------------------------------
TP_NAMES=()
RM_NAMES=()
hc="" hs="" gp="" HAPROXY_PORT=""
for ((i = 1; i <= TPS; i++)); do TP_NAMES+=("tp-$i"); done
for ((i = 1; i <= RMS; i++)); do RM_NAMES+=("rm-$i"); done

say "region: $TPS TP x $RMS RM, $NODES hollow nodes, $TENANTS tenants; out $OUT; build $BUILD"
say "load: ${DURATION}s at $RATE pods/s, burst $BURST_RATE pods/s for ${BURST_SECONDS}s; faults: ${FAULT_LIST[*]:-none}"
say "node lease ${LEASE_SECONDS}s, grace ${NODE_GRACE}s, toleration ${TOLERATION_SECONDS}s, hollow restart after ${HOLLOW_RESTART_DELAY}s"
phase_begin start
# ports: 3 etcd members x 2 per cluster, 2 API servers per partition, health ports, gateways, HAProxy
region_alloc_ports $(((TPS + RMS + 1) * 6 + (TPS + RMS) * 2 + TPS * 2 + RMS + 2 + 1))
ensure_identity >/dev/null
ADMIN_TOKEN=$(admin_static_token)
( umask 077; printf '%s\n' "$ADMIN_TOKEN" >"$URSA_STATE/admin.token" )
: >"$URSA_STATE/rows.tsv"
printf 't_ms\tkind\ttarget\tpid\tevent\n' >"$OUT/faults.tsv"
printf 't_ms\tprocess\tkind\tcpu_pct\trss_kib\n' >"$OUT/samples.tsv"
printf 't_ms\tcluster\tmember\tdb_bytes\n' >"$OUT/etcd.tsv"
printf 't_ms\tready\ttotal\n' >"$OUT/nodes.tsv"

for cl in "${TP_NAMES[@]}" "${RM_NAMES[@]}" gateway; do
	start_etcd_cluster "$cl"
done
say "etcd: $(((TPS + RMS + 1) * 3)) members started; waiting for each cluster's quorum"
for name in "${R_NAMES[@]}"; do region_wait_probe "$name" 60; done
for part in "${TP_NAMES[@]}"; do start_partition_apiservers tp "$part"; done
i=0
for part in "${RM_NAMES[@]}"; do i=$((i + 1)); start_partition_apiservers rm "$part" "z-$i"; done
region_register
start_node_watchers
for part in "${TP_NAMES[@]}"; do
	take_port hc
	start_tp_controller_manager "$part-controller-manager" "$part" "${TP_EPS[$part]}" "$hc" >/dev/null
	region_row "$part-controller-manager" tp-controller-manager "$part" "$URSA_STATE/$part/controller-manager.log" \
		"leader:http://127.0.0.1:$hc/metrics"
	take_port hs
	start_scheduler "$part-scheduler" "$part" "${TP_EPS[$part]}" "$hs" >/dev/null
	region_row "$part-scheduler" scheduler "$part" "$URSA_STATE/$part/scheduler.log" "leader:http://127.0.0.1:$hs/metrics"
done
for part in "${RM_NAMES[@]}"; do
	take_port hc
	start_rm_controller_manager "$part-controller-manager" "$part" "${RM_EPS[$part]}" "$hc" \
		--node-monitor-period 2 --default-toleration-seconds "$TOLERATION_SECONDS" \
		--node-eviction-rate 200 --secondary-node-eviction-rate 20 >/dev/null
	region_row "$part-controller-manager" rm-controller-manager "$part" "$URSA_STATE/$part/controller-manager.log" \
		"leader:http://127.0.0.1:$hc/metrics"
done
for g in 1 2; do
	take_port gp
	start_gateway "gateway-$g" "$g" "$gp" "${ETCD_EPS[gateway]}" >/dev/null
	region_row "gateway-$g" gateway gateway "$URSA_STATE/gateway-$g/gateway.log" "https://127.0.0.1:$gp/readyz"
done
take_port HAPROXY_PORT
start_haproxy haproxy "$HAPROXY_PORT" >/dev/null
region_row haproxy haproxy gateway "$URSA_STATE/haproxy/haproxy.log" "https://127.0.0.1:$HAPROXY_PORT/healthz"
for name in "${R_NAMES[@]}"; do
	case ${R_KIND[$name]} in *controller-manager | scheduler) region_wait_probe "$name" 60 ;; esac
done
say "control plane up after $((($(now_ms) - PHASE_T) / 1000)) s"
{
	printf 'GATEWAY_URL=https://127.0.0.1:%s\n' "$HAPROXY_PORT"
	printf 'CA_FILE=%s\n' "$URSA_CA"
	printf 'SIGNING_KEY=%s\n' "$URSA_STATE/signing-key.pem"
	printf 'ADMIN_TOKEN_FILE=%s\n' "$URSA_STATE/admin.token"
	printf 'TP_URLS="'
	sep=""
	for part in "${TP_NAMES[@]}"; do printf '%s%s=%s' "$sep" "$part" "${TP_EPS[$part]}"; sep=" "; done
	printf '"\nRM_URLS="'
	sep=""
	for part in "${RM_NAMES[@]}"; do printf '%s%s=%s' "$sep" "$part" "${RM_EPS[$part]}"; sep=" "; done
	printf '"\n'
	printf 'GATEWAY_URLS="%s"\n' "$(for n in gateway-1 gateway-2; do printf '%s ' "${R_PROBE[$n]%/readyz}"; done | sed 's/ $//')"
	printf 'NODES=%s\nTENANTS=%s\n' "$NODES" "$TENANTS"
	printf 'HOLLOW_TAINT=ursa.io/hollow\n'
	printf 'NODE_GRACE_SECONDS=%s\nTOLERATION_SECONDS=%s\n' "$NODE_GRACE" "$TOLERATION_SECONDS"
	printf 'STATE_DIR=%s\nOUT=%s\n' "$URSA_STATE" "$OUT"
} >"$OUT/region.env.tmp"
mv "$OUT/region.env.tmp" "$OUT/region.env"
# the daemons are this shell's background jobs (start_daemon): no "Killed" notices when faults hit
disown -a
phase_end
say "region.env: $OUT/region.env (HAProxy https://127.0.0.1:$HAPROXY_PORT)"

# ---- phase 2: tenants, before the nodes (20,000 idle hollow nodes take over half of the 2 cores
# the tenants' creation would otherwise get: docs/scale.md) ----------------------------------
if [ "$START_ONLY" = 0 ]; then
	phase_begin tenants
	if run_step "$REGION_DRIVER" tenants --env "$OUT/region.env" --count "$TENANTS" --prefix t --concurrency 32; then
		phase_end
	else
		RC=$?
		phase_end "failed ($RC)"
		die "ursa-region tenants failed (exit $RC); see $OUT/progress.log"
	fi
fi

# ---- phase 3: the nodes ------------------------------------------------------------------
phase_begin nodes
# hollow kubelets: NODES spread over the zones, <= PER_HOLLOW per process, >= 2 per zone.
# One process registers at a time: a hollow kubelet registers its nodes in its heartbeat workers'
# first round, and if that round outlasts the node grace period (several processes registering at
# once on 2 busy cores: 20,000 nodes took ~160 s) the first nodes go Ready=Unknown before their
# first renewal, and stay so until their next status report (5 minutes).
T_HOLLOW=$(now_ms)
i=0
started=0
HOLLOW_ROWS=()
for rm in "${RM_NAMES[@]}"; do
	i=$((i + 1))
	nz=$((NODES / RMS + (i <= NODES % RMS ? 1 : 0)))
	procs=$(((nz + PER_HOLLOW - 1) / PER_HOLLOW))
	[ "$procs" -ge 2 ] || procs=2
	[ "$nz" -ge "$procs" ] || procs=1
	for ((k = 1; k <= procs; k++)); do
		HOLLOW_ROWS+=("z-$i-hollow-$k z-$i $rm $((nz / procs + (k <= nz % procs ? 1 : 0)))")
	done
done
for row in "${HOLLOW_ROWS[@]}"; do
	read -r hname hzone hrm hcount <<<"$row"
	start_hollow "$hname" "$hzone" "$hrm" "$hcount"
	started=$((started + hcount))
	[ "$started" -lt "$NODES" ] || break
	[ "$NODES" -gt "$PER_HOLLOW" ] || continue # small regions register in seconds: all at once
	wait_registered "$started" $((60 + hcount / 20)) || warn "$hname: not all its nodes registered yet; starting the next"
done
# registration: ~40 s per 10,000 nodes in one process on an idle machine (docs/benchmarks.md)
wait_nodes $((120 + NODES / 50))
NODES_READY_S=$((($(now_ms) - T_HOLLOW) / 1000))
say "all $NODES nodes Ready $NODES_READY_S s after the hollow kubelets started"
disown -a
phase_end

# the sampler and the supervisor, from here to the end
region_sampler &
BG_PIDS+=("$!")
region_supervisor &
BG_PIDS+=("$!")

if [ "$START_ONLY" = 1 ]; then
	phase_begin hold
	end=$(($(date +%s) + HOLD))
	while [ "$(date +%s)" -lt "$end" ]; do sleep 1; done
	phase_end
	exit 0
fi

# ---- phase 4: load under faults --------------------------------------------------------
phase_begin load
LOAD_T0=$(now_ms)
if [ "${#FAULT_LIST[@]}" -gt 0 ]; then
	region_faults "$LOAD_T0" "$DURATION" "${FAULT_LIST[@]}" &
	FAULTS_PID=$!
	BG_PIDS+=("$FAULTS_PID")
fi
load_rc=0
run_step "$REGION_DRIVER" load --env "$OUT/region.env" --out "$OUT" --duration "$DURATION" --rate "$RATE" \
	--burst-rate "$BURST_RATE" --burst-seconds "$BURST_SECONDS" --tenants "$TENANTS" \
	--active-share "$ACTIVE_SHARE" || load_rc=$?
if [ "$load_rc" = 0 ]; then phase_end; else phase_end "failed ($load_rc)"; RC=$load_rc; fi

# no fault after the load; every killed process healed before verifying (bounded)
if [ -n "${FAULTS_PID:-}" ] && kill -0 "$FAULTS_PID" 2>/dev/null; then
	kill -TERM "$FAULTS_PID" 2>/dev/null || true
	LIMITS+=("the fault schedule was cut short: the load ended first")
fi
phase_begin heal
deadline=$(($(date +%s) + HOLLOW_RESTART_DELAY + 180))
while :; do
	pending=$(pending_faults)
	[ "$pending" = 0 ] && break
	if [ "$(date +%s)" -ge "$deadline" ]; then
		LIMITS+=("$pending killed process(es) not healed by the end: $(ls "$URSA_STATE/faults" | tr '\n' ' ')")
		warn "not healed: $(ls "$URSA_STATE/faults" | tr '\n' ' ') (see faults.tsv and their logs)"
		break
	fi
	say "waiting for $pending killed process(es) to heal: $(ls "$URSA_STATE/faults" | tr '\n' ' ')"
	sleep 5
done
phase_end

# ---- phase 5: verify ----------------------------------------------------------------------
phase_begin verify
verify_rc=0
run_step "$REGION_DRIVER" verify --env "$OUT/region.env" --out "$OUT" --wait 120 || verify_rc=$?
if [ "$verify_rc" = 0 ]; then phase_end; else phase_end "failed ($verify_rc)"; [ "$RC" != 0 ] || RC=$verify_rc; fi

# ---- phase 6: report ----------------------------------------------------------------------
# the sampler stops first, so that the report reads complete files
for pid in "${BG_PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
for pid in "${BG_PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
BG_PIDS=()
# and the region itself, unless kept: the report reads files only, and a region of 20,000 nodes
# left running made it take 87 s instead of 6
[ "$KEEP" = 1 ] || region_stop_all
write_run_json
phase_begin report
if [ -f "$ROOT/bench/region-report.py" ]; then
	rep_rc=0
	run_step /usr/bin/python3 "$ROOT/bench/region-report.py" "$OUT" || rep_rc=$?
	if [ "$rep_rc" = 0 ]; then phase_end; else phase_end "failed ($rep_rc)"; [ "$RC" != 0 ] || RC=$rep_rc; fi
else
	phase_end "skipped (no bench/region-report.py)"
fi
exit "$RC"
}
