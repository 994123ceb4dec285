/* crd_schema_compile: an openAPIV3Schema to the compiled tree of schema_internal.h, with
 * Kubernetes' structural rules. Causes name the schema's own fields under base
 * ("<base>.properties[spec].type"). The limits are checked before anything big is built: the
 * text size first, then nodes and depth counted while walking (the walk stops at the first). */
#include <stdlib.h>
#include <string.h>
#include "api/validation.h"
#include "crd/schema_internal.h"
#include "ursa/crd.h"
#include "ursa/xalloc.h"

enum where { W_NORMAL, W_ROOT, W_METADATA, W_JUNCTOR };

struct cc {
	struct field_errors *errs;
	size_t nodes;
	bool fatal, failed;
};

static void fail(struct cc *c)
{
	c->failed = true;
}

/* "<path>.<key>" as a new string, for causes. */
static char *at(const struct buf *path, const char *key)
{
	return xasprintf("%s.%s", buf_cstr(path), key);
}

static void forbid(struct cc *c, const struct buf *path, const char *key, const char *why)
{
	char *f = at(path, key);
	field_error_forbidden(c->errs, f, "%s", why);
	free(f);
	fail(c);
}

static void invalid(struct cc *c, const struct buf *path, const char *key, const json_t *v, const char *why)
{
	char *f = at(path, key);
	struct buf m = BUF_INIT;
	value_add(&m, v ? v : json_null());
	field_error_add(c->errs, "FieldValueInvalid", f, "Invalid value: %s: %s", buf_cstr(&m), why);
	buf_release(&m);
	free(f);
	fail(c);
}

static void required(struct cc *c, const struct buf *path, const char *key, const char *why)
{
	char *f = at(path, key);
	field_error_required_why(c->errs, f, "%s", why);
	free(f);
	fail(c);
}

static bool get_bool(struct cc *c, const json_t *j, const struct buf *path, const char *key)
{
	const json_t *v = json_object_get(j, key);
	if (v && !json_is_boolean(v))
		invalid(c, path, key, v, "must be a boolean");
	return json_is_true(v);
}

static const json_t *get_number(struct cc *c, const json_t *j, const struct buf *path, const char *key)
{
	const json_t *v = json_object_get(j, key);
	if (v && !json_is_number(v)) {
		invalid(c, path, key, v, "must be a number");
		return NULL;
	}
	return v;
}

static long long get_count(struct cc *c, const json_t *j, const struct buf *path, const char *key)
{
	const json_t *v = json_object_get(j, key);
	if (!v)
		return -1;
	if (!json_is_integer(v) || json_integer_value(v) < 0) {
		invalid(c, path, key, v, "must be a non-negative integer");
		return -1;
	}
	return json_integer_value(v);
}

static char **string_list(struct cc *c, const json_t *j, const struct buf *path, const char *key, size_t *ret_n)
{
	const json_t *v = json_object_get(j, key);
	*ret_n = 0;
	if (!v)
		return NULL;
	if (!json_is_array(v)) {
		invalid(c, path, key, v, "must be an array of strings");
		return NULL;
	}
	char **out = xcalloc(json_array_size(v) + 1, sizeof(*out));
	size_t i, n = 0;
	const json_t *e;
	json_array_foreach(v, i, e) {
		if (!json_is_string(e)) {
			invalid(c, path, key, v, "must be an array of strings");
			continue;
		}
		out[n++] = xstrdup(json_string_value(e));
	}
	*ret_n = n;
	return out;
}

static void free_list(char **l, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(l[i]);
	free(l);
}

void snode_free(struct snode *n)
{
	if (!n)
		return;
	for (size_t i = 0; i < n->nprops; i++) {
		free(n->props[i].name);
		snode_free(n->props[i].node);
	}
	free(n->props);
	snode_free(n->additional);
	snode_free(n->items);
	free_list(n->required, n->nrequired);
	free_list(n->map_keys, n->nmap_keys);
	if (n->pattern) {
		regfree(n->pattern);
		free(n->pattern);
	}
	json_decref(n->deflt);
	for (size_t i = 0; i < n->nall_of; i++)
		snode_free(n->all_of[i]);
	for (size_t i = 0; i < n->nany_of; i++)
		snode_free(n->any_of[i]);
	for (size_t i = 0; i < n->none_of; i++)
		snode_free(n->one_of[i]);
	free(n->all_of);
	free(n->any_of);
	free(n->one_of);
	snode_free(n->not_);
	free(n);
}

