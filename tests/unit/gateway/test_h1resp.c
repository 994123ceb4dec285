/* The pure parts of the gateway's HTTP/1.1 client (h1resp.c): endpoint URLs, request heads and
 * the response parser, fed whole, byte by byte and at every split point. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "h1.h"
#include "ursa/errors.h"
#include "ursa/xalloc.h"

/* --- endpoints ------------------------------------------------------------------------------ */
static void test_endpoint(void **state)
{
	struct h1_endpoint e;
	assert_int_equal(h1_endpoint_parse("https://127.0.0.1:7101", &e), 0);
	assert_true(e.tls);
	assert_string_equal(e.host, "127.0.0.1");
	assert_string_equal(e.port, "7101");
	assert_string_equal(e.authority, "127.0.0.1:7101");
	assert_string_equal(e.prefix, "");
	h1_endpoint_release(&e);
	assert_int_equal(h1_endpoint_parse("http://[::1]:80/base", &e), 0);
	assert_false(e.tls);
	assert_string_equal(e.host, "::1");
	assert_string_equal(e.port, "80");
	assert_string_equal(e.authority, "[::1]:80");
	assert_string_equal(e.prefix, "/base");
	h1_endpoint_release(&e);
	assert_int_equal(h1_endpoint_parse("HTTPS://tp-1.example", &e), 0);
	assert_string_equal(e.port, "443");
	assert_string_equal(e.authority, "tp-1.example");
	h1_endpoint_release(&e);
	static const char *const bad[] = {
		"ftp://h:1", "https://", "https://:80", "https://h:", "https://h:0", "https://h:65536",
		"https://h:12a", "https://u@h:1", "https://[::1", "https://[]:1", "https://[::1]x",
		"https://h:1/a b", "https://h:1?q", "https://h:1/#f", "h:1", "https://h:123456",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (h1_endpoint_parse(bad[i], &e) != E_BAD_REQUEST)
			fail_msg("accepted %s", bad[i]);
	}
}

/* --- request heads -------------------------------------------------------------------------- */
static void test_request_head(void **state)
{
	struct h1_endpoint e;
	assert_int_equal(h1_endpoint_parse("https://127.0.0.1:7101", &e), 0);
	struct buf b = BUF_INIT;
	struct upstream_req rq = { .method = "GET", .path = "/api/v1/namespaces/a b/pods?x=\x01\xc3",
				   .authorization = "Bearer t", .forwarded_for = "10.0.0.1",
				   .body = "ignored", .len = 7 };
	h1_request_head(&e, &rq, &b);
	assert_string_equal(buf_cstr(&b), "GET /api/v1/namespaces/a%20b/pods?x=%01%C3 HTTP/1.1\r\n"
					  "Host: 127.0.0.1:7101\r\n"
					  "Authorization: Bearer t\r\n"
					  "Accept: application/json\r\n"
					  "X-Forwarded-For: 10.0.0.1\r\n"
					  "\r\n");
	buf_reset(&b);
	rq = (struct upstream_req){ .method = "DELETE", .path = "/x", .identity = "id\r\nX-Evil: 1",
				    .accept = "application/yaml" };
	h1_request_head(&e, &rq, &b);
	assert_string_equal(buf_cstr(&b), "DELETE /x HTTP/1.1\r\n"
					  "Host: 127.0.0.1:7101\r\n"
					  "Accept: application/yaml\r\n"
					  "Content-Type: application/json\r\n"
					  "Content-Length: 0\r\n"
					  "\r\n");
	buf_reset(&b);
	rq = (struct upstream_req){ .method = "PATCH", .path = "", .content_type = "application/merge-patch+json",
				    .if_none_match = "\"e1\"", .body = "{}", .len = 2 };
	h1_request_head(&e, &rq, &b);
	assert_string_equal(buf_cstr(&b), "PATCH / HTTP/1.1\r\n"
					  "Host: 127.0.0.1:7101\r\n"
					  "Accept: application/json\r\n"
					  "If-None-Match: \"e1\"\r\n"
					  "Content-Type: application/merge-patch+json\r\n"
					  "Content-Length: 2\r\n"
					  "\r\n");
	buf_release(&b);
	h1_endpoint_release(&e);
	assert_true(h1_method_retryable("GET"));
	assert_true(h1_method_retryable("HEAD"));
	assert_false(h1_method_retryable("POST"));
	assert_false(h1_method_retryable("DELETE"));
}

