/* Pod spec helpers, file helpers and /proc probes shared by the runtimes, shim and log server. */
#include "runtime_common.h"
#include "hooks.h"
#include "probes.h"
#include "ursa/jsonutil.h"
#include "ursa/xalloc.h"
#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void strv_free(char **v)
{
	if (!v)
		return;
	for (char **p = v; *p; p++)
		free(*p);
	free(v);
}

static char **strv_dup(char *const *v)
{
	if (!v)
		return NULL;
	size_t n = 0;
	while (v[n])
		n++;
	char **r = xcalloc(n + 1, sizeof(*r));
	for (size_t i = 0; i < n; i++)
		r[i] = xstrdup(v[i]);
	return r;
}

static char *dup_or_null(const char *s)
{
	return s ? xstrdup(s) : NULL;
}

void rt_pod_release(struct rt_pod *p)
{
	if (!p)
		return;
	for (size_t i = 0; i < p->ncontainers; i++) {
		struct rt_container *c = &p->containers[i];
		free(c->name);
		free(c->image);
		strv_free(c->command);
		strv_free(c->args);
		for (size_t e = 0; e < c->nenv; e++) {
			free(c->env[e].name);
			free(c->env[e].value);
		}
		free(c->env);
		free(c->working_dir);
		for (int k = 0; k < RT_PROBE_KINDS; k++)
			rt_probe_free(c->probes[k]);
		for (int k = 0; k < RT_HOOK_KINDS; k++)
			rt_hook_free(c->hooks[k]);
		for (size_t m = 0; m < c->nmounts; m++) {
			free(c->mounts[m].host_path);
			free(c->mounts[m].container_path);
		}
		free(c->mounts);
	}
	free(p->containers);
	free(p->uid);
	free(p->tenant);
	free(p->ns);
	free(p->name);
	memset(p, 0, sizeof(*p));
}

void rt_pod_copy(struct rt_pod *dst, const struct rt_pod *src)
{
	memset(dst, 0, sizeof(*dst));
	dst->uid = dup_or_null(src->uid);
	dst->tenant = dup_or_null(src->tenant);
	dst->ns = dup_or_null(src->ns);
	dst->name = dup_or_null(src->name);
	dst->restart = src->restart;
	dst->grace_s = src->grace_s;
	dst->ncontainers = src->ncontainers;
	dst->containers = xcalloc(src->ncontainers ? src->ncontainers : 1, sizeof(*dst->containers));
	for (size_t i = 0; i < src->ncontainers; i++) {
		const struct rt_container *s = &src->containers[i];
		struct rt_container *d = &dst->containers[i];
		d->name = dup_or_null(s->name);
		d->image = dup_or_null(s->image);
		d->command = strv_dup(s->command);
		d->args = strv_dup(s->args);
		d->working_dir = dup_or_null(s->working_dir);
		d->stdin_open = s->stdin_open;
		d->stdin_once = s->stdin_once;
		d->tty = s->tty;
		d->ids = s->ids;
		d->nenv = s->nenv;
		d->env = xcalloc(s->nenv ? s->nenv : 1, sizeof(*d->env));
		for (size_t e = 0; e < s->nenv; e++) {
			d->env[e].name = dup_or_null(s->env[e].name);
			d->env[e].value = dup_or_null(s->env[e].value);
			d->env[e].from = s->env[e].from;
		}
		d->env_pending = s->env_pending;
		for (int k = 0; k < RT_PROBE_KINDS; k++)
			d->probes[k] = rt_probe_dup(s->probes[k]);
		for (int k = 0; k < RT_HOOK_KINDS; k++)
			d->hooks[k] = rt_hook_dup(s->hooks[k]);
		d->nmounts = s->nmounts;
		d->mounts = xcalloc(s->nmounts ? s->nmounts : 1, sizeof(*d->mounts));
		for (size_t m = 0; m < s->nmounts; m++) {
			d->mounts[m].host_path = dup_or_null(s->mounts[m].host_path);
			d->mounts[m].container_path = dup_or_null(s->mounts[m].container_path);
			d->mounts[m].readonly = s->mounts[m].readonly;
		}
	}
}