static int prop_cmp(const void *a, const void *b)
{
	return strcmp(((const struct sprop *)a)->name, ((const struct sprop *)b)->name);
}

struct snode *snode_prop(const struct snode *n, const char *key)
{
	if (n->nprops) {
		struct sprop k = { .name = (char *)key };
		const struct sprop *p = bsearch(&k, n->props, n->nprops, sizeof(k), prop_cmp);
		if (p)
			return p->node;
	}
	return n->additional;
}

static bool scalar(const struct snode *n)
{
	return n && (n->type == ST_STRING || n->type == ST_INTEGER || n->type == ST_NUMBER || n->type == ST_BOOLEAN ||
		     n->int_or_string);
}

static struct snode *compile_node(struct cc *c, const json_t *j, struct buf *path, int depth, enum where w, bool ios);

static void compile_junctors(struct cc *c, const json_t *j, struct snode *n, struct buf *path, int depth, bool ios)
{
	static const char *const names[] = { "allOf", "anyOf", "oneOf" };
	struct snode ***lists[] = { &n->all_of, &n->any_of, &n->one_of };
	size_t *counts[] = { &n->nall_of, &n->nany_of, &n->none_of };
	for (size_t k = 0; k < 3; k++) {
		const json_t *v = json_object_get(j, names[k]);
		if (!v)
			continue;
		if (!json_is_array(v)) {
			invalid(c, path, names[k], v, "must be an array of schemas");
			continue;
		}
		*lists[k] = xcalloc(json_array_size(v) + 1, sizeof(struct snode *));
		size_t i;
		const json_t *e;
		json_array_foreach(v, i, e) {
			size_t len = path->len;
			buf_addf(path, ".%s[%zu]", names[k], i);
			struct snode *sub = compile_node(c, e, path, depth + 1, W_JUNCTOR, ios);
			path_cut(path, len);
			if (sub)
				(*lists[k])[(*counts[k])++] = sub;
			if (c->fatal)
				return;
		}
	}
	const json_t *v = json_object_get(j, "not");
	if (v) {
		size_t len = path->len;
		buf_adds(path, ".not");
		n->not_ = compile_node(c, v, path, depth + 1, W_JUNCTOR, false);
		path_cut(path, len);
	}
}

/* Keywords that give a node structure, forbidden inside value validations (allOf, ...) and in
 * the root's metadata beyond name and generateName. */
static const char *const structural_keys[] = { "type", "items", "properties", "additionalProperties", "default",
					       "nullable", "x-kubernetes-int-or-string",
					       "x-kubernetes-preserve-unknown-fields", "x-kubernetes-embedded-resource",
					       "x-kubernetes-list-type", "x-kubernetes-list-map-keys",
					       "x-kubernetes-map-type", NULL };

static void check_junctor(struct cc *c, const json_t *j, const struct buf *path, bool ios)
{
	for (size_t k = 0; structural_keys[k]; k++) {
		const json_t *v = json_object_get(j, structural_keys[k]);
		if (!v)
			continue;
		/* x-kubernetes-int-or-string's anyOf: [{type: integer}, {type: string}] as kubebuilder emits. */
		if (ios && k == 0 && json_is_string(v) &&
		    (!strcmp(json_string_value(v), "integer") || !strcmp(json_string_value(v), "string")))
			continue;
		forbid(c, path, structural_keys[k], "must be empty to be structural");
	}
}

#define ONLY_NAMES "must not specify anything other than name and generateName"

static void check_metadata(struct cc *c, const json_t *j, const struct buf *path)
{
	const char *key;
	const json_t *v;
	json_object_foreach((json_t *)j, key, v) {
		if (!strcmp(key, "type")) {
			if (!json_is_string(v) || strcmp(json_string_value(v), "object"))
				invalid(c, path, key, v, "must be object");
		} else if (!strcmp(key, "properties")) {
			const char *pk;
			const json_t *pv;
			json_object_foreach((json_t *)v, pk, pv) {
				if (strcmp(pk, "name") && strcmp(pk, "generateName")) {
					char *f = xasprintf("properties[%s]", pk);
					forbid(c, path, f, ONLY_NAMES);
					free(f);
				}
			}
		} else if (strcmp(key, "description")) {
			forbid(c, path, key, ONLY_NAMES);
		}
	}
}

