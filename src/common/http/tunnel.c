/* Upgrade tunnels (ursa/tunnel.h): dialing the next hop (blocking, on a worker), and the pump
 * (one libuv loop thread per process, started with the first tunnel). */
#include "ursa/tunnel.h"
#include "ursa/errors.h"
#include "ursa/http.h"
#include "ursa/log.h"
#include "ursa/timeutil.h"
#include "ursa/xalloc.h"
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>
#include <uv.h>

#define PUMP_BUF (16 * 1024)   /* per direction */
#define LINGER_MS 2000         /* flushing toward the remaining side after one ended */
#define BODY_MAX (1u << 20)

/* --- the response head (pure) ------------------------------------------------------------- */

static bool is_tchar(char c)
{
	if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'))
		return true;
	return c && strchr("!#$%&'*+-.^_`|~", c);
}

/* The end of the line starting at p (its '\n'), or NULL. */
static const char *line_end(const char *p, const char *end)
{
	const char *nl = memchr(p, '\n', (size_t)(end - p));
	return nl;
}

int tunnel_head_parse(const char *data, size_t len, struct tunnel_head *ret)
{
	memset(ret, 0, sizeof(*ret));
	ret->content_length = -1;
	const char *end = data + (len > TUNNEL_HEAD_MAX ? TUNNEL_HEAD_MAX : len);
	const char *nl = line_end(data, end);
	if (!nl)
		return len >= TUNNEL_HEAD_MAX ? -1 : 0;
	/* status line: HTTP/1.x SP 3DIGIT [SP reason] */
	size_t sl = (size_t)(nl - data);
	if (sl && data[sl - 1] == '\r')
		sl--;
	if (sl < 12 || memcmp(data, "HTTP/1.", 7) != 0 || (data[7] != '0' && data[7] != '1') || data[8] != ' ')
		return -1;
	for (int i = 9; i < 12; i++)
		if (data[i] < '0' || data[i] > '9')
			return -1;
	if (sl > 12 && data[12] != ' ')
		return -1;
	ret->status = (data[9] - '0') * 100 + (data[10] - '0') * 10 + (data[11] - '0');
	if (ret->status < 100)
		return -1;
	const char *p = nl + 1;
	for (;;) {
		nl = line_end(p, end);
		if (!nl)
			return len >= TUNNEL_HEAD_MAX ? -1 : 0;
		size_t ll = (size_t)(nl - p);
		if (ll && p[ll - 1] == '\r')
			ll--;
		if (ll == 0) {
			ret->head_len = (size_t)(nl + 1 - data);
			return 1;
		}
		const char *colon = memchr(p, ':', ll);
		if (!colon || colon == p || ret->nfields == TUNNEL_HEAD_FIELDS)
			return -1;
		for (const char *q = p; q < colon; q++)
			if (!is_tchar(*q))
				return -1;
		const char *v = colon + 1, *ve = p + ll;
		while (v < ve && (*v == ' ' || *v == '\t'))
			v++;
		while (ve > v && (ve[-1] == ' ' || ve[-1] == '\t'))
			ve--;
		for (const char *q = v; q < ve; q++)
			if ((unsigned char)*q < 0x20 && *q != '\t')
				return -1;
		size_t i = ret->nfields++;
		ret->f[i].name = p;
		ret->f[i].name_len = (size_t)(colon - p);
		ret->f[i].value = v;
		ret->f[i].value_len = (size_t)(ve - v);
		if (ret->f[i].name_len == 14 && strncasecmp(p, "Content-Length", 14) == 0) {
			long long n = 0;
			if (v == ve || ve - v > 15)
				return -1;
			for (const char *q = v; q < ve; q++) {
				if (*q < '0' || *q > '9')
					return -1;
				n = n * 10 + (*q - '0');
			}
			if (ret->content_length >= 0 && ret->content_length != n)
				return -1;
			ret->content_length = n;
		} else if (ret->f[i].name_len == 17 && strncasecmp(p, "Transfer-Encoding", 17) == 0) {
			ret->chunked = ve - v >= 7 && strncasecmp(ve - 7, "chunked", 7) == 0;
		}
		p = nl + 1;
	}
}

