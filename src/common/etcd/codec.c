/* Decoding of the etcd v3 JSON gateway's answers that remain in use (leases, errors: int64 as
 * strings, omitted defaults, error bodies), the kv result releases, and the mapping of gRPC
 * status codes to E_* codes that both transports use. */
#include "etcd/etcd_internal.h"
#include "ursa/errors.h"
#include "ursa/jsonutil.h"
#include "ursa/xalloc.h"
#include <stdlib.h>
#include <string.h>

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
	case GRPC_FAILED_PRECONDITION:
		return has(message, "already exists") ? E_ALREADY_EXISTS : E_CONFLICT;
	case GRPC_UNIMPLEMENTED:
		return E_INTERNAL;
	default:
		return grpc_code_error(code);
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
		return grpc_http_error(http_status);
	if (code == 0) {
		if (!json_object_get(src, "code"))
			return grpc_http_error(http_status);
		if (etcd_json_i64(src, "code", &code) < 0)
			return E_INTERNAL;
	}
	msg = json_str(src, "message");
	if (!msg)
		msg = json_str(src, "error");
	return etcd_grpc_error(code, msg);
}
