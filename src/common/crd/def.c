/* A CustomResourceDefinition read into struct crd_def (ursa/crd.h), validated as Kubernetes'
 * apiextensions validation does: the same field paths, reasons and, mostly, wording. Parsing and
 * validation are one pass so that what the servers use is exactly what was checked. */
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include "api/validation.h"
#include "ursa/crd.h"
#include "ursa/xalloc.h"

/* Caps on the lists of a CRD (Kubernetes has none but the request size; these keep the duplicate
 * checks quadratic in something small). Selectable fields: Kubernetes' own limit. */
#define VERSIONS_MAX 100
#define NAMES_MAX 100
#define COLUMNS_MAX 100
#define SELECTABLE_MAX 8
#define DEPRECATION_WARNING_MAX 256

static const char *const scopes[] = { "Cluster", "Namespaced", NULL };
static const char *const column_types[] = { "integer", "number", "string", "boolean", "date", NULL };
static const char *const column_formats[] = { "int32", "int64", "float", "double", "byte", "date", "date-time",
					      "password", NULL };
static const char *const conversion_strategies[] = { "None", NULL };

/* Groups the Ursa servers' built-in kinds are served under (src/tenant-partition/resources.c,
 * src/resource-manager/resources.c, the gateway's tenants), and core groups they may grow. */
static const char *const reserved_groups[] = {
	"", "apps", "batch", "autoscaling", "policy", "extensions", "arktos.futurewei.com", "ursa.io", NULL,
};

static bool has_suffix(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);
	return n >= m && !strcmp(s + n - m, suffix);
}

static bool k8s_group(const char *group)
{
	return !strcmp(group, "k8s.io") || !strcmp(group, "kubernetes.io") || has_suffix(group, ".k8s.io") ||
	       has_suffix(group, ".kubernetes.io");
}

bool crd_group_reserved(const char *group)
{
	if (!group)
		return true;
	for (size_t i = 0; reserved_groups[i]; i++)
		if (!strcmp(group, reserved_groups[i]))
			return true;
	return k8s_group(group);
}


/* ---- typed members: absent and null are absent; another type is a cause at field ---- */

static const json_t *member(const json_t *obj, const char *key)
{
	const json_t *v = json_object_get(obj, key);
	return json_is_null(v) ? NULL : v;
}

static const char *get_str(const json_t *obj, const char *key, const char *field, struct field_errors *e)
{
	const json_t *v = member(obj, key);
	if (!v)
		return NULL;
	if (!json_is_string(v)) {
		field_error_type(e, field, "a string");
		return NULL;
	}
	if (strlen(json_string_value(v)) != json_string_length(v)) {
		field_error_add(e, "FieldValueInvalid", field, "Invalid value: must not contain NUL characters");
		return NULL;
	}
	return json_string_value(v);
}

static bool get_bool(const json_t *obj, const char *key, const char *field, struct field_errors *e)
{
	const json_t *v = member(obj, key);
	if (v && !json_is_boolean(v))
		field_error_type(e, field, "a boolean");
	return json_is_true(v);
}

static const json_t *get_typed(const json_t *obj, const char *key, const char *field, bool array,
			       struct field_errors *e)
{
	const json_t *v = member(obj, key);
	if (v && (array ? !json_is_array(v) : !json_is_object(v))) {
		field_error_type(e, field, array ? "an array" : "an object");
		return NULL;
	}
	return v;
}

static const json_t *get_obj(const json_t *obj, const char *key, const char *field, struct field_errors *e)
{
	return get_typed(obj, key, field, false, e);
}

/* The array obj[key] (NULL when absent or wrong) and its length, refused past max. */
static const json_t *get_arr(const json_t *obj, const char *key, const char *field, size_t max, size_t *ret_n,
			     struct field_errors *e)
{
	const json_t *v = get_typed(obj, key, field, true, e);
	*ret_n = 0;
	if (!v)
		return NULL;
	if (json_array_size(v) > max) {
		field_error_add(e, "FieldValueTooMany", field, "Too many: %zu: must have at most %zu items",
				json_array_size(v), max);
		return NULL;
	}
	*ret_n = json_array_size(v);
	return v;
}

