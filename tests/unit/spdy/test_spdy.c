/* Unit tests of the SPDY/3.1 codec (ursa/spdy.h): a client and a server session wired to each
 * other in memory, frames crafted by hand for the error paths. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>
#include <zlib.h>

#include "ursa/errors.h"
#include "ursa/spdy.h"

/* What one side saw, as text lines ("syn 1 streamtype=stdin fin=0", "data 1 abc", ...). */
struct side {
	struct spdy_session *s;
	struct buf log;
	struct buf data;
	int refuse; /* on_syn_stream's answer */
	bool auto_reply;
};

static void logf_(struct side *d, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	buf_vaddf(&d->log, fmt, ap);
	va_end(ap);
	buf_addch(&d->log, '\n');
}

static void add_headers(struct buf *b, const struct spdy_header *h, size_t n)
{
	for (size_t i = 0; i < n; i++)
		buf_addf(b, " %s=%s", h[i].name, h[i].value);
}

static int on_syn_stream(void *ud, uint32_t id, uint32_t assoc, uint8_t prio, const struct spdy_header *h, size_t n,
			 bool fin)
{
	struct side *d = ud;
	struct buf b = BUF_INIT;
	add_headers(&b, h, n);
	logf_(d, "syn %u%s prio=%u assoc=%u fin=%d", id, buf_cstr(&b), prio, assoc, fin);
	buf_release(&b);
	if (d->refuse)
		return d->refuse;
	if (d->auto_reply) {
		struct spdy_header r = { "x-ok", "yes", 0 };
		assert_int_equal(spdy_reply(d->s, id, &r, 1, false), 0);
	}
	return 0;
}

static void on_syn_reply(void *ud, uint32_t id, const struct spdy_header *h, size_t n, bool fin)
{
	struct side *d = ud;
	struct buf b = BUF_INIT;
	add_headers(&b, h, n);
	logf_(d, "reply %u%s fin=%d", id, buf_cstr(&b), fin);
	buf_release(&b);
}

static void on_data(void *ud, uint32_t id, const char *data, size_t len)
{
	struct side *d = ud;
	(void)id;
	buf_add(&d->data, data, len);
}

static void on_fin(void *ud, uint32_t id) { logf_(ud, "fin %u", id); }
static void on_rst(void *ud, uint32_t id, uint32_t st) { logf_(ud, "rst %u %u", id, st); }
static void on_ping(void *ud, uint32_t id) { logf_(ud, "ping %u", id); }
static void on_goaway(void *ud, uint32_t last, uint32_t st) { logf_(ud, "goaway %u %u", last, st); }
static void on_settings(void *ud, uint32_t id, uint32_t v, uint8_t fl) { logf_(ud, "setting %u=%u/%u", id, v, fl); }
static void on_window_update(void *ud, uint32_t id, uint32_t delta) { logf_(ud, "window %u +%u", id, delta); }
static void on_stream_closed(void *ud, uint32_t id) { logf_(ud, "closed %u", id); }

static const struct spdy_callbacks cbs = {
	.on_syn_stream = on_syn_stream, .on_syn_reply = on_syn_reply, .on_data = on_data, .on_fin = on_fin,
	.on_rst = on_rst, .on_ping = on_ping, .on_goaway = on_goaway, .on_settings = on_settings,
	.on_window_update = on_window_update, .on_stream_closed = on_stream_closed,
};

static void side_init(struct side *d, enum spdy_role role, const struct spdy_limits *lim, unsigned flags)
{
	memset(d, 0, sizeof(*d));
	d->s = spdy_session_new(role, &cbs, d, lim, flags);
	d->auto_reply = true;
}

static void side_release(struct side *d)
{
	spdy_session_free(d->s);
	buf_release(&d->log);
	buf_release(&d->data);
}

