/* The gateway's HTTP/1.1 client (h1.h): connections, their pools and the calls on them.
 *
 * A connection goes CONNECTING -> HANDSHAKE (TLS only) -> SEND -> RECV, then IDLE in its
 * endpoint's pool when the answer allows keep-alive (else it is closed), and from IDLE to SEND
 * for the next call. Each connection's socket stays in the epoll set (level-triggered) from
 * its connect to its close; the events asked for change only when the state needs it, so a
 * request on a kept connection costs no epoll_ctl. An event on an IDLE connection is the
 * partition closing it (or a TLS session ticket, read and kept): it is closed at once, so the
 * next call does not find it. Reading goes on until the socket would block: OpenSSL reads
 * ahead (one read takes a response's header and body records), and what it buffered would
 * raise no event.
 *
 * TLS: one context verifying peers against the CA file and the endpoint's host name or
 * address, as libcurl did; each pool keeps the last session the partition gave, so new
 * connections resume. Calls and their buffers are recycled (a free list) so a request on a kept
 * connection allocates only its response body and strings. */
#include <errno.h>
#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>
#include "h1.h"
#include "ursa/errors.h"
#include "ursa/log.h"
#include "ursa/strmap.h"
#include "ursa/timeutil.h"
#include "ursa/xalloc.h"

#define MAX_ADDRS 4          /* addresses of an endpoint given by name tried in turn */
#define INLINE_BODY (16 << 10) /* request bodies up to this go out in the head's write */
#define FREE_CALLS 256       /* recycled calls kept */
#define RBUF (64 << 10)

enum cstate { CS_CONNECTING, CS_HANDSHAKE, CS_SEND, CS_RECV, CS_IDLE };

struct pool {
	struct h1_endpoint ep;
	bool bad;                  /* the URL did not parse: every call fails (E_UNAVAILABLE) */
	bool resolved;
	struct sockaddr_storage addr[MAX_ADDRS];
	socklen_t alen[MAX_ADDRS];
	int naddr, good;           /* good: the address that last connected */
	bool ip_literal;
	SSL_SESSION *sess;         /* owned: the last session the endpoint sent */
	struct conn *idle;         /* most recently used first */
	size_t nidle;
};

struct conn {
	struct h1_client *c;
	int fd;
	SSL *ssl;
	struct pool *pool;
	enum cstate st;
	uint32_t events;           /* asked of epoll */
	struct h1_call *call;      /* busy states */
	struct conn *prev, *next;  /* the pool's idle list */
	bool used;                 /* has carried a whole exchange: a kept connection */
	int ai;                    /* the address it connects to */
};

struct h1_call {
	struct h1_client *c;
	struct pool *pool;
	struct conn *conn;
	const struct upstream_req *rq;
	struct buf out;            /* the request head (and a small body) */
	size_t off;
	const char *body;          /* a larger body, sent after out */
	size_t blen, boff;
	struct h1_parser ps;
	int64_t deadline_ms;       /* 0: none */
	int64_t connect_by_ms;     /* while connecting (0: connected or kept) */
	int addr_tries;
	int later_err;             /* ended during h1_client_send: reported by h1_client_timers */
	bool retried;
	h1_done_fn done;
	void *ud;
	struct h1_call *prev, *next; /* active list; next is also the free list's link */
};

struct h1_client {
	int ep;
	uint64_t tag;
	SSL_CTX *ctx;
	struct strmap pools;       /* base URL -> struct pool */
	struct conn **byfd;
	size_t nfd, nconns;
	struct h1_call *active, *free;
	size_t nfree;
	int64_t due;               /* -1: nothing to time */
	bool in_send;
	char rbuf[RBUF];
};

/* --- pools ---------------------------------------------------------------------------------- */
static struct pool *pool_get(struct h1_client *c, const char *base)
{
	struct strmap_ent *e = strmap_get(&c->pools, base);
	if (e)
		return e->val;
	struct pool *p = xcalloc(1, sizeof(*p));
	p->bad = h1_endpoint_parse(base, &p->ep) != 0;
	if (!p->bad) {
		unsigned char a[16];
		p->ip_literal = inet_pton(AF_INET, p->ep.host, a) == 1 || inet_pton(AF_INET6, p->ep.host, a) == 1;
	}
	strmap_put(&c->pools, base, NULL)->val = p;
	return p;
}

/* Looks the endpoint's host up (an address is instant; a name is looked up once, and again
 * after its connections fail). */
