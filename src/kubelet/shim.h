/* The container shim: `ursa-kubelet shim --state DIR --log FILE [--exec PATH] [--workdir DIR]
 * [--uid N] [--gid N] [--groups N,...] -- argv...`.
 *
 * The process runtime starts one shim per container instance, in a session of its own, so the
 * container outlives a kubelet restart. The shim forks the container (in a new process group
 * whose id is the container's pid), copies its stdout and stderr into FILE in the CRI log
 * format ("<RFC3339Nano> stdout|stderr F|P text"; lines longer than 16 KiB become P records),
 * and writes (temp file + rename):
 *   DIR/state.json  {"pid","pidStart","shimPid","shimStart","startedAt"} once the container runs
 *                   (pidStart/shimStart: /proc/<pid>/stat start times; startedAt: unix ns);
 *   DIR/exit.json   {"exitCode","signal","startedAt","finishedAt"[,"reason","message"]} when the
 *                   container has ended, after the log file is complete. A program that cannot
 *                   be executed gives exitCode 128 and reason "StartError".
 * When the container's main process ends, the rest of its process group is killed. The
 * environment of the shim is the container's environment; PATH (program lookup) must be done
 * by the caller, which passes the resolved program in --exec (default: argv[0]). With --uid,
 * --gid or --groups the container (not the shim, which keeps writing its files) switches to
 * those supplementary groups (none when only --uid/--gid are given), group and user before it
 * enters its working directory and execs; failing that is a StartError saying which. */
#ifndef URSA_KUBELET_SHIM_H
#define URSA_KUBELET_SHIM_H
#include <stdbool.h>
#include <sys/stat.h>

/* --mount "ro|rw<TAB>HOST<TAB>DEST" (repeatable, volumes): the container gets a mount namespace
 * of its own with HOST bind-mounted at DEST (made on the node if missing), read-only for "ro";
 * failing that is a StartError. At most SHIM_MAX_MOUNTS. */
#define SHIM_MAX_MOUNTS 128

/* argv[0] is "shim" (main.c passes argc - 1, argv + 1 of `ursa-kubelet shim ...`). Returns the
 * process exit status: 0 once exit.json is written, 2 on a usage error, 1 on other errors. */
int shim_main(int argc, char **argv);

/* A log file that the shim has finished with is made read-only (0440): readers following it
 * may stop at its end. True if st (from fstat of the log) says so. */
bool shim_log_is_final(const struct stat *st);

#endif