const char *rt_restart_name(enum rt_restart r)
{
	switch (r) {
	case RT_RESTART_ON_FAILURE:
		return "OnFailure";
	case RT_RESTART_NEVER:
		return "Never";
	default:
		return "Always";
	}
}

static json_t *strv_json(char *const *v)
{
	if (!v)
		return json_null();
	json_t *a = json_array();
	for (; *v; v++)
		json_array_append_new(a, json_string(*v));
	return a;
}

static json_t *str_or_null(const char *s)
{
	return s ? json_string(s) : json_null();
}

json_t *rt_pod_to_json(const struct rt_pod *p)
{
	json_t *cs = json_array();
	for (size_t i = 0; i < p->ncontainers; i++) {
		const struct rt_container *c = &p->containers[i];
		json_t *env = json_array();
		for (size_t e = 0; e < c->nenv; e++)
			json_array_append_new(env, json_pack("{s:o,s:o}", "name", str_or_null(c->env[e].name),
							     "value", str_or_null(c->env[e].value)));
		json_t *mounts = json_array();
		for (size_t m = 0; m < c->nmounts; m++)
			json_array_append_new(mounts, json_pack("{s:o,s:o,s:b}", "hostPath",
								str_or_null(c->mounts[m].host_path), "containerPath",
								str_or_null(c->mounts[m].container_path), "readOnly",
								c->mounts[m].readonly));
		json_array_append_new(cs, json_pack("{s:o,s:o,s:o,s:o,s:o,s:o,s:o}", "name", str_or_null(c->name),
						    "image", str_or_null(c->image), "command", strv_json(c->command),
						    "args", strv_json(c->args), "env", env, "workingDir",
						    str_or_null(c->working_dir), "mounts", mounts));
	}
	return json_pack("{s:o,s:o,s:o,s:o,s:s,s:I,s:o}", "uid", str_or_null(p->uid), "tenant",
			 str_or_null(p->tenant), "namespace", str_or_null(p->ns), "name", str_or_null(p->name),
			 "restartPolicy", rt_restart_name(p->restart), "grace", (json_int_t)p->grace_s,
			 "containers", cs);
}

/* Strings of a JSON array into a new NULL-terminated vector; NULL for null; -1 if malformed. */
static int strv_from_json(const json_t *a, char ***ret)
{
	*ret = NULL;
	if (!a || json_is_null(a))
		return 0;
	if (!json_is_array(a) || json_array_size(a) > 4096)
		return -1;
	char **v = xcalloc(json_array_size(a) + 1, sizeof(*v));
	for (size_t i = 0; i < json_array_size(a); i++) {
		const char *s = json_string_value(json_array_get(a, i));
		if (!s) {
			strv_free(v);
			return -1;
		}
		v[i] = xstrdup(s);
	}
	*ret = v;
	return 0;
}

static int container_from_json(const json_t *j, struct rt_container *c)
{
	if (!json_str(j, "name"))
		return -1;
	c->name = xstrdup(json_str(j, "name"));
	c->image = dup_or_null(json_str(j, "image"));
	c->working_dir = dup_or_null(json_str(j, "workingDir"));
	if (strv_from_json(json_object_get(j, "command"), &c->command) < 0 ||
	    strv_from_json(json_object_get(j, "args"), &c->args) < 0)
		return -1;
	json_t *env = json_object_get(j, "env");
	size_t n = json_is_array(env) ? json_array_size(env) : 0;
	c->env = xcalloc(n ? n : 1, sizeof(*c->env));
	for (size_t e = 0; e < n; e++) {
		const json_t *ev = json_array_get(env, e);
		if (!json_str(ev, "name"))
			return -1;
		c->env[e].name = xstrdup(json_str(ev, "name"));
		c->env[e].value = xstrdup(json_str(ev, "value") ? json_str(ev, "value") : "");
		c->nenv++;
	}
	json_t *mounts = json_object_get(j, "mounts");
	n = json_is_array(mounts) ? json_array_size(mounts) : 0;
	c->mounts = xcalloc(n ? n : 1, sizeof(*c->mounts));
	for (size_t m = 0; m < n; m++) {
		const json_t *mv = json_array_get(mounts, m);
		if (!json_str(mv, "hostPath") || !json_str(mv, "containerPath"))
			return -1;
		c->mounts[m].host_path = xstrdup(json_str(mv, "hostPath"));
		c->mounts[m].container_path = xstrdup(json_str(mv, "containerPath"));
		c->mounts[m].readonly = json_is_true(json_object_get(mv, "readOnly"));
		c->nmounts++;
	}
	return 0;
}

