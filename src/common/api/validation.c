/* Generic metadata validation and the small checks every kind shares. The name syntax itself
 * (DNS-1123 labels and subdomains, label keys and values) lives in src/common/selector/names.c;
 * here we add upstream's wording and apply the rules to objects. */
#include <stdlib.h>
#include <string.h>
#include "api/validation.h"
#include "selector/names.h"
#include "ursa/jsonutil.h"
#include "ursa/xalloc.h"

#define ANNOTATIONS_MAX_BYTES (256 * 1024)

static const char err_label_chars[] =
	"a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must "
	"start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for "
	"validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";
static const char err_subdomain_chars[] =
	"a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
	"and must start and end with an alphanumeric character (e.g. 'example.com', regex used for "
	"validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
static const char err_dns1035_chars[] =
	"a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an "
	"alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', "
	"regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')";

const char *dns1123_label_error(const char *s)
{
	if (s && strlen(s) > LABEL_NAME_MAX)
		return "must be no more than 63 characters";
	return valid_dns1123_label(s) ? NULL : err_label_chars;
}

const char *dns1123_subdomain_error(const char *s)
{
	if (s && strlen(s) > DNS1123_SUBDOMAIN_MAX)
		return "must be no more than 253 characters";
	return valid_dns1123_subdomain(s) ? NULL : err_subdomain_chars;
}

const char *dns1035_label_error(const char *s)
{
	if (s && strlen(s) > LABEL_NAME_MAX)
		return "must be no more than 63 characters";
	if (!s || !(s[0] >= 'a' && s[0] <= 'z') || !valid_dns1123_label(s))
		return err_dns1035_chars;
	return NULL;
}

const char *label_key_why(const char *s)
{
	return label_key_error(s);
}

const char *label_value_why(const char *s)
{
	return label_value_error(s);
}

bool valid_dns1035_label(const char *s)
{
	return dns1035_label_error(s) == NULL;
}

const char *iana_svc_name_error(const char *s)
{
	size_t len = s ? strlen(s) : 0;
	bool letter = false;
	if (len == 0 || len > 15)
		return "must be no more than 15 characters";
	for (size_t i = 0; i < len; i++) {
		char c = s[i];
		if (c >= 'a' && c <= 'z')
			letter = true;
		else if (!(c >= '0' && c <= '9') && c != '-')
			return "must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)";
		if (c == '-' && i > 0 && s[i - 1] == '-')
			return "must not contain consecutive hyphens";
	}
	if (!letter)
		return "must contain at least one letter (a-z)";
	if (s[0] == '-' || s[len - 1] == '-')
		return "must not begin or end with a hyphen";
	return NULL;
}

void validate_labels(const json_t *labels, const char *field, struct field_errors *errs)
{
	const char *k;
	json_t *v;
	if (!labels || json_is_null(labels))
		return;
	if (!json_is_object(labels)) {
		field_error_type(errs, field, "an object of strings");
		return;
	}
	json_object_foreach((json_t *)labels, k, v) {
		const char *why = label_key_error(k);
		if (why)
			field_error_invalid(errs, field, k, "%s", why);
		if (!json_is_string(v)) {
			field_error_type(errs, field, "a string");
			continue;
		}
		why = label_value_error(json_string_value(v));
		if (why)
			field_error_invalid(errs, field, json_string_value(v), "%s", why);
	}
}

static void validate_expression(const json_t *req, const char *field, struct field_errors *errs)
{
	static const char *const ops[] = { "In", "NotIn", "Exists", "DoesNotExist", NULL };
	char *f_key = xasprintf("%s.key", field), *f_op = xasprintf("%s.operator", field);
	char *f_values = xasprintf("%s.values", field);
	const char *key = json_str(req, "key"), *op = json_str(req, "operator");
	const json_t *values = json_object_get(req, "values");
	size_t nvalues = json_is_array(values) ? json_array_size(values) : 0;

	if (!key || !*key)
		field_error_required(errs, f_key);
	else if (label_key_error(key))
		field_error_invalid(errs, f_key, key, "%s", label_key_error(key));
	if (values && !json_is_null(values) && !json_is_array(values))
		field_error_type(errs, f_values, "an array of strings");
	if (!op || !*op) {
		field_error_required(errs, f_op);
	} else if (!strcmp(op, "In") || !strcmp(op, "NotIn")) {
		if (nvalues == 0)
			field_error_required_why(errs, f_values,
						 "must be specified when `operator` is 'In' or 'NotIn'");
	} else if (!strcmp(op, "Exists") || !strcmp(op, "DoesNotExist")) {
		if (nvalues)
			field_error_forbidden(errs, f_values,
					      "may not be specified when `operator` is 'Exists' or 'DoesNotExist'");
	} else {
		field_error_not_supported(errs, f_op, op, ops);
	}
	for (size_t i = 0; i < nvalues; i++) {
		const char *v = json_string_value(json_array_get(values, i));
		if (!v)
			field_error_type(errs, f_values, "an array of strings");
		else if (label_value_error(v))
			field_error_invalid(errs, f_values, v, "%s", label_value_error(v));
	}
	free(f_key);
	free(f_op);
	free(f_values);
}

