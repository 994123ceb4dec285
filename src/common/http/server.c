/* HTTP server on libmicrohttpd's internal epoll thread pool. */
#define _GNU_SOURCE /* accept4 */
#include "ursa/http.h"
#include "ursa/log.h"
#include "ursa/timeutil.h"
#include "ursa/xalloc.h"
#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <linux/sockios.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#define MAX_REPLY_HEADERS 12

struct http_stream {
	struct http_server *srv;
	struct http_stream *prev, *next; /* in srv->streams */
	pthread_mutex_t lock;
	struct MHD_Connection *conn;
	struct buf pending;
	size_t off;
	bool woken, suspended, ended;
	int (*fill)(void *ud, struct buf *out, size_t max);
	void (*done)(void *ud);
	void *ud;
};

/* A switched (upgraded) connection: from the 101 reply until http_upgraded_close. */
struct http_upgraded {
	struct http_server *srv;
	struct http_upgraded *prev, *next; /* in srv->upgraded, once switched */
	struct MHD_UpgradeResponseHandle *urh;
	int fd;
	int client_fd; /* TLS: the client's own socket, watched for its end; else -1 */
	int raw_fd;    /* TLS: the client's own socket (kept after the watch ends), else -1 */
	bool switched;
	int64_t close_by;  /* closing: when to close even if libmicrohttpd has not read everything */
	http_upgrade_fn fn;
	void *ud;
};

/* A closed TLS connection: libmicrohttpd (0.9.75) may never close the client's connection when
 * the owner's end races its forwarding thread (it sees the socketpair's end before it marks the
 * connection closed, and nothing wakes it again until the client sends). If that socket is still
 * the same connection a second later, it is shut down, which ends the forwarding. */
struct cut {
	struct cut *next;
	int fd;
	struct sockaddr_storage local, peer;
	int64_t at;
};

struct http_reply {
	int status;
	const char *content_type;
	struct buf body;
	char *hname[MAX_REPLY_HEADERS];
	char *hvalue[MAX_REPLY_HEADERS];
	unsigned nheaders;
	struct http_stream *stream;
	struct http_upgraded *upgrade; /* http_reply_upgrade */
};

struct http_request {
	struct http_server *srv;
	struct MHD_Connection *conn;
	const char *method;
	const char *path;
	struct buf body;
	bool too_large;
	bool queued;   /* handed to a worker or deferred; the connection sleeps until the reply is ready */
	bool answered; /* the worker (or the deferred reply's owner) filled reply */
	bool deferred; /* http_reply_defer: http_deferred_finish resumes the connection */
	bool rerun;    /* http_deferred_rerun: the last holder queues it for a worker again */
	atomic_int holds; /* deferred: finish, and the worker running the handler, if any; the last resumes */
	struct http_reply reply;
	int64_t started_us;
	char client[64];
	struct http_request *next_job;
	struct http_upgraded *upgrading; /* the 101 is queued: on_completed tells its owner if it never switches */
	char *query;   /* raw query string (from the URI log callback), or NULL */
	bool begun;    /* on_request saw the request's first call */
	bool fast_done;/* the fast handler had its turn */
	void *data;    /* http_request_set_data */
	void (*complete)(void *ud); /* http_request_on_complete */
	void *complete_ud;
};

struct http_server {
	struct MHD_Daemon *mhd;
	http_handler handler;
	void *ud;
	http_fast_handler fast;
	void *fast_ud;
	size_t max_body;
	/* Handlers run on workers so that the poll threads never block (handlers wait on etcd). */
	pthread_mutex_t jobs_lock;
	pthread_cond_t jobs_cond;
	struct http_request *jobs_head, *jobs_tail;
	bool stopping;
	pthread_t *workers;
	unsigned nworkers;
	/* Open streams, so that stopping can end them first (libmicrohttpd refuses to stop with
	 * suspended connections). */
	pthread_mutex_t streams_lock;
	struct http_stream *streams;
	size_t nstreams;
	/* Switched connections not yet closed: stopping shuts their sockets down so that their
	 * owners close them (libmicrohttpd must not stop with them open). */
	struct http_upgraded *upgraded;
	size_t nupgraded;
	/* TLS: libmicrohttpd stops forwarding when the client's connection ends but never tells
	 * the owner (the socketpair stays open). A thread watches the client sockets of switched
	 * connections for their end and shuts the owner's socket down then. */
	int watch_ep;
	int watch_wake;            /* eventfd in watch_ep: a closing connection was queued */
	struct http_upgraded *closing_up; /* closed by their owners, waiting for the server to read the rest */
	struct cut *cuts;          /* closed ones whose client connection must be gone soon */
	pthread_t watcher;
	bool watching;
	atomic_bool watch_stop;
	atomic_bool closing;
	bool external;    /* driven by the caller's loop (http_server_run) */
	bool quiesced;
	MHD_socket lsock; /* the listening socket once quiesced (ours to close) */
	/* Internal mode: our own listening socket and accept thread (see accept_main). */
	int listen_fd;
	int accept_wake;  /* eventfd: the accept thread ends */
	pthread_t acceptor;
	bool accepting;
	void (*wake)(void *ud);
	void *wake_ud;
	atomic_int busy;  /* requests queued for or running on a worker, or deferred (their connection sleeps) */
	char *cert, *key; /* kept until stop: the TLS library may refer to them */
};

static struct http_request *request_of(struct http_reply *rp);
static void close_listener(struct http_server *s);

/* Every resume goes through here: in external mode the driving loop must hear of it. */
static void resume(struct http_server *srv, struct MHD_Connection *conn)
{
	MHD_resume_connection(conn);
	if (srv->external && srv->wake)
		srv->wake(srv->wake_ud);
}

