/* TokenRequest specs: audiences, expiry and the bound object, checked as Kubernetes does. */
#include "auth/auth_internal.h"
#include "ursa/errors.h"
#include "ursa/tokenreq.h"
#include "ursa/xalloc.h"
#include <stdlib.h>
#include <string.h>

void tokenreq_release(struct tokenreq *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->naudiences; i++)
		free(r->audiences[i]);
	free(r->audiences);
	free(r->bound_kind);
	free(r->bound_name);
	free(r->bound_uid);
	memset(r, 0, sizeof(*r));
}

static void add_audience(struct tokenreq *r, const char *a)
{
	r->audiences = xrealloc(r->audiences, (r->naudiences + 1) * sizeof(*r->audiences));
	r->audiences[r->naudiences++] = xstrdup(a);
}

static const char *audiences(const json_t *v, struct tokenreq *r, char **ret_err)
{
	if (v && !json_is_null(v) && !json_is_array(v))
		return "spec.audiences: Invalid value: must be a list of strings";
	if (json_array_size(v) > TOKENREQ_AUDIENCES_MAX)
		return "spec.audiences: Too many: at most 32 audiences";
	size_t i;
	json_t *a;
	json_array_foreach(v, i, a) {
		if (!json_is_string(a) || !auth_field_ok(json_string_value(a), json_string_length(a))) {
			*ret_err = xasprintf("spec.audiences[%zu]: Invalid value: must be 1 to %d printable characters", i,
					     AUTH_FIELD_MAX);
			return NULL;
		}
		add_audience(r, json_string_value(a));
	}
	if (!r->naudiences)
		add_audience(r, API_AUDIENCE);
	return NULL;
}

static const char *expiration(const json_t *v, struct tokenreq *r, char **ret_err)
{
	if (!v || json_is_null(v)) {
		r->expiration_s = TOKENREQ_DEFAULT_S;
		return NULL;
	}
	if (!json_is_integer(v))
		return "spec.expirationSeconds: Invalid value: must be an integer";
	json_int_t s = json_integer_value(v);
	if (s < TOKENREQ_MIN_S) {
		*ret_err = xasprintf("spec.expirationSeconds: Invalid value: %lld: may not specify a duration less than 10 minutes",
				     (long long)s);
		return NULL;
	}
	if (s > ((json_int_t)1 << 32)) {
		*ret_err = xasprintf("spec.expirationSeconds: Invalid value: %lld: may not specify a duration larger than 2^32 seconds",
				     (long long)s);
		return NULL;
	}
	r->expiration_s = s > TOKENREQ_MAX_S ? TOKENREQ_MAX_S : (int64_t)s;
	return NULL;
}

static bool opt_string(const json_t *v)
{
	return !v || json_is_null(v) || json_is_string(v);
}

static const char *bound(const json_t *ref, struct tokenreq *r, char **ret_err)
{
	if (!ref || json_is_null(ref))
		return NULL;
	if (!json_is_object(ref))
		return "spec.boundObjectRef: Invalid value: must be an object";
	json_t *kind = json_object_get(ref, "kind"), *av = json_object_get(ref, "apiVersion");
	json_t *name = json_object_get(ref, "name"), *uid = json_object_get(ref, "uid");
	if (!opt_string(kind) || !opt_string(av) || !opt_string(name) || !opt_string(uid))
		return "spec.boundObjectRef: Invalid value: kind, apiVersion, name and uid must be strings";
	const char *k = json_string_value(kind);
	if (!k || (strcmp(k, "Pod") != 0 && strcmp(k, "Secret") != 0)) {
		*ret_err = xasprintf("spec.boundObjectRef.kind: Unsupported value: \"%s\": supported values: \"Pod\", \"Secret\"",
				     k ? k : "");
		return NULL;
	}
	const char *a = json_string_value(av);
	if (a && *a && strcmp(a, "v1") != 0) {
		*ret_err = xasprintf("spec.boundObjectRef.apiVersion: Unsupported value: \"%s\": supported values: \"v1\"", a);
		return NULL;
	}
	if (!json_string_value(name) || !auth_field_ok(json_string_value(name), json_string_length(name)))
		return "spec.boundObjectRef.name: Required value";
	if (json_string_value(uid) && json_string_length(uid) &&
	    !auth_field_ok(json_string_value(uid), json_string_length(uid)))
		return "spec.boundObjectRef.uid: Invalid value: must be at most 1024 printable characters";
	r->bound_kind = xstrdup(k);
	r->bound_name = xstrdup(json_string_value(name));
	if (json_string_value(uid) && json_string_length(uid))
		r->bound_uid = xstrdup(json_string_value(uid));
	return NULL;
}

int tokenreq_parse(const json_t *spec, struct tokenreq *ret, char **ret_err)
{
	struct tokenreq r = { 0 };
	char *err = NULL;
	const char *why = NULL;
	if (spec && !json_is_null(spec) && !json_is_object(spec))
		why = "spec: Invalid value: must be an object";
	if (!why && !err)
		why = audiences(json_object_get(spec, "audiences"), &r, &err);
	if (!why && !err)
		why = expiration(json_object_get(spec, "expirationSeconds"), &r, &err);
	if (!why && !err)
		why = bound(json_object_get(spec, "boundObjectRef"), &r, &err);
	if (why || err) {
		tokenreq_release(&r);
		*ret_err = err ? err : xstrdup(why);
		return E_INVALID;
	}
	*ret = r;
	return 0;
}
