/* Protocol buffers wire format and the etcd messages of the KV service. See pb.h. */
#include "etcd/pb.h"
#include "ursa/errors.h"
#include "ursa/xalloc.h"
#include <stdlib.h>
#include <string.h>

/* ---- encoder ---- */

void pb_put_varint(struct buf *b, uint64_t v)
{
	char tmp[10];
	size_t n = 0;

	while (v >= 0x80) {
		tmp[n++] = (char)(v | 0x80);
		v >>= 7;
	}
	tmp[n++] = (char)v;
	buf_add(b, tmp, n);
}

static void put_tag(struct buf *b, uint32_t field, enum pb_wire wire)
{
	pb_put_varint(b, (uint64_t)field << 3 | (uint64_t)wire);
}

/* int64 fields are varints of the two's complement (10 bytes when negative). */
static void put_int_always(struct buf *b, uint32_t field, int64_t v)
{
	put_tag(b, field, PB_VARINT);
	pb_put_varint(b, (uint64_t)v);
}

void pb_put_int(struct buf *b, uint32_t field, int64_t v)
{
	if (v)
		put_int_always(b, field, v);
}

void pb_put_bool(struct buf *b, uint32_t field, bool v)
{
	if (v)
		put_int_always(b, field, 1);
}

void pb_put_bytes(struct buf *b, uint32_t field, const void *data, size_t len)
{
	put_tag(b, field, PB_LEN);
	pb_put_varint(b, len);
	if (len)
		buf_add(b, data, len);
}

void etcd_pb_put_msg(struct buf *b, uint32_t field, const struct buf *msg)
{
	pb_put_bytes(b, field, msg->ptr, msg->len);
}

/* ---- decoder ---- */

void pb_reader_init(struct pb_reader *r, const void *data, size_t len)
{
	r->p = data;
	r->end = r->p ? r->p + len : r->p;
}

static int get_varint(struct pb_reader *r, uint64_t *ret)
{
	uint64_t v = 0;

	for (unsigned i = 0; i < 10; i++) {
		if (r->p == r->end)
			return E_INTERNAL;
		uint8_t c = *r->p++;
		/* the tenth byte holds bit 63 alone */
		if (i == 9 && c > 1)
			return E_INTERNAL;
		v |= (uint64_t)(c & 0x7f) << (7 * i);
		if (!(c & 0x80)) {
			*ret = v;
			return 0;
		}
	}
	return E_INTERNAL;
}

