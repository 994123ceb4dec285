/* The kubelet's resource usage: cumulative samples of the node and the pods' cgroups, turned
 * into rates between two samples (see stats.h). */
#define _GNU_SOURCE
#include "stats.h"
#include "ursa/timeutil.h"
#include "ursa/xalloc.h"
#include <dirent.h>
#include <fcntl.h>
#include <inttypes.h>
#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define CGROOT "/sys/fs/cgroup"
#define MIN_WINDOW_NS 1000000000LL
#define MAX_AGE_NS (300 * 1000000000LL)
/* hollow nodes: what each container of theirs is said to use */
#define SYNTH_NANOCORES 1000000ULL
#define SYNTH_BYTES (4ULL << 20)

/* ---- pure parts ---- */

uint64_t stats_rate_nanocores(uint64_t prev_ns, uint64_t cur_ns, int64_t dt_ns)
{
	if (dt_ns <= 0 || cur_ns < prev_ns)
		return 0;
	unsigned __int128 d = (unsigned __int128)(cur_ns - prev_ns) * 1000000000u;
	return (uint64_t)(d / (uint64_t)dt_ns);
}

int stats_proc_stat_cpu_ns(const char *text, long clk_tck, uint64_t *ret_ns)
{
	const char *p = text;
	while (p && strncmp(p, "cpu ", 4) != 0) {
		p = strchr(p, '\n');
		if (p)
			p++;
	}
	if (!p || clk_tck <= 0)
		return -1;
	unsigned long long v[8] = { 0 };
	if (sscanf(p + 4, "%llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6],
		   &v[7]) < 4)
		return -1;
	/* user nice system idle iowait irq softirq steal: idle and iowait are not busy */
	unsigned long long busy = v[0] + v[1] + v[2] + v[5] + v[6] + v[7];
	*ret_ns = (uint64_t)((unsigned __int128)busy * 1000000000u / (unsigned long)clk_tck);
	return 0;
}

/* The number after "key" at a line start (key includes its ':' or ' '); -1 if absent. */
static int field_u64(const char *text, const char *key, uint64_t *ret)
{
	size_t n = strlen(key);
	for (const char *p = text; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
		if (strncmp(p, key, n) == 0) {
			char *end;
			unsigned long long v = strtoull(p + n, &end, 10);
			if (end == p + n)
				return -1;
			*ret = v;
			return 0;
		}
	}
	return -1;
}

int stats_meminfo_working_set(const char *text, uint64_t *ret_bytes)
{
	uint64_t total, avail;
	if (field_u64(text, "MemTotal:", &total) < 0 || field_u64(text, "MemAvailable:", &avail) < 0)
		return -1;
	*ret_bytes = (total > avail ? total - avail : 0) * 1024;
	return 0;
}

uint64_t stats_cgroup_working_set(uint64_t usage, const char *memory_stat, bool v2)
{
	uint64_t inactive = 0;
	if (memory_stat && field_u64(memory_stat, v2 ? "inactive_file " : "total_inactive_file ", &inactive) < 0)
		inactive = 0;
	return usage > inactive ? usage - inactive : 0;
}

int stats_cpu_stat_usage_ns(const char *text, uint64_t *ret_ns)
{
	uint64_t us;
	if (field_u64(text, "usage_usec ", &us) < 0)
		return -1;
	*ret_ns = us * 1000;
	return 0;
}

int stats_proc_pid_stat(const char *text, long clk_tck, long page_size, uint64_t *ret_ns, uint64_t *ret_rss)
{
	/* "pid (comm) state ppid ...": comm may hold spaces and parentheses; fields resume after the last ')' */
	const char *p = text ? strrchr(text, ')') : NULL;
	if (!p || clk_tck <= 0 || page_size <= 0)
		return -1;
	p++;
	unsigned long long v[22];
	int n = 0;
	while (n < 22) {
		while (*p == ' ')
			p++;
		if (n == 0) { /* state: one character */
			if (!*p || *p == '\n')
				return -1;
			p++;
			v[n++] = 0;
			continue;
		}
		char *end;
		long long x = strtoll(p, &end, 10);
		if (end == p)
			return -1;
		v[n++] = (unsigned long long)(x < 0 ? 0 : x);
		p = end;
	}
	/* fields from 3 (state) on: utime 14, stime 15, cutime 16, cstime 17, rss 24 -> v[11..14], v[21] */
	unsigned long long ticks = v[11] + v[12] + v[13] + v[14];
	*ret_ns = (uint64_t)((unsigned __int128)ticks * 1000000000u / (unsigned long)clk_tck);
	*ret_rss = (uint64_t)v[21] * (uint64_t)page_size;
	return 0;
}

