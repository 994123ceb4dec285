/* Weighs the etcd client's hand-written protobuf codec (src/common/etcd/pb.c) against protobuf-c
 * (messages generated from src/common/etcd/etcd.proto) on the messages of the hot paths:
 *
 *   range-decode   a RangeResponse of 1,000 KeyValues with 1 KiB values (a list)
 *   watch-decode   a WatchResponse of 100 PUT events with 1 KiB values (the cache's watch)
 *   txn-encode     the TxnRequest of a create (compare create_revision = 0, put, keys-only range
 *                  on failure: what the group commit sends for one op)
 *   txnresp-decode the TxnResponse of that create
 *
 * Each decode is measured four ways: the hand codec into the client's structs (struct
 * etcd_range_result, struct etcd_watch_msg: owned NUL-terminated keys and values); protobuf-c's
 * unpack alone ("unpack": its own structs, then free_unpacked; a lower bound that would need
 * every caller rewritten to protobuf-c's structs); and protobuf-c behind the client's current
 * interface (etcd_internal.h), either copying keys and values out of the unpacked message
 * ("copy") or taking protobuf-c's own blocks, NUL-terminated by a custom allocator ("take").
 * Both codecs first decode the same bytes and must agree.
 *
 * Timing: every case runs ITERS operations per round, rounds interleave the cases, and the
 * median of the rounds is printed (ns/op). Allocations are counted by malloc/calloc/realloc
 * wrappers of this program (calls and requested bytes per op); protobuf-c allocates through
 * malloc too (its default allocator).
 *
 * Usage: etcd-codec [-r ROUNDS] [-n SCALE] [-c CASE]
 *   -c CASE runs that case SCALE times alone (for valgrind --tool=callgrind
 *   --toggle-collect=run_case); -c check runs only the differential checks (more messages,
 *   40,000 mutated ones, the hand encoder's requests read back by protobuf-c), as ctest's
 *   etcd/codec-differential. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "etcd/etcd_internal.h"
#include "etcd/pb.h"
#include "etcd.pb-c.h"
#include "ursa/xalloc.h"

/* ---- allocation counting: forwards to glibc's allocator ----
 * Not under AddressSanitizer, whose own malloc these would displace (allocations are then
 * printed as 0). */

#if defined(__SANITIZE_ADDRESS__)
#define COUNT_ALLOCS 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define COUNT_ALLOCS 0
#endif
#endif
#ifndef COUNT_ALLOCS
#define COUNT_ALLOCS 1
#endif

static size_t n_allocs, n_bytes;

#if COUNT_ALLOCS
extern void *__libc_malloc(size_t n);
extern void *__libc_calloc(size_t n, size_t m);
extern void *__libc_realloc(void *p, size_t n);
extern void __libc_free(void *p);

void *malloc(size_t n)
{
	n_allocs++;
	n_bytes += n;
	return __libc_malloc(n);
}

void *calloc(size_t n, size_t m)
{
	n_allocs++;
	n_bytes += n * m;
	return __libc_calloc(n, m);
}

void *realloc(void *p, size_t n)
{
	n_allocs++;
	n_bytes += n;
	return __libc_realloc(p, n);
}

void free(void *p)
{
	__libc_free(p);
}
#endif

/* ---- the messages ---- */

#define N_KVS 1000
#define N_EVENTS 100
#define VALUE_LEN 1024

static uint8_t value_bytes[VALUE_LEN];

static void fill_value(void)
{
	/* JSON-ish printable bytes, like a stored object */
	for (size_t i = 0; i < VALUE_LEN; i++)
		value_bytes[i] = (uint8_t)("{\"metadata\":{\"name\":\"pod\"}}abcdefghijklmnop"[i % 43]);
}

static void make_kv(Etcdserverpb__KeyValue *kv, char *key, size_t i, int64_t rev)
{
	etcdserverpb__key_value__init(kv);
	sprintf(key, "/registry/pods/tenant-%04zu/default/pod-%06zu", i % 37, i);
	kv->key.data = (uint8_t *)key;
	kv->key.len = strlen(key);
	kv->create_revision = rev - 1000 + (int64_t)i;
	kv->mod_revision = rev + (int64_t)i;
	kv->version = 3;
	kv->value.data = value_bytes;
	kv->value.len = VALUE_LEN;
}

static uint8_t *pack(const ProtobufCMessage *m, size_t *ret_len)
{
	size_t n = protobuf_c_message_get_packed_size(m);
	uint8_t *p = xmalloc(n ? n : 1);

	*ret_len = protobuf_c_message_pack(m, p);
	return p;
}

static uint8_t *range_response(size_t *ret_len)
{
	static Etcdserverpb__KeyValue kvs[N_KVS];
	static Etcdserverpb__KeyValue *kvp[N_KVS];
	static char keys[N_KVS][80];
	Etcdserverpb__ResponseHeader h = ETCDSERVERPB__RESPONSE_HEADER__INIT;
	Etcdserverpb__RangeResponse r = ETCDSERVERPB__RANGE_RESPONSE__INIT;

	h.cluster_id = 0x1234567890abcdefULL;
	h.member_id = 0xfedcba0987654321ULL;
	h.revision = 5000000;
	h.raft_term = 7;
	for (size_t i = 0; i < N_KVS; i++) {
		make_kv(&kvs[i], keys[i], i, 4000000);
		kvp[i] = &kvs[i];
	}
	r.header = &h;
	r.kvs = kvp;
	r.n_kvs = N_KVS;
	r.count = N_KVS;
	return pack(&r.base, ret_len);
}

