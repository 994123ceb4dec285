/* Encoding and decoding of the etcd v3 JSON gateway's messages (base64 bytes fields, int64 as
 * strings, omitted defaults, error bodies and watch stream lines), and the mapping of gRPC
 * status codes to E_* codes that both transports use. */
#include "etcd/etcd_internal.h"
#include "ursa/errors.h"
#include "ursa/jsonutil.h"
#include "ursa/xalloc.h"
#include <limits.h>
#include <openssl/evp.h>
#include <stdlib.h>
#include <string.h>

void etcd_b64_encode(struct buf *out, const void *data, size_t len)
{
	const unsigned char *p = data;
	/* EVP_EncodeBlock takes an int length: encode in chunks that are a multiple of 3 bytes. */
	const size_t chunk = (size_t)3 << 20;

	while (len > 0) {
		size_t n = len < chunk ? len : chunk;
		size_t enc = 4 * ((n + 2) / 3);
		buf_grow(out, enc);
		int w = EVP_EncodeBlock((unsigned char *)out->ptr + out->len, p, (int)n);
		out->len += (size_t)w;
		out->ptr[out->len] = '\0';
		p += n;
		len -= n;
	}
	if (!out->ptr)
		buf_add(out, "", 0);
}

static bool b64_char(unsigned char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '+' ||
	       c == '/';
}

/* EVP_DecodeBlock accepts '=' anywhere and strips whitespace, so check the strict form first. */
static int b64_check(const unsigned char *in, size_t len, size_t *ret_pad)
{
	size_t pad = 0;

	if (len % 4 != 0 || len > (size_t)INT_MAX)
		return -1;
	if (len > 0 && in[len - 1] == '=') {
		pad++;
		if (in[len - 2] == '=')
			pad++;
	}
	for (size_t i = 0; i < len - pad; i++)
		if (!b64_char(in[i]))
			return -1;
	*ret_pad = pad;
	return 0;
}

int etcd_b64_decode(const char *in, size_t len, char **ret, size_t *ret_len)
{
	const unsigned char *u = (const unsigned char *)in;
	size_t pad;

	if (b64_check(u, len, &pad) < 0)
		return E_INTERNAL;
	char *out = xmalloc(len / 4 * 3 + 1);
	if (len > 0 && EVP_DecodeBlock((unsigned char *)out, u, (int)len) < 0) {
		free(out);
		return E_INTERNAL;
	}
	size_t n = len / 4 * 3 - pad;
	out[n] = '\0';
	*ret = out;
	*ret_len = n;
	return 0;
}

json_t *etcd_json_parse(const char *data, size_t len)
{
	return json_parse_limited(data, len, ETCD_JSON_DEPTH, NULL);
}

int etcd_json_i64(const json_t *obj, const char *key, int64_t *ret)
{
	json_t *v = json_is_object(obj) ? json_object_get(obj, key) : NULL;
	long long n;

	if (!v || json_is_null(v)) {
		*ret = 0;
		return 0;
	}
	if (json_is_integer(v)) {
		*ret = json_integer_value(v);
		return 0;
	}
	if (!json_is_string(v) || json_string_length(v) > 20)
		return E_INTERNAL;
	if (parse_int64(json_string_value(v), &n) < 0)
		return E_INTERNAL;
	*ret = n;
	return 0;
}

bool etcd_json_bool(const json_t *obj, const char *key)
{
	json_t *v = json_is_object(obj) ? json_object_get(obj, key) : NULL;
	return v && json_is_true(v);
}

int etcd_header_rev(const json_t *resp, int64_t *ret)
{
	json_t *h = json_is_object(resp) ? json_object_get(resp, "header") : NULL;
	if (h && !json_is_object(h))
		return E_INTERNAL;
	return etcd_json_i64(h, "revision", ret);
}