const char *http_method(const struct http_request *r) { return r->method; }
const char *http_path(const struct http_request *r) { return r->path; }
void http_request_set_path(struct http_request *r, const char *path) { r->path = path; }
int64_t http_started_us(const struct http_request *r) { return r->started_us; }
void http_request_set_data(struct http_request *r, void *data) { r->data = data; }
void *http_request_data(const struct http_request *r) { return r->data; }
bool http_reply_is_plain(const struct http_reply *rp)
{
	return !rp->stream && !rp->upgrade && !request_of((struct http_reply *)rp)->deferred;
}

void http_request_on_complete(struct http_request *r, void (*fn)(void *ud), void *ud)
{
	r->complete = fn;
	r->complete_ud = ud;
}
const char *http_client_addr(const struct http_request *r) { return r->client; }

void http_request_limit_send_buffer(struct http_request *r, int bytes)
{
	const union MHD_ConnectionInfo *i = MHD_get_connection_info(r->conn, MHD_CONNECTION_INFO_CONNECTION_FD);
	if (i && setsockopt(i->connect_fd, SOL_SOCKET, SO_SNDBUF, &bytes, sizeof(bytes)) < 0)
		log_warn("http: cannot bound a connection's send buffer", "error=\"%s\"", strerror(errno));
}

const char *http_query(const struct http_request *r, const char *key)
{
	if (!r)
		return NULL;
	return MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, key);
}

const char *http_query_string(const struct http_request *r)
{
	return r ? r->query : NULL;
}

const char *http_header(const struct http_request *r, const char *name)
{
	if (!r)
		return NULL;
	return MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, name);
}

struct header_all {
	const char *name;
	const char **out;
	size_t max, n;
};

static enum MHD_Result collect_header(void *cls, enum MHD_ValueKind kind, const char *key, const char *value)
{
	struct header_all *h = cls;
	if (key && value && strcasecmp(key, h->name) == 0) {
		if (h->n < h->max)
			h->out[h->n] = value;
		h->n++;
	}
	return MHD_YES;
}

size_t http_header_all(const struct http_request *r, const char *name, const char **out, size_t max)
{
	struct header_all h = { .name = name, .out = out, .max = max };
	if (r)
		MHD_get_connection_values(r->conn, MHD_HEADER_KIND, collect_header, &h);
	return h.n;
}

const char *http_body(const struct http_request *r, size_t *ret_len)
{
	if (ret_len)
		*ret_len = r ? r->body.len : 0;
	return r ? buf_cstr(&r->body) : "";
}

void http_reply_set(struct http_reply *rp, int status, const char *content_type, struct buf *body)
{
	rp->status = status;
	rp->content_type = content_type;
	buf_release(&rp->body);
	if (body) {
		rp->body = *body;
		buf_init(body);
	}
}

void http_reply_header(struct http_reply *rp, const char *name, const char *value)
{
	if (rp->nheaders == MAX_REPLY_HEADERS)
		return;
	rp->hname[rp->nheaders] = xstrdup(name);
	rp->hvalue[rp->nheaders] = xstrdup(value);
	rp->nheaders++;
}

int http_reply_status(const struct http_reply *rp) { return rp->status; }

static struct http_request *request_of(struct http_reply *rp)
{
	return (struct http_request *)((char *)rp - offsetof(struct http_request, reply));
}

/* Suspends the connection unless a worker already did (it is then still the worker's
 * http_request; the worker leaves the resume to http_deferred_finish). */
struct http_deferred *http_reply_defer(struct http_reply *rp)
{
	struct http_request *r = request_of(rp);
	struct http_server *srv = r->srv;
	r->deferred = true;
	if (r->queued) {
		atomic_store(&r->holds, 2); /* the worker returning, and the finish */
	} else {
		atomic_store(&r->holds, 1);
		r->queued = true;
		atomic_fetch_add(&srv->busy, 1);
		MHD_suspend_connection(r->conn);
	}
	return (struct http_deferred *)r;
}

/* The last holder of a deferred request hands it back to its epoll thread, or to the workers
 * again (rerun; its busy count stays). */
static void deferred_release(struct http_request *r)
{
	if (atomic_fetch_sub(&r->holds, 1) != 1)
		return;
	struct http_server *srv = r->srv;
	if (r->rerun) {
		r->rerun = false;
		r->deferred = false;
		pthread_mutex_lock(&srv->jobs_lock);
		r->next_job = srv->jobs_head;
		srv->jobs_head = r;
		if (!srv->jobs_tail)
			srv->jobs_tail = r;
		pthread_cond_signal(&srv->jobs_cond);
		pthread_mutex_unlock(&srv->jobs_lock);
		return;
	}
	r->answered = true;
	resume(srv, r->conn);
	atomic_fetch_sub(&srv->busy, 1);
}

void http_deferred_finish(struct http_deferred *d)
{
	deferred_release((struct http_request *)d);
}

void http_deferred_rerun(struct http_deferred *d)
{
	struct http_request *r = (struct http_request *)d;
	r->rerun = true;
	deferred_release(r);
}

struct http_stream *http_reply_stream(struct http_reply *rp, int status, const char *content_type,
				      int (*fill)(void *ud, struct buf *out, size_t max), void (*done)(void *ud),
				      void *ud)
{
	struct http_stream *s = xcalloc(1, sizeof(*s));
	pthread_mutex_init(&s->lock, NULL);
	s->fill = fill;
	s->done = done;
	s->ud = ud;
	rp->status = status;
	rp->content_type = content_type;
	rp->stream = s;
	return s;
}

void http_stream_wake(struct http_stream *s)
{
	pthread_mutex_lock(&s->lock);
	s->woken = true;
	if (s->suspended) {
		s->suspended = false;
		resume(s->srv, s->conn);
	}
	pthread_mutex_unlock(&s->lock);
}

