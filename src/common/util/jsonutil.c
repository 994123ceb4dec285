#include "ursa/jsonutil.h"
#include "ursa/xalloc.h"
#include <string.h>

json_t *json_path(const json_t *obj, const char *dotted)
{
	const json_t *cur = obj;
	const char *p = dotted;
	char key[256];
	while (cur && *p) {
		const char *dot = strchr(p, '.');
		size_t n = dot ? (size_t)(dot - p) : strlen(p);
		if (n >= sizeof(key) || !json_is_object(cur))
			return NULL;
		memcpy(key, p, n);
		key[n] = '\0';
		cur = json_object_get(cur, key);
		p += n + (dot ? 1 : 0);
	}
	return (json_t *)cur;
}

const char *json_str(const json_t *obj, const char *key)
{
	return json_string_value(json_object_get(obj, key));
}

const char *json_path_str(const json_t *obj, const char *dotted)
{
	return json_string_value(json_path(obj, dotted));
}

json_t *json_obj_child(json_t *obj, const char *key)
{
	json_t *c = json_object_get(obj, key);
	if (!json_is_object(c)) {
		c = json_object();
		json_object_set_new(obj, key, c);
	}
	return c;
}

const json_t *json_controller_ref(const json_t *obj)
{
	size_t i;
	json_t *r;
	json_array_foreach(json_path(obj, "metadata.ownerReferences"), i, r)
		if (json_is_true(json_object_get(r, "controller")))
			return r;
	return NULL;
}

bool json_has_finalizer(const json_t *obj, const char *fin)
{
	size_t i;
	json_t *f;
	json_array_foreach(json_path(obj, "metadata.finalizers"), i, f)
		if (json_is_string(f) && strcmp(json_string_value(f), fin) == 0)
			return true;
	return false;
}

const char *json_controller_uid(const json_t *obj, const char *kind)
{
	const json_t *r = json_controller_ref(obj);
	if (kind && strcmp(json_str(r, "kind") ?: "", kind) != 0)
		return NULL;
	return json_str(r, "uid");
}

void json_path_scalar(const json_t *obj, const char *dotted, struct buf *out)
{
	json_t *v = json_path(obj, dotted);
	if (json_is_string(v))
		buf_add(out, json_string_value(v), json_string_length(v));
	else if (json_is_true(v))
		buf_adds(out, "true");
	else if (json_is_false(v))
		buf_adds(out, "false");
	else if (json_is_integer(v))
		buf_addf(out, "%lld", (long long)json_integer_value(v));
}

static int dump_cb(const char *data, size_t size, void *ud)
{
	buf_add(ud, data, size);
	return 0;
}

void json_dump_buf(const json_t *j, struct buf *out)
{
	json_dump_callback(j, dump_cb, out, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_ENCODE_ANY);
}

/* Scans nesting depth without parsing, so that hostile input cannot make jansson recurse deeply. */
static int scan_depth(const char *d, size_t len, int max_depth)
{
	int depth = 0;
	bool in_str = false;
	for (size_t i = 0; i < len; i++) {
		char c = d[i];
		if (in_str) {
			if (c == '\\')
				i++;
			else if (c == '"')
				in_str = false;
			continue;
		}
		if (c == '"')
			in_str = true;
		else if (c == '{' || c == '[') {
			if (++depth > max_depth)
				return -1;
		} else if (c == '}' || c == ']')
			depth--;
	}
	return 0;
}

json_t *json_parse_limited(const char *data, size_t len, int max_depth, struct buf *ret_err)
{
	if (scan_depth(data, len, max_depth) < 0) {
		if (ret_err)
			buf_addf(ret_err, "JSON nesting deeper than %d levels", max_depth);
		return NULL;
	}
	json_error_t jerr;
	json_t *j = json_loadb(data, len, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &jerr);
	if (!j && ret_err)
		buf_addf(ret_err, "%s at line %d column %d", jerr.text, jerr.line, jerr.column);
	return j;
}

int json_depth(const json_t *j)
{
	int max = 0;
	if (json_is_object(j)) {
		const char *k;
		json_t *v;
		json_object_foreach((json_t *)j, k, v) {
			int d = json_depth(v);
			if (d > max)
				max = d;
		}
		return max + 1;
	}
	if (json_is_array(j)) {
		size_t i;
		json_t *v;
		json_array_foreach(j, i, v) {
			int d = json_depth(v);
			if (d > max)
				max = d;
		}
		return max + 1;
	}
	return 0;
}