static char *dup_or(const char *s, const char *dflt)
{
	return s ? xstrdup(s) : dflt ? xstrdup(dflt) : NULL;
}

static char *lowercase(const char *s)
{
	char *r = xstrdup(s);
	for (char *p = r; *p; p++)
		if (*p >= 'A' && *p <= 'Z')
			*p = (char)(*p - 'A' + 'a');
	return r;
}

/* A name Kubernetes checks as a DNS-1035 label (plural, singular, short names, categories,
 * version names); mixed case when lower (kind, listKind) with upstream's wording. */
static bool check_label(const char *v, const char *field, bool mixed_case, struct field_errors *e)
{
	char *low = mixed_case ? lowercase(v) : NULL;
	const char *why = dns1035_label_error(low ? low : v);
	if (why)
		field_error_invalid(e, field, v, "%s%s",
				    mixed_case ? "may have mixed case, but should otherwise match: " : "", why);
	free(low);
	return why == NULL;
}

/* ---- spec.names ---- */

/* shortNames or categories: DNS-1035 labels, no duplicates; shortNames may not repeat the plural
 * or singular name (kubectl could not tell them apart). */
static char **parse_name_list(const json_t *names, const char *key, const struct crd_def *d, size_t *ret_n,
			      struct buf *fb, struct field_errors *e)
{
	size_t n;
	const json_t *arr = get_arr(names, key, buf_setf(fb, "spec.names.%s", key), NAMES_MAX, &n, e);
	char **out = xcalloc(n + 1, sizeof(*out));
	bool short_names = !strcmp(key, "shortNames");
	*ret_n = 0;
	for (size_t i = 0; arr && i < n; i++) {
		const json_t *v = json_array_get(arr, i);
		const char *f = buf_setf(fb, "spec.names.%s[%zu]", key, i);
		if (!json_is_string(v) || strlen(json_string_value(v)) != json_string_length(v)) {
			field_error_type(e, f, "a string");
			continue;
		}
		const char *s = json_string_value(v);
		if (!check_label(s, f, false, e))
			continue;
		bool dup = false;
		for (size_t j = 0; j < *ret_n && !dup; j++)
			dup = !strcmp(out[j], s);
		if (dup) {
			field_error_duplicate(e, f, s);
			continue;
		}
		if (short_names && (!strcmp(s, d->plural) || !strcmp(s, d->singular))) {
			field_error_invalid(e, f, s, "may not be the same as the plural or singular name");
			continue;
		}
		out[(*ret_n)++] = xstrdup(s);
	}
	return out;
}

static void parse_names(const json_t *names, struct crd_def *d, struct buf *fb, struct field_errors *e)
{
	const char *plural = get_str(names, "plural", "spec.names.plural", e);
	const char *singular = get_str(names, "singular", "spec.names.singular", e);
	const char *kind = get_str(names, "kind", "spec.names.kind", e);
	const char *list_kind = get_str(names, "listKind", "spec.names.listKind", e);

	if (!plural || !*plural)
		field_error_required(e, "spec.names.plural");
	else
		check_label(plural, "spec.names.plural", false, e);
	if (!kind || !*kind)
		field_error_required(e, "spec.names.kind");
	else
		check_label(kind, "spec.names.kind", true, e);
	if (singular && *singular)
		check_label(singular, "spec.names.singular", false, e);
	if (list_kind && *list_kind) {
		check_label(list_kind, "spec.names.listKind", true, e);
		if (kind && !strcmp(kind, list_kind))
			field_error_invalid(e, "spec.names.listKind", list_kind,
					    "kind and listKind may not be the same");
	}

	d->plural = dup_or(plural, "");
	d->kind = dup_or(kind, "");
	d->singular = singular && *singular ? xstrdup(singular) : lowercase(d->kind);
	d->list_kind = list_kind && *list_kind ? xstrdup(list_kind) : xasprintf("%sList", d->kind);
	d->short_names = parse_name_list(names, "shortNames", d, &d->nshort, fb, e);
	d->categories = parse_name_list(names, "categories", d, &d->ncategories, fb, e);
}

/* ---- spec.versions[i] ---- */

