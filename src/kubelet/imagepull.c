/* Image pulls off the pod worker: a queue of pulls served by a few threads with their own CRI
 * client. See images.h for the contract.
 *
 * Locks: pl->lock guards the queue, the table of pulls in flight and the thread counts; each
 * pull's own lock guards its state and result, so that a pull outlives the puller (the runtime
 * may hold references after img_puller_stop). A thread holds a reference to the puller; the
 * last one out (the owner's or a detached thread's) frees it. */
#define _GNU_SOURCE
#include "images.h"
#include "ursa/cri.h"
#include "ursa/errors.h"
#include "ursa/log.h"
#include "ursa/timeutil.h"
#include "ursa/xalloc.h"
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define STOP_WAIT_MS 2000

enum pull_state { PS_QUEUED, PS_RUNNING, PS_DONE, PS_FAILED };

struct img_pull {
	pthread_mutex_t lock;
	int refs;
	enum pull_state state;
	char *key; /* image, server, user and password joined by '\n': the table's key */
	char *image, *server, *user, *pass;
	uint8_t *sandbox; /* packed PodSandboxConfig, or NULL */
	size_t nsandbox;
	char *ref, *err;
	struct img_pull *next; /* queue or table, under the puller's lock */
};

struct img_puller {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct cri *cri;
	struct img_pull *queue, *queue_tail; /* waiting for a thread */
	struct img_pull *running;            /* pulled now (joinable) */
	int refs;                            /* the owner's and each live thread's */
	int alive;
	bool stopping;
};

static void pull_free(struct img_pull *p)
{
	pthread_mutex_destroy(&p->lock);
	free(p->key);
	free(p->image);
	free(p->server);
	free(p->user);
	free(p->pass);
	free(p->sandbox);
	free(p->ref);
	free(p->err);
	free(p);
}

void img_pull_put(struct img_pull *p)
{
	if (!p)
		return;
	pthread_mutex_lock(&p->lock);
	bool last = --p->refs == 0;
	pthread_mutex_unlock(&p->lock);
	if (last)
		pull_free(p);
}

int img_pull_result(struct img_pull *p, char **ret_ref, char **ret_err)
{
	int rc = 0;
	*ret_ref = NULL;
	*ret_err = NULL;
	pthread_mutex_lock(&p->lock);
	if (p->state == PS_DONE) {
		*ret_ref = xstrdup(p->ref ? p->ref : "");
		rc = 1;
	} else if (p->state == PS_FAILED) {
		*ret_err = xstrdup(p->err ? p->err : "image pull failed");
		rc = -1;
	}
	pthread_mutex_unlock(&p->lock);
	return rc;
}

static void pull_finish(struct img_pull *p, const char *ref, const char *err)
{
	pthread_mutex_lock(&p->lock);
	if (err) {
		p->err = xstrdup(err);
		p->state = PS_FAILED;
	} else {
		p->ref = xstrdup(ref ? ref : "");
		p->state = PS_DONE;
	}
	pthread_mutex_unlock(&p->lock);
}

static void puller_put(struct img_puller *pl)
{
	pthread_mutex_lock(&pl->lock);
	bool last = --pl->refs == 0;
	pthread_mutex_unlock(&pl->lock);
	if (!last)
		return;
	cri_close(pl->cri);
	pthread_cond_destroy(&pl->cond);
	pthread_mutex_destroy(&pl->lock);
	free(pl);
}

/* One PullImage; the pull's fields are read without its lock: they do not change once queued. */
static void pull_run(struct img_puller *pl, struct img_pull *p)
{
	Runtime__V1__PullImageRequest req = RUNTIME__V1__PULL_IMAGE_REQUEST__INIT;
	Runtime__V1__PullImageResponse *r = NULL;
	Runtime__V1__ImageSpec spec = RUNTIME__V1__IMAGE_SPEC__INIT;
	Runtime__V1__AuthConfig auth = RUNTIME__V1__AUTH_CONFIG__INIT;
	ProtobufCMessage *sb = NULL;
	struct cri_err err;
	spec.image = p->image;
	req.image = &spec;
	if (p->user || p->pass) {
		auth.username = p->user ? p->user : "";
		auth.password = p->pass ? p->pass : "";
		/* no server_address: the credentials were already picked for this image's registry
		 * (images.c), and containerd would otherwise use them only where the address parses as a
		 * URL whose host is the host it pulls from ("127.0.0.1:5000" does not parse; a mirror's
		 * host is not docker.io's), dropping them otherwise */
		auth.server_address = "";
		req.auth = &auth;
	}
	if (p->sandbox) {
		sb = protobuf_c_message_unpack(&runtime__v1__pod_sandbox_config__descriptor, NULL, p->nsandbox,
					       p->sandbox);
		req.sandbox_config = (Runtime__V1__PodSandboxConfig *)sb;
	}
	int64_t t0 = mono_ms();
	log_info("cri: pulling image", "image=\"%s\"", p->image);
	int rc = cri_pull_image(pl->cri, &req, &r, &err);
	if (sb)
		protobuf_c_message_free_unpacked(sb, NULL);
	if (rc != 0) {
		log_info("cri: image pull failed", "image=\"%s\" ms=%lld err=\"%s\"", p->image,
			 (long long)(mono_ms() - t0), err.message);
		pull_finish(p, NULL, err.message[0] ? err.message : err_reason(rc));
		return;
	}
	log_info("cri: image pulled", "image=\"%s\" ref=%s ms=%lld", p->image, r->image_ref ? r->image_ref : "",
		 (long long)(mono_ms() - t0));
	pull_finish(p, r->image_ref, NULL);
	cri_free(r);
}

