/* The plain-request loop (plain.c) against a real HTTP server on loopback standing in for a
 * partition: relayed status, content type and body (fixed length, chunked, large), the request
 * as the partition sees it, keep-alive reuse, a kept connection the partition closed, a slow
 * partition (E_TIMEOUT at the request's timeout), a refused endpoint (the next one, then an
 * open circuit), an endpoint that never accepts (1 s connect limit), the response size cap, and
 * quiescing; a moving tenant's 429 (its X-Ursa-Tenant-Moving kept) and parked requests (woken by
 * their due time, by plain_unpark of their key, cancelled by quiescing). Run under ASan by
 * tests/run.sh. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>
#include "../support/testnet.h"
#include "gwtest.h"
#include "gw.h"
#include "ursa/errors.h"
#include "ursa/http.h"
#include "ursa/timeutil.h"
#include "ursa/xalloc.h"

/* --- the partition ------------------------------------------------------------------------ */
struct chunks {
	int left;
};

static int chunk_fill(void *ud, struct buf *out, size_t max)
{
	struct chunks *c = ud;
	if (!c->left)
		return -1;
	buf_addf(out, "{\"part\":%d}\n", c->left--);
	return 1;
}

/* Over UPSTREAM_MAX_RESPONSE in chunks, never held whole. */
struct huge {
	size_t left;
};

static int huge_fill(void *ud, struct buf *out, size_t max)
{
	struct huge *h = ud;
	if (!h->left)
		return -1;
	size_t n = h->left < max ? h->left : max;
	if (n > (1u << 20))
		n = 1u << 20;
	buf_grow(out, n);
	memset(out->ptr + out->len, 'x', n);
	out->len += n;
	out->ptr[out->len] = '\0';
	h->left -= n;
	return 1;
}

static void chunk_done(void *ud)
{
	free(ud);
}

static const char *hdr(struct http_request *req, const char *name)
{
	const char *v = http_header(req, name);
	return v ? v : "";
}

static void on_partition(void *ud, struct http_request *req, struct http_reply *reply)
{
	const char *path = http_path(req);
	struct buf b = BUF_INIT;
	if (strcmp(path, "/ok") == 0) {
		buf_adds(&b, "{\"kind\":\"Pod\"}");
		http_reply_set(reply, 200, "application/json", &b);
	} else if (strcmp(path, "/echo") == 0) {
		size_t len;
		const char *body = http_body(req, &len);
		const char *q = http_query_string(req);
		buf_addf(&b, "%s|%s|%s|%s|%s|%s|%s|%.*s", http_method(req), q ? q : "", hdr(req, "Content-Type"),
			 hdr(req, "Authorization"), hdr(req, "X-Forwarded-For"), hdr(req, "Accept"), hdr(req, "X-Bad"),
			 (int)len, body);
		http_reply_set(reply, 201, "text/plain", &b);
	} else if (strcmp(path, "/chunked") == 0) {
		struct chunks *c = xcalloc(1, sizeof(*c));
		c->left = 3;
		http_reply_stream(reply, 200, "application/json", chunk_fill, chunk_done, c);
	} else if (strcmp(path, "/huge") == 0) {
		struct huge *h = xcalloc(1, sizeof(*h));
		h->left = UPSTREAM_MAX_RESPONSE + (2u << 20);
		http_reply_stream(reply, 200, "application/json", huge_fill, chunk_done, h);
	} else if (strcmp(path, "/big") == 0) {
		for (int i = 0; i < 30000; i++)
			buf_addf(&b, "%09d\n", i);
		http_reply_set(reply, 200, "application/json", &b);
	} else if (strcmp(path, "/moving") == 0) {
		buf_adds(&b, "{\"kind\":\"Status\",\"code\":429}");
		http_reply_header(reply, "Retry-After", "1");
		http_reply_header(reply, "x-ursa-tenant-moving", "acme");
		http_reply_set(reply, 429, "application/json", &b);
	} else if (strcmp(path, "/slow") == 0) {
		usleep(1500 * 1000);
		http_reply_set(reply, 200, "application/json", NULL);
	} else {
		buf_adds(&b, "{\"kind\":\"Status\",\"code\":404}");
		http_reply_set(reply, 404, "application/json", &b);
	}
}

