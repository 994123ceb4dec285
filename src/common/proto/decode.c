/* Table-driven decoder: Kubernetes protobuf body -> JSON object. See include/ursa/proto.h. */
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "ursa/base64.h"
#include "ursa/errors.h"
#include "ursa/proto.h"
#include "ursa/xalloc.h"
#include "ursa/schema.h"

#define MAX_TYPE_STRING 256   /* apiVersion / kind in the envelope */

enum { WT_VARINT = 0, WT_FIXED64 = 1, WT_LEN = 2, WT_FIXED32 = 5 };

struct rd {
	const uint8_t *p;
	const uint8_t *end;
};

struct dec {
	struct buf *err;
	size_t values;   /* JSON values made so far, capped by K8S_PROTOBUF_MAX_VALUES */
};

static int fail(struct dec *d, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static int fail(struct dec *d, int code, const char *fmt, ...)
{
	va_list ap;

	if (d->err) {
		va_start(ap, fmt);
		buf_vaddf(d->err, fmt, ap);
		va_end(ap);
	}
	return code;
}

static const char *msg_name(const struct pb_msg *m)
{
	return strncmp(m->name, "pm_", 3) ? m->name : m->name + 3;
}

/* Protobuf varint: at most 10 bytes; bits past 64 are dropped as in every implementation. */
static int rd_varint(struct rd *r, uint64_t *ret_v)
{
	uint64_t v = 0;

	for (unsigned shift = 0; shift < 70; shift += 7) {
		if (r->p >= r->end)
			return -1;
		uint8_t c = *r->p++;
		if (shift < 64)
			v |= (uint64_t)(c & 0x7f) << shift;
		if (!(c & 0x80)) {
			*ret_v = v;
			return 0;
		}
	}
	return -1;
}

static int rd_len(struct rd *r, struct rd *ret_sub)
{
	uint64_t n;

	if (rd_varint(r, &n) || n > (uint64_t)(r->end - r->p))
		return -1;
	ret_sub->p = r->p;
	ret_sub->end = r->p + n;
	r->p += n;
	return 0;
}

static int rd_skip(struct rd *r, unsigned wt)
{
	uint64_t v;
	struct rd sub;
	size_t n;

	switch (wt) {
	case WT_VARINT:
		return rd_varint(r, &v);
	case WT_LEN:
		return rd_len(r, &sub);
	case WT_FIXED64:
	case WT_FIXED32:
		n = wt == WT_FIXED64 ? 8 : 4;
		if ((size_t)(r->end - r->p) < n)
			return -1;
		r->p += n;
		return 0;
	default:
		return -1;   /* groups (3, 4) are not used by Kubernetes; 6 and 7 do not exist */
	}
}

/* Reads one tag; 0 on success with *ret_num > 0. */
static int rd_tag(struct rd *r, uint32_t *ret_num, unsigned *ret_wt)
{
	uint64_t key;

	if (rd_varint(r, &key) || (key >> 3) == 0 || (key >> 3) > 0x1fffffff)
		return -1;
	*ret_num = (uint32_t)(key >> 3);
	*ret_wt = (unsigned)(key & 7);
	return 0;
}

static int count_value(struct dec *d)
{
	if (++d->values > K8S_PROTOBUF_MAX_VALUES)
		return fail(d, E_BAD_REQUEST, "protobuf body has more than %d values",
			    K8S_PROTOBUF_MAX_VALUES);
	return 0;
}

/* New JSON string of the bytes, or NULL if they are not valid UTF-8 or hold a NUL
 * (the JSON parser refuses "\u0000" as well). */
static json_t *make_string(const struct rd *s)
{
	size_t n = (size_t)(s->end - s->p);

	if (memchr(s->p, '\0', n))
		return NULL;
	return json_stringn((const char *)s->p, n);
}

/* bytes fields are base64 strings in JSON (standard alphabet, padded), as protojson writes them */
static json_t *make_base64(const struct rd *s)
{
	struct buf b = BUF_INIT;
	base64_encode(&b, s->p, (size_t)(s->end - s->p), 0);
	json_t *j = json_stringn(b.ptr, b.len);
	buf_release(&b);
	return j;
}

/* Days since 1970-01-01 to a proleptic Gregorian date. */
static void civil_from_days(int64_t z, int64_t *ret_y, unsigned *ret_m, unsigned *ret_d)
{
	z += 719468;
	int64_t era = (z >= 0 ? z : z - 146096) / 146097;
	unsigned doe = (unsigned)(z - era * 146097);
	unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
	unsigned mp = (5 * doy + 2) / 153;
	unsigned m = mp < 10 ? mp + 3 : mp - 9;

	*ret_y = (int64_t)yoe + era * 400 + (m <= 2);
	*ret_m = m;
	*ret_d = doy - (153 * mp + 2) / 5 + 1;
}

/* meta.Time / meta.MicroTime {seconds = 1, nanos = 2}. Empty bytes are Go's zero time, which
 * JSON shows as null; Time drops the nanoseconds as the Go type does. */
static int decode_time(struct dec *d, const struct pb_field *f, struct rd *s, bool micro,
		       json_t **ret)
{
	/* 0001-01-01T00:00:00Z .. 9999-12-31T23:59:59Z, the range RFC3339 can show */
	const int64_t min_s = -62135596800LL, max_s = 253402300799LL;
	int64_t secs = 0, nanos = 0, y;
	unsigned wt, mo, dd;
	uint32_t num;
	uint64_t v;
	struct buf b = BUF_INIT;

	if (s->p == s->end) {
		*ret = json_null();
		return 0;
	}
	while (s->p < s->end) {
		if (rd_tag(s, &num, &wt))
			return fail(d, E_BAD_REQUEST, "protobuf: bad tag in time field %s", f->name);
		if ((num == 1 || num == 2) && wt == WT_VARINT) {
			if (rd_varint(s, &v))
				return fail(d, E_BAD_REQUEST, "protobuf: truncated time field %s", f->name);
			if (num == 1)
				secs = (int64_t)v;
			else
				nanos = (int32_t)(uint32_t)v;
		} else if (rd_skip(s, wt)) {
			return fail(d, E_BAD_REQUEST, "protobuf: malformed time field %s", f->name);
		}
	}
	if (secs < min_s || secs > max_s || nanos < 0 || nanos > 999999999)
		return fail(d, E_BAD_REQUEST, "protobuf: time field %s out of range", f->name);
	int64_t days = (secs >= 0 ? secs : secs - 86399) / 86400;
	int64_t sod = secs - days * 86400;
	civil_from_days(days, &y, &mo, &dd);
	buf_addf(&b, "%04lld-%02u-%02uT%02lld:%02lld:%02lld", (long long)y, mo, dd,
		 (long long)(sod / 3600), (long long)(sod / 60 % 60), (long long)(sod % 60));
	if (micro)
		buf_addf(&b, ".%06lld", (long long)(nanos / 1000));
	buf_addch(&b, 'Z');
	*ret = json_string(buf_cstr(&b));
	buf_release(&b);
	return 0;
}

/* intstr.IntOrString {type = 1, intVal = 2, strVal = 3}: type 0 is a number, 1 a string. */
static int decode_intstr(struct dec *d, const struct pb_field *f, struct rd *s, json_t **ret)
{
	uint64_t type = 0, v;
	int32_t ival = 0;
	struct rd str = { NULL, NULL };
	unsigned wt;
	uint32_t num;

	while (s->p < s->end) {
		if (rd_tag(s, &num, &wt))
			return fail(d, E_BAD_REQUEST, "protobuf: bad tag in %s", f->name);
		if ((num == 1 || num == 2) && wt == WT_VARINT) {
			if (rd_varint(s, &v))
				return fail(d, E_BAD_REQUEST, "protobuf: truncated %s", f->name);
			if (num == 1)
				type = v;
			else
				ival = (int32_t)(uint32_t)v;
		} else if (num == 3 && wt == WT_LEN) {
			if (rd_len(s, &str))
				return fail(d, E_BAD_REQUEST, "protobuf: truncated %s", f->name);
		} else if (rd_skip(s, wt)) {
			return fail(d, E_BAD_REQUEST, "protobuf: malformed %s", f->name);
		}
	}
	if (type == 0) {
		*ret = json_integer(ival);
		return 0;
	}
	if (type != 1)
		return fail(d, E_BAD_REQUEST, "protobuf: %s has IntOrString type %llu", f->name,
			    (unsigned long long)type);
	static const uint8_t empty[1];
	struct rd e = { empty, empty };
	*ret = make_string(str.p ? &str : &e);
	return *ret ? 0 : fail(d, E_BAD_REQUEST, "protobuf: invalid UTF-8 in %s", f->name);
}

/* resource.Quantity {string = 1}: its string, which must not be empty. */
static int decode_quantity(struct dec *d, const char *what, struct rd *s, json_t **ret)
{
	struct rd str = { NULL, NULL };
	unsigned wt;
	uint32_t num;

	while (s->p < s->end) {
		if (rd_tag(s, &num, &wt))
			return fail(d, E_BAD_REQUEST, "protobuf: bad tag in quantity %s", what);
		if (num == 1 && wt == WT_LEN) {
			if (rd_len(s, &str))
				return fail(d, E_BAD_REQUEST, "protobuf: truncated quantity %s", what);
		} else if (rd_skip(s, wt)) {
			return fail(d, E_BAD_REQUEST, "protobuf: malformed quantity %s", what);
		}
	}
	if (!str.p || str.p == str.end)
		return fail(d, E_BAD_REQUEST, "protobuf: empty quantity %s", what);
	*ret = make_string(&str);
	return *ret ? 0 : fail(d, E_BAD_REQUEST, "protobuf: invalid quantity %s", what);
}

/* One map entry {key = 1, value = 2} added to the object at obj[f->name]. */
static int decode_map_entry(struct dec *d, const struct pb_field *f, struct rd *s, json_t *obj)
{
	static const uint8_t empty[1];
	struct rd key = { empty, empty }, val = { empty, empty };
	json_t *jval = NULL, *map;
	unsigned wt;
	uint32_t num;
	int rc;

	while (s->p < s->end) {
		if (rd_tag(s, &num, &wt))
			return fail(d, E_BAD_REQUEST, "protobuf: bad tag in map %s", f->name);
		if ((num == 1 || num == 2) && wt == WT_LEN)
			rc = rd_len(s, num == 1 ? &key : &val);
		else
			rc = rd_skip(s, wt);
		if (rc)
			return fail(d, E_BAD_REQUEST, "protobuf: malformed entry in map %s", f->name);
	}
	if (f->type == PT_MAP_STRING)
		jval = make_string(&val);
	else if (f->type == PT_MAP_BYTES)
		jval = make_base64(&val);
	else if ((rc = decode_quantity(d, f->name, &val, &jval)))
		return rc;
	if (!jval)
		return fail(d, E_BAD_REQUEST, "protobuf: invalid UTF-8 in map %s", f->name);
	map = json_object_get(obj, f->name);
	if (!json_is_object(map)) {
		map = json_object();
		json_object_set_new(obj, f->name, map);
	}
	size_t klen = (size_t)(key.end - key.p);
	if (memchr(key.p, '\0', klen)) {
		json_decref(jval);
		return fail(d, E_BAD_REQUEST, "protobuf: NUL in key of map %s", f->name);
	}
	/* setn_new checks the key's UTF-8 and drops jval on failure */
	if (json_object_setn_new(map, (const char *)key.p, klen, jval))
		return fail(d, E_BAD_REQUEST, "protobuf: invalid key in map %s", f->name);
	return count_value(d);
}

static int decode_msg(struct dec *d, const struct pb_msg *m, struct rd *s, json_t *obj,
		      int depth);

static bool is_varint_type(uint8_t t)
{
	return t == PT_INT32 || t == PT_INT64 || t == PT_BOOL;
}

static json_t *varint_value(uint8_t t, uint64_t v)
{
	if (t == PT_INT32)
		return json_integer((int32_t)(uint32_t)v);
	if (t == PT_INT64)
		return json_integer((json_int_t)(int64_t)v);
	return json_boolean(v != 0);
}

/* Stores a scalar or message value: appended for repeated fields, else set (last one wins,
 * and an omitempty zero removes the key as Go's JSON would not show it). Steals val. */
static int store(struct dec *d, const struct pb_field *f, json_t *obj, json_t *val, bool zero)
{
	json_t *arr;

	if (f->flags & PF_REPEATED) {
		arr = json_object_get(obj, f->name);
		if (!json_is_array(arr)) {
			arr = json_array();
			json_object_set_new(obj, f->name, arr);
		}
		json_array_append_new(arr, val);
	} else if (zero && !(f->flags & PF_KEEP)) {
		json_decref(val);
		json_object_del(obj, f->name);
		return 0;
	} else {
		json_object_set_new(obj, f->name, val);
	}
	return count_value(d);
}

static int decode_varint_field(struct dec *d, const struct pb_field *f, struct rd *r,
			       unsigned wt, json_t *obj)
{
	struct rd packed;
	uint64_t v;
	int rc;

	if (wt == WT_VARINT) {
		if (rd_varint(r, &v))
			return fail(d, E_BAD_REQUEST, "protobuf: truncated varint in %s", f->name);
		return store(d, f, obj, varint_value(f->type, v), v == 0);
	}
	if (wt != WT_LEN || !(f->flags & PF_REPEATED) || rd_len(r, &packed))
		return fail(d, E_BAD_REQUEST, "protobuf: wrong wire type %u for %s", wt, f->name);
	while (packed.p < packed.end) {
		if (rd_varint(&packed, &v))
			return fail(d, E_BAD_REQUEST, "protobuf: truncated packed %s", f->name);
		if ((rc = store(d, f, obj, varint_value(f->type, v), false)))
			return rc;
	}
	return 0;
}

/* A length-delimited field whose JSON value is a single new json_t. */
static int make_len_value(struct dec *d, const struct pb_field *f, struct rd *s, int depth,
			  json_t **ret)
{
	int rc;

	switch (f->type) {
	case PT_STRING:
		*ret = make_string(s);
		return *ret ? 0 : fail(d, E_BAD_REQUEST, "protobuf: invalid UTF-8 in %s", f->name);
	case PT_BYTES:
		*ret = make_base64(s);
		return 0;
	case PT_OPAQUE:
		*ret = json_object();
		return 0;
	case PT_QUANTITY:
		return decode_quantity(d, f->name, s, ret);
	case PT_TIME:
	case PT_MICROTIME:
		return decode_time(d, f, s, f->type == PT_MICROTIME, ret);
	case PT_INTSTR:
		return decode_intstr(d, f, s, ret);
	case PT_MSG:
		*ret = json_object();
		if (f->flags & PF_NODECODE)
			return 0;
		if ((rc = decode_msg(d, f->sub, s, *ret, depth + 1))) {
			json_decref(*ret);
			*ret = NULL;
		}
		return rc;
	default:
		return fail(d, E_INTERNAL, "protobuf: bad schema for %s", f->name);
	}
}

static int decode_field(struct dec *d, const struct pb_field *f, struct rd *r, unsigned wt,
			json_t *obj, int depth)
{
	struct rd s;
	json_t *val = NULL, *old;
	int rc;

	if (is_varint_type(f->type))
		return decode_varint_field(d, f, r, wt, obj);
	if (wt != WT_LEN || rd_len(r, &s))
		return fail(d, E_BAD_REQUEST, "protobuf: %s for %s",
			    wt != WT_LEN ? "wrong wire type" : "length past end",
			    f->name ? f->name : "inline field");
	switch (f->type) {
	case PT_INLINE:
		return decode_msg(d, f->sub, &s, obj, depth + 1);
	case PT_MAP_STRING:
	case PT_MAP_BYTES:
	case PT_MAP_QUANTITY:
		return decode_map_entry(d, f, &s, obj);
	case PT_MSG:
	case PT_OPAQUE:
		/* A repeated occurrence of a singular message merges into the earlier one. */
		old = json_object_get(obj, f->name);
		if (!(f->flags & PF_REPEATED) && json_is_object(old))
			return f->type == PT_OPAQUE || (f->flags & PF_NODECODE) ? 0
											 : decode_msg(d, f->sub, &s, old, depth + 1);
		break;
	default:
		break;
	}
	if ((rc = make_len_value(d, f, &s, depth, &val)))
		return rc;
	return store(d, f, obj, val, f->type == PT_STRING || f->type == PT_BYTES ?
			json_string_length(val) == 0 : false);
}

static const struct pb_field *find_field(const struct pb_msg *m, uint32_t num)
{
	for (size_t i = 0; i < m->nfields; i++)
		if (m->fields[i].num == num)
			return &m->fields[i];
	return NULL;
}

static int decode_msg(struct dec *d, const struct pb_msg *m, struct rd *s, json_t *obj,
		      int depth)
{
	const struct pb_field *f;
	uint32_t num;
	unsigned wt;
	int rc;

	if (depth > K8S_PROTOBUF_MAX_DEPTH)
		return fail(d, E_BAD_REQUEST, "protobuf: nesting deeper than %d",
			    K8S_PROTOBUF_MAX_DEPTH);
	while (s->p < s->end) {
		if (rd_tag(s, &num, &wt))
			return fail(d, E_BAD_REQUEST, "protobuf: bad field tag in %s", msg_name(m));
		f = find_field(m, num);
		if (!f) {
			if (rd_skip(s, wt))
				return fail(d, E_BAD_REQUEST,
					    "protobuf: malformed unknown field %u in %s", num,
					    msg_name(m));
			continue;
		}
		if ((rc = decode_field(d, f, s, wt, obj, depth)))
			return rc;
	}
	return 0;
}

/* Copies a short NUL-free string out of the envelope. */
static int envelope_string(struct dec *d, struct rd *r, const char *what, char **ret)
{
	struct rd s;
	size_t n;

	if (rd_len(r, &s))
		return fail(d, E_BAD_REQUEST, "protobuf: truncated %s", what);
	n = (size_t)(s.end - s.p);
	if (n > MAX_TYPE_STRING || memchr(s.p, '\0', n))
		return fail(d, E_BAD_REQUEST, "protobuf: invalid %s", what);
	free(*ret);
	*ret = xstrndup((const char *)s.p, n);
	return 0;
}

struct envelope {
	char *api_version;
	char *kind;
	char *content_encoding;
	char *content_type;
	struct rd raw;
};

static int decode_type_meta(struct dec *d, struct rd *r, struct envelope *e)
{
	struct rd s;
	uint32_t num;
	unsigned wt;
	int rc;

	if (rd_len(r, &s))
		return fail(d, E_BAD_REQUEST, "protobuf: truncated typeMeta");
	while (s.p < s.end) {
		if (rd_tag(&s, &num, &wt))
			return fail(d, E_BAD_REQUEST, "protobuf: bad tag in typeMeta");
		if ((num == 1 || num == 2) && wt == WT_LEN)
			rc = envelope_string(d, &s, num == 1 ? "apiVersion" : "kind",
					     num == 1 ? &e->api_version : &e->kind);
		else if (rd_skip(&s, wt))
			rc = fail(d, E_BAD_REQUEST, "protobuf: malformed typeMeta");
		else
			rc = 0;
		if (rc)
			return rc;
	}
	return 0;
}

/* runtime.Unknown {typeMeta = 1, raw = 2, contentEncoding = 3, contentType = 4}. */
static int decode_envelope(struct dec *d, struct rd *r, struct envelope *e)
{
	uint32_t num;
	unsigned wt;
	int rc;

	while (r->p < r->end) {
		if (rd_tag(r, &num, &wt))
			return fail(d, E_BAD_REQUEST, "protobuf: bad tag in envelope");
		if (num == 1 && wt == WT_LEN)
			rc = decode_type_meta(d, r, e);
		else if (num == 2 && wt == WT_LEN)
			rc = rd_len(r, &e->raw) ? fail(d, E_BAD_REQUEST, "protobuf: truncated raw") : 0;
		else if ((num == 3 || num == 4) && wt == WT_LEN)
			rc = envelope_string(d, r, num == 3 ? "contentEncoding" : "contentType",
					     num == 3 ? &e->content_encoding : &e->content_type);
		else if (rd_skip(r, wt))
			rc = fail(d, E_BAD_REQUEST, "protobuf: malformed envelope field %u", num);
		else
			rc = 0;
		if (rc)
			return rc;
	}
	return 0;
}

bool k8s_protobuf_has_kind(const char *api_version, const char *kind)
{
	return pb_kind_schema(api_version, kind) != NULL;
}

int k8s_protobuf_to_json(const void *data, size_t len, json_t **ret, struct buf *err)
{
	static const uint8_t magic[4] = { 'k', '8', 's', 0 };
	struct dec d = { err, 0 };
	struct envelope e = { NULL, NULL, NULL, NULL, { NULL, NULL } };
	const struct pb_msg *m;
	struct rd r;
	json_t *obj = NULL;
	int rc;

	if (len < sizeof(magic) || memcmp(data, magic, sizeof(magic))) {
		rc = fail(&d, E_BAD_REQUEST, "protobuf: body does not start with the k8s magic");
		goto out;
	}
	r.p = (const uint8_t *)data + sizeof(magic);
	r.end = (const uint8_t *)data + len;
	if ((rc = decode_envelope(&d, &r, &e)))
		goto out;
	if (!e.api_version || !e.kind || !*e.api_version || !*e.kind) {
		rc = fail(&d, E_BAD_REQUEST, "protobuf: envelope without apiVersion and kind");
		goto out;
	}
	if ((e.content_encoding && *e.content_encoding) ||
	    (e.content_type && *e.content_type && strcmp(e.content_type, K8S_PROTOBUF_MEDIA_TYPE))) {
		rc = fail(&d, E_MEDIA_TYPE, "protobuf: unsupported content encoding or type");
		goto out;
	}
	m = pb_kind_schema(e.api_version, e.kind);
	if (!m) {
		rc = fail(&d, E_MEDIA_TYPE, "protobuf: no schema for %s %s; send application/json",
			  e.api_version, e.kind);
		goto out;
	}
	obj = json_object();
	json_object_set_new(obj, "kind", json_string(e.kind));
	json_object_set_new(obj, "apiVersion", json_string(e.api_version));
	if (!json_is_string(json_object_get(obj, "kind")) ||
	    !json_is_string(json_object_get(obj, "apiVersion"))) {
		rc = fail(&d, E_BAD_REQUEST, "protobuf: invalid UTF-8 in apiVersion or kind");
		goto out;
	}
	if (e.raw.p && (rc = decode_msg(&d, m, &e.raw, obj, 2)))
		goto out;
	*ret = obj;
	obj = NULL;
	rc = 0;
out:
	json_decref(obj);
	free(e.api_version);
	free(e.kind);
	free(e.content_encoding);
	free(e.content_type);
	return rc;
}
