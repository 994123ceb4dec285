/* Unit tests of the protobuf codec and the gRPC framing of the etcd client (no etcd needed). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "etcd/etcd_internal.h"
#include "etcd/pb.h"
#include "ursa/errors.h"

static void test_varint_roundtrip(void **state)
{
	static const uint64_t vals[] = { 0, 1, 127, 128, 300, 16383, 16384, UINT32_MAX, (uint64_t)INT64_MAX,
					 (uint64_t)-1, (uint64_t)INT64_MIN };
	for (size_t i = 0; i < sizeof(vals) / sizeof(vals[0]); i++) {
		struct buf b = BUF_INIT;
		struct pb_reader r;
		struct pb_field f;
		/* field 1, varint */
		pb_put_varint(&b, 1 << 3);
		pb_put_varint(&b, vals[i]);
		pb_reader_init(&r, b.ptr, b.len);
		assert_int_equal(pb_next(&r, &f), 1);
		assert_int_equal(f.num, 1);
		assert_int_equal(f.wire, PB_VARINT);
		assert_true(f.v == vals[i]);
		assert_int_equal(pb_next(&r, &f), 0);
		buf_release(&b);
	}
}

/* Known encodings from the protobuf documentation: 150 is 08 96 01. */
static void test_known_bytes(void **state)
{
	struct buf b = BUF_INIT;

	pb_put_int(&b, 1, 150);
	assert_int_equal(b.len, 3);
	assert_memory_equal(b.ptr, "\x08\x96\x01", 3);
	buf_reset(&b);
	pb_put_bytes(&b, 2, "testing", 7);
	assert_memory_equal(b.ptr, "\x12\x07testing", 9);
	buf_reset(&b);
	/* proto3 defaults are omitted; a negative int64 takes ten bytes */
	pb_put_int(&b, 3, 0);
	pb_put_bool(&b, 4, false);
	assert_int_equal(b.len, 0);
	pb_put_int(&b, 3, -1);
	assert_int_equal(b.len, 11);
	buf_release(&b);
}

static void test_reader_rejects(void **state)
{
	static const struct {
		const char *data;
		size_t len;
	} bad[] = {
		{ "\x08", 1 },                                               /* varint missing */
		{ "\x08\x80", 2 },                                           /* varint truncated */
		{ "\x08\xff\xff\xff\xff\xff\xff\xff\xff\xff\x7f", 11 },      /* over 64 bits */
		{ "\x08\xff\xff\xff\xff\xff\xff\xff\xff\xff\x81\x00", 12 },  /* 11 bytes */
		{ "\x12\x05" "abc", 5 },                                     /* length past the end */
		{ "\x12\xff\xff\xff\xff\xff\xff\xff\xff\x7f", 10 },          /* huge length */
		{ "\x09" "1234567", 8 },                                     /* fixed64 truncated */
		{ "\x0d" "123", 4 },                                         /* fixed32 truncated */
		{ "\x0b", 1 },                                               /* start group */
		{ "\x0c", 1 },                                               /* end group */
		{ "\x0e\x00", 2 },                                           /* wire type 6 */
		{ "\x00\x00", 2 },                                           /* field 0 */
		{ "\x80\x80\x80\x80\x80\x01\x00", 7 },                       /* tag over 32 bits */
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct pb_reader r;
		struct pb_field f;
		int rc;
		pb_reader_init(&r, bad[i].data, bad[i].len);
		while ((rc = pb_next(&r, &f)) > 0)
			;
		assert_int_equal(rc, E_INTERNAL);
	}
}

/* Builds a KeyValue with the encoder, as etcd would send it. */
static void kv_msg(struct buf *b, const char *key, const char *val, size_t val_len, int64_t c, int64_t m,
		   int64_t v, int64_t lease)
{
	pb_put_bytes(b, 1, key, strlen(key));
	pb_put_int(b, 2, c);
	pb_put_int(b, 3, m);
	pb_put_int(b, 4, v);
	if (val_len)
		pb_put_bytes(b, 5, val, val_len);
	pb_put_int(b, 6, lease);
}

