/* Create, update and delete: the generic store, over etcd transactions. */
#include "internal.h"
#include "ursa/crd.h"
#include "ursa/schema.h"
#include "ursa/jsonutil.h"
#include "ursa/log.h"
#include "ursa/patch.h"
#include "ursa/proto.h"
#include "ursa/timeutil.h"
#include "ursa/xalloc.h"
#include <openssl/rand.h>
#include <stdlib.h>
#include <string.h>

#define UPDATE_RETRIES 16

void api_version_of(const struct api_resource *r, struct buf *out)
{
	if (r->group[0])
		buf_addf(out, "%s/%s", r->group, r->version);
	else
		buf_adds(out, r->version);
}

json_t *parse_body(struct req *q)
{
	size_t len;
	const char *body = http_body(q->http, &len);
	struct buf err = BUF_INIT;
	json_t *obj = NULL;
	const char *ct = http_header(q->http, "Content-Type");
	if (ct && strncmp(ct, "application/vnd.kubernetes.protobuf", 35) == 0) {
		int rc = k8s_protobuf_to_json(body, len, &obj, &err);
		if (rc < 0)
			reply_status(q, rc, "%s", buf_cstr(&err));
		goto out;
	}
	if (ct && strncmp(ct, "application/json", 16) != 0 && strncmp(ct, "application/yaml", 16) != 0 &&
	    strncmp(ct, "*/*", 3) != 0 && strncmp(ct, "text/plain", 10) != 0) {
		reply_status(q, E_MEDIA_TYPE, "the body of the request was in an unknown format - accepted media types include: application/json, application/yaml, application/vnd.kubernetes.protobuf");
		goto out;
	}
	if (len == 0) {
		reply_status(q, E_BAD_REQUEST, "the request body is empty");
		goto out;
	}
	if (ct && strncmp(ct, "application/yaml", 16) == 0)
		yaml_to_json(body, len, MAX_JSON_DEPTH, &obj, &err);
	else if (!(obj = json_parse_fast(body, len, MAX_JSON_DEPTH))) /* the same tree, or NULL */
		obj = fieldval_parse_json(q, body, len, &err);
	if (!obj) {
		reply_status(q, E_BAD_REQUEST, "the object provided is not valid JSON: %s", buf_cstr(&err));
		goto out;
	}
	if (!json_is_object(obj)) {
		reply_status(q, E_BAD_REQUEST, "the object provided is not a JSON object");
		json_decref(obj);
		obj = NULL;
	}
out:
	buf_release(&err);
	return obj;
}

int check_type_meta(struct req *q, json_t *obj, const char *want_kind, const char *want_api_version)
{
	json_t *av = json_object_get(obj, "apiVersion"), *k = json_object_get(obj, "kind");
	if ((av && !json_is_string(av)) || (k && !json_is_string(k))) {
		reply_status(q, E_BAD_REQUEST, "apiVersion and kind must be strings");
		return -1;
	}
	if (av && json_string_length(av) && strcmp(json_string_value(av), want_api_version) != 0) {
		reply_status(q, E_BAD_REQUEST, "the API version in the data (%s) does not match the expected API version (%s)",
			     json_string_value(av), want_api_version);
		return -1;
	}
	if (k && json_string_length(k) && strcmp(json_string_value(k), want_kind) != 0) {
		reply_status(q, E_BAD_REQUEST, "the kind in the data (%s) does not match the expected kind (%s)",
			     json_string_value(k), want_kind);
		return -1;
	}
	json_object_set_new(obj, "apiVersion", json_string(want_api_version));
	json_object_set_new(obj, "kind", json_string(want_kind));
	return 0;
}

/* n random bytes (n <= RANDOM_CHUNK) from a per-thread block filled by RAND_bytes: OpenSSL 3's
 * RAND_bytes costs several µs a call (provider lookup, locks), and every create wants 16 bytes. */
#define RANDOM_CHUNK 1024
static void random_bytes(unsigned char *out, size_t n)
{
	static __thread unsigned char block[RANDOM_CHUNK];
	static __thread size_t left;
	if (left < n) {
		if (RAND_bytes(block, sizeof(block)) != 1)
			abort(); /* as xmalloc does: no uid may repeat */
		left = sizeof(block);
	}
	memcpy(out, block + sizeof(block) - left, n);
	memset(block + sizeof(block) - left, 0, n); /* bytes handed out are not kept */
	left -= n;
}

static void random_suffix(char *out, size_t n)
{
	static const char alphabet[] = "bcdfghjklmnpqrstvwxz2456789";
	unsigned char rnd[16];
	random_bytes(rnd, sizeof(rnd));
	for (size_t i = 0; i < n && i < sizeof(rnd); i++)
		out[i] = alphabet[rnd[i] % (sizeof(alphabet) - 1)];
	out[n] = '\0';
}