/* ---- sampling ---- */

struct sample {
	char *key; /* "node", "pod/<uid>", "ctr/<uid>/<id>" */
	uint64_t cpu_ns, mem;
};

struct snap {
	struct sample *v;
	size_t n, cap;
	int64_t t_ns; /* CLOCK_MONOTONIC */
	time_t wall;
};

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static char *g_parent, *g_rt_root;
static struct snap g_prev, g_last;

void kl_stats_configure(const char *cgroup_parent)
{
	pthread_mutex_lock(&g_lock);
	free(g_parent);
	g_parent = cgroup_parent && *cgroup_parent ? xstrdup(cgroup_parent) : NULL;
	pthread_mutex_unlock(&g_lock);
}

void kl_stats_set_runtime_root(const char *dir)
{
	pthread_mutex_lock(&g_lock);
	free(g_rt_root);
	g_rt_root = dir && *dir ? xstrdup(dir) : NULL;
	pthread_mutex_unlock(&g_lock);
}

static int64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* Whole small file as a new string, or NULL. */
static char *slurp(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	struct buf b = BUF_INIT;
	char tmp[4096];
	ssize_t n;
	while ((n = read(fd, tmp, sizeof(tmp))) > 0 && b.len < (1u << 20))
		buf_add(&b, tmp, (size_t)n);
	close(fd);
	if (n < 0) {
		buf_release(&b);
		return NULL;
	}
	return buf_detach(&b, NULL);
}

static int read_u64(const char *path, uint64_t *ret)
{
	char *t = slurp(path);
	char *end;
	int rc = -1;
	if (t) {
		unsigned long long v = strtoull(t, &end, 10);
		if (end != t) {
			*ret = v;
			rc = 0;
		}
	}
	free(t);
	return rc;
}

static void snap_add(struct snap *s, char *key, uint64_t cpu_ns, uint64_t mem)
{
	if (s->n == s->cap) {
		s->cap = s->cap ? s->cap * 2 : 16;
		s->v = xrealloc(s->v, s->cap * sizeof(*s->v));
	}
	s->v[s->n++] = (struct sample){ key, cpu_ns, mem };
}

static void snap_release(struct snap *s)
{
	for (size_t i = 0; i < s->n; i++)
		free(s->v[i].key);
	free(s->v);
	*s = (struct snap){ 0 };
}

static const struct sample *snap_find(const struct snap *s, const char *key)
{
	for (size_t i = 0; i < s->n; i++)
		if (strcmp(s->v[i].key, key) == 0)
			return &s->v[i];
	return NULL;
}

static bool cgroup_v2(void)
{
	return access(CGROOT "/cgroup.controllers", F_OK) == 0;
}

/* The usage of cgroup cg (absolute cgroup path); false when it does not exist. */
static bool cgroup_sample(const char *cg, bool v2, uint64_t *cpu_ns, uint64_t *mem)
{
	char path[4096];
	uint64_t usage = 0;
	char *st;
	if (v2) {
		snprintf(path, sizeof(path), CGROOT "%s/cpu.stat", cg);
		char *cs = slurp(path);
		int rc = cs ? stats_cpu_stat_usage_ns(cs, cpu_ns) : -1;
		free(cs);
		if (rc < 0)
			return false;
		snprintf(path, sizeof(path), CGROOT "%s/memory.current", cg);
		if (read_u64(path, &usage) < 0)
			usage = 0;
		snprintf(path, sizeof(path), CGROOT "%s/memory.stat", cg);
	} else {
		snprintf(path, sizeof(path), CGROOT "/cpuacct%s/cpuacct.usage", cg);
		if (read_u64(path, cpu_ns) < 0)
			return false;
		snprintf(path, sizeof(path), CGROOT "/memory%s/memory.usage_in_bytes", cg);
		if (read_u64(path, &usage) < 0)
			usage = 0;
		snprintf(path, sizeof(path), CGROOT "/memory%s/memory.stat", cg);
	}
	st = slurp(path);
	*mem = stats_cgroup_working_set(usage, st, v2);
	free(st);
	return true;
}

