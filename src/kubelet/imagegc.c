/* Image garbage collection by disk usage, as Kubernetes' kubelet does it (see images.h): the
 * pure choice (imggc_bytes_to_free, imggc_select), the duration flag parser, and the collector
 * thread.
 *
 * The collector's filesystem: the runtime's ImageFsInfo names its mountpoint (containerd 1.6:
 * <root>/io.containerd.snapshotter.v1.<snapshotter>, with the snapshotter's own used_bytes);
 * like the kubelet (through cAdvisor) we take capacity and free space of the filesystem that
 * holds it, from statvfs, so usage counts everything on that disk, not images alone.
 *
 * Images in use: those any container of the runtime refers to (ListContainers, every state,
 * every kubelet sharing the runtime), the runtime's pinned images, and the sandbox image (the
 * runtime's Status verbose info "config" -> "sandboxImage", resolved with ImageStatus); sandboxes
 * hold no image reference of their own in the CRI. Last-used times live in memory: after a
 * kubelet restart every image counts as first detected then, as in Kubernetes. */
#define _GNU_SOURCE
#include "images.h"
#include "ursa/cri.h"
#include "ursa/log.h"
#include "ursa/timeutil.h"
#include "ursa/xalloc.h"
#include <jansson.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <time.h>

#define DETECT_MS 10000L
#define DURATION_MAX_MS (366LL * 24 * 3600 * 1000)

/* ---- pure ---- */

uint64_t imggc_bytes_to_free(const struct imggc_policy *p, uint64_t capacity, uint64_t available)
{
	if (capacity == 0 || p->high_pct >= 100)
		return 0;
	if (available > capacity)
		available = capacity;
	int usage = 100 - (int)((unsigned __int128)available * 100 / capacity);
	if (usage < p->high_pct)
		return 0;
	/* capacity*(100-low)/100 without overflowing for huge filesystems */
	uint64_t keep_pct = (uint64_t)(100 - p->low_pct);
	uint64_t keep_free = capacity / 100 * keep_pct + capacity % 100 * keep_pct / 100;
	return keep_free > available ? keep_free - available : 0;
}

struct cand {
	const struct imggc_image *im;
	size_t idx;
};

static int cand_cmp(const void *a, const void *b)
{
	const struct imggc_image *x = ((const struct cand *)a)->im, *y = ((const struct cand *)b)->im;
	if (x->last_used_ms != y->last_used_ms)
		return x->last_used_ms < y->last_used_ms ? -1 : 1;
	if (x->first_seen_ms != y->first_seen_ms)
		return x->first_seen_ms < y->first_seen_ms ? -1 : 1;
	size_t ia = ((const struct cand *)a)->idx, ib = ((const struct cand *)b)->idx;
	return ia < ib ? -1 : ia > ib;
}

size_t imggc_select(const struct imggc_policy *p, const struct imggc_image *imgs, size_t n, int64_t now_ms,
		    uint64_t to_free, size_t *ret_idx, uint64_t *ret_freed)
{
	*ret_freed = 0;
	if (to_free == 0 || n == 0)
		return 0;
	struct cand *c = xcalloc(n, sizeof(*c));
	size_t nc = 0;
	for (size_t i = 0; i < n; i++) {
		const struct imggc_image *im = &imgs[i];
		if (im->in_use || im->pinned || now_ms - im->first_seen_ms < p->min_age_ms)
			continue;
		c[nc++] = (struct cand){ .im = im, .idx = i };
	}
	qsort(c, nc, sizeof(*c), cand_cmp);
	size_t k = 0;
	for (size_t i = 0; i < nc && *ret_freed < to_free; i++) {
		ret_idx[k++] = c[i].idx;
		*ret_freed += c[i].im->size;
	}
	free(c);
	return k;
}

int imggc_parse_duration(const char *s, int64_t *ret_ms)
{
	if (!s || !*s)
		return -1;
	if (strcmp(s, "0") == 0) {
		*ret_ms = 0;
		return 0;
	}
	double total = 0;
	const char *q = s;
	while (*q) {
		double v = 0, scale = 1;
		bool digits = false;
		while (*q >= '0' && *q <= '9') {
			v = v * 10 + (*q++ - '0');
			digits = true;
			if (v > 1e15)
				return -1;
		}
		if (*q == '.') {
			q++;
			while (*q >= '0' && *q <= '9') {
				scale /= 10;
				v += (*q++ - '0') * scale;
				digits = true;
			}
		}
		if (!digits)
			return -1;
		double unit;
		if (strncmp(q, "ms", 2) == 0) {
			unit = 1;
			q += 2;
		} else if (*q == 'h') {
			unit = 3600e3;
			q++;
		} else if (*q == 'm') {
			unit = 60e3;
			q++;
		} else if (*q == 's') {
			unit = 1e3;
			q++;
		} else {
			return -1;
		}
		total += v * unit;
		if (total > (double)DURATION_MAX_MS)
			return -1;
	}
	*ret_ms = (int64_t)(total + 0.5);
	return 0;
}

