/* Unit tests of the etcd JSON gateway codec (watch lines, errors, base64; no etcd needed). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "etcd/etcd_internal.h"
#include "ursa/errors.h"

static void test_b64_roundtrip(void **state)
{
	const char *in = "\0\1\2foobar\xff";
	for (size_t n = 0; n <= 10; n++) {
		struct buf b = BUF_INIT;
		char *out = NULL;
		size_t out_len = 99;
		etcd_b64_encode(&b, in, n);
		assert_int_equal(b.len, 4 * ((n + 2) / 3));
		assert_int_equal(etcd_b64_decode(b.ptr, b.len, &out, &out_len), 0);
		assert_int_equal(out_len, n);
		assert_memory_equal(out, in, n);
		assert_int_equal(out[n], '\0');
		free(out);
		buf_release(&b);
	}
}

static void test_b64_known(void **state)
{
	struct buf b = BUF_INIT;
	char *out;
	size_t len;

	etcd_b64_encode(&b, "foo", 3);
	assert_string_equal(buf_cstr(&b), "Zm9v");
	buf_reset(&b);
	etcd_b64_encode(&b, "/p/", 3);
	assert_string_equal(buf_cstr(&b), "L3Av");
	buf_release(&b);
	assert_int_equal(etcd_b64_decode("Zg==", 4, &out, &len), 0);
	assert_int_equal(len, 1);
	assert_string_equal(out, "f");
	free(out);
	assert_int_equal(etcd_b64_decode("Zm8=", 4, &out, &len), 0);
	assert_int_equal(len, 2);
	assert_string_equal(out, "fo");
	free(out);
}

static void test_b64_rejects(void **state)
{
	const char *bad[] = { "Zg", "Zg=", "Z===", "A=BC", "Zg=A", " Zg=", "Zm9\n", "-_8=", "Zm9v!A==" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char *out = (char *)0x1;
		size_t len = 7;
		assert_int_equal(etcd_b64_decode(bad[i], strlen(bad[i]), &out, &len), E_INTERNAL);
		assert_ptr_equal(out, (char *)0x1);
		assert_int_equal(len, 7);
	}
}

static void test_prefix_end(void **state)
{
	char *s = etcd_prefix_end("/p/");
	assert_string_equal(s, "/p0");
	free(s);
	s = etcd_prefix_end("a\xff\xff");
	assert_string_equal(s, "b");
	free(s);
	s = etcd_prefix_end("\xff");
	assert_string_equal(s, "");
	free(s);
	s = etcd_prefix_end("");
	assert_string_equal(s, "");
	free(s);
}

static json_t *parse(const char *s)
{
	json_t *j = etcd_json_parse(s, strlen(s));
	assert_non_null(j);
	return j;
}

static void test_i64_fields(void **state)
{
	json_t *j = parse("{\"a\":\"42\",\"b\":7,\"c\":\"x\",\"d\":null,\"e\":true,\"f\":\"-1\","
			  "\"g\":\"99999999999999999999\"}");
	int64_t v = 5;
	assert_int_equal(etcd_json_i64(j, "a", &v), 0);
	assert_int_equal(v, 42);
	assert_int_equal(etcd_json_i64(j, "b", &v), 0);
	assert_int_equal(v, 7);
	assert_int_equal(etcd_json_i64(j, "missing", &v), 0);
	assert_int_equal(v, 0);
	assert_int_equal(etcd_json_i64(j, "d", &v), 0);
	assert_int_equal(v, 0);
	assert_int_equal(etcd_json_i64(j, "f", &v), 0);
	assert_int_equal(v, -1);
	assert_int_equal(etcd_json_i64(j, "c", &v), E_INTERNAL);
	assert_int_equal(etcd_json_i64(j, "e", &v), E_INTERNAL);
	assert_int_equal(etcd_json_i64(j, "g", &v), E_INTERNAL);
	json_decref(j);
}

/* mvccpb.KeyValue as the watch stream carries it (the KV calls use protobuf, see test_pb.c). */
static void test_parse_kv(void **state)
{
	json_t *j = parse("{\"key\":\"Zm9v\",\"create_revision\":\"2\",\"mod_revision\":\"4\",\"version\":\"3\","
			  "\"value\":\"YmF6\",\"lease\":\"12345\"}");
	struct etcd_kv kv;
	assert_int_equal(etcd_parse_kv(j, &kv), 0);
	assert_string_equal(kv.key, "foo");
	assert_string_equal(kv.value, "baz");
	assert_int_equal(kv.value_len, 3);
	assert_int_equal(kv.create_rev, 2);
	assert_int_equal(kv.mod_rev, 4);
	assert_int_equal(kv.version, 3);
	assert_int_equal(kv.lease, 12345);
	etcd_kv_release(&kv);
	json_decref(j);

	j = parse("{\"key\":\"Zm9w\",\"mod_revision\":\"5\"}");
	assert_int_equal(etcd_parse_kv(j, &kv), 0);
	assert_string_equal(kv.key, "fop");
	assert_string_equal(kv.value, "");
	assert_int_equal(kv.value_len, 0);
	etcd_kv_release(&kv);
	json_decref(j);

	j = parse("{\"key\":\"!!\"}");
	assert_int_equal(etcd_parse_kv(j, &kv), E_INTERNAL);
	assert_null(kv.key);
	json_decref(j);
}