static void parse_columns(const json_t *v, const char *pre, struct crd_version *out, struct buf *fb,
			  struct field_errors *e)
{
	size_t n;
	const json_t *cols = get_arr(v, "additionalPrinterColumns", buf_setf(fb, "%s.additionalPrinterColumns", pre),
				     COLUMNS_MAX, &n, e);
	out->columns = xcalloc(n + 1, sizeof(*out->columns));
	for (size_t j = 0; cols && j < n; j++) {
		const json_t *c = json_array_get(cols, j);
		char *pc = xasprintf("%s.additionalPrinterColumns[%zu]", pre, j);
		struct crd_column *col = &out->columns[out->ncolumns++];
		if (!json_is_object(c)) {
			field_error_type(e, pc, "an object");
			free(pc);
			continue;
		}
		const char *name = get_str(c, "name", buf_setf(fb, "%s.name", pc), e);
		const char *type = get_str(c, "type", buf_setf(fb, "%s.type", pc), e);
		const char *format = get_str(c, "format", buf_setf(fb, "%s.format", pc), e);
		const char *desc = get_str(c, "description", buf_setf(fb, "%s.description", pc), e);
		const char *path = get_str(c, "jsonPath", buf_setf(fb, "%s.jsonPath", pc), e);
		if (!name || !*name)
			field_error_required(e, buf_setf(fb, "%s.name", pc));
		if (!type || !*type)
			field_error_required(e, buf_setf(fb, "%s.type", pc));
		bool type_ok = false, format_ok = !format || !*format;
		for (size_t k = 0; type && column_types[k]; k++)
			type_ok |= !strcmp(type, column_types[k]);
		for (size_t k = 0; !format_ok && column_formats[k]; k++)
			format_ok |= !strcmp(format, column_formats[k]);
		if (type && *type && !type_ok)
			field_error_not_supported(e, buf_setf(fb, "%s.type", pc), type, column_types);
		if (!format_ok)
			field_error_not_supported(e, buf_setf(fb, "%s.format", pc), format, column_formats);
		if (!path || !*path)
			field_error_required(e, buf_setf(fb, "%s.jsonPath", pc));
		else if (!crd_jsonpath_valid(path))
			field_error_invalid(e, buf_setf(fb, "%s.jsonPath", pc), path,
					    "must be a simple json path starting with .");
		const json_t *prio = member(c, "priority");
		validate_nonnegative(prio, buf_setf(fb, "%s.priority", pc), e);
		if (json_is_integer(prio) && json_integer_value(prio) > INT_MAX)
			field_error_invalid_int(e, buf_setf(fb, "%s.priority", pc), (long long)json_integer_value(prio),
						"must be less than or equal to %d", INT_MAX);
		col->name = dup_or(name, "");
		col->type = dup_or(type, "");
		col->format = dup_or(format, "");
		col->description = dup_or(desc, "");
		col->json_path = dup_or(path, "");
		json_int_t pv = json_is_integer(prio) ? json_integer_value(prio) : 0;
		col->priority = pv >= 0 && pv <= INT_MAX ? (int)pv : 0;
		free(pc);
	}
}

/* The schema node a dotted path (no leading dot) names, through properties only; NULL when the
 * schema does not describe it. */
static const json_t *schema_at(const json_t *node, const char *path)
{
	const char *p = path;
	while (node && *p) {
		const char *dot = strchr(p, '.');
		size_t len = dot ? (size_t)(dot - p) : strlen(p);
		node = json_object_getn(json_object_get(node, "properties"), p, len);
		p += len + (dot ? 1 : 0);
	}
	return json_is_object(node) ? node : NULL;
}

static bool simple_path(const char *path)
{
	return crd_jsonpath_valid(path) && !strchr(path, '[');
}

