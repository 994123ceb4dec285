#!/usr/bin/python3
"""The capacity model of docs/capacity.md: how many tenant partitions (TPs), resource managers
(RMs), gateway instances and etcd clusters a region needs, and which limit binds for each.

usage: bench/capacity-model.py [--inputs] [--markdown] [--plot PNG] [--hosts H] [--pods P]
                               [--tenants T]

  (no option)   the summary for the seeds' region (300,000 hosts, 9,000,000 pods, 1,000,000
                tenants), as text
  --markdown    the Markdown that docs/capacity.md includes between its `capacity-model` markers
                (inputs, results, limits, scaling tables); regenerate the doc's section with it
  --update-doc MD   write that Markdown between MD's capacity-model markers (docs/capacity.md)
  --inputs      the input table only
  --plot PNG    also draw the components needed as the region grows (docs/capacity.png)
  --hosts/--pods/--tenants   another region
  --set KEY=VALUE             another value for an input (the tables then say nothing of its source)

Every number the model uses is a row of INPUTS below: a figure measured in docs/ (file, section,
the figure as written there), a design fact of docs/, a published figure (cited), or an
assumption with a one-line reason. Rows of kind "region-run" are figures that the region
simulation (bench/run-region.sh, docs/scale.md) will measure again; until then they hold the
value of docs/benchmarks.md named in the row. Nothing else goes into the arithmetic.

The model is arithmetic on per-operation costs: CPU microseconds per operation and bytes per
object, as measured on the project's 2-vCPU machine, multiplied by the region's rates and counts
and divided by a host's usable cores and memory. It is deterministic and runs in well under a
second (the plot needs matplotlib, which is imported only for --plot).
"""
import argparse
import math
import sys

MEASURED = "measured"      # a figure of docs/
DESIGN = "design"          # how Ursa is deployed or built, as docs/ says
PUBLISHED = "published"    # someone else's published figure (cited)
ASSUMPTION = "assumption"  # ours, with its reason
REGION_RUN = "region-run"  # measured in docs/, to be superseded by docs/scale.md

BM = "docs/benchmarks.md"
ARKTOS = "../shared/research/arktos-facts.md"
SCALE_NOTE = "docs/scale.md (bench/run-region.sh) will supersede this figure"


class Input:
    __slots__ = ("key", "value", "unit", "kind", "source", "written", "use")

    def __init__(self, key, value, unit, kind, source, written, use):
        self.key = key
        self.value = value
        self.unit = unit
        self.kind = kind
        self.source = source    # file and section heading, or the reason of an assumption
        self.written = written  # the figure as written there ("" for an assumption)
        self.use = use          # what the model does with it


def I(key, value, unit, kind, source, written, use):  # noqa: E743 (a table row)
    return Input(key, value, unit, kind, source, written, use)