static ssize_t on_stream_read(void *cls, uint64_t pos, char *out, size_t max)
{
	struct http_stream *s = cls;
	for (;;) {
		if (s->off < s->pending.len) {
			size_t n = s->pending.len - s->off;
			if (n > max)
				n = max;
			memcpy(out, s->pending.ptr + s->off, n);
			s->off += n;
			if (s->off == s->pending.len) {
				buf_reset(&s->pending);
				s->off = 0;
			}
			return (ssize_t)n;
		}
		if (s->ended || atomic_load(&s->srv->closing))
			return MHD_CONTENT_READER_END_OF_STREAM;
		pthread_mutex_lock(&s->lock);
		s->woken = false;
		pthread_mutex_unlock(&s->lock);
		int r = s->fill(s->ud, &s->pending, max);
		if (r < 0)
			s->ended = true;
		if (r != 0)
			continue;
		pthread_mutex_lock(&s->lock);
		/* end_streams sets closing before it wakes: seeing neither here means its wake comes
		 * after this suspension and resumes it. */
		if (s->woken || atomic_load(&s->srv->closing)) {
			pthread_mutex_unlock(&s->lock);
			continue;
		}
		s->suspended = true;
		MHD_suspend_connection(s->conn);
		pthread_mutex_unlock(&s->lock);
		return 0;
	}
}

static void on_stream_free(void *cls)
{
	struct http_stream *s = cls;
	struct http_server *srv = s->srv;
	pthread_mutex_lock(&srv->streams_lock);
	if (s->prev)
		s->prev->next = s->next;
	else
		srv->streams = s->next;
	if (s->next)
		s->next->prev = s->prev;
	srv->nstreams--;
	pthread_mutex_unlock(&srv->streams_lock);
	s->done(s->ud);
	buf_release(&s->pending);
	pthread_mutex_destroy(&s->lock);
	free(s);
}

void http_reply_upgrade(struct http_reply *rp, http_upgrade_fn on_switched, void *ud)
{
	struct http_upgraded *u = xcalloc(1, sizeof(*u));
	u->fd = -1;
	u->client_fd = -1;
	u->raw_fd = -1;
	u->fn = on_switched;
	u->ud = ud;
	if (rp->upgrade) /* a second call replaces the first, whose owner hears it never switches */
		rp->upgrade->fn(rp->upgrade->ud, NULL, -1, NULL, 0), free(rp->upgrade);
	rp->upgrade = u;
	rp->status = 101;
}

static void final_close(struct http_upgraded *u);
static void run_cuts(struct http_server *srv, int64_t now);

/* Bytes written to fd that its peer has not read yet. */
static int unread(int fd)
{
	int n = 0;
	return ioctl(fd, SIOCOUTQ, &n) == 0 ? n : 0;
}

static void *watch_main(void *arg)
{
	struct http_server *srv = arg;
	struct epoll_event ev[32];
	while (!atomic_load(&srv->watch_stop)) {
		int n = epoll_wait(srv->watch_ep, ev, 32, srv->closing_up ? 2 : srv->cuts ? 50 : 200);
		pthread_mutex_lock(&srv->streams_lock);
		run_cuts(srv, mono_ms());
		/* the closing ones libmicrohttpd has read to the end */
		struct http_upgraded *done = NULL;
		int64_t now = mono_ms();
		for (struct http_upgraded **pp = &srv->closing_up; *pp;) {
			struct http_upgraded *u = *pp;
			if (unread(u->fd) > 0 && now < u->close_by) {
				pp = &u->next;
				continue;
			}
			*pp = u->next;
			u->next = done;
			done = u;
		}
		for (int i = 0; i < n; i++) {
			if (ev[i].data.ptr == NULL) {
				uint64_t v;
				(void)!read(srv->watch_wake, &v, sizeof(v));
				continue;
			}
			/* still open? (one closed meanwhile may be freed) */
			struct http_upgraded *u = srv->upgraded;
			while (u && u != ev[i].data.ptr)
				u = u->next;
			if (!u || u->client_fd < 0)
				continue;
			epoll_ctl(srv->watch_ep, EPOLL_CTL_DEL, u->client_fd, NULL);
			u->client_fd = -1;
			shutdown(u->fd, SHUT_RDWR);
		}
		pthread_mutex_unlock(&srv->streams_lock);
		while (done) {
			struct http_upgraded *next = done->next;
			final_close(done);
			done = next;
		}
	}
	return NULL;
}

/* Under streams_lock. */
static void watch_client(struct http_server *srv, struct http_upgraded *u, struct MHD_Connection *conn)
{
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
	if (!ci)
		return;
	if (!srv->watching) {
		srv->watch_ep = epoll_create1(EPOLL_CLOEXEC);
		if (srv->watch_ep < 0)
			return;
		srv->watch_wake = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
		struct epoll_event wev = { .events = EPOLLIN, .data.ptr = NULL };
		epoll_ctl(srv->watch_ep, EPOLL_CTL_ADD, srv->watch_wake, &wev);
		srv->watching = true;
		pthread_create(&srv->watcher, NULL, watch_main, srv);
	}
	struct epoll_event ev = { .events = EPOLLRDHUP, .data.ptr = u };
	if (epoll_ctl(srv->watch_ep, EPOLL_CTL_ADD, ci->connect_fd, &ev) == 0)
		u->client_fd = ci->connect_fd;
	u->raw_fd = ci->connect_fd;
}