static void parse_selectable(const json_t *v, const char *pre, struct crd_version *out, struct buf *fb,
			     struct field_errors *e)
{
	size_t n;
	const json_t *arr = get_arr(v, "selectableFields", buf_setf(fb, "%s.selectableFields", pre), SELECTABLE_MAX, &n, e);
	out->selectable = xcalloc(n + 1, sizeof(*out->selectable));
	for (size_t j = 0; arr && j < n; j++) {
		const json_t *s = json_array_get(arr, j);
		char *f = xasprintf("%s.selectableFields[%zu].jsonPath", pre, j);
		const char *path = json_is_object(s) ? get_str(s, "jsonPath", f, e) : NULL;
		if (!json_is_object(s)) {
			field_error_type(e, buf_setf(fb, "%s.selectableFields[%zu]", pre, j), "an object");
		} else if (!path || !*path) {
			field_error_required(e, f);
		} else if (!simple_path(path)) {
			field_error_invalid(e, f, path, "must be a simple json path starting with .");
		} else {
			bool dup = false;
			for (size_t k = 0; k < out->nselectable && !dup; k++)
				dup = !strcmp(out->selectable[k], path + 1);
			const json_t *node = out->schema ? schema_at(crd_schema_json(out->schema), path + 1) : NULL;
			const char *type = json_string_value(json_object_get(node, "type"));
			if (dup) {
				field_error_duplicate(e, f, path);
			} else if (out->schema && !node) {
				field_error_invalid(e, f, path, "is an invalid path");
			} else if (out->schema && (!type || (strcmp(type, "string") && strcmp(type, "integer") &&
							     strcmp(type, "boolean")))) {
				field_error_invalid(e, f, path,
						    "must point to a field of type string, boolean or integer. "
						    "Enum string fields and strings with formats are allowed.");
			} else {
				out->selectable[out->nselectable++] = xstrdup(path + 1);
			}
		}
		free(f);
	}
}

/* A scale path: a simple JSONPath under one of the prefixes. */
static void check_scale_path(const json_t *scale, const char *key, const char *pre, bool required,
			     const char *p1, const char *p2, char **ret, struct buf *fb, struct field_errors *e)
{
	char *f = xasprintf("%s.subresources.scale.%s", pre, key);
	const char *path = get_str(scale, key, f, e);
	if (!path || !*path) {
		if (required)
			field_error_required(e, f);
	} else if (!simple_path(path) || !(!strncmp(path, p1, strlen(p1)) || (p2 && !strncmp(path, p2, strlen(p2))))) {
		field_error_invalid(e, f, path, "should be a json path under %s%s%s", p2 ? "either " : "",
				    buf_setf(fb, "%.*s", (int)strlen(p1) - 1, p1), p2 ? " or .status" : "");
	} else {
		*ret = xstrdup(path);
	}
	free(f);
}

static void parse_subresources(const json_t *v, const char *pre, struct crd_version *out, struct buf *fb,
			       struct field_errors *e)
{
	char *f = xasprintf("%s.subresources", pre);
	const json_t *sub = get_obj(v, "subresources", f, e);
	out->status = get_obj(sub, "status", buf_setf(fb, "%s.status", f), e) != NULL;
	const json_t *scale = get_obj(sub, "scale", buf_setf(fb, "%s.scale", f), e);
	if (scale) {
		out->scale = true;
		check_scale_path(scale, "specReplicasPath", pre, true, ".spec.", NULL, &out->spec_replicas_path, fb, e);
		check_scale_path(scale, "statusReplicasPath", pre, true, ".status.", NULL, &out->status_replicas_path,
				 fb, e);
		check_scale_path(scale, "labelSelectorPath", pre, false, ".spec.", ".status.",
				 &out->label_selector_path, fb, e);
	}
	free(f);
}