/* ---- the collector ---- */

struct record {
	char *id;
	int64_t first_seen_ms, last_used_ms;
	bool seen;
};

struct img_gc {
	struct cri *cri;
	struct imggc_policy policy;
	int64_t period_ms;
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool stopping;
	struct record *rec;
	size_t nrec;
};

static struct record *record_get(struct img_gc *g, const char *id, int64_t now)
{
	for (size_t i = 0; i < g->nrec; i++)
		if (strcmp(g->rec[i].id, id) == 0)
			return &g->rec[i];
	g->rec = xrealloc(g->rec, (g->nrec + 1) * sizeof(*g->rec));
	struct record *r = &g->rec[g->nrec++];
	*r = (struct record){ .id = xstrdup(id), .first_seen_ms = now };
	return r;
}

static bool in_list(char **v, size_t n, const char *s)
{
	for (size_t i = 0; i < n; i++)
		if (v[i] && strcmp(v[i], s) == 0)
			return true;
	return false;
}

/* Whether a container refers to im (by id, a tag or a digest). */
static bool image_used(const Runtime__V1__Image *im, char **refs, size_t nrefs)
{
	for (size_t i = 0; i < nrefs; i++) {
		if (strcmp(refs[i], im->id) == 0 || in_list(im->repo_tags, im->n_repo_tags, refs[i]) ||
		    in_list(im->repo_digests, im->n_repo_digests, refs[i]))
			return true;
	}
	return false;
}

/* The sandbox image's id from the runtime's verbose status, or NULL. New string. */
static char *sandbox_image_id(struct img_gc *g)
{
	Runtime__V1__StatusRequest req = RUNTIME__V1__STATUS_REQUEST__INIT;
	Runtime__V1__StatusResponse *r = NULL;
	struct cri_err err;
	req.verbose = true;
	if (cri_status(g->cri, &req, &r, &err) != 0)
		return NULL;
	char *name = NULL;
	for (size_t i = 0; i < r->n_info; i++) {
		if (!r->info[i]->key || strcmp(r->info[i]->key, "config") != 0 || !r->info[i]->value)
			continue;
		json_t *cfg = json_loads(r->info[i]->value, 0, NULL);
		const char *s = json_string_value(json_object_get(cfg, "sandboxImage"));
		if (s && *s)
			name = xstrdup(s);
		json_decref(cfg);
	}
	cri_free(r);
	if (!name)
		return NULL;
	Runtime__V1__ImageStatusRequest ireq = RUNTIME__V1__IMAGE_STATUS_REQUEST__INIT;
	Runtime__V1__ImageSpec spec = RUNTIME__V1__IMAGE_SPEC__INIT;
	Runtime__V1__ImageStatusResponse *ir = NULL;
	spec.image = name;
	ireq.image = &spec;
	char *id = NULL;
	if (cri_image_status(g->cri, &ireq, &ir, &err) == 0 && ir->image && ir->image->id && *ir->image->id)
		id = xstrdup(ir->image->id);
	cri_free(ir);
	free(name);
	return id;
}

/* ListImages and ListContainers: updates the records, fills imgs (borrowing from *ret_list,
 * free with cri_free). -1 when the runtime did not answer. */
