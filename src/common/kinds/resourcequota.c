/* ResourceQuotas ({spec:{hard, scopes}, status:{hard, used}}) and the pure quota helpers of
 * ursa/quota.h: hard keys, scopes, what a pod counts for, quantities in canonical form and the
 * "exceeded quota" message. The API server keeps usage and writes status (apiserver/quota.c). */
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include "kinds/kinds_common.h"
#include "ursa/jsonutil.h"
#include "ursa/kinds.h"
#include "ursa/quota.h"
#include "ursa/xalloc.h"

/* Core-group resources a bare hard key counts (as Kubernetes' standard quota names). */
static const char *const counted_core[] = { "services", "configmaps", "secrets", "serviceaccounts",
					    "persistentvolumeclaims", "resourcequotas", "replicationcontrollers",
					    NULL };

static bool valid_plural(const char *s, size_t n)
{
	if (n == 0 || n > 63)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '-'))
			return false;
	return s[0] != '-' && s[n - 1] != '-';
}

int quota_resource_parse(const char *name, enum qres *ret_kind, const char **ret_plural, size_t *ret_plural_len,
			 const char **ret_group, size_t *ret_group_len)
{
	static const struct {
		const char *name;
		enum qres k;
	} pod_keys[] = {
		{ "pods", QR_PODS },		 { "count/pods", QR_PODS },	   { "cpu", QR_REQ_CPU },
		{ "requests.cpu", QR_REQ_CPU },	 { "memory", QR_REQ_MEM },	   { "requests.memory", QR_REQ_MEM },
		{ "limits.cpu", QR_LIM_CPU },	 { "limits.memory", QR_LIM_MEM },
	};
	for (size_t i = 0; i < ARRAY_SIZE(pod_keys); i++)
		if (strcmp(name, pod_keys[i].name) == 0) {
			*ret_kind = pod_keys[i].k;
			return 0;
		}
	*ret_kind = QR_COUNT;
	*ret_group = "";
	*ret_group_len = 0;
	for (size_t i = 0; counted_core[i]; i++)
		if (strcmp(name, counted_core[i]) == 0) {
			*ret_plural = name;
			*ret_plural_len = strlen(name);
			return 0;
		}
	if (strncmp(name, "count/", 6) != 0)
		return -1;
	const char *p = name + 6, *dot = strchr(p, '.');
	size_t plen = dot ? (size_t)(dot - p) : strlen(p);
	if (!valid_plural(p, plen) || (dot && !valid_dns1123_subdomain(dot + 1)))
		return -1;
	*ret_plural = p;
	*ret_plural_len = plen;
	if (dot) {
		*ret_group = dot + 1;
		*ret_group_len = strlen(dot + 1);
	}
	return 0;
}

int quota_scopes_parse(const json_t *scopes, struct quota_scopes *ret)
{
	ret->need = ret->forbid = 0;
	if (!scopes || json_is_null(scopes))
		return 0;
	if (!json_is_array(scopes))
		return -1;
	size_t i;
	const json_t *v;
	json_array_foreach(scopes, i, v) {
		const char *s = json_string_value(v);
		if (!s)
			return -1;
		if (strcmp(s, "Terminating") == 0)
			ret->need |= QCLASS_TERMINATING;
		else if (strcmp(s, "NotTerminating") == 0)
			ret->forbid |= QCLASS_TERMINATING;
		else if (strcmp(s, "BestEffort") == 0)
			ret->need |= QCLASS_BESTEFFORT;
		else if (strcmp(s, "NotBestEffort") == 0)
			ret->forbid |= QCLASS_BESTEFFORT;
		else
			return -1;
	}
	return 0;
}

int quota_value_milli(const json_t *v, long long *ret_milli, bool *ret_binary)
{
	char tmp[64];
	const char *s = json_string_value(v);
	if (!s && json_is_integer(v)) {
		snprintf(tmp, sizeof(tmp), "%lld", (long long)json_integer_value(v));
		s = tmp;
	} else if (!s && json_is_real(v)) {
		snprintf(tmp, sizeof(tmp), "%.17g", json_real_value(v));
		s = tmp;
	}
	if (!s || quantity_parse_milli(s, ret_milli) < 0)
		return -1;
	if (ret_binary) {
		size_t n = strlen(s);
		*ret_binary = n >= 2 && s[n - 1] == 'i';
	}
	return 0;
}

bool quota_pod_terminal(const json_t *pod)
{
	const char *phase = json_path_str(pod, "status.phase");
	return phase && (strcmp(phase, "Succeeded") == 0 || strcmp(phase, "Failed") == 0);
}

/* Adds one container's requests and limits to sum (or keeps the larger in it, for init
 * containers) and the keys it leaves unset to *missing. */