static void *puller_main(void *arg)
{
	struct img_puller *pl = arg;
	pthread_mutex_lock(&pl->lock);
	for (;;) {
		while (!pl->queue && !pl->stopping)
			pthread_cond_wait(&pl->cond, &pl->lock);
		if (pl->stopping)
			break;
		struct img_pull *p = pl->queue;
		pl->queue = p->next;
		if (!pl->queue)
			pl->queue_tail = NULL;
		p->next = pl->running;
		pl->running = p;
		pthread_mutex_lock(&p->lock);
		p->state = PS_RUNNING;
		pthread_mutex_unlock(&p->lock);
		pthread_mutex_unlock(&pl->lock);
		pull_run(pl, p);
		pthread_mutex_lock(&pl->lock);
		for (struct img_pull **l = &pl->running; *l; l = &(*l)->next)
			if (*l == p) {
				*l = p->next;
				break;
			}
		p->next = NULL;
		img_pull_put(p); /* the table's reference */
	}
	pl->alive--;
	pthread_cond_broadcast(&pl->cond);
	pthread_mutex_unlock(&pl->lock);
	puller_put(pl);
	return NULL;
}

struct img_puller *img_puller_start(const char *endpoint, int nthreads)
{
	struct cri *cri = cri_open(endpoint, 0);
	if (!cri)
		return NULL;
	if (nthreads < 1)
		nthreads = 1;
	if (nthreads > 16)
		nthreads = 16;
	struct img_puller *pl = xcalloc(1, sizeof(*pl));
	pthread_mutex_init(&pl->lock, NULL);
	pthread_cond_init(&pl->cond, NULL);
	pl->cri = cri;
	pl->refs = 1;
	for (int i = 0; i < nthreads; i++) {
		pthread_t t;
		pthread_mutex_lock(&pl->lock);
		pl->refs++;
		pl->alive++;
		pthread_mutex_unlock(&pl->lock);
		if (pthread_create(&t, NULL, puller_main, pl) != 0) {
			pthread_mutex_lock(&pl->lock);
			pl->refs--;
			pl->alive--;
			pthread_mutex_unlock(&pl->lock);
			continue;
		}
		pthread_detach(t);
	}
	return pl;
}

void img_puller_stop(struct img_puller *pl)
{
	if (!pl)
		return;
	pthread_mutex_lock(&pl->lock);
	pl->stopping = true;
	pthread_cond_broadcast(&pl->cond);
	struct img_pull *q = pl->queue;
	pl->queue = pl->queue_tail = NULL;
	struct timespec deadline;
	clock_gettime(CLOCK_REALTIME, &deadline);
	deadline.tv_sec += STOP_WAIT_MS / 1000;
	while (pl->alive > 0 && pthread_cond_timedwait(&pl->cond, &pl->lock, &deadline) == 0)
		;
	if (pl->alive > 0)
		log_warn("cri: image pulls still running at stop", "threads=%d", pl->alive);
	pthread_mutex_unlock(&pl->lock);
	while (q) {
		struct img_pull *next = q->next;
		q->next = NULL;
		pull_finish(q, NULL, "the kubelet is stopping");
		img_pull_put(q);
		q = next;
	}
	puller_put(pl);
}

static char *pull_key(const char *image, const char *server, const char *user, const char *pass)
{
	return xasprintf("%s\n%s\n%s\n%s", image, server ? server : "", user ? user : "", pass ? pass : "");
}

static struct img_pull *find_key(struct img_pull *l, const char *key)
{
	for (; l; l = l->next)
		if (strcmp(l->key, key) == 0)
			return l;
	return NULL;
}

struct img_pull *img_pull_get(struct img_puller *pl, const char *image, const char *server, const char *user,
			      const char *pass, const void *sandbox_config)
{
	char *key = pull_key(image, server, user, pass);
	if (!pl) { /* no puller (it could not start): the pull fails, the container backs off */
		struct img_pull *f = xcalloc(1, sizeof(*f));
		pthread_mutex_init(&f->lock, NULL);
		f->key = key;
		f->refs = 1;
		f->state = PS_FAILED;
		f->err = xstrdup("no image puller");
		return f;
	}
	pthread_mutex_lock(&pl->lock);
	struct img_pull *p = find_key(pl->running, key);
	if (!p)
		p = find_key(pl->queue, key);
	if (p) {
		pthread_mutex_lock(&p->lock);
		p->refs++;
		pthread_mutex_unlock(&p->lock);
		pthread_mutex_unlock(&pl->lock);
		free(key);
		return p;
	}
	p = xcalloc(1, sizeof(*p));
	pthread_mutex_init(&p->lock, NULL);
	p->key = key;
	p->image = xstrdup(image);
	p->server = server ? xstrdup(server) : NULL;
	p->user = user ? xstrdup(user) : NULL;
	p->pass = pass ? xstrdup(pass) : NULL;
	if (sandbox_config) {
		p->nsandbox = protobuf_c_message_get_packed_size(sandbox_config);
		p->sandbox = xmalloc(p->nsandbox ? p->nsandbox : 1);
		protobuf_c_message_pack(sandbox_config, p->sandbox);
	}
	if (pl->stopping) {
		p->refs = 1;
		p->state = PS_FAILED;
		p->err = xstrdup("the kubelet is stopping");
		pthread_mutex_unlock(&pl->lock);
		return p;
	}
	p->refs = 2; /* the caller's and the queue's (then the table's) */
	p->state = PS_QUEUED;
	if (pl->queue_tail)
		pl->queue_tail->next = p;
	else
		pl->queue = p;
	pl->queue_tail = p;
	pthread_cond_signal(&pl->cond);
	pthread_mutex_unlock(&pl->lock);
	return p;
}
