/* The HTTP server's request paths on loopback: the fast handler answering on the epoll thread,
 * passing a request (with its data pointer) to the worker pool, and deferring its reply to be
 * finished by another thread; a worker handler deferring too; a client that leaves while its
 * reply is deferred; a deferred request run again on a worker (http_deferred_rerun, the fair
 * queue's turn) and told when its reply went (http_request_on_complete); bodies over the cap;
 * and stopping while a deferred reply is pending (run under ASan by tests/run.sh). */
#include <arpa/inet.h>
#include <curl/curl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>
#include <cmocka.h>
#include "../support/testnet.h"
#include "ursa/http.h"
#include "ursa/timeutil.h"
#include "ursa/xalloc.h"

static struct http_server *srv;
static int port;
static atomic_int finished; /* deferred replies finished */
static atomic_int fast_calls, worker_calls;
static int marker;

struct later {
	struct http_deferred *d;
	struct http_request *req;
	struct http_reply *reply;
	int delay_ms;
};

static void *finish_later(void *arg)
{
	struct later *l = arg;
	usleep((useconds_t)l->delay_ms * 1000);
	size_t len;
	const char *body = http_body(l->req, &len);
	struct buf b = BUF_INIT;
	buf_addf(&b, "deferred %s %.*s", http_method(l->req), (int)len, body);
	http_reply_header(l->reply, "X-Later", "1");
	http_reply_set(l->reply, 202, "text/plain", &b);
	/* counted before the reply can reach the client, which checks the count once it has it */
	atomic_fetch_add(&finished, 1);
	http_deferred_finish(l->d);
	free(l);
	return NULL;
}

static void defer(struct http_request *req, struct http_reply *reply, int delay_ms)
{
	struct later *l = xcalloc(1, sizeof(*l));
	l->req = req;
	l->reply = reply;
	l->delay_ms = delay_ms;
	l->d = http_reply_defer(reply); /* before the other thread may touch anything */
	pthread_t t;
	pthread_create(&t, NULL, finish_later, l);
	pthread_detach(t);
}

static void text(struct http_reply *reply, int status, const char *s)
{
	struct buf b = BUF_INIT;
	buf_adds(&b, s);
	http_reply_set(reply, status, "text/plain", &b);
}

static bool on_fast(void *ud, struct http_request *req, struct http_reply *reply)
{
	atomic_fetch_add(&fast_calls, 1);
	const char *path = http_path(req);
	if (strcmp(path, "/fast") == 0) {
		text(reply, 200, "fast");
		return true;
	}
	if (strcmp(path, "/defer") == 0) {
		defer(req, reply, 100);
		return true;
	}
	if (strcmp(path, "/defer-slow") == 0) {
		defer(req, reply, 400);
		return true;
	}
	if (strcmp(path, "/worker") == 0)
		http_request_set_data(req, &marker);
	return false;
}

static int rerun_marker;
static atomic_int completed;

static void *rerun_later(void *arg)
{
	usleep(50 * 1000);
	http_deferred_rerun(arg);
	return NULL;
}

static void on_complete(void *ud)
{
	atomic_fetch_add((atomic_int *)ud, 1);
}

static void on_worker(void *ud, struct http_request *req, struct http_reply *reply)
{
	atomic_fetch_add(&worker_calls, 1);
	const char *path = http_path(req);
	if (strcmp(path, "/worker-rerun") == 0) {
		if (http_request_data(req) != &rerun_marker) { /* first run: wait for a turn */
			http_request_set_data(req, &rerun_marker);
			pthread_t t;
			pthread_create(&t, NULL, rerun_later, http_reply_defer(reply));
			pthread_detach(t);
			return;
		}
		text(reply, 200, "rerun");
		assert_true(http_reply_is_plain(reply));
		http_request_on_complete(req, on_complete, &completed);
		return;
	}
	if (strcmp(path, "/worker-defer") == 0) {
		defer(req, reply, 50);
		usleep(150 * 1000); /* the finish comes first: the worker's return must still be safe */
		return;
	}
	text(reply, 200, http_request_data(req) == &marker ? "worker with data" : "worker");
}

static void start(void)
{
	port = test_free_port();
	char *listen = xasprintf("127.0.0.1:%d", port);
	char *err = NULL;
	struct http_server_options o = { .listen = listen, .threads = 2, .max_body = 1024, .fast = on_fast };
	srv = http_server_start(&o, on_worker, NULL, &err);
	assert_non_null(srv);
	free(listen);
}

static int setup(void **state)
{
	curl_global_init(CURL_GLOBAL_DEFAULT);
	start();
	return 0;
}

static int teardown(void **state)
{
	http_server_stop(srv);
	return 0;
}

static size_t on_hdr(char *data, size_t size, size_t n, void *ud)
{
	if (size * n >= 9 && strncasecmp(data, "X-Later: ", 9) == 0)
		*(bool *)ud = true;
	return size * n;
}

