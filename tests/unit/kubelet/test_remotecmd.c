/* The pure parts of the kubelet's streams (remotecmd.c): the query of /exec (repeated command=,
 * form encoding, flags, ports, caps), the WebSocket subprotocol choice and accept key, the error
 * channel's Status documents, the resize payload and a runtime's exec failure; and wsconn.c over a
 * socketpair: masked frames in, messages out, a close when a message is too long. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <jansson.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include "remotecmd.h"
#include "wsconn.h"

static void test_query(void **state)
{
	(void)state;
	struct rc_query q;
	const char *err = NULL;
	assert_int_equal(rc_query_parse("tenant=acme&command=sh&command=-c&command=echo+%22a+b%22%3B+ls&stdin=1"
					 "&stdout=true&stderr=0&tty=1&port=80&ports=81,8080",
					 &q, &err), 0);
	assert_int_equal(q.ncmd, 3);
	assert_string_equal(q.cmd[0], "sh");
	assert_string_equal(q.cmd[2], "echo \"a b\"; ls");
	assert_null(q.cmd[3]);
	assert_true(q.in && q.out && !q.err && q.tty);
	assert_int_equal(q.nports, 3);
	assert_int_equal(q.ports[2], 8080);
	rc_query_release(&q);

	assert_int_equal(rc_query_parse(NULL, &q, &err), 0);
	assert_int_equal(q.ncmd, 0);
	assert_null(q.cmd);
	assert_int_equal(rc_query_parse("command=%zz", &q, &err), -1);
	assert_non_null(err);
	assert_int_equal(rc_query_parse("command=a%00b", &q, &err), -1);
	assert_int_equal(rc_query_parse("command=%4", &q, &err), -1);
	assert_int_equal(rc_query_parse("port=0", &q, &err), -1);
	assert_int_equal(rc_query_parse("port=65536", &q, &err), -1);
	assert_int_equal(rc_query_parse("ports=80,", &q, &err), -1);
	struct buf many = BUF_INIT;
	for (int i = 0; i <= RC_MAX_ARGS; i++)
		buf_adds(&many, "command=x&");
	assert_int_equal(rc_query_parse(many.ptr, &q, &err), -1);
	buf_release(&many);
}

static void test_protocol_and_accept(void **state)
{
	(void)state;
	static const char *const want[] = { RC_PROTO_V5, RC_PROTO_V4, NULL };
	assert_string_equal(rc_pick_protocol("v4.channel.k8s.io, v5.channel.k8s.io", want), RC_PROTO_V5);
	assert_string_equal(rc_pick_protocol("base64.channel.k8s.io,v4.channel.k8s.io", want), RC_PROTO_V4);
	assert_null(rc_pick_protocol("channel.k8s.io", want));
	assert_null(rc_pick_protocol("v5.channel.k8s.iox", want));
	assert_null(rc_pick_protocol(NULL, want));
	char acc[29];
	rc_ws_accept("dGhlIHNhbXBsZSBub25jZQ==", acc); /* RFC 6455's example */
	assert_string_equal(acc, "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
}

static void test_statuses(void **state)
{
	(void)state;
	struct buf b = BUF_INIT;
	rc_status_exit(&b, 42, "sh -c exit 42");
	json_t *j = json_loads(b.ptr, 0, NULL);
	assert_string_equal(json_string_value(json_object_get(j, "status")), "Failure");
	assert_string_equal(json_string_value(json_object_get(j, "reason")), "NonZeroExitCode");
	json_t *cause = json_array_get(json_object_get(json_object_get(j, "details"), "causes"), 0);
	assert_string_equal(json_string_value(json_object_get(cause, "reason")), "ExitCode");
	assert_string_equal(json_string_value(json_object_get(cause, "message")), "42");
	json_decref(j);
	buf_reset(&b);
	rc_status_success(&b);
	assert_string_equal(b.ptr, "{\"metadata\":{},\"status\":\"Success\"}");
	buf_reset(&b);
	rc_status_failure(&b, "boom");
	j = json_loads(b.ptr, 0, NULL);
	assert_string_equal(json_string_value(json_object_get(j, "reason")), "InternalError");
	assert_string_equal(json_string_value(json_object_get(j, "message")), "Internal error occurred: boom");
	json_decref(j);
	buf_release(&b);
}

