/* Unit tests of the shared gRPC pieces (ursa/grpc.h): framing, request headers, status lines,
 * code mapping and the outcome of an exchange. No server needed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "ursa/errors.h"
#include "ursa/grpc.h"

static void test_frame_roundtrip(void **state)
{
	struct buf b = BUF_INIT;
	const uint8_t *msg;
	size_t len;

	grpc_frame(&b, "abc", 3);
	assert_int_equal(b.len, 8);
	assert_memory_equal(b.ptr, "\0\0\0\0\3abc", 8);
	assert_int_equal(grpc_unframe(b.ptr, b.len, 100, &msg, &len), 0);
	assert_int_equal(len, 3);
	assert_memory_equal(msg, "abc", 3);
	buf_reset(&b);
	grpc_frame(&b, NULL, 0);
	assert_int_equal(b.len, 5);
	assert_int_equal(grpc_unframe(b.ptr, b.len, 100, &msg, &len), 0);
	assert_int_equal(len, 0);
	/* a length needing all four bytes */
	buf_reset(&b);
	static char big[70000];
	grpc_frame(&b, big, sizeof(big));
	assert_memory_equal(b.ptr, "\0\0\1\x11\x70", 5);
	assert_int_equal(grpc_unframe(b.ptr, b.len, sizeof(big), &msg, &len), 0);
	assert_int_equal(len, sizeof(big));
	assert_int_equal(grpc_unframe(b.ptr, b.len, sizeof(big) - 1, &msg, &len), E_INTERNAL);
	buf_release(&b);
}

static void test_unframe_rejects(void **state)
{
	const uint8_t *msg = NULL;
	size_t len = 0;

	assert_int_equal(grpc_unframe("\1\0\0\0\3abc", 8, 100, &msg, &len), E_INTERNAL); /* compressed */
	assert_int_equal(grpc_unframe("\0\0\0\0\4abc", 8, 100, &msg, &len), E_INTERNAL); /* truncated */
	assert_int_equal(grpc_unframe("\0\0\0\0\2abc", 8, 100, &msg, &len), E_INTERNAL); /* trailing */
	assert_int_equal(grpc_unframe("\0\xff\xff\xff\xff", 5, (size_t)-1, &msg, &len), E_INTERNAL);
	assert_int_equal(grpc_unframe("\0\0\0", 3, 100, &msg, &len), E_INTERNAL);
	assert_int_equal(grpc_unframe(NULL, 0, 100, &msg, &len), E_INTERNAL);
	assert_null(msg);
}

static bool has_header(const struct curl_slist *h, const char *line)
{
	for (; h; h = h->next)
		if (strcmp(h->data, line) == 0)
			return true;
	return false;
}

static void test_headers(void **state)
{
	struct curl_slist *h = grpc_headers(NULL, 0);

	assert_true(has_header(h, "content-type: application/grpc"));
	assert_true(has_header(h, "te: trailers"));
	assert_true(has_header(h, "Expect:"));
	for (struct curl_slist *p = h; p; p = p->next)
		assert_null(strstr(p->data, "grpc-timeout"));
	curl_slist_free_all(h);
	h = grpc_headers(NULL, 2500);
	assert_true(has_header(h, "grpc-timeout: 2500m"));
	curl_slist_free_all(h);
	h = grpc_headers(NULL, 99999999);
	assert_true(has_header(h, "grpc-timeout: 99999999m"));
	curl_slist_free_all(h);
	h = grpc_headers(NULL, 100000000); /* 9 digits of ms: seconds */
	assert_true(has_header(h, "grpc-timeout: 100000S"));
	curl_slist_free_all(h);
	h = grpc_headers(NULL, 9223372036854775807L);
	assert_true(has_header(h, "grpc-timeout: 99999999S"));
	curl_slist_free_all(h);
}