int rt_pod_from_json(const json_t *j, struct rt_pod *dst)
{
	memset(dst, 0, sizeof(*dst));
	const json_t *cs = json_object_get(j, "containers");
	const char *rp = json_str(j, "restartPolicy");
	if (!json_str(j, "uid") || !json_is_array(cs) || json_array_size(cs) > 1024)
		return -1;
	dst->uid = xstrdup(json_str(j, "uid"));
	dst->tenant = xstrdup(json_str(j, "tenant") ? json_str(j, "tenant") : "system");
	dst->ns = xstrdup(json_str(j, "namespace") ? json_str(j, "namespace") : "default");
	dst->name = xstrdup(json_str(j, "name") ? json_str(j, "name") : dst->uid);
	dst->restart = !rp || !strcmp(rp, "Always") ? RT_RESTART_ALWAYS
		       : !strcmp(rp, "OnFailure")   ? RT_RESTART_ON_FAILURE
						    : RT_RESTART_NEVER;
	dst->grace_s = json_integer_value(json_object_get(j, "grace"));
	dst->containers = xcalloc(json_array_size(cs) ? json_array_size(cs) : 1, sizeof(*dst->containers));
	for (size_t i = 0; i < json_array_size(cs); i++) {
		dst->ncontainers++;
		if (container_from_json(json_array_get(cs, i), &dst->containers[i]) < 0) {
			rt_pod_release(dst);
			return -1;
		}
	}
	return 0;
}

char **rt_container_argv(const struct rt_container *c, size_t *ret_n)
{
	size_t n = 0;
	for (char **p = c->command; p && *p; p++)
		n++;
	for (char **p = c->args; p && *p; p++)
		n++;
	char **v = xcalloc(n + 1, sizeof(*v));
	size_t i = 0;
	for (char **p = c->command; p && *p; p++)
		v[i++] = *p;
	for (char **p = c->args; p && *p; p++)
		v[i++] = *p;
	*ret_n = n;
	return v;
}

void rt_image_id_add(struct buf *out, const char *scheme, const struct rt_container *c)
{
	struct buf line = BUF_INIT;
	size_t n;
	char **v = rt_container_argv(c, &n);
	for (size_t i = 0; i < n; i++) {
		if (i)
			buf_addch(&line, ' ');
		buf_adds(&line, v[i]);
	}
	free(v);
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int mdlen = 0;
	EVP_Digest(line.ptr ? line.ptr : "", line.len, md, &mdlen, EVP_sha256(), NULL);
	buf_release(&line);
	buf_addf(out, "%s://sha256:", scheme);
	for (unsigned i = 0; i < mdlen; i++)
		buf_addf(out, "%02x", md[i]);
}

bool rt_path_component_ok(const char *s)
{
	size_t n = s ? strlen(s) : 0;
	return n > 0 && n <= 253 && !strchr(s, '/') && strcmp(s, ".") && strcmp(s, "..");
}

int rt_mkdir_p(const char *path, mode_t mode)
{
	char *p = xstrdup(path);
	int ret = 0;
	for (char *s = p + 1;; s++) {
		if (*s != '/' && *s != '\0')
			continue;
		char saved = *s;
		*s = '\0';
		if (mkdir(p, mode) < 0 && errno != EEXIST) {
			ret = -errno;
			break;
		}
		*s = saved;
		if (!saved)
			break;
	}
	free(p);
	return ret;
}

