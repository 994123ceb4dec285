/* Create-only resources that are never stored: reviews. POST parses the body, checks its type
 * and hands it to the review's function, which replies with the object and its status. */
#include "internal.h"
#include "ursa/jsonutil.h"
#include <string.h>

static const struct {
	const char *group, *plural;
	void (*fn)(struct req *q, json_t *obj);
} reviews[] = {
	{ "authorization.k8s.io", "selfsubjectaccessreviews", review_access },
	{ "authorization.k8s.io", "subjectaccessreviews", review_access },
	{ "authorization.k8s.io", "localsubjectaccessreviews", review_access },
	{ "authorization.k8s.io", "selfsubjectrulesreviews", review_rules },
	{ "authentication.k8s.io", "tokenreviews", review_token },
	{ "authentication.k8s.io", "selfsubjectreviews", review_self_subject },
};

void reply_review(struct req *q, json_t *obj, json_t *status)
{
	json_object_set_new(obj, "status", status);
	json_object_set_new(json_obj_child(obj, "metadata"), "creationTimestamp", json_null());
	reply_json(q, 201, obj);
}

void handle_ephemeral(struct req *q)
{
	const struct api_resource *r = q->res->r;
	for (size_t i = 0; i < sizeof(reviews) / sizeof(reviews[0]); i++) {
		if (strcmp(reviews[i].group, r->group) != 0 || strcmp(reviews[i].plural, r->plural) != 0)
			continue;
		json_t *obj = parse_body(q);
		if (!obj)
			return;
		struct buf av = BUF_INIT;
		api_version_of(r, &av);
		if (check_type_meta(q, obj, r->kind, buf_cstr(&av)) == 0)
			reviews[i].fn(q, obj);
		buf_release(&av);
		json_decref(obj);
		return;
	}
	reply_status(q, E_NOT_FOUND, "the server could not find the requested resource");
}
