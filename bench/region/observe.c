/* ursa-region load's observer (driver.h): one watch of every tenant's pods labelled
 * ursa-region=load, through the gateway as the admin (tenant "all"): each pod's first sight and
 * first Running (pods.tsv, the startup latency), and any pod whose node changed. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
#include "region/driver.h"
#include "ursa/timeutil.h"
#include "ursa/xalloc.h"

#define MAX_LINE (16u << 20)
#define MAX_EXAMPLES 20
#define BASELINE_WAIT_MS 30000
#define PODS_QUERY "labelSelector=ursa-region%3Dload"

struct podrec {
	char *tenant, *ns, *name, *node;
	int64_t created_ms, running_ms;
	bool deleted;
	bool before; /* there before the load (an earlier run's): not counted, not in pods.tsv */
};

struct observer {
	struct drv *d;
	const atomic_bool *stop;
	pthread_t th;
	bool started;
	pthread_mutex_t lock; /* guards pods and the counts */
	struct strmap pods;   /* uid -> struct podrec */
	long long seen, running, node_changes;
	json_t *examples;
	struct hist startup; /* µs */
	atomic_llong relists;
	/* the watch thread's own */
	char *rv;
	struct buf line;
	bool relist, baseline;
};

static void podrec_free(void *v)
{
	struct podrec *p = v;
	free(p->tenant);
	free(p->ns);
	free(p->name);
	free(p->node);
	free(p);
}

static void observe(struct observer *o, const char *type, const json_t *pod)
{
	const json_t *m = json_object_get(pod, "metadata");
	const char *uid = json_string_value(json_object_get(m, "uid"));
	if (!uid)
		return;
	const char *node = json_string_value(json_object_get(json_object_get(pod, "spec"), "nodeName"));
	const char *phase = json_string_value(json_object_get(json_object_get(pod, "status"), "phase"));
	int64_t now = now_ms();
	bool created;

	pthread_mutex_lock(&o->lock);
	struct strmap_ent *e = strmap_put(&o->pods, uid, &created);
	struct podrec *p = e->val;
	if (!p) {
		p = xcalloc(1, sizeof(*p));
		p->tenant = xstrdup(json_string_value(json_object_get(m, "tenant")) ?: "");
		p->ns = xstrdup(json_string_value(json_object_get(m, "namespace")) ?: "");
		p->name = xstrdup(json_string_value(json_object_get(m, "name")) ?: "");
		p->created_ms = now;
		p->running_ms = -1;
		p->before = o->baseline;
		e->val = p;
		if (!p->before)
			o->seen++;
	}
	if (node && *node) {
		if (!p->node) {
			p->node = xstrdup(node);
		} else if (strcmp(p->node, node) != 0) {
			o->node_changes++;
			if (json_array_size(o->examples) < MAX_EXAMPLES)
				json_array_append_new(o->examples,
						      json_pack("{s:s, s:s, s:s, s:s, s:s, s:s}", "tenant", p->tenant,
								"namespace", p->ns, "name", p->name, "uid", uid,
								"first_node", p->node, "then_node", node));
		}
	}
	if (phase && !strcmp(phase, "Running") && p->running_ms < 0 && strcmp(type, "DELETED") != 0 && !p->before) {
		p->running_ms = now;
		o->running++;
		hist_add(&o->startup, (now - p->created_ms) * 1000);
	}
	if (!strcmp(type, "DELETED"))
		p->deleted = true;
	pthread_mutex_unlock(&o->lock);
}

/* Lists the pods (a first sight for those not seen yet) and takes the list's resourceVersion. */
static int obs_list(struct observer *o)
{
	json_t *list = NULL;
	int st = drv_call(o->d, o->d->admin, "list", "GET", "/api/v1/tenants/all/pods?" PODS_QUERY, NULL, NULL, &list);
	const char *rv = json_string_value(json_object_get(json_object_get(list, "metadata"), "resourceVersion"));
	int r = -1;
	if (st == 200 && rv) {
		size_t i;
		json_t *it;
		json_array_foreach (json_object_get(list, "items"), i, it)
			observe(o, "ADDED", it);
		free(o->rv);
		o->rv = xstrdup(rv);
		r = 0;
	} else {
		fprintf(stderr, "ursa-region: observer: listing pods: status %d\n", st);
	}
	json_decref(list);
	return r;
}

static void obs_event(struct observer *o, const char *data, size_t len)
{
	json_t *ev = json_loadb(data, len, 0, NULL);
	const char *type = json_string_value(json_object_get(ev, "type"));
	json_t *obj = json_object_get(ev, "object");
	if (type && !strcmp(type, "ERROR")) {
		o->relist = true;
	} else if (type && obj) {
		const char *rv =
			json_string_value(json_object_get(json_object_get(obj, "metadata"), "resourceVersion"));
		if (rv) {
			free(o->rv);
			o->rv = xstrdup(rv);
		}
		if (strcmp(type, "BOOKMARK") != 0)
			observe(o, type, obj);
	}
	json_decref(ev);
}

