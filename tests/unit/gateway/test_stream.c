/* The stream loop end to end on loopback, without etcd: a "partition" HTTP server that streams
 * lines the test pushes, a front HTTP server whose handler calls upstream_stream or
 * upstream_merged_watch, and a raw-socket client. Covers pass-through, relayed refusals, a
 * refused endpoint (next endpoint, then an open circuit and 503), the header timeout (504), a
 * departing client freeing its upstream, merged events with composite resourceVersions, a
 * merged watch ending with one partition, and stopping with streams open (run under ASan). */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>
#include <cmocka.h>
#include "../support/testnet.h"
#include "gwtest.h"
#include "gw.h"
#include "ursa/http.h"
#include "ursa/xalloc.h"

/* --- the partition: /a and /b stream what the test pushes; /forbidden 403; /slow sleeps --- */
struct upconn {
	struct buf out;  /* under lock */
	bool end;
	struct http_stream *hs;
	int slot;
};
static pthread_mutex_t up_lock = PTHREAD_MUTEX_INITIALIZER;
static struct upconn *cur[2]; /* the newest stream of /a and /b */
static int gen[2];

static int up_fill(void *ud, struct buf *out, size_t max)
{
	struct upconn *u = ud;
	pthread_mutex_lock(&up_lock);
	int r = u->out.len ? 1 : u->end ? -1 : 0;
	if (u->out.len) {
		buf_add(out, u->out.ptr, u->out.len);
		buf_reset(&u->out);
	}
	pthread_mutex_unlock(&up_lock);
	return r;
}

static void up_done(void *ud)
{
	struct upconn *u = ud;
	pthread_mutex_lock(&up_lock);
	if (cur[u->slot] == u)
		cur[u->slot] = NULL;

	pthread_mutex_unlock(&up_lock);
	buf_release(&u->out);
	free(u);
}

static void up_push(int i, const char *s, bool end)
{
	pthread_mutex_lock(&up_lock);
	struct upconn *u = cur[i];
	if (u) {
		buf_adds(&u->out, s);
		u->end = end;
		http_stream_wake(u->hs);
	}
	pthread_mutex_unlock(&up_lock);
}

static void on_partition(void *ud, struct http_request *req, struct http_reply *reply)
{
	const char *path = http_path(req);
	if (strcmp(path, "/a") == 0 || strcmp(path, "/b") == 0) {
		struct upconn *u = xcalloc(1, sizeof(*u));
		u->slot = path[1] - 'a';
		pthread_mutex_lock(&up_lock);
		u->hs = http_reply_stream(reply, 200, "application/json", up_fill, up_done, u);
		cur[u->slot] = u;
		gen[u->slot]++;

		pthread_mutex_unlock(&up_lock);
	} else if (strcmp(path, "/forbidden") == 0) {
		struct buf b = BUF_INIT;
		buf_adds(&b, "{\"kind\":\"Status\",\"code\":403}");
		http_reply_set(reply, 403, "application/json", &b);
	} else {
		usleep(1500 * 1000);
		http_reply_set(reply, 200, "application/json", NULL);
	}
}

/* --- the gateway side: the path picks what the handler does ------------------------------ */
static struct partition *good, *other, *dead, *failover;

static void on_front(void *ud, struct http_request *req, struct http_reply *reply)
{
	const char *path = http_path(req);
	struct upstream_req rq = { .method = "GET", .path = path };
	if (strcmp(path, "/merged") == 0) {
		struct partition *ps[2] = { good, other };
		char *paths[2] = { "/a", "/b" };
		struct merge_state *m = xmalloc(sizeof(*m));
		merge_state_init(m, false);
		upstream_merged_watch(ps, paths, 2, &rq, m, reply);
	} else if (strcmp(path, "/dead") == 0) {
		rq.path = "/a";
		upstream_stream(dead, &rq, reply);
	} else if (strcmp(path, "/failover") == 0) {
		rq.path = "/a";
		upstream_stream(failover, &rq, reply);
	} else {
		upstream_stream(good, &rq, reply);
	}
}

static struct http_server *partition_srv, *front;
static int open_fd = -1;
static int front_port;