/* TLS: libmicrohttpd forwards a switched connection between the TLS session and the owner's
 * socketpair through buffers taken from the connection's memory pool. In 0.9.75 the pool is
 * always full at that moment: the 101's head was built in a write buffer grown to all of the
 * pool's free space (connection_maximize_write_buffer), and MHD_response_execute_upgrade_ asks
 * for the free space without giving that buffer back, so it falls back to its 8-byte emergency
 * buffer and moves 4 bytes per system call each way, whatever MHD_OPTION_CONNECTION_MEMORY_LIMIT
 * says (later releases release the write and read buffers first). So when the switch is
 * announced (on the thread that forwards, before it has forwarded anything) the emergency
 * buffer is replaced with one of ours, if the handle has exactly 0.9.75's layout; otherwise it
 * is left alone (slow, but correct). Ours is freed when libmicrohttpd reports the connection
 * closed, where it destroys the pool its own buffers would have lived in. */
#if MHD_VERSION == 0x00097500
#define URH_HALF (16 * 1024) /* each way: one TLS record */

/* The start of libmicrohttpd 0.9.75's struct MHD_UpgradeResponseHandle (src/microhttpd/internal.h,
 * HTTPS and epoll support on, as Debian builds it). */
struct mhd_urh_0975 {
	struct MHD_Connection *connection;
	void *next, *prev, *next_e, *prev_e;
	bool in_eready_list;
	char *in_buffer, *out_buffer;
	size_t in_buffer_size, out_buffer_size, in_buffer_used, out_buffer_used;
	struct {
		void *urh;
		int socket;
		int celi;
	} app, mhd;
	char e_buf[8];
};
_Static_assert(offsetof(struct mhd_urh_0975, e_buf) == 128, "libmicrohttpd 0.9.75 layout");

/* True if h is a 0.9.75 handle for conn and app_fd, still on its emergency buffer. */
static bool urh_on_ebuf(const void *h, const void *conn, int app_fd)
{
	const struct mhd_urh_0975 *u = h;
	return u->connection == conn && u->in_buffer == u->e_buf && u->out_buffer == u->e_buf + 4 &&
	       u->in_buffer_size == 4 && u->out_buffer_size == 4 && u->in_buffer_used == 0 && u->out_buffer_used == 0 &&
	       u->app.urh == h && u->app.socket == app_fd && u->mhd.urh == h && u->mhd.socket >= 0 &&
	       u->mhd.socket != app_fd;
}
#endif

static void widen_urh(struct MHD_Connection *conn, struct MHD_UpgradeResponseHandle *urh, int app_fd)
{
#if MHD_VERSION == 0x00097500
	static atomic_int same_version = -1;
	if (atomic_load(&same_version) < 0)
		atomic_store(&same_version, strcmp(MHD_get_version(), "0.9.75") == 0);
	if (!atomic_load(&same_version))
		return;
	if (!urh_on_ebuf(urh, conn, app_fd)) {
		static atomic_flag told = ATOMIC_FLAG_INIT;
		if (!atomic_flag_test_and_set(&told))
			log_warn("http: switched TLS connections keep libmicrohttpd's own forwarding buffers",
				 "reason=\"%s\"", "upgrade handle not as expected for 0.9.75");
		return;
	}
	/* the slot notify_connection made point at itself */
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	void **slot = ci ? ci->socket_context : NULL;
	if (!slot || *slot != slot)
		return;
	struct mhd_urh_0975 *u = (struct mhd_urh_0975 *)urh;
	char *b = xmalloc(2 * URH_HALF);
	*slot = b;
	u->in_buffer = b;
	u->out_buffer = b + URH_HALF;
	u->in_buffer_size = URH_HALF;
	u->out_buffer_size = URH_HALF;
#else
	(void)conn, (void)urh, (void)app_fd;
#endif
}

/* TLS servers: each connection's socket context starts out pointing at itself (so that
 * widen_urh can find it) and holds the forwarding buffer once widened. */
static void on_connection(void *cls, struct MHD_Connection *conn, void **socket_context,
			  enum MHD_ConnectionNotificationCode code)
{
	(void)cls, (void)conn;
	if (code == MHD_CONNECTION_NOTIFY_STARTED)
		*socket_context = socket_context;
	else if (*socket_context != socket_context)
		free(*socket_context), *socket_context = NULL;
}

/* libmicrohttpd sent the 101: the connection is the owner's from here. */
static void on_switched(void *cls, struct MHD_Connection *conn, void *con_cls, const char *extra, size_t extra_len,
			MHD_socket sock, struct MHD_UpgradeResponseHandle *urh)
{
	struct http_upgraded *u = cls;
	struct http_request *r = con_cls;
	struct http_server *srv = u->srv;
	if (r && r->upgrading == u)
		r->upgrading = NULL;
	u->urh = urh;
	u->fd = sock;
	u->switched = true;
	if (srv->cert)
		widen_urh(conn, urh, sock);
	/* libmicrohttpd turns Nagle's algorithm back on for the switch: a stream's last small
	 * write would then wait for the peer's delayed ACK (40 ms per exchange) */
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
	if (ci)
		setsockopt(ci->connect_fd, IPPROTO_TCP, TCP_NODELAY, &(int){ 1 }, sizeof(int));
	pthread_mutex_lock(&srv->streams_lock);
	u->next = srv->upgraded;
	if (u->next)
		u->next->prev = u;
	srv->upgraded = u;
	srv->nupgraded++;
	if (srv->cert)
		watch_client(srv, u, conn);
	pthread_mutex_unlock(&srv->streams_lock);
	u->fn(u->ud, u, sock, extra, extra_len);
}

