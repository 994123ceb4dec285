/* The HTTP server's protocol switch (http_reply_upgrade): a 101 from a worker handler, from the
 * fast handler and from a deferred reply, over plain TCP and TLS, with the server on its own
 * threads and driven by an external loop; bytes the client sent right after the request reach
 * the owner as extra; an upgrade whose client left before the switch is reported with a NULL
 * connection; stopping the server ends switched connections (their owners close them); a switched
 * TLS connection moves megabytes per second (not libmicrohttpd 0.9.75's 4 bytes per call). */
#define _GNU_SOURCE /* strcasestr */
#include <fcntl.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>
#include <cmocka.h>
#include "support/testnet.h"
#include "ursa/http.h"
#include "ursa/timeutil.h"
#include "ursa/xalloc.h"
#include "support/testcert.h"

static atomic_int switched, closed, abandoned;
static char cert_path[64], key_path[64];

/* Owner of a switched connection: echoes "extra" first, then every byte, until EOF. */
struct echo {
	struct http_upgraded *u;
	int fd;
	char *extra;
	size_t extra_len;
	bool bye; /* says "bye" and closes at once */
};

static void *echo_main(void *arg)
{
	struct echo *e = arg;
	int fl = fcntl(e->fd, F_GETFL);
	fcntl(e->fd, F_SETFL, fl & ~O_NONBLOCK);
	if (e->extra_len)
		(void)!write(e->fd, e->extra, e->extra_len);
	char b[4096];
	ssize_t n;
	if (e->bye)
		(void)!write(e->fd, "bye", 3);
	while (!e->bye && (n = read(e->fd, b, sizeof(b))) > 0)
		if (write(e->fd, b, (size_t)n) != n)
			break;
	http_upgraded_close(e->u);
	atomic_fetch_add(&closed, 1);
	free(e->extra);
	free(e);
	return NULL;
}

static void on_switched(void *ud, struct http_upgraded *u, int fd, const char *extra, size_t extra_len)
{
	assert_true(ud == &switched || ud == &closed);
	if (!u) {
		assert_int_equal(fd, -1);
		atomic_fetch_add(&abandoned, 1);
		return;
	}
	atomic_fetch_add(&switched, 1);
	struct echo *e = xcalloc(1, sizeof(*e));
	e->u = u;
	e->fd = fd;
	e->extra = xmalloc(extra_len + 1);
	memcpy(e->extra, extra, extra_len);
	e->extra_len = extra_len;
	e->bye = ud == &closed;
	pthread_t t;
	pthread_create(&t, NULL, echo_main, e);
	pthread_detach(t);
}

static void upgrade_ud(struct http_reply *reply, void *ud)
{
	http_reply_header(reply, "Upgrade", "test-echo");
	http_reply_header(reply, "Connection", "Upgrade");
	http_reply_header(reply, "X-Switched", "yes");
	http_reply_upgrade(reply, on_switched, ud);
}

static void upgrade(struct http_reply *reply) { upgrade_ud(reply, &switched); }

struct later {
	struct http_deferred *d;
	struct http_reply *reply;
	int delay_ms;
};

static void *finish_later(void *arg)
{
	struct later *l = arg;
	usleep((useconds_t)l->delay_ms * 1000);
	upgrade(l->reply);
	http_deferred_finish(l->d);
	free(l);
	return NULL;
}

static void handler(void *ud, struct http_request *req, struct http_reply *reply)
{
	if (strcmp(http_path(req), "/bye") == 0) {
		upgrade_ud(reply, &closed);
		return;
	}
	if (strcmp(http_path(req), "/up") == 0 && http_header(req, "Upgrade")) {
		upgrade(reply);
		return;
	}
	struct buf b = BUF_INIT;
	buf_adds(&b, "plain");
	http_reply_set(reply, 200, "text/plain", &b);
}

static bool on_fast(void *ud, struct http_request *req, struct http_reply *reply)
{
	if (strcmp(http_path(req), "/fastup") == 0) {
		upgrade(reply);
		return true;
	}
	if (strncmp(http_path(req), "/deferup", 8) == 0) {
		struct later *l = xcalloc(1, sizeof(*l));
		l->reply = reply;
		l->delay_ms = strcmp(http_path(req), "/deferup/slow") == 0 ? 500 : 20;
		l->d = http_reply_defer(reply);
		pthread_t t;
		pthread_create(&t, NULL, finish_later, l);
		pthread_detach(t);
		return true;
	}
	return false;
}

static void make_cert(void)
{
	test_cert_write("ursa-upgrade", cert_path, key_path);
}

/* The client side: a socket, with TLS or not. */
struct conn {
	int fd;
	SSL_CTX *ctx;
	SSL *ssl;
};