void uid_format(const unsigned char b[16], char out[37])
{
	static const char hex[] = "0123456789abcdef";
	char *p = out;
	for (int i = 0; i < 16; i++) {
		if (i == 4 || i == 6 || i == 8 || i == 10)
			*p++ = '-';
		*p++ = hex[b[i] >> 4];
		*p++ = hex[b[i] & 15];
	}
	*p = '\0';
}

/* A version 4 UUID. */
static void new_uid(char out[37])
{
	unsigned char b[16];
	random_bytes(b, sizeof(b));
	b[6] = (b[6] & 0x0f) | 0x40;
	b[8] = (b[8] & 0x3f) | 0x80;
	uid_format(b, out);
}

static void set_now(json_t *meta, const char *field)
{
	struct buf t = BUF_INIT;
	rfc3339_add(&t, time(NULL));
	json_object_set_new(meta, field, json_string(buf_cstr(&t)));
	buf_release(&t);
}

/* Replies 422 with the causes in errs (consumed). */
void reply_invalid(struct req *q, const json_t *obj, struct field_errors *errs)
{
	const char *name = json_path_str(obj, "metadata.name");
	struct buf msg = BUF_INIT;
	/* the kind qualified by its group, as Kubernetes names it: Deployment.apps "web" is invalid */
	buf_addf(&msg, "%s%s%s \"%s\" is invalid: ", q->res->r->kind, q->res->r->group[0] ? "." : "", q->res->r->group,
		 name ? name : "");
	size_t n = json_array_size(errs->causes);
	if (n > 1)
		buf_addch(&msg, '[');
	for (size_t i = 0; i < n; i++) {
		json_t *c = json_array_get(errs->causes, i);
		buf_addf(&msg, "%s%s: %s", i ? ", " : "", json_str(c, "field") ? json_str(c, "field") : "",
			 json_str(c, "message") ? json_str(c, "message") : "");
	}
	if (n > 1)
		buf_addch(&msg, ']');
	json_t *causes = errs->causes;
	errs->causes = NULL;
	json_t *st = status_object(E_INVALID, buf_cstr(&msg), name, q->res->r->kind, causes);
	if (q->res->r->group[0])
		json_object_set_new(json_object_get(st, "details"), "group", json_string(q->res->r->group));
	reply_json(q, 422, st);
	json_decref(st);
	buf_release(&msg);
}

/* Subresource writes (status, binding, scale) are checked by their own code: the strategy
 * validates what clients write through the main resource (e.g. a pod's spec may not change
 * there, while binding sets spec.nodeName). */
static int validate_mode(struct req *q, json_t *obj, const json_t *old, bool strategy);

static int validate(struct req *q, json_t *obj, const json_t *old)
{
	return validate_mode(q, obj, old, true);
}

static int validate_mode(struct req *q, json_t *obj, const json_t *old, bool strategy)
{
	struct field_errors errs = { 0 };
	validate_object_meta(q->res->r, obj, &errs);
	if (strategy && q->res->r->strategy->validate)
		q->res->r->strategy->validate(obj, old, &errs);
	if (q->res->r->crd_version && q->res->r->crd_version->schema) /* a custom resource: the whole object */
		crd_schema_validate(q->res->r->crd_version->schema, obj, &errs);
	if (!field_errors_any(&errs))
		return 0;
	reply_invalid(q, obj, &errs);
	field_errors_release(&errs);
	return -1;
}

static int check_scope_fields(struct req *q, json_t *meta)
{
	const struct api_resource *r = q->res->r;
	const char *t = json_str(meta, "tenant");
	const char *want_tenant = r->scope == SCOPE_CLUSTER ? TENANT_SYSTEM : q->tenant;
	if (t && *t && strcmp(t, want_tenant) != 0) {
		reply_status(q, E_BAD_REQUEST, "the tenant of the object (%s) does not match the tenant on the request (%s)",
			     t, want_tenant);
		return -1;
	}
	json_object_set_new(meta, "tenant", json_string(want_tenant));
	if (r->scope == SCOPE_NAMESPACE) {
		const char *ns = json_str(meta, "namespace");
		if (!q->ns) {
			reply_status(q, E_NOT_FOUND, "the server could not find the requested resource (a namespace is required)");
			return -1;
		}
		if (ns && *ns && strcmp(ns, q->ns) != 0) {
			reply_status(q, E_BAD_REQUEST,
				     "the namespace of the provided object does not match the namespace sent on the request");
			return -1;
		}
		json_object_set_new(meta, "namespace", json_string(q->ns));
	} else {
		json_object_del(meta, "namespace");
	}
	return 0;
}

struct served *served_by_plural(struct apiserver *s, const char *plural)
{
	for (size_t i = 0; i < s->nres; i++)
		if (strcmp(s->res[i].r->plural, plural) == 0)
			return &s->res[i];
	return NULL;
}