/* Moves everything from's output holds into to (step bytes per feed; 0: at once). */
static int pump(struct side *from, struct side *to, size_t step)
{
	const char *p;
	size_t len;
	int r = 0;
	while (r == 0 && (p = spdy_session_output(from->s, &len)) != NULL) {
		size_t n = step && step < len ? step : len;
		r = spdy_session_feed(to->s, p, n);
		spdy_session_output_consumed(from->s, n);
	}
	return r;
}

static void take_output(struct side *d, struct buf *b)
{
	const char *p;
	size_t len;
	buf_reset(b);
	if ((p = spdy_session_output(d->s, &len)) != NULL) {
		buf_add(b, p, len);
		spdy_session_output_consumed(d->s, len);
	}
}

static void test_dictionary(void **state)
{
	size_t len;
	const unsigned char *d = spdy_dictionary(&len);
	(void)state;
	/* the protocol constant: 1423 bytes, length-prefixed "options" first, "enq=0." last; its
	 * Adler-32 is the dictionary id zlib puts in the peer's stream (checked against containerd) */
	assert_int_equal(len, 1423);
	assert_memory_equal(d, "\0\0\0\7options\0\0\0\4head", 19);
	assert_memory_equal(d + len - 6, "enq=0.", 6);
	assert_int_equal(adler32(adler32(0, NULL, 0), d, (uInt)len), 0xe3c6a7c2);
}

static void test_roundtrip(void **state)
{
	struct side c, s;
	uint32_t id, id2;
	(void)state;
	side_init(&c, SPDY_CLIENT, NULL, 0);
	side_init(&s, SPDY_SERVER, NULL, 0);
	struct spdy_header h[] = { { "StreamType", "stdin", 0 }, { "port", "80", 0 } };
	assert_int_equal(spdy_open_stream(c.s, h, 2, 3, false, &id), 0);
	assert_int_equal(id, 1);
	assert_int_equal(spdy_open_stream(c.s, h, 1, 0, false, &id2), 0);
	assert_int_equal(id2, 3);
	assert_int_equal(spdy_send_data(c.s, id, "abc", 3, false), 0);
	assert_int_equal(pump(&c, &s, 0), 0);
	assert_string_equal(buf_cstr(&s.log), "syn 1 streamtype=stdin port=80 prio=3 assoc=0 fin=0\n"
					      "syn 3 streamtype=stdin prio=0 assoc=0 fin=0\n");
	assert_string_equal(buf_cstr(&s.data), "abc");
	assert_int_equal(pump(&s, &c, 0), 0);
	assert_string_equal(buf_cstr(&c.log), "reply 1 x-ok=yes fin=0\nreply 3 x-ok=yes fin=0\n");
	/* data the other way, FIN both ways: the side whose FIN came last from the peer sees closed */
	assert_int_equal(spdy_send_data(s.s, id, "hello", 5, true), 0);
	assert_int_equal(pump(&s, &c, 0), 0);
	assert_string_equal(buf_cstr(&c.data), "hello");
	assert_int_equal(spdy_close_stream(c.s, id), 0);
	assert_int_equal(pump(&c, &s, 0), 0);
	assert_non_null(strstr(buf_cstr(&s.log), "fin 1\nclosed 1\n"));
	assert_non_null(strstr(buf_cstr(&c.log), "fin 1\n"));
	assert_null(strstr(buf_cstr(&c.log), "closed 1")); /* the client's own FIN finished it */
	assert_int_equal(spdy_send_data(c.s, id, "x", 1, false), E_NOT_FOUND);
	assert_int_equal(spdy_send_data(s.s, id, "x", 1, false), E_NOT_FOUND);
	/* stream 3 still works */
	assert_int_equal(spdy_send_data(s.s, id2, "more", 4, false), 0);
	assert_int_equal(pump(&s, &c, 0), 0);
	assert_string_equal(buf_cstr(&c.data), "hellomore");
	side_release(&c);
	side_release(&s);
}