static bool pool_resolve(struct pool *p)
{
	if (p->resolved)
		return true;
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV };
	if (p->ip_literal)
		hints.ai_flags |= AI_NUMERICHOST;
	struct addrinfo *res = NULL;
	if (getaddrinfo(p->ep.host, p->ep.port, &hints, &res) != 0 || !res)
		return false;
	p->naddr = 0;
	for (struct addrinfo *a = res; a && p->naddr < MAX_ADDRS; a = a->ai_next) {
		if (a->ai_addrlen > sizeof(p->addr[0]))
			continue;
		memcpy(&p->addr[p->naddr], a->ai_addr, a->ai_addrlen);
		p->alen[p->naddr++] = a->ai_addrlen;
	}
	freeaddrinfo(res);
	p->good = 0;
	p->resolved = p->naddr > 0;
	return p->resolved;
}

/* --- connections ---------------------------------------------------------------------------- */
static void want(struct conn *k, uint32_t ev)
{
	if (k->events == ev)
		return;
	struct epoll_event e = { .events = ev, .data.u64 = k->c->tag + (uint64_t)k->fd };
	epoll_ctl(k->c->ep, k->events ? EPOLL_CTL_MOD : EPOLL_CTL_ADD, k->fd, &e);
	k->events = ev;
}

static void idle_unlink(struct conn *k)
{
	struct pool *p = k->pool;
	if (k->prev)
		k->prev->next = k->next;
	else
		p->idle = k->next;
	if (k->next)
		k->next->prev = k->prev;
	k->prev = k->next = NULL;
	p->nidle--;
}

static void conn_close(struct conn *k)
{
	if (!k)
		return;
	struct h1_client *c = k->c;
	if (k->st == CS_IDLE)
		idle_unlink(k);
	if (k->call)
		k->call->conn = NULL;
	/* No close_notify (the partition reads the close), but marked as shut down: OpenSSL would
	 * otherwise make the session the pool resumes with unresumable. */
	if (k->ssl)
		SSL_set_shutdown(k->ssl, SSL_SENT_SHUTDOWN | SSL_RECEIVED_SHUTDOWN);
	SSL_free(k->ssl);
	ERR_clear_error();
	c->byfd[k->fd] = NULL;
	close(k->fd); /* leaves the epoll set with it */
	c->nconns--;
	free(k);
}

static void conn_idle(struct conn *k)
{
	struct pool *p = k->pool;
	k->call = NULL;
	k->used = true;
	if (p->nidle >= H1_IDLE_MAX) {
		conn_close(k);
		return;
	}
	k->st = CS_IDLE;
	k->prev = NULL;
	k->next = p->idle;
	if (p->idle)
		p->idle->prev = k;
	p->idle = k;
	p->nidle++;
	want(k, EPOLLIN);
}

/* An IDLE connection is readable: a TLS session ticket (kept), or the partition closed it or
 * sent what nobody asked for (closed). False when it was closed. */
static bool idle_check(struct conn *k)
{
	char b[512];
	if (k->ssl) {
		int r = SSL_read(k->ssl, b, sizeof(b));
		if (r <= 0 && SSL_get_error(k->ssl, r) == SSL_ERROR_WANT_READ) {
			ERR_clear_error();
			return true;
		}
	} else {
		ssize_t r = recv(k->fd, b, sizeof(b), MSG_DONTWAIT);
		if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return true;
	}
	conn_close(k);
	return false;
}

/* Before a request that may not be sent twice goes on a kept connection: nothing is waiting on
 * it (an end the loop has not seen yet). */
static bool idle_alive(struct conn *k)
{
	char b;
	ssize_t r = recv(k->fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);
	if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
		return true;
	return idle_check(k);
}

static int on_new_session(SSL *ssl, SSL_SESSION *sess)
{
	struct conn *k = SSL_get_app_data(ssl);
	if (!k)
		return 0;
	if (k->pool->sess)
		SSL_SESSION_free(k->pool->sess);
	k->pool->sess = sess;
	return 1; /* the reference is the pool's */
}

/* --- calls ---------------------------------------------------------------------------------- */
static void active_unlink(struct h1_call *call)
{
	struct h1_client *c = call->c;
	if (call->prev)
		call->prev->next = call->next;
	else
		c->active = call->next;
	if (call->next)
		call->next->prev = call->prev;
	call->prev = call->next = NULL;
}