static void conn_open(struct conn *c, int port, bool tls)
{
	memset(c, 0, sizeof(*c));
	c->fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	assert_int_equal(connect(c->fd, (struct sockaddr *)&a, sizeof(a)), 0);
	struct timeval tv = { .tv_sec = 5 };
	setsockopt(c->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (!tls)
		return;
	c->ctx = SSL_CTX_new(TLS_client_method());
	c->ssl = SSL_new(c->ctx);
	SSL_set_fd(c->ssl, c->fd);
	assert_int_equal(SSL_connect(c->ssl), 1);
}

static void conn_write(struct conn *c, const char *s, size_t n)
{
	if (c->ssl)
		assert_int_equal(SSL_write(c->ssl, s, (int)n), (int)n);
	else
		assert_int_equal(write(c->fd, s, n), (ssize_t)n);
}

static ssize_t conn_read(struct conn *c, char *b, size_t n)
{
	if (c->ssl) {
		int r = SSL_read(c->ssl, b, (int)n);
		return r > 0 ? r : (SSL_get_error(c->ssl, r) == SSL_ERROR_ZERO_RETURN ? 0 : -1);
	}
	return read(c->fd, b, n);
}

static void conn_close(struct conn *c)
{
	if (c->ssl && getenv("SSLSHUT"))
		SSL_shutdown(c->ssl);
	if (c->ssl)
		SSL_free(c->ssl), SSL_CTX_free(c->ctx);
	close(c->fd);
}

/* Reads exactly n bytes (or fails the test). */
static void read_exact(struct conn *c, char *b, size_t n)
{
	size_t got = 0;
	while (got < n) {
		ssize_t r = conn_read(c, b + got, n - got);
		assert_true(r > 0);
		got += (size_t)r;
	}
}

/* Reads the response head byte by byte (so that nothing after it is consumed). */
static void read_head(struct conn *c, struct buf *head)
{
	char ch;
	while (head->len < 4 || memcmp(head->ptr + head->len - 4, "\r\n\r\n", 4) != 0) {
		assert_int_equal(conn_read(c, &ch, 1), 1);
		buf_add(head, &ch, 1);
	}
}

static int wait_for_value(atomic_int *v, int want)
{
	for (int i = 0; i < 500 && atomic_load(v) < want; i++)
		usleep(10 * 1000);
	return atomic_load(v);
}
#define wait_for(v, want) assert_int_equal(wait_for_value(v, want), want)

/* One round trip: the upgrade request with pipelined bytes, the 101, the echo both ways, then
 * the client closes and the owner must close its side. */
static void round_trip(int port, bool tls, const char *path, const char *method)
{
	int closed0 = atomic_load(&closed), switched0 = atomic_load(&switched);
	struct conn c;
	conn_open(&c, port, tls);
	struct buf req = BUF_INIT;
	buf_addf(&req, "%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: Upgrade\r\nUpgrade: test-echo\r\n"
		       "Content-Length: 0\r\n\r\nEARLY",
		 method, path);
	conn_write(&c, req.ptr, req.len);
	buf_release(&req);
	struct buf head = BUF_INIT;
	read_head(&c, &head);
	buf_add(&head, "", 1);
	assert_non_null(strstr(head.ptr, "HTTP/1.1 101"));
	assert_non_null(strstr(head.ptr, "X-Switched: yes"));
	assert_non_null(strcasestr(head.ptr, "Upgrade: test-echo"));
	buf_release(&head);
	char b[64];
	read_exact(&c, b, 5);
	assert_memory_equal(b, "EARLY", 5);
	/* a larger block, so that TLS records and the socketpair are exercised */
	static char big[100000], back[sizeof(big)];
	for (size_t i = 0; i < sizeof(big); i++)
		big[i] = (char)(i * 7);
	for (int round = 0; round < 3; round++) {
		conn_write(&c, "ping", 4);
		read_exact(&c, b, 4);
		assert_memory_equal(b, "ping", 4);
	}
	conn_write(&c, big, sizeof(big));
	read_exact(&c, back, sizeof(back));
	assert_memory_equal(big, back, sizeof(big));
	/* throughput: 4 MiB in 64 KiB round trips. libmicrohttpd 0.9.75 forwarding a switched TLS
	 * connection through its 8-byte emergency buffer (4 bytes per system call) needs about 30 s
	 * for this; with real buffers it is well under a second, even under ASan */
	int64_t t0 = mono_ms();
	for (int round = 0; round < 64; round++) {
		conn_write(&c, big, 65536);
		read_exact(&c, back, 65536);
	}
	assert_memory_equal(big, back, 65536);
	assert_in_range(mono_ms() - t0, 0, 4000);
	wait_for(&switched, switched0 + 1);
	conn_close(&c);
	wait_for(&closed, closed0 + 1);
}

static void plain_request(int port, bool tls)
{
	struct conn c;
	conn_open(&c, port, tls);
	const char *req = "GET /other HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
	conn_write(&c, req, strlen(req));
	struct buf head = BUF_INIT;
	read_head(&c, &head);
	buf_add(&head, "", 1);
	assert_non_null(strstr(head.ptr, "HTTP/1.1 200"));
	buf_release(&head);
	conn_close(&c);
}

/* External mode: a loop thread drives the server through its epoll descriptor. */
static atomic_bool loop_stop;
static void *loop_main(void *arg)
{
	struct http_server *s = arg;
	int ep = epoll_create1(0);
	struct epoll_event ev = { .events = EPOLLIN };
	epoll_ctl(ep, EPOLL_CTL_ADD, http_server_fd(s), &ev);
	while (!atomic_load(&loop_stop)) {
		long t = http_server_timeout_ms(s);
		struct epoll_event got;
		epoll_wait(ep, &got, 1, t < 0 || t > 20 ? 20 : (int)t);
		http_server_run(s);
	}
	close(ep);
	return NULL;
}

static void run_server(bool tls, bool external)
{
	int port = 0;
	struct http_server *s = NULL;
	for (int attempt = 0; attempt < 5 && !s; attempt++) { /* a port free a moment ago may be taken */
		port = test_free_port();
		char listen[32];
		snprintf(listen, sizeof(listen), "127.0.0.1:%d", port);
		struct http_server_options o = { .listen = listen, .threads = 2, .fast = on_fast, .external = external };
		if (tls) {
			o.tls_cert = cert_path;
			o.tls_key = key_path;
		}
		char *err = NULL;
		s = http_server_start(&o, handler, NULL, &err);
		free(err);
	}
	assert_non_null(s);
	pthread_t loop;
	atomic_store(&loop_stop, false);
	if (external)
		pthread_create(&loop, NULL, loop_main, s);
	plain_request(port, tls);
	round_trip(port, tls, "/up", "GET");
	round_trip(port, tls, "/up", "POST");
	round_trip(port, tls, "/fastup", "GET");
	round_trip(port, tls, "/deferup", "GET");

	/* the owner ends the connection: the client sees its last bytes, then the end */
	int bye0 = atomic_load(&closed);
	struct conn c;
	conn_open(&c, port, tls);
	const char *req = "GET /bye HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: test-echo\r\n\r\n";
	conn_write(&c, req, strlen(req));
	struct buf head = BUF_INIT;
	read_head(&c, &head);
	buf_reset(&head);
	char bye[8];
	read_exact(&c, bye, 3);
	assert_memory_equal(bye, "bye", 3);
	int64_t t0 = mono_ms();
	/* 0, or (TLS, when the server had to cut the connection: see struct cut) an error */
	assert_true(conn_read(&c, bye, sizeof(bye)) <= 0);
	assert_true(mono_ms() - t0 < 3000);
	conn_close(&c);
	wait_for(&closed, bye0 + 1); /* its owner counts itself closed after the client saw the end */

	/* a client that leaves before the deferred 101 is sent: its owner hears of it */
	int ab0 = atomic_load(&abandoned) + atomic_load(&closed);
	conn_open(&c, port, tls);
	req = "GET /deferup/slow HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: test-echo\r\n\r\n";
	conn_write(&c, req, strlen(req));
	usleep(50 * 1000);
	conn_close(&c);
	/* told with a NULL connection, or (a plain socket takes the 101 before it notices the
	 * client left) switched and at once at its end */
	for (int i = 0; i < 500 && atomic_load(&abandoned) + atomic_load(&closed) < ab0 + 1; i++)
		usleep(10 * 1000);
	assert_int_equal(atomic_load(&abandoned) + atomic_load(&closed), ab0 + 1);

	/* stopping with a switched connection open: the owner sees EOF and closes it */
	int closed0 = atomic_load(&closed);
	conn_open(&c, port, tls);
	req = "GET /up HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: test-echo\r\n\r\n";
	conn_write(&c, req, strlen(req));
	read_head(&c, &head);
	buf_release(&head);
	if (external) {
		atomic_store(&loop_stop, true);
		pthread_join(loop, NULL);
	}
	t0 = mono_ms();
	http_server_stop(s);
	assert_true(mono_ms() - t0 < 5000);
	wait_for(&closed, closed0 + 1);
	conn_close(&c);
}

static void test_plain(void **state) { run_server(false, false); }
static void test_tls(void **state) { run_server(true, false); }
static void test_plain_external(void **state) { run_server(false, true); }
static void test_tls_external(void **state) { run_server(true, true); }

int main(void)
{
	make_cert();
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_plain),
		cmocka_unit_test(test_tls),
		cmocka_unit_test(test_plain_external),
		cmocka_unit_test(test_tls_external),
	};
	if (getenv("UPGRADE_TEST_FILTER"))
		cmocka_set_test_filter(getenv("UPGRADE_TEST_FILTER"));
	int r = cmocka_run_group_tests(tests, NULL, NULL);
	unlink(cert_path);
	unlink(key_path);
	return r;
}
