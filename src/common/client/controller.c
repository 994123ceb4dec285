/* The controller manager engine (ursa/controller.h): shared informers dispatch events to the
 * watching controllers' queues, a pool of workers per controller drains its queue (and re-queues
 * tick keys after their period), a ticker thread re-queues periodic controllers' objects, and
 * leader election decides when all of it runs. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "ursa/controller.h"
#include "ursa/errors.h"
#include "ursa/log.h"
#include "ursa/timeutil.h"
#include "ursa/xalloc.h"

struct ctl {
	struct ctl_manager *m;
	const struct ctl_def *def;
	bool enabled, running;
	struct workqueue *q;
	pthread_t *th;
	int nth;
	int64_t next_tick_ms;
};

struct shared_inf {
	struct ctl_manager *m;
	const char *path;
	struct informer *inf; /* written once with __atomic_store_n, read with __atomic_load_n */
};

struct ctl_manager {
	struct ctl_config cfg;
	struct ctl *c;
	size_t n;
	struct shared_inf *inf;
	size_t ninf;
	char *identity;
	struct leader_elector *le;
	bool leading, started; /* atomics (__atomic_*) */
	pthread_mutex_t start_mu;
	pthread_t ticker;
	bool has_ticker;
	pthread_mutex_t tick_mu;
	pthread_cond_t tick_cv;
	bool stopping;
};

void ctl_key_self(void *ud, struct workqueue *q, const json_t *obj)
{
	(void)ud;
	char *k = object_key(obj);
	if (k)
		wq_add(q, k);
	free(k);
}

void ctl_key_none(void *ud, struct workqueue *q, const json_t *obj)
{
	(void)ud;
	(void)q;
	(void)obj;
}

static const struct ctl_def *find_def(const struct ctl_def *defs, size_t n, const char *name, size_t len, size_t *ret_i)
{
	for (size_t i = 0; i < n; i++)
		if (strlen(defs[i].name) == len && strncmp(defs[i].name, name, len) == 0) {
			*ret_i = i;
			return &defs[i];
		}
	return NULL;
}

int ctl_parse_controllers(const struct ctl_def *defs, size_t n, const char *list, bool *enabled)
{
	if (!list || !*list)
		list = "*";
	bool *on = xcalloc(n ? n : 1, sizeof(*on)), *off = xcalloc(n ? n : 1, sizeof(*off));
	int rc = 0;
	for (const char *p = list;;) {
		const char *e = strchr(p, ',');
		size_t len = e ? (size_t)(e - p) : strlen(p), i;
		if (len == 1 && *p == '*') {
			for (i = 0; i < n; i++)
				on[i] |= !defs[i].off_by_default;
		} else if (len > 1 && *p == '-' && find_def(defs, n, p + 1, len - 1, &i)) {
			off[i] = true;
		} else if (len > 0 && find_def(defs, n, p, len, &i)) {
			on[i] = true;
		} else {
			rc = E_INVALID;
			goto out;
		}
		if (!e)
			break;
		p = e + 1;
	}
	for (size_t i = 0; i < n; i++)
		enabled[i] = on[i] && !off[i];
out:
	free(on);
	free(off);
	return rc;
}

static bool is_leading(struct ctl_manager *m)
{
	return __atomic_load_n(&m->leading, __ATOMIC_ACQUIRE);
}

static bool watches(const struct ctl_watch *w, const char *path, enum ctl_event ev)
{
	return strcmp(w->path, path) == 0 && (!w->events || (w->events & (unsigned)ev));
}

void ctl_manager_deliver(struct ctl_manager *m, const char *path, enum ctl_event ev, const json_t *obj)
{
	for (size_t i = 0; i < m->n; i++) {
		struct ctl *c = &m->c[i];
		if (!c->enabled)
			continue;
		for (const struct ctl_watch *w = c->def->watch; w < c->def->watch + CTL_MAX_WATCHES && w->path; w++)
			if (watches(w, path, ev))
				(w->keys ? w->keys : ctl_key_self)(m->cfg.ud, c->q, obj);
	}
}