static void compile_props(struct cc *c, const json_t *j, struct snode *n, struct buf *path, int depth, enum where w)
{
	const json_t *props = json_object_get(j, "properties");
	if (!props)
		return;
	if (!json_is_object(props)) {
		invalid(c, path, "properties", props, "must be an object of schemas");
		return;
	}
	n->props = xcalloc(json_object_size(props) + 1, sizeof(*n->props));
	const char *key;
	const json_t *v;
	json_object_foreach((json_t *)props, key, v) {
		bool resource = w == W_ROOT || n->embedded;
		enum where cw = resource && !strcmp(key, "metadata") ? W_METADATA : W_NORMAL;
		size_t len = path->len;
		buf_addf(path, ".properties[%s]", key);
		struct snode *sub = compile_node(c, v, path, depth + 1, cw, false);
		bool want_string = (resource && (!strcmp(key, "apiVersion") || !strcmp(key, "kind"))) ||
				   (w == W_METADATA && (!strcmp(key, "name") || !strcmp(key, "generateName")));
		if (sub && want_string && sub->type != ST_STRING)
			invalid(c, path, "type", json_object_get(v, "type"), "must be string");
		path_cut(path, len);
		if (sub) {
			n->props[n->nprops].name = xstrdup(key);
			n->props[n->nprops++].node = sub;
		}
		if (c->fatal)
			return;
	}
	qsort(n->props, n->nprops, sizeof(*n->props), prop_cmp);
}

static void compile_lists(struct cc *c, const json_t *j, struct snode *n, const struct buf *path)
{
	const json_t *lt = json_object_get(j, "x-kubernetes-list-type");
	n->map_keys = string_list(c, j, path, "x-kubernetes-list-map-keys", &n->nmap_keys);
	if (lt) {
		const char *s = json_string_value(lt);
		if (s && !strcmp(s, "atomic"))
			n->list_type = SL_ATOMIC;
		else if (s && !strcmp(s, "set"))
			n->list_type = SL_SET;
		else if (s && !strcmp(s, "map"))
			n->list_type = SL_MAP;
		else {
			static const char *const ok[] = { "atomic", "set", "map", NULL };
			char *f = at(path, "x-kubernetes-list-type");
			field_error_not_supported(c->errs, f, s ? s : "", ok);
			free(f);
			fail(c);
		}
		if (n->type != ST_ARRAY)
			forbid(c, path, "x-kubernetes-list-type", "must only be used if type is array");
	}
	if (n->nmap_keys && n->list_type != SL_MAP)
		forbid(c, path, "x-kubernetes-list-map-keys", "must be empty if x-kubernetes-list-type is not map");
	if (n->list_type == SL_SET && n->items && !scalar(n->items)) {
		const json_t *items = json_object_get(j, "items");
		const char *mt = json_string_value(json_object_get(items, "x-kubernetes-map-type"));
		bool atomic = (n->items->type == ST_OBJECT && mt && !strcmp(mt, "atomic")) ||
			      (n->items->type == ST_ARRAY && n->items->list_type == SL_ATOMIC);
		if (!atomic)
			invalid(c, path, "items.type", json_object_get(items, "type"),
				"must be a scalar type, or an atomic map or list, if x-kubernetes-list-type is set");
	}
	if (n->list_type == SL_MAP) {
		if (!n->nmap_keys)
			required(c, path, "x-kubernetes-list-map-keys",
				 "must not be empty if x-kubernetes-list-type is map");
		if (n->items && n->items->type != ST_OBJECT)
			invalid(c, path, "items.type", json_object_get(json_object_get(j, "items"), "type"),
				"must be object if x-kubernetes-list-type is map");
		for (size_t i = 0; n->items && n->items->type == ST_OBJECT && i < n->nmap_keys; i++) {
			struct snode *k = NULL;
			for (size_t p = 0; p < n->items->nprops; p++)
				if (!strcmp(n->items->props[p].name, n->map_keys[i]))
					k = n->items->props[p].node;
			bool req = false;
			for (size_t r = 0; r < n->items->nrequired; r++)
				req = req || !strcmp(n->items->required[r], n->map_keys[i]);
			char *f = xasprintf("x-kubernetes-list-map-keys[%zu]", i);
			json_t *kv = json_string(n->map_keys[i]);
			if (!k)
				invalid(c, path, f, kv, "must be a property of the items");
			else if (!scalar(k))
				invalid(c, path, f, kv, "must be a scalar property of the items");
			else if (!req && !k->deflt)
				invalid(c, path, f, kv, "must be a required or defaulted property of the items");
			json_decref(kv);
			free(f);
		}
	}
	const json_t *mt = json_object_get(j, "x-kubernetes-map-type");
	if (mt) {
		const char *s = json_string_value(mt);
		if (!s || (strcmp(s, "granular") && strcmp(s, "atomic"))) {
			static const char *const ok[] = { "granular", "atomic", NULL };
			char *f = at(path, "x-kubernetes-map-type");
			field_error_not_supported(c->errs, f, s ? s : "", ok);
			free(f);
			fail(c);
		} else if (n->type != ST_OBJECT) {
			forbid(c, path, "x-kubernetes-map-type", "must only be used if type is object");
		}
	}
}