static uint8_t *watch_response(size_t *ret_len)
{
	static Etcdserverpb__KeyValue kvs[N_EVENTS];
	static Etcdserverpb__Event evs[N_EVENTS];
	static Etcdserverpb__Event *evp[N_EVENTS];
	static char keys[N_EVENTS][80];
	Etcdserverpb__ResponseHeader h = ETCDSERVERPB__RESPONSE_HEADER__INIT;
	Etcdserverpb__WatchResponse w = ETCDSERVERPB__WATCH_RESPONSE__INIT;

	h.cluster_id = 0x1234567890abcdefULL;
	h.member_id = 0xfedcba0987654321ULL;
	h.revision = 5000100;
	h.raft_term = 7;
	for (size_t i = 0; i < N_EVENTS; i++) {
		make_kv(&kvs[i], keys[i], i, 5000000);
		etcdserverpb__event__init(&evs[i]);
		evs[i].type = ETCDSERVERPB__EVENT__EVENT_TYPE__PUT;
		evs[i].kv = &kvs[i];
		evp[i] = &evs[i];
	}
	w.header = &h;
	w.watch_id = 1;
	w.events = evp;
	w.n_events = N_EVENTS;
	return pack(&w.base, ret_len);
}

/* The TxnResponse of a successful create: header, succeeded, one ResponseOp{response_put}. */
static uint8_t *txn_response(size_t *ret_len)
{
	Etcdserverpb__ResponseHeader h = ETCDSERVERPB__RESPONSE_HEADER__INIT;
	Etcdserverpb__ResponseHeader ph = ETCDSERVERPB__RESPONSE_HEADER__INIT;
	Etcdserverpb__PutResponse put = ETCDSERVERPB__PUT_RESPONSE__INIT;
	Etcdserverpb__ResponseOp op = ETCDSERVERPB__RESPONSE_OP__INIT;
	Etcdserverpb__ResponseOp *ops[1] = { &op };
	Etcdserverpb__TxnResponse t = ETCDSERVERPB__TXN_RESPONSE__INIT;

	h.cluster_id = ph.cluster_id = 0x1234567890abcdefULL;
	h.member_id = ph.member_id = 0xfedcba0987654321ULL;
	h.revision = ph.revision = 5000001;
	h.raft_term = ph.raft_term = 7;
	put.header = &ph;
	op.response_case = ETCDSERVERPB__RESPONSE_OP__RESPONSE_RESPONSE_PUT;
	op.response_put = &put;
	t.header = &h;
	t.succeeded = 1;
	t.responses = ops;
	t.n_responses = 1;
	return pack(&t.base, ret_len);
}

static const char create_key[] = "/registry/pods/tenant-0001/default/pod-000001";

/* ---- hand codec ---- */

static void hand_range(const uint8_t *p, size_t len, struct etcd_range_result *ret)
{
	if (etcd_pb_decode_range(p, len, ret) < 0)
		abort();
}

static void hand_watch(const uint8_t *p, size_t len, struct etcd_watch_msg *ret)
{
	if (etcd_pb_decode_watch(p, len, ret) < 0)
		abort();
}

/* As batch.c's build_txn for one op. */
static void hand_txn_encode(struct buf *b)
{
	struct buf m = BUF_INIT, ro = BUF_INIT;

	etcd_pb_compare(&m, create_key, ETCD_CMP_CREATE, ETCD_CMP_EQUAL, 0);
	etcd_pb_put_msg(b, 1, &m);
	buf_reset(&m);
	etcd_pb_put_request(&m, create_key, value_bytes, VALUE_LEN, 0);
	etcd_pb_put_msg(&ro, ETCD_OP_PUT, &m);
	etcd_pb_put_msg(b, 2, &ro);
	buf_reset(&m);
	buf_reset(&ro);
	etcd_pb_range_request(&m, create_key, NULL, 0, 0, true, false);
	etcd_pb_put_msg(&ro, ETCD_OP_RANGE, &m);
	etcd_pb_put_msg(b, 3, &ro);
	buf_release(&m);
	buf_release(&ro);
}

static int64_t hand_txnresp(const uint8_t *p, size_t len)
{
	struct etcd_pb_txn_result t;
	int64_t rev;

	if (etcd_pb_decode_txn(p, len, &t) < 0 || !t.succeeded || t.n != 1 || t.ops[0].kind != ETCD_OP_PUT)
		abort();
	rev = t.revision;
	etcd_pb_txn_release(&t);
	return rev;
}

/* ---- protobuf-c ---- */

static char *dup_bin(const ProtobufCBinaryData *d)
{
	char *s = xmalloc(d->len + 1);

	if (d->len)
		memcpy(s, d->data, d->len);
	s[d->len] = '\0';
	return s;
}

static void kv_from_pbc(const Etcdserverpb__KeyValue *in, struct etcd_kv *out)
{
	out->key = dup_bin(&in->key);
	out->value = dup_bin(&in->value);
	out->value_len = in->value.len;
	out->create_rev = in->create_revision;
	out->mod_rev = in->mod_revision;
	out->version = in->version;
	out->lease = in->lease;
}

static void pbc_range(const uint8_t *p, size_t len, struct etcd_range_result *ret)
{
	Etcdserverpb__RangeResponse *r = etcdserverpb__range_response__unpack(NULL, len, p);

	if (!r)
		abort();
	memset(ret, 0, sizeof(*ret));
	ret->revision = r->header ? r->header->revision : 0;
	ret->count = r->count;
	ret->more = r->more;
	ret->n = r->n_kvs;
	ret->kvs = xcalloc(r->n_kvs ? r->n_kvs : 1, sizeof(*ret->kvs));
	for (size_t i = 0; i < r->n_kvs; i++)
		kv_from_pbc(r->kvs[i], &ret->kvs[i]);
	etcdserverpb__range_response__free_unpacked(r, NULL);
}

static void pbc_watch(const uint8_t *p, size_t len, struct etcd_watch_msg *ret)
{
	Etcdserverpb__WatchResponse *w = etcdserverpb__watch_response__unpack(NULL, len, p);

	if (!w)
		abort();
	memset(ret, 0, sizeof(*ret));
	ret->header_rev = w->header ? w->header->revision : 0;
	ret->watch_id = w->watch_id;
	ret->compact_rev = w->compact_revision;
	ret->created = w->created;
	ret->canceled = w->canceled;
	ret->fragment = w->fragment;
	ret->n_events = w->n_events;
	ret->events = xcalloc(w->n_events ? w->n_events : 1, sizeof(*ret->events));
	for (size_t i = 0; i < w->n_events; i++) {
		const Etcdserverpb__Event *e = w->events[i];
		ret->events[i].type = e->type == ETCDSERVERPB__EVENT__EVENT_TYPE__DELETE ? ETCD_EV_DELETE : ETCD_EV_PUT;
		if (!e->kv)
			abort();
		kv_from_pbc(e->kv, &ret->events[i].kv);
		if (e->prev_kv)
			kv_from_pbc(e->prev_kv, &ret->events[i].prev_kv);
	}
	etcdserverpb__watch_response__free_unpacked(w, NULL);
}