void validate_label_selector(const json_t *sel, const char *field, struct field_errors *errs)
{
	if (!sel || json_is_null(sel))
		return;
	if (!json_is_object(sel)) {
		field_error_type(errs, field, "an object");
		return;
	}
	char *f = xasprintf("%s.matchLabels", field);
	validate_labels(json_object_get(sel, "matchLabels"), f, errs);
	free(f);
	const json_t *exprs = json_object_get(sel, "matchExpressions");
	if (exprs && !json_is_null(exprs) && !json_is_array(exprs)) {
		f = xasprintf("%s.matchExpressions", field);
		field_error_type(errs, f, "an array");
		free(f);
		return;
	}
	size_t i;
	json_t *req;
	json_array_foreach(exprs, i, req) {
		f = xasprintf("%s.matchExpressions[%zu]", field, i);
		if (!json_is_object(req))
			field_error_type(errs, f, "an object");
		else
			validate_expression(req, f, errs);
		free(f);
	}
}

static bool check_integer(const json_t *v, const char *field, struct field_errors *errs)
{
	if (!v || json_is_null(v))
		return false;
	if (!json_is_integer(v)) {
		field_error_type(errs, field, "an integer");
		return false;
	}
	return true;
}

void validate_nonnegative(const json_t *v, const char *field, struct field_errors *errs)
{
	if (check_integer(v, field, errs) && json_integer_value(v) < 0)
		field_error_invalid_int(errs, field, (long long)json_integer_value(v),
					"must be greater than or equal to 0");
}

void validate_positive(const json_t *v, const char *field, struct field_errors *errs)
{
	if (check_integer(v, field, errs) && json_integer_value(v) <= 0)
		field_error_invalid_int(errs, field, (long long)json_integer_value(v), "must be greater than 0");
}

void validate_immutable(const json_t *now, const json_t *old, const char *field, struct field_errors *errs)
{
	bool now_absent = !now || json_is_null(now), old_absent = !old || json_is_null(old);
	if (now_absent && old_absent)
		return;
	if (now_absent != old_absent || !json_equal((json_t *)now, (json_t *)old))
		field_error_invalid_json(errs, field, now, "field is immutable");
}

/* A name that is one path segment (RBAC objects): not "." or "..", no '/' or '%', at most 253
 * bytes. NULL when valid. */
static const char *path_segment_name_error(const char *s)
{
	if (!strcmp(s, ".") || !strcmp(s, ".."))
		return "may not be '.' or '..'";
	if (strchr(s, '/') || strchr(s, '%'))
		return "may not contain '/' or '%'";
	if (strlen(s) > 253)
		return "must be no more than 253 characters";
	return NULL;
}

/* metadata.name: required, then the resource's name rule. */
static void validate_name(const struct api_resource *r, const json_t *meta, struct field_errors *errs)
{
	const json_t *jname = json_object_get(meta, "name");
	if (jname && !json_is_string(jname)) {
		field_error_type(errs, "metadata.name", "a string");
		return;
	}
	const char *name = json_string_value(jname);
	if (!name || !*name) {
		field_error_required_why(errs, "metadata.name", "name or generateName is required");
		return;
	}
	const char *plural = r->plural ? r->plural : "";
	const char *why;
	if (!strcmp(plural, "namespaces") || !strcmp(plural, "tenants"))
		why = dns1123_label_error(name);
	else if (!strcmp(plural, "services"))
		why = dns1035_label_error(name);
	else if (r->group && !strcmp(r->group, "rbac.authorization.k8s.io"))
		why = path_segment_name_error(name); /* "system:discovery" is a role's name */
	else
		why = dns1123_subdomain_error(name);
	if (why)
		field_error_invalid(errs, "metadata.name", name, "%s", why);
	if (!strcmp(plural, "tenants") && !strcmp(name, "all"))
		field_error_forbidden(errs, "metadata.name", "\"all\" is reserved and may not be used as a tenant name");
}