static uint64_t get_le(const uint8_t *p, unsigned n)
{
	uint64_t v = 0;

	for (unsigned i = 0; i < n; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

int pb_next(struct pb_reader *r, struct pb_field *ret)
{
	uint64_t tag, n;
	size_t left;

	if (r->p == r->end)
		return 0;
	if (get_varint(r, &tag) < 0 || tag > UINT32_MAX || (tag >> 3) == 0)
		return E_INTERNAL;
	memset(ret, 0, sizeof(*ret));
	ret->num = (uint32_t)(tag >> 3);
	ret->wire = (enum pb_wire)(tag & 7);
	left = (size_t)(r->end - r->p);
	switch (tag & 7) {
	case PB_VARINT:
		return get_varint(r, &ret->v) < 0 ? E_INTERNAL : 1;
	case PB_I64:
	case PB_I32:
		n = (tag & 7) == PB_I64 ? 8 : 4;
		if (left < n)
			return E_INTERNAL;
		ret->v = get_le(r->p, (unsigned)n);
		r->p += n;
		return 1;
	case PB_LEN:
		if (get_varint(r, &n) < 0 || n > (uint64_t)(r->end - r->p))
			return E_INTERNAL;
		ret->data = r->p;
		ret->len = (size_t)n;
		r->p += n;
		return 1;
	default:
		return E_INTERNAL; /* groups (3, 4) and undefined wire types */
	}
}

/* A known field must come with its declared wire type. */
static bool is(const struct pb_field *f, enum pb_wire w)
{
	return f->wire == w;
}

/* ---- etcd request encoders ---- */

static void put_range_key(struct buf *b, uint32_t field, const char *key, bool has_end)
{
	if (has_end && !*key)
		pb_put_bytes(b, field, "", 1);
	else
		pb_put_bytes(b, field, key, strlen(key));
}

void etcd_pb_range_request(struct buf *b, const char *key, const char *range_end, int64_t revision,
			   int64_t limit, bool keys_only, bool count_only)
{
	put_range_key(b, 1, key, range_end != NULL);
	if (range_end)
		pb_put_bytes(b, 2, *range_end ? range_end : "", *range_end ? strlen(range_end) : 1);
	pb_put_int(b, 3, limit);
	pb_put_int(b, 4, revision);
	pb_put_bool(b, 8, keys_only);
	pb_put_bool(b, 9, count_only);
}

void etcd_pb_put_request(struct buf *b, const char *key, const void *value, size_t len, int64_t lease)
{
	pb_put_bytes(b, 1, key, strlen(key));
	pb_put_bytes(b, 2, value ? value : "", value ? len : 0);
	pb_put_int(b, 3, lease);
}

void etcd_pb_delete_request(struct buf *b, const char *key, bool prev_kv)
{
	pb_put_bytes(b, 1, key, strlen(key));
	pb_put_bool(b, 3, prev_kv);
}

void etcd_pb_compare(struct buf *b, const char *key, enum etcd_pb_target target, enum etcd_pb_result result,
		     int64_t v)
{
	static const uint32_t union_field[] = { [ETCD_CMP_VERSION] = 4, [ETCD_CMP_CREATE] = 5, [ETCD_CMP_MOD] = 6 };

	pb_put_int(b, 1, result);
	pb_put_int(b, 2, target);
	pb_put_bytes(b, 3, key, strlen(key));
	/* a oneof member is written even when 0: etcd treats an unset target_union as "equal" */
	put_int_always(b, union_field[target], v);
}

void etcd_pb_compaction_request(struct buf *b, int64_t revision, bool physical)
{
	pb_put_int(b, 1, revision);
	pb_put_bool(b, 2, physical);
}

/* ---- etcd response decoders ---- */

/* ResponseHeader: only the revision matters to callers. */
static int decode_header(const uint8_t *p, size_t len, int64_t *ret_rev)
{
	struct pb_reader r;
	struct pb_field f;
	int rc;

	pb_reader_init(&r, p, len);
	while ((rc = pb_next(&r, &f)) > 0) {
		if (f.num != 3)
			continue;
		if (!is(&f, PB_VARINT))
			return E_INTERNAL;
		*ret_rev = (int64_t)f.v;
	}
	return rc;
}

int etcd_pb_response_rev(const void *data, size_t len, int64_t *ret_rev)
{
	struct pb_reader r;
	struct pb_field f;
	int64_t rev = 0;
	int rc;

	pb_reader_init(&r, data, len);
	while ((rc = pb_next(&r, &f)) > 0) {
		if (f.num != 1)
			continue;
		if (!is(&f, PB_LEN) || decode_header(f.data, f.len, &rev) < 0)
			return E_INTERNAL;
	}
	if (rc < 0)
		return E_INTERNAL;
	*ret_rev = rev;
	return 0;
}

static char *dup_bytes(const uint8_t *p, size_t len)
{
	char *s = xmalloc(len + 1);

	if (len)
		memcpy(s, p, len);
	s[len] = '\0';
	return s;
}

/* Field number -> offset of the int64 in struct etcd_kv, for the varint fields of KeyValue. */
static int64_t *kv_int_field(struct etcd_kv *kv, uint32_t num)
{
	switch (num) {
	case 2:
		return &kv->create_rev;
	case 3:
		return &kv->mod_rev;
	case 4:
		return &kv->version;
	case 6:
		return &kv->lease;
	default:
		return NULL;
	}
}

int etcd_pb_decode_kv(const void *data, size_t len, struct etcd_kv *ret)
{
	struct etcd_kv kv = { 0 };
	struct pb_reader r;
	struct pb_field f;
	const uint8_t *key = NULL, *val = NULL;
	size_t key_len = 0, val_len = 0;
	int64_t *iv;
	int rc;

	memset(ret, 0, sizeof(*ret));
	pb_reader_init(&r, data, len);
	while ((rc = pb_next(&r, &f)) > 0) {
		if (f.num == 1 || f.num == 5) {
			if (!is(&f, PB_LEN))
				return E_INTERNAL;
			if (f.num == 1)
				key = f.data, key_len = f.len;
			else
				val = f.data, val_len = f.len;
		} else if ((iv = kv_int_field(&kv, f.num))) {
			if (!is(&f, PB_VARINT))
				return E_INTERNAL;
			*iv = (int64_t)f.v;
		}
	}
	if (rc < 0)
		return E_INTERNAL;
	kv.key = dup_bytes(key, key_len);
	kv.value = dup_bytes(val, val_len);
	kv.value_len = val_len;
	*ret = kv;
	return 0;
}

static void kvs_push(struct etcd_range_result *res, size_t *alloc, const struct etcd_kv *kv)
{
	if (res->n == *alloc) {
		*alloc = *alloc ? *alloc * 2 : 16;
		res->kvs = xrealloc(res->kvs, *alloc * sizeof(*res->kvs));
	}
	res->kvs[res->n++] = *kv;
}

/* Hands every field of a message to field(ctx, f). 0, or E_INTERNAL if the message is malformed
 * or field refused one (the caller releases what ctx gathered). */
static int pb_each(const void *data, size_t len, int (*field)(void *ctx, const struct pb_field *f), void *ctx)
{
	struct pb_reader r;
	struct pb_field f;
	int rc;

	pb_reader_init(&r, data, len);
	while ((rc = pb_next(&r, &f)) > 0)
		if (field(ctx, &f) < 0)
			return E_INTERNAL;
	return rc < 0 ? E_INTERNAL : 0;
}

struct range_ctx {
	struct etcd_range_result res;
	size_t alloc;
};

static int range_field(void *ctx, const struct pb_field *f)
{
	struct etcd_range_result *res = &((struct range_ctx *)ctx)->res;
	struct etcd_kv kv;

	switch (f->num) {
	case 1:
		return is(f, PB_LEN) ? decode_header(f->data, f->len, &res->revision) : E_INTERNAL;
	case 2:
		if (!is(f, PB_LEN) || etcd_pb_decode_kv(f->data, f->len, &kv) < 0)
			return E_INTERNAL;
		kvs_push(res, &((struct range_ctx *)ctx)->alloc, &kv);
		return 0;
	case 3:
		if (!is(f, PB_VARINT))
			return E_INTERNAL;
		res->more = f->v != 0;
		return 0;
	case 4:
		if (!is(f, PB_VARINT))
			return E_INTERNAL;
		res->count = (int64_t)f->v;
		return 0;
	default:
		return 0;
	}
}

int etcd_pb_decode_range(const void *data, size_t len, struct etcd_range_result *ret)
{
	struct range_ctx c = { 0 };

	if (pb_each(data, len, range_field, &c) < 0) {
		etcd_range_result_release(&c.res);
		memset(ret, 0, sizeof(*ret));
		return E_INTERNAL;
	}
	*ret = c.res;
	return 0;
}

static int delete_field(void *ctx, const struct pb_field *f)
{
	struct etcd_pb_delete_result *res = ctx;

	switch (f->num) {
	case 1:
		return is(f, PB_LEN) ? decode_header(f->data, f->len, &res->revision) : E_INTERNAL;
	case 2:
		if (!is(f, PB_VARINT))
			return E_INTERNAL;
		res->deleted = (int64_t)f->v;
		return 0;
	case 3:
		if (!is(f, PB_LEN))
			return E_INTERNAL;
		if (res->prev.key) {
			/* only the first is kept; the others are still checked */
			struct etcd_kv kv;
			if (etcd_pb_decode_kv(f->data, f->len, &kv) < 0)
				return E_INTERNAL;
			etcd_kv_release(&kv);
			return 0;
		}
		return etcd_pb_decode_kv(f->data, f->len, &res->prev);
	default:
		return 0;
	}
}

int etcd_pb_decode_delete(const void *data, size_t len, struct etcd_pb_delete_result *ret)
{
	struct etcd_pb_delete_result res = { 0 };

	if (pb_each(data, len, delete_field, &res) < 0) {
		etcd_kv_release(&res.prev);
		memset(ret, 0, sizeof(*ret));
		return E_INTERNAL;
	}
	*ret = res;
	return 0;
}

/* ResponseOp: exactly one of its members (the last one wins, as for any oneof). */
static int decode_op(const uint8_t *p, size_t len, struct etcd_pb_op_view *ret)
{
	struct pb_reader r;
	struct pb_field f;
	int rc;

	memset(ret, 0, sizeof(*ret));
	pb_reader_init(&r, p, len);
	while ((rc = pb_next(&r, &f)) > 0) {
		if (f.num < ETCD_OP_RANGE || f.num > ETCD_OP_TXN)
			continue;
		if (!is(&f, PB_LEN))
			return E_INTERNAL;
		ret->kind = (enum etcd_pb_op)f.num;
		ret->data = f.data;
		ret->len = f.len;
	}
	return rc < 0 || ret->kind == 0 ? E_INTERNAL : 0;
}

struct txn_ctx {
	struct etcd_pb_txn_result res;
	size_t alloc;
};

static int txn_field(void *ctx, const struct pb_field *f)
{
	struct etcd_pb_txn_result *res = &((struct txn_ctx *)ctx)->res;
	size_t *alloc = &((struct txn_ctx *)ctx)->alloc;

	switch (f->num) {
	case 1:
		return is(f, PB_LEN) ? decode_header(f->data, f->len, &res->revision) : E_INTERNAL;
	case 2:
		if (!is(f, PB_VARINT))
			return E_INTERNAL;
		res->succeeded = f->v != 0;
		return 0;
	case 3:
		if (!is(f, PB_LEN))
			return E_INTERNAL;
		if (res->n == *alloc) {
			*alloc = *alloc ? *alloc * 2 : 8;
			res->ops = xrealloc(res->ops, *alloc * sizeof(*res->ops));
		}
		if (decode_op(f->data, f->len, &res->ops[res->n]) < 0)
			return E_INTERNAL;
		res->n++;
		return 0;
	default:
		return 0;
	}
}

int etcd_pb_decode_txn(const void *data, size_t len, struct etcd_pb_txn_result *ret)
{
	struct txn_ctx c = { 0 };

	if (pb_each(data, len, txn_field, &c) < 0) {
		etcd_pb_txn_release(&c.res);
		memset(ret, 0, sizeof(*ret));
		return E_INTERNAL;
	}
	*ret = c.res;
	return 0;
}

void etcd_pb_txn_release(struct etcd_pb_txn_result *t)
{
	if (!t)
		return;
	free(t->ops);
	memset(t, 0, sizeof(*t));
}

/* ---- the Watch service ---- */

void etcd_pb_watch_create(struct buf *b, const char *key, const char *range_end, int64_t start_rev, bool prev_kv,
			  bool fragment)
{
	struct buf c = BUF_INIT;

	put_range_key(&c, 1, key, range_end != NULL);
	if (range_end)
		pb_put_bytes(&c, 2, *range_end ? range_end : "", *range_end ? strlen(range_end) : 1);
	pb_put_int(&c, 3, start_rev);
	pb_put_bool(&c, 6, prev_kv);
	pb_put_bool(&c, 8, fragment);
	etcd_pb_put_msg(b, 1, &c);
	buf_release(&c);
}

void etcd_event_release(struct etcd_event *ev)
{
	if (!ev)
		return;
	etcd_kv_release(&ev->kv);
	etcd_kv_release(&ev->prev_kv);
}

void etcd_watch_msg_release(struct etcd_watch_msg *m)
{
	if (!m)
		return;
	for (size_t i = 0; i < m->n_events; i++)
		etcd_event_release(&m->events[i]);
	free(m->events);
	memset(m, 0, sizeof(*m));
}

/* mvccpb.Event: type (PUT 0, DELETE 1), kv, prev_kv; each at most once. */
static int event_field(void *ctx, const struct pb_field *f)
{
	struct etcd_event *ev = ctx;
	struct etcd_kv *kv = f->num == 2 ? &ev->kv : &ev->prev_kv;

	switch (f->num) {
	case 1:
		if (!is(f, PB_VARINT) || f->v > 1)
			return E_INTERNAL;
		ev->type = f->v ? ETCD_EV_DELETE : ETCD_EV_PUT;
		return 0;
	case 2:
	case 3:
		if (!is(f, PB_LEN) || kv->key)
			return E_INTERNAL;
		return etcd_pb_decode_kv(f->data, f->len, kv);
	default:
		return 0;
	}
}

static int decode_event(const uint8_t *p, size_t len, struct etcd_event *ret)
{
	memset(ret, 0, sizeof(*ret));
	if (pb_each(p, len, event_field, ret) < 0 || !ret->kv.key) {
		etcd_event_release(ret);
		memset(ret, 0, sizeof(*ret));
		return E_INTERNAL;
	}
	return 0;
}

struct watch_ctx {
	struct etcd_watch_msg *m;
	size_t alloc;
};

static int watch_field(void *ctx, const struct pb_field *f)
{
	struct watch_ctx *w = ctx;
	struct etcd_watch_msg *m = w->m;
	bool *flag = f->num == 3 ? &m->created : f->num == 4 ? &m->canceled : &m->fragment;

	switch (f->num) {
	case 1:
		return is(f, PB_LEN) ? decode_header(f->data, f->len, &m->header_rev) : E_INTERNAL;
	case 2:
	case 5:
		if (!is(f, PB_VARINT))
			return E_INTERNAL;
		*(f->num == 2 ? &m->watch_id : &m->compact_rev) = (int64_t)f->v;
		return 0;
	case 3:
	case 4:
	case 7:
		if (!is(f, PB_VARINT))
			return E_INTERNAL;
		*flag = f->v != 0;
		return 0;
	case 11:
		if (!is(f, PB_LEN))
			return E_INTERNAL;
		if (m->n_events == w->alloc) {
			w->alloc = w->alloc ? w->alloc * 2 : 4;
			m->events = xrealloc(m->events, w->alloc * sizeof(*m->events));
		}
		if (decode_event(f->data, f->len, &m->events[m->n_events]) < 0)
			return E_INTERNAL;
		m->n_events++;
		return 0;
	default:
		return 0; /* cancel_reason (6) and fields of later versions */
	}
}

int etcd_pb_decode_watch(const void *data, size_t len, struct etcd_watch_msg *ret)
{
	struct watch_ctx w = { ret, 0 };

	memset(ret, 0, sizeof(*ret));
	if (pb_each(data, len, watch_field, &w) < 0) {
		etcd_watch_msg_release(ret);
		return E_INTERNAL;
	}
	return 0;
}
