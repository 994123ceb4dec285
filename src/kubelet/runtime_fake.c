/* The "fake" runtime: containers are running the moment their pod starts; nothing is
 * executed and nothing is written to disk. Hollow mode keeps many thousands of pods in one
 * process, so a pod is one allocation: a small header, one image hash per container, then
 * the uid and container names packed as NUL-separated strings (about 100 bytes a pod). */
#include "runtime.h"
#include "runtime_common.h"
#include "ursa/timeutil.h"
#include "ursa/xalloc.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct fpod {
	struct fpod *next;
	int64_t started_at;  /* unix s */
	int64_t finished_at; /* unix s once stopped */
	uint32_t hash;
	uint16_t ncont;
	bool stopped;
	/* uint64_t image_hash[ncont]; then "uid\0name0\0name1\0..." */
	uint64_t data[];
};

struct runtime {
	struct fpod **buckets;
	size_t nbuckets, npods;
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
	return (const char *)(p->data + p->ncont);
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
	struct fpod *p = xcalloc(1, sizeof(*p) + pod->ncontainers * sizeof(uint64_t) + strs);
	p->hash = (uint32_t)fnv1a(pod->uid);
	p->ncont = (uint16_t)pod->ncontainers;
	p->started_at = now_ms() / 1000;
	char *s = (char *)(p->data + p->ncont);
	size_t n = strlen(pod->uid) + 1;
	memcpy(s, pod->uid, n);
	s += n;
	for (size_t i = 0; i < pod->ncontainers; i++) {
		const char *name = pod->containers[i].name ? pod->containers[i].name : "";
		p->data[i] = fnv1a(pod->containers[i].image);
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

static int fake_stop_pod(struct runtime *rt, const char *uid, long long grace_s)
{
	struct fpod *p = *find_link(rt, uid);
	if (!p)
		return -1;
	if (!p->stopped) {
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
		snprintf(s->image_id, sizeof(s->image_id), "fake://sha256:%016llx", (unsigned long long)p->data[i]);
		s->started_at = p->started_at;
		if (p->stopped) {
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

static bool fake_sync(struct runtime *rt)
{
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