static int detect(struct img_gc *g, Runtime__V1__ListImagesResponse **ret_list, struct imggc_image **ret_imgs,
		  size_t *ret_n)
{
	Runtime__V1__ListImagesRequest ireq = RUNTIME__V1__LIST_IMAGES_REQUEST__INIT;
	Runtime__V1__ListContainersRequest creq = RUNTIME__V1__LIST_CONTAINERS_REQUEST__INIT;
	Runtime__V1__ListImagesResponse *li = NULL;
	Runtime__V1__ListContainersResponse *lc = NULL;
	struct cri_err err;
	/* containers first: an image pulled and used in between counts as detected, not unused */
	if (cri_list_containers(g->cri, &creq, &lc, &err) != 0 || cri_list_images(g->cri, &ireq, &li, &err) != 0) {
		cri_free(lc);
		log_debug("image gc: runtime not answering", "err=\"%s\"", err.message);
		return -1;
	}
	char **refs = xcalloc(2 * lc->n_containers + 1, sizeof(*refs));
	size_t nrefs = 0;
	for (size_t i = 0; i < lc->n_containers; i++) {
		const Runtime__V1__Container *c = lc->containers[i];
		if (c->image_ref && *c->image_ref)
			refs[nrefs++] = c->image_ref;
		if (c->image && c->image->image && *c->image->image)
			refs[nrefs++] = c->image->image;
	}
	int64_t now = now_ms();
	for (size_t i = 0; i < g->nrec; i++)
		g->rec[i].seen = false;
	struct imggc_image *imgs = xcalloc(li->n_images ? li->n_images : 1, sizeof(*imgs));
	size_t n = 0;
	for (size_t i = 0; i < li->n_images; i++) {
		const Runtime__V1__Image *im = li->images[i];
		if (!im->id || !*im->id)
			continue;
		struct record *r = record_get(g, im->id, now);
		r->seen = true;
		bool used = image_used(im, refs, nrefs);
		if (used)
			r->last_used_ms = now;
		imgs[n++] = (struct imggc_image){ .id = im->id, .size = im->size, .first_seen_ms = r->first_seen_ms,
						  .last_used_ms = r->last_used_ms, .in_use = used,
						  .pinned = im->pinned };
	}
	/* images the runtime no longer has leave the records */
	size_t k = 0;
	for (size_t i = 0; i < g->nrec; i++) {
		if (g->rec[i].seen)
			g->rec[k++] = g->rec[i];
		else
			free(g->rec[i].id);
	}
	g->nrec = k;
	free(refs);
	cri_free(lc);
	*ret_list = li;
	*ret_imgs = imgs;
	*ret_n = n;
	return 0;
}

/* Capacity and free bytes of the image filesystem. -1 when unknown. */
static int image_fs(struct img_gc *g, uint64_t *ret_cap, uint64_t *ret_avail, char *mount, size_t max)
{
	Runtime__V1__ImageFsInfoRequest req = RUNTIME__V1__IMAGE_FS_INFO_REQUEST__INIT;
	Runtime__V1__ImageFsInfoResponse *r = NULL;
	struct cri_err err;
	if (cri_image_fs_info(g->cri, &req, &r, &err) != 0) {
		log_warn("image gc: no image filesystem info", "err=\"%s\"", err.message);
		return -1;
	}
	const char *mp = r->n_image_filesystems && r->image_filesystems[0]->fs_id ?
				 r->image_filesystems[0]->fs_id->mountpoint :
				 NULL;
	snprintf(mount, max, "%s", mp ? mp : "");
	cri_free(r);
	struct statvfs st;
	if (!*mount || statvfs(mount, &st) != 0) {
		log_warn("image gc: cannot stat the image filesystem", "mountpoint=\"%s\"", mount);
		return -1;
	}
	*ret_cap = (uint64_t)st.f_blocks * st.f_frsize;
	*ret_avail = (uint64_t)st.f_bavail * st.f_frsize;
	return 0;
}