const char *cached_phase(const struct served *sv, const struct cobj *o)
{
	const struct api_strategy *st = sv->r->strategy;
	for (size_t i = 0; st && st->fields && i < st->nfields && i < o->nfields; i++)
		if (strcmp(st->fields[i].path, "status.phase") == 0 && !st->fields[i].absent)
			return o->fields[i];
	return NULL;
}

int lookup_phase(struct apiserver *s, const char *plural, const char *tenant, const char *name,
			char **ret_phase)
{
	struct served *sv = served_by_plural(s, plural);
	if (!sv)
		return 0;
	char *key = store_key(sv, tenant, NULL, name);
	json_t *obj = NULL;
	struct cobj *o = wcache_get(sv->cache, key);
	const char *cached = o ? cached_phase(sv, o) : NULL;
	int rc = 0;
	if (cached) /* every create checks its namespace: no parse */
		*ret_phase = xstrdup(cached);
	else if (o)
		obj = json_loadb(o->json, o->json_len, 0, NULL);
	else
		rc = store_get(s, key, &obj, NULL);
	cobj_unref(o);
	free(key);
	if (rc == 0 && !cached) {
		const char *ph = json_path_str(obj, "status.phase");
		*ret_phase = xstrdup(ph ? ph : "");
	}
	json_decref(obj);
	return rc;
}

/* Namespaced objects need a live namespace; tenant-scoped ones a live tenant. */
static int check_parents(struct req *q)
{
	const struct api_resource *r = q->res->r;
	char *phase = NULL;
	int rc = 0;
	if (r->scope == SCOPE_NAMESPACE) {
		rc = lookup_phase(q->s, "namespaces", q->tenant, q->ns, &phase);
		if (rc == E_NOT_FOUND) {
			reply_status_details(q, E_NOT_FOUND, q->ns, NULL, "namespaces \"%s\" not found", q->ns);
		} else if (rc == 0 && phase && strcmp(phase, "Terminating") == 0) {
			reply_status(q, E_FORBIDDEN, "%s \"%s\" is forbidden: unable to create new content in namespace %s because it is being terminated",
				     r->plural, "", q->ns);
			rc = E_FORBIDDEN;
		}
	} else if (r->scope == SCOPE_TENANT && strcmp(q->tenant, TENANT_SYSTEM) != 0) {
		struct served *tv = served_by_plural(q->s, "tenants");
		if (tv) {
			rc = lookup_phase(q->s, "tenants", "", q->tenant, &phase);
			if (rc == E_NOT_FOUND)
				reply_status_details(q, E_NOT_FOUND, q->tenant, NULL, "tenants \"%s\" not found", q->tenant);
			else if (rc == 0 && phase && strcmp(phase, "Terminating") == 0) {
				reply_status(q, E_FORBIDDEN, "unable to create new content in tenant %s because it is being terminated",
					     q->tenant);
				rc = E_FORBIDDEN;
			}
		}
	}
	if (rc < 0 && rc != E_NOT_FOUND && rc != E_FORBIDDEN)
		reply_status(q, rc, "storage error while checking the parent object");
	free(phase);
	return rc;
}

/* A custom resource, before validation: unknown fields pruned (always, as Kubernetes does),
 * then the schema's defaults. */
static void custom_prune_default(struct req *q, json_t *obj)
{
	const struct api_resource *r = q->res->r;
	if (!r->crd_version || !r->crd_version->schema)
		return;
	if (q->cr_pruned != obj) /* field validation did it for the client's object already */
		crd_prune(r, obj, NULL);
	crd_schema_default(r->crd_version->schema, obj);
}

int prepare_new_object(struct req *q, json_t *obj)
{
	const struct api_resource *r = q->res->r;
	json_t *meta = json_object_get(obj, "metadata");
	if (meta && !json_is_object(meta)) {
		reply_status(q, E_BAD_REQUEST, "metadata must be an object");
		return -1;
	}
	meta = json_obj_child(obj, "metadata");
	const char *name = json_str(meta, "name");
	const char *gen = json_str(meta, "generateName");
	if ((!name || !*name) && gen && *gen) {
		char sfx[8];
		random_suffix(sfx, 5);
		char *n = xasprintf("%.*s%s", (int)(strlen(gen) > 58 ? 58 : strlen(gen)), gen, sfx);
		json_object_set_new(meta, "name", json_string(n));
		free(n);
	}
	if (check_scope_fields(q, meta) < 0)
		return -1;
	static const char *const server_owned[] = { "resourceVersion", "deletionTimestamp", "deletionGracePeriodSeconds",
						    "selfLink", "managedFields", "uid", "creationTimestamp", "generation" };
	for (size_t i = 0; i < sizeof(server_owned) / sizeof(server_owned[0]); i++)
		json_object_del(meta, server_owned[i]);
	char uid[37];
	new_uid(uid);
	json_object_set_new(meta, "uid", json_string(uid));
	json_object_set_new(meta, "hashKey", json_integer(hash_key_of_uid(uid)));
	set_now(meta, "creationTimestamp");
	if (r->has_spec_generation)
		json_object_set_new(meta, "generation", json_integer(1));
	if (r->strategy->defaults)
		r->strategy->defaults(obj);
	if (r->strategy->prepare_create)
		r->strategy->prepare_create(obj);
	if (r->crd_version && r->crd_version->status)
		json_object_del(obj, "status"); /* written through the status subresource only */
	custom_prune_default(q, obj);
	return validate(q, obj, NULL);
}

