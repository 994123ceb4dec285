/* PolicyRules: parsing and validation, matching a request, and covering another rule. Pure. */
#include <stdlib.h>
#include <string.h>
#include "ursa/errors.h"
#include "ursa/jsonutil.h"
#include "ursa/rbac.h"
#include "ursa/xalloc.h"

static const char *const known_verbs[] = {
	"get", "list", "watch", "create", "update", "patch", "delete", "deletecollection",
	"bind", "escalate", "impersonate", "use", "approve", "sign", "proxy", "*",
};

bool rbac_verb_known(const char *verb)
{
	for (size_t i = 0; i < sizeof(known_verbs) / sizeof(known_verbs[0]); i++)
		if (strcmp(verb, known_verbs[i]) == 0)
			return true;
	return false;
}

static void strv_free(char **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

static void rule_clear(struct rbac_rule *r)
{
	strv_free(r->verbs, r->nverbs);
	strv_free(r->groups, r->ngroups);
	strv_free(r->resources, r->nresources);
	strv_free(r->names, r->nnames);
	strv_free(r->urls, r->nurls);
	memset(r, 0, sizeof(*r));
}

void rbac_rules_free(struct rbac_rule *rules, size_t n)
{
	for (size_t i = 0; i < n; i++)
		rule_clear(&rules[i]);
	free(rules);
}

/* rule[key]: absent or null is empty; else an array of strings (non-empty when nonempty). */
static int str_array(const json_t *rule, const char *key, const char *field, size_t idx, bool nonempty,
		     char ***ret, size_t *ret_n, struct field_errors *errs)
{
	const json_t *a = json_object_get(rule, key);
	*ret = NULL;
	*ret_n = 0;
	if (!a || json_is_null(a))
		return 0;
	if (!json_is_array(a)) {
		if (errs) {
			char *f = xasprintf("%s[%zu].%s", field, idx, key);
			field_error_add(errs, "FieldValueTypeInvalid", f, "Invalid value: must be an array of strings");
			free(f);
		}
		return E_INVALID;
	}
	size_t n = json_array_size(a);
	char **v = n ? xcalloc(n, sizeof(*v)) : NULL;
	for (size_t i = 0; i < n; i++) {
		const json_t *s = json_array_get(a, i);
		if (!json_is_string(s) || (nonempty && !*json_string_value(s))) {
			if (errs) {
				char *f = xasprintf("%s[%zu].%s[%zu]", field, idx, key, i);
				field_error_add(errs, json_is_string(s) ? "FieldValueRequired" : "FieldValueTypeInvalid", f,
						"%s", json_is_string(s) ? "Required value" : "Invalid value: must be a string");
				free(f);
			}
			strv_free(v, i);
			return E_INVALID;
		}
		v[i] = xstrdup(json_string_value(s));
	}
	*ret = v;
	*ret_n = n;
	return 0;
}

static int parse_rule(const json_t *j, const char *field, size_t idx, bool cluster, struct rbac_rule *r,
		      struct field_errors *errs)
{
	memset(r, 0, sizeof(*r));
	char *f = xasprintf("%s[%zu]", field, idx);
	int rc = E_INVALID;
	if (!json_is_object(j)) {
		if (errs)
			field_error_add(errs, "FieldValueTypeInvalid", f, "Invalid value: must be an object");
		goto out;
	}
	if (str_array(j, "verbs", field, idx, true, &r->verbs, &r->nverbs, errs) < 0 ||
	    str_array(j, "apiGroups", field, idx, false, &r->groups, &r->ngroups, errs) < 0 ||
	    str_array(j, "resources", field, idx, true, &r->resources, &r->nresources, errs) < 0 ||
	    str_array(j, "resourceNames", field, idx, true, &r->names, &r->nnames, errs) < 0 ||
	    str_array(j, "nonResourceURLs", field, idx, true, &r->urls, &r->nurls, errs) < 0)
		goto out;
	bool bad = false;
	if (r->nverbs == 0) {
		char *vf = xasprintf("%s.verbs", f);
		if (errs)
			field_error_add(errs, "FieldValueRequired", vf, "Required value: verbs must contain at least one value");
		free(vf);
		bad = true;
	}
	for (size_t i = 0; i < r->nverbs; i++) {
		if (rbac_verb_known(r->verbs[i]))
			continue;
		if (errs) {
			char *vf = xasprintf("%s.verbs[%zu]", f, i);
			field_error_add(errs, "FieldValueNotSupported", vf,
					"Unsupported value: \"%s\": supported values: \"get\", \"list\", \"watch\", \"create\", \"update\", \"patch\", \"delete\", \"deletecollection\", \"bind\", \"escalate\", \"impersonate\", \"use\", \"approve\", \"sign\", \"proxy\", \"*\"",
					r->verbs[i]);
			free(vf);
		}
		bad = true;
	}
	if (r->nurls > 0) {
		if (!cluster) {
			if (errs) {
				char *uf = xasprintf("%s.nonResourceURLs", f);
				field_error_add(errs, "FieldValueInvalid", uf,
						"Invalid value: namespaced rules cannot apply to non-resource URLs");
				free(uf);
			}
			bad = true;
		}
		if (r->nresources > 0 || r->ngroups > 0) {
			if (errs)
				field_error_add(errs, "FieldValueInvalid", f,
						"Invalid value: rules cannot apply to both regular resources and non-resource URLs");
			bad = true;
		}
		for (size_t i = 0; i < r->nurls; i++) {
			const char *u = r->urls[i];
			size_t n = strlen(u);
			bool ok = u[0] == '/' || strcmp(u, "*") == 0;
			for (size_t k = 0; ok && k + 1 < n; k++)
				ok = u[k] != '*';
			if (!ok) {
				if (errs) {
					char *uf = xasprintf("%s.nonResourceURLs[%zu]", f, i);
					field_error_add(errs, "FieldValueInvalid", uf,
							"Invalid value: \"%s\": must start with / and may end with *", u);
					free(uf);
				}
				bad = true;
			}
		}
	} else {
		if (r->nresources == 0) {
			char *rf = xasprintf("%s.resources", f);
			if (errs)
				field_error_add(errs, "FieldValueRequired", rf,
						"Required value: resource rules must supply at least one resource");
			free(rf);
			bad = true;
		}
		if (!json_object_get(j, "apiGroups") || json_is_null(json_object_get(j, "apiGroups"))) {
			char *gf = xasprintf("%s.apiGroups", f);
			if (errs)
				field_error_add(errs, "FieldValueRequired", gf,
						"Required value: resource rules must supply at least one api group");
			free(gf);
			bad = true;
		}
	}
	rc = bad ? E_INVALID : 0;
out:
	if (rc < 0)
		rule_clear(r);
	free(f);
	return rc;
}

int rbac_rules_parse(const json_t *rules, const char *field, bool cluster, struct rbac_rule **ret, size_t *ret_n,
		     struct field_errors *errs)
{
	*ret = NULL;
	*ret_n = 0;
	if (!rules || json_is_null(rules))
		return 0;
	if (!json_is_array(rules)) {
		if (errs)
			field_error_add(errs, "FieldValueTypeInvalid", field, "Invalid value: must be an array");
		return E_INVALID;
	}
	size_t n = json_array_size(rules), ok = 0;
	struct rbac_rule *v = n ? xcalloc(n, sizeof(*v)) : NULL;
	int rc = 0;
	for (size_t i = 0; i < n; i++) {
		if (parse_rule(json_array_get(rules, i), field, i, cluster, &v[ok], errs) < 0)
			rc = E_INVALID; /* keep going: every bad rule gets its causes */
		else
			ok++;
	}
	if (rc < 0) {
		rbac_rules_free(v, ok);
		return rc;
	}
	*ret = v;
	*ret_n = n;
	return 0;
}

static json_t *strv_json(char **v, size_t n)
{
	json_t *a = json_array();
	for (size_t i = 0; i < n; i++)
		json_array_append_new(a, json_string(v[i]));
	return a;
}

json_t *rbac_rule_json(const struct rbac_rule *r)
{
	json_t *o = json_object();
	json_object_set_new(o, "verbs", strv_json(r->verbs, r->nverbs));
	if (r->nurls) {
		json_object_set_new(o, "nonResourceURLs", strv_json(r->urls, r->nurls));
		return o;
	}
	json_object_set_new(o, "apiGroups", strv_json(r->groups, r->ngroups));
	json_object_set_new(o, "resources", strv_json(r->resources, r->nresources));
	if (r->nnames)
		json_object_set_new(o, "resourceNames", strv_json(r->names, r->nnames));
	return o;
}

/* ---- matching ---- */

static bool has(char **v, size_t n, const char *s)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(v[i], s) == 0)
			return true;
	return false;
}