static int bytes_field(const json_t *obj, const char *key, char **ret, size_t *ret_len)
{
	json_t *v = json_object_get(obj, key);

	if (!v || json_is_null(v)) {
		*ret = xstrdup("");
		*ret_len = 0;
		return 0;
	}
	if (!json_is_string(v))
		return E_INTERNAL;
	return etcd_b64_decode(json_string_value(v), json_string_length(v), ret, ret_len);
}

int etcd_parse_kv(const json_t *j, struct etcd_kv *ret)
{
	struct etcd_kv kv = { 0 };
	size_t key_len;
	int rc = E_INTERNAL;

	if (!json_is_object(j))
		goto out;
	if (bytes_field(j, "key", &kv.key, &key_len) < 0 || bytes_field(j, "value", &kv.value, &kv.value_len) < 0)
		goto out;
	if (etcd_json_i64(j, "create_revision", &kv.create_rev) < 0 ||
	    etcd_json_i64(j, "mod_revision", &kv.mod_rev) < 0 || etcd_json_i64(j, "version", &kv.version) < 0 ||
	    etcd_json_i64(j, "lease", &kv.lease) < 0)
		goto out;
	rc = 0;
out:
	if (rc < 0)
		etcd_kv_release(&kv);
	*ret = kv;
	return rc;
}

void etcd_kv_release(struct etcd_kv *kv)
{
	if (!kv)
		return;
	free(kv->key);
	free(kv->value);
	memset(kv, 0, sizeof(*kv));
}

void etcd_range_result_release(struct etcd_range_result *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->n; i++)
		etcd_kv_release(&r->kvs[i]);
	free(r->kvs);
	memset(r, 0, sizeof(*r));
}

/* gRPC status codes (google.golang.org/grpc/codes). */
enum {
	GRPC_CANCELED = 1,
	GRPC_INVALID_ARGUMENT = 3,
	GRPC_DEADLINE_EXCEEDED = 4,
	GRPC_NOT_FOUND = 5,
	GRPC_ALREADY_EXISTS = 6,
	GRPC_PERMISSION_DENIED = 7,
	GRPC_RESOURCE_EXHAUSTED = 8,
	GRPC_FAILED_PRECONDITION = 9,
	GRPC_ABORTED = 10,
	GRPC_OUT_OF_RANGE = 11,
	GRPC_UNAVAILABLE = 14,
	GRPC_UNAUTHENTICATED = 16,
};

static bool has(const char *msg, const char *what)
{
	return msg && strstr(msg, what);
}

int etcd_grpc_error(int64_t code, const char *message)
{
	switch (code) {
	case GRPC_OUT_OF_RANGE:
		/* "required revision is a future revision" maps like Kubernetes' "too large resource
		 * version": a timeout. */
		return has(message, "compacted") ? E_GONE : E_TIMEOUT;
	case GRPC_INVALID_ARGUMENT:
		if (has(message, "too large"))
			return E_TOO_LARGE;
		if (has(message, "key not found"))
			return E_NOT_FOUND;
		return E_BAD_REQUEST;
	case GRPC_RESOURCE_EXHAUSTED:
		/* message size over the gRPC limit; otherwise NOSPACE ("database space exceeded") */
		return has(message, "larger than max") ? E_TOO_LARGE : E_INTERNAL;
	case GRPC_NOT_FOUND:
		return E_NOT_FOUND;
	case GRPC_ALREADY_EXISTS:
		return E_ALREADY_EXISTS;
	case GRPC_FAILED_PRECONDITION:
		return has(message, "already exists") ? E_ALREADY_EXISTS : E_CONFLICT;
	case GRPC_ABORTED:
		return E_CONFLICT;
	case GRPC_CANCELED:
	case GRPC_DEADLINE_EXCEEDED:
		return E_TIMEOUT;
	case GRPC_UNAVAILABLE:
		return E_UNAVAILABLE;
	case GRPC_UNAUTHENTICATED:
		return E_UNAUTHORIZED;
	case GRPC_PERMISSION_DENIED:
		return E_FORBIDDEN;
	default:
		return E_INTERNAL;
	}
}

