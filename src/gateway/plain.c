/* Plain (non-stream) requests to one partition, event-driven: one loop thread owns every
 * transfer to the partitions and drives them with libcurl's multi socket interface over epoll,
 * so no thread waits on a partition. The same loop drives the gateway's HTTP server (external
 * mode: its epoll descriptor is in this loop's set), so a plain request never leaves this
 * thread: the client's request is read and admitted, sent to the partition, and the reply
 * written back, all here. The caller (gateway.c) defers its client's reply and finishes it from
 * the completion callback.
 *
 * Cost per request. Easy handles are pooled with every option that does not change set once;
 * a request sets its URL, timeout, method and header list (built in the handle's own buffer,
 * no copy per line) and nothing else. Connections stay in the multi's cache (up to
 * MAX_CONNECTS). A socket libcurl stops watching (CURL_POLL_REMOVE, at the end of every
 * transfer) stays in the epoll set as it was: the next transfer on the kept connection usually
 * wants the same events, so it costs no epoll_ctl; an event on a socket no transfer is using
 * (the partition closed a kept connection) takes it out of the set, and libcurl finds the
 * connection dead when it next looks. Connection sockets are opened and closed through us
 * (CURLOPT_OPENSOCKETFUNCTION, CURLOPT_CLOSESOCKETFUNCTION), so the table of what is in the set
 * stays true; other sockets (the resolver's, for an endpoint given by name) leave the set at
 * once as libcurl asks. TLS connections read ahead (on_ssl_ctx), so a response's header and
 * body records come in one read; drain_fd hands libcurl what OpenSSL buffered. What libcurl
 * still does per request and cannot be told not to (7.88): a recv(MSG_PEEK) to check the kept
 * connection, a poll right after sending, and a poll after reading.
 *
 * Ownership. A job belongs to the submitting thread until it is queued, then to the loop until
 * its done callback has returned. Only the loop thread touches the multi, the easy handles and
 * the running list; other threads talk to it through a locked queue and an eventfd that is
 * written only when the queue goes from empty to non-empty (one wake-up per batch). */
#include <curl/curl.h>
#include <errno.h>
#include <openssl/ssl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>
#include "gw.h"
#include "ursa/errors.h"
#include "ursa/http.h"
#include "ursa/log.h"
#include "ursa/timeutil.h"
#include "ursa/xalloc.h"

#define MAX_EVENTS 256
#define MAX_CONNECTS 256      /* kept connections in the multi's cache, all partitions */
#define POOL_MAX 1024         /* idle easy handles kept */
/* libcurl's receive buffer: one TLS record's plaintext (a read never returns more). libcurl
 * allocates it per transfer; at 64 KiB or more every free consolidates the heap. */
#define RECV_BUFFER (16 << 10)

/* epoll data: the eventfd, the server, else a libcurl socket (fd + TAG_SOCK). */
enum { TAG_EVFD = 0, TAG_SRV = 1, TAG_SOCK = 2 };

/* A pooled easy handle and what a request on it needs besides. */
struct xfer {
	CURL *easy;
	struct job *job;           /* while running */
	struct buf hdrs;           /* header lines, NUL-separated */
	struct curl_slist hl[UPSTREAM_HEADERS_MAX];
	struct buf body;           /* the response body */
	struct xfer *next;         /* free list */
};

struct job {
	struct partition *p;       /* ref */
	struct upstream_req rq;
	plain_done_fn done;
	void *ud;
	size_t ep_first, ep_tries;
	int64_t deadline_ms;       /* 0: none */
	/* loop thread only */
	struct xfer *x;
	struct job *prev, *next;   /* running list; next is also the queue link */
};

/* What the epoll set holds for a libcurl socket. */
struct sockstate {
	uint32_t events;           /* registered (0: not in the set) */
	bool watched;              /* a transfer wants it (between POLL_IN/OUT and POLL_REMOVE) */
	bool conn;                 /* a connection's socket (opened and closed through us) */
	CURL *easy;                /* the transfer watching it */
	SSL *ssl;                  /* the connection's TLS, once known (it lives as long as the
				    * socket: asking libcurl costs more than the rest of a drain) */
};

