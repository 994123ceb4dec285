/* The kubelet's resource usage (for metrics.k8s.io, served by the partitions and resource
 * managers): GET /stats/usage on the kubelet's HTTPS server (logs.c), with its bearer token.
 *
 * Reply (application/json, this project's own small shape, not Kubernetes' summary API):
 *   { "timestamp": "RFC3339",          when the newer of the two samples was taken
 *     "windowSeconds": 1.0,            time between the two samples the rates come from
 *     "source": "cgroup" | "proc" | "synthetic" | "none",
 *     "node": { "cpuNanoCores": N, "memoryWorkingSetBytes": N },
 *     "pods": [ { "uid": "...", "cpuNanoCores": N, "memoryWorkingSetBytes": N,
 *                 "containers": [ { "id": "<runtime id>", "cpuNanoCores": N, "memoryWorkingSetBytes": N } ] } ],
 *     "syntheticContainer": { "cpuNanoCores": N, "memoryWorkingSetBytes": N }   (hollow nodes only) }
 * CPU is a rate over the window (like metrics-server: two cumulative samples), memory the working
 * set (usage minus inactive file pages). Sources:
 *   cri:     the pods' cgroups <--cgroup-parent>/pod<uid> and their containers' <pod cgroup>/<id>
 *            (cgroup v1 cpuacct+memory, or v2); no --cgroup-parent: no pods;
 *   fake:    no pods listed; every container of the node's pods counts syntheticContainer;
 *   process: each container's main process (pid from its state.json): utime+stime+cutime+cstime of
 *            /proc/<pid>/stat (its reaped children included, not its live ones) and its resident
 *            set; the pod is the sum; container "id" is the container's name;
 *   node:    /proc/stat and /proc/meminfo (the whole machine).
 * The first request waits one second for its second sample; later ones use the sample kept from
 * an earlier request when it is 1 s to 5 min old. */
#ifndef URSA_KUBELET_STATS_H
#define URSA_KUBELET_STATS_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "runtime.h"
#include "ursa/buf.h"

/* The cgroup parent of the CRI runtime's pods (copied; NULL or "": none). Before serving. */
void kl_stats_configure(const char *cgroup_parent);

/* The runtime's root dir (the process runtime's pods/<uid>/containers/<name>/state.json). */
void kl_stats_set_runtime_root(const char *dir);

/* The /stats/usage reply for the runtime named runtime_name ("cri", "process", "fake") into out.
 * Thread-safe; may sleep about a second. */
void kl_stats_usage(const char *runtime_name, struct buf *out);

/* ---- pure parts (unit-tested) ---- */

/* CPU rate in nanocores between two cumulative usages (ns) dt_ns apart; 0 when dt_ns <= 0 or
 * the counter went back (a restarted container). */
uint64_t stats_rate_nanocores(uint64_t prev_ns, uint64_t cur_ns, int64_t dt_ns);
/* Busy CPU time of the machine (ns) from /proc/stat's text: user+nice+system+irq+softirq+steal of
 * the "cpu" line, ticks of clk_tck per second. -1 if there is no such line. */
int stats_proc_stat_cpu_ns(const char *text, long clk_tck, uint64_t *ret_ns);
/* Working set of the machine from /proc/meminfo: MemTotal - MemAvailable (bytes). -1 if missing. */
int stats_meminfo_working_set(const char *text, uint64_t *ret_bytes);
/* A cgroup's working set: usage minus its inactive file pages ("total_inactive_file" in v1's
 * memory.stat, "inactive_file" in v2's), never below 0. */
uint64_t stats_cgroup_working_set(uint64_t usage, const char *memory_stat, bool v2);
/* CPU (ns: utime+stime+cutime+cstime) and resident bytes of a process from its /proc/<pid>/stat
 * text and page size; -1 if malformed. */
int stats_proc_pid_stat(const char *text, long clk_tck, long page_size, uint64_t *ret_ns, uint64_t *ret_rss);
/* v2 cpu.stat's usage_usec in ns; -1 if missing. */
int stats_cpu_stat_usage_ns(const char *text, uint64_t *ret_ns);

#endif