static void call_put(struct h1_call *call)
{
	struct h1_client *c = call->c;
	if (c->nfree >= FREE_CALLS) {
		h1_parser_release(&call->ps);
		buf_release(&call->out);
		free(call);
		return;
	}
	call->next = c->free;
	c->free = call;
	c->nfree++;
}

static void timer_at(struct h1_client *c, int64_t t)
{
	if (t > 0 && (c->due < 0 || t < c->due))
		c->due = t;
}

/* Closes the connection call is on, if any. */
static void call_drop_conn(struct h1_call *call)
{
	struct conn *k = call->conn;
	if (!k)
		return;
	call->conn = NULL;
	k->call = NULL;
	conn_close(k);
}

/* Ends call (a connection it still holds is closed): err, or the response it read. */
static void finish(struct h1_call *call, int err)
{
	struct h1_client *c = call->c;
	call_drop_conn(call);
	if (c->in_send) {
		/* Never from inside h1_client_send: the caller is not ready for its callback. */
		call->later_err = err;
		c->due = 0;
		return;
	}
	active_unlink(call);
	struct upstream_resp resp = { 0 };
	if (!err) {
		resp = call->ps.resp;
		memset(&call->ps.resp, 0, sizeof(call->ps.resp));
	}
	h1_done_fn done = call->done;
	void *ud = call->ud;
	call_put(call);
	done(ud, err, &resp);
	upstream_resp_release(&resp);
}

static void conn_step(struct conn *k, uint32_t events);

/* Opens a connection for call to its pool's address ai. */
static void conn_open(struct h1_call *call, int ai)
{
	struct h1_client *c = call->c;
	struct pool *p = call->pool;
	const struct sockaddr *sa = (const struct sockaddr *)&p->addr[ai];
	int fd = socket(sa->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		finish(call, E_UNAVAILABLE);
		return;
	}
	int one = 1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
	if ((size_t)fd >= c->nfd) {
		size_t n = c->nfd ? c->nfd : 256;
		while (n <= (size_t)fd)
			n *= 2;
		c->byfd = xrealloc(c->byfd, n * sizeof(*c->byfd));
		memset(c->byfd + c->nfd, 0, (n - c->nfd) * sizeof(*c->byfd));
		c->nfd = n;
	}
	struct conn *k = xcalloc(1, sizeof(*k));
	k->c = c;
	k->fd = fd;
	k->pool = p;
	k->ai = ai;
	k->call = call;
	k->st = CS_CONNECTING;
	call->conn = k;
	c->byfd[fd] = k;
	c->nconns++;
	upstream_connection_opened();
	call->addr_tries++;
	if (connect(fd, sa, p->alen[ai]) == 0) {
		want(k, EPOLLOUT);
		conn_step(k, EPOLLOUT);
		return;
	}
	if (errno == EINPROGRESS) {
		want(k, EPOLLOUT);
		return;
	}
	conn_step(k, EPOLLERR);
}

/* Starts call on a new connection (nothing of it sent yet). */
static void call_connect(struct h1_call *call)
{
	struct pool *p = call->pool;
	if (p->bad || !pool_resolve(p)) {
		finish(call, E_UNAVAILABLE);
		return;
	}
	call->connect_by_ms = mono_ms() + H1_CONNECT_MS;
	timer_at(call->c, call->connect_by_ms);
	call->addr_tries = 0;
	conn_open(call, p->good % p->naddr);
}

/* No connection could be made through k (refused, TLS failed): the next address, or E_UNAVAILABLE. */
static void connect_failed(struct conn *k)
{
	struct h1_call *call = k->call;
	struct pool *p = k->pool;
	int ai = k->ai;
	conn_close(k);
	if (call->addr_tries < p->naddr) {
		conn_open(call, (ai + 1) % p->naddr);
		return;
	}
	p->resolved = false; /* a name is looked up again next time */
	finish(call, E_UNAVAILABLE);
}

/* k broke while carrying its call (sent, or partly). A kept connection that ended before any
 * byte of the answer most likely closed idle under us: a GET or HEAD goes once more on a new
 * connection; anything else may have been received, so its outcome is unknown. */
static void conn_broke(struct conn *k)
{
	struct h1_call *call = k->call;
	bool nothing = call->ps.fed == 0, kept = k->used;
	conn_close(k);
	if (nothing && kept && !call->retried && h1_method_retryable(call->rq->method)) {
		call->retried = true;
		call->off = call->boff = 0;
		h1_parser_reset(&call->ps, call->ps.head);
		call_connect(call);
		return;
	}
	finish(call, E_TIMEOUT);
}