static struct {
	pthread_mutex_t lock;
	bool running, stopping, quiescing, stop_asked;
	struct job *q_head, *q_tail;
	int64_t quiesce_at_ms;
	/* loop thread only */
	pthread_t thread;
	struct http_server *srv;   /* driven here, or NULL */
	bool srv_again;            /* a connection was resumed while the server ran: run it again */
	int ep, evfd;
	CURLM *multi;
	CURLSH *share;
	int64_t timer_at_ms;       /* libcurl's timeout, -1: none */
	struct xfer *pool;
	size_t npool;
	struct sockstate *socks;   /* by descriptor */
	size_t nsocks;
	struct buf url;            /* scratch (libcurl copies the URL) */
	struct job *active;
} L = { .lock = PTHREAD_MUTEX_INITIALIZER, .ep = -1, .evfd = -1, .timer_at_ms = -1 };

static atomic_long in_flight;
static _Thread_local bool on_loop; /* this thread is the loop's */

long plain_in_flight(void) { return atomic_load(&in_flight); }

/* --- sockets ------------------------------------------------------------------------------- */
static struct sockstate *sock_get(curl_socket_t fd)
{
	if ((size_t)fd >= L.nsocks) {
		size_t n = L.nsocks ? L.nsocks : 256;
		while (n <= (size_t)fd)
			n *= 2;
		L.socks = xrealloc(L.socks, n * sizeof(*L.socks));
		memset(L.socks + L.nsocks, 0, (n - L.nsocks) * sizeof(*L.socks));
		L.nsocks = n;
	}
	return &L.socks[fd];
}

static int on_socket(CURL *e, curl_socket_t fd, int what, void *ud, void *sockp)
{
	struct sockstate *st = sock_get(fd);
	if (what == CURL_POLL_REMOVE) {
		st->watched = false;
		st->easy = NULL;
		if (!st->conn) {
			/* Not a connection (the resolver's): libcurl may close it without telling. */
			epoll_ctl(L.ep, EPOLL_CTL_DEL, fd, NULL);
			st->events = 0;
		}
		return 0; /* a connection's stays in the set: see the top of the file */
	}
	st->watched = true;
	st->easy = e;
	uint32_t want = (what & CURL_POLL_IN ? EPOLLIN : 0) | (what & CURL_POLL_OUT ? EPOLLOUT : 0);
	if (st->events == want && st->conn)
		return 0;
	struct epoll_event ev = { .events = want, .data.u64 = (uint64_t)fd + TAG_SOCK };
	int op = st->events ? EPOLL_CTL_MOD : EPOLL_CTL_ADD;
	if (epoll_ctl(L.ep, op, fd, &ev) < 0)
		epoll_ctl(L.ep, op == EPOLL_CTL_MOD ? EPOLL_CTL_ADD : EPOLL_CTL_MOD, fd, &ev);
	st->events = want;
	return 0;
}

/* libcurl opens a connection's socket: whatever the table said of that number is stale. */
static curl_socket_t on_open_socket(void *ud, curlsocktype purpose, struct curl_sockaddr *a)
{
	curl_socket_t fd = socket(a->family, a->socktype | SOCK_CLOEXEC, a->protocol);
	if (fd != CURL_SOCKET_BAD)
		*sock_get(fd) = (struct sockstate){ .conn = true };
	return fd;
}

/* libcurl closes a connection's socket: closing takes it out of the epoll set too. */
static int on_close_socket(void *ud, curl_socket_t fd)
{
	if ((size_t)fd < L.nsocks)
		L.socks[fd] = (struct sockstate){ 0 };
	return close(fd);
}