static int http_error(long status)
{
	switch (status) {
	case 503:
		return E_UNAVAILABLE;
	case 504:
		return E_TIMEOUT;
	case 413:
		return E_TOO_LARGE;
	default:
		return E_INTERNAL;
	}
}

int etcd_parse_error(const json_t *body, long http_status)
{
	const json_t *src = body;
	json_t *err = json_is_object(body) ? json_object_get(body, "error") : NULL;
	int64_t code = 0;
	const char *msg;

	if (json_is_object(err)) {
		src = err;
		if (json_object_get(err, "grpc_code") && etcd_json_i64(err, "grpc_code", &code) < 0)
			return E_INTERNAL;
	}
	if (!json_is_object(src))
		return http_error(http_status);
	if (code == 0) {
		if (!json_object_get(src, "code"))
			return http_error(http_status);
		if (etcd_json_i64(src, "code", &code) < 0)
			return E_INTERNAL;
	}
	msg = json_str(src, "message");
	if (!msg)
		msg = json_str(src, "error");
	return etcd_grpc_error(code, msg);
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

static int parse_event_type(const json_t *ev, enum etcd_event_type *ret)
{
	json_t *t = json_object_get(ev, "type");

	if (!t || json_is_null(t) || (json_is_string(t) && !strcmp(json_string_value(t), "PUT")) ||
	    (json_is_integer(t) && json_integer_value(t) == 0)) {
		*ret = ETCD_EV_PUT;
		return 0;
	}
	if ((json_is_string(t) && !strcmp(json_string_value(t), "DELETE")) ||
	    (json_is_integer(t) && json_integer_value(t) == 1)) {
		*ret = ETCD_EV_DELETE;
		return 0;
	}
	return E_INTERNAL;
}

static int parse_event(const json_t *j, struct etcd_event *ret)
{
	json_t *prev;

	memset(ret, 0, sizeof(*ret));
	if (!json_is_object(j) || parse_event_type(j, &ret->type) < 0)
		return E_INTERNAL;
	if (etcd_parse_kv(json_object_get(j, "kv"), &ret->kv) < 0)
		return E_INTERNAL;
	prev = json_object_get(j, "prev_kv");
	if (prev && !json_is_null(prev) && etcd_parse_kv(prev, &ret->prev_kv) < 0) {
		etcd_kv_release(&ret->kv);
		return E_INTERNAL;
	}
	return 0;
}

static int parse_watch_result(const json_t *res, struct etcd_watch_msg *m)
{
	json_t *evs = json_object_get(res, "events");

	if (etcd_header_rev(res, &m->header_rev) < 0 || etcd_json_i64(res, "watch_id", &m->watch_id) < 0 ||
	    etcd_json_i64(res, "compact_revision", &m->compact_rev) < 0)
		return E_INTERNAL;
	m->created = etcd_json_bool(res, "created");
	m->canceled = etcd_json_bool(res, "canceled");
	m->fragment = etcd_json_bool(res, "fragment");
	if (!evs || json_is_null(evs))
		return 0;
	if (!json_is_array(evs))
		return E_INTERNAL;
	if (json_array_size(evs) == 0)
		return 0;
	m->events = xcalloc(json_array_size(evs), sizeof(*m->events));
	for (size_t i = 0; i < json_array_size(evs); i++, m->n_events++)
		if (parse_event(json_array_get(evs, i), &m->events[i]) < 0)
			return E_INTERNAL;
	return 0;
}

int etcd_parse_watch_line(const char *line, size_t len, struct etcd_watch_msg *ret)
{
	json_t *j = etcd_json_parse(line, len);
	json_t *res;
	int rc = E_INTERNAL;

	memset(ret, 0, sizeof(*ret));
	if (!json_is_object(j))
		goto out;
	res = json_object_get(j, "result");
	if (json_is_object(res))
		rc = parse_watch_result(res, ret);
	else if (json_object_get(j, "error") || json_object_get(j, "code"))
		rc = etcd_parse_error(j, 0);
out:
	if (rc != 0)
		etcd_watch_msg_release(ret);
	json_decref(j);
	return rc;
}