INPUTS = [
    # --- The region (the seeds' target) ---
    I("region_hosts", 300_000, "hosts", DESIGN, "seed 000_b8a660ed5342d03f.txt, \"Requirements\"",
      "support 1M tenants, 300K+ hosts, 9M pods", "the region's hosts (nodes)"),
    I("region_pods", 9_000_000, "pods", DESIGN, "seed 000_b8a660ed5342d03f.txt, \"Requirements\"",
      "9M pods (using the 1:30 host:pod ratio from Kubernetes community)", "pods held by the region"),
    I("region_tenants", 1_000_000, "tenants", DESIGN, "seed 000_b8a660ed5342d03f.txt, \"Requirements\"",
      "support 1M tenants", "tenants of the region"),

    # --- Deployment (docs/operations.md, "Hosts") ---
    I("tp_hosts", 3, "hosts per TP", DESIGN, "docs/operations.md, \"Hosts\"",
      "per tenant partition tp-N, 3 hosts: ursa-etcd, ursa-tp-apiserver, ursa-tp-controller-manager, "
      "ursa-scheduler", "each TP host runs an etcd member and an API server; one runs the active CM and scheduler"),
    I("rm_hosts", 3, "hosts per RM", DESIGN, "docs/operations.md, \"Hosts\"",
      "per zone's resource manager rm-Z, 3 hosts", "each RM host runs an etcd member and an RM API server"),
    I("gw_min", 2, "gateway hosts", DESIGN, "docs/operations.md, \"Hosts\"", "front door, 2 or 3 hosts",
      "fewest gateway instances; the gateway's 3-member etcd runs on 3 of them"),

    # --- Hardware and how per-core figures are extrapolated (assumptions) ---
    I("host_cores", 32, "cores", ASSUMPTION,
      "a common 2-socket control-plane server; Arktos' scale tests used n1-highmem-32 masters (" + ARKTOS + " §2)",
      "", "cores of every control-plane host"),
    I("host_mem_gib", 128, "GiB", ASSUMPTION, "a common control-plane server size (ours)", "",
      "memory of every control-plane host"),
    I("headroom", 0.5, "share", ASSUMPTION,
      "plan at half of a host's cores and memory: one host of three may fail and its load move, bursts",
      "", "usable share of cores and memory, and of etcd's write ceiling"),
    I("core_efficiency", 0.7, "share", ASSUMPTION,
      "per-op CPU was measured on 2 vCPUs; locks, etcd's raft loop and memory bandwidth on 32 cores are "
      "not measured, so a core is taken to do 70 % of what it did there", "",
      "usable cores x this = cores of the measured speed"),
    I("fd_limit", 1_048_576, "descriptors", ASSUMPTION,
      "a production host raises RLIMIT_NOFILE (the test machine's hard limit is 20,000: " + BM +
      ", \"Watch fan-out through one gateway\")", "", "descriptors per process"),
    I("zones", 3, "zones", ASSUMPTION,
      "a region of 3 availability zones; one RM per zone at least (Arktos' advice, " + ARKTOS + " §2)", "",
      "fewest RMs"),

    # --- Workload (assumptions) ---
    I("churn_pods_per_s", 2_000, "pods/s", ASSUMPTION,
      "region-wide pod creates/s, as many deletes; Arktos' goal is a scheduler of 2000 pods/s (" + ARKTOS +
      " §3, scalability goals)", "", "pod lifecycles per second"),
    I("objects_per_pod", 2.0, "objects", ASSUMPTION,
      "each pod comes with about one more object of its size (its ReplicaSet's share, ConfigMaps, Secrets, "
      "Services, Endpoints)", "", "objects held per pod"),
    I("objects_per_tenant", 20, "objects", ASSUMPTION,
      "a tenant's namespaces (3), their service accounts and root-CA ConfigMaps, its default roles and "
      "bindings", "", "objects held per tenant, even an idle one"),
    I("tenant_object_share", 0.3, "x a pod", ASSUMPTION,
      "a tenant's objects (namespaces, service accounts, small ConfigMaps, roles) are about a third of a "
      "pod's bytes; the region run's etcd sizes after its tenants phase (etcd.tsv) will measure it", "",
      "bytes of a tenant's object, cached and stored, relative to a pod's"),
    I("etcd_db_overhead", 2.0, "x", ASSUMPTION,
      "bbolt's pages and the revisions kept until compaction double the stored bytes (not measured)", "",
      "etcd db bytes = stored bytes x this; etcd's RSS taken as its db size"),
    I("requests_per_tenant_s", 0.05, "req/s", ASSUMPTION,
      "most of a million tenants are idle; one request per 20 s on average (CI, kubectl, in-cluster clients)",
      "", "requests through the front door"),
    I("list_share", 0.1, "share", ASSUMPTION, "one request in ten is a LIST (of at most one 500-object page)",
      "", "request mix"),
    I("watches_per_tenant", 1.0, "watches", ASSUMPTION,
      "watch fan-out: one held watch per tenant on average (a kubectl -w, an informer of a tenant's controller)",
      "", "client watches through the gateways and into the TPs"),
    I("kubelet_events_per_pod", 5, "events", ASSUMPTION,
      "a pod's events on its node's watch: bound, 2 status updates, deletion mark, deleted", "",
      "watch events delivered to kubelets per pod lifecycle"),
    I("tenant_events_per_pod", 6, "events", ASSUMPTION,
      "created, bound, 2 status updates, deletion mark, deleted; each reaches one tenant watch on average", "",
      "watch events delivered to tenants' watches per pod lifecycle"),
    I("etcd_writes_per_pod", 6, "writes", ASSUMPTION,
      "create, binding, 2 status updates, deletion mark, delete", "", "TP etcd writes per pod lifecycle"),
    I("lease_renew_s", 10, "s", MEASURED, BM + ", \"Resource manager heartbeat capacity (issue 3)\"",
      "N nodes renewing their Lease every 10 s", "a host's heartbeat period (ursa-kubelet's default too)"),
    I("node_status_s", 300, "s", ASSUMPTION,
      "ursa-kubelet posts node status every 300 s and on change (--node-status-report-seconds default)", "",
      "node status writes to the RMs"),
    I("restart_budget_s", 60, "s", ASSUMPTION,
      "a restarted partition API server should be ready within a minute (its partner serves meanwhile)", "",
      "caps the objects one TP holds"),
    I("node_object_kib", 3.48, "KiB", ASSUMPTION,
      "a hollow node and its lease cached like a pod (" + BM + " issue 2 figure); a real node's status with "
      "its image list can be ~55 KB (" + ARKTOS + " §5), 16x more", "",
      "memory per node object in the RM API server and in every scheduler"),
    I("sched_kib_per_object", 3.48, "KiB", ASSUMPTION,
      "the scheduler's memory per cached node or pod was not measured; taken as the API server's per pod", "",
      "scheduler memory"),

    # --- Tenant partition: measured ---
    I("api_us_per_create", 190, "us CPU", MEASURED,
      BM + ", \"Creates: where a create's CPU goes, and cuts\", re-run of 2026-11-27 12:51 UTC, 8 clients",
      "create B ... API server µs CPU/op 190", "API server CPU per pod create (and per delete, assumed equal)"),
    I("etcd_us_per_create", 136, "us CPU", REGION_RUN,
      BM + ", \"Creates: ...\", re-run of 2026-11-27 12:51 UTC, 8 clients (one-member etcd). " +
      "Region run: etcd CPU per write in a 3-member cluster; " + SCALE_NOTE,
      "create B ... etcd µs CPU/op 136", "etcd CPU per create (and per delete, assumed equal)"),
    I("tp_creates_per_s", 3_848, "creates/s", MEASURED,
      BM + ", \"Creates: ...\", re-run of 2026-11-27 12:51 UTC", "create B, 8 clients: 3848 ok/s, p99 7.05 ms",
      "largest create rate measured on one TP (2 cores): the extrapolation column"),
    I("api_us_per_pod_scheduled", 360, "us CPU", MEASURED,
      BM + ", \"Run of 2026-11-22 03:36–03:43 UTC (current tree)\"", "TP API server ... per pod 0.48 → 0.36 ms",
      "TP API server CPU per pod scheduled (binding, kubelets' status PATCHes, watch fan-out)"),
    I("etcd_us_per_pod_scheduled", 200, "us CPU", MEASURED,
      BM + ", \"Run of 2026-11-22 03:36–03:43 UTC (current tree)\"", "TP's etcd ... 0.56 → 0.20 ms",
      "TP etcd CPU per pod scheduled"),
    I("sched_us_per_pod", 220, "us CPU", MEASURED, BM + ", \"Run of 2026-11-22 03:36–03:43 UTC (current tree)\"",
      "scheduler ... 0.24 → 0.22 ms", "scheduler CPU per pod"),
    I("sched_pods_per_s", 1_864, "pods/s", REGION_RUN,
      BM + ", \"No regression: the tenant map and the scheduler\" (5,000 hollow nodes, 2 RMs, 2 cores). " +
      "Region run: scheduling throughput with 2 TPs sharing the nodes; " + SCALE_NOTE,
      "B ... (median 1,864, 1.10× A)", "one TP's scheduling rate (not extrapolated)"),
    I("sched_nodes_measured", 50_000, "nodes", MEASURED, BM + ", \"Scheduler (issue 4)\", sched-decision",
      "12.8 / 24.3 / 29.7 µs mean per plain decision at 500 / 5,000 / 50,000 nodes",
      "largest node count a decision was timed at (flat beyond a few thousand)"),
    I("cm_us_per_pod", 1_330, "us CPU", MEASURED,
      BM + ", \"Jobs, CronJobs and Deployments on hollow nodes (issue 17)\", re-run with listers",
      "Deployments 1,000 × 10 | ... all available in 65.8 s | 186.5 → 13.3 s (CM CPU)",
      "controller manager CPU per pod: 13.3 s / 10,000 pods"),
    I("api_kib_per_object", 3.48, "KiB", MEASURED, BM + ", \"Tenant-partition API server (issue 2)\"",
      "Per cached pod ... 3.48 KiB", "API server memory per cached object"),
    I("api_base_mib", 12.3, "MiB", MEASURED, BM + ", \"Tenant-partition API server (issue 2)\"",
      "RSS, fresh and idle 12.3 MiB", "API server base memory"),
    I("cm_kb_per_object", 22.5, "KB", MEASURED,
      BM + ", \"Jobs, CronJobs and Deployments ...\", \"The controller manager's memory\"",
      "a pod of this benchmark (2.6 KB of JSON) takes 22.5 KB of heap", "controller manager memory per object"),
    I("stored_bytes_per_object", 2_328, "bytes", MEASURED, BM + ", \"Creates: where a create's CPU goes, and cuts\"",
      "values the size a 1,500-byte pod has once stored: 2,328 bytes", "etcd bytes per object"),
    I("restart_ready_s", 11.0, "s", MEASURED,
      BM + ", \"Restarts: kill -9 of a partition holding 100,000 pods and 50,000 configmaps\"",
      "B (this session) | 11.0 s (/readyz after)", "a restarted API server's time to ready ..."),
    I("restart_objects", 150_000, "objects", MEASURED,
      BM + ", \"Restarts: kill -9 of a partition holding 100,000 pods and 50,000 configmaps\"",
      "listed 150,000 objects into its caches", "... for this many objects (taken linear)"),
    I("tp_pods_measured", 100_000, "pods", MEASURED,
      BM + ", \"Restarts: kill -9 of a partition holding 100,000 pods and 50,000 configmaps\"",
      "100,000 pods bound to the hollow nodes and 50,000 configmaps", "largest pod count one TP held"),
    I("gw_get_per_s", 4_737, "req/s", MEASURED, BM + ", \"Re-run on a quiet machine, 2026-11-27 12:48 UTC\"",
      "GET one pod | 4,737", "largest request rate one gateway served (2 cores, with the TP beside it)"),
    I("conn_watch_bytes", 66_794, "bytes", MEASURED, BM + ", \"Watches by the hundred thousand\"",
      "10,000 watches of a TLS connection each ... 66,794 bytes per watch",
      "TP API server memory per watch on its own connection (kubelets, tenants via the gateway)"),
    I("get_us_no_watches", 253, "us CPU", MEASURED, BM + ", \"Idle watches and the cost of a request\"",
      "2 (as built) | 0 | 3,317 | 253 µs", "a GET's CPU without held connections ..."),
    I("get_us_10k_watches", 512, "us CPU", MEASURED, BM + ", \"Idle watches and the cost of a request\"",
      "2 (as built) | 10,000 | 1,954 | 512 µs",
      "... and with 10,000 idle watch connections: each resume walks them (taken linear in their count)"),
    I("watches_measured", 10_000, "connections", MEASURED, BM + ", \"Idle watches and the cost of a request\"",
      "held 10,000 idle watches on the same TP", "largest count of watch connections measured on one server"),
    I("tp_us_per_get", 211, "us CPU", MEASURED, BM + ", \"The gateway's own upstream connections\"",
      "GET | direct | ... | (TP 211)", "TP API server CPU per GET"),
    I("tp_us_per_list_page", 1_700, "us CPU", MEASURED, BM + ", \"Consistent lists from the watch cache\"",
      "500-pod page ... JSON ... 1.7 ms/page", "TP API server CPU per LIST (one page)"),
    I("api_us_per_event", 13, "us CPU", MEASURED, BM + ", \"Watch fan-out through one gateway\"",
      "against the API server's 2.6 s (13 µs each)", "API server CPU per watch event delivered"),

    # --- Resource manager: measured ---
    I("rm_nodes_measured", 20_000, "nodes", MEASURED,
      "docs/scale.md, \"40,000 hollow nodes (2026-11-27, evening\" (the region simulation: 2 RMs, each with "
      "two API servers on a 3-member etcd, sharing 2 cores with the whole region under load; it supersedes "
      "docs/benchmarks.md's 10,000 nodes of one RM)",
      "40,000 hollow nodes in 8 processes (20,000 per resource manager)",
      "largest node count one RM held: the extrapolation column"),
    I("renewal_us_api", 420, "us CPU", MEASURED, BM + ", \"Run of 2026-11-22 03:36–03:43 UTC (current tree)\"",
      "current ... → 1.12 ms per renewal (of which the etcds 0.7)",
      "RM API server CPU per lease renewal: 1.12 - 0.7 ms (also used per node status write)"),
    I("renewal_us_etcd", 160, "us CPU", MEASURED,
      BM + ", \"Heartbeats share txns: run of 2026-11-26 15:24–15:33 UTC\" (250 renewals/s per RM)",
      "each RM etcd's CPU fell from 0.4–0.6 to 0.2 CPU-s",
      "etcd CPU per renewal since renewals share txns: 0.2 CPU-s / (250/s x 5 s)"),
    I("reservations_per_pod", 335 / 5_000, "writes", MEASURED,
      BM + ", \"Run of 2026-11-22 03:36–03:43 UTC (current tree)\"",
      "reservation writes for 5,000 pods | ... | 320–347", "node writes to the RMs per pod scheduled"),
    I("etcd_puts_per_s", 6_155, "puts/s", MEASURED, BM + ", \"Creates: ...\", re-run of 2026-11-27 12:51 UTC",
      "64 | etcd put | 6155", "etcd's own put rate on 2 cores (reference only)"),

    # --- Gateway: measured ---
    I("gw_us_per_get", 58, "us CPU", REGION_RUN,
      BM + ", \"Re-run on a quiet machine, 2026-11-27 12:48 UTC\" (under \"Restarts ...\"). Region run: gateway "
      "CPU per request under the mixed load through HAProxy; " + SCALE_NOTE,
      "GET one pod | ... | 58 / 80 / 60", "gateway CPU per GET"),
    I("gw_us_per_list", 275, "us CPU", MEASURED, BM + ", \"Re-run on a quiet machine, 2026-11-27 12:48 UTC\"",
      "LIST 100 pods | ... | 275 / 281 / 253", "gateway CPU per LIST"),
    I("haproxy_us_per_get", 60, "us CPU", MEASURED, BM + ", \"Re-run on a quiet machine, 2026-11-27 12:48 UTC\"",
      "GET one pod | ... | 58 / 80 / 60", "HAProxy (TLS, in front of the gateways, same hosts) CPU per GET"),
    I("haproxy_us_per_list", 253, "us CPU", MEASURED, BM + ", \"Re-run on a quiet machine, 2026-11-27 12:48 UTC\"",
      "LIST 100 pods | ... | 275 / 281 / 253", "HAProxy CPU per LIST"),
    I("gw_kib_per_watch", 46, "KiB", MEASURED, BM + ", \"Watch fan-out through one gateway\"",
      "gateway RSS 456 MiB (46 KiB per watch", "gateway memory per held watch"),
    I("gw_us_per_event", 23, "us CPU", MEASURED, BM + ", \"Watch fan-out through one gateway\"",
      "gateway CPU 4.5 s for 198,720 deliveries (23 µs each)", "gateway CPU per watch event delivered"),
    I("gw_watches_measured", 10_000, "watches", MEASURED, BM + ", \"Watch fan-out through one gateway\"",
      "10,000 watches through one gateway instance", "largest watch count one gateway held"),
    I("gw_map_mb_per_m", 78.7, "MB", MEASURED, BM + ", \"No regression: the tenant map and the scheduler\"",
      "+78.7 MB RSS both", "tenant map memory per 1,000,000 tenants, on every gateway"),
    I("gw_map_load_s", 2.99, "s", MEASURED, BM + ", \"No regression: the tenant map and the scheduler\"",
      "load 3.18 / 2.99 s against 2.96 / 2.93 s", "time to load 1,000,000 tenants at a gateway's start"),

    # --- Published ceilings the model uses ---
    I("etcd_mods_ceiling", 50_000, "writes/s", PUBLISHED, ARKTOS + " §5, k8s-1m (bchess.github.io/k8s-1m)",
      "Stock etcd does about 50K modifications/s", "an etcd cluster's write ceiling (before headroom)"),
    I("etcd_quota_bytes", 8 * 1024 ** 3, "bytes", PUBLISHED, ARKTOS + " §2, GCE scale-out setup",
      "ETCD_QUOTA_BACKEND_BYTES=8589934592", "an etcd cluster's db size limit"),

    # --- Other region-run figures (checks, not counts) ---
    I("pod_startup_p99_ms", 1_610, "ms", REGION_RUN,
      BM + ", \"Deployment roll-out and pod startup latency (issue 5)\" (1 TP, 2 RMs, 1,000 hollow nodes). "
      "Region run: pod startup p99 at 100 pods/s; " + SCALE_NOTE,
      "p99 1,610 ms", "checked against the SLO (5 s); not used in the counts"),
]