static int on_timer(CURLM *m, long timeout_ms, void *ud)
{
	L.timer_at_ms = timeout_ms < 0 ? -1 : mono_ms() + timeout_ms;
	return 0;
}

/* True when e's TLS connection holds bytes OpenSSL read ahead that libcurl has not taken:
 * the socket will not report them, so the loop hands them to libcurl itself. */
static bool tls_pending(struct sockstate *st)
{
	if (!st->ssl) {
		struct curl_tlssessioninfo *ti = NULL;
		if (!st->conn || curl_easy_getinfo(st->easy, CURLINFO_TLS_SSL_PTR, &ti) != CURLE_OK || !ti ||
		    !ti->internals || ti->backend != CURLSSLBACKEND_OPENSSL)
			return false;
		st->ssl = ti->internals;
	}
	return SSL_has_pending(st->ssl) == 1;
}

/* Feeds libcurl what OpenSSL read ahead on fd (bounded: each round takes a record). */
static void drain_fd(curl_socket_t fd)
{
	int running;
	for (int i = 0; i < 64; i++) {
		struct sockstate *st = sock_get(fd);
		if (!st->watched || !st->easy || !tls_pending(st))
			return;
		curl_multi_socket_action(L.multi, fd, CURL_CSELECT_IN, &running);
	}
}

/* After a timeout action: any running transfer may have read. */
static void drain_all(void)
{
	for (size_t fd = 0; fd < L.nsocks; fd++)
		if (L.socks[fd].watched && L.socks[fd].conn)
			drain_fd((curl_socket_t)fd);
}

static void on_sock_event(curl_socket_t fd, uint32_t events)
{
	struct sockstate *st = sock_get(fd);
	if (!st->watched) {
		/* A kept connection the partition closed (or that sent what nobody asked for). */
		epoll_ctl(L.ep, EPOLL_CTL_DEL, fd, NULL);
		st->events = 0;
		return;
	}
	int flags = (events & EPOLLIN ? CURL_CSELECT_IN : 0) | (events & EPOLLOUT ? CURL_CSELECT_OUT : 0) |
		    (events & (EPOLLERR | EPOLLHUP) ? CURL_CSELECT_ERR : 0);
	int running;
	curl_multi_socket_action(L.multi, fd, flags, &running);
	drain_fd(fd);
}

static void run_timer(void)
{
	if (L.timer_at_ms < 0 || mono_ms() < L.timer_at_ms)
		return;
	L.timer_at_ms = -1;
	int running;
	curl_multi_socket_action(L.multi, CURL_SOCKET_TIMEOUT, 0, &running);
	drain_all();
}

/* --- easy handles -------------------------------------------------------------------------- */
/* A new TLS connection: OpenSSL reads whatever arrived in one call (the partition sends a
 * response's headers and body as two records; without this each record costs two reads).
 * libcurl asks only SSL_pending, which does not count records read ahead, so the loop feeds
 * those to it (drain_fd). */
static CURLcode on_ssl_ctx(CURL *c, void *ctx, void *ud)
{
	SSL_CTX_set_read_ahead((SSL_CTX *)ctx, 1);
	return CURLE_OK;
}

static struct xfer *xfer_get(void)
{
	struct xfer *x = L.pool;
	if (x) {
		L.pool = x->next;
		L.npool--;
		x->next = NULL;
		return x;
	}
	x = xcalloc(1, sizeof(*x));
	x->easy = curl_easy_init();
	upstream_setup_handle(x->easy);
	curl_easy_setopt(x->easy, CURLOPT_PRIVATE, x);
	curl_easy_setopt(x->easy, CURLOPT_WRITEFUNCTION, upstream_on_body);
	curl_easy_setopt(x->easy, CURLOPT_WRITEDATA, &x->body);
	curl_easy_setopt(x->easy, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)UPSTREAM_MAX_RESPONSE);
	curl_easy_setopt(x->easy, CURLOPT_BUFFERSIZE, (long)RECV_BUFFER);
	curl_easy_setopt(x->easy, CURLOPT_SSL_CTX_FUNCTION, on_ssl_ctx);
	curl_easy_setopt(x->easy, CURLOPT_OPENSOCKETFUNCTION, on_open_socket);
	curl_easy_setopt(x->easy, CURLOPT_CLOSESOCKETFUNCTION, on_close_socket);
	curl_easy_setopt(x->easy, CURLOPT_SHARE, L.share);
	return x;
}