const char *tunnel_head_get(const struct tunnel_head *h, const char *name, size_t i, size_t *ret_len)
{
	size_t nl = strlen(name);
	for (size_t k = 0; k < h->nfields; k++) {
		if (h->f[k].name_len != nl || strncasecmp(h->f[k].name, name, nl) != 0)
			continue;
		if (i-- == 0) {
			if (ret_len)
				*ret_len = h->f[k].value_len;
			return h->f[k].value;
		}
	}
	return NULL;
}

ssize_t tunnel_dechunk(char *data, size_t len)
{
	size_t in = 0, out = 0;
	for (;;) {
		size_t n = 0;
		int digits = 0;
		while (in < len) {
			char c = data[in];
			int d = hex_digit(c);
			if (d < 0)
				break;
			if (++digits > 8)
				return -1;
			n = n * 16 + (size_t)d;
			in++;
		}
		if (!digits)
			return -1;
		while (in < len && data[in] != '\n') /* chunk extensions, CR */
			in++;
		if (in == len)
			return -1;
		in++;
		if (n == 0)
			return (ssize_t)out; /* trailers ignored */
		if (len - in < n + 1)
			return -1;
		memmove(data + out, data + in, n);
		out += n;
		in += n;
		if (data[in] == '\r')
			in++;
		if (in >= len || data[in] != '\n')
			return -1;
		in++;
	}
}

/* --- dialing ------------------------------------------------------------------------------ */

struct dial {
	int fd;
	SSL *ssl;          /* NULL for http:// */
	int64_t deadline;  /* mono ms */
};

static pthread_mutex_t ctx_lock = PTHREAD_MUTEX_INITIALIZER;
static struct ctx_ent {
	char *ca; /* "" for none */
	SSL_CTX *ctx;
} ctxs[8];

/* A client context per CA file, made once (loading a bundle per call costs). */
static SSL_CTX *client_ctx(const char *ca)
{
	const char *key = ca ? ca : "";
	pthread_mutex_lock(&ctx_lock);
	SSL_CTX *ctx = NULL;
	size_t i;
	for (i = 0; i < sizeof(ctxs) / sizeof(ctxs[0]) && ctxs[i].ca; i++)
		if (strcmp(ctxs[i].ca, key) == 0) {
			ctx = ctxs[i].ctx;
			break;
		}
	if (!ctx) {
		ctx = SSL_CTX_new(TLS_client_method());
		SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER |
					      SSL_MODE_RELEASE_BUFFERS);
		if (ca) {
			if (SSL_CTX_load_verify_locations(ctx, ca, NULL) != 1) {
				SSL_CTX_free(ctx);
				ctx = NULL;
			} else {
				SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
			}
		}
		if (ctx && i < sizeof(ctxs) / sizeof(ctxs[0])) {
			ctxs[i].ca = xstrdup(key);
			ctxs[i].ctx = ctx;
		} else if (ctx) {
			SSL_CTX_up_ref(ctx); /* table full: the caller's ref is freed with the SSL */
		}
	}
	pthread_mutex_unlock(&ctx_lock);
	return ctx;
}

/* "https://host:port" -> host, port, tls. -1 if not such a URL. */
static int parse_base(const char *base, char *host, size_t hostsz, char *port, size_t portsz, bool *ret_tls)
{
	const char *p;
	if (strncmp(base, "https://", 8) == 0)
		p = base + 8, *ret_tls = true;
	else if (strncmp(base, "http://", 7) == 0)
		p = base + 7, *ret_tls = false;
	else
		return -1;
	const char *end = p + strcspn(p, "/");
	const char *colon = NULL;
	for (const char *q = p; q < end; q++)
		if (*q == ':')
			colon = q;
	size_t hl = (size_t)((colon ? colon : end) - p);
	if (hl == 0 || hl >= hostsz)
		return -1;
	memcpy(host, p, hl);
	host[hl] = '\0';
	size_t pl = colon ? (size_t)(end - colon - 1) : 0;
	if (pl >= portsz)
		return -1;
	if (colon) {
		memcpy(port, colon + 1, pl);
		port[pl] = '\0';
	} else {
		snprintf(port, portsz, "%s", *ret_tls ? "443" : "80");
	}
	return 0;
}