/* Status of METHOD path (body data), the reply body in *ret (release it). */
static long request(const char *method, const char *path, const char *data, struct buf *ret, bool *ret_later)
{
	CURL *c = curl_easy_init();
	char *url = xasprintf("http://127.0.0.1:%d%s", port, path);
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
	if (data)
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, data);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, test_body_to_buf);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, ret);
	curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_hdr);
	curl_easy_setopt(c, CURLOPT_HEADERDATA, ret_later);
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 5000L);
	long code = 0;
	if (curl_easy_perform(c) == CURLE_OK)
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
	curl_easy_cleanup(c);
	free(url);
	return code;
}

static void expect(const char *method, const char *path, const char *data, long status, const char *body)
{
	struct buf b = BUF_INIT;
	bool later = false;
	assert_int_equal(request(method, path, data, &b, &later), status);
	assert_string_equal(buf_cstr(&b), body);
	buf_release(&b);
}

static void test_fast(void **state)
{
	int w = atomic_load(&worker_calls);
	expect("GET", "/fast", NULL, 200, "fast");
	assert_int_equal(atomic_load(&worker_calls), w); /* answered on the epoll thread */
}

static void test_to_worker_with_data(void **state)
{
	expect("GET", "/worker", NULL, 200, "worker with data");
	expect("GET", "/other", NULL, 200, "worker");
}

static void test_deferred(void **state)
{
	int f = atomic_load(&finished);
	int64_t t0 = mono_ms();
	struct buf b = BUF_INIT;
	bool later = false;
	assert_int_equal(request("POST", "/defer", "{\"x\":1}", &b, &later), 202);
	assert_string_equal(buf_cstr(&b), "deferred POST {\"x\":1}");
	assert_true(later); /* headers set by the finishing thread */
	assert_true(mono_ms() - t0 >= 100);
	assert_int_equal(atomic_load(&finished), f + 1);
	buf_release(&b);
}

static void test_worker_deferred(void **state)
{
	expect("PUT", "/worker-defer", "body", 202, "deferred PUT body");
}

/* The handler runs twice: deferred on its first run, run again by another thread's rerun; the
 * completion callback runs once the reply went. */
static void test_worker_rerun(void **state)
{
	int w = atomic_load(&worker_calls), c = atomic_load(&completed);
	int64_t t0 = mono_ms();
	expect("GET", "/worker-rerun", NULL, 200, "rerun");
	assert_true(mono_ms() - t0 >= 50);
	assert_int_equal(atomic_load(&worker_calls), w + 2);
	for (int i = 0; i < 100 && atomic_load(&completed) == c; i++)
		usleep(10 * 1000);
	assert_int_equal(atomic_load(&completed), c + 1);
}

static void test_body_over_cap(void **state)
{
	int fast = atomic_load(&fast_calls);
	char *big = xcalloc(1, 2048);
	memset(big, 'a', 2047);
	struct buf b = BUF_INIT;
	bool later = false;
	assert_int_equal(request("POST", "/defer", big, &b, &later), 413);
	assert_int_equal(atomic_load(&fast_calls), fast); /* no handler saw it */
	buf_release(&b);
	free(big);
}

/* A client that leaves while its reply is deferred: finishing later is harmless and the
 * server keeps serving. */
static void test_client_leaves(void **state)
{
	int f = atomic_load(&finished);
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	const char rq[] = "GET /defer HTTP/1.1\r\nHost: x\r\n\r\n";
	assert_int_equal(write(fd, rq, sizeof(rq) - 1), (ssize_t)(sizeof(rq) - 1));
	usleep(20 * 1000);
	close(fd);
	for (int i = 0; i < 100 && atomic_load(&finished) == f; i++)
		usleep(10 * 1000);
	assert_int_equal(atomic_load(&finished), f + 1);
	expect("GET", "/fast", NULL, 200, "fast");
}

static void *slow_client(void *arg)
{
	struct buf b = BUF_INIT;
	bool later = false;
	*(long *)arg = request("GET", "/defer-slow", NULL, &b, &later);
	buf_release(&b);
	return NULL;
}

/* Stopping waits for a deferred reply (libmicrohttpd cannot stop with a suspended
 * connection); the client gets its answer. */
static void test_stop_with_deferred(void **state)
{
	long code = 0;
	pthread_t t;
	int f = atomic_load(&finished);
	pthread_create(&t, NULL, slow_client, &code);
	for (int i = 0; i < 100 && atomic_load(&fast_calls) == 0; i++)
		usleep(10 * 1000);
	usleep(100 * 1000);
	http_server_stop(srv);
	assert_int_equal(atomic_load(&finished), f + 1);
	pthread_join(t, NULL);
	assert_int_equal(code, 202);
	start(); /* for teardown */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fast),
		cmocka_unit_test(test_to_worker_with_data),
		cmocka_unit_test(test_deferred),
		cmocka_unit_test(test_worker_deferred),
		cmocka_unit_test(test_worker_rerun),
		cmocka_unit_test(test_body_over_cap),
		cmocka_unit_test(test_client_leaves),
		cmocka_unit_test(test_stop_with_deferred),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
