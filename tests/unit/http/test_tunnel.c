/* Upgrade tunnels: the response-head parser and the chunked decoder (pure), then one hop on
 * loopback: a TLS front server whose handler passes upgrade requests to a TLS back server
 * (verified against its CA, with a bearer token and an extra header) that echoes; the client
 * gets the back's 101 headers, bytes both ways (a large block too: backpressure), the back's
 * refusal as an ordinary answer, an unreachable back as E_UNAVAILABLE; when the client leaves,
 * or when the back ends, both hops are freed within seconds. */
#define _GNU_SOURCE /* strcasestr */
#include <fcntl.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <cmocka.h>
#include "support/testnet.h"
#include "ursa/errors.h"
#include "ursa/http.h"
#include "ursa/timeutil.h"
#include "ursa/tunnel.h"
#include "ursa/xalloc.h"
#include "support/testcert.h"

/* --- pure ---------------------------------------------------------------------------------- */

static void test_head_parse(void **state)
{
	struct tunnel_head h;
	const char *ok = "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
			 "Sec-WebSocket-Protocol:  v5.channel.k8s.io \r\nX-A: 1\r\nX-A: 2\r\n\r\nDATA";
	assert_int_equal(tunnel_head_parse(ok, strlen(ok), &h), 1);
	assert_int_equal(h.status, 101);
	assert_int_equal(h.head_len, strlen(ok) - 4);
	assert_int_equal(h.content_length, -1);
	size_t n;
	const char *v = tunnel_head_get(&h, "sec-websocket-protocol", 0, &n);
	assert_non_null(v);
	assert_int_equal(n, 17); /* trailing blanks trimmed */
	assert_memory_equal(v, "v5.channel.k8s.io", 17);
	v = tunnel_head_get(&h, "X-A", 1, &n);
	assert_non_null(v);
	assert_memory_equal(v, "2", 1);
	assert_null(tunnel_head_get(&h, "X-A", 2, &n));
	/* every prefix is incomplete */
	for (size_t i = 0; i < strlen(ok) - 4; i++)
		assert_int_equal(tunnel_head_parse(ok, i, &h), 0);
	const char *bare = "HTTP/1.0 403\nContent-Length: 12\nContent-Type: application/json\n\n{}";
	assert_int_equal(tunnel_head_parse(bare, strlen(bare), &h), 1);
	assert_int_equal(h.status, 403);
	assert_int_equal(h.content_length, 12);
	const char *bad[] = {
		"HTTP/2 200 OK\r\n\r\n", "HTTP/1.1 20 OK\r\n\r\n", "HTTP/1.1 200OK\r\n\r\n", "HTTP/1.1 099 x\r\n\r\n",
		"HTTP/1.1 200 OK\r\nNo colon\r\n\r\n", "HTTP/1.1 200 OK\r\n: empty\r\n\r\n",
		"HTTP/1.1 200 OK\r\nBad Name: x\r\n\r\n", "HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n",
		"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
		"HTTP/1.1 200 OK\r\nX: a\001b\r\n\r\n", "GET / HTTP/1.1\r\n\r\n",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(tunnel_head_parse(bad[i], strlen(bad[i]), &h), -1);
	/* too long, too many fields */
	struct buf b = BUF_INIT;
	buf_adds(&b, "HTTP/1.1 200 OK\r\n");
	while (b.len < TUNNEL_HEAD_MAX + 10)
		buf_adds(&b, "X-Long: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n");
	assert_int_equal(tunnel_head_parse(b.ptr, b.len, &h), -1);
	buf_reset(&b);
	buf_adds(&b, "HTTP/1.1 200 OK\r\n");
	for (int i = 0; i <= TUNNEL_HEAD_FIELDS; i++)
		buf_adds(&b, "X: 1\r\n");
	buf_adds(&b, "\r\n");
	assert_int_equal(tunnel_head_parse(b.ptr, b.len, &h), -1);
	buf_release(&b);
}

static void test_dechunk(void **state)
{
	char ok[] = "5\r\nhello\r\n6;ext=1\r\n world\r\n0\r\n\r\n";
	assert_int_equal(tunnel_dechunk(ok, strlen(ok)), 11);
	assert_memory_equal(ok, "hello world", 11);
	char trunc[] = "5\r\nhel";
	assert_int_equal(tunnel_dechunk(trunc, strlen(trunc)), -1);
	char bad[] = "zz\r\n";
	assert_int_equal(tunnel_dechunk(bad, strlen(bad)), -1);
	char nocrlf[] = "2\r\nabX0\r\n\r\n";
	assert_int_equal(tunnel_dechunk(nocrlf, strlen(nocrlf)), -1);
	char huge[] = "fffffffff\r\n";
	assert_int_equal(tunnel_dechunk(huge, strlen(huge)), -1);
}

/* --- one hop on loopback ------------------------------------------------------------------- */

static char cert_path[64], key_path[64];
static int back_port, front_port;
static struct http_server *back, *front;
static atomic_int back_open, back_closed;
static char *back_auth, *back_extra; /* what the back saw last */

static void make_cert(void)
{
	test_cert_write("ursa-tunnel", cert_path, key_path);
}

/* The back: echoes (after a greeting), or on /bye says "bye" and ends. */
struct echo {
	struct http_upgraded *u;
	int fd;
	bool bye;
};

static void *echo_main(void *arg)
{
	struct echo *e = arg;
	int fl = fcntl(e->fd, F_GETFL);
	fcntl(e->fd, F_SETFL, fl & ~O_NONBLOCK);
	(void)!write(e->fd, e->bye ? "bye" : "hi!", 3);
	char b[4096];
	ssize_t n;
	while (!e->bye && (n = read(e->fd, b, sizeof(b))) > 0) {
		usleep(200); /* a slow reader: the tunnel must hold back, not buffer everything */
		if (write(e->fd, b, (size_t)n) != n)
			break;
	}
	http_upgraded_close(e->u);
	atomic_fetch_add(&back_closed, 1);
	free(e);
	return NULL;
}

static void back_switched(void *ud, struct http_upgraded *u, int fd, const char *extra, size_t extra_len)
{
	if (!u)
		return;
	atomic_fetch_add(&back_open, 1);
	struct echo *e = xcalloc(1, sizeof(*e));
	e->u = u;
	e->fd = fd;
	e->bye = ud != NULL;
	pthread_t t;
	pthread_create(&t, NULL, echo_main, e);
	pthread_detach(t);
}

static void back_handler(void *ud, struct http_request *req, struct http_reply *reply)
{
	free(back_auth);
	free(back_extra);
	back_auth = http_header(req, "Authorization") ? xstrdup(http_header(req, "Authorization")) : NULL;
	back_extra = http_header(req, "X-Extra") ? xstrdup(http_header(req, "X-Extra")) : NULL;
	const char *vers[4];
	size_t nv = http_header_all(req, "X-Stream-Protocol-Version", vers, 4);
	if (strcmp(http_path(req), "/deny") == 0 || !tunnel_is_upgrade(req) || nv != 2 ||
	    strcmp(vers[1], "v4.channel.k8s.io") != 0 || strcmp(http_query_string(req), "a=1&b=%2F") != 0) {
		struct buf b = BUF_INIT;
		buf_adds(&b, "{\"kind\":\"Status\",\"code\":403}");
		http_reply_set(reply, 403, "application/json", &b);
		return;
	}
	http_reply_header(reply, "Upgrade", "websocket");
	http_reply_header(reply, "Connection", "Upgrade");
	http_reply_header(reply, "Sec-WebSocket-Protocol", "v5.channel.k8s.io");
	http_reply_header(reply, "X-Not-Copied", "1");
	http_reply_upgrade(reply, back_switched, strcmp(http_path(req), "/bye") == 0 ? (void *)1 : NULL);
}

static void front_handler(void *ud, struct http_request *req, struct http_reply *reply)
{
	static const char *const extra[] = { "X-Extra", "asserted", NULL };
	char base[64], path[256];
	const char *p = http_path(req);
	bool down = strcmp(p, "/down") == 0;
	snprintf(base, sizeof(base), "https://127.0.0.1:%d", down ? test_free_port() : back_port);
	snprintf(path, sizeof(path), "%s?%s", p, http_query_string(req) ? http_query_string(req) : "");
	struct tunnel_hop hop = { .base = base, .ca_file = cert_path, .bearer = "kubelet-token", .headers = extra };
	int err = tunnel_proxy(req, reply, &hop, path);
	if (err) {
		struct buf b = BUF_INIT;
		buf_addf(&b, "err %d", err);
		http_reply_set(reply, err == E_UNAVAILABLE ? 503 : 504, "text/plain", &b);
	}
}

struct conn {
	int fd;
	SSL_CTX *ctx;
	SSL *ssl;
};

static void conn_open(struct conn *c, int port)
{
	c->fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	assert_int_equal(connect(c->fd, (struct sockaddr *)&a, sizeof(a)), 0);
	struct timeval tv = { .tv_sec = 5 };
	setsockopt(c->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	c->ctx = SSL_CTX_new(TLS_client_method());
	c->ssl = SSL_new(c->ctx);
	SSL_set_fd(c->ssl, c->fd);
	assert_int_equal(SSL_connect(c->ssl), 1);
}

static void conn_close(struct conn *c)
{
	SSL_free(c->ssl);
	SSL_CTX_free(c->ctx);
	close(c->fd);
}

static void read_exact(struct conn *c, char *b, size_t n)
{
	for (size_t got = 0; got < n;) {
		int r = SSL_read(c->ssl, b + got, (int)(n - got));
		assert_true(r > 0);
		got += (size_t)r;
	}
}

/* Sends an upgrade request, returns the response head (and body bytes after it in *rest). */
static char *request(struct conn *c, const char *method, const char *path)
{
	struct buf req = BUF_INIT;
	buf_addf(&req, "%s %s HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n"
		       "Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
		       "Sec-WebSocket-Protocol: v5.channel.k8s.io\r\nX-Stream-Protocol-Version: v5.channel.k8s.io\r\n"
		       "X-Stream-Protocol-Version: v4.channel.k8s.io\r\nAuthorization: Bearer client\r\n\r\n",
		 method, path);
	assert_int_equal(SSL_write(c->ssl, req.ptr, (int)req.len), (int)req.len);
	buf_release(&req);
	struct buf head = BUF_INIT;
	char ch;
	while (head.len < 4 || memcmp(head.ptr + head.len - 4, "\r\n\r\n", 4) != 0) {
		assert_int_equal(SSL_read(c->ssl, &ch, 1), 1);
		buf_add(&head, &ch, 1);
	}
	return buf_detach(&head, NULL);
}

static int wait_value(atomic_int *v, int want)
{
	for (int i = 0; i < 500 && atomic_load(v) < want; i++)
		usleep(10 * 1000);
	return atomic_load(v);
}

static int wait_open(long want)
{
	for (int i = 0; i < 500 && tunnel_open_count() != want; i++)
		usleep(10 * 1000);
	return (int)tunnel_open_count();
}

static int setup(void **state)
{
	make_cert();
	back_port = test_free_port();
	front_port = test_free_port();
	char l1[32], l2[32], *err = NULL;
	snprintf(l1, sizeof(l1), "127.0.0.1:%d", back_port);
	snprintf(l2, sizeof(l2), "127.0.0.1:%d", front_port);
	struct http_server_options ob = { .listen = l1, .threads = 4, .tls_cert = cert_path, .tls_key = key_path };
	struct http_server_options of = { .listen = l2, .threads = 4, .tls_cert = cert_path, .tls_key = key_path };
	back = http_server_start(&ob, back_handler, NULL, &err);
	front = http_server_start(&of, front_handler, NULL, &err);
	return back && front ? 0 : -1;
}

static int teardown(void **state)
{
	http_server_stop(front);
	http_server_stop(back);
	unlink(cert_path);
	unlink(key_path);
	free(back_auth);
	free(back_extra);
	return 0;
}

static void test_echo_and_client_leaves(void **state)
{
	int closed0 = atomic_load(&back_closed);
	struct conn c;
	conn_open(&c, front_port);
	char *head = request(&c, "GET", "/exec/ns/pod/ctr?a=1&b=%2F");
	assert_non_null(strstr(head, "HTTP/1.1 101"));
	assert_non_null(strcasestr(head, "Sec-WebSocket-Protocol: v5.channel.k8s.io"));
	assert_non_null(strcasestr(head, "Upgrade: websocket"));
	assert_null(strstr(head, "X-Not-Copied"));
	free(head);
	assert_string_equal(back_auth, "Bearer kubelet-token");
	assert_string_equal(back_extra, "asserted");
	char b[8];
	read_exact(&c, b, 3);
	assert_memory_equal(b, "hi!", 3);
	assert_int_equal(wait_open(1), 1);
	/* 4 MB through a slow back: the tunnel's buffers stay small, so this only passes if
	 * reading and writing interleave (the client writes in pieces and reads as it goes) */
	size_t total = 4u << 20, sent = 0, got = 0;
	char *out = xmalloc(65536), *in = xmalloc(65536);
	for (size_t i = 0; i < 65536; i++)
		out[i] = (char)(i * 13 + 1);
	int fl = fcntl(c.fd, F_GETFL);
	fcntl(c.fd, F_SETFL, fl | O_NONBLOCK);
	int64_t deadline = mono_ms() + 30000;
	while (got < total && mono_ms() < deadline) {
		if (sent < total) {
			size_t n = total - sent < 16384 ? total - sent : 16384;
			int w = SSL_write(c.ssl, out + sent % 65536, (int)n); /* chunks never straddle the pattern */
			if (w > 0)
				sent += (size_t)w;
		}
		int r = SSL_read(c.ssl, in, 65536);
		if (r > 0) {
			for (int i = 0; i < r; i++)
				assert_int_equal(in[i], out[(got + (size_t)i) % 65536]);
			got += (size_t)r;
		} else {
			usleep(500);
		}
	}
	assert_int_equal(got, total);
	fcntl(c.fd, F_SETFL, fl);
	free(out);
	free(in);
	/* the client vanishes: the back's end and the tunnel are freed within seconds */
	conn_close(&c);
	assert_int_equal(wait_value(&back_closed, closed0 + 1), closed0 + 1);
	assert_int_equal(wait_open(0), 0);
}

static void test_back_ends(void **state)
{
	struct conn c;
	conn_open(&c, front_port);
	char *head = request(&c, "POST", "/bye?a=1&b=%2F");
	assert_non_null(strstr(head, "HTTP/1.1 101"));
	free(head);
	char b[8];
	read_exact(&c, b, 3);
	assert_memory_equal(b, "bye", 3);
	int64_t t0 = mono_ms();
	int r = SSL_read(c.ssl, b, sizeof(b));
	assert_true(r <= 0);
	assert_true(mono_ms() - t0 < 4000);
	conn_close(&c);
	assert_int_equal(wait_open(0), 0);
}

static void test_refused_and_down(void **state)
{
	struct conn c;
	conn_open(&c, front_port);
	char *head = request(&c, "GET", "/deny?a=1&b=%2F");
	assert_non_null(strstr(head, "HTTP/1.1 403"));
	assert_non_null(strcasestr(head, "Content-Type: application/json"));
	free(head);
	char b[64] = "";
	read_exact(&c, b, 28);
	assert_memory_equal(b, "{\"kind\":\"Status\",\"code\":403}", 28);
	conn_close(&c);
	conn_open(&c, front_port);
	head = request(&c, "GET", "/down?a=1&b=%2F");
	assert_non_null(strstr(head, "HTTP/1.1 503"));
	free(head);
	conn_close(&c);
	assert_int_equal(tunnel_open_count(), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_head_parse),
		cmocka_unit_test(test_dechunk),
		cmocka_unit_test(test_echo_and_client_leaves),
		cmocka_unit_test(test_back_ends),
		cmocka_unit_test(test_refused_and_down),
	};
	if (getenv("TUNNEL_TEST_FILTER"))
		cmocka_set_test_filter(getenv("TUNNEL_TEST_FILTER"));
	return cmocka_run_group_tests(tests, setup, teardown);
}