/* The cheapest protobuf-c path behind the current interface: an allocator that NUL-terminates
 * every block at its requested size, so the key and value blocks protobuf-c fills become the
 * client's strings as they are (taken out of the message before free_unpacked). */
static void *nul_alloc(void *data, size_t n)
{
	char *p = xmalloc(n + 1);

	p[n] = '\0';
	return p;
}

static void nul_free(void *data, void *p)
{
	free(p);
}

static ProtobufCAllocator nul_allocator = { nul_alloc, nul_free, NULL };

static void kv_take_pbc(Etcdserverpb__KeyValue *in, struct etcd_kv *out)
{
	out->key = in->key.data ? (char *)in->key.data : xstrdup("");
	out->value = in->value.data ? (char *)in->value.data : xstrdup("");
	out->value_len = in->value.len;
	in->key.data = in->value.data = NULL;
	out->create_rev = in->create_revision;
	out->mod_rev = in->mod_revision;
	out->version = in->version;
	out->lease = in->lease;
}

static void pbc_range_take(const uint8_t *p, size_t len, struct etcd_range_result *ret)
{
	Etcdserverpb__RangeResponse *r = etcdserverpb__range_response__unpack(&nul_allocator, len, p);

	if (!r)
		abort();
	memset(ret, 0, sizeof(*ret));
	ret->revision = r->header ? r->header->revision : 0;
	ret->count = r->count;
	ret->more = r->more;
	ret->n = r->n_kvs;
	ret->kvs = xcalloc(r->n_kvs ? r->n_kvs : 1, sizeof(*ret->kvs));
	for (size_t i = 0; i < r->n_kvs; i++)
		kv_take_pbc(r->kvs[i], &ret->kvs[i]);
	etcdserverpb__range_response__free_unpacked(r, &nul_allocator);
}

static void pbc_watch_take(const uint8_t *p, size_t len, struct etcd_watch_msg *ret)
{
	Etcdserverpb__WatchResponse *w = etcdserverpb__watch_response__unpack(&nul_allocator, len, p);

	if (!w)
		abort();
	memset(ret, 0, sizeof(*ret));
	ret->header_rev = w->header ? w->header->revision : 0;
	ret->watch_id = w->watch_id;
	ret->compact_rev = w->compact_revision;
	ret->created = w->created;
	ret->canceled = w->canceled;
	ret->fragment = w->fragment;
	ret->n_events = w->n_events;
	ret->events = xcalloc(w->n_events ? w->n_events : 1, sizeof(*ret->events));
	for (size_t i = 0; i < w->n_events; i++) {
		Etcdserverpb__Event *e = w->events[i];
		ret->events[i].type = e->type == ETCDSERVERPB__EVENT__EVENT_TYPE__DELETE ? ETCD_EV_DELETE : ETCD_EV_PUT;
		if (!e->kv)
			abort();
		kv_take_pbc(e->kv, &ret->events[i].kv);
		if (e->prev_kv)
			kv_take_pbc(e->prev_kv, &ret->events[i].prev_kv);
	}
	etcdserverpb__watch_response__free_unpacked(w, &nul_allocator);
}

static void pbc_txn_encode(struct buf *b)
{
	Etcdserverpb__Compare cmp = ETCDSERVERPB__COMPARE__INIT;
	Etcdserverpb__Compare *cmps[1] = { &cmp };
	Etcdserverpb__PutRequest put = ETCDSERVERPB__PUT_REQUEST__INIT;
	Etcdserverpb__RangeRequest rr = ETCDSERVERPB__RANGE_REQUEST__INIT;
	Etcdserverpb__RequestOp ok = ETCDSERVERPB__REQUEST_OP__INIT, ko = ETCDSERVERPB__REQUEST_OP__INIT;
	Etcdserverpb__RequestOp *oks[1] = { &ok }, *kos[1] = { &ko };
	Etcdserverpb__TxnRequest t = ETCDSERVERPB__TXN_REQUEST__INIT;
	size_t n;

	cmp.result = ETCDSERVERPB__COMPARE__COMPARE_RESULT__EQUAL;
	cmp.target = ETCDSERVERPB__COMPARE__COMPARE_TARGET__CREATE;
	cmp.key.data = (uint8_t *)create_key;
	cmp.key.len = sizeof(create_key) - 1;
	cmp.target_union_case = ETCDSERVERPB__COMPARE__TARGET_UNION_CREATE_REVISION;
	cmp.create_revision = 0;
	put.key = cmp.key;
	put.value.data = value_bytes;
	put.value.len = VALUE_LEN;
	rr.key = cmp.key;
	rr.keys_only = 1;
	ok.request_case = ETCDSERVERPB__REQUEST_OP__REQUEST_REQUEST_PUT;
	ok.request_put = &put;
	ko.request_case = ETCDSERVERPB__REQUEST_OP__REQUEST_REQUEST_RANGE;
	ko.request_range = &rr;
	t.compare = cmps;
	t.n_compare = 1;
	t.success = oks;
	t.n_success = 1;
	t.failure = kos;
	t.n_failure = 1;
	n = etcdserverpb__txn_request__get_packed_size(&t);
	buf_grow(b, n);
	b->len = etcdserverpb__txn_request__pack(&t, (uint8_t *)b->ptr);
}

static int64_t pbc_txnresp(const uint8_t *p, size_t len)
{
	Etcdserverpb__TxnResponse *t = etcdserverpb__txn_response__unpack(NULL, len, p);
	int64_t rev;

	if (!t || !t->succeeded || t->n_responses != 1 ||
	    t->responses[0]->response_case != ETCDSERVERPB__RESPONSE_OP__RESPONSE_RESPONSE_PUT)
		abort();
	rev = t->header ? t->header->revision : 0;
	etcdserverpb__txn_response__free_unpacked(t, NULL);
	return rev;
}