/* metadata.namespace and metadata.tenant: strings; DNS labels when set; no namespace on
 * resources that are not namespaced. */
static void validate_scope_fields(const struct api_resource *r, const json_t *meta, struct field_errors *errs)
{
	const json_t *ns = json_object_get(meta, "namespace");
	const json_t *tenant = json_object_get(meta, "tenant");
	if (ns && !json_is_null(ns)) {
		const char *s = json_string_value(ns);
		if (!s)
			field_error_type(errs, "metadata.namespace", "a string");
		else if (*s && r->scope != SCOPE_NAMESPACE)
			field_error_forbidden(errs, "metadata.namespace", "not allowed on this type");
		else if (*s && dns1123_label_error(s))
			field_error_invalid(errs, "metadata.namespace", s, "%s", dns1123_label_error(s));
	}
	if (tenant && !json_is_null(tenant)) {
		const char *s = json_string_value(tenant);
		if (!s)
			field_error_type(errs, "metadata.tenant", "a string");
		else if (*s && dns1123_label_error(s))
			field_error_invalid(errs, "metadata.tenant", s, "%s", dns1123_label_error(s));
	}
}

static void validate_annotations(const json_t *ann, struct field_errors *errs)
{
	const char *k;
	json_t *v;
	size_t total = 0;
	if (!ann || json_is_null(ann))
		return;
	if (!json_is_object(ann)) {
		field_error_type(errs, "metadata.annotations", "an object of strings");
		return;
	}
	json_object_foreach((json_t *)ann, k, v) {
		/* Upstream checks the lower-cased key, so upper case letters in the prefix pass. */
		char *lower = xstrdup(k);
		for (char *p = lower; *p; p++)
			if (*p >= 'A' && *p <= 'Z')
				*p = (char)(*p - 'A' + 'a');
		const char *why = label_key_error(lower);
		if (why)
			field_error_invalid(errs, "metadata.annotations", k, "%s", why);
		free(lower);
		if (!json_is_string(v))
			field_error_type(errs, "metadata.annotations", "a string");
		total += strlen(k) + json_string_length(v);
	}
	if (total > ANNOTATIONS_MAX_BYTES)
		field_error_too_long(errs, "metadata.annotations", ANNOTATIONS_MAX_BYTES);
}

static void validate_finalizers(const json_t *fins, struct field_errors *errs)
{
	size_t i;
	json_t *f;
	if (!fins || json_is_null(fins))
		return;
	if (!json_is_array(fins)) {
		field_error_type(errs, "metadata.finalizers", "an array of strings");
		return;
	}
	json_array_foreach(fins, i, f) {
		const char *s = json_string_value(f);
		char *path = xasprintf("metadata.finalizers[%zu]", i);
		if (!s)
			field_error_type(errs, path, "a string");
		else if (label_key_error(s))
			field_error_invalid(errs, path, s, "%s", label_key_error(s));
		free(path);
	}
}

static void validate_owner_refs(const json_t *refs, struct field_errors *errs)
{
	static const char *const required[] = { "apiVersion", "kind", "name", "uid" };
	size_t i;
	json_t *ref;
	if (!refs || json_is_null(refs))
		return;
	if (!json_is_array(refs)) {
		field_error_type(errs, "metadata.ownerReferences", "an array");
		return;
	}
	json_array_foreach(refs, i, ref) {
		for (size_t k = 0; k < ARRAY_SIZE(required); k++) {
			const char *s = json_str(ref, required[k]);
			if (s && *s)
				continue;
			char *path = xasprintf("metadata.ownerReferences[%zu].%s", i, required[k]);
			field_error_required(errs, path);
			free(path);
		}
	}
}

void validate_object_meta(const struct api_resource *r, const json_t *obj, struct field_errors *errs)
{
	const json_t *meta = json_object_get(obj, "metadata");
	if (!json_is_object(meta)) {
		field_error_required(errs, "metadata");
		return;
	}
	validate_name(r, meta, errs);
	const json_t *gen = json_object_get(meta, "generateName");
	if (gen && !json_is_null(gen) && !json_is_string(gen))
		field_error_type(errs, "metadata.generateName", "a string");
	validate_scope_fields(r, meta, errs);
	validate_labels(json_object_get(meta, "labels"), "metadata.labels", errs);
	validate_annotations(json_object_get(meta, "annotations"), errs);
	validate_finalizers(json_object_get(meta, "finalizers"), errs);
	validate_owner_refs(json_object_get(meta, "ownerReferences"), errs);
}