enum { IO_OK, IO_WANT_READ, IO_WANT_WRITE, IO_EOF, IO_ERR };

static int io_ssl_err(struct conn *k, int r)
{
	int e = SSL_get_error(k->ssl, r);
	ERR_clear_error();
	switch (e) {
	case SSL_ERROR_WANT_READ:
		return IO_WANT_READ;
	case SSL_ERROR_WANT_WRITE:
		return IO_WANT_WRITE;
	case SSL_ERROR_ZERO_RETURN:
		return IO_EOF;
	default:
		return IO_ERR;
	}
}

static int io_write(struct conn *k, const char *p, size_t n, size_t *ret_w)
{
	if (k->ssl) {
		int r = SSL_write(k->ssl, p, n > INT32_MAX ? INT32_MAX : (int)n);
		if (r > 0) {
			*ret_w = (size_t)r;
			return IO_OK;
		}
		return io_ssl_err(k, r);
	}
	for (;;) {
		ssize_t r = send(k->fd, p, n, MSG_NOSIGNAL);
		if (r >= 0) {
			*ret_w = (size_t)r;
			return IO_OK;
		}
		if (errno == EINTR)
			continue;
		return errno == EAGAIN || errno == EWOULDBLOCK ? IO_WANT_WRITE : IO_ERR;
	}
}

static int io_read(struct conn *k, char *b, size_t n, size_t *ret_r)
{
	if (k->ssl) {
		int r = SSL_read(k->ssl, b, (int)n);
		if (r > 0) {
			*ret_r = (size_t)r;
			return IO_OK;
		}
		return io_ssl_err(k, r);
	}
	for (;;) {
		ssize_t r = recv(k->fd, b, n, 0);
		if (r > 0) {
			*ret_r = (size_t)r;
			return IO_OK;
		}
		if (r == 0)
			return IO_EOF;
		if (errno == EINTR)
			continue;
		return errno == EAGAIN || errno == EWOULDBLOCK ? IO_WANT_READ : IO_ERR;
	}
}

static bool tls_start(struct conn *k)
{
	struct pool *p = k->pool;
	k->ssl = SSL_new(k->c->ctx);
	if (!k->ssl)
		return false;
	SSL_set_fd(k->ssl, k->fd);
	SSL_set_connect_state(k->ssl);
	SSL_set_app_data(k->ssl, k);
	if (p->ip_literal) {
		if (X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(k->ssl), p->ep.host) != 1)
			return false;
	} else if (SSL_set1_host(k->ssl, p->ep.host) != 1 || SSL_set_tlsext_host_name(k->ssl, p->ep.host) != 1) {
		return false;
	}
	if (p->sess)
		SSL_set_session(k->ssl, p->sess);
	return true;
}

/* The request's bytes: 1 all sent, 0 waiting for the socket, -1 broken. */
static int send_more(struct conn *k)
{
	struct h1_call *call = k->call;
	for (;;) {
		const char *b;
		size_t n, w = 0;
		bool head = call->off < call->out.len;
		if (head) {
			b = call->out.ptr + call->off;
			n = call->out.len - call->off;
		} else if (call->boff < call->blen) {
			b = call->body + call->boff;
			n = call->blen - call->boff;
		} else {
			return 1;
		}
		switch (io_write(k, b, n, &w)) {
		case IO_OK:
			if (head)
				call->off += w;
			else
				call->boff += w;
			break;
		case IO_WANT_READ:
			want(k, EPOLLIN);
			return 0;
		case IO_WANT_WRITE:
			want(k, EPOLLOUT);
			return 0;
		default:
			return -1;
		}
	}
}

/* Reads what the socket has into the call's parser; ends the call when the answer is whole or
 * the connection broke. */