static void on_add(void *ud, const json_t *obj)
{
	struct shared_inf *s = ud;
	ctl_manager_deliver(s->m, s->path, CTL_ADD, obj);
}

static void on_update(void *ud, const json_t *old_obj, const json_t *new_obj)
{
	(void)old_obj;
	struct shared_inf *s = ud;
	ctl_manager_deliver(s->m, s->path, CTL_UPDATE, new_obj);
}

static void on_delete(void *ud, const json_t *obj)
{
	struct shared_inf *s = ud;
	ctl_manager_deliver(s->m, s->path, CTL_DELETE, obj);
}

static const struct informer_handlers dispatch = { on_add, on_update, on_delete, NULL, NULL };

struct requeue {
	struct ctl_manager *m;
	struct ctl *c;
	ctl_keys_fn keys;
};

static void requeue_one(void *ud, const json_t *obj)
{
	struct requeue *r = ud;
	r->keys(r->m->cfg.ud, r->c->q, obj);
}

/* Re-queues every object of w's informer through its keys function. */
static void requeue_all(struct ctl_manager *m, struct ctl *c, const struct ctl_watch *w)
{
	struct informer *inf = ctl_manager_informer(m, w->path);
	struct requeue r = { m, c, w->keys ? w->keys : ctl_key_self };
	if (inf)
		informer_foreach(inf, requeue_one, &r);
}

static void *run_worker(void *arg)
{
	struct ctl *c = arg;
	struct ctl_manager *m = c->m;
	char *key;
	while ((key = wq_get(c->q)) != NULL) {
		if (!c->def->standby && !is_leading(m)) {
			/* a standby drops the key; leadership re-queues everything (requeue_all) */
			wq_forget(c->q, key);
		} else {
			int rc = c->def->sync(m->cfg.ud, key);
			if (rc < 0) {
				log_debug("sync failed", "controller=%s key=\"%s\" err=%s", c->def->name, key,
					  err_reason(rc));
				wq_add_rate_limited(c->q, key);
			} else {
				wq_forget(c->q, key);
			}
		}
		/* the next tick counts from the end of this one, as a loop that sleeps would */
		if (c->def->tick_key && c->def->period_ms > 0 && strcmp(key, c->def->tick_key) == 0)
			wq_add_after(c->q, key, c->def->period_ms);
		wq_done(c->q, key);
		free(key);
	}
	return NULL;
}

static void *run_ticker(void *arg)
{
	struct ctl_manager *m = arg;
	pthread_mutex_lock(&m->tick_mu);
	while (!m->stopping) {
		int64_t now = mono_ms(), next = now + 1000;
		for (size_t i = 0; i < m->n; i++) {
			struct ctl *c = &m->c[i];
			if (!c->running || c->def->period_ms <= 0 || c->def->tick_key || !c->def->watch[0].path)
				continue;
			if (c->next_tick_ms <= now) {
				c->next_tick_ms = now + c->def->period_ms;
				pthread_mutex_unlock(&m->tick_mu);
				requeue_all(m, c, &c->def->watch[0]);
				pthread_mutex_lock(&m->tick_mu);
			}
			if (c->next_tick_ms < next)
				next = c->next_tick_ms;
		}
		if (m->stopping)
			break;
		int64_t wait = next - mono_ms();
		if (wait > 0) {
			struct timespec ts;
			mono_deadline(&ts, wait);
			pthread_cond_timedwait(&m->tick_cv, &m->tick_mu, &ts);
		}
	}
	pthread_mutex_unlock(&m->tick_mu);
	return NULL;
}