static void parse_version(const json_t *v, size_t i, struct crd_version *out, struct buf *fb, struct field_errors *e)
{
	char *pre = xasprintf("spec.versions[%zu]", i);
	if (!json_is_object(v)) {
		field_error_type(e, pre, "an object");
		out->name = xstrdup("");
		free(pre);
		return;
	}
	const char *name = get_str(v, "name", buf_setf(fb, "%s.name", pre), e);
	if (!name || !*name)
		field_error_required(e, buf_setf(fb, "%s.name", pre));
	else
		check_label(name, buf_setf(fb, "%s.name", pre), false, e);
	out->name = dup_or(name, "");
	out->served = get_bool(v, "served", buf_setf(fb, "%s.served", pre), e);
	out->storage = get_bool(v, "storage", buf_setf(fb, "%s.storage", pre), e);
	out->deprecated = get_bool(v, "deprecated", buf_setf(fb, "%s.deprecated", pre), e);
	const char *warning = get_str(v, "deprecationWarning", buf_setf(fb, "%s.deprecationWarning", pre), e);
	if (warning && !out->deprecated)
		field_error_invalid(e, buf_setf(fb, "%s.deprecationWarning", pre), warning,
				    "can only be set for deprecated versions");
	else if (warning && strlen(warning) > DEPRECATION_WARNING_MAX)
		field_error_too_long(e, buf_setf(fb, "%s.deprecationWarning", pre), DEPRECATION_WARNING_MAX);
	else if (warning)
		out->deprecation_warning = xstrdup(warning);

	const json_t *schema = get_obj(v, "schema", buf_setf(fb, "%s.schema", pre), e);
	char *base = xasprintf("%s.schema.openAPIV3Schema", pre);
	const json_t *openapi = get_obj(schema, "openAPIV3Schema", base, e);
	if (!openapi && !member(schema, "openAPIV3Schema"))
		field_error_required_why(e, base, "schemas are required");
	else if (openapi && crd_schema_compile(openapi, base, &out->schema, e) != 0)
		out->schema = NULL;
	free(base);

	parse_subresources(v, pre, out, fb, e);
	parse_columns(v, pre, out, fb, e);
	parse_selectable(v, pre, out, fb, e);
	free(pre);
}

static void parse_versions(const json_t *spec, struct crd_def *d, struct buf *fb, struct field_errors *e)
{
	size_t n;
	const json_t *arr = get_arr(spec, "versions", "spec.versions", VERSIONS_MAX, &n, e);
	d->versions = xcalloc(n + 1, sizeof(*d->versions));
	if (!arr && !member(spec, "versions"))
		field_error_required_why(e, "spec.versions", "must have exactly one version marked as storage version");
	if (!arr)
		return;
	if (n == 0) {
		field_error_required_why(e, "spec.versions", "must have exactly one version marked as storage version");
		return;
	}
	size_t storage = 0;
	for (size_t i = 0; i < n; i++) {
		struct crd_version *v = &d->versions[d->nversions++];
		parse_version(json_array_get(arr, i), i, v, fb, e);
		storage += v->storage;
		for (size_t j = 0; j < i && *v->name; j++)
			if (!strcmp(d->versions[j].name, v->name)) {
				field_error_duplicate(e, buf_setf(fb, "spec.versions[%zu].name", i), v->name);
				break;
			}
	}
	if (storage != 1)
		field_error_invalid_json(e, "spec.versions", arr,
					 "must have exactly one version marked as storage version");
}

/* ---- the definition ---- */

static void parse_group(const json_t *spec, struct crd_def *d, struct field_errors *e)
{
	const char *group = get_str(spec, "group", "spec.group", e);
	const char *why;
	d->group = dup_or(group, "");
	if (!group || !*group)
		field_error_required(e, "spec.group");
	else if ((why = dns1123_subdomain_error(group)) != NULL)
		field_error_invalid(e, "spec.group", group, "%s", why);
	else if (!strchr(group, '.'))
		field_error_invalid(e, "spec.group", group, "should be a domain with at least one dot");
	else if (k8s_group(group))
		field_error_forbidden(e, "spec.group",
				      "groups ending in .k8s.io or .kubernetes.io are reserved for Kubernetes' own "
				      "APIs (the api-approved.kubernetes.io annotation is not supported)");
	else if (crd_group_reserved(group))
		field_error_forbidden(e, "spec.group", "the group %s is served by the built-in kinds", group);
}

static void parse_conversion(const json_t *spec, struct field_errors *e)
{
	const json_t *conv = get_obj(spec, "conversion", "spec.conversion", e);
	const char *strategy = get_str(conv, "strategy", "spec.conversion.strategy", e);
	if (strategy && strcmp(strategy, "None")) {
		field_error_not_supported(e, "spec.conversion.strategy", strategy, conversion_strategies);
		return;
	}
	if (member(conv, "webhook"))
		field_error_forbidden(e, "spec.conversion.webhook",
				      "should not be set when strategy is not set to Webhook");
}