static void recv_more(struct conn *k)
{
	struct h1_call *call = k->call;
	struct h1_client *c = k->c;
	for (;;) {
		size_t n = 0, used = 0;
		int r = io_read(k, c->rbuf, sizeof(c->rbuf), &n);
		if (r == IO_WANT_READ) {
			want(k, EPOLLIN);
			return;
		}
		if (r == IO_WANT_WRITE) {
			want(k, EPOLLOUT);
			return;
		}
		if (r == IO_ERR) {
			if (call->ps.fed == 0)
				conn_broke(k);
			else
				finish(call, E_TIMEOUT);
			return;
		}
		enum h1_parse_result pr = h1_parser_feed(&call->ps, c->rbuf, r == IO_OK ? n : 0, &used);
		if (pr == H1_MORE)
			continue;
		if (pr == H1_DONE) {
			bool reuse = call->ps.keep_alive && r == IO_OK && used == n &&
				     (!k->ssl || SSL_pending(k->ssl) == 0);
			call->conn = NULL;
			if (reuse)
				conn_idle(k);
			else
				conn_close(k);
			finish(call, 0);
			return;
		}
		if (r != IO_OK && call->ps.fed == 0) {
			conn_broke(k); /* closed before any byte of the answer */
			return;
		}
		finish(call, E_TIMEOUT); /* malformed, cut short, or over the size cap */
		return;
	}
}

/* Drives a busy connection as far as it goes without waiting. */
static void conn_step(struct conn *k, uint32_t events)
{
	for (;;) {
		switch (k->st) {
		case CS_CONNECTING: {
			int err = 0;
			socklen_t len = sizeof(err);
			if (!(events & (EPOLLOUT | EPOLLERR | EPOLLHUP)))
				return;
			if (getsockopt(k->fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0 || err || (events & EPOLLERR)) {
				connect_failed(k);
				return;
			}
			k->pool->good = k->ai;
			k->st = k->pool->ep.tls ? CS_HANDSHAKE : CS_SEND;
			if (!k->pool->ep.tls)
				k->call->connect_by_ms = 0;
			break;
		}
		case CS_HANDSHAKE: {
			if (!k->ssl && !tls_start(k)) {
				connect_failed(k);
				return;
			}
			int r = SSL_connect(k->ssl);
			if (r == 1) {
				k->call->connect_by_ms = 0;
				k->st = CS_SEND;
				break;
			}
			switch (io_ssl_err(k, r)) {
			case IO_WANT_READ:
				want(k, EPOLLIN);
				return;
			case IO_WANT_WRITE:
				want(k, EPOLLOUT);
				return;
			default:
				connect_failed(k); /* refused at the TLS level: nothing was sent */
				return;
			}
		}
		case CS_SEND: {
			int r = send_more(k);
			if (r < 0) {
				conn_broke(k);
				return;
			}
			if (r == 0)
				return;
			k->st = CS_RECV;
			want(k, EPOLLIN);
			return; /* the answer cannot be there yet */
		}
		case CS_RECV:
			recv_more(k);
			return;
		case CS_IDLE:
			idle_check(k);
			return;
		}
	}
}

/* --- the client ----------------------------------------------------------------------------- */
struct h1_client *h1_client_new(int ep, uint64_t tag, const char *ca_file)
{
	SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
	if (!ctx)
		return NULL;
	SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
	SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
	int loaded = ca_file ? SSL_CTX_load_verify_locations(ctx, ca_file, NULL)
			     : SSL_CTX_set_default_verify_paths(ctx);
	if (loaded != 1) /* every TLS handshake then fails: the partitions are unavailable */
		log_warn("cannot load partition CA", "file=\"%s\"", ca_file ? ca_file : "(system)");
	ERR_clear_error();
	/* Buffers only while a connection carries a request (an idle one holds none). */
	SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER |
				      SSL_MODE_RELEASE_BUFFERS);
	/* Read ahead into a buffer of several records: a LIST's body comes in a few reads. */
	SSL_CTX_set_read_ahead(ctx, 1);
	SSL_CTX_set_default_read_buffer_len(ctx, RBUF);
#ifdef SSL_OP_IGNORE_UNEXPECTED_EOF
	SSL_CTX_set_options(ctx, SSL_OP_IGNORE_UNEXPECTED_EOF); /* a close without close_notify is an end */
#endif
	SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_CLIENT | SSL_SESS_CACHE_NO_INTERNAL_STORE);
	SSL_CTX_sess_set_new_cb(ctx, on_new_session);
	struct h1_client *c = xcalloc(1, sizeof(*c));
	c->ep = ep;
	c->tag = tag;
	c->ctx = ctx;
	c->due = -1;
	strmap_init(&c->pools);
	return c;
}

static void pool_free(void *v)
{
	struct pool *p = v;
	while (p->idle)
		conn_close(p->idle);
	if (p->sess)
		SSL_SESSION_free(p->sess);
	h1_endpoint_release(&p->ep);
	free(p);
}