static void collect(struct img_gc *g)
{
	uint64_t cap, avail;
	char mount[512];
	if (image_fs(g, &cap, &avail, mount, sizeof(mount)) != 0)
		return;
	uint64_t to_free = imggc_bytes_to_free(&g->policy, cap, avail);
	if (to_free == 0)
		return;
	Runtime__V1__ListImagesResponse *li;
	struct imggc_image *imgs;
	size_t n;
	if (detect(g, &li, &imgs, &n) != 0)
		return;
	char *sandbox = sandbox_image_id(g);
	for (size_t i = 0; i < n; i++)
		if (sandbox && strcmp(imgs[i].id, sandbox) == 0)
			imgs[i].pinned = true;
	int usage = 100 - (int)((unsigned __int128)avail * 100 / cap);
	log_info("image gc: disk usage over the high threshold",
		 "mountpoint=\"%s\" usage=%d high=%d low=%d to_free=%llu", mount, usage, g->policy.high_pct, g->policy.low_pct, (unsigned long long)to_free);
	size_t *idx = xcalloc(n ? n : 1, sizeof(*idx));
	uint64_t planned;
	size_t k = imggc_select(&g->policy, imgs, n, now_ms(), to_free, idx, &planned);
	uint64_t freed = 0;
	for (size_t j = 0; j < k; j++) {
		const Runtime__V1__Image *im = NULL;
		for (size_t i = 0; i < li->n_images; i++)
			if (li->images[i]->id && strcmp(li->images[i]->id, imgs[idx[j]].id) == 0)
				im = li->images[i];
		Runtime__V1__RemoveImageRequest req = RUNTIME__V1__REMOVE_IMAGE_REQUEST__INIT;
		Runtime__V1__ImageSpec spec = RUNTIME__V1__IMAGE_SPEC__INIT;
		struct cri_err err;
		spec.image = (char *)imgs[idx[j]].id;
		req.image = &spec;
		const char *tag = im && im->n_repo_tags ? im->repo_tags[0] : "";
		if (cri_remove_image(g->cri, &req, NULL, &err) != 0) {
			log_warn("image gc: cannot remove image", "id=%s tag=\"%s\" err=\"%s\"", imgs[idx[j]].id, tag,
				 err.message);
			continue;
		}
		freed += imgs[idx[j]].size;
		log_info("image gc: removed image", "id=%s tag=\"%s\" size=%llu", imgs[idx[j]].id, tag,
			 (unsigned long long)imgs[idx[j]].size);
	}
	if (freed < to_free)
		log_warn("image gc: not enough freed",
			 "msg=\"Failed to garbage collect required amount of images. Attempted to free %llu bytes, "
			 "but only found %llu bytes eligible to free.\"",
			 (unsigned long long)to_free, (unsigned long long)freed);
	free(idx);
	free(sandbox);
	free(imgs);
	cri_free(li);
}

/* Waits ms or until stopped: true when stopping. */
static bool gc_sleep(struct img_gc *g, int64_t ms)
{
	struct timespec ts;
	wall_deadline(&ts, ms);
	pthread_mutex_lock(&g->lock);
	while (!g->stopping && pthread_cond_timedwait(&g->cond, &g->lock, &ts) == 0)
		;
	bool stop = g->stopping;
	pthread_mutex_unlock(&g->lock);
	return stop;
}

static void *gc_main(void *arg)
{
	struct img_gc *g = arg;
	int64_t tick = g->period_ms < DETECT_MS ? g->period_ms : DETECT_MS;
	int64_t next_gc = mono_ms() + g->period_ms;
	for (;;) {
		Runtime__V1__ListImagesResponse *li;
		struct imggc_image *imgs;
		size_t n;
		if (detect(g, &li, &imgs, &n) == 0) {
			free(imgs);
			cri_free(li);
		}
		if (mono_ms() >= next_gc) {
			collect(g);
			next_gc = mono_ms() + g->period_ms;
		}
		if (gc_sleep(g, tick))
			break;
	}
	return NULL;
}

struct img_gc *img_gc_start(const char *endpoint, const struct imggc_policy *p, int64_t period_ms)
{
	if (p->high_pct >= 100) {
		log_info("image gc disabled", "high=%d", p->high_pct);
		return NULL;
	}
	struct cri *cri = cri_open(endpoint, 0);
	if (!cri)
		return NULL;
	struct img_gc *g = xcalloc(1, sizeof(*g));
	g->cri = cri;
	g->policy = *p;
	g->period_ms = period_ms > 0 ? period_ms : 300000;
	pthread_mutex_init(&g->lock, NULL);
	pthread_cond_init(&g->cond, NULL);
	if (pthread_create(&g->thread, NULL, gc_main, g) != 0) {
		cri_close(cri);
		pthread_mutex_destroy(&g->lock);
		pthread_cond_destroy(&g->cond);
		free(g);
		return NULL;
	}
	log_info("image gc", "high=%d low=%d min_age_ms=%lld period_ms=%lld", p->high_pct, p->low_pct,
		 (long long)p->min_age_ms, (long long)g->period_ms);
	return g;
}

void img_gc_stop(struct img_gc *g)
{
	if (!g)
		return;
	pthread_mutex_lock(&g->lock);
	g->stopping = true;
	pthread_cond_broadcast(&g->cond);
	pthread_mutex_unlock(&g->lock);
	pthread_join(g->thread, NULL);
	for (size_t i = 0; i < g->nrec; i++)
		free(g->rec[i].id);
	free(g->rec);
	cri_close(g->cri);
	pthread_cond_destroy(&g->cond);
	pthread_mutex_destroy(&g->lock);
	free(g);
}
