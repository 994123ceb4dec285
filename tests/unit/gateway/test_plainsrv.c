/* The plain-request loop driving an HTTP server in external mode, the way the gateway runs:
 * a fast handler forwarding through plain_forward with a deferred reply (answered on the
 * loop), one whose forward fails at once inside the handler (a dead partition: the reply is
 * finished before the handler returns), a request passed to a worker (resumed from another
 * thread), many at once, and stopping with a forward in flight (it is answered first). */
#include <arpa/inet.h>
#include <curl/curl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <cmocka.h>
#include "../support/testnet.h"
#include "gwtest.h"
#include "gw.h"
#include "ursa/errors.h"
#include "ursa/http.h"
#include "ursa/timeutil.h"
#include "ursa/xalloc.h"

static void on_partition(void *ud, struct http_request *req, struct http_reply *reply)
{
	if (strcmp(http_path(req), "/slow") == 0)
		usleep(800 * 1000);
	struct buf b = BUF_INIT;
	buf_addf(&b, "partition saw %s", http_path(req));
	http_reply_set(reply, 200, "text/plain", &b);
}

static struct http_server *partition_srv, *front;
static struct partition *good, *dead;
static int front_port;

/* --- the front: what gateway.c does, in small ---------------------------------------------- */
struct fwd {
	struct http_deferred *d;
	struct http_reply *reply;
	struct upstream_req rq;
};

static void on_forwarded(void *ud, int err, struct upstream_resp *resp)
{
	struct fwd *f = ud;
	struct buf b = BUF_INIT;
	if (err) {
		buf_addf(&b, "error %d", err);
		http_reply_set(f->reply, err == E_UNAVAILABLE ? 503 : 504, "text/plain", &b);
	} else {
		http_reply_set(f->reply, resp->status, "text/plain", &resp->body);
	}
	struct http_deferred *d = f->d;
	free(f);
	http_deferred_finish(d);
}

static bool on_fast(void *ud, struct http_request *req, struct http_reply *reply)
{
	const char *path = http_path(req);
	if (strcmp(path, "/worker") == 0)
		return false;
	struct fwd *f = xcalloc(1, sizeof(*f));
	f->reply = reply;
	f->rq = (struct upstream_req){ .method = "GET", .path = strcmp(path, "/dead") == 0 ? "/x" : path,
				       .timeout_ms = 5000 };
	f->d = http_reply_defer(reply);
	plain_forward(strcmp(path, "/dead") == 0 ? dead : good, &f->rq, on_forwarded, f);
	return true;
}

static void on_worker(void *ud, struct http_request *req, struct http_reply *reply)
{
	usleep(20 * 1000);
	struct buf b = BUF_INIT;
	buf_adds(&b, "worker");
	http_reply_set(reply, 200, "text/plain", &b);
}

static int setup(void **state)
{
	signal(SIGPIPE, SIG_IGN);
	curl_global_init(CURL_GLOBAL_DEFAULT);
	upstream_init(NULL);
	char *err = NULL;
	int pport = test_free_port();
	char *listen = xasprintf("127.0.0.1:%d", pport);
	struct http_server_options o = { .listen = listen, .threads = 4 };
	partition_srv = http_server_start(&o, on_partition, NULL, &err);
	assert_non_null(partition_srv);
	free(listen);
	front_port = test_free_port();
	listen = xasprintf("127.0.0.1:%d", front_port);
	struct http_server_options fo = { .listen = listen, .threads = 2, .fast = on_fast, .external = true,
					  .wake = plain_wake };
	front = http_server_start(&fo, on_worker, NULL, &err);
	assert_non_null(front);
	free(listen);
	assert_int_equal(plain_start(front), 0);
	char *ep = xasprintf("\"http://127.0.0.1:%d\"", pport);
	char *deadep = xasprintf("\"http://127.0.0.1:%d\"", test_free_port());
	good = test_partition("tp", "tp-good", ep);
	dead = test_partition("tp", "tp-dead", deadep);
	free(ep);
	free(deadep);
	return 0;
}

static int teardown(void **state)
{
	http_server_stop(partition_srv);
	partition_unref(good);
	partition_unref(dead);
	return 0;
}

static long get(const char *path, struct buf *ret)
{
	CURL *c = curl_easy_init();
	char *url = xasprintf("http://127.0.0.1:%d%s", front_port, path);
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, test_body_to_buf);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, ret);
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 5000L);
	long code = 0;
	if (curl_easy_perform(c) == CURLE_OK)
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
	curl_easy_cleanup(c);
	free(url);
	return code;
}

static void expect(const char *path, long status, const char *body)
{
	struct buf b = BUF_INIT;
	assert_int_equal(get(path, &b), status);
	assert_string_equal(buf_cstr(&b), body);
	buf_release(&b);
}

static void test_forward(void **state)
{
	expect("/a", 200, "partition saw /a");
	expect("/b", 200, "partition saw /b");
}

/* The forward fails inside the handler: the reply is finished while the server runs, and must
 * still go out at once (nothing else wakes the loop). */
static void test_fails_inside_handler(void **state)
{
	char *want = xasprintf("error %d", E_UNAVAILABLE);
	for (int i = 0; i < 2; i++) { /* refused, then the open circuit */
		int64_t t0 = mono_ms();
		expect("/dead", 503, want);
		assert_true(mono_ms() - t0 < 1000);
	}
	assert_true(atomic_load(&dead->down));
	free(want);
}

static void test_worker_resumes(void **state)
{
	expect("/worker", 200, "worker");
}

static void *client(void *arg)
{
	struct buf b = BUF_INIT;
	long code = get((const char *)arg, &b);
	buf_release(&b);
	return (void *)(intptr_t)code;
}

static void test_many_at_once(void **state)
{
	pthread_t t[16];
	for (int i = 0; i < 16; i++)
		pthread_create(&t[i], NULL, client, i % 4 == 3 ? "/worker" : "/c");
	for (int i = 0; i < 16; i++) {
		void *code;
		pthread_join(t[i], &code);
		assert_int_equal((intptr_t)code, 200);
	}
}

static void test_stop_answers_in_flight(void **state)
{
	pthread_t t;
	pthread_create(&t, NULL, client, "/slow");
	usleep(200 * 1000);
	plain_stop();
	http_server_stop(front);
	void *code;
	pthread_join(t, &code);
	assert_int_equal((intptr_t)code, 200);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_forward),
		cmocka_unit_test(test_fails_inside_handler),
		cmocka_unit_test(test_worker_resumes),
		cmocka_unit_test(test_many_at_once),
		cmocka_unit_test(test_stop_answers_in_flight),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