void http_upgraded_close(struct http_upgraded *u)
{
	struct http_server *srv = u->srv;
	pthread_mutex_lock(&srv->streams_lock);
	if (u->prev)
		u->prev->next = u->next;
	else
		srv->upgraded = u->next;
	if (u->next)
		u->next->prev = u->prev;
	if (u->client_fd >= 0)
		epoll_ctl(srv->watch_ep, EPOLL_CTL_DEL, u->client_fd, NULL);
	u->client_fd = -1;
	/* TLS: libmicrohttpd (0.9.75) may miss the end of the socketpair when it arrives together
	 * with the last bytes (one edge, a short read), and then never closes the client's
	 * connection. So the end is only signalled once it has read everything (up to 2 s). */
	if (srv->cert && srv->watching && unread(u->fd) > 0) {
		u->close_by = mono_ms() + 2000;
		u->prev = NULL;
		u->next = srv->closing_up;
		srv->closing_up = u;
		pthread_mutex_unlock(&srv->streams_lock);
		uint64_t one = 1;
		(void)!write(srv->watch_wake, &one, sizeof(one));
		return;
	}
	pthread_mutex_unlock(&srv->streams_lock);
	final_close(u);
}

static bool same_addr(const struct sockaddr_storage *a, const struct sockaddr_storage *b, socklen_t len)
{
	return memcmp(a, b, len) == 0;
}

/* Under streams_lock: the cuts that are due. */
static void run_cuts(struct http_server *srv, int64_t now)
{
	for (struct cut **pp = &srv->cuts; *pp;) {
		struct cut *c = *pp;
		if (now < c->at) {
			pp = &c->next;
			continue;
		}
		struct sockaddr_storage l, p;
		socklen_t ll = sizeof(l), pl = sizeof(p);
		memset(&l, 0, sizeof(l));
		memset(&p, 0, sizeof(p));
		bool same = getsockname(c->fd, (struct sockaddr *)&l, &ll) == 0 &&
			    getpeername(c->fd, (struct sockaddr *)&p, &pl) == 0 && same_addr(&l, &c->local, sizeof(l)) &&
			    same_addr(&p, &c->peer, sizeof(p));
		if (same)
			shutdown(c->fd, SHUT_RDWR);
		*pp = c->next;
		free(c);
	}
}

static void final_close(struct http_upgraded *u)
{
	struct http_server *srv = u->srv;
	struct cut *c = NULL;
	if (u->raw_fd >= 0) {
		c = xcalloc(1, sizeof(*c));
		c->fd = u->raw_fd;
		socklen_t ll = sizeof(c->local), pl = sizeof(c->peer);
		if (getsockname(c->fd, (struct sockaddr *)&c->local, &ll) != 0 ||
		    getpeername(c->fd, (struct sockaddr *)&c->peer, &pl) != 0)
			free(c), c = NULL;
	}
	MHD_upgrade_action(u->urh, MHD_UPGRADE_ACTION_CLOSE);
	pthread_mutex_lock(&srv->streams_lock);
	srv->nupgraded--;
	if (c) {
		c->at = mono_ms() + 1000;
		c->next = srv->cuts;
		srv->cuts = c;
	}
	pthread_mutex_unlock(&srv->streams_lock);
	if (srv->external && srv->wake)
		srv->wake(srv->wake_ud);
	free(u);
}

/* An upgrade that was never sent (the client left first, or the reply was dropped): its owner
 * hears of it with a NULL connection. */
static void upgrade_abandon(struct http_upgraded *u)
{
	u->fn(u->ud, NULL, -1, NULL, 0);
	free(u);
}

static void reply_release(struct http_reply *rp)
{
	if (rp->upgrade) {
		upgrade_abandon(rp->upgrade);
		rp->upgrade = NULL;
	}
	buf_release(&rp->body);
	for (unsigned i = 0; i < rp->nheaders; i++) {
		free(rp->hname[i]);
		free(rp->hvalue[i]);
	}
}

static enum MHD_Result send_reply(struct http_server *srv, struct MHD_Connection *conn, struct http_reply *rp)
{
	struct MHD_Response *resp;
	if (rp->upgrade) {
		struct http_upgraded *u = rp->upgrade;
		struct http_request *r = request_of(rp);
		rp->upgrade = NULL;
		u->srv = srv;
		r->upgrading = u;
		rp->status = 101;
		resp = MHD_create_response_for_upgrade(on_switched, u);
	} else if (rp->stream) {
		struct http_stream *st = rp->stream;
		st->conn = conn;
		st->srv = srv;
		pthread_mutex_lock(&srv->streams_lock);
		st->next = srv->streams;
		if (st->next)
			st->next->prev = st;
		srv->streams = st;
		srv->nstreams++;
		pthread_mutex_unlock(&srv->streams_lock);
		resp = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 64 * 1024, on_stream_read, rp->stream,
							 on_stream_free);
		MHD_set_connection_option(conn, MHD_CONNECTION_OPTION_TIMEOUT, 0u);
	} else {
		size_t len;
		char *body = buf_detach(&rp->body, &len);
		resp = MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
	}
	if (rp->content_type)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, rp->content_type);
	for (unsigned i = 0; i < rp->nheaders; i++)
		MHD_add_response_header(resp, rp->hname[i], rp->hvalue[i]);
	enum MHD_Result ret = MHD_queue_response(conn, (unsigned)rp->status, resp);
	MHD_destroy_response(resp);
	return ret;
}