static int write_all(int fd, const char *data, size_t len)
{
	while (len) {
		ssize_t n = write(fd, data, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		data += n;
		len -= (size_t)n;
	}
	return 0;
}

int rt_write_file_atomic(const char *path, const char *data, size_t len)
{
	char *tmp = xasprintf("%s.tmp.%ld", path, (long)getpid());
	int ret = 0;
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0640);
	if (fd < 0) {
		ret = -errno;
		goto out;
	}
	ret = write_all(fd, data, len);
	if (close(fd) < 0 && !ret)
		ret = -errno;
	if (!ret && rename(tmp, path) < 0)
		ret = -errno;
	if (ret)
		unlink(tmp);
out:
	free(tmp);
	return ret;
}

int rt_read_file(const char *path, size_t max, struct buf *out)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	buf_read_fd(out, fd, max);
	close(fd);
	return 0;
}

json_t *rt_read_json(const char *path)
{
	struct buf b = BUF_INIT;
	json_t *j = NULL;
	if (rt_read_file(path, 1 << 20, &b) == 0 && b.len)
		j = json_parse_limited(b.ptr, b.len, 16, NULL);
	buf_release(&b);
	if (j && !json_is_object(j)) {
		json_decref(j);
		j = NULL;
	}
	return j;
}

int rt_write_json(const char *path, const json_t *j)
{
	struct buf b = BUF_INIT;
	json_dump_buf(j, &b);
	buf_addch(&b, '\n');
	int ret = rt_write_file_atomic(path, b.ptr, b.len);
	buf_release(&b);
	return ret;
}

int rt_rm_rf(const char *path)
{
	struct stat st;
	if (lstat(path, &st) < 0)
		return errno == ENOENT ? 0 : -errno;
	if (!S_ISDIR(st.st_mode))
		return unlink(path) < 0 && errno != ENOENT ? -errno : 0;
	DIR *d = opendir(path);
	if (d) {
		struct dirent *e;
		while ((e = readdir(d))) {
			if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
				continue;
			char *sub = xasprintf("%s/%s", path, e->d_name);
			rt_rm_rf(sub);
			free(sub);
		}
		closedir(d);
	}
	return rmdir(path) < 0 && errno != ENOENT ? -errno : 0;
}

int rt_proc_starttime(pid_t pid, unsigned long long *ret_start, bool *ret_zombie)
{
	if (pid <= 0)
		return -1;
	char *path = xasprintf("/proc/%ld/stat", (long)pid);
	struct buf b = BUF_INIT;
	int r = rt_read_file(path, 4096, &b);
	free(path);
	int ret = -1;
	/* Fields after the command name, which is in parentheses and may hold anything. */
	const char *p = r == 0 && b.ptr ? strrchr(b.ptr, ')') : NULL;
	if (!p)
		goto out;
	char state = p[1] == ' ' ? p[2] : '?';
	int field = 2; /* p + 2 starts field 3 */
	p += 2;
	while (*p && field < 21) {
		if (*p++ == ' ')
			field++;
	}
	char *end;
	errno = 0;
	unsigned long long st = strtoull(p, &end, 10);
	if (field != 21 || end == p || errno)
		goto out;
	*ret_start = st;
	if (ret_zombie)
		*ret_zombie = state == 'Z' || state == 'X';
	ret = 0;
out:
	buf_release(&b);
	return ret;
}

bool rt_proc_alive(pid_t pid, unsigned long long start)
{
	unsigned long long st;
	bool zombie;
	return rt_proc_starttime(pid, &st, &zombie) == 0 && st == start && !zombie;
}

int64_t rt_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

void rt_cri_time_add(struct buf *out, int64_t unix_ns)
{
	time_t t = (time_t)(unix_ns / 1000000000);
	struct tm tm;
	gmtime_r(&t, &tm);
	buf_addf(out, "%04d-%02d-%02dT%02d:%02d:%02d.%09dZ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
		 tm.tm_hour, tm.tm_min, tm.tm_sec, (int)(unix_ns % 1000000000));
}

