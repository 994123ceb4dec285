/* Helpers shared by the runtimes, the shim and the log server (internal to src/kubelet). */
#ifndef URSA_KUBELET_RUNTIME_COMMON_H
#define URSA_KUBELET_RUNTIME_COMMON_H
#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>
#include "runtime.h"
#include "ursa/buf.h"

/* Longest text of one CRI log record; longer lines are split into "P" records. */
#define RT_LOG_MAX_LINE (16 * 1024)

/* Deep copy of a pod spec into *dst (which is overwritten, not released). */
void rt_pod_copy(struct rt_pod *dst, const struct rt_pod *src);
/* The spec as JSON (new reference) and back: 0, or -1 if j is not a valid spec (dst is then
 * left released). */
json_t *rt_pod_to_json(const struct rt_pod *p);
int rt_pod_from_json(const json_t *j, struct rt_pod *dst);
const char *rt_restart_name(enum rt_restart r);

/* command + args as one NULL-terminated array of borrowed strings (new array), and its count
 * in *ret_n. The array is empty (only NULL) when there is nothing to run. */
char **rt_container_argv(const struct rt_container *c, size_t *ret_n);
/* "process://sha256:<hex>" of the command line joined by spaces; appends to out. */
void rt_image_id_add(struct buf *out, const char *scheme, const struct rt_container *c);

/* A container status's lastState: the termination before the current state. */
void rt_status_set_last(struct rt_container_status *s, int exit_code, const char *reason, int64_t started_at,
			int64_t finished_at);
/* A container status waiting in CrashLoopBackOff, with Kubernetes' message. */
void rt_status_set_backoff(struct rt_container_status *s, int64_t backoff_ms, const char *container,
			   const char *pod, const char *ns, const char *uid);

/* The PATH a container gets when its environment names none. */
#define RT_DEFAULT_PATH "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
/* The program argv0 names, as execve would find it: a path (relative to wd when not absolute) or
 * the first executable file of that name along path_env. New string, or NULL with *ret_code
 * (127 not found, 126 not executable, as a shell says) and *ret_err (new string). */
char *rt_find_program(const char *argv0, const char *path_env, const char *wd, int *ret_code, char **ret_err);

/* True if s is usable as one path component (non-empty, no '/', not "." or "..", short). */
bool rt_path_component_ok(const char *s);

/* File helpers: 0 or -errno. */
int rt_mkdir_p(const char *path, mode_t mode);
/* Writes data to path atomically (temp file in the same directory, fsync-free, rename). */
int rt_write_file_atomic(const char *path, const char *data, size_t len);
/* Reads the whole file (capped at max bytes) into out (appends). */
int rt_read_file(const char *path, size_t max, struct buf *out);
/* Loads a JSON object file (new reference) or NULL. */
json_t *rt_read_json(const char *path);
int rt_write_json(const char *path, const json_t *j);
/* Removes path recursively (no error if missing). */
int rt_rm_rf(const char *path);

/* Start time of a process in clock ticks since boot (field 22 of /proc/<pid>/stat), and whether
 * it is a zombie. 0, or -1 if there is no such process. */
int rt_proc_starttime(pid_t pid, unsigned long long *ret_start, bool *ret_zombie);
/* True if pid runs and started at start (a zombie counts as gone). */
bool rt_proc_alive(pid_t pid, unsigned long long start);

/* Wall clock in ns since the epoch. */
int64_t rt_now_ns(void);
/* RFC3339 with nanoseconds, "2026-11-21T22:40:18.123456789Z" (appends). */
void rt_cri_time_add(struct buf *out, int64_t unix_ns);

/* Base of the restart back-off in ms: 10000, or URSA_KUBELET_BACKOFF_MS from the environment
 * (tests use a few hundred ms). The cap is 30 times the base (300 s by default). */
int64_t rt_backoff_base_ms(void);

#endif