void h1_client_free(struct h1_client *c)
{
	if (!c)
		return;
	while (c->active) {
		struct h1_call *call = c->active;
		active_unlink(call);
		call_drop_conn(call);
		h1_parser_release(&call->ps);
		buf_release(&call->out);
		free(call);
	}
	while (c->free) {
		struct h1_call *call = c->free;
		c->free = call->next;
		h1_parser_release(&call->ps);
		buf_release(&call->out);
		free(call);
	}
	strmap_release(&c->pools, pool_free);
	free(c->byfd);
	SSL_CTX_free(c->ctx);
	free(c);
}

struct h1_call *h1_client_send(struct h1_client *c, const char *base, const struct upstream_req *rq,
			       int64_t deadline_ms, h1_done_fn done, void *ud)
{
	struct h1_call *call = c->free;
	bool head = strcmp(rq->method, "HEAD") == 0;
	if (call) {
		c->free = call->next;
		c->nfree--;
		h1_parser_reset(&call->ps, head);
		buf_reset(&call->out);
	} else {
		call = xcalloc(1, sizeof(*call));
		h1_parser_init(&call->ps, head);
	}
	call->c = c;
	call->pool = pool_get(c, base);
	call->conn = NULL;
	call->rq = rq;
	call->off = call->boff = 0;
	call->body = rq->body;
	call->blen = rq->body ? rq->len : 0;
	call->deadline_ms = deadline_ms;
	call->connect_by_ms = 0;
	call->later_err = 0;
	call->retried = false;
	call->done = done;
	call->ud = ud;
	call->prev = NULL;
	call->next = c->active;
	if (c->active)
		c->active->prev = call;
	c->active = call;
	timer_at(c, deadline_ms);
	c->in_send = true;
	if (!call->pool->bad) {
		h1_request_head(&call->pool->ep, rq, &call->out);
		if (h1_method_retryable(rq->method)) {
			call->blen = 0; /* GET and HEAD carry no body (and no Content-Length) */
		} else if (call->blen <= INLINE_BODY) {
			buf_add(&call->out, call->body ? call->body : "", call->blen);
			call->blen = 0;
		}
	}
	/* A kept connection, most recently used first; one that must not carry a request twice is
	 * checked first. */
	struct pool *p = call->pool;
	bool once = !h1_method_retryable(rq->method);
	struct conn *k;
	while ((k = p->idle) && once && !idle_alive(k))
		;
	if (k) {
		idle_unlink(k);
		k->st = CS_SEND;
		k->call = call;
		call->conn = k;
		conn_step(k, EPOLLOUT);
	} else {
		call_connect(call);
	}
	c->in_send = false;
	return call;
}

void h1_call_cancel(struct h1_call *call)
{
	call_drop_conn(call);
	active_unlink(call);
	call_put(call);
}

void h1_client_event(struct h1_client *c, int fd, uint32_t events)
{
	struct conn *k = (size_t)fd < c->nfd ? c->byfd[fd] : NULL;
	if (k)
		conn_step(k, events);
}

int64_t h1_client_due(const struct h1_client *c)
{
	return c->due;
}

void h1_client_timers(struct h1_client *c, int64_t now)
{
	if (c->due < 0 || now < c->due)
		return;
	/* Collected first: a callback may start calls (they keep their own timers). */
	struct h1_call *ended = NULL;
	int64_t next = -1;
	for (struct h1_call *call = c->active, *nx; call; call = nx) {
		nx = call->next;
		int err = call->later_err;
		if (!err && call->connect_by_ms && now >= call->connect_by_ms)
			err = E_UNAVAILABLE;
		if (!err && call->deadline_ms && now >= call->deadline_ms)
			err = E_TIMEOUT;
		if (!err) {
			int64_t t = call->deadline_ms;
			if (call->connect_by_ms && (!t || call->connect_by_ms < t))
				t = call->connect_by_ms;
			if (t > 0 && (next < 0 || t < next))
				next = t;
			continue;
		}
		active_unlink(call);
		call->later_err = err;
		call->next = ended;
		ended = call;
	}
	c->due = next;
	while (ended) {
		struct h1_call *call = ended;
		ended = call->next;
		call->next = c->active; /* finish unlinks it again */
		call->prev = NULL;
		if (c->active)
			c->active->prev = call;
		c->active = call;
		finish(call, call->later_err);
	}
}

size_t h1_client_connections(const struct h1_client *c)
{
	return c->nconns;
}