static int wait_fd(int fd, short ev, int64_t deadline)
{
	int64_t left = deadline - mono_ms();
	if (left <= 0)
		return -1;
	struct pollfd pfd = { .fd = fd, .events = ev };
	int r = poll(&pfd, 1, (int)left);
	return r > 0 ? 0 : -1;
}

/* Connects (non-blocking socket, waits up to the deadline). 0, E_UNAVAILABLE or E_TIMEOUT. */
static int dial_tcp(struct dial *d, const char *host, const char *port)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM }, *ai = NULL;
	if (getaddrinfo(host, port, &hints, &ai) != 0 || !ai)
		return E_UNAVAILABLE;
	int err = E_UNAVAILABLE;
	for (struct addrinfo *a = ai; a; a = a->ai_next) {
		int fd = socket(a->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		if (fd < 0)
			continue;
		int one = 1;
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		if (connect(fd, a->ai_addr, a->ai_addrlen) == 0) {
			d->fd = fd;
			err = 0;
			break;
		}
		if (errno == EINPROGRESS) {
			if (wait_fd(fd, POLLOUT, d->deadline) < 0) {
				close(fd);
				err = E_TIMEOUT;
				continue;
			}
			int soerr = 0;
			socklen_t sl = sizeof(soerr);
			getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl);
			if (soerr == 0) {
				d->fd = fd;
				err = 0;
				break;
			}
		}
		close(fd);
	}
	freeaddrinfo(ai);
	return err;
}

/* Waits for what the last SSL call wanted. -1 on a hard error or the deadline. */
static int ssl_wait(struct dial *d, int r)
{
	int e = SSL_get_error(d->ssl, r);
	if (e == SSL_ERROR_WANT_READ)
		return wait_fd(d->fd, POLLIN, d->deadline);
	if (e == SSL_ERROR_WANT_WRITE)
		return wait_fd(d->fd, POLLOUT, d->deadline);
	return -1;
}

static int dial_tls(struct dial *d, const char *host, const char *ca)
{
	SSL_CTX *ctx = client_ctx(ca);
	if (!ctx)
		return E_UNAVAILABLE;
	d->ssl = SSL_new(ctx);
	SSL_set_fd(d->ssl, d->fd);
	struct in6_addr a6;
	struct in_addr a4;
	bool ip = inet_pton(AF_INET, host, &a4) == 1 || inet_pton(AF_INET6, host, &a6) == 1;
	if (ca) {
		X509_VERIFY_PARAM *vp = SSL_get0_param(d->ssl);
		if (ip)
			X509_VERIFY_PARAM_set1_ip_asc(vp, host);
		else
			X509_VERIFY_PARAM_set1_host(vp, host, 0);
	}
	if (!ip)
		SSL_set_tlsext_host_name(d->ssl, host);
	for (;;) {
		int r = SSL_connect(d->ssl);
		if (r == 1)
			return 0;
		if (ssl_wait(d, r) < 0) {
			long v = SSL_get_verify_result(d->ssl);
			if (v != X509_V_OK)
				log_warn("tunnel: next hop certificate not trusted", "host=\"%s\" reason=\"%s\"", host,
					 X509_verify_cert_error_string(v));
			ERR_clear_error();
			return mono_ms() >= d->deadline ? E_TIMEOUT : E_UNAVAILABLE;
		}
	}
}