# Comparisons (docs/capacity.md; not inputs of the arithmetic).
K8S_LIMITS = dict(nodes=5_000, pods=150_000, containers=300_000, pods_per_node=110)
K8S_SOURCE = ("kubernetes.io/docs/setup/best-practices/cluster-large/ (\"Considerations for large clusters\"): "
              "No more than 110 pods per node, 5,000 nodes, 150,000 total pods, 300,000 total containers; "
              "also " + ARKTOS + " §5")

V = {i.key: i.value for i in INPUTS}
if len(V) != len(INPUTS):
    raise SystemExit("capacity-model: duplicate input key")


class Limit:
    """One limit of one component: used against capacity (same unit)."""
    __slots__ = ("name", "used", "cap", "unit", "what")

    def __init__(self, name, used, cap, unit, what):
        self.name, self.used, self.cap, self.unit, self.what = name, used, cap, unit, what

    @property
    def util(self):
        return self.used / self.cap if self.cap > 0 else math.inf


def usable_cores(v):
    """Cores of the measured machine's speed that one host may spend."""
    return v["host_cores"] * v["headroom"] * v["core_efficiency"]


def usable_bytes(v):
    return v["host_mem_gib"] * 1024 ** 3 * v["headroom"]


def walk_ns_per_conn(v):
    """CPU added to every resume of a suspended connection, per watch connection the server holds."""
    return (v["get_us_10k_watches"] - v["get_us_no_watches"]) * 1000.0 / v["watches_measured"]


