/*
 * ursa-startup: pod startup latency under a steady, open-loop creation rate.
 *
 * Creates pods <prefix>-<i> at --rate pods/s for --duration s (pod i is due at start + i/rate,
 * whatever the earlier creates' latency; --senders threads share the schedule), while one watch
 * on the namespace's pods (from a list's resourceVersion, resumed from the last version seen
 * if the stream ends) records the first event where each pod's status.phase is Running.
 * Latency = that event's arrival - the client-side send time of the create (creationTimestamp
 * has only second resolution). Stops once every created pod ran, or --wait s after the last
 * create. Pods tolerate ursa.io/hollow:NoSchedule, request --cpu / --memory, run --image (with
 * --command through sh -c, if given) and, with --node, are bound to that node at creation.
 *
 * Prints human-readable lines and a final "RESULT {json}" line: created, create_errors,
 * running, p50_ms, p90_ms, p99_ms, max_ms, create_rate (achieved pods/s).
 */
#define _GNU_SOURCE
#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "ursa/buf.h"
#include "ursa/client.h"
#include "ursa/options.h"
#include "ursa/timeutil.h"
#include "ursa/xalloc.h"

#define MAX_PODS 1000000
#define MAX_SENDERS 64
#define MAX_LINE (16u << 20)

struct run {
	struct rest_client *rest;
	const char *pods_path;      /* /api/v1/tenants/<t>/namespaces/<ns>/pods */
	const char *prefix;
	const char *cpu, *memory;
	const char *image, *command, *node; /* command (sh -c) and node may be NULL */
	long long rate, total;
	int64_t start_us;           /* monotonic */
	atomic_llong next;          /* next pod index to create */
	atomic_llong created, create_errors;
	int64_t *sent_us;           /* per pod: monotonic send time, 0 = not sent */
	int64_t *running_us;        /* per pod: first Running event, 0 = not yet */
	atomic_llong running;
	pthread_mutex_t lock;       /* guards sent_us / running_us */
	atomic_bool stop;
	bool relist;                /* the watch reported an ERROR (410 Expired): list again */
	struct buf line;            /* watch stream: partial line */
	char *rv;                   /* last resourceVersion seen (new string) */
};

static void sleep_until_us(int64_t t)
{
	int64_t d = t - mono_us();

	if (d <= 0)
		return;
	struct timespec ts = { .tv_sec = d / 1000000, .tv_nsec = (d % 1000000) * 1000 };
	nanosleep(&ts, NULL);
}

static json_t *pod_body(const struct run *r, long long i)
{
	char *name = xasprintf("%s-%lld", r->prefix, i);
	json_t *c = json_pack("{s:s, s:s, s:{s:{s:s, s:s}}}", "name", "c", "image", r->image, "resources", "requests",
			      "cpu", r->cpu, "memory", r->memory);
	if (r->command)
		json_object_set_new(c, "command", json_pack("[s,s,s]", "sh", "-c", r->command));
	json_t *p = json_pack("{s:s, s:s, s:{s:s, s:{s:s}}, s:{s:[{s:s, s:s, s:s}], s:[o], s:i}}",
			      "apiVersion", "v1", "kind", "Pod", "metadata", "name", name, "labels", "app",
			      "ursa-startup", "spec", "tolerations", "key", "ursa.io/hollow", "operator", "Exists",
			      "effect", "NoSchedule", "containers", c, "terminationGracePeriodSeconds", 1);
	if (r->node)
		json_object_set_new(json_object_get(p, "spec"), "nodeName", json_string(r->node));
	free(name);
	return p;
}

static void *sender(void *arg)
{
	struct run *r = arg;

	for (;;) {
		long long i = atomic_fetch_add(&r->next, 1);
		if (i >= r->total || atomic_load(&r->stop))
			return NULL;
		sleep_until_us(r->start_us + i * 1000000 / r->rate);
		json_t *body = pod_body(r, i);
		pthread_mutex_lock(&r->lock);
		r->sent_us[i] = mono_us();
		pthread_mutex_unlock(&r->lock);
		int st = rest_do(r->rest, "POST", r->pods_path, body, NULL, NULL);
		json_decref(body);
		if (st == 201 || st == 200 || st == 202) {
			atomic_fetch_add(&r->created, 1);
		} else {
			atomic_fetch_add(&r->create_errors, 1);
			pthread_mutex_lock(&r->lock);
			r->sent_us[i] = 0;
			pthread_mutex_unlock(&r->lock);
			if (atomic_load(&r->create_errors) <= 5)
				fprintf(stderr, "ursa-startup: create %s-%lld: status %d\n", r->prefix, i, st);
		}
	}
}

/* The pod index of a name "<prefix>-<i>", or -1. */
static long long pod_index(const struct run *r, const char *name)
{
	size_t n = strlen(r->prefix);
	long long i;

	if (!name || strncmp(name, r->prefix, n) != 0 || name[n] != '-')
		return -1;
	if (parse_int64(name + n + 1, &i) < 0 || i < 0 || i >= r->total)
		return -1;
	return i;
}