static void compile_value_keywords(struct cc *c, const json_t *j, struct snode *n, const struct buf *path)
{
	n->minimum = get_number(c, j, path, "minimum");
	n->maximum = get_number(c, j, path, "maximum");
	n->multiple_of = get_number(c, j, path, "multipleOf");
	if (n->multiple_of && json_number_value(n->multiple_of) <= 0)
		invalid(c, path, "multipleOf", n->multiple_of, "must be greater than zero");
	n->excl_min = get_bool(c, j, path, "exclusiveMinimum");
	n->excl_max = get_bool(c, j, path, "exclusiveMaximum");
	n->min_length = get_count(c, j, path, "minLength");
	n->max_length = get_count(c, j, path, "maxLength");
	n->min_items = get_count(c, j, path, "minItems");
	n->max_items = get_count(c, j, path, "maxItems");
	n->min_props = get_count(c, j, path, "minProperties");
	n->max_props = get_count(c, j, path, "maxProperties");
	n->unique_items = get_bool(c, j, path, "uniqueItems");
	n->required = string_list(c, j, path, "required", &n->nrequired);
	const json_t *v = json_object_get(j, "enum");
	if (v && !json_is_array(v))
		invalid(c, path, "enum", v, "must be an array");
	else
		n->enum_vals = v;
	v = json_object_get(j, "format");
	if (v && !json_is_string(v))
		invalid(c, path, "format", v, "must be a string");
	n->format = json_string_value(v);
	v = json_object_get(j, "pattern");
	if (v) {
		const char *why = NULL;
		if (!json_is_string(v))
			invalid(c, path, "pattern", v, "must be a string");
		else if (crd_pattern_compile(json_string_value(v), &n->pattern, &why) < 0) {
			char *msg = xasprintf("must be a valid regular expression, but isn't: %s", why);
			invalid(c, path, "pattern", v, msg);
			free(msg);
		} else
			n->pattern_src = json_string_value(v);
	}
}

/* The default must survive pruning, defaulting and validation by its own node. */
static void compile_default(struct cc *c, const json_t *j, struct snode *n, const struct buf *path)
{
	const json_t *d = json_object_get(j, "default");
	if (!d)
		return;
	json_t *copy = json_deep_copy(d);
	struct field_errors tmp = { NULL };
	struct buf vp = BUF_INIT;
	buf_addf(&vp, "%s.default", buf_cstr(path));
	snode_prune(n, copy, &vp, NULL);
	snode_default(n, copy);
	snode_validate(n, copy, &vp, &tmp);
	buf_release(&vp);
	if (field_errors_any(&tmp)) {
		size_t i;
		json_t *e;
		if (!c->errs->causes)
			c->errs->causes = json_array();
		json_array_foreach(tmp.causes, i, e)
			if (json_array_size(c->errs->causes) < FIELD_ERRORS_MAX)
				json_array_append(c->errs->causes, e);
		fail(c);
		json_decref(copy);
	} else {
		n->deflt = copy;
	}
	field_errors_release(&tmp);
}