int64_t rt_backoff_base_ms(void)
{
	const char *s = getenv("URSA_KUBELET_BACKOFF_MS");
	long long v;
	if (s && parse_int64(s, &v) == 0 && v > 0 && v <= 3600 * 1000)
		return v;
	return 10000;
}

static pthread_mutex_t change_lock = PTHREAD_MUTEX_INITIALIZER;
static rt_pod_change_sink change_sink;
static void *change_sink_ud;

void rt_set_pod_change_sink(rt_pod_change_sink fn, void *ud)
{
	pthread_mutex_lock(&change_lock);
	change_sink = fn;
	change_sink_ud = ud;
	pthread_mutex_unlock(&change_lock);
}

void rt_pod_changed(const char *uid)
{
	pthread_mutex_lock(&change_lock); /* held during the call: cleared means no call after */
	if (change_sink && uid)
		change_sink(change_sink_ud, uid);
	pthread_mutex_unlock(&change_lock);
}

static rt_event_sink event_sink;
static void *event_sink_ud;

void rt_set_event_sink(rt_event_sink fn, void *ud)
{
	event_sink = fn;
	event_sink_ud = ud;
}

void rt_event(const char *tenant, const char *ns, const char *pod, const char *uid, const char *container,
	      bool warning, const char *reason, const char *fmt, ...)
{
	if (!event_sink || !tenant || !ns || !pod || !uid)
		return;
	char msg[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	event_sink(event_sink_ud, tenant, ns, pod, uid, container, warning, reason, msg);
}

char *rt_find_program(const char *argv0, const char *path_env, const char *wd, int *ret_code, char **ret_err)
{
	struct stat st;
	if (strchr(argv0, '/')) {
		char *p = argv0[0] == '/' || !wd ? xstrdup(argv0) : xasprintf("%s/%s", wd, argv0);
		if (stat(p, &st) == 0 && S_ISREG(st.st_mode) && access(p, X_OK) == 0)
			return p;
		int e = errno;
		bool missing = stat(p, &st) < 0;
		*ret_code = missing ? 127 : 126;
		*ret_err = xasprintf("exec: \"%s\": %s", argv0, missing ? strerror(e) : "permission denied");
		free(p);
		return NULL;
	}
	bool denied = false;
	for (const char *p = path_env;;) {
		const char *colon = strchr(p, ':');
		size_t n = colon ? (size_t)(colon - p) : strlen(p);
		char *cand = n ? xasprintf("%.*s/%s", (int)n, p, argv0) : xasprintf("./%s", argv0);
		if (stat(cand, &st) == 0 && S_ISREG(st.st_mode)) {
			if (access(cand, X_OK) == 0)
				return cand;
			denied = true;
		}
		free(cand);
		if (!colon)
			break;
		p = colon + 1;
	}
	*ret_code = denied ? 126 : 127;
	*ret_err = denied ? xasprintf("exec: \"%s\": permission denied", argv0)
			  : xasprintf("exec: \"%s\": executable file not found in $PATH", argv0);
	return NULL;
}

void rt_status_set_last(struct rt_container_status *s, int exit_code, const char *reason, int64_t started_at,
			int64_t finished_at)
{
	s->has_last = true;
	s->last_exit_code = exit_code;
	snprintf(s->last_reason, sizeof(s->last_reason), "%s", reason);
	s->last_started_at = started_at;
	s->last_finished_at = finished_at;
}

void rt_status_set_backoff(struct rt_container_status *s, int64_t backoff_ms, const char *container,
			   const char *pod, const char *ns, const char *uid)
{
	s->state = RT_WAITING;
	snprintf(s->reason, sizeof(s->reason), "CrashLoopBackOff");
	snprintf(s->message, sizeof(s->message), "back-off %llds restarting failed container=%s pod=%s_%s(%s)",
		 (long long)((backoff_ms + 999) / 1000), container, pod, ns, uid);
}