def tp_limits(v, hosts, pods, tenants, n):
    """Limits of one tenant partition when the region's pods, tenants and churn are spread over n TPs.
    Every host's kubelet keeps one pod watch (its own connection) on every TP."""
    n_api = v["tp_hosts"]
    pods_tp, tenants_tp = pods / n, tenants / n
    churn = v["churn_pods_per_s"] * (pods / V["region_pods"]) / n  # churn scales with the pods held
    reqs = tenants_tp * v["requests_per_tenant_s"]
    tenant_watches = tenants_tp * v["watches_per_tenant"]
    objects = pods_tp * v["objects_per_pod"] + tenants_tp * v["objects_per_tenant"]
    pod_sized = pods_tp * v["objects_per_pod"] + tenants_tp * v["objects_per_tenant"] * v["tenant_object_share"]
    conns_per_api = (hosts + tenant_watches) / n_api

    events = churn * (v["kubelet_events_per_pod"] + v["tenant_events_per_pod"])
    resumes_per_api = (reqs + events) / n_api
    ls = v["list_share"]
    walk_us = resumes_per_api * conns_per_api * walk_ns_per_conn(v) / 1000.0
    api_us = (churn * (2 * v["api_us_per_create"] + v["api_us_per_pod_scheduled"])
              + reqs * ((1 - ls) * v["tp_us_per_get"] + ls * v["tp_us_per_list_page"])
              + events * v["api_us_per_event"]) / n_api + walk_us
    etcd_us = churn * (2 * v["etcd_us_per_create"] + v["etcd_us_per_pod_scheduled"])
    cm_us = churn * v["cm_us_per_pod"]
    sched_us = churn * v["sched_us_per_pod"]
    host_cores = (api_us + etcd_us + cm_us + sched_us) / 1e6

    db = pod_sized * v["stored_bytes_per_object"] * v["etcd_db_overhead"]
    api_mem = (v["api_base_mib"] * 1024 ** 2 + pod_sized * v["api_kib_per_object"] * 1024
               + conns_per_api * v["conn_watch_bytes"])
    cm_mem = pod_sized * v["cm_kb_per_object"] * 1000
    sched_mem = (hosts + pods_tp) * v["sched_kib_per_object"] * 1024
    host_mem = api_mem + db + cm_mem + sched_mem
    writes = churn * v["etcd_writes_per_pod"]
    ready_s = objects * v["restart_ready_s"] / v["restart_objects"]
    return [
        Limit("TP host CPU", host_cores, usable_cores(v), "cores",
              "API server {:.2f} (of which the walk of held connections {:.2f}) + etcd leader {:.2f} + active "
              "controller manager {:.2f} + scheduler {:.2f}".format(
                  api_us / 1e6, walk_us / 1e6, etcd_us / 1e6, cm_us / 1e6, sched_us / 1e6)),
        Limit("TP host memory", host_mem / 1024 ** 3, usable_bytes(v) / 1024 ** 3, "GiB",
              "API server {:.1f} (of which watch connections {:.1f}) + etcd {:.1f} + controller manager {:.1f} "
              "+ scheduler {:.1f} GiB".format(api_mem / 2 ** 30, conns_per_api * v["conn_watch_bytes"] / 2 ** 30,
                                              db / 2 ** 30, cm_mem / 2 ** 30, sched_mem / 2 ** 30)),
        Limit("TP etcd db size", db / 1024 ** 3, v["etcd_quota_bytes"] / 1024 ** 3, "GiB",
              "objects x stored bytes x overhead, against the quota"),
        Limit("TP etcd writes", writes, v["etcd_mods_ceiling"] * v["headroom"], "writes/s",
              "pod lifecycle writes, against etcd's published ceiling"),
        Limit("TP scheduling rate", churn, v["sched_pods_per_s"] * v["headroom"], "pods/s",
              "pods created per second, against one scheduler's measured rate"),
        Limit("TP restart to ready", ready_s, v["restart_budget_s"], "s",
              "a restarted API server lists every object before it is ready"),
        Limit("TP watch connections", conns_per_api, v["fd_limit"], "per API server",
              "every host's kubelet + tenants' watches, one connection each, against descriptors"),
    ]