static void header_msg(struct buf *b, int64_t rev)
{
	struct buf h = BUF_INIT;
	pb_put_int(&h, 1, 77);        /* cluster_id */
	pb_put_int(&h, 2, 88);        /* member_id */
	pb_put_int(&h, 3, rev);
	pb_put_int(&h, 4, 5);         /* raft_term */
	pb_put_bytes(&h, 9, "??", 2); /* a field this client does not know */
	etcd_pb_put_msg(b, 1, &h);
	buf_release(&h);
}

static void test_range_response(void **state)
{
	struct buf b = BUF_INIT, kv = BUF_INIT;
	struct etcd_range_result r;

	header_msg(&b, 9);
	kv_msg(&kv, "foo", "b\0z", 3, 2, 4, 3, 12345);
	etcd_pb_put_msg(&b, 2, &kv);
	buf_reset(&kv);
	kv_msg(&kv, "fop", NULL, 0, 5, 5, 1, 0);
	/* unknown fields of every skippable wire type inside the kv */
	pb_put_int(&kv, 100, 1);
	buf_add(&kv, "\x99\x06" "12345678", 10); /* field 99, fixed64 */
	buf_add(&kv, "\x9d\x06" "1234", 6);      /* field 99, fixed32 */
	etcd_pb_put_msg(&b, 2, &kv);
	pb_put_bool(&b, 3, true);
	pb_put_int(&b, 4, 3);
	assert_int_equal(etcd_pb_decode_range(b.ptr, b.len, &r), 0);
	assert_int_equal(r.n, 2);
	assert_int_equal(r.count, 3);
	assert_true(r.more);
	assert_int_equal(r.revision, 9);
	assert_string_equal(r.kvs[0].key, "foo");
	assert_int_equal(r.kvs[0].value_len, 3);
	assert_memory_equal(r.kvs[0].value, "b\0z", 4);
	assert_int_equal(r.kvs[0].create_rev, 2);
	assert_int_equal(r.kvs[0].mod_rev, 4);
	assert_int_equal(r.kvs[0].version, 3);
	assert_int_equal(r.kvs[0].lease, 12345);
	assert_string_equal(r.kvs[1].key, "fop");
	assert_string_equal(r.kvs[1].value, "");
	assert_int_equal(r.kvs[1].value_len, 0);
	etcd_range_result_release(&r);

	/* every proper prefix is malformed or a smaller valid message, never a crash or a leak */
	for (size_t n = 0; n < b.len; n++) {
		if (etcd_pb_decode_range(b.ptr, n, &r) == 0)
			etcd_range_result_release(&r);
		else
			assert_null(r.kvs);
	}
	/* the empty message: header omitted, everything 0 */
	assert_int_equal(etcd_pb_decode_range("", 0, &r), 0);
	assert_int_equal(r.n, 0);
	assert_int_equal(r.revision, 0);
	/* kvs with the wrong wire type */
	assert_int_equal(etcd_pb_decode_range("\x10\x01", 2, &r), E_INTERNAL);
	/* a kv whose length overruns its parent */
	assert_int_equal(etcd_pb_decode_range("\x12\x03\x0a\x05" "ab", 6, &r), E_INTERNAL);
	assert_null(r.kvs);
	buf_release(&b);
	buf_release(&kv);
}