static enum snode_type parse_type(struct cc *c, const json_t *v, const struct buf *path)
{
	static const char *const names[] = { "object", "array", "string", "integer", "number", "boolean", NULL };
	const char *s = json_string_value(v);
	for (size_t i = 0; s && names[i]; i++)
		if (!strcmp(s, names[i]))
			return (enum snode_type)(ST_OBJECT + i);
	char *f = at(path, "type");
	field_error_not_supported(c->errs, f, s ? s : "", names);
	free(f);
	fail(c);
	return ST_ANY;
}

static struct snode *compile_node(struct cc *c, const json_t *j, struct buf *path, int depth, enum where w, bool ios)
{
	if (c->fatal)
		return NULL;
	if (++c->nodes > CRD_SCHEMA_MAX_NODES) {
		field_error_add(c->errs, "FieldValueTooMany", buf_cstr(path),
				"Too many: more than %d schema nodes: must have at most %d", CRD_SCHEMA_MAX_NODES,
				CRD_SCHEMA_MAX_NODES);
		c->fatal = true;
		fail(c);
		return NULL;
	}
	if (depth > CRD_SCHEMA_MAX_DEPTH) {
		field_error_add(c->errs, "FieldValueInvalid", buf_cstr(path),
				"Invalid value: %d: must be nested at most %d levels deep", depth,
				CRD_SCHEMA_MAX_DEPTH);
		c->fatal = true;
		fail(c);
		return NULL;
	}
	if (!json_is_object(j)) {
		field_error_add(c->errs, "FieldValueTypeInvalid", buf_cstr(path),
				"Invalid value: must be a schema object");
		fail(c);
		return NULL;
	}
	struct snode *n = xcalloc(1, sizeof(*n));
	n->is_root = w == W_ROOT;
	n->is_metadata = w == W_METADATA;
	static const char *const unsupported[] = { "$ref", "patternProperties", "definitions", "dependencies",
						   "additionalItems", "$schema", "id", NULL };
	for (size_t k = 0; unsupported[k]; k++)
		if (json_object_get(j, unsupported[k])) {
			char *why = xasprintf("%s is not supported", unsupported[k]);
			forbid(c, path, unsupported[k], why);
			free(why);
		}
	if (json_object_get(j, "x-kubernetes-validations"))
		forbid(c, path, "x-kubernetes-validations",
		       "CEL validation rules (x-kubernetes-validations) are not supported by this server");
	if (w == W_JUNCTOR)
		check_junctor(c, j, path, ios);
	if (w == W_METADATA)
		check_metadata(c, j, path);

	const json_t *type = json_object_get(j, "type");
	if (type)
		n->type = parse_type(c, type, path);
	n->nullable = get_bool(c, j, path, "nullable");
	n->int_or_string = get_bool(c, j, path, "x-kubernetes-int-or-string");
	n->embedded = get_bool(c, j, path, "x-kubernetes-embedded-resource");
	n->preserve_unknown = get_bool(c, j, path, "x-kubernetes-preserve-unknown-fields");
	const json_t *pu = json_object_get(j, "x-kubernetes-preserve-unknown-fields");
	if (json_is_false(pu))
		invalid(c, path, "x-kubernetes-preserve-unknown-fields", pu, "must be true or undefined");
	if (n->int_or_string && type)
		forbid(c, path, "type", "must be empty if x-kubernetes-int-or-string is true");
	if (!type && !n->int_or_string && !n->preserve_unknown && w != W_JUNCTOR)
		required(c, path, "type", "must not be empty for specified object fields");
	if (w == W_ROOT) {
		if (n->type != ST_OBJECT)
			invalid(c, path, "type", type, "must be object at the root");
		if (n->nullable)
			forbid(c, path, "nullable", "must be false at the root");
	}
	if (n->embedded && n->type != ST_OBJECT)
		invalid(c, path, "type", type, "must be object if x-kubernetes-embedded-resource is true");
	if (n->embedded && !json_object_get(j, "properties") && !n->preserve_unknown)
		required(c, path, "properties",
			 "must not be empty if x-kubernetes-embedded-resource is true without "
			 "x-kubernetes-preserve-unknown-fields");