static int container_usage(const json_t *c, long long *sum, bool is_max, unsigned *missing)
{
	static const struct {
		const char *map, *res;
		enum qres k;
	} keys[] = {
		{ "requests", "cpu", QR_REQ_CPU },
		{ "requests", "memory", QR_REQ_MEM },
		{ "limits", "cpu", QR_LIM_CPU },
		{ "limits", "memory", QR_LIM_MEM },
	};
	const json_t *res = json_object_get(c, "resources");
	for (size_t i = 0; i < ARRAY_SIZE(keys); i++) {
		const json_t *v = json_object_get(json_object_get(res, keys[i].map), keys[i].res);
		long long m = 0;
		if (!v || json_is_null(v)) {
			*missing |= 1u << keys[i].k;
			continue;
		}
		if (quota_value_milli(v, &m, NULL) < 0 || m < 0)
			return -1;
		long long *dst = &sum[keys[i].k];
		if (is_max)
			*dst = m > *dst ? m : *dst;
		else
			*dst = m > LLONG_MAX - *dst ? LLONG_MAX : *dst + m;
	}
	return 0;
}

int quota_pod_usage(const json_t *pod, struct quota_pod *ret)
{
	memset(ret, 0, sizeof(*ret));
	const json_t *spec = json_object_get(pod, "spec");
	long long init[QR_NPOD] = { 0 };
	size_t i;
	const json_t *c;
	json_array_foreach(json_object_get(spec, "containers"), i, c)
		if (container_usage(c, ret->v, false, &ret->missing) < 0)
			return -1;
	json_array_foreach(json_object_get(spec, "initContainers"), i, c)
		if (container_usage(c, init, true, &ret->missing) < 0)
			return -1;
	for (int k = QR_REQ_CPU; k < QR_NPOD; k++)
		if (init[k] > ret->v[k])
			ret->v[k] = init[k];
	ret->v[QR_PODS] = quota_pod_terminal(pod) ? 0 : 1;
	const json_t *ads = json_object_get(spec, "activeDeadlineSeconds");
	if (ads && json_is_integer(ads))
		ret->cls |= QCLASS_TERMINATING;
	if (strcmp(pod_qos_class(pod), "BestEffort") == 0)
		ret->cls |= QCLASS_BESTEFFORT;
	return 0;
}

void quota_hard_validate(const json_t *hard, const char *field, bool scoped, struct field_errors *errs)
{
	if (!hard || json_is_null(hard))
		return;
	if (!json_is_object(hard)) {
		field_error_type(errs, field, "an object");
		return;
	}
	const char *k;
	const json_t *v;
	json_object_foreach((json_t *)hard, k, v) {
		char *f = xasprintf("%s[%s]", field, k);
		enum qres kind;
		const char *p, *g;
		size_t pl, gl;
		long long m;
		if (quota_resource_parse(k, &kind, &p, &pl, &g, &gl) < 0) {
			field_error_invalid(errs, f, k,
					    "must be a standard resource for quota (pods, services, configmaps, secrets, "
					    "serviceaccounts, persistentvolumeclaims, resourcequotas, "
					    "replicationcontrollers, cpu, memory, requests.cpu, requests.memory, "
					    "limits.cpu, limits.memory) or count/<resource>[.<group>]");
		} else if (scoped && kind == QR_COUNT) {
			field_error_invalid(errs, f, k, "unsupported scope applied to resource");
		}
		if (quota_value_milli(v, &m, NULL) < 0) {
			if (json_is_string(v))
				field_error_invalid(errs, f, json_string_value(v),
						    "quantities must match the regular expression "
						    "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'");
			else
				field_error_type(errs, f, "a quantity (string)");
		} else if (m < 0) {
			field_error_invalid(errs, f, json_string_value(v) ? json_string_value(v) : "",
					    "must be greater than or equal to 0");
		} else if (kind != QR_PODS && !quota_resource_is_quantity(kind) && m % 1000 != 0) {
			field_error_invalid(errs, f, json_string_value(v) ? json_string_value(v) : "",
					    "must be an integer");
		}
		free(f);
	}
}