static void fill_client(struct MHD_Connection *conn, struct http_request *r)
{
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
	r->client[0] = '\0';
	if (ci && ci->client_addr && ci->client_addr->sa_family == AF_INET) {
		const struct sockaddr_in *in = (const struct sockaddr_in *)ci->client_addr;
		inet_ntop(AF_INET, &in->sin_addr, r->client, sizeof(r->client));
	}
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url, const char *method,
				  const char *version, const char *upload_data, size_t *upload_data_size,
				  void **con_cls)
{
	struct http_server *srv = cls;
	struct http_request *r = *con_cls;
	if (!r || !r->begun) {
		if (!r)
			r = xcalloc(1, sizeof(*r));
		r->begun = true;
		r->srv = srv;
		r->conn = conn;
		r->method = method;
		r->path = url;
		r->started_us = mono_us();
		fill_client(conn, r);
		*con_cls = r;
		return MHD_YES;
	}
	if (*upload_data_size) {
		if (r->body.len + *upload_data_size > srv->max_body)
			r->too_large = true;
		else
			buf_add(&r->body, upload_data, *upload_data_size);
		*upload_data_size = 0;
		return MHD_YES;
	}
	if (r->queued && !r->answered)
		return MHD_YES; /* spurious call while the worker runs */
	if (!r->queued && !r->too_large && srv->fast && !r->fast_done) {
		r->fast_done = true;
		r->reply.status = 500;
		if (srv->fast(srv->fast_ud, r, &r->reply)) {
			if (r->deferred)
				return MHD_YES; /* r is the deferred reply's owner's until it finishes */
			goto send;
		}
	}
	if (!r->queued && !r->too_large) {
		r->queued = true;
		r->reply.status = 500;
		atomic_fetch_add(&srv->busy, 1);
		MHD_suspend_connection(conn);
		pthread_mutex_lock(&srv->jobs_lock);
		if (srv->jobs_tail)
			srv->jobs_tail->next_job = r;
		else
			srv->jobs_head = r;
		srv->jobs_tail = r;
		pthread_cond_signal(&srv->jobs_cond);
		pthread_mutex_unlock(&srv->jobs_lock);
		return MHD_YES;
	}
	if (r->too_large) {
		struct buf b = BUF_INIT;
		buf_addf(&b, "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\","
			     "\"message\":\"the request body is larger than %zu bytes\",\"reason\":"
			     "\"RequestEntityTooLarge\",\"code\":413}",
			 srv->max_body);
		http_reply_set(&r->reply, 413, "application/json", &b);
	}
send:;
	enum MHD_Result ret = send_reply(srv, conn, &r->reply);
	reply_release(&r->reply);
	memset(&r->reply, 0, sizeof(r->reply));
	return ret;
}

static void *worker_main(void *arg)
{
	struct http_server *srv = arg;
	for (;;) {
		pthread_mutex_lock(&srv->jobs_lock);
		while (!srv->jobs_head && !srv->stopping)
			pthread_cond_wait(&srv->jobs_cond, &srv->jobs_lock);
		struct http_request *r = srv->jobs_head;
		if (!r) {
			pthread_mutex_unlock(&srv->jobs_lock);
			return NULL;
		}
		srv->jobs_head = r->next_job;
		if (!srv->jobs_head)
			srv->jobs_tail = NULL;
		r->next_job = NULL;
		pthread_mutex_unlock(&srv->jobs_lock);
		srv->handler(srv->ud, r, &r->reply);
		if (r->deferred) {
			deferred_release(r);
			continue;
		}
		r->answered = true;
		resume(srv, r->conn);
		atomic_fetch_sub(&srv->busy, 1);
	}
}

/* Runs before the request line is parsed, with the request target as sent: the raw query
 * string is kept here (libmicrohttpd only gives decoded arguments later). The request
 * record it returns becomes the connection's con_cls. */
static void *on_uri(void *cls, const char *uri, struct MHD_Connection *conn)
{
	struct http_request *r = xcalloc(1, sizeof(*r));
	const char *q = uri ? strchr(uri, '?') : NULL;
	if (q) {
		const char *end = strchr(q + 1, '#');
		r->query = end ? xstrndup(q + 1, (size_t)(end - q - 1)) : xstrdup(q + 1);
	}
	return r;
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls, enum MHD_RequestTerminationCode tc)
{
	struct http_request *r = *con_cls;
	if (!r)
		return;
	if (r->upgrading) {
		upgrade_abandon(r->upgrading);
		r->upgrading = NULL;
	}
	if (r->complete)
		r->complete(r->complete_ud);
	free(r->query);
	buf_release(&r->body);
	reply_release(&r->reply);
	free(r);
	*con_cls = NULL;
}

static void stop_workers(struct http_server *s)
{
	pthread_mutex_lock(&s->jobs_lock);
	s->stopping = true;
	pthread_cond_broadcast(&s->jobs_cond);
	pthread_mutex_unlock(&s->jobs_lock);
	for (unsigned i = 0; i < s->nworkers; i++)
		pthread_join(s->workers[i], NULL);
	free(s->workers);
	pthread_mutex_destroy(&s->jobs_lock);
	pthread_cond_destroy(&s->jobs_cond);
}

static void raise_nofile(void)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

static char *read_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	struct buf b = BUF_INIT;
	char tmp[4096];
	size_t n;
	while ((n = fread(tmp, 1, sizeof(tmp), f)) > 0)
		buf_add(&b, tmp, n);
	fclose(f);
	return buf_detach(&b, NULL);
}

static int parse_listen(const char *listen, struct sockaddr_in *ret)
{
	const char *colon = strrchr(listen, ':');
	long long port;
	if (!colon || parse_int64(colon + 1, &port) < 0 || port < 0 || port > 65535)
		return -1;
	char host[64];
	size_t hl = (size_t)(colon - listen);
	if (hl == 0 || hl >= sizeof(host))
		return -1;
	memcpy(host, listen, hl);
	host[hl] = '\0';
	memset(ret, 0, sizeof(*ret));
	ret->sin_family = AF_INET;
	ret->sin_port = htons((uint16_t)port);
	if (strcmp(host, "localhost") == 0)
		strcpy(host, "127.0.0.1");
	return inet_pton(AF_INET, host, &ret->sin_addr) == 1 ? 0 : -1;
}