/* --- responses ------------------------------------------------------------------------------ */
/* Feeds text in pieces of step bytes (0: whole), then the close when eof. */
static enum h1_parse_result feed(struct h1_parser *p, const char *text, size_t len, size_t step, bool eof,
				 size_t *ret_used_total)
{
	size_t off = 0;
	enum h1_parse_result r = H1_MORE;
	while (off < len) {
		size_t n = step && len - off > step ? step : len - off, used = 0;
		r = h1_parser_feed(p, text + off, n, &used);
		off += used;
		if (r != H1_MORE)
			break;
	}
	if (r == H1_MORE && eof) {
		size_t used;
		r = h1_parser_feed(p, "", 0, &used);
	}
	*ret_used_total = off;
	return r;
}

struct want {
	enum h1_parse_result r;
	int status;
	const char *ctype, *warning, *etag, *body;
	bool keep_alive;
};

static void check(const char *text, bool head, bool eof, const struct want *w)
{
	size_t len = strlen(text);
	for (size_t step = 0; step <= len; step++) {
		struct h1_parser p;
		h1_parser_init(&p, head);
		size_t used;
		enum h1_parse_result r = feed(&p, text, len, step, eof, &used);
		if (r != w->r)
			fail_msg("step %zu: result %d, want %d for %s", step, r, w->r, text);
		if (r == H1_DONE) {
			assert_int_equal(p.resp.status, w->status);
			if (w->ctype)
				assert_string_equal(p.resp.content_type, w->ctype);
			else
				assert_null(p.resp.content_type);
			if (w->warning)
				assert_string_equal(p.resp.warning, w->warning);
			else
				assert_null(p.resp.warning);
			if (w->etag)
				assert_string_equal(p.resp.etag, w->etag);
			assert_int_equal(p.resp.body.len, strlen(w->body));
			assert_memory_equal(p.resp.body.len ? p.resp.body.ptr : "", w->body, strlen(w->body));
			if (p.keep_alive != w->keep_alive)
				fail_msg("step %zu: keep_alive %d for %s", step, p.keep_alive, text);
		}
		h1_parser_release(&p);
		if (step == 0 && len > 200)
			step = len / 7; /* long inputs: a few split sizes */
	}
}

static void test_content_length(void **state)
{
	struct want w = { H1_DONE, 200, "application/json", NULL, NULL, "{\"kind\":\"Pod\"}", true };
	check("HTTP/1.1 200 OK\r\nContent-Type:  application/json \r\nAudit-Id: 1\r\nContent-Length: 14\r\n\r\n"
	      "{\"kind\":\"Pod\"}",
	      false, false, &w);
	/* HTTP/1.0 without keep-alive, and Connection: close. */
	w.keep_alive = false;
	check("HTTP/1.0 200 OK\r\nContent-Type: application/json\r\nContent-Length: 14\r\n\r\n{\"kind\":\"Pod\"}",
	      false, false, &w);
	check("HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: 14\r\n\r\n"
	      "{\"kind\":\"Pod\"}",
	      false, false, &w);
	/* An error Status passes as it came, with its Warnings joined. */
	struct want e = { H1_DONE, 422, "application/json", "299 - \"a\", 299 - \"b\"", NULL, "{\"code\":422}", true };
	check("HTTP/1.1 422 Unprocessable Entity\r\nWarning: 299 - \"a\"\r\ncontent-type: application/json\r\n"
	      "WARNING: 299 - \"b\"\r\nContent-Length: 12\r\n\r\n{\"code\":422}",
	      false, false, &e);
	struct want nb = { H1_DONE, 304, NULL, NULL, "\"x\"", "", true };
	check("HTTP/1.1 304 Not Modified\r\nETag: \"x\"\r\n\r\n", false, false, &nb);
	struct want nc = { H1_DONE, 204, NULL, NULL, NULL, "", true };
	check("HTTP/1.1 204 No Content\r\n\r\n", false, false, &nc);
}

static void test_chunked(void **state)
{
	struct want w = { H1_DONE, 200, "application/json", NULL, NULL, "{\"part\":3}\n{\"part\":2}\n", true };
	check("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
	      "b\r\n{\"part\":3}\n\r\nB;ext=1\r\n{\"part\":2}\n\r\n0\r\nTrailer: x\r\n\r\n",
	      false, false, &w);
	/* Cut short: the close before the last chunk is no answer. */
	struct want bad = { H1_BAD };
	check("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nb\r\n{\"part\":3}\n\r\n", false, true, &bad);
	check("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", false, false, &bad);
}