/* Every pod<uid> cgroup under parent and its container cgroups. */
static void sample_pods(struct snap *s, const char *parent)
{
	bool v2 = cgroup_v2();
	char dir[4096];
	snprintf(dir, sizeof(dir), v2 ? CGROOT "%s" : CGROOT "/cpuacct%s", parent);
	DIR *d = opendir(dir);
	if (!d)
		return;
	struct dirent *e;
	while ((e = readdir(d))) {
		if (strncmp(e->d_name, "pod", 3) != 0 || !e->d_name[3])
			continue;
		const char *uid = e->d_name + 3;
		char *cg = xasprintf("%s/%s", parent, e->d_name);
		uint64_t cpu, mem;
		if (cgroup_sample(cg, v2, &cpu, &mem)) {
			snap_add(s, xasprintf("pod/%s", uid), cpu, mem);
			char *sub = xasprintf("%s/%s", dir, e->d_name);
			DIR *cd = opendir(sub);
			struct dirent *ce;
			while (cd && (ce = readdir(cd))) {
				if (ce->d_type != DT_DIR || ce->d_name[0] == '.')
					continue;
				char *ccg = xasprintf("%s/%s", cg, ce->d_name);
				if (cgroup_sample(ccg, v2, &cpu, &mem))
					snap_add(s, xasprintf("ctr/%s/%s", uid, ce->d_name), cpu, mem);
				free(ccg);
			}
			if (cd)
				closedir(cd);
			free(sub);
		}
		free(cg);
	}
	closedir(d);
}