	compile_props(c, j, n, path, depth, w);
	const json_t *ap = json_object_get(j, "additionalProperties");
	if (ap && json_object_get(j, "properties"))
		forbid(c, path, "additionalProperties", "additionalProperties and properties are mutual exclusive");
	else if (json_is_true(ap))
		n->additional_true = true;
	else if (json_is_false(ap))
		n->additional_false = true;
	else if (ap) {
		size_t len = path->len;
		buf_adds(path, ".additionalProperties");
		n->additional = compile_node(c, ap, path, depth + 1, W_NORMAL, false);
		path_cut(path, len);
	}
	if ((json_object_get(j, "properties") || ap) && n->type != ST_OBJECT &&
	    !(n->type == ST_ANY && n->preserve_unknown && !n->int_or_string) && w != W_JUNCTOR)
		forbid(c, path, json_object_get(j, "properties") ? "properties" : "additionalProperties",
		       "must only be used if type is object");

	const json_t *items = json_object_get(j, "items");
	if (json_is_array(items))
		forbid(c, path, "items", "items must be a schema object and not an array");
	else if (items) {
		size_t len = path->len;
		buf_adds(path, ".items");
		n->items = compile_node(c, items, path, depth + 1, W_NORMAL, false);
		path_cut(path, len);
		if (n->type != ST_ARRAY && !(n->type == ST_ANY && n->preserve_unknown) && w != W_JUNCTOR)
			forbid(c, path, "items", "must only be used if type is array");
	} else if (n->type == ST_ARRAY) {
		required(c, path, "items", "must be specified");
	}
	compile_junctors(c, j, n, path, depth, n->int_or_string || (w == W_JUNCTOR && ios));
	if (c->fatal)
		goto out;
	compile_value_keywords(c, j, n, path);
	compile_lists(c, j, n, path);
	if (w != W_JUNCTOR && w != W_METADATA)
		compile_default(c, j, n, path);
out:
	return n;
}

int crd_schema_compile(const json_t *openapi_v3, const char *base, struct crd_schema **ret, struct field_errors *errs)
{
	struct cc c = { .errs = errs };
	struct buf path = BUF_INIT;
	struct crd_schema *s = NULL;
	int rc = -1;
	*ret = NULL;
	if (!json_is_object(openapi_v3)) {
		field_error_required_why(errs, base, "must be a schema object");
		goto out;
	}
	size_t size = json_dumpb(openapi_v3, NULL, 0, JSON_COMPACT);
	if (size == 0 || size > CRD_SCHEMA_MAX_BYTES) {
		field_error_too_long(errs, base, CRD_SCHEMA_MAX_BYTES);
		goto out;
	}
	s = xcalloc(1, sizeof(*s));
	s->json = json_deep_copy(openapi_v3);
	buf_adds(&path, base ? base : "");
	s->root = compile_node(&c, s->json, &path, 1, W_ROOT, false);
	if (c.failed || !s->root)
		goto out;
	*ret = s;
	s = NULL;
	rc = 0;
out:
	crd_schema_free(s);
	buf_release(&path);
	return rc;
}

void crd_schema_free(struct crd_schema *s)
{
	if (!s)
		return;
	snode_free(s->root);
	json_decref(s->json);
	free(s);
}

const json_t *crd_schema_json(const struct crd_schema *s)
{
	return s ? s->json : NULL;
}

static bool key_needs_brackets(const char *key)
{
	return !*key || strpbrk(key, ".[]") != NULL;
}

/* The path grows on every node a walk visits, errors or not: no printf here. */
size_t path_push_key(struct buf *p, const char *key)
{
	size_t len = p->len;
	if (key_needs_brackets(key)) {
		buf_addch(p, '[');
		buf_adds(p, key);
		buf_addch(p, ']');
	} else {
		if (p->len)
			buf_addch(p, '.');
		buf_adds(p, key);
	}
	return len;
}

size_t path_push_index(struct buf *p, size_t i)
{
	size_t len = p->len;
	char digits[24];
	size_t n = 0;
	do {
		digits[n++] = (char)('0' + i % 10);
		i /= 10;
	} while (i);
	buf_addch(p, '[');
	while (n)
		buf_addch(p, digits[--n]);
	buf_addch(p, ']');
	return len;
}

void path_cut(struct buf *p, size_t len)
{
	p->len = len;
	if (p->ptr)
		p->ptr[len] = '\0';
}
