/* A Swagger 2.0 document (JSON) as gnostic's openapi_v2.Document protobuf message, the form
 * kubectl 1.27 and 1.28 ask /openapi/v2 for (Accept:
 * application/com.github.proto-openapi.spec.v2@v1.0+protobuf). Field numbers are those of
 * gnostic's openapiv2/OpenAPIv2.proto. Vendor extensions ("x-..." keys) become NamedAny
 * {name, Any{yaml}}, the value written as JSON text (which is YAML). Only the parts of Swagger
 * the API servers' documents use are carried over; anything else in the input is skipped, and
 * values of the wrong JSON type are ignored, so any JSON input is safe. */
#include "internal.h"
#include "ursa/pbwrite.h"
#include <stdlib.h>
#include <string.h>

#define MAX_SCHEMA_DEPTH 64

static void put_str(struct buf *b, uint32_t f, const json_t *obj, const char *key)
{
	const char *v = json_string_value(json_object_get(obj, key));
	if (v)
		pbw_string(b, f, v);
}

static void put_bool(struct buf *b, uint32_t f, const json_t *obj, const char *key)
{
	if (json_is_true(json_object_get(obj, key)))
		pbw_bool(b, f, true);
}

static void put_strs(struct buf *b, uint32_t f, const json_t *arr)
{
	size_t i;
	const json_t *v;
	if (json_is_string(arr))
		pbw_string(b, f, json_string_value(arr));
	json_array_foreach (arr, i, v)
		if (json_is_string(v))
			pbw_string(b, f, json_string_value(v));
}

/* Moves child into b as field f. */
static void put_child(struct buf *b, uint32_t f, struct buf *child)
{
	pbw_msg(b, f, child);
	buf_release(child);
}

/* Any {yaml = 2}: JSON text, scalars too ("merge" quoted is YAML's string merge). */
static void put_any(struct buf *b, uint32_t f, const json_t *v)
{
	struct buf any = BUF_INIT;
	char *yaml = json_dumps(v, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_ENCODE_ANY);
	pbw_string(&any, 2, yaml ? yaml : "null");
	free(yaml);
	put_child(b, f, &any);
}

/* NamedAny {name = 1, value = 2} for each "x-" key of obj. */
static void put_vendor(struct buf *b, uint32_t f, const json_t *obj)
{
	const char *k;
	const json_t *v;
	json_object_foreach ((json_t *)obj, k, v) {
		if (strncmp(k, "x-", 2) != 0)
			continue;
		struct buf na = BUF_INIT;
		pbw_string(&na, 1, k);
		put_any(&na, 2, v);
		put_child(b, f, &na);
	}
}

static void schema_msg(const json_t *s, struct buf *out, int depth);

static void put_schema(struct buf *b, uint32_t f, const json_t *s, int depth)
{
	struct buf m = BUF_INIT;
	schema_msg(s, &m, depth + 1);
	put_child(b, f, &m);
}

/* Repeated NamedSchema {name = 1, value = 2} as field f of a wrapper message written as field
 * wf of b (Properties, Definitions). */
static void put_named_schemas(struct buf *b, uint32_t wf, const json_t *obj, int depth)
{
	struct buf wrap = BUF_INIT;
	const char *k;
	const json_t *v;
	json_object_foreach ((json_t *)obj, k, v) {
		struct buf ns = BUF_INIT;
		pbw_string(&ns, 1, k);
		put_schema(&ns, 2, v, depth);
		put_child(&wrap, 1, &ns);
	}
	put_child(b, wf, &wrap);
}