def rm_limits(v, hosts, pods, m, n_tp):
    """Limits of one resource manager holding hosts/m nodes."""
    nodes = hosts / m
    renewals = nodes / v["lease_renew_s"]
    status = nodes / v["node_status_s"]
    churn = v["churn_pods_per_s"] * (pods / V["region_pods"])
    reservations = churn * v["reservations_per_pod"] / m
    writes = renewals + status + reservations
    api_part = v["renewal_us_api"]
    # node changes (status, reservations) reach every TP's scheduler and controller manager
    fanout = (status + reservations) * 2 * n_tp * v["api_us_per_event"]
    api_us = (writes * api_part + fanout) / v["rm_hosts"]
    etcd_us = writes * v["renewal_us_etcd"]
    host_cores = (api_us + etcd_us) / 1e6
    objects = nodes * 2  # node and lease
    db = objects * v["stored_bytes_per_object"] * v["etcd_db_overhead"]
    api_mem = (v["api_base_mib"] * 1024 ** 2 + objects * v["node_object_kib"] * 1024
               + nodes / v["rm_hosts"] * v["conn_watch_bytes"])
    return [
        Limit("RM host CPU", host_cores, usable_cores(v), "cores",
              "etcd leader {:.2f} (renewals, node status, reservations) + RM API server {:.2f} (its share of "
              "them, node events to every TP's scheduler and controller manager)".format(
                  etcd_us / 1e6, api_us / 1e6)),
        Limit("RM host memory", (api_mem + db) / 1024 ** 3, usable_bytes(v) / 1024 ** 3, "GiB",
              "nodes and leases cached, kubelets' connections, etcd"),
        Limit("RM etcd writes", writes, v["etcd_mods_ceiling"] * v["headroom"], "writes/s",
              "heartbeats + status + reservations, against etcd's published ceiling"),
        Limit("RM etcd db size", db / 1024 ** 3, v["etcd_quota_bytes"] / 1024 ** 3, "GiB", "nodes and leases"),
        Limit("RM kubelet connections", nodes / v["rm_hosts"], v["fd_limit"], "per API server",
              "one kept connection per host"),
    ]


def gw_limits(v, pods, tenants, g):
    """Limits of one gateway host (a gateway with workers on every core, and HAProxy) of g."""
    ls = v["list_share"]
    reqs = tenants * v["requests_per_tenant_s"] / g
    churn = v["churn_pods_per_s"] * (pods / V["region_pods"])
    events = churn * v["tenant_events_per_pod"] * v["watches_per_tenant"] / g
    watches = tenants * v["watches_per_tenant"] / g
    req_us = reqs * ((1 - ls) * (v["gw_us_per_get"] + v["haproxy_us_per_get"])
                     + ls * (v["gw_us_per_list"] + v["haproxy_us_per_list"]))
    us = req_us + events * v["gw_us_per_event"]
    mem = tenants / 1e6 * v["gw_map_mb_per_m"] * 1e6 + watches * v["gw_kib_per_watch"] * 1024
    return [
        Limit("gateway host CPU", us / 1e6, usable_cores(v), "cores",
              "requests {:.2f} (gateway + HAProxy), watch events {:.2f}".format(
                  req_us / 1e6, events * v["gw_us_per_event"] / 1e6)),
        Limit("gateway host memory", mem / 1024 ** 3, usable_bytes(v) / 1024 ** 3, "GiB",
              "the tenant map {:.2f} + held watches {:.1f} GiB".format(
                  tenants / 1e6 * v["gw_map_mb_per_m"] * 1e6 / 2 ** 30, watches * v["gw_kib_per_watch"] / 2 ** 20)),
        Limit("gateway watch descriptors", 2 * watches, v["fd_limit"], "descriptors",
              "two per watch (client side and partition side)"),
    ]


MAX_COUNT = 100_000


def smallest(limits_of, lo):
    """The smallest count >= lo at which every limit holds, the limits there, and the limit that
    forced the count (the highest at count - 1; None when lo already holds). Every limit falls or
    stays as the count grows, so a binary search finds it; when even MAX_COUNT does not hold, the
    count is None and the reason names the limit that no count brings under its capacity."""
    top = limits_of(MAX_COUNT)
    if not all(x.util <= 1.0 for x in top):
        return None, top, "no count suffices: " + max(top, key=lambda x: x.util).name
    a, b = lo, MAX_COUNT  # answer in [a, b]
    while a < b:
        mid = (a + b) // 2
        if all(x.util <= 1.0 for x in limits_of(mid)):
            b = mid
        else:
            a = mid + 1
    binding = max(limits_of(a - 1), key=lambda x: x.util).name if a > lo else None
    return a, limits_of(a), binding


def model(v=None, hosts=None, pods=None, tenants=None):
    """The region's components and their limits. Returns a dict."""
    v = dict(V if v is None else v)
    hosts = v["region_hosts"] if hosts is None else hosts
    pods = v["region_pods"] if pods is None else pods
    tenants = v["region_tenants"] if tenants is None else tenants
    n_tp, tp, tp_bind = smallest(lambda n: tp_limits(v, hosts, pods, tenants, n), 1)
    if n_tp is None:
        return dict(hosts=hosts, pods=pods, tenants=tenants, tp=None, tp_bind=tp_bind, tp_limits=tp)
    n_rm, rm, rm_bind = smallest(lambda m: rm_limits(v, hosts, pods, m, n_tp), v["zones"])
    n_gw, gw, gw_bind = smallest(lambda g: gw_limits(v, pods, tenants, g), v["gw_min"])
    r = dict(hosts=hosts, pods=pods, tenants=tenants,
             tp=n_tp, tp_limits=tp, tp_bind=tp_bind or "none (one suffices)",
             rm=n_rm, rm_limits=rm, rm_bind=rm_bind or "none: one per zone (%d)" % v["zones"],
             gw=n_gw, gw_limits=gw, gw_bind=gw_bind or "none: the minimum for availability (%d)" % v["gw_min"])
    r["etcd"] = n_tp + n_rm + 1 if n_rm else None
    r["cp_hosts"] = (n_tp * v["tp_hosts"] + n_rm * v["rm_hosts"] + max(n_gw, 3)) if n_rm and n_gw else None
    return r


# --- output ---