static void reply_storage_error(struct req *q, int rc, const char *name)
{
	if (rc == E_NOT_FOUND)
		reply_not_found(q, name);
	else if (rc == E_ALREADY_EXISTS)
		reply_status_details(q, rc, name, NULL, "%s \"%s\" already exists", q->res->r->plural, name);
	else if (rc == E_CONFLICT)
		reply_status_details(q, rc, name, NULL,
				     "Operation cannot be fulfilled on %s \"%s\": the object has been modified; please apply your changes to the latest version and try again",
				     q->res->r->plural, name);
	else if (rc == E_TOO_LARGE)
		reply_status(q, E_TOO_LARGE, "the object is too large to store");
	else if (rc == E_UNAVAILABLE)
		reply_status(q, E_UNAVAILABLE, "storage is unavailable; please retry");
	else
		reply_status(q, rc, "storage error");
}

static bool dry_run(struct req *q)
{
	const char *d = http_query(q->http, "dryRun");
	return d && *d;
}

static void reply_written(struct req *q, int code, const json_t *obj, const struct buf *val, int64_t rev);

void note_written(struct served *sv, int64_t rev)
{
	int64_t cur = atomic_load(&sv->written_rev);
	while (rev > cur && !atomic_compare_exchange_weak(&sv->written_rev, &cur, rev))
		;
}

void do_create(struct req *q, json_t *obj)
{
	struct buf av = BUF_INIT, val = BUF_INIT;
	char *key = NULL;
	api_version_of(q->res->r, &av);
	if (check_type_meta(q, obj, q->res->r->kind, buf_cstr(&av)) < 0 || prepare_new_object(q, obj) < 0)
		goto out;
	crd_set_api_version(q->res, obj, true); /* stored in the storage version (conversion None) */
	const char *name = json_path_str(obj, "metadata.name");
	if (q->path.name && strcmp(q->path.name, name) != 0) {
		reply_status(q, E_BAD_REQUEST, "the name of the object (%s) does not match the name on the URL (%s)", name,
			     q->path.name);
		goto out;
	}
	if (check_parents(q) < 0 || admit(q, obj, NULL) < 0)
		goto out;
	if (dry_run(q)) {
		quota_release(q, obj);
		svcip_release(q, obj);
		reply_json(q, 201, obj);
		goto out;
	}
	key = store_key(q->res, q->tenant, q->ns, name);
	store_encode_expect(q->res, key, obj, &val);
	int64_t rev = 0, t0 = mono_us();
	int rc = etcd_create(q->s->etcd, key, val.ptr, val.len, 0, &rev);
	metrics_etcd(q->s->metrics, "create", mono_us() - t0);
	if (rc < 0) {
		wcache_expect_cancel(q->res->cache, key, obj);
		quota_release(q, obj);
		svcip_release(q, obj);
		reply_storage_error(q, rc, name);
		goto out;
	}
	note_written(q->res, rev);
	reply_written(q, 201, obj, &val, rev);
	if (q->s->o.on_created)
		q->s->o.on_created(q->s, q->res->r, obj);
out:
	free(key);
	buf_release(&av);
	buf_release(&val);
}

/* Unknown fields of a client's object (field validation, fieldval.c): 0 or replied. */
int check_fields(struct req *q, json_t *obj)
{
	struct buf av = BUF_INIT;
	api_version_of(q->res->r, &av);
	int rc = fieldval_check(q, obj, buf_cstr(&av), q->res->r->kind, true);
	buf_release(&av);
	return rc;
}

void handle_create(struct req *q)
{
	json_t *obj = parse_body(q);
	if (!obj)
		return;
	if (check_fields(q, obj) < 0)
		goto out;
	if (node_owns(q, obj))
		do_create(q, obj);
	else
		reply_node_not_owner(q, json_path_str(obj, "metadata.name"));
out:
	json_decref(obj);
}