static int err_of(const char *body, long status)
{
	json_t *j = body ? etcd_json_parse(body, strlen(body)) : NULL;
	int rc = etcd_parse_error(j, status);
	json_decref(j);
	return rc;
}

static void test_errors(void **state)
{
	assert_int_equal(err_of("{\"error\":\"etcdserver: mvcc: required revision has been compacted\","
				"\"message\":\"etcdserver: mvcc: required revision has been compacted\",\"code\":11}",
				400),
			 E_GONE);
	assert_int_equal(err_of("{\"error\":\"etcdserver: mvcc: required revision is a future revision\","
				"\"code\":11}",
				400),
			 E_TIMEOUT);
	assert_int_equal(err_of("{\"error\":\"etcdserver: request is too large\",\"code\":3}", 400), E_TOO_LARGE);
	assert_int_equal(err_of("{\"error\":\"grpc: received message larger than max (2097162 vs. 2097152)\","
				"\"code\":8}",
				429),
			 E_TOO_LARGE);
	assert_int_equal(err_of("{\"error\":\"etcdserver: mvcc: database space exceeded\",\"code\":8}", 429),
			 E_INTERNAL);
	assert_int_equal(err_of("{\"error\":\"etcdserver: requested lease not found\",\"code\":5}", 404),
			 E_NOT_FOUND);
	/* FailedPrecondition is 412 on Debian's gateway and 400 upstream: the code decides */
	assert_int_equal(err_of("{\"error\":\"etcdserver: lease already exists\",\"code\":9}", 400),
			 E_ALREADY_EXISTS);
	assert_int_equal(err_of("{\"error\":\"etcdserver: no leader\",\"code\":14}", 503), E_UNAVAILABLE);
	assert_int_equal(err_of("{\"error\":\"illegal base64 data at input byte 3\",\"code\":3}", 400),
			 E_BAD_REQUEST);
	assert_int_equal(err_of("{\"error\":{\"grpc_code\":14,\"http_code\":503,\"message\":\"transport is closing\","
				"\"http_status\":\"Service Unavailable\"}}",
				200),
			 E_UNAVAILABLE);
	assert_int_equal(err_of("{\"code\":11,\"message\":\"etcdserver: mvcc: required revision has been compacted\","
				"\"details\":[]}",
				400),
			 E_GONE);
	assert_int_equal(err_of(NULL, 503), E_UNAVAILABLE);
	assert_int_equal(err_of(NULL, 404), E_INTERNAL);
	assert_int_equal(err_of("{\"code\":0}", 500), E_INTERNAL);
	assert_int_equal(err_of("{\"error\":{\"grpc_code\":\"x\"}}", 200), E_INTERNAL);
}