/* The process runtime: pods/<uid>/containers/<name>/state.json's pid, from /proc. */
static void sample_processes(struct snap *s, const char *root)
{
	char *pods = xasprintf("%s/pods", root);
	DIR *d = opendir(pods);
	struct dirent *e;
	long tck = sysconf(_SC_CLK_TCK), pg = sysconf(_SC_PAGESIZE);
	while (d && (e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		char *cdir = xasprintf("%s/%s/containers", pods, e->d_name);
		DIR *cd = opendir(cdir);
		struct dirent *ce;
		uint64_t pod_cpu = 0, pod_mem = 0;
		bool any = false;
		while (cd && (ce = readdir(cd))) {
			if (ce->d_name[0] == '.')
				continue;
			char *sf = xasprintf("%s/%s/state.json", cdir, ce->d_name);
			json_t *st = json_load_file(sf, 0, NULL);
			free(sf);
			json_int_t pid = json_integer_value(json_object_get(st, "pid"));
			json_decref(st);
			char *exit_file = xasprintf("%s/%s/exit.json", cdir, ce->d_name);
			bool ended = access(exit_file, F_OK) == 0;
			free(exit_file);
			if (pid <= 0 || ended)
				continue;
			char path[64];
			snprintf(path, sizeof(path), "/proc/%lld/stat", (long long)pid);
			char *text = slurp(path);
			uint64_t cpu, rss;
			if (text && stats_proc_pid_stat(text, tck, pg, &cpu, &rss) == 0) {
				snap_add(s, xasprintf("ctr/%s/%s", e->d_name, ce->d_name), cpu, rss);
				pod_cpu += cpu;
				pod_mem += rss;
				any = true;
			}
			free(text);
		}
		if (cd)
			closedir(cd);
		if (any)
			snap_add(s, xasprintf("pod/%s", e->d_name), pod_cpu, pod_mem);
		free(cdir);
	}
	if (d)
		closedir(d);
	free(pods);
}

static void sample_all(struct snap *s, const char *runtime_name, const char *parent, const char *rt_root)
{
	*s = (struct snap){ 0 };
	s->t_ns = mono_ns();
	s->wall = time(NULL);
	char *st = slurp("/proc/stat"), *mi = slurp("/proc/meminfo");
	uint64_t cpu = 0, mem = 0;
	if (st)
		stats_proc_stat_cpu_ns(st, sysconf(_SC_CLK_TCK), &cpu);
	if (mi)
		stats_meminfo_working_set(mi, &mem);
	free(st);
	free(mi);
	snap_add(s, xstrdup("node"), cpu, mem);
	if (parent && strcmp(runtime_name, "cri") == 0)
		sample_pods(s, parent);
	if (rt_root && strcmp(runtime_name, "process") == 0)
		sample_processes(s, rt_root);
}

static json_t *usage_json(const struct sample *cur, const struct snap *base, int64_t dt)
{
	const struct sample *b = snap_find(base, cur->key);
	uint64_t rate = b ? stats_rate_nanocores(b->cpu_ns, cur->cpu_ns, dt) : 0;
	return json_pack("{s:I,s:I}", "cpuNanoCores", (json_int_t)rate, "memoryWorkingSetBytes", (json_int_t)cur->mem);
}

static json_t *render(const struct snap *cur, const struct snap *base, const char *runtime_name)
{
	int64_t dt = cur->t_ns - base->t_ns;
	bool fake = strcmp(runtime_name, "fake") == 0;
	bool cri = strcmp(runtime_name, "cri") == 0, proc = strcmp(runtime_name, "process") == 0;
	struct buf ts = BUF_INIT;
	rfc3339_add(&ts, cur->wall);
	json_t *pods = json_array();
	json_t *j = json_pack("{s:s,s:f,s:s,s:o}", "timestamp", buf_cstr(&ts), "windowSeconds", (double)dt / 1e9,
			      "source", fake ? "synthetic" : cri ? "cgroup" : proc ? "proc" : "none",
			      "pods", pods);
	buf_release(&ts);
	for (size_t i = 0; i < cur->n; i++) {
		const struct sample *c = &cur->v[i];
		if (strcmp(c->key, "node") == 0) {
			json_object_set_new(j, "node", usage_json(c, base, dt));
		} else if (strncmp(c->key, "pod/", 4) == 0) {
			json_t *p = usage_json(c, base, dt);
			json_object_set_new(p, "uid", json_string(c->key + 4));
			json_t *ctrs = json_array();
			json_object_set_new(p, "containers", ctrs);
			size_t ul = strlen(c->key + 4);
			for (size_t k = 0; k < cur->n; k++) {
				const char *key = cur->v[k].key;
				if (strncmp(key, "ctr/", 4) || strncmp(key + 4, c->key + 4, ul) || key[4 + ul] != '/')
					continue;
				json_t *cj = usage_json(&cur->v[k], base, dt);
				json_object_set_new(cj, "id", json_string(key + 5 + ul));
				json_array_append_new(ctrs, cj);
			}
			json_array_append_new(pods, p);
		}
	}
	if (fake)
		json_object_set_new(j, "syntheticContainer",
				    json_pack("{s:I,s:I}", "cpuNanoCores", (json_int_t)SYNTH_NANOCORES,
					      "memoryWorkingSetBytes", (json_int_t)SYNTH_BYTES));
	return j;
}

void kl_stats_usage(const char *runtime_name, struct buf *out)
{
	pthread_mutex_lock(&g_lock);
	char *parent = g_parent ? xstrdup(g_parent) : NULL;
	char *rt_root = g_rt_root ? xstrdup(g_rt_root) : NULL;
	pthread_mutex_unlock(&g_lock);
	struct snap cur, fresh_base = { 0 };
	sample_all(&cur, runtime_name, parent, rt_root);
	json_t *j = NULL;
	pthread_mutex_lock(&g_lock);
	const struct snap *base = NULL;
	if (g_last.n && cur.t_ns - g_last.t_ns >= MIN_WINDOW_NS && cur.t_ns - g_last.t_ns <= MAX_AGE_NS)
		base = &g_last;
	else if (g_prev.n && cur.t_ns - g_prev.t_ns >= MIN_WINDOW_NS && cur.t_ns - g_prev.t_ns <= MAX_AGE_NS)
		base = &g_prev;
	if (base)
		j = render(&cur, base, runtime_name);
	pthread_mutex_unlock(&g_lock);
	if (!j) {
		/* no usable earlier sample: take a second one a second later */
		fresh_base = cur;
		usleep(1000000);
		sample_all(&cur, runtime_name, parent, rt_root);
		j = render(&cur, &fresh_base, runtime_name);
		snap_release(&fresh_base);
	}
	pthread_mutex_lock(&g_lock);
	if (!g_last.n || cur.t_ns - g_last.t_ns >= MIN_WINDOW_NS) {
		snap_release(&g_prev);
		g_prev = g_last;
		g_last = cur;
	} else {
		snap_release(&cur);
	}
	pthread_mutex_unlock(&g_lock);
	free(parent);
	free(rt_root);
	char *s = json_dumps(j, JSON_COMPACT);
	buf_adds(out, s);
	free(s);
	json_decref(j);
}