/* Carries server-owned metadata over from old and checks immutables. 0 or replies. */
static int carry_meta(struct req *q, const json_t *old, json_t *obj)
{
	json_t *om = json_object_get(old, "metadata");
	json_t *nm = json_object_get(obj, "metadata");
	if (!json_is_object(nm)) {
		reply_status(q, E_BAD_REQUEST, "metadata must be an object");
		return -1;
	}
	const char *nt = json_str(nm, "tenant");
	if (nt && *nt && strcmp(nt, json_str(om, "tenant") ? json_str(om, "tenant") : "") != 0) {
		struct field_errors errs = { 0 };
		field_error_add(&errs, "FieldValueInvalid", "metadata.tenant", "Invalid value: \"%s\": field is immutable", nt);
		reply_invalid(q, old, &errs);
		return -1;
	}
	const char *nn = json_str(nm, "name");
	if (nn && strcmp(nn, json_path_str(old, "metadata.name")) != 0) {
		reply_status(q, E_BAD_REQUEST, "the name of the object (%s) does not match the name on the URL (%s)", nn,
			     json_path_str(old, "metadata.name"));
		return -1;
	}
	const char *nns = json_str(nm, "namespace");
	const char *ons = json_str(om, "namespace");
	if (nns && *nns && ons && strcmp(nns, ons) != 0) {
		reply_status(q, E_BAD_REQUEST, "the namespace of the provided object does not match the namespace sent on the request");
		return -1;
	}
	static const char *const keep[] = { "name", "namespace", "tenant", "uid", "hashKey", "creationTimestamp",
					    "deletionTimestamp", "deletionGracePeriodSeconds", "generation" };
	for (size_t i = 0; i < sizeof(keep) / sizeof(keep[0]); i++) {
		json_t *v = json_object_get(om, keep[i]);
		if (v)
			json_object_set(nm, keep[i], v);
		else
			json_object_del(nm, keep[i]);
	}
	json_object_del(nm, "managedFields");
	return 0;
}

/* A custom resource's generation follows every change but metadata and status. */
static bool custom_content_equal(const json_t *a, const json_t *b)
{
	json_t *ca = json_copy((json_t *)a), *cb = json_copy((json_t *)b);
	static const char *const skip[] = { "metadata", "status", "apiVersion" };
	for (size_t i = 0; i < 3; i++) {
		json_object_del(ca, skip[i]);
		json_object_del(cb, skip[i]);
	}
	bool eq = json_equal(ca, cb);
	json_decref(ca);
	json_decref(cb);
	return eq;
}

static void bump_generation(const struct api_resource *r, const json_t *old, json_t *obj)
{
	if (!r->has_spec_generation)
		return;
	if (r->crd ? custom_content_equal(old, obj)
		   : json_equal(json_object_get(old, "spec"), json_object_get(obj, "spec")))
		return;
	json_t *nm = json_object_get(obj, "metadata");
	json_int_t g = json_integer_value(json_object_get(nm, "generation"));
	json_object_set_new(nm, "generation", json_integer(g + 1));
}

/* Finalizers still holding obj: metadata.finalizers, and for namespaces and tenants also
 * spec.finalizers (the "kubernetes" finalizer their controllers remove once empty). */
static size_t pending_finalizers(const json_t *obj)
{
	size_t n = json_array_size(json_path(obj, "metadata.finalizers"));
	const char *kind = json_str(obj, "kind");
	if (kind && (strcmp(kind, "Namespace") == 0 || strcmp(kind, "Tenant") == 0))
		n += json_array_size(json_path(obj, "spec.finalizers"));
	return n;
}

static bool finalized(const json_t *obj)
{
	return json_path(obj, "metadata.deletionTimestamp") && pending_finalizers(obj) == 0;
}

/* The watch cache's copy of key: true with *ret (new reference, resourceVersion set). The tree
 * of a recent write is shared (mutators change copies only): *ret is then a shallow copy with
 * metadata of its own. */
static bool read_cached(struct req *q, const char *key, json_t **ret, int64_t *ret_rev)
{
	json_t *tree = wcache_get_tree(q->res->cache, key, ret_rev);
	if (tree) {
		*ret = json_copy(tree);
		json_t *meta = json_copy(json_object_get(tree, "metadata"));
		json_object_set_new(*ret, "metadata", meta ? meta : json_object());
		set_resource_version(*ret, *ret_rev);
		json_decref(tree);
		return true;
	}
	struct cobj *o = wcache_get(q->res->cache, key);
	if (!o)
		return false;
	*ret = json_loadb(o->json, o->json_len, 0, NULL);
	*ret_rev = o->rv;
	cobj_unref(o);
	return *ret != NULL;
}

static void reply_updated(struct req *q, json_t *obj)
{
	int code = q->success_code ? q->success_code : 200;
	if (crd_rewrites(q->res))
		crd_set_api_version(q->res, obj, false);
	if (q->present) {
		json_t *p = q->present(q, obj);
		reply_json(q, code, p);
		json_decref(p);
	} else {
		reply_json(q, code, obj);
	}
}

