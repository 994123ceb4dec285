/* LimitRanges ({spec:{limits:[{type, default, defaultRequest, min, max, maxLimitRequestRatio}]}})
 * and what admission does with them to a pod (limitrange_admit_pod, ursa/quota.h). Items of
 * type Container default and bound each container; Pod and PersistentVolumeClaim items are
 * validated and stored but not enforced. */
#include <stdlib.h>
#include <string.h>
#include "kinds/kinds_common.h"
#include "ursa/jsonutil.h"
#include "ursa/quota.h"
#include "ursa/xalloc.h"

static const char *const lr_maps[] = { "default", "defaultRequest", "min", "max", "maxLimitRequestRatio" };

/* SetDefaults_LimitRangeItem for type Container: default limits from max, default requests
 * from the default limits, then from min. */
static void copy_absent(json_t *dst, const json_t *src)
{
	const char *k;
	json_t *v;
	json_object_foreach((json_t *)src, k, v)
		if (!json_object_get(dst, k))
			json_object_set(dst, k, v);
}

static void lr_defaults(json_t *obj)
{
	size_t i;
	json_t *item;
	json_array_foreach(json_path(obj, "spec.limits"), i, item) {
		if (!json_is_object(item) || !json_str(item, "type") || strcmp(json_str(item, "type"), "Container") != 0)
			continue;
		const json_t *max = json_object_get(item, "max"), *min = json_object_get(item, "min");
		if ((max && !json_is_object(max)) || (min && !json_is_object(min)))
			continue;
		json_t *def = json_object_get(item, "default"), *dreq = json_object_get(item, "defaultRequest");
		if ((def && !json_is_null(def) && !json_is_object(def)) ||
		    (dreq && !json_is_null(dreq) && !json_is_object(dreq)))
			continue;
		if (json_object_size(max))
			copy_absent(default_obj(item, "default"), max);
		def = json_object_get(item, "default");
		if (json_object_size(def))
			copy_absent(default_obj(item, "defaultRequest"), def);
		if (json_object_size(min))
			copy_absent(default_obj(item, "defaultRequest"), min);
	}
}

static bool milli_of(const json_t *map, const char *k, long long *ret)
{
	const json_t *v = json_object_get(map, k);
	return v && quota_value_milli(v, ret, NULL) == 0;
}

/* a[k] <= b[k] for the keys both have; else a cause at field. */
static void check_le(const json_t *item, const char *a, const char *b, const char *field, const char *what,
		     struct field_errors *errs)
{
	const json_t *ma = json_object_get(item, a), *mb = json_object_get(item, b);
	const char *k;
	const json_t *v;
	json_object_foreach((json_t *)ma, k, v) {
		long long x, y;
		if (milli_of(ma, k, &x) && milli_of(mb, k, &y) && x > y) {
			char *f = xasprintf("%s.%s[%s]", field, a, k);
			field_error_invalid(errs, f, json_string_value(v) ? json_string_value(v) : "", "%s", what);
			free(f);
		}
	}
}

static void lr_validate(const json_t *obj, const json_t *old, struct field_errors *errs)
{
	(void)old;
	const json_t *limits = json_path(obj, "spec.limits");
	if (!json_is_array(limits)) {
		if (!limits || json_is_null(limits))
			field_error_required(errs, "spec.limits");
		else
			field_error_type(errs, "spec.limits", "an array");
		return;
	}
	static const char *const types[] = { "Container", "PersistentVolumeClaim", "Pod", NULL };
	size_t i;
	const json_t *item;
	json_array_foreach(limits, i, item) {
		char field[48];
		snprintf(field, sizeof(field), "spec.limits[%zu]", i);
		if (!json_is_object(item)) {
			field_error_type(errs, field, "an object");
			continue;
		}
		const char *type = json_str(item, "type");
		char *tf = xasprintf("%s.type", field);
		if (!type || !*type)
			field_error_required(errs, tf);
		else if (strcmp(type, "Container") && strcmp(type, "Pod") && strcmp(type, "PersistentVolumeClaim"))
			field_error_not_supported(errs, tf, type, types);
		free(tf);
		for (size_t m = 0; m < ARRAY_SIZE(lr_maps); m++) {
			const json_t *map = json_object_get(item, lr_maps[m]);
			if (!map || json_is_null(map))
				continue;
			char *mf = xasprintf("%s.%s", field, lr_maps[m]);
			if (!json_is_object(map)) {
				field_error_type(errs, mf, "an object");
			} else {
				const char *k;
				const json_t *v;
				json_object_foreach((json_t *)map, k, v) {
					long long x;
					char *kf = xasprintf("%s[%s]", mf, k);
					if (quota_value_milli(v, &x, NULL) < 0)
						field_error_invalid(errs, kf, json_string_value(v) ? json_string_value(v) : "",
								    "must be a quantity");
					else if (x < 0)
						field_error_invalid(errs, kf, json_string_value(v) ? json_string_value(v) : "",
								    "must be greater than or equal to 0");
					free(kf);
				}
			}
			free(mf);
		}
		if (type && strcmp(type, "Container") != 0 &&
		    (json_object_get(item, "default") || json_object_get(item, "defaultRequest"))) {
			char *f = xasprintf("%s.default", field);
			field_error_forbidden(errs, f, "may not be specified when `type` is '%s'", type);
			free(f);
		}
		check_le(item, "min", "max", field, "min value must be less than or equal to max value", errs);
		check_le(item, "min", "defaultRequest", field, "min value must be less than or equal to default request",
			 errs);
		check_le(item, "defaultRequest", "default", field,
			 "default request value must be less than or equal to default limit value", errs);
		check_le(item, "default", "max", field, "default value must be less than or equal to max value", errs);
	}
}

