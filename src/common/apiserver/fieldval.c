/* Server-side field validation, as Kubernetes does it since 1.27: unknown fields of a create,
 * update or patch are always dropped (the type tables of ursa/schema.h say what is known);
 * fieldValidation=Warn (the default) says so in Warning headers, Strict refuses the request
 * with 400, Ignore says nothing. Duplicate keys in a JSON body are treated the same way. */
#include "internal.h"
#include "ursa/crd.h"
#include "ursa/jsonutil.h"
#include "ursa/log.h"
#include "ursa/schema.h"
#include "ursa/xalloc.h"
#include <string.h>

#define WARNING_HEADER_MAX 4096

/* Go's %q of s, near enough: quotes, backslashes and control bytes escaped. */
static void add_quoted(struct buf *b, const char *s)
{
	buf_addch(b, '"');
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\')
			buf_addf(b, "\\%c", c);
		else if (c < 0x20 || c == 0x7f)
			buf_addf(b, "\\x%02x", c);
		else
			buf_addch(b, (char)c);
	}
	buf_addch(b, '"');
}

static bool validated_subresource(const char *sub)
{
	return !sub || strcmp(sub, "status") == 0 || strcmp(sub, "scale") == 0;
}

int fieldval_begin(struct req *q)
{
	q->fv_mode = FV_NONE;
	if (!q->http || !q->res || q->res->r->ephemeral || !q->verb || !validated_subresource(q->path.subresource))
		return 0;
	const char *opts;
	if (strcmp(q->verb, "create") == 0)
		opts = "CreateOptions";
	else if (strcmp(q->verb, "update") == 0)
		opts = "UpdateOptions";
	else if (strcmp(q->verb, "patch") == 0)
		opts = "PatchOptions";
	else
		return 0;
	const char *v = http_query(q->http, "fieldValidation");
	if (!v || !*v || strcmp(v, "Warn") == 0) {
		q->fv_mode = FV_WARN;
		return 0;
	}
	if (strcmp(v, "Strict") == 0) {
		q->fv_mode = FV_STRICT;
		return 0;
	}
	if (strcmp(v, "Ignore") == 0) {
		q->fv_mode = FV_IGNORE;
		return 0;
	}
	/* Kubernetes validates the options before the body: 422 on the options kind. */
	struct buf cause = BUF_INIT, msg = BUF_INIT;
	buf_adds(&cause, "Unsupported value: ");
	add_quoted(&cause, v);
	buf_adds(&cause, ": supported values: \"\", \"Ignore\", \"Strict\", \"Warn\"");
	buf_addf(&msg, "%s.meta.k8s.io \"\" is invalid: fieldValidation: %s", opts, buf_cstr(&cause));
	json_t *causes = json_pack("[{s:s,s:s,s:s}]", "reason", "FieldValueNotSupported", "message", buf_cstr(&cause),
				   "field", "fieldValidation");
	json_t *st = status_object(E_INVALID, buf_cstr(&msg), NULL, opts, causes);
	json_object_set_new(json_object_get(st, "details"), "group", json_string("meta.k8s.io"));
	reply_json(q, 422, st);
	json_decref(st);
	buf_release(&cause);
	buf_release(&msg);
	return -1;
}

static void note(struct req *q, const char *what, const char *path)
{
	struct buf m = BUF_INIT;
	buf_addf(&m, "%s ", what);
	add_quoted(&m, path);
	if (!q->fv_msgs)
		q->fv_msgs = json_array();
	size_t i;
	json_t *v;
	bool seen = false;
	json_array_foreach(q->fv_msgs, i, v) if (strcmp(json_string_value(v), buf_cstr(&m)) == 0) seen = true;
	if (!seen && json_array_size(q->fv_msgs) < SCHEMA_PRUNE_MAX_PATHS)
		json_array_append_new(q->fv_msgs, json_string(buf_cstr(&m)));
	buf_release(&m);
}

json_t *fieldval_parse_json(struct req *q, const char *body, size_t len, struct buf *ret_err)
{
	struct buf err = BUF_INIT;
	json_t *j = json_parse_limited(body, len, MAX_JSON_DEPTH, &err);
	if (!j && q->fv_mode != FV_NONE && strstr(buf_cstr(&err), "duplicate object key")) {
		/* The depth was checked before jansson found the duplicate: parse again keeping the
		 * last value of each key, as Go's decoder does. */
		j = json_loadb(body, len, JSON_ALLOW_NUL, NULL);
		if (j && q->fv_mode != FV_IGNORE) {
			json_t *paths = json_array();
			schema_json_duplicates(body, len, paths);
			size_t i;
			json_t *p;
			json_array_foreach(paths, i, p) note(q, "duplicate field", json_string_value(p));
			json_decref(paths);
		}
	}
	if (!j && ret_err)
		buf_adds(ret_err, buf_cstr(&err));
	buf_release(&err);
	return j;
}

