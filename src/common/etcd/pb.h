/* Protocol buffers (proto3 wire format) for the etcd client: a small encoder and decoder, and
 * the decoders of the etcdserverpb / mvccpb messages the KV calls use. Not a public interface.
 *
 * Field numbers are those of etcd's api/etcdserverpb/rpc.proto and api/mvccpb/kv.proto.
 * Decoders are parsers of untrusted bytes: every length is checked against the bytes left,
 * varints are at most 10 bytes and must fit 64 bits, field number 0 and the group wire types
 * (3, 4, 6, 7) are rejected, unknown fields of wire types 0, 1, 2 and 5 are skipped, and a
 * known field with the wrong wire type is an error. They return 0 or E_INTERNAL. */
#ifndef URSA_ETCD_PB_H
#define URSA_ETCD_PB_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "ursa/buf.h"
#include "ursa/etcd.h"

enum pb_wire { PB_VARINT = 0, PB_I64 = 1, PB_LEN = 2, PB_I32 = 5 };

/* ---- encoder: appends to b; a value equal to the proto3 default (0, false) is omitted ---- */
void pb_put_varint(struct buf *b, uint64_t v);
void pb_put_int(struct buf *b, uint32_t field, int64_t v);
void pb_put_bool(struct buf *b, uint32_t field, bool v);
/* Always written (an empty bytes field too). */
void pb_put_bytes(struct buf *b, uint32_t field, const void *data, size_t len);

/* ---- decoder ---- */
struct pb_reader {
	const uint8_t *p;
	const uint8_t *end;
};
struct pb_field {
	uint32_t num;
	enum pb_wire wire;
	uint64_t v;          /* PB_VARINT, PB_I64, PB_I32 */
	const uint8_t *data; /* PB_LEN: a view into the reader's bytes */
	size_t len;
};
void pb_reader_init(struct pb_reader *r, const void *data, size_t len);
/* The next field: 1 with ret filled, 0 at the end of the message, E_INTERNAL if malformed. */
int pb_next(struct pb_reader *r, struct pb_field *ret);

/* ---- etcd messages ---- */

/* Message kinds inside RequestOp / ResponseOp (their field numbers). */
enum etcd_pb_op { ETCD_OP_RANGE = 1, ETCD_OP_PUT = 2, ETCD_OP_DELETE = 3, ETCD_OP_TXN = 4 };
/* Compare.target and Compare.result. */
enum etcd_pb_target { ETCD_CMP_VERSION = 0, ETCD_CMP_CREATE = 1, ETCD_CMP_MOD = 2 };
enum etcd_pb_result { ETCD_CMP_EQUAL = 0, ETCD_CMP_GREATER = 1 };

/* Request encoders; each appends one complete message to b. A range_end of NULL means the key
 * alone, "" the end of the keyspace ("\0"); an empty key with a range end is sent as "\0" (the
 * smallest key) because etcd rejects an empty key. */
void etcd_pb_range_request(struct buf *b, const char *key, const char *range_end, int64_t revision,
			   int64_t limit, bool keys_only, bool count_only);
void etcd_pb_put_request(struct buf *b, const char *key, const void *value, size_t len, int64_t lease);
void etcd_pb_delete_request(struct buf *b, const char *key, bool prev_kv);
/* Compare{key, target, result, create_revision or mod_revision = v} (version for VERSION). */
void etcd_pb_compare(struct buf *b, const char *key, enum etcd_pb_target target, enum etcd_pb_result result,
		     int64_t v);
void etcd_pb_compaction_request(struct buf *b, int64_t revision, bool physical);
/* Appends field `field` holding the message msg (TxnRequest.compare / success / failure, or a
 * RequestOp's request_* member). */
void etcd_pb_put_msg(struct buf *b, uint32_t field, const struct buf *msg);

/* header.revision of any response whose header is field 1 (Put, Compaction, ...). */
int etcd_pb_response_rev(const void *data, size_t len, int64_t *ret_rev);
/* mvccpb.KeyValue; key and value are always allocated (NUL-terminated, "" when absent).
 * ret is zeroed on error. */
int etcd_pb_decode_kv(const void *data, size_t len, struct etcd_kv *ret);
/* RangeResponse; ret zeroed on error. */
int etcd_pb_decode_range(const void *data, size_t len, struct etcd_range_result *ret);

struct etcd_pb_delete_result {
	int64_t revision;
	int64_t deleted;
	struct etcd_kv prev; /* the first of prev_kvs (key NULL when none) */
};
/* DeleteRangeResponse; ret zeroed on error. Release with etcd_kv_release(&ret->prev). */
int etcd_pb_decode_delete(const void *data, size_t len, struct etcd_pb_delete_result *ret);

struct etcd_pb_op_view {
	enum etcd_pb_op kind;
	const uint8_t *data; /* the Range/Put/DeleteRange/TxnResponse bytes, borrowed */
	size_t len;
};
struct etcd_pb_txn_result {
	int64_t revision;
	bool succeeded;
	struct etcd_pb_op_view *ops; /* owned array; views into the decoded bytes */
	size_t n;
};
/* TxnResponse; the views stay valid while data does. ret zeroed on error. */
int etcd_pb_decode_txn(const void *data, size_t len, struct etcd_pb_txn_result *ret);
void etcd_pb_txn_release(struct etcd_pb_txn_result *t);

/* ---- the Watch service ---- */

/* WatchRequest{create_request: WatchCreateRequest{key, range_end, start_revision, prev_kv,
 * fragment}}; start_rev 0 means from now. */
void etcd_pb_watch_create(struct buf *b, const char *key, const char *range_end, int64_t start_rev, bool prev_kv,
			  bool fragment);
/* One WatchResponse of the stream. */
struct etcd_watch_msg {
	int64_t header_rev;
	int64_t watch_id;
	int64_t compact_rev;
	bool created;
	bool canceled;
	bool fragment;
	struct etcd_event *events; /* owned array */
	size_t n_events;
};
/* WatchResponse; every event has a kv (key and value allocated). ret zeroed on error. */
int etcd_pb_decode_watch(const void *data, size_t len, struct etcd_watch_msg *ret);
void etcd_watch_msg_release(struct etcd_watch_msg *m);
void etcd_event_release(struct etcd_event *ev);

#endif
