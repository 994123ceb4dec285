/* The audit log: one JSON line per mutating request, rotated to <path>.1 by size. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "gw.h"
#include "ursa/timeutil.h"
#include "ursa/xalloc.h"

struct audit {
	pthread_mutex_t lock;
	char *path;
	FILE *f;
	long long size, max;
};

static void reopen(struct audit *a)
{
	struct stat st;
	if (a->f)
		fclose(a->f);
	a->f = fopen(a->path, "a");
	a->size = a->f && stat(a->path, &st) == 0 ? (long long)st.st_size : 0;
}

struct audit *audit_open(const char *path, long long max_bytes)
{
	if (!path || !*path)
		return NULL;
	struct audit *a = xcalloc(1, sizeof(*a));
	pthread_mutex_init(&a->lock, NULL);
	a->path = xstrdup(path);
	a->max = max_bytes > 0 ? max_bytes : 100LL << 20;
	reopen(a);
	return a;
}

void audit_close(struct audit *a)
{
	if (!a)
		return;
	if (a->f)
		fclose(a->f);
	pthread_mutex_destroy(&a->lock);
	free(a->path);
	free(a);
}

void audit_log(struct audit *a, const char *user, const char *tenant, const char *verb, const char *path,
	       int code, int64_t latency_us)
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
	buf_addf(&b, ",\"code\":%d,\"latencyMs\":%.3f}\n", code, (double)latency_us / 1000.0);
	pthread_mutex_lock(&a->lock);
	if (a->size + (long long)b.len > a->max) {
		char *old = xasprintf("%s.1", a->path);
		if (a->f)
			fclose(a->f);
		a->f = NULL;
		rename(a->path, old);
		free(old);
		reopen(a);
	}
	if (a->f) {
		fwrite(b.ptr, 1, b.len, a->f);
		fflush(a->f);
		a->size += (long long)b.len;
	}
	pthread_mutex_unlock(&a->lock);
	buf_release(&b);
}
