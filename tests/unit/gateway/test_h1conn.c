/* The gateway's HTTP/1.1 client (h1conn.c) on its own epoll loop against a scripted partition
 * on loopback (plain TCP and TLS with a certificate made here): keep-alive reuse, Connection:
 * close and close-delimited answers, a kept connection that dies under a request (GET sent once
 * more on a new connection, POST never), an idle connection the partition closed, junk after an
 * answer, a malformed answer, the deadline, a refused endpoint, TLS verification and session
 * resumption. */
#define _GNU_SOURCE
#include <errno.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>
#include <cmocka.h>
#include "../support/testcert.h"
#include "../support/testnet.h"
#include "h1.h"
#include "ursa/errors.h"
#include "ursa/timeutil.h"
#include "ursa/xalloc.h"

/* --- the scripted partition ------------------------------------------------------------------- */
struct server {
	int lfd, port;
	SSL_CTX *tls;              /* NULL: plain TCP */
	atomic_int accepted, requests, resumed;
};

struct sconn {
	struct server *s;
	int fd;
	SSL *ssl;
	char buf[1 << 16];
	size_t len;
};

static ssize_t s_read(struct sconn *c, char *b, size_t n)
{
	if (c->ssl) {
		int r = SSL_read(c->ssl, b, (int)n);
		return r > 0 ? r : 0;
	}
	ssize_t r = recv(c->fd, b, n, 0);
	return r > 0 ? r : 0;
}

static void s_write(struct sconn *c, const char *b, size_t n)
{
	if (c->ssl)
		SSL_write(c->ssl, b, (int)n);
	else if (send(c->fd, b, n, MSG_NOSIGNAL) < 0)
		return;
}

static void s_writes(struct sconn *c, const char *s)
{
	s_write(c, s, strlen(s));
}

/* One request: 1 with method, path and body filled, 0 at the end of the connection. */
static int s_request(struct sconn *c, char *method, char *path, struct buf *body)
{
	char *end;
	while (!(end = memmem(c->buf, c->len, "\r\n\r\n", 4))) {
		ssize_t r = s_read(c, c->buf + c->len, sizeof(c->buf) - c->len - 1);
		if (r <= 0)
			return 0;
		c->len += (size_t)r;
	}
	size_t hl = (size_t)(end + 4 - c->buf);
	c->buf[hl - 1] = '\0';
	if (sscanf(c->buf, "%15s %255s", method, path) != 2)
		return 0;
	size_t cl = 0;
	const char *h = strcasestr(c->buf, "\r\nContent-Length:");
	if (h)
		cl = strtoul(h + 17, NULL, 10);
	buf_reset(body);
	size_t have = c->len - hl;
	memmove(c->buf, c->buf + hl, have);
	c->len = have;
	while (body->len + c->len < cl) {
		buf_add(body, c->buf, c->len);
		c->len = 0;
		ssize_t r = s_read(c, c->buf, sizeof(c->buf));
		if (r <= 0)
			return 0;
		c->len = (size_t)r;
	}
	size_t take = cl - body->len;
	buf_add(body, c->buf, take);
	memmove(c->buf, c->buf + take, c->len - take);
	c->len -= take;
	atomic_fetch_add(&c->s->requests, 1);
	return 1;
}

static void reply(struct sconn *c, int status, const char *extra, const char *body)
{
	char head[512];
	snprintf(head, sizeof(head), "HTTP/1.1 %d X\r\nContent-Type: application/json\r\n%sContent-Length: %zu\r\n\r\n",
		 status, extra, strlen(body));
	s_writes(c, head);
	s_writes(c, body);
}