void quantity_format_milli(long long milli, bool binary, struct buf *out)
{
	if (milli < 0) {
		buf_addch(out, '-');
		milli = milli == LLONG_MIN ? LLONG_MAX : -milli;
	}
	if (milli % 1000) {
		buf_addf(out, "%lldm", milli);
		return;
	}
	long long v = milli / 1000;
	if (v == 0) {
		buf_adds(out, "0");
		return;
	}
	if (binary && v % 1024 == 0) {
		static const char *const bsfx[] = { "", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei" };
		int e = 0;
		while (e < 6 && v % 1024 == 0) {
			v /= 1024;
			e++;
		}
		buf_addf(out, "%lld%s", v, bsfx[e]);
		return;
	}
	static const char *const dsfx[] = { "", "k", "M", "G", "T", "P", "E" };
	int e = 0;
	while (e < 6 && v % 1000 == 0) {
		v /= 1000;
		e++;
	}
	buf_addf(out, "%lld%s", v, dsfx[e]);
}

static int item_cmp(const void *a, const void *b)
{
	return strcmp(((const struct quota_item *)a)->name, ((const struct quota_item *)b)->name);
}

static void items_list(const struct quota_item *items, size_t n, int which, struct buf *out)
{
	for (size_t i = 0; i < n; i++) {
		long long v = which == 0 ? items[i].requested : which == 1 ? items[i].used : items[i].hard;
		buf_addf(out, "%s%s=", i ? "," : "", items[i].name);
		if (items[i].quantity)
			quantity_format_milli(v, items[i].binary, out);
		else
			buf_addf(out, "%lld", v);
	}
}

void quota_exceeded_message(const char *what, const char *quota, struct quota_item *items, size_t n, struct buf *out)
{
	qsort(items, n, sizeof(*items), item_cmp);
	buf_addf(out, "%s: %s, requested: ", what, quota);
	items_list(items, n, 0, out);
	buf_adds(out, ", used: ");
	items_list(items, n, 1, out);
	buf_adds(out, ", limited: ");
	items_list(items, n, 2, out);
}

/* ---- the strategy ---- */

static void rq_prepare_create(json_t *obj)
{
	const json_t *hard = json_path(obj, "spec.hard");
	json_t *st = json_object();
	if (json_is_object(hard))
		json_object_set_new(st, "hard", json_deep_copy(hard));
	json_object_set_new(obj, "status", st);
}

static void rq_validate(const json_t *obj, const json_t *old, struct field_errors *errs)
{
	(void)old;
	const json_t *spec = json_object_get(obj, "spec");
	if (spec && !json_is_null(spec) && !json_is_object(spec)) {
		field_error_type(errs, "spec", "an object");
		return;
	}
	struct quota_scopes sc;
	const json_t *scopes = json_object_get(spec, "scopes");
	if (quota_scopes_parse(scopes, &sc) < 0) {
		static const char *const known[] = { "BestEffort", "NotBestEffort", "NotTerminating", "Terminating", NULL };
		if (!json_is_array(scopes)) {
			field_error_type(errs, "spec.scopes", "an array");
		} else {
			size_t i;
			const json_t *v;
			json_array_foreach(scopes, i, v) {
				struct quota_scopes one;
				json_t *a = json_pack("[O]", v);
				if (quota_scopes_parse(a, &one) < 0) {
					char f[48];
					snprintf(f, sizeof(f), "spec.scopes[%zu]", i);
					field_error_not_supported(errs, f, json_string_value(v) ? json_string_value(v) : "",
								  known);
				}
				json_decref(a);
			}
		}
	} else if ((sc.need & sc.forbid) != 0) {
		field_error_invalid_json(errs, "spec.scopes", scopes, "conflicting scopes");
	}
	const json_t *sel = json_object_get(spec, "scopeSelector");
	if (sel && !json_is_null(sel))
		field_error_forbidden(errs, "spec.scopeSelector", "not supported by this server; use spec.scopes");
	quota_hard_validate(json_object_get(spec, "hard"), "spec.hard", quota_scopes_any(sc), errs);
	const json_t *st = json_object_get(obj, "status");
	if (st && !json_is_null(st) && !json_is_object(st))
		field_error_type(errs, "status", "an object");
}

static int cmp_strp(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* REQUEST or LIMIT: "pods: 1/3, requests.cpu: 100m/1" over status.hard's keys (sorted). */
static void rq_cell(const json_t *obj, bool limits, json_t *cells)
{
	const json_t *hard = json_path(obj, "status.hard"), *used = json_path(obj, "status.used");
	size_t n = json_object_size(hard), k = 0;
	const char **keys = xcalloc(n ? n : 1, sizeof(*keys));
	const char *key;
	const json_t *v;
	json_object_foreach((json_t *)hard, key, v)
		keys[k++] = key;
	qsort(keys, k, sizeof(*keys), cmp_strp);
	struct buf b = BUF_INIT;
	bool first = true;
	for (size_t i = 0; i < k; i++) {
		if ((strncmp(keys[i], "limits", 6) == 0) != limits)
			continue;
		const char *u = json_str(used, keys[i]), *h = json_str(hard, keys[i]);
		buf_addf(&b, "%s%s: %s/%s", first ? "" : ", ", keys[i], u ? u : "0", h ? h : "");
		first = false;
	}
	cell_str(cells, buf_cstr(&b));
	buf_release(&b);
	free(keys);
}

static void rq_cells(const json_t *obj, time_t now, json_t *cells)
{
	cell_name(obj, cells);
	cell_age(obj, now, cells);
	rq_cell(obj, false, cells);
	rq_cell(obj, true, cells);
}

static const struct api_column rq_columns[] = {
	COLUMN_NAME,
	COLUMN_AGE,
	{ "Request", "string", "", "Used and hard requests and object counts (status.used/status.hard).", 0 },
	{ "Limit", "string", "", "Used and hard limits (status.used/status.hard).", 0 },
};

const struct api_strategy strategy_resourcequota = {
	.prepare_create = rq_prepare_create,
	.validate = rq_validate,
	.columns = rq_columns,
	.ncolumns = ARRAY_SIZE(rq_columns),
	.cells = rq_cells,
};