static void test_txn_response(void **state)
{
	struct buf b = BUF_INIT, op = BUF_INIT, inner = BUF_INIT, kv = BUF_INIT;
	struct etcd_pb_txn_result t;
	struct etcd_pb_delete_result d;
	int64_t rev;

	header_msg(&b, 42);
	pb_put_bool(&b, 2, true);
	/* responses[0]: response_delete_range {deleted 1, prev_kvs [k]} */
	header_msg(&inner, 42);
	pb_put_int(&inner, 2, 1);
	kv_msg(&kv, "k", "v", 1, 3, 40, 2, 0);
	etcd_pb_put_msg(&inner, 3, &kv);
	etcd_pb_put_msg(&op, ETCD_OP_DELETE, &inner);
	etcd_pb_put_msg(&b, 3, &op);
	/* responses[1]: response_put {header} */
	buf_reset(&op);
	buf_reset(&inner);
	header_msg(&inner, 42);
	etcd_pb_put_msg(&op, ETCD_OP_PUT, &inner);
	etcd_pb_put_msg(&b, 3, &op);

	assert_int_equal(etcd_pb_decode_txn(b.ptr, b.len, &t), 0);
	assert_int_equal(t.revision, 42);
	assert_true(t.succeeded);
	assert_int_equal(t.n, 2);
	assert_int_equal(t.ops[0].kind, ETCD_OP_DELETE);
	assert_int_equal(t.ops[1].kind, ETCD_OP_PUT);
	assert_int_equal(etcd_pb_decode_delete(t.ops[0].data, t.ops[0].len, &d), 0);
	assert_int_equal(d.deleted, 1);
	assert_int_equal(d.revision, 42);
	assert_string_equal(d.prev.key, "k");
	assert_string_equal(d.prev.value, "v");
	assert_int_equal(d.prev.mod_rev, 40);
	etcd_kv_release(&d.prev);
	assert_int_equal(etcd_pb_response_rev(t.ops[1].data, t.ops[1].len, &rev), 0);
	assert_int_equal(rev, 42);
	etcd_pb_txn_release(&t);

	/* a ResponseOp with no member is malformed */
	assert_int_equal(etcd_pb_decode_txn("\x1a\x00", 2, &t), E_INTERNAL);
	assert_null(t.ops);
	for (size_t n = 0; n < b.len; n++)
		if (etcd_pb_decode_txn(b.ptr, n, &t) == 0)
			etcd_pb_txn_release(&t);
	buf_release(&b);
	buf_release(&op);
	buf_release(&inner);
	buf_release(&kv);
}

/* The request encoders produce what the decoders (and etcd) read back. */
static void test_requests(void **state)
{
	struct buf b = BUF_INIT;
	struct pb_reader r;
	struct pb_field f;

	etcd_pb_range_request(&b, "", "", 7, 10, true, false);
	pb_reader_init(&r, b.ptr, b.len);
	assert_int_equal(pb_next(&r, &f), 1);
	assert_int_equal(f.num, 1);
	assert_int_equal(f.len, 1); /* "" with a range end is sent as "\0" */
	assert_int_equal(f.data[0], 0);
	assert_int_equal(pb_next(&r, &f), 1);
	assert_int_equal(f.num, 2);
	assert_int_equal(f.len, 1);
	assert_int_equal(pb_next(&r, &f), 1);
	assert_int_equal(f.num, 3);
	assert_int_equal(f.v, 10);
	assert_int_equal(pb_next(&r, &f), 1);
	assert_int_equal(f.num, 4);
	assert_int_equal(f.v, 7);
	assert_int_equal(pb_next(&r, &f), 1);
	assert_int_equal(f.num, 8);
	assert_int_equal(f.v, 1);
	assert_int_equal(pb_next(&r, &f), 0);

	/* a compare against 0 still carries its target_union member */
	buf_reset(&b);
	etcd_pb_compare(&b, "k", ETCD_CMP_CREATE, ETCD_CMP_EQUAL, 0);
	assert_int_equal(b.len, 7);
	assert_memory_equal(b.ptr, "\x10\x01\x1a\x01k\x28\x00", 7);
	buf_reset(&b);
	etcd_pb_compare(&b, "k", ETCD_CMP_MOD, ETCD_CMP_GREATER, 300);
	assert_int_equal(b.len, 10);
	assert_memory_equal(b.ptr, "\x08\x01\x10\x02\x1a\x01k\x30\xac\x02", 10);
	buf_release(&b);
}