static void *serve_conn(void *arg)
{
	struct sconn *c = arg;
	char method[16], path[256];
	struct buf body = BUF_INIT;
	bool drop_next = false;
	if (c->ssl) {
		if (SSL_accept(c->ssl) != 1)
			goto out;
		if (SSL_session_reused(c->ssl))
			atomic_fetch_add(&c->s->resumed, 1);
	}
	while (s_request(c, method, path, &body)) {
		if (drop_next || strcmp(path, "/always-drop") == 0)
			break; /* closed without an answer */
		if (strcmp(path, "/ok") == 0) {
			reply(c, 200, "", "{}");
		} else if (strcmp(path, "/echo") == 0) {
			struct buf b = BUF_INIT;
			buf_addf(&b, "%s %zu ", method, body.len);
			buf_add(&b, body.ptr, body.len < 16 ? body.len : 16);
			reply(c, 201, "", buf_cstr(&b));
			buf_release(&b);
		} else if (strcmp(path, "/close") == 0) {
			reply(c, 200, "Connection: close\r\n", "bye");
			break;
		} else if (strcmp(path, "/eof") == 0) {
			s_writes(c, "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nhello");
			break;
		} else if (strcmp(path, "/chunked") == 0) {
			s_writes(c, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nWarning: 299 - \"w1\"\r\n\r\n");
			usleep(20000);
			s_writes(c, "3\r\nabc\r\n");
			usleep(20000);
			s_writes(c, "2\r\nde\r\n0\r\n\r\n");
		} else if (strcmp(path, "/arm-drop") == 0) {
			reply(c, 200, "", "{}");
			drop_next = true;
		} else if (strcmp(path, "/close-later") == 0) {
			reply(c, 200, "", "{}");
			usleep(100000);
			break;
		} else if (strcmp(path, "/junk") == 0) {
			s_writes(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}HTTP/1.1 200 OK\r\n");
		} else if (strcmp(path, "/garbage") == 0) {
			s_writes(c, "SSH-2.0-OpenSSH_9.2\r\n");
		} else if (strcmp(path, "/slow") == 0) {
			usleep(400000);
			reply(c, 200, "", "{}");
		} else {
			reply(c, 404, "", "{\"kind\":\"Status\",\"code\":404}");
		}
	}
out:
	buf_release(&body);
	SSL_free(c->ssl);
	close(c->fd);
	free(c);
	return NULL;
}

static void *serve(void *arg)
{
	struct server *s = arg;
	for (;;) {
		int fd = accept(s->lfd, NULL, NULL);
		if (fd < 0)
			continue;
		atomic_fetch_add(&s->accepted, 1);
		struct sconn *c = xcalloc(1, sizeof(*c));
		c->s = s;
		c->fd = fd;
		if (s->tls) {
			c->ssl = SSL_new(s->tls);
			SSL_set_fd(c->ssl, fd);
		}
		pthread_t t;
		pthread_create(&t, NULL, serve_conn, c);
		pthread_detach(t);
	}
	return NULL;
}