static void test_status_lines(void **state)
{
	struct grpc_status st = GRPC_STATUS_INIT;
	static const char *ignored[] = { "grpc-status: x\r\n", "grpc-status: -1\r\n", "grpc-status: 99999\r\n",
					 "grpc-status:\r\n", "HTTP/2 200\r\n", "\r\n", "grpc-statusx: 3\r\n",
					 "grpc-status 3\r\n", "grpc-status: 1 2\r\n" };

	for (size_t i = 0; i < sizeof(ignored) / sizeof(ignored[0]); i++)
		grpc_status_header_line(&st, ignored[i], strlen(ignored[i]));
	assert_false(st.has_code);
	grpc_status_header_line(&st, "GRPC-STATUS:\t5 \r\n", 18);
	assert_true(st.has_code);
	assert_int_equal(st.code, 5);
	const char *m = "grpc-message: an error occurred when try to find container %22x%22: not found\r\n";
	grpc_status_header_line(&st, m, strlen(m));
	assert_string_equal(st.message.ptr, "an error occurred when try to find container \"x\": not found");
	/* a later message replaces the earlier one */
	grpc_status_header_line(&st, "grpc-message: b\r\n", 17);
	assert_string_equal(st.message.ptr, "b");
	grpc_status_release(&st);
	assert_false(st.has_code);
	assert_null(st.message.ptr);

	struct buf out = BUF_INIT;
	grpc_pct_decode("", 0, 100, &out);
	assert_string_equal(out.ptr, "");
	buf_reset(&out);
	grpc_pct_decode("a%2", 3, 100, &out);
	assert_string_equal(out.ptr, "a%2");
	buf_reset(&out);
	grpc_pct_decode("%41%zz%4a%", 10, 100, &out);
	assert_string_equal(out.ptr, "A%zzJ%");
	buf_reset(&out);
	grpc_pct_decode("abcdef", 6, 3, &out);
	assert_string_equal(out.ptr, "abc");
	buf_release(&out);
}

static void test_code_mapping(void **state)
{
	assert_int_equal(grpc_code_error(GRPC_NOT_FOUND), E_NOT_FOUND);
	assert_int_equal(grpc_code_error(GRPC_ALREADY_EXISTS), E_ALREADY_EXISTS);
	assert_int_equal(grpc_code_error(GRPC_INVALID_ARGUMENT), E_BAD_REQUEST);
	assert_int_equal(grpc_code_error(GRPC_OUT_OF_RANGE), E_BAD_REQUEST);
	assert_int_equal(grpc_code_error(GRPC_FAILED_PRECONDITION), E_CONFLICT);
	assert_int_equal(grpc_code_error(GRPC_ABORTED), E_CONFLICT);
	assert_int_equal(grpc_code_error(GRPC_DEADLINE_EXCEEDED), E_TIMEOUT);
	assert_int_equal(grpc_code_error(GRPC_CANCELED), E_TIMEOUT);
	assert_int_equal(grpc_code_error(GRPC_UNAVAILABLE), E_UNAVAILABLE);
	assert_int_equal(grpc_code_error(GRPC_UNAUTHENTICATED), E_UNAUTHORIZED);
	assert_int_equal(grpc_code_error(GRPC_PERMISSION_DENIED), E_FORBIDDEN);
	assert_int_equal(grpc_code_error(GRPC_RESOURCE_EXHAUSTED), E_TOO_MANY);
	assert_int_equal(grpc_code_error(GRPC_UNIMPLEMENTED), E_METHOD);
	assert_int_equal(grpc_code_error(GRPC_UNKNOWN), E_INTERNAL);
	assert_int_equal(grpc_code_error(9999), E_INTERNAL);
	assert_int_equal(grpc_http_error(503), E_UNAVAILABLE);
	assert_int_equal(grpc_http_error(504), E_TIMEOUT);
	assert_int_equal(grpc_http_error(413), E_TOO_LARGE);
	assert_int_equal(grpc_http_error(404), E_INTERNAL);
}

static int always_conflict(int64_t code, const char *message)
{
	return strcmp(message, "m") == 0 && code == 2 ? E_CONFLICT : E_INTERNAL;
}