/* A listening socket (non-blocking) on addr, or -1 with errno set. */
static int listen_on(const struct sockaddr_in *addr, bool reuse_port)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	int on = 1;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on));
	if (reuse_port && setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &on, sizeof(on)) < 0)
		goto fail;
	if (bind(fd, (const struct sockaddr *)addr, sizeof(*addr)) < 0 || listen(fd, 1024) < 0)
		goto fail;
	return fd;
fail:;
	int e = errno;
	close(fd);
	errno = e;
	return -1;
}

/* Internal mode accepts here and hands each connection to libmicrohttpd (MHD_add_connection
 * wakes a poll thread): libmicrohttpd 0.9.75's quiesce of an epoll daemon with its own threads
 * races those threads over the listening socket and aborts the process now and then ("Failed
 * to remove listen FD from epoll set"). Stopping to accept is then ours: http_server_quiesce
 * wakes this thread through accept_wake and it ends. */
static void *accept_main(void *arg)
{
	struct http_server *s = arg;
	struct pollfd p[2] = { { .fd = s->listen_fd, .events = POLLIN }, { .fd = s->accept_wake, .events = POLLIN } };
	for (;;) {
		if (poll(p, 2, -1) < 0 && errno != EINTR)
			break;
		if (p[1].revents)
			break;
		for (int i = 0; i < 256; i++) {
			struct sockaddr_storage sa;
			socklen_t len = sizeof(sa);
			int fd = accept4(s->listen_fd, (struct sockaddr *)&sa, &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
			if (fd < 0) {
				if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM)
					poll(p + 1, 1, 10); /* out of descriptors: others may close soon */
				break;
			}
			/* On failure (the connection limit) libmicrohttpd closes it. */
			MHD_add_connection(s->mhd, fd, (const struct sockaddr *)&sa, len);
		}
	}
	return NULL;
}

struct http_server *http_server_start(const struct http_server_options *o, http_handler h, void *ud, char **ret_err)
{
	struct sockaddr_in addr;
	if (parse_listen(o->listen, &addr) < 0) {
		*ret_err = xasprintf("invalid listen address \"%s\" (want IPv4:PORT)", o->listen);
		return NULL;
	}
	raise_nofile();
	struct http_server *s = xcalloc(1, sizeof(*s));
	pthread_mutex_init(&s->jobs_lock, NULL);
	pthread_cond_init(&s->jobs_cond, NULL);
	s->nworkers = o->threads ? o->threads : 16;
	s->workers = xcalloc(s->nworkers, sizeof(*s->workers));
	for (unsigned i = 0; i < s->nworkers; i++)
		pthread_create(&s->workers[i], NULL, worker_main, s);
	pthread_mutex_init(&s->streams_lock, NULL);
	s->handler = h;
	s->ud = ud;
	s->fast = o->fast;
	s->fast_ud = o->fast_ud;
	s->max_body = o->max_body ? o->max_body : 3u << 20;
	s->external = o->external;
	s->wake = o->wake;
	s->wake_ud = o->wake_ud;
	s->lsock = MHD_INVALID_SOCKET;
	s->listen_fd = -1;
	s->accept_wake = -1;
	unsigned flags = MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME | MHD_ALLOW_UPGRADE | MHD_USE_ERROR_LOG;
	if (!s->external) {
		flags |= MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_NO_LISTEN_SOCKET;
		s->listen_fd = listen_on(&addr, o->reuse_port);
		if (s->listen_fd >= 0)
			s->accept_wake = eventfd(0, EFD_CLOEXEC);
		if (s->listen_fd < 0 || s->accept_wake < 0) {
			*ret_err = xasprintf("cannot listen on %s: %s", o->listen, strerror(errno));
			close_listener(s);
			stop_workers(s);
			free(s);
			return NULL;
		}
	}
	char *cert = NULL, *key = NULL;
	if (o->tls_cert && o->tls_key) {
		cert = read_file(o->tls_cert);
		key = read_file(o->tls_key);
		if (!cert || !key) {
			*ret_err = xasprintf("cannot read TLS certificate or key (%s, %s)", o->tls_cert, o->tls_key);
			stop_workers(s);
			close_listener(s);
			free(cert), free(key), free(s);
			return NULL;
		}
		flags |= MHD_USE_TLS;
	}
	/* Two internal epoll threads, unless the caller's loop drives the server. */
	struct MHD_OptionItem pool_opts[] = {
		{ MHD_OPTION_THREAD_POOL_SIZE, 2, NULL },
		{ MHD_OPTION_END, 0, NULL },
	};
	struct MHD_OptionItem reuse_opts[] = {
		{ MHD_OPTION_LISTENING_ADDRESS_REUSE, 1, NULL },
		{ MHD_OPTION_END, 0, NULL },
	};
	struct MHD_OptionItem tls_opts[] = {
		{ MHD_OPTION_HTTPS_MEM_CERT, 0, cert },
		{ MHD_OPTION_HTTPS_MEM_KEY, 0, key },
		{ MHD_OPTION_END, 0, NULL },
	};
	s->mhd = MHD_start_daemon(flags, 0, NULL, NULL, on_request, s,
				  MHD_OPTION_SOCK_ADDR, s->external ? (struct sockaddr *)&addr : NULL,
				  MHD_OPTION_ARRAY, s->external ? pool_opts + 1 : pool_opts,
				  MHD_OPTION_CONNECTION_LIMIT, (unsigned)60000,
				  MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)(o->conn_timeout_s ? o->conn_timeout_s : 120),
				  MHD_OPTION_NOTIFY_COMPLETED, on_completed, s,
				  MHD_OPTION_NOTIFY_CONNECTION, cert ? on_connection : NULL, NULL,
				  MHD_OPTION_URI_LOG_CALLBACK, on_uri, s,
				  MHD_OPTION_LISTEN_BACKLOG_SIZE, (unsigned)1024,
				  MHD_OPTION_ARRAY, cert ? tls_opts : tls_opts + 2,
				  MHD_OPTION_ARRAY, o->reuse_port && s->external ? reuse_opts : reuse_opts + 1,
				  MHD_OPTION_END);
	s->cert = cert;
	s->key = key;
	if (!s->mhd) {
		*ret_err = xasprintf("cannot listen on %s", o->listen);
		stop_workers(s);
		close_listener(s);
		free(cert), free(key), free(s);
		return NULL;
	}
	if (!s->external) {
		pthread_create(&s->acceptor, NULL, accept_main, s);
		s->accepting = true;
	}
	return s;
}