static void xfer_free(struct xfer *x)
{
	curl_easy_cleanup(x->easy);
	buf_release(&x->hdrs);
	buf_release(&x->body);
	free(x);
}

/* Back to the pool (x is not in the multi). The header list and body pointer of its last
 * request are dropped: the handle keeps no pointer into a finished request. */
static void xfer_put(struct xfer *x)
{
	x->job = NULL;
	buf_release(&x->body);
	curl_easy_setopt(x->easy, CURLOPT_HTTPHEADER, NULL);
	curl_easy_setopt(x->easy, CURLOPT_POSTFIELDS, NULL);
	if (L.npool >= POOL_MAX) {
		xfer_free(x);
		return;
	}
	x->next = L.pool;
	L.pool = x;
	L.npool++;
}

/* Sets x up for j's request to base. */
static void xfer_request(struct xfer *x, struct job *j, const char *base, int64_t now)
{
	CURL *c = x->easy;
	buf_reset(&L.url);
	buf_adds(&L.url, base);
	buf_adds(&L.url, j->rq.path);
	curl_easy_setopt(c, CURLOPT_URL, L.url.ptr);
	long left = 0;
	if (j->deadline_ms)
		left = j->deadline_ms > now ? (long)(j->deadline_ms - now) : 1;
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, left);
	size_t offs[UPSTREAM_HEADERS_MAX];
	buf_reset(&x->hdrs);
	size_t n = upstream_header_lines(&j->rq, &x->hdrs, offs);
	for (size_t i = 0; i < n; i++) {
		x->hl[i].data = x->hdrs.ptr + offs[i];
		x->hl[i].next = i + 1 < n ? &x->hl[i + 1] : NULL;
	}
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, n ? x->hl : NULL);
	upstream_setup_method(c, &j->rq);
	buf_reset(&x->body);
}

/* --- jobs ----------------------------------------------------------------------------------- */
static void unlink_active(struct job *j)
{
	if (j->prev)
		j->prev->next = j->next;
	else
		L.active = j->next;
	if (j->next)
		j->next->prev = j->prev;
	j->prev = j->next = NULL;
}

static void link_active(struct job *j)
{
	j->prev = NULL;
	j->next = L.active;
	if (L.active)
		L.active->prev = j;
	L.active = j;
}

/* Ends j (not on the running list, its handle back in the pool) with err, or with resp. */
static void job_finish(struct job *j, int err, struct upstream_resp *resp)
{
	struct upstream_resp none = { 0 };
	if (!resp)
		resp = &none;
	j->done(j->ud, err, resp);
	upstream_resp_release(resp);
	partition_unref(j->p);
	free(j);
	atomic_fetch_sub(&in_flight, 1);
}

/* Takes j's transfer out of the multi (if running) and its handle back to the pool. */
static void job_detach(struct job *j)
{
	if (!j->x)
		return;
	curl_multi_remove_handle(L.multi, j->x->easy);
	xfer_put(j->x);
	j->x = NULL;
}

static void job_end(struct job *j, int err, struct upstream_resp *resp)
{
	unlink_active(j);
	job_detach(j);
	job_finish(j, err, resp);
}

/* Starts j's transfer to its current endpoint. False when libcurl refused it. */
static bool job_attach(struct job *j, int64_t now)
{
	struct partition *p = j->p;
	if (!j->x) {
		j->x = xfer_get();
		j->x->job = j;
	}
	xfer_request(j->x, j, p->endpoints[(j->ep_first + j->ep_tries) % p->nendpoints], now);
	return curl_multi_add_handle(L.multi, j->x->easy) == CURLM_OK;
}

