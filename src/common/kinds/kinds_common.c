/* Defaults and Table-cell helpers shared by the kind strategies. */
#include <stdlib.h>
#include <string.h>
#include "kinds/kinds_common.h"
#include "ursa/base64.h"
#include "ursa/jsonutil.h"
#include "ursa/selector.h"
#include "ursa/timeutil.h"
#include "ursa/xalloc.h"

/* Lists rendered into one cell (containers, labels) stop growing past this many bytes. */
#define CELL_MAX 4096

void default_str(json_t *obj, const char *key, const char *value)
{
	json_t *v = json_object_get(obj, key);
	if (!v || json_is_null(v) || (json_is_string(v) && json_string_length(v) == 0))
		json_object_set_new(obj, key, json_string(value));
}

void default_int(json_t *obj, const char *key, long long value)
{
	json_t *v = json_object_get(obj, key);
	if (!v || json_is_null(v))
		json_object_set_new(obj, key, json_integer(value));
}

void default_bool(json_t *obj, const char *key, bool value)
{
	json_t *v = json_object_get(obj, key);
	if (!v || json_is_null(v))
		json_object_set_new(obj, key, json_boolean(value));
}

json_t *default_obj(json_t *obj, const char *key)
{
	json_t *v = json_object_get(obj, key);
	if (!v || json_is_null(v)) {
		v = json_object();
		json_object_set_new(obj, key, v);
	}
	return v;
}

long long int_at(const json_t *obj, const char *dotted, long long dflt)
{
	json_t *v = json_path(obj, dotted);
	return json_is_integer(v) ? (long long)json_integer_value(v) : dflt;
}

void cell_str(json_t *cells, const char *s)
{
	json_t *v = json_string(s ? s : "");
	json_array_append_new(cells, v ? v : json_string(""));
}

void cell_str_or(json_t *cells, const char *s, const char *none)
{
	cell_str(cells, s && *s ? s : none);
}

void cell_int(json_t *cells, long long v)
{
	json_array_append_new(cells, json_integer(v));
}

void cell_name(const json_t *obj, json_t *cells)
{
	cell_str(cells, json_path_str(obj, "metadata.name"));
}

void since_add(struct buf *out, const char *ts, time_t now)
{
	time_t t;
	if (!ts || !*ts || rfc3339_parse(ts, &t) != 0)
		buf_adds(out, "<unknown>");
	else
		age_add(out, t, now);
}

void cell_age(const json_t *obj, time_t now, json_t *cells)
{
	struct buf b = BUF_INIT;
	since_add(&b, json_path_str(obj, "metadata.creationTimestamp"), now);
	cell_str(cells, buf_cstr(&b));
	buf_release(&b);
}