/* Replies code with obj (as stored: no resourceVersion, encoded as val) at rev, leaving obj as
 * it is: the cache may be reading it (a write hint). The reply is val with the revision spliced
 * in, as the cache will hold it; a presenter (or text that cannot take the splice) gets a
 * shallow copy with metadata of its own. */
static void reply_written(struct req *q, int code, const json_t *obj, const struct buf *val, int64_t rev)
{
	struct buf out = BUF_INIT;
	if (!q->present && !crd_rewrites(q->res) && cobj_splice_rv(val->ptr, val->len, rev, &out)) {
		reply_buf(q, code, &out);
		return;
	}
	json_t *copy = json_copy((json_t *)obj), *meta = json_copy(json_object_get(obj, "metadata"));
	json_object_set_new(copy, "metadata", meta ? meta : json_object());
	set_resource_version(copy, rev);
	if (crd_rewrites(q->res))
		crd_set_api_version(q->res, copy, false);
	json_t *p = q->present ? q->present(q, copy) : json_incref(copy);
	reply_json(q, code, p);
	json_decref(p);
	json_decref(copy);
}

int do_update(struct req *q, const char *name, enum update_mode mode, mutate_fn fn, void *ud, bool create_if_missing,
	      json_t *create_obj)
{
	const struct api_resource *r = q->res->r;
	char *key = store_key(q->res, q->tenant, q->ns, name);
	json_t *cur = NULL, *old = NULL, *obj = NULL;
	struct buf val = BUF_INIT;
	int rc = E_CONFLICT;
	bool try_cache = !dry_run(q);
	for (int attempt = 0; attempt < UPDATE_RETRIES && rc == E_CONFLICT; attempt++) {
		json_decref(cur), json_decref(old), json_decref(obj);
		cur = old = obj = NULL;
		int64_t rev;
		bool cached = try_cache && read_cached(q, key, &cur, &rev);
		try_cache = false;
		rc = cached ? 0 : store_get(q->s, key, &cur, &rev);
		if (rc == E_NOT_FOUND && create_if_missing) {
			do_create(q, create_obj);
			rc = 0;
			goto out;
		}
		if (rc < 0) {
			reply_storage_error(q, rc, name);
			goto out;
		}
		old = json_incref(cur); /* mutators leave cur alone (const) */
		if (!node_owns(q, cur)) {
			if (cached)
				goto stale; /* judged on etcd's copy: the cache's may not show the binding yet */
			reply_node_not_owner(q, json_path_str(cur, "metadata.name"));
			rc = E_FORBIDDEN;
			goto out;
		}
		if ((rc = fn(q, cur, ud, &obj)) < 0) {
			if (cached)
				goto stale;
			goto out;
		}
		const char *want = json_path_str(obj, "metadata.resourceVersion");
		char revs[32];
		snprintf(revs, sizeof(revs), "%lld", (long long)rv_show(rev));
		if (want && *want && strcmp(want, revs) != 0 && cached) {
			rc = E_CONFLICT; /* the cache may lag: ask etcd */
			continue;
		}
		if (want && *want && strcmp(want, revs) != 0) {
			rc = E_CONFLICT;
			reply_storage_error(q, rc, name);
			goto out;
		}
		if (carry_meta(q, old, obj) < 0) {
			rc = E_BAD_REQUEST;
			if (cached)
				goto stale;
			goto out;
		}
		if (mode == UPDATE_MAIN && (r->subresources & SUB_STATUS)) {
			json_t *st = json_object_get(old, "status");
			if (st) /* a copy: old may be a cached tree, and defaults fill in status */
				json_object_set_new(obj, "status", json_deep_copy(st));
			else
				json_object_del(obj, "status");
		}
		if (mode == UPDATE_MAIN && r->strategy->defaults)
			r->strategy->defaults(obj);
		custom_prune_default(q, obj);
		crd_set_api_version(q->res, obj, true);
		bump_generation(r, old, obj);
		if (validate_mode(q, obj, old, mode == UPDATE_MAIN) < 0) {
			rc = E_INVALID;
			if (cached)
				goto stale;
			goto out;
		}
		if (mode == UPDATE_MAIN && admit(q, obj, old) < 0) {
			rc = E_FORBIDDEN;
			if (cached)
				goto stale;
			goto out;
		}
		if (dry_run(q)) {
			reply_updated(q, obj);
			rc = 0;
			goto out;
		}
		int64_t newrev = 0, t0 = mono_us();
		bool deleting = finalized(obj);
		if (deleting) {
			rc = etcd_delete(q->s->etcd, key, rev, &newrev, NULL);
		} else {
			buf_reset(&val);
			store_encode_expect(q->res, key, obj, &val);
			rc = etcd_update(q->s->etcd, key, val.ptr, val.len, rev, &newrev, NULL);
			if (rc < 0)
				wcache_expect_cancel(q->res->cache, key, obj);
		}
		metrics_etcd(q->s->metrics, "update", mono_us() - t0);
		if (rc >= 0)
			note_written(q->res, newrev);
		if (rc == E_NOT_FOUND && cached)
			rc = E_CONFLICT; /* deleted since the cache's copy: read etcd (apply creates) */
		if (rc == E_CONFLICT && q->rv_precondition && !cached)
			break;
		if (rc == 0 && deleting) {
			set_resource_version(obj, newrev);
			reply_updated(q, obj);
		} else if (rc == 0) {
			reply_written(q, q->success_code ? q->success_code : 200, obj, &val, newrev);
		}
		continue;
	stale:
		/* Judged on the cache's copy, which may lag: judge again on etcd's (the reply set
		 * meanwhile is replaced by the next one). */
		rc = E_CONFLICT;
	}
	if (rc < 0)
		reply_storage_error(q, rc, name);
out:
	json_decref(cur), json_decref(old), json_decref(obj);
	buf_release(&val);
	free(key);
	return rc;
}