static void test_byte_by_byte(void **state)
{
	struct side c, s;
	uint32_t id;
	(void)state;
	side_init(&c, SPDY_CLIENT, NULL, 0);
	side_init(&s, SPDY_SERVER, NULL, 0);
	struct spdy_header h = { "streamtype", "data", 0 };
	for (int i = 0; i < 3; i++) {
		assert_int_equal(spdy_open_stream(c.s, &h, 1, 0, false, &id), 0);
		assert_int_equal(spdy_send_data(c.s, id, "0123456789", 10, true), 0);
	}
	assert_int_equal(pump(&c, &s, 1), 0);
	assert_string_equal(buf_cstr(&s.log), "syn 1 streamtype=data prio=0 assoc=0 fin=0\nfin 1\n"
					      "syn 3 streamtype=data prio=0 assoc=0 fin=0\nfin 3\n"
					      "syn 5 streamtype=data prio=0 assoc=0 fin=0\nfin 5\n");
	assert_string_equal(buf_cstr(&s.data), "012345678901234567890123456789");
	side_release(&c);
	side_release(&s);
}

static void test_server_role_and_fin_on_syn(void **state)
{
	struct side c, s;
	uint32_t id;
	(void)state;
	side_init(&c, SPDY_CLIENT, NULL, 0);
	side_init(&s, SPDY_SERVER, NULL, 0);
	struct spdy_header h = { "a", "b", 0 };
	assert_int_equal(spdy_open_stream(s.s, &h, 1, 0, true, &id), 0);
	assert_int_equal(id, 2);
	assert_int_equal(spdy_send_data(s.s, id, "x", 1, false), E_CONFLICT);
	assert_int_equal(pump(&s, &c, 0), 0);
	assert_string_equal(buf_cstr(&c.log), "syn 2 a=b prio=0 assoc=0 fin=1\nfin 2\n");
	/* the client's reply with FIN ends it on both sides */
	assert_int_equal(spdy_send_data(c.s, id, "x", 1, false), 0); /* auto-replied: data allowed */
	assert_int_equal(spdy_close_stream(c.s, id), 0);
	assert_int_equal(pump(&c, &s, 0), 0);
	assert_string_equal(buf_cstr(&s.log), "reply 2 x-ok=yes fin=0\nfin 2\nclosed 2\n");
	side_release(&c);
	side_release(&s);
}

static void test_ping_and_settings(void **state)
{
	struct side c, s;
	uint32_t pid;
	(void)state;
	side_init(&c, SPDY_CLIENT, NULL, 0);
	side_init(&s, SPDY_SERVER, NULL, 0);
	assert_int_equal(spdy_ping(c.s, &pid), 0);
	assert_int_equal(pid, 1);
	assert_int_equal(pump(&c, &s, 0), 0);
	assert_string_equal(buf_cstr(&s.log), ""); /* answered, not reported */
	assert_int_equal(pump(&s, &c, 0), 0);
	assert_string_equal(buf_cstr(&c.log), "ping 1\n");
	/* INITIAL_WINDOW_SIZE moves the send windows of open streams */
	uint32_t id;
	struct spdy_header h = { "a", "b", 0 };
	assert_int_equal(spdy_open_stream(c.s, &h, 1, 0, false, &id), 0);
	assert_int_equal(spdy_send_data(c.s, id, "12345", 5, false), 0);
	assert_int_equal(spdy_stream_send_window(c.s, id), 65536 - 5);
	assert_int_equal(spdy_send_setting(s.s, SPDY_SETTINGS_INITIAL_WINDOW_SIZE, 1000), 0);
	assert_int_equal(pump(&s, &c, 0), 0);
	assert_non_null(strstr(buf_cstr(&c.log), "setting 7=1000/0\n"));
	assert_int_equal(spdy_stream_send_window(c.s, id), 995);
	assert_true(spdy_stream_send_window(c.s, 99) == INT64_MIN);
	side_release(&c);
	side_release(&s);
}