/* Informers, start hooks, tick keys, workers, ticker: once. */
static void run_all(struct ctl_manager *m)
{
	pthread_mutex_lock(&m->start_mu);
	if (__atomic_load_n(&m->started, __ATOMIC_ACQUIRE))
		goto out;
	for (size_t i = 0; i < m->ninf; i++) {
		struct informer *inf = informer_start(m->cfg.rest, m->inf[i].path, NULL, &dispatch, &m->inf[i]);
		__atomic_store_n(&m->inf[i].inf, inf, __ATOMIC_RELEASE);
	}
	bool periodic = false;
	for (size_t i = 0; i < m->n; i++) {
		struct ctl *c = &m->c[i];
		if (!c->enabled || (c->def->start && c->def->start(m->cfg.ud) < 0))
			continue;
		c->running = true;
		if (c->def->tick_key)
			wq_add(c->q, c->def->tick_key);
		c->next_tick_ms = mono_ms() + c->def->period_ms;
		periodic |= c->def->period_ms > 0 && !c->def->tick_key;
		int nw = c->def->workers > m->cfg.workers ? c->def->workers : m->cfg.workers;
		if (nw > 64)
			nw = 64;
		c->th = xcalloc((size_t)nw, sizeof(*c->th));
		for (c->nth = 0; c->nth < nw; c->nth++)
			pthread_create(&c->th[c->nth], NULL, run_worker, c);
	}
	if (periodic)
		m->has_ticker = pthread_create(&m->ticker, NULL, run_ticker, m) == 0;
	__atomic_store_n(&m->started, true, __ATOMIC_RELEASE);
out:
	pthread_mutex_unlock(&m->start_mu);
}

static void on_started(void *ud)
{
	struct ctl_manager *m = ud;
	__atomic_store_n(&m->leading, true, __ATOMIC_RELEASE);
	if (m->cfg.on_leading)
		m->cfg.on_leading(m->cfg.ud, true);
	if (m->cfg.start_on_leading) {
		run_all(m);
		return;
	}
	/* keys dropped while standing by come back */
	for (size_t i = 0; i < m->n; i++) {
		struct ctl *c = &m->c[i];
		if (!c->running || c->def->standby)
			continue;
		for (const struct ctl_watch *w = c->def->watch; w < c->def->watch + CTL_MAX_WATCHES && w->path; w++)
			if (!w->events || (w->events & (CTL_ADD | CTL_UPDATE)))
				requeue_all(m, c, w);
		if (c->def->tick_key)
			wq_add(c->q, c->def->tick_key);
	}
}

static void on_stopped(void *ud)
{
	struct ctl_manager *m = ud;
	__atomic_store_n(&m->leading, false, __ATOMIC_RELEASE);
	if (m->cfg.on_leading)
		m->cfg.on_leading(m->cfg.ud, false);
}

int ctl_manager_new(const struct ctl_config *cfg, struct ctl_manager **ret_m)
{
	bool *enabled = xcalloc(cfg->ndefs ? cfg->ndefs : 1, sizeof(*enabled));
	if (ctl_parse_controllers(cfg->defs, cfg->ndefs, cfg->controllers, enabled) < 0) {
		free(enabled);
		return E_INVALID;
	}
	struct ctl_manager *m = xcalloc(1, sizeof(*m));
	m->cfg = *cfg;
	m->cfg.workers = cfg->workers < 1 ? 1 : cfg->workers > 64 ? 64 : cfg->workers;
	m->n = cfg->ndefs;
	m->c = xcalloc(m->n ? m->n : 1, sizeof(*m->c));
	m->inf = xcalloc((m->n ? m->n : 1) * CTL_MAX_WATCHES, sizeof(*m->inf));
	for (size_t i = 0; i < m->n; i++) {
		struct ctl *c = &m->c[i];
		c->m = m;
		c->def = &cfg->defs[i];
		c->enabled = enabled[i];
		if (!c->enabled)
			continue;
		c->q = wq_new();
		for (const struct ctl_watch *w = c->def->watch; w < c->def->watch + CTL_MAX_WATCHES && w->path; w++) {
			size_t j = 0;
			while (j < m->ninf && strcmp(m->inf[j].path, w->path) != 0)
				j++;
			if (j == m->ninf)
				m->inf[m->ninf++] = (struct shared_inf){ .m = m, .path = w->path };
		}
	}
	free(enabled);
	if (cfg->identity) {
		m->identity = xstrdup(cfg->identity);
	} else {
		char host[256] = "host";
		gethostname(host, sizeof(host) - 1);
		host[sizeof(host) - 1] = '\0';
		m->identity = xasprintf("%s_%ld", host, (long)getpid());
	}
	pthread_mutex_init(&m->start_mu, NULL);
	pthread_mutex_init(&m->tick_mu, NULL);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&m->tick_cv, &ca);
	pthread_condattr_destroy(&ca);
	*ret_m = m;
	return 0;
}