static void on_event(struct run *r, const char *data, size_t len)
{
	json_t *ev = json_loadb(data, len, 0, NULL);
	json_t *obj = json_object_get(ev, "object");
	const char *rv = json_string_value(json_object_get(json_object_get(obj, "metadata"), "resourceVersion"));

	if (rv) {
		free(r->rv);
		r->rv = xstrdup(rv);
	}
	const char *type = json_string_value(json_object_get(ev, "type"));
	if (type && strcmp(type, "ERROR") == 0)
		r->relist = true;
	const char *phase = json_string_value(json_object_get(json_object_get(obj, "status"), "phase"));
	if (type && (strcmp(type, "ADDED") == 0 || strcmp(type, "MODIFIED") == 0) && phase &&
	    strcmp(phase, "Running") == 0) {
		long long i = pod_index(r, json_string_value(json_object_get(json_object_get(obj, "metadata"), "name")));
		if (i >= 0) {
			int64_t now = mono_us();
			pthread_mutex_lock(&r->lock);
			if (r->running_us[i] == 0 && r->sent_us[i] != 0) {
				r->running_us[i] = now;
				atomic_fetch_add(&r->running, 1);
			}
			pthread_mutex_unlock(&r->lock);
		}
	}
	json_decref(ev);
}

static int on_data(void *ud, const char *data, size_t len)
{
	struct run *r = ud;

	for (size_t k = 0; k < len; k++) {
		if (data[k] != '\n') {
			if (r->line.len < MAX_LINE)
				buf_addch(&r->line, data[k]);
			continue;
		}
		if (r->line.len > 0 && r->line.len < MAX_LINE)
			on_event(r, r->line.ptr, r->line.len);
		buf_reset(&r->line);
	}
	return atomic_load(&r->stop) || r->relist ? 1 : 0;
}

static int initial_rv(struct run *r);

static void *watcher(void *arg)
{
	struct run *r = arg;

	while (!atomic_load(&r->stop)) {
		char *path = xasprintf("%s?watch=1&resourceVersion=%s&labelSelector=app%%3Dursa-startup", r->pods_path,
				       r->rv);
		buf_reset(&r->line);
		int st = rest_stream(r->rest, path, on_data, r, &r->stop);
		free(path);
		if (atomic_load(&r->stop))
			break;
		if (st != 200 || r->relist) {
			fprintf(stderr, "ursa-startup: watch ended (status %d%s); %s\n", st,
				r->relist ? ", ERROR event" : "", r->relist || st == 410 ? "listing again" : "resuming");
			usleep(200 * 1000);
		}
		if (r->relist || st == 410) {
			/* Pods that became Running in the gap are not seen: they count as not Running. */
			r->relist = false;
			free(r->rv);
			r->rv = NULL;
			while (!atomic_load(&r->stop) && initial_rv(r) < 0)
				usleep(500 * 1000);
		}
	}
	return NULL;
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? -1 : x > y;
}

static double pct(const int64_t *v, size_t n, double p)
{
	if (n == 0)
		return 0;
	size_t k = (size_t)(p * (double)n + 0.999999);
	k = k == 0 ? 0 : k - 1;
	return (double)v[k < n ? k : n - 1] / 1000.0;
}

static void report(struct run *r, double create_s)
{
	int64_t *lat = xcalloc((size_t)r->total, sizeof(*lat));
	size_t n = 0;

	pthread_mutex_lock(&r->lock);
	for (long long i = 0; i < r->total; i++)
		if (r->sent_us[i] && r->running_us[i])
			lat[n++] = r->running_us[i] - r->sent_us[i];
	pthread_mutex_unlock(&r->lock);
	qsort(lat, n, sizeof(*lat), cmp_i64);
	long long created = atomic_load(&r->created);
	double rate = create_s > 0 ? (double)created / create_s : 0;
	printf("created %lld pods in %.1f s (%.1f pods/s), %lld create errors; %zu reached Running\n", created,
	       create_s, rate, atomic_load(&r->create_errors), n);
	printf("startup latency ms: p50 %.0f, p90 %.0f, p99 %.0f, max %.0f\n", pct(lat, n, 0.5), pct(lat, n, 0.9),
	       pct(lat, n, 0.99), n ? (double)lat[n - 1] / 1000.0 : 0.0);
	printf("RESULT {\"created\":%lld,\"create_errors\":%lld,\"running\":%zu,\"p50_ms\":%.1f,\"p90_ms\":%.1f,"
	       "\"p99_ms\":%.1f,\"max_ms\":%.1f,\"create_rate\":%.2f}\n",
	       created, atomic_load(&r->create_errors), n, pct(lat, n, 0.5), pct(lat, n, 0.9), pct(lat, n, 0.99),
	       n ? (double)lat[n - 1] / 1000.0 : 0.0, rate);
	fflush(stdout);
	free(lat);
}