/* ---- cases ---- */

static uint8_t *range_msg, *watch_msg, *txnresp_msg;
static size_t range_len, watch_len, txnresp_len;
static volatile int64_t sink;

enum kind { HAND_RANGE, PBC_RANGE_RAW, PBC_RANGE, PBC_RANGE_TAKE, HAND_WATCH, PBC_WATCH_RAW, PBC_WATCH,
	    PBC_WATCH_TAKE, HAND_TXN_ENC, PBC_TXN_ENC, HAND_TXNRESP, PBC_TXNRESP, N_CASES };
static const char *const case_name[N_CASES] = {
	[HAND_RANGE] = "range-decode/hand",	   [PBC_RANGE_RAW] = "range-decode/protobuf-c-unpack",
	[PBC_RANGE] = "range-decode/protobuf-c-copy", [PBC_RANGE_TAKE] = "range-decode/protobuf-c-take",
	[HAND_WATCH] = "watch-decode/hand", [PBC_WATCH_RAW] = "watch-decode/protobuf-c-unpack",
	[PBC_WATCH] = "watch-decode/protobuf-c-copy", [PBC_WATCH_TAKE] = "watch-decode/protobuf-c-take",
	[HAND_TXN_ENC] = "txn-encode/hand",	   [PBC_TXN_ENC] = "txn-encode/protobuf-c",
	[HAND_TXNRESP] = "txnresp-decode/hand",	   [PBC_TXNRESP] = "txnresp-decode/protobuf-c",
};

/* One operation of case k. noinline: callgrind counts it with --toggle-collect=run_case. */
__attribute__((noinline)) static void run_case(enum kind k)
{
	struct etcd_range_result r;
	struct etcd_watch_msg w;
	struct buf b = BUF_INIT;
	ProtobufCMessage *m;

	switch (k) {
	case HAND_RANGE:
	case PBC_RANGE:
	case PBC_RANGE_TAKE:
		(k == HAND_RANGE ? hand_range : k == PBC_RANGE ? pbc_range : pbc_range_take)(range_msg, range_len, &r);
		sink += r.kvs[r.n - 1].mod_rev;
		etcd_range_result_release(&r);
		break;
	case PBC_RANGE_RAW:
		m = protobuf_c_message_unpack(&etcdserverpb__range_response__descriptor, NULL, range_len, range_msg);
		sink += ((Etcdserverpb__RangeResponse *)m)->n_kvs;
		protobuf_c_message_free_unpacked(m, NULL);
		break;
	case HAND_WATCH:
	case PBC_WATCH:
	case PBC_WATCH_TAKE:
		(k == HAND_WATCH ? hand_watch : k == PBC_WATCH ? pbc_watch : pbc_watch_take)(watch_msg, watch_len, &w);
		sink += w.events[w.n_events - 1].kv.mod_rev;
		etcd_watch_msg_release(&w);
		break;
	case PBC_WATCH_RAW:
		m = protobuf_c_message_unpack(&etcdserverpb__watch_response__descriptor, NULL, watch_len, watch_msg);
		sink += ((Etcdserverpb__WatchResponse *)m)->n_events;
		protobuf_c_message_free_unpacked(m, NULL);
		break;
	case HAND_TXN_ENC:
	case PBC_TXN_ENC:
		(k == HAND_TXN_ENC ? hand_txn_encode : pbc_txn_encode)(&b);
		sink += (int64_t)b.len;
		buf_release(&b);
		break;
	case HAND_TXNRESP:
		sink += hand_txnresp(txnresp_msg, txnresp_len);
		break;
	case PBC_TXNRESP:
		sink += pbc_txnresp(txnresp_msg, txnresp_len);
		break;
	default:
		abort();
	}
}

static bool kv_equal(const struct etcd_kv *a, const struct etcd_kv *b)
{
	return strcmp(a->key, b->key) == 0 && a->value_len == b->value_len &&
	       memcmp(a->value, b->value, a->value_len) == 0 && a->create_rev == b->create_rev &&
	       a->mod_rev == b->mod_rev && a->version == b->version && a->lease == b->lease;
}

/* Both codecs decode the same bytes to the same values, and encode the same txn bytes. */
static void check_agree(void)
{
	struct etcd_range_result a, b;
	struct etcd_watch_msg wa, wb;
	struct buf ea = BUF_INIT, eb = BUF_INIT;

	hand_range(range_msg, range_len, &a);
	pbc_range(range_msg, range_len, &b);
	if (a.n != N_KVS || b.n != N_KVS || a.revision != b.revision || a.count != b.count || a.more != b.more)
		abort();
	for (size_t i = 0; i < a.n; i++)
		if (!kv_equal(&a.kvs[i], &b.kvs[i]))
			abort();
	etcd_range_result_release(&b);
	pbc_range_take(range_msg, range_len, &b);
	for (size_t i = 0; i < a.n; i++)
		if (!kv_equal(&a.kvs[i], &b.kvs[i]) || b.kvs[i].value[b.kvs[i].value_len] != '\0')
			abort();
	etcd_range_result_release(&a);
	etcd_range_result_release(&b);
	hand_watch(watch_msg, watch_len, &wa);
	pbc_watch(watch_msg, watch_len, &wb);
	if (wa.n_events != N_EVENTS || wb.n_events != N_EVENTS || wa.header_rev != wb.header_rev)
		abort();
	for (size_t i = 0; i < wa.n_events; i++)
		if (!kv_equal(&wa.events[i].kv, &wb.events[i].kv) || wa.events[i].type != wb.events[i].type)
			abort();
	etcd_watch_msg_release(&wb);
	pbc_watch_take(watch_msg, watch_len, &wb);
	for (size_t i = 0; i < wa.n_events; i++)
		if (!kv_equal(&wa.events[i].kv, &wb.events[i].kv))
			abort();
	etcd_watch_msg_release(&wa);
	etcd_watch_msg_release(&wb);
	hand_txn_encode(&ea);
	pbc_txn_encode(&eb);
	if (ea.len != eb.len || memcmp(ea.ptr, eb.ptr, ea.len) != 0) {
		fprintf(stderr, "txn encodings differ (%zu vs %zu bytes)\n", ea.len, eb.len);
		abort();
	}
	buf_release(&ea);
	buf_release(&eb);
	if (hand_txnresp(txnresp_msg, txnresp_len) != pbc_txnresp(txnresp_msg, txnresp_len))
		abort();
}