/* WatchRequest{create_request{key, range_end, start_revision, prev_kv, fragment}}. */
static void test_watch_create(void **state)
{
	struct buf b = BUF_INIT;
	struct pb_reader r, c;
	struct pb_field f;

	etcd_pb_watch_create(&b, "/r/pods/", "/r/pods0", 300, true, true);
	pb_reader_init(&r, b.ptr, b.len);
	assert_int_equal(pb_next(&r, &f), 1);
	assert_int_equal(f.num, 1);
	assert_int_equal(f.wire, PB_LEN);
	pb_reader_init(&c, f.data, f.len);
	struct pb_field rest;
	assert_int_equal(pb_next(&r, &rest), 0);
	static const struct {
		uint32_t num;
		const char *bytes;
		uint64_t v;
	} want[] = { { 1, "/r/pods/", 0 }, { 2, "/r/pods0", 0 }, { 3, NULL, 300 }, { 6, NULL, 1 }, { 8, NULL, 1 } };
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		assert_int_equal(pb_next(&c, &f), 1);
		assert_int_equal(f.num, want[i].num);
		if (want[i].bytes) {
			assert_int_equal(f.len, strlen(want[i].bytes));
			assert_memory_equal(f.data, want[i].bytes, f.len);
		} else {
			assert_int_equal(f.v, want[i].v);
		}
	}
	assert_int_equal(pb_next(&c, &f), 0);
	/* from now, without prev_kv or fragments: only the key and range end */
	buf_reset(&b);
	etcd_pb_watch_create(&b, "k", NULL, 0, false, false);
	assert_int_equal(b.len, 5);
	assert_memory_equal(b.ptr, "\x0a\x03\x0a\x01k", 5);
	buf_release(&b);
}

static void event_msg(struct buf *b, int type, const char *key, const char *val, int64_t rev, bool prev)
{
	struct buf ev = BUF_INIT, kv = BUF_INIT;
	pb_put_int(&ev, 1, type);
	kv_msg(&kv, key, val, val ? strlen(val) : 0, 2, rev, 1, 0);
	etcd_pb_put_msg(&ev, 2, &kv);
	if (prev) {
		buf_reset(&kv);
		kv_msg(&kv, key, "old", 3, 2, rev - 1, 1, 0);
		etcd_pb_put_msg(&ev, 3, &kv);
	}
	etcd_pb_put_msg(b, 11, &ev);
	buf_release(&ev);
	buf_release(&kv);
}

static void test_watch_response(void **state)
{
	struct buf b = BUF_INIT;
	struct etcd_watch_msg m;

	/* created */
	header_msg(&b, 41);
	pb_put_bool(&b, 3, true);
	assert_int_equal(etcd_pb_decode_watch(b.ptr, b.len, &m), 0);
	assert_true(m.created);
	assert_false(m.canceled);
	assert_int_equal(m.header_rev, 41);
	assert_int_equal(m.n_events, 0);
	etcd_watch_msg_release(&m);

	/* events: a put with prev_kv, a delete; a fragment; an unknown field */
	buf_reset(&b);
	header_msg(&b, 44);
	pb_put_int(&b, 2, 1);
	pb_put_bool(&b, 7, true);
	event_msg(&b, 0, "/a", "{\"x\":1}", 43, true);
	event_msg(&b, 1, "/b", NULL, 44, false);
	pb_put_bytes(&b, 6, "", 0); /* an empty cancel_reason */
	pb_put_int(&b, 99, 5);
	assert_int_equal(etcd_pb_decode_watch(b.ptr, b.len, &m), 0);
	assert_int_equal(m.watch_id, 1);
	assert_true(m.fragment);
	assert_int_equal(m.n_events, 2);
	assert_int_equal(m.events[0].type, ETCD_EV_PUT);
	assert_string_equal(m.events[0].kv.key, "/a");
	assert_string_equal(m.events[0].kv.value, "{\"x\":1}");
	assert_int_equal(m.events[0].kv.mod_rev, 43);
	assert_string_equal(m.events[0].prev_kv.value, "old");
	assert_int_equal(m.events[1].type, ETCD_EV_DELETE);
	assert_string_equal(m.events[1].kv.key, "/b");
	assert_int_equal(m.events[1].kv.mod_rev, 44);
	assert_null(m.events[1].prev_kv.key);
	etcd_watch_msg_release(&m);
	/* every proper prefix decodes to fewer events or fails, never a crash or a leak */
	for (size_t n = 0; n < b.len; n++) {
		if (etcd_pb_decode_watch(b.ptr, n, &m) == 0)
			etcd_watch_msg_release(&m);
		else
			assert_null(m.events);
	}

	/* canceled by compaction */
	buf_reset(&b);
	pb_put_bool(&b, 4, true);
	pb_put_int(&b, 5, 30);
	assert_int_equal(etcd_pb_decode_watch(b.ptr, b.len, &m), 0);
	assert_true(m.canceled);
	assert_int_equal(m.compact_rev, 30);
	etcd_watch_msg_release(&m);

	/* malformed: an event type other than PUT or DELETE, an event without kv, a kv twice,
	 * created with the wrong wire type */
	const char *bad[] = { "\x5a\x02\x08\x02", "\x5a\x02\x08\x01", "\x5a\x08\x12\x02\x0a\x00\x12\x02\x0a\x00",
			      "\x1a\x00" };
	const size_t bad_len[] = { 4, 4, 10, 2 };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(etcd_pb_decode_watch(bad[i], bad_len[i], &m), E_INTERNAL);
		assert_null(m.events);
		assert_int_equal(m.n_events, 0);
	}
	buf_release(&b);
}

