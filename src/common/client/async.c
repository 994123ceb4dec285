/* Asynchronous REST requests: one thread drives every request in flight of a client on one
 * libcurl multi handle, so a caller hands a request over and goes on, and no thread sits
 * blocked per request. The requests are those of rest_do_raw: same handle setup, same
 * fail-over (a request that never reached a server goes to the next one).
 * The thread runs libcurl's socket interface on an epoll set (an event on a connection acts on
 * that connection's transfer alone; curl_multi_perform would visit, and poll, every transfer
 * in flight), woken by an eventfd when requests are submitted. */
#include <curl/curl.h>
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>
#include "client/client_internal.h"
#include "ursa/errors.h"
#include "ursa/timeutil.h"
#include "ursa/xalloc.h"

#define ASYNC_POLL_MS 1000
#define ASYNC_EVENTS 64
#define ASYNC_MAX_IDLE 256

struct job {
	struct job *next;   /* in the submission queue */
	CURL *h;            /* while in flight */
	size_t slot;        /* index in rest_async.inflight */
	char *method, *path, *body;
	size_t len;
	size_t start, tried; /* fail-over: first server index, servers tried */
	struct buf out;
	struct rest_sink sink;
	struct curl_slist *own_headers; /* non-JSON content type */
	rest_done_fn done;
	void *ud;
};

struct rest_async {
	struct rest_client *c;
	CURLM *m;
	int ep, wake;        /* epoll set; eventfd written when the queue becomes non-empty */
	int64_t timer_at_ms; /* libcurl's timeout, -1 for none */
	pthread_t thread;
	pthread_mutex_t lock;
	struct job *head, *tail; /* submitted, not started (under lock) */
	atomic_bool stop;
	CURL **idle; /* handles with the client's shared options set */
	size_t nidle;
	struct job **inflight;
	size_t ninflight, cap;
};

static bool idempotent(const char *method)
{
	return !strcmp(method, "GET") || !strcmp(method, "HEAD");
}

static void job_free(struct job *j)
{
	curl_slist_free_all(j->own_headers);
	buf_release(&j->out);
	free(j->method), free(j->path), free(j->body);
	free(j);
}

/* The caller's callback with status, then the job is gone. */
static void complete(struct job *j, int status)
{
	j->done(j->ud, status, &j->out);
	job_free(j);
}

static void track(struct rest_async *a, struct job *j)
{
	if (a->ninflight == a->cap) {
		a->cap = a->cap ? a->cap * 2 : 64;
		a->inflight = xrealloc(a->inflight, a->cap * sizeof(*a->inflight));
	}
	j->slot = a->ninflight;
	a->inflight[a->ninflight++] = j;
}

static void untrack(struct rest_async *a, struct job *j)
{
	struct job *last = a->inflight[--a->ninflight];
	a->inflight[j->slot] = last;
	last->slot = j->slot;
}

/* Puts j on a handle for server (start + tried) and into the multi handle. */
static void launch(struct rest_async *a, struct job *j)
{
	struct rest_client *c = a->c;
	CURL *h = a->nidle ? a->idle[--a->nidle] : NULL;
	if (!h && (h = curl_easy_init()))
		rest_setup_handle(c, h);
	if (!h) {
		complete(j, E_UNAVAILABLE);
		return;
	}
	char *url = rest_make_url(c, (j->start + j->tried) % c->nservers, j->path);
	struct curl_slist *headers = j->own_headers ? j->own_headers : j->body ? c->hdr_json : c->hdr_plain;
	j->out.len = 0;
	j->sink = (struct rest_sink){ .out = &j->out };
	rest_setup_request(h, url, headers, c->timeout_ms, rest_on_body, &j->sink);
	rest_set_method(h, j->method, j->body, j->len);
	curl_easy_setopt(h, CURLOPT_PRIVATE, j);
	free(url);
	j->h = h;
	track(a, j);
	curl_multi_add_handle(a->m, h);
}