static struct http_server *srv;
static struct partition *good, *dead, *failover, *blackhole, *byname;
static int bh_fd, bh_clients[8];

/* An endpoint that never completes a connection: a listener with a full accept queue (never
 * accepted) drops further SYNs. */
static struct partition *blackhole_partition(void)
{
	bh_fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t alen = sizeof(a);
	assert_int_equal(bind(bh_fd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(listen(bh_fd, 0), 0);
	getsockname(bh_fd, (struct sockaddr *)&a, &alen);
	for (int i = 0; i < 8; i++) {
		bh_clients[i] = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
		connect(bh_clients[i], (struct sockaddr *)&a, sizeof(a));
	}
	char *ep = xasprintf("\"http://127.0.0.1:%d\"", ntohs(a.sin_port));
	struct partition *p = test_partition("tp", "tp-blackhole", ep);
	free(ep);
	return p;
}

static int setup(void **state)
{
	signal(SIGPIPE, SIG_IGN);
	upstream_init(NULL);
	assert_int_equal(plain_start(NULL), 0);
	int port = test_free_port();
	char *listen = xasprintf("127.0.0.1:%d", port);
	char *err = NULL;
	/* Idle keep-alive connections are closed after 1 s: the loop must notice or recover. */
	struct http_server_options o = { .listen = listen, .threads = 4, .conn_timeout_s = 1 };
	srv = http_server_start(&o, on_partition, NULL, &err);
	assert_non_null(srv);
	free(listen);
	char *ep = xasprintf("\"http://127.0.0.1:%d\"", port);
	char *deadep = xasprintf("\"http://127.0.0.1:%d\"", test_free_port());
	char *both = xasprintf("%s,%s", deadep, ep);
	blackhole = blackhole_partition();
	char *named = xasprintf("\"http://localhost:%d\"", port);
	byname = test_partition("tp", "tp-byname", named);
	free(named);
	good = test_partition("tp", "tp-good", ep);
	dead = test_partition("tp", "tp-dead", deadep);
	failover = test_partition("tp", "tp-failover", both);
	free(ep);
	free(deadep);
	free(both);
	return 0;
}

static int teardown(void **state)
{
	plain_stop();
	http_server_stop(srv);
	partition_unref(good);
	partition_unref(dead);
	partition_unref(failover);
	partition_unref(blackhole);
	partition_unref(byname);
	for (int i = 0; i < 8; i++)
		close(bh_clients[i]);
	close(bh_fd);
	return 0;
}

/* --- a synchronous call ------------------------------------------------------------------- */
struct result {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool done;
	int err;
	struct upstream_resp resp;
};

static void on_done(void *ud, int err, struct upstream_resp *resp)
{
	struct result *r = ud;
	pthread_mutex_lock(&r->lock);
	r->err = err;
	r->resp.status = resp->status;
	r->resp.content_type = resp->content_type;
	resp->content_type = NULL;
	r->resp.moving = resp->moving;
	resp->moving = NULL;
	r->resp.body = resp->body;
	buf_init(&resp->body);
	r->done = true;
	pthread_cond_signal(&r->cond);
	pthread_mutex_unlock(&r->lock);
}

static int call(struct partition *p, const struct upstream_req *rq, struct upstream_resp *ret)
{
	struct result r = { .lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER };
	plain_forward(p, rq, on_done, &r);
	pthread_mutex_lock(&r.lock);
	while (!r.done)
		pthread_cond_wait(&r.cond, &r.lock);
	pthread_mutex_unlock(&r.lock);
	*ret = r.resp;
	return r.err;
}

static int get(struct partition *p, const char *path, struct upstream_resp *ret)
{
	struct upstream_req rq = { .method = "GET", .path = path, .timeout_ms = 5000 };
	return call(p, &rq, ret);
}

/* --- tests -------------------------------------------------------------------------------- */
static void test_ok_and_keepalive(void **state)
{
	struct upstream_resp r = { 0 };
	assert_int_equal(get(good, "/ok", &r), 0);
	assert_int_equal(r.status, 200);
	assert_string_equal(r.content_type, "application/json");
	assert_string_equal(buf_cstr(&r.body), "{\"kind\":\"Pod\"}");
	upstream_resp_release(&r);
	long made = upstream_connections_made();
	for (int i = 0; i < 20; i++) {
		assert_int_equal(get(good, "/nope", &r), 0);
		assert_int_equal(r.status, 404);
		upstream_resp_release(&r);
	}
	assert_int_equal(upstream_connections_made(), made); /* the kept connection served them all */
	for (int i = 0; i < 100 && plain_in_flight(); i++)
		usleep(1000); /* counted down just after the callback returns */
	assert_int_equal(plain_in_flight(), 0);
}

static void test_request_as_sent(void **state)
{
	const char body[] = "{\"a\":1}";
	struct upstream_req rq = { .method = "PATCH", .path = "/echo?x=1&y=%2F", .authorization = "Bearer t",
				   .content_type = "application/merge-patch+json", .forwarded_for = "10.0.0.1",
				   .body = body, .len = sizeof(body) - 1, .timeout_ms = 5000 };
	struct upstream_resp r = { 0 };
	assert_int_equal(call(good, &rq, &r), 0);
	assert_int_equal(r.status, 201);
	assert_string_equal(r.content_type, "text/plain");
	assert_string_equal(buf_cstr(&r.body),
			    "PATCH|x=1&y=%2F|application/merge-patch+json|Bearer t|10.0.0.1|application/json||{\"a\":1}");
	upstream_resp_release(&r);
	/* A header value with a line break is left out, never sent as a second header. */
	rq = (struct upstream_req){ .method = "DELETE", .path = "/echo", .authorization = "Bearer t\r\nX-Bad: 1",
				    .timeout_ms = 5000 };
	assert_int_equal(call(good, &rq, &r), 0);
	assert_string_equal(buf_cstr(&r.body), "DELETE||application/json|||application/json||");
	upstream_resp_release(&r);
}

static void test_chunked_and_big(void **state)
{
	struct upstream_resp r = { 0 };
	assert_int_equal(get(good, "/chunked", &r), 0);
	assert_int_equal(r.status, 200);
	assert_string_equal(buf_cstr(&r.body), "{\"part\":3}\n{\"part\":2}\n{\"part\":1}\n");
	upstream_resp_release(&r);
	assert_int_equal(get(good, "/big", &r), 0);
	assert_int_equal(r.body.len, 300000);
	assert_memory_equal(r.body.ptr + 299990, "000029999\n", 10);
	upstream_resp_release(&r);
	/* HEAD: headers only, the connection stays usable. */
	struct upstream_req rq = { .method = "HEAD", .path = "/big", .timeout_ms = 5000 };
	assert_int_equal(call(good, &rq, &r), 0);
	assert_int_equal(r.status, 200);
	assert_int_equal(r.body.len, 0);
	upstream_resp_release(&r);
	assert_int_equal(get(good, "/ok", &r), 0);
	assert_int_equal(r.status, 200);
	upstream_resp_release(&r);
}

static int64_t cpu_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void test_partition_closed_kept_connection(void **state)
{
	struct upstream_resp r = { 0 };
	assert_int_equal(get(good, "/ok", &r), 0);
	upstream_resp_release(&r);
	int64_t cpu0 = cpu_ms();
	usleep(2500 * 1000); /* past the partition's 1 s idle timeout: it closes the connection */
	/* The close is noticed once, not over and over (a loop spinning on it would use ~2.5 s). */
	assert_true(cpu_ms() - cpu0 < 500);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(get(good, "/ok", &r), 0);
		assert_int_equal(r.status, 200);
		upstream_resp_release(&r);
	}
	/* A request with a body on a kept connection the partition closed goes out whole once. */
	usleep(2500 * 1000);
	const char body[] = "{\"b\":2}";
	struct upstream_req rq = { .method = "POST", .path = "/echo", .body = body, .len = sizeof(body) - 1,
				   .timeout_ms = 5000 };
	assert_int_equal(call(good, &rq, &r), 0);
	assert_int_equal(r.status, 201);
	assert_string_equal(buf_cstr(&r.body), "POST||application/json|||application/json||{\"b\":2}");
	upstream_resp_release(&r);
}

static void test_response_cap(void **state)
{
	struct upstream_resp r = { 0 };
	assert_int_equal(get(good, "/huge", &r), E_TIMEOUT);
	assert_false(atomic_load(&good->down));
	upstream_resp_release(&r);
	assert_int_equal(get(good, "/ok", &r), 0);
	assert_int_equal(r.status, 200);
	upstream_resp_release(&r);
}

static void test_connect_limit(void **state)
{
	struct upstream_resp r = { 0 };
	int64_t t0 = mono_ms();
	assert_int_equal(get(blackhole, "/ok", &r), E_UNAVAILABLE);
	int64_t took = mono_ms() - t0;
	assert_true(took >= 900 && took < 2000);
	assert_true(atomic_load(&blackhole->down));
	upstream_resp_release(&r);
}

static void test_slow_partition_times_out(void **state)
{
	struct upstream_req rq = { .method = "GET", .path = "/slow", .timeout_ms = 300 };
	struct upstream_resp r = { 0 };
	int64_t t0 = mono_ms();
	assert_int_equal(call(good, &rq, &r), E_TIMEOUT);
	int64_t took = mono_ms() - t0;
	assert_true(took >= 300 && took < 1400);
	assert_false(atomic_load(&good->down)); /* a slow partition is not a down one */
	upstream_resp_release(&r);
	usleep(1500 * 1000); /* let the partition's worker finish the slow request */
}

static void test_refused_endpoints(void **state)
{
	struct upstream_resp r = { 0 };
	assert_int_equal(get(failover, "/ok", &r), 0);
	assert_int_equal(r.status, 200);
	upstream_resp_release(&r);
	assert_int_equal(atomic_load(&failover->next_ep), 1); /* the one that answered goes first next time */
	assert_false(atomic_load(&failover->down));
	int64_t t0 = mono_ms();
	assert_int_equal(get(dead, "/ok", &r), E_UNAVAILABLE);
	assert_true(mono_ms() - t0 < 1000);
	assert_true(atomic_load(&dead->down)); /* the circuit opened */
	upstream_resp_release(&r);
}

/* An endpoint given by name: libcurl's resolver sockets come and go beside the connections'. */
static void test_endpoint_by_name(void **state)
{
	struct upstream_resp r = { 0 };
	for (int i = 0; i < 20; i++) {
		assert_int_equal(get(i % 2 ? byname : good, "/ok", &r), 0);
		assert_int_equal(r.status, 200);
		upstream_resp_release(&r);
	}
}

/* --- parking ------------------------------------------------------------------------------- */
struct parked {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	const char *key;
	int64_t wait_ms;       /* parked for this long from the done callback */
	int64_t parked_at, woke_at;
	char *moving;          /* the answer's X-Ursa-Tenant-Moving */
	int status;
	bool woke, cancelled, is_parked;
};

static void on_unparked(void *ud, bool cancelled)
{
	struct parked *p = ud;
	pthread_mutex_lock(&p->lock);
	p->woke = true;
	p->cancelled = cancelled;
	p->woke_at = mono_ms();
	pthread_cond_broadcast(&p->cond);
	pthread_mutex_unlock(&p->lock);
}

/* The done callback (loop thread) parks the request. */
static void on_done_park(void *ud, int err, struct upstream_resp *resp)
{
	struct parked *p = ud;
	pthread_mutex_lock(&p->lock);
	p->status = err ? -err : resp->status;
	p->moving = resp->moving;
	resp->moving = NULL;
	p->parked_at = mono_ms();
	plain_park(p->key, p->parked_at + p->wait_ms, on_unparked, p);
	p->is_parked = true;
	pthread_cond_broadcast(&p->cond);
	pthread_mutex_unlock(&p->lock);
}

static void park_one(struct parked *p, const char *key, int64_t wait_ms)
{
	*p = (struct parked){ .lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER, .key = key,
			      .wait_ms = wait_ms };
	struct upstream_req rq = { .method = "POST", .path = "/moving", .body = "{}", .len = 2, .timeout_ms = 5000 };
	plain_forward(good, &rq, on_done_park, p);
	pthread_mutex_lock(&p->lock);
	while (!p->is_parked)
		pthread_cond_wait(&p->cond, &p->lock);
	pthread_mutex_unlock(&p->lock);
}

static void wait_woken(struct parked *p)
{
	pthread_mutex_lock(&p->lock);
	while (!p->woke)
		pthread_cond_wait(&p->cond, &p->lock);
	pthread_mutex_unlock(&p->lock);
}

static void test_moving_answer_and_parking(void **state)
{
	struct parked a, b, c;
	park_one(&a, "acme", 10000);
	assert_int_equal(a.status, 429);
	assert_non_null(a.moving);
	assert_string_equal(a.moving, "acme");
	park_one(&b, "other", 150);
	park_one(&c, "acme", 10000);
	assert_int_equal(plain_parked(), 3);
	/* b wakes at its due time; a and c stay parked */
	wait_woken(&b);
	assert_false(b.cancelled);
	if (b.woke_at - b.parked_at < 140 || b.woke_at - b.parked_at > 2000)
		fail_msg("woke after %lld ms, want ~150", (long long)(b.woke_at - b.parked_at));
	assert_false(a.woke);
	plain_unpark("nobody");
	usleep(50 * 1000);
	assert_false(a.woke);
	/* their key wakes both long before their due time */
	plain_unpark("acme");
	wait_woken(&a);
	wait_woken(&c);
	assert_false(a.cancelled);
	if (a.woke_at - a.parked_at > 2000)
		fail_msg("unparked after %lld ms", (long long)(a.woke_at - a.parked_at));
	assert_int_equal(plain_parked(), 0);
	free(a.moving);
	free(b.moving);
	free(c.moving);
	/* a plain answer has no moving tenant */
	struct upstream_resp r = { 0 };
	assert_int_equal(get(good, "/ok", &r), 0);
	assert_null(r.moving);
	upstream_resp_release(&r);
}

static void test_quiesce_refuses(void **state)
{
	struct parked p;
	park_one(&p, "acme", 60000);
	plain_quiesce(0);
	wait_woken(&p); /* a parked request is answered, not sent again */
	assert_true(p.cancelled);
	free(p.moving);
	plain_quiesce(0);
	struct upstream_resp r = { 0 };
	assert_int_equal(get(good, "/ok", &r), E_UNAVAILABLE);
	upstream_resp_release(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ok_and_keepalive),
		cmocka_unit_test(test_request_as_sent),
		cmocka_unit_test(test_chunked_and_big),
		cmocka_unit_test(test_partition_closed_kept_connection),
		cmocka_unit_test(test_slow_partition_times_out),
		cmocka_unit_test(test_response_cap),
		cmocka_unit_test(test_connect_limit),
		cmocka_unit_test(test_refused_endpoints),
		cmocka_unit_test(test_endpoint_by_name),
		cmocka_unit_test(test_moving_answer_and_parking),
		cmocka_unit_test(test_quiesce_refuses),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