static void test_resize_and_exec_failure(void **state)
{
	(void)state;
	unsigned w = 0, h = 0;
	const char *ok = "{\"Width\":120,\"Height\":40}";
	assert_int_equal(rc_parse_resize((const uint8_t *)ok, strlen(ok), &w, &h), 0);
	assert_int_equal(w, 120);
	assert_int_equal(h, 40);
	const char *bad[] = { "{\"Width\":-1,\"Height\":3}", "{\"Width\":70000,\"Height\":3}", "[]", "{\"Width\":1}", "" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(rc_parse_resize((const uint8_t *)bad[i], strlen(bad[i]), &w, &h), -1);
	struct buf m = BUF_INIT;
	const char *nf = "{\"status\":\"Failure\",\"reason\":\"InternalError\",\"message\":\"Internal error occurred: "
			 "failed to exec in container: OCI runtime exec failed: exec failed: unable to start container "
			 "process: exec: \\\"x\\\": executable file not found in $PATH: unknown\"}";
	assert_int_equal(rc_exec_failure(nf, strlen(nf), &m), 127);
	assert_true(!strncmp(m.ptr, "OCI runtime exec failed", 23));
	buf_reset(&m);
	const char *pd = "{\"status\":\"Failure\",\"reason\":\"InternalError\",\"message\":\"OCI runtime exec failed: exec "
			 "failed: exec: \\\"/etc\\\": permission denied\"}";
	assert_int_equal(rc_exec_failure(pd, strlen(pd), &m), 126);
	const char *other = "{\"status\":\"Failure\",\"reason\":\"NonZeroExitCode\",\"message\":\"exec failed\"}";
	assert_int_equal(rc_exec_failure(other, strlen(other), &m), 0);
	buf_release(&m);
}

/* ---- wsconn over a socketpair ---- */

struct got {
	int n;
	char last[64];
	size_t last_len;
};

static void on_msg(void *ud, const uint8_t *data, size_t len, bool text)
{
	struct got *g = ud;
	(void)text;
	g->n++;
	g->last_len = len < sizeof(g->last) ? len : sizeof(g->last);
	memcpy(g->last, data, g->last_len);
}

static void masked(struct buf *out, int op, const char *payload, size_t n)
{
	static const unsigned char mask[4] = { 1, 2, 3, 4 };
	buf_addch(out, (char)(0x80 | op));
	if (n < 126) {
		buf_addch(out, (char)(0x80 | n));
	} else {
		buf_addch(out, (char)(0x80 | 126));
		buf_addch(out, (char)(n >> 8));
		buf_addch(out, (char)(n & 0xff));
	}
	buf_add(out, mask, 4);
	for (size_t i = 0; i < n; i++)
		buf_addch(out, (char)(payload[i] ^ mask[i % 4]));
}

/* Drives c until nothing happens for a while; returns what the peer end received. */
static void drive(struct wsconn *c, int peer, struct buf *received)
{
	for (int i = 0; i < 50; i++) {
		short ev = wsconn_events(c, true);
		if (!ev)
			break;
		struct pollfd p = { .fd = peer, .events = POLLIN };
		wsconn_io(c, 0);
		if (poll(&p, 1, 20) > 0) {
			char tmp[4096];
			ssize_t n = recv(peer, tmp, sizeof(tmp), MSG_DONTWAIT);
			if (n > 0)
				buf_add(received, tmp, (size_t)n);
		}
	}
}

static void test_wsconn(void **state)
{
	(void)state;
	int sv[2];
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	struct got g = { 0 };
	struct buf in = BUF_INIT, out = BUF_INIT;
	masked(&in, 2, "\x00hello", 6);
	masked(&in, 9, "ping", 4);
	struct wsconn *c = wsconn_new(sv[0], in.ptr, in.len, 100, on_msg, &g);
	wsconn_io(c, 0);
	assert_int_equal(g.n, 1);
	assert_int_equal(g.last_len, 6);
	assert_memory_equal(g.last, "\x00hello", 6);
	assert_int_equal(wsconn_send(c, 1, "out", 3), 0);
	drive(c, sv[1], &out);
	/* the pong, then our message: server frames are not masked */
	assert_true(out.len >= 6 + 6);
	assert_memory_equal(out.ptr, "\x8a\x04ping", 6);
	assert_memory_equal(out.ptr + 6, "\x82\x04\x01out", 6);
	/* a message over the limit: close 1009, the connection ends */
	buf_reset(&in);
	char big[200];
	memset(big, 'a', sizeof(big));
	masked(&in, 2, big, sizeof(big));
	assert_int_equal(send(sv[1], in.ptr, in.len, 0), (ssize_t)in.len);
	assert_int_equal(wsconn_io(c, POLLIN), -1); /* the close is written at once, then it is over */
	char tmp[16];
	assert_int_equal(recv(sv[1], tmp, sizeof(tmp), MSG_DONTWAIT), 4);
	assert_memory_equal(tmp, "\x88\x02\x03\xf1", 4);
	assert_int_equal(wsconn_events(c, true), 0);
	assert_int_equal(g.n, 1);
	wsconn_free(c);
	close(sv[0]);
	close(sv[1]);
	buf_release(&in);
	buf_release(&out);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_query),
		cmocka_unit_test(test_protocol_and_accept),
		cmocka_unit_test(test_statuses),
		cmocka_unit_test(test_resize_and_exec_failure),
		cmocka_unit_test(test_wsconn),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
