/* crd_schema_validate: a custom resource against its compiled schema, one cause per violation,
 * messages shaped like upstream's apiextensions validation
 * (`Invalid value: 11: spec.replicas in body should be less than or equal to 10`). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "api/validation.h"
#include "crd/schema_internal.h"
#include "ursa/crd.h"
#include "ursa/jsonutil.h"
#include "ursa/xalloc.h"

/* Longest rendering of a value in a message. */
#define VALUE_MAX 256

const char *json_type_name(const json_t *v)
{
	switch (json_typeof(v)) {
	case JSON_OBJECT: return "object";
	case JSON_ARRAY: return "array";
	case JSON_STRING: return "string";
	case JSON_INTEGER: return "integer";
	case JSON_REAL: return "number";
	case JSON_TRUE:
	case JSON_FALSE: return "boolean";
	default: return "null";
	}
}

void number_add(struct buf *b, const json_t *v)
{
	if (json_is_integer(v)) {
		buf_addf(b, "%lld", (long long)json_integer_value(v));
		return;
	}
	double d = json_number_value(v);
	char tmp[40];
	snprintf(tmp, sizeof(tmp), "%.15g", d);
	if (strtod(tmp, NULL) != d)
		snprintf(tmp, sizeof(tmp), "%.17g", d);
	buf_adds(b, tmp);
}

void value_add(struct buf *b, const json_t *v)
{
	if (json_is_string(v)) {
		size_t len = json_string_length(v);
		const char *s = json_string_value(v);
		bool cut = len > VALUE_MAX;
		if (cut) {
			len = VALUE_MAX;
			while (len > 0 && ((unsigned char)s[len] & 0xC0) == 0x80)
				len--;
		}
		buf_add_json_str(b, s, len);
		if (cut)
			buf_adds(b, "...");
	} else if (json_is_number(v)) {
		number_add(b, v);
	} else {
		struct buf d = BUF_INIT;
		json_dump_buf(v, &d);
		size_t len = d.len;
		if (len > VALUE_MAX) {
			len = VALUE_MAX;
			while (len > 0 && ((unsigned char)d.ptr[len] & 0xC0) == 0x80)
				len--;
		}
		buf_add(b, buf_cstr(&d), len);
		if (len < d.len)
			buf_adds(b, "...");
		buf_release(&d);
	}
}

/* "spec.x in body", or "body" at the root. */
static void subject_add(struct buf *b, const struct buf *path)
{
	if (path->len)
		buf_addf(b, "%s in body", buf_cstr(path));
	else
		buf_adds(b, "body");
}

