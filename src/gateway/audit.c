/* The audit log: one JSON line per mutating or refused request, rotated to <path>.1 by size. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>
#include "gw.h"
#include "ursa/timeutil.h"
#include "ursa/xalloc.h"

struct audit {
	pthread_mutex_t lock;
	char *path;
	int fd;              /* O_APPEND: each line is one write, whole even with several writers */
	long long size, max;
	int64_t checked_ms;  /* when the path was last compared with fd */
};

/* Several processes may write the file (the gateway's workers): the one that finds it too
 * big renames it under an exclusive flock, and the others reopen when the path no longer
 * names the file they hold (checked at most once a second). */
static void reopen(struct audit *a)
{
	struct stat st;
	if (a->fd >= 0)
		close(a->fd);
	a->fd = open(a->path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0640);
	a->size = a->fd >= 0 && fstat(a->fd, &st) == 0 ? (long long)st.st_size : 0;
	a->checked_ms = mono_ms();
}

static bool path_is_fd(const struct audit *a)
{
	struct stat p, f;
	return a->fd >= 0 && stat(a->path, &p) == 0 && fstat(a->fd, &f) == 0 && p.st_ino == f.st_ino &&
	       p.st_dev == f.st_dev;
}

static void rotate(struct audit *a)
{
	if (a->fd >= 0 && flock(a->fd, LOCK_EX) == 0) {
		if (path_is_fd(a)) {
			char *old = xasprintf("%s.1", a->path);
			rename(a->path, old);
			free(old);
		}
		flock(a->fd, LOCK_UN);
	}
	reopen(a);
}

struct audit *audit_open(const char *path, long long max_bytes)
{
	if (!path || !*path)
		return NULL;
	struct audit *a = xcalloc(1, sizeof(*a));
	pthread_mutex_init(&a->lock, NULL);
	a->path = xstrdup(path);
	a->max = max_bytes > 0 ? max_bytes : 100LL << 20;
	a->fd = -1;
	reopen(a);
	return a;
}

void audit_close(struct audit *a)
{
	if (!a)
		return;
	if (a->fd >= 0)
		close(a->fd);
	pthread_mutex_destroy(&a->lock);
	free(a->path);
	free(a);
}

void audit_log(struct audit *a, const char *user, const char *tenant, const char *verb, const char *path,
	       int code, int64_t latency_us, const char *reason)
{
	if (!a)
		return;
	struct buf b = BUF_INIT;
	buf_adds(&b, "{\"time\":\"");
	rfc3339_micro_add(&b, now_ms() * 1000);
	buf_adds(&b, "\",\"user\":");
	buf_add_json_str(&b, user ? user : "", user ? strlen(user) : 0);
	buf_adds(&b, ",\"tenant\":");
	buf_add_json_str(&b, tenant ? tenant : "", tenant ? strlen(tenant) : 0);
	buf_adds(&b, ",\"verb\":");
	buf_add_json_str(&b, verb, strlen(verb));
	buf_adds(&b, ",\"path\":");
	buf_add_json_str(&b, path, strnlen(path, 4096));
	buf_addf(&b, ",\"code\":%d,\"latencyMs\":%.3f", code, (double)latency_us / 1000.0);
	if (reason) {
		buf_adds(&b, ",\"decision\":\"forbid\",\"reason\":");
		buf_add_json_str(&b, reason, strnlen(reason, 4096));
	}
	buf_adds(&b, "}\n");
	pthread_mutex_lock(&a->lock);
	if (mono_ms() - a->checked_ms >= 1000) {
		if (!path_is_fd(a))
			reopen(a);
		struct stat st;
		if (a->fd >= 0 && fstat(a->fd, &st) == 0)
			a->size = (long long)st.st_size;
		a->checked_ms = mono_ms();
	}
	if (a->size + (long long)b.len > a->max)
		rotate(a);
	if (a->fd >= 0 && write(a->fd, b.ptr, b.len) == (ssize_t)b.len)
		a->size += (long long)b.len;
	pthread_mutex_unlock(&a->lock);
	buf_release(&b);
}