/* ---- differential checks beyond the benchmark's messages (-c check; ctest etcd/codec-differential) ---- */

static void check(bool ok, const char *what)
{
	if (!ok) {
		fprintf(stderr, "codec-differential: %s\n", what);
		exit(1);
	}
}

/* Decodes the packed message m with the hand codec's decoder dec and protobuf-c (the caller
 * compares). */
static uint8_t *packed(const ProtobufCMessage *m, size_t *ret_len)
{
	return pack(m, ret_len);
}

/* Watch responses: DELETE events with prev_kv, flags, compact revision, a cancel reason (which
 * the hand codec skips), extreme values, empty values. */
static void check_watch_variants(void)
{
	static char k0[] = "/a", k1[] = "/registry/x", v1[] = "v";
	Etcdserverpb__KeyValue kv0 = ETCDSERVERPB__KEY_VALUE__INIT, kv1 = ETCDSERVERPB__KEY_VALUE__INIT;
	Etcdserverpb__KeyValue pkv = ETCDSERVERPB__KEY_VALUE__INIT;
	Etcdserverpb__Event e0 = ETCDSERVERPB__EVENT__INIT, e1 = ETCDSERVERPB__EVENT__INIT;
	Etcdserverpb__Event *evs[2] = { &e0, &e1 };
	Etcdserverpb__ResponseHeader h = ETCDSERVERPB__RESPONSE_HEADER__INIT;
	Etcdserverpb__WatchResponse w = ETCDSERVERPB__WATCH_RESPONSE__INIT;
	struct etcd_watch_msg a, b;
	uint8_t *p;
	size_t len;

	kv0.key.data = (uint8_t *)k0, kv0.key.len = 2;
	kv0.mod_revision = INT64_MAX, kv0.create_revision = 1, kv0.lease = -1;
	kv1.key.data = (uint8_t *)k1, kv1.key.len = strlen(k1);
	kv1.value.data = (uint8_t *)v1, kv1.value.len = 1, kv1.version = 9, kv1.mod_revision = 77;
	pkv = kv1;
	pkv.mod_revision = 76;
	e0.type = ETCDSERVERPB__EVENT__EVENT_TYPE__DELETE, e0.kv = &kv0, e0.prev_kv = &pkv;
	e1.type = ETCDSERVERPB__EVENT__EVENT_TYPE__PUT, e1.kv = &kv1;
	h.revision = 99;
	w.header = &h, w.watch_id = 7, w.created = 1, w.canceled = 1, w.fragment = 1, w.compact_revision = 42;
	w.cancel_reason = "mvcc: required revision has been compacted";
	w.events = evs, w.n_events = 2;
	p = packed(&w.base, &len);
	hand_watch(p, len, &a);
	pbc_watch_take(p, len, &b);
	check(a.header_rev == 99 && b.header_rev == 99 && a.watch_id == 7 && b.watch_id == 7, "watch header/id");
	check(a.created && b.created && a.canceled && b.canceled && a.fragment && b.fragment, "watch flags");
	check(a.compact_rev == 42 && b.compact_rev == 42 && a.n_events == 2 && b.n_events == 2, "watch compact/n");
	for (size_t i = 0; i < 2; i++) {
		check(a.events[i].type == b.events[i].type, "event type");
		check(kv_equal(&a.events[i].kv, &b.events[i].kv), "event kv");
		check(!a.events[i].prev_kv.key == !b.events[i].prev_kv.key, "event prev_kv presence");
		if (a.events[i].prev_kv.key)
			check(kv_equal(&a.events[i].prev_kv, &b.events[i].prev_kv), "event prev_kv");
	}
	check(a.events[0].type == ETCD_EV_DELETE && a.events[0].kv.value_len == 0 && a.events[0].kv.value[0] == '\0',
	      "delete event, empty value");
	check(a.events[0].kv.mod_rev == INT64_MAX && a.events[0].kv.lease == -1, "extreme int64s");
	etcd_watch_msg_release(&a);
	etcd_watch_msg_release(&b);
	free(p);
}

/* RangeResponse with more and count but no kvs; DeleteRangeResponse; a TxnResponse holding a
 * range and a delete. */