def fmt(x):
    if x is None:
        return "-"
    if isinstance(x, str):
        return x
    if isinstance(x, int):
        return "{:,}".format(x)
    if x == 0:
        return "0"
    a = abs(x)
    if a >= 100:
        return "{:,.0f}".format(x)
    if a >= 10:
        return "{:.1f}".format(x)
    if a >= 1:
        return "{:.2f}".format(x)
    return "{:.3g}".format(x)


def binding_of(lims):
    return max(lims, key=lambda x: x.util)


def inputs_table():
    out = ["| input | value | unit | kind | source (file, section) or reason | as written there |",
           "| --- | ---: | --- | --- | --- | --- |"]
    for i in INPUTS:
        w = i.written.replace("|", "\\|")
        s = i.source.replace("|", "\\|")
        val = fmt(V[i.key]) if V[i.key] == i.value else "{} (set; was {})".format(fmt(V[i.key]), fmt(i.value))
        out.append("| `{}` | {} | {} | {} | {} | {} |".format(i.key, val, i.unit, i.kind, s,
                                                              ("\"" + w + "\"") if w else ""))
    return "\n".join(out)


def results_table(r):
    v = V
    per_tp = r["pods"] / r["tp"], r["tenants"] / r["tp"]
    nodes_rm = r["hosts"] / r["rm"]
    tp_ext = per_tp[0] * v["churn_pods_per_s"] / v["region_pods"]
    conns = (r["hosts"] + per_tp[1] * v["watches_per_tenant"]) / v["tp_hosts"]
    gw_w = r["tenants"] * v["watches_per_tenant"] / r["gw"]
    rows = [
        ("tenant partitions", r["tp"], "{} hosts each: {}".format(v["tp_hosts"], "etcd member + API server; "
                                                                 "active CM and scheduler on one"),
         "{:,.0f} pods, {:,.0f} tenants, {:.0f} pod creates/s each".format(per_tp[0], per_tp[1], tp_ext),
         r["tp_bind"],
         "{:,.0f} watch connections per API server ({:.0f}x the {:,} measured)".format(
             conns, conns / v["watches_measured"], v["watches_measured"])),
        ("resource managers", r["rm"], "{} hosts each: etcd member + RM API server (+ CM)".format(v["rm_hosts"]),
         "{:,.0f} nodes, {:,.0f} lease renewals/s each".format(nodes_rm, nodes_rm / v["lease_renew_s"]),
         r["rm_bind"],
         "{:.1f}x the {:,} nodes one RM held on 2 cores".format(nodes_rm / v["rm_nodes_measured"],
                                                                v["rm_nodes_measured"])),
        ("gateway instances", r["gw"], "1 host each: gateway (workers) + HAProxy; the gateway etcd on 3 of them",
         "{:,.0f} req/s, {:,.0f} watches each".format(r["tenants"] * v["requests_per_tenant_s"] / r["gw"], gw_w),
         r["gw_bind"],
         "{:.0f}x the {:,} watches one gateway held".format(gw_w / v["gw_watches_measured"],
                                                            v["gw_watches_measured"])),
        ("etcd clusters", r["etcd"], "3 members each (one per TP, one per RM, the gateway's)", "", "follows", ""),
    ]
    out = ["| component | count | hosts | load on each | what binds the count | beyond what was measured |",
           "| --- | ---: | --- | --- | --- | --- |"]
    for c in rows:
        out.append("| {} | {} | {} | {} | {} | {} |".format(c[0], fmt(c[1]), c[2], c[3], c[4], c[5]))
    v2 = dict(V)
    v2["restart_budget_s"] = math.inf
    r2 = model(v=v2, hosts=r["hosts"], pods=r["pods"], tenants=r["tenants"])
    out.append("")
    top2 = sorted(r2["tp_limits"], key=lambda x: -x.util)[:2]
    out.append("Without the restart budget (`restart_budget_s`, an availability choice, not a capacity), "
               "**{} tenant partitions** would do: {} binds; at that count {} is at {:.0f} % and {} at "
               "{:.0f} %.".format(r2["tp"], r2["tp_bind"], top2[0].name, 100 * top2[0].util, top2[1].name,
                                  100 * top2[1].util))
    out.append("")
    out.append("Control-plane hosts: **{:,}** ({} x {} + {} x {} + {}) of {:.0f} cores and {} GiB each, "
               "for {:,} hosts: **{:.2f} %** of the region.".format(
                   r["cp_hosts"], r["tp"], v["tp_hosts"], r["rm"], v["rm_hosts"], max(r["gw"], 3),
                   v["host_cores"], v["host_mem_gib"], r["hosts"], 100.0 * r["cp_hosts"] / r["hosts"]))
    return "\n".join(out)


def limits_table(r):
    out = ["| component | limit | used on the busiest host | usable | share | what it counts |",
           "| --- | --- | ---: | ---: | ---: | --- |"]
    for comp, key in (("TP", "tp_limits"), ("RM", "rm_limits"), ("gateway", "gw_limits")):
        lims = r[key]
        top = binding_of(lims)
        for x in lims:
            name = "**{}**".format(x.name) if x is top else x.name
            out.append("| {} | {} | {} {} | {} {} | {:.0f} % | {} |".format(
                comp, name, fmt(x.used), x.unit, fmt(x.cap), x.unit, 100 * x.util, x.what))
    return "\n".join(out)


def measured_only(r):
    """Counts if no component were planned beyond the largest size measured on the 2-core machine
    (no per-core extrapolation at all)."""
    v = V
    churn = v["churn_pods_per_s"] * r["pods"] / v["region_pods"]
    n_tp = max(math.ceil(r["pods"] / v["tp_pods_measured"]), math.ceil(churn / v["tp_creates_per_s"]),
               math.ceil(churn / v["sched_pods_per_s"]))
    conns = r["hosts"] + r["tenants"] * v["watches_per_tenant"] / n_tp
    api_per_tp = max(v["tp_hosts"], math.ceil(conns / v["watches_measured"]))
    n_rm = max(v["zones"], math.ceil(r["hosts"] / v["rm_nodes_measured"]))
    n_gw = max(v["gw_min"], math.ceil(r["tenants"] * v["watches_per_tenant"] / v["gw_watches_measured"]),
               math.ceil(r["tenants"] * v["requests_per_tenant_s"] / v["gw_get_per_s"]))
    return dict(tp=n_tp, api_per_tp=api_per_tp, rm=n_rm, gw=n_gw, etcd=n_tp + n_rm + 1)