static void test_window_updates(void **state)
{
	struct side c, s;
	uint32_t id;
	static char big[100000];
	(void)state;
	memset(big, 'z', sizeof(big));
	side_init(&c, SPDY_CLIENT, NULL, 0);
	side_init(&s, SPDY_SERVER, NULL, 0);
	struct spdy_header h = { "a", "b", 0 };
	assert_int_equal(spdy_open_stream(c.s, &h, 1, 0, false, &id), 0);
	size_t before = spdy_session_output_len(c.s);
	assert_int_equal(spdy_send_data(c.s, id, big, sizeof(big), false), 0);
	/* split into frames of at most SPDY_MAX_DATA_FRAME: 4 frame heads for 100000 bytes */
	assert_int_equal(spdy_session_output_len(c.s) - before, sizeof(big) + 4 * 8);
	assert_int_equal(pump(&c, &s, 0), 0);
	assert_int_equal(s.data.len, sizeof(big));
	assert_int_equal(pump(&s, &c, 0), 0);
	/* 100000 bytes: credited once per 32 KiB consumed, stream and session */
	assert_non_null(strstr(buf_cstr(&c.log), "window 1 +"));
	assert_non_null(strstr(buf_cstr(&c.log), "window 0 +"));
	assert_true(spdy_stream_send_window(c.s, id) > 65536 - 100000);
	side_release(&c);
	side_release(&s);

	/* manual: nothing until the application says it consumed the data */
	side_init(&c, SPDY_CLIENT, NULL, 0);
	side_init(&s, SPDY_SERVER, NULL, SPDY_MANUAL_WINDOW);
	assert_int_equal(spdy_open_stream(c.s, &h, 1, 0, false, &id), 0);
	assert_int_equal(pump(&c, &s, 0), 0);
	assert_int_equal(pump(&s, &c, 0), 0);
	assert_int_equal(spdy_send_data(c.s, id, big, 40000, false), 0);
	assert_int_equal(pump(&c, &s, 0), 0);
	assert_int_equal(spdy_session_output_len(s.s), 0);
	assert_int_equal(spdy_stream_consumed(s.s, id, 40000), 0);
	assert_int_equal(pump(&s, &c, 0), 0);
	assert_non_null(strstr(buf_cstr(&c.log), "window 1 +40000\n"));
	assert_non_null(strstr(buf_cstr(&c.log), "window 0 +40000\n"));
	assert_int_equal(spdy_stream_consumed(s.s, 77, 1), E_NOT_FOUND);
	side_release(&c);
	side_release(&s);
}

static void test_refuse_and_reset(void **state)
{
	struct side c, s;
	uint32_t id;
	(void)state;
	side_init(&c, SPDY_CLIENT, NULL, 0);
	side_init(&s, SPDY_SERVER, NULL, 0);
	s.refuse = SPDY_RST_REFUSED_STREAM;
	struct spdy_header h = { "a", "b", 0 };
	assert_int_equal(spdy_open_stream(c.s, &h, 1, 0, false, &id), 0);
	assert_int_equal(pump(&c, &s, 0), 0);
	assert_int_equal(pump(&s, &c, 0), 0);
	assert_string_equal(buf_cstr(&c.log), "rst 1 3\nclosed 1\n");
	assert_int_equal(spdy_send_data(c.s, id, "x", 1, false), E_NOT_FOUND);
	/* data on the refused stream now reaches a server that forgot it: RST INVALID_STREAM, no harm */
	s.refuse = 0;
	assert_int_equal(spdy_open_stream(c.s, &h, 1, 0, false, &id), 0);
	assert_int_equal(pump(&c, &s, 0), 0);
	assert_int_equal(pump(&s, &c, 0), 0);
	assert_int_equal(spdy_reset_stream(c.s, id, SPDY_RST_CANCEL), 0);
	assert_int_equal(spdy_reset_stream(c.s, id, SPDY_RST_CANCEL), E_NOT_FOUND);
	assert_int_equal(pump(&c, &s, 0), 0);
	assert_non_null(strstr(buf_cstr(&s.log), "rst 3 5\nclosed 3\n"));
	/* a DATA frame for a stream nobody opened */
	static const unsigned char stray[] = { 0, 0, 0, 9, 0, 0, 0, 2, 'h', 'i' };
	assert_int_equal(spdy_session_feed(s.s, stray, sizeof(stray)), 0);
	struct buf out = BUF_INIT;
	take_output(&s, &out);
	static const unsigned char rst[] = { 0x80, 3, 0, 3, 0, 0, 0, 8, 0, 0, 0, 9, 0, 0, 0, 2 };
	assert_int_equal(out.len, sizeof(rst));
	assert_memory_equal(out.ptr, rst, sizeof(rst));
	buf_release(&out);
	side_release(&c);
	side_release(&s);
}