/* openapi_v2.Schema. */
static void schema_msg(const json_t *s, struct buf *out, int depth)
{
	if (!json_is_object(s) || depth > MAX_SCHEMA_DEPTH)
		return;
	put_str(out, 1, s, "$ref");
	put_str(out, 2, s, "format");
	put_str(out, 3, s, "title");
	put_str(out, 4, s, "description");
	if (json_object_get(s, "default"))
		put_any(out, 5, json_object_get(s, "default"));
	put_strs(out, 19, json_object_get(s, "required"));
	size_t i;
	const json_t *v;
	json_array_foreach (json_object_get(s, "enum"), i, v)
		put_any(out, 20, v);
	const json_t *ap = json_object_get(s, "additionalProperties");
	if (json_is_object(ap) || json_is_boolean(ap)) {
		struct buf item = BUF_INIT;
		if (json_is_object(ap))
			put_schema(&item, 1, ap, depth);
		else
			pbw_bool(&item, 2, json_is_true(ap));
		put_child(out, 21, &item);
	}
	const json_t *type = json_object_get(s, "type");
	if (json_is_string(type) || json_is_array(type)) {
		struct buf ti = BUF_INIT;
		put_strs(&ti, 1, type);
		put_child(out, 22, &ti);
	}
	const json_t *items = json_object_get(s, "items");
	if (json_is_object(items) || json_is_array(items)) {
		struct buf ii = BUF_INIT;
		if (json_is_object(items))
			put_schema(&ii, 1, items, depth);
		json_array_foreach (items, i, v)
			put_schema(&ii, 1, v, depth);
		put_child(out, 23, &ii);
	}
	json_array_foreach (json_object_get(s, "allOf"), i, v)
		put_schema(out, 24, v, depth);
	if (json_is_object(json_object_get(s, "properties")))
		put_named_schemas(out, 25, json_object_get(s, "properties"), depth);
	put_bool(out, 27, s, "readOnly");
	put_vendor(out, 31, s);
}

/* openapi_v2.Parameter: BodyParameter (1) or NonBodyParameter (2) by "in". */
static void parameter_msg(const json_t *p, struct buf *out)
{
	const char *in = json_string_value(json_object_get(p, "in"));
	struct buf m = BUF_INIT, sub = BUF_INIT;
	if (in && strcmp(in, "body") == 0) {
		put_str(&m, 1, p, "description");
		put_str(&m, 2, p, "name");
		put_str(&m, 3, p, "in");
		put_bool(&m, 4, p, "required");
		if (json_is_object(json_object_get(p, "schema")))
			put_schema(&m, 5, json_object_get(p, "schema"), 0);
		put_vendor(&m, 6, p);
		put_child(out, 1, &m);
		return;
	}
	/* Query and formData sub-schemas have allowEmptyValue (5), which shifts the later fields. */
	bool query = in && strcmp(in, "query") == 0, form = in && strcmp(in, "formData") == 0;
	bool header = in && strcmp(in, "header") == 0;
	uint32_t shift = query || form ? 1 : 0;
	put_bool(&sub, 1, p, "required");
	put_str(&sub, 2, p, "in");
	put_str(&sub, 3, p, "description");
	put_str(&sub, 4, p, "name");
	if (shift)
		put_bool(&sub, 5, p, "allowEmptyValue");
	put_str(&sub, 5 + shift, p, "type");
	put_str(&sub, 6 + shift, p, "format");
	put_str(&sub, 8 + shift, p, "collectionFormat");
	if (json_object_get(p, "default"))
		put_any(&sub, 9 + shift, json_object_get(p, "default"));
	put_bool(&sub, 19 + shift, p, "uniqueItems");
	put_vendor(&sub, 22 + shift, p);
	put_child(&m, query ? 3 : form ? 2 : header ? 1 : 4, &sub);
	put_child(out, 2, &m);
}

/* openapi_v2.ParametersItem: a Parameter (1) or a JsonReference (2). */
static void put_parameters(struct buf *b, uint32_t f, const json_t *arr)
{
	size_t i;
	const json_t *p;
	json_array_foreach (arr, i, p) {
		if (!json_is_object(p))
			continue;
		struct buf item = BUF_INIT, sub = BUF_INIT;
		if (json_is_string(json_object_get(p, "$ref"))) {
			put_str(&sub, 1, p, "$ref");
			put_child(&item, 2, &sub);
		} else {
			parameter_msg(p, &sub);
			put_child(&item, 1, &sub);
		}
		put_child(b, f, &item);
	}
}

/* openapi_v2.Responses: NamedResponseValue {name, ResponseValue{Response | JsonReference}}. */
static void put_responses(struct buf *b, uint32_t f, const json_t *rs)
{
	struct buf m = BUF_INIT;
	const char *code;
	const json_t *r;
	json_object_foreach ((json_t *)rs, code, r) {
		if (strncmp(code, "x-", 2) == 0 || !json_is_object(r))
			continue;
		struct buf nrv = BUF_INIT, rv = BUF_INIT, resp = BUF_INIT;
		pbw_string(&nrv, 1, code);
		if (json_is_string(json_object_get(r, "$ref"))) {
			put_str(&resp, 1, r, "$ref");
			put_child(&rv, 2, &resp);
		} else {
			put_str(&resp, 1, r, "description");
			if (json_is_object(json_object_get(r, "schema"))) {
				struct buf si = BUF_INIT;
				put_schema(&si, 1, json_object_get(r, "schema"), 0);
				put_child(&resp, 2, &si);
			}
			put_vendor(&resp, 5, r);
			put_child(&rv, 1, &resp);
		}
		put_child(&nrv, 2, &rv);
		put_child(&m, 1, &nrv);
	}
	put_vendor(&m, 2, rs);
	put_child(b, f, &m);
}