/* Lists the namespace's pods for a resourceVersion to watch from. */
static int initial_rv(struct run *r)
{
	json_t *list = NULL;
	char *path = xasprintf("%s?limit=1", r->pods_path);
	int st = rest_do(r->rest, "GET", path, NULL, NULL, &list);
	const char *rv = json_string_value(json_object_get(json_object_get(list, "metadata"), "resourceVersion"));

	free(path);
	if (st == 200 && rv)
		r->rv = xstrdup(rv);
	json_decref(list);
	if (!r->rv) {
		fprintf(stderr, "ursa-startup: listing %s: status %d\n", r->pods_path, st);
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	const char *kubeconfig = NULL, *tenant = NULL, *ns = "default", *prefix = "startup", *cpu = "10m",
		   *memory = "10Mi", *image = "pause", *command = NULL, *node = NULL;
	long long rate = 100, duration = 30, wait_s = 60, senders = 16;
	const struct opt opts[] = {
		{ "kubeconfig", OPT_STRING, &kubeconfig, "kubeconfig of the tenant partition (required)" },
		{ "tenant", OPT_STRING, &tenant, "tenant of the pods (required)" },
		{ "namespace", OPT_STRING, &ns, "namespace of the pods" },
		{ "prefix", OPT_STRING, &prefix, "pod names are <prefix>-<i>" },
		{ "rate", OPT_INT, &rate, "pods created per second (open loop)" },
		{ "duration", OPT_INT, &duration, "seconds of creation" },
		{ "wait", OPT_INT, &wait_s, "seconds to wait for Running after the last create" },
		{ "senders", OPT_INT, &senders, "threads sharing the creation schedule" },
		{ "cpu", OPT_STRING, &cpu, "cpu request of each pod" },
		{ "memory", OPT_STRING, &memory, "memory request of each pod" },
		{ "image", OPT_STRING, &image, "image of the pods' container" },
		{ "command", OPT_STRING, &command, "the container's command, run with sh -c (default: the image's)" },
		{ "node", OPT_STRING, &node, "spec.nodeName of the pods (default: the scheduler places them)" },
	};
	if (opts_parse("ursa-startup", "Pod startup latency under a steady creation rate.", opts,
		       (int)(sizeof(opts) / sizeof(opts[0])), argc, argv) < 0)
		return 2;
	if (!kubeconfig || !tenant || rate < 1 || rate > 10000 || duration < 1 || duration > 3600 || wait_s < 0 ||
	    wait_s > 3600 || senders < 1 || senders > MAX_SENDERS || rate * duration > MAX_PODS) {
		fprintf(stderr, "ursa-startup: need --kubeconfig and --tenant; --rate 1..10000, --duration 1..3600, "
				"--wait 0..3600, --senders 1..%d, at most %d pods\n", MAX_SENDERS, MAX_PODS);
		return 2;
	}
	static struct run r;
	char *err = NULL;
	r.rest = rest_from_kubeconfig(kubeconfig, &err);
	if (!r.rest) {
		fprintf(stderr, "ursa-startup: %s\n", err ? err : "bad kubeconfig");
		free(err);
		return 2;
	}
	char *pods_path = xasprintf("/api/v1/tenants/%s/namespaces/%s/pods", tenant, ns);
	r.pods_path = pods_path;
	r.prefix = prefix;
	r.cpu = cpu;
	r.memory = memory;
	r.image = image;
	r.command = command;
	r.node = node;
	r.rate = rate;
	r.total = rate * duration;
	r.sent_us = xcalloc((size_t)r.total, sizeof(int64_t));
	r.running_us = xcalloc((size_t)r.total, sizeof(int64_t));
	pthread_mutex_init(&r.lock, NULL);
	buf_init(&r.line);
	int rc = 1;
	if (initial_rv(&r) < 0)
		goto out;

	pthread_t wt, st[MAX_SENDERS];
	pthread_create(&wt, NULL, watcher, &r);
	usleep(300 * 1000); /* let the watch open before the first create */
	r.start_us = mono_us();
	for (long long k = 0; k < senders; k++)
		pthread_create(&st[k], NULL, sender, &r);
	for (long long k = 0; k < senders; k++)
		pthread_join(st[k], NULL);
	double create_s = (double)(mono_us() - r.start_us) / 1e6;
	fprintf(stderr, "ursa-startup: %lld created in %.1f s; waiting up to %lld s for Running\n",
		atomic_load(&r.created), create_s, wait_s);
	int64_t deadline = mono_ms() + wait_s * 1000;
	while (mono_ms() < deadline && atomic_load(&r.running) < atomic_load(&r.created))
		usleep(100 * 1000);
	atomic_store(&r.stop, true);
	pthread_join(wt, NULL);
	report(&r, create_s);
	rc = 0;
out:
	buf_release(&r.line);
	free(r.rv);
	free(r.sent_us);
	free(r.running_us);
	free(pods_path);
	rest_free(r.rest);
	return rc;
}
