/* Fuzzes the etcd client's gRPC/protobuf decoders: the whole input goes through every message
 * decoder (RangeResponse, DeleteRangeResponse, TxnResponse and each of its ResponseOps,
 * KeyValue, any header, the watch stream's WatchResponse), the field reader, the gRPC frame parser; each line goes through the
 * grpc-status / grpc-message header parser. Results are checked for their invariants. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "etcd/etcd_internal.h"
#include "etcd/pb.h"

static void check_kv(const struct etcd_kv *kv)
{
	if (!kv->key || !kv->value || kv->value[kv->value_len] != '\0')
		abort();
}

static void range(const uint8_t *p, size_t len)
{
	struct etcd_range_result r;

	if (etcd_pb_decode_range(p, len, &r) == 0) {
		for (size_t i = 0; i < r.n; i++)
			check_kv(&r.kvs[i]);
		etcd_range_result_release(&r);
	} else if (r.kvs || r.n) {
		abort();
	}
}

static void delete_resp(const uint8_t *p, size_t len)
{
	struct etcd_pb_delete_result d;

	if (etcd_pb_decode_delete(p, len, &d) == 0) {
		if (d.prev.key)
			check_kv(&d.prev);
		etcd_kv_release(&d.prev);
	} else if (d.prev.key) {
		abort();
	}
}

static void txn(const uint8_t *p, size_t len)
{
	struct etcd_pb_txn_result t;
	int64_t rev;

	if (etcd_pb_decode_txn(p, len, &t) != 0) {
		if (t.ops || t.n)
			abort();
		return;
	}
	for (size_t i = 0; i < t.n; i++) {
		const struct etcd_pb_op_view *op = &t.ops[i];
		if (op->data < p || op->data + op->len > p + len)
			abort();
		if (op->kind == ETCD_OP_RANGE)
			range(op->data, op->len);
		else if (op->kind == ETCD_OP_DELETE)
			delete_resp(op->data, op->len);
		else
			etcd_pb_response_rev(op->data, op->len, &rev);
	}
	etcd_pb_txn_release(&t);
}

static void watch(const uint8_t *p, size_t len)
{
	struct etcd_watch_msg m;

	if (etcd_pb_decode_watch(p, len, &m) == 0) {
		for (size_t i = 0; i < m.n_events; i++) {
			check_kv(&m.events[i].kv);
			if (m.events[i].prev_kv.key)
				check_kv(&m.events[i].prev_kv);
		}
		etcd_watch_msg_release(&m);
	} else if (m.events || m.n_events) {
		abort();
	}
}

static void fields(const uint8_t *p, size_t len)
{
	struct pb_reader r;
	struct pb_field f;

	pb_reader_init(&r, p, len);
	while (pb_next(&r, &f) > 0)
		if (f.num == 0 || (f.wire == PB_LEN && (f.data < p || f.data + f.len > p + len)))
			abort();
}

static void grpc(const uint8_t *p, size_t len)
{
	struct grpc_status st = GRPC_STATUS_INIT;
	const uint8_t *msg;
	size_t mlen, start = 0;

	if (grpc_unframe(p, len, 1 << 20, &msg, &mlen) == 0 && (msg != p + 5 || mlen != len - 5))
		abort();
	for (size_t i = 0; i <= len; i++) {
		if (i == len || p[i] == '\n') {
			grpc_status_header_line(&st, (const char *)p + start, i - start + (i < len));
			start = i + 1;
		}
	}
	if (st.message.len > GRPC_MAX_STATUS_MESSAGE || (st.has_code && (st.code < 0 || st.code > 9999)))
		abort();
	buf_release(&st.message);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct etcd_kv kv;
	int64_t rev;

	fields(data, size);
	range(data, size);
	delete_resp(data, size);
	txn(data, size);
	watch(data, size);
	if (etcd_pb_decode_kv(data, size, &kv) == 0) {
		check_kv(&kv);
		etcd_kv_release(&kv);
	}
	etcd_pb_response_rev(data, size, &rev);
	grpc(data, size);
	return 0;
}