static void test_close_delimited_head_interim(void **state)
{
	struct want w = { H1_DONE, 200, "text/plain", NULL, NULL, "hello", false };
	check("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nhello", false, true, &w);
	/* HEAD: a Content-Length but no body. */
	struct want h = { H1_DONE, 200, NULL, NULL, NULL, "", true };
	check("HTTP/1.1 200 OK\r\nContent-Length: 300000\r\n\r\n", true, false, &h);
	/* An interim answer's headers are not the answer's. */
	struct want i = { H1_DONE, 201, "b", NULL, NULL, "x", true };
	check("HTTP/1.1 100 Continue\r\nContent-Type: a\r\n\r\nHTTP/1.1 201 Created\r\nContent-Type: b\r\n"
	      "Content-Length: 1\r\n\r\nx",
	      false, false, &i);
}

static void test_malformed_and_limits(void **state)
{
	struct want bad = { H1_BAD };
	check("HTTP/1.1 2000 OK\r\n\r\n", false, false, &bad);
	check("HTTP/1.1 2\nContent-Length: 0\r\n\r\n", false, false, &bad);
	check("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 2\n\r\nx", false, true, &bad);
	check("SSH-2.0-OpenSSH\r\n", false, false, &bad);
	check("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: upgrade\r\n\r\n", false, false,
	      &bad);
	check("HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nxx", false, false, &bad);
	/* Nothing at all before the close. */
	struct h1_parser p;
	h1_parser_init(&p, false);
	size_t used;
	assert_int_equal(h1_parser_feed(&p, "", 0, &used), H1_BAD);
	assert_int_equal(p.fed, 0);
	h1_parser_release(&p);
	/* Content-Length over the cap: refused at the headers. */
	h1_parser_init(&p, false);
	char *big = xasprintf("HTTP/1.1 200 OK\r\nContent-Length: %u\r\n\r\n", UPSTREAM_MAX_RESPONSE + 1);
	assert_int_equal(h1_parser_feed(&p, big, strlen(big), &used), H1_TOO_LARGE);
	free(big);
	h1_parser_release(&p);
	/* A chunked body growing past the cap. */
	h1_parser_init(&p, false);
	const char *hd = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n";
	assert_int_equal(h1_parser_feed(&p, hd, strlen(hd), &used), H1_MORE);
	size_t csz = 1u << 20;
	char *chunk = xmalloc(csz + 32);
	int hl = snprintf(chunk, 32, "%zx\r\n", csz);
	memset(chunk + hl, 'x', csz);
	memcpy(chunk + hl + csz, "\r\n", 2);
	enum h1_parse_result r = H1_MORE;
	for (int i = 0; i < 80 && r == H1_MORE; i++)
		r = h1_parser_feed(&p, chunk, (size_t)hl + csz + 2, &used);
	assert_int_equal(r, H1_TOO_LARGE);
	assert_true(p.resp.body.len <= UPSTREAM_MAX_RESPONSE);
	free(chunk);
	h1_parser_release(&p);
	/* Bytes after the answer are left unused (the connection is not reused then). */
	h1_parser_init(&p, false);
	const char *two = "HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nxHTTP/1.1 200 OK\r\n";
	assert_int_equal(h1_parser_feed(&p, two, strlen(two), &used), H1_DONE);
	assert_int_equal(used, strlen("HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nx"));
	/* Reset: the next answer on the same connection. */
	h1_parser_reset(&p, false);
	assert_int_equal(p.resp.status, 0);
	assert_int_equal(h1_parser_feed(&p, two, used, &used), H1_DONE);
	assert_int_equal(p.resp.status, 200);
	h1_parser_release(&p);
}

static void test_large_body(void **state)
{
	struct buf t = BUF_INIT;
	size_t n = 3u << 20;
	buf_addf(&t, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n\r\n", n);
	size_t hl = t.len;
	buf_grow(&t, n);
	for (size_t i = 0; i < n; i++)
		t.ptr[hl + i] = (char)('a' + i % 26);
	t.len += n;
	struct h1_parser p;
	h1_parser_init(&p, false);
	size_t used;
	assert_int_equal(feed(&p, t.ptr, t.len, 16384, false, &used), H1_DONE);
	assert_int_equal(p.resp.body.len, n);
	assert_memory_equal(p.resp.body.ptr, t.ptr + hl, n);
	assert_true(p.keep_alive);
	h1_parser_release(&p);
	buf_release(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_endpoint),
		cmocka_unit_test(test_request_head),
		cmocka_unit_test(test_content_length),
		cmocka_unit_test(test_chunked),
		cmocka_unit_test(test_close_delimited_head_interim),
		cmocka_unit_test(test_malformed_and_limits),
		cmocka_unit_test(test_large_body),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