static void parse_meta(const json_t *crd, struct crd_def *d, struct field_errors *e)
{
	const json_t *meta = get_obj(crd, "metadata", "metadata", e);
	const char *name = get_str(meta, "name", "metadata.name", e);
	d->name = dup_or(name, "");
	d->tenant = dup_or(get_str(meta, "tenant", "metadata.tenant", e), "");
	d->uid = dup_or(get_str(meta, "uid", "metadata.uid", e), "");
	d->terminating = member(meta, "deletionTimestamp") != NULL;
}

static void merge_causes(struct field_errors *into, const struct field_errors *from)
{
	size_t i;
	json_t *c;
	json_array_foreach(from->causes, i, c)
		field_error_add(into, json_string_value(json_object_get(c, "reason")),
				json_string_value(json_object_get(c, "field")), "%s",
				json_string_value(json_object_get(c, "message")));
}

int crd_def_parse(const json_t *crd, struct crd_def **ret, struct field_errors *errs)
{
	struct field_errors e = { NULL };
	struct buf fb = BUF_INIT;
	struct crd_def *d = xcalloc(1, sizeof(*d));
	*ret = NULL;
	if (!json_is_object(crd))
		field_error_type(&e, "", "an object");
	parse_meta(crd, d, &e);
	const json_t *spec = get_obj(crd, "spec", "spec", &e);
	if (!spec && json_is_object(crd) && !member(crd, "spec"))
		field_error_required(&e, "spec");
	parse_group(spec, d, &e);
	parse_names(get_obj(spec, "names", "spec.names", &e), d, &fb, &e);
	if (*d->plural && *d->group) {
		char *want = xasprintf("%s.%s", d->plural, d->group);
		if (strcmp(d->name, want))
			field_error_invalid(&e, "metadata.name", d->name, "must be spec.names.plural+\".\"+spec.group");
		free(want);
	}
	const char *scope = get_str(spec, "scope", "spec.scope", &e);
	if (!scope || !*scope)
		field_error_required(&e, "spec.scope");
	else if (strcmp(scope, "Namespaced") && strcmp(scope, "Cluster"))
		field_error_not_supported(&e, "spec.scope", scope, scopes);
	d->scope = scope && !strcmp(scope, "Cluster") ? SCOPE_TENANT : SCOPE_NAMESPACE;
	parse_conversion(spec, &e);
	parse_versions(spec, d, &fb, &e);
	buf_release(&fb);
	if (field_errors_any(&e)) {
		merge_causes(errs, &e);
		field_errors_release(&e);
		crd_def_free(d);
		return -1;
	}
	*ret = d;
	return 0;
}

static void free_strv(char **v, size_t n)
{
	for (size_t i = 0; v && i < n; i++)
		free(v[i]);
	free(v);
}

void crd_def_free(struct crd_def *d)
{
	if (!d)
		return;
	for (size_t i = 0; d->versions && i < d->nversions; i++) {
		struct crd_version *v = &d->versions[i];
		free(v->name);
		free(v->deprecation_warning);
		crd_schema_free(v->schema);
		for (size_t j = 0; j < v->ncolumns; j++) {
			struct crd_column *c = &v->columns[j];
			free(c->name);
			free(c->type);
			free(c->format);
			free(c->description);
			free(c->json_path);
		}
		free(v->columns);
		free_strv(v->selectable, v->nselectable);
		free(v->spec_replicas_path);
		free(v->status_replicas_path);
		free(v->label_selector_path);
	}
	free(d->versions);
	free_strv(d->short_names, d->nshort);
	free_strv(d->categories, d->ncategories);
	free(d->name);
	free(d->tenant);
	free(d->uid);
	free(d->group);
	free(d->plural);
	free(d->singular);
	free(d->kind);
	free(d->list_kind);
	free(d);
}

const struct crd_version *crd_def_version(const struct crd_def *d, const char *name)
{
	for (size_t i = 0; d && name && i < d->nversions; i++)
		if (!strcmp(d->versions[i].name, name))
			return &d->versions[i];
	return NULL;
}

const struct crd_version *crd_def_storage(const struct crd_def *d)
{
	for (size_t i = 0; d && i < d->nversions; i++)
		if (d->versions[i].storage)
			return &d->versions[i];
	return NULL;
}