static void release_handle(struct rest_async *a, struct job *j)
{
	curl_multi_remove_handle(a->m, j->h);
	if (a->nidle < ASYNC_MAX_IDLE)
		a->idle[a->nidle++] = j->h;
	else
		curl_easy_cleanup(j->h);
	j->h = NULL;
	untrack(a, j);
}

/* One ended transfer: the next server, or the caller's callback. */
static void finish(struct rest_async *a, CURL *h, CURLcode rc)
{
	struct rest_client *c = a->c;
	struct job *j = NULL;
	curl_easy_getinfo(h, CURLINFO_PRIVATE, (char **)&j);
	int status = E_UNAVAILABLE;
	long code = 0;
	if (rc == CURLE_OK) {
		curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
		atomic_store(&c->preferred, (j->start + j->tried) % c->nservers);
		status = (int)code;
	} else if (j->sink.overflow) {
		status = E_TOO_LARGE;
	} else if (rest_not_delivered(h, rc, idempotent(j->method)) && j->tried + 1 < c->nservers) {
		release_handle(a, j);
		j->tried++;
		launch(a, j);
		return;
	} else if (rc == CURLE_OPERATION_TIMEDOUT) {
		status = E_TIMEOUT;
	}
	release_handle(a, j);
	complete(j, status);
}

static struct job *take_queue(struct rest_async *a)
{
	pthread_mutex_lock(&a->lock);
	struct job *j = a->head;
	a->head = a->tail = NULL;
	pthread_mutex_unlock(&a->lock);
	return j;
}

/* libcurl says which events of a connection it waits for. */
static int on_socket(CURL *h, curl_socket_t fd, int what, void *ud, void *sockp)
{
	struct rest_async *a = ud;
	(void)h, (void)sockp;
	if (what == CURL_POLL_REMOVE) {
		epoll_ctl(a->ep, EPOLL_CTL_DEL, fd, NULL);
		return 0;
	}
	struct epoll_event ev = { .events = (what & CURL_POLL_IN ? EPOLLIN : 0) | (what & CURL_POLL_OUT ? EPOLLOUT : 0),
				  .data.fd = fd };
	if (epoll_ctl(a->ep, EPOLL_CTL_MOD, fd, &ev) < 0 && errno == ENOENT)
		epoll_ctl(a->ep, EPOLL_CTL_ADD, fd, &ev);
	return 0;
}

static int on_timer(CURLM *m, long timeout_ms, void *ud)
{
	struct rest_async *a = ud;
	(void)m;
	a->timer_at_ms = timeout_ms < 0 ? -1 : mono_ms() + timeout_ms;
	return 0;
}

static void reap(struct rest_async *a)
{
	CURLMsg *msg;
	int left;
	while ((msg = curl_multi_info_read(a->m, &left)))
		if (msg->msg == CURLMSG_DONE)
			finish(a, msg->easy_handle, msg->data.result);
}

static int wait_ms(struct rest_async *a)
{
	if (a->timer_at_ms < 0)
		return ASYNC_POLL_MS;
	int64_t left = a->timer_at_ms - mono_ms();
	return left <= 0 ? 0 : left < ASYNC_POLL_MS ? (int)left : ASYNC_POLL_MS;
}

static void *async_main(void *arg)
{
	struct rest_async *a = arg;
	struct epoll_event evs[ASYNC_EVENTS];
	int running;
	while (!atomic_load(&a->stop)) {
		int n = epoll_wait(a->ep, evs, ASYNC_EVENTS, wait_ms(a));
		for (int i = 0; i < n; i++) {
			if (evs[i].data.fd == a->wake) {
				uint64_t v;
				if (read(a->wake, &v, sizeof(v)) < 0 && errno != EAGAIN)
					break;
				for (struct job *j = take_queue(a), *next; j; j = next) {
					next = j->next;
					launch(a, j);
				}
				continue;
			}
			uint32_t e = evs[i].events;
			int flags = (e & EPOLLIN ? CURL_CSELECT_IN : 0) | (e & EPOLLOUT ? CURL_CSELECT_OUT : 0) |
				    (e & (EPOLLERR | EPOLLHUP) ? CURL_CSELECT_ERR : 0);
			curl_multi_socket_action(a->m, evs[i].data.fd, flags, &running);
		}
		if (a->timer_at_ms >= 0 && mono_ms() >= a->timer_at_ms) {
			a->timer_at_ms = -1;
			curl_multi_socket_action(a->m, CURL_SOCKET_TIMEOUT, 0, &running);
		}
		reap(a);
	}
	return NULL;
}