/* PUT: replace with the client's object. */
static int mutate_replace(struct req *q, const json_t *cur, void *ud, json_t **ret_new)
{
	json_t *obj = ud;
	struct buf av = BUF_INIT;
	api_version_of(q->res->r, &av);
	int rc = check_type_meta(q, obj, q->res->r->kind, buf_cstr(&av));
	buf_release(&av);
	if (rc < 0)
		return E_BAD_REQUEST;
	*ret_new = json_incref(obj);
	return 0;
}

void handle_update(struct req *q)
{
	json_t *obj = parse_body(q);
	if (!obj)
		return;
	const char *rv = json_path_str(obj, "metadata.resourceVersion");
	q->rv_precondition = rv && *rv;
	if (check_fields(q, obj) == 0)
		do_update(q, q->path.name, UPDATE_MAIN, mutate_replace, obj, false, NULL);
	json_decref(obj);
}

/* DELETE ------------------------------------------------------------------------------------- */
struct delete_opts {
	long long grace;    /* -1: unset */
	const char *propagation;
	const char *pre_uid, *pre_rv;
	json_t *body;
};

static int parse_delete_opts(struct req *q, struct delete_opts *d)
{
	d->grace = -1;
	size_t len;
	http_body(q->http, &len);
	if (len) {
		d->body = parse_body(q);
		if (!d->body)
			return -1;
		json_t *g = json_object_get(d->body, "gracePeriodSeconds");
		if (json_is_integer(g))
			d->grace = json_integer_value(g);
		d->propagation = json_str(d->body, "propagationPolicy");
		d->pre_uid = json_path_str(d->body, "preconditions.uid");
		d->pre_rv = json_path_str(d->body, "preconditions.resourceVersion");
		if (json_is_true(json_object_get(d->body, "orphanDependents")))
			d->propagation = "Orphan";
	}
	const char *gq = http_query(q->http, "gracePeriodSeconds");
	long long gv;
	if (gq && parse_int64(gq, &gv) == 0)
		d->grace = gv;
	const char *pq = http_query(q->http, "propagationPolicy");
	if (pq)
		d->propagation = pq;
	if (d->propagation && strcmp(d->propagation, "Orphan") != 0 && strcmp(d->propagation, "Foreground") != 0 &&
	    strcmp(d->propagation, "Background") != 0) {
		reply_status(q, E_BAD_REQUEST, "propagationPolicy must be Orphan, Foreground or Background");
		return -1;
	}
	return 0;
}

static void add_finalizer(json_t *meta, const char *f)
{
	json_t *fs = json_object_get(meta, "finalizers");
	if (!json_is_array(fs)) {
		fs = json_array();
		json_object_set_new(meta, "finalizers", fs);
	}
	size_t i;
	json_t *v;
	json_array_foreach(fs, i, v) if (json_is_string(v) && strcmp(json_string_value(v), f) == 0) return;
	json_array_append_new(fs, json_string(f));
}

/* Decides how an object goes away: now, or marked (finalizers, graceful pod termination). */
static bool mark_for_deletion(struct req *q, json_t *obj, const struct delete_opts *d)
{
	const struct api_resource *r = q->res->r;
	json_t *meta = json_object_get(obj, "metadata");
	bool already = json_object_get(meta, "deletionTimestamp") != NULL;
	long long grace = 0;
	if (strcmp(r->plural, "pods") == 0 && json_path_str(obj, "spec.nodeName")) {
		json_t *tg = json_path(obj, "spec.terminationGracePeriodSeconds");
		grace = d->grace >= 0 ? d->grace : (json_is_integer(tg) ? json_integer_value(tg) : 30);
	}
	if (d->propagation && strcmp(d->propagation, "Foreground") == 0)
		add_finalizer(meta, "foregroundDeletion");
	else if (d->propagation && strcmp(d->propagation, "Orphan") == 0)
		add_finalizer(meta, "orphan");
	bool has_fin = pending_finalizers(obj) > 0;
	if (!has_fin && grace == 0)
		return false;
	if (!already) {
		time_t now = time(NULL) + (time_t)grace;
		struct buf t = BUF_INIT;
		rfc3339_add(&t, now);
		json_object_set_new(meta, "deletionTimestamp", json_string(buf_cstr(&t)));
		json_object_set_new(meta, "deletionGracePeriodSeconds", json_integer(grace));
		buf_release(&t);
		if (strcmp(r->plural, "namespaces") == 0 || strcmp(r->plural, "tenants") == 0)
			json_object_set_new(json_obj_child(obj, "status"), "phase", json_string("Terminating"));
	}
	return true;
}