static int obs_data(void *ud, const char *data, size_t len)
{
	struct observer *o = ud;
	for (size_t k = 0; k < len; k++) {
		if (data[k] != '\n') {
			if (o->line.len < MAX_LINE)
				buf_addch(&o->line, data[k]);
			continue;
		}
		if (o->line.len > 0 && o->line.len < MAX_LINE)
			obs_event(o, o->line.ptr, o->line.len);
		buf_reset(&o->line);
	}
	return atomic_load(o->stop) || o->relist ? 1 : 0;
}

/* Watches from the last resourceVersion; after an ERROR event or 410, lists again (pods that
 * changed in the gap are seen by the list, their first sight later than it was). */
static void *obs_thread(void *arg)
{
	struct observer *o = arg;
	while (!atomic_load(o->stop)) {
		if (!o->rv && obs_list(o) < 0) {
			drv_sleep_until(mono_us() + 1000000, o->stop);
			continue;
		}
		char *path =
			xasprintf("/api/v1/tenants/all/pods?watch=1&allowWatchBookmarks=true&%s&resourceVersion=%s",
				  PODS_QUERY, o->rv);
		buf_reset(&o->line);
		int64_t t = now_ms(), t0 = mono_us();
		int st = rest_stream(o->d->admin, path, obs_data, o, o->stop);
		if (!atomic_load(o->stop))
			drv_record(o->d, "watch-start", path, t, mono_us() - t0, st);
		free(path);
		if (atomic_load(o->stop))
			break;
		if (o->relist || st == 410) {
			o->relist = false;
			free(o->rv);
			o->rv = NULL;
			atomic_fetch_add(&o->relists, 1);
		}
		drv_sleep_until(mono_us() + (st == 200 ? 100000 : 500000), o->stop);
	}
	return NULL;
}

struct observer *observer_start(struct drv *d, const atomic_bool *stop)
{
	struct observer *o = xcalloc(1, sizeof(*o));
	o->d = d;
	o->stop = stop;
	pthread_mutex_init(&o->lock, NULL);
	strmap_init(&o->pods);
	o->examples = json_array();
	buf_init(&o->line);
	int64_t deadline = mono_ms() + BASELINE_WAIT_MS;
	o->baseline = true;
	while (obs_list(o) < 0 && mono_ms() < deadline && !atomic_load(stop))
		drv_sleep_until(mono_us() + 1000000, stop);
	o->baseline = false;
	o->started = pthread_create(&o->th, NULL, obs_thread, o) == 0;
	return o;
}

void observer_join(struct observer *o)
{
	if (o->started)
		pthread_join(o->th, NULL);
	o->started = false;
}

void observer_free(struct observer *o)
{
	if (!o)
		return;
	observer_join(o);
	strmap_release(&o->pods, podrec_free);
	json_decref(o->examples);
	buf_release(&o->line);
	free(o->rv);
	free(o);
}

void observer_stats(struct observer *o, struct obs_stats *ret)
{
	size_t it = 0;
	memset(ret, 0, sizeof(*ret));
	pthread_mutex_lock(&o->lock);
	ret->seen = o->seen;
	ret->running = o->running;
	ret->node_changes = o->node_changes;
	ret->startup = o->startup;
	for (struct strmap_ent *e = strmap_next(&o->pods, NULL, &it); e; e = strmap_next(&o->pods, e, &it)) {
		struct podrec *p = e->val;
		if (p->before || p->deleted)
			continue;
		if (p->running_ms < 0)
			ret->pending++;
		else
			ret->live++;
	}
	pthread_mutex_unlock(&o->lock);
	ret->relists = atomic_load(&o->relists);
}

json_t *observer_examples(struct observer *o)
{
	pthread_mutex_lock(&o->lock);
	json_t *x = json_deep_copy(o->examples);
	pthread_mutex_unlock(&o->lock);
	return x;
}

int observer_write_tsv(struct observer *o, const char *dir)
{
	struct buf b = BUF_INIT;
	size_t it = 0;
	buf_adds(&b, "tenant\tnamespace\tname\tuid\tcreated_ms\trunning_ms\tnode\n");
	pthread_mutex_lock(&o->lock);
	for (struct strmap_ent *e = strmap_next(&o->pods, NULL, &it); e; e = strmap_next(&o->pods, e, &it)) {
		struct podrec *p = e->val;
		if (!p->before)
			tsv_pod_line(&b, p->tenant, p->ns, p->name, e->key, p->created_ms, p->running_ms,
				     p->node ? p->node : "");
	}
	pthread_mutex_unlock(&o->lock);
	int r = drv_write_file(dir, "pods.tsv", b.ptr ? b.ptr : "", b.len);
	buf_release(&b);
	return r;
}