static int setup(void **state)
{
	upstream_init(NULL);
	streams_tune(400, 200);
	assert_int_equal(streams_start(), 0);
	char *err = NULL;
	int pport = test_free_port();
	char *listen = xasprintf("127.0.0.1:%d", pport);
	struct http_server_options o = { .listen = listen, .threads = 4 };
	partition_srv = http_server_start(&o, on_partition, NULL, &err);
	assert_non_null(partition_srv);
	free(listen);
	front_port = test_free_port();
	listen = xasprintf("127.0.0.1:%d", front_port);
	o.listen = listen;
	front = http_server_start(&o, on_front, NULL, &err);
	assert_non_null(front);
	free(listen);
	char *ep = xasprintf("\"http://127.0.0.1:%d\"", pport);
	good = test_partition("rm", "rm-a", ep);
	other = test_partition("rm", "rm-b", ep);
	char *deadep = xasprintf("\"http://127.0.0.1:%d\"", test_free_port());
	dead = test_partition("rm", "rm-dead", deadep);
	char *both = xasprintf("%s,%s", deadep, ep);
	failover = test_partition("rm", "rm-failover", both);
	free(ep);
	free(deadep);
	free(both);
	return 0;
}

static int teardown(void **state)
{
	/* A stream still open here: stopping must end it and free everything once. */
	http_server_stop(front);
	streams_stop();
	/* The fake partition's streams whose reader (the loop) just went away may still be
	 * suspended: stopping its server at once must end them (a lost wake once left one
	 * suspended and libmicrohttpd panicked). */
	http_server_stop(partition_srv);
	partition_unref(good);
	partition_unref(other);
	partition_unref(dead);
	partition_unref(failover);
	if (open_fd >= 0)
		close(open_fd);
	return 0;
}

/* --- a raw client ------------------------------------------------------------------------- */
static int client_open(const char *path)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)front_port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	struct timeval tv = { .tv_sec = 0, .tv_usec = 200 * 1000 };
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	char *rq = xasprintf("GET %s HTTP/1.0\r\nHost: x\r\n\r\n", path);
	assert_int_equal(write(fd, rq, strlen(rq)), (ssize_t)strlen(rq));
	free(rq);
	return fd;
}

/* Reads into got until it holds want (true) or about ms passed (false). */
static bool client_until(int fd, struct buf *got, const char *want, int ms)
{
	for (int waited = 0; waited < ms; waited += 200) {
		if (got->len && strstr(buf_cstr(got), want))
			return true;
		char tmp[4096];
		ssize_t n = read(fd, tmp, sizeof(tmp));
		if (n > 0)
			buf_add(got, tmp, (size_t)n);
		else if (n == 0)
			break;
	}
	return got->len && strstr(buf_cstr(got), want);
}

/* Reads until the server closes the connection (HTTP/1.0: the end of the stream). */
static bool client_eof(int fd, struct buf *got, int ms)
{
	for (int waited = 0; waited < ms; waited += 200) {
		char tmp[4096];
		ssize_t n = read(fd, tmp, sizeof(tmp));
		if (n > 0)
			buf_add(got, tmp, (size_t)n);
		else if (n == 0)
			return true;
	}
	return false;
}

static bool wait_streams(long want, int ms)
{
	for (int i = 0; i < ms / 50; i++) {
		if (upstream_streams_open() == want && upstream_legs_open() == want)
			return true;
		usleep(50 * 1000);
	}
	return false;
}

static int gen_of(int i)
{
	pthread_mutex_lock(&up_lock);
	int g = gen[i];
	pthread_mutex_unlock(&up_lock);
	return g;
}

/* Waits until the partition has a stream on slot i newer than generation g. */
static void wait_upstream(int i, int g)
{
	for (int k = 0; k < 150; k++) {
		if (gen_of(i) > g)
			return;
		usleep(20 * 1000);
	}
	fail_msg("the partition never saw the stream");
}

static void test_pass_through_and_client_leaves(void **state)
{
	struct buf got = BUF_INIT;
	int g = gen_of(0);
	int fd = client_open("/a");
	wait_upstream(0, g);
	up_push(0, "{\"type\":\"ADDED\",\"n\":1}\n", false);
	assert_true(client_until(fd, &got, "\"n\":1", 3000));
	assert_non_null(strstr(buf_cstr(&got), " 200 "));
	assert_int_equal(upstream_streams_open(), 1);
	up_push(0, "{\"type\":", false); /* half a line: no heartbeat may split it */
	usleep(500 * 1000);
	up_push(0, "\"MODIFIED\",\"n\":2}\n", false);
	assert_true(client_until(fd, &got, "{\"type\":\"MODIFIED\",\"n\":2}", 3000));
	close(fd); /* noticed by the idle sweep, without another event */
	assert_true(wait_streams(0, 5000));
	buf_release(&got);
}