static int dial_write(struct dial *d, const char *p, size_t n)
{
	while (n) {
		ssize_t w;
		if (d->ssl) {
			int r = SSL_write(d->ssl, p, (int)n);
			if (r <= 0) {
				if (ssl_wait(d, r) < 0)
					return -1;
				continue;
			}
			w = r;
		} else {
			w = send(d->fd, p, n, MSG_NOSIGNAL);
			if (w < 0) {
				if ((errno != EAGAIN && errno != EINTR) || wait_fd(d->fd, POLLOUT, d->deadline) < 0)
					return -1;
				continue;
			}
		}
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/* Reads some bytes into b (at most max): count, 0 at the end, -1 on error or the deadline. */
static ssize_t dial_read(struct dial *d, struct buf *b, size_t max)
{
	buf_grow(b, max);
	for (;;) {
		if (d->ssl) {
			int r = SSL_read(d->ssl, b->ptr + b->len, (int)max);
			if (r > 0) {
				b->len += (size_t)r;
				return r;
			}
			int e = SSL_get_error(d->ssl, r);
			if (e == SSL_ERROR_ZERO_RETURN || (e == SSL_ERROR_SYSCALL && ERR_peek_error() == 0))
				return 0;
			if (ssl_wait(d, r) < 0)
				return -1;
		} else {
			ssize_t r = recv(d->fd, b->ptr + b->len, max, 0);
			if (r >= 0) {
				b->len += (size_t)r;
				return r;
			}
			if ((errno != EAGAIN && errno != EINTR) || wait_fd(d->fd, POLLIN, d->deadline) < 0)
				return -1;
		}
	}
}

static void dial_close(struct dial *d)
{
	if (d->ssl)
		SSL_free(d->ssl);
	if (d->fd >= 0)
		close(d->fd);
	d->ssl = NULL;
	d->fd = -1;
}

/* --- the pump (loop thread) ---------------------------------------------------------------- */

struct tunnel {
	struct tunnel *next_new;  /* handover queue */
	/* client side: the switched connection */
	struct http_upgraded *u;
	int cfd;
	uv_poll_t cpoll;
	bool c_eof;
	/* upstream: the next hop */
	struct dial up;
	uv_poll_t upoll;
	bool u_eof;
	int u_want;               /* UV_READABLE|UV_WRITABLE the TLS layer asked for */
	uv_timer_t linger;
	bool lingering, closing;
	int handles;              /* open uv handles, for the last close callback */
	/* client -> upstream, upstream -> client */
	char *c2u;
	size_t c2u_len, c2u_cap;
	char *u2c;
	size_t u2c_len;
};

static pthread_once_t loop_once = PTHREAD_ONCE_INIT;
static uv_loop_t loop;
static uv_async_t loop_wake;
static pthread_mutex_t new_lock = PTHREAD_MUTEX_INITIALIZER;
static struct tunnel *new_head;
static atomic_long open_count;

long tunnel_open_count(void)
{
	return atomic_load(&open_count);
}

static void tunnel_free(struct tunnel *t)
{
	dial_close(&t->up);
	if (t->u)
		http_upgraded_close(t->u);
	free(t->c2u);
	free(t->u2c);
	free(t);
}

static void on_handle_closed(uv_handle_t *h)
{
	struct tunnel *t = h->data;
	if (--t->handles > 0)
		return;
	if (t->up.ssl)
		SSL_shutdown(t->up.ssl); /* best effort (non-blocking) close_notify */
	tunnel_free(t);
	atomic_fetch_sub(&open_count, 1);
}

static void tunnel_end(struct tunnel *t)
{
	if (t->closing)
		return;
	t->closing = true;
	uv_close((uv_handle_t *)&t->cpoll, on_handle_closed);
	uv_close((uv_handle_t *)&t->upoll, on_handle_closed);
	uv_close((uv_handle_t *)&t->linger, on_handle_closed);
}

static void on_linger(uv_timer_t *tm)
{
	tunnel_end(tm->data);
}

/* One side ended: flush toward the other for a while, then end. */
static void start_linger(struct tunnel *t)
{
	if (t->lingering)
		return;
	t->lingering = true;
	uv_timer_start(&t->linger, on_linger, LINGER_MS, 0);
}

static void on_poll(uv_poll_t *p, int status, int events);

/* One read or write on the upstream connection (TLS or plain): bytes moved, 0 when it would
 * block (what it waits for added to *want as UV_READABLE/UV_WRITABLE), -1 at its end or on an
 * error. */
static ssize_t up_io(struct tunnel *t, bool write, void *buf, size_t len, int *want)
{
	if (t->up.ssl) {
		ERR_clear_error();
		int n = write ? SSL_write(t->up.ssl, buf, (int)len) : SSL_read(t->up.ssl, buf, (int)len);
		if (n > 0)
			return n;
		int e = SSL_get_error(t->up.ssl, n);
		if (e == SSL_ERROR_WANT_READ)
			*want |= UV_READABLE;
		else if (e == SSL_ERROR_WANT_WRITE)
			*want |= UV_WRITABLE;
		else
			return -1;
		return 0;
	}
	ssize_t n = write ? send(t->up.fd, buf, len, MSG_NOSIGNAL) : recv(t->up.fd, buf, len, 0);
	if (n > 0)
		return n;
	if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
		*want |= write ? UV_WRITABLE : UV_READABLE;
		return 0;
	}
	return -1; /* recv's 0: the end */
}

/* Does all the I/O that can be done now, then polls for what is wanted next. */
static void pump(struct tunnel *t)
{
	bool progress = true;
	t->u_want = 0;
	while (progress && !t->closing) {
		progress = false;
		int want = 0;
		/* client -> buffer */
		if (!t->c_eof && t->c2u_len < t->c2u_cap) {
			ssize_t r = recv(t->cfd, t->c2u + t->c2u_len, t->c2u_cap - t->c2u_len, 0);
			if (r > 0)
				t->c2u_len += (size_t)r, progress = true;
			else if (r == 0 || (errno != EAGAIN && errno != EINTR))
				t->c_eof = true, progress = true;
		}
		/* buffer -> upstream */
		if (t->c2u_len && !t->u_eof) {
			ssize_t w = up_io(t, true, t->c2u, t->c2u_len, &want);
			if (w > 0) {
				memmove(t->c2u, t->c2u + w, t->c2u_len - (size_t)w);
				t->c2u_len -= (size_t)w;
				progress = true;
			} else if (w < 0) {
				t->u_eof = true, progress = true;
			}
		}
		/* upstream -> buffer */
		if (!t->u_eof && t->u2c_len < PUMP_BUF) {
			ssize_t r = up_io(t, false, t->u2c + t->u2c_len, PUMP_BUF - t->u2c_len, &want);
			if (r > 0)
				t->u2c_len += (size_t)r, progress = true;
			else if (r < 0)
				t->u_eof = true, progress = true;
		}
		/* buffer -> client */
		if (t->u2c_len && !t->c_eof) {
			ssize_t w = send(t->cfd, t->u2c, t->u2c_len, MSG_NOSIGNAL);
			if (w > 0) {
				memmove(t->u2c, t->u2c + w, t->u2c_len - (size_t)w);
				t->u2c_len -= (size_t)w;
				progress = true;
			} else if (w < 0 && errno != EAGAIN && errno != EINTR) {
				t->c_eof = true, progress = true;
			}
		}
		t->u_want = want;
	}
	if (t->closing)
		return;
	/* the end: one side gone and nothing left for the other (or it is gone too) */
	bool c_done = t->c_eof && (t->c2u_len == 0 || t->u_eof);
	bool u_done = t->u_eof && (t->u2c_len == 0 || t->c_eof);
	if (c_done || u_done) {
		tunnel_end(t);
		return;
	}
	if (t->c_eof || t->u_eof)
		start_linger(t);
	int cev = 0;
	if (!t->c_eof && t->c2u_len < t->c2u_cap)
		cev |= UV_READABLE;
	if (t->u2c_len && !t->c_eof)
		cev |= UV_WRITABLE;
	int uev = t->u_want;
	if (!t->up.ssl) {
		uev = 0;
		if (!t->u_eof && t->u2c_len < PUMP_BUF)
			uev |= UV_READABLE;
		if (t->c2u_len && !t->u_eof)
			uev |= UV_WRITABLE;
	}
	if (cev)
		uv_poll_start(&t->cpoll, cev, on_poll);
	else
		uv_poll_stop(&t->cpoll);
	if (uev)
		uv_poll_start(&t->upoll, uev, on_poll);
	else
		uv_poll_stop(&t->upoll);
}

static void on_poll(uv_poll_t *p, int status, int events)
{
	struct tunnel *t = p->data;
	if (status < 0) {
		if (p == &t->cpoll)
			t->c_eof = true;
		else
			t->u_eof = true;
	}
	pump(t);
}

/* The SSL layer may hold decrypted bytes the socket no longer signals: pump() reads until
 * WANT_READ, so every wanted event is real. */
static void tunnel_start(struct tunnel *t)
{
	atomic_fetch_add(&open_count, 1);
	t->handles = 3;
	uv_poll_init(&loop, &t->cpoll, t->cfd);
	uv_poll_init(&loop, &t->upoll, t->up.fd);
	uv_timer_init(&loop, &t->linger);
	t->cpoll.data = t->upoll.data = t->linger.data = t;
	pump(t); /* it starts the polls */
}

static void on_loop_wake(uv_async_t *a)
{
	pthread_mutex_lock(&new_lock);
	struct tunnel *t = new_head;
	new_head = NULL;
	pthread_mutex_unlock(&new_lock);
	while (t) {
		struct tunnel *next = t->next_new;
		tunnel_start(t);
		t = next;
	}
}

static void *loop_main(void *arg)
{
	uv_run(&loop, UV_RUN_DEFAULT);
	return NULL;
}

static void loop_init(void)
{
	uv_loop_init(&loop);
	uv_async_init(&loop, &loop_wake, on_loop_wake);
	pthread_t th;
	pthread_attr_t attr;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_create(&th, &attr, loop_main, NULL);
	pthread_attr_destroy(&attr);
}

/* The server switched the client's connection (server thread): hand the pair to the loop. */
static void on_switched(void *ud, struct http_upgraded *u, int fd, const char *extra, size_t extra_len)
{
	struct tunnel *t = ud;
	if (!u) {
		tunnel_free(t);
		return;
	}
	t->u = u;
	t->cfd = fd;
	int fl = fcntl(fd, F_GETFL);
	fcntl(fd, F_SETFL, fl | O_NONBLOCK);
	t->c2u_cap = extra_len > PUMP_BUF ? extra_len : PUMP_BUF;
	t->c2u = xmalloc(t->c2u_cap);
	memcpy(t->c2u, extra, extra_len);
	t->c2u_len = extra_len;
	pthread_once(&loop_once, loop_init);
	pthread_mutex_lock(&new_lock);
	t->next_new = new_head;
	new_head = t;
	pthread_mutex_unlock(&new_lock);
	uv_async_send(&loop_wake);
}

/* --- the request --------------------------------------------------------------------------- */

bool tunnel_is_upgrade(const struct http_request *req)
{
	const char *up = http_header(req, "Upgrade");
	const char *conn = http_header(req, "Connection");
	if (!up || !*up || !conn)
		return false;
	/* "upgrade" as one of Connection's comma-separated tokens */
	for (const char *p = conn; *p;) {
		while (*p == ' ' || *p == '\t' || *p == ',')
			p++;
		size_t n = strcspn(p, ", \t");
		if (n == 7 && strncasecmp(p, "upgrade", 7) == 0)
			return true;
		p += n;
	}
	return false;
}

static bool header_value_ok(const char *v)
{
	return v && !strpbrk(v, "\r\n");
}

static void add_header(struct buf *b, const char *name, const char *v)
{
	if (header_value_ok(v))
		buf_addf(b, "%s: %s\r\n", name, v);
}

static const char *const copied_in[] = { "Connection", "Upgrade", "Sec-WebSocket-Key", "Sec-WebSocket-Version",
					 "Sec-WebSocket-Protocol" };
static const char *const copied_out[] = { "Upgrade", "Connection", "Sec-WebSocket-Accept", "Sec-WebSocket-Protocol",
					  "X-Stream-Protocol-Version" };

static void build_request(struct buf *b, struct http_request *req, const struct tunnel_hop *hop, const char *host,
			  const char *port, const char *path)
{
	const char *method = http_method(req);
	bool post = strcmp(method, "POST") == 0;
	buf_addf(b, "%s %s HTTP/1.1\r\nHost: %s:%s\r\n", post ? "POST" : "GET", path, host, port);
	if (hop->bearer && header_value_ok(hop->bearer))
		buf_addf(b, "Authorization: Bearer %s\r\n", hop->bearer);
	for (size_t i = 0; i < sizeof(copied_in) / sizeof(copied_in[0]); i++)
		add_header(b, copied_in[i], http_header(req, copied_in[i]));
	const char *vers[16];
	size_t nv = http_header_all(req, "X-Stream-Protocol-Version", vers, 16);
	for (size_t i = 0; i < nv && i < 16; i++)
		add_header(b, "X-Stream-Protocol-Version", vers[i]);
	for (const char *const *h = hop->headers; h && h[0] && h[1]; h += 2)
		add_header(b, h[0], h[1]);
	if (post)
		buf_adds(b, "Content-Length: 0\r\n");
	buf_adds(b, "\r\n");
}

/* Reads the rest of a non-101 answer's body (after the head, already has some) and relays it. */
static void relay_plain(struct http_reply *reply, struct dial *d, const struct tunnel_head *h, struct buf *rest)
{
	size_t want = h->content_length >= 0 ? (size_t)h->content_length : BODY_MAX;
	if (want > BODY_MAX)
		want = BODY_MAX;
	while (rest->len < want || h->chunked) {
		if (h->chunked && rest->len >= 5 && memcmp(rest->ptr + rest->len - 5, "0\r\n\r\n", 5) == 0)
			break;
		if (rest->len >= BODY_MAX)
			break;
		ssize_t r = dial_read(d, rest, 16384);
		if (r <= 0)
			break;
	}
	if (h->chunked) {
		ssize_t n = tunnel_dechunk(rest->ptr ? rest->ptr : "", rest->len);
		rest->len = n < 0 ? 0 : (size_t)n;
	} else if (rest->len > want) {
		rest->len = want;
	}
	size_t ctl;
	const char *ct = tunnel_head_get(h, "Content-Type", 0, &ctl);
	/* the content types a hop answers with: Status JSON, or text */
	const char *ctype = ct && ctl >= 16 && strncasecmp(ct, "application/json", 16) == 0 ? "application/json"
											     : "text/plain";
	http_reply_set(reply, h->status, ctype, rest);
}

int tunnel_proxy(struct http_request *req, struct http_reply *reply, const struct tunnel_hop *hop, const char *path)
{
	char host[256], port[16];
	bool tls;
	if (parse_base(hop->base, host, sizeof(host), port, sizeof(port), &tls) < 0)
		return E_UNAVAILABLE;
	struct dial d = { .fd = -1, .deadline = mono_ms() + (hop->timeout_ms > 0 ? hop->timeout_ms : 10000) };
	int err = dial_tcp(&d, host, port);
	if (!err && tls)
		err = dial_tls(&d, host, hop->ca_file);
	if (err) {
		dial_close(&d);
		return err;
	}
	struct buf b = BUF_INIT;
	build_request(&b, req, hop, host, port, path);
	if (dial_write(&d, b.ptr, b.len) < 0) {
		buf_release(&b);
		dial_close(&d);
		return E_UNAVAILABLE;
	}
	buf_reset(&b);
	struct tunnel_head h;
	int pr;
	while ((pr = tunnel_head_parse(b.ptr ? b.ptr : "", b.len, &h)) == 0) {
		ssize_t r = dial_read(&d, &b, 4096);
		if (r <= 0) {
			err = mono_ms() >= d.deadline ? E_TIMEOUT : E_UNAVAILABLE;
			break;
		}
	}
	if (pr < 0)
		err = E_UNAVAILABLE;
	if (err) {
		buf_release(&b);
		dial_close(&d);
		return err;
	}
	if (h.status != 101) {
		struct buf rest = BUF_INIT;
		buf_add(&rest, b.ptr + h.head_len, b.len - h.head_len);
		relay_plain(reply, &d, &h, &rest);
		buf_release(&rest);
		buf_release(&b);
		dial_close(&d);
		return 0;
	}
	for (size_t i = 0; i < sizeof(copied_out) / sizeof(copied_out[0]); i++) {
		size_t vl;
		const char *v = tunnel_head_get(&h, copied_out[i], 0, &vl);
		if (!v)
			continue;
		char *s = xstrndup(v, vl);
		http_reply_header(reply, copied_out[i], s);
		free(s);
	}
	struct tunnel *t = xcalloc(1, sizeof(*t));
	t->up = d;
	t->cfd = -1;
	t->u2c = xmalloc(PUMP_BUF > b.len - h.head_len ? PUMP_BUF : b.len - h.head_len);
	t->u2c_len = b.len - h.head_len;
	memcpy(t->u2c, b.ptr + h.head_len, t->u2c_len);
	/* the next hop's socket stays non-blocking; the loop polls it */
	buf_release(&b);
	http_reply_upgrade(reply, on_switched, t);
	return 0;
}