def measured_only_table(r):
    m = measured_only(r)
    v = V
    return "\n".join([
        "| component | count | from |",
        "| --- | ---: | --- |",
        "| tenant partitions | {:,} | {:,} pods each at most (`tp_pods_measured`) |".format(
            m["tp"], v["tp_pods_measured"]),
        "| API servers per tenant partition | {:,} | {:,} watch connections each at most (`watches_measured`); "
        "every host's kubelet holds one on every TP |".format(m["api_per_tp"], v["watches_measured"]),
        "| resource managers | {:,} | {:,} nodes each at most (`rm_nodes_measured`) |".format(
            m["rm"], v["rm_nodes_measured"]),
        "| gateway instances | {:,} | {:,} watches each at most (`gw_watches_measured`) |".format(
            m["gw"], v["gw_watches_measured"]),
        "| etcd clusters | {:,} | |".format(m["etcd"]),
    ])


def host_ceiling():
    """The most hosts for which some TP count holds, pods and tenants as in the seeds, and the limit
    that stops it."""
    a, b = V["region_hosts"], V["region_hosts"] * 100
    if model(hosts=b)["tp"] is not None:
        return None, None
    while b - a > 1000:
        mid = (a + b) // 2
        if model(hosts=mid)["tp"] is None:
            b = mid
        else:
            a = mid
    return a, model(hosts=b)["tp_bind"].replace("no count suffices: ", "")


SENSITIVE = ("restart_budget_s", "objects_per_tenant", "objects_per_pod", "tenant_object_share", "headroom",
             "core_efficiency", "churn_pods_per_s", "requests_per_tenant_s", "watches_per_tenant",
             "node_object_kib", "renewal_us_api", "renewal_us_etcd", "cm_kb_per_object", "host_mem_gib", "host_cores")


def host_ceiling_line():
    h, why = host_ceiling()
    if h is None:
        return "No host ceiling below 100x the seeds' hosts."
    return ("With the seeds' pods and tenants, no count of tenant partitions holds beyond about **{:,} hosts** "
            "(the limit: {}): each TP API server holds a connection from every host's kubelet, whatever the TP count "
            "(adding API servers per TP, or multiplexing the kubelets' watches, moves it).".format(
                int(float("{:.2g}".format(h))), why))


def sensitivity_table():
    """Counts with each assumption (and a few measured inputs) halved and doubled, as given and with the
    restart budget lifted (so that the capacity limits show)."""
    def counts(v):
        r = model(v=v)
        if r["tp"] is None:
            return "- ({})".format(r["tp_bind"])
        return "{} / {} / {}".format(r["tp"], r["rm"], r["gw"])

    def tps(v):
        v = dict(v)
        v["restart_budget_s"] = math.inf
        r = model(v=v)
        return "{} ({})".format(r["tp"], r["tp_bind"].replace("TP ", "")) if r["tp"] else "- ({})".format(r["tp_bind"])

    out = ["| input | x0.5: TPs / RMs / gateways | x2: TPs / RMs / gateways | without the restart budget, TPs "
           "(what binds): x0.5 | x2 |",
           "| --- | --- | --- | --- | --- |",
           "| (as given) | {} | | {} | |".format(counts(V), tps(V))]
    for key in SENSITIVE:
        half, double = dict(V), dict(V)
        half[key] = V[key] * 0.5
        double[key] = V[key] * 2.0
        out.append("| `{}` | {} | {} | {} | {} |".format(
            key, counts(half), counts(double), "" if key == "restart_budget_s" else tps(half),
            "" if key == "restart_budget_s" else tps(double)))
    return "\n".join(out)


SWEEP = (0.01, 0.03, 0.1, 0.3, 1.0, 2.0, 3.0, 10.0)


def sweep(dim):
    """Region models as one dimension (or all: dim None) is scaled by each factor of SWEEP."""
    rows = []
    for f in SWEEP:
        h, p, t = V["region_hosts"], V["region_pods"], V["region_tenants"]
        if dim in (None, "hosts"):
            h *= f
        if dim in (None, "pods"):
            p *= f
        if dim in (None, "tenants"):
            t *= f
        rows.append((f, model(hosts=h, pods=p, tenants=t)))
    return rows


def sweep_table(dim):
    what = "all three" if dim is None else dim
    out = ["| scale ({}) | hosts | pods | tenants | TPs | TP limit nearest | RMs | RM limit nearest | gateways | "
           "gateway limit nearest | etcd clusters |".format(what),
           "| ---: | ---: | ---: | ---: | ---: | --- | ---: | --- | ---: | --- | ---: |"]
    for f, r in sweep(dim):
        if r["tp"] is None:
            out.append("| {}x | {} | {} | {} | - | {} | | | | | |".format(
                fmt(f), fmt(r["hosts"]), fmt(r["pods"]), fmt(r["tenants"]), r["tp_bind"]))
            continue
        tb, rb, gb = binding_of(r["tp_limits"]), binding_of(r["rm_limits"]), binding_of(r["gw_limits"])
        out.append("| {}x | {} | {} | {} | {} | {} ({:.0f} %) | {} | {} ({:.0f} %) | {} | {} ({:.0f} %) | {} |".format(
            fmt(f), fmt(r["hosts"]), fmt(r["pods"]), fmt(r["tenants"]),
            r["tp"], tb.name, 100 * tb.util, r["rm"], rb.name, 100 * rb.util,
            r["gw"], gb.name, 100 * gb.util, r["etcd"]))
    return "\n".join(out)


def comparison_table(r):
    k = K8S_LIMITS
    return "\n".join([
        "| | nodes | pods | pods per node | partitions (TP x RP) | pod startup p99 | source |",
        "| --- | ---: | ---: | ---: | --- | --- | --- |",
        "| one Kubernetes cluster, supported limit | {:,} | {:,} | {} | - | SLO 5 s | {} |".format(
            k["nodes"], k["pods"], k["pods_per_node"], "Considerations for large clusters"),
        "| the seeds' region in Kubernetes clusters | {:,} clusters by nodes | {:,} by pods | | | | "
        "this model's arithmetic |".format(math.ceil(r["hosts"] / k["nodes"]), math.ceil(r["pods"] / k["pods"])),
        "| Arktos v0.9, 2 x 2 | 50,000 (hollow) | | | 2 x 2 | 7.3256 s | " + ARKTOS + " §3 |",
        "| Arktos v0.9, 5 x 5 | 50,000 (hollow) | | | 5 x 5 | 3.7062 s | " + ARKTOS + " §3 |",
        "| Arktos v1.0, 3 x 3 | 60,000 (hollow) | | | 3 x 3 | < 7 s | " + ARKTOS + " §3 |",
        "| Arktos paper, 2 x 2 | 50,000 | 1.5M containers | | 2 x 2 | | " + ARKTOS + " §3 |",
        "| Ursa, measured on 2 cores | {:,} per RM; {:,} in a scheduling run | 100,000 in one TP (restart "
        "bench) | | 1 x 2 | {:,} ms at 100 pods/s (1,000 nodes) | {} |".format(
            V["rm_nodes_measured"], 5_000, V["pod_startup_p99_ms"], BM),
        "| Ursa, this model, the seeds' region | {:,} | {:,} | {:.0f} | {} x {} | not modelled | "
        "bench/capacity-model.py |".format(r["hosts"], r["pods"], r["pods"] / r["hosts"], r["tp"], r["rm"]),
    ])