static void test_grpc_frame(void **state)
{
	const uint8_t *msg;
	size_t len;

	assert_int_equal(grpc_unframe("\0\0\0\0\3abc", 8, 100, &msg, &len), 0);
	assert_int_equal(len, 3);
	assert_memory_equal(msg, "abc", 3);
	assert_int_equal(grpc_unframe("\0\0\0\0\0", 5, 100, &msg, &len), 0);
	assert_int_equal(len, 0);
	assert_int_equal(grpc_unframe("\1\0\0\0\3abc", 8, 100, &msg, &len), E_INTERNAL); /* compressed */
	assert_int_equal(grpc_unframe("\0\0\0\0\4abc", 8, 100, &msg, &len), E_INTERNAL); /* truncated */
	assert_int_equal(grpc_unframe("\0\0\0\0\2abc", 8, 100, &msg, &len), E_INTERNAL); /* trailing */
	assert_int_equal(grpc_unframe("\0\0\0\0\3abc", 8, 2, &msg, &len), E_INTERNAL);   /* over cap */
	assert_int_equal(grpc_unframe("\0\0\0", 3, 100, &msg, &len), E_INTERNAL);
}

static void test_grpc_status(void **state)
{
	struct grpc_status st = GRPC_STATUS_INIT;
	static const char *ignored[] = { "grpc-status: x\r\n", "grpc-status: -1\r\n", "grpc-status: 99999\r\n",
					 "grpc-status:\r\n", "HTTP/2 200\r\n", "\r\n", "grpc-statusx: 3\r\n" };

	for (size_t i = 0; i < sizeof(ignored) / sizeof(ignored[0]); i++)
		grpc_status_header_line(&st, ignored[i], strlen(ignored[i]));
	assert_false(st.has_code);
	grpc_status_header_line(&st, "Grpc-Status: 11\r\n", 17);
	assert_true(st.has_code);
	assert_int_equal(st.code, 11);
	const char *m = "grpc-message: etcdserver: mvcc%3A required revision has been compacted%\r\n";
	grpc_status_header_line(&st, m, strlen(m));
	assert_string_equal(st.message.ptr, "etcdserver: mvcc: required revision has been compacted%");
	assert_int_equal(etcd_grpc_error(st.code, st.message.ptr), E_GONE);
	buf_release(&st.message);

	struct buf out = BUF_INIT;
	grpc_pct_decode("a%2", 3, 100, &out);
	assert_string_equal(out.ptr, "a%2");
	buf_reset(&out);
	grpc_pct_decode("%41%zz%4a", 9, 100, &out);
	assert_string_equal(out.ptr, "A%zzJ");
	buf_reset(&out);
	grpc_pct_decode("abcdef", 6, 3, &out);
	assert_string_equal(out.ptr, "abc");
	buf_release(&out);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_varint_roundtrip),
		cmocka_unit_test(test_known_bytes),
		cmocka_unit_test(test_reader_rejects),
		cmocka_unit_test(test_range_response),
		cmocka_unit_test(test_txn_response),
		cmocka_unit_test(test_requests),
		cmocka_unit_test(test_watch_create),
		cmocka_unit_test(test_watch_response),
		cmocka_unit_test(test_grpc_frame),
		cmocka_unit_test(test_grpc_status),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