static void test_goaway(void **state)
{
	struct side c, s;
	uint32_t id;
	(void)state;
	side_init(&c, SPDY_CLIENT, NULL, 0);
	side_init(&s, SPDY_SERVER, NULL, 0);
	struct spdy_header h = { "a", "b", 0 };
	assert_int_equal(spdy_open_stream(c.s, &h, 1, 0, false, &id), 0);
	assert_int_equal(pump(&c, &s, 0), 0);
	assert_int_equal(spdy_goaway(s.s, SPDY_GOAWAY_OK), 0);
	assert_true(spdy_session_closing(s.s));
	assert_int_equal(pump(&s, &c, 0), 0);
	assert_non_null(strstr(buf_cstr(&c.log), "goaway 1 0\n"));
	assert_int_equal(spdy_open_stream(c.s, &h, 1, 0, false, &id), E_UNAVAILABLE);
	assert_int_equal(spdy_send_data(c.s, 1, "still", 5, false), 0); /* existing streams go on */
	side_release(&c);
	side_release(&s);
}

/* Feeds one hand-made frame to a fresh server; what feed returned, and whether GOAWAY was queued. */
static int feed_server(const void *frame, size_t len, const struct spdy_limits *lim, bool *ret_goaway)
{
	struct side s;
	side_init(&s, SPDY_SERVER, lim, 0);
	int r = spdy_session_feed(s.s, frame, len);
	struct buf out = BUF_INIT;
	take_output(&s, &out);
	*ret_goaway = out.len >= 16 && (unsigned char)out.ptr[out.len - 16] == 0x80 && out.ptr[out.len - 13] == 7;
	if (r) {
		assert_int_equal(spdy_session_feed(s.s, "", 0), r); /* dead for good */
		assert_int_equal(spdy_session_error(s.s), r);
		assert_int_equal(spdy_ping(s.s, NULL), E_UNAVAILABLE);
	}
	buf_release(&out);
	side_release(&s);
	return r;
}

static void test_protocol_errors(void **state)
{
	bool goaway;
	(void)state;
	/* a frame longer than max_frame: refused from its head alone */
	static const unsigned char huge[] = { 0, 0, 0, 1, 0, 0x20, 0, 0 };
	assert_int_equal(feed_server(huge, sizeof(huge), NULL, &goaway), E_TOO_LARGE);
	assert_true(goaway);
	/* wrong version */
	static const unsigned char v2[] = { 0x80, 2, 0, 6, 0, 0, 0, 4, 0, 0, 0, 1 };
	assert_int_equal(feed_server(v2, sizeof(v2), NULL, &goaway), E_BAD_REQUEST);
	assert_true(goaway);
	/* RST_STREAM / PING / WINDOW_UPDATE / GOAWAY of the wrong length */
	static const unsigned char rst[] = { 0x80, 3, 0, 3, 0, 0, 0, 4, 0, 0, 0, 1 };
	assert_int_equal(feed_server(rst, sizeof(rst), NULL, &goaway), E_BAD_REQUEST);
	static const unsigned char ping[] = { 0x80, 3, 0, 6, 0, 0, 0, 5, 0, 0, 0, 1, 0 };
	assert_int_equal(feed_server(ping, sizeof(ping), NULL, &goaway), E_BAD_REQUEST);
	static const unsigned char wu0[] = { 0x80, 3, 0, 9, 0, 0, 0, 8, 0, 0, 0, 0, 0, 0, 0, 0 };
	assert_int_equal(feed_server(wu0, sizeof(wu0), NULL, &goaway), E_BAD_REQUEST); /* delta 0 */
	/* SETTINGS whose count does not match its length */
	static const unsigned char set[] = { 0x80, 3, 0, 4, 0, 0, 0, 12, 0, 0, 0, 2, 0, 0, 0, 7, 0, 0, 0, 1 };
	assert_int_equal(feed_server(set, sizeof(set), NULL, &goaway), E_BAD_REQUEST);
	/* SYN_STREAM with garbage for a header block, and one too short */
	static const unsigned char syn_bad[] = { 0x80, 3, 0, 1, 0, 0, 0, 14, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0,
						 'j', 'u', 'n', 'k' };
	assert_int_equal(feed_server(syn_bad, sizeof(syn_bad), NULL, &goaway), E_BAD_REQUEST);
	static const unsigned char syn_short[] = { 0x80, 3, 0, 1, 0, 0, 0, 4, 0, 0, 0, 1 };
	assert_int_equal(feed_server(syn_short, sizeof(syn_short), NULL, &goaway), E_BAD_REQUEST);
	/* an unknown control type is skipped */
	static const unsigned char unk[] = { 0x80, 3, 0, 0x42, 0, 0, 0, 2, 1, 2 };
	assert_int_equal(feed_server(unk, sizeof(unk), NULL, &goaway), 0);
	assert_false(goaway);
}