/* Nothing reached the partition (refused, no connection within a second, TLS failed, a bad
 * endpoint URL): the partition's next endpoint, or its circuit opens. */
static void job_connect_failed(struct job *j)
{
	struct partition *p = j->p;
	if (++j->ep_tries < p->nendpoints) {
		curl_multi_remove_handle(L.multi, j->x->easy);
		if (job_attach(j, mono_ms()))
			return;
	}
	if (!atomic_exchange(&p->down, true))
		log_warn("partition unreachable", "partition=%s from=request", p->id);
	job_end(j, E_UNAVAILABLE, NULL);
}

static void job_done_ok(struct job *j)
{
	struct xfer *x = j->x;
	struct partition *p = j->p;
	long code = 0;
	char *ct = NULL;
	curl_easy_getinfo(x->easy, CURLINFO_RESPONSE_CODE, &code);
	curl_easy_getinfo(x->easy, CURLINFO_CONTENT_TYPE, &ct);
	struct upstream_resp resp = { .status = (int)code, .content_type = ct ? xstrdup(ct) : NULL,
				      .warning = upstream_warnings(x->easy), .body = x->body };
	buf_init(&x->body);
	if (j->ep_tries)
		atomic_store(&p->next_ep, (int)((j->ep_first + j->ep_tries) % p->nendpoints));
	job_end(j, 0, &resp);
}

/* A transfer ended. libcurl has already sent a request once more on a new connection when
 * a kept one died under it before any byte of the answer. */
static void on_xfer_done(struct xfer *x, CURLcode rc)
{
	struct job *j = x->job;
	upstream_count_connections(x->easy);
	if (rc == CURLE_OK) {
		job_done_ok(j);
		return;
	}
	long sent = 0;
	curl_easy_getinfo(x->easy, CURLINFO_REQUEST_SIZE, &sent);
	bool late = j->deadline_ms && mono_ms() >= j->deadline_ms;
	if (!sent && !late)
		job_connect_failed(j);
	else
		job_end(j, E_TIMEOUT, NULL); /* sent, outcome unknown: slow, broken, unparsable, too large */
}

static void xfer_done(void *priv, CURLcode rc)
{
	on_xfer_done(priv, rc);
}

static void cancel_all(void)
{
	while (L.active)
		job_end(L.active, E_UNAVAILABLE, NULL);
}

/* --- the loop ------------------------------------------------------------------------------- */
static void start_job(struct job *j, int64_t now)
{
	if (atomic_load(&j->p->down)) {
		job_finish(j, E_UNAVAILABLE, NULL);
		return;
	}
	j->deadline_ms = j->rq.timeout_ms > 0 ? now + j->rq.timeout_ms : 0;
	link_active(j);
	if (!job_attach(j, now))
		job_end(j, E_UNAVAILABLE, NULL);
}

static void run_queue(void)
{
	pthread_mutex_lock(&L.lock);
	struct job *q = L.q_head;
	bool refuse = L.quiescing || L.stopping;
	L.q_head = L.q_tail = NULL;
	pthread_mutex_unlock(&L.lock);
	int64_t now = mono_ms();
	while (q) {
		struct job *j = q;
		q = j->next;
		j->next = NULL;
		if (refuse)
			job_finish(j, E_UNAVAILABLE, NULL);
		else
			start_job(j, now);
	}
}

/* plain_stop asked: the server takes no new connections and running jobs get STOP_GRACE_MS
 * (quiesce). True once the loop may end. */
#define STOP_GRACE_MS 10000
static bool stop_step(bool *began)
{
	if (!*began) {
		*began = true;
		if (L.srv)
			http_server_quiesce(L.srv);
		plain_quiesce(STOP_GRACE_MS);
	}
	return !L.active;
}