static void server_start(struct server *s, SSL_CTX *tls)
{
	memset(s, 0, sizeof(*s));
	s->tls = tls;
	s->lfd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t alen = sizeof(a);
	assert_int_equal(bind(s->lfd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(listen(s->lfd, 64), 0);
	getsockname(s->lfd, (struct sockaddr *)&a, &alen);
	s->port = ntohs(a.sin_port);
	pthread_t t;
	pthread_create(&t, NULL, serve, s);
	pthread_detach(t);
}

/* --- a certificate for 127.0.0.1, its own CA (support/testcert.h) ------------------------------ */
static char ca_path[64], key_path[64];
static SSL_CTX *server_tls(void)
{
	test_cert_write("ursa-h1test", ca_path, key_path);
	SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
	assert_int_equal(SSL_CTX_use_certificate_file(ctx, ca_path, SSL_FILETYPE_PEM), 1);
	assert_int_equal(SSL_CTX_use_PrivateKey_file(ctx, key_path, SSL_FILETYPE_PEM), 1);
	unlink(key_path);
	return ctx;
}

/* --- the client's loop ------------------------------------------------------------------------ */
#define TAG 16
static int ep = -1;
static struct server plain, tls;
static char *base_plain, *base_tls;

struct result {
	bool done;
	int err;
	struct upstream_resp resp;
};

static void on_done(void *ud, int err, struct upstream_resp *resp)
{
	struct result *r = ud;
	assert_false(r->done); /* exactly once */
	r->done = true;
	r->err = err;
	r->resp = *resp;
	memset(resp, 0, sizeof(*resp)); /* taken */
}

static void pump(struct h1_client *c, int64_t until_ms, const bool *done)
{
	struct epoll_event evs[16];
	while ((!done || !*done) && mono_ms() < until_ms) {
		int64_t now = mono_ms(), due = h1_client_due(c);
		int64_t t = until_ms - now;
		if (due >= 0 && due - now < t)
			t = due > now ? due - now : 0;
		int n = epoll_wait(ep, evs, 16, (int)t);
		for (int i = 0; i < n; i++)
			h1_client_event(c, (int)(evs[i].data.u64 - TAG), evs[i].events);
		h1_client_timers(c, mono_ms());
	}
}

static int call(struct h1_client *c, const char *base, const struct upstream_req *rq, long timeout_ms,
		struct upstream_resp *ret)
{
	struct result r = { 0 };
	h1_client_send(c, base, rq, timeout_ms ? mono_ms() + timeout_ms : 0, on_done, &r);
	assert_false(r.done); /* never from inside send */
	pump(c, mono_ms() + 10000, &r.done);
	assert_true(r.done);
	*ret = r.resp;
	return r.err;
}

static int get(struct h1_client *c, const char *base, const char *path, struct upstream_resp *ret)
{
	struct upstream_req rq = { .method = "GET", .path = path };
	return call(c, base, &rq, 5000, ret);
}

static int setup(void **state)
{
	signal(SIGPIPE, SIG_IGN);
	ep = epoll_create1(EPOLL_CLOEXEC);
	server_start(&plain, NULL);
	server_start(&tls, server_tls());
	base_plain = xasprintf("http://127.0.0.1:%d", plain.port);
	base_tls = xasprintf("https://127.0.0.1:%d", tls.port);
	return 0;
}

static int teardown(void **state)
{
	unlink(ca_path);
	free(base_plain);
	free(base_tls);
	close(ep);
	return 0;
}

/* --- tests ------------------------------------------------------------------------------------ */
static void test_keepalive_and_bodies(void **state)
{
	struct h1_client *c = h1_client_new(ep, TAG, NULL);
	struct upstream_resp r;
	int acc = atomic_load(&plain.accepted);
	for (int i = 0; i < 10; i++) {
		assert_int_equal(get(c, base_plain, i % 2 ? "/ok" : "/nope", &r), 0);
		assert_int_equal(r.status, i % 2 ? 200 : 404); /* an error status passes unchanged */
		assert_string_equal(r.content_type, "application/json");
		upstream_resp_release(&r);
	}
	assert_int_equal(atomic_load(&plain.accepted), acc + 1);
	assert_int_equal(h1_client_connections(c), 1);
	/* Bodies: a small one in the head's write, a large one after it. */
	size_t big = 200000;
	char *b = xmalloc(big);
	memset(b, 'z', big);
	struct upstream_req rq = { .method = "POST", .path = "/echo", .body = "{\"a\":1}", .len = 7 };
	assert_int_equal(call(c, base_plain, &rq, 5000, &r), 0);
	assert_int_equal(r.status, 201);
	assert_string_equal(buf_cstr(&r.body), "POST 7 {\"a\":1}");
	upstream_resp_release(&r);
	rq = (struct upstream_req){ .method = "PUT", .path = "/echo", .body = b, .len = big };
	assert_int_equal(call(c, base_plain, &rq, 5000, &r), 0);
	assert_string_equal(buf_cstr(&r.body), "PUT 200000 zzzzzzzzzzzzzzzz");
	upstream_resp_release(&r);
	free(b);
	/* Chunked, in pieces, with its Warning. */
	assert_int_equal(get(c, base_plain, "/chunked", &r), 0);
	assert_string_equal(buf_cstr(&r.body), "abcde");
	assert_string_equal(r.warning, "299 - \"w1\"");
	upstream_resp_release(&r);
	assert_int_equal(atomic_load(&plain.accepted), acc + 1);
	h1_client_free(c);
}

static void test_close_and_junk(void **state)
{
	struct h1_client *c = h1_client_new(ep, TAG, NULL);
	struct upstream_resp r;
	int acc = atomic_load(&plain.accepted);
	assert_int_equal(get(c, base_plain, "/close", &r), 0);
	assert_string_equal(buf_cstr(&r.body), "bye");
	upstream_resp_release(&r);
	assert_int_equal(h1_client_connections(c), 0); /* Connection: close is honoured */
	assert_int_equal(get(c, base_plain, "/eof", &r), 0);
	assert_string_equal(buf_cstr(&r.body), "hello");
	upstream_resp_release(&r);
	assert_int_equal(h1_client_connections(c), 0);
	assert_int_equal(get(c, base_plain, "/junk", &r), 0);
	assert_string_equal(buf_cstr(&r.body), "{}");
	upstream_resp_release(&r);
	assert_int_equal(h1_client_connections(c), 0); /* bytes after the answer: not reused */
	assert_int_equal(get(c, base_plain, "/garbage", &r), E_TIMEOUT);
	upstream_resp_release(&r);
	assert_int_equal(atomic_load(&plain.accepted), acc + 4);
	h1_client_free(c);
}

static void test_kept_connection_dies(void **state)
{
	struct h1_client *c = h1_client_new(ep, TAG, NULL);
	struct upstream_resp r;
	int acc = atomic_load(&plain.accepted);
	/* The next request on this connection is read and dropped: a GET goes once more, on a new
	 * connection. */
	assert_int_equal(get(c, base_plain, "/arm-drop", &r), 0);
	upstream_resp_release(&r);
	int req = atomic_load(&plain.requests);
	assert_int_equal(get(c, base_plain, "/ok", &r), 0);
	assert_int_equal(r.status, 200);
	upstream_resp_release(&r);
	assert_int_equal(atomic_load(&plain.requests), req + 2);
	assert_int_equal(atomic_load(&plain.accepted), acc + 2);
	/* A POST is never sent twice: its outcome is unknown. */
	assert_int_equal(get(c, base_plain, "/arm-drop", &r), 0);
	upstream_resp_release(&r);
	req = atomic_load(&plain.requests);
	struct upstream_req rq = { .method = "POST", .path = "/echo", .body = "{}", .len = 2 };
	assert_int_equal(call(c, base_plain, &rq, 5000, &r), E_TIMEOUT);
	upstream_resp_release(&r);
	assert_int_equal(atomic_load(&plain.requests), req + 1);
	/* Once only: dropped again on the new connection, the GET fails. */
	assert_int_equal(get(c, base_plain, "/ok", &r), 0);
	upstream_resp_release(&r);
	req = atomic_load(&plain.requests);
	assert_int_equal(get(c, base_plain, "/always-drop", &r), E_TIMEOUT);
	upstream_resp_release(&r);
	assert_int_equal(atomic_load(&plain.requests), req + 2);
	h1_client_free(c);
}

static void test_idle_close_noticed(void **state)
{
	struct h1_client *c = h1_client_new(ep, TAG, NULL);
	struct upstream_resp r;
	assert_int_equal(get(c, base_plain, "/close-later", &r), 0);
	upstream_resp_release(&r);
	assert_int_equal(h1_client_connections(c), 1);
	pump(c, mono_ms() + 400, NULL); /* the partition closes it idle after 100 ms */
	assert_int_equal(h1_client_connections(c), 0);
	int req = atomic_load(&plain.requests);
	struct upstream_req rq = { .method = "POST", .path = "/echo", .body = "{}", .len = 2 };
	assert_int_equal(call(c, base_plain, &rq, 5000, &r), 0);
	assert_int_equal(r.status, 201);
	upstream_resp_release(&r);
	assert_int_equal(atomic_load(&plain.requests), req + 1);
	h1_client_free(c);
}

static void test_deadline_and_refused(void **state)
{
	struct h1_client *c = h1_client_new(ep, TAG, NULL);
	struct upstream_resp r;
	struct upstream_req rq = { .method = "GET", .path = "/slow" };
	int64_t t0 = mono_ms();
	assert_int_equal(call(c, base_plain, &rq, 150, &r), E_TIMEOUT);
	int64_t took = mono_ms() - t0;
	assert_true(took >= 150 && took < 380);
	assert_int_equal(h1_client_connections(c), 0); /* a timed-out connection is not reused */
	upstream_resp_release(&r);
	char *dead = xasprintf("http://127.0.0.1:%d", test_free_port());
	t0 = mono_ms();
	assert_int_equal(get(c, dead, "/ok", &r), E_UNAVAILABLE);
	assert_true(mono_ms() - t0 < 500);
	upstream_resp_release(&r);
	assert_int_equal(get(c, "ftp://127.0.0.1:1", "/ok", &r), E_UNAVAILABLE);
	upstream_resp_release(&r);
	/* A name: localhost's addresses in turn (the partition listens on 127.0.0.1 only). */
	char *named = xasprintf("http://localhost:%d", plain.port);
	assert_int_equal(get(c, named, "/ok", &r), 0);
	assert_int_equal(r.status, 200);
	upstream_resp_release(&r);
	free(named);
	free(dead);
	h1_client_free(c);
}

static void test_tls(void **state)
{
	struct h1_client *c = h1_client_new(ep, TAG, ca_path);
	struct upstream_resp r;
	for (int i = 0; i < 5; i++) {
		assert_int_equal(get(c, base_tls, "/ok", &r), 0);
		assert_int_equal(r.status, 200);
		assert_string_equal(buf_cstr(&r.body), "{}");
		upstream_resp_release(&r);
	}
	assert_int_equal(atomic_load(&tls.accepted), 1);
	assert_int_equal(get(c, base_tls, "/chunked", &r), 0);
	assert_string_equal(buf_cstr(&r.body), "abcde");
	upstream_resp_release(&r);
	/* A new connection resumes the session. */
	assert_int_equal(get(c, base_tls, "/close", &r), 0);
	upstream_resp_release(&r);
	assert_int_equal(get(c, base_tls, "/ok", &r), 0);
	upstream_resp_release(&r);
	assert_int_equal(atomic_load(&tls.accepted), 2);
	assert_int_equal(atomic_load(&tls.resumed), 1);
	/* Kept connection dropped under a GET: once more, over TLS too. */
	assert_int_equal(get(c, base_tls, "/arm-drop", &r), 0);
	upstream_resp_release(&r);
	assert_int_equal(get(c, base_tls, "/ok", &r), 0);
	assert_int_equal(r.status, 200);
	upstream_resp_release(&r);
	h1_client_free(c);
	/* The name does not match the certificate, or the CA is not the one: nothing is sent. */
	c = h1_client_new(ep, TAG, ca_path);
	int req = atomic_load(&tls.requests);
	char *named = xasprintf("https://localhost:%d", tls.port);
	assert_int_equal(get(c, named, "/ok", &r), E_UNAVAILABLE);
	upstream_resp_release(&r);
	free(named);
	h1_client_free(c);
	c = h1_client_new(ep, TAG, NULL);
	assert_int_equal(get(c, base_tls, "/ok", &r), E_UNAVAILABLE);
	upstream_resp_release(&r);
	h1_client_free(c);
	assert_int_equal(atomic_load(&tls.requests), req);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_keepalive_and_bodies),
		cmocka_unit_test(test_close_and_junk),
		cmocka_unit_test(test_kept_connection_dies),
		cmocka_unit_test(test_idle_close_noticed),
		cmocka_unit_test(test_deadline_and_refused),
		cmocka_unit_test(test_tls),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