/* One attempt: 0 with *ret_obj (the object as deleted or as marked), or an E_* code.
 * E_CONFLICT with msg set is a failed precondition; without msg a lost race (retry). */
static int delete_once(struct req *q, const char *key, const struct delete_opts *d, json_t **ret_obj,
		       struct buf *msg)
{
	json_t *cur = NULL;
	int64_t rev, newrev = 0;
	struct buf val = BUF_INIT;
	int rc = store_get(q->s, key, &cur, &rev);
	if (rc < 0)
		goto out;
	if (!node_owns(q, cur)) {
		node_not_owner(q, json_path_str(cur, "metadata.name"), msg);
		rc = E_FORBIDDEN;
		goto out;
	}
	const char *uid = json_path_str(cur, "metadata.uid");
	char revs[32];
	snprintf(revs, sizeof(revs), "%lld", (long long)rv_show(rev));
	if (d->pre_uid && strcmp(d->pre_uid, uid ? uid : "") != 0) {
		buf_addf(msg, "Precondition failed: UID in precondition: %s, UID in object meta: %s", d->pre_uid,
			 uid ? uid : "");
		rc = E_CONFLICT;
		goto out;
	}
	if (d->pre_rv && strcmp(d->pre_rv, revs) != 0) {
		buf_addf(msg, "Precondition failed: ResourceVersion in precondition: %s, ResourceVersion in object meta: %s",
			 d->pre_rv, revs);
		rc = E_CONFLICT;
		goto out;
	}
	if (!dry_run(q)) {
		int64_t t0 = mono_us();
		if (mark_for_deletion(q, cur, d)) {
			store_encode(cur, &val);
			rc = etcd_update(q->s->etcd, key, val.ptr, val.len, rev, &newrev, NULL);
		} else {
			rc = etcd_delete(q->s->etcd, key, rev, &newrev, NULL);
		}
		metrics_etcd(q->s->metrics, "delete", mono_us() - t0);
		if (rc < 0)
			goto out;
		note_written(q->res, newrev);
		set_resource_version(cur, newrev);
	}
	*ret_obj = cur;
	cur = NULL;
out:
	json_decref(cur);
	buf_release(&val);
	return rc;
}

int delete_object(struct req *q, const char *name, bool reply)
{
	struct delete_opts d = { .grace = -1 };
	if (reply && parse_delete_opts(q, &d) < 0)
		return E_BAD_REQUEST;
	char *key = store_key(q->res, q->tenant, q->ns, name);
	struct buf msg = BUF_INIT;
	json_t *obj = NULL;
	int rc = E_CONFLICT;
	for (int i = 0; i < UPDATE_RETRIES && rc == E_CONFLICT && msg.len == 0; i++)
		rc = delete_once(q, key, &d, &obj, &msg);
	if (reply) {
		if (rc == 0)
			reply_json(q, 200, obj);
		else if (msg.len)
			reply_status_details(q, rc, name, NULL, "%s", buf_cstr(&msg));
		else
			reply_storage_error(q, rc, name);
	}
	json_decref(obj);
	buf_release(&msg);
	free(key);
	json_decref(d.body);
	return rc;
}

void handle_delete(struct req *q)
{
	delete_object(q, q->path.name, true);
}

int apiserver_create(struct apiserver *s, const char *plural, const char *tenant, const char *ns, const json_t *obj)
{
	struct req q = { .s = s, .verb = "create" };
	q.res = served_by_plural(s, plural);
	if (!q.res)
		return E_NOT_FOUND;
	q.tenant = (char *)(tenant ? tenant : "");
	q.ns = (char *)ns;
	json_t *copy = json_deep_copy(obj);
	do_create(&q, copy);
	json_decref(copy);
	switch (q.replied_code) {
	case 201: return 0;
	case 409: return E_ALREADY_EXISTS;
	case 404: return E_NOT_FOUND;
	case 422: return E_INVALID;
	case 503: return E_UNAVAILABLE;
	default: return E_INTERNAL;
	}
}