static void test_stream_ends_with_partition(void **state)
{
	struct buf got = BUF_INIT;
	int g = gen_of(0);
	int fd = client_open("/a");
	wait_upstream(0, g);
	up_push(0, "last\n", true);
	assert_true(client_eof(fd, &got, 3000));
	assert_non_null(strstr(buf_cstr(&got), "last\n"));
	close(fd);
	assert_true(wait_streams(0, 3000));
	buf_release(&got);
}

static void test_refusal_relayed(void **state)
{
	struct buf got = BUF_INIT;
	int fd = client_open("/forbidden");
	assert_true(client_until(fd, &got, "\"code\":403}", 3000));
	assert_non_null(strstr(buf_cstr(&got), " 403 "));
	close(fd);
	assert_true(wait_streams(0, 3000));
	buf_release(&got);
}

static void test_header_timeout_504(void **state)
{
	struct buf got = BUF_INIT;
	int fd = client_open("/slow");
	assert_true(client_until(fd, &got, "\"code\":504", 3000));
	assert_non_null(strstr(buf_cstr(&got), " 504 "));
	close(fd);
	assert_true(wait_streams(0, 3000));
	buf_release(&got);
}

static void test_refused_endpoints(void **state)
{
	struct buf got = BUF_INIT;
	int fd = client_open("/dead");
	assert_true(client_until(fd, &got, "\"code\":503", 3000));
	assert_true(atomic_load(&dead->down));
	close(fd);
	buf_reset(&got);
	/* the first endpoint refuses, the second serves */
	int g = gen_of(0);
	fd = client_open("/failover");
	wait_upstream(0, g);
	up_push(0, "{\"via\":\"second\"}\n", false);
	assert_true(client_until(fd, &got, "second", 3000));
	assert_false(atomic_load(&failover->down));
	assert_int_equal(atomic_load(&failover->next_ep), 1);
	up_push(0, "", true);
	close(fd);
	assert_true(wait_streams(0, 3000));
	buf_release(&got);
}

static void test_merged(void **state)
{
	struct buf got = BUF_INIT;
	int g0 = gen_of(0), g1 = gen_of(1);
	int fd = client_open("/merged");
	wait_upstream(0, g0);
	wait_upstream(1, g1);
	up_push(0, "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"x\",\"resourceVersion\":\"7\"}}}\n", false);
	up_push(1, "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"y\",\"resourceVersion\":\"9\"}}}\n", false);
	assert_true(client_until(fd, &got, "\"name\":\"y\"", 3000));
	assert_true(client_until(fd, &got, "\"name\":\"x\"", 3000));
	assert_null(strstr(buf_cstr(&got), "\"resourceVersion\":\"7\"")); /* rewritten */
	assert_int_equal(upstream_legs_open(), 2);
	/* one partition's stream ends: the merged watch ends, the other transfer is closed */
	up_push(1, "", true);
	assert_true(client_eof(fd, &got, 3000));
	close(fd);
	assert_true(wait_streams(0, 3000));
	buf_release(&got);
}

static void test_stop_with_stream_open(void **state)
{
	struct buf got = BUF_INIT;
	int g0 = gen_of(0);
	int fd = client_open("/merged");
	wait_upstream(0, g0);
	up_push(0, "{\"type\":\"BOOKMARK\",\"object\":{\"metadata\":{\"resourceVersion\":\"8\"}}}\n", false);
	assert_true(client_until(fd, &got, "BOOKMARK", 3000));
	assert_int_equal(upstream_streams_open(), 1);
	/* left open: teardown stops the servers and the loop with it */
	buf_release(&got);
	open_fd = fd;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pass_through_and_client_leaves),
		cmocka_unit_test(test_stream_ends_with_partition),
		cmocka_unit_test(test_refusal_relayed),
		cmocka_unit_test(test_header_timeout_504),
		cmocka_unit_test(test_refused_endpoints),
		cmocka_unit_test(test_merged),
		cmocka_unit_test(test_stop_with_stream_open),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