static void put_operation(struct buf *b, uint32_t f, const json_t *op)
{
	if (!json_is_object(op))
		return;
	struct buf m = BUF_INIT;
	put_strs(&m, 1, json_object_get(op, "tags"));
	put_str(&m, 2, op, "summary");
	put_str(&m, 3, op, "description");
	put_str(&m, 5, op, "operationId");
	put_strs(&m, 6, json_object_get(op, "produces"));
	put_strs(&m, 7, json_object_get(op, "consumes"));
	put_parameters(&m, 8, json_object_get(op, "parameters"));
	if (json_is_object(json_object_get(op, "responses")))
		put_responses(&m, 9, json_object_get(op, "responses"));
	put_strs(&m, 10, json_object_get(op, "schemes"));
	put_bool(&m, 11, op, "deprecated");
	put_vendor(&m, 13, op);
	put_child(b, f, &m);
}

static void put_paths(struct buf *b, uint32_t f, const json_t *paths)
{
	static const struct {
		const char *method;
		uint32_t num;
	} methods[] = {{"get", 2}, {"put", 3}, {"post", 4}, {"delete", 5}, {"options", 6}, {"head", 7}, {"patch", 8}};
	struct buf m = BUF_INIT;
	put_vendor(&m, 1, paths);
	const char *path;
	const json_t *item;
	json_object_foreach ((json_t *)paths, path, item) {
		if (strncmp(path, "x-", 2) == 0 || !json_is_object(item))
			continue;
		struct buf npi = BUF_INIT, pi = BUF_INIT;
		pbw_string(&npi, 1, path);
		put_str(&pi, 1, item, "$ref");
		for (size_t i = 0; i < sizeof(methods) / sizeof(methods[0]); i++)
			put_operation(&pi, methods[i].num, json_object_get(item, methods[i].method));
		put_parameters(&pi, 9, json_object_get(item, "parameters"));
		put_vendor(&pi, 10, item);
		put_child(&npi, 2, &pi);
		put_child(&m, 2, &npi);
	}
	put_child(b, f, &m);
}

void openapi_v2_protobuf(const json_t *doc, struct buf *out)
{
	if (!json_is_object(doc))
		return;
	put_str(out, 1, doc, "swagger");
	const json_t *info = json_object_get(doc, "info");
	if (json_is_object(info)) {
		struct buf m = BUF_INIT;
		put_str(&m, 1, info, "title");
		put_str(&m, 2, info, "version");
		put_str(&m, 3, info, "description");
		put_vendor(&m, 7, info);
		put_child(out, 2, &m);
	}
	put_str(out, 3, doc, "host");
	put_str(out, 4, doc, "basePath");
	put_strs(out, 5, json_object_get(doc, "schemes"));
	put_strs(out, 6, json_object_get(doc, "consumes"));
	put_strs(out, 7, json_object_get(doc, "produces"));
	if (json_is_object(json_object_get(doc, "paths")))
		put_paths(out, 8, json_object_get(doc, "paths"));
	if (json_is_object(json_object_get(doc, "definitions")))
		put_named_schemas(out, 9, json_object_get(doc, "definitions"), 0);
	const json_t *params = json_object_get(doc, "parameters");
	if (json_is_object(params)) {
		struct buf m = BUF_INIT;
		const char *k;
		const json_t *p;
		json_object_foreach ((json_t *)params, k, p) {
			struct buf np = BUF_INIT, pm = BUF_INIT;
			pbw_string(&np, 1, k);
			if (json_is_object(p))
				parameter_msg(p, &pm);
			put_child(&np, 2, &pm);
			put_child(&m, 1, &np);
		}
		put_child(out, 10, &m);
	}
	put_vendor(out, 16, doc);
}