static void check_responses(void)
{
	static char key[] = "/registry/pods/a", val[] = "{}";
	Etcdserverpb__ResponseHeader h = ETCDSERVERPB__RESPONSE_HEADER__INIT;
	Etcdserverpb__RangeResponse rr = ETCDSERVERPB__RANGE_RESPONSE__INIT;
	Etcdserverpb__KeyValue kv = ETCDSERVERPB__KEY_VALUE__INIT;
	Etcdserverpb__KeyValue *kvs[2] = { &kv, &kv };
	Etcdserverpb__DeleteRangeResponse dr = ETCDSERVERPB__DELETE_RANGE_RESPONSE__INIT;
	Etcdserverpb__ResponseOp o1 = ETCDSERVERPB__RESPONSE_OP__INIT, o2 = ETCDSERVERPB__RESPONSE_OP__INIT;
	Etcdserverpb__ResponseOp *ops[2] = { &o1, &o2 };
	Etcdserverpb__TxnResponse t = ETCDSERVERPB__TXN_RESPONSE__INIT;
	struct etcd_range_result a, b;
	struct etcd_pb_delete_result d;
	struct etcd_pb_txn_result ht;
	Etcdserverpb__TxnResponse *pt;
	uint8_t *p;
	size_t len;

	h.revision = 123456789012LL;
	rr.header = &h, rr.more = 1, rr.count = 5000;
	p = packed(&rr.base, &len);
	hand_range(p, len, &a);
	pbc_range_take(p, len, &b);
	check(a.n == 0 && b.n == 0 && a.more && b.more && a.count == 5000 && b.count == 5000, "count-only range");
	check(a.revision == 123456789012LL && b.revision == a.revision, "range revision");
	etcd_range_result_release(&a);
	etcd_range_result_release(&b);
	free(p);

	kv.key.data = (uint8_t *)key, kv.key.len = strlen(key);
	kv.value.data = (uint8_t *)val, kv.value.len = 2, kv.mod_revision = 5, kv.create_revision = 4, kv.version = 2;
	dr.header = &h, dr.deleted = 2, dr.prev_kvs = kvs, dr.n_prev_kvs = 2;
	p = packed(&dr.base, &len);
	check(etcd_pb_decode_delete(p, len, &d) == 0 && d.deleted == 2 && d.revision == h.revision, "delete response");
	check(d.prev.key && strcmp(d.prev.key, key) == 0 && d.prev.mod_rev == 5 && d.prev.value_len == 2,
	      "delete prev");
	etcd_kv_release(&d.prev);
	free(p);

	rr.kvs = kvs, rr.n_kvs = 1, rr.more = 0, rr.count = 1;
	o1.response_case = ETCDSERVERPB__RESPONSE_OP__RESPONSE_RESPONSE_RANGE, o1.response_range = &rr;
	dr.n_prev_kvs = 0;
	o2.response_case = ETCDSERVERPB__RESPONSE_OP__RESPONSE_RESPONSE_DELETE_RANGE, o2.response_delete_range = &dr;
	t.header = &h, t.succeeded = 0, t.responses = ops, t.n_responses = 2;
	p = packed(&t.base, &len);
	pt = etcdserverpb__txn_response__unpack(NULL, len, p);
	check(pt && etcd_pb_decode_txn(p, len, &ht) == 0, "txn response decodes");
	check(ht.n == 2 && pt->n_responses == 2 && !ht.succeeded && !pt->succeeded && ht.revision == h.revision,
	      "txn response fields");
	check(ht.ops[0].kind == ETCD_OP_RANGE && ht.ops[1].kind == ETCD_OP_DELETE, "txn op kinds");
	check(etcd_pb_decode_range(ht.ops[0].data, ht.ops[0].len, &a) == 0 && a.n == 1 &&
		      a.kvs[0].mod_rev == pt->responses[0]->response_range->kvs[0]->mod_revision,
	      "txn range op");
	etcd_range_result_release(&a);
	etcdserverpb__txn_response__free_unpacked(pt, NULL);
	etcd_pb_txn_release(&ht);
	free(p);
}

/* Requests the hand encoder writes, read back by protobuf-c. */
static void check_requests(void)
{
	struct buf b = BUF_INIT;
	Etcdserverpb__RangeRequest *rr;
	Etcdserverpb__PutRequest *pr;
	Etcdserverpb__DeleteRangeRequest *dr;
	Etcdserverpb__CompactionRequest *cr;
	Etcdserverpb__Compare *c;
	Etcdserverpb__WatchRequest *wr;

	etcd_pb_range_request(&b, "/registry/pods/", "/registry/pods0", 77, 500, true, false);
	rr = etcdserverpb__range_request__unpack(NULL, b.len, (uint8_t *)b.ptr);
	check(rr && rr->key.len == 15 && memcmp(rr->key.data, "/registry/pods/", 15) == 0, "range key");
	check(rr->range_end.len == 15 && rr->revision == 77 && rr->limit == 500 && rr->keys_only && !rr->count_only,
	      "range fields");
	etcdserverpb__range_request__free_unpacked(rr, NULL);
	buf_reset(&b);
	etcd_pb_range_request(&b, "", "", 0, 0, false, true);
	rr = etcdserverpb__range_request__unpack(NULL, b.len, (uint8_t *)b.ptr);
	check(rr && rr->key.len == 1 && rr->key.data[0] == 0 && rr->range_end.len == 1 && rr->range_end.data[0] == 0,
	      "whole keyspace is \\0..\\0");
	check(rr->count_only && !rr->keys_only && rr->revision == 0, "count-only range");
	etcdserverpb__range_request__free_unpacked(rr, NULL);
	buf_reset(&b);
	etcd_pb_put_request(&b, "/k", "v\0w", 3, 0x1234);
	pr = etcdserverpb__put_request__unpack(NULL, b.len, (uint8_t *)b.ptr);
	check(pr && pr->key.len == 2 && pr->value.len == 3 && memcmp(pr->value.data, "v\0w", 3) == 0 &&
		      pr->lease == 0x1234,
	      "put request");
	etcdserverpb__put_request__free_unpacked(pr, NULL);
	buf_reset(&b);
	etcd_pb_delete_request(&b, "/k", true);
	dr = etcdserverpb__delete_range_request__unpack(NULL, b.len, (uint8_t *)b.ptr);
	check(dr && dr->key.len == 2 && dr->prev_kv && dr->range_end.len == 0, "delete request");
	etcdserverpb__delete_range_request__free_unpacked(dr, NULL);
	buf_reset(&b);
	etcd_pb_compaction_request(&b, 1000, true);
	cr = etcdserverpb__compaction_request__unpack(NULL, b.len, (uint8_t *)b.ptr);
	check(cr && cr->revision == 1000 && cr->physical, "compaction request");
	etcdserverpb__compaction_request__free_unpacked(cr, NULL);
	buf_reset(&b);
	etcd_pb_compare(&b, "/k", ETCD_CMP_MOD, ETCD_CMP_EQUAL, 0);
	c = etcdserverpb__compare__unpack(NULL, b.len, (uint8_t *)b.ptr);
	/* the oneof member is present even at 0: etcd reads an unset target_union as "no compare" */
	check(c && c->target == ETCDSERVERPB__COMPARE__COMPARE_TARGET__MOD &&
		      c->target_union_case == ETCDSERVERPB__COMPARE__TARGET_UNION_MOD_REVISION && c->mod_revision == 0,
	      "compare mod_revision = 0");
	etcdserverpb__compare__free_unpacked(c, NULL);
	buf_reset(&b);
	etcd_pb_compare(&b, "/k", ETCD_CMP_VERSION, ETCD_CMP_GREATER, 3);
	c = etcdserverpb__compare__unpack(NULL, b.len, (uint8_t *)b.ptr);
	check(c && c->result == ETCDSERVERPB__COMPARE__COMPARE_RESULT__GREATER &&
		      c->target_union_case == ETCDSERVERPB__COMPARE__TARGET_UNION_VERSION && c->version == 3,
	      "compare version > 3");
	etcdserverpb__compare__free_unpacked(c, NULL);
	buf_reset(&b);
	etcd_pb_watch_create(&b, "/registry/", "/registry0", 5001, true, true);
	wr = etcdserverpb__watch_request__unpack(NULL, b.len, (uint8_t *)b.ptr);
	check(wr && wr->request_union_case == ETCDSERVERPB__WATCH_REQUEST__REQUEST_UNION_CREATE_REQUEST,
	      "watch create");
	check(wr->create_request->start_revision == 5001 && wr->create_request->prev_kv &&
		      wr->create_request->fragment && wr->create_request->key.len == 10 &&
		      wr->create_request->range_end.len == 10,
	      "watch create fields");
	etcdserverpb__watch_request__free_unpacked(wr, NULL);
	buf_release(&b);
}