/* Runs the server until no reply finished during the run is left waiting (a resume here
 * signals nothing: libmicrohttpd only notices it on its next run). */
static void run_server(void)
{
	for (int i = 0; L.srv && i < 8; i++) {
		L.srv_again = false;
		http_server_run(L.srv);
		if (!L.srv_again)
			break;
	}
}

static int wait_ms(int64_t now, bool quiescing, int64_t quiesce_at)
{
	if (L.srv_again)
		return 0;
	int64_t t = -1;
	if (L.timer_at_ms >= 0)
		t = L.timer_at_ms > now ? L.timer_at_ms - now : 0;
	if (quiescing && (t < 0 || quiesce_at - now < t))
		t = quiesce_at > now ? quiesce_at - now : 0;
	if (L.srv) {
		long s = http_server_timeout_ms(L.srv);
		if (s >= 0 && (t < 0 || s < t))
			t = s;
	}
	return (int)t;
}

/* libcurl's due work and the transfers it finished. */
static void run_curl(void)
{
	run_timer();
	upstream_multi_finished(L.multi, xfer_done);
}

static void *loop_main(void *arg)
{
	struct epoll_event evs[MAX_EVENTS];
	bool stop_began = false;
	on_loop = true;
	for (;;) {
		pthread_mutex_lock(&L.lock);
		bool stop = L.stopping, asked = L.stop_asked, quiescing = L.quiescing;
		int64_t quiesce_at = L.quiesce_at_ms;
		pthread_mutex_unlock(&L.lock);
		if (stop || (asked && stop_step(&stop_began)))
			break;
		int64_t now = mono_ms();
		if (quiescing && now >= quiesce_at)
			cancel_all();
		int n = epoll_wait(L.ep, evs, MAX_EVENTS, wait_ms(now, quiescing, quiesce_at));
		for (int i = 0; i < n; i++) {
			uint64_t tag = evs[i].data.u64;
			if (tag == TAG_EVFD) {
				uint64_t v;
				ssize_t r = read(L.evfd, &v, sizeof(v));
				(void)r;
				run_queue();
			} else if (tag >= TAG_SOCK) {
				on_sock_event((curl_socket_t)(tag - TAG_SOCK), evs[i].events);
			}
		}
		run_curl();
		/* Every round: the client side's new requests, and the replies just finished
		 * (resumed connections) go out in the same round; the requests the server just
		 * handed over go out before the loop waits again. */
		run_server();
		run_curl();
	}
	cancel_all();
	run_queue(); /* refused: stopping */
	run_server();
	return NULL;
}

/* --- control -------------------------------------------------------------------------------- */
static void cleanup(void)
{
	if (L.multi)
		curl_multi_cleanup(L.multi); /* closes the kept connections */
	while (L.pool) {
		struct xfer *x = L.pool;
		L.pool = x->next;
		xfer_free(x);
	}
	L.npool = 0;
	if (L.share)
		curl_share_cleanup(L.share);
	free(L.socks);
	buf_release(&L.url);
	if (L.ep >= 0)
		close(L.ep);
	if (L.evfd >= 0)
		close(L.evfd);
	L.multi = NULL;
	L.share = NULL;
	L.socks = NULL;
	L.nsocks = 0;
	L.ep = L.evfd = -1;
}