/* An exchange as grpc_exchange_perform leaves it, without a transfer. */
static void fake(struct grpc_exchange *x, long http, bool has_code, int64_t code, const char *msg, const char *body,
		 size_t len)
{
	grpc_exchange_release(x);
	x->max_body = 100;
	x->cc = CURLE_OK;
	x->http_status = http;
	x->status.has_code = has_code;
	x->status.code = code;
	if (msg)
		buf_adds(&x->status.message, msg);
	if (len)
		buf_add(&x->body, body, len);
}

static void test_outcome(void **state)
{
	struct grpc_exchange x = { 0 };
	const uint8_t *msg = NULL;
	size_t len = 0;

	fake(&x, 200, true, 0, NULL, "\0\0\0\0\2hi", 7);
	assert_int_equal(grpc_exchange_outcome(&x, NULL, &msg, &len), 0);
	assert_int_equal(len, 2);
	assert_memory_equal(msg, "hi", 2);
	fake(&x, 200, true, 5, "gone", NULL, 0); /* trailers-only error */
	assert_int_equal(grpc_exchange_outcome(&x, NULL, &msg, &len), E_NOT_FOUND);
	fake(&x, 200, true, 2, "m", NULL, 0);
	assert_int_equal(grpc_exchange_outcome(&x, always_conflict, &msg, &len), E_CONFLICT);
	fake(&x, 200, false, 0, NULL, "\0\0\0\0\2hi", 7); /* no grpc-status at all */
	assert_int_equal(grpc_exchange_outcome(&x, NULL, &msg, &len), E_INTERNAL);
	fake(&x, 503, false, 0, NULL, "busy", 4);
	assert_int_equal(grpc_exchange_outcome(&x, NULL, &msg, &len), E_UNAVAILABLE);
	fake(&x, 200, true, 0, NULL, "\0\0\0\0\3hi", 7); /* status 0 but a short frame */
	assert_int_equal(grpc_exchange_outcome(&x, NULL, &msg, &len), E_INTERNAL);
	fake(&x, 200, true, 0, NULL, NULL, 0); /* status 0 and no message */
	assert_int_equal(grpc_exchange_outcome(&x, NULL, &msg, &len), E_INTERNAL);
	fake(&x, 500, true, 0, NULL, "\0\0\0\0\0", 5);
	assert_int_equal(grpc_exchange_outcome(&x, NULL, &msg, &len), E_INTERNAL);
	grpc_exchange_release(&x);
}

static int setups;

static void count_setup(void *ud, CURL *c)
{
	(void)ud;
	(void)c;
	setups++;
}

/* The pool hands back idle handles first, makes new ones only when none is idle, and keeps at
 * most max_idle of those given back (0: all). */
static void test_pool_max_idle(void **state)
{
	(void)state;
	struct curl_pool p;
	CURL *h[5];
	setups = 0;
	curl_pool_init(&p, 2, count_setup, NULL);
	for (int i = 0; i < 5; i++)
		h[i] = curl_pool_take(&p);
	assert_int_equal(setups, 5);
	for (int i = 0; i < 5; i++)
		curl_pool_give(&p, h[i]);
	assert_int_equal(p.n, 2);
	CURL *a = curl_pool_take(&p), *b = curl_pool_take(&p), *c = curl_pool_take(&p);
	assert_int_equal(setups, 6); /* two were idle, the third is new */
	curl_pool_give(&p, a);
	curl_pool_give(&p, b);
	curl_pool_give(&p, c);
	assert_int_equal(p.n, 2);
	curl_pool_release(&p);

	curl_pool_init(&p, 0, count_setup, NULL);
	for (int i = 0; i < 5; i++)
		h[i] = curl_pool_take(&p);
	for (int i = 0; i < 5; i++)
		curl_pool_give(&p, h[i]);
	assert_int_equal(p.n, 5);
	curl_pool_release(&p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_frame_roundtrip), cmocka_unit_test(test_unframe_rejects),
		cmocka_unit_test(test_headers),         cmocka_unit_test(test_status_lines),
		cmocka_unit_test(test_code_mapping),    cmocka_unit_test(test_outcome),
		cmocka_unit_test(test_pool_max_idle),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