/* Mutated messages (bytes changed, cut short, a byte added): wherever both decoders accept the
 * bytes, they must read the same values. They may differ on what they refuse: the hand decoder
 * also refuses an event without kv, a second kv in an event, an event type above 1 and an
 * 11-byte varint, which protobuf-c lets through. */
static uint64_t rng = 0x9e3779b97f4a7c15ULL;

static uint64_t next_rand(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static size_t mutate(const uint8_t *in, size_t len, uint8_t *out, size_t cap)
{
	size_t n = len < cap ? len : cap;
	unsigned edits = 1 + (unsigned)(next_rand() % 4);

	memcpy(out, in, n);
	for (unsigned i = 0; i < edits && n; i++) {
		size_t at = (size_t)(next_rand() % n);
		switch (next_rand() % 4) {
		case 0:
			out[at] ^= (uint8_t)(1u << (next_rand() % 8));
			break;
		case 1:
			out[at] = (uint8_t)next_rand();
			break;
		case 2:
			n = at; /* cut short */
			break;
		default:
			if (n < cap) { /* insert a byte */
				memmove(out + at + 1, out + at, n - at);
				out[at] = (uint8_t)next_rand();
				n++;
			}
		}
	}
	return n;
}

static bool bin_is(const ProtobufCBinaryData *d, const char *s, size_t len)
{
	return d->len == len && (len == 0 || memcmp(d->data, s, len) == 0);
}

/* A key is a C string in struct etcd_kv: compared up to its first NUL (a mutation may put one in). */
static bool key_same(const char *a, const ProtobufCBinaryData *b)
{
	size_t n = strlen(a);

	if (b->len == n)
		return n == 0 || memcmp(a, b->data, n) == 0;
	return b->len > n && memcmp(a, b->data, n) == 0 && b->data[n] == 0;
}

static bool kv_same(const struct etcd_kv *a, const Etcdserverpb__KeyValue *b)
{
	return key_same(a->key, &b->key) && bin_is(&b->value, a->value, a->value_len) &&
	       a->create_rev == b->create_revision && a->mod_rev == b->mod_revision && a->version == b->version &&
	       a->lease == b->lease;
}

/* Returns how many mutations both decoders accepted. */
static unsigned check_mutations(const uint8_t *msg, size_t len, bool is_watch, unsigned rounds)
{
	uint8_t *buf = xmalloc(len + 64);
	unsigned both = 0;

	for (unsigned r = 0; r < rounds; r++) {
		size_t n = mutate(msg, len, buf, len + 64);
		if (!is_watch) {
			struct etcd_range_result a;
			Etcdserverpb__RangeResponse *b;
			int rc = etcd_pb_decode_range(buf, n, &a);
			b = etcdserverpb__range_response__unpack(NULL, n, buf);
			if (rc == 0 && b) {
				both++;
				check(a.n == b->n_kvs && a.more == !!b->more && a.count == b->count,
				      "mutated range: counts");
				check(a.revision == (b->header ? b->header->revision : 0), "mutated range: revision");
				for (size_t i = 0; i < a.n; i++)
					check(kv_same(&a.kvs[i], b->kvs[i]), "mutated range: kv");
			}
			if (rc == 0)
				etcd_range_result_release(&a);
			etcdserverpb__range_response__free_unpacked(b, NULL);
		} else {
			struct etcd_watch_msg a;
			Etcdserverpb__WatchResponse *b;
			int rc = etcd_pb_decode_watch(buf, n, &a);
			b = etcdserverpb__watch_response__unpack(NULL, n, buf);
			if (rc == 0 && b) {
				both++;
				check(a.n_events == b->n_events && a.watch_id == b->watch_id &&
					      a.compact_rev == b->compact_revision,
				      "mutated watch: ids");
				check(a.created == !!b->created && a.canceled == !!b->canceled &&
					      a.fragment == !!b->fragment,
				      "mutated watch: flags");
				check(a.header_rev == (b->header ? b->header->revision : 0), "mutated watch: revision");
				for (size_t i = 0; i < a.n_events; i++) {
					const Etcdserverpb__Event *e = b->events[i];
					check((int)e->type == (a.events[i].type == ETCD_EV_DELETE),
					      "mutated watch: type");
					check(e->kv && kv_same(&a.events[i].kv, e->kv), "mutated watch: kv");
					check(!a.events[i].prev_kv.key == !e->prev_kv,
					      "mutated watch: prev_kv presence");
					if (e->prev_kv)
						check(kv_same(&a.events[i].prev_kv, e->prev_kv),
						      "mutated watch: prev_kv");
				}
			}
			if (rc == 0)
				etcd_watch_msg_release(&a);
			etcdserverpb__watch_response__free_unpacked(b, NULL);
		}
	}
	free(buf);
	return both;
}

/* A small RangeResponse and a WatchResponse with both event types, mutated. */
static void check_mutated(void)
{
	static char k[3][8] = { "/a", "/bb", "/ccc" };
	Etcdserverpb__KeyValue kvs[3];
	Etcdserverpb__KeyValue *kvp[3];
	Etcdserverpb__Event evs[3];
	Etcdserverpb__Event *evp[3];
	Etcdserverpb__ResponseHeader h = ETCDSERVERPB__RESPONSE_HEADER__INIT;
	Etcdserverpb__RangeResponse rr = ETCDSERVERPB__RANGE_RESPONSE__INIT;
	Etcdserverpb__WatchResponse w = ETCDSERVERPB__WATCH_RESPONSE__INIT;
	unsigned accepted;
	uint8_t *p;
	size_t len;

	for (size_t i = 0; i < 3; i++) {
		etcdserverpb__key_value__init(&kvs[i]);
		kvs[i].key.data = (uint8_t *)k[i], kvs[i].key.len = strlen(k[i]);
		kvs[i].value.data = value_bytes, kvs[i].value.len = 5 + i * 60;
		kvs[i].create_revision = 300 + (int64_t)i, kvs[i].mod_revision = 100000 + (int64_t)i;
		kvs[i].version = (int64_t)i, kvs[i].lease = i == 2 ? 0x7eadbeef : 0;
		kvp[i] = &kvs[i];
		etcdserverpb__event__init(&evs[i]);
		evs[i].type = i == 1 ? ETCDSERVERPB__EVENT__EVENT_TYPE__DELETE : ETCDSERVERPB__EVENT__EVENT_TYPE__PUT;
		evs[i].kv = &kvs[i];
		evs[i].prev_kv = i == 1 ? &kvs[0] : NULL;
		evp[i] = &evs[i];
	}
	h.revision = 100002, h.cluster_id = 11, h.member_id = 12, h.raft_term = 3;
	rr.header = &h, rr.kvs = kvp, rr.n_kvs = 3, rr.count = 9, rr.more = 1;
	p = packed(&rr.base, &len);
	accepted = check_mutations(p, len, false, 20000);
	free(p);
	check(accepted > 1000, "too few mutated ranges accepted by both to compare");
	w.header = &h, w.watch_id = 3, w.events = evp, w.n_events = 3, w.fragment = 1;
	p = packed(&w.base, &len);
	accepted += check_mutations(p, len, true, 20000);
	free(p);
	check(accepted > 2000, "too few mutated watch responses accepted by both to compare");
	printf("codec-differential: %u mutated messages read alike by both\n", accepted);
}

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* Iterations per round: the big decodes are ~100 us, the small messages ~100 ns. */
static long iters_for(enum kind k, long scale)
{
	switch (k) {
	case HAND_RANGE:
	case PBC_RANGE:
	case PBC_RANGE_RAW:
	case PBC_RANGE_TAKE:
		return 20 * scale;
	case HAND_WATCH:
	case PBC_WATCH:
	case PBC_WATCH_RAW:
	case PBC_WATCH_TAKE:
		return 200 * scale;
	default:
		return 20000 * scale;
	}
}

int main(int argc, char **argv)
{
	long rounds = 15, scale = 1;
	const char *only = NULL;
	double *samples[N_CASES];
	size_t allocs[N_CASES], bytes[N_CASES];
	int opt;

	while ((opt = getopt(argc, argv, "r:n:c:")) != -1) {
		if (opt == 'r')
			rounds = atol(optarg);
		else if (opt == 'n')
			scale = atol(optarg);
		else if (opt == 'c')
			only = optarg;
		else {
			fprintf(stderr, "usage: %s [-r ROUNDS] [-n SCALE] [-c CASE]\n", argv[0]);
			return 2;
		}
	}
	if (rounds < 1 || scale < 1)
		return 2;
	fill_value();
	range_msg = range_response(&range_len);
	watch_msg = watch_response(&watch_len);
	txnresp_msg = txn_response(&txnresp_len);
	check_agree();
	if (only && strcmp(only, "check") == 0) {
		check_watch_variants();
		check_responses();
		check_requests();
		check_mutated();
		printf("codec-differential: the hand codec and protobuf-c agree\n");
		return 0;
	}
	if (only) {
		/* callgrind: run one case scale times and nothing else measured */
		for (int k = 0; k < N_CASES; k++) {
			if (strcmp(case_name[k], only) != 0)
				continue;
			for (long i = 0; i < scale; i++)
				run_case((enum kind)k);
			printf("%s: %ld ops\n", only, scale);
			return 0;
		}
		fprintf(stderr, "unknown case %s\n", only);
		return 2;
	}
	for (int k = 0; k < N_CASES; k++) {
		samples[k] = calloc((size_t)rounds, sizeof(double));
		n_allocs = n_bytes = 0;
		run_case((enum kind)k);
		allocs[k] = n_allocs;
		bytes[k] = n_bytes;
	}
	for (long r = 0; r < rounds; r++) {
		for (int k = 0; k < N_CASES; k++) {
			long n = iters_for((enum kind)k, scale);
			double t0 = now_ns();
			for (long i = 0; i < n; i++)
				run_case((enum kind)k);
			samples[k][r] = (now_ns() - t0) / (double)n;
		}
	}
	printf("messages: RangeResponse %zu bytes (%d kvs), WatchResponse %zu bytes (%d events), "
	       "TxnResponse %zu bytes\n",
	       range_len, N_KVS, watch_len, N_EVENTS, txnresp_len);
	printf("%-34s %12s %12s %10s %12s\n", "case", "median ns/op", "min ns/op", "allocs/op", "bytes/op");
	for (int k = 0; k < N_CASES; k++) {
		qsort(samples[k], (size_t)rounds, sizeof(double), cmp_double);
		printf("%-34s %12.0f %12.0f %10zu %12zu\n", case_name[k], samples[k][rounds / 2], samples[k][0],
		       allocs[k], bytes[k]);
		free(samples[k]);
	}
	return (int)(sink & 0);
}