static bool has_or_star(char **v, size_t n, const char *s)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(v[i], "*") == 0 || strcmp(v[i], s) == 0)
			return true;
	return false;
}

/* resource[/sub] against the rule's resources: "*", "res", "res/sub", "res/" + "*" and "*" + "/sub". */
static bool resource_matches(const struct rbac_rule *r, const char *res, const char *sub)
{
	size_t rl = strlen(res);
	for (size_t i = 0; i < r->nresources; i++) {
		const char *e = r->resources[i];
		if (strcmp(e, "*") == 0)
			return true;
		if (!sub) {
			if (strcmp(e, res) == 0)
				return true;
			continue;
		}
		if (strncmp(e, res, rl) == 0 && e[rl] == '/' && (strcmp(e + rl + 1, sub) == 0 || strcmp(e + rl + 1, "*") == 0))
			return true;
		if (e[0] == '*' && e[1] == '/' && strcmp(e + 2, sub) == 0)
			return true;
	}
	return false;
}

static bool url_matches(const struct rbac_rule *r, const char *path)
{
	for (size_t i = 0; i < r->nurls; i++) {
		const char *u = r->urls[i];
		size_t n = strlen(u);
		if (strcmp(u, "*") == 0 || strcmp(u, path) == 0)
			return true;
		if (n > 0 && u[n - 1] == '*' && strncmp(u, path, n - 1) == 0)
			return true;
	}
	return false;
}