int plain_start(struct http_server *srv)
{
	L.srv = srv;
	L.ep = epoll_create1(EPOLL_CLOEXEC);
	L.evfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (L.ep < 0 || L.evfd < 0)
		goto fail;
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = TAG_EVFD };
	epoll_ctl(L.ep, EPOLL_CTL_ADD, L.evfd, &ev);
	if (srv) {
		struct epoll_event sev = { .events = EPOLLIN, .data.u64 = TAG_SRV };
		if (epoll_ctl(L.ep, EPOLL_CTL_ADD, http_server_fd(srv), &sev) < 0)
			goto fail;
	}
	L.multi = curl_multi_init();
	curl_multi_setopt(L.multi, CURLMOPT_SOCKETFUNCTION, on_socket);
	curl_multi_setopt(L.multi, CURLMOPT_TIMERFUNCTION, on_timer);
	curl_multi_setopt(L.multi, CURLMOPT_MAXCONNECTS, (long)MAX_CONNECTS);
	/* TLS sessions shared by every handle: a new connection to a partition resumes. */
	L.share = curl_share_init();
	curl_share_setopt(L.share, CURLSHOPT_SHARE, CURL_LOCK_DATA_SSL_SESSION);
	L.timer_at_ms = -1;
	L.stopping = L.quiescing = L.stop_asked = false;
	L.active = NULL;
	/* Running before the thread starts: it may serve (and forward) at once. */
	pthread_mutex_lock(&L.lock);
	L.running = true;
	pthread_mutex_unlock(&L.lock);
	if (pthread_create(&L.thread, NULL, loop_main, NULL) != 0) {
		pthread_mutex_lock(&L.lock);
		L.running = false;
		pthread_mutex_unlock(&L.lock);
		goto fail;
	}
	return 0;
fail:
	cleanup();
	return E_INTERNAL;
}

static void wake(void)
{
	uint64_t one = 1;
	ssize_t w = write(L.evfd, &one, sizeof(one));
	(void)w; /* EAGAIN: the counter is already non-zero, the loop wakes anyway */
}

void plain_wake(void *unused)
{
	if (on_loop) {
		L.srv_again = true; /* the loop runs the server again before it waits */
		return;
	}
	/* Under the lock: plain_stop closes the eventfd only after clearing running. */
	pthread_mutex_lock(&L.lock);
	if (L.running)
		wake();
	pthread_mutex_unlock(&L.lock);
}

void plain_quiesce(long grace_ms)
{
	pthread_mutex_lock(&L.lock);
	if (!L.quiescing) {
		L.quiescing = true;
		L.quiesce_at_ms = mono_ms() + (grace_ms > 0 ? grace_ms : 0);
	}
	if (L.running && !on_loop)
		wake();
	pthread_mutex_unlock(&L.lock);
}

void plain_stop(void)
{
	pthread_mutex_lock(&L.lock);
	bool was = L.running;
	L.stop_asked = true;
	pthread_mutex_unlock(&L.lock);
	if (!was)
		return;
	wake();
	pthread_join(L.thread, NULL);
	pthread_mutex_lock(&L.lock);
	L.running = false;
	L.stopping = true;
	pthread_mutex_unlock(&L.lock);
	cleanup();
}

void plain_forward(struct partition *p, const struct upstream_req *rq, plain_done_fn done, void *ud)
{
	struct job *j = xcalloc(1, sizeof(*j));
	j->p = p;
	atomic_fetch_add(&p->refs, 1);
	j->rq = *rq;
	j->done = done;
	j->ud = ud;
	j->ep_first = (size_t)atomic_load(&p->next_ep) % p->nendpoints;
	atomic_fetch_add(&in_flight, 1);
	pthread_mutex_lock(&L.lock);
	bool ok = L.running && !L.stopping && !L.quiescing, first = false;
	bool here = ok && on_loop;
	pthread_mutex_unlock(&L.lock);
	if (here) {
		/* From the server this loop drives: no queue, no wake-up. */
		start_job(j, mono_ms());
		return;
	}
	pthread_mutex_lock(&L.lock);
	ok = L.running && !L.stopping && !L.quiescing;
	if (ok) {
		first = !L.q_head;
		if (L.q_tail)
			L.q_tail->next = j;
		else
			L.q_head = j;
		L.q_tail = j;
		if (first)
			wake();
	}
	pthread_mutex_unlock(&L.lock);
	if (!ok)
		job_finish(j, E_UNAVAILABLE, NULL);
}
