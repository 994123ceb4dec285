/* Unit tests of the etcd JSON gateway codec that remains (int64 fields, errors, prefix ends; no
 * etcd needed). The watch stream is gRPC: test_pb.c. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "etcd/etcd_internal.h"
#include "ursa/errors.h"

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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_prefix_end),
		cmocka_unit_test(test_i64_fields),
		cmocka_unit_test(test_errors),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