static void test_stream_id_rules(void **state)
{
	struct side c, s;
	uint32_t id;
	(void)state;
	/* a server receiving a stream with a server's (even) id: protocol error */
	side_init(&c, SPDY_SERVER, NULL, 0); /* plays the wrong role */
	side_init(&s, SPDY_SERVER, NULL, 0);
	struct spdy_header h = { "a", "b", 0 };
	assert_int_equal(spdy_open_stream(c.s, &h, 1, 0, false, &id), 0);
	assert_int_equal(pump(&c, &s, 0), E_BAD_REQUEST);
	side_release(&c);
	side_release(&s);
	/* ids must grow: SYN_STREAM 3 then 1 (empty header blocks, so no compressor is involved) */
	side_init(&s, SPDY_SERVER, NULL, 0);
	static const unsigned char syn3[] = { 0x80, 3, 0, 1, 0, 0, 0, 10, 0, 0, 0, 3, 0, 0, 0, 0, 0, 0 };
	static const unsigned char syn1[] = { 0x80, 3, 0, 1, 0, 0, 0, 10, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0 };
	assert_int_equal(spdy_session_feed(s.s, syn3, sizeof(syn3)), 0);
	assert_string_equal(buf_cstr(&s.log), "syn 3 prio=0 assoc=0 fin=0\n");
	assert_int_equal(spdy_session_feed(s.s, syn3, sizeof(syn3)), E_BAD_REQUEST); /* the same id again */
	side_release(&s);
	side_init(&s, SPDY_SERVER, NULL, 0);
	assert_int_equal(spdy_session_feed(s.s, syn3, sizeof(syn3)), 0);
	assert_int_equal(spdy_session_feed(s.s, syn1, sizeof(syn1)), E_BAD_REQUEST);
	side_release(&s);
}