def markdown(r):
    parts = [
        "<!-- generated by bench/capacity-model.py --markdown: do not edit by hand -->",
        "",
        "### Result for the seeds' region",
        "",
        results_table(r),
        "",
        "### Every limit at that size",
        "",
        "The share is used / usable on the busiest host of one component (bold: the highest).",
        "",
        limits_table(r),
        "",
        "### Where the first limit sits as the region grows",
        "",
        "All three numbers scaled together (the region's shape kept: 30 pods per host, 9 pods per tenant):",
        "",
        sweep_table(None),
        "",
        "Hosts alone (pods and tenants as in the seeds):",
        "",
        sweep_table("hosts"),
        "",
        "Pods alone (pod churn grows with the pods held):",
        "",
        sweep_table("pods"),
        "",
        "Tenants alone:",
        "",
        sweep_table("tenants"),
        "",
        host_ceiling_line(),
        "",
        "### Sensitivity: each assumption halved and doubled",
        "",
        sensitivity_table(),
        "",
        "### Without extrapolation: nothing beyond the sizes measured on 2 cores",
        "",
        measured_only_table(r),
        "",
        "### Against Kubernetes and Arktos",
        "",
        comparison_table(r),
        "",
        "### Inputs",
        "",
        inputs_table(),
    ]
    return "\n".join(parts) + "\n"


def text(r):
    out = []
    if r["tp"] is None:
        return "no TP count up to {:,} holds: {}\n".format(MAX_COUNT, r["tp_bind"])
    out.append("region: {:,} hosts, {:,} pods, {:,} tenants".format(r["hosts"], int(r["pods"]), int(r["tenants"])))
    out.append("tenant partitions: {:>5}   binding: {}".format(r["tp"], r["tp_bind"]))
    out.append("resource managers: {:>5}   binding: {}".format(r["rm"], r["rm_bind"]))
    out.append("gateway instances: {:>5}   binding: {}".format(r["gw"], r["gw_bind"]))
    out.append("etcd clusters:     {:>5}".format(r["etcd"]))
    out.append("control-plane hosts: {:,} ({:.2f} % of the hosts)".format(r["cp_hosts"],
                                                                          100.0 * r["cp_hosts"] / r["hosts"]))
    for comp, key in (("TP", "tp_limits"), ("RM", "rm_limits"), ("gateway", "gw_limits")):
        for x in r[key]:
            out.append("  {:8} {:28} {:>12} / {:>12} {:16} {:5.0f} %".format(
                comp, x.name, fmt(x.used), fmt(x.cap), x.unit, 100 * x.util))
    return "\n".join(out) + "\n"


def plot(path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    factors = [10 ** (e / 8.0) for e in range(-16, 9)]  # 0.01x .. 10x
    fig, axes = plt.subplots(2, 2, figsize=(12, 9), sharey=True)
    panels = ((None, "all three together"), ("hosts", "hosts alone"), ("pods", "pods alone"),
              ("tenants", "tenants alone"))
    series = (("tp", "tp_bind", "tenant partitions", "o-", "C0"), ("rm", "rm_bind", "resource managers", "s-", "C1"),
              ("gw", "gw_bind", "gateway instances", "^-", "C2"))
    for ax, (dim, title) in zip(axes.flat, panels):
        rows = []
        for f in factors:
            h, p, t = V["region_hosts"], V["region_pods"], V["region_tenants"]
            if dim in (None, "hosts"):
                h *= f
            if dim in (None, "pods"):
                p *= f
            if dim in (None, "tenants"):
                t *= f
            r = model(hosts=h, pods=p, tenants=t)
            if r["tp"] is not None:
                rows.append((f, r))
        xs = [f for f, _ in rows]
        for key, bkey, label, style, color in series:
            ys = [r[key] for _, r in rows]
            ax.plot(xs, ys, style, label=label, markersize=3, color=color)
            last = None
            for x, (_, r) in zip(xs, rows):  # name the limit where the one that binds changes
                b = r[bkey]
                if b.startswith("none"):
                    b = None
                if b and b != last:
                    ax.annotate(b.replace("TP ", "").replace("RM ", "").replace("gateway ", ""), (x, r[key]),
                                textcoords="offset points", xytext=(4, 6), fontsize=7, rotation=20, color=color)
                last = b
        ax.plot(xs, [r["etcd"] for _, r in rows], ":", label="etcd clusters", color="grey")
        ax.axvline(1.0, color="red", linewidth=0.8, linestyle="--")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_title("scaling {} (1x = 300,000 hosts, 9M pods, 1M tenants)".format(title), fontsize=9)
        ax.set_xlabel("scale factor")
        ax.grid(True, which="both", linewidth=0.3)
    axes[0][0].set_ylabel("components needed")
    axes[1][0].set_ylabel("components needed")
    axes[0][0].legend(fontsize=8, loc="upper left")
    fig.suptitle("Ursa capacity model (bench/capacity-model.py): labels name the limit that binds each count, "
                 "where it changes", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


BEGIN = "<!-- capacity-model:begin -->"
END = "<!-- capacity-model:end -->"


def splice(doc, section):
    """doc with the text between its BEGIN and END markers replaced by section."""
    i, j = doc.index(BEGIN) + len(BEGIN), doc.index(END)
    return doc[:i] + "\n" + section + doc[j:]


def generated(doc):
    """The text between doc's markers, as splice puts it."""
    return doc[doc.index(BEGIN) + len(BEGIN) + 1:doc.index(END)]


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--inputs", action="store_true")
    ap.add_argument("--plot")
    ap.add_argument("--update-doc", metavar="MD", help="replace MD's section between the capacity-model markers")
    ap.add_argument("--hosts", type=float)
    ap.add_argument("--pods", type=float)
    ap.add_argument("--tenants", type=float)
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                    help="override an input (repeatable), e.g. --set restart_budget_s=120")
    a = ap.parse_args(argv)
    for kv in a.set:
        key, _, val = kv.partition("=")
        if key not in V:
            ap.error("no input named {}".format(key))
        V[key] = float(val)
    r = model(hosts=a.hosts, pods=a.pods, tenants=a.tenants)
    if a.update_doc:
        with open(a.update_doc) as f:
            doc = f.read()
        with open(a.update_doc, "w") as f:
            f.write(splice(doc, markdown(r)))
    elif a.inputs:
        sys.stdout.write(inputs_table() + "\n")
    elif a.markdown:
        sys.stdout.write(markdown(r))
    else:
        sys.stdout.write(text(r))
    if a.plot:
        plot(a.plot)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
