/* The "fake" runtime: containers are running the moment their pod starts; nothing is
 * executed and nothing is written to disk. Hollow mode keeps many thousands of pods in one
 * process, so a pod is one allocation: a small header, one struct fcont per container, then
 * the uid and container names packed as NUL-separated strings (about 100 bytes a pod).
 *
 * So that Jobs can complete on hollow nodes, three commands are honoured in pods whose
 * restartPolicy is Never or OnFailure: `sleep N` (N seconds, fractions and an s/m/h/d suffix
 * as coreutils takes them) and `true` exit 0 after that long, `false` exits 1 at once (under
 * Never only: restarts are not simulated). The program is the command's first word (or the
 * first arg without a command), by its last path component. Every other container, and every
 * container of a restartPolicy Always pod, runs until its pod is stopped. */
#include "runtime.h"
#include "runtime_common.h"
#include "ursa/timeutil.h"
#include "ursa/xalloc.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct fcont {
	uint64_t image_hash;
	int64_t exit_at_ms;  /* unix ms when the command exits on its own; 0: runs until stopped */
	int32_t exit_code;
	bool exited;
};

struct fpod {
	struct fpod *next;
	int64_t started_at;  /* unix s */
	int64_t finished_at; /* unix s once stopped */
	uint32_t hash;
	uint16_t ncont;
	bool stopped;
	/* struct fcont cont[ncont]; then "uid\0name0\0name1\0..." */
	struct fcont cont[];
};

struct runtime {
	struct fpod **buckets;
	size_t nbuckets, npods;
	size_t pending;       /* containers that will exit on their own and have not yet */
	int64_t next_exit_ms; /* earliest exit_at_ms of those (0: recompute at the next sync) */
	bool changed;
};