static int cmp_cstr(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

void labels_format(const json_t *map, struct buf *out)
{
	size_t n = json_is_object(map) ? json_object_size(map) : 0, i = 0;
	if (n == 0) {
		buf_adds(out, "<none>");
		return;
	}
	const char **keys = xcalloc(n, sizeof(*keys));
	const char *k;
	json_t *v;
	json_object_foreach((json_t *)map, k, v)
		keys[i++] = k;
	qsort(keys, n, sizeof(*keys), cmp_cstr);
	for (i = 0; i < n && out->len < CELL_MAX; i++) {
		const char *val = json_string_value(json_object_get(map, keys[i]));
		buf_addf(out, "%s%s=%s", i ? "," : "", keys[i], val ? val : "");
	}
	free(keys);
}

void cell_labels(json_t *cells, const json_t *map)
{
	struct buf b = BUF_INIT;
	labels_format(map, &b);
	cell_str(cells, buf_cstr(&b));
	buf_release(&b);
}

void cell_selector(json_t *cells, const json_t *sel, const char *empty_text, const char *bad_text)
{
	struct label_selector *ls = NULL;
	struct buf b = BUF_INIT;
	if (!sel || json_is_null(sel)) {
		cell_str(cells, empty_text);
		return;
	}
	if (label_selector_from_json(sel, &ls, NULL) != 0) {
		cell_str(cells, bad_text);
		return;
	}
	label_selector_format(ls, &b);
	cell_str(cells, b.len ? buf_cstr(&b) : empty_text);
	label_selector_free(ls);
	buf_release(&b);
}

void cell_containers_images(json_t *cells, const json_t *pod_spec)
{
	struct buf names = BUF_INIT, images = BUF_INIT;
	const json_t *containers = json_object_get(pod_spec, "containers");
	size_t i;
	json_t *c;
	json_array_foreach(containers, i, c) {
		if (names.len >= CELL_MAX || images.len >= CELL_MAX)
			break;
		const char *n = json_str(c, "name"), *img = json_str(c, "image");
		buf_addf(&names, "%s%s", i ? "," : "", n ? n : "");
		buf_addf(&images, "%s%s", i ? "," : "", img ? img : "");
	}
	cell_str(cells, buf_cstr(&names));
	cell_str(cells, buf_cstr(&images));
	buf_release(&names);
	buf_release(&images);
}

/* ---- ConfigMap and Secret data ---- */

static const char *config_key_error(const char *k)
{
	size_t n = strlen(k);
	if (n > 253)
		return "must be no more than 253 characters";
	if (n == 0 || strspn(k, "-._abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789") != n)
		return "a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. "
		       "'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')";
	if (!strcmp(k, "."))
		return "must not be '.'";
	if (!strcmp(k, ".."))
		return "must not be '..'";
	if (!strncmp(k, "..", 2))
		return "must not start with '..'";
	return NULL;
}

void validate_config_data(const json_t *map, const char *field, bool base64, const json_t *seen, size_t *size,
			  struct field_errors *errs)
{
	const char *k;
	json_t *v;
	if (!map || json_is_null(map))
		return;
	if (!json_is_object(map)) {
		field_error_type(errs, field, "an object of strings");
		return;
	}
	json_object_foreach((json_t *)map, k, v) {
		char *f = xasprintf("%s[%s]", field, k);
		const char *why = config_key_error(k);
		if (why)
			field_error_invalid(errs, f, k, "%s", why);
		else if (seen && json_object_get(seen, k))
			field_error_duplicate(errs, f, k);
		*size += strlen(k);
		if (!json_is_string(v)) {
			field_error_type(errs, f, "a string");
		} else if (base64) {
			/* Go's StdEncoding: padding required, unused trailing bits not checked */
			long long n = base64_decoded_len(json_string_value(v), json_string_length(v), 0);
			if (n < 0)
				field_error_invalid(errs, f, "<value omitted>", "must be valid base64 data");
			else
				*size += (size_t)n;
		} else {
			*size += json_string_length(v);
		}
		free(f);
	}
}

void validate_immutable_data(const json_t *obj, const json_t *old, struct field_errors *errs)
{
	static const char *const keys[] = { "data", "binaryData", "stringData" };
	if (!old || !json_is_true(json_object_get(old, "immutable")))
		return;
	if (!json_is_true(json_object_get(obj, "immutable")))
		field_error_forbidden(errs, "immutable", "field is immutable when `immutable` is set");
	for (size_t i = 0; i < ARRAY_SIZE(keys); i++) {
		json_t *a = json_object_get(obj, keys[i]), *b = json_object_get(old, keys[i]);
		bool a_empty = !a || json_is_null(a) || (json_is_object(a) && json_object_size(a) == 0);
		bool b_empty = !b || json_is_null(b) || (json_is_object(b) && json_object_size(b) == 0);
		if ((a_empty && b_empty) || (!a_empty && !b_empty && json_equal(a, b)))
			continue;
		field_error_forbidden(errs, keys[i], "field is immutable when `immutable` is set");
	}
}

void cells_name_phase_age(const json_t *obj, time_t now, json_t *cells)
{
	cell_name(obj, cells);
	cell_str(cells, json_path_str(obj, "status.phase"));
	cell_age(obj, now, cells);
}

const struct api_field phase_fields[1] = { { "status.phase", "status.phase" } };

void validate_spec_finalizers(const json_t *obj, struct field_errors *errs)
{
	const json_t *fins = json_path(obj, "spec.finalizers");
	size_t i;
	json_t *f;
	if (fins && !json_is_null(fins) && !json_is_array(fins))
		field_error_type(errs, "spec.finalizers", "an array of strings");
	json_array_foreach(fins, i, f) {
		const char *s = json_string_value(f);
		if (s && !label_key_why(s))
			continue;
		char *path = xasprintf("spec.finalizers[%zu]", i);
		if (!s)
			field_error_type(errs, path, "a string");
		else
			field_error_invalid(errs, path, s, "%s", label_key_why(s));
		free(path);
	}
}