bool rbac_rule_allows(const struct rbac_rule *r, const struct rbac_attrs *at)
{
	if (!has_or_star(r->verbs, r->nverbs, at->verb))
		return false;
	if (!at->resource)
		return at->path && url_matches(r, at->path);
	if (r->nurls || !has_or_star(r->groups, r->ngroups, at->group ? at->group : ""))
		return false;
	if (!resource_matches(r, at->resource, at->subresource && *at->subresource ? at->subresource : NULL))
		return false;
	/* resourceNames: only requests that name an object; a list or create names none */
	return r->nnames == 0 || (at->name && *at->name && has(r->names, r->nnames, at->name));
}

/* ---- covering (escalation) ----
 * r is broken into atomic requests: each verb, group, resource (kept as written, "pods/log" or
 * "*") and name (or none); each must be allowed by one rule of own, where a written "*" of r
 * must be met by a "*" of own (holding "pods" is not holding "*"). */
static bool atom_covered(const struct rbac_rule *own, size_t n, const char *verb, const char *group,
			 const char *resource, const char *name)
{
	for (size_t i = 0; i < n; i++) {
		const struct rbac_rule *o = &own[i];
		if (o->nurls || !has_or_star(o->verbs, o->nverbs, verb) || !has_or_star(o->groups, o->ngroups, group))
			continue;
		bool res_ok = has(o->resources, o->nresources, "*") || has(o->resources, o->nresources, resource);
		if (!res_ok) {
			const char *slash = strchr(resource, '/');
			if (slash) {
				char *base = xstrndup(resource, (size_t)(slash - resource));
				char *any = xasprintf("%s/*", base), *anysub = xasprintf("*%s", slash);
				res_ok = has(o->resources, o->nresources, any) || has(o->resources, o->nresources, anysub);
				free(base), free(any), free(anysub);
			}
		}
		if (!res_ok)
			continue;
		if (o->nnames == 0 || (name && has(o->names, o->nnames, name)))
			return true;
	}
	return false;
}

static bool url_covered(const struct rbac_rule *own, size_t n, const char *verb, const char *url)
{
	for (size_t i = 0; i < n; i++) {
		const struct rbac_rule *o = &own[i];
		if (!o->nurls || !has_or_star(o->verbs, o->nverbs, verb))
			continue;
		for (size_t k = 0; k < o->nurls; k++) {
			const char *u = o->urls[k];
			size_t l = strlen(u);
			if (strcmp(u, "*") == 0 || strcmp(u, url) == 0 ||
			    (l > 0 && u[l - 1] == '*' && strncmp(u, url, l - 1) == 0))
				return true;
		}
	}
	return false;
}

bool rbac_rules_cover(const struct rbac_rule *own, size_t n, const struct rbac_rule *r)
{
	for (size_t v = 0; v < r->nverbs; v++) {
		for (size_t u = 0; u < r->nurls; u++)
			if (!url_covered(own, n, r->verbs[v], r->urls[u]))
				return false;
		for (size_t g = 0; g < r->ngroups; g++)
			for (size_t k = 0; k < r->nresources; k++) {
				if (r->nnames == 0) {
					if (!atom_covered(own, n, r->verbs[v], r->groups[g], r->resources[k], NULL))
						return false;
					continue;
				}
				for (size_t m = 0; m < r->nnames; m++)
					if (!atom_covered(own, n, r->verbs[v], r->groups[g], r->resources[k], r->names[m]))
						return false;
			}
	}
	return true;
}