static uint64_t fnv1a(const char *s)
{
	uint64_t h = 1469598103934665603ull;
	for (; s && *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return h;
}

static const char *pod_uid(const struct fpod *p)
{
	return (const char *)(p->cont + p->ncont);
}

/* "N[.F][s|m|h|d]" -> milliseconds, or -1. */
static int64_t sleep_ms(const char *s)
{
	int64_t whole = 0, frac = 0, scale = 1000;
	const char *p = s;
	for (; *p >= '0' && *p <= '9'; p++) {
		whole = whole * 10 + (*p - '0');
		if (whole > 100000000)
			return -1;
	}
	bool digits = p > s;
	if (*p == '.') {
		for (p++; *p >= '0' && *p <= '9'; p++, digits = true)
			if (scale > 1) {
				scale /= 10;
				frac += (*p - '0') * scale;
			}
	}
	if (!digits)
		return -1;
	int64_t unit = 1;
	switch (*p) {
	case 'd': unit = 86400; p++; break;
	case 'h': unit = 3600; p++; break;
	case 'm': unit = 60; p++; break;
	case 's': p++; break;
	default: break;
	}
	if (*p)
		return -1;
	return (whole * 1000 + frac) * unit;
}

/* Whether the container's command exits on its own (see the header): 0 with *ret_after_ms and
 * *ret_code set, else -1. */
static int own_exit(const struct rt_container *c, enum rt_restart rp, int64_t *ret_after_ms, int *ret_code)
{
	const char *argv[3] = { NULL, NULL, NULL };
	size_t n = 0;
	for (char **v = c->command; v && *v; v++, n++)
		if (n < 3)
			argv[n] = *v;
	for (char **v = c->args; v && *v; v++, n++)
		if (n < 3)
			argv[n] = *v;
	if (rp == RT_RESTART_ALWAYS || !argv[0] || n > 2)
		return -1;
	const char *prog = strrchr(argv[0], '/') ? strrchr(argv[0], '/') + 1 : argv[0];
	*ret_after_ms = 0;
	*ret_code = 0;
	if (n == 1 && !strcmp(prog, "true"))
		return 0;
	if (n == 1 && !strcmp(prog, "false") && rp == RT_RESTART_NEVER) {
		*ret_code = 1;
		return 0;
	}
	if (n == 2 && !strcmp(prog, "sleep") && (*ret_after_ms = sleep_ms(argv[1])) >= 0)
		return 0;
	return -1;
}

static struct runtime *fake_create(const char *root_dir, const char *self_exe)
{
	struct runtime *rt = xcalloc(1, sizeof(*rt));
	rt->nbuckets = 16;
	rt->buckets = xcalloc(rt->nbuckets, sizeof(*rt->buckets));
	return rt;
}

static void fake_destroy(struct runtime *rt)
{
	if (!rt)
		return;
	for (size_t b = 0; b < rt->nbuckets; b++) {
		while (rt->buckets[b]) {
			struct fpod *p = rt->buckets[b];
			rt->buckets[b] = p->next;
			free(p);
		}
	}
	free(rt->buckets);
	free(rt);
}

static struct fpod **find_link(struct runtime *rt, const char *uid)
{
	uint32_t h = (uint32_t)fnv1a(uid);
	struct fpod **l = &rt->buckets[h & (rt->nbuckets - 1)];
	for (; *l; l = &(*l)->next)
		if ((*l)->hash == h && !strcmp(pod_uid(*l), uid))
			return l;
	return l;
}

static void grow(struct runtime *rt)
{
	size_t n = rt->nbuckets * 2;
	struct fpod **nb = xcalloc(n, sizeof(*nb));
	for (size_t b = 0; b < rt->nbuckets; b++) {
		while (rt->buckets[b]) {
			struct fpod *p = rt->buckets[b];
			rt->buckets[b] = p->next;
			p->next = nb[p->hash & (n - 1)];
			nb[p->hash & (n - 1)] = p;
		}
	}
	free(rt->buckets);
	rt->buckets = nb;
	rt->nbuckets = n;
}

static int fake_start_pod(struct runtime *rt, const struct rt_pod *pod, char **ret_err)
{
	if (!pod || !pod->uid || !*pod->uid || pod->ncontainers > UINT16_MAX) {
		*ret_err = xstrdup("pod has no uid or too many containers");
		return -1;
	}
	struct fpod **l = find_link(rt, pod->uid);
	if (*l)
		return 0;
	size_t strs = strlen(pod->uid) + 1;
	for (size_t i = 0; i < pod->ncontainers; i++)
		strs += strlen(pod->containers[i].name ? pod->containers[i].name : "") + 1;
	struct fpod *p = xcalloc(1, sizeof(*p) + pod->ncontainers * sizeof(struct fcont) + strs);
	int64_t now = now_ms();
	p->hash = (uint32_t)fnv1a(pod->uid);
	p->ncont = (uint16_t)pod->ncontainers;
	p->started_at = now / 1000;
	char *s = (char *)(p->cont + p->ncont);
	size_t n = strlen(pod->uid) + 1;
	memcpy(s, pod->uid, n);
	s += n;
	for (size_t i = 0; i < pod->ncontainers; i++) {
		const char *name = pod->containers[i].name ? pod->containers[i].name : "";
		int64_t after;
		int code;
		p->cont[i].image_hash = fnv1a(pod->containers[i].image);
		if (own_exit(&pod->containers[i], pod->restart, &after, &code) == 0) {
			p->cont[i].exit_at_ms = now + (after > 0 ? after : 0);
			p->cont[i].exit_code = code;
			if (rt->pending++ == 0 || p->cont[i].exit_at_ms < rt->next_exit_ms)
				rt->next_exit_ms = p->cont[i].exit_at_ms;
		}
		n = strlen(name) + 1;
		memcpy(s, name, n);
		s += n;
	}
	*l = p;
	rt->npods++;
	rt->changed = true;
	if (rt->npods > rt->nbuckets)
		grow(rt);
	return 0;
}

/* The pod's containers will not exit on their own any more. */
static void drop_pending(struct runtime *rt, struct fpod *p)
{
	for (size_t i = 0; i < p->ncont; i++)
		if (p->cont[i].exit_at_ms && !p->cont[i].exited) {
			p->cont[i].exit_at_ms = 0;
			rt->pending--;
		}
}

static int fake_stop_pod(struct runtime *rt, const char *uid, long long grace_s)
{
	struct fpod *p = *find_link(rt, uid);
	if (!p)
		return -1;
	if (!p->stopped) {
		drop_pending(rt, p);
		p->stopped = true;
		p->finished_at = now_ms() / 1000;
		rt->changed = true;
	}
	return 0;
}

static void fake_remove_pod(struct runtime *rt, const char *uid)
{
	struct fpod **l = find_link(rt, uid);
	struct fpod *p = *l;
	if (!p)
		return;
	*l = p->next;
	drop_pending(rt, p);
	free(p);
	rt->npods--;
	rt->changed = true;
}

static int fake_status(struct runtime *rt, const char *uid, struct rt_container_status *out, size_t max)
{
	const struct fpod *p = *find_link(rt, uid);
	if (!p)
		return -1;
	const char *name = pod_uid(p);
	size_t n = p->ncont < max ? p->ncont : max;
	for (size_t i = 0; i < n; i++) {
		struct rt_container_status *s = &out[i];
		name += strlen(name) + 1;
		memset(s, 0, sizeof(*s));
		snprintf(s->name, sizeof(s->name), "%s", name);
		snprintf(s->container_id, sizeof(s->container_id), "fake://%.8s-%s-0", pod_uid(p), name);
		snprintf(s->image_id, sizeof(s->image_id), "fake://sha256:%016llx",
			 (unsigned long long)p->cont[i].image_hash);
		s->started_at = p->started_at;
		if (p->cont[i].exited) {
			s->state = RT_TERMINATED;
			s->exit_code = p->cont[i].exit_code;
			snprintf(s->reason, sizeof(s->reason), "%s", s->exit_code ? "Error" : "Completed");
			s->finished_at = p->cont[i].exit_at_ms / 1000;
		} else if (p->stopped) {
			s->state = RT_TERMINATED;
			snprintf(s->reason, sizeof(s->reason), "Completed");
			s->finished_at = p->finished_at;
		} else {
			s->state = RT_RUNNING;
			s->ready = true;
		}
	}
	return (int)n;
}

/* Containers whose time has come exit; recomputes the earliest pending exit. */
static void reap(struct runtime *rt, int64_t now)
{
	int64_t next = 0;
	for (size_t b = 0; b < rt->nbuckets && rt->pending; b++)
		for (struct fpod *p = rt->buckets[b]; p; p = p->next)
			for (size_t i = 0; i < p->ncont; i++) {
				struct fcont *c = &p->cont[i];
				if (!c->exit_at_ms || c->exited)
					continue;
				if (c->exit_at_ms <= now) {
					c->exited = true;
					rt->pending--;
					rt->changed = true;
				} else if (!next || c->exit_at_ms < next) {
					next = c->exit_at_ms;
				}
			}
	rt->next_exit_ms = next;
}

static bool fake_sync(struct runtime *rt)
{
	int64_t now = now_ms();
	if (rt->pending && (!rt->next_exit_ms || rt->next_exit_ms <= now))
		reap(rt, now);
	bool c = rt->changed;
	rt->changed = false;
	return c;
}

static size_t fake_list_pods(struct runtime *rt, char ***ret)
{
	char **v = xcalloc(rt->npods ? rt->npods : 1, sizeof(*v));
	size_t n = 0;
	for (size_t b = 0; b < rt->nbuckets; b++)
		for (struct fpod *p = rt->buckets[b]; p; p = p->next)
			v[n++] = xstrdup(pod_uid(p));
	*ret = v;
	return n;
}

static char *fake_log_path(struct runtime *rt, const char *tenant, const char *ns, const char *pod,
			   const char *container)
{
	return NULL;
}

const struct runtime_ops runtime_fake = {
	.name = "fake",
	.create = fake_create,
	.destroy = fake_destroy,
	.start_pod = fake_start_pod,
	.stop_pod = fake_stop_pod,
	.remove_pod = fake_remove_pod,
	.status = fake_status,
	.sync = fake_sync,
	.list_pods = fake_list_pods,
	.log_path = fake_log_path,
};