int fieldval_check(struct req *q, json_t *obj, const char *api_version, const char *kind, bool decode_prefix)
{
	if (q->fv_mode == FV_NONE)
		return 0;
	const struct api_resource *r = q->res ? q->res->r : NULL;
	const struct pb_msg *msg = pb_kind_schema(api_version, kind);
	json_t *paths = json_array();
	if (r && r->crd_version && r->crd_version->schema && strcmp(kind, r->kind) == 0) {
		/* a custom resource: its version's schema (the write prunes it whatever the mode) */
		crd_prune(r, obj, paths);
		q->cr_pruned = obj;
	} else if (msg) {
		schema_prune(obj, msg, paths);
	}
	int rc = 0;
	size_t i;
	json_t *p;
	if (q->fv_mode == FV_WARN) {
		struct buf all = BUF_INIT;
		json_array_foreach(paths, i, p) {
			note(q, "unknown field", json_string_value(p));
			if (all.len < 1024)
				buf_addf(&all, "%s%s", i ? "," : "", json_string_value(p));
		}
		/* a client's mistake, or a field a type table lacks (a controller's write losing it) */
		if (all.len)
			log_debug("unknown fields dropped", "kind=%s fields=\"%s\" user=\"%s\"", kind, buf_cstr(&all),
				  q->id.user ? q->id.user : "");
		buf_release(&all);
	} else if (q->fv_mode == FV_STRICT && (json_array_size(paths) || json_array_size(q->fv_msgs))) {
		struct buf m = BUF_INIT;
		if (decode_prefix) {
			const char *slash = strrchr(api_version, '/');
			buf_addf(&m, "%s in version \"%s\" cannot be handled as a %s: ", kind, slash ? slash + 1 : api_version,
				 kind);
		}
		buf_adds(&m, "strict decoding error: ");
		size_t n = 0;
		json_array_foreach(q->fv_msgs, i, p) buf_addf(&m, "%s%s", n++ ? ", " : "", json_string_value(p));
		json_array_foreach(paths, i, p) {
			buf_addf(&m, "%sunknown field ", n++ ? ", " : "");
			add_quoted(&m, json_string_value(p));
		}
		reply_status(q, E_BAD_REQUEST, "%s", buf_cstr(&m));
		buf_release(&m);
		rc = E_BAD_REQUEST;
	}
	json_decref(paths);
	return rc;
}

int fieldval_check_apply(struct req *q, const json_t *doc, const char *api_version, const char *kind)
{
	if (q->fv_mode == FV_NONE)
		return 0;
	const struct pb_msg *msg = pb_kind_schema(api_version, kind);
	if (!msg || !json_is_object(doc))
		return 0;
	json_t *copy = json_deep_copy(doc), *paths = json_array();
	size_t n = schema_prune(copy, msg, paths);
	json_decref(copy);
	if (!n) {
		json_decref(paths);
		return 0;
	}
	/* structured-merge-diff's conversion error, which Kubernetes answers with a bare 500. */
	struct buf m = BUF_INIT;
	const char *ns = json_path_str(doc, "metadata.namespace"), *name = json_path_str(doc, "metadata.name");
	buf_addf(&m, "failed to create typed patch object (%s/%s; %s%s, Kind=%s): ", ns ? ns : "",
		 name ? name : q->path.name ? q->path.name : "", strchr(api_version, '/') ? "" : "/", api_version, kind);
	if (json_array_size(paths) > 1)
		buf_adds(&m, "errors:");
	size_t i;
	json_t *p;
	json_array_foreach(paths, i, p) buf_addf(&m, "%s.%s: field not declared in schema",
						 json_array_size(paths) > 1 ? "\n  " : "", json_string_value(p));
	json_t *st = status_object(E_INTERNAL, buf_cstr(&m), NULL, NULL, NULL);
	json_object_del(st, "reason");
	reply_json(q, 500, st);
	json_decref(st);
	json_decref(paths);
	buf_release(&m);
	return E_INTERNAL;
}

void fieldval_finish(struct req *q)
{
	if (q->fv_mode == FV_WARN && json_array_size(q->fv_msgs) && q->reply) {
		/* One header, warnings separated by commas (RFC 7234; client-go splits them). */
		struct buf h = BUF_INIT, one = BUF_INIT;
		size_t i;
		json_t *v;
		json_array_foreach(q->fv_msgs, i, v) {
			buf_reset(&one);
			buf_adds(&one, "299 - ");
			add_quoted(&one, json_string_value(v));
			if (h.len + one.len + 2 > WARNING_HEADER_MAX)
				break;
			if (h.len)
				buf_adds(&h, ", ");
			buf_add(&h, one.ptr, one.len);
		}
		if (h.len)
			http_reply_header(q->reply, "Warning", buf_cstr(&h));
		buf_release(&h);
		buf_release(&one);
	}
	json_decref(q->fv_msgs);
	q->fv_msgs = NULL;
	q->fv_mode = FV_NONE;
}