static void test_header_limits(void **state)
{
	struct side c, s;
	uint32_t id;
	(void)state;
	struct spdy_limits lim = spdy_limits_default();
	lim.max_header_block = 1000;
	lim.max_headers = 4;
	lim.max_streams = 2;
	side_init(&c, SPDY_CLIENT, NULL, 0);
	side_init(&s, SPDY_SERVER, &lim, 0);
	/* max_streams: the third open stream is refused, the session lives */
	struct spdy_header h = { "a", "b", 0 };
	for (int i = 0; i < 3; i++)
		assert_int_equal(spdy_open_stream(c.s, &h, 1, 0, false, &id), 0);
	assert_int_equal(pump(&c, &s, 0), 0);
	assert_int_equal(pump(&s, &c, 0), 0);
	assert_non_null(strstr(buf_cstr(&c.log), "rst 5 3\n"));
	/* too many headers */
	struct spdy_header many[5] = { { "a", "1", 0 }, { "b", "2", 0 }, { "c", "3", 0 }, { "d", "4", 0 }, { "e", "5", 0 } };
	assert_int_equal(spdy_open_stream(c.s, many, 5, 0, false, &id), 0);
	assert_int_equal(pump(&c, &s, 0), E_TOO_LARGE);
	side_release(&c);
	side_release(&s);
	/* a value that inflates beyond max_header_block (compresses to almost nothing) */
	side_init(&c, SPDY_CLIENT, NULL, 0);
	side_init(&s, SPDY_SERVER, &lim, 0);
	static char v[5000];
	memset(v, 'q', sizeof(v) - 1);
	struct spdy_header big = { "big", v, 0 };
	assert_int_equal(spdy_open_stream(c.s, &big, 1, 0, false, &id), 0);
	assert_true(spdy_session_output_len(c.s) < 200);
	assert_int_equal(pump(&c, &s, 0), E_TOO_LARGE);
	side_release(&c);
	side_release(&s);
	/* sending: an empty name is refused */
	side_init(&c, SPDY_CLIENT, NULL, 0);
	struct spdy_header empty = { "", "x", 0 };
	assert_int_equal(spdy_open_stream(c.s, &empty, 1, 0, false, &id), E_INVALID);
	side_release(&c);
}

static void test_send_errors(void **state)
{
	struct side c, s;
	uint32_t id;
	(void)state;
	side_init(&c, SPDY_CLIENT, NULL, 0);
	side_init(&s, SPDY_SERVER, NULL, 0);
	s.auto_reply = false;
	struct spdy_header h = { "a", "b", 0 };
	assert_int_equal(spdy_send_data(c.s, 1, "x", 1, false), E_NOT_FOUND);
	assert_int_equal(spdy_open_stream(c.s, &h, 1, 0, false, &id), 0);
	assert_int_equal(spdy_reply(c.s, id, &h, 1, false), E_INVALID); /* our own stream */
	assert_int_equal(pump(&c, &s, 0), 0);
	assert_int_equal(spdy_send_data(s.s, id, "x", 1, false), E_INVALID); /* not replied yet */
	assert_int_equal(spdy_reply(s.s, id, NULL, 0, false), 0);
	assert_int_equal(spdy_reply(s.s, id, NULL, 0, false), E_INVALID); /* twice */
	assert_int_equal(spdy_send_data(s.s, id, "x", 1, true), 0);
	assert_int_equal(spdy_send_data(s.s, id, "x", 1, false), E_CONFLICT);
	assert_int_equal(pump(&s, &c, 0), 0);
	assert_string_equal(buf_cstr(&c.log), "reply 1 fin=0\nfin 1\n");
	side_release(&c);
	side_release(&s);
}

static void test_header_get(void **state)
{
	struct spdy_header h[] = { { "streamtype", "error", 5 }, { "port", "8080", 4 } };
	(void)state;
	assert_string_equal(spdy_header_get(h, 2, "Port"), "8080");
	assert_string_equal(spdy_header_get(h, 2, "streamType"), "error");
	assert_null(spdy_header_get(h, 2, "requestid"));
	assert_null(spdy_header_get(NULL, 0, "x"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_dictionary),
		cmocka_unit_test(test_roundtrip),
		cmocka_unit_test(test_byte_by_byte),
		cmocka_unit_test(test_server_role_and_fin_on_syn),
		cmocka_unit_test(test_ping_and_settings),
		cmocka_unit_test(test_window_updates),
		cmocka_unit_test(test_refuse_and_reset),
		cmocka_unit_test(test_goaway),
		cmocka_unit_test(test_protocol_errors),
		cmocka_unit_test(test_stream_id_rules),
		cmocka_unit_test(test_header_limits),
		cmocka_unit_test(test_send_errors),
		cmocka_unit_test(test_header_get),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