void ctl_manager_start(struct ctl_manager *m)
{
	if (!m->cfg.leader_elect) {
		/* leading before the workers start, so that none drops a key as a standby would */
		__atomic_store_n(&m->leading, true, __ATOMIC_RELEASE);
		if (m->cfg.on_leading)
			m->cfg.on_leading(m->cfg.ud, true);
		run_all(m);
		return;
	}
	if (!m->cfg.start_on_leading)
		run_all(m);
	struct leader_config lc = { .lease_path = m->cfg.lease_path, .identity = m->identity,
				    .lease_duration_s = m->cfg.lease_duration_s, .renew_deadline_s = m->cfg.renew_deadline_s,
				    .retry_period_s = m->cfg.retry_period_s, .on_started = on_started,
				    .on_stopped = on_stopped, .ud = m };
	m->le = leader_start(m->cfg.rest, &lc);
}

void ctl_manager_free(struct ctl_manager *m)
{
	if (!m)
		return;
	if (m->le)
		leader_stop(m->le);
	pthread_mutex_lock(&m->start_mu); /* a start in progress finishes first */
	/* The ticker and the workers read the informers (a sync in progress may hold a snapshot
	 * or look an object up): they end before the informers are freed. Informer threads only
	 * add to the queues, which ignore adds once shut down and are freed last. */
	pthread_mutex_lock(&m->tick_mu);
	m->stopping = true;
	pthread_cond_signal(&m->tick_cv);
	pthread_mutex_unlock(&m->tick_mu);
	if (m->has_ticker)
		pthread_join(m->ticker, NULL);
	for (size_t i = 0; i < m->n; i++)
		if (m->c[i].q)
			wq_shutdown(m->c[i].q);
	for (size_t i = 0; i < m->n; i++)
		for (int j = 0; j < m->c[i].nth; j++)
			pthread_join(m->c[i].th[j], NULL);
	for (size_t i = 0; i < m->ninf; i++)
		if (m->inf[i].inf)
			informer_stop(m->inf[i].inf);
	for (size_t i = 0; i < m->n; i++) {
		struct ctl *c = &m->c[i];
		if (c->running && c->def->stop)
			c->def->stop(m->cfg.ud);
		free(c->th);
		if (c->q)
			wq_free(c->q);
	}
	pthread_mutex_unlock(&m->start_mu);
	pthread_mutex_destroy(&m->start_mu);
	pthread_mutex_destroy(&m->tick_mu);
	pthread_cond_destroy(&m->tick_cv);
	free(m->inf);
	free(m->c);
	free(m->identity);
	free(m);
}

static struct ctl *find_ctl(struct ctl_manager *m, const char *name)
{
	for (size_t i = 0; i < m->n; i++)
		if (strcmp(m->c[i].def->name, name) == 0)
			return &m->c[i];
	return NULL;
}

bool ctl_manager_enabled(struct ctl_manager *m, const char *name)
{
	struct ctl *c = find_ctl(m, name);
	return c && c->enabled;
}

struct workqueue *ctl_manager_queue(struct ctl_manager *m, const char *name)
{
	struct ctl *c = find_ctl(m, name);
	return c && c->enabled ? c->q : NULL;
}

struct informer *ctl_manager_informer(struct ctl_manager *m, const char *path)
{
	for (size_t i = 0; i < m->ninf; i++)
		if (strcmp(m->inf[i].path, path) == 0)
			return __atomic_load_n(&m->inf[i].inf, __ATOMIC_ACQUIRE);
	return NULL;
}

bool ctl_manager_leading(struct ctl_manager *m)
{
	return is_leading(m);
}

const char *ctl_manager_identity(struct ctl_manager *m)
{
	return m->identity;
}