static void async_free(struct rest_async *a)
{
	for (size_t i = 0; i < a->nidle; i++)
		curl_easy_cleanup(a->idle[i]);
	curl_multi_cleanup(a->m);
	if (a->ep >= 0)
		close(a->ep);
	if (a->wake >= 0)
		close(a->wake);
	pthread_mutex_destroy(&a->lock);
	free(a->inflight);
	free(a->idle);
	free(a);
}

struct rest_async *rest_async_start(struct rest_client *c, unsigned max_conns)
{
	CURLM *m = c ? curl_multi_init() : NULL;
	if (!m)
		return NULL;
	struct rest_async *a = xcalloc(1, sizeof(*a));
	a->c = c;
	a->m = m;
	a->timer_at_ms = -1;
	a->idle = xcalloc(ASYNC_MAX_IDLE, sizeof(*a->idle));
	pthread_mutex_init(&a->lock, NULL);
	a->ep = epoll_create1(EPOLL_CLOEXEC);
	a->wake = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	struct epoll_event ev = { .events = EPOLLIN, .data.fd = a->wake };
	if (a->ep < 0 || a->wake < 0 || epoll_ctl(a->ep, EPOLL_CTL_ADD, a->wake, &ev) < 0) {
		async_free(a);
		return NULL;
	}
	long conns = max_conns ? (long)max_conns : 64;
	curl_multi_setopt(m, CURLMOPT_MAX_HOST_CONNECTIONS, conns);
	curl_multi_setopt(m, CURLMOPT_MAXCONNECTS, conns);
	curl_multi_setopt(m, CURLMOPT_SOCKETFUNCTION, on_socket);
	curl_multi_setopt(m, CURLMOPT_SOCKETDATA, a);
	curl_multi_setopt(m, CURLMOPT_TIMERFUNCTION, on_timer);
	curl_multi_setopt(m, CURLMOPT_TIMERDATA, a);
	if (pthread_create(&a->thread, NULL, async_main, a) != 0) {
		async_free(a);
		return NULL;
	}
	return a;
}

void rest_async_submit(struct rest_async *a, const char *method, const char *path, char *body, size_t len,
		       const char *content_type, rest_done_fn done, void *ud)
{
	struct job *j = xcalloc(1, sizeof(*j));
	j->method = xstrdup(method ? method : "GET");
	j->path = xstrdup(path);
	j->body = body;
	j->len = body ? len : 0;
	j->done = done;
	j->ud = ud;
	j->start = atomic_load(&a->c->preferred) % a->c->nservers;
	if (body && content_type && strcmp(content_type, "application/json"))
		j->own_headers = rest_make_headers(a->c, content_type, true);
	pthread_mutex_lock(&a->lock);
	bool was_empty = !a->head;
	if (a->tail)
		a->tail->next = j;
	else
		a->head = j;
	a->tail = j;
	pthread_mutex_unlock(&a->lock);
	if (was_empty)
		(void)!write(a->wake, &(uint64_t){ 1 }, sizeof(uint64_t));
}

void rest_async_stop(struct rest_async *a)
{
	if (!a)
		return;
	atomic_store(&a->stop, true);
	(void)!write(a->wake, &(uint64_t){ 1 }, sizeof(uint64_t));
	pthread_join(a->thread, NULL);
	/* What has not ended ends now, unanswered: queued requests, then those in flight. */
	for (struct job *j = take_queue(a), *next; j; j = next) {
		next = j->next;
		complete(j, E_UNAVAILABLE);
	}
	while (a->ninflight) {
		struct job *j = a->inflight[a->ninflight - 1];
		release_handle(a, j);
		complete(j, E_UNAVAILABLE);
	}
	async_free(a);
}