int http_server_fd(struct http_server *s)
{
	const union MHD_DaemonInfo *i = MHD_get_daemon_info(s->mhd, MHD_DAEMON_INFO_EPOLL_FD);
	return i ? i->epoll_fd : -1;
}

void http_server_run(struct http_server *s)
{
	MHD_run(s->mhd);
}

long http_server_timeout_ms(struct http_server *s)
{
	MHD_UNSIGNED_LONG_LONG t;
	if (MHD_get_timeout(s->mhd, &t) != MHD_YES)
		return -1;
	return t > 60000 ? 60000 : (long)t;
}

/* Ends the accept thread (if it runs) and closes our listening socket. */
static void close_listener(struct http_server *s)
{
	if (s->accepting) {
		uint64_t one = 1;
		if (write(s->accept_wake, &one, sizeof(one)) != sizeof(one))
			log_warn("http: cannot wake the accept thread", "error=\"%s\"", strerror(errno));
		pthread_join(s->acceptor, NULL);
		s->accepting = false;
	}
	if (s->listen_fd >= 0)
		close(s->listen_fd);
	if (s->accept_wake >= 0)
		close(s->accept_wake);
	s->listen_fd = s->accept_wake = -1;
}

void http_server_quiesce(struct http_server *s)
{
	if (s->quiesced)
		return;
	s->quiesced = true;
	if (s->external)
		s->lsock = MHD_quiesce_daemon(s->mhd); /* on the driving thread: no race */
	else
		close_listener(s);
}

/* Waits about 10 ms; in external mode the server is driven meanwhile (nobody else does). */
static void pause_driving(struct http_server *s)
{
	if (!s->external) {
		usleep(10 * 1000);
		return;
	}
	for (int64_t until = mono_ms() + 10; mono_ms() < until;) {
		MHD_run(s->mhd);
		usleep(1000);
	}
}

/* Ends every open stream (they finish their chunked body) and waits up to 2 s for them. */
static void end_streams(struct http_server *s)
{
	pthread_mutex_lock(&s->streams_lock);
	atomic_store(&s->closing, true);
	for (struct http_stream *st = s->streams; st; st = st->next)
		http_stream_wake(st);
	pthread_mutex_unlock(&s->streams_lock);
	for (int i = 0; i < 200; i++) {
		pthread_mutex_lock(&s->streams_lock);
		size_t n = s->nstreams;
		pthread_mutex_unlock(&s->streams_lock);
		if (n == 0)
			break;
		pause_driving(s);
	}
}

/* Shuts the switched connections' sockets down, so that their owners see the end and close
 * them, and waits up to 2 s for that. */
static void end_upgraded(struct http_server *s)
{
	pthread_mutex_lock(&s->streams_lock);
	for (struct http_upgraded *u = s->upgraded; u; u = u->next)
		shutdown(u->fd, SHUT_RDWR);
	pthread_mutex_unlock(&s->streams_lock);
	for (int i = 0; i < 200; i++) {
		pthread_mutex_lock(&s->streams_lock);
		size_t n = s->nupgraded;
		pthread_mutex_unlock(&s->streams_lock);
		if (n == 0)
			break;
		pause_driving(s);
	}
}

/* Waits (up to 15 s) for the handlers running or queued: their connections are suspended, and
 * libmicrohttpd refuses to stop with suspended connections. */
static void drain_handlers(struct http_server *s)
{
	for (int i = 0; i < 1500 && atomic_load(&s->busy) > 0; i++)
		pause_driving(s);
	if (s->external)
		MHD_run(s->mhd); /* the last resumed replies go out */
}

/* A reply finished just now (a deferred one resumed, a handler's last) is queued on its
 * connection, not yet sent: stopping at once would cut it. Waits up to 500 ms while connections
 * remain (those still sending end; idle keep-alive ones are cut after that). */
static void drain_connections(struct http_server *s)
{
	for (int i = 0; i < 50; i++) {
		const union MHD_DaemonInfo *info = MHD_get_daemon_info(s->mhd, MHD_DAEMON_INFO_CURRENT_CONNECTIONS);
		if (!info || info->num_connections == 0)
			break;
		pause_driving(s);
	}
}

void http_server_stop(struct http_server *s)
{
	if (!s)
		return;
	http_server_quiesce(s); /* no new connections; the socket is ours */
	end_streams(s);
	drain_handlers(s);
	end_upgraded(s);
	drain_connections(s);
	end_upgraded(s); /* any switched while the last replies went out */
	MHD_stop_daemon(s->mhd);
	if (s->lsock != MHD_INVALID_SOCKET)
		close(s->lsock);
	stop_workers(s);
	if (s->watching) {
		atomic_store(&s->watch_stop, true);
		pthread_join(s->watcher, NULL);
		while (s->cuts) {
			struct cut *c = s->cuts;
			s->cuts = c->next;
			free(c);
		}
		close(s->watch_ep);
		close(s->watch_wake);
	}
	free(s->cert);
	free(s->key);
	free(s);
}
