/* PATCH: json-patch, merge-patch, strategic-merge-patch and apply-patch+yaml (server-side
 * apply without field ownership: the applied configuration is merged strategically, and a
 * missing object is created). */
#include "internal.h"
#include "ursa/jsonutil.h"
#include "ursa/patch.h"
#include "ursa/xalloc.h"
#include <stdlib.h>
#include <string.h>

enum { P_JSON, P_MERGE, P_SMP, P_APPLY };

static int ctype_kind(const char *ct)
{
	static const struct {
		const char *name;
		int kind;
	} types[] = {
		{ "application/json-patch+json", P_JSON },
		{ "application/merge-patch+json", P_MERGE },
		{ "application/strategic-merge-patch+json", P_SMP },
		{ "application/apply-patch+yaml", P_APPLY },
		{ "application/apply-patch+json", P_APPLY },
	};
	if (!ct)
		return -1;
	size_t n = strcspn(ct, "; ");
	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++)
		if (strlen(types[i].name) == n && strncmp(ct, types[i].name, n) == 0)
			return types[i].kind;
	return -1;
}

int patch_doc_parse(struct req *q, struct patch_doc *p)
{
	p->ctype = http_header(q->http, "Content-Type");
	int kind = ctype_kind(p->ctype);
	if (kind < 0) {
		reply_status(q, E_MEDIA_TYPE, "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml, application/strategic-merge-patch+json");
		return -1;
	}
	if (kind == P_SMP && q->res && q->res->r->crd) {
		/* as Kubernetes: custom resources have no patch strategies to merge by */
		reply_status(q, E_MEDIA_TYPE, "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml");
		return -1;
	}
	size_t len;
	const char *body = http_body(q->http, &len);
	struct buf err = BUF_INIT;
	if (kind == P_APPLY)
		yaml_to_json(body, len, MAX_JSON_DEPTH, &p->doc, &err);
	else
		p->doc = fieldval_parse_json(q, body, len, &err);
	int rc = 0;
	if (!p->doc) {
		reply_status(q, E_BAD_REQUEST, "the patch is not valid: %s", buf_cstr(&err));
		rc = -1;
	} else if (kind == P_JSON ? !json_is_array(p->doc) : !json_is_object(p->doc)) {
		reply_status(q, E_BAD_REQUEST, kind == P_JSON ? "a JSON patch must be an array of operations"
							      : "the patch must be a JSON object");
		json_decref(p->doc);
		p->doc = NULL;
		rc = -1;
	}
	buf_release(&err);
	return rc;
}

/* Whether the patch names a resourceVersion (then a stale one is a conflict, not retried). */
static bool names_resource_version(const struct patch_doc *p)
{
	if (json_is_object(p->doc))
		return json_path(p->doc, "metadata.resourceVersion") != NULL;
	size_t i;
	json_t *op;
	json_array_foreach(p->doc, i, op) {
		const char *path = json_str(op, "path");
		if (path && strcmp(path, "/metadata/resourceVersion") == 0)
			return true;
	}
	return false;
}

int patch_doc_apply(struct req *q, const struct patch_doc *p, const json_t *cur, const char *kind, json_t **ret)
{
	struct buf err = BUF_INIT, av = BUF_INIT;
	int rc;
	/* Field validation against the patched kind: the resource's, or autoscaling/v1 Scale. */
	if (strcmp(kind, q->res->r->kind) == 0)
		api_version_of(q->res->r, &av);
	else
		buf_adds(&av, "autoscaling/v1");
	if (ctype_kind(p->ctype) == P_APPLY && (rc = fieldval_check_apply(q, p->doc, buf_cstr(&av), kind)) < 0)
		goto out;
	switch (ctype_kind(p->ctype)) {
	case P_JSON:
		rc = json_patch_apply(cur, p->doc, ret, &err);
		break;
	case P_MERGE:
		rc = merge_patch_apply(cur, p->doc, ret, &err);
		break;
	default:
		rc = strategic_merge_patch_apply(cur, p->doc, kind, ret, &err);
		break;
	}
	if (rc < 0)
		reply_status(q, rc == E_INVALID ? E_INVALID : E_BAD_REQUEST, "the patch could not be applied: %s",
			     buf_cstr(&err));
	else if (!json_is_object(*ret)) {
		reply_status(q, E_BAD_REQUEST, "the patched object is not a JSON object");
		json_decref(*ret);
		rc = E_BAD_REQUEST;
	} else if (ctype_kind(p->ctype) != P_APPLY && (rc = fieldval_check(q, *ret, buf_cstr(&av), kind, false)) < 0) {
		json_decref(*ret);
		*ret = NULL;
	}
out:
	buf_release(&err);
	buf_release(&av);
	return rc < 0 ? rc : 0;
}

static int mutate_patch(struct req *q, const json_t *cur, void *ud, json_t **ret_new)
{
	int rc = patch_doc_apply(q, ud, cur, q->res->r->kind, ret_new);
	if (rc == 0 && !q->rv_precondition)
		json_object_del(json_object_get(*ret_new, "metadata"), "resourceVersion");
	return rc;
}

void handle_patch(struct req *q)
{
	struct patch_doc p = { 0 };
	if (patch_doc_parse(q, &p) < 0)
		return;
	q->rv_precondition = names_resource_version(&p);
	bool apply = ctype_kind(p.ctype) == P_APPLY;
	json_t *create = NULL;
	if (apply) {
		struct buf av = BUF_INIT;
		api_version_of(q->res->r, &av);
		int rc = fieldval_check_apply(q, p.doc, buf_cstr(&av), q->res->r->kind);
		buf_release(&av);
		if (rc < 0) {
			json_decref(p.doc);
			return;
		}
		create = json_deep_copy(p.doc);
		json_t *meta = json_obj_child(create, "metadata");
		if (!json_str(meta, "name"))
			json_object_set_new(meta, "name", json_string(q->path.name));
	}
	do_update(q, q->path.name, UPDATE_MAIN, mutate_patch, &p, apply, create);
	json_decref(create);
	json_decref(p.doc);
}