static void test_watch_created(void **state)
{
	const char *l = "{\"result\":{\"header\":{\"cluster_id\":\"1\",\"member_id\":\"2\",\"revision\":\"23\","
			"\"raft_term\":\"2\"},\"created\":true}}";
	struct etcd_watch_msg m;
	assert_int_equal(etcd_parse_watch_line(l, strlen(l), &m), 0);
	assert_true(m.created);
	assert_false(m.canceled);
	assert_int_equal(m.header_rev, 23);
	assert_int_equal(m.watch_id, 0);
	assert_int_equal(m.n_events, 0);
	etcd_watch_msg_release(&m);
}

static void test_watch_events(void **state)
{
	const char *l = "{\"result\":{\"header\":{\"revision\":\"26\"},\"watch_id\":\"1\",\"events\":["
			"{\"kv\":{\"key\":\"L3cvYQ==\",\"create_revision\":\"24\",\"mod_revision\":\"25\","
			"\"version\":\"2\",\"value\":\"Mg==\"},\"prev_kv\":{\"key\":\"L3cvYQ==\","
			"\"create_revision\":\"24\",\"mod_revision\":\"24\",\"version\":\"1\",\"value\":\"MQ==\"}},"
			"{\"type\":\"DELETE\",\"kv\":{\"key\":\"L3cvYQ==\",\"mod_revision\":\"26\"}}],"
			"\"fragment\":true}}";
	struct etcd_watch_msg m;
	assert_int_equal(etcd_parse_watch_line(l, strlen(l), &m), 0);
	assert_int_equal(m.watch_id, 1);
	assert_true(m.fragment);
	assert_int_equal(m.n_events, 2);
	assert_int_equal(m.events[0].type, ETCD_EV_PUT);
	assert_string_equal(m.events[0].kv.key, "/w/a");
	assert_string_equal(m.events[0].kv.value, "2");
	assert_int_equal(m.events[0].kv.mod_rev, 25);
	assert_string_equal(m.events[0].prev_kv.value, "1");
	assert_int_equal(m.events[0].prev_kv.mod_rev, 24);
	assert_int_equal(m.events[1].type, ETCD_EV_DELETE);
	assert_string_equal(m.events[1].kv.key, "/w/a");
	assert_int_equal(m.events[1].kv.mod_rev, 26);
	assert_null(m.events[1].prev_kv.key);
	etcd_watch_msg_release(&m);
}

static void test_watch_compacted_and_errors(void **state)
{
	const char *c = "{\"result\":{\"header\":{\"cluster_id\":\"1\",\"raft_term\":\"2\"},\"watch_id\":\"1\","
			"\"canceled\":true,\"compact_revision\":\"15\"}}";
	struct etcd_watch_msg m;
	assert_int_equal(etcd_parse_watch_line(c, strlen(c), &m), 0);
	assert_true(m.canceled);
	assert_int_equal(m.compact_rev, 15);
	assert_int_equal(m.header_rev, 0);
	etcd_watch_msg_release(&m);

	const char *e = "{\"error\":{\"grpc_code\":14,\"http_code\":503,\"message\":\"transport is closing\"}}";
	assert_int_equal(etcd_parse_watch_line(e, strlen(e), &m), E_UNAVAILABLE);
	assert_null(m.events);

	const char *bad[] = { "", "{}", "[]", "{\"result\":1}", "{\"result\":{\"events\":[{\"type\":\"X\"}]}}",
			      "{\"result\":{\"events\":[{\"kv\":{\"key\":\"Zg\"}}]}}",
			      "{\"result\":{\"header\":{\"revision\":\"a\"}}}", "{\"result\":{\"events\":{}}}",
			      "{\"result\":{\"events\":[{\"kv\":{\"key\":\"Zg==\"}},7]}}" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(etcd_parse_watch_line(bad[i], strlen(bad[i]), &m), E_INTERNAL);
		assert_null(m.events);
		assert_int_equal(m.n_events, 0);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_b64_roundtrip),
		cmocka_unit_test(test_b64_known),
		cmocka_unit_test(test_b64_rejects),
		cmocka_unit_test(test_prefix_end),
		cmocka_unit_test(test_i64_fields),
		cmocka_unit_test(test_parse_kv),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_watch_created),
		cmocka_unit_test(test_watch_events),
		cmocka_unit_test(test_watch_compacted_and_errors),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