/* `Invalid value: <v>: <path> in body <detail>` (FieldValueInvalid). */
static void invalid(struct field_errors *errs, const struct buf *path, const json_t *v, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static void invalid(struct field_errors *errs, const struct buf *path, const json_t *v, const char *fmt, ...)
{
	struct buf m = BUF_INIT;
	buf_adds(&m, "Invalid value: ");
	value_add(&m, v);
	buf_adds(&m, ": ");
	subject_add(&m, path);
	buf_addch(&m, ' ');
	va_list ap;
	va_start(ap, fmt);
	buf_vaddf(&m, fmt, ap);
	va_end(ap);
	field_error_add(errs, "FieldValueInvalid", buf_cstr(path), "%s", buf_cstr(&m));
	buf_release(&m);
}

/* `Invalid value: "<got>": <path> in body must be of type <want>: "<got>"` (FieldValueTypeInvalid);
 * for formats the value itself stands in for <got>. */
static void type_invalid(struct field_errors *errs, const struct buf *path, const json_t *v, const char *want,
			 bool show_value)
{
	struct buf m = BUF_INIT, got = BUF_INIT;
	if (show_value)
		value_add(&got, v);
	else
		buf_addf(&got, "\"%s\"", json_type_name(v));
	buf_addf(&m, "Invalid value: %s: ", buf_cstr(&got));
	subject_add(&m, path);
	buf_addf(&m, " must be of type %s: %s", want, buf_cstr(&got));
	field_error_add(errs, "FieldValueTypeInvalid", buf_cstr(path), "%s", buf_cstr(&m));
	buf_release(&m);
	buf_release(&got);
}

static bool is_integral(const json_t *v)
{
	if (json_is_integer(v))
		return true;
	if (!json_is_real(v))
		return false;
	double d = json_real_value(v);
	return isfinite(d) && d == floor(d);
}

static const char *const type_names[] = { NULL, "object", "array", "string", "integer", "number", "boolean" };

static bool type_ok(const struct snode *n, const json_t *v)
{
	if (n->int_or_string)
		return json_is_string(v) || is_integral(v);
	switch (n->type) {
	case ST_OBJECT: return json_is_object(v);
	case ST_ARRAY: return json_is_array(v);
	case ST_STRING: return json_is_string(v);
	case ST_INTEGER: return is_integral(v);
	case ST_NUMBER: return json_is_number(v);
	case ST_BOOLEAN: return json_is_boolean(v);
	default: return true;
	}
}

/* Numbers compare by value (1 equals 1.0); everything else as jansson does. */
static bool value_equal(const json_t *a, const json_t *b)
{
	if (json_is_number(a) && json_is_number(b)) {
		if (json_is_integer(a) && json_is_integer(b))
			return json_integer_value(a) == json_integer_value(b);
		return json_number_value(a) == json_number_value(b);
	}
	return json_equal((json_t *)a, (json_t *)b);
}

static int num_cmp(const json_t *a, const json_t *b)
{
	if (json_is_integer(a) && json_is_integer(b)) {
		json_int_t x = json_integer_value(a), y = json_integer_value(b);
		return x < y ? -1 : x > y;
	}
	double x = json_number_value(a), y = json_number_value(b);
	return x < y ? -1 : x > y;
}

static void check_enum(const struct snode *n, const json_t *v, const struct buf *path, struct field_errors *errs)
{
	size_t i;
	const json_t *e;
	json_array_foreach(n->enum_vals, i, e)
		if (value_equal(e, v))
			return;
	struct buf m = BUF_INIT;
	buf_adds(&m, "Unsupported value: ");
	value_add(&m, v);
	buf_adds(&m, ": supported values: ");
	json_array_foreach(n->enum_vals, i, e) {
		if (i)
			buf_adds(&m, ", ");
		if (json_is_string(e)) {
			value_add(&m, e);
		} else {
			struct buf d = BUF_INIT;
			value_add(&d, e);
			buf_add_json_str(&m, buf_cstr(&d), d.len);
			buf_release(&d);
		}
	}
	field_error_add(errs, "FieldValueNotSupported", buf_cstr(path), "%s", buf_cstr(&m));
	buf_release(&m);
}

static size_t utf8_chars(const char *s, size_t len)
{
	size_t n = 0;
	for (size_t i = 0; i < len; i++)
		n += ((unsigned char)s[i] & 0xC0) != 0x80;
	return n;
}

static void check_string(const struct snode *n, const json_t *v, const struct buf *path, struct field_errors *errs)
{
	const char *s = json_string_value(v);
	size_t len = json_string_length(v);
	if (n->max_length >= 0 || n->min_length >= 0) {
		long long chars = (long long)utf8_chars(s, len);
		if (n->max_length >= 0 && chars > n->max_length)
			field_error_add(errs, "FieldValueTooLong", buf_cstr(path),
					"Too long: may not be longer than %lld", n->max_length);
		if (n->min_length >= 0 && chars < n->min_length)
			invalid(errs, path, v, "should be at least %lld chars long", n->min_length);
	}
	/* regexec stops at a NUL: a string with one cannot be matched whole, so it does not match. */
	if (n->pattern && (strlen(s) != len || regexec(n->pattern, s, 0, NULL, 0) != 0))
		invalid(errs, path, v, "should match '%s'", n->pattern_src);
	if (n->format && !crd_format_ok(n->format, v))
		type_invalid(errs, path, v, n->format, true);
}

static void check_number(const struct snode *n, const json_t *v, const struct buf *path, struct field_errors *errs)
{
	struct buf lim = BUF_INIT;
	if (n->maximum) {
		int c = num_cmp(v, n->maximum);
		number_add(&lim, n->maximum);
		if (n->excl_max && c >= 0)
			invalid(errs, path, v, "should be less than %s", buf_cstr(&lim));
		else if (c > 0)
			invalid(errs, path, v, "should be less than or equal to %s", buf_cstr(&lim));
		buf_reset(&lim);
	}
	if (n->minimum) {
		int c = num_cmp(v, n->minimum);
		number_add(&lim, n->minimum);
		if (n->excl_min && c <= 0)
			invalid(errs, path, v, "should be greater than %s", buf_cstr(&lim));
		else if (c < 0)
			invalid(errs, path, v, "should be greater than or equal to %s", buf_cstr(&lim));
		buf_reset(&lim);
	}
	if (n->multiple_of) {
		bool ok;
		if (json_is_integer(v) && json_is_integer(n->multiple_of)) {
			json_int_t m = json_integer_value(n->multiple_of);
			ok = m <= 0 || json_integer_value(v) % m == 0;
		} else {
			double q = json_number_value(v) / json_number_value(n->multiple_of);
			ok = isfinite(q) && fabs(q - round(q)) <= 1e-9 * fmax(1.0, fabs(q));
		}
		number_add(&lim, n->multiple_of);
		if (!ok)
			invalid(errs, path, v, "should be a multiple of %s", buf_cstr(&lim));
	}
	if (n->format && !crd_format_ok(n->format, v))
		type_invalid(errs, path, v, n->format, true);
	buf_release(&lim);
}

struct keyed {
	char *key;
	size_t idx;
};

static int keyed_cmp(const void *a, const void *b)
{
	const struct keyed *x = a, *y = b;
	int c = strcmp(x->key, y->key);
	return c ? c : (x->idx > y->idx) - (x->idx < y->idx);
}

/* A canonical text of v for duplicate detection: sorted keys, integral reals as integers. */
static void canon_add(struct buf *b, const json_t *v)
{
	if (json_is_real(v) && is_integral(v) && fabs(json_real_value(v)) < 9e15) {
		buf_addf(b, "%lld", (long long)json_real_value(v));
		return;
	}
	char *s = json_dumps(v, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
	buf_adds(b, s ? s : "null");
	free(s);
}

/* Duplicates among the elements of arr (whole elements, or for list-type map the tuple of
 * map_keys): reported at each later element as FieldValueDuplicate, or once at the array for
 * uniqueItems (at_array). Sorting keeps it n log n. */
static void check_duplicates(const struct snode *n, const json_t *arr, struct buf *path, bool by_keys, bool at_array,
			     struct field_errors *errs)
{
	size_t count = json_array_size(arr), i;
	if (count < 2)
		return;
	struct keyed *k = xcalloc(count, sizeof(*k));
	bool *dup = xcalloc(count, sizeof(*dup));
	const json_t *e;
	json_array_foreach(arr, i, e) {
		struct buf b = BUF_INIT;
		if (by_keys) {
			for (size_t m = 0; m < n->nmap_keys; m++) {
				const json_t *kv = json_is_object(e) ? json_object_get(e, n->map_keys[m]) : NULL;
				canon_add(&b, kv ? kv : json_null());
				buf_addch(&b, '\n');
			}
		} else {
			canon_add(&b, e);
		}
		k[i].key = buf_detach(&b, NULL);
		k[i].idx = i;
	}
	qsort(k, count, sizeof(*k), keyed_cmp);
	for (i = 1; i < count; i++)
		if (!strcmp(k[i].key, k[i - 1].key))
			dup[k[i].idx] = true;
	for (i = 0; i < count; i++) {
		if (!dup[i])
			continue;
		struct buf m = BUF_INIT;
		e = json_array_get(arr, i);
		buf_adds(&m, "Duplicate value: ");
		if (by_keys) {
			json_t *o = json_object();
			for (size_t x = 0; x < n->nmap_keys; x++) {
				const json_t *kv = json_is_object(e) ? json_object_get(e, n->map_keys[x]) : NULL;
				if (kv)
					json_object_set(o, n->map_keys[x], (json_t *)kv);
			}
			value_add(&m, o);
			json_decref(o);
		} else {
			value_add(&m, e);
		}
		if (at_array) {
			field_error_add(errs, "FieldValueDuplicate", buf_cstr(path), "%s", buf_cstr(&m));
			buf_release(&m);
			break;
		}
		size_t len = path_push_index(path, i);
		field_error_add(errs, "FieldValueDuplicate", buf_cstr(path), "%s", buf_cstr(&m));
		path_cut(path, len);
		buf_release(&m);
	}
	for (i = 0; i < count; i++)
		free(k[i].key);
	free(k);
	free(dup);
}

static void check_array(const struct snode *n, const json_t *v, struct buf *path, struct field_errors *errs)
{
	long long size = (long long)json_array_size(v);
	if (n->max_items >= 0 && size > n->max_items)
		field_error_add(errs, "FieldValueTooMany", buf_cstr(path),
				"Too many: %lld: must have at most %lld items", size, n->max_items);
	if (n->min_items >= 0 && size < n->min_items)
		invalid(errs, path, v, "should have at least %lld items", n->min_items);
	if (n->list_type == SL_SET)
		check_duplicates(n, v, path, false, false, errs);
	else if (n->list_type == SL_MAP)
		check_duplicates(n, v, path, true, false, errs);
	else if (n->unique_items)
		check_duplicates(n, v, path, false, true, errs);
	if (!n->items)
		return;
	size_t i;
	const json_t *e;
	json_array_foreach(v, i, e) {
		size_t len = path_push_index(path, i);
		snode_validate(n->items, e, path, errs);
		path_cut(path, len);
	}
}

/* metadata of the root or of an embedded resource: the server validates it; only the schema's
 * restrictions on name and generateName apply. */
static void check_metadata(const struct snode *n, const json_t *v, struct buf *path, struct field_errors *errs)
{
	if (!n || !json_is_object(v))
		return;
	for (size_t i = 0; i < n->nprops; i++) {
		const json_t *m = json_object_get(v, n->props[i].name);
		if (!m)
			continue;
		size_t len = path_push_key(path, n->props[i].name);
		snode_validate(n->props[i].node, m, path, errs);
		path_cut(path, len);
	}
}

static void check_object(const struct snode *n, const json_t *v, struct buf *path, struct field_errors *errs)
{
	bool resource = n->is_root || n->embedded;
	long long size = (long long)json_object_size(v);
	if (n->max_props >= 0 && size > n->max_props)
		field_error_add(errs, "FieldValueTooMany", buf_cstr(path),
				"Too many: %lld: must have at most %lld properties", size, n->max_props);
	if (n->min_props >= 0 && size < n->min_props)
		invalid(errs, path, v, "should have at least %lld properties", n->min_props);
	for (size_t i = 0; i < n->nrequired; i++) {
		if (json_object_get(v, n->required[i]))
			continue;
		size_t len = path_push_key(path, n->required[i]);
		field_error_required(errs, buf_cstr(path));
		path_cut(path, len);
	}
	if (n->embedded) {
		static const char *const must[] = { "apiVersion", "kind" };
		for (size_t i = 0; i < 2; i++) {
			const char *s = json_string_value(json_object_get(v, must[i]));
			if (s && *s)
				continue;
			size_t len = path_push_key(path, must[i]);
			field_error_required(errs, buf_cstr(path));
			path_cut(path, len);
		}
		const json_t *md = json_object_get(v, "metadata");
		if (md && !json_is_object(md)) {
			size_t len = path_push_key(path, "metadata");
			type_invalid(errs, path, md, "object", false);
			path_cut(path, len);
		}
	}
	const char *key;
	const json_t *m;
	json_object_foreach((json_t *)v, key, m) {
		size_t len = path_push_key(path, key);
		const struct snode *child = snode_prop(n, key);
		if (resource && !strcmp(key, "metadata"))
			check_metadata(child, m, path, errs);
		else if (child)
			snode_validate(child, m, path, errs);
		else if (n->additional_false && !(resource && (!strcmp(key, "apiVersion") || !strcmp(key, "kind"))))
			field_error_add(errs, "FieldValueForbidden", buf_cstr(path),
					"Forbidden: %s in body is a forbidden property", buf_cstr(path));
		path_cut(path, len);
	}
}

/* Whether v passes sub (value validations of allOf/anyOf/oneOf/not). */
static bool passes(const struct snode *sub, const json_t *v, struct buf *path)
{
	struct field_errors tmp = { NULL };
	snode_validate(sub, v, path, &tmp);
	bool ok = !field_errors_any(&tmp);
	field_errors_release(&tmp);
	return ok;
}

static void check_junctors(const struct snode *n, const json_t *v, struct buf *path, struct field_errors *errs)
{
	for (size_t i = 0; i < n->nall_of; i++)
		snode_validate(n->all_of[i], v, path, errs);
	if (n->nany_of) {
		bool any = false;
		for (size_t i = 0; i < n->nany_of && !any; i++)
			any = passes(n->any_of[i], v, path);
		if (!any)
			invalid(errs, path, v, "must validate at least one schema (anyOf)");
	}
	if (n->none_of) {
		size_t ok = 0;
		for (size_t i = 0; i < n->none_of; i++)
			ok += passes(n->one_of[i], v, path);
		if (ok != 1)
			invalid(errs, path, v, "must validate one and only one schema (oneOf)");
	}
	if (n->not_ && passes(n->not_, v, path))
		invalid(errs, path, v, "must not validate the schema (not)");
}

void snode_validate(const struct snode *n, const json_t *v, struct buf *path, struct field_errors *errs)
{
	if (!n || !v)
		return;
	const char *want = n->int_or_string ? "integer-or-string" : type_names[n->type];
	if (json_is_null(v)) {
		if (n->nullable)
			return;
		if (n->type != ST_ANY || n->int_or_string) {
			type_invalid(errs, path, v, want, false);
			return;
		}
	} else if (!type_ok(n, v)) {
		type_invalid(errs, path, v, want, false);
		return;
	}
	if (n->enum_vals)
		check_enum(n, v, path, errs);
	if (json_is_string(v))
		check_string(n, v, path, errs);
	else if (json_is_number(v))
		check_number(n, v, path, errs);
	else if (json_is_array(v))
		check_array(n, v, path, errs);
	else if (json_is_object(v))
		check_object(n, v, path, errs);
	check_junctors(n, v, path, errs);
}

void crd_schema_validate(const struct crd_schema *s, const json_t *obj, struct field_errors *errs)
{
	struct buf path = BUF_INIT;
	if (s && s->root)
		snode_validate(s->root, obj, &path, errs);
	buf_release(&path);
}