/* ---- admission of a pod ---- */

static int cmp_strp(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The keys of map, sorted (new array of borrowed strings; *ret_n entries). */
static const char **sorted_keys(const json_t *map, size_t *ret_n)
{
	size_t n = 0;
	const char **keys = xcalloc(json_object_size(map) + 1, sizeof(*keys));
	const char *k;
	const json_t *v;
	json_object_foreach((json_t *)map, k, v)
		keys[n++] = k;
	qsort(keys, n, sizeof(*keys), cmp_strp);
	*ret_n = n;
	return keys;
}

static void add_quantity(struct buf *b, const json_t *v)
{
	long long m = 0;
	bool bin = false;
	if (quota_value_milli(v, &m, &bin) == 0)
		quantity_format_milli(m, bin, b);
}

static void add_error(struct buf *errs, size_t *n, const struct buf *msg)
{
	if (*n)
		buf_adds(errs, ", ");
	buf_add(errs, msg->ptr, msg->len);
	(*n)++;
}

static void check_container(const json_t *item, const json_t *c, struct buf *errs, size_t *nerr)
{
	const json_t *res = json_object_get(c, "resources");
	const json_t *req = json_object_get(res, "requests"), *lim = json_object_get(res, "limits");
	for (int pass = 0; pass < 2; pass++) {
		bool is_min = pass == 0;
		const json_t *bound = json_object_get(item, is_min ? "min" : "max");
		size_t n;
		const char **keys = sorted_keys(bound, &n);
		for (size_t i = 0; i < n; i++) {
			const json_t *enf = json_object_get(bound, keys[i]);
			const json_t *rv = json_object_get(req, keys[i]), *lv = json_object_get(lim, keys[i]);
			long long e, r = 0, l = 0;
			if (quota_value_milli(enf, &e, NULL) < 0)
				continue;
			bool has_r = rv && quota_value_milli(rv, &r, NULL) == 0;
			bool has_l = lv && quota_value_milli(lv, &l, NULL) == 0;
			struct buf m = BUF_INIT;
			buf_addf(&m, "%s %s usage per Container is ", is_min ? "minimum" : "maximum", keys[i]);
			add_quantity(&m, enf);
			const char *what = NULL;
			const json_t *shown = NULL;
			if (is_min) {
				if (!has_r)
					what = ".  No request is specified";
				else if (r < e)
					what = ", but request is ", shown = rv;
				else if (has_l && l < e)
					what = ", but limit is ", shown = lv;
			} else {
				if (!has_l)
					what = ".  No limit is specified";
				else if (l > e)
					what = ", but limit is ", shown = lv;
				else if (has_r && r > e)
					what = ", but request is ", shown = rv;
			}
			if (what) {
				buf_adds(&m, what);
				if (shown)
					add_quantity(&m, shown);
				add_error(errs, nerr, &m);
			}
			buf_release(&m);
		}
		free(keys);
	}
}

int limitrange_admit_pod(const json_t *lr_spec, json_t *pod, struct buf *err)
{
	json_t *spec = json_object_get(pod, "spec");
	static const char *const lists[] = { "initContainers", "containers" };
	struct buf msgs = BUF_INIT;
	size_t nerr = 0;
	size_t i;
	const json_t *item;
	json_array_foreach(json_object_get(lr_spec, "limits"), i, item) {
		const char *type = json_str(item, "type");
		if (!type || strcmp(type, "Container") != 0)
			continue;
		const json_t *def = json_object_get(item, "default"), *dreq = json_object_get(item, "defaultRequest");
		for (size_t l = 0; l < ARRAY_SIZE(lists); l++) {
			size_t j;
			json_t *c;
			json_array_foreach(json_object_get(spec, lists[l]), j, c) {
				if (!json_is_object(c))
					continue;
				if (json_object_size(def) || json_object_size(dreq)) {
					json_t *res = default_obj(c, "resources");
					if (!json_is_object(res))
						continue;
					if (json_object_size(def))
						copy_absent(default_obj(res, "limits"), def);
					if (json_object_size(dreq))
						copy_absent(default_obj(res, "requests"), dreq);
				}
				check_container(item, c, &msgs, &nerr);
			}
		}
	}
	if (nerr == 0) {
		buf_release(&msgs);
		return 0;
	}
	if (err) {
		if (nerr > 1)
			buf_addch(err, '[');
		buf_add(err, msgs.ptr, msgs.len);
		if (nerr > 1)
			buf_addch(err, ']');
	}
	buf_release(&msgs);
	return -1;
}

/* ---- the strategy ---- */

static void lr_cells(const json_t *obj, time_t now, json_t *cells)
{
	(void)now;
	cell_name(obj, cells);
	cell_str(cells, json_path_str(obj, "metadata.creationTimestamp"));
}

static const struct api_column lr_columns[] = {
	COLUMN_NAME,
	{ "Created At", "string", "", "CreationTimestamp of the LimitRange.", 0 },
};

const struct api_strategy strategy_limitrange = {
	.defaults = lr_defaults,
	.validate = lr_validate,
	.columns = lr_columns,
	.ncolumns = ARRAY_SIZE(lr_columns),
	.cells = lr_cells,
};
