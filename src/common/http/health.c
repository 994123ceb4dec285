/* The health and metrics endpoint of the daemons without an API (see ursa/health.h). One
 * worker thread: probes and scrapes are few, and a handler only formats counters. */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "ursa/health.h"
#include "ursa/http.h"
#include "ursa/xalloc.h"

struct health_server {
	struct http_server *srv;
	char *component;
	health_metrics_fn metrics;
	void *ud;
	atomic_bool leader;
	time_t started;
};

static void reply_text(struct http_reply *rp, int status, const char *content_type, const char *text)
{
	struct buf b = BUF_INIT;
	buf_adds(&b, text);
	http_reply_set(rp, status, content_type, &b);
}

static void family(struct buf *out, const char *name, const char *type, const char *help)
{
	buf_addf(out, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

void health_counter(struct buf *out, const char *name, const char *help, long long v)
{
	family(out, name, "counter", help);
	buf_addf(out, "%s %lld\n", name, v);
}

void health_gauge(struct buf *out, const char *name, const char *help, long long v)
{
	family(out, name, "gauge", help);
	buf_addf(out, "%s %lld\n", name, v);
}

static void metrics(struct health_server *h, struct http_reply *rp)
{
	struct buf b = BUF_INIT;
	family(&b, "ursa_leader", "gauge", "1 when this process holds its lease (or runs without election), 0 on standby.");
	buf_addf(&b, "ursa_leader{component=\"%s\"} %d\n", h->component, atomic_load(&h->leader) ? 1 : 0);
	health_gauge(&b, "process_start_time_seconds", "Start time of the process since the Unix epoch in seconds.",
		     (long long)h->started);
	if (h->metrics)
		h->metrics(h->ud, &b);
	http_reply_set(rp, 200, "text/plain; version=0.0.4; charset=utf-8", &b);
}

static void on_request(void *ud, struct http_request *req, struct http_reply *rp)
{
	struct health_server *h = ud;
	const char *m = http_method(req), *p = http_path(req);
	if (strcmp(m, "GET") != 0 && strcmp(m, "HEAD") != 0) {
		http_reply_header(rp, "Allow", "GET, HEAD");
		reply_text(rp, 405, "text/plain; charset=utf-8", "method not allowed\n");
	} else if (!strcmp(p, "/healthz") || !strcmp(p, "/livez") || !strcmp(p, "/readyz")) {
		reply_text(rp, 200, "text/plain; charset=utf-8", "ok");
	} else if (!strcmp(p, "/metrics")) {
		metrics(h, rp);
	} else {
		reply_text(rp, 404, "text/plain; charset=utf-8", "not found\n");
	}
}

struct health_server *health_start(const char *listen, const char *component, health_metrics_fn fn, void *ud,
				   char **ret_err)
{
	struct health_server *h = xcalloc(1, sizeof(*h));
	h->component = xstrdup(component);
	h->metrics = fn;
	h->ud = ud;
	h->started = time(NULL);
	atomic_init(&h->leader, true);
	struct http_server_options o = { .listen = listen, .threads = 1, .max_body = 1 };
	h->srv = http_server_start(&o, on_request, h, ret_err);
	if (!h->srv) {
		free(h->component);
		free(h);
		return NULL;
	}
	return h;
}

void health_set_leader(struct health_server *h, bool leader)
{
	if (h)
		atomic_store(&h->leader, leader);
}

void health_stop(struct health_server *h)
{
	if (!h)
		return;
	http_server_stop(h->srv);
	free(h->component);
	free(h);
}
